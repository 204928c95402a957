"""try/except whose path the values decide: the derivatives follow the statements Python runs.

A try the call's static values decide is in tests/test_static_arguments.py; here the values
decide, on every call: where the body raises, the statements before the one that raised run,
then the handler that caught it.
"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, where


def payments(rate, pmt, pv):
    """numpy-financial's nper, in short: a zero rate is found by the division it breaks."""
    zero_rate = False
    with np.errstate(divide="raise"):
        try:
            z = pmt * (1 + rate) / rate
        except FloatingPointError:
            zero_rate = True
    if zero_rate:
        return np.sum(pv / -pmt)
    return np.sum(np.log(z / (pv + z)) / np.log(1 + rate))


def staged(x, y):
    a = x * 2.0
    try:
        a = a + y * y
        b = np.linalg.cholesky(np.outer(a, a) + np.diag(y))
        c = np.sum(b * 3.0, axis=1)
    except (np.linalg.LinAlgError, ValueError):
        c = a * 5.0
    except ZeroDivisionError:
        raise
    else:
        c = c + 1.0
    return np.sum(c * a)


def gain(P, H, R):
    """filterpy's Kalman gain: a bare except where inv cannot invert a number."""
    S = H @ P @ H.T + R
    try:
        K = P @ H.T @ np.linalg.inv(S)
    except:  # noqa: E722
        K = P @ H.T / S
    return np.sum(K ** 2)


RATES = np.array([0.05, 0.07])
PMT, PV = np.array([-100.0, -90.0]), np.array([1000.0, 900.0])
X = np.array([1.0, 2.0])
POSITIVE, NEGATIVE = np.array([0.5, 0.7]), np.array([-3.5, -4.7])  # (cholesky succeeds, and fails after a)
P = np.eye(2) + 0.1


@pytest.mark.parametrize("rates", [RATES, np.array([0.0, 0.07])], ids=["body", "handler"])
def test_a_floating_point_error_under_errstate_picks_the_handler(rates):
    args = (rates, PMT, PV)
    # (at a zero rate the derivative in the rate is the zero-rate branch's: none)
    expected = [central_difference_grad(payments, args, k) for k in (0, 1, 2)]
    if rates[0] == 0.0:
        expected[0] = np.zeros(2)
    for grad in (s2s.grad(payments, argnums=(0, 1, 2)), s2s.jit(s2s.grad(payments, argnums=(0, 1, 2)))):
        for got, want in zip(grad(*args), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    tangent = s2s.jvp(payments, args, (np.zeros(2), np.ones(2), np.ones(2)))[1]
    assert tangent == pytest.approx(np.sum(expected[1]) + np.sum(expected[2]), rel=1e-6)


@pytest.mark.parametrize("y", [POSITIVE, NEGATIVE], ids=["body", "handler"])
def test_the_statements_before_the_one_that_raised_run_then_the_handler(y):
    # NEGATIVE: `a = a + y * y` runs, cholesky raises, and the handler reads the new a
    for k in (0, 1):
        want = central_difference_grad(staged, (X, y), k)
        np.testing.assert_allclose(s2s.grad(staged, argnums=k)(X, y), want, rtol=1e-6)
    tangent = s2s.jvp(staged, (X, y), (np.ones(2), np.zeros(2)))[1]
    assert tangent == pytest.approx(np.sum(central_difference_grad(staged, (X, y), 0)), rel=1e-6)


def test_second_order_follows_the_path_too():
    # (the Hessian transforms the generated gradient again, probe and all)
    h = 1e-5
    rows = [(s2s.grad(staged)(X + h * e, NEGATIVE) - s2s.grad(staged)(X - h * e, NEGATIVE)) / (2 * h)
            for e in np.eye(2)]
    np.testing.assert_allclose(s2s.hessian(staged)(X, NEGATIVE), np.array(rows), rtol=1e-5)


def test_an_exception_no_handler_catches_is_raised():
    def divided(x, d):
        try:
            y = x / d
        except ZeroDivisionError:
            raise
        except ValueError:
            y = x
        return y * y

    assert s2s.grad(divided)(3.0, 2.0) == pytest.approx(1.5)
    with pytest.raises(ZeroDivisionError):
        s2s.grad(divided)(3.0, 0.0)


def test_a_bare_except_takes_what_inv_refuses():
    for H, R in ((np.array([[1.0, 0.5]]), np.eye(1) * 0.5), (np.array([1.0, 0.5]), 0.5)):
        for k in (0, 1):
            want = central_difference_grad(gain, (P, H, R), k)
            np.testing.assert_allclose(s2s.grad(gain, argnums=k)(P, H, R), want, rtol=1e-6)


def test_vmap_runs_each_example_on_its_own_path():
    ys = np.stack([POSITIVE, NEGATIVE, POSITIVE * 2])
    xs = np.stack([X, X * 1.5, X])
    want = np.stack([central_difference_grad(staged, (x, y), 0) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(staged))(xs, ys), want, rtol=1e-6)


def test_the_generated_code_runs_the_try_in_a_function_of_its_own():
    g = s2s.grad(staged)
    g(X, POSITIVE)
    source = g.source
    assert "@runtime.runs_as_python\ndef staged_try_at_line_" in source
    assert "except (np.linalg.LinAlgError, ValueError):" in source and "except ZeroDivisionError:\n        raise" in source
    assert 'with runtime.objmode(outcome="intp"):' in source
    assert s2s.source(s2s.grad(staged)) == source  # (byte-identical on the next run)


def caught_by_name(x):
    try:
        y = np.log(x)
    except FloatingPointError as err:  # noqa: F841
        y = x
    return np.sum(y)


def with_finally(x):
    try:
        y = np.log(x)
    finally:
        y = x
    return np.sum(y)


def loop_in_try(x):
    total = 0.0
    try:
        for v in x:
            total = total + np.log(v)
    except FloatingPointError:
        total = 0.0
    return total


def helper(x):
    return np.log(x)


def calls_in_try(x):
    try:
        y = helper(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


@pytest.mark.parametrize("fun, text, message", [
    (caught_by_name, "except FloatingPointError as err", "`except ... as name` is not supported"),
    (with_finally, "finally:", "a try with finally is not supported"),
    (loop_in_try, "for v in x", "a for statement inside a try whose path the values decide"),
    (calls_in_try, "y = helper(x)", "a call of helper inside a try whose path the values decide"),
], ids=["as-name", "finally", "loop", "user-call"])
def test_what_the_probe_cannot_run_as_python_does_is_refused_at_its_line(fun, text, message):
    with pytest.raises(s2s.S2SError, match=message) as info:
        s2s.grad(fun)(X)
    assert where(fun, text) in str(info.value)
