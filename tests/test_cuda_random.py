"""s2s.random's draws in CUDA kernels: s2s.jit(s2s.vmap(f), backend="cuda") over a batch of keys
gives, key by key, what s2s.random gives in NumPy.

In the simulator (conftest.py) the kernel code runs as Python and every draw is bit-equal to
NumPy's. On a GPU (NUMBA_ENABLE_CUDASIM=0) the integers and booleans (randint, permutation,
bernoulli) stay exact; the floats are within a few ulp: exponential's and truncated_normal's
log is libdevice's (as normal's), truncated_normal's erf is libdevice's, not CPython's; and
categorical picks another category only where two perturbed logits tie within those ulps.
The kernels are compiled to PTX for sm_90 in a subprocess (cuda_random_cases.py), and the
integer code of randint and permutation is compiled by Numba for the CPU there too, where its
results are compared (Numba's typing of uint64 arithmetic is what the GPU runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from numba.core import config

import s2s
import cuda_random_cases as cases
from s2s import random

SIMULATED = bool(config.ENABLE_CUDASIM)


def _run(name):
    make, args = cases.CASES[name]
    arguments = args()
    return s2s.jit(make(), backend="cuda")(*arguments), arguments


def _floats(got, want, ulps_rtol):
    """Bit-equal in the simulator; on a GPU within ulps_rtol (libdevice's log and erf)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if SIMULATED:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=ulps_rtol, atol=ulps_rtol)


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_draws_of_one_number_match_numpy():
    out, (keys, logits) = _run("numbers")
    want = [np.array([cases.numbers(k, row)[j] for k, row in zip(keys, logits)]) for j in range(9)]
    want[4] = want[4].astype(np.int64)  # (NumPy's 0-d int64 arrays, stacked)
    _floats(out[0], want[0], 1e-14)  # exponential
    _floats(out[1], want[1], 1e-6)
    _exact(out[2], want[2])  # bernoulli
    _exact(out[3], want[3])
    _exact(out[4], want[4])  # randint
    _exact(out[5], want[5])
    _floats(out[6], want[6], 1e-12)  # truncated_normal
    _floats(out[7], want[7], 1e-5)
    if SIMULATED:  # categorical
        _exact(out[8], want[8])
    else:
        assert out[8].dtype == np.int64 and np.mean(out[8] == want[8]) > 0.95
    assert 0.15 < np.mean(out[2]) < 0.45 and np.all((-5 <= out[4]) & (out[4] < 17))  # and they look right
    assert np.all((-1.0 < out[6]) & (out[6] < 2.0)) and np.all((0.5 < out[7]) & (out[7] < 3.0))


def test_randint_over_wide_spans():
    """Spans past 2**32 and 2**63: XLA's unsigned arithmetic wraps, and the kernel's with it."""
    out, (keys,) = _run("wide_integers")
    for j, dtype in enumerate((np.int64, np.int64, np.int32)):
        _exact(out[j], np.array([cases.wide_integers(k)[j] for k in keys]).astype(dtype))


def test_draws_of_a_shape_match_numpy():
    out, (keys,) = _run("arrays")
    want = [np.stack([cases.arrays(k)[j] for k in keys]) for j in range(7)]
    _floats(out[0], want[0], 1e-14)
    _exact(out[1], want[1])
    _exact(out[2], want[2])
    _floats(out[3], want[3], 1e-12)
    _floats(out[4], want[4], 1e-6)
    _exact(out[5], want[5])
    _floats(out[6], want[6], 1e-5)


def test_bernoulli_of_an_array_of_probabilities():
    out, (keys, p) = _run("coins")
    _exact(out, np.stack([random.bernoulli(k, row) for k, row in zip(keys, p)]))


def test_permutations_match_numpy():
    (order, shuffled), (keys, x) = _run("shuffles")
    _exact(order, np.stack([random.permutation(k, 6) for k in keys]))
    _exact(shuffled, np.stack([random.permutation(k, row) for k, row in zip(keys, x)]))
    np.testing.assert_array_equal(np.sort(shuffled, axis=1), np.sort(x, axis=1))


def test_permutation_with_two_rounds_of_sorting():
    out, (keys,) = _run("long_shuffle")
    _exact(out, np.stack([random.permutation(k, 1700) for k in keys]))


@pytest.mark.parametrize("name, fun", [("waits_greeks", cases.waits), ("drawn_waits_greeks", cases.drawn_waits)])
def test_reparameterised_gradients_against_central_differences(name, fun):
    """d/dmu and d/dsigma of mu + sigma * exponential(key) (and truncated_normal) in the kernel,
    against central differences of the function run in NumPy, key by key."""
    (d_mu, d_sigma), (keys, mu, sigma) = _run(name)
    h = 1e-6
    fd_mu = np.array([(fun(k, mu + h, sigma) - fun(k, mu - h, sigma)) / (2 * h) for k in keys])
    fd_sigma = np.array([(fun(k, mu, sigma + h) - fun(k, mu, sigma - h)) / (2 * h) for k in keys])
    np.testing.assert_allclose(d_mu, fd_mu, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(d_sigma, fd_sigma, rtol=1e-6, atol=1e-8)
    assert np.std(d_sigma) > 0.0  # (each example's draws differ)


def _line_of(statement: str) -> int:
    with open(cases.__file__) as handle:
        return next(n for n, line in enumerate(handle, 1) if line.strip() == statement)


@pytest.mark.parametrize("name", sorted(cases.REFUSED))
def test_refused_at_the_users_statement(name):
    fun, args, statement, message = cases.REFUSED[name]
    with pytest.raises(s2s.S2SError, match=message) as info:
        s2s.jit(s2s.vmap(fun), backend="cuda")(*args())
    assert info.value.origin.line == _line_of(statement)
    assert "backend='cpu' takes it" in str(info.value)


def test_kernel_text_of_draws():
    """codegen/cuda_random.py's rewriting of draws of one number, before and after."""
    from s2s.codegen import cuda as codegen

    before = (
        "def f(key, logits, lo):\n"
        "    a = runtime.random.exponential(key, (), np.float32) + runtime.random.truncated_normal(key, lo, 2.0)\n"
        "    b = runtime.random.randint(key, (), 0, 10) + runtime.random.categorical(key, logits)\n"
        "    return a if runtime.random.bernoulli(key, 0.25) else b\n"
    )
    after = (
        "@cuda.jit(device=True)\n"
        "def f(key, logits, lo):\n"
        "    a = runtime.kernels.exponential32(key) + runtime.kernels.truncated_normal64(key, np.float64(lo), "
        "np.float64(2.0))\n"
        "    b = runtime.kernels.randint64(key, 0, 10) + runtime.kernels.categorical(key, logits)\n"
        "    return a if runtime.kernels.bernoulli(key, 0.25) else b\n"
    )
    assert codegen.device_functions(before, "f", [], lambda line: None).source == after


def _subprocess_report(flag: list[str], tag: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    done = subprocess.run([sys.executable, cases.__file__, *flag], env=env, capture_output=True, text=True,
                          timeout=900, cwd=os.path.dirname(cases.__file__))
    line = next((x for x in done.stdout.splitlines() if x.startswith(tag + " ")), None)
    assert line is not None, f"the check did not report:\n{done.stdout}\n{done.stderr}"
    return json.loads(line[len(tag) + 1:])


@pytest.fixture(scope="module")
def ptx_report():
    return _subprocess_report([], "S2S-PTX")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_ptx(ptx_report, name):
    if "__nvvm__" in ptx_report:
        pytest.skip("NVVM is absent (install numba-cuda[cu12]): the PTX compilation is skipped, "
                    f"the simulator tests ran: {ptx_report['__nvvm__']}")
    assert ptx_report[name] == "ok", ptx_report[name]


def test_integer_code_under_numba():
    report = _subprocess_report(["--integers"], "S2S-INTEGERS")
    assert report and all(v == "ok" for v in report.values()), report
