"""Lowering of expressions: each becomes a chain of single-operation assignments to
temporaries, method calls and attributes become the NumPy functions they stand for, and calls
are resolved to the real objects they name. The statement side is lower.py."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import numbers
import operator
import types
import weakref
from typing import Any

import libcst as cst
import numpy as np

from .. import runtime
from ..errors import S2SError
from ..ir import nodes as ir
from .. import lax
from .lax_forms import FORMS as LAX_FORMS
from ..rules import Rule, facts, load_facts, lookup, methods, rule_of_call
from ..rules.custom import CustomRule, checkpoint
from ..scipy_forms import stats as stats_forms
from ..runtime import constants as captured
from .signatures import own_signature
from .argument_writes import call_site
from .comprehensions import GENERATOR_HINT
from .einsum import HINT as EINSUM_HINT
from .einsum import EinsumRefused, lower_einsum, sublist_subscripts
from .nested import NESTED_CALLS, NESTED_OBJECTS, NESTED_TRANSFORMS, undifferentiated
from .nested_calls import JvpCallLowering
from .writing_calls import WritingCalls
from .source import MISSING, is_user_function, named_lambda, plain_display_items, scipy_name, walk_nodes, walk_own
from .source import dotted as _dotted
from .source import is_constant as _is_constant
from . import static_arguments, static_values

BINARY_OPS = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
    cst.MatrixMultiply: operator.matmul,
    cst.BitAnd: operator.and_,  # of masks their logical and, of ints bitwise; piecewise constant
    cst.BitOr: operator.or_,
    cst.BitXor: operator.xor,
}
COMPARE_OPS = {
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.Is: operator.is_,
    cst.IsNot: operator.is_not,
}
# The builtin types as values (dtype=float): the NumPy types they stand for in NumPy's calls
BUILTIN_TYPES = {builtins.float: np.float64, builtins.int: np.int64, builtins.bool: np.bool_,
                 builtins.complex: np.complex128}
SCALAR_TYPES = (numbers.Number, np.number, np.bool_)


def _attribute_chain(obj: Any, node: cst.Attribute) -> Any:
    """obj.a.b for the attribute node root.a.b (a class's or an object's constant), or MISSING."""
    names = []
    while isinstance(node, cst.Attribute):
        names.insert(0, node.attr.value)
        node = node.value
    for attr in names:
        if obj is MISSING or attr.startswith("__"):
            return MISSING
        obj = getattr(obj, attr, MISSING)
    return obj


def _captured(value: Any) -> Any:
    """The constant generated code reads for a closed-over or global value that holds arrays, or
    a list of numbers: read-only copies of the arrays (lists become tuples); None if it holds
    anything else."""
    if captured.is_capturable(value):
        return captured.frozen(value)
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields") and value \
            and (isinstance(value, list) or any(isinstance(v, (np.ndarray, tuple, list)) for v in value)):
        items = [v if isinstance(v, SCALAR_TYPES) and not isinstance(v, str) else _captured(v) for v in value]
        return None if any(v is None for v in items) else tuple(items)
    return None


def NESTED_TRANSFORMS_BY_NAME() -> list:
    """The public transforms (s2s.grad, s2s.jit, ...), found by name: the frontend does not
    import the doors that define them."""
    import sys

    package = sys.modules.get("s2s")
    names = ("grad", "value_and_grad", "jit", "vmap", "jacfwd", "jacrev", "hessian", "vjp", "pmap")
    return [getattr(package, n) for n in names if package is not None and hasattr(package, n)]


# The methods of a NumPy random generator that set or read its state rather than draw.
_GENERATOR_STATE = {"seed", "set_state", "get_state", "spawn", "jumped", "bit_generator"}

# Packages whose numbers (np.pi, math.e) are not the user's to change.
_FIXED_PACKAGES = {"numpy", "math", "cmath", "scipy", "s2s", "builtins"}


def _may_change(root: Any) -> bool:
    """Is root.attr (a class's number, a user module's) a value the user may set anew?"""
    if isinstance(root, types.ModuleType):
        return root.__name__.partition(".")[0] not in _FIXED_PACKAGES
    return root is not MISSING




class ExpressionLowering(JvpCallLowering, WritingCalls):
    """The expression half of the Normalizer (lower.py), which gives it emit, assign, error,
    resolver, callees and references."""

    def positional(self, arg: cst.Arg) -> cst.BaseExpression:
        if arg.keyword is not None or arg.star:
            raise self.error(arg, "keyword or starred arguments are not supported here")
        return arg.value

    def expr(self, node: cst.BaseExpression) -> ir.Atom:
        if isinstance(node, cst.Name):
            return self.name(node)
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
            return ir.Const(node.evaluated_value)
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            return ir.Const(node.evaluated_value)
        if isinstance(node, cst.UnaryOperation):
            return self.unary(node)
        if isinstance(node, cst.BinaryOperation):
            op = BINARY_OPS.get(type(node.operator))
            if op is None:
                raise self.error(node, f"the operator {type(node.operator).__name__} is not supported")
            left = self.expr(node.left)
            right = self.expr(node.right)
            return self.assign(ir.Call(op, (left, right)))
        if isinstance(node, cst.BooleanOperation):
            return self.boolean(node)
        if isinstance(node, cst.Comparison):
            return self.comparison(node)
        if isinstance(node, cst.IfExp):
            return self.if_expression(node)
        if isinstance(node, cst.Call):
            return self.call(node)
        if isinstance(node, cst.Attribute):
            return self.attribute(node)
        if isinstance(node, cst.Subscript):
            if isinstance(node.value, cst.Attribute) and self._is_module_path(node.value.value):
                maker = self.resolver.resolve(node.value)
                if maker is np.r_ or maker is np.c_:
                    return self.concatenator(node, maker)
            entry = self.module_dict_entry(node)
            if entry is not None:
                return entry
            value = self.expr(node.value)
            return self.assign(ir.Subscript(value, self.index(node)))
        if isinstance(node, cst.Tuple):
            return self.assign(ir.Build("tuple", self.elements(node.elements)))
        if isinstance(node, cst.List):
            return self.assign(ir.Build("list", self.elements(node.elements)))
        if isinstance(node, cst.Dict):
            return self.dictionary(node)
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            return self.comprehension(node)  # (comprehensions.py)
        if isinstance(node, cst.Lambda):
            raise self.error(node, "lambda expressions are supported only as the functions passed to "
                             "s2s.lax forms (cond, switch, fori_loop, while_loop, scan), to s2s.jvp and to s2s.grad "
                             "(hessian, jacfwd, jacrev), or assigned once to a name (f = lambda t: ...)",
                             "define a function with def (here or at module level)")
        if isinstance(node, cst.FormattedString):
            raise self.error(node, "f-strings are not supported", "pass the values to print separately")
        if isinstance(node, (cst.Yield, cst.Await)):
            raise self.error(node, f"{type(node).__name__.lower()} is not supported",
                             "s2s differentiates plain functions, not generators or coroutines")
        if isinstance(node, cst.NamedExpr):  # (n := v): v bound to n where it is evaluated, and its value
            self.assign_to(node.target, self.expr(node.value), node)
            return ir.Name(node.target.value)
        if isinstance(node, cst.Set):
            raise self.error(node, "sets are not supported")
        raise self.error(node, f"{type(node).__name__} expressions are not supported")

    def name(self, node: cst.Name) -> ir.Atom:
        name = node.value
        if name in self.static:
            return self.static_atom(node, name)
        if name in self.locals:
            return ir.Name(name)
        if name in ("True", "False", "None"):
            return ir.Const({"True": True, "False": False, "None": None}[name])
        if name == getattr(self, "star_kwarg", None):
            raise self.error(node, f"**{name} is supported only passed on whole to a call, f(..., **{name}), "
                             "where it is empty (transformed functions take no keywords beyond their parameters)",
                             "name the keyword parameters the function takes (def f(x, *, scale=1.0))")
        if name in self.def_names:
            raise self.error(node, f"the nested function {name} can be called, or passed to s2s.lax forms (cond, "
                             "switch, fori_loop, while_loop, scan), but not used as a value",
                             "call it where its value is needed, or define it at module level")
        value = self.resolver.lookup(name)
        if value is MISSING:
            raise self.error(node, f"the name {name!r} is not defined")
        if isinstance(value, str):  # a string of the module or the closure: written in, as a JAX trace reads it
            if name not in self.resolver.closure:
                self.inlined[name] = value  # (the cache checks it)
            return ir.Const(value)
        if isinstance(value, SCALAR_TYPES) or (isinstance(value, tuple) and _is_constant(value)):
            self.constants[name] = value
            return ir.Name(name)
        if isinstance(value, type) and value in BUILTIN_TYPES:
            # dtype=float (np.zeros(3, dtype=float)): the NumPy type it names, which Numba takes
            return ir.Const(BUILTIN_TYPES[value])
        frozen = _captured(value)
        if frozen is not None:
            # An array (or a tuple or list of them) of the closure or the module: a constant
            # captured now, as JAX captures it when it traces (runtime/captured.py).
            self.constants[name] = frozen
            return ir.Name(name)
        where = "closed-over variable" if name in self.resolver.closure else "global"
        if captured.is_generator(value):
            raise self.error(node, f"the {where} {name!r} ({type(value).__name__}) can be drawn from "
                             f"({name}.normal(size=n), {name}.uniform(size=n), ...) but not used as a value",
                             "draw where the samples are needed, or draw outside and pass the samples in")
        if isinstance(value, dict):
            raise self.error(node, f"the {where} {name!r} (dict) is read here as a whole; s2s reads a dict of "
                             f"the module or the closure by constant keys ({name}[\"w\"], captured as a constant)",
                             "index it with a constant key where it is read, or pass it as an argument")
        raise self.error(node, f"the {where} {name!r} ({type(value).__name__}) cannot be used as a value",
                         "pass it as an argument (s2s captures numbers, numeric arrays and tuples or lists "
                         "of them)")

    def static_atom(self, node: cst.Name, name: str) -> ir.Atom:
        """A parameter holding a static value of the call (static_arguments.py), as a constant."""
        value = self.static[name]
        if value is None or isinstance(value, (str, bool, int, float)):
            return ir.Const(value)
        if isinstance(value, tuple) and _is_constant(value):
            # (static_argnums: the parameter holds it in every call of this code; einsum's sublists
            # and the static decisions read the value)
            return ir.Name(name)
        if isinstance(value, type):
            return ir.Const(BUILTIN_TYPES.get(value, value))
        raise self.error(node, f"the parameter {name} holds the function {static_values.describe(value)} in this "
                         f"call: s2s calls it ({name}(...)) but cannot use it as a value here",
                         f"call {name} where its value is needed")

    def static_decision(self, test: cst.BaseExpression) -> Any:
        """True or False where the call's static values decide the test (`if mean_fn is None:`,
        `if when == "begin":`), else MISSING."""
        return static_arguments.decided(test, self.static, self.static_lookup, self.kinds)

    def static_lookup(self, name: str) -> Any:
        """What a name the static evaluation reads refers to: MISSING for a variable of the
        function (a name holding a static value is none: _Locals), else the module's, closure's
        or builtins' value (or the static value the resolver holds)."""
        return MISSING if name in self.locals else self.resolver.lookup(name)

    def module_dict_entry(self, node: cst.Subscript) -> ir.Atom | None:
        """CONSTS["w"] (CONSTS["layer"]["w"]) of a dict of the module or the closure, read by
        constant keys: the entry, captured as JAX captures a global when it traces: a number
        is written in, an array (or a tuple or list of them) becomes a constant of the module
        named after the entry (CONSTS_w). None where node is no such read."""
        keys, root = [], node
        while isinstance(root, cst.Subscript):
            if len(root.slice) != 1 or not isinstance(root.slice[0].slice, cst.Index):
                return None
            keys.insert(0, root.slice[0].slice.value)
            root = root.value
        if not isinstance(root, cst.Name) or root.value in self.locals or root.value in self.def_names:
            return None
        value = self.resolver.lookup(root.value)
        if not isinstance(value, dict):
            return None
        text, part = root.value, root.value
        while keys and isinstance(value, dict):
            key_node = keys.pop(0)
            key = self.constant_key(key_node)
            if key is MISSING:
                raise self.error(key_node, f"{text} is a dict of the module or the closure, indexed here by a value "
                                 "known only when the function runs", "index it with a constant key, or pass the "
                                 "dict as an argument")
            if key not in value:
                raise self.error(key_node, f"{text} has no key {key!r} (its keys: {list(value)})")
            value = value[key]
            text += f"[{key!r}]"
            part += f"_{key}"
        if root.value not in self.resolver.closure:
            self.inlined[root.value] = self.resolver.lookup(root.value)  # (the cache checks the whole dict)
        if isinstance(value, SCALAR_TYPES) and not isinstance(value, str):
            atom: ir.Atom = ir.Const(value)
        else:
            frozen = _captured(value)
            if frozen is None:
                raise self.error(node, f"{text} ({type(value).__name__}) cannot be used as a value",
                                 "s2s captures numbers, numeric arrays and tuples or lists of them from a dict "
                                 "of the module; pass this one as an argument")
            cname = self.names.fresh(part if part.isidentifier() else root.value)
            self.constants[cname] = frozen
            self.display[cname] = text
            atom = ir.Name(cname)
        for key_node in keys:  # what is indexed after the dict's entries: an ordinary subscript
            atom = self.assign(ir.Subscript(atom, ir.Index((self.expr(key_node),))))
        return atom

    def constant_key(self, node: cst.BaseExpression) -> Any:
        """The value of a dict key written as a literal or a global constant, or MISSING."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer)):
            return node.evaluated_value
        if isinstance(node, cst.Name) and node.value not in self.locals:
            value = self.resolver.lookup(node.value)
            return value if isinstance(value, (str, int)) else MISSING
        return MISSING

    def unary(self, node: cst.UnaryOperation) -> ir.Atom:
        operand = self.expr(node.expression)
        if isinstance(node.operator, cst.Plus):  # (+y of an array is a new array, as NumPy makes it)
            return operand if isinstance(operand, ir.Const) else self.assign(ir.Call(runtime.copy, (operand,)))
        if isinstance(node.operator, cst.Minus):
            if isinstance(operand, ir.Const) and isinstance(operand.value, numbers.Number):
                return ir.Const(-operand.value)
            return self.assign(ir.Call(operator.neg, (operand,)))
        if isinstance(node.operator, cst.Not):
            return self.assign(ir.Call(operator.not_, (operand,)))
        # ~: NumPy's logical not of booleans and bitwise not of ints, piecewise constant either way
        return self.assign(ir.Call(operator.invert, (operand,)))

    def boolean(self, node: cst.BooleanOperation) -> ir.Atom:
        # Short-circuit: the right side runs only when the left does not decide.
        result = self.names.temp()
        left = self.expr(node.left)
        self.emit(ir.Assign((result,), left, self.origin))
        right_block = self.sub_block(lambda: self.emit(
            ir.Assign((result,), self.expr(node.right), self.origin)))
        if isinstance(node.operator, cst.And):
            self.emit(ir.If(ir.Name(result), right_block, [], self.origin))
        else:
            self.emit(ir.If(ir.Name(result), right_block, [], self.origin, negated=True))
        return ir.Name(result)

    def comparison(self, node: cst.Comparison) -> ir.Atom:
        if any(isinstance(t.operator, (cst.In, cst.NotIn)) for t in node.comparisons):
            return self.membership(node)
        parts = []
        left = self.expr(node.left)
        for target in node.comparisons:
            op = COMPARE_OPS.get(type(target.operator))
            if op is None:
                raise self.error(node, f"the comparison {type(target.operator).__name__} is not supported")
            parts.append((op, target.comparator))
        if len(parts) == 1:
            op, comparator = parts[0]
            return self.assign(ir.Call(op, (left, self.expr(comparator))))
        # a < b < c: evaluate b once, stop at the first false comparison.
        result = self.names.temp()

        def chain(left_atom, remaining):
            op, comparator = remaining[0]
            right_atom = self.expr(comparator)
            self.emit(ir.Assign((result,), ir.Call(op, (left_atom, right_atom)), self.origin))
            if len(remaining) > 1:
                rest = self.sub_block(lambda: chain(right_atom, remaining[1:]))
                self.emit(ir.If(ir.Name(result), rest, [], self.origin))

        chain(left, parts)
        return ir.Name(result)

    def membership(self, node: cst.Comparison) -> ir.Atom:
        """v in (c1, c2, ...) of constants (numbers, strings, booleans): v == c1 or v == c2 ...,
        as Python's `in` compares a tuple's items, short-circuit; `not in` its negation."""
        target = node.comparisons[0]
        items = plain_display_items(target.comparator) if not isinstance(target.comparator, cst.Set) else \
            [e.value for e in target.comparator.elements if isinstance(e, cst.Element)]
        constants = None
        if items is not None and all(isinstance(i, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float))
                                     or isinstance(i, cst.UnaryOperation) and isinstance(i.operator, cst.Minus)
                                     and isinstance(i.expression, (cst.Integer, cst.Float))
                                     or isinstance(i, cst.Name) and i.value in ("True", "False") for i in items):
            constants = [ast.literal_eval(cst.Module([]).code_for_node(i)) for i in items]
        elif isinstance(target.comparator, cst.Name) and target.comparator.value not in self.locals:
            value = self.resolver.lookup(target.comparator.value)
            if isinstance(value, (tuple, frozenset)) and all(isinstance(v, (str, int, float)) for v in value):
                # (a frozenset in a fixed order: generated code is the same in every process)
                constants = list(value) if isinstance(value, tuple) else sorted(value, key=repr)
                self.inlined[target.comparator.value] = value  # (the cache checks that the name still holds it)
        if len(node.comparisons) != 1 or constants is None:
            raise self.error(node, "`in` and `not in` are supported alone, against a tuple of constants (numbers or "
                             "strings)", "compare with == and or, or use np.isin for arrays")
        left = self.expr(node.left)
        result = self.names.temp()

        def chain(remaining):
            self.emit(ir.Assign((result,), ir.Call(operator.eq, (left, ir.Const(remaining[0]))), self.origin))
            if len(remaining) > 1:
                rest = self.sub_block(lambda: chain(remaining[1:]))
                self.emit(ir.If(ir.Name(result), rest, [], self.origin, negated=True))

        if constants:
            chain(constants)
        else:
            self.emit(ir.Assign((result,), ir.Const(False), self.origin))
        if isinstance(target.operator, cst.NotIn):
            return self.assign(ir.Call(operator.not_, (ir.Name(result),)))
        return ir.Name(result)

    def if_expression(self, node: cst.IfExp) -> ir.Atom:
        taken = self.static_decision(node.test)
        if taken is not MISSING:
            return self.expr(node.body if taken else node.orelse)
        result = self.names.temp()
        test = self.expr(node.test)
        body = self.sub_block(lambda: self.emit(ir.Assign((result,), self.expr(node.body), self.origin)))
        orelse = self.sub_block(lambda: self.emit(ir.Assign((result,), self.expr(node.orelse), self.origin)))
        self.emit(ir.If(test, body, orelse, self.origin))
        return ir.Name(result)

    def elements(self, elements) -> tuple[ir.Atom, ...]:
        out = []
        for element in elements:
            if isinstance(element, cst.StarredElement):
                raise self.error(element, "starred elements are not supported")
            out.append(self.expr(element.value))
        return tuple(out)

    def dictionary(self, node: cst.Dict) -> ir.Atom:
        keys, values = [], []
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                raise self.error(element, "** in a dict display is not supported")
            key = self.expr(element.key)
            if not isinstance(key, ir.Const):
                raise self.error(element.key, "dict keys must be constants")
            keys.append(key.value)
            values.append(self.expr(element.value))
        return self.assign(ir.Build("dict", tuple(values), tuple(keys)))

    def index(self, node: cst.Subscript) -> ir.Index:
        items: list[ir.IndexItem] = []
        for element in node.slice:
            item = element.slice
            if isinstance(item, cst.Slice):
                items.append(ir.Slice(
                    self.optional(item.lower), self.optional(item.upper), self.optional(item.step)))
            elif isinstance(item.value, cst.Ellipsis):
                items.append(ir.EllipsisIndex())
            else:
                value = item.value
                obj = self.resolver.resolve(value) if isinstance(value, cst.Attribute) else MISSING
                if (isinstance(value, cst.Name) and value.value == "None") or (
                        obj is None and isinstance(value, cst.Attribute)):
                    items.append(ir.NewAxis())
                elif isinstance(value, cst.Tuple) and len(node.slice) == 1:
                    for e in value.elements:
                        items.append(self.expr(e.value))
                else:
                    items.append(self.expr(value))
        return ir.Index(tuple(items))

    def optional(self, node) -> ir.Atom | None:
        return None if node is None else self.expr(node)

    def attribute(self, node: cst.Attribute) -> ir.Atom:
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value not in self.locals and not (
                root.value in self.def_names or _captured(self.resolver.lookup(root.value)) is not None
                or isinstance(self.resolver.lookup(root.value), SCALAR_TYPES)):
            # np.pi, math.e, a module's or a class's number (a captured array's .T and .shape
            # are its attributes, below)
            value = self.resolver.resolve(node)
            if value is MISSING:
                value = _attribute_chain(self.resolver.lookup(root.value), node)
            if value is MISSING:
                raise self.error(node, "unknown attribute", "pass the value as an argument")
            if _is_constant(value) and not isinstance(value, str):
                if root.value not in self.resolver.closure and _may_change(self.resolver.lookup(root.value)):
                    self.inlined[_dotted(node)] = value  # (the cache checks it: Config.SCALE = 2.0)
                return ir.Const(value)
            raise self.error(node, "this attribute cannot be used as a value here", "pass it as an argument")
        base = self.expr(node.value)
        attr = node.attr.value
        if attr == "T":
            return self.assign(ir.Call(np.transpose, (base,)))
        if attr in ("real", "imag"):  # (of the real data s2s differentiates: x itself, and zeros)
            return self.assign(ir.Call(np.real if attr == "real" else np.imag, (base,)))
        if attr == "at":
            raise self.error(node, "x.at[...] is supported only followed by an update: "
                             "x.at[i].set(v), .add(v), .multiply(v), .divide(v), .power(v), .min(v), .max(v), .get()")
        if attr in ir.SHAPE_ATTRIBUTES or not attr.startswith("_"):
            return self.assign(ir.Attribute(base, attr))
        raise self.error(node, f"the attribute .{attr} is not supported")

    def mapped_displays(self, node: cst.Call) -> cst.Tuple | None:
        """map(f, [a, b, c]) over list or tuple displays, as the tuple (f(a), f(b), f(c)) that
        unpacking, list() and a loop then read (several displays: f(a, u), ..., to the shortest,
        as map stops); None for any other map. The nodes written stand at the map's place."""
        if len(node.args) < 2 or any(a.keyword is not None or a.star for a in node.args):
            return None
        displays = [a.value for a in node.args[1:]]
        if not all(isinstance(d, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in d.elements)
                   for d in displays):
            return None
        calls = []
        for k in range(min(len(d.elements) for d in displays)):
            args = [cst.Arg(d.elements[k].value) for d in displays]
            call = cst.Call(func=node.args[0].value, args=args)
            calls.append(cst.Element(call))
            for made in (call, calls[-1], *args):
                self.parsed.written_for[made] = node
        mapped = cst.Tuple(calls)
        self.parsed.written_for[mapped] = node
        return mapped

    def call(self, node: cst.Call) -> ir.Atom:
        func = node.func
        if isinstance(func, cst.Name) and func.value in getattr(self, "transform_aliases", {}):
            # grad_fn(p) of grad_fn = s2s.grad(loss_fn): s2s.grad(loss_fn)(p), at this call's place
            written = node.with_changes(func=self.transform_aliases[func.value])
            self.parsed.written_for[written] = node
            return self.call(written)
        if isinstance(func, cst.Call) and func.args and func.args[0].keyword is None and not func.args[0].star \
                and all(a.keyword is not None for a in func.args[1:]) \
                and not (isinstance(func.func, cst.Name) and func.func.value in self.locals) \
                and self.resolver.resolve(func.func) is checkpoint:
            # s2s.checkpoint(f)(x) inline, as JAX code writes jax.checkpoint(f)(x): checkpoint returns
            # f, and reverse mode already recomputes a callee's body in its vjp (README)
            func = func.args[0].value
        if isinstance(func, cst.Attribute):
            distribution = self.distribution_of(func.value)
            if distribution is not None:  # scipy.stats.norm.logpdf(x, mu, sigma), norm(mu, sigma).logpdf(x)
                return self.stats_call(node, func.attr.value, *distribution)
        offered = self.offered_function(func)
        if offered is None and isinstance(func, cst.Attribute) and not self._is_module_path(func.value):
            return self.method_call(node, func)
        if isinstance(func, cst.Name) and func.value in self.locals:
            raise self.error(node, "calling a local variable is not supported",
                             "call module-level functions by name")
        if isinstance(func, cst.Name) and func.value in self.def_names:
            return self.local_call(node, func.value)
        callee = offered if offered is not None else self.resolver.resolve(func)
        if isinstance(callee, functools._lru_cache_wrapper):
            callee = callee.__wrapped__  # @functools.lru_cache / cache: the function it remembers
        if hasattr(callee, "as_called_function"):  # an @s2s.jit function: its code, compiled with ours
            callee = callee.as_called_function()
        if isinstance(callee, type) and issubclass(callee, (np.integer, np.bool_, np.floating)) \
                and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
            # np.int64(W[:, -1]), np.float64(x[0]): x.astype(np.int64) (of an array, an array, as NumPy's;
            # integers carry no derivative), x.astype(np.float64) (differentiated)
            value = self.expr(node.args[0].value)
            if not isinstance(value, ir.Const):
                return self.cast(node, value, ir.Const(callee))
            return self.assign(ir.Call(callee, (value,)))
        if callee is np.broadcast_arrays and node.args and not any(a.keyword or a.star for a in node.args):
            # each operand broadcast to the shape of them all (np.broadcast_to: its adjoint sums back)
            operands = [self.expr(a.value) for a in node.args]
            shapes = tuple(self.assign(ir.Call(np.shape, (o,))) for o in operands)
            shape = self.assign(ir.Call(np.broadcast_shapes, shapes))
            return self.assign(ir.Build("tuple", tuple(self.assign(ir.Call(np.broadcast_to, (o, shape)))
                                                       for o in operands)))
        mapped = self.mapped_displays(node) if callee is builtins.map else None
        if mapped is not None:
            return self.expr(mapped)
        if any(callee is collective for collective in lax.COLLECTIVES):
            raise self.error(node, f"s2s.lax.{callee.__name__} combines the shards of s2s.pmap, which run the "
                             "function as Python: a function that s2s transforms (grad, jvp, vjp, vmap, jit) "
                             "cannot call it",
                             "call the collective in the pmapped function, on the transform's result, e.g. "
                             "g = s2s.lax.pmean(s2s.grad(loss)(p, shard), 'i')")
        if any(callee is form for form in LAX_FORMS):
            return self.lax_call(node, callee)
        if callee is lax.select:
            callee = np.where  # the same function, which the registry and Numba know
        public = next((p for p in NESTED_TRANSFORMS_BY_NAME() if isinstance(func, cst.Call)
                       and self.resolver.resolve(func.func) is p), None)
        if public is not None and public in NESTED_CALLS:
            return self.nested_derivative_call(node, func, public)
        if public is not None:
            raise self.error(node, "a transform called inside a transformed function (here "
                             f"s2s.{public.__name__}(f)(...)) is not supported; s2s.jvp(f, primals, tangents), "
                             "s2s.grad(f)(...), s2s.value_and_grad(f)(...), s2s.hessian(f)(...), s2s.jacfwd(f)(...) "
                             "and s2s.jacrev(f)(...) are",
                             "transform the function around it (s2s.grad of the whole step), or call the jitted "
                             "transform from Python: g = s2s.jit(s2s.grad(loss))(params, batch)")
        if getattr(callee, "__module__", None) == "s2s.optimizers":
            raise self.error(node, f"s2s.optimizers' {callee.__name__} cannot be called inside a transformed "
                             "function (it works on an optimizer state, a Python object, not on arrays)",
                             "jit the gradient and call the optimizer outside: "
                             "g = s2s.jit(s2s.grad(loss))(get_params(state), batch); state = opt_update(i, g, state) "
                             "(opt_update is one compiled kernel call per dtype already)")
        if type(callee).__module__.startswith("s2s.doors") and not hasattr(callee, "as_loop_function"):
            # g = s2s.grad(f) at module level, g(x) here: as s2s.grad(f)(x) (nested_calls.py)
            entry = next((e for e in (of(callee, undifferentiated()) for of in NESTED_OBJECTS) if e is not None), None)
            if entry is not None:
                self.references.add((_dotted(func), callee.fun.__module__, callee.fun.__qualname__))
                args, kwargs = self.arguments(node)
                return self.user_call(node, entry, args, kwargs)
            raise self.error(node, f"the transformed function {getattr(callee, '__name__', '')} (an s2s transform's "
                             "result) cannot be called inside a transformed function; s2s.jvp(f, primals, "
                             "tangents), s2s.vmap(f) and s2s.grad, hessian, jacfwd, jacrev of a module-level "
                             "function with one int argnums (no has_aux) can",
                             "transform the function around it (s2s.grad of the whole step), or call the jitted "
                             "transform from Python: g = s2s.jit(s2s.grad(loss))(params, batch)")
        if isinstance(func, cst.Attribute) and captured.is_generator(getattr(callee, "__self__", None)):
            # np.random.randn(n, d): a draw from NumPy's global RandomState (np.random.seed sets it)
            name = "np_random" if "np_random" not in self.locals else self.names.fresh("np_random")
            return self.draw(node, name, callee.__name__, callee.__self__)
        if callee is MISSING:
            raise self.error(func, "cannot resolve the called function",
                             "call numpy, math, builtins or module-level functions")
        owner = getattr(callee, "__self__", None)
        if _is_distribution(owner) or _is_frozen(owner):  # logpdf = norm.logpdf (or rv.logpdf) at module level
            if isinstance(func, cst.Name) and func.value not in self.resolver.closure:
                self.inlined[func.value] = callee  # (the cache checks that the name still holds it)
            return self.stats_call(node, callee.__name__, *self.distribution_parts(func, owner))
        if _is_distribution(callee) or _is_frozen(callee):
            raise self.error(node, f"a scipy.stats distribution ({_distribution_name(callee)}) is supported here only "
                             "through its methods, called at once: norm.logpdf(x, loc, scale) or "
                             "norm(loc, scale).logpdf(x)", "call the method where you need the value")
        if scipy_name(callee) == "scipy.integrate.odeint":
            return self.odeint_call(node)
        if scipy_name(callee) is not None:
            callee = self.scipy_callee(node, callee)
        if isinstance(callee, type) and (callee.__module__ or "").split(".")[0] not in ("builtins", "numpy"):
            if hasattr(callee, "_fields") and undifferentiated() and _named_where_defined(callee):
                return self.named_tuple(node, callee)
            kind = "a namedtuple" if hasattr(callee, "_fields") else "an object of a class"
            where = "a function s2s differentiates or batches" if hasattr(callee, "_fields") \
                else "a transformed function"
            raise self.error(node, f"making {kind} ({callee.__name__}) inside {where} is not supported (one "
                             "passed in as an argument is; s2s.jit of a function that is not differentiated "
                             "makes module-level namedtuples)",
                             "return a tuple or a dict, and build the object from it outside")
        if callee is runtime.dict_of and len(node.args) == 2 and all(
                isinstance(a.value, cst.Tuple) for a in node.args):
            # A dict display in generated code (codegen/numba_routes.py), read again (second order)
            keys, values = (a.value.elements for a in node.args)
            return self.dictionary(cst.Dict([cst.DictElement(k.value, v.value) for k, v in zip(keys, values)]))
        if callee is builtins.dict:
            return self.dict_call(node)
        decided = self.isinstance_call(node) if callee is builtins.isinstance else None
        if decided is not None:
            return decided
        if callee is runtime.try_outcome:  # (a try's probe, in generated code read again: second order)
            probe = self.resolver.resolve(node.args[0].value)
            if not getattr(probe, "__s2s_python__", False):
                raise self.error(node, "runtime.try_outcome calls the probe of a try that generated code holds")
            args = tuple(self.expr(a.value) for a in node.args[1:])
            return self.assign(ir.Call(runtime.try_outcome, (ir.Const(ir.TryProbe.written(probe, self.origin)), *args)))
        if hasattr(callee, "as_loop_function"):  # an s2s.vmap object: transformed as its loop
            self.references.add((_dotted(func), callee.__module__, callee.__qualname__))
            try:
                callee = callee.as_loop_function()
            except S2SError as exc:
                raise self.error(node, exc.reason, exc.hint) from None
            args, kwargs = self.arguments(node)
            return self.user_call(node, callee, args, kwargs)
        entry_of = next((e for public, e in NESTED_TRANSFORMS.items() if callee is public), None)
        if entry_of is not None:
            return self.jvp_call(node, entry_of)
        if callee is np.einsum and len(node.args) >= 2 and self._is_sublist(node.args[1].value) \
                and not any(a.keyword or a.star for a in node.args):
            return self.einsum_sublists(node)
        if callee is builtins.print:
            raise self.error(node, "print(...) returns None; call it as a statement")
        if callee in (builtins.range, builtins.enumerate, builtins.zip):
            raise self.error(node, f"{callee.__name__}(...) is supported only as the iterable of a for loop")
        if callee in (builtins.max, builtins.min, builtins.sum) and _a_display_of_items(node, callee):
            return self.fold_display(node, callee)
        if callee in (builtins.max, builtins.min, builtins.sum):
            reduced = self.reduction(node, callee)  # sum(xs), sum(f(v) for v in x): a loop (comprehensions.py)
            if reduced is not None:
                return reduced
        if callee in (builtins.tuple, builtins.list):
            items = self.items_of_tuple(node)
            if items is not None:  # tuple(np.linalg.eigh(a)) is (w, V); list(...) [w, V]
                return self.assign(ir.Build(callee.__name__, items))
        listed = self.listed(node) if callee is builtins.list else None
        if listed is not None:
            return self.list_comprehension(listed)  # list(x) is [v for v in x], list(f(v) for v in x) [f(v) ...]
        generator = next((a.value for a in node.args if isinstance(a.value, cst.GeneratorExp)), None)
        if generator is not None:
            name = getattr(callee, "__name__", "this function")
            raise self.error(generator, f"a generator expression is supported only as the one argument of sum, max, "
                             f"min or list, not of {name}" + (" (np.array of a generator is a 0-d object array in "
                                                              "NumPy)" if facts(callee).dtype_casts == "result" else ""),
                             GENERATOR_HINT)
        dtype = None
        if facts(callee).dtype_casts == "input" and any(a.keyword and a.keyword.value == "dtype" for a in node.args):
            # np.sum(x, dtype=t) adds in t: the sum of x cast to t, which has rules and compiles.
            dtype = self.type_atom(next(a.value for a in node.args if a.keyword and a.keyword.value == "dtype"))
            stripped = node.with_changes(args=[a for a in node.args if not (a.keyword and a.keyword.value == "dtype")])
            args, kwargs = self.arguments(stripped, lists_as_tuples=True)
        else:
            args, kwargs = self.arguments(node, lists_as_tuples=not is_user_function(callee),
                                          spread=is_user_function(callee) and not isinstance(callee, CustomRule),
                                          functions=isinstance(callee, types.FunctionType) and is_user_function(callee))
        if dtype is not None and args:
            args[0] = self.cast(node, args[0], dtype)
        if is_user_function(callee):
            callee, args, kwargs = self.static_callee(callee, args, kwargs)
            # For the cache: the name the caller used must still refer to this function.
            self.references.add((_dotted(func), callee.__module__, callee.__qualname__))
            # (in a nested function written out here, `return helper(y)` leaves y to the caller, who may read it)
            statement = None if self.in_nested_function() and isinstance(self.statement_node, cst.Return) \
                else self.statement_node
            site = call_site(node, callee, statement, self.parsed.origin(node))
            if site is not None:
                written = self.writing_call(node, callee, args, kwargs, site)  # (writing_calls.py)
                if written is not None:
                    return written
                self.call_sites.append(site)
            return self.user_call(node, callee, args, kwargs)
        if callee in JOINS and args and isinstance(node.args[0].value, (cst.List, cst.Tuple)) \
                and not node.args[0].keyword and any(isinstance(e.value, (cst.List, cst.Tuple))
                                                     for e in node.args[0].value.elements):
            # np.hstack((axis, (angle,))): NumPy makes each item an array, a display too; so does the
            # lowered call (Numba joins arrays only)
            built = next((stmt.value for stmt in reversed(self.out) if isinstance(stmt, ir.Assign)
                          and stmt.targets == (getattr(args[0], "id", None),) and isinstance(stmt.value, ir.Build)), None)
            elements = node.args[0].value.elements
            if built is not None and len(built.elts) == len(elements):
                items = tuple(self.assign(ir.Call(np.array, (item,))) if isinstance(e.value, (cst.List, cst.Tuple))
                              else item for item, e in zip(built.elts, elements))
                args[0] = self.assign(ir.Build("tuple", items))
        for k in _array_operands(callee, len(args)):
            if isinstance(node.args[k].value, (cst.List, cst.Tuple)) and not node.args[k].keyword:
                # np.square([a, 1.0]): NumPy makes the display an array first; so does the lowered
                # call, whose derivative rules do arithmetic on it (a tuple there was a raw TypeError)
                args[k] = self.assign(ir.Call(np.array, (args[k],)))
        if facts(callee).lowered_to is not None and len(args) == 2 and not kwargs:
            callee = facts(callee).lowered_to  # the same function, spelled as Numba compiles it (np.matmul: `@`)
        if callee is np.einsum:
            return self.einsum(node, args, kwargs)
        if callee is np.cross and (len(args) > 2 or kwargs):
            return self.cross(node, args, kwargs)
        if callee in (builtins.max, builtins.min) and len(args) > 2 and not kwargs:
            # max(a, b, c) is max(max(a, b), c): Python compares left to right, and keeps the
            # first of equal values, as the rule of two does
            folded = args[0]
            for arg in args[1:]:
                folded = self.assign(ir.Call(callee, (folded, arg)))
            return folded
        if facts(callee).dtype_casts == "result":  # np.array, np.asarray
            dtypes = [v for k, v in kwargs if k == "dtype"] + list(args[1:2])
            ndmin = [v for k, v in kwargs if k == "ndmin"]
            if [k for k, _ in kwargs if k not in ("dtype", "ndmin")] or len(args) > 2 or len(dtypes) > 1 or not args \
                    or ndmin and not (isinstance(ndmin[0], ir.Const) and ndmin[0].value in (0, 1, 2)):
                raise self.error(node, f"{callee.__name__} takes the values, a dtype and ndmin 0, 1 or 2 here",
                                 "leave out copy=, order= and the others")
            if ndmin:  # np.array(x, ndmin=2): np.atleast_2d of the array (ones put before its axes)
                made = self.assign(ir.Call(callee, (args[0],)))
                at_least = {0: None, 1: np.atleast_1d, 2: np.atleast_2d}[ndmin[0].value]
                made = self.assign(ir.Call(at_least, (made,))) if at_least is not None else made
                return self.cast(node, made, dtypes[0]) if dtypes else made
            if dtypes:  # np.asarray(x, dtype=t): the array, cast to t (differentiable for floats)
                made = self.assign(ir.Call(callee, (args[0],)))
                return self.cast(node, made, dtypes[0])
        return self.assign(ir.Call(callee, tuple(args), tuple(kwargs)))

    def items_of_tuple(self, node: cst.Call) -> tuple | None:
        """The items of the one argument of tuple(...) or list(...) where it is a tuple: a tuple or
        list display, or the call of a function whose rule gives a tuple (np.linalg.eigh, slogdet,
        qr), whose items are read one by one (a namedtuple result becomes a plain tuple, as in
        Python); None for anything else (list(x) of an array is a loop over its rows)."""
        if len(node.args) != 1 or node.args[0].keyword or node.args[0].star \
                or not self.tuple_valued(node.args[0].value):
            return None
        argument = node.args[0].value
        if isinstance(argument, (cst.Tuple, cst.List)):
            return self.elements(argument.elements)
        value = self.expr(argument)
        last = self.out[-1] if self.out else None
        found = rule_of_call(last.value.fn, last.value.args, last.value.kwargs) \
            if isinstance(last, ir.Assign) and last.targets == (getattr(value, "id", None),) \
            and isinstance(last.value, ir.Call) else None
        count = next((len(line.value.elts) for line in found.forward if isinstance(line.value, ast.Tuple)), None) \
            if isinstance(found, Rule) and found.tuple_result else None
        if count is None:
            raise self.error(node, f"{node.func.value if isinstance(node.func, cst.Name) else 'this call'}(...) of "
                             "this call's result is not supported", "index the result (r[0], r[1]) instead")
        return tuple(self.assign(ir.Subscript(value, ir.Index((ir.Const(k),)))) for k in range(count))

    def tuple_valued(self, node: cst.BaseExpression) -> bool:
        """A tuple or list display, or the call of a library function whose rule gives a tuple."""
        if isinstance(node, (cst.Tuple, cst.List)):
            return not any(isinstance(e, cst.StarredElement) for e in node.elements)
        if not isinstance(node, cst.Call) or isinstance(node.func, cst.Name) and node.func.value in self.locals:
            return False
        try:
            found = lookup(self.resolver.resolve(node.func))
        except TypeError:  # an unhashable callable
            return False
        return isinstance(found, Rule) and found.kind == "rule" and found.tuple_result

    def scipy_callee(self, node: cst.Call, callee) -> Any:
        """The runtime helper that a call of a SciPy function is written as (its rule and Numba
        form are declared in templates/scipy_rules.py); a function not declared there is refused
        here, at the user's line, before anything reads SciPy's own source."""
        written = facts(callee).written_as
        if written is not None:
            return written
        named = [n if isinstance(n, str) else scipy_name(n) for n in load_facts()]  # (SciPy's named by name too)
        covered = sorted([n for n in named if n is not None and n.startswith("scipy.")] + ["scipy.integrate.odeint"])
        distributions = ""
        if scipy_name(callee).startswith("scipy.stats."):
            distributions = f", and of scipy.stats the methods of {stats_forms.covered()}"
        raise self.error(node, f"s2s has no rule for {scipy_name(callee)}"
                         + (f"; of SciPy it differentiates and compiles {', '.join(covered)}" if covered else "")
                         + distributions,
                         "compute it with NumPy functions, and give that function a derivative of your own "
                         "with s2s.custom_vjp where you need one (its fwd and bwd are NumPy code too: s2s "
                         "transforms them)")

    def distribution_of(self, node: cst.BaseExpression):
        """(the scipy.stats distribution, its frozen arguments, its frozen keywords) that node
        names: a global one (norm, scipy.stats.norm, stats.t), one frozen in the call
        (norm(mu, sigma)) or at module level (rv = norm(0.0, 2.0)); None for anything else."""
        if isinstance(node, cst.Call):
            dist = self.distribution_of(node.func)
            if dist is None or dist[1] or dist[2]:
                return None
            args, kwargs = self.arguments(node)
            return dist[0], tuple(args), tuple(kwargs)
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value in self.locals or root.value in self.def_names:
            return None
        obj = self.resolver.lookup(root.value) if node is root else _attribute_chain(
            self.resolver.lookup(root.value), node)
        if node is root and root.value not in self.resolver.closure and (_is_distribution(obj) or _is_frozen(obj)):
            self.inlined[root.value] = obj  # (the cache checks that the name still holds it: norm = t)
        return self.distribution_parts(node, obj)

    def distribution_parts(self, node: cst.CSTNode, obj: Any):
        """(distribution, frozen arguments, frozen keywords) of a distribution object, or of one
        frozen with numbers; None for any other object."""
        if _is_distribution(obj):
            return obj, (), ()
        if _is_frozen(obj) and not isinstance(getattr(obj, "args", None), tuple):
            raise self.error(node, f"the frozen distribution {_dotted(node)} ({type(obj).__name__}) is not covered",
                             "call the distribution's method with its parameters as arguments: "
                             "multivariate_normal.logpdf(x, mean, cov)")
        if _is_frozen(obj) and _is_distribution(getattr(obj, "dist", None)):
            if not all(_is_constant(v) for v in (*obj.args, *obj.kwds.values())):
                raise self.error(node, f"the frozen distribution {_dotted(node)} holds parameters other than numbers",
                                 f"call {obj.dist.name}'s method with its parameters as arguments")
            return (obj.dist, tuple(ir.Const(v) for v in obj.args),
                    tuple((k, ir.Const(v)) for k, v in obj.kwds.items()))
        return None

    def stats_call(self, node: cst.Call, method: str, dist, frozen: tuple, frozen_kwargs: tuple) -> ir.Atom:
        """A scipy.stats distribution's method, lowered as a call of its NumPy form
        (scipy_forms/stats.py), which s2s transforms like a helper of the user's; a distribution
        or method not covered is refused here, before anything reads SciPy's source."""
        import inspect

        name = _distribution_name(dist)
        fn = stats_forms.form(name, method)
        if fn is None:
            raise self.error(node, f"s2s has no rule for scipy.stats.{name}.{method}; of scipy.stats it "
                             f"differentiates and compiles {stats_forms.covered()}",
                             "compute it with NumPy functions, and give that function a derivative of your own "
                             "with s2s.custom_vjp where you need one (its fwd and bwd are NumPy code too: s2s "
                             "transforms them)")
        args, kwargs = self.arguments(node, lists_as_tuples=True)
        displays = [isinstance(a.value, (cst.List, cst.Tuple)) for a in node.args]
        for k, display in enumerate(displays[:len(args)]):
            if display:  # mvn.logpdf(x, [0.0, 1.0], cov): SciPy makes the display an array, and so does the call
                args[k] = self.assign(ir.Call(np.array, (args[k],)))
        for k, display in enumerate(displays[len(args):]):
            if display:
                kwargs[k] = (kwargs[k][0], self.assign(ir.Call(np.array, (kwargs[k][1],))))
        args, kwargs = args + list(frozen), kwargs + list(frozen_kwargs)
        signature = inspect.signature(fn)
        parameters = ", ".join(signature.parameters)
        try:
            bound = signature.bind(*args, **dict(kwargs))
        except TypeError as exc:
            raise self.error(node, f"scipy.stats.{name}.{method} is differentiated with the parameters ({parameters}) "
                             f"here ({exc})", "pass the others' defaults, or compute it with NumPy functions") from None
        given = bound.arguments
        if isinstance(given.get("mean"), ir.Const) and given["mean"].value is None:
            # (multivariate_normal's mean=None is SciPy's zero mean)
            args, kwargs = [ir.Const(0.0) if a is given["mean"] else a for a in args], \
                [(k, ir.Const(0.0) if v is given["mean"] else v) for k, v in kwargs]
            given["mean"] = ir.Const(0.0)
        allowed = given.get("allow_singular")
        if allowed is not None and not (isinstance(allowed, ir.Const) and allowed.value is False):
            fn = stats_forms.form(name, method, of_any_rank=True)
        missing = [p.name for p in signature.parameters.values()  # (cov: a default of None, an array needed)
                   if p.default is None and (p.name not in given or isinstance(given[p.name], ir.Const))]
        if missing:
            raise self.error(node, f"scipy.stats.{name}.{method} is differentiated with {missing[0]} given as an array "
                             f"(its parameters here: {parameters})", f"pass {missing[0]} as a 2-d array")
        return self.user_call(node, fn, args, kwargs)

    def fold_display(self, node: cst.Call, callee) -> ir.Atom:
        """sum([a, b, c]) is a + b + c (after sum's start, where one is given: 0 + a is a), and
        max([a, b, c]) / min(...) is max(a, b, c), folded left to right as Python does."""
        items = [self.expr(e.value) for e in node.args[0].value.elements]
        start = [self.expr(node.args[1].value)] if len(node.args) == 2 else []
        if not items and not start:
            if callee is not builtins.sum:
                raise self.error(node, f"{callee.__name__}() of an empty display has no value")
            return ir.Const(0)
        fold = operator.add if callee is builtins.sum else callee
        folded, *rest = start + items
        for item in rest:
            folded = self.assign(ir.Call(fold, (folded, item)))
        return folded

    def local_call(self, node: cst.Call, name: str) -> ir.Atom:
        """A call of a function defined with def in this one: its body written out here, reading
        the variables around it as they are now (lax_forms.inline)."""
        if name not in self.local_defs:
            raise self.error(node, f"the nested function {name} is called before its def",
                             "define it before the call")
        args, kwargs = self.arguments(node)
        tree, _ = self.inline(self.local_defs[name], args, node, kwargs=kwargs, writes_reach=True)
        return self.pack(tree)

    def type_atom(self, node: cst.BaseExpression) -> ir.Atom:
        """A type argument: float, int and bool name types here, not values."""
        if isinstance(node, cst.Name) and node.value not in self.locals:
            found = self.resolver.lookup(node.value)
            if found in (builtins.float, builtins.int, builtins.bool):
                return ir.Const(found)
        return self.expr(node)

    def cast(self, node: cst.CSTNode, value: ir.Atom, dtype: ir.Atom) -> ir.Atom:
        """value.astype(dtype): runtime.astype to a floating type (differentiable),
        runtime.astype_integer to an integer or bool one (not differentiated)."""
        hint = "name the type as a constant: np.float32, np.float64, float, int, np.int64"
        if not isinstance(dtype, ir.Const):
            raise self.error(node, "the type of a cast must be a constant", hint)
        try:
            kind = np.dtype(dtype.value)
        except TypeError:
            raise self.error(node, f"{dtype.value!r} is not a NumPy type", hint) from None
        if kind.kind == "f":
            return self.assign(ir.Call(runtime.astype, (value, ir.Const(kind.type))))
        if kind.kind in "iub":
            return self.assign(ir.Call(runtime.astype_integer, (value, ir.Const(kind.type))))
        raise self.error(node, f"casts to {kind} are not supported", "cast to a floating or integer type")

    def concatenator(self, node: cst.Subscript, maker) -> ir.Atom:
        """np.r_[...]: its items, each at least 1-d (a slice start:stop:step the constant range
        np.arange makes, or np.linspace's where the step is a complex number of points), joined
        along the first axis; np.c_[...]: its items, each a column where it has fewer than two
        dimensions (np.column_stack of the one item, at least 1-d), joined along the last axis."""
        name = "np.r_" if maker is np.r_ else "np.c_"
        parts = []
        for element in node.slice:
            item = element.slice
            if isinstance(item, cst.Slice):
                bounds = [self.optional(b) for b in (item.lower, item.upper, item.step)]
                if not all(b is None or isinstance(b, ir.Const) and isinstance(b.value, (int, float, complex))
                           for b in bounds) or bounds[1] is None:
                    raise self.error(item, f"a slice in {name}[...] is a range of constant numbers here",
                                     "write its start, stop and step as numbers, or build the range with "
                                     "start + step * np.arange(n)")
                start, stop, step = (b.value if b is not None else None for b in bounds)
                if isinstance(step, complex):  # start:stop:nj, n points from start to stop
                    part = self.assign(ir.Call(np.linspace, (ir.Const(0 if start is None else start),
                                                              ir.Const(stop), ir.Const(int(abs(step))))))
                else:
                    part = self.assign(ir.Call(np.arange, (ir.Const(0 if start is None else start), ir.Const(stop),
                                                           ir.Const(1 if step is None else step))))
            elif isinstance(item.value, cst.SimpleString) or isinstance(item.value, cst.ConcatenatedString):
                raise self.error(item, f"{name}[...] with a string directive is not supported",
                                 "join the arrays with np.concatenate, np.stack or np.column_stack")
            else:
                part = self.assign(ir.Call(np.atleast_1d, (self.expr(item.value),)))
            if maker is np.r_:
                parts.append(part)
            else:
                one = self.assign(ir.Build("tuple", (part,)))
                parts.append(self.assign(ir.Call(np.column_stack, (one,))))
        joined = self.assign(ir.Build("tuple", tuple(parts)))
        axis = ir.Const(0 if maker is np.r_ else -1)
        return self.assign(ir.Call(np.concatenate, (joined,), (("axis", axis),)))

    def cross(self, node: cst.Call, args: list, kwargs: list) -> ir.Atom:
        """np.cross(a, b, axisa, axisb, axisc, axis) with its vectors along other axes than the last:
        the vectors moved last (np.moveaxis), their cross product, and its vectors moved to axisc."""
        import inspect

        try:
            bound = inspect.signature(np.cross).bind(*args, **dict(kwargs))
        except TypeError as exc:
            raise self.error(node, f"call to np.cross does not match its signature ({exc})") from None
        given = {k: v for k, v in bound.arguments.items() if k not in ("a", "b")}
        if not all(isinstance(v, ir.Const) and (v.value is None or isinstance(v.value, int)) for v in given.values()):
            raise self.error(node, "np.cross takes its axes (axisa, axisb, axisc, axis) as constant ints here",
                             "write the axes as numbers, or move the vectors last with np.moveaxis")
        axes = {k: given[k].value if k in given else -1 for k in ("axisa", "axisb", "axisc")}
        if given.get("axis") is not None and given["axis"].value is not None:
            axes = dict.fromkeys(axes, given["axis"].value)  # (NumPy: axis overrides the other three)
        a, b = bound.arguments["a"], bound.arguments["b"]
        if axes["axisa"] != -1:
            a = self.assign(ir.Call(np.moveaxis, (a, ir.Const(axes["axisa"]), ir.Const(-1))))
        if axes["axisb"] != -1:
            b = self.assign(ir.Call(np.moveaxis, (b, ir.Const(axes["axisb"]), ir.Const(-1))))
        product = self.assign(ir.Call(np.cross, (a, b)))
        if axes["axisc"] == -1:
            return product
        return self.assign(ir.Call(np.moveaxis, (product, ir.Const(-1), ir.Const(axes["axisc"]))))

    def einsum(self, node: cst.Call, args: list, kwargs: list) -> ir.Atom:
        if kwargs or not args or not isinstance(args[0], ir.Const) or not isinstance(args[0].value, str):
            params = self.parsed.node.params
            parameters = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
            second = node.args[1].value if len(node.args) > 1 else None
            hint = EINSUM_HINT
            if isinstance(second, cst.Name) and second.value in parameters:
                hint = (f"the code is written for sublists known where it is generated: mark {second.value} and "
                        "the other arguments that hold sublists static (s2s.jit(f, static_argnums=...), as "
                        "jax.jit asks)")
            raise self.error(node, "np.einsum takes constant subscripts (or sublists) and the operands, no "
                             "keyword arguments", hint)
        return self.lower_einsum(node, args[0].value, list(args[1:]))

    def einsum_sublists(self, node: cst.Call) -> ir.Atom:
        """The interleaved form, einsum(a, [0, 1], b, [1, 2], [0, 2]): the sublists are read from
        the source (constants, Ellipsis among them), the operands are the arguments between them."""
        try:
            sublists = [self._sublist(a.value) for a in node.args[1::2]]
            output = self._sublist(node.args[-1].value) if len(node.args) % 2 else None
            subscripts = sublist_subscripts(sublists, output)
        except EinsumRefused as exc:
            raise self.error(node, str(exc), EINSUM_HINT) from None
        operands = [self.expr(a.value) for a in node.args[0::2][:len(sublists)]]
        return self.lower_einsum(node, subscripts, operands)

    def lower_einsum(self, node: cst.Call, subscripts: str, operands: list) -> ir.Atom:
        try:
            return lower_einsum(
                subscripts, operands,
                lambda fn, a, kw=(): self.assign(ir.Call(fn, tuple(a), tuple(kw))),
                lambda x, items: self.assign(ir.Subscript(x, ir.Index(tuple(items)))))
        except EinsumRefused as exc:
            raise self.error(node, str(exc), EINSUM_HINT) from None

    def _is_sublist(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, (cst.List, cst.Tuple)) or isinstance(value, cst.Name) \
            and isinstance(self.static.get(value.value), tuple)

    def _sublist(self, value: cst.BaseExpression) -> list:
        """A sublist of np.einsum's interleaved form, written as a list or tuple of integers and
        Ellipsis (or ...), or a static argument that holds one (s2s.jit's static_argnums)."""
        if isinstance(value, cst.Name) and isinstance(self.static.get(value.value), tuple):
            items = self.static[value.value]
            if not all(item is Ellipsis or isinstance(item, int) and not isinstance(item, bool) for item in items):
                raise EinsumRefused("np.einsum's sublists hold integers and Ellipsis")
            return list(items)
        if not isinstance(value, (cst.List, cst.Tuple)):
            raise EinsumRefused("np.einsum's interleaved form takes each sublist written as a list or tuple")
        items = []
        for element in value.elements:
            v = element.value
            if isinstance(v, cst.Ellipsis) or isinstance(v, cst.Name) and v.value == "Ellipsis":
                items.append(Ellipsis)
            elif isinstance(v, cst.Integer):
                items.append(int(v.evaluated_value))
            else:
                raise EinsumRefused("np.einsum's sublists are written with integer literals and Ellipsis")
        return items

    def offered_function(self, func: cst.BaseExpression) -> Any:
        """model.apply of a global or closure object (not a module) whose attribute stands for a
        plain function, offering it by the protocol an @s2s.jit function follows
        (as_called_function: s2s.nn's model.apply gives the function it writes for the module);
        None for any other callee, which keeps the refusals below."""
        if not isinstance(func, cst.Attribute) or self._is_module_path(func.value):
            return None
        held = self.object_attribute(func)
        if held is not MISSING:  # state.apply_fn(...) of a TrainState argument: the function it holds
            return held if hasattr(held, "as_called_function") or is_user_function(held) else None
        chain, root = [], func
        while isinstance(root, cst.Attribute):
            chain.insert(0, root.attr.value)
            root = root.value
        if not isinstance(root, cst.Name) or root.value in self.locals or root.value in self.def_names:
            return None
        value = self.resolver.lookup(root.value)
        if value is MISSING or isinstance(value, types.ModuleType):
            return None
        for attr in chain:
            if attr.startswith("_"):
                return None
            try:
                value = getattr(value, attr)
            except Exception:  # noqa: BLE001 - no such attribute: the refusals below say so
                return None
        return value if hasattr(value, "as_called_function") else None

    def object_attribute(self, node: cst.Attribute) -> Any:
        """The static attribute (state.apply_fn) of a parameter that holds an object split into its
        fields (static_values.split_objects), else MISSING."""
        if isinstance(node.value, cst.Name) and node.value.value in self.objects:
            static = self.objects[node.value.value][1]
            if node.attr.value in static:
                return static[node.attr.value]
        return MISSING

    def object_method(self, node: cst.Call, func: cst.Attribute) -> ir.Atom | None:
        """state.apply_gradients(grads=g) of a parameter that holds an object split into its fields:
        a call of the plain function its class writes for the method, with the fields first (None
        for a receiver that is not such a parameter)."""
        if not (isinstance(func.value, cst.Name) and func.value.value in self.objects):
            return None
        cls, static, layout = self.objects[func.value.value]
        try:
            function = cls.__s2s_method__(func.attr.value, static, layout)
        except S2SError as exc:
            raise self.error(node, exc.reason, exc.hint) from None
        if function is None:
            raise self.error(node, f"the method {cls.__name__}.{func.attr.value} is not one s2s can compile (of "
                             f"a {cls.__name__} argument, s2s compiles {', '.join(cls.__s2s_methods__)})",
                             f"call it outside the compiled function, on the {cls.__name__} it returns")
        args, kwargs = self.arguments(node)
        return self.user_call(node, function, [self.expr(func.value), *args], kwargs)

    def _root_is_local(self, node: cst.BaseExpression) -> bool:
        """Is node a variable of the function, or an attribute of one (state, state.tx)?"""
        while isinstance(node, cst.Attribute):
            node = node.value
        return isinstance(node, cst.Name) and node.value in self.locals

    def _is_module_path(self, node: cst.BaseExpression) -> bool:
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value in self.locals:
            return False
        return isinstance(self.resolver.resolve(node), types.ModuleType)

    def arguments(self, node: cst.Call, lists_as_tuples: bool = False, spread: bool = False,
                  functions: bool = False):
        """(positional atoms, (keyword, atom) pairs) of a call. f(*t) passes t's items, where their
        number is known here (a tuple display, or a name bound once to one); spread: else t is
        given as a Spread, which a call of a user function binds by the callee's signature.
        functions: a function passed (np.median, a parameter holding one) is a constant, for
        static_callee."""
        args, kwargs = [], []
        for arg in node.args:
            if arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value == getattr(self, "star_kwarg", None):
                continue  # f(x, **kwargs) of the function's own **kwargs, which is empty (parameter_names)
            if arg.star == "**":
                raise self.error(arg, "** arguments are supported only to pass on the function's own **kwargs",
                                 "pass the keyword arguments one by one")
            if arg.star == "*":
                if kwargs:
                    raise self.error(arg, "a starred argument after keyword arguments is not supported",
                                     "pass the keyword arguments last")
                items = self.starred_items(arg.value)
                if items is not None:
                    args.extend(items)
                elif spread and not any(isinstance(a, Spread) for a in args):
                    args.append(Spread(self.expr(arg.value), arg))
                else:
                    raise self.error(arg, "a starred argument is supported where the number of its items is known "
                                     "when s2s reads the function (a tuple display, or a name bound once to one), "
                                     "or once as the arguments of a call of a Python function",
                                     "unpack it into names first (x, y = t) and pass them one by one")
                continue
            passed = self.static_function(arg.value) if functions else MISSING
            if passed is not MISSING:
                value = ir.Const(passed)
            elif lists_as_tuples and isinstance(arg.value, cst.List):
                # np.array([a, b]) == np.array((a, b)), and Numba types tuples, not lists (nested
                # too: np.tensordot(a, b, [[1], [0]]), np.array([[a, b], [c, d]]))
                value = self.tuple_of_display(arg.value)
            else:
                value = self.expr(arg.value)
            if arg.keyword is None:
                if kwargs:
                    raise self.error(arg, "positional argument after keyword argument")
                args.append(value)
            else:
                kwargs.append((arg.keyword.value, value))
        return args, kwargs

    def static_function(self, node: cst.BaseExpression) -> Any:
        """The function (or type) a name or a module's attribute passed as an argument refers
        to (np.median, a parameter holding the call's function), else MISSING."""
        if isinstance(node, cst.Name) and (node.value in self.locals or node.value in self.def_names):
            return MISSING
        if not (isinstance(node, cst.Name) or isinstance(node, cst.Attribute) and self._is_module_path(node.value)):
            return MISSING
        found = self.resolver.resolve(node)
        return found if callable(found) and static_values.is_static(found) else MISSING

    def static_callee(self, callee, args: list, kwargs: list) -> tuple[Any, list, list]:
        """The user function called, specialised to the static values the call passes it (strings,
        None, types and functions, its defaults included: static_arguments.py) and, where it tests
        types, to the types of the arguments known here (arrays: lower.array_bindings), and the arguments,
        with None in place of a function (the callee's code has it written in; Numba cannot
        pass one)."""
        if not isinstance(callee, types.FunctionType) or any(isinstance(a, Spread) for a in args):
            return callee, args, kwargs
        signature = own_signature(callee)
        try:
            bound = signature.bind(*args, **dict(kwargs))
        except TypeError:
            return callee, args, kwargs  # (call_arguments says why)
        static, kinds = {}, {}
        tests_types = _tests_types(callee)
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            atom = bound.arguments.get(param.name, MISSING)
            value = atom.value if isinstance(atom, ir.Const) else param.default if atom is MISSING else MISSING
            if value is not MISSING and value is not param.empty and static_values.is_static(value):
                static[param.name] = value
            elif tests_types and isinstance(atom, ir.Name) and atom.id in self.kinds:
                kinds[param.name] = self.kinds[atom.id]  # (an array, or an argument of a known type: lower.py)
        if not static and not kinds:
            return callee, args, kwargs

        def passed(atom):
            if isinstance(atom, ir.Const) and isinstance(atom.value, type):
                return ir.Const(BUILTIN_TYPES.get(atom.value, atom.value))
            return ir.Const(None) if isinstance(atom, ir.Const) and callable(atom.value) else atom

        return (static_values.carrying(callee, static, kinds), [passed(a) for a in args],
                [(k, passed(a)) for k, a in kwargs])

    def dict_call(self, node: cst.Call) -> ir.Atom:
        """dict(a=x, b=y) and dict([("a", x), ("b", y)], c=z): the display {"a": x, "b": y, ...}
        (dict() the empty one)."""
        elements, args = [], list(node.args)
        if args and args[0].keyword is None and not args[0].star and isinstance(args[0].value, (cst.List, cst.Tuple)) \
                and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Tuple) and len(e.value.elements) == 2
                        and not any(isinstance(p, cst.StarredElement) for p in e.value.elements)
                        for e in args[0].value.elements):
            elements = [cst.DictElement(e.value.elements[0].value, e.value.elements[1].value)
                        for e in args.pop(0).value.elements]
        if any(a.star or a.keyword is None for a in args):
            raise self.error(node, "dict(...) is supported in its keyword form, dict(a=x, b=y), and of a display "
                             "of pairs, dict([(\"a\", x), (\"b\", y)])", "write a dict display, {\"a\": x, \"b\": y}")
        return self.dictionary(cst.Dict(elements + [cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value)
                                                    for a in args]))

    def isinstance_call(self, node: cst.Call) -> ir.Atom | None:
        """isinstance(x, dict) of a parameter: decided by the type of the call's argument (the code
        is generated for it, as a JAX trace decides it), as `if` and `assert` decide it. Of anything
        else, the test as written, its types Python's (isinstance(v, float) is not of np.float64,
        which float stands for as a dtype); None where the types are not constants."""
        decided = self.static_decision(node)
        if decided is not MISSING:
            return ir.Const(decided)
        tested = node.args[1].value if len(node.args) == 2 and not any(a.keyword or a.star for a in node.args) else None
        if tested is not None:
            try:
                kind = static_arguments.evaluate(tested, {}, self.static_lookup)
            except Exception:  # noqa: BLE001 - NotStatic: a type that only runs as written
                kind = None
            kinds = kind if isinstance(kind, tuple) else (kind,)
            if any(k in (dict, list, tuple) for k in kinds):
                raise self.error(node, "isinstance(..., dict), (..., list) and (..., tuple) are decided when the "
                                 "code is generated, from the types of the call's arguments: here the object "
                                 "tested is not a parameter of the function (or the function assigns it)",
                                 "test a parameter the function does not assign, or keep the test outside")
            if all(k in (builtins.float, builtins.int, builtins.bool, builtins.complex) for k in kinds):
                return self.assign(ir.Call(builtins.isinstance, (self.expr(node.args[0].value), ir.Const(kind))))
        return None

    def dict_get(self, node: cst.Call, receiver: ir.Atom) -> ir.Atom:
        """d.get("w", default) at a constant key: d["w"] where d holds it, else the default (None
        where none is given), evaluated first as Python evaluates a call's arguments. Code
        generated for a call whose dict's keys are known takes the one branch (dict_loops.py)."""
        if not 1 <= len(node.args) <= 2 or any(a.star or a.keyword for a in node.args):
            raise self.error(node, ".get() takes a key and an optional default here, d.get(\"w\", default)")
        key = self.constant_key(node.args[0].value)
        if key is MISSING:
            raise self.error(node.args[0], ".get() of a dict is supported at a constant key (d.get(\"w\", 0.0)), "
                             "not at a key known only when the function runs",
                             "write the key as a literal, or index the dict: d[k]")
        default = self.expr(node.args[1].value) if len(node.args) == 2 else ir.Const(None)
        result = self.names.temp()
        test = self.assign(ir.Call(runtime.has_key, (receiver, ir.Const(key))))
        found = self.sub_block(lambda: self.emit(ir.Assign(
            (result,), ir.Subscript(receiver, ir.Index((ir.Const(key),))), self.origin)))
        missing = self.sub_block(lambda: self.emit(ir.Assign((result,), default, self.origin)))
        self.emit(ir.If(test, found, missing, self.origin))
        return ir.Name(result)

    def tuple_of_display(self, node: cst.List) -> ir.Atom:
        """A list display as a tuple, and the list displays among its items too (at any depth)."""
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return self.assign(ir.Build("tuple", self.elements(node.elements)))
        return self.assign(ir.Build("tuple", tuple(
            self.tuple_of_display(e.value) if isinstance(e.value, cst.List) else self.expr(e.value)
            for e in node.elements)))

    def method_call(self, node: cst.Call, func: cst.Attribute) -> ir.Atom:
        method = func.attr.value
        if isinstance(func.value, cst.Subscript) and isinstance(func.value.value, cst.Attribute) \
                and func.value.value.attr.value == "at":
            return self.at_update(node, method, func.value)  # JAX's x.at[i].set(v) and friends
        if method == "pop" and not node.args and isinstance(func.value, cst.Name) \
                and func.value.value in self.locals:
            return self.assign(ir.Pop(func.value.value))
        if isinstance(func.value, cst.Name) and func.value.value not in self.locals \
                and captured.is_generator(self.resolver.lookup(func.value.value)):
            return self.draw(node, func.value.value, method)
        receiver = self.expr(func.value)
        if method == "astype":
            if len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
                raise self.error(node, ".astype() takes one argument, the type, here", "write x.astype(np.float32)")
            return self.cast(node, receiver, self.type_atom(node.args[0].value))
        if method == "get" and methods().get(method) is None:
            return self.dict_get(node, receiver)
        called = self.object_method(node, func)
        if called is not None:
            return called
        args, kwargs = self.arguments(node)
        target = methods().get(method)
        held_by_value = not any(hasattr(kind, method) for kind in (np.ndarray, np.random.Generator,
                                                                     np.random.RandomState))
        if target is None and held_by_value and self._root_is_local(func.value):
            # obj.fn(x) of a value that holds a function, which s2s cannot read when it writes the
            # code (it reads functions by name); a TrainState that s2s.jit is given is split so that
            # it can (object_method)
            held = f"{_dotted(func.value)}.{method}"
            raise self.error(node, f"{held}(...) calls what the value {_dotted(func.value)} holds, known only when "
                             "the code runs: s2s reads the code of the functions it calls when it writes derivative "
                             "and compiled code, and finds them by name",
                             "call a module-level function by name, and a model as model.apply(params, x) with "
                             "model a module-level object; a TrainState's apply_fn(...) and apply_gradients(grads=...) "
                             "compile where the state is an argument of the function s2s.jit is given (not rebound "
                             "before, not in a tuple or dict); else compile the gradient of a module-level loss, "
                             "grad_fn = s2s.jit(s2s.grad(loss)), and take the step in Python: "
                             "state = state.apply_gradients(grads=grad_fn(state.params, batch))")
        if target is None:
            raise self.error(node, f"the method .{method}() is not supported",
                             "call the NumPy function instead")
        if method == "reshape" and len(args) > 1:
            args = [self.assign(ir.Build("tuple", tuple(args)))]
        if method == "transpose" and len(args) > 1:
            args = [self.assign(ir.Build("tuple", tuple(args)))]
        return self.assign(ir.Call(target, (receiver, *args), tuple(kwargs)))

    def draw(self, node: cst.Call, name: str, method: str, generator: Any = MISSING) -> ir.Atom:
        """rs.randn(n, d) of a NumPy RandomState or Generator from the closure or the module (or
        np.random.randn(n, d), NumPy's own RandomState, which generated code calls np_random): the
        generator's own draw, run where the function runs (its state advances as under NumPy), a
        constant of the derivative. Numba cannot compile it (backends/failures.py)."""
        generator = self.resolver.lookup(name) if generator is MISSING else generator
        if method.startswith("_") or method in _GENERATOR_STATE or not callable(getattr(generator, method, None)):
            raise self.error(node, f"{name}.{method}() of a NumPy random generator is not supported in a "
                             f"transformed function (draws are: {name}.normal(...), {name}.uniform(...), ...)",
                             f"call {name}.{method}() outside the function")
        self.constants[name] = generator
        args, kwargs = self.arguments(node)
        return self.assign(ir.Call(runtime.draw, (ir.Name(name), ir.Const(method), *args), tuple(kwargs)))

    def starred_items(self, node: cst.BaseExpression) -> list | None:
        """The items of t in f(*t), as atoms, where their number is known here: a tuple or list
        display, or a local name bound once in the function (and never in a loop target) to one;
        else None."""
        items = plain_display_items(node)
        if items is not None:
            return [self.expr(item) for item in items]
        if not isinstance(node, cst.Name) or node.value not in self.locals:
            return None
        count = _bound_once_to_display(self.parsed.node, node.value)
        if count is None:
            return None
        value = self.expr(node)
        if count == 0:
            return []
        names = [self.names.temp() for _ in range(count)]
        if count == 1:
            self.emit(ir.Assign((names[0],), ir.Subscript(value, ir.Index((ir.Const(0),))), self.origin))
        else:
            self.emit(ir.Assign(tuple(names), value, self.origin))
        return [ir.Name(n) for n in names]

    def named_tuple(self, node: cst.Call, cls: type) -> ir.Atom:
        """cls(a, b=...) of a module-level namedtuple class, in code s2s.jit compiles and does not
        differentiate: runtime.named_tuple with the class's module and name (generated code
        imports only np, math and runtime), its fields in order, defaults filled in."""
        args, kwargs = self.arguments(node)
        if any(isinstance(a, Spread) for a in args):
            raise self.error(node, f"making the namedtuple {cls.__name__} from a starred argument is not supported",
                             "pass its fields one by one")
        fields, defaults = cls._fields, getattr(cls, "_field_defaults", {})
        given = dict(zip(fields, args))
        for key, value in kwargs:
            if key not in fields or key in given:
                raise self.error(node, f"{cls.__name__}() is given the field {key} twice or has no such field")
            given[key] = value
        if len(args) > len(fields):
            raise self.error(node, f"{cls.__name__}() takes {len(fields)} fields and is given {len(args)}")
        values = []
        for field in fields:
            if field in given:
                values.append(given[field])
            elif field in defaults and _is_constant(defaults[field]):
                values.append(ir.Const(defaults[field]))
            else:
                raise self.error(node, f"{cls.__name__}() is not given its field {field}", "pass every field")
        return self.assign(ir.Call(runtime.named_tuple, (ir.Const(cls.__module__), ir.Const(cls.__qualname__),
                                                         *values)))

    def user_call(self, node, callee, args, kwargs) -> ir.Atom:
        callee, full = self.call_arguments(node, callee, args, kwargs)
        self.callees[id(callee)] = callee  # (by identity: two callees may share a name)
        return self.assign(ir.Call(callee, tuple(full)))

    def call_arguments(self, node, callee, args, kwargs) -> tuple[Any, list]:
        """(the function called, its arguments by its parameters, defaults filled in)."""
        import inspect

        callee = named_lambda(callee)  # (two lambdas called from one function need two names)
        signature = own_signature(callee)
        args, passed_on = self.spread_arguments(node, callee, signature, args, kwargs)
        try:
            bound = signature.bind(*args, **dict(kwargs))
        except TypeError as exc:
            raise self.error(node, f"call to {callee.__name__} does not match its signature ({exc})")
        full = []
        for param in signature.parameters.values():
            if param.kind is param.VAR_POSITIONAL:  # *args: one tuple (parameter_names)
                if passed_on is not None:
                    full.append(passed_on)
                else:
                    full.append(self.assign(ir.Build("tuple", tuple(bound.arguments.get(param.name, ())))))
            elif param.kind is param.VAR_KEYWORD:
                if bound.arguments.get(param.name):
                    raise self.error(node, f"{callee.__name__} is given keywords its **{param.name} takes "
                                     f"({', '.join(bound.arguments[param.name])}); a transformed function takes "
                                     "no keywords beyond its named parameters",
                                     "name them as parameters of the function (def f(x, *, scale=1.0))")
            elif param.name in bound.arguments:
                full.append(bound.arguments[param.name])
            elif _is_constant(param.default):
                full.append(ir.Const(param.default))
            elif static_values.is_static(param.default):  # (written into the callee: static_callee)
                default = param.default
                full.append(ir.Const(BUILTIN_TYPES.get(default, default) if isinstance(default, type) else None))
            else:
                raise self.error(node, f"the default of {callee.__name__}({param.name}=...) is not a constant",
                                 "pass the argument explicitly")
        return callee, full

    def spread_arguments(self, node, callee, signature, args: list, kwargs: list) -> tuple[list, Any]:
        """(the positional arguments, the tuple callee's *args receives whole or None) of a call
        f(a, *t) whose t has a number of items not known here (a Spread, arguments): t's items
        fill the positional parameters after a that the call leaves to it (t unpacked into them,
        which raises as Python's call would where the numbers differ), or t is the callee's own
        *args tuple where nothing else goes to it."""
        spread = next((a for a in args if isinstance(a, Spread)), None)
        if spread is None:
            return args, None
        before = args[:args.index(spread)]
        if args[-1] is not spread:
            raise self.error(spread.node, "a starred argument of a number of items not known here is supported "
                             "last among the positional arguments", "unpack it into names first (x, y = t)")
        params = list(signature.parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        star = any(p.kind is p.VAR_POSITIONAL for p in params)
        given = {k for k, _ in kwargs}
        rest = positional[len(before):]
        if star and not rest:
            return before, spread.value
        if star or any(p.default is not p.empty or p.name in given for p in rest):
            what = f"*{spread.node.value.value}" if isinstance(spread.node.value, cst.Name) else "the starred argument"
            raise self.error(spread.node, f"the number of items of {what} is not known when s2s reads the function, "
                             f"and {callee.__name__}'s parameters do not fix it (it has defaults or *args after them)",
                             "unpack it into names first (x, y = args) and pass them one by one")
        # (Python's call raises a TypeError where t has another number of items: so does this one)
        count = self.assign(ir.Call(builtins.len, (spread.value,)))
        wrong = self.assign(ir.Call(operator.ne, (count, ir.Const(len(rest)))))
        taken = len(before) + len(rest)
        message = f"{callee.__name__}() takes {taken} positional argument{'s' if taken != 1 else ''}; " \
                  f"*{_dotted(spread.node.value) or 't'} gives another number"
        self.emit(ir.If(wrong, [ir.ExprStmt(ir.Call(runtime.raise_exception, (ir.Const("TypeError"), ir.Const(message))),
                                            self.origin)], [], self.origin))
        if len(rest) == 1:
            item = self.assign(ir.Subscript(spread.value, ir.Index((ir.Const(0),))))
            return before + [item], None
        names = [self.names.temp() for _ in rest]
        self.emit(ir.Assign(tuple(names), spread.value, self.origin))
        return before + [ir.Name(n) for n in names], None


@dataclasses.dataclass
class Spread:
    """t of f(*t) where the number of its items is not known when s2s reads the function: the
    call's binding places it (ExpressionLowering.spread_arguments)."""

    value: ir.Atom
    node: cst.Arg


def _bound_once_to_display(function: cst.FunctionDef, name: str) -> int | None:
    """The number of items of the tuple display a local name is bound to, where the function
    binds it exactly once, by a plain assignment (`t = (x, y)`); else None (a list may grow)."""
    bindings = []
    for n in walk_own(function.body):
        if isinstance(n, cst.Assign):
            for target in n.targets:
                for bound in walk_nodes(target.target):
                    if isinstance(bound, cst.Name) and bound.value == name:
                        bindings.append(n.value if target.target is bound else None)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName)):
            target = n.name if isinstance(n, cst.AsName) else n.target
            if any(isinstance(b, cst.Name) and b.value == name for b in walk_nodes(target)):
                bindings.append(None)
    if name in {p.name.value for p in (*function.params.params, *function.params.kwonly_params,
                                       *function.params.posonly_params)}:
        return None
    if len(bindings) != 1 or not isinstance(bindings[0], cst.Tuple):
        return None
    items = plain_display_items(bindings[0])
    return None if items is None else len(items)


