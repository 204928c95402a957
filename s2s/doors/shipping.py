"""Transforms that travel: pickling an s2s transform as the call that made it.

A transform object (s2s.grad(f), s2s.jit(s2s.vmap(g)), ...) holds what it generated and
compiled: Python modules, Numba dispatchers, locks. None of that travels to another process,
and none of it needs to: what made the object is a call of a public factory on arguments that
do travel (the user's function, numbers, in_axes). So each factory below records that call on
the object it returns, and pickling the object pickles the call; unpickling makes it again,
and the new process generates (or finds in its own s2s cache) and compiles its modules.

This is what s2s.pmap over Dask workers ships (doors/dask.py): the user's function goes by
cloudpickle, as Dask sends every task, and the transforms around it by their recipe.
"""

from __future__ import annotations

import copyreg
import functools
import importlib
from typing import Any, Callable

from ..errors import S2SError

_RECIPE = "_s2s_recipe"
_registered: set[type] = set()


def recorded(factory: Callable) -> Callable:
    """Decorate a public factory (grad, vmap, jit, ...): the object it returns pickles as this
    call of it, with the same arguments."""

    @functools.wraps(factory)
    def make(*args, **kwargs):
        made = factory(*args, **kwargs)
        if type(made).__module__.startswith("s2s.") and hasattr(made, "__dict__"):
            made.__dict__[_RECIPE] = (factory.__module__, factory.__qualname__, args, kwargs)
            kind = type(made)
            if kind not in _registered:  # (copyreg: pickle and cloudpickle ask it before __reduce_ex__)
                copyreg.pickle(kind, _reduce)
                _registered.add(kind)
        return made

    return make


def _reduce(made: Any) -> tuple:
    recipe = made.__dict__.get(_RECIPE)
    if recipe is None:
        raise S2SError(f"this {type(made).__name__} was not made by one of s2s's transforms, so it cannot be "
                       "sent to another process",
                       hint="send the transform you made (s2s.grad(f), s2s.jit(...)), or the function itself")
    return _remake, recipe


def _remake(module: str, qualname: str, args: tuple, kwargs: dict) -> Any:
    """The call a recipe records, made again (in the process that unpickles it)."""
    factory = getattr(importlib.import_module(module), qualname)
    return factory(*args, **kwargs)

