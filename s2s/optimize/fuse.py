"""Fold single-use temporaries back into their one use, so that Numba fuses array expressions.

The normalizer writes one operation per statement (`_t3 = _t2 ** 2; _t4 = _t1 - _t3`).
Numba's array-expression rewrite fuses a nested expression into one loop, but not a chain
of statements: each statement allocates and fills an array of its own. This pass runs on
each generated function (Python ast, before black) and

1. drops `runtime.unbroadcast(g, x)` where g provably has x's shape (the helper then
   returns g itself), and `runtime.copy(e)` of a freshly computed e, so that nothing
   stands between an adjoint expression and the next one;
2. folds `_tN = <pure expression>` into its only use, where that use is a later statement
   of the same straight-line block and of the same origin comment's group, and nothing in
   between may rebind or mutate what the expression reads;
3. removes assignments whose values nothing reads later (_DeadCode), before the folding.

Only temporaries the normalizer named (`_tN`, their adjoints `_tN_bar` and tangents `_tN_dot`) are folded: the
reader's names stay. The rules are conservative; anything not known to be safe stays as it is.
"""

from __future__ import annotations

import ast
import re

from ..rules import facts, spelled

TEMPORARY = re.compile(r"^_t\d+(_bar|_dot)?$")
_COMMENT = re.compile(r"^__s2s_comment_(\d+)__$")

