"""The derivatives of a function with a rule of the user's (s2s/rules/custom.py).

s2s.custom_vjp, reverse mode: a call of fwd, then of bwd.

    def clip_gradient_vjp_wrt_x(x, lo, hi, out_bar):
        out, residuals = clip_gradient_fwd(x, lo, hi)
        x_bar, lo_bar, hi_bar = clip_gradient_bwd(residuals, out_bar)
        return (out, (runtime.derivative_like(x_bar, x),))

s2s.custom_jvp, forward mode: a call of the rule, zeros for the tangents not asked for;
reverse mode: the rule's own reverse mode with respect to its tangents (at zero tangents),
which is its transpose, as the tangent is linear in them.

    def f_jvp_wrt_x(x, a, x_dot):
        out, out_dot = f_rule((x, a), (x_dot, runtime.zeros_like(a)))
        return (out, runtime.derivative_like(out_dot, out))

    def f_vjp_wrt_x(x, a, out_bar):
        rule_out, (tangents_bar,) = f_rule_vjp_wrt_tangents(
            (x, a), (runtime.zeros_like(x), runtime.zeros_like(a)), (runtime.zeros_like(out_bar), out_bar))
        return (rule_out[0], (runtime.derivative_like(tangents_bar[0], x),))

where f_rule_vjp_wrt_tangents checks, before its reverse sweep, that the rule's tangent has
its value's shape (a cotangent of the value's shape would otherwise meet it there).

The rules are the user's functions, emitted as plain functions of the module (the frontend
collects them with the function), so the module still compiles under numba.njit; each
derivative is checked to have its variable's shape.
"""

from __future__ import annotations

import ast

from ..codegen.emit import Emitter, assign, name, runtime_call
from ..errors import Origin, S2SError
from ..ir import nodes as ir
from ..rules import facts
from ..rules.custom import custom_vjp


def custom_vjp_function(lowered: ir.Function, functions: list[ir.Function], emitter: Emitter,
                        active_params: list[str], function_name: str) -> ast.FunctionDef:
    """The vjp of lowered, whose Python function is an s2s.custom_vjp, for active_params."""
    fwd, bwd = lowered.python.rule_functions()
    by_function = {id(f.python): f for f in functions}
    returned_at = _check_cotangent_count(by_function[id(bwd)], lowered)
    names = ir.Names(set(lowered.params) | {"np", "math", "runtime"})
    out_bar, out, residuals = names.fresh("out_bar"), names.fresh("out"), names.fresh("residuals")
    bars = [names.fresh(f"{p}_bar") for p in lowered.params]
    rule_names = emitter.function_names[id(fwd)], emitter.function_names[id(bwd)]
    params = [name(p) for p in lowered.params]
    body = [
        ast.Expr(ast.Constant(f"Reverse mode of {lowered.name} ({lowered.origin.short()}) by its s2s.custom_vjp "
                              f"rule: returns (value, adjoints of {', '.join(active_params) or 'nothing'}).")),
        assign(ast.Tuple([name(out, True), name(residuals, True)], ast.Store()),
               ast.Call(name(rule_names[0]), params, [])),
        # (one argument: its cotangent taken out, as s2s reads no one-element unpacking)
        emitter.origin_comment(returned_at),
        assign(ast.Tuple([name(b, True) for b in bars], ast.Store()) if len(bars) > 1 else bars[0],
               ast.Call(name(rule_names[1]), [name(residuals), name(out_bar)], []) if len(bars) > 1 else
               ast.Subscript(ast.Call(name(rule_names[1]), [name(residuals), name(out_bar)], []), ast.Constant(0),
                             ast.Load())),
        # each checked to have its argument's shape: another would broadcast into a wrong gradient
        ast.Return(ast.Tuple([name(out), ast.Tuple([runtime_call("derivative_like", name(bars[lowered.params.index(p)]),
                                                                 name(p)) for p in active_params],
                                                   ast.Load())], ast.Load())),
    ]
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in lowered.params] + [ast.arg(out_bar)],
                         kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.FunctionDef(function_name, args, body, [], None, lineno=0)


