"""Red team of s2s.lax control flow, custom rules and checkpoint: programs that gave silent wrong
values or derivatives, or raw Python errors, now fixed or refused. Each derivative is checked
against central finite differences of the plain NumPy function."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s import lax

X = np.array([0.3, -0.2, 0.5, 0.8])


# ---- a scan step that writes its carry in place and returns it as its output -----------------


def scan_returns_its_carry(x):
    def step(c, xi):
        c[0] = c[0] * xi + 1.0
        return c, c

    c, ys = lax.scan(step, x.copy(), x)
    return np.sum(c) + np.sum(ys * ys)


def by_hand(x):
    """The same program with each step's output copied as it is made: JAX's semantics, and the
    transformed scan's (it writes each row of ys as its step ends)."""
    c, rows = x.copy(), []
    for xi in x:
        c[0] = c[0] * xi + 1.0
        rows.append(c.copy())
    return np.sum(c) + np.sum(np.array(rows) ** 2)


def test_plain_scan_keeps_each_steps_output():
    # Called as plain Python, every row of ys was the last step's carry (the one array the steps
    # returned), 24.79 where the transformed scan gives 15.13
    assert scan_returns_its_carry(X) == pytest.approx(by_hand(X), rel=1e-14)
    assert s2s.jit(scan_returns_its_carry, backend="python")(X) == pytest.approx(by_hand(X), rel=1e-14)
    np.testing.assert_allclose(s2s.grad(scan_returns_its_carry)(X),
                               central_difference_grad(scan_returns_its_carry, (X,), 0), rtol=1e-6, atol=1e-8)


# ---- xs and ys that are not arrays or tuple displays --------------------------------------


def ys_tuple_in_a_variable(x):
    def step(c, xi):
        c = c * xi + 0.3
        out = (c, c * xi)
        return c, out

    c, ys = lax.scan(step, 0.2, x)
    return c + np.sum(ys[0]) + np.sum(ys[1] * ys[1])


def pair_step(c, xi):
    c = c * xi + 0.3
    return c, (c, c * xi)


def ys_of_a_module_level_step(x):
    c, (a, b) = lax.scan(pair_step, 0.2, x)
    return c + np.sum(a) + np.sum(b * b)


def xs_tuple_in_a_variable(x):
    xs = (x, x * x)

    def step(c, r):
        a, b = r
        return c * a + b, c

    c, ys = lax.scan(step, 0.2, xs)
    return c + np.sum(ys)


def xs_list_display(x):
    def step(c, r):
        return c * r[0] + r[1], c

    c, ys = lax.scan(step, 0.2, [x, x * x])
    return c + np.sum(ys)


def ys_dict_display(x):
    def step(c, xi):
        c = c * xi + 0.3
        return c, {"p": c, "q": c * xi}

    c, ys = lax.scan(step, 0.2, x)
    return c + np.sum(ys["p"]) + np.sum(ys["q"] * ys["q"])


BATCH = np.stack([X, 0.9 * X])
TRANSFORMS = {
    "value": lambda f: s2s.jit(f, backend="python")(X),
    "grad": lambda f: s2s.grad(f)(X),
    "jacfwd": lambda f: s2s.jacfwd(f)(X),
    "vmap": lambda f: s2s.vmap(f)(BATCH),
    "vmap_grad": lambda f: s2s.vmap(s2s.grad(f))(BATCH),
}


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_a_tuple_output_in_a_variable_is_refused(transform):
    # ys was stacked as one (n, 2) array, so ys[0] was the first step's pair: the value 1.15
    # where NumPy gives 2.58, and jacfwd [0.585, 0.294, 0.182, 0.414] for [0.181, 0.967, 0.959, 1.80]
    for fun in (ys_tuple_in_a_variable, ys_of_a_module_level_step):
        with pytest.raises(s2s.S2SError, match="the step's output y is a tuple, list or dict held in a variable"):
            transform(fun)


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_xs_that_is_not_an_array_or_a_tuple_display_is_refused(transform):
    # AttributeError: 'tuple' (or 'list', 'dict') object has no attribute 'shape'; and vmap of
    # the list display gave [0.087, 1.30, 0.29] where NumPy gives [1.46, 1.36, 0.84]
    with pytest.raises(s2s.S2SError, match="xs is a tuple, list or dict held in a variable"):
        transform(xs_tuple_in_a_variable)
    if transform is TRANSFORMS["vmap"]:
        # s2s.vmap of a function s2s refuses to transform calls it once per example, in Python
        np.testing.assert_allclose(transform(xs_list_display), [xs_list_display(row) for row in BATCH])
        np.testing.assert_allclose(transform(ys_dict_display), [ys_dict_display(row) for row in BATCH])
        return
    with pytest.raises(s2s.S2SError, match="takes xs as one array or a tuple display"):
        transform(xs_list_display)
    with pytest.raises(s2s.S2SError, match="not a list or dict"):
        transform(ys_dict_display)


