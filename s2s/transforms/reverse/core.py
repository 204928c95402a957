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
  callee's vjp for those (`helper_vjp_wrt_x`, transforms/variants.py) computes no other.
"""

from __future__ import annotations

import ast
import operator

from ...ir import nodes as ir
from ... import runtime
from ...analysis.activity import analyse
from ...codegen.emit import Emitter, assign, name, runtime_call
from ...errors import S2SError
from ...rules import Rule
from ...analysis.shapes import ShapeClasses
from ..rule_helpers import all_names
from ...frontend.source import is_user_function
from .instances import RuleInstances
from .planning import Planning
from .sweep import Sweep


def _refuse_sequence_arithmetic(fn: ir.Function, an) -> None:
    """Refuse `+` of two lists or tuples (concatenation) and `*` of one by an int (repetition)
    on values being differentiated: their adjoints are not the arithmetic ones the rules of
    `+` and `*` give (they would add the cotangents of the pieces, where they must be split or
    summed). Forward mode takes both (a tangent concatenates as its value does). Operands not
    known here to be sequences (a tuple argument) meet runtime.unbroadcast's check."""
    sequences: set[str] = set()  # names that may hold a list or tuple display

    def sequence(atom) -> bool:
        return isinstance(atom, ir.Name) and atom.id in sequences

    def integer(atom) -> bool:
        return (isinstance(atom, ir.Const) and type(atom.value) is int) or (
            isinstance(atom, ir.Name) and atom.id in an.int_like)

    def sequence_operation(value) -> str | None:
        if not (isinstance(value, ir.Call) and value.fn in (operator.add, operator.mul) and len(value.args) == 2):
            return None
        a, b = value.args
        if value.fn is operator.add and sequence(a) and sequence(b):
            return "concatenates"
        if value.fn is operator.mul and ((sequence(a) and integer(b)) or (integer(a) and sequence(b))):
            return "repeats"
        return None

    assigns = [s for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and len(s.targets) == 1]
    changed = True
    while changed:
        changed = False
        for stmt in assigns:
            value = stmt.value
            if stmt.targets[0] not in sequences and (
                    (isinstance(value, ir.Build) and value.kind in ("list", "tuple"))
                    or sequence(value) or sequence_operation(value)):
                sequences.add(stmt.targets[0])
                changed = True
    for stmt in assigns:
        how = sequence_operation(stmt.value)
        if how and an.is_active(stmt.targets[0]) and any(an.atom_active(a) for a in stmt.value.args):
            op = "+" if how == "concatenates" else "*"
            raise S2SError(f"`{op}` here {how} a list or tuple: reverse mode (grad, jacrev, vjp) does not "
                           "differentiate sequence " + ("concatenation" if op == "+" else "repetition"),
                           stmt.origin, "write the whole sequence as one display ([a, b, c] or (a, b, c)), join "
                           "arrays with np.concatenate or np.tile, or use forward mode (s2s.jacfwd, s2s.jvp), "
                           "which takes it")


