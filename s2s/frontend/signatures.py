"""The signature s2s binds a function's calls by (the doors and the call sites alike), without libcst."""

from __future__ import annotations

import inspect
import types


def own_signature(fn) -> inspect.Signature:
    """The signature of fn's own code, which s2s reads and generated code takes: a functools.wraps
    wrapper's (*args, **kwargs), not the wrapped function's that inspect reports by default."""
    return inspect.signature(fn, follow_wrapped=not isinstance(fn, types.FunctionType))
