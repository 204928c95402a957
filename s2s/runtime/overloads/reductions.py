"""Overloads of broadcasting, reductions over an axis and their adjoints, written out per ndim."""

from __future__ import annotations

import inspect

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import runtime as rt
from .common import _compile, _is_none, _nd, _scalar


def _target_ndim(x):
    if isinstance(x, types.Array):
        return x.ndim
    if isinstance(x, types.BaseTuple):
        return len(x)  # a shape
    return 0


@overload(rt.unbroadcast)
def _unbroadcast(g, x):
    t = _target_ndim(x)
    shape_of = "x" if isinstance(x, types.BaseTuple) else "x.shape"
    if not isinstance(g, types.Array):
        if t == 0:
            return lambda g, x: g
        return _compile(f"def impl(g, x):\n    return np.full({shape_of}, g)\n", "impl")
    if t == 0:
        return lambda g, x: np.sum(g)
    n = g.ndim
    if n < t:
        raise TypingError("s2s: unbroadcast to a larger ndim")
    lead = n - t
    idx_g, idx_o = [f"i{k}" for k in range(n)], []
    for k in range(t):
        idx_o.append(f"(i{lead + k} if shape[{k}] != 1 else 0)")
    lines = ["def impl(g, x):", f"    shape = {shape_of}"]
    if n == t:
        lines += ["    if g.shape == shape:", "        return g"]
    lines.append("    out = np.zeros(shape, g.dtype)")
    indent = "    "
    for k in range(n):
        lines.append(f"{indent}for i{k} in range(g.shape[{k}]):")
        indent += "    "
    lines.append(f"{indent}out[{', '.join(idx_o)}{',' if t == 1 else ''}] += g[{', '.join(idx_g)}{',' if n == 1 else ''}]")
    lines.append("    return out")
    return _compile("\n".join(lines) + "\n", "impl")


def _shape_of(x):
    """x's shape, or x itself where generated code passes a shape."""


@overload(_shape_of)
def _shape_of_overload(x):
    if isinstance(x, types.BaseTuple):
        return lambda x: x
    if isinstance(x, types.Array):
        return lambda x: x.shape
    return lambda x: ()


# Numba types the result of a reduction over an axis by its ndim, which depends on the
# axis and keepdims: the overloads below need them as compile-time constants. Generated
# code writes them as literals (axis=1, axis=(0, 2), keepdims=True), which Numba types as
# literal types when asked first (prefer_literal); an axis that arrives as an argument of
# the compiled function is made literal by numba.literally, which recompiles for its value.
# From the static axes each overload writes straight-line code for that ndim: the reduced
# axes are moved last and merged, so that every reduction is one over the rows of a matrix.


def _ndim_of(t) -> int:
    if isinstance(t, types.Array):
        return t.ndim
    if isinstance(t, types.BaseTuple):
        return len(t)  # a shape
    return 0


def _literal_int(t):
    if isinstance(t, types.IntegerLiteral):
        return t.literal_value
    if isinstance(t, types.Omitted) and isinstance(t.value, int):
        return t.value
    if isinstance(t, int) and not isinstance(t, bool):
        return t
    return None


def _static_axes(axis, ndim: int):
    """The reduced axes as a sorted tuple of non-negative ints, or None while not literal."""
    if _is_none(axis):
        return tuple(range(ndim))
    items = list(axis.types) if isinstance(axis, types.BaseTuple) else [axis]
    values = [_literal_int(t) for t in items]
    if any(v is None for v in values):
        return None
    if any(not -ndim <= v < ndim for v in values):
        raise TypingError(f"s2s: axis {tuple(values) if len(values) != 1 else values[0]} is out of bounds "
                          f"for an array of dimension {ndim}")
    axes = sorted(v % ndim for v in values)
    if len(set(axes)) != len(axes):
        raise TypingError("s2s: a repeated axis in a reduction")
    return tuple(axes)


def _static_bool(t):
    if isinstance(t, bool):
        return t
    if isinstance(t, types.Omitted):
        return bool(t.value)
    if isinstance(t, types.BooleanLiteral):
        return t.literal_value
    if isinstance(t, types.IntegerLiteral):
        return bool(t.literal_value)
    return None


