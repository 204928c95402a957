"""Overloads of the helpers for scans, shifts and rearrangements (runtime/arrays.py): flip, rot90,
cumsum, cumprod, diff, roll, sort (with an axis, which Numba's own take none), rollaxis, tile
(which Numba lacks), flatten, diag, hstack/vstack, astype and s2s.lax's dynamic slices, and their
derivatives.

Work along an axis goes through _rows: the axis swapped last and the array viewed as rows
(one per position of the other axes), so one kernel over rows serves every ndim and axis, an
argument of the compiled function included. The kernels are register_jitable, compiled into
their callers as the other overloads' code is."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype

from ... import runtime as rt
from .common import _compile, _is_none, _nd, _scalar
from .reductions import _shape_of


@register_jitable
def _rows(x, axis):
    """x with `axis` last, as a C-contiguous (rows, length) array, and that array's shape."""
    moved = np.ascontiguousarray(np.swapaxes(x, axis, -1))
    rows = 1
    for k in range(moved.ndim - 1):  # (not size // n: the axis may have length 0)
        rows *= moved.shape[k]
    return moved.reshape((rows, moved.shape[-1])), moved.shape


@register_jitable
def _unrows(r, shape, axis):
    return np.ascontiguousarray(np.swapaxes(r.reshape(shape), axis, -1))


@register_jitable
def _flat_row(x):
    return np.ascontiguousarray(x).reshape((1, x.size))


def _array(name, t):
    if not isinstance(t, types.Array):
        raise TypingError(f"s2s: under jit, {name} takes an array")


# ---- flip, cumsum, cumprod -------------------------------------------------------------


@register_jitable
def _flip_rows(x):
    return np.ascontiguousarray(x[:, ::-1])


@overload(rt.flip)
def _flip(x, axis=None):
    _array("np.flip", x)
    if _is_none(axis):
        return lambda x, axis=None: np.flip(x)
    if not isinstance(axis, types.BaseTuple):
        def impl(x, axis=None):
            r, shape = _rows(x, axis)
            return _unrows(_flip_rows(r), shape, axis)
        return impl
    lines = "".join(f"    r, shape = _rows(x, axis[{k}])\n    x = _unrows(_flip_rows(r), shape, axis[{k}])\n"
                    for k in range(len(axis)))
    return _compile(f"def impl(x, axis=None):\n{lines}    return x\n", "impl", _rows=_rows, _unrows=_unrows,
                    _flip_rows=_flip_rows)




# np.rot90 and np.rollaxis are a flip and a transpose: Numba has both with axes known as it runs
# (np.swapaxes, np.moveaxis). Each branch is made C-contiguous, so that they return one type.


@overload(rt.rot90)
def _rot90(x, k=1, axes=(0, 1)):
    _array("np.rot90", x)
    if _nd(x) < 2:
        raise TypingError("s2s: np.rot90 turns an array of 2 or more dimensions")

    def impl(x, k=1, axes=(0, 1)):
        a0, a1 = axes[0] % x.ndim, axes[1] % x.ndim
        turns = k % 4
        if turns == 0:
            return np.ascontiguousarray(x)
        if turns == 2:
            return rt.flip(rt.flip(x, a0), a1)
        if turns == 1:
            return np.ascontiguousarray(np.swapaxes(rt.flip(x, a1), a0, a1))
        return rt.flip(np.ascontiguousarray(np.swapaxes(x, a0, a1)), a1)
    return impl


_rolled_to = register_jitable(rt.arrays._rolled_to)


@overload(rt.rollaxis)
def _rollaxis(x, axis, start=0):
    _array("np.rollaxis", x)
    return lambda x, axis, start=0: np.moveaxis(x, axis % x.ndim, _rolled_to(x.ndim, axis, start))


@overload(rt.rollaxis_bar)
def _rollaxis_bar(g, axis, start=0):
    _array("np.rollaxis", g)
    return lambda g, axis, start=0: np.moveaxis(g, _rolled_to(g.ndim, axis, start), axis % g.ndim)


@overload(rt.flatten)
def _flatten(x, order="C"):
    if _scalar(x):
        return lambda x, order="C": np.array([x])
    _array("x.flatten()", x)

    def impl(x, order="C"):
        if order == "F":
            return x.T.flatten()  # (the axes reversed, read in C order)
        return x.flatten()
    return impl


@overload(rt.flatten_bar)
def _flatten_bar(g, x, order="C"):
    if _scalar(x) or isinstance(x, types.BaseTuple) and len(x) == 0:  # (a number, or its shape)
        return lambda g, x, order="C": g[0]

    def impl(g, x, order="C"):
        shape = _shape_of(x)
        if order == "F":
            return np.ascontiguousarray(np.ascontiguousarray(g).reshape(shape[::-1]).T)
        return np.ascontiguousarray(g).reshape(shape)
    return impl


