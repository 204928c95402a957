"""Turn the core language and rule instances into formatted Python source.

Statements are built as Python `ast` nodes; comments travel as marker statements that
become `# ...` lines after unparsing, and black formats the module. The output depends
only on the input, so the same function gives byte-identical source every time.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any

import numpy as np

from .. import runtime
from ..ir import nodes as ir
from ..runtime import constants as captured
from ..errors import S2SError
from ..frontend.source import is_user_function, spelling

BINOPS = {
    operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult,
    operator.truediv: ast.Div, operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod,
    operator.pow: ast.Pow, operator.matmul: ast.MatMult,
    operator.and_: ast.BitAnd, operator.or_: ast.BitOr, operator.xor: ast.BitXor,
}
COMPARES = {
    operator.lt: ast.Lt, operator.le: ast.LtE, operator.gt: ast.Gt, operator.ge: ast.GtE,
    operator.eq: ast.Eq, operator.ne: ast.NotEq, operator.is_: ast.Is, operator.is_not: ast.IsNot,
}
_COMMENT = re.compile(r"^(\s*)__s2s_comment_(\d+)__$", re.M)


def parse_expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id_, ast.Store() if store else ast.Load())


def runtime_call(helper: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(name("runtime"), helper, ast.Load()), list(args), [])


def assign(target: str | ast.expr, value: ast.expr) -> ast.Assign:
    tgt = name(target, True) if isinstance(target, str) else target
    return ast.Assign([tgt], value, lineno=0)


class Emitter:
    """Shared state of one generated module: function names, constants and comments."""

    def __init__(self):
        self.comments: list[str] = []
        self.origin_comments: set[int] = set()  # indices of the comments that head a statement's code
        self.function_names: dict[int, str] = {}
        self.constants: dict[str, Any] = {}
        self.probes: dict[str, ir.TryProbe] = {}  # the try probes its code calls, written after its functions

    # ---- comments ---------------------------------------------------------------

    def comment(self, text: str) -> ast.stmt:
        self.comments.append(text.replace("\n", " "))
        return ast.Expr(name(f"__s2s_comment_{len(self.comments) - 1}__"))

    def origin_comment(self, origin, prefix: str = "") -> ast.stmt:
        self.origin_comments.add(len(self.comments))
        return self.comment(f"{prefix}{origin.short()}  {origin.text}")

    # ---- atoms and expressions --------------------------------------------------

    def const(self, value: Any) -> ast.expr:
        if isinstance(value, ir.TryProbe):
            self.probes.setdefault(value.name, value)
            return name(value.name)
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return ast.Constant(value)
        if isinstance(value, (np.integer,)):
            value = int(value)
        if isinstance(value, (np.float32, np.float64)):
            # np.float64(0.9), not 0.9: NumPy 2 promotes float32 by an np.float64 and not by a
            # Python float, and Numba types np.float32(c) float32 and a Python float float64
            return ast.Call(parse_expr(f"np.{type(value).__name__}"), [self.const(float(value))], [])
        if isinstance(value, np.floating):
            value = float(value)
        if isinstance(value, float):
            if math.isinf(value):
                inf = parse_expr("math.inf")
                return inf if value > 0 else ast.UnaryOp(ast.USub(), inf)
            if math.isnan(value):
                return parse_expr("math.nan")
        if isinstance(value, (int, float, complex)):
            if isinstance(value, (int, float)) and value < 0:
                return ast.UnaryOp(ast.USub(), ast.Constant(-value))
            return ast.Constant(value)
        if isinstance(value, tuple):
            return ast.Tuple([self.const(v) for v in value], ast.Load())
        if isinstance(value, np.ndarray):  # captured from a closure or the module: by its content's digest
            args = [ast.Constant(captured.capture(value)), ast.Constant(value.dtype.name), self.const(value.shape)]
            return ast.Call(parse_expr("runtime.captured"), args, [])
        if captured.is_generator(value):  # a NumPy RandomState or Generator the function draws from
            return ast.Call(parse_expr("runtime.generator"), [ast.Constant(captured.generator_number(value))], [])
        if isinstance(value, type) and issubclass(value, np.generic):
            return parse_expr(f"np.{value.__name__}")
        if value in (float, int, bool, complex):  # (Python's types, as isinstance's second argument)
            return name(value.__name__)
        if value is Ellipsis:
            return ast.Constant(Ellipsis)
        raise S2SError(f"cannot write the constant {value!r} into generated code")

    def atom(self, atom: ir.Atom) -> ast.expr:
        if isinstance(atom, ir.Name):
            return name(atom.id)
        return self.const(atom.value)

    def function_ref(self, fn: Any) -> ast.expr:
        if is_user_function(fn):
            return name(self.function_names.get(id(fn), fn.__name__))
        spelled = spelling(fn)
        if spelled is None:
            raise S2SError(f"cannot name {fn!r} in generated code")
        return parse_expr(spelled)

    def index(self, index: ir.Index, as_value: bool = False) -> ast.expr:
        """x[index] syntax; as_value gives the same index as an argument of a runtime helper,
        where slices must be written slice(...)."""
        items = []
        for item in index.items:
            if isinstance(item, ir.Slice):
                parts = [None if a is None else self.atom(a) for a in (item.lower, item.upper, item.step)]
                if as_value:
                    items.append(ast.Call(name("slice"), [p or ast.Constant(None) for p in parts], []))
                else:
                    items.append(ast.Slice(*parts))
            elif isinstance(item, ir.NewAxis):
                items.append(ast.Constant(None))
            elif isinstance(item, ir.EllipsisIndex):
                items.append(ast.Constant(Ellipsis))
            else:
                items.append(self.atom(item))
        if len(items) == 1:
            return items[0]
        return ast.Tuple(items, ast.Load())

    def call(self, fn: Any, args: list[ast.expr], kwargs: list[tuple[str, ast.expr]]) -> ast.expr:
        if fn in BINOPS and len(args) == 2 and not kwargs:
            return ast.BinOp(args[0], BINOPS[fn](), args[1])
        if fn in COMPARES and len(args) == 2:
            return ast.Compare(args[0], [COMPARES[fn]()], [args[1]])
        if fn is operator.neg:
            return ast.UnaryOp(ast.USub(), args[0])
        if fn is operator.not_:
            return ast.UnaryOp(ast.Not(), args[0])
        if fn is operator.invert and len(args) == 1:
            return ast.UnaryOp(ast.Invert(), args[0])
        return ast.Call(self.function_ref(fn), args, [ast.keyword(k, v) for k, v in kwargs])

    def expr(self, value: ir.Expr) -> ast.expr:
        if isinstance(value, (ir.Name, ir.Const)):
            return self.atom(value)
        if isinstance(value, ir.Call):
            return self.call(value.fn, [self.atom(a) for a in value.args],
                             [(k, self.atom(a)) for k, a in value.kwargs])
        if isinstance(value, ir.Subscript):
            return ast.Subscript(self.atom(value.value), self.index(value.index), ast.Load())
        if isinstance(value, ir.Attribute):
            return ast.Attribute(self.atom(value.value), value.attr, ast.Load())
        if isinstance(value, ir.Pop):
            return ast.Call(ast.Attribute(name(value.tape), "pop", ast.Load()), [], [])
        if isinstance(value, ir.Build):
            elts = [self.atom(a) for a in value.elts]
            if value.kind == "tuple":
                return ast.Tuple(elts, ast.Load())
            if value.kind == "list":
                return ast.List(elts, ast.Load())
            return ast.Dict([self.const(k) for k in value.keys], elts)
        raise TypeError(value)

    # ---- primal statements ------------------------------------------------------

    def primal(self, stmt, body_of=None) -> ast.stmt:
        """One statement of the core language as it runs in the primal program.

        body_of(block) emits nested blocks, so a transform can add to them.
        """
        try:
            return self._primal(stmt, body_of)
        except S2SError as error:
            if error.origin is not None or getattr(stmt, "origin", None) is None:
                raise
            raise S2SError(error.reason, stmt.origin, error.hint or "call a NumPy, math or user function there") from None

    def _primal(self, stmt, body_of=None) -> ast.stmt:
        body_of = body_of or self.primal_block
        if isinstance(stmt, ir.Assign) and stmt.alias_check:
            plain = ir.Assign(stmt.targets, stmt.value, stmt.origin, stmt.inplace)
            return self.alias_checks(stmt) + [self.primal(plain)]
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Call) and stmt.value.fn is runtime.try_outcome:
            # (compiled code runs the probe as Python: NumPy's floating-point errors and exceptions)
            mode = ast.Call(parse_expr("runtime.objmode"), [], [ast.keyword(stmt.targets[0], ast.Constant("intp"))])
            return ast.With([ast.withitem(mode)], [assign(stmt.targets[0], self.expr(stmt.value))])
        if isinstance(stmt, ir.Assign):
            if stmt.unpack:
                target = ast.Tuple([name(t, True) for t in stmt.targets], ast.Store())
                return ast.Assign([target], self.expr(stmt.value), lineno=0)
            return assign(stmt.targets[0], self.expr(stmt.value))
        if isinstance(stmt, ir.SetItem) and (stmt.alias_check or stmt.dtype_check):
            plain = ir.SetItem(stmt.base, stmt.index, stmt.value, stmt.op, stmt.origin)
            checks = self.alias_checks(stmt)
            if stmt.dtype_check:  # (analysis/activity.py: base may be an argument's array of integers)
                checks.append(ast.Expr(runtime_call("require_float_array", name(stmt.base),
                                                    ast.Constant(stmt.dtype_check))))
            return checks + [self.primal(plain)]
        if isinstance(stmt, ir.SetItem):
            target = ast.Subscript(name(stmt.base), self.index(stmt.index), ast.Store())
            if stmt.op is None:
                return ast.Assign([target], self.atom(stmt.value), lineno=0)
            op = ast.Add() if stmt.op == "+" else ast.Sub()
            return ast.AugAssign(target, op, self.atom(stmt.value))
        if isinstance(stmt, ir.ExprStmt):
            return self.effect(stmt.value)
        if isinstance(stmt, ir.Push):
            return ast.Expr(ast.Call(ast.Attribute(name(stmt.tape), "append", ast.Load()),
                                     [self.atom(stmt.value)], []))
        if isinstance(stmt, ir.If):
            return self.if_(stmt.test, stmt.negated, body_of(stmt.body), body_of(stmt.orelse))
        if isinstance(stmt, ir.For):
            return self.for_range(stmt.var, [stmt.start, stmt.stop, stmt.step], body_of(stmt.body))
        if isinstance(stmt, ir.While):
            return self.while_(stmt, body_of(stmt.cond), body_of(stmt.body))
        if isinstance(stmt, ir.Return):
            return ast.Return(self.atom(stmt.value))
        raise TypeError(stmt)

    def effect(self, call: ir.Call) -> ast.stmt:
        """A call kept for its effect, as a statement. A failed assert raises in the generated
        code itself: Numba drops an exception raised inside a helper called from a prange loop."""
        if call.fn is runtime.assertion_failed:
            return ast.Raise(ast.Call(name("AssertionError"), [self.atom(a) for a in call.args], []), None)
        if call.fn is runtime.raise_exception:  # (a builtin exception, named by a constant)
            return ast.Raise(ast.Call(name(call.args[0].value), [self.atom(a) for a in call.args[1:]], []), None)
        return ast.Expr(self.expr(call))

    def alias_checks(self, stmt: ir.Assign | ir.SetItem, batched=lambda var: False) -> list[ast.stmt]:
        """The run-time checks before `x op= v`, which runs as `x = x op v`, and before
        `x[i] = v`: refuse where NumPy would also change another live name
        (analysis/points_to.py sets stmt.alias_check).
        batched(var): var carries a trailing batch axis (vectorised code)."""
        x = stmt.base if isinstance(stmt, ir.SetItem) else stmt.targets[0]
        out = []
        for other, message in stmt.alias_check:
            if other is None:  # a name not bound on every path: refuse any array x
                args = [self.atom(ir.Name(x)), ast.Constant(message)]
                if isinstance(stmt, ir.SetItem):  # `t[k] += v` into a list or dict: refuse an array item
                    args[0] = ast.Subscript(args[0], self.index(stmt.index), ast.Load())
                out.append(ast.Expr(runtime_call("require_number", *args)))
                continue
            args = [self.atom(ir.Name(x)), self.atom(ir.Name(other)), ast.Constant(message)]
            keywords = [ast.keyword(f"{which}_batched", ast.Constant(True))
                        for which, var in (("x", x), ("other", other)) if batched(var)]
            call = runtime_call("require_unshared", *args)
            call.keywords = keywords
            out.append(ast.Expr(call))
        return out

    def if_(self, test: ir.Atom, negated: bool, body: list, orelse: list) -> ast.stmt:
        condition = self.atom(test)
        if negated:
            condition = ast.UnaryOp(ast.Not(), condition)
        if not body and orelse:
            condition = ast.UnaryOp(ast.Not(), self.atom(test)) if not negated else self.atom(test)
            body, orelse = orelse, []
        return ast.If(condition, body or [ast.Pass()], orelse)

    def for_range(self, var: str, bounds: list, body: list) -> ast.stmt:
        start, stop, step = bounds
        args = [stop]
        if not (isinstance(start, ir.Const) and start.value == 0 and isinstance(step, ir.Const) and step.value == 1):
            args = [start, stop]
        if not (isinstance(step, ir.Const) and step.value == 1):
            args = [start, stop, step]
        iterator = ast.Call(name("range"), [self.atom(a) if isinstance(a, (ir.Name, ir.Const)) else a
                                            for a in args], [])
        return ast.For(name(var, True), iterator, body or [ast.Pass()], [], lineno=0)

    def while_(self, stmt: ir.While, cond: list, body: list) -> list | ast.stmt:
        """cond; while test: body; cond -- written with the condition block inside the loop."""
        if not cond:
            return ast.While(self.atom(stmt.test), body or [ast.Pass()], [])
        loop_body = cond + [ast.If(ast.UnaryOp(ast.Not(), self.atom(stmt.test)), [ast.Break()], [])] + body
        return ast.While(ast.Constant(True), loop_body, [])

    def primal_block(self, block: list) -> list:
        out: list = []
        last_origin = None
        for stmt in block:
            if stmt.origin != last_origin and not isinstance(stmt, ir.Return):
                out.append(self.origin_comment(stmt.origin))
                last_origin = stmt.origin
            emitted = self.primal(stmt)
            out.extend(emitted if isinstance(emitted, list) else [emitted])
        return out

    # ---- modules ----------------------------------------------------------------

    def probe_function(self, probe: ir.TryProbe) -> ast.FunctionDef:
        """The function that runs a try's body on the values as Python does (ir.TryProbe) and
        returns where it left: the statements that ran times the handlers, plus the handler that
        caught. Compiled code calls it as Python (runtime.runs_as_python)."""
        if probe.source is not None:
            return ast.parse(probe.source).body[0]
        count, counter = len(probe.handlers), probe.counter
        counted = len(probe.statements) > 1  # (of one statement, none ran where it raised: no counter)
        body: list[ast.stmt] = []
        for k, part in enumerate(probe.statements):
            body += self.primal_block(part)
            if k + 1 < len(probe.statements):  # (after the last, none is left to raise: returned below)
                body.append(assign(counter, ast.Constant(k + 1)))
        handlers = []
        for h, (classes, reraises) in enumerate(probe.handlers):
            caught = None if classes is None else (
                parse_expr(classes[0]) if len(classes) == 1 else ast.Tuple([parse_expr(c) for c in classes], ast.Load()))
            left = ast.Constant(h) if not counted else name(counter) if count == 1 else \
                ast.BinOp(name(counter), ast.Mult(), ast.Constant(count))
            if counted and count > 1 and h:
                left = ast.BinOp(left, ast.Add(), ast.Constant(h))
            handlers.append(ast.ExceptHandler(caught, None, [ast.Raise() if reraises else ast.Return(left)]))
        guarded: ast.stmt = ast.Try(body, handlers, [], [])
        if probe.errstate:
            settings = [ast.keyword(k, ast.Constant(v)) for k, v in probe.errstate]
            guarded = ast.With([ast.withitem(ast.Call(parse_expr("np.errstate"), [], settings))], [guarded])
        doc = (f"Where the try at {probe.origin.short()} leaves its body for these values: the statements "
               f"that ran{' times ' + str(count) + ' plus the handler that caught' if count > 1 else ''}, "
               f"{probe.completed} where none raised.")
        args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in probe.params], kwonlyargs=[],
                             kw_defaults=[], defaults=[])
        statements = [ast.Expr(ast.Constant(doc))] + ([assign(counter, ast.Constant(0))] if counted else []) + [
            guarded, ast.Return(ast.Constant(probe.completed))]
        return ast.FunctionDef(probe.name, args, statements, [parse_expr("runtime.runs_as_python")], None, lineno=0)

    def text(self, header: list[str], body: list[ast.stmt]) -> str:
        """The module as Python text, before formatting: header lines as comments, then the
        body and the try probes its code calls, comment markers turned back into `# ...` lines."""
        body = list(body) + [self.probe_function(self.probes[probe]) for probe in sorted(self.probes)]
        module = ast.Module(body=body, type_ignores=[])
        ast.fix_missing_locations(module)
        text = ast.unparse(module)
        text = _COMMENT.sub(lambda m: f"{m.group(1)}# {self.comments[int(m.group(2))]}", text)
        return "\n".join(f"# {line}" if line else "#" for line in header) + "\n" + text + "\n"
