"""Adjoint helpers that do nothing where they stand, dropped from an emitted function (a
step of fuse.py): `runtime.unbroadcast(g, x)` where g has x's shape already,
`runtime.copy(e)` of a value nothing else refers to, and `runtime.sum_bar(g, x)` whose every
use broadcasts the number g anyway. Which expressions have equal shapes is the shape
analysis of emitted code (analysis/code_shapes.py, FlowShapes)."""

from __future__ import annotations

import ast

from ..analysis.code_shapes import TOP, FlowShapes, array_like, numeric, same_shape_array
from ..analysis.emitted import TEMPORARY, call_kind, changes_nothing, child_blocks, count_names


def _seeds(function: ast.FunctionDef) -> dict:
    """Nothing is known of the arguments but their identity: each is a root for slices."""
    return {arg.arg: ("value", arg.arg, False) for arg in function.args.args}


def _simple_statements(body: list):
    """The function's statements in order, with the expression of an `if` at its place."""
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            if isinstance(stmt, ast.If):
                yield stmt, "test"
            for child in child_blocks(stmt):
                yield from _simple_statements(child)
        else:
            yield stmt, None


def drop_unneeded(function: ast.FunctionDef, shadowed: set[str]) -> int:
    """unbroadcast(g, x) -> g where g has x's class, copy(e) -> e of a fresh e; returns how
    many went."""
    shapes = FlowShapes(function, _seeds(function), shadowed)
    dropped = 0

    def simplify(node: ast.expr, at) -> ast.expr:
        nonlocal dropped
        for field, child in ast.iter_fields(node):
            if isinstance(child, ast.expr):
                setattr(node, field, simplify(child, at))
            elif isinstance(child, list):
                setattr(node, field, [simplify(c, at) if isinstance(c, ast.expr) else c for c in child])
        if _runtime_call(node, shadowed) and len(node.args) in (1, 2):
            attr, args = node.func.attr, node.args
            if attr == "unbroadcast" and len(args) == 2 and same_shape_array(at.of(args[0]), at.of(args[1])):
                dropped += 1
                return args[0]
            if attr == "copy" and len(args) == 1 and _fresh(args[0], at):
                dropped += 1
                return args[0]
        return node

    for stmt, field in _simple_statements(function.body):
        at = shapes.at(stmt)
        for name in (field,) if field else ("value", "test"):
            if isinstance(getattr(stmt, name, None), ast.expr):
                setattr(stmt, name, simplify(getattr(stmt, name), at))
    return dropped


def _fresh(node, at) -> bool:
    """A new numeric value that nothing else refers to (arithmetic on arrays or numbers)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return True
    if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
        return True
    if isinstance(node, ast.BinOp):  # + and * of numbers, not of lists or tuples
        c = at.of(node)
        return c is not None and c is not TOP and numeric(c)
    return False


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)


def numbers_for_sum_bars(function: ast.FunctionDef, shadowed: set[str]) -> int:
    """`_t_bar = runtime.sum_bar(g, x)` -> `_t_bar = g` where every use of _t_bar is in an
    elementwise expression that another operand of x's shape shapes: the number broadcasts,
    and no array of x's shape is filled. Returns how many."""
    shapes = FlowShapes(function, _seeds(function), shadowed)
    sum_bars: dict[str, list] = {}  # temporary -> [its statement, x's class, uses the number would do]
    for stmt, field in _simple_statements(function.body):
        if field is not None:
            continue
        if sum_bars:
            _count_number_uses(stmt, shapes, sum_bars, shadowed)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and TEMPORARY.match(stmt.targets[0].id) and _runtime_call(stmt.value, shadowed) \
                and stmt.value.func.attr == "sum_bar" and len(stmt.value.args) == 2 \
                and changes_nothing(stmt.value, shadowed):
            value = shapes.at(stmt).of(stmt.value)
            if array_like(value):
                sum_bars[stmt.targets[0].id] = [stmt, value, 0]
    loads, stores = count_names(function)
    replaced = 0
    for name, (stmt, _, good) in sum_bars.items():
        if stores.get(name) == 1 and good == loads.get(name, 0) and good > 0:
            stmt.value = stmt.value.args[0]
            replaced += 1
    return replaced


def _count_number_uses(stmt, shapes: FlowShapes, sum_bars: dict, shadowed) -> None:
    """Count the uses of sum_bar temporaries that sit in an elementwise expression whose
    shape another operand fixes: there, the number g broadcasts to the same values."""
    parents = {}
    for node in ast.walk(stmt):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(stmt):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in sum_bars):
            continue
        entry = sum_bars[node.id]
        top = node
        while True:
            parent = parents.get(id(top))
            if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC) \
                    or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)) \
                    or isinstance(parent, ast.Call) and top in parent.args \
                    and call_kind(parent, shadowed) == "fusable" \
                    and isinstance(parent.func, ast.Attribute) and parent.func.value.id == "np":
                top = parent
                continue
            break
        if top is node:
            continue
        whole = shapes.at(stmt).of(top)
        alone = shapes.at(stmt, as_number={node.id}).of(top)
        if same_shape_array(whole, entry[1], numeric_too=False) and same_shape_array(alone, entry[1], numeric_too=False):
            entry[2] += 1


def _runtime_call(node, shadowed) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
        and "runtime" not in shadowed and not node.keywords
