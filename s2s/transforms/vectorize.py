"""Batching by rules: a per-example function rewritten as vectorised NumPy over the batch.

The python backend runs a vmapped plain function this way instead of a Python loop over the
examples. Batched values carry the batch on their LAST axis: NumPy broadcasts from the right,
so an elementwise operation between two batched values of different per-example ranks lines
the batch axes up by itself (a per-example scalar is an array of shape (n,), a per-example
vector of shape (k,) an array (k, n)), and indexing, slicing and reductions over explicit
axes act on the leading, per-example axes unchanged. An unbatched operand of a batched
operation gets a trailing axis of length one (`runtime.lift(w)`).

Each statement of the normalized function has a batching rule, chosen by what its operands
are (batched or not): elementwise arithmetic and ufuncs, reductions (their axes translated),
subscripts with unbatched indices, writes into arrays, matmul and dot, tuples, calls to
other user functions (batched in turn), and `if`/`for`/`while` whose tests and bounds are
not batched. Where no rule applies (a branch on a batched value, an index that differs by
example, a function without a rule), NoBatchingRule says where, and the caller falls back
to the loop over examples of transforms/batching.py.

The pipeline's "vectorize" pass (driver/pipeline.py, transforms "vmap" and "vmap_total")
calls vmap_module or total_module for the statements; rendering them is the pipeline's.
"""

from __future__ import annotations

import ast
import builtins
import operator
from typing import Any

import numpy as np

from .. import runtime
from ..codegen.emit import Emitter, name, parse_expr, runtime_call
from ..codegen.module import header, primal_function, prologue
from ..analysis.zero_d import names_that_may_be_0d_arrays
from ..errors import NoBatchingRule
from ..rules import facts, lookup
from ..frontend.source import is_user_function
from ..ir import nodes as ir
from .batching import Pattern, anything, described_axes, element, first_batched, leaf_patterns
from .rule_helpers import all_names

# What each function is (s2s.rules.Facts, declared with its rule): elementwise (operators,
# ufuncs), of its arguments' broadcast shape (np.where, np.copy, np.zeros_like: the batch axis
# is kept), a reduction, a creator of arrays from unbatched shapes and values (np.zeros: its
# result is not batched), or a math function or builtin with a NumPy ufunc of the same meaning.


def _same_shape(fn) -> bool:
    """The result has the shape of fn's (broadcast) arguments, batch axis included."""
    known = facts(fn)
    return known.elementwise or known.like or known.broadcasts


def join(a: Pattern, b: Pattern) -> Pattern:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(join(x, y) for x, y in zip(a, b))
    return anything(a) or anything(b)


