"""Explicit random keys, as `jax.random`: the same names, arguments, key layout and bits.

A key is a NumPy array of two uint32 words (`PRNGKey(0)` is `array([0, 0], dtype=uint32)`).
Nothing here keeps state: every draw is a pure function of its key, computed by hashing
counters with Threefry-2x32 (20 rounds; Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC 2011) under the counter scheme of JAX's default `jax_threefry_partitionable=True`:
element i of a draw of shape S hashes the 64-bit counter i (its high and low words), so the
same key gives the same numbers in NumPy, under `s2s.jit` (Numba) and, element by element, in
a CUDA kernel (`threefry2x32` is a function of four uint32 numbers).

dtypes follow NumPy, not JAX's default mode: `uniform(key, (3,))` is float64 (JAX with
`jax_enable_x64`); `dtype=np.float32` gives JAX's default-mode numbers. What equals JAX:

- bit for bit: PRNGKey, key, split, fold_in, bits, uniform (float32 and float64), and what is
  computed from them by comparisons and integer arithmetic alone: randint, bernoulli,
  permutation (JAX 0.10.2, CPU). XLA fuses uniform's `u * (maxval - minval) + minval` into one
  multiply-add; it is emulated here (exactly in float32; in float64 with exact products and
  sums, equal to the fused result except within a tiny fraction of an ulp of a tie);
- within an ulp or two: normal, exponential, truncated_normal. XLA evaluates erfinv's and
  log1p's polynomials with fused multiply-adds (emulated here too) but its float32 log is its
  own (measured: float32 normal, 5 of 1000 draws 1 ulp apart; float64, all 1000 equal), and
  truncated_normal's erf is math.erf, not XLA's; categorical picks JAX's category unless two
  perturbed logits tie to an ulp.

Under s2s's transforms a draw is a constant: `mu + sigma * random.normal(key, shape)` has the
derivative of the reparameterisation trick with respect to mu and sigma, and keys (integers)
are never differentiated. s2s.jit compiles calls to these functions through Numba overloads
(s2s/runtime/overloads/random.py); s2s.vmap over a batch of keys gives what calling per key
gives.

>>> import numpy as np
>>> from s2s import random
>>> key = random.PRNGKey(0)
>>> key, sub = random.split(key)
>>> sub
array([ 928981903, 3453687069], dtype=uint32)
>>> random.uniform(sub, (2,), dtype=np.float32)
array([0.00729382, 0.02089119], dtype=float32)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["PRNGKey", "key", "split", "fold_in", "bits", "uniform", "normal", "randint", "bernoulli",
           "categorical", "permutation", "truncated_normal", "exponential", "threefry2x32"]

# ---- the hash: numbers or arrays, NumPy or Numba ------------------------------------------
# Words are held in uint64 and masked to 32 bits after each addition and shift: Numba types
# uint32 + uint32 as a 64-bit number, so masking in uint64 gives one meaning to the code in
# NumPy (arrays or scalars), under numba.njit and in a CUDA device function.

_MASK = np.uint64(0xFFFFFFFF)
_PARITY = np.uint64(0x1BD11BDA)  # Threefry's key-schedule constant
_R = tuple(np.uint64(r) for r in (13, 15, 26, 6, 17, 29, 16, 24))  # Threefry-2x32 rotations
_32 = np.uint64(32)


def _rotl(x, r):
    return ((x << r) & _MASK) | (x >> (_32 - r))


def _mix(x0, x1, r):
    x0 = (x0 + x1) & _MASK
    return x0, _rotl(x1, r) ^ x0


def _four_rounds(x0, x1, a, b, c, d):
    x0, x1 = _mix(x0, x1, a)
    x0, x1 = _mix(x0, x1, b)
    x0, x1 = _mix(x0, x1, c)
    return _mix(x0, x1, d)


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds) of the counter (x0, x1) under the key (k0, k1).

    The arguments are 32-bit words (uint32, or uint64 below 2**32), numbers or arrays that
    broadcast; the two result words are uint64 below 2**32. Only +, ^, <<, >> and &: a CUDA
    device function can run it as it is.
    """
    k0 = k0 & _MASK
    k1 = k1 & _MASK
    k2 = k0 ^ k1 ^ _PARITY
    x0 = (x0 + k0) & _MASK
    x1 = (x1 + k1) & _MASK
    x0, x1 = _four_rounds(x0, x1, _R[0], _R[1], _R[2], _R[3])
    x0, x1 = (x0 + k1) & _MASK, (x1 + k2 + np.uint64(1)) & _MASK
    x0, x1 = _four_rounds(x0, x1, _R[4], _R[5], _R[6], _R[7])
    x0, x1 = (x0 + k2) & _MASK, (x1 + k0 + np.uint64(2)) & _MASK
    x0, x1 = _four_rounds(x0, x1, _R[0], _R[1], _R[2], _R[3])
    x0, x1 = (x0 + k0) & _MASK, (x1 + k1 + np.uint64(3)) & _MASK
    x0, x1 = _four_rounds(x0, x1, _R[4], _R[5], _R[6], _R[7])
    x0, x1 = (x0 + k1) & _MASK, (x1 + k2 + np.uint64(4)) & _MASK
    x0, x1 = _four_rounds(x0, x1, _R[0], _R[1], _R[2], _R[3])
    return (x0 + k2) & _MASK, (x1 + k0 + np.uint64(5)) & _MASK


