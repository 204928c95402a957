"""Overloads of products, shapes and linear algebra."""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np import numpy_support

from ... import runtime as rt
from .common import _compile, _dot_zero, _is_none, _nd, _refusal, _scalar
from .reductions import _index, _shape_of


def _common_dtype(*arrays):
    """The dtype NumPy computes a product of these in, where they differ (a float64 adjoint of a
    float32 operand: a Python float in the loss promotes it): Numba's np.dot takes one dtype."""
    dtypes = {a.dtype for a in arrays if isinstance(a, types.Array)}
    if len(dtypes) < 2:
        return None
    return numpy_support.from_dtype(np.result_type(*(numpy_support.as_dtype(d) for d in dtypes)))


@overload(rt.matmul_bar_x)
def _matmul_bar_x(g, x, y):
    nx, ny = _nd(x), _nd(y)
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * y
    common = _common_dtype(g, y)
    if common is not None and (nx, ny) != (2, 1):  # (np.outer casts)
        return lambda g, x, y: rt.matmul_bar_x(g.astype(common), x, y.astype(common))
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.outer(g, y)
    if nx == 1 and ny == 2:
        return lambda g, x, y: np.dot(y, g)
    if nx == 2 and ny == 2:
        return lambda g, x, y: np.dot(g, y.T)
    if nx >= 2 and ny >= 2:  # a stack of matrices (@ of stacks broadcasts: overloads/linalg.py)
        return lambda g, x, y: rt.unbroadcast(g @ np.swapaxes(y, -1, -2), x)
    if nx == 1:  # (and y a stack)
        return lambda g, x, y: rt.unbroadcast((y @ g[..., None])[..., 0], x)
    if ny == 1:
        return lambda g, x, y: rt.unbroadcast(g[..., None] * y, x)
    raise TypingError("s2s: under jit, matmul derivatives are for arrays of one or more dimensions")


@overload(rt.matmul_bar_y)
def _matmul_bar_y(g, x, y):
    nx, ny = _nd(x), _nd(y)
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * x
    common = _common_dtype(g, x)
    if common is not None and (nx, ny) != (1, 2):  # (np.outer casts)
        return lambda g, x, y: rt.matmul_bar_y(g.astype(common), x.astype(common), y)
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.dot(x.T, g)
    if nx == 1 and ny == 2:
        return lambda g, x, y: np.outer(x, g)
    if nx == 2 and ny == 2:
        return lambda g, x, y: np.dot(x.T, g)
    if nx >= 2 and ny >= 2:
        return lambda g, x, y: rt.unbroadcast(np.swapaxes(x, -1, -2) @ g, y)
    if ny == 1:  # (and x a stack)
        return lambda g, x, y: rt.unbroadcast((np.swapaxes(x, -1, -2) @ g[..., None])[..., 0], y)
    if nx == 1:
        return lambda g, x, y: rt.unbroadcast(x[:, None] * g[..., None, :], y)
    raise TypingError("s2s: under jit, matmul derivatives are for arrays of one or more dimensions")


# ---- np.dot of arrays of 3 or more dimensions ---------------------------------------------
# NumPy sums x's last axis against y's second to last (its last where y is 1-d): the result has
# x's other axes, then y's. Numba's np.dot takes 1-d and 2-d arrays; these forms, only where one
# has more, are one matrix product: x as rows of its last axis, y with that axis first and the
# others flattened behind it (_dot_operands), the adjoints the product's, put back in shape.


def _dot_nd(x, y) -> bool:
    return isinstance(x, types.Array) and isinstance(y, types.Array) and x.ndim >= 1 and y.ndim >= 1 \
        and max(x.ndim, y.ndim) > 2


def _dot_operands(y):
    """Source of (x's rows, y with its summed axis first as a matrix, the result's shape)."""
    d = y.ndim
    if d == 1:
        return ("    rows = np.ascontiguousarray(x).reshape((-1, x.shape[-1]))\n"
                "    columns = np.ascontiguousarray(y).reshape((y.shape[0], 1))\n"
                "    shape = x.shape[:-1]\n")
    order = (d - 2,) + tuple(range(d - 2)) + (d - 1,)
    return ("    rows = np.ascontiguousarray(x).reshape((-1, x.shape[-1]))\n"
            f"    columns = np.ascontiguousarray(np.transpose(y, {order})).reshape((y.shape[-2], -1))\n"
            "    shape = x.shape[:-1] + y.shape[:-2] + y.shape[-1:]\n")


