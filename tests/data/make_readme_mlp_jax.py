"""Writes readme_mlp_jax.json: JAX's gradients of the MLP of JAX's README, which
tests/test_container_loops.py compares s2s's against (grad, jit(grad), vmap and jit(vmap)).

JAX is a reference only, never a dependency of s2s or its tests. Regenerate with
    python tests/data/make_readme_mlp_jax.py        (any Python with jax installed; x64 mode)
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def predict(params, inputs):  # as JAX's README writes it
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jnp.tanh(outputs)
    return outputs


def loss(params, inputs, targets):
    preds = predict(params, inputs)
    return jnp.sum((preds - targets) ** 2)


def loss_output_layer_after_the_loop(params, inputs, targets):
    for W, b in params[:-1]:
        inputs = jnp.tanh(jnp.dot(inputs, W) + b)
    W, b = params[-1]
    return jnp.sum((jnp.dot(inputs, W) + b - targets) ** 2)


rng = np.random.default_rng(20261207)
widths = (3, 4, 2)
params = [(rng.standard_normal((m, n)) * 0.5, rng.standard_normal(n) * 0.1) for m, n in zip(widths[:-1], widths[1:])]
inputs, targets = rng.standard_normal((5, widths[0])), rng.standard_normal((5, widths[-1]))
as_jax = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]


def listed(tree):
    return [[np.asarray(part).tolist() for part in layer] for layer in tree]


out = {"params": listed(params), "inputs": inputs.tolist(), "targets": targets.tolist()}
for name, fun in [("loss", loss), ("loss_output_layer_after_the_loop", loss_output_layer_after_the_loop)]:
    out[name] = {"value": float(fun(as_jax, inputs, targets)),
                 "grad": listed(jax.jit(jax.grad(fun))(as_jax, inputs, targets)),
                 "per_example": listed(jax.jit(jax.vmap(jax.grad(fun), in_axes=(None, 0, 0)))(as_jax, inputs, targets))}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readme_mlp_jax.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", path)
