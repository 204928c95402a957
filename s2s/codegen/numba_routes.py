"""A pass over the finished module: NumPy calls that numba.njit rejects go to runtime helpers."""

from __future__ import annotations

import ast
import inspect
import re

import numpy as np

from .. import runtime
from ..rules import facts, spelled
from .emit import name

# NumPy that numba.njit rejects, and the runtime helper generated code calls instead (the
# helper is NumPy itself on the python backend) are declared with their rules (Facts.numba).
# Reductions are only rerouted when they take an axis, keepdims or ddof: Numba compiles
# np.sum(x) as it is; others (Facts.numba_always: np.squeeze, np.inner) always, np.array
# always but of a tuple or list (Facts.numba_sequences), which Numba builds itself.


_COMMENT = re.compile(r"__s2s_comment_(\d+)__$")

# Helpers whose compiled forms refuse, as they run, a list that NumPy takes or refuses with an
# error of its own (arrays of different shapes; np.stack of a list along an axis other than 0):
# compiled code keeps no traceback, so where their argument may be a list they get the user's
# statement, `where="model.py:12"`, which their refusal names (backends/failures.py).
_LOCATED = (runtime.array, runtime.stack)


# The derivatives of reductions, and their parameters: the reduced operand x (and its tangent
# x_dot) may be a tuple or list of arrays, which NumPy reduces as their array and Numba does not.
_REDUCTION_DERIVATIVES = {f.__name__: tuple(inspect.signature(f).parameters) for f in (
    runtime.sum_bar, runtime.mean_bar, runtime.max_bar, runtime.max_dot, runtime.prod_bar, runtime.prod_dot,
    runtime.var_bar, runtime.var_dot, runtime.std_bar, runtime.norm_bar, runtime.norm_dot, runtime.norm_bar_curvature)}


class RouteNumbaRejects(ast.NodeTransformer):
    """np.max(x, axis=1, keepdims=True) -> runtime.reduce_max(x, axis=1, keepdims=True).

    Done on the finished module, so that the user's own calls and the calls that
    derivative templates write (np.sum(x_dot, axis=axis, keepdims=keepdims)) agree.
    """

    # What the function being visited binds (visit_FunctionDef); none outside a function.
    masks: set = frozenset()
    sequences: set = frozenset()
    index_lists: set = frozenset()
    lists: set = frozenset()

    def __init__(self, comments: list[str] = (), origin_comments=frozenset()):
        self.comments = comments
        self.origin_comments = origin_comments
        self.where: str | None = None  # the user's statement (file:line) of the code being visited

    def visit_Expr(self, node: ast.Expr) -> ast.Expr:
        """An origin comment (codegen/emit.py) heads the code of the statement it names."""
        found = _COMMENT.match(node.value.id) if isinstance(node.value, ast.Name) else None
        if found and int(found.group(1)) in self.origin_comments:
            self.where = self.comments[int(found.group(1))].split("Grad of: ")[-1].split("  ")[0]
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "runtime" \
                and func.attr == "take" and self.where is not None and not node.keywords:
            node.keywords.append(ast.keyword("where", ast.Constant(self.where)))  # (its refusal of repeated entries)
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
                and isinstance(func.value.value, ast.Name) and func.value.value.id == "np" \
                and func.value.attr in ("linalg", "fft"):
            # np.linalg.norm(x, "fro") with an axis; np.fft.fftshift, which Numba lacks
            known = facts(getattr(getattr(np, func.value.attr), func.attr, None))
            if func.attr == "norm" and node.args and self._sequence(node.args[0]):
                # np.linalg.norm((x, x + 2)): of the array of the display, which Numba's norm does not build
                node.args[0] = ast.Call(ast.Attribute(name("np"), "array", ast.Load()), [node.args[0]], [])
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "np":
            known = facts(spelled("np", func.attr))
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "runtime" \
                and func.attr in _REDUCTION_DERIVATIVES:
            # (the derivatives of np.var([x, x + 2]): of the array of the display, as the reduction)
            for k, parameter in enumerate(_REDUCTION_DERIVATIVES[func.attr][:len(node.args)]):
                if parameter in ("x", "x_dot") and self._sequence(node.args[k]):
                    node.args[k] = ast.Call(ast.Attribute(name("np"), "array", ast.Load()), [node.args[k]], [])
            return node
        else:
            return node
        if known.reduction and node.args and self._sequence(node.args[0]):
            # np.var([x, x + 2]): NumPy reduces the array of the display, which Numba's
            # reductions do not build (np.array of a tuple of arrays it does)
            node.args[0] = ast.Call(ast.Attribute(name("np"), "array", ast.Load()), [node.args[0]], [])
        if known.numba is None or not (known.numba_always or len(node.args) > 1 or node.keywords):
            return node
        if known.numba_sequences and node.args and self._sequence(node.args[0]):
            return node  # np.array((a, b)): Numba's own, and the code stays NumPy's
        node.func = ast.Attribute(name("runtime"), known.numba.__name__, ast.Load())
        if known.numba in _LOCATED and self.where is not None and node.args and (
                isinstance(node.args[0], ast.List) or isinstance(node.args[0], ast.Name) and node.args[0].id in self.lists):
            node.keywords.append(ast.keyword("where", ast.Constant(self.where)))
        return node

    def _sequence(self, node: ast.expr) -> bool:
        return isinstance(node, (ast.Tuple, ast.List)) or isinstance(node, ast.Name) and node.id in self.sequences

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        outer = self.masks, self.sequences, self.index_lists, self.lists, self.where
        self.masks, self.sequences, self.index_lists = _mask_names(node), _sequence_names(node), _index_lists(node)
        self.lists, self.where = _list_names(node), None
        self.generic_visit(node)
        self.masks, self.sequences, self.index_lists, self.lists, self.where = outer
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        """idx = [0, 0, 1] -> idx = np.array([0, 0, 1]) where idx is only ever an index
        (x[idx], and the runtime.index_add of its adjoint): numba.njit indexes with arrays,
        not lists, and NumPy reads the two alike (repeated entries included)."""
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in self.index_lists:
            node.value = ast.Call(ast.Attribute(name("np"), "array", ast.Load()), [node.value], [])
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        """x[mask] -> runtime.masked(x, mask) where mask is only ever a comparison: numba.njit
        indexes with 1-D boolean masks only (a 2-d one crashes its lowering)."""
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Name) and node.slice.id in self.masks:
            return ast.Call(ast.Attribute(name("runtime"), "masked", ast.Load()), [node.value, node.slice], [])
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.expr:
        """{"a": x, "b": y} -> runtime.dict_of(("a", "b"), (x, y)): Numba types a dict display
        whose values differ in type as a literal dict, which it can neither return nor pass
        to Python; the helper makes it the form dicts take in compiled code (a DictTuple),
        and a dict on the python backend."""
        self.generic_visit(node)
        if any(k is None for k in node.keys):  # {**d}: left to Numba's refusal
            return node
        return ast.Call(ast.Attribute(name("runtime"), "dict_of", ast.Load()),
                        [ast.Tuple(list(node.keys), ast.Load()), ast.Tuple(list(node.values), ast.Load())], [])


