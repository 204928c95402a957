"""Lower a parsed user function into the core language of ir/nodes.py.

One pass over the libcst tree: every expression becomes a chain of single-operation
assignments to temporaries (_t1, _t2, ...), augmented and chained assignments are
desugared, method calls and attributes become the NumPy functions they stand for, and
calls are resolved to the real objects they name. A second pass removes break,
continue and early return in favour of flags, so that every transform only sees
structured control flow.
"""

from __future__ import annotations

import builtins
import numbers
import operator
import types
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import nodes as ir
from .. import runtime
from ..errors import Origin, S2SError
from .nested import NESTED_TRANSFORMS
from .source import MISSING, ParsedFunction, Resolver, is_user_function, parse_function

BINARY_OPS = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
    cst.MatrixMultiply: operator.matmul,
}
AUG_OPS = {
    cst.AddAssign: operator.add,
    cst.SubtractAssign: operator.sub,
    cst.MultiplyAssign: operator.mul,
    cst.DivideAssign: operator.truediv,
    cst.FloorDivideAssign: operator.floordiv,
    cst.ModuloAssign: operator.mod,
    cst.PowerAssign: operator.pow,
    cst.MatrixMultiplyAssign: operator.matmul,
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
# x.method(...) -> np.function(x, ...)
METHODS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "var": np.var,
    "std": np.std,
    "dot": np.dot,
    "ravel": np.ravel,
    "copy": np.copy,
    "transpose": np.transpose,
    "reshape": np.reshape,
    "squeeze": np.squeeze,
    "trace": np.trace,
    "clip": np.clip,
}
PLAIN_ATTRIBUTES = {"shape", "ndim", "size", "dtype"}
SCALAR_TYPES = (numbers.Number, np.number, np.bool_)


def _is_constant(value: Any) -> bool:
    if isinstance(value, (bool, int, float, complex, str, type(None), np.number, np.bool_)):
        return True
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return isinstance(value, type) and issubclass(value, np.generic)


