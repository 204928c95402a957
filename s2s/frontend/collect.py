"""The functions one transform covers: the user's function and every user function it calls."""

from __future__ import annotations

from typing import Any

from ..errors import Origin, S2SError
from ..ir import nodes as ir
from ..rules.custom import CustomRule
from .argument_writes import check_call_sites, parameter_writes
from .lower import normalize
from .result_views import result_views


def collect(fn: Any) -> list[ir.Function]:
    """The function and every user function it calls, lowered, callees first, each once."""
    order: list[ir.Function] = []
    seen: dict[int, ir.Function] = {}
    stack: list[Any] = []
    callers: list[ir.Function] = []

    def visit(f):
        if id(f) in seen:
            return
        if f in stack:
            chain = " -> ".join(g.__name__ for g in stack + [f])
            raise S2SError(f"recursive calls are not supported ({chain})", _call_site(callers[-1], f),
                           hint="rewrite the recursion as a loop")
        stack.append(f)
        # An s2s.custom_vjp or custom_jvp: its body gives the value; the transforms call its rule
        # (transforms/custom_rules.py), whose functions are collected after it, as they may call it.
        lowered = normalize(f.fun if isinstance(f, CustomRule) else f)
        callers.append(lowered)
        for callee in sorted(lowered.callees.values(), key=lambda c: c.__name__):
            visit(callee)
        check_call_sites(lowered, seen)
        # A parameter passed on to a callee that writes into it is written by this function too.
        lowered.param_writes = {**parameter_writes(lowered.params, lowered.body, seen), **lowered.param_writes}
        lowered.callee_results = {k: seen[k].result_views for k in lowered.callees if k in seen}
        lowered.result_views = result_views(lowered)
        callers.pop()
        stack.pop()
        seen[id(f)] = lowered
        lowered.python = f
        if isinstance(f, CustomRule):
            for rule_function in f.rule_functions():  # (before f in order: the entry stays last)
                if rule_function in stack:  # the rule calls f, and the transform is of the rule
                    raise S2SError(f"{rule_function.__name__} is the rule of the s2s.{f.kind} {f.__name__}, "
                                   "which it calls: transforming the rule itself is not supported",
                                   _call_site(callers[-1], f) if callers else lowered.origin,
                                   f"transform {f.__name__}, or the functions that call it")
                visit(rule_function)
        order.append(lowered)

    visit(fn)
    return order


def _call_site(caller: ir.Function, callee: Any) -> Origin:
    """Where caller calls callee (the first such statement), else where caller is defined."""

    def search(block: list) -> Origin | None:
        for stmt in block:
            value = getattr(stmt, "value", None)
            if isinstance(value, ir.Call) and value.fn is callee:
                return stmt.origin
            for inner in (getattr(stmt, "cond", None), getattr(stmt, "body", None), getattr(stmt, "orelse", None)):
                found = search(inner) if isinstance(inner, list) else None
                if found is not None:
                    return found
        return None

    return search(caller.body) or caller.origin
