"""Batching (vmap): the batch on the last axis, and the batched products and shapes."""

from __future__ import annotations

import numpy as np

from .. import random as R
from ..errors import S2SError
from .values import fits_dtype, unbroadcast


def batch_empty(n, example):
    """An uninitialised stack of n values shaped and typed like example (batch axis first)."""
    example = np.asarray(example)
    return np.empty((n,) + example.shape, example.dtype)


def zeros_row(xs):
    """A row of xs (xs[0]'s shape and float dtype) made of zeros, for an xs with no rows: the
    step of a scan of length 0 that gives its outputs' shapes (the step's results are dropped)."""
    xs = np.asarray(xs)
    dtype = xs.dtype if np.issubdtype(xs.dtype, np.inexact) else np.float64
    return np.zeros(xs.shape[1:], dtype) if xs.ndim > 1 else dtype.type(0)


def batch_example(value, first):
    """One example's output of a vmapped function, checked against the first example's: the
    outputs are stacked, so they must be arrays or numbers of one shape (as JAX requires)."""
    if isinstance(value, (tuple, list, dict)):
        raise ValueError("s2s: vmap: inside another transform, a vmapped function returns one array "
                         "or number per example, not a tuple")
    if first is not None and np.shape(value) != np.shape(first):
        raise ValueError(f"s2s: vmap: an example's output has shape {np.shape(value)}, "
                         f"the first example's {np.shape(first)}")
    if first is not None and not fits_dtype(value, np.asarray(first).dtype):
        raise ValueError(_wider(np.result_type(value), np.asarray(first).dtype, "an example's"))
    return value


def _wider(dtype, first, which: str) -> str:
    return (f"s2s: vmap: {which} output is {dtype}, wider than the first example's {first}, the dtype "
            f"of the stack (it would be cut): make every example return one dtype (0.0, not 0), or "
            f"use s2s.jit (Numba gives all examples one type)")


def batch_store(out, b, value):
    """out[b] = value, unless value's shape is not the stacked one: then True, and nothing is
    stored. (Raising inside a parallel loop is not reliable under Numba; the driver raises
    after the loop, in check_batch.)"""
    if np.shape(value) != np.shape(out)[1:]:
        return True
    if not fits_dtype(value, out.dtype):  # (only the python backend runs this: Numba types every example alike)
        raise ValueError(_wider(np.result_type(value), out.dtype, f"example {b}'s"))
    out[b] = value
    return False


def kernel_number(out, value):
    """value, as a CUDA kernel stores it in out[b]: refused where out's dtype (the probe's first
    example's) would cut it (a function that returns 0 on one branch and a float on another).
    A float stored in a narrower float is kept: numba-cuda computes a float32 example's
    `max(s - 1.0, 0.0)` in float64 where NumPy, and out, keep float32."""
    if not fits_dtype(value, out.dtype, "same_kind"):
        raise S2SError(KERNEL_NUMBER.format(value=np.result_type(value), out=out.dtype))
    return value


KERNEL_NUMBER = ("backend='cuda': an example's output is {value}, wider than the first example's {out}, the dtype of "
                 "the kernel's output array (it would be cut): make every example return one dtype (0.0, not 0)")


def check_batch(mismatch):
    if np.any(mismatch):
        raise ValueError(f"s2s: vmap: example {int(np.argmax(mismatch))}'s output does not have the "
                         "first example's shape")


# Vectorised batching (transforms/vectorize.py) keeps the batch on the LAST axis. These helpers serve
# only the python backend (s2s.jit batches by a parallel loop instead), so they have no
# Numba overloads.


def lift(w):
    """An unbatched operand of a batched operation: a trailing axis of length one (None, np.clip's
    missing bound, stays None)."""
    return None if w is None else np.asarray(w)[..., None]


def batch_size(v):
    """The batch size n of a batched value: its last axis; a batched dict, list or tuple (a
    callee's parameter) holds batched items."""
    while isinstance(v, (dict, list, tuple)):
        v = next(iter(v.values())) if isinstance(v, dict) else v[0]
    return np.shape(v)[-1]


def batch_broadcast(v, n):
    """v, the same for every example, as a writable batch of n copies (a dict or list: a dict or
    list of them, which `d[k] = value` then fills as the function's own; np.asarray would make
    it one array, whose rows take no item of another shape)."""
    if isinstance(v, dict):
        return {k: batch_broadcast(item, n) for k, item in v.items()}
    if isinstance(v, list):
        return [batch_broadcast(item, n) for item in v]
    v = np.asarray(v)
    return np.repeat(v[..., None], n, axis=-1)


