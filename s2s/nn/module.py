"""nn.Module: Flax's modules (flax.linen) run eagerly in NumPy, for init and for apply.

A module is a dataclass of its settings (`features: int`); its `__call__` (marked @nn.compact,
where it makes its submodules inline) or its `setup` (where it assigns them to attributes)
describes the computation. `model.init(key, x)` runs `__call__` once, creating each parameter
with its initialiser; `model.apply(variables, x)` runs it with the parameters given. Names and
nesting are Flax's: a submodule made inline is `ClassName_k` (k counting that class within its
parent, in the order they are made), one assigned in setup is named by its attribute
(`layers_0`, `layers_1` for a list), a module that no module made (made outside init and apply,
or in a setup) and that is given as a field of another by that field (Sequential's `layers_0`).

Random streams are Flax's too: each draw of a module's stream of kind k ('params', 'dropout';
`make_rng(k)`, one per parameter created) is the stream's key given to init or apply folded once
with a hash of the module's path and a count of its draws from 1 (static_hash).

Inside a function given to s2s (grad, jit, vmap), `model.apply` is not run: s2s reads it as
the plain function s2s.nn writes for the module (writing.py; `model.apply.as_called_function()`).
Where that function is written, setup runs in the scope's "write" mode, where no parameter exists:
`self.param` there gives a ParamPlaceholder, which the written code reads from its params
(`params["kernel"]`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import os
import sys
import threading
from typing import Any, Callable

import numpy as np

from .. import random
from ..errors import Origin, S2SError

# The function that writes a module's plain function (writing.py registers it when s2s.nn loads)
WRITERS: list[Callable] = []
_RUNNING = threading.local()  # the stack of modules whose method runs now (their submodules' parent)


def _running() -> list:
    if not hasattr(_RUNNING, "stack"):
        _RUNNING.stack = []
    return _RUNNING.stack


def compact(method: Callable) -> Callable:
    """Marks the method (__call__) that makes its submodules inline."""
    method.nn_compact = True
    return method


def static_hash(items: tuple) -> int:
    """The number Flax folds into a stream's key for a draw: the SHA-1 of the draw's path and
    count one after another (a name as UTF-8, a count as its big-endian bytes), its first four
    bytes read big-endian."""
    digest = hashlib.sha1()
    for item in items:
        digest.update(item.encode("utf-8") if isinstance(item, str) else item.to_bytes((item.bit_length() + 7) // 8, "big"))
    return int.from_bytes(digest.digest()[:4], "big")


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # (s2s's own files)
_NUMPY = os.path.dirname(np.__file__) + os.sep


def _user_origin() -> Origin | None:
    """Where the user's code called what raises: the first frame outside s2s and NumPy (a line of
    setup, for a name given twice or a parameter's value used there)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith((_PACKAGE, _NUMPY)):
        frame = frame.f_back
    return None if frame is None else Origin.of_frame(frame)


class ParamValueUsed(S2SError):
    """The value of a ParamPlaceholder is asked for (writing.py writes the expression as code then)."""


class ParamPlaceholder:
    """What self.param(name, ...) gives in setup where s2s.nn writes a module's code (the scope's
    "write" mode): the parameter name of module, which the written function reads from its params
    (`params["kernel"]`; writing.py, FunctionWriter.param_read). No array exists there: asking for
    its value (an attribute, arithmetic, NumPy, len, bool) raises ParamValueUsed."""

    __slots__ = ("module", "name")

    def __init__(self, module: "Module", name: str):
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "name", name)

    def __repr__(self) -> str:
        return f"<parameter {self.name!r} of {type(self.module).__name__}, where s2s.nn writes its code>"

    def _used(self, *args, **kwargs):
        raise ParamValueUsed(f"the value of the parameter {self.name!r} of {type(self.module).__name__} is used where "
                             "s2s.nn writes the module's code (in its setup, or in what runs there), before any "
                             "parameter exists",
                             _user_origin(), hint="use the parameter in __call__ (x @ self.kernel), where it is "
                             "the read of params, and compute shapes and settings from the module's fields")

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # (protocols looked up by copy, pickle, NumPy: not offered)
        self._used()

    def __setattr__(self, name: str, value: Any):
        self._used()

    __array__ = __array_ufunc__ = __array_function__ = _used
    __bool__ = __len__ = __iter__ = __contains__ = __getitem__ = __setitem__ = __call__ = _used
    __index__ = __int__ = __float__ = __complex__ = _used
    __lt__ = __le__ = __gt__ = __ge__ = _used
    __neg__ = __pos__ = __abs__ = __invert__ = _used


