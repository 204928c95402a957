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
gives (on the Python path hashing each counter under all the keys at once: the private forms
below take a batch of keys), and CUDA kernels draw per thread (runtime/kernels.py).

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

from .xla import (  # noqa: F401 - runtime/kernels.py and the overloads read them here
    _fma32, _fma64, _ERFINV_F32, _ERFINV_F64, _F32_A, _F32_B, _F64_A, _F64_B, _F64_C, _horner32, _horner64, _LOG1P_P,
    _LOG1P_Q, _LOG1P_P32, _LOG1P_Q32, _log1p_f32, _log1p_f64, _erfinv_f32, _erfinv_f64)

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


def _f32_of_bits(bits):
    """[0, 1) with 23 random mantissa bits: JAX sets them in 1.m and subtracts 1; the same
    number is m * 2**-23, which needs no bit casting (per-thread CUDA code has none)."""
    return (bits >> np.uint64(9)).astype(np.float32) * np.float32(2.0**-23)


def _f64_of_bits(bits):
    return (bits >> np.uint64(12)).astype(np.float64) * 2.0**-52


def _unit_f32(key, n):
    return _f32_of_bits(_bits32(key, n))


def _unit_f64(key, n):
    return _f64_of_bits(_bits64(key, n))


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


# The public functions check their key and call the private ones, which also take a batch of
# keys, shape (k, 2), and draw for each at once (k, *shape): s2s.vmap's batching of a draw over
# keys (runtime/batching.py). Key i of a batch gives what the public function gives for it.

def _words(key, n):
    """_hash_counters of one key, or of each key of a batch ((k, n) arrays): in blocks of
    counters, each block hashed under all keys at once."""
    if key.ndim == 1:
        return _hash_counters(key, n)
    k = key.shape[0]
    y0, y1 = np.empty((k, n), np.uint32), np.empty((k, n), np.uint32)
    step = max(1, _BLOCK // max(1, k))
    for start in range(0, n, step):
        stop = min(n, start + step)
        i = np.arange(start, stop, dtype=np.uint64)
        x0 = np.repeat((i >> _32).astype(np.uint32)[None, :], k, axis=0)
        x1 = np.repeat((i & _MASK).astype(np.uint32)[None, :], k, axis=0)
        y0[:, start:stop], y1[:, start:stop] = _threefry_blocks(key[:, :1], key[:, 1:], x0, x1)
    return y0, y1


def _bits_of(key, n, wide):
    """_bits64 (wide) or _bits32 of one key or of a batch."""
    y0, y1 = _words(key, n)
    return (y0.astype(np.uint64) << _32) | y1.astype(np.uint64) if wide else y0 ^ y1


def _unit(key, shape, dtype):
    n, lead = math.prod(shape), key.shape[:-1]
    if dtype == np.float32:
        return _f32_of_bits(_bits_of(key, n, False)).reshape(lead + shape)
    return _f64_of_bits(_bits_of(key, n, True)).reshape(lead + shape)


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
    return _split(_key(key), num)


def _split(key, num=2):
    shape = _shape(num)
    y0, y1 = _words(key, math.prod(shape))
    return np.stack([y0, y1], axis=-1).reshape(key.shape[:-1] + shape + (2,))


def fold_in(key, data) -> np.ndarray:
    """A new key from key and a 32-bit integer (data modulo 2**32): the hash of (0, data)."""
    return _fold_in_kernel(_key(key), int(data) & 0xFFFFFFFF)


def _fold_in(key, data):
    """fold_in of a batch of keys (k, 2) and data (a number, or k of them)."""
    data = np.asarray(data).astype(np.uint64) & _MASK  # (negative data: modulo 2**32, as int(data) & mask)
    y0, y1 = threefry2x32(key[:, 0].astype(np.uint64), key[:, 1].astype(np.uint64), np.uint64(0), data)
    return np.stack([y0, y1], axis=-1).astype(np.uint32)


def bits(key, shape=(), dtype=np.uint32) -> np.ndarray:
    """Random unsigned integers: uint8/16/32 are the low bits of the xor of the two hash
    words, uint64 joins the words (high, low). The default is uint32 (JAX's in x64 mode is
    uint64: pass dtype=np.uint64 for those numbers)."""
    return _bits(_key(key), shape, dtype)


def _bits(key, shape=(), dtype=np.uint32):
    shape, dtype = _shape(shape), np.dtype(dtype)
    n, lead = math.prod(shape), key.shape[:-1]
    if dtype == np.uint64:
        return _bits_of(key, n, True).reshape(lead + shape)
    if dtype not in (np.uint8, np.uint16, np.uint32):
        raise TypeError(f"random.bits draws unsigned integers, not {dtype}")
    return _bits_of(key, n, False).astype(dtype).reshape(lead + shape)


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0) -> np.ndarray:
    """Uniform numbers in [minval, maxval): u * (maxval - minval) + minval, at least minval."""
    return _uniform(_key(key), shape, dtype, minval, maxval)


def _uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    shape, dtype = _shape(shape), _float_dtype(dtype, "uniform")
    minval, maxval = np.asarray(minval, dtype), np.asarray(maxval, dtype)
    u = _unit(key, shape, dtype)
    return np.maximum(minval, _scale(u, maxval - minval, minval))


def normal(key, shape=(), dtype=float) -> np.ndarray:
    """Standard normal numbers: sqrt(2) * erfinv(u), u uniform on (-1, 1), as JAX.

    Equal to JAX within an ulp or two, not promised bit for bit (XLA's float32 log is its own;
    measured: float32 5 of 1000 draws 1 ulp apart, float64 all equal); under Numba, whose log
    may differ from NumPy's, another ulp.
    """
    return _normal(_key(key), shape, dtype)


