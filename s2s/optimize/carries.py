"""Loop carries that start as a number and become arrays: a variable has one type under Numba.

    s = 0.0
    for i in range(3):
        s = s + x * i

NumPy makes s an array on the first iteration; Numba cannot unify the float that enters the
loop with the array it carries ("Cannot unify float64 and array(float64, 1d, C)"). Where s was
last bound to a number written in the code before a range loop (or a while loop, whose test
changes nothing), the loop's first statement that
binds s gives it, by its shape class (analysis/code_shapes.py), an array of the shape of a
name bound before the loop, and s reaches that value through elementwise operations only, the
loop starts from s broadcast to that shape:

    s = runtime.carry_like(s, x)        # before the loop

which is s itself on the python backend (NumPy's own semantics, untouched) and, under Numba,
np.full(x.shape, s) where x is an array (s where it is a number). Broadcasting a number into an
elementwise expression does not change the expression's values, so the first iteration
computes what NumPy computes; the later ones see arrays either way. Reads of s that record it
for a reverse sweep (its tape, its shape tape) are allowed: they see the array, as every later
iteration's do, and the adjoint that flows back to the number written before the loop is dropped.

Where the loop makes s the broadcast of values whose shapes the analysis does not relate
(`s = s + w * x * i` of two array arguments, or a ufunc of them), s starts broadcast to their
broadcast shape, `runtime.carry_like(s, (w, x))`.

A row of an argument (`s = s + X[i] ** 2`, `s = s + X[i] * w[i]`) has no name before the loop:
in code specialised to arguments of which one has rows (X of two or more dimensions), the loop
starts from s broadcast to the shape of the items of X (and w, broadcast together),

    s = runtime.carry_like_item(s, (X, w), (n,), where="model.py:12")

(items of a vector are numbers: the loop stays as it is written).

After a loop that ran no iteration NumPy still has the number, which compiled code cannot
give: where the trip count is not a constant, carry_like is also given range's arguments (of a
while loop, its test read once before the loop) and the user's statement, and its compiled form refuses a loop of no iteration. Temporaries computed
from s in the loop before s is bound must be read there only (after it, their first value would
be an array where NumPy's is a number). What the analysis cannot prove is left as it is (and
Numba's refusal names the way out).
"""

from __future__ import annotations

import ast
import copy

from ..analysis.code_shapes import INTEGER, NUMBER, TOP, CodeShapes, FlowShapes, _same_class, dotted_call
from ..analysis.emitted import changes_nothing, child_blocks, is_comment, name_loads, stored_names
from ..rules import facts, spelled

# Runtime helpers that record a value for the reverse sweep (its tape, its shape tape).
_RECORDERS = ("new_tape", "push_shape")


def _number(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _elementwise_in(node, tainted: set[str]) -> bool:
    """Every read of a tainted name in node is an operand of elementwise operations only, up to node."""
    if not any(n.id in tainted for n in name_loads(node)):
        return True
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return _elementwise_in(node.left, tainted) and _elementwise_in(node.right, tainted)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _elementwise_in(node.operand, tainted)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _elementwise_in(node.left, tainted) and _elementwise_in(node.comparators[0], tainted)
    dotted = dotted_call(node)
    if dotted is not None and not node.keywords:
        known = facts(spelled(*dotted))
        if known.elementwise and known.arity == len(node.args):
            return all(_elementwise_in(a, tainted) for a in node.args)
    return False


class _CarryShapes(CodeShapes):
    """The shape analysis, with a class for the broadcast of several values whose shapes it does
    not relate (`w * x` of two array arguments): ("broadcast", their roots), of the shape NumPy
    broadcasts them to, which is all a carry started from a number needs."""

    def of(self, node):
        found = super().of(node)
        if found is not None:
            return found
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
            operands = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operands = [node.operand]
        else:
            dotted = dotted_call(node)
            known = facts(spelled(*dotted)) if dotted is not None and not node.keywords else None
            if known is None or not known.elementwise or known.arity != len(node.args):
                return found
            operands = node.args
        roots = set()
        for operand in (self.of(o) for o in operands):
            if operand is None or operand is TOP:
                return found
            if operand[0] == "value" and operand[2]:  # (a value proved numeric: not a list)
                roots.add(operand[1])
            elif operand[0] == "broadcast":
                roots.update(operand[1])
            elif operand[0] != "num":
                return found
        return ("broadcast", tuple(sorted(roots))) if len(roots) > 1 or any(
            self.of(o) is not None and self.of(o)[0] == "broadcast" for o in operands) else found


def _tape(node) -> bool:
    """A tape of the reverse sweep (generated code names them `<name>_tape`)."""
    return isinstance(node, ast.Name) and node.id.endswith("_tape")


def _recorded(stmt, tainted: set[str]) -> bool:
    """Every read of a tainted name in stmt records the value for the reverse sweep: an
    argument of a recorder (runtime.push_shape(tape, s)), or the value stored into a tape
    (`s_tape[k] = s`) or appended to one (`s_tape.append(runtime.copy(s))`)."""
    allowed: set[int] = set()
    for node in ast.walk(stmt):
        dotted = dotted_call(node)
        if dotted is not None and dotted[0] == "runtime" and dotted[1] in _RECORDERS:
            allowed.update(id(a) for a in node.args if isinstance(a, ast.Name))
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Subscript) and _tape(t.value) for t in node.targets):
            allowed.add(id(node.value))
        elif dotted is not None and dotted[1] == "append" and _tape(node.func.value) and len(node.args) == 1:
            item = node.args[0]
            if dotted_call(item) == ("runtime", "copy") and len(item.args) == 1:
                item = item.args[0]
            allowed.add(id(item))
    return all(id(n) in allowed for n in name_loads(stmt) if n.id in tainted)


