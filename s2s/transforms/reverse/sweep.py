"""Reverse mode, the reverse sweep of one function: its statements visited backwards, each
popping (or computing again) what its plan says it reads (plan.py) from the tapes its forward
sweep pushed (forward_sweep.py), and applying its rule from templates/: adjoints flow from the
result to the arguments. The result, a ReverseSweep, holds the statements and the adjoints of
the arguments; core.vjp_function puts the function together."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ...ir import nodes as ir
from ...codegen.emit import assign, name, runtime_call
from ...errors import S2SError
from ...frontend.source import is_user_function, returns_tuple_displays
from ..rule_helpers import simplify
from .instances import _returns_tuple
from .planning import Need

_SPLITS = (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit)


@dataclass
class ReverseSweep:
    """The reverse sweep of one reverse mode (the reverse_sweep pass's result for one function)."""

    statements: list[ast.stmt]  # from the seed of the result's adjoint back to the first statement's
    adjoints: list[ast.expr]  # of the active parameters, in order (zeros where none flowed)
    popped: set[str]  # the variables it pops (or recomputes) values back into
    loops: dict[int, ast.For]  # id(range loop) -> its reverse loop (checkpointing.py may write it again)


class ReverseSweeper:
    """Writes the reverse sweep of a plan (plan.ReversePlan), popping what its forward sweep
    (forward_sweep.ForwardSweep) pushed. variants(fn, positions) names the reverse mode of a
    callee that a call asks for (transforms/variants.py)."""

    def __init__(self, plan, forward, variants):
        self.plan = plan
        self.tapes = forward.tapes
        self.variants = variants
        self.em = plan.em
        self.an = plan.an
        self.names = plan.names
        self.live: set[str] = set()  # straight-line adjoints that hold a value
        self.materialized: set[str] = set()
        self.pending: set[str] = set()  # adjoints known to be zero, not yet assigned
        # pending adjoint -> the name of a taped shape of its variable's value there (kill)
        self.pending_shape: dict[str, str] = {}
        # var -> (its shape tape, a shape popped from it): zeros of the shape under the top (top_shape)
        self.pending_earlier_shape: dict[str, tuple[str, str]] = {}
        self.popped_into: set[str] = set()
        self.popped_early: set[tuple] = set()  # (id(stmt), need) popped before stmt's other pops
        self.reverse_loops: dict[int, ast.For] = {}

    def run(self) -> ReverseSweep:
        plan = self.plan
        fn = plan.fn
        result = fn.result
        reverse: list = []
        if plan.differentiated:
            var = result.id
            seed = name(plan.out_bar)
            if plan.has_aux:
                # fn returns (value, aux): only the value is differentiated.
                aux = ast.Subscript(name(var), ast.Constant(1), ast.Load())
                seed = ast.Tuple([seed, runtime_call("zeros_like", aux)], ast.Load())
            elif var in self.an.subscripted:
                seed = runtime_call("copy", seed)
            reverse.append(self.em.comment("Reverse sweep: adjoints flow back from the result"))
            reverse.append(assign(plan.bar(var), seed))
            if var in plan.straight:
                self.live.add(var)
            else:
                self.materialized.add(var)
            reverse += self.reverse_block(fn.body)
        adjoints = []
        for p in plan.active_params:
            adj = self.adjoint_of(p) if (p in plan.straight and p in self.live) or (
                p not in plan.straight and p in self.materialized and p not in self.pending) else None
            adjoints.append(adj if adj is not None else runtime_call("zeros_like", name(p)))
        return ReverseSweep(reverse, adjoints, self.popped_into, self.reverse_loops)

    def reverse_block(self, block: list) -> list:
        out: list = []
        block_id = id(block)
        last_origin = None
        for stmt in reversed(block):
            if not self.plan.has_work(stmt):
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
            if self.plan.scope.get(var) not in owned:
                self.ensure_materialized(var, out)
        self.pending = before
        self.pending_shape = {v: shape for v, shape in self.pending_shape.items() if v in before}
        self.pending_earlier_shape = {v: s for v, s in self.pending_earlier_shape.items() if v in before}
        return out

    def materialize(self, stmt, block_id: int, out: list):
        """Adjoints owned by this block start at the first statement that touches them:
        as that statement's contribution (pending), or as zeros before a nested block."""
        touched = set()
        for s in ir.walk([stmt]):
            touched |= set(ir.stmt_reads(s)) | set(ir.stmt_writes(s))
        for var in sorted(touched):
            if (var in self.plan.straight or var in self.materialized or self.plan.scope.get(var) != block_id
                    or not self.an.is_active(var)):
                continue
            self.materialized.add(var)
            self.pending.add(var)
            self.pending_shape.pop(var, None)
            self.pending_earlier_shape.pop(var, None)
        if isinstance(stmt, (ir.If, ir.For, ir.While)):
            # (a list made anew in a loop takes the length it had after stmt: its shape is taped
            # there, list_adjoints_started_at, and popped here, before stmt's other pops)
            started = set(self.plan.list_adjoints_started_at(stmt))
            shapes = {need.var: (need, tape) for need, tape in self.tapes.at[id(stmt)]
                      if need.shape and need.when == "post" and need.var in started}
            bound = self.plan.bound_after[id(stmt)]
            for var in sorted(touched & self.pending):
                if var in shapes:
                    need, tape = shapes[var]
                    shape = self.tapes.shape_vars[(var, id(stmt), "post")]
                    self.popped_into.add(shape)
                    out.append(assign(shape, runtime_call("pop_shape", name(tape), name(shape))))
                    self.popped_early.add((id(stmt), need))
                    self.ensure_materialized(var, out, shape, bound)
                else:
                    self.ensure_materialized(var, out, bound=bound)

    def ensure_materialized(self, var: str, out: list, shape: str | None = None, bound: frozenset | None = None):
        """Zeros for a pending adjoint; shaped by `shape` (a name holding var's shape at this
        point) where the variable itself may hold a later value of another shape. bound: the
        names bound on every path here; where var is not among them, the zeros are made only
        if the forward sweep bound var (plan.bound_flags)."""
        if var in self.pending:
            if var in self.plan.appended and (shape is None or shape == var) and self.plan._made_in_a_loop(var):
                # Its zeros take the length of the list var refers to here, which the reverse
                # sweep knows only where it reads var's items (a later pass's `var = []` rebinds
                # it); a taped shape (of a subscript's list) is the one it had there
                raise S2SError(f"reverse mode (grad, jacrev, vjp) of {var}.append(...), where {var} is made anew in "
                               f"a loop and its adjoint starts at zero before a loop or branch, is not supported",
                               self.an.defs[var][0].origin, f"make {var} before the outer loop, or use what the "
                               "list holds right after the loop that fills it")
            if shape is None or shape == var:
                shape = self.pending_shape.get(var, shape)
            if (shape is None or shape == var) and var in self.pending_earlier_shape:
                tape, popped = self.pending_earlier_shape[var]
                value = runtime_call("zeros_shaped", runtime_call("top_shape", name(tape), name(popped)), name(var))
            elif shape is not None and shape != var:
                value = runtime_call("zeros_shaped", name(shape), name(var))
            elif self.split_pieces(var):
                value = runtime_call("split_zeros", name(var))
            else:
                value = runtime_call("zeros_like", name(var))
            flag = self.plan.bound_flags.get(var)
            if flag is not None and bound is not None and var not in bound:
                out.append(ast.If(name(flag), [assign(self.plan.bar(var), value)], []))
            else:
                out.append(assign(self.plan.bar(var), value))
            self.pending.discard(var)
            self.pending_shape.pop(var, None)
            self.pending_earlier_shape.pop(var, None)

    def split_pieces(self, var: str) -> bool:
        """Does var hold np.split's list of pieces (array_split's, hsplit's...) wherever it is
        bound? Its adjoint is then a list of arrays of the pieces' shapes (runtime.split_zeros),
        not the array with a row per item that another list of arrays has under Numba: pieces
        may differ in shape."""
        defs = self.an.defs.get(var, [])
        return bool(defs) and all(isinstance(d, ir.Assign) and d.targets == (var,) and isinstance(d.value, ir.Call)
                                  and d.value.fn in _SPLITS for d in defs)

    def reverse_stmt(self, stmt) -> list:
        taped = self.tapes.at[id(stmt)]
        if isinstance(stmt, ir.If):
            out = self.pops(stmt, taped)
            body = self.nested(stmt.body)
            orelse = self.nested(stmt.orelse)
            return out + [self.em.if_(stmt.test, stmt.negated, body, orelse)]
        if isinstance(stmt, ir.For):
            out = self.pops(stmt, taped)
            body = self.nested(stmt.body)
            loop = ast.For(name(stmt.var, True), self.reverse_range(stmt), body or [ast.Pass()], [], lineno=0)
            self.reverse_loops[id(stmt)] = loop
            return out + [loop]
        if isinstance(stmt, ir.While):
            out = self.pops(stmt, taped)
            trips = self.plan.while_trips(stmt)
            cond = self.nested(stmt.cond)
            body = self.nested(stmt.body, stmt.cond)
            counter = self.names.fresh("_")
            return out + cond + [ast.For(name(counter, True), ast.Call(name("range"), [name(trips)], []),
                                         body or [ast.Pass()], [], lineno=0)]
        if isinstance(stmt, ir.SetItem):
            return self.reverse_setitem(stmt, taped)
        if isinstance(stmt, ir.Push):
            return self.reverse_push(stmt, taped)
        return self.reverse_assign(stmt, taped)

    def reverse_push(self, stmt: ir.Push, taped) -> list:
        """t.append(v): t loses its last item again, so that what the reverse sweep reads of t
        (t[-1], len(t)) is what the forward sweep read there; the last item of t's adjoint
        (which has t's length) is v's."""
        out: list = self.pops(stmt, taped)  # (t itself, where a later `t = []` rebinds it)
        out += [ast.Expr(ast.Call(ast.Attribute(name(stmt.tape), "pop", ast.Load()), [], []))]
        self.pending_shape.pop(stmt.tape, None)  # (the list's own length is the one before the append again)
        self.pending_earlier_shape.pop(stmt.tape, None)
        bar = self.adjoint_of(stmt.tape)
        if bar is None:
            return out
        popped = runtime_call("pop_adjoint", bar)
        if isinstance(stmt.value, ir.Name) and self.an.is_active(stmt.value.id):
            item = self.names.fresh(f"{stmt.tape}_item_bar")
            out.append(ast.Assign([ast.Tuple([name(item, True), name(bar.id, True)], ast.Store())], popped, lineno=0))
            self.accumulate(stmt.value.id, name(item), out)
        else:
            out.append(assign(bar.id, ast.Subscript(popped, ast.Constant(1), ast.Load())))
        return out

    def reverse_range(self, stmt: ir.For) -> ast.expr:
        em = self.em
        start, stop, step = stmt.start, stmt.stop, stmt.step
        trips = self.plan.loop_trips(stmt)
        if trips is None and step.value == 1:
            first = simplify(ast.BinOp(em.atom(stop), ast.Sub(), ast.Constant(1)))
            last = simplify(ast.BinOp(em.atom(start), ast.Sub(), ast.Constant(1)))
            return ast.Call(name("range"), [first, last, em.const(-1)], [])
        if trips is None:
            first = simplify(ast.BinOp(em.atom(stop), ast.Add(), ast.Constant(1)))
            last = simplify(ast.BinOp(em.atom(start), ast.Add(), ast.Constant(1)))
            return ast.Call(name("range"), [first, last], [])
        first = ast.BinOp(em.atom(start), ast.Add(),
                          ast.BinOp(ast.BinOp(name(trips), ast.Sub(), ast.Constant(1)), ast.Mult(), em.atom(step)))
        last = ast.BinOp(em.atom(start), ast.Sub(), em.atom(step))
        return ast.Call(name("range"), [first, last, simplify(ast.UnaryOp(ast.USub(), em.atom(step)))], [])

    # ---- adjoint bookkeeping ----------------------------------------------------

    def accumulate(self, var: str, contribution: ast.expr, out: list):
        if not self.an.is_active(var):
            return
        bar = self.plan.bar(var)
        if var in self.plan.straight and var not in self.live:
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
            self.pending_shape.pop(var, None)
            self.pending_earlier_shape.pop(var, None)
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
        owned = {self.plan.bars[v] for v in self.an.subscripted if v in self.plan.bars}
        if isinstance(expr, ast.Name):
            return expr.id in owned
        if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant)):
            return False
        return any(isinstance(n, ast.Name) and n.id in owned for n in ast.walk(expr))

    def adjoint_of(self, var: str) -> ast.expr | None:
        """The current adjoint of var, or None where it is known to be zero."""
        if var in self.plan.straight and var not in self.live:
            return None
        if not self.an.is_active(var) or var in self.pending:
            return None
        return name(self.plan.bar(var))

    def kill(self, var: str, self_contribution: ast.expr | None, out: list, at=None):
        """var was assigned here (by statement `at`): before this point its adjoint starts again
        from zero, with the shape var had before `at` where a shape tape holds it (var itself
        may hold a later value of another shape where the zeros are made: instances.
        rebound_zeros_shaped)."""
        if var in self.plan.straight:
            self.live.discard(var)
            return
        if not self.an.is_active(var):
            return
        if var in self.pending:
            self._note_pending_shape(var, at)  # (zero after `at` too: before it, of the earlier value)
            return
        bar = self.plan.bar(var)
        if self_contribution is not None:
            if var in self.an.subscripted and self._may_alias_owned(self_contribution):
                self_contribution = runtime_call("copy", self_contribution)
            out.append(assign(bar, self_contribution))
        elif self.plan.needs_reset(var):
            self.pending.add(var)  # zero from here on; assigned where it next receives a value
            self._note_pending_shape(var, at)

    def _note_pending_shape(self, var: str, at) -> None:
        """Where var's adjoint is zero from `at` back, its zeros take the shape var had before
        `at`: the taped one, or var's own where none is taped (no loop or branch ahead of `at`
        makes zeros for it, instances.rebound_zeros_shaped)."""
        self.pending_shape.pop(var, None)
        self.pending_earlier_shape.pop(var, None)
        for when in ("pre", "post"):
            decision = self.plan.decisions.get((id(at), Need(var, when, shape=True))) if at is not None else None
            if decision is None or decision[1] != "shape":
                continue
            if when == "pre":
                self.pending_shape[var] = self.tapes.shape_vars[decision[2]]
            else:  # (taped after each pass's binding: the one under this pass's, runtime.top_shape)
                tape = next(t for need, t in self.tapes.at[id(at)] if need == Need(var, "post", shape=True))
                self.pending_earlier_shape[var] = (tape, self.tapes.shape_vars[decision[2]])

    # ---- statements -------------------------------------------------------------

    def operand_renames(self, stmt, taped) -> dict[str, str]:
        """y = f(y): the rule may read the new y (in place, or popped) and the old one (popped).
        The old one is popped into y_in, so that it does not overwrite the new one."""
        if not isinstance(stmt, ir.Assign):
            return {}
        post = {n.var for n in self.plan.needs(stmt) if n.when == "post"}
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
            self.kill(target, None, out, stmt)
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
                bar = self.plan.bar(base)
                out.append(assign(bar, runtime_call("add_attr", name(bar), ast.Constant(value.attr), y_bar)))
            self.kill(target, None, out, stmt)
            return out
        elif isinstance(value, ir.Call) and is_user_function(value.fn):
            # A vjp of the callee that returns the adjoints this call needs, and only those.
            needed = [k for k, a in enumerate(value.args) if self.an.atom_active(a)]
            callee = self.variants(value.fn, tuple(needed))
            grads = self.names.fresh(f"{em.function_names[id(value.fn)]}_bars")
            args = [name(rename.get(a.id, a.id)) if isinstance(a, ir.Name) else em.atom(a) for a in value.args]
            out.append(assign(grads, ast.Subscript(ast.Call(name(callee), args + [y_bar], []),
                                                   ast.Constant(1), ast.Load())))
            for j, k in enumerate(needed):
                contributions.append((value.args[k].id, ast.Subscript(name(grads), ast.Constant(j), ast.Load())))
        else:
            local_stmts, contributions, _ = self.plan.instantiate(stmt, rename, self.shape_sources(stmt))
            out += local_stmts
        own = [c for v, c in contributions if v == target]
        for var, contribution in contributions:
            if var != target:
                self.accumulate(var, contribution, out)
        total = None
        for c in own:
            total = c if total is None else ast.BinOp(total, ast.Add(), c)
        self.kill(target, total, out, stmt)
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
            adjoint = ast.Tuple(parts, ast.Load())
            if self._may_be_array(stmt, source):
                # a, b, c = x[:3]: the adjoint of an array is an array (NumPy adds a tuple into an
                # array, Numba does not). The helper reads source's type only, never its value.
                adjoint = runtime_call("unpack_bar", adjoint, name(source))
            self.accumulate(source, adjoint, out)
        for t in stmt.targets:
            self.kill(t, None, out, stmt)
        return out

    def _may_be_array(self, stmt: ir.Assign, source: str) -> bool:
        """May the value that `stmt` unpacks be an array? Not where s2s.jit's facts prove it a
        tuple, nor where it is only ever a tuple or list display or the result of a user function
        whose returns are all tuple displays (a parameter may be either: `w, b = params`,
        `r, s = X`; so may another function's result: `w, x, y, z = quat(q)`)."""
        if self.plan.classes is not None:
            known = self.plan.classes.pre(stmt, source)
            if known is not None:
                return known[0] != "tup"
        defs = [d for d in self.an.defs.get(source, []) if d != "param"]
        return not defs or not all(isinstance(d, ir.Assign) and not d.unpack and (
            isinstance(d.value, ir.Build) or isinstance(d.value, ir.Call) and returns_tuple_displays(d.value.fn))
            for d in defs)

    def reverse_subscript(self, stmt: ir.Assign, y_bar: ast.expr) -> list:
        out: list = []
        value = stmt.value
        target = stmt.targets[0]
        base = value.value.id
        if self.an.is_active(base):
            self.ensure_materialized(base, out, self.shape_sources(stmt).get(base, base))
            bar = self.plan.bar(base)
            index = self.em.index(value.index)
            consts = all(isinstance(i, ir.Const) for i in value.index.items)
            argument = self.em.index(value.index, as_value=True)
            classes = self.plan.classes
            kind = (classes.pre(stmt, base) or ("",))[0] if classes is not None else None
            known_tuple = kind == "tup"
            # Under s2s.jit a value not proved an array may be a tuple (a list argument becomes
            # one, and so do its items), which `+=` cannot write into: runtime.add_at makes the
            # tuple anew, at an index known only at run time too where its items have one type
            # (`for W, b in layers`, `layers[i][0]`)
            maybe_tuple = kind is not None and kind != "arr"
            items = self._constant_slice_of_tuple(stmt, base) if known_tuple else None
            if items is not None:
                # A constant slice of a tuple (`l[1:]`, of a list argument under s2s.jit): each
                # item's adjoint goes to its own slot, at an index Numba knows when it compiles
                # (the tuple's items may differ in type, which an index known only at run time cannot)
                for k, j in enumerate(items):
                    item_bar = ast.Subscript(y_bar, ast.Constant(k), ast.Load())
                    out.append(assign(bar, runtime_call("add_at", name(bar), ast.Constant(j), item_bar)))
            elif self.an.is_container(base) or maybe_tuple or (
                    consts and (known_tuple or self._parameter_or_copy(base) or self._unpacked(base)
                                or self._item_of_container(base) or self._item_of_unpacked(base))):
                out.append(assign(bar, runtime_call("add_at", name(bar), argument, y_bar)))
            elif self._basic(value.index):
                out.append(ast.AugAssign(ast.Subscript(name(bar), index, ast.Store()), ast.Add(), y_bar))
            else:
                out.append(ast.Expr(runtime_call("index_add", name(bar), argument, y_bar)))
        self.kill(target, None, out, stmt)
        return out

    def _constant_slice_of_tuple(self, stmt: ir.Assign, base: str) -> range | None:
        """The slots of a tuple of known length that a slice with constant bounds picks, or None."""
        info = self.plan.classes.pre(stmt, base)
        items = stmt.value.index.items
        if len(items) != 1 or not isinstance(items[0], ir.Slice) or not isinstance(info[1], tuple):
            return None
        bounds = [items[0].lower, items[0].upper, items[0].step]
        if not all(b is None or isinstance(b, ir.Const) and isinstance(b.value, int) for b in bounds) \
                or bounds[2] is not None and bounds[2].value == 0:
            return None
        return range(*slice(*(None if b is None else b.value for b in bounds)).indices(len(info[1])))

    def _parameter_or_copy(self, var: str, seen: frozenset = frozenset()) -> bool:
        """var is a parameter or a tuple display, or only ever bound to one or to a copy of one
        (`_t3 = tangents`, as `(t,) = tangents` lowers; a loop's carry `c = new`): it may be a
        tuple, whose adjoint takes add_at (an array's takes it in place)."""
        if var in self.plan.fn.params or var in seen:  # (a loop's carry is bound to itself: nothing new)
            return True
        defs = [d for d in self.an.defs.get(var, []) if d != "param"]
        return bool(defs) and all(
            isinstance(d, ir.Assign) and not d.unpack and (
                isinstance(d.value, ir.Build) and d.value.kind == "tuple"
                or isinstance(d.value, ir.Name) and self._parameter_or_copy(d.value.id, seen | {var}))
            for d in defs)

    def _item_of_container(self, var: str, seen: frozenset = frozenset()) -> bool:
        """var = d["key"], or an item of such an item (params["extra"][1]): an item of a dict
        may itself be a tuple, list or dict, whose adjoint takes add_at (an array's adjoint
        takes it too, in place)."""
        for d in self.an.defs.get(var, []):
            if isinstance(d, ir.Assign) and isinstance(d.value, ir.Subscript) and isinstance(d.value.value, ir.Name):
                base = d.value.value.id
                if self.an.is_container(base) or base not in seen and all(
                        isinstance(i, ir.Const) for i in d.value.index.items) and self._item_of_container(
                        base, seen | {var}):
                    return True
        return False

    def _unpacked(self, var: str) -> bool:
        defs = [d for d in self.an.defs.get(var, []) if d != "param"]
        return any(isinstance(d, ir.Assign) and isinstance(d.value, ir.Call) and (
            is_user_function(d.value.fn) or _returns_tuple(d.value))
                   for d in defs)

    def _item_of_unpacked(self, var: str) -> bool:
        """var is bound by unpacking a user function's result or a parameter (`v, v_dot = f_jvp(x, t)`
        of a nested s2s.jvp, whose value is itself a pair): it may be a tuple, whose adjoint takes
        add_at (Numba adds into no tuple in place; an array's adjoint takes add_at too)."""
        return any(isinstance(d, ir.Assign) and d.unpack and isinstance(d.value, ir.Name)
                   and (d.value.id in self.plan.fn.params or self._unpacked(d.value.id))
                   for d in self.an.defs.get(var, []) if d != "param")

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
        bar = self.plan.bar(stmt.base)
        index = self.em.index(stmt.index)
        basic = self._basic(stmt.index)
        if self.an.atom_active(stmt.value):
            if basic:
                picked = ast.Subscript(name(bar), index, ast.Load())
            else:
                picked = runtime_call("take", name(bar), self.em.index(stmt.index, as_value=True))
            if self.plan.exact_setitem(stmt):
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

    # ---- pops and recomputation ---------------------------------------------------

    def recompute(self, stmt) -> list:
        """Statements that recompute, for the reverse sweep of stmt, what it would have popped."""
        if id(stmt) not in self.plan.recomputed:
            return []
        variables, statements = self.plan.recomputed[id(stmt)]
        lines = sorted({d.origin.line for d in statements})
        source = statements[0].origin.short().rsplit(":", 1)[0]
        where = f" ({source}:{lines[0]}" + (f"-{lines[-1]}" if lines[-1] != lines[0] else "") + ")"
        out = [self.em.comment(f"Recomputed rather than taped: {', '.join(variables)}{where}")]
        for d in statements:
            emitted = self.em.primal(d)
            out.extend(emitted if isinstance(emitted, list) else [emitted])
            self.popped_into.update(d.targets)
        return out

    def shape_sources(self, stmt) -> dict[str, str]:
        """Variables whose shape, not value, is at hand for this statement: var -> name."""
        decisions = self.plan.decisions
        return {need.var: self.tapes.shape_vars[decisions[(id(stmt), need)][2]] for need in self.plan.needs(stmt)
                if need.shape and decisions[(id(stmt), need)][1] == "shape"}

    def pops(self, stmt, taped, rename: dict[str, str] | None = None) -> list:
        rename = rename or {}
        out = self.recompute(stmt)
        for need, tape in taped:
            if (id(stmt), need) in self.popped_early:  # (materialize popped it)
                continue
            if need.shape:
                shape = self.tapes.shape_vars[(need.var, id(stmt), need.when)]
                self.popped_into.add(shape)
                out.append(assign(shape, runtime_call("pop_shape", name(tape), name(shape))))
            else:
                into = rename.get(need.var, need.var) if need.when == "pre" else need.var
                out += self.pop_into(into, tape)
        return out

    def pop_into(self, target: str, tape: str) -> list:
        self.popped_into.add(target)
        if tape in self.tapes.counted:
            count = self.tapes.counted[tape][0]
            return [ast.AugAssign(name(count, True), ast.Sub(), ast.Constant(1)),
                    assign(target, ast.Subscript(name(tape), name(count), ast.Load()))]
        return [assign(target, ast.Call(ast.Attribute(name(tape), "pop", ast.Load()), [], []))]
