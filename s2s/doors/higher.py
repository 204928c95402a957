"""Third derivatives of scalar functions, grad(grad(grad(f))) as the JAX tutorial takes them:
forward mode over the generated forward-over-reverse code of grad(grad(f)).

grad(grad(f)) is `f_vjp_jvp_wrt_x(x, out_bar, x_dot)` (SecondOrder: forward mode over f's
reverse mode); its forward mode with respect to one argument, seeded with 1, carries the
derivative of the second derivative.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import backends
from ..errors import S2SError
from .values import in_dtype, private_copies
from . import api


class ThirdOrder:
    """grad(grad(grad(f))) of a function of float scalars, with respect to argument `argnum`."""

    def __init__(self, second, argnum: int, backend: str = "python"):  # second: jacobians.SecondOrder
        if not second.scalar or not isinstance(second.outer_argnums, int):
            raise S2SError("third derivatives are taken as grad(grad(grad(f))) of scalar functions",
                           hint="use s2s.grad three times, each with one int argnums")
        self.second = second
        self.argnum = argnum
        self.backend = backend
        self.fun = second.fun
        functools.update_wrapper(self, second.fun, updated=())
        self._module = None
        self._entry = None

    def with_backend(self, backend: str) -> "ThirdOrder":
        return ThirdOrder(self.second.with_backend(backend), self.argnum, backend)

    def _second_order_function(self):
        """f_vjp_jvp_wrt_<b>(params..., out_bar, tangent): the forward-over-reverse code."""
        second = self.second.with_backend("python")
        param = list(inspect.signature(self.fun).parameters)[second.outer_argnums]
        return getattr(second.module(), f"{second._vjp_function().__name__}_jvp_wrt_{param}")

    @property
    def source(self) -> str:
        return api._source(self._second_order_function(), "jvp", {"active": [self.argnum]})

    def _call(self):
        if self._entry is None:
            function = self._second_order_function()
            source, names = api._generated(function, "jvp", {"active": [self.argnum]})
            self._module = backends.load(source, function.__name__ + "_jvp", self.backend)
            self._entry = backends.entry(self._module, names["jvp"], self.fun)
        return self._entry

    def __call__(self, *args, **kwargs):
        args = private_copies(self.second._bind(args, kwargs, (self.argnum,)))
        for k in {self.second.inner_argnum, self.second.outer_argnums, self.argnum}:
            if not isinstance(args[k], (float, np.floating)):
                raise S2SError(f"grad(grad(grad(f))) takes float scalars; argument {k} is {type(args[k]).__name__}",
                               hint="take third derivatives of functions of numbers")
        call = [float(a) if isinstance(a, np.floating) else a for a in args]
        # seeds: the cotangent of f's output, the tangent of the second grad, the tangent here
        out = self._call()(*call, 1.0, 1.0, 1.0)
        third = out[1][1][1][0]  # the tangent of the tangent of the adjoint of argument inner_argnum
        return in_dtype(float(third), args[self.argnum])
