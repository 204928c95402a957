"""Overloads of the helpers of order statistics, NaN-aware reductions and np.cov (runtime/statistics.py).

They reuse the reductions' static-axis machinery (_axis_overload): the reduced axes moved last
and merged, so that np.quantile's weights are computed for the rows of a matrix."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import runtime as rt
from ..statistics import SINGULAR_COVARIANCE_REFUSED, _gradient_bar_last
from .common import _compile, _is_none
from .reductions import _axis_overload, _float_of, _tuple_source


@register_jitable
def _weight_rows(r, q):
    """Each row's quantile weights (runtime.quantile_weights): a stable sort of the row."""
    if not (q >= 0.0 and q <= 1.0):
        raise ValueError("Quantiles must be in the range [0, 1]")
    m, n = r.shape
    w = np.zeros((m, n))
    position = q * (n - 1)
    lo = int(np.floor(position))
    hi = min(lo + 1, n - 1)
    t = position - lo
    for i in range(m):
        order = np.argsort(r[i], kind="mergesort")  # stable, as NumPy's kind="stable"
        w[i, order[lo]] += 1.0 - t
        w[i, order[hi]] += t
    return w


def _number(name, q):
    if not isinstance(q, (types.Number, types.Omitted)):
        raise TypingError(f"s2s: under jit, {name} takes one number q (several: call it once per q)")


def _linear(name, t):
    method, out = t.get("method", "linear"), t.get("out")
    value = getattr(method, "literal_value", getattr(method, "value", method))
    if value != "linear":
        raise TypingError(f"s2s: under jit, {name} takes the linear method only")
    if out is not None and not isinstance(out, types.NoneType) and getattr(out, "value", 0) is not None:
        raise TypingError(f"s2s: under jit, {name} takes no out=")


@_axis_overload(rt.quantile_weights, "x")
def _quantile_weights(t, ax):
    if not isinstance(t["x"], types.Array):
        raise TypingError("s2s: under jit, np.quantile takes an array")
    _number("np.quantile", t["q"])
    return ["shape = x.shape", f"w = _weight_rows({ax.rows('x')}, q).astype(dtype)",
            f"return {ax.unmove('w')}"], {"_weight_rows": _weight_rows, "dtype": _float_of(t["x"])}


def _quantile_primal(name, q):
    def build(t, ax):
        _linear(name, t)
        return [f"return rt.reduce_sum(rt.quantile_weights(a, {q}, {ax.axis}) * a, {ax.axis}, {ax.keep})"], {}
    return build


_axis_overload(rt.quantile, "a")(_quantile_primal("np.quantile", "q"))
_axis_overload(rt.percentile, "a")(_quantile_primal("np.percentile", "q / 100.0"))
_axis_overload(rt.median, "a")(_quantile_primal("np.median", "0.5"))


@overload(rt.quantile_q_refused)
def _quantile_q_refused(q):
    raise TypingError("s2s: np.quantile, np.percentile and np.median are not differentiated with respect to q, "
                      "which depends on a differentiated input here: make q a constant of the derivative")


@overload(rt.singular_covariance)
def _singular_covariance(c):
    return lambda c: c


@register_jitable
def _raise_singular_covariance_refused():
    raise ValueError(SINGULAR_COVARIANCE_REFUSED)


@overload(rt.singular_covariance_refused)
def _singular_covariance_refused(v):
    def impl(v):
        _raise_singular_covariance_refused()  # (at run time: on another call the covariance may be of full rank)
        return v
    return impl


@_axis_overload(rt.nansum, "a")
def _nansum(t, ax):
    return [f"return rt.reduce_sum(np.where(np.isnan(a), 0.0, a), {ax.axis}, {ax.keep})"], {}


@_axis_overload(rt.nanmean, "a")
def _nanmean(t, ax):
    return [f"return rt.reduce_sum(np.where(np.isnan(a), 0.0, a), {ax.axis}, {ax.keep}) "
            f"/ rt.reduce_sum(np.where(np.isnan(a), 0.0, 1.0), {ax.axis}, {ax.keep})"], {}


# ---- np.ptp, np.average ------------------------------------------------------------------


@_axis_overload(rt.ptp, "a")
def _ptp(t, ax):
    return [f"return rt.reduce_max(a, {ax.axis}, {ax.keep}) - rt.reduce_min(a, {ax.axis}, {ax.keep})"], {}


@_axis_overload(rt.average, "a")
def _average(t, ax):
    returned = t.get("returned", False)
    if getattr(returned, "literal_value", getattr(returned, "value", returned)) is not False:
        raise TypingError("s2s: under jit, np.average takes no returned=True")
    return [f"w = rt.average_weights(a, weights, {ax.axis})",
            f"return rt.reduce_sum(w * a, {ax.axis}, {ax.keep}) / rt.reduce_sum(w, {ax.axis}, {ax.keep})"], {}


