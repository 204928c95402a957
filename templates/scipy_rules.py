"""Rules for SciPy's functions (scipy.special, and scipy.signal.convolve), as JAX offers jax.scipy:
a user's call of scipy.special.expit is written as the runtime helper that its facts name
(written_as: runtime.expit, which is SciPy's function on the python backend and calls SciPy's
compiled code under Numba), and the rule is that helper's, so that code generated from generated
code (a second derivative) finds it again.

SciPy's ufuncs are NumPy ufuncs, but their helpers are not: the lines under each rule say what a
ufunc is without saying so (elementwise, pure, a display is an array), less `fusable` (Numba does
not fuse a call of an overload into the array expression around it). A SciPy function declared
nowhere here is refused at the user's call (frontend/expressions.py)."""

import numpy as np
import scipy.special

from s2s import runtime
from s2s.rules import Case, nondifferentiable, primitive, rule
from s2s.runtime import (betaln, digamma, gammaln, i0, i0e, i1, i1e, iv, ive, j0, j1, jv, multipolygamma, polygamma,
                         signal_convolve, signal_convolve_bar1, signal_convolve_bar2,
                         sum_bar, unbroadcast, xlog1py, xlogy, y0, y1, yn, yv)

# What the passes know of an elementwise helper of one or two operands (see the module's doc).
ONE = dict(elementwise=True, pure=True, scalar_safe=True, array_result=True, operands=(0,))
TWO = dict(ONE, operands=(0, 1))


# ---- scipy.special: elementwise functions of one operand -------------------------------


@rule(runtime.expit, **ONE)
@primitive(scipy.special.expit, written_as=runtime.expit)
def expit_(y, x):
    """1 / (1 + exp(-x)): its derivative is y (1 - y)."""
    y_dot = y * (1.0 - y) * x_dot
    x_bar += y * (1.0 - y) * y_bar


@rule(runtime.logit, **ONE)
@primitive(scipy.special.logit, written_as=runtime.logit)
def logit_(y, x):
    y_dot = x_dot / (x * (1.0 - x))
    x_bar += y_bar / (x * (1.0 - x))


@rule(runtime.erf, **ONE)
@primitive(scipy.special.erf, written_as=runtime.erf)
def erf_(y, x):
    """2 / sqrt(pi) = 1.1283791670955126."""
    y_dot = 1.1283791670955126 * np.exp(-x * x) * x_dot
    x_bar += 1.1283791670955126 * np.exp(-x * x) * y_bar


@rule(runtime.erfc, **ONE)
@primitive(scipy.special.erfc, written_as=runtime.erfc)
def erfc_(y, x):
    y_dot = -1.1283791670955126 * np.exp(-x * x) * x_dot
    x_bar -= 1.1283791670955126 * np.exp(-x * x) * y_bar


@rule(runtime.erfinv, **ONE)
@primitive(scipy.special.erfinv, written_as=runtime.erfinv)
def erfinv_(y, x):
    """The inverse's derivative, 1 / erf'(y): sqrt(pi) / 2 = 0.886226925452758."""
    y_dot = 0.886226925452758 * np.exp(y * y) * x_dot
    x_bar += 0.886226925452758 * np.exp(y * y) * y_bar


@rule(runtime.ndtr, **ONE)
@primitive(scipy.special.ndtr, written_as=runtime.ndtr)
def ndtr_(y, x):
    """The normal density: 1 / sqrt(2 pi) = 0.3989422804014327."""
    y_dot = 0.3989422804014327 * np.exp(-0.5 * x * x) * x_dot
    x_bar += 0.3989422804014327 * np.exp(-0.5 * x * x) * y_bar


@rule(runtime.log_ndtr, **ONE)
@primitive(scipy.special.log_ndtr, written_as=runtime.log_ndtr)
def log_ndtr_(y, x):
    """density / ndtr(x), as one exp (log sqrt(2 pi) = 0.9189385332046728): in the far left tail the
    density and ndtr underflow to 0 long before their ratio, about -x, is large."""
    y_dot = np.exp(-0.5 * x * x - y - 0.9189385332046728) * x_dot
    x_bar += np.exp(-0.5 * x * x - y - 0.9189385332046728) * y_bar


