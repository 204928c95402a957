"""Overloads of s2s.random, so that generated code (and any numba.njit function) calls it.

Each overload reads the static arguments' Numba types (the shape: an int or a tuple; the dtype:
a NumPy type or the default) and calls compiled kernels that do the NumPy path's operations:
the keys and bits are its kernels; the float draws are runtime/kernels.py's draws of one number
(the code CUDA kernels run), element i from counter i. Keys, bits and uniform numbers are equal
to the NumPy path's bit for bit; normal and exponential numbers may differ by an ulp, where
Numba's log (libm's) is not NumPy's.
randint is compiled for number bounds and int32/int64, categorical for 1-d logits, bernoulli for
a number p or an array of them (of one or more dimensions), truncated_normal for number bounds (a number without a shape); other arguments are a Numba
typing error, which s2s.jit reports as an S2SError at the user's line.
"""

from __future__ import annotations

import numpy as np
from numba import typeof, types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import random as R
from .. import kernels

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


# The float draws are computed a number at a time, by the code CUDA kernels run
# (runtime/kernels.py: element i of a draw from counter i, by the operations of the NumPy path).
# The NumPy path's array form compiled too, but slowly: its emulated fused multiply-adds inline
# some twenty array expressions per polynomial step, and Numba took 35-50 s to compile one
# random.normal; the code on numbers compiles in about 3 s, gives the same numbers bit for bit
# (but libm's log), makes no temporaries, and runs as fast.


@register_jitable
def _fma64_of_numbers(a, b, c):
    """random.xla._fma64 of float64 numbers: Dekker's exact product, Knuth's TwoSum."""
    p = a * b
    ca, cb = a * 134217729.0, b * 134217729.0
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)
    return s + (t + e)


@register_jitable
def _fma32_of_numbers(a, b, c):
    """random.xla._fma32 of float32 numbers: the exact product in float64, the sum rounded to odd,
    then to float32."""
    p = np.float64(a) * np.float64(b)
    c64 = np.float64(c)
    s = p + c64
    z = s - p
    t = (p - (s - z)) + (c64 - z)
    if t != 0.0 and (np.float64(s).view(np.int64) & 1) == 0:
        s = np.nextafter(s, np.inf if t > 0.0 else -np.inf)
    return np.float32(s)


@overload(kernels.fma, target="cpu")
def _fma(a, b, c):
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, b, c: _fma32_of_numbers(a, np.float32(b), np.float32(c))
    return lambda a, b, c: _fma64_of_numbers(np.float64(a), np.float64(b), np.float64(c))


@overload(kernels.nextafter, target="cpu")
def _nextafter(x, y):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x, y: np.nextafter(x, np.float32(y))
    return lambda x, y: np.nextafter(x, np.float64(y))


def _cpu_jitable(function):
    """register_jitable for the CPU target only: numba-cuda has its own forms of some callees
    (kernels.fma is cuda.fma there), so these stay out of its way."""
    overload(function, target="cpu", strict=False)(lambda *args: function)


for _kernel in (kernels._words, kernels._unit32, kernels._unit64, kernels._uniform32, kernels._uniform64,
                kernels._horner, kernels.log, kernels._log1p, kernels._erfinv32, kernels._erfinv64, kernels._normal32,
                kernels._normal64, kernels._exponential32, kernels._exponential64, kernels.erf, kernels._truncate,
                kernels._truncated_normal32, kernels._truncated_normal64, kernels._erf_bounds32,
                kernels._erf_bounds64):
    _cpu_jitable(_kernel)


def _elementwise(element, dtype):
    """draw(key, n, a, b): element(key, i, a, b) of the counters i = 0 .. n-1."""
    @register_jitable
    def draw(key, n, a, b):
        out = np.empty(n, dtype)
        for i in range(n):
            out[i] = element(key, i, a, b)
        return out
    return draw


_DRAWS = {  # (distribution, dtype): draw(key, n, a, b)
    ("uniform", np.dtype(np.float64)): _elementwise(kernels._uniform64, np.float64),
    ("uniform", np.dtype(np.float32)): _elementwise(kernels._uniform32, np.float32),
    ("normal", np.dtype(np.float64)): _elementwise(register_jitable(lambda key, i, a, b: kernels._normal64(key, i)),
                                                   np.float64),
    ("normal", np.dtype(np.float32)): _elementwise(register_jitable(lambda key, i, a, b: kernels._normal32(key, i)),
                                                   np.float32),
    ("exponential", np.dtype(np.float64)): _elementwise(
        register_jitable(lambda key, i, a, b: kernels._exponential64(key, i)), np.float64),
    ("exponential", np.dtype(np.float32)): _elementwise(
        register_jitable(lambda key, i, a, b: kernels._exponential32(key, i)), np.float32),
    ("truncated_normal", np.dtype(np.float64)): _elementwise(
        register_jitable(lambda key, i, a, b: kernels._truncated_normal64(key, i, a[0], a[1], b[0], b[1])),
        np.float64),
    ("truncated_normal", np.dtype(np.float32)): _elementwise(
        register_jitable(lambda key, i, a, b: kernels._truncated_normal32(key, i, a[0], a[1], b[0], b[1])),
        np.float32),
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
    if isinstance(p, types.Array) and isinstance(p.dtype, types.Float) and p.ndim >= 1:
        # uniform numbers of the draw's shape (p's own, unless given), compared with p
        unshaped = shape is None or isinstance(shape, (types.Omitted, types.NoneType))
        shape_type = types.UniTuple(types.intp, p.ndim) if unshaped else shape
        unit = _flat(R._unit_f32 if p.dtype == types.float32 else R._unit_f64, shape_type)
        finish = _finish(shape_type, number=True)
        if unshaped:
            return lambda key, p=0.5, shape=None: finish(unit(key, p.shape), p.shape) < p
        return lambda key, p=0.5, shape=None: finish(unit(key, shape), shape) < p
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
    draw = _drawn("truncated_normal", dtype, shape)
    cast = np.float32 if d == np.float32 else np.float64
    erf_bounds = kernels._erf_bounds32 if d == np.float32 else kernels._erf_bounds64
    finish = _finish(shape, number=True)

    def impl(key, lower, upper, shape=None, dtype=float):
        lo, hi = cast(lower), cast(upper)
        return finish(draw(key, shape, erf_bounds(lo, hi), (lo, hi)), shape)
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
