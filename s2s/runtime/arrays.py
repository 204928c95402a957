"""Products (matmul, dot, inner, outer), shapes (transpose, reshape) and linear algebra."""

from __future__ import annotations

import numpy as np

from .batching import batched_product_bar_a, batched_product_bar_b
from .reductions import _shape_of
from .values import AdjointList, _expand, unbroadcast


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


# The dtypes of np.dot(x, y) of 1-d arrays in which the sum of x[k] * y[k], accumulated
# element by element from 0 of that dtype, is np.dot(x, y): not booleans (np.dot of two is a
# logical or of ands, where the sum counts) nor integers narrower than 64 bits (np.dot wraps at
# their width; Numba computes the products of two in int64).
_DOT_SUMS = ("float32", "float64", "complex64", "complex128", "int64", "uint64")


def dot_zero(x, y):
    """0 of the dtype of np.dot(x, y) of 1-d arrays: where the elementwise loops
    (optimize/loops.py) compute np.dot(x, y) as a sum of x[k] * y[k], it starts from this, so
    that the sum has np.dot's type. Raises where that sum is not np.dot's (_DOT_SUMS)."""
    dtype = np.result_type(x.dtype, y.dtype)  # (of arrays: the dtypes, as Numba types them)
    if dtype.name not in _DOT_SUMS:
        raise TypeError(_dot_zero_refusal(dtype.name))
    return dtype.type(0)


def _dot_zero_refusal(dtype: str) -> str:
    return (f"s2s: np.dot of arrays whose product has dtype {dtype} has no compiled form (Numba's np.dot takes "
            "floats, and its sum of products differs from NumPy's: a logical or for booleans, wrapping at the "
            "integers' width); convert the arrays first (x.astype(np.float64)), or use backend='python'")


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


def diagonal(x, offset=0, axis1=0, axis2=1):
    """np.diagonal(x, offset, axis1, axis2), which Numba lacks."""
    return np.diagonal(x, offset, axis1, axis2)


def trace(x, offset=0, axis1=0, axis2=1):
    """np.trace(x, offset, axis1, axis2), which Numba takes of a matrix only."""
    return np.trace(x, offset, axis1, axis2)


def _diagonal_length(shape, offset, axis1, axis2):
    return max(0, min(shape[axis1] + min(offset, 0), shape[axis2] - max(offset, 0)))


