"""s2s.nn, Flax's modules in NumPy: init draws Flax's parameters (names, nesting, initialisers,
random streams), apply runs eagerly, and inside s2s.grad, vmap and jit model.apply is the plain
function s2s.nn writes for the module. Values are checked against the same network written in
NumPy here, gradients against central differences, and what cannot be written is refused."""

import inspect
import json
import os

import numpy as np
import pytest

import s2s
import s2s.nn as nn
from s2s import random
from finite_differences import central_difference_grad, where

KEY = random.PRNGKey(0)


# What flax.linen gives for the same modules, keys and inputs (tests/data/flax_reference.py says how it
# was made): Flax draws in float32, so its numbers equal s2s.nn's float64 ones to float32's rounding.
with open(os.path.join(os.path.dirname(__file__), "data", "flax_reference.json")) as f:
    FLAX = json.load(f)


def as_arrays(reference):
    """The JSON's nested dicts with arrays at their leaves (its lists are arrays, not pytrees)."""
    if isinstance(reference, dict):
        return {key: as_arrays(value) for key, value in reference.items()}
    return np.asarray(reference)


def assert_flax_s(tree, reference):
    reference = as_arrays(reference)
    assert s2s.tree_util.tree_structure(tree) == s2s.tree_util.tree_structure(reference)
    for ours, theirs in zip(s2s.tree_util.tree_leaves(tree), s2s.tree_util.tree_leaves(reference)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


def grad_by_differences(fun, tree):
    """Central differences of the scalar fun(tree) with respect to every leaf of a dict tree."""
    leaves, treedef = s2s.tree_util.tree_flatten(tree)
    sizes = [np.size(leaf) for leaf in leaves]
    flat = np.concatenate([np.ravel(leaf) for leaf in leaves])

    def of_flat(v):
        parts = np.split(v, np.cumsum(sizes)[:-1])
        return fun(s2s.tree_util.tree_unflatten(treedef, [p.reshape(np.shape(l)) for p, l in zip(parts, leaves)]))

    g = central_difference_grad(of_flat, (flat,), 0)
    parts = np.split(g, np.cumsum(sizes)[:-1])
    return s2s.tree_util.tree_unflatten(treedef, [p.reshape(np.shape(l)) for p, l in zip(parts, leaves)])


def assert_trees_close(a, b, **tolerances):
    assert s2s.tree_util.tree_structure(a) == s2s.tree_util.tree_structure(b)
    for x, y in zip(s2s.tree_util.tree_leaves(a), s2s.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(x, y, **tolerances)


class MLP(nn.Module):
    hidden: int = 5
    classes: int = 3

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(self.classes)(x)


MODEL = MLP()
X = np.random.default_rng(1).normal(size=(4, 2))
VARIABLES = MODEL.init(KEY, X)


def mlp_in_numpy(p, x):
    h = np.maximum(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"], 0.0)
    return h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"]


def mlp_loss(variables, x):
    return np.sum(np.tanh(MODEL.apply(variables, x)) ** 2)


def mlp_loss_mean(variables, x):
    return np.mean(np.tanh(MODEL.apply(variables, x)) ** 2)


def test_init_names_dense_layers_as_flax_and_draws_lecun_normal_kernels_and_zero_biases():
    params = VARIABLES["params"]
    assert set(VARIABLES) == {"params"} and set(params) == {"Dense_0", "Dense_1"}
    assert {k: v.shape for k, v in params["Dense_0"].items()} == {"kernel": (2, 5), "bias": (5,)}
    assert {k: v.shape for k, v in params["Dense_1"].items()} == {"kernel": (5, 3), "bias": (3,)}
    # Flax's names, its streams (a key per draw from the module's path and count) and its
    # initialisers (lecun_normal kernels, zero biases): flax.linen's own numbers
    assert_flax_s(params, FLAX["mlp_params"])
    np.testing.assert_allclose(MODEL.apply(VARIABLES, X), FLAX["mlp_apply"], rtol=1e-5, atol=1e-6)


def test_apply_eagerly_is_the_network_in_numpy():
    np.testing.assert_allclose(MODEL.apply(VARIABLES, X), mlp_in_numpy(VARIABLES["params"], X), rtol=1e-12)


def test_grad_through_apply_matches_central_differences_and_the_written_function_is_plain_source():
    value, grads = s2s.value_and_grad(mlp_loss)(VARIABLES, X)
    np.testing.assert_allclose(value, np.sum(np.tanh(mlp_in_numpy(VARIABLES["params"], X)) ** 2), rtol=1e-12)
    expected = grad_by_differences(lambda v: mlp_loss(v, X), VARIABLES)
    assert_trees_close(grads, expected, rtol=1e-6, atol=1e-8)
    written = inspect.getsource(MODEL.apply.as_called_function())
    assert 'nn_functional.dense(x, params["Dense_0"]["kernel"], params["Dense_0"]["bias"])' in written
    assert "def MLP_apply(variables, x, rngs=None):" in written


class Scaled(nn.Module):
    scale: np.ndarray

    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(x * self.scale)


def test_instances_whose_array_fields_differ_keep_their_own_values_and_gradients():
    # (both write the same source; each function must still read its own instance's array)
    first, second = Scaled(scale=np.array([1.0, 2.0])), Scaled(scale=np.array([3.0, 7.0]))
    variables = first.init(KEY, X)

    def loss_of(model):
        return lambda v, x: np.sum(model.apply(v, x) ** 2)

    for model in (first, second):
        loss = loss_of(model)
        value, grads = s2s.value_and_grad(loss)(variables, X)
        np.testing.assert_allclose(value, np.sum(model.apply(variables, X) ** 2), rtol=1e-12)
        assert_trees_close(grads, grad_by_differences(lambda v: loss(v, X), variables), rtol=1e-6, atol=1e-8)


def test_vmap_of_apply_over_examples_is_apply_of_each():
    per_example = s2s.vmap(lambda v, x: MODEL.apply(v, x), in_axes=(None, 0))(VARIABLES, X)
    np.testing.assert_allclose(per_example, mlp_in_numpy(VARIABLES["params"], X), rtol=1e-12)
    per_example_grads = s2s.vmap(s2s.grad(mlp_loss), in_axes=(None, 0))(VARIABLES, X)
    first = s2s.grad(mlp_loss)(VARIABLES, X[0])
    assert_trees_close(s2s.tree_util.tree_map(lambda g: g[0], per_example_grads), first, rtol=1e-10)


def test_pmap_of_grad_through_apply_averages_to_the_full_batch_gradient(monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "2")

    def shard_step(variables, x):
        return s2s.lax.pmean(s2s.grad(mlp_loss_mean)(variables, x), "i")

    shards = np.random.default_rng(2).normal(size=(2, 3, 2))
    averaged = s2s.pmap(shard_step, "i", in_axes=(None, 0), out_axes=None, devices=s2s.devices()[:2])(VARIABLES, shards)
    full = grad_by_differences(lambda v: mlp_loss_mean(v, shards.reshape(6, 2)), VARIABLES)
    assert_trees_close(averaged, full, rtol=1e-6, atol=1e-8)


def test_jit_of_grad_through_apply_agrees_with_the_python_backend():
    compiled = s2s.jit(s2s.grad(mlp_loss))(VARIABLES, X)
    assert_trees_close(compiled, s2s.grad(mlp_loss)(VARIABLES, X), rtol=1e-10)


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


IDS = np.array([1, 2, 5, 6, 2])
TAGGER = Tagger()
TAGGER_VARIABLES = TAGGER.init(KEY, IDS)


def layer_norm(x, scale, bias):
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-6) * scale + bias


def tagger_in_numpy(p, ids, mask=None):
    x = p["Embed_0"]["embedding"][ids]
    for name in ("layers_0", "layers_1"):
        x = np.tanh(x @ p["Block_0"][name]["kernel"] + p["Block_0"][name]["bias"])
    x = layer_norm(x, p["Block_0"]["norm"]["scale"], p["Block_0"]["norm"]["bias"])
    if mask is not None:
        x = np.where(mask, x / 0.5, 0.0)
    h = x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"]
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    z = h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"]
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_setup_attributes_sequential_places_and_nested_modules_name_parameters_as_flax():
    params = TAGGER_VARIABLES["params"]
    # (Dropout has no parameters; Sequential none of its own: the layers made inline in Tagger's
    # compact method are Tagger's Dense_0 and Dense_1, whatever holds them)
    assert set(params) == {"Embed_0", "Block_0", "Dense_0", "Dense_1"}
    assert set(params["Block_0"]) == {"layers_0", "layers_1", "norm"}
    np.testing.assert_array_equal(params["Block_0"]["norm"]["scale"], np.ones(3))
    np.testing.assert_array_equal(params["Block_0"]["norm"]["bias"], np.zeros(3))
    # Embed's variance_scaling(1.0, 'fan_in', 'normal', out_axis=0), setup's and Sequential's
    # names, nested paths: flax.linen's own numbers
    assert_flax_s(params, FLAX["tagger_params"])


def test_dropout_draws_its_mask_from_the_dropout_stream_and_is_the_identity_when_deterministic():
    params = TAGGER_VARIABLES["params"]
    np.testing.assert_allclose(TAGGER.apply(TAGGER_VARIABLES, IDS), tagger_in_numpy(params, IDS), rtol=1e-12)
    np.testing.assert_allclose(TAGGER.apply(TAGGER_VARIABLES, IDS), FLAX["tagger_apply"], rtol=1e-5, atol=1e-6)
    trained = TAGGER.apply(TAGGER_VARIABLES, IDS, train=True, rngs={"dropout": random.PRNGKey(3)})
    # (Flax's mask, from the same key: each unit kept and scaled by 1 / (1 - rate), or zeroed)
    np.testing.assert_allclose(trained, FLAX["tagger_apply_with_dropout"], rtol=1e-5, atol=1e-6)


def test_grad_through_embed_layer_norm_dropout_and_sequential_matches_central_differences():
    dropout_key = random.PRNGKey(3)

    def loss(variables, ids, key):
        return np.sum(TAGGER.apply(variables, ids, train=True, rngs={"dropout": key}) ** 2)

    value, grads = s2s.value_and_grad(loss)(TAGGER_VARIABLES, IDS, dropout_key)
    np.testing.assert_allclose(value, loss(TAGGER_VARIABLES, IDS, dropout_key), rtol=1e-12)
    expected = grad_by_differences(lambda v: loss(v, IDS, dropout_key), TAGGER_VARIABLES)
    assert_trees_close(grads, expected, rtol=1e-5, atol=1e-7)


class ConvNet(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(3, (3, 2), padding="SAME")(x)
        x = nn.sigmoid(x)
        x = nn.Conv(2, (2, 2), padding="VALID")(x)
        return nn.Conv(1, 3, padding="SAME")(x.reshape(x.shape[0], -1, 2))


def correlate(x, kernel, pads):
    """Cross-correlation in loops, channels last, zero padding pads (low, high) per spatial axis."""
    x = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    spatial = kernel.shape[:-2]
    out_shape = tuple(n - k + 1 for n, k in zip(x.shape[1:-1], spatial))
    out = np.zeros((x.shape[0],) + out_shape + (kernel.shape[-1],))
    for index in np.ndindex(*out_shape):
        window = x[(slice(None),) + tuple(slice(i, i + k) for i, k in zip(index, spatial))]
        out[(slice(None),) + index] = np.tensordot(window, kernel, axes=len(spatial) + 1)
    return out


def test_conv_1d_and_2d_same_and_valid_in_nhwc_are_cross_correlations_and_differentiate():
    model = ConvNet()
    x = np.random.default_rng(2).normal(size=(2, 5, 4, 2))
    variables = model.init(KEY, x)
    p = variables["params"]
    assert p["Conv_0"]["kernel"].shape == (3, 2, 2, 3) and p["Conv_2"]["kernel"].shape == (3, 2, 1)
    h = 1 / (1 + np.exp(-(correlate(x, p["Conv_0"]["kernel"], [(1, 1), (0, 1)]) + p["Conv_0"]["bias"])))
    h = correlate(h, p["Conv_1"]["kernel"], [(0, 0), (0, 0)]) + p["Conv_1"]["bias"]
    y = correlate(h.reshape(2, -1, 2), p["Conv_2"]["kernel"], [(1, 1)]) + p["Conv_2"]["bias"]
    np.testing.assert_allclose(model.apply(variables, x), y, rtol=1e-12)
    assert_flax_s(p, FLAX["conv_params"])  # (the kernels' fan_in: the window's size times the input features)
    np.testing.assert_allclose(model.apply(variables, x), FLAX["conv_apply"], rtol=1e-5, atol=1e-6)

    def loss(variables, x):
        return np.sum(model.apply(variables, x) ** 2)

    grads = s2s.grad(loss)(variables, x)
    assert_trees_close(grads, grad_by_differences(lambda v: loss(v, x), variables), rtol=1e-5, atol=1e-7)


def test_activations_are_their_closed_forms_and_differentiate():
    x = np.linspace(-3.0, 3.0, 8).reshape(1, 8)
    np.testing.assert_allclose(nn.relu(x), np.where(x > 0, x, 0.0))
    np.testing.assert_allclose(nn.sigmoid(x), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(nn.tanh(x), np.tanh(x))
    np.testing.assert_allclose(nn.softmax(x), np.exp(x) / np.exp(x).sum())
    np.testing.assert_allclose(nn.log_softmax(x), x - np.log(np.exp(x).sum()))
    np.testing.assert_allclose(nn.gelu(x, approximate=False),
                               [[0.5 * v * (1 + __import__("math").erf(v / np.sqrt(2))) for v in x[0]]], rtol=1e-12)
    np.testing.assert_array_equal(nn.one_hot(np.array([0, 2, 5]), 3), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])

    def combined(x):
        return np.sum(nn.softmax(x) * nn.log_softmax(2 * x) + nn.gelu(x) * nn.sigmoid(x) + nn.relu(x) * nn.tanh(x))

    np.testing.assert_allclose(s2s.grad(combined)(x), central_difference_grad(combined, (x,), 0), rtol=1e-6)


class Branching(nn.Module):
    @nn.compact
    def __call__(self, x):
        if np.sum(x) > 0:
            return nn.Dense(2)(x)
        return x


class Holder(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(2)
        return helper(dense, x)


def helper(layer, x):
    return layer(x)


def test_what_cannot_be_written_as_a_plain_function_is_refused_with_a_way_out():
    x = np.ones((1, 2))
    variables = Branching().init(KEY, x)
    branching = Branching()
    with pytest.raises(s2s.S2SError, match="under an if, for or while that the data decides") as info:
        s2s.grad(lambda v: np.sum(branching.apply(v, x)))(variables)
    line = inspect.getsourcelines(Branching.__call__)[1] + 3  # (the decorator, the def, the if)
    assert str(info.value).startswith(f"{__file__}:{line}:20: s2s.nn cannot write Branching.__call__")
    holder = Holder()
    variables = holder.init(KEY, x)
    with pytest.raises(s2s.S2SError, match=r"test_nn.py:\d+:\d+: .*a module used as a value"):
        s2s.grad(lambda v: np.sum(holder.apply(v, x)))(variables)


class Plain:
    def apply(self, x):
        return x


PLAIN = Plain()


def test_other_global_objects_are_still_refused_as_values():
    with pytest.raises(s2s.S2SError, match="cannot be used as a value"):
        s2s.grad(lambda x: PLAIN.apply(x) ** 2)(1.0)


class Linear(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        w = self.param("w", nn.initializers.lecun_normal(), (x.shape[-1], self.features))
        b = self.param("b", nn.initializers.normal(0.5), (self.features,))
        return x @ w + b


class LinearTanh(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = Linear(4)(x)  # a module of the user's inside another
        scale = self.param("scale", nn.initializers.uniform(2.0), (1,))
        return np.tanh(x) * scale


class Gated(nn.Module):
    """setup-style: a module of the user's held as an attribute, called twice, and a parameter of
    its own read in __call__."""

    def setup(self):
        self.inner = Linear(2)

    def __call__(self, x):
        return self.inner(x) * self.param("gain", nn.initializers.ones, (2,)) + self.inner(x) ** 2


LINEAR_TANH = LinearTanh()
LINEAR_TANH_VARIABLES = LINEAR_TANH.init(KEY, X)
GATED = Gated()
GATED_VARIABLES = GATED.init(KEY, X)


def linear_tanh_apply(variables, x):
    return LINEAR_TANH.apply(variables, x)


def linear_tanh_loss(variables, x):
    return np.sum(LINEAR_TANH.apply(variables, x) ** 2) + np.sum(GATED.apply(variables["gated"], x) ** 2)


def test_self_param_in_a_module_of_the_users_is_the_read_of_its_entry_of_the_params_dict():
    params = LINEAR_TANH_VARIABLES["params"]
    assert {k: np.shape(v) for k, v in params["Linear_0"].items()} == {"w": (2, 4), "b": (4,)}
    assert set(params) == {"Linear_0", "scale"} and params["scale"].shape == (1,)
    assert set(GATED_VARIABLES["params"]) == {"inner", "gain"} and set(GATED_VARIABLES["params"]["inner"]) == {"w", "b"}
    expected = np.tanh(X @ params["Linear_0"]["w"] + params["Linear_0"]["b"]) * params["scale"]
    np.testing.assert_allclose(LINEAR_TANH.apply(LINEAR_TANH_VARIABLES, X), expected, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(linear_tanh_apply, backend="python")(LINEAR_TANH_VARIABLES, X), expected,
                               rtol=1e-12)
    written = inspect.getsource(LINEAR_TANH.apply.as_called_function())
    assert 'x = LinearTanh_apply_Linear_0(params["Linear_0"], x)\n    scale = params["scale"]\n' in written
    assert "initializers" not in written and "shape" not in written  # (init's arguments are init's alone)


def test_grad_through_self_param_nested_and_setup_style_matches_central_differences():
    variables = {"params": LINEAR_TANH_VARIABLES["params"], "gated": GATED_VARIABLES}
    value, grads = s2s.value_and_grad(linear_tanh_loss)(variables, X)
    np.testing.assert_allclose(value, linear_tanh_loss(variables, X), rtol=1e-12)
    assert_trees_close(grads, grad_by_differences(lambda v: linear_tanh_loss(v, X), variables), rtol=1e-6, atol=1e-8)
    per_example = s2s.vmap(linear_tanh_apply, in_axes=(None, 0))(LINEAR_TANH_VARIABLES, X)
    np.testing.assert_allclose(per_example, LINEAR_TANH.apply(LINEAR_TANH_VARIABLES, X), rtol=1e-12)


class TwoOfOneName(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x * self.param("w", nn.initializers.ones, (2,)) + self.param("w", nn.initializers.ones, (2,))


class ParamUnderAnIf(nn.Module):
    @nn.compact
    def __call__(self, x):
        if np.sum(x) > 0:
            x = x * self.param("w", nn.initializers.ones, (2,))
        return x


class ParamNamedByData(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x * self.param(str(x.shape[0]), nn.initializers.ones, (2,))


class WithVariable(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x + self.variable("stats", "mean", np.zeros, (2,)).value


class WithMakeRng(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x + random.normal(self.make_rng("noise"), x.shape)


@pytest.mark.parametrize("module, refusal", [
    (TwoOfOneName(), "a second self.param named 'w' in one call"),
    (ParamUnderAnIf(), "self.param under an if, for or while that the data decides"),
    (ParamNamedByData(), "a parameter named by a value known only when the function runs"),
    (WithVariable(), "self.variable in the __call__"),
    (WithMakeRng(), "self.make_rng in the __call__"),
])
def test_self_param_that_cannot_be_written_faithfully_and_variables_and_rngs_are_refused(module, refusal):
    with pytest.raises(s2s.S2SError, match=rf"test_nn.py:\d+:\d+: s2s.nn cannot write .*{refusal}"):
        module.apply.as_called_function()


class ScaledBySetup(nn.Module):
    """setup-style self.param, Flax's other pattern: the parameters are attributes that __call__ reads."""

    features: int

    def setup(self):
        self.kernel = self.param("kernel", nn.initializers.lecun_normal(), (3, self.features))
        self.bias = self.param("bias", nn.initializers.normal(0.5), (self.features,))
        self.dense = nn.Dense(self.features)

    def __call__(self, x):
        return np.tanh(x @ self.kernel + self.bias) + self.dense(x) * self.kernel.sum() + self.bias[0]


class SetupPieces(nn.Module):
    """Parameters of a setup in larger expressions, held in a list and a dict, and a submodule's
    parameter read by its parent."""

    def setup(self):
        self.kernel = self.param("kernel", nn.initializers.normal(0.5), (3, 3))
        self.scales = [self.param(f"scale_{i}", nn.initializers.uniform(2.0), (3,)) for i in range(2)]
        self.offsets = {"a": self.param("offset", nn.initializers.normal(0.5), (3,))}
        self.inner = ScaledBySetup(3)

    def __call__(self, x):
        kernel = self.kernel
        y = np.dot(x, self.kernel.T) + self.kernel[0] * 2 + np.sin(kernel).sum(0)
        for scale in self.scales:
            y = y * scale
        y = y + self.offsets["a"] + self.scales[len(self.scales) - 1]
        return self.inner(y) + self.inner.kernel[0]


X3 = np.random.default_rng(3).normal(size=(4, 3))
SCALED_BY_SETUP = ScaledBySetup(4)
SCALED_BY_SETUP_VARIABLES = SCALED_BY_SETUP.init(KEY, X3)
SETUP_PIECES = SetupPieces()
SETUP_PIECES_VARIABLES = SETUP_PIECES.init(KEY, X3)


def scaled_by_setup_apply(variables, x):
    return SCALED_BY_SETUP.apply(variables, x)


def setup_pieces_apply(variables, x):
    return SETUP_PIECES.apply(variables, x)


def setup_params_loss(variables, x):
    scaled = SCALED_BY_SETUP.apply(variables["scaled"], x)
    return np.sum(scaled ** 2) + np.sum(np.tanh(SETUP_PIECES.apply(variables["pieces"], x)))


def test_self_param_in_setup_is_named_as_flax_and_is_the_read_of_params_in_the_written_function():
    params = SCALED_BY_SETUP_VARIABLES["params"]
    # (Flax's layout: setup's parameters by their names, its submodule by its attribute)
    assert s2s.tree_util.tree_map(np.shape, SCALED_BY_SETUP_VARIABLES) == {
        "params": {"kernel": (3, 4), "bias": (4,), "dense": {"kernel": (3, 4), "bias": (4,)}}}
    assert set(SETUP_PIECES_VARIABLES["params"]) == {"kernel", "scale_0", "scale_1", "offset", "inner"}
    dense = X3 @ params["dense"]["kernel"] + params["dense"]["bias"]
    expected = np.tanh(X3 @ params["kernel"] + params["bias"]) + dense * params["kernel"].sum() + params["bias"][0]
    np.testing.assert_allclose(SCALED_BY_SETUP.apply(SCALED_BY_SETUP_VARIABLES, X3), expected, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(scaled_by_setup_apply, backend="python")(SCALED_BY_SETUP_VARIABLES, X3),
                               expected, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(setup_pieces_apply, backend="python")(SETUP_PIECES_VARIABLES, X3),
                               SETUP_PIECES.apply(SETUP_PIECES_VARIABLES, X3), rtol=1e-12)
    written = inspect.getsource(SCALED_BY_SETUP.apply.as_called_function())
    assert ('    return ((np.tanh(((x @ params["kernel"]) + params["bias"])) + (nn_functional.dense(x, '
            'params["dense"]["kernel"], params["dense"]["bias"]) * params["kernel"].sum())) + params["bias"][0])\n'
            in written)
    assert "initializers" not in written and "features" not in written  # (the initialisers are init's alone)
    written = inspect.getsource(SETUP_PIECES.apply.as_called_function())
    for line in ('kernel = params["kernel"]',
                 'y = ((np.dot(x, params["kernel"].T) + (params["kernel"][0] * 2)) + np.sin(kernel).sum(0))',
                 'scale = params["scale_0"]', 'scale = params["scale_1"]',
                 'y = ((y + params["offset"]) + params["scale_1"])',
                 'return (SetupPieces_apply_inner(params["inner"], y) + params["inner"]["kernel"][0])'):
        assert line in written
    assert "initializers" not in written


def test_grad_through_parameters_of_a_setup_matches_central_differences():
    variables = {"scaled": SCALED_BY_SETUP_VARIABLES, "pieces": SETUP_PIECES_VARIABLES}
    value, grads = s2s.value_and_grad(setup_params_loss)(variables, X3)
    np.testing.assert_allclose(value, setup_params_loss(variables, X3), rtol=1e-12)
    assert_trees_close(grads, grad_by_differences(lambda v: setup_params_loss(v, X3), variables), rtol=1e-6, atol=1e-8)


class TwoParamsOfOneNameInSetup(nn.Module):
    def setup(self):
        self.first = self.param("w", nn.initializers.ones, (2,))
        self.second = self.param("w", nn.initializers.zeros, (2,))

    def __call__(self, x):
        return x * self.first


class ParamNamedAsASubmoduleOfSetup(nn.Module):
    def setup(self):
        self.w = self.param("dense", nn.initializers.ones, (2,))
        self.dense = nn.Dense(2)

    def __call__(self, x):
        return self.dense(x) * self.w


class ParamInCallNamedAsInSetup(nn.Module):
    def setup(self):
        self.w = self.param("w", nn.initializers.ones, (2,))

    def __call__(self, x):
        return x * self.w + self.param("w", nn.initializers.ones, (2,))


class Scales(nn.Module):
    scale: object

    def __call__(self, x):
        return x * self.scale


class ParentParamAsAField(nn.Module):
    def setup(self):
        self.w = self.param("w", nn.initializers.ones, (2,))
        self.child = Scales(self.w)

    def __call__(self, x):
        return self.child(x)


class SetupUsesAParamsValue(nn.Module):
    def setup(self):
        self.w = self.param("w", nn.initializers.ones, (2,))
        self.size = self.w.shape[0]

    def __call__(self, x):
        return x * self.size


class MethodReadsAParamOfSetup(nn.Module):
    def setup(self):
        self.w = self.param("w", nn.initializers.ones, (2,))

    def scaled(self, x):
        return x * self.w

    def __call__(self, x):
        return self.scaled(x)


SETUP_REFUSALS = [
    (TwoParamsOfOneNameInSetup, "setup", 'self.param("w", nn.initializers.zeros',
     "the setup of TwoParamsOfOneNameInSetup makes a second parameter named 'w'", True),
    (ParamNamedAsASubmoduleOfSetup, "setup", "self.dense = nn.Dense(2)",
     "the submodule dense of ParamNamedAsASubmoduleOfSetup is named 'dense', as a parameter its setup made", True),
    (ParamInCallNamedAsInSetup, "__call__", "return x * self.w + self.param",
     r"self.param\('w', \.\.\.\) in ParamInCallNamedAsInSetup, whose setup made a parameter of that name", True),
    (ParentParamAsAField, None, "return x * self.scale",
     r"the parameter 'w' of ParentParamAsAField \(the top module\) is read in Scales.__call__", False),
    (SetupUsesAParamsValue, "setup", "self.size = self.w.shape[0]",
     "the value of the parameter 'w' of SetupUsesAParamsValue is used where s2s.nn writes", False),
    (MethodReadsAParamOfSetup, "__call__", "return self.scaled(x)", r"a method of a module \(scaled\) called", False),
]


@pytest.mark.parametrize("module, method, line, refusal, eagerly", SETUP_REFUSALS,
                         ids=[case[0].__name__ for case in SETUP_REFUSALS])
def test_parameters_of_a_setup_that_cannot_be_written_faithfully_are_refused_at_their_line(module, method, line,
                                                                                           refusal, eagerly):
    at = where(inspect.unwrap(getattr(module, method) if method else Scales.__call__), line)
    with pytest.raises(s2s.S2SError, match=rf"{at}\d+: .*{refusal}"):
        module().apply.as_called_function()
    x = np.ones((1, 2))
    if eagerly:  # (Flax refuses the name where init runs, too)
        with pytest.raises(s2s.S2SError, match=rf"{at}\d+: .*{refusal}"):
            module().init(KEY, x)
    else:
        module().apply(module().init(KEY, x), x)
