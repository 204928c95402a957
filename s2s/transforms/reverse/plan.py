"""Reverse mode, the plan of one function: the result of the plan pass, which the sweeps read.

Before any code is written, a ReversePlan decides, for one function and the arguments whose
adjoints are asked of it: what is active, the scope of each adjoint (straight-line ones start
at their first contribution, the others at zero), for every value the reverse sweep reads
where it finds it (its variable, a tape, a tape of its shape, or computed again: planning.py),
the rule each call's reverse lines come from (instances.py), and which adjoints it asks of the
user functions it calls. `describe` gives that as a table (`s2s show ... --after plan`).

The plan also names the adjoints and the trip counters; the sweeps ask it for names as they
write code, so that a function's generated names stay in one sequence (ir.Names).
"""

from __future__ import annotations

import ast
import os
from typing import Any

from ...ir import nodes as ir
from ...analysis.activity import analyse
from ...analysis.shapes import ShapeClasses
from ...codegen.emit import Emitter
from ...errors import S2SError
from ...frontend.source import is_user_function
from ...rules import Rule
from ...rules.custom import CustomRule
from ..rule_helpers import all_names
from .core import refuse_before_analysis, refuse_after_analysis
from .instances import RuleInstances
from .loop_locals import bound_first, rename_loop_locals
from .planning import Planning


