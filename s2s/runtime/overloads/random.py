"""Overloads of s2s.random, so that generated code (and any numba.njit function) calls it.

Each overload reads the static arguments' Numba types (the shape: an int or a tuple; the dtype:
a NumPy type or the default) and calls the same kernels the NumPy path calls, compiled: the
keys, bits and uniform numbers are equal bit for bit; normal and exponential numbers may
differ from the NumPy path by an ulp, where Numba's log (libm's) is not NumPy's.
randint is compiled for number bounds and int32/int64, categorical for 1-d logits, bernoulli for
a number p, truncated_normal for number bounds (a number without a shape); other arguments are a Numba
typing error, which s2s.jit reports as an S2SError at the user's line.
"""

from __future__ import annotations

import math

import numpy as np
from numba import typeof, types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import random as R

for _kernel in (R.threefry2x32, R._rotl, R._mix, R._four_rounds, R._bits32, R._bits64, R._f32_of_bits, R._f64_of_bits,
                R._unit_f32, R._unit_f64, R._split_kernel, R._fold_in_kernel, R._fma32, R._fma64, R._horner32,
                R._horner64, R._log1p_f32, R._log1p_f64, R._erfinv_f32, R._erfinv_f64, R._normal_f32,
                R._normal_of_unit_f32, R._normal_of_unit_f64, R._normal_f64, R._permutation_kernel):
    register_jitable(_kernel)


@overload(R._hash_counters)
def _hash_counters(key, n):
    """Compiled, the hash runs element by element (as a kernel's threads would): the NumPy
    path's whole-array operations would each allocate a temporary under Numba too."""
    def impl(key, n):
        y0, y1 = np.empty(n, np.uint64), np.empty(n, np.uint64)
        k0, k1 = np.uint64(key[0]), np.uint64(key[1])
        for i in range(n):
            c = np.uint64(i)
            y0[i], y1[i] = R.threefry2x32(k0, k1, c >> np.uint64(32), c & np.uint64(0xFFFFFFFF))
        return y0, y1
    return impl


# The float draws' arithmetic (normal's erfinv, exponential's log1p, uniform's scaling, and the
# emulated fused multiply-adds in them) is array code: over all n draws at once each of its steps
# would make a temporary of n numbers, so a million draws ran at the speed of memory (normal ~4x,
# exponential ~2x slower than the NumPy path). A block of draws at a time keeps the temporaries
# in the processor's cache; the operations, and so the numbers, are the same.
_DRAWS_PER_BLOCK = 4096


@register_jitable
def _hashed_counters(k0, k1, start, stop):
    """Both words of the hash of the counters start .. stop-1 under the key (k0, k1)."""
    y0, y1 = np.empty(stop - start, np.uint64), np.empty(stop - start, np.uint64)
    for i in range(start, stop):
        c = np.uint64(i)
        y0[i - start], y1[i - start] = R.threefry2x32(k0, k1, c >> np.uint64(32), c & np.uint64(0xFFFFFFFF))
    return y0, y1


@register_jitable
def _unit_f64_of_words(y0, y1):
    return R._f64_of_bits((y0 << np.uint64(32)) | y1)  # R._unit_f64: R._bits64 of the words


@register_jitable
def _unit_f32_of_words(y0, y1):
    return R._f32_of_bits(y0 ^ y1)  # R._unit_f32: R._bits32 of the words


def _in_blocks(of_unit, dtype):
    """draw(key, n, a, b): of_unit(u, a, b) of n uniform numbers u in [0, 1) of dtype (as
    R._unit_f32 / R._unit_f64 draw them), a block at a time; of_unit is elementwise array code."""
    unit = _unit_f32_of_words if dtype == np.float32 else _unit_f64_of_words

    @register_jitable
    def draw(key, n, a, b):
        out = np.empty(n, dtype)
        k0, k1 = np.uint64(key[0]), np.uint64(key[1])
        for start in range(0, n, _DRAWS_PER_BLOCK):
            stop = min(n, start + _DRAWS_PER_BLOCK)
            y0, y1 = _hashed_counters(k0, k1, start, stop)
            out[start:stop] = of_unit(unit(y0, y1), a, b)
        return out
    return draw


