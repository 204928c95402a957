"""Python loops in transformed code: a loop left by break (its counter is the breaking step's, and
the later steps are skipped), and nested loops whose inner range has a step (its trip count is
taped per outer pass), and the checks of library code (raise of a builtin exception under an if,
a call of a function that only checks, `in` and `not in` of constants), which run on the primal
values in every mode. Derivatives against central differences, in reverse and forward mode, on
the python backend and under s2s.jit."""

import re

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


# ---- for ... else and while ... else: the else runs where the loop did not break ----------------
def first_above(x, c):
    # the first element above c, scaled; all of them doubled if there is none
    for i in range(x.shape[0]):
        if x[i] > c:
            found = x[i] * 3.0
            break
    else:
        found = np.sum(x) * 2.0
    return found * x[0]

def search_rows(x):
    s = 0.0
    for row in x.reshape(2, -1):
        for v in row:
            if v > 1.8:
                s = s + v ** 2
                break
        else:
            s = s + np.sum(row)
    return s

def newton_sqrt(a):
    y = a
    k = 0
    while k < 50:
        y_new = 0.5 * (y + a / y)
        if np.abs(y_new - y) < 1e-12:
            y = y_new
            break
        y = y_new
        k += 1
    else:
        y = y * 0.0  # reached only where 50 steps do not converge
    return y

def while_without_break(x):
    s = 0.0
    k = 0
    while k < x.shape[0]:
        s = s + x[k] ** 2
        k += 1
    else:
        s = s * 2.0
    return s

def returns_in_loop(x):
    for i in range(x.shape[0]):
        if x[i] > 5.0:
            return x[i] * 2.0
        if x[i] < -5.0:
            break
    else:
        return np.sum(x ** 2)
    return np.sum(x)


def else_returns(x):
    for i in range(x.shape[0]):
        if x[i] > 2.5:
            break
    else:
        return np.sum(x ** 2)
    return x[i] * 3.0


def break_in_the_else_of_an_inner_loop(x):  # (the break is the outer loop's)
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(2):
            s = s + x[i] * j
        else:
            if x[i] > 2.5:
                break
        s = s * 1.5
    else:
        s = s - 1.0
    return s


LOOP_ELSE_POINTS = [np.array([0.5, 1.5, 2.0, 0.3]), np.array([0.5, 1.0, 0.2, 0.1]),
                    np.array([0.5, -6.0, 2.0, 0.3]), np.array([0.5, 6.0, 2.0, 0.3]), np.array([2.7, 1.0, 0.2, 0.4])]


@pytest.mark.parametrize("fun", [search_rows, while_without_break, returns_in_loop, else_returns,
                                 break_in_the_else_of_an_inner_loop])
@pytest.mark.parametrize("k", range(len(LOOP_ELSE_POINTS)))
def test_loop_else_in_every_mode(fun, k):
    from checks import check_all

    x = LOOP_ELSE_POINTS[k]
    check_all(fun, x)
    batch = np.stack(LOOP_ELSE_POINTS)
    want = np.stack([central_difference_grad(fun, (row,), 0) for row in batch])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(batch), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("c", [1.0, 3.0])  # (a break, and none: the else computes found)
def test_a_value_bound_in_the_loop_or_in_its_else(c):
    x = np.array([0.5, 1.5, 2.0, 0.3])
    want = central_difference_grad(first_above, (x, c), 0)
    for grad in (s2s.grad(first_above), s2s.jit(s2s.grad(first_above))):
        np.testing.assert_allclose(grad(x, c), want, rtol=1e-6)
    _, tangent = s2s.jvp(first_above, (x, c), (np.ones_like(x), 0.0))
    np.testing.assert_allclose(tangent, np.sum(want), rtol=1e-6)
    batch = np.stack([x, x * 1.7])
    per_example = s2s.vmap(s2s.grad(first_above), in_axes=(0, None))
    np.testing.assert_allclose(per_example(batch, c), [central_difference_grad(first_above, (row, c), 0)
                                                       for row in batch], rtol=1e-6)
    assert "if not _broke:" in s2s.source(s2s.grad(first_above))


