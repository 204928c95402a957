"""Helpers that generated code calls, as `runtime.<name>`.

Each helper is plain NumPy here, which the python backend runs. runtime/numba_overloads.py gives
every helper a `numba.extending.overload`, so that the same generated source compiles
under `numba.njit` for scalars and arrays of any ndim.
"""

from __future__ import annotations

import numpy as np

from ..errors import S2SError

# ---- values and trees -------------------------------------------------------------


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def zeros_like(x):
    """A zero adjoint with the structure, shape and float dtype of x."""
    if isinstance(x, np.ndarray):
        dtype = x.dtype if np.issubdtype(x.dtype, np.inexact) else np.float64
        return np.zeros(x.shape, dtype)
    if _is_namedtuple(x):
        return type(x)(*(zeros_like(v) for v in x))
    if isinstance(x, (tuple, list)):
        return tuple(zeros_like(v) for v in x)
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if isinstance(x, (np.floating, np.complexfloating)):
        return type(x)(0)
    return 0.0


def zeros_shaped(shape, like):
    """Zeros of a given shape (a taped shape) with like's float dtype."""
    dtype = like.dtype if isinstance(like, np.ndarray) and np.issubdtype(like.dtype, np.inexact) else np.float64
    return np.zeros(shape, dtype)


def ones_like(x):
    """The seed of a gradient: one, with x's float dtype."""
    if isinstance(x, (np.floating, np.ndarray)):
        return np.ones_like(x)[()]
    return 1.0


def copy(x):
    """A copy that later in-place writes cannot change (scalars are returned as they are)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple) and not _is_namedtuple(x):
        return tuple(copy(v) for v in x)
    return x


def tree_add(a, b):
    """a + b, leaf by leaf, for adjoints of tuples, lists and dicts."""
    if isinstance(a, dict):
        return {k: tree_add(a[k], b[k]) for k in a}
    if _is_namedtuple(a):
        return type(a)(*(tree_add(x, y) for x, y in zip(a, b)))
    if isinstance(a, (tuple, list)):
        return tuple(tree_add(x, y) for x, y in zip(a, b))
    return a + b


def add_at(c, key, value):
    """Add value to element `key` of c: in place for arrays, a new container otherwise."""
    if isinstance(c, np.ndarray):
        c[key] += value
        return c
    if isinstance(c, dict):
        out = dict(c)
        out[key] = tree_add(out[key], value)
        return out
    if _is_namedtuple(c):
        return c._replace(**{c._fields[key]: tree_add(c[key], value)})
    items = list(c)
    items[key] = tree_add(items[key], value)
    return tuple(items)


def add_attr(c, name, value):
    """Add value to field `name` of the namedtuple c."""
    return c._replace(**{name: tree_add(getattr(c, name), value)})


def index_add(a, index, value):
    """a[index] += value in place, accumulating repeated entries of an index array."""
    if any(isinstance(i, (np.ndarray, list)) for i in (index if isinstance(index, tuple) else (index,))):
        np.add.at(a, index, value)
    else:
        a[index] += value


def take(a, index):
    """a[index] as a copy, for the adjoint of a write x[index] = v.

    A write with repeated entries in an index array keeps only one of them, so its
    derivative is refused rather than summed.
    """
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if isinstance(i, (np.ndarray, list)) and np.issubdtype(np.asarray(i).dtype, np.integer):
            flat = np.ravel(i)
            if len(np.unique(flat)) != len(flat):
                raise ValueError(
                    "s2s: a write x[idx] = v whose index array repeats entries has no "
                    "derivative s2s can take; remove the repeated entries from idx"
                )
    out = np.array(a[index], copy=True)
    return out if out.ndim else out[()]


def clear(a, index):
    """a[index] = 0 in place: the overwritten elements no longer reach the result."""
    a[index] = 0.0


def shape(x):
    return np.shape(x)


def range_len(start, stop, step):
    """len(range(start, stop, step)): the trip count of a loop, for its reverse."""
    return len(range(start, stop, step))


def require_number(x, message):
    """Refuse `x op= v` where x is an array: the conservative form of require_unshared, for
    another name that may not be bound where the update runs (see analysis/activity.py)."""
    if isinstance(x, np.ndarray) and x.ndim > 0:
        raise S2SError(message)


def _is_number(v, batched):
    """A number, or (batched) a batch of numbers: a value no in-place update can reach."""
    if isinstance(v, np.ndarray):
        return v.ndim <= int(batched)
    return v is None or isinstance(v, (int, float, complex, bool, str, np.generic))


def require_unshared(x, other, message, x_batched=False, other_batched=False):
    """Refuse `x op= v` where NumPy would also change `other` (see analysis/activity.py).

    Generated code runs `x = x op v`, a new value for x only. That is what NumPy does where
    x is a number; where x is an array NumPy updates it in place, and the rebinding is right
    only if no other live name refers to memory the update changes. Analysis names the
    others that may (`y = x[1]` is a row of a 2-d x, a number from a 1-d x); this checks
    their memory. A container (tuple, list, dict) counts as sharing. x_batched and
    other_batched: the value carries a trailing batch axis (vectorised code), so its
    examples are numbers when it is 1-d.
    """
    if _is_number(x, x_batched) or not isinstance(x, np.ndarray) or _is_number(other, other_batched):
        return
    if not isinstance(other, np.ndarray) or np.may_share_memory(x, other):
        raise S2SError(message)


# ---- broadcasting -----------------------------------------------------------------


def unbroadcast(g, x):
    """Sum g over the axes along which x (a value or a shape) was broadcast."""
    target = x if isinstance(x, tuple) else np.shape(x)
    g_shape = np.shape(g)
    if g_shape == target:
        return g
    if len(target) == 0:
        total = np.sum(g)
        return total.astype(g.dtype)[()] if isinstance(g, np.ndarray) else total
    if len(g_shape) == 0 or len(g_shape) < len(target):
        return np.broadcast_to(g, target).copy()
    lead = len(g_shape) - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(target) if n == 1 and g_shape[lead + k] != 1
    )
    return np.sum(g, axis=axes).reshape(target)


def _expand(g, x_shape, axis, keepdims):
    """Broadcast the adjoint of a reduction over `axis` back to x's shape."""
    if axis is None:
        return np.broadcast_to(g, x_shape)
    if not keepdims:
        axes = axis if isinstance(axis, tuple) else (axis,)
        axes = tuple(sorted(a % len(x_shape) for a in axes))
        for a in axes:
            g = np.expand_dims(g, a)
    return np.broadcast_to(g, x_shape)


