"""Overloads of the derivatives of np.linalg.norm (runtime/norms.py) for what Numba's
np.linalg.norm takes: a vector or a matrix, no axis. The ord is a number (a vector norm's p,
or 1, -1, 2, -2, inf, -inf of a matrix), None, or 'fro' / 'nuc' of a matrix. Vector norms along
an int axis of an array of 3 or more dimensions are those of the rows of a matrix (the axis
moved last, the others flattened in their order: _vectors_along), put back in the shape NumPy
gives them. Matrix norms over a pair of axes (every ord of a matrix) are those of a stack of
matrices (the pair moved last, the other axes flattened in their order: _matrices_over), each
taken as a matrix with no axis is, put back in NumPy's shape."""

from __future__ import annotations

import functools

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import runtime as rt
from .common import _compile, _is_false, _is_none, _nd

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


def _kept(keepdims) -> bool:
    """keepdims as the constant it must be (it decides the result's ndim), else a TypingError."""
    if keepdims is False or _is_false(keepdims):  # (False: the default, when the call leaves it out)
        return False
    if isinstance(keepdims, types.BooleanLiteral) or isinstance(keepdims, types.Omitted):
        return bool(getattr(keepdims, "literal_value", getattr(keepdims, "value", False)))
    raise TypingError("s2s: under s2s.jit, keepdims of np.linalg.norm must be a constant True or False")


def _kinds(x, ord, axis, keepdims, what):
    """(ord is a number, ord is a string, keepdims, an int axis of a matrix): the norms s2s.jit
    takes, else a TypingError. An int axis of a vector is the vector's norm."""
    number = isinstance(ord, (types.Integer, types.Float))
    text = isinstance(ord, (types.UnicodeType, types.StringLiteral))
    if not (_is_none(axis) or isinstance(axis, types.Integer) and not text):
        raise TypingError(f"s2s: under s2s.jit, the {what} of np.linalg.norm takes an axis only as one int axis "
                          "(vector norms along it) or as a pair of int axes (matrix norms over them); for a "
                          "1-tuple axis, pass its int, or use backend='python'")
    return number, text, _kept(keepdims), isinstance(axis, types.Integer) and _nd(x) == 2


def _deep_axis(x, ord, axis) -> bool:
    """Vector norms along an int axis of an array of 3 or more dimensions?"""
    text = isinstance(ord, (types.UnicodeType, types.StringLiteral))
    return isinstance(axis, types.Integer) and _nd(x) >= 3 and not text


def _vectors_along(x, axis):
    """(the vectors along an axis of x as the rows of a C-contiguous matrix, in the order of x's
    other axes; the shape of x with that axis moved last)."""


def _moved_last(nd: int) -> str:
    """Source of the permutation that moves axis `a` of nd axes last, the others in order."""
    return "(" + "".join(f"{k} if {k} < a else {k + 1}, " for k in range(nd - 1)) + "a)"


@overload(_vectors_along)
def _vectors_along_overload(x, axis):
    # (the number of rows is the product of the other axes' lengths: the axis itself may be empty)
    rows = " * ".join(f"moved.shape[{k}]" for k in range(_nd(x) - 1))
    return _compile(f"def impl(x, axis):\n    a = axis % x.ndim\n"
                    f"    moved = np.ascontiguousarray(np.transpose(x, {_moved_last(_nd(x))}))\n"
                    f"    return moved.reshape(({rows}, moved.shape[-1])), moved.shape\n", "impl")


def _vectors_back(d, shape, axis):
    """The rows of _vectors_along(x, axis), changed, in x's shape again."""


@overload(_vectors_back)
def _vectors_back_overload(d, shape, axis):
    nd = len(shape)
    back = "(" + "".join(f"{k} if {k} < a else ({nd - 1} if {k} == a else {k - 1}), " for k in range(nd)) + ")"
    return _compile(f"def impl(d, shape, axis):\n    a = axis % len(shape)\n"
                    f"    rows = np.ascontiguousarray(d).reshape(shape)\n"
                    f"    return np.ascontiguousarray(np.transpose(rows, {back}))\n", "impl")


@register_jitable
def _put_back(out, shape, axis):
    """The norms of the rows of _vectors_along(x, axis), one each, in the shape np.linalg.norm
    gives them: x's without the axis."""
    return out.reshape(shape[:-1])


