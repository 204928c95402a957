"""Every language feature of the core, differentiated in forward and reverse mode on both backends.

Each case is checked against central finite differences (s2s.testing.check_grads), and
the python and Numba backends must agree with each other.
"""

import numpy as np
import pytest

import s2s
from programs import CASES
from specialised import specialised_grad


def _args(case):
    fn, build, argnums, jit = CASES[case]
    return fn, build(np.random.default_rng(7)), argnums, jit


@pytest.mark.parametrize("case", sorted(CASES))
def test_reverse_mode_matches_finite_differences(case):
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("rev",), argnums=argnums)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_specialised_for_the_arguments_agrees(case):
    """The module s2s.jit compiles for these arguments' kinds (unbroadcast left out where shapes
    are proved equal), run as NumPy, gives the general module's gradient."""
    fn, args, argnums, _ = _args(case)
    expected = s2s.grad(fn, argnums=argnums)(*args)
    got = specialised_grad(fn, args, argnums)
    for a, b in zip(s2s.pytree.leaves(got), s2s.pytree.leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(b)


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_mode_matches_finite_differences(case):
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("fwd",), argnums=argnums)


@pytest.mark.parametrize("case", sorted(c for c in CASES if CASES[c][3]))
def test_numba_backend_matches_finite_differences_and_python(case):
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("fwd", "rev"), argnums=argnums, backend="cpu")
    g = s2s.grad(fn, argnums=argnums)
    expected = g(*args)
    got = s2s.jit(g)(*args)
    for a, b in zip(s2s.pytree.leaves(got), s2s.pytree.leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def float32_recurrence(x, n):
    y = x[0]
    for i in range(n):
        y = np.sin(y) * x[1]
    return y * y


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_tapes_in_range_loops_keep_float32(backend):
    """A float32 number taped in a range loop stays float32 (under Numba, on a float32 array)."""
    x = np.array([0.7, 1.3], np.float32)
    g = s2s.jit(s2s.grad(float32_recurrence), backend=backend)(x, 6)
    assert g.dtype == np.float32
    eps = 1e-6
    wide = x.astype(np.float64)
    fd = [(float32_recurrence(wide + eps * e, 6) - float32_recurrence(wide - eps * e, 6)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-4)
