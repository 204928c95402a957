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

So is which axes `np.squeeze(z)` removes, where z is made from the arguments and the call showed
which of their axes have length 1 (fold_squeezed_axes): `np.squeeze(z, axis=(1,))` is written in.
"""

from __future__ import annotations

import dataclasses
import operator

import numpy as np

from .. import runtime
from ..analysis.shapes import ShapeClasses
from ..frontend.known_arguments import fold_known_branches
from ..ir import nodes as ir
from ..rules import facts


def fold_static_properties(function: ir.Function, arguments: dict) -> None:
    """arguments: parameter -> its argument's fact (analysis/shapes.py). Changes function.body in place."""
    if not any(_reads_a_property(stmt) for stmt in ir.walk(function.body)):
        return
    classes = ShapeClasses(function, arguments)
    once, bound = _bound_once(function)  # (a shape's length is read from a name bound once)
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


def fold_squeezed_axes(function: ir.Function, arguments: dict, units: dict | None) -> bool:
    """`np.squeeze(z)` without axes, written with the axes it removes where z's shape class
    roots it in an argument whose axes of length 1 the call showed (units: parameter -> those
    axes; None where the call's were not asked for). Which axes go decides the result's ndim,
    which Numba must know when it compiles: JAX knows every shape when it traces, s2s.jit knows
    the arguments' ndim, and, for a function that squeezes, which of their axes have length 1.
    Returns whether a squeeze without axes would be decided by the arguments' lengths-1 axes
    that were not given (the caller then generates the code again with them)."""
    calls = [s for s in ir.walk(function.body) if isinstance(s, ir.Assign) and _squeezes_all(s.value)]
    if not calls:
        return False
    classes = ShapeClasses(function, arguments)
    once, bound = _bound_once(function)
    unassigned = [p for p in function.params if bound.get(p, 0) == 0]  # (a parameter assigned is not its argument)
    ones = _OnesOf(once, unassigned, arguments, units or {})
    wanted = False
    for stmt in calls:
        operand = stmt.value.args[0]
        info = classes.pre(stmt, operand.id) if isinstance(operand, ir.Name) else None
        rooted = info is not None and info[0] == "arr" and info[1] in function.params
        known = ones(operand)
        if known is None and not rooted:
            continue
        if units is None:
            wanted = True
            continue
        if known is None or None in known:
            known = _length_one_axes(info[2], units.get(info[1]) or []) if rooted and units.get(info[1]) is not None \
                else None
        else:
            known = tuple(k for k, one in enumerate(known) if one)
        if known is not None:
            squeezed = dataclasses.replace(stmt.value, kwargs=(("axis", ir.Const(known)),))
            _replace(function.body, stmt, dataclasses.replace(stmt, value=squeezed))
    return wanted


def _bound_once(function: ir.Function) -> tuple[dict, dict]:
    """(the names assigned once in the function, to the values they are assigned; how many times
    each name is assigned)."""
    bound: dict[str, int] = {}
    for stmt in ir.walk(function.body):
        for target in ir.stmt_writes(stmt):
            bound[target] = bound.get(target, 0) + 1
    once = {s.targets[0]: s.value for s in ir.walk(function.body) if isinstance(s, ir.Assign)
            and len(s.targets) == 1 and not s.unpack and not s.inplace and bound.get(s.targets[0]) == 1}
    return once, bound


class _FromNamesBoundOnce:
    """What is known of a value from the names bound once that it is made of (_made, in a
    subclass), worked out once per name; OF_A_NUMBER for a constant number, None where nothing
    is known."""

    OF_A_NUMBER: object = None

    def __init__(self, once: dict, known: dict):
        self.once = once
        self.known = dict(known)

    def __call__(self, atom):
        if isinstance(atom, ir.Const):
            return self.OF_A_NUMBER if type(atom.value) in (bool, int, float) else None
        if not isinstance(atom, ir.Name):
            return None
        if atom.id not in self.known:
            self.known[atom.id] = None  # (while it is being worked out: a cycle knows nothing)
            self.known[atom.id] = self._made(self.once.get(atom.id))
        return self.known[atom.id]

    def _made(self, value):
        raise NotImplementedError


