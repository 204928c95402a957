"""Rules of NumPy's statistics and of its other numerical functions: np.quantile, np.percentile,
np.median, np.ptp, np.average; the NaN-aware np.nansum, np.nanmean and np.nan_to_num; np.take and
np.where(condition) (with np.nonzero, np.flatnonzero) as indices; np.heaviside, np.sinc and
np.cross; np.trapezoid and np.gradient. Gradients (s2s.grad) and tangents (s2s.jvp) against
central finite differences in float64 or closed forms; the many edge cases on the python backend,
each function compiled under s2s.jit (cpu) once; refusals of what the rules do not take."""

import numpy as np
import pytest

import s2s
import s2s.testing
from finite_differences import central_difference_grad

_rng = np.random.default_rng(21)


def check(fun, args, argnums=0, backend="python", rtol=1e-6, atol=1e-8):
    """grad of the scalar fun(*args) in args[argnums] and its jvp along a random tangent, against
    central differences."""
    got = s2s.jit(s2s.grad(fun, argnums=argnums), backend=backend)(*args)
    want = central_difference_grad(fun, args, argnums)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    tangent = _rng.standard_normal(np.shape(args[argnums]))
    tangents = tuple(tangent if k == argnums else 0.0 * np.asarray(a) for k, a in enumerate(args))
    value, out_dot = s2s.jvp(fun, tuple(args), tangents, backend=backend)
    assert value == pytest.approx(fun(*args), rel=1e-12)
    assert out_dot == pytest.approx(np.sum(want * tangent), rel=rtol, abs=atol)
    return got


# ---- quantile, percentile, median ----------------------------------------------------------
# Distinct values (no ties) so that central differences see one smooth piece.

ODD = _rng.permutation(np.linspace(0.1, 0.9, 7)) + 0.01 * _rng.random(7)
EVEN = _rng.permutation(np.linspace(0.1, 0.9, 6)) + 0.01 * _rng.random(6)
MATRIX = _rng.random((4, 5))
WEIGHTS = _rng.standard_normal(7)


@pytest.mark.parametrize("q", [0.0, 0.13, 0.5, 0.77, 1.0])
@pytest.mark.parametrize("x", [ODD, EVEN], ids=["odd", "even"])
def test_quantile_of_a_vector(q, x):
    check(vector_quantile_funs[q], (x,))


# s2s reads a function's source: module-level functions, one per q.
def quantile_q0(x):
    return np.quantile(x, 0.0) ** 2 + np.sum(x * x[::-1])


def quantile_q13(x):
    return np.quantile(x, 0.13) ** 2 + np.sum(x * x[::-1])


def percentile_q50(x):
    return np.percentile(x, 50.0) ** 2 + np.sum(x * x[::-1])


def quantile_q77(x):
    return np.quantile(x, 0.77) ** 2 + np.sum(x * x[::-1])


def percentile_q100(x):
    return np.percentile(x, 100) ** 2 + np.sum(x * x[::-1])


vector_quantile_funs = {0.0: quantile_q0, 0.13: quantile_q13, 0.5: percentile_q50, 0.77: quantile_q77,
                        1.0: percentile_q100}


def median_vector(x):
    return np.median(x) * np.sum(x)


def quantile_axes(A):
    return (np.sum(np.median(A, axis=0) ** 2) + np.sum(np.quantile(A, 0.3, axis=1, keepdims=True) * A)
            + np.sum(np.percentile(A, 90.0, axis=-1) * A[:, 0]) + np.median(A, keepdims=True)[0, 0] ** 3
            + np.sum(np.quantile(A, 0.6, -2, keepdims=True) ** 2))


@pytest.mark.parametrize("x", [ODD, EVEN], ids=["odd", "even"])
def test_median_of_a_vector(x):
    check(median_vector, (x,))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_quantiles_along_axes_and_keepdims(backend):
    check(quantile_axes, (MATRIX,), backend=backend)
    check(quantile_q13, (ODD,), backend=backend)


