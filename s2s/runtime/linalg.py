"""Helpers of the rules for np.tensordot and np.kron (templates/array_rules.py).

np.tensordot(a, b, axes) contracts a's axes axes[0] with b's axes[1], pair by pair (an int n:
a's last n with b's first n); its result has a's other axes, then b's. Each adjoint is a
tensordot of the result's adjoint with the other operand over the free axes, whose remaining
axes come out in the other operand's order: a transpose puts them back where they were.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tensordot", "tensordot_bar_a", "tensordot_bar_b", "kron_bar_a", "kron_bar_b"]


def _contracted(na: int, nb: int, axes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(a's contracted axes, b's), paired in order and non-negative, as np.tensordot reads axes."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return tuple(range(na - n, na)), tuple(range(n))
    ax_a, ax_b = axes
    ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
    ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
    return tuple(int(i) % na for i in ax_a), tuple(int(j) % nb for j in ax_b)


def tensordot(a, b, axes=2):
    """np.tensordot(a, b, axes), which Numba lacks (overloads/linalg.py writes it for Numba)."""
    return np.tensordot(a, b, axes)


def tensordot_bar_a(g, a, b, axes=2):
    """The adjoint of a in tensordot(a, b, axes), for the result's adjoint g (reads a's shape only)."""
    na, nb = np.ndim(a), np.ndim(b)
    ax_a, ax_b = _contracted(na, nb, axes)
    free_a = [i for i in range(na) if i not in ax_a]
    free_b = [j for j in range(nb) if j not in ax_b]
    # Contracting g's b-part with b leaves a's free axes, then b's contracted axes in b's order.
    t = np.tensordot(np.asarray(g), b, (list(range(len(free_a), len(free_a) + len(free_b))), free_b))
    where = free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]  # the axis of a each axis of t is
    return np.transpose(t, np.argsort(where))


def tensordot_bar_b(g, a, b, axes=2):
    """The adjoint of b in tensordot(a, b, axes), for the result's adjoint g (reads b's shape only)."""
    na, nb = np.ndim(a), np.ndim(b)
    ax_a, ax_b = _contracted(na, nb, axes)
    free_a = [i for i in range(na) if i not in ax_a]
    free_b = [j for j in range(nb) if j not in ax_b]
    # Contracting a's free axes with g's a-part leaves a's contracted axes in a's order, then b's free axes.
    t = np.tensordot(a, np.asarray(g), (free_a, list(range(len(free_a)))))
    where = [ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b  # the axis of b each axis of t is
    return np.transpose(t, np.argsort(where))


# np.kron(a, b) of arrays of one ndim (1 or 2): block (i, j) of the result is a[i, j] * b, so
# the result, viewed as (m, p, n, q) (a (m, n), b (p, q)), is the outer product of a and b with
# their axes interleaved. Each adjoint contracts that view with the other operand.


def _kron_view(g, a, b):
    if np.ndim(a) == 1:
        return np.reshape(g, (np.shape(a)[0], np.shape(b)[0]))
    (m, n), (p, q) = np.shape(a), np.shape(b)
    return np.reshape(g, (m, p, n, q))


def kron_bar_a(g, a, b):
    """The adjoint of a in np.kron(a, b) (a and b both 1-d or both 2-d; reads a's shape only)."""
    if np.ndim(a) == 1:
        return _kron_view(g, a, b) @ b
    return np.einsum("ipjq,pq->ij", _kron_view(g, a, b), b)


def kron_bar_b(g, a, b):
    """The adjoint of b in np.kron(a, b) (a and b both 1-d or both 2-d; reads b's shape only)."""
    if np.ndim(a) == 1:
        return a @ _kron_view(g, a, b)
    return np.einsum("ipjq,ij->pq", _kron_view(g, a, b), a)
