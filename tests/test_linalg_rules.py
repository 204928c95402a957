"""The rules of np.moveaxis, np.tensordot, np.kron, np.linalg.slogdet, np.linalg.cholesky,
np.linalg.eigh, np.linalg.eigvalsh, np.linalg.eig (real eigenvalues), np.linalg.qr, np.linalg.pinv, np.linalg.svd and
np.linalg.lstsq, and the array methods .cumsum(), .cumprod() and .swapaxes() (routed to their functions);
np.linalg.det, inv and solve of stacks of matrices. (np.linalg.norm: test_norms.py;
np.linalg.matrix_power: test_rules_polynomials.py.)

Each is checked against central finite differences (and closed forms where they are short):
gradients on the python backend and under s2s.jit, Jacobians in forward and reverse mode,
forward mode under s2s.jit, vmap of the gradient, Hessians (forward over reverse) on both
backends, and what s2s.jit refuses, at the user's line."""

import re

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from sampling import compiled_sample

# ---- programs -----------------------------------------------------------------------------
# T is a (2, 3, 4) array, B a (4, 3, 2) one, A a 3x3 matrix with a negative determinant, P a
# symmetric positive-definite 3x3 matrix, X a 3x3 matrix; the weights make every element count.

_rng = np.random.default_rng(21)
T = _rng.standard_normal((2, 3, 4))
B = _rng.standard_normal((4, 3, 2))
A = np.array([[0.3, 1.2, -0.4], [0.9, -0.2, 0.5], [-0.6, 0.7, 1.1]])
X = 0.5 * _rng.standard_normal((3, 3))
P = X @ X.T + np.eye(3)
W = _rng.standard_normal((3, 3))
assert np.linalg.det(A) < 0


def moveaxis_loss(t):
    """An int and a tuple source and destination (moveaxis is a transpose)."""
    m = np.moveaxis(t, 0, -1)  # (3, 4, 2)
    n = np.moveaxis(t, (0, 2), (1, 0))  # (4, 2, 3)
    return np.sum(m**2 * np.arange(24.0).reshape(3, 4, 2)) + np.sum(np.sin(n) * np.moveaxis(m, -1, 0)[0, 0, 0])


def tensordot_loss(t, b):
    """axes as an int, a pair of tuples paired out of order, and a pair of ints."""
    u = np.tensordot(t, b, 1)  # t's last axis with b's first: (2, 3, 3, 2)
    v = np.tensordot(t, b, axes=((2, 1), (0, 1)))  # (2, 2)
    w = np.tensordot(t, t, axes=(0, 0))  # (3, 4, 3, 4)
    return np.sum(u**2) + np.sum(np.cos(v)) + np.sum(w * w[0, 0, 0, 0])


def kron_loss(a, x):
    """Two matrices, and two vectors."""
    k = np.kron(a, x * 2.0)  # (9, 9)
    v = np.kron(a[0], x[:, 1])  # (9,)
    return np.sum(k**2 * np.arange(81.0).reshape(9, 9)) + np.sum(v * np.sin(v))


def methods_loss(a):
    return (np.sum(a.cumsum() ** 2) + np.sum(a.cumsum(axis=1) * a) + np.sum(a.cumprod(0) * a)
            + np.sum(a.swapaxes(0, 1) * W))


def slogdet_loss(a):
    """Unpacked, and read by item; sign is -1 at A (its derivative is zero)."""
    sign, logdet = np.linalg.slogdet(a)
    again = np.linalg.slogdet(a @ a.T + a)
    return sign * logdet**2 + again[1] * again[0] + logdet


def cholesky_loss(p):
    return np.sum(np.linalg.cholesky(p) * W) + np.sum(np.linalg.cholesky(p) ** 3)


def cholesky_of_gram(x):
    """Cholesky of a symmetric matrix built from x: every entry of x moves both triangles."""
    return np.sum(np.log(np.diag(np.linalg.cholesky(x @ x.T + np.eye(3))))) + np.sum(
        np.linalg.cholesky(x.T @ x + np.eye(3)) * W)


def eigh_loss(s):
    """Eigenvalues and eigenvectors (|v| does not depend on the sign LAPACK picks)."""
    w, v = np.linalg.eigh(s)
    again = np.linalg.eigh(s @ s.T)
    return np.sum(w * np.arange(1.0, 4.0)) + np.sum(np.abs(v) * W) + np.sum(again[1] ** 2 * W) + np.sum(again[0])


def eigh_upper_loss(x):
    """UPLO="U": NumPy reads x's upper triangle (an x that is not symmetric: the lower one has no derivative)."""
    w, v = np.linalg.eigh(x, "U")
    again = np.linalg.eigh(x @ x.T + x, UPLO="u")
    return (np.sum(w * np.arange(1.0, 4.0)) + np.sum(v**2 * W) + np.sum(np.abs(again[1]) * W)
            + np.sum(np.linalg.eigvalsh(x, UPLO="U") ** 3) + np.sum(np.linalg.eigvalsh(x, "L") * np.arange(3.0)))


def eigh_of_the_upper_triangle(x):
    w, v = np.linalg.eigh(x, UPLO="U")
    return np.sum(w**3) + np.sum(v**2 * W) + np.sum(np.linalg.eigvalsh(x, "U") * np.arange(3.0))


def eigh_of_a_given_triangle(x, uplo):
    return np.sum(np.linalg.eigvalsh(x, uplo) ** 2)


def eigh_of_a_computed_triangle(x):
    uplo = "U" if x[0, 0] > 0 else "L"
    return np.sum(np.linalg.eigvalsh(x, uplo))


def eigvalsh_loss(s):
    return np.sum(np.linalg.eigvalsh(s) ** 3 * np.arange(1.0, 4.0))


S = X + X.T  # symmetric, distinct eigenvalues
E = (np.eye(3) + 0.4 * W) @ np.diag([0.5, -1.2, 2.0]) @ np.linalg.inv(np.eye(3) + 0.4 * W)  # real eigenvalues


