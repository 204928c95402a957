"""The functions of scipy.linalg that generated code calls, as runtime.<name>: a user's
`scipy.linalg.cho_solve(c_and_lower, b)` is written `runtime.cho_solve(c_and_lower, b)`
(Facts.written_as, templates/scipy_rules.py), and below them the helpers of their rules.

Each primal helper takes SciPy's parameters and, here, is SciPy's own function (imported when
first called); runtime/overloads/scipy_linalg.py gives each a Numba form written with Numba's
np.linalg and loops (a triangular solve by substitution, expm by scaling and squaring).

What SciPy reads of its arguments is what the rules differentiate: solve_triangular reads one
triangle of a (less its diagonal, with unit_diagonal), cholesky the triangle it factors,
cho_solve the triangle of c its lower flag names, lu_solve the strict lower triangle of lu (L's
unit diagonal is implied) and its upper triangle (U). The rest of each matrix has a zero
derivative. cho_factor returns zeros in the triangle it does not use (SciPy: arbitrary data).
"""

from __future__ import annotations

import numpy as np

__all__ = ["solve_triangular", "cholesky", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "expm", "det", "inv",
           "solve_sylvester", "solve_banded", "sqrtm", "banded_dense", "banded_pack", "triangle", "trans_op",
           "other_trans", "unit_lower", "lu_permute", "lu_permute_bar",
           "frechet_block", "upper_right", "block_diagonal_sum"]


def _scipy_linalg():
    import scipy.linalg

    return scipy.linalg


def _transposes(trans) -> bool:
    """SciPy's trans: 0 or 'N' solves a x = b, 1 or 'T' and 2 or 'C' (real matrices) a.T x = b."""
    if isinstance(trans, str):
        if trans.upper() in ("N", "T", "C"):
            return trans.upper() != "N"
    elif trans in (0, 1, 2):
        return trans != 0
    raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', not {trans!r}")


def _float(a):
    a = np.asarray(a)
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)


