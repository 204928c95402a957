"""scipy.stats in a differentiated function, as JAX offers jax.scipy.stats: a covered
distribution's method (norm, multivariate_normal, t, chi2, gamma, beta, dirichlet, expon, uniform,
poisson, bernoulli; logpdf, pdf, logcdf, cdf, logsf, sf, logpmf, pmf) is lowered to its NumPy form
(s2s/scipy_forms/stats.py), which s2s transforms as a helper: called as users write it
(`scipy.stats.norm.logpdf`, `from scipy.stats import norm`, `stats.t`, `mvn` for
multivariate_normal, frozen `norm(mu, sigma).logpdf`), with loc, scale and the shape parameters
positional or keywords. Values are SciPy's (the functions below run SciPy itself when called),
derivatives SciPy's by central differences; anything else of scipy.stats is refused at the
user's line, and so is a cdf of t, chi2, gamma or beta differentiated in its shape (df, a, b: no closed form)."""

import re
import sys

import numpy as np
import pytest
import scipy.stats
from scipy import stats
from scipy.stats import bernoulli, beta, chi2, dirichlet, expon, gamma, norm, poisson, t, uniform
from scipy.stats import multivariate_normal as mvn

import s2s
from finite_differences import central_difference_grad, where
from s2s.testing import check_grads
from sampling import compiled_sample

X = np.array([-1.3, -0.2, 0.45, 1.7])
POSITIVE = np.array([0.3, 0.9, 1.6, 3.2])
UNIT = np.array([0.12, 0.4, 0.55, 0.93])
K = np.array([0, 1, 3, 6])
BITS = np.array([0, 1, 1, 0])
LOCS = np.array([0.1, -0.3, 0.2, 0.05])
MEAN = np.array([0.2, -0.4, 0.1])
COV = np.array([[1.5, 0.3, -0.2], [0.3, 1.1, 0.25], [-0.2, 0.25, 0.9]])
POINTS = np.array([[0.3, -0.1, 0.8], [-1.2, 0.4, 0.0], [0.5, 1.3, -0.6], [0.0, 0.2, 0.1]])
ALPHA = np.array([1.5, 0.8, 2.6])
SIMPLEX = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])  # (a point per column, as SciPy takes them)

# ---- each method, as users spell it: (name, function, arguments) -------------------------------