def custom_jvp_function(lowered: ir.Function, functions: list[ir.Function], emitter: Emitter,
                        active_params: list[str], function_name: str) -> ast.FunctionDef:
    """The forward mode of lowered, whose Python function is an s2s.custom_jvp, for the tangents
    of active_params (the jvp convention: the parameters, then those tangents)."""
    (rule,) = lowered.python.rule_functions()
    check_jvp_rule(next(f for f in functions if f.python is rule), lowered)
    names = ir.Names(set(lowered.params) | {"np", "math", "runtime"})
    dots = {p: names.fresh(f"{p}_dot") for p in active_params}
    out, out_dot = names.fresh("out"), names.fresh("out_dot")
    tangents = [name(dots[p]) if p in dots else runtime_call("zeros_like", name(p)) for p in lowered.params]
    body = [
        ast.Expr(ast.Constant(f"Forward mode of {lowered.name} ({lowered.origin.short()}) by its s2s.custom_jvp "
                              f"rule: returns (value, tangent) for the tangents {', '.join(dots.values())}.")),
        assign(ast.Tuple([name(out, True), name(out_dot, True)], ast.Store()),
               ast.Call(name(emitter.function_names[id(rule)]), [_tuple(lowered.params), ast.Tuple(tangents,
                                                                                                  ast.Load())], [])),
        ast.Return(ast.Tuple([name(out), runtime_call("derivative_like", name(out_dot), name(out))], ast.Load())),
    ]
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in lowered.params + list(dots.values())],
                         kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.FunctionDef(function_name, args, body, [], None, lineno=0)


def transposed_jvp_function(lowered: ir.Function, emitter: Emitter, variants, active_params: list[str],
                            function_name: str) -> ast.FunctionDef:
    """The reverse mode of lowered, an s2s.custom_jvp, for active_params: the rule's reverse mode
    with respect to its tangents (variants names it, and the rule's vjp is made for it)."""
    (rule,) = lowered.python.rule_functions()
    rule_function = next(f for f in variants.functions if f.python is rule)
    check_jvp_rule(rule_function, lowered)
    _refuse_branches_on_tangents(rule_function, lowered)
    rule_vjp = variants(rule, (1,))  # with respect to its second parameter, the tangents
    variants.tangent_transposes.add(rule_vjp)
    names = ir.Names(set(lowered.params) | {"np", "math", "runtime"})
    out_bar, rule_out, rule_bars = names.fresh("out_bar"), names.fresh("rule_out"), names.fresh("tangents_bar")
    zeros = ast.Tuple([runtime_call("zeros_like", name(p)) for p in lowered.params], ast.Load())
    # (the value does not depend on the tangents; its zero has the tangent's type, so that each
    # return of a rule with several gives its adjoint one type under Numba)
    seed = ast.Tuple([runtime_call("zeros_like", name(out_bar)), name(out_bar)], ast.Load())
    body = [
        ast.Expr(ast.Constant(f"Reverse mode of {lowered.name} ({lowered.origin.short()}) by its s2s.custom_jvp "
                              f"rule, transposed: returns (value, adjoints of {', '.join(active_params)}).")),
        assign(ast.Tuple([name(rule_out, True), ast.Tuple([name(rule_bars, True)], ast.Store())], ast.Store()),
               ast.Call(name(rule_vjp), [_tuple(lowered.params), zeros, seed], [])),
        # (the rule's vjp checked that its tangent has the value's shape, before its reverse sweep)
        ast.Return(ast.Tuple([
            ast.Subscript(name(rule_out), ast.Constant(0), ast.Load()),
            ast.Tuple([runtime_call("derivative_like", ast.Subscript(name(rule_bars), ast.Constant(
                lowered.params.index(p)), ast.Load()), name(p)) for p in active_params], ast.Load())], ast.Load())),
    ]
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in lowered.params] + [ast.arg(out_bar)],
                         kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.FunctionDef(function_name, args, body, [], None, lineno=0)


