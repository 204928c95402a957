"""Small idioms of JAX and NumPy code that s2s refused or answered in another type: each now
runs, checked against a closed form (or NumPy's own value), or is refused at its line."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import s2s
from s2s import random

W = np.arange(6.0).reshape(2, 3)
WEIGHTS = [0.5, 1.5, 2.5]  # a module-level list of numbers, captured as constants
Point = collections.namedtuple("Point", "a b")


class Config:
    SCALE = 3.0


def sum_of_squares(x):
    return np.sum(x * x)


def through_transpose(x):
    return np.sum(W.T @ x)


def through_shape(x):
    s = 0.0
    for i in range(W.shape[0]):
        s = s + W[i, 0] * x[0] * Config.SCALE
    return s


def weighted(x):
    return x[0] * WEIGHTS[0] + x[1] * WEIGHTS[2] + x[2] * len(WEIGHTS)


def numbered_pairs(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        s = s + (i + 1) * a * b
    return s


def numbered_rows(p):
    s = 0.0
    for i, (a, b) in enumerate(p):
        s = s + i * a * b
    return s


def extremes(x):
    return max(x[0] * 2.0, x[1], x[2] ** 2) + min(x[0], x[1], x[2], 0.6)


def sine_weighted(x):
    return np.sum(np.sin(x) * x)


def makes_a_point(x):
    return Point(x[0] * 2.0, x[1])


def truncated(key):
    return random.truncated_normal(key, -1.0, 1.0)


def wave(u, c):
    return np.sin(u * c) * u


def tangents_in_a_loop(x, c):  # (value, tangent) tuples overwritten by a loop
    s = 0.0
    for i in range(3):
        s = s + s2s.jvp(wave, (x, c * (i + 1)), (1.0, 0.0))[1]
    return s


def state_vector(x):  # np.array of per-example numbers and a constant
    v = np.array([x[0] * 2.0, x[1], 2.0])
    return np.sum(v * v)


X = np.array([0.3, 0.5, 0.9])


def test_jit_of_float32_returns_float32_as_numpy():
    x = X.astype(np.float32)
    value = s2s.jit(sum_of_squares)(x)
    assert type(value) is np.float32 and value == sum_of_squares(x)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_attributes_of_captured_arrays_and_classes(backend):
    np.testing.assert_allclose(s2s.jit(s2s.grad(through_transpose), backend=backend)(np.ones(2)),
                               W.sum(axis=1), rtol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.grad(through_shape), backend=backend)(X),
                               [W[:, 0].sum() * Config.SCALE, 0.0, 0.0], rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_module_list_of_numbers_is_a_constant(backend):
    np.testing.assert_allclose(s2s.jit(s2s.grad(weighted), backend=backend)(X), [0.5, 2.5, 3.0], rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_enumerate_of_zip(backend):
    y = np.array([1.0, 2.0, 4.0])
    gx, gy = s2s.jit(s2s.grad(numbered_pairs, argnums=(0, 1)), backend=backend)(X, y)
    np.testing.assert_allclose(gx, np.arange(1, 4) * y, rtol=1e-15)
    np.testing.assert_allclose(gy, np.arange(1, 4) * X, rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_enumerate_unpacking_rows(backend):
    p = np.stack([X, X + 1.0], axis=1)
    want = np.stack([np.arange(3) * p[:, 1], np.arange(3) * p[:, 0]], axis=1)
    np.testing.assert_allclose(s2s.jit(s2s.grad(numbered_rows), backend=backend)(p), want, rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_builtin_max_and_min_of_several(backend):
    # max(0.6, 0.5, 0.81) is x[2] ** 2; min(0.3, 0.5, 0.9, 0.6) is x[0]
    np.testing.assert_allclose(s2s.jit(s2s.grad(extremes), backend=backend)(X), [1.0, 0.0, 1.8], rtol=1e-15)
    assert s2s.jit(extremes, backend=backend)(X) == extremes(X)


def test_transforms_of_a_jitted_function():
    """grad(jit(f)) is jit(grad(f)) as in JAX, and so are the other transforms of jit(f)."""
    jitted = s2s.jit(sine_weighted)
    want = np.cos(X) * X + np.sin(X)
    gradient = s2s.grad(jitted)
    assert gradient.backend == "cpu"
    np.testing.assert_allclose(gradient(X), want, rtol=1e-14)
    np.testing.assert_allclose(s2s.value_and_grad(jitted)(X)[1], want, rtol=1e-14)
    np.testing.assert_allclose(s2s.jacfwd(jitted)(X), want, rtol=1e-14)
    np.testing.assert_allclose(s2s.jacrev(jitted)(X), want, rtol=1e-14)
    np.testing.assert_allclose(s2s.hessian(jitted)(X), np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=1e-14)
    np.testing.assert_allclose(s2s.vmap(jitted)(X[:, None]), np.sin(X) * X, rtol=1e-14)
    np.testing.assert_allclose(s2s.jvp(jitted, (X,), (np.ones(3),))[1], np.sum(want), rtol=1e-14)
    np.testing.assert_allclose(s2s.vjp(jitted, X)[1](1.0)[0], want, rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_namedtuple_made_in_a_jitted_function_comes_back_as_one(backend):
    made = s2s.jit(makes_a_point, backend=backend)(X)
    assert type(made) is Point
    np.testing.assert_array_equal(made, (X[0] * 2.0, X[1]))


def test_making_a_namedtuple_where_it_is_differentiated_is_refused_at_its_line():
    with pytest.raises(s2s.S2SError, match=r"making a namedtuple \(Point\) inside a function s2s differentiates") \
            as info:
        s2s.grad(lambda x: sum(makes_a_point(x)))(X)
    assert info.value.origin.line == makes_a_point.__code__.co_firstlineno + 1


def test_truncated_normal_without_a_shape_under_jit():
    keys = random.split(random.PRNGKey(3), 5)
    got = [s2s.jit(truncated)(k) for k in keys]
    np.testing.assert_allclose(got, [truncated(k) for k in keys], rtol=1e-12)  # (erf: libm's in both)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_in_a_loop_differentiated(backend):
    x, c, h = 0.5, 0.7, 1e-6
    got = s2s.jit(s2s.grad(tangents_in_a_loop, argnums=(0, 1)), backend=backend)(x, c)
    want_x = (tangents_in_a_loop(x + h, c) - tangents_in_a_loop(x - h, c)) / (2 * h)
    want_c = (tangents_in_a_loop(x, c + h) - tangents_in_a_loop(x, c - h)) / (2 * h)
    np.testing.assert_allclose(got, (want_x, want_c), rtol=1e-7)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_vmap_of_an_array_of_numbers_and_a_constant(backend):
    xs = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(state_vector), backend=backend)(xs),
                               4 * xs[:, 0] ** 2 + xs[:, 1] ** 2 + 4.0, rtol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(state_vector)), backend=backend)(xs),
                               np.stack([8 * xs[:, 0], 2 * xs[:, 1]], axis=1), rtol=1e-15)