def _mask_names(function: ast.FunctionDef) -> set[str]:
    """Names a function binds to comparisons only (x > 0, and & | ~ of them): boolean masks."""
    def is_mask(value) -> bool:
        if isinstance(value, ast.Compare):
            return True
        if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.BitAnd, ast.BitOr)):
            return is_mask(value.left) and is_mask(value.right)
        return isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Invert) and is_mask(value.operand)

    return _bound_only_to(function, is_mask)


def _sequence_names(function: ast.FunctionDef) -> set[str]:
    """Names a function binds to tuple or list displays only (`_t4 = (theta, omega)`), less
    the lists it appends to (`xs = []`, then xs.append(x) in a loop): those may hold arrays,
    which runtime.array stacks under Numba."""
    grown = {node.func.value.id for node in ast.walk(function)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and isinstance(node.func.value, ast.Name) and node.func.attr in ("append", "extend", "insert")}
    return _bound_only_to(function, lambda value: isinstance(value, (ast.Tuple, ast.List))) - grown


def _list_names(function: ast.FunctionDef) -> set[str]:
    """Names that may hold a list: bound to a list display or comprehension, grown by .append
    (or .extend, .insert), or bound to such a name."""
    lists = {node.func.value.id for node in ast.walk(function)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and isinstance(node.func.value, ast.Name) and node.func.attr in ("append", "extend", "insert")}
    copies = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, (ast.List, ast.ListComp)):
                lists.add(node.targets[0].id)
            elif isinstance(node.value, ast.Name):
                copies.append((node.targets[0].id, node.value.id))
    grown = True
    while grown:
        grown = False
        for target, source in copies:
            if source in lists and target not in lists:
                lists.add(target)
                grown = True
    return lists


# The runtime helpers that take an index (reverse mode's adjoints of x[idx] and x[idx] = v).
_INDEX_HELPERS = ("index_add", "take", "clear", "require_distinct")


def _index_lists(function: ast.FunctionDef) -> set[str]:
    """Names bound to non-empty list displays only, and read only as an index (x[idx],
    x[idx, 0]) or as an argument of a runtime helper that takes an index (runtime.index_add(x_bar, idx, g))."""
    lists = _bound_only_to(function, lambda value: isinstance(value, ast.List) and bool(value.elts))
    if not lists:
        return set()
    allowed: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Subscript):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            allowed.update(id(item) for item in items if isinstance(item, ast.Name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "runtime" \
                and node.func.attr in _INDEX_HELPERS:
            for arg in node.args:  # (idx, or a tuple (idx, slice(None, None, None)) holding it)
                allowed.update(id(item) for item in (arg.elts if isinstance(arg, ast.Tuple) else [arg])
                               if isinstance(item, ast.Name))
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in lists and id(node) not in allowed:
            lists.discard(node.id)
    return lists


def _bound_only_to(function: ast.FunctionDef, kind) -> set[str]:
    """Names (not parameters) that every binding in the function gives a value of the kind:
    plain `name = value` assignments only."""
    bound: dict[str, bool] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            bound[target] = bound.get(target, True) and kind(node.value)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.With)):
            targets = [node.target] if hasattr(node, "target") else getattr(node, "targets", [])
            for target in targets:
                for n in _bound_names(target):
                    bound[n] = False
    params = {a.arg for a in function.args.args}
    return {n for n, only in bound.items() if only and n not in params}


def _bound_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds or writes into: `a`, `a, (b, c)`, `*a`, z of `z[idx]`
    and o of `o.w`, but not idx, which the write reads."""
    if isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _bound_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for item in target.elts for n in _bound_names(item)]
    return [target.id] if isinstance(target, ast.Name) else []


def route_numba_rejects(body: list[ast.stmt], comments: list[str] = (),
                        origin_comments=frozenset()) -> list[ast.stmt]:
    """comments: the module's comments (Emitter.comments), of which those at origin_comments
    name the user's statement of the code below them."""
    return RouteNumbaRejects(comments, origin_comments).visit(ast.Module(body=body, type_ignores=[])).body
