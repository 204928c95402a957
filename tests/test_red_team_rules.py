"""Red-team findings on custom rules, checkpoint, s2s.random, pytrees and optimizers: each test
checks against central finite differences, a closed form or a plain loop (never s2s itself)."""

import numpy as np
import pytest

import s2s
from s2s import random
from finite_differences import central_difference_grad


def weighted_permutation(x, key):  # permutation(key, x) moves x's elements: not a constant of x
    return np.sum(random.permutation(key, x) * np.arange(x.shape[0]))


def weighted_indexed_permutation(x, key):  # the way out the refusal names
    return np.sum(x[random.permutation(key, x.shape[0])] * np.arange(x.shape[0]))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_permutation_of_a_differentiated_array_is_refused_not_a_zero_gradient(backend):
    """grad of sum(permutation(key, x) * w) was 0 (the draw was a constant of x); now an
    S2SError at the call that names the indexed form, whose gradient is w permuted back."""
    x, key = np.array([0.3, -1.2, 0.7, 2.0]), random.PRNGKey(3)
    wrap = (lambda g: s2s.jit(g)) if backend == "cpu" else (lambda g: g)
    with pytest.raises(s2s.S2SError, match=r"x\[random.permutation\(key, x.shape\[0\]\)\]"):
        wrap(s2s.grad(weighted_permutation))(x, key)
    if backend == "python":  # (the way out, against differences; compiled it costs 15 s)
        want = central_difference_grad(weighted_indexed_permutation, (x, key), 0)
        assert np.abs(want).max() > 0.5
        np.testing.assert_allclose(s2s.grad(weighted_indexed_permutation)(x, key), want, atol=1e-6)


def test_an_update_refuses_a_vector_gradient_for_a_number_leaf():
    """sgd(1.0) over {"a": 0.5, "b": [1, 2]} with the gradient {"a": [10, 20], "b": [1, 1]}
    packed a's two numbers into the buffer, so b moved by [20, 1]: b became [-19, 1] where the
    shapes differ (an array leaf of another shape was refused already)."""
    init, update, get_params = s2s.optimizers.sgd(1.0)
    state = init({"a": 0.5, "b": np.array([1.0, 2.0])})
    with pytest.raises(s2s.S2SError, match="structure and shapes"):
        update(0, {"a": np.array([10.0, 20.0]), "b": np.array([1.0, 1.0])}, state)
    new = get_params(update(0, {"a": 10.0, "b": np.array([1.0, 1.0])}, state))  # x - g, by hand
    assert new["a"] == -9.5 and np.array_equal(new["b"], [0.0, 1.0])


@s2s.custom_jvp
def sine_with_shortcut(x):
    return np.sin(x)


@sine_with_shortcut.defjvp
def sine_with_shortcut_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    if np.all(x_dot == 0.0):  # a shortcut for a zero tangent: the path the transpose would take
        return np.sin(x), np.zeros_like(x)
    return np.sin(x), np.cos(x) * x_dot


def squared_sine_with_shortcut(x):
    return np.sum(sine_with_shortcut(x) ** 2)


@s2s.custom_jvp
def running_sum(x):
    return np.cumsum(x)


@running_sum.defjvp
def running_sum_jvp(primals, tangents):  # a loop over the tangent's length: its shape, not its values
    x, = primals
    x_dot, = tangents
    out = np.zeros_like(x)
    total = 0.0
    for i in range(x_dot.shape[0]):
        total = total + x_dot[i]
        out[i] = total
    return np.cumsum(x), out


def squared_running_sum(x):
    return np.sum(running_sum(x * x) ** 2)


def test_a_jvp_rule_that_branches_on_its_tangent_is_refused_in_reverse_mode():
    """grad through a custom_jvp whose rule tests its tangent (`if np.all(x_dot == 0)`) was 0:
    reverse mode transposes the rule at zero tangents. JAX refuses it under grad; so does s2s,
    at the if. Forward mode runs the rule on the real tangents and is right; a loop over the
    tangent's shape is no test on its values."""
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(s2s.S2SError, match="branches .or loops. on the values of its tangents"):
        s2s.grad(squared_sine_with_shortcut)(x)
    by_differences = central_difference_grad(squared_sine_with_shortcut, (x,), 0)
    np.testing.assert_allclose(s2s.jvp(squared_sine_with_shortcut, (x,), (np.ones(3),))[1], np.sum(by_differences),
                               rtol=1e-6)
    np.testing.assert_allclose(s2s.grad(squared_running_sum)(x), central_difference_grad(squared_running_sum, (x,), 0),
                               rtol=1e-6)


@s2s.custom_jvp
def sine_through_abs(x):
    return np.sin(x)


@sine_through_abs.defjvp
def sine_through_abs_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return np.sin(x), np.cos(x) * (np.abs(x_dot) * np.sign(x_dot))  # x_dot, through functions not linear in it


def squared_sine_through_abs(x):
    return np.sum(sine_through_abs(x) ** 2)


def test_a_jvp_rule_not_linear_in_its_tangent_is_refused_in_reverse_mode():
    """abs(x_dot) * sign(x_dot) is x_dot, but the transpose differentiates it at x_dot = 0: the
    gradient was 0 (want 2 sin(x) cos(x)). JAX has no transpose for abs either."""
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(s2s.S2SError, match="not linear in the tangents .absolute."):
        s2s.grad(squared_sine_through_abs)(x)
    np.testing.assert_allclose(s2s.jvp(squared_sine_through_abs, (x,), (np.ones(3),))[1],
                               np.sum(central_difference_grad(squared_sine_through_abs, (x,), 0)), rtol=1e-6)
