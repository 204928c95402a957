"""Which names may hold a 0-d array rather than a number (for vectorised code's alias checks).

`s += v` updates a 0-d array in place, so a name that shares it (`t = s`) sees the update, while
for a number it only rebinds s. Generated code runs `s = s + v` and checks at run time that no
live name shares s's memory where s is an array (runtime.require_unshared). Vectorised code
(transforms/vectorize.py) cannot tell at run time: a per-example number and a per-example 0-d
array both become a 1-d batch. This says statically which names may be 0-d arrays, so that the
check treats their 1-d batches as arrays (and refuses a shared update) and the others' as numbers.

A 0-d array comes only from a function that makes arrays (np.array, np.zeros(()), a copy, a
reshape, np.where, a user function: anything but elementwise arithmetic, a ufunc or a reduction,
which give NumPy scalars), from `x[...]`, from a list, tuple or dict that holds one, or from a
name bound to one of these. A vmapped argument's examples are numbers where they are 0-d
(`x[i]` of a 1-d x).
"""

from __future__ import annotations

import builtins

from ..frontend.source import is_user_function
from ..ir import nodes as ir
from ..rules import facts

_NUMBERS_ONLY = (builtins.float, builtins.int, builtins.bool, builtins.len, builtins.abs, builtins.round)


def names_that_may_be_0d_arrays(fn: ir.Function) -> frozenset[str]:
    """The names of fn that may hold a 0-d array (flow-insensitive: on any path, at any time)."""
    array: set[str] = set()  # may be a 0-d array itself
    holder: set[str] = set()  # may be a tuple, list or dict that holds one (at any depth)

    def may(atom) -> bool:
        return isinstance(atom, ir.Name) and (atom.id in array or atom.id in holder)

    for _ in range(100):  # both sets only grow: a fixpoint in a few rounds
        before = (len(array), len(holder))
        for stmt in ir.walk(fn.body):
            if isinstance(stmt, ir.Assign) and not stmt.inplace:  # (`x op= v` keeps what x is)
                is_array, holds = _made(stmt.value, array, holder, may)
                for target in stmt.targets:
                    if is_array or (stmt.unpack and holds):  # a, b = t: each may be what t holds
                        array.add(target)
                    if holds:
                        holder.add(target)
            elif isinstance(stmt, ir.SetItem) and may(stmt.value):  # t[k] = a (a list or dict slot)
                holder.add(stmt.base)
            elif isinstance(stmt, ir.Push) and may(stmt.value):
                holder.add(stmt.tape)
        if (len(array), len(holder)) == before:
            break
    return frozenset(array)


def _made(value, array: set, holder: set, may) -> tuple[bool, bool]:
    """(value may be a 0-d array, value may hold one)."""
    if isinstance(value, ir.Const):
        return False, False
    if isinstance(value, ir.Name):
        return value.id in array, value.id in holder
    if isinstance(value, ir.Build):
        return False, any(may(e) for e in value.elts)
    if isinstance(value, ir.Subscript):
        base = value.value
        ellipsis = any(isinstance(item, ir.EllipsisIndex) for item in value.index.items)
        in_holder = isinstance(base, ir.Name) and base.id in holder
        return ellipsis or in_holder, in_holder
    if isinstance(value, ir.Attribute):  # a namedtuple's field, or .shape/.ndim/.size/.dtype
        in_holder = isinstance(value.value, ir.Name) and value.value.id in holder
        return in_holder, in_holder
    if isinstance(value, ir.Call):
        if is_user_function(value.fn):
            return True, True
        known = facts(value.fn)
        holds = any(may(a) for a in value.args) and not (known.elementwise or known.reduction)
        if known.elementwise or value.fn in _NUMBERS_ONLY or known.integer == "always":
            return False, False
        if known.reduction and not any(k == "keepdims" for k, _ in value.kwargs):
            return False, False
        if known.number_stays:  # a copy: of a number a number
            return bool(value.args) and may(value.args[0]), holds
        return True, holds
    return True, True  # a tape's pop: whatever was pushed
