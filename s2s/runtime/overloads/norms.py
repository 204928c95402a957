"""Overloads of the derivatives of np.linalg.norm (runtime/norms.py) for what Numba's
np.linalg.norm takes: a vector or a matrix, no axis. The ord is a number (a vector norm's p,
or 1, -1, 2, -2, inf, -inf of a matrix), None, or 'fro' / 'nuc' of a matrix."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import runtime as rt
from .common import _is_false, _is_none, _nd

FRO, NUC, NUMBER = 0, 1, 2


@register_jitable
def _vector_d(x, y, p):
    if y == 0:
        return np.zeros(x.shape)
    if p == 2.0:
        return x / y
    if p == 1.0:
        return np.sign(x) * 1.0
    if p == np.inf or p == -np.inf:
        a = np.abs(x)
        hits = (a == (np.max(a) if p > 0 else np.min(a))) * 1.0
        return np.sign(x) * (hits / np.sum(hits))
    if p == 0.0:
        return np.zeros(x.shape)
    return np.sign(x) * (np.abs(x) ** (p - 1) / y ** (p - 1))


@register_jitable
def _matrix_d(x, y, kind, p):
    if y == 0:
        return np.zeros(x.shape)
    if kind == FRO:
        return x / y
    if kind == NUC or p == 2.0 or p == -2.0:
        u, s, vt = np.linalg.svd(np.ascontiguousarray(x * 1.0), full_matrices=False)
        if kind == NUC:
            return u @ vt
        k = 0 if p == 2.0 else s.shape[0] - 1  # singular values come largest first
        return np.outer(u[:, k], vt[k, :])
    if p == 1.0 or p == -1.0:  # the column of largest (smallest) absolute sum
        sums = np.sum(np.abs(x), axis=0)
        hits = (sums == (np.max(sums) if p > 0 else np.min(sums))) * 1.0
        return np.sign(x) * (hits / np.sum(hits))
    if p == np.inf or p == -np.inf:  # the row
        sums = np.sum(np.abs(x), axis=1)
        hits = (sums == (np.max(sums) if p > 0 else np.min(sums))) * 1.0
        return np.sign(x) * (hits / np.sum(hits)).reshape((-1, 1))
    raise ValueError("s2s: np.linalg.norm of a matrix takes ord None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")


def _kinds(x, ord, axis, keepdims, what):
    """(ord is a number, ord is a string): the norms s2s.jit takes, else a TypingError."""
    number = isinstance(ord, (types.Integer, types.Float))
    text = isinstance(ord, (types.UnicodeType, types.StringLiteral))
    if not (keepdims is False or _is_false(keepdims)) or not (_is_none(axis) or isinstance(axis, types.Integer)
                                                              and _nd(x) == 2 and not text):
        raise TypingError(f"s2s: under s2s.jit, the {what} of np.linalg.norm takes no keepdims, and an axis "
                          "only as one int axis of a matrix (vector norms of its rows or columns)")
    return number, text


@register_jitable
def _rows_first(x, axis):
    """The vectors an int axis of a matrix reduces, as rows."""
    return np.ascontiguousarray(x.T) if axis % 2 == 0 else np.ascontiguousarray(x)


@overload(rt.linalg_norm)
def _linalg_norm(x, ord=None, axis=None, keepdims=False):
    number, text = _kinds(x, ord, axis, keepdims, "value")
    if isinstance(axis, types.Integer):
        def by_axis(x, ord=None, axis=None, keepdims=False):
            rows = _rows_first(x, axis)
            out = np.empty(rows.shape[0])
            for i in range(rows.shape[0]):
                out[i] = np.linalg.norm(rows[i], ord)
            return out
        return by_axis
    if text and _nd(x) == 2:
        def by_name(x, ord=None, axis=None, keepdims=False):
            if ord == "nuc":
                return np.sum(np.linalg.svd(np.ascontiguousarray(x * 1.0))[1])
            if ord != "fro":
                raise ValueError("Invalid norm order for matrices.")
            return np.sqrt(np.sum(x * x))
        return by_name
    return lambda x, ord=None, axis=None, keepdims=False: np.linalg.norm(x, ord)


@register_jitable
def _vector_d_rows(x, y, p, axis):
    """D of the vector norms along an int axis of a matrix."""
    rows = _rows_first(x, axis)
    d = np.empty(rows.shape)
    for i in range(rows.shape[0]):
        d[i] = _vector_d(rows[i], y[i], p)
    return d.T if axis % 2 == 0 else d


def _derivative(x, ord, axis, keepdims, what):
    """A function (x, y, ord, axis) -> D for these types, or a TypingError."""
    number, text = _kinds(x, ord, axis, keepdims, what)
    if isinstance(axis, types.Integer):
        if _is_none(ord):
            return lambda x, y, ord, axis: _vector_d_rows(x, y, 2.0, axis)
        return lambda x, y, ord, axis: _vector_d_rows(x, y, float(ord), axis)
    if _nd(x) == 1 and (number or _is_none(ord)):
        if _is_none(ord):
            return lambda x, y, ord, axis: _vector_d(x, y, 2.0)
        return lambda x, y, ord, axis: _vector_d(x, y, float(ord))
    if _nd(x) == 2 and (number or text or _is_none(ord)):
        if _is_none(ord):
            return lambda x, y, ord, axis: _matrix_d(x, y, FRO, 0.0)
        if text:
            return lambda x, y, ord, axis: _matrix_d(x, y, NUC if ord == "nuc" else FRO, 0.0)
        return lambda x, y, ord, axis: _matrix_d(x, y, NUMBER, float(ord))
    raise TypingError(f"s2s: under s2s.jit, the {what} of np.linalg.norm takes a vector or a matrix and "
                      f"ord None, a number, 'fro' or 'nuc' (got a {_nd(x)}-d array, ord {ord})")


@overload(rt.norm_bar)
def _norm_bar(g, y, x, ord=None, axis=None, keepdims=False):
    d = register_jitable(_derivative(x, ord, axis, keepdims, "derivative"))

    if isinstance(axis, types.Integer):
        def by_axis(g, y, x, ord=None, axis=None, keepdims=False):
            if axis % 2 == 0:
                return d(x, y, ord, axis) * g.reshape((1, -1))
            return d(x, y, ord, axis) * g.reshape((-1, 1))
        return by_axis

    def impl(g, y, x, ord=None, axis=None, keepdims=False):
        return g * d(x, y, ord, axis)

    return impl


@overload(rt.norm_dot)
def _norm_dot(x_dot, y, x, ord=None, axis=None, keepdims=False):
    d = register_jitable(_derivative(x, ord, axis, keepdims, "derivative"))

    if isinstance(axis, types.Integer):
        def by_axis(x_dot, y, x, ord=None, axis=None, keepdims=False):
            return np.sum(d(x, y, ord, axis) * x_dot, axis=axis % 2)
        return by_axis

    def impl(x_dot, y, x, ord=None, axis=None, keepdims=False):
        return np.sum(d(x, y, ord, axis) * x_dot)

    return impl


@register_jitable
def _two_norm_curvature(g, y, x, x_dot):
    """Along x_dot, g * D changes by g (x_dot - x y_dot / y) / y where D = x / y."""
    if y == 0:
        return np.zeros(x.shape)
    y_dot = np.sum(x * x_dot) / y
    return g * (x_dot - x * (y_dot / y)) / y


@register_jitable
def _svd_curvature(x, x_dot, nuc, largest):
    """runtime/norms.py's _svd_curvature for one matrix: dD along x_dot for ord 2, -2, 'nuc'."""
    m = np.ascontiguousarray(x * 1.0)
    e = np.zeros(m.shape) + x_dot
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    v = np.ascontiguousarray(vt.T)
    f = u.T @ e @ v
    rows, cols = m.shape
    r = s.shape[0]
    tiny = 1e-12 * (s[0] if r > 0 and s[0] != 0 else 1.0)  # (singular values come largest first)
    if nuc:
        for i in range(r):
            if s[i] <= tiny:
                raise ValueError("s2s: the second derivative of np.linalg.norm(A, 'nuc') needs a matrix of full "
                                 "rank, and A here has a zero singular value: the norm is not twice "
                                 "differentiable there; perturb A, or use ord='fro'")
        inner = np.empty((r, r))
        for i in range(r):
            for j in range(r):
                inner[i, j] = (f[i, j] - f[j, i]) / (s[i] + s[j])
        out = u @ inner @ vt
        if rows > cols:
            out = out + (e - u @ (u.T @ e)) @ (v / s.reshape((1, -1))) @ vt
        if cols > rows:
            out = out + (u / s.reshape((1, -1))) @ u.T @ (e - (e @ v) @ vt)
        return out
    k = 0 if largest else r - 1
    sk = s[k]
    a = np.zeros(r)
    b = np.zeros(r)
    for j in range(r):
        if j != k:
            gap = sk * sk - s[j] * s[j]
            if abs(gap) <= tiny * abs(sk) + tiny * tiny:
                raise ValueError("s2s: the second derivative of np.linalg.norm(A, 2) (or -2) needs a singular "
                                 "value distinct from the others, and A here has a repeated one: the norm is "
                                 "not twice differentiable there; perturb A, or use ord='fro'")
            a[j] = (sk * f[j, k] + s[j] * f[k, j]) / gap
            b[j] = (s[j] * f[j, k] + sk * f[k, j]) / gap
    if rows != cols and sk <= tiny:
        raise ValueError("s2s: the second derivative of np.linalg.norm(A, -2) needs a nonzero singular value, "
                         "and A here has a zero one: the norm is not twice differentiable there")
    uk = np.ascontiguousarray(u[:, k])
    vk = np.ascontiguousarray(v[:, k])
    du = u @ a
    dv = v @ b
    if rows > cols:
        ev = e @ vk
        du = du + (ev - u @ (u.T @ ev)) / sk
    if cols > rows:
        eu = e.T @ uk
        dv = dv + (eu - v @ (v.T @ eu)) / sk
    return np.outer(du, vk) + np.outer(uk, dv)