def test_plain_values_of_the_refused_programs():
    """(The plain functions run: the refusals are s2s's, not NumPy's.)"""
    for fun in (ys_tuple_in_a_variable, ys_of_a_module_level_step, xs_tuple_in_a_variable, xs_list_display,
                ys_dict_display):
        assert np.isfinite(fun(X))


# ---- a float written into an integer array ---------------------------------------------------


def int_array_write(x):
    v = np.zeros(2, dtype=np.int64)
    v[0] = x[0] * 10.0  # cut to an integer: a piecewise constant of x[0]
    return np.sum(v * x[:2])


def int_array_loop(x):
    v = np.zeros(4, dtype=int)
    for i in range(4):
        v[i] = v[i] + x[i] * 10.0
    w = v.copy()
    w[0] = x[1] * 3.0
    return np.sum(v * x) + np.sum(w * x)


def int_array_carry(x):
    def body(i, v):
        v[i] = v[i] + x[i] * 2.5
        return v

    v = lax.fori_loop(0, 3, body, np.zeros(4, dtype=np.int64))
    return np.sum(v * x)


def int_array_in_a_tuple_carry(x):
    def body(c):
        i, v = c
        v[i] = x[i] * 10.0
        return (i + 1, v)

    i, v = lax.while_loop(lambda c: c[0] < 3, body, (0, np.zeros(4, dtype=int)))
    return np.sum(v * x)


def int_arrays_of_other_makers(x):
    a = np.arange(4)
    a[2] = x[2] * 10.0
    b = np.array([1, 2, 3, 4])
    b[0] = x[0] * 10.0
    c = (x * 3.0).astype(int)
    c[1] = x[1] * 10.0
    m = np.zeros(4, dtype=bool)
    m[3] = x[3] * 2.0
    return np.sum(a * x) + np.sum(b * x) + np.sum(c * x) + np.sum(m * x)


XI = np.array([0.33, -0.23, 0.57, 0.81])  # (10 x, 2.5 x, 3 x away from integers)


@pytest.mark.parametrize("fun", [int_array_write, int_array_loop, int_array_carry, int_array_in_a_tuple_carry,
                                 int_arrays_of_other_makers])
def test_a_float_written_into_an_integer_array_has_no_derivative(fun):
    # The write's value reached the gradient as if the array held it uncut: for int_array_write
    # [6.3, 0] where the derivative is v = [3, 0] (and 10 x[0] more for each write in the loops)
    want = central_difference_grad(fun, (XI,), 0)
    np.testing.assert_allclose(s2s.grad(fun)(XI), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.jacfwd(fun)(XI), want, rtol=1e-7, atol=1e-9)
    batch = np.stack([XI, XI[::-1] * 0.9])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(batch),
                               [central_difference_grad(fun, (row,), 0) for row in batch], rtol=1e-7, atol=1e-9)


def test_a_float_written_into_an_integer_array_under_jit():
    want = central_difference_grad(int_array_loop, (XI,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(int_array_loop))(XI), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.hessian(int_array_write)(XI[:2]), np.zeros((2, 2)), atol=1e-12)


