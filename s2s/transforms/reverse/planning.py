"""Reverse mode: what the reverse sweep reads, and from where: a tape, the variable itself, or recomputed."""

from __future__ import annotations

import ast
import copy
import operator
from dataclasses import dataclass

import numpy as np

from ...ir import nodes as ir
from ...codegen.emit import assign, name, runtime_call
from ...frontend.source import is_user_function
from ...rules import facts
from ..rule_helpers import Rename, simplify


@dataclass(frozen=True)
class Need:
    var: str
    when: str  # "pre": the value the statement reads; "post": the value it produced
    shape: bool = False  # only its shape is read (by unbroadcast and friends)


# Rematerialisation: the reverse sweep may call a function again, on the same operands, rather
# than read its result from a tape, where its rule declares it cheap (s2s.rules.Facts.cheap):
# arithmetic, comparisons and the elementwise functions that compile to an instruction or two.
# Transcendental ones (np.exp, np.log, np.sin, x ** y with y not an integer constant...) are
# libm calls that cost more than a tape's push and pop: their results stay on tapes.

# A recomputed value re-runs at most this many statements, nested at most this deep.
RECOMPUTE_MAX_STATEMENTS = 32
RECOMPUTE_MAX_DEPTH = 12


def _cheap_pure(call: ir.Call) -> bool:
    if call.kwargs or (isinstance(call.fn, np.ufunc) and len(call.args) != call.fn.nin):
        return False  # (a ufunc's further positional argument is `out`: it writes)
    if call.fn is operator.pow:  # x ** 2 compiles to multiplications, x ** y to a call
        exponent = call.args[1]
        return isinstance(exponent, ir.Const) and type(exponent.value) is int and 0 <= exponent.value <= 4
    return facts(call.fn).cheap