def _local_names(node: cst.FunctionDef) -> set[str]:
    """Every name the function binds (params and assignment targets)."""
    names = {p.name.value for p in node.params.params}

    class Collect(cst.CSTVisitor):
        def _target(self, target: cst.BaseExpression) -> None:
            if isinstance(target, cst.Name):
                names.add(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._target(element.value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._target(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._target(node.target)

    node.body.visit(Collect())
    return names


class Normalizer:
    def __init__(self, parsed: ParsedFunction):
        self.parsed = parsed
        self.fn = parsed.fn
        self.resolver = Resolver(parsed.fn)
        self.locals = _local_names(parsed.node)
        self.names = ir.Names(self.locals)
        self.callees: dict[str, Any] = {}
        self.constants: dict[str, Any] = {}
        self.references: set[tuple[str, str, str]] = set()
        self.out: list = []  # statements of the block being built
        self.origin: Origin | None = None
        self.loop_depth = 0

    # ---- helpers ---------------------------------------------------------------

    def error(self, node: cst.CSTNode, message: str, hint: str = "") -> S2SError:
        return self.parsed.error(node, message, hint)

    def emit(self, stmt) -> None:
        self.out.append(stmt)

    def assign(self, expr: ir.Expr, target: str | None = None) -> ir.Atom:
        if target is None:
            if isinstance(expr, (ir.Name, ir.Const)):
                return expr
            target = self.names.temp()
        self.emit(ir.Assign((target,), expr, self.origin))
        return ir.Name(target)

    def sub_block(self, build) -> list:
        saved = self.out
        self.out = []
        try:
            build()
            return self.out
        finally:
            self.out = saved

    # ---- the function ----------------------------------------------------------

    def function(self) -> ir.Function:
        node = self.parsed.node
        params = node.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT and params.star_arg is not None:
            raise self.error(params.star_arg, "*args parameters are not supported",
                             "list the parameters explicitly")
        if params.star_kwarg is not None or params.kwonly_params or params.posonly_params:
            raise self.error(node.params, "only plain positional parameters are supported",
                             "remove *, / and **kwargs from the signature")
        names = [p.name.value for p in params.params]
        self.origin = self.parsed.origin(node)
        body = self.sub_block(lambda: self.block(node.body.body))
        if not any(isinstance(s, ir.Return) for s in ir.walk(body)):
            raise self.error(node, f"{node.name.value} has no return statement",
                             "return the value to differentiate")
        body = lower_control_flow(body, self.names, self.origin)
        return ir.Function(
            name=node.name.value,
            params=names,
            body=body,
            origin=self.parsed.origin(node),
            filename=self.parsed.filename,
            source_hash=self.parsed.source_hash,
            callees=self.callees,
            constants=self.constants,
            references=sorted(self.references),
        )

    # ---- statements ------------------------------------------------------------

    def block(self, statements) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        self.origin = self.parsed.origin(node)
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(small)
        elif isinstance(node, cst.BaseSmallStatement):  # the body of `def f(x): return ...`
            self.small_statement(node)
        elif isinstance(node, cst.If):
            self.if_statement(node)
        elif isinstance(node, cst.For):
            self.for_statement(node)
        elif isinstance(node, cst.While):
            self.while_statement(node)
        elif isinstance(node, cst.FunctionDef):
            raise self.error(node, "nested function definitions are not supported",
                             "define the helper at module level; s2s differentiates through calls to it")
        elif isinstance(node, cst.ClassDef):
            raise self.error(node, "class definitions are not supported",
                             "define the class at module level")
        elif isinstance(node, cst.Try):
            raise self.error(node, "try statements are not supported",
                             "move the try/except outside the differentiated function")
        elif isinstance(node, cst.With):
            raise self.error(node, "with statements are not supported",
                             "move the with block outside the differentiated function")
        else:
            raise self.error(node, f"{type(node).__name__} statements are not supported")

    def small_statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign_to(target.target, value, node, rename=len(node.targets) == 1)
        elif isinstance(node, cst.AnnAssign):
            if node.value is None:
                return
            self.assign_to(node.target, self.expr(node.value), node)
        elif isinstance(node, cst.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, cst.Expr):
            self.expression_statement(node)
        elif isinstance(node, cst.Return):
            if node.value is None:
                raise self.error(node, "a bare return has no value to differentiate",
                                 "return a value")
            self.emit(ir.Return(self.expr(node.value), self.origin))
        elif isinstance(node, cst.Break):
            if not self.loop_depth:
                raise self.error(node, "break outside a loop")
            self.emit(ir.Break(self.origin))
        elif isinstance(node, cst.Continue):
            if not self.loop_depth:
                raise self.error(node, "continue outside a loop")
            self.emit(ir.Continue(self.origin))
        elif isinstance(node, cst.Pass):
            return
        elif isinstance(node, cst.Global):
            raise self.error(node, "global statements are not supported",
                             "pass the value in as an argument and return the new value")
        elif isinstance(node, cst.Nonlocal):
            raise self.error(node, "nonlocal statements are not supported",
                             "pass the value in as an argument and return the new value")
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            raise self.error(node, "imports inside a differentiated function are not supported",
                             "import at module level")
        elif isinstance(node, cst.Assert):
            raise self.error(node, "assert statements are not supported",
                             "check the inputs before calling the transformed function")
        elif isinstance(node, cst.Raise):
            raise self.error(node, "raise statements are not supported",
                             "validate inputs outside the differentiated function")
        elif isinstance(node, cst.Del):
            raise self.error(node, "del statements are not supported", "remove the del")
        else:
            raise self.error(node, f"{type(node).__name__} statements are not supported")

    def expression_statement(self, node: cst.Expr) -> None:
        value = node.value
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
            return  # a docstring
        if isinstance(value, (cst.Yield, cst.Await)):
            self.expr(value)  # raises the specific refusal
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "append" and isinstance(value.func.value, cst.Name) \
                and value.func.value.value in self.locals and len(value.args) == 1:
            # A tape of generated reverse code: tape.append(v).
            self.emit(ir.Push(value.func.value.value, self.expr(self.positional(value.args[0])), self.origin))
            return
        if isinstance(value, cst.Call):
            callee = self.resolver.resolve(value.func)
            checks = (runtime.require_number, runtime.require_unshared)
            if callee in (runtime.index_add, runtime.clear) + checks:
                # Statements of generated code, when it is transformed again.
                args, kwargs = self.arguments(value)
                mutates = args[0].id if callee not in checks and isinstance(args[0], ir.Name) else None
                self.emit(ir.ExprStmt(ir.Call(callee, tuple(args), tuple(kwargs)), self.origin, mutates))
                return
        if isinstance(value, cst.Call) and self.resolver.resolve(value.func) is builtins.print \
                and not (isinstance(value.func, cst.Name) and value.func.value in self.locals):
            args = tuple(self.print_argument(a) for a in value.args)
            self.emit(ir.ExprStmt(ir.Call(builtins.print, args), self.origin))
            return
        raise self.error(node, "an expression statement whose value is unused is not supported",
                         "assign its result to a name (only print(...) may stand alone)")

    def print_argument(self, arg: cst.Arg) -> ir.Atom:
        if arg.keyword is not None or arg.star:
            raise self.error(arg, "print takes only positional arguments here")
        if isinstance(arg.value, cst.SimpleString):
            return ir.Const(arg.value.evaluated_value)
        return self.expr(arg.value)

    def assign_to(self, target: cst.BaseExpression, value: ir.Atom, node: cst.CSTNode,
                  rename: bool = True) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            if rename and isinstance(value, ir.Name) and value.id.startswith("_t") and self.out \
                    and isinstance(self.out[-1], ir.Assign) and self.out[-1].targets == (value.id,) \
                    and value.id not in self.locals \
                    and not (isinstance(self.out[-1].value, ir.Subscript)
                             and self.out[-1].value.value == ir.Name(name)):
                # y = <expr>: give the last temporary the user's name.
                self.out[-1].targets = (name,)
                self.names.taken.discard(value.id)
                self.names.counter -= 1 if self.names.counter and value.id == f"_t{self.names.counter}" else 0
                return
            self.emit(ir.Assign((name,), value, self.origin))
        elif isinstance(target, (cst.Tuple, cst.List)):
            names = []
            for element in target.elements:
                if isinstance(element, cst.StarredElement) or not isinstance(element.value, cst.Name):
                    raise self.error(element, "only unpacking into plain names is supported",
                                     "unpack into names, then index or unpack those")
                names.append(element.value.value)
            if len(set(names)) != len(names):
                raise self.error(target, "the same name appears twice in an unpacking")
            if len(names) == 1:
                raise self.error(target, "unpacking a single element is not supported",
                                 "write `a = value[0]`")
            self.emit(ir.Assign(tuple(names), value, self.origin))
        elif isinstance(target, cst.Subscript):
            base = self.subscript_base(target)
            index = self.index(target)
            self.emit(ir.SetItem(base, index, value, None, self.origin))
        elif isinstance(target, cst.Attribute):
            raise self.error(target, "assigning to an attribute is not supported",
                             "build a new value instead (namedtuple._replace is not supported either)")
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def subscript_base(self, target: cst.Subscript) -> str:
        if not isinstance(target.value, cst.Name) or target.value.value not in self.locals:
            raise self.error(target, "only writes into a local array variable are supported",
                             "write x[i, j] = v rather than x[i][j] = v")
        return target.value.value

    def aug_assign(self, node: cst.AugAssign) -> None:
        op = AUG_OPS.get(type(node.operator))
        if op is None:
            raise self.error(node, f"augmented assignment {type(node.operator).__name__} is not supported")
        target = node.target
        if isinstance(target, cst.Name):
            value = self.expr(node.value)
            name = target.value
            self.emit(ir.Assign((name,), ir.Call(op, (ir.Name(name), value)), self.origin, inplace=True))
        elif isinstance(target, cst.Subscript):
            base = self.subscript_base(target)
            index = self.index(target)
            value = self.expr(node.value)
            if op in (operator.add, operator.sub):
                self.emit(ir.SetItem(base, index, value, "+" if op is operator.add else "-", self.origin))
            else:
                old = self.assign(ir.Subscript(ir.Name(base), index))
                new = self.assign(ir.Call(op, (old, value)))
                self.emit(ir.SetItem(base, index, new, None, self.origin))
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def if_statement(self, node: cst.If) -> None:
        origin = self.origin
        test = self.expr(node.test)
        body = self.sub_block(lambda: self.block(node.body.body))
        orelse: list = []
        if isinstance(node.orelse, cst.If):
            orelse = self.sub_block(lambda: self.statement(node.orelse))
        elif isinstance(node.orelse, cst.Else):
            orelse = self.sub_block(lambda: self.block(node.orelse.body.body))
        self.emit(ir.If(test, body, orelse, origin))

    def for_statement(self, node: cst.For) -> None:
        origin = self.origin
        if node.orelse is not None:
            raise self.error(node.orelse, "for ... else is not supported",
                             "use a flag variable instead")
        if node.asynchronous is not None:
            raise self.error(node, "async for is not supported")
        iterator = node.iter
        call = iterator if isinstance(iterator, cst.Call) else None
        callee = self.resolver.resolve(call.func) if call is not None else MISSING
        if call is not None and isinstance(call.func, cst.Name) and call.func.value in self.locals:
            callee = MISSING
        prologue: list[tuple[str, ir.Expr]] = []  # assignments at the top of the body
        if callee is builtins.range:
            if not isinstance(node.target, cst.Name):
                raise self.error(node.target, "a range loop needs a single loop variable")
            args = [self.expr(self.positional(a)) for a in call.args]
            if not 1 <= len(args) <= 3:
                raise self.error(call, "range takes one to three arguments")
            start, stop, step = (
                (ir.Const(0), args[0], ir.Const(1)) if len(args) == 1
                else (args[0], args[1], ir.Const(1)) if len(args) == 2 else tuple(args)
            )
            var = node.target.value
        elif callee is builtins.enumerate:
            if len(call.args) != 1:
                raise self.error(call, "enumerate takes one argument here")
            names = self.target_names(node.target, 2)
            seq = self.sequence(self.expr(self.positional(call.args[0])))
            start, step = ir.Const(0), ir.Const(1)
            stop = self.assign(ir.Call(len, (seq,)))
            var = names[0]
            prologue.append((names[1], ir.Subscript(seq, ir.Index((ir.Name(var),)))))
        elif callee is builtins.zip:
            names = self.target_names(node.target, len(call.args))
            seqs = [self.sequence(self.expr(self.positional(a))) for a in call.args]
            lengths = [self.assign(ir.Call(len, (s,))) for s in seqs]
            stop = self.assign(ir.Call(min, tuple(lengths))) if len(lengths) > 1 else lengths[0]
            start, step = ir.Const(0), ir.Const(1)
            var = self.names.fresh("_i")
            for name, seq in zip(names, seqs):
                prologue.append((name, ir.Subscript(seq, ir.Index((ir.Name(var),)))))
        else:
            if not isinstance(node.target, cst.Name):
                raise self.error(node.target, "unpacking in a for loop over an array is not supported",
                                 "loop over range(len(x)) and index")
            seq = self.sequence(self.expr(iterator))
            start, step = ir.Const(0), ir.Const(1)
            stop = self.assign(ir.Call(len, (seq,)))
            var = self.names.fresh("_i")
            prologue.append((node.target.value, ir.Subscript(seq, ir.Index((ir.Name(var),)))))
        self.loop_depth += 1
        try:
            def build_body():
                for name, expr in prologue:
                    self.emit(ir.Assign((name,), expr, origin))
                self.block(node.body.body)
            body = self.sub_block(build_body)
        finally:
            self.loop_depth -= 1
        if var in {w for s in ir.walk(body) for w in ir.stmt_writes(s)}:
            # The body rebinds the loop variable: iterate over a fresh one.
            fresh = self.names.fresh(f"_{var}")
            body.insert(0, ir.Assign((var,), ir.Name(fresh), origin))
            var = fresh
        self.emit(ir.For(var, start, stop, step, body, origin))

    def sequence(self, atom: ir.Atom) -> ir.Atom:
        """The object a for loop iterates over, kept in a name of its own."""
        if isinstance(atom, ir.Const):
            raise S2SError("cannot loop over a constant", self.origin)
        # Python iterates over the object, even if the name is rebound inside the loop.
        return self.assign(atom, self.names.fresh("_seq"))

    def target_names(self, target: cst.BaseExpression, count: int) -> list[str]:
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != count or not all(
            isinstance(e.value, cst.Name) for e in target.elements
        ):
            raise self.error(target, f"expected {count} loop variables")
        return [e.value.value for e in target.elements]

    def while_statement(self, node: cst.While) -> None:
        origin = self.origin
        if node.orelse is not None:
            raise self.error(node.orelse, "while ... else is not supported",
                             "use a flag variable instead")
        holder: list[ir.Atom] = []
        cond = self.sub_block(lambda: holder.append(self.expr(node.test)))
        test = holder[0]
        if isinstance(test, ir.Const):
            if not test.value:
                return
            if not any(isinstance(n, cst.Break) for n in _walk_cst(node.body)):
                raise self.error(node.test, "a while True loop without break never ends",
                                 "write the exit condition into the while test")
        self.loop_depth += 1
        try:
            body = self.sub_block(lambda: self.block(node.body.body))
        finally:
            self.loop_depth -= 1
        self.emit(ir.While(cond, test, body, origin))

    # ---- expressions -----------------------------------------------------------

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
            value = self.expr(node.value)
            return self.assign(ir.Subscript(value, self.index(node)))
        if isinstance(node, cst.Tuple):
            return self.assign(ir.Build("tuple", self.elements(node.elements)))
        if isinstance(node, cst.List):
            return self.assign(ir.Build("list", self.elements(node.elements)))
        if isinstance(node, cst.Dict):
            return self.dictionary(node)
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            raise self.error(node, "comprehensions are not supported",
                             "write the loop out, filling an array made with np.zeros or np.empty")
        if isinstance(node, cst.Lambda):
            raise self.error(node, "lambda expressions are not supported",
                             "define a function with def at module level")
        if isinstance(node, cst.FormattedString):
            raise self.error(node, "f-strings are not supported", "pass the values to print separately")
        if isinstance(node, (cst.Yield, cst.Await)):
            raise self.error(node, f"{type(node).__name__.lower()} is not supported",
                             "s2s differentiates plain functions, not generators or coroutines")
        if isinstance(node, cst.NamedExpr):
            raise self.error(node, "assignment expressions (:=) are not supported",
                             "assign in a statement of its own")
        if isinstance(node, cst.Set):
            raise self.error(node, "sets are not supported")
        raise self.error(node, f"{type(node).__name__} expressions are not supported")

    def name(self, node: cst.Name) -> ir.Atom:
        name = node.value
        if name in self.locals:
            return ir.Name(name)
        if name in ("True", "False", "None"):
            return ir.Const({"True": True, "False": False, "None": None}[name])
        value = self.resolver.lookup(name)
        if value is MISSING:
            raise self.error(node, f"the name {name!r} is not defined")
        if isinstance(value, SCALAR_TYPES) or (isinstance(value, tuple) and _is_constant(value)):
            self.constants[name] = value
            return ir.Name(name)
        if isinstance(value, np.ndarray):
            raise self.error(node, f"the global array {name!r} cannot be baked into generated code",
                             "pass it to the function as an argument")
        raise self.error(node, f"the global {name!r} ({type(value).__name__}) cannot be used as a value",
                         "pass it as an argument")

    def unary(self, node: cst.UnaryOperation) -> ir.Atom:
        operand = self.expr(node.expression)
        if isinstance(node.operator, cst.Plus):
            return operand
        if isinstance(node.operator, cst.Minus):
            if isinstance(operand, ir.Const) and isinstance(operand.value, numbers.Number):
                return ir.Const(-operand.value)
            return self.assign(ir.Call(operator.neg, (operand,)))
        if isinstance(node.operator, cst.Not):
            return self.assign(ir.Call(operator.not_, (operand,)))
        raise self.error(node, "the ~ operator is not supported")

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

    def if_expression(self, node: cst.IfExp) -> ir.Atom:
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
        if isinstance(root, cst.Name) and root.value not in self.locals:
            value = self.resolver.resolve(node)
            if value is MISSING:
                raise self.error(node, "unknown attribute")
            if _is_constant(value) and not isinstance(value, str):
                return ir.Const(value)
            raise self.error(node, "this attribute cannot be used as a value here")
        base = self.expr(node.value)
        attr = node.attr.value
        if attr == "T":
            return self.assign(ir.Call(np.transpose, (base,)))
        if attr in PLAIN_ATTRIBUTES or not attr.startswith("_"):
            return self.assign(ir.Attribute(base, attr))
        raise self.error(node, f"the attribute .{attr} is not supported")

    def call(self, node: cst.Call) -> ir.Atom:
        func = node.func
        if isinstance(func, cst.Attribute) and not self._is_module_path(func.value):
            return self.method_call(node, func)
        if isinstance(func, cst.Name) and func.value in self.locals:
            raise self.error(node, "calling a local variable is not supported",
                             "call module-level functions by name")
        callee = self.resolver.resolve(func)
        if callee is MISSING:
            raise self.error(func, "cannot resolve the called function",
                             "call numpy, math, builtins or module-level functions")
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
        if callee is builtins.print:
            raise self.error(node, "print(...) returns None; call it as a statement")
        if callee in (builtins.range, builtins.enumerate, builtins.zip):
            raise self.error(node, f"{callee.__name__}(...) is supported only as the iterable of a for loop")
        args, kwargs = self.arguments(node, lists_as_tuples=not is_user_function(callee))
        if is_user_function(callee):
            # For the cache: the name the caller used must still refer to this function.
            self.references.add((_dotted(func), callee.__module__, callee.__qualname__))
            return self.user_call(node, callee, args, kwargs)
        if callee is np.matmul and len(args) == 2 and not kwargs:
            callee = operator.matmul  # the same function; Numba compiles `@`, not np.matmul
        if callee is np.array or callee is np.asarray:
            if kwargs:
                raise self.error(node, f"{callee.__name__} with keyword arguments is not supported")
        return self.assign(ir.Call(callee, tuple(args), tuple(kwargs)))

    def _is_module_path(self, node: cst.BaseExpression) -> bool:
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value in self.locals:
            return False
        return isinstance(self.resolver.resolve(node), types.ModuleType)

    def arguments(self, node: cst.Call, lists_as_tuples: bool = False):
        args, kwargs = [], []
        for arg in node.args:
            if arg.star:
                raise self.error(arg, "starred arguments are not supported", "pass arguments one by one")
            if lists_as_tuples and isinstance(arg.value, cst.List):
                # np.array([a, b]) == np.array((a, b)), and Numba types tuples, not lists.
                value = self.assign(ir.Build("tuple", self.elements(arg.value.elements)))
            else:
                value = self.expr(arg.value)
            if arg.keyword is None:
                if kwargs:
                    raise self.error(arg, "positional argument after keyword argument")
                args.append(value)
            else:
                kwargs.append((arg.keyword.value, value))
        return args, kwargs

    def method_call(self, node: cst.Call, func: cst.Attribute) -> ir.Atom:
        method = func.attr.value
        if method == "pop" and not node.args and isinstance(func.value, cst.Name) \
                and func.value.value in self.locals:
            return self.assign(ir.Pop(func.value.value))
        receiver = self.expr(func.value)
        args, kwargs = self.arguments(node)
        target = METHODS.get(method)
        if target is None:
            raise self.error(node, f"the method .{method}() is not supported",
                             "call the NumPy function instead")
        if method == "reshape" and len(args) > 1:
            args = [self.assign(ir.Build("tuple", tuple(args)))]
        if method == "transpose" and len(args) > 1:
            args = [self.assign(ir.Build("tuple", tuple(args)))]
        return self.assign(ir.Call(target, (receiver, *args), tuple(kwargs)))

    def jvp_call(self, node: cst.Call, entry_of: Callable) -> ir.Atom:
        """s2s.jvp(f, (x, ...), (t, ...)) inside a transformed function: a call to f's generated
        forward mode, f_jvp(x, ..., t, ...), which the transform reads like user code. So
        s2s.vmap and s2s.jit of a function that calls s2s.jvp compile, as JAX's vmap(jvp) does."""
        hint = "write s2s.jvp(f, (x, ...), (t, ...)) with a module-level function and tuple displays"
        if len(node.args) != 3 or any(arg.keyword or arg.star for arg in node.args):
            raise self.error(node, "s2s.jvp inside a transformed function takes three positional arguments", hint)
        fun = self.resolver.resolve(node.args[0].value)
        primals, tangents = node.args[1].value, node.args[2].value
        if not is_user_function(fun) or not all(isinstance(v, (cst.Tuple, cst.List)) for v in (primals, tangents)) \
                or len(primals.elements) != len(tangents.elements):
            raise self.error(node, "s2s.jvp inside a transformed function needs a module-level function and "
                             "tuples of primals and tangents of one length", hint)
        try:
            entry = entry_of(fun)
        except S2SError as exc:
            raise self.error(node, f"s2s.jvp of {fun.__name__}: {exc}") from None
        self.references.add((_dotted(node.args[0].value), fun.__module__, fun.__qualname__))
        args = [self.expr(e.value) for e in primals.elements] + [self.expr(e.value) for e in tangents.elements]
        return self.user_call(node, entry, args, [])

    def user_call(self, node, callee, args, kwargs) -> ir.Atom:
        import inspect

        try:
            signature = inspect.signature(callee)
            bound = signature.bind(*args, **dict(kwargs))
        except TypeError as exc:
            raise self.error(node, f"call to {callee.__name__} does not match its signature ({exc})")
        full = []
        for param in signature.parameters.values():
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.POSITIONAL_ONLY):
                raise self.error(node, f"{callee.__name__} has *args or keyword-only parameters",
                                 "give it plain positional parameters")
            if param.name in bound.arguments:
                full.append(bound.arguments[param.name])
            elif _is_constant(param.default):
                full.append(ir.Const(param.default))
            else:
                raise self.error(node, f"the default of {callee.__name__}({param.name}=...) is not a constant",
                                 "pass the argument explicitly")
        self.callees[callee.__name__] = callee
        return self.assign(ir.Call(callee, tuple(full)))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _walk_cst(node):
    yield node
    for child in node.children:
        yield from _walk_cst(child)


def normalize(fn: Any) -> ir.Function:
    """Parse and lower a user function into the core language."""
    return Normalizer(parse_function(fn)).function()


# ---- control-flow lowering --------------------------------------------------------


def lower_control_flow(body: list, names: ir.Names, origin: Origin) -> list:
    """Replace break, continue and early returns by flags and guarded blocks.

    Every loop that is left early gets `_stop` (set by break and by return) and every
    loop body that is cut short gets `_skip` (set by break, continue and return); the
    rest of a block after a statement that may set them runs under `if not _skip:`.
    Returns before the end store `_retval` and set `_returned`.
    """
    returns = [s for s in ir.walk(body) if isinstance(s, ir.Return)]
    simple = len(returns) == 1 and body and body[-1] is returns[0]
    has_exits = any(isinstance(s, (ir.Break, ir.Continue)) for s in ir.walk(body))
    if simple and not has_exits:
        return body
    if simple:
        final = body.pop()
    else:
        final = None
    lowering = _Lowering(names, not simple)
    lowered = lowering.block(body, loops=[])
    if simple:
        return lowered + [final]
    init = [ir.Assign((lowering.returned,), ir.Const(False), origin)]
    return init + lowered + [ir.Return(ir.Name(lowering.retval), origin)]


class _Lowering:
    def __init__(self, names: ir.Names, early_returns: bool):
        self.names = names
        self.returned = names.fresh("_returned") if early_returns else None
        self.retval = names.fresh("_retval") if early_returns else None

    def block(self, stmts: list, loops: list) -> list:
        """loops: (stop, skip) flag names of the enclosing loops, innermost last."""
        out: list = []
        for k, stmt in enumerate(stmts):
            lowered, exits = self.statement(stmt, loops)
            out += lowered
            if exits and k + 1 < len(stmts):
                flag = loops[-1][1] if loops else self.returned
                rest = self.block(stmts[k + 1:], loops)
                if rest:
                    out.append(ir.If(ir.Name(flag), rest, [], stmt.origin, negated=True))
                break
        return out

    def statement(self, stmt, loops):
        """The lowered statements and whether they may leave the enclosing block early."""
        o = stmt.origin
        if isinstance(stmt, ir.Break):
            stop, skip = loops[-1]
            return [ir.Assign((stop,), ir.Const(True), o), ir.Assign((skip,), ir.Const(True), o)], True
        if isinstance(stmt, ir.Continue):
            return [ir.Assign((loops[-1][1],), ir.Const(True), o)], True
        if isinstance(stmt, ir.Return):
            out = [ir.Assign((self.retval,), stmt.value, o),
                   ir.Assign((self.returned,), ir.Const(True), o)]
            for stop, skip in loops:
                out += [ir.Assign((stop,), ir.Const(True), o), ir.Assign((skip,), ir.Const(True), o)]
            return out, True
        if isinstance(stmt, ir.If):
            body = self.block(stmt.body, loops)
            orelse = self.block(stmt.orelse, loops)
            exits = _leaves(stmt.body) or _leaves(stmt.orelse)
            return [ir.If(stmt.test, body, orelse, o, stmt.negated)], exits
        if isinstance(stmt, (ir.For, ir.While)):
            return self.loop(stmt, loops)
        return [stmt], False

    def loop(self, stmt, loops):
        o = stmt.origin
        inner = _leaves(stmt.body, in_loop=True)
        if not inner:
            body = self.block(stmt.body, loops + [(None, None)])
            stmt.body = body
            return [stmt], False
        stop = self.names.fresh("_stop")
        skip = self.names.fresh("_skip")
        loop_has_stop = any(isinstance(s, (ir.Break, ir.Return)) for s in _own_exits(stmt.body))
        body = self.block(stmt.body, loops + [(stop, skip)])
        body = [ir.Assign((skip,), ir.Name(stop) if loop_has_stop else ir.Const(False), o)] + body
        if loop_has_stop and isinstance(stmt, ir.For):
            body = [ir.Assign((skip,), ir.Name(stop), o),
                    ir.If(ir.Name(skip), body[1:], [], o, negated=True)]
        stmt.body = body
        out = [ir.Assign((stop,), ir.Const(False), o)] if loop_has_stop else []
        if isinstance(stmt, ir.While) and loop_has_stop:
            # Test the loop condition only while no break or return has happened.
            go = self.names.fresh("_go")
            cond = stmt.cond + [ir.Assign((go,), stmt.test, o)]
            stmt.cond = [ir.Assign((go,), ir.Const(False), o), ir.If(ir.Name(stop), cond, [], o, negated=True)]
            stmt.test = ir.Name(go)
        out.append(stmt)
        returns_inside = any(isinstance(s, ir.Return) for s in ir.walk(stmt.body)) or any(
            isinstance(s, ir.Assign) and s.targets == (self.returned,) for s in ir.walk(stmt.body))
        if returns_inside:
            return out, True
        return out, False


def _own_exits(block):
    """break/continue/return statements that leave this loop (not nested loops')."""
    for stmt in block:
        if isinstance(stmt, (ir.Break, ir.Continue, ir.Return)):
            yield stmt
        elif isinstance(stmt, ir.If):
            yield from _own_exits(stmt.body)
            yield from _own_exits(stmt.orelse)
        elif isinstance(stmt, (ir.For, ir.While)):
            yield from (s for s in ir.walk(stmt.body) if isinstance(s, ir.Return))


def _leaves(block, in_loop: bool = False) -> bool:
    return any(True for _ in _own_exits(block))