class Vectorizer:
    """Writes `<name>_batched(params)`: fn over a batch, batch on the last axis, for one
    pattern of batched parameters; callees are specialised for their own patterns."""

    def __init__(self, functions: list[ir.Function], emitter: Emitter):
        self.by_python = {id(f.python): f for f in functions}
        self.emitter = emitter
        self.written: dict[tuple, tuple[str, Pattern]] = {}  # (function, patterns) -> (name, result)
        self.defs: list[ast.FunctionDef] = []
        self.batch = ""  # the batch-size variable of the function being written
        self.zero_d: frozenset[str] = frozenset()  # its names that may hold 0-d arrays
        self.containers: frozenset[str] = frozenset()  # its names that may hold lists and dicts (or are parameters)
        self.origin = None  # of the statement being written
        self.names = ir.Names()  # fresh names of the function being written
        self.before: list = []  # statements the expression being written needs first (_conformed_items)

    # ---- patterns ---------------------------------------------------------------------

    def function(self, fn: ir.Function, params: tuple, entry: bool = False) -> tuple[str, Pattern]:
        """The batched version of fn for these parameter patterns: (its name, its result's pattern).
        With no batched parameter it is fn itself."""
        base = self.emitter.function_names[id(fn.python)]
        if not any(anything(p) for p in params):
            return base, False
        key = (id(fn), params)
        if key in self.written:
            return self.written[key]
        suffix = "".join("b" if anything(p) else "u" for p in params)
        fname = f"{base}_batched" if entry else f"{base}_batched_{suffix}"
        env = dict(zip(fn.params, params))
        for _ in range(20):  # patterns only grow: a fixpoint in a few rounds
            before = dict(env)
            self._patterns(fn.body, env)
            if env == before:
                break
        result = self._pattern_of(fn.result, env)
        self.written[key] = (fname, result)
        saved = self.batch, self.zero_d, self.containers, self.names, self.before
        self.names = ir.Names(all_names(fn))
        self.batch = self.names.fresh("n")  # (not a module's `n` the function reads)
        self.zero_d = names_that_may_be_0d_arrays(fn, self.by_python)
        # (a parameter may hold a list or dict the caller made: a write into it stores items too)
        self.containers = _containers(fn, env) | frozenset(fn.params)
        size = next(_first_batched(p, pattern) for p, pattern in zip(fn.params, params) if anything(pattern))
        body = [ast.Expr(ast.Constant(f"{fn.name} ({fn.origin.short()}) over a batch on the last axis of "
                                      f"{self._batched_params(fn, params)}.")),
                ast.Assign([name(self.batch, True)], parse_expr(f"runtime.batch_size({size})"), lineno=0)]
        for param, pattern in zip(fn.params, params):
            if anything(pattern) and env.get(param) != pattern and pattern is not True:
                # a tuple argument of batched and unbatched items that the function batches
                # further (`p = (x, x)` in a branch): its unbatched items would pass for batched
                raise NoBatchingRule(f"the argument {param}, a tuple of batched and unbatched items, is given "
                                     "batched items further on", fn.origin)
            if anything(env.get(param, False)) and not anything(pattern):
                # An argument shared by the examples that each example writes into: every example
                # gets its own copy (s2s's functions write into private copies of their arguments).
                if env[param] is not True:
                    raise NoBatchingRule(f"a write of per-example values into the shared argument {param}",
                                         fn.origin)
                body.append(ast.Assign([name(param, True)], runtime_call("batch_broadcast", name(param),
                                                                           name(self.batch)), lineno=0))
        body += self._block(fn.body, env)
        self.batch, self.zero_d, self.containers, self.names, self.before = saved
        args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in fn.params], kwonlyargs=[],
                             kw_defaults=[], defaults=[])
        self.defs.append(ast.FunctionDef(fname, args, body, [], None, lineno=0))
        return fname, result

    def _numbers_when_1d(self, var: str, env) -> bool:
        """var is batched, and a 1-d batch of it is one of numbers: the alias checks let `var op= v`
        rebind it (runtime.require_unshared). Where var may hold 0-d arrays, which `op=` updates in
        place, its 1-d batch counts as an array (analysis/zero_d.py)."""
        return anything(env.get(var, False)) and var not in self.zero_d

    @staticmethod
    def _batched_params(fn, params) -> str:
        return ", ".join(p for p, pattern in zip(fn.params, params) if anything(pattern))

    def _pattern_of(self, atom, env) -> Pattern:
        if isinstance(atom, ir.Name):
            return env.get(atom.id, False)
        return False

    def _set(self, env, target: str, pattern: Pattern) -> None:
        env[target] = join(env[target], pattern) if target in env else pattern

    def _patterns(self, block: list, env: dict) -> None:
        for stmt in block:
            if isinstance(stmt, ir.Assign):
                value = self._value_pattern(stmt.value, env, stmt)
                if stmt.unpack:
                    for k, target in enumerate(stmt.targets):
                        self._set(env, target, element(value, k))
                else:
                    self._set(env, stmt.targets[0], value)
                    if stmt.alias_check and anything(env[stmt.targets[0]]):
                        self._shares_batch(stmt, env)
            elif isinstance(stmt, ir.SetItem):
                if anything(self._pattern_of(stmt.value, env)) or any(
                        anything(env.get(n, False)) for n in ir.names_in(stmt.index)):
                    self._set(env, stmt.base, True)
            elif isinstance(stmt, (ir.Push, ir.ExprStmt)) and not (
                    isinstance(stmt, ir.ExprStmt)
                    and stmt.value.fn in (builtins.print, runtime.require_fits, runtime.require_float_array)):
                # (a scan's dtype check, and the check of a write into an array, read the dtypes
                # alone, which a batch keeps)
                raise NoBatchingRule(f"no batching rule for {type(stmt).__name__}", stmt.origin)
            for child in ir.child_blocks(stmt):
                self._patterns(child, env)

    def _shares_batch(self, stmt: ir.Assign, env: dict) -> None:
        """`x op= v` of a batched x, whose run-time check asks whether x shares memory with the
        other names analysis lists: those are batched too. Else an earlier `x = other` would give
        x a batch of copies of other (batch_broadcast), and the check would pass where each
        example's x is other, whose update NumPy makes in place (`y = z; y += v` changes z).
        (A container keeps its pattern: the check refuses an array x for any container.)"""
        for other, _ in stmt.alias_check:
            if other is not None and not isinstance(env.get(other, False), tuple):
                self._set(env, other, True)

    def _sequence_operation(self, call: ir.Call, patterns: list, stmt) -> tuple[bool, Pattern]:
        """`a + b` or `a * b` where an operand is a tuple or list display of known items:
        (is it Python's concatenation or repetition, the result's pattern). Concatenation
        (two displays) and repetition by a constant keep each item's pattern: [x[0]] + [w] is
        a list of a batched and an unbatched item, not a batched value. Otherwise NumPy
        arithmetic, batched as such, where the operands say which it is: where they do not
        (a display times a name, which may be an int; a name that may hold a list), or where
        the display mixes batched and unbatched items, no rule applies."""
        a, b = (patterns + [False, False])[:2]
        if len(call.args) != 2 or call.kwargs:
            raise NoBatchingRule("no batching rule for this operation on a tuple or list", stmt.origin)
        if call.fn is operator.add and isinstance(a, tuple) and isinstance(b, tuple):
            return True, a + b
        if call.fn is operator.mul:
            for display, count in ((a, call.args[1]), (b, call.args[0])):
                if isinstance(display, tuple) and isinstance(count, ir.Const) and isinstance(count.value, int):
                    return True, display * max(count.value, 0)
        display, other, other_atom = (a, b, call.args[1]) if isinstance(a, tuple) else (b, a, call.args[0])
        mixed = anything(display) and not all(p is True for p in display)
        may_be_sequence = isinstance(other_atom, ir.Name) and other_atom.id in self.containers
        if mixed or may_be_sequence or isinstance(other, tuple) or call.fn is operator.mul and not anything(other):
            raise NoBatchingRule("a `+` or `*` of a tuple or list that batching rules cannot tell from Python's "
                                 "concatenation or repetition", stmt.origin)
        return False, anything(display) or anything(other)

    def _value_pattern(self, value, env, stmt) -> Pattern:
        if isinstance(value, (ir.Name, ir.Const)):
            return self._pattern_of(value, env)
        if isinstance(value, ir.Build):
            if value.kind == "dict":
                return any(anything(self._pattern_of(a, env)) for a in value.elts)
            return tuple(self._pattern_of(a, env) for a in value.elts)
        if isinstance(value, ir.Subscript):
            base = self._pattern_of(value.value, env)
            if isinstance(base, tuple):
                known = _known_item(value.index)
                if isinstance(known, slice):
                    return base[known]
                if known is not None:
                    return element(base, known)
                if base and all(p == base[0] for p in base) and not any(
                        anything(env.get(n, False)) for n in ir.names_in(value.index)):
                    return base[0]  # `t[i]` of items alike (unalike ones: _expr refuses)
            return anything(base) or any(anything(env.get(n, False)) for n in ir.names_in(value.index))
        if isinstance(value, ir.Attribute):
            base = self._pattern_of(value.value, env)
            if value.attr in ir.SHAPE_ATTRIBUTES:
                return False  # per-example facts, the same for every example
            return anything(base)
        if isinstance(value, ir.Call):
            args = [self._pattern_of(a, env) for a in value.args] + [self._pattern_of(a, env) for _, a in value.kwargs]
            if value.fn is runtime.new_tape:
                raise NoBatchingRule("no batching rule for tapes", stmt.origin)
            if value.fn is runtime.draw:  # (each example draws anew, in turn, as a loop over them does)
                raise NoBatchingRule("no batching rule for a draw from a NumPy random generator", stmt.origin)
            if is_user_function(value.fn):
                callee = self.by_python[id(value.fn)]
                return self.function(callee, tuple(args[:len(value.args)]))[1]
            batching = facts(value.fn).batching
            if batching in ("example_shape", "example_len") or facts(value.fn).creates and not any(map(anything, args)):
                return False  # (np.shape, len: of one example, the same for every example)
            if _given_shape(value) and not anything(self._pattern_of(_given_shape(value), env)):
                # np.zeros_like(x, shape=(3,)): x gives the dtype alone, the same for every example
                return False
            if value.fn in (operator.add, operator.mul) and any(isinstance(a, tuple) for a in args):
                return self._sequence_operation(value, args, stmt)[1]
            return any(anything(a) for a in args)
        if isinstance(value, ir.Pop):
            raise NoBatchingRule("no batching rule for tapes", stmt.origin)
        raise NoBatchingRule(f"no batching rule for {type(value).__name__}", stmt.origin)

    # ---- statements -------------------------------------------------------------------

    def _block(self, block: list, env: dict) -> list:
        out: list = []
        last_origin = None
        for stmt in block:
            if stmt.origin != last_origin and not isinstance(stmt, ir.Return):
                out.append(self.emitter.origin_comment(stmt.origin))
                last_origin = stmt.origin
            out.extend(self._stmt(stmt, env))
        return out

    def _atom(self, atom, env, lift: bool = False) -> ast.expr:
        """An operand; `lift` adds the trailing batch axis to an unbatched array operand."""
        expr = self.emitter.atom(atom)
        if lift and isinstance(atom, ir.Name) and not anything(env.get(atom.id, False)):
            return runtime_call("lift", expr)
        return expr

    def _batched_atom(self, atom, env) -> ast.expr:
        """An item of a batched container: an unbatched one gets the batch (batch_broadcast), as
        what reads it takes it to carry the batch (a trailing axis of length one would not do:
        returned, the item would be one example, not n)."""
        pattern = env.get(atom.id, False) if isinstance(atom, ir.Name) else False
        if isinstance(pattern, tuple) and not all(p is True for p in pattern):
            # a tuple with unbatched items (batch_broadcast would make it one array)
            raise NoBatchingRule(f"a dict that holds {atom.id}, a tuple of unbatched or nested items, and batched items",
                                 self.origin)
        if anything(pattern):
            return self.emitter.atom(atom)
        return runtime_call("batch_broadcast", self.emitter.atom(atom), name(self.batch))

    def _conformed(self, value: ast.expr, stmt, computed: Pattern, target: Pattern) -> ast.expr:
        """The value of `target = value` given the target's pattern (joined over all its
        assignments): what is unbatched here and batched there gets the batch."""
        if not anything(target) or computed == target or computed is True:
            return value
        if not anything(computed) and target is True and not (isinstance(stmt.value, ir.Build)
                                                               and stmt.value.kind != "dict"):
            # Unbatched here, batched elsewhere (a later write, another branch): give it the batch.
            return runtime_call("batch_broadcast", value, name(self.batch))
        # A tuple or list display, assigned to a name batched further (in some items, or all):
        # the items the target's pattern batches get the batch (not the display as one array:
        # its items may differ in shape, and an item the target leaves unbatched stays so).
        if isinstance(computed, tuple) and isinstance(stmt.value, ir.Build) and stmt.value.kind != "dict" \
                and (target is True or isinstance(target, tuple) and len(target) == len(computed)):
            items = []
            for k, (atom, p) in enumerate(zip(stmt.value.elts, computed)):
                wanted = target if target is True else target[k]
                if p == wanted or p is True or not anything(wanted):
                    items.append(self.emitter.atom(atom))
                elif not anything(p) and wanted is True:
                    items.append(runtime_call("batch_broadcast", self.emitter.atom(atom), name(self.batch)))
                else:
                    break
            else:
                return (ast.List if stmt.value.kind == "list" else ast.Tuple)(items, ast.Load())
        raise NoBatchingRule("a tuple or list of batched and unbatched items, assigned to a name that is batched "
                             "further on", stmt.origin)

    def _stmt(self, stmt, env) -> list:
        e = self.emitter
        self.origin = stmt.origin
        if isinstance(stmt, ir.Assign):
            self.before = []
            value = self._expr(stmt.value, env, stmt)
            target_pattern = env.get(stmt.targets[0], False) if not stmt.unpack else None
            computed = self._value_pattern(stmt.value, env, stmt)
            out, self.before = self.before, []
            if stmt.alias_check:
                out += e.alias_checks(stmt, batched=lambda var: self._numbers_when_1d(var, env))
            if stmt.unpack:
                target = ast.Tuple([name(t, True) for t in stmt.targets], ast.Store())
                out.append(ast.Assign([target], value, lineno=0))
                for k, t in enumerate(stmt.targets):  # an unbatched element of a batched variable
                    item = element(computed, k)
                    if item != env[t] and item is not True and (isinstance(item, tuple) or env[t] is not True):
                        # a tuple of batched and unbatched items, batched further on: which of its
                        # items are batched differs between the statements that bind it
                        raise NoBatchingRule(f"{t}, a tuple of batched and unbatched items, is given batched items "
                                             "further on", stmt.origin)
                    if anything(env[t]) and not anything(item):
                        out.append(ast.Assign([name(t, True)], runtime_call("batch_broadcast", name(t), name(self.batch)),
                                              lineno=0))
                return out
            value = self._conformed(value, stmt, computed, target_pattern)
            out.append(ast.Assign([name(stmt.targets[0], True)], value, lineno=0))
            return out
        if isinstance(stmt, ir.SetItem):
            base_pattern = env.get(stmt.base, False)
            base_batched = anything(base_pattern)
            index = self._index(stmt.index, env, stmt) if base_batched else e.index(stmt.index)
            target = ast.Subscript(name(stmt.base), index, ast.Store())
            value = self._atom(stmt.value, env, lift=base_batched)
            if base_batched and not anything(self._pattern_of(stmt.value, env)):
                value = self._item_value(stmt, base_pattern, value)
            checks = []
            if stmt.alias_check:
                checks = e.alias_checks(stmt, batched=lambda var: self._numbers_when_1d(var, env))
                # What passed the checks is a number per example; batched, it is a row of the
                # batched base, which the write would change: it gets its own memory first.
                rows = [other for other, _ in stmt.alias_check if base_batched and anything(env.get(other, False))]
                if rows:
                    checks.append(e.comment(f"{', '.join(rows)}: a number per example, a row of the batched "
                                            f"{stmt.base}: copied before the write into {stmt.base}"))
                checks += [ast.Assign([name(other, True)], runtime_call("copy", name(other)), lineno=0)
                           for other in rows]
            if stmt.op is None:
                return checks + [ast.Assign([target], value, lineno=0)]
            return checks + [ast.AugAssign(target, ast.Add() if stmt.op == "+" else ast.Sub(), value)]
        if isinstance(stmt, ir.ExprStmt):
            return [e.effect(stmt.value)]
        if isinstance(stmt, ir.If):
            if anything(self._pattern_of(stmt.test, env)):
                raise NoBatchingRule("a branch on a value that differs between examples", stmt.origin)
            return [e.if_(stmt.test, stmt.negated, self._block(stmt.body, env), self._block(stmt.orelse, env))]
        if isinstance(stmt, ir.For):
            if any(anything(self._pattern_of(a, env)) for a in (stmt.start, stmt.stop, stmt.step)):
                raise NoBatchingRule("a loop whose trip count differs between examples", stmt.origin)
            if anything(env.get(stmt.var, False)):
                # the loop's ints go into a name that holds a batched value elsewhere (`t = x[0]`
                # before `for t in range(2)`): they would pass for a batch
                raise NoBatchingRule(f"the loop variable {stmt.var} holds a batched value elsewhere", stmt.origin)
            return [e.for_range(stmt.var, [stmt.start, stmt.stop, stmt.step], self._block(stmt.body, env))]
        if isinstance(stmt, ir.While):
            if anything(self._pattern_of(stmt.test, env)):
                raise NoBatchingRule("a while loop whose test differs between examples", stmt.origin)
            result = e.while_(stmt, self._block(stmt.cond, env), self._block(stmt.body, env))
            return result if isinstance(result, list) else [result]
        if isinstance(stmt, ir.Return):
            return [ast.Return(e.atom(stmt.value))]
        raise NoBatchingRule(f"no batching rule for {type(stmt).__name__}", stmt.origin)

    def _item_value(self, stmt: ir.SetItem, base: Pattern, lifted: ast.expr) -> ast.expr:
        """The unbatched value of `base[index] = value` into a batched base. An array takes it
        lifted (a trailing axis of length one, which the write broadcasts); a list or dict holds
        it as it is where the item is unbatched, and with the batch where the item is batched.
        (The batch is right for an array too, whose write takes it as it takes the lifted value:
        where the base may be either, a parameter, it gets the batch.)"""
        items = stmt.index.items
        if isinstance(base, tuple):  # a list of batched and unbatched items
            if len(items) == 1 and isinstance(items[0], ir.Const):
                slot = element(base, items[0].value)
            elif all(p == base[0] for p in base):
                slot = base[0]
            else:
                raise NoBatchingRule("a write into a list of batched and unbatched items at an index known at "
                                     "run time", stmt.origin)
        elif stmt.base in self.containers or len(items) == 1 and isinstance(items[0], ir.Const) \
                and isinstance(items[0].value, str):  # (a key: a dict, an argument's too)
            slot = True
        else:
            return lifted
        if not anything(slot):
            return self.emitter.atom(stmt.value)
        if slot is not True:
            raise NoBatchingRule("a write into an item that is a tuple of batched and unbatched items", stmt.origin)
        return runtime_call("batch_broadcast", self.emitter.atom(stmt.value), name(self.batch))

    def _index(self, index: ir.Index, env, stmt) -> ast.expr:
        """A per-example index of a batched array: the same leading axes; after an Ellipsis the
        batch axis is kept with a final `:`."""
        if any(anything(env.get(n, False)) for n in ir.names_in(index)):
            raise NoBatchingRule("an index that differs between examples", stmt.origin)
        items = list(index.items)
        if any(isinstance(item, ir.EllipsisIndex) for item in items):
            items.append(ir.Slice(None, None, None))
        return self.emitter.index(ir.Index(tuple(items)))

    # ---- expressions ------------------------------------------------------------------

    def _expr(self, value, env, stmt) -> ast.expr:
        e = self.emitter
        if isinstance(value, ir.Build) and value.kind == "dict" and self._value_pattern(value, env, stmt):
            # A dict's pattern is one for all its items: the unbatched ones get the batch.
            return ast.Dict([e.const(k) for k in value.keys], [self._batched_atom(a, env) for a in value.elts])
        if isinstance(value, (ir.Name, ir.Const, ir.Build)):
            return e.expr(value)
        if isinstance(value, ir.Subscript):
            base = self._pattern_of(value.value, env)
            if isinstance(base, tuple) and _known_item(value.index) is None \
                    and anything(base) and not all(p == base[0] for p in base):
                # `t[i]` of a tuple or list whose items are batched in some places only: which
                # one it reads, so whether it carries the batch, is known at run time only
                raise NoBatchingRule("an index into a tuple or list of batched and unbatched items", stmt.origin)
            if isinstance(base, tuple) or not anything(base):
                if any(anything(env.get(n, False)) for n in ir.names_in(value.index)):
                    raise NoBatchingRule("an index that differs between examples", stmt.origin)
                return e.expr(value)
            return ast.Subscript(e.atom(value.value), self._index(value.index, env, stmt), ast.Load())
        if isinstance(value, ir.Attribute):
            if not anything(self._pattern_of(value.value, env)):
                return e.expr(value)
            if value.attr in ("shape", "ndim", "size"):
                return runtime_call(f"example_{value.attr}", e.atom(value.value))
            if value.attr == "T":
                return runtime_call("batched_transpose", e.atom(value.value))
            raise NoBatchingRule(f"no batching rule for the attribute .{value.attr}", stmt.origin)
        if isinstance(value, ir.Call):
            return self._call(value, env, stmt)
        raise NoBatchingRule(f"no batching rule for {type(value).__name__}", stmt.origin)

    def _call(self, call: ir.Call, env, stmt) -> ast.expr:
        e = self.emitter
        fn = call.fn
        patterns = [self._pattern_of(a, env) for a in call.args]
        batched = [anything(p) for p in patterns]
        kw_batched = any(anything(self._pattern_of(a, env)) for _, a in call.kwargs)
        if is_user_function(fn):
            callee = self.by_python[id(fn)]
            fname, _ = self.function(callee, tuple(patterns))
            return ast.Call(name(fname), [e.atom(a) for a in call.args], [])
        batching = facts(fn).batching
        if batching in ("example_shape", "example_len") and batched[0]:  # np.shape, len
            return runtime_call(batching, e.atom(call.args[0]))
        if not any(batched) and not kw_batched:
            return e.expr(call)
        if _given_shape(call):  # the prototype's dtype, the same for every example: as it is
            if anything(self._pattern_of(_given_shape(call), env)):
                raise NoBatchingRule(f"{fn.__name__} of a shape that differs between examples", stmt.origin)
            return e.call(fn, [e.atom(a) for a in call.args], [(k, e.atom(a)) for k, a in call.kwargs])
        if kw_batched:
            raise NoBatchingRule(f"no batching rule for a keyword argument that differs between examples "
                                 f"({getattr(fn, '__name__', fn)})", stmt.origin)
        if fn is runtime.zeros_row and batched[0]:
            # the zero row of a scan over nothing: the batch axis (last) stays, one zero row each
            return e.call(fn, [e.atom(a) for a in call.args], [])
        if fn is runtime.batch_empty and not batched[0]:
            # The stack of s2s.lax.scan's outputs: stacked batched examples keep the batch last.
            return e.call(fn, [e.atom(a) for a in call.args], [])
        if getattr(fn, "__module__", None) == runtime.random.__name__:  # s2s.random: per example
            flags = ast.Tuple([ast.Constant(b) for b in batched], ast.Load())
            return ast.Call(parse_expr("runtime.random_per_example"),
                            [e.function_ref(fn), flags] + [e.atom(a) for a in call.args],
                            [ast.keyword(k, e.atom(a)) for k, a in call.kwargs])
        if fn in (operator.add, operator.mul) and any(isinstance(p, tuple) for p in patterns):
            if self._sequence_operation(call, patterns, stmt)[0]:  # concatenation, repetition: items as they are
                return e.call(fn, [e.atom(a) for a in call.args], [])
        if batching not in ("array", "join") and any(map(_mixed, patterns)):
            # NumPy takes a tuple or list display as one array: its unbatched items get the batch
            # first (np.sum([a, 1.0]) of a batched a), else they would not stack with the others
            args = list(call.args)
            for k, pattern in enumerate(patterns):
                if _mixed(pattern):
                    args[k] = self._conformed_items(call.args[k], pattern, env)
                    patterns[k] = batched[k] = True
            call = ir.Call(call.fn, tuple(args), call.kwargs)
        python_extremum = batching == "extremum" and len(call.args) == 2 and not call.kwargs
        if len(call.args) <= 2 and facts(fn).numpy is not None:
            fn = facts(fn).numpy  # math.sin -> np.sin, max -> np.maximum
        args = [self._atom(a, env, lift=True) for a in call.args]
        if python_extremum:
            # Python's max(a, b) is b if b > a else a: a NaN b gives a, where np.maximum gives NaN
            # (np.maximum otherwise, whose rule splits a tie's gradient as max's does).
            return e.call(np.where, [e.call(np.isnan, [args[1]], []), args[0], e.call(fn, args, [])], [])
        # An array given by keyword (np.clip's a_max=w) is an operand like a positional one: it
        # gets the trailing batch axis too, else it would line up with the batch (clip of the
        # example's x by w[b] instead of by w). Options (dtype=...) stay as they are.
        kwargs = [(k, self._atom(a, env, lift=k not in _OPTIONS)) for k, a in call.kwargs]
        if batching == "array" and len(args) == 1 and not kwargs and isinstance(patterns[0], tuple):
            # np.array([theta, omega, 2.0]) of per-example numbers, some batched: the rows stack
            # along the leading axis (before _same_shape, which takes np.array of one array)
            return runtime_call("batched_array", e.atom(call.args[0]), name(self.batch),
                                e.const(tuple(_flags(p) for p in patterns[0])))
        if _same_shape(fn):
            return e.call(fn, args, kwargs)
        if batching in _ALONG_AN_AXIS and batched[0] and not any(batched[1:]):
            return self._along_axis(call, stmt)
        if batching == "transpose" and len(call.args) <= 2 and not kwargs:
            # the axes as they are (lifted, a tuple of ints would become batched data)
            return runtime_call("batched_transpose", args[0], *[e.atom(a) for a in call.args[1:]])
        if batching == "reshape" and not kwargs and batched[0] and not any(batched[1:]):  # (np.ravel too)
            # the shape as it is: lifting it (a tuple of ints) would make it batched data
            shape = e.atom(call.args[1]) if len(call.args) > 1 else ast.Constant(-1)
            return runtime_call("batched_reshape", args[0], shape)
        if batching == "expand_dims" and len(call.args) == 2 and isinstance(call.args[1], ir.Const) and not kwargs:
            return e.call(fn, [args[0], e.const(_shift_axes(call.args[1].value))], [])
        if batching == "join" and len(call.args) == 1 and isinstance(patterns[0], tuple):
            given = dict(call.kwargs)
            axis = given.get("axis", ir.Const(0))
            if not isinstance(axis, ir.Const) or axis.value is None or set(given) - {"axis"}:
                raise NoBatchingRule(f"no batching rule for {fn.__name__} with these arguments", stmt.origin)
            return runtime_call(f"batched_{fn.__name__}", e.atom(call.args[0]), e.const(_shift_axes(axis.value)),
                                name(self.batch), e.const(tuple(anything(p) for p in patterns[0])))
        if batching == "float" and len(args) == 1:
            return ast.Call(parse_expr("np.asarray"), args, [ast.keyword("dtype", parse_expr("float"))])
        if facts(fn).reduction and len(call.args) == 1:
            given = dict(call.kwargs)
            axis = given.get("axis")
            others = [(k, e.atom(a)) for k, a in call.kwargs if k != "axis"]
            if axis is None or isinstance(axis, ir.Const) and axis.value is None:
                axis_expr = runtime_call("example_axes", e.atom(call.args[0]))
            elif isinstance(axis, ir.Const):
                axis_expr = e.const(_shift_axes(axis.value))
            else:
                raise NoBatchingRule("no batching rule for a reduction over a computed axis", stmt.origin)
            return e.call(fn, args, [("axis", axis_expr)] + others)
        if batching == "product" and len(args) == 2 and not kwargs:
            return runtime_call("batched_product", ast.Constant(facts(fn).product), e.atom(call.args[0]), e.atom(call.args[1]),
                                ast.Constant(batched[0]), ast.Constant(batched[1]))
        raise NoBatchingRule(f"no batching rule for {getattr(fn, '__name__', fn)}", stmt.origin)

    def _conformed_items(self, atom: ir.Name, pattern: Pattern, env) -> ir.Name:
        """A tuple or list of batched and unbatched items (pattern) as a tuple whose items all
        carry the batch, bound to a fresh name by a statement written before the current one."""
        def items(expr: ast.expr, p: Pattern) -> ast.expr:
            if _all_batched(p):
                return expr
            if _mixed(p):
                return ast.Tuple([items(ast.Subscript(expr, ast.Constant(k), ast.Load()), q)
                                  for k, q in enumerate(p)], ast.Load())
            return runtime_call("batch_broadcast", expr, name(self.batch))

        conformed = self.names.fresh(f"{atom.id}_batched")
        self.before.append(self.emitter.comment(f"{atom.id}, a tuple of batched and unbatched items, "
                                                "as NumPy takes it (one array): every item with the batch"))
        self.before.append(ast.Assign([name(conformed, True)], items(self.emitter.atom(atom), pattern), lineno=0))
        env[conformed] = True
        return ir.Name(conformed)

    def _along_axis(self, call: ir.Call, stmt) -> ast.expr:
        """np.cumprod(x, axis) and the like, of a batched x: the same per-example axis (negative
        ones move by one, past the batch); axis=None, over each example flattened."""
        e, fn = self.emitter, call.fn
        try:
            bound = lookup(fn).bind(call.args, call.kwargs)
        except TypeError:
            raise NoBatchingRule(f"no batching rule for {fn.__name__} with these arguments", stmt.origin) from None
        # Options after the axis (np.partition's kind) go as keywords, where the call gives them.
        params = list(bound)
        after = {p: bound.pop(p) for p in params[params.index("axis") + 1:]}
        later = [(p, e.atom(v)) for p, v in after.items() if isinstance(v, (ir.Name, ir.Const))]
        axis = bound.pop("axis")
        axis = axis.value if isinstance(axis, ir.Const) else axis
        if isinstance(axis, ir.Name):
            raise NoBatchingRule(f"no batching rule for {fn.__name__} over a computed axis", stmt.origin)
        x = e.atom(bound.pop(next(iter(bound))))
        others = [e.atom(v) if isinstance(v, (ir.Name, ir.Const)) else e.const(v) for v in bound.values()]
        if axis is not None:
            return e.call(fn, [x, *others], [("axis", e.const(_shift_axes(axis))), *later])
        if facts(fn).batching == "along_every_axis":  # np.flip: axis=None is every axis of an example
            return e.call(fn, [x], [("axis", runtime_call("example_axes", x))])
        flat = e.call(fn, [runtime_call("batched_reshape", x, ast.Constant(-1)), *others],
                      [("axis", ast.Constant(0)), *later])
        if facts(fn).batching == "along_axis_in_shape":  # np.roll keeps the shape: the flattened example goes back
            return runtime_call("batched_reshape", flat, runtime_call("example_shape", x))
        return flat


