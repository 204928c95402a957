"""s2s.random: JAX's numbers (stored), Numba equal to NumPy, derivatives through draws, vmap of keys.

The reference values in data/random_jax.json were written by JAX 0.10.2 (CPU, x64 mode, default
jax_threefry_partitionable=True) with
    /tmp/jaxenv/bin/python tests/data/make_random_jax.py
(the script lists each call). JAX is not needed to run these tests.
"""

import json
import os

import numpy as np
import pytest
from numba import cuda  # a module global: the CUDA simulator swaps in its own where a kernel reads it

import s2s
import s2s as jax  # what a user porting JAX code writes: jax.random.normal must resolve
from finite_differences import central_difference_grad
from s2s import random

with open(os.path.join(os.path.dirname(__file__), "data", "random_jax.json")) as _handle:
    JAX = json.load(_handle)

K0, K42, BIG = random.PRNGKey(0), random.PRNGKey(42), random.PRNGKey(2**40 + 5)


def ulps(got, want):
    got, want = np.asarray(got), np.asarray(want, got.dtype).reshape(got.shape)
    return np.max(np.abs(got - want) / np.spacing(np.abs(want).astype(got.dtype)))


# ---- bit for bit: keys, split, fold_in, bits, uniform and what integer logic makes of them ----


def test_keys_equal_jax():
    for seed, words in JAX["PRNGKey"].items():
        key = random.PRNGKey(int(seed))
        assert key.dtype == np.uint32 and key.tolist() == words, seed
        assert random.key(int(seed)).tolist() == words


@pytest.mark.parametrize("name, call", [
    ("split_0", lambda: random.split(K0)),
    ("split_42_3", lambda: random.split(K42, 3)),
    ("split_big_2x3", lambda: random.split(BIG, (2, 3))),
    ("fold_in_0_7", lambda: random.fold_in(K0, 7)),
    ("fold_in_42_max", lambda: random.fold_in(K42, 2**32 - 1)),
    ("bits_u32_0_5", lambda: random.bits(K0, (5,))),
    ("bits_u32_42_2x3", lambda: random.bits(K42, (2, 3))),
    ("bits_u32_scalar", lambda: random.bits(K42)),
    ("bits_u8_42_7", lambda: random.bits(K42, (7,), np.uint8)),
    ("bits_u16_42_7", lambda: random.bits(K42, (7,), np.uint16)),
    ("bits_u64_42_4", lambda: random.bits(K42, (4,), np.uint64)),
    ("randint_i64_42_10_m5_17", lambda: random.randint(K42, (10,), -5, 17)),
    ("randint_i32_0_10_0_1000", lambda: random.randint(K0, (10,), 0, 1000, np.int32)),
    ("randint_i64_0_6_0_2p40", lambda: random.randint(K0, (6,), 0, 2**40)),
    ("randint_i64_42_4_full", lambda: random.randint(K42, (4,), -(2**63), 2**63 - 1)),
    ("randint_i32_42_4_full", lambda: random.randint(K42, (4,), -(2**31), 2**31 - 1, np.int32)),
    ("randint_i32_42_4_above", lambda: random.randint(K42, (4,), 0, 2**31, np.int32)),
    ("randint_i64_42_3_empty", lambda: random.randint(K42, (3,), 5, 5)),
    ("bernoulli_f64_42_10_03", lambda: random.bernoulli(K42, 0.3, (10,))),
    ("bernoulli_f32_42_10_07", lambda: random.bernoulli(K42, np.float32(0.7), (10,))),
    ("permutation_42_10", lambda: random.permutation(K42, 10)),
    ("permutation_0_2000_head", lambda: random.permutation(K0, 2000)[:20]),  # two sorting rounds
    ("permutation_42_rows", lambda: random.permutation(K42, np.arange(12).reshape(4, 3))),
    ("categorical_42_12", lambda: random.categorical(K42, np.log(np.array([0.1, 0.2, 0.3, 0.4])), shape=(12,))),
    ("categorical_0_rows", lambda: random.categorical(K0, np.log(np.array([[0.5, 0.5, 1e-3], [0.1, 0.8, 0.1]])))),
])
def test_integers_equal_jax(name, call):
    got = call()
    assert np.array_equal(got, np.array(JAX[name])), (got, JAX[name])