@pytest.mark.parametrize("a", [2.0, 9.0])
def test_while_else_of_an_iteration_that_converges(a):
    for grad in (s2s.grad(newton_sqrt), s2s.jit(s2s.grad(newton_sqrt))):
        assert grad(a) == pytest.approx(0.5 / np.sqrt(a), rel=1e-10)  # d sqrt(a) / da
    assert s2s.jvp(newton_sqrt, (a,), (1.0,))[1] == pytest.approx(0.5 / np.sqrt(a), rel=1e-10)


# ---- a variable bound on some paths, read under a later condition --------------------------------


def bound_on_some_paths(x):
    ok = x[0] > 1
    if ok:
        w = np.exp(x[1])
        ok = w > 2
    if ok:
        return w * x[2]
    return x[2]


def array_bound_on_some_paths(x):
    h = np.tanh(x)
    if x[0] > 0:
        v = h * x[1]
    s = np.sum(h)
    if x[0] > 0 and x[2] > 0:
        s = s + np.sum(v * v)
    return s


def bound_in_a_loop_on_some_steps(x):
    t = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            last = np.sin(x[i]) * x[0]
    if x[-1] < 5:
        if x[0] > 0:
            t = last * x[1]
    return t + x[1]


UNBOUND = [
    (bound_on_some_paths, [np.array([2.0, 1.0, 3.0]), np.array([2.0, 0.1, 3.0]), np.array([0.5, 1.0, 3.0])]),
    (array_bound_on_some_paths, [np.array([0.5, 0.7, 0.2]), np.array([0.5, 0.7, -0.2]), np.array([-0.5, 0.7, 0.2])]),
    (bound_in_a_loop_on_some_steps, [np.array([0.5, 0.7, -0.2]), np.array([-0.5, 0.7, 0.2]),
                                     np.array([-0.5, -0.7, -0.2])]),
]


@pytest.mark.parametrize("fun, points", UNBOUND, ids=[f.__name__ for f, _ in UNBOUND])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_variable_bound_on_some_paths_only(fun, points, backend):
    """The adjoint of w starts at zero only where w was bound (generated code read w to shape
    the zeros: UnboundLocalError where the path left it unbound)."""
    for x in points:
        expected = central_difference_grad(fun, (x,), 0)
        np.testing.assert_allclose(s2s.jit(s2s.grad(fun), backend=backend)(x), expected, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fun), backend=backend)(x), expected, rtol=1e-7, atol=1e-9)
        H = s2s.jit(s2s.hessian(fun), backend=backend)(x)
        np.testing.assert_allclose(H, [central_difference_grad(lambda y: s2s.grad(fun)(y)[i], (x,), 0)
                                       for i in range(x.size)], rtol=1e-6, atol=1e-8)
    batch = np.stack(points)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)), backend=backend)(batch),
                               [central_difference_grad(fun, (x,), 0) for x in points], rtol=1e-7, atol=1e-9)
    check_grads(fun, (points[0],), order=2, backend=backend)


# ---- input checks of library code: they run on the primal values, the derivatives pass them by ----


def check_axis_index(name, i, n):
    if not 0 <= i < n:
        raise IndexError(f"{name} = {i} is out of range")


def check_vector(x, mode):
    if x.ndim != 1:
        raise ValueError(f"x must be 1-d, got {x.ndim} dimensions")
    if mode not in ("sum", "mean"):
        raise ValueError("mode must be 'sum' or 'mean'")
    if x.shape[0] < 2:
        return  # (nothing more to check)
    assert np.all(np.isfinite(x)), "x must be finite"
    if x.shape[0] > 50:
        raise ValueError("x has %d values, more than %d" % (x.shape[0], 50))
    if not np.all(x < 1e6):
        raise OverflowError("x holds values of {} or more".format(1e6))


