"""np.linalg.norm for every ord NumPy takes, with axis and keepdims: derivatives against
central differences, on the python backend and under Numba, and second derivatives of the
spectral and nuclear norms (through the SVD, refused where singular values repeat); options s2s
does not take are refused when it transforms, with the statement's location."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from sampling import compiled_sample


def vector_1(x):
    return np.linalg.norm(x, ord=1) * 2.0


def vector_inf(x):
    return np.linalg.norm(x, ord=np.inf) * 2.0


def vector_minus_inf(x):
    return np.linalg.norm(x, ord=-np.inf) * 2.0


def vector_3(x):
    return np.linalg.norm(x, 3) * 2.0


def vector_default(x):
    return np.linalg.norm(x) * 2.0


def matrix_1(x):
    return np.linalg.norm(x, ord=1) * 2.0


def matrix_minus_1(x):
    return np.linalg.norm(x, ord=-1) * 2.0


def matrix_inf(x):
    return np.linalg.norm(x, ord=np.inf) * 2.0


def matrix_fro(x):
    return np.linalg.norm(x, ord="fro") * 2.0


def matrix_2(x):
    return np.linalg.norm(x, ord=2) * 2.0


def matrix_minus_2(x):
    return np.linalg.norm(x, ord=-2) * 2.0


def matrix_nuc(x):
    return np.linalg.norm(x, ord="nuc") * 2.0


def rows(x):
    return np.sum(np.linalg.norm(x, axis=1) ** 2 * np.arange(1.0, 4.0))


def columns_inf(x):
    return np.sum(np.linalg.norm(x, ord=np.inf, axis=0) ** 2)


def stack_1(x):
    return np.sum(np.linalg.norm(x, ord=1, axis=(1, 2)) ** 2)


def stack_fro_keepdims(x):
    return np.sum(np.linalg.norm(x, ord="fro", axis=(1, 2), keepdims=True) ** 2)


def last_axis_3(x):
    return np.sum(np.linalg.norm(x, ord=3, axis=-1) ** 2)


def unknown_ord(x):
    return np.linalg.norm(x, ord="max")


RNG = np.random.default_rng(7)
VECTOR = RNG.normal(size=5)
MATRIX = RNG.normal(size=(3, 4))
STACK = RNG.normal(size=(2, 3, 4))
CASES = [(vector_1, VECTOR), (vector_inf, VECTOR), (vector_minus_inf, VECTOR), (vector_3, VECTOR),
         (vector_default, VECTOR), (matrix_1, MATRIX), (matrix_minus_1, MATRIX), (matrix_inf, MATRIX),
         (matrix_fro, MATRIX), (matrix_2, MATRIX), (matrix_minus_2, MATRIX), (matrix_nuc, MATRIX),
         (rows, MATRIX), (columns_inf, MATRIX)]
# (s2s.jit compiles these norms too: tested below, over a pair of axes and along an axis of a stack)
PYTHON_ONLY = [(stack_1, STACK), (stack_fro_keepdims, STACK), (last_axis_3, STACK)]


def _check(f, x, backend):
    expected = central_difference_grad(f, (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f), backend=backend)(x), expected, rtol=1e-6, atol=1e-7)
    value, tangent = s2s.jvp(f, (x,), (x,), backend=backend)
    assert value == pytest.approx(f(x), rel=1e-12)
    assert tangent == pytest.approx(np.sum(expected * x), rel=1e-6, abs=1e-7)
    assert s2s.jit(f, backend=backend)(x) == pytest.approx(f(x), rel=1e-12)


@pytest.mark.parametrize("f,x", CASES + PYTHON_ONLY, ids=lambda c: getattr(c, "__name__", ""))
def test_norm_derivatives_against_central_differences(f, x):
    _check(f, x, "python")


# Every second ord compiles in CI; S2S_FULL_JIT=1 compiles them all (tests/sampling.py).
UNDER_NUMBA = compiled_sample([f.__name__ for f, x in CASES], 2)


@pytest.mark.parametrize("f,x", [(f, x) for f, x in CASES if f.__name__ in UNDER_NUMBA],
                         ids=lambda c: getattr(c, "__name__", ""))
def test_norm_derivatives_under_numba(f, x):
    _check(f, x, "cpu")


def test_closed_forms():
    x = np.array([3.0, -4.0, 1.0])
    np.testing.assert_allclose(s2s.grad(vector_1)(x), 2 * np.sign(x))
    np.testing.assert_allclose(s2s.grad(vector_inf)(x), [0.0, -2.0, 0.0])
    m = np.array([[1.0, -5.0], [2.0, 3.0]])  # column sums 3, 8: the 1-norm is the second column's
    np.testing.assert_allclose(s2s.grad(matrix_1)(m), [[0.0, -2.0], [0.0, 2.0]])
    # Ties share the derivative, as np.max's: |x|_inf of (2, -2) -> (1, -1) / 2 each, times 2.
    np.testing.assert_allclose(s2s.grad(vector_inf)(np.array([2.0, -2.0])), [1.0, -1.0])


def test_second_derivatives_of_norms():
    x = np.array([3.0, -4.0, 1.0])
    n = np.linalg.norm(x)
    # d2/dx2 of 2 |x| = 2 (I - x x^T / |x|^2) / |x|; of the 1-norm and the inf-norm: 0.
    np.testing.assert_allclose(s2s.hessian(vector_default)(x), 2 * (np.eye(3) - np.outer(x, x) / n**2) / n,
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s2s.hessian(vector_1)(x), np.zeros((3, 3)))
    np.testing.assert_allclose(s2s.hessian(matrix_fro)(np.eye(2)).reshape(4, 4),
                               2 * (np.eye(4) - np.outer(np.eye(2).ravel(), np.eye(2).ravel()) / 2) / np.sqrt(2),
                               rtol=1e-12, atol=1e-15)
    # of a p-norm, p = 3 (x here: no zero): against differences of the gradient, on both backends
    grad = s2s.grad(vector_3)
    want = np.array([(grad(x + 1e-5 * e) - grad(x - 1e-5 * e)) / 2e-5 for e in np.eye(3)])
    for backend in ("python", "cpu"):
        np.testing.assert_allclose(s2s.jit(s2s.hessian(vector_3), backend=backend)(x), want, rtol=1e-7, atol=1e-9)


def test_an_unknown_ord_is_refused_where_it_is_written():
    with pytest.raises(s2s.S2SError, match=r"test_norms.py:\d+:\d+: np.linalg.norm takes ord='max' nowhere") as info:
        s2s.grad(unknown_ord)(VECTOR)
    assert 'ord="max"' in str(info.value)


def along_a_one_tuple(x):
    return np.sum(np.linalg.norm(x, axis=(2,)) ** 2)


def test_under_numba_a_one_tuple_axis_is_refused_with_the_statement():
    with pytest.raises(s2s.S2SError, match=r"test_norms.py:\d+:\d+: .*only as one int axis \(vector norms along it\) "
                                           r"or as a pair of int axes .*pass its int"):
        s2s.jit(s2s.grad(along_a_one_tuple))(STACK)


def frobenius_over_pairs_of_axes(x):
    weights = np.array([0.3, -1.2, 0.8, 2.0])
    return np.sum(np.linalg.norm(x, axis=(0, 1)) * weights) + np.sum(np.linalg.norm(x, "fro", (2, 0)) ** 2)


def test_under_numba_the_frobenius_norms_over_a_pair_of_axes():
    x = np.random.default_rng(5).standard_normal((3, 5, 4))
    expected = central_difference_grad(frobenius_over_pairs_of_axes, [x], 0)
    assert s2s.jit(frobenius_over_pairs_of_axes)(x) == pytest.approx(frobenius_over_pairs_of_axes(x), rel=1e-12)
    np.testing.assert_allclose(s2s.grad(frobenius_over_pairs_of_axes)(x), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.grad(frobenius_over_pairs_of_axes))(x), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(frobenius_over_pairs_of_axes))(x), expected, rtol=1e-6, atol=1e-7)


def matrix_norms_over_pairs_of_axes(x):
    """Matrix norms over pairs of axes of a 3-d array, the pair in either order ((2, 0): the
    matrices of (0, 2) transposed, which 1 and inf tell apart), negative, and kept. (Numba
    compiles the norms of each type of ord once: 2 and 1 are one compile.)"""
    weights = np.arange(1.0, 1.0 + x.shape[1])
    return (np.sum(np.sin(np.linalg.norm(x, "nuc", (0, 1)))) + np.sum(np.linalg.norm(x, 2, (2, 0)) * weights)
            + np.sum(np.linalg.norm(x, 1, (2, 0)) ** 2)
            + np.sum(np.linalg.norm(x, np.inf, (-1, -2), keepdims=True) * x))


def spectral_and_nuclear_norms_over_pairs_of_axes(x):
    return np.sum(np.sin(np.linalg.norm(x, "nuc", (0, 1)))) + np.sum(np.linalg.norm(x, 2, (2, 0)) ** 2)


# (random: distinct singular values, and no ties among the row or column sums)
PAIRS_X, PAIRS_V = np.random.default_rng(11).standard_normal((2, 3, 4, 5))


def test_under_numba_matrix_norms_over_a_pair_of_axes():
    """Under Numba they are the norms of a stack of matrices: the gradient and the tangent
    against central differences of NumPy's np.linalg.norm."""
    f, x, v = matrix_norms_over_pairs_of_axes, PAIRS_X, PAIRS_V
    expected = central_difference_grad(f, (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x), expected, rtol=1e-6, atol=1e-7)
    value, tangent = s2s.jvp(f, (x,), (v,), backend="cpu")
    assert value == pytest.approx(f(x), rel=1e-12)
    assert tangent == pytest.approx(np.sum(expected * v), rel=1e-7)