def _along(t, ax):
    """Whether weights are a 1-d array along the one reduced axis (not of a's shape)."""
    w, a = t["weights"], t["a"]
    if isinstance(w, types.Array) and w.ndim == ax.ndim:
        return False
    if not (isinstance(w, types.Array) and w.ndim == 1 and len(ax.axes) == 1 and t.get("axis") is not None):
        raise TypingError("s2s: under jit, np.average takes weights of a's shape, or 1-d along an int axis")
    return True


@_axis_overload(rt.average_weights, "a")
def _average_weights(t, ax):
    if _is_none(t["weights"]):
        return ["return np.ones(a.shape)"], {}
    if not _along(t, ax):
        return ["return weights * 1.0"], {}
    along = _tuple_source("weights.shape[0]" if k == ax.axes[0] else "1" for k in range(ax.ndim))
    return [f"return np.zeros(a.shape) + weights.reshape({along})"], {}


@_axis_overload(rt.average_weights_bar, "a")
def _average_weights_bar(t, ax):
    if not _along(t, ax):
        return ["return g"], {}
    others = _tuple_source(str(k) for k in range(ax.ndim) if k != ax.axes[0])
    return [f"return rt.reduce_sum(g, {others}, False)"], {}


# ---- np.take -------------------------------------------------------------------------------


def _take_index(t, ax):
    """a[:, ..., indices] for the one (literal) axis; None for axis=None."""
    if t.get("axis") is None or isinstance(t.get("axis"), types.NoneType) or len(ax.axes) != 1:
        return None
    idx = t["indices"]
    if not (isinstance(idx, types.Integer) or isinstance(idx, types.Array) and idx.ndim == 1
            and isinstance(idx.dtype, types.Integer)):
        raise TypingError("s2s: under jit, np.take along an axis takes an integer or a 1-D integer array")
    return ax.axes[0]


@_axis_overload(rt.take_axis, "a")
def _take_axis(t, ax):
    k = _take_index(t, ax)
    if k is None:
        return ["return np.take(a, indices)"], {}
    return [f"return np.ascontiguousarray(a[{':, ' * k}indices])"], {}


@_axis_overload(rt.take_bar, "a")
def _take_bar(t, ax):
    k = _take_index(t, ax)
    dtype = _float_of(t["g"])
    if k is None:
        return ["out = np.zeros(a.size, dtype)", "flat = np.ravel(np.asarray(indices))",
                "values = np.ravel(np.asarray(g)) * np.ones(flat.shape)",
                "for m in range(flat.shape[0]):", "    out[flat[m]] += values[m]",
                "return out.reshape(np.shape(a))"], {"dtype": dtype}
    lines = ["out = np.zeros(a.shape, dtype)"]
    if isinstance(t["indices"], types.Integer):
        lines += [f"out[{':, ' * k}indices] += g"]
    else:
        lines += ["for m in range(indices.shape[0]):", f"    out[{':, ' * k}indices[m]] += g[{':, ' * k}m]"]
    return lines + ["return out"], {"dtype": dtype}


@overload(rt.scatter_add)
def _scatter_add(a, indices, values):
    """np.add.at has no Numba form: the values, spread to the shape a[indices] has, added one
    index at a time."""
    if not isinstance(a, types.Array):
        raise TypingError("s2s: under jit, np.add.at adds into an array")
    if isinstance(indices, types.Integer):
        def one(a, indices, values):
            out = a.copy()
            out[indices] += values
            return out
        return one
    if not (isinstance(indices, types.Array) and isinstance(indices.dtype, types.Integer)):
        raise TypingError("s2s: under jit, np.add.at takes indices along the first axis: an integer or an array "
                          "of integers")

    def each(a, indices, values):
        out = a.copy()
        flat = np.ravel(indices)
        picked = (np.asarray(values) * np.ones(indices.shape + a.shape[1:], out.dtype)).reshape(
            (flat.shape[0],) + a.shape[1:])
        for m in range(flat.shape[0]):
            out[flat[m]] += picked[m]
        return out
    return each


# ---- np.sinc ---------------------------------------------------------------------------------


@register_jitable
def _sinc_slope(v):
    if abs(v) < 1e-3:
        return -(np.pi ** 2) * v / 3.0 + np.pi ** 4 * v ** 3 / 30.0
    p = np.pi * v
    return (np.cos(p) - np.sin(p) / p) / v


@register_jitable
def _sinc_curvature(v):
    if abs(v) < 1e-3:
        return -(np.pi ** 2) / 3.0 + np.pi ** 4 * v ** 2 / 10.0
    return (-np.pi * np.sin(np.pi * v) - 2.0 * _sinc_slope(v)) / v


