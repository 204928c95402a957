"""List comprehensions, and builtin sum, max and min of a sequence, lowered to the loops a
person writes by hand:

    ys = [np.sin(v) * a for v in x if v > 0]    ->    ys = []
                                                      for v in x:
                                                          if v > 0:
                                                              ys.append(np.sin(v) * a)

Each `for` clause is a for loop (lower.py's loop_header: range, reversed(range), enumerate,
zip, a sequence, a dict's .items()), the clauses nested in order, each `if` a branch around
the rest. The comprehension's variables are its own (Python 3): they are lowered under the
user's names and then renamed to names no other variable has, so a variable of the same name
outside keeps its value. A generator expression is taken only as the one argument of sum
(accumulated in the loop, as is sum of a list comprehension), max, min and list (a list
comprehension first). A dict comprehension is `d = {}`, then `d[k] = v` in the loop.
"""

from __future__ import annotations

import builtins
import operator

import libcst as cst

from .. import runtime
from ..ir import nodes as ir
from .source import walk_nodes

GENERATOR_HINT = "write a list comprehension, [... for v in x], or the loop"


def _target_names(target: cst.BaseExpression) -> list[str]:
    """The names a comprehension's `for` target binds (`v`, `i, v`, `i, (a, b)`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def _reads(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in walk_nodes(node))


class ComprehensionLowering:
    """The comprehension half of the Normalizer (lower.py), which gives it loop_header,
    emit_prologue, emit, assign, sub_block, names and error."""

    def comprehension(self, node: cst.BaseExpression) -> ir.Atom:
        if isinstance(node, cst.ListComp):
            return self.list_comprehension(node)
        if isinstance(node, cst.GeneratorExp):
            raise self.error(node, "a generator expression is supported only as the one argument of sum, max, "
                             "min or list", GENERATOR_HINT)
        if isinstance(node, cst.DictComp):
            return self.dict_comprehension(node)
        raise self.error(node, "set comprehensions are not supported", "build a list instead")

    def list_comprehension(self, node: cst.ListComp | cst.GeneratorExp, into: str | None = None) -> ir.Atom:
        """`into = [] ; for ...: into.append(elt)`; into: the name the statement assigns the list
        to (which the comprehension must not read), else a fresh one."""
        origin = self.origin
        items = into if into is not None else self.names.fresh("_list")
        self.emit(ir.Assign((items,), ir.Build("list", ()), origin))
        self.comprehension_loops(node, node.for_in,
                                 lambda: self.emit(ir.Push(items, self.expr(node.elt), origin)))
        return ir.Name(items)

    def listed(self, node: cst.BaseExpression) -> cst.ListComp | None:
        """list(x) as the comprehension [v for v in x], list(f(v) for v in x) as [f(v) for v in x];
        None for anything else."""
        if not (isinstance(node, cst.Call) and len(node.args) == 1 and not node.args[0].keyword
                and not node.args[0].star and not (isinstance(node.func, cst.Name) and node.func.value in self.locals)
                and self.resolver.resolve(node.func) is builtins.list):
            return None
        argument = node.args[0].value
        if self.tuple_valued(argument):
            return None  # list(np.linalg.eigh(a)) is [w, V]: its items (expressions.py), not a loop
        if isinstance(argument, cst.GeneratorExp):
            return cst.ListComp(elt=argument.elt, for_in=argument.for_in)
        return self.items_of(argument)

    def items_of(self, iterable: cst.BaseExpression) -> cst.ListComp:
        """[v for v in iterable] (comprehension_loops gives v a name of its own): list(x) and
        xs.extend(x)."""
        item = cst.Name("_item")
        return cst.ListComp(elt=item, for_in=cst.CompFor(target=item, iter=iterable))

    def extend_by_loop(self, items: str, iterable: cst.BaseExpression) -> None:
        """xs.extend(x) of a list xs: xs.append(v) for each v of x, in a loop."""
        origin = self.origin
        node = self.items_of(iterable)
        self.comprehension_loops(node, node.for_in, lambda: self.emit(ir.Push(items, self.expr(node.elt), origin)))

    def dict_comprehension(self, node: cst.DictComp, into: str | None = None) -> ir.Atom:
        """`into = {}; for ...: into[key] = value` (a later equal key replaces the value, in
        the first one's place, as in Python)."""
        origin = self.origin
        d = into if into is not None else self.names.fresh("_dict")
        self.emit(ir.Assign((d,), ir.Build("dict", (), ()), origin))

        def each() -> None:
            key = self.expr(node.key)  # (the key first, as Python 3.8 on)
            self.emit(ir.SetItem(d, ir.Index((key,)), self.expr(node.value), None, origin))

        self.comprehension_loops(node, node.for_in, each)
        return ir.Name(d)

    def comprehension_into(self, node: cst.Assign) -> str | None:
        """`ys = [... for ...]` (or a dict comprehension): ys, where the list can be built in
        ys itself (the comprehension does not read ys, the statement binds ys only)."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name) \
                or not isinstance(node.value, (cst.ListComp, cst.DictComp)):
            return None
        name = node.targets[0].target.value
        return None if _reads(node.value, name) else name

    def comprehension_statement(self, node: cst.Assign) -> bool:
        """Lower `ys = [... for ...]` into ys itself, where it can be (comprehension_into);
        `ys = list(x)` and `ys = list(f(v) for v in x)` too."""
        listed = self.listed(node.value)
        if listed is not None:
            node = node.with_changes(value=listed)
        into = self.comprehension_into(node)
        if into is None:
            return False
        if isinstance(node.value, cst.ListComp):
            self.list_comprehension(node.value, into)
        else:
            self.dict_comprehension(node.value, into)
        return True

    def comprehension_loops(self, node: cst.CSTNode, clause: cst.CompFor, innermost) -> None:
        """The loop of one `for` clause, around its `if`s and the clauses after it; innermost
        emits what the innermost loop does for each item."""
        origin = self.origin
        if clause.asynchronous is not None:
            raise self.error(clause, "async comprehensions are not supported")
        names = _target_names(clause.target)
        # The clause's iterable is read in the scope outside the clause: before its names bind.
        var, start, stop, step, prologue = self.loop_header(clause.target, clause.iter, [node])
        mapping = {}
        for name in dict.fromkeys(names):
            mapping[name] = self.names.fresh(name)
            if mapping[name] != name:
                self.display[mapping[name]] = name

        def conditions(ifs: list) -> None:
            if not ifs:
                if clause.inner_for_in is not None:
                    self.comprehension_loops(node, clause.inner_for_in, innermost)
                else:
                    innermost()
                return
            test = self.expr(ifs[0].test)
            self.emit(ir.If(test, self.sub_block(lambda: conditions(ifs[1:])), [], origin))

        def build() -> None:
            self.emit_prologue(prologue, origin)
            conditions(list(clause.ifs))

        saved = self.locals
        self.locals = self.locals | set(names)
        # (a scope of its own: a nested function called in it reads the function's variables, not
        # the clause's of the same names: lax_forms.inline)
        frame = {"function": None, "keys": set(names), "restore": {}}
        self.frames.append(frame)
        try:
            body = self.sub_block(build)
        finally:
            self.locals = saved
            self.frames.remove(frame)
        body = ir.rename(ir.rename(body, mapping), frame["restore"])
        self.emit(ir.For(mapping.get(var, var), start, stop, step, body, origin))

    # ---- builtin sum, max and min of a sequence ----------------------------------------

    def reduction(self, node: cst.Call, callee) -> ir.Atom | None:
        """sum(xs), sum(xs, start), max(xs), min(xs) of one iterable (not a display, which
        fold_display adds up): the loop Python runs, `acc = start; for v in xs: acc = acc + v`
        (max: from the first item, `acc = max(acc, v)`), which adds the rows of an array as
        Python's sum does. None where the call is not of this form."""
        args = node.args
        most = 2 if callee is builtins.sum else 1
        if not args or len(args) > most or args[0].keyword is not None or any(a.star for a in args) \
                or any(a.keyword is not None and a.keyword.value != "start" for a in args[1:]):
            return None  # (sum(xs, start=1.0) is sum(xs, 1.0))
        items = args[0].value
        origin = self.origin
        if callee is builtins.sum:
            total = self.names.fresh("_sum")
            start = self.expr(args[1].value) if len(args) == 2 else ir.Const(0)
            if isinstance(items, (cst.GeneratorExp, cst.ListComp)):
                # sum(f(v) for v in x), sum([f(v) for v in x]): added up in the loop itself, in
                # the same order, with no list in between
                self.emit(ir.Assign((total,), start, origin))
                self.comprehension_loops(items, items.for_in, lambda: self.emit(ir.Assign(
                    (total,), ir.Call(operator.add, (ir.Name(total), self.expr(items.elt))), origin)))
                return ir.Name(total)
        seq = self.list_comprehension(items) if isinstance(items, cst.GeneratorExp) else self.expr(items)
        seq = self.sequence(seq, [])  # (the loop below rebinds no name of the user's)
        stop = self.assign(ir.Call(len, (seq,)))
        index = self.names.fresh("_i")
        item = self.names.fresh("_item")
        if callee is builtins.sum:
            if len(args) == 1:
                # Python's 0, which under Numba is zeros of the items' shape where they are arrays
                # (an int cannot become an array there); the place names an empty list's refusal
                start = ir.Call(runtime.sum_start, (seq,), (("where", ir.Const(origin.short())),))
            self.emit(ir.Assign((total,), start, origin))
            fold, first = operator.add, ir.Const(0)
        else:  # max(acc, v) keeps the first of equal items, as max(xs) does
            total = self.names.fresh(f"_{callee.__name__}")
            self.emit(ir.Assign((total,), ir.Subscript(seq, ir.Index((ir.Const(0),))), origin))
            fold, first = callee, ir.Const(1)
        self.emit(ir.For(index, first, stop, ir.Const(1), [
            ir.Assign((item,), ir.Subscript(seq, ir.Index((ir.Name(index),))), origin),
            ir.Assign((total,), ir.Call(fold, (ir.Name(total), ir.Name(item))), origin)], origin))
        return ir.Name(total)
