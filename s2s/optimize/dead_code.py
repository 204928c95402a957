"""Dead code and copies in emitted functions: assignments nothing reads later (by liveness
through loops and branches), `x = x`, and `_tN_bar = y_bar` copies whose reads can read y_bar."""

from __future__ import annotations

import ast

from ..analysis.liveness import Branches, Liveness, Loop
from ..analysis.emitted import TEMPORARY, changes_nothing, count_names, is_comment, name_loads, stored_names

_FRESH = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare)


class _DeadCode(Liveness):
    """Statements whose results nothing reads later, by liveness through loops and branches:
    temporaries left unread once an unbroadcast or copy is dropped, and what only a left-out
    value needed. A grad that leaves out its value (reverse.VJP, value_needed=False) leaves the
    statements that only computed it, user names included (n-body's `energy = energy - ...`
    in its pair loop). Only assignments to names are removed, and only where the value
    changes nothing; `v += e` only where v is always bound to a new value (a number, or an
    arithmetic result), as an in-place update of an array another name shares is not dead.
    A `for` over a range whose body is left empty goes too, where its variable is not read
    after it.
    """

    def __init__(self, function: ast.FunctionDef, shadowed: set[str]):
        self.shadowed = shadowed
        self.dead: list = []
        # Names only ever bound by `name = <number or arithmetic>` (and updated by `name += ...`):
        # they never share an array with another name.
        params = {arg.arg for arg in function.args.args}
        fresh: dict[str, bool] = {}
        plain: set[int] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = node.targets[0]
                fresh[target.id] = fresh.get(target.id, True) and isinstance(node.value, _FRESH)
                plain.add(id(target))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                plain.add(id(node.target))
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and id(node) not in plain:
                fresh[node.id] = False  # unpacked, a loop's variable, or one of several targets
        self.always_fresh = {n for n, is_fresh in fresh.items() if is_fresh and n not in params}

    def structure(self, stmt, live: set) -> Branches | Loop | None:
        if isinstance(stmt, ast.For) and not stmt.orelse:
            if self._empty(stmt.body) and not stored_names(stmt.target) & live and _is_range(stmt.iter, self.shadowed):
                return None  # a loop that does nothing: dead (simple)
            return Loop(stmt.body, reads={n.id for n in name_loads(stmt.iter)}, bound=stored_names(stmt.target))
        if isinstance(stmt, ast.While) and not stmt.orelse:
            return Loop(stmt.body, test={n.id for n in name_loads(stmt.test)})
        if isinstance(stmt, ast.If):
            return Branches({n.id for n in name_loads(stmt.test)}, [stmt.body, stmt.orelse])
        return None

    def simple(self, stmt, live: set, record: bool) -> set:
        loads = {n.id for n in name_loads(stmt)}
        if isinstance(stmt, ast.For):  # structure() found it dead; a loop with an else is kept
            if not stmt.orelse:
                return self._dead(stmt, live, record)
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            targets = {t.id for t in stmt.targets}
            if not targets & live and changes_nothing(stmt.value, self.shadowed):
                return self._dead(stmt, live, record)
            return (live - targets) | loads
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            target = stmt.target.id
            if target not in live and target in self.always_fresh and changes_nothing(stmt.value, self.shadowed):
                return self._dead(stmt, live, record)
            return live | loads | {target}
        if isinstance(stmt, ast.Return):
            return loads
        return live | loads  # calls, writes into arrays, anything else: kept, and what they read is live

    def _dead(self, stmt, live: set, record: bool) -> set:
        if record:
            self.dead.append(stmt)
        return live

    @staticmethod
    def _empty(body: list) -> bool:
        return all(isinstance(s, ast.Pass) or is_comment(s) for s in body)


def _is_range(expr, shadowed: set[str]) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range" \
        and "range" not in shadowed and not expr.keywords and all(changes_nothing(a, shadowed) for a in expr.args)


def remove_dead_code(function: ast.FunctionDef, shadowed: set[str]) -> int:
    """Remove what _DeadCode finds, until nothing more goes; the number removed."""
    removed = 0
    while True:
        finder = _DeadCode(function, shadowed)
        finder.block(function.body, set(), True)
        if not finder.dead:
            return removed
        dead = {id(s) for s in finder.dead}
        removed += len(dead)
        for holder in ast.walk(function):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(holder, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    keep = [s for s in block if id(s) not in dead]
                    if len(keep) != len(block):
                        setattr(holder, field, keep or ([] if field == "orelse" else [ast.Pass()]))


def drop_self_assignments(function: ast.FunctionDef) -> int:
    """`x = x` (left where a rule's unbroadcast proved to be nothing) does nothing."""
    dropped = 0
    for holder in ast.walk(function):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                keep = [s for s in block if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                                 and isinstance(s.targets[0], ast.Name)
                                                 and isinstance(s.value, ast.Name)
                                                 and s.targets[0].id == s.value.id)]
                dropped += len(block) - len(keep)
                setattr(holder, field, keep or [ast.Pass()])
    return dropped


def propagate_copies(function: ast.FunctionDef) -> int:
    """`_tN_bar = y_bar`, where both are assigned once, y_bar earlier in the same block and
    every read of _tN_bar follows in that block: those reads read y_bar. (A
    parameter's copy stays: `_t9_bar = out_bar` is where the reverse sweep starts.)"""
    done = 0
    while True:
        loads, stores = count_names(function)
        found = None
        for holder in ast.walk(function):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(holder, field, None)
                if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
                    continue
                for k, stmt in enumerate(block):
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                            and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) \
                            and TEMPORARY.match(stmt.targets[0].id) \
                            and stores.get(stmt.targets[0].id) == 1 and stores.get(stmt.value.id, 0) == 1:
                        copy_name, source = stmt.targets[0].id, stmt.value.id
                        if not any(source in stored_names(s) for s in block[:k]):
                            continue
                        later = sum(1 for s in block[k + 1:] for n in name_loads(s) if n.id == copy_name)
                        if later == loads.get(copy_name, 0):
                            found = (block, k, copy_name, source)
                            break
                if found:
                    break
            if found:
                break
        if found is None:
            return done
        block, k, copy_name, source = found
        del block[k]
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and node.id == copy_name:
                node.id = source
        done += 1