def _elementwise(scalar):
    def build(x):
        if isinstance(x, (types.Number, types.Boolean)):
            return lambda x: scalar(x)
        if isinstance(x, types.Array):
            def impl(x):
                out = np.empty(x.shape)
                for i, v in np.ndenumerate(x):
                    out[i] = scalar(v)
                return out
            return impl
        raise TypingError("s2s: under jit, np.sinc takes a number or an array")
    return build


overload(rt.sinc_slope)(_elementwise(_sinc_slope))
overload(rt.sinc_curvature)(_elementwise(_sinc_curvature))


@overload(rt.heaviside)
def _heaviside(x1, x2):
    # 0 below the step, 1 above, x2 at it (a NaN x1 gives 0 here, NaN in NumPy)
    return lambda x1, x2: (x1 > 0.0) * 1.0 + (x1 == 0.0) * x2


# ---- np.trapezoid ----------------------------------------------------------------------------


@_axis_overload(rt.trapezoid_weights, "y")
def _trapezoid_weights(t, ax):
    x = t.get("x")
    if _is_none(x):
        lines = ["n = y.shape[" + str(ax.axes[0]) + "]", "d = np.full(max(n - 1, 0), float(dx))"]
    elif isinstance(x, types.Array) and x.ndim == 1:
        lines = ["n = y.shape[" + str(ax.axes[0]) + "]", "d = np.diff(x * 1.0)"]
    else:
        raise TypingError("s2s: under jit, np.trapezoid takes x=None or a 1-d x")
    along = _tuple_source("n" if k == ax.axes[0] else "1" for k in range(ax.ndim))
    lines += ["w = np.zeros(n)", "w[:-1] += d / 2.0", "w[1:] += d / 2.0", f"return np.zeros(y.shape) + w.reshape({along})"]
    return lines, {}


@_axis_overload(rt.trapezoid, "y")
def _trapezoid(t, ax):
    return [f"return rt.reduce_sum(rt.trapezoid_weights(y, x, dx, {ax.axes[0]}) * y, {ax.axes[0]})"], {}


@overload(rt.trapezoid_x_refused)
def _trapezoid_x_refused(x):
    raise TypingError("s2s: np.trapezoid is not differentiated with respect to x or dx (nor np.gradient in its spacing), "
                      "which depend on a differentiated input here: make them constants of the derivative")


# ---- np.gradient -------------------------------------------------------------------------------
# One array along an axis (an int), or a tuple of them along each axis (None, or a tuple of axes:
# their number, and so the result's type, is known when Numba types the call).


def _gradient_types(f, spacing):
    if not (isinstance(f, types.Array) and f.ndim >= 1 and isinstance(spacing, (types.Number, types.Omitted, float, int))):
        raise TypingError("s2s: under jit, np.gradient takes an array and one number as its spacing")
    return f.dtype if isinstance(f.dtype, types.Float) else types.float64


def _gradient_axes(f, axis) -> tuple[list[str], bool]:
    """The axes (as code) np.gradient(f, axis=axis) differentiates along, and whether its result
    is one array."""
    if _is_none(axis):
        axes = [str(a) for a in range(f.ndim)]
    elif isinstance(axis, types.Integer):
        axes = [f"axis % {f.ndim}"]
    elif isinstance(axis, types.BaseTuple):
        axes = [f"axis[{k}] % {f.ndim}" for k in range(len(axis))]
    else:
        raise TypingError("s2s: under jit, np.gradient takes an int or a tuple of ints as its axis")
    return axes, len(axes) == 1


@register_jitable
def _gradient_last(m, h, out):
    out[..., 0] = (m[..., 1] - m[..., 0]) / h
    out[..., -1] = (m[..., -1] - m[..., -2]) / h
    out[..., 1:-1] = (m[..., 2:] - m[..., :-2]) / (2.0 * h)
    return out


_gradient_bar_last = register_jitable(_gradient_bar_last)  # (the python backend's, compiled as it is)


@overload(rt.gradient)
def _gradient(f, spacing=1.0, axis=None, edge_order=1):
    dtype = _gradient_types(f, spacing)
    axes, single = _gradient_axes(f, axis)
    lines = ["def impl(f, spacing=1.0, axis=None, edge_order=1):", "    h = float(spacing)"]
    for k, a in enumerate(axes):
        lines += [f"    m = np.moveaxis(f, {a}, -1)",
                  f"    r{k} = np.ascontiguousarray(np.moveaxis(last(m, h, np.empty(m.shape, dtype)), -1, {a}))"]
    lines.append("    return r0" if single else f"    return ({', '.join(f'r{k}' for k in range(len(axes)))},)")
    return _compile("\n".join(lines) + "\n", "impl", dtype=dtype, last=_gradient_last)


