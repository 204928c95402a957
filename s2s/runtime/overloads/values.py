"""Overloads of the value and tree helpers (zeros, copies, in-place adds, checks)."""

from __future__ import annotations

import operator

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np import numpy_support

from ... import runtime as rt
from ...errors import S2SError
from ...tree_util.pytree import dict_tuple_class
from .common import _casts, _compile, _is_none, _nd, _refusal, _scalar, _weighted_numbers


def _row_of_numbers(t) -> bool:
    """A list or tuple of numbers: an item of a list whose adjoint is a 2-d array (a row each)."""
    if isinstance(t, types.List):
        return _scalar(t.dtype)
    return isinstance(t, types.BaseTuple) and len(t) > 0 and all(_scalar(i) for i in t.types)


@register_jitable
def _no_iteration(args):
    if len(args) == 1:
        return args[0] <= 0
    step = args[2] if len(args) == 3 else 1
    return args[0] >= args[1] if step > 0 else args[0] <= args[1]


def _carry(value, like, trips, where, item: bool):
    """The overload of carry_like (the number broadcast to like's shape) and carry_like_item (to
    the shape of like's items; like may be a tuple of arrays, whose items broadcast together)."""
    # (like: an array, or a tuple of values that broadcast together: arrays, and numbers where
    # the carry is not an item's)
    values = list(like) if isinstance(like, types.BaseTuple) else [like]
    arrays = [a for a in values if isinstance(a, types.Array)]
    if not (_scalar(value) and arrays and all(isinstance(a, types.Array) or not item and _scalar(a) for a in values)) \
            or max(a.ndim for a in arrays) <= int(item):
        return lambda value, like, trips=None, where=None: value  # (items that are numbers: the number)
    rest = "[1:]" if item else ""
    shapes = [f"like[{k}].shape{rest}" for k, a in enumerate(values) if isinstance(a, types.Array)] \
        if isinstance(like, types.BaseTuple) else [f"like.shape{rest}"]
    shape = shapes[0] if len(shapes) == 1 else f"np.broadcast_shapes({', '.join(shapes)})"
    # NumPy 2's dtype of the number (a Python float or int: weak) with the arrays: theirs, but
    # float64 for a float with integer arrays (a float32 x keeps s in float32)
    number = numpy_support.as_dtype(types.unliteral(value))
    items = np.result_type(*(numpy_support.as_dtype(a.dtype) for a in arrays))
    weak = number.kind in "iu" and items.kind in "iufc" or number.kind == "f" and items.kind in "fc"
    dtype = numpy_support.from_dtype(items if weak else np.result_type(number, items))
    if _is_none(trips):
        return _compile(f"def impl(value, like, trips=None, where=None):\n    return np.full({shape}, value, dtype)\n",
                        "impl", dtype=dtype)
    prefix = _refusal(where)
    if prefix is None:
        return None  # (typed again with where as a literal)
    message = prefix + ("this loop ran no iteration, after which NumPy has the number its carry started from: "
                        "under s2s.jit the carry is an array from the start (a variable has one type in compiled "
                        "code); start it as an array (np.zeros_like(x) rather than 0.0), or use backend='python'")
    if isinstance(trips, types.Boolean):  # (a while loop's test on entry)
        return _compile("def impl(value, like, trips=None, where=None):\n    if not trips:\n"
                        f"        raise ValueError(message)\n    return np.full({shape}, value, dtype)\n", "impl",
                        dtype=dtype, message=message)
    # (trips: the loop's range(...) arguments)
    return _compile("def impl(value, like, trips=None, where=None):\n    if no_iteration(trips):\n"
                    f"        raise ValueError(message)\n    return np.full({shape}, value, dtype)\n", "impl",
                    dtype=dtype, no_iteration=_no_iteration, message=message)


@overload(rt.carry_like)
def _carry_like(value, like, trips=None, where=None):
    return _carry(value, like, trips, where, False)


@overload(rt.carry_like_item)
def _carry_like_item(value, like, trips=None, where=None):
    return _carry(value, like, trips, where, True)


@overload(rt.number_if_0d)
def _number_if_0d(x):
    if isinstance(x, types.Array) and x.ndim == 0:
        return lambda x: x[()]
    return lambda x: x


