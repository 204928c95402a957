"""Defects found in session 12 and fixed after it, each checked against closed forms or
central differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

# ---- 1. numbers read from an array are not views of it -------------------------------------
# `c0, c1 = first(v)` with first returning (v[0], v[1]) used to refuse the later `v[0] = ...`
# as a write through an alias: for a 1-d v both are numbers.


def first(v):
    return v[0], v[1]


def whole(v):
    return v


def tail(v):
    return v[1:]


def head_and_tail(v):
    return v[0], v[1:]


def through_helper(x):
    v = x * 2.0
    c0, c1 = first(v)
    v[0] = v[0] + 3.0 * c1
    return np.sum(v * v) + c0


def through_tuple(x):
    v = x * 2.0
    c0, c1 = v[0], v[1]
    v[0] = v[0] + 3.0 * c1
    return np.sum(v * v) + c0


def through_read(x):
    v = x * 2.0
    c0 = v[0]
    c1 = v[1]
    v[0] = v[0] + 3.0 * c1
    return np.sum(v * v) + c0


def overwrites_what_it_read(x):
    # c1 is read, then its own element is overwritten: a view would change, a number not.
    v = x * 2.0
    c0, c1 = first(v)
    for i in range(2):
        v[i] = v[i] * c1 + c0
    return np.sum(v * v) + c0 * c1


def closed_form(x):
    """value, gradient and Hessian of the first three functions: with v = 2x,
    (2 x0 + 6 x1)^2 + 4 x1^2 + 4 sum(x[2:]^2) + 2 x0."""
    a = 2 * x[0] + 6 * x[1]
    value = a * a + 4 * x[1] ** 2 + 4 * np.sum(x[2:] ** 2) + 2 * x[0]
    grad = np.concatenate([[4 * a + 2, 12 * a + 8 * x[1]], 8 * x[2:]])
    hess = 8.0 * np.eye(len(x))
    hess[:2, :2] = [[8.0, 24.0], [24.0, 80.0]]
    return value, grad, hess


def numpy_reference(fn):
    """fn run by NumPy itself (on a 1-d x the reads are numbers: the result is NumPy's)."""
    return lambda x: float(fn(np.array(x, dtype=float)))


X = np.array([0.3, -1.2, 0.7, 2.0])


@pytest.mark.parametrize("fn", [through_helper, through_tuple, through_read])
def test_element_reads_before_a_write_match_the_closed_form(fn):
    value, grad, hess = closed_form(X)
    assert np.isclose(fn(X.copy()), value)
    for backend in ("python", "cpu"):
        assert np.allclose(s2s.jit(s2s.grad(fn), backend=backend)(X), grad)
    assert np.allclose(s2s.grad(fn)(X), grad)
    direction = np.array([0.5, -1.0, 2.0, 0.25])
    out, tangent = s2s.jvp(fn, (X,), (direction,))
    assert np.isclose(out, value) and np.isclose(tangent, grad @ direction)
    assert np.allclose(s2s.hessian(fn)(X), hess)


def test_element_read_then_overwritten_matches_central_differences():
    fn = overwrites_what_it_read
    expected = central_difference_grad(numpy_reference(fn), (X,), 0)
    assert np.allclose(s2s.grad(fn)(X), expected, atol=1e-6)
    assert np.allclose(s2s.jit(s2s.grad(fn))(X), expected, atol=1e-6)
    direction = np.array([1.0, 0.5, -0.5, 2.0])
    assert np.isclose(s2s.jvp(fn, (X,), (direction,))[1], expected @ direction, atol=1e-6)
    hess = s2s.hessian(fn)(X)
    for k in range(len(X)):  # each Hessian row against central differences of NumPy's gradient
        row = central_difference_grad(lambda x: float(central_difference_grad(numpy_reference(fn), (x,), 0, h=1e-4)[k]),
                                      (X,), 0, h=1e-4)
        assert np.allclose(hess[k], row, atol=1e-4)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_element_reads_under_vmap_keep_their_values(backend):
    # Batched, v[1] is a row of the batched v: the write must not change the number read.
    xs = np.arange(12.0).reshape(4, 3) / 7.0
    fn = overwrites_what_it_read
    values = s2s.jit(s2s.vmap(fn), backend=backend)(xs)
    assert np.allclose(values, [fn(x.copy()) for x in xs])
    grads = s2s.jit(s2s.vmap(s2s.grad(fn)), backend=backend)(xs)
    expected = [central_difference_grad(numpy_reference(fn), (x,), 0) for x in xs]
    assert np.allclose(grads, expected, atol=1e-6)


def test_element_reads_of_a_2d_array_are_views_and_refused_when_it_runs():
    # For a 2-d x, first(v) returns rows of v, which `v[0] = ...` changes: NumPy's result
    # would differ from s2s's, so the write is refused where it runs, at the user's line.
    with pytest.raises(s2s.S2SError, match=r"test_session12_fixes.py:\d+:\d+: writing into v would also change c0"):
        s2s.grad(through_helper)(np.ones((3, 2)))


def returns_whole(x):
    v = x * 2.0
    w = whole(v)
    v[0] = 1.0
    return np.sum(v * w)


def returns_tail(x):
    v = x * 2.0
    w = tail(v)
    v[1] = 1.0
    return np.sum(v) + np.sum(w)


def returns_tuple_with_a_slice(x):
    v = x * 2.0
    c, w = head_and_tail(v)
    v[1] = 1.0
    return np.sum(v) + np.sum(w) + c


def reads_a_slice(x):
    v = x * 2.0
    w = v[1:]
    v[1] = 1.0
    return np.sum(v) + np.sum(w)


@pytest.mark.parametrize("fn", [returns_whole, returns_tail, returns_tuple_with_a_slice, reads_a_slice])
def test_real_aliases_stay_refused_before_it_runs(fn):
    with pytest.raises(s2s.S2SError, match=r"test_session12_fixes.py:\d+:\d+: writing into v would also change "
                                           r"\w+, which may share its memory; make v a copy"):
        s2s.grad(fn).source


def keep_in_a_list(v):
    out = [0.0]
    out[0] = v  # the list refers to v itself
    return out


def returns_through_a_list(x):
    v = x * 2.0
    kept = keep_in_a_list(v)
    v[0] = 1.0
    return np.sum(kept[0]) + np.sum(v)


def test_an_array_stored_in_a_returned_list_stays_refused():
    with pytest.raises(s2s.S2SError, match="writing into v would also change kept, which may share its memory"):
        s2s.grad(returns_through_a_list).source


def doubled(v):
    return v * 2.0


def helper_returns_a_new_array(x):
    v = x * 2.0
    w = doubled(v)
    v[0] = 1.0
    return np.sum(w * v)


def rows_of_a_matrix(x):
    m = np.outer(x, x) + 1.0
    a = m[0]
    b = m[1]
    a[0] = a[0] * 3.0  # changes m's first row, not b (m's second)
    return np.sum(a * b) + np.sum(b)


def one_row_twice(x):
    m = np.outer(x, x) + 1.0
    a = m[1]
    b = m[1]
    a[0] = a[0] * 3.0
    return np.sum(a * b)


@pytest.mark.parametrize("fn", [helper_returns_a_new_array, rows_of_a_matrix])
def test_writes_that_no_live_name_sees_match_central_differences(fn):
    x = np.array([0.3, -0.7, 1.1])
    expected = central_difference_grad(numpy_reference(fn), (x,), 0)
    assert np.allclose(s2s.grad(fn)(x), expected, atol=1e-6)
    assert np.allclose(s2s.jit(s2s.grad(fn))(x), expected, atol=1e-6)


def test_a_write_into_a_row_that_another_name_holds_is_refused_when_it_runs():
    with pytest.raises(s2s.S2SError, match=r"test_session12_fixes.py:\d+:\d+: writing into a would also change b, "
                                           r"a view of it; make a a copy"):
        s2s.grad(one_row_twice)(np.array([0.3, -0.7, 1.1]))
