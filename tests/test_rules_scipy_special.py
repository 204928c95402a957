"""scipy.special in a differentiated function, as JAX offers jax.scipy.special: the functions
s2s declares (templates/scipy_rules.py) are primitives with their derivative rules and a compiled
form, called as users write them (`from scipy.special import logsumexp`, `scipy.special.expit(x)`,
`import scipy.special as sp`); one it does not declare is refused at the user's line, before
anything reads SciPy's own source."""

import math
import re

import numpy as np
import pytest
import scipy.special
import scipy.special as sp
from scipy.special import betaln, expit, gammaln, k0, log_ndtr, log_softmax, logsumexp, softmax, xlog1py, xlogy, zeta

import s2s
from s2s.testing import check_grads

BACKENDS = ["python", "cpu"]
EULER_GAMMA = 0.5772156649015329
ZETA_3 = 1.2020569031595942

# ---- elementwise functions: derivatives against central differences --------------------------
# Each program spells SciPy as users do: imported names, scipy.special.<name>, sp.<name>.


def logistic_loss(x):
    return np.sum(expit(x) * x) + np.sum(scipy.special.logit(expit(x) * 0.5 + 0.25) ** 2)


def normal_loss(x):
    return np.sum(sp.erf(x) * sp.erfc(x * 0.5) + sp.ndtr(x) + log_ndtr(x - 1.0) + sp.erfinv(x * 0.3) + sp.ndtri(expit(x)))


def gamma_loss(y):
    return np.sum(gammaln(y) * sp.digamma(y) + sp.gamma(y) + sp.polygamma(1, y) * y)


def two_operand_loss(x, y):
    return np.sum(xlogy(x, y) + xlog1py(y, x) * x + betaln(x, y) + betaln(x, 2.0))


X = np.array([-1.2, -0.3, 0.4, 1.1])
Y = np.array([0.7, 1.3, 2.2, 3.5])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, args", [(logistic_loss, (X,)), (normal_loss, (X,)), (gamma_loss, (Y,)),
                                       (two_operand_loss, (Y * 0.4, Y))], ids=lambda v: getattr(v, "__name__", ""))
def test_derivatives_against_central_differences(fun, args, backend):
    check_grads(fun, args, order=1, modes=("fwd", "rev"), backend=backend)


@pytest.mark.parametrize("fun, args", [(logistic_loss, (X,)), (normal_loss, (X,)), (gamma_loss, (Y,)),
                                       (two_operand_loss, (Y * 0.4, Y))], ids=lambda v: getattr(v, "__name__", ""))
def test_second_derivatives_against_central_differences(fun, args):
    check_grads(fun, args, order=2, modes=("rev",), backend="python")


# ---- distribution functions: differentiated in x, refused in their shapes ----------------------

U = np.array([0.12, 0.4, 0.55, 0.93])
SHAPES = np.array([0.8, 1.7, 3.0, 6.5])


def incomplete_loss(x, y):
    return np.sum(sp.gammainc(2.5, y) * x + scipy.special.gammaincc(1.5, y * x) + sp.betainc(2.0, 3.5, x)
                  + sp.stdtr(4.0, x - y) + sp.gammaincc(SHAPES, y))


def incomplete_of_shapes(x, a):
    return np.sum(sp.gammainc(a, x * 3.0) + sp.betainc(a, a + 1.0, x) * x + sp.stdtr(a, x - 0.5))


def test_incomplete_functions_against_central_differences():
    """(Compiled: the rule matrix's jit column, and scipy.stats's cdfs, tests/test_rules_scipy_stats.py.)"""
    check_grads(incomplete_loss, (U, Y), order=1, modes=("fwd", "rev"), backend="python")
    check_grads(incomplete_of_shapes, (U, SHAPES), order=1, modes=("fwd", "rev"), argnums=(0,), backend="python")


def integer_shapes_loss(x):
    return np.sum(sp.gammainc(1, x * 3.0) + sp.gammaincc(2, x) * x + sp.betainc(2, 3, x))


def test_integer_shapes_compile():
    """An int written as the shape (Numba broadcasts an int with a float array only as floats)."""
    np.testing.assert_allclose(s2s.jit(integer_shapes_loss)(U), integer_shapes_loss(U), rtol=1e-13)
    check_grads(integer_shapes_loss, (U,), order=1, modes=("rev",), backend="cpu")


