"""Arrays a transformed function reads from its closure or its module, captured as constants.

JAX captures a closed-over array as a constant when it traces; s2s captures it when it
transforms. A generated module names each captured array by the digest of its content
(`A = runtime.captured("9f2c...", "float64", (3, 4))`), so that the text stays readable and
a different array gives a different module (and a different cache entry). The arrays
themselves are read-only copies kept here, registered by the frontend when it lowers the
function and by the cache when it hands an entry back; Numba freezes them into the compiled
code as it does any global array.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import S2SError

__all__ = ["captured"]

# digest -> a read-only copy of the array with that content
_ARRAYS: dict[str, np.ndarray] = {}


def is_capturable(value) -> bool:
    """An array s2s can bake in: numbers or booleans (not objects, strings or records)."""
    return isinstance(value, np.ndarray) and value.dtype.kind in "biufc"


def digest(array: np.ndarray) -> str:
    """A hash of what the array is: dtype, shape and the bytes in C order."""
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:32]


def capture(array: np.ndarray) -> str:
    """Keep a read-only copy of the array under the digest of its content; returns the digest."""
    key = digest(array)
    if key not in _ARRAYS:
        copy = np.array(array, copy=True, order="C")
        copy.flags.writeable = False
        _ARRAYS[key] = copy
    return key


def frozen(array: np.ndarray) -> np.ndarray:
    """The captured copy of array (what generated code reads)."""
    return _ARRAYS[capture(array)]


def constant_text(value) -> str:
    """What the cache records of a constant a module bakes in: repr for numbers and tuples of
    them; for arrays the digest of their content (repr elides the middle of large arrays).
    Capturing registers the array, so that a module handed back by the cache finds it."""
    if is_capturable(value):
        return f"array:{capture(value)}"
    if isinstance(value, (tuple, list)) and any(is_capturable(v) or isinstance(v, (tuple, list)) for v in value):
        inner = ", ".join(constant_text(v) for v in value)
        return f"{type(value).__name__}({inner})"
    return repr(value)


def captured(key: str, dtype: str, shape: tuple) -> np.ndarray:
    """The array a generated module captured, by the digest of its content."""
    array = _ARRAYS.get(key)
    if array is None:
        raise S2SError(f"the captured {dtype} array of shape {shape} ({key}) is not known to this process: "
                       "s2s records an array when it transforms a function that reads it",
                       hint="run the transform (s2s.grad(f), ...) in this process rather than importing its "
                            "generated module, or pass the array as an argument")
    return array
