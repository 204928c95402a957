"""numba.extending.overload implementations of every helper in s2s/runtime.

Numba sees argument types at compile time, so each overload picks the code for scalars,
arrays of a given ndim, tuples or None. Where the code depends on ndim (unbroadcast,
reductions over an axis), it is written out for that ndim and compiled.
"""

from __future__ import annotations

import hashlib
import inspect

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from .. import runtime as rt
from ..errors import S2SError


def _compile(source: str, name: str, **env):
    # Numba names a compiled function by its module, qualified name and a per-process
    # counter. Cached generated modules hold these implementations and are loaded into one
    # process from runs that counted differently: every `impl` needs a name of its own,
    # or a cached caller may link to another `impl` with the same name and argument types.
    digest = hashlib.sha256((source + repr(sorted((k, repr(v)) for k, v in env.items()))).encode()).hexdigest()[:16]
    unique = f"{name}_{digest}"
    namespace = {"np": np, "rt": rt, "__name__": __name__, **env}
    exec(source.replace(f"def {name}(", f"def {unique}(", 1), namespace)  # noqa: S102 - generated here
    return namespace[unique]


def _is_none(t) -> bool:
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and (
        not isinstance(t, types.Omitted) or t.value is None)


def _is_false(t) -> bool:
    return t is None or (isinstance(t, types.Omitted) and not t.value) or (
        isinstance(t, types.BooleanLiteral) and not t.literal_value)


