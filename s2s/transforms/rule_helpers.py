"""Helpers for instantiating derivative templates, shared by the forward and reverse transforms:
renaming placeholders, dropping default arguments, folding zeros and ones, the names in use."""

from __future__ import annotations

import ast
import inspect

import numpy as np

from ..ir import nodes as ir
from .. import runtime
from ..rules import spelled



def all_names(fn: ir.Function) -> set[str]:
    names = set(fn.params) | set(fn.constants)
    for stmt in ir.walk(fn.body):
        names.update(ir.stmt_reads(stmt))
        names.update(ir.stmt_writes(stmt))
    return names


class Rename(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def visit_Name(self, node):
        if node.id in self.renames:
            return ast.Name(self.renames[node.id], node.ctx)
        return node


def drop_defaults(node: ast.Call, found) -> ast.Call:
    """Leave out trailing arguments equal to the called helper's defaults (readability)."""
    func = node.func
    target = None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "runtime":
        target = getattr(runtime, func.attr, None)
    if target is not None:
        params = list(inspect.signature(target).parameters.values())
        while node.args and len(node.args) <= len(params):
            default = params[len(node.args) - 1].default
            last = _number_sign(node.args[-1])
            if default is inspect.Parameter.empty or not isinstance(last, ast.Constant) or not _same(last.value, default):
                break
            node.args.pop()
    if found.signature is not None:
        # A keyword goes where it equals the template's default (an option the call left out)
        # and the called function's own default too: np.sum(..., axis=0) inside a template
        # whose own axis defaults to 0 is a different sum without it. (NumPy's _NoValue,
        # keepdims's default, stands for the default its documentation gives: the template's.)
        defaults = {k: p.default for k, p in found.signature.parameters.items()
                    if p.default is not inspect.Parameter.empty}
        own = _own_defaults(func, target)

        def left_out(kw: ast.keyword) -> bool:
            value = _number_sign(kw.value)
            return kw.arg in defaults and kw.arg in own and isinstance(value, ast.Constant) \
                and _same(value.value, defaults[kw.arg]) \
                and (own[kw.arg] is np._NoValue or _same(value.value, own[kw.arg]))

        node.keywords = [kw for kw in node.keywords if not left_out(kw)]
        # np.transpose(x, None) and friends: a trailing positional None is the default.
        if isinstance(func, ast.Attribute) and not target:
            while node.args and len(node.args) > 1 and isinstance(node.args[-1], ast.Constant) \
                    and node.args[-1].value is None:
                node.args.pop()
    return node


def _number_sign(node: ast.expr) -> ast.expr:
    """-1 as the constant it is (generated code writes a negative number as a negation: axis=-1)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return ast.Constant(-node.operand.value)
    return node


def _same(value, default) -> bool:
    return value == default and type(value) is type(default)


def _own_defaults(func: ast.expr, target) -> dict:
    """The keyword defaults of the function a template calls (`runtime.x`, `np.x`, `np.linalg.x`,
    `math.x`); empty where it has no signature Python can read, so that nothing is dropped."""
    if target is None:
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if isinstance(func, ast.Name) and parts:
            target = spelled(func.id, parts.pop())
            for part in reversed(parts):
                target = getattr(target, part, None)
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _number(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def _times_zero(node: ast.expr) -> bool:
    """The int 0, or a product whose right factor is the int 0 (g * 0)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        node = node.right
    return _number(node) and node.value == 0 and type(node.value) is int


def simplify(node: ast.expr) -> ast.expr:
    """Fold constants and drop multiplications by one, so rules read like hand-written code."""
    for child_name, child in ast.iter_fields(node):
        if isinstance(child, ast.expr):
            setattr(node, child_name, simplify(child))
        elif isinstance(child, list):
            setattr(node, child_name, [simplify(c) if isinstance(c, ast.expr) else c for c in child])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        if isinstance(node.operand, ast.UnaryOp) and isinstance(node.operand.op, ast.USub):
            return node.operand.operand
        if _number(node.operand):
            return ast.Constant(-node.operand.value) if node.operand.value >= 0 else ast.Constant(-node.operand.value)
    if isinstance(node, ast.BinOp):
        left, right, op = node.left, node.right, node.op
        if _number(left) and _number(right) and isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            value = {ast.Add: left.value + right.value, ast.Sub: left.value - right.value,
                     ast.Mult: left.value * right.value}[type(op)]
            return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))
        if isinstance(op, ast.Pow) and _number(right) and right.value == 1:
            return left
        if isinstance(op, ast.Mult) and _times_zero(left) and isinstance(right, ast.BinOp) \
                and isinstance(right.op, ast.Pow) and isinstance(right.right, ast.UnaryOp) \
                and isinstance(right.right.op, ast.USub):
            # (g * 0) * x ** -1: the power rule's y * x ** (y - 1) at the exponent 0, whose
            # derivative is 0 everywhere (JAX's too): 0 * inf at x = 0 would be NaN, and Numba
            # raises ZeroDivisionError for a negative int power of 0.
            return left
        if isinstance(op, ast.Mult) and _number(right) and right.value == 1 and type(right.value) is int:
            return left
        if isinstance(op, ast.Mult) and _number(left) and left.value == 1 and type(left.value) is int:
            return right
        if isinstance(op, (ast.Add, ast.Sub)) and _number(right) and right.value == 0:
            return left
        if isinstance(op, ast.Sub) and isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub):
            return ast.BinOp(left, ast.Add(), right.operand)
        if isinstance(op, ast.Add) and isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub):
            return ast.BinOp(left, ast.Sub(), right.operand)
    return node
