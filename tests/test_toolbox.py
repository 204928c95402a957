"""JAX's toolbox around the transforms: dict pytrees under s2s.jit, s2s.debug.print,
block_until_ready, devices, device_put and device_get."""

import pickle

import os

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s.tree_util import pytree

rng = np.random.default_rng(3)


def flax_params():
    """Flax-style parameters: dicts of dicts of arrays, with a list and a tuple inside."""
    return {
        "Dense_1": {"kernel": rng.normal(size=(4,)), "bias": 0.3},
        "Dense_0": {"kernel": rng.normal(size=(3, 4)), "bias": rng.normal(size=4)},
        "extra": [rng.normal(size=4), (0.7,), {"c": 0.2}],  # (a dict in a list: its adjoint once failed)
    }


def mlp(params, x, y):
    h = np.tanh(x @ params["Dense_0"]["kernel"] + params["Dense_0"]["bias"])
    h = h * params["extra"][0] + params["extra"][1][0]
    pred = h @ params["Dense_1"]["kernel"] + params["Dense_1"]["bias"] * params["extra"][2]["c"]
    return np.mean((pred - y) ** 2)


def per_example(params, x, y):
    h = np.tanh(x @ params["Dense_0"]["kernel"] + params["Dense_0"]["bias"])
    h = h * params["extra"][0] + params["extra"][1][0]
    pred = h @ params["Dense_1"]["kernel"] + params["Dense_1"]["bias"] * params["extra"][2]["c"]
    return (pred - y) ** 2


def fd_tree(fun, params, args):
    """Central differences of fun with respect to every leaf of the params pytree."""
    leaves, structure = pytree.flatten(params)
    grads = []
    for k in range(len(leaves)):
        def of_leaf(leaf, k=k):
            moved = list(leaves)
            moved[k] = leaf if np.ndim(leaves[k]) else float(leaf)
            return fun(pytree.unflatten(structure, moved), *args)
        grads.append(central_difference_grad(of_leaf, (leaves[k],), 0))
    return grads


def assert_tree_close(got, want_leaves, like, rtol):
    leaves, structure = pytree.flatten(got)
    assert structure == pytree.flatten(like)[1]  # dicts come back as dicts, lists as lists
    for g, w in zip(leaves, want_leaves):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-9)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_grad_and_value_and_grad_of_nested_dicts(backend):
    params, x, y = flax_params(), rng.normal(size=(6, 3)), rng.normal(size=6)
    fd = fd_tree(mlp, params, (x, y))
    grads = s2s.jit(s2s.grad(mlp), backend=backend)(params, x, y)
    assert isinstance(grads, dict) and isinstance(grads["extra"], list) and isinstance(grads["extra"][1], tuple)
    assert type(grads["Dense_1"]["bias"]) is float
    assert_tree_close(grads, fd, params, rtol=1e-6)
    value, grads2 = s2s.jit(s2s.value_and_grad(mlp), backend=backend)(params, x, y)
    assert value == pytest.approx(mlp(params, x, y), rel=1e-14)
    assert_tree_close(grads2, pytree.leaves(grads), params, rtol=1e-14)


