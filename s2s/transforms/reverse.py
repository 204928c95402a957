"""The vjp transform: a normalized function -> Python source of its reverse mode.

The generated function runs a forward sweep (the primal, plus pushes of the values the
reverse sweep will need and that the primal later overwrites) and then a reverse sweep
that visits the statements backwards, applying each statement's rule from templates/.

Conventions (see DESIGN.md section 3):
- the adjoint of `x` is `x_bar`, the tape of `x` is `x_tape`, both fresh if taken;
- a value is taped only where a later assignment may overwrite it (analysis/activity.py);
  the reverse sweep pops it back into the variable itself;
- adjoints of variables assigned once in straight-line code start at their first
  contribution (`x_bar = ...`); the others are set to zero where their scope begins
  and reset where the variable is assigned, so nothing is multiplied by zero;
- only adjoints of subscripted arrays are updated in place (they are always fresh);
- a call to a user function asks for the adjoints of its active arguments only: the
  callee's vjp for those (`helper_vjp_wrt_x`, pipeline.Variants) computes no other.
"""

from __future__ import annotations

import ast
import copy
import inspect
import operator
from dataclasses import dataclass

import numpy as np

from ..ir import nodes as ir
from .. import runtime
from ..analysis.activity import analyse, bind, rule_for
from ..codegen.emit import Emitter, assign, name, runtime_call
from ..errors import S2SError
from ..frontend.source import is_user_function
from ..rules import QUOTIENT_UNREAD, Rule, facts, lookup, spelled
from ..analysis.shapes import ShapeClasses, broadcast, call_info, same_shape


@dataclass(frozen=True)
class Need:
    var: str
    when: str  # "pre": the value the statement reads; "post": the value it produced
    shape: bool = False  # only its shape is read (by unbroadcast and friends)


# Rematerialisation: the reverse sweep may call a function again, on the same operands, rather
# than read its result from a tape, where its rule declares it cheap (s2s.rules.Facts.cheap):
# arithmetic, comparisons and the elementwise functions that compile to an instruction or two.
# Transcendental ones (np.exp, np.log, np.sin, x ** y with y not an integer constant...) are
# libm calls that cost more than a tape's push and pop: their results stay on tapes.

# A recomputed value re-runs at most this many statements, nested at most this deep.
RECOMPUTE_MAX_STATEMENTS = 32
RECOMPUTE_MAX_DEPTH = 12


def _cheap_pure(call: ir.Call) -> bool:
    if call.kwargs or (isinstance(call.fn, np.ufunc) and len(call.args) != call.fn.nin):
        return False  # (a ufunc's further positional argument is `out`: it writes)
    if call.fn is operator.pow:  # x ** 2 compiles to multiplications, x ** y to a call
        exponent = call.args[1]
        return isinstance(exponent, ir.Const) and type(exponent.value) is int and 0 <= exponent.value <= 4
    return facts(call.fn).cheap


def _all_names(fn: ir.Function) -> set[str]:
    names = set(fn.params) | set(fn.constants)
    for stmt in ir.walk(fn.body):
        names.update(ir.stmt_reads(stmt))
        names.update(ir.stmt_writes(stmt))
    return names


