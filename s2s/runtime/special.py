"""The functions of scipy.special that generated code calls, as runtime.<name>: a user's
`scipy.special.expit(x)` is written `runtime.expit(x)` (Facts.written_as, templates/scipy_rules.py).

Here each is SciPy's own function (imported when first called: `import s2s` does not load SciPy),
its result in the floating type NumPy gives the operands (float32 stays float32 where SciPy's
ufunc would promote a Python number, or computes in float64); runtime/overloads/special.py gives
each a Numba form that calls SciPy's compiled code (scipy.special.cython_special)."""

from __future__ import annotations

import numpy as np

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "erfcinv", "ndtr", "log_ndtr", "ndtri", "gammaln", "loggamma",
           "digamma", "gamma", "rgamma", "gammasgn", "entr", "polygamma", "xlogy", "xlog1py", "beta", "betaln",
           "gammainc", "gammaincc", "betainc", "stdtr", "multigammaln", "multipolygamma", "j0", "j1", "y0", "y1",
           "i0", "i1", "i0e", "i1e", "jv", "yv", "yn", "iv", "ive", "logsumexp", "softmax", "log_softmax"]


def _scipy_special():
    import scipy.special

    return scipy.special


def _floats(out, *operands):
    """out in the floating type of the operands (NumPy's promotion, Python numbers weak), a
    number where they are numbers."""
    dtype = np.result_type(*operands, 0.0)
    if np.ndim(out) == 0 and all(np.ndim(v) == 0 and not isinstance(v, np.ndarray) for v in operands):
        return dtype.type(out)
    return np.asarray(out, dtype)


def expit(x):
    return _floats(_scipy_special().expit(x), x)


def logit(x):
    return _floats(_scipy_special().logit(x), x)


def erf(x):
    return _floats(_scipy_special().erf(x), x)


def erfc(x):
    return _floats(_scipy_special().erfc(x), x)


def erfinv(x):
    return _floats(_scipy_special().erfinv(x), x)


def ndtr(x):
    return _floats(_scipy_special().ndtr(x), x)


def log_ndtr(x):
    return _floats(_scipy_special().log_ndtr(x), x)


def ndtri(x):
    return _floats(_scipy_special().ndtri(x), x)


def gammaln(x):
    return _floats(_scipy_special().gammaln(x), x)


def digamma(x):
    return _floats(_scipy_special().digamma(x), x)


def gamma(x):
    return _floats(_scipy_special().gamma(x), x)


def erfcinv(x):
    return _floats(_scipy_special().erfcinv(x), x)


def loggamma(x):
    """log Gamma(x) of a real x: gammaln for x > 0, nan below (SciPy's real loggamma)."""
    return _floats(_scipy_special().loggamma(x), x)


def rgamma(x):
    return _floats(_scipy_special().rgamma(x), x)


def gammasgn(x):
    return _floats(_scipy_special().gammasgn(x), x)


def entr(x):
    """-x log(x): 0 at 0, -inf below."""
    return _floats(_scipy_special().entr(x), x)


# Bessel functions: of the first (j, i: modified) and second (y) kinds, of orders 0 and 1, of a
# real order v (jv, yv, iv), of an integer order n (yn), and exponentially scaled (i0e, i1e, ive)


def j0(x):
    return _floats(_scipy_special().j0(x), x)


def j1(x):
    return _floats(_scipy_special().j1(x), x)


def y0(x):
    return _floats(_scipy_special().y0(x), x)


def y1(x):
    return _floats(_scipy_special().y1(x), x)


def i0(x):
    return _floats(_scipy_special().i0(x), x)


def i1(x):
    return _floats(_scipy_special().i1(x), x)


def i0e(x):
    return _floats(_scipy_special().i0e(x), x)


def i1e(x):
    return _floats(_scipy_special().i1e(x), x)


def jv(v, x):
    return _floats(_scipy_special().jv(v, x), v, x)


def yv(v, x):
    return _floats(_scipy_special().yv(v, x), v, x)


def yn(n, x):
    return _floats(_scipy_special().yn(n, x), x)


def iv(v, x):
    return _floats(_scipy_special().iv(v, x), v, x)


def ive(v, x):
    return _floats(_scipy_special().ive(v, x), v, x)


def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative int): digamma's derivative is polygamma(1, x)."""
    return _floats(_scipy_special().polygamma(n, x), x)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (an int)."""
    return _floats(_scipy_special().multigammaln(a, d), a)


def multipolygamma(n, a, d):
    """The n-th derivative of multigammaln(a, d) less one: the sum over j < d of polygamma(n, a - j / 2)."""
    return _floats(sum(_scipy_special().polygamma(n, np.asarray(a) - 0.5 * j) for j in range(d)), a)


def xlogy(x, y):
    return _floats(_scipy_special().xlogy(x, y), x, y)


def xlog1py(x, y):
    return _floats(_scipy_special().xlog1py(x, y), x, y)


def beta(a, b):
    return _floats(_scipy_special().beta(a, b), a, b)


def betaln(a, b):
    return _floats(_scipy_special().betaln(a, b), a, b)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x), gamma.cdf."""
    return _floats(_scipy_special().gammainc(a, x), a, x)


def gammaincc(a, x):
    """1 - P(a, x), Q(a, x): poisson.cdf(k, mu) is Q(k + 1, mu)."""
    return _floats(_scipy_special().gammaincc(a, x), a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), beta.cdf."""
    return _floats(_scipy_special().betainc(a, b, x), a, b, x)


def stdtr(df, t):
    """Student's t distribution function of df degrees of freedom, t.cdf."""
    return _floats(_scipy_special().stdtr(df, t), df, t)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    return _scipy_special().logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def softmax(x, axis=None):
    return _scipy_special().softmax(x, axis=axis)


def log_softmax(x, axis=None):
    return _scipy_special().log_softmax(x, axis=axis)
