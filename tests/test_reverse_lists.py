"""Reverse mode of lists that loops grow, read and rebind: the loss of a list grown with .append
returned through a helper, list comprehensions made anew in each pass of a loop, loops over a list
that write into it or rebind it, rows of lists or arrays made in a loop, names rebound to values
of another length or shape (whose adjoints start as zeros of the shape the name had there), and
lists made by repetition (`[0.0] * n`) then grown. Each accepted program is checked against
central differences: s2s.grad on the python backend, s2s.jit(s2s.grad(f)) where Numba takes the
program, and forward mode (s2s.jvp, s2s.jacfwd); what stays refused names the user's variable and
line."""

import numpy as np
import pytest

import s2s
from checks import check_all, close
from finite_differences import central_differences, hessian_by_differences, where as at

X = np.array([0.3, 0.7, 1.1])


# ---- `return loss(preds)` of a list grown with .append ----------------------------------------
# (a helper's result does not hold every list passed to it: the helper's summary, result_views,
# says whether it may; where it may, "a function whose result holds preds" is refused)


def loss(preds):
    s = 0.0
    for p in preds:
        s = s + p * p
    return s


def loss_against(preds, y):
    return np.sum((np.array(preds) - y) ** 2)


def returns_the_loss_of_a_grown_list(x):
    preds = []
    for i in range(3):
        preds.append(x[i] * x[0])
    return loss(preds)


def the_loss_named_then_returned(x):
    preds = []
    for i in range(3):
        preds.append(x[i] * x[0])
    out = loss(preds)
    return out


def returns_the_loss_against_the_argument(x):
    preds = []
    for i in range(3):
        preds.append(np.sin(x[i]) * x[2])
    return loss_against(preds, x)


@pytest.mark.parametrize("f", [returns_the_loss_of_a_grown_list, the_loss_named_then_returned,
                               returns_the_loss_against_the_argument], ids=lambda f: f.__name__)
def test_the_loss_of_a_grown_list_returned(f):
    check_all(f, X)


def returns_the_list_through_a_helper(x):
    preds = []
    for i in range(3):
        preds.append(x[i] * x[0])
    return np.sum(x), same(preds)


def same(t):
    return t


def test_a_helper_that_may_return_the_list_stays_refused():
    # same(preds) returns the list itself, which the reverse sweep's pops would empty
    with pytest.raises(s2s.S2SError, match="result holds preds") as info:
        s2s.grad(returns_the_list_through_a_helper, has_aux=True)(X)
    assert at(returns_the_list_through_a_helper, "preds.append(x[i] * x[0])") in str(info.value)


# ---- a list comprehension in a loop, then sum(ys) or `for v in ys:` ---------------------------------
# (the loop over ys reads ys itself, not a name of its own, _seq, which "another name comes to hold
# inside a loop"; and the zeros that start ys's adjoint before a loop take the length taped after
# the loop, not that of the list ys names there, a later pass's, which the reverse sweep has emptied)


def sum_of_a_comprehension_in_a_loop(x):
    total = 0.0
    for i in range(3):
        ys = [x[j] * x[i] for j in range(3)]
        total = total + sum(ys)
    return total


def loop_over_a_comprehension_in_a_loop(x):
    total = 0.0
    for i in range(3):
        ys = [x[j] * x[i] for j in range(3)]
        for v in ys:
            total = total + v * v
    return total


def comprehension_of_varying_length(x):
    total = 0.0
    for i in range(3):
        ys = [x[j] * x[i] for j in range(i + 1)]
        for v in ys:
            total = total + v * np.sin(v)
    return total


def comprehension_read_in_a_branch(x):
    total = 0.0
    for i in range(3):
        ys = [x[j] * x[i] for j in range(3)]
        if x[i] > 0.5:
            for v in ys:
                total = total + v * v
    return total


def comprehension_in_a_while_loop(x):
    total = 0.0
    i = 0
    while i < 3:
        ys = [np.exp(x[j]) * x[i] for j in range(3)]
        total = total + sum(ys) * x[i]
        i += 1
    return total


def comprehension_enumerated(x):
    total = 0.0
    for i in range(3):
        ys = [x[j] * x[i] for j in range(3)]
        for j, v in enumerate(ys):
            total = total + v * x[j]
    return total


