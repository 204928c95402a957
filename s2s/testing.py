"""check_grads: derivatives checked against finite differences, never against themselves."""

from __future__ import annotations

import copy

from typing import Any, Callable, Sequence

import numpy as np

from .tree_util import pytree
from .errors import S2SError
from .doors.api import grad
from .doors.core import ForwardTransformed, Transformed, call_bound, jit, refuse_star_args
from .doors.jacobians import hessian
from .frontend import static_values


def _float_tree_like(tree: Any, rng: np.random.Generator) -> Any:
    if isinstance(tree, dict):
        return {k: _float_tree_like(tree[k], rng) for k in tree}
    if isinstance(tree, (tuple, list)):
        items = [_float_tree_like(x, rng) for x in tree]
        return type(tree)(*items) if pytree.is_namedtuple(tree) else type(tree)(items)
    if isinstance(tree, np.ndarray):
        return rng.standard_normal(tree.shape).astype(tree.dtype)
    return float(rng.standard_normal())


def _axpy(a: float, x: Any, y: Any) -> Any:
    """a * x + y over matching trees."""
    if isinstance(y, dict):
        return {k: _axpy(a, x[k], y[k]) for k in y}
    if isinstance(y, (tuple, list)):
        items = [_axpy(a, xi, yi) for xi, yi in zip(x, y)]
        return type(y)(*items) if pytree.is_namedtuple(y) else type(y)(items)
    return a * x + y


def _evaluate(fun: Callable, args, bound: bool = False) -> Any:
    """fun on copies of args: a function that writes into an argument must not change the
    point the derivatives are checked at. bound: args as generated code takes them (keyword-only
    parameters by position: core.call_bound)."""
    if bound:
        return call_bound(fun, copy.deepcopy(list(args)))
    return fun(*copy.deepcopy(list(args)))


def _vdot(x: Any, y: Any) -> float:
    return float(sum(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64))
                     for a, b in zip(pytree.leaves(x), pytree.leaves(y))))


def check_grads(fun: Callable, args: Sequence[Any], order: int = 1, modes: Sequence[str] = ("fwd", "rev"),
                argnums: Sequence[int] | None = None, eps: float = 1e-6, rtol: float = 1e-5,
                atol: float = 1e-6, backend: str = "python", seed: int = 0) -> None:
    """Check the derivatives of fun at args; raise AssertionError where they disagree.

    rev: the vjp is checked by the identity <u, J v> = <J^T u, v>, with J v from central
    finite differences in float64 along a random direction v and a random cotangent u.
    fwd: the jvp J v against the same finite difference.
    order=2 (scalar functions) also checks the Hessian, forward over reverse, against central
    differences of the gradient.
    backend="cpu" checks the compiled modules that s2s.jvp and s2s.jit(s2s.grad(f)) run,
    which are specialised to the arguments' kinds (numbers, arrays and their ndim).
    """
    if order not in (1, 2):
        raise S2SError("check_grads checks first and second derivatives (order=1 or 2)")
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}")
    refuse_star_args(fun, "check_grads")  # (its argnums would count into *args's tuple)
    args = list(args)
    if argnums is None:
        argnums = [k for k, a in enumerate(args)
                   if not any(pytree.is_integer_leaf(leaf) for leaf in pytree.leaves(a))]
    argnums = tuple(argnums)
    rng = np.random.default_rng(seed)
    direction = {k: _float_tree_like(args[k], rng) for k in argnums}
    # The code checked is the code s2s.grad and s2s.jvp run for this call: a copy of fun that carries
    # its static values and, where fun tests types (`if isinstance(x, dict):`), its arguments' types.
    fun = static_values.specialised(fun, tuple(Transformed(fun, "vjp", argnums)._bind(tuple(args), {}, argnums)))

    def shifted(step: float):
        moved = list(args)
        for k in argnums:
            moved[k] = _axpy(step, direction[k], args[k])
        return _evaluate(fun, moved)

    out = _evaluate(fun, args)
    jv = _axpy(-1.0, shifted(-eps), shifted(eps))
    jv = [np.asarray(a, np.float64) / (2 * eps) for a in pytree.leaves(jv)]
    if "fwd" in modes:
        # Tangents for the arguments checked; the others' are symbolic zeros, as constants are.
        forward = ForwardTransformed(fun, backend, active=argnums)
        primals = tuple(Transformed(fun, "vjp", argnums)._bind(tuple(args), {}, argnums))  # defaults filled in
        given = primals + tuple(direction[k] for k in argnums)
        call = forward.call_args(given)
        # On the cpu backend, the module s2s.jvp compiles: specialised to the arguments' kinds.
        entry = forward.specialised_entry(call, given) if backend == "cpu" else forward.entry()
        value, tangent = entry(*call)
        for got, want in zip(pytree.leaves(value), pytree.leaves(out)):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg="primal value differs")
        for got, want in zip(pytree.leaves(tangent), jv):
            scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
            if not np.allclose(got, want, rtol=rtol * 10, atol=atol + rtol * scale * 10):
                raise AssertionError(
                    f"forward mode of {fun.__name__} disagrees with finite differences: "
                    f"J v = {want!r} by finite differences, {got!r} by s2s")
    if "rev" in modes:
        _check_reverse(fun, args, argnums, direction, out, jv, rng, backend, rtol, atol)
    if order == 2:
        if np.ndim(out) != 0:
            raise S2SError("check_grads(order=2) takes functions with a scalar output")
        _check_second_order(fun, args, argnums, eps, rtol, atol, backend)


