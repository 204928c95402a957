"""Derivatives of np.linalg.norm for every ord NumPy takes, with axis and keepdims.

Every norm is positively homogeneous, so its derivative is one array D shaped like x (the
gradient of each norm with respect to the elements it reduces): the tangent is the sum of
D * x_dot over the reduced axes, the adjoint g * D. What D is depends on whether NumPy takes
a vector norm (x 1-d with axis=None, an int axis, or a 1-tuple) or a matrix norm (x 2-d with
axis=None, or a 2-tuple axis):

    vector  None, 2      x / |x|                 1      sign(x)
            inf, -inf    sign(x) at the largest (smallest) |x|, ties sharing it, as np.max's
            0            0 (a count)             p      sign(x) |x|^(p-1) / |x|_p^(p-1)
    matrix  None, 'fro'  x / |x|_F               'nuc'  U V^T (the reduced SVD)
            2, -2        u v^T of the largest (smallest) singular value
            1, -1        sign(x) in the column of largest (smallest) absolute sum; inf, -inf: row

A norm is not differentiable where it is zero (x = 0): D is 0 there, as for np.abs at 0.
"""

from __future__ import annotations

import numpy as np

from .values import _expand

__all__ = ["linalg_norm", "norm_bar", "norm_bar_curvature", "norm_curvature_options", "norm_dot", "norm_options"]

VECTOR_ORDS = "None, 2, 1, np.inf, -np.inf, 0 or another number"
MATRIX_ORDS = "None, 'fro', 'nuc', 1, -1, 2, -2, np.inf or -np.inf"


def linalg_norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm, which generated code calls under Numba where it has an ord or an axis:
    Numba's takes no axis and no 'fro' or 'nuc' (overloads/norms.py)."""
    return np.linalg.norm(x, ord, axis, keepdims)


def norm_curvature_options(ord=None, axis=None, keepdims=False, **_) -> str | None:
    """What second derivatives of np.linalg.norm (the derivative of norm_bar) do not take."""
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        return f"second derivatives of np.linalg.norm are not implemented for ord={ord!r}"
    return None


def norm_options(ord=None, axis=None, keepdims=False, **_) -> str | None:
    """What is wrong with the static options of a call of np.linalg.norm, or None: checked
    when s2s transforms it, where the values are written in the call (rules: Facts.options)."""
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        return f"np.linalg.norm takes ord={ord!r} nowhere (NumPy knows 'fro' and 'nuc')"
    if ord is not None and not isinstance(ord, (str, int, float, np.number)):
        return f"np.linalg.norm takes a number, 'fro' or 'nuc' as ord, not {type(ord).__name__}"
    if isinstance(axis, tuple) and len(axis) not in (1, 2):
        return f"np.linalg.norm takes one axis (a vector norm) or two (a matrix norm), not {len(axis)}"
    if isinstance(axis, tuple) and isinstance(ord, str) and len(axis) != 2 or \
            isinstance(axis, (int, np.integer)) and isinstance(ord, str):
        return f"ord={ord!r} is a matrix norm, which takes two axes"
    return None


def _axes(x, axis) -> tuple[tuple[int, ...], bool]:
    """(the reduced axes, whether NumPy takes a matrix norm of them)."""
    ndim = np.ndim(x)
    if axis is None:
        return tuple(range(ndim)), ndim == 2
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(int(a) % ndim for a in axes)
    return axes, len(axes) == 2


def _safe_ratio(a, b):
    return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def _extreme_mask(values, extreme, axes):
    """1 where values equal their extreme over axes, shared equally among ties (as np.max's)."""
    hits = (values == extreme).astype(np.result_type(values, 0.0))
    return hits / np.sum(hits, axis=axes, keepdims=True)


def _vector_d(x, y_full, ord, axes):
    if ord is None or ord == 2:
        return _safe_ratio(x, y_full)
    if ord == 1:
        return np.sign(x) * 1.0
    if ord == np.inf or ord == -np.inf:
        return np.sign(x) * _extreme_mask(np.abs(x), y_full, axes)
    if ord == 0:
        return np.zeros(np.shape(x))
    p = float(ord)
    return np.sign(x) * _safe_ratio(np.abs(x) ** (p - 1), y_full ** (p - 1))