@overload(rt.zeros_like)
def _zeros_like(x):
    if isinstance(x, types.Array) and x.ndim == 0:
        # The adjoint of a 0-d array is a number in compiled code (the seed 1.0, what unbroadcast
        # gives it): its zero is one too, or a variable holding both could not be typed.
        zero = np.float32(0.0) if x.dtype == types.float32 else np.float64(0.0)
        return lambda x: zero
    if isinstance(x, types.Array):
        dtype = x.dtype if isinstance(x.dtype, types.Float) else types.float64
        return lambda x: np.zeros(x.shape, dtype)
    if isinstance(x, types.Float):  # a zero of x's float type (x * 0.0 is nan where x is inf or nan)
        zero = np.float32(0.0) if x.bitwidth == 32 else np.float64(0.0)
        return lambda x: zero
    if _scalar(x) or isinstance(x, types.NoneType):  # None: s2s.lax.scan's outputs of `return c, None`
        return lambda x: 0.0
    if isinstance(x, types.BaseTuple):
        items = "".join(f"rt.zeros_like(x[{k}]), " for k in range(len(x)))
        if isinstance(x, types.BaseNamedTuple):
            return _compile(f"def impl(x):\n    return cls({items})\n", "impl", cls=x.instance_class)
        return _compile(f"def impl(x):\n    return ({items})\n", "impl")
    if isinstance(x, types.LiteralList):
        # A list display of items of different types (layers of different shapes): Numba's
        # literal list, read at constant indices only. Its adjoint is a tuple of the items'
        # adjoints, which add_at rebuilds and v_bar[k] reads, as a tuple's.
        items = "".join(f"rt.zeros_like(x[{k}]), " for k in range(len(x.types)))
        return _compile(f"def impl(x):\n    return ({items})\n", "impl")
    if isinstance(x, types.List) and _scalar(x.dtype):
        # A list of numbers (v = [a, b * 2.0]): its adjoint is an array of its length, which
        # add_at adds into and v_bar[k] reads, as the python backend's list of adjoints.
        dtype = x.dtype if isinstance(x.dtype, types.Float) else types.float64
        return lambda x: np.zeros(len(x), dtype)
    if isinstance(x, types.List) and isinstance(x.dtype, types.Array):
        # A list of arrays of one shape (a trajectory a loop appended states to): its adjoint
        # is an array whose row k is item k's, as for a list of numbers (and as array_bar and
        # pop_adjoint make it). Items of different shapes have no such array.
        dtype = x.dtype.dtype if isinstance(x.dtype.dtype, types.Float) else types.float64
        empty = (0,) * (x.dtype.ndim + 1)

        def impl(x):
            if len(x) == 0:
                return np.zeros(empty, dtype)
            for k in range(len(x)):
                if x[k].shape != x[0].shape:
                    raise ValueError("s2s: under s2s.jit, the adjoint of a list of arrays of different shapes "
                                     "has no compiled form; backend='python' takes it")
            return np.zeros((len(x),) + x[0].shape, dtype)
        return impl
    if isinstance(x, types.List) and _row_of_numbers(x.dtype):
        # A list of lists (or tuples) of numbers, rows that a comprehension builds: its adjoint
        # is an array whose row k is item k's (an array of its length, as a list of numbers'
        # is), as for a list of arrays of one shape. Rows of different lengths have no such array.
        dtype = types.float64

        def rows(x):
            n = len(x[0]) if len(x) > 0 else 0
            for k in range(len(x)):
                if len(x[k]) != n:
                    raise ValueError("s2s: under s2s.jit, the adjoint of a list of lists of different lengths "
                                     "has no compiled form; backend='python' takes it")
            return np.zeros((len(x), n), dtype)
        return rows
    if isinstance(x, types.List):
        raise TypingError("s2s: under s2s.jit, a list of lists has no adjoint s2s builds in Numba; "
                          "write it as a tuple, v = (a, b), or stack it into one array with np.stack")


@overload(rt.broadcast_like)
def _broadcast_like(t, c):
    # t itself where that is what t + zeros_like(c) is (runtime/values.py): float64 t, whose
    # dtype no zero changes, and c a number or an array whose shape fits into t's
    if isinstance(t, types.Array) and t.dtype == types.float64:
        if _scalar(c):
            return lambda t, c: t
        if isinstance(c, types.Array) and c.ndim <= t.ndim:
            k = t.ndim - c.ndim

            def impl(t, c):
                for a in range(c.ndim):
                    if c.shape[a] != 1 and c.shape[a] != t.shape[a + k]:
                        return np.asarray(t + rt.zeros_like(c))
                return t
            return impl
    return lambda t, c: t + rt.zeros_like(c)


def _numbers_only(t) -> bool:
    """A number, or a tuple of numbers or of such tuples."""
    return _scalar(t) or (isinstance(t, types.BaseTuple) and all(_numbers_only(item) for item in t.types))


@overload(rt.zeros_shaped)
def _zeros_shaped(shape, like):
    if _scalar(like):  # (a number's shape is (): its zero keeps its type, as zeros_like's)
        return lambda shape, like: rt.zeros_like(like)
    if isinstance(like, types.BaseTuple):
        # (a tuple a loop overwrites, s2s.jvp's (value, tangent): push_shape keeps no shape of a
        # tuple, so its numbers are zeros of their types, and arrays are refused)
        if _numbers_only(like):
            return lambda shape, like: rt.zeros_like(like)
        if isinstance(shape, types.BaseTuple) and len(shape) == len(like) and all(
                isinstance(s, types.BaseTuple) for s in shape.types):
            # (the shapes of a tuple of arrays, one per item: push_shape of a layer (W, b))
            items = "".join(f"rt.zeros_shaped(shape[{k}], like[{k}]), " for k in range(len(like)))
            if isinstance(like, types.BaseNamedTuple):  # (a dict's DictTuple, a namedtuple: of its class)
                return _compile(f"def impl(shape, like):\n    return cls({items})\n", "impl", cls=like.instance_class)
            return _compile(f"def impl(shape, like):\n    return ({items})\n", "impl")
        raise TypingError("s2s: the adjoint of a tuple that holds arrays and is overwritten in a loop has no "
                          "compiled form; keep each array in a variable of its own (x, v = s; ...; s = (x, v) "
                          "becomes x, v updated in the loop), and likewise value, tangent = s2s.jvp(...); "
                          "backend='python' takes the tuple")
    if isinstance(like, types.List):  # (push_shape of a list: its adjoint's shape, an array's)
        if _row_of_numbers(like.dtype):
            return lambda shape, like: np.zeros(shape, types.float64)
        if not (_scalar(like.dtype) or isinstance(like.dtype, types.Array)):
            raise TypingError("s2s: the adjoint of a list of lists or tuples made anew in a loop has no compiled "
                              "form (its items' adjoints are no one array); make its items arrays (np.array(row)), "
                              "or use backend='python', which takes it")
        item = like.dtype.dtype if isinstance(like.dtype, types.Array) else like.dtype
        dtype = item if isinstance(item, types.Float) else types.float64
        return lambda shape, like: np.zeros(shape, dtype)
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
    if isinstance(x, types.List):  # `t.copy()` of a list: a new list (of copies of its items)
        return lambda x: [rt.copy(v) for v in x]


