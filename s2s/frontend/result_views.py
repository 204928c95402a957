"""Which parameters of a user function its result may share memory with, and how.

The alias analysis (analysis/points_to.py) refuses a write into an array that another live
name may share. A helper's result used to count as sharing every argument it was passed, so
`c0, c1 = first(v)` with `def first(v): return v[0], v[1]` made `v[0] = ...` a refusal,
though for a 1-d v both are numbers. This summary tells the caller, per positional
parameter, whether the result may be the array itself or a slice of it ("whole": the caller
refuses a write as before) or only what integer indexing reads from it ("element": a number
where the indices cover every axis, a view where they do not; the caller checks at run time).
"""

from __future__ import annotations

from ..ir import nodes as ir
from ..rules import facts
from .source import is_user_function

WHOLE, ELEMENT = "whole", "element"


def reads_elements(index: ir.Index) -> bool:
    """x[i, j]: integer indexing only (no slice, np.newaxis or ...), so the value is a number
    when the indices cover every axis of x, and never the whole of x."""
    return not any(isinstance(item, (ir.Slice, ir.NewAxis, ir.EllipsisIndex)) for item in index.items)


def result_views(fn: ir.Function) -> dict[int, str]:
    """{position of a parameter: WHOLE or ELEMENT} for each parameter the result may share.

    Flow-insensitive (every assignment of a name counts, wherever it is, and every value stored
    into it, which a list keeps by reference): an over-estimate,
    which is the safe direction. fn.callee_results must hold its callees' summaries.
    """
    position = {p: k for k, p in enumerate(fn.params)}
    state: dict[str, set] = {p: {(p, WHOLE)} for p in fn.params}
    stores = [s for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and not s.inplace or isinstance(s, ir.SetItem)]
    changed = True
    while changed:  # a fixpoint: a loop may carry a name around to an earlier statement
        changed = False
        for stmt in stores:
            shared = value_shares(stmt.value, state, fn.callee_results)
            # (x[i] = v: where x is a list, its element is v itself)
            for target in (stmt.base,) if isinstance(stmt, ir.SetItem) else stmt.targets:
                if not shared <= state.get(target, set()):
                    state[target] = state.get(target, set()) | shared
                    changed = True
    out: dict[int, str] = {}
    for name in ir.names_in(fn.result):
        for param, kind in state.get(name, ()):
            if out.get(position[param]) != WHOLE:
                out[position[param]] = kind
    return out


def value_shares(value, state: dict, callee_results: dict) -> set:
    """(root, kind) pairs an assigned value may share, from the names' pairs in state."""

    def of(names, kind=None):
        found = set().union(*(state.get(n, set()) for n in names)) if names else set()
        return {(root, kind) for root, _ in found} if kind else found

    if isinstance(value, ir.Name):
        return of([value.id])
    if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
        return of([value.value.id], ELEMENT if reads_elements(value.index) else None)
    if isinstance(value, ir.Attribute) and isinstance(value.value, ir.Name):
        return set() if value.attr in ir.SHAPE_ATTRIBUTES else of([value.value.id])
    if isinstance(value, ir.Build):
        return of(ir.names_in(value))
    if isinstance(value, ir.Call) and is_user_function(value.fn):
        summary = callee_results.get(id(value.fn))
        if summary is None or value.kwargs:  # not summarised: it may return any argument whole
            return of(ir.names_in(value))
        out: set = set()
        for k, arg in enumerate(value.args):
            if k in summary:
                out |= of(ir.names_in(arg), ELEMENT if summary[k] == ELEMENT else None)
        return out
    if isinstance(value, ir.Call) and facts(value.fn).view:
        return of(ir.names_in(value.args[0]))
    return set()