@register_jitable
def _number_curvature(g, y, x, x_dot, p, matrix):
    if not matrix and p == 2.0:
        return _two_norm_curvature(g, y, x, x_dot)
    if matrix and (p == 2.0 or p == -2.0):
        return g * _svd_curvature(x, x_dot, False, p == 2.0)
    if p == 1.0 or p == np.inf or p == -np.inf or (matrix and p == -1.0) or (not matrix and p == 0.0):
        return np.zeros(x.shape)  # D is piecewise constant
    raise ValueError("s2s: second derivatives of np.linalg.norm are implemented for ord None, 'fro', 1, -1, 2, "
                     "-2, 'nuc' (of a matrix), inf, -inf, 0 and 2 (of a vector)")


@overload(rt.norm_bar_curvature)
def _norm_bar_curvature(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
    _derivative(x, ord, axis, keepdims, "second derivative")
    if not _is_none(axis):
        raise TypingError("s2s: under s2s.jit, second derivatives of np.linalg.norm take no axis")
    if _is_none(ord):
        return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _two_norm_curvature(g, y, x, x_dot)
    if isinstance(ord, (types.UnicodeType, types.StringLiteral)):
        def impl(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
            if ord == "nuc":
                return g * _svd_curvature(x, x_dot, True, True)
            return _two_norm_curvature(g, y, x, x_dot)
        return impl
    matrix = _nd(x) == 2
    return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _number_curvature(
        g, y, x, x_dot, float(ord), matrix)
