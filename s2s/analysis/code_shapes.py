"""Shape classes of Python code: the functions s2s emits, and the expressions of its rule
templates. The classes are analysis/shapes.py's (the IR's), so that every pass asks one
analysis in one lattice: the reverse transform (a template's `unbroadcast(g, x)` at an IR
statement, classes of the IR's names), the adjoint-helper pass (optimize/adjoint_helpers.py,
on emitted functions, with or without argument facts) and the elementwise loops
(optimize/loops.py, specialised to the arguments' facts).

Emitted code knows less than the IR where no facts are given (the command line, the import
hook): a parameter may be a number, an array or a list. Two classes say what is known then:
- ("value", root, numeric): the value root names on entry, whatever its rank (a number
  perhaps); numeric if arithmetic proved it is not a list or tuple. Only a root for slices.
- ("rows", root, trim, numeric): x[a:-b] of such a value: one or more dimensions, the first
  max(0, len(root) - trim) long, the others root's.
- ("item", roots, numeric): x[i] of such a value at an integer index, of the shape of root's
  items (root's without its first axis: a number where root has one dimension); elementwise
  operations of items of several values: of their items' shapes broadcast (roots, sorted).
Two expressions of one class have one shape; an adjoint helper may rely on that only for
arrays of one or more dimensions (`array_like`): a 0-d array never stands in for a number
under Numba.

One evaluator, `CodeShapes.of`, gives an expression its class from its names' classes (the
`lookup`). The passes differ in where names get theirs: `everywhere` (one class per name from
all its assignments, a fixpoint: the loops), `FlowShapes` (the classes before each statement,
a forward pass: the adjoint helpers), and the IR's classes at one statement (templates).
"""

from __future__ import annotations

import ast
from typing import Callable

import numpy as np

from ..rules import facts, spelled
from .emitted import call_kind, changes_nothing, child_blocks, name_loads, stored_names
from .shapes import INTEGER, NUMBER, call_info, constant_trim

TOP = ("top",)  # not known yet, during `everywhere`'s fixpoint

_NUMERIC_OPS = (ast.Sub, ast.Div, ast.Pow, ast.FloorDiv, ast.USub, ast.UAdd)  # not defined on lists
_INT_KEEPING = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def is_number(c) -> bool:
    return c is not None and c is not TOP and c[0] == "num"


def array_like(c) -> bool:
    """A class of arrays of one or more dimensions (not a number, a tuple or a list)."""
    return c is not None and (c[0] == "arr" or c[0] == "rows" and c[3])


def _unknown_type(c) -> bool:
    return c[0] in ("value", "rows", "item")


def numeric(c) -> bool:
    """Known not to be a list or a tuple."""
    return c[0] in ("num", "arr") or _unknown_type(c) and c[-1]


def same_shape_array(a, b, numeric_too: bool = True) -> bool:
    """a and b are arrays of one or more dimensions of one shape (and a is known not to be a
    list, where numeric_too)."""
    if a is None or b is None or a is TOP or b is TOP or a[0] not in ("arr", "rows"):
        return False
    return _same_class(a, b) and (numeric(a) or not numeric_too)


def _as_numeric(c):
    return c[:-1] + (True,) if _unknown_type(c) else c


def _same_class(a, b) -> bool:
    """Of one shape: equal classes, whatever arithmetic proved of their types."""
    if _unknown_type(a) and _unknown_type(b):
        return a[:-1] == b[:-1]
    return a == b


