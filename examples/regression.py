"""Linear regression by gradient descent, as in the JAX tutorial, with s2s.

Run it: python examples/regression.py
"""

import numpy as np

import s2s

__s2s__ = ["loss"]

# Shape-typed annotations say each argument's kind (how many dimensions): `s2s transform` and
# `s2s show` then write the module that s2s.jit compiles for such arguments (generated/).
Vector = np.ndarray[tuple[int], np.dtype[np.float64]]
Matrix = np.ndarray[tuple[int, int], np.dtype[np.float64]]


def loss(params: tuple[Vector, float], x: Matrix, y: Vector):
    w, b = params
    pred = x @ w + b
    return np.mean((pred - y) ** 2)


def finite_difference_grad(params, x, y, eps=1e-6):
    """Central differences, for an independent check of the gradient."""
    w, b = params
    gw = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = eps
        gw[i] = (loss((w + e, b), x, y) - loss((w - e, b), x, y)) / (2 * eps)
    gb = (loss((w, b + eps), x, y) - loss((w, b - eps), x, y)) / (2 * eps)
    return gw, gb


def main():
    rng = np.random.default_rng(0)
    true_w, true_b = np.array([2.0, -3.4, 1.5]), 4.2
    x = rng.normal(size=(1000, 3))
    y = x @ true_w + true_b + 0.1 * rng.normal(size=1000)

    grad_loss = s2s.jit(s2s.grad(loss))  # compiled by numba.njit
    params = (np.zeros(3), 0.0)

    gw, gb = grad_loss(params, x, y)
    fw, fb = finite_difference_grad(params, x, y)
    error = max(np.max(np.abs(gw - fw)), abs(gb - fb))
    print(f"gradient vs finite differences: max abs difference {error:.2e}")
    assert error < 1e-6, "the gradient disagrees with finite differences"

    learning_rate = 0.1
    for epoch in range(301):
        gw, gb = grad_loss(params, x, y)
        params = (params[0] - learning_rate * gw, params[1] - learning_rate * gb)
        if epoch % 50 == 0:
            print(f"epoch {epoch:3d}  loss {loss(params, x, y):.6f}")
    w, b = params
    print("recovered w:", np.round(w, 3), " b:", round(float(b), 3))
    print("true      w:", true_w, " b:", true_b)


if __name__ == "__main__":
    main()
