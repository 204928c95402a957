"""Fold single-use temporaries back into their one use, so that Numba fuses array expressions.

The normalizer writes one operation per statement (`_t3 = _t2 ** 2; _t4 = _t1 - _t3`).
Numba's array-expression rewrite fuses a nested expression into one loop, but not a chain
of statements: each statement allocates and fills an array of its own. This pass runs on
each generated function (Python ast, before black) and

1. drops `runtime.unbroadcast(g, x)` where g provably has x's shape (the helper then
   returns g itself: adjoint_helpers.py), and `runtime.copy(e)` of a freshly
   computed e, so that nothing stands between an adjoint expression and the next one;
2. folds `_tN = <pure expression>` into its only use, where that use is a later statement
   of the same straight-line block and of the same origin comment's group, and nothing in
   between may rebind or mutate what the expression reads;
3. removes assignments whose values nothing reads later (dead_code.py), before the folding.

Only temporaries the normalizer named (`_tN`, their adjoints `_tN_bar` and tangents `_tN_dot`) are folded: the
reader's names stay. The rules are conservative; anything not known to be safe stays as it is.
"""

from __future__ import annotations

import ast

from ..analysis.emitted import TEMPORARY, changes_nothing, foldable, is_comment, is_heading, name_loads
from .adjoint_helpers import drop_unneeded, numbers_for_sum_bars
from .dead_code import drop_self_assignments, propagate_copies, remove_dead_code

# ---- folding --------------------------------------------------------------------------


class _Candidate:
    __slots__ = ("stmt", "name", "value", "reads")

    def __init__(self, stmt: ast.Assign, name: str):
        self.stmt, self.name, self.value = stmt, name, stmt.value
        self.reads = {n.id for n in name_loads(stmt.value)}


class _Folder:
    def __init__(self, function: ast.FunctionDef, shadowed: set[str]):
        self.function = function
        self.shadowed = shadowed
        self.loads: dict[str, int] = {}
        self.stores: dict[str, int] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Name):
                table = self.loads if isinstance(node.ctx, ast.Load) else self.stores
                table[node.id] = table.get(node.id, 0) + 1
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.loads[node.target.id] = self.loads.get(node.target.id, 0) + 1
        for arg in function.args.args:
            self.stores[arg.arg] = self.stores.get(arg.arg, 0) + 1
        self.folded = 0
        self.private = self._private_names()

    def block(self, body: list) -> list:
        out: list = []
        pending: dict[str, _Candidate] = {}
        for stmt in body:
            for child_field in ("body", "orelse", "finalbody"):
                child = getattr(stmt, child_field, None)
                if isinstance(child, list) and child and isinstance(child[0], ast.stmt):
                    setattr(stmt, child_field, self.block(child))
            if is_comment(stmt):
                pending.clear()
                out.append(stmt)
                continue
            for site_holder, field in self._sites(stmt):
                site = getattr(site_holder, field)
                setattr(site_holder, field, self.substitute(site, stmt, pending, out))
            # What the statement does to the candidates still waiting for their use.
            plain = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and changes_nothing(stmt.value, self.shadowed)
            private = self.private_update(stmt)
            if plain:
                target = stmt.targets[0].id
                for key in [k for k, c in pending.items() if target in c.reads]:
                    del pending[key]
            elif private is not None:
                for key in [k for k, c in pending.items() if private in c.reads]:
                    del pending[key]
            else:
                pending.clear()
            out.append(stmt)
            if plain and self.candidate(stmt):
                pending[target] = _Candidate(stmt, target)
        return out

    def private_update(self, stmt) -> str | None:
        """`b[i] += e`, `b[i] = e` or `b += e` where b is private (below), e changes nothing:
        it changes only b's object, which no other name can see. Returns b."""
        if isinstance(stmt, ast.AugAssign):
            target, value = stmt.target, stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if not isinstance(target, ast.Subscript):
                return None
        else:
            return None
        base = target.value if isinstance(target, ast.Subscript) else target
        if not isinstance(base, ast.Name) or not changes_nothing(value, self.shadowed):
            return None
        if isinstance(target, ast.Subscript) and not changes_nothing(target.slice, self.shadowed):
            return None
        return base.id if base.id in self.private else None

    def _private_names(self) -> set[str]:
        """Names whose object no other name refers to: every assignment gives them a new
        object (runtime.zeros_like(x), runtime.copy(x), arithmetic), and they are read only
        where nothing keeps a reference: as the base of an in-place update, the argument
        of runtime.copy, or in the final return."""
        fresh_calls = {"zeros_like", "zeros_shaped", "copy"}
        ok: dict[str, bool] = {}
        allowed: set[int] = set()  # ids of Name nodes in allowed places
        for node in ast.walk(self.function):
            if isinstance(node, ast.AugAssign):
                base = node.target.value if isinstance(node.target, ast.Subscript) else node.target
                allowed.add(id(base))
            elif isinstance(node, (ast.Assign,)) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Subscript):
                allowed.add(id(node.targets[0].value))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
                    and node.func.attr == "copy" and "runtime" not in self.shadowed:
                allowed.update(id(a) for a in node.args)
        last = self.function.body[-1] if self.function.body else None
        if isinstance(last, ast.Return) and last.value is not None:
            allowed.update(id(n) for n in ast.walk(last.value) if isinstance(n, ast.Name))
        for node in ast.walk(self.function):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                            value = node.value
                            # Arithmetic always builds a new object (or a number).
                            fresh = t is n and len(node.targets) == 1 and (
                                isinstance(value, (ast.BinOp, ast.UnaryOp)) or isinstance(value, ast.Call)
                                and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name)
                                and value.func.value.id == "runtime" and "runtime" not in self.shadowed
                                and value.func.attr in fresh_calls)
                            ok[n.id] = ok.get(n.id, True) and fresh
            elif isinstance(node, (ast.For, ast.comprehension)):
                for n in ast.walk(node.target):
                    if isinstance(n, ast.Name):
                        ok[n.id] = False
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in allowed:
                ok[node.id] = False
        for arg in self.function.args.args:
            ok[arg.arg] = False
        return {n for n, good in ok.items() if good}

    @staticmethod
    def _sites(stmt) -> list[tuple]:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Tuple):
            return []  # return (value, tangent): the reader finds each part named above
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)) and stmt.value is not None:
            return [(stmt, "value")]
        if isinstance(stmt, ast.If):
            return [(stmt, "test")]
        return []

    def candidate(self, stmt: ast.Assign) -> bool:
        target = stmt.targets[0].id
        return bool(TEMPORARY.match(target)) and self.stores.get(target, 0) == 1 \
            and self.loads.get(target, 0) == 1 and foldable(stmt.value, self.shadowed)

    def substitute(self, site: ast.expr, stmt, pending: dict, out: list) -> ast.expr:
        if not pending:
            return site
        folder = self

        class Replace(ast.NodeTransformer):
            def visit_Name(self, node):
                cand = pending.get(node.id)
                if cand is None or not isinstance(node.ctx, ast.Load):
                    return node
                del pending[node.id]
                out.remove(cand.stmt)
                folder.folded += 1
                # Its own operands may be temporaries waiting too (_t4 = _t1 - _t3).
                return Replace().visit(cand.value)

        # Calls evaluated alongside the use must change nothing: otherwise the folded value
        # could be computed after a change it did not see before.
        if not changes_nothing(site, self.shadowed) and not self._outer_call_only(site):
            return site
        return Replace().visit(site)

    def _outer_call_only(self, site: ast.expr) -> bool:
        """f(a, b) whose arguments change nothing: f runs after they are all evaluated."""
        return isinstance(site, ast.Call) and all(changes_nothing(a, self.shadowed) for a in site.args) \
            and all(changes_nothing(k.value, self.shadowed) for k in site.keywords) \
            and changes_nothing(site.func.value if isinstance(site.func, ast.Attribute) else site.func,
                                self.shadowed)


