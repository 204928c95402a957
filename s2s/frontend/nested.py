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
