"""Which expressions of an emitted function have equal shapes, so that adjoint helpers that
do nothing there can go (fuse.py): `runtime.unbroadcast(g, x)` where g has x's shape, and
`runtime.sum_bar(g, x)` whose every use broadcasts a number anyway."""

from __future__ import annotations

import ast

from ..rules import facts, spelled
from .emitted import TEMPORARY, call_kind, changes_nothing, child_blocks, name_loads, stored_names

# ---- adjoint helpers that do nothing here ---------------------------------------------
#
# A forward pass over the function gives each expression a shape class where one is
# known: two expressions of one class have equal shapes. Classes come from slices of one
# array (x[1:] and x[:-1] have equal shapes: max(0, n - 1) rows), elementwise arithmetic
# with a number or between operands of one class, elementwise functions, and the adjoint
# helpers themselves (unbroadcast(g, x) has x's shape, sum_bar(g, x) too). Only classes of
# arrays of one or more dimensions are compared (a slice proves that), so a 0-d array
# never stands in for a number under Numba.

_SCALAR = ("number",)


class ShapeInfo:
    __slots__ = ("cls", "numeric", "nd")

    def __init__(self, cls, numeric: bool, nd: bool):
        self.cls, self.numeric, self.nd = cls, numeric, nd


def _root(cls):
    while isinstance(cls, tuple) and cls and cls[0] == "slice":
        cls = cls[1]
    return cls


