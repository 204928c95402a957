"""The points-to analysis that checks in-place writes (PointsToCheck, run by activity.py's Analysis).

At each statement the analysis maps every variable to the set of objects it may refer to:
"argument x", "constant c", or "object <pos>" (what the statement at position pos made).
An object marked ELEMENT_MARK is one the variable holds only through integer indexing (`c = m[1]`):
a number where the indices cover every axis, a view where they do not.

A tuple keeps its elements apart. After `carry = (v, acc)` and `v2, acc2 = carry` (how an
s2s.lax loop passes a tuple carry to its body), v2 may refer to what v may and acc2 to what
acc may, where the sets alone would give each of them both. Tuples are immutable, so what a
tuple holds at position k is fixed when it is made. The state keeps this under keys that no
variable can have: "carry[]" for the structure ("tuple 2"; "unknown" where some path bound
carry to anything else) and "carry[0]", "carry[1]" for the elements' objects. The join of two
states (a union, key by key) then keeps a structure only where every path that bound the name
agrees on it.

A write matters only to names whose values are read after it (value_reads): a name read
for its shape or dtype alone is not one.
"""

from __future__ import annotations

import builtins
import operator

from .. import runtime
from ..errors import S2SError
from ..frontend.result_views import ELEMENT, reads_elements
from ..frontend.source import is_user_function
from ..ir import nodes as ir
from ..rules import facts

ELEMENT_MARK = "element of "  # an object a name holds only through integer indexing
UNKNOWN = frozenset({"unknown"})
# Keys no variable can have (they start with "["):
# SAME: pairs "a\x00b" of names (or a tuple's element, "p[0]") that may be one list or dict
# display; a name that is a display on every path and is not paired with t is another list than t.
# HELD: the objects some list, dict, helper's result or appended-to list may hold as an item.
SAME = "[same]"
HELD = "[held]"


CONTAINER_MARK = "container "  # the structure of a name that is a list or dict display (_own_sites)


def _copies(fn) -> bool:
    """Calls whose result may hold the items of the list or dict they copy (Facts.copies):
    `t.copy()` (lowered to runtime.copy, which copies the items too, where Python's copy holds
    them themselves: writes into them are refused either way), list(t), tuple(t), dict(d),
    np.copy(t) (conservatively)."""
    return facts(fn).copies


def _makes_arrays(fn) -> bool:
    """A function whose result is an array or a number, never a list or dict (Facts.array_result:
    NumPy's, but those that may return lists of arrays, and the batching helpers of vmap and scan)."""
    return facts(fn).array_result


def _op_symbol(fn) -> str:
    return {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.pow: "**", operator.matmul: "@", operator.floordiv: "//",
            operator.mod: "%", operator.and_: "&", operator.or_: "|", operator.xor: "^"}.get(fn, "?")


def pair(a: str, b: str) -> str:
    return "\x00".join(sorted((a, b)))


def partners(state: dict, name: str) -> set[str]:
    """The names (and tuple elements) that may be the same list or dict display as name."""
    out = set()
    for p in state.get(SAME, ()):
        a, b = p.split("\x00")
        if a == name:
            out.add(b)
        elif b == name:
            out.add(a)
    return out


def forget(state: dict, names) -> frozenset:
    """SAME without the pairs of names (and their tuple elements), which are being rebound."""
    def touched(m):
        return any(m == n or m.startswith(n + "[") for n in names)
    return frozenset(p for p in state.get(SAME, ()) if not any(touched(m) for m in p.split("\x00")))


def elements(objects: frozenset) -> frozenset:
    """The objects as integer indexing reads from them."""
    return frozenset(o if o.startswith(ELEMENT_MARK) else ELEMENT_MARK + o for o in objects)


def whole(objects: frozenset) -> frozenset:
    """The objects themselves, with or without the mark."""
    return frozenset(o.removeprefix(ELEMENT_MARK) for o in objects)


def is_variable(key: str) -> bool:
    """A key of the state that is a variable (not a tuple's structure or element)."""
    return "[" not in key


def parts(state: dict, name: str) -> list[frozenset] | None:
    """The objects of each element of name, where it is a tuple on every path here."""
    structure = state.get(f"{name}[]", UNKNOWN)
    if len(structure) != 1 or not next(iter(structure)).startswith("tuple "):
        return None
    n = int(next(iter(structure)).split()[1])
    return [state.get(f"{name}[{k}]", frozenset()) for k in range(n)]