@register_jitable
def _put_back_kept(out, shape, axis):
    """... and with the axis kept (of length 1)."""
    return _vectors_back(out.reshape(shape[:-1] + (1,)).copy(), shape[:-1] + (1,), axis)


@register_jitable
def _rows_first(x, axis):
    """The vectors an int axis of a matrix reduces, as rows."""
    return np.ascontiguousarray(x.T) if axis % 2 == 0 else np.ascontiguousarray(x)


@register_jitable
def _kept_axis(out, axis):
    """Norms along an int axis of a matrix, with that axis kept (of length 1)."""
    return out.reshape((1, -1)) if axis % 2 == 0 else out.reshape((-1, 1))


def _ones(nd: int) -> str:
    return "(" + "1, " * nd + ")"


def _first(v):
    """A number from a value that keepdims made an array of one element."""


@overload(_first)
def _first_overload(v):
    if isinstance(v, types.Array):
        return lambda v: np.ravel(v)[0]
    return lambda v: v


def _over_a_pair(x, axis) -> bool:
    """Matrix norms over a pair of axes (every ord NumPy takes of a matrix), of an array of 2 or
    more dimensions: those of a stack of matrices (_matrices_over), one at a time."""
    return (isinstance(axis, types.BaseTuple) and len(axis) == 2 and _nd(x) >= 2
            and all(isinstance(a, types.Integer) for a in axis))


@register_jitable
def _pair(axis, nd):
    """The pair of axes (rows, columns) as NumPy checks and counts them, from 0."""
    r, c = axis[0], axis[1]
    if r < -nd or r >= nd or c < -nd or c >= nd:
        raise ValueError("s2s: np.linalg.norm: an axis of the pair is out of bounds for the array")
    r, c = r % nd, c % nd
    if r == c:
        raise ValueError("s2s: np.linalg.norm: duplicate axes given")
    return r, c


def _matrices_over(x, axis):
    """(the matrices over a pair of axes of x as a C-contiguous stack (B, m, n), their rows along
    axis[0] and their columns along axis[1] as NumPy takes them, in the order of x's other axes;
    the shape of x with the pair moved last, in that order)."""


@overload(_matrices_over)
def _matrices_over_overload(x, axis):
    nd = _nd(x)
    # the k-th of the other axes, lo and hi the pair in increasing order
    others = "".join(f"{k} if {k} < lo else ({k + 1} if {k + 1} < hi else {k + 2}), " for k in range(nd - 2))
    count = " * ".join(f"moved.shape[{k}]" for k in range(nd - 2)) or "1"
    return _compile(f"def impl(x, axis):\n    r, c = _pair(axis, x.ndim)\n    lo, hi = min(r, c), max(r, c)\n"
                    f"    moved = np.ascontiguousarray(np.transpose(x, ({others}r, c)))\n"
                    f"    return moved.reshape(({count}, moved.shape[-2], moved.shape[-1])), moved.shape\n",
                    "impl", _pair=_pair)


def _matrices_back(d, shape, axis):
    """The stack of _matrices_over(x, axis), changed, in x's shape again."""


@overload(_matrices_back)
def _matrices_back_overload(d, shape, axis):
    nd = len(shape)
    back = "".join(f"{nd - 2} if {k} == r else ({nd - 1} if {k} == c else "
                   f"{k} - (1 if {k} > r else 0) - (1 if {k} > c else 0)), " for k in range(nd))
    return _compile(f"def impl(d, shape, axis):\n    r, c = _pair(axis, len(shape))\n"
                    f"    moved = np.ascontiguousarray(d).reshape(shape)\n"
                    f"    return np.ascontiguousarray(np.transpose(moved, ({back})))\n", "impl", _pair=_pair)


@register_jitable
def _pair_put_back_number(out, shape, axis):
    return out[0]


@register_jitable
def _pair_put_back_array(out, shape, axis):
    return out.reshape(shape[:-2])


@functools.cache
def _pair_put_back(nd: int, kept: bool):
    """A function (out, shape, axis) -> the norms of the stack of _matrices_over(x, axis), one
    each, in the shape np.linalg.norm gives them: x's without the pair, or with it kept (of
    length 1); a number where x is a matrix and keepdims is False."""
    if not kept:
        return _pair_put_back_number if nd == 2 else _pair_put_back_array
    # (the other axes keep their order, so x's shape with the pair of length 1 is a reshape)
    dims = "".join(f"1 if {k} == r or {k} == c else others[{k} - (1 if {k} > r else 0) - (1 if {k} > c else 0)], "
                   for k in range(nd))
    return register_jitable(_compile(f"def impl(out, shape, axis):\n    r, c = _pair(axis, len(shape))\n"
                                     f"    others = shape[:-2] + (1, 1)\n"
                                     f"    return out.reshape(({dims}))\n", "impl", _pair=_pair))


