"""Pytrees at the API boundary: tuples, lists, dicts (sorted keys, as JAX) and namedtuples."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from ..errors import S2SError


def is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def leaves(tree: Any) -> list:
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def restructure(grad: Any, like: Any) -> Any:
    """Give a gradient the container types and dtypes of its argument."""
    if isinstance(like, dict):
        if is_dict_tuple(grad):  # from compiled code
            grad = dict(zip(type(grad)._s2s_keys, grad))
        return same_dict_type(like, {k: restructure(grad[k], like[k]) for k in like})
    if is_namedtuple(like):
        return type(like)(*(restructure(g, x) for g, x in zip(grad, like)))
    if isinstance(like, list):
        return [restructure(g, x) for g, x in zip(grad, like)]
    if isinstance(like, tuple):
        return tuple(restructure(g, x) for g, x in zip(grad, like))
    if isinstance(like, np.ndarray):
        if isinstance(grad, np.ndarray) and grad.dtype == like.dtype and grad.shape == like.shape:
            return grad  # (the common case, first: this runs on every call)
        return np.asarray(grad, dtype=like.dtype).reshape(like.shape)
    if isinstance(like, np.floating):
        return type(like)(grad)
    return float(grad) if np.ndim(grad) == 0 else grad


def same_dict_type(like: dict, items: dict) -> dict:
    """items as a dict of like's type: the gradient of an OrderedDict (or a defaultdict) of
    parameters is one, as in JAX."""
    kind = type(like)
    if kind is dict:
        return items
    if isinstance(like, collections.defaultdict):
        return kind(like.default_factory, items)
    return kind(items)


def in_key_order(value: Any, like: Any) -> Any:
    """value (rebuilt by unflatten, whose dicts have sorted keys) with the dicts of like's key
    order, at every level: a function that loops over a dict sees the keys in the order its
    caller inserted them."""
    if isinstance(like, dict) and isinstance(value, dict) and set(value) == set(like):
        return same_dict_type(like, {k: in_key_order(value[k], like[k]) for k in like})
    if isinstance(like, (list, tuple)) and isinstance(value, (list, tuple)) and len(value) == len(like):
        items = [in_key_order(v, x) for v, x in zip(value, like)]
        return type(value)(*items) if is_namedtuple(value) else type(value)(items)
    return value


def is_integer_leaf(x: Any) -> bool:
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "iub"  # signed, unsigned, bool


def to_numba(tree: Any) -> Any:
    """Numba takes tuples, not lists; a dict becomes a DictTuple (its values in sorted-key
    order, as JAX flattens dicts), which the runtime's overloads index by its keys."""
    if isinstance(tree, np.ndarray):
        # (the common leaves, first: this runs on every compiled call) A 0-d array, as JAX code
        # passes jnp.array(0.5), goes in as its number: Numba types a 0-d array apart from a
        # float, and a loop mixing it with numbers would not compile.
        return tree if tree.ndim or tree.dtype.kind not in "fiub" else tree[()]
    if isinstance(tree, (float, int)):
        return tree
    if isinstance(tree, dict):
        keys = _sorted_keys(tree)
        return dict_tuple_class(keys)(*(to_numba(tree[k]) for k in keys))
    if is_namedtuple(tree):
        return type(tree)(*(to_numba(x) for x in tree))
    if isinstance(tree, (tuple, list)):
        return tuple(to_numba(x) for x in tree)
    if callable(tree) and not (isinstance(tree, type) and issubclass(tree, np.generic)):
        # A function (or float, int: types Numba has no type for) is a static argument, written into
        # the code generated for the call (frontend/static_arguments.py): None stands in its place.
        return None
    return tree


def from_numba(tree: Any) -> Any:
    """What compiled code returns, with its DictTuples as dicts again."""
    if isinstance(tree, (np.ndarray, float, int)):
        return tree
    if is_dict_tuple(tree):
        return {k: from_numba(v) for k, v in zip(tree._s2s_keys, tree)}
    if isinstance(tree, collections.abc.Mapping):  # a numba.typed.Dict the user's code built
        return {k: from_numba(v) for k, v in tree.items()}
    if is_namedtuple(tree):
        return type(tree)(*(from_numba(x) for x in tree))
    if isinstance(tree, tuple):
        return tuple(from_numba(x) for x in tree)
    return tree


def _sorted_keys(tree: dict) -> tuple:
    try:
        keys = tuple(sorted(tree))
    except TypeError:
        raise S2SError(f"s2s.jit takes dicts whose keys sort (JAX's order), got keys {list(tree)!r}",
                       hint="use string keys, or backend='python'") from None
    if not all(isinstance(k, str) for k in keys):
        raise S2SError(f"s2s.jit takes dicts with string keys, got keys {list(keys)!r}",
                       hint="use string keys, as flax does, or backend='python'")
    return keys


# ---- dicts under Numba ---------------------------------------------------------------------
#
# Numba has no typed form for a dict whose values differ in type (a weight matrix and a bias
# vector), so a dict crosses into compiled code as a namedtuple of its values in sorted-key
# order, a DictTuple, whose class records the keys (`_s2s_keys`): the runtime's overloads of
# `d["w"]` (operator.getitem) and of the adjoint helpers read them at compile time. Fields are
# named f0, f1, ... so that any string key works. The class is named after its keys and is
# found again by that name (module __getattr__ below): Numba's on-disk cache pickles argument
# types, and so this class, by reference.

_DICT_PREFIX = "DictTuple_"
_dict_classes: dict[tuple, type] = {}


def dict_tuple_class(keys: tuple) -> type:
    cls = _dict_classes.get(keys)
    if cls is None:
        name = _DICT_PREFIX + "_".join(k.encode().hex() or "x" for k in keys) if keys else _DICT_PREFIX
        cls = collections.namedtuple(name, [f"f{i}" for i in range(len(keys))])
        cls.__module__ = __name__
        cls._s2s_keys = keys
        cls.__repr__ = lambda self: "DictTuple(" + ", ".join(f"{k!r}: {v!r}" for k, v in zip(keys, self)) + ")"
        _dict_classes[keys] = cls
    return cls


def is_dict_tuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_s2s_keys")


def __getattr__(name: str) -> type:
    if name.startswith(_DICT_PREFIX):
        rest = name[len(_DICT_PREFIX):]
        parts = rest.split("_") if rest else []
        return dict_tuple_class(tuple("" if p == "x" else bytes.fromhex(p).decode() for p in parts))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def flatten(tree: Any) -> tuple[list, Any]:
    """(leaves, structure): unflatten(structure, leaves) rebuilds the tree."""
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [flatten(tree[k]) for k in keys]
        return [leaf for p in parts for leaf in p[0]], ("dict", keys, [p[1] for p in parts])
    if isinstance(tree, (tuple, list)):
        parts = [flatten(x) for x in tree]
        kind = type(tree) if is_namedtuple(tree) else type(tree)
        return [leaf for p in parts for leaf in p[0]], ("seq", kind, [p[1] for p in parts])
    return [tree], ("leaf",)


def unflatten(structure: Any, leaves: list) -> Any:
    iterator = iter(leaves)

    def build(node):
        if node[0] == "leaf":
            return next(iterator)
        if node[0] == "dict":
            return {k: build(child) for k, child in zip(node[1], node[2])}
        items = [build(child) for child in node[2]]
        kind = node[1]
        return kind(*items) if issubclass(kind, tuple) and hasattr(kind, "_fields") else kind(items)

    return build(structure)
