"""Facts about emitted Python that its analyses and passes share: which calls are pure or elementwise (as the
templates declare them, s2s.rules.Facts), which names a statement reads and writes, and the
origin comments that ride through the passes as `__s2s_comment_N__` statements."""

from __future__ import annotations

import ast
import re

from ..rules import facts, spelled

TEMPORARY = re.compile(r"^_t\d+(_bar|_dot)?$")
_COMMENT = re.compile(r"^__s2s_comment_(\d+)__$")


def called(node: ast.Call, shadowed: set[str]):
    """The function a call of generated code names (`np.sin`, `runtime.copy`, `abs`), None
    where it is not one of NumPy's, math's, the runtime's or a builtin, or its name is shadowed."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return spelled(func.value.id, func.attr) if func.value.id not in shadowed else None
    if isinstance(func, ast.Name) and func.id not in shadowed:
        return spelled(None, func.id)
    return None


def call_kind(node: ast.Call, shadowed: set[str]) -> str | None:
    """"fusable" (an elementwise function), "pure" (reads only) or None (may change something),
    as the templates declare it (s2s.rules.Facts)."""
    if any(kw.arg == "out" or kw.arg is None for kw in node.keywords):
        return None
    known = facts(called(node, shadowed))
    return "fusable" if known.fusable else "pure" if known.pure else None


_READ_ONLY = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp,
              ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Attribute, ast.Call, ast.Dict, ast.keyword,
              ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def changes_nothing(expr: ast.expr, shadowed: set[str]) -> bool:
    """Evaluating expr reads values and builds new ones; it changes no existing object."""
    for node in ast.walk(expr):
        if not isinstance(node, _READ_ONLY):
            return False
        if isinstance(node, ast.Call) and call_kind(node, shadowed) is None:
            return False
    return True


def foldable(expr: ast.expr, shadowed: set[str]) -> bool:
    """An expression worth moving into its use: arithmetic, comparisons, reads and
    elementwise functions, which Numba fuses with the expression around them."""
    for node in ast.walk(expr):
        if isinstance(node, (ast.List, ast.Dict, ast.BoolOp, ast.IfExp)):
            return False
        if not isinstance(node, _READ_ONLY):
            return False
        if isinstance(node, ast.Call) and call_kind(node, shadowed) != "fusable":
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return False
    return True


def name_loads(node) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def stored_names(node) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


def is_comment(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Name) and bool(_COMMENT.match(stmt.value.id))


def is_heading(stmt, headings: set[int] | None) -> bool:
    return is_comment(stmt) and (headings is None or int(_COMMENT.match(stmt.value.id).group(1)) in headings)


def child_blocks(stmt) -> list[list]:
    return [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]


def count_names(function) -> tuple[dict, dict]:
    loads: dict[str, int] = {}
    stores: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            table = loads if isinstance(node.ctx, ast.Load) else stores
            table[node.id] = table.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loads[node.target.id] = loads.get(node.target.id, 0) + 1
    return loads, stores
