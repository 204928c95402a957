"""np.cov and np.corrcoef: differentiated in the data set m (rowvar, bias, ddof;
one variable or several) on both backends, np.cov to any order, np.corrcoef once. A second
data set y and weights are refused where m is differentiated. Derivatives against central
differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, hessian_by_differences, where

rng = np.random.default_rng(24)
M = rng.normal(size=(3, 6))
V = rng.normal(size=6)
W = rng.normal(size=(3, 3))


def close(got, want, atol=1e-7):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=atol)


def weighted_entries(m):
    return np.sum(np.cov(m) * W)


def columns_as_variables(m):
    return np.sum(np.cov(m, rowvar=False, bias=True) ** 2)


def one_variable(v):
    return np.cov(v * v, ddof=0) * 2.0


def transposed_with_ddof(m):
    return np.sum(np.sin(np.cov(m.T, rowvar=False, ddof=2)))


def two_stacked(v):
    return np.cov(np.stack((v, v * v)))[0, 1]


CASES = [(weighted_entries, M), (columns_as_variables, M), (one_variable, V), (transposed_with_ddof, M),
         (two_stacked, V)]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_and_tangent_against_differences(f, x):
    want = central_difference_grad(f, [x], 0)
    close(s2s.grad(f)(x), want)
    close(s2s.jvp(f, (x,), (np.ones_like(x),))[1], np.sum(want), atol=1e-6)


def test_second_order():
    for f, x in ((one_variable, V), (two_stacked, V)):
        close(s2s.hessian(f)(x), hessian_by_differences(f, x), atol=1e-4)


def test_under_jit():
    # (one module per function: the two layouts, one variable, and a Hessian)
    for f, x in ((columns_as_variables, M), (one_variable, V)):
        assert s2s.jit(f)(x) == pytest.approx(f(x), rel=1e-12)
        close(s2s.jit(s2s.grad(f))(x), central_difference_grad(f, [x], 0))
    close(s2s.jit(s2s.hessian(two_stacked))(V), hessian_by_differences(two_stacked, V), atol=1e-4)


def of_two(v):
    return np.cov(v, v * v)[0, 1]


def weighted(v):
    return np.cov(v, aweights=np.arange(1.0, 7.0))


def correlated_with_another(v):
    return np.corrcoef(v, v * v)[0, 1]


def test_two_data_sets_and_weights_are_refused_at_the_line():
    for f, line in ((of_two, "return np.cov(v, v * v)[0, 1]"),
                    (weighted, "return np.cov(v, aweights=np.arange(1.0, 7.0))"),
                    (correlated_with_another, "return np.corrcoef(v, v * v)[0, 1]")):
        with pytest.raises(s2s.S2SError, match=r"np\.(cov|corrcoef) is differentiated of one data set") as info:
            s2s.grad(f)(V)
        assert where(f, line) in str(info.value)


def correlations(m):
    return np.sum(np.corrcoef(m) * W)


def correlation_of_two(v):
    return np.corrcoef(np.stack((v, v * v, np.sin(v))))[0, 2]


def columns_correlated(m):
    return np.sum(np.corrcoef(m, rowvar=False)[:, 0] ** 2) + np.corrcoef(m[0]) * np.sum(m)


def test_corrcoef_against_differences_on_both_backends():
    for f, x in ((correlations, M), (correlation_of_two, V), (columns_correlated, M.T)):
        want = central_difference_grad(f, [x], 0)
        close(s2s.grad(f)(x), want)
        close(s2s.jvp(f, (x,), (np.ones_like(x),))[1], np.sum(want), atol=1e-6)
    for f, x in ((correlations, M), (columns_correlated, M.T)):
        close(s2s.jit(s2s.grad(f))(x), central_difference_grad(f, [x], 0))


def test_a_second_derivative_through_corrcoef_is_refused_at_the_line():
    with pytest.raises(s2s.S2SError, match="derivatives of this order are not implemented") as info:
        s2s.hessian(correlation_of_two)(V)
    assert where(correlation_of_two, "return np.corrcoef(np.stack((v, v * v, np.sin(v))))[0, 2]") in str(info.value)
