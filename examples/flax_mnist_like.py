"""The JAX tutorial's section on state, run by s2s: a Flax module, an Optax optimizer and a
TrainState, with `import s2s.nn as nn`, `import s2s.optax as optax` and
`from s2s.training import train_state` in place of flax.linen, optax and flax.training.

The seeds' MLP (Dense(32), relu, Dense(10)) learns to classify synthetic "images" (64 features,
10 classes whose labels a fixed random linear map of the features decides). The seed's
`train_step(state, batch)`, with its nested `loss_fn` given to s2s.grad and the optimizer's step
`state.apply_gradients`, is compiled whole by s2s.jit: Numba runs one call per step. The example
checks the gradient against central differences along a few random directions, that the first
compiled step is the step TrainState takes in Python with that gradient, and that the loss falls,
and stops with an error if any fails.

Run it: python examples/flax_mnist_like.py [steps]
"""

import sys
import time

import numpy as np

import s2s
import s2s.nn as nn
import s2s.optax as optax
from s2s.training import train_state


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(32)(x)
        x = nn.relu(x)
        return nn.Dense(10)(x)


model = MLP()


def loss(params, images, labels):
    logits = model.apply(params, images)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def synthetic_batch(rng, examples=256, features=64, classes=10):
    """Images of `features` numbers and labels that a fixed random linear map decides."""
    images = rng.normal(size=(examples, features))
    teacher = rng.normal(size=(features, classes))
    return {"image": images, "label": np.argmax(images @ teacher, axis=1)}


@s2s.jit
def train_step(state, batch):
    def loss_fn(params):
        logits = state.apply_fn(params, batch["image"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
    grads = s2s.grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads)


def check_gradient(value_and_grad, params, batch, directions=3, h=1e-6):
    """<grad, v> against the central difference of the loss along v, for a few random v."""
    rng = np.random.default_rng(1)
    _, grads = value_and_grad(params, batch["image"], batch["label"])
    leaves, treedef = s2s.tree_util.tree_flatten(params)
    grad_leaves = s2s.tree_util.tree_leaves(grads)
    worst = 0.0
    for _ in range(directions):
        v = [rng.normal(size=np.shape(leaf)) for leaf in leaves]
        up = s2s.tree_util.tree_unflatten(treedef, [p + h * d for p, d in zip(leaves, v)])
        down = s2s.tree_util.tree_unflatten(treedef, [p - h * d for p, d in zip(leaves, v)])
        difference = (loss(up, batch["image"], batch["label"]) - loss(down, batch["image"], batch["label"])) / (2 * h)
        analytic = sum(np.sum(g * d) for g, d in zip(grad_leaves, v))
        worst = max(worst, abs(analytic - difference) / max(1.0, abs(difference)))
        assert np.isclose(analytic, difference, rtol=1e-5, atol=1e-7), (analytic, difference)
    return worst


def main(steps=40):
    key = s2s.random.PRNGKey(0)
    key, subkey = s2s.random.split(key)
    batch = synthetic_batch(np.random.default_rng(0))
    params = model.init(subkey, batch["image"][:1])
    print("parameters:", {name: {k: v.shape for k, v in layer.items()} for name, layer in params["params"].items()})

    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-2))
    value_and_grad = s2s.value_and_grad(loss)  # (in Python: the reference the compiled step is checked against)
    worst = check_gradient(value_and_grad, state.params, batch)
    print(f"gradient matches central differences along 3 directions (worst relative error {worst:.1e})")

    first, _ = value_and_grad(state.params, batch["image"], batch["label"])
    started = time.perf_counter()
    stepped = train_step(state, batch)
    print(f"train_step compiled whole in {time.perf_counter() - started:.1f} s (the first call)")
    by_hand = state.apply_gradients(grads=value_and_grad(state.params, batch["image"], batch["label"])[1])
    for a, b in zip(s2s.tree_util.tree_leaves(stepped.params), s2s.tree_util.tree_leaves(by_hand.params)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    print("its first step is TrainState.apply_gradients' with that gradient")

    state = stepped
    started = time.perf_counter()
    for step in range(1, steps):
        state = train_step(state, batch)
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss(state.params, batch['image'], batch['label']):.4f}")
    each = (time.perf_counter() - started) / max(steps - 1, 1)
    final = loss(state.params, batch["image"], batch["label"])
    accuracy = np.mean(np.argmax(state.apply_fn(state.params, batch["image"]), axis=1) == batch["label"])
    assert state.step == steps
    assert final < 0.5 * first, (first, final)
    print(f"trained the MLP: loss {first:.4f} -> {final:.4f} in {state.step} steps ({each * 1e3:.2f} ms a step "
          f"after the first), training accuracy {accuracy:.2f}")
    return final


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
