"""Helpers of the rules for np.tensordot, np.kron, np.linalg.cholesky, eigh and qr (templates/array_rules.py).

np.tensordot(a, b, axes) contracts a's axes axes[0] with b's axes[1], pair by pair (an int n:
a's last n with b's first n); its result has a's other axes, then b's. Each adjoint is a
tensordot of the result's adjoint with the other operand over the free axes, whose remaining
axes come out in the other operand's order: a transpose puts them back where they were.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tensordot", "tensordot_bar_a", "tensordot_bar_b", "kron", "kron_bar_a", "kron_bar_b", "lower_half",
           "lower_symmetric", "lower_symmetric_bar", "matrix_diagonal", "diagonal_matrix", "eigen_quotient",
           "pair_differences", "strict_lower", "qr_inner_bar", "qr_options", "right_solve", "svd_options", "linalg_svd",
           "full_rank_solution", "lstsq_residuals", "residual_weights", "linalg_lstsq", "linalg_eig", "linalg_eigvals",
           "real_eigenvalues", "singular_values", "linalg_eigh", "linalg_eigvalsh"]


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


# np.kron(a, b): the result, viewed with a's and b's axes interleaved (a (m, n), b (p, q): the
# view (m, p, n, q)), is the outer product of a and b, since block (i, j) is a[i, j] * b. Each
# adjoint contracts that view with the other operand. NumPy pads the smaller ndim with leading
# ones first; so do these.


def _kron_view(g, a, b):
    """g viewed as an array of shape a.shape + b.shape (both padded to one ndim), and that ndim."""
    n = max(np.ndim(a), np.ndim(b))
    sa = (1,) * (n - np.ndim(a)) + np.shape(a)
    sb = (1,) * (n - np.ndim(b)) + np.shape(b)
    interleaved = np.reshape(g, [size for pair in zip(sa, sb) for size in pair])
    return np.transpose(interleaved, list(range(0, 2 * n, 2)) + list(range(1, 2 * n, 2))), n


def kron(a, b):
    """np.kron(a, b), which Numba takes of contiguous arrays only (overloads/linalg.py copies)."""
    return np.kron(a, b)


def kron_bar_a(g, a, b):
    """The adjoint of a in np.kron(a, b), for the result's adjoint g (reads a's shape only)."""
    view, n = _kron_view(g, a, b)
    return np.reshape(np.tensordot(view, np.reshape(b, view.shape[n:]), n), np.shape(a))


def kron_bar_b(g, a, b):
    """The adjoint of b in np.kron(a, b), for the result's adjoint g (reads b's shape only)."""
    view, n = _kron_view(g, a, b)
    return np.reshape(np.tensordot(np.reshape(a, view.shape[:n]), view, (list(range(n)), list(range(n)))),
                      np.shape(b))


# np.linalg.cholesky reads the lower triangle of its argument only (NumPy's and Numba's): it
# factors S = tril(a) + tril(a, -1).T. The rule differentiates exactly that function, so its
# tangent is of lower_symmetric(a_dot) and its adjoint goes to the lower triangle alone
# (lower_symmetric_bar); lower_half is the Phi of the rule (Murray 2016, arXiv:1602.07527).


def _eye_like(x):
    return np.eye(np.shape(x)[-2], np.shape(x)[-1])


def lower_half(x):
    """The lower triangle of each matrix of x, with its diagonal halved (linear, its own adjoint)."""
    return np.tril(x, -1) + 0.5 * x * _eye_like(x)


def lower_symmetric(x):
    """The symmetric matrix that x's lower triangle stands for: tril(x) + tril(x, -1).T."""
    return np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2)


def lower_symmetric_bar(g):
    """The adjoint of lower_symmetric: g + g.T below the diagonal, g's own diagonal, zeros above."""
    return np.tril(g + np.swapaxes(g, -1, -2), -1) + g * _eye_like(g)


