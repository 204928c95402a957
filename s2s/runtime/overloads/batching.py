"""Overloads of the batching (vmap) helpers."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from ... import runtime as rt
from .common import _is_none, _scalar


@overload(rt.batch_example)
def _batch_example(value, first):
    if isinstance(value, (types.BaseTuple, types.List)):
        raise TypingError("s2s: vmap: a vmapped function returns one array or number per example, not a tuple")
    if _is_none(first):
        return lambda value, first: value
    if _scalar(value) and _scalar(first):
        return lambda value, first: value
    if isinstance(value, types.Array) and isinstance(first, types.Array) and value.ndim == first.ndim:
        def impl(value, first):
            if value.shape != first.shape:
                raise ValueError("s2s: vmap: the examples' outputs have different shapes")
            return value
        return impl

    def mismatch(value, first):
        raise ValueError("s2s: vmap: the examples' outputs have different shapes")
        return value
    return mismatch


@overload(rt.batch_store)
def _batch_store(out, b, value):
    if isinstance(value, types.Array) and value.ndim == out.ndim - 1:
        def impl(out, b, value):
            if value.shape != out.shape[1:]:
                return True
            out[b] = value
            return False
        return impl
    if _scalar(value) and out.ndim == 1:
        def store(out, b, value):
            out[b] = value
            return False
        return store
    return lambda out, b, value: True


@overload(rt.check_batch)
def _check_batch(mismatch):
    def impl(mismatch):
        for k in range(mismatch.shape[0]):
            if mismatch[k]:
                raise ValueError("s2s: vmap: an example's output does not have the first example's shape")
    return impl


@overload(rt.batch_empty)
def _batch_empty(n, example):
    if isinstance(example, types.Array):
        return lambda n, example: np.empty((n,) + example.shape, example.dtype)
    if _scalar(example):
        dtype = example

        return lambda n, example: np.empty(n, dtype)
    raise TypingError("s2s: vmap stacks arrays and numbers, not " + str(example))


@overload(rt.zeros_row)
def _zeros_row(xs):
    if isinstance(xs, types.Array):
        dtype = xs.dtype if isinstance(xs.dtype, types.Float) else types.float64
        if xs.ndim == 1:
            return lambda xs: dtype(0)
        return lambda xs: np.zeros(xs.shape[1:], dtype)
