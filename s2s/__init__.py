"""s2s: source-to-source automatic differentiation of NumPy code, compiled with Numba."""

from . import pytree, random, testing
from .doors.api import grad, hessian, jacfwd, jacrev, jit, jvp, source, value_and_grad, vjp
from .doors.hook import install_import_hook
from .doors.vmap import vmap
from .errors import S2SError
from .version import __version__

__all__ = ["S2SError", "install_import_hook", "pytree", "random", "testing", "grad", "hessian", "jacfwd", "jacrev", "jvp", "jit", "source", "value_and_grad", "vjp", "vmap"]