def eig_loss(e):
    """Of a matrix that is not symmetric and of a symmetric one (v ** 2 and |v| do not depend on
    the signs LAPACK picks)."""
    w, v = np.linalg.eig(e)
    again = np.linalg.eig(e @ e.T)
    return np.sum(w * np.arange(1.0, 4.0)) + np.sum(v**2 * W) + np.sum(np.abs(again[1]) * W) + np.sum(again[0] ** 2)


def eigvals_loss(e):
    return np.sum(np.linalg.eigvals(e) * np.arange(1.0, 4.0)) + np.sum(np.linalg.eigvals(e @ e.T) ** 2)


def eig_of_triangular(x):
    """The eigenvalues of a triangular matrix are its diagonal, in order."""
    w, v = np.linalg.eig(np.triu(x) + np.diag(np.arange(3.0)))
    return np.sum(w**2 * np.arange(1.0, 4.0)) + np.sum(v[:, 2] ** 2 * np.arange(1.0, 4.0))
TALL = _rng.standard_normal((4, 3))


def qr_loss(a):
    q, r = np.linalg.qr(a)
    again = np.linalg.qr(a[:3] @ a[1:].T)
    return np.sum(q * np.arange(12.0).reshape(4, 3)) + np.sum(r**2 * W) + np.sum(again[0] * again[1])

def pinv_loss(a):
    """Of a tall and of a wide matrix of full rank."""
    return np.sum(np.linalg.pinv(a) * W[:, :1]) + np.sum(np.linalg.pinv(a.T) ** 2 * np.arange(12.0).reshape(4, 3))


# name -> (function, arguments); the gradient is taken with respect to the first.
CASES = {
    "moveaxis": (moveaxis_loss, (T,)),
    "tensordot": (tensordot_loss, (T, B)),
    "kron": (kron_loss, (A, X)),
    "methods": (methods_loss, (A,)),
    "slogdet": (slogdet_loss, (A,)),
    "cholesky": (cholesky_loss, (P,)),
    "cholesky_of_gram": (cholesky_of_gram, (X,)),
    "eigh": (eigh_loss, (S,)),
    "eigvalsh": (eigvalsh_loss, (S,)),
    "eig": (eig_loss, (E,)),
    "eigvals": (eigvals_loss, (E,)),
    "eigh_upper": (eigh_upper_loss, (X,)),
    "eig_of_triangular": (eig_of_triangular, (X,)),
    "qr": (qr_loss, (TALL,)),
    "pinv": (pinv_loss, (TALL,)),
}


def _fd(fn, args, k=0):
    return central_difference_grad(fn, list(args), k)


def _fd_jacobian(fn, x, h=1e-6):
    columns = []
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = h
        columns.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * h))
    return np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(fn(x)) + x.shape)


