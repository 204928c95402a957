"""Arguments that choose the code rather than carry numbers, settled where the code is generated.

JAX runs the Python of a function while it traces it: `if mean_fn is None:`,
`np.asarray(x, dtype=dtype)`, `np.einsum(subscripts, a, b)` and `if when == "begin":` are
decided by the values passed, and the trace never sees the branch not taken. s2s generates
code for a call: an argument that is a string, None, a type or a function (a *static* value)
is written into the code generated for that call, as a constant or as the function called,
and an `if` whose test such values decide keeps only the branch taken.

The doors give the pipeline, for a call with static values, a copy of the user's function that
carries them (static_values.specialised, which imports no libcst); the frontend reads them
(static_values.static_parameters) and decides the tests on them here (decided), and the try
statements whose body they compute (evaluate, for Lowering.static_try).
"""

from __future__ import annotations

import operator
import types
from typing import Any

import libcst as cst
import numpy as np

from .source import MISSING

_COMPARE = {cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.Is: operator.is_, cst.IsNot: operator.is_not,
            cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b, cst.LessThan: operator.lt,
            cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge}


class NotStatic(Exception):
    """An expression whose value the call's static values and the module's constants do not give."""


def decided(node: cst.BaseExpression, static: dict, lookup, kinds: dict | None = None) -> Any:
    """The truth of a test that static parameters decide (True or False), or MISSING: comparisons
    (==, !=, is, in, ...) of static parameters with literals, constants of the module and each
    other, isinstance and callable of them, and not/and/or of such tests. lookup(name) gives a
    global's value (MISSING where it has none). A test that reads no static parameter is left to
    run as it is written. kinds: {parameter: its argument's type}, for isinstance of it."""
    kinds = kinds or {}
    if not reads_static(node, {**static, **kinds}):
        return MISSING
    try:
        return bool(evaluate(node, static, lookup, kinds))
    except Exception:  # noqa: BLE001 - NotStatic, or a test Python would raise on: lowered as written
        return MISSING


def reads_static(node: cst.CSTNode, static: dict) -> bool:
    if isinstance(node, cst.Name):
        return node.value in static
    return any(reads_static(child, static) for child in node.children)


def evaluate(node: cst.BaseExpression, static: dict, lookup, kinds: dict | None = None) -> Any:
    """The value of an expression of static parameters and constants, as Python computes it
    (raising what Python would raise: a KeyError of a dict of the module); NotStatic where it
    reads anything else (kinds: as decided)."""
    kinds = kinds or {}
    if isinstance(node, cst.Name):
        if node.value in static:
            return static[node.value]
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        found = lookup(node.value)
        if found is MISSING or isinstance(found, (types.ModuleType, np.ndarray)) or callable(found) \
                and not isinstance(found, type):
            raise NotStatic(node.value)
        return found
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
        return node.evaluated_value
    if isinstance(node, cst.Attribute):  # np.float64, np.ndarray: a module's attribute
        root = node.value
        base = lookup(root.value) if isinstance(root, cst.Name) and root.value not in static else MISSING
        if isinstance(base, types.ModuleType) and hasattr(base, node.attr.value):
            return getattr(base, node.attr.value)
        raise NotStatic(node.attr.value)
    if isinstance(node, (cst.Tuple, cst.List)):
        if not all(isinstance(e, cst.Element) for e in node.elements):
            raise NotStatic("starred")
        return tuple(evaluate(e.value, static, lookup, kinds) for e in node.elements)
    if isinstance(node, cst.IfExp):
        taken = evaluate(node.test, static, lookup, kinds)
        return evaluate(node.body if taken else node.orelse, static, lookup, kinds)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return not evaluate(node.expression, static, lookup, kinds)
    if isinstance(node, cst.BooleanOperation):
        left = evaluate(node.left, static, lookup, kinds)
        if isinstance(node.operator, cst.And) and not left or isinstance(node.operator, cst.Or) and left:
            return left  # (the right side is never run: `f is None or f(x) > 0`)
        return evaluate(node.right, static, lookup, kinds)
    if isinstance(node, cst.Comparison):
        left = evaluate(node.left, static, lookup, kinds)
        for target in node.comparisons:
            right = evaluate(target.comparator, static, lookup, kinds)
            compare = _COMPARE.get(type(target.operator))
            if compare is None:
                raise NotStatic("comparison")
            if not compare(left, right):
                return False
            left = right
        return True
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        # a dict, tuple or string of constants indexed by a constant: _when_to_num[when]
        base = evaluate(node.value, static, lookup, kinds)
        if not isinstance(base, (dict, tuple, str)):
            raise NotStatic("subscript")
        return base[evaluate(node.slice[0].slice.value, static, lookup, kinds)]
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value not in static \
            and not any(a.keyword or a.star for a in node.args):
        fn = lookup(node.func.value)
        first = node.args[0].value if node.args else None
        if fn is isinstance and len(node.args) == 2 and isinstance(first, cst.Name) and first.value in kinds \
                and first.value not in static:
            tested = evaluate(node.args[1].value, static, lookup, kinds)
            if isinstance(tested, (type, tuple)):
                return issubclass(kinds[first.value], tested)
        args = [evaluate(a.value, static, lookup, kinds) for a in node.args]
        if fn is isinstance and len(args) == 2 and isinstance(args[1], (type, tuple)):
            return isinstance(args[0], args[1])
        if fn is callable and len(args) == 1:
            return callable(args[0])
    raise NotStatic(type(node).__name__)
