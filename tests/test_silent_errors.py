"""Derivatives that once came out silently wrong, each against a closed form or central
differences: the determinant, inverse and solve of stacks of matrices, and the exponent's
derivative of x ** a where x has a zero."""

import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


def sum_of_dets(A):
    return np.sum(np.linalg.det(A))


def squared_det(A):
    return np.linalg.det(A) ** 2


def sum_of_squared_inverses(A):
    return np.sum(np.linalg.inv(A) ** 2)


def sum_of_squared_solutions(A, B):
    return np.sum(np.linalg.solve(A, B) ** 2)


def power_sum(x, a):
    return np.sum(x**a)


def stack(shape=(2, 3, 3), seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 3 * np.eye(shape[-1])


def det_gradient(A):
    """d det(A) / dA = det(A) inv(A)^T, matrix by matrix."""
    return np.linalg.det(A)[..., None, None] * np.swapaxes(np.linalg.inv(A), -1, -2)


def finite_jacobian(g, A, h=1e-6):
    out = np.zeros(A.shape + A.shape)
    for k in np.ndindex(A.shape):
        up, down = A.copy(), A.copy()
        up[k] += h
        down[k] -= h
        out[(Ellipsis,) + k] = (g(up) - g(down)) / (2 * h)
    return out


@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_det_of_a_stack_matches_the_closed_form(mode):
    A = stack()
    transform = s2s.grad if mode == "grad" else s2s.jacfwd
    np.testing.assert_allclose(transform(sum_of_dets)(A), det_gradient(A), rtol=1e-10, atol=1e-12)


def test_hessian_of_det_of_a_stack_matches_differences_of_the_closed_form():
    A = stack()
    expected = finite_jacobian(det_gradient, A)
    np.testing.assert_allclose(s2s.hessian(sum_of_dets)(A), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_det_of_a_matrix_and_its_square(backend):
    A = stack((3, 3))
    np.testing.assert_allclose(s2s.jit(s2s.grad(sum_of_dets), backend=backend)(A), det_gradient(A), rtol=1e-10)
    expected = central_difference_grad(squared_det, (A,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(squared_det), backend=backend)(A), expected, rtol=1e-6)
    hessian = finite_jacobian(lambda M: 2 * np.linalg.det(M) * det_gradient(M), A)
    np.testing.assert_allclose(s2s.hessian(squared_det)(A), hessian, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fun, args", [
    (sum_of_squared_inverses, (stack(),)),
    (sum_of_squared_solutions, (stack(), np.random.default_rng(1).standard_normal((2, 3, 2)))),
])
def test_inv_and_solve_of_a_stack_match_finite_differences(fun, args):
    for k in range(len(args)):
        expected = central_difference_grad(fun, args, k)
        np.testing.assert_allclose(s2s.grad(fun, argnums=k)(*args), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2s.jacfwd(fun, argnums=k)(*args), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_exponent_derivative_with_a_zero_base(backend):
    """d/da sum(x ** a) = sum(x ** a log x), where 0 ** a log 0 counts as 0 (as in JAX)."""
    x, a = np.array([0.0, 1.0, 2.0]), 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        da = s2s.jit(s2s.grad(power_sum, argnums=1), backend=backend)(x, a)
        dx, da2 = s2s.jit(s2s.grad(power_sum, argnums=(0, 1)), backend=backend)(x, a)
    assert da == pytest.approx(4 * np.log(2.0), rel=1e-14)
    assert da2 == pytest.approx(4 * np.log(2.0), rel=1e-14)
    np.testing.assert_allclose(dx, 2 * x, rtol=1e-14)


def test_exponent_derivative_with_a_zero_base_forward_and_second_order():
    x, a = np.array([0.0, 1.0, 2.0]), 2.0
    _, tangent = s2s.jvp(power_sum, (x, a), (np.zeros(3), 1.0))
    assert tangent == pytest.approx(4 * np.log(2.0), rel=1e-14)
    assert s2s.hessian(power_sum, argnums=1)(x, a) == pytest.approx(4 * np.log(2.0) ** 2, rel=1e-12)
    float32 = s2s.jit(s2s.grad(power_sum, argnums=1))(x.astype(np.float32), np.float32(a))
    assert float32.dtype == np.float32 and float32 == pytest.approx(4 * np.log(2.0), rel=1e-6)
