"""Rules of elementwise functions where they are not smooth or meet NaN, infinities and zeros:
np.fmax, np.fmin, np.maximum and np.minimum at ties, NaNs and infinities (the argument not taken
gets no derivative, and its NaN tangent does not reach the result), and x ** a where x has a zero
(the exponent's derivative x ** a log x counts 0 there, as in JAX), and 0 ** 0, whose base's
derivative is 0 (x ** 0 is 1 for every x); np.angle of real data, a step (0 or pi) whose derivative is
0 everywhere. Against central differences
and closed forms, on the python backend and under s2s.jit."""

import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- np.fmin / np.fmax: the tangent of the argument not taken ---------------------------
# A tangent x_dot * x_wins + y_dot * (1 - x_wins) would be NaN where x is NaN (so y is taken,
# x_wins = 0) and x's tangent is NaN too (x = a * b with a NaN: a * b_dot), 0 * NaN, where the
# value is y's. runtime.weighted drops the tangent not taken, as JAX's select does. (Reverse mode
# meets the usual 0 * NaN of the product's own rule, as JAX does: not tested.)


def fmin_of_nan_product(a, b):
    return np.fmin(a * b, b)


def test_fmin_tangent_where_the_nan_argument_is_not_taken():
    a, b = np.array([np.nan]), np.array([0.4])
    _, tangent = s2s.jvp(fmin_of_nan_product, (a, b), (np.array([1.0]), np.array([0.0])))
    # the value is b wherever a is NaN: its tangent is b's, 0
    np.testing.assert_allclose(tangent, [0.0])


def fmax_of_nan_product_and_floor(a, b):
    return np.fmax(a * b, 0.5) + np.fmax(b, a * b) + np.fmin(b[0], a[0] * b[0])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_fmax_fmin_tangents_against_central_differences(backend):
    """Arrays, a number floor and scalars; a NaN in a: its elements take b's tangent."""
    a, b = np.array([np.nan, 0.3, 2.0]), np.array([0.4, 0.6, 0.1])
    a_dot, b_dot = np.array([1.0, -0.5, 0.25]), np.array([0.3, 1.0, -2.0])
    _, tangent = s2s.jvp(fmax_of_nan_product_and_floor, (a, b), (a_dot, b_dot), backend=backend)
    h = 1e-6
    central = (fmax_of_nan_product_and_floor(a + h * a_dot, b + h * b_dot)
               - fmax_of_nan_product_and_floor(a - h * a_dot, b - h * b_dot)) / (2 * h)
    assert np.isfinite(tangent).all()
    np.testing.assert_allclose(tangent, central, rtol=1e-7, atol=1e-9)


# ---- np.fmax/np.fmin/np.maximum/np.minimum at ties, NaNs and infinities ---------------------


def extremes(x, y):
    return np.sum(np.fmax(x, y) ** 2 + np.exp(np.fmin(x, y)) + np.maximum(x, 0.5) * np.minimum(x, 0.2))


X_EXT = np.array([0.3, 1.0, -0.5, 2.0, 0.7, -1.0])
Y_EXT = {"ties": np.array([0.3, 1.0, 0.1, 2.0, -0.2, -1.0]),  # (x at 0.5 and 0.2 ties too: none here)
         "nans": np.array([np.nan, 0.5, np.nan, 2.5, 0.7, np.nan]),
         "infs": np.array([-np.inf, -np.inf, 0.0, 3.0, -np.inf, 1.0])}


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_fmax_fmin_gradients_and_tangents_at_ties_nans_and_infinities(backend):
    """At a tie each argument gets half (central differences say so); a NaN argument is not
    taken, so its gradient is 0 and the other's is whole; -inf is never taken."""
    grad = s2s.grad(extremes, argnums=(0, 1))
    grad = s2s.jit(grad) if backend == "cpu" else grad
    for name, y in Y_EXT.items():
        gx, gy = grad(X_EXT, y)
        # (at a tie the function has a kink: central differences are off by O(h) there)
        close(gx, central_difference_grad(extremes, [X_EXT, y], 0), rtol=1e-5, atol=1e-6)
        finite = np.isfinite(y)
        close(gy[finite], central_difference_grad(extremes, [X_EXT, y], 1)[finite], rtol=1e-5, atol=1e-6)
        assert np.all(gy[~finite] == 0.0), name
        for k in range(X_EXT.size):  # forward mode along each element of x
            e = np.zeros_like(X_EXT)
            e[k] = 1.0
            _, tangent = s2s.jvp(extremes, (X_EXT, y), (e, np.zeros_like(y)), backend=backend)
            close(tangent, gx[k])