def _each(v, y):
    """One number per matrix of the stack, in its order, from v shaped like the norms y (or
    broadcast to them)."""


@overload(_each)
def _each_overload(v, y):
    if isinstance(y, types.Array):
        return lambda v, y: np.ravel(v + np.zeros(y.shape))
    return lambda v, y: np.full(1, _first(v) * 1.0)


def _frobenius_over_two_axes(x, ord, axis, keepdims) -> bool:
    """The Frobenius norms over a pair of axes of an array of 3 or more dimensions (ord None or
    'fro' as a constant, no keepdims): sqrt of a sum of squares over those axes, as rt.reduce_sum
    takes them, with no stack of matrices (and none of the SVD code its other ords compile)."""
    fro = _is_none(ord) or isinstance(ord, types.StringLiteral) and ord.literal_value == "fro"
    return _over_a_pair(x, axis) and _nd(x) >= 3 and fro and (keepdims is False or _is_false(keepdims))


@register_jitable
def _named(ord):
    if ord == "nuc":
        return NUC
    if ord != "fro":
        raise ValueError("Invalid norm order for matrices.")
    return FRO


@register_jitable
def _fro_ord(ord):
    return FRO, 0.0


@register_jitable
def _named_ord(ord):
    return _named(ord), 0.0


@register_jitable
def _number_ord(ord):
    return NUMBER, float(ord)


def _matrix_ord(ord):
    """A function ord -> (kind, p): a matrix norm's ord as _matrix_d takes it, for ord's type.
    (The loops over a stack take these, not ord: they compile once for every ord.)"""
    if _is_none(ord):
        return _fro_ord
    if isinstance(ord, (types.UnicodeType, types.StringLiteral)):
        return _named_ord
    if isinstance(ord, (types.Integer, types.Float)):
        return _number_ord
    raise TypingError(f"s2s: np.linalg.norm of a matrix takes ord None, a number, 'fro' or 'nuc' (got {ord})")


def _literal(ord, axis, keepdims=None) -> bool:
    """Whether the pair path is asked with a constant ord or axis (and no constant keepdims, which
    decides the result's ndim): it then returns None, and Numba types the call again with their
    plain types, so that it compiles once for each type of ord rather than for each value of ord
    and axis (each compile links all of the SVD code in)."""
    constant = isinstance(ord, types.Literal) or any(isinstance(a, types.Literal) for a in axis)
    return constant and not isinstance(keepdims, types.BooleanLiteral)


@register_jitable
def _stack_norms(stack, kind, p):
    """np.linalg.norm of each matrix of a stack (B, m, n)."""
    out = np.empty(stack.shape[0])
    for i in range(stack.shape[0]):
        m = np.ascontiguousarray(stack[i] * 1.0)
        if kind == FRO:
            out[i] = np.sqrt(np.sum(m * m))
        elif kind == NUC:
            out[i] = np.sum(np.linalg.svd(m, full_matrices=False)[1])
        else:
            out[i] = np.linalg.norm(m, p)
    return out


@register_jitable
def _stack_bar(g, y, stack, kind, p):
    """g D of each matrix of a stack (g, y: one number per matrix)."""
    d = np.empty(stack.shape)
    for i in range(stack.shape[0]):
        d[i] = g[i] * _matrix_d(stack[i], y[i], kind, p)
    return d


@register_jitable
def _stack_dot(dots, y, stack, kind, p):
    """The sum of D x_dot of each matrix of a stack (dots: the stack of x_dot)."""
    out = np.empty(stack.shape[0])
    for i in range(stack.shape[0]):
        out[i] = np.sum(_matrix_d(stack[i], y[i], kind, p) * dots[i])
    return out


