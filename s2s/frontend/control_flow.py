"""The second pass of lowering: break, continue and early return become flags and guarded
blocks, so that every transform only sees structured control flow."""

from __future__ import annotations

from ..errors import Origin
from ..ir import nodes as ir


def lower_control_flow(body: list, names: ir.Names, origin: Origin) -> list:
    """Replace break, continue and early returns by flags and guarded blocks.

    Every loop that is left early gets `_stop` (set by break and by return) and every
    loop body that is cut short gets `_skip` (set by break, continue and return); the
    rest of a block after a statement that may set them runs under `if not _skip:`.
    Returns before the end store `_retval` and set `_returned`.
    """
    returns = [s for s in ir.walk(body) if isinstance(s, ir.Return)]
    simple = len(returns) == 1 and body and body[-1] is returns[0]
    has_exits = any(isinstance(s, (ir.Break, ir.Continue)) for s in ir.walk(body))
    if simple and not has_exits:
        return body
    everything = list(body)  # (the final return included: what is read after the loops)
    if simple:
        final = body.pop()
    else:
        final = None
    lowering = _Lowering(names, not simple, everything)
    lowered = lowering.block(body, loops=[])
    if simple:
        return lowered + [final]
    init = [ir.Assign((lowering.returned,), ir.Const(False), origin)]
    return init + lowered + [ir.Return(ir.Name(lowering.retval), origin)]


class _Lowering:
    def __init__(self, names: ir.Names, early_returns: bool, everything: list):
        self.names = names
        self.everything = everything  # the function's statements
        self.returned = names.fresh("_returned") if early_returns else None
        self.retval = names.fresh("_retval") if early_returns else None

    def block(self, stmts: list, loops: list) -> list:
        """loops: (stop, skip) flag names of the enclosing loops, innermost last."""
        out: list = []
        for k, stmt in enumerate(stmts):
            lowered, exits = self.statement(stmt, loops)
            out += lowered
            if exits and k + 1 < len(stmts):
                flag = loops[-1][1] if loops else self.returned
                rest = self.block(stmts[k + 1:], loops)
                if rest:
                    out.append(ir.If(ir.Name(flag), rest, [], stmt.origin, negated=True))
                break
        return out

    def statement(self, stmt, loops):
        """The lowered statements and whether they may leave the enclosing block early."""
        o = stmt.origin
        if isinstance(stmt, ir.Break):
            stop, skip = loops[-1]
            return [ir.Assign((stop,), ir.Const(True), o), ir.Assign((skip,), ir.Const(True), o)], True
        if isinstance(stmt, ir.Continue):
            return [ir.Assign((loops[-1][1],), ir.Const(True), o)], True
        if isinstance(stmt, ir.Return):
            out = [ir.Assign((self.retval,), stmt.value, o),
                   ir.Assign((self.returned,), ir.Const(True), o)]
            for stop, skip in loops:
                out += [ir.Assign((stop,), ir.Const(True), o), ir.Assign((skip,), ir.Const(True), o)]
            return out, True
        if isinstance(stmt, ir.If):
            body = self.block(stmt.body, loops)
            orelse = self.block(stmt.orelse, loops)
            exits = _leaves(stmt.body) or _leaves(stmt.orelse)
            return [ir.If(stmt.test, body, orelse, o, stmt.negated)], exits
        if isinstance(stmt, (ir.For, ir.While)):
            return self.loop(stmt, loops)
        return [stmt], False

    def loop(self, stmt, loops):
        o = stmt.origin
        inner = _leaves(stmt.body, in_loop=True)
        if not inner:
            body = self.block(stmt.body, loops + [(None, None)])
            stmt.body = body
            return [stmt], False
        stop = self.names.fresh("_stop")
        skip = self.names.fresh("_skip")
        loop_has_stop = any(isinstance(s, (ir.Break, ir.Return)) for s in _own_exits(stmt.body))
        body = self.block(stmt.body, loops + [(stop, skip)])
        body = [ir.Assign((skip,), ir.Name(stop) if loop_has_stop else ir.Const(False), o)] + body
        if loop_has_stop and isinstance(stmt, ir.For):
            runs = body[1:]
            if self.read_outside(stmt.var, stmt):
                # The loop runs out its range with the steps after a break skipped: the counter
                # the code after the loop reads is the step's where the loop broke, so the
                # loop counts in a name of its own and sets the user's in the steps that run.
                counter = self.names.fresh(f"_{stmt.var}")
                runs = [ir.Assign((stmt.var,), ir.Name(counter), o)] + runs
                stmt.var = counter
            body = [ir.Assign((skip,), ir.Name(stop), o), ir.If(ir.Name(skip), runs, [], o, negated=True)]
        stmt.body = body
        out = [ir.Assign((stop,), ir.Const(False), o)] if loop_has_stop else []
        if isinstance(stmt, ir.While) and loop_has_stop:
            # Test the loop condition only while no break or return has happened.
            go = self.names.fresh("_go")
            cond = stmt.cond + [ir.Assign((go,), stmt.test, o)]
            stmt.cond = [ir.Assign((go,), ir.Const(False), o), ir.If(ir.Name(stop), cond, [], o, negated=True)]
            stmt.test = ir.Name(go)
        out.append(stmt)
        returns_inside = any(isinstance(s, ir.Return) for s in ir.walk(stmt.body)) or any(
            isinstance(s, ir.Assign) and s.targets == (self.returned,) for s in ir.walk(stmt.body))
        if returns_inside:
            return out, True
        return out, False

    def read_outside(self, name: str, loop) -> bool:
        """Whether a statement of the function outside the loop reads name."""
        inside = {id(s) for s in ir.walk(loop.body)}
        return any(name in ir.stmt_reads(s) for s in ir.walk(self.everything) if id(s) not in inside)


def _own_exits(block):
    """break/continue/return statements that leave this loop (not nested loops')."""
    for stmt in block:
        if isinstance(stmt, (ir.Break, ir.Continue, ir.Return)):
            yield stmt
        elif isinstance(stmt, ir.If):
            yield from _own_exits(stmt.body)
            yield from _own_exits(stmt.orelse)
        elif isinstance(stmt, (ir.For, ir.While)):
            yield from (s for s in ir.walk(stmt.body) if isinstance(s, ir.Return))


def _leaves(block, in_loop: bool = False) -> bool:
    return any(True for _ in _own_exits(block))