# ---- kernels: flat arrays of n draws; plain NumPy that numba.njit also compiles ------------
# (the Numba overloads call these very functions, compiled, so both paths give one answer)


# The NumPy path hashes in uint32 arrays, whose arithmetic wraps modulo 2**32 by itself (no
# masks), in blocks that stay in the processor's cache; Numba has its own loop
# (overloads/random.py), over threefry2x32 above.
_BLOCK = 1 << 15
_R32 = tuple(int(r) for r in _R)


def _threefry_blocks(k0, k1, x0, x1):
    """threefry2x32 of uint32 arrays (wrapping arithmetic), in place of x0 and x1."""
    ks = (np.uint32(k0), np.uint32(k1), np.uint32(k0) ^ np.uint32(k1) ^ np.uint32(_PARITY))
    x0 += ks[0]
    x1 += ks[1]
    spare = np.empty_like(x1)
    for block in range(5):
        for r in _R32[:4] if block % 2 == 0 else _R32[4:]:
            x0 += x1
            np.left_shift(x1, np.uint32(r), out=spare)
            x1 >>= np.uint32(32 - r)
            x1 |= spare
            x1 ^= x0
        x0 += ks[(block + 1) % 3]
        x1 += ks[(block + 2) % 3]
        x1 += np.uint32(block + 1)
    return x0, x1


def _hash_counters(key, n):
    """Both words of the hash of the counters 0 .. n-1 (a 64-bit counter: high, low word), as
    uint32 arrays."""
    y0, y1 = np.empty(n, np.uint32), np.empty(n, np.uint32)
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        i = np.arange(start, stop, dtype=np.uint64)
        x0, x1 = (i >> _32).astype(np.uint32), (i & _MASK).astype(np.uint32)
        y0[start:stop], y1[start:stop] = _threefry_blocks(key[0], key[1], x0, x1)
    return y0, y1


def _bits32(key, n):
    y0, y1 = _hash_counters(key, n)
    return y0 ^ y1


def _bits64(key, n):
    y0, y1 = _hash_counters(key, n)
    return (y0.astype(np.uint64) << _32) | y1.astype(np.uint64)


def _unit_f32(key, n):
    """[0, 1) with 23 random mantissa bits: JAX sets them in 1.m and subtracts 1; the same
    number is m * 2**-23, which needs no bit casting (per-thread CUDA code has none)."""
    return (_bits32(key, n) >> np.uint64(9)).astype(np.float32) * np.float32(2.0**-23)


def _unit_f64(key, n):
    return (_bits64(key, n) >> np.uint64(12)).astype(np.float64) * 2.0**-52


def _split_kernel(key, n):
    y0, y1 = _hash_counters(key, n)
    out = np.empty((n, 2), np.uint32)
    out[:, 0] = y0.astype(np.uint32)
    out[:, 1] = y1.astype(np.uint32)
    return out


def _fold_in_kernel(key, data):
    y0, y1 = threefry2x32(key[0], key[1], np.uint64(0), np.uint64(data) & _MASK)
    out = np.empty(2, np.uint32)
    out[0] = np.uint32(y0)
    out[1] = np.uint32(y1)
    return out


