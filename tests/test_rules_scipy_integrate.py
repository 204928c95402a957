"""scipy.integrate.odeint in a differentiated function: a call is lowered to its NumPy form
(s2s/scipy_forms/integrate.py), Dormand and Prince's adaptive Runge-Kutta pair, which calls the
user's dynamics (a module-level function, or a lambda or def nested in the differentiated
function and reading its variables) and is transformed as a helper of the user's. Values are
SciPy's to odeint's tolerances; derivatives are checked against the closed form of a linear
system and against central differences of SciPy's own odeint run at tight tolerances."""

import numpy as np
import pytest
import scipy.integrate
from scipy.integrate import odeint

import s2s
from finite_differences import central_difference_grad, where

Y0 = np.array([1.0, 2.0])
RATE = np.array([0.3, 0.7])
TIMES = np.array([0.0, 0.4, 1.0])
TIGHT = 1e-11  # rtol and atol where derivatives are compared with differences of SciPy's


def decay(y, t, rate):
    return -rate * y


def decay_at_the_end(y0, rate, times):
    return np.sum(odeint(decay, y0, times, args=(rate,))[-1])


def decay_squares(rate):
    return np.sum(odeint(decay, Y0, TIMES, args=(rate,)) ** 2)


def test_gradient_of_a_linear_system_is_its_closed_form():
    # y(t) = y0 exp(-rate (t - t[0])): the end's derivatives in y0, rate, and the first and last times
    g_y0, g_rate, g_times = s2s.grad(decay_at_the_end, argnums=(0, 1, 2))(Y0, RATE, TIMES)
    span = TIMES[-1] - TIMES[0]
    decayed = np.exp(-RATE * span)
    end_slope = np.sum(-RATE * Y0 * decayed)
    np.testing.assert_allclose(g_y0, decayed, rtol=1e-7)
    np.testing.assert_allclose(g_rate, -span * Y0 * decayed, rtol=1e-7)
    np.testing.assert_allclose(g_times, [-end_slope, 0.0, end_slope], rtol=1e-7, atol=1e-8)


def test_jvp_and_hessian_of_a_linear_system_are_its_closed_forms():
    span = TIMES[-1] - TIMES[0]
    direction = np.array([0.5, -1.5])
    value, slope = s2s.jvp(decay_at_the_end, (Y0, RATE, TIMES), (np.zeros(2), direction, np.zeros(3)))
    np.testing.assert_allclose(value, np.sum(Y0 * np.exp(-RATE * span)), rtol=1e-7)
    np.testing.assert_allclose(slope, np.sum(-span * Y0 * np.exp(-RATE * span) * direction), rtol=1e-7)
    # sum over times and components of (y0 exp(-rate t))^2: diagonal, 4 t^2 y0^2 exp(-2 rate t) summed over t
    hessian = np.diag([np.sum(4 * TIMES**2 * Y0[i] ** 2 * np.exp(-2 * RATE[i] * TIMES)) for i in range(2)])
    np.testing.assert_allclose(s2s.hessian(decay_squares)(RATE), hessian, rtol=1e-6, atol=1e-8)


def decay_of_a_number(y0, rate):
    return odeint(decay, y0, TIMES, args=(rate,))


def test_a_number_is_a_state_of_one_component_as_scipy_takes_it():
    solution = decay_of_a_number(1.5, 0.4)
    assert solution.shape == scipy.integrate.odeint(decay, 1.5, TIMES, args=(0.4,)).shape == (3, 1)
    span = TIMES[-1] - TIMES[0]
    slope = s2s.grad(lambda y0, rate: decay_of_a_number(y0, rate)[-1, 0], argnums=1)(1.5, 0.4)
    np.testing.assert_allclose(slope, -span * 1.5 * np.exp(-0.4 * span), rtol=1e-7)


def test_vmap_of_the_gradient_over_initial_states():
    starts = np.array([Y0, 2 * Y0, -Y0])
    span = TIMES[-1] - TIMES[0]
    per_start = s2s.vmap(s2s.grad(decay_at_the_end, argnums=1), in_axes=(0, None, None))(starts, RATE, TIMES)
    np.testing.assert_allclose(per_start, -span * starts * np.exp(-RATE * span), rtol=1e-7)


def test_compiled_gradient_of_a_linear_system_is_its_closed_form():
    span = TIMES[-1] - TIMES[0]
    compiled = s2s.jit(s2s.grad(decay_at_the_end, argnums=(0, 1, 2)))(Y0, RATE, TIMES)
    expected = s2s.grad(decay_at_the_end, argnums=(0, 1, 2))(Y0, RATE, TIMES)
    np.testing.assert_allclose(compiled[1], -span * Y0 * np.exp(-RATE * span), rtol=1e-7)
    for got, python in zip(compiled, expected):
        np.testing.assert_allclose(got, python, rtol=1e-12, atol=1e-14)


# ---- a nonlinear system, as users write the call ------------------------------------------------


def coupled(y, t, a, b):
    return -np.sqrt(t) - y + a - np.mean((y + b) ** 2)