# ---- gradients --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_python_matches_finite_differences(name):
    fn, args = CASES[name]
    for k in range(len(args)):
        got = s2s.grad(fn, argnums=k)(*args)
        np.testing.assert_allclose(got, _fd(fn, args, k), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_jit_matches_finite_differences_and_python(name):
    fn, args = CASES[name]
    got = s2s.jit(s2s.grad(fn))(*args)
    np.testing.assert_allclose(got, _fd(fn, args), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, s2s.grad(fn)(*args), rtol=1e-10, atol=1e-10)


def test_vjp_of_each_argument():
    out, pullback = s2s.vjp(tensordot_loss, T, B)
    t_bar, b_bar = pullback(1.0)
    np.testing.assert_allclose(out, tensordot_loss(T, B), rtol=1e-12)
    np.testing.assert_allclose(t_bar, _fd(tensordot_loss, (T, B), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b_bar, _fd(tensordot_loss, (T, B), 1), rtol=1e-6, atol=1e-6)


# ---- closed forms -----------------------------------------------------------------------------


def logabsdet(a):
    return np.linalg.slogdet(a)[1]


def logdet_by_cholesky(p):
    return 2.0 * np.sum(np.log(np.diag(np.linalg.cholesky(p))))


def weighted_kron(a, x):
    return np.sum(np.kron(a, x) * np.arange(81.0).reshape(9, 9))


def weighted_tensordot(t, b):
    return np.sum(np.tensordot(t, b, axes=((2, 1), (0, 1))) * W[:2, :2])


def test_closed_forms():
    # d log|det A| / dA = inv(A).T, at a negative determinant too
    np.testing.assert_allclose(s2s.grad(logabsdet)(A), np.linalg.inv(A).T, rtol=1e-10)
    # log det P through its Cholesky factor: the gradient of log det S is inv(S); NumPy reads
    # P's lower triangle only, so an entry below the diagonal carries both S[i, j] and S[j, i]
    inverse = np.linalg.inv(P)
    expected = np.tril(2.0 * inverse, -1) + np.diag(np.diag(inverse))
    np.testing.assert_allclose(s2s.grad(logdet_by_cholesky)(P), expected, rtol=1e-10)
    # sum(kron(a, x) * C): a's adjoint is the blocks of C contracted with x, and the other way
    c = np.arange(81.0).reshape(3, 3, 3, 3).transpose(0, 2, 1, 3)  # c[i, j] is block (i, j)
    np.testing.assert_allclose(s2s.grad(weighted_kron)(A, X), np.einsum("ijpq,pq->ij", c, X), rtol=1e-12)
    np.testing.assert_allclose(s2s.grad(weighted_kron, argnums=1)(A, X), np.einsum("ijpq,ij->pq", c, A),
                               rtol=1e-12)
    # sum(tensordot(t, b, ((2, 1), (0, 1))) * w): t's adjoint is w contracted with b
    np.testing.assert_allclose(s2s.grad(weighted_tensordot)(T, B), np.einsum("ik,cbk->ibc", W[:2, :2], B),
                               rtol=1e-12)


def kron_with_a_number(s, x):
    return np.sum(np.sin(np.kron(s, x))) + np.sum(np.kron(x, s * 2.0) ** 2)


def test_kron_of_a_number_is_the_product_on_both_backends():
    """np.kron(s, x) of a number s is s * x (x's shape), under s2s.jit too."""
    for backend in ("python", "cpu"):
        assert s2s.jit(kron_with_a_number, backend=backend)(0.7, X) == pytest.approx(kron_with_a_number(0.7, X))
        got = s2s.jit(s2s.grad(kron_with_a_number, argnums=(0, 1)), backend=backend)(0.7, X)
        assert got[0] == pytest.approx(_fd(kron_with_a_number, (0.7, X), 0), rel=1e-7)
        np.testing.assert_allclose(got[1], _fd(kron_with_a_number, (0.7, X), 1), rtol=1e-6, atol=1e-8)


def stacked_pinv(a):
    return np.sum(np.sin(np.linalg.pinv(a)))


def test_pinv_of_a_stack_of_matrices_under_jit():
    """Numba's pinv takes one matrix: s2s.jit takes each of a stack (tall ones here)."""
    stack = np.stack([TALL, TALL[::-1] * 1.5])
    value, grad = s2s.jit(s2s.value_and_grad(stacked_pinv))(stack)
    assert value == pytest.approx(stacked_pinv(stack), rel=1e-13)
    np.testing.assert_allclose(grad, _fd(stacked_pinv, (stack,)), rtol=1e-6, atol=1e-8)


def test_cholesky_agrees_with_the_symmetrised_gradient_along_symmetric_directions():
    """JAX symmetrises: its gradient is (G + G.T) / 2; both give one directional derivative
    along a symmetric perturbation, which finite differences check too."""
    g = s2s.grad(cholesky_loss)(P)
    np.testing.assert_allclose(g, np.tril(g), atol=0)  # nothing of the upper triangle is read
    direction = W + W.T
    h = 1e-6
    expected = (cholesky_loss(P + h * direction) - cholesky_loss(P - h * direction)) / (2 * h)
    np.testing.assert_allclose(np.sum(g * direction), expected, rtol=1e-6)
    symmetrised = (g + g.T) / 2  # (not JAX's own number: a symmetric matrix of one inner product)
    np.testing.assert_allclose(np.sum(symmetrised * direction), expected, rtol=1e-6)


def eigenvalue_sum_of_cubes(s):
    w, v = np.linalg.eigh(s)
    return np.sum(w**3)


def eigvalsh_sum_of_cubes(s):
    return np.sum(np.linalg.eigvalsh(s) ** 3)


def test_eigenvalues_at_a_repeated_eigenvalue():
    """sum(w ** 3) = trace(s ** 3): its gradient 3 (s @ s).T holds where eigenvalues repeat
    (the identity), because nothing reads the eigenvectors; the second derivative is NaN there."""
    s = np.diag([2.0, 2.0, -1.0])
    expected = 3.0 * s @ s
    np.testing.assert_allclose(s2s.grad(eigenvalue_sum_of_cubes)(s), expected, atol=1e-12)
    np.testing.assert_allclose(s2s.grad(eigvalsh_sum_of_cubes)(s), expected, atol=1e-12)
    with np.errstate(all="ignore"):
        assert np.isnan(s2s.hessian(eigenvalue_sum_of_cubes)(s)).any()


def test_eigenvectors_at_a_repeated_eigenvalue_are_not_finite():
    """Any rotation within a repeated eigenvalue's eigenspace is as good a result: no derivative."""
    def first_vector(s):
        return np.sum(np.linalg.eigh(s)[1][:, 0] * W[0])

    with np.errstate(all="ignore"):
        got = s2s.grad(first_vector)(np.eye(3))
    assert not np.isfinite(got).all()


# ---- Jacobians: forward and reverse mode ------------------------------------------------------


def moveaxis_vec(t):
    return np.moveaxis(t * t, (0, 1), (2, 0))


def tensordot_vec(t):
    return np.tensordot(t, np.sin(t), axes=((0, 2), (0, 2)))


def kron_vec(a):
    return np.kron(a * a, a[:2, :2])


def kron_mixed_vec(a):
    return np.kron(a[0], a[1:] * 2.0)  # a vector and a matrix (the python backend)


def slogdet_vec(a):
    return np.linalg.slogdet(a * a[0, 0])[1] * a[1]


def cholesky_vec(p):
    return np.linalg.cholesky(p * p)


def swapaxes_vec(t):
    return t.swapaxes(0, 2).cumsum(axis=1)


def eigh_vec(s):
    w, v = np.linalg.eigh(s * s)
    return w[:, None] * v * v


def eigvalsh_vec(s):
    return np.linalg.eigvalsh(np.sin(s))


def qr_vec(a):
    q, r = np.linalg.qr(a * a)
    return q[:, :2] * r[0, 1]


def eig_vec(e):
    w, v = np.linalg.eig(e * e)
    return v**2 * w


def pinv_vec(a):
    return np.linalg.pinv(a * a)


VECTOR_CASES = {"eig": (eig_vec, E), "pinv": (pinv_vec, TALL), "qr": (qr_vec, TALL), "eigh": (eigh_vec, S), "eigvalsh": (eigvalsh_vec, S), "moveaxis": (moveaxis_vec, T), "tensordot": (tensordot_vec, T), "kron": (kron_vec, A),
                "kron_mixed": (kron_mixed_vec, A), "slogdet": (slogdet_vec, A), "cholesky": (cholesky_vec, P),
                "swapaxes": (swapaxes_vec, T)}


@pytest.mark.parametrize("name", sorted(VECTOR_CASES))
def test_jacobians_match_finite_differences(name):
    fn, x = VECTOR_CASES[name]
    expected = _fd_jacobian(fn, x)
    np.testing.assert_allclose(s2s.jacfwd(fn)(x), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jacrev(fn)(x), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["tensordot", "kron", "slogdet", "cholesky", "eigh", "eig", "qr", "pinv"])
def test_forward_mode_under_jit(name):
    fn, x = VECTOR_CASES[name]
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fn))(x), _fd_jacobian(fn, x), rtol=1e-6, atol=1e-6)


