"""s2s.training.train_state.TrainState, as flax.training's: create initialises the optimizer's
state, apply_gradients takes one step of it (the same parameters as the optimizer run by hand)
and counts it; the state is immutable (replace gives a new one)."""

import dataclasses

import numpy as np
import pytest

import s2s
import s2s.optax as optax
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
