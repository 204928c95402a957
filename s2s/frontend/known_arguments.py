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


def fold_known_branches(function: ir.Function) -> None:
    """The `if`s whose tests the function's constants decide, replaced by their branch (after
    static properties were written in as constants: transforms/static_properties.py)."""
    function.body = _fold(function.body, {}, {})


class _Truth:
    """What is known of a variable on which a branch was taken: its truth, not its value
    (`a and b` lowers to `t = a; if t: t = b`, false on both paths where b is false)."""

    def __init__(self, truth: bool):
        self.truth = truth

    def __bool__(self) -> bool:
        return self.truth


_DECIDABLE = {operator.eq: 2, operator.ne: 2, operator.lt: 2, operator.le: 2, operator.gt: 2, operator.ge: 2,
              operator.not_: 1, operator.truth: 1}


def _fold(body: list, known: dict, none: dict) -> list:
    """body with the `if`s on known values replaced by their branch. known: variable ->
    constant (or _Truth); none: parameter -> whether it is None (both updated as the walk goes on)."""
    out = []
    for stmt in body:
        if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            decided = _none_test(value, none)
            if decided is None:
                decided = _decided(value, known)
            if decided is not None:
                stmt = dataclasses.replace(stmt, value=ir.Const(decided))
                value = stmt.value
            copied = known.get(value.id) if isinstance(value, ir.Name) else None
            _forget(known, none, {target})
            if isinstance(value, ir.Const) and type(value.value) in (bool, int):
                known[target] = value.value
            elif copied is not None:
                known[target] = copied
            out.append(stmt)
        elif isinstance(stmt, ir.If) and isinstance(stmt.test, ir.Name) and stmt.test.id in known:
            taken = bool(known[stmt.test.id]) != stmt.negated
            out.extend(_fold(stmt.body if taken else stmt.orelse, known, none))
        elif isinstance(stmt, ir.If):
            written = _written(stmt.body) | _written(stmt.orelse)
            in_body, in_orelse = dict(known), dict(known)
            if isinstance(stmt.test, ir.Name):  # each branch knows the test's truth
                in_body[stmt.test.id], in_orelse[stmt.test.id] = _Truth(not stmt.negated), _Truth(stmt.negated)
            stmt.body = _fold(stmt.body, in_body, dict(none))
            stmt.orelse = _fold(stmt.orelse, in_orelse, dict(none))
            _forget(known, none, written)
            for n in written:  # known on both paths: a constant, or at least a truth
                if n in in_body and n in in_orelse:
                    a, b = in_body[n], in_orelse[n]
                    if not isinstance(a, _Truth) and not isinstance(b, _Truth) and type(a) is type(b) and a == b:
                        known[n] = a
                    elif bool(a) == bool(b):
                        known[n] = _Truth(bool(a))
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


def _decided(value, known: dict):
    """The result of a comparison or negation of constants and known variables, or None."""
    if not (isinstance(value, ir.Call) and _DECIDABLE.get(value.fn) == len(value.args) and not value.kwargs):
        return None
    operands = []
    for a in value.args:
        if isinstance(a, ir.Const) and type(a.value) in (bool, int):
            operands.append(a.value)
        elif isinstance(a, ir.Name) and a.id in known and (value.fn in (operator.not_, operator.truth)
                                                           or not isinstance(known[a.id], _Truth)):
            operands.append(known[a.id])
        else:
            return None
    return bool(value.fn(*operands))


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
