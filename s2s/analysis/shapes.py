"""Shape classes of a normalized function's values, from what is known of its arguments.

s2s.jit sees the arguments of every call: which are numbers, which are arrays and of what
ndim (`argument_facts`). From these facts a forward pass over the IR gives a value a shape
class where one can be proved; two values of one class have equal shapes. The reverse
transform then leaves out `runtime.unbroadcast(g, x)` where g provably has x's shape
already, and the shape tapes that fed it, which lets the folding pass (optimize/fuse.py) join the
adjoint expressions that stood on either side.

The classes:
- ("num", is_int): a number (shape ()); is_int for ints, which may index an axis away;
- ("arr", root, axes): an array of one or more dimensions whose shape is
  tuple(max(0, shape(root)[a] - trim) for a, trim in axes), root naming an argument's value
  on entry. Slices with constant bounds (x[1:], x[:-2], x[1:-1, :]) and integer indices
  (x[i], x[i, 1:]) of a class have a class, and so do elementwise operations whose operands
  are numbers or of one class;
- ("tup", infos): a tuple, element by element;
- ("shape", root, axes): the .shape of an array of that class (x.shape[0] is an int);
- None: nothing is known (0-d arrays too: under Numba they are typed apart from numbers).

Without facts (the command line, the import hook, the python backend) nothing is known of
the arguments and every unbroadcast stays, as the generated code must then work for any
argument types.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import runtime
from ..ir import nodes as ir
from ..rules import facts

NUMBER = ("num", False)
INTEGER = ("num", True)


# ---- facts: what a call's arguments are --------------------------------------------------


def argument_fact(value: Any):
    """A JSON-able description of an argument: "float", "int", "bool", ["array", ndim] (of
    numbers), ["array", ndim, "bool"], ["tuple", [facts]], ["dict", keys, [facts]], "none" (None: the code generated for
    the call takes the branch of `if w is None:`) or None (nothing that s2s can use).
    A boolean array is told apart: NumPy's sum of two is their logical or, which the loops of
    optimize/loops.py, over numbers, would compute as 1 + 1."""
    if isinstance(value, np.ndarray):
        return ["array", value.ndim, "bool"] if value.dtype == np.bool_ else ["array", value.ndim]
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, tuple):  # (and namedtuples; lists are passed to Numba as tuples too)
        return ["tuple", [argument_fact(v) for v in value]]
    if isinstance(value, list):
        return ["tuple", [argument_fact(v) for v in value]]
    if value is None:
        return "none"
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        # ["dict", keys in the dict's order (a loop over it goes so), [facts of the values]]
        return ["dict", list(value), [argument_fact(v) for v in value.values()]]
    return None


def argument_facts(args) -> list:
    return [argument_fact(a) for a in args]


def unit_axes(args) -> list:
    """For each argument, its axes of length 1 where it is an array (a list), else None: what
    s2s.jit specialises a function that squeezes without axes to, beside the facts
    (transforms/static_properties.py)."""
    return [[k for k, n in enumerate(a.shape) if n == 1] if isinstance(a, np.ndarray) else None for a in args]


def _info_from_fact(fact, root: str):
    if fact in ("float", "bool"):
        return NUMBER
    if fact == "int":
        return INTEGER
    if isinstance(fact, list) and fact and fact[0] == "array":
        ndim = fact[1]
        return ("arr", root, tuple((k, 0) for k in range(ndim))) if ndim >= 1 else None
    if isinstance(fact, list) and fact and fact[0] == "tuple":
        return ("tup", tuple(_info_from_fact(f, f"{root}[{k}]") for k, f in enumerate(fact[1])))
    return None


def same_shape(a, b) -> bool:
    """Do values of these two classes provably have one shape (and are both numbers, or
    both arrays)?"""
    if a is None or b is None:
        return False
    if a[0] == "num" and b[0] == "num":
        return True
    return a[0] == "arr" and b[0] == "arr" and a[1:] == b[1:]


def broadcast(*infos, is_int: bool = False):
    """The class of an elementwise operation's result, or None."""
    if any(i is None or i[0] not in ("num", "arr") for i in infos):
        return None
    arrays = [i for i in infos if i[0] == "arr"]
    if not arrays:
        return INTEGER if is_int and all(i[1] for i in infos) else NUMBER
    first = arrays[0]
    return first if all(a == first for a in arrays[1:]) else None


# ---- which functions are elementwise ------------------------------------------------------

# What is known of each function (elementwise, keeps integers, a whole-array reduction, of
# the shape of its argument) is declared with its derivative rule: s2s.rules.facts.