@overload(np.dot)
def _dot_of_arrays_of_more_dimensions(x, y):
    if _dot_nd(x, y):
        source = "def impl(x, y):\n" + _dot_operands(y) + "    return (rows @ columns).reshape(shape)\n"
        return _compile(source, "impl")


def _dot_nd_bar(g, x, y, which: str):
    d = y.ndim
    lines = ("def impl(g, x, y):\n" + _dot_operands(y)
             + "    g2 = np.ascontiguousarray(g).reshape((rows.shape[0], -1))\n")
    if which == "x":
        return _compile(lines + "    return (g2 @ columns.T).reshape(x.shape)\n", "impl")
    if d == 1:
        return _compile(lines + "    return (rows.T @ g2).reshape(y.shape)\n", "impl")
    back = tuple(range(1, d - 1)) + (0, d - 1)  # (the summed axis back to second to last)
    return _compile(lines + "    moved = (rows.T @ g2).reshape((y.shape[-2],) + y.shape[:-2] + y.shape[-1:])\n"
                    f"    return np.ascontiguousarray(np.transpose(moved, {back}))\n", "impl")


@overload(rt.dot_bar_x)
def _dot_bar_x(g, x, y):
    if _nd(x) == 0 or _nd(y) == 0:
        return lambda g, x, y: rt.unbroadcast(g * y, x)
    if _dot_nd(x, y):
        return _dot_nd_bar(g, x, y, "x")
    return lambda g, x, y: rt.matmul_bar_x(g, x, y)


@overload(rt.dot_bar_y)
def _dot_bar_y(g, x, y):
    if _nd(x) == 0 or _nd(y) == 0:
        return lambda g, x, y: rt.unbroadcast(g * x, y)
    if _dot_nd(x, y):
        return _dot_nd_bar(g, x, y, "y")
    return lambda g, x, y: rt.matmul_bar_y(g, x, y)


@overload(rt.dot_zero)
def _dot_zero_overload(x, y):
    return _dot_zero(x, y)


@overload(rt.inner_bar_x)
def _inner_bar_x(g, x, y):
    nx, ny = _nd(x), _nd(y)
    if nx == 0 or ny == 0:
        return lambda g, x, y: rt.unbroadcast(g * y, x)
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * y
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.outer(g, y)
    if nx <= 2 and ny == 2:
        return lambda g, x, y: np.dot(g, y)
    return _inner_rows_bar("x")


def _inner_rows_bar(which: str):
    """np.inner's adjoint in x or y where one has more than two dimensions: of the product of
    the rows of their last axes (overloads/reductions.py), put back in shape."""
    def impl(g, x, y):
        rows_x = np.ascontiguousarray(x).reshape((-1, x.shape[-1]))
        rows_y = np.ascontiguousarray(y).reshape((-1, y.shape[-1]))
        g2 = np.ascontiguousarray(g * 1.0).reshape((rows_x.shape[0], rows_y.shape[0]))
        if which == "x":
            return (g2 @ rows_y).reshape(x.shape)
        return (g2.T @ rows_x).reshape(y.shape)
    return impl


@overload(rt.inner_bar_y)
def _inner_bar_y(g, x, y):
    if _nd(x) >= 1 and _nd(y) >= 1 and max(_nd(x), _nd(y)) > 2:
        return _inner_rows_bar("y")
    if _nd(x) == 2 and _nd(y) == 2:
        return lambda g, x, y: rt.inner_bar_x(np.transpose(g), y, x)
    return lambda g, x, y: rt.inner_bar_x(g, y, x)


@overload(rt.outer_bar_x)
def _outer_bar_x(g, x, y):
    return lambda g, x, y: np.dot(g, np.ravel(y)).reshape(x.shape)


@overload(rt.outer_bar_y)
def _outer_bar_y(g, x, y):
    return lambda g, x, y: np.dot(np.ravel(x), g).reshape(y.shape)


# np.diagonal and np.trace along any two axes: the two moved last (axis2 first, then axis1
# before it) and the array viewed as a stack of matrices, (outer, n1, n2); the diagonal of
# each is the last axis of the result, as NumPy's.