@register_jitable
def _stack_curvature(g, y, stack, dots, kind, p):
    """g dD along x_dot of each matrix of a stack, as _norm_bar_curvature takes one matrix."""
    c = np.empty(stack.shape)
    for i in range(stack.shape[0]):
        if kind == FRO:
            c[i] = _two_norm_curvature(g[i], y[i], stack[i], dots[i])
        elif kind == NUC:
            c[i] = g[i] * _svd_curvature(stack[i], dots[i], True, True)
        else:
            c[i] = _matrix_curvature(g[i], y[i], stack[i], dots[i], p)
    return c


@overload(rt.linalg_norm, prefer_literal=True)
def _linalg_norm(x, ord=None, axis=None, keepdims=False):
    if _deep_axis(x, ord, axis):
        put_back = _put_back_kept if _kept(keepdims) else _put_back

        def deep(x, ord=None, axis=None, keepdims=False):
            a = axis % x.ndim
            rows, shape = _vectors_along(x, a)
            return put_back(rt.linalg_norm(rows, ord, 1), shape, a)
        return deep
    if _frobenius_over_two_axes(x, ord, axis, keepdims):
        return lambda x, ord=None, axis=None, keepdims=False: np.sqrt(rt.reduce_sum(x * x, axis))
    if _over_a_pair(x, axis):
        if _literal(ord, axis, keepdims):
            return None
        put_back, kind_of = _pair_put_back(_nd(x), _kept(keepdims)), _matrix_ord(ord)

        def pair(x, ord=None, axis=None, keepdims=False):
            stack, shape = _matrices_over(x, axis)
            kind, p = kind_of(ord)
            return put_back(_stack_norms(stack, kind, p), shape, axis)
        return pair
    number, text, kept, by_axis = _kinds(x, ord, axis, keepdims, "value")
    if by_axis:
        def along(x, ord=None, axis=None, keepdims=False):
            rows = _rows_first(x, axis)
            out = np.empty(rows.shape[0])
            for i in range(rows.shape[0]):
                out[i] = np.linalg.norm(rows[i], ord)
            return out
        if not kept:
            return along
        along = register_jitable(along)
        return lambda x, ord=None, axis=None, keepdims=False: _kept_axis(along(x, ord, axis, keepdims), axis)
    if text and _nd(x) == 2:
        def by_name(x, ord=None, axis=None, keepdims=False):
            if ord == "nuc":
                return np.sum(np.linalg.svd(np.ascontiguousarray(x * 1.0))[1])
            if ord != "fro":
                raise ValueError("Invalid norm order for matrices.")
            return np.sqrt(np.sum(x * x))
        whole = by_name
    else:
        whole = lambda x, ord=None, axis=None, keepdims=False: np.linalg.norm(x, ord)  # noqa: E731
    if not kept:
        return whole
    # keepdims without an int axis of a matrix: the one norm, as an array of x's ndim
    return _compile(f"def impl(x, ord=None, axis=None, keepdims=False):\n"
                    f"    return np.full({_ones(_nd(x))}, whole(x, ord, axis, keepdims))\n", "impl",
                    whole=register_jitable(whole))


@register_jitable
def _vector_d_rows(x, y, p, axis):
    """D of the vector norms along an int axis of a matrix (y: their values, one per row)."""
    rows = _rows_first(x, axis)
    d = np.empty(rows.shape)
    for i in range(rows.shape[0]):
        d[i] = _vector_d(rows[i], y[i], p)
    return d.T if axis % 2 == 0 else d


def _derivative(x, ord, axis, keepdims, what):
    """A function (x, y, ord, axis) -> D for these types, or a TypingError. y: the norm as a
    number, or (along an int axis of a matrix) a vector of norms."""
    number, text, kept, by_axis = _kinds(x, ord, axis, keepdims, what)
    if by_axis:
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


@register_jitable
def _over(a, y):
    """a / y, 0 where y is 0 (the norm's derivative there: the python backend's choice)."""
    zero = y == 0.0
    return np.where(zero, 0.0, a / np.where(zero, 1.0, y))


