"""The plain function s2s.nn writes for a module: its __call__ with the module taken out.

Inside a function s2s transforms, `model.apply(variables, x)` is read as a call of a function of
`(variables, x, rngs=None)` that s2s.nn writes from the module's `__call__`:

    def MLP_apply(variables, x, rngs=None):
        params = variables["params"]
        x = nn_functional.dense(x, params["Dense_0"]["kernel"], params["Dense_0"]["bias"])
        x = nn.relu(x)
        return nn_functional.dense(x, params["Dense_1"]["kernel"], params["Dense_1"]["bias"])

A module of the user's that a module calls is written as a function of its own entry of the
params dict (`Model_apply_Linear_0(params["Linear_0"], x)`), and `self.param(name, init_fn,
*init_args)` in a __call__ reads that module's parameter: `w = params["w"]`. Its name is a string
or a value the fields decide; init_fn and its arguments are init's alone (module.py, Module.param)
and are not written (`x.shape[-1]` among them is not evaluated either). `self.param` in setup
(`self.kernel = self.param("kernel", ...)`, Flax's other pattern) gives, where the code is
written, a ParamPlaceholder (module.py): the module's parameter, written as `params["kernel"]`
wherever __call__ uses it (FunctionWriter.param_read); one of a submodule that was written here
(`self.inner.kernel` after `self.inner(x)`) is `params["inner"]["kernel"]`.

It is written by running the method's statements over what is known before any array exists
(a partial evaluation): `self.features` and the other fields become constants, a submodule
construction (`nn.Dense(32)`) runs, named by module.py as at init, and its call becomes the call
of its layer's function on its entry of the params dict (layers.py, written_call) or of the
function written for it (a module of the user's); an `if` or `for` that the fields decide
(`for feat in self.features:`, `for w in self.weights:` over setup's parameters) is unrolled;
everything else is copied as it is written, for s2s to read. A placeholder has no value: an
expression that reads one (`self.kernel.T`, `self.kernel[0]`, `self.kernel.sum()`,
`np.dot(x, self.kernel)`; FunctionWriter.reads_param) is written piece by piece rather than
evaluated, its other pieces still evaluated where they are known (`len(self.weights) - 1`:
FunctionWriter.fold), and a list, tuple or dict of them is indexed when written.

What cannot be written faithfully is refused with an S2SError at its file:line:col: a submodule
called under an if, for or while that the data decides, a module used as a value, self.param
under an if, for or while that the data decides, a second self.param of one name (or the name of
a submodule) in one call, self.param named by a value known only when the function runs,
self.param in __call__ named as a parameter or submodule of setup (and, in module.py, where init
runs too: a name made twice in setup), a placeholder's value used in setup (ParamValueUsed), a
parameter of another module read in a module's __call__ (a parent's given as a field), a method
of the module called on arrays, self.variable and self.make_rng in __call__ of a module of the
user's, a local variable named params, variables or rngs (the written function's own),
statements other than assignments, expressions, if, for, while and return.

Each written function lives in a generated module (a real file of s2s's cache, as s2s's own
generated code: backends/loading.py) whose globals are those of the module class's file, so
the names the method reads (np, nn, the user's helpers) mean what they meant there.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import keyword
import os
from typing import Any

import libcst as cst
import numpy as np

from ..backends import loading
from ..errors import S2SError
from ..frontend.source import parse_function
from . import functional
from .. import random
from .module import WRITERS, Module, ParamPlaceholder, ParamValueUsed, Scope, _running

_WRITTEN_IMPORTS = ("import s2s.nn.functional as nn_functional\n"
                    "import s2s.random as nn_random\n")
_PROVIDED = {"nn_functional": functional, "nn_random": random}


class _Static:
    """An expression whose value is known when the function is written."""

    def __init__(self, value: Any, node: cst.BaseExpression | None = None):
        self.value, self.node = value, node


class _Code:
    """An expression computed when the written function runs."""

    def __init__(self, text: str):
        self.text = text


class _Refused(Exception):
    pass


def _code_of(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


_SELF_METHODS = ("param", "variable", "make_rng")  # (what reads or makes a module's variables)


def _self_method(node: cst.CSTNode) -> str | None:
    """"param" for a call self.param(...), likewise "variable" and "make_rng"; None otherwise."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and isinstance(node.func.value, cst.Name) and node.func.value.value == "self" \
            and node.func.attr.value in _SELF_METHODS:
        return node.func.attr.value
    return None


def _calls_self_method(node: cst.CSTNode) -> bool:
    """Whether an expression calls self.param, self.variable or self.make_rng (it is then written
    piece by piece, not evaluated when written: that would run the call)."""
    return _self_method(node) is not None or any(_calls_self_method(child) for child in node.children)


