"""numba-cuda implementations of the helpers that per-example kernel code calls.

A kernel cannot allocate, so only what a number (or a tuple of numbers) needs is here: the
adjoint helpers of scalar reverse mode. Given an array where it would have to allocate, an
overload raises a TypingError starting with "s2s:", which backends/failures.py reports at
the user's statement. The simulator runs the plain helpers of s2s/runtime instead.
Importing this module registers them (runtime.register_cuda_overloads).
"""

from __future__ import annotations

from numba import types
from numba.core.errors import TypingError
from numba.cuda.extending import overload

from ... import runtime as rt
from .common import _compile, _scalar


def _refuse(helper: str, *args) -> None:
    kinds = ", ".join(str(a) for a in args)
    raise TypingError(f"s2s: {helper} of ({kinds}) has no kernel form: in a kernel, adjoints are numbers "
                      "(an array adjoint would be allocated)")


def _tuple_impl(helper: str, arity: int, size: int):
    args = ", ".join("ab"[:arity])
    items = "".join(f"rt.{helper}({', '.join(f'{a}[{k}]' for a in 'ab'[:arity])}), " for k in range(size))
    return _compile(f"def impl({args}):\n    return ({items})\n", "impl")


@overload(rt.zeros_like)
def _zeros_like(x):
    if isinstance(x, types.Float):
        return lambda x: x * 0.0  # as the cpu backend: the adjoint takes x's float type
    if _scalar(x):
        return lambda x: 0.0
    if isinstance(x, types.BaseTuple) and not isinstance(x, types.BaseNamedTuple):
        return _tuple_impl("zeros_like", 1, len(x))
    _refuse("runtime.zeros_like", x)


@overload(rt.ones_like)
def _ones_like(x):
    if isinstance(x, types.Float):
        return lambda x: x * 0.0 + 1.0
    if _scalar(x):
        return lambda x: 1.0
    _refuse("runtime.ones_like", x)


@overload(rt.copy)
def _copy(x):
    if _scalar(x):
        return lambda x: x
    if isinstance(x, types.BaseTuple) and not isinstance(x, types.BaseNamedTuple):
        return _tuple_impl("copy", 1, len(x))
    _refuse("runtime.copy", x)


@overload(rt.tree_add)
def _tree_add(a, b):
    if _scalar(a) and _scalar(b):
        return lambda a, b: a + b
    if isinstance(a, types.BaseTuple) and isinstance(b, types.BaseTuple) and len(a) == len(b) and not isinstance(
            a, types.BaseNamedTuple):
        return _tuple_impl("tree_add", 2, len(a))
    _refuse("runtime.tree_add", a, b)


@overload(rt.unbroadcast)
def _unbroadcast(g, x):
    # The adjoint g of a number x is a number: broadcasting (which sums g to x's shape) needs
    # an array result, which kernel code could not have made.
    if _scalar(g) and _scalar(x):
        return lambda g, x: g
    _refuse("runtime.unbroadcast", g, x)


@overload(rt.range_len)
def _range_len(start, stop, step):
    def impl(start, stop, step):
        if step > 0:
            return max(0, (stop - start + step - 1) // step)
        return max(0, (start - stop - step - 1) // -step)
    return impl
