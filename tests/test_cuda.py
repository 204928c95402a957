"""s2s.jit(s2s.vmap(f), backend="cuda"): kernels checked against the cpu backend and closed forms.

The kernels run in Numba's CUDA simulator: conftest.py sets NUMBA_ENABLE_CUDASIM=1 for the
suite before Numba is imported (with NUMBA_ENABLE_CUDASIM=0 on a machine with a GPU, the same
tests run on the GPU, with tolerances in place of exact agreement). The simulator runs kernels
as Python, so it accepts code the real compiler rejects: test_ptx compiles every kernel of
cuda_cases.CASES to PTX for sm_90 in a subprocess without the simulator (no GPU needed, only
the NVVM of numba-cuda[cu12]).

The cuda extra (numba-cuda) is part of the test extra: without it these tests fail, they do
not skip.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import s2s
import cuda_cases
from cuda_cases import CASES, REFUSED
from sampling import compiled_sample

from numba.core import config
from s2s.rules import SAME_SPELLING, facts
from s2s.tree_util import pytree

SIMULATED = bool(config.ENABLE_CUDASIM)


def test_numba_cuda_is_installed():
    from s2s.backends import cuda as cuda_backend

    assert cuda_backend.cuda_module().implementation == "NVIDIA"


def _agree(got, want, exact=True):
    """Exact under the simulator against the cpu backend (both run the same libm on the same
    operations in the same order); on a GPU, libdevice and fused multiply-adds change the last
    bits, as NumPy's vectorised loops do against the python backend."""
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if exact and SIMULATED and np.asarray(want).dtype == np.float64:
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-11
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


# Compiling the cpu backend's reference (a parallel batched driver) costs more than simulating the
# kernel: every third case is checked bit for bit against it, the others against the python
# backend to the last bits (tests/sampling.py; S2S_FULL_JIT=1 compiles the reference for all).
CPU_REFERENCE = compiled_sample(CASES, 3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu_backend(name):
    make, args = CASES[name]
    got = s2s.jit(make(), backend="cuda")(*args())
    # The cpu backend cannot compile the float32 greeks (s * np.exp(<float64>) retypes s's
    # tape: "Cannot unify array(float32) and array(float64) for 's_tape'"): NumPy is the reference.
    # The cpu backend cannot compile float32 draws either (random.uniform(key, (), np.float32):
    # "No implementation of function uniform"): NumPy's s2s.random is the reference there.
    compiled = name in CPU_REFERENCE and name not in ("greeks_float32", "draws32")
    reference = "cpu" if compiled else "python"
    want = s2s.jit(make(), backend=reference)(*args())
    got_leaves, want_leaves = pytree.leaves(got), pytree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        if name == "rosen_value_and_grad" and np.ndim(g) == 1:
            # the value: Numba's (and vectorised NumPy's) differs from the simulator's scalar
            # Python in the last bit of one example, which equals rosen run in Python
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-15)
            if SIMULATED:
                np.testing.assert_array_equal(g, [cuda_cases.rosen(x) for x in args()[0]])
            continue
        _agree(g, w, exact=compiled)


def _normal_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def test_greeks_match_black_scholes():
    """Pathwise delta and vega of a call (s0 = 1, strike 1, rate 0, T = 1): their means agree
    with Black-Scholes within 4 standard errors."""
    s0, sigma = 1.0, 0.2
    z = np.random.default_rng(11).standard_normal((4000, 16))
    greeks = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.path_payoff, argnums=(0, 1)), in_axes=(None, None, 0)),
                     backend="cuda")
    delta, vega = greeks(s0, sigma, z)
    d1 = (math.log(s0) + 0.5 * sigma * sigma) / sigma
    for estimate, exact in ((delta, _normal_cdf(d1)), (vega, s0 * math.exp(-0.5 * d1 * d1) / math.sqrt(2 * math.pi))):
        standard_error = np.std(estimate) / math.sqrt(len(estimate))
        assert abs(np.mean(estimate) - exact) < 4 * standard_error, (np.mean(estimate), exact, standard_error)
    # and each path's gradient against central differences of its payoff (in the money paths)
    payoff = s2s.jit(s2s.vmap(cuda_cases.path_payoff, in_axes=(None, None, 0)), backend="cuda")
    h = 1e-6
    fd_delta = (payoff(s0 + h, sigma, z[:200]) - payoff(s0 - h, sigma, z[:200])) / (2 * h)
    fd_vega = (payoff(s0, sigma + h, z[:200]) - payoff(s0, sigma - h, z[:200])) / (2 * h)
    inside = payoff(s0, sigma, z[:200]) > 1e-4  # away from the kink at the strike
    np.testing.assert_allclose(delta[:200][inside], fd_delta[inside], rtol=1e-6)
    np.testing.assert_allclose(vega[:200][inside], fd_vega[inside], rtol=1e-5, atol=1e-8)