for _op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift", "rshift", "and",
            "xor", "or"):
    for _spelling in (f"__{_op}__", f"__r{_op}__", f"__i{_op}__"):
        setattr(ParamPlaceholder, _spelling, ParamPlaceholder._used)
del _op, _spelling


class Scope:
    """Where one module of a running init or apply finds its parameters and random streams.

    mode: "init" (parameters are created), "apply" (read) or "write" (writing.py: none exist;
    the path is what the written code indexes)."""

    def __init__(self, params: dict | None, rngs: dict, mode: str, path: tuple = ()):
        self.params = params
        self.rngs = rngs
        self.mode = mode
        self.path = path
        self.rng_counts: dict[str, int] = {}
        self.children: dict[str, Scope] = {}

    def child(self, name: str) -> "Scope":
        if name not in self.children:
            if self.mode == "init":
                params = self.params.setdefault(name, {})
            elif self.mode == "apply":
                params = self.params.get(name, {})
            else:
                params = None
            rngs = self.rngs if self.mode != "write" else {}  # (the streams' keys; a draw hashes the path)
            self.children[name] = Scope(params, rngs, self.mode, self.path + (name,))
        return self.children[name]

    def make_rng(self, kind: str) -> np.ndarray:
        if kind not in self.rngs:
            where = "/".join(self.path) or "the top module"
            raise S2SError(f"{where} draws from the random stream {kind!r}, which was not given",
                           hint=f"pass rngs={{{kind!r}: key}} to init or apply")
        self.rng_counts[kind] = self.rng_counts.get(kind, 0) + 1
        return random.fold_in(self.rngs[kind], static_hash(self.path + (self.rng_counts[kind],)))


def _modules_in(value: Any) -> list[tuple[str, "Module"]]:
    """(suffix, module) for a module, or for each module of a list or tuple ('_0', '_1', ...)."""
    if isinstance(value, Module):
        return [("", value)]
    if isinstance(value, (list, tuple)):
        return [(f"_{i}", item) for i, item in enumerate(value) if isinstance(item, Module)]
    return []


