"""Lower a parsed user function into the core language of ir/nodes.py.

One pass over the libcst tree: statements here (augmented and chained assignments are
desugared, loops and branches become IR blocks), expressions in expressions.py (each becomes
a chain of single-operation assignments to temporaries _t1, _t2, ...). A second pass,
control_flow.py, removes break, continue and early return in favour of flags, so that every
transform only sees structured control flow.
"""

from __future__ import annotations

import builtins
import dataclasses
import operator
import warnings
from typing import Any

import libcst as cst
import numpy as np

from .. import runtime
from ..errors import Origin, S2SError
from ..ir import nodes as ir
from ..rules import facts
from .argument_writes import parameter_writes
from .comprehensions import ComprehensionLowering
from .control_flow import lower_control_flow
from .expressions import ExpressionLowering
from .lax_forms import LaxLowering, assigned_names
from .nested import NESTED_CALLS
from .nested_calls import lambda_def
from .source import (MISSING, ParsedFunction, Resolver, is_user_function, list_names, parse_function,
                     plain_display_items, walk_nodes, walk_own)
from . import static_arguments, static_values
from .static_values import static_parameters
from .try_statements import TryLowering

AUG_OPS = {
    cst.AddAssign: operator.add,
    cst.SubtractAssign: operator.sub,
    cst.MultiplyAssign: operator.mul,
    cst.DivideAssign: operator.truediv,
    cst.FloorDivideAssign: operator.floordiv,
    cst.ModuloAssign: operator.mod,
    cst.PowerAssign: operator.pow,
    cst.MatrixMultiplyAssign: operator.matmul,
    cst.BitAndAssign: operator.and_,  # (of masks their logical and, or, xor; of ints bitwise)
    cst.BitOrAssign: operator.or_,
    cst.BitXorAssign: operator.xor,
}


def _local_names(node: cst.FunctionDef) -> set[str]:
    """Every name the function binds (params and assignment targets; not those of the
    lambdas and defs nested in it, which s2s.lax forms inline under names of their own)."""
    return set(parameter_names(node.params)) | assigned_names(node.body)


def _lambda_names(node: cst.FunctionDef) -> set[str]:
    """The names that the function binds once, by `f = lambda ...: ...` (not a parameter, no
    other assignment): nested functions, as if written with def."""
    bound: dict[str, list] = {}
    for n in walk_own(node.body):
        if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                and isinstance(n.value, cst.Lambda):
            bound.setdefault(n.targets[0].target.value, []).append(n)
    if not bound:
        return set()

    class Unbind(cst.CSTTransformer):  # (the body without those assignments: what else binds the names)
        def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
            if any(original is n for nodes in bound.values() for n in nodes):
                return updated.with_changes(targets=[cst.AssignTarget(cst.Name("_"))])
            return updated

    others = assigned_names(node.body.visit(Unbind())) | set(parameter_names(node.params))
    return {name for name, nodes in bound.items() if len(nodes) == 1 and name not in others}


def _transform_aliases(node: cst.FunctionDef, resolver: Resolver) -> dict[str, cst.Call]:
    """{name: the call} of the names the function binds once to s2s.grad(f, ...) (value_and_grad,
    hessian, jacfwd, jacrev) and uses only to call (not a parameter, no other assignment)."""
    bound: dict[str, list] = {}
    for n in walk_own(node.body):
        if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                and isinstance(n.value, cst.Call) and not isinstance(n.value.func, cst.Call):
            bound.setdefault(n.targets[0].target.value, []).append(n)
    bound = {name: nodes for name, nodes in bound.items() if len(nodes) == 1
             and resolver.resolve(nodes[0].value.func) in NESTED_CALLS}
    if not bound:
        return {}
    called: dict[str, int] = {}
    named: dict[str, int] = {}
    for n in walk_own(node.body):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
            called[n.func.value] = called.get(n.func.value, 0) + 1
        if isinstance(n, cst.Name):
            named[n.value] = named.get(n.value, 0) + 1

    class Unbind(cst.CSTTransformer):  # (the body without those assignments: what else binds the names)
        def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
            if any(original is nodes[0] for nodes in bound.values()):
                return updated.with_changes(targets=[cst.AssignTarget(cst.Name("_"))])
            return updated

    others = assigned_names(node.body.visit(Unbind())) | set(parameter_names(node.params))
    # (named: the binding itself, and each call; any other use of the name keeps it a variable)
    return {name: nodes[0].value for name, nodes in bound.items()
            if name not in others and named.get(name, 0) == 1 + called.get(name, 0)}


def parameter_names(params: cst.Parameters) -> list[str]:
    """The parameters generated code takes, by position: the positional ones, *args as one
    tuple, then the keyword-only ones (**kwargs is none: it is empty wherever s2s runs the
    function, which the doors and the call sites check)."""
    star = [params.star_arg.name.value] if isinstance(params.star_arg, cst.Param) else []
    return [p.name.value for p in (*params.posonly_params, *params.params)] + star + \
        [p.name.value for p in params.kwonly_params]


# The in-place methods of a list that have no lowering (append, extend and pop do).
_IN_PLACE_LIST_METHODS = ("insert", "remove", "reverse", "sort", "clear")
# Methods of an array that change it in place and return None (x.fill(0.0)).
_IN_PLACE_ARRAY_METHODS = ("fill", "put", "resize", "partition")






class _Locals(set):
    """The names the function binds, less those that hold a static value of the call now
    (static_arguments.py): a parameter until a statement assigns it, a variable a statement
    assigned one. (Unions keep the exception: a comprehension's or an inlined function's.)"""

    def __init__(self, names, static: dict):
        super().__init__(names)
        self.static = static

    def __contains__(self, name) -> bool:
        return set.__contains__(self, name) and name not in self.static

    def __or__(self, other) -> "_Locals":
        return _Locals(set.__or__(self, other), self.static)


def _outer_names(code) -> set[str]:
    """Every name the function (and the lambdas and defs in it) reads from its module, its
    closure or builtins, and every attribute name (co_names holds both): a fresh name must be
    none of them, or a variable s2s introduces (an inlined lambda's parameter, a scan's stacked
    output) would hide the module's or the closure's value from the code after it."""
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, type(code)):
            # (less the names of this code that the nested one reads: the variables of a
            # comprehension, which the comprehension inside it reads, are no outer names)
            names |= _outer_names(const) - set(code.co_cellvars)
    return names


def _formatted_template(node: cst.BaseExpression) -> str | None:
    """The template of `"..." % values` or `"...".format(...)`, or None for another expression."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        node = node.left
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        node = node.func.value
    else:
        return None
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return None


# Context managers whose only effect is on what NumPy warns or prints (Lowering.with_statement).
WARNING_MANAGERS = (np.errstate, np.printoptions, warnings.catch_warnings)


def _objmode_block(item: cst.WithItem, resolver: Resolver) -> bool:
    """`with runtime.objmode(...):`, around the call of a try's probe in generated code."""
    manager = item.item.func if isinstance(item.item, cst.Call) else None
    return isinstance(manager, cst.Attribute) and manager.attr.value == "objmode" \
        and resolver.resolve(manager.value) is runtime