def test_float32_stays_float32():
    make, args = CASES["greeks_float32"]
    delta, vega = s2s.jit(make(), backend="cuda")(*args())
    assert delta.dtype == np.float32 and vega.dtype == np.float32


def test_source_is_the_kernel_module():
    make, args = CASES["greeks"]
    greeks = s2s.jit(make(), backend="cuda")
    greeks(*args())
    text = s2s.source(greeks)
    assert "@cuda.jit(device=True)\ndef path_payoff_vjp(" in text
    assert "@cuda.jit\ndef path_payoff_grad_kernel(" in text
    assert "cuda.grid(1)" in text and "cuda.gridsize(1)" in text
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "math.exp(" in code and "math.sqrt(" in code and "np." not in code
    # runtime helpers only where numba-cuda has an overload of them (for numbers: Facts.kernel)
    helpers = set(re.findall(r"runtime\.(\w+)\(", code))
    assert helpers and all(facts(getattr(s2s.runtime, h)).kernel == SAME_SPELLING for h in helpers)
    # the tapes: global (capacity, threads) arrays, each thread's column passed down, none local
    assert "cuda.local.array(" not in code and "s_tape[:, start]" in code
    assert "step-major (thread t's slot s is tape[s, t]" in text


def _kernel_names(start, stride, result, b):
    return start * 2.0 + stride * 3.0 + result * 5.0 + b * 7.0


def test_parameters_named_like_the_kernels_own_variables():
    """The kernel's loop names (start, stride, b, result) never hide a parameter of that name."""
    x = np.arange(6.0)
    for axes in [(0, 0, 0, 0), (None, 0, None, 0)]:
        args = [1.5 if a is None else x + k for k, a in enumerate(axes)]
        got = s2s.jit(s2s.vmap(_kernel_names, in_axes=axes), backend="cuda")(*args)
        start, stride, result, b = (np.broadcast_to(a, x.shape) for a in args)
        np.testing.assert_array_equal(got, start * 2.0 + stride * 3.0 + result * 5.0 + b * 7.0)


def test_tapes_grow_when_a_later_example_needs_more():
    """The first example of damped_grad runs 5 steps, the longest 12: the probe sizes the tapes
    at 5, the kernel reports the overflow, and the launcher runs again with room for 12 (more
    in tests/test_cuda_tapes.py)."""
    make, args = CASES["damped_grad"]
    jitted = s2s.jit(make(), backend="cuda")
    got = jitted(*args())
    launcher = jitted._specialise(args(), jitted._trees(args()), "cuda")["launcher"]
    assert {t.size for t in launcher.tapes} == {int(args()[1].max())} and launcher.relaunches == 1
    _agree(got, s2s.jit(make(), backend="cpu")(*args()))


def test_device_arrays_in_device_arrays_out():
    from numba import cuda

    make, args = CASES["greeks"]
    s0, sigma, z = args()
    delta, vega = s2s.jit(make(), backend="cuda")(s0, sigma, cuda.to_device(z))
    assert hasattr(delta, "copy_to_host") and hasattr(vega, "copy_to_host")
    want = s2s.jit(make(), backend="cpu")(s0, sigma, z)
    _agree(delta.copy_to_host(), want[0])
    _agree(vega.copy_to_host(), want[1])
    # out_axes=None: the output is checked to be the same for every example, on the host
    constant = s2s.jit(s2s.vmap(cuda_cases.path_payoff, in_axes=(None, None, 0), out_axes=None), backend="cuda")
    with pytest.raises(s2s.S2SError, match="out_axes=None"):
        constant(s0, sigma, cuda.to_device(z))
    same = s2s.jit(s2s.vmap(cuda_cases.path_payoff, in_axes=(None, None, 0), out_axes=None), backend="cuda")
    assert same(s0, sigma, cuda.to_device(np.zeros_like(z))) == cuda_cases.path_payoff(s0, sigma, z[0] * 0.0)


def _line_of(statement: str) -> int:
    with open(cuda_cases.__file__, encoding="utf-8") as handle:
        return next(k for k, line in enumerate(handle.read().splitlines(), 1) if line.strip() == statement)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_at_the_users_statement(name):
    fun, in_axes, statement, what, args = REFUSED[name]
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(s2s.vmap(fun, in_axes=in_axes), backend="cuda")(*args())
    error = info.value
    assert error.origin is not None and error.origin.filename == cuda_cases.__file__
    assert error.origin.line == _line_of(statement)
    assert what in str(error) and "backend='cpu'" in str(error)