def _called(node: ast.Call, shadowed: set[str]):
    """The function a call of generated code names (`np.sin`, `runtime.copy`, `abs`), None
    where it is not one of NumPy's, math's, the runtime's or a builtin, or its name is shadowed."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return spelled(func.value.id, func.attr) if func.value.id not in shadowed else None
    if isinstance(func, ast.Name) and func.id not in shadowed:
        return spelled(None, func.id)
    return None


def _call_kind(node: ast.Call, shadowed: set[str]) -> str | None:
    """"fusable" (an elementwise function), "pure" (reads only) or None (may change something),
    as the templates declare it (s2s.rules.Facts)."""
    if any(kw.arg == "out" or kw.arg is None for kw in node.keywords):
        return None
    known = facts(_called(node, shadowed))
    return "fusable" if known.fusable else "pure" if known.pure else None


_READ_ONLY = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp,
              ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Attribute, ast.Call, ast.Dict, ast.keyword,
              ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def changes_nothing(expr: ast.expr, shadowed: set[str]) -> bool:
    """Evaluating expr reads values and builds new ones; it changes no existing object."""
    for node in ast.walk(expr):
        if not isinstance(node, _READ_ONLY):
            return False
        if isinstance(node, ast.Call) and _call_kind(node, shadowed) is None:
            return False
    return True


def foldable(expr: ast.expr, shadowed: set[str]) -> bool:
    """An expression worth moving into its use: arithmetic, comparisons, reads and
    elementwise functions, which Numba fuses with the expression around them."""
    for node in ast.walk(expr):
        if isinstance(node, (ast.List, ast.Dict, ast.BoolOp, ast.IfExp)):
            return False
        if not isinstance(node, _READ_ONLY):
            return False
        if isinstance(node, ast.Call) and _call_kind(node, shadowed) != "fusable":
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return False
    return True


def _loads(node) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _stores(node) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


def _is_comment(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Name) and bool(_COMMENT.match(stmt.value.id))


def _is_heading(stmt, headings: set[int] | None) -> bool:
    return _is_comment(stmt) and (headings is None or int(_COMMENT.match(stmt.value.id).group(1)) in headings)


def _child_blocks(stmt) -> list[list]:
    return [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]


# ---- 1. adjoint helpers that do nothing here ------------------------------------------
#
# A forward pass over the function gives each expression a shape class where one is
# known: two expressions of one class have equal shapes. Classes come from slices of one
# array (x[1:] and x[:-1] have equal shapes: max(0, n - 1) rows), elementwise arithmetic
# with a number or between operands of one class, elementwise functions, and the adjoint
# helpers themselves (unbroadcast(g, x) has x's shape, sum_bar(g, x) too). Only classes of
# arrays of one or more dimensions are compared (a slice proves that), so a 0-d array
# never stands in for a number under Numba.

_SCALAR = ("number",)


class _Info:
    __slots__ = ("cls", "numeric", "nd")

    def __init__(self, cls, numeric: bool, nd: bool):
        self.cls, self.numeric, self.nd = cls, numeric, nd


def _root(cls):
    while isinstance(cls, tuple) and cls and cls[0] == "slice":
        cls = cls[1]
    return cls


class _Shapes:
    def __init__(self, shadowed: set[str]):
        self.env: dict[str, _Info] = {}
        self.shadowed = shadowed
        self.dropped = 0
        self.as_number: set[str] = set()
        # sum_bar(g, x) over all axes, assigned to a temporary: name -> [statement, x's
        # class, uses where the number g would do as well]
        self.sum_bars: dict[str, list] = {}

    def info(self, node) -> _Info | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return _Info(_SCALAR, True, False)
            return None
        if isinstance(node, ast.Name):
            return _Info(_SCALAR, True, False) if node.id in self.as_number else self.env.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.info(node.operand)
            return _Info(inner.cls, True, inner.nd) if inner else None
        if isinstance(node, ast.BinOp):
            return self.elementwise(node.op, self.info(node.left), self.info(node.right),
                                    [node.left, node.right])
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return None

    def elementwise(self, op, a: _Info | None, b: _Info | None, operands) -> _Info | None:
        if a is None or b is None:
            return None
        if isinstance(op, (ast.Sub, ast.Div, ast.Pow, ast.FloorDiv)) or op is None:
            numeric = True  # not defined on lists and tuples
        elif isinstance(op, (ast.Add, ast.Mult)):
            # lst + lst and lst * 2 are not elementwise: one side must be known numeric,
            # or a float (lst * 2.0 fails).
            floats = any(isinstance(o, ast.Constant) and isinstance(o.value, float) for o in operands)
            numeric = floats or (a.numeric and b.numeric) or (a.cls != _SCALAR and b.cls != _SCALAR
                                                              and (a.numeric or b.numeric))
            if not numeric:
                return None
        else:
            return None
        if a.cls == _SCALAR:
            return _Info(b.cls, True, b.nd)
        if b.cls == _SCALAR:
            return _Info(a.cls, True, a.nd)
        if a.cls == b.cls:
            return _Info(a.cls, True, a.nd or b.nd)
        return None

    def subscript(self, node: ast.Subscript) -> _Info | None:
        """x[a:-b] (a, b >= 0 constants) has max(0, n - a - b) rows: the class (x, a + b)."""
        base = self.info(node.value)
        index = node.slice
        if base is None or base.cls == _SCALAR or not isinstance(index, ast.Slice) or index.step is not None:
            return None
        lower = 0 if index.lower is None else _int_constant(index.lower)
        upper = 0 if index.upper is None else _int_constant(index.upper)
        if lower is None or upper is None or lower < 0 or upper > 0 or (index.upper is not None and upper == 0):
            return None
        root, trim = base.cls, 0
        if isinstance(root, tuple) and root and root[0] == "slice":
            root, trim = root[1], root[2]
        return _Info(("slice", root, trim + lower - upper), base.numeric, True)

    def call(self, node: ast.Call) -> _Info | None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)) or node.keywords:
            return None
        module, attr, args = func.value.id, func.attr, node.args
        if module in self.shadowed:
            return None
        if module == "runtime" and attr in ("unbroadcast", "sum_bar") and len(args) == 2:
            like = self.info(args[1])
            return _Info(like.cls, True, like.nd) if like and like.cls != _SCALAR else None
        if module == "runtime" and attr == "copy" and len(args) == 1:
            return self.info(args[0])
        known = facts(spelled(module, attr))
        if module == "np" and known.elementwise and known.arity == len(args):  # a ufunc, one result
            if len(args) == 1:
                inner = self.info(args[0])
                return _Info(inner.cls, True, inner.nd) if inner else None
            if len(args) == 2:
                return self.elementwise(None, self.info(args[0]), self.info(args[1]), args)
        return None

    # ---- the pass over statements --------------------------------------------------

    def kill(self, names: set[str]):
        for n in names:
            self.env.pop(n, None)

    def kill_root(self, name: str):
        """name's object may change size (lst.append): so may everything that shares its root."""
        info = self.env.get(name)
        if info is None:
            return
        root = _root(info.cls)
        for n, i in list(self.env.items()):
            if _root(i.cls) == root:
                del self.env[n]

    def simplify(self, node: ast.expr) -> ast.expr:
        """Drop unbroadcast(g, x) with g of x's class, and copy(fresh)."""
        for field, child in ast.iter_fields(node):
            if isinstance(child, ast.expr):
                setattr(node, field, self.simplify(child))
            elif isinstance(child, list):
                setattr(node, field, [self.simplify(c) if isinstance(c, ast.expr) else c for c in child])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
                and "runtime" not in self.shadowed and not node.keywords:
            attr, args = node.func.attr, node.args
            if attr == "unbroadcast" and len(args) == 2:
                g, like = self.info(args[0]), self.info(args[1])
                if g and like and g.cls == like.cls and g.cls != _SCALAR and (g.nd or like.nd) and g.numeric:
                    self.dropped += 1
                    return args[0]
            if attr == "copy" and len(args) == 1 and self._fresh(args[0]):
                self.dropped += 1
                return args[0]
        return node

    def _fresh(self, node) -> bool:
        """A new numeric value that nothing else refers to (arithmetic on arrays or numbers)."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return True
        if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
            return True
        if isinstance(node, ast.BinOp):  # + and * of numbers, not of lists or tuples
            info = self.info(node)
            return info is not None and info.numeric
        return False

    def block(self, body: list) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
                assigned = _stores(stmt)
                loop = isinstance(stmt, (ast.For, ast.While))
                if isinstance(stmt, ast.If):
                    stmt.test = self.simplify(stmt.test)
                if loop:
                    self.kill(assigned)
                    self._kill_mutated(stmt)
                saved = dict(self.env)
                for child in _child_blocks(stmt):
                    self.env = dict(saved)
                    self.block(child)
                self.env = saved
                self.kill(assigned)
                self._kill_mutated(stmt)
                continue
            for field in ("value", "test"):
                if isinstance(getattr(stmt, field, None), ast.expr):
                    setattr(stmt, field, self.simplify(getattr(stmt, field)))
            self.check_sum_bar_uses(stmt)
            self._kill_mutated(stmt)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            for target in targets:
                # lst[1:3] = [...] may resize a list; an array keeps its shape, but be safe.
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                        and isinstance(target.slice, ast.Slice):
                    self.kill_root(target.value.id)
            if isinstance(stmt, ast.Assign):
                value = self.info(stmt.value) if changes_nothing(stmt.value, self.shadowed) else None
                names = _stores(stmt)
                self.kill(names)
                if value is not None and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self.env[stmt.targets[0].id] = value
                    if _is_runtime_call(stmt.value, "sum_bar", self.shadowed) and len(stmt.value.args) == 2 \
                            and value.nd and TEMPORARY.match(stmt.targets[0].id):
                        self.sum_bars[stmt.targets[0].id] = [stmt, value.cls, 0]
            else:
                self.kill(_stores(stmt))

    def check_sum_bar_uses(self, stmt) -> None:
        """Count the uses of sum_bar temporaries that sit in an elementwise expression whose
        shape another operand fixes: there, the number g broadcasts to the same values."""
        if not self.sum_bars:
            return
        parents = {}
        for node in ast.walk(stmt):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in self.sum_bars):
                continue
            entry = self.sum_bars[node.id]
            top = node
            while True:
                parent = parents.get(id(top))
                if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC) \
                        or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)) \
                        or isinstance(parent, ast.Call) and top in parent.args \
                        and _call_kind(parent, self.shadowed) == "fusable" \
                        and isinstance(parent.func, ast.Attribute) and parent.func.value.id == "np":
                    top = parent
                    continue
                break
            if top is node:
                continue
            whole = self.info(top)
            self.as_number = {node.id}
            alone = self.info(top)
            self.as_number = set()
            if whole and alone and whole.cls == entry[1] and alone.cls == entry[1] and alone.nd:
                entry[2] += 1

    def _kill_mutated(self, stmt) -> None:
        """Objects a statement may resize: receivers of method calls, arguments of calls not
        known to change nothing, names deleted."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _call_kind(node, self.shadowed) is None:
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    self.kill_root(node.func.value.id)
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    for n in _loads(arg):
                        self.kill_root(n.id)


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)


