"""Static facts about a normalized function that the transforms rely on.

- positions and enclosing loops of every statement (what may run after what),
- activity: varied (depends on a differentiated input) and useful (reaches the output),
- liveness, used to refuse in-place writes through aliases that would make a
  derivative wrong,
- which variables are subscripted, containers, or integer-valued.
"""

from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import runtime
from ..ir import nodes as ir
from ..errors import S2SError
from .liveness import Branches, Liveness, Loop
from .points_to import (ELEMENT_MARK, HELD, SAME, bind_parts, elements, forget, is_variable, pair, part_structures,
                        partners, parts, value_reads, whole)
from ..frontend.result_views import ELEMENT, reads_elements
from ..frontend.source import is_user_function
from ..rules import SELF_PRODUCT, Rule, facts, lookup


@dataclass
class StmtInfo:
    pos: int
    loops: tuple  # id() of enclosing For/While statements, outermost first
    parent: Any  # enclosing compound statement, or None at function level
    block_id: int  # id() of the list that holds the statement


# Calls whose result may hold the items of the list or dict they copy: `t.copy()` (lowered to
# runtime.copy, which copies the items too, where Python's copy holds them themselves: writes
# into them are refused either way), list(t), tuple(t), dict(d), np.copy(t) (conservatively).
CONTAINER_MARK = "container "  # the structure of a name that is a list or dict display (_own_sites)
_SHALLOW_COPIES = (builtins.list, builtins.tuple, builtins.dict, np.copy, runtime.copy)


def _makes_arrays(fn) -> bool:
    """A function whose result is an array or a number, never a list or dict: NumPy's (but those
    that return lists of arrays) and the batching helpers of vmap and scan."""
    if fn in (runtime.batch_empty, runtime.batch_example):
        return True
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", "")
    return (module == "numpy" or module.startswith("numpy.")) and name not in _NUMPY_LISTS


_NUMPY_LISTS = {"split", "array_split", "hsplit", "vsplit", "dsplit", "meshgrid", "broadcast_arrays",
                "atleast_1d", "atleast_2d", "atleast_3d", "unique", "nonzero", "where", "indices", "histogram",
                "gradient", "ix_"}


def rule_for(call: ir.Call, origin) -> Rule | None:
    if is_user_function(call.fn):
        return None
    if call.fn is operator.mul and len(call.args) == 2 and not call.kwargs \
            and all(isinstance(a, ir.Name) for a in call.args) and call.args[0].id == call.args[1].id:
        return lookup(SELF_PRODUCT)  # x * x: one contribution to x's adjoint
    return lookup(call.fn)


def bind(call: ir.Call, found: Rule, origin) -> dict:
    try:
        return found.bind(call.args, call.kwargs)
    except TypeError as exc:
        raise S2SError(f"call to {found.name} does not match its derivative rule ({exc})", origin,
                       "pass the arguments as NumPy documents them") from None


def differentiable_sources(stmt) -> list[str]:
    """Variables whose values flow differentiably into what the statement defines."""
    if isinstance(stmt, ir.SetItem):
        return [stmt.value.id] if isinstance(stmt.value, ir.Name) else []
    if isinstance(stmt, ir.Push):
        return [stmt.value.id] if isinstance(stmt.value, ir.Name) else []
    if isinstance(stmt, ir.ExprStmt) and stmt.mutates:
        # runtime.index_add(a, index, value) adds value into a; runtime.clear(a, index) zeroes.
        return [a.id for a in stmt.value.args[2:3] if isinstance(a, ir.Name)]
    if not isinstance(stmt, ir.Assign):
        return []
    value = stmt.value
    if isinstance(value, ir.Pop):
        return [value.tape]
    if isinstance(value, ir.Name):
        return [value.id]
    if isinstance(value, ir.Const):
        return []
    if isinstance(value, ir.Subscript):
        return ir.names_in(value.value)
    if isinstance(value, ir.Attribute):
        return [] if value.attr in ("shape", "ndim", "size", "dtype") else ir.names_in(value.value)
    if isinstance(value, ir.Build):
        return ir.names_in(value)
    if isinstance(value, ir.Call):
        found = rule_for(value, stmt.origin)
        if found is None or found.kind == "refuse":
            return ir.names_in(value)  # user functions; unknown and refused ones are checked later
        if found.kind == "nondifferentiable":
            return []
        bound = bind(value, found, stmt.origin)
        out = []
        for param in found.differentiable_inputs():
            atom = bound.get(param)
            if isinstance(atom, ir.Name):
                out.append(atom.id)
        return out
    return []


