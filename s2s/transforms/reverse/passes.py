"""Reverse mode over a module's functions, in the passes of driver/pipeline.py, each taking the
result of the one before: plan (ReversePlans), forward_sweep (ForwardSweeps), reverse_sweep
(ReverseSweeps), then vjp_definitions for the vjp_module pass.

A call helper(x, 2.0) asks helper's reverse mode for the adjoint of x alone (variants.py): the
entry's plan says which reverse modes of its callees its calls ask for, their plans which of
theirs, and so on, and the plan pass plans each of them, callers first. A call whose result's
adjoint turns out to be zero where the reverse sweep meets it asks for nothing, so the
reverse_sweep pass, callers first as well, names the reverse modes that are called, and only
those are made. It also makes the ones that s2s.custom_vjp and custom_jvp rules give. A callee's
plan or forward sweep that s2s refuses is refused where a reverse sweep calls it.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from ...codegen.emit import Emitter, name
from ...codegen.module import primal_function
from ...errors import S2SError
from ...ir import nodes as ir
from ...rules.custom import CustomRule, custom_jvp, custom_vjp
from ..custom_rules import by_rule_function, custom_vjp_function, transposed_jvp_function
from ..variants import Variants, argnum_params
from .core import vjp_function
from .forward_sweep import ForwardSweep, ForwardSweeper
from .plan import ReversePlan
from .sweep import ReverseSweep, ReverseSweeper

Key = tuple  # (id of the user's function, its active parameters): one reverse mode


@dataclass
class ReversePlans:
    """The plan pass's result: a plan for each reverse mode that the module's calls may ask for."""

    functions: list[ir.Function]  # callees first, the entry last
    emitter: Emitter
    variants: Variants  # the names of the reverse modes (the entry's, until the reverse sweeps name the rest)
    entry: Key
    has_aux: bool
    # id(python function) -> the active parameters its callers' plans may ask adjoints of, in order
    asked: dict[int, list[tuple[str, ...]]] = field(default_factory=dict)
    plans: dict[Key, ReversePlan] = field(default_factory=dict)  # callers first
    refused: dict[Key, S2SError] = field(default_factory=dict)  # plans s2s refused (not the entry's)

    @property
    def value_skipped(self) -> bool:
        """The entry's vjp leaves its value out (grad under s2s.jit, where it is proved a number)."""
        return self.entry in self.plans and self.plans[self.entry].value_skipped

    def ask(self, fn, positions: tuple[int, ...]) -> None:
        params = self.variants.params[id(fn)]
        active = tuple(dict.fromkeys(params[k] for k in positions))
        if active not in self.asked[id(fn)]:
            self.asked[id(fn)].append(active)

    def mode_name(self, fn, active: tuple[str, ...]) -> str:
        """The name of fn's reverse mode for these parameters: given, or to be given."""
        return self.variants.wanted[id(fn)].get(active) or self.variants.plain_name(fn, active)

    def modes(self):
        """(lowered function, active parameters, key) of every reverse mode asked for, callers first."""
        for lowered in reversed(self.functions):
            for active in self.asked[id(lowered.python)]:
                yield lowered, active, (id(lowered.python), active)

    def code(self, emitter: Emitter) -> tuple[list[str], list[ast.stmt]]:
        """The plans as text, then the functions they plan (as lowered)."""

        def callee_mode(fn, positions) -> str:
            params = self.variants.params[id(fn)]
            active = tuple(dict.fromkeys(params[k] for k in positions))
            return f"{self.mode_name(fn, active)} (the adjoints of {', '.join(active) or 'nothing'})"

        header = [f"after planning: the reverse modes of {self.functions[-1].name} and its callees, callers first:",
                  "what each reverse sweep reads and where it finds it, the rule of each statement's reverse lines,",
                  "what each call asks of its callee", ""]
        for lowered, active, key in self.modes():
            header.append(f"{self.mode_name(lowered.python, active)}: reverse mode of {lowered.name} "
                          f"({lowered.origin.short()}) for the adjoints of {', '.join(active) or 'nothing'}")
            if isinstance(lowered.python, CustomRule):
                header.append(f"  by its s2s.{lowered.python.kind} rule")
            elif key in self.refused:
                header.append(f"  refused where a call asks for it: {self.refused[key].reason}")
            else:
                header += self.plans[key].describe(emitter, callee_mode)
            header.append("")
        return header, [primal_function(f, emitter) for f in self.functions]


