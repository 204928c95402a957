"""Loop-local variables renamed apart before the reverse plan.

A name that a loop binds anew before reading it, in every iteration, and that nothing reads after
the loop, holds values in the loop that nothing outside it sees: it is two variables under one
name. Under one name its adjoint would be started before the loop, as zeros of the value the name
holds there: of `for W, b in params[:-1]: ...` then `W, b = params[-1]`, the output layer's W,
of another shape than the hidden layers' (the reverse loop's first `b_bar + ...` failed to
broadcast). Renamed apart (W_2 in the loop), the loop's variable is one of that loop's iterations,
whose adjoint starts from its first contribution there, as a loop over all the layers already did.
The primal code keeps the user's names; only the reverse mode is planned on the renamed function
(ir.Function.display keeps the user's name for messages).
"""

from __future__ import annotations

import dataclasses

from ...ir import nodes as ir
from ...analysis.activity import _IRLiveness
from ..rule_helpers import all_names


def rename_loop_locals(fn: ir.Function) -> ir.Function:
    """fn with the variables local to a loop's iterations, which also occur outside that loop,
    renamed apart in the loop (fn itself where there are none)."""
    live_after: dict[int, set] = {}
    _IRLiveness(live_after).block(fn.body, set(ir.names_in(fn.result)))
    names = ir.Names(all_names(fn) | {"np", "math", "runtime"})
    display = dict(fn.display)
    every = list(ir.walk(fn.body))

    def visit(block: list) -> list:
        result = []
        for stmt in block:
            if isinstance(stmt, ir.If):
                stmt = dataclasses.replace(stmt, body=visit(stmt.body), orelse=visit(stmt.orelse))
            elif isinstance(stmt, (ir.For, ir.While)):
                inner = {id(s) for s in ir.walk([stmt])}
                elsewhere = {v for s in every if id(s) not in inner for v in ir.stmt_reads(s) + ir.stmt_writes(s)}
                mapping = {}
                for var in _iteration_locals(stmt, live_after.get(id(stmt), set()), fn):
                    if var in elsewhere:  # (a name no other code has stays as the user wrote it)
                        mapping[var] = names.fresh(var)
                        display[mapping[var]] = display.get(var, var)
                changes = {"body": ir.rename(visit(stmt.body), mapping)}
                if isinstance(stmt, ir.While):
                    changes["cond"] = visit(stmt.cond)
                stmt = dataclasses.replace(stmt, **changes)
            result.append(stmt)
        return result

    body = visit(fn.body)
    if display == fn.display:
        return fn
    return dataclasses.replace(fn, body=body, display=display)


def _iteration_locals(loop, live_after_loop: set, fn: ir.Function) -> list[str]:
    """The names loop's body binds before anything in an iteration reads them, which nothing
    reads after the loop (nor its test, for a while loop)."""
    written = sorted({v for stmt in ir.walk(loop.body) for v in ir.stmt_writes(stmt)})
    test_reads = set()
    if isinstance(loop, ir.While):
        test_reads = set(ir.names_in(loop.test)) | {
            v for stmt in ir.walk(loop.cond) for v in set(ir.stmt_reads(stmt)) | set(ir.stmt_writes(stmt))}
    return [v for v in written
            if v not in live_after_loop and v not in test_reads and v not in fn.params and v not in fn.constants
            and not (isinstance(loop, ir.For) and v == loop.var) and bound_first(v, loop.body)]


def bound_first(var: str, block: list) -> bool:
    """Is var assigned directly in block (not in place, not from itself) before anything in block
    reads or writes it?"""
    for stmt in block:
        if isinstance(stmt, ir.Assign) and var in stmt.targets and not stmt.inplace \
                and var not in ir.stmt_reads(stmt):
            return True
        if any(var in set(ir.stmt_reads(s)) | set(ir.stmt_writes(s)) for s in ir.walk([stmt])):
            return False
    return False

