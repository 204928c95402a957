"""Red team of higher-order and composed modes (hessian, jacfwd/jacrev of jacobians, grad of
grad, under s2s.jit too), checked against closed forms and central differences of f."""

import numpy as np
import pytest

import s2s
from finite_differences import hessian_by_differences


def chained_squares(x):
    """y[i] = x[i]^2 x[i+1] written into an array in a loop."""
    n = x.shape[0]
    y = np.zeros(n - 1)
    for i in range(n - 1):
        y[i] = x[i] ** 2 * x[i + 1]
    return y


def chained_squares_tensor(x):
    """d2 y[i] / dx[j] dx[k] of chained_squares."""
    n = x.shape[0]
    T = np.zeros((n - 1, n, n))
    for i in range(n - 1):
        T[i, i, i] = 2 * x[i + 1]
        T[i, i, i + 1] = T[i, i + 1, i] = 2 * x[i]
    return T


def damped_sum(x):
    s = 0.0
    k = 0
    while s < 4.0 and k < 10:
        s = s * 0.5 + np.sum(np.sin(x) * x) + x[k % x.shape[0]] ** 2
        k += 1
    return s * x[0]


def product_sum(x, y):
    return np.sum(x ** 2 * y)


@pytest.mark.parametrize("outer, inner", [(s2s.jacfwd, s2s.jacfwd), (s2s.jacrev, s2s.jacfwd)],
                         ids=["jacfwd(jacfwd)", "jacrev(jacfwd)"])
def test_jacobians_of_forward_jacobians_are_computed_not_refused(outer, inner):
    # The Jacobian of a Jacobian is one array whichever mode computed each (as in JAX); these
    # were refused ("second derivatives are taken forward over reverse").
    x = np.array([0.7, 1.2, -0.9, 1.6])
    np.testing.assert_allclose(outer(inner(chained_squares))(x), chained_squares_tensor(x), atol=1e-12)
    H = outer(inner(damped_sum))(x)
    np.testing.assert_allclose(H, hessian_by_differences(damped_sum, x), rtol=1e-5, atol=1e-5)


def test_jacfwd_of_jacfwd_with_two_argnums_gives_the_hessian_blocks():
    x, y = np.array([0.5, -1.5, 2.0]), np.array([1.0, 0.3, -0.7])
    (hxx, hxy), (hyx, hyy) = s2s.jacfwd(s2s.jacfwd(product_sum, argnums=(0, 1)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(hxx, np.diag(2 * y), atol=1e-12)
    np.testing.assert_allclose(hxy, np.diag(2 * x), atol=1e-12)
    np.testing.assert_allclose(hyx, np.diag(2 * x), atol=1e-12)
    np.testing.assert_allclose(hyy, np.zeros((3, 3)), atol=1e-12)
