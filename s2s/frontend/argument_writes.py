"""Helpers that write into their parameters: the caller's array would change under NumPy.

s2s lowers every function to work on a private copy of a parameter it writes into (see
`Normalizer.private_copies`), so a helper's in-place write never reaches its caller. Where the
caller passes a variable of its own, the helper's body is written out at the call, writing into
that variable (writing_calls.py). What is left is checked here once every function is lowered:
where the caller reads the array it passed after the call, NumPy's program sees the change and
s2s's would not (an argument that is a view, `helper(y[1])`; a write through a second helper or
reaching another name of the array), so the call is refused at the caller's statement, except
in the one form whose meaning does not depend on it: `y = helper(y, ...)`, which rebinds y to
the result (the written array, where the helper returns it) and leaves no name on the old array.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ..errors import Origin, S2SError
from .signatures import own_signature
from ..ir import nodes as ir


def parameter_writes(params: list[str], body: list, lowered: dict | None = None) -> dict[str, str]:
    """{parameter: how it is written} for each parameter that a statement may write into in
    place while the name still refers to the caller's array (before any rebinding on every
    path: `y = y.copy()` first makes the later writes the function's own). With lowered (the
    callees by id), passing the parameter to a callee that writes into it counts too."""
    found: dict[str, str] = {}

    def through_call(stmt) -> None:
        callee = lowered.get(id(stmt.value.fn)) if lowered and isinstance(stmt.value, ir.Call) else None
        if callee is None:
            return
        for param, arg in zip(callee.params, stmt.value.args):
            if param in callee.param_writes and isinstance(arg, ir.Name) and arg.id in params \
                    and arg.id not in rebound_now[0]:
                found.setdefault(arg.id, f"passed to {callee.name}, which writes into it")

    rebound_now: list = [set()]

    def scan(block: list, rebound: set) -> set:
        rebound = set(rebound)
        for stmt in block:
            if isinstance(stmt, ir.SetItem):
                if stmt.base in params and stmt.base not in rebound:
                    found.setdefault(stmt.base, f"{stmt.base}[...] = ...")
            elif isinstance(stmt, ir.Push):
                if stmt.tape in params and stmt.tape not in rebound:
                    found.setdefault(stmt.tape, f"{stmt.tape}.append(...)")
            elif isinstance(stmt, ir.Assign):
                if stmt.inplace:
                    target = stmt.targets[0]
                    if target in params and target not in rebound:
                        found.setdefault(target, f"{target} op= ...")
                    rebound.add(target)  # s2s rebinds it; later writes go to the new array
                else:
                    rebound_now[0] = rebound
                    through_call(stmt)
                    rebound |= set(stmt.targets)
            elif isinstance(stmt, ir.If):
                rebound |= scan(stmt.body, rebound) & scan(stmt.orelse, rebound)
            else:  # loops (may run zero times) and anything else with blocks
                for inner in (getattr(stmt, "cond", None), getattr(stmt, "body", None),
                              getattr(stmt, "orelse", None)):
                    if isinstance(inner, list):
                        scan(inner, rebound)
        return rebound

    scan(body, set())
    return found


@dataclass
class CallSite:
    """A call of a user function as the caller wrote it: which of the caller's variables
    (or arrays viewed through a subscript or attribute of one) each parameter receives."""

    callee: Any
    arguments: dict  # parameter -> (caller's name, through a view?) for arguments that are names
    rebound: frozenset  # names the statement rebinds (or returns) when the call is its whole value
    origin: Origin


def call_site(node: cst.Call, callee: Any, statement: cst.CSTNode | None, origin: Origin) -> CallSite | None:
    positional, keywords, spread = [], {}, None
    for arg in node.args:
        if arg.star == "**":
            continue  # (the caller's own **kwargs, empty: expressions.arguments)
        if arg.star and isinstance(arg.value, (cst.Tuple, cst.List)):
            positional.extend(e.value for e in arg.value.elements)
        elif arg.star:
            if spread is not None or not isinstance(arg.value, cst.Name):
                return None  # refused elsewhere
            spread = arg.value.value
        elif arg.keyword is not None:
            keywords[arg.keyword.value] = arg.value
        else:
            positional.append(arg.value)
    try:
        signature = own_signature(callee)
        bound = (signature.bind_partial if spread else signature.bind)(*positional, **keywords).arguments
    except (TypeError, ValueError):
        return None
    arguments = {}
    if spread is not None:
        # f(*t): the parameters the call leaves to t receive its items, parts of the caller's t
        for param in signature.parameters.values():
            if param.name not in bound and param.kind is not param.VAR_KEYWORD:
                arguments[param.name] = (spread, True)
    for param, value in bound.items():
        view = False
        while isinstance(value, (cst.Subscript, cst.Attribute)):
            value, view = value.value, True
        if isinstance(value, cst.Name):
            arguments[param] = (value.value, view)
    rebound: frozenset = frozenset()
    if isinstance(statement, cst.Assign) and statement.value is node:
        rebound = frozenset(n.value for t in statement.targets for n in _target_names(t.target))
    elif isinstance(statement, cst.Return) and statement.value is node:
        rebound = frozenset(name for name, _ in arguments.values())  # nothing reads them afterwards
    return CallSite(callee, arguments, rebound, origin)


def _target_names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)


def check_call_sites(caller: ir.Function, lowered: dict[int, ir.Function]) -> None:
    """Refuse a call whose callee writes into the array the caller passes and may read again."""
    for site in caller.call_sites:
        callee = lowered.get(id(site.callee))
        if callee is None:
            continue
        for param, how in callee.param_writes.items():
            if param not in site.arguments:
                continue
            name, view = site.arguments[param]
            if not view and name in site.rebound and not _aliases(caller, name):
                continue  # `y = helper(y)`: y names the result; the old array is unreachable
            what = f"{name}[...]" if view else name
            kind, under = ("list", "Python") if how.endswith(".append(...)") else ("array", "NumPy")
            raise S2SError(
                f"{callee.name} writes into its parameter {param} in place ({how}), which changes the "
                f"caller's {kind} {what} under {under}; s2s gives {callee.name} a private copy, so the "
                "change would not reach this function",
                site.origin,
                f"return the new value and assign it (`{name} = {callee.name}({name}, ...)`), or write "
                f"into a copy inside {callee.name} ({param} = {param}.copy() first)"
                + (f"; for a number {param}, write `{param} = {param} op ...`" if "op=" in how else ""))


def _aliases(caller: ir.Function, name: str) -> set:
    """The caller's other variables that may share name's memory: joined by `w = y`, `w = y[i]`
    or `w = y.T` in either direction, through temporaries (conservative: names, not paths)."""
    parent: dict = {}

    def find(a):
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    for stmt in ir.walk(caller.body):
        if isinstance(stmt, ir.Assign) and not stmt.inplace:
            value = stmt.value
            while isinstance(value, (ir.Subscript, ir.Attribute)):
                value = value.value
            if isinstance(value, ir.Name):
                for target in stmt.targets:
                    parent[find(target)] = find(value.id)
    root = find(name)
    return {v for v in set(parent) | set(parent.values())
            if v != name and not v.startswith("_t") and find(v) == root}
