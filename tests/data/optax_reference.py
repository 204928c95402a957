"""Writes optax_reference.json: optax's own values for the cases tests/test_optax.py checks
s2s.optax against. Run with optax and JAX installed (not test dependencies of s2s):

    python -m venv /tmp/optax-venv && /tmp/optax-venv/bin/pip install jax==0.10.2 optax==0.2.8
    JAX_ENABLE_X64=1 /tmp/optax-venv/bin/python tests/data/optax_reference.py
"""

import json
import os
import sys

import jax
import numpy as np
import optax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
import optax_cases  # noqa: E402

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(5)
PARAMS = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
GRADIENTS = [{"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)} for _ in range(6)]

OPTIMIZERS = optax_cases.optimizers(optax)
SCHEDULES = optax_cases.schedules(optax)

LOGITS = RNG.normal(size=(4, 3)) * 3.0
DISTRIBUTIONS = np.abs(RNG.normal(size=(4, 3)))
DISTRIBUTIONS /= DISTRIBUTIONS.sum(axis=1, keepdims=True)
CLASSES = np.array([2, 0, 1, 2])
BITS = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])


def tolist(tree):
    return jax.tree.map(lambda x: np.asarray(x).tolist(), tree)


def main():
    out = {"params": tolist(PARAMS), "gradients": tolist(GRADIENTS), "optimizers": {}, "schedules": {},
           "logits": LOGITS.tolist(), "distributions": DISTRIBUTIONS.tolist(), "classes": CLASSES.tolist(),
           "bits": BITS.tolist()}
    for name, make in OPTIMIZERS.items():
        opt = make()
        params = jax.tree.map(np.asarray, PARAMS)
        state = opt.init(params)
        for g in GRADIENTS:
            updates, state = opt.update(g, state, params)
            params = optax.apply_updates(params, updates)
        out["optimizers"][name] = tolist(params)
    for name, make in SCHEDULES.items():
        schedule = make()
        out["schedules"][name] = [float(schedule(k)) for k in range(13)]
    out["losses"] = {
        "softmax_cross_entropy": tolist(optax.softmax_cross_entropy(LOGITS, DISTRIBUTIONS)),
        "softmax_cross_entropy_with_integer_labels":
            tolist(optax.softmax_cross_entropy_with_integer_labels(LOGITS, CLASSES)),
        "l2_loss": tolist(optax.l2_loss(LOGITS, DISTRIBUTIONS)),
        "l2_loss of predictions": tolist(optax.l2_loss(LOGITS)),
        "sigmoid_binary_cross_entropy": tolist(optax.sigmoid_binary_cross_entropy(LOGITS, BITS)),
    }
    out["global_norm"] = float(optax.global_norm(GRADIENTS[0]))
    with open(os.path.join(HERE, "optax_reference.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