def test_refuses_pytree_arguments_and_array_arithmetic_results():
    z = np.ones((3, 4))
    with pytest.raises(s2s.S2SError, match="makes a new array") as info:  # z[0] * z allocates
        s2s.jit(s2s.vmap(cuda_cases.per_example_array), backend="cuda")(z)
    assert info.value.origin.line == _line_of("return z[0] * z")
    with pytest.raises(s2s.S2SError, match="arrays and numbers as arguments"):
        s2s.jit(s2s.vmap(cuda_cases.rosen_pair, in_axes=((0, 0),)), backend="cuda")((z, z))


def test_per_example_gradients_closed_form():
    """Per-example gradients of a logistic loss with respect to the whole weight vector, written
    into each thread's row: (p - y) x, the closed form."""
    w, x, y = cuda_cases.logistic_args()
    grads = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.logistic_loss), in_axes=(None, 0, 0)), backend="cuda")(w, x, y)
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    assert grads.shape == x.shape
    np.testing.assert_allclose(grads, (p - y)[:, None] * x, rtol=1e-12, atol=1e-14)


def test_helper_adjoint_array_closed_form():
    """A helper that takes the weight vector: its reverse mode returns w's adjoint, an array it
    made, and is inlined into its caller in the kernel. 2 (w.x - y) x, per example."""
    w, x, y = cuda_cases.logistic_args()
    jitted = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.squared_error), in_axes=(None, 0, 0)), backend="cuda")
    grads = jitted(w, x, y)
    np.testing.assert_allclose(grads, 2 * (x @ w - y)[:, None] * x, rtol=1e-12, atol=1e-13)
    assert '@cuda.jit(device=True, inline="always")\ndef inner_vjp' in s2s.source(jitted)


def test_vector_output_against_finite_differences():
    """The gradient of a function that builds a local array (np.empty_like), per example, against
    central differences of the cuda primal."""
    w, z = 0.7, cuda_cases.rosen_args()[0]
    gw, gz = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.smoothed, argnums=(0, 1)), in_axes=(None, 0)), backend="cuda")(w, z)
    primal = s2s.jit(s2s.vmap(cuda_cases.smoothed, in_axes=(None, 0)), backend="cuda")
    h = 1e-6
    np.testing.assert_allclose(gw, (primal(w + h, z) - primal(w - h, z)) / (2 * h), rtol=1e-6, atol=1e-8)
    for j in range(z.shape[1]):
        e = np.zeros_like(z)
        e[:, j] = h
        np.testing.assert_allclose(gz[:, j], (primal(w, z + e) - primal(w, z - e)) / (2 * h), rtol=1e-6, atol=1e-8)


def test_jvp_in_vmap_closed_form():
    """s2s.jvp inside the per-example code: the tangent of s0 exp(sigma sum(z)) along sigma is
    the value times sum(z)."""
    s0, sigma, z = cuda_cases.path_args(n=64)
    value, tangent = s2s.jit(s2s.vmap(cuda_cases.growth_tangent, in_axes=(None, None, 0)), backend="cuda")(s0, sigma, z)
    np.testing.assert_allclose(value, s0 * np.exp(sigma * z.sum(axis=1)), rtol=1e-12)
    np.testing.assert_allclose(tangent, value * z.sum(axis=1), rtol=1e-12, atol=1e-14)


def test_jvp_in_vmap_through_a_constant_against_central_differences():
    """A sum with a module constant (zero tangent): the kernel's tangent along sigma equals
    central differences of the kernel's own values."""
    s0, sigma, z = cuda_cases.path_args(n=64)
    run = s2s.jit(s2s.vmap(cuda_cases.drifted_tangent, in_axes=(None, None, 0)), backend="cuda")
    value, tangent = run(s0, sigma, z)
    h = 1e-6
    central = (run(s0, sigma + h, z)[0] - run(s0, sigma - h, z)[0]) / (2 * h)
    np.testing.assert_allclose(tangent, central, rtol=1e-6, atol=1e-9)
    assert "runtime.broadcast_like(" in s2s.source(run)
    slope = s2s.jit(s2s.vmap(cuda_cases.drifted_slope, in_axes=(None, None, 0)), backend="cuda")(s0, sigma, z)
    np.testing.assert_allclose(slope, tangent, rtol=1e-14)  # the same forward mode, through a lambda