def _normal(key, shape=(), dtype=float):
    shape, dtype = _shape(shape), _float_dtype(dtype, "normal")
    u = _unit(key, shape, dtype)
    return _blocked(_normal_of_unit_f32 if dtype == np.float32 else _normal_of_unit_f64, u.ravel()).reshape(u.shape)


def exponential(key, shape=(), dtype=float) -> np.ndarray:
    """Exponential numbers of rate 1: -log1p(-u), with XLA's log1p; within an ulp or two of JAX
    (XLA's float32 log is its own)."""
    return _exponential(_key(key), shape, dtype)


def _exponential(key, shape=(), dtype=float):
    shape, dtype = _shape(shape), _float_dtype(dtype, "exponential")
    u = _unit(key, shape, dtype)
    return -_blocked(_log1p_f32 if dtype == np.float32 else _log1p_f64, -u.ravel()).reshape(u.shape)


def truncated_normal(key, lower, upper, shape=None, dtype=float) -> np.ndarray:
    """Normal numbers in the open interval (lower, upper), by inverting the CDF as JAX does.

    Within a few ulp of JAX times the conditioning of erfinv (math.erf is not XLA's erf).
    """
    return _truncated_normal(_key(key), lower, upper, shape, dtype)


def _truncated_normal(key, lower, upper, shape=None, dtype=float):
    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = np.asarray(lower, dtype), np.asarray(upper, dtype)
    shape = np.broadcast_shapes(lower.shape, upper.shape) if shape is None else _shape(shape)
    root2 = dtype.type(math.sqrt(2.0))
    erf = np.vectorize(math.erf, otypes=[np.float64])
    a, b = erf(lower / root2).astype(dtype), erf(upper / root2).astype(dtype)
    u = np.maximum(a, _scale(_unit(key, shape, dtype), b - a, a))
    out = root2 * (_erfinv_f32(u) if dtype == np.float32 else _erfinv_f64(u))
    return np.clip(out, np.nextafter(lower, dtype.type(np.inf)), np.nextafter(upper, dtype.type(-np.inf)))


def bernoulli(key, p=0.5, shape=None) -> np.ndarray:
    """Booleans, True with probability p: uniform(key, shape, p's dtype) < p."""
    return _bernoulli(_key(key), p, shape)


def _bernoulli(key, p=0.5, shape=None):
    p = np.asarray(p)
    if p.dtype.kind != "f":
        raise TypeError(f"random.bernoulli's p must be a float, not {p.dtype}")
    shape = p.shape if shape is None else _shape(shape)
    return _uniform(key, shape, p.dtype) < p


def randint(key, shape, minval, maxval, dtype=int) -> np.ndarray:
    """Integers in [minval, maxval), as JAX: two draws of the dtype's width (the keys of a
    split) reduced modulo the span (slightly biased unless the span is a power of two)."""
    return _randint(_key(key), shape, minval, maxval, dtype)


def _randint(key, shape, minval, maxval, dtype=int):
    shape, dtype, lead = _shape(shape), np.dtype(dtype), key.shape[:-1]
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
    keys = _split(key)
    n, wide = math.prod(shape), unsigned == np.uint64
    higher = _bits_of(keys[..., 0, :], n, wide).astype(unsigned).reshape(lead + shape)
    lower = _bits_of(keys[..., 1, :], n, wide).astype(unsigned).reshape(lead + shape)
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
    return _permutation(_key(key), x)


def _permutation(key, x):
    if key.ndim == 1:
        order = _permutation_kernel(key, int(x) if np.ndim(x) == 0 else np.shape(x)[0])
        return order if np.ndim(x) == 0 else np.asarray(x)[order]
    n = int(x) if np.ndim(x) == 0 else np.shape(x)[0]  # a batch of keys: _permutation_kernel's rounds for each
    rounds = int(math.ceil(3 * math.log(max(1, n)) / math.log(4294967295.0)))
    order = np.broadcast_to(np.arange(n), key.shape[:-1] + (n,))
    for _ in range(rounds):
        keys = _split(key, 2)
        key = keys[..., 0, :]
        sort_keys = _bits_of(keys[..., 1, :], n, False)
        order = np.take_along_axis(order, np.argsort(sort_keys, axis=-1, kind="mergesort"), axis=-1)
    return np.array(order) if np.ndim(x) == 0 else np.asarray(x)[order]


def categorical(key, logits, axis=-1, shape=None) -> np.ndarray:
    """Indices drawn with probabilities softmax(logits) along axis: the Gumbel-max trick,
    argmax(logits - log(-log(u))), u uniform in [tiny, 1), as JAX's mode "low"."""
    return _categorical(_key(key), logits, axis, shape)


def _categorical(key, logits, axis=-1, shape=None):
    logits = np.asarray(logits)
    dtype = logits.dtype if logits.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    axis = axis % logits.ndim
    batch = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch if shape is None else _shape(shape)
    prefix = shape[:len(shape) - len(batch)]
    drawn = shape[len(prefix):len(prefix) + axis] + (logits.shape[axis],) + shape[len(prefix) + axis:]
    tiny = np.finfo(dtype).tiny
    u = _uniform(key, prefix + drawn, dtype, tiny, 1.0)  # (a batch of keys: its axis first)
    gumbel = -np.log(-np.log(u))
    return np.argmax(gumbel + logits.astype(dtype), axis=key.ndim - 1 + len(prefix) + axis)