@dataclass
class ForwardSweeps:
    """The forward_sweep pass's result: the forward sweep of each planned reverse mode."""

    plans: ReversePlans
    sweeps: dict[Key, ForwardSweep] = field(default_factory=dict)
    refused: dict[Key, S2SError] = field(default_factory=dict)  # (not the entry's)

    def code(self, emitter: Emitter) -> tuple[list[str], list[ast.stmt]]:
        """Each forward sweep as the start of its function: its tapes made, its statements."""
        header = ["after the forward sweeps: each planned reverse mode's primal statements with the pushes onto its",
                  "tapes (the reverse sweeps, and the return, come next)"]
        defs = []
        for lowered, active, key in self.plans.modes():
            refusal = self.plans.refused.get(key) or self.refused.get(key)
            if refusal is not None:
                header.append(f"{self.plans.mode_name(lowered.python, active)}: refused where a call asks for it: "
                              f"{refusal.reason}")
            if key not in self.sweeps:
                continue
            sweep = self.sweeps[key]
            doc = (f"Forward sweep of the reverse mode of {lowered.name} ({lowered.origin.short()}) for the "
                   f"adjoints of {', '.join(active) or 'nothing'}.")
            body = sweep.tapes.setup(emitter) + copy.deepcopy(sweep.statements)
            defs.append(_function(self.plans.mode_name(lowered.python, active), self.plans.plans[key], doc, body))
        return header, defs


@dataclass
class ReverseSweeps:
    """The reverse_sweep pass's result: each reverse mode that is called, callers first, as its
    reverse sweep or as the function an s2s.custom_vjp's or custom_jvp's rule gives."""

    forward: ForwardSweeps
    # (lowered function, active parameters, the function's name, what was made)
    made: list[tuple[ir.Function, tuple[str, ...], str, ReverseSweep | ast.FunctionDef]] = field(default_factory=list)

    def code(self, emitter: Emitter) -> tuple[list[str], list[ast.stmt]]:
        """Each reverse sweep in its function, the adjoints it returns in a comment."""
        header = ["after the reverse sweeps: the reverse modes that are called, callers first; each forward sweep",
                  "is left out (--after forward_sweep shows it)"]
        plans = self.forward.plans
        defs = []
        for lowered, active, fname, made in self.made:
            if isinstance(made, ast.FunctionDef):
                defs.append(copy.deepcopy(made))
                continue
            plan = plans.plans[(id(lowered.python), active)]
            doc = (f"Reverse sweep of the reverse mode of {lowered.name} ({lowered.origin.short()}) for the "
                   f"adjoints of {', '.join(active) or 'nothing'}.")
            adjoints = ", ".join(f"{p}: {ast.unparse(a)}" for p, a in zip(plan.active_params, made.adjoints))
            body = copy.deepcopy(made.statements) + [emitter.comment(f"adjoints returned: {adjoints or 'none'}")]
            defs.append(_function(fname, plan, doc, body))
        return header, defs


def _function(fname: str, plan: ReversePlan, doc: str, body: list) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in plan.fn.params] + [ast.arg(plan.out_bar)],
                         kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.FunctionDef(fname, args, [ast.Expr(ast.Constant(doc))] + body, [], None, lineno=0)


# ---- the passes ---------------------------------------------------------------------


def plan_module(functions: list[ir.Function], emitter: Emitter, argnums: tuple[int, ...], has_aux: bool = False,
                facts: dict | None = None, value_needed: bool = True, tape_budget: int | None = None) -> ReversePlans:
    """Plan the reverse mode of the entry (the last function) with respect to the arguments at
    argnums, and of its callees for the adjoints their calls may ask for. facts: what the entry's
    arguments are (s2s.jit); value_needed=False: grad, which leaves a value proved a number out;
    tape_budget: the bytes a loop's tape may take before the loop runs checkpointed
    (checkpointing.py), None for no checkpointing."""
    entry = functions[-1]
    active = tuple(argnum_params(entry, argnums))
    variants = Variants(functions, emitter, "_vjp")
    variants.name(entry.python, active, fixed=f"{emitter.function_names[id(entry.python)]}_vjp")
    plans = ReversePlans(functions, emitter, variants, (id(entry.python), active), has_aux,
                         {id(f.python): [] for f in functions})
    plans.asked[id(entry.python)].append(active)
    for lowered, params, key in plans.modes():  # (a function's callers are planned before it)
        if isinstance(lowered.python, CustomRule):  # its reverse mode is its rule's
            if isinstance(lowered.python, custom_jvp):  # the rule's, with respect to its tangents, transposed
                (rule,) = lowered.python.rule_functions()
                plans.ask(rule, (1,))
            continue
        try:
            if lowered is entry:
                plan = ReversePlan(lowered, emitter, list(params), has_aux, facts, value_needed, entry=True)
            else:  # (under s2s.jit a callee's arguments are not known: specialised, with no facts)
                plan = ReversePlan(lowered, emitter, list(params), facts={} if facts is not None else None)
            plan.tape_budget = tape_budget
        except S2SError as exc:
            if lowered is entry:
                raise
            plans.refused[key] = exc
            continue
        plans.plans[key] = plan
        for _, fn, positions in plan.calls:
            plans.ask(fn, positions)
    return plans