def test_eigh_of_the_upper_triangle_has_an_upper_triangular_gradient():
    for got in (s2s.grad(eigh_of_the_upper_triangle)(X), s2s.jit(s2s.grad(eigh_of_the_upper_triangle))(X)):
        np.testing.assert_array_equal(np.tril(got, -1), np.zeros((3, 3)))
        np.testing.assert_allclose(got, _fd(eigh_of_the_upper_triangle, (X,)), rtol=1e-6, atol=1e-6)
    # (a string argument is static: written into the code generated for the call)
    for uplo in ("U", "L"):
        np.testing.assert_allclose(s2s.grad(eigh_of_a_given_triangle)(X, uplo),
                                   _fd(lambda x: eigh_of_a_given_triangle(x, uplo), (X,)), rtol=1e-6, atol=1e-6)
    with pytest.raises(s2s.S2SError, match=r"test_linalg_rules.py:\d+:\d+: .* write UPLO as a constant, 'L' or 'U'"):
        s2s.grad(eigh_of_a_computed_triangle)(X)


def test_eigh_of_the_upper_triangle_under_jit_is_numpys_with_its_signs():
    """Under s2s.jit LAPACK reads the upper triangle as NumPy has it read (of the matrix made
    symmetric from it, Numba's eigh reduces the lower one, and some eigenvectors came out of the
    opposite sign): value and gradient of a sum that sees the signs, on 6 x 6 matrices too."""
    for x in (X, np.random.default_rng(6).standard_normal((6, 6))):
        w = np.cos(np.arange(x.size, dtype=float)).reshape(x.shape)
        assert s2s.jit(signed_eigenvectors)(x, w) == pytest.approx(signed_eigenvectors(x, w), rel=1e-12)
        np.testing.assert_allclose(s2s.jit(s2s.grad(signed_eigenvectors))(x, w),
                                   _fd(lambda m: signed_eigenvectors(m, w), (x,)), rtol=1e-5, atol=1e-6)


def signed_eigenvectors(x, w):
    """Eigenvectors read with their signs, which LAPACK picks by the triangle it reduces."""
    values, vectors = np.linalg.eigh(x, UPLO="U")
    return np.sum(np.sin(values)) + np.sum(np.sin(vectors) * w)


@pytest.mark.parametrize("transform", [s2s.grad, lambda f: s2s.jit(s2s.grad(f))], ids=["python", "jit"])
def test_eig_with_complex_eigenvalues_is_refused_when_it_runs(transform):
    rotation = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(s2s.S2SError, match=r"test_linalg_rules.py:\d+:\d+: np.linalg.eig's eigenvalues are complex "
                                           r"here, and s2s differentiates real programs"):
        transform(eig_loss)(rotation)
    with pytest.raises(s2s.S2SError, match=r"test_linalg_rules.py:\d+:\d+: np.linalg.eig's eigenvalues are complex "):
        transform(eigvals_loss)(rotation)
    np.testing.assert_allclose(transform(eig_loss)(E), _fd(eig_loss, (E,)), rtol=1e-6, atol=1e-6)


def test_jvp_of_slogdet_gives_a_zero_sign_tangent():
    (sign, logdet), (sign_dot, logdet_dot) = s2s.jvp(lambda a: np.linalg.slogdet(a), (A,), (W,))
    assert sign == -1.0 and sign_dot == 0.0
    np.testing.assert_allclose(logdet_dot, np.trace(np.linalg.solve(A, W)), rtol=1e-12)


# ---- vmap of the gradient ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_of_grad_matches_per_example_gradients(name):
    fn, args = CASES[name]
    batch = np.stack([args[0], args[0] * 1.1, args[0] * 0.9])
    expected = np.array([_fd(fn, (x,) + tuple(args[1:])) for x in batch])
    in_axes = (0,) + (None,) * (len(args) - 1)
    got = s2s.vmap(s2s.grad(fn), in_axes=in_axes)(batch, *args[1:])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_vmap_of_grad_under_jit():
    batch = np.stack([T, T * 1.1, T * 0.9])
    expected = np.array([_fd(tensordot_loss, (t, B)) for t in batch])
    got = s2s.jit(s2s.vmap(s2s.grad(tensordot_loss), in_axes=(0, None)))(batch, B)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


# ---- second order -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_matches_finite_differences_of_the_gradient(name):
    fn, args = CASES[name]
    grad = s2s.grad(fn)
    expected = _fd_jacobian(lambda z: grad(z, *args[1:]), args[0], h=1e-5)
    np.testing.assert_allclose(s2s.hessian(fn)(*args), expected, rtol=1e-5, atol=1e-5)


# Half of them compile in CI; S2S_FULL_JIT=1 compiles all (tests/sampling.py).
@pytest.mark.parametrize("name", sorted(compiled_sample(
    ["tensordot", "kron", "slogdet", "cholesky_of_gram", "moveaxis", "eigh", "qr", "pinv"], 2)))
def test_hessian_under_jit(name):
    fn, args = CASES[name]
    np.testing.assert_allclose(s2s.jit(s2s.hessian(fn))(*args), s2s.hessian(fn)(*args), rtol=1e-9, atol=1e-9)


# ---- stacks of matrices (the python backend: Numba's np.linalg takes matrices only) ----------


def stacked_loss(s):
    sign, logdet = np.linalg.slogdet(s)
    gram = s @ np.swapaxes(s, -1, -2) + np.eye(3)
    w, v = np.linalg.eigh(gram)
    q, r = np.linalg.qr(s)
    return (np.sum(logdet * sign) + np.sum(np.linalg.cholesky(gram) ** 2) + np.sum(w[..., None] * np.abs(v))
            + np.sum(np.linalg.eigvalsh(gram) ** 2) + np.sum(q * W) + np.sum(r**2) + np.sum(np.linalg.pinv(s) * W))


def test_stacks_of_matrices_on_the_python_backend():
    stack = np.stack([A, X + np.eye(3)])
    np.testing.assert_allclose(s2s.grad(stacked_loss)(stack), _fd(stacked_loss, (stack,)), rtol=1e-6, atol=1e-6)


# ---- tuple(...) and list(...) of a tuple result ----------------------------------------------
# tuple(np.linalg.eigh(p)) is (w, V) itself (a plain tuple, not the namedtuple), list(...) [w, V]: the
# items are the rule's, read one by one.