@rule(runtime.ndtri, **ONE)
@primitive(scipy.special.ndtri, written_as=runtime.ndtri)
def ndtri_(y, x):
    """The inverse's derivative, 1 / density(y): sqrt(2 pi) = 2.5066282746310002."""
    y_dot = 2.5066282746310002 * np.exp(0.5 * y * y) * x_dot
    x_bar += 2.5066282746310002 * np.exp(0.5 * y * y) * y_bar


@rule(runtime.gammaln, **ONE)
@primitive(scipy.special.gammaln, written_as=runtime.gammaln)
def gammaln_(y, x):
    y_dot = digamma(x) * x_dot
    x_bar += digamma(x) * y_bar


@rule(runtime.digamma, **ONE)
@primitive(scipy.special.digamma, written_as=runtime.digamma)
def digamma_(y, x):
    y_dot = polygamma(1, x) * x_dot
    x_bar += polygamma(1, x) * y_bar


@rule(runtime.gamma, **ONE)
@primitive(scipy.special.gamma, written_as=runtime.gamma)
def gamma_(y, x):
    y_dot = y * digamma(x) * x_dot
    x_bar += y * digamma(x) * y_bar


@rule(runtime.polygamma, **dict(ONE, operands=(1,)))
@primitive(scipy.special.polygamma, written_as=runtime.polygamma)
def polygamma_(y, n, x):
    """The n-th derivative of digamma (n an int, not differentiated): its derivative is the next."""
    y_dot = polygamma(n + 1, x) * x_dot
    x_bar += polygamma(n + 1, x) * y_bar


@rule(runtime.erfcinv, **ONE)
@primitive(scipy.special.erfcinv, written_as=runtime.erfcinv)
def erfcinv_(y, x):
    """The inverse's derivative, 1 / erfc'(y) = -sqrt(pi) / 2 exp(y^2)."""
    y_dot = -0.886226925452758 * np.exp(y * y) * x_dot
    x_bar -= 0.886226925452758 * np.exp(y * y) * y_bar


@rule(runtime.loggamma, **ONE)
@primitive(scipy.special.loggamma, written_as=runtime.loggamma)
def loggamma_(y, x):
    """log Gamma(x) of a real x (nan below 0, where its derivative is nan too)."""
    y_dot = digamma(x) * x_dot
    x_bar += digamma(x) * y_bar


@rule(runtime.rgamma, **ONE)
@primitive(scipy.special.rgamma, written_as=runtime.rgamma)
def rgamma_(y, x):
    """1 / Gamma(x): its derivative is -digamma(x) / Gamma(x)."""
    y_dot = -y * digamma(x) * x_dot
    x_bar -= y * digamma(x) * y_bar


@rule(runtime.entr, **ONE)
@primitive(scipy.special.entr, written_as=runtime.entr)
def entr_(y, x):
    """-x log(x): its derivative is -(log(x) + 1) (-inf at 0, where SciPy's entr is 0)."""
    y_dot = -(np.log(x) + 1.0) * x_dot
    x_bar -= (np.log(x) + 1.0) * y_bar


# Bessel functions: each derivative is of the same family, at the orders around it
# (J_v' = (J_{v-1} - J_{v+1}) / 2, the same for Y; I_v' = (I_{v-1} + I_{v+1}) / 2); the exponentially
# scaled ones less sign(x) times themselves. Written so, J_1' has no 1/x (at 0 it is 1/2).


@rule(runtime.j0, **ONE)
@primitive(scipy.special.j0, written_as=runtime.j0)
def j0_(y, x):
    y_dot = -j1(x) * x_dot
    x_bar -= j1(x) * y_bar


@rule(runtime.j1, **ONE)
@primitive(scipy.special.j1, written_as=runtime.j1)
def j1_(y, x):
    y_dot = 0.5 * (j0(x) - jv(2.0, x)) * x_dot
    x_bar += 0.5 * (j0(x) - jv(2.0, x)) * y_bar


@rule(runtime.y0, **ONE)
@primitive(scipy.special.y0, written_as=runtime.y0)
def y0_(y, x):
    y_dot = -y1(x) * x_dot
    x_bar -= y1(x) * y_bar


