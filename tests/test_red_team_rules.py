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
    want = central_difference_grad(weighted_indexed_permutation, (x, key), 0)
    assert np.abs(want).max() > 0.5
    np.testing.assert_allclose(wrap(s2s.grad(weighted_indexed_permutation))(x, key), want, atol=1e-6)


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
