"""scipy.linalg in a differentiated function, as JAX offers jax.scipy.linalg: solve_triangular,
cholesky, cho_factor / cho_solve, lu_factor / lu_solve and expm are primitives with derivative
rules (templates/scipy_linalg_rules.py) and compiled forms, called as users write them (imported
names, scipy.linalg.<name>, sla.<name>). Each derivative is of what SciPy reads: one triangle of
a triangular or Cholesky factor (zero gradient in the other), L and U of lu_factor's packed lu."""

import re

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg as sla
from scipy.linalg import (cho_factor, cho_solve, cholesky, expm, lu_factor, lu_solve, solve_sylvester, solve_triangular,
                          sqrtm)

import s2s
from s2s.testing import check_grads

_rng = np.random.default_rng(3)
A = _rng.standard_normal((3, 3)) + 3.0 * np.eye(3)
B = _rng.standard_normal((3, 2))
V = _rng.standard_normal(3)
# A matrix whose LU factorisation swaps rows (lu_factor's pivots [1, 1, 2]).
P = np.array([[0.1, 2.0, 0.3], [1.5, 0.2, 0.7], [0.4, 0.9, 3.0]])


# ---- the programs, each spelling SciPy as users do ----------------------------------------------


def triangular_loss(a, b, v):
    return (np.sum(solve_triangular(a, b, lower=True) ** 2) + np.sum(sla.solve_triangular(a, b, trans=1) * b)
            + np.sum(scipy.linalg.solve_triangular(a, v, trans="T", lower=True, unit_diagonal=True) * v)
            + np.sum(solve_triangular(a, v, 2, False, True, check_finite=False) ** 2))


def cholesky_loss(a):
    s = a @ a.T
    return np.sum(cholesky(s) ** 2 * a) + np.sum(scipy.linalg.cholesky(s, lower=True) * a)


def cho_solve_loss(a, b, v):
    s = a @ a.T + np.eye(3)
    factor = cho_factor(s)
    return (np.sum(cho_solve(factor, b) * b) + np.sum(sla.cho_solve(sla.cho_factor(s, lower=True), v) ** 2)
            + np.sum(cho_solve((np.triu(a), False), v) * v))


def cho_factor_read(a):
    """cho_factor's c read directly, in the triangle that holds the factor (SciPy leaves arbitrary
    data in the other; s2s zeros)."""
    c, low = cho_factor(a @ a.T, lower=True)
    return np.sum(np.tril(c) ** 2 * a)


def lu_solve_loss(a, b, v):
    return (np.sum(lu_solve(lu_factor(a), b) * b) + np.sum(sla.lu_solve(sla.lu_factor(a), v, trans=1) ** 2)
            + np.sum(scipy.linalg.lu_solve(lu_factor(a * 2.0), v, trans=2) * v))


def lu_read(a):
    """lu_factor's packed L and U read directly."""
    lu, piv = lu_factor(a)
    return np.sum(lu ** 2 * a)


def expm_loss(a):
    return np.sum(expm(a * 0.5) * a) + np.trace(sla.expm(a.T @ a * 0.1))


def everything(a, b, v):
    """One program of all of them, for the compiled columns (one compile); cho_factor's pair is
    held in a variable, passed on and indexed, as a Gaussian process's code does (its adjoints
    meet in a tuple, which Numba adds item by item)."""
    s = a @ a.T + np.eye(3)
    lu, piv = lu_factor(a)
    factor = cho_factor(s, lower=True)
    return (np.sum(solve_triangular(a, b, lower=True) ** 2) + np.sum(solve_triangular(a, v, trans=1) * v)
            + np.sum(cholesky(s) * a) + np.sum(cho_solve(factor, b) * b) + np.sum(np.log(np.diag(factor[0])))
            + np.sum(lu_solve((lu, piv), v, trans=1) ** 2) + np.sum(lu * a) + np.sum(expm(a * 0.3) * a))


CASES = [(triangular_loss, (A, B, V)), (cholesky_loss, (A,)), (cho_solve_loss, (A, B, V)), (cho_factor_read, (A,)),
         (lu_solve_loss, (P, B, V)), (lu_read, (P,)), (lu_read, (A,)), (expm_loss, (A * 0.4,)), (expm_loss, (A * 2.0,))]
IDS = [f"{fun.__name__}-{k}" for k, (fun, _) in enumerate(CASES)]


@pytest.mark.parametrize("fun, args", CASES, ids=IDS)
def test_derivatives_against_central_differences(fun, args):
    """Forward and reverse mode, every array argument, against central differences; the primal
    values against SciPy's own (check_grads runs the function as it is)."""
    check_grads(fun, args, order=1, modes=("fwd", "rev"), backend="python")


@pytest.mark.parametrize("fun, args", [CASES[k] for k in (0, 1, 2, 4, 5, 8)], ids=[IDS[k] for k in (0, 1, 2, 4, 5, 8)])
def test_second_derivatives_against_central_differences(fun, args):
    check_grads(fun, args, order=2, modes=("rev",), backend="python")


# ---- what SciPy reads: the gradient in the triangle it does not read is zero ----------------