def _tuple_source(items) -> str:
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


class _Axes:
    """Source fragments for a reduction of an ndim-array over static axes."""

    def __init__(self, ndim: int, axes: tuple, keepdims: bool):
        self.ndim, self.axes, self.keepdims = ndim, axes, keepdims
        self.kept = tuple(k for k in range(ndim) if k not in axes)
        self.perm = self.kept + axes
        self.axis = _tuple_source(str(a) for a in axes)  # axis=..., for nested helpers
        self.keep = str(keepdims)
        self.count = " * ".join(f"shape[{a}]" for a in axes) or "1"
        self.outer = " * ".join(f"shape[{k}]" for k in self.kept) or "1"
        self.scalar = not keepdims and not self.kept
        if keepdims:
            self.reduced = _tuple_source("1" if k in axes else f"shape[{k}]" for k in range(ndim))
        else:
            self.reduced = _tuple_source(f"shape[{k}]" for k in self.kept)
        self.keep_shape = _tuple_source("1" if k in axes else f"shape[{k}]" for k in range(ndim))
        self.moved_shape = _tuple_source(f"shape[{p}]" for p in self.perm)
        self.inverse = _tuple_source(str(self.perm.index(k)) for k in range(ndim))

    def rows(self, x: str) -> str:
        """x with the reduced axes moved last, as a C-contiguous (outer, count) matrix."""
        moved = x if self.perm == tuple(range(self.ndim)) else f"np.transpose({x}, {_tuple_source(map(str, self.perm))})"
        return f"np.ascontiguousarray({moved}).reshape(({self.outer}, {self.count}))"

    def unmove(self, rows: str) -> str:
        """The inverse of rows(): an (outer, count) matrix back in x's layout."""
        moved = f"{rows}.reshape({self.moved_shape})"
        return moved if self.perm == tuple(range(self.ndim)) else f"np.transpose({moved}, {self.inverse})"


def _params(helper) -> str:
    return ", ".join(str(p) for p in inspect.signature(helper).parameters.values())


def _axis_overload(helper, subject: str):
    """Overload a helper whose code depends on its static axis and keepdims.

    build(t, axes) gets the argument types by name and an _Axes for the ndim of the
    argument `subject`; it returns the body's source lines and names they use.
    """
    params = _params(helper)
    names = list(inspect.signature(helper).parameters)

    def register(build):
        def typer(*args):
            t = dict(zip(names, args))
            keepdims = _static_bool(t.get("keepdims", False))
            axes = _static_axes(t.get("axis"), _ndim_of(t[subject]))
            if axes is None or keepdims is None:
                wanted = [n for n, ok in (("axis", axes is not None), ("keepdims", keepdims is not None)) if not ok]
                body = "".join(f"    numba.literally({n})\n" for n in wanted)
                return _compile(f"def impl({params}):\n{body}", "impl", numba=numba)
            lines, env = build(t, _Axes(_ndim_of(t[subject]), axes, keepdims))
            body = "".join(f"    {line}\n" for line in lines)
            return _compile(f"def impl({params}):\n{body}", "impl", _shape_of=_shape_of, _expand=_expand,
                            _others=_others, _others_dot=_others_dot, **env)

        # Numba checks that a typer has the helper's signature.
        typer_src = f"def typer({params}):\n    return inner({', '.join(names)})\n"
        overload(helper, prefer_literal=True)(_compile(typer_src, "typer", inner=typer))
        return build

    return register


def _float_of(t):
    dtype = t.dtype if isinstance(t, types.Array) else t
    return dtype if isinstance(dtype, types.Float) else types.float64


def _row_var(row, ddof):
    centered = row - np.mean(row)
    return np.sum(centered * centered) / (row.size - ddof)


_row_var_jit = register_jitable(_row_var)


# The helpers below are written as loop nests over x's own indices rather than as NumPy
# calls on a transposed, reshaped copy: Numba compiles a loop nest of scalar reads and
# writes several times faster, and these helpers are generated per ndim and axis.


