"""NumPy that numba.njit rejects, routed to runtime helpers under s2s.jit (codegen/numba_routes.py,
Facts.numba of templates/array_rules.py): np.array of an array, np.atleast_*d of a number,
np.vstack of arrays of different ndim. Results against NumPy (the python backend), gradients
against central differences."""

import numpy as np
import pytest
from finite_differences import central_difference_grad

import s2s

X = np.array([0.3, 0.5, 0.7])
A = np.array([[1.0, 2.0, 0.5], [0.2, -1.0, 0.4]])


def copies(x):
    y = np.array(x)
    y[0] = 5.0
    return y, x


def loss_of_copies(x):
    y = np.array(x * x)
    z = np.array((x[0], x[1]))  # a tuple display: Numba's own np.array
    return np.sum(np.sin(y)) + np.sum(z * z) + np.sum(np.asarray(x) ** 3)


def atleast(s, x):
    return np.sum(np.atleast_1d(s) * x) + np.sum(np.atleast_2d(s * s) * 2.0) + np.sum(np.atleast_3d(x) ** 2)


def stacked(x, A):
    return np.sum(np.vstack((A, x, x * x)) ** 2 * np.arange(1.0, 4.0))


def test_np_array_of_an_array_is_a_copy_under_jit():
    x = X.copy()
    y, same = s2s.jit(copies)(x)
    assert y[0] == 5.0 and np.array_equal(same, X) and np.array_equal(x, X)
    x32 = X.astype(np.float32)
    assert s2s.jit(copies)(x32)[0].dtype == np.float32


def test_np_array_is_routed_only_where_numba_lacks_it():
    source = s2s.source(s2s.jit(loss_of_copies))
    assert "    y = runtime.array(x * x)\n" in source
    assert "    z = np.array((x[0], x[1]))\n" in source  # a tuple display stays NumPy's np.array
    assert "= np.asarray(x)\n" in source  # Numba has np.asarray of an array


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradients_of_routed_calls_under_jit(dtype):
    x = X.astype(dtype)
    tolerance = 1e-6 if dtype == np.float64 else 1e-4
    got = s2s.jit(s2s.grad(loss_of_copies))(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, central_difference_grad(loss_of_copies, (X,), 0), rtol=tolerance, atol=tolerance)
    for k in (0, 1):
        got = s2s.jit(s2s.grad(atleast, argnums=k))(0.4, X)
        np.testing.assert_allclose(got, central_difference_grad(atleast, (0.4, X), k), rtol=1e-6, atol=1e-7)
        got = s2s.jit(s2s.grad(stacked, argnums=k))(X, A)
        np.testing.assert_allclose(got, central_difference_grad(stacked, (X, A), k), rtol=1e-6, atol=1e-7)


def test_routed_values_equal_numpy():
    assert s2s.jit(atleast)(0.4, X) == pytest.approx(atleast(0.4, X), rel=1e-15)
    assert s2s.jit(stacked)(X, A) == pytest.approx(stacked(X, A), rel=1e-15)


# ---- products Numba's np.dot and @ lack (s2s/runtime/overloads/linalg.py) ----------------------
# Numba multiplies arrays of one float dtype: a float vector with an int64 one, and np.dot with a
# number, have forms of their own (NumPy's dtype: float64).
COUNTS = np.array([1, 2, 3])


def products(w, k):
    return (np.dot(w, k) + np.sum(w @ np.arange(6).reshape(3, 2)) * 0.5 + np.sum(np.dot(A, 2.0) * w[0])
            + np.dot(3.0, w[1]) * np.prod(2.0) + np.sum(np.outer(w, w) @ k))


def test_products_of_two_dtypes_and_with_numbers_under_jit():
    assert s2s.jit(products)(X, COUNTS) == pytest.approx(products(X, COUNTS), rel=1e-12)
    expected = central_difference_grad(products, (X, COUNTS), 0)
    np.testing.assert_allclose(s2s.grad(products)(X, COUNTS), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.grad(products))(X, COUNTS), expected, rtol=1e-6, atol=1e-7)


def contractions_of_stacks(a, b, v):
    return (np.sum(np.sin(np.dot(a, b))) + np.sum(np.dot(a, v) ** 2) + np.sum(np.cos(np.dot(v, b)))
            + np.sum(np.sin(np.inner(a, b.transpose(0, 2, 1)))) + np.sum(np.inner(v, a) ** 2))


def test_dot_and_inner_beyond_two_dimensions_under_jit():
    """Numba's np.dot and np.inner take 1-d and 2-d arrays: s2s.jit's forms contract the rows of
    the summed axes in one matrix product, and their adjoints put the products back in shape."""
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((2, 2, 4)), rng.standard_normal((2, 4, 3)), rng.standard_normal(4))
    value, got = s2s.jit(s2s.value_and_grad(contractions_of_stacks, argnums=(0, 1, 2)))(*args)
    assert value == pytest.approx(contractions_of_stacks(*args), rel=1e-12)
    for k in range(3):
        np.testing.assert_allclose(got[k], central_difference_grad(contractions_of_stacks, args, k), rtol=1e-6,
                                   atol=1e-7)


# ---- reductions of a list or tuple of arrays --------------------------------------------------
# NumPy reduces the array of the display; Numba's reductions take arrays, so the display (and the
# operand of the reductions' derivatives) becomes np.array(...) of it, which Numba builds.


def reduced_lists(x):
    return (np.sum(np.var([x, x + 2.0 * x * x])) + np.sum(np.mean((x, np.sin(x)), axis=0) ** 2)
            + np.max([x, x * x + 1.0]) + np.std([x, x ** 3]) + np.sum([x, x * 3.0]) * np.prod([x, x + 1.0]))


def test_reductions_of_a_list_of_arrays_under_jit():
    assert s2s.jit(reduced_lists)(X) == pytest.approx(reduced_lists(X), rel=1e-12)
    expected = central_difference_grad(reduced_lists, (X,), 0)
    np.testing.assert_allclose(s2s.grad(reduced_lists)(X), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.grad(reduced_lists))(X), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(reduced_lists))(X), expected, rtol=1e-6, atol=1e-7)
