"""Python's semantics of 0-d arrays, numbers and builtins in transformed code: `s += v` updates a
0-d array in place (a name that shares it sees the update) and rebinds a number; Python's max and
min keep their first argument where the other is NaN; a list or tuple display is an array where a
NumPy function takes one, and sum, max and min of a display fold left to right; an int unpacked
from a tuple carries no derivative; `+y` is a new array. Each program is differentiated (checked
against central differences) or refused with an S2SError at the user's line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_differences, where as at

X = np.array([0.5, 1.5, 2.0])


# ---- a 0-d array is updated in place by `s += v`: a name that shares it sees the update ----
# (s2s runs `s = s + v`; its run-time check must tell a 0-d array from a number)


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
ZERO_D_THROUGH_HELPERS = [(zero_d_from_helper, "a += x[1]"), (zero_d_through_helper, "a += x[1]"),
                          (zero_d_stored_by_helper, "a += x[1]")]  # (stored_in's write reaches t: NumPy's)


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


# ---- an infinite starting value under s2s.jit -------------------------------------------------
# (a zero tangent of a float made as x * 0.0 would be nan for m = float('inf'), and every tangent nan)


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
# (np.maximum's rule would give the derivative to y: grad [0, 1] where differences say [1, 0])


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


# ---- assert: checked where it runs (its message evaluated only where it fails), not differentiated ----


def checked_log_weights(x):
    assert x.ndim == 1, "x must be a vector"
    assert np.all(x > 0.0), "x must be positive"
    y = np.log(x)
    assert y.shape == x.shape
    return np.sum(y * x)


def checked_in_a_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        assert x[i] > -10.0, "out of range"
        s = s + np.sin(x[i]) * x[i]
    return s


def lazy_message(x):
    assert x.shape[0] == 3, x[5]  # x[5] is out of bounds: Python evaluates it only where the test fails
    return np.sum(x ** 3)


def shape_message(x):
    assert x.shape[0] == 3, x.shape
    return np.sum(x ** 3)


ASSERTING = [checked_log_weights, checked_in_a_loop, lazy_message]


@pytest.mark.parametrize("fun", ASSERTING)
def test_asserts_that_hold_in_every_mode(fun):
    from checks import check_all
    from finite_differences import hessian_by_differences

    check_all(fun, X)
    np.testing.assert_allclose(s2s.hessian(fun)(X), hessian_by_differences(fun, X), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(fun))(X), hessian_by_differences(fun, X), rtol=1e-5, atol=1e-4)
    batch = np.stack([X, X * 1.3, X + 0.2])
    want = np.stack([central_differences(fun, row) for row in batch])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(batch), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(fun))(batch), [fun(row) for row in batch], rtol=1e-12)


TRANSFORMS = {
    "jit": s2s.jit,
    "grad": s2s.grad,
    "jit(grad)": lambda f: s2s.jit(s2s.grad(f)),
    "jacfwd": s2s.jacfwd,
    "jvp": lambda f: lambda x: s2s.jvp(f, (x,), (np.ones_like(x),)),
    "hessian": s2s.hessian,
    "jit(hessian)": lambda f: s2s.jit(s2s.hessian(f)),
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("fun, bad, message", [
    (checked_log_weights, -X, "x must be positive"),
    (checked_log_weights, X[:, None], "x must be a vector"),
    (checked_in_a_loop, np.array([1.0, -20.0]), "out of range"),
    (shape_message, np.ones(4), r"\(4,\)"),
])
def test_a_failed_assert_raises_as_python(transform, fun, bad, message):
    with pytest.raises(AssertionError, match=message):
        fun(bad)  # Python
    with pytest.raises(AssertionError, match=message):
        TRANSFORMS[transform](fun)(bad)


@pytest.mark.parametrize("transform", [lambda f: s2s.vmap(s2s.grad(f)), lambda f: s2s.jit(s2s.vmap(s2s.grad(f))),
                                       lambda f: s2s.vmap(f), lambda f: s2s.jit(s2s.vmap(f))])
def test_a_failed_assert_of_a_later_example_raises_under_vmap(transform):
    # (Numba loses an exception raised in a parallel loop: the examples of a function that asserts
    # run one by one)
    batch = np.stack([X, X, -X, X])
    with pytest.raises(AssertionError, match="x must be positive"):
        transform(checked_log_weights)(batch)


def asserts_a_type(x, d):
    assert isinstance(x, np.ndarray)
    assert isinstance(d, dict), "d must be a dict"
    return np.sum(x ** 2) * d["w"]


def asserts_a_wrong_type(x):
    assert isinstance(x, dict), "x must be a dict"
    return np.sum(x)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_an_assert_of_an_arguments_type_is_decided_as_if_is(backend):
    """isinstance of an argument is decided by the argument's type, in an assert as in an if: it
    holds (no code), or it fails where Python's would, with its message."""
    x, d = np.array([0.5, -1.5]), {"w": 3.0}
    gx, gd = s2s.jit(s2s.grad(asserts_a_type, argnums=(0, 1)), backend=backend)(x, d)
    np.testing.assert_allclose(gx, 6.0 * x)
    assert gd["w"] == pytest.approx(np.sum(x ** 2))
    with pytest.raises(AssertionError, match="x must be a dict"):
        s2s.jit(s2s.grad(asserts_a_wrong_type), backend=backend)(x)