def _nest(dims, body, reverse=False) -> list:
    """Lines of nested loops: `for i<k> in range(shape[k])` for each k in dims, around body."""
    lines, indent = [], ""
    for k in dims:
        span = f"range(shape[{k}] - 1, -1, -1)" if reverse else f"range(shape[{k}])"
        lines.append(f"{indent}for i{k} in {span}:")
        indent += "    "
    return lines + [indent + line for line in body]


def _index(items) -> str:
    """The source of an index of these items: `i0, i1`, `i0,`, and `()` of a 0-d array."""
    items = list(items)
    return ", ".join(items) + ("," if len(items) == 1 else "") if items else "()"


def _x_index(ax) -> str:
    return _index(f"i{k}" for k in range(ax.ndim))


def _out_index(ax) -> str:
    """The element of the reduction's result (a 1-element array when it is a scalar)."""
    if ax.scalar:
        return "0"
    return _index(("0" if k in ax.axes else f"i{k}") if ax.keepdims else f"i{k}"
                  for k in range(ax.ndim) if ax.keepdims or k not in ax.axes)


def _result(ax) -> tuple:
    """The allocation shape of the result, and the expression that returns it."""
    return ("1", "out[0]") if ax.scalar else (ax.reduced, "out")


_UPDATE = {
    "sum": "out[{o}] += x[{i}]",
    "mean": "out[{o}] += x[{i}]",
    "prod": "out[{o}] *= x[{i}]",
    # `v != v`: a NaN is kept, as NumPy's max and min do
    "max": "v = x[{i}]\nif v > out[{o}] or v != v:\n    out[{o}] = v",
    "min": "v = x[{i}]\nif v < out[{o}] or v != v:\n    out[{o}] = v",
}


def _reduce(op: str, result_dtype):
    """Build the body of rt.reduce_<op>: one pass over x (two for var and std)."""

    def build(t, ax):
        x = t["x"]
        if not isinstance(x, types.Array):
            raise TypingError("s2s: under jit, a reduction over an axis takes an array")
        env = {"dtype": result_dtype(x.dtype)}
        if ax.ndim == 0:
            row = {"var": "_row_var(x, ddof)", "std": "np.sqrt(_row_var(x, ddof))"}.get(op, f"np.{op}(x)")
            return [f"return {row}"], {"_row_var": _row_var_jit}
        i, o = _x_index(ax), _out_index(ax)
        size, result = _result(ax)
        every = list(range(ax.ndim))
        lines = ["shape = x.shape"]
        if op in ("max", "min"):
            first = _index("0" if k in ax.axes else f"i{k}" for k in every)
            lines += [f"if {ax.count} == 0 and {ax.outer} != 0:",
                      f"    raise ValueError('zero-size array to reduction operation {op}imum which has no identity')",
                      f"out = np.empty({size}, dtype)"]
            lines += _nest(ax.kept, [f"out[{o}] = x[{first}]"])
        else:
            lines.append(f"out = np.{'ones' if op == 'prod' else 'zeros'}({size}, dtype)")
        if op in ("var", "std"):
            lines += _nest(every, [f"out[{o}] += x[{i}]"])
            lines += ["mean = out / (" + ax.count + ")", f"out = np.zeros({size}, dtype)"]
            lines += _nest(every, [f"d = x[{i}] - mean[{o}]", f"out[{o}] += d * d"])
            lines.append(f"out /= ({ax.count}) - ddof")
            if op == "std":
                lines.append("out = np.sqrt(out)")
        else:
            lines += _nest(every, _UPDATE[op].format(o=o, i=i).split("\n"))
            if op == "mean":
                lines.append(f"out /= ({ax.count})")
        return lines + [f"return {result}"], env

    return build


def _sum_dtype(dtype):
    return dtype if isinstance(dtype, (types.Float, types.Complex)) else types.int64


def _mean_dtype(dtype):
    return dtype if isinstance(dtype, (types.Float, types.Complex)) else types.float64


