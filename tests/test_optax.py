"""s2s.optax against optax itself: the optimizers' parameters after six updates, the schedules'
values and the losses' values are optax's, stored in tests/data/optax_reference.json by
tests/data/optax_reference.py (the command is in its docstring); the losses' derivatives inside
transformed functions against central differences, in grad, vmap and s2s.jit (a training loop)."""

import json
import os

import numpy as np
import pytest

import s2s
import s2s.optax as optax
from finite_differences import central_difference_grad
from optax_cases import optimizers, schedules

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "optax_reference.json")) as f:
    REFERENCE = json.load(f)


def arrays(tree):
    return {k: np.array(v) for k, v in tree.items()}


OPTIMIZERS = optimizers(optax)
SCHEDULES = schedules(optax)


def test_the_reference_covers_every_case_here():
    assert set(REFERENCE["optimizers"]) == set(OPTIMIZERS) and set(REFERENCE["schedules"]) == set(SCHEDULES)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_parameters_after_six_updates_are_optax_s(name):
    opt = OPTIMIZERS[name]()
    params = arrays(REFERENCE["params"])
    state = opt.init(params)
    for gradient in REFERENCE["gradients"]:
        updates, state = opt.update(arrays(gradient), state, params)
        params = optax.apply_updates(params, updates)
    # (optax evaluates a schedule at its int32 step count, in float32 there: 1e-8 apart from float64's)
    tolerance = 1e-7 if "schedule" in name or "cosine" in name else 1e-12
    for key, expected in REFERENCE["optimizers"][name].items():
        np.testing.assert_allclose(params[key], expected, rtol=tolerance, atol=1e-14)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_are_optax_s(name):
    schedule = SCHEDULES[name]()
    np.testing.assert_allclose([schedule(k) for k in range(13)], REFERENCE["schedules"][name], rtol=1e-12)


def test_global_norm_is_optax_s():
    np.testing.assert_allclose(optax.global_norm(arrays(REFERENCE["gradients"][0])), REFERENCE["global_norm"],
                               rtol=1e-12)


LOGITS = np.array(REFERENCE["logits"])
DISTRIBUTIONS = np.array(REFERENCE["distributions"])
CLASSES = np.array(REFERENCE["classes"])
BITS = np.array(REFERENCE["bits"])


def test_losses_are_optax_s():
    losses = REFERENCE["losses"]
    np.testing.assert_allclose(optax.softmax_cross_entropy(LOGITS, DISTRIBUTIONS), losses["softmax_cross_entropy"],
                               rtol=1e-12)
    np.testing.assert_allclose(optax.softmax_cross_entropy_with_integer_labels(LOGITS, CLASSES),
                               losses["softmax_cross_entropy_with_integer_labels"], rtol=1e-12)
    np.testing.assert_allclose(optax.l2_loss(LOGITS, DISTRIBUTIONS), losses["l2_loss"], rtol=1e-12)
    np.testing.assert_allclose(optax.l2_loss(LOGITS), losses["l2_loss of predictions"], rtol=1e-12)
    np.testing.assert_allclose(optax.sigmoid_binary_cross_entropy(LOGITS, BITS),
                               losses["sigmoid_binary_cross_entropy"], rtol=1e-12)


def classifier_loss(w, x, distributions, classes, bits):
    logits = x @ w
    return (np.mean(optax.softmax_cross_entropy(logits, distributions))
            + np.mean(optax.softmax_cross_entropy_with_integer_labels(logits, classes))
            + np.sum(optax.l2_loss(logits, distributions)) + np.sum(optax.l2_loss(logits) * 0.1)
            + np.mean(optax.sigmoid_binary_cross_entropy(logits, bits)))


X = np.random.default_rng(2).normal(size=(4, 5))
W = np.random.default_rng(3).normal(size=(5, 3))


def test_losses_differentiate_inside_a_transformed_function():
    args = (W, X, DISTRIBUTIONS, CLASSES, BITS)
    np.testing.assert_allclose(s2s.grad(classifier_loss)(*args), central_difference_grad(classifier_loss, args, 0),
                               rtol=1e-6, atol=1e-8)


def example_loss(w, x, classes):
    return np.sum(optax.softmax_cross_entropy_with_integer_labels(x @ w, classes))


def test_per_example_gradients_of_a_loss():
    per_example = s2s.vmap(s2s.grad(example_loss), in_axes=(None, 0, 0))(W, X[:, None, :], CLASSES[:, None])
    for k in range(4):
        expected = central_difference_grad(example_loss, (W, X[k:k + 1], CLASSES[k:k + 1]), 0)
        np.testing.assert_allclose(per_example[k], expected, rtol=1e-6, atol=1e-8)


def params_loss(params, x, distributions, classes, bits):
    return classifier_loss(params["w"], x, distributions, classes, bits)


def test_a_compiled_training_loop_lowers_the_loss():
    opt = optax.chain(optax.clip_by_global_norm(5.0), optax.adamw(0.05, weight_decay=1e-3))
    params = {"w": W.copy()}
    state = opt.init(params)
    data = (X, DISTRIBUTIONS, CLASSES, BITS)
    grad = s2s.jit(s2s.grad(params_loss))
    np.testing.assert_allclose(grad(params, *data)["w"], central_difference_grad(classifier_loss, (W, *data), 0),
                               rtol=1e-6, atol=1e-8)
    first = params_loss(params, *data)
    for _ in range(50):
        updates, state = opt.update(grad(params, *data), state, params)
        params = optax.apply_updates(params, updates)
    assert params_loss(params, *data) < 0.5 * first
