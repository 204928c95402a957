"""Lists that a loop appends to (trajectories), stacked by np.array / np.stack, under s2s.jit:
the primal, its gradient and its jvp compile with Numba and agree with central differences.
Also `xs += [a, b]` and `xs.extend([a, b])` on a list, which append."""

import numpy as np
import pytest

import s2s

from finite_differences import central_differences as central_difference, where


def trajectory(x0, k):
    xs = []
    x = x0
    for i in range(12):
        x = x + 0.1 * (-k * np.sin(x))
        xs.append(x)
    return np.sum(np.array(xs) ** 2)


def trajectory_stacked(x0, k):
    xs = [x0]
    x = x0
    for i in range(12):
        x = x + 0.1 * (-k * x * x)
        xs.append(x)
    path = np.stack(xs)
    return np.sum(path[1:] * path[:-1])


def energies(x0, k):
    values = []
    x = x0
    for i in range(6):
        x = x * k + np.cos(x)
        values.append(np.sum(x * x))
    return np.sum(np.array(values) * np.arange(1.0, 7.0))


def extended(x0, k):
    xs = []
    x = x0
    for i in range(5):
        x = x * k + np.sin(x)
        xs += [x, x * x]
    return np.sum(np.array(xs))


def extended_by_method(x0, k):
    xs = [x0]
    for i in range(4):
        xs.extend((xs[-1] * k, np.cos(xs[-1])))
    return np.sum(np.stack(xs) ** 2)


def array_plus_display(x0, k):
    a = x0 * k
    a += [1.0, 2.0, 3.0]  # an array: += adds elementwise, it does not append
    return np.sum(a ** 2)


def read_back(x0, k):
    xs = [x0]
    for i in range(6):
        xs.append(xs[i] * 0.9 + np.sin(xs[-1]) * k)
    total = 0.0
    for i in range(len(xs)):
        total = total + np.sum(xs[i] * xs[i])
    return total


def _product_of_neighbours(v, j):
    return v[j] * v[j - 1]


def passed_to_a_helper(x0, k):
    xs = [x0]
    for i in range(3):
        xs.append(np.tanh(xs[-1]) + k * x0)
    return np.sum(_product_of_neighbours(xs, 2)) + np.sum(_product_of_neighbours(xs, 3))


def item_replaced(x0, k):
    v = [x0, x0 * x0]
    v[0] = np.cos(v[1]) * k
    return np.sum(v[0] * v[1])


def grown_in_a_while_loop(x0, k):
    xs = [x0]
    t = 0.0
    while t < 1.0:
        xs.append(xs[-1] * k + 0.1 * np.cos(xs[-1]))
        t = t + 0.3
    return np.sum(np.stack(xs)[-1] ** 2) + np.sum(xs[1])


def pair(x0, k):
    a = x0 * k
    b = np.tanh(x0)
    return np.sum(np.array((a, b)) ** 3) + np.sum(np.array([a, b, a]))


X0 = np.array([0.3, -0.2, 0.5])
K = 0.7
CASES = [trajectory, trajectory_stacked, energies, extended, extended_by_method, read_back, passed_to_a_helper,
         item_replaced, grown_in_a_while_loop, pair]


def _numeric_gradient(f):
    return central_difference(lambda x: f(x, K), X0)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jit_primal(f):
    assert np.allclose(s2s.jit(f)(X0, K), f(X0, K), rtol=1e-12)


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient(f, backend):
    grad = s2s.grad(f)
    if backend == "cpu":
        grad = s2s.jit(grad)
    assert np.allclose(grad(X0, K), _numeric_gradient(f), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [extended, extended_by_method, trajectory], ids=lambda f: f.__name__)
def test_jvp(f):
    v = np.array([1.0, 0.5, -0.3])
    _, tangent = s2s.jvp(f, (X0, K), (v, 0.0), backend="cpu")
    assert np.allclose(tangent, _numeric_gradient(f) @ v, rtol=1e-6, atol=1e-8)


def test_plus_display_on_an_array_adds():
    assert np.allclose(s2s.grad(array_plus_display)(X0, K), _numeric_gradient(array_plus_display), rtol=1e-6)


def test_extend_appends_in_the_generated_code():
    grad = s2s.grad(extended)
    grad(X0, K)
    source = s2s.source(grad)
    assert "xs.append(x)\n" in source and "xs.append(_t" in source
    assert "xs.pop()" in source


def test_per_example_trajectories_under_vmap():
    xs = np.random.default_rng(0).standard_normal((7, 3))
    batched = s2s.jit(s2s.vmap(s2s.grad(trajectory), in_axes=(0, None)))(xs, K)
    for b in range(xs.shape[0]):
        expected = central_difference(lambda x: trajectory(x, K), xs[b])
        assert np.allclose(batched[b], expected, rtol=1e-6, atol=1e-8)


