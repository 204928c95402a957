"""Devices and data placement, as in JAX: block_until_ready, devices, device_put, device_get.

The CPU devices are numbered 0..n-1, n from the environment variable S2S_CPU_DEVICES (default:
the number of cores, os.cpu_count()). They share one memory: arrays are NumPy arrays in host
memory, device_put and device_get are identities over pytrees, and computation is synchronous.
What a CPU device is for is s2s.pmap (doors/pmap.py): each shard of a pmap runs on its own
thread, one per device. The signatures are JAX's, so code written for JAX runs unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .. import backends
from ..tree_util import pytree
from ..errors import S2SError


@dataclass(frozen=True)
class CpuDevice:
    """A CPU device: a thread of s2s.pmap, on the host's shared memory."""

    id: int = 0
    platform: str = "cpu"
    device_kind: str = "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"


def cpu_device_count() -> int:
    """S2S_CPU_DEVICES, or the number of cores: read on every call, so that a program (or a
    test) may set it before its first pmap."""
    text = os.environ.get("S2S_CPU_DEVICES", "").strip()
    if not text:
        return max(os.cpu_count() or 1, 1)
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise S2SError(f"S2S_CPU_DEVICES={text!r} is not a positive number of CPU devices",
                       hint="set it to a whole number such as 2, or unset it to get one device per core")
    return count


def devices(backend: str | None = None, streams: int | None = None) -> list:
    """The devices s2s can compute on: CPU devices 0..n-1, n = S2S_CPU_DEVICES (default: the
    number of cores).

    >>> import os, s2s
    >>> os.environ["S2S_CPU_DEVICES"] = "2"
    >>> s2s.devices()
    [CpuDevice(id=0), CpuDevice(id=1)]
    >>> s2s.devices("cpu")[1].platform
    'cpu'
    >>> del os.environ["S2S_CPU_DEVICES"]

    devices("cuda") lists the GPUs numba-cuda sees (CudaDevice); devices("cuda", streams=k) lists
    k devices per GPU, one per CUDA stream, so that the shards of a pmap on one GPU overlap (the
    copies of one with the kernel of another).
    """
    if backend in ("cuda", "gpu"):
        found = backends.cuda_devices(streams)
        if not found:
            raise S2SError("s2s.devices: numba-cuda sees no GPU",
                           hint="use the CPU devices (s2s.devices()), or run where a GPU is (or "
                                "NUMBA_ENABLE_CUDASIM=1, Numba's simulator)")
        return found
    if backend not in (None, "cpu"):
        raise S2SError(f"s2s.devices: no {backend!r} devices", hint="backend is 'cpu' (the default) or 'cuda'")
    if streams is not None:
        raise S2SError("s2s.devices: streams are a number of CUDA streams per GPU", hint="s2s.devices('cuda', streams=k)")
    return [CpuDevice(k) for k in range(cpu_device_count())]


def _check_device(device: Any) -> None:
    if device is not None and not (isinstance(device, CpuDevice) and 0 <= device.id < cpu_device_count()):
        raise S2SError(f"s2s.device_put: unknown device {device!r}", hint="use one of s2s.devices()")


def _is_cuda(device: Any) -> bool:
    return device == "cuda" or getattr(device, "device_kind", None) == "cuda"


def device_put(x: Any, device: Any = None) -> Any:
    """Put a pytree of arrays on a device, as jax.device_put: on the CPU, x itself; on a GPU
    (device "cuda", or a device of s2s.backends.cuda.devices()), numba-cuda device arrays,
    which s2s.jit(..., backend="cuda") takes without a copy and answers with device arrays.

    >>> import numpy as np, s2s
    >>> x = np.ones(2)
    >>> s2s.device_put(x) is x
    True
    """
    if _is_cuda(device):
        return backends.cuda_device_put(x, device)
    _check_device(device)
    return x


def device_get(x: Any) -> Any:
    """Fetch a pytree of arrays to host memory (NumPy), as jax.device_get: on the CPU, x itself;
    numba-cuda device arrays are copied to NumPy arrays."""
    if any(hasattr(leaf, "copy_to_host") for leaf in pytree.leaves(x)):
        return backends.cuda_device_get(x)
    return x


def block_until_ready(x: Any) -> Any:
    """Wait until the computations producing x are done, and return x (a pytree too), as
    jax.block_until_ready. On the CPU a result is ready when the call that made it returns; for
    numba-cuda device arrays, this waits for the GPU."""
    if any(hasattr(leaf, "copy_to_host") for leaf in pytree.leaves(x)):
        backends.cuda_synchronize(x)
    for leaf in pytree.leaves(x):
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None and not isinstance(leaf, type):  # (an array of another library that runs asynchronously)
            wait()
    return x