def positional_args(y0, t, a, b):
    return np.sum(np.sin(odeint(coupled, y0, t, (a, b), rtol=TIGHT, atol=TIGHT)))


def nested_def(y0, t, a, b):
    def dynamics(y, s):  # (reads a and b of the function around it)
        return -np.sqrt(s) - y + a - np.mean((y + b) ** 2)

    return np.sum(np.sin(scipy.integrate.odeint(dynamics, y0, t, rtol=TIGHT, atol=TIGHT)))


def lambda_time_first(y0, t, a, b):
    solution = odeint(lambda s, y, shift: coupled(y, s, a, shift), y0, t, args=(b,), tfirst=True,
                      rtol=TIGHT, atol=TIGHT)
    return np.sum(np.sin(solution))


def args_in_a_variable(y0, t, a, b):
    extra = (a, b)
    return np.sum(np.sin(odeint(coupled, y0, t, args=extra, rtol=TIGHT, atol=TIGHT)))


def scipys(y0, t, a, b):
    return np.sum(np.sin(scipy.integrate.odeint(coupled, y0, t, (a, b), rtol=TIGHT, atol=TIGHT)))


RANDOM = np.random.RandomState(0)
NONLINEAR = (RANDOM.randn(3), np.linspace(0.1, 0.2, 4), RANDOM.randn(3), RANDOM.randn(3))


@pytest.mark.parametrize("fun", [positional_args, nested_def, lambda_time_first, args_in_a_variable])
def test_gradient_is_central_differences_of_scipys_odeint(fun):
    gradient = s2s.grad(fun, argnums=(0, 1, 2, 3))(*NONLINEAR)
    np.testing.assert_allclose(fun(*NONLINEAR), scipys(*NONLINEAR), rtol=1e-9)
    for k in range(4):
        np.testing.assert_allclose(gradient[k], central_difference_grad(scipys, NONLINEAR, k, h=1e-5),
                                   rtol=1e-6, atol=1e-7)


def test_jvp_is_central_differences_of_scipys_odeint():
    tangents = tuple(RANDOM.randn(*np.shape(x)) for x in NONLINEAR)
    _, slope = s2s.jvp(nested_def, NONLINEAR, tangents)
    h = 1e-5
    up = scipys(*(x + h * v for x, v in zip(NONLINEAR, tangents)))
    down = scipys(*(x - h * v for x, v in zip(NONLINEAR, tangents)))
    np.testing.assert_allclose(slope, (up - down) / (2 * h), rtol=1e-6)


def decay_backwards(y0, rate):
    return np.sum(odeint(decay, y0, np.array([1.0, 0.6, 0.0]), args=(rate,))[-1])


def test_times_that_decrease_integrate_backwards():
    # y(0) = y0 exp(rate) from y(1) = y0
    g_y0, g_rate = s2s.grad(decay_backwards, argnums=(0, 1))(Y0, RATE)
    np.testing.assert_allclose(decay_backwards(Y0, RATE), np.sum(Y0 * np.exp(RATE)), rtol=1e-7)
    np.testing.assert_allclose(g_y0, np.exp(RATE), rtol=1e-7)
    np.testing.assert_allclose(g_rate, Y0 * np.exp(RATE), rtol=1e-7)


def test_values_at_the_default_tolerances_are_scipys_to_them():
    def solution(y0, a, b):
        return odeint(coupled, y0, np.linspace(0.1, 2.0, 5), args=(a, b))

    arguments = NONLINEAR[0], NONLINEAR[2], NONLINEAR[3]
    value, _ = s2s.vjp(solution, *arguments)
    np.testing.assert_allclose(value, scipy.integrate.odeint(coupled, arguments[0], np.linspace(0.1, 2.0, 5),
                                                             arguments[1:]), rtol=1e-6, atol=1e-7)


def too_few_steps(rate):
    return np.sum(odeint(decay, Y0, np.array([0.0, 100.0]), args=(rate,), mxstep=3))


def test_running_out_of_steps_raises():
    with pytest.raises(RuntimeError, match="odeint took mxstep steps"):
        s2s.grad(too_few_steps)(RATE)


def with_full_output(rate):
    return np.sum(odeint(decay, Y0, TIMES, args=(rate,), full_output=1))


def with_critical_times(rate):
    return np.sum(odeint(decay, Y0, TIMES, args=(rate,), tcrit=np.array([0.5])))


def with_a_variable_tfirst(rate, first):
    return np.sum(odeint(lambda t, y: -rate * y, Y0, TIMES, tfirst=first))


@pytest.mark.parametrize("fun, text, message", [
    (with_full_output, "full_output=1", "without full_output"),
    (with_critical_times, "tcrit=", "without tcrit"),
    (with_a_variable_tfirst, "tfirst=first", "tfirst of scipy.integrate.odeint is True or False"),
])
def test_what_is_not_covered_is_refused_at_the_call(fun, text, message):
    arguments = (RATE, True) if fun is with_a_variable_tfirst else (RATE,)
    with pytest.raises(s2s.S2SError, match=where(fun, text) + ".*" + message):
        s2s.grad(fun)(*arguments)
