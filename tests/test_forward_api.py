"""jvp, jacfwd and jacrev against known derivatives, with JAX's output layout."""

import re
import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from programs import calls_user_functions, range_loops


def elementwise(x, k):
    return np.sin(x) * k + x**2


def matrix_valued(A, v):
    return np.outer(A @ v, v)


def scalar_out(x):
    return np.sum(x**3)


X = np.array([0.1, 0.7, 1.3])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_matches_the_formula(backend):
    out, out_dot = s2s.jvp(elementwise, (X, 2.0), (np.ones(3), 0.5), backend=backend)
    np.testing.assert_allclose(out, elementwise(X, 2.0))
    np.testing.assert_allclose(out_dot, 2.0 * np.cos(X) + 2 * X + 0.5 * np.sin(X), rtol=1e-12)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jacobians_match_the_formula(backend):
    fwd = s2s.jit(s2s.jacfwd(elementwise), backend=backend)(X, 2.0)
    rev = s2s.jit(s2s.jacrev(elementwise), backend=backend)(X, 2.0)
    expected = np.diag(2.0 * np.cos(X) + 2 * X)
    np.testing.assert_allclose(fwd, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rev, expected, rtol=1e-12, atol=1e-15)
    jx, jk = s2s.jacfwd(elementwise, argnums=(0, 1))(X, 2.0)
    np.testing.assert_allclose(jk, np.sin(X))
    np.testing.assert_allclose(s2s.jacrev(scalar_out)(X), 3 * X**2)
    np.testing.assert_allclose(s2s.jacfwd(scalar_out)(X), 3 * X**2)


