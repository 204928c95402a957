"""Red team (session 19): reverse mode of lists grown with .append, comprehensions, forward over
reverse, np.fmax/fmin/tril/triu, loops over dicts. Each derivative is checked against central
differences; what s2s cannot differentiate must be refused with an S2SError at the user's line."""

import numpy as np
import pytest

import s2s

from finite_differences import central_differences, where

X = np.array([0.3, 1.2, -0.5, 0.7])


def _close(got, fun, x):
    np.testing.assert_allclose(got, central_differences(fun, x), rtol=1e-5, atol=1e-7)


# ---- a list appended into another list, then grown ------------------------------------
# outer[k] is inner itself: the items appended to inner later are outer's too. The reverse
# sweep gave inner's items an adjoint apart from outer's reads: the gradient was 0.


def appended_then_grown(x):
    outer = []
    inner = []
    outer.append(inner)
    inner.append(x[0] * x[1])
    return outer[0][0]


def appended_twice_then_grown(x):
    t = []
    row = []
    t.append(row)
    t.append(row)
    row.append(x[0])
    return t[0][0] * t[1][0]


def shared_row_grown_in_loop(x):
    t = []
    row = []
    for i in range(3):
        row.append(x[i])
        t.append(row)
    return t[0][0] + t[0][2] * x[3]


def new_row_grown_after_append(x):
    t = []
    for i in range(3):
        row = []
        t.append(row)
        row.append(x[i] ** 2)
    return t[0][0] + t[2][0] * x[3]


def row_and_its_list_both_read(x):
    outer = []
    inner = []
    outer.append(inner)
    inner.append(x[0] * x[1])
    return np.sum(np.array(inner)) + outer[0][0]


def stored_by_index_then_grown(x):
    outer = [0.0, 0.0]
    inner = []
    outer[0] = inner
    inner.append(x[0] * x[1])
    return outer[0][0] + outer[1]


def stored_in_dict_then_grown(x):
    d = {}
    inner = []
    d["a"] = inner
    inner.append(x[0] * x[1])
    return d["a"][0]


@pytest.mark.parametrize("fun, line", [
    (stored_by_index_then_grown, "outer[0] = inner"),
    (stored_in_dict_then_grown, 'd["a"] = inner'),
    (appended_then_grown, "outer.append(inner)"),
    (appended_twice_then_grown, "t.append(row)"),
    (shared_row_grown_in_loop, "t.append(row)"),
    (new_row_grown_after_append, "t.append(row)"),
    (row_and_its_list_both_read, "outer.append(inner)"),
])
def test_list_appended_then_grown_is_refused(fun, line):
    # (it gave 0 for [1.2, 0.3, 0, 0], [0.6, 0, 0, 0], ... : a silent wrong gradient)
    # (forward mode takes them: test_list_appended_then_grown_forward)
    with pytest.raises(s2s.S2SError, match=where(fun, line)):
        s2s.grad(fun)(X)


@pytest.mark.parametrize("fun", [appended_then_grown, appended_twice_then_grown, shared_row_grown_in_loop,
                                 new_row_grown_after_append, row_and_its_list_both_read,
                                 stored_by_index_then_grown])
def test_list_appended_then_grown_forward(fun):
    _close(s2s.jacfwd(fun)(X), fun, X)


def complete_rows(x):  # each row complete when appended, made anew each pass: taken
    t = []
    for i in range(4):
        row = []
        for j in range(4):
            row.append(x[i] * x[j])
        t.append(row)
    return np.sum(np.array(t) ** 2) + t[1][2]


def same_complete_row_twice(x):
    t = []
    row = []
    row.append(x[0])
    t.append(row)
    t.append(row)
    return t[0][0] * t[1][0]


@pytest.mark.parametrize("fun", [complete_rows, same_complete_row_twice])
def test_complete_rows_appended(fun):
    _close(s2s.grad(fun)(X), fun, X)


# ---- a dict looped over and also indexed -----------------------------------------------
# `for k, v in d.items()` lowers to `_seq = d` and reads _seq[k]; where d is also read as d[k]
# its adjoint was gathered with `d_bar += _seq_bar`: a raw TypeError for two dicts.

P = {"b": np.array([0.3, -1.2]), "a": np.array([0.5, 0.9])}


def dict_items_then_indexed(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v * 3.0)
    for k in d:
        s = s + np.sum(d[k] * d[k])
    return s


def dict_comprehension_then_indexed(d):
    e = {k: v * 2.0 for k, v in d.items()}
    s = 0.0
    for k in e:
        s = s * 0.5 + np.sum(e[k] * d[k])
    return s


