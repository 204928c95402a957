"""Transforms that user code may call inside a transformed function (s2s.jvp).

Each public function is registered with what gives the generated function that its call
becomes. The doors register them, so that the frontend, below the doors, never imports them;
this module imports nothing, so that registering does not load libcst.
"""

from __future__ import annotations

import contextlib
import contextvars
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


# Whether the function being lowered is only compiled, not differentiated (s2s.jit of a plain
# function): there s2s.grad(f)(x) may call f's generated reverse mode, one sweep, rather than
# forward mode, one jvp per number of x, which is what a transform that differentiates the call
# again needs (reverse mode of generated reverse-mode code is refused).
_UNDIFFERENTIATED = contextvars.ContextVar("s2s_lowering_undifferentiated", default=False)


@contextlib.contextmanager
def lowering_undifferentiated(flag: bool):
    """While the functions of one transform are lowered: flag, is that transform s2s.jit's primal?"""
    token = _UNDIFFERENTIATED.set(flag)
    try:
        yield
    finally:
        _UNDIFFERENTIATED.reset(token)


def undifferentiated() -> bool:
    return _UNDIFFERENTIATED.get()


# g = s2s.grad(f) (or jacfwd, jacrev, hessian) made outside and g(x) called inside a transformed
# function: each takes a transform's result and gives the function a call of it becomes, or None.
NESTED_OBJECTS: list[Callable] = []


def register_nested_object(entry_of: Callable) -> None:
    NESTED_OBJECTS.append(entry_of)


# s2s.grad(inner)(y) of a lambda or a def nested in the transformed function: a function that
# takes (fn, name, source, origin) -- the transformed function, the name to give, the source of a
# module-level def of the nested function with what it reads of fn's variables as parameters
# after its own, and where it stands ("file.py:12") -- and gives that function, made with fn's
# globals and closure cells (doors/nested_derivatives.py writes it to a file of its own).
LOCAL_FUNCTIONS: list = []


def register_local_function(make: Callable) -> None:
    LOCAL_FUNCTIONS.append(make)