def _entry_test(loop) -> ast.expr | None:
    """The test of a while loop as generated code writes it (`while True:` whose first statements
    compute the test, `if not <test>: break`), as one expression of what it reads, where
    evaluating it changes nothing: before the loop it says whether the loop runs an iteration."""
    if not (isinstance(loop, ast.While) and isinstance(loop.test, ast.Constant) and loop.test.value is True):
        return None
    computed: dict[str, ast.expr] = {}  # the temporaries the test is computed in, by their values
    for stmt in loop.body:
        if is_comment(stmt):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and changes_nothing(stmt.value, frozenset()):
            computed[stmt.targets[0].id] = _substituted(stmt.value, computed)
            continue
        joined = _short_circuit(stmt, computed)
        if joined is not None:  # (`a and b`, `a or b`: the second computed where the first decides)
            computed[joined[0]] = joined[1]
            continue
        if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Break) \
                and isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not) \
                and changes_nothing(stmt.test.operand, frozenset()):
            return _substituted(stmt.test.operand, computed)
        return None
    return None


def _short_circuit(stmt, computed: dict[str, ast.expr]) -> tuple[str, ast.expr] | None:
    """(t, `a and b`) of `if t: ...; t = b` where t holds a (`a or b` of `if not t: ...; t = b`),
    the body's statements computing b."""
    if not (isinstance(stmt, ast.If) and not stmt.orelse):
        return None
    negated = isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
    name = stmt.test.operand if negated else stmt.test
    if not (isinstance(name, ast.Name) and name.id in computed):
        return None
    local = dict(computed)
    for body in stmt.body:
        if is_comment(body):
            continue
        if not (isinstance(body, ast.Assign) and len(body.targets) == 1 and isinstance(body.targets[0], ast.Name)
                and changes_nothing(body.value, frozenset())):
            return None
        local[body.targets[0].id] = _substituted(body.value, local)
    if local[name.id] is computed[name.id]:
        return None
    return name.id, ast.BoolOp(ast.Or() if negated else ast.And(), [computed[name.id], local[name.id]])


def _substituted(expr: ast.expr, values: dict[str, ast.expr]) -> ast.expr:
    """expr with the names that values holds replaced by (copies of) their values."""

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name):
            return copy.deepcopy(values[node.id]) if isinstance(node.ctx, ast.Load) and node.id in values else node

    return Substitute().visit(copy.deepcopy(expr))


def _range_trips(loop) -> tuple[bool, int | None]:
    """(whether the loop is `for name in range(...)`, its trip count where its arguments are int constants)."""
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range" and not loop.iter.keywords
            and 1 <= len(loop.iter.args) <= 3 and all(changes_nothing(a, frozenset()) for a in loop.iter.args)):
        return False, None
    values = [a.value if isinstance(a, ast.Constant) else -a.operand.value
              if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, ast.Constant)
              else None for a in loop.iter.args]
    if any(type(v) is not int for v in values):
        return True, None
    return True, len(range(*values))


