"""Writes tests/data/flax_reference.json: what flax.linen itself gives for the modules of
tests/test_nn.py (their parameters drawn by init from PRNGKey(0), apply's outputs, and the output
with dropout from PRNGKey(3)). Flax and JAX are not dependencies of s2s; the values were made in a
separate environment with:

    python -m venv /tmp/flaxenv && /tmp/flaxenv/bin/pip install flax==0.12.8 jax==0.10.2
    /tmp/flaxenv/bin/python tests/data/flax_reference.py > tests/data/flax_reference.json
"""

import json
import sys

import flax.linen as nn
import jax
import numpy as np


class MLP(nn.Module):
    hidden: int = 5
    classes: int = 3

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(self.classes)(x)


class Block(nn.Module):
    features: tuple = (4, 3)

    def setup(self):
        self.layers = [nn.Dense(f) for f in self.features]
        self.norm = nn.LayerNorm()

    def __call__(self, x):
        for layer in self.layers:
            x = nn.tanh(layer(x))
        return self.norm(x)


class Tagger(nn.Module):
    vocabulary: int = 7

    @nn.compact
    def __call__(self, ids, train: bool = False):
        x = nn.Embed(self.vocabulary, 5)(ids)
        x = Block()(x)
        x = nn.Dropout(0.5, deterministic=not train)(x)
        x = nn.Sequential([nn.Dense(4), nn.gelu, nn.Dense(2)])(x)
        return nn.log_softmax(x)


class ConvNet(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(3, (3, 2), padding="SAME")(x)
        x = nn.sigmoid(x)
        x = nn.Conv(2, (2, 2), padding="VALID")(x)
        return nn.Conv(1, 3, padding="SAME")(x.reshape(x.shape[0], -1, 2))


def as_lists(tree):
    return jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), tree)


x = np.random.default_rng(1).normal(size=(4, 2)).astype(np.float32)
ids = np.array([1, 2, 5, 6, 2])
mlp = MLP().init(jax.random.PRNGKey(0), x)
tagger = Tagger().init(jax.random.PRNGKey(0), ids)
images = np.random.default_rng(2).normal(size=(2, 5, 4, 2)).astype(np.float32)
conv = ConvNet().init(jax.random.PRNGKey(0), images)
json.dump({
    "versions": {"flax": __import__("flax").__version__, "jax": jax.__version__},
    "mlp_params": as_lists(mlp["params"]),
    "mlp_apply": as_lists(MLP().apply(mlp, x)),
    "tagger_params": as_lists(tagger["params"]),
    "tagger_apply": as_lists(Tagger().apply(tagger, ids)),
    "tagger_apply_with_dropout": as_lists(Tagger().apply(tagger, ids, train=True,
                                                         rngs={"dropout": jax.random.PRNGKey(3)})),
    "conv_params": as_lists(conv["params"]),
    "conv_apply": as_lists(ConvNet().apply(conv, images)),
}, sys.stdout, indent=1)
sys.stdout.write("\n")
