"""Which names share an array's memory, as in NumPy, and what a write into an array may change:
numbers read from an array (v[0], a helper's (v[0], v[1]), a tuple or list of them) are not views
of it, while the array itself (returned by a helper or held by a list or a tuple), its rows and its
slices are. A write that another live name sees is refused at the user's line, naming the user's
variables (never s2s's temporaries), before the code runs or, where only the arguments tell (a 2-d
array's elements are rows), when it runs; the other writes are differentiated, to second order too,
and checked against closed forms or central differences."""

import numpy as np
import pytest

import s2s
from checks import assert_names_the_user
from finite_differences import central_difference_grad
from s2s.testing import check_grads

# ---- numbers read from an array are not views of it -----------------------------------------
# `c0, c1 = first(v)` with first returning (v[0], v[1]), then `v[0] = ...`: for a 1-d v both are
# numbers, which the write leaves as they were (it is no write through an alias).


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
    with pytest.raises(s2s.S2SError, match=r"test_aliases.py:\d+:\d+: writing into v would also change c0"):
        s2s.grad(through_helper)(np.ones((3, 2)))


# ---- what does share the array: itself, its rows and slices, a list that holds it -----------


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
    with pytest.raises(s2s.S2SError, match=r"test_aliases.py:\d+:\d+: writing into v would also change "
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


# ---- writes that no live name sees: a helper's new array, another row -----------------------


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
    with pytest.raises(s2s.S2SError, match=r"test_aliases.py:\d+:\d+: writing into a would also change b, "
                                           r"a view of it; make a a copy"):
        s2s.grad(one_row_twice)(np.array([0.3, -0.7, 1.1]))


# ---- a tuple whose item is the written array --------------------------------------------------

BACKENDS = ["python", "cpu"]
X3 = np.array([0.3, -0.7, 1.1])  # (the point of the cases below)


def unpacked_alias(x):  # a is v itself: the write changes a, read after it
    v = x * 1.0
    t = (v, 1.0)
    a, b = t
    v[0] = 5.0
    return np.sum(a) + b


def unpacked_on_two_paths(x, flag):  # a is v on one path, b on the other
    v = x * 1.0
    w = x * 2.0
    if flag > 0:
        t = (v, w)
    else:
        t = (w, v)
    a, b = t
    v[0] = 5.0
    return np.sum(a) + np.sum(b)


@pytest.mark.parametrize("fun, args, names", [(unpacked_alias, (X3,), ("v", "a")),
                                              (unpacked_on_two_paths, (X3, 1.0), ("v", "a")),
                                              (unpacked_on_two_paths, (X3, -1.0), ("v", "a"))])
def test_an_element_of_a_tuple_that_is_the_written_array_is_still_refused(fun, args, names):
    with pytest.raises(s2s.S2SError, match="would also change") as info:
        s2s.grad(fun)(*args)
    assert_names_the_user(info.value, *names)


# ---- a tuple or list of numbers read from an array that is written later -------------------


def first_two(v):
    return v[0], v[1]


def tuple_of_elements(x):
    v = x * 1.0
    t = (v[0], v[1])
    v[0] = 5.0
    return np.sum(t[0] * t[1]) + np.sum(v)


def tuple_from_a_helper(x):
    v = x * 1.0
    t = first_two(v)
    v[0] = 5.0
    return np.sum(t[0] * t[1]) + np.sum(v)


def list_of_elements(x):
    v = x * 1.0
    t = [v[0], v[1]]
    v[0] = 5.0
    return np.sum(t[0] * t[1]) + np.sum(v)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [tuple_of_elements, tuple_from_a_helper, list_of_elements])
def test_a_container_of_elements_of_a_vector_holds_numbers(fun, backend):
    # v is 1-d: t holds numbers, which the write into v does not change (checked where it runs).
    expected = central_difference_grad(fun, (X3,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun), backend=backend)(X3), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [tuple_of_elements, tuple_from_a_helper, list_of_elements])
