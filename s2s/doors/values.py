"""Values the doors build and hand back around generated code: tangents of zeros, basis
vectors, private copies of arguments, and results in the dtypes NumPy would give."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..tree_util import pytree


def zero_tangent(tree: Any) -> Any:
    """A tangent of zeros with the structure of tree: float arrays for arrays, 0.0 for numbers."""
    if isinstance(tree, dict):
        return {k: zero_tangent(tree[k]) for k in tree}
    if isinstance(tree, (tuple, list)):
        items = [zero_tangent(x) for x in tree]
        return type(tree)(*items) if pytree.is_namedtuple(tree) else type(tree)(items)
    if isinstance(tree, np.ndarray):
        return np.zeros(tree.shape, np.result_type(tree.dtype, np.float32))
    return 0.0


def scalar_like(tangent, primal):
    """The tangent of a number as a number: Numba types a 0-d array and a float differently,
    and the generated code adds them (s_dot = s0_dot, then s_dot * ...)."""
    if not isinstance(primal, np.ndarray) and isinstance(tangent, np.ndarray) and tangent.ndim == 0:
        return tangent.item()
    if isinstance(primal, (tuple, list)) and isinstance(tangent, (tuple, list)) and len(primal) == len(tangent):
        return type(tangent)(*(scalar_like(t, p) for t, p in zip(tangent, primal))) if pytree.is_namedtuple(
            tangent) else type(tangent)(scalar_like(t, p) for t, p in zip(tangent, primal))
    return tangent


def tangent_in_primal_dtype(out, out_dot):
    """The tangent of a float32 output as float32, as JAX gives it: a rule's weights (the
    comparisons of np.maximum's, 1.0 - (y > x)) are float64 arrays, which promote the tangent.
    Only a float64 tangent of a float32 leaf changes; the structure is the output's."""
    primal_leaves, structure = pytree.flatten(out)
    tangent_leaves, tangent_structure = pytree.flatten(out_dot)
    if structure != tangent_structure:
        return out_dot
    single = np.dtype(np.float32)
    changed = [np.asarray(t, np.float32) if isinstance(p, np.ndarray) and p.dtype == single
               and isinstance(t, np.ndarray) and t.dtype == np.float64
               else np.float32(t) if isinstance(p, np.float32) and isinstance(t, (float, np.float64)) else t
               for p, t in zip(primal_leaves, tangent_leaves)]
    return pytree.unflatten(structure, changed)


def in_dtype(jacobian, argument):
    """float32 in, float32 out, as grad does (the columns are computed in float64)."""
    dtypes = {np.asarray(leaf).dtype for leaf in pytree.leaves(argument)}
    if dtypes != {np.dtype(np.float32)}:
        return jacobian
    leaves, structure = pytree.flatten(jacobian)
    return pytree.unflatten(structure, [np.asarray(leaf, np.float32) for leaf in leaves])


def unit_leaves(leaves: list, which: int, element: int) -> list:
    """Zeros shaped like leaves, with a one at `element` of leaf `which` (a basis vector)."""
    out = [np.zeros(np.shape(leaf)) if np.ndim(leaf) else 0.0 for leaf in leaves]
    if np.ndim(leaves[which]):
        out[which].reshape(-1)[element] = 1.0
    else:
        out[which] = 1.0
    return out


def private_copies(args):
    """Jacobians run the user's function as it is (for output shapes): on copies, so that an
    in-place update inside it cannot reach the caller's arrays."""
    return tuple(copy.deepcopy(a) for a in args)


def numpy_scalar(value, args, dispatcher=None, call_args=(), whole=False):
    """Numba returns a float32 number as a Python float: NumPy's value of float32 arguments is
    an np.float32 (what the python backend returns), unless the function promotes it to float64
    (by an np.float64 constant: the compiled function's return type says). whole: the compiled
    function returns the value itself (s2s.jit(f)), not (value, adjoints) (a vjp)."""
    if isinstance(value, float):
        dtypes = {np.asarray(leaf).dtype for leaf in pytree.leaves(args)
                  if isinstance(leaf, (np.ndarray, np.floating))} & {np.dtype(np.float32), np.dtype(np.float64)}
        if dtypes == {np.dtype(np.float32)}:
            return np.float64(value) if _returns_float64(dispatcher, call_args, whole) else np.float32(value)
    return value


def _returns_float64(dispatcher, call_args, whole: bool) -> bool:
    """Whether the function compiled for these arguments returns its value as a float64."""
    try:
        compiled = dispatcher.overloads[tuple(dispatcher.typeof_pyval(a) for a in call_args)]
        returned = compiled.signature.return_type
        return str(returned if whole else returned[0]) == "float64"
    except (AttributeError, KeyError, TypeError, IndexError):  # no dispatcher, or not this signature
        return False