# Keyword arguments that are options of a NumPy function, not array operands (which are lifted).
_OPTIONS = frozenset({"dtype", "order", "casting", "copy", "subok", "ndmin", "like", "device"})


# The batching rules (Facts.batching) of functions of one array along an axis (their rules'
# placeholder `axis`), which batch by that axis.
_ALONG_AN_AXIS = ("along_axis", "along_every_axis", "along_axis_in_shape")


def _given_shape(call: ir.Call):
    """The shape of np.zeros_like(x, shape=(3,)), or ones_like or empty_like (a keyword, or the
    fifth argument): a new array of that shape, whose prototype x gives only its dtype. None
    where no shape is given. (np.full_like's fill value may be batched: it has no batching
    rule, and runs per example.)"""
    if facts(call.fn).batching != "prototype":
        return None
    shape = dict(call.kwargs).get("shape", call.args[4] if len(call.args) > 4 else None)
    return None if isinstance(shape, ir.Const) and shape.value is None else shape


def _all_batched(pattern: Pattern) -> bool:
    return all(map(_all_batched, pattern)) if isinstance(pattern, tuple) else pattern is True


def _mixed(pattern: Pattern) -> bool:
    """A tuple pattern some of whose items (at any depth) are batched and some not."""
    return isinstance(pattern, tuple) and anything(pattern) and not _all_batched(pattern)


