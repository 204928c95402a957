"""Helpers that CUDA kernel code calls (codegen/cuda.py writes the calls); the draws of one number
are also what s2s.random's Numba overloads compile for the CPU (overloads/random.py).

A kernel cannot allocate: an array of a per-example shape known at specialisation is a
cuda.local.array, and these helpers fill it, copy into it (or into a thread's row of an
output), and check at run time that an example asks for the shape the module was written
with. Here they are plain NumPy, which Numba's CUDA simulator runs; runtime/overloads/cuda.py
gives numba-cuda its loops over the elements.

The draws of s2s.random are here too, written on numbers: one number per key (as
`random.normal(key)` gives) is the threefry hash of counter 0 and JAX's transformation of its
bits; a draw of a shape fills a local array, element i from counter i (normal, uniform,
exponential, truncated_normal, bernoulli, randint; permutation sorts in place; categorical
reads a 1-d row of logits).
Their fused multiply-adds are `fma`: emulated exactly in NumPy here (s2s.random's _fma32 and
_fma64), `cuda.fma` on the GPU, so both give the once-rounded result.
"""

from __future__ import annotations

import math

import numpy as np

from .. import random as _random

__all__ = ["fill", "copy_into", "shape_of", "fma", "log", "erf", "nextafter", "uniform32", "uniform64", "normal32",
           "normal64", "normal32_into", "normal64_into", "uniform32_into", "uniform64_into", "fold_in_into", "split_into",
           "exponential32", "exponential64", "exponential32_into", "exponential64_into", "bernoulli", "bernoulli_into",
           "randint32", "randint64", "randint32_into", "randint64_into", "truncated_normal32", "truncated_normal64",
           "truncated_normal32_into", "truncated_normal64_into", "categorical", "permutation_shape", "permutation_into"]


def fill(a, value):
    """Set every element of a (a local array) to value."""
    a[...] = value


def copy_into(destination, source):
    """destination[...] = source, of the same shape (a thread's output row, a local array)."""
    destination[...] = source


def shape_of(shape):
    """A shape argument (an int or a tuple of them) as a tuple, to compare with a constant."""
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)


def fma(a, b, c):
    """a * b + c rounded once, as XLA's fused multiply-add (numbers of one float type)."""
    if isinstance(a, np.float32):
        return _random._fma32(np.asarray([a]), np.asarray([b], np.float32), np.asarray([c], np.float32))[0]
    return float(_random._fma64(np.float64(a), np.float64(b), np.float64(c)))


def _words(key, i):
    """The two words of the hash of counter i (element i of a draw) under key."""
    c = np.uint64(i)
    return _random.threefry2x32(np.uint64(key[0]), np.uint64(key[1]), c >> np.uint64(32), c & np.uint64(0xFFFFFFFF))


def _unit32(key, i):
    """[0, 1) in float32: s2s.random's _unit_f32 of element i."""
    y0, y1 = _words(key, i)
    return np.float32((y0 ^ y1) >> np.uint64(9)) * np.float32(2.0**-23)


def _unit64(key, i):
    y0, y1 = _words(key, i)
    return np.float64(((y0 << np.uint64(32)) | y1) >> np.uint64(12)) * 2.0**-52


def _uniform32(key, i, minval, maxval):
    scaled = fma(_unit32(key, i), maxval - minval, minval)
    return scaled if scaled >= minval else minval


def _uniform64(key, i, minval, maxval):
    scaled = fma(_unit64(key, i), maxval - minval, minval)
    return scaled if scaled >= minval else minval


def uniform32(key, minval, maxval):
    """random.uniform(key, (), np.float32, minval, maxval): max(minval, u * (maxval - minval) + minval)."""
    return _uniform32(key, 0, minval, maxval)


def uniform64(key, minval, maxval):
    return _uniform64(key, 0, minval, maxval)


def _horner(coefficients, w):
    p = coefficients[0]
    for k in range(1, len(coefficients)):
        p = fma(p, w, coefficients[k])
    return p


def log(x):
    """NumPy's log of a number (its float type kept); math.log on the GPU."""
    return np.log(x)