@register_jitable
def _cumsum_rows(x, reverse):
    """The cumulative sum of each row, or (reverse) summed from its end: cumsum's adjoint."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        if reverse:
            out[i] = np.cumsum(x[i][::-1])[::-1]
        else:
            out[i] = np.cumsum(x[i])
    return out


@overload(rt.cumsum)
def _cumsum(x, axis=None):
    _array("np.cumsum", x)
    if _is_none(axis):
        return lambda x, axis=None: np.cumsum(x)

    def impl(x, axis=None):
        r, shape = _rows(x, axis)
        return _unrows(_cumsum_rows(r, False), shape, axis)
    return impl


@overload(rt.cumsum_bar)
def _cumsum_bar(g, x, axis=None):
    if _is_none(axis):
        if _scalar(x):
            return lambda g, x, axis=None: np.flip(np.cumsum(np.flip(np.ravel(g))))[0]
        return lambda g, x, axis=None: np.ascontiguousarray(np.flip(np.cumsum(np.flip(np.ravel(g))))).reshape(x.shape)

    def impl(g, x, axis=None):
        r, shape = _rows(g, axis)
        return _unrows(_cumsum_rows(r, True), shape, axis)
    return impl


# ---- cumprod ----------------------------------------------------------------------


@register_jitable
def _cumprod_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.cumprod(x[i])
    return out


@register_jitable
def _cumprod_jvp_rows(t, x):
    y = _cumprod_rows(x)
    out = np.zeros_like(t * x)
    for i in range(x.shape[0]):
        if x.shape[1]:
            out[i, 0] = t[i, 0]
        for k in range(1, x.shape[1]):
            out[i, k] = out[i, k - 1] * x[i, k] + y[i, k - 1] * t[i, k]
    return out


@register_jitable
def _cumprod_jvp2_rows(t, s, x):
    b, c = _cumprod_jvp_rows(t, x), _cumprod_jvp_rows(s, x)
    out = np.zeros_like(b * c)
    for i in range(x.shape[0]):
        for k in range(1, x.shape[1]):
            out[i, k] = out[i, k - 1] * x[i, k] + b[i, k - 1] * s[i, k] + c[i, k - 1] * t[i, k]
    return out


@register_jitable
def _cumprod_vjp_rows(g, x, s, with_dx):
    """cumprod_vjp, or with_dx its derivative in x along s (cumprod_vjp_dx)."""
    y = _cumprod_rows(x)
    c = _cumprod_jvp_rows(s, x)
    out = np.zeros_like(g * x * s)
    for i in range(x.shape[0]):
        n = x.shape[1]
        a, a_dot = 0.0, 0.0
        for k in range(n - 1, -1, -1):
            if k == n - 1:
                a, a_dot = g[i, k], 0.0 * g[i, k]
            else:
                a, a_dot = g[i, k] + a * x[i, k + 1], a_dot * x[i, k + 1] + a * s[i, k + 1]
            if not with_dx:
                out[i, k] = a * y[i, k - 1] if k else a
            else:
                out[i, k] = a_dot * y[i, k - 1] + a * c[i, k - 1] if k else a_dot
    return out


def _along(axis, flat_result):
    """Code that applies a row kernel to arguments along axis (None: the flattened arrays)."""
    if _is_none(axis):
        return ("_flat_row", "out.ravel()" if flat_result else "out.reshape(x.shape)")
    return ("_rows", "_unrows(out, shape, axis)")


def _scan(kernel, names, axis, flat_result):
    rows, back = _along(axis, flat_result)
    if rows == "_flat_row":
        lines = [f"    {n}r = _flat_row({n})" for n in names]
    else:
        lines = [f"    {n}r, shape = _rows({n}, axis)" for n in names]
    args = ", ".join(f"{n}r" for n in names)
    source = (f"def impl({', '.join(names)}, axis=None):\n" + "\n".join(lines) +
              f"\n    out = {kernel}({args})\n    return {back}\n")
    return _compile(source, "impl", _rows=_rows, _unrows=_unrows, _flat_row=_flat_row,
                    **{kernel: globals()[kernel]})


def _arrays(name, *ts):
    for t in ts:
        _array(name, t)


@overload(rt.cumprod)
def _cumprod(x, axis=None):
    _arrays("np.cumprod", x)
    if _is_none(axis):
        return lambda x, axis=None: np.cumprod(x)
    return _scan("_cumprod_rows", ["x"], axis, True)


@overload(rt.cumprod_jvp)
def _cumprod_jvp(t, x, axis=None):
    _arrays("np.cumprod", t, x)
    swap = _scan("_cumprod_jvp_rows", ["t", "x"], axis, True)
    return swap


@overload(rt.cumprod_jvp2)
def _cumprod_jvp2(t, s, x, axis=None):
    _arrays("np.cumprod", t, s, x)
    return _scan("_cumprod_jvp2_rows", ["t", "s", "x"], axis, True)


@overload(rt.cumprod_vjp)
def _cumprod_vjp(g, x, axis=None):
    _arrays("np.cumprod", g, x)
    rows, back = _along(axis, False)
    get = "_flat_row({0})" if rows == "_flat_row" else "_rows({0}, axis)[0]"
    source = (f"def impl(g, x, axis=None):\n    gr, xr = {get.format('g')}, {get.format('x')}\n"
              + ("" if rows == "_flat_row" else "    shape = _rows(x, axis)[1]\n")
              + f"    out = _cumprod_vjp_rows(gr, xr, xr, False)\n    return {back}\n")
    return _compile(source, "impl", _rows=_rows, _unrows=_unrows, _flat_row=_flat_row,
                    _cumprod_vjp_rows=_cumprod_vjp_rows)


@overload(rt.cumprod_vjp_dx)
def _cumprod_vjp_dx(g, x, s, axis=None):
    _arrays("np.cumprod", g, x, s)
    rows, back = _along(axis, False)
    get = "_flat_row({0})" if rows == "_flat_row" else "_rows({0}, axis)[0]"
    source = (f"def impl(g, x, s, axis=None):\n    gr, xr, sr = {get.format('g')}, {get.format('x')}, "
              f"{get.format('s')}\n" + ("" if rows == "_flat_row" else "    shape = _rows(x, axis)[1]\n")
              + f"    out = _cumprod_vjp_rows(gr, xr, sr, True)\n    return {back}\n")
    return _compile(source, "impl", _rows=_rows, _unrows=_unrows, _flat_row=_flat_row,
                    _cumprod_vjp_rows=_cumprod_vjp_rows)


# ---- diff, roll, sort ----------------------------------------------------------------


@overload(rt.diff)
def _diff(x, n=1, axis=-1):
    _array("np.diff", x)

    def impl(x, n=1, axis=-1):
        return np.ascontiguousarray(np.swapaxes(np.diff(np.ascontiguousarray(np.swapaxes(x, axis, -1)), n), axis, -1))
    return impl


@overload(rt.diff_bar)
def _diff_bar(g, x, n=1, axis=-1):
    _array("np.diff", g)

    def impl(g, x, n=1, axis=-1):
        h = np.ascontiguousarray(np.swapaxes(g, axis, -1))
        for _ in range(n):
            out = np.zeros(h.shape[:-1] + (h.shape[-1] + 1,), h.dtype)
            out[..., :-1] -= h
            out[..., 1:] += h
            h = out
        return np.ascontiguousarray(np.swapaxes(h, axis, -1))
    return impl


@register_jitable
def _roll_rows(x, shift):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.roll(x[i], shift)
    return out


def _roll_source(shift, axis, sign):
    if isinstance(shift, types.BaseTuple) != isinstance(axis, types.BaseTuple) and not _is_none(axis):
        raise TypingError("s2s: under jit, np.roll takes an int shift and axis, or tuples of both")
    if _is_none(axis):
        total = " + ".join(f"shift[{k}]" for k in range(len(shift))) if isinstance(shift, types.BaseTuple) \
            else "shift"
        return f"    return np.roll(x, {sign}({total}))\n"
    if not isinstance(shift, types.BaseTuple):
        return f"    r, shape = _rows(x, axis)\n    return _unrows(_roll_rows(r, {sign}shift), shape, axis)\n"
    lines = ""
    for k in range(len(shift)):
        lines += (f"    r, shape = _rows(x, axis[{k}])\n"
                  f"    x = _unrows(_roll_rows(r, {sign}shift[{k}]), shape, axis[{k}])\n")
    return lines + "    return x\n"


@overload(rt.roll)
def _roll(x, shift, axis=None):
    _array("np.roll", x)
    return _compile("def impl(x, shift, axis=None):\n" + _roll_source(shift, axis, ""), "impl",
                    _rows=_rows, _unrows=_unrows, _roll_rows=_roll_rows)


@overload(rt.roll_bar)
def _roll_bar(g, shift, axis=None):
    _array("np.roll", g)
    source = "def impl(g, shift, axis=None):\n    x = g\n" + _roll_source(shift, axis, "-")
    return _compile(source, "impl", _rows=_rows, _unrows=_unrows, _roll_rows=_roll_rows)


@register_jitable
def _sort_rows(t, x, scatter):
    """Each row of t permuted as sorting the row of x permutes it, or (scatter) sent back."""
    out = np.zeros_like(t * x[:1, :1])
    for i in range(x.shape[0]):
        order = np.argsort(x[i], kind="mergesort")  # stable, as NumPy's kind="stable"
        if scatter:
            out[i][order] = t[i]
        else:
            out[i] = t[i][order]
    return out


@overload(rt.sort)
def _sort(x, axis=-1):
    _array("np.sort", x)
    if _is_none(axis):
        return lambda x, axis=-1: np.sort(x.ravel())

    def impl(x, axis=-1):
        r, shape = _rows(x, axis)
        return _unrows(np.sort(r), shape, axis)
    return impl


def _sort_helper(scatter):
    def build(t, x, axis=-1):
        _arrays("np.sort", t, x)
        if _is_none(axis):
            back = "out.reshape(x.shape)" if scatter else "out.ravel()"
            source = (f"def impl(t, x, axis=-1):\n    out = _sort_rows(_flat_row(t), _flat_row(x), {scatter})\n"
                      f"    return {back}\n")
        else:
            source = ("def impl(t, x, axis=-1):\n    tr, shape = _rows(t, axis)\n"
                      f"    out = _sort_rows(tr, _rows(x, axis)[0], {scatter})\n    return _unrows(out, shape, axis)\n")
        return _compile(source, "impl", _rows=_rows, _unrows=_unrows, _flat_row=_flat_row, _sort_rows=_sort_rows)
    return build


overload(rt.sort_dot)(_sort_helper(False))
overload(rt.sort_bar)(_sort_helper(True))


@register_jitable
def _partition_rows(t, x, kth, scatter):
    """Each row of t permuted as Numba's np.argpartition of the row of x orders it, or (scatter)
    sent back: runtime.partition (t is x), partition_dot and partition_bar follow one permutation."""
    out = np.zeros_like(t * x[:1, :1])
    for i in range(x.shape[0]):
        order = np.argpartition(x[i], kth)
        if scatter:
            out[i][order] = t[i]
        else:
            out[i] = t[i][order]
    return out


def _partition_source(t: str, scatter: bool, axis) -> str:
    """The body of runtime.partition (t is "x"), partition_dot or partition_bar (scatter)."""
    if _is_none(axis):
        back = "out.reshape(x.shape)" if scatter else "out.ravel()"
        return f"    out = _partition_rows(_flat_row({t}), _flat_row(x), kth, {scatter})\n    return {back}\n"
    return (f"    tr, shape = _rows({t}, axis)\n"
            f"    out = _partition_rows(tr, _rows(x, axis)[0], kth, {scatter})\n    return _unrows(out, shape, axis)\n")


def _compile_partition(params: str, body: str, options: str = ""):
    return _compile(f"def impl({params}, kth, axis=-1{options}):\n" + body, "impl", _rows=_rows, _unrows=_unrows,
                    _flat_row=_flat_row, _partition_rows=_partition_rows)


@overload(rt.partition)
def _partition(x, kth, axis=-1, kind="introselect", order=None):
    _array("np.partition", x)
    if not _is_none(order):
        raise TypingError("s2s: under jit, np.partition takes an array of numbers (no order=)")
    return _compile_partition("x", _partition_source("x", False, axis), ', kind="introselect", order=None')


def _partition_helper(scatter: bool):
    def build(t, x, kth, axis=-1):
        _arrays("np.partition", t, x)
        return _compile_partition("t, x", _partition_source("t", scatter, axis))
    return build


overload(rt.partition_dot)(_partition_helper(False))
overload(rt.partition_bar)(_partition_helper(True))


# ---- tile, diag, stacks ----------------------------------------------------------------


def _tile_shapes(x, reps):
    nx = _nd(x)
    nr = len(reps) if isinstance(reps, types.BaseTuple) else 1
    if not (isinstance(reps, types.BaseTuple) or isinstance(reps, types.Integer)):
        raise TypingError("s2s: under jit, np.tile takes an int or a tuple of ints")
    d = max(nx, nr)
    rep = ["1"] * (d - nr) + ([f"reps[{k}]" for k in range(nr)] if isinstance(reps, types.BaseTuple) else ["reps"])
    size = ["1"] * (d - nx) + [f"x.shape[{k}]" for k in range(nx)]
    return d, nx, rep, size


def _tuple(items):
    return "(" + "".join(f"{i}, " for i in items) + ")"


def _source_index(d, nx, size):
    return ", ".join(f"idx[{k}] % {size[k]}" for k in range(d - nx, d))


@overload(rt.tile)
def _tile(x, reps):
    d, nx, rep, size = _tile_shapes(x, reps)
    shape = _tuple(f"{r} * {s}" for r, s in zip(rep, size))
    if nx == 0:
        return _compile(f"def impl(x, reps):\n    return np.full({shape}, x)\n", "impl")
    source = (f"def impl(x, reps):\n    out = np.empty({shape}, x.dtype)\n"
              f"    for idx in np.ndindex(out.shape):\n        out[idx] = x[{_source_index(d, nx, size)}]\n"
              "    return out\n")
    return _compile(source, "impl")


@overload(rt.tile_bar)
def _tile_bar(g, x, reps):
    d, nx, rep, size = _tile_shapes(x, reps)
    if nx == 0:
        return lambda g, x, reps: np.sum(g)
    source = (f"def impl(g, x, reps):\n    out = np.zeros(x.shape, g.dtype)\n"
              f"    for idx in np.ndindex(g.shape):\n        out[{_source_index(d, nx, size)}] += g[idx]\n"
              "    return out\n")
    return _compile(source, "impl")


@overload(rt.diag_bar)
def _diag_bar(g, x, k=0):
    if _nd(x) == 1:
        return lambda g, x, k=0: np.diag(g, k)

    def impl(g, x, k=0):
        out = np.zeros(x.shape, g.dtype)
        for i in range(g.shape[0]):
            out[i + max(-k, 0), i + max(k, 0)] = g[i]
        return out
    return impl


def _pieces(xs, axis, size):
    """Code cutting g into one piece per x along axis, each in x's shape."""
    lines, parts = ["    start = 0"], []
    lead = ":, " * axis
    for k in range(len(xs)):
        lines += [f"    stop = start + {size(k)}", f"    part{k} = rt.reshape_bar(g[{lead}start:stop].copy(), xs[{k}])",
                  "    start = stop"]
        parts.append(f"part{k}")
    return "\n".join(lines) + f"\n    return {_tuple(parts)}\n"


