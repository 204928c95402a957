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
from ..ir import nodes as ir
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
        return dotted[0] == "math" or dotted in _ELEMENT_CALLS or allocation(dotted)

    def call(self, dotted: tuple[str, str], node: ast.Call):
        if dotted == ("np", "dot") or dotted in DOT_BARS:
            return self.dot(dotted, node)
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


    def dot(self, dotted: tuple[str, str], node: ast.Call):
        """np.dot(a, b) of two 1-d arrays of one length is a number (the sum of a * b); its
        adjoints runtime.dot_bar_x(g, a, b) and dot_bar_y(g, a, b) with a number g are g * b
        and g * a, of that length. Anything else: no class."""
        classes = [self.of(a) for a in node.args]
        if len(classes) != (2 if dotted == ("np", "dot") else 3):
            return None
        if TOP in classes:
            return TOP
        *g, a, b = classes
        if g and not is_number(g[0]):
            return None
        if not (one_d(a) and a == b):
            return None
        return NUMBER if not g else a


def one_d(c) -> bool:
    """A class of 1-d arrays (of a parameter's length, perhaps trimmed)."""
    return c is not None and c is not TOP and c[0] == "arr" and len(c[2]) == 1


DOT_BARS = (("runtime", "dot_bar_x"), ("runtime", "dot_bar_y"))
_ELEMENT_CALLS = (("np", "sum"), ("np", "dot"), ("runtime", "sum_bar")) + DOT_BARS


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
    parents = {}
    for node in ast.walk(stmt):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    out = set()
    for node in ast.walk(stmt):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in ir.SHAPE_ATTRIBUTES:
            continue  # (an array's shape is a new tuple or a number)
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
            out.add(node.id)
            continue
        child = node
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


def _rebound(function: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))} \
        | {n.target.id for n in ast.walk(function) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}


def dot_pairs(function: ast.FunctionDef, roots: set[str], shadowed: set[str]) -> list[tuple[str, str]]:
    """(a, b) of each `t = np.dot(a, b)` of two 1-d array parameters, neither ever rebound, in
    a statement of the function's own body (one that every call runs, unless an earlier one
    raises): np.dot raises unless len(a) == len(b), so the two have one length."""
    if "np" in shadowed:
        return []
    rebound = _rebound(function)
    pairs = []
    for stmt in function.body:
        if isinstance(stmt, ast.Assign) and dotted_call(stmt.value) == ("np", "dot") and not stmt.value.keywords:
            args = stmt.value.args
            if len(args) == 2 and all(isinstance(a, ast.Name) and a.id in roots and a.id not in rebound
                                      for a in args) and args[0].id != args[1].id:
                pairs.append((args[0].id, args[1].id))
    return pairs


def lengths(function: ast.FunctionDef, argument_facts: dict, shadowed: set[str]) -> tuple[dict, set[str], list]:
    """{name: class} everywhere in function, the 1-d array parameters (the roots whose
    lengths a loop may run over), and the pairs of parameters whose lengths were taken to be
    one because np.dot of them raises otherwise (dot_pairs; a loop that relies on it checks
    the lengths first). A parameter with the fact ("row", p) is a destination of p's shape
    (the caller checks it); ("like", p) a tangent of p (s2s.jvp checks it)."""
    seeds, roots = {}, set()
    params = [a.arg for a in function.args.args]
    for p in params:
        fact = argument_facts.get(p)
        if fact in ("float", "int", "bool"):
            seeds[p] = NUMBER
        elif fact == ["array", 1] or fact == ("array", 1):
            seeds[p], roots = ("arr", p, ((0, 0),)), roots | {p}
    # one length for both operands of a dot: each root's representative (the first parameter
    # of its group, in the signature's order)
    pairs = dot_pairs(function, roots, shadowed)
    group = {r: r for r in roots}

    def find(r):
        while group[r] != r:
            r = group[r]
        return r

    for a, b in pairs:
        ra, rb = sorted((find(a), find(b)), key=params.index)
        group[rb] = ra
    for r in roots:
        seeds[r] = ("arr", find(r), ((0, 0),))
    roots = {r for r in roots if find(r) == r}
    for p in params:
        fact = argument_facts.get(p)
        if isinstance(fact, (list, tuple)) and len(fact) == 2 and fact[0] in ("like", "row") and fact[1] in group:
            seeds[p] = ("arr", find(fact[1]), ((0, 0),))
    env = everywhere(function, seeds, ElementShapes, shadowed)
    return env, {r for r in roots if env.get(r) is not None}, pairs