def eigh_as_tuple_loss(p):
    w, v = tuple(np.linalg.eigh(p))
    return np.sum(w * np.arange(1.0, 4.0)) + np.sum(v[:, 0] ** 2 * W[0])  # (a column's sign does not count)


def slogdet_as_list_loss(a):
    parts = list(np.linalg.slogdet(a))
    return parts[0] * parts[1] + np.sum(list(np.linalg.qr(a))[1] ** 2)


def eigh_items_kept_loss(p):
    items = tuple(np.linalg.eigh(p))
    return items[0][2] * np.sum(tuple((items[0], p[0]))[1])


def eigh_as_tuple(p):
    return tuple(np.linalg.eigh(p))


_TUPLED = [(eigh_as_tuple_loss, P), (slogdet_as_list_loss, A), (eigh_items_kept_loss, P)]


@pytest.mark.parametrize("fn, arg", _TUPLED, ids=[fn.__name__ for fn, _ in _TUPLED])
def test_tuple_and_list_of_a_tuple_result(fn, arg):
    expected = _fd(fn, (arg,))
    np.testing.assert_allclose(s2s.grad(fn)(arg), expected, rtol=1e-6, atol=1e-6)
    direction = np.cos(np.arange(9.0)).reshape(3, 3)
    h = 1e-6
    _, tangent = s2s.jvp(fn, (arg,), (direction,))
    np.testing.assert_allclose(tangent, (fn(arg + h * direction) - fn(arg - h * direction)) / (2 * h),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fn))(arg), expected, rtol=1e-6, atol=1e-6)


def test_tuple_of_a_namedtuple_result_is_a_plain_tuple():
    direction = np.cos(np.arange(9.0)).reshape(3, 3)
    values, tangents = s2s.jvp(eigh_as_tuple, (P,), (direction + direction.T,))
    assert type(values) is tuple and type(tangents) is tuple
    np.testing.assert_allclose(values[0], np.linalg.eigh(P)[0], rtol=1e-12)
    h = 1e-6
    np.testing.assert_allclose(tangents[0], (np.linalg.eigvalsh(P + h * (direction + direction.T))
                                             - np.linalg.eigvalsh(P - h * (direction + direction.T))) / (2 * h),
                               rtol=1e-6, atol=1e-6)


# np.linalg.inv, solve, det, slogdet and cholesky of a stack under s2s.jit: Numba's take one matrix, the
# runtime's forms (s2s/runtime/overloads/linalg.py) each matrix of the stack, and @ of stacks
# each pair of matrices, the leading axes broadcast as NumPy's.
SQUARE_STACK = np.stack([A, X + np.eye(3)])
STACK_RHS = _rng.standard_normal((2, 3, 2))


def inv_det_stack_loss(s):
    return np.sum(np.linalg.inv(s) * W) + np.sum(np.linalg.det(s) * np.array([0.7, -1.3]))


def slogdet_stack_loss(s):
    sign, logdet = np.linalg.slogdet(s)
    return np.sum(sign * logdet * np.array([1.1, 0.4]))


def solve_stack_loss(s, b):
    return np.sum(np.linalg.solve(s, b) ** 2 * STACK_RHS) + np.sum((s @ b) * STACK_RHS)


def cholesky_stack_loss(s):
    spd = s @ np.swapaxes(s, -1, -2) + np.eye(3)
    return np.sum(np.linalg.cholesky(spd) * W)


@pytest.mark.parametrize("fn, args", [(inv_det_stack_loss, (SQUARE_STACK,)), (slogdet_stack_loss, (SQUARE_STACK,)),
                                      (solve_stack_loss, (SQUARE_STACK, STACK_RHS)),
                                      (cholesky_stack_loss, (SQUARE_STACK,))],
                         ids=["inv-det", "slogdet", "solve", "cholesky"])
def test_stacks_of_matrices_under_jit(fn, args):
    argnums = tuple(range(len(args)))
    assert s2s.jit(fn)(*args) == pytest.approx(fn(*args), rel=1e-12)
    for k in argnums:
        expected = _fd(fn, args, k)
        np.testing.assert_allclose(s2s.grad(fn, argnums=k)(*args), expected, rtol=1e-6, atol=1e-6)  # python backend
        np.testing.assert_allclose(s2s.jit(s2s.grad(fn, argnums=k))(*args), expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fn, argnums=k))(*args), expected, rtol=1e-6, atol=1e-6)


BROADCAST_P = _rng.standard_normal((2, 1, 3, 3))
BROADCAST_Q = _rng.standard_normal((4, 3, 3)) + 2.0 * np.eye(3)


def broadcast_stacks_loss(p, q, m):
    """Leading axes that broadcast, as NumPy 2's: (2, 1, 3, 3) @ (4, 3, 3) is (2, 4, 3, 3); a
    matrix and a vector @ a stack; a stack solved with one matrix b (a 2-d b is a matrix)."""
    return (np.sum((p @ q) ** 2 * W[0]) + np.sum((m @ q) * BROADCAST_Q) + np.sum((m[0] @ q) ** 3)
            + np.sum((q @ m[:, 1]) * W[1]) + np.sum(np.linalg.solve(q, m[:, :2]) ** 2 * W[2, :2]))


def test_stacks_whose_leading_axes_broadcast_under_jit():
    args = (BROADCAST_P, BROADCAST_Q, X)
    assert s2s.jit(broadcast_stacks_loss)(*args) == pytest.approx(broadcast_stacks_loss(*args), rel=1e-12)
    gradients = s2s.jit(s2s.grad(broadcast_stacks_loss, argnums=(0, 1, 2)))(*args)
    python = s2s.grad(broadcast_stacks_loss, argnums=(0, 1, 2))(*args)
    for k in range(3):
        expected = _fd(broadcast_stacks_loss, args, k)
        np.testing.assert_allclose(python[k], expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gradients[k], expected, rtol=1e-6, atol=1e-6)
    # stacks that do not broadcast: NumPy's ValueError
    with pytest.raises(ValueError, match="broadcast"):
        s2s.jit(solve_stack_loss)(SQUARE_STACK, np.stack([STACK_RHS[0]] * 3))


