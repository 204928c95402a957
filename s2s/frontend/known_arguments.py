"""Tests of a parameter against None, decided by what the call passed (s2s.jit of a gradient).

s2s.jit generates a gradient for each kind of call (shapes.argument_facts), as JAX traces per
signature, and JAX treats None as an empty pytree. So `if w is None:` on a parameter w has
one answer for the code generated for a call: the branch not taken is dropped before the
transform, as Numba drops it from a compiled primal. (Kept, it would be compiled too: the
reverse sweep reads the test through a variable and a tape of the function's early returns,
where Numba cannot prune `w * x` of a None w, which it cannot type.)

The pass walks the entry function's statements in order, knowing of each parameter whether
it is None until something assigns it, and of each variable the constant it was last given
(the test's result, and `_returned`, the flag of an early return that the frontend writes):
an `if` on a known value becomes the branch it takes.
"""

from __future__ import annotations

import dataclasses
import operator

from ..ir import nodes as ir


def drop_branches_on_none(function: ir.Function, facts: dict) -> None:
    """facts: parameter -> its argument's fact (shapes.argument_fact: "none" for None, None
    where nothing is known). Changes function.body in place."""
    none = {p: fact == "none" for p, fact in facts.items() if fact is not None}
    if not any(none.values()):
        return  # (where no argument is None the code stays as it was: Numba compiles both branches)
    function.body = _fold(function.body, {}, none)


def _fold(body: list, known: dict, none: dict) -> list:
    """body with the `if`s on known values replaced by their branch. known: variable ->
    constant; none: parameter -> whether it is None (both updated as the walk goes on)."""
    out = []
    for stmt in body:
        if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            decided = _none_test(value, none)
            if decided is not None:
                stmt = dataclasses.replace(stmt, value=ir.Const(decided))
                value = stmt.value
            _forget(known, none, {target})
            if isinstance(value, ir.Const) and isinstance(value.value, bool):
                known[target] = value.value
            out.append(stmt)
        elif isinstance(stmt, ir.If) and isinstance(stmt.test, ir.Name) and stmt.test.id in known:
            taken = known[stmt.test.id] != stmt.negated
            out.extend(_fold(stmt.body if taken else stmt.orelse, known, none))
        elif isinstance(stmt, ir.If):
            written = _written(stmt.body) | _written(stmt.orelse)
            stmt.body = _fold(stmt.body, dict(known), dict(none))
            stmt.orelse = _fold(stmt.orelse, dict(known), dict(none))
            _forget(known, none, written)
            out.append(stmt)
        elif isinstance(stmt, (ir.For, ir.While)):
            # What the loop writes changes from one iteration to the next: unknown inside and after.
            written = _written([stmt])
            _forget(known, none, written)
            if isinstance(stmt, ir.While):
                stmt.cond = _fold(stmt.cond, dict(known), dict(none))
            stmt.body = _fold(stmt.body, dict(known), dict(none))
            out.append(stmt)
        else:
            _forget(known, none, _written([stmt]))
            out.append(stmt)
    return out


def _none_test(value, none: dict) -> bool | None:
    """The result of `p is None` / `p is not None` for a parameter p of known None-ness."""
    if not (isinstance(value, ir.Call) and value.fn in (operator.is_, operator.is_not) and len(value.args) == 2):
        return None
    a, b = value.args
    if isinstance(a, ir.Const) and a.value is None:
        a, b = b, a
    if not (isinstance(a, ir.Name) and a.id in none and isinstance(b, ir.Const) and b.value is None):
        return None
    return none[a.id] if value.fn is operator.is_ else not none[a.id]


def _forget(known: dict, none: dict, names: set) -> None:
    for n in names:
        known.pop(n, None)
        none.pop(n, None)


def _written(body: list) -> set:
    """Every name a statement of body (or of its nested blocks) binds or changes in place."""
    names = set()
    for stmt in body:
        if isinstance(stmt, ir.Assign):
            names.update(stmt.targets)
        elif isinstance(stmt, ir.SetItem):
            names.add(stmt.base)
        elif isinstance(stmt, ir.ExprStmt) and stmt.mutates:
            names.add(stmt.mutates)
        elif isinstance(stmt, ir.Push):
            names.add(stmt.tape)
        elif isinstance(stmt, ir.If):
            names |= _written(stmt.body) | _written(stmt.orelse)
        elif isinstance(stmt, ir.For):
            names |= {stmt.var} | _written(stmt.body)
        elif isinstance(stmt, ir.While):
            names |= _written(stmt.cond) | _written(stmt.body)
    return names
