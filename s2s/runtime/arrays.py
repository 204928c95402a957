"""Products (matmul, dot, inner, outer), shapes (transpose, reshape) and linear algebra."""

from __future__ import annotations

import numpy as np

from .batching import batched_product_bar_a, batched_product_bar_b
from .reductions import _shape_of
from .values import _expand, unbroadcast


def matmul_bar_x(g, x, y):
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * y
    if np.ndim(y) == 1:
        return unbroadcast(g[..., None] * y, x)
    if np.ndim(x) == 1:
        return unbroadcast(np.matmul(y, g[..., None])[..., 0], x)
    return unbroadcast(np.matmul(g, np.swapaxes(y, -1, -2)), x)


def matmul_bar_y(g, x, y):
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * x
    if np.ndim(x) == 1:
        return unbroadcast(x[:, None] * g[..., None, :], y)
    if np.ndim(y) == 1:
        return unbroadcast(np.matmul(np.swapaxes(x, -1, -2), g[..., None])[..., 0], y)
    return unbroadcast(np.matmul(np.swapaxes(x, -1, -2), g), y)


def dot_bar_x(g, x, y):
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    if np.ndim(x) <= 2 and np.ndim(y) <= 2:
        return matmul_bar_x(g, x, y)
    return batched_product_bar_a(g, "dot", x, y, False, False)  # an unbatched einsum


def dot_bar_y(g, x, y):
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * x, y)
    if np.ndim(x) <= 2 and np.ndim(y) <= 2:
        return matmul_bar_y(g, x, y)
    return batched_product_bar_b(g, "dot", x, y, False, False)  # an unbatched einsum


def inner_bar_x(g, x, y):
    """Adjoint of x in np.inner(x, y), which contracts the last axes (up to 2-D)."""
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * y
    if np.ndim(x) == 2 and np.ndim(y) == 1:
        return np.outer(g, y)
    if np.ndim(x) <= 2 and np.ndim(y) == 2:
        return np.dot(g, y)
    return batched_product_bar_a(g, "inner", x, y, False, False)  # an unbatched einsum


def inner_bar_y(g, x, y):
    """Adjoint of y in np.inner(x, y): np.inner(y, x) is its transpose."""
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * x, y)
    if np.ndim(x) > 2 or np.ndim(y) > 2:
        return batched_product_bar_b(g, "inner", x, y, False, False)  # an unbatched einsum
    if np.ndim(x) == 2 and np.ndim(y) == 2:
        return inner_bar_x(np.transpose(g), y, x)
    return inner_bar_x(g, y, x)


def outer_bar_x(g, x, y):
    return np.reshape(np.dot(g, np.ravel(y)), np.shape(x))


def outer_bar_y(g, x, y):
    return np.reshape(np.dot(np.ravel(x), g), np.shape(y))


def trace_bar(g, x):
    return g * np.eye(np.shape(x)[0], np.shape(x)[1])


# ---- shapes -----------------------------------------------------------------------


def transpose_bar(g, axes=None):
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort(axes))


def reshape_bar(g, x):
    shape = _shape_of(x)
    return np.reshape(g, shape) if shape else np.ravel(g)[0]


def cumsum(x, axis=None):
    """np.cumsum(x, axis), which Numba takes without an axis only."""
    return np.cumsum(x, axis)


def cumsum_bar(g, x, axis=None):
    """Adjoint of cumsum: sums from the end, along the axis (over the flattened x for None)."""
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(np.ravel(g)))), np.shape(x))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def concatenate_bar(g, xs, axis=0):
    sizes = np.cumsum([np.shape(x)[axis] for x in xs])[:-1]
    return tuple(np.split(g, sizes, axis=axis))


def stack_bar(g, xs, axis=0):
    return tuple(np.take(g, k, axis=axis) for k in range(len(xs)))


def array_bar(g, x):
    if isinstance(x, (tuple, list)):
        return tuple(array_bar(g[k], v) for k, v in enumerate(x))
    return g if np.ndim(x) else g[()]


def clip_inside(a, a_min, a_max):
    """1.0 where clip passes a through, 0.0 where it is cut off."""
    inside = np.ones(np.shape(a), dtype=bool)
    if a_min is not None:
        inside = inside & (a >= a_min)
    if a_max is not None:
        inside = inside & (a <= a_max)
    return inside * 1.0


# ---- linear algebra ---------------------------------------------------------------


def matrix_trace(x):
    """The trace of each matrix of a stack (the last two axes); a number for a matrix."""
    return np.trace(x, axis1=-2, axis2=-1)


def matrix_trace_bar(g, x):
    """Adjoint of matrix_trace: each matrix's g on its diagonal."""
    return per_matrix(g) * np.eye(np.shape(x)[-2], np.shape(x)[-1])


def per_matrix(s):
    """One number per matrix of a stack (s of the stack's leading shape), shaped to broadcast
    against the stack: s[..., None, None]; a number stays a number."""
    return s[..., None, None] if np.ndim(s) else s


def per_matrix_bar(g, s):
    """Adjoint of per_matrix: g summed over each matrix, in the shape of s."""
    return np.sum(g, axis=(-2, -1)) if np.ndim(s) else np.sum(g)


def solve_bar_a(b_adjoint, x):
    if np.ndim(x) == 1:
        return np.outer(b_adjoint, x)
    return b_adjoint @ np.swapaxes(x, -1, -2)
