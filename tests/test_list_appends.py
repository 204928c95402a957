"""Reverse mode of lists grown with .append: the reverse sweep pops each list and its adjoint
as the forward sweep appended (sweep.py, reverse_push). Each gradient is checked against
central differences; what s2s cannot differentiate this way is refused with the user's line."""

import numpy as np
import pytest

import s2s

X = np.array([0.3, 1.2, -0.5, 0.7])


def differences(f, x, *rest, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * eps)
    return g


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
    (helper_appends_to_callers_list, "add_to writes into its parameter out", "_ = add_to(out, x[0] ** 2)"),
], ids=["written_after_append", "appended_through_another_name", "shared_in_a_loop",
        "returns_the_list", "helper_appends_to_callers_list"])
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


def test_a_helper_appending_to_its_callers_list_is_refused_in_forward_mode_too():
    # (forward mode gave 0 for its derivative: the helper's append never reached the caller)
    with pytest.raises(s2s.S2SError, match="add_to writes into its parameter out"):
        s2s.jacfwd(helper_appends_to_callers_list)(X)