# ---- the walrus (n := v): v bound to n where the expression is evaluated (in a comprehension, to the
# function's n, as Python binds it) ----
def long_or_short(x):
    if (n := x.shape[0]) > 3:
        return np.sum(x[:n - 1] ** 2) * n
    return np.sum(x)

def reuse_in_condition(x):
    s = 0.0
    for i in range(x.shape[0]):
        if (y := np.sin(x[i]) * x[i]) > 0.3:
            s = s + y * y
        else:
            s = s + y
    return s + y

def in_a_while(x):
    k = 0
    s = 0.0
    while (v := x[k] * 2.0) < 3.5:
        s = s + v * x[k]
        k += 1
    return s

def in_a_comprehension(x):
    ys = [y for v in x if (y := v * v) > 0.2]
    return np.sum(np.array(ys)) + y

WALRUS_POINTS = [np.array([0.5, 1.5, 2.0, 0.3]), np.array([1.5, 0.2, 2.0, 1.0]), np.array([1.4, 0.9, 2.0, 0.1])]


@pytest.mark.parametrize("fun", [long_or_short, reuse_in_condition, in_a_while, in_a_comprehension])
def test_walrus_in_every_mode(fun):
    from checks import check_all

    for x in WALRUS_POINTS + [np.array([1.5, 0.2, 2.0])]:
        check_all(fun, x)
    batch = np.stack(WALRUS_POINTS)
    want = np.stack([central_differences(fun, row) for row in batch])
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(batch), want, rtol=1e-6, atol=1e-7)


# ---- x[i], x[j] = x[j], x[i]: the right side first, then the targets left to right, as NumPy runs it:
# elements swap, and rows, which the right side holds as views, do not (both become row j) ----


def swap_elements(x):
    y = x * 1.0
    y[0], y[2] = y[2], y[0]
    return np.sum(y * np.arange(1.0, y.shape[0] + 1.0))


def swap_rows(x):
    a = x.reshape(3, 2) * 1.0
    a[0], a[2] = a[2], a[0]  # both rows are row 2 after it, as in NumPy
    return np.sum(a * np.arange(1.0, 7.0).reshape(3, 2) * a[1])


def rotate_rows(x):
    a = x.reshape(3, 2) * 1.0
    a[0], a[1], a[2] = a[1], a[2], a[0]
    return np.sum(np.sin(a) * np.arange(1.0, 7.0).reshape(3, 2))


def swap_row_copies(x):
    a = x.reshape(3, 2) * 1.0
    a[0], a[2] = a[2].copy(), a[0].copy()  # copies: the rows swap
    return np.sum(a * np.arange(1.0, 7.0).reshape(3, 2) * a[1])