def _rows_swapped(name: str, nd: int) -> str:
    """Source of array `name` with its axes 0 and 1 swapped, as a C-contiguous copy."""
    axes = _tuple(["1", "0"] + [str(k) for k in range(2, nd)])
    return f"np.transpose({name}, {axes}).copy()"


def _rows_joined(kind: str, nd: int) -> str:
    """Source of np.hstack/vstack/column_stack (kind) of one array x of ndim nd, which joins x's
    rows (x[0], x[1], ...): Numba's own take a tuple only. hstack joins rows of 2 or more
    dimensions along their axis 1, column_stack a matrix's rows as columns."""
    shape = [f"x.shape[{k}]" for k in range(nd)]
    if kind == "vstack":
        if nd == 1:
            return "x.copy().reshape((x.shape[0], 1))"
        return "x.copy()" if nd == 2 else f"x.copy().reshape({_tuple([f'{shape[0]} * {shape[1]}'] + shape[2:])})"
    if kind == "column_stack" and nd <= 2:
        return "x.copy().reshape((1, x.shape[0]))" if nd == 1 else "x.T.copy()"
    if nd <= 2:
        return "x.copy()" if nd == 1 else "x.flatten()"
    return f"{_rows_swapped('x', nd)}.reshape({_tuple([shape[1], f'{shape[0]} * {shape[2]}'] + shape[3:])})"


