"""Red team of Python-level semantics (session 14): programs s2s got silently wrong, or refused
although they are plain valid code, because a 0-d array, a list or a dict behaves in Python as
it does. Each is now either differentiated (checked against central differences) or refused
with an S2SError at the user's line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_differences, hessian_by_differences, where as at

X = np.array([0.5, 1.5, 2.0])


# ---- a 0-d array is updated in place by `s += v`: a name that shares it sees the update ----
# (s2s runs `s = s + v`; its run-time check took a 0-d array for a number)


def zero_d_alias(x):
    a = np.array(x[0] * 1.0)
    b = a
    a += x[1]  # b changes too
    return b * x[2] + a


def zero_d_accumulator_alias(x):
    s = np.zeros(())
    t = s
    s += x[0] * x[1]
    return t * x[2] + s


def zero_d_accumulator_in_loop(x):
    s = np.array(0.0)
    acc = s
    for i in range(3):
        s += x[i] * x[i]
    return acc * 1.0


def as_array(v):
    return np.array(v * 1.0)


def passed_through(a):
    return a


def stored_in(t, v):
    t[0] = np.array(v)


def zero_d_from_helper(x):  # the helper makes the 0-d array
    a = as_array(x[0])
    b = a
    a += x[1]
    return b * x[2] + a


def zero_d_through_helper(x):  # the helper returns the 0-d array it was given
    a = np.array(x[0] * 1.0)
    b = passed_through(a)
    a += x[1]
    return b * x[2] + a


def zero_d_stored_by_helper(x):  # the helper puts a 0-d array into the caller's list
    t = [x[0] * 1.0]
    stored_in(t, x[0])
    a = t[0]
    b = a
    a += x[1]
    return b * x[2] + a


ZERO_D = [(zero_d_alias, "a += x[1]"), (zero_d_accumulator_alias, "s += x[0] * x[1]"),
          (zero_d_accumulator_in_loop, "s += x[i] * x[i]")]
ZERO_D_THROUGH_HELPERS = [(zero_d_from_helper, "a += x[1]"), (zero_d_through_helper, "a += x[1]")]


@pytest.mark.parametrize("f, where", ZERO_D)
@pytest.mark.parametrize("transform", [s2s.grad, s2s.jacfwd, s2s.jacrev])
def test_update_of_a_shared_0d_array_refused(f, where, transform):
    with pytest.raises(s2s.S2SError, match="updates an array") as info:
        transform(f)(X)
    assert at(f, where) in str(info.value)


def test_update_of_a_shared_0d_array_refused_under_jit():
    with pytest.raises(s2s.S2SError, match="updates an array") as info:
        s2s.jit(s2s.grad(zero_d_alias))(X)
    assert at(zero_d_alias, "a += x[1]") in str(info.value)


BATCH = np.array([[0.5, 1.5, 2.0], [1.0, 2.0, 3.0], [-0.3, 0.7, 1.1]])


@pytest.mark.parametrize("f, where", ZERO_D + ZERO_D_THROUGH_HELPERS)
def test_update_of_a_shared_0d_array_refused_under_vmap(f, where):
    # vectorised, a batch of 0-d arrays is a 1-d array, as a batch of numbers is: which names may
    # be 0-d arrays is known from how they were made, in the function or the helpers it calls
    # (it gave [3.0, 6.0] for [6.0, 12.0])
    with pytest.raises(s2s.S2SError, match="updates an array") as info:
        s2s.vmap(f)(BATCH)
    assert at(f, where) in str(info.value)


def test_0d_array_a_helper_stores_in_a_list_under_vmap():
    # a helper writing into the caller's list is run example by example: NumPy's values
    assert np.allclose(s2s.vmap(zero_d_stored_by_helper)(BATCH),
                       [zero_d_stored_by_helper(x.copy()) for x in BATCH])


def number_kept_before_update(x):  # prev is a number: `s += v` rebinds s, prev keeps its value
    s = x[0] * 1.0
    total = 0.0
    for i in range(3):
        prev = s
        s += x[i] * x[i]
        total = total + prev * s
    return total


def zero_d_read_as_number(x):  # c = a[()] is a number: a's update does not reach it
    a = np.array(x[0] * 2.0)
    c = a[()]
    a += x[1]
    return c * x[2] + a


def zero_d_copied_before_update(x):
    a = np.zeros(())
    a += x[0]
    b = a.copy()
    a += x[1] * x[2]
    return b * a


@pytest.mark.parametrize("f", [number_kept_before_update, zero_d_read_as_number, zero_d_copied_before_update])
def test_vmap_of_updates_that_share_nothing(f):
    expected = [f(row) for row in BATCH]
    np.testing.assert_allclose(s2s.vmap(f)(BATCH), expected, rtol=1e-12)
    np.testing.assert_allclose(s2s.vmap(s2s.grad(f))(BATCH), [central_differences(f, row) for row in BATCH],
                               rtol=1e-6, atol=1e-6)


def zero_d_accumulator(x):  # nothing else refers to s: `s = s + v` is what NumPy computes
    s = np.zeros(())
    s += x[0] * x[1]
    return s * x[2]


def number_alias(x):  # x[0] is a number: `a += v` rebinds a, b keeps its value
    a = x[0] * 1.0
    b = a
    a += x[1]
    return b * x[2] + a


@pytest.mark.parametrize("f", [zero_d_accumulator, number_alias])
def test_updates_that_share_nothing_differentiated(f):
    expected = central_differences(f, X)
    np.testing.assert_allclose(s2s.grad(f)(X), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jacfwd(f)(X), expected, rtol=1e-6, atol=1e-6)


# ---- a copy of a list or dict is another list or dict --------------------------------------
# (forward mode's tangent of `u = t.copy()` was t's tangent list itself: a later `t[0] = v`
# changed u's tangent too; `t.copy()` became np.copy(t), an array, and np.copy of a dict crashed)


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
# (refused as "changes the argument x in place" where t held numbers read from x)


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
# (lowered as t[k] = t[k] * v, a slot write; the array a that t[0] is changed too)


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
# (it went in sorted-key order: a loop whose result depends on the order computed another value)


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
# (the empty dict was broadcast to the batch as an object array: len(d) was the batch size, or
# a raw IndexError where a key passed it)


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
# (the hessian analyses the generated reverse code, whose tapes are lists: `s_tape[i] = s` was
# taken for a write that changes s, and any value computed from a list's item for a list)


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
# (its private copy was np.copy(t): an array, so a list of arrays of two shapes crashed, a dict
# became a 0-d object array and `t * 2` multiplied where Python repeats)


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
# (it was once generated as t = t + [v]: forward mode gave u, which is t, the old list; now
# it is t.append(v), which the other name sees)


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
# (reverse mode refused it with a message about + and *, or crashed with a raw TypeError)


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


# ---- an infinite starting value under s2s.jit -------------------------------------------------
# (Numba's zero tangent of a float was x * 0.0: nan for m = float('inf'), and every tangent nan)


def running_minimum(x):
    m = float("inf")
    for i in range(3):
        m = min(m, x[i] * 2.0)
    return m * x[2]


def test_forward_mode_from_an_infinite_start_under_jit():
    f = running_minimum
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(f))(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


def test_number_read_from_a_0d_array_under_jit():
    # the adjoint of a 0-d array is a number: x[()]'s adjoint is added to it (was a TypeError)
    f = zero_d_read_as_number
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(X), central_differences(f, X), rtol=1e-6, atol=1e-6)


# ---- Python's max(x, y) is x unless y is larger: where y is NaN it is x, and so is its derivative ----
# (the rule shared with np.maximum gave the derivative to y: grad [0, 1] where differences say [1, 0])


def python_extrema(x):
    return max(x[0], x[1]) * 2.0 + min(x[2], x[3])


@pytest.mark.parametrize("point", [[1.0, np.nan, 2.0, np.nan], [1.0, 3.0, 2.0, 0.5], [3.0, 1.0, 0.5, 2.0]])
def test_python_max_and_min_with_nan_match_differences(point):
    x = np.array(point)
    expected = central_differences(python_extrema, x)
    for derivative in (s2s.grad(python_extrema), s2s.jit(s2s.grad(python_extrema)), s2s.jacfwd(python_extrema)):
        assert np.allclose(derivative(x), expected)
    assert np.allclose(s2s.vmap(s2s.grad(python_extrema))(x[None, :])[0], expected)


# ---- a list display as a NumPy function's array operand ------------------------------------


def ufunc_of_a_display(x):
    return np.sum(np.square([x[0], 1.0])) + np.sum(np.maximum([x[1], 1.0], 0.5))


def dot_of_displays(x):
    return np.dot([x[0], 2.0], [3.0, x[1]]) + np.sum(np.clip((x[0], x[1] * 3.0), 0.0, 1.0))


@pytest.mark.parametrize("f", [ufunc_of_a_display, dot_of_displays])
def test_a_display_as_an_array_operand(f):
    # NumPy makes the display an array; the derivative rules did arithmetic on the tuple (a raw
    # TypeError: can't multiply sequence by non-int of type 'float')
    x = np.array([0.3, 0.2])
    want = central_differences(f, x)
    for transform in (s2s.grad, s2s.jacfwd, s2s.jacrev):
        np.testing.assert_allclose(transform(f)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x), want, rtol=1e-6, atol=1e-8)
    batch = np.array([[0.3, 0.2], [0.7, 0.1]])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(f))(batch), [central_differences(f, row) for row in batch],
                               rtol=1e-6, atol=1e-8)


def builtins_of_displays(x):
    total = sum([x[0], x[1] * 3.0], 0.5) * max((x[0], x[2], np.sin(x[1])))
    return total + min([x[2] * x[0], x[1]]) + sum((x[2], x[0] ** 2))


def test_builtin_sum_max_min_of_a_display():
    # sum([a, b]), max((a, b, c)), min([a, b]) were refused as "of one iterable"; they fold as
    # a + b and max(max(a, b), c), left to right as Python does
    x = np.array([0.3, 0.2, 0.9])
    assert builtins_of_displays(x) == pytest.approx(s2s.jit(builtins_of_displays, backend="python")(x), rel=1e-15)
    want = central_differences(builtins_of_displays, x)
    for transform in (s2s.grad, s2s.jacfwd):
        np.testing.assert_allclose(transform(builtins_of_displays)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(builtins_of_displays))(x), want, rtol=1e-6, atol=1e-8)


def power_by_an_unpacked_int(x):
    t = (x, 3)
    a, n = t  # (n is the int 3: it carries no derivative)
    return np.sum(a ** n)


def test_an_int_unpacked_from_a_tuple_with_a_float_carries_no_derivative():
    # jvp gave NaN and the hessian a NaN row at x < 0: n took t's activity, and its zero tangent
    # met log(x) of a negative x in the derivative of x ** n
    x = np.array([-1.2, 0.5])
    assert s2s.jvp(power_by_an_unpacked_int, (x,), (np.ones(2),))[1] == pytest.approx(3 * np.sum(x**2), rel=1e-12)
    np.testing.assert_allclose(s2s.hessian(power_by_an_unpacked_int)(x), np.diag(6 * x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s2s.grad(power_by_an_unpacked_int)(x), 3 * x**2, rtol=1e-12)


def write_into_a_positive_copy(y):
    w = +y  # (a new array in NumPy, as y.copy())
    w[1] = 0.0
    return np.sum(w * y) + +y[0] * 2.0


def test_unary_plus_makes_a_new_array():
    # w = +y was taken for y itself: the write was refused as one that would also change y
    y = np.array([0.3, 0.5, 0.7])
    want = central_differences(write_into_a_positive_copy, y)
    for transform in (s2s.grad, s2s.jacfwd, lambda f: s2s.jit(s2s.grad(f))):
        np.testing.assert_allclose(transform(write_into_a_positive_copy)(y), want, rtol=1e-6, atol=1e-8)