@register_jitable
def _planes(x, axis1, axis2):
    """x with axis1 and axis2 last, in that order, as a C-contiguous (outer, n1, n2) array."""
    a1, a2 = axis1 % x.ndim, axis2 % x.ndim
    moved = np.ascontiguousarray(np.moveaxis(np.moveaxis(x, a2, -1), a1 - (a1 > a2), -2))
    return moved.reshape((-1, moved.shape[-2], moved.shape[-1])), moved.shape


@register_jitable
def _unplanes(p, shape, axis1, axis2, ndim):
    a1, a2 = axis1 % ndim, axis2 % ndim
    return np.ascontiguousarray(np.moveaxis(np.moveaxis(p.reshape(shape), -2, a1 - (a1 > a2)), -1, a2))


@register_jitable
def _diagonal_of_planes(p, offset):
    k = max(0, min(p.shape[1] + min(offset, 0), p.shape[2] - max(offset, 0)))
    out = np.empty((p.shape[0], k), p.dtype)
    for i in range(k):
        out[:, i] = p[:, i + max(-offset, 0), i + max(offset, 0)]
    return out


@overload(rt.diagonal)
def _diagonal(x, offset=0, axis1=0, axis2=1):
    if _nd(x) < 2:
        raise TypingError("s2s: np.diagonal takes an array of 2 or more dimensions")

    def impl(x, offset=0, axis1=0, axis2=1):
        p, shape = _planes(x, axis1, axis2)
        d = _diagonal_of_planes(p, offset)
        return d.reshape(shape[:-2] + (d.shape[1],))
    return impl


@overload(rt.trace)
def _trace(x, offset=0, axis1=0, axis2=1):
    if _nd(x) < 2:
        raise TypingError("s2s: np.trace takes an array of 2 or more dimensions")
    if _nd(x) == 2:
        return lambda x, offset=0, axis1=0, axis2=1: np.sum(rt.diagonal(x, offset, axis1, axis2))

    def impl(x, offset=0, axis1=0, axis2=1):
        p, shape = _planes(x, axis1, axis2)
        d = _diagonal_of_planes(p, offset)
        out = np.zeros(d.shape[0], d.dtype)
        for i in range(d.shape[1]):
            out += d[:, i]
        return out.reshape(shape[:-2])
    return impl


@register_jitable
def _onto_diagonal(rows, x, offset, axis1, axis2):
    """diagonal_bar of rows, the diagonals as an (outer, k) array (k = 1: one value along each);
    x an array or its shape."""
    out, shape = _planes(np.zeros(_shape_of(x), rows.dtype), axis1, axis2)
    k = max(0, min(out.shape[1] + min(offset, 0), out.shape[2] - max(offset, 0)))
    for i in range(k):
        out[:, i + max(-offset, 0), i + max(offset, 0)] = rows[:, min(i, rows.shape[1] - 1)]
    return _unplanes(out, shape, axis1, axis2, len(shape))


@overload(rt.diagonal_bar)
def _diagonal_bar(g, x, offset=0, axis1=0, axis2=1):
    return lambda g, x, offset=0, axis1=0, axis2=1: _onto_diagonal(
        np.ascontiguousarray(g).reshape((-1, g.shape[-1])), x, offset, axis1, axis2)


@overload(rt.trace_bar)
def _trace_bar(g, x, offset=0, axis1=0, axis2=1):
    if _scalar(g):
        return lambda g, x, offset=0, axis1=0, axis2=1: _onto_diagonal(np.full((1, 1), g), x, offset, axis1, axis2)
    return lambda g, x, offset=0, axis1=0, axis2=1: _onto_diagonal(
        np.ascontiguousarray(g).reshape((-1, 1)), x, offset, axis1, axis2)


# ---- shapes -----------------------------------------------------------------------


@overload(rt.transpose_bar)
def _transpose_bar(g, axes=None):
    if _is_none(axes):
        return lambda g, axes=None: np.transpose(g)
    if not isinstance(axes, types.BaseTuple):
        raise TypingError("s2s: under jit, np.transpose takes its axes as a tuple")
    # The inverse permutation, as a tuple (Numba's transpose takes no array): entry j is the k
    # with axes[k] == j (negative axes counted from the end).
    n = len(axes)
    inverse = ", ".join(" + ".join(f"{k} * (axes[{k}] % {n} == {j})" for k in range(n)) for j in range(n))
    return _compile(f"def impl(g, axes=None):\n    return np.transpose(g, ({inverse},))\n", "impl")


