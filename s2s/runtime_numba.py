"""numba.extending.overload implementations of every helper in runtime.py.

Numba sees argument types at compile time, so each overload picks the code for scalars,
arrays of a given ndim, tuples or None. Where the code depends on ndim (unbroadcast,
reductions over an axis), it is written out for that ndim and compiled.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from . import runtime as rt


def _compile(source: str, name: str, **env):
    namespace = {"np": np, "rt": rt, **env}
    exec(source, namespace)  # noqa: S102 - source is generated here from ndims, not user input
    return namespace[name]


def _is_none(t) -> bool:
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and (
        not isinstance(t, types.Omitted) or t.value is None)


def _is_false(t) -> bool:
    return t is None or (isinstance(t, types.Omitted) and not t.value) or (
        isinstance(t, types.BooleanLiteral) and not t.literal_value)


def _scalar(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


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
        text = message.literal_value if isinstance(message, types.StringLiteral) else "s2s: in-place update of a shared array"

        def impl(x, message):
            raise ValueError(text)
        return impl
    return lambda x, message: None


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


def _expand(g, x, axis):
    """Broadcast the adjoint g of a reduction of x over `axis` back to x's shape."""


@overload(_expand)
def _expand_overload(g, x, axis):
    if _scalar(g):
        return lambda g, x, axis: np.full(_shape_of(x), g)
    ndim = len(x) if isinstance(x, types.BaseTuple) else x.ndim
    if g.ndim == ndim:  # keepdims=True: ordinary broadcasting
        return lambda g, x, axis: np.zeros(_shape_of(x), g.dtype) + g
    lines = ["def impl(g, x, axis):", "    shape = _shape_of(x)", "    out = np.empty(shape, g.dtype)",
             f"    a = axis % {ndim}", "    for idx in np.ndindex(shape):"]
    for a in range(ndim):
        drop = [f"idx[{k}]" for k in range(ndim) if k != a]
        dropped = ", ".join(drop) + ("," if len(drop) == 1 else "")
        lines.append(f"        {'if' if a == 0 else 'elif'} a == {a}:")
        lines.append(f"            out[idx] = g[{dropped}]")
    lines.append("    return out")
    return _compile("\n".join(lines) + "\n", "impl", _shape_of=_shape_of)


def _reduction_overload(helper, body_full: str, body_axis: str):
    """Overload a reduction adjoint: axis None for any ndim, one int axis by generated code."""

    def typer(g, x, axis=None, keepdims=False):
        if _is_none(axis):
            return _compile(f"def impl(g, x, axis=None, keepdims=False):\n    shape = _shape_of(x)\n"
                            f"    return {body_full}\n", "impl", _shape_of=_shape_of)
        if isinstance(axis, types.Integer):
            return _compile(f"def impl(g, x, axis=None, keepdims=False):\n    shape = _shape_of(x)\n"
                            f"    return {body_axis}\n", "impl", expand=_expand, _shape_of=_shape_of)
        raise TypingError("s2s: under jit, reductions take axis=None or one int axis")

    overload(helper)(typer)


_reduction_overload(rt.sum_bar, "np.full(shape, g)", "expand(g, x, axis)")
_reduction_overload(rt.mean_bar, "np.full(shape, g / np.prod(np.array(shape)))",
                    "expand(g, x, axis) / shape[axis]")


@overload(rt.max_bar)
def _max_bar(g, y, x, axis=None, keepdims=False):
    if _is_none(axis):
        def impl(g, y, x, axis=None, keepdims=False):
            hits = (x == y) * 1.0
            return hits * (g / np.sum(hits))
        return impl
    if isinstance(axis, types.Integer):
        def impl(g, y, x, axis=None, keepdims=False):
            hits = (x == _expand(y, x, axis)) * 1.0
            counts = _expand(np.sum(hits, axis=axis), x, axis)
            return hits * _expand(g, x, axis) / counts
        return impl


@overload(rt.max_dot)
def _max_dot(x_dot, y, x, axis=None, keepdims=False):
    if _is_none(axis):
        def impl(x_dot, y, x, axis=None, keepdims=False):
            hits = (x == y) * 1.0
            return np.sum(hits * x_dot) / np.sum(hits)
        return impl


def _flat_others(x):
    flat = np.ravel(x)
    n = flat.size
    out = np.empty(n)
    acc = 1.0
    for k in range(n):
        out[k] = acc
        acc *= flat[k]
    acc = 1.0
    for k in range(n - 1, -1, -1):
        out[k] *= acc
        acc *= flat[k]
    return out.reshape(x.shape)


_flat_others_jit = register_jitable(_flat_others)


@overload(rt.prod_bar)
def _prod_bar(g, y, x, axis=None, keepdims=False):
    if _is_none(axis):
        return lambda g, y, x, axis=None, keepdims=False: _flat_others_jit(x) * g
    raise TypingError("s2s: under jit, the derivative of np.prod takes axis=None")


@overload(rt.prod_dot)
def _prod_dot(x_dot, y, x, axis=None, keepdims=False):
    if _is_none(axis):
        return lambda x_dot, y, x, axis=None, keepdims=False: np.sum(_flat_others_jit(x) * x_dot)


@overload(rt.var_bar)
def _var_bar(g, x, axis=None, ddof=0, keepdims=False):
    if _is_none(axis):
        return lambda g, x, axis=None, ddof=0, keepdims=False: 2.0 * (x - np.mean(x)) * g / (x.size - ddof)
    raise TypingError("s2s: under jit, the derivative of np.var takes axis=None")


@overload(rt.var_dot)
def _var_dot(x_dot, x, axis=None, ddof=0, keepdims=False):
    if _is_none(axis):
        return lambda x_dot, x, axis=None, ddof=0, keepdims=False: \
            2.0 * np.sum((x - np.mean(x)) * x_dot) / (x.size - ddof)


@overload(rt.std_bar)
def _std_bar(g, y, x, axis=None, ddof=0, keepdims=False):
    if _is_none(axis):
        return lambda g, y, x, axis=None, ddof=0, keepdims=False: \
            2.0 * (x - np.mean(x)) * (g / (2.0 * y)) / (x.size - ddof)
    raise TypingError("s2s: under jit, the derivative of np.std takes axis=None")


# ---- products ---------------------------------------------------------------------


def _nd(t):
    return t.ndim if isinstance(t, types.Array) else 0


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
    if _nd(x) == 0 or _nd(y) == 0:
        return lambda g, x, y: rt.unbroadcast(g * y, x)
    if _nd(x) == 1 and _nd(y) == 1:
        return lambda g, x, y: g * y
    raise TypingError("s2s: the derivative of np.inner is implemented for vectors")


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