def by_rule_function(lowered: ir.Function, emitter: Emitter, function_name: str) -> ast.FunctionDef:
    """lowered's value as its rule gives it: fwd(...)[0] of a custom_vjp, rule(primals, zero
    tangents)[0] of a custom_jvp (a rule's value may differ from the body's: a stable form)."""
    first = lowered.python.rule_functions()[0]
    if isinstance(lowered.python, custom_vjp):
        call = ast.Call(name(emitter.function_names[id(first)]), [name(p) for p in lowered.params], [])
    else:
        zeros = ast.Tuple([runtime_call("zeros_like", name(p)) for p in lowered.params], ast.Load())
        call = ast.Call(name(emitter.function_names[id(first)]), [_tuple(lowered.params), zeros], [])
    body = [ast.Expr(ast.Constant(f"The value of {lowered.name} ({lowered.origin.short()}) as its s2s."
                                  f"{lowered.python.kind} rule gives it, where a derivative is taken.")),
            ast.Return(ast.Subscript(call, ast.Constant(0), ast.Load()))]
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in lowered.params], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    return ast.FunctionDef(function_name, args, body, [], None, lineno=0)


def _tuple(params: list[str]) -> ast.Tuple:
    return ast.Tuple([name(p) for p in params], ast.Load())


def refuse_forward(lowered: ir.Function) -> None:
    raise S2SError(f"{lowered.name} has an s2s.custom_vjp rule, which gives its reverse mode only: forward mode "
                   "(jvp, jacfwd, and s2s.jvp inside a function) has no rule to use, as in JAX",
                   lowered.origin, "differentiate in reverse mode (grad, jacrev; hessian and jacfwd(jacrev(f)) "
                   "work), or call the function without the decorator where forward mode is needed")


def _returned_lengths(fn: ir.Function) -> tuple[set, Origin]:
    """The lengths of the tuples fn returns, on every path (None for a path that returns
    something else than a tuple written out), and where it returns (its last return)."""
    definitions: dict[str, list] = {}
    for stmt in ir.walk(fn.body):
        if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 and not stmt.inplace:
            definitions.setdefault(stmt.targets[0], []).append(stmt)

    def lengths(atom, seen=()) -> set:
        if isinstance(atom, ir.Build) and atom.kind == "tuple":
            return {len(atom.elts)}
        if isinstance(atom, ir.Name) and atom.id not in seen and atom.id in definitions:
            return set().union(*(lengths(s.value, seen + (atom.id,)) for s in definitions[atom.id]))
        return {None}

    returns = [s for s in ir.walk(fn.body) if isinstance(s, ir.Return)]
    return lengths(fn.result), returns[-1].origin if returns else fn.origin


def _check_cotangent_count(bwd: ir.Function, of: ir.Function) -> Origin:
    """bwd must return a tuple with one cotangent per argument of the function, on every path:
    unpacked by the caller, anything else would be cut or spread over the arguments silently.
    Returns where bwd returns (its last return statement)."""
    found, returned_at = _returned_lengths(bwd)
    if found != {len(of.params)}:
        raise S2SError(f"the custom_vjp rule of {of.name}: {bwd.name} must return a tuple with one cotangent per "
                       f"argument of {of.name} ({len(of.params)}: {', '.join(of.params)}), written out in its "
                       "return statement", returned_at,
                       f"return ({', '.join(p + '_bar' for p in of.params)}), each of its argument's shape "
                       "(0.0, np.zeros_like(...) or None for one that has no derivative)")
    return returned_at


def check_jvp_rule(rule: ir.Function, of: ir.Function) -> None:
    """The jvp rule must return a pair, (value, tangent), on every path, as JAX requires."""
    found, returned_at = _returned_lengths(rule)
    if found != {2}:
        raise S2SError(f"the custom_jvp rule of {of.name}: {rule.name} must return a pair (value, tangent), "
                       "written out in its return statement", returned_at,
                       "return primal_out, tangent_out")