def _log1p(x, p_coefficients, q_coefficients, threshold, one, half):
    """XLA's log1p (s2s.random._log1p_f64 / _f32) of a number."""
    if abs(x) < threshold:
        s2 = x * x
        return x + (-half * s2 + (x * s2) * (_horner(p_coefficients, x) / _horner(q_coefficients, x)))
    return log(x + one)


def _erfinv32(x):
    """s2s.random._erfinv_f32 of a number."""
    w = -_log1p(-x * x, _random._LOG1P_P32, _random._LOG1P_Q32, np.float32(0.41421356237309504880),
                np.float32(1.0), np.float32(0.5))
    if w < np.float32(5.0):
        p = _horner(_random._F32_A, w - np.float32(2.5))
    else:
        p = _horner(_random._F32_B, np.float32(math.sqrt(w)) - np.float32(3.0))
    return x * np.float32(math.inf) if abs(x) == np.float32(1.0) else p * x


def _erfinv64(x):
    """s2s.random._erfinv_f64 of a number."""
    w = -_log1p(-x * x, _random._LOG1P_P, _random._LOG1P_Q, 0.41421356237309504880, 1.0, 0.5)
    if w < 6.25:
        p = _horner(_random._F64_A, w - 3.125)
    elif w < 16.0:
        p = _horner(_random._F64_B, math.sqrt(w) - 3.25)
    else:
        p = _horner(_random._F64_C, math.sqrt(w) - 5.0)
    return x * math.inf if abs(x) == 1.0 else p * x


def _normal32(key, i):
    """sqrt(2) * erfinv(u), u uniform on (-1, 1), as s2s.random._normal_f32 computes element i."""
    lo = np.float32(-1.0 + 2.0**-24)
    x = fma(_unit32(key, i), np.float32(1.0) - lo, lo)
    x = x if x >= lo else lo
    return np.float32(math.sqrt(2.0)) * _erfinv32(x)


def _normal64(key, i):
    """s2s.random._normal_f64's element i."""
    lo = -1.0 + 2.0**-53
    x = fma(_unit64(key, i), 1.0 - lo, lo)
    x = x if x >= lo else lo
    return math.sqrt(2.0) * _erfinv64(x)


def normal32(key):
    """random.normal(key, (), np.float32)."""
    return _normal32(key, 0)


def normal64(key):
    """random.normal(key) (float64)."""
    return _normal64(key, 0)


# Draws of a shape, into a local array: element i (in C order) hashes counter i, as s2s.random.
def normal32_into(out, key):
    for i in range(out.size):
        out.flat[i] = _normal32(key, i)


def normal64_into(out, key):
    for i in range(out.size):
        out.flat[i] = _normal64(key, i)


def uniform32_into(out, key, minval, maxval):
    for i in range(out.size):
        out.flat[i] = _uniform32(key, i, minval, maxval)


def uniform64_into(out, key, minval, maxval):
    for i in range(out.size):
        out.flat[i] = _uniform64(key, i, minval, maxval)


def fold_in_into(out, key, data):
    """out[:] = random.fold_in(key, data), out a local array of two uint32."""
    y0, y1 = _random.threefry2x32(np.uint64(key[0]), np.uint64(key[1]), np.uint64(0), np.uint64(data & 0xFFFFFFFF))
    out[0] = y0
    out[1] = y1


def split_into(out, key, num=2):
    """out[:] = random.split(key, num), out a local array of shape (num, 2) of uint32. key may
    be a row of out (key, sub = random.split(key) in a loop): its words are read first."""
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for i in range(out.shape[0]):
        c = np.uint64(i)
        y0, y1 = _random.threefry2x32(k0, k1, c >> np.uint64(32), c & np.uint64(0xFFFFFFFF))
        out[i, 0] = y0
        out[i, 1] = y1


# ---- the other draws of s2s.random: exponential, bernoulli, randint, truncated_normal,
# categorical, permutation. Element i of each is what s2s.random computes for counter i, by
# the same operations; the simulator runs this code as it is, numba-cuda compiles it
# (overloads/cuda.py registers it) with math.log, math.erf and math.nextafter of libdevice.