def _is_runtime_call(node, helper: str, shadowed) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
        and node.func.attr == helper and "runtime" not in shadowed and not node.keywords


def _int_constant(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_constant(node.operand)
        return -inner if inner is not None else None
    return None


# ---- 2. folding ----------------------------------------------------------------------


class _Candidate:
    __slots__ = ("stmt", "name", "value", "reads")

    def __init__(self, stmt: ast.Assign, name: str):
        self.stmt, self.name, self.value = stmt, name, stmt.value
        self.reads = {n.id for n in _loads(stmt.value)}


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
            if _is_comment(stmt):
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


_FRESH = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare)


class _DeadCode:
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

    def block(self, block: list, live: set, record: bool) -> set:
        for stmt in reversed(block):
            live = self.stmt(stmt, live, record)
        return live

    def stmt(self, stmt, live: set, record: bool) -> set:
        loads = {n.id for n in _loads(stmt)}
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
        if isinstance(stmt, ast.For) and not stmt.orelse:
            head = self._loop_head(stmt.body, live, set(), _stores(stmt.target))
            if record:
                self.block(stmt.body, head, True)
            if self._empty(stmt.body) and not _stores(stmt.target) & live and _is_range(stmt.iter, self.shadowed):
                return self._dead(stmt, live, record)
            return head | {n.id for n in _loads(stmt.iter)}
        if isinstance(stmt, ast.While) and not stmt.orelse:
            test = {n.id for n in _loads(stmt.test)}
            head = self._loop_head(stmt.body, live, test, set())
            if record:
                self.block(stmt.body, head, True)
            return head
        if isinstance(stmt, ast.If):
            test = {n.id for n in _loads(stmt.test)}
            return test | self.block(stmt.body, set(live), record) | self.block(stmt.orelse, set(live), record)
        if isinstance(stmt, ast.Return):
            return loads
        return live | loads  # calls, writes into arrays, anything else: kept, and what they read is live

    def _loop_head(self, body: list, after: set, test: set, bound: set) -> set:
        """What is live where each iteration starts (and so before the loop): a fixpoint.
        bound: the loop's variables, which each iteration binds before its body reads them
        (after the loop they keep their last value, or their old one if it never ran)."""
        head = after | test
        while True:
            new = after | test | (self.block(body, set(head), False) - bound)
            if new == head:
                return head
            head = new

    def _dead(self, stmt, live: set, record: bool) -> set:
        if record:
            self.dead.append(stmt)
        return live

    @staticmethod
    def _empty(body: list) -> bool:
        return all(isinstance(s, ast.Pass) or _is_comment(s) for s in body)