def test_quantile_of_a_stack_of_matrices():
    A = _rng.random((2, 3, 4))

    def stacked(A):
        return np.sum(np.quantile(A, 0.4, axis=1) ** 2) + np.sum(np.median(A, axis=2, keepdims=True) * A)
    check(stacked, (A,))


def median_squared(x):
    return np.median(x) ** 2


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_ties_go_to_the_first_equal_element(backend):
    """At a tie the derivative is one subgradient: the weight goes to the equal elements in
    index order (a stable sort): of [2, 1, 2, 3, 0] the median 2 is x[0]'s."""
    x = np.array([2.0, 1.0, 2.0, 3.0, 0.0])
    got = s2s.jit(s2s.grad(median_squared), backend=backend)(x)
    np.testing.assert_array_equal(got, [4.0, 0.0, 0.0, 0.0, 0.0])


def quantile_hessian_case(x):
    return np.quantile(x, 0.3) ** 2 + np.median(x) * np.sum(x)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_quantile_second_order(backend):
    """Closed form: the weights w are constant, so the Hessian of q(x)^2 is 2 w w^T and that of
    median(x) * sum(x) is m 1^T + 1 m^T."""
    x = np.array([0.5, 0.1, 0.9, 0.3, 0.7, 0.2])
    w = np.array([0.0, 0.0, 0.0, 0.5, 0.0, 0.5])  # q = 0.3 of 6: position 1.5 of the sorted (0.2, 0.3)
    m = np.array([0.5, 0.0, 0.0, 0.5, 0.0, 0.0])  # the median: half each to 0.3 and 0.5
    want = 2.0 * np.outer(w, w) + np.outer(m, np.ones(6)) + np.outer(np.ones(6), m)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(quantile_hessian_case), backend=backend)(x), want)


def q_of_x(x):
    return np.quantile(x, x[0] * 0.1)


def nearest(x):
    return np.quantile(x, 0.3, method="nearest")


def several(x):
    return np.quantile(x, (0.3, 0.5))[0]


def axes_tuple(A):
    return np.sum(np.median(A, axis=(0, 1)))


@pytest.mark.parametrize("fun, words", [(q_of_x, "not differentiated with respect to q"),
                                        (nearest, "method='nearest'"), (several, "one number q"),
                                        (axes_tuple, "one axis or all")])
def test_quantile_refusals(fun, words):
    x = MATRIX if fun is axes_tuple else ODD
    with pytest.raises(s2s.S2SError, match=words):
        s2s.grad(fun)(x)


# ---- nansum, nanmean, nan_to_num ---------------------------------------------------------

WITH_NAN = np.array([[0.3, np.nan, 0.8], [np.nan, 0.2, 0.5], [0.9, 0.4, np.nan], [0.1, 0.6, 0.7]])


def nan_reductions(A):
    """A reaches the result through the NaN-aware reductions alone (A * A at a NaN would give the
    chain rule's NaN * 0 = NaN there, as in JAX)."""
    return (np.nansum(A) ** 2 + np.sum(np.nanmean(A, axis=0) ** 2) + np.sum(np.nansum(A, axis=1, keepdims=True) ** 3)
            + np.nanmean(A) * np.nansum(A, 0)[1] + np.sum(np.nanmean(A, -1, keepdims=True) * np.arange(4.0)[:, None]))


