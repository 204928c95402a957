"""Reverse mode, the forward sweep of one function: its primal statements, with the pushes onto
tapes of the values its plan tapes (plan.py), and the trip counts of the loops whose reverse
the reverse sweep runs. The result, a ForwardSweep, holds the statements and the tapes, which
the reverse sweep pops (sweep.py)."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Any

from ...ir import nodes as ir
from ...codegen.emit import Emitter, assign, name, runtime_call
from ...rules import facts
from ..rule_helpers import Rename, simplify
from .planning import Need


@dataclass
class Tapes:
    """The tapes of one reverse mode: made at the start of the function, pushed onto by its
    forward sweep, popped by its reverse sweep."""

    at: dict[int, list[tuple[Need, str]]] = field(default_factory=dict)  # id(stmt) -> its taped values, tapes
    order: list[str] = field(default_factory=list)  # as made
    shape_tapes: set[str] = field(default_factory=set)  # the tapes of shapes (runtime.push_shape)
    # A tape in range loops is an array with room for one value per iteration: tape -> (the
    # variable that counts its values, its capacity)
    counted: dict[str, tuple[str, ast.expr]] = field(default_factory=dict)
    # (var, id(stmt), when) -> the variable holding a taped shape: one per tape, because under
    # Numba it also carries the shape's type (its ndim) from the push to the pop (runtime.pop_shape)
    shape_vars: dict[tuple, str] = field(default_factory=dict)

    def setup(self, em: Emitter) -> list[ast.stmt]:
        """The statements that make the tapes, where the function starts."""
        body: list[ast.stmt] = []
        if self.order:
            body.append(em.comment("Tapes: values the reverse sweep needs after they are overwritten"))
            if self.counted:
                example = next(t for t in self.order if t in self.counted)
                body.append(em.comment("In range loops a tape is made at its first push, with room for one "
                                       "value per iteration"))
                body.append(em.comment(f"(the loops' trip counts, known on entry); {self.counted[example][0]} "
                                       f"counts the values on {example}."))
            for t in self.order:
                if t in self.counted:
                    body.append(assign(self.counted[t][0], ast.Constant(0)))
                else:
                    body.append(assign(t, runtime_call("shape_tape") if t in self.shape_tapes
                                       else ast.List([], ast.Load())))
        return body


@dataclass
class ForwardSweep:
    """The forward sweep of one reverse mode (the forward_sweep pass's result for one function)."""

    statements: list[ast.stmt]
    tapes: Tapes
    # The calls that take an s2s.custom_vjp's or custom_jvp's value from its rule, by statement,
    # with the function called: the reverse_sweep pass names the function that gives that value
    # (in the order the module's functions are made), which they then call.
    by_rule: list[tuple[list[ast.Call], Any]]
    # id(loop) -> the taped loop written for a range loop (checkpointing.py may write it again)
    loops: dict[int, ast.For] = field(default_factory=dict)


class ForwardSweeper:
    """Writes the forward sweep of a plan (plan.ReversePlan)."""

    def __init__(self, plan):
        self.plan = plan
        self.em = plan.em
        self.an = plan.an
        self.names = plan.names
        self.tapes = Tapes()
        self.tape_names: dict[tuple, str] = {}  # (var, id(stmt), when) -> tape name
        self.loop_totals: dict[int, str] = {}  # id(loop) -> its trip count in all (counting_loop)
        self.counting_loops: dict[int, list] = {}  # id(outermost loop) -> the loops counting before it
        self.by_rule: list[tuple[list[ast.Call], Any]] = []
        self.taped_loops: dict[int, ast.For] = {}
        self._loops = {id(s): s for s in ir.walk(plan.fn.body) if isinstance(s, (ir.For, ir.While))}

    def run(self) -> ForwardSweep:
        statements = self.forward_block(self.plan.fn.body)
        return ForwardSweep(statements, self.tapes, self.by_rule, self.taped_loops)

    def forward_block(self, block: list) -> list:
        plan = self.plan
        out: list = []
        last_origin = None
        for stmt in block:
            if isinstance(stmt, ir.Return):
                continue
            mark = len(out)  # where the counting loops of a loop go (found while emitting it)
            if stmt.origin != last_origin:
                out.append(self.em.origin_comment(stmt.origin))
                last_origin = stmt.origin
            work = plan.has_work(stmt)
            taped = self.taped(stmt) if work else []
            out += [line for n, t in taped if n.when == "pre" for line in self.push(stmt, n, t)]
            if work and isinstance(stmt, ir.For) and plan.loop_trips(stmt):
                out.append(assign(plan.loop_trips(stmt), runtime_call(
                    "range_len", self.em.atom(stmt.start), self.em.atom(stmt.stop), self.em.atom(stmt.step))))
            if work and isinstance(stmt, ir.While):
                trips = plan.while_trips(stmt)
                out.append(assign(trips, ast.Constant(0)))
                loop = self.em.primal(stmt, body_of=self.forward_block)
                loop.body.append(assign(trips, ast.BinOp(name(trips), ast.Add(), ast.Constant(1))))
                out.append(loop)
            else:
                emitted = self.em.primal(stmt, body_of=self.forward_block)
                if id(stmt) in plan.by_rule:
                    self.call_by_rule(emitted, stmt.value.fn)
                if isinstance(stmt, ir.For) and isinstance(emitted, ast.For):
                    self.taped_loops[id(stmt)] = emitted
                out.extend(emitted if isinstance(emitted, list) else [emitted])
                out[mark:mark] = self.counting_loops.pop(id(stmt), [])
            out += [line for n, t in taped if n.when == "post" for line in self.push(stmt, n, t)]
            if isinstance(stmt, ir.Assign):
                out += [assign(plan.bound_flags[t], ast.Constant(True)) for t in stmt.targets if t in plan.bound_flags]
        return out

    def call_by_rule(self, emitted, fn) -> None:
        """A differentiated call of an s2s.custom_vjp or custom_jvp takes its value from the rule
        (fwd's, or the jvp rule's), as in JAX: a rule may give a stabler value than the body.
        It calls `<name>_by_rule` until the reverse_sweep pass names that function."""
        plain = self.em.function_names[id(fn)]
        calls = [node for e in (emitted if isinstance(emitted, list) else [emitted]) for node in ast.walk(e)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == plain]
        for node in calls:
            node.func = name(f"{plain}_by_rule")
        self.by_rule.append((calls, fn))

    # ---- tapes ------------------------------------------------------------------

    def taped(self, stmt) -> list[tuple[Need, str]]:
        """Needs of this statement that get a tape of their own, with the tape names."""
        plan = self.plan
        result = []
        for need in sorted(plan.needs(stmt), key=lambda n: (n.var, n.when, n.shape)):
            action = plan.decisions[(id(stmt), need)][0]
            if action is None or action == "recompute":
                continue
            key = (need.var, id(stmt), need.when)
            if key not in self.tape_names:
                base = f"{need.var}_shape_tape" if need.shape else f"{need.var}_tape"
                self.tape_names[key] = self.names.fresh(base)
                self.tapes.order.append(self.tape_names[key])
                if need.shape:
                    self.tapes.shape_tapes.add(self.tape_names[key])
                else:
                    capacity = self.tape_capacity(stmt)
                    if capacity is not None:
                        tape = self.tape_names[key]
                        self.tapes.counted[tape] = (self.names.fresh(f"{tape}_len"), capacity)
            result.append((need, self.tape_names[key]))
        self.tapes.at[id(stmt)] = result
        return result

    def shape_var(self, key: tuple) -> str:
        if key not in self.tapes.shape_vars:
            self.tapes.shape_vars[key] = self.names.fresh(f"{key[0]}_shape")
        return self.tapes.shape_vars[key]

    def tape_capacity(self, stmt) -> ast.expr | None:
        """How many values a tape pushed at stmt receives at most, where that is known on
        entry to its loops: every enclosing loop is a range loop whose bounds nothing in the
        outermost one assigns. Then the count is the product of their trip counts, evaluated
        at the first push (inside all of them, where the bounds still hold their values on
        entry). None for a tape in a while loop or in a loop with varying bounds: a list."""
        loops = [self._loops[k] for k in self.an.enclosing_loops(stmt)]
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
                if facts(value.fn).integer not in ("kept", "always") or value.kwargs:  # not integer arithmetic
                    return None
            elif isinstance(value, ir.Subscript):
                base = value.value
                if isinstance(base, ir.Name) and (base.id in self.plan.may_mutate or base.id in self.an.mutated):
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
        return name(self.plan.loop_trips(loop))

    def push(self, stmt, need: Need, tape: str) -> list:
        plan = self.plan
        value = name(need.var)
        if need.shape:
            key = (need.var, id(stmt), need.when)
            return [assign(self.shape_var(key), runtime_call("push_shape", name(tape), value))]
        # (a list that appends grow is taped itself: its pops undo them; one also written into is
        # copied, but for its own appends, whose reverse pops the list itself)
        if need.var in plan.may_mutate and (need.var not in plan.appended or need.var in plan.appended_and_written
                                            and not (isinstance(stmt, ir.Push) and stmt.tape == need.var)):
            value = runtime_call("copy", value)
        if tape in self.tapes.counted:
            count, capacity = self.tapes.counted[tape]
            create = assign(tape, runtime_call("new_tape", name(need.var), copy.deepcopy(capacity)))
            return [ast.If(ast.Compare(name(count), [ast.Eq()], [ast.Constant(0)]), [create], []),
                    ast.Assign([ast.Subscript(name(tape), name(count), ast.Store())], value, lineno=0),
                    ast.AugAssign(name(count, True), ast.Add(), ast.Constant(1))]
        return [ast.Expr(ast.Call(ast.Attribute(name(tape), "append", ast.Load()), [value], []))]
