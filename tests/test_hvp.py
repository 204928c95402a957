"""s2s.jvp of a gradient: the Hessian-vector product jvp(grad(f), (x,), (v,)) of the JAX
autodiff cookbook, checked against central differences of the gradient along the tangents."""

import numpy as np
import pytest

import s2s
from s2s import tree_util

H = 1e-6


def rosenbrock(p):
    x = p["x"]
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) * p["scale"]


def relax(y0, k, n):
    y = y0
    for _ in range(n):
        y = y + 0.01 * (-k * y**3 + np.sin(y))
    return np.sum(y**2)


def scalar(x, y=1.5):
    return x**3 * y + np.exp(x * y)


def linear(x, a):
    return np.sum(a * x)


def with_aux(x):
    return np.sum(np.sin(x) * x), {"squares": x**2, "first": x[0]}


def _differences(gradient_at, eps=H):
    """d/dt of gradient_at(t) at t = 0, by central differences, leaf by leaf."""
    return tree_util.tree_map(lambda a, b: (a - b) / (2 * eps), gradient_at(eps), gradient_at(-eps))


def _assert_close(got, expected, rtol=1e-6, atol=1e-6):
    assert tree_util.tree_structure(got) == tree_util.tree_structure(expected)
    for g, e in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("jit", [False, True])
def test_hessian_vector_product_of_a_dict_argument(jit):
    rng = np.random.default_rng(1)
    p = {"x": rng.standard_normal(5), "scale": 0.7}
    v = {"x": rng.standard_normal(5), "scale": 0.3}
    gradient = s2s.grad(rosenbrock)
    outer = s2s.jit(gradient) if jit else gradient
    g, hv = s2s.jvp(outer, (p,), (v,))
    _assert_close(g, gradient(p), rtol=1e-12, atol=0)
    shifted = lambda t: gradient({"x": p["x"] + t * v["x"], "scale": p["scale"] + t * v["scale"]})  # noqa: E731
    _assert_close(hv, _differences(shifted), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_several_argnums_through_a_loop_with_an_int_argument(jit):
    y0, k, n = np.array([0.4, -1.1, 2.0]), 0.5, 30
    gradient = s2s.grad(relax, argnums=(0, 1))
    outer = s2s.jit(gradient) if jit else gradient
    dy, dk = np.array([1.0, -0.5, 0.25]), 0.2
    g, hv = s2s.jvp(outer, (y0, k, n), (dy, dk, 0))
    assert isinstance(g, tuple) and isinstance(hv, tuple)
    _assert_close(g, gradient(y0, k, n), rtol=1e-12, atol=0)
    _assert_close(hv, _differences(lambda t: gradient(y0 + t * dy, k + t * dk, n)))


def test_numbers_a_default_argument_and_a_closed_form():
    x, y = 0.3, 1.5
    g, hv = s2s.jvp(s2s.grad(scalar), (x,), (2.0,))  # y takes its default (no tangent)
    assert g == pytest.approx(3 * x**2 * y + y * np.exp(x * y), rel=1e-12)
    assert hv == pytest.approx(2.0 * (6 * x * y + y**2 * np.exp(x * y)), rel=1e-12)
    # a tangent along y too: the mixed partial d2f/dxdy = 3x^2 + (1 + xy) e^(xy)
    _, hv = s2s.jvp(s2s.grad(scalar), (x, y), (0.0, 1.0))
    assert hv == pytest.approx(3 * x**2 + (1 + x * y) * np.exp(x * y), rel=1e-12)


def test_value_and_grad_and_float32():
    x, v = np.array([0.3, -0.7]), np.array([1.0, 2.0])
    (value, g), (value_dot, hv) = s2s.jvp(s2s.value_and_grad(relax), (x, 0.5, 4), (v, 0.0, 0))
    assert value == pytest.approx(relax(x, 0.5, 4), rel=1e-12)
    assert value_dot == pytest.approx(np.dot(g, v), rel=1e-10)
    _assert_close(hv, _differences(lambda t: s2s.grad(relax)(x + t * v, 0.5, 4)))
    g32, hv32 = s2s.jvp(s2s.grad(scalar), (np.float32(0.3), np.float32(1.5)), (np.float32(1.0), np.float32(0.0)))
    assert isinstance(hv32, np.float32) and hv32 == pytest.approx(6 * 0.3 * 1.5 + 1.5**2 * np.exp(0.45), rel=1e-5)


def test_a_gradient_that_does_not_vary_along_the_tangents_has_a_zero_tangent():
    x, a = np.array([0.3, 1.2]), np.array([2.0, -1.0])
    (gx, ga), (hx, ha) = s2s.jvp(s2s.grad(linear, argnums=(0, 1)), (x, a), (np.array([1.0, 0.5]), np.zeros(2)))
    np.testing.assert_array_equal(gx, a)
    np.testing.assert_array_equal(hx, np.zeros(2))  # d(a)/dx = 0
    np.testing.assert_array_equal(ha, np.array([1.0, 0.5]))  # d(x)/dx along v = v


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_of_a_gradient_with_aux_carries_aux_and_its_tangent(backend):
    """As JAX: ((gradient, aux), (the Hessian along v, aux's tangent)); of value_and_grad, the
    value's tangent with aux's."""
    x, v = np.array([0.3, 1.2, -0.7]), np.array([1.0, 0.5, -2.0])
    (g, aux), (hv, aux_dot) = s2s.jvp(s2s.grad(with_aux, has_aux=True), (x,), (v,), backend=backend)
    _assert_close(g, s2s.grad(with_aux, has_aux=True)(x)[0])
    _assert_close(hv, _differences(lambda t: s2s.grad(with_aux, has_aux=True)(x + t * v)[0]))
    _assert_close(aux, {"squares": x**2, "first": x[0]})
    _assert_close(aux_dot, {"squares": 2 * x * v, "first": v[0]})
    ((value, _), g), ((value_dot, aux_dot), hv) = s2s.jvp(s2s.value_and_grad(with_aux, has_aux=True), (x,), (v,),
                                                          backend=backend)
    assert value_dot == pytest.approx(np.dot(g, v), rel=1e-12)
    _assert_close(aux_dot["squares"], 2 * x * v)


def checked_pair(t):
    assert isinstance(t, tuple) and isinstance(t[1], float)
    return t[0] ** 2 * t[1]


def test_jvp_of_a_gradient_runs_the_code_generated_for_the_arguments_types():
    """isinstance of an argument is decided for the call, as grad decides it."""
    g, hv = s2s.jvp(s2s.grad(checked_pair), ((1.5, 2.0),), ((1.0, 0.5),))
    assert g == pytest.approx((6.0, 2.25)) and hv == pytest.approx((2 * 2.0 + 2 * 1.5 * 0.5, 2 * 1.5))


def test_refusals_say_what_to_do():
    with pytest.raises(s2s.S2SError, match="argument 2 is not made of floats") as info:
        s2s.jvp(s2s.grad(relax), (np.ones(2), 0.5, 3), (np.ones(2), 0.0, 1))
    assert "zero tangent" in str(info.value)
