"""Numba forms of the scipy.linalg helpers (runtime/scipy_linalg.py), of one matrix (a stack
is batched by s2s.vmap, example by example). Numba has np.linalg.cholesky and np.linalg.solve;
the rest is written here from the textbook algorithms: triangular solves by substitution, LU by
Gaussian elimination with partial pivoting (LAPACK's getrf: the largest entry of the column,
the first of equal ones), expm by scaling and squaring with the [13/13] Pade approximant
(Higham 2005, "The scaling and squaring method for the matrix exponential revisited"), a
Sylvester equation as the linear system of its Kronecker form (of the small matrices a loss
holds: n^2 unknowns), and sqrtm by the Denman-Beavers iteration with determinant scaling
(Higham, Functions of Matrices, 6.3: the principal root, where SciPy's is real)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np import numpy_support

from ... import runtime as rt
from ..scipy_linalg import _transposes
from .common import _nd


def _float_dtype(*operands):
    """The floating dtype of the result: float32 where every array given is float32, else float64."""
    dtypes = [numpy_support.as_dtype(t.dtype) for t in operands if isinstance(t, types.Array)]
    return np.float32 if dtypes and all(d == np.float32 for d in dtypes) else np.float64


def _matrix(name: str, a) -> None:
    if _nd(a) != 2:
        raise TypingError(f"s2s: under s2s.jit, scipy.linalg.{name} takes one matrix (s2s.vmap batches a stack)")


def _operand(name: str, b) -> None:
    if _nd(b) not in (1, 2):
        raise TypingError(f"s2s: under s2s.jit, scipy.linalg.{name} takes b a vector or a matrix of columns")


def _trans_flag(trans):
    """Does SciPy's trans (0 / 'N', 1 / 'T', 2 / 'C', or a bool) transpose? (Its Numba form below.)"""
    return _transposes(int(trans) if isinstance(trans, bool) else trans)


@overload(_trans_flag)
def _trans_flag_numba(trans):
    if isinstance(trans, (types.UnicodeType, types.StringLiteral)):
        def string(trans):
            if trans == "N" or trans == "n":
                return False
            if trans == "T" or trans == "t" or trans == "C" or trans == "c":
                return True
            raise ValueError("trans must be 0, 1, 2, 'N', 'T' or 'C'")
        return string
    if isinstance(trans, types.Omitted):
        flag = bool(trans.value)
        return lambda trans: flag
    if isinstance(trans, (types.Integer, types.Boolean)):
        def number(trans):
            if trans == 0:
                return False
            if trans == 1 or trans == 2:
                return True
            raise ValueError("trans must be 0, 1, 2, 'N', 'T' or 'C'")
        return number
    raise TypingError("s2s: scipy.linalg's trans is 0, 1, 2, 'N', 'T' or 'C'")


@register_jitable
def _substitute(a, x, transposed, lower, unit):
    """Solves op(T) x_new = x in place, column by column of the matrix x: T the triangle of a
    (lower or upper; its diagonal 1 where unit), op(T) its transpose where transposed."""
    n = a.shape[0]
    forward = lower != transposed  # op(T) is lower triangular: first row first
    for step in range(n):
        i = step if forward else n - 1 - step
        for j in range(i) if forward else range(i + 1, n):
            m = a[j, i] if transposed else a[i, j]
            for c in range(x.shape[1]):
                x[i, c] -= m * x[j, c]
        if not unit:
            for c in range(x.shape[1]):
                x[i, c] /= a[i, i]
    return x


@register_jitable
def _columns(b, dtype):
    """b as a new matrix of columns of dtype (a vector: one column)."""
    if b.ndim == 1:
        return np.asarray(b, dtype).copy().reshape((b.shape[0], 1))
    return np.asarray(b, dtype).copy().reshape((b.shape[0], b.shape[-1]))