def bind_parts(state: dict, name: str, found: list[frozenset] | None, structures: list | None = None) -> None:
    """Record (in place) that name now holds a tuple with these elements, or (None) anything;
    structures: each element's structure (name[k][]), where it is a list or dict display."""
    for key in [k for k in state if k.startswith(f"{name}[")]:
        del state[key]
    if found is None:
        state[f"{name}[]"] = UNKNOWN
        return
    state[f"{name}[]"] = frozenset({f"tuple {len(found)}"})
    for k, objects in enumerate(found):
        state[f"{name}[{k}]"] = objects
        state[f"{name}[{k}][]"] = structures[k] if structures and structures[k] else UNKNOWN


def part_structures(state: dict, name: str, n: int) -> list:
    """The structures of a tuple's elements (bind_parts)."""
    return [state.get(f"{name}[{k}][]", UNKNOWN) for k in range(n)]


# Where a function reads an argument only for its shape and dtype (its structure, for a tuple:
# Facts.reads_shape_of, shape_argument), no write into the memory it shares can change what it reads. The reverse code s2s writes reads
# `_t3_shape` and `_t3` this way after the primal wrote into the array `_t3 = m[1]` is a row of;
# a second derivative of it must not count those reads as uses of the row's values.


def value_reads(stmt) -> list[str]:
    """The variables whose values (not only shape and dtype) the statement reads: the in-place
    write checks ask which names a write may change that are still used after it."""
    if isinstance(stmt, ir.Assign) and not stmt.inplace:
        value = stmt.value
        if isinstance(value, ir.Attribute) and isinstance(value.value, ir.Name) and value.attr in ir.SHAPE_ATTRIBUTES:
            return []
        known = facts(value.fn) if isinstance(value, ir.Call) else None
        shape_only = () if known is None else known.reads_shape_of or (
            (known.shape_argument,) if known.shape_argument is not None else ())
        if shape_only:
            return [n for k, a in enumerate(value.args)
                    for n in ([] if k in shape_only and isinstance(a, ir.Name) else ir.names_in(a))] + \
                [n for _, a in value.kwargs for n in ir.names_in(a)]
    return ir.stmt_reads(stmt)


