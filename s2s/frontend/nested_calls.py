"""Calls inside a transformed function that are given a function: s2s.jvp(f, (x, ...), (t, ...)),
lowered to a call of f's generated forward mode, f_jvp(x, ..., t, ...); s2s.grad(f)(x) and its
kin; scipy.integrate.odeint(f, y0, t), lowered to a call of its NumPy form. The transform then
reads the function called like user code (the ExpressionLowering half of the Normalizer,
expressions.py, inherits these)."""

from __future__ import annotations

import inspect
import os
import re
from typing import Any, Callable

import libcst as cst

from .. import runtime
from ..errors import S2SError
from ..ir import nodes as ir
from ..scipy_forms import integrate as integrate_forms
from . import static_values
from .lax_forms import assigned_names
from .nested import LOCAL_FUNCTIONS, NESTED_CALLS, NESTED_OBJECTS, undifferentiated
from .source import MISSING, dotted, is_constant, is_user_function, walk_nodes


class JvpCallLowering:
    """The s2s.jvp calls of the Normalizer: self is the Normalizer (expr, assign, error, ...)."""

    def jvp_call(self, node: cst.Call, entry_of: Callable) -> ir.Atom:
        """s2s.jvp(f, (x, ...), (t, ...)) inside a transformed function: a call to f's generated
        forward mode, f_jvp(x, ..., t, ...), which the transform reads like user code. So
        s2s.vmap and s2s.jit of a function that calls s2s.jvp compile, as JAX's vmap(jvp) does."""
        hint = "write s2s.jvp(f, (x, ...), (t, ...)) with a module-level function and tuple displays"
        if len(node.args) != 3 or any(arg.keyword or arg.star for arg in node.args):
            raise self.error(node, "s2s.jvp inside a transformed function takes three positional arguments", hint)
        function, primals, tangents = (arg.value for arg in node.args)
        if not all(isinstance(v, (cst.Tuple, cst.List)) for v in (primals, tangents)) \
                or len(primals.elements) != len(tangents.elements):
            raise self.error(node, "s2s.jvp inside a transformed function needs tuples of primals and tangents "
                             "of one length", hint)
        primals = [self.expr(e.value) for e in primals.elements]
        tangents = [self.expr(e.value) for e in tangents.elements]
        if isinstance(function, cst.Lambda):
            function, primals, tangents = self.jvp_of_lambda(node, function, primals, tangents)
        elif isinstance(function, cst.Name) and (function.value in self.locals or function.value in self.def_names):
            raise self.error(node, "s2s.jvp inside a transformed function takes a module-level function or a "
                             "lambda that calls one, not a function it defines",
                             "pass what the function closes over as arguments with zero tangents: "
                             "s2s.jvp(f, (x, c), (t, 0.0))")
        fun = self.resolver.resolve(function)
        if not is_user_function(fun):
            raise self.error(node, "s2s.jvp inside a transformed function needs a module-level function", hint)
        primals, tangents = self.jvp_defaults(node, fun, primals, tangents)
        try:
            entry = entry_of(fun)
        except S2SError as exc:
            raise self.error(node, f"s2s.jvp of {fun.__name__}: {exc}") from None
        self.references.add((dotted(function), fun.__module__, fun.__qualname__))
        return self.user_call(node, entry, primals + tangents, [])

    def nested_derivative_call(self, node: cst.Call, func: cst.Call, public: Any) -> ir.Atom:
        """s2s.grad(f)(x), s2s.hessian(f, argnums=k)(x, y), value_and_grad, jacfwd, jacrev inside a
        transformed function: a call of the function NESTED_CALLS writes for f, in forward mode
        with nested s2s.jvp (doors/nested_derivatives.py), which the transform reads like user
        code; grad and value_and_grad (with has_aux) in a function that is compiled and not
        differentiated, one call of f's generated reverse mode. f: a module-level function,
        another such transform of one (s2s.grad(s2s.grad(f))), or a lambda or def nested here
        (nested_function)."""
        kind = public.__name__
        hint = (f"write s2s.{kind}(f)(...) or s2s.{kind}(f, argnums=k)(...) with f a module-level function "
                "and k an int")
        reverse = undifferentiated()
        # (has_aux: where the function around is compiled only, its reverse mode returns the aux too)
        reads_aux = reverse and kind in ("grad", "value_and_grad")
        has_aux = self.nested_has_aux(func, kind, node) if reads_aux else False
        argnums = self.nested_argnums(func, kind, node, reads_aux)
        fun, extra, count = self.nested_function(func.args[0].value, kind, hint)
        argnums = self.own_argnums(func, argnums, extra, count, hint)
        try:
            entry = NESTED_CALLS[public](fun, argnums, reverse, has_aux)
        except S2SError as exc:
            raise self.nested_error(node, f"s2s.{kind} of {fun.__name__}", exc) from None
        args, kwargs = self.arguments(node)
        if extra and (kwargs or len(args) != count):
            raise self.error(node, f"s2s.{kind}(...) of a nested function inside a transformed function is given "
                             f"{len(args)} positional arguments for its {count} parameters",
                             "pass each of its parameters, by position")
        return self.user_call(node, entry, args + extra, kwargs)

    def nested_error(self, node: cst.CSTNode, what: str, exc: S2SError) -> S2SError:
        """The refusal of a function given to a transform here: at the construct refused, where the
        refusal names one in the same file (a def or lambda nested here, or a function beside it),
        with the line of the call; at the call otherwise."""
        call = self.parsed.origin(node)
        if exc.origin is None or call is None or exc.origin.filename != call.filename:
            return self.error(node, f"{what}: {exc.reason}", exc.hint)
        return S2SError(f"{what} (called at line {call.line}): {exc.reason}", exc.origin, exc.hint)

    def nested_function(self, function: cst.BaseExpression, kind: str, hint: str,
                        way_out: str | None = None) -> tuple[Any, list, int]:
        """The Python function that s2s.<kind>(function) differentiates inside a transformed
        function (kind: a transform's name, or the dotted name of a library function that calls
        its function argument, scipy.integrate.odeint), the values of the transformed function's
        variables that it reads (passed after its own arguments: a lambda or a def nested here,
        made a function of its own whose parameters they are), and how many parameters it has
        besides them."""
        title = kind if "." in kind else f"s2s.{kind}"
        if isinstance(function, cst.Call):  # s2s.grad(s2s.grad(f)): the helper of the inner call's
            public = None if isinstance(function.func, cst.Name) and function.func.value in self.locals \
                else self.resolver.resolve(function.func)
            if public in NESTED_CALLS and public.__name__ != "value_and_grad":
                argnums = self.nested_argnums(function, public.__name__, function)
                inner, extra, count = self.nested_function(function.args[0].value, public.__name__, hint)
                argnums = self.own_argnums(function, argnums, extra, count, hint)
                try:
                    # (in forward mode: the outer call differentiates it again)
                    return NESTED_CALLS[public](inner, argnums, False), extra, count
                except S2SError as exc:
                    raise self.nested_error(function, f"s2s.{public.__name__} of {inner.__name__}", exc) from None
        if isinstance(function, cst.Lambda):
            return self.local_function(function, kind, "lambda", lambda_def(function), way_out)
        if isinstance(function, cst.Name) and function.value in self.def_names:
            if function.value not in self.local_defs:
                raise self.error(function, f"the nested function {function.value} is used before its def",
                                 "define it before the call")
            return self.local_function(function, kind, function.value, self.local_defs[function.value].node,
                                       way_out)
        fun = MISSING if isinstance(function, cst.Name) and function.value in self.locals \
            else self.resolver.resolve(function)
        if type(fun).__module__.startswith("s2s.doors"):  # g = s2s.grad(f) at module level: g's helper
            entry = next((e for e in (of(fun) for of in NESTED_OBJECTS) if e is not None), None)
            if entry is not None:
                self.references.add((dotted(function), fun.fun.__module__, fun.fun.__qualname__))
                return entry, [], len(inspect.signature(entry).parameters)
        if not is_user_function(fun):
            raise self.error(function, f"{title} inside a transformed function needs a module-level function, "
                             "a lambda or a function defined in it", hint)
        self.references.add((dotted(function), fun.__module__, fun.__qualname__))
        return fun, [], len(inspect.signature(fun).parameters)

    def local_function(self, node: cst.CSTNode, kind: str, name: str, definition: cst.FunctionDef,
                       way_out: str | None = None):
        """A lambda or nested def given to s2s.<kind> (or the library function kind names) inside
        the transformed function, as a module-level function with the variables of this function
        that it reads as parameters after its own (nested_function's triple). Its body reads them
        when it is called, as a closure does."""
        title = kind if "." in kind else f"s2s.{kind}"
        way_out = way_out or (f"define the function at module level and pass what it reads as arguments: "
                              f"s2s.{kind}(f)(y, x) with def f(y, x)")
        if self.frames:
            raise self.error(node, f"{title} of a lambda or nested function is supported in the body of the "
                             "transformed function itself, not inside a nested function or an s2s.lax form's body",
                             way_out)
        params = definition.params
        if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg is not None \
                or params.kwonly_params or params.posonly_params or any(p.default is not None for p in params.params):
            raise self.error(node, f"a function given to {title} inside a transformed function takes plain "
                             "positional parameters (no defaults, *args or keyword-only parameters)", way_out)
        if any(isinstance(n, (cst.Nonlocal, cst.Global)) for n in walk_nodes(definition.body)):
            raise self.error(node, f"a function given to {title} inside a transformed function cannot rebind "
                             "the variables around it (nonlocal, global)", way_out)
        own = {p.name.value for p in params.params} | assigned_names(definition.body)
        extra, cells = [], []
        for free in sorted(_read_names(definition.body) - own):
            if free in self.def_names or free in self.static:
                what = "the nested function" if free in self.def_names else "the static argument"
                raise self.error(node, f"the function given to {title} reads {what} {free} of the transformed "
                                 "function", way_out)
            if free in self.locals:
                extra.append(free)
            elif free in self.resolver.closure:
                cells.append(free)
        origin = self.parsed.origin(node) if name == "lambda" else self.statement_origin(definition)
        place = f"{os.path.basename(origin.filename)}:{origin.line}"
        outer = re.sub(r"\W", "_", self.fn.__name__).strip("_") or "fun"
        label = f"{outer}_{name}" if name != "lambda" else f"{outer}_lambda_{origin.line}"
        body = definition.body
        statements = list(body.body) if isinstance(body, cst.IndentedBlock) \
            else [cst.SimpleStatementLine(list(body.body))]
        # (each statement under the comment that generated code writes, naming the user's line:
        # errors and the code generated from this function name that line, source.py:_user_origins)
        origins = [origin if name == "lambda" else self.statement_origin(stmt) for stmt in statements]
        commented = [stmt.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
            f"# {os.path.basename(o.filename)}:{o.line}  {o.text}"))]) for stmt, o in zip(statements, origins)]
        new_params = list(params.params) + [cst.Param(cst.Name(v)) for v in extra]
        made = definition.with_changes(
            name=cst.Name(label), params=params.with_changes(params=_commas(new_params)),
            body=cst.IndentedBlock(commented), leading_lines=[], decorators=[])
        text = cst.Module([]).code_for_node(made)
        reads = f" with what it reads of {self.fn.__name__} ({', '.join(extra)}) as parameters after its own" \
            if extra else ""
        what = "the lambda" if name == "lambda" else f"the nested function {name}"
        source = f"{what} at {place} in {self.fn.__name__}, a function of its own{reads}"
        try:
            fun = LOCAL_FUNCTIONS[0](self.fn, label, text, cells, source, "lambda" if name == "lambda" else name)
        except S2SError as exc:
            raise self.error(node, exc.reason, exc.hint) from None
        # (a TrainState it reads is an object split into its fields in it too: state.apply_fn(...))
        fun = static_values.carrying(fun, {}, objects={v: self.objects[v] for v in extra if v in self.objects})
        return fun, [self.expr(cst.Name(v)) for v in extra], len(params.params)

    def odeint_call(self, node: cst.Call) -> ir.Atom:
        """scipy.integrate.odeint(func, y0, t, args=(a, b), rtol=..., atol=..., tfirst=...) inside a
        transformed function: a call of its NumPy form (scipy_forms/integrate.py) with the user's
        dynamics, a module-level function or a lambda or def nested here (made a function of its
        own, what it reads of this function passed after args). LSODA's settings that steer its
        own method (Dfun, ml, mu, h0, hmax, hmin, mxordn, ...) do not change the solution and are
        not used; full_output and tcrit are refused."""
        import scipy.integrate

        name = "scipy.integrate.odeint"
        hint = "write odeint(f, y0, t, args=(a, b)) with def f(y, t, a, b) at module level or in this function"
        way_out = ("define the dynamics at module level and pass what they read in args: "
                   "odeint(f, y0, t, args=(a,)) with def f(y, t, a)")
        if any(arg.star for arg in node.args):
            raise self.error(node, f"{name} is called here with * or ** arguments", hint)
        try:
            given = inspect.signature(scipy.integrate.odeint).bind(
                *[a.value for a in node.args if a.keyword is None],
                **{a.keyword.value: a.value for a in node.args if a.keyword is not None}).arguments
        except TypeError as exc:
            raise self.error(node, f"{name} is not called with its parameters here ({exc})", hint) from None
        for option, default in (("full_output", (0, False)), ("tcrit", (None,))):
            value = self.expr(given[option]) if option in given else ir.Const(default[0])
            if not (isinstance(value, ir.Const) and value.value in default):
                raise self.error(given[option], f"s2s differentiates {name} without {option}",
                                 "leave it out (the solution is the same)" if option == "full_output"
                                 else "integrate up to each critical time and from it in two calls")
        order = "y, t"
        if "tfirst" in given:
            tfirst = self.expr(given["tfirst"])
            if not (isinstance(tfirst, ir.Const) and isinstance(tfirst.value, (bool, int))):
                raise self.error(given["tfirst"], f"tfirst of {name} is True or False, written as such", hint)
            order = "t, y" if tfirst.value else "y, t"
        fun, extra, _ = self.nested_function(given["func"], name, hint, way_out)
        y0, t = self.expr(given["y0"]), self.expr(given["t"])
        args_node = given.get("args")
        if args_node is None:
            args = self.assign(ir.Build("tuple", tuple(extra)))
        elif isinstance(args_node, cst.Tuple):
            args = self.assign(ir.Build("tuple", tuple(self.expr(e.value) for e in args_node.elements) + tuple(extra)))
        elif extra:
            raise self.error(args_node, f"the dynamics given to {name} read variables of the transformed function, "
                             "and args is not a tuple display", "write args as a tuple display: args=(a, b)")
        else:
            args = self.expr(args_node)

        def setting(option, default, unset=(None,)):
            """An option's value, its default where it is not given or given as one of unset."""
            found = self.expr(given[option]) if option in given else None
            return ir.Const(default) if found is None or isinstance(found, ir.Const) and found.value in unset \
                else found

        tolerance = integrate_forms.DEFAULT_TOLERANCE
        rtol, atol = setting("rtol", tolerance), setting("atol", tolerance)
        mxstep = setting("mxstep", integrate_forms.MAX_STEPS, unset=(None, 0))  # (odeint's 0: its default)
        # (specialised to the dynamics and the order of their arguments, which its code has written in)
        callee, arguments, _ = self.static_callee(
            integrate_forms.odeint, [ir.Const(fun), y0, t, args, rtol, atol, mxstep, ir.Const(order)], [])
        return self.user_call(node, callee, arguments, [])

    def statement_origin(self, stmt: cst.CSTNode):
        """Where a statement of a nested function stands: that of `f = lambda y: body` is the
        `return body` of the def written for it (lower.py), whose body is the lambda's own."""
        try:
            return self.parsed.origin(stmt)
        except KeyError:
            if isinstance(stmt, cst.FunctionDef):
                stmt = stmt.body.body[0]
            return self.parsed.origin(stmt.body[0].value)

    def nested_has_aux(self, func: cst.Call, kind: str, node: cst.CSTNode) -> bool:
        """has_aux=True or False of s2s.<kind>(f, has_aux=...) (False where it is not given)."""
        for arg in func.args[1:]:
            if arg.keyword is not None and arg.keyword.value == "has_aux":
                value = arg.value
                if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
                    raise self.error(arg, f"s2s.{kind} inside a transformed function takes has_aux=True or False, "
                                     "written as such", f"write s2s.{kind}(f, has_aux=True)(...)")
                return value.value == "True"
        return False

    def nested_argnums(self, func: cst.Call, kind: str, node: cst.CSTNode, has_aux_read: bool = False) -> int:
        """The int literal argnums of s2s.<kind>(f, argnums) (0 where none is given; has_aux is
        nested_has_aux's, where the function around is compiled only)."""
        hint = (f"write s2s.{kind}(f)(...) or s2s.{kind}(f, argnums=k)(...) with f a module-level function "
                "and k an int")
        if not func.args or func.args[0].keyword is not None or func.args[0].star:
            raise self.error(node, f"s2s.{kind} inside a transformed function takes the function first", hint)
        argnums: Any = 0
        for position, arg in enumerate(func.args[1:], start=1):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "has_aux" and has_aux_read:
                continue
            if keyword == "has_aux" and kind in ("grad", "value_and_grad"):
                raise self.error(arg, f"s2s.{kind}(f, has_aux=True) inside a function s2s differentiates or batches is "
                                 "not supported (it is inside one s2s.jit compiles only)",
                                 "return the aux from a second call of the function, or differentiate a function "
                                 "that returns the value alone")
            if arg.star or not (keyword == "argnums" or keyword is None and position == 1):
                raise self.error(arg, f"s2s.{kind} inside a transformed function takes argnums only (no "
                                 "has_aux or other options)", hint)
            argnums = _int_literal(arg.value)
            if argnums is None:
                raise self.error(arg, f"s2s.{kind} inside a transformed function takes an int literal as argnums",
                                 hint)
        return argnums

    def own_argnums(self, func: cst.Call, argnums: int, extra: list, count: int, hint: str) -> int:
        """argnums of a lambda or nested def that reads the transformed function's variables:
        among its own parameters (-1 its last), which come before them."""
        if not extra:
            return argnums
        if not -count <= argnums < count:
            raise self.error(func, f"argnums {argnums} is out of range for the {count} parameters of the nested "
                             "function", hint)
        return argnums % count

    def jvp_defaults(self, node: cst.Call, fun: Any, primals: list, tangents: list) -> tuple[list, list]:
        """The primals and tangents with fun's defaults for the parameters not given (f(u, c=2.0)
        and s2s.jvp(f, (x,), (t,))): the constant, with a zero tangent, as s2s.jvp does outside."""
        params = list(inspect.signature(fun).parameters.values())
        if len(primals) > len(params):
            raise self.error(node, f"s2s.jvp of {fun.__name__} is given {len(primals)} primals for its "
                             f"{len(params)} parameters")
        primals, tangents = list(primals), list(tangents)
        for param in params[len(primals):]:
            if param.default is param.empty or not is_constant(param.default):
                raise self.error(node, f"s2s.jvp of {fun.__name__} is not given its parameter {param.name}, "
                                 "which has no constant default", "pass a primal and a tangent for it")
            primals.append(ir.Const(param.default))
            tangents.append(self.assign(ir.Call(runtime.zeros_like, (ir.Const(param.default),))))
        return primals, tangents

    def jvp_of_lambda(self, node: cst.Call, lam: cst.Lambda, primals: list, tangents: list):
        """s2s.jvp(lambda u: f(u, c), (x,), (t,)) is s2s.jvp(f, (x, c), (t, zeros_like(c))): the
        same values and tangents, where the lambda calls a module-level function once and passes
        each of its parameters as a whole argument. Returns (f's node, primals, tangents)."""
        hint = ("write s2s.jvp(lambda u: f(u, c), (x,), (t,)) with one call of a module-level function, or "
                "s2s.jvp(f, (x, c), (t, 0.0)) with zero tangents for what it closes over")
        if lam.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or lam.params.star_kwarg is not None \
                or lam.params.kwonly_params or lam.params.posonly_params \
                or any(p.default is not None for p in lam.params.params):
            raise self.error(lam, "a lambda given to s2s.jvp inside a transformed function takes plain positional "
                             "parameters (no defaults, *args or keyword-only parameters)", hint)
        params = [p.name.value for p in lam.params.params]
        call = lam.body
        if not isinstance(call, cst.Call) or any(a.keyword or a.star for a in call.args):
            raise self.error(lam, "a lambda given to s2s.jvp inside a transformed function calls one function "
                             "with positional arguments", hint)
        places = {}
        for k, arg in enumerate(call.args):
            if isinstance(arg.value, cst.Name) and arg.value.value in params:
                places.setdefault(arg.value.value, []).append(k)
            elif any(isinstance(n, cst.Name) and n.value in params for n in walk_nodes(arg.value)):
                raise self.error(arg, "a lambda given to s2s.jvp passes its parameters as whole arguments", hint)
        if sorted(places) != sorted(params) or any(len(v) > 1 for v in places.values()) \
                or len(params) != len(primals):
            raise self.error(lam, f"the lambda given to s2s.jvp passes each of its {len(params)} parameters once "
                             f"and is given {len(primals)} primals", hint)
        new_primals, new_tangents = [], []
        for k, arg in enumerate(call.args):
            if isinstance(arg.value, cst.Name) and arg.value.value in params:
                which = params.index(arg.value.value)
                new_primals.append(primals[which])
                new_tangents.append(tangents[which])
            else:  # what the lambda closes over: a constant of the derivative
                value = self.expr(arg.value)
                new_primals.append(value)
                new_tangents.append(self.assign(ir.Call(runtime.zeros_like, (value,))))
        return call.func, new_primals, new_tangents


def _int_literal(node: cst.BaseExpression) -> int | None:
    """The int an argnums literal spells (1, -1), or None."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        return -int(node.expression.evaluated_value)
    return None


def lambda_def(lam: cst.Lambda, name: str = "lambda") -> cst.FunctionDef:
    """`def name(params): return body` of `lambda params: body` (its body the lambda's node)."""
    params = lam.params.with_changes(params=_commas(list(lam.params.params)))
    return cst.FunctionDef(cst.Name(name), params, cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(lam.body)])]))


def _commas(params: list) -> list:
    """Parameters written `a, b, c` (a lambda's are written without spaces around its colon)."""
    return [p.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_param=cst.SimpleWhitespace(""),
                           star="") for p in params]


def _read_names(body: cst.CSTNode) -> set[str]:
    """The names a function body reads as variables (not attributes or keywords: np.sum reads np)."""
    names: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    body.visit(Collect())
    return names