def _flags(pattern: Pattern):
    """An item's pattern as batched_array takes it: True or False for a value, a tuple for a
    tuple or list display of values some of which are batched (np.array([[x, 1.0], [0.0, x]]))."""
    if isinstance(pattern, tuple) and anything(pattern) and not all(p is True for p in pattern):
        return tuple(_flags(p) for p in pattern)
    return anything(pattern)


def _known_item(index: ir.Index):
    """The item (an int) or slice of a tuple that an index of constants reads; else None."""
    if len(index.items) != 1:
        return None
    item = index.items[0]
    if isinstance(item, ir.Const) and isinstance(item.value, int):
        return item.value
    if isinstance(item, ir.Slice) and all(part is None or isinstance(part, ir.Const) and
                                          isinstance(part.value, (int, type(None)))
                                          for part in (item.lower, item.upper, item.step)):
        return slice(*(None if part is None else part.value for part in (item.lower, item.upper, item.step)))
    return None


def _containers(fn: ir.Function, env: dict) -> frozenset[str]:
    """fn's names that may hold a list or dict (a display, a copy of one, a parameter of a tuple
    pattern): a write into one stores the value itself, not into an array's slots."""
    found = {p for p in fn.params if isinstance(env.get(p), tuple)}
    assigns = []

    def walk(block):
        for stmt in block:
            if isinstance(stmt, ir.Assign) and not stmt.unpack:
                assigns.append(stmt)
            for child in ir.child_blocks(stmt):
                walk(child)

    walk(fn.body)
    changed = True
    while changed:
        changed = False
        for stmt in assigns:
            value, target = stmt.value, stmt.targets[0]
            if target not in found and (isinstance(value, ir.Build) and value.kind in ("list", "dict")
                                        or isinstance(value, ir.Name) and value.id in found):
                found.add(target)
                changed = True
    return frozenset(found)


