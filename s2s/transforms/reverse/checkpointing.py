"""Reverse mode, checkpointed loops: a range loop whose tape would outgrow the tape budget is
run in stretches, so that its reverse sweep holds the tape of one stretch at a time.

A loop's tape holds a value per trip for each value its reverse needs; 400,000 trips of a
1,000-number state take 3.2 GB. The trip count and the sizes of the carried values are known
when the loop starts, so the generated code decides there (runtime.checkpoint_stride) between
the loop as it is taped today and a checkpointed one, written out beside it so that a reader
sees the schedule:

- forward sweep: the loop runs untaped (its primal), and keeps a snapshot of each carried
  value every `stride` trips;
- reverse sweep: for each stretch, last first, the carried values are restored from their
  snapshot, the stretch is run again taped (the forward sweep's loop over those trips, its tapes
  made with room for one stretch), and then reversed (the reverse sweep's loop over them).

The stretch runs the same statements on the same values as the taped loop did, so its tapes
hold the same numbers and the gradient is the taped one's, bit for bit. This is two-level
checkpointing (about sqrt(trips) snapshots and a tape of about sqrt(trips) trips, the primal
run twice), not a binomial (revolve) schedule with a fixed number of snapshots.

A loop is checkpointed where every value the stretch's rerun reads can be restored: a range
loop of step 1 at the function's top level, with no loop, break, continue, return or append
inside, whose tapes have room known on entry, whose bounds its body leaves alone, and whose
carried variables are each bound on entry, either rebound (`v = ...`, snapshot rebound) or
written into (`v[...] = ...`, snapshot copied back into the same array) but not both. The
variables the body binds before reading them in every trip and that no code before the loop
binds need none. Other loops keep the taped loop alone.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from ...ir import nodes as ir
from ... import runtime
from ...codegen.emit import assign, name, runtime_call
from ..rule_helpers import simplify
from .loop_locals import bound_first


@dataclass
class CarriedValue:
    var: str
    written_into: bool  # restored by copying into the array var holds (others are rebound)
    snapshots: str  # the name of its snapshot tape


def carried_values(plan, loop: ir.For, entry_bound: frozenset) -> list[CarriedValue] | None:
    """The values of loop that a rerun of a stretch needs restored, or None where loop is not
    one checkpointing takes (the module's docstring says which)."""
    body = list(ir.walk(loop.body))
    if any(isinstance(s, (ir.For, ir.While, ir.Break, ir.Continue, ir.Return, ir.Push)) for s in body):
        return None
    if any(id(s) in plan.by_rule for s in body):
        return None  # (its value comes from a rule's function, which the forward sweep calls)
    if not (isinstance(loop.step, ir.Const) and loop.step.value == 1):
        return None
    rebound, written_into = set(), set()
    for s in body:
        if isinstance(s, ir.Assign) and not s.inplace:
            rebound |= set(s.targets)
        elif isinstance(s, (ir.Assign, ir.SetItem, ir.ExprStmt)):
            written_into |= set(ir.stmt_writes(s))
    bounds = {b.id for b in (loop.start, loop.stop) if isinstance(b, ir.Name)}
    if bounds & (rebound | written_into) or loop.var in bounds:
        return None
    carried = []
    for var in sorted(rebound | written_into):
        if var == loop.var:
            continue
        if var in plan.bound_flags or var in plan.appended:
            return None
        if var in entry_bound:
            if var in rebound and var in written_into:
                return None  # (which array the name holds after a rerun is not the snapshot's)
            if var in written_into and not _made_as_an_array(plan, var, loop):
                return None  # (a list, whose items `v[...] = snapshot` would not restore under Numba)
            carried.append(CarriedValue(var, var in written_into, ""))
            continue
        inside = {id(s) for s in body}
        defs = [d for d in plan.an.defs.get(var, []) if d != "param"]
        if not (var in rebound and var not in written_into and bound_first(var, loop.body)
                and all(id(d) in inside for d in defs)):
            return None  # (a value from before the loop that the taped loop would restore)
    return carried


def _made_as_an_array(plan, var: str, loop: ir.For) -> bool:
    """Is var, where loop starts, an array that a NumPy function made, or the private copy of
    an argument (which s.jit passes as an array or a tuple, and a tuple is not written into)?"""
    inside = {id(s) for s in ir.walk([loop])}
    # (an argument written into is copied first: `v = runtime.copy(v)`, which is what v holds)
    defs = [d for d in plan.an.defs.get(var, []) if d != "param" and id(d) not in inside]
    for d in defs:
        if not (isinstance(d, ir.Assign) and len(d.targets) == 1 and isinstance(d.value, ir.Call)):
            return False
        fn, args = d.value.fn, d.value.args
        private_copy = fn is runtime.copy and len(args) == 1 and isinstance(args[0], ir.Name) \
            and args[0].id in plan.fn.params
        if not (private_copy or (getattr(fn, "__module__", None) or "").startswith("numpy")):
            return False
    return bool(defs)


def checkpoint_loops(plan, forward, reverse, forward_statements: list, reverse_statements: list,
                     budget: int) -> tuple[list, list]:
    """The forward and reverse statements, each loop that checkpointing takes written as a
    choice at run time between its taped loop and its checkpointed stretches."""
    fn, names, em = plan.fn, plan.names, plan.em
    bound = frozenset(fn.params) | frozenset(fn.constants)
    forward_statements, reverse_statements = list(forward_statements), list(reverse_statements)
    for stmt in fn.body:
        entry_bound = bound
        bound = plan.bound_after.get(id(stmt), bound)
        if not isinstance(stmt, ir.For):
            continue
        taped_loop = forward.loops.get(id(stmt))
        reverse_loop = reverse.loops.get(id(stmt))
        if taped_loop is None or reverse_loop is None or taped_loop not in forward_statements \
                or reverse_loop not in reverse_statements:
            continue
        pushes = [(need, tape) for s in ir.walk(stmt.body) for need, tape in forward.tapes.at.get(id(s), [])
                  if not need.shape]
        if not pushes or any(tape not in forward.tapes.counted for _, tape in pushes):
            continue  # (nothing taped per trip, or a list tape, whose room is not known on entry)
        carried = carried_values(plan, stmt, entry_bound)
        if not carried:
            continue
        for value in carried:
            value.snapshots = names.fresh(f"{value.var}_snapshots")
        stride = names.fresh(f"{stmt.var}_stride")
        start, stop = em.atom(stmt.start), em.atom(stmt.stop)
        zero_start = isinstance(stmt.start, ir.Const) and stmt.start.value == 0
        trips = stop if zero_start else simplify(ast.BinOp(stop, ast.Sub(), start))
        stretches = ast.BinOp(ast.BinOp(copy.deepcopy(trips), ast.Add(),
                                        ast.BinOp(name(stride), ast.Sub(), ast.Constant(1))),
                              ast.FloorDiv(), name(stride))
        choose = [
            em.comment(f"Checkpointing: where this loop's tape ({len(pushes)} value(s) a trip) would exceed the "
                       f"tape budget, {budget} bytes,"),
            em.comment(f"it runs untaped, with a snapshot of {', '.join(v.var for v in carried)} every {stride} "
                       f"trips (about sqrt(trips); 0: taped as usual),"),
            em.comment("and the reverse sweep reruns each stretch taped from its snapshot, last first."),
            assign(stride, runtime_call("checkpoint_stride", copy.deepcopy(trips), ast.Constant(len(pushes)),
                                        ast.Constant(budget),
                                        *[runtime_call("snapshot_bytes", name(v.var)) for v in carried]))]
        # forward sweep: the primal loop, snapshots at the start of each stretch
        trip = name(stmt.var) if zero_start else ast.BinOp(name(stmt.var), ast.Sub(), copy.deepcopy(start))
        snapshot = ast.If(
            ast.Compare(ast.BinOp(copy.deepcopy(trip), ast.Mod(), name(stride)), [ast.Eq()], [ast.Constant(0)]),
            [ast.Assign([ast.Subscript(name(v.snapshots), ast.BinOp(copy.deepcopy(trip), ast.FloorDiv(),
                                                                     name(stride)), ast.Store())],
                        runtime_call("copy", name(v.var)), lineno=0) for v in carried], [])
        primal_loop = em.primal(stmt)
        primal_loop.body.insert(0, snapshot)
        untaped = [assign(v.snapshots, runtime_call("new_tape", name(v.var), copy.deepcopy(stretches)))
                   for v in carried] + [primal_loop]
        at = forward_statements.index(taped_loop)
        forward_statements[at:at + 1] = choose + [ast.If(
            ast.Compare(name(stride), [ast.Eq()], [ast.Constant(0)]), [taped_loop], untaped)]
        # reverse sweep: each stretch restored, rerun taped, reversed
        stretch, first, last = (names.fresh(f"{stmt.var}_{what}") for what in ("stretch", "first", "last"))
        restore = []
        for v in carried:
            snapshot_value = ast.Subscript(name(v.snapshots), name(stretch), ast.Load())
            if v.written_into:
                target = ast.Subscript(name(v.var), ast.Constant(Ellipsis), ast.Store())
                restore.append(ast.Assign([target], snapshot_value, lineno=0))
            else:
                restore.append(assign(v.var, snapshot_value))
        rerun = copy.deepcopy(taped_loop)
        rerun.iter = ast.Call(name("range"), [name(first), name(last)], [])
        for node in ast.walk(rerun):  # (its tapes with room for one stretch)
            if isinstance(node, ast.Call) and _is_runtime(node, "new_tape"):
                node.args[1] = name(stride)
        reversed_stretch = copy.deepcopy(reverse_loop)
        reversed_stretch.iter = ast.Call(name("range"), [
            ast.BinOp(name(last), ast.Sub(), ast.Constant(1)),
            ast.BinOp(name(first), ast.Sub(), ast.Constant(1)), ast.Constant(-1)], [])
        first_trip = ast.BinOp(name(stretch), ast.Mult(), name(stride))
        segments = ast.For(name(stretch, True), ast.Call(name("range"), [
            ast.BinOp(copy.deepcopy(stretches), ast.Sub(), ast.Constant(1)), ast.Constant(-1), ast.Constant(-1)], []),
            restore + [
                assign(first, first_trip if zero_start else ast.BinOp(copy.deepcopy(start), ast.Add(), first_trip)),
                assign(last, ast.Call(name("min"), [ast.BinOp(name(first), ast.Add(), name(stride)),
                                                    copy.deepcopy(stop)], [])),
                rerun, reversed_stretch], [], lineno=0)
        at = reverse_statements.index(reverse_loop)
        reverse_statements[at:at + 1] = [ast.If(
            ast.Compare(name(stride), [ast.Eq()], [ast.Constant(0)]), [reverse_loop], [
                em.comment(f"Checkpointed: each stretch of {stride} trips from its snapshot, rerun taped, "
                           "then reversed"), segments])]
    return forward_statements, reverse_statements


def _is_runtime(call: ast.Call, helper: str) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == helper and isinstance(func.value, ast.Name) \
        and func.value.id == "runtime"