@dataclass
class Analysis:
    fn: ir.Function
    active_params: list[str]
    seeds: list[str]  # variables whose adjoints are seeded (the result)
    info: dict = field(default_factory=dict)
    defs: dict = field(default_factory=dict)  # var -> [stmt] (params map to "param")
    occurrences: dict = field(default_factory=dict)  # var -> [stmt]
    varied: set = field(default_factory=set)
    useful: set = field(default_factory=set)
    subscripted: set = field(default_factory=set)
    containers: set = field(default_factory=set)
    int_like: set = field(default_factory=set)
    mutated: set = field(default_factory=set)
    alias_of: dict = field(default_factory=dict)
    live_after: dict = field(default_factory=dict)

    def run(self) -> "Analysis":
        self._index(self.fn.body, (), None)
        for p in self.fn.params:
            self.defs.setdefault(p, []).insert(0, "param")
        self._activity()
        self._kinds()
        self._check_calls()
        self._aliases()
        return self

    # ---- structure --------------------------------------------------------------

    def _index(self, block, loops, parent):
        for stmt in block:
            self.info[id(stmt)] = StmtInfo(len(self.info), loops, parent, id(block))
            for var in ir.stmt_writes(stmt):
                self.defs.setdefault(var, []).append(stmt)
            for var in set(ir.stmt_reads(stmt)) | set(ir.stmt_writes(stmt)):
                self.occurrences.setdefault(var, []).append(stmt)
            inner = loops + (id(stmt),) if isinstance(stmt, (ir.For, ir.While)) else loops
            for child in ir.child_blocks(stmt):
                self._index(child, inner, stmt)

    def statements(self):
        return ir.walk(self.fn.body)

    def is_active(self, var: str) -> bool:
        return var in self.varied and var in self.useful

    def atom_active(self, atom) -> bool:
        return isinstance(atom, ir.Name) and self.is_active(atom.id)

    def may_run_after(self, later, earlier) -> bool:
        """Can statement `later` execute after statement `earlier` has executed?"""
        if later == "param":
            return False
        a, b = self.info[id(later)], self.info[id(earlier)]
        if set(a.loops) & set(b.loops):
            return True
        return a.pos > b.pos

    def enclosing_loops(self, stmt) -> tuple:
        return self.info[id(stmt)].loops

    # ---- activity ---------------------------------------------------------------

    def _activity(self):
        stmts = list(self.statements())
        self.varied = set(self.active_params)
        changed = True
        while changed:
            changed = False
            for stmt in stmts:
                sources = differentiable_sources(stmt)
                if any(s in self.varied for s in sources):
                    for target in ir.stmt_writes(stmt):
                        if not isinstance(stmt, ir.For) and target not in self.varied:
                            self.varied.add(target)
                            changed = True
        self.useful = set(self.seeds)
        changed = True
        while changed:
            changed = False
            for stmt in stmts:
                if isinstance(stmt, ir.For):
                    continue
                if any(t in self.useful for t in ir.stmt_writes(stmt)):
                    for source in differentiable_sources(stmt):
                        if source not in self.useful:
                            self.useful.add(source)
                            changed = True

    def _check_calls(self):
        for stmt in self.statements():
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Call)):
                continue
            call = stmt.value
            if not any(self.atom_active(a) for a in list(call.args) + [a for _, a in call.kwargs]):
                continue
            if not any(self.is_active(t) for t in stmt.targets):
                continue
            if is_user_function(call.fn):
                continue
            found = lookup(call.fn)
            name = getattr(call.fn, "__name__", repr(call.fn))
            if found is None and getattr(call.fn, "__module__", "").startswith("s2s.runtime"):
                # A helper of generated code (a second derivative being differentiated again);
                # the pipeline names the user's statement it came from (driver/origins.py)
                raise S2SError(f"s2s has no derivative of runtime.{name}, which computes a derivative of this "
                               "statement: derivatives of this order are not implemented for it",
                               stmt.origin,
                               "take one derivative fewer through this statement, or write it with functions "
                               "s2s differentiates to any order (a loop of products for np.prod and np.cumprod)")
            if found is None:
                raise S2SError(f"no derivative rule for {name}", stmt.origin,
                               "write the computation with supported NumPy functions, or add a "
                               "rule in templates/")
            if found.kind == "refuse":
                raise S2SError(f"s2s does not differentiate {name} with respect to its arguments",
                               stmt.origin, found.hint)
            check = facts(call.fn).options
            if check is not None and found.signature is not None:
                # Options written as constants are known now: refuse here, not when the code runs.
                try:
                    bound = found.bind(call.args, call.kwargs)
                except TypeError:
                    continue
                static = {k: v.value if isinstance(v, ir.Const) else v for k, v in list(bound.items())[1:]
                          if not isinstance(v, ir.Name)}
                problem = check(**static)
                if problem:
                    how = ", or compute the norm from np.abs, np.sum, np.max" if name.endswith("norm") else ""
                    raise S2SError(problem, stmt.origin, f"write one of the options s2s differentiates for {name} "
                                                         f"(the message names them){how}")

    # ---- kinds of variables -----------------------------------------------------

    def _kinds(self):
        for stmt in self.statements():
            if isinstance(stmt, ir.SetItem):
                self.subscripted.add(stmt.base)
            elif isinstance(stmt, ir.Assign):
                value = stmt.value
                if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
                    self.subscripted.add(value.value.id)
                    if all(isinstance(a, ir.Const) and isinstance(a.value, str) for a in value.index.items):
                        self.containers.add(value.value.id)
                elif isinstance(value, ir.Build):
                    self.containers.update(stmt.targets)
                elif isinstance(value, ir.Call) and is_user_function(value.fn):
                    # A helper may take or return a tuple, list, dict or namedtuple: adjoints that
                    # meet there are added leaf by leaf (tree_add), never concatenated.
                    self.containers.update(a.id for a in value.args if isinstance(a, ir.Name))
                    self.containers.update(stmt.targets)
                elif isinstance(value, ir.Attribute) and value.attr not in ("shape", "ndim", "size", "dtype"):
                    if isinstance(value.value, ir.Name):
                        self.containers.add(value.value.id)
                        self.subscripted.add(value.value.id)
                if stmt.unpack and isinstance(value, ir.Name):
                    self.containers.add(value.id)
            elif isinstance(stmt, ir.For):
                self.int_like.add(stmt.var)
        changed = True
        while changed:
            changed = False
            for stmt in self.statements():
                if not isinstance(stmt, ir.Assign) or len(stmt.targets) != 1 or stmt.targets[0] in self.int_like:
                    continue
                if self._int_valued(stmt.value):
                    self.int_like.add(stmt.targets[0])
                    changed = True
        # A variable assigned anything else is not known to be an int.
        for stmt in self.statements():
            if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 and not self._int_valued(stmt.value):
                self.int_like.discard(stmt.targets[0])

    def _int_valued(self, value) -> bool:
        def ok(atom):
            return (isinstance(atom, ir.Const) and isinstance(atom.value, (int, np.integer))
                    and not isinstance(atom.value, bool)) or (
                isinstance(atom, ir.Name) and atom.id in self.int_like)

        if isinstance(value, (ir.Name, ir.Const)):
            return ok(value)
        if isinstance(value, ir.Call):
            # Facts.integer: "always" an int (len, int, math.floor; not np.argmax with an axis,
            # round or // of arrays), or "kept" from int arguments (+, -, *, //, %, -x, +x, abs, min, max)
            integer = facts(value.fn).integer
            if integer == "always":
                return True
            if integer == "kept":
                return all(ok(a) for a in value.args)
        if isinstance(value, ir.Attribute) and value.attr in ("ndim", "size"):
            return True
        if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
            defs = [d for d in self.defs.get(value.value.id, []) if d != "param"]
            return bool(defs) and all(isinstance(d, ir.Assign) and isinstance(d.value, ir.Attribute)
                                      and d.value.attr == "shape" for d in defs)
        return False

    def is_container(self, var: str) -> bool:
        return var in self.containers

    # ---- aliasing ---------------------------------------------------------------

    def _aliases(self):
        """Refuse in-place writes that another live name could observe."""
        parent: dict[str, str] = {}

        def find(v):
            while parent.get(v, v) != v:
                v = parent[v]
            return v

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        for stmt in self.statements():
            if not isinstance(stmt, ir.Assign):
                continue
            value = stmt.value
            sources: list[str] = []
            if isinstance(value, ir.Name):
                sources = [value.id]
            elif isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
                sources = [value.value.id]
            elif isinstance(value, ir.Attribute) and isinstance(value.value, ir.Name):
                sources = [value.value.id]
            elif isinstance(value, ir.Build):
                sources = ir.names_in(value)
            elif isinstance(value, ir.Call) and (facts(value.fn).view or is_user_function(value.fn)):
                sources = ir.names_in(value) if is_user_function(value.fn) else ir.names_in(value.args[0])
            for source in sources:
                for target in stmt.targets:
                    union(target, source)
        for stmt in self.statements():
            # `t[k] = a` into a list or dict stores a itself: a write into a changes t[k]
            if isinstance(stmt, ir.SetItem) and stmt.base in self.containers and isinstance(stmt.value, ir.Name):
                union(stmt.base, stmt.value.id)
        mutations = [s for s in self.statements()
                     if isinstance(s, ir.SetItem) or (isinstance(s, ir.Assign) and s.inplace)]
        if not mutations:
            return
        self._liveness(params_live_at_exit=False)
        read_later = dict(self.live_after)
        self.live_after = {}
        self._liveness(params_live_at_exit=True)
        classes: dict[str, set] = {}
        for var in set(self.occurrences) | set(self.fn.params):
            classes.setdefault(find(var), set()).add(var)
        for var in {s.base if isinstance(s, ir.SetItem) else s.targets[0] for s in mutations}:
            self.mutated.add(var)
            for member in classes.get(find(var), {var}):
                self.alias_of[member] = classes.get(find(var), {var})
        self._points_to_check(read_later)

    # A flow-sensitive points-to analysis: which arrays may each name refer to here?
    def _points_to_check(self, read_later: dict) -> None:
        state = {p: frozenset({f"argument {p}"}) for p in self.fn.params}
        # Arrays captured from the closure or the module are constants: nothing may write into them.
        state.update({c: frozenset({f"constant {c}"}) for c in self.fn.constants if c not in state})
        for name in list(state):
            bind_parts(state, name, None)  # (what a tuple argument holds is not known here)
        self.bound_before: dict[int, frozenset] = {}
        self.container_sites: set[str] = set()  # objects that may be a list or dict (_store)
        self.list_slice_writes: list = []  # `t[i:j] = v` into a list display
        self._bound_block(self.fn.body, frozenset(self.fn.params))
        self._pt_block(self.fn.body, state, read_later)

    # Which names are bound on every path to a statement? A run-time check may read only those.
    def _bound_block(self, block, bound: frozenset) -> frozenset:
        for stmt in block:
            self.bound_before[id(stmt)] = bound
            if isinstance(stmt, ir.If):
                bound = self._bound_block(stmt.body, bound) & self._bound_block(stmt.orelse, bound)
            elif isinstance(stmt, ir.For):
                end = self._bound_block(stmt.body, bound | {stmt.var})
                bounds = (stmt.start, stmt.stop, stmt.step)
                runs = all(isinstance(b, ir.Const) for b in bounds) and len(range(*(b.value for b in bounds)))
                exits = any(isinstance(s, (ir.Break, ir.Continue)) for s in ir.walk(stmt.body))
                bound = end if runs and not exits else bound  # else the body may not have run to its end
            elif isinstance(stmt, ir.While):
                bound = self._bound_block(stmt.cond, bound)
                self._bound_block(stmt.body, bound)
            elif isinstance(stmt, ir.Assign):
                bound = bound | set(stmt.targets)
        return bound

    def _pt_block(self, block, state, read_later):
        for stmt in block:
            state = self._pt_stmt(stmt, state, read_later)
        return state

    @staticmethod
    def _join(a: dict, b: dict) -> dict:
        return {k: a.get(k, frozenset()) | b.get(k, frozenset()) for k in set(a) | set(b)}

    def _pt_stmt(self, stmt, state, read_later):
        if isinstance(stmt, ir.If):
            return self._join(self._pt_block(stmt.body, dict(state), read_later),
                              self._pt_block(stmt.orelse, dict(state), read_later))
        if isinstance(stmt, (ir.For, ir.While)):
            head = dict(state)
            if isinstance(stmt, ir.For):
                head[stmt.var] = frozenset({f"object {self.info[id(stmt)].pos}"})
                bind_parts(head, stmt.var, None)
            for _ in range(50):
                end = self._pt_block(stmt.body, dict(head), read_later) if isinstance(stmt, ir.For) else \
                    self._pt_block(stmt.body, self._pt_block(stmt.cond, dict(head), read_later), read_later)
                new = self._join(head, end)
                if new == head:
                    break
                head = new
            if isinstance(stmt, ir.While):
                return self._pt_block(stmt.cond, head, read_later)
            bounds = (stmt.start, stmt.stop, stmt.step)
            if all(isinstance(b, ir.Const) for b in bounds) and len(range(*(b.value for b in bounds))):
                return end  # the body runs at least once: its assignments have happened
            return head
        if isinstance(stmt, ir.SetItem):
            own = self._own_sites(state, stmt.base)
            if own is not None and not reads_elements(stmt.index):
                self.list_slice_writes.append(stmt)  # `t[1:] = [a, b]` (reverse mode refuses it)
            if own is not None:
                # `t[k] = v` into a list or dict rebinds a slot: no array's memory changes, only
                # what the names that hold t itself see (`u = t`)
                self._check_write(stmt, stmt.base, state, self.live_after[id(stmt)], arguments_too=False,
                                  only=own)
                if stmt.op is not None or stmt.augmented:
                    # `t[k] += v`: a number there is rebound, an array updated in place
                    self._check_item_update(stmt, own, state, self.live_after[id(stmt)])
            else:
                self._check_write(stmt, stmt.base, state, self.live_after[id(stmt)], arguments_too=True)
            return self._hold(self._store(stmt, state), stmt.value)
        if isinstance(stmt, ir.Push):  # t.append(v): t holds v
            return self._hold(state, stmt.value)
        if not isinstance(stmt, ir.Assign):
            return state
        site = f"object {self.info[id(stmt)].pos}"
        fresh = frozenset({site})
        if site in state.get(HELD, ()):  # (what an earlier pass made is held, not what this one makes)
            state = {**state, HELD: frozenset(f"{o} earlier" if o == site else o for o in state[HELD])}
        if any(site in whole(objects) for key, objects in state.items() if key != HELD):
            # What this statement made on an earlier pass of a loop is another array than the
            # one it makes now (`v = u.copy()` after `u = v`, double-buffered time stepping).
            renamed = {site: f"{site} earlier", ELEMENT_MARK + site: f"{ELEMENT_MARK}{site} earlier"}
            state = {k: frozenset(renamed.get(o, o) for o in objects) for k, objects in state.items()}
        if stmt.inplace:
            self._check_write(stmt, stmt.targets[0], state, read_later[id(stmt)], arguments_too=False)
            out = {**state, stmt.targets[0]: fresh}  # s2s rebinds: x = x op v
            bind_parts(out, stmt.targets[0], None)
            out[SAME] = forget(state, stmt.targets)
            return out
        value = stmt.value
        if self._may_make_container(value, state):
            self.container_sites.add(site)
        # a list or dict display (or a copy of one) is a container on this path; a name bound to
        # one keeps it (`u = t`): `t[k] = v` rebinds its slot (_own_sites)
        made_container = isinstance(value, ir.Build) and value.kind in ("list", "dict") or \
            isinstance(value, ir.Call) and value.fn is runtime.new_tape  # (generated code's tape: a list)
        shared = frozenset()
        made = None  # the elements' objects, where value is a tuple display
        element = None  # k, where value is p[k] of a tuple p
        if isinstance(value, ir.Name):
            shared = state.get(value.id, frozenset())
        elif isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name) \
                and self._own_sites(state, value.value.id) is not None:
            # t[k] of a list or dict display: an item, never t itself; t[1:]: a new list of items
            own = self._own_sites(state, value.value.id)
            # (what an earlier pass of a loop made there may be an item: the list made before)
            shared = frozenset(o for o in state.get(value.value.id, frozenset())
                               if o.removeprefix(ELEMENT_MARK) not in own)
            if not reads_elements(value.index):
                shared |= fresh
                made_container = True
        elif isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
            shared = state.get(value.value.id, frozenset())
            found, items = parts(state, value.value.id), value.index.items
            if found is not None and len(items) == 1 and isinstance(items[0], ir.Const) \
                    and type(items[0].value) is int and -len(found) <= items[0].value < len(found):
                shared = found[items[0].value]  # t[1] of a tuple t = (u, w): w itself
                element = items[0].value % len(found)
            elif reads_elements(value.index):  # a number, or a view where the indices leave axes
                shared = elements(shared)
        elif isinstance(value, ir.Attribute) and isinstance(value.value, ir.Name):
            if value.attr not in ("shape", "ndim", "size", "dtype"):
                shared = state.get(value.value.id, frozenset())
        elif isinstance(value, ir.Build):
            shared = frozenset().union(*(state.get(n, frozenset()) for n in ir.names_in(value))) | fresh
            if value.kind == "tuple":
                made = [state.get(e.id, frozenset()) if isinstance(e, ir.Name) else frozenset() for e in value.elts]
        elif isinstance(value, ir.Call) and is_user_function(value.fn):
            summary = self.fn.callee_results.get(id(value.fn))
            if summary is None or value.kwargs:  # not summarised: it may return any argument whole
                shared = frozenset().union(*(state.get(n, frozenset()) for n in ir.names_in(value)))
            else:
                for k, arg in enumerate(value.args):
                    objects = frozenset().union(*(state.get(n, frozenset()) for n in ir.names_in(arg)))
                    shared |= elements(objects) if summary.get(k) == ELEMENT else \
                        objects if k in summary else frozenset()
            shared |= fresh
        elif isinstance(value, ir.Call) and facts(value.fn).view:
            shared = frozenset().union(*(state.get(n, frozenset()) for n in ir.names_in(value.args[0]))) | fresh
        elif isinstance(value, ir.Call) and value.fn in _SHALLOW_COPIES and value.args and any(
                self._is_container_object(o) for n in ir.names_in(value.args[0]) for o in state.get(n, ())) and (
                value.fn is not runtime.copy or self._is_display(value.args[0], state)):
            # (runtime.copy is also how generated code tapes a value: `c_tape[k] = runtime.copy(c)`
            # of a number a helper returned must not make the tape hold what c may: only the copy
            # of a name that is a list or dict display on every path here counts)
            # list(t), tuple(t), dict(d), t.copy() of a list or dict: a new container that holds
            # t's items themselves (a write into u[0] changes t[0] too), not t
            shared = fresh
            for n in ir.names_in(value.args[0]):
                own = self._own_sites(state, n) or ()
                shared |= {o for o in state.get(n, frozenset()) if o.removeprefix(ELEMENT_MARK) not in own}
            if value.fn in (builtins.list, builtins.dict, runtime.copy) and isinstance(value.args[0], ir.Name) \
                    and self._own_sites(state, value.args[0].id) is not None:
                made_container = True
        else:
            shared = fresh
        out = dict(state)
        out[SAME] = forget(state, stmt.targets)
        if isinstance(value, ir.Build) and value.kind != "tuple" or isinstance(value, ir.Call):
            # what the result may refer to but itself, it may hold (a tuple holds its elements
            # too, but what comes to hold the tuple holds its objects)
            out[HELD] = state.get(HELD, frozenset()) | (whole(shared) - fresh)
            if isinstance(value, ir.Call) and getattr(value.fn, "__module__", None) == "builtins" \
                    and value.fn not in _SHALLOW_COPIES:  # dict(a=t), zip(t, u), sorted([t, u]): may hold them
                out[HELD] |= frozenset().union(*(whole(state.get(n, frozenset())) for n in ir.names_in(value)))
        unpacked = parts(state, value.id) if isinstance(value, ir.Name) else made
        if isinstance(value, ir.Name) and unpacked is not None:
            structures = part_structures(state, value.id, len(unpacked))
            names = [f"{value.id}[{k}]" for k in range(len(unpacked))]
        else:  # a tuple display: its elements' structures, where they are names
            structures = [state.get(f"{e.id}[]") if isinstance(e, ir.Name) else None for e in value.elts] \
                if made is not None else None
            names = [e.id if isinstance(e, ir.Name) else None for e in value.elts] if made is not None else None
        if len(stmt.targets) > 1 and unpacked is not None and len(unpacked) == len(stmt.targets):
            for target, objects, structure in zip(stmt.targets, unpacked, structures):
                out[target] = objects or fresh  # a, b = (u, w): a is u, b is w
                bind_parts(out, target, None)
                if structure and all(o.startswith(CONTAINER_MARK) for o in structure):
                    out[f"{target}[]"] = structure
            self._pair_up(state, out, list(zip(stmt.targets, names)))
            return out
        for target in stmt.targets:
            out[target] = shared or fresh
            bind_parts(out, target, unpacked if len(stmt.targets) == 1 else None,
                       structures if len(stmt.targets) == 1 else None)
        if len(stmt.targets) == 1 and not stmt.unpack:
            target = stmt.targets[0]
            if made_container:
                out[f"{target}[]"] = frozenset({CONTAINER_MARK + site})
            elif isinstance(value, ir.Name) and self._own_sites(state, value.id) is not None:
                out[f"{target}[]"] = state[f"{value.id}[]"]
                self._pair_up(state, out, [(target, value.id)])
            elif element is not None:  # u = p[1] of a tuple p: what p holds there
                structure = state.get(f"{value.value.id}[{element}][]", frozenset())
                if structure and all(o.startswith(CONTAINER_MARK) for o in structure):
                    out[f"{target}[]"] = structure
                self._pair_up(state, out, [(target, f"{value.value.id}[{element}]")])
            if unpacked is not None and names is not None:  # p = (u, w), or p = q of a tuple q
                self._pair_up(state, out, [(f"{target}[{k}]", n) for k, n in enumerate(names)])
        return out

    @staticmethod
    def _pair_up(state: dict, out: dict, bindings: list) -> None:
        """SAME after names are bound at once to what others were: [(target, source)] (out[SAME]
        has already forgotten the targets). A target and a source that may be one display stay so."""
        targets = {t for t, _ in bindings}
        same = set(out[SAME])
        for k, (target, source) in enumerate(bindings):
            if source is None:
                continue
            for other in partners(state, source) | {source}:
                if not any(other == t or other.startswith(t + "[") for t in targets):
                    same.add(pair(target, other))
            for target2, source2 in bindings[k + 1:]:
                if source2 is not None and (source2 == source or source2 in partners(state, source)):
                    same.add(pair(target, target2))
        out[SAME] = frozenset(same)

    def _hold(self, state: dict, *names) -> dict:
        """The state after a list, dict or helper's result may come to hold what names refer to."""
        names = [n.id if isinstance(n, ir.Name) else n for n in names]
        objects = frozenset().union(*(whole(state.get(n, frozenset())) for n in names if isinstance(n, str)))
        if not objects:
            return state
        return {**state, HELD: state.get(HELD, frozenset()) | objects}

    def _is_display(self, atom, state: dict) -> bool:
        return isinstance(atom, ir.Name) and self._own_sites(state, atom.id) is not None

    @staticmethod
    def _own_sites(state: dict, name: str) -> frozenset | None:
        """The objects a list or dict display made that name is on every path here (None where
        it may be anything else on some path)."""
        structure = state.get(f"{name}[]", frozenset())
        if not structure or not all(s.startswith(CONTAINER_MARK) for s in structure):
            return None
        return frozenset(s.removeprefix(CONTAINER_MARK) for s in structure)

    # Lists and dicts hold their items themselves: after `t[k] = a`, a write into a changes t[k].
    # The objects that may be one are those a list or dict display made, and what a helper or a
    # call on one of them returned (`t.copy()`); an array's `x[i] = row` copies row's values.
    def _may_make_container(self, value, state) -> bool:
        if isinstance(value, ir.Build):
            return value.kind in ("list", "dict")
        if isinstance(value, ir.Call) and _makes_arrays(value.fn):
            return False  # (np.stack(t) of a list t is an array that copied its items)
        if isinstance(value, ir.Call):
            return is_user_function(value.fn) or any(
                self._is_container_object(o) for n in ir.names_in(value) for o in state.get(n, ()))
        return False

    def _is_container_object(self, o: str) -> bool:
        return o.removeprefix(ELEMENT_MARK).removesuffix(" earlier") in self.container_sites

    def _store(self, stmt, state: dict) -> dict:
        """The state after stmt = `t[k] = a`: where t may be a list or dict, every name that holds
        it now also holds what a holds."""
        if not isinstance(stmt.value, ir.Name) or stmt.op is not None:
            return state
        held = {o for o in whole(state.get(stmt.base, frozenset())) if self._is_container_object(o)}
        stored = state.get(stmt.value.id, frozenset())
        if not held or not stored:
            return state
        return {k: objects | stored if is_variable(k) and whole(objects) & held else objects
                for k, objects in state.items()}

    def _check_write(self, stmt, var, state, live, arguments_too, only=None):
        # Writing into var means var is an array: where it came from `x[i]`, a view of x.
        # only: the objects the write changes, where they are not all var may refer to.
        objects = whole(state.get(var, frozenset()))
        if only is not None:
            objects = frozenset(o for o in objects if o.removesuffix(" earlier") in only)
        shown = self.fn.display.get  # the user's names of variables s2s renamed (an s2s.lax body's)
        v = shown(var, var)
        if arguments_too:
            arguments = sorted(o.split()[1] for o in objects if o.startswith("argument "))
            if arguments:
                a = arguments[0]
                raise S2SError(f"writing into {v} changes the argument {a} in place", stmt.origin,
                               f"copy it first: {v} = {a}.copy()" if var == a
                               else f"copy it first: {v} = {v}.copy()")
        constants = sorted(o.split()[1] for o in objects if o.startswith("constant "))
        if constants:
            c = constants[0]
            raise S2SError(f"writing into {v} changes {c!r}, an array s2s captured from the closure or the "
                           "module as a constant", stmt.origin,
                           f"copy it first ({v} = {c}.copy()), or pass {c} as an argument")
        others = sorted(o for o, objs in state.items()
                        if o != var and is_variable(o) and whole(objs) & objects and o in live)
        if only is not None and not {o.removesuffix(" earlier") for o in state.get(HELD, ())} & only:
            # No list, dict or helper's result holds the display var is: another display shares
            # it only by being it (`u = t`, or a swap `a, b = b, a` of two lists, which are not)
            others = [o for o in others if self._own_sites(state, o) is None or pair(var, o) in state.get(SAME, ())]
        if not others:
            return
        # Names that share var's memory only through integer indexing (`c = var[1]`) are numbers
        # where the indices cover every axis: a write into var then changes nothing they hold.
        # Which it is is known only when the code runs, so a SetItem checks it there.
        surely = [o for o in others if state[o] & objects]
        bound = self.bound_before[id(stmt)]
        if isinstance(stmt, ir.SetItem) and not surely and all(o in bound for o in others):
            def message(other):
                o = shown(other, other)
                if all(x.startswith(ELEMENT_MARK) for x in state[other]):  # o = var[i]: refused where a row
                    reason = f"writing into {v} would also change {o}, a view of it"
                else:  # a tuple, list or result that holds what integer indexing read from var
                    reason = (f"writing into {v} would also change {o} where it holds rows of {v} (s2s cannot "
                              f"check at run time that {o}, made from what indexing read from {v}, holds numbers only)")
                error = S2SError(reason, stmt.origin, f"make {v} a copy ({v} = {v}.copy()) before writing into it")
                return str(error).splitlines()[0]

            stmt.alias_check = tuple((o, message(o)) for o in others)
            return
        others = surely + [o for o in others if o not in surely]
        if isinstance(stmt, ir.Assign):
            # For numbers `x op= v` rebinds x and nothing else changes; for arrays NumPy would
            # also change the other name where it shares x's memory (`y = x[1]` is a row of a
            # 2-d x, a number from a 1-d x). Which one it is is known only when the code runs.
            op = _op_symbol(stmt.value.fn)

            a_list = self._own_sites(state, var) is not None  # a list (or dict) display on every path here

            def message(other, relation="also refers to"):
                if a_list:  # `t += [v]` extends the list, `t *= 2` repeats it, in place
                    what = "extends" if op == "+" else "repeats"
                    error = S2SError(f"`{v} {op}= ...` {what} in place the list {v}, which {shown(other, other)} "
                                     f"{relation}", stmt.origin, f"write `{v} = {v} {op} ...` to make a new list")
                else:
                    error = S2SError(f"`{v} {op}= ...` updates an array that {shown(other, other)} {relation}",
                                     stmt.origin, f"write `{v} = {v} {op} ...` to make a new array")
                return str(error).splitlines()[0]

            unbound = [o for o in others if o not in self.bound_before[id(stmt)]]
            if unbound:  # not bound on every path here: the check cannot read it, so refuses any array
                o = shown(unbound[0], unbound[0])
                relation = f"may also refer to ({o} is not bound on every path to here, so s2s cannot check)"
                stmt.alias_check = ((None, message(unbound[0], relation)),)
            else:
                stmt.alias_check = tuple((o, message(o)) for o in others)
            return
        o = shown(others[0], others[0])
        raise S2SError(f"writing into {v} would also change {o}, which may share its memory",
                       stmt.origin, f"make {v} a copy ({v} = {v}.copy()) before writing into it")

    def _check_item_update(self, stmt, own, state, live):
        """`t[k] += v` (or *=) into a list or dict display t: Python rebinds the slot where the
        item is a number, and updates it in place where it is an array. Where the items may be
        arrays that another live name, an argument or a constant shares, the code checks at run
        time that the item is not an array (alias_check (None, message) of a SetItem)."""
        items = frozenset(o for o in whole(state.get(stmt.base, frozenset()))
                          if o.removesuffix(" earlier") not in own)
        shown = self.fn.display.get
        t = shown(stmt.base, stmt.base)
        sharing = sorted(o.split()[1] for o in items if o.startswith(("argument ", "constant ")))
        sharing += sorted(shown(o, o) for o, objs in state.items()
                          if o != stmt.base and is_variable(o) and whole(objs) & items and o in live)
        if not sharing:
            return
        op = stmt.op or _op_symbol(getattr(self._defining_call(stmt.value), "fn", None))
        error = S2SError(f"`{t}[...] {op}= ...` would also change {sharing[0]}, which may refer to the array {t} "
                         "holds there (an array is updated in place)", stmt.origin,
                         f"write `{t}[...] = {t}[...] {op} ...` to store a new array")
        stmt.alias_check = ((None, str(error).splitlines()[0]),)

    def _defining_call(self, atom):
        """The call that defined atom (a temporary of `t[k] *= v`), or None."""
        if not isinstance(atom, ir.Name):
            return None
        defs = [d for d in self.defs.get(atom.id, []) if isinstance(d, ir.Assign)]
        return defs[-1].value if len(defs) == 1 and isinstance(defs[-1].value, ir.Call) else None

    def _liveness(self, params_live_at_exit: bool = True):
        result = self.fn.result
        exit_live = set(ir.names_in(result)) | (set(self.fn.params) if params_live_at_exit else set())
        _IRLiveness(self.live_after).block(self.fn.body, exit_live)

    def defs_may_clobber(self, var: str, at, *, operand: bool) -> bool:
        """May `var` change between statement `at` and the reverse sweep's visit of it?

        operand: the value is read by `at` (so `at` itself overwriting var clobbers it);
        otherwise the value is the one `at` produced.
        """
        sites = list(self.defs.get(var, []))
        for other in self.alias_of.get(var, ()):  # in-place writes through aliases
            if other != var:
                sites += [d for d in self.defs.get(other, []) if isinstance(d, ir.SetItem)]
        for site in sites:
            if site == "param":
                continue
            if isinstance(site, ir.For) and site.var == var and id(site) in self.enclosing_loops(at):
                continue  # the reverse loop reconstructs its own loop variable
            if site is at:
                if operand or self.enclosing_loops(at):
                    return True
                continue
            if self.may_run_after(site, at):
                return True
        return False


