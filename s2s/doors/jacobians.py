"""Jacobians and second derivatives: s2s.jacfwd, s2s.jacrev and s2s.hessian (and grad of grad),
laid out as in JAX; forward mode over the generated reverse code for the second order."""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from .. import backends, runtime
from ..tree_util import pytree
from ..errors import S2SError, user_facing
from ..analysis.shapes import argument_facts
from .core import (Derivative, ForwardTransformed, Primal, Transformed, _Binder, _argnums_tuple, _generated,
                   _kinds, _plain_value, _source, _unbatched, binder_of,
                   call_bound, jit, refuse_star_args)
from .primitives import of_arity
from .values import in_dtype, private_copies, unit_leaves
from .hessian import TreeHessian
from .higher import refuse_fourth_order, third_order
from .shipping import recorded


def _jacobian_layout(rows: np.ndarray, out_shape: tuple, in_shape: tuple, forward: bool) -> np.ndarray:
    """JAX's layout: output shape + input shape."""
    if forward:  # rows[c] = d out / d x_c
        return np.moveaxis(rows.reshape((-1,) + out_shape), 0, -1).reshape(out_shape + in_shape)
    return rows.reshape(out_shape + in_shape)


def _basis(shape: tuple, dtype) -> np.ndarray:
    n = int(np.prod(shape))
    return np.eye(n, dtype=dtype).reshape((n,) + shape)