class Planning:
    """The planning half of VJP (core.py): tapes and recomputation."""

    def recipe(self, var: str, active: frozenset = frozenset()) -> tuple | None:
        """How the reverse sweep can compute var again instead of popping it from a tape.

        (definition, recomputed operands, depth), or None. var qualifies when its only
        definition is `var = <cheap pure expression>` (arithmetic, comparisons, cheap
        functions, constants, copies, `.shape`, reads `a[...]` of an array that nothing in the
        function writes, directly or through an alias) whose operands are, where the
        reverse sweep handles a later statement of the same iteration, still what they were:
        constants, variables never assigned after the definition runs (parameters, values
        set before the loop, loop-invariant values), loop variables the reverse loops
        reconstruct, or values with a recipe of their own defined before it in the same
        block or an enclosing one. Re-running the same operations on the same operands
        gives the same bits. Arrays qualify too: recomputing an elementwise expression
        costs what it cost in the primal, and spares the tape its memory.
        """
        if var in self.recipes:
            return self.recipes[var]
        if var in active:
            return None
        result = None
        defs = self.an.defs.get(var, [])
        site = defs[0] if len(defs) == 1 else None
        if isinstance(site, ir.Assign) and site.targets == (var,) and not site.inplace \
                and not site.alias_check and var not in self.may_mutate and var not in self.trips.values():
            operands = self._pure_operands(site.value)
            if operands is not None:
                recomputed = []
                depth = 1
                for operand in operands:
                    if operand in self.fn.constants or self._available(operand, site):
                        continue
                    inner = self.recipe(operand, active | {var})
                    if inner is None or not self._before(inner[0], site):
                        recomputed = None
                        break
                    recomputed.append(operand)
                    depth = max(depth, inner[2] + 1)
                if recomputed is not None and depth <= RECOMPUTE_MAX_DEPTH:
                    result = (site, tuple(sorted(set(recomputed))), depth)
        self.recipes[var] = result  # (a cycle has no recipe from any of its members: _before)
        return result

    def _pure_operands(self, value) -> list[str] | None:
        """The variables a cheap, pure right-hand side reads, or None for any other one."""
        if isinstance(value, (ir.Const, ir.Name)):
            return ir.names_in(value)
        if isinstance(value, ir.Call):
            if is_user_function(value.fn) or not _cheap_pure(value):
                return None
            return ir.names_in(value)
        if isinstance(value, ir.Attribute) and value.attr in ("shape", "ndim", "size", "dtype"):
            return ir.names_in(value)  # (writes into an array keep these)
        if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
            base = value.value.id
            if base in self.may_mutate or base in self.an.mutated or self.an.is_container(base):
                return None
            if any(isinstance(d, ir.SetItem) for d in self.an.defs.get(base, [])):
                return None
            return ir.names_in(value)
        return None

    def _available(self, var: str, site) -> bool:
        """Does var hold, during the reverse sweep of site's iteration, the value site read?"""
        if var in self.trips.values():
            return False
        return not self.an.defs_may_clobber(var, site, operand=True) or self.loop_invariant(var)

    def _before(self, earlier, later) -> bool:
        """Does `earlier` run before `later` in every iteration that runs `later`?"""
        info = self.an.info[id(earlier)]
        return info.block_id in self.chains[id(later)] and info.pos < self.an.info[id(later)].pos

    def _closure(self, var: str) -> set[str]:
        out = {var}
        for operand in self.recipes[var][1]:
            out |= self._closure(operand)
        return out

    def _recomputable_at(self, stmt, need: Need) -> bool:
        found = self.recipe(need.var)
        if found is None:
            return False
        if need.when == "post":
            ok = found[0] is stmt
        else:
            ok = found[0] is not stmt and self._before(found[0], stmt)
        return ok and len(self._closure(need.var)) <= RECOMPUTE_MAX_STATEMENTS

    def recomputable(self, stmt, need: Need, covered: set[str]) -> bool:
        """Recompute this value rather than tape it? Shapes alone are recomputed only for
        values the reverse sweep recomputes anyway (a shape tape costs next to nothing)."""
        if need.shape and need.var not in self.remat_wanted:
            return False
        if self._recomputable_at(stmt, need):
            return True
        return not need.shape and need.when == "pre" and self._recipe_from_covered(stmt, need.var, covered)

    def _recipe_from_covered(self, stmt, var: str, covered: set[str]) -> bool:
        """A recipe for var here, whose operands may also be values the reverse sweep has
        popped for later statements of this block (covered) and that still hold the version
        var was computed from: `_t2 = b * x` where x is popped back anyway."""
        defs = self.an.defs.get(var, [])
        site = defs[0] if len(defs) == 1 else None
        if not (isinstance(site, ir.Assign) and site.targets == (var,) and not site.inplace
                and not site.alias_check and var not in self.may_mutate and site is not stmt
                and self.an.info[id(site)].block_id == self.an.info[id(stmt)].block_id
                and self._before(site, stmt)):
            return False
        operands = self._pure_operands(site.value)
        if operands is None:
            return False
        block = self.block_of[self.an.info[id(site)].block_id]
        start = next(k for k, s in enumerate(block) if s is site)
        end = next(k for k, s in enumerate(block) if s is stmt)
        written = {w for s in ir.walk(block[start:end]) for w in ir.stmt_writes(s)}
        recomputed = []
        depth = 1
        for operand in operands:
            if operand in self.fn.constants or self._available(operand, site):
                continue
            inner = self.recipe(operand)
            if inner is not None and self._before(inner[0], site):
                recomputed.append(operand)
                depth = max(depth, inner[2] + 1)
            elif operand not in covered or operand in written:
                return False
        found = (site, tuple(sorted(set(recomputed))), depth)
        size = 1 + len(set().union(set(), *(self._closure(o) for o in recomputed)))
        if depth > RECOMPUTE_MAX_DEPTH or size > RECOMPUTE_MAX_STATEMENTS:
            return False
        self.local_recipes[(var, id(stmt))] = found
        return True

    def recompute_statements(self, stmt, variables: list[str], covered: set[str]) -> list:
        """The definitions to re-run, in program order, for variables; values still in their
        variables (covered) are not computed again."""
        sites: dict[int, ir.Assign] = {}

        def visit(var, top):
            found = self.local_recipes.get((var, id(stmt))) if top else None
            found = found or self.recipes[var]
            if (not top and var in covered) or id(found[0]) in sites:
                return
            site, operands, _ = found
            sites[id(site)] = site
            for operand in operands:
                visit(operand, False)

        for var in variables:
            visit(var, True)
        return sorted(sites.values(), key=lambda d: self.an.info[id(d)].pos)

    def recompute(self, stmt) -> list:
        """Statements that recompute, for the reverse sweep of stmt, what it would have popped."""
        if id(stmt) not in self.recompute_plan:
            return []
        variables, statements = self.recompute_plan[id(stmt)]
        lines = sorted({d.origin.line for d in statements})
        source = statements[0].origin.short().rsplit(":", 1)[0]
        where = f" ({source}:{lines[0]}" + (f"-{lines[-1]}" if lines[-1] != lines[0] else "") + ")"
        out = [self.em.comment(f"Recomputed rather than taped: {', '.join(variables)}{where}")]
        for d in statements:
            emitted = self.em.primal(d)
            out.extend(emitted if isinstance(emitted, list) else [emitted])
            self.popped_into.update(d.targets)
        return out

    def taped(self, stmt) -> list[tuple[Need, str]]:
        """Needs of this statement that get a tape of their own, with the tape names."""
        self._ensure_plan()
        result = []
        for need in sorted(self.needs(stmt), key=lambda n: (n.var, n.when, n.shape)):
            action = self.plan[(id(stmt), need)][0]
            if action is None or action == "recompute":
                continue
            key = (need.var, id(stmt), need.when)
            if key not in self.tapes:
                base = f"{need.var}_shape_tape" if need.shape else f"{need.var}_tape"
                self.tapes[key] = self.names.fresh(base)
                self.tape_order.append(self.tapes[key])
                if need.shape:
                    self.shape_tapes.add(self.tapes[key])
                else:
                    capacity = self.tape_capacity(stmt)
                    if capacity is not None:
                        tape = self.tapes[key]
                        self.counted[tape] = (self.names.fresh(f"{tape}_len"), capacity)
            result.append((need, self.tapes[key]))
        return result

    def shape_sources(self, stmt) -> dict[str, str]:
        """Variables whose shape, not value, is at hand for this statement: var -> name."""
        self._ensure_plan()
        return {need.var: self.shape_var(self.plan[(id(stmt), need)][2]) for need in self.needs(stmt)
                if need.shape and self.plan[(id(stmt), need)][1] == "shape"}

    def shape_var(self, key: tuple) -> str:
        """The variable holding a taped shape: one per tape, because under Numba it also
        carries the shape's type (its ndim) from the push to the pop (runtime.pop_shape)."""
        if key not in self.shape_vars:
            self.shape_vars[key] = self.names.fresh(f"{key[0]}_shape")
        return self.shape_vars[key]

    def tape_capacity(self, stmt) -> ast.expr | None:
        """How many values a tape pushed at stmt receives at most, where that is known on
        entry to its loops: every enclosing loop is a range loop whose bounds nothing in the
        outermost one assigns. Then the count is the product of their trip counts, evaluated
        at the first push (inside all of them, where the bounds still hold their values on
        entry). None for a tape in a while loop or in a loop with varying bounds: a list."""
        loops = [self.loop_stmt(k) for k in self.an.enclosing_loops(stmt)]
        if any(not isinstance(loop, ir.For) for loop in loops):
            return None
        if not loops:
            return ast.Constant(1)
        assigned = {var for s in ir.walk([loops[0]]) for var in ir.stmt_writes(s)}
        capacity = None
        for loop in loops:
            bounds = (loop.start, loop.stop, loop.step)
            if any(isinstance(b, ir.Name) and b.id in assigned for b in bounds):
                total = self.counting_loop(loops, assigned)
                return None if total is None else name(total)
            trips = self.trip_count(loop)
            capacity = trips if capacity is None else ast.BinOp(capacity, ast.Mult(), trips)
        return capacity

    def counting_loop(self, loops: list, assigned: set) -> str | None:
        """The trip count in all of the innermost of these nested loops, where its bounds (or an
        outer loop's) change from one outer iteration to the next (`range(i + 1, n)`): a loop
        before the outermost one repeats the loops and the integer arithmetic of their bounds,
        and adds up the trips. None where those bounds need more (a branch, a call, a value
        carried between iterations): then the tapes in these loops are lists."""
        innermost = loops[-1]
        if id(innermost) in self.loop_totals:
            return self.loop_totals[id(innermost)]
        outermost = loops[0]
        if any(isinstance(b, ir.Name) and b.id in assigned for b in (outermost.start, outermost.stop, outermost.step)):
            return None  # the outermost loop's own bounds change in it: its range() saw them on entry
        index_in = {}  # id(stmt) -> (level, position) for the top-level statements of each loop body
        for level, loop in enumerate(loops[:-1]):
            for position, s in enumerate(loop.body):
                index_in[id(s)] = (level, position)
            if id(loops[level + 1]) not in index_in:
                return None  # the next loop sits in a branch: not every iteration reaches it
        loop_vars = {loop.var: level for level, loop in enumerate(loops[:-1])}
        chosen: dict[int, ir.Assign] = {}
        # (a name, where it is read: the level of the loop body and the position in it)
        needed = [(b.id, index_in[id(loop)]) for loop in loops[1:] for b in (loop.start, loop.stop, loop.step)
                  if isinstance(b, ir.Name) and b.id in assigned]
        while needed:
            var, (level, position) = needed.pop()
            if var in loop_vars:
                if loop_vars[var] > level:
                    return None
                continue
            if var not in assigned:
                continue
            defs = [d for d in self.an.defs.get(var, []) if d != "param" and id(loops[0]) in self.an.enclosing_loops(d)]
            if len(defs) != 1 or id(defs[0]) not in index_in:
                return None
            d = defs[0]
            d_level, d_position = index_in[id(d)]
            before = position if d_level == level else index_in[id(loops[d_level + 1])][1]
            if not (isinstance(d, ir.Assign) and not d.inplace and not d.unpack) or d_level > level \
                    or d_position >= before:
                return None  # not an assignment, or read before it is made in this iteration
            value = d.value
            if isinstance(value, ir.Call):
                if facts(value.fn).integer is None or value.kwargs:  # not integer arithmetic (Facts.integer)
                    return None
            elif isinstance(value, ir.Subscript):
                base = value.value
                if isinstance(base, ir.Name) and (base.id in self.may_mutate or base.id in self.an.mutated):
                    return None  # (an array that the loops may write into)
            elif not isinstance(value, (ir.Name, ir.Const, ir.Attribute)):
                return None
            if id(d) not in chosen:
                chosen[id(d)] = d
                needed += [(r, (d_level, d_position)) for r in ir.stmt_reads(d)]
        total = self.names.fresh(f"{innermost.var}_total")
        self.loop_totals[id(innermost)] = total
        renames = {loop.var: self.names.fresh(f"{loop.var}_") for loop in loops[:-1]}
        renames |= {d.targets[0]: self.names.fresh(f"{d.targets[0]}_") for d in chosen.values()}

        def nest(level: int) -> list:
            loop = loops[level]
            if level == len(loops) - 1:
                bounds = [self.em.atom(b) for b in (loop.start, loop.stop, loop.step)]
                return [ast.AugAssign(name(total, True), ast.Add(), runtime_call("range_len", *bounds))]
            body = [self.em.primal(s) for s in loop.body if id(s) in chosen] + nest(level + 1)
            return [self.em.for_range(loop.var, [loop.start, loop.stop, loop.step], body)]

        counting = [self.em.comment(f"{total}: the trips of the loop at {innermost.origin.short()} in all "
                                    f"(its tapes' capacity)"),
                    assign(total, ast.Constant(0))] + nest(0)
        counting = [Rename(renames).visit(c) for c in counting]
        self.counting_loops.setdefault(id(loops[0]), []).extend(counting)
        return total

    def trip_count(self, loop: ir.For) -> ast.expr:
        """The trip count of a loop that runs at least once (it holds a push that ran)."""
        em = self.em
        start, stop, step = loop.start, loop.stop, loop.step
        if isinstance(step, ir.Const) and step.value in (1, -1):
            first, last = (stop, start) if step.value == 1 else (start, stop)
            if isinstance(last, ir.Const) and last.value == 0:
                return em.atom(first)
            return simplify(ast.BinOp(em.atom(first), ast.Sub(), em.atom(last)))
        return name(self.loop_trips(loop))

    def loop_stmt(self, key: int):
        if not hasattr(self, "_loops"):
            self._loops = {id(s): s for s in ir.walk(self.fn.body) if isinstance(s, (ir.For, ir.While))}
        return self._loops[key]

    def push(self, stmt, need: Need, tape: str) -> list:
        value = name(need.var)
        if need.shape:
            key = (need.var, id(stmt), need.when)
            return [assign(self.shape_var(key), runtime_call("push_shape", name(tape), value))]
        # (a list that appends grow is taped itself: its pops undo them; one also written into is
        # copied, but for its own appends, whose reverse pops the list itself)
        if need.var in self.may_mutate and (need.var not in self.appended or need.var in self.appended_and_written
                                            and not (isinstance(stmt, ir.Push) and stmt.tape == need.var)):
            value = runtime_call("copy", value)
        if tape in self.counted:
            count, capacity = self.counted[tape]
            create = assign(tape, runtime_call("new_tape", name(need.var), copy.deepcopy(capacity)))
            return [ast.If(ast.Compare(name(count), [ast.Eq()], [ast.Constant(0)]), [create], []),
                    ast.Assign([ast.Subscript(name(tape), name(count), ast.Store())], value, lineno=0),
                    ast.AugAssign(name(count, True), ast.Add(), ast.Constant(1))]
        return [ast.Expr(ast.Call(ast.Attribute(name(tape), "append", ast.Load()), [value], []))]

    def pops(self, stmt, taped, rename: dict[str, str] | None = None) -> list:
        rename = rename or {}
        out = self.recompute(stmt)
        for need, tape in taped:
            if (id(stmt), need) in self.popped_early:  # (sweep.materialize popped it)
                continue
            if need.shape:
                shape = self.shape_var((need.var, id(stmt), need.when))
                self.popped_into.add(shape)
                out.append(assign(shape, runtime_call("pop_shape", name(tape), name(shape))))
            else:
                into = rename.get(need.var, need.var) if need.when == "pre" else need.var
                out += self.pop_into(into, tape)
        return out

    def pop_into(self, target: str, tape: str) -> list:
        self.popped_into.add(target)
        if tape in self.counted:
            count = self.counted[tape][0]
            return [ast.AugAssign(name(count, True), ast.Sub(), ast.Constant(1)),
                    assign(target, ast.Subscript(name(tape), name(count), ast.Load()))]
        return [assign(target, ast.Call(ast.Attribute(name(tape), "pop", ast.Load()), [], []))]