def _dict_differences(fun, d):
    keys = list(d)

    def of_leaves(*leaves):
        return fun(dict(zip(keys, leaves)))

    from finite_differences import central_difference_grad
    return {k: central_difference_grad(of_leaves, [d[j] for j in keys], i) for i, k in enumerate(keys)}


@pytest.mark.parametrize("fun", [dict_items_then_indexed, dict_comprehension_then_indexed])
def test_dict_looped_and_indexed(fun):
    got = s2s.grad(fun)(P)
    expected = _dict_differences(fun, P)
    assert list(got) == list(P)
    for k in P:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-5, atol=1e-7)


# ---- second derivatives of a loop over a dict -------------------------------------------
# s2s.hessian (and jacfwd(grad(f)), jacrev(grad(f))) call the function with its dict argument
# rebuilt by pytree.unflatten, whose keys are sorted: `for k in d:` then goes over "a" before
# "z", and the Hessian is that of another function (doors/hessian.py, line `call = [...]`;
# the rebuilt dict should keep the argument's key order). First order, jvp(grad) and vmap
# are right.


def halved_in_key_order(d):
    s = 0.0
    for k in d:
        s = s * 0.5 + d[k] ** 2
    return s  # {"z": z, "a": a}: 0.5 z**2 + a**2


@pytest.mark.parametrize("second", ["hessian", "jacfwd_grad", "jacrev_grad"])
def test_hessian_of_dict_loop_keeps_key_order(second):
    d = {"z": 0.3, "a": 0.5}
    transform = {"hessian": s2s.hessian, "jacfwd_grad": lambda f: s2s.jacfwd(s2s.grad(f)),
                 "jacrev_grad": lambda f: s2s.jacrev(s2s.grad(f))}[second]
    H = transform(halved_in_key_order)(d)
    h = 1e-4

    def at(z, a):
        return halved_in_key_order({"z": z, "a": a})

    zz = (at(0.3 + h, 0.5) - 2 * at(0.3, 0.5) + at(0.3 - h, 0.5)) / h ** 2
    aa = (at(0.3, 0.5 + h) - 2 * at(0.3, 0.5) + at(0.3, 0.5 - h)) / h ** 2
    np.testing.assert_allclose([H["z"]["z"], H["a"]["a"], H["z"]["a"]], [zz, aa, 0.0], rtol=1e-5, atol=1e-6)


def test_jvp_of_grad_of_dict_loop():  # (forward over reverse is right: a reference for the above)
    d = {"z": 0.3, "a": 0.5}
    _, hv = s2s.jvp(s2s.grad(halved_in_key_order), (d,), ({"z": 1.0, "a": 0.0},))
    np.testing.assert_allclose([hv["z"], hv["a"]], [1.0, 0.0], atol=1e-9)


# ---- a list grown with .append, read by a helper, then written into ----------------------
# The list was taped as itself (its appends' pops undo them) where a helper's call needed it,
# so the helper's reverse read the list as a later t[0] = ... left it.


def sum_of_squares(lst):
    s = 0.0
    for v in lst:
        s = s + v * v
    return s


def helper_then_item_written(x):
    t = []
    t.append(x[0])
    s = sum_of_squares(t)
    t[0] = x[1]
    return s + sum_of_squares(t)  # x0**2 + x1**2


def helper_then_item_scaled(x):
    t = []
    for i in range(4):
        t.append(x[i])
    s = sum_of_squares(t)
    t[1] = t[1] * 5.0
    return s * sum_of_squares(t)


@pytest.mark.parametrize("fun", [helper_then_item_written, helper_then_item_scaled])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_appended_list_read_by_helper_then_written(fun, backend):
    # (gave [1.2*2, 2.4, 0, 0] for [0.6, 2.4, 0, 0]; [.., 578.16, ..] for [.., 224.592, ..])
    g = s2s.grad(fun) if backend == "python" else s2s.jit(s2s.grad(fun))
    _close(g(X), fun, X)


# ---- a complete list read again in a later loop -------------------------------------------
# A list filled with .append, then passed to a helper (or looped over) inside a later loop that
# grows no list and does not rebind it, was refused ("another name comes to hold inside a
# loop"); the reverse sweep meets each pass with the list as the forward sweep had it.


def helper_in_later_loop(x):
    t = []
    for i in range(3):
        t.append(x[i])
    s = 0.0
    for rep in range(2):
        s = s + sum_of_squares(t) * x[3]
    return s


def loop_over_list_in_later_loop(x):
    t = []
    for i in range(4):
        t.append(x[i])
    s = 0.0
    for rep in range(3):
        for v in t:
            s = s * 0.5 + v * x[rep]
    return s


def helper_in_later_while_then_written(x):
    t = []
    for i in range(4):
        t.append(x[i])
    s = 0.0
    k = 0
    while k < 3:
        s = s + sum_of_squares(t) * x[k]
        k += 1
    t[0] = t[0] * 5.0
    return s + t[0] * sum_of_squares(t)