def test_fmax_tangent_in_a_kernel_drops_the_nan_argument():
    """np.fmax where the product is NaN (z holds NaNs): the floor wins, and the tangent along
    (s0, sigma) equals central differences of floored in NumPy, with no NaN from the argument
    not taken (runtime.weighted in the kernel)."""
    s0, sigma, z = cuda_cases.floored_args()
    run = s2s.jit(s2s.vmap(cuda_cases.floored_tangent, in_axes=(None, None, 0)), backend="cuda")
    value, tangent = run(s0, sigma, z)
    h = 1e-6
    central = np.array([(cuda_cases.floored(s0 + h, sigma + h, row) - cuda_cases.floored(s0 - h, sigma - h, row))
                        / (2 * h) for row in z])
    assert np.isfinite(tangent).all()
    np.testing.assert_allclose(tangent, central, rtol=1e-6, atol=1e-9)
    # (to the last bits: the kernel calls math.exp, NumPy's np.exp is its own, and they differ
    # by an ulp on some NumPy builds and CPUs: NumPy 2.4.6 with AVX-512 here)
    np.testing.assert_allclose(value, [cuda_cases.floored(s0, sigma, row) for row in z], rtol=1e-14, atol=0)
    assert "runtime.weighted(" in s2s.source(run)


def test_unpacked_split_keys_match_numpy():
    """k1, k2 = random.split(key), and key, sub = random.split(key) carried by a loop: the
    kernel's values equal s2s.random's NumPy values key by key, and the derivative along s is
    the closed form (the sum of the normal draws)."""
    from s2s import random

    keys = random.split(random.PRNGKey(11), 40)
    value = s2s.jit(s2s.vmap(cuda_cases.unpacked_keys, in_axes=(0, None)), backend="cuda")(keys, 0.5)
    slope = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.unpacked_keys, argnums=1), in_axes=(0, None)),
                    backend="cuda")(keys, 0.5)
    want = np.array([cuda_cases.unpacked_keys(k, 0.5) for k in keys])
    np.testing.assert_allclose(value, want, rtol=1e-14)
    uniforms = np.array([random.uniform(random.split(k)[1]) for k in keys])
    np.testing.assert_allclose(slope, (want - uniforms) / 0.5, rtol=1e-12)


def test_gradient_of_reads_at_fixed_and_label_indices_closed_form():
    """p[0] * p[1] + p[2] ** 2 and p[k] * 2 + p[0]: the kernel's adjoints add into one element."""
    p = np.arange(12.0).reshape(4, 3) + 0.5
    got = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.fixed_reads)), backend="cuda")(p)
    np.testing.assert_array_equal(got, np.stack([p[:, 1], p[:, 0], 2 * p[:, 2]], axis=1))
    labels = np.array([0, 1, 2, 1])
    got = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.label_read)), backend="cuda")(p, labels)
    want = np.zeros_like(p)
    want[:, 0] = 1.0
    want[np.arange(4), labels] += 2.0
    np.testing.assert_array_equal(got, want)


def test_state_updated_in_place_against_central_differences():
    k = np.linspace(0.5, 1.5, 8)
    got = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.euler_state)), backend="cuda")(k)
    h = 1e-6
    central = np.array([(cuda_cases.euler_state(v + h) - cuda_cases.euler_state(v - h)) / (2 * h) for v in k])
    np.testing.assert_allclose(got, central, rtol=1e-7)


def test_write_into_an_integer_array_made_like_an_argument_refused():
    """The kernel leaves out the check of a write into an array made like an argument: the first
    example, run on the host as Python, made it (every example's array has that dtype)."""
    z = np.arange(12).reshape(3, 4)  # integers: the write of s * z[t] is cut to an integer
    where = f"cuda_cases.py:{_line_of('w[t] = s * z[t]')}:"
    with pytest.raises(s2s.S2SError, match=f"{where}.* into w, an array of integers"):
        s2s.jit(s2s.vmap(s2s.grad(cuda_cases.scaled_copy), in_axes=(None, 0)), backend="cuda")(0.7, z)
    got = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.scaled_copy), in_axes=(None, 0)), backend="cuda")(0.7, z * 1.0)
    np.testing.assert_allclose(got, 2 * 0.7 * np.sum(z * z, axis=1), rtol=1e-14)


