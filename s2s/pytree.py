"""Pytrees at the API boundary: tuples, lists, dicts (sorted keys, as JAX) and namedtuples."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import S2SError


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
        return {k: restructure(grad[k], like[k]) for k in like}
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


def is_integer_leaf(x: Any) -> bool:
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "iub"  # signed, unsigned, bool


def to_numba(tree: Any) -> Any:
    """Numba takes tuples, not lists; dicts have no typed form here."""
    if isinstance(tree, (np.ndarray, float, int)):
        return tree  # (the common leaves, first: this runs on every compiled call)
    if isinstance(tree, dict):
        raise S2SError("s2s.jit does not take dicts as arguments",
                       hint="pass a tuple or a namedtuple, or use backend='python'")
    if is_namedtuple(tree):
        return type(tree)(*(to_numba(x) for x in tree))
    if isinstance(tree, (tuple, list)):
        return tuple(to_numba(x) for x in tree)
    return tree


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
