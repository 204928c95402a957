"""scipy.stats distributions written as NumPy code, which s2s reads like a user's helper: a call
`scipy.stats.norm.logpdf(x, mu, sigma)` in a transformed function is lowered as a call of
norm_logpdf(x, mu, sigma) here (frontend/expressions.py, stats_call), so it is differentiated,
batched and compiled in every mode.

Each form gives SciPy's values: NaN where a parameter is out of its range (SciPy's badvalue),
-inf (logpdf) or 0 (pdf) outside the support, the density's formula inside it. The formula is
evaluated at a safe point where it is not selected (1.0 for a scale out of range, a point of the
support for x outside it), so that the adjoint np.where sends to the branch it does not select,
zero, meets finite partial derivatives there (0 * inf would be NaN).

The cdfs are SciPy's special functions (stdtr, gammainc, betainc, gammaincc for poisson's),
differentiated in x, loc, scale and poisson's mu; in t's df and gamma's and beta's a and b they
have no derivative (NO_DERIVATIVE below).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..runtime import singular_covariance

LOG_SQRT_2PI = 0.9189385332046727  # log(sqrt(2 pi))
LOG_2PI = 1.8378770664093453
LOG_2 = 0.6931471805599453
SINGULAR_CUTOFF = 1e6 * 2.220446049250313e-16  # SciPy's, of float64 eigenvalues against the largest


# ---- norm ------------------------------------------------------------------------------


def norm_logpdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    return np.where(valid, -y * y / 2.0 - LOG_SQRT_2PI - np.log(s), np.nan)


def norm_pdf(x, loc=0.0, scale=1.0):
    return np.exp(norm_logpdf(x, loc, scale))


def norm_logcdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    return np.where(valid, special.log_ndtr((x - loc) / s), np.nan)


def norm_cdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    return np.where(valid, special.ndtr((x - loc) / s), np.nan)


# The normal distribution is symmetric: its sf at x is its cdf at -x about -loc.


def norm_sf(x, loc=0.0, scale=1.0):
    return norm_cdf(-x, -loc, scale)


def norm_logsf(x, loc=0.0, scale=1.0):
    return norm_logcdf(-x, -loc, scale)


# ---- t, gamma, beta --------------------------------------------------------------------


def t_logpdf(x, df, loc=0.0, scale=1.0):
    # log Gamma((df + 1) / 2) - log Gamma(df / 2) - log(pi) / 2 is -betaln(df / 2, 1 / 2), which keeps its
    # digits for large df (the difference of the two gammaln does not)
    # df = inf is the normal distribution (SciPy's too); its formula is evaluated at df = 1 there
    valid = (df > 0) & (scale > 0)
    normal = np.isinf(df)
    d = np.where(valid & ~normal, df, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    logp = -special.betaln(0.5 * d, 0.5) - 0.5 * np.log(d) - (d + 1.0) / 2.0 * np.log1p(y * y / d) - np.log(s)
    logp = np.where(normal, -y * y / 2.0 - LOG_SQRT_2PI - np.log(s), logp)
    return np.where(valid, logp, np.nan)


def t_pdf(x, df, loc=0.0, scale=1.0):
    return np.exp(t_logpdf(x, df, loc, scale))


def t_cdf(x, df, loc=0.0, scale=1.0):
    valid = (df > 0) & (scale > 0)
    d = np.where(valid, df, 1.0)
    s = np.where(valid, scale, 1.0)
    return np.where(valid, special.stdtr(d, (x - loc) / s), np.nan)


def _log_of_cdf(cdf, sf):
    """log(cdf) as SciPy's continuous distributions take it: of the cdf below the median, of 1 - sf
    above (by log1p, where cdf rounds to 1). Each branch's log reads a safe 1 or 0 where np.where
    does not select it, so that the zero adjoint it gets meets a finite derivative."""
    lower = cdf < 0.5
    return np.where(lower, np.log(np.where(lower, cdf, 1.0)), np.log1p(-np.where(lower, 0.0, sf)))


def t_logcdf(x, df, loc=0.0, scale=1.0):
    valid = (df > 0) & (scale > 0)
    d = np.where(valid, df, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    return np.where(valid, _log_of_cdf(special.stdtr(d, y), special.stdtr(d, -y)), np.nan)


def gamma_logpdf(x, a, loc=0.0, scale=1.0):
    valid = (a > 0) & (scale > 0)
    shape = np.where(valid, a, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = y < 0
    inside = np.where(outside, 1.0, y)
    logp = special.xlogy(shape - 1.0, inside) - inside - special.gammaln(shape) - np.log(s)
    return np.where(valid, np.where(outside, -np.inf, logp), np.nan)


def gamma_pdf(x, a, loc=0.0, scale=1.0):
    return np.exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x, a, loc=0.0, scale=1.0):
    valid = (a > 0) & (scale > 0)
    shape = np.where(valid, a, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = y < 0
    inside = np.where(outside, 1.0, y)
    return np.where(valid, np.where(outside, 0.0, special.gammainc(shape, inside)), np.nan)


def gamma_logcdf(x, a, loc=0.0, scale=1.0):
    valid = (a > 0) & (scale > 0)
    shape = np.where(valid, a, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = y < 0
    inside = np.where(outside, 1.0, y)
    logcdf = _log_of_cdf(special.gammainc(shape, inside), special.gammaincc(shape, inside))
    return np.where(valid, np.where(outside, -np.inf, logcdf), np.nan)


# chi2 of df degrees of freedom is gamma of shape df / 2 and scale 2


def chi2_logpdf(x, df, loc=0.0, scale=1.0):
    return gamma_logpdf(x, 0.5 * df, loc, 2.0 * scale)


def chi2_pdf(x, df, loc=0.0, scale=1.0):
    return np.exp(gamma_logpdf(x, 0.5 * df, loc, 2.0 * scale))


def chi2_cdf(x, df, loc=0.0, scale=1.0):
    return gamma_cdf(x, 0.5 * df, loc, 2.0 * scale)


def chi2_logcdf(x, df, loc=0.0, scale=1.0):
    return gamma_logcdf(x, 0.5 * df, loc, 2.0 * scale)


def beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    valid = (a > 0) & (b > 0) & (scale > 0)
    a1 = np.where(valid, a, 1.0)
    b1 = np.where(valid, b, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = (y < 0) | (y > 1)
    inside = np.where(outside, 0.5, y)
    logp = special.xlog1py(b1 - 1.0, -inside) + special.xlogy(a1 - 1.0, inside) - special.betaln(a1, b1) - np.log(s)
    return np.where(valid, np.where(outside, -np.inf, logp), np.nan)


def beta_pdf(x, a, b, loc=0.0, scale=1.0):
    return np.exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x, a, b, loc=0.0, scale=1.0):
    valid = (a > 0) & (b > 0) & (scale > 0)
    a1 = np.where(valid, a, 1.0)
    b1 = np.where(valid, b, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    below = y < 0
    above = y > 1
    inside = np.where(below | above, 0.5, y)
    cdf = np.where(below, 0.0, np.where(above, 1.0, special.betainc(a1, b1, inside)))
    return np.where(valid, cdf, np.nan)


def beta_logcdf(x, a, b, loc=0.0, scale=1.0):
    # (the sf 1 - I_y(a, b) is I_(1 - y)(b, a))
    valid = (a > 0) & (b > 0) & (scale > 0)
    a1 = np.where(valid, a, 1.0)
    b1 = np.where(valid, b, 1.0)
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    below = y < 0
    above = y > 1
    inside = np.where(below | above, 0.5, y)
    logcdf = _log_of_cdf(special.betainc(a1, b1, inside), special.betainc(b1, a1, 1.0 - inside))
    return np.where(valid, np.where(below, -np.inf, np.where(above, 0.0, logcdf)), np.nan)


# ---- expon, uniform --------------------------------------------------------------------


def expon_logpdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = y < 0
    inside = np.where(outside, 1.0, y)
    return np.where(valid, np.where(outside, -np.inf, -inside - np.log(s)), np.nan)


def expon_pdf(x, loc=0.0, scale=1.0):
    return np.exp(expon_logpdf(x, loc, scale))


def expon_cdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = y < 0
    inside = np.where(outside, 1.0, y)
    return np.where(valid, np.where(outside, 0.0, -np.expm1(-inside)), np.nan)


def expon_logcdf(x, loc=0.0, scale=1.0):
    # log(1 - exp(-y)): through expm1 below log 2, through log1p above (where 1 - exp(-y) rounds to 1)
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = y < 0
    inside = np.where(outside, 1.0, y)
    near = np.log(-np.expm1(-np.minimum(inside, LOG_2)))
    far = np.log1p(-np.exp(-np.maximum(inside, LOG_2)))
    return np.where(valid, np.where(outside, -np.inf, np.where(inside < LOG_2, near, far)), np.nan)


def uniform_logpdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    outside = (y < 0) | (y > 1)
    return np.where(valid, np.where(outside, -np.inf, -np.log(s) + 0.0 * y), np.nan)  # (NaN for a NaN x)


def uniform_pdf(x, loc=0.0, scale=1.0):
    return np.exp(uniform_logpdf(x, loc, scale))


def uniform_cdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    below = y <= 0
    return np.where(valid, np.where(below, 0.0, np.minimum(y, 1.0)), np.nan)


def uniform_logcdf(x, loc=0.0, scale=1.0):
    valid = scale > 0
    s = np.where(valid, scale, 1.0)
    y = (x - loc) / s
    below = y <= 0
    inside = np.where(below, 1.0, np.minimum(y, 1.0))
    return np.where(valid, np.where(below, -np.inf, np.log(inside)), np.nan)


# ---- poisson, bernoulli (k is discrete: its derivative is zero) ----------------------------


def poisson_logpmf(k, mu, loc=0):
    valid = mu >= 0
    m = np.where(valid, mu, 1.0)
    j = np.floor(k - loc)
    outside = (j < 0) | (j < k - loc)
    n = np.where(outside, 0.0, j)
    logp = special.xlogy(n, m) - special.gammaln(n + 1.0) - m
    return np.where(valid, np.where(outside, -np.inf, logp), np.nan)


def poisson_pmf(k, mu, loc=0):
    return np.exp(poisson_logpmf(k, mu, loc))


def poisson_cdf(k, mu, loc=0):
    # Q(j + 1, mu), the regularized upper incomplete gamma function (SciPy's pdtr): its derivative
    # in mu is minus the pmf at j
    valid = mu >= 0
    m = np.where(valid, mu, 1.0)
    j = np.floor(k - loc)
    below = j < 0
    n = np.where(below, 0.0, j)
    cdf = np.where(below, 0.0, special.gammaincc(n + 1.0, m))
    return np.where(valid, np.where(np.isnan(j), np.nan, cdf), np.nan)


def poisson_logcdf(k, mu, loc=0):
    return np.log(poisson_cdf(k, mu, loc))


def bernoulli_logpmf(k, p, loc=0):
    valid = (p >= 0) & (p <= 1)
    q = np.where(valid, p, 0.5)
    j = np.floor(k - loc)
    outside = (j < 0) | (j > 1) | (j < k - loc)
    n = np.where(outside, 0.0, j)
    logp = special.xlogy(n, q) + special.xlog1py(1.0 - n, -q)
    return np.where(valid, np.where(outside, -np.inf, logp), np.nan)


def bernoulli_pmf(k, p, loc=0):
    return np.exp(bernoulli_logpmf(k, p, loc))


def bernoulli_cdf(k, p, loc=0):
    valid = (p >= 0) & (p <= 1)
    j = np.floor(k - loc)
    cdf = np.where(j < 0, 0.0, np.where(j >= 1, 1.0, 1.0 - p))
    return np.where(valid, np.where(np.isnan(j), np.nan, cdf), np.nan)


def bernoulli_logcdf(k, p, loc=0):
    valid = (p >= 0) & (p <= 1)
    q = np.where(valid, p, 0.5)
    j = np.floor(k - loc)
    logcdf = np.where(valid, np.where(j < 0, -np.inf, np.log1p(-q)), np.nan)
    # (SciPy's logcdf is 0 from the support's end on, whether p is in range or not)
    return np.where(np.isnan(j), np.nan, np.where(j >= 1, 0.0, logcdf))


# ---- dirichlet -------------------------------------------------------------------------


def dirichlet_logpdf(x, alpha):
    # x: a point of the simplex (K,), or one per column (K, N), as SciPy takes it; or its first K - 1
    # components, the last being 1 less their sum. (SciPy refuses a point off the simplex; this form
    # evaluates the density's formula there, whose derivative along the simplex is the density's.)
    if x.shape[0] == alpha.shape[0] - 1:
        x = np.concatenate((x, 1.0 - np.sum(x, axis=0, keepdims=True)), axis=0)
    # (x.T: the components last, where alpha broadcasts, for one point and for columns of them alike)
    return (special.gammaln(np.sum(alpha)) - np.sum(special.gammaln(alpha))
            + np.sum(special.xlogy(alpha - 1.0, x.T), axis=-1))


def dirichlet_pdf(x, alpha):
    return np.exp(dirichlet_logpdf(x, alpha))


# ---- multivariate_normal ---------------------------------------------------------------


def multivariate_normal_logpdf(x, mean=0.0, cov=None, allow_singular=False):
    # x is one point (d,) or one a row (n, d). SciPy reads cov's lower triangle (its eigh), and so
    # does this form: the gradient with respect to cov is that triangle's, upper entries zero.
    # The quadratic form is through a solve, the log determinant through slogdet. A call that passes
    # allow_singular (not a constant False) is lowered to the form of any rank below (form()).
    c = np.tril(cov) + np.tril(cov, -1).T
    diff = x - mean
    sign, logdet = np.linalg.slogdet(c)
    solved = np.linalg.solve(c, diff.T)
    maha = np.sum(diff.T * solved, axis=0)
    logp = -0.5 * (c.shape[0] * LOG_2PI + logdet + maha)
    return np.where(sign > 0, logp, np.nan)


def multivariate_normal_logpdf_of_any_rank(x, mean=0.0, cov=None, allow_singular=True):
    # allow_singular: SciPy takes a covariance of lower rank (an eigenvalue at its cutoff or below)
    # by its pseudo-determinant and pseudo-inverse, and so does this form (_lower_rank_parts); a
    # density of lower rank has no derivative in the covariance (a change of most directions
    # changes its rank), and asking for one raises where it runs (singular_covariance). (A form
    # of its own: the code for SciPy's default, of full rank, compiles none of this.)
    c = np.tril(cov) + np.tril(cov, -1).T
    diff = x - mean
    if allow_singular and _lower_rank(c):
        logdet, rank, maha, inside = _lower_rank_parts(diff, singular_covariance(c))
        outside = -np.inf  # (SciPy's, off the support: a deviation along the covariance's null space)
    else:
        sign, logdet = np.linalg.slogdet(c)
        rank = c.shape[0]
        solved = np.linalg.solve(c, diff.T)
        maha = np.sum(diff.T * solved, axis=0)
        inside = sign + 0.0 * maha > 0
        outside = np.nan
    logp = -0.5 * (rank * LOG_2PI + logdet + maha)
    return np.where(inside, logp, outside)


def _lower_rank(c):
    spectrum = np.linalg.eigvalsh(c)
    return np.min(spectrum) <= SINGULAR_CUTOFF * np.max(np.abs(spectrum))


def _lower_rank_parts(diff, c):
    """(log pseudo-determinant, rank, the quadratic form by the pseudo-inverse, whether each
    point is in the support) of a covariance of lower rank, from its eigenvalues above SciPy's
    cutoff, as SciPy's: a point is in the support where its deviation along the null space is
    below 1e3 times the cutoff."""
    spectrum, vectors = np.linalg.eigh(c)
    cutoff = SINGULAR_CUTOFF * np.max(np.abs(spectrum))
    kept = spectrum > cutoff
    safe = np.where(kept, spectrum, 1.0)
    whiten = vectors * np.where(kept, 1.0 / np.sqrt(safe), 0.0)
    maha = np.sum((diff @ whiten) ** 2, axis=-1)
    off = np.sum((diff @ (vectors * np.where(kept, 0.0, 1.0))) ** 2, axis=-1)
    return np.sum(np.log(safe)), np.sum(kept), maha, off < (1e3 * cutoff) ** 2


def multivariate_normal_pdf(x, mean=0.0, cov=None, allow_singular=False):
    return np.exp(multivariate_normal_logpdf(x, mean, cov))


def multivariate_normal_pdf_of_any_rank(x, mean=0.0, cov=None, allow_singular=True):
    return np.exp(multivariate_normal_logpdf_of_any_rank(x, mean, cov, allow_singular))


def multivariate_normal_entropy(mean=0.0, cov=None, allow_singular=False):
    # 0.5 (d (1 + log 2 pi) + log det cov), of the covariance logpdf reads (its lower triangle).
    # SciPy's entropy takes a covariance of lower rank whatever allow_singular is (its own entropy
    # has no such parameter): it counts its rank and pseudo-determinant, and so does this form (no
    # derivative in the covariance there either).
    c = np.tril(cov) + np.tril(cov, -1).T
    if _lower_rank(c):
        spectrum = np.linalg.eigvalsh(singular_covariance(c))
        kept = spectrum > SINGULAR_CUTOFF * np.max(np.abs(spectrum))
        rank = np.sum(kept)
        logdet = np.sum(np.log(np.where(kept, spectrum, 1.0)))
        sign = 1.0
    else:
        sign, logdet = np.linalg.slogdet(c)
        rank = c.shape[0]
    return np.where(sign > 0, 0.5 * (rank * (1.0 + LOG_2PI) + logdet), np.nan)


# The distributions covered, each by its methods: scipy.stats.<name>.<method> is <name>_<method> above.
DISTRIBUTIONS = ("norm", "multivariate_normal", "t", "chi2", "gamma", "beta", "dirichlet", "expon", "uniform",
                 "poisson", "bernoulli")


# The shape parameters a form has no derivative in: its scipy.special function's rule has none
# (Facts.no_derivative, templates/scipy_rules.py). A call where one varies with what is
# differentiated is refused at the user's line (analysis/activity.py), not inside the form.
NO_DERIVATIVE = {"t_cdf": ("df",), "t_logcdf": ("df",), "gamma_cdf": ("a",), "gamma_logcdf": ("a",),
                 "chi2_cdf": ("df",), "chi2_logcdf": ("df",), "beta_cdf": ("a", "b"), "beta_logcdf": ("a", "b")}


def no_derivative(fn) -> tuple[str, ...]:
    """The parameters of a form (a function of this module) it has no derivative in."""
    return NO_DERIVATIVE.get(fn.__name__, ()) if globals().get(getattr(fn, "__name__", None)) is fn else ()


def spelling(fn) -> str:
    """scipy.stats.<name>.<method> of a form, for messages."""
    name, method = fn.__name__.removesuffix("_of_any_rank").rsplit("_", 1)
    return f"scipy.stats.{name}.{method}"


def covered_methods(name: str) -> list[str]:
    return [m for m in ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "logpmf", "pmf", "entropy")
            if f"{name}_{m}" in globals()]


def form(name: str, method: str, of_any_rank: bool = False):
    """The form of scipy.stats.<name>.<method>, or None; of_any_rank: the call passes
    allow_singular, other than as a constant False (multivariate_normal's forms of any rank)."""
    if name not in DISTRIBUTIONS:
        return None
    return globals().get(f"{name}_{method}_of_any_rank" if of_any_rank else "", globals().get(f"{name}_{method}"))


def covered() -> str:
    """What is covered, for messages: norm (logpdf, pdf, logcdf, cdf), ..."""
    return ", ".join(f"{name} ({', '.join(covered_methods(name))})" for name in DISTRIBUTIONS)
