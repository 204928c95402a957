"""s2s.optimizers against JAX's jax.example_libraries.optimizers, and a training run to convergence."""

import collections

import numpy as np
import pytest

import s2s
from s2s import optimizers
from s2s.tree_util import pytree

# The parameters after four updates, from JAX 0.10.2 with x64 on. Produced by
# /tmp/jaxenv/bin/python on this script (printing `name: run(opt)` for each case below):
#
#   import jax, numpy as np
#   jax.config.update("jax_enable_x64", True)
#   import jax.numpy as jnp
#   from jax.example_libraries import optimizers as o
#   params = {"b": jnp.array([0.5, -1.0]), "w": jnp.array([[1.0, 2.0], [-3.0, 0.25]]), "s": 0.75}
#   def grads_at(step, p):
#       return jax.tree_util.tree_map(lambda x: jnp.sin(3.0 * x + step) + 0.1 * step, p)
#   def run(opt):
#       init, update, get = opt
#       st = init(params)
#       for i in range(4):
#           st = update(i, grads_at(i, get(st)), st)
#       p = get(st)
#       return {k: np.asarray(p[k]).tolist() for k in sorted(p)}
#   for name, opt in [("sgd", o.sgd(0.1)), ("sgd_schedule", o.sgd(lambda i: 0.1 / (1 + i))),
#                     ("momentum", o.momentum(0.1, 0.9)), ("adam", o.adam(0.05)),
#                     ("adam_args", o.adam(lambda i: 0.02 * (i + 1), b1=0.8, b2=0.99, eps=1e-6)),
#                     ("rmsprop", o.rmsprop(0.01)), ("rmsprop_args", o.rmsprop(0.02, gamma=0.5, eps=1e-4))]:
#       print(f"    {name!r}: {run(opt)!r},")
JAX = {
    'sgd': {'b': [0.29984870878089825, -0.9294013407354136], 's': 0.7643400152271276, 'w': [[1.0819552951972304, 1.715050122069691], [-2.952385893128931, -0.08043744885448749]]},
    'sgd_schedule': {'b': [0.3576245614744537, -0.9395309660240312], 's': 0.6953324767342678, 'w': [[1.0384825010334668, 1.9259784212454965], [-2.9266292474779294, 0.09343223448243337]]},
    'momentum': {'b': [-0.26214968917115833, -0.7427099615981252], 's': 0.5597672813172677, 'w': [[1.2114789824556507, 1.531429143634919], [-2.733084892327571, -0.5990274926400105]]},
    'adam': {'b': [0.3379859836622884, -0.8516253019915057], 's': 0.6651367498964432, 'w': [[1.0455342740546612, 1.9475739261903167], [-2.853757205107428, 0.05855573780998779]]},
    'adam_args': {'b': [0.380713516313591, -0.8709225081069955], 's': 0.7380010502325612, 'w': [[1.0951560209101294, 1.881290709261425], [-2.8815593107880844, 0.06947509549161851]]},
    'rmsprop': {'b': [0.464243242572511, -0.935957576002375], 's': 0.7530581680090557, 'w': [[1.0212387815387638, 1.9599068943886235], [-2.9496320672234795, 0.17636648231204222]]},
    'rmsprop_args': {'b': [0.47320619489492277, -0.9439947914419977], 's': 0.762634961348156, 'w': [[1.020216854175993, 1.957438098182211], [-2.955831880703843, 0.18030022335893248]]},
}
# Appended to the script above: mixed dtypes and sequences (float32 leaves stay float32).
#   params = {"a": [jnp.array([0.5, -1.5], dtype=jnp.float32), (jnp.array(2.0),)], "b": jnp.array([1.0, 2.0, 3.0])}
#   (run2: the same loop, returning [a[0], a[0].dtype, float(a[1][0]), b]) with o.adam(0.05)
JAX_ADAM_MIXED = [[0.3379877507686615, -1.6397690773010254], 'float32', 1.9475739261903167,
                  [1.0455342740546612, 1.9475739261903167, 2.999169478840919]]

MAKERS = {
    "sgd": lambda: optimizers.sgd(0.1),
    "sgd_schedule": lambda: optimizers.sgd(lambda i: 0.1 / (1 + i)),
    "momentum": lambda: optimizers.momentum(0.1, 0.9),
    "adam": lambda: optimizers.adam(0.05),
    "adam_args": lambda: optimizers.adam(lambda i: 0.02 * (i + 1), b1=0.8, b2=0.99, eps=1e-6),
    "rmsprop": lambda: optimizers.rmsprop(0.01),
    "rmsprop_args": lambda: optimizers.rmsprop(0.02, gamma=0.5, eps=1e-4),
}


def grads_at(step, params):
    leaves, structure = pytree.flatten(params)
    return pytree.unflatten(structure, [np.sin(3.0 * x + step) + 0.1 * step for x in leaves])


def four_steps(opt, params):
    init, update, get = opt
    state = init(params)
    for i in range(4):
        state = update(i, grads_at(i, get(state)), state)
    return get(state)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_four_steps_match_jax(name):
    params = {"b": np.array([0.5, -1.0]), "w": np.array([[1.0, 2.0], [-3.0, 0.25]]), "s": 0.75}
    got = four_steps(MAKERS[name](), params)
    assert sorted(got) == ["b", "s", "w"] and type(got["s"]) is float and got["w"].shape == (2, 2)
    for key in ("b", "s", "w"):
        np.testing.assert_allclose(got[key], JAX[name][key], rtol=1e-13, atol=1e-15)
    assert params["w"][0, 1] == 2.0  # the caller's arrays are not updated in place


