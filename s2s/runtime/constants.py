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

import contextlib
import hashlib

import numpy as np

from ..errors import S2SError

__all__ = ["captured", "generator", "draw"]

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


# NumPy's random generators a transformed function draws from (rs = np.random.RandomState(0) in
# its closure or module, rs.randn(n, d) inside it): the objects themselves, which generated code
# calls so that their state advances as under NumPy, numbered in the order this process meets
# them (deterministic text for one program; the cache's key carries the number).
_GENERATORS: list = []


def is_generator(value) -> bool:
    return isinstance(value, (np.random.RandomState, np.random.Generator))


# While s2s runs the user's function only to learn its output's structure (a probe: vmap's first
# example): the generators' states before it, given back after it, so that the draws the user sees
# are the ones NumPy's own calls would make. id -> (generator, state).
_KEEPING: list = []


def generator_number(value) -> int:
    """The number generated code names a generator by (registering it, as capture does an array)."""
    for k, known in enumerate(_GENERATORS):
        if known is value:
            return k + 1
    _GENERATORS.append(value)
    for kept in _KEEPING:  # (met while a probe runs: it has not drawn yet)
        kept.setdefault(id(value), (value, _state(value)))
    return len(_GENERATORS)


def _state(generator):
    return generator.get_state() if isinstance(generator, np.random.RandomState) else generator.bit_generator.state


@contextlib.contextmanager
def generators_kept():
    """The generators' states are what they were before the block (runtime.debug_silenced)."""
    kept = {id(g): (g, _state(g)) for g in _GENERATORS}
    _KEEPING.append(kept)
    try:
        yield
    finally:
        # (by identity: list.remove compares the states, which hold arrays)
        del _KEEPING[next(k for k, other in enumerate(_KEEPING) if other is kept)]
        for g, state in kept.values():
            if isinstance(g, np.random.RandomState):
                g.set_state(state)
            else:
                g.bit_generator.state = state


def generator(number: int):
    """The generator a generated module draws from, by its number in this process."""
    if not 1 <= number <= len(_GENERATORS):
        raise S2SError(f"the random generator number {number} of a generated module is not known to this process",
                       hint="run the transform (s2s.grad(f), ...) in this process rather than importing its "
                            "generated module")
    return _GENERATORS[number - 1]


def draw(generator, method, *args, **kwargs):
    """generator.method(*args, **kwargs): a draw of NumPy's, a constant of every derivative (its
    arguments carry none: templates/array_rules.py refuses one that does)."""
    return getattr(generator, method)(*args, **kwargs)


def constant_text(value) -> str:
    """What the cache records of a constant a module bakes in: repr for numbers and tuples of
    them; for arrays the digest of their content (repr elides the middle of large arrays).
    Capturing registers the array, so that a module handed back by the cache finds it."""
    if is_capturable(value):
        return f"array:{capture(value)}"
    if is_generator(value):
        return f"{type(value).__name__}#{generator_number(value)}"
    if isinstance(value, dict):  # (a dict of the module, read by constant keys: CONSTS["w"])
        items = sorted((repr(k), constant_text(v)) for k, v in value.items())
        return "dict(" + ", ".join(f"{k}: {v}" for k, v in items) + ")"
    if isinstance(value, (tuple, list)) and any(is_capturable(v) or isinstance(v, (tuple, list, dict)) for v in value):
        inner = ", ".join(constant_text(v) for v in value)
        return f"{type(value).__name__}({inner})"
    owner = getattr(value, "__self__", None)
    if (type(owner).__module__ or "").startswith("scipy.stats."):  # norm.logpdf: its distribution's, and its name
        return f"{constant_text(owner)}.{getattr(value, '__name__', '')}"
    kind = type(value)
    if (kind.__module__ or "").startswith("scipy.stats."):
        # a distribution whose method a function calls (norm, or rv = norm(0.0, 2.0)): by its class and a
        # frozen one's parameters, not by its address, which another process does not share
        dist = getattr(value, "dist", None)
        if dist is not None and isinstance(getattr(value, "args", None), tuple):
            return f"{type(dist).__module__}.{type(dist).__qualname__}{value.args!r}{sorted(value.kwds.items())!r}"
        return f"{kind.__module__}.{kind.__qualname__}"
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
