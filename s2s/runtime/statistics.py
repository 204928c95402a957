"""Helpers of the rules for order statistics and NaN-aware reductions (templates/array_rules.py,
section "statistics"): np.quantile, np.percentile and np.median, np.nansum and
np.nanmean. Their Numba overloads are in overloads/statistics.py."""

from __future__ import annotations

import numpy as np

__all__ = ["quantile_weights", "quantile_q_refused", "quantile", "percentile", "median", "nansum", "nanmean",
           "quantile_options", "nan_reduction_options", "ptp", "average", "average_options", "average_weights",
           "average_weights_bar", "take_axis", "take_bar", "scatter_add", "sinc_slope", "sinc_curvature",
           "cross_options", "heaviside", "trapezoid", "trapezoid_weights", "trapezoid_x_refused",
           "gradient", "gradient_bar", "gradient_options", "cov_options", "cov_centered", "cov_centered_bar",
           "cov_scale", "cov_result", "cov_square", "corrcoef_options", "corrcoef_scales",
           "corrcoef_tangent", "corrcoef_gram_bar", "singular_covariance", "singular_covariance_refused"]


def quantile_options(q=None, axis=None, out=None, overwrite_input=False, method="linear", **_) -> str | None:
    """np.quantile, np.percentile and np.median are differentiated with the linear method, one
    number q and an int axis or none (rules: Facts.options)."""
    if method != "linear":
        return f"method={method!r} is not differentiated (the default, 'linear', is)"
    if isinstance(q, (tuple, list)):
        return "several quantiles at once are not differentiated: call the function once per q"
    if isinstance(axis, (tuple, list)):
        return "a tuple of axes is not differentiated: reshape the axes into one first"
    if out is not None:
        return "out= is not differentiated: use the returned value"
    return None


def nan_reduction_options(dtype=None, out=None, **_) -> str | None:
    if dtype is not None or out is not None:
        return "dtype= and out= are not differentiated: convert the argument, use the returned value"
    return None


def quantile_weights(x, q, axis=None):
    """W of x's shape with np.quantile(x, q, axis) == np.sum(W * x, axis) (NumPy's 'linear'
    method): 1 - t on the element of sorted position floor(q (n - 1)), t on the next. The
    positions are those of a stable argsort, so at ties the weight goes to the equal elements
    in index order (a valid subgradient). W is piecewise constant in x: its derivative is 0.
    q: one number in [0, 1]."""
    if np.ndim(q) != 0:
        raise ValueError("s2s: quantiles are differentiated for one number q at a time")
    if isinstance(axis, (tuple, list)):
        raise ValueError("s2s: quantiles are differentiated over one axis or all: reshape the axes into one first")
    q = float(q)
    if not 0.0 <= q <= 1.0:
        raise ValueError("Quantiles must be in the range [0, 1]")
    x = np.asarray(x)
    moved = np.ravel(x) if axis is None else np.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    rows = np.reshape(moved, (-1, n))
    order = np.argsort(rows, axis=-1, kind="stable")
    position = q * (n - 1)
    lo = int(np.floor(position))
    hi = min(lo + 1, n - 1)
    t = position - lo
    w = np.zeros(rows.shape, dtype=np.result_type(x, 1.0))
    every = np.arange(rows.shape[0])
    w[every, order[:, lo]] += 1.0 - t
    w[every, order[:, hi]] += t
    if axis is None:
        return np.reshape(w, x.shape)
    return np.moveaxis(np.reshape(w, moved.shape), -1, axis)


def quantile_q_refused(q):
    """Where q depends on a differentiated input: the rules do not differentiate in q (their
    q lines call this, so the call is refused there)."""
    raise ValueError("s2s: np.quantile, np.percentile and np.median are not differentiated with respect to q, "
                     "which depends on a differentiated input here: make q a constant of the derivative")