def call_info(fn, args: list, kwargs: tuple = ()):
    """The class of fn(*args) from its arguments' classes (None where unknown)."""
    known = facts(fn)
    if fn is runtime.sum_start and len(args) == 1:
        # sum(xs)'s start: Python's 0 where xs holds numbers (a vector's items, a tuple's of numbers)
        seq = args[0]
        numbers = seq is not None and (seq[0] == "arr" and len(seq[2]) == 1 or seq[0] == "tup" and bool(seq[1])
                                       and all(i is not None and i[0] == "num" for i in seq[1]))
        return INTEGER if numbers else None
    try:
        if known.like and len(args) == 1 and all(k == "dtype" for k, _ in kwargs):
            # Of an array, an array of its shape; of a number, the runtime helpers give a
            # number and NumPy's a 0-d array (not followed).
            kind = args[0][0] if args[0] is not None else None
            return args[0] if kind == "arr" or kind == "num" and known.number_stays else None
        if kwargs:
            return None
        if known.elementwise and known.arity == len(args):
            # operators, abs and ufuncs; ints stay ints through integer="kept" ones (+, -, *, //, %, -x, abs)
            return broadcast(*args, is_int=known.integer == "kept")
        if fn is operator.not_ and len(args) == 1:
            return NUMBER if args[0] is not None and args[0][0] == "num" else None
        if known.reduction and len(args) == 1:
            return NUMBER if args[0] is not None and args[0][0] in ("num", "arr") else None
        if known.broadcasts and known.arity == len(args):  # np.where(c, x, y)
            return broadcast(*args)
        if fn in (float, np.float64, np.float32) and len(args) == 1:
            return NUMBER if args[0] is not None and args[0][0] == "num" else None
        if fn is int and len(args) == 1:
            return INTEGER if args[0] is not None and args[0][0] == "num" else None
        if fn in (min, max) and len(args) >= 2:
            if all(a is not None and a[0] == "num" for a in args):
                return INTEGER if all(a[1] for a in args) else NUMBER
            return None
        if fn is len and len(args) == 1:
            return INTEGER if args[0] is not None and args[0][0] in ("arr", "tup") else None
        if known.product in ("matmul", "dot", "inner") and len(args) == 2:
            # Two vectors make a number (or an error, if their lengths differ).
            return NUMBER if all(a is not None and a[0] == "arr" and len(a[2]) == 1 for a in args) else None
    except TypeError:  # an unhashable callable
        return None
    if _is_math(fn):
        if args and all(a is not None and a[0] == "num" for a in args):
            return INTEGER if known.integer == "always" else NUMBER
    return None


def _is_math(fn) -> bool:
    return getattr(fn, "__module__", None) == "math"


# ---- the pass -------------------------------------------------------------------------------

_UNBOUND = object()


def _join(a: dict, b: dict) -> dict:
    """Two paths meet: a variable bound on one path only keeps its class (where it is read,
    it was bound on that path); one bound on both keeps it where they agree."""
    out = dict(a)
    for var, info in b.items():
        out[var] = info if var not in a or a[var] == info else None
    return out