def _rows_joined_bar(kind: str, nd: int) -> str:
    """Source of the adjoint of _rows_joined(kind, nd) in x: g back in x's shape."""
    if kind == "column_stack" and nd == 2:
        return "g.T.copy()"
    if kind != "vstack" and nd >= 3:
        swapped = _tuple(["x.shape[1]", "x.shape[0]"] + [f"x.shape[{k}]" for k in range(2, nd)])
        return _rows_swapped(f"g.copy().reshape({swapped})", nd)
    return "g.copy().reshape(x.shape)"


def _one_array_join(kind: str):
    """np.hstack or np.column_stack (kind) of one array, where Numba has no implementation."""
    def build(xs):
        if isinstance(xs, types.Array) and xs.ndim >= 1:
            return _compile(f"def impl(xs):\n    x = xs\n    return {_rows_joined(kind, xs.ndim)}\n", "impl")
    return build


overload(np.hstack)(_one_array_join("hstack"))
overload(np.column_stack)(_one_array_join("column_stack"))


def _one_array_bar(kind: str, xs):
    """The adjoint's implementation where xs is one array (joined by its rows), else None."""
    if isinstance(xs, types.Array):
        return _compile(f"def impl(g, xs):\n    x = xs\n    return {_rows_joined_bar(kind, xs.ndim)}\n", "impl")
    return None


