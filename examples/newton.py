"""Newton's method, with derivatives from s2s.

1. A nonlinear system with the Jacobian from s2s.jacfwd: solves
   x0^2 + x1^2 + x2^2 = 3,  exp(x0) + x1 = e + 1,  x0 x2 - sin(x1) = 1 - sin(1)
   (root at x = (1, 1, 1)) starting from (0.5, 0.5, 0.5).
2. A minimisation with the Hessian from s2s.hessian (forward mode over the generated reverse
   code): the Rosenbrock function, minimum at (1, 1), from (-1.2, 1).

Run it: python examples/newton.py
"""

import math

import numpy as np

import s2s

__s2s__ = ["residual", "rosenbrock"]

# Shape-typed annotations say each argument's kind (how many dimensions): `s2s transform` and
# `s2s show` then write the module that s2s.jit compiles for such arguments (generated/).
Vector = np.ndarray[tuple[int], np.dtype[np.float64]]


def residual(x: Vector):
    r = np.zeros(3)
    r[0] = x[0] * x[0] + x[1] * x[1] + x[2] * x[2] - 3.0
    r[1] = np.exp(x[0]) + x[1] - math.e - 1.0
    r[2] = x[0] * x[2] - np.sin(x[1]) - 1.0 + math.sin(1.0)
    return r


def rosenbrock(x: Vector):
    total = 0.0
    for i in range(x.shape[0] - 1):
        total = total + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


def minimise():
    grad = s2s.jit(s2s.grad(rosenbrock))
    hessian = s2s.jit(s2s.hessian(rosenbrock))
    x = np.array([-1.2, 1.0])
    expected = np.array([[1330.0, 480.0], [480.0, 200.0]])  # known in closed form at (-1.2, 1)
    assert np.allclose(hessian(x), expected), hessian(x)
    for it in range(30):
        g = grad(x)
        print(f"iteration {it:2d}  f = {rosenbrock(x):.3e}  |grad| = {np.linalg.norm(g):.3e}")
        if np.linalg.norm(g) < 1e-10:
            break
        step = np.linalg.solve(hessian(x), g)
        t = 1.0  # backtracking keeps each Newton step a descent step
        while rosenbrock(x - t * step) > rosenbrock(x) and t > 1e-8:
            t = t / 2
        x = x - t * step
    print("minimum:", x)


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
    minimise()


if __name__ == "__main__":
    main()
