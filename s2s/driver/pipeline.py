"""One engine for the three doors (API, command line, import hook): function -> module source.

Each transform is a named list of passes (PIPELINES, below), run in order over one Unit:
lowering to the IR, the transform itself (reverse mode in four passes, each reading the result
of the one before: plan, forward_sweep, reverse_sweep, vjp_module), then passes over the
emitted Python, then the text.
`s2s show FILE:NAME --mode grad --after PASS`, or S2S_DUMP_AFTER=PASS for the API, prints
the code as it stands after a pass; an internal error names the pass it happened in.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ..analysis.activity import Analysis
from ..codegen.emit import Emitter, name
from ..codegen.format import format_source
from ..codegen.module import assign_names, header, primal_function, prologue
from ..codegen.numba_routes import route_numba_rejects
from ..codegen.overlaps import copy_overlaps
from ..errors import NoBatchingRule, S2SError
from .origins import through_generated
from ..frontend.collect import collect
from ..frontend.dict_loops import unroll_dict_loops
from ..frontend.known_arguments import drop_branches_on_none
from ..frontend.nested import lowering_undifferentiated
from ..ir import nodes as ir
from ..rules.custom import CustomRule
from ..optimize.carries import promote_carries
from ..optimize.fuse import fuse_module
from ..runtime.constants import constant_text
from ..optimize.loops import loop_module
from ..options import config
from ..transforms.drivers import columns_driver, grad_wrapper, second_order_driver
from ..transforms.reverse import (ForwardSweeps, ReversePlans, ReverseSweeps, forward_sweeps, plan_module,
                                  reverse_sweeps, vjp_definitions)
from ..transforms.variants import jvp_functions
from ..transforms.static_properties import fold_squeezed_axes, fold_static_properties
from ..transforms.vectorize import total_module, vmap_module
from ..transforms.zero_d_merges import numbers_where_paths_meet


@dataclass
class Unit:
    """What flows through the passes of one transform of one function."""

    fn: Any
    transform: str
    options: dict
    display_path: str | None = None
    functions: list[ir.Function] = field(default_factory=list)  # after "lower": callees first
    emitter: Emitter = field(default_factory=Emitter)
    header: list[str] = field(default_factory=list)
    body: list[ast.stmt] | None = None  # the module's statements, from the transform on
    loop_facts: dict | None = None  # {function: {parameter: fact}} of specialised functions, for "loops", "carries"
    # reverse mode's results, each pass's from the one before (transforms/reverse/passes.py)
    plans: ReversePlans | None = None  # after "plan"
    forward_sweeps: ForwardSweeps | None = None  # after "forward_sweep"
    reverse_sweeps: ReverseSweeps | None = None  # after "reverse_sweep"
    text: str | None = None  # from "unparse" on
    entries: dict = field(default_factory=dict)  # the module's entry points, by role, from the transform
    # a squeeze without axes that the arguments' axes of length 1 would decide, not given (s2s.jit asks again)
    wants_unit_axes: bool = False

    @property
    def entry(self) -> ir.Function:
        return self.functions[-1]

    def entry_name(self) -> str:
        return self.emitter.function_names[id(self.entry.python)]


class InternalError(S2SError):
    """A defect of s2s itself, raised in a named pass: please report it with the function."""


# ---- the passes -------------------------------------------------------------------


def lower(unit: Unit) -> None:
    """Parse the function and the user functions it calls, and lower them to the IR. What the
    IR can settle before a transform is settled here: for code generated for one call (s2s.jit
    of a gradient, a jvp or a primal), the branches of `if w is None:` and of `if z.ndim == 1:`;
    loops over dicts of known keys, written out; a variable that holds a number on one path and
    a 0-d array on another, one type under Numba."""
    with lowering_undifferentiated(unit.transform == "primal"):  # (a nested s2s.grad may run in reverse mode)
        unit.functions = collect(unit.fn)
    assign_names(unit.functions, unit.emitter)
    named_facts = _named_facts(unit)
    if named_facts is not None:  # (code generated for one call: `if w is None:` has one answer there)
        drop_branches_on_none(unit.entry, named_facts)
        fold_static_properties(unit.entry, named_facts)  # (and `if z.ndim == 1:`)
        unit.wants_unit_axes = fold_squeezed_axes(unit.entry, named_facts, _named_unit_axes(unit))
    if unit.transform not in ("vmap", "vmap_total"):  # (Numba has no loop over a dict's keys)
        by_python = {id(f.python): f for f in unit.functions}
        for function in unit.functions:
            unroll_dict_loops(function, named_facts if function is unit.entry else None)
            numbers_where_paths_meet(function, by_python)


def check_aliases(unit: Unit) -> None:
    """The transforms' refusals (and run-time checks) of in-place writes through aliases, for
    code that is not differentiated: `z = y; z += x` must not silently become `z = z + x`."""
    for lowered in unit.functions:
        Analysis(lowered, [], []).run()


def primal(unit: Unit) -> None:
    """The normalized primal of the function and its callees (s2s.jit of a plain function)."""
    # (an s2s.custom_vjp's or custom_jvp's rule is collected with it; only its derivatives call it)
    called = _reachable(unit.functions)
    unit.body = prologue(unit.emitter) + [primal_function(f, unit.emitter) for f in unit.functions
                                          if id(f.python) in called]
    unit.header = header(unit.entry, f"primal of {unit.entry.name}", unit.display_path)
    named_facts = _named_facts(unit)
    if named_facts is not None:
        unit.header.insert(1, _specialised_line(named_facts, unit.entry.static, _named_unit_axes(unit)))
        unit.loop_facts = {unit.entry_name(): named_facts}  # (for the carries: what the arguments are)
    unit.entries = {"name": unit.entry_name()}


def _reachable(functions: list[ir.Function]) -> set[int]:
    """The ids of the entry (the last function) and of the functions it calls, transitively."""
    by_id = {id(f.python): f for f in functions}
    called, pending = set(), [id(functions[-1].python)]
    while pending:
        key = pending.pop()
        if key not in called and key in by_id:
            called.add(key)
            pending += list(by_id[key].callees)
    return called


def _argnums(unit: Unit) -> tuple[int, ...]:
    if unit.transform == "vjp" and "argnums" not in unit.options:
        # (the parameters generated code takes: *args one tuple, **kwargs none)
        return tuple(range(sum(p.kind is not p.VAR_KEYWORD for p in inspect.signature(unit.fn).parameters.values())))
    return tuple(unit.options.get("argnums", (0,)))


def _named_facts(unit: Unit) -> dict | None:
    """What s2s.jit saw of the arguments at the call (of grad, jvp's primals, a primal that tests
    an ndim), by parameter (None elsewhere)."""
    facts = unit.options.get("facts") if unit.transform in ("grad", "jvp", "primal") else None
    if facts is None:
        return None
    return {p: (facts[k] if k < len(facts) else None) for k, p in enumerate(unit.entry.params)}


def _named_unit_axes(unit: Unit) -> dict | None:
    """The axes of length 1 of each array argument, by parameter, where s2s.jit gave them
    (for a function that squeezes without axes: transforms/static_properties.py)."""
    units = unit.options.get("unit_axes")
    if units is None:
        return None
    return {p: (units[k] if k < len(units) else None) for k, p in enumerate(unit.entry.params)}


def plan(unit: Unit) -> None:
    """Reverse mode, planned (transforms/reverse/plan.py), for the entry and for each set of
    arguments its calls may ask a callee's adjoints of, callers first: what is active, where the
    reverse sweep finds each value it reads (its variable, a tape, a tape of its shape, or
    computed again), the rule each statement's reverse lines come from."""
    unit.plans = plan_module(unit.functions, unit.emitter, _argnums(unit), bool(unit.options.get("has_aux", False)),
                             _named_facts(unit), bool(unit.options.get("value", True)), _tape_budget(unit))