def fresh_containers(v):
    """v with new lists and dicts (its arrays and numbers shared): one example's own copy of an
    argument that all examples are passed, which the function may append to (the loop driver)."""
    if isinstance(v, list):
        return [fresh_containers(item) for item in v]
    if type(v) is dict:
        return {k: fresh_containers(item) for k, item in v.items()}
    if type(v) is tuple and any(isinstance(item, (list, dict, tuple)) for item in v):
        return tuple(fresh_containers(item) for item in v)
    return v


def example_shape(x):
    return np.shape(x)[:-1]


def example_ndim(x):
    return np.ndim(x) - 1


def example_size(x):
    return int(np.prod(np.shape(x)[:-1]))


def example_len(x):
    if isinstance(x, (list, tuple, dict)):  # a list of batched arrays (of any shapes): its items
        return len(x)
    if np.ndim(x) < 2:
        raise TypeError("len() of a number")
    return np.shape(x)[0]


def example_axes(x):
    """Every per-example axis: a reduction with axis=None, per example."""
    return tuple(range(np.ndim(x) - 1))


def batched_transpose(x, axes=None):
    last = np.ndim(x) - 1
    axes = tuple(reversed(range(last))) if axes is None else tuple(a % last for a in axes)
    return np.transpose(x, axes + (last,))


def batched_reshape(x, shape):
    """Per-example reshape: with the batch innermost, C order keeps each example's elements."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return np.reshape(x, shape + (np.shape(x)[-1],))


def _batched_items(items, n, batched):
    return [np.asarray(v) if b else batch_broadcast(v, n) for v, b in zip(items, batched)]


def batched_concatenate(items, axis, n, batched):
    return np.concatenate(_batched_items(items, n, batched), axis=axis)


def batched_stack(items, axis, n, batched):
    return np.stack(_batched_items(items, n, batched), axis=axis)


def batched_array(items, n, batched):
    """np.array of a tuple of per-example values, some batched; an item flagged by a tuple is a
    display in turn (np.array([[x, 1.0], [0.0, x]]))."""
    return np.array([batched_array(v, n, b) if isinstance(b, tuple) else np.asarray(v) if b else batch_broadcast(v, n)
                     for v, b in zip(items, batched)])


# Products of two per-example operands, batched on the last axis: one einsum whose
# subscripts give each example's product, with the batch letter z on the batched operands
# and the result. NumPy's four products differ beyond two dimensions: matmul broadcasts its
# leading axes ("..."), dot contracts a's last axis with b's second-to-last, inner contracts
# the last axes, outer multiplies the flattened operands.
PRODUCTS = ("matmul", "dot", "inner", "outer")


def _product_specs(kind, da, db, a_batched, b_batched):
    """einsum subscripts (a, b, result) of the batched product of da- and db-dimensional examples."""
    if kind == "outer":
        sa, sb, so = "i", "j", "ij"
    elif kind == "matmul" or da <= 2 and db <= 2 and kind == "dot":
        lead = "..." if da > 2 or db > 2 else ""
        sa = "j" if da == 1 else lead + "ij"
        sb = "j" if db == 1 else lead + "jk"
        so = (lead if da >= 2 or db >= 2 else "") + ("i" if da >= 2 else "") + ("k" if db >= 2 else "")
    else:  # dot beyond two dimensions, and inner: the contracted letter is j
        a_rest, b_rest = "abcdef"[: da - 1], "pqrstu"[: max(db - 1, 0)]
        sa = a_rest + "j"
        if kind == "inner":
            sb = b_rest + "j"
            so = a_rest + b_rest
        else:
            sb = b_rest[:-1] + "j" + b_rest[-1:] if db >= 2 else "j"
            so = a_rest + b_rest
    return sa + "z" * a_batched, sb + "z" * b_batched, so + "z" * (a_batched or b_batched)


def _product_operands(kind, a, b, a_batched, b_batched):
    """The operands as the einsum sees them (outer flattens each example) and their example ndims."""
    if kind == "outer":
        a = np.reshape(a, (-1, np.shape(a)[-1])) if a_batched else np.ravel(a)
        b = np.reshape(b, (-1, np.shape(b)[-1])) if b_batched else np.ravel(b)
    return a, b, np.ndim(a) - a_batched, np.ndim(b) - b_batched


def batched_product(kind, a, b, a_batched, b_batched):
    """np.matmul, np.dot, np.inner or np.outer (kind) of a and b for each example; batch last."""
    a, b, da, db = _product_operands(kind, a, b, a_batched, b_batched)
    if da == 0 or db == 0:
        return (a if a_batched else lift(a)) * (b if b_batched else lift(b))
    sa, sb, so = _product_specs(kind, da, db, a_batched, b_batched)
    return np.einsum(f"{sa},{sb}->{so}", a, b)


def batched_product_bar_a(g, kind, a, b, a_batched, b_batched):
    """The adjoint of a in batched_product(kind, a, b, ...), from the result's adjoint g."""
    shape = np.shape(a)
    a, b, da, db = _product_operands(kind, a, b, a_batched, b_batched)
    if da == 0 or db == 0:
        product = g * (b if b_batched else lift(b))
        return unbroadcast(product, a if a_batched else lift(a)).reshape(shape)
    sa, sb, so = _product_specs(kind, da, db, a_batched, b_batched)
    return unbroadcast(np.einsum(f"{so},{sb}->{_with_lead(sa, so)}", g, b), a).reshape(shape)