@overload(rt.gradient_bar)
def _gradient_bar(g, f, spacing=1.0, axis=None):
    dtype = _gradient_types(f, spacing)
    axes, single = _gradient_axes(f, axis)
    lines = ["def impl(g, f, spacing=1.0, axis=None):", "    h = float(spacing)", "    out = np.zeros(f.shape, dtype)"]
    for k, a in enumerate(axes):
        part = "g" if single else f"g[{k}]"
        lines += [f"    m = np.moveaxis({part}, {a}, -1)",
                  f"    out += np.moveaxis(last(m, h, np.zeros(m.shape, dtype)), -1, {a})"]
    lines.append("    return out")
    return _compile("\n".join(lines) + "\n", "impl", dtype=dtype, last=_gradient_bar_last)


# ---- np.cov -------------------------------------------------------------------------------
# m: a 1-d array (one variable) or a 2-d array of real numbers; rowvar may be a variable (the
# layouts differ at run time only).

def _cov_data(m):
    if not (isinstance(m, types.Array) and m.ndim in (1, 2) and isinstance(m.dtype, (types.Float, types.Integer))):
        raise TypingError("s2s: under jit, np.cov is differentiated of a 1-d or 2-d array of real numbers")


@register_jitable
def _centered_rows(x):
    """x (a new float array, one variable per row) less each row's mean, in place."""
    for i in range(x.shape[0]):
        x[i] -= np.mean(x[i])
    return x


@overload(rt.cov_centered)
def _cov_centered(m, rowvar=True):
    _cov_data(m)
    if m.ndim == 1:
        return lambda m, rowvar=True: _centered_rows(m.astype(np.float64).reshape((1, m.shape[0])))
    return lambda m, rowvar=True: _centered_rows(np.ascontiguousarray(m.astype(np.float64) if rowvar
                                                                      else m.T.astype(np.float64)))


@overload(rt.cov_centered_bar)
def _cov_centered_bar(g, m, rowvar=True):
    _cov_data(m)
    if m.ndim == 1:
        return lambda g, m, rowvar=True: _centered_rows(g.astype(np.float64))[0]
    return lambda g, m, rowvar=True: (_centered_rows(g.astype(np.float64)) if rowvar
                                      else np.ascontiguousarray(_centered_rows(g.astype(np.float64)).T))


@register_jitable
def _inverse_degrees(n, bias, ddof):
    fact = n - (ddof if ddof is not None else (0 if bias else 1))
    return 1.0 / fact if fact > 0 else np.inf  # (NumPy warns, and divides by 0)


@overload(rt.cov_scale)
def _cov_scale(m, rowvar=True, bias=False, ddof=None):
    _cov_data(m)
    if m.ndim == 1:
        return lambda m, rowvar=True, bias=False, ddof=None: _inverse_degrees(m.shape[0], bias, ddof)
    return lambda m, rowvar=True, bias=False, ddof=None: _inverse_degrees(m.shape[1] if rowvar else m.shape[0],
                                                                          bias, ddof)


@overload(rt.cov_result)
def _cov_result(a, m):
    _cov_data(m)
    if m.ndim == 1:
        def one_variable(a, m):
            out = np.empty(())
            out[()] = a[0, 0]
            return out
        return one_variable
    return lambda a, m: a.copy()


@overload(rt.cov_square)
def _cov_square(g, x):
    if isinstance(g, types.Array) and g.ndim == 2:
        return lambda g, x: g.copy()
    if isinstance(g, types.Array) and g.ndim == 0:
        return lambda g, x: np.full((1, 1), g[()])
    if isinstance(g, (types.Float, types.Integer)):
        return lambda g, x: np.full((1, 1), g)
    raise TypingError("s2s: under jit, the adjoint of np.cov is a number or a square matrix")


# ---- np.corrcoef ----------------------------------------------------------------------------


def _matrix(*ts):
    if not all(isinstance(t, types.Array) and t.ndim == 2 for t in ts):
        raise TypingError("s2s: under jit, np.corrcoef is differentiated of a 1-d or 2-d array of real numbers")


# (the helpers are NumPy that Numba compiles as it is: each overload is the helper itself)


@overload(rt.corrcoef_scales)
def _corrcoef_scales(x):
    _matrix(x)
    return rt.corrcoef_scales


@overload(rt.corrcoef_tangent)
def _corrcoef_tangent(h, r, scales):
    _matrix(h, r)
    return rt.corrcoef_tangent


@overload(rt.corrcoef_gram_bar)
def _corrcoef_gram_bar(r_bar, r, scales):
    _matrix(r_bar, r)
    return rt.corrcoef_gram_bar
