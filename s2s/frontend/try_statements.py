"""try/except statements, as Python runs them.

A try the call's static values decide (a string argument looked up in a dict of the module)
is the statements Python runs of it (static_try). Any other try is decided where it runs, on
the values (value_try): a function of its own, written into the generated module
(ir.TryProbe), runs the try's body on them as Python does, under the np.errstate around it,
and returns where the body left; the code generated for the try then runs the same statements,
differentiated: the whole body where none raised, else the statements before the one that
raised and the handler that caught. The derivatives follow the path NumPy took, and the
result the branches test carries none.
"""

from __future__ import annotations

import operator

import libcst as cst

from .. import runtime
from ..ir import nodes as ir
from . import static_arguments
from .source import is_user_function, spelling

# The statements a try body the values decide may hold: each runs whole or not at all where
# one raises (a block could stop part way, which the branches after the probe cannot repeat).
_SIMPLE = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr, cst.Return, cst.Pass, cst.Raise)

_HINT = ("test the input with an if before the computation (if x.ndim != 2: raise ValueError(...)), which s2s "
         "runs on the primal values, or move the try/except outside the differentiated function")


class TryLowering:
    """Lowering of try statements (mixed into frontend.lower.Normalizer)."""

    def try_statement(self, node: cst.Try | cst.TryStar) -> None:
        taken = self.static_try(node)
        if taken is not None:
            self.block(taken)
        else:
            self.value_try(node)

    def static_try(self, node: cst.Try) -> list | None:
        """The statements Python runs of a try/except whose body is one `return v` or `name = v`
        that the call's static values and the module's constants give (return _when_to_num[when]):
        the body (and else) where v is computed, the handler that catches what computing it raises
        (the body where none does: it raises there); None for any other try."""
        if not isinstance(node, cst.Try) or node.finalbody is not None or len(node.body.body) != 1 \
                or not isinstance(node.body.body[0], cst.SimpleStatementLine) or len(node.body.body[0].body) != 1:
            return None
        small = node.body.body[0].body[0]
        if isinstance(small, cst.Return) and small.value is not None:
            value = small.value
        elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            value = small.value
        else:
            return None

        lookup = self.static_lookup
        try:
            static_arguments.evaluate(value, self.static, lookup, self.kinds)
        except static_arguments.NotStatic:
            return None
        except Exception as raised:  # noqa: BLE001 - what Python raises there picks the handler
            for handler in node.handlers:
                if handler.name is not None:
                    return None  # (`except E as e`: the exception object is no value s2s has)
                if handler.type is None:
                    return list(handler.body.body)
                try:
                    caught = static_arguments.evaluate(handler.type, {}, lookup)
                except Exception:  # noqa: BLE001
                    return None
                if isinstance(caught, (type, tuple)) and isinstance(raised, caught):
                    return list(handler.body.body)
            return list(node.body.body)  # (no handler catches it: the body, which raises where Python's does)
        return list(node.body.body) + (list(node.orelse.body.body) if node.orelse is not None else [])

    # ---- a try the values decide -------------------------------------------------------

    def value_try(self, node: cst.Try | cst.TryStar) -> None:
        origin = self.origin
        handlers = self.try_handlers(node)
        smalls = self.try_body(node)
        count = len(handlers)

        probe = self.try_probe(node, smalls, handlers)
        self.origin = origin
        args = tuple(ir.Name(p) for p in probe.params)
        outcome = self.assign(ir.Call(runtime.try_outcome, (ir.Const(probe), *args)), self.names.fresh("outcome"))
        completed = self.assign(ir.Call(operator.eq, (outcome, ir.Const(probe.completed))))

        def whole_body():
            for line, small in smalls:
                self.origin = self.parsed.origin(line)
                self.small_statement(small)
            if node.orelse is not None:
                self.block(node.orelse.body.body)

        def raised():
            for k, (line, small) in enumerate(smalls[:-1]):  # the statements before the one that raised
                self.origin = origin
                ran = self.assign(ir.Call(operator.ge, (outcome, ir.Const((k + 1) * count))))
                self.origin = self.parsed.origin(line)
                self.emit(ir.If(ran, self.sub_block(lambda small=small: self.small_statement(small)), [], origin))
            self.origin = origin
            which = outcome if count == 1 else self.assign(ir.Call(operator.mod, (outcome, ir.Const(count))))
            self.handler_chain(node.handlers, which, 0)

        self.emit(ir.If(completed, self.sub_block(whole_body), self.sub_block(raised), origin))
        self.origin = origin

    def handler_chain(self, handlers, which: ir.Atom, k: int) -> None:
        """The handler the probe's outcome names, the k-th and those after it. One that re-raises
        (`except E: raise`) is never named: the probe raised there, as Python does."""
        body = [] if _reraises(handlers[k]) else list(handlers[k].body.body)
        if k == len(handlers) - 1:
            self.block(body)
            return
        origin = self.origin
        chosen = self.assign(ir.Call(operator.eq, (which, ir.Const(k))))
        self.emit(ir.If(chosen, self.sub_block(lambda: self.block(body)),
                        self.sub_block(lambda: self.handler_chain(handlers, which, k + 1)), origin))

    def try_handlers(self, node) -> tuple:
        """Per handler, (the exception classes it catches, as generated code names them, None for
        a bare except; whether it only re-raises); refuses the forms the probe cannot run as Python
        does."""
        if isinstance(node, cst.TryStar):
            raise self.error(node, "try/except* (exception groups) is not supported", _HINT)
        if node.finalbody is not None:
            raise self.error(node.finalbody, "a try with finally is not supported where the values decide which of "
                             "its statements run", _HINT)
        caught = []
        for handler in node.handlers:
            if handler.name is not None:
                raise self.error(handler, "`except ... as name` is not supported: the exception object is no value "
                                 "the generated code has", "write `except E:` without the name")
            if handler.type is None:
                caught.append((None, _reraises(handler)))
                continue
            types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
            classes = []
            for item in types:
                expression = item.value if isinstance(item, cst.Element) else item
                kind = self.resolver.resolve(expression)
                if not (isinstance(kind, type) and issubclass(kind, BaseException) and spelling(kind) is not None):
                    raise self.error(expression, "an except clause here catches Python's builtin exceptions and "
                                     "NumPy's (FloatingPointError, ZeroDivisionError, np.linalg.LinAlgError, ...)",
                                     "catch one of those, or move the try/except outside the differentiated function")
                classes.append(spelling(kind))
            caught.append((tuple(classes), _reraises(handler)))
        return tuple(caught)

    def try_body(self, node) -> list:
        """The try body's statements, (line, small statement) each; refuses a block among them."""
        smalls = []
        for line in node.body.body:
            if not isinstance(line, cst.SimpleStatementLine):
                raise self.error(line, f"a {type(line).__name__.lower()} statement inside a try whose path the values "
                                 "decide is not supported: the derivatives cannot repeat a block the exception left "
                                 "part way", "compute the block before the try, or move its statements out of it")
            for small in line.body:
                if not isinstance(small, _SIMPLE):
                    raise self.error(small, f"{type(small).__name__} statements are not supported inside a try whose "
                                     "path the values decide", _HINT)
                smalls.append((line, small))
        return smalls

    def try_probe(self, node, smalls: list, handlers: tuple) -> ir.TryProbe:
        """The function that runs the try's body on the values (ir.TryProbe): its statements
        lowered once more, on their own, the names they read before they assign them its parameters."""
        unknown = [k for k, v in self.errstate.items() if v is None]
        if unknown:
            raise self.error(node, f"np.errstate({unknown[0]}=...) around a try the values decide takes a constant "
                             "string ('raise', 'ignore', ...)", "write the setting as a string")
        parts = []
        for line, small in smalls:
            self.origin = self.parsed.origin(line)
            lowered = self.sub_block(lambda small=small: self.small_statement(small))
            parts.append([stmt for stmt in lowered if not isinstance(stmt, ir.Return)])
            for stmt in ir.walk(lowered):
                value = getattr(stmt, "value", None)
                if isinstance(value, ir.Call) and is_user_function(value.fn):
                    raise self.error(small, f"a call of {value.fn.__name__} inside a try whose path the values decide "
                                     "is not supported", "call it before the try, and use its result inside")
        params: list[str] = []
        bound: set[str] = set()
        for stmt in ir.walk([stmt for part in parts for stmt in part]):
            for read in ir.stmt_reads(stmt):
                if read not in bound and read not in params:
                    params.append(read)
            bound |= set(ir.stmt_writes(stmt))
        line = self.parsed.origin(node).line
        function = self.fn.__name__ if self.fn.__name__.isidentifier() else "function"  # (a lambda's: <lambda>)
        name = self.names.fresh(f"{function}_try_at_line_{line}")
        return ir.TryProbe(name, tuple(params), tuple(parts), handlers, tuple(sorted(self.errstate.items())),
                           self.names.fresh("completed"), self.parsed.origin(node))


def _reraises(handler: cst.ExceptHandler) -> bool:
    """Is the handler's body a bare `raise` alone?"""
    body = handler.body.body
    return len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1 \
        and isinstance(body[0].body[0], cst.Raise) and body[0].body[0].exc is None