def lower_solve(a, b):
    return np.sum(solve_triangular(a, b, lower=True, unit_diagonal=True) ** 2)


def upper_transposed_solve(a, b):
    return np.sum(solve_triangular(a, b, trans="T") ** 2)


def test_solve_triangular_gradient_is_zero_where_scipy_does_not_read():
    g = s2s.grad(lower_solve)(A, B)
    assert np.all(np.triu(g) == 0.0) and np.all(g[np.tril_indices(3, -1)] != 0.0)  # (unit diagonal: not read)
    g = s2s.grad(upper_transposed_solve)(A, B)
    assert np.all(np.tril(g, -1) == 0.0) and np.all(g[np.triu_indices(3)] != 0.0)


def test_solve_triangular_gradient_in_b_is_the_transposed_solve():
    """d/db sum(w * x) with T x = b is T^-T w."""
    w = np.array([[0.3, -1.0], [2.0, 0.5], [-0.7, 1.1]])

    def weighted(b):
        return np.sum(solve_triangular(A, b, lower=True) * w)

    np.testing.assert_allclose(s2s.grad(weighted)(B), np.linalg.solve(np.tril(A).T, w), rtol=1e-13)


def upper_cholesky(a):
    return np.sum(cholesky(a) * A)


def test_cholesky_reads_one_triangle():
    """The upper factor (SciPy's default) reads a's upper triangle: its gradient is zero below."""
    s = A @ A.T
    g = s2s.grad(upper_cholesky)(s)
    assert np.all(np.tril(g, -1) == 0.0)
    np.testing.assert_allclose(upper_cholesky(s), np.sum(np.linalg.cholesky(s).T * A), rtol=1e-14)


def factor_solve(c, b):
    return np.sum(cho_solve((c, True), b) * B)


def test_cho_solve_reads_the_triangle_its_flag_names():
    """c with data in both triangles (SciPy's cho_factor leaves the input's there): the value and
    the gradient are of c's lower triangle alone."""
    value, g = s2s.value_and_grad(factor_solve)(A, B)
    np.testing.assert_allclose(value, factor_solve(np.tril(A), B), rtol=1e-14)
    assert np.all(np.triu(g, 1) == 0.0) and np.all(g[np.tril_indices(3)] != 0.0)


# ---- LU: through lu_solve it is np.linalg.solve's derivative --------------------------------


def lu_solved(a, b):
    return np.sum(lu_solve(lu_factor(a), b) * B)


def test_lu_solve_of_lu_factor_has_the_derivative_of_solve():
    """x = A^-1 b: the gradient in A is -A^-T w x.T, in b A^-T w (w = B here), also where
    lu_factor swaps rows."""
    x = np.linalg.solve(P, B)
    w = np.linalg.solve(P.T, B)
    ga, gb = s2s.grad(lu_solved, argnums=(0, 1))(P, B)
    np.testing.assert_allclose(ga, -w @ x.T, rtol=1e-12)
    np.testing.assert_allclose(gb, w, rtol=1e-12)


# ---- expm: closed forms --------------------------------------------------------------------


def expm_trace(a):
    return np.trace(expm(a))


def expm_of_time(t):
    return expm(t * A * 0.3)


def test_expm_derivatives_of_closed_form():
    """d trace(expm(A)) / dA = expm(A).T; d/dt expm(t M) = M expm(t M)."""
    a = A * 0.7
    np.testing.assert_allclose(s2s.grad(expm_trace)(a), scipy.linalg.expm(a).T, rtol=1e-12)
    _, tangent = s2s.jvp(expm_of_time, (0.8,), (1.0,))
    np.testing.assert_allclose(tangent, A * 0.3 @ scipy.linalg.expm(0.8 * A * 0.3), rtol=1e-12)


# ---- det and inv: NumPy's derivatives ------------------------------------------------------


def det_inv_loss(a):
    return sla.det(a) * np.sum(sla.inv(a) ** 2) + sla.det(a @ a.T, check_finite=False)


def stacked_det_inv_loss(s):
    return np.sum(sla.det(s) ** 2) + np.sum(sla.inv(s) * s)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_det_and_inv(backend):
    check_grads(det_inv_loss, (A,), order=1, modes=("fwd", "rev"), backend=backend)
    if backend == "python":  # (of a stack of matrices, as SciPy takes them; s2s.jit takes one matrix)
        check_grads(det_inv_loss, (A,), order=2, modes=("rev",), backend=backend)
        check_grads(stacked_det_inv_loss, (np.stack([A, P]),), order=1, modes=("fwd", "rev"), backend=backend)
    else:
        assert s2s.jit(det_inv_loss)(A) == pytest.approx(det_inv_loss(A), rel=1e-12)


# ---- banded solves, Sylvester equations, the matrix square root ------------------------------

BANDS = np.array([[0.0, 0.4, -0.3, 0.8, 0.2], [4.1, 3.6, 5.0, 4.4, 3.9], [0.7, -0.5, 0.3, 0.6, 0.0]])
BANDS_TWO_BELOW = np.vstack([BANDS, [[0.2, -0.4, 0.1, 0.0, 0.0]]])
SMALL = np.array([[2.0, 0.3], [-0.4, 1.5]])


