"""s2s.vmap's vectorised code (the python backend, batching rules) against the loop over the
examples, and vmap(grad(f)) against central differences: arrays given by keyword, Python's max of
a NaN, containers that hold batched and unbatched items (dicts, tuples, lists, nested displays,
arguments), outputs that are arrays of their own, lists and dicts passed to helpers or shared
between the examples, like-functions given a shape, NumPy functions of a list display, writes
into a shared argument, np.reshape with its shape unbatched, and examples of a wider type than the
first. (Every program of the suite's cases on both backends: test_vmap.py.)"""

import numpy as np
import pytest

import s2s
import shadowing_cases as cases
from finite_differences import central_differences

rng = np.random.default_rng(15)


def loop_over(fun, xs):
    """The reference: fun of each example, stacked on axis 0."""
    return np.stack([np.asarray(fun(x)) for x in xs])


W = rng.normal(size=3)


def clip_by_keyword(x):
    return np.clip(x, a_min=-0.5, a_max=W)


def clip_by_keyword_sum(x):
    return np.sum(np.clip(x, a_min=-0.5, a_max=W) ** 2)


def test_an_array_given_by_keyword_is_lifted_like_a_positional_operand():
    # np.clip(x, a_min=-0.5, a_max=W) was written with W as it is, which lines up with the
    # batch axis (last): example b was clipped by W[b] (3 examples of 3 hide the shape error).
    xs = rng.normal(size=(3, 3))
    np.testing.assert_allclose(s2s.vmap(clip_by_keyword)(xs), loop_over(clip_by_keyword, xs))
    got = s2s.vmap(s2s.grad(clip_by_keyword_sum))(xs)
    np.testing.assert_allclose(got, [central_differences(clip_by_keyword_sum, x) for x in xs], atol=1e-6)


def larger_and_smaller(x):
    return max(x[0], x[1]), min(x[0], x[1])


def test_python_max_of_a_nan_keeps_its_first_argument():
    # Python's max(a, b) is a unless b > a: max(1.0, nan) is 1.0. The batching rule wrote
    # np.maximum, which gives nan (s2s.jit and s2s.jit(s2s.vmap(f)) give 1.0).
    xs = np.array([[1.0, np.nan], [np.nan, 1.0], [2.0, 3.0]])
    got = s2s.vmap(larger_and_smaller)(xs)
    expected = [loop_over(lambda x: larger_and_smaller(x)[k], xs) for k in range(2)]
    np.testing.assert_array_equal(got[0], expected[0])  # [1.0, nan, 3.0]
    np.testing.assert_array_equal(got[1], expected[1])  # [1.0, nan, 2.0]


def update_through_a_second_name(x):
    z = np.zeros(3)
    y = z[:]
    y += x  # NumPy updates z in place: s2s refuses, per example and batched
    return z


def test_an_update_through_a_second_name_is_refused_as_per_example():
    # y, batched by the update, was given a batch of copies of z (batch_broadcast), so the
    # run-time check that y shares no memory with z passed and z came back as zeros.
    xs = rng.normal(size=(3, 3))
    with pytest.raises(s2s.S2SError, match="also refers to"):
        s2s.jit(update_through_a_second_name, backend="python")(xs[0])
    with pytest.raises(s2s.S2SError, match="also refers to"):
        s2s.vmap(update_through_a_second_name)(xs)


def dict_of_batched_and_unbatched(x):
    d = {"a": x[0], "w": W}
    return d["w"] * x[1], np.sum(d["w"]) + d["a"], d["w"]


def dict_item_set_later(x):
    d = {"a": x[0]}
    d["w"] = W
    return d["w"]


def tuple_joined_in_a_branch(x):
    t = (x[0], W)
    if x.shape[0] > 5:
        t = (x[0], x[1])
    return t[1] * x[2]


def list_item_by_loop_index(x):
    t = [x[0], W]
    s = 0.0
    for i in range(2):
        s = s + np.sum(t[i])
    return s


def list_item_set_unbatched(x):
    t = [x[0], 1.0]
    t[1] = W
    return t[1] + x


def list_repeated(x):
    t = [x[0], W] * 2
    return t[3] * x


def tuple_sliced(x):
    t = (x, W)
    a = t[1:]
    return a[0] * x