def int_array_made_like_an_int_array(x):
    w = np.zeros_like(np.arange(4))  # (zeros_like without a dtype keeps its argument's)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def test_an_array_made_like_an_integer_array_is_one():
    # [6.3 + 3, 0, 0, 0] where the derivative is [3, 0, 0, 0]
    want = central_difference_grad(int_array_made_like_an_int_array, (XI,), 0)
    np.testing.assert_allclose(s2s.grad(int_array_made_like_an_int_array)(XI), want, rtol=1e-7, atol=1e-9)


def int_array_updated_in_place(x):
    w = np.zeros(4, dtype=np.int32)
    w += 1  # (an in-place update keeps the dtype)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def int_array_remade_by_arithmetic(x):
    w = np.zeros(4, dtype=int)
    w = 2 * w + 1  # (int arithmetic of an int array: ints)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def int_array_rolled_in_a_loop(x):
    w = np.arange(4)
    for i in range(2):
        w = np.roll(w, 1)
        w[i] = x[i] * 10.0
    return np.sum(w * x)


@pytest.mark.parametrize("fun", [int_array_updated_in_place, int_array_remade_by_arithmetic,
                                 int_array_rolled_in_a_loop])
def test_an_integer_array_remade_by_the_function_stays_one(fun):
    # [6.3, 1, 1, 1] where the derivative is [3, 1, 1, 1] (and [2, -4.3, 0, 1] for [2, -2, 0, 1]):
    # w += 1, 2 * w + 1 or np.roll(w, 1) lost the knowledge that w holds integers
    want = central_difference_grad(fun, (XI,), 0)
    np.testing.assert_allclose(s2s.grad(fun)(XI), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(XI), want, rtol=1e-7, atol=1e-9)


def int_array_of_unknown_making(x):
    w = np.zeros(4, dtype=int)
    w = w + np.ones(4, dtype=int) ** 2  # (a power: s2s does not follow the dtype through it)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def test_an_integer_array_whose_dtype_is_not_followed_is_checked():
    with pytest.raises(s2s.S2SError, match=r"test_red_team_lax.py:\d+:\d+: writing a value that carries a "
                                           r"derivative into w, an array of integers"):
        s2s.grad(int_array_of_unknown_making)(XI)


def writes_into_a_copy_of_an_argument(x, v):
    v = v.copy()
    v[0] = x[0] * 10.0
    return np.sum(v * x)


def writes_into_an_argument(x, v):
    v[1] = x[1] * 10.0
    return np.sum(v * x)


def writes_into_an_array_made_like_an_argument(x, v):
    w = np.zeros_like(v)
    for i in range(2):
        w[i] = x[i] * 10.0
    return np.sum(w * x)


def fill_first(v, x):
    v[0] = x[0] * 10.0
    return v


def writes_in_a_helper(x, v):
    w = fill_first(v.copy(), x)  # (the helper's v is differentiated: it holds the caller's array)
    return np.sum(w * x)


def copy_of(v):
    return v.copy()


def writes_into_what_a_helper_returns(x, v):
    w = copy_of(v)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def writes_into_an_array_filled_with_an_argument(x, v):
    w = np.full(4, v[1])  # (np.full takes its fill value's dtype)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


ARGUMENT_WRITES = [writes_into_a_copy_of_an_argument, writes_into_an_argument,
                   writes_into_an_array_made_like_an_argument, writes_in_a_helper, writes_into_what_a_helper_returns,
                   writes_into_an_array_filled_with_an_argument]


