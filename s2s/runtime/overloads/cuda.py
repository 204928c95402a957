"""numba-cuda implementations of the helpers that per-example kernel code calls.

A kernel cannot allocate, so only what a number (or a tuple of numbers) needs is here: the
adjoint helpers of scalar reverse mode. Given an array where it would have to allocate, an
overload raises a TypingError starting with "s2s:", which backends/failures.py reports at
the user's statement. The simulator runs the plain helpers of s2s/runtime instead.
Importing this module registers them (overloads.register_cuda).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, types
from numba.core.errors import TypingError
from numba.cuda.extending import overload, register_jitable

from ... import random as R
from ... import runtime as rt
from ...runtime import kernels
from .common import _casts, _compile, _dot_zero, _is_none, _nd, _scalar, _weighted_numbers


def _refuse(helper: str, *args, why: str = "in a kernel, adjoints are numbers (an array adjoint would be "
                                            "allocated)") -> None:
    kinds = ", ".join(str(a) for a in args)
    raise TypingError(f"s2s: {helper} of ({kinds}) has no kernel form: {why}")


def _tuple_impl(helper: str, arity: int, size: int):
    args = ", ".join("ab"[:arity])
    items = "".join(f"rt.{helper}({', '.join(f'{a}[{k}]' for a in 'ab'[:arity])}), " for k in range(size))
    return _compile(f"def impl({args}):\n    return ({items})\n", "impl")


@overload(rt.kernel_number)
def _kernel_number(out, value):
    # Numba types every example alike: the check is on the types, at compile time.
    if not _casts(value, out.dtype, "same_kind"):
        raise TypingError("s2s: " + rt.KERNEL_NUMBER.format(value=value, out=out.dtype))
    return lambda out, value: value


@overload(rt.number_if_0d)
def _number_if_0d(x):
    if _scalar(x):
        return lambda x: x
    _refuse("runtime.number_if_0d", x)


@overload(rt.zeros_like)
def _zeros_like(x):
    if isinstance(x, types.Float):  # as the cpu backend: the adjoint takes x's float type
        zero = np.float32(0.0) if x.bitwidth == 32 else np.float64(0.0)
        return lambda x: zero
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


@overload(rt.derivative_like)
def _derivative_like(d, x):
    # A kernel's arrays have their specialised shapes: the ranks are checked when it compiles.
    if _is_none(d):  # (bwd's None: a zero cotangent)
        return lambda d, x: rt.zeros_like(x)
    if _nd(d) != _nd(x):
        raise TypingError(rt.DERIVATIVE_SHAPE)
    return lambda d, x: d


@overload(rt.copy)
def _copy(x):
    if _scalar(x):
        return lambda x: x
    if isinstance(x, types.BaseTuple) and not isinstance(x, types.BaseNamedTuple):
        return _tuple_impl("copy", 1, len(x))
    _refuse("runtime.copy", x)


@overload(rt.broadcast_like)
def _broadcast_like(t, c):
    # Forward mode's tangent of a sum with an operand of zero tangent: on numbers no zero can
    # broadcast, and t + zeros_like(c) keeps the cpu backend's dtype (float32 t, float64 c).
    if _scalar(t) and _scalar(c):
        return lambda t, c: t + rt.zeros_like(c)
    _refuse("runtime.broadcast_like", t, c)


def _integer_index(index) -> bool:
    return isinstance(index, types.Integer) or isinstance(index, types.BaseTuple) and all(
        isinstance(i, types.Integer) for i in index.types)


@overload(rt.add_at)
def _add_at(c, key, value):
    # The adjoint of a read p[0] of an array the thread holds (an argument's row, a local
    # array): one element, added in place, as the cpu backend does
    if isinstance(c, types.Array) and _integer_index(key) and _scalar(value):
        def impl(c, key, value):
            c[key] += value
            return c
        return impl
    if isinstance(c, types.BaseTuple) and not isinstance(c, types.BaseNamedTuple) \
            and isinstance(key, types.IntegerLiteral):
        k = key.literal_value % len(c)
        items = "".join((f"rt.tree_add(c[{j}], value), " if j == k else f"c[{j}], ") for j in range(len(c)))
        return _compile(f"def impl(c, key, value):\n    return ({items})\n", "impl")
    _refuse("runtime.add_at", c, key, value, why="in a kernel, an adjoint is added into one element of an array")


@overload(rt.index_add)
def _index_add(a, index, value):
    if isinstance(a, types.Array) and _integer_index(index) and _scalar(value):  # p[k] with an int k
        def impl(a, index, value):
            a[index] += value
        return impl
    _refuse("runtime.index_add", a, index, value, why="in a kernel, an adjoint is added into one element of an "
                                                     "array at an integer index")


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


@overload(rt.weighted)
def _weighted(t, w):
    if _scalar(t) and _scalar(w):
        return _weighted_numbers
    _refuse("runtime.weighted", t, w)


@overload(rt.astype)
def _astype(x, dtype):  # np.float64(k), x.astype(np.float32) of a number: the number converted
    if _scalar(x):
        return lambda x, dtype: dtype(x)
    _refuse("runtime.astype", x)


@overload(rt.astype_integer)
def _astype_integer(x, dtype):
    if _scalar(x):
        return lambda x, dtype: dtype(x)
    _refuse("runtime.astype_integer", x)


@overload(rt.astype_bar)
def _astype_bar(g, x):  # the adjoint of a converted number, in the number's type
    if _scalar(g) and isinstance(x, (types.Float, types.Integer)):
        kind = np.float32 if isinstance(x, types.Float) and x.bitwidth == 32 else np.float64
        return lambda g, x: kind(g)
    _refuse("runtime.astype_bar", g, x)


@overload(rt.dot_zero)
def _dot_zero_overload(x, y):  # (the start of np.dot of rows as a loop: optimize/loops.py)
    return _dot_zero(x, y)


# Shape tapes (the reverse sweep's record of the shapes of values it cannot type in advance): in
# a kernel these values are numbers, whose shape is () and costs nothing to keep.
@overload(rt.shape_tape)
def _shape_tape():
    return lambda: 0


@overload(rt.push_shape)
def _push_shape(tape, x):
    if _scalar(x):
        return lambda tape, x: ()
    if isinstance(x, types.Array):
        # A kernel's arrays (local arrays, rows of the arguments) keep the shape they were
        # specialised with: nothing to keep, and the shape popped is the one pushed. (What
        # would use an array's shape, zeros_shaped or unbroadcast to it, has no kernel form.)
        return lambda tape, x: x.shape
    _refuse("runtime.push_shape", tape, x)


@overload(rt.pop_shape)
def _pop_shape(tape, like):
    return lambda tape, like: like


@overload(rt.top_shape)
def _top_shape(tape, like):
    return lambda tape, like: like


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
                  kernels._log1p, kernels._erfinv32, kernels._erfinv64, kernels._normal32, kernels._normal64,
                  kernels.normal32, kernels.normal64, kernels.fold_in_into, kernels.split_into, kernels._hash,
                  kernels._exponential32, kernels._exponential64, kernels.exponential32, kernels.exponential64,
                  kernels._add64, kernels._mul64, kernels._unsigned, kernels._signed, kernels._randint_setup,
                  kernels._randint, kernels._split2, kernels.randint32, kernels.randint64, kernels._truncate,
                  kernels._truncated_normal32, kernels._truncated_normal64, kernels._erf_bounds32,
                  kernels._erf_bounds64, kernels.truncated_normal32, kernels.truncated_normal64,
                  kernels._categorical32, kernels._categorical64, kernels._shuffle):
    register_jitable(_function)


@overload(kernels.erf)
def _erf(x):
    return lambda x: math.erf(x)


@overload(kernels.nextafter)
def _nextafter(x, y):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x, y: math.nextafter(x, np.float32(y))
    return lambda x, y: math.nextafter(x, np.float64(y))


def _into(name: str, params: str, element: str, setup: str = ""):
    """The overload of kernels.<name>: a draw of a shape into a local array out, element i (in C
    order: counter i) given by element (which may read `index`, the element's indices)."""
    def typer(out, *rest):
        if not isinstance(out, types.Array):
            _refuse(f"runtime.kernels.{name}", out, *rest, why="a draw of a shape fills a local array")
        if not all(_scalar(r) for r in rest[1:]):
            _refuse(f"runtime.kernels.{name}", out, *rest, why="in a kernel, a draw's parameters are numbers")
        body = _loops(out.ndim, f"a[index] = {element}\n" + "    " * (out.ndim + 1) + "i += 1")
        lines = f"def impl({params}):\n    a = out\n    i = 0\n" + "".join(f"    {x}\n" for x in setup.splitlines())
        return _compile(lines + body + "\n", "impl", kernels=kernels)
    source = f"def typer({params}):\n    return draw({params})\n"
    overload(getattr(kernels, name))(_compile(source, "typer", draw=typer))


for _bits in ("32", "64"):
    _into(f"normal{_bits}_into", "out, key", f"kernels._normal{_bits}(key, i)")
    _into(f"uniform{_bits}_into", "out, key, minval, maxval", f"kernels._uniform{_bits}(key, i, minval, maxval)")
    _into(f"exponential{_bits}_into", "out, key", f"kernels._exponential{_bits}(key, i)")
    _into(f"truncated_normal{_bits}_into", "out, key, lower, upper",
          f"kernels._truncated_normal{_bits}(key, i, erf_lower, erf_upper, lower, upper)",
          f"erf_lower, erf_upper = kernels._erf_bounds{_bits}(lower, upper)")
    _wide = _bits == "64"
    _into(f"randint{_bits}_into", "out, key, minval, maxval",
          f"{'' if _wide else 'np.int32'}(kernels._randint(k1, k2, i, lo, span, multiplier, {_wide}))",
          f"k1, k2 = kernels._split2(key)\nlo, span, multiplier = kernels._randint_setup(minval, maxval, {_wide})")


def _unit_below(p, i: str, index: str = "") -> str:
    """The comparison of bernoulli: uniform in p's float type (float64 unless float32) < p."""
    bits = "32" if getattr(p, "dtype", p) == types.float32 else "64"
    return f"kernels._uniform{bits}(key, {i}, np.float{bits}(0.0), np.float{bits}(1.0)) < p{index}"


@overload(kernels.bernoulli)
def _bernoulli(key, p):
    if not isinstance(p, types.Float):
        _refuse("random.bernoulli", key, p, why="p is a float number in a kernel")
    return _compile(f"def impl(key, p):\n    return {_unit_below(p, '0')}\n", "impl", kernels=kernels)


@overload(kernels.bernoulli_into)
def _bernoulli_into(out, key, p):
    array = isinstance(p, types.Array) and isinstance(out, types.Array) and p.ndim == out.ndim
    if not (isinstance(p, types.Float) or array and isinstance(p.dtype, types.Float)) or not isinstance(
            out, types.Array):
        _refuse("random.bernoulli", out, key, p, why="p is a float, or an array of floats of the draw's shape")
    body = _loops(out.ndim, f"a[index] = {_unit_below(p, 'i', '[index]' if array else '')}\n"
                  + "    " * (out.ndim + 1) + "i += 1")
    return _compile(f"def impl(out, key, p):\n    a = out\n    i = 0\n{body}\n", "impl", kernels=kernels)


@overload(kernels.categorical)
def _categorical(key, logits):
    if not (isinstance(logits, types.Array) and logits.ndim == 1):
        _refuse("random.categorical", key, logits, why="in a kernel its logits are a 1-d row")
    if logits.dtype == types.float32:
        return lambda key, logits: np.int64(kernels._categorical32(key, logits))
    return lambda key, logits: np.int64(kernels._categorical64(key, logits))


@overload(kernels.permutation_shape)
def _permutation_shape(x):
    if isinstance(x, types.Integer):
        return lambda x: (x,)
    return lambda x: x.shape


@overload(kernels.permutation_into)
def _permutation_into(out, order, key, x):
    if isinstance(x, types.Integer):
        def impl(out, order, key, x):
            kernels._shuffle(order, key)
            for p in range(order.shape[0]):
                out[p] = order[p]
        return impl
    if isinstance(x, types.Array) and x.ndim == 1:
        def impl(out, order, key, x):
            kernels._shuffle(order, key)
            for p in range(order.shape[0]):
                out[p] = x[order[p]]
        return impl
    _refuse("random.permutation", key, x, why="in a kernel it permutes range(n) or a 1-d array")