class Jacobian(Derivative):
    """jacfwd / jacrev: a Jacobian by pushing (pulling) a stack of basis vectors through
    compiled generated code in one call."""

    def __init__(self, fun: Callable, argnums, forward: bool, backend: str = "python", has_aux: bool = False):
        fun = _unbatched(fun)
        # A function of *args (and positional parameters only) is called through one of as many named
        # parameters as the call passes (primitives.of_arity), whose argnums count them.
        parameters = binder_of(fun)._signature.parameters.values() if binder_of(fun)._signature else ()
        self._of_arity = binder_of(fun).star is not None and all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in parameters)
        if not self._of_arity:
            refuse_star_args(fun, "jacfwd" if forward else "jacrev")
        self.fun = fun
        self._bind = _Binder(fun)
        self.argnums = argnums
        self.forward = forward
        self.backend = backend
        self.has_aux = has_aux
        self._by_kinds: dict = {}  # ("rows" or "columns", argnum, kinds of arguments) -> the function made for them
        functools.update_wrapper(self, fun, updated=())  # not fun's __dict__: it may be a transform

    @property
    def source(self) -> str:
        if self._latest_sibling is not None:
            return self._latest_sibling.source
        if self.forward:
            return ForwardTransformed(self.fun, has_aux=self.has_aux, columns=True).source
        return Transformed(self.fun, "vjp", _argnums_tuple(self.argnums)[:1], self.has_aux, rows=True).source

    def with_backend(self, backend: str) -> "Jacobian":
        return Jacobian(self.fun, self.argnums, self.forward, backend, self.has_aux)

    def for_function(self, fun: Callable) -> "Jacobian":
        return Jacobian(fun, self.argnums, self.forward, self.backend, self.has_aux)

    def _one(self, args, k):
        x = args[k]
        if any(pytree.is_integer_leaf(leaf) for leaf in pytree.leaves(x)):
            raise S2SError(f"jacobians are taken with respect to float scalars and arrays; argument {k} "
                           "holds integers", hint="pass floats, or leave it out of argnums")
        with runtime.debug_silenced():  # (for its output's shape, not one of the user's calls)
            out = _plain_value(self.fun, private_copies(args))  # (copies: fun may write into its arguments)
        if self.has_aux:
            out = out[0]
        simple = (float, np.floating, np.ndarray)
        if not isinstance(x, simple) or not isinstance(out, simple):
            return self._pytree(args, k, out)
        x_arr = np.asarray(x, dtype=np.result_type(x, np.float64) if not isinstance(x, np.ndarray) else x.dtype)
        in_shape = np.shape(x)
        if np.size(out) == 0 or x_arr.size == 0:
            # No rows (columns) to pull (push): the generated drivers start from the first one
            return np.zeros(np.shape(out) + in_shape, dtype=np.result_type(x_arr, np.asarray(out).dtype, np.float64))
        if self.forward:
            transformed = ForwardTransformed(self.fun, self.backend, self.has_aux, columns=True,
                                             active=_argnums_tuple(self.argnums))
            columns = self._columns_function(transformed, args, k)
            call = list(args)
            call[k] = x if np.ndim(x) else float(x)
            tangents = _basis(in_shape, x_arr.dtype)
            if not in_shape:
                tangents = tangents.reshape(1)
            rows = columns(*transformed.call_args(call), tangents)
            out_shape = rows.shape[1:]
            return _jacobian_layout(rows, out_shape, in_shape, True)
        transformed = Transformed(self.fun, "vjp", (k,), self.has_aux, backend=self.backend, rows=True)
        out_shape = np.shape(out)
        out_dtype = np.result_type(out)  # (float32 code pulls float32 cotangents: Numba's matmul takes one dtype)
        cotangents = _basis(out_shape, out_dtype if np.issubdtype(out_dtype, np.inexact) else np.float64)
        if not out_shape:
            cotangents = cotangents.reshape(1)
        rows = self._rows_function(transformed, args, k)(*transformed._call_args(args), cotangents)
        return _jacobian_layout(rows, out_shape, in_shape, False)

    def _columns_function(self, transformed: ForwardTransformed, args, k: int):
        """The compiled function that pushes the columns of tangents forward: as _rows_function's."""
        if self.backend != "cpu":
            return transformed.entry(f"_jvp_columns_{k}")
        key = ("columns", k, _kinds(args))
        if key not in self._by_kinds:
            options = {"columns": True, "active": list(_argnums_tuple(self.argnums)), "facts": argument_facts(args)}
            if self.has_aux:
                options["has_aux"] = True
            source, names = transformed._generated(options)
            module = backends.load(source, self.fun.__name__ + "_jvp", self.backend)
            self._by_kinds[key] = backends.entry(module, f"{names['name']}_jvp_columns_{k}", self.fun)
        return self._by_kinds[key]

    def _rows_function(self, transformed: Transformed, args, k: int):
        """The compiled function that pulls the rows of cotangents back: of the module for any
        arguments, or under s2s.jit of the module generated for these kinds of arguments, as
        s2s.jit of grad's (a test of an ndim decided: transforms/static_properties.py; a loop over
        items of different kinds written out: frontend/dict_loops.py; a carry that a loop makes an
        array started as one: optimize/carries.py)."""
        if self.backend != "cpu":
            return backends.entry(transformed.module(), f"{transformed._entry_name()}_vjp_rows", self.fun)
        key = ("rows", k, _kinds(args))
        if key not in self._by_kinds:
            options = {"argnums": [k], "has_aux": self.has_aux, "rows": True, "facts": argument_facts(args)}
            source, entries = _generated(self.fun, "grad", options)
            module = backends.load(source, self.fun.__name__, self.backend)
            self._by_kinds[key] = backends.entry(module, f"{entries['name']}_vjp_rows", self.fun)
        return self._by_kinds[key]

    def _pytree(self, args, k, out):
        """Pytree inputs or outputs: one generated-code call per input (fwd) or output (rev)
        element, leaf by leaf; the result nests the input structure in the output structure."""
        in_leaves, in_structure = pytree.flatten(args[k])
        out_leaves, out_structure = pytree.flatten(out)
        blocks = [[None] * len(in_leaves) for _ in out_leaves]
        if self.forward:
            transformed = ForwardTransformed(self.fun, self.backend, self.has_aux, columns=True,
                                             active=_argnums_tuple(self.argnums))
            entry = transformed.entry_wrt(k)  # takes the tangent of argument k only
            for li, leaf in enumerate(in_leaves):
                columns = []
                for e in range(max(1, np.size(leaf))):
                    tangent = pytree.unflatten(in_structure, unit_leaves(in_leaves, li, e))
                    tangent = entry(*transformed.call_args(list(args) + [tangent]))[1]
                    if self.has_aux:
                        tangent = tangent[0]
                    columns.append(pytree.flatten(tangent)[0])
                for oi, o in enumerate(out_leaves):
                    stacked = np.array([np.asarray(c[oi], np.float64) for c in columns])
                    blocks[oi][li] = np.moveaxis(stacked, 0, -1).reshape(np.shape(o) + np.shape(leaf))
        else:
            transformed = Transformed(self.fun, "vjp", (k,), self.has_aux, backend=self.backend)
            vjp_function = transformed._vjp_function()
            for oi, o in enumerate(out_leaves):
                rows = []
                for e in range(max(1, np.size(o))):
                    cotangent = pytree.unflatten(out_structure, unit_leaves(out_leaves, oi, e))
                    if self.backend == "cpu":
                        cotangent = pytree.to_numba(cotangent)
                    adjoint = vjp_function(*transformed._call_args(args), cotangent)[1][0]
                    rows.append(pytree.flatten(pytree.restructure(adjoint, args[k]))[0])
                for li, leaf in enumerate(in_leaves):
                    stacked = np.array([np.asarray(r[li], np.float64) for r in rows])
                    blocks[oi][li] = stacked.reshape(np.shape(o) + np.shape(leaf))
        return pytree.unflatten(out_structure, [pytree.unflatten(in_structure, row) for row in blocks])

    @user_facing
    def __call__(self, *args, **kwargs):
        if self._of_arity:
            if kwargs:
                raise S2SError(f"{self.fun.__name__} takes *args: pass its arguments by position")
            named = self.__dict__.setdefault("_by_arity", {})
            if len(args) not in named:
                named[len(args)] = self.for_function(of_arity(self.fun, len(args)))
            return named[len(args)](*args)
        bound = self._bind(args, kwargs, _argnums_tuple(self.argnums))
        sibling = self.for_arguments(bound)
        if sibling is not self:
            return sibling(*args, **kwargs)
        args = private_copies(bound)
        if isinstance(self.argnums, int):
            jac = in_dtype(self._one(args, self.argnums), args[self.argnums])
        else:
            jac = tuple(in_dtype(self._one(args, k), args[k]) for k in self.argnums)
        if self.has_aux:
            with runtime.debug_silenced():
                return jac, call_bound(self.fun, private_copies(args))[1]
        return jac


