"""Every runtime helper compiles under numba.njit for scalars and arrays of several ndims,
and agrees with its NumPy version."""

import numba
import numpy as np
import pytest

from s2s import runtime as rt
from s2s import runtime_numba  # noqa: F401

rng = np.random.default_rng(3)


def jit_call(helper, *args):
    """Call a runtime helper from inside a numba.njit function, as generated code does."""
    names = ", ".join(f"a{k}" for k in range(len(args)))
    namespace = {"rt": rt, "helper": helper}
    exec(f"def wrapper({names}):\n    return helper({names})\n", namespace)
    return numba.njit(namespace["wrapper"])(*args)


@pytest.mark.parametrize("g_shape,x_shape", [((), ()), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)),
                                             ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((4, 2, 3), (2, 3)),
                                             ((4, 2, 3), (4, 1, 3))])
def test_unbroadcast(g_shape, x_shape):
    g = rng.standard_normal(g_shape) if g_shape else 1.5
    x = rng.standard_normal(x_shape) if x_shape else 0.5
    np.testing.assert_allclose(jit_call(rt.unbroadcast, g, x), rt.unbroadcast(g, x))
    expected = np.sum(np.broadcast_to(g, np.broadcast_shapes(np.shape(g), np.shape(x))).reshape(
        (-1,) + tuple(x_shape)) if len(g_shape) > len(x_shape) else g, axis=0) if len(g_shape) > len(x_shape) else None
    if expected is not None and np.shape(expected) == x_shape:
        np.testing.assert_allclose(rt.unbroadcast(g, x), expected)


@pytest.mark.parametrize("value", [1.5, np.float32(2.0), np.ones(3), np.ones((2, 3)), np.ones((2, 1, 3))])
def test_value_helpers(value):
    z = jit_call(rt.zeros_like, value)
    assert np.shape(z) == np.shape(value) and np.all(np.asarray(z) == 0)
    c = jit_call(rt.copy, value)
    np.testing.assert_array_equal(c, value)
    assert jit_call(rt.shape, value) == np.shape(value)


def test_tree_helpers():
    tree = (np.ones(2), 3.0)
    z = jit_call(rt.zeros_like, tree)
    assert z[1] == 0.0 and np.all(z[0] == 0)
    s = jit_call(rt.tree_add, tree, tree)
    np.testing.assert_allclose(s[0], 2.0)
    namespace = {"rt": rt}
    exec("def add_second(c, v):\n    return rt.add_at(c, 1, v)\n", namespace)
    a = numba.njit(namespace["add_second"])(tree, 2.0)
    assert a[1] == 5.0


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_reduction_adjoints(shape, axis):
    x = rng.uniform(0.5, 1.5, shape)
    for helper, reducer in [(rt.sum_bar, np.sum), (rt.mean_bar, np.mean)]:
        g = reducer(x, axis=axis) * 0 + 1.3 if axis is not None else 1.3
        np.testing.assert_allclose(jit_call(helper, g, x, axis), helper(g, x, axis))
    y = np.max(x, axis=axis)
    g = y * 0 + 0.7
    np.testing.assert_allclose(jit_call(rt.max_bar, g, y, x, axis), rt.max_bar(g, y, x, axis))
    if axis is None:
        y = np.prod(x)
        np.testing.assert_allclose(jit_call(rt.prod_bar, 1.0, y, x), rt.prod_bar(1.0, y, x))
        np.testing.assert_allclose(jit_call(rt.var_bar, 1.0, x), rt.var_bar(1.0, x))


def test_prod_adjoint_is_exact_at_zero():
    x = np.array([2.0, 0.0, 3.0])
    np.testing.assert_allclose(rt.prod_bar(1.0, 0.0, x), [0.0, 6.0, 0.0])
    np.testing.assert_allclose(jit_call(rt.prod_bar, 1.0, 0.0, x), [0.0, 6.0, 0.0])


@pytest.mark.parametrize("xs,ys", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4))])
def test_matmul_adjoints(xs, ys):
    x, y = rng.standard_normal(xs), rng.standard_normal(ys)
    g = rng.standard_normal(np.shape(x @ y)) if np.ndim(x @ y) else 1.2
    np.testing.assert_allclose(jit_call(rt.matmul_bar_x, g, x, y), rt.matmul_bar_x(g, x, y))
    np.testing.assert_allclose(jit_call(rt.matmul_bar_y, g, x, y), rt.matmul_bar_y(g, x, y))
    # <g, x @ y> is linear in x: its gradient is matmul_bar_x.
    eps = 1e-6
    d = rng.standard_normal(xs)
    fd = (np.sum(g * ((x + eps * d) @ y)) - np.sum(g * ((x - eps * d) @ y))) / (2 * eps)
    assert fd == pytest.approx(np.sum(rt.matmul_bar_x(g, x, y) * d), rel=1e-6)
