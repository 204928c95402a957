"""Shared by the overloads: compiling generated implementations, reading Numba types."""

from __future__ import annotations

import hashlib

import numpy as np
from numba import types

from ... import runtime as rt
from ..arrays import _DOT_SUMS, _dot_zero_refusal


def _compile(source: str, name: str, **env):
    # Numba names a compiled function by its module, qualified name and a per-process
    # counter. Cached generated modules hold these implementations and are loaded into one
    # process from runs that counted differently: every `impl` needs a name of its own,
    # or a cached caller may link to another `impl` with the same name and argument types.
    digest = hashlib.sha256((source + repr(sorted((k, repr(v)) for k, v in env.items()))).encode()).hexdigest()[:16]
    unique = f"{name}_{digest}"
    namespace = {"np": np, "rt": rt, "__name__": __name__, **env}
    exec(source.replace(f"def {name}(", f"def {unique}(", 1), namespace)  # noqa: S102 - generated here
    return namespace[unique]


def _casts(value, dtype, casting: str) -> bool:
    """Whether a value of Numba type `value` (a number, or an array of its dtype) casts to the
    Numba dtype `dtype` (runtime.fits_dtype's question, asked of types when Numba compiles)."""
    item = value.dtype if isinstance(value, types.Array) else value
    try:
        return bool(np.can_cast(np.dtype(str(item)), np.dtype(str(dtype)), casting))
    except TypeError:
        return True  # (not a NumPy number: the store after it types it)


def _is_none(t) -> bool:
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and (
        not isinstance(t, types.Omitted) or t.value is None)


def _refusal(where) -> str | None:
    """How a refusal of compiled code begins: 's2s: ' and the user's statement, the literal
    file:line that generated code passes as `where` (codegen/numba_routes.py, the frontend),
    which compiled code keeps no traceback of (backends/failures.py reads it back). None where
    `where` is a string not yet typed as a literal: the overload returns None, and Numba types
    the call again with it as one."""
    if _is_none(where):
        return "s2s: "
    if isinstance(where, types.StringLiteral):
        return f"s2s: {where.literal_value}: "
    return None


def _is_false(t) -> bool:
    return t is None or (isinstance(t, types.Omitted) and not t.value) or (
        isinstance(t, types.BooleanLiteral) and not t.literal_value)


def _scalar(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


def _nd(t):
    return t.ndim if isinstance(t, types.Array) else 0


def _weighted_numbers(t, w):
    """runtime.weighted of two numbers, for the cpu and the kernel overloads alike."""
    product = t * w
    return product if w != 0 else w - w  # (w is 0 here: a zero of the weight's type)


def _dot_zero(x, y):
    """runtime.dot_zero of two Numba arrays (the cpu and the kernel overloads alike): a function
    returning 0 of np.dot's dtype, or a TypingError where the sum of products is not np.dot."""
    from numba.core.errors import TypingError
    from numba.np import numpy_support

    if not (isinstance(x, types.Array) and isinstance(y, types.Array)):
        raise TypingError("s2s: runtime.dot_zero takes two arrays")
    dtype = np.result_type(numpy_support.as_dtype(x.dtype), numpy_support.as_dtype(y.dtype))
    if dtype.name not in _DOT_SUMS:
        raise TypingError(_dot_zero_refusal(dtype.name))
    zero = numpy_support.from_dtype(dtype)
    return lambda x, y: zero(0)
