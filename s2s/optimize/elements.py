"""What the elementwise loops (loops.py) ask of an emitted function, specialised to its
arguments (which parameters are numbers, which are 1-d arrays): which names hold numbers and
which 1-d arrays of which length. That is the shape analysis of emitted code
(analysis/code_shapes.py), one class per name from all its assignments, with one restriction
of the loops' own: only calls that mean the same on one element under Numba have a class
(a ufunc that is safe on numbers, math.*, np.sum, an allocation like its argument), so that
an expression with any other call is never taken apart element by element."""

from __future__ import annotations

import ast

from ..analysis.code_shapes import TOP, CodeShapes, dotted_call, everywhere, is_number
from ..analysis.emitted import call_kind
from ..analysis.shapes import NUMBER
from ..rules import facts, spelled


class Refuse(Exception):
    """A statement may not join the loop being built."""


def declared_facts(dotted: tuple[str, str] | None):
    """The declared facts (s2s.rules.Facts) of the function `module.attr` names."""
    return facts(spelled(*dotted)) if dotted is not None else facts(None)


def scalar_elementwise(dotted) -> bool:
    """A NumPy function that is safe on scalars under Numba (no division, no exponent that can raise)."""
    return dotted is not None and dotted[0] == "np" and declared_facts(dotted).scalar_safe


def allocation(dotted) -> bool:
    """A new array of its (first) argument's shape (zeros_like, copy)."""
    return declared_facts(dotted).like


def element_index(k: str, offset: int) -> ast.expr:
    """k + offset, the index of element k of a slice starting at offset."""
    index = ast.Name(k, ast.Load())
    return index if offset == 0 else ast.BinOp(index, ast.Add(), ast.Constant(offset))


class ElementShapes(CodeShapes):
    """The shape analysis, with a class only for calls that mean the same on one element."""

    def admits(self, dotted: tuple[str, str], node: ast.Call) -> bool:
        if node.keywords:
            return False
        if scalar_elementwise(dotted):
            return call_kind(node, self.shadowed) == "fusable"
        return dotted[0] == "math" or dotted == ("np", "sum") or allocation(dotted) or dotted == ("runtime", "sum_bar")

    def call(self, dotted: tuple[str, str], node: ast.Call):
        if dotted == ("runtime", "sum_bar"):
            # g in every element of an array shaped like x: only where g is a number (an
            # array g may come back as it is, and is not a fresh array of x's length)
            if len(node.args) != 2:
                return None
            g = self.of(node.args[0])
            if g is TOP or self.of(node.args[1]) is TOP:
                return TOP
            if not is_number(g):
                return None
        return super().call(dotted, node)


def names_read(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def names_written(node) -> set[str]:
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    for n in ast.walk(node):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


_SAFE_PARENTS = (ast.BinOp, ast.UnaryOp, ast.Compare)


def aliasing_loads(stmt, shadowed) -> set[str]:
    """Names whose array this statement may give another name (or hand to a call that might):
    every load except as an operand of arithmetic, an argument of an elementwise function or
    of an allocation, and the array of a subscript write or of `w += e`."""
    if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
        return names_read(stmt)
    parents = {}
    for node in ast.walk(stmt):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    out = set()
    for node in ast.walk(stmt):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        child, parent = node, parents.get(id(node))
        while isinstance(parent, ast.Subscript) and parent.value is child:
            child, parent = parent, parents.get(id(parent))
        if isinstance(parent, _SAFE_PARENTS):
            continue
        if isinstance(parent, ast.Call) and child in parent.args:
            dotted = dotted_call(parent)
            if dotted is not None and dotted[0] not in shadowed and (
                    scalar_elementwise(dotted) or dotted == ("np", "sum") or allocation(dotted)):
                continue
        if isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Store):
            continue
        out.add(node.id)
    return out


def lengths(function: ast.FunctionDef, argument_facts: dict, shadowed: set[str]) -> tuple[dict, set[str]]:
    """{name: class} everywhere in function, and the 1-d array parameters (the roots whose
    lengths a loop may run over)."""
    seeds, roots = {}, set()
    for p in (a.arg for a in function.args.args):
        fact = argument_facts.get(p)
        if fact in ("float", "int", "bool"):
            seeds[p] = NUMBER
        elif fact == ["array", 1] or fact == ("array", 1):
            seeds[p], roots = ("arr", p, ((0, 0),)), roots | {p}
    for p in (a.arg for a in function.args.args):  # a tangent has its primal's shape (s2s.jvp checks it)
        fact = argument_facts.get(p)
        if isinstance(fact, (list, tuple)) and len(fact) == 2 and fact[0] == "like" and fact[1] in roots:
            seeds[p] = ("arr", fact[1], ((0, 0),))
    env = everywhere(function, seeds, ElementShapes, shadowed)
    return env, {r for r in roots if env.get(r) is not None}