def elementwise(classes: list, op: ast.AST | None = None, float_operand: bool = False):
    """The class of an elementwise operation (op: its operator; None for a ufunc), or None."""
    if any(c is None for c in classes):
        return None
    if any(c is TOP for c in classes):
        return TOP
    if any(_unknown_type(c) for c in classes):
        if op is None or isinstance(op, _NUMERIC_OPS):
            pass
        elif isinstance(op, (ast.Add, ast.Mult)):
            # lst + lst and lst * 2 are not elementwise: a side must be known numeric, or a
            # float (lst * 2.0 fails); two values that are not numbers cannot both be lists.
            if not (float_operand or all(numeric(c) for c in classes)
                    or all(c[0] != "num" for c in classes) and any(numeric(c) for c in classes)):
                return None
        else:
            return None
    if any(c[0] not in ("num", "arr", "value", "rows", "item") for c in classes):
        return None
    arrays = [c for c in classes if c[0] != "num"]
    if not arrays:
        keeps = op is None or isinstance(op, _INT_KEEPING + (ast.USub, ast.UAdd))
        return INTEGER if keeps and all(c[1] for c in classes) else NUMBER
    if all(c[0] == "item" for c in arrays):  # x[i] * w[i]: items broadcast together
        return ("item", tuple(sorted({root for c in arrays for root in c[1]})), True)
    first = arrays[0]
    if not all(_same_class(first, a) for a in arrays[1:]):
        return None
    return _as_numeric(first)


def meet(a, b):
    """One class for a name from two of its values (TOP: not known yet)."""
    if a is TOP:
        return b
    if b is TOP:
        return a
    if is_number(a) and is_number(b):
        return a if a == b else NUMBER
    return a if a == b else None


