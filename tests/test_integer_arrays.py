"""A float written into an array of integers is cut to an integer, as NumPy cuts it: such a write
carries no derivative. s2s follows an array's dtype through what makes it (np.zeros, np.arange,
np.full, np.zeros_like, astype, in-place updates, integer arithmetic, np.roll, a lax carry); where
it cannot (an argument, what a helper returns, a function it does not follow) the write is checked
when it runs and refused at the user's line if it would cut a derivative. Derivatives against
central differences of the plain function, in every mode."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s import lax


# ---- arrays of integers made in the function --------------------------------------------------


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
    with pytest.raises(s2s.S2SError, match=r"test_integer_arrays.py:\d+:\d+: writing a value that carries a "
                                           r"derivative into w, an array of integers"):
        s2s.grad(int_array_of_unknown_making)(XI)


# ---- arrays of integers the transform cannot see: arguments, and what is made of them --------


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
        with pytest.raises(s2s.S2SError, match=r"test_integer_arrays.py:\d+:\d+: writing a value that carries a "
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
        with pytest.raises(s2s.S2SError, match=r"test_integer_arrays.py:\d+:\d+: writing a value that carries a "
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


def cast_then_gather(W):
    new_W = W[:, :-1]
    new_inds = np.int64(W[:, -1])
    assert new_inds.dtype == np.int64  # a dtype compared with a scalar type, as NumPy compares them
    if W.dtype != np.float64:
        return np.sum(new_W)
    return np.sum(new_W[new_inds] ** 2)


def test_a_dtype_compared_with_a_scalar_type_under_jit():
    W = np.array([[0.5, 1.2, 1.5], [0.3, -0.7, 0.4], [2.0, 1.0, 1.3]])  # (indices away from a cut)
    assert s2s.jit(cast_then_gather)(W) == pytest.approx(cast_then_gather(W), rel=1e-14)
    expected = central_difference_grad(cast_then_gather, (W,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(cast_then_gather))(W), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2s.grad(cast_then_gather)(W), expected, rtol=1e-6, atol=1e-9)