def floor_at_nan(x, y):
    return np.sum(np.fmax(x, y) ** 2 + np.fmin(x, 2.0 * y))


def test_fmax_and_fmin_take_the_number_where_the_other_is_nan():
    # np.fmax(x, nan) is x: its derivative is x's (np.maximum's would be NaN there)
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([np.nan, 0.3, 1.0])
    gx, gy = s2s.grad(floor_at_nan, argnums=(0, 1))(x, y)
    # fmax picks x, y, x; fmin(x, 2y) picks x, x, x (2y = nan, 0.6, 2.0: a tie at the last
    # shares the derivative equally, as np.minimum's does)
    np.testing.assert_allclose(gx, [2 * 0.5 + 1.0, 0.0 + 1.0, 2 * 2.0 + 0.5], rtol=1e-15)
    np.testing.assert_allclose(gy, [0.0, 2 * 0.3, 0.5 * 2.0], rtol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.grad(floor_at_nan, argnums=(0, 1)))(x, y)[0], gx, rtol=1e-15)


# ---- x ** a where x has a zero -----------------------------------------------------------------


def power_sum(x, a):
    return np.sum(x**a)


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


def power(x, y):
    return x**y


def numpy_power(x, y):
    return np.sum(np.power(x, y))


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun", [power, numpy_power])
def test_power_of_a_variable_exponent_at_a_zero_base(fun, backend):
    """x ** 0 is 1 for every x: d/dx is 0 at x = 0 too (not 0 * 0 ** -1, NaN); d/dy at x = 0 is
    0 (JAX's log(1) for log(0)); for 0 < y < 1 d/dx at 0 is inf, Python's 0.0 ** -0.5 raising
    ZeroDivisionError notwithstanding."""
    grad = s2s.jit(s2s.grad(fun, argnums=(0, 1)), backend=backend)
    assert grad(0.0, 0.0) == (0.0, 0.0)
    assert grad(0.0, 2.0) == (0.0, 0.0)
    assert grad(0.0, 1.0) == (1.0, 0.0)
    assert grad(2.0, 0.0) == pytest.approx((0.0, np.log(2.0)), rel=1e-15)
    with np.errstate(divide="ignore"):
        assert grad(0.0, 0.5) == (np.inf, 0.0)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_power_of_a_variable_exponent_at_zero_bases_of_an_array(backend):
    grad = s2s.jit(s2s.grad(numpy_power, argnums=(0, 1)), backend=backend)
    dx, dy = grad(np.array([0.0, 0.0, 1.5]), np.array([0.0, 2.0, 0.0]))
    np.testing.assert_array_equal(dx, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(dy, [0.0, 0.0, np.log(1.5)], rtol=1e-15)


def test_power_of_a_variable_exponent_at_a_zero_base_in_forward_mode():
    assert s2s.jvp(power, (0.0, 0.0), (1.0, 0.0)) == (1.0, 0.0)
    assert s2s.jvp(power, (0.0, 0.0), (0.0, 1.0)) == (1.0, 0.0)
    # away from the zero base, against central differences
    want = [central_difference_grad(power, (1.3, 0.7), k) for k in (0, 1)]
    np.testing.assert_allclose(s2s.grad(power, argnums=(0, 1))(1.3, 0.7), want, rtol=1e-7)


# ---- np.angle of real data ------------------------------------------------------------------


def angle_weighted(x):
    return np.sum(np.angle(x) * x) + np.angle(x[0], deg=True) * x[1]


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_angle_of_real_data_is_a_step_with_a_zero_derivative(backend):
    """0 where x >= 0 (+0.0 too), pi where x < 0 (-0.0 too, as NumPy's arctan2(0, -0.0)); the
    product rule gives angle(x) as the gradient of sum(angle(x) * x), and nothing more."""
    x = np.array([-1.5, 0.0, -0.0, 2.0, -0.25])
    value, grad = s2s.jit(s2s.value_and_grad(angle_weighted), backend=backend)(x)
    assert value == angle_weighted(x)
    want = np.angle(x)
    want[1] += 180.0
    np.testing.assert_array_equal(grad, want)
    away = np.array([-1.5, 0.4, -0.3, 2.0, -0.25])  # (no entry at the step, where differences jump)
    close(s2s.jit(s2s.grad(angle_weighted), backend=backend)(away), central_difference_grad(angle_weighted, (away,), 0))
    direction = np.array([0.3, -1.0, 0.5, 2.0, 1.0])
    assert s2s.jvp(angle_weighted, (away,), (direction,))[1] == pytest.approx(np.angle(away) @ direction + 180.0 * -1.0)