def test_array_shape_fixed_by_the_first_example():
    """np.zeros(k) with the example's own k: the kernel's local array has the first example's
    shape, and an example that asks for another is an S2SError at the statement."""
    x, k = np.linspace(0.0, 1.0, 6), np.array([3, 3, 3, 4, 3, 3])
    with pytest.raises(s2s.S2SError, match="another shape") as info:
        s2s.jit(s2s.vmap(cuda_cases.sized_by_data), backend="cuda")(x, k)
    assert info.value.origin.line == _line_of("y = np.zeros(k)")
    same = np.full(6, 3)
    got = s2s.jit(s2s.vmap(cuda_cases.sized_by_data), backend="cuda")(x, same)
    _agree(got, s2s.jit(s2s.vmap(cuda_cases.sized_by_data), backend="cpu")(x, same))


def test_random_draws_match_numpy_bit_for_bit():
    """Per-example keys: the kernel's draws equal s2s.random's NumPy draws for each key (uniform
    bit for bit everywhere; normal in the simulator, within a few ulp on a GPU, where log is
    libdevice's)."""
    from s2s import random

    keys = random.split(random.PRNGKey(5), 300)
    out = s2s.jit(s2s.vmap(cuda_cases.draws, in_axes=(0, None, None)), backend="cuda")(keys, 0.5, 2.0)
    u32, z32 = s2s.jit(s2s.vmap(cuda_cases.draws32), backend="cuda")(keys)
    want_u = np.array([random.uniform(k) for k in keys])
    want_z = np.array([random.normal(k) for k in keys])
    want_u3 = np.array([random.uniform(k, minval=-1.0, maxval=3.0) for k in keys])
    np.testing.assert_array_equal(out[1], want_u)
    np.testing.assert_array_equal(u32, np.array([random.uniform(k, (), np.float32) for k in keys]))
    assert u32.dtype == np.float32 and z32.dtype == np.float32
    value = 0.5 + 2.0 * want_z + want_u3
    if SIMULATED:
        np.testing.assert_array_equal(out[0], value)
        np.testing.assert_array_equal(z32, np.array([random.normal(k, (), np.float32) for k in keys]))
    else:
        np.testing.assert_allclose(out[0], value, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(z32, np.array([random.normal(k, (), np.float32) for k in keys]), rtol=1e-6)
    assert abs(np.mean(want_z)) < 4 / math.sqrt(len(keys))  # (and the draws are normal-looking)


def test_device_put_and_get():
    from numba import cuda

    make, args = CASES["greeks"]
    s0, sigma, z = args()
    on_device = s2s.device_put(z, "cuda")
    assert hasattr(on_device, "copy_to_host") and cuda.is_available()
    delta, vega = s2s.jit(make(), backend="cuda")(s0, sigma, on_device)
    assert hasattr(delta, "copy_to_host")  # results stay on the device
    s2s.block_until_ready((delta, vega))
    host = s2s.device_get({"delta": delta, "vega": vega})
    assert isinstance(host["delta"], np.ndarray)
    want = s2s.jit(make(), backend="cpu")(s0, sigma, z)
    _agree(host["delta"], want[0])
    _agree(np.asarray(vega), want[1])
    # float32 stays float32 through the device
    z32 = s2s.device_put(z.astype(np.float32), "cuda")
    d32, _ = s2s.jit(make(), backend="cuda")(np.float32(s0), np.float32(sigma), z32)
    assert s2s.device_get(d32).dtype == np.float32
    assert s2s.device_put(z) is z  # the default device is the CPU


def test_sum_examples_is_deterministic():
    """The total over examples on the device: a fixed tree of in-order chunk sums, so the result
    is bit-identical from run to run and equals the same order of additions in NumPy."""
    from numba import cuda

    from s2s.backends import cuda as cuda_backend

    make, args = CASES["logistic_per_example_grads"]
    w, x, y = cuda_cases.logistic_args()
    x = np.tile(x, (12, 1))  # 600 examples: three chunks, then one
    y = np.tile(y, 12)
    grads = s2s.jit(make(), backend="cuda")(w, cuda.to_device(x), cuda.to_device(y))
    first = cuda_backend.sum_examples(grads)
    second = cuda_backend.sum_examples(grads)
    assert hasattr(first, "copy_to_host")
    np.testing.assert_array_equal(first.copy_to_host(), second.copy_to_host())
    host = grads.copy_to_host()
    chunk = cuda_backend.CHUNK
    partial = [host[c:c + chunk] for c in range(0, len(host), chunk)]
    partial = np.array([np.cumsum(p, axis=0)[-1] for p in partial])  # in-order sums, as each thread adds
    want = np.cumsum(partial, axis=0)[-1]
    np.testing.assert_array_equal(first.copy_to_host(), want)
    np.testing.assert_allclose(cuda_backend.sum_examples(host, mean=True), np.mean(host, axis=0), rtol=1e-12)
    assert cuda_backend.sum_examples(host[:, 0]) == want[0]


def test_launch_on_a_stream():
    """backends.cuda.launch runs a specialised kernel on a given stream (the simulator runs it
    synchronously); the result has the vmap's structure."""
    from numba import cuda

    from s2s.backends import cuda as cuda_backend

    make, args = CASES["greeks"]
    s0, sigma, z = args()
    greeks = s2s.jit(make(), backend="cuda")
    stream = cuda.stream()
    pinned = cuda.pinned_array(z.shape, dtype=z.dtype)
    pinned[...] = z
    delta, vega = cuda_backend.launch(greeks, (s0, sigma, pinned), stream)
    stream.synchronize()
    want = s2s.jit(make(), backend="cpu")(s0, sigma, z)
    _agree(delta, want[0])
    _agree(vega, want[1])


def test_plain_jit_names_the_way_to_the_kernel():
    with pytest.raises(s2s.S2SError, match="s2s.vmap"):
        s2s.jit(cuda_cases.rosen, backend="cuda")(np.ones(3))


@pytest.fixture(scope="module")
def ptx_report():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    done = subprocess.run([sys.executable, cuda_cases.__file__], env=env, capture_output=True, text=True,
                          timeout=900, cwd=os.path.dirname(cuda_cases.__file__))
    line = next((x for x in done.stdout.splitlines() if x.startswith("S2S-PTX ")), None)
    assert line is not None, f"the PTX check did not report:\n{done.stdout}\n{done.stderr}"
    return json.loads(line[len("S2S-PTX "):])


@pytest.mark.parametrize("name", sorted(CASES) + ["__sum_examples__"])
def test_ptx(ptx_report, name):
    if "__nvvm__" in ptx_report:
        pytest.skip("NVVM is absent (install numba-cuda[cu12]): the PTX compilation is skipped, "
                    f"the simulator tests ran: {ptx_report['__nvvm__']}")
    assert ptx_report[name] == "ok", ptx_report[name]


@pytest.mark.parametrize("name", sorted(cuda_cases.COMPILE_REFUSED))
def test_compiler_refusal_at_the_users_statement(ptx_report, name):
    """What only numba-cuda's compiler finds (array arithmetic allocates) is an S2SError at the
    user's code, not a crash inside numba-cuda: at the function, as numba-cuda's message for an
    allocation names no line of the kernel module."""
    if "__nvvm__" in ptx_report:
        pytest.skip(f"NVVM is absent (install numba-cuda[cu12]): {ptx_report['__nvvm__']}")
    report = ptx_report[name]
    assert isinstance(report, dict), report
    _, statement, says = cuda_cases.COMPILE_REFUSED[name]
    assert report["line"] == _line_of(statement), report["message"]
    assert says in report["message"]


def test_an_output_dtype_refusal_is_recognised_from_the_signature_alone():
    """On an H200 (numba 0.68.0, numba-cuda 0.30.4), Numba's message for runtime.kernel_number's
    refusal named the signature it could not match but not the refusal's text, which the PTX
    compilation of test_ptx shows: the S2SError is made from the signature's types."""
    from numba.core.errors import TypingError

    jitted = s2s.jit(s2s.vmap(cuda_cases.zero_or_excess), backend="cuda")
    args = (np.ones((4, 3)),)
    launcher = jitted._specialise(args, jitted._trees(args), "cuda")["launcher"]
    seen_on_the_gpu = TypingError("No implementation of function Function(<function kernel_number at 0x7f0a>) found "
                                  "for signature:\n \n >>> kernel_number(array(int64, 1d, C), float64)\n \n")
    error = launcher.compile_error(seen_on_the_gpu)
    assert "an example's output is float64, wider than the first example's int64" in str(error)
    assert error.origin.line == _line_of(cuda_cases.COMPILE_REFUSED["int_output_float_later"][1])


def test_a_refusal_of_a_runtime_overload_is_found_after_any_error_name():
    from s2s.backends.failures import _reason

    for prefix in ("", "TypingError: ", "NumbaTypingError: ", "numba.core.errors.TypingError: "):
        message = f"No implementation of function\n >>> f(float64)\n  Rejected as:\n    {prefix}s2s: no kernel form"
        assert _reason(message) == "no kernel form"


def test_numba_cudas_terminal_highlighting_is_not_in_the_error():
    from numba.core.errors import TypingError

    from s2s.backends.failures import translate

    highlighted = TypingError("\x1b[1mNo implementation of function Function(<function f at 0x7f>) found for "
                              "signature:\n \n >>> f(float64)\n\x1b[0m")
    assert "\x1b" not in str(translate(highlighted))
    assert "No implementation of function" in str(translate(highlighted))


def test_kernel_text_of_numpy_on_numbers():
    """codegen/cuda.py's rewriting, before and after (no tapes: no tape_status)."""
    from s2s.codegen import cuda as codegen

    before = (
        "def f(x, y):\n"
        "    # m.py:2  z = ...\n"
        "    z = np.power(x, 2) ** 3 + np.maximum(x, y) * np.sign(x - y) + np.pi\n"
        "    return np.exp(np.abs(z)) + np.arctan2(y, x)\n"
    )
    after = (
        "@cuda.jit(device=True)\n"
        "def f(x, y):\n"
        "    # m.py:2  z = ...\n"
        "    z = (x ** 2) ** 3 + (x if x >= y or x != x else y) * (1.0 if (x - y) > 0 else (-1.0 if (x - y) < 0 "
        "else (x - y) * 0.0)) + math.pi\n"
        "    return math.exp(abs(z)) + math.atan2(y, x)\n"
    )
    assert codegen.device_functions(before, "f", [], lambda line: None).source == after


def test_kernel_text_of_arrays_and_draws():
    """codegen/cuda.py's rewriting of arrays the code makes, the array it returns (the thread's
    output row itself), and draws, before and after."""
    from s2s.codegen import cuda as codegen

    before = (
        "def f(key, x, n):\n"
        "    # m.py:2  y = ...\n"
        "    y = np.zeros(n)\n"
        "    k = runtime.random.fold_in(key, 3)\n"
        "    for i in range(n):\n"
        "        y[i] = x * runtime.random.normal(k) + runtime.random.uniform(key, (), np.float32, 1.0, 2.0)\n"
        "    return (y, y[0])\n"
    )
    after = (
        "@cuda.jit(device=True)\n"
        "def f(key, x, n, out_0_row, tape_status):\n"
        "    # m.py:2  y = ...\n"
        "    y = out_0_row\n"
        "    if runtime.kernels.shape_of(n) != Y_SHAPE:\n"
        "        tape_status[0] = 1\n"
        "    runtime.kernels.fill(y, 0)\n"
        "    k = cuda.local.array(K_SHAPE, numba.uint32)\n"
        "    runtime.kernels.fold_in_into(k, key, 3)\n"
        "    for i in range(n):\n"
        "        y[min(i, Y_SHAPE[0] - 1)] = x * runtime.kernels.normal64(k) + runtime.kernels.uniform32(key, "
        "np.float32(1.0), np.float32(2.0))\n"
        "    result = (y, y[min(0, Y_SHAPE[0] - 1)])\n"
        "    return (result[1],)\n"
    )
    made = [codegen.Local("f", "y", 3, (4,), "float64"), codegen.Local("f", "k", 4, (2,), "uint32")]
    rewritten = codegen.device_functions(before, "f", [], lambda line: None, made, [("out_0_row", "[0]")], ["[1]"])
    assert rewritten.source == after


# ---- pmap over CUDA devices: a GPU's streams as devices ------------------------------------


def test_cuda_devices_and_streams_as_devices():
    from s2s.backends.cuda import CudaDevice

    assert s2s.devices("cuda") == [CudaDevice(0)]  # (the simulator has one GPU)
    streams = s2s.devices("cuda", streams=3)
    assert [d.stream for d in streams] == [0, 1, 2] and repr(streams[1]) == "CudaDevice(id=0, stream=1)"
    with pytest.raises(s2s.S2SError, match="streams"):
        s2s.devices(streams=2)


def test_pmap_of_vmap_over_the_streams_of_one_gpu_matches_the_cpu_backend():
    s0, sigma = 1.0, 0.2
    z = np.random.default_rng(5).standard_normal((2, 64, 8))  # (shards, paths per shard, steps)
    per_path = s2s.vmap(s2s.grad(cuda_cases.path_payoff, argnums=(0, 1)), in_axes=(None, None, 0))
    sharded = s2s.pmap(per_path, in_axes=(None, None, 0), devices=s2s.devices("cuda", streams=2))
    delta, vega = sharded(s0, sigma, z)
    assert sharded.mode.startswith("cuda") and delta.shape == (2, 64)
    cpu_delta, cpu_vega = s2s.jit(per_path)(s0, sigma, z.reshape(128, 8))
    np.testing.assert_allclose(delta.reshape(128), cpu_delta, rtol=1e-13)
    np.testing.assert_allclose(vega.reshape(128), cpu_vega, rtol=1e-13, atol=1e-15)


def test_a_data_parallel_mean_over_gpu_streams_with_pmean():
    s0, sigma = 1.0, 0.2
    z = np.random.default_rng(6).standard_normal((2, 32, 8))
    greeks = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.path_payoff, argnums=(0, 1)), in_axes=(None, None, 0)),
                     backend="cuda")

    def mean_delta(s0, sigma, z):  # each shard's kernel on its stream, then the mean over shards
        delta, _ = greeks(s0, sigma, z)
        return s2s.lax.pmean(np.mean(delta), "shards")

    got = s2s.pmap(mean_delta, "shards", in_axes=(None, None, 0), out_axes=None,
                   devices=s2s.devices("cuda", streams=2))(s0, sigma, z)
    shard_means = [np.mean(greeks(s0, sigma, z[k])[0]) for k in range(2)]
    assert got == (shard_means[0] + shard_means[1]) / 2