@rule(runtime.y1, **ONE)
@primitive(scipy.special.y1, written_as=runtime.y1)
def y1_(y, x):
    y_dot = 0.5 * (y0(x) - yv(2.0, x)) * x_dot
    x_bar += 0.5 * (y0(x) - yv(2.0, x)) * y_bar


@rule(runtime.i0, **ONE)
@primitive(scipy.special.i0, written_as=runtime.i0)
def i0_(y, x):
    y_dot = i1(x) * x_dot
    x_bar += i1(x) * y_bar


@rule(runtime.i1, **ONE)
@primitive(scipy.special.i1, written_as=runtime.i1)
def i1_(y, x):
    y_dot = 0.5 * (i0(x) + iv(2.0, x)) * x_dot
    x_bar += 0.5 * (i0(x) + iv(2.0, x)) * y_bar


@rule(runtime.i0e, **ONE)
@primitive(scipy.special.i0e, written_as=runtime.i0e)
def i0e_(y, x):
    """exp(-|x|) I_0(x)."""
    y_dot = (i1e(x) - np.sign(x) * y) * x_dot
    x_bar += (i1e(x) - np.sign(x) * y) * y_bar


@rule(runtime.i1e, **ONE)
@primitive(scipy.special.i1e, written_as=runtime.i1e)
def i1e_(y, x):
    """exp(-|x|) I_1(x)."""
    y_dot = (0.5 * (i0e(x) + ive(2.0, x)) - np.sign(x) * y) * x_dot
    x_bar += (0.5 * (i0e(x) + ive(2.0, x)) - np.sign(x) * y) * y_bar


# Of an order v (n), differentiated in x alone: the derivative in the order has no closed form,
# and an order that varies with what is differentiated is refused (Facts.no_derivative).


@rule(runtime.jv, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.jv, written_as=runtime.jv)
def jv_(y, v, x):
    y_dot = 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)) * x_dot
    x_bar += unbroadcast(0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)) * y_bar, x)


@rule(runtime.yv, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.yv, written_as=runtime.yv)
def yv_(y, v, x):
    y_dot = 0.5 * (yv(v - 1.0, x) - yv(v + 1.0, x)) * x_dot
    x_bar += unbroadcast(0.5 * (yv(v - 1.0, x) - yv(v + 1.0, x)) * y_bar, x)


@rule(runtime.yn, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.yn, written_as=runtime.yn)
def yn_(y, n, x):
    y_dot = 0.5 * (yn(n - 1, x) - yn(n + 1, x)) * x_dot
    x_bar += unbroadcast(0.5 * (yn(n - 1, x) - yn(n + 1, x)) * y_bar, x)


@rule(runtime.iv, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.iv, written_as=runtime.iv)
def iv_(y, v, x):
    y_dot = 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)) * x_dot
    x_bar += unbroadcast(0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)) * y_bar, x)


@rule(runtime.ive, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.ive, written_as=runtime.ive)
def ive_(y, v, x):
    """exp(-|x|) I_v(x)."""
    y_dot = (0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - np.sign(x) * y) * x_dot
    x_bar += unbroadcast((0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - np.sign(x) * y) * y_bar, x)


@rule(runtime.multigammaln, **ONE)
@primitive(scipy.special.multigammaln, written_as=runtime.multigammaln)
def multigammaln_(y, a, d):
    """d (d - 1) / 4 log(pi) + the sum over j < d of gammaln(a - j / 2) (d an int, not differentiated)."""
    y_dot = multipolygamma(0, a, d) * a_dot
    a_bar += multipolygamma(0, a, d) * y_bar


@rule(runtime.multipolygamma, **dict(ONE, operands=(1,)))
def multipolygamma_(y, n, a, d):
    """The sum over j < d of polygamma(n, a - j / 2): its derivative is the next one's."""
    y_dot = multipolygamma(n + 1, a, d) * a_dot
    a_bar += multipolygamma(n + 1, a, d) * y_bar


# ---- scipy.special: elementwise functions of two operands ------------------------------


@rule(runtime.xlogy, **TWO)
@primitive(scipy.special.xlogy, written_as=runtime.xlogy)
def xlogy_(z, x, y):
    """x log(y), 0 where x is 0."""
    z_dot = np.log(y) * x_dot + x / y * y_dot
    x_bar += unbroadcast(z_bar * np.log(y), x)
    y_bar += unbroadcast(z_bar * x / y, y)