class VJP:
    def __init__(self, fn: ir.Function, emitter: Emitter, active_params: list[str],
                 function_name: str, variant, has_aux: bool = False, facts: dict | None = None,
                 value_needed: bool = True):
        for stmt in ir.walk(fn.body):
            if isinstance(stmt, ir.Push) or (isinstance(stmt, ir.Assign) and (isinstance(stmt.value, ir.Pop) or (
                    isinstance(stmt.value, ir.Call) and stmt.value.fn is runtime.new_tape))) or (
                    isinstance(stmt, ir.ExprStmt) and stmt.value.fn in (runtime.index_add, runtime.clear)):
                raise S2SError("reverse mode of generated reverse-mode code is not supported",
                               stmt.origin, "take second derivatives forward over reverse: "
                               "s2s.hessian, or s2s.jacfwd(s2s.jacrev(f))")
        self.fn = fn
        # variant(python function, positions of the arguments whose adjoints a call needs) -> the
        # name of the callee's vjp that returns those adjoints
        self.variant = variant
        self.has_aux = has_aux
        self.em = emitter
        self.function_name = function_name
        self.names = ir.Names(_all_names(fn) | {"np", "math", "runtime"})
        self.an = analyse(fn, active_params)
        self.active_params = active_params
        self.bars: dict[str, str] = {}
        self.tapes: dict[tuple, str] = {}  # (var, id(stmt), when) -> tape name
        self.tape_order: list[str] = []
        self.shape_tapes: set[str] = set()
        self.counted: dict[str, tuple[str, ast.expr]] = {}  # tape -> (its count, its capacity)
        self.loop_totals: dict[int, str] = {}  # id(loop) -> its trip count in all (counting_loop)
        self.counting_loops: dict[int, list] = {}  # id(outermost loop) -> the loops counting before it
        self.invariant: dict[str, bool] = {}
        self.trips: dict[int, str] = {}  # id(loop) -> trip-count variable
        self.live: set[str] = set()  # straight-line adjoints that hold a value
        self.materialized: set[str] = set()
        self.pending: set[str] = set()  # adjoints known to be zero, not yet assigned
        self.popped_into: set[str] = set()
        self.plan: dict | None = None
        self.recipes: dict[str, tuple | None] = {}  # var -> (its definition, recomputed operands)
        self.recompute_plan: dict[int, tuple] = {}  # id(stmt) -> (needed vars, statements to re-run)
        self.remat_wanted: set[str] = set()
        self.local_recipes: dict[tuple, tuple] = {}  # (var, id(stmt)) -> a recipe for that place only
        self.shape_vars: dict[str, str] = {}
        # What the arguments are (s2s.jit sees them at the call; analysis/shapes.py): where it proves
        # that an adjoint already has its variable's shape, no unbroadcast and no shape tape.
        self.classes = ShapeClasses(fn, facts) if facts is not None else None
        # s2s.grad has no use for the value: where it is proved a number (so that no check of
        # the output's shape is needed), the vjp returns None for it, and the folding pass then
        # drops what only the value needed (a sum over a long vector is a chain of dependent
        # additions that costs more than the rest of the gradient).
        self.value_skipped = (not value_needed and not has_aux and self.classes is not None
                              and self.classes.result is not None and self.classes.result[0] == "num")
        self.variants: dict[int, Rule | None] = {}  # id(stmt) -> the rule its reverse lines use
        self.rule_locals: dict[tuple, str] = {}  # (id(stmt), id(rule), local) -> its name
        self._plan_scopes()
        self.may_mutate = set()
        for members in self.an.alias_of.values():
            self.may_mutate |= set(members)

    # ---- names ------------------------------------------------------------------

    def bar(self, var: str) -> str:
        if var not in self.bars:
            self.bars[var] = self.names.fresh(f"{var}_bar")
        return self.bars[var]

    # ---- scopes of adjoints -----------------------------------------------------

    def _plan_scopes(self):
        """For each variable: the block whose reversal owns its adjoint, and whether it
        is a straight-line temporary (one assignment, all uses in that block)."""
        chains: dict[int, tuple] = {}

        def visit(block, chain):
            for stmt in block:
                chains[id(stmt)] = chain + (id(block),)
                for child in ir.child_blocks(stmt):
                    visit(child, chains[id(stmt)])

        visit(self.fn.body, ())
        self.block_of: dict[int, list] = {}
        for stmt in ir.walk(self.fn.body):
            for child in ir.child_blocks(stmt):
                self.block_of[id(child)] = child
        self.block_of[id(self.fn.body)] = self.fn.body
        self.chains = chains
        self.scope: dict[str, int] = {}
        self.straight: set[str] = set()
        for var, occurrences in self.an.occurrences.items():
            paths = [chains[id(s)] for s in occurrences]
            if var in self.fn.params:
                paths.append((id(self.fn.body),))
            common = paths[0]
            for path in paths[1:]:
                k = 0
                while k < min(len(common), len(path)) and common[k] == path[k]:
                    k += 1
                common = common[:k]
            while len(common) > 1 and not self._defined_first(var, self.block_of[common[-1]]):
                common = common[:-1]
            self.scope[var] = common[-1]
            defs = self.an.defs.get(var, [])
            direct = all(chains[id(s)] == common for s in occurrences)
            if direct and len(defs) <= 1 and var not in self.an.subscripted:
                self.straight.add(var)

    def _defined_first(self, var: str, block: list) -> bool:
        """Is var assigned directly in block before anything in block reads it?"""
        for stmt in block:
            if isinstance(stmt, ir.Assign) and var in stmt.targets and not stmt.inplace \
                    and var not in ir.stmt_reads(stmt):
                return True
            if any(var in set(ir.stmt_reads(s)) | set(ir.stmt_writes(s)) for s in ir.walk([stmt])):
                return False
        return False

    def needs_reset(self, var: str) -> bool:
        """Can the adjoint of var receive contributions again after this assignment?"""
        killing = [d for d in self.an.defs.get(var, []) if not isinstance(d, ir.SetItem)]
        if len(killing) != 1 or killing[0] == "param":
            return True
        return self.chains[id(killing[0])][-1] != self.scope[var]

    # ---- which statements have reverse work -------------------------------------

    def has_work(self, stmt) -> bool:
        an = self.an
        if isinstance(stmt, ir.Assign):
            # Assigning an active variable ends its adjoint's life there, even when the
            # value itself is a constant (y = np.zeros(n) in a loop).
            return any(an.is_active(t) for t in stmt.targets)
        if isinstance(stmt, ir.SetItem):
            return an.is_active(stmt.base)
        if isinstance(stmt, (ir.If, ir.For, ir.While)):
            return any(self.has_work(s) for b in ir.child_blocks(stmt) for s in b)
        return False

    # ---- rule instances ---------------------------------------------------------

    def instantiate(self, stmt: ir.Assign, rename: dict[str, str] | None = None,
                    shapes: dict[str, str] | None = None):
        """The reverse lines of a rule at this call: (locals, contributions, needs).

        shapes maps a variable to the name holding its shape, where only that is at hand.
        """
        shapes = shapes or {}
        call = stmt.value
        found = self.rule_variant(stmt, rule_for(call, stmt.origin))
        if found is None or found.kind != "rule":
            return [], [], set()  # no input is differentiated (analysis refused the others)
        bound = bind(call, found, stmt.origin)
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
                return _drop_defaults(node, found)

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
            contributions.append((atom.id, _simplify(expr)))
        local_stmts = []
        for local, value in found.locals.items():
            if local in referenced_locals:
                local_stmts.append(assign(local_names[local], _simplify(Substitute().visit(copy.deepcopy(value)))))
        return local_stmts, contributions, used

    def template_same_shape(self, g: ast.expr, x: ast.expr, stmt: ir.Assign, found, bound) -> bool:
        """In a rule's `unbroadcast(g, x)` at this statement: does g provably have x's shape?"""
        if self.classes is None:
            return False
        return same_shape(self._template_class(g, stmt, found, bound, ()),
                          self._template_class(x, stmt, found, bound, ()))

    def _template_class(self, expr: ast.expr, stmt: ir.Assign, found, bound, seen: tuple):
        """The shape class (analysis/shapes.py) of a rule's expression at this statement. An adjoint
        has its variable's shape: every contribution to it is unbroadcast to that shape."""
        classes = self.classes

        def of(e):
            return self._template_class(e, stmt, found, bound, seen)

        if isinstance(expr, ast.Name):
            ident = expr.id
            if ident in (found.result, f"{found.result}_bar"):
                return classes.post(stmt, stmt.targets[0])
            if ident in bound:
                atom = bound[ident]
                if isinstance(atom, ir.Name):
                    return classes.pre(stmt, atom.id)
                return classes.constant(atom) if isinstance(atom, ir.Const) else None
            if ident in found.locals and ident not in seen:
                return self._template_class(found.locals[ident], stmt, found, bound, seen + (ident,))
            return None
        if isinstance(expr, ast.Constant):
            return classes.constant(ir.Const(expr.value))
        if isinstance(expr, ast.BinOp) and not isinstance(expr.op, ast.MatMult):
            return broadcast(of(expr.left), of(expr.right))
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            return broadcast(of(expr.operand))
        if isinstance(expr, ast.Compare) and len(expr.comparators) == 1:
            return broadcast(of(expr.left), of(expr.comparators[0]))
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
                and isinstance(expr.func.value, ast.Name) and expr.func.value.id == "np" and not expr.keywords:
            fn = getattr(np, expr.func.attr, None)
            return call_info(fn, [of(a) for a in expr.args]) if fn is not None else None
        return None

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
        return self.classes is not None and self.classes.everywhere(var) is not None

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
        elif isinstance(stmt, ir.SetItem):
            out |= {Need(n, "pre") for n in ir.names_in(stmt.index)}
            if an.atom_active(stmt.value) and not self.exact_setitem(stmt):
                out.add(Need(stmt.value.id, "pre", shape=True))
        elif isinstance(stmt, ir.If):
            out |= {Need(n, "pre") for n in ir.names_in(stmt.test)}
        elif isinstance(stmt, ir.For):
            # The trip count is assigned just before the loop (forward_block): taped after it,
            # as a while loop's count is, so that the reverse loop reads this entry's count.
            trips = self.loop_trips(stmt)
            for atom in self.reverse_range_atoms(stmt):
                out |= {Need(n, "post" if n == trips else "pre") for n in ir.names_in(atom)}
        elif isinstance(stmt, ir.While):
            out.add(Need(self.while_trips(stmt), "post"))  # known once the loop has run
        return {n for n in out if n.var not in self.fn.constants}

    def _plan_block(self, block: list) -> None:
        """Decide, for every value the reverse sweep reads, where it comes from.

        A value is taped only where a later assignment may overwrite it. A value popped
        for a later statement of the same block is still in its variable when the reverse
        sweep reaches an earlier statement that reads the same version, so that one needs
        no tape of its own. A value read only for its shape has a shape tape (runtime.push_shape).
        A value that cheap, pure statements of the same iteration compute from values the
        reverse sweep has at hand is recomputed there instead (see recipe).
        """
        covered_value: set[str] = set()
        covered_shape: dict[str, tuple] = {}  # var -> the tape key its shape was popped from

        def decide(stmt, need):
            if need.var in covered_value:
                return None, "value", None
            if need.shape and need.var in covered_shape:
                return None, "shape", covered_shape[need.var]
            if need.var in self.trips.values():
                # A trip counter is set where its loop starts: again on each outer iteration.
                clobbered = bool(self.an.enclosing_loops(stmt))
            else:
                clobbered = self.an.defs_may_clobber(need.var, stmt, operand=need.when == "pre") \
                    and not self.loop_invariant(need.var)
            if not clobbered:
                return None, "value", None
            if self.recomputable(stmt, need, covered_value):
                return "recompute", "value", None
            if need.shape:
                return "shape", "shape", (need.var, id(stmt), need.when)
            return "value", "value", None

        for stmt in reversed(block):
            for child in ir.child_blocks(stmt):
                self._plan_block(child)
            needs = sorted(self.needs(stmt), key=lambda n: (n.var, n.when, n.shape)) if self.has_work(stmt) else []
            for need in needs:
                if need.when == "post":
                    self.plan[(id(stmt), need)] = decide(stmt, need)
            for s in ir.walk([stmt]):
                written = set(ir.stmt_writes(s))
                covered_value -= written
                for var in written:
                    covered_shape.pop(var, None)
            for need in needs:
                if need.when == "pre":
                    self.plan[(id(stmt), need)] = decide(stmt, need)
            recomputed = sorted({n.var for n in needs if self.plan[(id(stmt), n)][0] == "recompute"})
            if recomputed:
                statements = self.recompute_statements(stmt, recomputed, covered_value)
                self.recompute_plan[id(stmt)] = (recomputed, statements)
                # They stay in their variables for earlier statements (the versions this one reads).
                covered_value |= {t for d in statements if d is not stmt for t in d.targets}
            targets = set(stmt.targets) if isinstance(stmt, ir.Assign) else set()
            for need in needs:
                if need.when == "pre" and need.var not in targets:
                    # (the old value of an assigned variable may be popped under another name)
                    _, source, key = self.plan[(id(stmt), need)]
                    if source == "shape":
                        covered_shape[need.var] = key
                    else:
                        covered_value.add(need.var)

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

    def _ensure_plan(self):
        if self.plan is None:
            self.plan = {}
            for stmt in ir.walk(self.fn.body):
                if self.has_work(stmt):
                    for need in self.needs(stmt):
                        if not need.shape and self._recomputable_at(stmt, need):
                            self.remat_wanted |= self._closure(need.var)
            self._plan_block(self.fn.body)

    # ---- recomputation instead of tapes ------------------------------------------

    def recipe(self, var: str, active: frozenset = frozenset()) -> tuple | None:
        """How the reverse sweep can compute var again instead of popping it from a tape.

        (definition, recomputed operands, depth), or None. var qualifies when its only
        definition is `var = <cheap pure expression>` (arithmetic, comparisons, cheap
        functions, constants, copies, `.shape`, reads `a[...]` of an array that nothing in the
        function writes, directly or through an alias) whose operands are, where the
        reverse sweep handles a later statement of the same iteration, still what they were:
        constants, variables never assigned after the definition runs (parameters, values
        set before the loop, loop-invariant values), loop variables the reverse loops
        reconstruct, or values with a recipe of their own defined before it in the same
        block or an enclosing one. Re-running the same operations on the same operands
        gives the same bits. Arrays qualify too: recomputing an elementwise expression
        costs what it cost in the primal, and spares the tape its memory.
        """
        if var in self.recipes:
            return self.recipes[var]
        if var in active:
            return None
        result = None
        defs = self.an.defs.get(var, [])
        site = defs[0] if len(defs) == 1 else None
        if isinstance(site, ir.Assign) and site.targets == (var,) and not site.inplace \
                and not site.alias_check and var not in self.may_mutate and var not in self.trips.values():
            operands = self._pure_operands(site.value)
            if operands is not None:
                recomputed = []
                depth = 1
                for operand in operands:
                    if operand in self.fn.constants or self._available(operand, site):
                        continue
                    inner = self.recipe(operand, active | {var})
                    if inner is None or not self._before(inner[0], site):
                        recomputed = None
                        break
                    recomputed.append(operand)
                    depth = max(depth, inner[2] + 1)
                if recomputed is not None and depth <= RECOMPUTE_MAX_DEPTH:
                    result = (site, tuple(sorted(set(recomputed))), depth)
        self.recipes[var] = result  # (a cycle has no recipe from any of its members: _before)
        return result

    def _pure_operands(self, value) -> list[str] | None:
        """The variables a cheap, pure right-hand side reads, or None for any other one."""
        if isinstance(value, (ir.Const, ir.Name)):
            return ir.names_in(value)
        if isinstance(value, ir.Call):
            if is_user_function(value.fn) or not _cheap_pure(value):
                return None
            return ir.names_in(value)
        if isinstance(value, ir.Attribute) and value.attr in ("shape", "ndim", "size", "dtype"):
            return ir.names_in(value)  # (writes into an array keep these)
        if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
            base = value.value.id
            if base in self.may_mutate or base in self.an.mutated or self.an.is_container(base):
                return None
            if any(isinstance(d, ir.SetItem) for d in self.an.defs.get(base, [])):
                return None
            return ir.names_in(value)
        return None

    def _available(self, var: str, site) -> bool:
        """Does var hold, during the reverse sweep of site's iteration, the value site read?"""
        if var in self.trips.values():
            return False
        return not self.an.defs_may_clobber(var, site, operand=True) or self.loop_invariant(var)

    def _before(self, earlier, later) -> bool:
        """Does `earlier` run before `later` in every iteration that runs `later`?"""
        info = self.an.info[id(earlier)]
        return info.block_id in self.chains[id(later)] and info.pos < self.an.info[id(later)].pos

    def _closure(self, var: str) -> set[str]:
        out = {var}
        for operand in self.recipes[var][1]:
            out |= self._closure(operand)
        return out

    def _recomputable_at(self, stmt, need: Need) -> bool:
        found = self.recipe(need.var)
        if found is None:
            return False
        if need.when == "post":
            ok = found[0] is stmt
        else:
            ok = found[0] is not stmt and self._before(found[0], stmt)
        return ok and len(self._closure(need.var)) <= RECOMPUTE_MAX_STATEMENTS

    def recomputable(self, stmt, need: Need, covered: set[str]) -> bool:
        """Recompute this value rather than tape it? Shapes alone are recomputed only for
        values the reverse sweep recomputes anyway (a shape tape costs next to nothing)."""
        if need.shape and need.var not in self.remat_wanted:
            return False
        if self._recomputable_at(stmt, need):
            return True
        return not need.shape and need.when == "pre" and self._recipe_from_covered(stmt, need.var, covered)

    def _recipe_from_covered(self, stmt, var: str, covered: set[str]) -> bool:
        """A recipe for var here, whose operands may also be values the reverse sweep has
        popped for later statements of this block (covered) and that still hold the version
        var was computed from: `_t2 = b * x` where x is popped back anyway."""
        defs = self.an.defs.get(var, [])
        site = defs[0] if len(defs) == 1 else None
        if not (isinstance(site, ir.Assign) and site.targets == (var,) and not site.inplace
                and not site.alias_check and var not in self.may_mutate and site is not stmt
                and self.an.info[id(site)].block_id == self.an.info[id(stmt)].block_id
                and self._before(site, stmt)):
            return False
        operands = self._pure_operands(site.value)
        if operands is None:
            return False
        block = self.block_of[self.an.info[id(site)].block_id]
        start = next(k for k, s in enumerate(block) if s is site)
        end = next(k for k, s in enumerate(block) if s is stmt)
        written = {w for s in ir.walk(block[start:end]) for w in ir.stmt_writes(s)}
        recomputed = []
        depth = 1
        for operand in operands:
            if operand in self.fn.constants or self._available(operand, site):
                continue
            inner = self.recipe(operand)
            if inner is not None and self._before(inner[0], site):
                recomputed.append(operand)
                depth = max(depth, inner[2] + 1)
            elif operand not in covered or operand in written:
                return False
        found = (site, tuple(sorted(set(recomputed))), depth)
        size = 1 + len(set().union(set(), *(self._closure(o) for o in recomputed)))
        if depth > RECOMPUTE_MAX_DEPTH or size > RECOMPUTE_MAX_STATEMENTS:
            return False
        self.local_recipes[(var, id(stmt))] = found
        return True

    def recompute_statements(self, stmt, variables: list[str], covered: set[str]) -> list:
        """The definitions to re-run, in program order, for variables; values still in their
        variables (covered) are not computed again."""
        sites: dict[int, ir.Assign] = {}

        def visit(var, top):
            found = self.local_recipes.get((var, id(stmt))) if top else None
            found = found or self.recipes[var]
            if (not top and var in covered) or id(found[0]) in sites:
                return
            site, operands, _ = found
            sites[id(site)] = site
            for operand in operands:
                visit(operand, False)

        for var in variables:
            visit(var, True)
        return sorted(sites.values(), key=lambda d: self.an.info[id(d)].pos)

    def recompute(self, stmt) -> list:
        """Statements that recompute, for the reverse sweep of stmt, what it would have popped."""
        if id(stmt) not in self.recompute_plan:
            return []
        variables, statements = self.recompute_plan[id(stmt)]
        lines = sorted({d.origin.line for d in statements})
        source = statements[0].origin.short().rsplit(":", 1)[0]
        where = f" ({source}:{lines[0]}" + (f"-{lines[-1]}" if lines[-1] != lines[0] else "") + ")"
        out = [self.em.comment(f"Recomputed rather than taped: {', '.join(variables)}{where}")]
        for d in statements:
            emitted = self.em.primal(d)
            out.extend(emitted if isinstance(emitted, list) else [emitted])
            self.popped_into.update(d.targets)
        return out

    def taped(self, stmt) -> list[tuple[Need, str]]:
        """Needs of this statement that get a tape of their own, with the tape names."""
        self._ensure_plan()
        result = []
        for need in sorted(self.needs(stmt), key=lambda n: (n.var, n.when, n.shape)):
            action = self.plan[(id(stmt), need)][0]
            if action is None or action == "recompute":
                continue
            key = (need.var, id(stmt), need.when)
            if key not in self.tapes:
                base = f"{need.var}_shape_tape" if need.shape else f"{need.var}_tape"
                self.tapes[key] = self.names.fresh(base)
                self.tape_order.append(self.tapes[key])
                if need.shape:
                    self.shape_tapes.add(self.tapes[key])
                else:
                    capacity = self.tape_capacity(stmt)
                    if capacity is not None:
                        tape = self.tapes[key]
                        self.counted[tape] = (self.names.fresh(f"{tape}_len"), capacity)
            result.append((need, self.tapes[key]))
        return result

    def shape_sources(self, stmt) -> dict[str, str]:
        """Variables whose shape, not value, is at hand for this statement: var -> name."""
        self._ensure_plan()
        return {need.var: self.shape_var(self.plan[(id(stmt), need)][2]) for need in self.needs(stmt)
                if need.shape and self.plan[(id(stmt), need)][1] == "shape"}

    def shape_var(self, key: tuple) -> str:
        """The variable holding a taped shape: one per tape, because under Numba it also
        carries the shape's type (its ndim) from the push to the pop (runtime.pop_shape)."""
        if key not in self.shape_vars:
            self.shape_vars[key] = self.names.fresh(f"{key[0]}_shape")
        return self.shape_vars[key]

    def tape_capacity(self, stmt) -> ast.expr | None:
        """How many values a tape pushed at stmt receives at most, where that is known on
        entry to its loops: every enclosing loop is a range loop whose bounds nothing in the
        outermost one assigns. Then the count is the product of their trip counts, evaluated
        at the first push (inside all of them, where the bounds still hold their values on
        entry). None for a tape in a while loop or in a loop with varying bounds: a list."""
        loops = [self.loop_stmt(k) for k in self.an.enclosing_loops(stmt)]
        if any(not isinstance(loop, ir.For) for loop in loops):
            return None
        if not loops:
            return ast.Constant(1)
        assigned = {var for s in ir.walk([loops[0]]) for var in ir.stmt_writes(s)}
        capacity = None
        for loop in loops:
            bounds = (loop.start, loop.stop, loop.step)
            if any(isinstance(b, ir.Name) and b.id in assigned for b in bounds):
                total = self.counting_loop(loops, assigned)
                return None if total is None else name(total)
            trips = self.trip_count(loop)
            capacity = trips if capacity is None else ast.BinOp(capacity, ast.Mult(), trips)
        return capacity

    def counting_loop(self, loops: list, assigned: set) -> str | None:
        """The trip count in all of the innermost of these nested loops, where its bounds (or an
        outer loop's) change from one outer iteration to the next (`range(i + 1, n)`): a loop
        before the outermost one repeats the loops and the integer arithmetic of their bounds,
        and adds up the trips. None where those bounds need more (a branch, a call, a value
        carried between iterations): then the tapes in these loops are lists."""
        innermost = loops[-1]
        if id(innermost) in self.loop_totals:
            return self.loop_totals[id(innermost)]
        outermost = loops[0]
        if any(isinstance(b, ir.Name) and b.id in assigned for b in (outermost.start, outermost.stop, outermost.step)):
            return None  # the outermost loop's own bounds change in it: its range() saw them on entry
        index_in = {}  # id(stmt) -> (level, position) for the top-level statements of each loop body
        for level, loop in enumerate(loops[:-1]):
            for position, s in enumerate(loop.body):
                index_in[id(s)] = (level, position)
            if id(loops[level + 1]) not in index_in:
                return None  # the next loop sits in a branch: not every iteration reaches it
        loop_vars = {loop.var: level for level, loop in enumerate(loops[:-1])}
        chosen: dict[int, ir.Assign] = {}
        # (a name, where it is read: the level of the loop body and the position in it)
        needed = [(b.id, index_in[id(loop)]) for loop in loops[1:] for b in (loop.start, loop.stop, loop.step)
                  if isinstance(b, ir.Name) and b.id in assigned]
        while needed:
            var, (level, position) = needed.pop()
            if var in loop_vars:
                if loop_vars[var] > level:
                    return None
                continue
            if var not in assigned:
                continue
            defs = [d for d in self.an.defs.get(var, []) if d != "param" and id(loops[0]) in self.an.enclosing_loops(d)]
            if len(defs) != 1 or id(defs[0]) not in index_in:
                return None
            d = defs[0]
            d_level, d_position = index_in[id(d)]
            before = position if d_level == level else index_in[id(loops[d_level + 1])][1]
            if not (isinstance(d, ir.Assign) and not d.inplace and not d.unpack) or d_level > level \
                    or d_position >= before:
                return None  # not an assignment, or read before it is made in this iteration
            value = d.value
            if isinstance(value, ir.Call):
                if facts(value.fn).integer is None or value.kwargs:  # not integer arithmetic (Facts.integer)
                    return None
            elif isinstance(value, ir.Subscript):
                base = value.value
                if isinstance(base, ir.Name) and (base.id in self.may_mutate or base.id in self.an.mutated):
                    return None  # (an array that the loops may write into)
            elif not isinstance(value, (ir.Name, ir.Const, ir.Attribute)):
                return None
            if id(d) not in chosen:
                chosen[id(d)] = d
                needed += [(r, (d_level, d_position)) for r in ir.stmt_reads(d)]
        total = self.names.fresh(f"{innermost.var}_total")
        self.loop_totals[id(innermost)] = total
        renames = {loop.var: self.names.fresh(f"{loop.var}_") for loop in loops[:-1]}
        renames |= {d.targets[0]: self.names.fresh(f"{d.targets[0]}_") for d in chosen.values()}

        def nest(level: int) -> list:
            loop = loops[level]
            if level == len(loops) - 1:
                bounds = [self.em.atom(b) for b in (loop.start, loop.stop, loop.step)]
                return [ast.AugAssign(name(total, True), ast.Add(), runtime_call("range_len", *bounds))]
            body = [self.em.primal(s) for s in loop.body if id(s) in chosen] + nest(level + 1)
            return [self.em.for_range(loop.var, [loop.start, loop.stop, loop.step], body)]

        counting = [self.em.comment(f"{total}: the trips of the loop at {innermost.origin.short()} in all "
                                    f"(its tapes' capacity)"),
                    assign(total, ast.Constant(0))] + nest(0)
        counting = [_Rename(renames).visit(c) for c in counting]
        self.counting_loops.setdefault(id(loops[0]), []).extend(counting)
        return total

    def trip_count(self, loop: ir.For) -> ast.expr:
        """The trip count of a loop that runs at least once (it holds a push that ran)."""
        em = self.em
        start, stop, step = loop.start, loop.stop, loop.step
        if isinstance(step, ir.Const) and step.value in (1, -1):
            first, last = (stop, start) if step.value == 1 else (start, stop)
            if isinstance(last, ir.Const) and last.value == 0:
                return em.atom(first)
            return _simplify(ast.BinOp(em.atom(first), ast.Sub(), em.atom(last)))
        return name(self.loop_trips(loop))

    def loop_stmt(self, key: int):
        if not hasattr(self, "_loops"):
            self._loops = {id(s): s for s in ir.walk(self.fn.body) if isinstance(s, (ir.For, ir.While))}
        return self._loops[key]

    def push(self, stmt, need: Need, tape: str) -> list:
        value = name(need.var)
        if need.shape:
            key = (need.var, id(stmt), need.when)
            return [assign(self.shape_var(key), runtime_call("push_shape", name(tape), value))]
        if need.var in self.may_mutate:
            value = runtime_call("copy", value)
        if tape in self.counted:
            count, capacity = self.counted[tape]
            create = assign(tape, runtime_call("new_tape", name(need.var), copy.deepcopy(capacity)))
            return [ast.If(ast.Compare(name(count), [ast.Eq()], [ast.Constant(0)]), [create], []),
                    ast.Assign([ast.Subscript(name(tape), name(count), ast.Store())], value, lineno=0),
                    ast.AugAssign(name(count, True), ast.Add(), ast.Constant(1))]
        return [ast.Expr(ast.Call(ast.Attribute(name(tape), "append", ast.Load()), [value], []))]

    def pops(self, stmt, taped, rename: dict[str, str] | None = None) -> list:
        rename = rename or {}
        out = self.recompute(stmt)
        for need, tape in taped:
            if need.shape:
                shape = self.shape_var((need.var, id(stmt), need.when))
                self.popped_into.add(shape)
                out.append(assign(shape, runtime_call("pop_shape", name(tape), name(shape))))
            else:
                into = rename.get(need.var, need.var) if need.when == "pre" else need.var
                out += self.pop_into(into, tape)
        return out

    def pop_into(self, target: str, tape: str) -> list:
        self.popped_into.add(target)
        if tape in self.counted:
            count = self.counted[tape][0]
            return [ast.AugAssign(name(count, True), ast.Sub(), ast.Constant(1)),
                    assign(target, ast.Subscript(name(tape), name(count), ast.Load()))]
        return [assign(target, ast.Call(ast.Attribute(name(tape), "pop", ast.Load()), [], []))]

    # ---- forward sweep ----------------------------------------------------------

    def forward_block(self, block: list) -> list:
        out: list = []
        last_origin = None
        for stmt in block:
            if isinstance(stmt, ir.Return):
                continue
            mark = len(out)  # where the counting loops of a loop go (found while emitting it)
            if stmt.origin != last_origin:
                out.append(self.em.origin_comment(stmt.origin))
                last_origin = stmt.origin
            work = self.has_work(stmt)
            taped = self.taped(stmt) if work else []
            out += [line for n, t in taped if n.when == "pre" for line in self.push(stmt, n, t)]
            if work and isinstance(stmt, ir.For) and self.loop_trips(stmt):
                out.append(assign(self.loop_trips(stmt), runtime_call(
                    "range_len", self.em.atom(stmt.start), self.em.atom(stmt.stop), self.em.atom(stmt.step))))
            if work and isinstance(stmt, ir.While):
                trips = self.while_trips(stmt)
                out.append(assign(trips, ast.Constant(0)))
                loop = self.em.primal(stmt, body_of=self.forward_block)
                loop.body.append(assign(trips, ast.BinOp(name(trips), ast.Add(), ast.Constant(1))))
                out.append(loop)
            else:
                emitted = self.em.primal(stmt, body_of=self.forward_block)
                out.extend(emitted if isinstance(emitted, list) else [emitted])
                out[mark:mark] = self.counting_loops.pop(id(stmt), [])
            out += [line for n, t in taped if n.when == "post" for line in self.push(stmt, n, t)]
        return out

    def loop_trips(self, stmt: ir.For) -> str | None:
        """A trip-count variable, needed when the step is not a constant +-1."""
        if isinstance(stmt.step, ir.Const) and stmt.step.value in (1, -1):
            return None
        if id(stmt) not in self.trips:
            self.trips[id(stmt)] = self.names.fresh(f"{stmt.var}_trips")
        return self.trips[id(stmt)]

    def while_trips(self, stmt: ir.While) -> str:
        if id(stmt) not in self.trips:
            self.trips[id(stmt)] = self.names.fresh("while_trips")
        return self.trips[id(stmt)]

    def reverse_range_atoms(self, stmt: ir.For) -> list:
        trips = self.loop_trips(stmt)
        if trips is None:
            return [stmt.start, stmt.stop]
        return [stmt.start, stmt.step, ir.Name(trips)]

    # ---- reverse sweep ----------------------------------------------------------

    def reverse_block(self, block: list) -> list:
        out: list = []
        block_id = id(block)
        last_origin = None
        for stmt in reversed(block):
            if not self.has_work(stmt):
                continue
            emitted: list = []
            self.materialize(stmt, block_id, emitted)
            emitted += self.reverse_stmt(stmt)
            if not emitted:
                continue
            if stmt.origin != last_origin:
                out.append(self.em.origin_comment(stmt.origin, "Grad of: "))
                last_origin = stmt.origin
            out += emitted
        return out

    def nested(self, *blocks) -> list:
        """Reverse a nested block; adjoints of outer variables leave it holding arrays,
        so that every path (and every iteration) hands the same state on."""
        before = set(self.pending)
        owned = {id(b) for b in blocks}
        out: list = []
        for block in blocks:
            out += self.reverse_block(block)
        for var in sorted(self.pending - before):
            if self.scope.get(var) not in owned:
                self.ensure_materialized(var, out)
        self.pending = before
        return out

    def materialize(self, stmt, block_id: int, out: list):
        """Adjoints owned by this block start at the first statement that touches them:
        as that statement's contribution (pending), or as zeros before a nested block."""
        touched = set()
        for s in ir.walk([stmt]):
            touched |= set(ir.stmt_reads(s)) | set(ir.stmt_writes(s))
        for var in sorted(touched):
            if (var in self.straight or var in self.materialized or self.scope.get(var) != block_id
                    or not self.an.is_active(var)):
                continue
            self.materialized.add(var)
            self.pending.add(var)
        if isinstance(stmt, (ir.If, ir.For, ir.While)):
            for var in sorted(touched & self.pending):
                self.ensure_materialized(var, out)

    def ensure_materialized(self, var: str, out: list, shape: str | None = None):
        """Zeros for a pending adjoint; shaped by `shape` (a name holding var's shape at this
        point) where the variable itself may hold a later value of another shape."""
        if var in self.pending:
            if shape is not None and shape != var:
                value = runtime_call("zeros_shaped", name(shape), name(var))
            else:
                value = runtime_call("zeros_like", name(var))
            out.append(assign(self.bar(var), value))
            self.pending.discard(var)

    def reverse_stmt(self, stmt) -> list:
        taped = self.taped(stmt)
        if isinstance(stmt, ir.If):
            out = self.pops(stmt, taped)
            body = self.nested(stmt.body)
            orelse = self.nested(stmt.orelse)
            return out + [self.em.if_(stmt.test, stmt.negated, body, orelse)]
        if isinstance(stmt, ir.For):
            out = self.pops(stmt, taped)
            body = self.nested(stmt.body)
            return out + [ast.For(name(stmt.var, True), self.reverse_range(stmt), body or [ast.Pass()], [],
                                  lineno=0)]
        if isinstance(stmt, ir.While):
            out = self.pops(stmt, taped)
            trips = self.while_trips(stmt)
            cond = self.nested(stmt.cond)
            body = self.nested(stmt.body, stmt.cond)
            counter = self.names.fresh("_")
            return out + cond + [ast.For(name(counter, True), ast.Call(name("range"), [name(trips)], []),
                                         body or [ast.Pass()], [], lineno=0)]
        if isinstance(stmt, ir.SetItem):
            return self.reverse_setitem(stmt, taped)
        return self.reverse_assign(stmt, taped)

    def reverse_range(self, stmt: ir.For) -> ast.expr:
        em = self.em
        start, stop, step = stmt.start, stmt.stop, stmt.step
        trips = self.loop_trips(stmt)
        if trips is None and step.value == 1:
            first = _simplify(ast.BinOp(em.atom(stop), ast.Sub(), ast.Constant(1)))
            last = _simplify(ast.BinOp(em.atom(start), ast.Sub(), ast.Constant(1)))
            return ast.Call(name("range"), [first, last, em.const(-1)], [])
        if trips is None:
            first = _simplify(ast.BinOp(em.atom(stop), ast.Add(), ast.Constant(1)))
            last = _simplify(ast.BinOp(em.atom(start), ast.Add(), ast.Constant(1)))
            return ast.Call(name("range"), [first, last], [])
        first = ast.BinOp(em.atom(start), ast.Add(),
                          ast.BinOp(ast.BinOp(name(trips), ast.Sub(), ast.Constant(1)), ast.Mult(), em.atom(step)))
        last = ast.BinOp(em.atom(start), ast.Sub(), em.atom(step))
        return ast.Call(name("range"), [first, last, _simplify(ast.UnaryOp(ast.USub(), em.atom(step)))], [])

    # ---- adjoint bookkeeping ----------------------------------------------------

    def accumulate(self, var: str, contribution: ast.expr, out: list):
        if not self.an.is_active(var):
            return
        bar = self.bar(var)
        if var in self.straight and var not in self.live:
            if self._may_alias_owned(contribution):
                contribution = runtime_call("copy", contribution)
            out.append(assign(bar, contribution))
            self.live.add(var)
        elif var in self.pending:
            fresh = isinstance(contribution, (ast.BinOp, ast.UnaryOp))
            if self._may_alias_owned(contribution) or (var in self.an.subscripted and not fresh):
                contribution = runtime_call("copy", contribution)
            out.append(assign(bar, contribution))
            self.pending.discard(var)
        elif self.an.is_container(var):
            out.append(assign(bar, runtime_call("tree_add", name(bar), contribution)))
        elif var in self.an.subscripted:
            out.append(ast.AugAssign(name(bar, True), ast.Add(), contribution))
        elif isinstance(contribution, ast.UnaryOp) and isinstance(contribution.op, ast.USub):
            out.append(assign(bar, ast.BinOp(name(bar), ast.Sub(), contribution.operand)))
        else:
            out.append(assign(bar, ast.BinOp(name(bar), ast.Add(), contribution)))

    def _may_alias_owned(self, expr: ast.expr) -> bool:
        """Could expr share memory with an adjoint that is later updated in place?"""
        owned = {self.bars[v] for v in self.an.subscripted if v in self.bars}
        if isinstance(expr, ast.Name):
            return expr.id in owned
        if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant)):
            return False
        return any(isinstance(n, ast.Name) and n.id in owned for n in ast.walk(expr))

    def adjoint_of(self, var: str) -> ast.expr | None:
        """The current adjoint of var, or None where it is known to be zero."""
        if var in self.straight and var not in self.live:
            return None
        if not self.an.is_active(var) or var in self.pending:
            return None
        return name(self.bar(var))

    def kill(self, var: str, self_contribution: ast.expr | None, out: list):
        """var was assigned here: before this point its adjoint starts again from zero."""
        if var in self.straight:
            self.live.discard(var)
            return
        if not self.an.is_active(var) or var in self.pending:
            return
        bar = self.bar(var)
        if self_contribution is not None:
            if var in self.an.subscripted and self._may_alias_owned(self_contribution):
                self_contribution = runtime_call("copy", self_contribution)
            out.append(assign(bar, self_contribution))
        elif self.needs_reset(var):
            self.pending.add(var)  # zero from here on; assigned where it next receives a value

    # ---- statements -------------------------------------------------------------

    def operand_renames(self, stmt, taped) -> dict[str, str]:
        """y = f(y): the rule may read the new y (in place, or popped) and the old one (popped).
        The old one is popped into y_in, so that it does not overwrite the new one."""
        if not isinstance(stmt, ir.Assign):
            return {}
        post = {n.var for n in self.needs(stmt) if n.when == "post"}
        rename = {}
        for need, _ in taped:
            if need.when == "pre" and not need.shape and need.var in stmt.targets and need.var in post:
                rename[need.var] = self.names.fresh(f"{need.var}_in")
        return rename

    def reverse_assign(self, stmt: ir.Assign, taped) -> list:
        out: list = []
        value = stmt.value
        target = stmt.targets[0]
        rename = self.operand_renames(stmt, taped)
        out += self.pops(stmt, taped, rename)
        if stmt.unpack:
            return out + self.reverse_unpack(stmt)
        y_bar = self.adjoint_of(target)
        if y_bar is None:
            self.kill(target, None, out)
            return out
        contributions: list[tuple[str, ast.expr]] = []
        em = self.em
        if isinstance(value, ir.Name):
            contributions = [(value.id, y_bar)]
        elif isinstance(value, ir.Const):
            contributions = []
        elif isinstance(value, ir.Build):
            for k, atom in enumerate(value.elts):
                if isinstance(atom, ir.Name):
                    key = em.const(value.keys[k]) if value.kind == "dict" else ast.Constant(k)
                    contributions.append((atom.id, ast.Subscript(y_bar, key, ast.Load())))
        elif isinstance(value, ir.Subscript):
            return out + self.reverse_subscript(stmt, y_bar)
        elif isinstance(value, ir.Attribute):
            base = value.value.id
            if self.an.is_active(base):
                self.ensure_materialized(base, out)
                bar = self.bar(base)
                out.append(assign(bar, runtime_call("add_attr", name(bar), ast.Constant(value.attr), y_bar)))
            self.kill(target, None, out)
            return out
        elif isinstance(value, ir.Call) and is_user_function(value.fn):
            # A vjp of the callee that returns the adjoints this call needs, and only those.
            needed = [k for k, a in enumerate(value.args) if self.an.atom_active(a)]
            callee = self.variant(value.fn, tuple(needed))
            grads = self.names.fresh(f"{em.function_names[id(value.fn)]}_bars")
            args = [name(rename.get(a.id, a.id)) if isinstance(a, ir.Name) else em.atom(a) for a in value.args]
            out.append(assign(grads, ast.Subscript(ast.Call(name(callee), args + [y_bar], []),
                                                   ast.Constant(1), ast.Load())))
            for j, k in enumerate(needed):
                contributions.append((value.args[k].id, ast.Subscript(name(grads), ast.Constant(j), ast.Load())))
        else:
            local_stmts, contributions, _ = self.instantiate(stmt, rename, self.shape_sources(stmt))
            out += local_stmts
        own = [c for v, c in contributions if v == target]
        for var, contribution in contributions:
            if var != target:
                self.accumulate(var, contribution, out)
        total = None
        for c in own:
            total = c if total is None else ast.BinOp(total, ast.Add(), c)
        self.kill(target, total, out)
        return out

    def reverse_unpack(self, stmt: ir.Assign) -> list:
        out: list = []
        source = stmt.value.id
        parts = []
        any_live = False
        for t in stmt.targets:
            adj = self.adjoint_of(t)
            if adj is None:
                parts.append(runtime_call("zeros_like", name(t)))
            else:
                any_live = True
                parts.append(adj)
        if any_live:
            self.accumulate(source, ast.Tuple(parts, ast.Load()), out)
        for t in stmt.targets:
            self.kill(t, None, out)
        return out

    def reverse_subscript(self, stmt: ir.Assign, y_bar: ast.expr) -> list:
        out: list = []
        value = stmt.value
        target = stmt.targets[0]
        base = value.value.id
        if self.an.is_active(base):
            self.ensure_materialized(base, out, self.shape_sources(stmt).get(base, base))
            bar = self.bar(base)
            index = self.em.index(value.index)
            consts = all(isinstance(i, ir.Const) for i in value.index.items)
            argument = self.em.index(value.index, as_value=True)
            if not consts and self.classes is not None and (self.classes.pre(stmt, base) or ("",))[0] == "tup":
                what = "a tuple or list" if base.startswith("_") else f"{base}, a tuple or list,"
                raise S2SError(f"under s2s.jit, {what} is read at an index known only at run time (a loop "
                               "over it), and Numba cannot add an adjoint into a tuple there", stmt.origin,
                               "differentiate it without s2s.jit (the python backend takes it), or stack the "
                               "values into one array")
            if self.an.is_container(base) or (consts and (base in self.fn.params or self._unpacked(base))):
                out.append(assign(bar, runtime_call("add_at", name(bar), argument, y_bar)))
            elif self._basic(value.index):
                out.append(ast.AugAssign(ast.Subscript(name(bar), index, ast.Store()), ast.Add(), y_bar))
            else:
                out.append(ast.Expr(runtime_call("index_add", name(bar), argument, y_bar)))
        self.kill(target, None, out)
        return out

    def _unpacked(self, var: str) -> bool:
        defs = [d for d in self.an.defs.get(var, []) if d != "param"]
        return any(isinstance(d, ir.Assign) and isinstance(d.value, ir.Call) and is_user_function(d.value.fn)
                   for d in defs)

    def _basic(self, index: ir.Index) -> bool:
        """Only ints and slices: an in-place `+=` never meets a repeated element."""
        for item in index.items:
            if isinstance(item, ir.Name) and item.id not in self.an.int_like:
                return False
        return True

    def reverse_setitem(self, stmt: ir.SetItem, taped) -> list:
        out = self.pops(stmt, taped)
        if stmt.base in self.pending:
            return out  # the adjoint of the array is zero here: nothing flows to the value
        shapes = self.shape_sources(stmt)
        bar = self.bar(stmt.base)
        index = self.em.index(stmt.index)
        basic = self._basic(stmt.index)
        if self.an.atom_active(stmt.value):
            if basic:
                picked = ast.Subscript(name(bar), index, ast.Load())
            else:
                picked = runtime_call("take", name(bar), self.em.index(stmt.index, as_value=True))
            if self.exact_setitem(stmt):
                contribution = picked
            else:
                contribution = runtime_call("unbroadcast", picked, name(shapes.get(stmt.value.id, stmt.value.id)))
            if stmt.op == "-":
                contribution = ast.UnaryOp(ast.USub(), contribution)
            self.accumulate(stmt.value.id, contribution, out)
        if stmt.op is None:
            if basic:
                out.append(ast.Assign([ast.Subscript(name(bar), index, ast.Store())], ast.Constant(0.0), lineno=0))
            else:
                out.append(ast.Expr(runtime_call("clear", name(bar), self.em.index(stmt.index, as_value=True))))
        return out

    # ---- the function -----------------------------------------------------------

    def build(self) -> ast.FunctionDef:
        fn = self.fn
        out_bar = self.names.fresh("out_bar")
        forward = self.forward_block(fn.body)
        result = fn.result
        reverse: list = []
        if isinstance(result, ir.Name) and self.an.is_active(result.id):
            var = result.id
            seed = name(out_bar)
            if self.has_aux:
                # fn returns (value, aux): only the value is differentiated.
                aux = ast.Subscript(name(var), ast.Constant(1), ast.Load())
                seed = ast.Tuple([seed, runtime_call("zeros_like", aux)], ast.Load())
            elif var in self.an.subscripted:
                seed = runtime_call("copy", seed)
            reverse.append(self.em.comment("Reverse sweep: adjoints flow back from the result"))
            reverse.append(assign(self.bar(var), seed))
            if var in self.straight:
                self.live.add(var)
            else:
                self.materialized.add(var)
            reverse += self.reverse_block(fn.body)
        grads = []
        for p in self.active_params:
            adj = self.adjoint_of(p) if (p in self.straight and p in self.live) or (
                p not in self.straight and p in self.materialized and p not in self.pending) else None
            grads.append(adj if adj is not None else runtime_call("zeros_like", name(p)))
        output = ast.Constant(None) if self.value_skipped else self.em.atom(result)
        body = []
        if self.tape_order:
            body.append(self.em.comment("Tapes: values the reverse sweep needs after they are overwritten"))
            if self.counted:
                example = next(t for t in self.tape_order if t in self.counted)
                body.append(self.em.comment("In range loops a tape is made at its first push, with room for one "
                                            "value per iteration"))
                body.append(self.em.comment(f"(the loops' trip counts, known on entry); {self.counted[example][0]} "
                                            f"counts the values on {example}."))
            for t in self.tape_order:
                if t in self.counted:
                    body.append(assign(self.counted[t][0], ast.Constant(0)))
                else:
                    body.append(assign(t, runtime_call("shape_tape") if t in self.shape_tapes
                                       else ast.List([], ast.Load())))
        body += forward
        if isinstance(result, ir.Name) and result.id in self.popped_into and not self.value_skipped:
            saved = self.names.fresh("out")
            body.append(assign(saved, name(result.id)))
            output = name(saved)
        body += reverse
        body.append(ast.Return(ast.Tuple([output, ast.Tuple(grads, ast.Load())], ast.Load())))
        args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in fn.params] + [ast.arg(out_bar)],
                             kwonlyargs=[], kw_defaults=[], defaults=[])
        adjoints = f"adjoints of {', '.join(self.active_params) or 'nothing'}"
        doc = ast.Expr(ast.Constant(
            f"Reverse mode of {fn.name} ({fn.origin.short()}): returns (None, {adjoints}); the value, a "
            "number, is left out, as grad does not return it." if self.value_skipped else
            f"Reverse mode of {fn.name} ({fn.origin.short()}): returns (value, {adjoints})."))
        return ast.FunctionDef(self.function_name, args, [doc] + body, [], None, lineno=0)