@pytest.mark.parametrize("fun", ARGUMENT_WRITES)
def test_a_float_written_into_an_integer_array_argument_is_refused(fun):
    # The transform cannot know an argument's dtype: where v held integers the write's value reached
    # the gradient as if uncut ([6.3 + 3.3, 2, 3, 4] where the derivative is [3, 2, 3, 4]). Run time
    # refuses it, at the write, in every mode and backend
    transforms = [s2s.grad(fun), s2s.jacfwd(fun), s2s.jacrev(fun), s2s.jit(s2s.grad(fun)),
                  s2s.jit(s2s.jacfwd(fun)), s2s.vmap(s2s.grad(fun), in_axes=(0, None))]
    for transformed in transforms:
        x = np.stack([XI, XI]) if transformed is transforms[-1] else XI
        with pytest.raises(s2s.S2SError, match=r"test_red_team_lax.py:\d+:\d+: writing a value that carries a "
                                               r"derivative into \w, an array of integers"):
            transformed(x, np.array([1, 2, 3, 4]))
    with pytest.raises(s2s.S2SError, match="jvp: argument 1 holds an array of integers"):
        s2s.jvp(fun, (XI, np.array([1, 2, 3, 4])), (XI, np.zeros(4)))  # (as JAX: no float tangent for it)


def writes_into_a_sum_with_an_argument(x, v):
    w = v + 0  # (an int v gives an int w)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def writes_into_a_sorted_argument(x, v):
    w = np.sort(v)[::-1]
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def writes_into_a_float_quotient_of_an_argument(x, v):
    w = v / 2 + v.astype(np.float64) + v * 0.5  # (floats whatever v holds: no check)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


@pytest.mark.parametrize("fun", [writes_into_a_sum_with_an_argument, writes_into_a_sorted_argument])
def test_a_float_written_into_what_numpy_makes_of_an_integer_argument_is_refused(fun):
    # [6.3, 2, 3, 4] (and its reverse) where the derivative is [3, 2, 3, 4]: the write's value was
    # taken uncut through arithmetic or a NumPy function of the int argument
    v = np.array([1, 2, 3, 4])
    for transformed in (s2s.grad(fun), s2s.jit(s2s.grad(fun))):
        with pytest.raises(s2s.S2SError, match=r"test_red_team_lax.py:\d+:\d+: writing a value that carries a "
                                               r"derivative into w, an array of integers"):
            transformed(XI, v)
    floats = v.astype(float)
    np.testing.assert_allclose(s2s.grad(fun)(XI, floats), central_difference_grad(lambda x: fun(x, floats), (XI,), 0),
                               rtol=1e-7, atol=1e-9)


def test_a_write_into_floats_made_from_an_integer_argument_is_not_checked():
    v = np.array([1, 2, 3, 4])
    want = central_difference_grad(lambda x: writes_into_a_float_quotient_of_an_argument(x, v), (XI,), 0)
    np.testing.assert_allclose(s2s.grad(writes_into_a_float_quotient_of_an_argument)(XI, v), want,
                               rtol=1e-7, atol=1e-9)
    assert "require_float_array" not in s2s.source(s2s.grad(writes_into_a_float_quotient_of_an_argument))


def integer_fill(x):
    w = np.full(4, 2)
    w[0] = x[0] * 10.0
    return np.sum(w * x)


