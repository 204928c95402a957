"""The functions one transform covers: the user's function and every user function it calls."""

from __future__ import annotations

from typing import Any

from ..errors import S2SError
from ..ir import nodes as ir
from .lower import normalize


def collect(fn: Any) -> list[ir.Function]:
    """The function and every user function it calls, lowered, callees first, each once."""
    order: list[ir.Function] = []
    seen: dict[int, ir.Function] = {}
    stack: list[Any] = []

    def visit(f):
        if id(f) in seen:
            return
        if f in stack:
            chain = " -> ".join(g.__name__ for g in stack + [f])
            raise S2SError(f"recursive calls are not supported ({chain})",
                           hint="rewrite the recursion as a loop")
        stack.append(f)
        lowered = normalize(f)
        for callee in sorted(lowered.callees.values(), key=lambda c: c.__name__):
            visit(callee)
        stack.pop()
        seen[id(f)] = lowered
        lowered.python = f
        order.append(lowered)

    visit(fn)
    return order