def _count(x_shape, axis):
    if axis is None:
        return int(np.prod(x_shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([x_shape[a] for a in axes]))


# ---- reductions -------------------------------------------------------------------
#
# Generated code calls these where the user wrote np.sum(x, axis=..., keepdims=...) and
# friends: numba.njit rejects most reductions over an axis (see codegen.NUMBA_REJECTS),
# so runtime/numba_overloads.py compiles them from the static axis and keepdims. Here they are
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
    """x's shape; generated code passes a shape instead of x where only that was taped."""
    return x if isinstance(x, tuple) else np.shape(x)


def sum_bar(g, x, axis=None, keepdims=False):
    return np.array(_expand(g, _shape_of(x), axis, keepdims))


def mean_bar(g, x, axis=None, keepdims=False):
    return _expand(g, _shape_of(x), axis, keepdims) / _count(_shape_of(x), axis)


def _max_mask(y, x, axis, keepdims):
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


def std_bar(g, y, x, axis=None, ddof=0, keepdims=False):
    return var_bar(g / (2.0 * y), x, axis, ddof, keepdims)


# ---- products ---------------------------------------------------------------------


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


def _norm_check(x, ord, axis):
    if ord not in (None, 2, "fro") or (ord == 2 and axis is None and np.ndim(x) != 1):
        raise ValueError(f"s2s: the derivative of np.linalg.norm is implemented for the 2-norm "
                         f"and the Frobenius norm, not ord={ord!r}")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise ValueError("s2s: the derivative of np.linalg.norm takes axis=None or one int axis")


def norm_bar(g, y, x, ord=None, axis=None, keepdims=False):
    _norm_check(x, ord, axis)
    y_full = _expand(y, np.shape(x), axis, keepdims)
    scale = np.where(y_full == 0, 0.0, _expand(g, np.shape(x), axis, keepdims) / np.where(y_full == 0, 1.0, y_full))
    return x * scale


def norm_dot(x_dot, y, x, ord=None, axis=None, keepdims=False):
    _norm_check(x, ord, axis)
    y_full = _expand(y, np.shape(x), axis, keepdims)
    safe = np.where(y_full == 0, 1.0, y_full)
    return np.sum(np.where(y_full == 0, 0.0, x / safe) * x_dot, axis=axis, keepdims=keepdims)


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

# ---- batching (vmap) --------------------------------------------------------------


def register_numba_overloads() -> None:
    """Give every helper its numba.extending.overload (numba_overloads.py), once: called by the
    cpu backend before it compiles generated code, so that the python backend never loads Numba."""
    from . import numba_overloads  # noqa: F401  (importing it registers the overloads)


def __getattr__(name):
    # `runtime.prange` is numba.prange, imported on first use so that generated code that
    # does not batch never imports Numba. Under numba.njit(parallel=True) a loop over it
    # runs in parallel; in Python it is range.
    if name == "prange":
        import numba

        return numba.prange
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def batch_empty(n, example):
    """An uninitialised stack of n values shaped and typed like example (batch axis first)."""
    example = np.asarray(example)
    return np.empty((n,) + example.shape, example.dtype)


def batch_example(value, first):
    """One example's output of a vmapped function, checked against the first example's: the
    outputs are stacked, so they must be arrays or numbers of one shape (as JAX requires)."""
    if isinstance(value, (tuple, list, dict)):
        raise ValueError("s2s: vmap: inside another transform, a vmapped function returns one array "
                         "or number per example, not a tuple")
    if first is not None and np.shape(value) != np.shape(first):
        raise ValueError(f"s2s: vmap: an example's output has shape {np.shape(value)}, "
                         f"the first example's {np.shape(first)}")
    return value


def batch_store(out, b, value):
    """out[b] = value, unless value's shape is not the stacked one: then True, and nothing is
    stored. (Raising inside a parallel loop is not reliable under Numba; the driver raises
    after the loop, in check_batch.)"""
    if np.shape(value) != np.shape(out)[1:]:
        return True
    out[b] = value
    return False


def check_batch(mismatch):
    if np.any(mismatch):
        raise ValueError(f"s2s: vmap: example {int(np.argmax(mismatch))}'s output does not have the "
                         "first example's shape")


# Vectorised batching (transforms/vectorize.py) keeps the batch on the LAST axis. These helpers serve
# only the python backend (s2s.jit batches by a parallel loop instead), so they have no
# Numba overloads.


def lift(w):
    """An unbatched operand of a batched operation: a trailing axis of length one."""
    return np.asarray(w)[..., None]


def batch_broadcast(v, n):
    """v, the same for every example, as a writable batch of n copies."""
    v = np.asarray(v)
    return np.repeat(v[..., None], n, axis=-1)


def example_shape(x):
    return np.shape(x)[:-1]


def example_ndim(x):
    return np.ndim(x) - 1


def example_size(x):
    return int(np.prod(np.shape(x)[:-1]))


def example_len(x):
    if np.ndim(x) < 2:
        raise TypeError("len() of a number")
    return np.shape(x)[0]


def example_axes(x):
    """Every per-example axis: a reduction with axis=None, per example."""
    return tuple(range(np.ndim(x) - 1))


def batched_transpose(x, axes=None):
    last = np.ndim(x) - 1
    axes = tuple(reversed(range(last))) if axes is None else tuple(a % last for a in axes)
    return np.transpose(x, axes + (last,))


def batched_reshape(x, shape):
    """Per-example reshape: with the batch innermost, C order keeps each example's elements."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return np.reshape(x, shape + (np.shape(x)[-1],))


def _batched_items(items, n, batched):
    return [np.asarray(v) if b else batch_broadcast(v, n) for v, b in zip(items, batched)]


def batched_concatenate(items, axis, n, batched):
    return np.concatenate(_batched_items(items, n, batched), axis=axis)


def batched_stack(items, axis, n, batched):
    return np.stack(_batched_items(items, n, batched), axis=axis)


def batched_array(items, n, batched):
    """np.array of a tuple of per-example values, some batched."""
    return np.array(_batched_items(items, n, batched))


# Products of two per-example operands, batched on the last axis: one einsum whose
# subscripts give each example's product, with the batch letter z on the batched operands
# and the result. NumPy's four products differ beyond two dimensions: matmul broadcasts its
# leading axes ("..."), dot contracts a's last axis with b's second-to-last, inner contracts
# the last axes, outer multiplies the flattened operands.
PRODUCTS = ("matmul", "dot", "inner", "outer")


def _product_specs(kind, da, db, a_batched, b_batched):
    """einsum subscripts (a, b, result) of the batched product of da- and db-dimensional examples."""
    if kind == "outer":
        sa, sb, so = "i", "j", "ij"
    elif kind == "matmul" or da <= 2 and db <= 2 and kind == "dot":
        lead = "..." if da > 2 or db > 2 else ""
        sa = "j" if da == 1 else lead + "ij"
        sb = "j" if db == 1 else lead + "jk"
        so = (lead if da >= 2 or db >= 2 else "") + ("i" if da >= 2 else "") + ("k" if db >= 2 else "")
    else:  # dot beyond two dimensions, and inner: the contracted letter is j
        a_rest, b_rest = "abcdef"[: da - 1], "pqrstu"[: max(db - 1, 0)]
        sa = a_rest + "j"
        if kind == "inner":
            sb = b_rest + "j"
            so = a_rest + b_rest
        else:
            sb = b_rest[:-1] + "j" + b_rest[-1:] if db >= 2 else "j"
            so = a_rest + b_rest
    return sa + "z" * a_batched, sb + "z" * b_batched, so + "z" * (a_batched or b_batched)


def _product_operands(kind, a, b, a_batched, b_batched):
    """The operands as the einsum sees them (outer flattens each example) and their example ndims."""
    if kind == "outer":
        a = np.reshape(a, (-1, np.shape(a)[-1])) if a_batched else np.ravel(a)
        b = np.reshape(b, (-1, np.shape(b)[-1])) if b_batched else np.ravel(b)
    return a, b, np.ndim(a) - a_batched, np.ndim(b) - b_batched


def batched_product(kind, a, b, a_batched, b_batched):
    """np.matmul, np.dot, np.inner or np.outer (kind) of a and b for each example; batch last."""
    a, b, da, db = _product_operands(kind, a, b, a_batched, b_batched)
    if da == 0 or db == 0:
        return (a if a_batched else lift(a)) * (b if b_batched else lift(b))
    sa, sb, so = _product_specs(kind, da, db, a_batched, b_batched)
    return np.einsum(f"{sa},{sb}->{so}", a, b)


def batched_product_bar_a(g, kind, a, b, a_batched, b_batched):
    """The adjoint of a in batched_product(kind, a, b, ...), from the result's adjoint g."""
    shape = np.shape(a)
    a, b, da, db = _product_operands(kind, a, b, a_batched, b_batched)
    if da == 0 or db == 0:
        product = g * (b if b_batched else lift(b))
        return unbroadcast(product, a if a_batched else lift(a)).reshape(shape)
    sa, sb, so = _product_specs(kind, da, db, a_batched, b_batched)
    return unbroadcast(np.einsum(f"{so},{sb}->{_with_lead(sa, so)}", g, b), a).reshape(shape)


def batched_product_bar_b(g, kind, a, b, a_batched, b_batched):
    """The adjoint of b in batched_product(kind, a, b, ...), from the result's adjoint g."""
    shape = np.shape(b)
    a, b, da, db = _product_operands(kind, a, b, a_batched, b_batched)
    if da == 0 or db == 0:
        product = g * (a if a_batched else lift(a))
        return unbroadcast(product, b if b_batched else lift(b)).reshape(shape)
    sa, sb, so = _product_specs(kind, da, db, a_batched, b_batched)
    return unbroadcast(np.einsum(f"{so},{sa}->{_with_lead(sb, so)}", g, a), b).reshape(shape)


def _with_lead(spec, result_spec):
    """An operand's subscripts in its adjoint's einsum: matmul's broadcast leading axes come
    back at their broadcast size (unbroadcast then sums them), even for a 1-D operand."""
    return "..." + spec if "..." in result_spec and "..." not in spec else spec


def batched_transpose_bar(g, axes=None):
    last = np.ndim(g) - 1
    axes = tuple(reversed(range(last))) if axes is None else tuple(a % last for a in axes)
    return np.transpose(g, tuple(np.argsort(axes)) + (last,))


# ---- value tapes --------------------------------------------------------------------
# A value that the reverse sweep needs after the primal overwrites it goes on a tape. In
# loops whose trip counts are known on entry (range loops) the tape is made at the first
# push with room for every iteration, and the generated code keeps a count of the values
# on it: `tape[count] = x; count += 1`, then `count -= 1; x = tape[count]` in the reverse
# sweep. Here it is a list; under Numba an array of numbers (runtime/numba_overloads.py).


def new_tape(x, capacity):
    """A tape with room for `capacity` values like x (a slot is written before it is read)."""
    return [x] * capacity


# ---- shape tapes --------------------------------------------------------------------
# The reverse sweep needs the shape of some overwritten values (to unbroadcast adjoints).
# Pushing a shape returns it, and popping is handed the variable that received the push:
# under Numba that variable's type (its ndim) says how much was pushed, so the shapes of
# scalars cost nothing (runtime/numba_overloads.py). Here shapes are plain tuples on a list.


def shape_tape():
    return []


def push_shape(tape, x):
    """Push x's shape and return it."""
    shape = np.shape(x)
    tape.append(shape)
    return shape


def pop_shape(tape, like):
    """The last shape pushed; `like` holds a shape pushed on the same tape."""
    return tape.pop()
