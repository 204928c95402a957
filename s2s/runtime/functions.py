"""Helpers of the rules for np.polyval
(templates/array_rules.py): the primal where Numba lacks it, and the derivatives."""

from __future__ import annotations

import numpy as np

__all__ = ["polyval", "polyder", "polyval_bar_p"]


# ---- np.polyval --------------------------------------------------------------------


def polyval(p, x):
    """np.polyval(p, x), which Numba lacks."""
    return np.polyval(p, x)


def polyder(p):
    """The coefficients of p's derivative (highest power first, as np.polyval takes them); of a
    constant polynomial, [0.0]. Linear in p."""
    p = np.asarray(p)
    n = p.shape[0] - 1
    if n < 1:
        return np.zeros(1, np.result_type(p, 1.0))
    return p[:-1] * np.arange(n, 0, -1)


def polyval_bar_p(g, p, x):
    """Adjoint in p of np.polyval(p, x): p[i] multiplies x ** (n - i), n = len(p) - 1, so its
    adjoint is the sum of g * x ** (n - i) over the result's elements."""
    n = np.shape(p)[0] - 1
    out = np.zeros(n + 1, np.result_type(g, x, 1.0))
    power = np.ones_like(np.asarray(x, dtype=out.dtype))
    for i in range(n, -1, -1):
        out[i] = np.sum(g * power)
        power = power * x
    return out
