"""Debugging inside transformed functions, as jax.debug.

`s2s.debug.print(fmt, *args, **kwargs)` prints `fmt.format(*args, **kwargs)` on every call,
in plain Python, on the python backend and under s2s.jit (see runtime/debug.py).
"""

from .runtime.debug import debug_print as print  # noqa: A001 - jax.debug.print's name

__all__ = ["print"]
