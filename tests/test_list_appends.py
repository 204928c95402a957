"""Reverse mode of lists grown with .append: the reverse sweep pops each list and its adjoint
as the forward sweep appended (sweep.py, reverse_push); a list appended into another then grown,
a list read by a helper or in a later loop, and slices of lists (with steps, under s2s.jit too).
Each gradient is checked against central differences; what s2s cannot differentiate this way is
refused with the user's line. (Lists that loops grow, read and rebind: test_reverse_lists.py.)"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, central_differences, where

X = np.array([0.3, 1.2, -0.5, 0.7])


def differences(f, x, *rest, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * eps)
    return g


def _close(got, fun, x):
    np.testing.assert_allclose(got, central_differences(fun, x), rtol=1e-5, atol=1e-7)


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- programs ------------------------------------------------------------------------


def products(x):
    out = []
    for i in range(x.shape[0] - 1):
        out.append(x[i] * x[i + 1])
    return np.sum(np.array(out))


def trajectory(x):  # reads the list it grows
    traj = [x[0]]
    for _ in range(5):
        traj.append(traj[-1] + 0.1 * np.sin(x[1] * traj[-1]))
    return np.sum(np.array(traj) ** 2)


def stacked_rows(x):
    out = []
    for i in range(3):
        out.append(x * (i + 1.0))
    return np.sum(np.stack(out) ** 2) + len(out)


def straight_line(x):
    out = []
    out.append(np.sin(x[0]))
    out.append(x[1] ** 2)
    return out[0] * out[1]


def branches_then_reads(x):
    out = []
    for i in range(x.shape[0]):
        if x[i] > 0:
            out.append(x[i] ** 2)
        else:
            out.append(np.exp(x[i]))
    total = 0.0
    for k in range(len(out)):
        total = total + out[k] * (k + 1.0)
    return total


def while_loop(x):
    out = [x[0]]
    while len(out) < 4:
        out.append(out[-1] * x[1] + x[2])
    return np.sum(np.array(out))


def made_anew_each_pass(x):
    total = 0.0
    for j in range(3):
        vals = []
        for i in range(3):
            vals.append(np.sin(x[i] * (j + 1.0)))
        total = total + np.sum(np.array(vals) ** 2)
    return total


def list_of_lists(x):
    rows = []
    for j in range(2):
        row = []
        for i in range(3):
            row.append(x[i] * (j + 1.0) + x[3])
        rows.append(row)
    return rows[0][2] * rows[1][0] + rows[1][1] ** 2


def written_then_grown(x):
    out = [x[0], x[1]]
    out[0] = out[1] * x[2]
    for _ in range(2):
        out.append(out[-1] * out[0])
    out[1] = 2.0 * out[3]
    return np.sum(np.array(out))


def same_value_twice(x):
    out = []
    y = x[0] * x[1]
    out.append(y)
    out.append(y)
    return out[0] * out[1] + np.sum(np.array(out))


def reductions_of_a_list(x):
    out = []
    for i in range(3):
        out.append(x[i] ** 2)
    return np.sum(out) + np.max(out) + np.mean(np.array(out) * x[3])


def indices_gathered(x):
    idx = []
    for i in range(4):
        if x[i] > 0:
            idx.append(i)
    total = 0.0
    for k in range(len(idx)):
        total = total + x[idx[k]] ** 2
    return total


def display_written(x):  # (a list display's adjoint was a tuple: the write's reverse failed)
    out = [x[0], x[1]]
    out[0] = out[1] * x[2]
    return np.sum(np.array(out))


def appends_to_its_argument(x, lst):
    lst.append(x[0] ** 2)
    return np.sum(np.array(lst)) * x[1]


PROGRAMS = [products, trajectory, stacked_rows, straight_line, branches_then_reads, while_loop,
            made_anew_each_pass, list_of_lists, written_then_grown, same_value_twice, reductions_of_a_list,
            indices_gathered, display_written]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_matches_central_differences(f):
    np.testing.assert_allclose(s2s.grad(f)(X), differences(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [products, trajectory, branches_then_reads, while_loop, made_anew_each_pass],
                         ids=lambda f: f.__name__)
def test_jit_grad_and_jacrev(f):
    reference = differences(f, X)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(X), reference, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jacrev(f)(X), reference, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [trajectory, straight_line, while_loop], ids=lambda f: f.__name__)
def test_hessian_forward_over_the_popping_reverse_code(f):
    gradient = s2s.grad(f)
    rows = [differences(lambda y, i=i: gradient(y)[i], X) for i in range(X.size)]
    np.testing.assert_allclose(s2s.hessian(f)(X), np.array(rows), rtol=1e-5, atol=1e-6)


def test_an_argument_list_is_appended_to_on_a_private_copy():
    lst = [1.0, 2.0]
    g = s2s.grad(appends_to_its_argument)(X, lst)
    # f = (3 + x0^2) x1
    np.testing.assert_allclose(g, [2 * X[0] * X[1], 3 + X[0] ** 2, 0, 0], rtol=1e-12)
    assert lst == [1.0, 2.0]
    np.testing.assert_allclose(s2s.jacfwd(appends_to_its_argument)(X, lst), g, rtol=1e-12)
    assert lst == [1.0, 2.0]


# ---- refusals ------------------------------------------------------------------------


def written_after_append(x):
    out = []
    v = np.zeros(2)
    out.append(v)
    v[0] = x[0] * 3.0  # NumPy: out[0] is v, so this write changes it
    return np.sum(np.array(out)) + x[1]


def appended_through_another_name(x):
    out = []
    other = out
    other.append(x[0] ** 2)
    return np.sum(np.array(out))


def shared_in_a_loop(x):
    last = [0.0]
    for j in range(2):
        row = []
        for i in range(3):
            row.append(x[i] * (j + 1.0))
        last = row
    return last[1] ** 2


def zero_adjoint_of_a_list_made_in_a_loop(x):
    total = 0.0
    for j in range(3):
        vals = []
        for i in range(3):
            vals.append(np.sin(x[i] * (j + 1.0)))
        if x[3] > 0:
            total = total + np.sum(np.array(vals) ** 2)
    return total


def returns_the_list(x):
    out = []
    out.append(x[0] * 2.0)
    return np.sum(x), out


def add_to(out, v):
    out.append(v)
    return 0.0


def helper_appends_to_callers_list(x):
    out = []
    _ = add_to(out, x[0] ** 2)
    return np.sum(np.array(out))


@pytest.mark.parametrize("f, match, line", [
    (written_after_append, "writing into v would also change out", "v[0] = x[0] * 3.0"),
    (appended_through_another_name, "other may be a list that another name holds", "other = out"),
    (shared_in_a_loop, "another name comes to hold inside a loop", "last = row"),
    (returns_the_list, "result holds out", "out.append(x[0] * 2.0)"),
], ids=["written_after_append", "appended_through_another_name", "shared_in_a_loop", "returns_the_list"])
def test_refused_with_the_users_line(f, match, line):
    make = (lambda g: s2s.grad(g, has_aux=True)) if f is returns_the_list else s2s.grad
    with pytest.raises(s2s.S2SError, match=match) as info:
        make(f)(X)
    assert line in str(info.value)


@pytest.mark.parametrize("x3", [0.7, -0.7])
def test_a_list_made_anew_in_a_loop_whose_adjoint_starts_before_a_branch(x3):
    # (refused before: the zeros of vals_bar took the length of the list vals then named, a later
    # pass's, which the reverse sweep's pops had emptied; they take the taped length now)
    f = zero_adjoint_of_a_list_made_in_a_loop
    x = np.array([0.3, 1.2, -0.5, x3])
    reference = differences(f, x)
    np.testing.assert_allclose(s2s.grad(f)(x), reference, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x), reference, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jacfwd(f)(x), reference, rtol=1e-6, atol=1e-8)


def test_a_helper_appending_to_its_callers_list_appends_there_in_every_mode():
    """The helper is written out at its call (frontend/writing_calls.py), so its append reaches
    the caller's list, as in Python: d/dx0 of x0 ** 2."""
    expected = np.zeros_like(X)
    expected[0] = 2.0 * X[0]
    for derivative in (s2s.grad, s2s.jacfwd, lambda f: s2s.jit(s2s.grad(f))):
        np.testing.assert_allclose(derivative(helper_appends_to_callers_list)(X), expected, rtol=1e-14)