@dataclasses.dataclass(eq=False)
class Module:
    """Base of s2s.nn's modules: subclasses are dataclasses (fields are their settings)."""

    name: str | None = dataclasses.field(default=None, kw_only=True)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(cls, eq=False)
        own_call = cls.__dict__.get("__call__")
        if own_call is not None and not getattr(own_call, "nn_runs_bound", False):
            cls.__call__ = _runs_bound(own_call)

    def __post_init__(self):
        state = {"parent": None, "name": self.name, "scope": None, "set_up": False, "in_setup": False,
                 "counts": {}, "apply": None}
        object.__setattr__(self, "_nn", state)
        self._adopt_fields()
        stack = _running()
        if stack:
            parent = stack[-1]
            if parent._nn["in_setup"]:
                return  # named by the attribute it is assigned to (__setattr__)
            self._nn["parent"] = parent
            if self.name is None:
                self._nn["name"] = parent._next_name(type(self).__name__)

    def _next_name(self, class_name: str) -> str:
        counts = self._nn["counts"]
        k = counts.get(class_name, 0)
        counts[class_name] = k + 1
        return f"{class_name}_{k}"

    def _adopt_fields(self):
        """Modules given as fields (Sequential's layers) that no module has made yet (made outside
        init and apply, or in a setup) become children named by the field (`layers_0`); one made
        inline in an @nn.compact method stays its maker's child, with its automatic name
        (`Dense_0` of the maker), as in Flax."""
        for field in dataclasses.fields(self):
            if field.name == "name":
                continue
            value = getattr(self, field.name)
            found = _modules_in(value)
            if not found:
                continue
            adopted = []
            for suffix, child in found:
                if child._nn["parent"] is not None:
                    adopted.append(child)
                    continue
                child = copy.copy(child)
                object.__setattr__(child, "_nn", dict(child._nn, parent=self, scope=None,
                                                       name=child.name or field.name + suffix))
                adopted.append(child)
            if isinstance(value, Module):
                object.__setattr__(self, field.name, adopted[0])
            else:
                it = iter(adopted)
                object.__setattr__(self, field.name, type(value)(
                    next(it) if isinstance(item, Module) else item for item in value))

    def __setattr__(self, name: str, value: Any):
        state = self.__dict__.get("_nn")
        if state is not None and state["in_setup"]:
            for suffix, child in _modules_in(value):
                child._nn["parent"] = self
                child._nn["name"] = child.name or name + suffix
                if state["setup_names"].get(child._nn["name"]) == "param":
                    raise S2SError(f"the submodule {name}{suffix} of {type(self).__name__} is named "
                                   f"{child._nn['name']!r}, as a parameter its setup made (Flax refuses it too)",
                                   _user_origin(), hint="give each parameter and submodule its own name")
                state["setup_names"][child._nn["name"]] = "submodule"
        object.__setattr__(self, name, value)

    # -- running -----------------------------------------------------------------------------

    def _bind(self, scope: Scope) -> None:
        self._nn["scope"] = scope
        self._nn["counts"] = {}

    def _scope(self) -> Scope:
        scope = self._nn["scope"]
        if scope is None:
            parent = self._nn["parent"]
            if parent is None or parent._nn["scope"] is None:
                raise S2SError(f"the module {type(self).__name__} is called outside init or apply",
                               hint="call model.init(key, x) for its parameters and model.apply(variables, x) "
                               "to run it")
            scope = parent._scope().child(self._nn["name"])
            self._bind(scope)
        return scope

    def _set_up(self) -> None:
        if self._nn["set_up"]:
            return
        self._nn["set_up"] = True
        if type(self).setup is Module.setup:
            return
        self._nn["in_setup"] = True
        self._nn["setup_names"] = {}  # name -> "param" or "submodule": what setup made (Flax's reservations)
        _running().append(self)
        try:
            self.setup()
        finally:
            _running().pop()
            self._nn["in_setup"] = False

    def setup(self) -> None:
        """Assigns submodules to attributes (self.dense = nn.Dense(3)); run once, before the first
        call."""

    @property
    def scope_path(self) -> tuple:
        return self._scope().path

    def param(self, name: str, init_fn: Callable, *init_args, **init_kwargs) -> Any:
        """The parameter name of this module: made by init_fn(key, *init_args) in init (the key
        the next of the 'params' stream), read from the variables in apply. A name is made once:
        twice in setup, in setup and again in __call__, or as a submodule setup makes is refused,
        as Flax refuses it. Where s2s.nn writes the module's code, setup's self.param gives a
        ParamPlaceholder (the written code reads params["name"]); self.param in __call__ is written
        there as the read of the parameter (writing.py, FunctionWriter.param) and reaches this only
        from a method that __call__ calls, which is refused."""
        scope = self._scope()
        state = self._nn
        if not isinstance(name, str):
            raise S2SError(f"self.param is given the name {name!r}, which is not a string", _user_origin(),
                           hint="name the parameter with a string")
        made = state.get("setup_names", {})
        if state["in_setup"]:
            if name in made:
                what = "a second parameter" if made[name] == "param" else "a parameter as a submodule"
                raise S2SError(f"the setup of {type(self).__name__} makes {what} named {name!r} (Flax refuses it "
                               "too)", _user_origin(), hint="give each parameter and submodule its own name")
            made[name] = "param"
        elif name in made:
            raise S2SError(f"self.param({name!r}, ...) in {type(self).__name__}, whose setup made a "
                           f"{'parameter' if made[name] == 'param' else 'submodule'} of that name (Flax refuses it "
                           "too)", _user_origin(), hint="give each parameter and submodule its own name")
        if scope.mode == "write":
            if state["in_setup"]:
                return ParamPlaceholder(self, name)
            raise S2SError(f"self.param({name!r}, ...) is called in a method that __call__ calls, where s2s.nn "
                           "writes the code of the module",
                           hint="call self.param in setup or in the statements of __call__ itself "
                           "(w = self.param(...)), or call the module eagerly (model.apply outside the transformed "
                           "function)")
        if scope.mode == "init":
            if name not in scope.params:
                scope.params[name] = init_fn(scope.make_rng("params"), *init_args, **init_kwargs)
            return scope.params[name]
        if name not in scope.params:
            where = "/".join(scope.path) or "the top module"
            raise S2SError(f"the parameter {name!r} of {where} is not in the variables given to apply",
                           hint="pass the variables that model.init returned")
        return scope.params[name]

    def make_rng(self, kind: str = "params") -> np.ndarray:
        return self._scope().make_rng(kind)

    def is_initializing(self) -> bool:
        return self._scope().mode == "init"

    # -- the two entry points ----------------------------------------------------------------

    def _bound_copy(self, scope: Scope) -> "Module":
        bound = copy.copy(self)
        object.__setattr__(bound, "_nn", dict(self._nn, scope=None, set_up=False, counts={}, apply=None))
        bound._adopt_fields()
        bound._bind(scope)
        return bound

    def init(self, rngs, *args, method: Callable | None = None, **kwargs) -> dict:
        """{'params': ...}: the parameters __call__ (or method) creates when it runs on args, drawn
        from rngs (a key, the 'params' stream, or a dict of streams)."""
        if not isinstance(rngs, dict):
            rngs = {"params": rngs}
        params: dict = {}
        bound = self._bound_copy(Scope(params, {k: np.asarray(v) for k, v in rngs.items()}, "init"))
        getattr(bound, (method or type(self).__call__).__name__)(*args, **kwargs)
        return {"params": _without_empty(params)}

    def init_with_output(self, rngs, *args, method: Callable | None = None, **kwargs) -> tuple:
        variables = self.init(rngs, *args, method=method, **kwargs)
        return self.apply(variables, *args, rngs=rngs if isinstance(rngs, dict) else None, **kwargs), variables

    @property
    def apply(self) -> "Apply":
        """model.apply(variables, *args, rngs=None, **kwargs): __call__ run with the variables; a
        function s2s reads as the code s2s.nn writes for the module (as_called_function)."""
        state = self.__dict__["_nn"]
        if state["apply"] is None:
            state["apply"] = Apply(self)
        return state["apply"]

    def run_eagerly(self, variables: dict, *args, rngs: dict | None = None, method: Callable | None = None,
                    mutable: Any = False, **kwargs) -> Any:
        if mutable:
            raise S2SError("s2s.nn keeps no collections beyond 'params': apply(..., mutable=...) is not supported",
                           hint="keep state (batch statistics) as arrays you pass and return")
        if not isinstance(variables, dict) or "params" not in variables:
            raise S2SError("apply takes the variables dict that init returned, {'params': ...}",
                           hint="pass model.init(key, x) (or {'params': params})")
        rngs = {k: np.asarray(v) for k, v in (rngs or {}).items()}
        bound = self._bound_copy(Scope(variables["params"], rngs, "apply"))
        return getattr(bound, (method or type(self).__call__).__name__)(*args, **kwargs)

    def tabulate_names(self) -> None:  # pragma: no cover - (Flax's tabulate is not offered)
        raise S2SError("tabulate is not offered by s2s.nn", hint="print the shapes of model.init(key, x)")