METHODS = [
    ("norm.logpdf", lambda x, mu, sigma: scipy.stats.norm.logpdf(x, mu, sigma), (X, 0.3, 1.4)),
    ("norm.logpdf keywords", lambda x, mu, sigma: norm.logpdf(x, loc=mu, scale=sigma), (X, LOCS, 0.8)),
    ("norm.logpdf standard", lambda x: norm.logpdf(x), (X,)),
    ("norm.pdf", lambda x, mu, sigma: norm.pdf(x, mu, scale=sigma), (X, 0.3, 1.4)),
    ("norm.logcdf", lambda x, mu, sigma: stats.norm.logcdf(x, mu, sigma), (X * 3.0, 0.3, 1.4)),
    ("norm.cdf", lambda x, mu, sigma: norm.cdf(x, loc=mu, scale=sigma), (X, LOCS, 1.4)),
    ("frozen norm.logpdf", lambda x, mu, sigma: norm(mu, sigma).logpdf(x), (X, 0.3, 1.4)),
    ("frozen norm.cdf", lambda x, mu, sigma: scipy.stats.norm(loc=mu, scale=sigma).cdf(x), (X, 0.3, 1.4)),
    ("norm.sf", lambda x, mu, sigma: norm.sf(x, mu, sigma), (X, 0.3, 1.4)),
    ("norm.logsf", lambda x, mu, sigma: stats.norm.logsf(x, loc=mu, scale=sigma), (X * 3.0, 0.3, 1.4)),
    ("t.logpdf", lambda x, df, mu, sigma: stats.t.logpdf(x, df, mu, sigma), (X, 3.5, 0.2, 1.3)),
    ("chi2.logpdf", lambda x, df, mu, sigma: chi2.logpdf(x, df, mu, sigma), (POSITIVE, 3.0, -0.1, 1.7)),
    ("chi2.pdf", lambda x, df: scipy.stats.chi2.pdf(x, df=df), (POSITIVE, 2.5)),
    # (x on the simplex: its first components, the last one less their sum, which SciPy takes too)
    ("dirichlet.logpdf", lambda x, alpha: dirichlet.logpdf(x, alpha), (SIMPLEX[:2, 0], ALPHA)),
    ("dirichlet.pdf", lambda x, alpha: stats.dirichlet.pdf(x, alpha), (SIMPLEX[:2], ALPHA)),
    ("t.logpdf keywords", lambda x, df, sigma: t.logpdf(x, df=df, scale=sigma), (X, np.array([1.5, 4.0, 30.0, 2e3]), 0.7)),
    ("t.pdf", lambda x, df: t.pdf(x, df), (X, 2.5)),
    ("gamma.logpdf", lambda x, a, mu, sigma: gamma.logpdf(x, a, mu, sigma), (POSITIVE, 2.3, -0.1, 1.7)),
    ("gamma.logpdf keywords", lambda x, a, sigma: scipy.stats.gamma.logpdf(x, a=a, scale=sigma), (POSITIVE, 0.7, 0.5)),
    ("gamma.pdf", lambda x, a: gamma.pdf(x, a), (POSITIVE, 3.1)),
    ("beta.logpdf", lambda x, a, b, mu, sigma: beta.logpdf(x, a, b, mu, sigma), (UNIT, 2.2, 3.4, -0.05, 1.1)),
    ("beta.logpdf keywords", lambda x, a, b: stats.beta.logpdf(x, a=a, b=b), (UNIT, 0.6, 1.8)),
    ("beta.pdf", lambda x, a, b: beta.pdf(x, a, b), (UNIT, 2.2, 3.4)),
    ("expon.logpdf", lambda x, mu, sigma: expon.logpdf(x, mu, sigma), (POSITIVE, -0.2, 1.6)),
    ("expon.pdf", lambda x, sigma: expon.pdf(x, scale=sigma), (POSITIVE, 0.6)),
    ("expon.logcdf", lambda x, mu, sigma: expon.logcdf(x, mu, sigma), (np.array([0.01, 0.5, 2.0, 40.0]), 0.0, 1.2)),
    ("expon.cdf", lambda x, mu, sigma: scipy.stats.expon.cdf(x, loc=mu, scale=sigma), (POSITIVE, 0.1, 1.6)),
    ("uniform.logpdf", lambda x, mu, sigma: uniform.logpdf(x, mu, sigma), (UNIT, -0.1, 1.5)),
    ("uniform.pdf", lambda x, mu, sigma: uniform.pdf(x, loc=mu, scale=sigma), (UNIT, -0.1, 1.5)),
    ("uniform.cdf", lambda x, mu, sigma: uniform.cdf(x, mu, sigma), (UNIT, -0.1, 1.5)),
    ("uniform.logcdf", lambda x, mu, sigma: stats.uniform.logcdf(x, mu, sigma), (UNIT, -0.1, 1.5)),
    ("poisson.logpmf", lambda k, mu: poisson.logpmf(k, mu), (K, 2.7)),
    ("poisson.logpmf loc", lambda k, mu: scipy.stats.poisson.logpmf(k, mu, 1), (K + 1, POSITIVE)),
    ("poisson.pmf", lambda k, mu: poisson.pmf(k, mu=mu), (K, 2.7)),
    ("bernoulli.logpmf", lambda k, p: bernoulli.logpmf(k, p), (BITS, 0.3)),
    ("bernoulli.pmf", lambda k, p: stats.bernoulli.pmf(k, p=p), (BITS, UNIT)),
    ("bernoulli.cdf", lambda k, p: bernoulli.cdf(k, p), (np.array([-1.0, 0.0, 0.5, 1.0, 2.5]), 0.3)),
    ("bernoulli.logcdf", lambda k, p: bernoulli.logcdf(k, p), (np.array([0.0, 0.5, 1.0, 2.5]), 0.3)),
    ("multivariate_normal.logpdf", lambda x, m, c: mvn.logpdf(x, m, c), (POINTS, MEAN, COV)),
    ("multivariate_normal.logpdf one point", lambda x, m, c: scipy.stats.multivariate_normal.logpdf(x, mean=m, cov=c),
     (POINTS[0], MEAN, COV)),
    ("multivariate_normal.pdf", lambda x, m, c: stats.multivariate_normal.pdf(x, m, cov=c), (POINTS, MEAN, COV)),
    ("multivariate_normal.logpdf allow_singular", lambda x, m, c: mvn.logpdf(x, m, c, True), (POINTS, MEAN, COV)),
    ("multivariate_normal.entropy", lambda m, c: mvn.entropy(m, c) + scipy.stats.multivariate_normal.entropy(cov=c * c),
     (MEAN, COV)),
]
IDS = [name for name, _, _ in METHODS]

