"""Arguments that choose the code rather than carry numbers: what the doors and the cache know of
them (frontend/static_arguments.py tells the story and decides the tests; this part imports no
libcst, so that a process running generated code from the cache does not load it).

A static value is a string, None, a type (float, np.float32, a dtype) or a function (the user's,
or a library's its module names). A call that passes one runs the code generated for a copy of
the function that carries it (specialised), one copy per combination of values.
"""

from __future__ import annotations

import inspect
import sys
import types
import weakref
from typing import Any

import numpy as np

from ..errors import S2SError

_CARRIED = "__s2s_static__"  # the attribute of a specialised copy: {parameter: value}
_KINDS = "__s2s_kinds__"  # and {parameter: the type of its argument}, where it tests types
# and {parameter: its dict argument's keys, or its tuple or list argument's length}, where it
# may scan over one (s2s.lax.scan)
_KEYS = "__s2s_container_keys__"


def is_static(value: Any) -> bool:
    """Does the value choose code (a string, None, a type, a dtype, a function) rather than
    carry numbers?"""
    if value is None or isinstance(value, (str, np.dtype)):
        return True
    if isinstance(value, type):
        return value in (float, int, bool, complex) or issubclass(value, np.generic)
    # a function: the user's, or a library's that its module names (numpy.median, math.sqrt)
    return isinstance(value, types.FunctionType) or callable(value) and _importable_name(value) is not None


def _importable_name(value: Any) -> str | None:
    """module.name of a library function, where importing it gives this very object back (a
    ufunc of SciPy names no module: it is looked for in numpy and scipy.special)."""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(name, str):
        return None
    module = getattr(value, "__module__", None)
    for candidate in ([module] if module else ["numpy", "scipy.special"]):
        found = sys.modules.get(candidate)
        for part in name.split("."):
            found = getattr(found, part, None)
        if found is value:
            return f"{candidate}.{name}"
    return None


def frontend_value(value: Any) -> Any:
    """What the frontend reads for a static value: a dtype's scalar type (np.float32 for
    np.dtype("float32")), else the value."""
    return value.type if isinstance(value, np.dtype) else value


_SPECIALISED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_PARAMETERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _parameters(fun: types.FunctionType) -> tuple[list, bool, bool] | None:
    """(the names of fun's parameters as generated code takes them, None for *args's tuple; does
    fun test types with isinstance?; does it call a scan, s2s.lax.scan?), once per function (the
    doors ask on every call)."""
    known = _PARAMETERS.get(fun)
    if known is None:
        try:
            parameters = [p for p in inspect.signature(fun, follow_wrapped=False).parameters.values()
                          if p.kind is not p.VAR_KEYWORD]
        except (TypeError, ValueError):
            return None
        names = [None if p.kind is p.VAR_POSITIONAL else p.name for p in parameters]
        known = _PARAMETERS[fun] = (names, "isinstance" in fun.__code__.co_names, "scan" in fun.__code__.co_names)
    return known


def specialised(fun: Any, bound: tuple, marked: tuple[int, ...] = ()) -> Any:
    """fun, or a copy of it that carries the static values of the bound arguments (in the order
    generated code takes them: frontend.lower.parameter_names); one copy per combination, so
    that what the doors keep per function is kept per combination too. The arguments at the
    positions `marked` (s2s.jit's static_argnums) are static whatever they are, as JAX's are:
    a number, or a tuple of them (einsum's sublists, a shape), that must be hashable."""
    if type(fun) is not types.FunctionType or getattr(fun, _CARRIED, None) is not None:
        return fun
    known = _parameters(fun)
    if known is None:
        return fun
    names, tests_types, scans = known
    # s2s.lax.scan over a dict, tuple or list argument slices each of its entries: the code is
    # that of the call's keys (or number of items).
    keys = {name: tuple(value) if isinstance(value, dict) else len(value) for name, value in zip(names, bound)
            if name is not None and isinstance(value, (dict, tuple, list))} if scans else {}
    if not tests_types and not keys and not marked and not any(is_static(value) for value in bound):
        return fun
    static = {name: value for k, (name, value) in enumerate(zip(names, bound))
              if name is not None and (k in marked or is_static(value))}
    named = [(name, value) for name, value in zip(names, bound) if name is not None]
    for k in marked:
        _check_hashable(fun, names[k], bound[k])
    # isinstance(x, np.ndarray) of an argument is decided by its type, as a JAX trace decides it:
    # where the function tests types, the types of the others are carried too.
    kinds = {name: type(value) for name, value in named if name not in static} if tests_types else {}
    return carrying(fun, static, kinds, keys)