def _fma32(a, b, c):
    """a * b + c rounded once, of float32 arrays (XLA contracts u * span + minval into one fused
    multiply-add). The product is exact in float64; the sum is rounded to odd in float64 (the
    odd neighbour where inexact), which a rounding to float32 then rounds correctly."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64) + p * 0.0
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)  # s + t == p + c exactly (TwoSum)
    even = (s.view(np.int64) & 1) == 0
    s = np.where((t != 0.0) & even, np.nextafter(s, np.where(t > 0.0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def _fma64(a, b, c):
    """a * b + c of float64 arrays: Dekker's exact product and Knuth's TwoSum, so that only the
    last of three roundings is not exact; it agrees with a fused multiply-add but where the
    result is within an ulp's fraction of a tie (none in 2 * 10**5 random triples checked
    against exact rational arithmetic)."""
    b = b + a * 0.0
    c = c + a * 0.0
    p = a * b
    ca, cb = a * 134217729.0, b * 134217729.0  # 2**27 + 1: Veltkamp's split into 26-bit halves
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # a * b == p + e exactly
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)
    return s + (t + e)


# M. Giles, "Approximating the erfinv function" (GPU Gems / 2010): the polynomials XLA evaluates
# for erf_inv, in w = -log1p(-x*x). float32: two pieces split at w = 5.
_ERFINV_F32 = ((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
               (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
# float64: three pieces split at w = 6.25 and w = 16.
_ERFINV_F64 = ((-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
                1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
                6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
                2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
                1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
                4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
                0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
                0.24015818242558961693, 1.6536545626831027356),
               (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
                1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
                2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
                6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
                0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
                -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
                3.0838856104922207635),
               (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
                -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
                2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
                -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
                7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
                1.0103004648645343977, 4.8499064014085844221))
_F32_A = tuple(np.float32(c) for c in _ERFINV_F32[0])
_F32_B = tuple(np.float32(c) for c in _ERFINV_F32[1])
_F64_A, _F64_B, _F64_C = _ERFINV_F64


def _horner32(coefficients, w):
    """The polynomial at w, each step one fused multiply-add, as XLA evaluates it: _fma32 with
    w's float64 value made once."""
    w64 = w.astype(np.float64)
    p = coefficients[0] + w * 0
    for c in coefficients[1:]:
        q = p.astype(np.float64) * w64
        c64 = np.float64(c)
        s = q + c64
        z = s - q
        t = (q - (s - z)) + (c64 - z)
        even = (s.view(np.int64) & 1) == 0
        s = np.where((t != 0.0) & even, np.nextafter(s, np.where(t > 0.0, np.inf, -np.inf)), s)
        p = s.astype(np.float32)
    return p


def _horner64(coefficients, w):
    """_fma64 step by step, with the split of w into halves made once."""
    cw = w * 134217729.0
    wh = cw - (cw - w)
    wl = w - wh
    p = coefficients[0] + w * 0
    for c in coefficients[1:]:
        q = p * w
        cp = p * 134217729.0
        ph = cp - (cp - p)
        pl = p - ph
        e = ((ph * wh - q) + ph * wl + pl * wh) + pl * wl  # p * w == q + e exactly
        s = q + c
        z = s - q
        t = (q - (s - z)) + (c - z)
        p = s + (t + e)
    return p


# log1p as XLA's CPU backend computes it: for |x| < sqrt(2) - 1 the Cephes rational function
# x - x**2/2 + x**3 * P(x)/Q(x) (polynomials by fused multiply-adds), else log(1 + x). NumPy's
# log1p differs from it by up to ~130 ulp in float64 near the switch.
_LOG1P_P = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
            2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
            2.0039553499201281259648e1)
_LOG1P_Q = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
            3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)
_LOG1P_P32 = tuple(np.float32(c) for c in _LOG1P_P)
_LOG1P_Q32 = tuple(np.float32(c) for c in _LOG1P_Q)


# Each piece of a piecewise function is evaluated on its own elements only (the emulated fused
# multiply-adds cost some twenty operations each). Arguments of any shape; NumPy or Numba.


def _log1p_f32(x):
    x = x.ravel()
    out = np.log(x + np.float32(1.0))
    i = np.nonzero(np.abs(x) < np.float32(0.41421356237309504880))[0]
    s = x[i]
    s2 = s * s
    out[i] = s + (np.float32(-0.5) * s2 + (s * s2) * (_horner32(_LOG1P_P32, s) / _horner32(_LOG1P_Q32, s)))
    return out