def _first_batched(path: str, pattern: Pattern) -> str | None:
    if not isinstance(pattern, tuple):
        return path if pattern else None
    return next((found for k, p in enumerate(pattern) if (found := _first_batched(f"{path}[{k}]", p))), None)


def _shift_axes(axis):
    """A per-example axis as an axis of the batched array (batch last): negative axes move by one."""
    if isinstance(axis, tuple):
        return tuple(_shift_axes(a) for a in axis)
    return axis - 1 if axis < 0 else axis


def tree_pattern(tree, forced: bool = False) -> Pattern:
    """The batching pattern of an argument (batching.ArgTree); forced: batched even where its
    axis is None (the differentiated arguments of a vmapped gradient, broadcast to the batch)."""
    if tree[0] == "leaf":
        return forced or tree[1] is not None
    if tree[0] == "dict":
        if forced or any(anything(tree_pattern(c)) for c in tree[2]):
            raise NoBatchingRule("batching rules take tuples and arrays as arguments, not dicts")
        return False
    return tuple(tree_pattern(c, forced) for c in tree[1])


def argument_expr(path: str, tree, forced: bool, n: str) -> str:
    """The argument of the batched entry: mapped axes moved last, forced leaves broadcast."""
    if tree[0] == "leaf":
        if tree[1] is not None:
            return f"np.moveaxis({path}, {tree[1]}, -1)"
        return f"runtime.batch_broadcast({path}, {n})" if forced else path
    if tree[0] == "dict" or not anything(tree_pattern(tree, forced)):
        return path
    items = [argument_expr(f"{path}[{k}]", c, forced, n) for k, c in enumerate(tree[1])]
    if tree[0] == "namedtuple":
        return f"type({path})({', '.join(items)})"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _batched_module(functions: list[ir.Function], emitter: Emitter, patterns: tuple):
    """The prologue, the callees' primals (called with unbatched arguments) and the batched
    functions: (statements, batched entry's name, its result's pattern)."""
    vectorizer = Vectorizer(functions, emitter)
    batched_name, result = vectorizer.function(functions[-1], patterns, entry=True)
    body = prologue(emitter)  # after the batched functions: it holds the constants they read
    body += [primal_function(f, emitter) for f in functions[:-1]]
    body += vectorizer.defs
    return body, batched_name, result