class SecondOrder(Derivative):
    """Derivatives of a reverse-mode derivative, by forward mode over the generated reverse
    code: hessian(f), jacfwd(jacrev(f)), jacrev(jacrev(f)), grad(grad(f))."""

    def __init__(self, fun: Callable, inner_argnum: int, outer_argnums, scalar: bool, backend: str = "python",
                 has_aux: bool = False):
        fun = _unbatched(fun)
        refuse_star_args(fun, "a second derivative")
        self.has_aux = has_aux  # fun returns (value, aux): hessian(f, has_aux=True) returns (H, aux)
        self._aux = None  # (of the latest call)
        self.fun = fun
        self._bind = _Binder(fun)
        self.inner_argnum = inner_argnum
        self.outer_argnums = outer_argnums
        self.scalar = scalar  # grad(grad(f)): a number, as in JAX
        self.backend = backend
        functools.update_wrapper(self, fun, updated=())  # not fun's __dict__: it may be a transform
        self._module = None
        # {kinds of arguments: (module, source)} under s2s.jit where a call passes a dict, or a tuple
        # of items of different kinds: a loop over it is written out item by item in the vjp
        # generated for the call (frontend/dict_loops.py), which forward mode then differentiates
        self._by_kinds: dict = {}
        self._specialised_source: str | None = None
        self._inner: Transformed | None = None  # (the vjp for any arguments, whose loops tell)

    def with_backend(self, backend: str) -> "SecondOrder":
        return SecondOrder(self.fun, self.inner_argnum, self.outer_argnums, self.scalar, backend, self.has_aux)

    def for_function(self, fun: Callable) -> "SecondOrder":
        return SecondOrder(fun, self.inner_argnum, self.outer_argnums, self.scalar, self.backend, self.has_aux)

    def _vjp_function(self):
        inner = Transformed(self.fun, "vjp", (self.inner_argnum,), self.has_aux)
        return getattr(inner.module(), f"{inner._entry_name()}_vjp")

    @property
    def source(self) -> str:
        if self._latest_sibling is not None:
            return self._latest_sibling.source
        if self._specialised_source is not None:
            return self._specialised_source
        return self._second_order_source(self._vjp_function())

    def _second_order_source(self, vjp_function) -> str:
        # (the outer derivatives' arguments only: another's, an int n of np.arange(n), may refuse)
        return _source(vjp_function, "second_order", {"active": sorted(set(_argnums_tuple(self.outer_argnums)))})

    def module(self, args: tuple | None = None):
        """The module of the second derivatives: of the vjp for any arguments, or under s2s.jit of the
        vjp generated for these kinds of arguments, as _rows_function's."""
        if self._inner is None:
            self._inner = Transformed(self.fun, "vjp", (self.inner_argnum,), self.has_aux)
        inner = self._inner
        if args is not None and self.backend == "cpu":
            key = _kinds(args)
            found = self._by_kinds.get(key)
            if found is None:
                source, entries = inner.specialised(args)
                vjp_function = getattr(backends.load(source, self.fun.__name__, "python"), entries["vjp"])
                second = self._second_order_source(vjp_function)
                found = self._by_kinds[key] = (backends.load(second, vjp_function.__name__ + "_jvp", self.backend),
                                               second)
            self._specialised_source = found[1]
            return found[0]
        if self._module is None:
            vjp_function = self._vjp_function()
            self._module = backends.load(self._second_order_source(vjp_function), vjp_function.__name__ + "_jvp",
                                         self.backend)
        return self._module

    def _one(self, args, k):
        x, wrt = args[self.inner_argnum], args[k]
        if not self.scalar and k == self.inner_argnum and isinstance(x, (tuple, list, dict)):
            if self.has_aux:
                raise S2SError("hessian(..., has_aux=True) of a tuple, list or dict argument is not supported",
                               hint="take the Hessian of one array argument, or leave has_aux out and "
                                    "compute aux with a call of the function")
            return TreeHessian(self.fun, k, self.backend)(*args)  # a pytree argument: its blocks
        for value, position in ((x, self.inner_argnum), (wrt, k)):
            if not isinstance(value, (float, np.floating, np.ndarray)) or pytree.is_integer_leaf(value):
                raise S2SError(f"second derivatives are taken with respect to float scalars and arrays; "
                               f"argument {position} is {type(value).__name__}")
        with runtime.debug_silenced():  # (for its output's shape, not one of the user's calls)
            out = _plain_value(self.fun, private_copies(args))  # (copies: fun may write into its arguments)
        if self.has_aux:
            out, self._aux = out
        if not isinstance(out, (float, int, np.floating, np.ndarray)):
            raise S2SError("second derivatives take functions with an array or scalar output")
        out_shape, in_shape, wrt_shape = np.shape(out), np.shape(x), np.shape(wrt)
        if self.scalar and (out_shape or in_shape):
            raise S2SError(f"grad of grad (or of jacfwd, jacrev) needs scalar outputs: the first derivative of "
                           f"{self.fun.__name__} has shape {out_shape + in_shape}",
                           hint="use s2s.hessian or s2s.jacfwd(s2s.jacrev(f))")
        cotangents = _basis(out_shape, np.float64).reshape((-1,) + out_shape) if out_shape else np.ones(1)
        tangents = _basis(wrt_shape, np.float64).reshape((-1,) + wrt_shape) if wrt_shape else np.ones(1)
        module = self.module(args)
        drivers = [n for n in dir(module) if n.endswith(f"_second_order_{k}")]
        call = [a if k2 not in (self.inner_argnum, k) or np.ndim(a) else float(a) for k2, a in enumerate(args)]
        if self.backend == "cpu":
            call = [pytree.to_numba(a) for a in call]
        blocks = backends.entry(module, drivers[0], self.fun)(*call, cotangents, tangents)  # (rows, cols) + in_shape
        if self.scalar:  # (a number's derivative: the shape of the argument it is taken with respect to)
            return float(np.asarray(blocks).reshape(-1)[0]) if not wrt_shape else np.asarray(blocks).reshape(wrt_shape)
        blocks = np.asarray(blocks).reshape((len(cotangents), len(tangents)) + in_shape)
        blocks = np.moveaxis(blocks, 1, -1)  # rows, in..., cols
        return blocks.reshape(out_shape + in_shape + wrt_shape)

    @user_facing
    def __call__(self, *args, **kwargs):
        bound = self._bind(args, kwargs, _argnums_tuple(self.outer_argnums))
        sibling = self.for_arguments(bound)
        if sibling is not self:
            return sibling(*args, **kwargs)
        args = private_copies(bound)
        # float32 in, float32 out, as the first derivatives (the second are computed in float64)
        if isinstance(self.outer_argnums, int):
            result = in_dtype(self._one(args, self.outer_argnums), args[self.outer_argnums])
        else:
            result = tuple(in_dtype(self._one(args, k), args[k]) for k in self.outer_argnums)
        return (result, self._aux) if self.has_aux else result


