"""NumPy and math functions passed to a transform as they are (`s2s.grad(np.tanh)`, as the JAX
tutorial writes `jax.grad(jnp.tanh)`): s2s transforms source, so each becomes a one-line Python
function in a small module of its own, written once to the cache directory:

    def tanh(x):
        return np.tanh(x)
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import os
import sys
import types
from typing import Any, Callable

import numpy as np

from ..driver import cache
from ..frontend import named_lambda

_WRAPPED: dict[int, Callable] = {}  # id(primitive) -> its Python function (primitives live forever)


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
    if isinstance(fun, types.FunctionType):
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