_axis_overload(rt.reduce_sum, "x")(_reduce("sum", _sum_dtype))
_axis_overload(rt.reduce_prod, "x")(_reduce("prod", _sum_dtype))
_axis_overload(rt.reduce_max, "x")(_reduce("max", lambda d: d))
_axis_overload(rt.reduce_min, "x")(_reduce("min", lambda d: d))
_axis_overload(rt.reduce_mean, "x")(_reduce("mean", _mean_dtype))
_axis_overload(rt.reduce_var, "x")(_reduce("var", _mean_dtype))
_axis_overload(rt.reduce_std, "x")(_reduce("std", _mean_dtype))


def _expand(g, x, axis=None, keepdims=False):
    """Broadcast g, the adjoint of a reduction of x (a value or a shape), back to x's shape."""


@_axis_overload(_expand, "x")
def _expand_build(t, ax):
    g = t["g"]
    if not isinstance(g, types.Array):
        return ["return np.full(_shape_of(x), g)"], {}
    # A fresh array, not a broadcast view: adjoints are added into in place later.
    if g.ndim != (ax.ndim if ax.keepdims else len(ax.kept)) or ax.ndim == 0 or g.ndim == 0:
        g_full = "g" if ax.keepdims else f"np.ascontiguousarray(g).reshape({ax.keep_shape})"
        return ["shape = _shape_of(x)", f"return np.zeros(shape, dtype) + {g_full}"], {"dtype": _float_of(g)}
    every = list(range(ax.ndim))
    g_index = _index(("0" if k in ax.axes else f"i{k}") if ax.keepdims else f"i{k}"
                     for k in every if ax.keepdims or k not in ax.axes)
    lines = ["shape = _shape_of(x)", "out = np.empty(shape, dtype)"]
    lines += _nest(every, [f"out[{_x_index(ax)}] = g[{g_index}]"])
    return lines + ["return out"], {"dtype": _float_of(g)}


def _others(x, axis=None):
    """The product of all other elements along axis, for each element of x (exact at zeros)."""


@_axis_overload(_others, "x")
def _others_build(t, ax):
    # For each position along the kept axes, a forward pass over the reduced axes (in C
    # order) leaves the product of the elements before each one, a backward pass multiplies
    # in the product of those after it.
    i = _x_index(ax)
    step = [f"out[{i}] = acc", f"acc *= x[{i}]"]
    back = [f"out[{i}] *= acc", f"acc *= x[{i}]"]
    body = ["acc = 1.0"] + _nest(ax.axes, step) + ["acc = 1.0"] + _nest(ax.axes, back, reverse=True)
    lines = ["shape = x.shape", "out = np.empty(shape, dtype)"] + _nest(ax.kept, body)
    return lines + ["return out"], {"dtype": _float_of(t["x"])}


def _others_dot(x, s, axis=None):
    """The derivative of _others(x, axis) along s (exact at zeros)."""


@_axis_overload(_others_dot, "x")
def _others_dot_build(t, ax):
    # _others' two passes, each carrying the derivative of its running product along s
    i = _x_index(ax)
    carry = [f"acc_dot = acc_dot * x[{i}] + acc * s[{i}]", f"acc *= x[{i}]"]
    step = [f"out[{i}] = acc", f"out_dot[{i}] = acc_dot"] + carry
    back = [f"out_dot[{i}] = out_dot[{i}] * acc + out[{i}] * acc_dot", f"out[{i}] *= acc"] + carry
    start = ["acc = 1.0", "acc_dot = 0.0"]
    body = start + _nest(ax.axes, step) + start + _nest(ax.axes, back, reverse=True)
    lines = ["shape = x.shape", "out = np.empty(shape, dtype)", "out_dot = np.empty(shape, dtype)"]
    if not _same_shape(t["s"], ax):
        lines.append("s = np.zeros(shape, dtype) + s")
    return lines + _nest(ax.kept, body) + ["return out_dot"], {"dtype": _float_of(t["x"])}


@_axis_overload(rt.prod_bar_dx, "x")
def _prod_bar_dx(t, ax):
    return [f"return _others_dot(x, s, {ax.axis}) * _expand(g, x, {ax.axis}, {ax.keep})"], {}


