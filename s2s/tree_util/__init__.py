"""JAX's pytree utilities (`jax.tree_util`), over s2s's pytrees: tuples, lists, dicts (in sorted
key order, as JAX flattens them; an OrderedDict in its own order), namedtuples and None (an empty
subtree, as in JAX). Dict subclasses come back as their own type, as JAX rebuilds them.

    >>> import s2s
    >>> s2s.tree_util.tree_map(lambda a, b: a + b, {"w": 1.0, "b": (2.0, 3.0)}, {"w": 10.0, "b": (20.0, 30.0)})
    {'b': (22.0, 33.0), 'w': 11.0}
"""

from __future__ import annotations

import collections
import functools
from typing import Any, Callable

from ..errors import S2SError

_NO_INITIAL = object()


class PyTreeDef:
    """The structure of a pytree without its leaves (what tree_flatten returns beside them)."""

    def __init__(self, node: tuple):
        self.node = node

    @property
    def num_leaves(self) -> int:
        return _count(self.node)

    def __eq__(self, other) -> bool:
        return isinstance(other, PyTreeDef) and self.node == other.node

    def __hash__(self) -> int:
        return hash(repr(self.node))

    def __repr__(self) -> str:
        return f"PyTreeDef({_describe(self.node)})"


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _node(tree: Any, is_leaf: Callable | None) -> tuple:
    if is_leaf is not None and is_leaf(tree):
        return ("leaf",)
    if tree is None:
        return ("none",)
    if isinstance(tree, dict):
        keys = _dict_keys(tree)
        return ("dict", _dict_kind(tree), keys, tuple(_node(tree[k], is_leaf) for k in keys))
    if isinstance(tree, (tuple, list)):
        return ("seq", type(tree), tuple(_node(x, is_leaf) for x in tree))
    return ("leaf",)


def _leaves(tree: Any, is_leaf: Callable | None) -> list:
    if is_leaf is not None and is_leaf(tree):
        return [tree]
    if tree is None:
        return []
    if isinstance(tree, dict):
        return [leaf for k in _dict_keys(tree) for leaf in _leaves(tree[k], is_leaf)]
    if isinstance(tree, (tuple, list)):
        return [leaf for x in tree for leaf in _leaves(x, is_leaf)]
    return [tree]


def _dict_keys(tree: dict) -> tuple:
    """JAX's order: an OrderedDict's keys as inserted (its order is part of its meaning), any
    other dict's sorted."""
    return tuple(tree) if isinstance(tree, collections.OrderedDict) else tuple(sorted(tree))


def _dict_kind(tree: dict) -> tuple:
    """What rebuilding needs: the dict's type, and a defaultdict's default factory."""
    return (type(tree), getattr(tree, "default_factory", None))


def _count(node: tuple) -> int:
    if node[0] == "leaf":
        return 1
    if node[0] == "none":
        return 0
    return sum(_count(child) for child in node[-1])


def _describe(node: tuple) -> str:
    if node[0] == "leaf":
        return "*"
    if node[0] == "none":
        return "None"
    if node[0] == "dict":
        inner = "{" + ", ".join(f"{k!r}: {_describe(c)}" for k, c in zip(node[2], node[3])) + "}"
        kind = node[1][0]
        return inner if kind is dict else f"{kind.__name__}({inner})"
    inner = ", ".join(_describe(c) for c in node[2])
    kind = node[1]
    if _is_namedtuple_type(kind):
        return f"{kind.__name__}({inner})"
    return f"[{inner}]" if kind is list else f"({inner}{',' if len(node[2]) == 1 else ''})"


def _is_namedtuple_type(kind) -> bool:
    return isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")


def _build(node: tuple, leaves) -> Any:
    if node[0] == "leaf":
        return next(leaves)
    if node[0] == "none":
        return None
    if node[0] == "dict":
        kind, default_factory = node[1]
        items = [(k, _build(child, leaves)) for k, child in zip(node[2], node[3])]
        if issubclass(kind, collections.defaultdict):
            return kind(default_factory, items)
        return kind(items)
    items = [_build(child, leaves) for child in node[2]]
    kind = node[1]
    return kind(*items) if _is_namedtuple_type(kind) else kind(items)


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
    """(leaves, treedef); tree_unflatten(treedef, leaves) rebuilds the tree."""
    return _leaves(tree, is_leaf), PyTreeDef(_node(tree, is_leaf))


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise S2SError(f"tree_unflatten: the structure has {treedef.num_leaves} leaves, got {len(leaves)}")
    return _build(treedef.node, iter(leaves))


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return _leaves(tree, is_leaf)


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> PyTreeDef:
    return PyTreeDef(_node(tree, is_leaf))


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """f applied leaf by leaf; the other trees must have tree's structure (JAX allows them to
    have more below its leaves; here they must match)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for other in rest:
        other_leaves, other_def = tree_flatten(other, is_leaf)
        if other_def != treedef:
            raise S2SError(f"tree_map: the trees differ in structure: {treedef} and {other_def}")
        others.append(other_leaves)
    return tree_unflatten(treedef, [f(*args) for args in zip(leaves, *others)])


def tree_reduce(f: Callable, tree: Any, initializer: Any = _NO_INITIAL, is_leaf: Callable | None = None) -> Any:
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        return functools.reduce(f, leaves)
    return functools.reduce(f, leaves, initializer)


def tree_all(tree: Any) -> bool:
    return all(tree_leaves(tree))