def test_mixed_dtypes_and_sequences_match_jax():
    params = {"a": [np.array([0.5, -1.5], dtype=np.float32), (np.array(2.0),)], "b": np.array([1.0, 2.0, 3.0])}
    got = four_steps(optimizers.adam(0.05), params)
    assert isinstance(got["a"], list) and isinstance(got["a"][1], tuple)
    assert got["a"][0].dtype == np.float32 and got["a"][1][0].shape == ()
    np.testing.assert_allclose(got["a"][0], JAX_ADAM_MIXED[0], rtol=2e-6)
    np.testing.assert_allclose(got["a"][1][0], JAX_ADAM_MIXED[2], rtol=1e-13)
    np.testing.assert_allclose(got["b"], JAX_ADAM_MIXED[3], rtol=1e-13)


def test_a_state_is_not_changed_by_later_updates():
    init, update, get = optimizers.momentum(0.1, 0.9)
    state0 = init((np.ones(3), 2.0))
    state1 = update(0, (np.ones(3), 1.0), state0)
    update(1, (np.ones(3), 1.0), state1)
    np.testing.assert_array_equal(get(state0)[0], np.ones(3))
    np.testing.assert_allclose(get(state1)[0], 0.9 * np.ones(3))
    assert get(state1)[0].flags.writeable  # (Numba would compile again for read-only arrays)


Params = collections.namedtuple("Params", "w b")


def mse(params, x, y):
    pred = x @ params["dense"].w + params["dense"].b
    return np.mean((pred - y) ** 2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_adam_trains_a_regression_to_convergence(backend):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    w_true, b_true = np.array([1.5, -2.0, 0.5]), 0.3
    y = x @ w_true + b_true
    grad = s2s.jit(s2s.grad(mse), backend=backend)
    init, update, get = optimizers.adam(0.05)
    state = init({"dense": Params(np.zeros(3), 0.0)})
    for i in range(600):
        state = update(i, grad(get(state), x, y), state)
    params = get(state)
    assert isinstance(params["dense"], Params)
    np.testing.assert_allclose(params["dense"].w, w_true, atol=1e-4)
    assert params["dense"].b == pytest.approx(b_true, abs=1e-4)
    assert mse(params, x, y) < 1e-8


def test_refusals():
    init, update, get = optimizers.sgd(0.1)
    with pytest.raises(s2s.S2SError, match="float scalars and arrays"):
        init({"n": np.arange(3)})
    state = init({"w": np.zeros(3)})
    with pytest.raises(s2s.S2SError, match="structure and shapes"):
        update(0, {"w": np.zeros(4)}, state)
    with pytest.raises(s2s.S2SError, match="structure and shapes"):
        update(0, {"v": np.zeros(3)}, state)
    with pytest.raises(s2s.S2SError, match="the state init_fun returned"):
        get({"w": np.zeros(3)})
    with pytest.raises(s2s.S2SError, match="step size"):
        optimizers.sgd(np.ones(2))


# ---- an update whose gradient does not have the parameters' structure and shapes ---------------


def test_an_update_refuses_a_vector_gradient_for_a_number_leaf():
    """sgd(1.0) over {"a": 0.5, "b": [1, 2]} with the gradient {"a": [10, 20], "b": [1, 1]} is
    refused: packing a's two numbers into the buffer would move b by [20, 1], to [-19, 1], where
    the shapes differ (as an array leaf of another shape is refused)."""
    init, update, get_params = s2s.optimizers.sgd(1.0)
    state = init({"a": 0.5, "b": np.array([1.0, 2.0])})
    with pytest.raises(s2s.S2SError, match="structure and shapes"):
        update(0, {"a": np.array([10.0, 20.0]), "b": np.array([1.0, 1.0])}, state)
    new = get_params(update(0, {"a": 10.0, "b": np.array([1.0, 1.0])}, state))  # x - g, by hand
    assert new["a"] == -9.5 and np.array_equal(new["b"], [0.0, 1.0])


# ---- s2s.optimizers inside s2s.jit: a located refusal that says what to do -------------------

_init, _opt_update, _get_params = s2s.optimizers.adam(0.1)


def _fit_loss(w, x):
    return np.sum((w * x - 1.0) ** 2)


_fit_grad = s2s.grad(_fit_loss)


def step_with_the_optimizer(i, state, x):
    g = _fit_grad(_get_params(state), x)
    return _opt_update(i, g, state)


def step_with_a_nested_grad(w, x):
    return w - 0.1 * s2s.grad(_fit_loss)(w, x)


def step_with_a_nested_value_and_grad(w, x):
    return w - 0.1 * s2s.value_and_grad(_fit_loss)(w, x)[1]


def test_optimizer_update_inside_jit_is_refused_with_the_way_out():
    state = _init(np.zeros(3))
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(step_with_the_optimizer)(0, state, np.ones(3))
    message = str(info.value)
    assert "test_optimizers.py:" in message and "s2s.jit(s2s.grad(loss))" in message
    # s2s.grad(f)(...) and value_and_grad inside are taken (one reverse sweep where the function around is
    # compiled only; forward mode where it is differentiated, tests/test_third_order.py):
    # w - 0.2 (w x - 1) x
    np.testing.assert_allclose(s2s.jit(step_with_a_nested_grad, backend="python")(np.zeros(3), np.ones(3)), 0.2)
    np.testing.assert_allclose(s2s.jit(step_with_a_nested_value_and_grad)(np.zeros(3), np.ones(3)), 0.2)
    # the way out: the gradient jitted, the update outside (it converges to w = 1 / x)
    grad_jit = s2s.jit(s2s.grad(_fit_loss))
    x = np.array([1.0, 2.0, 4.0])
    for i in range(500):
        state = _opt_update(i, grad_jit(_get_params(state), x), state)
    np.testing.assert_allclose(_get_params(state), 1.0 / x, atol=1e-4)