def dict_holding_an_unbatched_tuple(x):
    t = (W, 1.0)
    d = {"a": x[0], "t": t}
    return d["t"][0] * x + d["t"][1]


def nested_tuple_sliced(x):
    t = ((x, W), (x[0], W))
    u = t[1:]
    return u[0][1] * x + u[0][0]


def unpacked_tuple_joined(x):
    p, q = (x[0], W), x[1]
    if x.shape[0] > 5:
        p = (x, x)
    return p[1] * x + q


def tuple_state_of_a_loop(x):
    state = (0.0, W)  # (was a raw ValueError: the display given the batch as one array)
    for i in range(3):
        a, b = state
        state = (a + x[i], b)
    return state[1] * x, state[0]


@pytest.mark.parametrize("fun", [tuple_state_of_a_loop, unpacked_tuple_joined, nested_tuple_sliced, dict_holding_an_unbatched_tuple, dict_of_batched_and_unbatched, dict_item_set_later, tuple_joined_in_a_branch,
                                 list_item_by_loop_index, list_item_set_unbatched, list_repeated, tuple_sliced])
def test_containers_of_batched_and_unbatched_items(fun):
    # A dict's batching pattern is one for all its items, and a tuple's items were read by a
    # computed index (or joined with a batched tuple) as if all batched: the unbatched W was
    # taken for a batch of 3 numbers (W * x[1] was W[b] * x[1]), or was lifted twice.
    xs = rng.normal(size=(3, 3))
    got = s2s.vmap(fun)(xs)
    outputs = [fun(x) for x in xs]
    if isinstance(outputs[0], tuple):
        for k, leaf in enumerate(got):
            np.testing.assert_allclose(leaf, np.stack([o[k] for o in outputs]))
    else:
        np.testing.assert_allclose(got, np.stack(outputs))


def tuple_argument_joined(x, p):
    if x.shape[0] > 5:
        p = (x, x)
    return p[1] * x


def test_a_tuple_argument_of_batched_and_unbatched_items_batched_further():
    # p = (xs, W) with in_axes (0, None): p's pattern became all batched through the branch
    # not taken, so W was taken for a batch (W * x was W[b] * x).
    xs = rng.normal(size=(3, 3))
    got = s2s.vmap(tuple_argument_joined, in_axes=(0, (0, None)))(xs, (xs, W))
    np.testing.assert_allclose(got, np.stack([tuple_argument_joined(x, (x, W)) for x in xs]))


def same(x):
    return x, x.T, x[0]


def test_outputs_are_arrays_of_their_own():
    # The vectorised code returned views of the argument and of each other: writing into
    # vmap(f)(xs)'s output changed xs (the loop over examples returns new arrays).
    xs = rng.normal(size=(3, 2, 2))
    kept = xs.copy()
    outputs = s2s.vmap(same)(xs)
    for out in outputs:
        out[...] = 7.0
    np.testing.assert_array_equal(xs, kept)
    np.testing.assert_array_equal(outputs[0], 7.0)


def dict_argument_given_an_item(x, d):
    d["a"] = x[0]
    d["w"] = W
    return d["w"]


def test_an_unbatched_item_written_into_a_dict_argument():
    # d, shared (in_axes None) and written per example, holds W as an item of the batch: it
    # was lifted (a batch of one), so vmap returned one row where the loop gives one per example.
    xs = rng.normal(size=(3, 3))
    got = s2s.vmap(dict_argument_given_an_item, in_axes=(0, None))(xs, {"a": 1.0, "w": W})
    np.testing.assert_allclose(got, np.stack([W] * 3))


def nested_display(x):
    return np.array([[x[0], 1.0], [0.0, x[1]]]), np.array([x[0], x[1]]), np.array([[x[0], x[1]], [1.0, 2.0]])


def test_np_array_of_nested_displays_of_batched_and_unbatched_items():
    # was a raw ValueError (an inhomogeneous array): the inner displays were taken whole
    xs = rng.normal(size=(3, 2))
    for k, got in enumerate(s2s.vmap(nested_display)(xs)):
        np.testing.assert_allclose(got, loop_over(lambda x: nested_display(x)[k], xs))


def loop_variable_reused(x):
    t = x[0]
    for t in range(2):
        pass
    return t + W