def banded_loss(ab, b):
    return (np.sum(np.sin(scipy.linalg.solve_banded((1, 1), ab, b)))
            + np.sum(sla.solve_banded((2, 1), BANDS_TWO_BELOW * ab[1], b) ** 2))


def sylvester_loss(a, b, q):
    return np.sum(np.sin(solve_sylvester(a, b, q))) + np.sum(solve_sylvester(a, a.T, q @ q.T) ** 2)


def root_loss(a):
    return np.sum(np.sin(np.real(sqrtm(0.5 * (a + a.T))))) + np.sum(sla.sqrtm(a) * A)


@pytest.mark.parametrize("fun, args", [(banded_loss, (BANDS, np.arange(5.0))), (sylvester_loss, (A, SMALL, B)),
                                       (root_loss, (A,))], ids=["solve_banded", "solve_sylvester", "sqrtm"])
def test_banded_sylvester_and_square_root(fun, args):
    """First order in both modes and second order against central differences, the compiled
    value and gradient against SciPy's and the python backend's (Numba: a dense solve of the band,
    the Kronecker form of the Sylvester equation, Denman-Beavers for sqrtm)."""
    check_grads(fun, args, order=2, modes=("fwd", "rev"), backend="python")
    argnums = tuple(range(len(args)))
    value, grads = s2s.jit(s2s.value_and_grad(fun, argnums=argnums))(*args)
    assert value == pytest.approx(fun(*args), rel=1e-12)
    for got, want in zip(grads, s2s.grad(fun, argnums=argnums)(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_banded_gradient_is_zero_in_the_corners_scipy_does_not_read():
    g = s2s.grad(lambda ab: np.sum(scipy.linalg.solve_banded((1, 1), ab, np.ones(5)) ** 2))(BANDS)
    assert g[0, 0] == 0.0 and g[2, -1] == 0.0 and np.all(g[1] != 0.0)


def negative_root(a):
    return np.sum(sqrtm(a))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_square_root_that_is_not_real_is_refused(backend):
    with pytest.raises(s2s.S2SError, match="sqrtm of this matrix is (complex|not real)"):
        s2s.jit(s2s.grad(negative_root), backend=backend)(-np.eye(2) + 0.1)


# ---- compiled (s2s.jit), batched (s2s.vmap) ---------------------------------------------------


def test_compiled_values_are_scipys():
    """The Numba forms: substitution, Gaussian elimination with SciPy's pivots, expm by scaling and
    squaring, within rounding of SciPy's results; expm over norms from small to large (squared
    up to 8 times)."""

    def factors(a, b, scale):
        lu, piv = lu_factor(a)
        return (solve_triangular(a, b, lower=True), solve_triangular(a, b[:, 0], trans=1, unit_diagonal=True),
                cholesky(a @ a.T), cho_solve(cho_factor(a @ a.T), b), cho_solve((a, True), b), lu, piv,
                lu_solve((lu, piv), b, trans=1), expm(a * scale / 3.0 - np.eye(3) * scale))

    compiled = s2s.jit(factors)
    for a, scale in ((A, 1e-3), (P, 0.1), (P.T * 5.0, 1.0), (A, 4.0), (P, 30.0)):
        for got, want in zip(compiled(a, B, scale), factors(a, B, scale)):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_compiled_gradient_against_central_differences():
    """s2s.jit(s2s.grad(f))'s compiled module (one compile of every rule: Numba takes a while)."""
    check_grads(everything, (P, B, V), order=1, modes=("rev",), backend="cpu")


def test_vmap_of_the_gradient_is_each_examples():
    """Per example (no batching rule: a stack is batched example by example)."""
    stack = np.stack([P, A, P.T + np.eye(3)])
    per_example = s2s.vmap(s2s.grad(everything), in_axes=(0, None, None))(stack, B, V)
    for k in range(3):
        np.testing.assert_allclose(per_example[k], s2s.grad(everything)(stack[k], B, V), rtol=1e-11)


# ---- refusals -----------------------------------------------------------------------------


def overwriting(a, b):
    return np.sum(solve_triangular(a, b, overwrite_b=True))


def overwriting_factor(a):
    return np.sum(cho_factor(a @ a.T, overwrite_a=True)[0])


def lettered_lu_solve(a, b):
    return np.sum(lu_solve(lu_factor(a), b, trans="T"))  # (SciPy's lu_solve takes 0, 1 or 2)


def _line_of(fun, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fun)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fun, args, said", [(overwriting, (A, B), "with overwrite_b=False only"),
                                             (overwriting_factor, (A,), "with overwrite_a=False only"),
                                             (lettered_lu_solve, (A, B), "takes trans 0, 1, 2, not 'T'")])
def test_options_not_differentiated_are_refused_at_the_users_line(fun, args, said):
    with pytest.raises(s2s.S2SError) as refused:
        s2s.grad(fun)(*args)
    message = str(refused.value)
    assert re.search(rf"test_rules_scipy_linalg\.py:{_line_of(fun, 'return')}:\d+", message), message
    assert said in message
