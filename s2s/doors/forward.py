"""Forward mode at the door: s2s.jvp, with the generated forward-mode module of each function
(core.ForwardTransformed) kept for later calls, and s2s.jvp inside a transformed function."""

from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ..tree_util import pytree
from ..driver import cache
from ..errors import S2SError, user_facing
from ..frontend import static_values
from ..frontend.nested import register_nested_transform
from .core import ForwardTransformed, Primal, Transformed, binder_of
from .hvp import jvp_of_gradient
from .primitives import as_function
from .values import scalar_like, tangent_in_primal_dtype


_FORWARD: "weakref.WeakKeyDictionary | None" = None


def _forward_transformed(fun: Callable, backend: str, active: tuple | None = None) -> ForwardTransformed:
    """One ForwardTransformed per function and backend, as s2s.grad(f) holds one module: s2s.jvp
    is called in loops, and looking the source up in the cache on each call would dominate."""
    global _FORWARD
    if _FORWARD is None:
        _FORWARD = weakref.WeakKeyDictionary()
    try:
        per_backend = _FORWARD.setdefault(fun, {})
    except TypeError:  # not weak-referenceable: no memo
        return ForwardTransformed(fun, backend, active=active)
    # A new module where what fun captures (closure, module numbers and arrays) has changed
    # since, or what its module was made from (callees, transitively, and the constants they
    # read: cache.Watch): s2s.jvp is called anew each time, as jax.jvp traces anew.
    stamp = cache.captured_stamp(fun)
    known = per_backend.get((backend, active))
    if known is None or known[0] != stamp or not known[1].current():
        per_backend[(backend, active)] = (stamp, ForwardTransformed(fun, backend, active=active))
    return per_backend[(backend, active)][1]


def _nested_entry(fun: Callable) -> Callable:
    """The generated forward mode of fun that s2s.jvp(fun, ...) inside a transformed function
    calls, carrying what its module was made from (cache.NESTED_MANIFEST): the caller's
    module records those, so that it is made anew when they change."""
    transformed = _forward_transformed(fun, "python")
    entry = inspect.unwrap(transformed.entry())
    setattr(entry, cache.NESTED_MANIFEST, cache.nested_manifest(transformed.fun, transformed.manifests))
    return entry


@user_facing
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, backend: str = "python"):
    """Forward mode, as jax.jvp: (fun(*primals), the derivative along tangents).

    The forward-mode module of fun is generated (or read from the cache) on the first call
    and kept for later calls with the same function object, as s2s.jvp is called in loops.

    >>> import numpy as np, s2s
    >>> def f(x):
    ...     return x * np.sin(x)
    >>> out, out_dot = s2s.jvp(f, (1.0,), (1.0,))
    >>> bool(abs(out_dot - (np.sin(1.0) + np.cos(1.0))) < 1e-12)
    True
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        # (as jax.jvp: an array would otherwise be taken as a sequence of arguments, its rows)
        raise S2SError(f"primal and tangent arguments to s2s.jvp must be tuples or lists; found "
                       f"{type(primals).__name__} and {type(tangents).__name__}",
                       hint="pass one tuple of primals and one of tangents: s2s.jvp(f, (x,), (t,))")
    if isinstance(fun, functools.partial):  # (its bound arguments are constants: primitives.py)
        fun = as_function(fun)
    if isinstance(fun, Primal) and backend == "python":  # jvp(jit(f)) is f's forward mode, compiled
        return jvp(fun.fun, primals, tangents, backend=fun.backend)
    if isinstance(fun, Transformed) and fun.kind in ("grad", "value_and_grad") and not fun.rows:
        # the Hessian-vector product jvp(grad(f), (x,), (v,)): forward mode over the reverse code
        return jvp_of_gradient(fun, tuple(primals), tuple(tangents), fun.backend if backend == "python" else backend)
    if hasattr(fun, "with_backend") or isinstance(fun, Primal):  # jacfwd/jacrev, hessian, vmap; jit
        name = getattr(fun, "__name__", "the function")
        raise S2SError(f"s2s.jvp of an already transformed function ({type(fun).__name__} of {name}) is not "
                       "supported",
                       hint="take jvp of the plain function (s2s.jvp(f, ...) for jit(f)); for a Hessian-vector "
                            "product, s2s.jvp(s2s.grad(f), (x,), (v,))")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise S2SError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    for k, (p, t) in enumerate(zip(primals, tangents)):
        if [np.shape(a) for a in pytree.leaves(p)] != [np.shape(a) for a in pytree.leaves(t)]:
            raise S2SError(f"jvp: the tangent of argument {k} does not have the structure and shapes "
                           "of its primal")
        if any(isinstance(a, np.ndarray) and pytree.is_integer_leaf(a) for a in pytree.leaves(p)):
            # (as JAX, which takes only float0 tangents there; the forward mode takes every
            # argument's array as floats: a value written into a copy of it would keep its tangent)
            raise S2SError(f"jvp: argument {k} holds an array of integers (or bools), which has no tangent",
                           hint="close over it (s2s.jvp(lambda x: f(x, labels), (x,), (t,))), or pass floats")
    transformed = _forward_transformed(fun, backend)
    given = len(primals)
    binder = binder_of(transformed.fun)
    if binder.general:  # *args, keyword-only parameters
        primals, tangents, active = _bound_primals(binder, primals, tangents)
        if len(active) < len(primals):
            transformed = _forward_transformed(fun, backend, active=active)
    else:
        primals, all_tangents = transformed.with_defaults(primals, tangents)
        if len(primals) > given:
            # Parameters the call leaves out take their defaults, constants whose tangents are
            # symbolic zeros (a zero tangent would be multiplied: 0 * log(x) of x ** a is NaN at x < 0)
            transformed = _forward_transformed(fun, backend, active=tuple(range(given)))
        else:
            tangents = all_tangents
    specialised = static_values.specialised(transformed.fun, primals)
    if specialised is not transformed.fun:  # strings, None, types, functions: written into the code
        transformed = _forward_transformed(specialised, backend, active=transformed.active)
    if backend == "cpu":
        tangents = tuple(scalar_like(t, p) for p, t in zip(primals, tangents))
    call = transformed.call_args(primals + tangents)
    entry = transformed.specialised_entry(call, primals + tangents) if backend == "cpu" else transformed.entry()
    out, out_dot = entry(*call)
    if backend == "cpu":  # (dicts come back from compiled code as DictTuples)
        out, out_dot = pytree.from_numba(out), pytree.from_numba(out_dot)
    return out, tangent_in_primal_dtype(out, out_dot)


def _bound_primals(binder, primals: tuple, tangents: tuple) -> tuple[tuple, tuple, tuple]:
    """(primals, tangents, the parameters that have tangents) as generated code takes them, of a
    function with *args or keyword-only parameters: *args's items one tuple, as are their
    tangents; keyword-only parameters and left-out ones take their defaults, constants whose
    tangents are symbolic zeros (as with_defaults)."""
    bound = binder(primals, {})
    count, star = binder._count, binder.star
    active = list(range(min(len(primals), count)))
    taken = list(tangents[:count])
    if star is not None:
        active.append(star)
        taken.append(tuple(tangents[count:]))
    return bound, tuple(taken), tuple(active)


# s2s.jvp(f, ...) inside a transformed function calls f's generated forward mode.
register_nested_transform(jvp, _nested_entry)