@overload(rt.hstack_bar)
def _hstack_bar(g, xs):
    if isinstance(xs, types.Array):
        return _one_array_bar("hstack", xs)
    axis = 0 if _nd(xs[0]) <= 1 else 1  # as np.hstack: vectors (and numbers) join along axis 0

    def size(k):
        return "1" if _scalar(xs[k]) else f"xs[{k}].shape[{axis}]"
    return _compile("def impl(g, xs):\n" + _pieces(xs, axis, size), "impl")


@overload(rt.column_stack_bar)
def _column_stack_bar(g, xs):
    if isinstance(xs, types.Array):
        return _one_array_bar("column_stack", xs)
    def size(k):
        return f"xs[{k}].shape[1]" if _nd(xs[k]) >= 2 else "1"
    return _compile("def impl(g, xs):\n" + _pieces(xs, 1, size), "impl")


def _append_bar(first):
    """The overload of append_bar_arr (first) or append_bar_values: a piece of g, cut where
    np.append joined arr and values (of g flattened, for axis None)."""
    def build(g, arr, values, axis=None):
        target = "arr" if first else "values"
        # (a list argument is a tuple under s2s.jit: of numbers, its length)
        numbers = isinstance(arr, types.BaseTuple) and all(isinstance(t, types.Number) for t in arr)
        cut = "1" if _scalar(arr) else str(len(arr)) if numbers else "arr.size"
        if _is_none(axis):
            piece = f"np.ravel(g)[:{cut}]" if first else f"np.ravel(g)[{cut}:]"
            return _compile(f"def impl(g, arr, values, axis=None):\n    return rt.reshape_bar({piece}.copy(), {target})\n",
                            "impl")
        lines = []
        for a in range(_nd(g)):
            part = f"g[{':, ' * a}:arr.shape[{a}]]" if first else f"g[{':, ' * a}arr.shape[{a}]:]"
            lines += [f"    {'if' if a == 0 else 'elif'} axis == {a} or axis == {a - _nd(g)}:",
                      f"        return {part}.copy()"]
        lines.append("    raise ValueError('s2s: axis out of range')")
        return _compile("def impl(g, arr, values, axis=None):\n" + "\n".join(lines) + "\n", "impl")
    return build


overload(rt.append_bar_arr)(_append_bar(True))
overload(rt.append_bar_values)(_append_bar(False))


@overload(rt.vstack)
def _vstack(xs):
    """np.vstack of a tuple of arrays and numbers of any ndim up to 2 (Numba's own takes one
    ndim): each as 2-d, then joined by np.concatenate; of arrays of one ndim of 3 or more, joined
    along their first axis (atleast_2d leaves them as they are); of one array, its rows joined."""
    if isinstance(xs, types.Array) and xs.ndim >= 1:
        return _compile(f"def impl(xs):\n    x = xs\n    return {_rows_joined('vstack', xs.ndim)}\n", "impl")
    if isinstance(xs, types.BaseTuple) and len(xs) > 0 and all(isinstance(x, types.Array) for x in xs) \
            and len({x.ndim for x in xs}) == 1 and xs[0].ndim >= 3:
        return lambda xs: np.concatenate(xs)
    if not isinstance(xs, types.BaseTuple) or not all(_scalar(x) or _nd(x) <= 2 for x in xs):
        raise TypingError("s2s: under jit, np.vstack takes a tuple of numbers and arrays of up to 2 dimensions, "
                          "or of arrays of one ndim")
    rows = "".join(f"rt.atleast_2d(xs[{k}]), " for k in range(len(xs)))
    return _compile(f"def impl(xs):\n    return np.concatenate(({rows}))\n", "impl")


@overload(rt.dstack_bar)
def _dstack_bar(g, xs):
    if not isinstance(xs, types.BaseTuple):
        raise TypingError("s2s: under jit, the derivative of np.dstack is of a tuple or list of arrays")
    def size(k):
        return f"xs[{k}].shape[2]" if _nd(xs[k]) >= 3 else "1"
    return _compile("def impl(g, xs):\n" + _pieces(xs, 2, size), "impl")


@register_jitable
def _rolled_along(x, shift, axis):
    """x rolled by shift along axis (np.roll's), a C-contiguous copy."""
    rows, shape = _rows(x, axis)
    n = rows.shape[1]
    out = np.empty_like(rows)
    if n > 0:
        s = shift % n
        out[:, s:] = rows[:, :n - s]
        out[:, :s] = rows[:, n - s:]
    return _unrows(out, shape, axis)