def ragged(x0, k):
    xs = [x0]
    xs.append(x0[:2] * k)
    return np.sum(np.array(xs))


def ragged_read_back(x0, k):
    v = [x0, x0[:2] * k]
    return np.sum(v[0]) + np.sum(v[1] ** 2)


def stacked_along_axis_1(x0, k):
    xs = [x0, x0 * k]
    return np.sum(np.stack(xs, 1)[0])


def test_ragged_list_raises_under_jit():
    with pytest.raises(s2s.S2SError, match="different shapes") as info:
        s2s.jit(ragged)(X0, K)
    # The statement, which the python backend cannot name (NumPy's np.array takes the list):
    # the compiled helper gets its place (where=...), as compiled code keeps no traceback.
    assert where(ragged, "return np.sum(np.array(xs))") in str(info.value)
    assert "backend='python' names the statement" not in str(info.value)
    # Its adjoint too (an array with a row per item): backend='python' takes it.
    with pytest.raises(s2s.S2SError, match="adjoint of a list of arrays of different shapes"):
        s2s.jit(s2s.grad(ragged_read_back))(X0, K)
    assert np.allclose(s2s.jit(ragged_read_back)(X0, K), ragged_read_back(X0, K))
    assert np.allclose(s2s.grad(ragged_read_back)(X0, K), _numeric_gradient(ragged_read_back), rtol=1e-6)


def test_stack_of_a_list_along_another_axis_says_how():
    with pytest.raises(s2s.S2SError, match="axis 0") as info:
        s2s.jit(stacked_along_axis_1)(X0, K)
    assert where(stacked_along_axis_1, "np.stack(xs, 1)") in str(info.value)
    assert 'runtime.stack(xs, 1, where="test_jit_lists.py:' in s2s.source(s2s.jit(stacked_along_axis_1))
    assert np.allclose(s2s.grad(stacked_along_axis_1)(X0, K), _numeric_gradient(stacked_along_axis_1), rtol=1e-6)


def layers_of_different_shapes(x):
    params = [np.ones((3, 4)) * x[0], np.ones(4) * x[1], np.ones((4, 2)) * x[2]]
    h = np.tanh(x[:3] @ params[0] + params[1])
    return np.sum((h @ params[2]) ** 2)


def test_a_list_display_of_layers_of_different_shapes_under_jit():
    """Numba types the display as a literal list, read at constant indices; its adjoint is a
    tuple of the items' adjoints."""
    x = np.array([0.3, 0.5, 0.9, 1.3])
    np.testing.assert_allclose(s2s.jit(s2s.grad(layers_of_different_shapes))(x),
                               central_difference(layers_of_different_shapes, x), rtol=1e-6, atol=1e-9)


# ---- sum() of a list of arrays --------------------------------------------------------------------
# Python's sum starts from 0, which under Numba cannot become an array (`acc = 0; acc = acc + v`
# gives acc two types): it starts from runtime.sum_start, 0 on the python backend and zeros of
# the items' shape under Numba.

def sum_of_arrays(x0, k):
    ys = [x0 * k, np.sin(x0), x0 * x0]
    rows = np.outer(x0, x0 * k)
    return np.sum(sum(ys) ** 2) + np.sum(sum(rows) * x0)  # (sum of a 2-d array: of its rows)


def sum_of_a_grown_list(x0, k):
    ys = []
    x = x0
    for i in range(3):
        x = x * k + np.cos(x)
        ys.append(x)
    return np.sum(sum(ys) * x0)


def sum_of_an_empty_list_of_arrays(x0, k):
    ys = []
    for i in range(x0.shape[0] - 3):  # (no item: sum(ys) is Python's 0)
        ys.append(x0 * k)
    return np.sum(sum(ys) + x0 * k)


@pytest.mark.parametrize("f", [sum_of_arrays, sum_of_a_grown_list], ids=lambda f: f.__name__)
def test_sum_of_a_list_of_arrays(f):
    expected = _numeric_gradient(f)
    assert np.allclose(s2s.grad(f)(X0, K), expected, rtol=1e-6, atol=1e-8)
    value, gradient = s2s.jit(s2s.value_and_grad(f))(X0, K)
    assert np.allclose(value, f(X0, K), rtol=1e-12)
    assert np.allclose(gradient, expected, rtol=1e-6, atol=1e-8)


def test_sum_of_an_empty_list_of_arrays():
    f = sum_of_an_empty_list_of_arrays
    assert np.allclose(s2s.grad(f)(X0, K), _numeric_gradient(f), rtol=1e-6, atol=1e-8)
    # Under Numba the empty list has no item shape to start from: refused, naming the statement
    with pytest.raises(s2s.S2SError, match="sum\\(\\) of an empty sequence of arrays") as info:
        s2s.jit(f)(X0, K)
    assert where(f, "return np.sum(sum(ys) + x0 * k)") in str(info.value)