def _matrix_d(x, y_full, ord, axes):
    if ord is None or ord == "fro":
        return _safe_ratio(x, y_full)
    # The two axes last: a stack of matrices.
    m = np.moveaxis(x, axes, (-2, -1))
    if ord in (1, -1, np.inf, -np.inf):
        across = -2 if ord in (1, -1) else -1  # column sums add over rows (-2); row sums over columns
        sums = np.sum(np.abs(m), axis=across, keepdims=True)
        extreme = (np.max if ord > 0 else np.min)(sums, axis=(-2, -1), keepdims=True)
        d = np.sign(m) * _extreme_mask(sums, extreme, (-2, -1))
    elif ord in (2, -2, "nuc"):
        u, s, vt = np.linalg.svd(m, full_matrices=False)
        if ord == "nuc":
            d = u @ vt
        else:
            k = 0 if ord == 2 else -1  # singular values come largest first
            d = u[..., :, [k]] @ vt[..., [k], :]
        d = np.where(np.sum(np.abs(s), axis=-1)[..., None, None] == 0, 0.0, d)
    else:
        raise ValueError(f"s2s: np.linalg.norm of a matrix takes ord {MATRIX_ORDS}, not {ord!r}")
    return np.moveaxis(d, (-2, -1), axes)


def _norm_d(y, x, ord, axis, keepdims):
    """D: the derivative of each norm with respect to the elements it reduces, shaped like x."""
    axes, matrix = _axes(x, axis)
    y_full = _expand(y, np.shape(x), None if axis is None else axes, keepdims)
    if matrix:
        return _matrix_d(x, y_full, ord, axes)
    if isinstance(ord, str):
        raise ValueError(f"s2s: np.linalg.norm of a vector takes ord {VECTOR_ORDS}, not {ord!r}")
    if axis is None and np.ndim(x) != 1 and ord is not None:
        raise ValueError("s2s: np.linalg.norm with an ord takes a vector or a matrix (or an axis)")
    return _vector_d(x, y_full, ord, axes)


def norm_bar(g, y, x, ord=None, axis=None, keepdims=False):
    axes, _ = _axes(x, axis)
    return _expand(g, np.shape(x), None if axis is None else axes, keepdims) * _norm_d(y, x, ord, axis, keepdims)


def norm_dot(x_dot, y, x, ord=None, axis=None, keepdims=False):
    axes, _ = _axes(x, axis)
    reduced = np.sum(_norm_d(y, x, ord, axis, keepdims) * x_dot, axis=None if axis is None else axes,
                     keepdims=keepdims)
    return reduced