def bubble_pass(x):
    y = x * 1.0
    for i in range(y.shape[0] - 1):
        if y[i] > y[i + 1]:
            y[i], y[i + 1] = y[i + 1], y[i]
    return np.sum(y * np.arange(1.0, y.shape[0] + 1.0))


def name_then_subscript(x):
    y = x * 1.0
    i = 0
    i, y[i] = 2, y[1] * 3.0  # i is bound first: y[2] is written
    return np.sum(y * y) + i


SWAPS = [swap_elements, swap_rows, rotate_rows, swap_row_copies, bubble_pass, name_then_subscript]
SWAP_POINT = np.array([0.5, 1.5, 2.0, 0.3, -0.7, 1.1])


@pytest.mark.parametrize("fun", SWAPS)
def test_subscript_swaps_as_numpy_runs_them(fun):
    from checks import check_all

    want = fun(SWAP_POINT)  # NumPy's own value
    assert s2s.jit(fun)(SWAP_POINT) == pytest.approx(want, rel=1e-14)
    for value_and_grad in (s2s.value_and_grad(fun), s2s.jit(s2s.value_and_grad(fun))):
        assert value_and_grad(SWAP_POINT)[0] == pytest.approx(want, rel=1e-14)
    check_all(fun, SWAP_POINT)
    batch = np.stack([SWAP_POINT, SWAP_POINT[::-1] * 1.3])
    per_example = np.stack([central_differences(fun, row) for row in batch])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(batch), per_example, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch), per_example, rtol=1e-6, atol=1e-7)


def test_a_swap_of_rows_duplicates_as_numpy_does():
    a = np.arange(6.0).reshape(3, 2)
    a[0], a[2] = a[2], a[0]
    np.testing.assert_array_equal(a, [[4.0, 5.0], [2.0, 3.0], [4.0, 5.0]])  # NumPy's pitfall, which s2s keeps
    x = np.arange(6.0)
    # rows 2, 1, 2 times row 1: row 0 (x[0], x[1]) does not reach the value
    assert s2s.jit(swap_rows)(x) == pytest.approx(np.sum((np.array([1.0, 2.0]) + [5.0, 6.0]) * x[4:] * x[2:4])
                                                  + np.sum(np.array([3.0, 4.0]) * x[2:4] ** 2))
    np.testing.assert_allclose(s2s.grad(swap_rows)(x), central_differences(swap_rows, x), rtol=1e-6, atol=1e-6)


# ---- a dict's .get at a constant key, dict(a=x, b=y), and isinstance of a container argument ----
# d.get("w", default) reads d["w"] where the dict holds it, else the default (code generated for a
# call whose keys are known takes the one branch); isinstance(d, dict), (list), (tuple) of an
# argument is decided by the call's argument, as JAX's trace decides it.


def reads_with_get(d):
    a = d.get("item_1")
    b = d.get("item_Y", 2.0)
    c = d.get("item_2", 5.0)
    return np.sum(a * b) + np.sum(np.sin(c))


def get_of_a_dict_built_by_keywords(x, y):
    d = dict(a=x, b=2 * y)
    e = {"c": x * y}
    f = dict([("p", x), ("q", y * y)], r=x)
    return np.sum(d.get("a") * d.get("z", 3.0) + d.get("b", 1.0) * e.get("c")) + np.sum(f["p"] * f["q"] - f["r"])


def branches_on_a_containers_type(x, w):
    if isinstance(x, dict):
        s = np.sum(x["item_1"] * w)
    elif isinstance(x, (list, tuple)):
        s = np.sum(x[0] ** 2 * w)
    else:
        s = np.sum(x * w)
    is_tuple = isinstance(x, tuple)
    return s * (3.0 if is_tuple else 1.0)


def _differences(fun, args, k):
    """The gradient of fun with respect to args[k], an array or a dict of arrays or a list of them."""
    if isinstance(args[k], dict):
        return {key: _differences(lambda v, key=key: fun(*args[:k], {**args[k], key: v}, *args[k + 1:]),
                                  [args[k][key]], 0) for key in args[k]}
    if isinstance(args[k], (list, tuple)):
        items = list(args[k])
        return type(args[k])(_differences(lambda v, j=j: fun(*args[:k], type(args[k])(items[:j] + [v] + items[j + 1:]),
                                                              *args[k + 1:]), [items[j]], 0) for j in range(len(items)))
    return central_differences(lambda v: fun(*args[:k], v, *args[k + 1:]), args[k])


