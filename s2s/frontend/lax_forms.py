"""s2s.lax control flow and JAX's `x.at[i].set(v)` inside a transformed function.

Each form is written out as the native statement it stands for, with the lambda or nested
`def` it is given inlined at the call (its parameters bound to the operands or the carry), so
the transforms see an ordinary `if`, `for` or `while` and differentiate, batch and compile it
like a loop the user wrote:

    x = lax.fori_loop(0, n, lambda i, x: x - lr * g(x), x0)   ->   x_2 = x0
                                                                   for i in range(0, n):
                                                                       x_2 = x_2 - lr * g(x_2)
                                                                   x = x_2

A carry that is a tuple (a pytree) is carried as one variable per element, so loops carry
arrays and numbers only; its structure is read from the tuple displays of the initial value
and of what the body returns, and two displays of different lengths are an S2SError. A scan
stacks its outputs into arrays allocated after its first step (which is written out before
the loop, as the outputs' shapes are only known then) and written one row per step.
"""

from __future__ import annotations

import builtins
import inspect
import operator
import os
import re
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from .. import lax, runtime
from ..rules.custom import checkpoint
from ..ir import nodes as ir
from . import static_values
from .control_flow import lower_control_flow
from .source import MISSING, is_user_function, list_names, walk_nodes, walk_own

FORMS = {lax.cond, lax.switch, lax.fori_loop, lax.while_loop, lax.scan}
# x.at[index].<method>(v): the operator combining the old elements with v (None: set).
AT_METHODS = {"set": None, "add": operator.add, "multiply": operator.mul, "divide": operator.truediv,
              "power": operator.pow, "min": np.minimum, "max": np.maximum}
FUNCTION_HINT = "pass a lambda, a function defined with def in this function, or a module-level function"


@dataclass
class LocalFunction:
    """A lambda or a nested def, inlined where it is called or a lax form calls it."""

    label: str  # for messages: "the lambda", "hidden_step"
    params: list[str]
    pre: list  # statements before the final return (libcst nodes)
    result: cst.BaseExpression | None  # the returned expression, where a final return is the only one
    assigned: set[str]  # names its statements bind (its locals besides the parameters)
    defs: set[str]  # the functions defined in it with def
    body: list = field(default_factory=list)  # every statement, where result is None (returns anywhere, or none)
    defaults: dict = field(default_factory=dict)  # parameter -> its default, evaluated where the def ran
    updated: set = field(default_factory=set)  # parameters that only `p op= v` rebinds (NumPy: in place)
    free: set = field(default_factory=set)  # the names it reads from the scopes around it (and perhaps more)
    scope: Any = None  # the scope it was defined in (Scope); None for a lambda, inlined where it stands
    node: Any = None  # its libcst FunctionDef


@dataclass
class Scope:
    """What names mean in the function body a def stands in, which its body sees (lexical scope)."""

    locals: set
    def_names: set
    local_defs: dict  # that body's defs so far, filled in as they run: a call sees the ones defined by then
    lists: set
    dicts: set
    depth: int  # how many inlined calls were open where the def stood (Normalizer.frames)


def _display(node: Any) -> list | None:
    """The elements of a tuple display, else None."""
    if isinstance(node, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in node.elements):
        return [e.value for e in node.elements]
    return None