@overload(rt.norm_bar, prefer_literal=True)
def _norm_bar(g, y, x, ord=None, axis=None, keepdims=False):
    if _deep_axis(x, ord, axis):
        # (g and y: one number per vector along the axis, in the order of the others, the axis kept or not)
        def deep(g, y, x, ord=None, axis=None, keepdims=False):
            a = axis % x.ndim
            rows, shape = _vectors_along(x, a)
            d = rt.norm_bar(np.ascontiguousarray(g * 1.0).reshape(-1), np.ascontiguousarray(y * 1.0).reshape(-1),
                            rows, ord, 1, False)
            return _vectors_back(d, shape, a)
        return deep
    if _frobenius_over_two_axes(x, ord, axis, keepdims):  # g x / y, y and g spread over the axes
        return lambda g, y, x, ord=None, axis=None, keepdims=False: rt.sum_bar(_over(g * 1.0, y), x, axis) * x
    if _over_a_pair(x, axis):
        if _literal(ord, axis):  # (keepdims: g and y have the shape it gives)
            return None
        kind_of = _matrix_ord(ord)

        # (g and y: one number per matrix over the pair, in the order of the other axes, the pair kept or not)
        def pair(g, y, x, ord=None, axis=None, keepdims=False):
            stack, shape = _matrices_over(x, axis)
            kind, p = kind_of(ord)
            return _matrices_back(_stack_bar(_each(g, y), _each(y, y), stack, kind, p), shape, axis)
        return pair
    d = register_jitable(_derivative(x, ord, axis, keepdims, "derivative"))

    if _kinds(x, ord, axis, keepdims, "derivative")[3]:
        # g and y hold one number per row (or column); keepdims keeps the reduced axis
        def along(g, y, x, ord=None, axis=None, keepdims=False):
            if axis % 2 == 0:
                return d(x, np.ravel(y), ord, axis) * g.reshape((1, -1))
            return d(x, np.ravel(y), ord, axis) * g.reshape((-1, 1))
        return along

    def impl(g, y, x, ord=None, axis=None, keepdims=False):
        return _first(g) * d(x, _first(y), ord, axis)

    return impl


@overload(rt.norm_dot, prefer_literal=True)
def _norm_dot(x_dot, y, x, ord=None, axis=None, keepdims=False):
    if _deep_axis(x, ord, axis):
        put_back = _put_back_kept if _kept(keepdims) else _put_back

        def deep(x_dot, y, x, ord=None, axis=None, keepdims=False):
            a = axis % x.ndim
            rows, shape = _vectors_along(x, a)
            dots = _vectors_along(x_dot + np.zeros(x.shape), a)[0]
            out = rt.norm_dot(dots, np.ascontiguousarray(y * 1.0).reshape(-1), rows, ord, 1, False)
            return put_back(out, shape, a)
        return deep
    if _frobenius_over_two_axes(x, ord, axis, keepdims):  # the sum of x x_dot over the axes, over y
        return lambda x_dot, y, x, ord=None, axis=None, keepdims=False: _over(rt.reduce_sum(x * x_dot, axis), y)
    if _over_a_pair(x, axis):
        if _literal(ord, axis, keepdims):
            return None
        put_back, kind_of = _pair_put_back(_nd(x), _kept(keepdims)), _matrix_ord(ord)

        def pair(x_dot, y, x, ord=None, axis=None, keepdims=False):
            stack, shape = _matrices_over(x, axis)
            dots = _matrices_over(x_dot + np.zeros(x.shape), axis)[0]
            kind, p = kind_of(ord)
            return put_back(_stack_dot(dots, _each(y, y), stack, kind, p), shape, axis)
        return pair
    d = register_jitable(_derivative(x, ord, axis, keepdims, "derivative"))
    kept = _kinds(x, ord, axis, keepdims, "derivative")[2]

    if _kinds(x, ord, axis, keepdims, "derivative")[3]:
        if kept:
            return lambda x_dot, y, x, ord=None, axis=None, keepdims=False: _kept_axis(
                np.sum(d(x, np.ravel(y), ord, axis) * x_dot, axis=axis % 2), axis)
        return lambda x_dot, y, x, ord=None, axis=None, keepdims=False: np.sum(
            d(x, y, ord, axis) * x_dot, axis=axis % 2)
    if kept:
        return _compile(f"def impl(x_dot, y, x, ord=None, axis=None, keepdims=False):\n"
                        f"    return np.full({_ones(_nd(x))}, np.sum(d(x, _first(y), ord, axis) * x_dot))\n",
                        "impl", d=d, _first=_first)

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
def _matrix_curvature(g, y, x, x_dot, p):
    if p == 2.0 or p == -2.0:
        return g * _svd_curvature(x, x_dot, False, p == 2.0)
    if p == 1.0 or p == np.inf or p == -np.inf or p == -1.0:
        return np.zeros(x.shape)  # D is piecewise constant
    raise ValueError("s2s: second derivatives of np.linalg.norm are implemented for ord None, 'fro', 'nuc', "
                     "1, -1, 2, -2, inf and -inf of a matrix, and any ord of a vector")


