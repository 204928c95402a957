"""Helpers that only CUDA kernel code calls (codegen/cuda.py writes the calls).

A kernel cannot allocate: an array of a per-example shape known at specialisation is a
cuda.local.array, and these helpers fill it, copy into it (or into a thread's row of an
output), and check at run time that an example asks for the shape the module was written
with. Here they are plain NumPy, which Numba's CUDA simulator runs; runtime/overloads/cuda.py
gives numba-cuda its loops over the elements.

The scalar draws of s2s.random (one number per key, as `random.normal(key)` gives) are here
too, written on numbers: the threefry hash of counter 0, and JAX's transformation of its bits.
Their fused multiply-adds are `fma`: emulated exactly in NumPy here (s2s.random's _fma32 and
_fma64), `cuda.fma` on the GPU, so both give the once-rounded result.
"""

from __future__ import annotations

import math

import numpy as np

from .. import random as _random

__all__ = ["fill", "copy_into", "shape_of", "fma", "log", "uniform32", "uniform64", "normal32", "normal64",
           "normal32_into", "normal64_into", "uniform32_into", "uniform64_into", "fold_in_into", "split_into"]


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


def _normal32(key, i):
    """sqrt(2) * erfinv(u), u uniform on (-1, 1), as s2s.random._normal_f32 computes element i."""
    lo = np.float32(-1.0 + 2.0**-24)
    x = fma(_unit32(key, i), np.float32(1.0) - lo, lo)
    x = x if x >= lo else lo
    w = -_log1p(-x * x, _random._LOG1P_P32, _random._LOG1P_Q32, np.float32(0.41421356237309504880),
                np.float32(1.0), np.float32(0.5))
    if w < np.float32(5.0):
        p = _horner(_random._F32_A, w - np.float32(2.5))
    else:
        p = _horner(_random._F32_B, np.float32(math.sqrt(w)) - np.float32(3.0))
    return np.float32(math.sqrt(2.0)) * (x * np.float32(math.inf) if abs(x) == np.float32(1.0) else p * x)


def _normal64(key, i):
    """s2s.random._normal_f64's element i."""
    lo = -1.0 + 2.0**-53
    x = fma(_unit64(key, i), 1.0 - lo, lo)
    x = x if x >= lo else lo
    w = -_log1p(-x * x, _random._LOG1P_P, _random._LOG1P_Q, 0.41421356237309504880, 1.0, 0.5)
    if w < 6.25:
        p = _horner(_random._F64_A, w - 3.125)
    elif w < 16.0:
        p = _horner(_random._F64_B, math.sqrt(w) - 3.25)
    else:
        p = _horner(_random._F64_C, math.sqrt(w) - 5.0)
    return math.sqrt(2.0) * (x * math.inf if abs(x) == 1.0 else p * x)


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
    """out[:] = random.split(key, num), out a local array of shape (num, 2) of uint32."""
    for i in range(out.shape[0]):
        c = np.uint64(i)
        y0, y1 = _random.threefry2x32(np.uint64(key[0]), np.uint64(key[1]), c >> np.uint64(32),
                                      c & np.uint64(0xFFFFFFFF))
        out[i, 0] = y0
        out[i, 1] = y1