def _assert_close_tree(got, want):
    assert type(got) is type(want) or isinstance(got, np.ndarray)
    if isinstance(want, dict):
        assert sorted(got) == sorted(want)
        for key in want:
            _assert_close_tree(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        for a, b in zip(got, want):
            _assert_close_tree(a, b)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


GET_DICT = {"item_1": np.array([0.5, 1.5, -2.0]), "item_2": np.array([[0.2, 0.4], [-0.6, 0.9]]),
            "item_X": np.array([0.3, -0.4])}


@pytest.mark.parametrize("fun, args", [
    (reads_with_get, (GET_DICT,)),
    (get_of_a_dict_built_by_keywords, (X, X[::-1] * 0.5)),
    (branches_on_a_containers_type, ({"item_1": X, "b": X}, X[::-1])),
    (branches_on_a_containers_type, ([X, X * 2.0], X[::-1])),
    (branches_on_a_containers_type, ((X, X * 2.0), X[::-1])),
    (branches_on_a_containers_type, (X, X[::-1])),
], ids=["get", "dict_keywords", "isinstance_dict", "isinstance_list", "isinstance_tuple", "isinstance_array"])
def test_dict_get_dict_keywords_and_isinstance_of_containers(fun, args):
    from s2s.testing import check_grads

    for k in range(len(args)):
        _assert_close_tree(s2s.grad(fun, argnums=k)(*args), _differences(fun, args, k))
    check_grads(fun, args, modes=("fwd", "rev"))


def gets_and_keywords(d, x):
    a = d.get("item_1")
    b = d.get("item_Y", 2.0)
    e = dict(u=x, v=d.get("item_X", x) * 2.0)
    return np.sum(a * b) + np.sum(e.get("u") * e["v"]) + np.sum(e.get("w", 1.5))


def test_dict_get_and_dict_keywords_under_jit():
    """The call's keys decide .get: d["item_1"] read, the default taken for the missing key, no test
    left in the code (in a function the jitted one calls, the dict's keys are not known: a missing
    key is refused there by Numba's typing, at the user's line)."""
    args = (GET_DICT, X[:2])
    jitted = s2s.jit(s2s.grad(gets_and_keywords, argnums=(0, 1)))
    got = jitted(*args)
    _assert_close_tree(got[0], _differences(gets_and_keywords, args, 0))
    _assert_close_tree(got[1], _differences(gets_and_keywords, args, 1))
    assert "has_key" not in jitted.source and 'd["item_Y"]' not in jitted.source


def get_at_a_key_known_when_it_runs(d):
    s = 0.0
    for k in d:
        s = s + np.sum(d.get(k, 0.0))
    return s


def dict_of_pairs(x):
    d = dict(zip(("a", "b"), (x, x)))
    return np.sum(d["a"])


def isinstance_of_a_local(x):
    y = {"a": x}
    if isinstance(y, dict):
        return np.sum(y["a"] ** 2)
    return np.sum(x)


@pytest.mark.parametrize("fun, text, message", [
    (get_at_a_key_known_when_it_runs, "d.get(k", r"\.get\(\) of a dict is supported at a constant key"),
    (dict_of_pairs, "dict(zip", r"dict\(\.\.\.\) is supported in its keyword form, dict\(a=x, b=y\), and of a display"),
    (isinstance_of_a_local, "isinstance(y", r"decided when the code is generated.*not a parameter"),
], ids=["get_variable_key", "dict_of_pairs", "isinstance_of_a_local"])
def test_dict_idioms_s2s_cannot_decide_are_refused_at_the_users_line(fun, text, message):
    args = ({"a": X},) if fun is get_at_a_key_known_when_it_runs else (X,)
    with pytest.raises(s2s.S2SError, match=message) as info:
        s2s.grad(fun)(*args)
    assert at(fun, text) in str(info.value)