@overload(rt.reshape)
def _reshape(x, shape):
    if not isinstance(x, types.Array) or x.layout == "C":
        return lambda x, shape: np.reshape(x, shape)
    # Numba reshapes C-ordered arrays only: a copy in C order, as NumPy makes of A.T.reshape(-1) (a
    # slice that NumPy could view in the new shape is copied too: Numba types its layout, not its strides)
    return lambda x, shape: np.reshape(np.ascontiguousarray(x), shape)


@overload(rt.reshape_bar)
def _reshape_bar(g, x):
    if _scalar(g):
        return lambda g, x: g
    if isinstance(x, types.BaseTuple) and len(x) > 0 and all(isinstance(t, types.Number) for t in x) \
            and not all(isinstance(t, types.Integer) for t in x):
        # (a list of numbers passed to s2s.jit, a tuple there: its adjoint is a vector; a tuple of
        # ints is the shape a shape tape gives back, x's before it was reshaped)
        size = len(x)
        return lambda g, x: np.ascontiguousarray(g).reshape((size,))
    if isinstance(x, types.Array) or (isinstance(x, types.BaseTuple) and len(x) > 0):
        return lambda g, x: np.ascontiguousarray(g).reshape(_shape_of(x))
    if isinstance(x, types.List):
        # A list of numbers (or of arrays of one shape) that np.array stacked: its adjoint is
        # an array of the stack's shape, which reads back as the list's adjoint does (g[k]).
        if isinstance(x.dtype, types.Array):
            return lambda g, x: np.ascontiguousarray(g).reshape((len(x),) + x[0].shape)
        return lambda g, x: np.ascontiguousarray(g).reshape((len(x),))
    return lambda g, x: np.ravel(g)[0]


def _along_axis(g, body) -> str:
    """Code with one branch per axis of g (axis an argument: its value is known at run time
    only); body(a) gives a branch's lines for axis a."""
    nd = _nd(g)
    lines = []
    for a in range(nd):
        lines.append(f"    {'if' if a == 0 else 'elif'} axis == {a} or axis == {a - nd}:")
        lines += ["        " + line for line in body(a)]
    lines.append("    raise ValueError('s2s: axis out of range')")
    return "\n".join(lines) + "\n"


@overload(rt.concatenate_bar)
def _concatenate_bar(g, xs, axis=0):
    def body(a):
        lines, parts = ["start = 0"], []
        for k in range(len(xs)):
            lines += [f"stop = start + xs[{k}].shape[{a}]", f"part{k} = g[{':, ' * a}start:stop].copy()",
                      "start = stop"]
            parts.append(f"part{k}")
        return lines + [f"return ({', '.join(parts)},)"]
    return _compile("def impl(g, xs, axis=0):\n" + _along_axis(g, body), "impl")


@overload(rt.split_zeros)
def _split_zeros(parts):
    if not (isinstance(parts, (types.List, types.ListType)) and isinstance(parts.dtype, types.Array)):
        raise TypingError("s2s: runtime.split_zeros takes the list of arrays np.split gives")
    dtype = parts.dtype.dtype if isinstance(parts.dtype.dtype, types.Float) else types.float64

    def impl(parts):
        zeros = [np.zeros(parts[0].shape, dtype) for _ in range(0)]  # (typed by its items, made empty)
        for k in range(len(parts)):
            zeros.append(np.zeros(parts[k].shape, dtype))
        return zeros
    return impl


