"""Newton's method on a small nonlinear system, with the Jacobian from s2s.jacfwd.

Solves  x0^2 + x1^2 + x2^2 = 3,  exp(x0) + x1 = e + 1,  x0 x2 - sin(x1) = 1 - sin(1)
(root at x = (1, 1, 1)) starting from (0.5, 0.5, 0.5).

Run it: python examples/newton.py
"""

import math

import numpy as np

import s2s

__s2s__ = ["residual"]


def residual(x):
    r = np.zeros(3)
    r[0] = x[0] * x[0] + x[1] * x[1] + x[2] * x[2] - 3.0
    r[1] = np.exp(x[0]) + x[1] - math.e - 1.0
    r[2] = x[0] * x[2] - np.sin(x[1]) - 1.0 + math.sin(1.0)
    return r


def main():
    jacobian = s2s.jit(s2s.jacfwd(residual))  # forward mode, compiled by numba.njit
    x = np.array([0.5, 0.5, 0.5])

    eps = 1e-6
    fd = np.stack([(residual(x + eps * e) - residual(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
    error = np.max(np.abs(jacobian(x) - fd))
    print(f"Jacobian vs finite differences: max abs difference {error:.2e}")
    assert error < 1e-6

    for it in range(8):
        r = residual(x)
        print(f"iteration {it}  |r| = {np.linalg.norm(r):.3e}  x = {np.round(x, 6)}")
        if np.linalg.norm(r) < 1e-12:
            break
        x = x - np.linalg.solve(jacobian(x), r)
    print("root:", x)


if __name__ == "__main__":
    main()
