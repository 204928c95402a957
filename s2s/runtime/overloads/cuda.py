"""numba-cuda implementations of the helpers that per-example kernel code calls.

A kernel cannot allocate, so only what a number (or a tuple of numbers) needs is here: the
adjoint helpers of scalar reverse mode. Given an array where it would have to allocate, an
overload raises a TypingError starting with "s2s:", which backends/failures.py reports at
the user's statement. The simulator runs the plain helpers of s2s/runtime instead.
Importing this module registers them (runtime.register_cuda_overloads).
"""

from __future__ import annotations

import math

from numba import cuda, types
from numba.core.errors import TypingError
from numba.cuda.extending import overload, register_jitable

from ... import random as R
from ... import runtime as rt
from ...runtime import kernels
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
    if _scalar(g) and (_scalar(x) or isinstance(x, types.BaseTuple) and len(x) == 0):  # (x: a number's shape)
        return lambda g, x: g
    _refuse("runtime.unbroadcast", g, x)


# Shape tapes (the reverse sweep's record of the shapes of values it cannot type in advance): in
# a kernel these values are numbers, whose shape is () and costs nothing to keep.
@overload(rt.shape_tape)
def _shape_tape():
    return lambda: 0


@overload(rt.push_shape)
def _push_shape(tape, x):
    if _scalar(x):
        return lambda tape, x: ()
    _refuse("runtime.push_shape", tape, x)


@overload(rt.pop_shape)
def _pop_shape(tape, like):
    return lambda tape, like: ()


@overload(rt.range_len)
def _range_len(start, stop, step):
    def impl(start, stop, step):
        if step > 0:
            return max(0, (stop - start + step - 1) // step)
        return max(0, (start - stop - step - 1) // -step)
    return impl


# ---- runtime.kernels: local arrays and scalar draws (codegen/cuda.py writes the calls) ----

def _loops(ndim: int, body: str) -> str:
    """Nested loops over the indices of an ndim array a, around body (which reads `index`)."""
    lines, indent = [], "    "
    for d in range(ndim):
        lines.append(f"{indent}for i{d} in range(a.shape[{d}]):")
        indent += "    "
    index = ", ".join(f"i{d}" for d in range(ndim)) or "()"
    lines.append(indent + body.replace("index", index))
    return "\n".join(lines)


@overload(kernels.fill)
def _fill(a, value):
    if not isinstance(a, types.Array):
        _refuse("runtime.kernels.fill", a, value)
    return _compile(f"def impl(a, value):\n{_loops(a.ndim, 'a[index] = value')}\n", "impl")


@overload(kernels.copy_into)
def _copy_into(destination, source):
    if not isinstance(destination, types.Array):
        _refuse("runtime.kernels.copy_into", destination, source)
    if _scalar(source):
        body = _loops(destination.ndim, "a[index] = source")
    else:
        body = _loops(destination.ndim, "a[index] = source[index]")
    return _compile(f"def impl(destination, source):\n    a = destination\n{body}\n", "impl")


@overload(kernels.shape_of)
def _shape_of(shape):
    if isinstance(shape, types.Integer):
        return lambda shape: (shape,)
    return lambda shape: shape


@overload(kernels.fma)
def _fma(a, b, c):
    # a * b + c rounded once: what XLA's fused multiply-add gives, and s2s.random emulates on the CPU
    return lambda a, b, c: cuda.fma(a, b, c)


@overload(kernels.log)
def _log(x):
    return lambda x: math.log(x)


# Plain code on numbers (the threefry hash, the draws): numba-cuda compiles them as they are.
for _function in (R.threefry2x32, R._rotl, R._mix, R._four_rounds, kernels._words, kernels._unit32, kernels._unit64,
                  kernels._uniform32, kernels._uniform64, kernels.uniform32, kernels.uniform64, kernels._horner,
                  kernels._log1p, kernels._normal32, kernels._normal64, kernels.normal32, kernels.normal64,
                  kernels.fold_in_into, kernels.split_into):
    register_jitable(_function)


def _draws_into(element: str, extra: str):
    """A draw of a shape into a local array (loops over its indices in C order: counter i)."""
    def typer(out, key, *rest):
        if not isinstance(out, types.Array):
            _refuse(f"runtime.kernels.{element}_into", out, key)
        params = "out, key" + extra
        body = _loops(out.ndim, f"a[index] = kernels.{element}(key, i{extra})\n" + "    " * (out.ndim + 1) + "i += 1")
        return _compile(f"def impl({params}):\n    a = out\n    i = 0\n{body}\n", "impl", kernels=kernels)
    return typer


for _name, _extra in (("_normal32", ""), ("_normal64", ""), ("_uniform32", ", minval, maxval"),
                      ("_uniform64", ", minval, maxval")):
    _typer = _draws_into(_name, _extra)
    _source = f"def typer(out, key{_extra}):\n    return draw(out, key{_extra})\n"
    overload(getattr(kernels, _name[1:] + "_into"))(_compile(_source, "typer", draw=_typer))
