"""s2s.training.train_state.TrainState, as flax.training's: create initialises the optimizer's
state, apply_gradients takes one step of it (the same parameters as the optimizer run by hand)
and counts it; the state is immutable (replace gives a new one)."""

import dataclasses

import numpy as np
import pytest

import s2s
import s2s.nn as nn
import s2s.optax as optax
from finite_differences import central_difference_grad, where
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


def tiny_state(tx):
    return train_state.TrainState.create(apply_fn=MODEL.apply, params=MODEL.init(s2s.random.PRNGKey(0), X), tx=tx)


def assert_trees_close(a, b, rtol=1e-12, atol=1e-15):
    leaves_a, leaves_b = s2s.tree_util.tree_leaves(a), s2s.tree_util.tree_leaves(b)
    assert s2s.tree_util.tree_structure(a) == s2s.tree_util.tree_structure(b)
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def test_the_seed_s_train_step_compiled_whole_takes_the_step_of_central_differences():
    """SGD's step is -learning_rate times the gradient: the compiled step's gradient (state.apply_fn
    read as the module's function, s2s.grad(loss_fn) one reverse sweep) is that of central
    differences of the loss."""
    state = tiny_state(optax.sgd(0.5))
    stepped = s2s.jit(seed_train_step, backend="python")(state, BATCH)
    assert isinstance(stepped, train_state.TrainState) and stepped.step == 1
    assert stepped.apply_fn is state.apply_fn and stepped.tx is state.tx
    leaves, treedef = s2s.tree_util.tree_flatten(state.params)

    def loss_of_leaves(*flat):
        return mlp_loss(s2s.tree_util.tree_unflatten(treedef, list(flat)), BATCH)

    for k, (before, after) in enumerate(zip(leaves, s2s.tree_util.tree_leaves(stepped.params))):
        expected = before - 0.5 * central_difference_grad(loss_of_leaves, leaves, k)
        np.testing.assert_allclose(after, expected, rtol=1e-7, atol=1e-9)


OPTIMIZERS = {
    "adam": lambda: optax.adam(0.1),
    "adam nesterov": lambda: optax.adam(0.1, nesterov=True),
    "sgd nesterov momentum": lambda: optax.sgd(0.1, momentum=0.9, nesterov=True),
    "adamw with a mask": lambda: optax.adamw(0.05, weight_decay=0.1, mask={"params": {
        "Dense_0": {"kernel": True, "bias": False}, "Dense_1": {"kernel": True, "bias": False}}}),
    "rmsprop with momentum": lambda: optax.rmsprop(0.01, momentum=0.9),
    "clipped adam": lambda: optax.chain(optax.clip_by_global_norm(0.05), optax.adam(0.1)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_compiled_train_step_is_apply_gradients_step_after_step(name):
    """The optimizer's update written out for the parameters (s2s.optax's written.py) gives what
    its Python form gives, its state and the step count included, over steps that feed each other."""
    state = expected = tiny_state(OPTIMIZERS[name]())
    step = s2s.jit(seed_train_step, backend="python")
    grad = s2s.grad(mlp_loss)
    for _ in range(3):
        state = step(state, BATCH)
        expected = expected.apply_gradients(grads=grad(expected.params, BATCH))
    assert state.step == expected.step == 3
    assert_trees_close(state.params, expected.params)
    assert_trees_close(state.opt_state, expected.opt_state)
    assert mlp_loss(state.params, BATCH) < mlp_loss(tiny_state(optax.sgd(0.1)).params, BATCH)


def test_a_train_step_compiled_by_numba_runs_once_per_step_with_one_compilation():
    state = expected = tiny_state(optax.adam(0.1))
    step = s2s.jit(seed_train_step)
    grad = s2s.grad(mlp_loss)
    for _ in range(3):
        state = step(state, BATCH)
        expected = expected.apply_gradients(grads=grad(expected.params, BATCH))
    assert state.step == 3
    assert_trees_close(state.params, expected.params, rtol=1e-10)
    assert_trees_close(state.opt_state, expected.opt_state, rtol=1e-10)
    assert "def apply_gradients(state, grads):" in s2s.source(step)
    # the state a step returns is what the next takes: one kind of call, compiled once
    # (the optimizer's dicts come back in the order the first call's were given in)
    assert len(step._latest_sibling._by_kinds) == 1


def test_a_train_step_s2s_cannot_compile_is_refused_at_its_line():
    state = tiny_state(optax.adam(optax.exponential_decay(0.1, 10, 0.5)))
    with pytest.raises(s2s.S2SError, match="a learning rate that is a schedule") as info:
        s2s.jit(seed_train_step, backend="python")(state, BATCH)
    assert where(seed_train_step, "state.apply_gradients") in str(info.value)
    masked = tiny_state(optax.adamw(0.1, mask=lambda params: s2s.tree_util.tree_map(lambda p: p.ndim > 1, params)))
    with pytest.raises(s2s.S2SError, match="a mask given as a function cannot be compiled") as info:
        s2s.jit(seed_train_step, backend="python")(masked, BATCH)
    assert where(seed_train_step, "state.apply_gradients") in str(info.value)
    own = optax.GradientTransformation(lambda params: optax.EmptyState(),
                                       lambda updates, state, params=None: (updates, state))
    with pytest.raises(s2s.S2SError, match="an optimizer's update that s2s.optax did not make"):
        s2s.jit(seed_train_step, backend="python")(tiny_state(own), BATCH)
    with pytest.raises(s2s.S2SError, match=r"TrainState\.replace is not one s2s can compile") as info:
        s2s.jit(replaced_step, backend="python")(tiny_state(optax.sgd(0.1)), BATCH)
    assert where(replaced_step, "state.replace") in str(info.value)
    # the way out: the gradient of a module-level loss, jitted, and the step in Python
    grad_fn = s2s.jit(s2s.grad(mlp_loss), backend="python")
    stepped = state.apply_gradients(grads=grad_fn(state.params, BATCH))
    assert stepped.step == 1
    assert mlp_loss(stepped.params, BATCH) < mlp_loss(state.params, BATCH)


def replaced_step(state, batch):
    return state.replace(step=state.step + 1)


def step_of_a_state_in_a_tuple(states, batch):
    state, _ = states
    return state.apply_gradients(grads=state.params)


def test_a_state_the_code_cannot_see_whole_is_refused_with_what_compiles():
    state = tiny_state(optax.sgd(0.1))
    with pytest.raises(s2s.S2SError, match=r"state\.apply_gradients\(\.\.\.\) calls what the value state holds") \
            as info:
        s2s.jit(step_of_a_state_in_a_tuple, backend="python")((state, state), BATCH)
    assert where(step_of_a_state_in_a_tuple, "state.apply_gradients") in str(info.value)
    assert "an argument of the function s2s.jit is given" in str(info.value)