@overload(rt.tree_add)
def _tree_add(a, b):
    if isinstance(a, types.BaseTuple):
        items = "".join(f"rt.tree_add(a[{k}], b[{k}]), " for k in range(len(a)))
        if isinstance(a, types.BaseNamedTuple):
            return _compile(f"def impl(a, b):\n    return cls({items})\n", "impl", cls=a.instance_class)
        return _compile(f"def impl(a, b):\n    return ({items})\n", "impl")
    return lambda a, b: a + b


def _dict_keys(t) -> tuple | None:
    """The keys of a dict that crossed into compiled code as a DictTuple (pytree.to_numba)."""
    if isinstance(t, types.BaseNamedTuple):
        return getattr(t.instance_class, "_s2s_keys", None)
    return None


def _dict_position(c, key) -> int:
    keys = _dict_keys(c)
    if not isinstance(key, types.StringLiteral):
        raise TypingError(f"s2s: index a dict argument with a constant string key (it has keys {list(keys)})")
    if key.literal_value not in keys:
        raise TypingError(f"s2s: KeyError {key.literal_value!r}: the dict argument has keys {list(keys)}")
    return keys.index(key.literal_value)


@overload(operator.getitem)
def _dict_getitem(c, key):
    """d["w"] of a dict argument: its field at the key's place in sorted order."""
    if _dict_keys(c) is not None and isinstance(key, (types.StringLiteral, types.UnicodeType)):
        k = _dict_position(c, key)
        return _compile(f"def impl(c, key):\n    return c[{k}]\n", "impl")


def _dtype_and_type(a, b):
    """(the dtype, the NumPy scalar type) of x.dtype == np.int64 (either way round), or None."""
    if isinstance(a, types.NumberClass) and isinstance(b, types.DType):
        a, b = b, a
    if isinstance(a, types.DType) and isinstance(b, types.NumberClass):
        return a.dtype, b.instance_type
    return None


@overload(operator.eq)
def _dtype_is_type(a, b):
    """x.dtype == np.int64, as NumPy compares a dtype with a scalar type (Numba compares it with
    np.dtype(np.int64) only): known where the code is typed."""
    pair = _dtype_and_type(a, b)
    if pair is not None:
        same = pair[0] == pair[1]
        return lambda a, b: same


@overload(operator.ne)
def _dtype_is_not_type(a, b):
    pair = _dtype_and_type(a, b)
    if pair is not None:
        different = pair[0] != pair[1]
        return lambda a, b: different


_DICT_LOOP = f"s2s: {rt.DICT_LOOP_REASON}; {rt.DICT_LOOP_WAY_OUT}"


@overload(rt.loop_keys)
def _loop_keys(seq):
    if _dict_keys(seq) is not None:
        raise TypingError(_DICT_LOOP)
    return lambda seq: seq


@overload(rt.require_not_dict)
def _require_not_dict(seq, where):
    if _dict_keys(seq) is not None:
        raise TypingError(_DICT_LOOP)
    return lambda seq, where: None


@overload(rt.sum_start)
def _sum_start(seq, where=None):
    """0, as in Python, where seq's items are numbers; zeros of the items' shape and dtype where
    they are arrays (`acc = 0; acc = acc + v` would give acc two types), whose empty list has no
    such shape: refused, naming the user's statement (where)."""
    item = seq.dtype if isinstance(seq, (types.List, types.ListType)) else (
        seq.types[0] if isinstance(seq, types.BaseTuple) and len(seq) > 0 else None)
    if isinstance(seq, types.Array) and seq.ndim > 1:
        item = types.Array(seq.dtype, seq.ndim - 1, "C")
    if not isinstance(item, types.Array):
        return lambda seq, where=None: 0
    prefix = _refusal(where)
    if prefix is None:
        return None  # (typed again with where as a literal)
    # (a sum of booleans counts them, as 0 + True does)
    dtype = types.int64 if isinstance(item.dtype, types.Boolean) else item.dtype
    empty = prefix + ("under s2s.jit, sum() of an empty sequence of arrays has no shape to start from (Python's "
                      "is the int 0); give it a start of the items' shape, sum(ys, np.zeros(n)), or use "
                      "backend='python'")
    if isinstance(seq, types.BaseTuple):
        return lambda seq, where=None: np.zeros(seq[0].shape, dtype)
    # (_compile: a name of its own for each message, which a cached caller links to by name)
    count, shape = ("seq.shape[0]", "seq.shape[1:]") if isinstance(seq, types.Array) else ("len(seq)", "seq[0].shape")
    return _compile(f"def impl(seq, where=None):\n    if {count} == 0:\n        raise ValueError(empty)\n"
                    f"    return np.zeros({shape}, dtype)\n", "impl", empty=empty, dtype=dtype)