# The cdfs of t, gamma and beta have no derivative in their shape parameters (df, a, b): each is
# differentiated in the others, the shapes given as arguments not differentiated.
CDFS = [
    ("t.cdf", lambda x, df, mu, sigma: stats.t.cdf(x, df, mu, sigma), (X, 3.5, 0.2, 1.3), (0, 2, 3)),
    ("t.cdf keywords", lambda x, df, sigma: t.cdf(x, df=df, scale=sigma),
     (X * 4.0, np.array([1.5, 4.0, 30.0, 2e3]), 0.7), (0, 2)),
    ("t.logcdf", lambda x, df, mu, sigma: t.logcdf(x, df, mu, sigma), (X * 3.0, 2.5, 0.2, 1.3), (0, 2, 3)),
    ("gamma.cdf", lambda x, a, mu, sigma: gamma.cdf(x, a, mu, sigma), (POSITIVE, 2.3, -0.1, 1.7), (0, 2, 3)),
    ("gamma.logcdf", lambda x, a, sigma: scipy.stats.gamma.logcdf(x, a=a, scale=sigma), (POSITIVE, 0.7, 0.5), (0, 2)),
    ("chi2.cdf", lambda x, df, mu, sigma: chi2.cdf(x, df, mu, sigma), (POSITIVE, 3.0, -0.1, 1.7), (0, 2, 3)),
    ("chi2.logcdf", lambda x, df: stats.chi2.logcdf(x, df), (POSITIVE, 1.5), (0,)),
    ("beta.cdf", lambda x, a, b, mu, sigma: beta.cdf(x, a, b, mu, sigma), (UNIT, 2.2, 3.4, -0.05, 1.1), (0, 3, 4)),
    ("beta.logcdf", lambda x, a, b: stats.beta.logcdf(x, a=a, b=b), (UNIT, 0.6, 1.8), (0,)),
    ("poisson.cdf", lambda k, mu: poisson.cdf(k, mu), (K, 2.7), (1,)),
    ("poisson.cdf loc", lambda k, mu: scipy.stats.poisson.cdf(k, mu=mu, loc=1), (K + 1, POSITIVE), (1,)),
    ("poisson.logcdf", lambda k, mu: poisson.logcdf(k, mu), (K, POSITIVE), (1,)),
]


@pytest.mark.parametrize("name, fun, args", METHODS, ids=IDS)
def test_derivatives_against_central_differences(name, fun, args):
    """The value is SciPy's (check_grads compares it with fun's, which is SciPy's), forward and
    reverse mode central differences of SciPy's own function (of the parameters alone for a discrete
    distribution: its k is an integer, or a point of a step of its cdf)."""
    discrete = name.startswith(("poisson", "bernoulli"))
    check_grads(fun, args, order=1, modes=("fwd", "rev"), argnums=range(discrete, len(args)), backend="python")


@pytest.mark.parametrize("name, fun, args, argnums", CDFS, ids=[name for name, _, _, _ in CDFS])
def test_cdf_derivatives_against_central_differences(name, fun, args, argnums):
    """In x, loc, scale (poisson's mu): the value SciPy's, forward and reverse mode its central differences."""
    check_grads(fun, args, order=1, modes=("fwd", "rev"), argnums=argnums, backend="python")


# ---- each distribution's methods in one loss: compiled, vmapped, second order -----------------

RV = norm(0.5, 2.0)  # frozen at module level: its parameters are constants


def norm_loss(x, mu, sigma):
    return np.sum(norm.logpdf(x, mu, sigma) * x + scipy.stats.norm.pdf(x, loc=mu, scale=sigma)
                  + stats.norm.logcdf(x, mu, sigma) + norm.cdf(x, mu, sigma) ** 2 + RV.logpdf(x * mu))


def t_loss(x, df, mu, sigma):
    return np.sum(t.logpdf(x, df, mu, sigma) + stats.t.pdf(x, df, loc=mu, scale=sigma) * x)


def gamma_loss(x, a, sigma):
    return np.sum(gamma.logpdf(x, a, scale=sigma) * x + scipy.stats.gamma.pdf(x, a, -0.1, sigma))


def beta_loss(x, a, b):
    return np.sum(beta.logpdf(x, a, b) + stats.beta.pdf(x, a, b, loc=-0.01, scale=1.02) * x)


def expon_loss(x, mu, sigma):
    return np.sum(expon.logpdf(x, mu, sigma) + expon.pdf(x, mu, sigma) * x + expon.logcdf(x, mu, sigma)
                  + expon.cdf(x, loc=mu, scale=sigma) ** 2)


def uniform_loss(x, mu, sigma):
    return np.sum(uniform.logpdf(x, mu, sigma) + uniform.pdf(x, mu, sigma) * x + uniform.logcdf(x, mu, sigma)
                  + uniform.cdf(x, loc=mu, scale=sigma) ** 2)


def poisson_loss(k, mu):
    return np.sum(poisson.logpmf(k, mu) + scipy.stats.poisson.pmf(k, mu) * mu)


def bernoulli_loss(k, p):
    return np.sum(bernoulli.logpmf(k, p) + bernoulli.pmf(k, p) ** 2 + stats.bernoulli.cdf(k, p) * p
                  + bernoulli.logcdf(k, p))


def mvn_loss(x, mean, cov):
    return np.sum(mvn.logpdf(x, mean, cov) + scipy.stats.multivariate_normal.pdf(x, mean=mean, cov=cov))