def _named_where_defined(cls: type) -> bool:
    """Is cls found again at its module and qualified name (a class generated code can name)?"""
    try:
        return runtime.named_class(cls.__module__, cls.__qualname__) is cls
    except (ImportError, AttributeError):
        return False


def _is_distribution(obj: Any) -> bool:
    """A scipy.stats distribution object (norm, multivariate_normal); scipy.stats is imported only
    when the object's class comes from it."""
    if not (type(obj).__module__ or "").startswith("scipy.stats"):
        return False
    from scipy.stats import rv_continuous, rv_discrete
    from scipy.stats._multivariate import multi_rv_generic

    return isinstance(obj, (rv_continuous, rv_discrete, multi_rv_generic))


def _is_frozen(obj: Any) -> bool:
    """A frozen scipy.stats distribution (norm(0, 1), multivariate_normal(mean, cov))."""
    if not (type(obj).__module__ or "").startswith("scipy.stats"):
        return False
    from scipy.stats._distn_infrastructure import rv_frozen
    from scipy.stats._multivariate import multi_rv_frozen

    return isinstance(obj, (rv_frozen, multi_rv_frozen))


def _distribution_name(obj: Any) -> str:
    """norm for scipy.stats.norm, multivariate_normal for its multivariate_normal."""
    import scipy.stats

    obj = getattr(obj, "dist", obj) if _is_frozen(obj) else obj
    name = getattr(obj, "name", None)
    # (by its class: a frozen distribution's dist is an instance of its own)
    if isinstance(name, str) and type(getattr(scipy.stats, name, None)) is type(obj):
        return name
    return next((n for n in dir(scipy.stats) if type(getattr(scipy.stats, n)) is type(obj)), type(obj).__name__)


