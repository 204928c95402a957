"""Tests of a value's number of dimensions, decided for the call that code is generated for.

    z = np.exp(x * a)
    if z.ndim == 1:          # NumPy: decided by x's ndim at each call
        return np.sum(z)
    return z

JAX treats ndim and shapes as static; s2s.jit generates code for each kind of call (the
arguments' facts: numbers, arrays and their ndim), so a test of `z.ndim`, `np.ndim(z)` or
`len(z.shape)` / `len(np.shape(z))` has one answer there wherever the shape classes
(analysis/shapes.py) know z's ndim: the property is written in as a constant and the branch not
taken is dropped (frontend/known_arguments.py), as Numba drops the branches of a test of an
argument's ndim but not of a computed array's (where it would type both and refuse one).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..analysis.shapes import ShapeClasses
from ..frontend.known_arguments import fold_known_branches
from ..ir import nodes as ir
from ..rules import facts


def fold_static_properties(function: ir.Function, arguments: dict) -> None:
    """arguments: parameter -> its argument's fact (analysis/shapes.py). Changes function.body in place."""
    if not any(_reads_a_property(stmt) for stmt in ir.walk(function.body)):
        return
    classes = ShapeClasses(function, arguments)
    bound = {}  # how many times each name is assigned (a shape's length is read from a name bound once)
    for stmt in ir.walk(function.body):
        for target in ir.stmt_writes(stmt):
            bound[target] = bound.get(target, 0) + 1
    once = {s.targets[0]: s.value for s in ir.walk(function.body) if isinstance(s, ir.Assign)
            and len(s.targets) == 1 and not s.unpack and not s.inplace and bound.get(s.targets[0]) == 1}
    ndim_of = _NdimOf(once, {p: _fact_ndim(arguments.get(p)) for p in function.params if bound.get(p, 0) == 0})
    lengths: dict[str, int] = {}  # names bound once to the shape of an array of known ndim
    written = False
    for stmt in ir.walk(function.body):
        if not (isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 and not stmt.unpack and not stmt.inplace):
            continue
        target, value = stmt.targets[0], stmt.value
        env = classes.before.get(id(stmt), {})
        if _is_shape_of(value) and bound.get(target) == 1:
            ndim = _ndim(value.value if isinstance(value, ir.Attribute) else value.args[0], env, ndim_of)
            if ndim is not None:
                lengths[target] = ndim
            continue
        ndim = None
        if isinstance(value, ir.Attribute) and value.attr == "ndim" or _calls(value, np.ndim, 1):
            ndim = _ndim(value.value if isinstance(value, ir.Attribute) else value.args[0], env, ndim_of)
        elif _calls(value, len, 1) and isinstance(value.args[0], ir.Name):
            ndim = lengths.get(value.args[0].id)
        if ndim is not None:
            _replace(function.body, stmt, dataclasses.replace(stmt, value=ir.Const(ndim)))
            written = True
    if written:
        fold_known_branches(function)


def _reads_a_property(stmt) -> bool:
    value = getattr(stmt, "value", None) if isinstance(stmt, ir.Assign) else None
    return isinstance(value, ir.Attribute) and value.attr == "ndim" or _calls(value, np.ndim, 1) \
        or _is_shape_of(value)


def _is_shape_of(value) -> bool:
    return isinstance(value, ir.Attribute) and value.attr == "shape" or _calls(value, np.shape, 1)


def _calls(value, fn, arity: int) -> bool:
    return isinstance(value, ir.Call) and value.fn is fn and len(value.args) == arity and not value.kwargs


def _ndim(atom, env: dict, ndim_of: "_NdimOf") -> int | None:
    """The number of dimensions of atom where its shape class tells (a number's is 0), or
    else what it was made from (ndim_of: 0-d arrays, which have no shape class)."""
    if not isinstance(atom, ir.Name):
        return None
    info = env.get(atom.id)
    if info is not None and info[0] == "num":
        return 0
    if info is not None and info[0] == "arr":
        return len(info[2])
    return ndim_of(atom)


def _fact_ndim(fact) -> int | None:
    if fact in ("float", "int", "bool"):
        return 0
    if isinstance(fact, list) and fact and fact[0] == "array":
        return fact[1]
    return None


class _NdimOf:
    """The ndim of a value from the names bound once that it is made of: a number's 0, an
    array's of known ndim, np.asarray/np.array of one, an elementwise operation of them (the
    largest of its operands')."""

    def __init__(self, once: dict, params: dict):
        self.once = once
        self.known = dict(params)

    def __call__(self, atom) -> int | None:
        if isinstance(atom, ir.Const):
            return 0 if type(atom.value) in (bool, int, float) else None
        if not isinstance(atom, ir.Name):
            return None
        if atom.id not in self.known:
            self.known[atom.id] = None  # (while it is being worked out: a cycle knows nothing)
            self.known[atom.id] = self._made(self.once.get(atom.id))
        return self.known[atom.id]

    def _made(self, value) -> int | None:
        if isinstance(value, (ir.Name, ir.Const)):
            return self(value)
        if not isinstance(value, ir.Call) or value.kwargs:
            return None
        if value.fn in (np.asarray, np.array, np.asanyarray) and len(value.args) == 1:
            return self(value.args[0])
        if facts(value.fn).elementwise:
            dims = [self(a) for a in value.args]
            return max(dims) if dims and None not in dims else None
        return None


def _replace(block: list, old, new) -> bool:
    for k, stmt in enumerate(block):
        if stmt is old:
            block[k] = new
            return True
        if any(_replace(child, old, new) for child in ir.child_blocks(stmt)):
            return True
    return False