def _tangent_dependent(rule: ir.Function) -> set[str]:
    """The variables of a custom_jvp rule whose values depend on the values of its tangents
    (its second parameter), through data (x_dot.shape and np.zeros_like(x_dot) do not)."""
    dependent = {rule.params[1]}

    def reads(value) -> list[str]:
        if isinstance(value, ir.Attribute) and value.attr in ir.SHAPE_ATTRIBUTES:
            return []
        if isinstance(value, ir.Call) and facts(value.fn).reads_shape_of:
            # np.shape(x_dot), np.zeros_like(x_dot), np.full_like(x_dot, v) (v's values are read)
            shape_only = facts(value.fn).reads_shape_of
            return [n for k, a in enumerate(value.args) if k not in shape_only for n in ir.names_in(a)]
        return ir.names_in(value)

    builds: dict[str, list] = {}  # name -> the tuple displays bound to it (element by element below)
    for stmt in ir.walk(rule.body):
        for var in ir.stmt_writes(stmt):
            builds.setdefault(var, []).append(stmt.value if isinstance(stmt, ir.Assign) and not stmt.unpack
                                              and isinstance(stmt.value, ir.Build) else None)

    def unpacked(stmt) -> list | None:
        """[(target, element names)] of `a, b = t` where t is only ever a display of as many."""
        if not (stmt.unpack and isinstance(stmt.value, ir.Name)):
            return None
        shown = builds.get(stmt.value.id, [None])
        if any(b is None or len(b.elts) != len(stmt.targets) for b in shown):
            return None
        return [(t, [n for b in shown for n in ir.names_in(b.elts[k])]) for k, t in enumerate(stmt.targets)]

    changed = True
    while changed:
        changed = False
        for stmt in ir.walk(rule.body):
            if isinstance(stmt, ir.Assign) and unpacked(stmt) is not None:
                for target, read in unpacked(stmt):
                    if target not in dependent and any(v in dependent for v in read):
                        dependent.add(target)
                        changed = True
                continue
            if isinstance(stmt, ir.Assign):
                read, written = reads(stmt.value), list(stmt.targets)
            elif isinstance(stmt, (ir.SetItem, ir.ExprStmt, ir.For)):
                read, written = ir.stmt_reads(stmt), ir.stmt_writes(stmt)
            else:
                continue
            if any(v in dependent for v in read) and not set(written) <= dependent:
                dependent |= set(written)
                changed = True
    return dependent


def _refuse_branches_on_tangents(rule: ir.Function, of: ir.Function) -> None:
    """Reverse mode runs the rule's transpose at zero tangents (its tangent is linear in them):
    an if, while or range bound that reads the tangents' values would take the path of a zero
    tangent there (`if np.all(x_dot == 0): return y, 0 * y` gave a gradient of 0); and a
    function that is not linear in them is differentiated at 0 (np.abs(x_dot) * np.sign(x_dot),
    which is x_dot, gave 0). JAX refuses both under grad (the tangent is abstract there, and a
    nonlinear function of it has no transpose); so does s2s, at the statement."""
    dependent = _tangent_dependent(rule)
    for stmt in ir.walk(rule.body):
        if isinstance(stmt, (ir.If, ir.While, ir.For)) and any(v in dependent for v in ir.stmt_reads(stmt)):
            raise S2SError(f"the custom_jvp rule of {of.name}: {rule.name} branches (or loops) on the values of its "
                           "tangents; reverse mode (grad, jacrev, hessian) runs the rule transposed at zero "
                           "tangents, where this would take the zero tangent's path", stmt.origin,
                           "compute the tangent without a test on it (the rule must be linear in the tangents, "
                           "as in JAX): branch on the primals, or use np.where")

    def is_dependent(atom) -> bool:
        return isinstance(atom, ir.Name) and atom.id in dependent

    for stmt in ir.walk(rule.body):
        call = stmt.value if isinstance(stmt, (ir.Assign, ir.ExprStmt)) else None
        if not isinstance(call, ir.Call):
            continue
        args = list(call.args) + [a for _, a in call.kwargs]
        flags = [is_dependent(a) for a in args]
        fn = call.fn
        linear = facts(fn).linear  # (Facts.linear: "all", "each", or the positions)
        if not any(flags) or linear == "all":
            continue
        if linear == "each":  # a product: linear in each factor alone
            bad = sum(flags) > 1
        elif linear is not None:  # x / y in x, np.where(c, x, y) in x and y; np.clip in none
            bad = any(flag for k, flag in enumerate(flags) if k not in linear)
        else:
            bad = facts(fn).elementwise
        if bad:
            raise S2SError(f"the custom_jvp rule of {of.name}: {rule.name} computes its tangent with a function "
                           f"that is not linear in the tangents ({getattr(fn, '__name__', fn)}); reverse mode (grad, "
                           "jacrev, hessian) transposes the rule, which is exact only for a tangent linear in them",
                           stmt.origin, "write the tangent as sums of the tangents times functions of the primals "
                           "(as JAX requires of a rule), e.g. np.cos(x) * x_dot, np.where(x > 0, x_dot, 0.0)")
