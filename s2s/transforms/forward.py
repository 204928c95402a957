"""The jvp transform: a normalized function -> Python source of its forward mode.

Each statement is followed by the statement that computes its tangent (`x_dot`), from the
`y_dot = ...` line of its rule in templates/. Tangents that are known to be zero are left
out of the expressions at transform time; a variable that is assigned a value with no
tangent gets `runtime.zeros_like(...)`, so its tangent exists wherever it does. No tape.
"""

from __future__ import annotations

import ast
import copy

from ..ir import nodes as ir
from .. import runtime
from ..analysis.activity import analyse, bind, rule_for
from ..codegen.emit import Emitter, assign, name, runtime_call
from ..frontend.source import is_user_function
from .rule_helpers import all_names, drop_defaults, simplify

ZERO = "__s2s_zero__"  # marks a tangent known to be zero inside a rule's expression


class JVP:
    def __init__(self, fn: ir.Function, emitter: Emitter, active_params: list[str], function_name: str,
                 variant, entry: bool = False):
        self.fn = fn
        # variant(python function, positions of the arguments with tangents) -> that jvp's name
        self.variant = variant
        self.em = emitter
        self.function_name = function_name
        self.names = ir.Names(all_names(fn) | {"np", "math", "runtime"})
        # (the entry's arguments with tangents hold floats: the doors refuse integer arrays there)
        self.an = analyse(fn, active_params, active_params if entry else ())
        self.active_params = active_params
        self.dots: dict[str, str] = {}

    def dot(self, var: str) -> str:
        if var not in self.dots:
            self.dots[var] = self.names.fresh(f"{var}_dot")
        return self.dots[var]

    def has_tangent(self, atom) -> bool:
        return isinstance(atom, ir.Name) and self.an.is_active(atom.id)

    def tangent_or_zeros(self, atom) -> ast.expr:
        if self.has_tangent(atom):
            return name(self.dot(atom.id))
        return runtime_call("zeros_like", self.em.atom(atom))

    # ---- statements -------------------------------------------------------------

    def block(self, block: list) -> list:
        out: list = []
        last_origin = None
        for stmt in block:
            if isinstance(stmt, ir.Return):
                continue
            if stmt.origin != last_origin:
                out.append(self.em.origin_comment(stmt.origin))
                last_origin = stmt.origin
            out += self.statement(stmt)
        return out

    def statement(self, stmt) -> list:
        em = self.em
        if isinstance(stmt, (ir.If, ir.For, ir.While)):
            return [em.primal(stmt, body_of=self.block)]
        if isinstance(stmt, ir.ExprStmt):
            return [em.primal(stmt)] + self.mutating_helper(stmt.value)
        if isinstance(stmt, ir.SetItem):
            return self.setitem(stmt)
        if isinstance(stmt, ir.Push):
            out = [em.primal(stmt)]
            if self.an.is_active(stmt.tape):
                out.append(ast.Expr(ast.Call(ast.Attribute(name(self.dot(stmt.tape)), "append", ast.Load()),
                                             [self.tangent_or_zeros(stmt.value)], [])))
            return out
        return self.assignment(stmt)

    def mutating_helper(self, call: ir.Call) -> list:
        """runtime.index_add(a, idx, v) and runtime.clear(a, idx) update a's tangent alike."""
        if call.fn not in (runtime.index_add, runtime.clear) or not self.has_tangent(call.args[0]):
            return []
        args = [name(self.dot(call.args[0].id)), self.em.atom(call.args[1])]
        if call.fn is runtime.index_add:
            if not self.has_tangent(call.args[2]):
                return []
            args.append(name(self.dot(call.args[2].id)))
        return [ast.Expr(runtime_call(call.fn.__name__, *args))]

    def setitem(self, stmt: ir.SetItem) -> list:
        emitted = self.em.primal(stmt)
        out = emitted if isinstance(emitted, list) else [emitted]
        if not self.an.is_active(stmt.base):
            return out
        target = ast.Subscript(name(self.dot(stmt.base)), self.em.index(stmt.index), ast.Store())
        if stmt.op is None:
            value = name(self.dot(stmt.value.id)) if self.has_tangent(stmt.value) else ast.Constant(0.0)
            out.append(ast.Assign([target], value, lineno=0))
        elif self.has_tangent(stmt.value):
            op = ast.Add() if stmt.op == "+" else ast.Sub()
            # `t[k] += v` into a list or dict: the tangent there may be another's (t = [x + 1.0]
            # holds x_dot), which `+=` would change in place; `t_dot[k] = t_dot[k] + v_dot` stores a
            # new one (into an array it is what `+=` does)
            loaded = ast.Subscript(name(self.dot(stmt.base)), self.em.index(stmt.index), ast.Load())
            out.append(ast.Assign([target], ast.BinOp(loaded, op, name(self.dot(stmt.value.id))), lineno=0))
        return out

    def assignment(self, stmt: ir.Assign) -> list:
        em = self.em
        value = stmt.value
        targets = stmt.targets
        active = [t for t in targets if self.an.is_active(t)]
        if isinstance(value, ir.Call) and is_user_function(value.fn) and active:
            return self.user_call(stmt)
        primal = em.primal(stmt)
        if isinstance(primal, list):  # the run-time alias checks (one per other name), then the assignment
            checks = primal[:-1]
            return checks + self.assignment(ir.Assign(stmt.targets, stmt.value, stmt.origin, stmt.inplace))
        if not active:
            return [primal]
        if stmt.unpack:
            if self.has_tangent(value):
                tgt = ast.Tuple([name(self.dot(t), True) for t in targets], ast.Store())
                return [primal, ast.Assign([tgt], name(self.dot(value.id)), lineno=0)]
            return [primal] + [assign(self.dot(t), runtime_call("zeros_like", name(t))) for t in targets]
        target = targets[0]
        zeros = assign(self.dot(target), runtime_call("zeros_like", name(target)))
        if isinstance(value, ir.Name):
            if self.has_tangent(value):
                return [primal, assign(self.dot(target), name(self.dot(value.id)))]
            return [primal, zeros]
        if isinstance(value, ir.Const):
            return [primal, zeros]
        if isinstance(value, ir.Pop):
            if self.an.is_active(value.tape):
                return [primal, assign(self.dot(target), ast.Call(
                    ast.Attribute(name(self.dot(value.tape)), "pop", ast.Load()), [], []))]
            return [primal, zeros]
        if isinstance(value, ir.Build):
            elts = [self.tangent_or_zeros(a) for a in value.elts]
            if value.kind == "dict":
                tangent = ast.Dict([em.const(k) for k in value.keys], elts)
            elif value.kind == "list":
                tangent = ast.List(elts, ast.Load())
            else:
                tangent = ast.Tuple(elts, ast.Load())
            return [primal, assign(self.dot(target), tangent)]
        if isinstance(value, ir.Subscript):
            if self.has_tangent(value.value):
                return [primal, assign(self.dot(target), ast.Subscript(
                    name(self.dot(value.value.id)), em.index(value.index), ast.Load()))]
            return [primal, zeros]
        if isinstance(value, ir.Attribute):
            if self.has_tangent(value.value) and value.attr not in ir.SHAPE_ATTRIBUTES:
                return [primal, assign(self.dot(target), ast.Attribute(
                    name(self.dot(value.value.id)), value.attr, ast.Load()))]
            return [primal, zeros]
        return self.rule_call(stmt, primal, zeros)

    def rule_call(self, stmt: ir.Assign, primal: ast.stmt, zeros: ast.stmt) -> list:
        call = stmt.value
        target = stmt.targets[0]
        found = rule_for(call, stmt.origin)
        if found is None or found.kind != "rule" or not found.forward:
            return [primal, zeros]
        bound = bind(call, found, stmt.origin)
        em = self.em
        operand_values: set[str] = set()
        line = found.forward[0]
        uses_result = any(isinstance(n, ast.Name) and n.id == found.result for n in ast.walk(line.value))
        operands = {a.id for a in bound.values() if isinstance(a, ir.Name)}
        result_name = [target]
        if uses_result and target in operands:
            # y = f(y) with a tangent that reads both: compute the new y under another name.
            result_name[0] = self.names.fresh(f"{target}_new")
        owner = self
        local_names = {n: self.names.fresh(f"{target}_{n}") for n in found.locals}

        class Substitute(ast.NodeTransformer):
            def visit_Name(self, node):
                ident = node.id
                if ident in local_names:
                    return name(local_names[ident])
                if ident == found.result:
                    return name(result_name[0])
                if ident.endswith("_dot") and ident[:-4] in bound:
                    atom = bound[ident[:-4]]
                    if owner.has_tangent(atom):
                        tangent = name(owner.dot(atom.id))
                        tangent._s2s_tangent = True
                        return tangent
                    zero = name(ZERO)
                    zero._s2s_primal = atom  # a zero tangent remembers its primal, for zeros_like
                    return zero
                if ident in bound:
                    atom = bound[ident]
                    if isinstance(atom, ir.Name):
                        operand_values.add(atom.id)
                        return name(atom.id)
                    return em.const(atom.value if isinstance(atom, ir.Const) else atom)
                if ident in found.helpers:
                    return ast.Attribute(name("runtime"), ident, ast.Load())
                return node

            def visit_Call(self, node):
                self.generic_visit(node)
                return drop_defaults(node, found)

        expr = Substitute().visit(copy.deepcopy(line.value))
        scalars = self.scalar_names()

        def may_broadcast(zero) -> bool:
            """A zero tangent of an array operand still sets the shape of a sum."""
            primal = getattr(zero, "_s2s_primal", None)
            return isinstance(primal, ir.Name) and primal.id not in scalars

        expr = _propagate_zeros(expr, may_broadcast)
        if _is_zero(expr):
            return [primal, zeros]
        expr = _fill_zeros(expr, bound, em)
        expr = simplify(expr)
        # Template locals the tangent reads, in template order.
        used = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        locals_ = []
        for local, value in reversed(list(found.locals.items())):
            if local_names[local] in used:
                local_expr = simplify(Substitute().visit(copy.deepcopy(value)))
                used |= {n.id for n in ast.walk(local_expr) if isinstance(n, ast.Name)}
                locals_.insert(0, assign(local_names[local], local_expr))
        if (isinstance(expr, ast.Name) or _is_helper_call(expr, "broadcast_like")) and (
                target in self.an.subscripted or target in self.an.mutated):
            expr = runtime_call("copy", expr)  # y is written in place later: not x's tangent
        if result_name[0] != target:
            new = result_name[0]
            return [assign(new, em.expr(call))] + locals_ + [assign(self.dot(target), expr),
                                                            assign(target, name(new))]
        if target in operand_values:
            return locals_ + [assign(self.dot(target), expr), primal]  # before the primal overwrites y
        return [primal] + locals_ + [assign(self.dot(target), expr)]

    def scalar_names(self) -> set[str]:
        """Variables that are numbers wherever they are assigned: ints, math.* and float() results."""
        if not hasattr(self, "_scalars"):
            import math

            def is_scalar(d):
                return (isinstance(d, ir.Assign) and isinstance(d.value, ir.Call) and len(d.targets) == 1
                        and (getattr(d.value.fn, "__module__", None) == "math" or d.value.fn in (float, int)
                             or getattr(math, getattr(d.value.fn, "__name__", ""), None) is d.value.fn))

            self._scalars = set(self.an.int_like) | {
                v for v, defs in self.an.defs.items()
                if defs and all(d != "param" and is_scalar(d) for d in defs)}
        return self._scalars

    def user_call(self, stmt: ir.Assign) -> list:
        """y, y_dot = helper_jvp(...), with tangents for the arguments that have them only."""
        call = stmt.value
        args = [self.em.atom(a) for a in call.args]
        with_tangent = [k for k, a in enumerate(call.args) if self.has_tangent(a)]
        callee = self.variant(call.fn, tuple(with_tangent))
        tangents = [name(self.dot(call.args[k].id)) for k in with_tangent]
        target = stmt.targets[0]
        tgt = ast.Tuple([name(target, True), name(self.dot(target), True)], ast.Store())
        return [ast.Assign([tgt], ast.Call(name(callee), args + tangents, []), lineno=0)]

    # ---- the function -----------------------------------------------------------

    def build(self) -> ast.FunctionDef:
        fn = self.fn
        for p in self.active_params:
            self.dot(p)
        # A parameter without a tangent of its own that becomes active later under the same
        # name (`y[0] = v` into a y passed in, after s2s's private copy) starts from zero.
        body = [ast.Assign([name(self.dot(p), True)], runtime_call("zeros_like", name(p)), lineno=0)
                for p in fn.params if p not in self.active_params and self.an.is_active(p)]
        body += self.block(fn.body)
        result = fn.result
        tangent = self.tangent_or_zeros(result)
        body.append(ast.Return(ast.Tuple([self.em.atom(result), tangent], ast.Load())))
        params = list(fn.params) + [self.dot(p) for p in self.active_params]
        args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                             kw_defaults=[], defaults=[])
        doc = ast.Expr(ast.Constant(
            f"Forward mode of {fn.name} ({fn.origin.short()}): returns (value, tangent) for the "
            f"tangents {', '.join(self.dot(p) for p in self.active_params)}."))
        return ast.FunctionDef(self.function_name, args, [doc] + body, [], None, lineno=0)