# np.linalg.eigh and eigvalsh (lower triangle read, as cholesky): with a = V diag(w) V.T and
# M = V.T S_dot V, w_dot = diag(M) and V_dot = V (F * M), F[i, j] = 1 / (w[j] - w[i]) off the
# diagonal and 0 on it (JAX's formula). eigen_quotient is F * x, with 0 where x is 0: the
# eigenvalues alone then differentiate at repeated eigenvalues too, where F is infinite.


def matrix_diagonal(m):
    """The diagonal of each matrix of m (a new array)."""
    return np.diagonal(m, axis1=-2, axis2=-1).copy()


def diagonal_matrix(d):
    """The matrix with d on its diagonal, for each row of d (matrix_diagonal's adjoint)."""
    return d[..., :, None] * np.eye(np.shape(d)[-1])


def pair_differences(w):
    """w[..., j] - w[..., i] at [..., i, j]."""
    return w[..., None, :] - w[..., :, None]


def eigen_quotient(w, x):
    """x[i, j] / (w[j] - w[i]) off the diagonal, 0 on it and wherever x is 0 (each matrix)."""
    gaps = pair_differences(w)
    off = (x != 0) & ~np.eye(np.shape(x)[-1], dtype=bool)
    return np.where(off, x / np.where(off, gaps, 1.0), 0.0)


# np.linalg.qr (mode "reduced", at least as many rows as columns, R invertible): JAX's forward
# rule, dQ = Q (D - C) + X and dR = (C - D) R with X = a_dot R^-1, C = Q.T X, D = L - L.T and
# L = strict_lower(C); its transpose gives the reverse rule.


# np.linalg.eig of a real matrix with real eigenvalues (symmetric, triangular, ...): a = V diag(w) V^-1
# with unit columns of V. With M = V^-1 a_dot V and F as eigh's (eigen_quotient), w_dot = diag(M) and
# V_dot = P - V diag(V.T P), P = V (F * M): the last term keeps each column of unit length, as NumPy
# returns them. Its transpose: a_bar = V^-T (diag(w_bar) + F * (B - V.T V diag(B))) V.T, B = V.T V_bar.
EIG_COMPLEX = ("s2s: np.linalg.eig's eigenvalues are complex here, and s2s differentiates real programs: eig is "
               "differentiated where its eigenvalues are real (a symmetric matrix: np.linalg.eigh; a triangular one)")


def linalg_eig(a):
    """np.linalg.eig, which generated code calls under Numba (a refusal of complex eigenvalues that
    names s2s, not Numba's domain error)."""
    return np.linalg.eig(a)


def linalg_eigvals(a):
    """np.linalg.eigvals, which generated code calls under Numba (as linalg_eig)."""
    return np.linalg.eigvals(a)


def real_eigenvalues(w):
    """w, np.linalg.eig's eigenvalues, where they are real (NumPy gives them a real dtype then);
    complex ones are refused: the rule is for real matrices with real eigenvalues."""
    if np.iscomplexobj(w):
        raise ValueError(EIG_COMPLEX)
    return w


def linalg_eigh(a, UPLO="L"):
    """np.linalg.eigh, which generated code calls under Numba where UPLO is written (Numba's takes a alone)."""
    return np.linalg.eigh(a, UPLO)


def linalg_eigvalsh(a, UPLO="L"):
    """np.linalg.eigvalsh, which generated code calls under Numba where UPLO is written."""
    return np.linalg.eigvalsh(a, UPLO)


def strict_lower(x):
    """The part of each matrix of x below its diagonal (linear, its own adjoint)."""
    return np.tril(x, -1)


def qr_inner_bar(e):
    """The adjoint of C in np.linalg.qr's rule, from E = Q.T Q_bar - R_bar R.T: tril(E - E.T, -1) - E."""
    return np.tril(e - np.swapaxes(e, -1, -2), -1) - e


def right_solve(x, r):
    """x @ inv(r), each matrix, for a square r: np.linalg.qr's R, which a matrix with more columns
    than rows does not make square (its rule is for the others: refused here, by name)."""
    if np.shape(r)[-1] != np.shape(r)[-2]:
        raise ValueError("s2s: the derivative of np.linalg.qr is for a matrix with at least as many rows as "
                         "columns (R square)")
    return np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(x, -1, -2)), -1, -2)


