"""np.prod and np.cumprod beyond first order: the Hessian of np.prod (the rule of its adjoint
helper, exact where x has zeros), along an axis and of a number; third derivatives through np.prod
and np.cumprod are refused at the user's line, and the way out (a loop of products) works. Against
closed forms and central differences of the gradient."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


# ---- second derivatives of np.prod (the rule of its adjoint helper, exact at zeros) -------


def prod_all(x):
    return np.prod(x)


def prod_rows(X):
    return np.sum(np.prod(X, axis=1) ** 2)


def prod_columns_kept(X):
    return np.sum(np.sin(np.prod(X, axis=0, keepdims=True)))


def _prod_hessian(x):
    """H[i, j] = the product of x without x[i] and x[j] (i != j), 0 on the diagonal."""
    n = len(x)
    return np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("x", [[0.5, -1.2, 2.0, 0.7], [0.5, 0.0, 2.0, 0.0], [0.0, 3.0, 1.5]])
def test_hessian_of_prod_is_the_closed_form_with_zeros(x):
    x = np.array(x)
    np.testing.assert_allclose(s2s.hessian(prod_all)(x), _prod_hessian(x), atol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(prod_all))(x), _prod_hessian(x), atol=1e-14)


@pytest.mark.parametrize("fun", [prod_rows, prod_columns_kept])
def test_hessian_of_prod_along_an_axis_against_finite_differences(fun):
    X = np.array([[0.5, 0.0, 2.0], [0.7, -1.1, 1.3]])
    g = s2s.grad(fun)
    want = np.array([central_difference_grad(lambda y: g(y).ravel()[k], [X], 0).ravel() for k in range(X.size)])
    for got in (s2s.hessian(fun)(X), s2s.jit(s2s.hessian(fun))(X)):
        np.testing.assert_allclose(got.reshape(X.size, X.size), want, atol=1e-8)


def test_grad_grad_of_prod_of_a_scalar():
    def f(t):
        return np.prod(np.array([t, 2 * t, t * t, 1.5]))  # 3 t^4

    assert s2s.grad(s2s.grad(f))(0.7) == pytest.approx(36 * 0.7**2)


# ---- third derivatives through np.cumprod and np.prod: a located refusal ------------------


def cumprod_of_three(t):
    return np.sum(np.cumprod(np.array([t, 2 * t, t * t])))  # t + 2 t^2 + 2 t^4


def prod_of_three(t):
    return np.prod(np.array([t, 2 * t, t * t]))  # 2 t^4


def cumprod_as_a_loop(t):
    p = 1.0
    s = 0.0
    for v in [t, 2 * t, t * t]:
        p = p * v
        s = s + p
    return s


@pytest.mark.parametrize("fun", [cumprod_of_three, prod_of_three])
def test_third_derivatives_through_cumprod_and_prod_are_located_refusals(fun):
    assert s2s.grad(s2s.grad(fun))(0.7) == pytest.approx(
        (4 + 24 * 0.7**2) if fun is cumprod_of_three else 24 * 0.7**2)
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(s2s.grad(s2s.grad(fun)))(0.7)
    message = str(info.value)
    assert "test_rules_prod.py:" in message and "derivatives of this order" in message
    assert info.value.origin.text.startswith("return np.")  # the user's statement, not generated code


def test_the_way_out_of_that_refusal_works():
    # d^3/dt^3 (t + 2 t^2 + 2 t^4) = 48 t
    assert s2s.grad(s2s.grad(s2s.grad(cumprod_as_a_loop)))(0.7) == pytest.approx(48 * 0.7)


def product_of_one_value(a):
    return np.prod(a) * 3.0


@pytest.mark.parametrize("a", [1.7, np.array(1.7)], ids=["number", "0-d array"])
def test_the_product_of_one_value(a):
    # (its derivative is 1: the product of one number is the number; under jit a 0-d array goes in as one)
    assert s2s.grad(product_of_one_value)(a) == pytest.approx(3.0)
    assert s2s.jit(s2s.grad(product_of_one_value))(a) == pytest.approx(3.0)
    assert s2s.jvp(product_of_one_value, (a,), (np.ones_like(a),))[1] == pytest.approx(3.0)
    assert s2s.jvp(s2s.jit(product_of_one_value), (a,), (np.ones_like(a),))[1] == pytest.approx(3.0)
