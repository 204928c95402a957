"""Control flow as JAX users write it: `s2s.lax.cond`, `switch`, `fori_loop`, `while_loop`, `scan`,
`select` and `stop_gradient`; JAX's dynamic slices (`dynamic_slice`, `dynamic_update_slice` and their
`_in_dim` / `_index_in_dim` forms, start indices taken as JAX takes them: primitives with rules,
runtime/arrays.py); and the collectives of s2s.pmap: `psum`, `pmean`, `pmax`, `pmin`,
`all_gather` and `axis_index`.

Called as they are, these run as plain Python and NumPy with JAX's semantics. Inside a function
that s2s transforms (grad, jvp, vjp, hessian, vmap, jit), the frontend (frontend/lax_forms.py)
writes each call out as the native `if`, `for` or `while` it stands for, with the body of the
lambda or nested `def` inlined, so that it is differentiated, batched and compiled like the
user's own loops. So code written for JAX runs with `import numpy as jnp` and `import s2s as jax`.

The collectives run only where s2s.pmap runs a shard (doors/pmap.py) as Python on its thread:
they meet the other shards of the named axis there (collectives.py). A function that s2s
transforms cannot call them (the frontend refuses it at the call, with the way out).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .collectives import COLLECTIVES, all_gather, axis_index, pmax, pmean, pmin, psum  # noqa: F401 (COLLECTIVES: the frontend's fence)
from ..runtime import (  # noqa: F401 (s2s.lax's dynamic slices are the runtime helpers their rules name)
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    stop_gradient,
)
from ..tree_util import tree_map

__all__ = ["cond", "switch", "fori_loop", "while_loop", "scan", "select", "stop_gradient",
           "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
           "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
           "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]


class _NoOperand:
    """The default of `operand=`: JAX's older spelling of a single operand, kept by its cond and switch."""

    def __repr__(self) -> str:
        return "<no operand>"


NO_OPERAND = _NoOperand()


def operands_of(form: str, operands: tuple, operand: Any) -> tuple:
    """The operands of cond or switch, from `*operands` or JAX's keyword `operand=` (not both)."""
    if operand is NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"s2s.lax.{form}: pass the operands positionally or as operand=, not both")
    return (operand,)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = NO_OPERAND) -> Any:
    """true_fun(*operands) if pred else false_fun(*operands).

    >>> cond(2.0 > 1.0, lambda x: x + 1.0, lambda x: x - 1.0, 3.0)
    4.0
    >>> cond(False, lambda x: x + 1.0, lambda x: x - 1.0, operand=3.0)
    2.0
    """
    operands = operands_of("cond", operands, operand)
    if np.ndim(pred) != 0:
        raise TypeError(f"s2s.lax.cond: pred must be a scalar, not of shape {np.shape(pred)}")
    return true_fun(*operands) if pred else false_fun(*operands)


def switch(index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = NO_OPERAND) -> Any:
    """branches[index](*operands), with index clamped into range(len(branches)) as in JAX.

    >>> switch(5, [lambda x: x, lambda x: 2 * x], 3.0)
    6.0
    """
    operands = operands_of("switch", operands, operand)
    if not branches:
        raise ValueError("s2s.lax.switch needs at least one branch")
    k = min(max(int(index), 0), len(branches) - 1)
    return branches[k](*operands)


def fori_loop(lower: int, upper: int, body_fun: Callable, init_val: Any, unroll: Any = None) -> Any:
    """val = body_fun(i, val) for i in range(lower, upper); returns val. (unroll, a hint to
    XLA in JAX, is accepted and ignored: Numba compiles the loop.)

    >>> fori_loop(0, 4, lambda i, total: total + i, 0)
    6
    """
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """val = body_fun(val) while cond_fun(val); returns val.

    >>> while_loop(lambda x: x < 10.0, lambda x: 2.0 * x, 1.0)
    16.0
    """
    val = init_val
    while cond_fun(val):
        val = body_fun(val)
    return val


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: Any = 1) -> tuple:
    """carry, y = f(carry, x) over the leading axis of xs; returns (carry, ys stacked).

    xs and the ys may be pytrees (tuple, list, dict) of arrays, or None; with xs None, length
    gives the number of steps. With reverse=True the steps run from the last to the first,
    and ys[i] is still the output of the step that read xs[i]. unroll is accepted and ignored.

    >>> carry, ys = scan(lambda c, x: (c + x, 2 * c), 0.0, np.array([1.0, 2.0, 3.0]))
    >>> float(carry), ys.tolist()
    (6.0, [0.0, 2.0, 6.0])
    """
    leaves = _leaves(xs)
    lengths = {np.shape(leaf)[0] for leaf in leaves}
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"s2s.lax.scan: xs and length give different numbers of steps {sorted(lengths)}")
    n = lengths.pop()
    if n == 0:
        # No steps: the carry as given and empty stacks, shaped by one step on rows of zeros
        # (JAX finds those shapes by tracing the step; its results are dropped here too). The
        # step gets a copy, so that one that writes into the carry leaves init as given.
        _, example = f(tree_map(lambda leaf: leaf.copy() if isinstance(leaf, np.ndarray) else leaf, init),
                       _zero_row(xs))
        return init, _empty_stack(example)
    carry, outputs = init, [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        carry, y = f(carry, _index(xs, i))
        # ys[i] is the output as the step gave it: a copy, as a step that writes into its carry
        # in place and returns it (or a view of it) as y would otherwise leave every row the
        # last step's (the transformed scan writes each row as its step ends, as JAX does)
        outputs[i] = _map(np.array, y)
    return carry, _stack(outputs, n)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Elementwise on_true where pred, else on_false (np.where).

    >>> select(np.array([True, False]), np.array([1.0, 2.0]), np.array([3.0, 4.0])).tolist()
    [1.0, 4.0]
    """
    return np.where(pred, on_true, on_false)


# ---- pytrees of scan's xs and ys ------------------------------------------------------


def _leaves(tree: Any) -> list:
    if tree is None:
        return []
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


def _map(fn: Callable, tree: Any) -> Any:
    """fn of every array of a pytree of dicts, tuples and lists (None stays None)."""
    if tree is None:
        return None
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map(fn, v) for v in tree)
    return fn(tree)


def _index(tree: Any, i: int) -> Any:
    return _map(lambda leaf: leaf[i], tree)


def _zero_row(tree: Any) -> Any:
    """A row of zeros of each array: what a scan of length 0 shows its body to find its outputs."""
    return _map(lambda leaf: np.zeros(np.shape(leaf)[1:], np.asarray(leaf).dtype)[()], tree)


def _empty_stack(example: Any) -> Any:
    """No rows of each of the body's outputs: a scan of length 0 stacks nothing."""
    return _map(lambda leaf: np.zeros((0,) + np.shape(leaf), np.asarray(leaf).dtype), example)


def _stack(outputs: list, n: int) -> Any:
    first = outputs[0] if n else None
    if first is None:
        return None
    if isinstance(first, dict):
        return {k: _stack([o[k] for o in outputs], n) for k in first}
    if isinstance(first, (tuple, list)):
        return type(first)(_stack([o[k] for o in outputs], n) for k in range(len(first)))
    return np.stack([np.asarray(o) for o in outputs])