def fuse_function(function: ast.FunctionDef, shadowed: set[str] = frozenset(),
                  headings: set[int] | None = None) -> ast.FunctionDef:
    """Apply the pass to one generated function in place (and return it).

    shadowed: names that the module binds to something else than the modules and builtins
    the rules know (a user function called `max`), whose calls are then left alone.
    """
    drop_unneeded(function, set(shadowed))
    drop_self_assignments(function)
    remove_dead_code(function, set(shadowed))
    propagate_copies(function)
    function.body = _Folder(function, set(shadowed)).block(function.body)
    if numbers_for_sum_bars(function, set(shadowed)):
        propagate_copies(function)
        function.body = _Folder(function, set(shadowed)).block(function.body)
    _drop_empty_groups(function, headings)
    return function


def _drop_empty_groups(function: ast.FunctionDef, headings: set[int] | None) -> None:
    """An origin comment whose statements all went (dead, or copies propagated). headings:
    the indices of origin comments (None: every comment); other comments, such as the lines
    of a longer note, stay where they are."""
    for holder in ast.walk(function):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                keep = [stmt for k, stmt in enumerate(block)
                        if not (is_heading(stmt, headings) and (k + 1 == len(block) or is_comment(block[k + 1])))]
                setattr(holder, field, keep or [ast.Pass()])


def fuse_module(body: list[ast.stmt], headings: set[int] | None = None) -> list[ast.stmt]:
    """The pass on every function of a generated module."""
    defined = {stmt.name for stmt in body if isinstance(stmt, ast.FunctionDef)}
    defined |= {t.id for stmt in body if isinstance(stmt, ast.Assign) for t in stmt.targets if isinstance(t, ast.Name)}
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef):
            fuse_function(stmt, defined, headings)
    return body
