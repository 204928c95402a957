"""s2s.jvp of a gradient: jvp(grad(f), primals, tangents) is (grad(f)(*primals), the Hessian
along the tangents), the Hessian-vector product of the JAX autodiff cookbook. Of
grad(f, has_aux=True), ((gradient, aux), (its tangent, aux's tangent)), as JAX gives them.

Forward mode over the generated reverse code, as hessian and grad(grad(f)) are computed: the
forward mode of `<name>_vjp(params..., out_bar)`, with tangents for the float arguments and a
symbolic zero for out_bar, seeded with out_bar = 1, gives the adjoints and their tangents in
one sweep, without building the Hessian.
"""

from __future__ import annotations

import numpy as np

from ..tree_util import pytree
from ..errors import S2SError
from .core import ForwardTransformed, _seed, refuse_star_args
from .values import private_copies, scalar_like


def _float_argument(arg) -> bool:
    """Whether an argument carries a tangent: all of its leaves float numbers or arrays."""
    leaves = pytree.leaves(arg)
    return bool(leaves) and all(
        isinstance(leaf, (float, np.floating)) or isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f"
        for leaf in leaves)


def _zero(tangent) -> bool:
    return all(not np.any(leaf) for leaf in pytree.leaves(tangent))


def jvp_of_gradient(gradient, primals: tuple, tangents: tuple, backend: str):
    """jvp(grad(f, argnums), primals, tangents) and jvp(value_and_grad(f, argnums), ...);
    gradient is the core.Transformed of grad or value_and_grad."""
    name = getattr(gradient.fun, "__name__", "the function")
    refuse_star_args(gradient.fun, "s2s.jvp of a gradient")
    args = gradient._bind(tuple(primals), {}, gradient._argnums)
    # (the code grad runs for these arguments: their static values, and their types where it tests them)
    gradient = gradient.for_arguments(args)
    # arguments the call left out take their defaults, which are constants (zero tangents)
    tangents = tuple(tangents) + tuple(None for _ in range(len(args) - len(primals)))
    gradient._check_args(args)
    active = []
    for k, (arg, tangent) in enumerate(zip(args, tangents)):
        if tangent is None:
            continue
        if _float_argument(arg):
            active.append(k)
        elif not _zero(tangent):
            raise S2SError(f"jvp of {gradient.kind} of {name}: argument {k} is not made of floats, so it has "
                           "no tangent, but its tangent is not zero",
                           hint="pass floats (1.0 rather than 1), or give that argument a zero tangent")
    active = tuple(active)
    per_active = gradient.__dict__.setdefault("_gradient_jvps", {})
    key = (active, backend)
    if key not in per_active:
        # the generated vjp as Python source (that of the python backend's module), which s2s reads
        python = gradient if gradient.backend == "python" else gradient.with_backend("python")
        vjp_function = getattr(python.module(), f"{python._entry_name()}_vjp")
        per_active[key] = ForwardTransformed(vjp_function, backend, active=active)
    forward = per_active[key]
    seed = _seed(args)
    active_tangents = tuple(scalar_like(tangents[k], args[k]) if backend == "cpu" else tangents[k]
                            for k in active)
    call = forward.call_args(private_copies(args) + (seed,) + active_tangents)
    entry = forward.specialised_entry(call) if backend == "cpu" else forward.entry()
    (value, adjoints), (value_dot, adjoint_dots) = entry(*call)
    if backend == "cpu":  # (dicts come back from compiled code as DictTuples)
        adjoints, adjoint_dots = pytree.from_numba(adjoints), pytree.from_numba(adjoint_dots)
    grads, grad_dots = [], []
    for position, k in enumerate(gradient._argnums):
        grads.append(pytree.restructure(adjoints[position], args[k]))
        # an adjoint that does not vary along the tangents (f linear in argument k) has a
        # symbolic zero tangent: zeros shaped like its gradient
        dot = adjoint_dots[position]
        grad_dots.append(pytree.restructure(dot, args[k]) if dot is not None
                         else _zeros_like(grads[-1]))
    grad = grads[0] if isinstance(gradient.argnums, int) else tuple(grads)
    grad_dot = grad_dots[0] if isinstance(gradient.argnums, int) else tuple(grad_dots)
    if gradient.has_aux:  # (the value is (loss, aux), its tangent the pair's or a symbolic zero)
        if backend == "cpu":
            value, value_dot = pytree.from_numba(value), pytree.from_numba(value_dot)
        (value, aux), (value_dot, aux_dot) = value, (None, None) if value_dot is None else value_dot
        aux_dot = _zeros_like(aux) if aux_dot is None else pytree.restructure(aux_dot, aux)
        if gradient.kind == "value_and_grad":
            return ((value, aux), grad), ((0.0 if value_dot is None else value_dot, aux_dot), grad_dot)
        return (grad, aux), (grad_dot, aux_dot)
    if gradient.kind == "value_and_grad":
        return (value, grad), (0.0 if value_dot is None else value_dot, grad_dot)
    return grad, grad_dot


def _zeros_like(tree):
    leaves, structure = pytree.flatten(tree)
    return pytree.unflatten(structure, [np.zeros_like(leaf) if isinstance(leaf, np.ndarray)
                                        else type(leaf)(0) for leaf in leaves])