def _second_order(inner, outer_argnums, scalar: bool, has_aux: bool = False) -> SecondOrder:
    if isinstance(inner, Transformed) and inner.kind != "grad":
        # (its output is the pair (value, gradient): the derivative of the gradient alone, which
        # the code below computes, would be a wrong answer, not JAX's pair of Jacobians)
        raise S2SError(f"derivatives of s2s.{inner.kind}(f) are not supported",
                       hint="differentiate s2s.grad(f) (s2s.hessian(f), s2s.jacfwd(s2s.grad(f))) and take the value "
                            "from s2s.value_and_grad(f) separately")
    if has_aux != bool(getattr(inner, "has_aux", False)):
        raise S2SError("second derivatives with has_aux take it on both transforms: "
                       "s2s.jacfwd(s2s.jacrev(f, has_aux=True), has_aux=True)",
                       hint="or s2s.hessian(f, has_aux=True)")
    argnums = inner.argnums
    # The Jacobian of a Jacobian is one array whichever mode computed each: jacfwd(jacfwd(f)) and
    # jacrev(jacfwd(f)) are computed as jacfwd(jacrev(f)), forward mode over the generated reverse code.
    jacobian = isinstance(inner, Jacobian) or isinstance(inner, Transformed) and inner.kind == "grad"
    if not isinstance(argnums, int) and not scalar and jacobian and not inner.has_aux \
            and _argnums_tuple(outer_argnums) == tuple(argnums):
        return TreeHessian(inner.fun, tuple(argnums))  # jacfwd(jacrev(f, (0, 1)), (0, 1)): the Hessian's blocks
    if not isinstance(argnums, int):
        raise S2SError("second derivatives of a transform with several argnums are not supported yet",
                       hint="take argnums=0 (an int) in the inner transform")
    return SecondOrder(inner.fun, argnums, outer_argnums, scalar, has_aux=has_aux)


