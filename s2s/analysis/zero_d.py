"""Which names may hold a 0-d array rather than a number (for vectorised code's alias checks).

`s += v` updates a 0-d array in place, so a name that shares it (`t = s`) sees the update, while
for a number it only rebinds s. Generated code runs `s = s + v` and checks at run time that no
live name shares s's memory where s is an array (runtime.require_unshared). Vectorised code
(transforms/vectorize.py) cannot tell at run time: a per-example number and a per-example 0-d
array both become a 1-d batch. This says statically which names may be 0-d arrays, so that the
check treats their 1-d batches as arrays (and refuses a shared update) and the others' as numbers.

A 0-d array comes only from a function that makes arrays (np.array, np.zeros(()), a copy, a
reshape, np.where: anything but elementwise arithmetic, a ufunc or a reduction, which give NumPy
scalars), from `x[...]`, from a list, tuple or dict that holds one, from a user function whose
result may be or hold one (found by the same analysis of its body; a callee not at hand, or a
recursive one, may), or from a name bound to one of these. A vmapped argument's examples are
numbers where they are 0-d (`x[i]` of a 1-d x).
"""

from __future__ import annotations

import builtins

from ..frontend.source import is_user_function
from ..ir import nodes as ir
from ..rules import facts

_NUMBERS_ONLY = (builtins.float, builtins.int, builtins.bool, builtins.len, builtins.abs, builtins.round)


def names_that_may_be_0d_arrays(fn: ir.Function, callees: dict | None = None) -> frozenset[str]:
    """The names of fn that may hold a 0-d array (flow-insensitive: on any path, at any time).
    callees: {id(python function): its ir.Function}, the user functions fn may call."""
    return frozenset(_analyse(fn, callees or {}, {}, set(), set(), set())[0])


def _analyse(fn: ir.Function, callees: dict, done: dict, active: set, array: set, holder: set) -> tuple[set, set]:
    """(names that may be 0-d arrays, names that may hold one at any depth), grown from the
    parameters given in array and holder (those whose arguments may be or hold one); active:
    the functions analysed further up the call chain (a recursive call may return anything);
    done: the results of calls analysed before, by callee and what its parameters may be."""
    active = active | {id(fn)}

    def returned(call: ir.Call) -> tuple[bool, bool]:
        callee = callees.get(id(call.fn))
        if callee is None or id(callee) in active:
            return True, True
        passed = list(zip(callee.params, call.args)) + [(k, v) for k, v in call.kwargs if k in callee.params]
        callee_array = {p for p, a in passed if isinstance(a, ir.Name) and a.id in array}
        callee_holder = {p for p, a in passed if isinstance(a, ir.Name) and a.id in holder}
        key = (id(callee), frozenset(callee_array), frozenset(callee_holder))
        if key not in done:
            grown_array, grown_holder = _analyse(callee, callees, done, active, callee_array, callee_holder)
            result = callee.result
            named = isinstance(result, ir.Name)
            filled = grown_holder & set(callee.params)  # a list or dict argument the callee writes one into
            done[key] = (named and result.id in grown_array, named and result.id in grown_holder, filled)
        is_array, holds, filled = done[key]
        holder.update(a.id for p, a in passed if p in filled and isinstance(a, ir.Name))
        return is_array, holds

    array, holder = set(array), set(holder)

    def may(atom) -> bool:
        return isinstance(atom, ir.Name) and (atom.id in array or atom.id in holder)

    for _ in range(100):  # both sets only grow: a fixpoint in a few rounds
        before = (len(array), len(holder))
        for stmt in ir.walk(fn.body):
            if isinstance(stmt, ir.Assign) and not stmt.inplace:  # (`x op= v` keeps what x is)
                is_array, holds = _made(stmt.value, array, holder, may, returned)
                for target in stmt.targets:
                    if is_array or (stmt.unpack and holds):  # a, b = t: each may be what t holds
                        array.add(target)
                    if holds:
                        holder.add(target)
            elif isinstance(stmt, ir.SetItem) and may(stmt.value):  # t[k] = a (a list or dict slot)
                holder.add(stmt.base)
            elif isinstance(stmt, ir.ExprStmt):  # a helper called for its effect may fill a list
                _made(stmt.value, array, holder, may, returned)
            elif isinstance(stmt, ir.Push) and may(stmt.value):
                holder.add(stmt.tape)
        if (len(array), len(holder)) == before:
            break
    return array, holder


def _made(value, array: set, holder: set, may, returned) -> tuple[bool, bool]:
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
            return returned(value)
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
