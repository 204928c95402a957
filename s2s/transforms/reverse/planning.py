"""Reverse mode, planned: what the reverse sweep reads, and from where: a tape, the variable
itself, or recomputed; and the counters of the loops it runs again. These are decisions only
(plan.py makes them, in the plan pass): the sweeps carry them out."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ...ir import nodes as ir
from ...frontend.source import is_user_function
from ...rules import facts


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
    """The decisions of a reverse-mode plan (plan.py): tapes, recomputation, trip counters."""

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
        if isinstance(value, ir.Attribute) and value.attr in ir.SHAPE_ATTRIBUTES:
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

    # ---- the counters of the loops the reverse sweep runs again -------------------

    def loop_trips(self, stmt: ir.For) -> str | None:
        """A trip-count variable, needed when the step is not a constant +-1."""
        if isinstance(stmt.step, ir.Const) and stmt.step.value in (1, -1):
            return None
        if id(stmt) not in self.trips:
            self.trips[id(stmt)] = self.names.fresh(f"{stmt.var}_trips")
        return self.trips[id(stmt)]

    def while_trips(self, stmt: ir.While) -> str:
        if id(stmt) not in self.trips:
            self.trips[id(stmt)] = self.names.fresh("while_trips")
        return self.trips[id(stmt)]

    def reverse_range_atoms(self, stmt: ir.For) -> list:
        """The atoms the reverse loop's range() reads: the bounds, or the start, step and trip count."""
        trips = self.loop_trips(stmt)
        if trips is None:
            return [stmt.start, stmt.stop]
        return [stmt.start, stmt.step, ir.Name(trips)]

    def _made_in_a_loop(self, var: str) -> bool:
        return any(isinstance(d, ir.Assign) and self.an.enclosing_loops(d) for d in self.an.defs.get(var, []))

    # ---- the decisions --------------------------------------------------------------

    def make_decisions(self) -> None:
        """Decide, for every value the reverse sweep reads at every statement, where it comes from
        (self.decisions: (id(stmt), Need) -> (action, source, key)), and which statements it runs
        again (self.recomputed). action: "value" or "shape" (taped), "recompute", or None (at hand:
        in its variable, there since the start or since a later statement's pop, self.reread);
        source: where the value ("value") or only its shape ("shape") is then; key: the tape
        (var, id(stmt), when) that holds the shape, where a shape is."""
        for stmt in ir.walk(self.fn.body):
            if self.has_work(stmt):
                for need in self.needs(stmt):
                    if not need.shape and self._recomputable_at(stmt, need):
                        self.remat_wanted |= self._closure(need.var)
        self._plan_block(self.fn.body)

    def _plan_block(self, block: list) -> None:
        """Decide, for every value the reverse sweep reads, where it comes from.

        A value is taped only where a later assignment may overwrite it. A value popped
        for a later statement of the same block is still in its variable when the reverse
        sweep reaches an earlier statement that reads the same version, so that one needs
        no tape of its own. A value read only for its shape has a shape tape (runtime.push_shape).
        A value that cheap, pure statements of the same iteration compute from values the
        reverse sweep has at hand is recomputed there instead (see recipe).
        """
        covered_value: set[str] = set()
        covered_shape: dict[str, tuple] = {}  # var -> the tape key its shape was popped from

        def decide(stmt, need):
            if need.shape and need.when == "post" and isinstance(stmt, ir.Assign) and need.var in stmt.targets:
                # Where var is first bound in a loop, its zeros take the shape an earlier pass's
                # binding gave it, which its tape holds under this pass's (rebound_zeros_shaped)
                return "shape", "shape", (need.var, id(stmt), need.when)
            if need.var in covered_value:
                self.reread.add((id(stmt), need))
                return None, "value", None
            if need.shape and need.var in covered_shape:
                return None, "shape", covered_shape[need.var]
            if need.var in self.trips.values():
                # A trip counter is set where its loop starts: again on each outer iteration.
                clobbered = bool(self.an.enclosing_loops(stmt))
            else:
                clobbered = self.an.defs_may_clobber(need.var, stmt, operand=need.when == "pre") \
                    and not self.loop_invariant(need.var)
            if not clobbered:
                return None, "value", None
            if self.recomputable(stmt, need, covered_value):
                return "recompute", "value", None
            if need.shape:
                return "shape", "shape", (need.var, id(stmt), need.when)
            return "value", "value", None

        for stmt in reversed(block):
            for child in ir.child_blocks(stmt):
                self._plan_block(child)
            needs = sorted(self.needs(stmt), key=lambda n: (n.var, n.when, n.shape)) if self.has_work(stmt) else []
            for need in needs:
                if need.when == "post":
                    self.decisions[(id(stmt), need)] = decide(stmt, need)
            for s in ir.walk([stmt]):
                written = set(ir.stmt_writes(s))
                covered_value -= written
                for var in written:
                    covered_shape.pop(var, None)
            for need in needs:
                if need.when == "pre":
                    self.decisions[(id(stmt), need)] = decide(stmt, need)
            recomputed = sorted({n.var for n in needs if self.decisions[(id(stmt), n)][0] == "recompute"})
            if recomputed:
                statements = self.recompute_statements(stmt, recomputed, covered_value)
                self.recomputed[id(stmt)] = (recomputed, statements)
                # They stay in their variables for earlier statements (the versions this one reads).
                covered_value |= {t for d in statements if d is not stmt for t in d.targets}
            targets = set(stmt.targets) if isinstance(stmt, ir.Assign) else set()
            for need in needs:
                if need.when == "pre" and need.var not in targets:
                    # (the old value of an assigned variable may be popped under another name)
                    _, source, key = self.decisions[(id(stmt), need)]
                    if source == "shape":
                        covered_shape[need.var] = key
                    else:
                        covered_value.add(need.var)