def _refuse_shared_appended_lists(fn: ir.Function) -> None:
    """The reverse sweep undoes each `t.append(v)` by popping t and t's adjoint (sweep.py,
    reverse_push), so t's adjoint must be the only one its items' adjoints gather in. Refuse
    where t is not a list the function makes ([] or [a, b]: an argument is the caller's list),
    where t is shared by another name (`u = t`, `(t, a)`, a helper's argument) before an append
    that may run later (the other name would see the new item, and its adjoint would never
    reach v), and where the result holds t (the reverse sweep's pops would empty it)."""
    pushes = [s for s in ir.walk(fn.body) if isinstance(s, ir.Push)]
    if not pushes:
        return
    statements = list(ir.walk(fn.body))

    displays = {}  # name -> is every assignment of it a list display
    for s in statements:
        if isinstance(s, ir.Assign):
            for t in s.targets:
                displays[t] = displays.get(t, True) and len(s.targets) == 1 and isinstance(
                    s.value, ir.Build) and s.value.kind == "list"

    def repeated(value) -> bool:  # [0.0] * n: Python's `*` of a list makes a new list
        return isinstance(value, ir.Call) and value.fn is operator.mul and len(value.args) == 2 and any(
            isinstance(a, ir.Name) and displays.get(a.id) for a in value.args)

    def fresh(d) -> bool:  # [] or [a, b], [0.0] * n, or the private copy of an argument (lower.py)
        return len(d.targets) == 1 and (isinstance(d.value, ir.Build) and d.value.kind == "list" or isinstance(
            d.value, ir.Call) and d.value.fn is runtime.copy or repeated(d.value))

    for push in pushes:
        if push.tape in fn.params and not any(isinstance(d, ir.Assign) and d.targets == (push.tape,) and fresh(d)
                                              for d in fn.body[:1]):
            raise S2SError(f"reverse mode (grad, jacrev, vjp) of {push.tape}.append(...) into the argument {push.tape} "
                           "(a list its caller holds) is not supported", push.origin,
                           "make a new list in the function and return what the caller needs")
        for d in statements:
            if isinstance(d, ir.Assign) and push.tape in d.targets and not fresh(d):
                raise S2SError(f"reverse mode (grad, jacrev, vjp) of {push.tape}.append(...) where {push.tape} may be "
                               "a list that another name holds is not supported", d.origin,
                               f"make {push.tape} a new list here ([] or [a, b]) before appending to it")
    order = {id(s): k for k, s in enumerate(statements)}
    in_loops = {id(s) for loop in statements if isinstance(loop, (ir.For, ir.While))
                for block in ir.child_blocks(loop) for s in ir.walk(block)}
    # the outermost loop around each statement in one
    outermost: dict[int, object] = {}
    for stmt in statements:
        if isinstance(stmt, (ir.For, ir.While)) and id(stmt) not in in_loops:
            for block in ir.child_blocks(stmt):
                for s in ir.walk(block):
                    outermost[id(s)] = stmt

    def complete_in(loop, names: list[str]) -> bool:
        """No list is grown or written into in the loop, and the names keep the list they hold
        through it: the reverse sweep reaches each pass with those lists as the forward sweep had
        them there (a list grown with .append is taped as itself, not copied)."""
        inside = [s for block in ir.child_blocks(loop) for s in ir.walk(block)]
        return not any(isinstance(s, (ir.Push, ir.SetItem)) for s in inside) and not any(
            isinstance(s, ir.Assign) and set(s.targets) & set(names) for s in inside)
    holders = {p.tape for p in pushes}  # names that may hold one of the lists (itself, or in a display)
    changed = True
    while changed:
        changed = False
        for stmt in statements:
            if not isinstance(stmt, ir.Assign):
                continue
            value = stmt.value
            held = None  # the names read whose lists the target may hold (None: all those read)
            if isinstance(value, ir.Build):
                read = ir.names_in(value)
            elif isinstance(value, ir.Name):
                read = [value.id]
            elif isinstance(value, ir.Call) and is_user_function(value.fn):
                read = [a.id for a in value.args if isinstance(a, ir.Name)]
                # A helper whose result shares none of an argument (loss(preds) that sums the
                # items: result_views) hands back no list: its result holds no list of the caller
                summary = fn.callee_results.get(id(value.fn))
                if summary is not None and not value.kwargs:
                    held = [a.id for k, a in enumerate(value.args) if isinstance(a, ir.Name) and k in summary]
            else:
                read = []
            shared = [n for n in read if n in holders]
            if not shared:
                continue
            if id(stmt) in in_loops and not complete_in(outermost[id(stmt)], shared):
                # (in a loop the other name is bound anew each pass, and the reverse sweep, which
                # restores the list's items, does not restore which list that name refers to;
                # taken where no list is grown in the loop and the names read keep their list:
                # a helper called in a loop with a list filled before it)
                raise S2SError(f"reverse mode (grad, jacrev, vjp) of a list grown with .append ({shared[0]}) that "
                               "another name comes to hold inside a loop is not supported", stmt.origin,
                               f"read {shared[0]} itself, or share it after the loop")
            for push in pushes:  # (stmt is in no loop that grows a list: a later append is later in the code)
                if push.tape in shared and order[id(push)] > order[id(stmt)]:
                    raise S2SError(f"reverse mode (grad, jacrev, vjp) of {push.tape}.append(...) where {push.tape} is "
                                   "also held by another name (or passed to a function) before the append is not "
                                   "supported", stmt.origin, f"append to {push.tape} only, and share it after its last "
                                   "append, or fill an array (np.zeros(n), then vals[i] = ...) instead")
            if held is not None and not any(n in holders for n in held):
                continue
            for target in stmt.targets:
                if target not in holders:
                    holders.add(target)
                    changed = True
    _refuse_appended_then_grown(pushes, statements, order, holders)
    result = fn.result
    if isinstance(result, ir.Name) and result.id in holders:
        push = next(p for p in pushes if p.tape in holders)
        raise S2SError(f"reverse mode (grad, jacrev, vjp) of a function whose result holds {push.tape}, a list grown "
                       "with .append, is not supported", push.origin,
                       f"return np.array({push.tape}) (or np.stack), or an array filled in the loop")