def _scaled_f64(u, lo, hi):  # the NumPy path's uniform: max(lo, u * (hi - lo) + lo), fused
    return np.maximum(lo, R._fma64(u, hi - lo + u * 0, lo + u * 0))


def _scaled_f32(u, lo, hi):
    return np.maximum(lo, R._fma32(u, hi - lo + u * 0, lo + u * 0))


_DRAWS = {  # (distribution, dtype): draw(key, n, a, b)
    ("uniform", np.dtype(np.float64)): _in_blocks(register_jitable(_scaled_f64), np.float64),
    ("uniform", np.dtype(np.float32)): _in_blocks(register_jitable(_scaled_f32), np.float32),
    ("normal", np.dtype(np.float64)): _in_blocks(register_jitable(lambda u, a, b: R._normal_of_unit_f64(u)), np.float64),
    ("normal", np.dtype(np.float32)): _in_blocks(register_jitable(lambda u, a, b: R._normal_of_unit_f32(u)), np.float32),
    ("exponential", np.dtype(np.float64)): _in_blocks(register_jitable(lambda u, a, b: -R._log1p_f64(-u)), np.float64),
    ("exponential", np.dtype(np.float32)): _in_blocks(register_jitable(lambda u, a, b: -R._log1p_f32(-u)), np.float32),
}


def _dtype(t, default) -> np.dtype:
    """The NumPy dtype a dtype argument's Numba type stands for."""
    if not isinstance(t, types.Type):  # an omitted argument: Numba passes its default itself
        return np.dtype(default if t is None else t)
    if isinstance(t, types.Omitted):
        return np.dtype(t.value)
    if isinstance(t, types.NumberClass):
        return np.dtype(str(t.dtype))
    if isinstance(t, types.DType):
        return np.dtype(str(t.dtype))
    raise TypingError(f"s2s.random: pass the dtype as np.float32, np.float64 (...), not {t}")


def _shape_of(t):
    """A jitted function of the shape argument that gives it as a tuple (int n: (n,))."""
    if not isinstance(t, types.Type) or isinstance(t, types.Omitted):
        t = typeof(t if not isinstance(t, types.Omitted) else t.value)  # the default's type
    if isinstance(t, types.NoneType) or isinstance(t, types.BaseTuple) and len(t) == 0:
        return None  # the shape (): one number, as a 0-d array
    if isinstance(t, types.Integer):
        return register_jitable(lambda shape: (shape,))
    if isinstance(t, types.BaseTuple) and all(isinstance(d, types.Integer) for d in t):
        return register_jitable(lambda shape: shape)
    raise TypingError(f"s2s.random: a shape is an int or a tuple of ints, not {t}")


def _size(shape):
    """The number of elements of a shape (a tuple of ints)."""


@overload(_size)
def _size_of(shape):
    if len(shape) == 0:  # Numba cannot iterate over an empty tuple
        return lambda shape: 1

    def impl(shape):
        n = 1
        for d in shape:
            n *= d
        return n
    return impl


def _shaped(kernel, shape_type):
    """impl(key, shape, *rest): kernel(key, size) in the shape."""
    of = _shape_of(shape_type)
    if of is None:
        return register_jitable(lambda key, shape: kernel(key, 1).reshape(()))
    return register_jitable(lambda key, shape: kernel(key, _size(of(shape))).reshape(of(shape)))


@overload(R.PRNGKey)
def _prng_key(seed):
    if isinstance(seed, types.Integer):
        def impl(seed):
            s = np.uint64(seed)  # a negative seed wraps to its 64-bit two's complement, as JAX x64
            out = np.empty(2, np.uint32)
            out[0] = np.uint32(s >> np.uint64(32))
            out[1] = np.uint32(s & np.uint64(0xFFFFFFFF))
            return out
        return impl


overload(R.key)(_prng_key)


@overload(R.split)
def _split(key, num=2):
    if not isinstance(num, types.Type) or isinstance(num, (types.Omitted, types.Integer)):
        return lambda key, num=2: R._split_kernel(key, num)
    of = _shape_of(num)
    if of is not None:
        return lambda key, num=2: R._split_kernel(key, _size(of(num))).reshape(of(num) + (2,))


@overload(R.fold_in)
def _fold_in(key, data):
    return lambda key, data: R._fold_in_kernel(key, data)