_UNKNOWN = object()  # (a name or attribute whose value is not known when written: FunctionWriter.chain)


def _holds_param(value: Any) -> bool:
    """Whether a value is a parameter of a setup (a ParamPlaceholder) or a list, tuple or dict holding one."""
    if isinstance(value, ParamPlaceholder):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_param(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_param(item) for item in value.values())
    return False


def _key(name: str) -> str:
    """A dict key in written code: "w" (repr's quotes where the name holds a double quote)."""
    return f'"{name}"' if '"' not in name and "\\" not in name and name.isprintable() else repr(name)


def _free_names(node: cst.CSTNode) -> set[str]:
    """The names an expression reads (not attribute names, keywords, or a lambda's own)."""
    found: set[str] = set()

    def visit(n):
        if isinstance(n, cst.Name):
            found.add(n.value)
            return
        if isinstance(n, cst.Attribute):
            visit(n.value)
            return
        if isinstance(n, cst.Arg):
            visit(n.value)
            return
        for child in n.children:
            visit(child)

    visit(node)
    return found


def _assigned_names(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    def targets(t):
        if isinstance(t, cst.Name):
            names.add(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for e in t.elements:
                targets(e.value)

    def visit(n):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                targets(t.target)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets(n.target)
        elif isinstance(n, cst.For):
            targets(n.target)
        for child in n.children:
            visit(child)

    visit(node)
    return names


class FunctionWriter:
    """Writes one function: one module's __call__, for one call of it."""

    DYNAMIC = object()

    def __init__(self, program: "ProgramWriter", module: Module, name: str, top: bool):
        self.program, self.module, self.name, self.top = program, module, name, top
        self.method = type(module).__call__
        self.method = getattr(self.method, "__wrapped__", self.method)
        self.namespace = dict(self.method.__globals__)
        closure = inspect.getclosurevars(self.method).nonlocals
        self.namespace.update(closure)
        self.static: dict[str, Any] = {}
        self.dynamic: set[str] = set()
        self.lines: list[str] = []
        self.depth = 0  # under an if, for or while the data decides
        self.uses_rngs = False
        self.injected: dict[str, Any] = {}
        self.origin = ""
        self.parsed = None  # __call__'s source with positions (frontend/source.py), once read
        self.read_names: set[str] = set()  # what this call reads of params: its parameters, its children
        self.children_called: set[str] = set()  # (a child may be called again: it reads its entry again)

    # -- errors --------------------------------------------------------------------------------

    def refuse(self, node: cst.CSTNode | None, what: str, hint: str) -> S2SError:
        """The refusal, at node's file:line:col in __call__ (at its def where node is None)."""
        where = f"{type(self.module).__name__}.__call__"
        origin = None
        if self.parsed is not None:
            origin = self.parsed.origin(node if node in self.parsed.positions else self.parsed.node)
        return S2SError(f"s2s.nn cannot write {where} as a plain function: {what}", origin, hint)

    # -- expressions ---------------------------------------------------------------------------

    def evaluate(self, node: cst.BaseExpression) -> Any:
        return eval(compile(_code_of(node).strip(), "<s2s.nn>", "eval"), self.namespace, dict(self.static))

    def chain(self, node: cst.BaseExpression) -> Any:
        """The value of a name or a chain of attributes (self.kernel, np.float32) known when the
        function is written, read without running anything but attribute reads; _UNKNOWN where it is
        not known, or where a parameter of a setup is on the way (self.kernel.T)."""
        if isinstance(node, cst.Name):
            name = node.value
            if name in self.dynamic:
                return _UNKNOWN
            if name in self.static:
                return self.static[name]
            return self.namespace[name] if name in self.namespace else getattr(builtins, name, _UNKNOWN)
        if isinstance(node, cst.Attribute):
            base = self.chain(node.value)
            if base is _UNKNOWN or _holds_param(base):
                return _UNKNOWN
            try:
                return getattr(base, node.attr.value)
            except Exception:  # noqa: BLE001 - (not known when written: evaluating the expression says why)
                return _UNKNOWN
        return _UNKNOWN

    def reads_param(self, node: cst.CSTNode) -> bool:
        """Whether an expression reads a parameter of a setup: a name or attribute whose value is
        one or holds one (`self.kernel`, `self.weights`). Such an expression is written piece by
        piece, not evaluated when written (no array exists then: ParamPlaceholder)."""
        if isinstance(node, (cst.Name, cst.Attribute)) and _holds_param(self.chain(node)):
            return True
        if isinstance(node, cst.Name):
            return False
        if isinstance(node, cst.Attribute):
            return self.reads_param(node.value)
        if isinstance(node, cst.Arg):
            return self.reads_param(node.value)
        return any(self.reads_param(child) for child in node.children)

    def expr(self, node: cst.BaseExpression):
        names = _free_names(node)
        known = not names & self.dynamic and not isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp,
                                                                   cst.DictComp, cst.SetComp)) \
            and not _calls_self_method(node)
        if known and isinstance(node, (cst.Name, cst.Attribute)):
            value = self.chain(node)
            if _holds_param(value):  # (a parameter of a setup, or a list of them: written where it is used)
                return _Static(value, node)
        if known and not self.reads_param(node):
            try:
                return _Static(self.evaluate(node), node)
            except S2SError as exc:
                if exc.origin is not None:
                    raise
                raise self.refuse(node, exc.reason, exc.hint) from None  # (module.py's, at this expression)
            except Exception:  # noqa: BLE001 - not known when written (a name bound in a comprehension): as written
                if names & (set(self.static) | {"self"}):
                    raise self.refuse(node, "this expression of the module's fields fails when the code is written",
                                      "compute it from the fields alone, or from the arrays") from None
                return _Code(_code_of(node))
        if isinstance(node, cst.Name):
            return _Code(node.value)
        if isinstance(node, cst.Call):
            return self.call(node)
        if isinstance(node, cst.Attribute):
            return _Code(f"{self.code(node.value)}.{node.attr.value}")
        if isinstance(node, cst.Subscript):
            return self.subscript(node)
        if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
            op = _code_of(node.operator).strip()
            return self.fold([self.expr(node.left), self.expr(node.right)], f"({{}} {op} {{}})", node)
        if isinstance(node, cst.UnaryOperation):
            op = _code_of(node.operator).strip()
            return self.fold([self.expr(node.expression)], f"({op} {{}})" if op == "not" else f"({op}{{}})", node)
        if isinstance(node, cst.Comparison):
            form = "({}" + "".join(f" {_code_of(c.operator).strip()} {{}}" for c in node.comparisons) + ")"
            return self.fold([self.expr(node.left)] + [self.expr(c.comparator) for c in node.comparisons], form, node)
        if isinstance(node, (cst.Tuple, cst.List)):
            pieces = [self.expr(e.value) for e in node.elements]
            if all(isinstance(p, _Static) for p in pieces) \
                    and not any(isinstance(e, cst.StarredElement) for e in node.elements):
                values = [p.value for p in pieces]  # (parameters of a setup among them: (self.a, self.b))
                return _Static(values if isinstance(node, cst.List) else tuple(values), node)
            items = [("*" if isinstance(e, cst.StarredElement) else "") + self.text(p)
                     for e, p in zip(node.elements, pieces)]
            if isinstance(node, cst.List):
                return _Code(f"[{', '.join(items)}]")
            return _Code(f"({', '.join(items)}{',' if len(items) == 1 else ''})")
        if isinstance(node, cst.Dict):
            items = []
            for e in node.elements:
                if not isinstance(e, cst.DictElement):
                    raise self.refuse(node, "a ** in a dict display", "write the entries out")
                items.append(f"{self.code(e.key)}: {self.code(e.value)}")
            return _Code("{" + ", ".join(items) + "}")
        if isinstance(node, cst.IfExp):
            test = self.expr(node.test)
            if isinstance(test, _Static):
                return self.expr(node.body if test.value else node.orelse)
            return _Code(f"({self.code(node.body)} if {self.text(test)} else {self.code(node.orelse)})")
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)):
            if names & (set(self.static) | {"self"}):
                raise self.refuse(node, "a lambda or comprehension reads the module's fields or its submodules",
                                  "compute what it reads from the fields before it, outside it")
            return _Code(_code_of(node))
        raise self.refuse(node, f"{type(node).__name__} expressions are not written", "write it another way")

    def fold(self, pieces: list, form: str, node: cst.BaseExpression):
        """An operation on pieces (form: its code, "({} + {})"): its value where the pieces are
        values known when written and none is a parameter of a setup (len(self.weights) - 1, in an
        expression written piece by piece), else its code."""
        if all(isinstance(p, _Static) and not _holds_param(p.value) for p in pieces):
            names = {f"_v{i}": p.value for i, p in enumerate(pieces)}
            try:
                return _Static(eval(form.format(*names), {}, names), node)
            except Exception:  # noqa: BLE001 - (written as it is: it fails where it runs, as eagerly)
                pass
        return _Code(form.format(*(self.text(p) for p in pieces)))

    def subscript(self, node: cst.Subscript):
        base = self.expr(node.value)
        elements = []  # (an index's piece, or a slice's three pieces, None where left out)
        for element in node.slice:
            s = element.slice
            if isinstance(s, cst.Index):
                elements.append(self.expr(s.value))
            else:
                elements.append(tuple(self.expr(p) if p is not None else None for p in (s.lower, s.upper, s.step)))
        known = all(isinstance(p, _Static) or p is None for e in elements
                    for p in (e if isinstance(e, tuple) else (e,)))
        if known and isinstance(base, _Static) and _holds_param(base.value) \
                and not isinstance(base.value, ParamPlaceholder):
            keys = [slice(*(p.value if p is not None else None for p in e)) if isinstance(e, tuple) else e.value
                    for e in elements]
            try:  # (an item of a list or dict of parameters of a setup: self.weights[0] is the parameter)
                return _Static(base.value[keys[0] if len(keys) == 1 else tuple(keys)], node)
            except Exception:  # noqa: BLE001 - (written as it is: it fails where it runs, as eagerly)
                pass
        items = []
        for e, element in zip(elements, node.slice):
            if isinstance(e, tuple):
                parts = [self.text(p) if p is not None else "" for p in e]
                items.append(f"{parts[0]}:{parts[1]}" + (f":{parts[2]}" if element.slice.step is not None else ""))
            else:
                items.append(self.text(e))
        return _Code(f"{self.text(base)}[{', '.join(items)}]")

    def code(self, node: cst.BaseExpression) -> str:
        return self.text(self.expr(node))

    def text(self, piece) -> str:
        if isinstance(piece, _Code):
            return piece.text
        return self.constant(piece.value, piece.node)

    def constant(self, value: Any, node: cst.BaseExpression | None = None, at: cst.CSTNode | None = None) -> str:
        """The code of a value known when the function is written (at: where a refusal points, the
        expression that holds it)."""
        at = node if at is None else at
        if isinstance(value, ParamPlaceholder):
            return self.param_read(value, at)
        if isinstance(value, Module):
            raise self.refuse(at, "a module used as a value (s2s.nn writes calls of modules only)",
                              "call the module where its result is needed")
        if _holds_param(value):
            if type(value) is dict:
                return "{" + ", ".join(f"{self.constant(k, at=at)}: {self.constant(v, at=at)}"
                                       for k, v in value.items()) + "}"
            if type(value) not in (list, tuple):
                raise self.refuse(at, f"parameters of a setup held in a {type(value).__name__}",
                                  "hold them in a list, tuple or dict")
        if node is not None and not (_free_names(node) & (set(self.static) | {"self"})) \
                and isinstance(node, (cst.Name, cst.Attribute)):
            return _code_of(node)  # np.float32, nn.relu, a global: as written (the globals are the file's)
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if np.isfinite(value) else f"float({str(value)!r})"
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return self.constant(value.item())
        if isinstance(value, tuple):
            items = [self.constant(v, at=at) for v in value]
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if isinstance(value, list):
            return f"[{', '.join(self.constant(v, at=at) for v in value)}]"
        return self.program.inject(self, value)

    def param_read(self, placeholder: ParamPlaceholder, at: cst.CSTNode | None) -> str:
        """A parameter that a setup made (module.py, ParamPlaceholder): the read of its entry of
        this function's params, `params["kernel"]` for this module's own, `params["inner"]["kernel"]`
        for one of a submodule that was written here (its setup run); another module's (a parent's
        given as a field) is not among this function's params and is refused."""
        owner = placeholder.module
        path, own = owner._scope().path, self.module._scope().path
        if path[:len(own)] != own:
            where = "/".join(path) or "the top module"
            raise self.refuse(at, f"the parameter {placeholder.name!r} of {type(owner).__name__} ({where}) is read in "
                              f"{type(self.module).__name__}.__call__, which s2s.nn writes as a function of its own "
                              "parameters", "pass it to the call as an argument (self.child(x, self.kernel)), or "
                              "make the parameter in this module")
        return "params" + "".join(f"[{_key(name)}]" for name in path[len(own):]) + f"[{_key(placeholder.name)}]"

    def call(self, node: cst.Call):
        func = node.func
        method = _self_method(node)
        if method == "param":
            return _Code(self.param(node))
        if method is not None:
            hint = ("keep state as arrays that __call__ takes and returns" if method == "variable" else
                    "pass a key to __call__ and draw with s2s.random (nn.Dropout draws from apply's rngs)")
            raise self.refuse(node, f"self.{method} in the __call__ of a module of the user's",
                              hint + ", or call the module eagerly (model.apply outside the transformed function)")
        callee = self.expr(func)
        if isinstance(callee, _Static) and isinstance(callee.value, type) and issubclass(callee.value, Module):
            return self.construction(node, callee.value)
        pieces = [(arg, self.expr(arg.value)) for arg in node.args]
        if isinstance(callee, _Static) and not isinstance(callee.value, Module) \
                and all(isinstance(p, _Static) and not arg.star and not isinstance(p.value, ParamPlaceholder)
                        for arg, p in pieces):
            # (every value known, a list of parameters of a setup among them: len(self.weights),
            # zip(self.weights, self.biases) are known; np.stack(self.weights) is written as code)
            try:
                return _Static(callee.value(*[p.value for arg, p in pieces if arg.keyword is None],
                                            **{arg.keyword.value: p.value for arg, p in pieces
                                               if arg.keyword is not None}), node)
            except ParamValueUsed:
                pass
            except S2SError as exc:
                if exc.origin is not None:
                    raise
                raise self.refuse(node, exc.reason, exc.hint) from None
            except Exception:  # noqa: BLE001 - (as for an expression of the fields: expr)
                raise self.refuse(node, "this expression of the module's fields fails when the code is written",
                                  "compute it from the fields alone, or from the arrays") from None
        if isinstance(callee, _Static) and inspect.ismethod(callee.value) and isinstance(callee.value.__self__, Module):
            raise self.refuse(node, f"a method of a module ({callee.value.__name__}) called on values known only when "
                              "the function runs (s2s.nn writes __call__ alone)",
                              "write its statements in __call__, or make it a function of what it reads "
                              "(helper(x, self.kernel))")
        args, kwargs = [], {}
        for arg, piece in pieces:
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = self.text(piece)
            elif arg.star:
                args.append(f"{arg.star}{self.text(piece)}")
            else:
                args.append(self.text(piece))
        if isinstance(callee, _Static) and isinstance(callee.value, Module):
            return _Code(self.module_call(callee.value, args, kwargs, node))
        pieces = args + [f"{k}={v}" for k, v in kwargs.items()]
        return _Code(f"{self.text(callee)}({', '.join(pieces)})")

    def param(self, node: cst.Call) -> str:
        """self.param(name, init_fn, *init_args): the read of this module's parameter name from its
        params (`params["w"]`). init_fn and its arguments are not written: init alone runs them."""
        if self.depth:
            raise self.refuse(node, "self.param under an if, for or while that the data decides (which "
                              "parameters are read would be known only when the function runs)",
                              "make the parameter before the if or loop (or decide it from the module's fields)")
        named = [arg for arg in node.args if arg.keyword is not None and arg.keyword.value == "name"]
        if named:
            name_node = named[0].value
        elif node.args and node.args[0].keyword is None and not node.args[0].star:
            name_node = node.args[0].value
        else:
            raise self.refuse(node, "self.param without its name", "call self.param(name, init_fn, *init_args)")
        piece = self.expr(name_node)
        if not isinstance(piece, _Static) or not isinstance(piece.value, str):
            raise self.refuse(node, "a parameter named by a value known only when the function runs",
                              "name it with a string, or from the module's fields")
        name = piece.value
        made = self.module._nn.get("setup_names", {})
        if name in made:
            raise self.refuse(node, f"self.param({name!r}, ...) in {type(self.module).__name__}, whose setup made a "
                              f"{'parameter' if made[name] == 'param' else 'submodule'} of that name (Flax refuses it "
                              "too)", "give each parameter and submodule its own name")
        if name in self.children_called:
            raise self.refuse(node, f"a parameter named {name!r}, as a submodule of this module is",
                              "give each parameter and submodule its own name")
        if name in self.read_names:
            raise self.refuse(node, f"a second self.param named {name!r} in one call of the module (Flax "
                              "refuses it too)", "give each parameter its own name")
        self.read_names.add(name)
        return f"params[{_key(name)}]"

    def construction(self, node: cst.Call, cls: type) -> _Static:
        """A submodule made with arguments of which some are known only when the function runs:
        only Dropout's deterministic flag may be (kept as code for its call); the rest refused."""
        args, kwargs, deferred = [], {}, None
        for arg in node.args:
            piece = self.expr(arg.value)
            if isinstance(piece, _Code):
                if arg.keyword is not None and arg.keyword.value == "deterministic" and hasattr(cls, "rng_collection"):
                    deferred = piece.text
                    continue
                raise self.refuse(node, "a submodule made with an argument known only when the function runs",
                                  "make it from the module's fields and constants (the data flows through its "
                                  "call, not its settings)")
            if arg.star:
                raise self.refuse(node, "*args or **kwargs in making a submodule", "name the arguments")
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = piece.value
            else:
                args.append(piece.value)
        made = cls(*args, **kwargs)
        made._nn["deterministic_code"] = deferred
        return _Static(made, None)

    def static_text(self, text: str) -> Any:
        """The value of a piece of written code that is a literal, else DYNAMIC."""
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return self.DYNAMIC

    def module_call(self, child: Module, args: list[str], kwargs: dict[str, str], node: cst.CSTNode | None) -> str:
        if self.depth:
            raise self.refuse(node, "a submodule called under an if, for or while that the data decides "
                              "(which submodules run would be known only when the function runs)",
                              "decide it from the module's fields, or call the submodule on both branches "
                              "and choose with np.where")
        if child._nn["parent"] is not self.module:
            raise self.refuse(node, "a module that is not a submodule of this one (made in its __call__, its "
                              "setup or given as one of its fields) is called", "make it a submodule here")
        name = child._nn["name"]
        if name in self.read_names - self.children_called:
            raise self.refuse(node, f"a submodule named {name!r} as a parameter of this module",
                              "give each parameter and submodule its own name")
        self.read_names.add(name)
        self.children_called.add(name)
        child._scope()  # (bound under this module's scope, by its name: its random streams' path)
        params = f"params[{_key(name)}]"
        if hasattr(child, "written_call"):
            try:
                return child.written_call(params, args, kwargs, self)
            except S2SError as exc:
                raise self.refuse(node, exc.reason if hasattr(exc, "reason") else str(exc),
                                  getattr(exc, "hint", "") or "see the layer's documentation") from None
        written = self.program.write(child, f"{self.name}_{name}", top=False)
        if written.uses_rngs:
            self.uses_rngs = True
        pieces = [params, *args] + [f"{k}={v}" for k, v in kwargs.items()]
        if written.uses_rngs:
            pieces.append("rngs=rngs")
        self.program.link(self, written.name)
        return f"{written.name}({', '.join(pieces)})"

    def program_call_of_child(self, owner: Module, child: Module, params: str, args: list[str],
                              kwargs: dict[str, str]) -> str:
        """The call of a module that owner (a layer written in one expression: Sequential) holds:
        its params where its scope is, within owner's (params) where owner adopted it, within this
        function's where it was made inline here (Flax's nn.Sequential([nn.Dense(4), ...]) in an
        @nn.compact method: the layers are Dense_0, ... of this module), written as this function
        writes its own children."""
        path, owner_path, own_path = child._scope().path, owner._scope().path, self.module._scope().path
        if path[:len(owner_path)] == owner_path:
            child_params = params + "".join(f'["{name}"]' for name in path[len(owner_path):])
        else:
            child_params = "params" + "".join(f'["{name}"]' for name in path[len(own_path):])
        if hasattr(child, "written_call"):
            return child.written_call(child_params, args, kwargs, self)
        written = self.program.write(child, f"{self.name}_{'_'.join(child._scope().path)}", top=False)
        self.uses_rngs = self.uses_rngs or written.uses_rngs
        self.program.link(self, written.name)
        pieces = [child_params, *args] + [f"{k}={v}" for k, v in kwargs.items()]
        return f"{written.name}({', '.join(pieces + (['rngs=rngs'] if written.uses_rngs else []))})"

    # -- statements ----------------------------------------------------------------------------

    def emit(self, text: str, indent: int) -> None:
        self.lines.append("    " * indent + text)

    def bind(self, target: cst.BaseExpression, piece, indent: int, node: cst.CSTNode) -> None:
        taken = _assigned_names(cst.Assign([cst.AssignTarget(target)], cst.Name("_"))) & {"params", "variables", "rngs"}
        if taken:
            raise self.refuse(node, f"a variable named {sorted(taken)[0]} (a name of the written function's own)",
                              "rename it")
        if isinstance(target, cst.Name):
            if isinstance(piece, _Static) and not self.depth \
                    and not isinstance(piece.value, (np.ndarray, ParamPlaceholder)):
                self.static[target.value] = piece.value
                self.dynamic.discard(target.value)
                return
            self.static.pop(target.value, None)
            self.dynamic.add(target.value)
            self.emit(f"{target.value} = {self.text(piece)}", indent)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(piece, _Static) and not self.depth \
                and all(isinstance(e.value, cst.Name) for e in target.elements):
            values = list(piece.value)
            if len(values) != len(target.elements):
                raise self.refuse(node, "unpacking a value of another length", "match the names to the items")
            for e, v in zip(target.elements, values):
                self.bind(e.value, _Static(v), indent, node)
            return
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            raise self.refuse(node, "an attribute of self assigned in __call__", "keep the value in a local variable")
        for name in _assigned_names(cst.Assign([cst.AssignTarget(target)], cst.Name("_"))):
            self.static.pop(name, None)
            self.dynamic.add(name)
        self.emit(f"{_code_of(target).strip()} = {self.text(piece)}", indent)

    def materialise(self, names: set[str], indent: int) -> None:
        """Names known when written that a branch the data decides may change: written out before
        it as variables."""
        for name in sorted(names & set(self.static)):
            value = self.static.pop(name)
            self.dynamic.add(name)
            self.emit(f"{name} = {self.constant(value)}", indent)

    def block(self, body, indent: int) -> None:
        statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self.small(small, indent)
            elif isinstance(statement, cst.SimpleStatementSuite):
                for small in statement.body:
                    self.small(small, indent)
            else:
                self.compound(statement, indent)

    def small(self, node: cst.BaseSmallStatement, indent: int) -> None:
        if isinstance(node, cst.Pass):
            return
        if isinstance(node, cst.Expr):
            if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                return  # a docstring
            if isinstance(node.value, cst.Call):
                written = self.text(self.call(node.value))
                if _self_method(node.value) != "param":  # (a parameter made and not used: nothing to read)
                    self.emit(written, indent)
                return
            self.emit(self.code(node.value), indent)
            return
        if isinstance(node, cst.Return):
            self.emit("return" + (f" {self.code(node.value)}" if node.value is not None else ""), indent)
            return
        if isinstance(node, cst.Assign):
            piece = self.expr(node.value)
            if len(node.targets) > 1:
                self.materialise(_assigned_names(node), indent)
            for target in node.targets:
                self.bind(target.target, piece, indent, node)
            return
        if isinstance(node, cst.AnnAssign) and node.value is not None:
            self.bind(node.target, self.expr(node.value), indent, node)
            return
        if isinstance(node, cst.AugAssign):
            op = _code_of(node.operator).strip()[:-1]
            combined = cst.BinaryOperation(node.target, cst.parse_expression(f"a {op} b").operator,
                                           node.value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                                           if not isinstance(node.value, (cst.Name, cst.Integer, cst.Float))
                                           else node.value)
            self.bind(node.target, self.expr(combined), indent, node)
            return
        if isinstance(node, (cst.Break, cst.Continue)) and self.depth:
            self.emit(_code_of(node).strip(), indent)
            return
        if isinstance(node, cst.Assert):
            self.emit(_code_of(node).strip(), indent)
            return
        raise self.refuse(node, f"{type(node).__name__} statements are not written",
                          "use assignments, expressions, if, for, while and return")

    def compound(self, node: cst.BaseCompoundStatement, indent: int) -> None:
        if isinstance(node, cst.If):
            test = self.expr(node.test)
            if isinstance(test, _Static) and not self.depth:
                if test.value:
                    self.block(node.body, indent)
                elif node.orelse is not None:
                    orelse = node.orelse
                    self.block(orelse.body, indent) if isinstance(orelse, cst.Else) else self.compound(orelse, indent)
                return
            self.materialise(_assigned_names(node), indent)
            self.depth += 1
            self.emit(f"if {self.text(test)}:", indent)
            self.block(node.body, indent + 1)
            orelse = node.orelse
            while orelse is not None:
                if isinstance(orelse, cst.Else):
                    self.emit("else:", indent)
                    self.block(orelse.body, indent + 1)
                    break
                self.emit(f"elif {self.code(orelse.test)}:", indent)
                self.block(orelse.body, indent + 1)
                orelse = orelse.orelse
            self.depth -= 1
            return
        if isinstance(node, cst.For):
            iterable = self.expr(node.iter)
            if isinstance(iterable, _Static) and not self.depth and node.orelse is None:
                if any(isinstance(n, (cst.Break, cst.Continue)) for n in _walk(node.body)):
                    raise self.refuse(node, "break or continue in a loop over the module's fields, which is unrolled",
                                      "choose the items before the loop (self.features[:k])")
                for item in iterable.value:
                    self.bind(node.target, _Static(item), indent, node)
                    self.block(node.body, indent)
                return
            self.materialise(_assigned_names(node), indent)
            self.depth += 1
            for name in _assigned_names(cst.Assign([cst.AssignTarget(node.target)], cst.Name("_"))):
                self.dynamic.add(name)
            self.emit(f"for {_code_of(node.target).strip()} in {self.text(iterable)}:", indent)
            self.block(node.body, indent + 1)
            self.depth -= 1
            return
        if isinstance(node, cst.While) and node.orelse is None:
            self.materialise(_assigned_names(node), indent)
            self.depth += 1
            self.emit(f"while {self.code(node.test)}:", indent)
            self.block(node.body, indent + 1)
            self.depth -= 1
            return
        raise self.refuse(node, f"{type(node).__name__} statements are not written",
                          "use assignments, expressions, if, for, while and return")

    # -- the function ----------------------------------------------------------------------------

    def write(self) -> str:
        try:
            self.parsed = parse_function(self.method)
        except S2SError as exc:
            raise self.refuse(None, f"the source of {type(self.module).__name__}.__call__ cannot be read "
                              f"({exc.reason})", "define the module in a file") from None
        function = self.parsed.node
        params = function.params
        if params.star_kwarg is not None or params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) \
                or params.posonly_params:
            raise self.refuse(None, "*args, **kwargs or positional-only parameters in __call__",
                              "name the parameters")
        own = list(params.params)[1:] + list(params.kwonly_params)
        names = [p.name.value for p in own]
        if "self" != params.params[0].name.value:
            raise self.refuse(None, "the first parameter of __call__ is not named self", "name it self")
        if {"variables", "params", "rngs"} & set(names):
            raise self.refuse(None, "a parameter of __call__ named variables, params or rngs (the written "
                              "function's own)", "rename it")
        self.dynamic.update(names)
        self.static["self"] = self.module
        self.origin = f"{os.path.basename(self.parsed.filename)}:{self.parsed.first_line}"
        self.module._scope()
        try:
            self.module._set_up()
        except S2SError as exc:
            if exc.origin is not None:
                raise
            raise self.refuse(None, f"its setup fails where the code is written: {exc.reason}", exc.hint) from None
        compact = getattr(self.method, "nn_compact", False)
        if compact:
            self.module._nn["counts"] = {}
        _running().append(self.module)
        try:
            self.block(function.body, 1)
        finally:
            _running().pop()
        signature = []
        for p in own:
            default = f"={_code_of(p.default).strip()}" if p.default is not None else ""
            signature.append(p.name.value + default)
        head = ["variables" if self.top else "params", *signature]
        if self.top:
            head.append("rngs=None")
        elif self.uses_rngs:
            head.append("rngs=None")
        doc = (f'    """{type(self.module).__name__}.__call__ ({self.origin}) as a plain function of its '
               f'parameters{", written by s2s.nn" if self.top else ""}."""')
        body = ['    params = variables["params"]'] if self.top else []
        return "\n".join([f"def {self.name}({', '.join(head)}):", doc, *body, *self.lines]) + "\n"


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        if not isinstance(child, (cst.For, cst.While, cst.FunctionDef)):
            yield from _walk(child)


