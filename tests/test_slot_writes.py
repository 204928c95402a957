"""Lists and dicts written into slot by slot: double buffers swapped in a loop (`cur, nxt = nxt,
cur`), `t[k] += v` into a list or dict, a dict rebound in a loop, `t += [v]` through another name.
Each accepted program is checked against central differences, in reverse and forward mode and to
second order; where another name may see the write, the refusal names the user's variable and
line. (Slot writes of lists of numbers read from an argument: test_sequence_semantics.py.)"""

import numpy as np
import pytest

import s2s
from finite_differences import central_differences, hessian_by_differences, where as at

X = np.array([0.3, 0.7, 1.1])


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# ---- double buffers: `cur, nxt = nxt, cur` of two lists -------------------------------------
# (after the swap s2s still knows that nxt is a list display and that cur is another list: no
# refusal as "writing into nxt would also change cur", or as "changes the argument x")


def swapped_lists_of_arrays(x):
    cur = [x * 1.0, x * 2.0]
    nxt = [x * 0.0, x * 0.0]
    for i in range(3):
        nxt[0] = cur[0] * cur[1]
        nxt[1] = cur[1] + x
        cur, nxt = nxt, cur
    return np.sum(cur[0] * nxt[1])


def swapped_lists_of_numbers(x):
    cur = [x[0], x[1]]
    nxt = [0.0, 0.0]
    for i in range(3):
        nxt[0] = cur[0] * cur[1]
        nxt[1] = cur[1] + x[2]
        cur, nxt = nxt, cur
    return cur[0] * nxt[0]


def swapped_through_a_tuple(x):
    cur = [x[0], x[1]]
    nxt = [0.0, 0.0]
    for i in range(3):
        nxt[0] = cur[0] * cur[1]
        nxt[1] = cur[1] + x[2]
        both = (nxt, cur)
        cur = both[0]
        nxt = both[1]
    return cur[0] * nxt[0]


def three_lists_rotated(x):
    a = [x[0], x[1]]
    b = [0.0, 0.0]
    c = [0.0, 0.0]
    for i in range(3):
        b[0] = a[0] * a[1]
        b[1] = a[1] + x[2]
        c[0] = b[0] + a[0]
        c[1] = b[1] * x[0]
        a, b, c = c, a, b
    return a[0] * b[1] + c[0]


def swapped_dicts(x):
    cur = {"u": x[0], "v": x[1]}
    nxt = {"u": 0.0, "v": 0.0}
    for i in range(3):
        nxt["u"] = cur["u"] * cur["v"]
        nxt["v"] = cur["v"] + x[2]
        cur, nxt = nxt, cur
    return cur["u"] * nxt["v"]


DOUBLE_BUFFERS = [swapped_lists_of_arrays, swapped_lists_of_numbers, swapped_through_a_tuple,
                  three_lists_rotated, swapped_dicts]


@pytest.mark.parametrize("f", DOUBLE_BUFFERS)
def test_double_buffers(f):
    expected = central_differences(f, X)
    close(s2s.grad(f)(X), expected)
    close(s2s.jacfwd(f)(X), expected)


@pytest.mark.parametrize("f", [swapped_lists_of_arrays, swapped_lists_of_numbers])
def test_double_buffers_second_order(f):
    np.testing.assert_allclose(s2s.hessian(f)(X), hessian_by_differences(f, X), rtol=1e-4, atol=1e-4)


def test_double_buffer_of_numbers_under_jit():
    f = swapped_lists_of_numbers
    close(s2s.jit(s2s.grad(f))(X), central_differences(f, X))


# The same swaps, where the two names may be one list, or one list holds the other: refused.


def one_list_under_two_names(x):
    a = [x[0] * 1.0, x[1] * 2.0]
    b = a
    for i in range(2):
        a[0] = b[0] * x[2]
        a, b = b, a
    return a[0] * b[1]


def one_list_holds_the_other(x):
    a = [x[0] * 1.0, x[1]]
    b = [a, x[2]]
    a[0] = x[2] * 3.0
    return b[0][0] * x[1]


def one_list_on_one_path(x):
    a = [x[0] * 1.0, x[1]]
    if x[0] > 0:
        b = a
    else:
        b = [x[1], x[2]]
    a[0] = x[2] * 3.0
    return b[0] * x[1]


@pytest.mark.parametrize("f, line", [(one_list_under_two_names, "a[0] = b[0] * x[2]"),
                                     (one_list_holds_the_other, "a[0] = x[2] * 3.0"),
                                     (one_list_on_one_path, "a[0] = x[2] * 3.0")])
def test_a_write_another_name_sees_stays_refused(f, line):
    assert not np.allclose(central_differences(f, X), 0.0)
    with pytest.raises(s2s.S2SError, match="writing into a would also change b") as info:
        s2s.grad(f)(X)
    assert at(f, line) in str(info.value)