def test_an_array_filled_with_an_integer_is_one():
    # [6.3 + 3.3, 2, 2, 2] where the derivative is [3, 2, 2, 2]
    want = central_difference_grad(integer_fill, (XI,), 0)
    np.testing.assert_allclose(s2s.grad(integer_fill)(XI), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.jacfwd(integer_fill)(XI), want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fun", ARGUMENT_WRITES)
def test_a_float_argument_written_into_keeps_its_derivative(fun):
    v = np.array([1.0, 2.0, 3.0, 4.0])
    want = central_difference_grad(lambda x: fun(x, v.copy()), (XI,), 0)
    for transformed in (s2s.grad(fun), s2s.jit(s2s.grad(fun)), s2s.jacfwd(fun)):
        np.testing.assert_allclose(transformed(XI, v.copy()), want, rtol=1e-7, atol=1e-9)
    # and an int(...) the program writes itself is the cut, whose derivative is 0
    def cut(x, v):
        v = v.copy()
        v[0] = int(x[0] * 10.0)
        return np.sum(v * x)
    w = np.array([1, 2, 3, 4])
    np.testing.assert_allclose(s2s.grad(cut)(XI, w), central_difference_grad(lambda x: cut(x, w), (XI,), 0),
                               rtol=1e-7, atol=1e-9)


# ---- jax.checkpoint(step) passed to a form ---------------------------------------------------


def scan_of_a_checkpointed_step(x):
    def step(c, xi):
        return np.tanh(c * xi + 0.2), c * c

    c, ys = lax.scan(s2s.checkpoint(step), 0.3, x)
    return c + np.sum(ys)


def fori_of_a_remat_body(x):
    def body(i, v):
        return v * 0.9 + np.sin(v) * x[i]

    return np.sum(lax.fori_loop(0, 3, s2s.remat(body, prevent_cse=False), x * 1.0))


@pytest.mark.parametrize("fun", [scan_of_a_checkpointed_step, fori_of_a_remat_body])
def test_a_checkpointed_function_passed_to_a_form(fun):
    # was refused: "the f of s2s.lax.scan must be a function s2s can read"
    assert s2s.jit(fun, backend="python")(X) == pytest.approx(fun(X), rel=1e-14)
    np.testing.assert_allclose(s2s.grad(fun)(X), central_difference_grad(fun, (X,), 0), rtol=1e-6, atol=1e-8)


# ---- a custom_jvp rule that unpacks primals and tangents in one statement ----------------------


@s2s.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents  # (and calls the function itself for its value, as JAX's docs do)
    return softplus(x), t / (1.0 + np.exp(-x))


def softplus_weighted(x):
    return np.sum(softplus(x) * x)


def swapped_in_a_loop(x):
    a, b = x[0], x[1]
    for _ in range(3):
        a, b = b, a * b + 1.0  # (a display that reads the names it binds: unpacked as a tuple)
    return a * b


@pytest.mark.parametrize("fun", [softplus_weighted, swapped_in_a_loop])
def test_unpacking_a_display_of_tuples(fun):
    # The tuple (primals, tangents) made x active in the rule's transpose, whose reverse mode then
    # called softplus's reverse mode for softplus(x): a RecursionError
    want = central_difference_grad(fun, (X,), 0)
    for transform in (s2s.grad, s2s.jacfwd, s2s.jacrev):
        np.testing.assert_allclose(transform(fun)(X), want, rtol=1e-7, atol=1e-9)


def scan_of_a_tuple_carry(x):
    def step(c, xi):
        a, b = c
        new = (a * xi + b, np.sin(b) + xi)  # (the carry is a tuple held in a variable)
        return new, a

    init = (0.5, 0.2)
    c, ys = lax.scan(step, init, x)
    return c[0] + c[1] + np.sum(ys)


@pytest.mark.parametrize("fun", [softplus_weighted, scan_of_a_tuple_carry])
def test_items_of_a_tuple_held_in_a_variable_under_jit(fun):
    # The adjoint of a tuple's item was added in place (bar[1] += ...), which Numba refuses for a
    # tuple: s2s.jit(s2s.grad(fun)) was an S2SError where the python backend ran
    want = central_difference_grad(fun, (X,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(X), want, rtol=1e-7, atol=1e-9)


@s2s.custom_jvp
def softplus_packed(x):
    return np.log1p(np.exp(x))


@softplus_packed.defjvp
def softplus_packed_jvp(primals, tangents):
    both = (primals[0], tangents[0])
    a, t = both  # (a holds the primal only: it is not differentiated in the rule's transpose)
    return softplus_packed(a), t / (1.0 + np.exp(-a))


def softplus_packed_weighted(x):
    return np.sum(softplus_packed(x) * x)


def test_a_rule_that_packs_primal_and_tangent_in_one_tuple():
    # a took the tuple's activity, so the transpose called softplus_packed's reverse mode for
    # softplus_packed(a), which is the transpose again: a RecursionError
    want = np.log1p(np.exp(X)) + X / (1.0 + np.exp(-X))
    np.testing.assert_allclose(s2s.grad(softplus_packed_weighted)(X), want, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.grad(softplus_packed_weighted))(X), want, rtol=1e-12)