@pytest.mark.parametrize("name, call, dtype", [
    ("uniform_f32_0_7", lambda: random.uniform(K0, (7,), np.float32), np.float32),
    ("uniform_f64_0_7", lambda: random.uniform(K0, (7,)), np.float64),
    ("uniform_f32_42_2x3_m2_3", lambda: random.uniform(K42, (2, 3), np.float32, -2.0, 3.0), np.float32),
    ("uniform_f64_42_2x3_m2_3", lambda: random.uniform(K42, (2, 3), np.float64, -2.0, 3.0), np.float64),
    ("uniform_f64_scalar", lambda: random.uniform(BIG), np.float64),
])
def test_uniform_equals_jax_bit_for_bit(name, call, dtype):
    got = call()
    assert got.dtype == dtype
    assert np.array_equal(got.ravel(), np.array(JAX[name], dtype)), (got, JAX[name])


@pytest.mark.parametrize("name, call, max_ulps", [
    # measured: float32 5 of 1000 draws differ, by 1 ulp (XLA's float32 log); float64 none
    ("normal_f32_0_1000", lambda: random.normal(K0, (1000,), np.float32), 2),
    ("normal_f64_0_1000", lambda: random.normal(K0, (1000,)), 2),
    ("normal_f64_42_2x3", lambda: random.normal(K42, (2, 3)), 2),
    ("exponential_f64_42_6", lambda: random.exponential(K42, (6,)), 4),
    ("exponential_f32_42_6", lambda: random.exponential(K42, (6,), np.float32), 4),
    ("truncated_normal_f64_42_6", lambda: random.truncated_normal(K42, -1.0, 2.0, (6,)), 4),
    ("truncated_normal_f32_42_6", lambda: random.truncated_normal(K42, -1.0, 2.0, (6,), np.float32), 4),
])
def test_floats_within_ulps_of_jax(name, call, max_ulps):
    got = call()
    assert ulps(got, JAX[name]) <= max_ulps
    # and not only near: most of them are the same numbers
    assert np.mean(got.ravel() == np.array(JAX[name], got.dtype)) > 0.99


def test_threefry_known_answer():
    """The Random123 known-answer vector of Threefry-2x32-20: key and counter of all ones bits
    pattern (0xffffffff) hash to (0x1cb996fc, 0xbb002be7)."""
    y0, y1 = random.threefry2x32(np.uint32(0xFFFFFFFF), np.uint32(0xFFFFFFFF),
                                 np.uint32(0xFFFFFFFF), np.uint32(0xFFFFFFFF))
    assert (int(y0), int(y1)) == (0x1CB996FC, 0xBB002BE7)


def test_statistics():
    z = random.normal(random.PRNGKey(7), (100_000,))
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1.0) < 0.02
    u = random.uniform(random.PRNGKey(8), (100_000,), np.float32)
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    t = random.truncated_normal(random.PRNGKey(9), -1.0, 2.0, (10_000,))
    assert t.min() > -1.0 and t.max() < 2.0


def test_refuses_bad_keys():
    with pytest.raises(TypeError, match="uint32 array of shape"):
        random.normal(np.array([0, 1]), (3,))


# ---- Numba: the overloads compute what NumPy computes --------------------------------------


def all_draws(key):
    """One of each draw: run as it is (NumPy) and compiled by numba.njit (the overloads). The
    float draws outnumber a compiled block (4096 draws): the blocks' counters continue."""
    k1, k2 = random.split(key)[0], random.split(key, 3)[2]
    return (random.PRNGKey(2**40 + 5), random.split(key, (2, 3)), random.fold_in(key, 7),
            random.bits(k1, (5,)), random.bits(k1, (2, 2), np.uint64), random.uniform(k2, (4100,), np.float32),
            random.uniform(k2, (4100,), np.float64, -2.0, 3.0), random.uniform(k2),
            random.normal(k1, (5000,)), random.normal(k1, (9000,), np.float32), random.exponential(k2, (2050, 2)),
            random.bernoulli(k1, 0.3, (10,)), random.permutation(k2, 30),
            random.truncated_normal(k1, -1.0, 2.0, (6,)),
            random.randint(k2, (7,), -5, 17), random.randint(k1, 4, -(2**31), 2**31, np.int32),
            random.randint(k1, (), 0, 10), random.categorical(k2, np.log(np.arange(1.0, 5.0)), shape=(9,)),
            random.bernoulli(k2, np.linspace(0.1, 0.9, 6).reshape(2, 3)),
            random.bernoulli(k1, np.linspace(0.1, 0.9, 3).astype(np.float32), (4, 3)))