def tensordot_with_a_number(x, s):
    """np.tensordot with a number contracts nothing (axes=0): the product x * s."""
    return np.sum(np.tensordot(x, s, axes=0) ** 2 * W[0]) + np.tensordot(s, s * 2.0, 0)


def test_tensordot_of_a_number_under_jit():
    x, s = np.array([0.5, -0.4, 1.3]), 0.7
    assert s2s.jit(tensordot_with_a_number)(x, s) == pytest.approx(tensordot_with_a_number(x, s), rel=1e-12)
    for k in (0, 1):
        expected = _fd(tensordot_with_a_number, (x, s), k)
        np.testing.assert_allclose(s2s.grad(tensordot_with_a_number, argnums=k)(x, s), expected, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(s2s.jit(s2s.grad(tensordot_with_a_number, argnums=k))(x, s), expected, rtol=1e-6,
                                   atol=1e-7)
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(tensordot_with_a_number, argnums=k))(x, s), expected, rtol=1e-6,
                                   atol=1e-7)


# ---- what s2s.jit refuses, and the generated code ---------------------------------------------


def tensordot_list_axes(t):
    return np.sum(np.tensordot(t, B, axes=([2, 1], [0, 1])))


def kron_mixed_loss(a):
    return np.sum(np.kron(a[0], a) ** 2)


def qr_wide(a):
    return np.sum(np.linalg.qr(a.T)[0])


def qr_complete(a):
    return np.sum(np.linalg.qr(a, mode="complete")[0])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_qr_of_a_wide_matrix_is_refused_at_the_users_line(backend):
    """Its R is not square: the rule does not hold (under Numba too, where no solve would say so)."""
    with pytest.raises(s2s.S2SError, match=r"test_linalg_rules\.py:\d+:\d+: the derivative of np\.linalg\.qr is for"):
        s2s.jit(s2s.grad(qr_wide), backend=backend)(TALL)


def test_qr_modes_other_than_reduced_are_refused():
    with pytest.raises(s2s.S2SError, match="mode='reduced'"):
        s2s.grad(qr_complete)(TALL)


def test_python_backend_takes_what_jit_refuses():
    np.testing.assert_allclose(s2s.grad(tensordot_list_axes)(T), _fd(tensordot_list_axes, (T,)), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(s2s.grad(kron_mixed_loss)(A), _fd(kron_mixed_loss, (A,)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn, arg, says", [
    (tensordot_list_axes, T, "write axes=((1, 0), (0, 1))"),
    (kron_mixed_loss, A, "two 1-d or two 2-d arrays"),
])
def test_jit_refuses_at_the_users_line(fn, arg, says):
    with pytest.raises(s2s.S2SError) as caught:
        s2s.jit(s2s.grad(fn))(arg)
    message = str(caught.value)
    assert re.search(r"test_linalg_rules\.py:\d+:\d+", message), message
    assert says in message


def test_generated_code_reads_as_the_rules():
    source = s2s.source(s2s.grad(tensordot_loss))
    assert "runtime.tensordot_bar_a(" in source and "runtime.tensordot(" in source
    assert source == s2s.source(s2s.grad(tensordot_loss))  # deterministic
    source = s2s.source(s2s.grad(moveaxis_loss))
    assert "np.moveaxis(_t" in source and "np.moveaxis(m_bar, -1, 0)" in source  # the adjoint moves back
    source = s2s.source(s2s.grad(cholesky_loss))
    assert "runtime.lower_symmetric_bar(" in source and "runtime.lower_half(" in source


# ---- np.linalg.svd: the singular values (compute_uv=False) ---------------------------------
# (under s2s.jit, where Numba's np.linalg.svd has no compute_uv, runtime.linalg_svd; one matrix,
# not a stack)

WIDE = _rng.standard_normal((2, 4))
STACK = _rng.standard_normal((2, 4, 3))


def singular_values_loss(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) * np.array([1.0, -2.0, 0.5])[: min(a.shape[-2:])])


def singular_values_vec(a):
    return np.linalg.svd(a, compute_uv=False) ** 2


def nuclear_norm(a):
    return np.sum(np.linalg.svd(a, compute_uv=False))


