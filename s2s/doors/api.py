"""grad, value_and_grad and vjp: the public reverse-mode transforms, as objects with .source
(core.Transformed); grad of a derivative is a second or third derivative (jacobians.py, higher.py)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tree_util import pytree
from ..errors import S2SError, user_facing
from .core import Primal, Transformed, _plain_value, jit
from .higher import refuse_fourth_order, third_order
from .jacobians import Jacobian, SecondOrder, _second_order
from .values import private_copies, zero_tangent
from .shipping import recorded


@recorded
def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
         tape_budget: int | str | None = None):
    """Reverse-mode gradient of a scalar function, as in jax.grad.

    tape_budget: the bytes one loop's tape may take (default s2s.config.s2s_tape_budget, or
    S2S_TAPE_BUDGET; unset, no limit): a `for i in range(n)` loop whose tape would take more is
    checkpointed, at the cost of about one more run of the loop (docs: "Long loops: the tape
    budget").

    >>> import numpy as np, s2s
    >>> def f(x):
    ...     return np.sum(np.sin(x) ** 2)
    >>> float(s2s.grad(f)(np.array([0.5]))[0]) == float(np.sin(1.0))
    True
    """
    if isinstance(fun, Primal):  # grad(jit(f)) is jit(grad(f)), as JAX compiles both
        return jit(grad(fun.fun, argnums, has_aux, tape_budget=tape_budget), backend=fun.backend)
    if tape_budget is not None and isinstance(fun, (Transformed, Jacobian, SecondOrder)):
        raise S2SError("tape_budget is taken by a first derivative (grad, value_and_grad, vjp of the function "
                       "itself)", hint="set s2s.config.update('s2s_tape_budget', ...) for derivatives of derivatives")
    if isinstance(fun, Transformed) and fun.kind == "grad" and not fun.has_aux and not has_aux:
        return _second_order(fun, argnums, scalar=True)
    if isinstance(fun, Jacobian) and not fun.has_aux and not has_aux:
        return _second_order(fun, argnums, scalar=True)  # grad(jacfwd(f)) of a function of a number
    if isinstance(fun, SecondOrder):  # grad(grad(grad(f))), grad(hessian(f)) of a number
        return third_order(fun, argnums, scalar=True, has_aux=has_aux)
    refuse_fourth_order(fun, "grad")
    return Transformed(fun, "grad", argnums, has_aux, tape_budget=tape_budget)


@recorded
def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
                   tape_budget: int | str | None = None) -> Transformed:
    """Like grad, but also returns the value: (value, grad) or ((value, aux), grad). tape_budget: as grad's."""
    if isinstance(fun, Primal):
        return jit(value_and_grad(fun.fun, argnums, has_aux, tape_budget=tape_budget), backend=fun.backend)
    return Transformed(fun, "value_and_grad", argnums, has_aux, tape_budget=tape_budget)


@user_facing
def vjp(fun: Callable, *primals, has_aux: bool = False, tape_budget: int | str | None = None):
    """(out, vjp_fun): vjp_fun(cotangent) returns a tuple with one adjoint per primal.

    The generated code runs the forward sweep again on each call of vjp_fun. tape_budget: as grad's.
    """
    argnums = tuple(range(len(primals)))
    transformed = Transformed(fun, "vjp", argnums, has_aux, tape_budget=tape_budget)
    transformed = transformed.for_arguments(transformed._bind(primals, {}))  # (static values: core.StaticSiblings)
    for k, primal in enumerate(primals):
        if any(pytree.is_integer_leaf(leaf) for leaf in pytree.leaves(primal)):
            raise S2SError(f"vjp: argument {k} of {fun.__name__} holds integers",
                           hint="pass floats, or close over integer arguments in a wrapper")
    # (transformed.fun: the function as s2s takes it, np.row_stack as the call of it)
    out = _plain_value(transformed.fun, private_copies(transformed._bind(primals, {})))  # (copies: it may write into them)
    if transformed.generated()[1].get("by_rule"):
        # An s2s.custom_vjp or custom_jvp gives its value by its rule where it is differentiated
        # (fwd's value may be a stabler form than the body's), as jax.vjp's primal output does.
        zero = zero_tangent(out[0] if has_aux else out)
        out = transformed._vjp_function()(*transformed._call_args(transformed._bind(primals, {})), zero)[0]

    @user_facing
    def vjp_fun(cotangent):
        _check_cotangent(cotangent, out[0] if has_aux else out, fun)
        # (with the defaults of the parameters the call leaves out: generated code takes them all,
        # the cotangent last; their adjoints are dropped, as jax.vjp returns one per primal)
        bound = transformed._bind(primals, {})
        _, grads = transformed._vjp_function()(*transformed._call_args(bound), cotangent)
        return transformed._user_grads(grads, bound)

    vjp_fun.source = transformed.source
    if has_aux:
        return out[0], vjp_fun, out[1]
    return out, vjp_fun


def _describe_tree(tree) -> str:
    if tree[0] == "leaf":
        return "an array or number"
    if tree[0] == "dict":
        return f"a dict with keys {tree[1]}"
    return f"a {tree[1].__name__} of {len(tree[2])}"


def _check_cotangent(cotangent: Any, out: Any, fun: Callable) -> None:
    """A cotangent has its output's structure, shapes and float dtypes, as JAX requires: a
    number for a (3,) output would otherwise be broadcast silently."""
    out_leaves, out_tree = pytree.flatten(out)
    ct_leaves, ct_tree = pytree.flatten(cotangent)
    name = getattr(fun, "__name__", "the function")
    if ct_tree != out_tree:
        raise S2SError(f"vjp of {name}: the cotangent is {_describe_tree(ct_tree)}, the output "
                       f"{_describe_tree(out_tree)}",
                       hint="pass a cotangent shaped like the output")
    for k, (c, o) in enumerate(zip(ct_leaves, out_leaves)):
        where = f" (leaf {k})" if len(out_leaves) > 1 else ""
        if np.shape(c) != np.shape(o):
            raise S2SError(f"vjp of {name}: the cotangent{where} has shape {np.shape(c)}, the output {np.shape(o)}",
                           hint="pass a cotangent of the output's shape")
        c_dtype = np.asarray(c).dtype
        if c_dtype.kind not in "fc" or isinstance(c, np.ndarray) and np.asarray(o).dtype.kind in "fc" \
                and c_dtype != np.asarray(o).dtype:
            raise S2SError(f"vjp of {name}: the cotangent{where} has dtype {c_dtype}, the output "
                           f"{np.asarray(o).dtype}", hint="pass a cotangent of the output's float dtype")