def _scalar(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


def _nd(t):
    return t.ndim if isinstance(t, types.Array) else 0


# ---- values and trees -------------------------------------------------------------


@overload(rt.zeros_like)
def _zeros_like(x):
    if isinstance(x, types.Array):
        dtype = x.dtype if isinstance(x.dtype, types.Float) else types.float64
        return lambda x: np.zeros(x.shape, dtype)
    if isinstance(x, types.Float):
        return lambda x: x * 0.0
    if _scalar(x):
        return lambda x: 0.0
    if isinstance(x, types.BaseTuple):
        items = "".join(f"rt.zeros_like(x[{k}]), " for k in range(len(x)))
        if isinstance(x, types.BaseNamedTuple):
            return _compile(f"def impl(x):\n    return cls({items})\n", "impl", cls=x.instance_class)
        return _compile(f"def impl(x):\n    return ({items})\n", "impl")


@overload(rt.zeros_shaped)
def _zeros_shaped(shape, like):
    dtype = like.dtype if isinstance(like, types.Array) and isinstance(like.dtype, types.Float) else types.float64
    return lambda shape, like: np.zeros(shape, dtype)


@overload(rt.ones_like)
def _ones_like(x):
    if isinstance(x, types.Float):
        return lambda x: x * 0.0 + 1.0
    if _scalar(x):
        return lambda x: 1.0


@overload(rt.copy)
def _copy(x):
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    if _scalar(x):
        return lambda x: x
    if isinstance(x, types.BaseTuple) and not isinstance(x, types.BaseNamedTuple):
        items = "".join(f"rt.copy(x[{k}]), " for k in range(len(x)))
        return _compile(f"def impl(x):\n    return ({items})\n", "impl")
    if isinstance(x, types.BaseNamedTuple):
        return lambda x: x


@overload(rt.tree_add)
def _tree_add(a, b):
    if isinstance(a, types.BaseTuple):
        items = "".join(f"rt.tree_add(a[{k}], b[{k}]), " for k in range(len(a)))
        if isinstance(a, types.BaseNamedTuple):
            return _compile(f"def impl(a, b):\n    return cls({items})\n", "impl", cls=a.instance_class)
        return _compile(f"def impl(a, b):\n    return ({items})\n", "impl")
    return lambda a, b: a + b


@overload(rt.add_at)
def _add_at(c, key, value):
    if isinstance(c, types.Array):
        def impl(c, key, value):
            c[key] += value
            return c
        return impl
    if isinstance(c, types.BaseTuple) and isinstance(key, types.IntegerLiteral):
        k = key.literal_value % len(c)
        items = "".join(
            (f"rt.tree_add(c[{j}], value), " if j == k else f"c[{j}], ") for j in range(len(c)))
        if isinstance(c, types.BaseNamedTuple):
            return _compile(f"def impl(c, key, value):\n    return cls({items})\n", "impl", cls=c.instance_class)
        return _compile(f"def impl(c, key, value):\n    return ({items})\n", "impl")
    if isinstance(c, types.BaseTuple):
        raise TypingError("s2s: index a tuple argument with an integer constant")


@overload(rt.add_attr)
def _add_attr(c, name, value):
    if isinstance(c, types.BaseNamedTuple) and isinstance(name, types.StringLiteral):
        fields = list(c.fields)
        k = fields.index(name.literal_value)
        items = "".join((f"rt.tree_add(c[{j}], value), " if j == k else f"c[{j}], ") for j in range(len(c)))
        return _compile(f"def impl(c, name, value):\n    return cls({items})\n", "impl", cls=c.instance_class)


@overload(rt.index_add)
def _index_add(a, index, value):
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    if any(isinstance(i, types.Array) for i in items):
        if len(items) == 1 and isinstance(items[0], types.Array) and items[0].ndim == 1 \
                and isinstance(items[0].dtype, types.Integer) and a.ndim == 1:
            def impl(a, index, value):
                flat = np.ravel(np.asarray(value) * np.ones(len(index)))
                for k in range(len(index)):
                    a[index[k]] += flat[k]
            return impl
        raise TypingError("s2s: under jit, a gather x[idx] with an index array is differentiated "
                          "for 1-D x and a 1-D integer idx only")

    def impl(a, index, value):
        a[index] += value
    return impl


@overload(rt.take)
def _take(a, index):
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    if any(isinstance(i, types.Array) and isinstance(i.dtype, types.Integer) for i in items):
        raise TypingError("s2s: under jit, a write x[idx] = v with an integer index array is not "
                          "differentiated; use a loop or a boolean mask")
    return lambda a, index: rt.copy(a[index])


@overload(rt.clear)
def _clear(a, index):
    def impl(a, index):
        a[index] = 0.0
    return impl


@overload(rt.require_number)
def _require_number(x, message):
    if isinstance(x, types.Array) and x.ndim > 0:
        def impl(x, message):
            raise S2SError(message)
        return impl
    return lambda x, message: None


@register_jitable
def _memory_extent(a):
    """[low, high) of the bytes an array's elements span (empty when it has none)."""
    low = np.int64(a.ctypes.data)
    high = low
    for k in range(a.ndim):
        if a.shape[k] == 0:
            return low, low
        step = np.int64(a.shape[k] - 1) * np.int64(a.strides[k])
        if step < 0:
            low += step
        else:
            high += step
    return low, high + np.int64(a.itemsize)


@register_jitable
def _may_share_memory(a, b):
    """np.may_share_memory (which Numba lacks): do the byte ranges of a and b overlap?"""
    a_low, a_high = _memory_extent(a)
    b_low, b_high = _memory_extent(b)
    return a_low < a_high and b_low < b_high and a_low < b_high and b_low < a_high


@overload(rt.require_unshared)
def _require_unshared(x, other, message, x_batched=False, other_batched=False):
    def number(t):
        return isinstance(t, (types.Number, types.Boolean, types.NoneType, types.UnicodeType,
                              types.StringLiteral))

    if not isinstance(x, types.Array) or x.ndim == 0 or (number(other) or
                                                          isinstance(other, types.Array) and other.ndim == 0):
        return lambda x, other, message, x_batched=False, other_batched=False: None
    if not isinstance(other, types.Array):  # a container: it may hold x

        def refuse(x, other, message, x_batched=False, other_batched=False):
            if x.ndim > int(x_batched):
                raise S2SError(message)
        return refuse

    def impl(x, other, message, x_batched=False, other_batched=False):
        if x.ndim > int(x_batched) and other.ndim > int(other_batched) and _may_share_memory(x, other):
            raise S2SError(message)
    return impl


@overload(rt.range_len)
def _range_len(start, stop, step):
    def impl(start, stop, step):
        if step > 0:
            return max(0, (stop - start + step - 1) // step)
        return max(0, (start - stop - step - 1) // -step)
    return impl


@overload(rt.shape)
def _shape(x):
    if isinstance(x, types.Array):
        return lambda x: x.shape
    return lambda x: ()


# ---- broadcasting -----------------------------------------------------------------


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
                            _others=_others, **env)

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
    items = list(items)
    return ", ".join(items) + ("," if len(items) == 1 else "")


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


@_axis_overload(rt.sum_bar, "x")
def _sum_bar(t, ax):
    return [f"return _expand(g, x, {ax.axis}, {ax.keep})"], {}


@_axis_overload(rt.mean_bar, "x")
def _mean_bar(t, ax):
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


@_axis_overload(rt.max_bar, "x")
def _max_bar(t, ax):
    g, y = _at("g", t["g"], ax), _at("y", t["y"], ax)
    if g is None or y is None or not _same_shape(t["x"], ax):
        lines = _max_weights(ax) + [f"return weights * _expand(g, x, {ax.axis}, {ax.keep})"]
        return lines, {"dtype": _float_of(t["x"])}
    lines = _max_ties(ax, y) + ["out = np.empty(shape, dtype)"]
    lines += _nest(range(ax.ndim), _tie_weight(ax, y) + [f"out[{_x_index(ax)}] = w * {g}"])
    return lines + ["return out"], {"dtype": _float_of(t["x"])}


@_axis_overload(rt.max_dot, "x")
def _max_dot(t, ax):
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
    g = _at("g", t["g"], ax)
    if g is None or not _same_shape(t["x"], ax):
        return [f"return _others(x, {ax.axis}) * _expand(g, x, {ax.axis}, {ax.keep})"], {}
    lines = ["shape = x.shape", f"out = _others(x, {ax.axis})"]
    lines += _nest(range(ax.ndim), [f"out[{_x_index(ax)}] *= {g}"])
    return lines + ["return out"], {}


@_axis_overload(rt.prod_dot, "x")
def _prod_dot(t, ax):
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
    return [f"return rt.var_bar(g / (2.0 * y), x, {ax.axis}, ddof, {ax.keep})"], {}


@overload(rt.squeeze, prefer_literal=True)
def _squeeze(x, axis=None):
    if _scalar(x):
        return lambda x, axis=None: x
    if _is_none(axis):
        raise TypingError("s2s: under jit, np.squeeze needs axis=... (which axes go decides the "
                          "result's ndim, which Numba must know when it compiles)")
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
    raise TypingError("s2s: under jit, np.inner takes arrays of up to 2 dimensions; use np.tensordot "
                      "or x @ y.T")


# ---- products ---------------------------------------------------------------------


@overload(rt.matmul_bar_x)
def _matmul_bar_x(g, x, y):
    nx, ny = _nd(x), _nd(y)
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * y
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.outer(g, y)
    if nx == 1 and ny == 2:
        return lambda g, x, y: np.dot(y, g)
    if nx == 2 and ny == 2:
        return lambda g, x, y: np.dot(g, y.T)
    raise TypingError("s2s: under jit, matmul derivatives are for 1-D and 2-D arrays")


@overload(rt.matmul_bar_y)
def _matmul_bar_y(g, x, y):
    nx, ny = _nd(x), _nd(y)
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * x
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.dot(x.T, g)
    if nx == 1 and ny == 2:
        return lambda g, x, y: np.outer(x, g)
    if nx == 2 and ny == 2:
        return lambda g, x, y: np.dot(x.T, g)
    raise TypingError("s2s: under jit, matmul derivatives are for 1-D and 2-D arrays")


@overload(rt.dot_bar_x)
def _dot_bar_x(g, x, y):
    if _nd(x) == 0 or _nd(y) == 0:
        return lambda g, x, y: rt.unbroadcast(g * y, x)
    return lambda g, x, y: rt.matmul_bar_x(g, x, y)


@overload(rt.dot_bar_y)
def _dot_bar_y(g, x, y):
    if _nd(x) == 0 or _nd(y) == 0:
        return lambda g, x, y: rt.unbroadcast(g * x, y)
    return lambda g, x, y: rt.matmul_bar_y(g, x, y)


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
    raise TypingError("s2s: the derivative of np.inner is implemented for up to 2-D arrays")


@overload(rt.inner_bar_y)
def _inner_bar_y(g, x, y):
    if _nd(x) == 2 and _nd(y) == 2:
        return lambda g, x, y: rt.inner_bar_x(np.transpose(g), y, x)
    return lambda g, x, y: rt.inner_bar_x(g, y, x)


@overload(rt.outer_bar_x)
def _outer_bar_x(g, x, y):
    return lambda g, x, y: np.dot(g, np.ravel(y)).reshape(x.shape)


@overload(rt.outer_bar_y)
def _outer_bar_y(g, x, y):
    return lambda g, x, y: np.dot(np.ravel(x), g).reshape(y.shape)


@overload(rt.trace_bar)
def _trace_bar(g, x):
    return lambda g, x: g * np.eye(x.shape[0], x.shape[1])


# ---- shapes -----------------------------------------------------------------------


@overload(rt.transpose_bar)
def _transpose_bar(g, axes=None):
    if _is_none(axes):
        return lambda g, axes=None: np.transpose(g)
    return lambda g, axes=None: np.transpose(g, np.argsort(np.array(axes)))


@overload(rt.reshape_bar)
def _reshape_bar(g, x):
    if _scalar(g):
        return lambda g, x: g
    if isinstance(x, types.Array) or (isinstance(x, types.BaseTuple) and len(x) > 0):
        return lambda g, x: np.ascontiguousarray(g).reshape(_shape_of(x))
    return lambda g, x: np.ravel(g)[0]


@overload(rt.concatenate_bar)
def _concatenate_bar(g, xs, axis=0):
    n = len(xs)
    lines = ["def impl(g, xs, axis=0):", "    if axis != 0:",
             "        raise ValueError('s2s: under jit, np.concatenate derivatives take axis=0')",
             "    start = 0"]
    parts = []
    for k in range(n):
        lines.append(f"    stop{k} = start + xs[{k}].shape[0]")
        lines.append(f"    part{k} = g[start:stop{k}].copy()")
        lines.append(f"    start = stop{k}")
        parts.append(f"part{k}")
    lines.append(f"    return ({', '.join(parts)},)")
    return _compile("\n".join(lines) + "\n", "impl")


@overload(rt.stack_bar)
def _stack_bar(g, xs, axis=0):
    n = len(xs)
    items = "".join(f"g[{k}].copy(), " for k in range(n))
    return _compile("def impl(g, xs, axis=0):\n    if axis != 0:\n"
                    "        raise ValueError('s2s: under jit, np.stack derivatives take axis=0')\n"
                    f"    return ({items})\n", "impl")


@overload(rt.array_bar)
def _array_bar(g, x):
    if isinstance(x, types.BaseTuple):
        items = "".join(f"rt.reshape_bar(g[{k}], x[{k}]), " for k in range(len(x)))
        return _compile(f"def impl(g, x):\n    return ({items})\n", "impl")
    if isinstance(x, types.List):
        raise TypingError("s2s: under jit, build arrays with np.array((a, b)) from a tuple")
    return lambda g, x: g


@overload(rt.clip_inside)
def _clip_inside(a, a_min, a_max):
    low = "True" if _is_none(a_min) else "a >= a_min"
    high = "True" if _is_none(a_max) else "a <= a_max"
    return _compile(f"def impl(a, a_min, a_max):\n    return (({low}) & ({high})) * 1.0\n", "impl")


# ---- linear algebra ---------------------------------------------------------------


@overload(rt.norm_bar)
def _norm_bar(g, y, x, ord=None, axis=None, keepdims=False):
    if _is_none(ord) and _is_none(axis):
        def impl(g, y, x, ord=None, axis=None, keepdims=False):
            if y == 0:
                return x * 0.0
            return x * (g / y)
        return impl
    raise TypingError("s2s: under jit, the derivative of np.linalg.norm takes the default ord and axis")


@overload(rt.norm_dot)
def _norm_dot(x_dot, y, x, ord=None, axis=None, keepdims=False):
    if _is_none(ord) and _is_none(axis):
        def impl(x_dot, y, x, ord=None, axis=None, keepdims=False):
            if y == 0:
                return 0.0
            return np.sum(x * x_dot) / y
        return impl


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


@overload(rt.solve_bar_a)
def _solve_bar_a(b_adjoint, x):
    if _nd(x) == 1:
        return lambda b_adjoint, x: np.outer(b_adjoint, x)
    return lambda b_adjoint, x: np.dot(b_adjoint, x.T)

# ---- batching (vmap) --------------------------------------------------------------


@overload(rt.batch_example)
def _batch_example(value, first):
    if isinstance(value, (types.BaseTuple, types.List)):
        raise TypingError("s2s: vmap: a vmapped function returns one array or number per example, not a tuple")
    if _is_none(first):
        return lambda value, first: value
    if _scalar(value) and _scalar(first):
        return lambda value, first: value
    if isinstance(value, types.Array) and isinstance(first, types.Array) and value.ndim == first.ndim:
        def impl(value, first):
            if value.shape != first.shape:
                raise ValueError("s2s: vmap: the examples' outputs have different shapes")
            return value
        return impl

    def mismatch(value, first):
        raise ValueError("s2s: vmap: the examples' outputs have different shapes")
        return value
    return mismatch


@overload(rt.batch_store)
def _batch_store(out, b, value):
    if isinstance(value, types.Array) and value.ndim == out.ndim - 1:
        def impl(out, b, value):
            if value.shape != out.shape[1:]:
                return True
            out[b] = value
            return False
        return impl
    if _scalar(value) and out.ndim == 1:
        def store(out, b, value):
            out[b] = value
            return False
        return store
    return lambda out, b, value: True


@overload(rt.check_batch)
def _check_batch(mismatch):
    def impl(mismatch):
        for k in range(mismatch.shape[0]):
            if mismatch[k]:
                raise ValueError("s2s: vmap: an example's output does not have the first example's shape")
    return impl


@overload(rt.batch_empty)
def _batch_empty(n, example):
    if isinstance(example, types.Array):
        return lambda n, example: np.empty((n,) + example.shape, example.dtype)
    if _scalar(example):
        dtype = example

        return lambda n, example: np.empty(n, dtype)
    raise TypingError("s2s: vmap stacks arrays and numbers, not " + str(example))


# ---- value tapes --------------------------------------------------------------------
# Numbers go on an array of their own dtype: a store and a load per push and pop. Other
# values (arrays, whose shapes may change from one iteration to the next, and tuples) go
# on a list of references, as on the python backend.


@overload(rt.new_tape)
def _new_tape(x, capacity):
    if _scalar(x):
        dtype = types.unliteral(x)

        def number_tape(x, capacity):
            return np.empty(capacity, dtype)
        return number_tape

    def reference_tape(x, capacity):
        return [x] * capacity
    return reference_tape


# ---- shape tapes --------------------------------------------------------------------
# A shape tape is a flat list of int64 dimensions: a value of ndim k pushes k ints, a
# scalar pushes nothing. pop_shape learns k from the type of `like` (a shape pushed on
# the same tape: every variable that the reverse transform passes there receives only
# pushes and pops of that one tape, so its type is the pushed values' shape type).


@overload(rt.shape_tape)
def _shape_tape():
    def impl():
        tape = [0]
        tape.pop()
        return tape
    return impl


@overload(rt.push_shape)
def _push_shape(tape, x):
    if not isinstance(x, types.Array):
        return lambda tape, x: ()

    def impl(tape, x):
        shape = x.shape
        for dim in shape:
            tape.append(dim)
        return shape
    return impl


@overload(rt.pop_shape)
def _pop_shape(tape, like):
    ndim = len(like) if isinstance(like, types.BaseTuple) else 0
    if ndim == 0:
        return lambda tape, like: ()
    pops = "".join(f"    d{k} = tape.pop()\n" for k in reversed(range(ndim)))
    dims = ", ".join(f"d{k}" for k in range(ndim)) + ("," if ndim == 1 else "")
    return _compile(f"def impl(tape, like):\n{pops}    return ({dims})\n", "impl")