def vmap_module(functions: list[ir.Function], emitter: Emitter, params: list[str], trees: list,
                out_structure: Any, leaf_paths: list[str], out_axes: list[int], description: str,
                display_path: str | None = None):
    """The statements of the vectorised module of the lowered functions (callees first, named
    by the emitter): primal and batched functions, and `<name>_vmap`, which moves the mapped
    axes last, calls the batched entry, and returns the output leaves with the batch moved to
    out_axes. Raises NoBatchingRule where a statement has no rule.

    Returns (statements, header lines, entries: the names of "vmap" and "batched")."""
    entry = functions[-1]
    body, batched_name, result = _batched_module(functions, emitter, tuple(tree_pattern(t) for t in trees))
    fresh = ir.Names(params + [batched_name]).fresh
    n, out = fresh("n"), fresh("result")
    size = next(s for s in (first_batched(p, t) for p, t in zip(params, trees)) if s)
    vmap_name = f"{emitter.function_names[id(entry.python)]}_vmap"
    lines = [f"def {vmap_name}({', '.join(params)}):",
             f'    """Vmap of {description}, batched over {described_axes(params, trees)}: vectorised NumPy by '
             f'batching rules (the batch moves to the last axis)."""',
             f"    {n} = {size}"]
    args = [argument_expr(p, t, False, n) for p, t in zip(params, trees)]
    lines.append(f"    {out} = {batched_name}({', '.join(args)})")
    leaves = []
    for path, batched, axis in zip(leaf_paths, leaf_patterns(out_structure, result), out_axes):
        value = f"{out}{path}" if batched else f"runtime.batch_broadcast({out}{path}, {n})"
        leaves.append(f"np.moveaxis({value}, -1, {axis})")
    lines.append(f"    return ({', '.join(leaves)}{',' if len(leaves) == 1 else ''})")
    body += ast.parse("\n".join(lines) + "\n").body
    lines = header(entry, f"vmap of {entry.name}, vectorised by batching rules", display_path)
    return body, lines, {"vmap": vmap_name, "batched": batched_name}


def total_module(functions: list[ir.Function], emitter: Emitter, params: list[str], trees: list,
                 forced: list[bool], has_aux: bool, display_path: str | None = None):
    """For vmap(grad(fn)): the vectorised batch of fn, with its differentiated arguments batched
    too, and `<name>_batched_total`, the sum of its outputs over the batch. Examples do not
    interact, so the gradient of the total with respect to a batched argument holds each
    example's gradient in its column.

    Returns (statements, header lines, entries: the names of "batched" and "total", and
    "result", the batching pattern of the batched entry's result)."""
    entry = functions[-1]
    patterns = tuple(tree_pattern(t, f) for t, f in zip(trees, forced))
    body, batched_name, result = _batched_module(functions, emitter, patterns)
    total = f"{emitter.function_names[id(entry.python)]}_batched_total"
    value = f"{batched_name}({', '.join(params)})" + ("[0]" if has_aux else "")
    body += ast.parse(
        f"def {total}({', '.join(params)}):\n"
        f'    """The sum over the batch: its gradient holds the gradient of each example."""\n'
        f"    return np.sum({value})\n").body
    what = f"the batch of {entry.name} and its total, for vmap of its gradient"
    return body, header(entry, what, display_path), {"batched": batched_name, "total": total, "result": result}