@_axis_overload(rt.prod_dot_dx, "x")
def _prod_dot_dx(t, ax):
    return [f"return rt.reduce_sum(_others_dot(x, s, {ax.axis}) * t, {ax.axis}, {ax.keep})"], {}


def _number_adjoint(t):
    """The adjoint of the sum (or mean) of a number, a number too: a 0-d array would not unify
    with the float that the number's adjoint is elsewhere (a loop's `b_bar`)."""
    # x: the number, or the shape () taped for it (Numba types the values of a user's code that
    # have shape () as numbers; a 0-d array is rare there)
    number = _scalar(t["x"]) or isinstance(t["x"], types.BaseTuple) and len(t["x"]) == 0
    if number and (_scalar(t["g"]) or isinstance(t["g"], types.Array) and t["g"].ndim == 0):
        return ["return g * 1.0"] if _scalar(t["g"]) else ["return g[()] * 1.0"]
    return None


@_axis_overload(rt.sum_bar, "x")
def _sum_bar(t, ax):
    return _number_adjoint(t) or [f"return _expand(g, x, {ax.axis}, {ax.keep})"], {}


@_axis_overload(rt.mean_bar, "x")
def _mean_bar(t, ax):
    if _number_adjoint(t):
        return _number_adjoint(t), {}
    if ax.ndim == 0:
        return ["shape = _shape_of(x)", f"return _expand(g, x, {ax.axis}, {ax.keep}) / ({ax.count})"], {}
    lines = ["shape = _shape_of(x)", f"out = _expand(g, x, {ax.axis}, {ax.keep})", f"n = {ax.count}"]
    return lines + _nest(range(ax.ndim), [f"out[{_x_index(ax)}] /= n"]) + ["return out"], {}


# The adjoint and tangent helpers below are loop nests too where the arguments have the
# reduction's shapes (g and y: the result's, x_dot: x's); other argument types get the
# array expressions after each `else`.


def _at(name, t, ax):
    """How the loop body reads `name` of type t, a value of the reduction's result shape:
    an element, or the number itself where the result is one; None for other types."""
    if isinstance(t, types.Array):
        expected = ax.ndim if ax.keepdims else len(ax.kept)
        return f"{name}[{_out_index(ax)}]" if t.ndim == expected and expected > 0 and ax.ndim > 0 else None
    return name if _scalar(t) and ax.scalar else None


def _same_shape(t, ax) -> bool:
    return isinstance(t, types.Array) and t.ndim == ax.ndim and ax.ndim > 0


def _max_weights(ax) -> list:
    """Ties share the derivative equally (as runtime.max_bar does, and JAX)."""
    return [f"hits = (x == _expand(y, x, {ax.axis}, {ax.keep})).astype(dtype)",
            f"weights = hits / rt.reduce_sum(hits, {ax.axis}, True)"]


def _max_ties(ax, y) -> list:
    """Loops that count, in `counts`, the elements of x equal to the max or min y."""
    size, _ = _result(ax)
    return ["shape = x.shape", f"counts = np.zeros({size}, dtype)"] + _nest(
        range(ax.ndim), [f"if x[{_x_index(ax)}] == {y}:", f"    counts[{_out_index(ax)}] += 1.0"])


def _tie_weight(ax, y) -> list:
    # 1 / counts for the elements equal to y; with no element equal (a NaN), NaN as 0 / 0
    # gives in NumPy's version
    o, i = _out_index(ax), _x_index(ax)
    return [f"c = counts[{o}]", "w = np.nan if c == 0.0 else 0.0",
            f"if c != 0.0 and x[{i}] == {y}:", "    w = 1.0 / c"]


# The max (or min) of a number is the number: the adjoint passes g, NaN where x is NaN (0 / 0 of
# the tie count, as NumPy's version gives).
_NUMBER_MAX_WEIGHT = "w = 1.0 if x == y else np.nan"


