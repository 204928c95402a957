"""s2s.pmap on CPU devices and the collectives of s2s.lax: JAX's semantics, against JAX's
numbers, NumPy, finite differences and closed forms."""

import collections
import os
import threading

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s import lax


@pytest.fixture(autouse=True)
def four_devices(monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "4")


def call_with_deadline(fn, *args, seconds=120):
    """fn(*args) on a thread: a deadlock fails the test instead of hanging the suite."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "pmap deadlocked"
    if "error" in box:
        raise box["error"]
    return box["value"]


# ---- collectives, against JAX ------------------------------------------------------------


def all_collectives(v):
    return (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"), lax.all_gather(v, "i"),
            lax.all_gather(v, "i", axis=1), lax.all_gather(v, "i", tiled=True), lax.axis_index("i"), lax.psum(1, "i"))


def test_collectives_match_jax():
    x = np.arange(12.0).reshape(4, 3) ** 1.5
    psum, pmean, pmax, pmin, gather, gather1, tiled, index, size = s2s.pmap(all_collectives, "i")(x)
    # JAX 0.10.2, /tmp/jaxenv/bin/python with XLA_FLAGS=--xla_force_host_platform_device_count=4 and
    # jax_enable_x64: jax.pmap(all_collectives with jax.lax, 'i')(x), row 0 of each (every row is equal)
    jax_psum = [46.893090879405705, 59.14303577913593, 73.11905670412406]
    jax_pmean = [11.723272719851426, 14.785758944783982, 18.279764176031016]
    jax_pmax = [27.0, 31.622776601683793, 36.4828726939094]
    jax_pmin = [0.0, 1.0, 2.8284271247461903]
    for got, want in ((psum, jax_psum), (pmean, jax_pmean), (pmax, jax_pmax), (pmin, jax_pmin)):
        assert got.shape == (4, 3) and all(row.tolist() == want for row in got)
    assert gather.shape == (4, 4, 3) and all(np.array_equal(g, x) for g in gather)
    assert gather1.shape == (4, 3, 4) and all(np.array_equal(g, x.T) for g in gather1)
    assert tiled.shape == (4, 12) and all(np.array_equal(t, x.reshape(-1)) for t in tiled)
    assert index.dtype == np.int32 and index.tolist() == [0, 1, 2, 3]  # JAX: int32 [0, 1, 2, 3]
    assert size.tolist() == [4, 4, 4, 4]  # psum(1, 'i') is the axis size


def test_reductions_are_in_shard_order_and_the_same_bits_everywhere():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 1000)) * 10.0 ** rng.integers(-8, 8, (4, 1000))
    sequential = ((x[0] + x[1]) + x[2]) + x[3]
    mapped = s2s.pmap(lambda v: (lax.psum(v, "i"), lax.pmean({"a": v, "b": (v, 2.0)}, "i")), "i")
    for _ in range(5):
        total, mean = mapped(x)
        assert all(np.array_equal(row, sequential) for row in total)
        assert all(np.array_equal(row, sequential / 4) for row in mean["a"])
        assert np.array_equal(mean["b"][0], mean["a"]) and mean["b"][1].tolist() == [2.0] * 4


def test_collective_results_are_private_to_each_shard():
    def f(v):
        total = lax.psum(v, "i")
        total[0] += lax.axis_index("i")  # a write to this shard's result only
        return total

    out = s2s.pmap(f, "i")(np.ones((4, 2)))
    assert out.tolist() == [[4.0, 4.0], [5.0, 4.0], [6.0, 4.0], [7.0, 4.0]]


def test_pmean_of_integers_is_a_float_as_numpy():
    out = s2s.pmap(lambda v: lax.pmean(v, "i"), "i")(np.array([1, 2], np.int32))
    assert out.tolist() == [1.5, 1.5]


def test_collectives_outside_their_pmap_are_unbound_axis_names():
    with pytest.raises(s2s.S2SError, match="unbound axis name 'i' .*outside any s2s.pmap"):
        lax.psum(1.0, "i")
    with pytest.raises(s2s.S2SError, match=r"unbound axis name 'j' \(the enclosing pmaps bind \['i'\]\)"):
        s2s.pmap(lambda v: lax.pmax(v, "j"), "i")(np.ones(2))
    with pytest.raises(s2s.S2SError, match="axis_index_groups is not supported"):
        s2s.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]), "i")(np.ones(2))


def test_shards_that_call_different_collectives_are_an_error():
    def f(v):
        return lax.psum(v, "i") if v[0] > 0 else lax.pmax(v, "i")

    with pytest.raises(s2s.S2SError, match="called different collectives: position 0 psum.*position 1 pmax"):
        call_with_deadline(s2s.pmap(f, "i"), np.array([[1.0], [-1.0]]))
    with pytest.raises(s2s.S2SError, match="different collectives"):  # other shapes
        call_with_deadline(s2s.pmap(lambda v: lax.psum(v[: int(v[0])], "i"), "i"), np.array([[1.0, 0], [2.0, 0]]))


class Failure(Exception):
    pass


def test_a_failing_shard_does_not_deadlock_the_others_and_its_error_reaches_the_caller():
    def f(v):
        if lax.axis_index("i") == 2:
            raise Failure("shard 2 failed")
        return lax.psum(v, "i") + lax.psum(v, "i")  # the others wait for shard 2 here

    with pytest.raises(Failure, match="shard 2 failed"):
        call_with_deadline(s2s.pmap(f, "i"), np.ones(4))
    skips = s2s.pmap(lambda v: lax.psum(v, "i") if lax.axis_index("i") else v, "i")  # shard 0 never calls psum
    with pytest.raises(s2s.S2SError, match="position 0 of the pmap axes .'i',. returned without calling s2s.lax.psum"):
        call_with_deadline(skips, np.ones(3))

    def stops_early(v):
        total = lax.psum(v, "i")
        return total if lax.axis_index("i") == 1 else lax.pmax(total, "i")

    with pytest.raises(s2s.S2SError, match="position 1 .* returned without calling s2s.lax.pmax"):
        call_with_deadline(s2s.pmap(stops_early, "i"), np.ones(4))
    # after a failure the next call starts afresh
    assert s2s.pmap(lambda v: lax.psum(v, "i"), "i")(np.ones(4)).tolist() == [4.0] * 4


# ---- the frontend fence --------------------------------------------------------------------


def sum_over_shards(x):
    return lax.psum(x * 2.0, "i")


def calls_sum_over_shards(x):
    return sum_over_shards(x) + 1.0


def test_transforms_refuse_collectives_at_the_users_line_with_the_way_out():
    here = os.path.basename(__file__)
    line = sum_over_shards.__code__.co_firstlineno + 1
    # vmap runs the function on one example first, where the collective finds no pmap axis (JAX:
    # NameError 'unbound axis name'); grad and jit refuse it when they read the function
    for transform, args in ((s2s.grad, (1.0,)), (s2s.jit, (1.0,)), (s2s.vmap, (np.ones(2),))):
        with pytest.raises(s2s.S2SError) as info:
            transform(sum_over_shards)(*args)
        text = str(info.value)
        assert f"{here}:{line}:12: s2s.lax.psum" in text and "return lax.psum(x * 2.0" in text, text
        assert "g = s2s.lax.pmean(s2s.grad(loss)(p, shard), 'i')" in text
    with pytest.raises(s2s.S2SError, match="psum combines the shards of s2s.pmap"):
        s2s.jvp(calls_sum_over_shards, (1.0,), (1.0,))
    # pmap of such a function runs it as Python on each shard, where the collective works
    pmapped = s2s.pmap(calls_sum_over_shards, "i")
    assert pmapped(np.array([1.0, 2.0])).tolist() == [7.0, 7.0]
    assert pmapped.mode.startswith("python: s2s.jit cannot compile it (s2s.lax.psum")


# ---- arguments, devices and outputs --------------------------------------------------------


def test_a_mapped_axis_longer_than_the_devices_says_how_to_reshape():
    with pytest.raises(s2s.S2SError) as info:
        s2s.pmap(np.sin)(np.ones((8, 3)))
    text = str(info.value)
    assert "size 8, but there are only 4 devices" in text and "S2S_CPU_DEVICES" in text
    assert "x = x.reshape(4, 2, *x.shape[1:])" in text and "s2s.pmap(s2s.vmap(f))(x)" in text
    with pytest.raises(s2s.S2SError, match=r"(?s)pad the axis to 8 first.*y.reshape\(8, \*y.shape\[2:\]\)\[:7\]"):
        s2s.pmap(np.sin)(np.ones((7, 3)))
    # what the hint says works
    x = np.arange(24.0).reshape(8, 3)
    y = s2s.pmap(s2s.vmap(np.sin))(x.reshape(4, 2, *x.shape[1:]))
    assert np.array_equal(y.reshape(8, *y.shape[2:]), np.sin(x))


def test_argument_errors():
    with pytest.raises(s2s.S2SError, match=r"different sizes \(argument 0: 2, argument 1: 3\)"):
        s2s.pmap(lambda a, b: a + b)(np.ones(2), np.ones(3))
    with pytest.raises(s2s.S2SError, match="at least one argument with a mapped axis"):
        s2s.pmap(lambda a: a, in_axes=None)(np.ones(2))
    with pytest.raises(s2s.S2SError, match="over axis 0, but it has 0 dimensions"):
        s2s.pmap(lambda a: a)(1.0)
    with pytest.raises(s2s.S2SError, match="in_axes has 1 entries for 2 positional arguments"):
        s2s.pmap(lambda a, b: a, in_axes=(0,))(np.ones(2), np.ones(2))
    with pytest.raises(s2s.S2SError, match="in_axes is a dict"):
        s2s.pmap(lambda a: a, in_axes={"w": 0})
    with pytest.raises(s2s.S2SError, match="given 2 devices"):
        s2s.pmap(np.sin, devices=s2s.devices()[:2])(np.ones(3))
    with pytest.raises(s2s.S2SError, match="not hashable"):
        s2s.pmap(lambda a, b: a, static_broadcasted_argnums=1)(np.ones(2), np.ones(2))
    with pytest.raises(s2s.S2SError, match="out_axes=None .* the shards returned different values"):
        s2s.pmap(lambda a: a, out_axes=None)(np.arange(2.0))
    with pytest.raises(s2s.S2SError, match="has no devices for pmap"):
        s2s.pmap(np.sin, backend="tpu")  # (backend="cuda": tests/test_cuda.py)


def test_in_axes_pytrees_out_axes_and_keywords():
    rng = np.random.default_rng(2)
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = rng.standard_normal((5, 3, 4))  # mapped along axis 2 (4 shards)

    def predict(params, x, scale=1.0):
        return {"y": (x @ params["w"] + params["b"]) * scale, "norm": np.sum(params["w"] ** 2)}

    mapped = s2s.pmap(predict, in_axes=({"w": None, "b": None}, 2), out_axes={"y": 1, "norm": None})
    out = mapped(params, xs)
    want = np.stack([xs[:, :, k] @ params["w"] + params["b"] for k in range(4)], axis=1)
    assert out["y"].shape == (5, 4, 2) and np.allclose(out["y"], want, rtol=1e-14)
    assert out["norm"] == pytest.approx(np.sum(params["w"] ** 2), rel=1e-14)
    # a keyword argument is mapped over its leading axis, as in JAX
    scaled = s2s.pmap(predict, in_axes=(None, 2), out_axes=({"y": 0, "norm": 0}))(params, xs, scale=np.arange(4.0))
    assert np.allclose(scaled["y"], np.arange(4.0)[:, None, None] * np.moveaxis(want, 1, 0))
    # a tuple argument with a prefix spec; a namedtuple output keeps its type
    Pair = collections.namedtuple("Pair", "total first")
    tupled = s2s.pmap(lambda t, c: Pair(t[0] * c + t[1], t[0][0]), in_axes=((0, None), None))
    got = tupled((np.arange(6.0).reshape(3, 2), np.ones(2)), 2.0)
    assert isinstance(got, Pair) and got.total.tolist() == [[1.0, 3.0], [5.0, 7.0], [9.0, 11.0]]
    assert got.first.tolist() == [0.0, 2.0, 4.0]


def test_shards_get_private_copies_of_their_arguments():
    def scale_in_place(x, w):
        x *= 2.0
        w[0] = 7.0
        return x + w

    x, w = np.ones((2, 3)), np.zeros(3)
    out = s2s.pmap(scale_in_place, in_axes=(0, None), backend="python")(x, w)
    assert out.tolist() == [[9.0, 2.0, 2.0]] * 2
    assert x.tolist() == [[1.0] * 3] * 2 and w.tolist() == [0.0] * 3


def steps_of(x, n):
    total = 0.0
    for k in range(n):
        total += np.sin(x * k)
    return total


def test_static_broadcasted_argnums():
    mapped = s2s.pmap(steps_of, static_broadcasted_argnums=(1,))
    x = np.array([0.1, 0.2, 0.3])
    for n in (3, 5):
        assert np.allclose(mapped(x, n), [sum(np.sin(v * k) for k in range(n)) for v in x], rtol=1e-14)
    assert mapped.mode == "compiled: s2s.jit(fun)"
    # the shards run at once because the compiled code releases the GIL
    assert mapped._runner._compiled.dispatcher.targetoptions["nogil"] is True


# ---- composition with the other transforms --------------------------------------------------


def loss(w, x):
    return np.mean(np.tanh(x @ w) ** 2) + 0.1 * np.sum(w ** 2)


def test_pmap_of_grad_matches_finite_differences():
    rng = np.random.default_rng(3)
    w, xs = rng.standard_normal(3), rng.standard_normal((4, 6, 3))
    mapped = s2s.pmap(s2s.grad(loss), in_axes=(None, 0))
    grads = mapped(w, xs)
    assert mapped.mode == "compiled: the transform on the cpu backend"
    for k in range(4):
        assert np.allclose(grads[k], central_difference_grad(loss, (w, xs[k]), 0), rtol=1e-7, atol=1e-9)
    assert np.array_equal(s2s.pmap(s2s.grad(loss), in_axes=(None, 0), backend="python")(w, xs), grads) or \
        np.allclose(s2s.pmap(s2s.grad(loss), in_axes=(None, 0), backend="python")(w, xs), grads, rtol=1e-14)


def example_loss(w, x, y):
    return (np.dot(w, x) - y) ** 2


def test_pmap_of_jit_vmap_grad_gives_per_example_gradients():
    rng = np.random.default_rng(4)
    w, xs, ys = rng.standard_normal(3), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5))
    per_example = s2s.jit(s2s.vmap(s2s.grad(example_loss), in_axes=(None, 0, 0)))
    out = s2s.pmap(per_example, in_axes=(None, 0, 0), devices=s2s.devices()[:2])(w, xs, ys)
    closed = 2.0 * (xs @ w - ys)[..., None] * xs  # d/dw (w.x - y)^2
    assert out.shape == (2, 5, 3) and np.allclose(out, closed, rtol=1e-13)
    plain = s2s.pmap(s2s.vmap(s2s.grad(example_loss), in_axes=(None, 0, 0)), in_axes=(None, 0, 0))(w, xs, ys)
    assert np.allclose(plain, closed, rtol=1e-13)


def twice_sine(x):
    return 2.0 * np.sin(x)


double_sine = s2s.jit(twice_sine)


def shift(x):
    return x + 1.0


shift_jit = s2s.jit(shift)


def calls_jitted(x):
    return shift_jit(x) * lax.axis_index("i")


def test_pmap_of_a_function_that_calls_jitted_functions():
    out = s2s.pmap(calls_jitted, "i")(np.arange(8.0).reshape(4, 2))
    assert out.tolist() == [[0.0, 0.0], [3.0, 4.0], [10.0, 12.0], [21.0, 24.0]]
    assert s2s.pmap(double_sine)(np.ones((2, 2))).tolist() == [[2.0 * np.sin(1.0)] * 2] * 2


def test_nested_pmaps_and_tuples_of_axis_names():
    x = np.arange(6.0).reshape(2, 3) ** 2

    def inner(v):
        return (lax.psum(v, ("i", "j")), lax.psum(v, "i"), lax.psum(v, "j"), lax.axis_index(("i", "j")),
                lax.all_gather(v, ("i", "j")), lax.pmax(v, ("j", "i")))

    total, over_i, over_j, index, gathered, biggest = s2s.pmap(s2s.pmap(inner, "j"), "i")(x)
    assert np.array_equal(total, np.full((2, 3), np.sum(x)))
    assert np.array_equal(over_i, np.broadcast_to(x[0] + x[1], (2, 3)))
    assert np.array_equal(over_j, np.broadcast_to(np.sum(x, axis=1, keepdims=True), (2, 3)))
    assert index.tolist() == [[0, 1, 2], [3, 4, 5]]  # row-major over the axes in the order named
    assert gathered.shape == (2, 3, 6) and all(np.array_equal(g, x.reshape(-1)) for g in gathered.reshape(6, 6))
    assert np.array_equal(biggest, np.full((2, 3), 25.0))
    with pytest.raises(s2s.S2SError, match="'i' is already bound by an enclosing pmap"):
        s2s.pmap(s2s.pmap(lambda v: v, "i"), "i")(np.ones((2, 2)))


# ---- threads ---------------------------------------------------------------------------------


def fresh_loss(w, x):
    return np.sum(np.cos(x * w) ** 3)  # (used by this test only: a cold cache compiles it)


def test_concurrent_first_calls_generate_import_and_compile_once(monkeypatch, tmp_path):
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path))
    import importlib.util

    from s2s import driver

    generated, imported = collections.Counter(), collections.Counter()
    generate, locate = driver.generate, importlib.util.spec_from_file_location

    def counting_generate(fun, transform, options):
        generated[(fun.__name__, transform, repr(options))] += 1
        return generate(fun, transform, options)

    def counting_locate(name, path, *args, **kwargs):
        if str(path).startswith(str(tmp_path)):
            imported[str(path)] += 1
        return locate(name, path, *args, **kwargs)

    monkeypatch.setattr(driver, "generate", counting_generate)
    monkeypatch.setattr(importlib.util, "spec_from_file_location", counting_locate)
    gradient = s2s.jit(s2s.grad(fresh_loss))
    w, xs = np.linspace(0.1, 0.8, 8), np.linspace(-1.0, 1.0, 8 * 5).reshape(8, 5)
    start, results = threading.Barrier(8), [None] * 8

    def first_call(k):
        start.wait()
        results[k] = gradient(w[k], xs[k])

    threads = [threading.Thread(target=first_call, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert generated and all(count == 1 for count in generated.values()), generated
    assert imported and all(count == 1 for count in imported.values()), imported
    for k in range(8):
        assert np.isclose(results[k], -3 * np.sum(np.cos(xs[k] * w[k]) ** 2 * np.sin(xs[k] * w[k]) * xs[k]),
                          rtol=1e-13)


def test_parallel_drivers_under_the_workqueue_layer_take_turns_instead_of_aborting_the_process():
    import subprocess
    import sys

    # Numba's workqueue layer terminates the process when two threads launch parallel code at
    # once; where it is the layer (no tbb, no omp), s2s runs the parallel vmap drivers in turn.
    script = (
        "import numpy as np, s2s, numba\n"
        "from test_pmap import example_loss\n"
        "rng = np.random.default_rng(4)\n"
        "w, xs, ys = rng.standard_normal(3), rng.standard_normal((2, 300, 3)), rng.standard_normal((2, 300))\n"
        "f = s2s.pmap(s2s.jit(s2s.vmap(s2s.grad(example_loss), in_axes=(None, 0, 0))), in_axes=(None, 0, 0))\n"
        "for _ in range(10):\n"
        "    out = f(w, xs, ys)\n"
        "assert np.allclose(out, 2.0 * (xs @ w - ys)[..., None] * xs, rtol=1e-13)\n"
        "print(numba.threading_layer())\n")
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "S2S_CPU_DEVICES": "2",
           "PYTHONPATH": os.path.dirname(__file__) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "workqueue", result.stdout + result.stderr