def _tape_budget(unit: Unit) -> int | None:
    """The bytes a loop's tape may take before the loop runs checkpointed: grad's or vjp's
    tape_budget, else s2s.config's s2s_tape_budget (S2S_TAPE_BUDGET); None: no limit, and no
    checkpointed path written."""
    budget = unit.options.get("tape_budget")
    budget = config.s2s_tape_budget if budget is None else budget
    return None if budget is None else int(budget)


def forward_sweep(unit: Unit) -> None:
    """Each planned reverse mode's forward sweep: the primal, with the pushes onto its tapes."""
    unit.forward_sweeps = forward_sweeps(unit.plans)


def reverse_sweep(unit: Unit) -> None:
    """The reverse sweeps, callers first, of the reverse modes that are called (the calls name
    their callees'), and the reverse modes that s2s.custom_vjp and custom_jvp rules give."""
    unit.reverse_sweeps = reverse_sweeps(unit.forward_sweeps)


def vjp_module(unit: Unit) -> None:
    """The module: the callees' primals and reverse modes, the entry's, and for grad its
    wrapper, for jacrev a compiled loop over output cotangents."""
    argnums, emitter, entry = _argnums(unit), unit.emitter, unit.entry
    named_facts = _named_facts(unit)
    ename = unit.entry_name()
    body = prologue(emitter) + vjp_definitions(unit.reverse_sweeps)
    seed = body[-1].args.args[-1].arg  # the entry vjp's last parameter: out_bar, or a fresh name
    if unit.options.get("rows") and len(argnums) == 1:  # jacrev: a compiled loop over output cotangents
        body.append(columns_driver(ename, entry.params, "vjp", argnums[0]))
    unit.entries = {"name": ename, "vjp": f"{ename}_vjp"}
    if any(isinstance(f.python, CustomRule) for f in unit.functions):  # (its value is the rule's: s2s.vjp)
        unit.entries["by_rule"] = True
    if unit.transform == "grad":
        body.append(grad_wrapper(ename, entry, argnums, unit.plans.value_skipped))
        unit.entries["grad"] = body[-1].name
    what = f"{unit.transform} of {entry.name} with respect to {', '.join(entry.params[k] for k in argnums)}"
    unit.header = header(entry, what, unit.display_path)
    if named_facts is not None:
        unit.header.insert(1, _specialised_line(named_facts, entry.static, _named_unit_axes(unit)))
        # The gradient's seed is a number (s2s.jit calls the vjp with 1.0).
        unit.loop_facts = {f"{ename}_vjp": {**named_facts, seed: "float"}}
    unit.body = body