def test_a_loop_variable_that_holds_a_batched_value_elsewhere():
    # t, batched by `t = x[0]`, then took the loop's ints: t + W was W lifted plus 1, one row
    # where the loop over examples gives one per example.
    xs = rng.normal(size=(3, 3))
    np.testing.assert_allclose(s2s.vmap(loop_variable_reused)(xs), loop_over(loop_variable_reused, xs))


def put_w(t):
    t[1] = W
    return t


def read_w(d):
    return d["w"] * 2.0


def containers_passed_to_helpers(x):
    t = [x[0], 0.0]
    t[1] = x[1]
    t = put_w(t)
    d = {"a": x[0], "w": W}
    return t[1] + read_w(d)


def test_lists_and_dicts_passed_to_helpers():
    # A helper's batch size was read as its first batched parameter's .shape[-1]: a list or
    # dict raised AttributeError; and W written into the list parameter was lifted (a batch
    # of one, one row returned where the loop gives one per example).
    xs = rng.normal(size=(3, 3))
    np.testing.assert_allclose(s2s.vmap(containers_passed_to_helpers)(xs), loop_over(containers_passed_to_helpers, xs))


# ---- valid programs that vmap, jit(vmap) and vmap(grad) run without raw Python errors ----------
# Batches of 4 examples of 2 (no coincidental broadcast with 3).
XS = np.arange(8.0).reshape(4, 2) / 3 + 0.5


def zeros_with_a_shape(x):
    return np.zeros_like(x, shape=(3,)) + x[0]


def ones_with_a_shape(x):
    return np.sum(np.ones_like(x, shape=(3,)) * x[1]) + x[0] ** 2


def empty_with_a_shape(x):
    e = np.empty_like(x, shape=(3,))
    e[:] = x[0]
    return e * x[1]


def full_with_a_shape(x):
    return np.full_like(x, 2.0, shape=(3,)) * x[0]


def full_of_a_batched_value(x):
    return np.sum(np.full_like(x, x[0] * 2.0, shape=(3,)) * x[1])


@pytest.mark.parametrize("fun", [zeros_with_a_shape, ones_with_a_shape, empty_with_a_shape, full_with_a_shape,
                                 full_of_a_batched_value])
def test_like_functions_given_a_shape(fun):
    # np.zeros_like(x, shape=(3,)) was taken for an array of x's shape, so batched, and its
    # shape was lifted as an operand (runtime.lift((3,))): a raw TypeError. np.full_like's
    # derivative rule took no shape (grad refused it).
    np.testing.assert_allclose(s2s.vmap(fun)(XS), loop_over(fun, XS))
    if fun in (ones_with_a_shape, full_of_a_batched_value):
        got = s2s.vmap(s2s.grad(fun))(XS)
        np.testing.assert_allclose(got, [central_differences(fun, x) for x in XS], atol=1e-6)


def sum_of_a_list(x):
    a = x[0] * 2.0
    b = 1.0
    return np.sum([a, b])


def mean_of_a_list(x):
    a = x[0] * 2.0
    return np.mean([a, 1.0]) * x[1]


def max_of_a_list(x):
    a = x[0] * 2.0
    return np.max([a, 1.9])


def sin_of_a_list(x):
    return np.sum(np.sin([x[0], 1.0]))


def max_of_nested_lists(x):
    return np.sum(np.max([[x[0], 1.0], [2.0, x[1]]], axis=1))


def std_of_a_list(x):
    return np.std([x[0], 1.0, x[1]])


@pytest.mark.parametrize("fun", [sum_of_a_list, mean_of_a_list, max_of_a_list, sin_of_a_list,
                                 max_of_nested_lists, std_of_a_list])
def test_numpy_of_a_list_of_batched_and_unbatched_items(fun):
    # The list display reached NumPy as it was, a batched item of n numbers beside a number:
    # a raw ValueError (an inhomogeneous array). And grad of np.sum([a, 1.0]) and np.max took
    # the tuple for a shape (sum_bar: a raw TypeError).
    np.testing.assert_allclose(s2s.vmap(fun)(XS), loop_over(fun, XS))
    expected = [central_differences(fun, x) for x in XS]
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(XS), expected, atol=1e-6)
    np.testing.assert_allclose(s2s.grad(fun)(XS[1]), expected[1], atol=1e-6)


def constant_and_doubled(w):
    return 1.0, w * 2.0


