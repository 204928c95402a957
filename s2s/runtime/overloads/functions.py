"""Overloads of the helpers of np.polyval
(runtime/functions.py). A number and an array take code of their own (Numba types them apart);
options the rules refuse (np.interp's left, right, period) are refused when Numba compiles."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from ... import runtime as rt
from .common import _scalar

# ---- np.polyval --------------------------------------------------------------------


def _coefficients(p):
    """p: a 1-d array, or a tuple or list of numbers (a display written in the call)."""
    if isinstance(p, types.Array) and p.ndim == 1:
        return
    if isinstance(p, (types.UniTuple, types.List)) and isinstance(p.dtype, (types.Number, types.Boolean)):
        return
    raise TypingError("s2s: under jit, np.polyval takes its coefficients p as a 1-d array (or a tuple or list "
                      "of numbers)")


@overload(rt.polyval)
def _polyval(p, x):
    _coefficients(p)
    if _scalar(x):
        def impl(p, x):
            out = 0.0 * x
            for i in range(len(p)):
                out = out * x + p[i]
            return out
        return impl

    def impl(p, x):
        out = np.zeros(x.shape)
        for i in range(len(p)):
            out = out * x + p[i]
        return out
    return impl


@overload(rt.polyder)
def _polyder(p):
    _coefficients(p)

    def impl(p):
        n = len(p) - 1
        out = np.zeros(max(n, 1))
        for i in range(n):
            out[i] = p[i] * (n - i)
        return out
    return impl


@overload(rt.polyval_bar_p)
def _polyval_bar_p(g, p, x):
    _coefficients(p)
    if _scalar(x) and _scalar(g):
        def impl(g, p, x):
            n = len(p) - 1
            out = np.zeros(n + 1)
            power = 1.0
            for i in range(n, -1, -1):
                out[i] = g * power
                power = power * x
            return out
        return impl

    def impl(g, p, x):
        n = len(p) - 1
        out = np.zeros(n + 1)
        power = np.ones(np.shape(g)) + 0.0 * x
        for i in range(n, -1, -1):
            out[i] = np.sum(g * power)
            power = power * x
        return out
    return impl
