"""compile_ptx: a specialisation's kernel compiled to PTX without a GPU (the test suite uses it:
Numba's simulator runs code that the real compiler rejects)."""

from __future__ import annotations

import contextlib
import os
import types

import numpy as np

from ..errors import S2SError


@contextlib.contextmanager
def _no_driver(cc: tuple[int, int]):
    """numba-cuda asks the driver for the compute capability when a kernel that calls device
    functions is compiled, even when compile_ptx is given cc: without a GPU (or a driver) it is
    answered here, and only for the duration of the compilation."""
    from numba.cuda import dispatcher

    original = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = original


def compile_ptx(jitted, *args, cc: tuple[int, int] = (9, 0)) -> str:
    """The PTX of the kernel that s2s.jit(s2s.vmap(f), backend="cuda") runs for these arguments,
    compiled for compute capability cc with no GPU and no driver (numba-cuda's NVVM)."""
    import numba
    from numba import cuda

    if getattr(cuda, "is_simulator", lambda: False)() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise S2SError("compile_ptx needs numba-cuda's compiler, not its simulator",
                       hint="run it in a process without NUMBA_ENABLE_CUDASIM=1")
    trees = jitted._trees(args)
    spec = jitted._specialise(args, trees, "cuda")
    launcher = spec["launcher"]
    host = [np.ascontiguousarray(a) if np.ndim(a) else a for a in args]
    types_ = [numba.typeof(a) for a in host] + [numba.typeof(np.empty((1, *shape), np.dtype(d)))
                                                for d, shape in zip(launcher.dtypes, launcher.shapes)]
    types_ += [numba.types.Array(numba.from_dtype(np.dtype(t.dtype)), 2, "C") for t in launcher.tapes]
    if launcher.tapes or launcher.locals:
        types_.append(numba.int64[::1])
    try:
        with _no_driver(cc):
            ptx, _ = cuda.compile_ptx(launcher.function.py_func, tuple(types_), cc=cc)
    except numba.core.errors.NumbaError as exc:
        raise launcher.compile_error(exc) from exc
    return ptx