class ReversePlan(RuleInstances, Planning):
    """The reverse mode of fn with respect to active_params, decided (the plan pass's result for
    one function); entry: fn is the function the user differentiates (has_aux, facts and
    value_needed apply to it alone)."""

    # The bytes a loop's tape may take before the loop runs checkpointed (checkpointing.py);
    # None: never. plan_module sets it from the transform's options.
    tape_budget: int | None = None

    def __init__(self, fn: ir.Function, emitter: Emitter, active_params: list[str], has_aux: bool = False,
                 facts: dict | None = None, value_needed: bool = True, entry: bool = False):
        refuse_before_analysis(fn)
        fn = rename_loop_locals(fn)
        self.fn = fn
        self.has_aux = has_aux
        self.em = emitter
        self.names = ir.Names(all_names(fn) | {"np", "math", "runtime"})
        # (the entry's differentiated arguments hold floats: the doors refuse integers there)
        self.an = analyse(fn, active_params, active_params if entry else ())
        refuse_after_analysis(fn, self.an)
        self.active_params = active_params
        self.bars: dict[str, str] = {}
        self.invariant: dict[str, bool] = {}
        self.invariant_shapes: dict[str, bool] = {}  # var -> shape_invariant(var)
        self.trips: dict[int, str] = {}  # id(loop) -> trip-count variable
        self.decisions: dict[tuple, tuple] = {}  # (id(stmt), Need) -> (action, source, key): make_decisions
        self.reread: set[tuple] = set()  # (id(stmt), Need) at hand as a later statement's reverse left it
        self.recipes: dict[str, tuple | None] = {}  # var -> (its definition, recomputed operands)
        self.recomputed: dict[int, tuple] = {}  # id(stmt) -> (needed vars, statements to re-run)
        self.remat_wanted: set[str] = set()
        self.local_recipes: dict[tuple, tuple] = {}  # (var, id(stmt)) -> a recipe for that place only
        # What the arguments are (s2s.jit sees them at the call; analysis/shapes.py): where it proves
        # that an adjoint already has its variable's shape, no unbroadcast and no shape tape.
        self.classes = ShapeClasses(fn, facts) if facts is not None else None
        # s2s.grad has no use for the value: where it is proved a number (so that no check of
        # the output's shape is needed), the vjp returns None for it, and the folding pass then
        # drops what only the value needed (a sum over a long vector is a chain of dependent
        # additions that costs more than the rest of the gradient).
        self.value_skipped = (not value_needed and not has_aux and self.classes is not None
                              and self.classes.result is not None and self.classes.result[0] == "num")
        self.variants: dict[int, Rule | None] = {}  # id(stmt) -> the rule variant its reverse lines use
        self.rules: dict[int, Rule | None] = {}  # id(stmt) -> the rule its reverse lines come from
        self.rule_locals: dict[tuple, str] = {}  # (id(stmt), id(rule), local) -> its name
        self._plan_scopes()
        self._plan_bound_flags()
        self.appended = {stmt.tape for stmt in ir.walk(fn.body) if isinstance(stmt, ir.Push)}
        self.may_mutate = set()
        for members in self.an.alias_of.values():
            self.may_mutate |= set(members)
        # A list grown with .append is taped as itself (the reverse sweep's pops undo the appends),
        # but a write into one of its items (t[0] = v, through any name that holds it) is undone by
        # nothing: such a list is taped as a copy where a statement other than its append needs
        # it (forward_sweep.push). (Taped as itself, a helper's reverse, total(t), read t as the later
        # write left it: d/dx0 of s = total(t); t[0] = x[1]; s + total(t) was 2 x1 for 2 x0.)
        written = {stmt.base for stmt in ir.walk(fn.body) if isinstance(stmt, ir.SetItem)}
        for var in list(written):
            written |= set(self.an.alias_of.get(var, ()))
        self.appended_and_written = self.appended & written
        # The cotangent of the result: the generated function's last parameter.
        self.out_bar = self.names.fresh("out_bar")
        self.make_decisions()
        result = fn.result
        self.differentiated = isinstance(result, ir.Name) and self.an.is_active(result.id)
        # The calls whose reverse needs a callee's reverse mode: (stmt, callee, positions of the
        # arguments whose adjoints it returns). Those whose result's adjoint is zero where the
        # reverse sweep meets them ask for none: the reverse sweep names the ones it calls.
        self.calls: list[tuple[ir.Assign, Any, tuple[int, ...]]] = [
            (stmt, stmt.value.fn, tuple(k for k, a in enumerate(stmt.value.args) if self.an.atom_active(a)))
            for stmt in ir.walk(fn.body) if self.differentiated and isinstance(stmt, ir.Assign) and not stmt.unpack
            and self.has_work(stmt) and isinstance(stmt.value, ir.Call) and is_user_function(stmt.value.fn)]
        # The calls of an s2s.custom_vjp or custom_jvp that are differentiated: the forward sweep
        # takes their value from the rule (fwd's, or the jvp rule's), as JAX's derivatives see it.
        self.by_rule: set[int] = {
            id(stmt) for stmt in ir.walk(fn.body) if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Call)
            and isinstance(stmt.value.fn, CustomRule) and any(self.an.atom_active(a) for a in stmt.value.args)}

    # ---- names ------------------------------------------------------------------

    def bar(self, var: str) -> str:
        if var not in self.bars:
            self.bars[var] = self.names.fresh(f"{var}_bar")
        return self.bars[var]

    # ---- scopes of adjoints -----------------------------------------------------

    def _plan_scopes(self):
        """For each variable: the block whose reversal owns its adjoint, and whether it
        is a straight-line temporary (one assignment, all uses in that block)."""
        chains: dict[int, tuple] = {}

        def visit(block, chain):
            for stmt in block:
                chains[id(stmt)] = chain + (id(block),)
                for child in ir.child_blocks(stmt):
                    visit(child, chains[id(stmt)])

        visit(self.fn.body, ())
        self.block_of: dict[int, list] = {}
        for stmt in ir.walk(self.fn.body):
            for child in ir.child_blocks(stmt):
                self.block_of[id(child)] = child
        self.block_of[id(self.fn.body)] = self.fn.body
        self.chains = chains
        self.scope: dict[str, int] = {}
        self.straight: set[str] = set()
        for var, occurrences in self.an.occurrences.items():
            paths = [chains[id(s)] for s in occurrences]
            if var in self.fn.params:
                paths.append((id(self.fn.body),))
            common = paths[0]
            for path in paths[1:]:
                k = 0
                while k < min(len(common), len(path)) and common[k] == path[k]:
                    k += 1
                common = common[:k]
            while len(common) > 1 and not bound_first(var, self.block_of[common[-1]]):
                common = common[:-1]
            self.scope[var] = common[-1]
            defs = self.an.defs.get(var, [])
            direct = all(chains[id(s)] == common for s in occurrences)
            if direct and len(defs) <= 1 and var not in self.an.subscripted:
                self.straight.add(var)

    def _plan_bound_flags(self):
        """The variables whose adjoint starts as zeros (before the compound statement that last
        touches it in its scope) where the variable may not be bound on every path: `if c: w = ...`
        and later `if d: return w * x`. Such an adjoint starts where its variable was bound, which
        a flag set in the forward sweep tells (bound_flags: var -> the flag's name); the reverse
        of a statement that touches w runs only where the forward one did, with w bound.
        bound_after: id(stmt) -> the names bound on every path that reaches the end of stmt."""
        self.bound_after: dict[int, frozenset] = {}

        def visit(block, bound: frozenset) -> frozenset:
            for stmt in block:
                if isinstance(stmt, ir.If):
                    bound = visit(stmt.body, bound) & visit(stmt.orelse, bound)
                elif isinstance(stmt, ir.For):
                    end = visit(stmt.body, bound | {stmt.var})
                    bounds = (stmt.start, stmt.stop, stmt.step)
                    runs = all(isinstance(b, ir.Const) for b in bounds) and len(range(*(b.value for b in bounds)))
                    exits = any(isinstance(s, (ir.Break, ir.Continue)) for s in ir.walk(stmt.body))
                    bound = end if runs and not exits else bound  # (else the body may not run to its end)
                elif isinstance(stmt, ir.While):
                    bound = visit(stmt.cond, bound)
                    visit(stmt.body, bound)
                elif isinstance(stmt, ir.Assign):
                    bound = bound | set(stmt.targets)
                self.bound_after[id(stmt)] = bound
            return bound

        visit(self.fn.body, frozenset(self.fn.params) | frozenset(self.fn.constants))
        self.bound_flags: dict[str, str] = {}
        for var in sorted(self.scope):
            if var in self.fn.params or var in self.straight or not self.an.is_active(var):
                continue
            touching = [s for s in self.block_of[self.scope[var]] if any(
                var in set(ir.stmt_reads(t)) | set(ir.stmt_writes(t)) for t in ir.walk([s]))]
            last = touching[-1] if touching else None
            if isinstance(last, (ir.If, ir.For, ir.While)) and var not in self.bound_after[id(last)]:
                self.bound_flags[var] = self.names.fresh(f"{var}_bound")

    def needs_reset(self, var: str) -> bool:
        """Can the adjoint of var receive contributions again after this assignment?"""
        killing = [d for d in self.an.defs.get(var, []) if not isinstance(d, ir.SetItem)]
        if len(killing) != 1 or killing[0] == "param":
            return True
        return self.chains[id(killing[0])][-1] != self.scope[var]

    # ---- which statements have reverse work -------------------------------------

    def has_work(self, stmt) -> bool:
        an = self.an
        if isinstance(stmt, ir.Assign):
            # Assigning an active variable ends its adjoint's life there, even when the
            # value itself is a constant (y = np.zeros(n) in a loop).
            return any(an.is_active(t) for t in stmt.targets)
        if isinstance(stmt, ir.SetItem):
            return an.is_active(stmt.base)
        if isinstance(stmt, (ir.If, ir.For, ir.While)):
            return any(self.has_work(s) for b in ir.child_blocks(stmt) for s in b)
        if isinstance(stmt, ir.Push):
            return True  # t.append(v) is undone (t.pop()), also for an inactive t (the analysis counts on it)
        return False

    # ---- the plan as text -------------------------------------------------------

    def describe(self, emitter: Emitter, callee_modes) -> list[str]:
        """The plan as a table, one row per value the reverse sweep reads (by statement, in
        program order): where it finds it, and the rule of the statement's reverse lines;
        then what is recomputed, the calls' reverse modes, and the active variables.
        callee_modes(fn, positions): how to name the reverse mode a call asks for."""
        statements = {id(s): s for s in ir.walk(self.fn.body)}
        read_at: dict[int, list] = {}
        for key, need in self.decisions:
            read_at.setdefault(key, []).append(need)
        rows = []
        for stmt in ir.walk(self.fn.body):
            if not self.has_work(stmt):
                continue
            reads = sorted(read_at.get(id(stmt), []), key=lambda n: (n.var, n.when, n.shape))
            rule = self.rules.get(id(stmt))
            rule_text = rule.name if rule is not None and rule.kind == "rule" else ""
            if not reads and not rule_text:
                continue
            text = _statement_text(stmt, emitter)
            for k, need in enumerate(reads or [None]):
                read = "" if need is None else _read_text(need)
                source = "" if need is None else self._source_text(stmt, need, statements)
                rows.append((str(stmt.origin.line) if k == 0 else "", text if k == 0 else "",
                             rule_text if k == 0 else "", read, source))
        lines = []
        if rows:
            header = ("line", "statement", "rule", "reads", "from")
            widths = [max(len(r[c]) for r in rows + [header]) for c in range(4)]
            for row in [header] + rows:
                lines.append("  " + "  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:4]))
                             + "  " + row[4])
        else:
            lines.append("  (its reverse sweep reads nothing that a later statement may overwrite, and calls no rule)")
        for key, (variables, recomputed) in self.recomputed.items():
            again = "; ".join(_statement_text(d, emitter) for d in recomputed)
            lines.append(f"  recomputed at line {statements[key].origin.line}: {', '.join(variables)}, by {again}")
        for stmt, fn, positions in self.calls:
            lines.append(f"  call at line {stmt.origin.line}: {_statement_text(stmt, emitter)} asks for "
                         f"{callee_modes(fn, positions)}")
        for key in sorted(self.by_rule, key=lambda k: self.an.info[k].pos):
            lines.append(f"  value by its rule at line {statements[key].origin.line}: "
                         f"{_statement_text(statements[key], emitter)}")
        active = sorted(v for v in self.an.varied if self.an.is_active(v))
        lines.append(f"  active: {', '.join(active) or 'nothing'}")
        if self.value_skipped:
            lines.append("  value: left out (a number, which grad does not return)")
        return lines

    def _source_text(self, stmt, need, statements: dict) -> str:
        action, source, key = self.decisions[(id(stmt), need)]
        if action == "value":
            return "a tape"
        if action == "shape":
            return "a tape of its shape"
        if action == "recompute":
            return "recomputed"
        if source == "shape":
            return f"its shape, popped at line {statements[key[1]].origin.line}"
        if (id(stmt), need) in self.reread:
            return "its variable, popped or recomputed for a later statement"
        return "its variable"


def _read_text(need) -> str:
    text = f"shape of {need.var}" if need.shape else need.var
    return text + " (after)" if need.when == "post" else text


def _statement_text(stmt, emitter: Emitter) -> str:
    """One line of Python for an IR statement (a compound one's first line)."""
    try:
        if isinstance(stmt, ir.For):
            emitted = emitter.for_range(stmt.var, [stmt.start, stmt.stop, stmt.step], [])
        elif isinstance(stmt, ir.If):
            emitted = emitter.if_(stmt.test, stmt.negated, [ast.Pass()], [])
        elif isinstance(stmt, ir.While):
            emitted = ast.While(emitter.atom(stmt.test), [ast.Pass()], [])
        else:
            emitted = emitter.primal(stmt)
            emitted = emitted[-1] if isinstance(emitted, list) else emitted
        return ast.unparse(ast.fix_missing_locations(emitted)).splitlines()[0]
    except S2SError:  # (a value generated code cannot name: the forward sweep says so)
        return f"{os.path.basename(stmt.origin.short())}  {stmt.origin.text}"