def diagonal_bar(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of np.diagonal(x, offset, axis1, axis2): g (the diagonal along its last axis)
    placed on that diagonal of zeros of x's shape (x may be its shape)."""
    shape = _shape_of(x)
    out = np.zeros(shape, dtype=np.result_type(g))
    plane = np.moveaxis(out, (axis1, axis2), (-2, -1))  # (a view of out)
    i = np.arange(_diagonal_length(shape, offset, axis1, axis2))
    plane[..., i + max(-offset, 0), i + max(offset, 0)] = g
    return out


def trace_bar(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of np.trace(x, offset, axis1, axis2): each trace's g along its diagonal."""
    return diagonal_bar(np.asarray(g, dtype=np.result_type(g))[..., None], x, offset, axis1, axis2)


# ---- shapes -----------------------------------------------------------------------


def transpose_bar(g, axes=None):
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort(axes))


def reshape(x, shape):
    """np.reshape(x, shape), which Numba takes of arrays it can view in the new shape only (not
    A.T.reshape(-1)): its form copies the others into C order first, as NumPy does."""
    return np.reshape(x, shape)


def reshape_bar(g, x):
    shape = _shape_of(x)
    return np.reshape(g, shape) if shape else np.ravel(g)[0]


def flip(x, axis=None):
    """np.flip(x, axis), which Numba takes without an axis only."""
    return np.flip(x, axis)


def rot90(x, k=1, axes=(0, 1)):
    """np.rot90(x, k, axes), which Numba takes without axes only."""
    return np.rot90(x, k, axes)


def _rolled_to(ndim, axis, start):
    """Where np.rollaxis(x, axis, start) puts the axis: it lands before the axis that was at start."""
    axis, start = axis % ndim, start + ndim if start < 0 else start
    return start - 1 if axis < start else start


def rollaxis(x, axis, start=0):
    """np.rollaxis(x, axis, start), which Numba lacks."""
    return np.rollaxis(x, axis, start)


def rollaxis_bar(g, axis, start=0):
    """Adjoint of np.rollaxis: the axis moved back from where it was rolled to."""
    return np.moveaxis(g, _rolled_to(np.ndim(g), axis, start), axis)


def flatten_options(order="C", **_) -> str | None:
    """x.flatten is differentiated in C or F order (rules: Facts.options): A and K follow x's layout in memory."""
    if order not in ("C", "F"):
        return f"x.flatten(order={order!r}) is not differentiated: write order='C' (the default) or 'F'"
    return None


def flatten(x, order="C"):
    """x.flatten(order): a new 1-d array, as np.ravel gives, but never a view of x."""
    return np.array(x).flatten(order)


def flatten_bar(g, x, order="C"):
    """Adjoint of x.flatten(order): g in x's shape (x may be its shape), read in that order."""
    shape = _shape_of(x)
    return np.reshape(g, shape, order=order) if shape else np.ravel(g)[0]


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


def split_zeros(parts):
    """The zero adjoint of np.split's pieces (of np.array_split, hsplit, vsplit, dsplit too): one
    array of zeros per piece, a list. Under Numba too a list of arrays, which pieces of different
    shapes need (another list of arrays has an array with a row per item for its adjoint)."""
    return AdjointList(np.zeros(np.shape(p), np.result_type(p, 0.0)) for p in parts)


def split_bar(parts, x, axis=0):
    """Adjoint of np.split(x, ..., axis) in x (and of np.array_split, np.vsplit, axis 0, and
    np.dsplit, axis 2): the pieces' adjoints joined back along the axis, which is x's shape
    whatever the pieces were, so the number of pieces is read from parts as it runs. axis None
    is np.hsplit's: 1, or 0 of a 1-d x."""
    if axis is None:
        axis = 1 if np.ndim(x) > 1 else 0
    return np.concatenate(tuple(parts), axis)


# NumPy that numba.njit rejects, called in its place under Numba (Facts.numba of templates/;
# codegen/numba_routes.py): np.array of an array (Numba builds arrays of sequences and numbers
# only), np.atleast_*d of a number, np.vstack of arrays of different ndim (a 2-d and a 1-d).


def array(x, dtype=None, *, where=None):
    """np.array(x, dtype): a new array (a copy of an array; under Numba, also a stack of a list
    or tuple of arrays, which Numba's own np.array does not build). where: the user's statement
    (file:line), which the compiled form names where it refuses a list (its items differ in
    shape); NumPy raises its own errors here."""
    return np.array(x, dtype)


def stack(xs, axis=0, *, where=None):
    """np.stack(xs, axis): under Numba, also of a list (Numba's own stacks tuples only). where:
    the user's statement (file:line), which the compiled form names where it refuses a list
    (items that differ in shape, an axis other than 0)."""
    return np.stack(xs, axis)


def atleast_1d(x):
    return np.atleast_1d(x)


def atleast_2d(x):
    return np.atleast_2d(x)


def atleast_3d(x):
    return np.atleast_3d(x)


def vstack(xs):
    return np.vstack(xs)


def array_bar(g, x):
    if isinstance(x, list):  # (a list's adjoint is a list: `t[0] = v` and t.append(v) change it in place)
        return AdjointList(array_bar(g[k], v) for k, v in enumerate(x))
    if isinstance(x, tuple):
        return tuple(array_bar(g[k], v) for k, v in enumerate(x))
    if np.ndim(x) or not isinstance(g, np.ndarray):  # (a 0-d array's adjoint may be a number already)
        return g
    return g[()]


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


def _one_vector_for_a_stack(a, b) -> bool:
    """np.linalg.solve(a, b) of a stack of matrices a and one vector b: NumPy 2 solves b with each
    matrix (the solution holds a vector per matrix), which a matrix product would read as a matrix."""
    return np.ndim(b) == 1 and np.ndim(a) > 2


def as_columns(v, a, b):
    """v (a vector per matrix of a, or one vector) as columns, v[..., None], where solve(a, b) solves one
    vector b with a stack a; else v itself. Linear in v."""
    return v[..., None] if _one_vector_for_a_stack(a, b) else v


def from_columns(v, a, b):
    """as_columns undone: v[..., 0] where solve(a, b) solves one vector b with a stack a; else v."""
    return v[..., 0] if _one_vector_for_a_stack(a, b) else v


def solve_bar_a(b_adjoint, x):
    if np.ndim(x) == 1:
        return np.outer(b_adjoint, x)
    return b_adjoint @ np.swapaxes(x, -1, -2)


# ---- scans, shifts and rearrangements (cumprod, diff, roll, sort, tile, diag, stacks) ---
# Each works along one axis: _along moves that axis first (None: the flattened array), and
# _back undoes it, so the loops below see axis 0.


def _along(x, axis):
    return np.ravel(x) if axis is None else np.moveaxis(np.asarray(x), axis, 0)


def _back(v, x, axis):
    return np.reshape(v, np.shape(x)) if axis is None else np.moveaxis(v, 0, axis)


def cumprod(x, axis=None):
    """np.cumprod(x, axis), which Numba takes without an axis only."""
    return np.cumprod(x, axis)


def cumprod_jvp(t, x, axis=None):
    """Tangent of np.cumprod(x, axis) along t, without dividing by x (zeros are allowed):
    y[k] = y[k-1] * x[k] gives y_dot[k] = y_dot[k-1] * x[k] + y[k-1] * t[k]."""
    xs, ts = _along(x, axis), _along(t, axis)
    y = np.cumprod(xs, 0)
    out = np.zeros(np.broadcast_shapes(np.shape(xs), np.shape(ts)), dtype=np.result_type(xs, ts))
    if out.shape[0]:
        out[0] = ts[0]
    for k in range(1, out.shape[0]):
        out[k] = out[k - 1] * xs[k] + y[k - 1] * ts[k]
    return out if axis is None else _back(out, x, axis)  # cumprod flattens for None


def cumprod_jvp2(t, s, x, axis=None):
    """Second derivative of np.cumprod(x, axis) along t and s (symmetric in them): the
    product rule once more, e[k] = e[k-1] x[k] + b[k-1] s[k] + c[k-1] t[k]."""
    xs, ts, ss = _along(x, axis), _along(t, axis), _along(s, axis)
    b, c = _along(cumprod_jvp(t, x, axis), axis), _along(cumprod_jvp(s, x, axis), axis)
    out = np.zeros(np.shape(b), dtype=np.result_type(xs, ts, ss))
    for k in range(1, out.shape[0]):
        out[k] = out[k - 1] * xs[k] + b[k - 1] * ss[k] + c[k - 1] * ts[k]
    return out if axis is None else _back(out, x, axis)


def cumprod_vjp(g, x, axis=None):
    """Adjoint of np.cumprod(x, axis), without dividing by x: the reverse of the recurrence
    y[k] = y[k-1] x[k], a[k] = g[k] + a[k+1] x[k+1], x_bar[k] = a[k] y[k-1]."""
    xs, gs = _along(x, axis), _along(g, axis)
    y = np.cumprod(xs, 0)
    a = np.array(gs, dtype=np.result_type(xs, gs))
    for k in range(a.shape[0] - 2, -1, -1):
        a[k] = gs[k] + a[k + 1] * xs[k + 1]
    out = a.copy()
    out[1:] = a[1:] * y[:-1]
    return _back(out, x, axis)


def cumprod_vjp_dx(g, x, s, axis=None):
    """Derivative of cumprod_vjp(g, x, axis) in x along s (forward over reverse): the
    recurrences of cumprod_vjp, differentiated."""
    xs, gs, ss = _along(x, axis), _along(g, axis), _along(s, axis)
    y = np.cumprod(xs, 0)
    c = _along(cumprod_jvp(s, x, axis), axis)
    dtype = np.result_type(xs, gs, ss)
    a = np.array(gs, dtype=dtype)
    a_dot = np.zeros(np.shape(a), dtype=dtype)
    for k in range(a.shape[0] - 2, -1, -1):
        a[k] = gs[k] + a[k + 1] * xs[k + 1]
        a_dot[k] = a_dot[k + 1] * xs[k + 1] + a[k + 1] * ss[k + 1]
    out = a_dot.copy()
    out[1:] = a_dot[1:] * y[:-1] + a[1:] * c[:-1]
    return _back(out, x, axis)


def diff(x, n=1, axis=-1):
    """np.diff(x, n, axis), which Numba takes without an axis only."""
    return np.diff(x, n, axis)


def diff_bar(g, x, n=1, axis=-1):
    """Adjoint of np.diff(x, n, axis): n times the adjoint of one difference,
    out[k] = g[k-1] - g[k] (with g zero outside its range)."""
    h = np.moveaxis(np.asarray(g), axis, 0)
    for _ in range(n):
        out = np.zeros((h.shape[0] + 1,) + h.shape[1:], dtype=h.dtype)
        out[:-1] -= h
        out[1:] += h
        h = out
    return np.moveaxis(h, 0, axis)


def roll(x, shift, axis=None):
    """np.roll(x, shift, axis), which Numba takes without an axis only."""
    return np.roll(x, shift, axis)


def roll_bar(g, shift, axis=None):
    """Adjoint of np.roll: the roll back."""
    back = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    return np.roll(g, back, axis)


def _rows_joined_bar(kind, g, x):
    """Adjoint of np.hstack/vstack/column_stack (kind) of one array x, which joins x's rows
    (x[0], x[1], ...): g back in x's shape. hstack joins rows of 2 or more dimensions along
    their axis 1, (b, a * c) of x (a, b, c); column_stack a matrix's rows as columns (x.T)."""
    g = np.asarray(g)
    if kind == "column_stack" and x.ndim == 2:
        return g.T.copy()
    if kind != "vstack" and x.ndim >= 3:
        swapped = (x.shape[1], x.shape[0]) + x.shape[2:]
        return np.swapaxes(g.reshape(swapped), 0, 1).copy()
    return g.reshape(x.shape).copy()


def hstack_bar(g, xs):
    """Adjoint of np.hstack(xs): the pieces of g along the axis hstack joined (0 for vectors)."""
    if isinstance(xs, np.ndarray):
        return _rows_joined_bar("hstack", g, xs)
    axis = 0 if np.ndim(xs[0]) <= 1 else 1
    sizes = np.cumsum([np.shape(np.atleast_1d(x))[axis] for x in xs])[:-1]
    return tuple(reshape_bar(part, x) for part, x in zip(np.split(g, sizes, axis=axis), xs))


def vstack_bar(g, xs):
    """Adjoint of np.vstack(xs): the rows of g that each x gave, in x's shape."""
    if isinstance(xs, np.ndarray):
        return _rows_joined_bar("vstack", g, xs)
    sizes = np.cumsum([np.shape(np.atleast_2d(x))[0] for x in xs])[:-1]
    return tuple(reshape_bar(part, x) for part, x in zip(np.split(g, sizes, axis=0), xs))


def column_stack_bar(g, xs):
    """Adjoint of np.column_stack(xs): the columns of g that each x gave (a vector one), in x's shape."""
    if isinstance(xs, np.ndarray):
        return _rows_joined_bar("column_stack", g, xs)
    sizes = np.cumsum([np.shape(x)[1] if np.ndim(x) >= 2 else 1 for x in xs])[:-1]
    return tuple(reshape_bar(part, x) for part, x in zip(np.split(g, sizes, axis=1), xs))


def dstack_bar(g, xs):
    """Adjoint of np.dstack(xs): the slices of g along axis 2 that each x gave (one for an x of
    fewer than 3 dimensions, which np.dstack makes (1, n, 1) or (m, n, 1)), in x's shape."""
    if isinstance(xs, np.ndarray):  # (its items, joined)
        return np.stack(dstack_bar(g, list(xs)))
    sizes = np.cumsum([np.shape(x)[2] if np.ndim(x) >= 3 else 1 for x in xs])[:-1]
    return tuple(reshape_bar(part, x) for part, x in zip(np.split(g, sizes, axis=2), xs))


def fftshift(x, axes=None):
    """np.fft.fftshift(x, axes): each axis rolled by half its length (Numba has no np.fft)."""
    return np.fft.fftshift(x, axes)


def ifftshift(x, axes=None):
    """np.fft.ifftshift(x, axes), fftshift's inverse: rolled back by half the length."""
    return np.fft.ifftshift(x, axes)


def _appended(g, arr, axis):
    """g cut where np.append(arr, values, axis) joined arr and values (flattened for None)."""
    if axis is None:
        n = np.size(arr)
        return np.ravel(g)[:n], np.ravel(g)[n:]
    return np.split(g, [np.shape(arr)[axis]], axis=axis)


def append_bar_arr(g, arr, values, axis=None):
    """Adjoint of np.append(arr, values, axis) in arr: its piece of g, in arr's shape."""
    return reshape_bar(_appended(g, arr, axis)[0], arr)


def append_bar_values(g, arr, values, axis=None):
    """Adjoint of np.append(arr, values, axis) in values: its piece of g, in values' shape."""
    return reshape_bar(_appended(g, arr, axis)[1], values)


# np.pad in mode 'constant' (its other modes are not differentiated: Facts.options refuses
# them where they are written, and these helpers where a mode arrives in a variable).


def pad_options(mode="constant", **_) -> str | None:
    """np.pad is differentiated in mode 'constant' (rules: Facts.options)."""
    if mode != "constant":
        return (f"np.pad with mode={mode!r} is not differentiated: mode 'constant' (the default) is, "
                "with constant_values")
    return None


def _constant_mode(mode):
    problem = pad_options(mode)
    if problem:
        raise ValueError(f"s2s: {problem}")


def _pad_pairs(pad_width, ndim):
    """(before, after) for each axis, as np.pad reads pad_width: an int, (n,), (before, after),
    ((before, after),) or one pair per axis."""
    w = np.round(np.array(pad_width)).astype(np.intp)
    if w.size == 1:
        return [(int(w.ravel()[0]),) * 2] * ndim
    if w.size == 2 and w.shape != (2, 1):
        return [(int(w.ravel()[0]), int(w.ravel()[1]))] * ndim
    return np.broadcast_to(w, (ndim, 2)).tolist()


def pad(x, pad_width, mode="constant", constant_values=0.0):
    """np.pad(x, pad_width, constant_values=...), in mode 'constant' only."""
    _constant_mode(mode)
    return np.pad(x, pad_width, constant_values=constant_values)


def pad_bar(g, x, pad_width, mode="constant"):
    """Adjoint of np.pad(x, pad_width) in x: the part of g where x is (x may be its shape)."""
    _constant_mode(mode)
    shape = _shape_of(x)
    pairs = _pad_pairs(pad_width, len(shape))
    return g[tuple(slice(b, b + n) for (b, _), n in zip(pairs, shape))].copy()


def pad_constant_bar(g, x, pad_width, constant_values):
    """Adjoint of np.pad(x, pad_width, constant_values=c) in c, one number: the sum of g where it
    pads (per-axis values are refused: their regions overlap at the corners, which the last
    axis fills)."""
    if np.ndim(constant_values) != 0:
        raise ValueError("s2s: np.pad is differentiated in constant_values given as one number; for values "
                         "per axis or side, pad with constants and add each value times its region's mask")
    return np.sum(g) - np.sum(pad_bar(g, x, pad_width))


# np.select: the first choice whose condition holds, else the default. Linear in the choices
# and the default; each adjoint is g where that one was picked (unbroadcast to its shape).


def select(condlist, choicelist, default=0):
    """np.select(condlist, choicelist, default), of lists or tuples (Numba's takes lists of
    arrays and a number as default only: overloads/shapes.py)."""
    return np.select(list(condlist), list(choicelist), default)


def _picks(condlist, shape):
    """For each condition, where it picks its choice: it holds and no earlier one does."""
    taken = np.zeros(shape, dtype=bool)
    picks = []
    for c in condlist:
        pick = np.logical_and(c, np.logical_not(taken))
        picks.append(pick)
        taken = np.logical_or(taken, pick)
    return picks, taken


def select_bar(g, condlist, choicelist):
    """Adjoints of np.select's choices: g where each was picked, in each choice's shape."""
    picks, _ = _picks(condlist, np.shape(g))
    return tuple(unbroadcast(np.where(pick, g, 0.0), x) for pick, x in zip(picks, choicelist))


def select_default_bar(g, condlist, default):
    """Adjoint of np.select's default: g where no condition holds, in the default's shape."""
    _, taken = _picks(condlist, np.shape(g))
    return unbroadcast(np.where(taken, 0.0, g), default)


def diag_bar(g, x, k=0):
    """Adjoint of np.diag(x, k): for a vector x, the k-th diagonal of g; for a matrix x, g
    placed on the k-th diagonal of zeros of x's shape."""
    if np.ndim(x) == 1:
        return np.diag(g, k)
    out = np.zeros(np.shape(x), dtype=np.result_type(g))
    i = np.arange(np.shape(g)[0])
    out[i + max(-k, 0), i + max(k, 0)] = g
    return out


def tile(x, reps):
    """np.tile(x, reps), which Numba lacks."""
    return np.tile(x, reps)


def tile_bar(g, x, reps):
    """Adjoint of np.tile(x, reps): the copies of each element summed. g is viewed as
    (reps[0], shape[0], reps[1], shape[1], ...) with both padded with ones in front."""
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    shape = np.shape(x)
    d = max(len(shape), len(reps))
    shape_d, reps_d = (1,) * (d - len(shape)) + shape, (1,) * (d - len(reps)) + reps
    pairs = tuple(v for pair in zip(reps_d, shape_d) for v in pair)
    summed = np.sum(np.reshape(g, pairs), axis=tuple(range(0, 2 * d, 2)))
    return reshape_bar(summed, x)


def _sort_order(x, axis):
    return np.argsort(np.ravel(x) if axis is None else x, axis=0 if axis is None else axis, kind="stable")


def sort(x, axis=-1):
    """np.sort(x, axis), which Numba takes without an axis only (sorting the last)."""
    return np.sort(x, axis)


def sort_dot(t, x, axis=-1):
    """Tangent of np.sort(x, axis): t permuted as sorting permutes x (ties: the stable order)."""
    order = _sort_order(x, axis)
    if axis is None:
        return np.ravel(t)[order]
    return np.take_along_axis(np.asarray(t), order, axis)


def sort_bar(g, x, axis=-1):
    """Adjoint of np.sort(x, axis): g scattered back to where each sorted element came from."""
    return _scattered(g, x, _sort_order(x, axis), axis)


def _scattered(g, x, order, axis):
    """Zeros shaped like x, with g put where `order` (along axis, or of x flattened) took it from."""
    out = np.zeros(np.shape(x), dtype=np.result_type(g))
    if axis is None:
        np.ravel(out)[order] = np.ravel(g)  # out is new and contiguous: ravel is a view
    else:
        np.put_along_axis(out, order, g, axis)
    return out


# np.partition: the derivatives follow a permutation, as np.sort's; which one NumPy leaves open
# (the order within each side), so the primal is computed by the same one: x gathered by
# np.argpartition's (under Numba, Numba's: overloads/shapes.py).


def _partition_order(x, kth, axis):
    return np.argpartition(np.ravel(x) if axis is None else x, kth, axis=0 if axis is None else axis)


def _gathered(t, order, axis):
    if axis is None:
        return np.ravel(t)[order]
    return np.take_along_axis(np.asarray(t), order, axis)


def partition(x, kth, axis=-1, kind="introselect", order=None):
    """np.partition(x, kth, axis): x permuted by np.argpartition(x, kth, axis) (kind and order are
    NumPy's options: its one algorithm, and a structured array's fields, which s2s has none of)."""
    if order is not None:
        raise ValueError("s2s: np.partition of a structured array (order=) is not taken: partition an array of numbers")
    return _gathered(x, _partition_order(x, kth, axis), axis)


def partition_dot(t, x, kth, axis=-1):
    """Tangent of np.partition(x, kth, axis): t permuted as partitioning permutes x."""
    return _gathered(t, _partition_order(x, kth, axis), axis)


def partition_bar(g, x, kth, axis=-1):
    """Adjoint of np.partition(x, kth, axis): g scattered back to where each element came from."""
    return _scattered(g, x, _partition_order(x, kth, axis), axis)


def astype(x, dtype):
    """x.astype(dtype) for a floating dtype (a NumPy scalar type); a number becomes one of it."""
    return x.astype(dtype) if isinstance(x, np.ndarray) else dtype(x)


def astype_bar(g, x):
    """Adjoint of astype(x, dtype): g in x's own floating type."""
    kind = np.result_type(x)
    return np.asarray(g).astype(kind) if np.ndim(x) else kind.type(g)


def astype_integer(x, dtype):
    """x.astype(dtype) for an integer or bool dtype: piecewise constant, not differentiated."""
    return x.astype(dtype) if isinstance(x, np.ndarray) else dtype(x)


# ---- s2s.lax's dynamic slices (JAX's semantics: each start clamped so the block lies inside) ------


def _clamped_starts(shape, start_indices, sizes):
    if len(start_indices) != len(shape) or len(sizes) != len(shape):
        raise TypeError(f"s2s.lax: an array of {len(shape)} dimensions is sliced with {len(start_indices)} start "
                        f"indices and {len(sizes)} sizes (one of each per dimension)")
    for n, k in zip(shape, sizes):
        if not 0 <= k <= n:
            raise TypeError(f"s2s.lax: a slice of size {k} of an axis of length {n}")
    # (a negative start counts from the end, as an index does; then it is clamped)
    return tuple(min(max(int(s) + n if s < 0 else int(s), 0), n - k) for s, n, k in zip(start_indices, shape, sizes))


def dynamic_slice(operand, start_indices, slice_sizes):
    """s2s.lax.dynamic_slice: the block of operand of shape slice_sizes starting at
    start_indices, as JAX takes them: a negative start counts from the end, then each is clamped
    into [0, length - size] (the block is always whole: a start past the end moves it back)."""
    operand = np.asarray(operand)
    starts = _clamped_starts(operand.shape, start_indices, slice_sizes)
    return operand[tuple(slice(s, s + k) for s, k in zip(starts, slice_sizes))].copy()


def dynamic_update_slice(operand, update, start_indices):
    """s2s.lax.dynamic_update_slice: a copy of operand with update written at start_indices,
    clamped so that update fits (JAX's)."""
    update = np.asarray(update)
    out = np.array(operand, dtype=np.result_type(operand, update), copy=True)
    starts = _clamped_starts(out.shape, start_indices, update.shape)
    out[tuple(slice(s, s + k) for s, k in zip(starts, update.shape))] = update
    return out


def _in_dim(shape, axis, start, size):
    """The start indices and sizes of a slice along one axis (the others whole)."""
    axis = axis % len(shape)
    starts = tuple(start if k == axis else 0 for k in range(len(shape)))
    return starts, tuple(size if k == axis else n for k, n in enumerate(shape))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """s2s.lax.dynamic_slice_in_dim: slice_size elements along axis from start_index (clamped)."""
    operand = np.asarray(operand)
    starts, sizes = _in_dim(operand.shape, axis, start_index, slice_size)
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """s2s.lax.dynamic_index_in_dim: the element at index along axis (clamped), the axis kept
    with length 1 where keepdims (JAX's default), else dropped."""
    operand = np.asarray(operand)
    block = dynamic_slice_in_dim(operand, index, 1, axis)
    return block if keepdims else np.squeeze(block, axis % operand.ndim)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """s2s.lax.dynamic_update_slice_in_dim: update written along axis from start_index (clamped)."""
    operand = np.asarray(operand)
    starts, _ = _in_dim(operand.shape, axis, start_index, 0)
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    """s2s.lax.dynamic_update_index_in_dim: update written at index along axis (clamped); update
    has the axis with length 1, or not at all (JAX's two forms)."""
    operand, update = np.asarray(operand), np.asarray(update)
    if update.ndim == operand.ndim - 1:
        update = np.expand_dims(update, axis % operand.ndim)
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def dynamic_index_bar(g, operand, index, axis=0, keepdims=True):
    """Adjoint of dynamic_index_in_dim(operand, index, axis, keepdims): zeros of operand's shape
    with g at the index (clamped) along axis."""
    return dynamic_update_index_in_dim(np.zeros(np.shape(operand), np.result_type(g, float)), g, index, axis)


def dynamic_update_index_bar(g, update, index, axis):
    """Adjoint of dynamic_update_index_in_dim with respect to update: g at the index along
    axis, in update's shape (with or without the axis)."""
    block = dynamic_index_in_dim(g, index, axis, True)
    return block.reshape(np.shape(update)) if np.ndim(update) else block.reshape(())[()]