def test_pmap_over_streams_reuses_its_page_locked_buffers_and_returns_new_arrays(monkeypatch):
    """A shard's arguments are copied to page-locked buffers that the next call reuses (page-locking
    memory costs more than the copy); the results are new arrays, not the buffers."""
    from s2s.backends import cuda as cuda_backend

    numba_cuda = cuda_backend.cuda_module()
    page_locked = []
    allocate = numba_cuda.pinned_array
    monkeypatch.setattr(numba_cuda, "pinned_array", lambda *a, **k: page_locked.append(a) or allocate(*a, **k))
    monkeypatch.setattr(cuda_backend, "_staging", cuda_backend._StagingPool())
    s0, sigma = 1.0, 0.2
    rng = np.random.default_rng(8)
    z1, z2 = rng.standard_normal((2, 16, 8)), rng.standard_normal((2, 16, 8))
    per_path = s2s.vmap(s2s.grad(cuda_cases.path_payoff, argnums=(0, 1)), in_axes=(None, None, 0))
    sharded = s2s.pmap(per_path, in_axes=(None, None, 0), devices=s2s.devices("cuda", streams=2))
    first = sharded(s0, sigma, z1)
    kept = [np.array(a) for a in first]
    second = sharded(s0, sigma, z2)
    assert len(page_locked) == 2  # one buffer per shard, on the first call only
    for got, want in zip(first, kept):
        np.testing.assert_array_equal(got, want)
    cpu = s2s.jit(per_path)(s0, sigma, z2.reshape(32, 8))
    for got, want in zip(second, cpu):
        np.testing.assert_allclose(np.reshape(got, 32), want, rtol=1e-13, atol=1e-15)