class Apply:
    """model.apply: called, it runs the module eagerly (NumPy); read by s2s inside a function it
    transforms, it is the plain function s2s.nn writes for the module (as_called_function, the
    protocol s2s's frontend follows for an object that stands for a function: an @s2s.jit
    function follows it too). One per module object, so that the name model.apply refers to
    the same object each time (s2s's cache compares it)."""

    def __init__(self, module: Module):
        self.module = module
        self._written: Callable | None = None
        functools.update_wrapper(self, type(module).__call__, assigned=("__doc__",), updated=())

    def __call__(self, variables, *args, rngs=None, method=None, mutable=False, **kwargs):
        return self.module.run_eagerly(variables, *args, rngs=rngs, method=method, mutable=mutable, **kwargs)

    def as_called_function(self) -> Callable:
        if self._written is None:
            self._written = WRITERS[0](self.module)  # (writing.py, which imports this module)
            # s2s's cache records what a name refers to by module and qualified name: this
            # object stands for the written function
            self.__module__ = self._written.__module__
            self.__qualname__ = self._written.__qualname__
        return self._written

    def __repr__(self) -> str:
        return f"<apply of {type(self.module).__name__}>"


def _runs_bound(method: Callable) -> Callable:
    """A module's __call__, run as Flax runs it: the module bound to its scope (its parent's, by
    name), set up, and the parent of the submodules it makes (their names counted anew each call,
    so a second call reuses the first one's parameters)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        self._scope()
        self._set_up()
        if getattr(method, "nn_compact", False):
            self._nn["counts"] = {}
        _running().append(self)
        try:
            return method(self, *args, **kwargs)
        finally:
            _running().pop()

    run.nn_runs_bound = True
    return run


def _without_empty(tree: dict) -> dict:
    """The parameters without the dicts of modules that have none (a Dropout's)."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            value = _without_empty(value)
            if not value:
                continue
        out[key] = value
    return out
