"""Helpers that generated code calls, as `runtime.<name>`.

Each helper is plain NumPy here, which the python backend runs. runtime/overloads/ gives
every helper a `numba.extending.overload`, so that the same generated source compiles
under `numba.njit` for scalars and arrays of any ndim: the backends register them
(overloads.register_numba, register_cuda) before they compile, and nothing here imports Numba.
"""

from __future__ import annotations

# The helpers live in one module per kind; generated code and the rules see them all here, as
# runtime.<name> (the function objects are the same, so rules and Numba overloads keyed by them
# agree).
from .arrays import *  # noqa: F401,F403
from .batching import *  # noqa: F401,F403
from .constants import *  # noqa: F401,F403
from .debug import *  # noqa: F401,F403
from .functions import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .norms import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .scipy_linalg import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .tapes import *  # noqa: F401,F403
from .values import *  # noqa: F401,F403

# Generated code calls s2s.random as runtime.random.normal(...): the names it imports are
# math, np and runtime alone.
from .. import random  # noqa: E402

# Kernel code (codegen/cuda.py) calls runtime.kernels.<name>: local arrays, scalar draws.
from . import kernels  # noqa: E402


def is_helper(value) -> bool:
    """Is value one of the helpers here (defined in a module of this package)?"""
    return (getattr(value, "__module__", None) or "").startswith(__name__ + ".") and callable(value)


def __getattr__(name):
    # `runtime.prange` is numba.prange, imported on first use so that generated code that
    # does not batch never imports Numba. Under numba.njit(parallel=True) a loop over it
    # runs in parallel; in Python it is range. `runtime.objmode` is numba.objmode: compiled
    # code runs the block as Python (a try whose handler the values pick, runtime.try_outcome),
    # and in Python it is a block that does nothing more.
    if name in ("prange", "objmode"):
        import numba

        return getattr(numba, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
