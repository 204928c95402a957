"""Devices and data placement, as in JAX: block_until_ready, devices, device_put, device_get.

s2s runs on the CPU for now, where computation is synchronous and arrays are NumPy arrays
in host memory, so these are identities over pytrees; their signatures are JAX's, so code
written for JAX runs unchanged. When the CUDA backend exists, device_put and device_get will
move data to and from GPU memory, and block_until_ready will wait for its kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import backends, pytree
from ..errors import S2SError


@dataclass(frozen=True)
class CpuDevice:
    """The host CPU, the one device s2s computes on so far."""

    id: int = 0
    platform: str = "cpu"
    device_kind: str = "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"


_CPU = CpuDevice(0)


def devices(backend: str | None = None) -> list[CpuDevice]:
    """The devices s2s can compute on: one CPU device.

    >>> import s2s
    >>> s2s.devices()
    [CpuDevice(id=0)]
    """
    if backend not in (None, "cpu"):
        raise S2SError(f"s2s.devices: no {backend!r} devices", hint="s2s computes on the CPU for now: backend='cpu'")
    return [_CPU]


def _check_device(device: Any) -> None:
    if device is not None and device != _CPU:
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