def unpacks_a_helper(x):
    c, d = constant_and_doubled(x[0])
    return c + d * x[1]


def sums_a_helper(x):
    p = constant_and_doubled(x[0])
    return np.sum([p[0], p[1]])


@pytest.mark.parametrize("fun", [unpacks_a_helper, sums_a_helper])
def test_a_helper_returning_a_constant_and_a_batched_value(fun):
    np.testing.assert_allclose(s2s.vmap(fun)(XS), loop_over(fun, XS))
    expected = [central_differences(fun, x) for x in XS]
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(XS), expected, atol=1e-6)
    if fun is unpacks_a_helper:  # (one compile: under Numba the examples run the per-example code)
        np.testing.assert_allclose(s2s.jit(s2s.vmap(fun))(XS), loop_over(fun, XS))


def writes_a_number(x, t):
    t[0] = x[0]
    return t[0] * 2.0 + t[1]


def writes_an_array(x, t):
    t[0] = x
    return np.sum(t[0]) * t[1]


def appends(x, t):
    t.append(x[0])
    return t[-1] * 2.0 + len(t)


@pytest.mark.parametrize("fun", [writes_a_number, writes_an_array, appends])
def test_a_shared_list_argument_that_each_example_writes_into(fun):
    # Each example works on its own copy of t, and the caller's list is left as it was. An
    # array written into t, shared (in_axes None), was a raw ValueError (t was given the batch
    # as one array, whose rows take numbers); each example's append went into the caller's
    # list, where the next examples saw it (len(t) grew: 4, 6.3, 8.7, 11 for 4, 5.3, 6.7, 8).
    t = [1.0, 2.0]
    expected = [fun(x, [1.0, 2.0]) for x in XS]
    np.testing.assert_allclose(s2s.vmap(fun, in_axes=(0, None))(XS, t), expected)
    assert t == [1.0, 2.0]
    got = s2s.vmap(s2s.grad(fun), in_axes=(0, None))(XS, t)
    np.testing.assert_allclose(got, [central_differences(lambda x: fun(x, [1.0, 2.0]), x) for x in XS],
                               atol=1e-6)
    assert t == [1.0, 2.0]


def appends_through_a_helper(x, t):
    u = t
    z = append_to(u, x[0])
    return u[-1] * 2.0 + len(t) + z


def append_to(u, v):
    u.append(v)
    return 0.0


APPENDS = s2s.vmap(appends, in_axes=(0, None))
APPENDS_THROUGH_A_HELPER = s2s.vmap(appends_through_a_helper, in_axes=(0, None))


def sum_of_appends(xs):
    t = [1.0, 2.0]
    return np.sum(APPENDS(xs, t)) + len(t)


def sum_of_appends_through_a_helper(xs):
    t = [1.0, 2.0]
    return np.sum(APPENDS_THROUGH_A_HELPER(xs, t)) + len(t)


def test_a_vmap_inside_jit_gives_each_example_its_own_list():
    # Inside s2s.jit, vmap is a loop over the examples compiled as user code: each example
    # appended to the one list t, and saw the items of the examples before it (86 for 50).
    expected = sum(appends(x, [1.0, 2.0]) for x in XS) + 2
    assert sum_of_appends(XS) == pytest.approx(expected)
    assert s2s.jit(sum_of_appends, backend="python")(XS) == pytest.approx(expected)
    assert s2s.jit(sum_of_appends)(XS) == pytest.approx(expected)
    # A helper that appends to its caller's list is written out at the call (writing_calls.py):
    # its append reaches the caller's list, and each example still has its own
    expected = sum(appends_through_a_helper(x, [1.0, 2.0]) for x in XS) + 2
    assert sum_of_appends_through_a_helper(XS) == pytest.approx(expected)
    assert s2s.jit(sum_of_appends_through_a_helper, backend="python")(XS) == pytest.approx(expected)
    assert s2s.jit(sum_of_appends_through_a_helper)(XS) == pytest.approx(expected)


def test_a_shared_argument_that_nests_lists_keeps_them_lists():
    # The python loop driver took nested arguments flattened, as Numba's parallel loop does,
    # and rebuilt them as tuples: t.append was a raw AttributeError on a tuple.
    t = [[1.0, 3.0], 2.0]
    got = s2s.vmap(appends, in_axes=(0, None))(XS, t)
    np.testing.assert_allclose(got, [appends(x, [[1.0, 3.0], 2.0]) for x in XS])
    assert t == [[1.0, 3.0], 2.0]


