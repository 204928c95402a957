"""The values of the points-to analysis that checks in-place writes (activity.py).

At each statement the analysis maps every variable to the set of objects it may refer to:
"argument x", "constant c", or "object <pos>" (what the statement at position pos made).
An object marked ELEMENT_MARK is one the variable holds only through integer indexing (`c = m[1]`):
a number where the indices cover every axis, a view where they do not.

A tuple keeps its elements apart. After `carry = (v, acc)` and `v2, acc2 = carry` (how an
s2s.lax loop passes a tuple carry to its body), v2 may refer to what v may and acc2 to what
acc may, where the sets alone would give each of them both. Tuples are immutable, so what a
tuple holds at position k is fixed when it is made. The state keeps this under keys that no
variable can have: "carry[]" for the structure ("tuple 2"; "unknown" where some path bound
carry to anything else) and "carry[0]", "carry[1]" for the elements' objects. The join of two
states (a union, key by key) then keeps a structure only where every path that bound the name
agrees on it.

A write matters only to names whose values are read after it (value_reads): a name read
for its shape or dtype alone is not one.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..ir import nodes as ir

ELEMENT_MARK = "element of "  # an object a name holds only through integer indexing
UNKNOWN = frozenset({"unknown"})
# Keys no variable can have (they start with "["):
# SAME: pairs "a\x00b" of names (or a tuple's element, "p[0]") that may be one list or dict
# display; a name that is a display on every path and is not paired with t is another list than t.
# HELD: the objects some list, dict, helper's result or appended-to list may hold as an item.
SAME = "[same]"
HELD = "[held]"


def pair(a: str, b: str) -> str:
    return "\x00".join(sorted((a, b)))


def partners(state: dict, name: str) -> set[str]:
    """The names (and tuple elements) that may be the same list or dict display as name."""
    out = set()
    for p in state.get(SAME, ()):
        a, b = p.split("\x00")
        if a == name:
            out.add(b)
        elif b == name:
            out.add(a)
    return out


def forget(state: dict, names) -> frozenset:
    """SAME without the pairs of names (and their tuple elements), which are being rebound."""
    def touched(m):
        return any(m == n or m.startswith(n + "[") for n in names)
    return frozenset(p for p in state.get(SAME, ()) if not any(touched(m) for m in p.split("\x00")))


def elements(objects: frozenset) -> frozenset:
    """The objects as integer indexing reads from them."""
    return frozenset(o if o.startswith(ELEMENT_MARK) else ELEMENT_MARK + o for o in objects)


def whole(objects: frozenset) -> frozenset:
    """The objects themselves, with or without the mark."""
    return frozenset(o.removeprefix(ELEMENT_MARK) for o in objects)


def is_variable(key: str) -> bool:
    """A key of the state that is a variable (not a tuple's structure or element)."""
    return "[" not in key


def parts(state: dict, name: str) -> list[frozenset] | None:
    """The objects of each element of name, where it is a tuple on every path here."""
    structure = state.get(f"{name}[]", UNKNOWN)
    if len(structure) != 1 or not next(iter(structure)).startswith("tuple "):
        return None
    n = int(next(iter(structure)).split()[1])
    return [state.get(f"{name}[{k}]", frozenset()) for k in range(n)]


def bind_parts(state: dict, name: str, found: list[frozenset] | None, structures: list | None = None) -> None:
    """Record (in place) that name now holds a tuple with these elements, or (None) anything;
    structures: each element's structure (name[k][]), where it is a list or dict display."""
    for key in [k for k in state if k.startswith(f"{name}[")]:
        del state[key]
    if found is None:
        state[f"{name}[]"] = UNKNOWN
        return
    state[f"{name}[]"] = frozenset({f"tuple {len(found)}"})
    for k, objects in enumerate(found):
        state[f"{name}[{k}]"] = objects
        state[f"{name}[{k}][]"] = structures[k] if structures and structures[k] else UNKNOWN


def part_structures(state: dict, name: str, n: int) -> list:
    """The structures of a tuple's elements (bind_parts)."""
    return [state.get(f"{name}[{k}][]", UNKNOWN) for k in range(n)]


# Where these read an argument, they read only its shape and dtype (its structure, for a tuple),
# which no write into the memory it shares can change. The reverse code s2s writes reads
# `_t3_shape` and `_t3` this way after the primal wrote into the array `_t3 = m[1]` is a row of;
# a second derivative of it must not count those reads as uses of the row's values.
_SHAPE_ONLY = {
    runtime.zeros_shaped: (1,), runtime.zeros_like: (0,), runtime.push_shape: (1,), runtime.shape: (0,),
    runtime.unbroadcast: (1,), runtime.sum_bar: (1,), runtime.mean_bar: (1,), np.shape: (0,),
}
_SHAPE_ATTRIBUTES = ("shape", "ndim", "size", "dtype")


def value_reads(stmt) -> list[str]:
    """The variables whose values (not only shape and dtype) the statement reads: the in-place
    write checks ask which names a write may change that are still used after it."""
    if isinstance(stmt, ir.Assign) and not stmt.inplace:
        value = stmt.value
        if isinstance(value, ir.Attribute) and isinstance(value.value, ir.Name) and value.attr in _SHAPE_ATTRIBUTES:
            return []
        if isinstance(value, ir.Call) and _SHAPE_ONLY.get(value.fn) is not None:
            shape_only = _SHAPE_ONLY[value.fn]
            return [n for k, a in enumerate(value.args)
                    for n in ([] if k in shape_only and isinstance(a, ir.Name) else ir.names_in(a))] + \
                [n for _, a in value.kwargs for n in ir.names_in(a)]
    return ir.stmt_reads(stmt)