def test_jit_of_a_function_of_dicts_and_its_dict_output():
    params, x, y = flax_params(), rng.normal(size=(6, 3)), rng.normal(size=6)
    assert s2s.jit(mlp)(params, x, y) == pytest.approx(mlp(params, x, y), rel=1e-14)

    def layer(p, x):
        h = x @ p["w"]
        return {"h": h, "norm": np.sum(h**2), "pair": (h, 2.0)}

    p = {"w": rng.normal(size=(3, 2))}
    got = s2s.jit(layer)(p, x)
    assert sorted(got) == ["h", "norm", "pair"] and isinstance(got["pair"], tuple)
    np.testing.assert_allclose(got["h"], x @ p["w"], rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_vmap_of_grad_and_of_a_function_over_dict_parameters(backend):
    params, xs, ys = flax_params(), rng.normal(size=(5, 3)), rng.normal(size=5)
    per = s2s.jit(s2s.vmap(s2s.grad(per_example), in_axes=(None, 0, 0)), backend=backend)(params, xs, ys)
    assert sorted(per) == ["Dense_0", "Dense_1", "extra"] and per["Dense_0"]["kernel"].shape == (5, 3, 4)
    for i in (0, 3):  # each example's gradient, against finite differences
        fd = fd_tree(per_example, params, (xs[i], ys[i]))
        leaves = [leaf[i] for leaf in pytree.leaves(per)]
        for g, w in zip(leaves, fd):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
    values = s2s.jit(s2s.vmap(per_example, in_axes=(None, 0, 0)), backend=backend)(params, xs, ys)
    np.testing.assert_allclose(values, [per_example(params, xs[i], ys[i]) for i in range(5)], rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_vmap_maps_the_leaves_of_a_dict(backend):
    def f(p, x):
        return np.sum(np.sin(p["w"] * x)) + p["b"]

    p = {"w": rng.normal(size=(4, 3)), "b": 0.5}
    xs = rng.normal(size=3)
    got = s2s.jit(s2s.vmap(f, in_axes=({"w": 0, "b": None}, None)), backend=backend)(p, xs)
    np.testing.assert_allclose(got, [f({"w": p["w"][i], "b": 0.5}, xs) for i in range(4)], rtol=1e-14)
    grads = s2s.jit(s2s.vmap(s2s.grad(f), in_axes=({"w": 0, "b": None}, None)), backend=backend)(p, xs)
    np.testing.assert_allclose(grads["w"], np.cos(p["w"] * xs) * xs, rtol=1e-13)
    np.testing.assert_allclose(grads["b"], np.ones(4))


def test_jit_of_jacrev_and_jacfwd_with_dicts():
    def f(p):
        return {"s": np.sin(p["x"]) * p["a"], "c": np.cos(p["x"])}

    p = {"x": np.array([0.2, 0.9]), "a": 1.5}
    for transform in (s2s.jacrev, s2s.jacfwd):
        for jac in (s2s.jit(transform(f))(p), transform(f)(p)):
            np.testing.assert_allclose(jac["s"]["x"], np.diag(np.cos(p["x"]) * 1.5), rtol=1e-14)
            np.testing.assert_allclose(jac["s"]["a"], np.sin(p["x"]), rtol=1e-14)
            np.testing.assert_allclose(jac["c"]["x"], np.diag(-np.sin(p["x"])), rtol=1e-14)


def builds_a_dict(x):
    d = {"a": x, "b": x * 2.0}
    return np.sum(d["a"] ** 2 * d["b"])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_second_order_reads_the_dict_displays_of_generated_code(backend):
    # generated code spells {"a": x, ...} runtime.dict_of(("a", ...), (x, ...)), which
    # forward mode over the reverse code reads again
    x = np.array([0.5, 1.0])
    assert "runtime.dict_of((\"a\", \"b\"), (x, x * 2.0))" in s2s.grad(builds_a_dict).source
    np.testing.assert_allclose(s2s.jit(s2s.hessian(builds_a_dict), backend=backend)(x), np.diag(12 * x), rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_of_dicts(backend):
    def f(p, x):
        return {"y": np.sin(p["w"]) * x, "z": p["b"] * 2.0}

    p, t = {"w": np.array([0.1, 0.4]), "b": 1.5}, {"w": np.array([1.0, -2.0]), "b": 0.5}
    out, out_dot = s2s.jvp(f, (p, 3.0), (t, 0.0), backend=backend)
    assert sorted(out) == sorted(out_dot) == ["y", "z"]
    np.testing.assert_allclose(out_dot["y"], np.cos(p["w"]) * t["w"] * 3.0, rtol=1e-14)
    assert out_dot["z"] == pytest.approx(1.0)


def test_dicts_under_jit_refusals():
    def missing(p):
        return np.sum(p["w"] * p["nope"])

    with pytest.raises(s2s.S2SError, match=r"KeyError 'nope': the dict argument has keys \['b', 'w'\]"):
        s2s.jit(s2s.grad(missing))({"w": np.ones(2), "b": 1.0})

    def by_int(p):
        return np.sum(p[1] * 2.0)

    with pytest.raises(s2s.S2SError, match="string keys"):
        s2s.jit(s2s.grad(by_int))({1: np.ones(2)})
    assert s2s.grad(by_int)({1: np.ones(2)})[1].tolist() == [2.0, 2.0]  # the python backend takes it


def test_dict_classes_survive_pickling():
    # Numba's on-disk cache pickles argument types, and so the class a dict crosses as
    cls = pytree.dict_tuple_class(("", "b", "kernel/0", "é"))
    assert pickle.loads(pickle.dumps(cls)) is cls
    value = pytree.to_numba({"b": 1.0, "kernel/0": np.ones(1), "": 2.0, "é": 3.0})
    assert type(value) is cls and value[0] == 2.0
    assert pytree.from_numba(value) == {"": 2.0, "b": 1.0, "kernel/0": value[2], "é": 3.0}


# ---- s2s.debug.print --------------------------------------------------------------------


def noisy(x, a):
    y = np.sin(x) * a
    s2s.debug.print("y = {y}, a = {}", a, y=y)
    s2s.debug.print("sum {0:.3f} {n!r}", np.sum(y), n="n")
    return np.sum(y)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_debug_print_prints_once_per_call(capsys, backend):
    x = np.array([0.5, 1.0])
    y = np.sin(x) * 2.0
    line = f"y = {y}, a = 2.0\nsum {np.sum(y):.3f} 'n'\n"
    assert s2s.jit(noisy, backend=backend)(x, 2.0) == pytest.approx(np.sum(y))
    assert capsys.readouterr().out == line
    # in derivative code: the forward sweep prints, the reverse sweep does not
    np.testing.assert_allclose(s2s.jit(s2s.grad(noisy), backend=backend)(x, 2.0), 2.0 * np.cos(x))
    assert capsys.readouterr().out == line
    s2s.jvp(noisy, (x, 2.0), (np.ones(2), 0.0), backend=backend)
    assert capsys.readouterr().out == line
    # once per example in a vmap (s2s runs its first example once more to learn the output's
    # structure: that run is silent). Under s2s.jit the examples run on all cores at once, so
    # whole lines of different examples interleave in the order the threads reach them.
    xs = np.stack([x, x, x])
    s2s.jit(s2s.vmap(noisy, in_axes=(0, None)), backend=backend)(xs, 2.0)
    printed = capsys.readouterr().out
    assert sorted(printed.splitlines()) == sorted((line * 3).splitlines())
    if backend == "python":
        assert printed == line * 3


def test_debug_print_outside_transforms_and_of_dicts_under_jit(capsys):
    s2s.debug.print("{} and {b}", 1.5, b=[2])
    assert capsys.readouterr().out == "1.5 and [2]\n"

    def f(p):
        s2s.debug.print("p = {p}", p=p)
        return p["w"] ** 2

    assert s2s.jit(s2s.grad(f))({"w": 3.0}) == {"w": 6.0}
    assert capsys.readouterr().out == "p = {'w': 3.0}\n"


def test_debug_print_format_strings_are_numbered_for_numba():
    from s2s.runtime import positional_format

    fmt = "a{{b}} {x.shape} {0[1]!r:>5} {} {y}"
    numbered = positional_format(fmt, 2, ["x", "y"])
    assert numbered == "a{{b}} {2.shape} {0[1]!r:>5} {0} {3}"
    args, x, y = ([1, 2], 5), np.ones(3), "why"
    assert numbered.format(*args, x, y) == "a{b} (3,)     2 [1, 2] why"
    for bad, error in (("{1}", IndexError), ("{z}", KeyError)):
        with pytest.raises(error):
            positional_format(bad, 1, ["x"])


def test_debug_print_refusals():
    def unknown_field(x):
        s2s.debug.print("{z}", x=x)
        return x

    def not_constant(x, fmt):
        s2s.debug.print(fmt, x)
        return x

    with pytest.raises(s2s.S2SError, match=r"test_toolbox.py:\d+:\d+: s2s.debug.print: the format string"):
        s2s.grad(unknown_field)(1.0)
    with pytest.raises(s2s.S2SError, match="constant format string"):
        s2s.grad(not_constant)(1.0, "{}")


# ---- devices ----------------------------------------------------------------------------


def test_devices_and_data_placement_are_identities_on_the_cpu(monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "3")
    assert repr(s2s.devices()) == "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2)]"
    device = s2s.devices()[2]
    assert device.platform == "cpu" and s2s.devices("cpu") == s2s.devices()
    monkeypatch.delenv("S2S_CPU_DEVICES")
    assert len(s2s.devices()) == os.cpu_count()  # one device per core by default
    for wrong in ("0", "two"):
        monkeypatch.setenv("S2S_CPU_DEVICES", wrong)
        with pytest.raises(s2s.S2SError, match="not a positive number of CPU devices"):
            s2s.devices()
    monkeypatch.setenv("S2S_CPU_DEVICES", "3")
    with pytest.raises(s2s.S2SError, match="no 'tpu' devices"):
        s2s.devices("tpu")  # ("cuda" and "gpu": the GPUs, tests/test_cuda.py)
    tree = {"w": np.ones(3), "b": [1.0, (np.zeros(2),)]}
    assert s2s.device_put(tree) is tree and s2s.device_put(tree, device) is tree
    assert s2s.device_get(tree) is tree and s2s.block_until_ready(tree) is tree
    with pytest.raises(s2s.S2SError, match="unknown device"):
        s2s.device_put(tree, "gpu:0")
    out = s2s.block_until_ready(s2s.jit(s2s.grad(mlp))(flax_params(), np.ones((2, 3)), np.ones(2)))
    assert sorted(out) == ["Dense_0", "Dense_1", "extra"]


def test_the_jax_tutorial_example_trains(capsys):
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "jax_tutorial.py")
    spec = importlib.util.spec_from_file_location("jax_tutorial", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    final = module.main(steps=400)
    assert final < 5e-3  # from 0.11 at the start
    out = capsys.readouterr().out
    assert "(inside the compiled loss) mse =" in out and "per-example gradient norms" in out