@register_jitable
def _vector_curvature(g, y, x, x_dot, p):
    if p == 2.0:
        return _two_norm_curvature(g, y, x, x_dot)
    if p == 1.0 or p == np.inf or p == -np.inf or p == 0.0:
        return np.zeros(x.shape)  # D is piecewise constant
    return _p_norm_curvature(g, y, x, x_dot, p)


@register_jitable
def _p_norm_curvature(g, y, x, x_dot, p):
    """Along x_dot, g * D changes by g (p-1) (|x|^(p-2) x_dot - sign(x) |x|^(p-1) y_dot / y) / y^(p-1)
    where D = sign(x) |x|^(p-1) / y^(p-1) (runtime/norms.py)."""
    if y == 0:
        return np.zeros(x.shape)
    size = np.abs(x)
    y_dot = np.sum(np.sign(x) * size ** (p - 1) * x_dot) / y ** (p - 1)
    return g * (p - 1) * (size ** (p - 2) * x_dot - np.sign(x) * size ** (p - 1) * (y_dot / y)) / y ** (p - 1)


@register_jitable
def _rows_curvature(g, y, x, x_dot, p, axis):
    """_vector_curvature of each vector norm along an int axis of a matrix (g, y: one per vector)."""
    if p == 1.0 or p == np.inf or p == -np.inf or p == 0.0:
        return np.zeros(x.shape)  # D is piecewise constant
    rows = _rows_first(x, axis)
    row_dots = _rows_first(x_dot * np.ones(x.shape), axis)
    out = np.empty(rows.shape)
    for i in range(rows.shape[0]):
        out[i] = _p_norm_curvature(g[i], y[i], rows[i], row_dots[i], p)
    return out.T if axis % 2 == 0 else out


@overload(rt.norm_bar_curvature, prefer_literal=True)
def _norm_bar_curvature(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
    if _deep_axis(x, ord, axis):
        def deep(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
            a = axis % x.ndim
            rows, shape = _vectors_along(x, a)
            dots = _vectors_along(x_dot + np.zeros(x.shape), a)[0]
            c = rt.norm_bar_curvature(np.ascontiguousarray(g * 1.0).reshape(-1),
                                      np.ascontiguousarray(y * 1.0).reshape(-1), rows, dots, ord, 1, False)
            return _vectors_back(c, shape, a)
        return deep
    if _over_a_pair(x, axis):
        if _literal(ord, axis):
            return None
        kind_of = _matrix_ord(ord)

        def pair(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
            stack, shape = _matrices_over(x, axis)
            dots = _matrices_over(x_dot + np.zeros(x.shape), axis)[0]
            kind, p = kind_of(ord)
            return _matrices_back(_stack_curvature(_each(g, y), _each(y, y), stack, dots, kind, p), shape, axis)
        return pair
    _derivative(x, ord, axis, keepdims, "second derivative")
    if _kinds(x, ord, axis, keepdims, "second derivative")[3]:
        # g and y hold one number per row (or column); keepdims keeps the reduced axis
        if _is_none(ord):
            return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _rows_curvature(
                np.ravel(g * 1.0), np.ravel(y * 1.0), x, x_dot, 2.0, axis)
        return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _rows_curvature(
            np.ravel(g * 1.0), np.ravel(y * 1.0), x, x_dot, float(ord), axis)
    # (g and y: numbers, or arrays of one element under keepdims)
    if _is_none(ord):
        return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _two_norm_curvature(
            _first(g), _first(y), x, x_dot)
    if isinstance(ord, (types.UnicodeType, types.StringLiteral)):
        def impl(g, y, x, x_dot, ord=None, axis=None, keepdims=False):
            if ord == "nuc":
                return _first(g) * _svd_curvature(x, x_dot, True, True)
            return _two_norm_curvature(_first(g), _first(y), x, x_dot)
        return impl
    if _nd(x) == 2:
        return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _matrix_curvature(
            _first(g), _first(y), x, x_dot, float(ord))
    return lambda g, y, x, x_dot, ord=None, axis=None, keepdims=False: _vector_curvature(
        _first(g), _first(y), x, x_dot, float(ord))