def singular_vectors_loss(a):
    """u, s, vh of the reduced decomposition, read where the signs NumPy picks do not matter."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    m, n = np.shape(a)[-2:]
    return (np.sum((u @ (s[..., :, None] * vh)) ** 2 * np.arange(m * n).reshape(m, n)) + np.sum(u**2 * u[..., :1, :])
            + np.sum(vh**2 * np.arange(vh.shape[-1])) + np.sum(np.abs(u) * s[..., None, :]) + np.sum(s**3))


def singular_vectors_vec(a):
    u, s, vh = np.linalg.svd(a * a, full_matrices=False)
    return np.concatenate((np.ravel(u**2 * s[..., None, :]), np.ravel(vh * vh[..., :1])))


def square_singular_vectors_loss(a):
    """full_matrices=True (NumPy's default) of a square matrix is the reduced decomposition."""
    n = np.shape(a)[1]
    u, s, vh = np.linalg.svd(a.T @ a[::-1] + np.eye(n))
    return np.sum(u**2 * W[:n, :n]) + np.sum(vh**2 * W[:n, :n].T) + np.sum(s * np.arange(n))


def full_matrices_loss(a):
    return np.sum(np.linalg.svd(a)[0] ** 2 * np.arange(np.shape(a)[0]))


@pytest.mark.parametrize("a", [TALL, WIDE, STACK], ids=["tall", "wide", "stack"])
def test_singular_values_match_finite_differences(a):
    np.testing.assert_allclose(s2s.grad(singular_values_loss)(a), _fd(singular_values_loss, (a,)),
                               rtol=1e-6, atol=1e-6)
    reference = _fd_jacobian(singular_values_vec, a)
    np.testing.assert_allclose(s2s.jacfwd(singular_values_vec)(a), reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jacrev(singular_values_vec)(a), reference, rtol=1e-6, atol=1e-6)


def test_singular_values_under_jit():
    got = s2s.jit(s2s.grad(singular_values_loss))(TALL)
    np.testing.assert_allclose(got, _fd(singular_values_loss, (TALL,)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, s2s.grad(singular_values_loss)(TALL), rtol=1e-12, atol=1e-12)


def test_nuclear_norm_at_repeated_singular_values_is_u_vt():
    """sum(s) of a full-rank matrix has the gradient U V.T, also where singular values repeat:
    of R diag(2, 2, 1) (R a rotation) it is R."""
    r, _ = np.linalg.qr(X)
    np.testing.assert_allclose(s2s.grad(nuclear_norm)(r @ np.diag([2.0, 2.0, 1.0])), r, atol=1e-12)


@pytest.mark.parametrize("a", [TALL, WIDE, STACK], ids=["tall", "wide", "stack"])
def test_singular_vectors_match_finite_differences(a):
    np.testing.assert_allclose(s2s.grad(singular_vectors_loss)(a), _fd(singular_vectors_loss, (a,)),
                               rtol=1e-6, atol=1e-6)
    reference = _fd_jacobian(singular_vectors_vec, a)
    np.testing.assert_allclose(s2s.jacfwd(singular_vectors_vec)(a), reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jacrev(singular_vectors_vec)(a), reference, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [singular_vectors_loss, square_singular_vectors_loss])
@pytest.mark.parametrize("a", [TALL, WIDE.T], ids=["tall", "wide"])
def test_singular_vectors_under_jit_and_second_order(fn, a):
    got = s2s.jit(s2s.grad(fn))(a)
    np.testing.assert_allclose(got, _fd(fn, (a,)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, s2s.grad(fn)(a), rtol=1e-10, atol=1e-10)
    grad = s2s.grad(fn)
    np.testing.assert_allclose(s2s.hessian(fn)(a), _fd_jacobian(grad, a, h=1e-5), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_singular_vectors_with_full_matrices_of_a_matrix_not_square_are_refused(backend):
    """Their columns beyond the rank are any basis of the rest of the space: no derivative."""
    with pytest.raises(s2s.S2SError, match=r"test_linalg_rules\.py:\d+:\d+: np\.linalg\.svd's singular vectors "
                                           r"are differentiated of the reduced decomposition"):
        s2s.jit(s2s.grad(full_matrices_loss), backend=backend)(TALL)
    square = TALL[:3]
    np.testing.assert_allclose(s2s.jit(s2s.grad(full_matrices_loss), backend=backend)(square),
                               _fd(full_matrices_loss, (square,)), rtol=1e-6, atol=1e-6)


# ---- np.linalg.lstsq: a of full rank ------------------------------------------------------
# (under s2s.jit, where Numba's np.linalg.lstsq takes no rcond=None, runtime.linalg_lstsq)

RHS = _rng.standard_normal(4)
RHS_COLUMNS = _rng.standard_normal((4, 2))


def lstsq_loss(a, b):
    """x, the residuals and the singular values, of a tall or a wide a."""
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(x * np.arange(1.0, 1.0 + x.size).reshape(x.shape)) + 0.3 * np.sum(residuals) + 0.7 * np.sum(s**2)


def lstsq_vec(a):
    return np.linalg.lstsq(a, RHS, rcond=None)[0]


@pytest.mark.parametrize("a, b", [(TALL, RHS), (TALL, RHS_COLUMNS), (WIDE, RHS[:2])],
                         ids=["tall", "tall-columns", "wide"])
def test_lstsq_matches_finite_differences(a, b):
    for k in (0, 1):
        np.testing.assert_allclose(s2s.grad(lstsq_loss, argnums=k)(a, b), _fd(lstsq_loss, (a, b), k),
                                   rtol=1e-6, atol=1e-6)


def test_lstsq_jacobians_match_finite_differences():
    reference = _fd_jacobian(lstsq_vec, TALL)
    np.testing.assert_allclose(s2s.jacfwd(lstsq_vec)(TALL), reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2s.jacrev(lstsq_vec)(TALL), reference, rtol=1e-6, atol=1e-6)


def test_lstsq_under_jit():
    got = s2s.jit(s2s.grad(lstsq_loss))(TALL, RHS)
    np.testing.assert_allclose(got, _fd(lstsq_loss, (TALL, RHS)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, s2s.grad(lstsq_loss)(TALL, RHS), rtol=1e-12, atol=1e-12)


def test_second_derivatives_of_lstsq():
    """In a, of a tall a with a column of right-hand sides and a vector (the residuals' and s's
    curvature included): against differences of the gradient. (Compiled, the rule matrix's
    second-order column holds it: compiling this Hessian takes 40 s.)"""
    def in_a(a):
        return lstsq_loss(a, RHS_COLUMNS) + np.sum(np.sin(np.linalg.lstsq(a, RHS, rcond=None)[0]))

    grad = s2s.grad(in_a)
    want = np.array([(grad(TALL + 1e-5 * e) - grad(TALL - 1e-5 * e)) / 2e-5
                     for e in np.eye(TALL.size).reshape(-1, *TALL.shape)])
    got = s2s.hessian(in_a)(TALL)
    np.testing.assert_allclose(got.reshape(TALL.size, TALL.size), want.reshape(TALL.size, TALL.size), rtol=1e-5,
                               atol=1e-6)


def test_lstsq_below_full_rank_is_refused_at_the_users_line():
    deficient = np.outer(RHS, [1.0, 2.0, -1.0])  # rank 1
    with pytest.raises(s2s.S2SError, match=r"test_linalg_rules\.py:\d+:\d+: the derivative of np\.linalg\.lstsq is "
                                           r"for a matrix of full rank"):
        s2s.grad(lstsq_loss)(deficient, RHS)


# ---- np.linalg.det, inv and solve of stacks of matrices, against the closed form of det's ------


def sum_of_dets(A):
    return np.sum(np.linalg.det(A))


def squared_det(A):
    return np.linalg.det(A) ** 2


def sum_of_squared_inverses(A):
    return np.sum(np.linalg.inv(A) ** 2)


def sum_of_squared_solutions(A, B):
    return np.sum(np.linalg.solve(A, B) ** 2)


def stack(shape=(2, 3, 3), seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 3 * np.eye(shape[-1])


def det_gradient(A):
    """d det(A) / dA = det(A) inv(A)^T, matrix by matrix."""
    return np.linalg.det(A)[..., None, None] * np.swapaxes(np.linalg.inv(A), -1, -2)


def finite_jacobian(g, A, h=1e-6):
    out = np.zeros(A.shape + A.shape)
    for k in np.ndindex(A.shape):
        up, down = A.copy(), A.copy()
        up[k] += h
        down[k] -= h
        out[(Ellipsis,) + k] = (g(up) - g(down)) / (2 * h)
    return out


@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_det_of_a_stack_matches_the_closed_form(mode):
    A = stack()
    transform = s2s.grad if mode == "grad" else s2s.jacfwd
    np.testing.assert_allclose(transform(sum_of_dets)(A), det_gradient(A), rtol=1e-10, atol=1e-12)


def test_hessian_of_det_of_a_stack_matches_differences_of_the_closed_form():
    A = stack()
    expected = finite_jacobian(det_gradient, A)
    np.testing.assert_allclose(s2s.hessian(sum_of_dets)(A), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_det_of_a_matrix_and_its_square(backend):
    A = stack((3, 3))
    np.testing.assert_allclose(s2s.jit(s2s.grad(sum_of_dets), backend=backend)(A), det_gradient(A), rtol=1e-10)
    expected = central_difference_grad(squared_det, (A,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(squared_det), backend=backend)(A), expected, rtol=1e-6)
    hessian = finite_jacobian(lambda M: 2 * np.linalg.det(M) * det_gradient(M), A)
    np.testing.assert_allclose(s2s.hessian(squared_det)(A), hessian, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fun, args", [
    (sum_of_squared_inverses, (stack(),)),
    (sum_of_squared_solutions, (stack(), np.random.default_rng(1).standard_normal((2, 3, 2)))),
])
def test_inv_and_solve_of_a_stack_match_finite_differences(fun, args):
    for k in range(len(args)):
        expected = central_difference_grad(fun, args, k)
        np.testing.assert_allclose(s2s.grad(fun, argnums=k)(*args), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2s.jacfwd(fun, argnums=k)(*args), expected, rtol=1e-6, atol=1e-8)


def eigenvalues_in_a_loop(As):
    """eigh's result, a named tuple of arrays of two shapes, indexed in a loop (its shape taped)."""
    total = 0.0
    for i in range(As.shape[0]):
        total = total + np.sum(np.linalg.eigh(As[i])[0] ** 2)
    return total


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_named_tuple_result_indexed_in_a_loop(backend):
    r = np.random.default_rng(3)
    B = r.standard_normal((2, 3, 3))
    As = B + B.transpose(0, 2, 1)
    D = r.standard_normal((2, 3, 3))
    D = D + D.transpose(0, 2, 1)  # (eigh reads one triangle: compared along symmetric directions)
    got = s2s.jit(s2s.grad(eigenvalues_in_a_loop), backend=backend)(As)
    want = central_difference_grad(eigenvalues_in_a_loop, (As,), 0)
    assert np.sum(got * D) == pytest.approx(np.sum(want * D), rel=1e-6)
    # sum of squared eigenvalues is the squared Frobenius norm: its gradient along D is 2 <A, D>
    assert np.sum(got * D) == pytest.approx(2 * np.sum(As * D), rel=1e-10)


# np.linalg.eigh, eigvalsh and svd of a stack under s2s.jit: each matrix by Numba's, and the
# helpers of their rules (lower_symmetric, eigen_quotient, ...) matrix by matrix.
SYMMETRIC_STACK = np.stack([P, X @ X.T + 2.0 * np.eye(3) + np.diag([0.0, 0.5, 1.0])])
WIDE_STACK = _rng.standard_normal((2, 3, 4))


def stacked_decompositions(s, t):
    w, v = np.linalg.eigh(s)
    u, sv, vh = np.linalg.svd(t, full_matrices=False)
    # (the vectors enter without their signs: squared, or as a product u v of one singular value)
    return (np.sum(w * W[:2, :3]) + np.sum(v ** 2 * W) + np.sum(np.linalg.eigvalsh(s) ** 2)
            + np.sum(sv * W[:2, :3]) + np.sum(u[..., :, 0:1] * vh[..., 0:1, :] * T) + np.sum(np.linalg.svd(t, compute_uv=False) ** 3))


def test_eigh_and_svd_of_stacks_under_jit():
    args = (SYMMETRIC_STACK, WIDE_STACK)
    assert s2s.jit(stacked_decompositions)(*args) == pytest.approx(stacked_decompositions(*args), rel=1e-10)
    gradients = s2s.jit(s2s.grad(stacked_decompositions, argnums=(0, 1)))(*args)
    python = s2s.grad(stacked_decompositions, argnums=(0, 1))(*args)
    for k in (0, 1):
        expected = _fd(stacked_decompositions, args, k)
        np.testing.assert_allclose(python[k], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gradients[k], expected, rtol=1e-5, atol=1e-6)


def solve_one_vector_with_a_stack(q, b):
    """NumPy 2 solves one vector b with each matrix of the stack q: a vector per matrix."""
    return np.sum(np.linalg.solve(q, b) ** 2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_one_vector_solved_with_a_stack(backend):
    r = np.random.default_rng(4)
    q, b = r.standard_normal((3, 3, 3)) + 3 * np.eye(3), r.standard_normal(3)  # (as many matrices as rows)
    grads = s2s.jit(s2s.grad(solve_one_vector_with_a_stack, argnums=(0, 1)), backend=backend)(q, b)
    for k, got in enumerate(grads):
        np.testing.assert_allclose(got, central_difference_grad(solve_one_vector_with_a_stack, (q, b), k),
                                   rtol=1e-6, atol=1e-8)
    direction = r.standard_normal(3)
    tangent = s2s.jvp(solve_one_vector_with_a_stack, (q, b), (np.zeros_like(q), direction), backend=backend)[1]
    assert tangent == pytest.approx(grads[1] @ direction, rel=1e-10)