def forward_sweeps(plans: ReversePlans) -> ForwardSweeps:
    """The forward sweep of each planned reverse mode."""
    result = ForwardSweeps(plans)
    for key, plan in plans.plans.items():
        try:
            result.sweeps[key] = ForwardSweeper(plan).run()
        except S2SError as exc:
            if key == plans.entry:
                raise
            result.refused[key] = exc
    return result


def reverse_sweeps(forward: ForwardSweeps) -> ReverseSweeps:
    """The reverse sweep of each reverse mode that is called, callers first, so that each callee's
    are known (Variants names them as the calls ask); and the functions the rules give."""
    plans = forward.plans
    variants, emitter, functions = plans.variants, plans.emitter, plans.functions
    entry = functions[-1]
    result = ReverseSweeps(forward)
    for lowered in reversed(functions):
        for active, fname in variants.wanted[id(lowered.python)].items():
            if active == ("__by_rule__",):
                made = by_rule_function(lowered, emitter, fname)
            elif isinstance(lowered.python, CustomRule):  # the user's rule
                if lowered is entry and plans.has_aux:
                    raise S2SError(f"has_aux with an s2s.{lowered.python.kind} function ({lowered.name}) is not "
                                   "supported", lowered.origin,
                                   "return the value alone, or wrap it: def g(x): return f(x), aux")
                if isinstance(lowered.python, custom_vjp):  # fwd, then bwd
                    made = custom_vjp_function(lowered, functions, emitter, list(active), fname)
                else:
                    made = transposed_jvp_function(lowered, emitter, variants, list(active), fname)
            else:
                key = (id(lowered.python), active)
                refusal = plans.refused.get(key) or forward.refused.get(key)
                if refusal is not None:
                    raise refusal
                sweep = forward.sweeps[key]
                for calls, fn in sweep.by_rule:  # (named here, in the order the module's functions are made)
                    ruled = variants.by_rule(fn)
                    for node in calls:
                        node.func = name(ruled)
                made = ReverseSweeper(plans.plans[key], sweep, variants).run()
            result.made.append((lowered, active, fname, made))
    return result


def vjp_definitions(sweeps: ReverseSweeps) -> list[ast.stmt]:
    """The module's functions: the callees' primals and reverse modes, then the entry's reverse
    mode (last)."""
    forward = sweeps.forward
    plans = forward.plans
    variants, emitter, functions = plans.variants, plans.emitter, plans.functions
    entry = functions[-1]
    made: dict[int, list] = {}
    for lowered, active, fname, one in sweeps.made:
        if isinstance(one, ReverseSweep):
            key = (id(lowered.python), active)
            one = vjp_function(plans.plans[key], forward.sweeps[key], one, fname,
                               checks_tangent=lowered is not entry and fname in variants.tangent_transposes)
        made.setdefault(id(lowered.python), []).append(one)
    transformed = [d for lowered in functions for d in made.get(id(lowered.python), [])]
    # A custom_jvp's rule is called by its reverse mode only (as the rule's vjp): no plain copy
    called = {n.id for d in transformed for n in ast.walk(d) if isinstance(n, ast.Name)}
    rules = {id(r) for f in functions if isinstance(f.python, custom_jvp) for r in f.python.rule_functions()}
    defs = []
    for lowered in functions[:-1]:
        if id(lowered.python) not in rules or emitter.function_names[id(lowered.python)] in called:
            defs.append(primal_function(lowered, emitter))
        defs += [d for d in transformed if d.name in variants.wanted[id(lowered.python)].values()]
    if isinstance(entry.python, CustomRule):  # its rule may call it
        defs.append(primal_function(entry, emitter))
    defs.append(transformed[-1])
    return defs