@overload(rt.split_bar)
def _split_bar(parts, x, axis=0):
    # Each piece's adjoint is copied into its place along the axis; the pieces are a list (np.split's
    # own, or their adjoints summed) whose length is known as it runs, or a tuple (an unpacking's).
    if not isinstance(x, types.Array):
        raise TypingError("s2s: runtime.split_bar takes the array that was split")
    if isinstance(parts, (types.List, types.ListType)):
        items, loop = [parts.dtype], True
    elif isinstance(parts, types.Array) and parts.ndim == x.ndim + 1:
        # (the adjoint of a list of pieces of one shape, whose row k is piece k's: zeros_like's)
        items, loop = [types.Array(parts.dtype, x.ndim, "A")], True
    elif isinstance(parts, types.BaseTuple):
        items, loop = list(parts), False
    else:
        raise TypingError("s2s: runtime.split_bar takes the pieces' adjoints as a list or tuple")
    if not all(isinstance(t, types.Array) and t.ndim == x.ndim for t in items):
        raise TypingError("s2s: runtime.split_bar takes arrays of the split array's ndim")
    dtype = numpy_support.from_dtype(np.result_type(*(numpy_support.as_dtype(t.dtype) for t in items)))

    def body(a):
        lines = ["out = np.empty(x.shape, dtype)", "start = 0"]
        cut = ":, " * a
        if loop:
            lines += ["for k in range(len(parts)):", f"    stop = start + parts[k].shape[{a}]",
                      f"    out[{cut}start:stop] = parts[k]", "    start = stop"]
        else:
            for k in range(len(items)):
                lines += [f"stop = start + parts[{k}].shape[{a}]", f"out[{cut}start:stop] = parts[{k}]", "start = stop"]
        return lines + ["return out"]
    if _is_none(axis):  # (np.hsplit's axis, known from x's ndim)
        hsplit = 1 if x.ndim > 1 else 0
        source = "def impl(parts, x, axis=0):\n" + "\n".join("    " + line for line in body(hsplit)) + "\n"
    else:
        source = "def impl(parts, x, axis=0):\n" + _along_axis(x, body)
    return _compile(source, "impl", dtype=dtype)


def _arrays_of_one_ndim(xs) -> bool:
    """A list, or a tuple, whose items are arrays of one ndim (a stack of them has one more)."""
    if isinstance(xs, (types.List, types.ListType)):
        return isinstance(xs.dtype, types.Array)
    if isinstance(xs, types.BaseTuple) and len(xs) > 0:
        return all(isinstance(t, types.Array) for t in xs) and len({t.ndim for t in xs}) == 1
    return False


@numba.njit(nogil=True)
def _stack_problem(xs):
    """Why the arrays of a list have no stack along a first axis: 0 where they have one, 1 for
    an empty list (its item type has no size under Numba), 2 for items of different shapes."""
    if len(xs) == 0:
        return 1
    for k in range(len(xs)):
        if xs[k].shape != xs[0].shape:
            return 2
    return 0


@numba.njit(nogil=True)
def _stacked_rows(xs):
    """A new array with the items of a list of arrays of one shape as its rows."""
    out = np.empty((len(xs),) + xs[0].shape, xs[0].dtype)
    for k in range(len(xs)):
        out[k] = xs[k]
    return out


_EMPTY_LIST = "under jit, np.array and np.stack of an empty list of arrays have no shape"
_RAGGED_LIST = "np.array / np.stack of a list of arrays of different shapes"


def _list_stacker(where):
    """The stack of a list of arrays along a first axis, refusing with `where` named."""
    prefix = _refusal(where)
    return None if prefix is None else _stacker(prefix)


@functools.lru_cache(maxsize=None)
def _stacker(prefix: str):
    # (_compile: a name of its own for each message, which a cached caller links to by name)
    source = ("def stacked(xs):\n    problem = _stack_problem(xs)\n    if problem == 1:\n        raise ValueError(empty)\n"
              "    if problem == 2:\n        raise ValueError(ragged)\n    return _stacked_rows(xs)\n")
    return numba.njit(nogil=True)(_compile(source, "stacked", empty=prefix + _EMPTY_LIST, ragged=prefix + _RAGGED_LIST,
                                           _stack_problem=_stack_problem, _stacked_rows=_stacked_rows))


# np.array of a list display of arrays (Numba's own np.array, below), which passes no statement
_stacked_list = _stacker("s2s: ")


@overload(rt.stack)
def _stack(xs, axis=0, where=None):
    """np.stack of a tuple: Numba's own; of a list of arrays (along axis 0, the default): a
    new array with the list's items as its rows."""
    if isinstance(xs, types.BaseTuple):
        return lambda xs, axis=0, where=None: np.stack(xs, axis)
    if _arrays_of_one_ndim(xs):
        stacked = _list_stacker(where)
        if stacked is None:
            return None  # (typed again with where as a literal)
        other_axis = _refusal(where) + ("under jit, np.stack of a list stacks along axis 0; stack a tuple(...) of "
                                        "the arrays for another axis")
        return _compile("def impl(xs, axis=0, where=None):\n    if axis != 0:\n        raise ValueError(other_axis)\n"
                        "    return stacked(xs)\n", "impl", other_axis=other_axis, stacked=stacked)
    raise TypingError("s2s: under jit, np.stack takes a tuple or a list of arrays")


