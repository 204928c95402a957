"""Reductions that Numba rejects with axis/keepdims/ddof, and the adjoints of reductions."""

from __future__ import annotations

import numpy as np

from .values import _count, _expand


#
# Generated code calls these where the user wrote np.sum(x, axis=..., keepdims=...) and
# friends: numba.njit rejects most reductions over an axis (see codegen.NUMBA_REJECTS),
# so runtime/overloads/ compiles them from the static axis and keepdims. Here they are
# NumPy itself.


def reduce_sum(x, axis=None, keepdims=False):
    return np.sum(x, axis=axis, keepdims=keepdims)


def reduce_mean(x, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


def reduce_max(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


def reduce_min(x, axis=None, keepdims=False):
    return np.min(x, axis=axis, keepdims=keepdims)


def reduce_prod(x, axis=None, keepdims=False):
    return np.prod(x, axis=axis, keepdims=keepdims)


def reduce_var(x, axis=None, ddof=0, keepdims=False):
    return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


def reduce_std(x, axis=None, ddof=0, keepdims=False):
    return np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)


def squeeze(x, axis=None):
    return np.squeeze(x, axis)


def inner(x, y):
    return np.inner(x, y)


# ---- adjoints of reductions -------------------------------------------------------


def _shape_of(x):
    """x's shape; generated code passes a shape (a tuple of ints) instead of x where only that
    was taped. A tuple of other values is x itself, a display NumPy takes as an array
    (np.sum([a, 1.0]))."""
    if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in x):
        return x
    return np.shape(x)


def sum_bar(g, x, axis=None, keepdims=False):
    if isinstance(x, (float, int, np.number)) and np.ndim(g) == 0:  # a number's adjoint is a number
        return float(g) if isinstance(x, (float, int)) else np.asarray(g, dtype=np.result_type(x, 0.0))[()]
    return np.array(_expand(g, _shape_of(x), axis, keepdims))


def mean_bar(g, x, axis=None, keepdims=False):
    if isinstance(x, (float, int, np.number)) and np.ndim(g) == 0:
        return sum_bar(g, x)
    return _expand(g, _shape_of(x), axis, keepdims) / _count(_shape_of(x), axis)


def _max_mask(y, x, axis, keepdims):
    x = np.asarray(x)  # (a tuple display: np.max([a, 1.0]))
    hits = (x == _expand(y, np.shape(x), axis, keepdims)).astype(np.result_type(x, 0.0))
    counts = np.sum(hits, axis=axis, keepdims=True)
    return hits / counts


def max_bar(g, y, x, axis=None, keepdims=False):
    return _max_mask(y, x, axis, keepdims) * _expand(g, np.shape(x), axis, keepdims)


def max_dot(x_dot, y, x, axis=None, keepdims=False):
    return np.sum(_max_mask(y, x, axis, keepdims) * x_dot, axis=axis, keepdims=keepdims)


def _prod_others(x, axis):
    """The product of all other elements along axis, without dividing (exact at zeros)."""
    x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(sorted(a % x.ndim for a in axes))
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    # The reduced axes, moved last and merged into one, make every case a row of a matrix.
    moved = np.transpose(x, kept + axes)
    rows = moved.reshape(moved.shape[: len(kept)] + (-1,))
    ones = np.ones(rows.shape[:-1] + (1,))
    left = np.concatenate((ones, np.cumprod(rows, axis=-1)[..., :-1]), axis=-1)
    right = np.concatenate((np.cumprod(rows[..., ::-1], axis=-1)[..., :-1][..., ::-1], ones), axis=-1)
    return np.transpose((left * right).reshape(moved.shape), np.argsort(kept + axes))


def _prod_others_dot(x, s, axis):
    """The derivative of _prod_others(x, axis) along s, also without dividing: the product
    rule through the prefix and suffix products."""
    x, s = np.asarray(x), np.broadcast_to(s, np.shape(x))
    axes = tuple(range(x.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(sorted(a % x.ndim for a in axes))
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    moved = np.transpose(x, kept + axes)
    rows = moved.reshape(moved.shape[: len(kept)] + (-1,))
    ds = np.transpose(s, kept + axes).reshape(rows.shape)
    n = rows.shape[-1]
    left, left_dot = np.ones(rows.shape), np.zeros(rows.shape)
    right, right_dot = np.ones(rows.shape), np.zeros(rows.shape)
    for k in range(1, n):  # left[k] = x[0] ... x[k-1], right[k] = x[k+1] ... x[n-1]
        left[..., k] = left[..., k - 1] * rows[..., k - 1]
        left_dot[..., k] = left_dot[..., k - 1] * rows[..., k - 1] + left[..., k - 1] * ds[..., k - 1]
        j = n - 1 - k
        right[..., j] = right[..., j + 1] * rows[..., j + 1]
        right_dot[..., j] = right_dot[..., j + 1] * rows[..., j + 1] + right[..., j + 1] * ds[..., j + 1]
    out = left_dot * right + left * right_dot
    return np.transpose(out.reshape(moved.shape), np.argsort(kept + axes))


def prod_bar_dx(g, x, s, axis=None, keepdims=False):
    """The derivative of prod_bar(g, y, x, axis, keepdims) in x along s (exact at zeros)."""
    return _prod_others_dot(x, s, axis) * _expand(g, np.shape(x), axis, keepdims)


def prod_dot_dx(t, x, s, axis=None, keepdims=False):
    """The derivative of prod_dot(t, y, x, axis, keepdims) in x along s (exact at zeros)."""
    return np.sum(_prod_others_dot(x, s, axis) * t, axis=axis, keepdims=keepdims)


def prod_bar(g, y, x, axis=None, keepdims=False):
    return _prod_others(x, axis) * _expand(g, np.shape(x), axis, keepdims)


def prod_dot(x_dot, y, x, axis=None, keepdims=False):
    return np.sum(_prod_others(x, axis) * x_dot, axis=axis, keepdims=keepdims)


def var_bar(g, x, axis=None, ddof=0, keepdims=False):
    centered = x - np.mean(x, axis=axis, keepdims=True)
    return 2.0 * centered * _expand(g, np.shape(x), axis, keepdims) / (_count(np.shape(x), axis) - ddof)


def var_dot(x_dot, x, axis=None, ddof=0, keepdims=False):
    centered = x - np.mean(x, axis=axis, keepdims=True)
    return 2.0 * np.sum(centered * x_dot, axis=axis, keepdims=keepdims) / (_count(np.shape(x), axis) - ddof)


def half_over(y):
    """1 / (2 y), the derivative of sqrt at its square y, but 0 where y is 0: a std of 0 is of
    equal values (one value: a constant 0), where central differences, and a subgradient, give 0
    (1 / (2 y) times the variance's derivative, 0 there, would be NaN)."""
    if np.ndim(y) == 0:
        return 0.5 / y if y > 0 else 0.0 * y  # (0, or NaN for a NaN y)
    return 0.5 / np.where(y > 0, y, np.inf)  # (0 at a NaN y too: the centered values are NaN there)


def std_bar(g, y, x, axis=None, ddof=0, keepdims=False):
    return var_bar(g * half_over(y), x, axis, ddof, keepdims)
