"""Idioms of user programs (tests/idiom_cases.py): each works, checked against closed forms or
central differences, or is refused with a way out."""

import numpy as np
import pytest

import s2s
import idiom_cases as cases
from finite_differences import central_difference_grad

X = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


@pytest.mark.parametrize("jitted", [False, True])
def test_vjp_fills_in_defaults_the_call_leaves_out(jitted):
    fun = s2s.jit(cases.scaled_square) if jitted else cases.scaled_square
    x = np.array([1.0, 2.0])
    value, pullback = s2s.vjp(fun, x)
    assert value == pytest.approx(10.0)
    (x_bar,) = pullback(1.5)
    np.testing.assert_allclose(x_bar, 1.5 * 4.0 * x, rtol=1e-15)


def test_append_in_reverse_and_forward_mode():
    # (reverse mode refused it; it now pops what the loop appended: tests/test_list_appends.py)
    np.testing.assert_allclose(s2s.grad(cases.appended_squares)(X), 2 * X, rtol=1e-15)
    np.testing.assert_allclose(s2s.jacfwd(cases.appended_squares)(X), 2 * X, rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_reversed_range_loops(backend):
    assert s2s.jit(cases.horner_backwards, backend=backend)(X) == cases.horner_backwards(X)
    np.testing.assert_allclose(s2s.jit(s2s.grad(cases.horner_backwards), backend=backend)(X),
                               0.5 ** np.arange(5), rtol=1e-15)
    for k in (1, 2, 3, 7):
        assert s2s.jit(cases.strided_backwards, backend=backend)(X, k) == cases.strided_backwards(X, k)
        np.testing.assert_allclose(s2s.jit(s2s.grad(cases.strided_backwards), backend=backend)(X, k),
                                   central_difference_grad(cases.strided_backwards, (X, k), 0), rtol=1e-8, atol=1e-9)


def test_tuple_loop_state_under_jit_grad():
    # (a tuple of arrays a loop overwrites: its items' shapes are taped under Numba too)
    x0, v0 = np.array([1.0, 2.0]), np.array([0.5, -0.5])
    expected = [central_difference_grad(cases.tuple_state, (x0, v0), k) for k in (0, 1)]
    np.testing.assert_allclose(s2s.grad(cases.tuple_state)(x0, v0), expected[0], rtol=1e-8)
    for got, want in zip(s2s.jit(s2s.grad(cases.tuple_state, argnums=(0, 1)))(x0, v0), expected):
        np.testing.assert_allclose(got, want, rtol=1e-8)


def test_vmap_grad_over_an_unmapped_list_of_arrays_of_different_shapes():
    ws = [np.array([1.0, 2.0]), np.array([3.0])]
    xs = np.array([0.1, 0.2, 0.3])
    got = s2s.vmap(s2s.grad(cases.sine_layers), in_axes=(None, 0))(ws, xs)
    for w, g in zip(ws, got):  # d/dw sum sin(w x) = x cos(w x), one row per example
        np.testing.assert_allclose(g, xs[:, None] * np.cos(w[None, :] * xs[:, None]), rtol=1e-14)


def test_float32_least_squares_under_jit_grad():
    # the loss is float64 (a Python float promotes it under Numba), the operands float32
    w, x = np.ones(2, np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    expected = 2.0 / 3.0 * x.astype(np.float64).T @ (x.astype(np.float64) @ w - 1.0)
    for argnums, want in ((0, expected), (1, 2.0 / 3.0 * np.outer(x @ w - 1.0, w))):
        gradient = s2s.jit(s2s.grad(cases.least_squares, argnums=argnums))(w, x)
        assert gradient.dtype == np.float32
        np.testing.assert_allclose(gradient, want, rtol=1e-6)


def test_builtin_max_of_an_array_is_the_loop_python_runs():
    # max(x) was refused (pointing to np.max); it is now the loop over x's items Python runs,
    # max(acc, x[i]), whose derivative is 1 at the largest item
    want = central_difference_grad(cases.builtin_max, (X,), 0)
    np.testing.assert_allclose(s2s.grad(cases.builtin_max)(X), want, atol=1e-9)
    np.testing.assert_allclose(s2s.jacfwd(cases.builtin_max)(X), want, atol=1e-9)
    assert s2s.jit(cases.builtin_max)(X) == 5.0


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_zero_dimensional_array_argument_in_a_loop(backend):
    x, a = np.array([1.0, 2.0]), np.array(0.5)  # jnp.array(0.5), as JAX code passes numbers
    gradient = s2s.jit(s2s.grad(cases.repeated_scaling, argnums=1), backend=backend)(x, a)
    assert isinstance(gradient, np.ndarray) and gradient.shape == ()  # the argument's structure, as JAX
    assert gradient == pytest.approx(2 * 0.5 * np.sum(x), rel=1e-15)
    assert s2s.jit(cases.repeated_scaling, backend=backend)(x, a) == pytest.approx(0.75, rel=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hessian_has_aux(backend):
    x = np.array([0.3, 0.8, -1.2])
    hessian, aux = s2s.jit(s2s.hessian(cases.energy_and_forces, has_aux=True), backend=backend)(x, 2.0)
    second = 2.0 * (2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))  # d2/dx2 of sin(x) x^2, times c
    np.testing.assert_allclose(hessian, np.diag(second), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(aux, np.cos(x), rtol=1e-15)
    with pytest.raises(s2s.S2SError, match=r"has_aux=True\) with a tuple of argnums"):
        s2s.hessian(cases.energy_and_forces, argnums=(0, 1), has_aux=True)


def test_jacfwd_of_jacrev_with_has_aux_on_both():
    x = np.array([0.3, 0.8, -1.2])
    hessian, aux = s2s.jacfwd(s2s.jacrev(cases.energy_and_forces, has_aux=True), has_aux=True)(x, 2.0)
    second = 2.0 * (2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))
    np.testing.assert_allclose(hessian, np.diag(second), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(aux, np.cos(x), rtol=1e-15)
    with pytest.raises(s2s.S2SError, match="has_aux take it on both transforms"):
        s2s.jacfwd(s2s.jacrev(cases.energy_and_forces, has_aux=True))(x, 2.0)


_H0 = np.array([[0.2, -0.1], [0.4, 0.3], [-0.5, 0.1], [0.3, 0.2]])
_BIASES = 0.1 * np.arange(24.0).reshape(3, 4, 2) - 1.0
_GRAPH_POINTS = {  # the three paths of the function's end
    "w_taken": (_H0, np.array([0.5, -1.0, 0.8]), 0.2 * _BIASES),
    "w_too_small": (_H0, np.array([0.5, -1.0, 0.8]), 1.5 * _BIASES),
    "w_unbound": (0.1 * _H0, np.array([0.1, 0.2, 0.1]), 0.01 * _BIASES),
}


@pytest.mark.parametrize("point", _GRAPH_POINTS.values(), ids=_GRAPH_POINTS.keys())
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_graph_network_of_module_constants_scan_over_a_dict_and_segment_sums(backend, point):
    """A module dict of constants, scan over a dict of inputs, np.add.at and np.bincount, and a
    variable bound on one path: every argument's gradient against central differences."""
    f = cases.message_passing
    for k in range(3):
        expected = central_difference_grad(f, point, k)
        np.testing.assert_allclose(s2s.jit(s2s.grad(f, argnums=k), backend=backend)(*point), expected,
                                   rtol=1e-6, atol=1e-8)
    value, tangent = s2s.jvp(f, point, (np.ones_like(point[0]), np.zeros(3), np.zeros_like(point[2])))
    assert value == pytest.approx(f(*point), rel=1e-13)
    assert tangent == pytest.approx(np.sum(central_difference_grad(f, point, 0)), rel=1e-6)
    H = s2s.jit(s2s.hessian(f, argnums=1), backend=backend)(*point)
    np.testing.assert_allclose(H, [central_difference_grad(lambda *a: s2s.grad(f, argnums=1)(*a)[i], point, 1, h=1e-5)
                                   for i in range(3)], rtol=1e-5, atol=1e-7)