def analyse(fn: ir.Function, active_params: list[str]) -> Analysis:
    """The analysis a transform starts from: derivatives flow from the returned value."""
    result = fn.result
    return Analysis(fn, active_params, [result.id] if isinstance(result, ir.Name) else []).run()


def _op_symbol(fn) -> str:
    return {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.pow: "**", operator.matmul: "@", operator.floordiv: "//",
            operator.mod: "%"}.get(fn, "?")


class _IRLiveness(Liveness):
    """Liveness on the IR, recording what is live after each statement (by id)."""

    def __init__(self, live_after: dict):
        self.live_after = live_after

    def after(self, stmt, live: set) -> None:
        self.live_after[id(stmt)] = set(live)

    def structure(self, stmt, live: set) -> Branches | Loop | None:
        if isinstance(stmt, ir.If):
            return Branches(set(ir.stmt_reads(stmt)), [stmt.body, stmt.orelse])
        if isinstance(stmt, ir.For):
            return Loop(stmt.body, reads=set(ir.stmt_reads(stmt)), bound={stmt.var})
        if isinstance(stmt, ir.While):
            return Loop(stmt.body, reads=set(ir.stmt_reads(stmt)), test=set(ir.names_in(stmt.test)), pre=stmt.cond)
        return None

    def simple(self, stmt, live: set, record: bool) -> set:
        kills = set(stmt.targets) if isinstance(stmt, ir.Assign) and not stmt.inplace else set()
        return (live - kills) | set(value_reads(stmt))
