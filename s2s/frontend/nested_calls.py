"""s2s.jvp(f, (x, ...), (t, ...)) called inside a transformed function: lowered to a call of
f's generated forward mode, f_jvp(x, ..., t, ...), which the transform then reads like user
code (the ExpressionLowering half of the Normalizer, expressions.py, inherits it)."""

from __future__ import annotations

import inspect
from typing import Any, Callable

import libcst as cst

from .. import runtime
from ..errors import S2SError
from ..ir import nodes as ir
from .nested import NESTED_CALLS
from .source import dotted, is_constant, is_user_function, walk_nodes


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
        """s2s.grad(f)(x), s2s.hessian(f, argnums=k)(x, y), jacfwd, jacrev inside a transformed
        function: a call of the function NESTED_CALLS writes for f, in forward mode with nested
        s2s.jvp (doors/nested_derivatives.py), which the transform reads like user code."""
        kind = public.__name__
        hint = (f"write s2s.{kind}(f)(...) or s2s.{kind}(f, argnums=k)(...) with f a module-level function "
                "and k an int")
        if not func.args or func.args[0].keyword is not None or func.args[0].star:
            raise self.error(node, f"s2s.{kind} inside a transformed function takes the function first", hint)
        argnums: Any = 0
        for position, arg in enumerate(func.args[1:], start=1):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if arg.star or not (keyword == "argnums" or keyword is None and position == 1):
                raise self.error(arg, f"s2s.{kind} inside a transformed function takes argnums only (no "
                                 "has_aux or other options)", hint)
            argnums = _int_literal(arg.value)
            if argnums is None:
                raise self.error(arg, f"s2s.{kind} inside a transformed function takes an int literal as argnums",
                                 hint)
        function = func.args[0].value
        if isinstance(function, cst.Name) and (function.value in self.locals or function.value in self.def_names) \
                or isinstance(function, cst.Lambda):
            raise self.error(func, f"s2s.{kind} inside a transformed function takes a module-level function, "
                             "not a lambda or a function it defines", hint)
        fun = self.resolver.resolve(function)
        if not is_user_function(fun):
            raise self.error(func, f"s2s.{kind} inside a transformed function needs a module-level function", hint)
        try:
            entry = NESTED_CALLS[public](fun, argnums)
        except S2SError as exc:
            raise self.error(node, f"s2s.{kind} of {fun.__name__}: {exc.reason}", exc.hint) from None
        self.references.add((dotted(function), fun.__module__, fun.__qualname__))
        args, kwargs = self.arguments(node)
        return self.user_call(node, entry, args, kwargs)

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
