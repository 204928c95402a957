"""np.linspace differentiated in start and stop (numbers or arrays, with and without the
endpoint), against central differences, on the python backend and under s2s.jit; the options
it is not differentiated with are refused at the user's line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s.testing import check_grads

WEIGHTS = np.random.default_rng(3).normal(size=(6, 3))


def profile(a, b):
    grid = np.linspace(a, b * b, 6)
    return np.sum(np.sin(grid) * WEIGHTS[:, 0])


def open_interval(a, b):
    return np.sum(np.exp(np.linspace(a * b, b, 6, endpoint=False)) * WEIGHTS[:, 1])


def one_point(a, b):
    return np.sum(np.linspace(a, b, 1) ** 2) + np.sum(np.linspace(a, b, num=2) ** 3)


def of_arrays(x):
    grid = np.linspace(x, 2.0 * x[::-1], 6)  # (6, 3): one column per pair of endpoints
    return np.sum(np.sin(grid) * WEIGHTS)


def stop_only(b):
    return np.sum(np.cos(np.linspace(0.0, b, 6)) * WEIGHTS[:, 2])


@pytest.mark.parametrize("fun", [profile, open_interval, one_point])
def test_numbers_as_start_and_stop(fun):
    check_grads(fun, (0.3, 1.2), modes=("fwd", "rev"))


def test_arrays_as_start_and_stop():
    check_grads(of_arrays, (np.array([0.2, -0.5, 1.1]),), modes=("fwd", "rev"))


def test_second_derivatives():
    h = s2s.hessian(profile, argnums=(0, 1))(0.3, 1.2)
    eps = 1e-5
    for i in range(2):
        step = np.eye(2)[i] * eps
        plus = s2s.grad(profile, argnums=(0, 1))(0.3 + step[0], 1.2 + step[1])
        minus = s2s.grad(profile, argnums=(0, 1))(0.3 - step[0], 1.2 - step[1])
        for j in range(2):
            assert h[j][i] == pytest.approx((plus[j] - minus[j]) / (2 * eps), rel=1e-6, abs=1e-8)


def test_under_jit():
    for fun in (profile, stop_only):
        args = (0.3, 1.2) if fun is profile else (1.7,)
        argnums = tuple(range(len(args)))
        got = s2s.jit(s2s.grad(fun, argnums=argnums))(*args)
        for k in argnums:
            np.testing.assert_allclose(got[k], central_difference_grad(fun, args, k), rtol=1e-7)
    check_grads(profile, (0.3, 1.2), modes=("fwd", "rev"), backend="cpu")


def with_step(a):
    grid, step = np.linspace(a, 1.0, 5, retstep=True)
    return np.sum(grid) * step


def with_dtype(a):
    return np.sum(np.linspace(a, 5.0, 5, dtype=int))


def with_dtype_variable(a, kind):
    return np.sum(np.linspace(a, 5.0, 5, dtype=kind))


@pytest.mark.parametrize("fun,match", [(with_step, "retstep=True is not differentiated"),
                                       (with_dtype, "dtype= is not differentiated")])
def test_options_are_refused_at_the_line(fun, match):
    with pytest.raises(s2s.S2SError, match=r"test_linspace\.py:\d+:\d+: " + match):
        s2s.grad(fun)(0.5)


def test_a_dtype_given_as_an_argument_is_refused_at_the_line():
    # (a type argument is static: written into the code generated for the call, where it is refused)
    with pytest.raises(s2s.S2SError, match=r"test_linspace\.py:\d+:\d+: dtype= is not differentiated"):
        s2s.grad(with_dtype_variable)(0.5, int)


def test_the_refusal_of_np_arange_still_names_a_way_out():
    def ramp(a):
        return np.sum(np.arange(a, 3.0))

    with pytest.raises(s2s.S2SError, match="start \\+ step \\* np.arange"):
        s2s.grad(ramp)(0.5)