def _half_shifts(inverse: bool):
    """The overload of fftshift (each axis rolled by n // 2) or ifftshift (by -(n // 2))."""
    sign = "-" if inverse else ""

    def build(x, axes=None):
        _array("np.fft.fftshift", x)
        if _is_none(axes):
            axes_source = "range(x.ndim)"
        elif isinstance(axes, types.Integer):
            axes_source = "(axes,)"
        elif isinstance(axes, types.BaseTuple) and all(isinstance(a, types.Integer) for a in axes):
            axes_source = "axes"
        else:
            raise TypingError("s2s: under jit, np.fft.fftshift and ifftshift take axes as None, an int or a tuple of ints")
        return _compile("def impl(x, axes=None):\n    y = np.ascontiguousarray(x)\n"
                        f"    for a in {axes_source}:\n        axis = a % x.ndim\n"
                        f"        y = rolled(y, {sign}(y.shape[axis] // 2), axis)\n    return y\n",
                        "impl", rolled=_rolled_along)
    return build


overload(rt.fftshift)(_half_shifts(False))
overload(rt.ifftshift)(_half_shifts(True))


@overload(rt.vstack_bar)
def _vstack_bar(g, xs):
    if isinstance(xs, types.Array):
        return _one_array_bar("vstack", xs)
    def size(k):
        return f"xs[{k}].shape[0]" if _nd(xs[k]) >= 2 else "1"
    return _compile("def impl(g, xs):\n" + _pieces(xs, 0, size), "impl")


# ---- pad ------------------------------------------------------------------------------
# np.pad in mode 'constant', written out for the array's ndim: pad_width and constant_values
# are read as np.pad reads them (a number, a pair, one pair per axis, ...), from their types.


def _pair_entry(t, name: str, k: int, side: int) -> str:
    """Source of what np.pad takes for axis k, side 0 (before) or 1 (after), from an argument
    `name` of Numba type t (pad_width, or constant_values)."""
    if _scalar(t) or isinstance(t, (int, float, types.Omitted)):  # (a default left out: a number)
        return name
    if isinstance(t, types.BaseTuple) and len(t) > 0 and all(_scalar(i) for i in t.types) and len(t) <= 2:
        return f"{name}[{side if len(t) == 2 else 0}]"
    if isinstance(t, types.BaseTuple) and len(t) > 0 and all(isinstance(i, types.BaseTuple) and len(i) in (1, 2)
                                                             and all(_scalar(j) for j in i.types) for i in t.types):
        inner = len(t.types[0])
        return f"{name}[{k if len(t) > 1 else 0}][{side if inner == 2 else 0}]"
    if isinstance(t, types.List) and _scalar(t.dtype):
        return f"({name}[{side}] if len({name}) == 2 else {name}[0])"
    if isinstance(t, types.List) and isinstance(t.dtype, types.BaseTuple) and len(t.dtype) in (1, 2):
        return f"{name}[{k} if len({name}) > 1 else 0][{side if len(t.dtype) == 2 else 0}]"
    raise TypingError("s2s: under jit, np.pad takes its widths and constant values as a number, a pair, or "
                      "a tuple of pairs, one per axis")


def _pad_mode(mode) -> str:
    """Source that checks np.pad's mode: none where it is 'constant' (written, or the default); a
    check at run time where it is a string variable (s2s.jit passes a str argument so)."""
    if isinstance(mode, str):  # (the default, left out)
        value = mode
    elif isinstance(mode, types.Omitted):
        value = mode.value
    elif isinstance(mode, types.StringLiteral):
        value = mode.literal_value
    elif isinstance(mode, types.UnicodeType):
        return ('    if mode != "constant":\n'
                '        raise ValueError("s2s: np.pad is differentiated in mode \'constant\' (the default) only")\n')
    else:
        value = None
    if value != "constant":
        raise TypingError(f"s2s: under jit, np.pad takes mode 'constant' (not {value!r})")
    return ""


def _widths(pad_width, ndim: int) -> str:
    return "".join(f"    b{k}, a{k} = {_pair_entry(pad_width, 'pad_width', k, 0)}, {_pair_entry(pad_width, 'pad_width', k, 1)}\n"
                   for k in range(ndim))


def _interior(ndim: int, shape: str) -> list[str]:
    return [f"b{k}:b{k} + {shape}[{k}]" for k in range(ndim)]


@overload(rt.pad)
def _pad(x, pad_width, mode="constant", constant_values=0.0):
    _array("np.pad", x)
    check = _pad_mode(mode)
    n = x.ndim
    if n == 0:
        raise TypingError("s2s: under jit, np.pad takes an array of 1 or more dimensions")
    inside = _interior(n, "x.shape")
    lines = [check, _widths(pad_width, n),
             f"    out = np.empty({_tuple(f'x.shape[{k}] + b{k} + a{k}' for k in range(n))}, x.dtype)\n"]
    for k in range(n):  # as NumPy: axis k pads the whole of the axes before it, x's part of those after
        for side, cut in ((0, f"0:b{k}"), (1, f"b{k} + x.shape[{k}]:")):
            index = ", ".join([":"] * k + [cut] + inside[k + 1:])
            lines.append(f"    out[{index}] = {_pair_entry(constant_values, 'constant_values', k, side)}\n")
    lines.append(f"    out[{', '.join(inside)}] = x\n    return out\n")
    return _compile('def impl(x, pad_width, mode="constant", constant_values=0.0):\n' + "".join(lines), "impl")


@overload(rt.pad_bar)
def _pad_bar(g, x, pad_width, mode="constant"):
    n = _nd(g)
    source = (f'def impl(g, x, pad_width, mode="constant"):\n{_pad_mode(mode)}{_widths(pad_width, n)}    shape = _shape_of(x)\n'
              f"    return g[{', '.join(_interior(n, 'shape'))}].copy()\n")
    return _compile(source, "impl", _shape_of=_shape_of)


@overload(rt.pad_constant_bar)
def _pad_constant_bar(g, x, pad_width, constant_values):
    if not _scalar(constant_values) and not isinstance(constant_values, (int, float, types.Omitted)):
        raise TypingError("s2s: np.pad is differentiated in constant_values given as one number")
    return lambda g, x, pad_width, constant_values: np.sum(g) - np.sum(rt.pad_bar(g, x, pad_width))


