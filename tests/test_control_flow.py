"""Python loops in transformed code: a loop left by break (its counter is the breaking step's, and
the later steps are skipped), and nested loops whose inner range has a step (its trip count is
taped per outer pass). Derivatives against central differences, in reverse and forward mode, on
the python backend and under s2s.jit."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s.testing import check_grads


# ---- a loop left by break ------------------------------------------------------------------------


def counter_after_break(x):
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            break
    return x[0] * i


def enumerate_after_break(x):
    s = 0.0
    for k, v in enumerate(x):
        if v > 1.0:
            break
        s = s + v
    return s * k + v


def inner_counter_after_break(x):
    t = 0.0
    for i in range(3):
        for j in range(x.shape[0]):
            if x[j] > 1.0 + i:
                break
        t = t + x[j] * (i + j)
    return t


def slice_from_the_break(x):
    y = x.copy()
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            break
    y[i:] += x[0] * 2.0
    return np.sum(y * y)


BREAKS = [counter_after_break, enumerate_after_break, inner_counter_after_break, slice_from_the_break]


@pytest.mark.parametrize("fun", BREAKS, ids=[f.__name__ for f in BREAKS])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_the_loop_counter_after_break_is_the_breaking_steps(fun, backend):
    """A loop left by break runs out its range with the later steps skipped; the counter is the
    breaking step's, not the range's last value (which would give x[0] * 4 for x[0] * 1 here)."""
    x = np.array([0.7, 2.2, 0.5, 3.3, 0.1])
    want = central_difference_grad(fun, (x,), 0)
    value, grad = s2s.jit(s2s.value_and_grad(fun), backend=backend)(x)
    assert value == pytest.approx(fun(x))
    np.testing.assert_allclose(grad, want, atol=1e-6)
    _, tangent = s2s.jvp(fun, (x,), (np.ones(5),), backend=backend)
    assert tangent == pytest.approx(np.sum(want), abs=1e-6)


# ---- nested loops whose inner range has a step ---------------------------------------------------


def stepped_inner_range(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i, n, 2):
            s = s + x[i] * x[j]
    return s


def descending_stepped_inner_range(x):
    n = x.shape[0]
    s = 0.0
    for i in range(2):
        for j in range(n, 0, -2):
            s = s + np.sin(x[j - 1]) * x[i]
    return s


@pytest.mark.parametrize("fun", [stepped_inner_range, descending_stepped_inner_range])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_nested_loops_with_a_stepped_inner_range(fun, backend):
    """The inner loop's trip count is taped per outer iteration, once it is counted (j_trips
    pushed before it is assigned would be an UnboundLocalError)."""
    x = np.array([0.3, 0.5, -0.2, 0.9, 1.1])
    check_grads(fun, (x,), order=2 if backend == "python" else 1, backend=backend)