def _check_second_order(fun, args, argnums, eps, rtol, atol, backend):
    """The Hessian (forward over reverse) against central differences of the gradient,
    which the first-order check has verified; for float and array arguments."""
    for k in argnums:
        x = args[k]
        if not isinstance(x, (float, np.floating, np.ndarray)):
            continue
        H = jit(hessian(fun, argnums=k), backend=backend)(*args)
        g = grad(fun, argnums=k)
        flat = np.asarray(x, dtype=np.float64).ravel()
        for i in range(flat.size):
            step = np.zeros(flat.size)
            step[i] = eps
            moved = [list(args), list(args)]
            moved[0][k] = (flat + step).reshape(np.shape(x)) if np.ndim(x) else float(flat[0] + eps)
            moved[1][k] = (flat - step).reshape(np.shape(x)) if np.ndim(x) else float(flat[0] - eps)
            column = (np.asarray(g(*moved[0])) - np.asarray(g(*moved[1]))) / (2 * eps)
            got = np.asarray(H).reshape(np.shape(x) + (flat.size,))[..., i] if np.ndim(x) else H
            scale = max(1.0, float(np.max(np.abs(column))))
            if not np.allclose(got, column, rtol=rtol * 10, atol=atol + rtol * scale * 10):
                raise AssertionError(
                    f"second derivative of {fun.__name__} with respect to argument {k} disagrees with "
                    f"finite differences of its gradient: column {i} is {got!r} by s2s, {column!r} by "
                    "finite differences")


def _check_reverse(fun, args, argnums, direction, out, jv, rng, backend, rtol, atol):
    cotangent = _float_tree_like(out, rng)
    transformed = Transformed(fun, "vjp", argnums, backend=backend)
    args = list(transformed._bind(tuple(args), {}, tuple(argnums)))  # defaults filled in
    # A scalar output's cotangent is a number: on the cpu backend, check the module that
    # s2s.jit(s2s.grad(f)) compiles, specialised to the arguments' kinds.
    specialised = backend == "cpu" and isinstance(cotangent, float)
    vjp_function = transformed._specialised_vjp(args) if specialised else transformed._vjp_function()
    value, adjoints = vjp_function(*transformed._call_args(args), cotangent)
    for got, want in zip(pytree.leaves(value), pytree.leaves(out)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg="primal value differs")
    lhs = _vdot(cotangent, jv)
    # An array unpacked as `a, b = x` has a tuple adjoint; give it x's structure, as grad does.
    rhs = sum(_vdot(pytree.restructure(adjoints[i], args[k]), direction[k]) for i, k in enumerate(argnums))
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= atol + rtol * scale * 10:
        raise AssertionError(
            f"reverse mode of {fun.__name__} disagrees with finite differences: "
            f"<u, J v> = {lhs!r} by finite differences, <J^T u, v> = {rhs!r} by s2s")
    _check_reverse_components(fun, args, argnums, cotangent, adjoints, eps=1e-6, rtol=rtol, atol=atol)


def _check_reverse_components(fun, args, argnums, cotangent, adjoints, eps, rtol, atol, limit=40):
    """One random projection can hide an error in one component of a large gradient under
    its tolerance; where the differentiated inputs hold at most `limit` numbers, each
    component of J^T u is checked against a central difference of <u, f> too."""
    structures = {k: pytree.flatten(args[k]) for k in argnums}
    if sum(int(np.size(leaf)) for leaves, _ in structures.values() for leaf in leaves) > limit:
        return
    for i, k in enumerate(argnums):
        leaves, structure = structures[k]
        adjoint_leaves = pytree.leaves(pytree.restructure(adjoints[i], args[k]))
        for j, leaf in enumerate(leaves):
            for index in np.ndindex(np.shape(leaf)):
                projected = []
                for step in (eps, -eps):
                    moved_leaves = list(leaves)
                    if isinstance(leaf, np.ndarray):
                        moved = np.array(leaf, dtype=np.result_type(leaf.dtype, np.float64))
                        moved[index] += step
                        moved_leaves[j] = moved.astype(leaf.dtype)
                    else:
                        moved_leaves[j] = float(leaf) + step
                    moved_args = list(args)
                    moved_args[k] = pytree.unflatten(structure, moved_leaves)
                    projected.append(_vdot(cotangent, _evaluate(fun, moved_args, bound=True)))
                want = (projected[0] - projected[1]) / (2 * eps)
                got = float(np.asarray(adjoint_leaves[j], np.float64)[index])
                if not abs(got - want) <= atol + rtol * 10 * max(1.0, abs(want)):
                    raise AssertionError(
                        f"reverse mode of {fun.__name__} disagrees with finite differences in component "
                        f"{index} of leaf {j} of argument {k}: {got!r} by s2s, {want!r} by finite differences")
