"""Lists, dicts and tuples keep Python's semantics: a list or dict holds its items themselves (a
write into an array stored in one changes what the container holds, and a copy holds the same
items), `+` / `*` of sequences concatenate and repeat, `t[k] = v` rebinds a slot and `t[k] *= v`
updates the array the slot holds, `t += [v]` extends the list in place, list.pop() takes the last
item, a slice of a list is written slot by slot, a loop over a dict goes over its keys in insertion
order, and a list or dict argument the function writes into is its own copy. Each program is
differentiated (checked against central differences, in the modes it names) or refused with an
S2SError at the user's line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_differences, hessian_by_differences, where as at

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


# ---- a copy of a list or dict is another list or dict --------------------------------------
# (forward mode's tangent of `u = t.copy()` must be a copy of t's tangent list, which a later
# `t[0] = v` leaves as it was; and t.copy() is no np.copy(t): not an array, and of a dict too)


def list_copied_then_slot_written(x):
    t = [x[0] * 1.0, x[1] * 1.0]
    u = t.copy()
    t[0] = x[2] * 4.0
    return u[0] * x[0] + t[0]


def copy_written_in_a_slot(x):
    t = [x * 1.0, x * 2.0]
    u = t.copy()
    u[0] = x * 5.0
    return np.sum(t[0] * x) + np.sum(u[0])


def dict_copied_then_written(x):
    d = {"a": x[0] * 1.0, "b": x[1]}
    e = d.copy()
    d["a"] = x[2] * 4.0
    return e["a"] * x[0] + d["a"]


def dict_copy_read(x):
    d = {"a": x[0] * 1.0, "b": x[1]}
    e = d.copy()
    return e["a"] * x[2] + e["b"]


def list_of_arrays_copied(x):  # arrays of two shapes: np.copy could not make one array of them
    t = [x * 1.0, x[:2] * 2.0]
    u = t.copy()
    return np.sum(u[0] * u[0]) + np.sum(u[1])


COPIES = [list_copied_then_slot_written, copy_written_in_a_slot, dict_copied_then_written, dict_copy_read,
          list_of_arrays_copied]


@pytest.mark.parametrize("f", COPIES)
@pytest.mark.parametrize("transform", [s2s.grad, s2s.jacfwd, s2s.jacrev])
def test_copies_of_lists_and_dicts(f, transform):
    np.testing.assert_allclose(transform(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", [list_copied_then_slot_written, dict_copied_then_written])
def test_copies_of_lists_and_dicts_in_a_hessian(f):
    expected = hessian_by_differences(f, X)
    np.testing.assert_allclose(s2s.hessian(f)(X), expected, rtol=1e-4, atol=1e-4)


# ---- a copy holds the items themselves: a write into one changes the original's -----------


def item_of_a_copy_written(x):
    t = [x * 1.0, x * 2.0]
    u = t.copy()
    a = u[0]  # t[0] itself
    a[0] = 100.0
    return np.sum(t[0] * x)


def item_of_a_tuple_of_a_list_written(x):
    t = [x * 1.0, x * 2.0]
    u = tuple(t)
    a = u[0]  # t[0] itself
    a[0] = 100.0
    return np.sum(t[0] * x)


def item_of_a_dict_copy_written(x):
    d = {"a": x * 1.0}
    e = d.copy()
    a = e["a"]
    a[0] = 100.0
    return np.sum(d["a"] * x)


@pytest.mark.parametrize("f", [item_of_a_copy_written, item_of_a_tuple_of_a_list_written,
                               item_of_a_dict_copy_written])
def test_write_into_an_item_a_copy_shares_refused(f):
    assert not np.allclose(central_differences(f, X)[0], 2 * X[0])  # the write does reach t[0]
    with pytest.raises(s2s.S2SError, match="would also change") as info:
        s2s.grad(f)(X)
    assert at(f, "a[0] = 100.0") in str(info.value)


# ---- `t[k] = v` rebinds a slot of a list or dict: it writes into no array --------------------
# (so it is no change of the argument x in place where t holds numbers read from x)


def list_slot_updated_in_a_loop(x):
    t = [x[0], 1.0]
    for i in range(3):
        t[1] = t[1] * x[i] + t[0]
    return t[1]


def dict_entry_updated_in_a_loop(x):
    d = {"s": x[0]}
    for i in range(3):
        d["s"] = d["s"] * x[i]
    return d["s"]


def list_slot_written_twice(x):
    t = [x[0], x[1] * 1.0]
    t[1] = x[2] * 2.0
    t[1] = t[1] * x[0]
    return t[1] + t[0]


SLOTS = [list_slot_updated_in_a_loop, dict_entry_updated_in_a_loop, list_slot_written_twice]


@pytest.mark.parametrize("f", SLOTS)
@pytest.mark.parametrize("transform", [s2s.grad, s2s.jacfwd, s2s.jacrev])
def test_slot_writes_into_lists_of_argument_numbers(f, transform):
    np.testing.assert_allclose(transform(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


def list_sliced_then_slot_written(x):  # t[:] is a new list: the write leaves u as it was
    t = [x[0] * 1.0, x[1] * 1.0]
    u = t[:]
    t[0] = x[2] * 4.0
    return u[0] * x[0] + t[0]


@pytest.mark.parametrize("f", SLOTS + [list_sliced_then_slot_written])
def test_slot_writes_in_a_hessian(f):
    expected = hessian_by_differences(f, X)
    np.testing.assert_allclose(s2s.hessian(f)(X), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transform", [s2s.grad, s2s.jacfwd])
def test_slot_write_into_a_list_a_slice_copied(transform):
    f = list_sliced_then_slot_written
    np.testing.assert_allclose(transform(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", SLOTS)
def test_slot_writes_under_vmap(f):
    xs = np.stack([X, X * 1.1 + 0.05])
    expected = np.stack([central_differences(f, row) for row in xs])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(f))(xs), expected, rtol=1e-6, atol=1e-6)


def list_aliased_then_slot_written(x):  # u is t: the write changes what u holds
    t = [x[0] * 1.0, x[1] * 1.0]
    u = t
    t[0] = x[2] * 4.0
    return u[0] * x[0]


def list_of_argument_numbers_aliased(x):
    t = [x[0], x[1]]
    u = t
    u[0] = x[2] * 4.0
    return t[0] * x[0]


@pytest.mark.parametrize("f, where", [(list_aliased_then_slot_written, "t[0] = x[2] * 4.0"),
                                      (list_of_argument_numbers_aliased, "u[0] = x[2] * 4.0")])
def test_slot_write_into_an_aliased_list_refused(f, where):
    with pytest.raises(s2s.S2SError, match="would also change") as info:
        s2s.grad(f)(X)
    assert at(f, where) in str(info.value)


# ---- the user's list.pop() ----------------------------------------------------------------


def popped(x):
    t = [x[0] * 2.0, x[1] * 3.0, x[2]]
    a = t.pop()
    return a * t[0] + t[-1]


def test_list_pop_in_reverse_mode_refused_with_its_name():
    with pytest.raises(s2s.S2SError, match=r"list\.pop\(\)") as info:
        s2s.grad(popped)(X)
    assert at(popped, "a = t.pop()") in str(info.value)


def test_list_pop_in_forward_mode():
    np.testing.assert_allclose(s2s.jacfwd(popped)(X), central_differences(popped, X), rtol=1e-6, atol=1e-6)


# ---- `t[k] *= v` updates the array t[k] holds in place --------------------------------------
# (not t[k] = t[k] * v, a slot write: the array a that t[0] is changes too)


def item_multiplied_in_place(x):
    a = x * 1.0
    t = [a]
    t[0] *= x  # a changes too
    return np.sum(a)


def entry_multiplied_in_place(x):
    a = x * 1.0
    d = {"a": a}
    d["a"] *= x
    return np.sum(a)


@pytest.mark.parametrize("f, where", [(item_multiplied_in_place, "t[0] *= x"),
                                      (entry_multiplied_in_place, 'd["a"] *= x')])
def test_augmented_write_into_an_item_a_name_shares_refused(f, where):
    assert not np.allclose(central_differences(f, X), 1.0)  # the update does reach a
    with pytest.raises(s2s.S2SError, match="would also change a") as info:
        s2s.grad(f)(X)
    assert at(f, where) in str(info.value)


def numbers_updated_in_place(x):
    t = [x[0] * 1.0, x[1] * 1.0]
    t[1] **= 2
    t[0] *= t[1]
    return t[0] + t[1]


def test_augmented_writes_into_a_list_of_numbers():
    f = numbers_updated_in_place
    np.testing.assert_allclose(s2s.grad(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


# ---- a loop over a dict goes over its keys in Python's (insertion) order -------------------
# (in sorted-key order a loop whose result depends on the order would compute another value;
# the other loops over dicts: test_container_loops.py)


def digits_of_a_dict_made_here(x):
    d = {"b": x[0], "a": x[1]}
    d["c"] = x[2]
    d["b"] = x[2] * 2.0  # keeps its place
    s = 0.0
    for v in d.values():
        s = s * 10.0 + v
    return s


def test_loop_over_a_dict_in_insertion_order():
    f = digits_of_a_dict_made_here
    assert f(X) == pytest.approx(100 * 2 * X[2] + 10 * X[1] + X[2])
    expected = central_differences(f, X)
    np.testing.assert_allclose(expected, [0.0, 10.0, 201.0], atol=1e-5)
    for transform in (s2s.grad, s2s.jacfwd, s2s.jacrev):
        np.testing.assert_allclose(transform(f)(X), expected, rtol=1e-6, atol=1e-6)
    xs = np.stack([X, X + 0.25])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(f))(xs), np.stack([expected, expected]), atol=1e-5)


def digits_of_a_dict_argument(d):
    s = 0.0
    for k, v in d.items():
        s = s * 10.0 + np.sum(v)
    return s


def test_loop_over_a_dict_argument_in_its_order():
    d = {"b": np.array([1.0, 2.0]), "a": np.array([0.5])}  # b first: its adjoint is 10
    assert digits_of_a_dict_argument(d) == pytest.approx(30.5)
    g = s2s.grad(digits_of_a_dict_argument)(d)
    np.testing.assert_allclose(g["b"], [10.0, 10.0])
    np.testing.assert_allclose(g["a"], [1.0])
    _, tangent = s2s.jvp(digits_of_a_dict_argument, (d,), ({"b": np.array([1.0, 0.0]), "a": np.array([0.0])},))
    assert tangent == pytest.approx(10.0)
    batch = {"b": np.array([[1.0, 2.0], [3.0, 4.0]]), "a": np.array([[0.5], [1.5]])}
    gs = s2s.vmap(s2s.grad(digits_of_a_dict_argument))(batch)
    np.testing.assert_allclose(gs["b"], 10.0 * np.ones((2, 2)))
    np.testing.assert_allclose(gs["a"], np.ones((2, 1)))


def test_list_copied_then_slot_written_under_jit():
    f = list_copied_then_slot_written
    expected = central_differences(f, X)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(X), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(f))(X), expected, rtol=1e-6, atol=1e-6)


# ---- vmap of a function that fills a dict it made empty -------------------------------------
# (the empty dict is not broadcast to the batch as an object array, whose len(d) would be the
# batch size, or a raw IndexError where a key passed it)


def dict_filled_in_a_loop(x):
    d = {}
    for i in range(3):
        d[i] = x[i] * x[i]
    return d[0] + d[1] * d[2] + len(d)


@pytest.mark.parametrize("batch", [2, 4])
def test_vmap_of_a_dict_filled_in_a_loop(batch):
    f = dict_filled_in_a_loop
    xs = X + 0.1 * np.arange(batch)[:, None]
    np.testing.assert_allclose(s2s.vmap(f)(xs), [f(row) for row in xs])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(f))(xs), [central_differences(f, row) for row in xs],
                               rtol=1e-6, atol=1e-6)


# ---- second derivatives of loops over lists and dicts ---------------------------------------
# (the hessian analyses the generated reverse code, whose tapes are lists: `s_tape[i] = s` is no
# write that changes s, and a value computed from a list's item is no list)


def product_over_dict_values(x):
    d = {"a": x[0], "b": x[1] * 2.0, "c": x[2]}
    s = 1.0
    for v in d.values():
        s = s * v
    return s


def running_products_over_a_list(x):
    p = 1.0
    s = 0.0
    for v in [x[0], 2 * x[1], x[2] * x[2]]:
        p = p * v
        s = s + p
    return s


@pytest.mark.parametrize("f", [product_over_dict_values, running_products_over_a_list])
def test_hessian_of_a_loop_over_a_container(f):
    expected = hessian_by_differences(f, X)
    np.testing.assert_allclose(s2s.hessian(f)(X), expected, rtol=1e-4, atol=1e-4)


# ---- a list or dict argument the function writes into ---------------------------------------
# (its private copy is a list or dict, not np.copy(t): an array, which a list of arrays of two
# shapes cannot be, a dict would be a 0-d object array, and `t * 2` would multiply, not repeat)


def writes_into_a_list_argument(x, t):
    t[0] = x * 2.0
    return np.sum(t[0] * t[1])


def writes_into_a_dict_argument(x, d):
    d["a"] = x[0] * 3.0
    return d["a"] * d["b"] * x[1]


def writes_into_a_list_argument_then_repeats_it(x, t):
    t[0] = x[0] * x[1]
    u = t * 2
    return u[0] * u[1] + u[3] * x[2]


@pytest.mark.parametrize("f, make", [
    (writes_into_a_list_argument, lambda: [np.zeros(3), np.array([1.5])]),
    (writes_into_a_dict_argument, lambda: {"a": 1.0, "b": 2.0}),
])
def test_writes_into_a_container_argument(f, make):
    expected = central_differences(lambda v: f(v, make()), X)
    passed = make()
    np.testing.assert_allclose(s2s.grad(f)(X, passed), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jacfwd(f)(X, make()), expected, rtol=1e-6, atol=1e-6)
    assert str(passed) == str(make())  # the caller's container is left as it was


def test_writes_into_a_list_argument_then_repeats_it():
    f = writes_into_a_list_argument_then_repeats_it
    expected = central_differences(lambda v: f(v, [1.0, 2.0]), X)
    np.testing.assert_allclose(s2s.jacfwd(f)(X, [1.0, 2.0]), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(s2s.S2SError, match="concatenates or repeats") as info:
        s2s.grad(f)(X, [1.0, 2.0])
    assert at(f, "u = t * 2") in str(info.value)


# ---- `t += [v]` extends the list t in place -------------------------------------------------
# (it is t.append(v), which the other name sees; as t = t + [v], forward mode would give u,
# which is t, the old list)


def list_extended_in_place(x):
    t = [x[0]]
    u = t
    t += [x[1] * 2.0]  # u is extended too
    return u[-1] * x[2]


def list_in_a_tuple_extended(x):
    t = [x[0]]
    p = (t, x[1])
    t += [x[2] * 3.0]
    return p[0][-1] * x[0]


@pytest.mark.parametrize("f, shared", [(list_extended_in_place, "u = t"),
                                       (list_in_a_tuple_extended, "p = (t, x[1])")])
def test_extending_a_shared_list_in_place(f, shared):
    expected = central_differences(f, X)
    for transform in (s2s.jacfwd, lambda f: s2s.jit(s2s.jacfwd(f))):
        np.testing.assert_allclose(transform(f)(X), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(s2s.S2SError, match="reverse mode .* where t is also held by another name") as info:
        s2s.grad(f)(X)
    assert at(f, shared) in str(info.value)


def list_extended_nothing_shares(x):
    t = [x[0]]
    t += [x[1] * 2.0]
    return t[-1] * x[2]


@pytest.mark.parametrize("transform", [s2s.jacfwd, lambda f: s2s.jit(s2s.jacfwd(f))])
def test_extending_a_list_in_place(transform):
    f = list_extended_nothing_shares
    np.testing.assert_allclose(transform(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


# ---- a write into a slice of a list ----------------------------------------------------------
# (refused in reverse mode with its own message: no raw TypeError, nor one about + and *)


def list_slice_written(x):
    t = [x[0], x[1], x[2]]
    t[1:] = [x[2] * 2.0, x[0] * x[1]]
    return t[0] * t[1] + t[2]


def list_slice_written_from_an_array(x):
    t = [x[0], x[1], x[2]]
    t[:2] = x[1:] * 2.0
    return t[0] * t[1] + t[2]


@pytest.mark.parametrize("f, where", [(list_slice_written, "t[1:] = "), (list_slice_written_from_an_array, "t[:2] = ")])
def test_write_into_a_slice_of_a_list(f, where):
    with pytest.raises(s2s.S2SError, match="slice of a list") as info:
        s2s.grad(f)(X)
    assert at(f, where) in str(info.value)
    np.testing.assert_allclose(s2s.jacfwd(f)(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


# ---- map over displays: the calls it makes, one per item -------------------------------------


def scaled(v, k):
    return v * k


def map_unpacked(x):
    a, b = map(np.asarray, [x * 2.0, x[::-1]])
    return np.sum(a * b)


def map_of_two_displays(x):
    total = 0.0
    for v in map(scaled, (x, x ** 2, np.sin(x)), [1.0, 2.0]):  # to the shortest, as map stops
        total = total + np.sum(v ** 2)
    return total


def map_into_a_list(x):
    ys = list(map(np.tanh, [x, 2.0 * x]))
    return np.sum(ys[0] * ys[1])


@pytest.mark.parametrize("f", [map_unpacked, map_of_two_displays, map_into_a_list])
def test_map_over_displays_in_every_mode(f):
    want = central_differences(f, X)
    np.testing.assert_allclose(s2s.grad(f)(X), want, rtol=1e-6)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(X), want, rtol=1e-6)
    direction = np.array([0.3, -0.2, 1.0])
    assert s2s.jvp(f, (X,), (direction,))[1] == pytest.approx(want @ direction, rel=1e-6)
    np.testing.assert_allclose(s2s.hessian(f)(X), hessian_by_differences(f, X), rtol=1e-4, atol=1e-3)


def map_of_a_lambda_over_an_array(x):
    return np.sum(list(map(np.sin, x)))


def test_map_over_anything_else_is_refused_at_its_line():
    with pytest.raises(s2s.S2SError, match=at(map_of_a_lambda_over_an_array, "map(")):
        s2s.grad(map_of_a_lambda_over_an_array)(X)
