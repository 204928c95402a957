"""Rules of polynomials and their kin: np.polyval, np.interp (piecewise linear),
np.linalg.matrix_power (a matrix's integer powers), and np.repeat: gradients (s2s.grad) and
tangents (s2s.jvp) against central finite differences in float64, on the python backend and
under s2s.jit (Numba), and the refusals of what the rules do not differentiate (np.interp in
its sample points xp or with left/right/period)."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, where

BACKENDS = ["python", "cpu"]
_rng = np.random.default_rng(19)


def _grad(fun, argnums, backend):
    return s2s.jit(s2s.grad(fun, argnums=argnums), backend=backend)


def check(fun, args, argnums, backend, rtol=1e-7, atol=1e-9, forward=None):
    """grad and jvp of the scalar fun(*args) in args[argnums] against central differences
    (forward: the function jvp differentiates instead, of the arguments argnums alone)."""
    grads = _grad(fun, argnums, backend)(*args)
    if not isinstance(argnums, tuple):
        argnums, grads = (argnums,), (grads,)
    expected = [central_difference_grad(fun, args, k) for k in argnums]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    # forward mode: the derivative along random tangents of the differentiated arguments
    chosen = [_rng.standard_normal(np.shape(args[k])) if np.ndim(args[k]) else 0.7 for k in argnums]
    if forward is None:  # the others get zero tangents
        forward, primals = fun, tuple(args)
        tangents = [chosen[argnums.index(k)] if k in argnums else 0.0 * np.asarray(a) for k, a in enumerate(args)]
    else:
        primals, tangents = tuple(args[k] for k in argnums), chosen
    value, tangent = s2s.jvp(forward, primals, tuple(tangents), backend=backend)
    assert value == pytest.approx(fun(*args), rel=1e-12)
    directional = sum(np.sum(want * t) for want, t in zip(expected, chosen))
    assert tangent == pytest.approx(directional, rel=rtol, abs=atol)


# ---- np.polyval ----------------------------------------------------------------------

W = np.array([0.3, -1.2, 0.8, 2.0])


def poly_vector(p, x):
    return np.sum(np.polyval(p, x) * W)


def poly_number(p, s):
    return np.polyval(p, s) ** 2 + np.polyval(p * p, 1.5)


def poly_matrix(p, A):
    return np.sum(np.sin(np.polyval(p, A)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_polyval_in_coefficients_and_points(backend):
    p = np.array([0.5, -1.0, 2.0, 0.3])
    x = np.array([-0.7, 0.2, 1.1, 1.9])
    check(poly_vector, [p, x], (0, 1), backend)
    check(poly_number, [p, 0.8], (0, 1), backend)
    check(poly_matrix, [p, np.array([[0.1, -0.4], [0.9, 1.3]])], (0, 1), backend)
    # closed form: d/dx of p(x) is 3 p0 x^2 + 2 p1 x + p2
    grad_x = _grad(poly_vector, 1, backend)(p, x)
    np.testing.assert_allclose(grad_x, W * (3 * p[0] * x**2 + 2 * p[1] * x + p[2]), rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_polyval_of_a_constant_polynomial(backend):
    # one coefficient: p(x) = p0, its derivative in x is 0 and in p0 the number of points
    p = np.array([1.7])
    x = np.array([0.3, 0.9, -0.2, 2.0])
    gp, gx = _grad(poly_vector, (0, 1), backend)(p, x)
    np.testing.assert_allclose(gp, [np.sum(W)], rtol=1e-14)
    np.testing.assert_allclose(gx, np.zeros(4), atol=0)


def poly_display(x):
    return np.sum(np.polyval([1.0, -2.0, 0.5], x) * x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_polyval_of_a_list_of_coefficients(backend):
    x = np.array([0.3, -0.8, 1.4])
    check(poly_display, [x], 0, backend)


def poly_of_coefficients(p):
    return np.sum(np.polyval(p, np.array([0.5, 1.5, 2.0, 3.0])))


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_over_coefficients(backend):
    # np.polyval's result has x's shape, not p's and x's broadcast: a batch of p is a batch of results
    ps = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
    got = s2s.jit(s2s.vmap(poly_of_coefficients), backend=backend)(ps)
    np.testing.assert_allclose(got, [poly_of_coefficients(p) for p in ps], rtol=1e-15)
    grads = s2s.jit(s2s.vmap(s2s.grad(poly_of_coefficients)), backend=backend)(ps)
    np.testing.assert_allclose(grads, [[15.5, 7.0, 4.0]] * 2, rtol=1e-15)  # sums of x ** 2, x, 1


def poly_hessian(x):
    return np.sum(np.polyval(np.array([1.0, -2.0, 0.5, 3.0]), x))


def test_polyval_second_derivative_in_x():
    x = np.array([0.3, -0.8])
    np.testing.assert_allclose(s2s.hessian(poly_hessian)(x), np.diag(6 * x - 4.0), rtol=1e-12)


# ---- np.interp -----------------------------------------------------------------------

XP = np.array([0.0, 0.4, 1.0, 1.7])


def interp_loss(x, fp):
    return np.sum(np.interp(x, XP, fp) ** 2 * np.arange(1.0, 7.0))


def interp_number(s, fp):
    return np.interp(s, XP, fp * fp) + np.interp(2.0 * s, XP, fp)


def interp_given_points(x, xp, fp):
    return np.sum(np.interp(x, xp, fp) ** 2)


def interp_fixed_points(x, fp):
    # (jvp gives every array argument a tangent: xp is a constant here, inside)
    return interp_given_points(x, XP * 1.5, fp)


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp_in_points_and_values(backend):
    # points left of XP[0], in every segment, and right of XP[-1], none at a knot
    x = np.array([-0.3, 0.1, 0.55, 0.93, 1.2, 2.4])
    fp = np.array([0.5, -0.4, 1.3, 0.9])
    check(interp_loss, [x, fp], (0, 1), backend)
    check(interp_number, [0.45, fp], (0, 1), backend)
    check(interp_number, [0.15, fp], (0, 1), backend)  # (2 * 0.2 would be the knot 0.4)
    # xp an argument that is not differentiated: x and fp are
    check(interp_given_points, [x, XP * 1.5, fp], (0, 2), backend, forward=interp_fixed_points)


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp_at_a_knot_takes_the_segment_to_the_right(backend):
    # NumPy evaluates the segment [xp[j], xp[j+1]] at x = xp[j]: its slope is the derivative
    # there (one-sided); at xp[-1] np.interp is fp[-1], constant to the right: 0
    fp = np.array([0.5, -0.4, 1.3, 0.9])
    x = np.array([0.0, 0.4, 1.0, 1.7, -1.0, 3.0])
    y = np.interp(x, XP, fp)
    gx, gfp = _grad(interp_loss, (0, 1), backend)(x, fp)
    slopes = np.diff(fp) / np.diff(XP)
    np.testing.assert_allclose(gx, 2 * y * np.arange(1.0, 7.0) * [slopes[0], slopes[1], slopes[2], 0, 0, 0],
                               rtol=1e-14)
    # in fp: each value at its own knot (weight 1), left of XP[0] fp[0], right of XP[-1] fp[-1]
    weights = 2 * y * np.arange(1.0, 7.0)
    np.testing.assert_allclose(gfp, [weights[0] + weights[4], weights[1], weights[2], weights[3] + weights[5]],
                               rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_of_interp_in_points_and_values(backend):
    """Its helpers differentiated again: against central differences of the gradient, in x and fp
    together (the values enter squared, the points through the segments' weights)."""
    x = np.array([-0.3, 0.1, 0.55, 0.93, 1.2, 2.4])
    fp = np.array([0.5, -0.4, 1.3, 0.9])
    hessian = s2s.jit(s2s.hessian(interp_loss, argnums=(0, 1)), backend=backend)(x, fp)
    together = np.block([[hessian[0][0], hessian[0][1]], [hessian[1][0], hessian[1][1]]])
    gradient = s2s.grad(lambda v: interp_loss(v[:6], v[6:]))
    point = np.concatenate([x, fp])
    by_differences = np.array([(gradient(point + e) - gradient(point - e)) / 2e-5 for e in np.eye(10) * 1e-5])
    np.testing.assert_allclose(together, by_differences, rtol=1e-6, atol=1e-6)


FP = np.array([0.5, -0.4, 1.3, 0.9])


def interp_constant_values(x):
    return np.interp(x, XP, FP) * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp_jacobians_with_constant_values(backend):
    x = np.array([-0.5, 0.2, 0.7, 1.3, 2.0])
    expected = np.diag(2.0 * np.array([0.0, -2.25, 2.8333333333333335, -0.5714285714285714, 0.0]))
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(interp_constant_values), backend=backend)(x), expected, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.jacrev(interp_constant_values), backend=backend)(x), expected, rtol=1e-14)