def test_vmap_refuses_an_example_wider_than_the_first_where_numba_types_them_alike():
    ss = np.array([0.5, 1.7, 2.3])
    for batched in (s2s.vmap(cases.zero_or_excess, in_axes=(0, None)),
                    s2s.jit(s2s.vmap(cases.zero_or_excess, in_axes=(0, None)), backend="python"),
                    s2s.vmap(s2s.value_and_grad(cases.zero_or_excess), in_axes=(0, None))):
        with pytest.raises(s2s.S2SError, match="example 1's output is float64, wider than the first example's int64"):
            batched(ss, 1.0)
    # under s2s.jit Numba gives every example the one type float64: the values are NumPy's
    got = s2s.jit(s2s.vmap(cases.zero_or_excess, in_axes=(0, None)))(ss, 1.0)
    np.testing.assert_allclose(got, [0.0, 0.7, 1.3])
    value, slope = s2s.jit(s2s.vmap(s2s.value_and_grad(cases.zero_or_excess), in_axes=(0, None)))(ss, 1.0)
    np.testing.assert_allclose(value, [0.0, 0.7, 1.3])
    np.testing.assert_allclose(slope, [0.0, 1.0, 1.0])


def add_into_a_zero_row(a):
    y = np.zeros(3)
    y[0] += a
    return np.sum(y ** 2)


def write_into_shared(x, a):
    x[0] += a
    return np.sum(x ** 2)


def transposed_by_axes(X):
    return np.sum(np.transpose(X, (1, 0)) * np.arange(2.0))


def copied_into(a):
    y = np.zeros((3, 2))
    y[0] = s2s.runtime.copy(a)
    return np.sum(y ** 2)


def test_vmap_of_grad_of_an_augmented_write_on_the_python_backend():
    """vmap(grad(f)) on the python backend differentiates f's vectorised batch, whose writes read
    `runtime.copy(a)`: runtime.copy's rule had no reverse line, so the gradient was zero."""
    a = np.array([0.5, 0.7])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(add_into_a_zero_row))(a), 2 * a)
    np.testing.assert_allclose(s2s.grad(copied_into)(a), 2 * a)


def test_vmap_writes_of_examples_into_a_shared_argument_go_into_copies():
    x, a = np.ones(3), np.array([0.5, 0.7])
    want = [write_into_shared(x.copy(), ai) for ai in a]
    np.testing.assert_allclose(s2s.vmap(write_into_shared, in_axes=(None, 0))(x, a), want)
    np.testing.assert_allclose(x, np.ones(3))  # the caller's array is untouched
    np.testing.assert_allclose(s2s.vmap(s2s.grad(write_into_shared, argnums=1), in_axes=(None, 0))(x, a),
                               2 * (1 + a))
    X = np.random.default_rng(0).normal(size=(3, 2, 3))
    np.testing.assert_allclose(s2s.vmap(transposed_by_axes)(X), [transposed_by_axes(Xi) for Xi in X])


def reshaped(x):
    return np.sum(np.reshape(x, (3, 3)) ** 2 * np.arange(9.0).reshape(3, 3))


def reshaped_by_method(x, a, b):
    return np.sum(x.reshape(a, b)[0] * 2.0)


def test_vmap_of_a_reshape_keeps_the_shape_unbatched():
    """vmap (vectorised NumPy) of np.reshape(x, (3, 3)) and x.reshape(a, b): the shape tuple was
    lifted as if it were batched data."""
    X = np.random.default_rng(1).standard_normal((4, 9))
    batched = s2s.vmap(reshaped)
    np.testing.assert_allclose(batched(X), [reshaped(x) for x in X], rtol=1e-13)
    assert "batched_reshape" in s2s.source(batched)  # vectorised, not the loop over examples
    np.testing.assert_allclose(s2s.vmap(reshaped_by_method, in_axes=(0, None, None))(X, 3, 3),
                               [reshaped_by_method(x, 3, 3) for x in X], rtol=1e-13)
    grads = s2s.vmap(s2s.grad(reshaped))(X)
    np.testing.assert_allclose(grads, 2 * X * np.arange(9.0), rtol=1e-13)