def forward(unit: Unit) -> None:
    """Forward mode of the function and its callees; for jacfwd a compiled loop over columns,
    for second_order (the function is a generated vjp) one over rows and columns."""
    emitter, entry = unit.emitter, unit.entry
    fname = unit.entry_name()
    # Drivers differentiate with respect to one argument: the others' tangents are symbolic
    # zeros (and so is the output cotangent's, in second order), not arrays of zeros.
    if unit.transform == "second_order":  # fn is a generated <name>_vjp(params..., out_bar)
        columns = unit.options.get("active") or range(len(entry.params) - 1)
        entry_active = [[entry.params[k]] for k in columns]
    elif unit.options.get("columns"):  # jacfwd: a compiled loop over a stack of tangents, one per argument
        # (of the arguments jacfwd differentiates: another's, an int n of np.arange(n), may refuse)
        columns = unit.options.get("active") or range(len(entry.params))
        entry_active = [[entry.params[k]] for k in columns]
    elif unit.options.get("active") is not None:  # tangents for these arguments only
        entry_active = [[entry.params[k] for k in unit.options["active"]]]
    else:
        entry_active = [list(entry.params)]
    defs, entry_names = jvp_functions(unit.functions, emitter, entry_active)
    body = prologue(emitter) + defs
    unit.entries = {"name": fname}
    if unit.transform == "second_order":
        for k, jvp_name in zip(columns, entry_names):
            body.append(second_order_driver(fname, jvp_name, entry.params, k))
    elif unit.options.get("columns"):
        wrt = [None] * len(entry.params)  # the forward mode for each argument alone
        for k, jvp_name in zip(columns, entry_names):
            wrt[k] = jvp_name
            body.append(columns_driver(fname, entry.params, "jvp", k, bool(unit.options.get("has_aux")), jvp_name))
        unit.entries["wrt"] = wrt
    else:
        unit.entries["jvp"] = entry_names[0]
    unit.header = header(entry, f"jvp of {entry.name}", unit.display_path)
    facts = unit.options.get("facts") if unit.transform == "jvp" else None
    if facts is not None:
        # What each primal and then each tangent is, for s2s.jvp under s2s.jit's backend: the
        # entry's elementwise statements over 1-d arrays then run as loops (optimize/loops.py).
        jvp_def = next(d for d in body if isinstance(d, ast.FunctionDef) and d.name == entry_names[0])
        names = [a.arg for a in jvp_def.args.args]
        named = {p: (facts[k] if k < len(facts) else None) for k, p in enumerate(names)}
        primals = len(entry.params)
        active = [entry.params.index(p) for p in entry_active[0]]  # the argument of each tangent
        for p, k in zip(names[primals:], active):  # s2s.jvp checks that a tangent has its primal's shape
            if named[p] == named[names[k]] and named[p] == ["array", 1]:
                named[p] = ["like", names[k]]
        unit.header.insert(1, _specialised_line(named, entry.static, _named_unit_axes(unit)))
        unit.loop_facts = {jvp_def.name: named}
    unit.body = body


