"""Rules for scipy.linalg, as JAX offers jax.scipy.linalg: a user's call of a function declared
here is written as the runtime helper its facts name (written_as, runtime/scipy_linalg.py) and
the rule is that helper's (see templates/scipy_rules.py).

Each rule differentiates what SciPy reads of its arguments (runtime/scipy_linalg.py): one
triangle of a triangular or Cholesky factor, both triangles of lu_factor's packed lu, so the
gradient is zero in what SciPy does not read. The rules are written with functions that have
rules themselves (the helpers' rules are below), so that second derivatives need nothing more.

lu_factor and lu_solve have rules of their own: lu_solve's in lu as it reads it (L and U), so
that lu_solve(lu_factor(a), b) has the derivative of np.linalg.solve(a, b) through both, and a
function that reads lu itself gets lu's derivative (the pivots are integers: none)."""

import numpy as np
import scipy.linalg

from s2s import runtime
from s2s.rules import nondifferentiable, primitive, rule
from s2s.runtime import (banded_dense, banded_pack, block_diagonal_sum, cho_solve, expm, frechet_block, lower_half,
                         lower_symmetric, lower_symmetric_bar, lu_permute, lu_permute_bar, lu_solve, matrix_trace,
                         other_trans, per_matrix, solve_banded, solve_bar_a, solve_sylvester, solve_triangular,
                         trans_op, triangle, unit_lower, upper_right, zeros_like)

OWN = dict(pure=True, fresh=True)


def options_of(name: str, letters: bool = False):
    """The check of a call's options (rules: Facts.options): SciPy's overwrite_a and overwrite_b
    let it write into the caller's arrays, which s2s does not model; check_finite is accepted.
    trans is 0, 1 or 2, or where SciPy takes them (letters) 'N', 'T' or 'C'."""
    def check(overwrite_a=False, overwrite_b=False, trans=0, overwrite_ab=False, **_) -> str | None:
        for option, value in (("overwrite_a", overwrite_a), ("overwrite_b", overwrite_b),
                              ("overwrite_ab", overwrite_ab)):
            if value is not False and value != 0:
                return f"s2s differentiates scipy.linalg.{name} with {option}=False only (its default)"
        if not (letters and isinstance(trans, str) and trans.upper() in ("N", "T", "C")
                or not isinstance(trans, str) and trans in (0, 1, 2)):
            return (f"scipy.linalg.{name} takes trans 0, 1, 2" + (", 'N', 'T' or 'C'" if letters else "")
                    + f", not {trans!r}")
        return None
    return check


# ---- det and inv: NumPy's derivatives ------------------------------------------------------


@rule(runtime.det, **OWN, options=options_of("det"))
@primitive(scipy.linalg.det, written_as=runtime.det)
def det_(y, a, overwrite_a=False, check_finite=True):
    """(of a stack of matrices too, as NumPy's np.linalg.det)"""
    y_dot = y * matrix_trace(np.linalg.solve(a, a_dot))
    a_bar += per_matrix(y_bar * y) * np.swapaxes(np.linalg.inv(a), -1, -2)


@rule(runtime.inv, **OWN, options=options_of("inv"))
@primitive(scipy.linalg.inv, written_as=runtime.inv)
def inv_(y, a, overwrite_a=False, check_finite=True):
    y_dot = -(y @ a_dot @ y)
    a_bar -= np.swapaxes(y, -1, -2) @ y_bar @ np.swapaxes(y, -1, -2)


# ---- triangular solves ---------------------------------------------------------------------


