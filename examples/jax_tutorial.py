"""A JAX tutorial's training loop, run by s2s: `import s2s as jax`, `import numpy as jnp`.

A two-layer perceptron with flax-style parameters (a dict of dicts) learns sin(x) with
jax.example_libraries-style Adam; per-example gradient norms come from vmap(grad), and
debug.print reports from inside the compiled loss.

Run it: python examples/jax_tutorial.py [steps]
"""

import sys

import numpy as np
import numpy as jnp

import s2s as jax
from s2s import optimizers  # jax.example_libraries.optimizers


def init_params(rng, hidden):
    return {
        "Dense_0": {"kernel": rng.normal(size=(1, hidden)), "bias": jnp.zeros(hidden)},
        "Dense_1": {"kernel": rng.normal(size=(hidden,)) / jnp.sqrt(hidden), "bias": 0.0},
    }


def predict(params, x):
    h = jnp.tanh(x @ params["Dense_0"]["kernel"] + params["Dense_0"]["bias"])
    return h @ params["Dense_1"]["kernel"] + params["Dense_1"]["bias"]


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


def loss_reporting(params, x, y):
    value = jnp.mean((predict(params, x) - y) ** 2)
    jax.debug.print("  (inside the compiled loss) mse = {mse:.5f}", mse=value)
    return value


def main(steps=2000):
    rng = np.random.default_rng(0)
    x = jnp.linspace(-3.0, 3.0, 128).reshape(-1, 1)
    y = jnp.sin(x[:, 0])
    params = init_params(rng, 16)

    opt_init, opt_update, get_params = optimizers.adam(0.01)
    value_and_grad = jax.jit(jax.value_and_grad(loss))
    opt_state = opt_init(params)
    for i in range(steps):
        value, grads = value_and_grad(get_params(opt_state), x, y)
        opt_state = opt_update(i, grads, opt_state)
        if i % 500 == 0:
            print(f"step {i:5d}  loss {value:.5f}")
    params = jax.block_until_ready(get_params(opt_state))
    final = jax.jit(loss_reporting)(params, x, y)
    print(f"final loss {final:.5f} on {jax.devices()}")

    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(params, x[:, None, :], y[:, None])
    norms = jnp.sqrt(sum(jnp.sum(leaf.reshape(len(x), -1) ** 2, axis=1)
                         for leaf in jax.tree_util.tree_leaves(per_example)))
    print(f"per-example gradient norms: median {jnp.median(norms):.4f}, largest {jnp.max(norms):.4f}")
    return final


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
