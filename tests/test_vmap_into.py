"""s2s.jit(s2s.vmap(s2s.grad(f))) on the CPU: the examples after the first write their gradients
into the rows of the driver's outputs (optimize/into.py), with np.dot of 1-d arrays and its
adjoints as elementwise loops (optimize/loops.py). Every gradient against central differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

rng = np.random.default_rng(11)


def per_example_reference(fun, args, in_axes, argnums=0):
    """Central differences of fun for each example, stacked on axis 0 (one array per argnum)."""
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    rows = []
    for b in range(n):
        example = [a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]
        rows.append([central_difference_grad(fun, example, k) for k in nums])
    stacked = [np.stack([r[j] for r in rows]) for j in range(len(nums))]
    return stacked[0] if isinstance(argnums, int) else tuple(stacked)


def jitted(fun, in_axes, argnums=0, out_axes=0):
    return s2s.jit(s2s.vmap(s2s.grad(fun, argnums=argnums), in_axes=in_axes, out_axes=out_axes))


def logistic(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def squared_error(w, x, y):
    r = np.dot(w, x) - y
    return 0.5 * r * r


def two_dots(w, v, x):
    return np.tanh(np.dot(x, w)) * np.dot(v, x) + np.sum(w * v)


def linear_in_w(w, x):
    return np.sum(w * x)  # the gradient is x itself


def dot_in_w(w, x):
    return np.dot(w, x)  # the gradient is x times the seed


def matrix_vector(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def scaled_row(w, x):
    return np.dot(x, w) * np.sum(x)


def source_of(g):
    return s2s.source(g)


def test_logistic_gradients_are_written_into_the_rows_by_one_loop():
    w, xs, ys = rng.normal(size=6) * 0.3, rng.normal(size=(9, 6)), (rng.random(9) > 0.5).astype(float)
    g = jitted(logistic, (None, 0, 0))
    got = g(w, xs, ys)
    np.testing.assert_allclose(got, per_example_reference(logistic, (w, xs, ys), (None, 0, 0)), rtol=1e-6, atol=1e-8)
    text = source_of(g)
    assert "def logistic_vjp_into(w, x, y, out_bar, w_bar_out):" in text
    assert "logistic_vjp_into(w, x[b], y[b], 1.0, out_0[b])" in text
    assert "w_bar_out[k] = " in text  # the adjoint of the dot goes straight into the row
    assert "raise ValueError" in text  # the loops rely on len(x) == len(w): checked first


@pytest.mark.parametrize("fun, in_axes, shapes", [
    (squared_error, (None, 0, 0), [(5,), (7, 5), (7,)]),
    (two_dots, (None, None, 0), [(4,), (4,), (6, 4)]),
    (linear_in_w, (None, 0), [(3,), (5, 3)]),
    (dot_in_w, (None, 0), [(3,), (5, 3)]),
    (matrix_vector, (None, 0), [(3, 4), (6, 4)]),
    (scaled_row, (None, 1), [(5,), (5, 8)]),
    (scaled_row, (0, 1), [(8, 5), (5, 8)]),
])
def test_per_example_gradients_match_central_differences(fun, in_axes, shapes):
    args = [rng.normal(size=s) for s in shapes]
    got = jitted(fun, in_axes)(*args)
    np.testing.assert_allclose(got, per_example_reference(fun, args, in_axes), rtol=1e-6, atol=1e-8)


def test_gradient_with_respect_to_the_mapped_argument():
    w, xs = rng.normal(size=5), rng.normal(size=(7, 5))
    got = jitted(scaled_row, (None, 0), argnums=1)(w, xs)
    np.testing.assert_allclose(got, per_example_reference(scaled_row, (w, xs), (None, 0), argnums=1),
                               rtol=1e-6, atol=1e-8)


def test_several_output_leaves_each_get_their_row():
    w, v, xs = rng.normal(size=4), rng.normal(size=4), rng.normal(size=(6, 4))
    g = jitted(two_dots, (None, None, 0), argnums=(0, 1))
    got = g(w, v, xs)
    want = per_example_reference(two_dots, (w, v, xs), (None, None, 0), argnums=(0, 1))
    assert isinstance(got, tuple) and len(got) == 2
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    assert "_into(" in source_of(g)


def params_loss(params, x):
    return np.sum(np.tanh(x @ params["w"] + params["b"]) ** 2)


def tuple_loss(params, x):
    w, b = params
    return np.sum(np.tanh(x @ w + b) ** 2)


@pytest.mark.parametrize("fun, params", [
    (params_loss, {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}),
    (tuple_loss, (rng.normal(size=(3, 2)), rng.normal(size=2))),
])
def test_gradients_of_pytrees_of_parameters_match_central_differences(fun, params):
    xs = rng.normal(size=(5, 3))
    got = jitted(fun, (None, 0))(params, xs)
    keys = sorted(params) if isinstance(params, dict) else range(len(params))
    for key in keys:
        def of_leaf(leaf, x, key=key):
            p = dict(params) if isinstance(params, dict) else list(params)
            p[key] = leaf
            return fun(p if isinstance(params, dict) else tuple(p), x)

        want = per_example_reference(of_leaf, (params[key], xs), (None, 0))
        np.testing.assert_allclose(got[key], want, rtol=1e-6, atol=1e-8)


def test_out_axes_move_the_batch_axis():
    W, xs = rng.normal(size=(3, 4)), rng.normal(size=(6, 4))
    got = jitted(matrix_vector, (None, 0), out_axes=2)(W, xs)
    want = np.moveaxis(per_example_reference(matrix_vector, (W, xs), (None, 0)), 0, 2)
    assert got.shape == (3, 4, 6)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_float32_stays_float32():
    w = (rng.normal(size=6) * 0.3).astype(np.float32)
    xs = rng.normal(size=(9, 6)).astype(np.float32)
    ys = (rng.random(9) > 0.5).astype(np.float32)
    got = jitted(logistic, (None, 0, 0))(w, xs, ys)
    assert got.dtype == np.float32
    want = per_example_reference(logistic, (w.astype(float), xs.astype(float), ys.astype(float)), (None, 0, 0))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_row_of_another_shape_is_reported_not_written():
    """The _into function checks the row it is given against the gradient's shape and returns
    True (the driver then raises through runtime.check_batch) rather than write past its end."""
    w, xs, ys = rng.normal(size=6), rng.normal(size=(4, 6)), np.ones(4)
    g = jitted(logistic, (None, 0, 0))
    g(w, xs, ys)
    spec = next(iter(g._specialised.values()))
    module = spec["call"].dispatcher.py_func.__globals__
    into = module["logistic_vjp_into"]
    short = np.full(3, 7.0)
    assert into(w, xs[0], ys[0], 1.0, short)
    np.testing.assert_array_equal(short, 7.0)
    row = np.empty(6)
    assert not into(w, xs[0], ys[0], 1.0, row)
    np.testing.assert_allclose(row, central_difference_grad(logistic, [w, xs[0], ys[0]], 0), rtol=1e-6, atol=1e-8)


def test_dot_operands_of_different_lengths_still_raise():
    with pytest.raises((ValueError, s2s.S2SError)):
        jitted(squared_error, (None, 0, 0))(rng.normal(size=4), rng.normal(size=(3, 5)), rng.normal(size=3))


def positives(x):
    return x[x > 0]


def test_examples_with_outputs_of_another_shape_are_still_refused():
    with pytest.raises(s2s.S2SError, match="output does not have the first example's shape"):
        s2s.jit(s2s.vmap(positives))(np.array([[1.0, 2.0, 3.0], [1.0, -2.0, -3.0]]))


def test_the_rows_are_not_the_arguments():
    """The gradient of linear_in_w is the example x itself: the caller gets rows of its own,
    and writing into them changes neither x nor another output."""
    w, xs = rng.normal(size=3), rng.normal(size=(5, 3))
    before = xs.copy()
    got = jitted(linear_in_w, (None, 0))(w, xs)
    np.testing.assert_array_equal(got, before)
    got[:] = 0.0
    np.testing.assert_array_equal(xs, before)


def test_jit_of_grad_alone_keeps_np_dot():
    """Outside a vmap a lone np.dot of 1-d arrays stays a call of BLAS (large arrays)."""
    g = s2s.jit(s2s.grad(logistic))
    w, x = rng.normal(size=5), rng.normal(size=5)
    np.testing.assert_allclose(g(w, x, 1.0), central_difference_grad(logistic, [w, x, 1.0], 0), rtol=1e-6, atol=1e-8)
    assert "np.dot(x, w)" in s2s.source(g)
