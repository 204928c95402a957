"""Third derivatives: forward mode over the generated forward-over-reverse code of a second
derivative (jacobians.SecondOrder: hessian(f), jacfwd(jacrev(f)), grad(grad(f)), ...).

A second derivative is `f_vjp_jvp_wrt_<b>(params..., out_bar, b_dot)` (forward mode over f's
reverse mode, with respect to argument b); its forward mode with respect to argument k,
`..._jvp_wrt_<k>(params..., out_bar, b_dot, k_dot)`, carries in the tangent of the tangent of
the adjoint of the inner argument a the number

    sum over o, j, l of out_bar[o] b_dot[j] k_dot[l] d3 f[o] / d a d b[j] d k[l]

for every element of a. Seeding out_bar, b_dot and k_dot with basis vectors gives the third
derivative tensor, laid out as JAX lays out a Jacobian of a Jacobian of a Jacobian:
f(x).shape + a.shape + b.shape + k.shape. grad(grad(grad(f))), jacfwd(hessian(f)),
jacrev(jacfwd(jacrev(f))), hessian(grad(f)) and grad(hessian(f)) of a number all come here.

Reverse mode over the generated code is not taken: it holds the tapes of f's reverse sweep,
which the reverse transform refuses to record again ("reverse mode of generated reverse-mode
code"). Forward mode gives the same numbers, one generated-code call per basis triple, which
is the cost of a third derivative tensor anyway.
"""

from __future__ import annotations

import functools
import inspect
import itertools

import numpy as np

from .. import backends, runtime
from ..tree_util import pytree
from ..errors import S2SError, user_facing
from .core import _generated, _plain_value, _source
from .hessian import TreeHessian
from .values import in_dtype, private_copies


def _basis_vectors(shape: tuple):
    """1.0 for a number; otherwise the unit arrays of shape, in C order."""
    if not shape:
        yield 1.0
        return
    n = int(np.prod(shape))
    for e in range(n):
        unit = np.zeros(n)
        unit[e] = 1.0
        yield unit.reshape(shape)