# ---- the functions users call ----------------------------------------------------------------


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    return _scipy_linalg().solve_triangular(_float(a), _float(b), trans=trans, lower=lower,
                                            unit_diagonal=unit_diagonal)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    return _scipy_linalg().cholesky(_float(a), lower=lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower): c the factor, zeros in the triangle SciPy leaves arbitrary (its cholesky)."""
    return cholesky(a, lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    return _scipy_linalg().cho_solve((_float(c_and_lower[0]), c_and_lower[1]), _float(b))


def lu_factor(a, overwrite_a=False, check_finite=True):
    return _scipy_linalg().lu_factor(_float(a))


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    return _scipy_linalg().lu_solve((_float(lu_and_piv[0]), lu_and_piv[1]), _float(b), trans=trans)


def expm(A):
    return _scipy_linalg().expm(_float(A))


def det(a, overwrite_a=False, check_finite=True):
    return _scipy_linalg().det(_float(a))


def inv(a, overwrite_a=False, check_finite=True):
    return _scipy_linalg().inv(_float(a))


def solve_sylvester(a, b, q):
    return _scipy_linalg().solve_sylvester(_float(a), _float(b), _float(q))


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    return _scipy_linalg().solve_banded(l_and_u, _float(ab), _float(b))


def sqrtm(A):
    """The principal square root; SciPy's result is complex where A has one of its eigenvalues
    on the negative real axis, and so there is no real derivative: a ValueError here."""
    root = _scipy_linalg().sqrtm(_float(A))
    if np.iscomplexobj(root):
        if np.any(np.imag(root) != 0.0):
            raise ValueError("s2s: scipy.linalg.sqrtm of this matrix is complex (an eigenvalue on the negative real "
                             "axis), and s2s differentiates real programs: pass a matrix whose principal square "
                             "root is real (a positive definite one, for instance)")
        root = np.real(root)
    return root


# ---- the helpers of their rules ----------------------------------------------------------------


def banded_dense(l_and_u, ab):
    """The matrix that solve_banded's ab stands for: A[i, j] = ab[u + i - j, j] within the band
    of l diagonals below and u above, zero outside it (ab's corners are not read). Linear in ab."""
    lower, upper = l_and_u
    n = np.shape(ab)[-1]
    out = np.zeros((n, n), np.result_type(ab, 0.0))
    for j in range(n):
        for i in range(max(0, j - upper), min(n, j + lower + 1)):
            out[i, j] = ab[upper + i - j, j]
    return out


def banded_pack(m, l_and_u):
    """The band of the matrix m written as solve_banded's ab (zeros in its corners): banded_dense's
    adjoint, and its inverse within the band. Linear in m."""
    lower, upper = l_and_u
    n = np.shape(m)[-1]
    out = np.zeros((lower + upper + 1, n), np.result_type(m, 0.0))
    for j in range(n):
        for i in range(max(0, j - upper), min(n, j + lower + 1)):
            out[upper + i - j, j] = m[i, j]
    return out




def triangle(x, lower, unit_diagonal=False):
    """The triangle of each matrix of x that SciPy reads: the lower (tril) or upper one, without
    the diagonal where it is implied (unit_diagonal). Linear, its own adjoint."""
    if lower:
        return np.tril(x, -1 if unit_diagonal else 0)
    return np.triu(x, 1 if unit_diagonal else 0)


def trans_op(x, trans):
    """x, or its transpose (each matrix) where SciPy's trans asks for one (True transposes too)."""
    return np.swapaxes(x, -1, -2) if _transposes(int(trans) if isinstance(trans, (bool, np.bool_)) else trans) else x


def other_trans(trans):
    """The trans that solves with the transpose of what trans solves with: 1 for 0, else 0."""
    return 0 if _transposes(int(trans) if isinstance(trans, (bool, np.bool_)) else trans) else 1


def unit_lower(lu):
    """L of lu_factor's packed lu: its strict lower triangle, ones on the diagonal."""
    return np.tril(lu, -1) + np.eye(np.shape(lu)[-2], np.shape(lu)[-1])


def _one_factorisation(x, piv):
    if np.ndim(piv) != 1 or np.ndim(x) not in (1, 2):
        raise ValueError("s2s: the derivatives of scipy.linalg.lu_factor and lu_solve are of one matrix and a vector "
                         "or a matrix of columns (s2s.vmap batches a stack)")


def lu_permute(x, piv):
    """P x, the rows of x swapped as LAPACK's pivots say (row k with row piv[k], k in order):
    lu_factor's a = P.T L U, P a = L U. Linear in x."""
    _one_factorisation(x, piv)
    y = np.array(x, dtype=np.result_type(x, 0.0), copy=True)
    for k in range(len(piv)):
        j = piv[k]
        if j != k:
            row = y[k].copy()
            y[k] = y[j]
            y[j] = row
    return y


def lu_permute_bar(x, piv):
    """P.T x: lu_permute undone (the swaps in reverse order); lu_permute's adjoint and inverse."""
    _one_factorisation(x, piv)
    y = np.array(x, dtype=np.result_type(x, 0.0), copy=True)
    for k in range(len(piv) - 1, -1, -1):
        j = piv[k]
        if j != k:
            row = y[k].copy()
            y[k] = y[j]
            y[j] = row
    return y


def frechet_block(a, e):
    """[[a, e], [0, a]]: expm of it holds the Frechet derivative of expm at a in direction e in its
    upper right block (Higham, Functions of Matrices, 3.2). Linear in (a, e)."""
    n = np.shape(a)[-1]
    dtype = np.result_type(a, e, 0.0)
    out = np.zeros(np.shape(a)[:-2] + (2 * n, 2 * n), dtype)
    out[..., :n, :n] = a
    out[..., n:, n:] = a
    out[..., :n, n:] = e
    return out


def upper_right(m):
    """The upper right block of each matrix of m, of half its size (frechet_block's e)."""
    n = np.shape(m)[-1] // 2
    return m[..., :n, n:].copy()


def block_diagonal_sum(m):
    """The two diagonal blocks of each matrix of m added: frechet_block's adjoint in a."""
    n = np.shape(m)[-1] // 2
    return m[..., :n, :n] + m[..., n:, n:]