def test_jacobian_layout_is_output_shape_then_input_shape():
    rng = np.random.default_rng(0)
    A, v = rng.standard_normal((3, 4)), rng.standard_normal(4)
    fwd = s2s.jacfwd(matrix_valued)(A, v)
    rev = s2s.jacrev(matrix_valued)(A, v)
    assert fwd.shape == (3, 4, 3, 4) and rev.shape == (3, 4, 3, 4)
    np.testing.assert_allclose(fwd, rev, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    E = np.zeros_like(A)
    E[1, 2] = eps
    fd = (matrix_valued(A + E, v) - matrix_valued(A - E, v)) / (2 * eps)
    np.testing.assert_allclose(fwd[:, :, 1, 2], fd, rtol=1e-6, atol=1e-8)


def test_scalar_input_jacobians_through_loops_and_calls():
    d = s2s.jacfwd(range_loops)(0.9, 4)
    eps = 1e-6
    fd = (range_loops(0.9 + eps, 4) - range_loops(0.9 - eps, 4)) / (2 * eps)
    assert d == pytest.approx(fd, rel=1e-6)
    g = s2s.jacrev(calls_user_functions, argnums=(0, 1))(0.6, 1.1)
    gg = s2s.grad(calls_user_functions, argnums=(0, 1))(0.6, 1.1)
    np.testing.assert_allclose(np.array(g, float), np.array(gg, float), rtol=1e-12)


def test_jvp_checks_tangent_structure():
    with pytest.raises(s2s.S2SError, match="tangent of argument 0"):
        s2s.jvp(elementwise, (X, 2.0), (np.ones(2), 0.0))


@pytest.mark.parametrize("primals, tangents", [(X, np.ones(3)), ((X,), np.ones(3)), (X, (np.ones(3),)), (2.0, 1.0)])
def test_jvp_takes_tuples_of_primals_and_tangents_as_jax(primals, tangents):
    # (an array would be read as a sequence of arguments, its items, into generated code: JAX's TypeError)
    with pytest.raises(s2s.S2SError, match="primal and tangent arguments to s2s.jvp must be tuples or lists; "
                                           f"found {type(primals).__name__} and {type(tangents).__name__}"):
        s2s.jvp(scalar_out, primals, tangents)
    with pytest.raises(s2s.S2SError, match="must be tuples or lists"):
        s2s.jvp(s2s.grad(scalar_out), primals, tangents)  # (a Hessian-vector product)
    value, tangent = s2s.jvp(scalar_out, [X], [np.ones(3)])  # lists, as JAX takes them
    assert value == pytest.approx(scalar_out(X)) and tangent == pytest.approx(np.sum(3 * X ** 2), rel=1e-12)


def test_float32_jacobians_stay_float32():
    x = X.astype(np.float32)
    for jacobian in (s2s.jacfwd, s2s.jacrev):
        J = jacobian(elementwise)(x, np.float32(2.0))
        assert J.dtype == np.float32
        np.testing.assert_allclose(J, np.diag(2.0 * np.cos(x) + 2 * x), rtol=1e-6, atol=1e-6)


def scaled_path(params, z):
    s0, sigma = params
    s = s0
    for t in range(z.shape[0]):
        s = s * np.exp(sigma * z[t])
    return s


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_takes_zero_dimensional_tangents_of_numbers(backend):
    z = np.array([0.1, -0.2, 0.3])
    out, out_dot = s2s.jvp(scaled_path, ((2.0, 0.5), z), ((np.array(1.0), np.array(0.0)), np.zeros(3)),
                           backend=backend)
    np.testing.assert_allclose(out_dot, np.exp(0.5 * np.sum(z)), rtol=1e-12)


# Arguments that are not differentiated, and constants passed to helpers, have symbolic zero
# tangents: no term of theirs is computed, so none is 0 * inf (the partial of sqrt(y) at
# y = 0, of x ** a in a at x <= 0) and none turns a finite derivative into nan.


def sqrt_weighted(x, y):
    return np.sum(x * np.sqrt(y))


def power(x, a):
    return x**a


def square_through_helper(x):
    return power(x, 2.0)


def sqrt_weighted_on_a_grid(x):
    return sqrt_weighted(x, np.arange(3.0) ** 2)  # y = [0, 1, 4], computed, without a tangent


Y0 = np.array([0.0, 1.0, 4.0])
X0 = np.array([0.0, -1.0, 2.0])


def _jvp_def(source: str, name: str) -> str:
    return re.search(rf"^def {name}\(.*?(?=^def |\Z)", source, re.M | re.S).group(0)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jacfwd_of_one_argument_takes_the_others_tangents_as_symbolic_zeros(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no 0 * inf computed and thrown away either
        jx = s2s.jit(s2s.jacfwd(sqrt_weighted), backend=backend)(np.ones(3), Y0)
        jh = s2s.jit(s2s.jacfwd(square_through_helper), backend=backend)(X0)
    np.testing.assert_allclose(jx, np.sqrt(Y0), rtol=1e-15)
    np.testing.assert_allclose(jx, central_difference_grad(sqrt_weighted, (np.ones(3), Y0), 0), rtol=1e-8)
    np.testing.assert_allclose(jh, np.diag(2 * X0), atol=1e-15)
    fd = np.array([central_difference_grad(lambda x: square_through_helper(x)[i], (X0,), 0) for i in range(3)])
    np.testing.assert_allclose(jh, fd, rtol=1e-7, atol=1e-9)
    # The forward mode with respect to x alone has no tangent of y, nor the helper one of a.
    source = s2s.source(s2s.jacfwd(sqrt_weighted))
    assert "y_dot" not in _jvp_def(source, "sqrt_weighted_jvp_wrt_x")
    source = s2s.source(s2s.jacfwd(square_through_helper))
    assert "power_jvp_wrt_x(x, 2.0, x_dot)" in source and "a_dot" not in source and "np.log" not in source


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_through_helpers_called_with_constants_is_finite(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out, out_dot = s2s.jvp(square_through_helper, (X0,), (np.array([1.0, 2.0, 3.0]),), backend=backend)
        value, tangent = s2s.jvp(sqrt_weighted_on_a_grid, (np.ones(3),), (np.array([1.0, 2.0, 3.0]),),
                                 backend=backend)
    np.testing.assert_allclose(out, X0**2)
    np.testing.assert_allclose(out_dot, 2 * X0 * np.array([1.0, 2.0, 3.0]), atol=1e-15)
    assert value == pytest.approx(3.0)
    assert tangent == pytest.approx(1.0 * 0.0 + 2.0 * 1.0 + 3.0 * 2.0, rel=1e-14)


def sqrt_weighted_affine(params, y):
    w, b = params
    return np.sum(w * np.sqrt(y)) + b


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jacfwd_of_a_pytree_argument_takes_the_others_tangents_as_symbolic_zeros(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        jw, jb = s2s.jit(s2s.jacfwd(sqrt_weighted_affine), backend=backend)((np.ones(3), 2.0), Y0)
    np.testing.assert_allclose(jw, np.sqrt(Y0), rtol=1e-15)
    assert float(jb) == 1.0


def _power_with_default(x, a=3.0):
    return np.sum(x ** a)


def test_jvp_fills_defaults_as_constants():
    # jax.jvp calls fun(*primals): a parameter left out takes its default, with no tangent
    x, t = np.array([0.0, 1.0, 2.0]), np.array([1.0, -1.0, 0.5])
    out, out_dot = s2s.jvp(_power_with_default, (x,), (t,))
    assert out == 9.0
    assert np.isclose(out_dot, np.sum(3.0 * x ** 2 * t))
    out, out_dot = s2s.jvp(_power_with_default, (x,), (t,), backend="cpu")
    assert np.isclose(out_dot, np.sum(3.0 * x ** 2 * t))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_default_exponent_has_no_tangent_to_multiply(backend):
    # (a zero tangent of the default a would be multiplied by log(x), NaN where x < 0)
    x, t = np.array([-0.5, 1.0, -2.0]), np.array([1.0, -1.0, 0.5])
    out, out_dot = s2s.jvp(_power_with_default, (x,), (t,), backend=backend)
    assert out == pytest.approx(np.sum(x ** 3)) and out_dot == pytest.approx(np.sum(3.0 * x ** 2 * t), rel=1e-12)


def test_check_grads_takes_constants_that_are_not_differentiated():
    # d has zeros under sqrt: its tangent must be a symbolic zero, not 0 * inf
    def f(x, d, c=0.5):
        return np.sum(x * np.sqrt(d)) + c * np.sum(x * x)

    x, d = np.array([0.3, -0.2, 0.7]), np.array([0.0, 1.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        s2s.testing.check_grads(f, (x, d), argnums=(0,))


def _scaled_root(u, w):
    # s2s summarises what a helper returns (frontend/result_views.py): these branches, never
    # taken here, make the result one that may be u or w themselves
    if w[0] > 100.0:
        return u
    if w[0] < -100.0:
        return w
    return np.sqrt(u) * w[-1]


def updates_a_helper_result(x, d):
    y = x * 1.0
    v = _scaled_root(d, y)  # may share memory with d or y, as far as s2s knows
    v += 0.5 * d  # so a run-time check against each of them comes first
    return np.sum(v * v) + np.sum(y * d)


def test_forward_mode_of_an_update_with_several_alias_checks():
    # (one run-time check for each name the update may share memory with, in forward mode too)
    x, d = np.array([0.3, -0.5, 0.8]), np.array([0.0, 1.0, 4.0])
    source = s2s.source(s2s.jacfwd(updates_a_helper_result))
    assert source.count("runtime.require_unshared(") >= 2
    s2s.testing.check_grads(updates_a_helper_result, (x, d), argnums=(0,), modes=("fwd", "rev"))
    # closed form: v = sqrt(d) y2 + d / 2; f = sum(v^2) + sum(y d)
    v = np.sqrt(d) * x[-1] + 0.5 * d
    expected = d.copy()
    expected[-1] += np.sum(2 * v * np.sqrt(d))
    np.testing.assert_allclose(s2s.jacfwd(updates_a_helper_result)(x, d), expected, rtol=1e-13)


# ---- an integer argument that is not differentiated, and operands that have no tangent --------


def decay_sum(x, n):
    t = np.arange(n) * 0.5
    return np.sum(np.exp(-t * x[0]) * x[1])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jacfwd_and_hessian_leave_an_integer_argument_they_do_not_differentiate_alone(backend):
    """np.arange(n) of an int n is refused when n is differentiated; jacfwd and hessian make the
    forward mode of the arguments they differentiate only, so they take the program."""
    x = np.array([0.3, 1.2])
    want = central_difference_grad(lambda x: decay_sum(x, 5), (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(decay_sum), backend=backend)(x, 5), want, rtol=1e-6)
    t = np.arange(5) * 0.5
    e = np.exp(-t * x[0])
    hessian = np.array([[np.sum(t * t * e) * x[1], -np.sum(t * e)], [-np.sum(t * e), 0.0]])
    np.testing.assert_allclose(s2s.jit(s2s.hessian(decay_sum), backend=backend)(x, 5), hessian, rtol=1e-9)


def minus_a_constant(x, c):
    return np.sum(np.sin(x - c))


def constant_minus(x, c):
    y = c - x
    return np.sum(y * y)


def minus_an_element_then_an_array(x, c):
    w = x * 2.0 - c[0]
    return np.sum(w - np.cos(c))


@pytest.mark.parametrize("fun", [minus_a_constant, constant_minus, minus_an_element_then_an_array])
def test_forward_mode_makes_no_zeros_for_a_constant_operand(fun):
    jac = s2s.jacfwd(fun)
    x = np.array([0.5, -0.2, 0.9])
    for c in (np.array([0.1, 0.2, 0.3]), np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])):  # (and a broadcast)
        if fun is minus_an_element_then_an_array and c.ndim == 2:
            continue
        want = central_difference_grad(fun, [x, c], 0)
        np.testing.assert_allclose(jac(x, c), want, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fun))(x, c), want, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(s2s.hessian(fun)(x, c), s2s.jit(s2s.hessian(fun))(x, c), atol=1e-12)
    assert "zeros_like" not in s2s.source(jac)


def test_broadcast_like_is_t_plus_zeros():
    from s2s import runtime

    t = np.array([1.0, 2.0])
    assert runtime.broadcast_like(t, np.zeros(2)) is t  # no zeros made
    assert runtime.broadcast_like(t, 3.0) is t
    wide = runtime.broadcast_like(t, np.zeros((3, 2)))
    np.testing.assert_array_equal(wide, np.tile(t, (3, 1)))
    t32 = t.astype(np.float32)
    assert runtime.broadcast_like(t32, np.zeros(2)).dtype == np.float64  # as t32 + zeros(2)