def _hash(k0, k1, i):
    """The two words of the hash of counter i under the key (k0, k1), given as numbers."""
    c = np.uint64(i)
    return _random.threefry2x32(np.uint64(k0), np.uint64(k1), c >> np.uint64(32), c & np.uint64(0xFFFFFFFF))


def _exponential32(key, i):
    """-log1p(-u), XLA's log1p: s2s.random.exponential's element i in float32."""
    return -_log1p(-_unit32(key, i), _random._LOG1P_P32, _random._LOG1P_Q32, np.float32(0.41421356237309504880),
                   np.float32(1.0), np.float32(0.5))


def _exponential64(key, i):
    return -_log1p(-_unit64(key, i), _random._LOG1P_P, _random._LOG1P_Q, 0.41421356237309504880, 1.0, 0.5)


def exponential32(key):
    """random.exponential(key, (), np.float32)."""
    return _exponential32(key, 0)


def exponential64(key):
    """random.exponential(key) (float64)."""
    return _exponential64(key, 0)


def exponential32_into(out, key):
    for i in range(out.size):
        out.flat[i] = _exponential32(key, i)


def exponential64_into(out, key):
    for i in range(out.size):
        out.flat[i] = _exponential64(key, i)


def _bernoulli(key, i, p):
    """uniform(key, shape, p's float type) < p, element i (numba-cuda: one form per float type)."""
    if isinstance(p, np.float32):
        return _uniform32(key, i, np.float32(0.0), np.float32(1.0)) < p
    if not isinstance(p, (float, np.floating)):
        raise TypeError(f"random.bernoulli's p must be a float, not {type(p).__name__}")
    return _uniform64(key, i, 0.0, 1.0) < np.float64(p)


def bernoulli(key, p):
    """random.bernoulli(key, p) of a number p."""
    return _bernoulli(key, 0, p)


def bernoulli_into(out, key, p):
    """random.bernoulli(key, p, out.shape), or of an array p of out's shape (shape=None)."""
    for i in range(out.size):
        out.flat[i] = _bernoulli(key, i, p if np.ndim(p) == 0 else p.flat[i])


# randint's unsigned arithmetic wraps (as XLA's): words of 64 bits are held in uint64 and every
# sum and product is made of 32-bit halves, so that nothing overflows (NumPy would warn; Numba
# would wrap silently: one meaning in both).
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_TOP = np.uint64(1 << 63)
_HALF62 = np.int64(1 << 62)
_M64 = np.uint64(2**64 - 1)
_INT = ((np.int64(-(2**31)), np.int64(2**31 - 1)), (np.int64(-(2**63)), np.int64(2**63 - 1)))  # int32, int64


def _add64(a, b):
    """a + b modulo 2**64 (uint64)."""
    low = (a & _M32) + (b & _M32)
    high = ((a >> _S32) + (b >> _S32) + (low >> _S32)) & _M32
    return (high << _S32) | (low & _M32)


def _mul64(a, b):
    """a * b modulo 2**64 (uint64)."""
    al, ah, bl, bh = a & _M32, a >> _S32, b & _M32, b >> _S32
    cross = (((ah * bl) & _M32) + ((al * bh) & _M32)) & _M32
    return _add64(al * bl, cross << _S32)


def _unsigned(x):
    """The int64 x as its two's-complement uint64."""
    if x >= 0:
        return np.uint64(x)
    return np.uint64((x + _HALF62) + _HALF62) | _TOP


def _signed(u):
    """The uint64 u as the int64 of the same bits."""
    if u >= _TOP:
        return np.int64(u - _TOP) - _HALF62 - _HALF62
    return np.int64(u)


