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

from numba.core import config
from s2s.codegen.cuda import KERNEL_HELPERS

SIMULATED = bool(config.ENABLE_CUDASIM)


def test_numba_cuda_is_installed():
    from s2s.backends import cuda as cuda_backend

    assert cuda_backend.cuda_module().implementation == "NVIDIA"


def _agree(got, want):
    """Exact under the simulator (both backends run the same libm on the same operations in
    the same order); on a GPU, libdevice and fused multiply-adds change the last bits."""
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if SIMULATED and np.asarray(want).dtype == np.float64:
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-11
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu_backend(name):
    make, args = CASES[name]
    got = s2s.jit(make(), backend="cuda")(*args())
    # The cpu backend cannot compile the float32 greeks (s * np.exp(<float64>) retypes s's
    # tape: "Cannot unify array(float32) and array(float64) for 's_tape'"): NumPy is the reference.
    reference = "python" if name in ("greeks_float32", "draws32") else "cpu"
    want = s2s.jit(make(), backend=reference)(*args())
    got_leaves, want_leaves = s2s.pytree.leaves(got), s2s.pytree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        _agree(g, w)


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
    # runtime helpers only where numba-cuda has an overload of them (for numbers)
    assert set(re.findall(r"runtime\.(\w+)\(", code)) <= KERNEL_HELPERS
    assert "cuda.local.array(" in code


def test_tapes_grow_when_a_later_example_needs_more():
    """The first example of damped_grad runs 5 steps, the longest 12: the probe sizes the tapes
    at 5, the kernel reports the overflow, and the launcher runs again with room for 12."""
    make, args = CASES["damped_grad"]
    jitted = s2s.jit(make(), backend="cuda")
    got = jitted(*args())
    sizes = {line.split(" = ")[1].split()[0] for line in s2s.source(jitted).splitlines() if "_SIZE = " in line}
    assert sizes == {str(int(args()[1].max()))}
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


def test_refuses_array_outputs_and_pytree_arguments():
    z = np.ones((3, 4))
    with pytest.raises(s2s.S2SError, match="a number per example"):
        s2s.jit(s2s.vmap(cuda_cases.per_example_array), backend="cuda")(z)
    with pytest.raises(s2s.S2SError, match="a number per example"):  # a gradient with respect to a vector
        s2s.jit(s2s.vmap(s2s.grad(cuda_cases.rosen)), backend="cuda")(z)
    with pytest.raises(s2s.S2SError, match="arrays and numbers as arguments"):
        s2s.jit(s2s.vmap(cuda_cases.rosen_pair, in_axes=((0, 0),)), backend="cuda")((z, z))


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


@pytest.mark.parametrize("name", sorted(CASES))
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
    assert report["line"] == _line_of(cuda_cases.COMPILE_REFUSED[name][1]), report["message"]
    assert "kernels cannot allocate" in report["message"]


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