def test_numba_equals_numpy():
    import numba

    s2s.runtime.overloads.register_numba()
    compiled = numba.njit(all_draws)(K42)
    plain = all_draws(K42)
    assert len(compiled) == len(plain) == 20
    for k, (c, p) in enumerate(zip(compiled, plain)):
        c, p = np.asarray(c), np.asarray(p)  # a draw of shape (): a number from Numba, np.float64 from NumPy
        assert c.dtype == p.dtype and c.shape == p.shape, k
        if k in (8, 9, 10, 13):  # Numba's log (libm's) is not NumPy's: an ulp
            assert ulps(c, p) <= 4, k
        else:
            assert np.array_equal(c, p), k


# ---- under the transforms: draws are constants ---------------------------------------------


def second_moment(mu, sigma, key):
    z = mu + sigma * s2s.random.normal(key, (1000,))
    return np.mean(z**2)


def second_moment_jax_names(mu, sigma, key):
    key, sub = jax.random.split(key)
    z = mu + sigma * jax.random.normal(sub, (1000,))
    return np.mean(z**2)


def second_moment_imported(mu, sigma, key):
    eps = random.normal(random.fold_in(key, 3), (1000,))
    return np.mean((mu + sigma * eps) ** 2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun, eps_of", [
    (second_moment, lambda key: random.normal(key, (1000,))),
    (second_moment_jax_names, lambda key: random.normal(random.split(key)[1], (1000,))),
    (second_moment_imported, lambda key: random.normal(random.fold_in(key, 3), (1000,))),
])
def test_reparameterisation_gradient(backend, fun, eps_of):
    key, mu, sigma = random.PRNGKey(5), 0.3, 1.7
    eps = eps_of(key)
    closed = (np.mean(2 * (mu + sigma * eps)), np.mean(2 * (mu + sigma * eps) * eps))
    grad = s2s.jit(s2s.grad(fun, argnums=(0, 1)), backend=backend)
    got = grad(mu, sigma, key)
    tol = 1e-12 if backend == "python" else 1e-9  # Numba's normal: an ulp or two from NumPy's
    np.testing.assert_allclose(got, closed, rtol=tol)
    for k in (0, 1):
        fd = central_difference_grad(fun, (mu, sigma, key), k)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6)


def moment_at_key(mu, sigma):
    """Forward mode in mu and sigma, with a key made inside the transformed code."""
    return second_moment(mu, sigma, random.PRNGKey(5))


def moment_tangent(mu, sigma):
    return s2s.jvp(moment_at_key, (mu, sigma), (1.0, 0.5))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_reparameterisation_jvp(backend):
    mu, sigma = 0.3, 1.7
    eps = random.normal(random.PRNGKey(5), (1000,))
    closed = np.mean(2 * (mu + sigma * eps)) * 1.0 + np.mean(2 * (mu + sigma * eps) * eps) * 0.5
    out, tangent = s2s.jit(moment_tangent, backend=backend)(mu, sigma)
    np.testing.assert_allclose(out, np.mean((mu + sigma * eps) ** 2), rtol=1e-9)
    np.testing.assert_allclose(tangent, closed, rtol=1e-9)
    h = 1e-6
    fd = (moment_at_key(mu + h, sigma + 0.5 * h) - moment_at_key(mu - h, sigma - 0.5 * h)) / (2 * h)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)


def uniform_shifted(lo, key):
    return np.sum(random.uniform(key, (3,), minval=lo, maxval=lo + 1.0))


def test_bounds_of_uniform_are_refused_when_differentiated():
    with pytest.raises(s2s.S2SError, match="minval"):
        s2s.grad(uniform_shifted)(0.5, random.PRNGKey(0))


# ---- vmap over keys equals a loop over the keys --------------------------------------------


def noisy(key, mu):
    return mu + random.normal(key, (3,)) * random.uniform(random.fold_in(key, 1), (3,), np.float32)