# ---- `t[k] += v` into a list or dict ---------------------------------------------------------
# (for a list of numbers the update rebinds the slot: it does not change the argument x in place;
# where the item is an array that the argument shares, it is refused when the code runs)


def numbers_updated_in_a_list(x):
    t = [x[0], x[1]]
    t[0] += x[2] * x[0]
    return t[0] * t[1]


def numbers_multiplied_in_a_list(x):
    t = [x[0], x[1]]
    t[1] *= x[2]
    return t[0] * t[1]


@pytest.mark.parametrize("f", [numbers_updated_in_a_list, numbers_multiplied_in_a_list])
def test_update_of_numbers_in_a_list(f):
    expected = central_differences(f, X)
    close(s2s.grad(f)(X), expected)
    close(s2s.jacfwd(f)(X), expected)
    np.testing.assert_allclose(s2s.hessian(f)(X), hessian_by_differences(f, X), rtol=1e-4, atol=1e-4)


def test_update_of_numbers_in_a_list_under_jit():
    f = numbers_updated_in_a_list
    close(s2s.jit(s2s.jacfwd(f))(X), central_differences(f, X))


def test_update_of_rows_of_the_argument_in_a_list_refused_when_it_runs():
    # for a 2-d x, t[0] is a row of x, which `t[0] += ...` would change in place
    f = numbers_updated_in_a_list
    with pytest.raises(s2s.S2SError, match="would also change x") as info:
        s2s.grad(f)(np.ones((3, 2)))
    assert at(f, "t[0] += x[2] * x[0]") in str(info.value)


# An array item updated in place: forward mode's tangent there must not be x_dot itself (t = [x +
# 1.0]), which `t_dot[0] += ...` would change: jacfwd would give [1.036, 0.804, -0.452] for
# [1.87, 3.87, 6.83].


def array_items_updated(x):
    t = [x + 1.0, x * 2.0]
    t[0] += x * x
    t[1] -= x
    return np.sum(t[0] * t[1])


def array_items_updated_in_a_loop(x):
    t = [x + 1.0, x * 2.0]
    for i in range(2):
        t[0] += t[1] * x
        t[1] *= x
    return np.sum(t[0] * t[1])


def lists_unpacked_from_a_tuple_updated(x):
    p = ([x + 1.0], [x * 2.0])
    a, b = p
    a[0] += x * x
    return np.sum(a[0] * b[0])


@pytest.mark.parametrize("f", [array_items_updated, array_items_updated_in_a_loop,
                               lists_unpacked_from_a_tuple_updated])
def test_update_of_array_items(f):
    expected = central_differences(f, X)
    close(s2s.jacfwd(f)(X), expected)
    close(s2s.grad(f)(X), expected)
    np.testing.assert_allclose(s2s.hessian(f)(X), hessian_by_differences(f, X), rtol=1e-4, atol=1e-4)


# ---- reverse mode of a dict rebound in a loop --------------------------------------------------
# (the zero adjoint of a dict whose shape is taped is a dict, not an array: a raw IndexError)


def dict_rebound_in_a_loop(x):
    d = {"a": x[0], "b": x[1]}
    for i in range(3):
        e = {"a": 0.0, "b": 0.0}
        e["a"] = d["a"] * d["b"]
        e["b"] = d["b"] + x[2]
        d = e
    return d["a"]


def list_of_a_dict_updated(x):
    d = {"k": [x + 1.0, x * 2.0]}
    t = d["k"]
    t[0] += x * x
    return np.sum(t[0] * t[1])


@pytest.mark.parametrize("f", [dict_rebound_in_a_loop, list_of_a_dict_updated])
def test_dicts_in_reverse_mode(f):
    close(s2s.grad(f)(X), central_differences(f, X))


# ---- `t += [v]` extends the list in place --------------------------------------------------------


def list_extended_while_shared(x):
    t = [x[0]]
    u = t
    t += [x[1]]
    return u[0] * t[1]


def list_extended_while_maybe_shared(x):
    # u is bound on one path only: forward mode gave [1.1, 0, 0.3] for [0, 2.2, 1.4]
    t = [x[0]]
    if x[0] > 0:
        u = t
    t += [x[1] * 2.0]
    if x[0] > 0:
        return u[-1] * x[2]
    return x[0]


@pytest.mark.parametrize("f", [list_extended_while_shared, list_extended_while_maybe_shared])
def test_extending_a_shared_list_appends(f):
    # `t += [v]` on a list is t.append(v): forward mode sees the item through u too.
    close(s2s.jacfwd(f)(X), central_differences(f, X))
    with pytest.raises(s2s.S2SError, match="reverse mode .* of t.append\\(...\\) where t is also held by another name") \
            as info:
        s2s.grad(f)(X)
    assert at(f, "u = t") in str(info.value)