class _Carries:
    def __init__(self, function: ast.FunctionDef, comments: list[str], origins, ndims: dict):
        # Arrays or not (the overload decides); a tangent parameter x_dot has its primal x's shape
        # (s2s.jvp checks it), so that a tangent carry (s_dot) starts as an array too.
        params = [a.arg for a in function.args.args]
        seeds = {p: ("value", p, True) for p in params}
        if function.name.endswith("_jvp"):
            seeds.update((p, seeds[p[:-len("_dot")]]) for p in params if p.endswith("_dot") and p[:-len("_dot")] in seeds)
        self.flow = FlowShapes(function, seeds)
        self.function = function
        self.comments, self.origins = comments, origins
        self.ndims = ndims  # {parameter: its array argument's ndim}, in code specialised to its arguments

    def block(self, body: list) -> list:
        out = []
        for k, stmt in enumerate(body):
            for child in child_blocks(stmt):
                child[:] = self.block(child)
            is_range, trips = _range_trips(stmt)
            entry_test = _entry_test(stmt)
            if is_range and trips != 0 or entry_test is not None:
                numbers = self._numbers_before(body, k)
                if numbers:
                    for name, (like, item) in sorted(self._promotions(stmt, numbers).items()):
                        out.append(self._carry_like(name, like, item, stmt, trips, body[:k]))
            out.append(stmt)
        return out

    def _carry_like(self, name: str, likes: list, item: bool, loop, trips, before: list) -> ast.Assign:
        like = ast.Name(likes[0], ast.Load()) if len(likes) == 1 else ast.Tuple(
            [ast.Name(n, ast.Load()) for n in likes], ast.Load())
        args = [ast.Name(name, ast.Load()), like]
        keywords = []
        if trips is None:  # (a loop of no iteration is refused: NumPy keeps the number)
            # (of a range loop, its range's arguments; of a while loop, its test on entry)
            args.append(copy.deepcopy(_entry_test(loop)) if isinstance(loop, ast.While) else
                        ast.Tuple([copy.deepcopy(a) for a in loop.iter.args], ast.Load()))
            where = self._where(before)
            if where is not None:
                keywords.append(ast.keyword("where", ast.Constant(where)))
        helper = "carry_like_item" if item else "carry_like"
        call = ast.Call(ast.Attribute(ast.Name("runtime", ast.Load()), helper, ast.Load()), args, keywords)
        return ast.Assign([ast.Name(name, ast.Store())], call, lineno=0)

    def _where(self, before: list) -> str | None:
        """The user's statement (file:line) of the loop: the origin comment above it."""
        for stmt in reversed(before):
            if is_comment(stmt):
                k = int(stmt.value.id[len("__s2s_comment_"):-2])
                if k in self.origins:
                    return self.comments[k].split("Grad of: ")[-1].split("  ")[0]
        return None

    @staticmethod
    def _numbers_before(body: list, k: int) -> set[str]:
        """Names the loop body[k] binds whose last binding before it, in this block, is a number:
        one written there, or the zero tangent of one (runtime.zeros_like(s))."""
        bound = {t.id for s in body[k].body if isinstance(s, (ast.Assign, ast.AugAssign))
                 for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}

        def number_at(name: str, end: int) -> bool:
            for j in range(end - 1, -1, -1):
                stmt = body[j]
                if name not in stored_names(stmt):
                    continue
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name)):
                    return False
                value = stmt.value
                if dotted_call(value) == ("runtime", "zeros_like") and len(value.args) == 1 \
                        and isinstance(value.args[0], ast.Name):
                    return number_at(value.args[0].id, j)
                return _number(value)
            return False

        return {name for name in bound if number_at(name, k)}

    def _promotions(self, loop: ast.For | ast.While, numbers: set[str]) -> dict[str, str]:
        """The carries among `numbers` to start as arrays, each with a name bound before the
        loop of the shape its first value in the loop has; {} where that is not proved safe.

        The loop's first iteration is followed with the numbers as numbers: every statement
        that reads them, or what was computed from them (tainted), must compute elementwise
        (so that broadcasting them first changes no value) or record the value for the reverse
        sweep. A tainted name that is not an array there (s * 0.5) changes from a number to an
        array: it must not be read outside the loop, nor in the loop before it is bound."""
        before = self.flow.before.get(id(loop), {})
        walked = self._first_iteration(loop, numbers, set(), before)  # (the first values' classes only)
        if walked is None:
            return {}
        promoted = {}
        for name in numbers:
            shape = walked[0].get(name)
            if shape is None or shape is TOP or shape[0] not in ("arr", "value", "rows", "item", "broadcast"):
                continue
            if shape[0] == "broadcast":  # w * x: of the shape the values w and x name on entry broadcast to
                likes = [self._like(before, numbers, ("value", root, True)) for root in shape[1]]
                if None not in likes:
                    promoted[name] = (likes, False)
                continue
            if shape[0] == "item":  # x[i] (* w[i]): of the shape of the items of the values x (and w) name on entry
                # (only where an argument is known to have rows: items of a vector are numbers, and
                # code for any argument keeps the loop as it is written)
                likes = [self._like(before, numbers, ("value", root, shape[2])) for root in shape[1]]
                if None not in likes and any(self.ndims.get(root, 0) >= 2 for root in shape[1]):
                    promoted[name] = (likes, True)
                continue
            like = self._like(before, numbers, shape)
            if like is not None:
                promoted[name] = ([like], False)
        walked = self._first_iteration(loop, numbers, set(promoted), before) if promoted else None
        if walked is None:
            return {}
        first, tainted, bound_at = walked
        # A tainted name that is not an array of a promoted carry's shape in the first iteration
        # becomes one: read only in the loop, after it is bound there.
        shapes = [first[n] for n in promoted]
        for name in tainted - set(promoted):
            if first.get(name) is not None and first[name] in shapes:
                continue
            if name in numbers:
                return {}  # (a carry that would change type: leave the loop as it is)
            later = {id(n) for stmt in loop.body[bound_at[name] + 1:] for n in name_loads(stmt)}
            if any(n.id == name and id(n) not in later for n in name_loads(self.function)):
                return {}
        return promoted

    @staticmethod
    def _like(before: dict, numbers: set[str], shape) -> str | None:
        """A name bound before the loop to a value of this class."""
        return next((n for n, c in sorted(before.items()) if n not in numbers and c is not None and c is not TOP
                     and c[0] == shape[0] and _same_class(c, shape)), None)

    def _first_iteration(self, loop: ast.For | ast.While, numbers: set[str], promoted: set[str], before: dict):
        """Follow the loop body's first iteration with the numbers as numbers: (the class of the
        first value bound to each name, the names computed from the promoted ones, where each is
        first bound), or None where a read of a promoted one is neither elementwise nor recorded."""
        env = dict(before)
        env.update((n, INTEGER if before.get(n) == INTEGER else NUMBER) for n in numbers)
        if isinstance(loop, ast.For):
            env[loop.target.id] = INTEGER
        tainted, first, bound_at = set(promoted), {}, {}
        for k, stmt in enumerate(loop.body):
            if is_comment(stmt):
                continue
            simple = isinstance(stmt, (ast.Assign, ast.AugAssign)) and len(getattr(stmt, "targets", [0])) == 1 \
                and isinstance(stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target, ast.Name)
            reads = any(n.id in tainted for n in name_loads(stmt))
            if not simple:
                if reads and not _recorded(stmt, tainted) or stored_names(stmt) & (tainted | numbers):
                    return None  # (or a carry bound in a branch or a nested loop)
                for n in stored_names(stmt):
                    env.pop(n, None)
                continue
            target = (stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target).id
            value = stmt.value if isinstance(stmt, ast.Assign) else ast.BinOp(ast.Name(target, ast.Load()),
                                                                               stmt.op, stmt.value)
            shape = _CarryShapes(env.get).of(value) if changes_nothing(value, frozenset()) else None
            env[target] = shape
            if target not in first:
                first[target], bound_at[target] = shape, k
            if reads and _elementwise_in(value, tainted):
                tainted.add(target)
            elif reads and not _recorded(stmt, tainted):
                return None
            else:
                tainted.discard(target)
        return first, tainted, bound_at


def promote_carries(body: list[ast.stmt], comments: list[str] = (), origin_comments=frozenset(),
                    facts: dict | None = None) -> list[ast.stmt]:
    """Each function of a generated module, its number-to-array loop carries started as arrays.
    comments: the module's comments, of which those at origin_comments name the user's statement;
    facts: {function: {parameter: fact}} of functions specialised to their arguments (the items
    of an argument, x[i], are arrays only where x is known to have two or more dimensions)."""
    for node in body:
        if isinstance(node, ast.FunctionDef):
            ndims = {p: fact[1] for p, fact in ((facts or {}).get(node.name) or {}).items()
                     if isinstance(fact, list) and fact and fact[0] == "array"}
            node.body[:] = _Carries(node, comments, origin_comments, ndims).block(node.body)
    return body