class ProgramWriter:
    """The functions of one module tree: each in its generated module, calling its children's."""

    def __init__(self):
        self.names: set[str] = set()
        self.modules: dict[str, Any] = {}  # function name -> its loaded generated module
        self.links: list[tuple[FunctionWriter, str]] = []

    def unique(self, name: str) -> str:
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        candidate, k = name, 2
        while candidate in self.names or keyword.iskeyword(candidate):
            candidate, k = f"{name}_{k}", k + 1
        self.names.add(candidate)
        return candidate

    def inject(self, writer: FunctionWriter, value: Any) -> str:
        """A name for a value the written code reads from its module (a function, an array)."""
        assert not _holds_param(value)  # (FunctionWriter.constant writes those as reads of params)
        for name, held in writer.injected.items():
            if held is value:
                return name
        base = getattr(value, "__name__", None)
        base = base if isinstance(base, str) and base.isidentifier() else "nn_constant"
        name, k = base, 2
        while name in writer.injected or (name in writer.namespace and writer.namespace[name] is not value) \
                or name in _PROVIDED:
            name, k = f"{base}_{k}", k + 1
        writer.injected[name] = value
        return name

    def link(self, writer: FunctionWriter, name: str) -> None:
        writer.injected[name] = self.modules[name].__dict__[name]

    def write(self, module: Module, name: str, top: bool) -> FunctionWriter:
        writer = FunctionWriter(self, module, self.unique(name), top)
        text = writer.write()
        header = (f"# Written by s2s.nn from {type(module).__name__}.__call__ ({writer.origin}): the module as a "
                  "plain function\n# of its parameters. s2s.nn adds the globals of the module class's file "
                  "when it loads this file.\n")
        source = header + _WRITTEN_IMPORTS + "\n\n" + text
        # (one source can stand for different values: two instances whose array fields differ write
        # the same text, so the module's name also says which values it holds)
        loaded = loading.import_generated(source, f"nn_{writer.name}", suffix=_values_suffix(writer.injected))
        own = vars(loaded)
        for key, value in writer.namespace.items():
            if key not in own and not key.startswith("__"):
                own[key] = value
        own.update(writer.injected)
        self.modules[writer.name] = loaded
        return writer


def _values_suffix(injected: dict[str, Any]) -> str:
    """A suffix of the module name that differs for different injected values: arrays by their
    contents, anything else by its identity (a function, a module of the user's)."""
    digest = hashlib.sha1()
    for name in sorted(injected):
        value = injected[name]
        digest.update(name.encode())
        if isinstance(value, np.ndarray):
            digest.update(f"{value.dtype}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        else:
            digest.update(str(id(value)).encode())
    return "_" + digest.hexdigest()[:16]


def written_apply(module: Module):
    """The function s2s reads for module.apply (module.py, Apply.as_called_function)."""
    bound = module._bound_copy(Scope(None, {}, "write"))
    program = ProgramWriter()
    writer = program.write(bound, f"{type(module).__name__}_apply", top=True)
    return vars(program.modules[writer.name])[writer.name]


WRITERS.append(written_apply)
