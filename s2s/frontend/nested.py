"""Transforms that user code may call inside a transformed function (s2s.jvp).

Each public function is registered with what gives the generated function that its call
becomes. The doors register them, so that the frontend, below the doors, never imports them;
this module imports nothing, so that registering does not load libcst.
"""

from __future__ import annotations

from typing import Callable

NESTED_TRANSFORMS: dict[Callable, Callable[[Callable], Callable]] = {}


def register_nested_transform(public: Callable, entry_of: Callable[[Callable], Callable]) -> None:
    NESTED_TRANSFORMS[public] = entry_of


# s2s.grad(f), s2s.hessian(f), ... called inside a transformed function: public -> a function
# (f, argnums) -> the Python function that the call s2s.<public>(f, argnums)(...) becomes
# (doors/nested_derivatives.py writes them in forward mode).
NESTED_CALLS: dict[Callable, Callable] = {}


def register_nested_call(public: Callable, entry_of: Callable) -> None:
    NESTED_CALLS[public] = entry_of


# g = s2s.grad(f) (or jacfwd, jacrev, hessian) made outside and g(x) called inside a transformed
# function: each takes a transform's result and gives the function a call of it becomes, or None.
NESTED_OBJECTS: list[Callable] = []


def register_nested_object(entry_of: Callable) -> None:
    NESTED_OBJECTS.append(entry_of)