class ShapeClasses:
    """Classes of every variable before each statement (and after each assignment)."""

    MAX_ROUNDS = 20

    def __init__(self, fn: ir.Function, facts: dict[str, Any]):
        self.before: dict[int, dict] = {}
        self.after: dict[int, dict] = {}
        env = {p: _info_from_fact(facts.get(p), p) for p in fn.params}
        self.at_exit = self._block(fn.body, env)
        # (normalize lowers every return to one at the end: fn.result is read after the body)
        self.result = self._atom(fn.result, self.at_exit) if fn.result is not None else None

    def pre(self, stmt, var: str):
        return self.before.get(id(stmt), {}).get(var)

    def post(self, stmt, var: str):
        return self.after.get(id(stmt), {}).get(var)

    def constant(self, atom: ir.Const):
        return self._atom(atom, {})

    def subscript(self, base, index: ir.Index, env: dict):
        return self._subscript(base, index, env)

    def everywhere(self, var: str):
        """var's class wherever it is bound, where that is one class (else None)."""
        seen = [env[var] for env in list(self.before.values()) + list(self.after.values()) if var in env]
        if seen and all(s == seen[0] for s in seen):
            return seen[0]
        return None

    # ---- statements

    def _block(self, block: list, env: dict) -> dict:
        for stmt in block:
            env = self._stmt(stmt, env)
        return env

    def _stmt(self, stmt, env: dict) -> dict:
        self.before[id(stmt)] = dict(env)
        if isinstance(stmt, ir.Assign):
            info = self._value(stmt.value, env)
            env = dict(env)
            if stmt.unpack:
                parts = self._unpacked(info, len(stmt.targets))
                for target, part in zip(stmt.targets, parts):
                    env[target] = part
            else:
                env[stmt.targets[0]] = info
            self.after[id(stmt)] = dict(env)
            return env
        if isinstance(stmt, ir.ExprStmt) and stmt.mutates:
            # In-place helpers never change an array's shape; anything else may change.
            info = env.get(stmt.mutates)
            if info is not None and info[0] != "arr":
                env = dict(env)
                env[stmt.mutates] = None
            return env
        if isinstance(stmt, ir.If):
            return _join(self._block(stmt.body, dict(env)), self._block(stmt.orelse, dict(env)))
        if isinstance(stmt, ir.For):
            return self._loop(env, [], stmt.body, stmt.var)
        if isinstance(stmt, ir.While):
            return self._loop(env, stmt.cond, stmt.body, None)
        if isinstance(stmt, ir.SetItem):
            info = env.get(stmt.base)
            if info is not None and info[0] != "arr":  # an array keeps its shape; a list may not
                env = dict(env)
                env[stmt.base] = None
        return env  # Push, Return, print

    def _loop(self, entry: dict, cond: list, body: list, var: str | None) -> dict:
        head = dict(entry)
        for _ in range(self.MAX_ROUNDS):
            if var is not None:
                head[var] = INTEGER
            tested = self._block(cond, dict(head))
            end = self._block(body, dict(tested))
            following = _join(entry, end)
            if var is not None:
                following[var] = INTEGER
            if following == head:
                return _join(entry, tested) if var is not None else tested
            head = following
        # Did not settle: forget everything the loop assigns, and record that.
        written = {w for s in ir.walk(cond + body) for w in ir.stmt_writes(s)}
        head = {v: (None if v in written else i) for v, i in head.items()}
        for w in written:
            head[w] = None
        if var is not None:
            head[var] = INTEGER
        tested = self._block(cond, dict(head))
        self._block(body, dict(tested))
        return tested if var is None else _join(entry, tested)

    # ---- values

    def _atom(self, atom, env: dict):
        if isinstance(atom, ir.Name):
            return env.get(atom.id)
        value = atom.value
        if isinstance(value, (bool, np.bool_)):
            return NUMBER
        if isinstance(value, (int, np.integer)):
            return INTEGER
        if isinstance(value, (float, np.floating)):
            return NUMBER
        return None

    def _value(self, value, env: dict):
        if isinstance(value, (ir.Name, ir.Const)):
            return self._atom(value, env)
        if isinstance(value, ir.Call):
            return call_info(value.fn, [self._atom(a, env) for a in value.args], value.kwargs)
        if isinstance(value, ir.Subscript):
            return self._subscript(self._atom(value.value, env), value.index, env)
        if isinstance(value, ir.Attribute):
            base = self._atom(value.value, env)
            if base is None or base[0] != "arr":
                return None
            if value.attr == "shape":
                return ("shape",) + base[1:]
            if value.attr in ("ndim", "size"):
                return INTEGER
            if value.attr == "T":
                return ("arr", base[1], tuple(reversed(base[2])))
            return None
        if isinstance(value, ir.Build) and value.kind == "tuple":
            return ("tup", tuple(self._atom(a, env) for a in value.elts))
        return None

    def _unpacked(self, info, count: int) -> list:
        if info is not None and info[0] == "tup" and len(info[1]) == count:
            return list(info[1])
        if info is not None and info[0] == "arr":
            return [_element(info, 1)] * count
        return [None] * count

    def _subscript(self, base, index: ir.Index, env: dict):
        items = index.items
        if base is None:
            return None
        if base[0] in ("tup", "shape"):
            if len(items) != 1 or isinstance(items[0], (ir.Slice, ir.NewAxis, ir.EllipsisIndex)):
                return None
            if base[0] == "shape":
                position = self._atom(items[0], env)
                return INTEGER if position == INTEGER else None
            if isinstance(items[0], ir.Const) and type(items[0].value) is int and -len(base[1]) <= items[0].value < len(base[1]):
                return base[1][items[0].value]
            return None
        if base[0] != "arr" or len(items) > len(base[2]):
            return None
        axes = []
        for k, item in enumerate(items):
            axis, trim = base[2][k]
            if isinstance(item, ir.Slice):
                extra = _constant_trim(item)
                if extra is None:
                    return None
                axes.append((axis, trim + extra))
            elif isinstance(item, (ir.Name, ir.Const)) and self._atom(item, env) == INTEGER:
                continue  # an integer index takes the axis away
            else:
                return None  # an array index, a new axis, an ellipsis: not followed
        axes += base[2][len(items):]
        return ("arr", base[1], tuple(axes)) if axes else NUMBER


def _element(info, count: int):
    """Take the first `count` axes away (a, b = x unpacks rows)."""
    axes = info[2][count:]
    return ("arr", info[1], axes) if axes else NUMBER


def constant_trim(lower, upper, step) -> int | None:
    """x[lower:upper:step] with int constants (None where left out; anything else is not a
    constant): x[a:-b] with a >= 0, b > 0 has max(0, n - a - b) elements along its axis,
    the trim a + b. Any other slice: None. (optimize/loops.py reads slices of generated code so too.)"""
    if step is not None and (type(step) is not int or step != 1):
        return None
    if lower is not None and (type(lower) is not int or lower < 0):
        return None
    if upper is not None and (type(upper) is not int or upper >= 0):
        return None
    return (lower or 0) - (upper or 0)


def _constant_trim(item: ir.Slice) -> int | None:
    def value(atom):
        return None if atom is None else atom.value if isinstance(atom, ir.Const) else atom

    return constant_trim(value(item.lower), value(item.upper), value(item.step))
