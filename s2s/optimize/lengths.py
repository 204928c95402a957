"""Lengths of the 1-d arrays of an emitted function specialised to its arguments (which
parameters are numbers, which are 1-d arrays): one class per name, from all its assignments,
for the elementwise loops of loops.py. A slice x[a:-b] of a parameter of n elements has
max(0, n - a - b); elementwise results, copies and zeros_like keep their operand's length."""

from __future__ import annotations

import ast

from ..analysis.shapes import constant_trim
from ..rules import facts, spelled
from .emitted import call_kind

NUM = ("num",)
TOP = ("top",)  # not yet known, in the fixpoint over a function's assignments



def declared_facts(dotted: tuple[str, str] | None):
    """The declared facts (s2s.rules.Facts) of the function `module.attr` names."""
    return facts(spelled(*dotted)) if dotted is not None else facts(None)


def scalar_elementwise(dotted) -> bool:
    """A NumPy function that is safe on scalars under Numba (no division, no exponent that can raise)."""
    return dotted is not None and dotted[0] == "np" and declared_facts(dotted).scalar_safe


def allocation(dotted) -> bool:
    """A new array of its (first) argument's shape (zeros_like, copy)."""
    return declared_facts(dotted).like


class Refuse(Exception):
    pass


def dotted_call(node) -> tuple[str, str] | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        return node.func.value.id, node.func.attr
    return None


def element_index(k: str, offset: int) -> ast.expr:
    """k + offset, the index of element k of a slice starting at offset."""
    index = ast.Name(k, ast.Load())
    return index if offset == 0 else ast.BinOp(index, ast.Add(), ast.Constant(offset))


def meet(a, b):
    if a is TOP:
        return b
    if b is TOP:
        return a
    return a if a == b else None


def combine(classes):
    """The class of an elementwise operation: numbers broadcast, arrays must agree."""
    if any(c is None for c in classes):
        return None
    if any(c is TOP for c in classes):
        return TOP
    arrays = {c for c in classes if c != NUM}
    if not arrays:
        return NUM
    return arrays.pop() if len(arrays) == 1 else None


def slice_bounds(node) -> tuple[int, int] | None:
    """a, b of a slice a:-b (constants, a >= 0, b > 0; 0 for absent) or None."""
    if not isinstance(node, ast.Slice) or node.step is not None:
        return None

    def value(bound):
        if bound is None:
            return None
        if isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub) and isinstance(bound.operand, ast.Constant) \
                and type(bound.operand.value) is int:
            return -bound.operand.value
        return bound.value if isinstance(bound, ast.Constant) else bound  # (not an int: refused)

    lower = value(node.lower)
    trim = constant_trim(lower, value(node.upper), None)
    return None if trim is None else (lower or 0, trim - (lower or 0))


class Lengths:
    """Which names hold numbers and which hold 1-d arrays of which length, everywhere in a
    function (one class per name, from all its assignments: a fixpoint)."""

    def __init__(self, function: ast.FunctionDef, facts: dict, shadowed: set[str]):
        self.shadowed = shadowed
        self.env: dict[str, tuple | None] = {}
        params = [a.arg for a in function.args.args]
        defs: dict[str, list] = {}
        unknown: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                defs.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                defs.setdefault(node.target.id, []).append(ast.BinOp(node.target, node.op, node.value))
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.For, ast.With, ast.AnnAssign, ast.Delete,
                                   ast.NamedExpr, ast.comprehension, ast.Global, ast.Nonlocal)):
                for n in ast.walk(node.target if isinstance(node, (ast.For, ast.comprehension, ast.AugAssign))
                                  else node):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                        unknown.add(n.id)
                    if isinstance(node, (ast.Global, ast.Nonlocal)):
                        unknown.update(node.names)
        self.roots = set()
        for p in params:
            fact = facts.get(p)
            if p in defs or p in unknown:
                self.env[p] = None
            elif fact in ("float", "int", "bool"):
                self.env[p] = NUM
            elif fact == ["array", 1] or fact == ("array", 1):
                self.env[p] = ("arr", p, 0)
                self.roots.add(p)
            else:
                self.env[p] = None
        for p in params:  # a tangent has its primal's shape (s2s.jvp checks it): ["like", primal]
            fact = facts.get(p)
            if isinstance(fact, (list, tuple)) and len(fact) == 2 and fact[0] == "like" \
                    and fact[1] in self.roots and p not in defs and p not in unknown:
                self.env[p] = ("arr", fact[1], 0)
        for n in unknown:
            self.env[n] = None
        pending = {n: values for n, values in defs.items() if n not in self.env}
        for n in pending:
            self.env[n] = TOP
        for _ in range(50):
            changed = False
            for n, values in pending.items():
                new = TOP
                for v in values:
                    new = meet(new, self.cls(v))
                    if new is None:
                        break
                if new != self.env[n]:
                    self.env[n], changed = new, True
            if not changed:
                break
        else:  # no fixpoint: know nothing
            for n in pending:
                self.env[n] = None
        for n, c in list(self.env.items()):
            if c is TOP:  # only ever assigned from itself
                self.env[n] = None

    def cls(self, node):
        """NUM, ("arr", root, trim) (a 1-d array of max(0, len(root) - trim) elements),
        TOP (during the fixpoint) or None (not known)."""
        if isinstance(node, ast.Constant):
            return NUM if isinstance(node.value, (int, float, bool)) else None
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.Subscript):
            base = self.cls(node.value)
            bounds = slice_bounds(node.slice)
            if base is TOP:
                return TOP
            if base is None or base == NUM or bounds is None:
                return None
            return ("arr", base[1], base[2] + bounds[0] + bounds[1])
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                return None
            return combine([self.cls(node.left), self.cls(node.right)])
        if isinstance(node, ast.UnaryOp):
            return self.cls(node.operand) if isinstance(node.op, (ast.USub, ast.UAdd)) else None
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                return None
            return combine([self.cls(node.left), self.cls(node.comparators[0])])
        if isinstance(node, ast.Call):
            if node.keywords:
                return None
            kind = call_kind(node, self.shadowed)
            dotted = dotted_call(node)
            if dotted is None:
                return None
            module, attr = dotted
            if module in self.shadowed:
                return None
            if scalar_elementwise(dotted) and kind == "fusable":
                return combine([self.cls(a) for a in node.args])
            if module == "math":
                return NUM if combine([self.cls(a) for a in node.args]) == NUM else None
            if module == "np" and attr == "sum" and len(node.args) == 1:
                c = self.cls(node.args[0])
                return c if c in (None, TOP) else NUM
            if allocation(dotted) and len(node.args) == 1:
                c = self.cls(node.args[0])
                return None if c == NUM and not declared_facts(dotted).number_stays else c  # np.copy(2.0) is a 0-d array
            if dotted == ("runtime", "sum_bar") and len(node.args) == 2:
                g, x = self.cls(node.args[0]), self.cls(node.args[1])
                if g is TOP or x is TOP:
                    return TOP
                return x if g == NUM and x is not None and x != NUM else None
            return None
        return None