# ---- zero tangents -----------------------------------------------------------------


def _is_zero(node) -> bool:
    return isinstance(node, ast.Name) and node.id == ZERO


def _propagate_zeros(node: ast.expr, may_broadcast=lambda zero: False) -> ast.expr:
    """Simplify products, quotients, sums and negations of zero tangents.

    x_dot + 0 is x_dot only if the zero's operand cannot broadcast x_dot to a larger shape;
    may_broadcast(zero) says when it can, and then the zero stays (as zeros_like(operand)).
    """
    for field, child in ast.iter_fields(node):
        if isinstance(child, ast.expr):
            setattr(node, field, _propagate_zeros(child, may_broadcast))
        elif isinstance(child, list):
            setattr(node, field, [_propagate_zeros(c, may_broadcast) if isinstance(c, ast.expr) else c
                                  for c in child])
    if isinstance(node, ast.BinOp):
        left, right = _is_zero(node.left), _is_zero(node.right)
        if isinstance(node.op, (ast.Mult, ast.MatMult)) and (left or right):
            return name(ZERO)
        if isinstance(node.op, ast.Div) and left:
            return name(ZERO)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            if left and right:
                return name(ZERO)
            if (left and may_broadcast(node.left)) or (right and may_broadcast(node.right)):
                # The zero may still broadcast the other tangent to the result's shape: a
                # helper does that where needed, and is the tangent itself elsewhere.
                zero, other = (node.left, node.right) if left else (node.right, node.left)
                if left and isinstance(node.op, ast.Sub):
                    other = ast.UnaryOp(ast.USub(), other)
                return runtime_call("broadcast_like", other, name(zero._s2s_primal.id))
            if isinstance(node.op, ast.Add):
                return node.right if left else node.left if right else node
            if right:
                return node.left
            if left:
                return ast.UnaryOp(ast.USub(), node.right)
    if isinstance(node, ast.UnaryOp) and _is_zero(node.operand):
        return name(ZERO)
    if isinstance(node, ast.Subscript) and _is_zero(node.value):  # an item of a zero tuple's tangent
        return name(ZERO)
    if isinstance(node, ast.Call) and any(_is_zero(a) for a in node.args):
        others = [a for a in node.args if not _is_zero(a)] + [k.value for k in node.keywords]
        if not any(_has_tangent(a) for a in others):
            # A tangent line is linear in the tangents: with all of them zero, so is the call.
            return name(ZERO)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "tree_add":
            return others[0]
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("add_at", "add_attr") \
                and _is_zero(node.args[2]):
            return node.args[0]
    return node


def _is_helper_call(node: ast.expr, helper: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == helper


def _has_tangent(node: ast.expr) -> bool:
    return any(getattr(n, "_s2s_tangent", False) for n in ast.walk(node))


def _fill_zeros(node: ast.expr, bound: dict, em: Emitter) -> ast.expr:
    """Zero tangents that survive next to nonzero ones become zeros_like(their primal)."""

    class Fill(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id == ZERO:
                primal = getattr(n, "_s2s_primal", None)
                if isinstance(primal, ir.Name):
                    return runtime_call("zeros_like", name(primal.id))
                return ast.Constant(0.0)
            return n

    return Fill().visit(node)