def _is_range(expr, shadowed: set[str]) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range" \
        and "range" not in shadowed and not expr.keywords and all(changes_nothing(a, shadowed) for a in expr.args)


def _dead_code(function: ast.FunctionDef, shadowed: set[str]) -> int:
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


def _count_names(function) -> tuple[dict, dict]:
    loads: dict[str, int] = {}
    stores: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            table = loads if isinstance(node.ctx, ast.Load) else stores
            table[node.id] = table.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loads[node.target.id] = loads.get(node.target.id, 0) + 1
    return loads, stores


def _drop_self_assignments(function: ast.FunctionDef) -> int:
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


def _propagate_copies(function: ast.FunctionDef) -> int:
    """`_tN_bar = y_bar`, where both are assigned once, y_bar earlier in the same block and
    every read of _tN_bar follows in that block: those reads read y_bar. (A
    parameter's copy stays: `_t9_bar = out_bar` is where the reverse sweep starts.)"""
    done = 0
    while True:
        loads, stores = _count_names(function)
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
                        if not any(source in _stores(s) for s in block[:k]):
                            continue
                        later = sum(1 for s in block[k + 1:] for n in _loads(s) if n.id == copy_name)
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


def _numbers_for_sum_bars(function: ast.FunctionDef, shadowed: set[str]) -> int:
    """`_t_bar = runtime.sum_bar(g, x)` -> `_t_bar = g` where every use of _t_bar is in an
    elementwise expression that another operand of x's shape shapes: the number broadcasts,
    and no array of x's shape is filled."""
    shapes = _Shapes(shadowed)
    for arg in function.args.args:
        shapes.env[arg.arg] = _Info(("parameter", arg.arg), False, False)
    shapes.block(function.body)
    loads, stores = _count_names(function)
    replaced = 0
    for name, (stmt, _, good) in shapes.sum_bars.items():
        if stores.get(name) == 1 and good == loads.get(name, 0) and good > 0:
            stmt.value = stmt.value.args[0]
            replaced += 1
    return replaced


def fuse_function(function: ast.FunctionDef, shadowed: set[str] = frozenset(),
                  headings: set[int] | None = None) -> ast.FunctionDef:
    """Apply the pass to one generated function in place (and return it).

    shadowed: names that the module binds to something else than the modules and builtins
    the rules know (a user function called `max`), whose calls are then left alone.
    """
    shapes = _Shapes(set(shadowed))
    for arg in function.args.args:
        shapes.env[arg.arg] = _Info(("parameter", arg.arg), False, False)
    shapes.block(function.body)
    _drop_self_assignments(function)
    _dead_code(function, set(shadowed))
    _propagate_copies(function)
    function.body = _Folder(function, set(shadowed)).block(function.body)
    if _numbers_for_sum_bars(function, set(shadowed)):
        _propagate_copies(function)
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
                        if not (_is_heading(stmt, headings) and (k + 1 == len(block) or _is_comment(block[k + 1])))]
                setattr(holder, field, keep or [ast.Pass()])


def fuse_module(body: list[ast.stmt], headings: set[int] | None = None) -> list[ast.stmt]:
    """The pass on every function of a generated module."""
    defined = {stmt.name for stmt in body if isinstance(stmt, ast.FunctionDef)}
    defined |= {t.id for stmt in body if isinstance(stmt, ast.Assign) for t in stmt.targets if isinstance(t, ast.Name)}
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef):
            fuse_function(stmt, defined, headings)
    return body