def test_incomplete_functions_second_order():
    check_grads(incomplete_loss, (U, Y), order=2, modes=("rev",), backend="python")


def test_vmap_of_the_gradient_with_a_shape_per_example():
    xs = np.stack([U, U * 0.5, U ** 2])
    got = s2s.vmap(s2s.grad(incomplete_of_shapes), in_axes=(0, 0))(xs, np.stack([SHAPES, SHAPES + 1.0, SHAPES * 0.5]))
    for b, shapes in enumerate([SHAPES, SHAPES + 1.0, SHAPES * 0.5]):
        np.testing.assert_allclose(got[b], s2s.grad(incomplete_of_shapes)(xs[b], shapes), rtol=1e-12)
        h = 1e-6
        for i in range(4):
            step = np.zeros(4)
            step[i] = h
            want = (incomplete_of_shapes(xs[b] + step, shapes) - incomplete_of_shapes(xs[b] - step, shapes)) / (2 * h)
            np.testing.assert_allclose(got[b][i], want, rtol=1e-6)


def test_poisson_cdf_derivative_in_the_mean_is_minus_the_pmf():
    """d/dmu Q(k + 1, mu) = -mu^k exp(-mu) / k!, the closed form (including k = 0 at mu = 0: -1)."""
    k = np.array([0.0, 0.0, 1.0, 4.0])
    mu = np.array([0.0, 1.3, 2.0, 3.5])
    got = s2s.grad(lambda m: np.sum(sp.gammaincc(k + 1.0, m)))(mu)
    want = -np.array([1.0, np.exp(-1.3), 2.0 * np.exp(-2.0), 3.5 ** 4 * np.exp(-3.5) / 24.0])
    np.testing.assert_allclose(got, want, rtol=1e-13)


def gammainc_of_a(x, a):
    return np.sum(sp.gammainc(a, x))


def betainc_of_b(x, b):
    return np.sum(scipy.special.betainc(2.0, b, x))


def stdtr_of_df(x, df):
    return np.sum(sp.stdtr(df * 2.0, x))


@pytest.mark.parametrize("fun, called, param", [(gammainc_of_a, "sp.gammainc", "a"),
                                                (betainc_of_b, "scipy.special.betainc", "b"),
                                                (stdtr_of_df, "sp.stdtr", "df")], ids=["gammainc", "betainc", "stdtr"])
@pytest.mark.parametrize("argnums", [(0, 1), 1], ids=["both", "shape"])
def test_a_shape_differentiated_is_refused_at_the_users_line(fun, called, param, argnums):
    """The derivative in a, b, df has no closed form: refused, never a zero for it."""
    with pytest.raises(s2s.S2SError) as refused:
        s2s.grad(fun, argnums=argnums)(U, 1.5)
    message = str(refused.value)
    assert re.match(rf".*test_rules_scipy_special\.py:{_line_of(fun, called)}:\d+: ", message), message
    assert f"with respect to its parameter {param}" in message and "s2s.custom_vjp" in message, message
    with pytest.raises(s2s.S2SError, match=f"with respect to its parameter {param}"):
        s2s.jvp(fun, (U, 1.5), (U, 1.0))


# ---- closed forms ------------------------------------------------------------------------------


def expit_sum(x):
    return np.sum(expit(x))


def gammaln_sum(x):
    return np.sum(sp.gammaln(x))


def digamma_sum(x):
    return np.sum(sp.digamma(x))


def gamma_sum(x):
    return np.sum(sp.gamma(x))


def erfinv_sum(x):
    return np.sum(sp.erfinv(x))


def ndtri_sum(x):
    return np.sum(sp.ndtri(x))