# ---- select ---------------------------------------------------------------------------
# np.select as np.where from the last choice to the first (the first that holds wins), written
# out for tuples (whose items may differ in type), a loop over lists (of one type).


def _count(condlist, choicelist) -> int | None:
    """How many choices, where a tuple says so at compile time (None: lists, counted when it runs)."""
    for t in (condlist, choicelist):
        if isinstance(t, types.BaseTuple):
            return len(t)
    if not all(isinstance(t, types.List) for t in (condlist, choicelist)):
        raise TypingError("s2s: under jit, np.select takes its conditions and its choices as lists or tuples")
    return None


def _float_of(ts) -> types.Type | None:
    """The float dtype of the arrays among ts, which a number among them takes (NumPy's weak
    Python numbers: np.select of float32 choices and default 0 is float32)."""
    dtypes = [as_dtype(t.dtype) for t in ts if isinstance(t, types.Array)]
    if not dtypes:
        return None
    dtype = np.result_type(*dtypes)
    return from_dtype(dtype) if dtype.kind == "f" else None


def _choice_types(choicelist) -> list:
    return list(choicelist.types) if isinstance(choicelist, types.BaseTuple) else [choicelist.dtype]


@overload(rt.select)
def _select(condlist, choicelist, default=0):
    n = _count(condlist, choicelist)
    kind = _float_of(_choice_types(choicelist) + [default])
    first = "kind(default)" if kind is not None and _scalar(default) else "default"
    if n is not None:
        lines = [f"    out = np.where(condlist[{n - 1}], choicelist[{n - 1}], {first})"]
        lines += [f"    out = np.where(condlist[{k}], choicelist[{k}], out)" for k in range(n - 2, -1, -1)]
    else:
        lines = ["    n = len(condlist)",
                 "    if n == 0 or len(choicelist) != n:",
                 "        raise ValueError('s2s: np.select takes as many choices as conditions, one or more')",
                 f"    out = np.where(condlist[n - 1], choicelist[n - 1], {first})",
                 "    for k in range(n - 2, -1, -1):",
                 "        out = np.where(condlist[k], choicelist[k], out)"]
    source = "def impl(condlist, choicelist, default=0):\n" + "\n".join(lines) + "\n    return out\n"
    return _compile(source, "impl", kind=kind)


def _picks_source(condlist, n: int | None, shape: str) -> list[str]:
    """Code of `pick{k}`, where condition k picks its choice, and `taken`, where any does (for
    tuples; over lists, `picks` and `taken`)."""
    lines = [f"    taken = np.zeros({shape}, np.bool_)"]
    if n is not None:
        for k in range(n):
            lines += [f"    pick{k} = np.logical_and(condlist[{k}], np.logical_not(taken))",
                      f"    taken = np.logical_or(taken, pick{k})"]
    else:
        lines += ["    picks = []",
                  "    for c in condlist:",
                  "        pick = np.logical_and(c, np.logical_not(taken))",
                  "        picks.append(pick)",
                  "        taken = np.logical_or(taken, pick)"]
    return lines


@overload(rt.select_bar)
def _select_bar(g, condlist, choicelist):
    n = _count(condlist, choicelist)
    zero = g.dtype if isinstance(g, types.Array) else g  # (a number type makes a number of itself)
    lines = _picks_source(condlist, n, "np.shape(g)")
    if n is not None:
        parts = [f"rt.unbroadcast(np.where(pick{k}, g, zero(0)), choicelist[{k}])" for k in range(n)]
        lines.append(f"    return {_tuple(parts)}")
    else:
        lines += ["    out = [rt.unbroadcast(np.where(picks[0], g, zero(0)), choicelist[0])]",
                  "    for k in range(1, len(picks)):",
                  "        out.append(rt.unbroadcast(np.where(picks[k], g, zero(0)), choicelist[k]))",
                  "    return out"]
    return _compile("def impl(g, condlist, choicelist):\n" + "\n".join(lines) + "\n", "impl", zero=zero)


@overload(rt.select_default_bar)
def _select_default_bar(g, condlist, default):
    n = len(condlist) if isinstance(condlist, types.BaseTuple) else None
    zero = g.dtype if isinstance(g, types.Array) else g  # (a number type makes a number of itself)
    lines = _picks_source(condlist, n, "np.shape(g)")
    lines.append("    return rt.unbroadcast(np.where(taken, zero(0), g), default)")
    return _compile("def impl(g, condlist, default):\n" + "\n".join(lines) + "\n", "impl", zero=zero)


# ---- casts ---------------------------------------------------------------------------


def _astype(x, dtype):
    if isinstance(x, types.Array):
        return lambda x, dtype: x.astype(dtype)
    return lambda x, dtype: dtype(x)


overload(rt.astype)(_astype)
overload(rt.astype_integer)(_astype)


@overload(rt.astype_bar)
def _astype_bar(g, x):
    if isinstance(x, types.Array):
        return lambda g, x: np.asarray(g).astype(x.dtype)
    kind = as_dtype(x).type
    return lambda g, x: kind(g)


# ---- s2s.lax's dynamic slices: code written for the operand's ndim, each start clamped as JAX's -----


def _clamps(nd: int, sizes: str) -> str:
    """Lines binding s0, s1, ... to the starts, a negative one from the end, clamped (sizes: the
    expression of the sizes)."""
    return "".join(f"    s{k} = int(start_indices[{k}])\n"
                   f"    s{k} = min(max(s{k} + operand.shape[{k}] if s{k} < 0 else s{k}, 0), "
                   f"operand.shape[{k}] - {sizes}[{k}])\n" for k in range(nd))


