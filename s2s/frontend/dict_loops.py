"""Loops over a dict whose keys are known when the code is generated, written out key by key;
and loops over a tuple (or list) argument whose items are of different kinds, item by item.

Under s2s.jit a dict is a tuple of its values (pytree.to_numba, runtime.dict_of), which Numba
reads at constant keys only: a loop over its keys (`for k, v in d.items():`, lowered to a range
loop over runtime.dict_keys(d)) has no compiled form. Where the keys are known, from a dict
display that nothing writes into, or from the argument of the call s2s.jit generates a
gradient for (its keys in the dict's order, as the loop goes over them), the loop becomes one
copy of its body per key, each reading d at its key as a constant. Loops with a break or a
continue are left as they are (Numba's refusal names them). A loop over sorted(d) (or
sorted(d.items())) goes over the keys sorted; d.get("w", default)'s test of such a dict
(runtime.has_key) is answered, and only the branch taken is kept.

A tuple of items of one type (layers: 2-d arrays of different shapes) is read at an index known
at run time; one of items of different types (a matrix and a vector) only at constant indices,
which Numba types one by one. Where the call s2s.jit generates code for passes such a tuple or
list, a loop over it (`for w in ws:`, lowered to a range loop over len(ws)) becomes one copy of
its body per item, each reading the item at its index as a constant.
"""

from __future__ import annotations

import copy
import dataclasses

from .. import runtime
from ..ir import nodes as ir
from .known_arguments import _written, fold_known_branches


def unroll_dict_loops(function: ir.Function, facts: dict | None = None) -> None:
    """facts: parameter -> its argument's fact (["dict", keys, ...] for a dict), or None.
    Changes function.body in place."""
    written = _written(function.body)
    known, items = {}, {}
    for p, fact in (facts or {}).items():
        if isinstance(fact, list) and fact and fact[0] == "dict" and p not in written:
            known[p] = tuple(fact[1])
        elif isinstance(fact, list) and fact and fact[0] == "tuple" and p not in written \
                and any(f != fact[1][0] for f in fact[1]):
            items[p] = len(fact[1])
    displays = {}
    for stmt in _statements(function.body):
        if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ir.Build) \
                and stmt.value.kind == "dict" and all(isinstance(k, str) for k in stmt.value.keys):
            displays.setdefault(stmt.targets[0], []).append(tuple(stmt.value.keys))
    for name, keys in displays.items():
        # bound once, to a display, and not written into (a mutation or another binding is a write)
        if len(keys) == 1 and name not in function.params and _binds(function.body, name) == 1 \
                and not _mutated(function.body, name):
            known[name] = keys[0]
    if not (known or items):
        return
    if _answer_key_tests(function.body, known):
        fold_known_branches(function)  # (d.get("w", default): the branch that reads d["w"], or the default)
    function.body = _unrolled(function.body, known, function, items)


def _answer_key_tests(body: list, known: dict) -> bool:
    """Write in the answers of runtime.has_key(d, "w") (d.get's test) of the dicts of known keys.
    Was any written?"""
    answered = False
    for block in [body, *(b for stmt in _statements(body) for b in _blocks(stmt))]:
        for k, stmt in enumerate(block):
            value = stmt.value if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 else None
            if isinstance(value, ir.Call) and value.fn is runtime.has_key and isinstance(value.args[0], ir.Name) \
                    and value.args[0].id in known and isinstance(value.args[1], ir.Const):
                block[k] = dataclasses.replace(stmt, value=ir.Const(value.args[1].value in known[value.args[0].id]))
                answered = True
    return answered


def _statements(body: list):
    for stmt in body:
        yield stmt
        for block in _blocks(stmt):
            yield from _statements(block)


def _blocks(stmt) -> list:
    if isinstance(stmt, ir.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ir.For):
        return [stmt.body]
    if isinstance(stmt, ir.While):
        return [stmt.cond, stmt.body]
    return []


def _binds(body: list, name: str) -> int:
    return sum(1 for s in _statements(body) if isinstance(s, ir.Assign) and name in s.targets
               or isinstance(s, ir.For) and s.var == name)


def _mutated(body: list, name: str) -> bool:
    return any(isinstance(s, ir.SetItem) and s.base == name or isinstance(s, ir.ExprStmt) and s.mutates == name
               for s in _statements(body))


