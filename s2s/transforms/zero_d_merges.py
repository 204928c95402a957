"""Variables that hold a number on one path and a 0-d array on another: one type under Numba.

    r = np.asarray(r)
    if a > 10.0:
        return a / r                        # NumPy: a float64 scalar; Numba: a float
    return np.where(r == 0, a, a / r)       # NumPy: a 0-d array; Numba: a 0-d array too

NumPy runs both paths; Numba types a variable once over all its assignments and cannot unify
float64 with array(float64, 0d) ("Cannot unify ..."). Arithmetic, ufuncs and reductions of 0-d
arrays give numbers in both; functions that make arrays (np.where, np.asarray, a reshape, a user
function returning one) give 0-d arrays. Where one variable is assigned both kinds, each of its
assignments of a value that may be a 0-d array (analysis/zero_d.py) is given through

    _retval = runtime.number_if_0d(_t4)

which is the value itself on the python backend (NumPy's own semantics, untouched) and, under
Numba, a 0-d array's number (an array of more dimensions passes as it is). The values are the
same; only the compiled code's variable is a number on every path.

A variable that is written in place (`y += 1`, `y[...] = v`), which NumPy does to the 0-d array
and so to every name sharing it, is left as it is: a number there would not share the write.
"""

from __future__ import annotations

import builtins
import dataclasses

from .. import runtime
from ..analysis.zero_d import names_that_may_be_0d_arrays
from ..frontend.source import is_user_function
from ..ir import nodes as ir
from ..rules import facts
from .rule_helpers import all_names

_NUMBERS_ONLY = (builtins.float, builtins.int, builtins.bool, builtins.len, builtins.abs, builtins.round)


def numbers_where_paths_meet(function: ir.Function, callees: dict) -> None:
    """callees: {id(python function): its ir.Function}. Changes function.body in place."""
    bindings: dict[str, list[ir.Assign]] = {}
    written_in_place: set[str] = set()
    for stmt in ir.walk(function.body):
        if isinstance(stmt, ir.Assign) and stmt.inplace:
            written_in_place.update(stmt.targets)
        elif isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 and not stmt.unpack:
            bindings.setdefault(stmt.targets[0], []).append(stmt)
        elif isinstance(stmt, ir.SetItem):
            written_in_place.add(stmt.base)
        elif isinstance(stmt, ir.ExprStmt) and stmt.mutates:
            written_in_place.add(stmt.mutates)
    numbers = _may_be_numbers(bindings)
    candidates = {n for n, stmts in bindings.items() if len(stmts) > 1 and n in numbers and n not in written_in_place
                  and not all(_gives_numbers(s.value) for s in stmts)}
    if not candidates:
        return  # (the analysis of 0-d arrays only where a variable may meet one)
    zero_d = names_that_may_be_0d_arrays(function, callees)
    meeting = {n for n in candidates if any(_may_be_0d(s.value, zero_d) for s in bindings[n])}
    if not meeting:
        return
    names = ir.Names(all_names(function))
    function.body = _rewrite(function.body, meeting, zero_d, names)


def _may_be_0d(value, zero_d: frozenset) -> bool:
    if isinstance(value, ir.Name):
        return value.id in zero_d
    if isinstance(value, ir.Call) and value.fn is runtime.number_if_0d:
        return False
    if isinstance(value, (ir.Const, ir.Build, ir.Attribute)):
        return False
    if isinstance(value, ir.Subscript):
        return any(isinstance(item, ir.EllipsisIndex) for item in value.index.items)
    if isinstance(value, ir.Call) and is_user_function(value.fn):
        return True
    return not _gives_numbers(value)


def _gives_numbers(value) -> bool:
    """A number where its operands are numbers or 0-d arrays (an array of the operands' shape
    otherwise): a constant, arithmetic, a ufunc, a reduction without keepdims, x[i]."""
    if isinstance(value, ir.Const):
        return type(value.value) in (int, float, bool)
    if isinstance(value, ir.Subscript):  # x[i] (a slice, a new axis or an ellipsis keeps an array)
        return all(isinstance(item, (ir.Name, ir.Const)) for item in value.index.items)
    if isinstance(value, ir.Call) and not is_user_function(value.fn):
        if value.fn is runtime.number_if_0d or value.fn in _NUMBERS_ONLY:
            return True
        known = facts(value.fn)
        if known.elementwise or known.integer == "always":
            return True
        return known.reduction and not any(k == "keepdims" for k, _ in value.kwargs)
    return False


def _may_be_numbers(bindings: dict) -> set[str]:
    """The names one of whose assignments may give a number (through names, to a fixpoint)."""
    numbers = {n for n, stmts in bindings.items() if any(_gives_numbers(s.value) for s in stmts)}
    while True:
        grown = {n for n, stmts in bindings.items() if n not in numbers and any(
            isinstance(s.value, ir.Name) and s.value.id in numbers for s in stmts)}
        if not grown:
            return numbers
        numbers |= grown


def _rewrite(body: list, meeting: set, zero_d: frozenset, names: ir.Names) -> list:
    out = []
    for stmt in body:
        if isinstance(stmt, ir.Assign) and not stmt.inplace and not stmt.unpack and len(stmt.targets) == 1 \
                and stmt.targets[0] in meeting and _may_be_0d(stmt.value, zero_d):
            value = stmt.value
            if not isinstance(value, ir.Name):
                temp = names.temp()
                out.append(ir.Assign((temp,), value, stmt.origin))
                value = ir.Name(temp)
            out.append(dataclasses.replace(stmt, value=ir.Call(runtime.number_if_0d, (value,))))
            continue
        for block in ir.child_blocks(stmt):
            block[:] = _rewrite(block, meeting, zero_d, names)
        out.append(stmt)
    return out