def comprehension_read_by_index(x):
    total = 0.0
    for i in range(3):
        ys = [x[j] * x[i] for j in range(3)]
        for j in range(len(ys)):
            total = total + ys[j] * ys[j]
    return total


COMPREHENSIONS = [sum_of_a_comprehension_in_a_loop, loop_over_a_comprehension_in_a_loop,
                  comprehension_of_varying_length, comprehension_read_in_a_branch, comprehension_in_a_while_loop,
                  comprehension_enumerated, comprehension_read_by_index]


@pytest.mark.parametrize("f", COMPREHENSIONS, ids=lambda f: f.__name__)
def test_a_comprehension_in_a_loop_then_read(f):
    check_all(f, X)


def test_a_comprehension_in_a_branch_skipped_on_some_passes():
    # x[0], x[1] < 0.5: the first two passes read nothing of ys
    check_all(comprehension_read_in_a_branch, np.array([0.3, 0.2, 1.1]))


@pytest.mark.parametrize("f", [sum_of_a_comprehension_in_a_loop, loop_over_a_comprehension_in_a_loop])
def test_a_comprehension_in_a_loop_second_order(f):
    np.testing.assert_allclose(s2s.hessian(f)(X), hessian_by_differences(f, X), rtol=1e-4, atol=1e-4)


def comprehension_of_arrays_in_a_loop(x):
    total = 0.0
    for i in range(3):
        ys = [x * x[j] for j in range(3)]
        for v in ys:
            total = total + np.sum(v * np.cos(v)) * x[i]
    return total


def test_a_comprehension_of_arrays_in_a_loop():
    check_all(comprehension_of_arrays_in_a_loop, X)


def test_the_generated_loop_reads_the_list_itself():
    grad = s2s.grad(loop_over_a_comprehension_in_a_loop)
    grad(X)
    source = s2s.source(grad)
    assert "_seq" not in source  # (no second name for ys, which reverse mode could not restore)


# ---- loops over a list that write into it or rebind it -----------------------------------------
# (a write into ys is not refused as one that "would also change _seq", the loop's own name for the
# list, which is the same list in Python too)


def write_in_the_loop_over_a_list(x):
    ys = [x[0], x[1], x[2]]
    total = 0.0
    for v in ys:
        ys[2] = v * ys[2]
        total = total + v * ys[2]
    return total


def update_in_the_loop_over_a_list(x):
    ys = [x[0], x[1], x[2]]
    total = 0.0
    for v in ys:
        ys[0] += v
        total = total + v * ys[0]
    return total


def grown_then_read_in_a_while_loop(x):
    total = 0.0
    for i in range(3):
        ys = []
        for j in range(i + 1):
            ys.append(x[j] * x[i])
        while len(ys) > 0 and total < 100.0:
            total = total + ys[-1] * 2.0
            break
    return total


@pytest.mark.parametrize("f", [write_in_the_loop_over_a_list, update_in_the_loop_over_a_list,
                               grown_then_read_in_a_while_loop], ids=lambda f: f.__name__)
def test_more_lists_read_in_loops(f):
    check_all(f, X)


def rows_of_lists_in_a_loop(x):
    out = 0.0
    for i in range(2):
        rows = [[x[j] * x[i], x[j]] for j in range(3)]
        for r in rows:
            out = out + sum(r) * x[i]
    return out


def rows_of_arrays_in_a_loop(x):
    out = 0.0
    for i in range(2):
        rows = [np.array([x[j] * x[i], x[j]]) for j in range(3)]
        for r in rows:
            out = out + np.sum(r) * x[i]
    return out


def rows_of_different_lengths_in_a_loop(x):
    out = 0.0
    for i in range(2):
        rows = [[x[j] * x[i] for k in range(j + 1)] for j in range(3)]
        for r in rows:
            out = out + r[0] * x[i]
    return out