def nan_to_num_case(x):
    return (np.sum(np.nan_to_num(x * 2.0, posinf=2.0, neginf=-1.0) ** 2)
            + np.sum(np.nan_to_num(x, nan=1.5, posinf=3.0, neginf=-3.0) * np.arange(6.0)))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_nan_reductions(backend):
    """NaN entries are skipped: their derivative is 0 (central differences see no change either)."""
    got = s2s.jit(s2s.grad(nan_reductions), backend=backend)(WITH_NAN)
    want = central_difference_grad(nan_reductions, (WITH_NAN,), 0)
    assert np.all(got[np.isnan(WITH_NAN)] == 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    tangent = _rng.standard_normal(WITH_NAN.shape)
    _, out_dot = s2s.jvp(nan_reductions, (WITH_NAN,), (tangent,), backend=backend)
    assert out_dot == pytest.approx(np.sum(want * tangent), rel=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_nan_to_num(backend):
    """1 where x is finite, 0 where NaN or an infinity is replaced by a constant."""
    x = np.array([0.4, np.nan, np.inf, -0.7, -np.inf, 1.2])
    got = s2s.jit(s2s.grad(nan_to_num_case), backend=backend)(x)
    want = central_difference_grad(nan_to_num_case, (x,), 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    assert np.all(got[~np.isfinite(x)] == 0.0)
    tangent = _rng.standard_normal(6)
    _, out_dot = s2s.jvp(nan_to_num_case, (x,), (tangent,), backend=backend)
    assert out_dot == pytest.approx(np.sum(want * tangent), rel=1e-6)


# ---- ptp, average ----------------------------------------------------------------------------

WV = _rng.random(4) + 0.5
WA = _rng.random((3, 4)) + 0.5


def ptp_and_average(A, wv, W):
    return (np.ptp(A) ** 2 + np.sum(np.ptp(A, axis=0) ** 2) + np.sum(np.ptp(A, 1, keepdims=True) * A)
            + np.average(A) ** 2 + np.sum(np.average(A, axis=1, weights=wv) ** 2)
            + np.average(A, weights=W) ** 3 + np.sum(np.average(A, 0, W, keepdims=True) * A))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_ptp_and_average_in_values_and_weights(backend):
    args = (_rng.random((3, 4)), WV, WA)
    grads = s2s.jit(s2s.grad(ptp_and_average, argnums=(0, 1, 2)), backend=backend)(*args)
    tangents = tuple(_rng.standard_normal(np.shape(a)) for a in args)
    _, out_dot = s2s.jvp(ptp_and_average, args, tangents, backend=backend)
    directional = 0.0
    for k in range(3):
        want = central_difference_grad(ptp_and_average, args, k)
        np.testing.assert_allclose(grads[k], want, rtol=1e-6, atol=1e-8)
        directional += np.sum(want * tangents[k])
    assert out_dot == pytest.approx(directional, rel=1e-6)


def ptp_ties(x):
    return np.ptp(x)


def test_ptp_ties_share_as_max_does():
    """[1, 3, 3, 0, 0]: the max 3 twice, the min 0 twice; each tie shares its derivative equally."""
    got = s2s.grad(ptp_ties)(np.array([1.0, 3.0, 3.0, 0.0, 0.0]))
    np.testing.assert_array_equal(got, [0.0, 0.5, 0.5, -0.5, -0.5])


def average_squared_weights(wv):
    return np.average(WA, axis=1, weights=wv * wv) @ np.arange(3.0)


def test_average_second_order_in_weights():
    s2s.testing.check_grads(average_squared_weights, (WV,), order=2, backend="python")


def average_returned(A):
    return np.average(A, returned=True)[0]


def test_average_returned_is_refused():
    with pytest.raises(s2s.S2SError, match="returned=True"):
        s2s.grad(average_returned)(WA)


# ---- take, where(condition) ----------------------------------------------------------------


def takes(A, x):
    return (np.sum(np.take(x, np.array([0, 2, 2])) ** 2) + np.sum(np.take(A, np.array([1, 1, 3]), axis=1) ** 2)
            + np.take(A, 5) ** 3 + np.sum(np.take(A, 2, axis=0) * x[:4])
            + np.sum(np.take(A, np.array([[0, 1], [2, 2]])) ** 2) + np.sum(np.take(A, np.array([2, 0]), axis=-2) ** 2))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_take_with_and_without_an_axis(backend):
    """Repeated indices accumulate; an int index, a 1-d and (axis=None) a 2-d index array."""
    args = (_rng.random((3, 4)), _rng.random(5))
    grads = s2s.jit(s2s.grad(takes, argnums=(0, 1)), backend=backend)(*args)
    tangents = tuple(_rng.standard_normal(np.shape(a)) for a in args)
    _, out_dot = s2s.jvp(takes, args, tangents, backend=backend)
    directional = 0.0
    for k in range(2):
        want = central_difference_grad(takes, args, k)
        np.testing.assert_allclose(grads[k], want, rtol=1e-6, atol=1e-8)
        directional += np.sum(want * tangents[k])
    assert out_dot == pytest.approx(directional, rel=1e-6)


def where_indices(x):
    return np.sum(x[np.where(x > 0.5)] ** 2)


def nonzero_indices(x):
    return np.sum(x[np.nonzero(x > 0.5)] ** 2) + np.sum(x[np.flatnonzero(x < 0.2)] ** 3)


def where_matrix(A):
    return np.sum(A[np.where(A > 0.5)] ** 2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_where_of_a_condition_is_an_index(backend):
    """x[np.where(x > 0.5)]: np.where's result is integer index arrays, as np.nonzero's. Under jit,
    x[np.nonzero(m)] (a tuple of one index array) gave every picked element the first one's
    adjoint before runtime.index_add unwrapped the tuple."""
    x = np.array([0.3, 0.7, 0.9, 0.1, 0.6])
    for fun in (where_indices, nonzero_indices):
        got = s2s.jit(s2s.grad(fun), backend=backend)(x)
        np.testing.assert_allclose(got, central_difference_grad(fun, (x,), 0), rtol=1e-6, atol=1e-8)
    A = np.array([[0.3, 0.7, 0.9], [0.8, 0.1, 0.6]])
    np.testing.assert_allclose(s2s.jit(s2s.grad(where_matrix), backend=backend)(A), 2.0 * A * (A > 0.5))


# ---- heaviside, sinc, cross ------------------------------------------------------------------

AWAY = np.array([-1.7, -0.2, 0.35, 0.9, 2.5])  # away from heaviside's step and sinc's 0
STACK = _rng.random((2, 3))
VEC = _rng.random(3)


def elementwise_and_cross(x, a, b):
    return (np.sum(np.sinc(x) * x) + np.sum(np.heaviside(x, b[0]) * x) + np.sum(np.heaviside(x - 0.3, 0.5) * x)
            + np.sum(np.cross(a, b) ** 2) + np.sum(np.cross(b, b * b + 1.0) * b))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_sinc_heaviside_cross(backend):
    args = (AWAY, STACK, VEC)
    grads = s2s.jit(s2s.grad(elementwise_and_cross, argnums=(0, 1, 2)), backend=backend)(*args)
    tangents = tuple(_rng.standard_normal(np.shape(a)) for a in args)
    _, out_dot = s2s.jvp(elementwise_and_cross, args, tangents, backend=backend)
    directional = 0.0
    for k in range(3):
        want = central_difference_grad(elementwise_and_cross, args, k)
        np.testing.assert_allclose(grads[k], want, rtol=1e-6, atol=1e-8)
        directional += np.sum(want * tangents[k])
    assert out_dot == pytest.approx(directional, rel=1e-6)


def sinc_sum(x):
    return np.sum(np.sinc(x))


def heaviside_at_step(x, s):
    return np.sum(np.heaviside(x, s))


def test_sinc_at_zero_and_its_second_derivative():
    """sinc'(0) = 0 and sinc''(0) = -pi^2 / 3 (series near 0, closed forms elsewhere)."""
    x = np.array([0.0, 1e-5, 0.4, -2.2])
    slope = s2s.grad(sinc_sum)(x)
    assert slope[0] == 0.0
    np.testing.assert_allclose(slope[1:], central_difference_grad(sinc_sum, (x,), 0)[1:], rtol=1e-6, atol=1e-9)
    curvature = np.diag(s2s.hessian(sinc_sum)(x))
    assert curvature[0] == pytest.approx(-np.pi ** 2 / 3.0)
    p = np.pi * x[2:]
    want = (-p * p * np.sin(p) - 2.0 * p * np.cos(p) + 2.0 * np.sin(p)) / (np.pi * x[2:] ** 3)
    np.testing.assert_allclose(curvature[2:], want, rtol=1e-8)
    check(sinc_sum, (x[1:],))


def test_heaviside_is_flat_in_x_and_follows_s_at_the_step():
    x = np.array([0.0, -0.5, 0.0, 0.7])
    gx, gs = s2s.grad(heaviside_at_step, argnums=(0, 1))(x, 0.4)
    np.testing.assert_array_equal(gx, 0.0)
    assert gs == 2.0  # two entries sit at the step, where the value is s


def cross_other_axes(a, b):
    """Vectors along axis 0 (axis=, which overrides the others), and along axes of their own."""
    c = np.cross(a, b, axis=0)  # (3, 2)
    d = np.cross(a, b.T, axisa=0, axisc=0)  # (3, 2)
    e = np.cross(a.T * a.T, b, -1, 0, 1)  # (2, 3)
    return np.sum(c**2 * STACK.T) + np.sum(d * c) + np.sum(np.sin(e)) + np.sum(np.cross(a, b, 0, 0, 0, None) * a)


def cross_of_a_variable_axis(a, b, k):
    return np.sum(np.cross(a, b, axis=k))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_cross_along_other_axes(backend):
    args = (STACK.T, _rng.random((3, 2)))
    grads = s2s.jit(s2s.grad(cross_other_axes, argnums=(0, 1)), backend=backend)(*args)
    tangents = tuple(_rng.standard_normal(np.shape(a)) for a in args)
    _, out_dot = s2s.jvp(cross_other_axes, args, tangents, backend=backend)
    directional = 0.0
    for k in range(2):
        want = central_difference_grad(cross_other_axes, args, k)
        np.testing.assert_allclose(grads[k], want, rtol=1e-6, atol=1e-8)
        directional += np.sum(want * tangents[k])
    assert out_dot == pytest.approx(directional, rel=1e-6)


def test_cross_of_an_axis_not_a_constant_is_refused():
    with pytest.raises(s2s.S2SError, match="np.cross takes its axes .* as constant ints here"):
        s2s.grad(cross_of_a_variable_axis)(STACK.T, STACK.T, 0)


# ---- trapezoid -----------------------------------------------------------------------------

XS = np.cumsum(_rng.random(5))
XGRID = np.cumsum(_rng.random((3, 4)), axis=0)


def trapezoids(A, y):
    return (np.trapezoid(y) ** 2 + np.trapezoid(y * y, XS) + np.trapezoid(y, dx=0.3) * y[0]
            + np.sum(np.trapezoid(A, axis=0) ** 2) + np.sum(np.trapezoid(A, XS[:4]) ** 2)
            + np.sum(np.trapezoid(A ** 2, dx=0.2, axis=-1)))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_trapezoid_with_dx_and_x(backend):
    args = (_rng.random((3, 4)), _rng.random(5))
    grads = s2s.jit(s2s.grad(trapezoids, argnums=(0, 1)), backend=backend)(*args)
    tangents = tuple(_rng.standard_normal(np.shape(a)) for a in args)
    _, out_dot = s2s.jvp(trapezoids, args, tangents, backend=backend)
    directional = 0.0
    for k in range(2):
        want = central_difference_grad(trapezoids, args, k)
        np.testing.assert_allclose(grads[k], want, rtol=1e-6, atol=1e-8)
        directional += np.sum(want * tangents[k])
    assert out_dot == pytest.approx(directional, rel=1e-6)


def trapezoid_grid(A):
    return np.sum(np.trapezoid(A, XGRID, axis=0) ** 2)


def trapezoid_of_itself(y):
    return np.trapezoid(y, y)


def test_trapezoid_x_of_y_shape_and_refusal():
    A = _rng.random((3, 4))
    check(trapezoid_grid, (A,))
    with pytest.raises(s2s.S2SError, match="not differentiated with respect to x or dx"):
        s2s.grad(trapezoid_of_itself)(XS)


# ---- gradient -------------------------------------------------------------------------------


def gradients(y):
    return np.sum(np.gradient(y) ** 2) + np.sum(np.gradient(y * y, 0.3) * y) + np.gradient(y[:2], 2.0)[0] ** 3


def gradient_of_coordinates(y):
    return np.sum(np.gradient(y, np.arange(6.0)))


def gradient_in_spacing(y):
    return np.sum(np.gradient(y, y[0]))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_gradient_of_a_vector(backend):
    check(gradients, (_rng.random(6),), backend=backend)


def gradient_along_an_axis(A):
    return np.sum(np.gradient(A * A, 0.5, axis=1) * A) + np.sum(np.gradient(A, axis=-2) ** 2)


def gradient_of_a_matrix(A):
    gy, gx = np.gradient(A * A)
    return np.sum(gy * np.cos(gx))


def gradient_of_a_cube(T):
    a, b, c = np.gradient(T, 0.3)
    return np.sum(a * b) + np.sum(c**2)


def gradient_along_two_axes(T):
    g0, g2 = np.gradient(T**2, axis=(0, 2))
    return np.sum(g0 * T) + np.sum(g2**2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun, shape", [(gradient_along_an_axis, (3, 4)), (gradient_of_a_matrix, (3, 4)),
                                        (gradient_of_a_cube, (3, 4, 5)), (gradient_along_two_axes, (3, 4, 5))])
def test_gradient_of_an_array_along_its_axes(fun, shape, backend):
    """One array along an int axis, a tuple of them along several (all by default)."""
    check(fun, (_rng.random(shape),), backend=backend)


def summed_gradient_along_rows(A):
    return np.sum(np.gradient(A, axis=1))


def test_gradient_along_an_axis_in_closed_form():
    """Along rows of 5: the sum of the differences (A1 - A0) + (A2 - A0) / 2 + (A3 - A1) / 2 +
    (A4 - A2) / 2 + (A4 - A3) weighs each row -1.5, 0.5, 0, -0.5, 1.5."""
    A = _rng.random((2, 5))
    want = np.tile([-1.5, 0.5, 0.0, -0.5, 1.5], (2, 1))
    for backend in ("python", "cpu"):
        got = s2s.jit(s2s.grad(summed_gradient_along_rows), backend=backend)(A)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("fun, words", [(gradient_of_coordinates, "one number as its spacing"),
                                        (gradient_in_spacing, "np.gradient in its spacing")])
def test_gradient_refusals(fun, words):
    with pytest.raises(s2s.S2SError, match=words):
        s2s.grad(fun)(_rng.random(6) + 0.5)


def std_of_equal_values(x):
    """np.std of one value is the constant 0; of values that are all equal, a cone's tip."""
    return np.std(x[:1]) + np.sum(np.std(np.stack([x, x]), axis=0, keepdims=True)) + np.sum(x ** 2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_the_derivative_of_a_std_of_zero_is_zero(backend):
    """Where the std is 0 its derivative is taken as 0: exact for one value (a constant), and for
    equal values what central differences give and a subgradient (JAX gives NaN at both)."""
    x = np.array([0.3, -0.5, 1.2])
    want = central_difference_grad(std_of_equal_values, (x,), 0)
    np.testing.assert_allclose(want, 2 * x, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(std_of_equal_values), backend=backend)(x), 2 * x, rtol=1e-14)
    direction = np.array([1.0, -2.0, 0.5])
    assert s2s.jvp(std_of_equal_values, (x,), (direction,), backend=backend)[1] == pytest.approx(2 * x @ direction)
    np.testing.assert_allclose(s2s.hessian(std_of_equal_values)(x), 2 * np.eye(3), atol=1e-14)