@overload(rt.dict_keys)
def _dict_keys_of(d):
    raise TypingError(_DICT_LOOP if _dict_keys(d) is not None else
                      "s2s: .items(), .keys() and .values() are dict methods, and this loop's object is not a dict")


@overload(rt.has_key)
def _has_key(d, key):
    """d.get("w", default)'s test of a dict argument (a DictTuple): its answer, known from d's type."""
    keys = _dict_keys(d)
    if keys is not None and isinstance(key, types.StringLiteral):
        if key.literal_value in keys:
            return lambda d, key: True
        return lambda d, key: False
    if keys is not None and isinstance(key, types.UnicodeType):
        return None  # (typed again with the key as a literal)
    raise TypingError("s2s: .get() is a dict method, and this call's object is not a dict")


@overload(rt.dict_of)
def _dict_of(keys, values):
    if not (isinstance(keys, types.BaseTuple) and all(isinstance(k, types.StringLiteral) for k in keys)):
        return None  # typed again with the keys as literals
    names = [k.literal_value for k in keys]
    if len(set(names)) != len(names):
        raise TypingError("s2s: under jit, a dict display repeats a key")
    order = sorted(range(len(names)), key=names.__getitem__)
    cls = dict_tuple_class(tuple(sorted(names)))
    items = "".join(f"values[{k}], " for k in order)
    return _compile(f"def impl(keys, values):\n    return cls({items})\n", "impl", cls=cls)


@overload(rt.named_tuple)
def _named_tuple(module, qualname, *values):
    if not (isinstance(module, types.StringLiteral) and isinstance(qualname, types.StringLiteral)):
        return None  # typed again with the names as literals
    cls = rt.named_class(module.literal_value, qualname.literal_value)
    items = "".join(f"values[{k}], " for k in range(len(values)))
    return _compile(f"def impl(module, qualname, *values):\n    return cls({items})\n", "impl", cls=cls)


@overload(rt.with_items)
def _with_items(d, values):
    if isinstance(d, types.BaseNamedTuple):  # (a DictTuple, or the user's namedtuple)
        items = "".join(f"values[{k}], " for k in range(len(values)))
        return _compile(f"def impl(d, values):\n    return cls({items})\n", "impl", cls=d.instance_class)


@register_jitable
def _in_slice(j, start, stop, step):
    """Is j one of range(start, stop, step)?"""
    if step > 0:
        return start <= j < stop and (j - start) % step == 0
    return stop < j <= start and (start - j) % -step == 0


@overload(rt.add_at)
def _add_at(c, key, value):
    if _dict_keys(c) is not None:
        k = _dict_position(c, key)
        items = "".join((f"rt.tree_add(c[{j}], value), " if j == k else f"c[{j}], ") for j in range(len(c)))
        return _compile(f"def impl(c, key, value):\n    return cls({items})\n", "impl", cls=c.instance_class)
    if isinstance(c, types.Array) and isinstance(value, types.BaseTuple) and not isinstance(value, types.BaseNamedTuple):
        # The adjoint of a slice of a list (t[0:2], a tuple of its items' adjoints) into the
        # list's adjoint array: Numba's `+=` of an array and a tuple fails inside its typing.
        def from_tuple(c, key, value):
            c[key] += np.array(value)
            return c
        return from_tuple
    if isinstance(c, types.Array):
        def impl(c, key, value):
            rt.index_add(c, key, value)  # (repeated entries of an index array accumulate)
            return c
        return impl
    if isinstance(c, types.List) and isinstance(c.dtype, types.Array) and isinstance(key, types.Integer):
        # np.split's pieces (runtime.split_zeros): item key is an array of its own, added into
        def into_item(c, key, value):
            item = c[key]
            item += value
            return c
        return into_item
    if isinstance(c, types.Number) and (isinstance(key, types.EllipsisType)
                                        or isinstance(key, types.BaseTuple) and len(key) == 0):
        return lambda c, key, value: c + value  # x[()] or x[...] of a 0-d array: its adjoint is a number
    if isinstance(c, types.BaseTuple) and isinstance(key, types.IntegerLiteral):
        k = key.literal_value % len(c)
        items = "".join(
            (f"rt.tree_add(c[{j}], value), " if j == k else f"c[{j}], ") for j in range(len(c)))
        if isinstance(c, types.BaseNamedTuple):
            return _compile(f"def impl(c, key, value):\n    return cls({items})\n", "impl", cls=c.instance_class)
        return _compile(f"def impl(c, key, value):\n    return ({items})\n", "impl")
    if isinstance(c, types.UniTuple) and isinstance(key, types.Integer):
        # At an index known at run time (a loop over the tuple): its items have one type, so
        # each slot is either the sum or the item as it was
        n = len(c)
        items = "".join(f"rt.tree_add(c[{j}], value) if key % {n} == {j} else c[{j}], " for j in range(n))
        return _compile(f"def impl(c, key, value):\n    return ({items})\n", "impl")
    if isinstance(c, types.UniTuple) and isinstance(key, types.SliceType) and isinstance(value, types.UniTuple) \
            and len(value) > 0:
        # The adjoint of a slice of the tuple (`for W, b in layers[:-1]`): its items go to the
        # slots the slice picked, known only at run time as a slice object
        n = len(c)
        items = "".join(f"rt.tree_add(c[{j}], value[({j} - start) // step]) if _in_slice({j}, start, stop, step) "
                        f"else c[{j}], " for j in range(n))
        return _compile(f"def impl(c, key, value):\n    start, stop, step = key.indices({n})\n"
                        f"    return ({items})\n", "impl", _in_slice=_in_slice)
    if isinstance(c, types.BaseTuple):
        raise TypingError("s2s: index a tuple argument with an integer constant")