@rule(runtime.solve_triangular, **OWN, options=options_of("solve_triangular", letters=True))
@primitive(scipy.linalg.solve_triangular, written_as=runtime.solve_triangular)
def solve_triangular_(x, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """op(T) x = b, T the triangle of a that SciPy reads (triangle; a unit diagonal is implied, not
    read) and op its transpose where trans says so. As np.linalg.solve's rule, with the adjoint of
    op(T), -op(g x.T), kept to that triangle."""
    x_dot = solve_triangular(a, b_dot - trans_op(triangle(a_dot, lower, unit_diagonal), trans) @ x, trans, lower,
                             unit_diagonal)
    b_adjoint = solve_triangular(a, x_bar, other_trans(trans), lower, unit_diagonal)
    b_bar += b_adjoint
    a_bar -= triangle(trans_op(solve_bar_a(b_adjoint, x), trans), lower, unit_diagonal)


# ---- Cholesky ------------------------------------------------------------------------------
# scipy.linalg.cholesky(a, lower) factors the symmetric matrix that a's lower triangle (lower) or
# upper one stands for, and returns L or U = L.T. With upper = other_trans(lower) (1 where the
# upper triangle is read), trans_op(., upper) turns the upper reading into the lower one, whose
# rule is np.linalg.cholesky's (Murray 2016: L_dot = L Phi(L^-1 S_dot L^-T)), its solves by L and
# L.T triangular ones.


@rule(runtime.cholesky, **OWN, options=options_of("cholesky"))
@primitive(scipy.linalg.cholesky, written_as=runtime.cholesky)
def cholesky_(c, a, lower=False, overwrite_a=False, check_finite=True):
    upper = other_trans(lower)
    low = trans_op(c, upper)
    low_t = trans_op(c, lower)
    c_dot = trans_op(low @ lower_half(solve_triangular(low, np.swapaxes(solve_triangular(
        low, lower_symmetric(trans_op(a_dot, upper)), 0, True), -1, -2), 0, True)), upper)
    left = solve_triangular(low_t, lower_half(low_t @ trans_op(c_bar, upper)))
    a_bar += trans_op(lower_symmetric_bar(np.swapaxes(solve_triangular(low_t, np.swapaxes(left, -1, -2)), -1, -2)),
                      upper)


@rule(runtime.cho_factor, pure=True, options=options_of("cho_factor"))
@primitive(scipy.linalg.cho_factor, written_as=runtime.cho_factor)
def cho_factor_(y, a, lower=False, overwrite_a=False, check_finite=True):
    """y = (c, lower): c is cholesky's (zeros in the other triangle), lower a flag (no derivative)."""
    upper = other_trans(lower)
    low = trans_op(y[0], upper)
    low_t = trans_op(y[0], lower)
    y_dot = (trans_op(low @ lower_half(solve_triangular(low, np.swapaxes(solve_triangular(
        low, lower_symmetric(trans_op(a_dot, upper)), 0, True), -1, -2), 0, True)), upper), zeros_like(y[1]))
    left = solve_triangular(low_t, lower_half(low_t @ trans_op(y_bar[0], upper)))
    a_bar += trans_op(lower_symmetric_bar(np.swapaxes(solve_triangular(low_t, np.swapaxes(left, -1, -2)), -1, -2)),
                      upper)


@rule(runtime.cho_solve, **OWN, options=options_of("cho_solve"))
@primitive(scipy.linalg.cho_solve, written_as=runtime.cho_solve)
def cho_solve_(x, c_and_lower, b, overwrite_b=False, check_finite=True):
    """S x = b, S = L L.T, L the triangle of c that the flag names (as lower), as SciPy reads it:
    S_dot = L_dot L.T + L L_dot.T; S's adjoint -g x.T gives L's, (S_bar + S_bar.T) L, kept to the
    triangle read."""
    upper = other_trans(c_and_lower[1])
    low = trans_op(triangle(c_and_lower[0], c_and_lower[1]), upper)
    x_dot = cho_solve(c_and_lower, b_dot - trans_op(triangle(c_and_lower_dot[0], c_and_lower[1]), upper)
                      @ (np.swapaxes(low, -1, -2) @ x) - low @ (trans_op(triangle(c_and_lower_dot[0], c_and_lower[1]),
                                                                      other_trans(upper)) @ x))
    b_adjoint = cho_solve(c_and_lower, x_bar)
    b_bar += b_adjoint
    c_and_lower_bar += (triangle(trans_op((solve_bar_a(b_adjoint, x) + solve_bar_a(x, b_adjoint)) @ -low, upper),
                                 c_and_lower[1]), zeros_like(c_and_lower[1]))


# ---- LU ------------------------------------------------------------------------------------
# lu_factor(a) = (lu, piv): P a = L U with P the row swaps piv names (runtime.lu_permute), L unit
# lower (lu's strict lower triangle) and U upper (lu's upper triangle). With X = L^-1 P a_dot U^-1:
# L_dot = L tril(X, -1), U_dot = triu(X) U, and lu_dot is their sum (each in its own triangle).


@rule(runtime.lu_factor, pure=True, options=options_of("lu_factor"))
@primitive(scipy.linalg.lu_factor, written_as=runtime.lu_factor)
def lu_factor_(y, a, overwrite_a=False, check_finite=True):
    """The adjoint is the tangent's transpose: X_bar = tril(L.T L_bar, -1) + triu(U_bar U.T), then
    a_bar = P.T L^-T X_bar U^-T."""
    inner = np.swapaxes(solve_triangular(y[0], np.swapaxes(solve_triangular(
        y[0], lu_permute(a_dot, y[1]), 0, True, True), -1, -2), 1, False, False), -1, -2)
    y_dot = (unit_lower(y[0]) @ triangle(inner, True, True) + triangle(inner, False, False) @ triangle(y[0], False),
             zeros_like(y[1]))
    inner_bar = triangle(np.swapaxes(unit_lower(y[0]), -1, -2) @ y_bar[0], True, True) \
        + triangle(y_bar[0] @ np.swapaxes(triangle(y[0], False), -1, -2), False)
    a_bar += lu_permute_bar(np.swapaxes(solve_triangular(y[0], np.swapaxes(solve_triangular(
        y[0], inner_bar, 1, True, True), -1, -2), 0, False, False), -1, -2), y[1])


@rule(runtime.lu_solve, **OWN, options=options_of("lu_solve"))
@primitive(scipy.linalg.lu_solve, written_as=runtime.lu_solve)
def lu_solve_(x, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """op(A) x = b with A = P.T L U (op: trans), as np.linalg.solve's rule: A_dot = P.T (L_dot U +
    L U_dot), and A's adjoint -op(g x.T) goes to L (strict lower: tril(P A_bar U.T, -1)) and U
    (upper: triu(L.T P A_bar))."""
    low = unit_lower(lu_and_piv[0])
    up = triangle(lu_and_piv[0], False)
    x_dot = lu_solve(lu_and_piv, b_dot - trans_op(lu_permute_bar(
        triangle(lu_and_piv_dot[0], True, True) @ up + low @ triangle(lu_and_piv_dot[0], False),
        lu_and_piv[1]), trans) @ x, trans)
    b_adjoint = lu_solve(lu_and_piv, x_bar, other_trans(trans))
    b_bar += b_adjoint
    a_adjoint = lu_permute(trans_op(solve_bar_a(b_adjoint, x), trans), lu_and_piv[1])
    lu_and_piv_bar += (-triangle(a_adjoint @ np.swapaxes(up, -1, -2), True, True)
                       - triangle(np.swapaxes(low, -1, -2) @ a_adjoint, False), zeros_like(lu_and_piv[1]))


# ---- the matrix exponential ----------------------------------------------------------------


@rule(runtime.expm, **OWN)
@primitive(scipy.linalg.expm, written_as=runtime.expm)
def expm_(y, A):
    """The Frechet derivative L(A, E) is the upper right block of expm([[A, E], [0, A]]); the
    adjoint is L(A.T, y_bar). Written with expm itself, whose rule this is: second order follows."""
    y_dot = upper_right(expm(frechet_block(A, A_dot)))
    A_bar += upper_right(expm(frechet_block(np.swapaxes(A, -1, -2), y_bar)))


# ---- banded solves, Sylvester equations, the matrix square root ----------------------------
# solve_banded's ab stands for the matrix banded_dense(l_and_u, ab): the rule is np.linalg.solve's,
# ab's adjoint the band of a's (banded_pack). solve_sylvester(a, b, q) is the x of a x + x b = q:
# the operator x -> a x + x b has the adjoint y -> a.T y + y b.T, so q's adjoint solves the
# transposed equation and a's and b's follow as np.linalg.solve's a's. sqrtm(A) is the X with
# X X = A: its tangent solves X X_dot + X_dot X = A_dot.


@rule(runtime.solve_banded, **OWN, options=options_of("solve_banded"))
@primitive(scipy.linalg.solve_banded, written_as=runtime.solve_banded)
def solve_banded_(x, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    x_dot = solve_banded(l_and_u, ab, b_dot - banded_dense(l_and_u, ab_dot) @ x)
    b_adjoint = np.linalg.solve(np.swapaxes(banded_dense(l_and_u, ab), -1, -2), x_bar)
    b_bar += b_adjoint
    ab_bar -= banded_pack(solve_bar_a(b_adjoint, x), l_and_u)


@rule(runtime.solve_sylvester, **OWN)
@primitive(scipy.linalg.solve_sylvester, written_as=runtime.solve_sylvester)
def solve_sylvester_(x, a, b, q):
    x_dot = solve_sylvester(a, b, q_dot - a_dot @ x - x @ b_dot)
    q_adjoint = solve_sylvester(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), x_bar)
    q_bar += q_adjoint
    a_bar -= q_adjoint @ np.swapaxes(x, -1, -2)
    b_bar -= np.swapaxes(x, -1, -2) @ q_adjoint


@rule(runtime.sqrtm, **OWN)
@primitive(scipy.linalg.sqrtm, written_as=runtime.sqrtm)
def sqrtm_(y, A):
    y_dot = solve_sylvester(y, y, A_dot)
    A_bar += solve_sylvester(np.swapaxes(y, -1, -2), np.swapaxes(y, -1, -2), y_bar)


# ---- the helpers of the rules above: linear, each with its own rule ------------------------


@rule(runtime.banded_dense, **OWN, linear=(1,))
def banded_dense_(y, l_and_u, ab):
    y_dot = banded_dense(l_and_u, ab_dot)
    ab_bar += banded_pack(y_bar, l_and_u)


@rule(runtime.banded_pack, **OWN, linear=(0,))
def banded_pack_(y, m, l_and_u):
    y_dot = banded_pack(m_dot, l_and_u)
    m_bar += banded_dense(l_and_u, y_bar)


@rule(runtime.triangle, **OWN, linear=(0,))
def triangle_(y, x, lower, unit_diagonal=False):
    y_dot = triangle(x_dot, lower, unit_diagonal)
    x_bar += triangle(y_bar, lower, unit_diagonal)


@rule(runtime.trans_op, **OWN, linear=(0,))
def trans_op_(y, x, trans):
    y_dot = trans_op(x_dot, trans)
    x_bar += trans_op(y_bar, trans)


@rule(runtime.unit_lower, **OWN)
def unit_lower_(y, lu):
    y_dot = triangle(lu_dot, True, True)
    lu_bar += triangle(y_bar, True, True)


@rule(runtime.lu_permute, **OWN, linear=(0,))
def lu_permute_(y, x, piv):
    y_dot = lu_permute(x_dot, piv)
    x_bar += lu_permute_bar(y_bar, piv)


@rule(runtime.lu_permute_bar, **OWN, linear=(0,))
def lu_permute_bar_(y, x, piv):
    y_dot = lu_permute_bar(x_dot, piv)
    x_bar += lu_permute(y_bar, piv)


@rule(runtime.frechet_block, **OWN, linear="all")
def frechet_block_(y, a, e):
    y_dot = frechet_block(a_dot, e_dot)
    a_bar += block_diagonal_sum(y_bar)
    e_bar += upper_right(y_bar)


@rule(runtime.upper_right, **OWN, linear="all")
def upper_right_(y, m):
    y_dot = upper_right(m_dot)
    m_bar += frechet_block(zeros_like(y_bar), y_bar)


@rule(runtime.block_diagonal_sum, **OWN, linear="all")
def block_diagonal_sum_(y, m):
    y_dot = block_diagonal_sum(m_dot)
    m_bar += frechet_block(y_bar, zeros_like(y_bar))


DECLARATIONS = [nondifferentiable(runtime.other_trans, pure=True, cheap=True)]
