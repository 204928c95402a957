"""One training step of the JAX tutorial's MLP (Dense(32), relu, Dense(10) on 64 features, Adam,
integer-label cross-entropy), three ways side by side in one process:

- s2s.jit(train_step): the seed's train_step compiled whole (TrainState in, TrainState out);
- the step in Python: s2s.jit(s2s.value_and_grad(loss)) and then state.apply_gradients;
- jax.jit(train_step) with flax.linen, optax and flax's TrainState, in float64 as s2s computes,
  where they are installed.

Each is timed as the best of interleaved rounds (a shared machine slows some rounds down); the
first call of each (writing and compiling it) is timed too, on whatever caches the process finds.
Run: python -m benchmarks.train_step [examples]"""

from __future__ import annotations

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


@s2s.jit
def train_step(state, batch):
    def loss_fn(params):
        logits = state.apply_fn(params, batch["image"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
    grads = s2s.grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads)


def loss(params, images, labels):
    logits = model.apply(params, images)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def timed(fn, *args):
    started = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - started


def jax_step(params, batch):
    """flax.linen, optax and flax's TrainState doing the same step, or None without them."""
    try:
        import flax.linen as linen
        import jax
        import optax as real_optax
        from flax.training import train_state as flax_train_state
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    class FlaxMLP(linen.Module):
        @linen.compact
        def __call__(self, x):
            x = linen.Dense(32, param_dtype=jax.numpy.float64)(x)
            x = linen.relu(x)
            return linen.Dense(10, param_dtype=jax.numpy.float64)(x)

    flax_model = FlaxMLP()
    state = flax_train_state.TrainState.create(apply_fn=flax_model.apply, params=jax.tree_util.tree_map(
        jax.numpy.asarray, params), tx=real_optax.adam(1e-2))

    @jax.jit
    def step(state, batch):
        def loss_fn(params):
            logits = state.apply_fn(params, batch["image"])
            return real_optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        grads = jax.grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads)

    device_batch = {k: jax.numpy.asarray(v) for k, v in batch.items()}
    return state, device_batch, lambda s, b: jax.block_until_ready(step(s, b))


def main(examples: int = 128) -> None:
    rng = np.random.default_rng(0)
    images = rng.normal(size=(examples, 64))
    batch = {"image": images, "label": np.argmax(images @ rng.normal(size=(64, 10)), axis=1)}
    params = model.init(s2s.random.PRNGKey(0), images[:1])
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-2))
    value_and_grad = s2s.jit(s2s.value_and_grad(loss))

    def python_step(state, batch):
        _, grads = value_and_grad(state.params, batch["image"], batch["label"])
        return state.apply_gradients(grads=grads)

    steps = {"s2s.jit(train_step)": (train_step, state, batch),
             "s2s.jit(value_and_grad) + apply_gradients in Python": (python_step, state, batch)}
    found = jax_step(params, batch)
    if found is not None:
        steps["jax.jit(train_step), flax and optax"] = (found[2], found[0], found[1])
    for name, (fn, s, b) in steps.items():
        _, seconds = timed(fn, s, b)
        print(f"first call  {name}: {seconds:.1f} s")
    best = _interleaved(steps)
    reference = best.get("jax.jit(train_step), flax and optax")
    for name, seconds in best.items():
        ratio = f"  ({seconds / reference:.2f}x JAX's)" if reference else ""
        print(f"a step      {name}: {seconds * 1e3:.3f} ms{ratio}")


def _interleaved(steps: dict, rounds: int = 30, calls: int = 20) -> dict:
    """Best time of one step of each, over interleaved rounds, each stepping its own state."""
    states = {name: s for name, (_, s, _) in steps.items()}
    best = {name: float("inf") for name in steps}
    for _ in range(rounds):
        for name, (fn, _, b) in steps.items():
            s = states[name]
            started = time.perf_counter()
            for _ in range(calls):
                s = fn(s, b)
            best[name] = min(best[name], (time.perf_counter() - started) / calls)
            states[name] = s
    return best


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 128)