@rule(runtime.xlog1py, **TWO)
@primitive(scipy.special.xlog1py, written_as=runtime.xlog1py)
def xlog1py_(z, x, y):
    """x log(1 + y), 0 where x is 0."""
    z_dot = np.log1p(y) * x_dot + x / (1.0 + y) * y_dot
    x_bar += unbroadcast(z_bar * np.log1p(y), x)
    y_bar += unbroadcast(z_bar * x / (1.0 + y), y)


@rule(runtime.beta, **TWO)
@primitive(scipy.special.beta, written_as=runtime.beta)
def beta_(z, a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)."""
    both = digamma(a + b)
    z_dot = z * ((digamma(a) - both) * a_dot + (digamma(b) - both) * b_dot)
    a_bar += unbroadcast(z_bar * z * (digamma(a) - both), a)
    b_bar += unbroadcast(z_bar * z * (digamma(b) - both), b)


@rule(runtime.betaln, **TWO)
@primitive(scipy.special.betaln, written_as=runtime.betaln)
def betaln_(z, a, b):
    """log B(a, b) = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    both = digamma(a + b)
    z_dot = (digamma(a) - both) * a_dot + (digamma(b) - both) * b_dot
    a_bar += unbroadcast(z_bar * (digamma(a) - both), a)
    b_bar += unbroadcast(z_bar * (digamma(b) - both), b)


# ---- scipy.special: distribution functions, differentiated in x alone ----------------------
# Their derivatives in x are the densities; in the shape parameters (a, b, df) they have no closed
# form, and a shape that varies with what is differentiated is refused (Facts.no_derivative).


@rule(runtime.gammainc, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.gammainc, written_as=runtime.gammainc)
def gammainc_(y, a, x):
    """P(a, x): its derivative in x is the gamma density x^(a - 1) exp(-x) / Gamma(a)."""
    y_dot = np.exp(xlogy(a - 1.0, x) - x - gammaln(a)) * x_dot
    x_bar += unbroadcast(y_bar * np.exp(xlogy(a - 1.0, x) - x - gammaln(a)), x)


@rule(runtime.gammaincc, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.gammaincc, written_as=runtime.gammaincc)
def gammaincc_(y, a, x):
    """Q(a, x) = 1 - P(a, x): minus the gamma density."""
    y_dot = -np.exp(xlogy(a - 1.0, x) - x - gammaln(a)) * x_dot
    x_bar -= unbroadcast(y_bar * np.exp(xlogy(a - 1.0, x) - x - gammaln(a)), x)


@rule(runtime.betainc, **dict(ONE, operands=(0, 1, 2), no_derivative=(0, 1)))
@primitive(scipy.special.betainc, written_as=runtime.betainc)
def betainc_(y, a, b, x):
    """I_x(a, b): its derivative in x is the beta density x^(a - 1) (1 - x)^(b - 1) / B(a, b)."""
    y_dot = np.exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b)) * x_dot
    x_bar += unbroadcast(y_bar * np.exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b)), x)


@rule(runtime.stdtr, **dict(TWO, no_derivative=(0,)))
@primitive(scipy.special.stdtr, written_as=runtime.stdtr)
def stdtr_(y, df, t):
    """Student's t distribution function: its derivative in t is the density,
    exp(-betaln(df / 2, 1 / 2) - log(df) / 2 - (df + 1) / 2 log(1 + t^2 / df))."""
    y_dot = np.exp(-betaln(0.5 * df, 0.5) - 0.5 * np.log(df) - 0.5 * (df + 1.0) * np.log1p(t * t / df)) * t_dot
    t_bar += unbroadcast(y_bar * np.exp(-betaln(0.5 * df, 0.5) - 0.5 * np.log(df)
                                        - 0.5 * (df + 1.0) * np.log1p(t * t / df)), t)


# ---- scipy.special: logsumexp, softmax, log_softmax ---------------------------------------