# Functions that join a sequence of arrays, each item made an array first (as NumPy's asarray does).
JOINS = (np.hstack, np.vstack, np.dstack, np.concatenate, np.stack, np.column_stack)


def _array_operands(callee, n_args: int) -> tuple:
    """The positions of a call's array operands where NumPy takes a list or tuple display as an
    array (a ufunc's inputs; np.where's x and y: Facts.operands), not its shapes or axes."""
    return tuple(k for k in facts(callee).operands if k < n_args)


def _a_display_of_items(node: cst.Call, callee) -> bool:
    """sum([a, b]), sum((a, b), start), max([a, b]): one list or tuple display with no starred
    items, no keywords, and (for sum only) a start."""
    most = 2 if callee is builtins.sum else 1
    if not node.args or len(node.args) > most or any(a.keyword or a.star for a in node.args):
        return False
    display = node.args[0].value
    return isinstance(display, (cst.List, cst.Tuple)) and not any(
        isinstance(e, cst.StarredElement) for e in display.elements)


_TESTS_TYPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _tests_types(fn: types.FunctionType, seen: frozenset = frozenset()) -> bool:
    """Does fn, or a function of its module it calls (at any depth), test types with isinstance?
    Then the types of the arguments known at a call are passed down to it (static_callee)."""
    known = _TESTS_TYPES.get(fn)
    if known is not None:
        return known
    seen = seen | {fn}
    found = "isinstance" in fn.__code__.co_names or any(
        isinstance(called, types.FunctionType) and called not in seen and called.__module__ == fn.__module__
        and _tests_types(called, seen)
        for called in (fn.__globals__.get(name) for name in fn.__code__.co_names))
    if found or not seen - {fn}:  # (a no inside a cycle may miss the functions still being asked)
        _TESTS_TYPES[fn] = found
    return found