def _block(nd: int, sizes: str) -> str:
    return ", ".join(f"s{k}:s{k} + {sizes}[{k}]" for k in range(nd))


def _dims(operand, name):
    _array(f"s2s.lax.{name}", operand)
    if operand.ndim == 0:
        raise TypingError(f"s2s: s2s.lax.{name} slices an array of one dimension or more")
    return operand.ndim


@overload(rt.dynamic_slice)
def _dynamic_slice(operand, start_indices, slice_sizes):
    nd = _dims(operand, "dynamic_slice")
    return _compile(f"def impl(operand, start_indices, slice_sizes):\n{_clamps(nd, 'slice_sizes')}"
                    f"    return operand[{_block(nd, 'slice_sizes')}].copy()\n", "impl")


@overload(rt.dynamic_update_slice)
def _dynamic_update_slice(operand, update, start_indices):
    nd = _dims(operand, "dynamic_update_slice")
    item = update.dtype if isinstance(update, types.Array) else update
    kind = np.result_type(as_dtype(operand.dtype), as_dtype(item)).type
    return _compile(f"def impl(operand, update, start_indices):\n{_clamps(nd, 'update.shape')}"
                    f"    out = operand.astype(kind)\n"
                    f"    out[{_block(nd, 'update.shape')}] = update\n    return out\n", "impl", kind=kind)


def _one_axis(nd: int, value: str, other: str) -> str:
    """A tuple of nd entries: value at the axis a, other (formatted with k) elsewhere."""
    return "(" + "".join(f"{value} if a == {k} else {other.format(k=k)}, " for k in range(nd)) + ")"


@overload(rt.dynamic_slice_in_dim)
def _dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    nd = _dims(operand, "dynamic_slice_in_dim")
    return _compile(f"def impl(operand, start_index, slice_size, axis=0):\n    a = axis % {nd}\n"
                    f"    return rt.dynamic_slice(operand, {_one_axis(nd, 'start_index', '0')}, "
                    f"{_one_axis(nd, 'slice_size', 'operand.shape[{k}]')})\n", "impl")


@overload(rt.dynamic_update_slice_in_dim)
def _dynamic_update_slice_in_dim(operand, update, start_index, axis):
    nd = _dims(operand, "dynamic_update_slice_in_dim")
    return _compile(f"def impl(operand, update, start_index, axis):\n    a = axis % {nd}\n"
                    f"    return rt.dynamic_update_slice(operand, update, {_one_axis(nd, 'start_index', '0')})\n", "impl")


def _literal_bool(value, name: str) -> bool:
    if isinstance(value, types.Omitted):
        return bool(value.value)
    if isinstance(value, (bool, types.BooleanLiteral)):
        return bool(getattr(value, "literal_value", value))
    raise TypingError(f"s2s: under jit, {name} of s2s.lax.dynamic_index_in_dim is True or False in the source "
                      "(the result's number of dimensions depends on it)")


def _without_axis(nd: int, of: str) -> str:
    """The shape `of` (nd entries) without the axis a."""
    return "(" + "".join(f"{of}[{j} if {j} < a else {j + 1}], " for j in range(nd - 1)) + ")"


@overload(rt.dynamic_index_in_dim, prefer_literal=True)
def _dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    nd = _dims(operand, "dynamic_index_in_dim")
    kept = _literal_bool(keepdims, "keepdims")
    block = "rt.dynamic_slice_in_dim(operand, index, 1, a)"
    result = block if kept else f"np.ascontiguousarray({block}).reshape({_without_axis(nd, 'operand.shape')})"
    return _compile(f"def impl(operand, index, axis=0, keepdims=True):\n    a = axis % {nd}\n"
                    f"    return {result}\n", "impl")


def _with_axis(nd: int) -> str:
    """update's shape with an axis of length 1 put back at a (update of nd - 1 dimensions)."""
    return "(" + "".join(f"1 if a == {k} else update.shape[{k} if {k} < a else {k - 1}], " for k in range(nd)) + ")"


@overload(rt.dynamic_update_index_in_dim)
def _dynamic_update_index_in_dim(operand, update, index, axis):
    nd = _dims(operand, "dynamic_update_index_in_dim")
    given = update.ndim if isinstance(update, types.Array) else 0
    block = "update" if given == nd else f"np.ascontiguousarray(update).reshape({_with_axis(nd)})"
    if given not in (nd, nd - 1):
        raise TypingError(f"s2s: s2s.lax.dynamic_update_index_in_dim writes an update of {nd} or {nd - 1} "
                          f"dimensions into an array of {nd}, not one of {given}")
    if given == 0:
        block = "np.full((1,), update)"
    return _compile(f"def impl(operand, update, index, axis):\n    a = axis % {nd}\n"
                    f"    return rt.dynamic_update_slice_in_dim(operand, {block}, index, a)\n", "impl")


@overload(rt.dynamic_index_bar, prefer_literal=True)
def _dynamic_index_bar(g, operand, index, axis=0, keepdims=True):
    return lambda g, operand, index, axis=0, keepdims=True: rt.dynamic_update_index_in_dim(
        np.zeros(operand.shape), g, index, axis)


@overload(rt.dynamic_update_index_bar)
def _dynamic_update_index_bar(g, update, index, axis):
    if isinstance(update, types.Array):
        return lambda g, update, index, axis: np.ascontiguousarray(
            rt.dynamic_index_in_dim(g, index, axis, True)).reshape(update.shape)
    return lambda g, update, index, axis: rt.dynamic_index_in_dim(g, index, axis, True)[0]