@overload(rt.solve_triangular)
def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    _matrix("solve_triangular", a)
    _operand("solve_triangular", b)
    dtype = _float_dtype(a, b)
    vector = _nd(b) == 1

    def impl(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
        if a.shape[0] != a.shape[1] or b.shape[0] != a.shape[0]:
            raise ValueError("scipy.linalg.solve_triangular takes a square a with as many rows as b")
        x = _substitute(np.asarray(a, dtype), _columns(b, dtype), _trans_flag(trans), lower, unit_diagonal)
        return x[:, 0].copy() if vector else x
    return impl


@overload(rt.cholesky)
def _cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    _matrix("cholesky", a)
    dtype = _float_dtype(a)

    def impl(a, lower=False, overwrite_a=False, check_finite=True):
        m = np.asarray(a, dtype)
        if lower:  # Numba's np.linalg.cholesky reads the lower triangle, as LAPACK's 'L'
            return np.ascontiguousarray(np.linalg.cholesky(np.ascontiguousarray(m)))
        return np.ascontiguousarray(np.linalg.cholesky(np.ascontiguousarray(m.T)).T)
    return impl


@overload(rt.det)
def _det(a, overwrite_a=False, check_finite=True):
    _matrix("det", a)
    dtype = _float_dtype(a)
    return lambda a, overwrite_a=False, check_finite=True: np.linalg.det(np.ascontiguousarray(np.asarray(a, dtype)))


@overload(rt.inv)
def _inv(a, overwrite_a=False, check_finite=True):
    _matrix("inv", a)
    dtype = _float_dtype(a)
    return lambda a, overwrite_a=False, check_finite=True: np.linalg.inv(np.ascontiguousarray(np.asarray(a, dtype)))


@overload(rt.cho_factor)
def _cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    _matrix("cho_factor", a)
    return lambda a, lower=False, overwrite_a=False, check_finite=True: (rt.cholesky(a, lower), lower)


@overload(rt.cho_solve)
def _cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    if not isinstance(c_and_lower, types.BaseTuple) or len(c_and_lower) != 2:
        raise TypingError("s2s: scipy.linalg.cho_solve takes (c, lower), as cho_factor returns it")
    _matrix("cho_solve", c_and_lower[0])
    _operand("cho_solve", b)
    dtype = _float_dtype(c_and_lower[0], b)
    vector = _nd(b) == 1

    def impl(c_and_lower, b, overwrite_b=False, check_finite=True):
        c = np.asarray(c_and_lower[0], dtype)
        lower = c_and_lower[1]
        # S = L L.T with L = c's lower triangle, or the transpose of its upper one (U.T)
        x = _substitute(c, _columns(b, dtype), not lower, lower, False)
        x = _substitute(c, x, lower, lower, False)
        return x[:, 0].copy() if vector else x
    return impl


@overload(rt.lu_factor)
def _lu_factor(a, overwrite_a=False, check_finite=True):
    _matrix("lu_factor", a)
    dtype = _float_dtype(a)

    def impl(a, overwrite_a=False, check_finite=True):
        n = a.shape[0]
        if a.shape[1] != n:
            raise ValueError("s2s: under s2s.jit, scipy.linalg.lu_factor takes a square matrix")
        lu = np.asarray(a, dtype).copy()
        piv = np.empty(n, np.int32)
        for k in range(n):
            p = k
            for i in range(k + 1, n):
                if abs(lu[i, k]) > abs(lu[p, k]):
                    p = i
            piv[k] = p
            if p != k:
                for j in range(n):
                    lu[k, j], lu[p, j] = lu[p, j], lu[k, j]
            if lu[k, k] != 0:
                for i in range(k + 1, n):
                    lu[i, k] /= lu[k, k]
                    for j in range(k + 1, n):
                        lu[i, j] -= lu[i, k] * lu[k, j]
        return lu, piv
    return impl


@overload(rt.lu_solve)
def _lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    if not isinstance(lu_and_piv, types.BaseTuple) or len(lu_and_piv) != 2:
        raise TypingError("s2s: scipy.linalg.lu_solve takes (lu, piv), as lu_factor returns it")
    _matrix("lu_solve", lu_and_piv[0])
    _operand("lu_solve", b)
    dtype = _float_dtype(lu_and_piv[0], b)
    vector = _nd(b) == 1

    def impl(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
        lu = np.asarray(lu_and_piv[0], dtype)
        piv = lu_and_piv[1]
        if _trans_flag(trans):  # A.T x = b, A = P.T L U: x = P.T L^-T U^-T b
            x = _substitute(lu, _columns(b, dtype), True, False, False)
            x = _substitute(lu, x, True, True, True)
            x = rt.lu_permute_bar(x, piv)
        else:  # x = U^-1 L^-1 P b
            x = _substitute(lu, rt.lu_permute(_columns(b, dtype), piv), False, True, True)
            x = _substitute(lu, x, False, False, False)
        return x[:, 0].copy() if vector else x
    return impl


# ---- expm: scaling and squaring, [13/13] Pade ------------------------------------------------
# The Pade approximant of exp(x) of degree (m, m) is p(x) / p(-x) with p(x) = sum_j c_j x^j,
# c_j = (2m - j)! m! / ((2m)! j! (m - j)!). With the 1-norm of a / 2^s at most theta_13 =
# 5.371920351148152 (Higham 2005, Table 2.3) the approximant's backward error is below the unit
# roundoff of double; the result is then squared s times.

_M = 13
_PADE = tuple(float(Fraction(math.factorial(2 * _M - j) * math.factorial(_M),
                             math.factorial(2 * _M) * math.factorial(j) * math.factorial(_M - j)))
              for j in range(_M + 1))
_THETA_13 = 5.371920351148152


@register_jitable
def _expm(a):
    n = a.shape[0]
    norm = 0.0
    for j in range(n):
        column = 0.0
        for i in range(n):
            column += abs(a[i, j])
        norm = max(norm, column)
    s = 0
    if norm > _THETA_13:
        s = int(math.ceil(math.log2(norm / _THETA_13)))
    x = a / (2.0 ** s)
    c = _PADE
    eye = np.eye(n, dtype=a.dtype)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (c[13] * x6 + c[11] * x4 + c[9] * x2) + c[7] * x6 + c[5] * x4 + c[3] * x2 + c[1] * eye)
    v = x6 @ (c[12] * x6 + c[10] * x4 + c[8] * x2) + c[6] * x6 + c[4] * x4 + c[2] * x2 + c[0] * eye
    r = np.ascontiguousarray(np.linalg.solve(v - u, v + u))  # p(x) / p(-x): the even part v, the odd part u
    for _ in range(s):
        r = r @ r
    return r


@overload(rt.expm)
def _expm_numba(A):
    _matrix("expm", A)
    dtype = _float_dtype(A)

    def impl(A):
        if A.shape[0] != A.shape[1]:
            raise ValueError("scipy.linalg.expm takes a square matrix")
        return _expm(np.ascontiguousarray(np.asarray(A, dtype))).astype(dtype)
    return impl


@overload(rt.solve_banded)
def _solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    _matrix("solve_banded", ab)
    _operand("solve_banded", b)
    dtype = _float_dtype(ab, b)

    def impl(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
        if ab.shape[0] != l_and_u[0] + l_and_u[1] + 1:
            raise ValueError("invalid values for the number of lower and upper diagonals")
        dense = np.ascontiguousarray(rt.banded_dense(l_and_u, np.asarray(ab, dtype)))
        return np.linalg.solve(dense, np.ascontiguousarray(np.asarray(b, dtype)))
    return impl


@overload(rt.solve_sylvester)
def _solve_sylvester(a, b, q):
    for name, operand in (("a", a), ("b", b), ("q", q)):
        _matrix(f"solve_sylvester's {name}", operand)
    dtype = _float_dtype(a, b, q)

    def impl(a, b, q):
        # a x + x b = q, x row by row: (a kron I + I kron b.T) x.ravel() = q.ravel()
        m, n = q.shape
        if a.shape != (m, m) or b.shape != (n, n):
            raise ValueError("scipy.linalg.solve_sylvester takes a (m, m), b (n, n) and q (m, n)")
        system = np.kron(np.ascontiguousarray(np.asarray(a, dtype)), np.eye(n, dtype=dtype)) \
            + np.kron(np.eye(m, dtype=dtype), np.ascontiguousarray(np.asarray(b, dtype).T))
        rhs = np.ascontiguousarray(np.asarray(q, dtype)).reshape(m * n)
        return np.linalg.solve(system, rhs).reshape((m, n))
    return impl


@overload(rt.sqrtm)
def _sqrtm(A):
    _matrix("sqrtm", A)
    dtype = _float_dtype(A)

    def impl(A):
        n = A.shape[0]
        if A.shape[1] != n:
            raise ValueError("scipy.linalg.sqrtm takes a square matrix")
        y = np.ascontiguousarray(np.asarray(A, np.float64))
        z = np.eye(n)
        for _ in range(100):
            # Denman-Beavers, scaled by |det y det z|^(-1/2n) (-> 1 as it converges)
            scale = np.abs(np.linalg.det(y) * np.linalg.det(z)) ** (-0.5 / n)
            y_next = 0.5 * (scale * y + np.linalg.inv(z) / scale)
            z_next = 0.5 * (scale * z + np.linalg.inv(y) / scale)
            change = np.max(np.abs(y_next - y))
            y, z = y_next, z_next
            if change <= 1e-15 * np.max(np.abs(y)):
                break
        if not np.all(np.isfinite(y)) or np.max(np.abs(y @ y - A)) > 1e-8 * max(np.max(np.abs(A)), 1.0):
            raise ValueError("s2s: scipy.linalg.sqrtm of this matrix is not real (or the iteration did not "
                             "converge): pass a matrix whose principal square root is real (a positive "
                             "definite one, for instance)")
        return y.astype(dtype)
    return impl


# ---- the helpers of the rules ------------------------------------------------------------------


@overload(rt.banded_dense)
def _banded_dense(l_and_u, ab):
    _matrix("solve_banded's derivative (runtime.banded_dense)", ab)
    dtype = _float_dtype(ab)

    def impl(l_and_u, ab):
        lower, upper = l_and_u
        n = ab.shape[1]
        out = np.zeros((n, n), dtype)
        for j in range(n):
            for i in range(max(0, j - upper), min(n, j + lower + 1)):
                out[i, j] = ab[upper + i - j, j]
        return out
    return impl


@overload(rt.banded_pack)
def _banded_pack(m, l_and_u):
    _matrix("solve_banded's derivative (runtime.banded_pack)", m)
    dtype = _float_dtype(m)

    def impl(m, l_and_u):
        lower, upper = l_and_u
        n = m.shape[1]
        out = np.zeros((lower + upper + 1, n), dtype)
        for j in range(n):
            for i in range(max(0, j - upper), min(n, j + lower + 1)):
                out[upper + i - j, j] = m[i, j]
        return out
    return impl




@overload(rt.triangle)
def _triangle(x, lower, unit_diagonal=False):
    _matrix("solve_triangular's derivative (runtime.triangle)", x)

    def impl(x, lower, unit_diagonal=False):
        if lower:
            return np.tril(x, -1 if unit_diagonal else 0)
        return np.triu(x, 1 if unit_diagonal else 0)
    return impl


@overload(rt.trans_op)
def _trans_op(x, trans):
    _matrix("solve_triangular's derivative (runtime.trans_op)", x)

    def impl(x, trans):
        if _trans_flag(trans):
            return np.ascontiguousarray(x.T)
        return np.ascontiguousarray(x)
    return impl


@overload(rt.other_trans)
def _other_trans(trans):
    return lambda trans: 0 if _trans_flag(trans) else 1


@overload(rt.unit_lower)
def _unit_lower(lu):
    _matrix("lu_factor's derivative (runtime.unit_lower)", lu)
    return lambda lu: np.tril(lu, -1) + np.eye(lu.shape[0], lu.shape[1], dtype=lu.dtype)


def _permuted(x, reverse: bool):
    """lu_permute (the swaps in order) or lu_permute_bar (in reverse order), of a vector or a matrix."""
    if _nd(x) not in (1, 2):
        raise TypingError("s2s: under s2s.jit, lu_solve's derivative takes a vector or a matrix")
    dtype = x.dtype if isinstance(x.dtype, types.Float) else types.float64
    vector = _nd(x) == 1

    def impl(x, piv):
        y = x.astype(dtype)
        n = len(piv)
        for step in range(n):
            k = n - 1 - step if reverse else step
            j = piv[k]
            if j != k:
                if vector:
                    y[k], y[j] = y[j], y[k]
                else:
                    for c in range(y.shape[1]):
                        y[k, c], y[j, c] = y[j, c], y[k, c]
        return y
    return impl


@overload(rt.lu_permute)
def _lu_permute(x, piv):
    return _permuted(x, False)


@overload(rt.lu_permute_bar)
def _lu_permute_bar(x, piv):
    return _permuted(x, True)


@overload(rt.frechet_block)
def _frechet_block(a, e):
    _matrix("expm's derivative (runtime.frechet_block)", a)
    dtype = _float_dtype(a, e)

    def impl(a, e):
        n = a.shape[0]
        out = np.zeros((2 * n, 2 * n), dtype)
        out[:n, :n] = a
        out[n:, n:] = a
        out[:n, n:] = e
        return out
    return impl


@overload(rt.upper_right)
def _upper_right(m):
    _matrix("expm's derivative (runtime.upper_right)", m)
    return lambda m: m[: m.shape[0] // 2, m.shape[1] // 2:].copy()


@overload(rt.block_diagonal_sum)
def _block_diagonal_sum(m):
    _matrix("expm's derivative (runtime.block_diagonal_sum)", m)

    def impl(m):
        n = m.shape[0] // 2
        return m[:n, :n] + m[n:, n:]
    return impl