@overload(rt.stack_bar)
def _stack_bar(g, xs, axis=0):
    if isinstance(xs, (types.List, types.ListType)):
        # (axis 0, as rt.stack checked) A list's adjoint under jit is an array whose row k is
        # item k's (array_bar of a list, pop_adjoint), which g already is.
        return lambda g, xs, axis=0: g.copy()
    def body(a):
        parts = "".join(f"g[{':, ' * a}{k}].copy(), " for k in range(len(xs)))
        return [f"return ({parts})"]
    return _compile("def impl(g, xs, axis=0):\n" + _along_axis(g, body), "impl")


@overload(np.array)
def _array_of_arrays(x, dtype=None):
    """np.array((a, b)) of arrays, which Numba's own np.array does not build: generated code
    keeps np.array for a tuple or list display (codegen/numba_routes.py), whose items may be
    arrays. Only where Numba has no implementation of its own: of arrays of one ndim, and of a
    tuple of such rows (np.array([[a, b], [c, d]]))."""
    if _arrays_of_one_ndim(x):
        stacked = _stacked_list if isinstance(x, (types.List, types.ListType)) else np.stack
        if _is_none(dtype):
            return lambda x, dtype=None: stacked(x)
        return lambda x, dtype=None: stacked(x).astype(dtype)
    if _rows_of_arrays(x):
        return _stack_of_rows(x, dtype, "x, dtype=None")


def _rows_of_arrays(x) -> bool:
    """A tuple of lists or tuples whose items are arrays of one ndim, the same in every row."""
    return isinstance(x, types.BaseTuple) and len(x) > 0 and all(_arrays_of_one_ndim(row) for row in x) \
        and len({(row.dtype if isinstance(row, (types.List, types.ListType)) else row[0]).ndim for row in x}) == 1


def _stack_of_rows(x, dtype, parameters: str):
    """np.array of a tuple of rows of arrays: each row stacked, then the rows (NumPy's ragged
    rows are a ValueError; so are they here, from the stack)."""
    rows = ", ".join(f"stacked(x[{k}])" if isinstance(row, (types.List, types.ListType)) else f"np.stack(x[{k}])"
                     for k, row in enumerate(x))
    cast = "" if _is_none(dtype) else ".astype(dtype)"
    return _compile(f"def impl({parameters}):\n    return np.stack(({rows},)){cast}\n", "impl", stacked=_stacked_list)


@overload(rt.array)
def _array(x, dtype=None, where=None):
    """np.array(x, dtype): of an array, a C-contiguous copy (astype copies too); of a list or
    tuple of arrays, their stack; of another sequence or a number, Numba's own np.array."""
    if isinstance(x, types.Array):
        if _is_none(dtype):
            return lambda x, dtype=None, where=None: x.copy()
        return lambda x, dtype=None, where=None: x.astype(dtype)
    if _arrays_of_one_ndim(x):
        stacked = _list_stacker(where) if isinstance(x, (types.List, types.ListType)) else np.stack
        if stacked is None:
            return None  # (typed again with where as a literal)
        if _is_none(dtype):
            return lambda x, dtype=None, where=None: stacked(x)
        return lambda x, dtype=None, where=None: stacked(x).astype(dtype)
    if _rows_of_arrays(x):
        return _stack_of_rows(x, dtype, "x, dtype=None, where=None")
    if _is_none(dtype):
        return lambda x, dtype=None, where=None: np.array(x)
    return lambda x, dtype=None, where=None: np.array(x, dtype)


def _atleast(ndim):
    """np.atleast_<ndim>d: Numba's own of an array; of a number, an array of shape (1,) * ndim."""
    shape = (1,) * ndim

    def typer(x):
        if isinstance(x, types.Array):
            return {1: lambda x: np.atleast_1d(x), 2: lambda x: np.atleast_2d(x), 3: lambda x: np.atleast_3d(x)}[ndim]
        if _scalar(x):
            return lambda x: np.full(shape, x)
        raise TypingError(f"s2s: under jit, np.atleast_{ndim}d takes one array or number")
    return typer


for _ndim, _helper in ((1, rt.atleast_1d), (2, rt.atleast_2d), (3, rt.atleast_3d)):
    overload(_helper)(_atleast(_ndim))


