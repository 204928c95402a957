"""s2s.training.train_state.TrainState, as flax.training's: create initialises the optimizer's
state, apply_gradients takes one step of it (the same parameters as the optimizer run by hand)
and counts it; the state is immutable (replace gives a new one)."""

import dataclasses

import numpy as np
import pytest

import s2s
import s2s.nn as nn
import s2s.optax as optax
from finite_differences import where
from s2s.training import train_state


def model_apply(params, x):
    return np.tanh(x @ params["w"] + params["b"])


def loss(params, x, y):
    return np.mean((model_apply(params, x) - y) ** 2)


RNG = np.random.default_rng(4)
X, Y = RNG.normal(size=(8, 3)), RNG.normal(size=(8, 2)) * 0.5
PARAMS = {"w": RNG.normal(size=(3, 2)) * 0.3, "b": np.zeros(2)}


def test_apply_gradients_is_the_optimizer_s_step_and_counts_it():
    tx = optax.adam(0.05)
    state = train_state.TrainState.create(apply_fn=model_apply, params=PARAMS, tx=tx)
    params, opt_state = PARAMS, tx.init(PARAMS)
    grad = s2s.grad(loss)
    for _ in range(5):
        state = state.apply_gradients(grads=grad(state.params, X, Y))
        updates, opt_state = tx.update(grad(params, X, Y), opt_state, params)
        params = optax.apply_updates(params, updates)
    assert state.step == 5
    for key in PARAMS:
        np.testing.assert_array_equal(state.params[key], params[key])
    np.testing.assert_array_equal(state.apply_fn(state.params, X), model_apply(params, X))


def test_training_lowers_the_loss_and_leaves_earlier_states_as_they_were():
    state = train_state.TrainState.create(apply_fn=model_apply, params=PARAMS, tx=optax.sgd(0.2, momentum=0.9))
    first = state
    grad = s2s.jit(s2s.grad(loss))
    for _ in range(40):
        state = state.apply_gradients(grads=grad(state.params, X, Y))
    assert loss(state.params, X, Y) < 0.7 * loss(PARAMS, X, Y)
    assert first.step == 0 and first.params is PARAMS
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.step = 0
    assert state.replace(step=7).step == 7 and state.step == 40


# ---- the seed's train_step, compiled whole: refused at the line, with the way out ---------------


class TinyMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.relu(nn.Dense(4)(x)))


MODEL = TinyMLP()
BATCH = {"image": X, "label": np.array([0, 1, 1, 0, 1, 0, 0, 1])}


def seed_train_step(state, batch):
    def loss_fn(params):
        logits = state.apply_fn(params, batch['image'])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch['label']).mean()
    grads = s2s.grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads)


def train_step_with_the_model_by_name(state, batch):
    def loss_fn(params):
        logits = MODEL.apply(params, batch['image'])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch['label']).mean()
    grads = s2s.grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads)


def mlp_loss(params, batch):
    logits = MODEL.apply(params, batch['image'])
    return optax.softmax_cross_entropy_with_integer_labels(logits, batch['label']).mean()


def test_a_train_step_compiled_whole_is_refused_where_it_calls_what_the_state_holds():
    state = train_state.TrainState.create(apply_fn=MODEL.apply, params=MODEL.init(s2s.random.PRNGKey(0), X),
                                          tx=optax.adam(0.1))
    way_out = "grad_fn = s2s.jit(s2s.grad(loss))"
    with pytest.raises(s2s.S2SError, match=r"state\.apply_fn\(\.\.\.\) calls what the value state holds") as info:
        s2s.jit(seed_train_step)(state, BATCH)
    assert where(seed_train_step, "state.apply_fn") in str(info.value) and way_out in str(info.value)
    with pytest.raises(s2s.S2SError, match=r"state\.apply_gradients\(\.\.\.\) calls what the value state") as info:
        s2s.jit(train_step_with_the_model_by_name)(state, BATCH)
    assert where(train_step_with_the_model_by_name, "state.apply_gradients") in str(info.value)
    assert way_out in str(info.value)
    # the way out: the gradient of a module-level loss, jitted, and the step in Python
    grad_fn = s2s.jit(s2s.grad(mlp_loss), backend="python")
    stepped = state.apply_gradients(grads=grad_fn(state.params, BATCH))
    assert stepped.step == 1
    assert mlp_loss(stepped.params, BATCH) < mlp_loss(state.params, BATCH)
