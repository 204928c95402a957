"""Division by zero under s2s.jit: generated modules are compiled with NumPy's
error model, so that x[i] / 0.0 and the derivatives of log(x) or sqrt(d * d) at 0 are inf or
nan, as NumPy's scalars give them (the python backend), where Numba's default raised a bare
ZeroDivisionError without a line of the user's. What Numba still raises (a number to a
negative int power, x ** -2 at 0) is an S2SError at the function. The derivative of x ** 0 is 0
everywhere (JAX's), not 0 * x ** -1, NaN at 0."""

import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

X = np.array([1.0, 1.0, 0.0, 2.0])


def capped_reciprocals(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + min(1.0 / x[i], 5.0)
    return s


def floored_logs(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + max(np.log(x[i]), -5.0)
    return s


def distances(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            d = x[i] - x[j]
            s = s + np.sqrt(d * d)
    return s


def power_zero(x):
    y = x[1:] - x[:-1]
    return np.sum(y ** 0 + y)


def test_division_by_zero_is_numpy_s_under_jit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (capped_reciprocals, floored_logs, distances):
            assert s2s.jit(f)(X) == f(X)
            np.testing.assert_array_equal(s2s.jit(s2s.grad(f))(X), s2s.grad(f)(X))  # (inf and nan alike)
        assert np.isnan(s2s.grad(distances)(X)).all()  # (the derivative of |x_i - x_i| at 0)


def test_the_derivative_of_a_power_zero_is_zero():
    want = np.array([-1.0, 0.0, 0.0, 1.0])  # (of np.sum(y): y ** 0 is 1 everywhere, 0 ** 0 included)
    np.testing.assert_allclose(central_difference_grad(power_zero, [X], 0), want, atol=1e-8)
    np.testing.assert_array_equal(s2s.grad(power_zero)(X), want)
    np.testing.assert_array_equal(s2s.jit(s2s.grad(power_zero))(X), want)


def inverse_squares(x):
    return np.sum(np.minimum(x ** -2, 5.0))


def test_a_negative_int_power_of_zero_is_refused_at_the_function():
    assert inverse_squares(X) == 7.25
    with pytest.raises(s2s.S2SError, match=r"x \*\* -2\.0") as info:
        s2s.jit(inverse_squares)(X)
    assert "test_division_under_jit.py:" in str(info.value) and "def inverse_squares" in str(info.value)