def _refuse_appended_then_grown(pushes: list, statements: list, order: dict, holders: set) -> None:
    """Refuse `outer.append(inner)` (or `outer[k] = inner`, `d["a"] = inner`) where inner is a
    list grown with .append that may get another item after it was stored (later in the code,
    or in a later pass of a loop around both that does not make inner a new list first):
    outer[k] is inner itself, so the new item reaches outer's reads, and the reverse sweep, which
    gives inner its adjoint apart from outer's, lost the derivative through them (outer = [];
    inner = []; outer.append(inner); inner.append(x[0] * x[1]); return outer[0][0] gave 0 for
    [x1, x0]). An inner list that is complete when stored (a row filled, then appended, made
    anew each pass) is taken."""
    loops = [s for s in statements if isinstance(s, (ir.For, ir.While))]
    inside = {id(loop): {id(s) for block in ir.child_blocks(loop) for s in ir.walk(block)} for loop in loops}

    def fresh_in_pass(loop, var: str, before: int) -> bool:  # var = [...] on every pass, before `before`
        return any(isinstance(s, ir.Assign) and s.targets == (var,) and order[id(s)] < before
                   and isinstance(s.value, ir.Build) and s.value.kind == "list"
                   for block in ir.child_blocks(loop) for s in block)

    for share in statements:
        if not (isinstance(share, (ir.Push, ir.SetItem)) and isinstance(share.value, ir.Name)
                and share.value.id in holders):
            continue
        into = f"{share.tape}.append" if isinstance(share, ir.Push) else f"{share.base}[...] = "
        inner = share.value.id
        for grow in pushes:
            if grow.tape != inner:
                continue
            around = [loop for loop in loops if id(share) in inside[id(loop)] and id(grow) in inside[id(loop)]]
            later = order[id(grow)] > order[id(share)] or (
                around and not fresh_in_pass(around[-1], inner, order[id(grow)]))
            if later:
                stored = f"{into}({inner})" if isinstance(share, ir.Push) else f"{into}{inner}"
                raise S2SError(f"reverse mode (grad, jacrev, vjp) of {stored} where {inner}, a list grown with "
                               ".append, may get more items after it is stored there is not supported",
                               share.origin, f"store {inner} once it is complete (after its last append), making it "
                               f"a new list ({inner} = []) at the start of each pass of the loop")


