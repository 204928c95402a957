"""dtype= keywords inside transformed functions: dtype=float, np.float64 and np.float32 given to
np.zeros, np.ones, np.full, np.arange, np.asarray, np.array, np.empty and s2s.random's draws.
float32 stays float32, and an integer dtype of a differentiated value is refused at the user's
line. Against central differences and closed forms, on the python backend and under s2s.jit."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


def dtype_keywords(x):
    a = np.zeros(3, dtype=float) + np.ones(3, dtype=np.float64) + np.full(3, 2.0, dtype=float)
    b = np.arange(3, dtype=float) + np.asarray([1, 2, 3], dtype=float) + np.array([0, 1, 0], dtype=np.float64)
    c = np.full(3, x[0], dtype=np.float64) * np.empty(3, dtype=float).size
    return np.sum(x * (a + b) + c)


def float32_keywords(x):
    z = np.ones(3, dtype=np.float32) * x + np.asarray([1, 2, 3], dtype=np.float32)
    return np.sum(z * z)


def draws_with_dtype(mu):
    key = s2s.random.PRNGKey(0)
    return np.sum(mu + s2s.random.normal(key, (3,), dtype=float) * s2s.random.uniform(key, (3,), dtype=float))


def full_of_ints(x):
    return np.sum(np.full(3, x[0], dtype=int))


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun", [dtype_keywords, draws_with_dtype])
def test_dtype_keywords_inside_transformed_functions(fun, backend):
    x = np.array([0.5, 1.0, 2.0])
    want = central_difference_grad(fun, [x], 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun), backend=backend)(x), want, rtol=1e-7, atol=1e-8)
    _, tangent = s2s.jvp(fun, (x,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(want))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_float32_dtype_keywords_stay_float32(backend):
    x = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    g = s2s.jit(s2s.grad(float32_keywords), backend=backend)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * (x + np.array([1, 2, 3])), rtol=1e-6)


def test_full_with_an_integer_dtype_of_a_differentiated_value_is_refused():
    with pytest.raises(s2s.S2SError, match=r"test_dtype_keywords.py:\d+:\d+: .*floating dtype"):
        s2s.grad(full_of_ints)(np.array([0.5, 1.0]))


def scalar_type_casts(W):
    labels = np.int64(W[:, -1])  # an array of integers: no derivative
    first = np.float64(W[0, 0]) * 2.0
    return np.sum(W[:, 0] * labels) + first


def test_numpy_scalar_types_called_on_arrays_and_numbers_cast():
    W = np.array([[0.5, 0.0], [1.5, 1.0], [-0.5, 2.0]])
    want = np.array([[2.0, 0.0], [1.0, 0.0], [2.0, 0.0]])  # d/dW[:, 0]: the labels; d/dW[0, 0] of 2 W[0, 0]: 2
    np.testing.assert_allclose(s2s.grad(scalar_type_casts)(W), want)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scalar_type_casts))(W), want)


def flattened_at_least(x, m):
    v = np.array(x, ndmin=1).flatten()
    M = np.array(m, ndmin=2)
    return np.sum(M @ (v * v)) + np.sum(np.array(x, ndmin=0) * 2.0)


@pytest.mark.parametrize("x", [1.5, np.array([0.5, -1.0])], ids=["number", "vector"])
def test_np_array_with_ndmin(x):
    m = np.ones(np.size(x))  # (1-d: ndmin=2 makes it a row)
    want = central_difference_grad(flattened_at_least, (x, m), 0)
    np.testing.assert_allclose(s2s.grad(flattened_at_least)(x, m), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(flattened_at_least))(x, m), want, rtol=1e-6, atol=1e-8)