def qr_options(mode="reduced", **_) -> str | None:
    """np.linalg.qr is differentiated in its default mode only (rules: Facts.options)."""
    if mode != "reduced":
        return f"np.linalg.qr is differentiated with mode='reduced' (its default) only, not mode={mode!r}"
    return None


def svd_options(full_matrices=True, compute_uv=True, hermitian=False, **_) -> str | None:
    """np.linalg.svd is differentiated with hermitian=False (rules: Facts.options); full_matrices
    is checked when the code runs (runtime.singular_values)."""
    if hermitian is not False:
        return "np.linalg.svd is differentiated with hermitian=False (its default) only"
    return None


SVD_FULL = ("s2s: np.linalg.svd's singular vectors are differentiated of the reduced decomposition: with "
            "full_matrices=True a matrix that is not square gets columns (or rows) beyond its rank, any basis of "
            "the rest of the space, which have no derivative; write np.linalg.svd(a, full_matrices=False)")


def singular_values(s, u, vh):
    """s, of np.linalg.svd's (u, s, vh), where u and vh are those of the reduced decomposition
    (a square matrix, or full_matrices=False); otherwise refused, as their extra columns have no
    derivative."""
    k = np.shape(s)[-1]
    if np.shape(u)[-1] != k or np.shape(vh)[-2] != k:
        raise ValueError(SVD_FULL)
    return s


def linalg_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """np.linalg.svd, which generated code calls under Numba where it has options: Numba's
    takes full_matrices only, not compute_uv=False (overloads/linalg.py)."""
    return np.linalg.svd(a, full_matrices, compute_uv, hermitian)


# np.linalg.lstsq(a, b) = (x, residuals, rank, s) for a of full rank (rank min(m, n)), where x is
# pinv(a) @ b (b a vector or a matrix of columns) and the rank cannot change nearby. With
# P = pinv(a), X = x and R = b - a X as matrices of columns (Golub and Pereyra's derivative of
# P, applied to b): X_dot = P (b_dot - a_dot X) + P P.T a_dot.T R + (I - P a) a_dot.T P.T X. The
# residuals (|R|^2 per column, where m > n) move with R.T (b_dot - a_dot X): a.T R = 0 there.
# Below full rank the solution jumps where a singular value crosses rcond: refused, by name.


def full_rank_solution(x, rank, a):
    """x, np.linalg.lstsq's solution, where a has full rank (rank min(m, n)); below it the
    solution jumps where a singular value crosses rcond: no derivative (a ValueError)."""
    if rank != min(np.shape(a)):
        raise ValueError("s2s: the derivative of np.linalg.lstsq is for a matrix of full rank (rank min(m, n)): "
                         "below it the solution jumps where a singular value crosses rcond")
    return x


def lstsq_residuals(value, residuals):
    """value (|b - a x|^2's change per column: a number for a vector b) in the shape of lstsq's
    residuals, which are empty where m <= n. Linear in value."""
    if np.size(residuals) == 0:
        return np.zeros(np.shape(residuals))
    return np.reshape(np.asarray(value, dtype=np.result_type(value, 0.0)), np.shape(residuals))


def residual_weights(r, residuals_bar):
    """r, b - a x, weighted by the adjoint of each column's residual (zeros where lstsq gives no
    residuals): half the residuals' adjoint in b. Bilinear."""
    if np.size(residuals_bar) == 0:
        return np.zeros(np.shape(r), np.result_type(r, 0.0))
    return r * residuals_bar


def linalg_lstsq(a, b, rcond=None):
    """np.linalg.lstsq, which generated code calls under Numba: Numba's takes rcond as a number,
    not None (NumPy's default, machine precision times max(m, n)) (overloads/linalg.py)."""
    return np.linalg.lstsq(a, b, rcond)
