"""numba.extending.overload implementations of every helper in s2s/runtime.

Numba sees argument types at compile time, so each overload picks the code for scalars,
arrays of a given ndim, tuples or None. Where the code depends on ndim (unbroadcast,
reductions over an axis), it is written out for that ndim and compiled. Importing a module
here registers its overloads; the backends call register_numba (the cpu backend, before it
compiles generated code) and register_cuda (the cuda backend, before it loads a kernel module),
so that `import s2s` and the python backend never load Numba.
"""


def register_numba() -> None:
    """Give every helper its numba.extending.overload, once."""
    from . import (  # noqa: F401  (importing registers)
        arrays, batching, debug, functions, linalg, norms, numba_errors, random, reductions, scipy_linalg, shapes, special,
        statistics, tapes, values)


def register_cuda() -> None:
    """The numba-cuda overloads of the helpers that kernel code calls (cuda.py), once, after the
    cpu ones: numba-cuda also types a call by those (a tuple's runtime.zeros_like, for one)."""
    register_numba()
    from . import cuda  # noqa: F401  (importing registers)