@_axis_overload(rt.max_bar, "x")
def _max_bar(t, ax):
    if _scalar(t["x"]):
        return [_NUMBER_MAX_WEIGHT, "return g * w"], {}
    g, y = _at("g", t["g"], ax), _at("y", t["y"], ax)
    if g is None or y is None or not _same_shape(t["x"], ax):
        lines = _max_weights(ax) + [f"return weights * _expand(g, x, {ax.axis}, {ax.keep})"]
        return lines, {"dtype": _float_of(t["x"])}
    lines = _max_ties(ax, y) + ["out = np.empty(shape, dtype)"]
    lines += _nest(range(ax.ndim), _tie_weight(ax, y) + [f"out[{_x_index(ax)}] = w * {g}"])
    return lines + ["return out"], {"dtype": _float_of(t["x"])}


@_axis_overload(rt.max_dot, "x")
def _max_dot(t, ax):
    if _scalar(t["x"]):
        return [_NUMBER_MAX_WEIGHT, "return w * x_dot"], {}
    y = _at("y", t["y"], ax)
    if y is None or not _same_shape(t["x"], ax) or not _same_shape(t["x_dot"], ax):
        lines = _max_weights(ax) + [f"return rt.reduce_sum(weights * x_dot, {ax.axis}, {ax.keep})"]
        return lines, {"dtype": _float_of(t["x"])}
    size, result = _result(ax)
    lines = _max_ties(ax, y) + [f"out = np.zeros({size}, dtype)"]
    lines += _nest(range(ax.ndim), _tie_weight(ax, y) + [f"out[{_out_index(ax)}] += w * x_dot[{_x_index(ax)}]"])
    return lines + [f"return {result}"], {"dtype": _float_of(t["x"])}


@_axis_overload(rt.prod_bar, "x")
def _prod_bar(t, ax):
    if not isinstance(t["x"], types.Array):  # the product of one number is the number
        return ["return g * 1.0"], {}
    g = _at("g", t["g"], ax)
    if g is None or not _same_shape(t["x"], ax):
        return [f"return _others(x, {ax.axis}) * _expand(g, x, {ax.axis}, {ax.keep})"], {}
    lines = ["shape = x.shape", f"out = _others(x, {ax.axis})"]
    lines += _nest(range(ax.ndim), [f"out[{_x_index(ax)}] *= {g}"])
    return lines + ["return out"], {}


@_axis_overload(rt.prod_dot, "x")
def _prod_dot(t, ax):
    if not isinstance(t["x"], types.Array):
        return ["return x_dot * 1.0"], {}
    if not _same_shape(t["x"], ax) or not _same_shape(t["x_dot"], ax):
        return [f"return rt.reduce_sum(_others(x, {ax.axis}) * x_dot, {ax.axis}, {ax.keep})"], {}
    size, result = _result(ax)
    i = _x_index(ax)
    lines = ["shape = x.shape", f"others = _others(x, {ax.axis})", f"out = np.zeros({size}, others.dtype)"]
    lines += _nest(range(ax.ndim), [f"out[{_out_index(ax)}] += others[{i}] * x_dot[{i}]"])
    return lines + [f"return {result}"], {}


def _centered(ax) -> str:
    """x's element minus the mean of its group (`mean`, computed with keepdims=True)."""
    return f"(x[{_x_index(ax)}] - mean[{_index('0' if k in ax.axes else f'i{k}' for k in range(ax.ndim))}])"


@_axis_overload(rt.var_bar, "x")
def _var_bar(t, ax):
    if _scalar(t["x"]):  # (x less its mean is x - x: 0, or NaN for an infinite or NaN x)
        return ["return 2.0 * (x - x) * g / (1 - ddof)"], {}
    g = _at("g", t["g"], ax)
    if g is None or not _same_shape(t["x"], ax):
        return ["shape = x.shape", f"centered = x - rt.reduce_mean(x, {ax.axis}, True)",
                f"return 2.0 * centered * _expand(g, x, {ax.axis}, {ax.keep}) / ({ax.count} - ddof)"], {}
    lines = ["shape = x.shape", f"mean = rt.reduce_mean(x, {ax.axis}, True)", "out = np.empty(shape, mean.dtype)",
             f"n = ({ax.count}) - ddof"]
    lines += _nest(range(ax.ndim), [f"out[{_x_index(ax)}] = 2.0 * {_centered(ax)} * {g} / n"])
    return lines + ["return out"], {}


