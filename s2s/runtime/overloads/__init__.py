"""numba.extending.overload implementations of every helper in s2s/runtime.

Numba sees argument types at compile time, so each overload picks the code for scalars,
arrays of a given ndim, tuples or None. Where the code depends on ndim (unbroadcast,
reductions over an axis), it is written out for that ndim and compiled. Importing this
package registers them all (runtime.register_numba_overloads).
"""

from . import arrays, batching, debug, functions, linalg, norms, random, reductions, shapes, statistics, tapes, values  # noqa: F401  (importing registers)