class ThirdOrder:
    """The derivative, with respect to argument `argnum`, of a second derivative `second`
    (a jacobians.SecondOrder): a Jacobian (jacfwd, jacrev) or, with scalar=True, a gradient
    of a number (grad), as JAX gives it."""

    def __init__(self, second, argnum, scalar: bool = True, backend: str | None = None):
        name = getattr(second.fun, "__name__", "the function")
        if second.has_aux:
            raise S2SError(f"third derivatives of {name} with has_aux are not supported",
                           hint="leave has_aux out and compute aux with a call of the function")
        if not isinstance(second.outer_argnums, int) or not isinstance(argnum, int):
            raise S2SError(f"third derivatives of {name} take one int argnums in each transform",
                           hint="differentiate with respect to one argument at a time, e.g. "
                                "s2s.jacfwd(s2s.hessian(f, 0), 1)")
        self.second = second
        self.argnum = argnum
        self.scalar = scalar  # grad: the second derivative is a number; the result has k's shape
        self.backend = second.backend if backend is None else backend
        self.fun = second.fun
        functools.update_wrapper(self, second.fun, updated=())
        self._module = None
        self._entry = None

    def with_backend(self, backend: str) -> "ThirdOrder":
        return ThirdOrder(self.second.with_backend(backend), self.argnum, self.scalar, backend)

    def _second_order_function(self):
        """f_vjp_jvp_wrt_<b>(params..., out_bar, tangent): the forward-over-reverse code."""
        second = self.second.with_backend("python")
        param = list(inspect.signature(self.fun).parameters)[second.outer_argnums]
        return getattr(second.module(), f"{second._vjp_function().__name__}_jvp_wrt_{param}")

    @property
    def source(self) -> str:
        return _source(self._second_order_function(), "jvp", {"active": [self.argnum]})

    def _call(self):
        if self._entry is None:
            function = self._second_order_function()
            source, names = _generated(function, "jvp", {"active": [self.argnum]})
            self._module = backends.load(source, function.__name__ + "_jvp", self.backend)
            self._entry = backends.entry(self._module, names["jvp"], self.fun)
        return self._entry

    @user_facing
    def __call__(self, *args, **kwargs):
        second = self.second
        a, b, k = second.inner_argnum, second.outer_argnums, self.argnum
        args = private_copies(second._bind(args, kwargs, (k,)))
        name = getattr(self.fun, "__name__", "the function")
        for position in (a, b, k):
            if not -len(args) <= position < len(args):
                raise S2SError(f"argnums {position} is out of range for {len(args)} arguments of {name}")
        a, b, k = (position % len(args) for position in (a, b, k))
        for position in sorted({a, b, k}):
            value = args[position]
            if not isinstance(value, (float, np.floating, np.ndarray)) or pytree.is_integer_leaf(value) \
                    or isinstance(value, np.ndarray) and value.dtype.kind != "f":
                raise S2SError(f"third derivatives are taken with respect to float scalars and arrays; argument "
                               f"{position} of {name} is {type(value).__name__}"
                               + (f" of {value.dtype}" if isinstance(value, np.ndarray) else ""),
                               hint="pass floats (1.0 rather than 1) or float arrays")
        with runtime.debug_silenced():  # (for its output's shape, not one of the user's calls)
            out = _plain_value(self.fun, private_copies(args))
        if not isinstance(out, (float, int, np.floating, np.ndarray)):
            raise S2SError(f"third derivatives of {name} take a function with an array or number output, not "
                           f"{type(out).__name__}", hint="return one array (or number)")
        out_shape, a_shape, b_shape, k_shape = (np.shape(v) for v in (out, args[a], args[b], args[k]))
        if self.scalar and (out_shape or a_shape or b_shape):
            raise S2SError(f"grad of a second derivative takes a function of float scalars with a number output: "
                           f"the second derivative of {name} has shape {out_shape + a_shape + b_shape}",
                           hint="use s2s.jacfwd for the derivative of an array (e.g. s2s.jacfwd(s2s.hessian(f)))")
        call = [float(v) if position in (a, b, k) and not np.ndim(v) else v for position, v in enumerate(args)]
        if self.backend == "cpu":
            call = [pytree.to_numba(v) for v in call]
        entry = self._call()
        tensor = np.zeros(out_shape + a_shape + b_shape + k_shape)
        a_part = (slice(None),) * len(a_shape)
        out_units, b_units, k_units = (list(_basis_vectors(s)) for s in (out_shape, b_shape, k_shape))
        out_index, b_index, k_index = (list(np.ndindex(*s)) for s in (out_shape, b_shape, k_shape))
        for (o, out_bar), (j, b_dot), (l, k_dot) in itertools.product(
                zip(out_index, out_units), zip(b_index, b_units), zip(k_index, k_units)):
            # the tangent (k) of the tangent (b) of the adjoint of argument a (the vjp's only one)
            column = entry(*call, out_bar, b_dot, k_dot)[1][1][1][0]
            if column is not None:
                tensor[o + a_part + j + l] = np.broadcast_to(np.asarray(column, np.float64), a_shape)
        if self.scalar and not k_shape:
            return in_dtype(float(tensor), args[k])
        return in_dtype(tensor, args[k])


def third_order(second, argnum, scalar: bool, has_aux: bool = False) -> ThirdOrder:
    """grad, jacfwd or jacrev of a second derivative (jacobians.SecondOrder)."""
    if has_aux:
        raise S2SError("third derivatives with has_aux are not supported",
                       hint="leave has_aux out and compute aux with a call of the function")
    return ThirdOrder(second, argnum, scalar)


def refuse_fourth_order(fun, transform: str) -> None:
    """A derivative of a third derivative, or of hessian(f, (0, 1)) blocks: a clear refusal."""
    if isinstance(fun, ThirdOrder):
        raise S2SError(f"{transform} of a third derivative (fourth derivatives) is not supported",
                       hint="take derivatives up to the third: e.g. s2s.jacfwd(s2s.hessian(f)); for a "
                            "directional fourth derivative nest s2s.jvp calls inside a function")
    if isinstance(fun, TreeHessian):
        raise S2SError(f"{transform} of a Hessian with several argnums or of a tuple, list or dict argument is "
                       "not supported", hint="take the Hessian with respect to one array argument (an int "
                                             "argnums), e.g. s2s.jacfwd(s2s.hessian(f, 0), 1)")
