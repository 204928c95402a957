"""The vjp transform of one function: what reverse mode refuses, and the generated function
made from the results of its three passes (driver/pipeline.py):

- plan (plan.py, planning.py, instances.py): what is active, where the reverse sweep finds each
  value it reads (its variable, a tape, a tape of its shape, or recomputed), the rules;
- forward_sweep (forward_sweep.py): the primal, plus pushes of the values the reverse sweep
  will need and that the primal later overwrites;
- reverse_sweep (sweep.py): the statements visited backwards, each applying its rule from
  templates/; then vjp_function (below) puts them together.

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
from ...codegen.emit import assign, name, runtime_call
from ...errors import S2SError
from ...frontend.source import is_user_function
from .checkpointing import checkpoint_loops


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


def refuse_before_analysis(fn: ir.Function) -> None:
    """What reverse mode refuses of fn's code itself: list.pop() and generated reverse-mode code
    (their pops would be taken for the sweep's own), lists shared while they are grown."""
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


def refuse_after_analysis(fn: ir.Function, an) -> None:
    """What reverse mode refuses where it is differentiated: sequence arithmetic, writes into
    slices of lists."""
    _refuse_sequence_arithmetic(fn, an)
    sliced = next((s for s in getattr(an, "list_slice_writes", ()) if an.atom_active(s.value)
                   or an.is_active(s.base)), None)
    if sliced is not None:  # (it may change the list's length: its adjoint is no elementwise one)
        raise S2SError("reverse mode (grad, jacrev, vjp) of a write into a slice of a list (t[i:j] = ...) is "
                       "not supported", sliced.origin, "write the items one by one (t[1] = a; t[2] = b), "
                       "build a new list, or use forward mode (s2s.jacfwd, s2s.jvp), which takes it")



def vjp_function(plan, forward, reverse, function_name: str, checks_tangent: bool = False) -> ast.FunctionDef:
    """The reverse mode of one function, from its plan (plan.ReversePlan), forward sweep
    (forward_sweep.ForwardSweep) and reverse sweep (sweep.ReverseSweep): the tapes made, the
    forward sweep, the reverse sweep, and (value, adjoints) returned.

    checks_tangent: fn is an s2s.custom_jvp's rule, transposed: its (value, tangent) result is
    checked before the reverse sweep seeds the tangent with a cotangent of the value's shape."""
    fn, em = plan.fn, plan.em
    result = fn.result
    output = ast.Constant(None) if plan.value_skipped else em.atom(result)
    body = forward.tapes.setup(em)
    if plan.bound_flags:
        body.append(em.comment("Whether a variable that some paths leave unbound was bound: its adjoint starts "
                               "at zero only then"))
        body += [assign(flag, ast.Constant(False)) for _, flag in sorted(plan.bound_flags.items())]
    forward_statements, reverse_statements = forward.statements, reverse.statements
    if plan.tape_budget is not None:
        forward_statements, reverse_statements = checkpoint_loops(plan, forward, reverse, forward_statements,
                                                                  reverse_statements, plan.tape_budget)
    body += forward_statements
    if checks_tangent and isinstance(result, ir.Name):
        # (a tangent of another shape would fail inside the sweep, with NumPy's words)
        pair = [ast.Subscript(em.atom(result), ast.Constant(k), ast.Load()) for k in (1, 0)]
        body.append(ast.Expr(runtime_call("derivative_like", *pair)))
    if isinstance(result, ir.Name) and result.id in reverse.popped and not plan.value_skipped:
        saved = plan.names.fresh("out")  # (the reverse sweep pops earlier values into the result's variable)
        body.append(assign(saved, name(result.id)))
        output = name(saved)
    body += reverse_statements
    body.append(ast.Return(ast.Tuple([output, ast.Tuple(reverse.adjoints, ast.Load())], ast.Load())))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in fn.params] + [ast.arg(plan.out_bar)],
                         kwonlyargs=[], kw_defaults=[], defaults=[])
    adjoints = f"adjoints of {', '.join(plan.active_params) or 'nothing'}"
    doc = ast.Expr(ast.Constant(
        f"Reverse mode of {fn.name} ({fn.origin.short()}): returns (None, {adjoints}); the value, a "
        "number, is left out, as grad does not return it." if plan.value_skipped else
        f"Reverse mode of {fn.name} ({fn.origin.short()}): returns (value, {adjoints})."))
    return ast.FunctionDef(function_name, args, [doc] + body, [], None, lineno=0)