@_axis_overload(rt.var_dot, "x")
def _var_dot(t, ax):
    if _scalar(t["x"]):
        return ["return 2.0 * (x - x) * x_dot / (1 - ddof)"], {}
    if not _same_shape(t["x"], ax) or not _same_shape(t["x_dot"], ax):
        return ["shape = x.shape", f"centered = x - rt.reduce_mean(x, {ax.axis}, True)",
                f"return 2.0 * rt.reduce_sum(centered * x_dot, {ax.axis}, {ax.keep}) / ({ax.count} - ddof)"], {}
    size, result = _result(ax)
    lines = ["shape = x.shape", f"mean = rt.reduce_mean(x, {ax.axis}, True)", f"out = np.zeros({size}, mean.dtype)"]
    lines += _nest(range(ax.ndim), [f"out[{_out_index(ax)}] += {_centered(ax)} * x_dot[{_x_index(ax)}]"])
    lines += [f"out = 2.0 * out / (({ax.count}) - ddof)"]
    return lines + [f"return {result}"], {}


@_axis_overload(rt.std_bar, "x")
def _std_bar(t, ax):
    return [f"return rt.var_bar(g * rt.half_over(y), x, {ax.axis}, ddof, {ax.keep})"], {}


@overload(rt.half_over)
def _half_over(y):
    if _scalar(y):
        def impl(y):
            return 0.5 / y if y > 0 else 0.0 * y
        return impl

    def impl(y):
        return 0.5 / np.where(y > 0, y, np.inf)
    return impl


@overload(np.var)
def _var_of_a_number(a):
    """np.var of a number (which Numba's own does not take): 0, or NaN for an infinite or NaN a."""
    if _scalar(a):
        def impl(a):
            d = a - a
            return d * d * 1.0
        return impl


@overload(rt.squeeze, prefer_literal=True)
def _squeeze(x, axis=None):
    if _scalar(x):
        return lambda x, axis=None: x
    if _is_none(axis):
        raise TypingError("s2s: under jit, np.squeeze needs its axes here: write np.squeeze(x, axis=k) with k the "
                          "size-1 axes, an int or a tuple of ints (which axes go decides the result's ndim, which "
                          "Numba must know when it compiles; s2s.jit finds them where the squeezed value is made in "
                          "the jitted or differentiated function itself from its array arguments, elementwise, by "
                          "matrix products, transposes or basic indexing)")
    axes = _static_axes(axis, x.ndim)
    if axes is None:
        return lambda x, axis=None: numba.literally(axis)
    checks = "".join(f"    if x.shape[{a}] != 1:\n        raise ValueError('cannot select an axis to squeeze out "
                     f"which has size not equal to one')\n" for a in axes)
    shape = _tuple_source(f"x.shape[{k}]" for k in range(x.ndim) if k not in axes)
    return _compile(f"def impl(x, axis=None):\n{checks}    return np.ascontiguousarray(x).reshape({shape})\n", "impl")


@overload(rt.inner)
def _inner(x, y):
    nx, ny = _nd(x), _nd(y)
    if nx == 0 or ny == 0:
        return lambda x, y: x * y
    if nx == 1 and ny == 1:
        return lambda x, y: np.dot(x, y)
    if nx == 2 and ny == 1:
        return lambda x, y: np.dot(x, y)
    if nx == 1 and ny == 2:
        return lambda x, y: np.dot(y, x)
    if nx == 2 and ny == 2:
        return lambda x, y: np.dot(x, y.T)

    def rows(x, y):  # (more dimensions: the rows of each last axis, one matrix product)
        rows_x = np.ascontiguousarray(x).reshape((-1, x.shape[-1]))
        rows_y = np.ascontiguousarray(y).reshape((-1, y.shape[-1]))
        return (rows_x @ rows_y.T).reshape(x.shape[:-1] + y.shape[:-1])
    return rows
