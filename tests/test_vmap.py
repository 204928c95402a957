"""s2s.vmap: every case against a Python loop over the examples, on both backends."""

import collections
import math

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

BACKENDS = ["python", "cpu"]
rng = np.random.default_rng(7)


def batched(fun, backend, **axes):
    return s2s.jit(s2s.vmap(fun, **axes), backend=backend)


def logistic_loss(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def two_outputs(x, y):
    return np.sin(x) * y, x + 1.0


def euler_decay(rate, x0, steps):
    """A loop with in-place writes per example."""
    path = np.zeros(steps + 1)
    path[0] = x0
    for k in range(steps):
        path[k + 1] = path[k] - 0.01 * rate * path[k]
    return path


def weighted(params, x):
    w, b = params
    return np.tanh(x @ w + b)


def outer_self(x):
    return np.outer(x, x)


def sum_weighted(params, x):
    return np.sum(weighted(params, x))


def sum_squares(x):
    return np.sum(x * x)


def scaled_pair(w, x):
    return w * 2.0, x * w


def identity(x):
    return x


def field_product(p):
    return p.x * p.y


def loop_over(fun, args, in_axes):
    """The reference: fun called on each example, outputs stacked on axis 0."""
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outputs = [fun(*(a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)))
               for i in range(n)]
    if isinstance(outputs[0], tuple):
        return tuple(np.stack(parts) for parts in zip(*outputs))
    return np.stack(outputs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_per_example_gradients_match_the_formula_and_the_loop(backend):
    w, xs, ys = rng.normal(size=3), rng.normal(size=(16, 3)), (rng.random(16) > 0.5).astype(float)
    got = batched(s2s.grad(logistic_loss), backend, in_axes=(None, 0, 0))(w, xs, ys)
    p = 1.0 / (1.0 + np.exp(-xs @ w))
    np.testing.assert_allclose(got, (p - ys)[:, None] * xs, rtol=1e-12)
    np.testing.assert_allclose(got, loop_over(s2s.grad(logistic_loss), (w, xs, ys), (None, 0, 0)), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_axes_negative_and_out_axes(backend):
    xs, ys = rng.normal(size=(5, 3)), rng.normal(size=(3, 5))
    a, b = batched(two_outputs, backend, in_axes=(0, -1), out_axes=(1, 0))(xs, ys)
    ref_a, ref_b = loop_over(two_outputs, (xs, ys), (0, 1))
    np.testing.assert_allclose(a, ref_a.T)
    np.testing.assert_allclose(b, ref_b)
    c = batched(outer_self, backend, out_axes=-1)(xs)
    np.testing.assert_allclose(c, np.moveaxis(loop_over(outer_self, (xs,), (0,)), 0, -1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_loops_with_in_place_writes_and_scalar_arguments(backend):
    rates = rng.random(6)
    got = batched(euler_decay, backend, in_axes=(0, None, None))(rates, 1.0, 50)
    np.testing.assert_allclose(got, loop_over(euler_decay, (rates, 1.0, 50), (0, None, None)))
    np.testing.assert_allclose(got[:, -1], (1 - 0.01 * rates) ** 50)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pytree_prefix_in_axes_and_tuple_outputs(backend):
    ws, b, xs = rng.normal(size=(4, 3, 2)), rng.normal(size=2), rng.normal(size=(4, 3))
    got = batched(weighted, backend, in_axes=((0, None), 0))((ws, b), xs)
    ref = np.stack([weighted((ws[i], b), xs[i]) for i in range(4)])
    np.testing.assert_allclose(got, ref)
    # the gradient has the structure of params: a tuple of per-example stacks
    gw, gb = batched(s2s.grad(sum_weighted), backend, in_axes=((0, None), 0))((ws, b), xs)
    t = 1.0 - np.tanh(np.einsum("ni,nij->nj", xs, ws) + b) ** 2
    np.testing.assert_allclose(gb, t, rtol=1e-12)
    np.testing.assert_allclose(gw, xs[:, :, None] * t[:, None, :], rtol=1e-12)


def test_dict_arguments_on_the_python_backend():
    params = {"w": rng.normal(size=(3, 3)), "b": rng.normal(size=3)}
    xs = rng.normal(size=(5, 3))

    def f(p, x):
        return np.sum(np.tanh(p["w"] @ x + p["b"]))

    got = s2s.vmap(s2s.grad(f), in_axes=(None, 0))(params, xs)
    ref = [s2s.grad(f)(params, x) for x in xs]
    assert sorted(got) == ["b", "w"]
    np.testing.assert_allclose(got["w"], np.stack([r["w"] for r in ref]))
    np.testing.assert_allclose(got["b"], np.stack([r["b"] for r in ref]))
    # ... and by finite differences for one example
    h, e = 1e-6, np.eye(3)[0]
    fd = (f({"w": params["w"], "b": params["b"] + h * e}, xs[2]) - f({"w": params["w"], "b": params["b"] - h * e}, xs[2])) / (2 * h)
    np.testing.assert_allclose(got["b"][2, 0], fd, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_vmap_is_a_table(backend):
    W, xs, ys = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), (rng.random(6) > 0.5).astype(float)
    inner = s2s.vmap(logistic_loss, in_axes=(None, 0, 0))
    table = batched(inner, backend, in_axes=(0, None, None))(W, xs, ys)
    ref = np.array([[logistic_loss(W[a], xs[i], ys[i]) for i in range(6)] for a in range(4)])
    np.testing.assert_allclose(table, ref, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_and_grad_with_aux(backend):
    def f(x):
        return np.sum(x**3), np.max(x)

    xs = rng.normal(size=(5, 4))
    (value, aux), g = batched(s2s.value_and_grad(f, has_aux=True), backend)(xs)
    np.testing.assert_allclose(value, np.sum(xs**3, axis=1))
    np.testing.assert_allclose(aux, np.max(xs, axis=1))
    np.testing.assert_allclose(g, 3 * xs**2, rtol=1e-12)


def test_float32_stays_float32():
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    g = s2s.vmap(s2s.grad(sum_squares))(xs)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * xs, rtol=1e-6)


def test_out_axes_none_needs_an_unbatched_output():
    xs = rng.normal(size=(4, 3))
    same, mapped = s2s.vmap(scaled_pair, in_axes=(None, 0), out_axes=(None, 0))(1.5, xs)
    assert float(same) == 3.0
    np.testing.assert_allclose(mapped, xs * 1.5)
    with pytest.raises(s2s.S2SError, match="out_axes=None"):
        s2s.vmap(identity, out_axes=None)(xs)


def test_functions_without_generated_code_loop_in_python():
    def guarded(t):
        try:
            return np.sin(t)
        except ValueError as err:  # noqa: F841 (the exception object: no generated code)
            return 0.0

    ts = np.array([1.0, 2.0, -0.5])
    f = s2s.vmap(guarded)
    np.testing.assert_allclose(f(ts), np.sin(ts))
    assert "it has no generated code" in f.source
    with pytest.raises(s2s.S2SError, match="`except ... as name` is not supported"):
        s2s.jit(s2s.vmap(guarded))(ts)


def np_sin(x):
    return np.sin(x) * x


def directional(x, t):
    out, out_dot = s2s.jvp(np_sin, (x,), (t,))
    return out_dot


def squared_directional(x, t):
    return np.sum(directional(x, t) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_jvp_compiles_and_grad_of_jvp_matches_finite_differences(backend):
    x, ts = np.array([0.3, 0.7, 1.1]), rng.normal(size=(4, 3))
    got = batched(directional, backend, in_axes=(None, 0))(x, ts)
    np.testing.assert_allclose(got, (np.cos(x) * x + np.sin(x)) * ts, rtol=1e-12)
    s2s.testing.check_grads(squared_directional, (x, ts[0]), order=1)


def bad_jvp(x):
    return s2s.jvp(np_sin, x, x)


def test_jvp_inside_a_transform_needs_tuple_displays():
    with pytest.raises(s2s.S2SError, match=r"test_vmap.py:\d+:\d+: s2s.jvp inside a transformed function needs"):
        s2s.grad(bad_jvp)(1.0)


def test_clear_errors():
    with pytest.raises(s2s.S2SError, match=r"inconsistent sizes.*argument 0 has size 3.*argument 1 has size 4"):
        s2s.vmap(two_outputs)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(s2s.S2SError, match="at least one mapped argument"):
        s2s.vmap(two_outputs, in_axes=None)(np.ones(3), np.ones(3))
    with pytest.raises(s2s.S2SError, match="over axis 0, but it has 0 dimensions"):
        s2s.vmap(two_outputs)(1.0, np.ones(3))
    with pytest.raises(s2s.S2SError, match="in_axes has 1 entries"):
        s2s.vmap(two_outputs, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(s2s.S2SError, match="call the vmapped function once"):
        s2s.source(s2s.vmap(two_outputs))


def test_jit_maps_the_leaves_of_a_namedtuple():
    # (once refused: the driver rebuilt a namedtuple with type(), which Numba lacks)
    Point = collections.namedtuple("Point", "x y")
    p = Point(rng.normal(size=4), rng.normal(size=4))
    got = s2s.jit(s2s.vmap(field_product))(p)
    np.testing.assert_allclose(got, [field_product(Point(p.x[i], p.y[i])) for i in range(4)])


def test_generated_driver_reads_as_a_loop_and_is_deterministic():
    xs, ys = rng.normal(size=(5, 3)), rng.normal(size=(3, 5))
    f = s2s.jit(s2s.vmap(two_outputs, in_axes=(0, 1)))
    f(xs, ys)
    assert "def two_outputs_vmap(x, y):" in f.source
    assert "for b in runtime.prange(1, n):" in f.source
    assert "result = two_outputs(x[b], y[:, b])" in f.source
    g = s2s.jit(s2s.vmap(two_outputs, in_axes=(0, 1)))
    g(xs, ys)
    assert f.source == g.source


def test_the_python_backend_vectorises_by_batching_rules():
    xs, ys = rng.normal(size=(5, 3)), rng.normal(size=(3, 5))
    f = s2s.vmap(two_outputs, in_axes=(0, 1))
    f(xs, ys)
    assert "vectorised by batching rules" in f.source.splitlines()[0]
    assert "_t1 = np.sin(x)" in f.source and "two_outputs_batched(np.moveaxis(x, 0, -1), np.moveaxis(y, 1, -1))" in f.source
    assert "for " not in f.source
    rates = rng.random(6)
    g = s2s.vmap(euler_decay, in_axes=(0, None, None))
    g(rates, 1.0, 50)
    assert "vectorised by batching rules" in g.source and "path = runtime.batch_broadcast(" in g.source
    # gradients: the gradient of the vectorised batch's total, its differentiated argument broadcast
    h = s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))
    h(rng.normal(size=3), xs, rng.random(5))
    assert "the batch of logistic_loss and its total" in h.source and "def logistic_loss_batched_total" in h.source
    assert "prange" not in h.source


def branch_on_example(x):
    if np.sum(x) > 0.0:
        return x * 2.0
    return -x


def test_statements_without_batching_rules_fall_back_to_the_loop():
    xs = rng.normal(size=(6, 3))
    f = s2s.vmap(branch_on_example)
    np.testing.assert_allclose(f(xs), loop_over(branch_on_example, (xs,), (0,)))
    assert "by a loop over the examples" in f.source
    assert "Not vectorised: " in f.source and "a branch on a value that differs between examples" in f.source


def reductions_and_axes(a, v):
    s = np.sum(a, axis=0) + np.max(a, axis=-1) + np.mean(a) + np.sum(a, axis=1, keepdims=True)[:, 0]
    m = a @ v + np.dot(a.T, v) * 0.5 + a.T @ a @ v
    t = a[..., 0] + a[1:, -1].sum() + len(a) + a.shape[1] + a.ndim
    w = np.where(v > 0.0, v, 0.1 * v) + np.clip(v, -0.5, 0.5) + np.outer(v, v)[0] + np.inner(v, v)
    return s + m + t + w + max(np.min(v), 0.0) + abs(float(np.sum(v)))


def writes_and_callees(a, v):
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = np.sum(a[i] * v) + math.exp(-v[0] ** 2)
    k = 0
    while k < 2:
        out = out + scaled(v[k], a[k])
        k = k + 1
    pair = (out, np.sum(v))
    return pair[0] * pair[1], scaled(2.0, out)


def scaled(c, x):
    return c * x


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (2, -1)])
def test_batching_rules_agree_with_the_loop(in_axes):
    a, v = rng.normal(size=(4, 3, 3)), rng.normal(size=(4, 3))
    if in_axes == (2, -1):
        a, v = np.moveaxis(a, 0, 2), v.T
    elif in_axes[0] is None:
        a = a[0]
    elif in_axes[1] is None:
        v = v[0]
    for fun in (reductions_and_axes, writes_and_callees):
        f = s2s.vmap(fun, in_axes=in_axes)
        got = f(a, v)
        assert "vectorised by batching rules" in f.source, f.source
        ref = loop_over(fun, (a, v), [ax if ax is None else ax % np.ndim(x) for ax, x in zip(in_axes, (a, v))])
        for g, r in zip(got if isinstance(got, tuple) else (got,), ref if isinstance(ref, tuple) else (ref,)):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


def tanh_layer(params, x):
    w, b = params
    return np.tanh(x @ w + b)


predict = s2s.vmap(tanh_layer, in_axes=(None, 0))
predict_grid = s2s.vmap(s2s.vmap(tanh_layer, in_axes=(None, 0)), in_axes=(None, 1))
predict_negative = s2s.vmap(tanh_layer, in_axes=(None, -1))


def mse_through_vmap(params, xs, ys):
    return np.mean((predict(params, xs) - ys) ** 2)


def sum_through_nested_vmap(params, grid):
    return np.sum(predict_grid(params, grid) ** 2)


def through_negative_axes(params, xs):
    return np.sum(predict_negative(params, xs))


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_of_a_function_that_calls_a_vmapped_function(backend):
    params = (rng.normal(size=(3, 2)), rng.normal(size=2))
    xs, ys = rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    gw, gb = s2s.jit(s2s.grad(mse_through_vmap), backend=backend)(params, xs, ys)
    # the closed form of the mean squared error of a tanh layer
    t = np.tanh(xs @ params[0] + params[1])
    delta = 2.0 * (t - ys) * (1.0 - t**2) / ys.size
    np.testing.assert_allclose(gw, xs.T @ delta, rtol=1e-12)
    np.testing.assert_allclose(gb, np.sum(delta, axis=0), rtol=1e-12)
    grid = rng.normal(size=(4, 5, 3))
    s2s.testing.check_grads(sum_through_nested_vmap, (params, grid), order=1)


def test_vmap_inside_transforms_needs_whole_argument_axes():
    with pytest.raises(s2s.S2SError, match=r"test_vmap.py:\d+:\d+: inside another transform, vmap takes in_axes"):
        s2s.grad(through_negative_axes)((np.ones((3, 2)), np.ones(2)), np.ones((3, 4)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_vmap_with_inner_out_axes(backend):
    xs, ys = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    inner = s2s.vmap(outer_self, out_axes=1)  # (4, n, 4) per outer example
    got = batched(inner, backend, in_axes=1, out_axes=-1)(np.stack([xs[:, :2]] * 5, axis=1))
    ref = np.stack([np.stack([np.outer(r, r) for r in xs[:, :2]], axis=1)] * 5, axis=-1)
    assert got.shape == ref.shape == (2, 3, 2, 5)
    np.testing.assert_allclose(got, ref)


# ---- outputs of another shape, vmap inside and under transforms, pytrees of examples ----


def positives(x):
    return x[x > 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_examples_with_outputs_of_another_shape_are_refused(backend):
    with pytest.raises(s2s.S2SError, match="output does not have the first example's shape"):
        batched(positives, backend)(np.array([[1.0, 2.0, 3.0], [1.0, -2.0, -3.0]]))


def pair_of_outputs(w, x):
    return np.sin(w * x), w + x


paired = s2s.vmap(pair_of_outputs, in_axes=(None, 0))


def uses_paired(w, xs):
    a, b = paired(w, xs)
    return np.sum(a) + np.sum(b**2)


def squares(x):
    return x * x


squared = s2s.vmap(squares)


def uses_squared(xs):
    return squared(xs)


def test_a_vmap_inside_a_transform_returns_one_array_per_example_in_its_dtype():
    with pytest.raises(s2s.S2SError, match=r"test_vmap.py:\d+:\d+: vmap: .* not a tuple"):
        s2s.jit(uses_paired, backend="python")(0.5, np.ones((2, 3)))
    out = s2s.jit(uses_squared, backend="python")(np.ones((2, 3), np.float32))
    assert out.dtype == np.float32


def sum_squared(x):
    return np.sum(x) ** 2


def test_transforms_of_a_vmap_differentiate_the_batch():
    vf = s2s.vmap(sum_squared)
    X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for jac in (s2s.jacfwd(vf)(X), s2s.jacrev(vf)(X)):
        assert jac.shape == (2, 2, 3)
        np.testing.assert_allclose(jac[0, 0], 12.0)
        np.testing.assert_allclose(jac[1, 1], 30.0)
        np.testing.assert_allclose(jac[0, 1], 0.0)
    np.testing.assert_allclose(s2s.vjp(vf, X)[1](np.ones(2))[0], [[12.0] * 3, [30.0] * 3])
    with pytest.raises(s2s.S2SError, match="scalar output"):
        s2s.grad(vf)(X)


def mapped_model(w, x):
    return np.sum(np.sin(w * x))


def test_rebinding_a_module_level_vmap_regenerates_the_callers_gradient():
    global predict_for_rebinding
    xs = np.arange(6.0).reshape(3, 2) / 5
    predict_for_rebinding = s2s.vmap(mapped_model, in_axes=(None, 0))
    s2s.grad(loss_through_rebinding)(np.array([0.3, 0.5]), xs)
    predict_for_rebinding = s2s.vmap(mapped_model, in_axes=(0, 0))
    W = np.array([[0.3, 0.5], [0.1, 0.2], [0.7, 0.9]])
    expected = 2 * np.sum(np.sin(W * xs), 1)[:, None] * xs * np.cos(W * xs)
    np.testing.assert_allclose(s2s.grad(loss_through_rebinding)(W, xs), expected, rtol=1e-12)


predict_for_rebinding = None


def loss_through_rebinding(w, xs):
    return np.sum(predict_for_rebinding(w, xs) ** 2)


def test_namedtuple_leaves_map_on_the_python_backend():
    P = collections.namedtuple("P", "w b")
    got = s2s.vmap(field_sum, in_axes=(P(None, 0), 0))(P(np.ones(3), np.arange(4.0)), np.ones((4, 3)))
    np.testing.assert_allclose(got, [3.0, 4.0, 5.0, 6.0])


def field_sum(p, x):
    return np.sum(p.w * x) + p.b


def to_tuple(x):
    return tuple(x)


def test_specialisations_follow_the_per_example_shape():
    v = s2s.vmap(to_tuple)
    assert len(v(np.ones((2, 3)))) == 3
    assert len(v(np.ones((2, 4)))) == 4


def inner_product(a, b):
    return np.sum(a * b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_vmap_of_grad(backend):
    A, B = np.arange(6.0).reshape(2, 3), np.arange(15.0).reshape(3, 5)
    t = s2s.vmap(s2s.vmap(s2s.grad(inner_product), in_axes=(0, None)), in_axes=(None, 1))
    np.testing.assert_allclose(s2s.jit(t, backend=backend)(A, B), np.broadcast_to(B.T[:, None, :], (5, 2, 3)))


def with_default(x, y=2.0):
    return x * y


def nan_aux(x, c):
    return x * 2.0, c * np.nan


def test_defaults_keywords_and_nan_outputs():
    np.testing.assert_allclose(s2s.vmap(with_default)(np.ones(3)), [2.0, 2.0, 2.0])
    with pytest.raises(s2s.S2SError, match="positionally"):
        s2s.vmap(with_default)(np.ones(3), y=3.0)
    out, aux = s2s.vmap(nan_aux, in_axes=(0, None), out_axes=(0, None))(np.ones(3), 1.0)
    assert np.isnan(aux)


def test_vmap_of_a_jitted_function_is_compiled():
    xs = rng.normal(size=(4, 3))
    v = s2s.vmap(s2s.jit(outer_self))
    assert v.backend == "cpu"
    np.testing.assert_allclose(v(xs), np.stack([np.outer(x, x) for x in xs]))
    assert "runtime.prange" in v.source


def sin_matmul(a, b):
    return np.sum(np.sin(a @ b))


def sin_dot(a, b):
    return np.sum(np.sin(np.dot(a, b)))


def sin_inner(a, b):
    return np.sum(np.sin(np.inner(a, b)))


@pytest.mark.parametrize("fun, a_shape, b_shape", [
    (sin_matmul, (2, 3, 4), (4,)), (sin_matmul, (4,), (2, 4, 3)), (sin_matmul, (1, 3, 4), (2, 4, 4)),
    (sin_matmul, (3, 4), (2, 4, 3)), (sin_dot, (2, 3, 4), (2, 4, 3)), (sin_dot, (4,), (2, 4, 3)),
    (sin_inner, (2, 3, 4), (4,)), (sin_inner, (3, 4), (2, 4)),
])
@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_products_beyond_two_dimensions_per_example_vectorise_with_their_gradients(fun, a_shape, b_shape, in_axes):
    """matmul broadcasts leading axes, dot and inner contract other axes: the batch size 4
    equals a contracted size, so a batch axis taken for an example axis would go unnoticed."""
    a = rng.standard_normal(((4,) if in_axes[0] == 0 else ()) + a_shape)
    b = rng.standard_normal(((4,) if in_axes[1] == 0 else ()) + b_shape)

    def example(i):
        return (a[i] if in_axes[0] == 0 else a, b[i] if in_axes[1] == 0 else b)

    values = s2s.vmap(fun, in_axes=in_axes)(a, b)
    np.testing.assert_allclose(values, [fun(*example(i)) for i in range(4)], rtol=1e-12)
    a_bar, b_bar = s2s.vmap(s2s.grad(fun, argnums=(0, 1)), in_axes=in_axes)(a, b)
    for i in range(4):
        np.testing.assert_allclose(a_bar[i], central_difference_grad(fun, example(i), 0), atol=1e-6)
        np.testing.assert_allclose(b_bar[i], central_difference_grad(fun, example(i), 1), atol=1e-6)


def test_vmapped_functions_of_one_name_in_two_modules_keep_their_own_gradients(tmp_path, monkeypatch):
    """The loop module that transforms read is shared per mapped function: two functions
    called f in different modules must not share it (jit reused the other f's loop)."""
    for scale in (2, 3):
        (tmp_path / f"scaled_by_{scale}.py").write_text(
            "import numpy as np\nimport s2s\n\n\n"
            f"def f(x):\n    return x * {scale}.0\n\n\nvf = s2s.vmap(f)\n\n\n"
            "def total(xs):\n    return np.sum(vf(xs))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import scaled_by_2
    import scaled_by_3

    xs = np.ones(3)
    for backend in BACKENDS:
        for module, scale in ((scaled_by_2, 2.0), (scaled_by_3, 3.0)):
            np.testing.assert_array_equal(s2s.jit(s2s.grad(module.total), backend=backend)(xs), scale)


def path_value(market, z, dt):
    """One path of a loop-heavy per-example function, with a tuple of shared numbers."""
    spot, sigma = market
    s = spot
    for t in range(z.shape[0]):
        s = s * math.exp(-0.5 * sigma * sigma * dt + sigma * math.sqrt(dt) * z[t])
    return s * s


@pytest.mark.parametrize("backend", BACKENDS)
def test_per_example_gradients_match_central_differences(backend):
    """Per-example gradients with respect to a shared argument and a mapped one (argnums=(0, 1))."""
    w, xs, ys = rng.normal(size=3), rng.normal(size=(4, 3)), (rng.random(4) > 0.5).astype(float)
    w_bar, x_bar = batched(s2s.grad(logistic_loss, argnums=(0, 1)), backend, in_axes=(None, 0, 0))(w, xs, ys)
    assert w_bar.shape == x_bar.shape == (4, 3)
    for i in range(4):
        example = (w, xs[i], ys[i])
        np.testing.assert_allclose(w_bar[i], central_difference_grad(logistic_loss, example, 0), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(x_bar[i], central_difference_grad(logistic_loss, example, 1), rtol=1e-6, atol=1e-9)


def test_per_example_gradients_of_a_loop_with_a_shared_tuple_match_central_differences():
    market, zs, dt = (1.05, 0.25), rng.normal(size=(3, 8)), 1.0 / 8
    spot_bar, sigma_bar = s2s.vmap(s2s.grad(path_value), in_axes=(None, 0, None))(market, zs, dt)
    for i in range(3):
        fd_spot = central_difference_grad(lambda s: path_value((float(s), market[1]), zs[i], dt), (market[0],), 0)
        fd_sigma = central_difference_grad(lambda v: path_value((market[0], float(v)), zs[i], dt), (market[1],), 0)
        np.testing.assert_allclose(spot_bar[i], fd_spot, rtol=1e-6)
        np.testing.assert_allclose(sigma_bar[i], fd_sigma, rtol=1e-6)


def test_a_repeated_call_reuses_its_specialisation_and_still_checks_new_arguments():
    f = s2s.vmap(two_outputs, in_axes=(0, None))
    xs, y = rng.normal(size=(4, 3)), rng.normal(size=3)
    first = f(xs, y)
    assert len(f._specialised) == 1 and len(f._by_call_key) == 1
    again = f(xs * 2.0, y)  # same kinds and shapes: the recorded specialisation, no new checks needed
    np.testing.assert_allclose(again[0], np.sin(xs * 2.0) * y)
    assert len(f._specialised) == 1 and len(f._by_call_key) == 1
    np.testing.assert_allclose(f(xs[:2], y)[1], first[1][:2])  # another batch size: checked, same specialisation
    assert len(f._specialised) == 1 and len(f._by_call_key) == 2
    assert f(xs.astype(np.float32), y.astype(np.float32))[0].dtype == np.float32  # another dtype: its own
    assert len(f._specialised) == 2
    with pytest.raises(s2s.S2SError, match="in_axes asks to map argument 0 over axis 0, but it has 0 dimensions"):
        f(1.0, y)
    g = s2s.vmap(two_outputs)
    g(xs, xs)
    with pytest.raises(s2s.S2SError, match="inconsistent sizes"):
        g(xs, xs[:3])


def test_a_second_vmap_of_the_same_function_reads_its_modules_from_the_cache(tmp_path, monkeypatch):
    """The vectorised modules go through the engine: generated once, then read from the cache
    with their entry points, by a new s2s.vmap object too."""
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path))
    from s2s.driver import cache, pipeline

    generated = []
    generate = pipeline.generate

    def counting(fn, transform, *args, **kwargs):
        generated.append(transform)
        return generate(fn, transform, *args, **kwargs)

    monkeypatch.setattr(pipeline, "generate", counting)
    xs, y = rng.normal(size=(4, 3)), rng.normal(size=3)
    first = s2s.vmap(two_outputs, in_axes=(0, None))(xs, y)
    assert generated == ["primal", "vmap"]
    (entry,) = [p for p in cache.entries(str(tmp_path)) if ".vmap." in p]
    manifest = cache._unseal(open(entry).read())[1]
    assert manifest["entries"] == {"name": "two_outputs", "vmap": "two_outputs_vmap", "batched": "two_outputs_batched"}
    again = s2s.vmap(two_outputs, in_axes=(0, None))
    second = again(xs, y)
    assert generated == ["primal", "vmap"]  # nothing generated again
    assert "vectorised by batching rules" in again.source
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)

    w, ys = rng.normal(size=3), (rng.random(4) > 0.5).astype(float)
    grads = s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))(w, xs, ys)
    assert "vmap_total" in generated
    count = len(generated)
    np.testing.assert_array_equal(s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))(w, xs, ys), grads)
    assert len(generated) == count
    (entry,) = [p for p in cache.entries(str(tmp_path)) if ".vmap_total." in p]
    recorded = cache._unseal(open(entry).read())[1]["entries"]
    assert recorded["total"] == "logistic_loss_batched_total" and recorded["result"] is True


def cubic_energy(x):
    return np.sum(x ** 3) + x[0] * x[1]


def coupled(x, y):
    return np.sum(np.sin(x) * y[:3] ** 2) + x[0] * y[3] ** 3


def test_per_example_second_derivatives_compile():
    """s2s.jit(s2s.vmap(s2s.hessian(f))): the compiled loop calls the module s2s.jit(s2s.hessian(f))
    compiles, once per example, laid out as the Hessian (out.shape + x.shape + wrt.shape)."""
    xs, ys = rng.normal(size=(5, 3)), rng.normal(size=(5, 4))
    hessians = s2s.jit(s2s.vmap(s2s.hessian(cubic_energy)))(xs)
    expected = np.array([np.diag(6 * x) + np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, 0]]) for x in xs])
    np.testing.assert_allclose(hessians, expected, rtol=1e-13, atol=1e-13)
    # d/dy of the gradient with respect to x: (3, 4) per example, y shared (in_axes None)
    mixed = s2s.jit(s2s.vmap(s2s.jacfwd(s2s.grad(coupled), argnums=1), in_axes=(0, None)))(xs, ys[0])
    np.testing.assert_allclose(mixed, s2s.vmap(s2s.jacfwd(s2s.grad(coupled), argnums=1), in_axes=(0, None))(xs, ys[0]),
                               rtol=1e-13)
    for b in range(2):
        columns = [central_difference_grad(lambda y: s2s.grad(coupled)(xs[b], y)[r], (ys[0],), 0) for r in range(3)]
        np.testing.assert_allclose(mixed[b], np.array(columns), rtol=1e-6, atol=1e-8)