class VJP(RuleInstances, Planning, Sweep):
    def __init__(self, fn: ir.Function, emitter: Emitter, active_params: list[str],
                 function_name: str, variant, has_aux: bool = False, facts: dict | None = None,
                 value_needed: bool = True, checks_tangent: bool = False,
                 entry: bool = False):
        generated = [stmt for stmt in ir.walk(fn.body) if (isinstance(stmt, ir.Assign) and (
            isinstance(stmt.value, ir.Pop) or (isinstance(stmt.value, ir.Call) and stmt.value.fn is runtime.new_tape))) or (
            isinstance(stmt, ir.ExprStmt) and stmt.value.fn in (runtime.index_add, runtime.clear))]
        if generated:
            if isinstance(generated[0], ir.Assign) and isinstance(generated[0].value, ir.Pop):
                # (the user's `t.pop()` is lowered as generated code's tape pop)
                raise S2SError("reverse mode (grad, jacrev, vjp) of list.pop() (or of generated reverse-mode code) "
                               "is not supported", generated[0].origin,
                               "read the item by index (t[-1]) instead of popping it, use forward mode "
                               "(s2s.jacfwd, s2s.jvp), or take second derivatives forward over reverse "
                               "(s2s.hessian)")
            raise S2SError("reverse mode of generated reverse-mode code is not supported",
                           generated[0].origin, "take second derivatives forward over reverse: s2s.hessian, or "
                           "s2s.jacfwd(s2s.jacrev(f))")
        _refuse_shared_appended_lists(fn)
        self.fn = fn
        # variant(python function, positions of the arguments whose adjoints a call needs) -> the
        # name of the callee's vjp that returns those adjoints
        self.variant = variant
        self.has_aux = has_aux
        # fn is an s2s.custom_jvp's rule, transposed: its (value, tangent) result is checked
        # before the reverse sweep seeds the tangent with a cotangent of the value's shape
        self.checks_tangent = checks_tangent
        self.em = emitter
        self.function_name = function_name
        self.names = ir.Names(all_names(fn) | {"np", "math", "runtime"})
        # (the entry's differentiated arguments hold floats: the doors refuse integers there)
        self.an = analyse(fn, active_params, active_params if entry else ())
        _refuse_sequence_arithmetic(fn, self.an)
        sliced = next((s for s in getattr(self.an, "list_slice_writes", ()) if self.an.atom_active(s.value)
                       or self.an.is_active(s.base)), None)
        if sliced is not None:  # (it may change the list's length: its adjoint is no elementwise one)
            raise S2SError("reverse mode (grad, jacrev, vjp) of a write into a slice of a list (t[i:j] = ...) is "
                           "not supported", sliced.origin, "write the items one by one (t[1] = a; t[2] = b), "
                           "build a new list, or use forward mode (s2s.jacfwd, s2s.jvp), which takes it")
        self.active_params = active_params
        self.bars: dict[str, str] = {}
        self.tapes: dict[tuple, str] = {}  # (var, id(stmt), when) -> tape name
        self.tape_order: list[str] = []
        self.shape_tapes: set[str] = set()
        self.counted: dict[str, tuple[str, ast.expr]] = {}  # tape -> (its count, its capacity)
        self.loop_totals: dict[int, str] = {}  # id(loop) -> its trip count in all (counting_loop)
        self.counting_loops: dict[int, list] = {}  # id(outermost loop) -> the loops counting before it
        self.invariant: dict[str, bool] = {}
        self.invariant_shapes: dict[str, bool] = {}  # var -> shape_invariant(var)
        self.trips: dict[int, str] = {}  # id(loop) -> trip-count variable
        self.live: set[str] = set()  # straight-line adjoints that hold a value
        self.materialized: set[str] = set()
        self.pending: set[str] = set()  # adjoints known to be zero, not yet assigned
        # pending adjoint -> the name of a taped shape of its variable's value there (sweep.kill)
        self.pending_shape: dict[str, str] = {}
        self.popped_into: set[str] = set()
        self.popped_early: set[tuple] = set()  # (id(stmt), need) popped before stmt's other pops
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
        self.appended = {stmt.tape for stmt in ir.walk(fn.body) if isinstance(stmt, ir.Push)}
        self.may_mutate = set()
        for members in self.an.alias_of.values():
            self.may_mutate |= set(members)
        # A list grown with .append is taped as itself (the reverse sweep's pops undo the appends),
        # but a write into one of its items (t[0] = v, through any name that holds it) is undone by
        # nothing: such a list is taped as a copy where a statement other than its append needs
        # it (planning.push). (Taped as itself, a helper's reverse, total(t), read t as the later
        # write left it: d/dx0 of s = total(t); t[0] = x[1]; s + total(t) was 2 x1 for 2 x0.)
        written = {stmt.base for stmt in ir.walk(fn.body) if isinstance(stmt, ir.SetItem)}
        for var in list(written):
            written |= set(self.an.alias_of.get(var, ()))
        self.appended_and_written = self.appended & written

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
        if isinstance(stmt, ir.Push):
            return True  # t.append(v) is undone (t.pop()), also for an inactive t (the analysis counts on it)
        return False

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
        if self.checks_tangent and isinstance(result, ir.Name):
            # (a tangent of another shape would fail inside the sweep, with NumPy's words)
            pair = [ast.Subscript(self.em.atom(result), ast.Constant(k), ast.Load()) for k in (1, 0)]
            body.append(ast.Expr(runtime_call("derivative_like", *pair)))
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
