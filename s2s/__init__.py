"""s2s: source-to-source automatic differentiation of NumPy code, compiled with Numba."""

from . import debug, lax, optimizers, profiler, random, testing, tree_util
from .tree_util import tree
from .doors.devices import block_until_ready, device_get, device_put, devices
from .doors.api import grad, value_and_grad, vjp
from .doors.core import jit, source
from .doors.forward import jvp
from .doors.jacobians import hessian, jacfwd, jacrev
from .doors import nested_derivatives as _nested_derivatives  # (s2s.grad(f)(x) inside a transformed function)
from .doors.hook import install_import_hook
from .doors.vmap import vmap
from .doors.pmap import pmap
from .doors.dask import dask_devices
from .rules.custom import checkpoint, custom_jvp, custom_vjp, remat
from .errors import S2SError
from .options import config
from .version import __version__

__all__ = ["S2SError", "config", "install_import_hook", "debug", "lax", "optimizers", "profiler", "random",
           "testing", "tree", "tree_util", "block_until_ready", "dask_devices", "device_get", "device_put",
           "devices", "grad", "hessian", "jacfwd", "jacrev", "jvp", "jit", "pmap", "source",
           "value_and_grad", "vjp", "vmap", "custom_jvp", "custom_vjp", "checkpoint", "remat"]