@overload(R.bits)
def _bits(key, shape=(), dtype=np.uint32):
    d = _dtype(dtype, np.uint32)
    draw = _shaped(R._bits64 if d == np.uint64 else R._bits32, shape)
    if d not in (np.uint8, np.uint16, np.uint32, np.uint64):
        raise TypingError(f"s2s.random.bits draws unsigned integers, not {d}")
    return lambda key, shape=(), dtype=np.uint32: draw(key, shape).astype(d)


def _float(dtype, name):
    d = _dtype(dtype, float)
    if d not in (np.float32, np.float64):
        raise TypingError(f"s2s.random.{name} draws float32 or float64, not {d}")
    return d


def _flat(kernel, shape_type):
    """impl(key, shape): kernel(key, size), 1-d. The float draws compute on the flat draws and
    shape the result last: of the shape (), Numba makes a 0-d array's arithmetic a number,
    which the emulated fused multiply-adds (array code) do not take."""
    of = _shape_of(shape_type)
    if of is None:
        return register_jitable(lambda key, shape: kernel(key, 1))
    return register_jitable(lambda key, shape: kernel(key, _size(of(shape))))


def _finish(shape_type, number: bool):
    """impl(out, shape): the flat out in the shape; of the shape (), a number where the NumPy
    path returns one (number=True: its last operation is a ufunc of 0-d arrays), else 0-d."""
    of = _shape_of(shape_type)
    if of is None:
        return register_jitable(lambda out, shape: out[0]) if number else \
            register_jitable(lambda out, shape: out.reshape(()))
    return register_jitable(lambda out, shape: out.reshape(of(shape)))


def _drawn(distribution, dtype, shape_type):
    """impl(key, shape, a, b): the draws of the distribution, flat (see _flat)."""
    draw = _DRAWS[distribution, _float(dtype, distribution)]
    of = _shape_of(shape_type)
    if of is None:
        return register_jitable(lambda key, shape, a, b: draw(key, 1, a, b))
    return register_jitable(lambda key, shape, a, b: draw(key, _size(of(shape)), a, b))