def _unrolled(body: list, known: dict, function: ir.Function, items: dict) -> list:
    """body with its loops over the keys of known dicts written out. known: dict variable ->
    its keys; the loop's sequence variable (`_seq = d`) and keys (`_t1 = runtime.dict_keys(_seq)`)
    are followed from it. items: tuple variable -> its length, whose loops over `len(_seq)` are
    written out too."""
    aliases, keys_of, lengths = {}, {}, {}
    ordered: set = set()  # the aliases that hold a dict's keys sorted (`_t1 = sorted(d)`), a list of them
    slices: dict = {}  # a tuple's slice at constant bounds -> (the tuple, the indices it keeps)
    out = []
    for stmt in body:
        if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if isinstance(value, ir.Name) and value.id in known and _binds(function.body, target) == 1:
                aliases[target] = known[value.id]
            elif isinstance(value, ir.Name) and value.id in ordered and _binds(function.body, target) == 1:
                aliases[target] = aliases[value.id]  # (`_seq = _t1` of `_t1 = sorted(d)`)
                ordered.add(target)
            elif _sorts(value) and isinstance(value.args[0], ir.Name) and _binds(function.body, target) == 1 \
                    and (value.args[0].id in known or value.args[0].id in aliases):
                # sorted(d): d's keys in sorted order, which a loop over it goes over as over a dict's
                aliases[target] = tuple(sorted(aliases.get(value.args[0].id, known.get(value.args[0].id))))
                ordered.add(target)
            elif _sorts(value) and isinstance(value.args[0], ir.Name) and value.args[0].id in keys_of \
                    and _binds(function.body, target) == 1:
                keys_of[target] = tuple(sorted(keys_of[value.args[0].id]))  # sorted(d.items()): its keys sorted
            elif isinstance(value, ir.Name) and value.id in items and _binds(function.body, target) == 1:
                items = {**items, target: items[value.id]}
                if value.id in slices:
                    slices[target] = slices[value.id]
            elif _constant_slice_of(value, items) is not None and _binds(function.body, target) == 1:
                # ws[:-1]: the items the slice keeps, read from ws itself at their constant indices
                # (an adjoint then flows into ws's own item, as it does for ws[0])
                kept = _constant_slice_of(value, items)
                slices[target] = (value.value.id, kept)
                items = {**items, target: len(kept)}
            elif isinstance(value, ir.Call) and value.fn is len and len(value.args) == 1 \
                    and isinstance(value.args[0], ir.Name) and value.args[0].id in items:
                keys_of[target] = tuple(range(items[value.args[0].id]))
                lengths[target] = None  # (no keys to read: the loop variable is the item's index)
            elif isinstance(value, ir.Call) and value.fn in (runtime.dict_keys, runtime.loop_keys) and len(value.args) == 1 \
                    and isinstance(value.args[0], ir.Name) and (value.args[0].id in aliases or value.args[0].id in known):
                keys_of[target] = aliases.get(value.args[0].id, known.get(value.args[0].id))
            elif isinstance(value, ir.Call) and value.fn is len and len(value.args) == 1 \
                    and isinstance(value.args[0], ir.Name) and value.args[0].id in keys_of:
                lengths[target] = value.args[0].id
        if isinstance(stmt, ir.For) and isinstance(stmt.stop, ir.Name) and stmt.stop.id in lengths \
                and stmt.start == ir.Const(0) and stmt.step == ir.Const(1) and not _jumps(stmt.body):
            keys_name = lengths[stmt.stop.id]
            copies = _copies(stmt, keys_of[keys_name if keys_name is not None else stmt.stop.id], keys_name)
            out.extend(_items_of_slices(copies, slices))
            continue
        for block in _blocks(stmt):
            block[:] = _unrolled(block, known, function, items)
        out.append(stmt)
    # The keys and their count are read by the loops alone: with the loops written out, they go
    # (Numba would type runtime.dict_keys of the dict, which it refuses).
    # (sorted(...) of a dict, or of its keys, as well: a list of keys that Numba cannot make)
    removable = set(keys_of) | set(lengths) | set(slices) | ordered
    while True:
        used = _loads(out)
        kept = [s for s in out if not (isinstance(s, ir.Assign) and len(s.targets) == 1
                                       and s.targets[0] in removable and s.targets[0] not in used)]
        if len(kept) == len(out):
            return kept
        out = kept