def _specialised_line(named_facts: dict, static: dict, units: dict | None = None) -> str:
    """The header's line on what s2s.jit saw of the arguments (static values have their own
    line), and for a function that squeezes without axes, which of their axes have length 1."""
    return "Specialised (s2s.jit) for arguments: " + ", ".join(
        f"{p} {_describe_fact(f)}{_describe_units((units or {}).get(p))}"
        for p, f in named_facts.items() if p not in static) + "."


def _describe_units(axes) -> str:
    if axes is None:
        return ""
    if not axes:
        return " (no axis of length 1)"
    return f" (axis {', '.join(map(str, axes))} of length 1)" if len(axes) == 1 else \
        f" (axes {', '.join(map(str, axes))} of length 1)"


def _describe_fact(fact) -> str:
    if isinstance(fact, list) and fact[0] == "like":
        return f"shaped like {fact[1]}"
    if isinstance(fact, list) and fact[0] == "array":
        return f"{fact[1]}-d {'boolean ' if fact[2:] == ['bool'] else ''}array"
    if isinstance(fact, list) and fact[0] == "tuple":
        return "(" + ", ".join(_describe_fact(f) for f in fact[1]) + ")"
    if isinstance(fact, list) and fact[0] == "dict":
        return "{" + ", ".join(f"{k!r}: {_describe_fact(f)}" for k, f in zip(fact[1], fact[2])) + "}"
    if fact == "none":
        return "None"
    return fact if isinstance(fact, str) else "any"


def vectorize(unit: Unit) -> None:
    """vmap by batching rules (transforms/vectorize.py): the function over a batch as
    vectorised NumPy, and for "vmap" its `<name>_vmap` driver, for "vmap_total" the sum over
    the batch that vmap(grad(f)) differentiates. The options say what the vmap door knows
    from the call: params, trees (batching.ArgTree of each argument), and for "vmap"
    out_structure, leaf_paths, out_axes and description; for "vmap_total" forced and has_aux."""
    o = unit.options
    if unit.transform == "vmap_total":
        custom = next((f for f in unit.functions if isinstance(f.python, CustomRule)), None)
        if custom is not None:  # the total's gradient would differentiate its body, not its rule
            raise NoBatchingRule(f"{custom.name} has an s2s.{custom.python.kind} rule, which the gradient of the "
                                 "vectorised batch would not call", custom.origin)
        unit.body, unit.header, entries = total_module(unit.functions, unit.emitter, o["params"], o["trees"],
                                                       o["forced"], bool(o.get("has_aux")), unit.display_path)
    else:
        unit.body, unit.header, entries = vmap_module(unit.functions, unit.emitter, o["params"], o["trees"],
                                                      o["out_structure"], o["leaf_paths"], o["out_axes"],
                                                      o["description"], unit.display_path)
    unit.entries = {"name": unit.entry_name(), **entries}