class Shapes:
    def __init__(self, shadowed: set[str]):
        self.env: dict[str, ShapeInfo] = {}
        self.shadowed = shadowed
        self.dropped = 0
        self.as_number: set[str] = set()
        # sum_bar(g, x) over all axes, assigned to a temporary: name -> [statement, x's
        # class, uses where the number g would do as well]
        self.sum_bars: dict[str, list] = {}

    def info(self, node) -> ShapeInfo | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return ShapeInfo(_SCALAR, True, False)
            return None
        if isinstance(node, ast.Name):
            return ShapeInfo(_SCALAR, True, False) if node.id in self.as_number else self.env.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.info(node.operand)
            return ShapeInfo(inner.cls, True, inner.nd) if inner else None
        if isinstance(node, ast.BinOp):
            return self.elementwise(node.op, self.info(node.left), self.info(node.right),
                                    [node.left, node.right])
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return None

    def elementwise(self, op, a: ShapeInfo | None, b: ShapeInfo | None, operands) -> ShapeInfo | None:
        if a is None or b is None:
            return None
        if isinstance(op, (ast.Sub, ast.Div, ast.Pow, ast.FloorDiv)) or op is None:
            numeric = True  # not defined on lists and tuples
        elif isinstance(op, (ast.Add, ast.Mult)):
            # lst + lst and lst * 2 are not elementwise: one side must be known numeric,
            # or a float (lst * 2.0 fails).
            floats = any(isinstance(o, ast.Constant) and isinstance(o.value, float) for o in operands)
            numeric = floats or (a.numeric and b.numeric) or (a.cls != _SCALAR and b.cls != _SCALAR
                                                              and (a.numeric or b.numeric))
            if not numeric:
                return None
        else:
            return None
        if a.cls == _SCALAR:
            return ShapeInfo(b.cls, True, b.nd)
        if b.cls == _SCALAR:
            return ShapeInfo(a.cls, True, a.nd)
        if a.cls == b.cls:
            return ShapeInfo(a.cls, True, a.nd or b.nd)
        return None

    def subscript(self, node: ast.Subscript) -> ShapeInfo | None:
        """x[a:-b] (a, b >= 0 constants) has max(0, n - a - b) rows: the class (x, a + b)."""
        base = self.info(node.value)
        index = node.slice
        if base is None or base.cls == _SCALAR or not isinstance(index, ast.Slice) or index.step is not None:
            return None
        lower = 0 if index.lower is None else _int_constant(index.lower)
        upper = 0 if index.upper is None else _int_constant(index.upper)
        if lower is None or upper is None or lower < 0 or upper > 0 or (index.upper is not None and upper == 0):
            return None
        root, trim = base.cls, 0
        if isinstance(root, tuple) and root and root[0] == "slice":
            root, trim = root[1], root[2]
        return ShapeInfo(("slice", root, trim + lower - upper), base.numeric, True)

    def call(self, node: ast.Call) -> ShapeInfo | None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)) or node.keywords:
            return None
        module, attr, args = func.value.id, func.attr, node.args
        if module in self.shadowed:
            return None
        if module == "runtime" and attr in ("unbroadcast", "sum_bar") and len(args) == 2:
            like = self.info(args[1])
            return ShapeInfo(like.cls, True, like.nd) if like and like.cls != _SCALAR else None
        if module == "runtime" and attr == "copy" and len(args) == 1:
            return self.info(args[0])
        known = facts(spelled(module, attr))
        if module == "np" and known.elementwise and known.arity == len(args):  # a ufunc, one result
            if len(args) == 1:
                inner = self.info(args[0])
                return ShapeInfo(inner.cls, True, inner.nd) if inner else None
            if len(args) == 2:
                return self.elementwise(None, self.info(args[0]), self.info(args[1]), args)
        return None

    # ---- the pass over statements --------------------------------------------------

    def kill(self, names: set[str]):
        for n in names:
            self.env.pop(n, None)

    def kill_root(self, name: str):
        """name's object may change size (lst.append): so may everything that shares its root."""
        info = self.env.get(name)
        if info is None:
            return
        root = _root(info.cls)
        for n, i in list(self.env.items()):
            if _root(i.cls) == root:
                del self.env[n]

    def simplify(self, node: ast.expr) -> ast.expr:
        """Drop unbroadcast(g, x) with g of x's class, and copy(fresh)."""
        for field, child in ast.iter_fields(node):
            if isinstance(child, ast.expr):
                setattr(node, field, self.simplify(child))
            elif isinstance(child, list):
                setattr(node, field, [self.simplify(c) if isinstance(c, ast.expr) else c for c in child])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
                and "runtime" not in self.shadowed and not node.keywords:
            attr, args = node.func.attr, node.args
            if attr == "unbroadcast" and len(args) == 2:
                g, like = self.info(args[0]), self.info(args[1])
                if g and like and g.cls == like.cls and g.cls != _SCALAR and (g.nd or like.nd) and g.numeric:
                    self.dropped += 1
                    return args[0]
            if attr == "copy" and len(args) == 1 and self._fresh(args[0]):
                self.dropped += 1
                return args[0]
        return node

    def _fresh(self, node) -> bool:
        """A new numeric value that nothing else refers to (arithmetic on arrays or numbers)."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return True
        if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
            return True
        if isinstance(node, ast.BinOp):  # + and * of numbers, not of lists or tuples
            info = self.info(node)
            return info is not None and info.numeric
        return False

    def block(self, body: list) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
                assigned = stored_names(stmt)
                loop = isinstance(stmt, (ast.For, ast.While))
                if isinstance(stmt, ast.If):
                    stmt.test = self.simplify(stmt.test)
                if loop:
                    self.kill(assigned)
                    self._kill_mutated(stmt)
                saved = dict(self.env)
                for child in child_blocks(stmt):
                    self.env = dict(saved)
                    self.block(child)
                self.env = saved
                self.kill(assigned)
                self._kill_mutated(stmt)
                continue
            for field in ("value", "test"):
                if isinstance(getattr(stmt, field, None), ast.expr):
                    setattr(stmt, field, self.simplify(getattr(stmt, field)))
            self.check_sum_bar_uses(stmt)
            self._kill_mutated(stmt)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            for target in targets:
                # lst[1:3] = [...] may resize a list; an array keeps its shape, but be safe.
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                        and isinstance(target.slice, ast.Slice):
                    self.kill_root(target.value.id)
            if isinstance(stmt, ast.Assign):
                value = self.info(stmt.value) if changes_nothing(stmt.value, self.shadowed) else None
                names = stored_names(stmt)
                self.kill(names)
                if value is not None and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self.env[stmt.targets[0].id] = value
                    if _is_runtime_call(stmt.value, "sum_bar", self.shadowed) and len(stmt.value.args) == 2 \
                            and value.nd and TEMPORARY.match(stmt.targets[0].id):
                        self.sum_bars[stmt.targets[0].id] = [stmt, value.cls, 0]
            else:
                self.kill(stored_names(stmt))

    def check_sum_bar_uses(self, stmt) -> None:
        """Count the uses of sum_bar temporaries that sit in an elementwise expression whose
        shape another operand fixes: there, the number g broadcasts to the same values."""
        if not self.sum_bars:
            return
        parents = {}
        for node in ast.walk(stmt):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in self.sum_bars):
                continue
            entry = self.sum_bars[node.id]
            top = node
            while True:
                parent = parents.get(id(top))
                if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC) \
                        or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)) \
                        or isinstance(parent, ast.Call) and top in parent.args \
                        and call_kind(parent, self.shadowed) == "fusable" \
                        and isinstance(parent.func, ast.Attribute) and parent.func.value.id == "np":
                    top = parent
                    continue
                break
            if top is node:
                continue
            whole = self.info(top)
            self.as_number = {node.id}
            alone = self.info(top)
            self.as_number = set()
            if whole and alone and whole.cls == entry[1] and alone.cls == entry[1] and alone.nd:
                entry[2] += 1

    def _kill_mutated(self, stmt) -> None:
        """Objects a statement may resize: receivers of method calls, arguments of calls not
        known to change nothing, names deleted."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and call_kind(node, self.shadowed) is None:
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    self.kill_root(node.func.value.id)
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    for n in name_loads(arg):
                        self.kill_root(n.id)


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)


def _is_runtime_call(node, helper: str, shadowed) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
        and node.func.attr == helper and "runtime" not in shadowed and not node.keywords


def _int_constant(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_constant(node.operand)
        return -inner if inner is not None else None
    return None