class Normalizer(ExpressionLowering, LaxLowering, ComprehensionLowering, TryLowering):
    def __init__(self, parsed: ParsedFunction):
        self.parsed = parsed
        self.fn = parsed.fn
        # A parameter holding a static value (a string, None, a type, a function) of the call that
        # the code is generated for reads as that constant until a statement of the body's top
        # level assigns it (when = _convert_when(when)); one a nested block assigns is a variable.
        in_blocks = set().union(*(assigned_names(stmt) for stmt in parsed.node.body.body
                                  if not isinstance(stmt, cst.SimpleStatementLine)))
        in_blocks |= {n.value for comp in walk_own(parsed.node.body) if isinstance(comp, cst.CompFor)
                      for n in walk_own(comp.target) if isinstance(n, cst.Name)}  # (a comprehension's too)
        self.static, self.kinds = static_parameters(parsed.fn, in_blocks)
        # A parameter that holds an object split into its fields (a TrainState: static_values.split_objects):
        # its static attributes (state.apply_fn) and methods (state.apply_gradients) are read at its name
        # until a statement assigns it.
        self.objects = {name: held for name, held in static_values.carried_objects(parsed.fn).items()
                        if name not in in_blocks}
        self.in_blocks = in_blocks
        self.written_in = dict(self.static)  # (for the header)
        self.resolver = Resolver(parsed.fn, self.static)  # (the same dict: an assignment ends both)
        # `f = lambda y: ...`, the one binding of f: a nested function, as `def f(y): return ...`
        self.lambda_names = _lambda_names(parsed.node)
        # `grad_fn = s2s.value_and_grad(loss_fn, has_aux=True)`, the one binding of grad_fn: its
        # calls are calls of the transform's result, s2s.value_and_grad(loss_fn, has_aux=True)(p)
        self.transform_aliases = _transform_aliases(parsed.node, self.resolver)
        self.locals = _Locals(_local_names(parsed.node) - self.lambda_names - set(self.transform_aliases),
                              self.static)
        star_kwarg = parsed.node.params.star_kwarg
        self.star_kwarg = star_kwarg.name.value if star_kwarg is not None else None  # (always empty: parameter_names)
        self.lists = list_names(parsed.node)  # names that only ever hold lists (xs += [v] appends)
        self.dicts = list_names(parsed.node, (cst.Dict, cst.DictComp))  # names that only ever hold dicts
        # Nested defs: every name, and those defined so far (to be inlined by s2s.lax forms).
        self.def_names = {n.name.value for n in walk_own(parsed.node.body) if isinstance(n, cst.FunctionDef)} \
            | self.lambda_names
        self.names = ir.Names(self.locals | set(self.static) | _outer_names(parsed.fn.__code__) | self.def_names)
        self.callees: dict[int, Any] = {}
        self.constants: dict[str, Any] = {}
        self.inlined: dict[str, Any] = {}  # Config.SCALE -> its number, inlined as a literal
        self.references: set[tuple[str, str, str]] = set()
        self.out: list = []  # statements of the block being built
        self.origin: Origin | None = None
        self.loop_depth = 0
        self.catching_warnings = False  # inside `with warnings.catch_warnings():` (with_statement)
        self.errstate: dict = {}  # the np.errstate settings of the with blocks around (None: not a constant)
        self.broke_flags: list = []  # per enclosing loop, innermost last: the flag its break sets (loop ... else)
        self.local_defs: dict = {}
        self.frames: list = []  # the calls of nested functions being written out, innermost last (inline)
        self.at_results: set[str] = set()  # the temporaries that x.at[i].set(v) and friends update
        self.statement_node: cst.CSTNode | None = None  # the small statement being lowered
        self.call_sites: list = []  # user calls, checked for writes into arguments once all are lowered
        self.written_out: list = []  # user functions whose bodies are written out at calls (writing_calls.py)
        self.writers: dict = {}  # id -> the parameters a user function writes into (writing_calls.py)
        self.display: dict[str, str] = {}  # renamed variable -> the user's name (ir.Function.display)
        self.writing_out = False  # lowered to be written out at a call (function): a bare return returns None

    # ---- helpers ---------------------------------------------------------------

    def error(self, node: cst.CSTNode, message: str, hint: str = "") -> S2SError:
        return self.parsed.error(node, message, hint)

    def in_nested_function(self) -> bool:
        """Is a nested function's body being written out where it is called (lax_forms.inline)?"""
        return any(frame["function"] is not None for frame in self.frames)

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

    def lowered_to_write_out(self, fn) -> ir.Function:
        """Another user function lowered to be written out at a call of this one (writing_calls.py)."""
        return normalize(fn, written_out=True)

    def function(self, written_out: bool = False) -> ir.Function:
        """The lowered function. written_out: for its body to be written out at a call that
        passes the caller's variables (writing_calls.py): no private copies of the parameters it
        writes into, and without a return statement it returns None, as Python's."""
        node = self.parsed.node
        params = node.params
        self.writing_out = written_out
        names = parameter_names(params)
        self.origin = self.parsed.origin(node)
        body = self.sub_block(lambda: self.top_level(node.body.body))
        if written_out and not any(isinstance(s, ir.Return) for s in ir.walk(body)):
            body.append(ir.Return(ir.Const(None), self.origin))
        if not any(isinstance(s, ir.Return) for s in ir.walk(body)):
            raise self.error(node, f"{node.name.value} has no return statement",
                             "return the value to differentiate")
        writes = parameter_writes(names, body)
        if not written_out:
            body = self.private_copies(names, body) + body
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
            inlined=self.inlined,
            references=sorted(self.references),
            param_writes=writes,
            static=self.written_in,
            kinds=static_values.carried_kinds(self.fn) if self.kinds else {},
            call_sites=self.call_sites,
            written_out=self.written_out,
            display=self.display,
        )

    def private_copies(self, params: list[str], body: list) -> list:
        """`x = runtime.copy(x)` first for each parameter the function writes into (`x[0] = v`):
        the generated code works on a private copy, so it differentiates with respect to the
        values the caller passed and never changes the caller's array (as JAX, which has no
        in-place writes; NumPy's own call would change it). A list stays a list and a dict a
        dict (np.copy made them arrays). A write through another name (`y = x; y[0] = v`) is
        still refused by the alias analysis, with its line."""
        written = {stmt.base for stmt in ir.walk(body) if isinstance(stmt, ir.SetItem)} | {
            stmt.tape for stmt in ir.walk(body) if isinstance(stmt, ir.Push)}  # (x.append(v) too)
        origin = self.parsed.origin(self.parsed.node)
        return [ir.Assign((p,), ir.Call(runtime.copy, (ir.Name(p),)),
                          dataclasses.replace(origin, text=f"{p} = runtime.copy({p})  (s2s: the function writes into "
                                                           f"{p}; its derivatives work on a private copy)"))
                for p in params if p in written]

    # ---- statements ------------------------------------------------------------

    def top_level(self, statements) -> None:
        """The function's body: a static parameter that a statement assigns is a variable after it;
        a variable that a statement of the top level assigns a static value the call's constants
        give (dtype = np.float32, how = "fast" if mode == "fast" else "slow"), and nothing in a
        block assigns, is that constant until another statement assigns it."""
        for statement in statements:
            name, value = self.static_assignment(statement)
            if name is None:
                self.statement(statement)
            for assigned in assigned_names(statement):
                self.static.pop(assigned, None)
                self.kinds.pop(assigned, None)
                self.objects.pop(assigned, None)
            if name is not None:
                self.static[name] = value
            for array in self.array_bindings(statement):
                self.kinds[array] = np.ndarray
            if self.out and isinstance(self.out[-1], ir.Return):
                break

    def array_bindings(self, statement) -> list[str]:
        """The names a statement of the top level binds to NumPy arrays, which nothing in a block
        assigns: `x = np.asarray(v)`, `a, b = np.broadcast_arrays(a, b)`, `a, b = map(np.asarray,
        [a, b])` (Facts.ndarray). An isinstance test of one, here or in a function it is passed
        to, is decided, as a JAX trace decides it of an argument."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1
                and isinstance(statement.body[0].value, cst.Call)):
            return []
        target, call = statement.body[0].targets[0].target, statement.body[0].value
        if isinstance(call.func, cst.Name) and call.func.value in self.locals:
            return []
        made = facts(self.resolver.resolve(call.func)).ndarray
        if self.resolver.resolve(call.func) is builtins.map and call.args and not call.args[0].keyword:
            mapped = call.args[0].value
            if not (isinstance(mapped, cst.Name) and mapped.value in self.locals):
                made = "items" if facts(self.resolver.resolve(mapped)).ndarray == "result" else None
        if made == "result" and isinstance(target, cst.Name):
            names = [target]
        elif made == "items" and isinstance(target, (cst.Tuple, cst.List)):
            names = [e.value for e in target.elements]
        else:
            return []
        if not all(isinstance(n, cst.Name) for n in names):
            return []
        return [n.value for n in names if n.value not in self.in_blocks]

    def static_assignment(self, statement) -> tuple[str | None, Any]:
        """(name, value) of `name = v` whose v is a static value the call's constants give, else (None, None)."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1
                and isinstance(statement.body[0].targets[0].target, cst.Name)):
            return None, None
        name = statement.body[0].targets[0].target.value
        if name in self.in_blocks:
            return None, None

        try:
            value = static_arguments.evaluate(statement.body[0].value, self.static, self.static_lookup, self.kinds)
        except Exception:  # noqa: BLE001 - NotStatic, or what Python would raise there: lowered as written
            return None, None
        if not static_values.is_static(value) or value is None and name not in self.static:
            return None, None  # (w = None: a variable later code may fill in)
        return name, static_values.frontend_value(value)

    def block(self, statements) -> None:
        for statement in statements:
            self.statement(statement)
            if self.out and isinstance(self.out[-1], ir.Return):
                break  # (what follows never runs: after `return`, or a branch the call's static values take that returns)

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
            self.nested_def(node)  # inlined where an s2s.lax form calls it, refused elsewhere
        elif isinstance(node, cst.ClassDef):
            raise self.error(node, "class definitions are not supported",
                             "define the class at module level")
        elif isinstance(node, (cst.Try, cst.TryStar)):
            self.try_statement(node)  # (try_statements.py)
        elif isinstance(node, cst.With):
            self.with_statement(node)
        else:
            raise self.error(node, f"{type(node).__name__} statements are not supported")

    def with_statement(self, node: cst.With) -> None:
        """`with np.errstate(...):` and the other managers that change only what NumPy warns or
        prints: their body runs, as it does in NumPy. Generated code keeps none of them (Numba has
        no such managers, and raises no floating-point warnings), so a warning the manager would have
        silenced may show where the python backend runs NumPy. A try inside that the values decide
        runs its body under the same np.errstate (try_statements.py): `divide="raise"` is what its
        `except FloatingPointError` catches."""
        if len(node.items) == 1 and _objmode_block(node.items[0], self.resolver):
            self.block(node.body.body)  # (a try probe's call in generated code, read again: runs as written)
            return
        errstate = dict(self.errstate)
        for item in node.items:
            manager = item.item.func if isinstance(item.item, cst.Call) else item.item
            if item.asname is not None or self.resolver.resolve(manager) not in WARNING_MANAGERS:
                raise self.error(node, "with statements are not supported, except np.errstate(...), "
                                 "np.printoptions(...) and warnings.catch_warnings() without `as`",
                                 "move the with block outside the differentiated function")
            if self.resolver.resolve(manager) is np.errstate and isinstance(item.item, cst.Call):
                for arg in item.item.args:
                    setting = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
                    errstate[arg.keyword.value if arg.keyword is not None else "(positional)"] = setting
        catching = any(self.resolver.resolve(item.item.func if isinstance(item.item, cst.Call) else item.item)
                       is warnings.catch_warnings for item in node.items)
        outer, self.catching_warnings = self.catching_warnings, self.catching_warnings or catching
        outer_errstate, self.errstate = self.errstate, errstate
        try:
            for statement in node.body.body:
                self.statement(statement)
        finally:
            self.catching_warnings, self.errstate = outer, outer_errstate

    def warnings_call(self, call: cst.Call) -> bool:
        """A statement that calls the warnings module, lowered (True) or not one (False).
        warnings.warn(message) runs where NumPy would run it (runtime.warn); a filter set inside
        `with warnings.catch_warnings():` ends with the block, whose body alone s2s keeps, so the
        filter is dropped with it. A filter set anywhere else changes the process's warnings."""
        if isinstance(call.func, cst.Name) and call.func.value in self.locals:
            return False
        callee = self.resolver.resolve(call.func)
        if callee is warnings.warn:
            given = {"message" if k == 0 else "category": a.value for k, a in enumerate(call.args) if a.keyword is None}
            given.update({a.keyword.value: a.value for a in call.args if a.keyword is not None})
            category = self.resolver.resolve(given["category"]) if "category" in given else UserWarning
            if not set(given) <= {"message", "category", "stacklevel"} or "message" not in given or not (
                    isinstance(category, type) and issubclass(category, Warning)
                    and getattr(builtins, category.__name__, None) is category):
                raise self.error(call, "warnings.warn is supported with a message and a builtin warning class",
                                 "call warnings.warn(message) or warnings.warn(message, RuntimeWarning)")
            # (the category by its name, as a raise names its exception: a class is no value for Numba;
            # a formatted message by its text, as a raise's)
            message = given["message"]
            template = _formatted_template(message)
            if isinstance(message, cst.FormattedString):
                template = "".join(cst.Module([]).code_for_node(part) for part in message.parts)
            arguments = (self.expr(message) if template is None else ir.Const(template), ir.Const(category.__name__))
            self.emit(ir.ExprStmt(ir.Call(runtime.warn, arguments), self.origin))
            return True
        if callee in (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings):
            if not self.catching_warnings:
                raise self.error(call, f"warnings.{callee.__name__}(...) changes the warnings of the whole "
                                 "process", "call it inside `with warnings.catch_warnings():`, or outside the "
                                 "differentiated function")
            return True
        return False

    def small_statement(self, node: cst.CSTNode) -> None:
        self.statement_node = node
        if isinstance(node, cst.Assign):
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value in self.lambda_names \
                    and isinstance(node.value, cst.Lambda):
                self.nested_def(lambda_def(node.value, target.value))
                return
            if isinstance(target, cst.Name) and self.transform_aliases.get(target.value) is node.value:
                return  # (grad_fn = s2s.grad(f): its calls are written as s2s.grad(f)(...))
            if self.comprehension_statement(node):  # ys = [f(v) for v in x]: ys = [], ys.append(f(v)) in the loop
                return
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
            if node.value is None and (self.in_nested_function() or self.writing_out):  # it returns None
                self.emit(ir.Return(ir.Const(None), self.origin))
                return
            if node.value is None:
                raise self.error(node, "a bare return has no value to differentiate",
                                 "return a value")
            self.emit(ir.Return(self.expr(node.value), self.origin))
        elif isinstance(node, cst.Break):
            if not self.loop_depth:
                raise self.error(node, "break outside a loop")
            if self.broke_flags and self.broke_flags[-1] is not None:
                self.emit(ir.Assign((self.broke_flags[-1],), ir.Const(True), self.origin))
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
            self.assert_statement(node)
        elif isinstance(node, cst.Raise) and self.failed_assertion(node) is not None:
            # (what generated code writes for a failed assert, when it is transformed again)
            self.emit(ir.ExprStmt(ir.Call(runtime.assertion_failed, self.failed_assertion(node)), self.origin))
        elif isinstance(node, cst.Raise):
            self.raise_statement(node)
        elif isinstance(node, cst.Del):
            raise self.error(node, "del statements are not supported", "remove the del")
        else:
            raise self.error(node, f"{type(node).__name__} statements are not supported")

    def assert_statement(self, node: cst.Assert) -> None:
        """assert test, message: `if not test: runtime.assertion_failed(message)`, the message
        evaluated only where the test fails, as Python does. The test carries no derivative. A test
        that the call's static values decide (`assert isinstance(x, np.ndarray)`) is decided here,
        as `if` decides it."""

        def failed():
            message = () if node.msg is None else (self.expr(node.msg),)
            self.emit(ir.ExprStmt(ir.Call(runtime.assertion_failed, message), self.origin))
        decided = self.static_decision(node.test)
        if decided is not MISSING:
            if not decided:
                failed()
            return
        test = self.expr(node.test)
        if isinstance(test, ir.Const) and test.value:
            return
        self.emit(ir.If(test, self.sub_block(failed), [], self.origin, negated=True))

    def raise_statement(self, node: cst.Raise) -> None:
        """raise ValueError("message") of a builtin exception with constant arguments: a check of
        the input, run on the primal values in every mode (and by Numba, which raises an exception
        class with constant arguments); the derivatives do not pass through it. A formatted
        message (f-string, `%`, str.format) is its text as written: generated code formats no values."""
        exc = node.exc
        call = exc if isinstance(exc, cst.Call) else None
        func = call.func if call is not None else exc
        hint = "raise a builtin exception (ValueError, TypeError, ...) with a constant message"
        if func is None:
            raise self.error(node, "a bare raise (re-raising) is not supported", hint)
        if node.cause is not None and not (isinstance(node.cause.item, cst.Name) and node.cause.item.value == "None"):
            raise self.error(node, "raise ... from an exception is not supported", hint)
        kind = None if isinstance(func, cst.Name) and func.value in self.locals else self.resolver.resolve(func)
        if not (isinstance(kind, type) and issubclass(kind, BaseException) and getattr(builtins, kind.__name__, None)
                is kind):
            raise self.error(func, "raise is supported of Python's builtin exceptions (ValueError, TypeError, ...)",
                             hint)
        args = []
        for arg in call.args if call is not None else ():
            if arg.keyword is not None or arg.star:
                raise self.error(arg, "the arguments of a raised exception are positional", hint)
            value = arg.value
            template = _formatted_template(value)
            if isinstance(value, cst.FormattedString):
                args.append(ir.Const("".join(cst.Module([]).code_for_node(part) for part in value.parts)))
            elif template is not None:  # "... %s" % (q.shape,), "... {}".format(n): the template
                args.append(ir.Const(template))
            elif isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
                args.append(ir.Const(value.evaluated_value))
            else:
                raise self.error(arg, "the arguments of a raised exception are constants here (a string or a number; "
                                 "a formatted string, f\"...\", \"...\" % v or \"...\".format(v), is raised with its "
                                 "text as written)", hint)
        self.emit(ir.ExprStmt(ir.Call(runtime.raise_exception, (ir.Const(kind.__name__), *args)), self.origin))

    def failed_assertion(self, node: cst.Raise) -> tuple | None:
        """The arguments of `raise AssertionError(...)` (of at most one positional argument),
        or None for another raise."""
        exc = node.exc
        call = exc if isinstance(exc, cst.Call) else None
        func = call.func if call is not None else exc
        if node.cause is not None or func is None or self.resolver.resolve(func) is not AssertionError \
                or isinstance(func, cst.Name) and func.value in self.locals \
                or call is not None and (len(call.args) > 1 or any(a.keyword or a.star for a in call.args)):
            return None
        return tuple(self.expr(a.value) for a in call.args) if call is not None else ()

    def expression_statement(self, node: cst.Expr) -> None:
        value = node.value
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
            return  # a docstring
        if isinstance(value, (cst.Yield, cst.Await)):
            self.expr(value)  # raises the specific refusal
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in self.def_names \
                and value.func.value not in self.locals:
            self.expr(value)  # helper(v, w) of a nested function, for what it writes into v and w
            return
        if isinstance(value, cst.Call) and self.warnings_call(value):
            return
        if isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute)) \
                and not (isinstance(value.func, cst.Name) and value.func.value in self.locals) \
                and is_user_function(self.resolver.resolve(value.func)):
            if self.checking_call(value, self.resolver.resolve(value.func)):
                return
            self.expr(value)  # helper(v, w) of a module-level function, for what it writes into v and w
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "append" and isinstance(value.func.value, cst.Name) \
                and value.func.value.value in self.locals and len(value.args) == 1:
            # A tape of generated reverse code: tape.append(v).
            self.emit(ir.Push(value.func.value.value, self.expr(self.positional(value.args[0])), self.origin))
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "extend" and isinstance(value.func.value, cst.Name) \
                and value.func.value.value in self.locals and len(value.args) == 1 \
                and plain_display_items(self.positional(value.args[0])) is not None:
            # xs.extend([a, b]): xs.append(a), xs.append(b)
            self.extend(value.func.value.value, plain_display_items(self.positional(value.args[0])))
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "extend" and isinstance(value.func.value, cst.Name) \
                and value.func.value.value in self.locals and len(value.args) == 1:
            self.extend_by_loop(value.func.value.value, self.positional(value.args[0]))  # xs.extend(ys): a loop
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "pop" and isinstance(value.func.value, cst.Name) \
                and value.func.value.value in self.locals and not value.args:
            self.expr(value)  # t.pop() whose item is unused (the reverse of t.append(v)): t loses it
            return
        if isinstance(value, cst.Call):
            callee = self.resolver.resolve(value.func)
            checks = (runtime.require_number, runtime.require_unshared, runtime.require_distinct, runtime.require_fits,
                      runtime.require_float_array, runtime.require_not_dict, runtime.require_array,
                      runtime.require_updatable, runtime.require_scalar, runtime.assertion_failed,
                      runtime.warn, runtime.derivative_like)  # (a custom_jvp rule's tangent, checked in its reverse mode)
            if callee in (runtime.index_add, runtime.clear) + checks:
                # Statements of generated code, when it is transformed again.
                args, kwargs = self.arguments(value)
                mutates = args[0].id if callee not in checks and isinstance(args[0], ir.Name) else None
                self.emit(ir.ExprStmt(ir.Call(callee, tuple(args), tuple(kwargs)), self.origin, mutates))
                return
        if isinstance(value, cst.Call) and self.resolver.resolve(value.func) is runtime.debug_print:
            self.emit(ir.ExprStmt(ir.Call(runtime.debug_print, self.debug_print_arguments(value)), self.origin))
            return
        if isinstance(value, cst.Call) and self.resolver.resolve(value.func) is builtins.print \
                and not (isinstance(value.func, cst.Name) and value.func.value in self.locals):
            args = tuple(self.print_argument(a) for a in value.args)
            self.emit(ir.ExprStmt(ir.Call(builtins.print, args), self.origin))
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in _IN_PLACE_LIST_METHODS and isinstance(value.func.value, cst.Name) \
                and value.func.value.value in self.locals:
            # (t.insert(0, v), t.sort(): an in-place change of a list, which is no unused value)
            raise self.error(node, f"list.{value.func.attr.value}() is not supported",
                             "build the list in its final order with .append, .extend or a comprehension, "
                             "or keep the values in an array")
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "at" \
                and isinstance(self.resolver.resolve(value.func.value), np.ufunc):
            self.ufunc_at(value, self.resolver.resolve(value.func.value))
            return
        if isinstance(value, cst.Call):
            changes = self.in_place_call(value)
            if changes is not None:
                raise self.error(node, f"{changes} changes its argument in place (and returns None), which s2s does "
                                 "not support", "write the new values with indexing (x[i] = v, x[mask] = v) or build "
                                 "a new array (np.where, np.sort, np.clip); np.add.at(x, indices, values) is taken")
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name) \
                and value.func.value.value not in self.locals:
            # (G.append(x) of a global or captured list: a change to an object outside the function)
            owner, method = value.func.value.value, value.func.attr.value
            raise self.error(node, f"{owner}.{method}(...) changes {owner}, which is not a variable of this function "
                             "(a global or a captured object): a transformed function gives its results by what it "
                             "returns, and a change to an object outside it is not seen",
                             f"return the value beside the result (s2s.grad(f, has_aux=True) gives it back with "
                             f"the gradient; several values as np.stack of them), and update {owner} outside the "
                             f"transformed function")
        raise self.error(node, "an expression statement whose value is unused is not supported",
                         "assign its result to a name (only print(...) may stand alone)")

    def ufunc_at(self, node: cst.Call, ufunc: np.ufunc) -> None:
        """np.add.at(a, indices, values): a = runtime.scatter_add(a, indices, values), which NumPy
        does in place (as `a += v`: where another name shares a's memory, refused when it runs)."""
        spelled = f"np.{ufunc.__name__}.at"
        if ufunc is not np.add:
            raise self.error(node, f"{spelled}(...) is not supported",
                             "np.add.at(a, indices, values) is; for another operation, write a loop over the indices")
        if len(node.args) != 3 or any(a.keyword is not None or a.star for a in node.args):
            raise self.error(node, f"{spelled} takes three positional arguments here: the array, the indices "
                                   "and the values")
        target = node.args[0].value
        if not isinstance(target, cst.Name) or target.value not in self.locals:
            if isinstance(target, cst.Name) and isinstance(self.resolver.lookup(target.value), np.ndarray):
                where = "closure" if target.value in self.resolver.closure else "module"
                raise self.error(target, f"{target.value!r} is an array of the {where}, which s2s captures as a "
                                         f"constant: adding into it with {spelled} is not supported",
                                 f"add into a copy ({target.value}_copy = {target.value}.copy()), or pass "
                                 f"{target.value} as an argument and return the new value")
            raise self.error(target, f"{spelled} adds into a local array variable here",
                             "name the array: y = x[0]; np.add.at(y, indices, values); x[0] = y")
        if isinstance(node.args[1].value, cst.Tuple):
            raise self.error(node.args[1].value, f"{spelled} with a tuple of index arrays (several axes) is not "
                             "supported", "index a raveled copy with np.ravel_multi_index(indices, a.shape), "
                             "then reshape it back")
        indices = self.expr(node.args[1].value)
        values = self.expr(node.args[2].value)
        name = target.value
        self.emit(ir.Assign((name,), ir.Call(runtime.scatter_add, (ir.Name(name), indices, values)), self.origin,
                            inplace=True))

    def in_place_call(self, node: cst.Call) -> str | None:
        """How a call of a NumPy function or array method that changes its argument in place
        and returns None is written (np.copyto(...), x.fill(...)), or None for another call."""
        callee = self.resolver.resolve(node.func)
        for fn in (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.random.shuffle):
            if callee is fn:
                return f"{cst.Module([]).code_for_node(node.func)}(...)"
        if isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                and node.func.value.value in self.locals and node.func.attr.value in _IN_PLACE_ARRAY_METHODS:
            return f"{node.func.value.value}.{node.func.attr.value}(...)"
        return None

    def debug_print_arguments(self, node: cst.Call) -> tuple:
        """s2s.debug.print("x = {x}", x=x) -> debug_print("x = {0}", x): Numba takes no keywords."""
        fmt = node.args[0].value if node.args and node.args[0].keyword is None else None
        if not isinstance(fmt, (cst.SimpleString, cst.ConcatenatedString)) \
                or not isinstance(fmt.evaluated_value, str):
            raise self.error(node, "s2s.debug.print takes a constant format string first",
                             'write the format string in the call: s2s.debug.print("x = {x}", x=x)')
        args, kwargs = self.arguments(node.with_changes(args=node.args[1:]))
        try:
            text = runtime.positional_format(fmt.evaluated_value, len(args), [k for k, _ in kwargs])
        except (ValueError, KeyError, IndexError) as exc:
            raise self.error(node, f"s2s.debug.print: the format string does not fit the arguments ({exc!r})",
                             "name each {field} as an argument, or pass the values positionally for {}") from None
        return (ir.Const(text), *args, *(v for _, v in kwargs))

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
            if rename and isinstance(value, ir.Name) and value.id in self.at_results \
                    and self.rename_update(value.id, name):
                return
            self.emit(ir.Assign((name,), value, self.origin))
        elif isinstance(target, (cst.Tuple, cst.List)) and any(
                isinstance(e, cst.Element) and isinstance(e.value, cst.Subscript) for e in target.elements):
            self.unpack_into_subscripts(target, value, node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            names, nested = [], []
            for element in target.elements:
                if isinstance(element, cst.Element) and isinstance(element.value, (cst.Tuple, cst.List)):
                    # (h, c), ys = ...: the inner tuple is unpacked in turn (JAX code does this)
                    names.append(self.names.temp())
                    nested.append((element.value, names[-1]))
                    continue
                if isinstance(element, cst.StarredElement) or not isinstance(element.value, cst.Name):
                    raise self.error(element, "only unpacking into plain names is supported",
                                     "unpack into names, then index or unpack those")
                names.append(element.value.value)
            if len(set(names)) != len(names):
                raise self.error(target, "the same name appears twice in an unpacking")
            items = self.display_items(value, names)
            if len(names) == 1:  # a, = v (JAX's rules write `x, = primals`): v's one item
                source = value if isinstance(value, (ir.Name, ir.Const)) else self.assign(value)
                self.emit(ir.Assign((names[0],), ir.Subscript(source, ir.Index((ir.Const(0),))), self.origin))
            elif items is not None:
                # a, b = x, y: each name its item, so that each keeps its own activity (a tuple
                # that holds a derivative makes every item unpacked from it active: in a custom_jvp
                # rule's `(x,), (t,) = primals, tangents` the rule's transpose took x for active)
                self.out.pop()
                for target_name, item in zip(names, items):
                    self.emit(ir.Assign((target_name,), item, self.origin))
            else:
                self.emit(ir.Assign(tuple(names), value, self.origin))
            for inner, name in nested:
                self.assign_to(inner, ir.Name(name), node, rename=False)
        elif isinstance(target, cst.Subscript):
            base = self.subscript_base(target)
            index = self.index(target)
            self.emit(ir.SetItem(base, index, value, None, self.origin))
        elif isinstance(target, cst.Attribute):
            raise self.error(target, "assigning to an attribute is not supported",
                             "build a new value instead (namedtuple._replace is not supported either)")
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def unpack_into_subscripts(self, target: cst.Tuple | cst.List, value: ir.Atom, node: cst.CSTNode) -> None:
        """x[i], x[j] = x[j], x[i]: as Python runs it, the right side first (its items as they
        are then: of an array's rows, views, which the first write changes, as NumPy's swap of
        rows does), then each target in turn, left to right, its index evaluated then."""
        elements = [e.value for e in target.elements if isinstance(e, cst.Element)]
        if len(elements) != len(target.elements):
            raise self.error(target, "starred unpacking into subscripts is not supported",
                             "assign each item in a statement of its own")
        bound = [e.value if isinstance(e, cst.Name) else "" for e in elements]  # ("": not a name)
        items = self.display_items(value, bound)
        if items is not None:
            self.out.pop()  # (the display's items themselves, evaluated before any target)
            items = self.items_as_numpy_reads_them(elements, list(items))
        else:
            temps = [self.names.temp() for _ in elements]
            self.emit(ir.Assign(tuple(temps), value, self.origin))
            items = [ir.Name(t) for t in temps]
        for element, item in zip(elements, items):
            if isinstance(item, tuple):  # (a view: read again after the writes before it)
                flag, snapshot, index = item
                base = ir.Name(self.subscript_base(element))
                self.emit(ir.If(flag, [ir.Assign((snapshot.id,), ir.Subscript(base, index), self.origin)], [],
                                self.origin))
                item = snapshot
            self.assign_to(element, item, node, rename=False)

    def items_as_numpy_reads_them(self, elements: list, items: list) -> list:
        """x[i], x[j] = x[j], x[i] where every target and item is a subscript of one array x:
        an item after the first that is a view of x (x[j] of rows) sees the writes before its
        own, as NumPy's does (the rows' swap gives two copies of row j); one that is a number
        or a copy (x[j] of a vector, x[[j]]) does not. Such an item becomes (the flag that says
        it is a view, its snapshot, its index): the snapshot is what is written where it is
        not a view, and x[index] read again where it is."""
        bases = {e.value.value for e in elements if isinstance(e, cst.Subscript) and isinstance(e.value, cst.Name)}
        if len(bases) != 1 or not all(isinstance(e, cst.Subscript) for e in elements):
            return items
        base = bases.pop()
        reads = {s.targets[0]: s.value.index for s in self.out if isinstance(s, ir.Assign)
                 and len(s.targets) == 1 and isinstance(s.value, ir.Subscript) and s.value.value == ir.Name(base)}
        if not all(isinstance(item, ir.Name) and item.id in reads for item in items):
            return items
        out = items[:1]
        for item in items[1:]:
            flag = self.assign(ir.Call(runtime.shares_memory, (item, ir.Name(base))), self.names.fresh("_view"))
            out.append((flag, self.assign(ir.Call(runtime.copy, (item,))), reads[item.id]))
        return out

    def display_items(self, value: ir.Atom, names: list[str]) -> tuple | None:
        """The items of the display that `a, b = x, y` unpacks, where binding the names one by
        one is the same: the display is the statement just emitted, into a temporary, with one
        item per name, and no item reads a name that the unpacking binds (a, b = b, a)."""
        last = self.out[-1] if self.out else None
        if not (isinstance(value, ir.Name) and value.id.startswith("_t") and value.id not in self.locals
                and isinstance(last, ir.Assign) and last.targets == (value.id,)
                and isinstance(last.value, ir.Build) and last.value.kind in ("tuple", "list")
                and len(last.value.elts) == len(names) > 1):
            return None
        if any(isinstance(item, ir.Name) and item.id in names for item in last.value.elts):
            return None
        return last.value.elts

    def rename_update(self, temp: str, name: str) -> bool:
        """y = x.at[i].set(v): the copy x.at made is y from the start (`y = np.copy(x); y[i] = v`),
        where y is not used between the copy and here."""
        first = next((p for p, s in enumerate(self.out) if isinstance(s, ir.Assign) and s.targets == (temp,)), None)
        if first is None:
            return False
        tail = list(ir.walk(self.out[first:]))
        if any(name in ir.stmt_reads(s) + ir.stmt_writes(s) for s in tail):
            return False
        self.out[first:] = ir.rename(self.out[first:], {temp: name})
        return True

    def subscript_base(self, target: cst.Subscript) -> str:
        if isinstance(target.value, cst.Name) and target.value.value not in self.locals \
                and isinstance(self.resolver.lookup(target.value.value), (np.ndarray, tuple, list)):
            name = target.value.value
            where = "closure" if name in self.resolver.closure else "module"
            raise self.error(target, f"{name!r} is an array of the {where}, which s2s captures as a constant: "
                                     "writing into it is not supported",
                             f"write into a copy ({name}_copy = {name}.copy()), or pass {name} as an argument "
                             "and return the new value")
        if not isinstance(target.value, cst.Name) or target.value.value not in self.locals:
            raise self.error(target, "only writes into a local array variable are supported",
                             "write x[i, j] = v rather than x[i][j] = v")
        return target.value.value

    def aug_assign(self, node: cst.AugAssign) -> None:
        op = AUG_OPS.get(type(node.operator))
        if op is None:
            raise self.error(node, f"augmented assignment {type(node.operator).__name__} is not supported")
        target = node.target
        if isinstance(target, cst.Name) and target.value in self.lists and op is operator.add:
            # (list_names: every `+=` on a list name has a display) xs += [a, b]: appends
            self.extend(target.value, plain_display_items(node.value))
            return
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
                self.emit(ir.SetItem(base, index, new, None, self.origin, augmented=True))
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def extend(self, name: str, items: list) -> None:
        """xs.extend([a, b]) and xs += [a, b] on a list: the items are evaluated first, as
        Python does, then appended in order (what reverse mode pops back)."""
        values = [self.expr(item) for item in items]
        for value in values:
            self.emit(ir.Push(name, value, self.origin))

    def if_statement(self, node: cst.If) -> None:
        taken = self.static_decision(node.test)
        if taken is not MISSING:  # (the branch not taken is never lowered, as a JAX trace never sees it)
            if taken:
                self.block(node.body.body)
            elif isinstance(node.orelse, cst.If):
                self.statement(node.orelse)
            elif isinstance(node.orelse, cst.Else):
                self.block(node.orelse.body.body)
            return
        origin = self.origin
        test = self.expr(node.test)
        body = self.sub_block(lambda: self.block(node.body.body))
        orelse: list = []
        if isinstance(node.orelse, cst.If):
            orelse = self.sub_block(lambda: self.statement(node.orelse))
        elif isinstance(node.orelse, cst.Else):
            orelse = self.sub_block(lambda: self.block(node.orelse.body.body))
        self.emit(ir.If(test, body, orelse, origin))

    def reversed_range(self, start: ir.Atom, stop: ir.Atom, step: ir.Atom) -> tuple:
        """(start, stop, step) of reversed(range(start, stop, step)): range(stop - 1, start - 1, -1)
        for a step of 1; else from its last item, start + (n - 1) * step, down to start - step."""
        if isinstance(step, ir.Const) and step.value == 1:
            return (self.assign(ir.Call(operator.sub, (stop, ir.Const(1)))),
                    self.assign(ir.Call(operator.sub, (start, ir.Const(1)))), ir.Const(-1))
        count = self.assign(ir.Call(runtime.range_len, (start, stop, step)))
        steps = self.assign(ir.Call(operator.mul, (self.assign(ir.Call(operator.sub, (count, ir.Const(1)))), step)))
        return (self.assign(ir.Call(operator.add, (start, steps))), self.assign(ir.Call(operator.sub, (start, step))),
                self.assign(ir.Call(operator.neg, (step,))))

    def broke_flag(self, node: cst.For | cst.While) -> str | None:
        """`for ... else` and `while ... else`, whose else runs where the loop did not break:
        the flag, False before the loop, that the loop's own breaks set; None where the loop
        has no else or no break of its own (then the else always runs after it)."""
        if node.orelse is None or not _breaks_out(node.body):
            return None
        flag = self.names.fresh("_broke")
        self.emit(ir.Assign((flag,), ir.Const(False), self.origin))
        return flag

    def loop_else(self, node: cst.For | cst.While, flag: str | None, origin: Origin) -> None:
        """The else block of a loop, after it: under `if not flag:` where a break may skip it."""
        if node.orelse is None:
            return
        self.origin = self.parsed.origin(node.orelse)
        orelse = self.sub_block(lambda: self.block(node.orelse.body.body))
        if flag is None:
            self.out += orelse
        elif orelse:
            self.emit(ir.If(ir.Name(flag), orelse, [], self.origin, negated=True))

    def for_statement(self, node: cst.For) -> None:
        origin = self.origin
        if node.asynchronous is not None:
            raise self.error(node, "async for is not supported")
        flag = self.broke_flag(node)
        var, start, stop, step, prologue = self.loop_header(node.target, node.iter, [node.body])
        self.loop_depth += 1
        self.broke_flags.append(flag)
        try:
            def build_body():
                self.emit_prologue(prologue, origin)
                self.block(node.body.body)
            body = self.sub_block(build_body)
        finally:
            self.loop_depth -= 1
            self.broke_flags.pop()
        if var in {w for s in ir.walk(body) for w in ir.stmt_writes(s)}:
            # The body rebinds the loop variable: iterate over a fresh one.
            fresh = self.names.fresh(f"_{var}")
            body.insert(0, ir.Assign((var,), ir.Name(fresh), origin))
            var = fresh
        self.emit(ir.For(var, start, stop, step, body, origin))
        self.loop_else(node, flag, origin)

    def emit_prologue(self, prologue: list, origin: Origin) -> None:
        for targets, expr in prologue:
            self.emit(ir.Assign(targets if isinstance(targets, tuple) else (targets,), expr, origin))

    def loop_header(self, target: cst.BaseExpression, iterator: cst.BaseExpression, uses: list) -> tuple:
        """What `for target in iterator` runs over, for a for statement and for a clause of a
        comprehension: (the loop's variable, start, stop, step, the prologue: the assignments
        (targets, expr) at the top of the body that bind target's names). The statements that
        evaluate the iterator are emitted into the current block. uses: the nodes where the
        target's names are read (the loop's body), to tell a name that indexes something."""
        call = iterator if isinstance(iterator, cst.Call) else None
        callee = self.resolver.resolve(call.func) if call is not None else MISSING
        if call is not None and isinstance(call.func, cst.Name) and call.func.value in self.locals:
            callee = MISSING
        prologue: list[tuple[str, ir.Expr]] = []  # assignments at the top of the body
        backwards = callee is builtins.reversed and len(call.args) == 1 and isinstance(
            self.positional(call.args[0]), cst.Call) and self.resolver.resolve(
            self.positional(call.args[0]).func) is builtins.range
        if backwards:  # for i in reversed(range(...)): the same range, stepped the other way
            call, callee = self.positional(call.args[0]), builtins.range
        if callee is builtins.range:
            if not isinstance(target, cst.Name):
                raise self.error(target, "a range loop needs a single loop variable")
            args = [self.expr(self.positional(a)) for a in call.args]
            if not 1 <= len(args) <= 3:
                raise self.error(call, "range takes one to three arguments")
            start, stop, step = (
                (ir.Const(0), args[0], ir.Const(1)) if len(args) == 1
                else (args[0], args[1], ir.Const(1)) if len(args) == 2 else tuple(args)
            )
            if backwards:
                start, stop, step = self.reversed_range(start, stop, step)
            var = target.value
        elif callee is builtins.enumerate:
            if len(call.args) != 1:
                raise self.error(call, "enumerate takes one argument here")
            if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
                    and isinstance(target.elements[0].value, cst.Name)):
                raise self.error(target, "expected 2 loop variables", "write `for i, x in enumerate(xs):`")
            var, item_target = target.elements[0].value.value, target.elements[1].value
            inner = self.positional(call.args[0])
            if self._calls_zip(inner) and isinstance(item_target, (cst.Tuple, cst.List)):
                stop, items = self.zipped(inner, item_target, var)  # for i, (a, b) in enumerate(zip(x, y))
                prologue += items
            elif _dict_method(inner) is not None or self.sorted_dict_view(inner) is not None:
                # for i, (k, v) in enumerate(d.items()), and .keys(), and sorted(d.items())
                stop, items = self.dict_loop(inner, item_target, var)
                prologue += items
            else:
                seq = self.sequence(self.expr(inner), uses)
                seq = self.keys_or_items(seq, inner, item_target, uses)  # (for i, k in enumerate(d))
                stop = self.assign(ir.Call(len, (seq,)))
                prologue += self.unpacked(item_target, ir.Subscript(seq, ir.Index((ir.Name(var),))))
            start, step = ir.Const(0), ir.Const(1)
        elif callee is builtins.zip:
            var = self.names.fresh("_i")
            stop, items = self.zipped(call, target, var)
            prologue += items
            start, step = ir.Const(0), ir.Const(1)
        elif _dict_method(iterator) is not None or self.sorted_dict_view(iterator) is not None:
            var = self.names.fresh("_i")
            stop, items = self.dict_loop(iterator, target, var)
            prologue += items
            start, step = ir.Const(0), ir.Const(1)
        else:
            seq = self.sequence(self.expr(iterator), uses)
            seq = self.keys_or_items(seq, iterator, target, uses)
            start, step = ir.Const(0), ir.Const(1)
            stop = self.assign(ir.Call(len, (seq,)))
            var = self.names.fresh("_i")
            prologue += self.unpacked(target, ir.Subscript(seq, ir.Index((ir.Name(var),))))
        return var, start, stop, step, prologue

    def dict_loop(self, iterator: cst.Call, target: cst.BaseExpression, var: str) -> tuple[ir.Atom, list]:
        """for k, v in d.items() / for k in d.keys() / for v in d.values(): over the keys in
        Python's order (insertion), each value read as d[k]: (the number of keys, the prologue
        that binds target's names for the key at position var)."""
        view = self.sorted_dict_view(iterator)
        if view is not None:  # sorted(d.items()), sorted(d.keys()): the same, over the keys in sorted order
            iterator = view
        method = _dict_method(iterator)
        d = self.sequence(self.expr(iterator.func.value))
        keys = self.assign(ir.Call(runtime.dict_keys, (d,)))
        if view is not None:
            keys = self.assign(ir.Call(sorted, (keys,)))
        stop = self.assign(ir.Call(len, (keys,)))
        if method == "items":
            key, value = self.target_names(target, 2)
        elif isinstance(target, cst.Name):
            key, value = (target.value, None) if method == "keys" else (self.names.fresh("_k"), target.value)
        else:
            raise self.error(target, f"a loop over .{method}() takes one loop variable")
        prologue = [(key, ir.Subscript(keys, ir.Index((ir.Name(var),))))]
        if value is not None:
            prologue.append((value, ir.Subscript(d, ir.Index((ir.Name(key),)))))
        return stop, prologue

    def sorted_dict_view(self, node: cst.BaseExpression) -> cst.Call | None:
        """d.items() (or d.keys()) where node is sorted(d.items()): a loop over the (key, value)
        pairs in the keys' order (a dict's keys differ, so its values are never compared); the
        order by key too where the sort says so, key=operator.itemgetter(0) of the items."""
        if not (isinstance(node, cst.Call) and node.args and node.args[0].keyword is None
                and not node.args[0].star and _dict_method(node.args[0].value) in ("items", "keys")):
            return None
        for extra in node.args[1:]:
            by_key = extra.keyword is not None and extra.keyword.value == "key" \
                and _dict_method(node.args[0].value) == "items" and isinstance(extra.value, cst.Call) \
                and self.resolver.resolve(extra.value.func) is operator.itemgetter and len(extra.value.args) == 1 \
                and isinstance(extra.value.args[0].value, cst.Integer) and extra.value.args[0].value.value == "0"
            if not by_key:
                return None
        if isinstance(node.func, cst.Name) and node.func.value in self.locals:
            return None
        return node.args[0].value if self.resolver.resolve(node.func) is builtins.sorted else None

    def keys_or_items(self, seq: ir.Atom, iterator: cst.BaseExpression, target: cst.BaseExpression,
                      uses: list) -> ir.Atom:
        """What a loop over seq (`for v in seq`, `for i, v in enumerate(seq)`) reads by position."""
        if isinstance(target, cst.Name) and any(_indexes_with(use, target.value) for use in uses):
            # The loop variable indexes something (`for k in d: ... d[k]`), so it is a key
            # or an int, which carries no derivative: a dict goes over its keys. Where it is
            # surely a dict, they are a tuple of their own, which writes into d[k] leave alone.
            keys = runtime.dict_keys if isinstance(iterator, cst.Name) and iterator.value in self.dicts \
                else runtime.loop_keys
            return self.assign(ir.Call(keys, (seq,)), self.names.fresh("_keys"))
        if not self._never_a_dict(iterator):
            # The items themselves, which may carry derivatives (a dict's keys do not): a
            # dict argument is refused when the loop runs (the helper names this line).
            where = ir.Const(self.origin.short())
            self.emit(ir.ExprStmt(ir.Call(runtime.require_not_dict, (seq, where)), self.origin))
        return seq

    def _never_a_dict(self, node: cst.BaseExpression) -> bool:
        """Is the object of a loop surely not a dict: a list or tuple display, a comprehension,
        a name bound to lists alone, a call of range or of a NumPy function?"""
        if isinstance(node, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
            return True
        if isinstance(node, cst.Name):
            return node.value in self.lists
        if isinstance(node, cst.Call) and not (isinstance(node.func, cst.Name) and node.func.value in self.locals):
            callee = self.resolver.resolve(node.func)
            return callee in (range, reversed, list, tuple, sorted) or \
                getattr(callee, "__module__", None) is not None and callee.__module__.split(".")[0] == "numpy"
        return False

    def _calls_zip(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and not (isinstance(node.func, cst.Name) and node.func.value in self.locals) \
            and self.resolver.resolve(node.func) is builtins.zip

    def zipped(self, call: cst.Call, target: cst.BaseExpression, var: str) -> tuple[ir.Atom, list]:
        """zip(x, y) in a for loop: (its length, the prologue that binds target's names to
        x[var], y[var], ...)."""
        names = self.target_names(target, len(call.args))
        seqs = [self.sequence(self.expr(self.positional(a))) for a in call.args]
        lengths = [self.assign(ir.Call(len, (s,))) for s in seqs]
        stop = self.assign(ir.Call(min, tuple(lengths))) if len(lengths) > 1 else lengths[0]
        return stop, [(name, ir.Subscript(seq, ir.Index((ir.Name(var),)))) for name, seq in zip(names, seqs)]

    def unpacked(self, target: cst.BaseExpression, item: ir.Expr) -> list:
        """The prologue that binds a loop's target (a name, or a tuple of names) to item."""
        if isinstance(target, cst.Name):
            return [(target.value, item)]
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) > 1 and all(
                isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements):
            # for W, b in params: each item is taken, then unpacked
            names = self.target_names(target, len(target.elements))
            if len(set(names)) != len(names):
                raise self.error(target, "the same name appears twice in an unpacking")
            taken = self.names.fresh("_item")
            return [(taken, item), (tuple(names), ir.Name(taken))]
        raise self.error(target, "a for loop unpacks into plain names only",
                         "write `for a, b in pairs:`, or loop over range(len(x)) and index")

    def sequence(self, atom: ir.Atom, body: list | None = None) -> ir.Atom:
        """The object a for loop iterates over, kept in a name of its own. body: the nodes of the
        loop's body, where a list the loop goes over needs no other name if they do not rebind it."""
        if isinstance(atom, ir.Const):
            raise S2SError("cannot loop over a constant", self.origin)
        if isinstance(atom, ir.Name) and atom.id in self.lists and body is not None \
                and not any(_rebinds(node, atom.id) for node in body):
            # (another name for a list grown with .append in a loop around this one is one that
            # reverse mode cannot restore pass by pass: sum(ys) of ys = [... for ...] in a loop)
            return atom
        # Python iterates over the object, even if the name is rebound inside the loop.
        return self.assign(atom, self.names.fresh("_seq"))

    def target_names(self, target: cst.BaseExpression, count: int) -> list[str]:
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != count or not all(
            isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements
        ):
            raise self.error(target, f"expected {count} loop variables")
        return [e.value.value for e in target.elements]

    def while_statement(self, node: cst.While) -> None:
        origin = self.origin
        flag = self.broke_flag(node)
        holder: list[ir.Atom] = []
        cond = self.sub_block(lambda: holder.append(self.expr(node.test)))
        test = holder[0]
        if isinstance(test, ir.Const):
            if not test.value:
                self.loop_else(node, flag, origin)
                return
            if not any(isinstance(n, cst.Break) for n in walk_nodes(node.body)):
                raise self.error(node.test, "a while True loop without break never ends",
                                 "write the exit condition into the while test")
        self.loop_depth += 1
        self.broke_flags.append(flag)
        try:
            body = self.sub_block(lambda: self.block(node.body.body))
        finally:
            self.loop_depth -= 1
            self.broke_flags.pop()
        self.emit(ir.While(cond, test, body, origin))
        self.loop_else(node, flag, origin)

    # ---- expressions -----------------------------------------------------------


def _dict_method(iterator: cst.BaseExpression) -> str | None:
    """"items", "keys" or "values" where the loop goes over d.items() (and the others)."""
    if isinstance(iterator, cst.Call) and not iterator.args and isinstance(iterator.func, cst.Attribute) \
            and iterator.func.attr.value in ("items", "keys", "values"):
        return iterator.func.attr.value
    return None


def _rebinds(body: cst.CSTNode, name: str) -> bool:
    """May body bind name (assign, augment, delete, loop over, `:=`, `as`)?"""
    if name in assigned_names(body):
        return True
    for node in walk_nodes(body):
        targets = [node.target] if isinstance(node, (cst.NamedExpr, cst.Del, cst.CompFor)) else \
            [node.name] if isinstance(node, cst.AsName) else []
        if any(isinstance(n, cst.Name) and n.value == name for t in targets for n in walk_nodes(t)):
            return True
    return False


def _breaks_out(body: cst.CSTNode) -> bool:
    """Does body hold a break of its own loop (not of a loop, def or lambda nested in it)?"""
    if isinstance(body, cst.Break):
        return True
    if isinstance(body, (cst.For, cst.While)):
        return _breaks_out(body.orelse) if body.orelse is not None else False  # (a break in its else is ours)
    if isinstance(body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return False
    return any(_breaks_out(child) for child in body.children)


def _indexes_with(body: cst.CSTNode, name: str) -> bool:
    """Does the name appear as an index, `a[name]`, in body?"""
    for node in walk_nodes(body):
        if isinstance(node, cst.Subscript) and any(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name) and e.slice.value.value == name
                for e in node.slice):
            return True
    return False


# Names that generated modules import (math, numpy as np, s2s.runtime): a user's variable of
# one of these names would hide the module from the generated code around it.
RESERVED = ("math", "np", "runtime")


def normalize(fn: Any, written_out: bool = False) -> ir.Function:
    """Parse and lower a user function into the core language (written_out: Normalizer.function)."""
    lowered = Normalizer(parse_function(fn)).function(written_out)
    used = set(lowered.params) | {w for s in ir.walk(lowered.body) for w in ir.stmt_writes(s)}
    clashes = sorted(used & set(RESERVED))
    if clashes:
        names = ir.Names(used | {n for s in ir.walk(lowered.body) for n in ir.stmt_reads(s)} | set(RESERVED))
        mapping = {n: names.fresh(f"{n}_") for n in clashes}
        lowered.display.update({new: old for old, new in mapping.items()})
        lowered.params = [mapping.get(p, p) for p in lowered.params]
        lowered.body = ir.rename(lowered.body, mapping)
    return lowered