def indexed_noise(i, key, scale):
    return scale * random.normal(random.fold_in(key, i), (4,))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_vmap_over_fold_in_data(backend):
    """The JAX idiom vmap(lambda i: normal(fold_in(key, i))): the key shared, the data batched."""
    key, index = random.PRNGKey(2), np.arange(6)
    got = s2s.jit(s2s.vmap(indexed_noise, in_axes=(0, None, None)), backend=backend)(index, key, 0.5)
    loop = np.stack([indexed_noise(i, key, 0.5) for i in index])
    np.testing.assert_allclose(got, loop, rtol=0 if backend == "python" else 1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_vmap_over_keys(backend):
    keys = random.split(random.PRNGKey(11), 5)
    got = s2s.jit(s2s.vmap(noisy, in_axes=(0, None)), backend=backend)(keys, 2.0)
    loop = np.stack([noisy(k, 2.0) for k in keys])
    if backend == "python":
        assert np.array_equal(got, loop)
    else:
        np.testing.assert_allclose(got, loop, rtol=1e-14)


def every_draw(key, data, p):  # each draw (runtime/batching.py draws them for all keys at once)
    k = random.fold_in(key, 3)
    return (random.split(key, (2, 3)), random.fold_in(key, data), k, random.bits(key, (4,)),
            random.bits(key, (), np.uint64), random.uniform(key, (2, 2), np.float32, -1.0, 2.0),
            random.uniform(key), random.normal(k, (5,)), random.normal(key, (), np.float32),
            random.exponential(key, (3,)), random.exponential(key, (), np.float32),
            random.truncated_normal(key, -1.0, 0.5, (3,)), random.truncated_normal(key, 0.0, 2.0, None, np.float32),
            random.bernoulli(key, 0.3, (4,)), random.bernoulli(key, np.float32(0.6)),
            random.randint(key, (3,), -4, 9), random.randint(key, (), -(2**62), 2**62, np.int64),
            random.randint(key, (2,), 0, 2**31 - 1, np.int32), random.categorical(key, p),
            random.categorical(key, np.stack([p, p[::-1]]), 1, (3, 2)), random.permutation(key, 5),
            random.permutation(k, 1700)[:20], random.permutation(key, np.stack([p, p * 2.0])))


def test_vmap_draws_all_keys_at_once_bit_for_bit():
    """vmap over keys (and fold_in's data) on the python path hashes each counter under all
    keys at once: bit for bit what each key gives alone."""
    keys, data = random.split(random.PRNGKey(4), 7), np.arange(7) - 3  # (negative data: modulo 2**32)
    logits = np.linspace(-1.0, 1.0, 4)
    got = s2s.vmap(every_draw, in_axes=(0, 0, None))(keys, data, logits)
    for j, leaf in enumerate(got):
        want = np.stack([np.asarray(every_draw(k, d, logits)[j]) for k, d in zip(keys, data)])
        assert leaf.dtype == want.dtype and leaf.shape == want.shape, j
        np.testing.assert_array_equal(leaf, want, err_msg=f"draw {j}")
    shared = s2s.vmap(every_draw, in_axes=(None, 0, None))(keys[0], data, logits)  # the key shared
    np.testing.assert_array_equal(shared[1], np.stack([random.fold_in(keys[0], d) for d in data]))
    assert np.all(shared[3] == shared[3][:1])  # (the same key: the same bits for every example)


def test_batch_forms_refuse_a_batch_of_keys_publicly():
    """The public functions still take one key: a batch is for s2s.vmap."""
    with pytest.raises(TypeError, match="use s2s.vmap"):
        random.normal(random.split(random.PRNGKey(0), 3))


def test_docstring_examples():
    import doctest

    import s2s.random

    assert doctest.testmod(s2s.random).failed == 0


def sine_sum(theta, key):
    eps = random.normal(key, (50,))
    return np.sum(np.sin(theta[0] + theta[1] * eps))


def test_hessian_through_draws():
    """Second order transforms the generated code again: its runtime.random call resolves too."""
    key, theta = random.PRNGKey(1), np.array([0.3, 0.7])
    eps = random.normal(key, (50,))
    s = -np.sin(theta[0] + theta[1] * eps)
    closed = np.array([[s.sum(), (s * eps).sum()], [(s * eps).sum(), (s * eps * eps).sum()]])
    np.testing.assert_allclose(s2s.hessian(sine_sum)(theta, key), closed, rtol=1e-12)


def test_keys_are_not_differentiated():
    with pytest.raises(s2s.S2SError):
        s2s.grad(sine_sum, argnums=1)(np.array([0.3, 0.7]), random.PRNGKey(1))


# ---- the core is a function of numbers: per-element loops and CUDA threads ----------------


def test_threefry_of_numbers_under_numba():
    """One element at a time, as a kernel's thread would: element i of bits hashes (0, i)."""
    import numba

    s2s.runtime.overloads.register_numba()

    @numba.njit
    def bits_by_loop(k0, k1, n):
        out = np.empty(n, np.uint32)
        for i in range(n):
            y0, y1 = random.threefry2x32(k0, k1, np.uint32(0), np.uint32(i))
            out[i] = np.uint32(y0 ^ y1)
        return out

    assert np.array_equal(bits_by_loop(K42[0], K42[1], 9), random.bits(K42, (9,)))


def test_threefry_in_a_cuda_kernel_simulated():
    """In Numba's CUDA simulator (conftest.py selects it for the suite), or on a GPU where one
    runs the suite with NUMBA_ENABLE_CUDASIM=0: the same bits from a thread per element.
    (Kernels drawing random numbers are also compiled to PTX: tests/test_cuda.py.)"""
    if not cuda.is_available():  # (only with NUMBA_ENABLE_CUDASIM=0 on a machine without a GPU)
        pytest.skip("no simulator and no GPU: run with NUMBA_ENABLE_CUDASIM=1, as tests/conftest.py does")
    out = np.zeros(9, np.uint64)
    _bits_kernel()[1, 16](K42, out)
    assert np.array_equal(out.astype(np.uint32), random.bits(K42, (9,)))


def _bits_kernel():
    hash_device = cuda.jit(device=True)(random.threefry2x32)

    @cuda.jit
    def kernel(key, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            y0, y1 = hash_device(key[0], key[1], np.uint64(0), np.uint64(i))
            out[i] = y0 ^ y1

    return kernel


# ---- a permutation of a differentiated array, and the NumPy path's blocks -----------------------


def weighted_permutation(x, key):  # permutation(key, x) moves x's elements: not a constant of x
    return np.sum(random.permutation(key, x) * np.arange(x.shape[0]))


def weighted_indexed_permutation(x, key):  # the way out the refusal names
    return np.sum(x[random.permutation(key, x.shape[0])] * np.arange(x.shape[0]))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_permutation_of_a_differentiated_array_is_refused_not_a_zero_gradient(backend):
    """grad of sum(permutation(key, x) * w) is not 0 (as if the draw were a constant of x): an
    S2SError at the call names the indexed form, whose gradient is w permuted back."""
    x, key = np.array([0.3, -1.2, 0.7, 2.0]), random.PRNGKey(3)
    wrap = (lambda g: s2s.jit(g)) if backend == "cpu" else (lambda g: g)
    with pytest.raises(s2s.S2SError, match=r"x\[random.permutation\(key, x.shape\[0\]\)\]"):
        wrap(s2s.grad(weighted_permutation))(x, key)
    if backend == "python":  # (the way out, against differences; compiled it costs 15 s)
        want = central_difference_grad(weighted_indexed_permutation, (x, key), 0)
        assert np.abs(want).max() > 0.5
        np.testing.assert_allclose(s2s.grad(weighted_indexed_permutation)(x, key), want, atol=1e-6)


# (s2s.random's NumPy path, in uint32 blocks: the same bits as the reference hash)


def test_blocked_random_draws_equal_the_whole_array_kernels():
    from s2s import random as R

    key = R.PRNGKey(7)
    n = 3 * R._BLOCK + 11  # several blocks and a partial one
    i = np.arange(n, dtype=np.uint64)
    y0, y1 = R.threefry2x32(key[0], key[1], i >> np.uint64(32), i & np.uint64(0xFFFFFFFF))  # the uint64 form
    np.testing.assert_array_equal(R.bits(key, (n,)), (y0 ^ y1).astype(np.uint32))
    np.testing.assert_array_equal(R.bits(key, (n,), np.uint64), (y0 << np.uint64(32)) | y1)
    for dtype, whole in ((np.float64, R._normal_f64), (np.float32, R._normal_f32)):
        np.testing.assert_array_equal(R.normal(key, (n,), dtype).view(np.uint8), whole(key, n).view(np.uint8))
    np.testing.assert_array_equal(R.exponential(key, (n,)), -R._log1p_f64(-R._unit_f64(key, n)))
