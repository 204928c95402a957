"""NumPy and math functions passed to a transform as they are (`s2s.grad(np.tanh)`, as the JAX
tutorial writes `jax.grad(jnp.tanh)`): s2s transforms source, so each becomes a one-line Python
function in a small module of its own, written once to the cache directory:

    def tanh(x):
        return np.tanh(x)

So does a functools.partial of a function (`s2s.grad(partial(loss, x=xs))`), whose bound
arguments are globals of that module, constants to the transforms, as JAX's trace takes them:

    def loss_partial(w):
        return loss(w, x=x)
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import math
import os
import sys
import types
import weakref
from typing import Any, Callable

import numpy as np

from ..driver import cache
from ..errors import S2SError
from ..frontend import forwarding, named_lambda

_WRAPPED: dict[int, Callable] = {}  # id(primitive) -> its Python function (primitives live forever)
_PARTIALS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # partial -> its Python function


def _spelling(obj: Any) -> str | None:
    """How generated code names obj: np.tanh, np.linalg.det, math.sin; None if neither names it."""
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        return None
    for prefix, module in (("np", np), ("np.linalg", np.linalg), ("math", math)):
        if getattr(module, name, None) is obj:
            return f"{prefix}.{name}"
    return None


def _arity(obj: Any) -> int | None:
    if isinstance(obj, np.ufunc):
        return obj.nin
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    required = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty]
    return len(required) or None


def as_function(fun: Any) -> Any:
    """fun itself, a lambda as a function with a name (lambda_<line>), or for a NumPy or math
    function the Python function that calls it; of an @functools.lru_cache function, the function."""
    if isinstance(fun, functools._lru_cache_wrapper):
        fun = fun.__wrapped__
    if isinstance(fun, functools.partial):
        if fun not in _PARTIALS:
            _PARTIALS[fun] = _partial_function(fun)
        return _PARTIALS[fun]
    while isinstance(fun, types.FunctionType) and forwarding(fun)[0] is not None:
        fun = forwarding(fun)[0]  # (a functools.wraps wrapper that only forwards *args, **kwargs)
    # (NumPy's own Python functions, np.row_stack, are called as NumPy functions: by their rules)
    numpy_own = isinstance(fun, types.FunctionType) and (fun.__module__ or "").split(".")[0] == "numpy" \
        and _spelling(fun) is not None
    if isinstance(fun, types.FunctionType) and not numpy_own:
        if fun.__code__.co_name != "<lambda>":
            return fun
        return named_lambda(fun)
    if not callable(fun) or hasattr(fun, "with_backend"):
        return fun
    if id(fun) in _WRAPPED:
        return _WRAPPED[id(fun)]
    spelled, arity = _spelling(fun), _arity(fun)
    if spelled is None or arity is None:
        return fun  # the frontend refuses it with its own message
    name = fun.__name__
    params = ", ".join(["x", "y", "z", "w"][:arity]) if arity <= 4 else ", ".join(f"x{k}" for k in range(arity))
    source = (f'"""{spelled} as a Python function, for s2s (written by s2s.doors.primitives)."""\n\n'
              f"import math\n\nimport numpy as np\n\n\ndef {name}({params}):\n    return {spelled}({params})\n")
    directory = cache.usable_dir(os.path.join(cache.user_cache_dir(), "primitives"))
    path = os.path.join(directory, f"{spelled.replace('.', '_')}.py")
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != source:
        cache.write_atomic(path, source)
    module_name = f"s2s_primitives.{spelled.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    _WRAPPED[id(fun)] = getattr(module, name)
    return _WRAPPED[id(fun)]


def _partial_function(bound: functools.partial) -> Callable:
    """functools.partial(f, *args, **keywords) as a Python function of f's other parameters (in
    order; the call's positional arguments, and so argnums, count from the first of them, as
    JAX's do) that calls f with the bound arguments, which are globals of its module."""
    fun = as_function(bound.func)
    if not isinstance(fun, types.FunctionType):
        raise S2SError(f"functools.partial of {type(bound.func).__name__} objects is not supported",
                       hint="take functools.partial of a function defined with def (or of a NumPy function)")
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not parameters or any(p.kind not in kinds for p in parameters):
        raise S2SError(f"functools.partial of {fun.__name__}: s2s takes functions of plain positional parameters",
                       hint="remove *, / and **kwargs from the signature of the function")
    if len(bound.args) > len(parameters) or set(bound.keywords) - {p.name for p in parameters} \
            or set(bound.keywords) & {p.name for p in parameters[:len(bound.args)]}:
        raise S2SError(f"functools.partial of {fun.__name__}: its arguments do not fit the signature "
                       f"{inspect.signature(fun)}")
    values = {p.name: v for p, v in zip(parameters, bound.args)} | dict(bound.keywords)
    rest = [p for p in parameters if p.name not in values]
    name = f"{fun.__name__}_partial"
    taken = {name, fun.__name__} | {p.name for p in rest}
    globals_: dict[str, Any] = {fun.__name__: fun}

    def global_name(wanted: str, value: Any) -> str:
        while wanted in taken:
            wanted += "_"
        taken.add(wanted)
        globals_[wanted] = value
        return wanted

    constants = {p: global_name(p, v) for p, v in values.items()}
    signature = ", ".join(p.name if p.default is p.empty else f"{p.name}={global_name(f'{p.name}_default', p.default)}"
                          for p in rest)
    positional = [constants[p.name] for p in parameters[:len(bound.args)]]
    after = [p.name for p in parameters[len(bound.args):]]
    arguments = ", ".join(positional + [f"{p}={constants[p]}" if p in constants else f"{p}={p}" for p in after])
    described = ", ".join(["..."] * len(bound.args) + [f"{k}=..." for k in bound.keywords])
    source = (f'"""functools.partial({fun.__name__}, {described}) as a Python function, for s2s (written by '
              f's2s.doors.primitives)."""\n\n\ndef {name}({signature}):\n    return {fun.__name__}({arguments})\n')
    return _written_function(name, source, globals_)


def _written_function(name: str, source: str, globals_: dict) -> Callable:
    """The function `name` of a small module of this source, written to the cache directory (the
    transforms read its source) and run with these globals."""
    directory = cache.usable_dir(os.path.join(cache.user_cache_dir(), "partials"))
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = os.path.join(directory, f"{name}_{digest}.py")
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != source:
        cache.write_atomic(path, source)
    module = types.ModuleType(f"s2s_partials.{name}_{digest}")
    module.__file__ = path
    module.__dict__.update(globals_)
    exec(compile(source, path, "exec"), module.__dict__)
    return getattr(module, name)


_FIXED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # fun -> {count: its function of count parameters}


def of_arity(fun: Callable, count: int) -> Callable:
    """fun, a function of positional parameters and *args, as a function of `count` named
    parameters that calls it with them: for the doors whose argnums count named parameters
    (jacfwd, jacrev), called with `count` arguments."""
    known = _FIXED.setdefault(fun, {})
    if count not in known:
        name = fun.__name__ if fun.__name__.isidentifier() else "function"
        params = ", ".join(f"a{k}" for k in range(count))
        wrapper = f"{name}_of_{count}"
        source = (f'"""{name} called with {count} arguments, as a function of as many parameters, for s2s (written '
                  f'by s2s.doors.primitives)."""\n\n\ndef {wrapper}({params}):\n    return {name}({params})\n')
        known[count] = _written_function(wrapper, source, {name: fun})
    return known[count]
