"""Snippets of JAX's tutorials, with `import numpy as jnp` and `import s2s as jax`, run by s2s
and checked against closed forms (and JAX's printed values where the tutorial shows them)."""

import math
import os
import subprocess
import sys

import numpy as jnp
import numpy as np
import pytest

import s2s as jax


def test_grad_of_a_numpy_function_as_it_is():
    # the autodiff tutorial: grad_tanh = grad(jnp.tanh); print(grad_tanh(2.0)) -> 0.070650816
    grad_tanh = jax.grad(jnp.tanh)
    assert grad_tanh(2.0) == pytest.approx(1 - math.tanh(2.0) ** 2, rel=1e-14)
    single = grad_tanh(np.float32(2.0))  # JAX's default float32: the tutorial's printed value
    assert single.dtype == np.float32 and single == pytest.approx(0.070650816, abs=1e-8)
    # d2/dx2 tanh = -2 tanh (1 - tanh^2)
    assert jax.grad(jax.grad(jnp.tanh))(2.0) == pytest.approx(-2 * math.tanh(2.0) * (1 - math.tanh(2.0) ** 2))
    np.testing.assert_allclose(jax.jacfwd(jnp.sin)(np.array([0.0, 1.0])), np.diag(np.cos([0.0, 1.0])))
    assert jax.grad(math.sin)(1.0) == pytest.approx(math.cos(1.0))
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    np.testing.assert_allclose(jax.grad(jnp.linalg.det)(A), np.linalg.det(A) * np.linalg.inv(A).T)


def test_jit_and_vmap_of_numpy_functions():
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(jax.jit(jnp.tanh)(x), np.tanh(x))
    batch = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(jax.vmap(jnp.dot)(batch, batch), np.sum(batch * batch, axis=1))
    assert "def tanh(x):" in open(jax.grad(jnp.tanh).fun.__code__.co_filename).read()


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


def test_quickstart_selu_and_logistic():
    x = np.linspace(-2.0, 2.0, 7)
    np.testing.assert_allclose(jax.jit(selu)(x), selu(x))
    derivative = jax.grad(sum_logistic)(x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(derivative, s * (1 - s), rtol=1e-13)
    np.testing.assert_allclose(jax.jit(jax.grad(sum_logistic))(x), s * (1 - s), rtol=1e-13)
    # the selu's derivative, with its default arguments, in both modes
    expected = np.where(x > 0, 1.05, 1.05 * 1.67 * np.exp(x))
    np.testing.assert_allclose(jax.vmap(jax.grad(selu))(x), expected, rtol=1e-13)
    np.testing.assert_allclose(np.diag(jax.jacfwd(selu)(x)), expected, rtol=1e-13)


def mixed(x, y):
    return x ** 3 * y ** 2 + math.sin(x * y)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_third_derivatives_as_the_tutorial_takes_them(backend):
    # print(jax.grad(jax.grad(jax.grad(jnp.tanh)))(2.)) -> d3/dx3 tanh = -2 (1 - t^2)(1 - 3 t^2)
    t = math.tanh(2.0)
    third = jax.jit(jax.grad(jax.grad(jax.grad(jnp.tanh))), backend=backend)
    assert third(2.0) == pytest.approx(-2 * (1 - t * t) * (1 - 3 * t * t), rel=1e-13)
    assert third(np.float32(2.0)).dtype == np.float32
    # d/dx d/dy d/dx of x^3 y^2 + sin(xy) = 12 x y - 2 y sin(xy) - x y^2 cos(xy)
    x, y = 0.7, 1.3
    d3 = jax.jit(jax.grad(jax.grad(jax.grad(mixed, 0), 1), 0), backend=backend)(x, y)
    assert d3 == pytest.approx(12 * x * y - 2 * y * math.sin(x * y) - x * y * y * math.cos(x * y), rel=1e-12)
    with pytest.raises(jax.S2SError, match="float scalars"):
        jax.grad(jax.grad(jax.grad(jnp.tanh)))(np.array([2.0]))


def picked_log_likelihood(logits, labels):
    # the tutorial's cross-entropy with integer labels: one entry per row, picked by two index arrays
    shifted = logits - jnp.max(logits, axis=1, keepdims=True)
    log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=1, keepdims=True))
    return -jnp.mean(log_probs[jnp.arange(labels.shape[0]), labels])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_cross_entropy_with_integer_labels_against_the_closed_form(backend):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(5, 3))
    labels = np.array([0, 2, 2, 1, 2])  # repeated labels: the adjoint must accumulate, not overwrite
    grad = jax.grad(picked_log_likelihood)
    got = (jax.jit(grad) if backend == "cpu" else grad)(logits, labels)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    expected = (softmax - np.eye(3)[labels]) / labels.shape[0]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_pointwise_gather_with_repeated_pairs_under_jit():
    def f(a, rows, cols):
        return jnp.sum(a[rows, cols] ** 2)

    a = np.arange(12.0).reshape(3, 4) / 7.0
    rows, cols = np.array([0, 2, 0, 1]), np.array([1, 3, 1, 0])  # (0, 1) twice
    expected = np.zeros_like(a)
    np.add.at(expected, (rows, cols), 2 * a[rows, cols])
    np.testing.assert_allclose(jax.jit(jax.grad(f))(a, rows, cols), expected, rtol=1e-14)
    np.testing.assert_allclose(jax.grad(f)(a, rows, cols), expected, rtol=1e-14)


def test_the_tutorial_example_runs_every_section():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "examples/tutorial.py"], capture_output=True, text=True, cwd=root)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "every section ran and matched" in result.stdout
    assert result.stdout.count(": ok") >= 20