def _randint_setup(minval, maxval, wide):
    """(lo, span, multiplier) of random.randint(key, shape, minval, maxval, int64 if wide else
    int32), as s2s.random.randint computes them (span 0: all 2**32 values of int32)."""
    minval, maxval = np.int64(minval), np.int64(maxval)
    lowest, highest = _INT[1] if wide else _INT[0]
    mask = _M64 if wide else _M32
    lo = min(max(minval, lowest), highest)
    hi = min(max(maxval, lowest), highest)
    span = np.uint64(1) if hi <= lo else _add64(_unsigned(hi), _add64(~_unsigned(lo), np.uint64(1)))
    if maxval > highest and maxval > minval:
        span = _add64(span, np.uint64(1)) & mask
    safe = span if span != np.uint64(0) else np.uint64(1)
    multiplier = (np.uint64(2**32) if wide else np.uint64(2**16)) % safe
    return lo, span, (_mul64(multiplier, multiplier) & mask) % safe  # (it wraps, as XLA's)


def _randint(k1, k2, i, lo, span, multiplier, wide):
    """Element i of randint: draws under the two keys of split(key), reduced modulo the span."""
    a0, a1 = _hash(k1[0], k1[1], i)
    b0, b1 = _hash(k2[0], k2[1], i)
    if wide:
        higher, lower, mask = (a0 << _S32) | a1, (b0 << _S32) | b1, _M64
    else:
        higher, lower, mask = a0 ^ a1, b0 ^ b1, _M32
    if span == np.uint64(0):
        offset = lower
    else:
        offset = _add64(_mul64(higher % span, multiplier) & mask, lower % span) & mask
        offset = offset % span
    return _signed(_add64(_unsigned(lo), offset))  # lo + offset < maxval: it does not wrap


def _split2(key):
    """The two keys of random.split(key), as pairs of numbers."""
    return _hash(key[0], key[1], 0), _hash(key[0], key[1], 1)


def randint64(key, minval, maxval):
    """random.randint(key, (), minval, maxval) (int64)."""
    k1, k2 = _split2(key)
    lo, span, multiplier = _randint_setup(minval, maxval, True)
    return _randint(k1, k2, 0, lo, span, multiplier, True)


def randint32(key, minval, maxval):
    """random.randint(key, (), minval, maxval, np.int32)."""
    k1, k2 = _split2(key)
    lo, span, multiplier = _randint_setup(minval, maxval, False)
    return np.int32(_randint(k1, k2, 0, lo, span, multiplier, False))


def randint64_into(out, key, minval, maxval):
    k1, k2 = _split2(key)
    lo, span, multiplier = _randint_setup(minval, maxval, True)
    for i in range(out.size):
        out.flat[i] = _randint(k1, k2, i, lo, span, multiplier, True)


def randint32_into(out, key, minval, maxval):
    k1, k2 = _split2(key)
    lo, span, multiplier = _randint_setup(minval, maxval, False)
    for i in range(out.size):
        out.flat[i] = np.int32(_randint(k1, k2, i, lo, span, multiplier, False))


def erf(x):
    """math.erf (CPython's; libdevice's on the GPU) of a float64 number."""
    return math.erf(x)


def nextafter(x, y):
    """The float next to x towards y, in x's float type (y: a Python float)."""
    return np.nextafter(x, type(x)(y))


def _truncate(out, lower, upper):
    """np.clip(out, nextafter(lower, inf), nextafter(upper, -inf)), NaN kept."""
    lo = nextafter(lower, math.inf)
    hi = nextafter(upper, -math.inf)
    return lo if out < lo else (hi if out > hi else out)


def _truncated_normal32(key, i, a, b, lower, upper):
    """s2s.random.truncated_normal's element i (float32): a and b are erf of the bounds / sqrt(2)."""
    u = fma(_unit32(key, i), b - a, a)
    u = a if u < a else u
    return _truncate(np.float32(math.sqrt(2.0)) * _erfinv32(u), lower, upper)


def _truncated_normal64(key, i, a, b, lower, upper):
    u = fma(_unit64(key, i), b - a, a)
    u = a if u < a else u
    return _truncate(math.sqrt(2.0) * _erfinv64(u), lower, upper)


def _erf_bounds32(lower, upper):
    root2 = np.float32(math.sqrt(2.0))
    return np.float32(erf(np.float64(lower / root2))), np.float32(erf(np.float64(upper / root2)))


