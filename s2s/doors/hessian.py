"""s2s.hessian of pytree arguments and several argnums, laid out as JAX lays it out.

Forward mode over the generated reverse code, as for one array argument (jacobians.SecondOrder),
but one Hessian-vector product per input element: the forward mode of `<name>_vjp` with
respect to argument j, pushed along a basis vector of j's leaves, with an output cotangent that
is a basis vector of the output, gives one column of every block H[i][j]. JAX's result for
argnums (i, ...) is a tuple over i of trees shaped like argument i, whose leaves are tuples
over j of trees shaped like argument j, whose leaves are the blocks: out.shape + leaf_i.shape
+ leaf_j.shape. An int argnums drops the tuples.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from .. import backends
from ..tree_util import pytree
from ..errors import S2SError, user_facing
from .core import (Transformed, _Binder, _kinds, _source, _unbatched, call_bound,
                   refuse_star_args)
from .values import in_dtype, private_copies


class TreeHessian:
    """hessian(fun, argnums) where argnums is a tuple or an argument is a tuple, list, dict or
    namedtuple of float arrays and numbers."""

    def __init__(self, fun: Callable, argnums, backend: str = "python"):
        self.fun = _unbatched(fun)
        refuse_star_args(self.fun, "hessian")
        self._bind = _Binder(self.fun)
        self.argnums = argnums
        self._argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        self.backend = backend
        functools.update_wrapper(self, self.fun, updated=())
        self._module = None
        self._inner = None
        # {kinds of arguments: (vjp, module, source)} under s2s.jit where a call passes a dict or a
        # tuple of items of different kinds (as jacobians.SecondOrder keeps them)
        self._by_kinds: dict = {}
        self._specialised_source: str | None = None

    def with_backend(self, backend: str) -> "TreeHessian":
        return TreeHessian(self.fun, self.argnums, backend)

    def _vjp_function(self):
        if self._inner is None:
            self._inner = Transformed(self.fun, "vjp", self._argnums)
        return getattr(self._inner.module(), f"{self._inner._entry_name()}_vjp")

    @property
    def source(self) -> str:
        if self._specialised_source is not None:
            return self._specialised_source
        return _source(self._vjp_function(), "second_order", {})

    def module(self):
        if self._module is None:
            self._module = backends.load(_source(self._vjp_function(), "second_order", {}),
                                         self._vjp_function().__name__ + "_jvp", self.backend)
        return self._module

    def _vjp_and_module(self, args: tuple):
        """(the vjp, the module of its forward mode): for any arguments, or under s2s.jit of the vjp
        generated for these kinds of arguments (as jacobians.SecondOrder's)."""
        if self._inner is None:
            self._inner = Transformed(self.fun, "vjp", self._argnums)
        if self.backend != "cpu":
            return self._vjp_function(), self.module()
        key = _kinds(args)
        found = self._by_kinds.get(key)
        if found is None:
            source, entries = Transformed(self.fun, "vjp", self._argnums).specialised(args)
            vjp_function = getattr(backends.load(source, self.fun.__name__, "python"), entries["vjp"])
            second = _source(vjp_function, "second_order", {})
            module = backends.load(second, vjp_function.__name__ + "_jvp", self.backend)
            found = self._by_kinds[key] = (vjp_function, module, second)
        self._specialised_source = found[2]
        return found[0], found[1]

    def _jvp_wrt(self, k: int, vjp_function, module):
        """The forward mode of the vjp with respect to argument k alone."""
        param = list(inspect.signature(vjp_function).parameters)[k]
        name = f"{vjp_function.__name__}_jvp_wrt_{param}"
        return backends.entry(module, name, self.fun)

    @user_facing
    def __call__(self, *args, **kwargs):
        args = private_copies(self._bind(args, kwargs, self._argnums))
        name = getattr(self.fun, "__name__", "the function")
        for k in self._argnums:
            if not -len(args) <= k < len(args):
                raise S2SError(f"argnums {k} is out of range for {len(args)} arguments of {name}")
            for leaf in pytree.leaves(args[k]):
                if pytree.is_integer_leaf(leaf) or not isinstance(leaf, (float, np.floating, np.ndarray)):
                    raise S2SError(f"hessian of {name}: argument {k} holds a {type(leaf).__name__} leaf; "
                                   "second derivatives are taken with respect to float numbers and arrays",
                                   hint="pass floats (1.0 rather than 1), or leave the argument out of argnums")
        argnums = tuple(k % len(args) for k in self._argnums)
        out = call_bound(self.fun, args)
        if not isinstance(out, (float, int, np.floating, np.ndarray)):
            raise S2SError(f"hessian of {name} takes a function with an array or number output, not "
                           f"{type(out).__name__}", hint="return one array (or number)")
        out_shape = np.shape(out)
        # The float64 leaves of each differentiated argument, its structure, its leaves' shapes.
        flat = {k: pytree.flatten(args[k]) for k in argnums}
        shapes = {k: [np.shape(leaf) for leaf in flat[k][0]] for k in argnums}
        # (with the arguments' key order: a loop over a dict goes over its keys as the caller's does)
        call = [pytree.in_key_order(pytree.unflatten(flat[k][1], [np.asarray(x, np.float64) if np.ndim(x) else float(x)
                                                                  for x in flat[k][0]]), a) if k in flat else a
                for k, a in enumerate(args)]
        if self.backend == "cpu":
            call = [pytree.to_numba(a) for a in call]
        # blocks[(i, li, j, lj)]: out.shape + leaf li of argument i + leaf lj of argument j
        blocks = {(i, li, j, lj): np.zeros(out_shape + si + sj)
                  for i in argnums for li, si in enumerate(shapes[i])
                  for j in argnums for lj, sj in enumerate(shapes[j])}
        n_out = int(np.prod(out_shape))
        vjp_function, module = self._vjp_and_module(args)
        for j in argnums:
            jvp = self._jvp_wrt(j, vjp_function, module)
            zeros = [np.zeros(s) if s else 0.0 for s in shapes[j]]
            for lj, sj in enumerate(shapes[j]):
                for e in range(int(np.prod(sj))):
                    leaves = list(zeros)
                    if sj:
                        leaves[lj] = np.zeros(sj)
                        leaves[lj].reshape(-1)[e] = 1.0
                    else:
                        leaves[lj] = 1.0
                    tangent = pytree.in_key_order(pytree.unflatten(flat[j][1], leaves), args[j])
                    if self.backend == "cpu":
                        tangent = pytree.to_numba(tangent)
                    for r in range(n_out):
                        cotangent = 1.0 if not out_shape else np.eye(n_out)[r].reshape(out_shape)
                        adjoint_dots = jvp(*call, cotangent, tangent)[1][1]
                        for position, i in enumerate(argnums):
                            got = pytree.leaves(adjoint_dots[position]) if adjoint_dots[position] is not None \
                                else [None] * len(shapes[i])
                            for li, si in enumerate(shapes[i]):
                                column = np.zeros(si) if got[li] is None else np.broadcast_to(got[li], si)
                                target = blocks[(i, li, j, lj)]
                                index = np.unravel_index(r, out_shape) if out_shape else ()
                                target[index + (Ellipsis,) + np.unravel_index(e, sj)] = column
        return self._layout(blocks, argnums, flat, args)

    def _layout(self, blocks, argnums, flat, args):
        def inner(i, li):
            per_j = tuple(in_dtype(pytree.unflatten(flat[j][1], [blocks[(i, li, j, lj)]
                                                                 for lj in range(len(flat[j][0]))]), args[j])
                          for j in argnums)
            return per_j[0] if isinstance(self.argnums, int) else per_j

        per_i = tuple(pytree.unflatten(flat[i][1], [inner(i, li) for li in range(len(flat[i][0]))])
                      for i in argnums)
        return per_i[0] if isinstance(self.argnums, int) else per_i
