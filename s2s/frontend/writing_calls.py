"""A call of a module-level function that writes into an array the caller gives it (fluidsim's
`project(vx, vy)`, whose body runs `vx -= ...`): under NumPy the caller's array changes.

s2s gives every function it lowers a private copy of a parameter it writes into, so such a write
would not reach the caller. Where the caller passes a variable of its own, the callee's body is
written out at the call instead (its lowered statements, its variables renamed apart from the
caller's), with each parameter it writes into standing for the caller's variable itself: the
writes reach the caller in every mode, as under NumPy, and the transforms see plain statements.
Every other call stays a call (argument_writes.py refuses what still cannot be followed).
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Any

import libcst as cst

from .. import runtime
from ..errors import S2SError
from ..ir import nodes as ir
from .argument_writes import CallSite
from .source import parse_function, walk_own

_TEMPORARY = re.compile(r"_t\d+")
_LOWERING: set = set()  # functions being lowered to be written out (a recursive one stays a call)


class WritingCalls:
    """The writing calls of the Normalizer (lower.py): self is the Normalizer."""

    def writing_call(self, node: cst.Call, callee: Any, args: list, kwargs: list, site: CallSite) -> ir.Atom | None:
        """callee's body written out here, where it writes into a variable of this function that
        the statement does not rebind (`y = helper(y)` names the result: argument_writes.py); None
        for a call that stays one."""
        if not inspect.isfunction(callee) or id(callee) in _LOWERING:
            return None
        # (a view, helper(y[1]), stays a call, which argument_writes.py refuses)
        passed = {p for p, (name, view) in site.arguments.items()
                  if name in self.locals and not view and name not in site.rebound}
        if not passed or not passed & _written_in_source(callee):
            return None
        # (lowered anew for each call: a body written out twice must not share its statements)
        if not self.writers.get(id(callee), passed) & passed:
            return None
        lowered = self.writer(callee)
        self.writers[id(callee)] = set(lowered.param_writes) if lowered is not None else set()
        if lowered is None or not passed & set(lowered.param_writes):
            return None
        callee, full = self.call_arguments(node, callee, args, kwargs)
        self.written_out += [f for f in [callee] + lowered.written_out if all(f is not w for w in self.written_out)]
        return self.write_out(lowered, full)

    def checking_call(self, node: cst.Call, callee: Any) -> bool:
        """A call statement of a function that returns no value and writes into none of its
        parameters (`check_axis(x, i)`, which may raise): its body written out here, as a call
        that writes into its arguments is, so that its checks run on the primal values in every
        mode. False for any other call (one that writes is a writing call)."""
        if not inspect.isfunction(callee) or id(callee) in _LOWERING or not _returns_nothing(callee) \
                or _written_in_source(callee):
            return False
        args, kwargs = self.arguments(node, spread=True)
        _LOWERING.add(id(callee))
        try:
            lowered = self.lowered_to_write_out(callee)
        finally:
            _LOWERING.discard(id(callee))
        callee, full = self.call_arguments(node, callee, args, kwargs)
        self.written_out += [f for f in [callee] + lowered.written_out if all(f is not w for w in self.written_out)]
        self.write_out(lowered, full)
        return True

    def writer(self, callee: Any) -> ir.Function | None:
        """callee lowered without private copies of its parameters (None where it cannot be:
        the call stays one, and lowering callee for it says why)."""
        _LOWERING.add(id(callee))
        try:
            return self.lowered_to_write_out(callee)
        except S2SError:
            return None
        finally:
            _LOWERING.discard(id(callee))

    def write_out(self, lowered: ir.Function, args: list) -> ir.Atom:
        mapping = _FreshNames(self, lowered)
        rebound = {n for s in ir.walk(lowered.body) for n in ir.stmt_writes(s)
                   if not (isinstance(s, ir.Assign) and s.inplace) and not isinstance(s, (ir.SetItem, ir.Push))}
        updates = {s.targets[0]: s for s in ir.walk(lowered.body) if isinstance(s, ir.Assign) and s.inplace}
        binds = []
        for param, arg in zip(lowered.params, args):
            if isinstance(arg, ir.Name) and arg.id in self.locals and param not in rebound:
                mapping[param] = arg.id  # the caller's variable itself: writes into it reach the caller
                if param in updates:
                    self.emit(ir.ExprStmt(ir.Call(runtime.require_updatable, (arg, ir.Const(
                        _update_refusal(lowered.name, param, self.display.get(arg.id, arg.id), updates[param])))),
                        self.origin))
            else:
                binds.append(ir.Assign((mapping.get(param),), arg, self.origin))
        for name, value in lowered.constants.items():
            same = name in self.constants and self.constants[name] is value and name not in self.locals
            mapping[name] = name if same else self.names.fresh(name)
            self.constants[mapping[name]] = value
        body = ir.rename(lowered.body, mapping)
        result = body.pop()
        self.out += binds + body
        self.callees.update(lowered.callees)
        self.references |= set(lowered.references)
        self.inlined.update(lowered.inlined)
        for site in lowered.call_sites:
            self.call_sites.append(CallSite(site.callee, {p: (mapping.get(n), view) for p, (n, view) in
                                                          site.arguments.items()},
                                            frozenset(mapping.get(n) for n in site.rebound), site.origin))
        return result.value


class _FreshNames(dict):
    """The renaming of a written-out function's variables: each gets a name of the caller's that
    no variable has, when ir.rename first asks for it (temporaries as temporaries)."""

    def __init__(self, normalizer: Any, lowered: ir.Function):
        super().__init__()
        self.normalizer, self.lowered = normalizer, lowered

    def __bool__(self) -> bool:
        return True

    def get(self, name, default=None):
        if name not in self:
            names = self.normalizer.names
            self[name] = names.temp() if _TEMPORARY.fullmatch(name) else names.fresh(name)
            if not _TEMPORARY.fullmatch(name):
                self.normalizer.display[self[name]] = self.lowered.display.get(name, name)
        return self[name]


def _returns_nothing(fn: Any) -> bool:
    """Has fn no `return value` of its own (it ends, or returns bare)?"""
    try:
        node = parse_function(fn).node
    except S2SError:
        return False
    return not any(isinstance(n, cst.Return) and n.value is not None for n in walk_own(node.body))


def _written_in_source(fn: Any) -> set[str]:
    """The parameters that fn's own statements may write into (`p[i] = v`, `p op= v`, `p.append`)."""
    try:
        node = parse_function(fn).node
    except S2SError:
        return set()
    params = {p.name.value for p in node.params.params}
    found = set()
    for n in walk_own(node.body):
        targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else \
            [n.target] if isinstance(n, cst.AugAssign) else []
        for target in targets:
            base = target
            while isinstance(base, (cst.Subscript, cst.Attribute)):
                base = base.value
            if isinstance(base, cst.Name) and base.value in params \
                    and (base is not target or isinstance(n, cst.AugAssign)):
                found.add(base.value)
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name) \
                and n.func.value.value in params and n.func.attr.value in ("append", "extend", "pop"):
            found.add(n.func.value.value)
    return found


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
            "matmul": "@", "and_": "&", "or_": "|", "xor": "^"}


def _update_refusal(function: str, param: str, caller_name: str, update: ir.Assign) -> str:
    """What require_updatable says where function's `param op= v` is given a number by the caller."""
    op = _SYMBOLS.get(getattr(update.value.fn, "__name__", ""), "op") if isinstance(update.value, ir.Call) else "op"
    o = update.origin
    return (f"{os.path.basename(o.filename)}:{o.line}:{o.column}: `{param} {op}= ...` in {function} updates the "
            f"caller's {caller_name} in place, as NumPy does for an array; {caller_name} is a number here, which "
            f"Python leaves unchanged: write `{param} = {param} {op} ...` in {function}")
