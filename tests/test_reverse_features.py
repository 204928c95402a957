"""Every language feature of the core, differentiated in forward and reverse mode on both backends.

Each case is checked against central finite differences (s2s.testing.check_grads), and
the python and Numba backends must agree with each other.
"""

import numpy as np
import pytest

import s2s
from programs import CASES


def _args(case):
    fn, build, argnums, jit = CASES[case]
    return fn, build(np.random.default_rng(7)), argnums, jit


@pytest.mark.parametrize("case", sorted(CASES))
def test_reverse_mode_matches_finite_differences(case):
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("rev",), argnums=argnums)


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
