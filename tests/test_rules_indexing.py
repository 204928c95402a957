"""Rules of indexing: gathers through index arrays (a repeated index accumulates its adjoint) and
boolean masks, on the python backend and under s2s.jit, against closed forms; and the index and
truth methods x.argmax(), x.argmin(), x.argsort(), (x > 0).any() and .all(), whose results carry
no derivative, against central differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

BACKENDS = ["python", "cpu"]
X = np.array([0.3, -0.7, 1.1])


# ---- gathers with index arrays and boolean masks, under jit too ----------------------------


def _embedding(W, idx):
    return np.sum(np.tanh(W[idx]) ** 2)


def _positive_cubes(A):
    return np.sum(A[A > 0.2] ** 3)


def _masked_rows(A, keep):
    picked = A[keep]
    return np.sum(picked * picked)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_gathers_with_index_arrays_and_masks_against_closed_forms(backend):
    rng = np.random.default_rng(4)
    W, idx = rng.normal(size=(5, 3)), np.array([0, 3, 3, 1])  # row 3 twice: its adjoint accumulates
    A = rng.normal(size=(3, 4))
    keep = np.array([True, False, True])

    def grad(f):
        return s2s.jit(s2s.grad(f)) if backend == "cpu" else s2s.grad(f)

    expected = np.zeros_like(W)
    np.add.at(expected, idx, 2 * np.tanh(W[idx]) * (1 - np.tanh(W[idx]) ** 2))
    np.testing.assert_allclose(grad(_embedding)(W, idx), expected, rtol=1e-13)
    np.testing.assert_allclose(grad(_positive_cubes)(A), np.where(A > 0.2, 3 * A ** 2, 0.0), rtol=1e-13)
    np.testing.assert_allclose(grad(_positive_cubes)(A[0]), np.where(A[0] > 0.2, 3 * A[0] ** 2, 0.0), rtol=1e-13)
    np.testing.assert_allclose(grad(_masked_rows)(A, keep), 2 * A * keep[:, None], rtol=1e-13)
    if backend == "cpu":  # the value itself: numba.njit indexes with 1-D masks only
        assert s2s.jit(_positive_cubes)(A) == pytest.approx(np.sum(A[A > 0.2] ** 3), rel=1e-14)


# ---- index and truth methods: x.argmax(), x.argmin(), x.argsort(), (x > 0).any(), .all() ----------------


def index_methods(x):
    i = x.argmax()
    j = x.argmin()
    k = x.argsort()
    y = x * x
    if (x > -1.0).all() and (x > 1.0).any():
        y = y * 2.0
    return y[i] + x[j] * x[k[1]]


def argmax_along_rows(m):
    i = m.argmax(axis=1)
    return np.sum(m[0, i[0]] * m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_and_truth_methods(backend):
    grad = s2s.jit(s2s.grad(index_methods), backend=backend)
    np.testing.assert_allclose(grad(X), central_difference_grad(index_methods, (X,), 0), rtol=1e-6, atol=1e-8)
    m = np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 5.0]])
    np.testing.assert_allclose(s2s.jit(s2s.grad(argmax_along_rows), backend=backend)(m),
                               central_difference_grad(argmax_along_rows, (m,), 0), rtol=1e-6, atol=1e-8)