@overload(rt.pop_adjoint)
def _pop_adjoint(bar):
    """A list adjoint loses its last item in place; an array's gives a view of the rest. (A
    tuple adjoint would change type with its length: Numba has no form of it.)"""
    if isinstance(bar, types.List):
        def impl(bar):
            item = bar.pop()
            return item, bar
        return impl
    if isinstance(bar, types.Array):
        return lambda bar: (bar[-1], bar[:-1])
    raise TypingError("s2s: the reverse of list.append under Numba takes a list or array adjoint")


@overload(rt.unpack_bar)
def _unpack_bar(parts, source):
    """Of an array source, an array whose rows are the parts (numbers, or arrays of one shape:
    `a, b = X` unpacks the rows of a matrix); len(parts) is source's length, as the primal's
    unpacking checked."""
    if not isinstance(source, types.Array):
        return lambda parts, source: parts
    if not isinstance(parts, types.BaseTuple) or len(parts) == 0:
        raise TypingError("s2s: the adjoint of an unpacked array is a tuple of its rows' adjoints")
    dtype = source.dtype if isinstance(source.dtype, types.Float) else types.float64
    rows = "".join(f"    out[{k}] = parts[{k}]\n" for k in range(len(parts)))
    return _compile(f"def impl(parts, source):\n    out = np.empty((len(parts),) + rt.shape(parts[0]), dtype)\n"
                    f"{rows}    return out\n", "impl", dtype=dtype)


@overload(rt.add_attr)
def _add_attr(c, name, value):
    if isinstance(c, types.BaseNamedTuple) and isinstance(name, types.StringLiteral):
        fields = list(c.fields)
        k = fields.index(name.literal_value)
        items = "".join((f"rt.tree_add(c[{j}], value), " if j == k else f"c[{j}], ") for j in range(len(c)))
        return _compile(f"def impl(c, name, value):\n    return cls({items})\n", "impl", cls=c.instance_class)


@overload(rt.index_add)
def _index_add(a, index, value):
    if isinstance(index, types.BaseTuple) and len(index) == 1 and isinstance(index[0], types.Array):
        # x[(idx,)], as x[np.nonzero(m)] indexes: the same as x[idx]. The code below reads a
        # lone index array as `index` itself (len(index), index[k]), not a tuple around it.
        return lambda a, index, value: rt.index_add(a, index[0], value)
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    if any(isinstance(i, types.Array) for i in items):
        if len(items) == 1 and isinstance(items[0], types.Array) and items[0].ndim == 1 \
                and isinstance(items[0].dtype, types.Integer) and a.ndim == 1:
            def impl(a, index, value):
                flat = np.ravel(np.asarray(value) * np.ones(len(index)))
                for k in range(len(index)):
                    a[index[k]] += flat[k]
            return impl
        points = _pointwise_index_add(a, items) or _rows_or_mask_index_add(a, items) or _mixed_index_add(a, items)
        if points is not None:
            return points
        raise TypingError("s2s: under jit, a gather with index arrays is differentiated for x[mask] (mask a "
                          "boolean array of x's shape, or 1-D over its rows) and for indices of 1-D integer "
                          "arrays of one length, integers and slices (x[idx], x[idx, :, 2], x[3, 2:, idx]) only")

    def impl(a, index, value):
        a[index] += value
    return impl


def _pointwise_index_add(a, items):
    """a[i, j] += value where i, j are 1-D integer arrays of one length (or integers), one per
    axis of a: the adjoint of a pointwise gather such as log_probs[np.arange(n), labels].
    Repeated index pairs accumulate, as NumPy's np.add.at does."""
    if len(items) != a.ndim or len(items) < 2:
        return None
    arrays = [k for k, i in enumerate(items) if isinstance(i, types.Array)]
    if not all(isinstance(items[k], types.Array) and items[k].ndim == 1 and isinstance(items[k].dtype, types.Integer)
               or isinstance(items[k], types.Integer) for k in range(len(items))):
        return None
    first = arrays[0]
    checks = "".join(f"    if len(index[{k}]) != n:\n        raise ValueError('s2s: index arrays of different lengths')\n"
                     for k in arrays[1:])
    point = ", ".join(f"index[{k}][m]" if k in arrays else f"index[{k}]" for k in range(len(items)))
    source = (f"def impl(a, index, value):\n    n = len(index[{first}])\n{checks}"
              f"    flat = np.ravel(np.asarray(value) * np.ones(n))\n"
              f"    for m in range(n):\n        a[{point}] += flat[m]\n")
    return _compile(source, "impl")