def batched_product_bar_b(g, kind, a, b, a_batched, b_batched):
    """The adjoint of b in batched_product(kind, a, b, ...), from the result's adjoint g."""
    shape = np.shape(b)
    a, b, da, db = _product_operands(kind, a, b, a_batched, b_batched)
    if da == 0 or db == 0:
        product = g * (a if a_batched else lift(a))
        return unbroadcast(product, b if b_batched else lift(b)).reshape(shape)
    sa, sb, so = _product_specs(kind, da, db, a_batched, b_batched)
    return unbroadcast(np.einsum(f"{so},{sa}->{_with_lead(sb, so)}", g, a), b).reshape(shape)


def _with_lead(spec, result_spec):
    """An operand's subscripts in its adjoint's einsum: matmul's broadcast leading axes come
    back at their broadcast size (unbroadcast then sums them), even for a 1-D operand."""
    return "..." + spec if "..." in result_spec and "..." not in spec else spec


def batched_transpose_bar(g, axes=None):
    last = np.ndim(g) - 1
    axes = tuple(reversed(range(last))) if axes is None else tuple(a % last for a in axes)
    return np.transpose(g, tuple(np.argsort(axes)) + (last,))


def random_per_example(draw, batched, *args, **kwargs):
    """draw(*args, **kwargs) of s2s.random for each example, stacked on the last axis, where
    transforms/vectorize.py carries the batch: the arguments flagged in `batched` (a key, the data
    of fold_in, bernoulli's p) are indexed [..., b] for example b. So a batch of keys gives what
    calling per key gives, as JAX's vmap of jax.random does. Where only the keys differ (and
    fold_in's data), the draw hashes the counters under all keys at once (_all_keys_at_once);
    otherwise it is called per example. Python only: under s2s.jit, vmap loops over the
    examples and each calls the function itself."""
    n = next(np.shape(a)[-1] for a, flag in zip(args, batched) if flag)
    drawn = _all_keys_at_once(draw, batched, n, args, kwargs)
    if drawn is not None:
        return drawn
    return np.stack([np.asarray(draw(*(a[..., b] if flag else a for a, flag in zip(args, batched)), **kwargs))
                     for b in range(n)], axis=-1)


def _all_keys_at_once(draw, batched, n, args, kwargs):
    """The draw for n keys by s2s.random's private form of it, which takes a batch of keys
    (shape (n, 2)) and hashes each counter under all of them in one pass: key b's numbers are
    those draw gives for it. None where another argument than the key differs between examples,
    or where the key is not a batch of uint32 keys (the call per example then says what is wrong)."""
    batch_form = {R.split: R._split, R.fold_in: R._fold_in, R.bits: R._bits, R.uniform: R._uniform,
                  R.normal: R._normal, R.exponential: R._exponential, R.truncated_normal: R._truncated_normal,
                  R.bernoulli: R._bernoulli, R.randint: R._randint, R.categorical: R._categorical,
                  R.permutation: R._permutation}.get(draw)
    if batch_form is None or not args or any(batched[2 if draw is R.fold_in else 1:]):
        return None
    key = np.asarray(args[0])
    if key.dtype != np.uint32 or key.shape != ((2, n) if batched[0] else (2,)):
        return None
    keys = np.ascontiguousarray(key.T) if batched[0] else np.broadcast_to(key, (n, 2))
    rest = list(args[1:])
    if draw is R.fold_in:
        data = np.asarray(rest[0])
        if data.dtype.kind not in "iu" or data.shape != ((n,) if batched[1] else ()):
            return None
    out = batch_form(keys, *rest, **kwargs)  # (n, *shape)
    return np.ascontiguousarray(np.moveaxis(out, 0, -1))