def _erf_bounds64(lower, upper):
    return erf(lower / math.sqrt(2.0)), erf(upper / math.sqrt(2.0))


def truncated_normal32(key, lower, upper):
    """random.truncated_normal(key, lower, upper, (), np.float32), of number bounds."""
    a, b = _erf_bounds32(lower, upper)
    return _truncated_normal32(key, 0, a, b, lower, upper)


def truncated_normal64(key, lower, upper):
    """random.truncated_normal(key, lower, upper) of number bounds."""
    a, b = _erf_bounds64(lower, upper)
    return _truncated_normal64(key, 0, a, b, lower, upper)


def truncated_normal32_into(out, key, lower, upper):
    a, b = _erf_bounds32(lower, upper)
    for i in range(out.size):
        out.flat[i] = _truncated_normal32(key, i, a, b, lower, upper)


def truncated_normal64_into(out, key, lower, upper):
    a, b = _erf_bounds64(lower, upper)
    for i in range(out.size):
        out.flat[i] = _truncated_normal64(key, i, a, b, lower, upper)


_TINY32 = np.float32(np.finfo(np.float32).tiny)  # (categorical draws u in [tiny, 1))
_TINY64 = np.finfo(np.float64).tiny


def _categorical32(key, logits):
    """argmax(-log(-log(u)) + logits), u = uniform(key, (n,), float32, tiny, 1), NumPy's argmax:
    the first largest, or the first NaN."""
    tiny = _TINY32
    best, top = 0, np.float32(0.0)
    for i in range(logits.shape[0]):
        value = -log(-log(_uniform32(key, i, tiny, np.float32(1.0)))) + np.float32(logits[i])
        if i == 0 or value > top or (value != value and top == top):
            best, top = i, value
    return best


def _categorical64(key, logits):
    tiny = _TINY64
    best, top = 0, 0.0
    for i in range(logits.shape[0]):
        value = -log(-log(_uniform64(key, i, tiny, 1.0))) + np.float64(logits[i])
        if i == 0 or value > top or (value != value and top == top):
            best, top = i, value
    return best


def categorical(key, logits):
    """random.categorical(key, logits) of a 1-d row of logits (float32 draws for float32 logits)."""
    if np.ndim(logits) != 1:
        raise TypeError("in a kernel, random.categorical takes a 1-d row of logits")
    if logits.dtype == np.float32:
        return np.int64(_categorical32(key, logits))
    return np.int64(_categorical64(key, logits))


def permutation_shape(x):
    """The shape of random.permutation(key, x): (x,) of an int, x's own of an array."""
    return (int(x),) if np.ndim(x) == 0 else tuple(x.shape)


def _shuffle(order, key):
    """order[:] = s2s.random._permutation_kernel(key, order.shape[0]): rounds of a stable sort by
    random 32-bit words. Each round packs (word - 2**31) * 2**32 + index into the int64 order
    and sorts by the high half by insertion (stable, in place: a kernel has no other room)."""
    n = order.shape[0]
    rounds = int(math.ceil(3 * math.log(max(1, n)) / math.log(4294967295.0)))
    for p in range(n):
        order[p] = p
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(rounds):
        (k0, k1), (s0, s1) = _hash(k0, k1, 0), _hash(k0, k1, 1)
        for p in range(n):
            w0, w1 = _hash(s0, s1, p)
            order[p] = (np.int64(w0 ^ w1) - np.int64(2**31)) * np.int64(2**32) + order[p]
        for p in range(1, n):
            item = order[p]
            q = p
            while q > 0 and (order[q - 1] >> np.int64(32)) > (item >> np.int64(32)):
                order[q] = order[q - 1]
                q -= 1
            order[q] = item
        for p in range(n):
            order[p] = order[p] & np.int64(0xFFFFFFFF)


def permutation_into(out, order, key, x):
    """out[:] = random.permutation(key, x): x an int, or a 1-d array (its elements permuted);
    order is room for the indices (an int64 local array of out's length)."""
    _shuffle(order, key)
    for p in range(order.shape[0]):
        out[p] = order[p] if np.ndim(x) == 0 else x[order[p]]