def test_a_container_of_rows_is_refused_and_not_called_a_view(fun, backend):
    # v is 2-d: t holds rows of v, which the write changes; refused where it runs, said as it is.
    with pytest.raises(s2s.S2SError, match="where it holds rows of v") as info:
        s2s.jit(s2s.grad(fun), backend=backend)(np.arange(6.0).reshape(3, 2))
    assert "a view of it" not in info.value.reason
    assert_names_the_user(info.value, "v", "t")


# ---- second derivatives of code that reads m[1][2], then writes m[1, 2] ---------------------


def central_difference_hessian(fun, x, h=1e-4):
    """Second central differences of the scalar fun, entry by entry."""
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(a, b):
                y = x.copy()
                y[i] += a
                y[j] += b
                return fun(y)
            hessian[i, j] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    return hessian


def chained_index(x):
    m = np.outer(x, x) + np.eye(3)
    e = m[1][2]
    m[1, 2] = e * x[0]
    return np.sum(m * m)


def row_then_element(x):
    m = np.outer(x, x) + np.eye(3)
    r = m[1]
    e = r[0]
    m[1, 2] = e * x[0]
    return np.sum(m * m)


def lu_energy(x):  # LU elimination without pivoting, reading A[k][k] and A[i][k]
    A = np.outer(x, x) + 3.0 * np.eye(3)
    for k in range(3):
        for i in range(k + 1, 3):
            factor = A[i][k] / A[k][k]
            for j in range(k, 3):
                A[i, j] = A[i, j] - factor * A[k][j]
    return np.sum(A * A)


def row_shape_after_the_write(x):  # r's shape, which the write does not change, is read after it
    m = np.outer(x, x) + np.eye(3)
    r = m[1]
    m[1, 2] = x[0] * 2.0
    return np.sum(m * m) * r.shape[0]


def row_read_after_the_write(x):  # r is a row of m: the write changes what r holds
    m = np.outer(x, x)
    r = m[1]
    m[1, 2] = x[0]
    return np.sum(r * r)


@pytest.mark.parametrize("fun", [chained_index, row_then_element, lu_energy, row_shape_after_the_write])
def test_second_derivatives_after_an_element_read_and_a_write(fun):
    gradient = s2s.grad(fun)(X3)
    np.testing.assert_allclose(gradient, central_difference_grad(fun, (X3,), 0), rtol=1e-7, atol=1e-8)
    expected = central_difference_hessian(fun, X3)
    for transform in (s2s.hessian(fun), s2s.jacfwd(s2s.grad(fun)), s2s.jacrev(s2s.grad(fun)),
                      s2s.jit(s2s.hessian(fun)), s2s.jit(s2s.hessian(fun), backend="python")):
        np.testing.assert_allclose(transform(X3), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transform", [s2s.grad, s2s.hessian])
def test_a_row_read_after_the_write_is_still_refused(transform):
    with pytest.raises(s2s.S2SError, match="a view of it") as info:
        transform(row_read_after_the_write)(X3)
    assert_names_the_user(info.value, "m", "r")


# ---- a copy made in each pass of a loop is a new array ----------------------------------------


def double_buffered_heat(u, steps):
    n = u.shape[0]
    for t in range(steps):
        v = u.copy()
        for i in range(n):
            v[i] = u[i] + 0.1 * (u[i - 1] - 2.0 * u[i] + u[(i + 1) % n])
        u = v
    return np.sum(u * u)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_double_buffered_time_stepping_is_not_refused(backend):
    """v = u.copy() at the top of each step is a new array, not the one u = v refers to from the
    step before (the alias analysis tells them apart by when they were made, not only where)."""
    u = np.array([0.1, 0.5, -0.3, 0.8])
    check_grads(double_buffered_heat, (u, 3), argnums=(0,), backend=backend)