def norm_bar_curvature(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
    """What norm_bar(g, y, x) changes by along x_dot with g held: g * dD[x_dot]. D is piecewise
    constant for ord 1, -1, inf, -inf and 0; x / y for the 2-norm of a vector and the
    Frobenius norm, whose derivative is (x_dot - x y_dot / y) / y."""
    axes, matrix = _axes(x, axis)
    if not isinstance(ord, str) and ord is not None and (ord in (1, np.inf, -np.inf) or ord == (-1 if matrix else 0)):
        return np.zeros(np.shape(x))  # D is piecewise constant
    if ord is None or ord == "fro" or (ord == 2 and not matrix):
        reduce_axes = None if axis is None else axes
        y_full = _expand(y, np.shape(x), reduce_axes, keepdims)
        y_dot = norm_dot(x_dot, y, x, ord, axis, keepdims)
        y_dot_full = _expand(y_dot, np.shape(x), reduce_axes, keepdims)
        g_full = _expand(g, np.shape(x), reduce_axes, keepdims)
        return g_full * _safe_ratio(x_dot - x * _safe_ratio(y_dot_full, y_full), y_full)
    if not matrix and not isinstance(ord, str):
        # a p-norm, D = sign(x) |x|^(p-1) / y^(p-1):
        # dD = (p-1) (|x|^(p-2) x_dot - sign(x) |x|^(p-1) y_dot / y) / y^(p-1)
        p = float(ord)
        reduce_axes = None if axis is None else axes
        y_full = _expand(y, np.shape(x), reduce_axes, keepdims)
        y_dot_full = _expand(norm_dot(x_dot, y, x, ord, axis, keepdims), np.shape(x), reduce_axes, keepdims)
        g_full = _expand(g, np.shape(x), reduce_axes, keepdims)
        size = np.abs(x)
        change = size ** (p - 2) * x_dot - np.sign(x) * size ** (p - 1) * _safe_ratio(y_dot_full, y_full)
        return g_full * (p - 1) * _safe_ratio(change, y_full ** (p - 1))
    if matrix and (ord in (2, -2) or ord == "nuc"):
        e = np.moveaxis(np.asarray(x_dot) * np.ones(np.shape(x)), axes, (-2, -1))
        d_dot = _svd_curvature(np.moveaxis(x, axes, (-2, -1)), e, ord)
        g_full = _expand(g, np.shape(x), None if axis is None else axes, keepdims)
        return g_full * np.moveaxis(d_dot, (-2, -1), axes)
    raise ValueError(f"s2s: second derivatives of np.linalg.norm are implemented for ord None, 'fro', 'nuc', "
                     f"1, -1, 2, -2, inf and -inf of a matrix, and any ord of a vector, not ord={ord!r} here")


SVD_TIES = ("s2s: the second derivative of np.linalg.norm(A, {ord}) needs {what}, and A here has {has}: the norm "
            "is not twice differentiable there (its first derivative jumps); perturb A, or use ord='fro'")


def _svd_curvature(m, e, ord):
    """dD along e for the spectral norms (ord 2, -2: D = u v^T of the largest or smallest
    singular value) and the nuclear norm (D = U V^T), for a stack of matrices m. From the
    derivative of the reduced SVD m = U S V^T: with F = U^T e V,
      u_k' = sum_j u_j (s_k F[j,k] + s_j F[k,j]) / (s_k^2 - s_j^2) + (I - U U^T) e v_k / s_k,
      v_k' = sum_j v_j (s_j F[j,k] + s_k F[k,j]) / (s_k^2 - s_j^2) + (I - V V^T) e^T u_k / s_k,
      (U V^T)' = U [(F - F^T)_ij / (s_i + s_j)] V^T + (I - U U^T) e V S^-1 V^T + U S^-1 U^T e (I - V V^T),
    which need distinct singular values (spectral) or a full rank (nuclear): elsewhere a
    ValueError (the norm is not twice differentiable there)."""
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    v = np.swapaxes(vt, -1, -2)
    f = np.swapaxes(u, -1, -2) @ e @ v
    rows, cols = m.shape[-2], m.shape[-1]
    scale = np.max(s, axis=-1, keepdims=True) if s.shape[-1] else s
    tiny = 1e-12 * np.where(scale == 0, 1.0, scale)
    if ord == "nuc":
        if np.any(s <= tiny):
            raise ValueError(SVD_TIES.format(ord="'nuc'", what="a matrix of full rank", has="a zero singular value"))
        sums = s[..., :, None] + s[..., None, :]
        inner = (f - np.swapaxes(f, -1, -2)) / sums
        out = u @ inner @ vt
        if rows > cols:
            out = out + (e - u @ (np.swapaxes(u, -1, -2) @ e)) @ (v / s[..., None, :]) @ vt
        if cols > rows:
            out = out + (u / s[..., None, :]) @ np.swapaxes(u, -1, -2) @ (e - (e @ v) @ vt)
        return out
    k = 0 if ord == 2 else s.shape[-1] - 1
    sk = s[..., k]
    gaps = sk[..., None] ** 2 - s ** 2
    others = np.arange(s.shape[-1]) != k
    if np.any(np.abs(gaps[..., others]) <= tiny * np.abs(sk[..., None]) + tiny ** 2):
        raise ValueError(SVD_TIES.format(ord=ord, what="a singular value distinct from the others",
                                         has="a repeated one"))
    if (rows != cols) and np.any(sk <= tiny[..., 0]):
        raise ValueError(SVD_TIES.format(ord=ord, what="a nonzero singular value", has="a zero one"))
    safe = np.where(others, gaps, 1.0)
    fjk, fkj = f[..., :, k], f[..., k, :]
    a = np.where(others, (sk[..., None] * fjk + s * fkj) / safe, 0.0)
    b = np.where(others, (s * fjk + sk[..., None] * fkj) / safe, 0.0)
    uk, vk = u[..., :, k], v[..., :, k]
    du = np.einsum("...ij,...j->...i", u, a)
    dv = np.einsum("...ij,...j->...i", v, b)
    if rows > cols:
        ev = np.einsum("...ij,...j->...i", e, vk)
        du = du + (ev - np.einsum("...ij,...j->...i", u, np.einsum("...ji,...j->...i", u, ev))) / sk[..., None]
    if cols > rows:
        eu = np.einsum("...ji,...j->...i", e, uk)
        dv = dv + (eu - np.einsum("...ij,...j->...i", v, np.einsum("...ji,...j->...i", v, eu))) / sk[..., None]
    return du[..., :, None] * vk[..., None, :] + uk[..., :, None] * dv[..., None, :]