def _sorts(value) -> bool:
    return isinstance(value, ir.Call) and value.fn is sorted and len(value.args) == 1 and not value.kwargs


def _items_of_slices(body: list, slices: dict) -> list:
    """body with each read `s[k]` (k a constant) of a slice s of a tuple read from the tuple itself."""

    def read(node):
        if isinstance(node, ir.Subscript) and isinstance(node.value, ir.Name) and node.value.id in slices \
                and len(node.index.items) == 1 and isinstance(node.index.items[0], ir.Const) \
                and type(node.index.items[0].value) is int:
            source, kept = slices[node.value.id]
            return ir.Subscript(ir.Name(source), ir.Index((ir.Const(kept[node.index.items[0].value]),)))
        if isinstance(node, list):
            return [read(item) for item in node]
        if isinstance(node, tuple):
            return tuple(read(item) for item in node)
        if not dataclasses.is_dataclass(node) or isinstance(node, type):
            return node
        changes = {f.name: read(getattr(node, f.name)) for f in dataclasses.fields(node)
                   if isinstance(getattr(node, f.name), (list, tuple)) or dataclasses.is_dataclass(getattr(node, f.name))}
        return dataclasses.replace(node, **changes) if changes else node

    return read(body) if slices else body


def _constant_slice_of(value, items: dict) -> tuple[int, ...] | None:
    """The indices that value keeps where it is `ws[a:b:c]` of a tuple in items, at constant bounds."""
    if not (isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name) and value.value.id in items
            and len(value.index.items) == 1 and isinstance(value.index.items[0], ir.Slice)):
        return None
    bounds = (value.index.items[0].lower, value.index.items[0].upper, value.index.items[0].step)
    if not all(b is None or isinstance(b, ir.Const) and type(b.value) is int for b in bounds):
        return None
    return tuple(range(items[value.value.id])[slice(*(None if b is None else b.value for b in bounds))])


def _jumps(body: list) -> bool:
    return any(isinstance(s, (ir.Break, ir.Continue, ir.Return)) for s in _statements(body))


def _copies(loop: ir.For, keys: tuple, keys_name: str | None) -> list:
    """The loop's body once per key: the loop variable bound to the key's position, the key read
    from the keys (`k = _t1[_i]`) bound to the key itself, and each read of it that constant."""
    out = []
    rebound = _written(loop.body)
    for position, key in enumerate(keys):
        constants = {} if loop.var in rebound else {loop.var: ir.Const(position)}
        body = copy.deepcopy(loop.body)
        copy_out = [ir.Assign((loop.var,), ir.Const(position), loop.origin)]
        for stmt in body:
            if keys_name is not None and isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.value, ir.Subscript) and stmt.value.value == ir.Name(keys_name):
                stmt = dataclasses.replace(stmt, value=ir.Const(key))
                if _binds(body, stmt.targets[0]) == 1:
                    constants[stmt.targets[0]] = ir.Const(key)
            copy_out.append(stmt)
        out.extend(_with_constants(copy_out[:1], {}) + _with_constants(copy_out[1:], constants))
    return out


def _with_constants(node, constants: dict):
    """node with the reads of these variables replaced by constants (their bindings kept)."""
    if not constants:
        return node
    if isinstance(node, ir.Name):
        return constants.get(node.id, node)
    if isinstance(node, list):
        return [_with_constants(item, constants) for item in node]
    if isinstance(node, tuple):
        return tuple(_with_constants(item, constants) for item in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    changes = {f.name: _with_constants(getattr(node, f.name), constants) for f in dataclasses.fields(node)
               if isinstance(getattr(node, f.name), (ir.Name, list, tuple)) or dataclasses.is_dataclass(getattr(node, f.name))}
    return dataclasses.replace(node, **changes) if changes else node


def _loads(node) -> set:
    """The variables read anywhere in node."""
    if isinstance(node, ir.Name):
        return {node.id}
    if isinstance(node, (list, tuple)):
        return set().union(*(_loads(item) for item in node)) if node else set()
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return set()
    return set().union(*(_loads(getattr(node, f.name)) for f in dataclasses.fields(node)))