def test_rows_of_lists_in_a_loop():
    # Under Numba the adjoint of a list of lists (or tuples) of numbers is an array with a row
    # per item, as a list of arrays' is
    check_all(rows_of_lists_in_a_loop, X)
    check_all(rows_of_arrays_in_a_loop, X)
    # Rows of different lengths have no such array: refused as the adjoint is made (an adjoint
    # row broadcast into a longer one would be a wrong gradient); the python backend takes them
    f = rows_of_different_lengths_in_a_loop
    close(s2s.grad(f)(X), central_differences(f, X))
    with pytest.raises(s2s.S2SError, match="adjoint of a list of lists of different lengths"):
        s2s.jit(s2s.grad(f))(X)


def list_rebound_in_the_loop_over_it(x):
    # Python goes over the first list though the body rebinds ys: the loop keeps its own name
    ys = [x[0], x[1]]
    total = 0.0
    for v in ys:
        ys = [v * 2.0]
        total = total + v * ys[0]
    return total


def test_a_list_rebound_in_the_loop_over_it():
    f = list_rebound_in_the_loop_over_it
    close(s2s.jacfwd(f)(X), central_differences(f, X))


def test_a_list_rebound_in_the_loop_over_it_in_reverse_mode():
    # (was an IndexError: the adjoint of ys before the loop took the length of the last list
    # the loop bound ys to; the ys the loop binds, which nothing reads after it, is renamed apart
    # in reverse mode, its adjoint made in each iteration with that iteration's length)
    f = list_rebound_in_the_loop_over_it
    expected = central_differences(f, X)
    close(s2s.grad(f)(X), expected)
    close(s2s.jit(s2s.grad(f))(X), expected)
    assert "ys_2 = [v * 2.0]" in s2s.source(s2s.grad(f))


# ---- names rebound to values of another length or shape ----------------------------------------
# Around loops and branches that read them: the zeros that the reverse sweep starts their adjoints
# with take the shape of the value the name held there, not of the one it holds at the end (which
# would be an IndexError, or a broadcast error).

def rebound_to_a_longer_list(x):
    ys = [x[0], x[1]]
    total = 0.0
    for v in ys:
        ys = [v * 2.0, v * x[2], x[1]]
        total = total + v * ys[1] + ys[2]
    return total


def rebound_to_an_empty_list(x):
    ys = [x[0], x[1], x[2]]
    total = 0.0
    for v in ys:
        ys = []
        total = total + v * v
    return total


def rebound_in_a_while_loop_over_it(x):
    ys = [x[0], x[1], x[2]]
    total = 0.0
    k = 0
    while k < 2:
        for v in ys:
            ys = [v * x[2]]
            total = total + v * ys[0]
        k = k + 1
    return total


def rebound_after_a_while_loop_reads_it(x):
    ys = [x[0], x[1]]
    total = 0.0
    while len(ys) < 4:
        for v in ys:
            total = total + v * x[2]
        ys = [x[0], x[1], x[2], x[0] * x[1]]
    return total + ys[3]


def rebound_after_a_nested_loop_over_it(x):
    ys = [x[0], x[1]]
    total = 0.0
    for v in ys:
        for w in ys:
            total = total + v * w
        ys = [v * 3.0]
    return total


def rebound_in_the_inner_loop_over_it(x):
    ys = [x[0], x[1]]
    total = 0.0
    for v in ys:
        for w in ys:
            total = total + v * w
            ys = []
    return total


def rebound_in_an_enumerate_loop_over_it(x):
    ys = [x[0], x[1], x[2]]
    total = 0.0
    for i, v in enumerate(ys):
        ys = [v * x[i], v]
        total = total + ys[0] * ys[1]
    return total


def rebound_in_a_branch_of_the_loop_over_it(x):
    ys = [x[0], x[1], x[2]]
    total = 0.0
    for v in ys:
        if v > 0.5:
            ys = [v * 3.0]
        total = total + v * ys[-1]
    return total


def rebound_after_a_loop_reads_it(x):
    ys = [x[0], x[1]]
    total = 0.0
    for i in range(2):
        total = total + ys[i] * x[2]
    ys = [x[0] * 2.0]
    return total + ys[0]


def rebound_in_a_branch(x):
    ys = [x[0], x[1]]
    total = ys[0] * ys[1]
    if x[2] > 0:
        ys = [x[2]]
    return total + ys[0]


def tuple_rebound_in_the_loop_over_it(x):
    ys = (x[0], x[1])
    total = 0.0
    for v in ys:
        ys = (v * 2.0,)
        total = total + v * ys[0]
    return total


