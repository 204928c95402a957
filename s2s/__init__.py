"""s2s: source-to-source automatic differentiation of NumPy code, compiled with Numba."""

__version__ = "0.1.0"

from .errors import S2SError  # noqa: E402
from .api import grad, hessian, jacfwd, jacrev, jit, jvp, source, value_and_grad, vjp  # noqa: E402
from .batched import vmap  # noqa: E402
from . import pytree, testing  # noqa: E402
from .hook import install_import_hook  # noqa: E402

__all__ = ["S2SError", "install_import_hook", "pytree", "testing", "grad", "hessian", "jacfwd", "jacrev", "jvp", "jit", "source", "value_and_grad", "vjp", "vmap"]