def _log1p_f64(x):
    x = x.ravel()
    out = np.log(x + 1.0)
    i = np.nonzero(np.abs(x) < 0.41421356237309504880)[0]
    s = x[i]
    s2 = s * s
    out[i] = s + (-0.5 * s2 + (s * s2) * (_horner64(_LOG1P_P, s) / _horner64(_LOG1P_Q, s)))
    return out


def _erfinv_f32(x):
    shape, x = x.shape, x.ravel()
    w = -_log1p_f32(-x * x)
    p = np.empty_like(x)
    low = w < np.float32(5.0)
    i = np.nonzero(low)[0]
    p[i] = _horner32(_F32_A, w[i] - np.float32(2.5))
    i = np.nonzero(~low)[0]
    p[i] = _horner32(_F32_B, np.sqrt(w[i]) - np.float32(3.0))
    return np.where(np.abs(x) == np.float32(1.0), x * np.float32(np.inf), p * x).reshape(shape)


def _erfinv_f64(x):
    shape, x = x.shape, x.ravel()
    w = -_log1p_f64(-x * x)
    p = np.empty_like(x)
    low, middle = w < 6.25, (w >= 6.25) & (w < 16.0)
    i = np.nonzero(low)[0]
    p[i] = _horner64(_F64_A, w[i] - 3.125)
    i = np.nonzero(middle)[0]
    p[i] = _horner64(_F64_B, np.sqrt(w[i]) - 3.25)
    i = np.nonzero(~low & ~middle)[0]
    p[i] = _horner64(_F64_C, np.sqrt(w[i]) - 5.0)
    return np.where(np.abs(x) == 1.0, x * np.inf, p * x).reshape(shape)


def _normal_of_unit_f32(u):
    """sqrt(2) erfinv(v) of v uniform on [nextafter(-1, 0), 1): u * (hi - lo) + lo, then at
    least lo, as JAX."""
    lo = np.float32(-1.0 + 2.0**-24)  # nextafter(-1, 0)
    v = np.maximum(lo, _fma32(u, np.float32(1.0) - lo + u * 0, lo + u * 0))
    return np.float32(math.sqrt(2.0)) * _erfinv_f32(v)


def _normal_of_unit_f64(u):
    lo = -1.0 + 2.0**-53
    v = np.maximum(lo, _fma64(u, 1.0 - lo + u * 0, lo + u * 0))
    return math.sqrt(2.0) * _erfinv_f64(v)


def _normal_f32(key, n):
    return _normal_of_unit_f32(_unit_f32(key, n))


def _normal_f64(key, n):
    return _normal_of_unit_f64(_unit_f64(key, n))


def _blocked(f, x):
    """f of x (an elementwise function of a 1-d array) a block at a time (NumPy path): the
    temporaries of the polynomials stay in the processor's cache."""
    if x.size <= _BLOCK:
        return f(x)
    out = np.empty_like(x)
    for start in range(0, x.size, _BLOCK):
        out[start:start + _BLOCK] = f(x[start:start + _BLOCK])
    return out


def _permutation_kernel(key, n):
    """JAX's shuffle: sort by fresh random 32-bit keys, in rounds enough to make ties unlikely."""
    rounds = int(math.ceil(3 * math.log(max(1, n)) / math.log(4294967295.0)))
    order = np.arange(n)
    for _ in range(rounds):
        keys = _split_kernel(key, 2)
        key = keys[0]
        sort_keys = _bits32(keys[1], n)
        order = order[np.argsort(sort_keys, kind="mergesort")]
    return order


# ---- the public functions -----------------------------------------------------------------


def _shape(shape) -> tuple:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)


def _key(key) -> np.ndarray:
    key = np.asarray(key)
    if key.shape != (2,) or key.dtype != np.uint32:
        raise TypeError(f"a random key is a uint32 array of shape (2,) (random.PRNGKey(seed)), not a "
                        f"{key.dtype} array of shape {key.shape}; for a batch of keys use s2s.vmap")
    return key


def _float_dtype(dtype, name: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"random.{name} draws float32 or float64, not {dtype}")
    return dtype