def test_under_numba_the_hessian_of_matrix_norms_over_a_pair_of_axes():
    """Along a vector (the jvp of the compiled gradient), against central differences of central
    differences of NumPy's np.linalg.norm: the second derivatives through the SVD of each matrix
    (those of 1 and inf are 0: matrix_norms_over_pairs_of_axes's gradient checks their D)."""
    f, x, v = spectral_and_nuclear_norms_over_pairs_of_axes, PAIRS_X, PAIRS_V
    h = 1e-4
    along_v = (central_difference_grad(f, (x + h * v,), 0, 1e-5)
               - central_difference_grad(f, (x - h * v,), 0, 1e-5)) / (2 * h)
    gradient, hessian_v = s2s.jvp(s2s.jit(s2s.grad(f)), (x,), (v,))
    np.testing.assert_allclose(gradient, central_difference_grad(f, (x,), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hessian_v, along_v, rtol=1e-5, atol=1e-5)


# ---- second derivatives of the spectral and nuclear norms (through the SVD) --------------


def norm_spectral(A):
    return np.linalg.norm(A, 2)


def norm_smallest(A):
    return np.linalg.norm(A, -2)


def norm_nuclear(A):
    return np.linalg.norm(A, "nuc")


def norm_nuclear_stack(A):
    return np.sum(np.linalg.norm(A, "nuc", axis=(1, 2)) ** 2)


def norm_spectral_axes(A):
    return np.sum(np.linalg.norm(A, 2, axis=(0, 2)))


def _fd_hessian(fun, x):
    g = s2s.grad(fun)
    return np.array([central_difference_grad(lambda y: g(y).ravel()[k], [x], 0).ravel() for k in range(x.size)])


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
@pytest.mark.parametrize("fun", [norm_spectral, norm_smallest, norm_nuclear])
def test_hessian_of_matrix_norms_through_the_svd(fun, shape):
    A = np.random.default_rng(1).normal(size=shape)
    want = _fd_hessian(fun, A)
    for got in (s2s.hessian(fun)(A), s2s.jit(s2s.hessian(fun))(A)):
        np.testing.assert_allclose(got.reshape(A.size, A.size), want, atol=1e-7)


def test_hessian_of_the_spectral_norm_is_the_closed_form_of_a_diagonal_matrix():
    # sigma_1(A) for A = [[3, e], [0, 1]] is the largest root of s^4 - (10 + e^2) s^2 + 9 = 0
    # (A^T A has trace 10 + e^2 and determinant 9).
    A = np.array([[3.0, 0.0], [0.0, 1.0]])
    h = s2s.hessian(norm_spectral)(A).reshape(4, 4)
    # d^2 sigma / de^2 at e = 0 from the root: sigma^2 = (10 + e^2 + sqrt((10 + e^2)^2 - 36)) / 2
    # gives d(sigma^2)/d(e^2) = (1 + 10 / 8) / 2 = 9 / 8, so sigma'' = 2 * (9 / 8) / (2 * 3) = 3 / 8.
    assert h[1, 1] == pytest.approx(3 / 8)
    assert h[0, 0] == pytest.approx(0.0, abs=1e-12)  # sigma is linear in a00 there


def norms_of_rows_cubed(X):
    return np.sum(np.linalg.norm(X, axis=1) ** 3)


def norms_of_columns_kept(X):
    return np.sum(np.tanh(X / np.linalg.norm(X, axis=0, keepdims=True)) * X)


def inf_norms_of_rows_kept(X):
    return np.sum(np.linalg.norm(X, ord=np.inf, axis=-1, keepdims=True) * X)


@pytest.mark.parametrize("fun", [norms_of_rows_cubed, norms_of_columns_kept, inf_norms_of_rows_kept])
def test_hessian_of_the_vector_norms_along_an_axis_of_a_matrix(fun):
    """Its rows' (or columns') norms, on both backends, against central differences of the gradient."""
    X = np.random.default_rng(7).standard_normal((3, 2))
    want = _fd_hessian(fun, X)
    for got in (s2s.hessian(fun)(X), s2s.jit(s2s.hessian(fun))(X)):
        np.testing.assert_allclose(got.reshape(X.size, X.size), want, rtol=1e-6, atol=1e-7)


def norms_along_an_axis_of_a_stack(X):
    """Vector norms along each axis of a 3-d array, the axis dropped or kept, ord 2 and 1."""
    weights = np.arange(24.0).reshape(2, 3, 4) / 10.0 - 1.0
    return (np.sum(np.linalg.norm(X, axis=-1) ** 3 * weights[:, :, 0]) + np.sum(np.linalg.norm(X, axis=0, keepdims=True) * X)
            + np.sum(np.linalg.norm(X, 1, axis=1) * weights[:, 0, :]) + np.sum(np.sin(np.linalg.norm(X, axis=1))))


def distances(points):
    """|p_i - p_j| of points (n, 3), as a physics code writes it: a norm along the last axis of a 3-d array."""
    differences = points[:, None, :] - points[None, :, :]
    return np.sum(np.linalg.norm(differences + 1e-3, axis=-1) ** 2)


@pytest.mark.parametrize("fun, shape", [(norms_along_an_axis_of_a_stack, (2, 3, 4)), (distances, (4, 3))],
                         ids=["stack", "distances"])
def test_vector_norms_along_an_axis_of_an_array_under_numba(fun, shape):
    """The vectors along the axis are the rows of a matrix under Numba (the other axes in order):
    the value NumPy's, gradient and tangent against central differences, the Hessian against
    differences of the gradient (tests/test_norms.py's python-backend tests cover the other ords)."""
    X = np.random.default_rng(8).standard_normal(shape)
    expected = central_difference_grad(fun, [X], 0)
    assert s2s.jit(fun)(X) == pytest.approx(fun(X), rel=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(X), expected, rtol=1e-6, atol=1e-7)
    if fun is distances:  # (the tangent and the curvature of each kind of norm: of one, to keep the compiles few)
        assert s2s.jvp(fun, (X,), (X,), backend="cpu")[1] == pytest.approx(np.sum(expected * X), rel=1e-6)
        np.testing.assert_allclose(s2s.jit(s2s.hessian(fun))(X).reshape(X.size, X.size), _fd_hessian(fun, X),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fun", [norm_nuclear_stack, norm_spectral_axes])
def test_hessian_of_matrix_norms_of_stacks(fun):
    A = np.random.default_rng(2).normal(size=(2, 3, 4))
    np.testing.assert_allclose(s2s.hessian(fun)(A).reshape(A.size, A.size), _fd_hessian(fun, A), atol=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hessian_of_the_spectral_norm_at_repeated_singular_values_is_a_located_refusal(backend):
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(s2s.hessian(norm_spectral), backend=backend)(np.eye(3))
    message = str(info.value)
    assert "test_norms.py:" in message and "distinct" in message and "ord='fro'" in message


def norm_of_a_display(s):
    return np.linalg.norm((s, s + 2.0)) + np.linalg.norm([s * s, 1.0, s], 1) + np.linalg.norm([[s, 1.0], [2.0, s]])


def test_norm_of_a_tuple_or_list_of_numbers_under_numba():
    """NumPy's norm of a display is that of its array: s2s.jit makes the array (Numba's norm takes
    arrays alone), in the norm and in its derivatives."""
    for s in (0.5, -1.3):
        value, grad = s2s.jit(s2s.value_and_grad(norm_of_a_display))(s)
        assert value == pytest.approx(norm_of_a_display(s), rel=1e-14)
        want = central_difference_grad(norm_of_a_display, (s,), 0)
        assert grad == pytest.approx(want, rel=1e-7)
        assert s2s.grad(norm_of_a_display)(s) == pytest.approx(want, rel=1e-7)