def interp_moving_points(x, xp, fp):
    return np.sum(np.interp(x, xp * 2.0, fp))


def interp_with_left(x, fp):
    return np.sum(np.interp(x, XP, fp, left=0.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp_refuses_active_sample_points(backend):
    x, fp = np.array([0.3, 0.7]), np.array([0.5, -0.4, 1.3, 0.9])
    for argnums in (1, (0, 1)):
        with pytest.raises(s2s.S2SError, match="sample points xp") as info:
            _grad(interp_moving_points, argnums, backend)(x, XP, fp)
        assert where(interp_moving_points, "np.interp") in str(info.value)
    with pytest.raises(s2s.S2SError, match="sample points xp") as info:
        s2s.jvp(interp_moving_points, (x, XP, fp), (np.zeros(2), np.ones(4), np.zeros(4)), backend=backend)
    assert where(interp_moving_points, "np.interp") in str(info.value)
    with pytest.raises(s2s.S2SError, match="defaults only") as info:
        _grad(interp_with_left, 0, backend)(x, fp)
    assert where(interp_with_left, "np.interp") in str(info.value)


# ---- np.linalg.matrix_power ------------------------------------------------------------

A0 = np.array([[0.6, -0.3, 0.2], [0.1, 0.9, -0.4], [0.5, 0.2, 0.7]])
WEIGHTS = np.arange(9.0).reshape(3, 3) / 4.0 - 1.0


def power_three(A):
    return np.sum(np.linalg.matrix_power(A, 3) * WEIGHTS)


def power_n(A, n):
    return np.sum(np.linalg.matrix_power(A, n) * WEIGHTS)


def power_negative(A):
    return np.sum(np.linalg.matrix_power(A, -2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_matrix_power(backend):
    check(power_three, [A0], 0, backend)
    for n in (0, 1, 2, 5):
        grad = _grad(power_n, 0, backend)(A0, n)
        np.testing.assert_allclose(grad, central_difference_grad(power_n, [A0, n], 0), rtol=1e-7, atol=1e-9)
        tangent = _rng.standard_normal((3, 3))
        _, out = s2s.jvp(power_n, (A0, n), (tangent, None), backend=backend)
        assert out == pytest.approx(np.sum(grad * tangent), rel=1e-7, abs=1e-9)
    # closed form for n = 2: d/dA sum(W * A @ A) = W A^T + A^T W
    np.testing.assert_allclose(_grad(power_n, 0, backend)(A0, 2), WEIGHTS @ A0.T + A0.T @ WEIGHTS, rtol=1e-13)


def test_matrix_power_of_a_negative_power():
    """a^-n is the n-th power of the inverse: its derivative too (the block triangular power; the
    compiled form is the one of a positive power, Numba's power inverting first)."""
    np.testing.assert_allclose(s2s.grad(power_negative)(A0), central_difference_grad(power_negative, [A0], 0),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.grad(power_n)(A0, -1), -np.linalg.inv(A0).T @ WEIGHTS @ np.linalg.inv(A0).T,
                               rtol=1e-12)


def power_four_of_sines(a):
    return np.sum(np.sin(np.linalg.matrix_power(a, 4)))


def test_second_derivatives_of_matrix_power():
    """(Compiled, the rule matrix's second-order column holds it.)"""
    grad = s2s.grad(power_four_of_sines)
    want = np.array([(grad(A0 + 1e-5 * e) - grad(A0 - 1e-5 * e)) / 2e-5 for e in np.eye(9).reshape(9, 3, 3)])
    got = s2s.hessian(power_four_of_sines)(A0)
    np.testing.assert_allclose(got.reshape(9, 9), want.reshape(9, 9), rtol=1e-6, atol=1e-7)


# ---- np.repeat ------------------------------------------------------------------------


def repeat_flat(x):
    return np.sum(np.repeat(x, 3) * np.arange(12.0))


def repeat_axes(A):
    return np.sum(np.repeat(A, 2, axis=0) ** 2 * np.arange(12.0).reshape(4, 3)) \
        + np.sum(np.sin(np.repeat(A, 3, axis=-1)))


def repeat_counts(A):
    return np.sum(np.repeat(A, np.array([1, 0, 3]), axis=1) ** 3)


def repeat_flat_matrix(A):
    return np.sum(np.repeat(A, 2) * np.arange(12.0))


def repeat_none(A):
    """Repeated no times along an axis: an empty array, whose adjoint gives A nothing."""
    return np.sum(np.sin(np.repeat(A, 0, axis=1))) + np.sum(A ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeat(backend):
    x = np.array([0.4, -1.1, 0.9, 2.0])
    A = np.array([[0.4, -1.1, 0.9], [0.3, 0.8, -0.6]])
    check(repeat_flat, [x], 0, backend)
    check(repeat_axes, [A], 0, backend)
    check(repeat_counts, [A], 0, backend)
    check(repeat_flat_matrix, [A], 0, backend)
    check(repeat_none, [A], 0, backend)
    # closed form: each element's adjoint is the sum of its copies' weights
    np.testing.assert_allclose(_grad(repeat_flat, 0, backend)(x), np.arange(12.0).reshape(4, 3).sum(1), rtol=1e-15)


def repeat_method(x, A):
    return np.sum(x.repeat(2) ** 2) + np.sum(np.sin(A.repeat(2, axis=1)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeat_method(backend):
    # x.repeat(...) is np.repeat(x, ...) (its method spelling, declared with its rule)
    A = np.array([[0.4, -1.1, 0.9], [0.3, 0.8, -0.6]])
    check(repeat_method, [np.array([0.5, 1.0]), A], 0, backend)
    check(repeat_method, [np.array([0.5, 1.0]), A], 1, backend)