# The primals under Numba (whose own take no axis): the weighted sum, as NumPy's lerp up to rounding.


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return np.quantile(a, q, axis=axis, method=method, keepdims=keepdims)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return np.percentile(a, q, axis=axis, method=method, keepdims=keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return np.median(a, axis=axis, keepdims=keepdims)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    return np.nansum(a, axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    return np.nanmean(a, axis=axis, keepdims=keepdims)


# ---- np.ptp, np.average ------------------------------------------------------------------


def ptp(a, axis=None, out=None, keepdims=False):
    return np.ptp(a, axis=axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    return np.average(a, axis=axis, weights=weights, keepdims=keepdims)


def average_options(returned=False, axis=None, **_) -> str | None:
    if returned is not False:
        return "returned=True is not differentiated: compute the sum of the weights with np.sum"
    if isinstance(axis, (tuple, list)):
        return "np.average over a tuple of axes is not differentiated: reshape the axes into one first"
    return None


def average_weights(a, weights, axis=None):
    """np.average's weights as a float array of a's shape: ones where there are none; a 1-d
    array of a.shape[axis] weights spread along that axis, as NumPy reads it. Linear in weights."""
    shape = np.shape(a)
    if weights is None:
        return np.ones(shape)
    w = np.asarray(weights) * 1.0
    if w.shape == shape:
        return w
    if isinstance(axis, (tuple, list)) or axis is None or w.ndim != 1:
        raise ValueError("s2s: np.average's weights differ in shape from a: give one weight per element, "
                         "or a 1-d array of weights along an int axis")
    along = [1] * len(shape)
    along[axis] = w.shape[0]
    return np.broadcast_to(np.reshape(w, along), shape) * 1.0


def average_weights_bar(g, a, weights, axis=None):
    """Adjoint of average_weights in weights: g (a's shape) summed back to the weights' shape."""
    if np.shape(weights) == np.shape(g):
        return g
    ndim = np.ndim(g)
    return np.sum(g, axis=tuple(k for k in range(ndim) if k != axis % ndim))


# ---- np.take -------------------------------------------------------------------------------


def take_axis(a, indices, axis=None, out=None, mode="raise"):
    """np.take (Numba's takes no axis): under Numba generated code calls this instead."""
    return np.take(a, indices, axis=axis, mode=mode)


def take_bar(g, a, indices, axis=None):
    """Adjoint of np.take(a, indices, axis): g added back where each element came from
    (repeated indices accumulate)."""
    out = np.zeros(np.shape(a), dtype=np.result_type(g, 0.0))
    if axis is None:
        np.add.at(np.ravel(out), indices, g)  # out is new and contiguous: ravel is a view
    else:
        np.add.at(out, (slice(None),) * (axis % np.ndim(a)) + (indices,), g)
    return out


def scatter_add(a, indices, values):
    """The statement np.add.at(a, indices, values) as generated code writes it, a = scatter_add(a,
    indices, values): values added into a copy of a at indices along its first axis (an integer,
    or an array of integers), repeated indices accumulating. The copy keeps what a held for the
    reverse sweep, as `a += v` is written a = a + v."""
    if not (isinstance(indices, (int, np.integer)) or isinstance(indices, np.ndarray) and indices.dtype.kind in "iu"):
        raise ValueError(f"s2s: np.add.at is differentiated with indices along the first axis: an integer or an array "
                         f"of integers, not {type(indices).__name__}"
                         + (f" of {indices.dtype}" if isinstance(indices, np.ndarray) else "")
                         + "; for several axes, index a raveled copy (np.ravel_multi_index)")
    out = np.array(a, copy=True)
    np.add.at(out, indices, values)
    return out


# ---- np.sinc ---------------------------------------------------------------------------------
# sinc(x) = sin(pi x) / (pi x): x s = sin(pi x) / pi gives s' = (cos(pi x) - s) / x and
# s'' = (-pi sin(pi x) - 2 s') / x. Near 0 these cancel: their Taylor series there (s'(0) = 0,
# s''(0) = -pi^2 / 3).

_SMALL = 1e-3


def sinc_slope(x):
    """d/dx np.sinc(x), 0 at x = 0."""
    x = np.asarray(x, dtype=np.result_type(x, 0.0))
    small = np.abs(x) < _SMALL
    safe = np.where(small, 1.0, x)
    p = np.pi * x
    far = (np.cos(p) - np.sinc(x)) / safe
    near = -(np.pi ** 2) * x / 3.0 + np.pi ** 4 * x ** 3 / 30.0
    out = np.where(small, near, far)
    return out if out.ndim else out[()]


def sinc_curvature(x):
    """d2/dx2 np.sinc(x), -pi^2 / 3 at x = 0."""
    x = np.asarray(x, dtype=np.result_type(x, 0.0))
    small = np.abs(x) < _SMALL
    safe = np.where(small, 1.0, x)
    far = (-np.pi * np.sin(np.pi * x) - 2.0 * sinc_slope(x)) / safe
    near = -(np.pi ** 2) / 3.0 + np.pi ** 4 * x ** 2 / 10.0
    out = np.where(small, near, far)
    return out if out.ndim else out[()]


def cross_options(axisa=-1, axisb=-1, axisc=-1, axis=None, **_) -> str | None:
    """np.cross is differentiated for 3-vectors along the last axis (rules: Facts.options)."""
    if (axisa, axisb, axisc, axis) != (-1, -1, -1, None):
        return "np.cross is differentiated with its vectors along the last axis only: np.moveaxis them there first"
    return None


def heaviside(x1, x2):
    """np.heaviside, which Numba lacks: under Numba generated code calls this instead."""
    return np.heaviside(x1, x2)


# ---- np.trapezoid ----------------------------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """np.trapezoid, which Numba lacks: under Numba generated code calls this instead."""
    return np.trapezoid(y, x, dx, axis)


def trapezoid_weights(y, x=None, dx=1.0, axis=-1):
    """W of y's shape with np.trapezoid(y, x, dx, axis) == np.sum(W * y, axis): half of each
    neighbouring spacing. x: None (spacing dx), 1-d along the axis, or of y's shape."""
    y = np.asarray(y)
    n = y.shape[axis]
    if x is None:
        d = np.full(max(n - 1, 0), float(dx))
    else:
        x = np.asarray(x)
        d = np.diff(x) if x.ndim == 1 else np.diff(np.moveaxis(x, axis, -1), axis=-1)
    w = np.zeros(d.shape[:-1] + (n,), dtype=np.result_type(y, d, 0.0))
    w[..., :-1] += d / 2.0
    w[..., 1:] += d / 2.0
    return np.moveaxis(np.broadcast_to(w, np.moveaxis(y, axis, -1).shape), -1, axis)


def trapezoid_x_refused(x):
    """Where np.trapezoid's x or dx depends on a differentiated input (the rule's lines call this)."""
    raise ValueError("s2s: np.trapezoid is not differentiated with respect to x or dx (nor np.gradient in its spacing), "
                     "which depend on a differentiated input here: make them constants of the derivative")


# ---- np.gradient ------------------------------------------------------------------------------
# Of an array of any ndim with one number as its spacing, along one axis (an array) or several (a
# tuple of arrays, one per axis, as NumPy gives): central differences inside, one-sided at the ends.


def gradient_options(axis=None, edge_order=1, **_) -> str | None:
    if edge_order != 1:
        return "np.gradient is differentiated with edge_order=1 only"
    return None


def _spacing(f, spacing):
    if np.ndim(f) < 1 or np.ndim(spacing) != 0:
        raise ValueError("s2s: np.gradient is differentiated with one number as its spacing: write the "
                         "differences with slices (f[2:] - f[:-2]) for other forms")
    return float(spacing)


def _gradient_axes(f, axis) -> tuple[tuple, bool]:
    """The axes np.gradient(f, axis=axis) differentiates along, and whether its result is one
    array (one axis) rather than a tuple of them."""
    nd = np.ndim(f)
    axes = tuple(range(nd)) if axis is None else (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(int(a) % nd for a in axes)
    return axes, len(axes) == 1


def gradient(f, spacing=1.0, axis=None, edge_order=1):
    """np.gradient with one number as spacing (Numba lacks np.gradient)."""
    _spacing(f, spacing)
    found = np.gradient(f, spacing, axis=axis, edge_order=edge_order)
    return tuple(found) if isinstance(found, (list, tuple)) else found


def _gradient_bar_last(g, h, out):
    """out plus the transpose of np.gradient along g's last axis, spacing h (plain NumPy
    slicing: the Numba form, overloads/statistics.py, compiles this function itself)."""
    out[..., 0] -= g[..., 0] / h
    out[..., 1] += g[..., 0] / h
    out[..., -1] += g[..., -1] / h
    out[..., -2] -= g[..., -1] / h
    out[..., 2:] += g[..., 1:-1] / (2.0 * h)
    out[..., :-2] -= g[..., 1:-1] / (2.0 * h)
    return out


def gradient_bar(g, f, spacing=1.0, axis=None):
    """Adjoint of np.gradient(f, spacing, axis=axis): for each axis, the transpose of its
    differences (one-sided at the ends, central inside) applied to that axis's adjoint, summed."""
    h = _spacing(f, spacing)
    axes, single = _gradient_axes(f, axis)
    parts = (g,) if single else tuple(g)
    out = np.zeros(np.shape(f), dtype=np.result_type(*parts, 0.0))
    for a, part in zip(axes, parts):
        last = np.moveaxis(np.asarray(part), a, -1)
        added = _gradient_bar_last(last, h, np.zeros(last.shape, np.result_type(last, 0.0)))
        out += np.moveaxis(added, -1, a)
    return out


# ---- np.cov -------------------------------------------------------------------------
# np.cov(m) = X X^T / (N - ddof), X m's variables as rows less their means, squeezed: the
# derivative of one data set with a constant divisor, no weights (rules: a second data set y,
# fweights and aweights are refused where m is differentiated, analysis/activity.py).


def cov_options(dtype=None, **_) -> str | None:
    if dtype is not None:
        return "np.cov(..., dtype=...) is not differentiated: convert the result with .astype(dtype)"
    return None


def _cov_rows(m, rowvar):
    x = np.array(m, ndmin=2, dtype=np.result_type(m, np.float64))
    if np.ndim(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    return x.T if not rowvar and np.ndim(m) != 1 else x


def cov_centered(m, rowvar=True):
    """The observations as np.cov(m, rowvar=rowvar) reads them: one variable per row (a 1-d m is
    one variable), each row less its mean. Linear in m."""
    x = _cov_rows(m, rowvar)
    return x - np.mean(x, axis=1, keepdims=True)


def cov_centered_bar(g, m, rowvar=True):
    """Adjoint of cov_centered in m: g's rows less their means (centering is its own transpose),
    back in m's layout and shape."""
    centered = g - np.mean(g, axis=1, keepdims=True)
    return np.reshape(centered.T if not rowvar and np.ndim(m) != 1 else centered, np.shape(m))


def cov_scale(m, rowvar=True, bias=False, ddof=None):
    """1 / (N - ddof) of np.cov (N observations; ddof 1, or 0 with bias): NumPy's divisor, 0 where
    there are no degrees of freedom left (it warns, and divides by 0)."""
    if ddof is None:
        ddof = 0 if bias else 1
    fact = _cov_rows(m, rowvar).shape[1] - ddof
    with np.errstate(divide="ignore"):
        return np.true_divide(1, fact if fact > 0 else 0.0)


def cov_result(a, m):
    """The k x k matrix a as np.cov gives its result: squeezed (a 0-d array of one variable)."""
    return np.squeeze(a)


def cov_square(g, x):
    """g (the shape of np.cov's result) as the k x k matrix of x's k variables: cov_result's transpose."""
    return np.reshape(g, (np.shape(x)[0], np.shape(x)[0]))


# ---- np.corrcoef -------------------------------------------------------------------
# r = G / sqrt(g g^T) for the Gram matrix G = X X^T of the centred variables and its diagonal g
# (np.cov's divisor cancels), clipped to [-1, 1]. First derivatives: the helpers below are
# primal values of the rule and have no rules of their own (a second derivative through
# np.corrcoef is refused, naming the statement). Numba compiles them as they are.


def corrcoef_options(dtype=None, **_) -> str | None:
    if dtype is not None:
        return "np.corrcoef(..., dtype=...) is not differentiated: convert the result with .astype(dtype)"
    return None


def corrcoef_scales(x):
    """1 / sqrt(g) of the centred variables x (rows): the inverse standard deviations, but for
    np.cov's divisor, which np.corrcoef cancels."""
    return 1.0 / np.sqrt(np.sum(x * x, axis=1))


def corrcoef_tangent(h, r, scales):
    """r's tangent from h = X_dot X^T (G_dot = h + h^T): G_dot s s^T - r (q_i + q_j) / 2, with
    q = diag(G_dot) s^2, r the k x k correlations and s their scales."""
    g_dot = h + h.T
    q = np.diag(g_dot) * scales * scales
    return g_dot * np.outer(scales, scales) - 0.5 * r * (q[:, None] + q[None, :])


def corrcoef_gram_bar(r_bar, r, scales):
    """The adjoint of X X^T's symmetric part from r's (k x k): the transpose of corrcoef_tangent,
    plus its transpose (m's adjoint is this times X)."""
    p = r_bar * r
    diagonal = -0.5 * (np.sum(p, axis=1) + np.sum(p, axis=0)) * scales * scales
    g_bar = r_bar * np.outer(scales, scales) + np.diag(diagonal)
    return g_bar + g_bar.T


# ---- a covariance of lower rank (scipy.stats.multivariate_normal with allow_singular) -----------

SINGULAR_COVARIANCE_REFUSED = (
    "s2s: multivariate_normal(allow_singular=True) of a covariance of lower rank has no derivative with respect "
    "to the covariance (a change in most directions changes its rank, and the density jumps): make the "
    "covariance a constant of the derivative, or pass one of full rank")


def singular_covariance(c):
    """c itself, a covariance of lower rank that a density is computed from (scipy_forms/stats.py):
    its rule's lines call singular_covariance_refused, so a derivative with respect to it raises."""
    return c


def singular_covariance_refused(v):
    """Where a derivative flows through singular_covariance: raises (at run time: the covariance
    may be of full rank on other calls of the same code)."""
    raise ValueError(SINGULAR_COVARIANCE_REFUSED)