class LaxLowering:
    """The s2s.lax half of the Normalizer (lower.py, expressions.py)."""

    # ---- the functions passed to a form ----------------------------------------------

    def plain_params(self, params: cst.Parameters, node: cst.CSTNode) -> list[str]:
        if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg is not None \
                or params.kwonly_params or params.posonly_params \
                or any(p.default is not None for p in params.params):
            raise self.error(node, "a function passed to an s2s.lax form takes plain positional parameters",
                             "remove defaults, *args, keyword-only parameters and **kwargs")
        return [p.name.value for p in params.params]

    def nested_def(self, node: cst.FunctionDef) -> None:
        """def inside the function: kept, to be inlined where it is called (or an s2s.lax form calls
        it). Its defaults are evaluated here, where Python evaluates them; its body reads the
        variables around it where it is called, as Python's closures do (late binding)."""
        name = node.name.value
        if node.decorators or node.asynchronous is not None:
            raise self.error(node, "a nested function with decorators or async is not supported",
                             "define it at module level")
        if name in self.locals or name in self.local_defs:
            raise self.error(node, f"the nested function {name} is defined twice or also used as a variable",
                             "give it a name of its own")
        params = node.params
        if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg is not None \
                or params.kwonly_params or params.posonly_params:
            raise self.error(node.params, f"the nested function {name} takes plain positional parameters "
                             "(with or without defaults)", "remove *args, keyword-only parameters and **kwargs")
        names = [p.name.value for p in params.params]
        defaults = {}
        for p in params.params:
            if p.default is None:
                continue
            value = self.expr(p.default)
            if isinstance(value, ir.Name) and not value.id.startswith("_t"):
                # (held: the variable may be rebound before the call, which still sees this value)
                held = self.names.fresh(f"_{name}_{p.name.value}")
                self.emit(ir.Assign((held,), value, self.origin))
                value = ir.Name(held)
            defaults[p.name.value] = value
        body = list(node.body.body)
        pre = body[:-1]
        last = body[-1] if body else None
        if isinstance(last, cst.SimpleStatementLine):
            pre, last = pre + list(last.body[:-1]), last.body[-1]
        returns = [n for n in walk_own(node.body) if isinstance(n, cst.Return)]
        simple = isinstance(last, cst.Return) and last.value is not None and len(returns) == 1
        assigned = assigned_names(node.body)
        plain = assigned_names(node.body, augmented=False)
        own = set(names) | assigned
        free = {n.value for n in walk_nodes(node.body) if isinstance(n, cst.Name)} - own
        defs = {n.name.value for n in walk_own(node.body) if isinstance(n, cst.FunctionDef) and n is not node}
        scope = Scope(self.locals, self.def_names, self.local_defs, self.lists, self.dicts, len(self.frames))
        self.local_defs[name] = LocalFunction(
            name, names, pre if simple else [], last.value if simple else None, assigned, defs,
            body=[] if simple else body, defaults=defaults, updated={p for p in names if p in assigned - plain},
            free=free, scope=scope, node=node)

    def function_argument(self, node: cst.BaseExpression, form: str, role: str) -> Any:
        """A LocalFunction, or the module-level Python function that node names."""
        if isinstance(node, cst.Call) and len(node.args) >= 1 and node.args[0].keyword is None \
                and not node.args[0].star and all(a.keyword is not None for a in node.args[1:]) \
                and not (isinstance(node.func, cst.Name) and node.func.value in self.locals) \
                and self.resolver.resolve(node.func) is checkpoint:
            # s2s.checkpoint(step) (jax.checkpoint, remat): the function itself, as checkpoint returns it
            return self.function_argument(node.args[0].value, form, role)
        if isinstance(node, cst.Lambda):
            return LocalFunction("the lambda", self.plain_params(node.params, node), [], node.body, set(), set())
        if isinstance(node, cst.Name) and node.value in self.def_names:
            if node.value not in self.local_defs:
                raise self.error(node, f"the nested function {node.value} is used before its def")
            return self.local_defs[node.value]
        obj = MISSING
        if not (isinstance(node, cst.Name) and node.value in self.locals):
            obj = self.resolver.resolve(node)
        if not is_user_function(obj):
            raise self.error(node, f"the {role} of s2s.lax.{form} must be a function s2s can read", FUNCTION_HINT)
        self.references.add((cst.Module([]).code_for_node(node), obj.__module__, obj.__qualname__))
        return obj

    def lower_tree(self, node: cst.BaseExpression, depth: int) -> Any:
        """An atom, or (tuple displays, down to depth) a list of lowered elements."""
        elements = _display(node) if depth > 0 else None
        if elements is None:
            return self.expr(node)
        return [self.lower_tree(e, depth - 1) for e in elements]

    def inline(self, fn: Any, args: list, call: cst.CSTNode, depth: int = 1, mapping: dict | None = None,
               kwargs: list = (), writes_reach: bool = False):
        """Emit fn(*args) into the current block: returns (its result as lower_tree gives it, the
        renaming of fn's names, which a second copy of the same call passes back). writes_reach:
        a call the user wrote, whose `p op= v` of a parameter p given the caller's variable
        updates that variable, as NumPy updates an array in place (a number is refused there)."""
        if not isinstance(fn, LocalFunction):
            return self.user_call(call, fn, list(args), list(kwargs)), None
        args = self.bound_arguments(fn, list(args), list(kwargs), call, writes_reach)
        if any(frame["function"] is fn for frame in self.frames):
            chain = " -> ".join([f["function"].label for f in self.frames if f["function"]] + [fn.label])
            raise self.error(call, f"recursive calls of nested functions are not supported ({chain})",
                             "rewrite the recursion as a loop")
        if mapping is None:
            # A parameter the body never rebinds is the argument itself (a name passed in);
            # every other name of the function gets a name no other variable has.
            mapping = {}
            for k, (param, arg) in enumerate(zip(fn.params, args)):
                updated = writes_reach and param in fn.updated and isinstance(arg, ir.Name) and arg.id in self.locals
                aliased = isinstance(arg, ir.Name) and param not in fn.assigned or updated
                named = self.named_argument(arg, param) if writes_reach and isinstance(arg, ir.Name) else None
                if named is not None:  # helper(h, xs[t]): `x = xs[t]`, the parameter's name on its value
                    args[k] = arg = ir.Name(named)
                    aliased = param not in fn.assigned
                mapping[param] = arg.id if aliased else self.names.fresh(param)
                if not aliased:
                    self.display[mapping[param]] = param
                if updated:
                    self.emit(ir.ExprStmt(ir.Call(runtime.require_updatable, (
                        arg, ir.Const(self.update_refusal(fn, param, self.display.get(arg.id, arg.id))))), self.origin))
            for name in sorted(fn.assigned - set(fn.params)):
                mapping[name] = self.names.fresh(name)
                self.display[mapping[name]] = name
            self.names.taken |= set(fn.params) | fn.assigned
            if fn.scope is not None and fn.scope.depth < len(self.frames):
                # The calls open between fn's def and this call rename their own variables after
                # their bodies are written: a name fn reads from its own scope is kept from them
                # under a name of its own, which the outermost of them gives back (closures see
                # the variables of the scope they were defined in).
                renamed = set().union(*(f["keys"] for f in self.frames[fn.scope.depth:]))
                for name in sorted(fn.free & renamed):
                    mapping[name] = self.names.fresh(f"_{name}")
                    self.frames[fn.scope.depth]["restore"][mapping[name]] = name
        binds = [ir.Assign((mapping[p],), a, self.origin) for p, a in zip(fn.params, args)
                 if not (isinstance(a, ir.Name) and mapping[p] == a.id)]
        saved = (self.locals, self.loop_depth, self.origin, self.def_names, self.local_defs, self.lists, self.dicts,
                 self.broke_flags)
        # (fn's own names hide the static values of the caller's of the same names while it is written out)
        hidden = [{n: known.pop(n) for n in set(fn.params) | fn.assigned if n in known}
                  for known in (self.static, self.kinds)]
        scope = fn.scope
        if scope is not None:  # a def: its body sees the scope it was defined in
            own = set(fn.params) | fn.assigned
            self.locals = scope.locals | own
            self.def_names = (scope.def_names - own) | fn.defs
            self.local_defs = dict(scope.local_defs)
            lists, dicts = _own_lists(fn.node)
            self.lists, self.dicts = (scope.lists - own) | lists, (scope.dicts - own) | dicts
        else:
            self.locals = self.locals | set(fn.params) | fn.assigned
            # The defs inside fn are its own (a scan writes its step out twice, defs included).
            self.def_names, self.local_defs = (self.def_names - fn.assigned) | fn.defs, dict(self.local_defs)
        self.loop_depth, self.broke_flags = 0, []
        frame = {"function": fn, "keys": set(fn.params) | fn.assigned, "restore": {}}
        self.frames.append(frame)
        sites = len(self.call_sites)
        holder: list = []

        def build():
            if fn.result is not None:
                self.block(fn.pre)
                if fn.label != "the lambda":  # a def's return; a lambda stays under the statement calling it
                    self.origin = self.parsed.origin(fn.result)
                holder.append(self.lower_tree(fn.result, depth))
                return
            # returns anywhere (or none, which returns None): flags, as for a function's body
            self.block(fn.body)
            if not self.out or not isinstance(self.out[-1], ir.Return):
                self.emit(ir.Return(ir.Const(None), self.parsed.origin(fn.node)))
            self.out[:] = lower_control_flow(self.out, self.names, self.parsed.origin(fn.node))
            holder.append(self.out.pop().value)

        try:
            block = self.sub_block(build)
        finally:
            self.frames.pop()
            (self.locals, self.loop_depth, self.origin, self.def_names, self.local_defs, self.lists, self.dicts,
             self.broke_flags) = saved
            self.static.update(hidden[0])
            self.kinds.update(hidden[1])
        block, result = ir.rename(block, mapping), _rename_tree(holder[0], mapping)
        if frame["restore"]:
            block, result = ir.rename(block, frame["restore"]), _rename_tree(result, frame["restore"])
        for site in self.call_sites[sites:]:  # (by the names the caller's code has after renaming)
            renamed = {n: frame["restore"].get(mapping.get(n, n), mapping.get(n, n)) for n in
                       [n for n, _ in site.arguments.values()] + list(site.rebound)}
            site.arguments = {p: (renamed[n], view) for p, (n, view) in site.arguments.items()}
            site.rebound = frozenset(renamed[n] for n in site.rebound)
        self.out += binds + block
        return result, mapping

    def named_argument(self, arg: ir.Name, param: str) -> str | None:
        """The temporary that holds a call's argument, renamed after the parameter it is given to
        (a name of its own): None where it is not a temporary assigned in this block and read by
        nothing else."""
        if not re.fullmatch(r"_t\d+", arg.id):
            return None
        made = [s for s in self.out if isinstance(s, ir.Assign) and s.targets == (arg.id,) and not s.inplace]
        if len(made) != 1 or any(arg.id in ir.stmt_reads(s) or s is not made[0] and arg.id in ir.stmt_writes(s)
                                 for s in ir.walk(self.out)):
            return None
        made[0].targets = (self.names.fresh(param),)
        self.display[made[0].targets[0]] = param
        return made[0].targets[0]

    def update_refusal(self, fn: LocalFunction, param: str, caller_name: str) -> str:
        """What require_updatable says where fn's `param op= v` is given a number by the caller."""
        update = next(n for n in walk_own(fn.node.body) if isinstance(n, cst.AugAssign)
                      and isinstance(n.target, cst.Name) and n.target.value == param)
        op = cst.Module([]).code_for_node(update.operator).strip()  # "-=": its symbol, op[:-1] "-"
        o = self.parsed.origin(update)
        return (f"{os.path.basename(o.filename)}:{o.line}:{o.column}: `{param} {op} ...` in {fn.label} updates the "
                f"caller's {caller_name} in place, as NumPy does for an array; {caller_name} is a number here, "
                f"which Python leaves unchanged: write `{param} = {param} {op[:-1]} ...` in {fn.label}")

    def bound_arguments(self, fn: LocalFunction, args: list, kwargs: list, call: cst.CSTNode, direct: bool) -> list:
        """The arguments of a call of fn by its parameters: positional, keywords, then defaults."""
        what = "this call passes" if direct else "this s2s.lax form passes"
        if len(args) > len(fn.params):
            raise self.error(call, f"{fn.label} takes {len(fn.params)} arguments where {what} {len(args)}")
        bound = dict(zip(fn.params, args))
        for key, value in kwargs:
            if key not in fn.params or key in bound:
                raise self.error(call, f"{fn.label} is given the argument {key} "
                                 + ("twice" if key in bound else "that it has no parameter for"))
            bound[key] = value
        missing = [p for p in fn.params if p not in bound and p not in fn.defaults]
        if missing:
            raise self.error(call, f"{fn.label} takes {len(fn.params)} arguments where {what} {len(bound)} "
                             f"(no {', '.join(missing)})")
        return [bound[p] if p in bound else fn.defaults[p] for p in fn.params]

    # ---- carries: one variable per element of a tuple --------------------------------

    def arity(self, form: str, what: str, nodes: list) -> int | None:
        """The number of elements of a structure that tuple displays among nodes show."""
        found = None
        for node in nodes:
            elements = _display(node)
            if elements is None:
                continue
            if found is not None and len(elements) != found:
                raise self.error(node, f"the {what} of s2s.lax.{form} changes structure: a tuple of {found} "
                                 f"elements here has {len(elements)}", "keep the same structure in every step")
            found = len(elements)
        return found

    def split(self, tree: Any, k: int | None) -> list[ir.Atom]:
        """A value as k atoms (one if k is None), unpacking it where it is not a display."""
        if k is None:
            return [self.pack(tree)]
        if isinstance(tree, list):
            return [self.pack(t) for t in tree]
        names = tuple(self.names.temp() for _ in range(k))
        self.emit(ir.Assign(names, tree, self.origin))
        return [ir.Name(n) for n in names]

    def pack(self, tree: Any) -> ir.Atom:
        if isinstance(tree, list):
            return self.assign(ir.Build("tuple", tuple(self.pack(t) for t in tree)))
        return tree

    def carry_names(self, base: str, k: int | None) -> list[str]:
        if k is None:  # the body's parameter, which messages call by the user's name
            carry = self.names.fresh(base)
            self.display[carry] = base
            return [carry]
        return [self.names.fresh(f"{base}_{j}") for j in range(k)]

    def carry_argument(self, names: list[str], packed: str | None) -> ir.Atom:
        """The carry as the body receives it: one variable, or the tuple of its elements (in a
        variable of one name for every copy of the body, which an inlined body may alias)."""
        if packed is None:
            return ir.Name(names[0])
        self.emit(ir.Assign((packed,), ir.Build("tuple", tuple(ir.Name(n) for n in names)), self.origin))
        return ir.Name(packed)

    def store(self, names: list[str], atoms: list[ir.Atom], keep: tuple = ()) -> None:
        """names = atoms, all at once (an atom may be another of the names); keep: atoms that
        later statements read, whose assignments stay as they are."""
        if any(isinstance(a, ir.Name) and a.id in names[:j] + names[j + 1:] for j, a in enumerate(atoms)):
            held = []
            for atom in atoms:
                if isinstance(atom, ir.Name) and atom.id in names:
                    temp = self.names.temp()
                    self.emit(ir.Assign((temp,), atom, self.origin))
                    atom = ir.Name(temp)
                held.append(atom)
            atoms = held
        for name, atom in zip(names, atoms):
            if atom != ir.Name(name) and not self.retarget(atom, name, names, atoms, keep):
                self.emit(ir.Assign((name,), atom, self.origin))

    def retarget(self, atom: ir.Atom, name: str, names: list[str], atoms: list, keep: tuple) -> bool:
        """Assign name where the temporary atom is computed, instead of copying it after (the
        temporary is read nowhere else, and nothing after its statement uses name)."""
        if not (isinstance(atom, ir.Name) and atom.id.startswith("_t")) or atom in keep or atoms.count(atom) > 1:
            return False
        for p, stmt in enumerate(self.out):
            if isinstance(stmt, ir.Assign) and stmt.targets == (atom.id,) and not stmt.inplace:
                break
        else:
            return False
        later = list(ir.walk(self.out[p + 1:]))
        if any(atom.id in ir.stmt_reads(s) + ir.stmt_writes(s) for s in ir.walk(self.out) if s is not stmt) \
                or any(name in ir.stmt_reads(s) + ir.stmt_writes(s) for s in later) \
                or any(n in ir.stmt_reads(s) for s in later for n in names):
            return False
        stmt.targets = (name,)
        return True

    def param_base(self, fn: Any, k: int, default: str) -> str:
        if isinstance(fn, LocalFunction) and len(fn.params) > k:
            return fn.params[k]
        return default

    # ---- the forms -------------------------------------------------------------------

    def lax_call(self, node: cst.Call, callee: Any) -> ir.Atom:
        form = callee.__name__
        positional, keywords = [], {}
        for arg in node.args:
            if arg.star:
                raise self.error(arg, f"starred arguments to s2s.lax.{form} are not supported",
                                 "pass the operands one by one")
            if arg.keyword is None:
                positional.append(arg.value)
            else:
                keywords[arg.keyword.value] = arg.value
        try:
            bound = inspect.signature(callee).bind(*positional, **keywords)
        except TypeError as exc:
            raise self.error(node, f"s2s.lax.{form}: {exc}") from None
        return getattr(self, f"lax_{form}")(node, bound.arguments)

    def operand_nodes(self, node, form, a) -> list:
        """The operands of cond or switch as written: positional, or JAX's keyword `operand=`."""
        if "operand" not in a:
            return list(a.get("operands", ()))
        if a.get("operands"):
            raise self.error(node, f"s2s.lax.{form}: pass the operands positionally or as operand=, not both")
        return [a["operand"]]

    def lax_cond(self, node, a) -> ir.Atom:
        pred = self.expr(a["pred"])
        operands = [self.expr(o) for o in self.operand_nodes(node, "cond", a)]
        branches = [self.function_argument(a[k], "cond", k) for k in ("true_fun", "false_fun")]
        return self.branches(node, "cond", pred, branches, operands)

    def lax_switch(self, node, a) -> ir.Atom:
        items = a["branches"]
        if not isinstance(items, (cst.List, cst.Tuple)) or not items.elements \
                or any(isinstance(e, cst.StarredElement) for e in items.elements):
            raise self.error(items, "the branches of s2s.lax.switch must be a list or tuple display of functions",
                             "write [f0, f1, ...] in the call")
        index = self.expr(a["index"])
        operands = [self.expr(o) for o in self.operand_nodes(node, "switch", a)]
        fns = [self.function_argument(e.value, "switch", "branch") for e in items.elements]
        if len(fns) == 1:
            return self.branches(node, "switch", None, fns, operands)
        # JAX clamps the (integer) index into range(len(branches)).
        index = self.assign(ir.Call(builtins.int, (index,)))
        low = self.assign(ir.Call(builtins.max, (index, ir.Const(0))))
        index = self.assign(ir.Call(builtins.min, (low, ir.Const(len(fns) - 1))))
        return self.branches(node, "switch", index, fns, operands)

    def branches(self, node, form, test, fns, operands) -> ir.Atom:
        """cond (test a predicate, two functions) or switch (test an index, any number)."""
        k = self.arity(form, "result", [f.result for f in fns if isinstance(f, LocalFunction)])
        results = [self.names.temp() for _ in range(k or 1)]

        def arm(fn):
            def build():
                tree, _ = self.inline(fn, operands, node)
                self.store(results, self.split(tree, k))
            return self.sub_block(build)

        if form == "cond":
            self.emit(ir.If(test, arm(fns[0]), arm(fns[1]), self.origin))
        else:
            arms = [arm(fn) for fn in fns]
            tests = [self.names.temp() for _ in fns[:-1]]
            block = arms[-1]
            for j in range(len(fns) - 2, -1, -1):
                block = [ir.Assign((tests[j],), ir.Call(operator.eq, (test, ir.Const(j))), self.origin),
                         ir.If(ir.Name(tests[j]), arms[j], block, self.origin)]
            self.out += block
        return self.pack([ir.Name(r) for r in results]) if k is not None else ir.Name(results[0])

    def lax_fori_loop(self, node, a) -> ir.Atom:
        body = self.function_argument(a["body_fun"], "fori_loop", "body_fun")
        k = self.arity("fori_loop", "carry", [a["init_val"]] + ([body.result] if isinstance(body, LocalFunction) else []))
        lower, upper = self.expr(a["lower"]), self.expr(a["upper"])
        init = self.lower_tree(a["init_val"], 1)
        base = self.param_base(body, 1, "carry")
        carry = self.carry_names(base, k)
        self.store(carry, self.split(init, k))
        packed = self.names.fresh(base) if k is not None else None
        index = self.names.fresh(self.param_base(body, 0, "i"))

        def build():
            tree, _ = self.inline(body, [ir.Name(index), self.carry_argument(carry, packed)], node)
            self.store(carry, self.split(tree, k))

        self.emit(ir.For(index, lower, upper, ir.Const(1), self.sub_block(build), self.origin))
        return self.pack([ir.Name(c) for c in carry]) if k is not None else ir.Name(carry[0])

    def lax_while_loop(self, node, a) -> ir.Atom:
        cond = self.function_argument(a["cond_fun"], "while_loop", "cond_fun")
        body = self.function_argument(a["body_fun"], "while_loop", "body_fun")
        k = self.arity("while_loop", "carry", [a["init_val"]] + ([body.result] if isinstance(body, LocalFunction) else []))
        init = self.lower_tree(a["init_val"], 1)
        base = self.param_base(body, 0, "carry")
        carry = self.carry_names(base, k)
        self.store(carry, self.split(init, k))
        packed = self.names.fresh(base) if k is not None else None
        holder = []

        def test():
            tree, _ = self.inline(cond, [self.carry_argument(carry, packed)], node, depth=0)
            holder.append(tree)

        def build():
            # The test has just packed the carry, which has not changed since.
            tree, _ = self.inline(body, [ir.Name(packed) if packed else ir.Name(carry[0])], node)
            self.store(carry, self.split(tree, k))

        cond_block = self.sub_block(test)
        self.emit(ir.While(cond_block, holder[0], self.sub_block(build), self.origin))
        return self.pack([ir.Name(c) for c in carry]) if k is not None else ir.Name(carry[0])

    def lax_scan(self, node, a) -> ir.Atom:
        f = self.function_argument(a["f"], "scan", "f")
        result = _display(f.result) if isinstance(f, LocalFunction) else None
        if result is not None and len(result) != 2:
            raise self.error(f.result, "the function scanned by s2s.lax.scan returns (carry, y)",
                             "return a pair: the new carry and the output of the step (or None)")
        k = self.arity("scan", "carry", [a["init"]] + ([result[0]] if result else []))
        reverse = self.expr(a["reverse"]) if "reverse" in a else ir.Const(False)
        if not isinstance(reverse, ir.Const):
            raise self.error(a["reverse"], "reverse= of s2s.lax.scan must be True or False in the source")
        reverse = bool(reverse.value)
        # xs: None, or a pytree of arrays (each sliced along its first axis): one array, tuple
        # and dict displays of them, or a variable that dict displays alone bind.
        xs_node = a.get("xs", cst.Name("None"))
        if isinstance(xs_node, (cst.List, cst.ListComp, cst.DictComp, cst.Set)):
            raise self.error(xs_node, "s2s.lax.scan takes xs as one array or a tuple display of arrays, "
                             "or a dict of them, not a list",
                             "write xs as a tuple, (a, b), and read the step's rows as x[0], x[1]")
        unchecked: list = []  # the leaves that may hold a tuple, list or dict, checked when the function runs
        xs_tree = None if isinstance(xs_node, cst.Name) and xs_node.value == "None" \
            else self.scanned_tree(xs_node, unchecked)
        leaves = _tree_leaves(xs_tree)
        if "length" in a and not (isinstance(a["length"], cst.Name) and a["length"].value == "None"):
            n = self.expr(a["length"])
        elif leaves:
            for leaf in unchecked:
                # A tuple, list or dict in a variable would be indexed by its elements, not rows.
                o = self.origin
                message = ir.Const(f"{os.path.basename(o.filename)}:{o.line}:{o.column}: scan: xs is a tuple, "
                                   f"list or dict held in a variable, whose elements s2s would take for its "
                                   f"rows: pass xs as a tuple display, (a, b), a dict display, {{'a': a}}, "
                                   f"a variable that a dict display of arrays binds, an argument of the "
                                   f"function, or one array")
                self.emit(ir.ExprStmt(ir.Call(runtime.require_fits, (ir.Const(None), leaf, message)), self.origin))
            shape = self.assign(ir.Attribute(leaves[0], "shape"))
            n = self.assign(ir.Subscript(shape, ir.Index((ir.Const(0),))))
        else:
            raise self.error(node, "s2s.lax.scan over xs=None needs length=", "pass length=the number of steps")
        # The outputs: None, a tuple display (several stacks) or one value.
        y_node = result[1] if result else None
        if isinstance(y_node, (cst.List, cst.Dict, cst.ListComp, cst.DictComp, cst.Set)):
            raise self.error(y_node, "the step of s2s.lax.scan returns its output y as one array or number, "
                             "a tuple display of them, or None: not a list or dict",
                             "return a tuple, (c, (a, b)), and read the stacks as ys[0], ys[1]")
        y_display = _display(y_node)
        no_ys = isinstance(y_node, cst.Name) and y_node.value == "None"
        m = 0 if no_ys else len(y_display) if y_display is not None else 1
        init = self.lower_tree(a["init"], 1)
        base = self.param_base(f, 0, "carry")
        carry = self.carry_names(base, k)
        self.store(carry, self.split(init, k))
        packed = self.names.fresh(base) if k is not None else None
        x = self.names.fresh(self.param_base(f, 1, "x"))
        mappings: list = [None]

        def step(j: ir.Atom, nonempty: ir.Atom | None = None) -> list[ir.Atom]:
            if xs_tree is None:
                self.emit(ir.Assign((x,), ir.Const(None), self.origin))
            elif nonempty is None:
                rows = [self.assign(ir.Subscript(leaf, ir.Index((j,)))) for leaf in leaves]
                self.emit(ir.Assign((x,), self.rebuilt(xs_tree, rows), self.origin))
            else:  # the first step, written out: rows of zeros where xs has none
                rows = [self.names.temp() for _ in leaves]
                taken = self.sub_block(lambda: [self.emit(ir.Assign((r,), ir.Subscript(leaf, ir.Index((j,))),
                                                                    self.origin)) for r, leaf in zip(rows, leaves)])
                zeros = self.sub_block(lambda: [self.emit(ir.Assign((r,), ir.Call(runtime.zeros_row, (leaf,)),
                                                                    self.origin)) for r, leaf in zip(rows, leaves)])
                self.emit(ir.If(nonempty, taken, zeros, self.origin))
                rows = [ir.Name(r) for r in rows]
                self.emit(ir.Assign((x,), self.rebuilt(xs_tree, rows), self.origin))
            tree, mappings[0] = self.inline(f, [self.carry_argument(carry, packed), ir.Name(x)], node,
                                            depth=2, mapping=mappings[0])
            new_carry, y = tree if isinstance(tree, list) else self.split(tree, 2)
            outputs = [] if m == 0 else self.split(y, m if y_display is not None else None)
            # An output that is the old carry itself is read before the carry changes.
            held = []
            for atom in outputs:
                if isinstance(atom, ir.Name) and atom.id in carry + [packed]:
                    temp = self.names.temp()
                    self.emit(ir.Assign((temp,), atom, self.origin))
                    atom = ir.Name(temp)
                held.append(atom)
            self.store(carry, self.split(new_carry, k), keep=tuple(held))
            return held

        ys = [self.names.fresh("ys" if m == 1 else f"ys_{j}") for j in range(m)]
        if m == 0:
            start, stop, stride = (self.assign(ir.Call(operator.sub, (n, ir.Const(1)))), ir.Const(-1), ir.Const(-1)) \
                if reverse else (ir.Const(0), n, ir.Const(1))
        else:
            # The first step before the loop: its outputs give the stacks' shapes and dtypes. With
            # no steps at all (n == 0) it still runs, on rows of zeros, for those shapes; its
            # carry is dropped and the stacks are empty, as JAX's.
            first = self.assign(ir.Call(operator.sub, (n, ir.Const(1)))) if reverse else ir.Const(0)
            nonempty = self.assign(ir.Call(operator.gt, (n, ir.Const(0))))
            saved = [self.names.fresh(f"{c}_init") for c in carry]
            saves = [ir.Assign((name,), ir.Name(c), self.origin) for name, c in zip(saved, carry)]
            self.out += saves
            start_of_step = len(self.out)
            outputs = step(first, nonempty)
            if any(isinstance(s, ir.SetItem) or isinstance(s, ir.Assign) and s.inplace
                   or isinstance(s, ir.ExprStmt) and s.mutates for s in ir.walk(self.out[start_of_step:])):
                # The step writes into an array in place, perhaps the carry: what is restored
                # where there are no steps must be a copy the first step did not change.
                for save in saves:
                    save.value = ir.Call(runtime.copy, (save.value,))
            written = []
            o = self.origin
            shapeless = ir.Const(f"{os.path.basename(o.filename)}:{o.line}:{o.column}: scan: the step's output y "
                                 f"is a tuple, list or dict held in a variable, which s2s would stack as one "
                                 f"array: return it as a tuple display, `return carry, (a, b)`, for a tuple "
                                 f"of stacks")
            for name, value in zip(ys, outputs):
                # (a tuple in a variable: stacked as one array it would give rows, not stacks)
                self.emit(ir.ExprStmt(ir.Call(runtime.require_fits, (ir.Const(None), value, shapeless)), self.origin))
                self.emit(ir.Assign((name,), ir.Call(runtime.batch_empty, (n, value)), self.origin))
                written.append(ir.SetItem(name, ir.Index((first,)), value, None, self.origin))
            restored = [ir.Assign((c,), ir.Name(name), self.origin) for c, name in zip(carry, saved)]
            self.emit(ir.If(nonempty, written, restored, self.origin))
            start, stop, stride = (self.assign(ir.Call(operator.sub, (n, ir.Const(2)))), ir.Const(-1), ir.Const(-1)) \
                if reverse else (ir.Const(1), n, ir.Const(1))
        index = self.names.fresh("i")

        o = self.origin  # (the file's name alone: generated code is the same on every machine)
        message = ir.Const(f"{os.path.basename(o.filename)}:{o.line}:{o.column}: scan: a step's output is wider than "
                           f"the first step's, the dtype of the stack (an int initial carry that the body makes "
                           f"a float): give the initial carry the body's dtype (0.0, not 0)")

        def build():
            for name, value in zip(ys, step(ir.Name(index))):
                self.emit(ir.ExprStmt(ir.Call(runtime.require_fits, (ir.Name(name), value, message)), self.origin))
                self.emit(ir.SetItem(name, ir.Index((ir.Name(index),)), value, None, self.origin))

        self.emit(ir.For(index, start, stop, stride, self.sub_block(build), self.origin))
        final = self.pack([ir.Name(c) for c in carry]) if k is not None else ir.Name(carry[0])
        stacked = ir.Const(None) if m == 0 else ir.Name(ys[0]) if y_display is None \
            else self.pack([ir.Name(y) for y in ys])
        return self.assign(ir.Build("tuple", (final, stacked)))

    def scanned_tree(self, node: cst.BaseExpression, unchecked: list) -> Any:
        """xs of a scan as a tree: an atom (one array), ("tuple", [trees]) of a tuple display, or
        ("dict", keys, [trees]) of a dict display or of a variable that dict displays with the
        same constant keys alone bind (its entries read by key). unchecked gets the leaves that
        are variables which may hold a tuple, list or dict."""
        elements = _display(node)
        if elements is not None:
            return ("tuple", [self.scanned_tree(e, unchecked) for e in elements])
        if isinstance(node, cst.Dict):
            keys, values = [], []
            for element in node.elements:
                if not isinstance(element, cst.DictElement):
                    raise self.error(element, "** in a dict display is not supported")
                key = self.expr(element.key)
                if not isinstance(key, ir.Const):
                    raise self.error(element.key, "dict keys must be constants")
                keys.append(key.value)
                values.append(self.scanned_tree(element.value, unchecked))
            return ("dict", tuple(keys), values)
        keys = self.dict_keys_of(node)
        length = self.argument_length(node) if keys is None else None
        value = self.expr(node)
        if length is not None:
            entries = [self.assign(ir.Subscript(value, ir.Index((ir.Const(k),)))) for k in range(length)]
            unchecked += entries
            return ("tuple", entries)
        if keys is None:
            if isinstance(value, ir.Name):
                unchecked.append(value)
            return value
        entries = [self.assign(ir.Subscript(value, ir.Index((ir.Const(k),)))) for k in keys]
        unchecked += entries
        return ("dict", keys, entries)

    def argument_length(self, node: cst.BaseExpression) -> int | None:
        """The number of items of the call's tuple or list argument a parameter holds, where
        nothing binds it anew or writes into it (the code is generated for the call's length:
        static_values.specialised); else None."""
        if not isinstance(node, cst.Name):
            return None
        length = static_values.carried_keys(self.parsed.fn).get(node.value)
        if not isinstance(length, int):
            return None
        name = node.value
        for n in _walk_all(self.parsed.node.body):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else \
                [n.target] if isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.Del, cst.For, cst.NamedExpr)) else []
            if any(isinstance(t, cst.Name) and t.value == name or isinstance(t, cst.Subscript)
                   and isinstance(t.value, cst.Name) and t.value.value == name for t in _walk_all(targets)):
                return None  # xs = ..., xs[0] = v
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == name:
                return None  # xs.append(...)
        return length

    def dict_keys_of(self, node: cst.BaseExpression) -> tuple | None:
        """The keys of the dict a local variable holds, where every binding of it is a dict display
        with the same constant keys and nothing writes into it; of a parameter that nothing binds
        anew nor writes into, the keys of the call's dict argument (the code is generated for
        them: static_values.specialised); else None."""
        if not isinstance(node, cst.Name):
            return None
        argument = static_values.carried_keys(self.parsed.fn).get(node.value)
        argument = argument if isinstance(argument, tuple) else None
        if node.value not in self.dicts and argument is None:
            return None
        name, found = node.value, set() if argument is None else {argument}
        for n in _walk_all(self.parsed.node.body):
            if isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                                 for t in n.targets):
                if not isinstance(n.value, cst.Dict) or not all(
                        isinstance(e, cst.DictElement) and isinstance(e.key, (cst.SimpleString, cst.Integer))
                        for e in n.value.elements):
                    return None
                found.add(tuple(e.key.evaluated_value for e in n.value.elements))
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else \
                [n.target] if isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.Del, cst.For)) else []
            if any(isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == name
                   for t in _walk_all(targets)):
                return None  # xs["c"] = v, del xs["a"]
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == name:
                return None  # xs.update(...), xs.pop(...)
        return found.pop() if len(found) == 1 else None

    def rebuilt(self, tree: Any, rows: list) -> ir.Expr:
        """The value of a step's x: tree's structure with rows (in _tree_leaves' order) as its leaves."""
        rows = list(rows)

        def build(t):
            if isinstance(t, tuple) and t[0] == "tuple":
                return self.assign(ir.Build("tuple", tuple(build(c) for c in t[1])))
            if isinstance(t, tuple) and t[0] == "dict":
                return self.assign(ir.Build("dict", tuple(build(c) for c in t[2]), t[1]))
            return rows.pop(0)

        if isinstance(tree, tuple) and tree[0] == "tuple":
            return ir.Build("tuple", tuple(build(c) for c in tree[1]))
        if isinstance(tree, tuple) and tree[0] == "dict":
            return ir.Build("dict", tuple(build(c) for c in tree[2]), tree[1])
        return rows[0]

    # ---- x.at[index].set(v) and friends ----------------------------------------------

    def at_update(self, node: cst.Call, method: str, at: cst.Subscript) -> ir.Atom:
        """y = x.copy(); y[index] = v (or y[index] += v, or y[index] = op(y[index], v))."""
        if method != "get" and method not in AT_METHODS:
            raise self.error(node, f"x.at[...].{method}() is not supported",
                             "use .set, .add, .multiply, .divide, .power, .min, .max or .get")
        base = self.expr(at.value.value)
        index = self.index(at)
        if method == "get":
            if node.args:
                raise self.error(node, "x.at[...].get() takes no arguments here", "write x[...]")
            return self.assign(ir.Subscript(base, index))
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            raise self.error(node, f"x.at[...].{method}(v) takes one positional argument here",
                             "JAX's mode=, indices_are_sorted= and unique_indices= are not supported")
        value = self.expr(node.args[0].value)
        names = tuple(a for a in index.atoms() if isinstance(a, ir.Name))
        if method != "set" and names:
            o = self.origin
            message = (f"{o.filename}:{o.line}:{o.column}: x.at[...].{method}(v) with an index array that names an "
                       f"element twice, which JAX combines every time and NumPy's update once; "
                       f"remove the repeated entries\n    {o.text}")
            items = self.assign(ir.Build("tuple", names))
            self.emit(ir.ExprStmt(ir.Call(runtime.require_distinct, (items, ir.Const(message))), o))
        updated = self.names.temp()
        self.emit(ir.Assign((updated,), ir.Call(np.copy, (base,)), self.origin))
        op = AT_METHODS[method]
        if op is None or op is operator.add:
            self.emit(ir.SetItem(updated, index, value, "+" if op else None, self.origin))
        else:
            old = self.assign(ir.Subscript(ir.Name(updated), index))
            new = self.assign(ir.Call(op, (old, value)))
            self.emit(ir.SetItem(updated, index, new, None, self.origin))
        self.at_results.add(updated)
        return ir.Name(updated)