def numba_routes(unit: Unit) -> None:
    """NumPy that numba.njit rejects (np.max(x, axis=1, keepdims=True)) -> runtime helpers."""
    unit.body = route_numba_rejects(unit.body, unit.emitter.comments, unit.emitter.origin_comments)


def carries(unit: Unit) -> None:
    """A loop carry that starts as a number and becomes an array (`s = 0.0`, then `s = s + x`
    in the loop) starts as an array under Numba, where a variable has one type."""
    unit.body = promote_carries(unit.body, unit.emitter.comments, unit.emitter.origin_comments, unit.loop_facts)


def fuse(unit: Unit) -> None:
    """Fold single-use temporaries back into their reader; remove dead code."""
    unit.body = fuse_module(unit.body, headings=unit.emitter.origin_comments)


def overlaps(unit: Unit) -> None:
    """Copy the right side of an in-place update that may overlap its target
    (`z[1:] += z[:-1]`): NumPy reads it whole before writing, Numba element by element."""
    unit.body = copy_overlaps(unit.body)


def loops(unit: Unit) -> None:
    """In code specialised to its arguments: runs of elementwise statements over 1-d arrays
    become one explicit loop, with carried adjoint updates (nothing to do in other code)."""
    if unit.loop_facts:
        unit.body = loop_module(unit.body, unit.loop_facts, comment=unit.emitter.comment)


def unparse(unit: Unit) -> None:
    """Python text: the header, the statements, the comments in place."""
    unit.text = unit.emitter.text(unit.header, unit.body)


def format_(unit: Unit) -> None:
    """black."""
    unit.text = format_source(unit.text)


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[Unit], None]


LOWER, CHECK_ALIASES, PRIMAL = Pass("lower", lower), Pass("check_aliases", check_aliases), Pass("primal", primal)
PLAN, FORWARD_SWEEP = Pass("plan", plan), Pass("forward_sweep", forward_sweep)
REVERSE_SWEEP, VJP_MODULE = Pass("reverse_sweep", reverse_sweep), Pass("vjp_module", vjp_module)
FORWARD, VECTORIZE = Pass("forward", forward), Pass("vectorize", vectorize)
NUMBA_ROUTES, FUSE, LOOPS = Pass("numba_routes", numba_routes), Pass("fuse", fuse), Pass("loops", loops)
CARRIES = Pass("carries", carries)
OVERLAPS = Pass("overlaps", overlaps)
UNPARSE, FORMAT = Pass("unparse", unparse), Pass("format", format_)

# Reverse mode: what to tape and what to compute again, the forward sweeps, the reverse sweeps,
# the module with its wrappers.
REVERSE = (PLAN, FORWARD_SWEEP, REVERSE_SWEEP, VJP_MODULE)

# The pipeline of each transform, in the order its passes run.
PIPELINES: dict[str, tuple[Pass, ...]] = {
    "grad": (LOWER, *REVERSE, NUMBA_ROUTES, CARRIES, FUSE, OVERLAPS, LOOPS, UNPARSE, FORMAT),
    "vjp": (LOWER, *REVERSE, NUMBA_ROUTES, CARRIES, FUSE, OVERLAPS, LOOPS, UNPARSE, FORMAT),
    "jvp": (LOWER, FORWARD, NUMBA_ROUTES, CARRIES, FUSE, OVERLAPS, LOOPS, UNPARSE, FORMAT),
    "second_order": (LOWER, FORWARD, NUMBA_ROUTES, CARRIES, FUSE, OVERLAPS, UNPARSE, FORMAT),
    "primal": (LOWER, CHECK_ALIASES, PRIMAL, NUMBA_ROUTES, CARRIES, FUSE, OVERLAPS, UNPARSE, FORMAT),
    # vmap by batching rules (s2s.vmap on the python backend), rendered without fuse
    "vmap": (LOWER, CHECK_ALIASES, VECTORIZE, NUMBA_ROUTES, OVERLAPS, UNPARSE, FORMAT),
    "vmap_total": (LOWER, CHECK_ALIASES, VECTORIZE, NUMBA_ROUTES, OVERLAPS, UNPARSE, FORMAT),
}
TRANSFORMS = tuple(PIPELINES)