MEANS = frozenset({"mean"})  # (a module's constant: read where the function is transformed)


def checked_energy(x, i, mode="sum"):
    check_vector(x, mode)
    check_axis_index("i", i, x.shape[0])
    if mode in MEANS:
        return np.mean(np.sin(x) ** 2) + x[i] ** 3
    return np.sum(np.sin(x) ** 2) + x[i] ** 3


def mean_energy(x, i):
    return checked_energy(x, i, "mean")


CHECKED = np.array([0.3, 0.5, 1.7])
BAD_CALLS = [  # (arguments, the exception NumPy's run raises, its message)
    ((np.ones((2, 2)), 0), ValueError, "x must be 1-d, got {x.ndim} dimensions"),  # (an f-string: its text)
    ((CHECKED, 0, "max"), ValueError, "mode must be 'sum' or 'mean'"),
    ((CHECKED, 3), IndexError, "{name} = {i} is out of range"),
    ((np.array([1.0, np.inf]), 0), AssertionError, "x must be finite"),
    ((np.ones(51), 0), ValueError, "x has %d values, more than %d"),  # (formatted with %: its template)
    ((np.array([1.0, 2e6, 1.0]), 0), OverflowError, "x holds values of {} or more"),  # (str.format: the same)
]


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_checks_pass_valid_inputs_in_every_mode(mode):
    want = central_difference_grad(checked_energy, (CHECKED, 1, mode), 0)
    for grad in (s2s.grad(checked_energy), s2s.jit(s2s.grad(checked_energy))):
        np.testing.assert_allclose(grad(CHECKED, 1, mode), want, rtol=1e-6, atol=1e-7)
    for backend in ("python", "cpu"):
        fun = checked_energy if mode == "sum" else mean_energy
        _, tangent = s2s.jvp(fun, (CHECKED, 1), (np.ones(3), 0.0), backend=backend)
        np.testing.assert_allclose(tangent, np.sum(want), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("args, error, message", BAD_CALLS, ids=["ndim", "mode", "index", "assert", "percent", "format"])
def test_checks_raise_as_python_does_in_every_mode(args, error, message):
    with pytest.raises(error):
        checked_energy(*args)
    for transformed in (s2s.grad(checked_energy), s2s.jit(s2s.grad(checked_energy)), s2s.jit(checked_energy)):
        with pytest.raises(error, match=re.escape(message)):
            transformed(*args)
    if len(args) == 2:
        for backend in ("python", "cpu"):
            with pytest.raises(error, match=re.escape(message)):
                s2s.jvp(checked_energy, args, (np.ones_like(args[0]), 0.0), backend=backend)


def test_checks_are_raise_statements_in_generated_code():
    text = s2s.source(s2s.grad(checked_energy))
    assert 'raise ValueError("mode must be \'sum\' or \'mean\'")' in text
    assert "raise IndexError(" in text and "check_vector(" not in text  # (its body is written out)


def bounded(x):
    if np.max(x) > 10.0:
        raise OverflowError("x is too large")
    return np.sum(np.sin(x) * x)


def test_a_raise_of_one_example_stops_the_batch():
    """As the loop over the examples would: the compiled vmap runs them one by one where a check
    may raise (Numba loses an exception raised in a parallel loop)."""
    good = np.stack([CHECKED, 2.0 * CHECKED])
    want = np.stack([central_difference_grad(bounded, (row,), 0) for row in good])
    bad = np.stack([CHECKED, np.array([0.5, 11.0, 1.0])])
    for batched in (s2s.vmap(s2s.grad(bounded)), s2s.jit(s2s.vmap(s2s.grad(bounded)))):
        np.testing.assert_allclose(batched(good), want, rtol=1e-6, atol=1e-7)
        with pytest.raises(OverflowError, match="x is too large"):
            batched(bad)
    with pytest.raises(OverflowError, match="x is too large"):
        s2s.jit(s2s.vmap(bounded))(bad)
