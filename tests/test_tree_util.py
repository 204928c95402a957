"""s2s.tree_util and s2s.tree against JAX's flattening order and structure (stored below)."""

import collections

import numpy as np
import pytest

import s2s
from s2s import tree, tree_util

Layer = collections.namedtuple("Layer", "w b")
TREE = {"layer2": Layer(1.0, [2.0, None]), "layer1": (3.0,), "bias": np.arange(2.0)}


def test_leaves_come_in_jax_order():
    # /tmp/jaxenv/bin/python -c "import jax, collections, numpy as np; L=collections.namedtuple('Layer','w b');
    #   print(jax.tree_util.tree_leaves({'layer2': L(1.0, [2.0, None]), 'layer1': (3.0,), 'bias': 7}))"
    # -> [7, 3.0, 1.0, 2.0]   (dict keys sorted, None an empty subtree)
    leaves = tree_util.tree_leaves({**TREE, "bias": 7})
    assert leaves == [7, 3.0, 1.0, 2.0]
    assert tree.leaves(TREE)[1:] == [3.0, 1.0, 2.0]


def test_flatten_unflatten_round_trip_keeps_containers():
    leaves, treedef = tree_util.tree_flatten(TREE)
    assert treedef.num_leaves == 4
    rebuilt = tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt["layer2"], Layer) and isinstance(rebuilt["layer2"].b, list)
    assert rebuilt["layer2"].b[1] is None
    np.testing.assert_array_equal(rebuilt["bias"], TREE["bias"])
    assert tree_util.tree_structure(TREE) == treedef
    assert "Layer(*, [*, None])" in repr(treedef)


def test_map_over_several_trees_and_reduce():
    doubled = tree.map(lambda a, b: a + b, TREE, TREE)
    assert doubled["layer2"] == Layer(2.0, [4.0, None])
    np.testing.assert_array_equal(doubled["bias"], [0.0, 2.0])
    total = tree.reduce(lambda a, b: a + np.sum(b), TREE, 0.0)
    assert total == pytest.approx(1.0 + 2.0 + 3.0 + 1.0)
    with pytest.raises(s2s.S2SError, match="differ in structure"):
        tree.map(lambda a, b: a + b, TREE, {"layer1": (1.0,)})


def test_an_sgd_step_as_the_jax_tutorial_writes_it():
    import s2s as jax

    def loss(params, x, y):
        return np.mean((x @ params["w"] + params["b"] - y) ** 2)

    rng = np.random.default_rng(0)
    x, w_true = rng.standard_normal((32, 3)), np.array([1.0, -2.0, 0.5])
    y = x @ w_true + 0.3
    params = {"w": np.zeros(3), "b": 0.0}
    for _ in range(300):
        grads = jax.grad(loss)(params, x, y)
        params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    np.testing.assert_allclose(params["w"], w_true, atol=1e-6)
    assert params["b"] == pytest.approx(0.3, abs=1e-6)


def test_ordered_and_default_dicts_keep_their_type_and_order_as_in_jax():
    # JAX flattens an OrderedDict in insertion order and a defaultdict in sorted order, and
    # rebuilds each as its own type; the two orders, and dict vs OrderedDict, are different
    # structures.
    ordered = collections.OrderedDict([("z", 1.0), ("a", (2.0, 3.0))])
    assert tree_util.tree_leaves(ordered) == [1.0, 2.0, 3.0]
    scaled = tree.map(lambda v: 10.0 * v, ordered)
    assert type(scaled) is collections.OrderedDict and list(scaled) == ["z", "a"]
    assert scaled["a"] == (20.0, 30.0)
    assert tree_util.tree_structure(ordered) != tree_util.tree_structure(dict(ordered))
    assert "OrderedDict({'z': *, 'a': (*, *)})" in repr(tree_util.tree_structure(ordered))

    counts = collections.defaultdict(list, {"b": 1.0, "a": 2.0})
    assert tree_util.tree_leaves(counts) == [2.0, 1.0]
    rebuilt = tree.map(lambda v: v + 1.0, counts)
    assert type(rebuilt) is collections.defaultdict and rebuilt.default_factory is list
    assert dict(rebuilt) == {"a": 3.0, "b": 2.0}


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_the_gradient_of_ordered_dict_parameters_is_an_ordered_dict(backend):
    def loss(params):
        return np.sum(params["w"] ** 2) + 3.0 * params["b"]

    params = collections.OrderedDict([("w", np.array([1.0, -2.0])), ("b", 0.5)])
    grads = s2s.jit(s2s.grad(loss), backend=backend)(params)
    assert type(grads) is collections.OrderedDict and list(grads) == ["w", "b"]
    np.testing.assert_allclose(grads["w"], [2.0, -4.0])  # d/dw sum(w^2) = 2w
    assert grads["b"] == pytest.approx(3.0)