@pytest.mark.parametrize("fun", [helper_in_later_loop, loop_over_list_in_later_loop,
                                 helper_in_later_while_then_written])
def test_complete_list_read_in_later_loop(fun):
    _close(s2s.grad(fun)(X), fun, X)
    _close(s2s.jit(s2s.grad(fun))(X), fun, X)


def list_written_in_the_loop_that_reads_it(x):
    t = []
    for i in range(4):
        t.append(x[i])
    s = 0.0
    for rep in range(3):
        s = s + sum_of_squares(t) * x[rep]
        t[rep] = t[rep] * 2.0
    return s + t[0]


def test_list_written_in_the_loop_that_passes_it_is_refused():
    with pytest.raises(s2s.S2SError, match=where(list_written_in_the_loop_that_reads_it, "sum_of_squares(t) *")):
        s2s.grad(list_written_in_the_loop_that_reads_it)(X)


# ---- np.fmin / np.fmax: the tangent of the argument not taken ---------------------------
# The rule's tangent was x_dot * x_wins + y_dot * (1 - x_wins): where x is NaN (so y is taken,
# x_wins = 0) and x's tangent is NaN too (x = a * b with a NaN: a * b_dot), 0 * NaN made the
# tangent NaN where the value is y's. runtime.weighted drops the tangent not taken, as JAX's
# select does. (Reverse mode meets the usual 0 * NaN of the product's own rule, as JAX does:
# not tested.)


def fmin_of_nan_product(a, b):
    return np.fmin(a * b, b)


def test_fmin_tangent_where_the_nan_argument_is_not_taken():
    a, b = np.array([np.nan]), np.array([0.4])
    _, tangent = s2s.jvp(fmin_of_nan_product, (a, b), (np.array([1.0]), np.array([0.0])))
    # the value is b wherever a is NaN: its tangent is b's, 0
    np.testing.assert_allclose(tangent, [0.0])


def fmax_of_nan_product_and_floor(a, b):
    return np.fmax(a * b, 0.5) + np.fmax(b, a * b) + np.fmin(b[0], a[0] * b[0])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_fmax_fmin_tangents_against_central_differences(backend):
    """Arrays, a number floor and scalars; a NaN in a: its elements take b's tangent."""
    a, b = np.array([np.nan, 0.3, 2.0]), np.array([0.4, 0.6, 0.1])
    a_dot, b_dot = np.array([1.0, -0.5, 0.25]), np.array([0.3, 1.0, -2.0])
    _, tangent = s2s.jvp(fmax_of_nan_product_and_floor, (a, b), (a_dot, b_dot), backend=backend)
    h = 1e-6
    central = (fmax_of_nan_product_and_floor(a + h * a_dot, b + h * b_dot)
               - fmax_of_nan_product_and_floor(a - h * a_dot, b - h * b_dot)) / (2 * h)
    assert np.isfinite(tangent).all()
    np.testing.assert_allclose(tangent, central, rtol=1e-7, atol=1e-9)


# ---- s2s.jit(s2s.grad(f)) of a slice of a list ------------------------------------------
# The adjoint of t[0:2] is a tuple of its items' adjoints, added into the list's adjoint array
# (runtime.add_at): Numba's `array += tuple` failed inside its own typing, and the S2SError
# named the def line. The overload now makes the tuple an array first.


def unpack_a_slice_of_a_list(x):
    t = [x[0], x[1], x[2]]
    c, d = t[0:2]
    return c * d


def unpack_a_slice_of_a_list_of_arrays(x):
    t = [x, 2.0 * x, x * x]
    c, d = t[1:3]
    return np.sum(c * d)


def strided_and_negative_slices(x):
    t = [x[0], x[1], x[2], x[0] * x[2]]
    u = t[::2]
    v = t[-2:]
    return u[0] * u[1] + v[0] * v[1]


def slice_of_an_appended_list(x):
    t = []
    for i in range(3):
        t.append(x[i] * x[i])
    c, d = t[1:]
    return c * d


SLICED = [unpack_a_slice_of_a_list, unpack_a_slice_of_a_list_of_arrays, strided_and_negative_slices,
          slice_of_an_appended_list]


@pytest.mark.parametrize("fn", SLICED, ids=lambda f: f.__name__)
def test_slices_of_lists_python_backend(fn):
    _close(s2s.grad(fn)(X), fn, X)


@pytest.mark.parametrize("fn", SLICED, ids=lambda f: f.__name__)
def test_slices_of_lists_under_jit(fn):
    _close(s2s.jit(s2s.grad(fn))(X), fn, X)