# ---- a list appended into another list, then grown ------------------------------------
# outer[k] is inner itself: the items appended to inner later are outer's too. Reverse mode would
# give inner's items an adjoint apart from outer's reads (a gradient of 0): refused.


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
    # (not 0 for [1.2, 0.3, 0, 0], [0.6, 0, 0, 0], ... : a silent wrong gradient)
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


# ---- a list grown with .append, read by a helper, then written into ----------------------
# The list is taped for the helper's call as it is there, not as itself (whose appends' pops undo
# them), which the helper's reverse would read as a later t[0] = ... left it.


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
    # (as a later write left the list: [1.2*2, 2.4, 0, 0] for [0.6, 2.4, 0, 0]; [.., 578.16, ..] for
    # [.., 224.592, ..])
    g = s2s.grad(fun) if backend == "python" else s2s.jit(s2s.grad(fun))
    _close(g(X), fun, X)


# ---- a complete list read again in a later loop -------------------------------------------
# A list filled with .append, then passed to a helper (or looped over) inside a later loop that
# grows no list and does not rebind it: the reverse sweep meets each pass with the list as the
# forward sweep had it (no refusal as a list "another name comes to hold inside a loop").


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


# ---- s2s.jit(s2s.grad(f)) of a slice of a list ------------------------------------------
# The adjoint of t[0:2] is a tuple of its items' adjoints, added into the list's adjoint array
# (runtime.add_at), whose overload makes the tuple an array first (Numba's `array += tuple` fails
# inside its own typing).


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