def assigned_names(body: cst.CSTNode, augmented: bool = True) -> set[str]:
    """The names that the statements of a function body bind (not those of functions nested in it);
    augmented=False: less those that only `x op= v` binds."""
    names: set[str] = set()

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
            if augmented:
                self._target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._target(node.target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:  # (in a comprehension too: the function's name)
            self._target(node.target)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False  # its own scope

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    body.visit(Collect())
    return names


def _tree_leaves(tree: Any) -> list:
    """The leaves of a scan's xs tree (LaxLowering.scanned_tree), in order."""
    if tree is None:
        return []
    if isinstance(tree, tuple) and tree[0] == "tuple":
        return [leaf for t in tree[1] for leaf in _tree_leaves(t)]
    if isinstance(tree, tuple) and tree[0] == "dict":
        return [leaf for t in tree[2] for leaf in _tree_leaves(t)]
    return [tree]


def _walk_all(node: Any):
    """node (or each of a sequence of nodes) and every node under it, nested functions' included."""
    for n in (node if isinstance(node, (list, tuple)) else [node]):
        yield n
        for child in n.children:
            yield from _walk_all(child)


def _own_lists(node: cst.FunctionDef) -> tuple[set, set]:
    """The names of a nested def that only ever hold lists, and dicts (source.list_names)."""
    return list_names(node), list_names(node, (cst.Dict, cst.DictComp))


def _rename_tree(tree: Any, mapping: dict) -> Any:
    if isinstance(tree, list):
        return [_rename_tree(t, mapping) for t in tree]
    return ir.rename(tree, mapping)