@overload(R.uniform)
def _uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    draw = _drawn("uniform", dtype, shape)
    cast = np.float32 if _float(dtype, "uniform") == np.float32 else np.float64
    finish = _finish(shape, number=True)

    def impl(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
        return finish(draw(key, shape, cast(minval), cast(maxval)), shape)
    return impl


@overload(R.normal)
def _normal(key, shape=(), dtype=float):
    draw = _drawn("normal", dtype, shape)
    finish = _finish(shape, number=False)
    return lambda key, shape=(), dtype=float: finish(draw(key, shape, 0.0, 0.0), shape)


@overload(R.exponential)
def _exponential(key, shape=(), dtype=float):
    draw = _drawn("exponential", dtype, shape)
    finish = _finish(shape, number=True)
    return lambda key, shape=(), dtype=float: finish(draw(key, shape, 0.0, 0.0), shape)


@overload(R.bernoulli)
def _bernoulli(key, p=0.5, shape=None):
    if not isinstance(p, types.Type) or isinstance(p, types.Omitted):
        p_type = types.float64
    elif isinstance(p, types.Float):
        p_type = p
    else:
        raise TypingError("s2s.random.bernoulli under numba: p is a float number")
    unit = _flat(R._unit_f32 if p_type == types.float32 else R._unit_f64, shape)
    finish = _finish(shape, number=True)
    return lambda key, p=0.5, shape=None: finish(unit(key, shape) < p, shape)


@overload(R.truncated_normal)
def _truncated_normal(key, lower, upper, shape=None, dtype=float):
    d = _float(dtype, "truncated_normal")
    unshaped = shape is None or isinstance(shape, (types.Omitted, types.NoneType)) or not isinstance(shape, types.Type)
    if unshaped and not (isinstance(lower, types.Number) and isinstance(upper, types.Number)):
        # (NumPy's path broadcasts array bounds to the draw's shape; here the shape is given)
        raise TypingError("s2s.random.truncated_normal under numba: pass the shape, or number bounds")
    if d == np.float32:
        unit, fma, erfinv, cast = _flat(R._unit_f32, shape), R._fma32, R._erfinv_f32, np.float32
    else:
        unit, fma, erfinv, cast = _flat(R._unit_f64, shape), R._fma64, R._erfinv_f64, np.float64
    finish = _finish(shape, number=True)
    root2 = d.type(np.sqrt(2.0))

    def impl(key, lower, upper, shape=None, dtype=float):
        lo, hi = cast(lower), cast(upper)
        # erf in float64, then rounded, as the NumPy path (Numba's math.erf of a float32 is erff)
        a, b = cast(math.erf(np.float64(lo / root2))), cast(math.erf(np.float64(hi / root2)))
        u = unit(key, shape)
        u = np.maximum(a, fma(u, b - a + u * 0, a + u * 0))
        out = root2 * erfinv(u)
        return finish(np.minimum(np.maximum(out, np.nextafter(lo, cast(np.inf))), np.nextafter(hi, cast(-np.inf))),
                      shape)
    return impl


@overload(R.permutation)
def _permutation(key, x):
    if isinstance(x, types.Integer):
        return lambda key, x: R._permutation_kernel(key, x)
    if isinstance(x, types.Array):
        return lambda key, x: x[R._permutation_kernel(key, x.shape[0])]


@overload(R.randint)
def _randint(key, shape, minval, maxval, dtype=int):
    """Of number bounds and an int32 or int64 dtype: JAX's reduction of two draws modulo the
    span, in unsigned arithmetic of the dtype's width (wrapping: masked in uint64)."""
    d = _dtype(dtype, int)
    if d not in (np.int32, np.int64) or not all(isinstance(t, types.Integer) for t in (minval, maxval)):
        raise TypingError("s2s.random.randint under numba: int bounds and an int32 or int64 dtype")
    of = _shape_of(shape)
    if of is None:
        of = register_jitable(lambda shape: ())
    width = d.itemsize * 8
    draw = R._bits64 if width == 64 else R._bits32
    mask = np.uint64(2**width - 1)
    half = np.uint64(2 ** (width // 2))
    low, high = int(np.iinfo(d).min), int(np.iinfo(d).max)
    cast = d.type

    def impl(key, shape, minval, maxval, dtype=int):
        s = of(shape)
        n = _size(s)
        keys = R._split_kernel(key, 2)
        higher, lower = draw(keys[0], n), draw(keys[1], n)
        lo, hi = min(max(minval, low), high), min(max(maxval, low), high)
        span = np.uint64(1) if hi <= lo else np.uint64(hi - lo) & mask
        if maxval > high and maxval > minval:
            span = (span + np.uint64(1)) & mask
        out = np.empty(n, d)
        for k in range(n):
            if span == 0:  # the whole range of the dtype: x % 2**width is x
                offset = lower[k] & mask
            else:
                multiplier = (half % span) * (half % span) & mask
                multiplier = multiplier % span
                offset = ((((higher[k] & mask) % span) * multiplier & mask) + (lower[k] & mask) % span) & mask
                offset = offset % span
            out[k] = cast(lo + cast(offset))
        return out.reshape(s)
    return impl


@overload(R.categorical)
def _categorical(key, logits, axis=-1, shape=None):
    """Of 1-d logits: the Gumbel-max trick over draws of shape (*shape, categories)."""
    if not (isinstance(logits, types.Array) and logits.ndim == 1 and isinstance(logits.dtype, types.Float)):
        raise TypingError("s2s.random.categorical under numba: 1-d float logits")
    of = _shape_of(shape)
    if of is None:
        of = register_jitable(lambda shape: ())
    if logits.dtype == types.float32:
        unit, fma, tiny = R._unit_f32, R._fma32, np.float32(np.finfo(np.float32).tiny)
    else:
        unit, fma, tiny = R._unit_f64, R._fma64, np.finfo(np.float64).tiny

    def impl(key, logits, axis=-1, shape=None):
        s = of(shape)
        n, k = _size(s), logits.shape[0]
        u = unit(key, n * k)
        u = np.maximum(tiny, fma(u, 1.0 - tiny + u * 0, tiny + u * 0))  # uniform on [tiny, 1)
        g = (-np.log(-np.log(u))).reshape((n, k))
        out = np.empty(n, np.int64)
        for row in range(n):
            out[row] = np.argmax(g[row] + logits)
        return out.reshape(s)
    return impl
