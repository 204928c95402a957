"""Reverse mode: instances of derivative rules at the statements that call them."""

from __future__ import annotations

import ast
import copy
import operator


from ... import runtime
from ...ir import nodes as ir
from ...analysis.activity import bind, rule_for
from ...codegen.emit import assign, name
from ...errors import S2SError
from ...frontend.source import is_user_function
from ...rules.custom import CustomRule
from ...rules import QUOTIENT_UNREAD, Rule, facts, lookup, rule_of_call, spelled
from ...analysis.code_shapes import CodeShapes
from ...analysis.shapes import same_shape
from ..rule_helpers import drop_defaults, simplify
from .planning import Need


def _returns_tuple(call: ir.Call) -> bool:
    """A call of a library function whose rule gives a tuple (np.linalg.slogdet; np.linalg.svd with
    its vectors, a case of the call): an item of its result takes its adjoint by add_at, as an item
    of a user function's tuple does."""
    try:
        found = rule_of_call(call.fn, call.args, call.kwargs)
    except TypeError:  # an unhashable callable
        return False
    return found is not None and found.kind == "rule" and found.tuple_result


class RuleInstances:
    """The rule instances of a reverse-mode plan (plan.py), which the reverse sweep emits."""

    def instantiate(self, stmt: ir.Assign, rename: dict[str, str] | None = None,
                    shapes: dict[str, str] | None = None):
        """The reverse lines of a rule at this call: (locals, contributions, needs).

        shapes maps a variable to the name holding its shape, where only that is at hand.
        """
        shapes = shapes or {}
        call = stmt.value
        found = self.rule_variant(stmt, rule_for(call, stmt.origin))
        self.rules[id(stmt)] = found  # (for the plan's account of itself)
        if found is None or found.kind != "rule":
            return [], [], set()  # no input is differentiated (analysis refused the others)
        bound = bind(call, found, stmt.origin)
        if not found.reverse and not facts(call.fn).reverse_none:
            active = [p for p in found.params[1:] if isinstance(bound.get(p), ir.Name) and self.an.is_active(bound[p].id)]
            if active:  # a forward-only rule (a helper of forward-mode code): no adjoint would flow, silently
                raise S2SError(f"{found.name} has a forward-mode rule only; s2s cannot take its reverse-mode "
                               f"derivative with respect to {', '.join(active)}", stmt.origin,
                               hint="differentiate this code in forward mode (s2s.jvp, s2s.jacfwd), or call "
                                    "the NumPy function it stands for")
        target = stmt.targets[0]
        rename = rename or {}
        # A rule's locals are named once per statement: planning instantiates it again.
        local_names = {n: self.local_name(stmt, found, n) for n in found.locals} if found.locals else {}
        used: set[Need] = set()
        em = self.em

        class Substitute(ast.NodeTransformer):
            def visit_Name(self, node):
                ident = node.id
                if getattr(node, "_s2s_done", False):
                    return node
                if ident == found.result:
                    used.add(Need(target, "post"))
                    return name(target)
                if ident == f"{found.result}_bar":
                    return name(owner.bar(target))
                if ident in bound:
                    atom = bound[ident]
                    if isinstance(atom, ir.Name):
                        used.add(Need(atom.id, "pre"))
                        return name(rename.get(atom.id, atom.id))
                    return em.const(atom.value if isinstance(atom, ir.Const) else atom)
                if ident in local_names:
                    return name(local_names[ident])
                if ident in found.helpers:
                    return ast.Attribute(name("runtime"), ident, ast.Load())
                return node

            def visit_Call(self, node):
                if isinstance(node.func, ast.Name) and node.func.id == "unbroadcast" \
                        and "unbroadcast" in found.helpers and len(node.args) == 2 and not node.keywords \
                        and owner.template_same_shape(node.args[0], node.args[1], stmt, found, bound):
                    return self.visit(node.args[0])  # g has x's shape already
                # a runtime helper that reads only the shape of one argument (Facts.shape_argument)
                index = facts(spelled("runtime", node.func.id)).shape_argument if isinstance(node.func, ast.Name) \
                    and node.func.id in found.helpers else None
                if index is not None and index < len(node.args) and isinstance(node.args[index], ast.Name):
                    ident = node.args[index].id
                    atom = ir.Name(target) if ident == found.result else bound.get(ident)
                    if isinstance(atom, ir.Name):
                        when = "post" if ident == found.result else "pre"
                        used.add(Need(atom.id, when, shape=True))
                        replacement = name(shapes.get(atom.id) or rename.get(atom.id, atom.id))
                        replacement._s2s_done = True
                        node.args[index] = replacement
                self.generic_visit(node)
                return drop_defaults(node, found)

        owner = self
        contributions = []
        referenced_locals: set[str] = set()
        for stmt_t in found.reverse:
            param = stmt_t.target.id[: -len("_bar")]
            atom = bound.get(param)
            if not (isinstance(atom, ir.Name) and self.an.is_active(atom.id)):
                continue
            expr = copy.deepcopy(stmt_t.value)
            referenced_locals |= {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)} & set(found.locals)
            expr = Substitute().visit(expr)
            if isinstance(stmt_t.op, ast.Sub):
                expr = ast.UnaryOp(ast.USub(), expr)
            contributions.append((atom.id, simplify(expr)))
        # A local the reverse lines read may read other locals (qr's q_t in its g): those too.
        pending = list(referenced_locals)
        while pending:
            for n in ast.walk(found.locals[pending.pop()]):
                if isinstance(n, ast.Name) and n.id in found.locals and n.id not in referenced_locals:
                    referenced_locals.add(n.id)
                    pending.append(n.id)
        local_stmts = []
        for local, value in found.locals.items():
            if local in referenced_locals:
                local_stmts.append(assign(local_names[local], simplify(Substitute().visit(copy.deepcopy(value)))))
        return local_stmts, contributions, used

    def template_same_shape(self, g: ast.expr, x: ast.expr, stmt: ir.Assign, found, bound) -> bool:
        """In a rule's `unbroadcast(g, x)` at this statement: does g provably have x's shape?"""
        if self.classes is None:
            return False
        shapes = self._template_shapes(stmt, found, bound, ())
        return same_shape(shapes.of(g), shapes.of(x))

    def _template_shapes(self, stmt: ir.Assign, found, bound, seen: tuple) -> CodeShapes:
        """The shape analysis (analysis/code_shapes.py) of a rule's expressions at this
        statement: a parameter has its argument's class there, the result (and its adjoint:
        every contribution to it is unbroadcast to that shape) the target's after it, a local
        its value's."""
        classes = self.classes

        def class_of(ident: str):
            if ident in (found.result, f"{found.result}_bar"):
                return classes.post(stmt, stmt.targets[0])
            if ident in bound:
                atom = bound[ident]
                if isinstance(atom, ir.Name):
                    return classes.pre(stmt, atom.id)
                return classes.constant(atom) if isinstance(atom, ir.Const) else None
            if ident in found.locals and ident not in seen:
                return self._template_shapes(stmt, found, bound, seen + (ident,)).of(found.locals[ident])
            return None

        return CodeShapes(class_of)

    def exact_setitem(self, stmt: ir.SetItem) -> bool:
        """base[index] = value where value provably has the shape of base[index]: its adjoint
        is the slice of base's adjoint as it is, with no unbroadcast and no shape tape."""
        if self.classes is None or not isinstance(stmt.value, ir.Name):
            return False
        env = self.classes.before.get(id(stmt), {})
        return same_shape(self.classes.subscript(env.get(stmt.base), stmt.index, env), env.get(stmt.value.id))

    def shape_invariant(self, var: str) -> bool:
        """var has one provable shape wherever it is bound: its value in the reverse sweep,
        whichever it is, shapes its adjoint (no shape tape)."""
        if var not in self.invariant_shapes:
            self.invariant_shapes[var] = self.classes is not None and self.classes.everywhere(var) is not None
        return self.invariant_shapes[var]

    def rule_variant(self, stmt: ir.Assign, found: Rule | None) -> Rule | None:
        """The rule whose reverse lines this call gets: in a loop, a quotient that no other
        rule reads has a rule without it (each iteration's quotient would otherwise be taped,
        or recomputed by a second division)."""
        if found is not lookup(operator.truediv) or not self.an.enclosing_loops(stmt):
            return found
        if id(stmt) not in self.variants:
            self.variants[id(stmt)] = found  # (while its readers are asked)
            z = stmt.targets[0]
            read = any(n.var == z and not n.shape for other in self.an.occurrences.get(z, [])
                       if other is not stmt for n in self.needs(other))
            self.variants[id(stmt)] = found if read else lookup(QUOTIENT_UNREAD)
        return self.variants[id(stmt)]

    def local_name(self, stmt, found, local: str) -> str:
        key = (id(stmt), id(found), local)
        if key not in self.rule_locals:
            self.rule_locals[key] = self.names.fresh(f"{stmt.targets[0]}_{local}")
        return self.rule_locals[key]

    def needs(self, stmt) -> set[Need]:
        """The values the reverse sweep reads when it handles this statement."""
        an = self.an
        out: set[Need] = set()
        if isinstance(stmt, ir.Assign):
            value = stmt.value
            if isinstance(value, ir.Call) and is_user_function(value.fn):
                out |= {Need(a.id, "pre") for a in value.args if isinstance(a, ir.Name)}
            elif isinstance(value, ir.Call):
                used = self.instantiate(stmt)[2]
                full = {(n.var, n.when) for n in used if not n.shape}
                out |= {Need(n.var, n.when, shape=(n.var, n.when) not in full) for n in used}
                out = {n for n in out if not (n.shape and (n.var, n.when) in full)}
            elif isinstance(value, ir.Subscript):
                out |= {Need(n, "pre") for n in ir.names_in(value.index)}
                if isinstance(value.value, ir.Name) and self.an.is_active(value.value.id) \
                        and not self.shape_invariant(value.value.id):
                    # x_bar[index] += t_bar needs an x_bar shaped like x here (x may change shape).
                    out.add(Need(value.value.id, "pre", shape=True))
            if stmt.unpack:
                # An active target's adjoint holds a value by now; the others are zeros_like(t).
                out |= {Need(t, "post") for t in stmt.targets if not self.an.is_active(t)}
            if not stmt.inplace:
                out |= {Need(t, when, shape=True) for t in stmt.targets if (when := self.rebound_zeros_shaped(t, stmt))}
        elif isinstance(stmt, ir.SetItem):
            out |= {Need(n, "pre") for n in ir.names_in(stmt.index)}
            if an.atom_active(stmt.value) and not self.exact_setitem(stmt):
                out.add(Need(stmt.value.id, "pre", shape=True))
        if isinstance(stmt, (ir.If, ir.For, ir.While)):
            out |= {Need(v, "post", shape=True) for v in self.list_adjoints_started_at(stmt)}
        if isinstance(stmt, ir.If):
            out |= {Need(n, "pre") for n in ir.names_in(stmt.test)}
        elif isinstance(stmt, ir.For):
            # The trip count is assigned just before the loop (forward_block): taped after it,
            # as a while loop's count is, so that the reverse loop reads this entry's count.
            trips = self.loop_trips(stmt)
            for atom in self.reverse_range_atoms(stmt):
                out |= {Need(n, "post" if n == trips else "pre") for n in ir.names_in(atom)}
        elif isinstance(stmt, ir.While):
            out.add(Need(self.while_trips(stmt), "post"))  # known once the loop has run
        elif isinstance(stmt, ir.Push):
            # t.pop() undoes it: t must be the list this append grew (`t = []` in a loop makes
            # another one each pass, so t is taped, the list itself, not a copy: forward_sweep.push)
            out.add(Need(stmt.tape, "pre"))
        return {n for n in out if n.var not in self.fn.constants}

    def rebound_zeros_shaped(self, var: str, stmt: ir.Assign) -> str | None:
        """stmt binds var anew, from a value that does not read it: before stmt the reverse sweep
        holds var's adjoint at zero, for var's earlier value, and makes those zeros where a loop
        body or branch that stmt sits in ends, or before a loop or branch ahead of stmt that
        reads var, unless a statement in between reads var into an active value (its
        contribution is the adjoint then). var itself may hold a later value there, of another
        length or shape (`for v in ys: ys = [v]`, `for W, b in layers: h = x @ W + b`): the
        zeros take the shape var had before stmt, from a shape tape (sweep.kill). "pre": the
        shape is taped before stmt. "post": var is first bound in a loop, by stmt alone, so
        the shape it had before stmt is the one stmt gave it in an earlier pass (or none), which
        its tape keeps under this pass's (runtime.top_shape). None: no shape tape."""
        if var in self.straight or not self.an.is_active(var) or var in ir.stmt_reads(stmt) \
                or not self.needs_reset(var):
            return None
        if self.bound_before(var, stmt):
            when = "pre"
        elif self.an.enclosing_loops(stmt) and len(self.an.defs.get(var, [])) == 1 and self.an.defs[var][0] is stmt:
            when = "post"
        else:
            return None
        block = self.chains[id(stmt)][-1]
        statements = self.block_of[block]
        zeros_made = block != self.scope.get(var)  # (where the reverse of stmt's loop body or branch ends)
        for s in reversed(statements[:next(k for k, s in enumerate(statements) if s is stmt)]):
            if isinstance(s, (ir.If, ir.For, ir.While)):
                if any(var in ir.stmt_reads(t) or var in ir.stmt_writes(t) for t in ir.walk([s])):
                    zeros_made = True
                    break
            elif isinstance(s, ir.Push) and s.tape == var:
                return None  # (its reverse pops var itself, which then has the length to take)
            elif isinstance(s, ir.Assign) and var in ir.stmt_reads(s) and any(self.an.is_active(t) for t in s.targets):
                return None
            elif isinstance(s, ir.Assign) and var in s.targets:
                return None  # (an earlier binding, which tapes the shape before it where that is needed)
        # (without s2s.jit's facts any value may change shape: zeros_shaped gives a number's zero
        # where the taped shape is ())
        return when if zeros_made and (self.classes is None or self.may_change_shape(var)) else None

    def bound_before(self, var: str, stmt) -> bool:
        """Does var surely hold a value where stmt starts: a parameter, bound by an assignment
        ahead of stmt in its block or an enclosing one, or an enclosing loop's variable? (A
        name first bound in a branch or a loop has no shape to tape before that.)"""
        if var in self.fn.params:
            return True
        inner = stmt
        for block_id in reversed(self.chains[id(stmt)]):
            block = self.block_of[block_id]
            k = next(k for k, s in enumerate(block) if s is inner or any(t is inner for t in ir.walk([s])))
            if isinstance(block[k], ir.For) and block[k] is not stmt and block[k].var == var:
                return True
            if any(isinstance(s, ir.Assign) and var in s.targets for s in block[:k]):
                return True
            inner = block[k]
        return False

    def may_change_shape(self, var: str, seen: frozenset = frozenset()) -> bool:
        """May var's value differ in length or shape from one binding to the next, in a way a
        shape tape keeps (zeros_shaped)? A list (bound only to list displays, comprehensions or
        copies of one, or grown by .append; a tuple too, except under Numba, whose type fixes
        its length), or, under s2s.jit, an array that no one class proves of one shape. Not a
        number: without s2s.jit's facts an array cannot be told from one, and zeros of a
        number's taped shape would be a 0-d array."""
        if var in self.appended or var in seen:
            return True
        kinds = ("list",) if self.classes is not None else ("list", "tuple")
        defs = [d for d in self.an.defs.get(var, []) if not isinstance(d, ir.SetItem)]
        if defs and all(isinstance(d, ir.Assign) and not d.unpack and (
                isinstance(d.value, ir.Build) and d.value.kind in kinds
                or isinstance(d.value, ir.Name) and self.may_change_shape(d.value.id, seen | {var})) for d in defs):
            return True
        if self.classes is None or self.shape_invariant(var):
            return False
        # Under s2s.jit: no binding of var is proved a number or a tuple, and each is a slice or a
        # library function's result (an array there; one that is a number after all keeps a
        # number's zeros: zeros_shaped). Numba checks no bounds: an adjoint of another shape
        # would take writes past its end (a wrong gradient, not an IndexError).
        bound = [env[var] for env in list(self.classes.before.values()) + list(self.classes.after.values())
                 if var in env]
        if any(info is not None and info[0] != "arr" for info in bound):
            return False
        return bool(defs) and all(isinstance(d, ir.Assign) and not d.unpack and (
            isinstance(d.value, ir.Subscript) and any(isinstance(i, ir.Slice) for i in d.value.index.items)
            or isinstance(d.value, ir.Call) and not is_user_function(d.value.fn)
            and not isinstance(d.value.fn, CustomRule) and not _returns_tuple(d.value)
            and getattr(d.value.fn, "__module__", "") in ("numpy", "_operator")
            or isinstance(d.value, ir.Name) and self.may_change_shape(d.value.id, seen | {var})
            # (a 0-d binding given as a number under Numba: transforms/zero_d_merges.py; its value's)
            or _number_of(d.value) is not None and self.may_change_shape(_number_of(d.value), seen | {var}))
            for d in defs)

    def list_adjoints_started_at(self, stmt) -> list[str]:
        """The lists grown with .append (and the other values that may change length or shape:
        may_change_shape), each made anew in a loop, whose adjoints the reverse sweep starts (at zero) just before it reverses
        stmt, a loop or branch that reads them: stmt is the last statement of the variable's
        scope that touches it. There the name may refer to the value of a later pass (a list
        that the reverse sweep's pops have emptied, `_seq = ys` over a list of another length),
        so the zeros take the shape it had after stmt, from a shape tape (sweep.materialize)."""
        block = self.chains[id(stmt)][-1]
        later = self.block_of[block][next(k for k, s in enumerate(self.block_of[block]) if s is stmt) + 1:]

        def touched(statements) -> set[str]:
            out = set()
            for s in ir.walk(statements):
                out |= set(ir.stmt_reads(s)) | set(ir.stmt_writes(s))
            return out

        candidates = [v for v in sorted(self.an.occurrences) if self.scope.get(v) == block and v not in self.straight
                      and self.an.is_active(v) and self._made_in_a_loop(v)
                      and (v in self.appended or self.may_change_shape(v) and self.bound_before(v, stmt))]
        if not candidates:
            return []
        here, after = touched([stmt]), touched(later)
        return [v for v in candidates if v in here and v not in after]

    def loop_invariant(self, var: str, seen: frozenset = frozenset()) -> bool:
        """Is var assigned once, in a loop, from operands that nothing in that loop changes
        (or that are loop-invariant themselves)?

        Then every iteration stores the same value (-0.5 * sigma in a time loop), and the
        value left in var after the loop is the one each iteration read: no tape.
        """
        if var in seen:
            return False
        if var not in self.invariant:
            defs = self.an.defs.get(var, [])
            site = defs[0] if len(defs) == 1 else None
            loops = set(self.an.enclosing_loops(site)) if isinstance(site, ir.Assign) else set()
            ok = bool(loops) and var not in self.may_mutate and var not in self.an.subscripted \
                and not site.inplace and not site.unpack and isinstance(site.value, ir.Call) \
                and not is_user_function(site.value.fn)
            if ok:
                found = rule_for(site.value, site.origin)
                ok = found is not None and found.kind == "rule"  # a pure function of its arguments
            for operand in ir.stmt_reads(site) if ok else []:
                writers = list(self.an.defs.get(operand, []))
                for other in self.an.alias_of.get(operand, ()):  # in-place writes through aliases
                    writers += [d for d in self.an.defs.get(other, []) if isinstance(d, ir.SetItem)]
                inside = any(w != "param" and (id(w) in loops or loops & set(self.an.enclosing_loops(w)))
                             for w in writers)
                if inside and not self.loop_invariant(operand, seen | {var}):
                    ok = False
                    break
            self.invariant[var] = ok
        return self.invariant[var]


def _number_of(value) -> str | None:
    """v of runtime.number_if_0d(v), the value itself (a number where it is 0-d under Numba)."""
    if isinstance(value, ir.Call) and value.fn is runtime.number_if_0d and isinstance(value.args[0], ir.Name):
        return value.args[0].id
    return None
