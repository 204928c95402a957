"""s2s.lax's dynamic slices (dynamic_slice, dynamic_update_slice and their _in_dim and
_index_in_dim forms), primitives with rules: values with JAX's start indices (a negative one from
the end, then clamped), derivatives against central differences (start indices inside, past the end and negative), a
Hessian against differences of the gradient, vmap with an index per example, and s2s.jit."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s import lax

RANDOM = np.random.RandomState(3)
X = RANDOM.randn(4, 5)
UPDATE = RANDOM.randn(2, 5)
COLUMN = RANDOM.randn(4)
STARTS = [0, 2, 7, -3]  # inside, inside, past the end (clamped back), negative (from the end)


def test_starts_are_clamped_as_jax_clamps_them():
    row = np.arange(10.0)
    np.testing.assert_array_equal(lax.dynamic_slice(row, (8,), (4,)), [6.0, 7.0, 8.0, 9.0])
    np.testing.assert_array_equal(lax.dynamic_slice(row, (-2,), (3,)), [7.0, 8.0, 9.0])  # (from the end)
    np.testing.assert_array_equal(lax.dynamic_slice(row, (-20,), (3,)), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(lax.dynamic_slice(X, (-3, -1), (2, 3)), X[1:3, 2:5])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(X, 4, 2, axis=1), X[:, 3:5])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(X, 9, 0, keepdims=False), X[3])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(X, 1), X[1:2])
    written = lax.dynamic_update_slice(np.zeros(6), np.ones(2), (5,))
    np.testing.assert_array_equal(written, [0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(X, COLUMN, -1, 1)[:, 4], COLUMN)
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(X, COLUMN, 2, 1)[:, [0, 1, 3, 4]],
                                  X[:, [0, 1, 3, 4]])
    with pytest.raises(TypeError, match="one of each per dimension"):
        lax.dynamic_slice(X, (1,), (2, 2))


def window(x, i):
    return np.sum(lax.dynamic_slice(x, (i, 1), (2, 3)) ** 2)


def written(x, u, i):
    return np.sum(np.sin(lax.dynamic_update_slice(x, u, (i, 0))))


def along_axes(x, i):
    block = lax.dynamic_slice_in_dim(x, i, 2, axis=1)
    row = lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False)
    column = lax.dynamic_index_in_dim(x, i + 1, 1)
    return np.sum(block**2) + np.sum(np.sin(row)) * np.sum(column)


def written_along_axes(x, u, v, i):
    rows = lax.dynamic_update_slice_in_dim(x, u, i, axis=0)
    both = lax.dynamic_update_index_in_dim(rows, v, i, 1)
    return np.sum(np.sin(both) * both)


CASES = [(window, (X,), 0), (written, (X, UPDATE), (0, 1)), (along_axes, (X,), 0),
         (written_along_axes, (X, UPDATE, COLUMN), (0, 1, 2))]


@pytest.mark.parametrize("fun, arrays, argnums", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("start", STARTS)
def test_gradient_against_central_differences(fun, arrays, argnums, start):
    args = (*arrays, start)
    gradient = s2s.grad(fun, argnums=argnums)(*args)
    for k, got in zip(np.atleast_1d(argnums), gradient if isinstance(argnums, tuple) else (gradient,)):
        np.testing.assert_allclose(got, central_difference_grad(fun, args, k), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fun, arrays, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_jvp_against_central_differences(fun, arrays, argnums):
    tangents = tuple(RANDOM.randn(*a.shape) for a in arrays)
    _, slope = s2s.jvp(fun, (*arrays, 7), (*tangents, 0))
    h = 1e-6
    up = fun(*(a + h * t for a, t in zip(arrays, tangents)), 7)
    down = fun(*(a - h * t for a, t in zip(arrays, tangents)), 7)
    np.testing.assert_allclose(slope, (up - down) / (2 * h), rtol=1e-6, atol=1e-9)


def test_hessian_against_differences_of_the_gradient():
    hessian = s2s.hessian(written_along_axes, argnums=2)(X, UPDATE, COLUMN, 1)

    def gradient(v):
        return s2s.grad(written_along_axes, argnums=2)(X, UPDATE, v, 1)

    h = 1e-5
    expected = np.array([(gradient(COLUMN + h * e) - gradient(COLUMN - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-6, atol=1e-8)


def test_vmap_with_an_index_per_example():
    xs, starts = RANDOM.randn(3, 4, 5), np.array([0, 2, 5])
    batched = s2s.vmap(s2s.grad(window), in_axes=(0, 0))(xs, starts)
    for k in range(3):
        np.testing.assert_allclose(batched[k], central_difference_grad(window, (xs[k], starts[k]), 0),
                                   rtol=1e-6, atol=1e-8)


def everything(x, u, v, i):
    return window(x, i) + written(x, u, i + 1) + along_axes(x, i) + written_along_axes(x, u, v, i)


def test_compiled_value_and_gradient_against_central_differences():
    args = (X, UPDATE, COLUMN, -2)
    value, gradient = s2s.jit(s2s.value_and_grad(everything, argnums=(0, 1, 2)))(*args)
    np.testing.assert_allclose(value, everything(*args), rtol=1e-12)
    for k, got in enumerate(gradient):
        np.testing.assert_allclose(got, central_difference_grad(everything, args, k), rtol=1e-6, atol=1e-8)