def _mixed_index_add(a, items):
    """a[index] += value where index mixes 1-D integer arrays of one length with integers and
    slices (x[[0, 1, 2], :, :], x[3, 2:, [1, 3]]): for each entry m of the arrays, the basic
    index with the arrays' m-th entries picks a view, into which the m-th slab of value along
    the gather's advanced axis is added, so repeated entries accumulate as np.add.at does.
    NumPy puts that axis where the advanced items (arrays and integers) stand when they are
    adjacent, and first when a slice separates them."""
    if len(items) > a.ndim or not all(
            isinstance(i, types.Array) and i.ndim == 1 and isinstance(i.dtype, types.Integer)
            or isinstance(i, (types.Integer, types.SliceType)) for i in items):
        return None
    arrays = [k for k, i in enumerate(items) if isinstance(i, types.Array)]
    advanced = [k for k, i in enumerate(items) if not isinstance(i, types.SliceType)]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    axis = sum(isinstance(i, types.SliceType) for i in items[:advanced[0]]) if adjacent else 0
    first = arrays[0]
    checks = "".join(f"    if len(index[{k}]) != n:\n        raise ValueError('s2s: index arrays of different lengths')\n"
                     for k in arrays[1:])
    point = ", ".join(f"index[{k}][m]" if k in arrays else f"index[{k}]" for k in range(len(items)))
    slab = ", ".join([":"] * axis + ["m"])
    source = (f"def impl(a, index, value):\n    n = len(index[{first}])\n{checks}"
              f"    if n == 0:\n        return\n"
              f"    shape = a[{point.replace('[m]', '[0]')}].shape\n"
              f"    picked = np.asarray(value) * np.ones(shape[:{axis}] + (n,) + shape[{axis}:])\n"
              f"    for m in range(n):\n        a[{point}] += picked[{slab}]\n")
    return _compile(source, "impl")


def _rows_or_mask_index_add(a, items):
    """The adjoints of x[idx] (rows of x picked by a 1-D integer array; repeated rows
    accumulate) and of x[mask] (a boolean mask of x's shape, or 1-D over x's rows: value
    holds the picked entries or rows in order)."""
    if len(items) != 1 or not isinstance(items[0], types.Array) or a.ndim < 1:
        return None
    index = items[0]
    if isinstance(index.dtype, types.Integer) and index.ndim == 1 and a.ndim >= 2:
        def rows(a, index, value):
            picked = np.asarray(value) * np.ones((len(index),) + a.shape[1:])
            for k in range(len(index)):
                a[index[k]] += picked[k]
        return rows
    if not isinstance(index.dtype, types.Boolean):
        return None
    if index.ndim == a.ndim:
        def entries(a, index, value):
            if index.shape != a.shape:
                raise ValueError("s2s: a boolean mask of another shape than the array it indexes")
            flat_a, flat_mask = a.reshape(a.size), index.reshape(index.size)
            picked = np.ravel(np.asarray(value) * np.ones(np.count_nonzero(flat_mask)))
            j = 0
            for k in range(flat_a.size):
                if flat_mask[k]:
                    flat_a[k] += picked[j]
                    j += 1
        return entries
    if index.ndim == 1:
        def masked_rows(a, index, value):
            if len(index) != a.shape[0]:
                raise ValueError("s2s: a boolean mask of another length than the rows it picks")
            picked = np.asarray(value) * np.ones((np.count_nonzero(index),) + a.shape[1:])
            j = 0
            for k in range(len(index)):
                if index[k]:
                    a[k] += picked[j]
                    j += 1
        return masked_rows
    return None


@overload(rt.take)
def _take(a, index, where=None):
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    arrays = [k for k, i in enumerate(items) if isinstance(i, types.Array) and isinstance(i.dtype, types.Integer)]
    if not arrays:
        return lambda a, index, where=None: rt.copy(a[index])
    prefix = _refusal(where)
    if prefix is None:
        return None  # (typed again with where as a literal)
    # As on the python backend, each index array on its own must name distinct entries.
    picks = [f"index[{k}]" for k in arrays] if isinstance(index, types.BaseTuple) else ["index"]
    checks = "".join(f"    if _repeats({p}):\n        raise ValueError(repeated)\n" for p in picks)
    return _compile(f"def impl(a, index, where=None):\n{checks}    return rt.copy(a[index])\n", "impl",
                    _repeats=_repeats, repeated=prefix + rt.REPEATED_WRITE, rt=rt)


@overload(rt.masked)
def _masked(a, mask):
    if isinstance(a, types.Array) and isinstance(mask, types.Array) and isinstance(mask.dtype, types.Boolean) \
            and mask.ndim == a.ndim and a.ndim > 1:
        def entries(a, mask):
            if mask.shape != a.shape:
                raise ValueError("s2s: a boolean mask of another shape than the array it indexes")
            flat_a, flat_mask = np.ravel(a), np.ravel(mask)
            out = np.empty(np.count_nonzero(flat_mask), a.dtype)
            j = 0
            for k in range(flat_a.size):
                if flat_mask[k]:
                    out[j] = flat_a[k]
                    j += 1
            return out
        return entries
    return lambda a, mask: a[mask]