def pass_names(transform: str) -> list[str]:
    return [p.name for p in PIPELINES[transform]]


def dump(unit: Unit) -> str:
    """The code as it stands: text once there is text, the emitted statements once there are
    statements, reverse mode's latest result (the reverse sweeps, the forward sweeps, or the
    plans as text above the functions they plan), else the lowered functions (the IR, printed
    as the normalized primal)."""
    if unit.text is not None:
        return unit.text
    if unit.body is not None:
        return unit.emitter.text(unit.header, list(unit.body))
    emitter = copy.deepcopy(unit.emitter)  # printing adds comments, which the passes after must not see
    for result in (unit.reverse_sweeps, unit.forward_sweeps, unit.plans):
        if result is not None:
            return emitter.text(*result.code(emitter))
    defs = [primal_function(f, emitter) for f in unit.functions]
    return emitter.text([f"after lowering: {unit.entry.name} and its callees"], defs)


def run(unit: Unit, after: str | None = None, out=None) -> Unit:
    """Run the unit's pipeline; after: print the code as it stands after that pass to out
    (default: stderr). Exceptions other than S2SError name the pass they happened in."""
    passes = PIPELINES[unit.transform]
    if after is not None and after not in pass_names(unit.transform):
        raise S2SError(f"the {unit.transform} pipeline has no pass {after!r}; "
                       f"its passes: {', '.join(pass_names(unit.transform))}")
    for step in passes:
        try:
            step.run(unit)
        except S2SError as exc:
            origin = through_generated(exc.origin)
            if origin is exc.origin:
                raise
            # a statement of generated code that is differentiated again: the user's instead
            relocated = S2SError(exc.reason, origin, exc.hint)
            relocated.__class__ = type(exc)
            raise relocated from exc
        except Exception as exc:
            raise InternalError(f"internal error in the {step.name!r} pass of {unit.transform} of "
                                f"{getattr(unit.fn, '__name__', unit.fn)}: {type(exc).__name__}: {exc}",
                                hint="this is a defect of s2s; please report it with the function") from exc
        if step.name == after:
            (out or sys.stderr).write(f"# ---- {unit.transform} after {step.name} ----\n{dump(unit)}")
    return unit


def generate(fn: Any, transform: str, options: dict | None = None, display_path: str | None = None,
             after: str | None = None, out=None):
    """(source, dependencies) for one transform of fn: the single entry point that the API,
    the command line and the import hook share. dependencies names the user functions it
    calls and the module constants whose values it contains, for the cache, and the
    module's entry points ("entries": {role: function name, ...}, JSON values), which the
    cache stores with the module and the doors call.

    after (or the environment variable S2S_DUMP_AFTER): print the code after that pass."""
    options = options or {}
    if transform not in PIPELINES:
        raise S2SError(f"unknown transform {transform!r}; available: {', '.join(TRANSFORMS)}")
    if after is None and os.environ.get("S2S_DUMP_AFTER") in pass_names(transform):
        after = os.environ["S2S_DUMP_AFTER"]
    unit = run(Unit(fn, transform, options, display_path), after, out)
    functions = unit.functions
    # What else the generated text depends on: the user functions it calls, and the values
    # of the module constants it bakes in (GRAVITY = 9.81).
    dependencies = {
        "functions": [f.python for f in functions[:-1]]
        + list({id(w): w for f in functions for w in f.written_out}.values()),  # (writing_calls.py)
        # (A constant s2s named for an entry of a dict, CONSTS_w for CONSTS["w"], is in display;
        # the dict itself is in inlined, by the name the module holds it.)
        "constants": sorted({(f.python.__module__, name, constant_text(value))
                             for f in functions for name, value in {**f.constants, **f.inlined}.items()
                             if name not in f.display}),
        "references": sorted({(f.python.__module__, path, module, qualname)
                              for f in functions for path, module, qualname in f.references}),
        # as the cache gives them back (tuples become lists)
        "entries": json.loads(json.dumps({**unit.entries, **({"wants_unit_axes": True} if unit.wants_unit_axes
                                                               else {})})),
    }
    return unit.text, dependencies
