"""A pass over the finished module: NumPy's semantics for in-place updates whose right side
may overlap their target, which Numba applies element by element."""

from __future__ import annotations

import ast

import numpy as np

from ..rules import facts, spelled
from .emit import runtime_call


def _view_roots(node: ast.expr) -> set[str]:
    """The names whose memory the value of node may share (a view, the object itself, or
    something a call may hand back); empty for arithmetic, which makes a new array."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _view_roots(node.value)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.JoinedStr)):
        return set()
    if isinstance(node, ast.IfExp):
        return _view_roots(node.body) | _view_roots(node.orelse)
    if isinstance(node, (ast.BoolOp, ast.Tuple, ast.List)):
        return set().union(*map(_view_roots, node.values if isinstance(node, ast.BoolOp) else node.elts))
    if isinstance(node, ast.Call) and not any(kw.arg == "out" or kw.arg is None for kw in node.keywords):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            known = facts(spelled(func.value.id, func.attr))
            if known.fresh or func.value.id == "math" or (
                    func.value.id == "np" and isinstance(getattr(np, func.attr, None), np.ufunc)):
                return set()
            if known.first_or_new and node.args:
                return _view_roots(node.args[0])
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def copy_overlapping_operands(function: ast.FunctionDef) -> None:
    """`a[1:] += a[:-1]` -> `a[1:] += runtime.copy(a[:-1])`, in place.

    NumPy reads the right side of an in-place update in full before it writes; Numba updates
    element by element, so where the right side is a view of the array it writes (a running
    sum instead of a shift), later elements read values already updated. Where the right side
    may share memory with the target (a view of the same array, or of a name that may refer to
    it: flow-insensitive, from every binding of the function), it is copied first; an
    arithmetic right side is a new array already, and so is left as it is. Also for the value
    that runtime.add_at and runtime.index_add add in place."""
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        while parent.get(n, n) != n:
            n = parent[n]
        return n

    def union(names: set[str]) -> None:
        roots = sorted({find(n) for n in names})
        for r in roots[1:]:
            parent[r] = roots[0]

    def stored(target: ast.expr) -> set[str]:
        """The names a binding target binds or writes into (not those of its indices)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            return set().union(*map(stored, target.elts))
        while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
            target = target.value
        return {target.id} if isinstance(target, ast.Name) else set()

    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                union(stored(target) | _view_roots(node.value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            union(stored(node.target) | _view_roots(node.value))
        elif isinstance(node, (ast.For, ast.comprehension)):
            union(stored(node.target) | _view_roots(node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            union(stored(node.optional_vars) | _view_roots(node.context_expr))

    def may_overlap(target: ast.expr, value: ast.expr) -> bool:
        base = target
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        if not isinstance(base, ast.Name) or ast.dump(target) == ast.dump(value):
            return False  # (the very same elements: each is read before it is written)
        return any(find(n) == find(base.id) for n in _view_roots(value))

    def copied(value: ast.expr) -> ast.Call:
        return runtime_call("copy", value)

    for node in ast.walk(function):
        if isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Subscript):
                target = ast.Subscript(target.value, target.slice, ast.Load())
            elif isinstance(target, ast.Name):
                target = ast.Name(target.id, ast.Load())
            if may_overlap(target, node.value):
                node.value = copied(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
                and node.func.attr in ("add_at", "index_add") and len(node.args) == 3 and not node.keywords:
            c, key, value = node.args
            if may_overlap(ast.Subscript(c, key, ast.Load()), value):
                node.args[2] = copied(value)


def copy_overlaps(body: list[ast.stmt]) -> list[ast.stmt]:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef):
            copy_overlapping_operands(stmt)
    return body