# ---- slices of lists with steps under jit(grad) -------------------------------------------------


def list_slices(x):
    t = [x[0], x[1] * x[2], x[2] ** 2, x[3], x[0] * x[3]]
    a, b, c = t[::2]
    d, e = t[-2:]
    f, g, h, i, j = t[::-1]
    p, q = t[3:0:-2]
    return a * 2.0 + b * c + d * e + f * 5.0 + g * h + i * j + p * 7.0 + q * q


def test_slices_of_lists_with_steps():
    x = np.array([0.3, 1.2, -0.5, 0.7])
    want = central_difference_grad(list_slices, [x], 0)
    close(s2s.grad(list_slices)(x), want)
    close(s2s.jit(s2s.grad(list_slices))(x), want)


# ---- constant slices of a list argument whose items differ in type, under jit(grad) -------------
# (a tuple under Numba: each item's adjoint goes to its slot at an index known when it compiles)


def slices_of_a_nested_list_argument(l):
    rest = l[1:]
    return l[1:][0] * 3.0 + l[0][0] * rest[1] + l[::-2][0] ** 2


def test_constant_slices_of_a_list_of_mixed_items_under_jit():
    first, second, third = 1.3, 2.0, 1.5

    def of_numbers(a, b, c):
        return slices_of_a_nested_list_argument([[a], b, c])

    want = [central_difference_grad(of_numbers, [first, second, third], k) for k in range(3)]
    for grad in (s2s.grad(slices_of_a_nested_list_argument), s2s.jit(s2s.grad(slices_of_a_nested_list_argument))):
        got = grad([[first], second, third])
        assert isinstance(got, list) and isinstance(got[0], list)
        close(got[0][0], want[0])
        close(got[1], want[1])
        close(got[2], want[2])