@overload(rt.array_bar)
def _array_bar(g, x):
    if isinstance(x, types.BaseTuple):  # (a row that is a tuple itself: its own adjoints, item by item)
        items = "".join(f"rt.array_bar(g[{k}], x[{k}]), " if isinstance(t, types.BaseTuple)
                        else f"rt.reshape_bar(g[{k}], x[{k}]), " for k, t in enumerate(x))
        return _compile(f"def impl(g, x):\n    return ({items})\n", "impl")
    if isinstance(x, types.List):
        return lambda g, x: rt.reshape_bar(g, x)
    if isinstance(x, (types.Number, types.Boolean)) and isinstance(g, types.Array):
        return lambda g, x: g.item()  # (the adjoint of np.array(a) of a number is a number, as runtime.array_bar)
    return lambda g, x: g


@overload(np.clip)
def _clip_of_numbers(a, a_min, a_max, out=None):
    """np.clip of a number, which Numba's own np.clip (of arrays) does not take. NaN stays NaN."""
    def bound(t):
        return isinstance(t, (types.Number, types.NoneType, types.Omitted)) or t is None
    if not (isinstance(a, types.Number) and bound(a_min) and bound(a_max)):
        return None
    low = "" if _is_none(a_min) else "    if a < a_min:\n        return a_min\n"
    high = "" if _is_none(a_max) else "    if a > a_max:\n        return a_max\n"
    return _compile(f"def impl(a, a_min, a_max, out=None):\n{low}{high}    return a\n", "impl")


@overload(rt.clip_inside)
def _clip_inside(a, a_min, a_max):
    low = "True" if _is_none(a_min) else "a >= a_min"
    high = "True" if _is_none(a_max) else "a <= a_max"
    return _compile(f"def impl(a, a_min, a_max):\n    return (({low}) & ({high})) * 1.0\n", "impl")


# ---- linear algebra ---------------------------------------------------------------


@overload(rt.matrix_trace)
def _matrix_trace(x):
    if _nd(x) == 2:
        return lambda x: np.trace(x)
    lead = _nd(x) - 2
    source = (
        "def matrix_trace(x):\n"
        "    out = np.zeros(x.shape[:-2], x.dtype)\n"
        "    for k in np.ndindex(x.shape[:-2]):\n"
        "        for i in range(min(x.shape[-2], x.shape[-1])):\n"
        f"            out[k] += x[{_index([f'k[{d}]' for d in range(lead)] + ['i', 'i'])}]\n"
        "    return out\n")
    return _compile(source, "matrix_trace")


@overload(rt.matrix_trace_bar)
def _matrix_trace_bar(g, x):
    return lambda g, x: rt.per_matrix(g) * np.eye(x.shape[-2], x.shape[-1])


@overload(rt.per_matrix)
def _per_matrix(s):
    if _scalar(s):
        return lambda s: s
    return lambda s: s.reshape(s.shape + (1, 1))


@overload(rt.per_matrix_bar)
def _per_matrix_bar(g, s):
    if _scalar(s):
        return lambda g, s: np.sum(g)
    if _nd(g) == 2:
        return lambda g, s: np.sum(g, axis=0).sum(axis=0)
    return lambda g, s: np.sum(np.sum(g, axis=g.ndim - 1), axis=g.ndim - 2)


def _one_vector_for_a_stack(a, b) -> bool:
    return _nd(b) == 1 and _nd(a) > 2


@overload(rt.as_columns)
def _as_columns(v, a, b):
    if _one_vector_for_a_stack(a, b):
        if _nd(v) == 1:
            return lambda v, a, b: v.reshape((v.shape[0], 1))
        return lambda v, a, b: np.expand_dims(v, v.ndim)
    return lambda v, a, b: v


@overload(rt.from_columns)
def _from_columns(v, a, b):
    if _one_vector_for_a_stack(a, b):
        return lambda v, a, b: v[..., 0]
    return lambda v, a, b: v


@overload(rt.solve_bar_a)
def _solve_bar_a(b_adjoint, x):
    if _nd(x) == 1:
        return lambda b_adjoint, x: np.outer(b_adjoint, x)
    if _nd(x) >= 3:  # (a stack: @ of stacks, s2s/runtime/overloads/linalg.py)
        return lambda b_adjoint, x: b_adjoint @ np.swapaxes(x, -1, -2)
    return lambda b_adjoint, x: np.dot(b_adjoint, x.T)