def logsumexp_options(axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:
        return "s2s differentiates scipy.special.logsumexp without return_sign (its result is then a pair)"
    return None


@rule(runtime.logsumexp, pure=True, fresh=True, operands=(0, 2), options=logsumexp_options)
@primitive(scipy.special.logsumexp, written_as=runtime.logsumexp)
def logsumexp_(y, a, axis=None, b=None, keepdims=False, return_sign=False):
    """The weights exp(a - y) are the softmax along the axis (y spread back over it)."""
    w = np.exp(a - sum_bar(y, a, axis, keepdims))
    y_dot = np.sum(w * a_dot, axis=axis, keepdims=keepdims)
    a_bar += w * sum_bar(y_bar, a, axis, keepdims)


LOGSUMEXP_SCALED = Case("logsumexp with b", of=(runtime.logsumexp,), when=lambda call: call.given("b"))


@rule(LOGSUMEXP_SCALED)
def logsumexp_scaled(y, a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b exp(a))): a's weights are b exp(a - y), b's exp(a - y), over a and b broadcast."""
    e = np.exp(a - sum_bar(y, a * b, axis, keepdims))
    y_dot = np.sum(b * e * a_dot + e * b_dot, axis=axis, keepdims=keepdims)
    a_bar += unbroadcast(b * e * sum_bar(y_bar, a * b, axis, keepdims), a)
    b_bar += unbroadcast(e * sum_bar(y_bar, a * b, axis, keepdims), b)


@rule(runtime.softmax, pure=True, fresh=True, operands=(0,), batching="along_every_axis")
@primitive(scipy.special.softmax, written_as=runtime.softmax)
def softmax_(y, x, axis=None):
    y_dot = y * (x_dot - np.sum(y * x_dot, axis=axis, keepdims=True))
    x_bar += y * (y_bar - np.sum(y * y_bar, axis=axis, keepdims=True))


@rule(runtime.log_softmax, pure=True, fresh=True, operands=(0,), batching="along_every_axis")
@primitive(scipy.special.log_softmax, written_as=runtime.log_softmax)
def log_softmax_(y, x, axis=None):
    y_dot = x_dot - np.sum(np.exp(y) * x_dot, axis=axis, keepdims=True)
    x_bar += y_bar - np.exp(y) * np.sum(y_bar, axis=axis, keepdims=True)


# ---- scipy.signal.convolve ---------------------------------------------------------------


@rule(runtime.signal_convolve, pure=True, fresh=True)
@primitive("scipy.signal.convolve", written_as=runtime.signal_convolve)  # (by name: scipy.signal is slow to import)
def signal_convolve_(z, in1, in2, mode="full", method="auto"):
    """Bilinear (any method: they differ in rounding only); each argument's adjoint correlates the
    cotangent with the other (runtime.signal_convolve_bar1, _bar2)."""
    z_dot = signal_convolve(in1_dot, in2, mode, method) + signal_convolve(in1, in2_dot, mode, method)
    in1_bar += signal_convolve_bar1(z_bar, in1, in2, mode)
    in2_bar += signal_convolve_bar2(z_bar, in1, in2, mode)


# The adjoints: linear in the cotangent and in the other argument, whose shape alone the argument
# they are the adjoint of gives. Each is the transpose of convolving with the other argument.


@rule(runtime.signal_convolve_bar1, pure=True, fresh=True, shape_argument=1)
def signal_convolve_bar1_(r, g, in1, in2, mode="full"):
    r_dot = signal_convolve_bar1(g_dot, in1, in2, mode) + signal_convolve_bar1(g, in1, in2_dot, mode)
    g_bar += signal_convolve(r_bar, in2, mode)
    in2_bar += signal_convolve_bar2(g, r_bar, in2, mode)


@rule(runtime.signal_convolve_bar2, pure=True, fresh=True, shape_argument=2)
def signal_convolve_bar2_(r, g, in1, in2, mode="full"):
    r_dot = signal_convolve_bar2(g_dot, in1, in2, mode) + signal_convolve_bar2(g, in1_dot, in2, mode)
    g_bar += signal_convolve(in1, r_bar, mode)
    in1_bar += signal_convolve_bar1(g, in1, r_bar, mode)


DECLARATIONS = [
    # the sign of Gamma(x): piecewise constant
    nondifferentiable(runtime.gammasgn, **ONE),
    primitive(scipy.special.gammasgn, written_as=runtime.gammasgn),
    # (scipy.special.jn is jv)
]
