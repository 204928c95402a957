"""Run generated source: as plain NumPy ("python") or compiled by numba.njit ("cpu").

loading.py stores and imports generated modules (and compiles them for "cpu"); entry() makes a
function of one ready to call, with Numba's refusals told at the user's statement (failures.py);
the cuda backend (cuda.py) is loaded on first use.
"""

from __future__ import annotations

import functools
import importlib
import threading
import types

from . import failures
from .loading import BACKENDS, forget_numba_caches, import_generated, load, write_module  # noqa: F401  (the doors' names)


def cuda_vmap(*args):
    """The entries of a vmap specialisation on the cuda backend (backends/cuda.py: specialise),
    loaded on first use: numba-cuda is an extra, and importing it takes a second."""
    from . import cuda

    return cuda.specialise(*args)


def entry(module: types.ModuleType, name: str, fun=None):
    """The generated function `name` of a loaded module, ready to call: under Numba, a
    compilation error is an S2SError naming the user's statement (failures.py). fun: the
    user's function, whose file names the statements of that file in full."""
    function = getattr(module, name)
    try:
        import inspect

        files = (inspect.getsourcefile(fun),) if fun is not None else ()
    except TypeError:
        files = ()
    if not hasattr(function, "py_func"):  # plain Python (the python backend)
        return failures.located(function, files)
    checked = failures.checked(function, files, fun)
    if function.targetoptions.get("parallel") and not _parallel_threadsafe():
        return _one_at_a_time(checked)
    return checked


_PARALLEL = threading.Lock()


def _one_at_a_time(call):
    """A parallel driver that threads (the shards of s2s.pmap) take in turn: Numba's workqueue
    threading layer aborts the whole process when two threads launch parallel code at once."""

    @functools.wraps(call)
    def serialised(*args):
        with _PARALLEL:
            return call(*args)

    return serialised


@functools.lru_cache(maxsize=None)
def _parallel_threadsafe() -> bool:
    """Whether the threading layer Numba will use takes parallel launches from several threads:
    tbb and omp do, workqueue does not. NUMBA_THREADING_LAYER names a layer or a policy; the
    default picks tbb, then omp, then workqueue, by what is installed."""
    from numba.core import config

    def available(pool: str) -> bool:
        try:
            importlib.import_module(f"numba.np.ufunc.{pool}")
        except ImportError:
            return False
        return True

    layer = str(config.THREADING_LAYER).lower()
    if layer in ("tbb", "omp", "threadsafe", "safe"):
        return True  # (Numba itself refuses the launch where that layer is missing)
    if layer == "workqueue":
        return False
    if layer == "forksafe":
        return available("tbbpool")
    return available("tbbpool") or available("omppool")


def cuda_device_put(tree, device):
    """A pytree's arrays as numba-cuda device arrays on device ("cuda": the first GPU), for
    s2s.device_put (backends/cuda.py, loaded on first use)."""
    from . import cuda

    return cuda.to_device(tree, cuda.CudaDevice(0) if device == "cuda" else device)


def cuda_device_get(tree):
    """A pytree's numba-cuda device arrays copied to NumPy arrays, for s2s.device_get."""
    from . import cuda

    return cuda.to_host(tree)


def cuda_synchronize(tree) -> None:
    """Wait for the GPU work that produces a pytree's device arrays, for s2s.block_until_ready."""
    from . import cuda

    cuda.synchronize(tree)


def cuda_devices(streams: int | None = None) -> list:
    """The GPUs as devices (one per stream with streams=k), for s2s.devices("cuda")."""
    from . import cuda

    return cuda.devices(streams)


def cuda_on_device(device):
    """A context in which this thread's kernels run on device's GPU and stream (s2s.pmap)."""
    from . import cuda

    return cuda.on_device(device)


def cuda_pinned(tree, device, reuse: bool = True):
    """A context with a pytree's arrays in page-locked host memory (a pmap shard's arguments on a
    GPU); with reuse, buffers kept from call to call (see cuda.pinned)."""
    from . import cuda

    return cuda.pinned(tree, device, reuse)