def _int_constant(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def slice_trim(index) -> tuple[int, int] | None:
    """(a, b) of a slice x[a:-b] (int constants, a >= 0, b > 0; 0 where left out), which
    has max(0, n - a - b) elements along its axis; None for any other index."""
    if not isinstance(index, ast.Slice) or index.step is not None:
        return None
    bounds = []
    for bound in (index.lower, index.upper):
        value = None if bound is None else _int_constant(bound)
        if bound is not None and value is None:
            return None
        bounds.append(value)
    trim = constant_trim(bounds[0], bounds[1], None)
    return None if trim is None else (bounds[0] or 0, trim - (bounds[0] or 0))


def dotted_call(node) -> tuple[str, str] | None:
    """("np", "sin") of a call np.sin(...), None for a call of anything else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        return node.func.value.id, node.func.attr
    return None


def is_boolean(node, names: set[str], shadowed) -> bool:
    """An expression known to hold booleans (a comparison, or arithmetic of them that NumPy
    keeps boolean). NumPy's sum of two boolean arrays is their logical or; the sum of two of
    their elements, in the loops of optimize/loops.py, is 2 where both hold (and Numba's fused
    array expressions: backends/numba_pipeline.py)."""
    if isinstance(node, ast.Compare) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Subscript):
        return is_boolean(node.value, names, shadowed)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return is_boolean(node.operand, names, shadowed)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)):
        return is_boolean(node.left, names, shadowed) and is_boolean(node.right, names, shadowed)
    dotted = dotted_call(node)
    return dotted is not None and dotted[0] == "np" and "np" not in shadowed \
        and facts(spelled(*dotted)).boolean  # (np.isnan, np.logical_and: a comparison ufunc)


def boolean_names(function: ast.FunctionDef, shadowed) -> set[str]:
    """Names every assignment of which is a boolean expression (is_boolean), to a fixpoint."""
    values: dict[str, list] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            for n in ast.walk(node.target if not isinstance(node, ast.With) else node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    values.setdefault(n.id, []).append(None)
    names = {a.arg for a in function.args.args}  # (parameters: of dtypes not known here)
    found: set[str] = set()
    while True:
        more = {name for name, vs in values.items() if name not in names and name not in found
                and all(v is not None and is_boolean(v, found, shadowed) for v in vs)}
        if not more:
            return found
        found |= more


class CodeShapes:
    """The class of an expression, from the classes `lookup` gives its names."""

    def __init__(self, lookup: Callable[[str], object], shadowed=frozenset()):
        self.lookup = lookup
        self.shadowed = shadowed

    def of(self, node):
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                return NUMBER
            if isinstance(value, int):
                return INTEGER
            return NUMBER if isinstance(value, float) else None
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                return None
            return elementwise([self.of(node.operand)], node.op)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                return None
            floats = any(isinstance(o, ast.Constant) and isinstance(o.value, float) for o in (node.left, node.right))
            return elementwise([self.of(node.left), self.of(node.right)], node.op, floats)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                return None
            classes = [self.of(node.left), self.of(node.comparators[0])]
            if any(c is not None and c is not TOP and _unknown_type(c) and not numeric(c) for c in classes):
                return None  # [1, 2] == 1 is False, not elementwise
            result = elementwise(classes)  # (as a ufunc: the operands are numbers or arrays)
            return NUMBER if is_number(result) else result
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            dotted = dotted_call(node)
            if dotted is None or dotted[0] in self.shadowed or not self.admits(dotted, node):
                return None
            return self.call(dotted, node)
        return None

    def subscript(self, node: ast.Subscript):
        """x[a:-b] has max(0, len(x) - a - b) rows and x's other axes; x[i] is an item of x."""
        base = self.of(node.value)
        bounds = slice_trim(node.slice)
        if base is TOP:
            return TOP
        if base is not None and base[0] == "value" and not isinstance(node.slice, (ast.Slice, ast.Tuple)) \
                and self.of(node.slice) == INTEGER:
            return ("item", (base[1],), base[2])
        if base is None or bounds is None:
            return None
        extra = bounds[0] + bounds[1]
        if base[0] == "arr":
            (axis, trim), rest = base[2][0], base[2][1:]
            return ("arr", base[1], ((axis, trim + extra),) + rest)
        if base[0] == "rows":
            return ("rows", base[1], base[2] + extra, base[3])
        if base[0] == "value":
            return ("rows", base[1], extra, base[2])
        return None

    def admits(self, dotted: tuple[str, str], node: ast.Call) -> bool:
        """Whether this call may have a class at all (a pass that needs less may say no)."""
        return True

    def call(self, dotted: tuple[str, str], node: ast.Call):
        module, attr = dotted
        args = [self.of(a) for a in node.args]
        if TOP in args and None not in args:
            return TOP
        if module == "runtime" and attr in ("unbroadcast", "sum_bar") and len(args) == 2 and not node.keywords:
            like = args[1]  # the adjoint of broadcasting or of a sum: the operand's shape
            return _as_numeric(like) if like is not None and like[0] != "num" and like[0] != "tup" else None
        known = facts(spelled(module, attr))
        if known.like and len(args) == 1 and not node.keywords:
            like = args[0]  # a copy, zeros_like: an array of the argument's shape
            if like is None or like[0] == "tup" or like[0] == "num" and not known.number_stays:
                return None  # np.copy(2.0) is a 0-d array
            if _unknown_type(like) and not numeric(like):
                return None  # the copy of a list, which a later write may resize apart from it
            return like
        if module == "math":
            return NUMBER if args and all(is_number(a) for a in args) and not node.keywords else None
        if module != "np" or node.keywords and not known.like:
            return None
        if known.elementwise and known.arity == len(args) and any(a is not None and _unknown_type(a) for a in args):
            return elementwise(args)
        fn = getattr(np, attr, None)
        keywords = tuple((k.arg, None) for k in node.keywords)
        return call_info(fn, args, keywords) if fn is not None else None


def everywhere(function: ast.FunctionDef, seeds: dict, shapes: Callable[..., CodeShapes] = CodeShapes,
               shadowed=frozenset()) -> dict:
    """One class per name of function, from all its assignments (None where they disagree or
    a name is bound otherwise: by a loop, an unpacking, a with). seeds: the parameters'
    classes; a parameter that is assigned again knows nothing."""
    defs: dict[str, list] = {}
    unknown: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            defs.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            defs.setdefault(node.target.id, []).append(ast.BinOp(node.target, node.op, node.value))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.For, ast.With, ast.AnnAssign, ast.Delete,
                               ast.NamedExpr, ast.comprehension, ast.Global, ast.Nonlocal)):
            for n in ast.walk(node.target if isinstance(node, (ast.For, ast.comprehension, ast.AugAssign)) else node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                    unknown.add(n.id)
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                unknown.update(node.names)
    env: dict = {}
    for arg in function.args.args:
        p = arg.arg
        env[p] = None if p in defs or p in unknown else seeds.get(p)
    for n in unknown:
        env[n] = None
    pending = {n: values for n, values in defs.items() if n not in env}
    for n in pending:
        env[n] = TOP
    evaluate = shapes(env.get, shadowed).of
    for _ in range(50):
        changed = False
        for n, values in pending.items():
            new = TOP
            for v in values:
                new = meet(new, evaluate(v))
                if new is None:
                    break
            if new != env[n]:
                env[n], changed = new, True
        if not changed:
            break
    else:  # no fixpoint: know nothing
        for n in pending:
            env[n] = None
    for n, c in list(env.items()):
        if c is TOP:  # only ever assigned from itself
            env[n] = None
    return env


class FlowShapes:
    """The classes of an emitted function's names before each of its statements (a forward
    pass; a loop forgets what it assigns or may resize). `at(stmt)` evaluates there."""

    def __init__(self, function: ast.FunctionDef, seeds: dict, shadowed=frozenset(), as_number=frozenset()):
        self.shadowed = shadowed
        self.as_number = set(as_number)  # names taken to be numbers (a what-if of the sum_bar pass)
        self.before: dict[int, dict] = {}
        self.env = dict(seeds)
        self._block(function.body)

    def at(self, stmt, as_number=frozenset()) -> CodeShapes:
        env = self.before.get(id(stmt), {})
        return CodeShapes(lambda n: NUMBER if n in as_number else env.get(n), self.shadowed)

    def _of(self, node):
        return CodeShapes(self.env.get, self.shadowed).of(node)

    def _kill(self, names) -> None:
        for n in names:
            self.env.pop(n, None)

    def _kill_root(self, name: str) -> None:
        """name's object may change size (lst.append): so may everything that shares its root."""
        c = self.env.get(name)
        if c is None:
            return
        root = c[1] if c[0] in ("value", "rows", "arr", "item") else c
        for n, other in list(self.env.items()):
            if (other[1] if other[0] in ("value", "rows", "arr", "item") else other) == root:
                del self.env[n]

    def _kill_mutated(self, stmt) -> None:
        """Objects a statement may resize: receivers of method calls, arguments of calls not
        known to change nothing."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and call_kind(node, self.shadowed) is None:
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    self._kill_root(node.func.value.id)
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    for n in name_loads(arg):
                        self._kill_root(n.id)

    def _block(self, body: list) -> None:
        for stmt in body:
            self.before[id(stmt)] = dict(self.env)
            if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
                assigned = stored_names(stmt)
                if isinstance(stmt, (ast.For, ast.While)):
                    self._kill(assigned)
                    self._kill_mutated(stmt)
                saved = dict(self.env)
                for child in child_blocks(stmt):
                    self.env = dict(saved)
                    self._block(child)
                self.env = saved
                self._kill(assigned)
                self._kill_mutated(stmt)
                continue
            self._kill_mutated(stmt)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            for target in targets:
                # lst[1:3] = [...] may resize a list; an array keeps its shape, but be safe.
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                        and isinstance(target.slice, ast.Slice):
                    self._kill_root(target.value.id)
            if isinstance(stmt, ast.Assign):
                value = self._of(stmt.value) if changes_nothing(stmt.value, self.shadowed) else None
                self._kill(stored_names(stmt))
                if value is not None and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self.env[stmt.targets[0].id] = value
            else:
                self._kill(stored_names(stmt))