def cdf_loss(x, y, u, mu, loc, scale):
    return np.sum(t.cdf(x, 3.5, loc, scale) + t.logcdf(x, 2.5, loc, scale) * x + gamma.cdf(y, 2.3, loc, scale)
                  + gamma.logcdf(y, 0.8, loc, scale) + beta.cdf(u, 2.2, 3.4, loc * 0.1, scale)
                  + beta.logcdf(u, 0.7, 1.6, scale=scale) + poisson.cdf(K, mu) * mu + poisson.logcdf(K + 1, mu, 1))


def default_parameters_loss(x, loc, points, cov):
    """t with df = inf is the normal distribution; multivariate_normal's mean=None is a zero mean."""
    return np.sum(t.logpdf(x, np.inf, loc, 1.3)) + np.sum(mvn.logpdf(points, None, cov))


LOSSES = [(norm_loss, (X, 0.3, 1.4)), (t_loss, (X, 3.5, 0.2, 1.3)), (gamma_loss, (POSITIVE, 2.3, 1.7)),
          (beta_loss, (UNIT, 2.2, 3.4)), (expon_loss, (POSITIVE, -0.2, 1.6)), (uniform_loss, (UNIT, -0.1, 1.5)),
          (poisson_loss, (K, 2.7)), (bernoulli_loss, (BITS, 0.3)), (mvn_loss, (POINTS, MEAN, COV)),
          (cdf_loss, (X, POSITIVE, UNIT, 2.7, 0.05, 1.3)), (default_parameters_loss, (X, 0.3, POINTS, COV))]
LOSS_IDS = [fun.__name__ for fun, _ in LOSSES]