@overload(rt.masked_bar)
def _masked_bar(g, a, mask):
    def impl(g, a, mask):
        out = rt.zeros_like(a)
        rt.index_add(out, mask, g)
        return out
    return impl


@overload(rt.weighted)
def _weighted(t, w):
    if _scalar(t) and _scalar(w):
        return _weighted_numbers
    if _scalar(w):
        def by_number(t, w):
            product = t * w
            return product if w != 0 else np.zeros_like(product)
        return by_number

    def by_array(t, w):
        product = t * w
        taken = np.broadcast_to(w != 0, product.shape)
        for index in np.ndindex(product.shape):
            if not taken[index]:
                product[index] = 0
        return product
    return by_array


@overload(rt.clear)
def _clear(a, index):
    def impl(a, index):
        a[index] = 0.0
    return impl


@overload(rt.derivative_like)
def _derivative_like(d, x):
    if _is_none(d):  # (bwd's None: a zero cotangent)
        return lambda d, x: rt.zeros_like(x)
    # Ranks are known when Numba types the call (a refusal then), shapes only at run time.
    if _nd(d) != _nd(x) or isinstance(d, types.BaseTuple) != isinstance(x, types.BaseTuple):
        raise TypingError(rt.DERIVATIVE_SHAPE)
    if _nd(x) == 0:
        return lambda d, x: d

    def impl(d, x):
        if d.shape != x.shape:
            raise ValueError(rt.DERIVATIVE_SHAPE)
        return d
    return impl


@overload(rt.assertion_failed)
def _assertion_failed(message=None):
    if message is None or isinstance(message, types.Omitted):
        def no_message(message=None):
            raise AssertionError()
        return no_message

    def impl(message=None):
        raise AssertionError(message)
    return impl


@overload(rt.warn)
def _warn(message, category):
    return lambda message, category: None  # (compiled code does not warn: see runtime.warn)


@overload(rt.shares_memory)
def _shares_memory(item, a):
    if isinstance(item, types.Array) and isinstance(a, types.Array):
        return lambda item, a: _may_share_memory(item, a)
    return lambda item, a: False


@overload(rt.require_number)
def _require_number(x, message):
    if isinstance(x, (types.Array, types.List)):  # a 0-d array too: NumPy updates it in place
        def impl(x, message):
            raise S2SError(message)
        return impl
    return lambda x, message: None


@overload(rt.require_array)
def _require_array(x, message):
    if not isinstance(x, types.Array):
        # (a refusal when the code is compiled: the message is a run-time value, so the typing
        # error carries its own words, with the way out)
        raise TypingError("s2s: s2s.grad, hessian, jacfwd and jacrev inside a transformed function take an array "
                          "argument here, not a number; for a number t write the derivative with s2s.jvp: "
                          "s2s.jvp(f, (t,), (1.0,))[1]")
    return lambda x, message: None


@overload(rt.draw)
def _draw(generator, method, *args):
    raise TypingError("s2s: a draw from a NumPy RandomState or Generator cannot be compiled (Numba's generators "
                      "are not NumPy's, and the object's state would not advance): draw the samples outside the "
                      "function and pass them in, or use s2s.random with a key (s2s.random.normal(key, shape))")


@overload(rt.require_updatable)
def _require_updatable(x, message):
    if isinstance(x, types.Array):
        return lambda x, message: None

    def refuse(x, message):
        raise S2SError(message)
    return refuse


@overload(rt.require_scalar)
def _require_scalar(x, message):
    if isinstance(x, types.Array) and x.ndim > 0:
        raise TypingError("s2s: s2s.grad and s2s.hessian inside a transformed function take a function with a "
                          "number output; for an array output use s2s.jacfwd(f)(x) (or s2s.jacrev)")
    return lambda x, message: None


@overload(rt.require_float_array)
def _require_float_array(x, message):
    if isinstance(x, types.Array) and isinstance(x.dtype, (types.Integer, types.Boolean)):
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

    # A 0-d array is an array (`s += v` updates it in place); batched, a 1-d value counts as a
    # batch of numbers (see runtime.values._is_number).
    if isinstance(x, types.List) and not number(other) and not isinstance(other, types.Array):
        # `t += [v]` extends the list t in place: other may be t, or hold it (Numba cannot tell)

        def refuse_list(x, other, message, x_batched=False, other_batched=False):
            raise S2SError(message)
        return refuse_list
    def numbers(t):  # a tuple or list of numbers shares no memory with an array
        return (isinstance(t, types.BaseTuple) and all(number(item) for item in t.types)
                or isinstance(t, (types.List, types.ListType)) and number(t.dtype))

    if not isinstance(x, types.Array) or number(other) or numbers(other):
        return lambda x, other, message, x_batched=False, other_batched=False: None
    if not isinstance(other, types.Array):  # a container of arrays: it may hold x

        def refuse(x, other, message, x_batched=False, other_batched=False):
            if not (x_batched and x.ndim <= 1):
                raise S2SError(message)
        return refuse

    def impl(x, other, message, x_batched=False, other_batched=False):
        if not (x_batched and x.ndim <= 1) and not (other_batched and other.ndim <= 1) \
                and _may_share_memory(x, other):
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