def test_the_staging_pool_keeps_at_most_its_limit():
    from s2s.backends import cuda as cuda_backend

    pool = cuda_backend._StagingPool()
    pool.LIMIT = 3 * 800
    for rows in (100, 100, 100, 50):
        pool.give(0, np.empty(rows))  # 800, 800, 800 bytes, then 400: the oldest 800 goes
    assert pool._bytes == 2000
    assert pool.take(0, (50,), np.dtype(np.float64)).shape == (50,) and pool._bytes == 1600


def test_pmap_on_cuda_refuses_more_shards_than_devices_and_non_vmap_transforms():
    z = np.zeros((3, 4, 8))
    per_path = s2s.vmap(cuda_cases.path_payoff, in_axes=(None, None, 0))
    with pytest.raises(s2s.S2SError, match=r"is only 1 GPU .*streams=3"):
        s2s.pmap(per_path, in_axes=(None, None, 0), backend="cuda")(1.0, 0.2, z)
    with pytest.raises(s2s.S2SError, match="runs s2s.vmap"):
        s2s.pmap(s2s.grad(cuda_cases.path_payoff), in_axes=(None, None, 0), backend="cuda")(1.0, 0.2, z[:1, 0])


def test_an_output_wider_than_the_first_examples_is_refused_not_cut():
    """The probe's first example returns the int 0, so the output array is int64; a later float
    would be cut. The simulator refuses it as it stores it; numba-cuda, which types the device
    function's result as a float, refuses it at compile time (test_compiler_refusal_...)."""
    rows = np.array([[1.0, 0.0], [3.5, 0.0]])
    with pytest.raises(s2s.S2SError, match="wider than the first example's int64"):
        s2s.jit(s2s.vmap(cuda_cases.zero_or_excess), backend="cuda")(rows)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(cuda_cases.zero_or_excess))(rows), [0.0, 1.5])