@recorded
def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Jacobian by forward mode (one tangent per input element), laid out as in JAX.

    has_aux: fun returns (value, aux); the result is (jacobian, aux).
    """
    if isinstance(fun, Primal):  # jacfwd(jit(f)) is jit(jacfwd(f))
        return jit(jacfwd(fun.fun, argnums, has_aux), backend=fun.backend)
    if isinstance(fun, (Jacobian, Transformed)):
        return _second_order(fun, argnums, scalar=False, has_aux=has_aux)
    if isinstance(fun, SecondOrder):  # jacfwd(hessian(f)), jacfwd(jacfwd(jacrev(f))): third derivatives
        return third_order(fun, argnums, scalar=False, has_aux=has_aux)
    refuse_fourth_order(fun, "jacfwd")
    return Jacobian(fun, argnums, forward=True, has_aux=has_aux)


@recorded
def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Jacobian by reverse mode (one cotangent per output element), laid out as in JAX.

    Of a Jacobian or gradient it is computed forward over reverse, which gives the same numbers.
    """
    if isinstance(fun, Primal):  # jacrev(jit(f)) is jit(jacrev(f))
        return jit(jacrev(fun.fun, argnums, has_aux), backend=fun.backend)
    if isinstance(fun, (Jacobian, Transformed)):
        return _second_order(fun, argnums, scalar=False, has_aux=has_aux)
    if isinstance(fun, SecondOrder):  # jacrev(hessian(f)), jacrev(jacfwd(jacrev(f))): third derivatives
        return third_order(fun, argnums, scalar=False, has_aux=has_aux)
    refuse_fourth_order(fun, "jacrev")
    return Jacobian(fun, argnums, forward=False, has_aux=has_aux)


@recorded
def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Hessian, jacfwd(jacrev(fun)): forward mode over the generated reverse code.

    Of a pytree argument, or of several argnums, it has JAX's layout: `hessian[i][j]` has the
    shape out.shape + arg_i.shape + arg_j.shape (blocks nested by the arguments' trees).

    >>> import numpy as np, s2s
    >>> def f(x):
    ...     return np.sum(x ** 3)
    >>> s2s.hessian(f)(np.array([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]

    has_aux: fun returns (value, aux); the result is (hessian, aux).
    """
    if isinstance(fun, Primal):  # hessian(jit(f)) is jit(hessian(f))
        return jit(hessian(fun.fun, argnums, has_aux), backend=fun.backend)
    if isinstance(fun, (Jacobian, Transformed)):  # hessian(grad(f)) is jacfwd(jacrev(grad(f))): third derivatives
        return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)
    if isinstance(fun, SecondOrder):
        raise S2SError("hessian of a second derivative (fourth derivatives) is not supported",
                       hint="take derivatives up to the third: s2s.jacfwd(s2s.hessian(f))")
    refuse_fourth_order(fun, "hessian")
    if not isinstance(argnums, int):
        if has_aux:
            raise S2SError("hessian(..., has_aux=True) with a tuple of argnums is not supported",
                           hint="take argnums=k (an int), or leave has_aux out and compute aux with a call "
                                "of the function")
        return TreeHessian(fun, argnums)  # ((H00, H01), (H10, H11)), as JAX
    return SecondOrder(fun, argnums, argnums, scalar=False, has_aux=has_aux)