def _scale(u, span, minval):
    return _fma32(u, span, minval) if u.dtype == np.float32 else _fma64(u, span, minval)


def _unit(key, shape, dtype):
    n = math.prod(shape)
    return (_unit_f32(key, n) if dtype == np.float32 else _unit_f64(key, n)).reshape(shape)


def PRNGKey(seed) -> np.ndarray:
    """A key from an integer seed: its high and low 32-bit words (a 64-bit seed, as JAX with
    jax_enable_x64; seeds in [0, 2**32) give the same key in JAX's default mode)."""
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise OverflowError(f"the seed {seed} does not fit in 64 bits")
    seed &= 2**64 - 1
    return np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)


def key(seed) -> np.ndarray:
    """The same raw key as PRNGKey (JAX's typed keys are not modelled: a key is its data)."""
    return PRNGKey(seed)


def split(key, num=2) -> np.ndarray:
    """num new keys (an int or a shape), shape (*num, 2): counter i hashed under key."""
    shape = _shape(num)
    return _split_kernel(_key(key), math.prod(shape)).reshape(shape + (2,))


def fold_in(key, data) -> np.ndarray:
    """A new key from key and a 32-bit integer (data modulo 2**32): the hash of (0, data)."""
    return _fold_in_kernel(_key(key), int(data) & 0xFFFFFFFF)


def bits(key, shape=(), dtype=np.uint32) -> np.ndarray:
    """Random unsigned integers: uint8/16/32 are the low bits of the xor of the two hash
    words, uint64 joins the words (high, low). The default is uint32 (JAX's in x64 mode is
    uint64: pass dtype=np.uint64 for those numbers)."""
    shape, dtype, key = _shape(shape), np.dtype(dtype), _key(key)
    n = math.prod(shape)
    if dtype == np.uint64:
        return _bits64(key, n).reshape(shape)
    if dtype not in (np.uint8, np.uint16, np.uint32):
        raise TypeError(f"random.bits draws unsigned integers, not {dtype}")
    return _bits32(key, n).astype(dtype).reshape(shape)


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0) -> np.ndarray:
    """Uniform numbers in [minval, maxval): u * (maxval - minval) + minval, at least minval."""
    shape, dtype = _shape(shape), _float_dtype(dtype, "uniform")
    minval, maxval = np.asarray(minval, dtype), np.asarray(maxval, dtype)
    u = _unit(_key(key), shape, dtype)
    return np.maximum(minval, _scale(u, maxval - minval, minval))


def normal(key, shape=(), dtype=float) -> np.ndarray:
    """Standard normal numbers: sqrt(2) * erfinv(u), u uniform on (-1, 1), as JAX.

    Equal to JAX within an ulp or two, not promised bit for bit (XLA's float32 log is its own;
    measured: float32 5 of 1000 draws 1 ulp apart, float64 all equal); under Numba, whose log
    may differ from NumPy's, another ulp.
    """
    shape, dtype, key = _shape(shape), _float_dtype(dtype, "normal"), _key(key)
    n = math.prod(shape)
    if dtype == np.float32:
        return _blocked(_normal_of_unit_f32, _unit_f32(key, n)).reshape(shape)
    return _blocked(_normal_of_unit_f64, _unit_f64(key, n)).reshape(shape)


def exponential(key, shape=(), dtype=float) -> np.ndarray:
    """Exponential numbers of rate 1: -log1p(-u), with XLA's log1p; within an ulp or two of JAX
    (XLA's float32 log is its own)."""
    shape, dtype = _shape(shape), _float_dtype(dtype, "exponential")
    u = _unit(_key(key), shape, dtype).ravel()
    return -_blocked(_log1p_f32 if dtype == np.float32 else _log1p_f64, -u).reshape(shape)


def truncated_normal(key, lower, upper, shape=None, dtype=float) -> np.ndarray:
    """Normal numbers in the open interval (lower, upper), by inverting the CDF as JAX does.

    Within a few ulp of JAX times the conditioning of erfinv (math.erf is not XLA's erf).
    """
    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = np.asarray(lower, dtype), np.asarray(upper, dtype)
    shape = np.broadcast_shapes(lower.shape, upper.shape) if shape is None else _shape(shape)
    root2 = dtype.type(math.sqrt(2.0))
    erf = np.vectorize(math.erf, otypes=[np.float64])
    a, b = erf(lower / root2).astype(dtype), erf(upper / root2).astype(dtype)
    u = np.maximum(a, _scale(_unit(_key(key), shape, dtype), b - a, a))
    out = root2 * (_erfinv_f32(u) if dtype == np.float32 else _erfinv_f64(u))
    return np.clip(out, np.nextafter(lower, dtype.type(np.inf)), np.nextafter(upper, dtype.type(-np.inf)))


