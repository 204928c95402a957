"""s2s.jvp keeps a float32 output's tangent float32, as JAX does: the weights of np.maximum's
and np.fmax's rules (1.0 - (y > x): float64 arrays) used to promote it to float64. Values are
checked against central differences of the float64 function."""

import numpy as np
import pytest

import s2s


def clipped(x):
    return np.maximum(x, 0.5) * np.fmax(x, 0.2) + np.minimum(x[0], 0.4)


def as_dict(x):
    return {"floor": np.fmin(x, 0.5), "first": x[0] * x[1]}


X = np.array([0.3, 0.7, 0.45], np.float32)
T = np.array([1.0, -0.5, 2.0], np.float32)


def _central(fn, x, t, h=1e-6):
    x, t = x.astype(np.float64), t.astype(np.float64)
    return (np.asarray(fn(x + h * t)) - np.asarray(fn(x - h * t))) / (2 * h)


def test_float32_tangent_of_an_array_output():
    out, out_dot = s2s.jvp(clipped, (X,), (T,))
    assert out.dtype == np.float32 and out_dot.dtype == np.float32
    np.testing.assert_allclose(out_dot, _central(clipped, X, T), rtol=1e-5)


def test_float32_tangents_of_a_dict_output():
    out, out_dot = s2s.jvp(as_dict, (X,), (T,))
    assert out_dot["floor"].dtype == np.float32 and isinstance(out_dot["first"], np.float32)
    np.testing.assert_allclose(out_dot["floor"], _central(lambda x: as_dict(x)["floor"], X, T), rtol=1e-5)
    np.testing.assert_allclose(out_dot["first"], _central(lambda x: as_dict(x)["first"], X, T), rtol=1e-5)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_float64_tangents_stay_float64(backend):
    out, out_dot = s2s.jvp(clipped, (X.astype(np.float64),), (T.astype(np.float64),), backend=backend)
    assert out_dot.dtype == np.float64
    np.testing.assert_allclose(out_dot, _central(clipped, X, T), rtol=1e-7)