class _OnesOf(_FromNamesBoundOnce):
    """Of a value made from the arguments (names bound once), which axes have length 1: a tuple
    with True, False or None (not known) for each axis, or None where its ndim is not known.
    Elementwise operations broadcast; matrix products, transposes, `x[:, None]` and basic
    indexing follow their axes."""

    OF_A_NUMBER = ()

    def __init__(self, once: dict, params: list, arguments: dict, units: dict):
        known = {}
        for p in params:
            ndim = _fact_ndim(arguments.get(p))
            if ndim == 0:
                known[p] = ()
            elif ndim is not None:
                given = units.get(p)
                known[p] = tuple((k in given) if given is not None else None for k in range(ndim))
        super().__init__(once, known)

    def _made(self, value):
        if isinstance(value, (ir.Name, ir.Const)):
            return self(value)
        if isinstance(value, ir.Subscript):
            return self._indexed(self(value.value), value.index.items)
        if not isinstance(value, ir.Call) or value.kwargs:
            return None
        args = [self(a) for a in value.args]
        if None in args:
            return None
        if value.fn in (operator.matmul, np.matmul, np.dot) and len(args) == 2:
            return _product_ones(*args, value.fn is np.dot)
        if value.fn is np.transpose and len(args) == 1:
            return args[0][::-1]
        if value.fn is np.expand_dims and len(value.args) == 2 and isinstance(value.args[1], ir.Const):
            return _expanded_ones(args[0], value.args[1].value)
        if value.fn in (np.asarray, np.array, np.asanyarray) and len(args) == 1:
            return args[0]
        if facts(value.fn).elementwise and args:
            return _broadcast_ones(args)
        return None

    @staticmethod
    def _indexed(ones, items):
        if ones is None or any(isinstance(i, ir.EllipsisIndex) for i in items):
            return None
        out, k = [], 0
        for item in items:
            if isinstance(item, ir.NewAxis):
                out.append(True)
                continue
            if k >= len(ones):
                return None
            if isinstance(item, ir.Slice):
                out.append(ones[k] if item.lower is None and item.upper is None and item.step is None else None)
            elif not (isinstance(item, ir.Const) and isinstance(item.value, int)
                      or isinstance(item, ir.Name)):
                return None  # (an index array: its shape decides)
            k += 1
        return tuple(out) + ones[k:]


def _expanded_ones(ones: tuple, axis):
    """np.expand_dims(x, axis): a new axis of length 1 at each of axis (an int or a tuple)."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = len(ones) + len(axes)
    if not all(isinstance(a, int) and -ndim <= a < ndim for a in axes):
        return None
    new = {a % ndim for a in axes}
    rest = iter(ones)
    return tuple(True if k in new else next(rest) for k in range(ndim))


def _broadcast_ones(args: list) -> tuple:
    """Which axes of a broadcast result have length 1: those where every operand's has (an
    operand without the axis counts as 1), not where one operand's is known longer."""
    ndim = max(len(a) for a in args)
    out = []
    for k in range(ndim):
        here = [a[k - ndim + len(a)] for a in args if k - ndim + len(a) >= 0]
        out.append(False if False in here else (True if all(h is True for h in here) else None))
    return tuple(out)


def _product_ones(a: tuple, b: tuple, dot: bool):
    if len(a) == 0 or len(b) == 0:
        return _broadcast_ones([a, b])
    if len(a) <= 2 and len(b) <= 2 or dot and len(b) == 1:
        return a[:-1] + b[:-2] + b[-1:] if len(b) >= 2 else a[:-1]
    if dot:
        return None
    rows, cols = (a[:-1] if len(a) >= 2 else ()), (b[-1:] if len(b) >= 2 else ())
    batch = _broadcast_ones([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
    return batch + rows[-1:] + cols


def _squeezes_all(value) -> bool:
    return isinstance(value, ir.Call) and value.fn in (np.squeeze, runtime.squeeze) and len(value.args) == 1 \
        and not value.kwargs


def _length_one_axes(axes: tuple, ones: list) -> tuple[int, ...] | None:
    """The axes of length 1 of an array of class ("arr", root, axes) (its axis k is the root's
    axis a less trim), from the root's axes of length 1; None where a trim leaves that unknown."""
    out = []
    for k, (a, trim) in enumerate(axes):
        if trim == 0 and a in ones:
            out.append(k)
        elif trim != 0 and a not in ones:
            return None  # (a length less trim may be 1)
    return tuple(out)


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


class _NdimOf(_FromNamesBoundOnce):
    """The ndim of a value from the names bound once that it is made of: a number's 0, an
    array's of known ndim, np.asarray/np.array of one, an elementwise operation of them (the
    largest of its operands')."""

    OF_A_NUMBER = 0

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