def trigamma_sum(x):
    return np.sum(sp.polygamma(1, x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_expit_derivative_is_expit_times_one_minus_expit(backend):
    x = np.linspace(-6.0, 6.0, 7)
    e = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(s2s.jit(s2s.grad(expit_sum), backend=backend)(x), e * (1.0 - e), rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, at, want", [
    (gammaln_sum, 1.0, -EULER_GAMMA),  # gammaln'(1) = digamma(1) = -Euler's gamma
    (gammaln_sum, 0.5, -EULER_GAMMA - 2.0 * math.log(2.0)),
    (digamma_sum, 1.0, math.pi ** 2 / 6.0),  # digamma'(1) = trigamma(1) = zeta(2)
    (digamma_sum, 0.5, math.pi ** 2 / 2.0),
    (trigamma_sum, 1.0, -2.0 * ZETA_3),  # polygamma(2, 1) = -2 zeta(3)
    (gamma_sum, 1.0, -EULER_GAMMA),  # gamma'(1) = gamma(1) digamma(1)
    (erfinv_sum, 0.0, math.sqrt(math.pi) / 2.0),  # 1 / erf'(0)
    (ndtri_sum, 0.5, math.sqrt(2.0 * math.pi)),  # 1 / the normal density at 0
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_derivatives_at_points_of_closed_form(fun, at, want, backend):
    got = s2s.jit(s2s.grad(fun), backend=backend)(np.array([at]))
    np.testing.assert_allclose(got, [want], rtol=1e-12)


def log_ndtr_tail(x):
    return np.sum(log_ndtr(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_log_ndtr_gradient_is_finite_in_the_far_tail(backend):
    """density / ndtr(x) with both underflowed would be 0 / 0; as one exp it is about -x."""
    x = np.array([-40.0, -200.0])
    got = s2s.jit(s2s.grad(log_ndtr_tail), backend=backend)(x)
    # the Mills ratio's expansion: -x (1 + 1 / x^2 - 2 / x^4 ...)^-1 ... to first order -x - 1 / x
    np.testing.assert_allclose(got, -x - 1.0 / x, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_stays_float32(backend):
    x = np.array([0.3, 0.6, 0.9], np.float32)
    g = s2s.jit(s2s.grad(logistic_loss), backend=backend)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, s2s.grad(logistic_loss)(x.astype(np.float64)), rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_the_gradient_is_each_examples(backend):
    xs = np.stack([Y * 0.4, Y * 0.3 + 0.1])
    ys = np.stack([Y, Y + 0.5])
    got = s2s.jit(s2s.vmap(s2s.grad(two_operand_loss, argnums=(0, 1))), backend=backend)(xs, ys)
    for b in range(2):
        want = s2s.grad(two_operand_loss, argnums=(0, 1))(xs[b], ys[b])
        np.testing.assert_allclose(got[0][b], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1][b], want[1], rtol=1e-12)


def test_values_under_jit_are_scipys():
    """The compiled forms call SciPy's own compiled functions (cython_special), digamma's
    derivatives a Hurwitz zeta summed by Euler-Maclaurin: the same numbers as SciPy's ufuncs."""
    x = np.linspace(-3.7, 4.3, 9)
    for fun in (normal_loss, gamma_loss):
        arg = x if fun is normal_loss else np.abs(x) + 0.05
        np.testing.assert_allclose(s2s.jit(fun)(arg), fun(arg), rtol=1e-13)

# ---- Bessel functions and the other special functions of autograd's suite ----------------------


def bessel_family_loss(x):
    return np.sum(sp.j0(x) * sp.j1(x) + sp.y0(x + 3.0) + sp.y1(x + 3.0) * x + sp.i0(x) + sp.i1(x) ** 2
                  + sp.i0e(x) + sp.i1e(x) * x + sp.jv(1.5, x + 3.0) + sp.jn(2, x) + sp.yv(0.5, x + 3.0)
                  + sp.yn(2, x + 3.0) + sp.iv(1, x) + sp.iv(2.5, x + 3.0) + sp.ive(1.0, x) + sp.ive(0.5, x + 3.0))


def gamma_family_loss(y):
    return np.sum(sp.loggamma(y) + sp.rgamma(y - 1.5) * y + sp.gammasgn(y - 1.5) * y + sp.entr(y * 0.2)
                  + sp.erfcinv(y * 0.4) + sp.beta(y, 2.0 * y) * y + sp.beta(0.5, y) + sp.multigammaln(y + 1.0, 3)
                  * sp.multigammaln(y[0], 1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, args", [(bessel_family_loss, (X,)), (gamma_family_loss, (Y,))],
                         ids=["bessel", "gamma"])
def test_more_special_functions_against_central_differences(fun, args, backend):
    """With their values under s2s.jit SciPy's own (cython_special's compiled functions)."""
    check_grads(fun, args, order=1, modes=("fwd", "rev"), backend=backend)
    if backend == "cpu":
        np.testing.assert_allclose(s2s.jit(fun)(*args), fun(*args), rtol=1e-13)


def test_more_special_functions_second_order():
    check_grads(bessel_family_loss, (X,), order=2, modes=("rev",), backend="python")
    check_grads(gamma_family_loss, (Y,), order=2, modes=("rev",), backend="python")


def j1_sum(x):
    return np.sum(sp.j1(x))


def i1e_sum(x):
    return np.sum(sp.i1e(x))


def gammasgn_product(x):
    return np.sum(sp.gammasgn(x) * 3.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bessel_derivatives_of_closed_form(backend):
    """J_1'(0) = 1/2 (as (J_0 - J_2) / 2: J_1(x) / x is 0 / 0 there); d/dx exp(-x) I_1(x) at 0 is 1/2;
    gammasgn is piecewise constant: its derivative is 0."""
    grad = lambda f: s2s.jit(s2s.grad(f), backend=backend)  # noqa: E731
    np.testing.assert_allclose(grad(j1_sum)(np.array([0.0])), [0.5], rtol=1e-14)
    np.testing.assert_allclose(grad(i1e_sum)(np.array([0.0, 1e-9])), [0.5, 0.5], rtol=1e-8)
    np.testing.assert_array_equal(grad(gammasgn_product)(np.array([-1.5, 0.5, 2.0])), np.zeros(3))


def bessel_of_an_order(x, v):
    return np.sum(sp.jv(v, x))


def test_an_order_differentiated_is_refused():
    with pytest.raises(s2s.S2SError, match="with respect to its parameter v"):
        s2s.grad(bessel_of_an_order, argnums=1)(X, 1.5)


# ---- refusals -----------------------------------------------------------------------------


def bessel_loss(x):
    return np.sum(sp.k0(x) * x)


def bessel_imported_loss(x):
    return np.sum(k0(x))


def zeta_loss(x):
    return np.sum(zeta(x + 2.0, 1.0))  # a Python function of SciPy's, not a ufunc


def bessel_value(x):
    return scipy.special.k0(x) * 2.0


def _line_of(fun, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fun)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fun, called", [(bessel_loss, "scipy.special.k0"), (bessel_imported_loss, "scipy.special.k0"),
                                         (zeta_loss, "scipy.special.zeta"), (bessel_value, "scipy.special.k0")])
@pytest.mark.parametrize("transform", ["grad", "jit", "jit_grad"], ids=str)
def test_an_uncovered_function_is_refused_at_the_users_line(fun, called, transform):
    x = np.array([0.5, 1.0, 2.0])
    made = {"grad": lambda: s2s.grad(fun), "jit": lambda: s2s.jit(fun),
            "jit_grad": lambda: s2s.jit(s2s.grad(fun))}[transform]
    with pytest.raises(s2s.S2SError) as refused:
        made()(x)
    message = str(refused.value)
    assert re.search(rf"test_rules_scipy_special\.py:{_line_of(fun, 'return')}:\d+", message), message
    assert f"no rule for {called}" in message and "s2s.custom_vjp" in message
    assert "site-packages" not in message  # never a line of SciPy's own source


# ---- logsumexp, softmax, log_softmax ----------------------------------------------------------


def logsumexp_of_vector(x):
    return logsumexp(x)


def logsumexp_loss(x, A):
    return (np.sum(logsumexp(A, axis=0) * x) + logsumexp([x[0], x[1] * 2.0, 1.0])
            + np.sum(scipy.special.logsumexp(A * A, 1, keepdims=True) * A) + sp.logsumexp(A, axis=(0, 1)))


def scaled_logsumexp_loss(x, y, A):
    return np.sum(logsumexp(A, axis=1, b=y) * x) + logsumexp(x, b=x * y)


def softmax_loss(x, A):
    return np.sum(softmax(A * 2.0, axis=1) * A) + np.sum(sp.softmax(x) * x) + np.sum(log_softmax(A, axis=0) * A) \
        + np.sum(log_softmax(x * 3.0) ** 2)


A3 = np.array([[0.4, -1.2, 2.0], [1.5, 0.3, -0.7], [-0.2, 0.9, 1.1]])
X3 = np.array([0.3, -0.8, 1.4])
Y3 = np.array([0.5, 1.5, 2.5])


@pytest.mark.parametrize("backend", BACKENDS)
def test_logsumexp_gradient_is_softmax(backend):
    np.testing.assert_allclose(s2s.jit(s2s.grad(logsumexp_of_vector), backend=backend)(X3),
                               np.exp(X3) / np.sum(np.exp(X3)), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, args", [(logsumexp_loss, (X3, A3)), (scaled_logsumexp_loss, (X3, Y3, A3)),
                                       (softmax_loss, (X3, A3))], ids=lambda v: getattr(v, "__name__", ""))
def test_logsumexp_and_softmax_against_central_differences(fun, args, backend):
    """axis (an int, a tuple, None), keepdims, b, and logsumexp of a list."""
    assert np.allclose(s2s.jit(fun, backend=backend)(*args), fun(*args), rtol=1e-14)
    check_grads(fun, args, order=1, modes=("fwd", "rev"), backend=backend)


@pytest.mark.parametrize("fun, args", [(logsumexp_loss, (X3, A3)), (scaled_logsumexp_loss, (X3, Y3, A3)),
                                       (softmax_loss, (X3, A3))], ids=lambda v: getattr(v, "__name__", ""))
def test_logsumexp_and_softmax_second_order(fun, args):
    check_grads(fun, args, order=2, modes=("rev",), backend="python")


@pytest.mark.parametrize("backend", BACKENDS)
def test_logsumexp_of_large_values_does_not_overflow(backend):
    x = np.array([1000.0, 1000.0, 990.0])
    got = s2s.jit(s2s.value_and_grad(logsumexp_of_vector), backend=backend)(x)
    e = np.exp(x - 1000.0)
    np.testing.assert_allclose(got[0], 1000.0 + np.log(np.sum(e)), rtol=1e-15)
    np.testing.assert_allclose(got[1], e / np.sum(e), rtol=1e-14)


def scaled_b_batched(a, b):
    return logsumexp(a, b=b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)], ids=str)
def test_vmap_of_logsumexp_with_b_batched_or_not(in_axes, backend):
    """a and b batched apart: each example's b goes with its a (one example's length equals the batch's)."""
    a = A3 if in_axes[0] == 0 else X3
    b = A3 + 1.0 if in_axes[1] == 0 else Y3
    got = s2s.jit(s2s.vmap(scaled_b_batched, in_axes=in_axes), backend=backend)(a, b)
    want = [scaled_b_batched(a[k] if in_axes[0] == 0 else a, b[k] if in_axes[1] == 0 else b) for k in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-14)


def signed_logsumexp(x):
    value, sign = logsumexp(x, return_sign=True)
    return value * sign


def test_logsumexp_with_return_sign_is_refused_at_the_users_line():
    with pytest.raises(s2s.S2SError) as refused:
        s2s.grad(signed_logsumexp)(X3)
    message = str(refused.value)
    assert re.search(rf"test_rules_scipy_special\.py:{_line_of(signed_logsumexp, 'return_sign')}:\d+", message), message
    assert "return_sign" in message


def guarded_betaln(a, b):
    return betaln(np.where(a > 0, a, 1.0), np.where(b > 0, b, 1.0)) + xlogy(np.where(a > 0, a, 1.0), b)


def test_two_operand_functions_of_zero_d_arrays_compile():
    """np.where of numbers is a 0-d array, which Numba's np.broadcast_arrays does not take in pairs;
    the compiled two-operand helpers take them as numbers, as SciPy's ufuncs do."""
    for a, b in [(2.5, 0.7), (-1.0, 3.0)]:
        np.testing.assert_allclose(s2s.jit(guarded_betaln)(a, b), guarded_betaln(a, b), rtol=1e-13)
        check_grads(guarded_betaln, (a, b), modes=("rev",), backend="cpu")
