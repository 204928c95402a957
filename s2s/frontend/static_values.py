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
# and {parameter: (its argument's class, {attribute: static value}, layout)} of an argument that an
# object with static attributes was split for (split_objects)
_OBJECTS = "__s2s_objects__"


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


# ---- objects with static attributes (flax's TrainState: apply_fn and tx, beside arrays) ----------
#
# A class takes part by three methods: `obj.__s2s_split__()` gives (fields, static, layout): a
# namedtuple of the values that carry numbers, which the compiled code takes in the object's place,
# a dict of the attributes that choose code (functions, an optimizer), and a hashable layout of the
# fields (the trees' keys) on which the code may depend; `cls.__s2s_join__(fields, static)` makes the
# object again from what the code returns; `cls.__s2s_method__(name, static, layout)` gives a plain
# function of (fields, ...) that s2s reads for a call of obj.name(...) (None: not one s2s can read);
# `cls.__s2s_static_text__(static, layout)` says what the code depends on, for the cache.


def splits(value: Any) -> bool:
    return hasattr(type(value), "__s2s_split__") and not isinstance(value, type)


def split_objects(bound: tuple) -> tuple[tuple, dict]:
    """(the bound arguments with each object that splits replaced by its fields, {position: (its
    class, its static attributes, its fields' layout)})."""
    if not any(splits(value) for value in bound):
        return bound, {}
    objects, out = {}, []
    for k, value in enumerate(bound):
        if splits(value):
            fields, static, layout = value.__s2s_split__()
            objects[k] = (type(value), static, layout)
            out.append(fields)
        else:
            out.append(value)
    return tuple(out), objects


def join_objects(result: Any, objects: dict) -> Any:
    """result with the fields of each class split_objects split made that class's object again,
    with the static attributes of the argument of that class (the code cannot change them)."""
    by_fields = {}
    for cls, static, _ in objects.values():
        fields_class = cls.__s2s_fields_class__()
        known = by_fields.get(fields_class)
        if known is not None and (known[0] is not cls or known[1] != static):
            raise S2SError(f"two {cls.__name__} arguments of one call hold different {', '.join(static)}, and the "
                           f"{cls.__name__} the code returns could take either's",
                           hint="pass one of them, or call the function once for each")
        by_fields[fields_class] = (cls, static)

    def join(value):
        found = by_fields.get(type(value))
        if found is not None:
            return found[0].__s2s_join__(value, found[1])
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(join(v) for v in value)
        if isinstance(value, list):
            return [join(v) for v in value]
        if isinstance(value, dict):
            return {k: join(v) for k, v in value.items()}
        return value

    return join(result)


def specialised(fun: Any, bound: tuple, marked: tuple[int, ...] = (), objects: dict | None = None) -> Any:
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
    objects = {names[k]: entry for k, entry in (objects or {}).items() if names[k] is not None}
    # s2s.lax.scan over a dict, tuple or list argument slices each of its entries: the code is
    # that of the call's keys (or number of items).
    keys = {name: tuple(value) if isinstance(value, dict) else len(value) for name, value in zip(names, bound)
            if name is not None and isinstance(value, (dict, tuple, list))} if scans else {}
    if not tests_types and not keys and not marked and not objects and not any(is_static(value) for value in bound):
        return fun
    static = {name: value for k, (name, value) in enumerate(zip(names, bound))
              if name is not None and (k in marked or is_static(value))}
    named = [(name, value) for name, value in zip(names, bound) if name is not None]
    for k in marked:
        _check_hashable(fun, names[k], bound[k])
    # isinstance(x, np.ndarray) of an argument is decided by its type, as a JAX trace decides it:
    # where the function tests types, the types of the others are carried too.
    kinds = {name: type(value) for name, value in named if name not in static} if tests_types else {}
    return carrying(fun, static, kinds, keys, objects)


def _check_hashable(fun: Any, name: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise S2SError(f"the argument {name} of {fun.__name__} is static (s2s.jit's static_argnums or "
                       f"static_argnames), and a static value must be hashable, which a {type(value).__name__} "
                       "is not", hint="pass a tuple for a list, or leave the argument out of static_argnums "
                       "(an array is passed as it is)") from None


def carrying(fun: Any, static: dict, kinds: dict | None = None, keys: dict | None = None,
             objects: dict | None = None) -> Any:
    """fun, or its copy that carries these static values ({parameter: value}), the types of
    other arguments its isinstance tests read ({parameter: type}), the keys of the dict
    arguments it may scan over ({parameter: keys}, or the length of a tuple or list argument)
    and what the objects split for its arguments hold ({parameter: (class, static, layout)})."""
    kinds, keys, objects = kinds or {}, keys or {}, objects or {}
    if not (static or kinds or keys or objects) or not isinstance(fun, types.FunctionType) \
            or getattr(fun, _CARRIED, None) is not None:
        return fun
    key = tuple((name, type(value), value) for name, value in static.items()) + tuple(kinds.items()) \
        + tuple(("keys", name, k) for name, k in keys.items()) \
        + tuple(("object", name, cls, tuple(sorted(held.items(), key=lambda item: item[0])), layout)
                for name, (cls, held, layout) in objects.items())
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
        setattr(copy, _OBJECTS, objects)
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


def carried_objects(fn: Any) -> dict:
    """{parameter: (class, static attributes, layout)} of the objects split for a specialised
    copy's arguments ({} for any other function)."""
    return getattr(fn, _OBJECTS, None) or {}


def static_parameters(fn: Any, assigned: set[str]) -> tuple[dict, dict]:
    """({parameter: value} that the frontend writes in as constants, {parameter: type} that
    decides isinstance tests), of what fn carries, less the parameters assigned (in a block)."""
    return ({name: frontend_value(value) for name, value in carried(fn).items() if name not in assigned},
            {name: kind for name, kind in carried_kinds(fn).items() if name not in assigned})