def _float_arguments(args):
    return tuple(k for k, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


COMPILED = compiled_sample(LOSS_IDS, 2) | {"default_parameters_loss"}  # (S2S_FULL_JIT=1 compiles every loss)


def tails_chi2_dirichlet_loss(x, y, mu, df, point, alpha):
    return (np.sum(norm.sf(x, mu, 1.4) + stats.norm.logsf(x * 3.0, scale=0.8) * x + chi2.logpdf(y, df, -0.1, 1.7)
                   + chi2.cdf(y, 3.0, -0.1, 1.7)) + dirichlet.logpdf(point, alpha))


def test_tails_chi2_and_dirichlet_compile():
    """(norm's sf and logsf, chi2 as a gamma, dirichlet's density; their other methods on the python
    backend above, compiled through the same forms.)"""
    args = (X, POSITIVE, 0.3, 3.0, SIMPLEX[:2, 1], ALPHA)
    value, grads = s2s.jit(s2s.value_and_grad(tails_chi2_dirichlet_loss, argnums=(0, 1, 2, 3, 4, 5)))(*args)
    np.testing.assert_allclose(value, tails_chi2_dirichlet_loss(*args), rtol=1e-12)
    for k, got in zip(range(6), grads):
        np.testing.assert_allclose(got, central_difference_grad(tails_chi2_dirichlet_loss, args, k), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fun, args", [loss for loss, name in zip(LOSSES, LOSS_IDS) if name in COMPILED],
                         ids=sorted(COMPILED, key=LOSS_IDS.index))
def test_jit_grad_is_central_differences_of_scipy(fun, args):
    argnums = _float_arguments(args)
    value, grads = s2s.jit(s2s.value_and_grad(fun, argnums=argnums))(*args)
    np.testing.assert_allclose(value, fun(*args), rtol=1e-12)
    for k, got in zip(argnums, grads):
        np.testing.assert_allclose(got, central_difference_grad(fun, args, k), rtol=1e-6, atol=1e-7)


def shaped_cdfs(x, shape, scale):
    return np.sum(t.cdf(x, shape, 0.1, scale) + gamma.logcdf(x * x + 0.1, shape, scale=scale)
                  + beta.cdf(x * 0.2 + 0.5, shape, 2.0))


def test_vmap_of_the_gradient_of_cdfs_with_a_shape_per_example():
    """The shapes batched but not differentiated: each example's gradient in x and scale."""
    xs = np.stack([X, X * 0.5 + 0.1, X - 0.3])
    shapes = np.array([2.5, 4.0, 0.9])
    grads = s2s.vmap(s2s.grad(shaped_cdfs, argnums=(0, 2)), in_axes=(0, 0, None))(xs, shapes, 1.3)
    for b in range(3):
        args = (xs[b], shapes[b], 1.3)
        np.testing.assert_allclose(grads[0][b], central_difference_grad(shaped_cdfs, args, 0), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(grads[1][b], central_difference_grad(shaped_cdfs, args, 2), rtol=1e-6, atol=1e-7)


def test_compiled_jvp_against_central_differences():
    check_grads(norm_loss, (X, 0.3, 1.4), order=1, modes=("fwd",), backend="cpu")


@pytest.mark.parametrize("fun, args", [LOSSES[k] for k in (0, 1, 2, 3, 8)], ids=[LOSS_IDS[k] for k in (0, 1, 2, 3, 8)])
def test_second_derivatives_against_central_differences(fun, args):
    check_grads(fun, args, order=2, modes=("rev",), backend="python")


def test_hessian_of_the_normal_log_density_in_closed_form():
    """d2/dmu2 of sum(logpdf) is -n / sigma^2; d2/dsigma2 is n / sigma^2 - 3 sum((x - mu)^2) / sigma^4."""
    def log_likelihood(theta, x):
        return np.sum(norm.logpdf(x, theta[0], theta[1]))

    theta = np.array([0.3, 1.4])
    H = s2s.hessian(log_likelihood)(theta, X)
    n, r = X.size, X - theta[0]
    want = np.array([[-n / theta[1] ** 2, -2 * np.sum(r) / theta[1] ** 3],
                     [-2 * np.sum(r) / theta[1] ** 3, n / theta[1] ** 2 - 3 * np.sum(r * r) / theta[1] ** 4]])
    np.testing.assert_allclose(H, want, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(log_likelihood))(theta, X), want, rtol=1e-12)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_vmap_over_a_batch_is_each_examples(backend):
    xs = np.stack([X, X * 0.5 + 0.1, X - 0.3])
    mus = np.array([0.3, -0.2, 0.0])
    if backend == "python":  # (under s2s.jit the gradient's vmap below is the test)
        got = s2s.jit(s2s.vmap(norm_loss, in_axes=(0, 0, None)), backend=backend)(xs, mus, 1.4)
        np.testing.assert_allclose(got, [norm_loss(xs[b], mus[b], 1.4) for b in range(3)], rtol=1e-12)
    grads = s2s.jit(s2s.vmap(s2s.grad(t_loss, argnums=(0, 1)), in_axes=(0, 0, None, None)), backend=backend)(
        xs, np.array([2.5, 4.0, 9.0]), 0.2, 1.3)
    for b, df in enumerate([2.5, 4.0, 9.0]):
        args = (xs[b], df, 0.2, 1.3)
        np.testing.assert_allclose(grads[0][b], central_difference_grad(t_loss, args, 0), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(grads[1][b], central_difference_grad(t_loss, args, 1), rtol=1e-6, atol=1e-7)


def mvn_point(x, mean, cov):
    return mvn.logpdf(x, mean, cov)


def mvn_of_displays(x, s):
    return mvn.logpdf(x, [0.1, -0.2, s], cov=[[1.5, 0.3, -0.2], [0.3, 1.1, 0.25], [-0.2, 0.25, s]])


def test_default_parameters_are_scipys():
    np.testing.assert_allclose(stats.t.logpdf(X, np.inf, 0.3, 1.3), stats.norm.logpdf(X, 0.3, 1.3), rtol=1e-12)
    check_grads(default_parameters_loss, (X, 0.3, POINTS, COV), order=1, modes=("fwd", "rev"), backend="python")


def test_lists_are_arrays_as_scipy_takes_them():
    check_grads(mvn_of_displays, (POINTS, 0.9), order=1, modes=("fwd", "rev"), backend="python")


def singular_allowed(x, mean, cov):
    return mvn.logpdf(x, mean, cov, allow_singular=True)


def singular_allowed_sum(points, mean, cov):
    return np.sum(mvn.logpdf(points, mean, cov, allow_singular=True)) + mvn.entropy(mean, cov)


# A covariance of rank 2 in three dimensions, and points of its support (mean plus its range)
_BASIS = np.array([[1.0, 0.2], [-0.3, 0.8], [0.5, -0.4]])
SINGULAR = _BASIS @ _BASIS.T
SUPPORT = MEAN + np.array([[0.3, -0.2], [1.1, 0.4], [-0.5, 0.9]]) @ _BASIS.T


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_covariance_of_lower_rank_that_scipy_allows_is_scipys_density(backend):
    """SciPy's density of lower rank (its pseudo-determinant and pseudo-inverse; -inf off the
    support), differentiated in the points and the mean: against central differences along the
    support (off it the density is -inf) and the closed form -pinv(cov) (x - mean)."""
    off = SUPPORT[0] + np.cross(_BASIS[:, 0], _BASIS[:, 1])
    for point in (SUPPORT[0], off):
        np.testing.assert_allclose(s2s.jit(singular_allowed, backend=backend)(point, MEAN, SINGULAR),
                                   mvn.logpdf(point, MEAN, SINGULAR, allow_singular=True), rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(singular_allowed_sum, backend=backend)(SUPPORT, MEAN, SINGULAR),
                               singular_allowed_sum(SUPPORT, MEAN, SINGULAR), rtol=1e-12)
    grad = s2s.jit(s2s.grad(singular_allowed_sum, argnums=(0, 1)), backend=backend)(SUPPORT, MEAN, SINGULAR)
    np.testing.assert_allclose(grad[0], -(SUPPORT - MEAN) @ np.linalg.pinv(SINGULAR), rtol=1e-9, atol=1e-12)
    for k, along in ((0, np.outer([1.0, -0.5, 2.0], _BASIS[:, 0])), (1, _BASIS[:, 1] * 0.7)):
        args = [SUPPORT, MEAN, SINGULAR]

        def moved(h):
            shifted = list(args)
            shifted[k] = args[k] + h * along
            return singular_allowed_sum(*shifted)
        slope = (moved(1e-6) - moved(-1e-6)) / 2e-6
        np.testing.assert_allclose(np.sum(grad[k] * along), slope, rtol=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_the_derivative_in_a_covariance_of_lower_rank_is_refused_where_it_runs(backend):
    # (the density jumps where a change of the covariance changes its rank: no derivative there)
    where = r"test_rules_scipy_stats.py:\d+:\d+: " if backend == "python" else "test_rules_scipy_stats.py"
    with pytest.raises(s2s.S2SError, match=where + ".*has no derivative with respect to the covariance"):
        s2s.jit(s2s.grad(singular_allowed, argnums=2), backend=backend)(POINTS[0], MEAN, SINGULAR)
    if backend == "python":
        with pytest.raises(s2s.S2SError, match=where + ".*make the covariance a constant of the derivative"):
            s2s.jvp(singular_allowed, (POINTS[0], MEAN, SINGULAR), (POINTS[0], MEAN, SINGULAR))
    # of full rank, the same code differentiates in the covariance
    np.testing.assert_allclose(s2s.jit(s2s.grad(singular_allowed, argnums=2), backend=backend)(POINTS[0], MEAN, COV),
                               central_difference_grad(singular_allowed, [POINTS[0], MEAN, COV], 2), rtol=1e-6,
                               atol=1e-8)


def test_compiled_multivariate_normal_of_one_point_is_scipys():
    np.testing.assert_allclose(s2s.jit(mvn_point)(POINTS[1], MEAN, COV), mvn.logpdf(POINTS[1], MEAN, COV), rtol=1e-12)


def test_vmap_of_multivariate_normal_over_points_and_means(backend="python"):
    means = np.stack([MEAN, MEAN * 2.0, -MEAN, MEAN + 0.1])
    got = s2s.jit(s2s.vmap(mvn_point, in_axes=(0, 0, None)), backend=backend)(POINTS, means, COV)
    np.testing.assert_allclose(got, [mvn.logpdf(POINTS[b], means[b], COV) for b in range(4)], rtol=1e-12)
    grads = s2s.jit(s2s.vmap(s2s.grad(mvn_point, argnums=(1, 2)), in_axes=(0, 0, None)), backend=backend)(
        POINTS, means, COV)
    for b in range(4):
        args = (POINTS[b], means[b], COV)
        np.testing.assert_allclose(grads[0][b], central_difference_grad(mvn_point, args, 1), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(grads[1][b], central_difference_grad(mvn_point, args, 2), rtol=1e-6, atol=1e-7)
    covs = np.stack([COV, COV * 1.5, COV + 0.2 * np.eye(3), COV * 0.7])  # a cov per example
    grads = s2s.jit(s2s.vmap(s2s.grad(mvn_point, argnums=2), in_axes=(0, None, 0)), backend=backend)(POINTS, MEAN, covs)
    for b in range(4):
        args = (POINTS[b], MEAN, covs[b])
        np.testing.assert_allclose(grads[b], central_difference_grad(mvn_point, args, 2), rtol=1e-6, atol=1e-7)


def test_gradient_with_respect_to_cov_is_its_lower_triangles():
    """SciPy reads cov's lower triangle; so do the form and its gradient: a symmetric change of
    cov moves the value by the gradient's lower entries (its upper ones are zero)."""
    g = s2s.grad(mvn_loss, argnums=2)(POINTS, MEAN, COV)
    assert np.all(np.triu(g, 1) == 0.0)
    for i, j in [(1, 0), (2, 1), (1, 1)]:
        step = np.zeros((3, 3))
        step[i, j] = step[j, i] = 1e-6
        want = (mvn_loss(POINTS, MEAN, COV + step) - mvn_loss(POINTS, MEAN, COV - step)) / 2e-6
        np.testing.assert_allclose(g[i, j], want, rtol=1e-6)


# ---- SciPy's values outside the support and for parameters out of range -------------------------


def continuous_values(x, p, q):
    return (norm.logpdf(x, 0.2, q), norm.pdf(x, 0.2, q), norm.logcdf(x, 0.2, q), norm.cdf(x, 0.2, q),
            t.logpdf(x, p, 0.1, q), gamma.logpdf(x, p, -0.5, q), gamma.pdf(x, p, scale=q), beta.logpdf(x, p, 2.0),
            beta.pdf(x, p, 0.5, -1.0, 2.0 * q), expon.logpdf(x, -0.3, q), expon.cdf(x, scale=q), expon.logcdf(x),
            uniform.logpdf(x, -0.5, q), uniform.cdf(x, -0.5, q), uniform.logcdf(x, -0.5, q), t.cdf(x, p, 0.1, q),
            t.logcdf(x, p), gamma.cdf(x, p, -0.5, q), gamma.logcdf(x, p, scale=q), beta.cdf(x, p, 2.0),
            beta.logcdf(x, p, 0.5, -1.0, 2.0 * q))


def discrete_values(k, p, mu):
    return (poisson.logpmf(k, mu), poisson.pmf(k, mu, 1), bernoulli.logpmf(k, p), bernoulli.pmf(k, p),
            bernoulli.cdf(k, p), bernoulli.logcdf(k, p, -1), poisson.cdf(k, mu), poisson.logcdf(k, mu, 1))


EDGE_X = np.array([-np.inf, -2.0, -0.5, 0.0, 0.3, 1.0, 1.5, 40.0, np.inf, np.nan])
EDGE_K = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 7.0, np.nan])


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("p, q", [(0.5, 1.0), (1.0, 0.7), (2.5, 1.3), (-1.0, 1.0), (2.0, 0.0), (2.0, -1.0)])
def test_values_at_the_edges_are_scipys(p, q, backend):
    for got, want in zip(s2s.jit(continuous_values, backend=backend)(EDGE_X, p, q), continuous_values(EDGE_X, p, q)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    for got, want in zip(s2s.jit(discrete_values, backend=backend)(EDGE_K, p / 3, p), discrete_values(EDGE_K, p / 3, p)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def gamma_total(x, a):
    return np.sum(gamma.logpdf(x, a) + beta.logpdf(x, a, 2.0) * 0.5 + expon.logcdf(x))


def test_gradient_outside_the_support_is_zero_not_nan():
    """The value is -inf there, and constant: its derivative is 0 (the form evaluates the density at
    a point of the support where np.where does not select it, so no 0 * inf)."""
    x = np.array([-1.0, 0.3, 0.6, 2.0])  # -1 is outside every support, 2 outside beta's

    def finite_terms(x, a):  # SciPy's, the terms that are finite at these points
        return np.sum(gamma.logpdf(x[1:], a) + expon.logcdf(x[1:])) + 0.5 * np.sum(beta.logpdf(x[1:3], a, 2.0))

    g = s2s.grad(gamma_total, argnums=(0, 1))(x, 1.7)
    assert g[0][0] == 0.0
    np.testing.assert_allclose(g[0], central_difference_grad(finite_terms, (x, 1.7), 0), rtol=1e-6)
    np.testing.assert_allclose(g[1], central_difference_grad(finite_terms, (x, 1.7), 1), rtol=1e-6)


# ---- refusals: at the user's line, naming what is covered, never inside SciPy ------------------

MVN_FROZEN = mvn(MEAN, COV)


def draws(x):
    return np.sum(norm.rvs(size=3) * x)


def quantile(x):
    return np.sum(scipy.stats.norm.ppf(x * 0.1 + 0.5))


def t_survival(x):
    return np.sum(stats.t.sf(x, 3.0))


def cauchy_density(x):
    return np.sum(stats.cauchy.logpdf(x))


def mvn_cdf(x):
    return mvn.cdf(x, MEAN, COV)


def frozen_in_a_variable(x):
    rv = norm(0.0, 2.0)
    return np.sum(rv.logpdf(x))


def frozen_multivariate(x):
    return MVN_FROZEN.logpdf(x)


def no_cov(x):
    return mvn.logpdf(x, MEAN)


def scalar_cov(x):
    return mvn.logpdf(x, MEAN, 2.0)


def too_many(x):
    return np.sum(norm.logpdf(x, 0.0, 1.0, 2.0))


def zscore(x):
    return np.sum(scipy.stats.zscore(x) * x)


REFUSED = [
    (draws, "norm.rvs", "s2s has no rule for scipy.stats.norm.rvs"),
    (quantile, "ppf", "s2s has no rule for scipy.stats.norm.ppf"),
    (t_survival, "t.sf", "s2s has no rule for scipy.stats.t.sf"),
    (cauchy_density, "stats.cauchy", "s2s has no rule for scipy.stats.cauchy.logpdf"),
    (mvn_cdf, "mvn.cdf", "s2s has no rule for scipy.stats.multivariate_normal.cdf"),
    (frozen_in_a_variable, "norm(0.0, 2.0)", "a scipy.stats distribution (norm) is supported here only through its "
                                             "methods, called at once"),
    (frozen_multivariate, "MVN_FROZEN", "the frozen distribution MVN_FROZEN (multivariate_normal_frozen) is not covered"),
    (no_cov, "mvn.logpdf", "scipy.stats.multivariate_normal.logpdf is differentiated with cov given as an array"),
    (scalar_cov, "mvn.logpdf", "scipy.stats.multivariate_normal.logpdf is differentiated with cov given as an array"),
    (too_many, "norm.logpdf", "scipy.stats.norm.logpdf is differentiated with the parameters (x, loc, scale)"),
    (zscore, "scipy.stats.zscore", "s2s has no rule for scipy.stats.zscore"),
]


@pytest.mark.parametrize("fun, text, reason", REFUSED, ids=[fun.__name__ for fun, _, _ in REFUSED])
@pytest.mark.parametrize("transform", ["grad", "jit"])
def test_uncovered_use_is_refused_at_the_users_line(fun, text, reason, transform):
    x = POINTS[0]
    made = s2s.grad(fun) if transform == "grad" else s2s.jit(fun)
    with pytest.raises(s2s.S2SError) as refused:
        made(x)
    message = str(refused.value)
    assert reason in message, message
    assert re.match(rf".*{re.escape(where(fun, text))}\d+: ", message), message
    assert "site-packages" not in message
    if "no rule for" in message:
        assert "s2s.custom_vjp" in message
        assert "norm (logpdf, pdf, logcdf, cdf, logsf, sf)" in message


def test_covered_distributions_are_listed_with_their_methods():
    from s2s.scipy_forms import stats as forms

    assert forms.covered_methods("norm") == ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"]
    assert forms.covered_methods("multivariate_normal") == ["logpdf", "pdf", "entropy"]
    assert forms.covered_methods("chi2") == ["logpdf", "pdf", "logcdf", "cdf"]
    assert forms.covered_methods("dirichlet") == ["logpdf", "pdf"]
    assert forms.covered_methods("poisson") == ["logcdf", "cdf", "logpmf", "pmf"]
    assert forms.covered_methods("beta") == ["logpdf", "pdf", "logcdf", "cdf"]
    assert forms.form("norm", "rvs") is None and forms.form("cauchy", "logpdf") is None


def t_cdf_of_df(x, df):
    return np.sum(t.cdf(x, df))


def gamma_logcdf_of_a(x, a):
    return np.sum(stats.gamma.logcdf(x, a, scale=2.0) * x)


def beta_cdf_of_b(x, b):
    return np.sum(beta.cdf(x, 2.0, b=b))


@pytest.mark.parametrize("fun, text, param", [(t_cdf_of_df, "t.cdf", "df"), (gamma_logcdf_of_a, "stats.gamma", "a"),
                                              (beta_cdf_of_b, "beta.cdf", "b")], ids=["t", "gamma", "beta"])
@pytest.mark.parametrize("transform", ["grad", "grad of the shape alone", "jvp", "jit"])
def test_a_cdf_differentiated_in_its_shape_is_refused_at_the_users_line(fun, text, param, transform):
    """No closed form of the derivative in df, a, b: refused, never a zero for it."""
    x = UNIT
    with pytest.raises(s2s.S2SError) as refused:
        if transform == "grad":
            s2s.grad(fun, argnums=(0, 1))(x, 2.5)
        elif transform == "grad of the shape alone":
            s2s.grad(fun, argnums=1)(x, 2.5)
        elif transform == "jvp":
            s2s.jvp(fun, (x, 2.5), (x, 1.0))
        else:
            s2s.jit(s2s.grad(fun, argnums=1))(x, 2.5)
    message = str(refused.value)
    assert re.match(rf".*{re.escape(where(fun, text))}\d+: ", message), message
    assert f"with respect to its shape parameter {param}" in message, message
    assert "s2s.custom_vjp" in message and "not in argnums" in message


DENSITY = norm


def named_density(x):
    return np.sum(DENSITY.logpdf(x, 3.0))


LOGPDF = norm.logpdf
FROZEN_LOGPDF = RV.logpdf


def bound_methods(x, mu):
    return np.sum(LOGPDF(x, mu, 1.5) + FROZEN_LOGPDF(x * mu))


def test_bound_methods_named_at_module_level():
    check_grads(bound_methods, (X, 0.3), order=1, modes=("fwd", "rev"), backend="python")


def test_a_distribution_bound_anew_is_transformed_anew(monkeypatch):
    """The name a function calls a distribution's method through must still hold it (the cache
    checks it by the distribution's class, which every process shares)."""
    np.testing.assert_allclose(s2s.jit(named_density, backend="python")(X), norm.logpdf(X, 3.0).sum(), rtol=1e-12)
    monkeypatch.setattr(sys.modules[__name__], "DENSITY", t)
    np.testing.assert_allclose(s2s.jit(named_density, backend="python")(X), t.logpdf(X, 3.0).sum(), rtol=1e-12)
    before = s2s.jit(bound_methods, backend="python")(X, 0.3)
    monkeypatch.setattr(sys.modules[__name__], "LOGPDF", t.logpdf)
    monkeypatch.setattr(sys.modules[__name__], "FROZEN_LOGPDF", norm(0.0, 1.0).logpdf)
    np.testing.assert_allclose(s2s.jit(bound_methods, backend="python")(X, 0.3), bound_methods(X, 0.3), rtol=1e-12)
    assert before != bound_methods(X, 0.3)