def bernoulli(key, p=0.5, shape=None) -> np.ndarray:
    """Booleans, True with probability p: uniform(key, shape, p's dtype) < p."""
    p = np.asarray(p)
    if p.dtype.kind != "f":
        raise TypeError(f"random.bernoulli's p must be a float, not {p.dtype}")
    shape = p.shape if shape is None else _shape(shape)
    return uniform(key, shape, p.dtype) < p


def randint(key, shape, minval, maxval, dtype=int) -> np.ndarray:
    """Integers in [minval, maxval), as JAX: two draws of the dtype's width (the keys of a
    split) reduced modulo the span (slightly biased unless the span is a power of two)."""
    shape, dtype, key = _shape(shape), np.dtype(dtype), _key(key)
    if dtype.kind not in "iu":
        raise TypeError(f"random.randint draws integers, not {dtype}")
    sample = dtype if dtype.itemsize >= 4 else np.dtype(np.int32 if dtype.kind == "i" else np.uint32)
    info = np.iinfo(sample)
    unsigned = np.dtype(f"uint{sample.itemsize * 8}")
    minval, maxval = np.asarray(minval), np.asarray(maxval)
    if dtype.itemsize < 4:  # JAX samples 8- and 16-bit integers in 32 bits, clipped to the dtype
        minval = np.clip(minval, np.iinfo(dtype).min, np.iinfo(dtype).max)
        maxval = np.clip(maxval, np.iinfo(dtype).min, np.iinfo(dtype).max + 1)
    too_high = maxval > info.max
    lo = np.clip(minval, info.min, info.max).astype(sample)
    hi = np.clip(maxval, info.min, info.max).astype(sample)
    k1, k2 = split(key)
    n = math.prod(shape)
    draw = _bits64 if unsigned == np.uint64 else _bits32
    higher = draw(k1, n).astype(unsigned).reshape(shape)
    lower = draw(k2, n).astype(unsigned).reshape(shape)
    with np.errstate(over="ignore"):  # unsigned arithmetic wraps, as XLA's
        span = np.where(hi <= lo, 1, (hi - lo).astype(unsigned)).astype(unsigned)
        span = np.where(too_high & (maxval > minval), span + unsigned.type(1), span).astype(unsigned)
        safe = np.where(span == 0, unsigned.type(1), span)  # span 0 (all values): x % 2**bits is x
        multiplier = unsigned.type(2 ** (unsigned.itemsize * 4)) % safe
        multiplier = (multiplier * multiplier) % safe
        offset = (higher % safe) * multiplier + lower % safe
        offset = np.where(span == 0, lower, offset % safe)
        return (lo + offset.astype(sample)).astype(dtype)


def permutation(key, x) -> np.ndarray:
    """A random permutation of range(x) (an int) or of the rows of the array x (axis 0)."""
    key = _key(key)
    if np.ndim(x) == 0:
        return _permutation_kernel(key, int(x))
    x = np.asarray(x)
    return x[_permutation_kernel(key, x.shape[0])]


def categorical(key, logits, axis=-1, shape=None) -> np.ndarray:
    """Indices drawn with probabilities softmax(logits) along axis: the Gumbel-max trick,
    argmax(logits - log(-log(u))), u uniform in [tiny, 1), as JAX's mode "low"."""
    logits = np.asarray(logits)
    dtype = logits.dtype if logits.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    axis = axis % logits.ndim
    batch = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch if shape is None else _shape(shape)
    prefix = shape[:len(shape) - len(batch)]
    drawn = shape[len(prefix):len(prefix) + axis] + (logits.shape[axis],) + shape[len(prefix) + axis:]
    tiny = np.finfo(dtype).tiny
    u = uniform(key, prefix + drawn, dtype, tiny, 1.0)
    gumbel = -np.log(-np.log(u))
    return np.argmax(gumbel + logits.astype(dtype), axis=len(prefix) + axis)
