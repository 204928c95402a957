"""Lists, dicts and tuples keep Python's semantics: a list or dict holds its items themselves
(a write into an array stored in one changes what the container holds), and `+` / `*` of
sequences concatenate and repeat. Each program here was silently wrong in reverse mode before
session 14; now s2s either differentiates it (checked against central differences) or refuses
it with an S2SError at the user's line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_differences, where as at

X = np.array([0.5, 1.5, 2.0])


# ---- a list or dict holds the array itself -------------------------------------------


def stored_then_written(x):
    t = [x * 1.0, x * 2.0]
    a = x * 3.0
    t[0] = a
    a[0] = 100.0  # changes t[0] too
    return np.sum(t[0] * x)


def stored_then_updated(x):
    t = [x * 1.0]
    a = x * 3.0
    t[0] = a
    a *= x  # changes t[0] too
    return np.sum(t[0])


def stored_in_dict(x):
    a = x * 3.0
    d = {}
    d["k"] = a
    a[0] = 100.0
    return np.sum(d["k"] * x)


def stored_in_copied_list(x):
    a = x * 3.0
    t = [x, x]
    t2 = t.copy()
    t2[0] = a
    a[0] = 100.0
    return np.sum(t2[0] * x)


def read_back_and_written(x):
    a = x * 3.0
    t = [x * 1.0]
    t[0] = a
    b = t[0]  # a itself
    b[1] = 7.0  # changes a
    return np.sum(a * x)


@pytest.mark.parametrize("f, written", [
    (stored_then_written, "a[0] = 100.0"), (stored_then_updated, "a *= x"), (stored_in_dict, "a[0] = 100.0"),
    (stored_in_copied_list, "a[0] = 100.0"), (read_back_and_written, "b[1] = 7.0"),
])
def test_write_into_an_array_a_container_holds_is_refused(f, written):
    assert not np.allclose(central_differences(f, X), 0.0)  # the program does depend on x
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(f)(X)
    assert at(f, written) in str(info.value)


def read_before_the_write(x):
    a = x * 3.0
    t = [x * 1.0]
    t[0] = a
    y = t[0] * x  # reads a before the write below: the reverse sweep needs that value
    a[0] = 100.0
    return np.sum(y) + np.sum(a * a)


def rows_copied_into_an_array(x):  # `out[i] = row` copies: writing row later is fine
    out = np.zeros((3, 3))
    row = np.zeros(3)
    for i in range(3):
        row[0] = x[i]
        row[1] = x[i] * x[i]
        out[i] = row
    return np.sum(out * out)


def dict_entry_replaced(x):
    d = {"a": x * 1.0}
    for i in range(3):
        v = d["a"] * 2.0
        d["a"] = v
    return np.sum(d["a"] * x)


@pytest.mark.parametrize("f", [read_before_the_write, rows_copied_into_an_array, dict_entry_replaced])
def test_containers_differentiated(f):
    np.testing.assert_allclose(s2s.grad(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


def test_rows_copied_into_an_array_under_jit():
    f = rows_copied_into_an_array
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


# ---- + and * of sequences -----------------------------------------------------------


def list_concatenated(x):
    t = [x * 1.0] + [x * 2.0]
    return np.sum(t[1])


def tuple_concatenated(x):
    t = (x[0], x[1]) + (x[2],)
    return t[0] * t[2]


def list_repeated(x):
    t = [x[0]] * 3
    return t[0] * t[2] + t[1]


def tuple_repeated(x):
    t = 2 * (x[0], x[1])
    return t[0] * t[3]


def loop_over_concatenation(x):
    s = 0.0
    for v in [x[0], x[1]] + [x[2]]:
        s = s + v * v
    return s


SEQUENCE_OPERATIONS = [(list_concatenated, "+ [x * 2.0]"), (tuple_concatenated, "+ (x[2],)"),
                       (list_repeated, "* 3"), (tuple_repeated, "2 * ("), (loop_over_concatenation, "+ [x[2]]")]


@pytest.mark.parametrize("f, where", SEQUENCE_OPERATIONS)
def test_sequence_arithmetic_refused_in_reverse_mode(f, where):
    with pytest.raises(s2s.S2SError, match="reverse mode") as info:
        s2s.grad(f)(X)
    assert at(f, where) in str(info.value)


@pytest.mark.parametrize("f, where", SEQUENCE_OPERATIONS)
def test_sequence_arithmetic_in_forward_mode(f, where):
    expected = central_differences(lambda x: np.sum(f(x)), X)
    np.testing.assert_allclose(np.sum(s2s.jacfwd(f)(X), axis=0) if np.ndim(f(X)) else s2s.jacfwd(f)(X),
                               expected, rtol=1e-6, atol=1e-6)


def concatenated_with_a_tuple_argument(x, t):  # the transform cannot see that t is a tuple
    u = t + (x,)
    return np.sum(u[0] * u[1])


def test_concatenation_with_an_argument_refused_when_it_runs():
    with pytest.raises(s2s.S2SError, match="concatenates or repeats") as info:
        s2s.grad(concatenated_with_a_tuple_argument)(X, (X * 2.0,))
    assert at(concatenated_with_a_tuple_argument, "u = t + (x,)") in str(info.value)


def list_plus_array(x):  # NumPy arithmetic: the list is made an array
    return np.sum((x + [1.0, 2.0, 3.0]) * x)


def list_times_array(x):
    a = [x[0], x[1], x[2]]
    return np.sum(a * x)


@pytest.mark.parametrize("f", [list_plus_array, list_times_array])
def test_arithmetic_of_a_list_and_an_array_differentiated(f):
    np.testing.assert_allclose(s2s.grad(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)