@overload(rt.stop_gradient)
def _stop_gradient(x):
    return lambda x: x


@register_jitable
def _repeats(index):
    flat = np.sort(index.ravel())
    for j in range(1, flat.size):
        if flat[j] == flat[j - 1]:
            return True
    return False


@overload(rt.require_fits, prefer_literal=True)
def _require_fits(stack, value, message):
    # The dtypes are known when Numba types the call: a value that fits compiles to nothing. A tuple,
    # list or dict (s2s.lax.scan's xs held in a variable, or a step's output) is refused as Numba types
    # it, with the python backend's words (Numba would otherwise stop first at the .shape read after it).
    if _is_none(stack) and isinstance(value, (types.BaseTuple, types.List, types.DictType)):
        if isinstance(message, types.StringLiteral):
            raise TypingError("s2s: " + message.literal_value)
        return None  # (typed with the message as a literal first, whose refusal Numba reports)
    if isinstance(value, (types.BaseTuple, types.List, types.DictType)) \
            or not _is_none(stack) and not _casts(value, stack.dtype, "safe"):
        def impl(stack, value, message):
            raise S2SError(message)
        return impl
    return lambda stack, value, message: None


@overload(rt.require_distinct)
def _require_distinct(items, message):
    # Numba indexes with one integer array at most, so each is checked on its own.
    arrays = [k for k, t in enumerate(items) if isinstance(t, types.Array) and isinstance(t.dtype, types.Integer)]
    checks = "".join(f"    if _repeats(items[{k}]):\n        raise S2SError(message)\n" for k in arrays)
    return _compile(f"def impl(items, message):\n{checks}    return None\n", "impl",
                    _repeats=_repeats, S2SError=S2SError)


# ---- s2s.grad(f)(x) inside a transformed function: x a number, an array, or a tuple, namedtuple
# or dict (a DictTuple) of them


def _offsets(x) -> str:
    """Lines s1 = s0 + flat_size(x[0]), ...: where each item of the tuple x begins among its numbers."""
    return "    s0 = 0\n" + "".join(f"    s{k + 1} = s{k} + rt.flat_size(x[{k}])\n" for k in range(len(x)))


def _built(x, parts: str) -> str:
    """The expression of a container of x's type holding parts: a namedtuple (a dict argument's
    DictTuple too, which comes back as a dict) of x's class, `cls`, or a tuple."""
    return f"cls({parts})" if isinstance(x, types.BaseNamedTuple) else f"({parts})"


@overload(rt.flat_size)
def _flat_size(x):
    if isinstance(x, types.Array):
        return lambda x: x.size
    if _scalar(x):
        return lambda x: 1
    if isinstance(x, types.BaseTuple):
        return _compile(f"def flat_size(x):\n{_offsets(x)}    return s{len(x)}\n", "flat_size")
    raise TypingError("s2s: s2s.grad(f)(x) inside a function compiled by s2s.jit takes x a number, an array or a "
                      "tuple, namedtuple or dict of them")


@overload(rt.unit_tangent)
def _unit_tangent(x, i):
    if isinstance(x, types.Array):
        def impl(x, i):
            unit = np.zeros(x.size)
            if 0 <= i < x.size:
                unit[i] = 1.0
            return unit.reshape(x.shape)
        return impl
    if _scalar(x):
        return lambda x, i: 1.0 if i == 0 else 0.0
    if isinstance(x, types.BaseTuple):
        parts = "".join(f"rt.unit_tangent(x[{k}], i - s{k}), " for k in range(len(x)))
        return _compile(f"def unit_tangent(x, i):\n{_offsets(x)}    return {_built(x, parts)}\n", "unit_tangent",
                        cls=getattr(x, "instance_class", None))
    return None


@overload(rt.gradient_like)
def _gradient_like(g, x):
    if isinstance(x, types.Array):
        return lambda g, x: g.reshape(x.shape)
    if _scalar(x):
        return lambda g, x: g[0]
    if isinstance(x, types.BaseTuple):
        parts = "".join(f"rt.gradient_like(np.ascontiguousarray(g[s{k}:s{k + 1}]), x[{k}]), " for k in range(len(x)))
        return _compile(f"def gradient_like(g, x):\n{_offsets(x)}    return {_built(x, parts)}\n", "gradient_like",
                        cls=getattr(x, "instance_class", None))
    return None


@overload(rt.gradient_flat)
def _gradient_flat(bar, g):
    if isinstance(bar, types.Array):
        return lambda bar, g: bar.astype(g.dtype).reshape(g.shape)
    if _scalar(bar):
        def impl(bar, g):
            out = np.empty(g.shape, g.dtype)
            out[0] = bar
            return out
        return impl
    if isinstance(bar, types.BaseTuple):
        parts = "".join(f"rt.gradient_flat(bar[{k}], np.empty(rt.flat_size(bar[{k}]), g.dtype)), "
                        for k in range(len(bar)))
        return _compile(f"def gradient_flat(bar, g):\n    return np.concatenate(({parts}))\n", "gradient_flat")
    return None