def array_rebound_in_the_loop_over_it(x):
    y = x[:3]
    total = 0.0
    for v in y:
        y = np.array([v * 2.0])
        total = total + v * y[0]
    return total


def array_first_bound_in_the_loop_with_its_length(x):
    total = 0.0
    for i in range(1, 4):
        y = x[:i] * 2.0
        total = total + np.sum(y * y)
    return total + np.sum(y)


def array_rebound_to_another_shape_after_a_loop(x):
    y = x[:3] * 1.0
    total = 0.0
    for i in range(3):
        total = total + y[i] * x[2]
    y = x[:2] * 2.0
    return total + np.sum(y)


@pytest.mark.parametrize("f", [
    rebound_to_a_longer_list, rebound_to_an_empty_list, rebound_in_a_while_loop_over_it,
    rebound_after_a_while_loop_reads_it, rebound_after_a_nested_loop_over_it, rebound_in_the_inner_loop_over_it,
    rebound_in_an_enumerate_loop_over_it, rebound_in_a_branch_of_the_loop_over_it, rebound_after_a_loop_reads_it,
    rebound_in_a_branch, tuple_rebound_in_the_loop_over_it], ids=lambda f: f.__name__)
def test_names_rebound_to_values_of_another_length(f):
    expected = central_differences(f, X)
    close(s2s.grad(f)(X), expected)
    close(s2s.jacfwd(f)(X), expected)


def test_names_rebound_to_values_of_another_length_under_jit():
    # (one compile each) The arrays were wrong gradients under jit, not errors: Numba checks no
    # bounds, and the adjoint of x[:3] made as zeros of x[:2]'s shape took writes past its end.
    for f in (rebound_in_a_while_loop_over_it, array_rebound_in_the_loop_over_it,
              array_rebound_to_another_shape_after_a_loop, array_first_bound_in_the_loop_with_its_length):
        close(s2s.jit(s2s.grad(f))(X), central_differences(f, X))


@pytest.mark.parametrize("f", [array_rebound_in_the_loop_over_it, array_rebound_to_another_shape_after_a_loop,
                               array_first_bound_in_the_loop_with_its_length], ids=lambda f: f.__name__)
def test_arrays_rebound_to_another_shape_on_the_python_backend(f):
    # (without s2s.jit's facts any value may change shape: its zeros take a taped shape, and a
    # number's taped shape () gives a number's zero: runtime.zeros_shaped)
    close(s2s.grad(f)(X), central_differences(f, X))


# ---- `t = [0.0] * n`, then grown with .append ----------------------------------------------------
# (a list repeated is a new list: not one that "t may be a list that another name holds" refuses)


def repeated_then_appended(x):
    t = [0.0] * 2
    t.append(x[0])
    t.append(x[1] * x[2])
    return t[0] + t[2] * t[3] + t[1]


def repeated_on_the_left_then_appended_in_a_loop(x):
    t = 2 * [1.0]
    for i in range(3):
        t.append(np.sin(x[i]) * t[-1])
    return t[1] * t[-1] + t[-2]


def repeated_by_a_length_then_appended(x):
    n = len(x)
    t = [0.5] * n
    for i in range(n):
        t.append(t[i] * x[i])
    s = 0.0
    for v in t:
        s = s + v * v
    return s


@pytest.mark.parametrize("f", [repeated_then_appended, repeated_on_the_left_then_appended_in_a_loop,
                               repeated_by_a_length_then_appended], ids=lambda f: f.__name__)
def test_a_repeated_list_grown_with_append(f):
    check_all(f, X)


def repeated_active_item(x):
    t = [x[0]] * 2
    t.append(x[1])
    return t[0] * t[2] + t[1]


def test_a_repeated_active_item_stays_refused_in_reverse_mode():
    # (the adjoints of the repeated items would have to be summed: refused by name)
    with pytest.raises(s2s.S2SError, match="repeats a list or tuple") as info:
        s2s.grad(repeated_active_item)(X)
    assert at(repeated_active_item, "t = [x[0]] * 2") in str(info.value)
    close(s2s.jacfwd(repeated_active_item)(X), central_differences(repeated_active_item, X))