class PointsToCheck:
    """A flow-sensitive points-to analysis of a function (which objects may each name refer to
    here?) that refuses, at their statements, the in-place writes another live name could see.
    an: the function's Analysis (activity.py), for its statements' positions, definitions and
    liveness. After run: list_slice_writes, the `t[i:j] = v` into a list display (reverse mode
    refuses those it differentiates)."""

    def __init__(self, an):
        self.an = an

    def run(self, read_later: dict) -> "PointsToCheck":
        state = {p: frozenset({f"argument {p}"}) for p in self.an.fn.params}
        # Arrays captured from the closure or the module are constants: nothing may write into them.
        state.update({c: frozenset({f"constant {c}"}) for c in self.an.fn.constants if c not in state})
        for name in list(state):
            bind_parts(state, name, None)  # (what a tuple argument holds is not known here)
        self.bound_before: dict[int, frozenset] = {}
        self.container_sites: set[str] = set()  # objects that may be a list or dict (_store)
        self.list_slice_writes: list = []  # `t[i:j] = v` into a list display
        self._bound_block(self.an.fn.body, frozenset(self.an.fn.params))
        self._pt_block(self.an.fn.body, state, read_later)
        return self

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
                head[stmt.var] = frozenset({f"object {self.an.info[id(stmt)].pos}"})
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
                self._check_write(stmt, stmt.base, state, self.an.live_after[id(stmt)], arguments_too=False,
                                  only=own)
                if stmt.op is not None or stmt.augmented:
                    # `t[k] += v`: a number there is rebound, an array updated in place
                    self._check_item_update(stmt, own, state, self.an.live_after[id(stmt)])
            else:
                self._check_write(stmt, stmt.base, state, self.an.live_after[id(stmt)], arguments_too=True)
            return self._hold(self._store(stmt, state), stmt.value)
        if isinstance(stmt, ir.Push):  # t.append(v): t holds v, as after t[k] = v
            return self._hold(self._store_into(stmt.tape, stmt.value, state), stmt.value)
        if not isinstance(stmt, ir.Assign):
            return state
        site = f"object {self.an.info[id(stmt)].pos}"
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
            if value.attr not in ir.SHAPE_ATTRIBUTES:
                shared = state.get(value.value.id, frozenset())
        elif isinstance(value, ir.Build):
            shared = frozenset().union(*(state.get(n, frozenset()) for n in ir.names_in(value))) | fresh
            if value.kind == "tuple":
                made = [state.get(e.id, frozenset()) if isinstance(e, ir.Name) else frozenset() for e in value.elts]
        elif isinstance(value, ir.Call) and is_user_function(value.fn):
            summary = self.an.fn.callee_results.get(id(value.fn))
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
        elif isinstance(value, ir.Call) and _copies(value.fn) and value.args and any(
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
                    and not _copies(value.fn):  # dict(a=t), zip(t, u), sorted([t, u]): may hold them
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
        if stmt.op is not None:
            return state
        return self._store_into(stmt.base, stmt.value, state)

    def _store_into(self, base: str, value, state: dict) -> dict:
        """The state after the list or dict base comes to hold value (t[k] = a, t.append(a))."""
        if not isinstance(value, ir.Name):
            return state
        held = {o for o in whole(state.get(base, frozenset())) if self._is_container_object(o)}
        stored = state.get(value.id, frozenset())
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
        shown = self.an.fn.display.get  # the user's names of variables s2s renamed (an s2s.lax body's)
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
                if stmt.value.fn is runtime.scatter_add:  # (the statement np.add.at(v, indices, values))
                    error = S2SError(f"np.add.at({v}, ...) updates an array that {shown(other, other)} {relation}",
                                     stmt.origin, f"add into a copy ({v} = {v}.copy() before np.add.at), or "
                                     f"read {shown(other, other)} before it")
                elif a_list:  # `t += [v]` extends the list, `t *= 2` repeats it, in place
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
        loop = self._loop_over(others[0])
        if loop is not None:  # (others[0] is what the frontend made of `for k in t:`, not the user's)
            k, over = loop
            raise S2SError(f"writing into {v} inside the loop `for {k} in {over}:` is not supported: the loop reads "
                           f"its keys or items from {over} as it runs, so the write may change what it goes over",
                           stmt.origin, f"where {over} is a dict, loop over its keys: `for {k} in {over}.keys():`; "
                           f"where it is a list or array, loop over a copy made before the loop: "
                           f"`for {k} in list({over}):`")
        o = shown(others[0], others[0])
        raise S2SError(f"writing into {v} would also change {o}, which may share its memory",
                       stmt.origin, f"make {v} a copy ({v} = {v}.copy()) before writing into it")

    def _loop_over(self, keys: str) -> tuple[str, str] | None:
        """(k, t) where keys holds what `for k in t:` goes over (runtime.loop_keys, lower.py)."""
        defs = self.an.defs.get(keys, [])
        if not defs or not all(isinstance(d, ir.Assign) and isinstance(d.value, ir.Call)
                               and d.value.fn is runtime.loop_keys for d in defs):
            return None
        shown = self.an.fn.display.get
        seq = defs[0].value.args[0]
        if not isinstance(seq, ir.Name):
            return None
        seq_defs = self.an.defs.get(seq.id, [])
        # (the loop's own name for it, `_seq = t` (lower.py, sequence), or t itself)
        over = seq_defs[0].value.id if seq.id.startswith("_seq") and len(seq_defs) == 1 and isinstance(
            seq_defs[0], ir.Assign) and isinstance(seq_defs[0].value, ir.Name) else seq.id
        reads = [s for s in ir.walk(self.an.fn.body) if isinstance(s, ir.Assign) and len(s.targets) == 1
                 and isinstance(s.value, ir.Subscript) and isinstance(s.value.value, ir.Name)
                 and s.value.value.id == keys]
        if over is None or not reads:
            return None
        k = reads[0].targets[0]
        return shown(k, k), shown(over, over)

    def _check_item_update(self, stmt, own, state, live):
        """`t[k] += v` (or *=) into a list or dict display t: Python rebinds the slot where the
        item is a number, and updates it in place where it is an array. Where the items may be
        arrays that another live name, an argument or a constant shares, the code checks at run
        time that the item is not an array (alias_check (None, message) of a SetItem)."""
        items = frozenset(o for o in whole(state.get(stmt.base, frozenset()))
                          if o.removesuffix(" earlier") not in own)
        shown = self.an.fn.display.get
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
        defs = [d for d in self.an.defs.get(atom.id, []) if isinstance(d, ir.Assign)]
        return defs[-1].value if len(defs) == 1 and isinstance(defs[-1].value, ir.Call) else None