def _check_hashable(fun: Any, name: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise S2SError(f"the argument {name} of {fun.__name__} is static (s2s.jit's static_argnums or "
                       f"static_argnames), and a static value must be hashable, which a {type(value).__name__} "
                       "is not", hint="pass a tuple for a list, or leave the argument out of static_argnums "
                       "(an array is passed as it is)") from None


def carrying(fun: Any, static: dict, kinds: dict | None = None, keys: dict | None = None) -> Any:
    """fun, or its copy that carries these static values ({parameter: value}), the types of
    other arguments its isinstance tests read ({parameter: type}) and the keys of the dict
    arguments it may scan over ({parameter: keys}, or the length of a tuple or list argument)."""
    kinds, keys = kinds or {}, keys or {}
    if not (static or kinds or keys) or not isinstance(fun, types.FunctionType) \
            or getattr(fun, _CARRIED, None) is not None:
        return fun
    key = tuple((name, type(value), value) for name, value in static.items()) + tuple(kinds.items()) \
        + tuple(("keys", name, k) for name, k in keys.items())
    copies = _SPECIALISED.setdefault(fun, {})
    copy = copies.get(key)
    if copy is None:
        copy = types.FunctionType(fun.__code__, fun.__globals__, fun.__name__, fun.__defaults__, fun.__closure__)
        copy.__kwdefaults__ = fun.__kwdefaults__
        copy.__qualname__, copy.__module__, copy.__doc__ = fun.__qualname__, fun.__module__, fun.__doc__
        copy.__dict__.update(fun.__dict__)
        copy.__annotations__ = dict(fun.__annotations__)
        setattr(copy, _CARRIED, static)
        setattr(copy, _KINDS, kinds)
        setattr(copy, _KEYS, keys)
        copies[key] = copy
    return copy


def describe(value: Any) -> str:
    """A static value as the generated module's header names it, the same in every process:
    'begin', None, np.float64, numpy.median, model.mean_of."""
    value = frontend_value(value)
    if value is None or isinstance(value, str):
        return repr(value)
    if isinstance(value, type):
        return f"np.{value.__name__}" if issubclass(value, np.generic) else value.__name__
    if isinstance(value, types.FunctionType):
        return f"{value.__module__}.{value.__qualname__}"
    return _importable_name(value) or repr(value)


def carried(fn: Any) -> dict:
    """The static values a specialised copy carries ({} for any other function)."""
    return getattr(fn, _CARRIED, None) or {}


def carried_kinds(fn: Any) -> dict:
    """The types of the other arguments a specialised copy carries ({} for any other function)."""
    return getattr(fn, _KINDS, None) or {}


def carried_keys(fn: Any) -> dict:
    """The keys of the dict arguments (the lengths of the tuple and list arguments) a specialised
    copy carries ({} for any other function)."""
    return getattr(fn, _KEYS, None) or {}


def static_parameters(fn: Any, assigned: set[str]) -> tuple[dict, dict]:
    """({parameter: value} that the frontend writes in as constants, {parameter: type} that
    decides isinstance tests), of what fn carries, less the parameters assigned (in a block)."""
    return ({name: frontend_value(value) for name, value in carried(fn).items() if name not in assigned},
            {name: kind for name, kind in carried_kinds(fn).items() if name not in assigned})