# ---- helpers for rule instances ------------------------------------------------------


class _Rename(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def visit_Name(self, node):
        if node.id in self.renames:
            return ast.Name(self.renames[node.id], node.ctx)
        return node


def _drop_defaults(node: ast.Call, found) -> ast.Call:
    """Leave out trailing arguments equal to the called helper's defaults (readability)."""
    func = node.func
    target = None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "runtime":
        target = getattr(runtime, func.attr, None)
    if target is not None:
        params = list(inspect.signature(target).parameters.values())
        while node.args and len(node.args) <= len(params):
            default = params[len(node.args) - 1].default
            last = node.args[-1]
            if default is inspect.Parameter.empty or not isinstance(last, ast.Constant) or last.value != default \
                    or type(last.value) is not type(default):
                break
            node.args.pop()
    if found.signature is not None:
        defaults = {k: p.default for k, p in found.signature.parameters.items()
                    if p.default is not inspect.Parameter.empty}
        node.keywords = [kw for kw in node.keywords
                         if not (kw.arg in defaults and isinstance(kw.value, ast.Constant)
                                 and kw.value.value == defaults[kw.arg]
                                 and type(kw.value.value) is type(defaults[kw.arg]))]
        # np.transpose(x, None) and friends: a trailing positional None is the default.
        if isinstance(func, ast.Attribute) and not target:
            while node.args and len(node.args) > 1 and isinstance(node.args[-1], ast.Constant) \
                    and node.args[-1].value is None:
                node.args.pop()
    return node


def _number(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def _simplify(node: ast.expr) -> ast.expr:
    """Fold constants and drop multiplications by one, so rules read like hand-written code."""
    for child_name, child in ast.iter_fields(node):
        if isinstance(child, ast.expr):
            setattr(node, child_name, _simplify(child))
        elif isinstance(child, list):
            setattr(node, child_name, [_simplify(c) if isinstance(c, ast.expr) else c for c in child])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        if isinstance(node.operand, ast.UnaryOp) and isinstance(node.operand.op, ast.USub):
            return node.operand.operand
        if _number(node.operand):
            return ast.Constant(-node.operand.value) if node.operand.value >= 0 else ast.Constant(-node.operand.value)
    if isinstance(node, ast.BinOp):
        left, right, op = node.left, node.right, node.op
        if _number(left) and _number(right) and isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            value = {ast.Add: left.value + right.value, ast.Sub: left.value - right.value,
                     ast.Mult: left.value * right.value}[type(op)]
            return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))
        if isinstance(op, ast.Pow) and _number(right) and right.value == 1:
            return left
        if isinstance(op, ast.Mult) and _number(right) and right.value == 1 and type(right.value) is int:
            return left
        if isinstance(op, ast.Mult) and _number(left) and left.value == 1 and type(left.value) is int:
            return right
        if isinstance(op, (ast.Add, ast.Sub)) and _number(right) and right.value == 0:
            return left
        if isinstance(op, ast.Sub) and isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub):
            return ast.BinOp(left, ast.Add(), right.operand)
        if isinstance(op, ast.Add) and isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub):
            return ast.BinOp(left, ast.Sub(), right.operand)
    return node
