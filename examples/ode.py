"""Fit the damping of a pendulum: a loop-heavy ODE solved with explicit Euler steps.

The loss integrates theta'' = -g/L sin(theta) - c theta' over 2000 steps and compares
the final state with an observation. s2s differentiates through the time loop; the
gradient is checked against finite differences, then used to fit c.

Run it: python examples/ode.py
"""

import math

import numpy as np

import s2s

__s2s__ = ["final_state_loss", "final_state"]

# Shape-typed annotations say each argument's kind (how many dimensions): `s2s transform` and
# `s2s show` then write the module that s2s.jit compiles for such arguments (generated/).
Vector = np.ndarray[tuple[int], np.dtype[np.float64]]

GRAVITY = 9.81


def pendulum_rhs(theta: float, omega: float, damping: float, length: float):
    return omega, -GRAVITY / length * math.sin(theta) - damping * omega


def final_state(params: Vector, theta0: float, omega0: float, steps: int, dt: float):
    """The state (theta, omega) after `steps` Euler steps."""
    damping, length = params
    theta = theta0
    omega = omega0
    for step in range(steps):
        dtheta, domega = pendulum_rhs(theta, omega, damping, length)
        theta = theta + dt * dtheta
        omega = omega + dt * domega
    return np.array([theta, omega])


def final_state_loss(params: Vector, theta0: float, omega0: float, target: Vector, steps: int, dt: float):
    return np.sum((final_state(params, theta0, omega0, steps, dt) - target) ** 2)


def main():
    steps, dt = 2000, 0.001
    theta0, omega0 = 1.0, 0.0
    target = np.array([0.2, -1.0])
    params = np.array([0.3, 1.2])

    grad = s2s.jit(s2s.grad(final_state_loss))
    g = grad(params, theta0, omega0, target, steps, dt)
    eps = 1e-6
    fd = np.array([
        (final_state_loss(params + eps * e, theta0, omega0, target, steps, dt)
         - final_state_loss(params - eps * e, theta0, omega0, target, steps, dt)) / (2 * eps)
        for e in np.eye(2)
    ])
    print("gradient:", g, " finite differences:", fd)
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-8)

    # Sensitivities of the final state to (damping, length), by forward mode.
    sensitivities = s2s.jit(s2s.jacfwd(final_state))(params, theta0, omega0, steps, dt)
    fd = np.stack([
        (final_state(params + eps * e, theta0, omega0, steps, dt)
         - final_state(params - eps * e, theta0, omega0, steps, dt)) / (2 * eps)
        for e in np.eye(2)
    ], axis=1)
    print("d(theta, omega)/d(damping, length):\n", sensitivities)
    assert np.allclose(sensitivities, fd, rtol=1e-5, atol=1e-8)

    # Fit the damping with the length fixed, by gradient descent.
    for it in range(200):
        g = grad(params, theta0, omega0, target, steps, dt)
        params = params - np.array([0.05, 0.0]) * g
        if it % 50 == 0:
            print(f"iteration {it:3d}  loss {final_state_loss(params, theta0, omega0, target, steps, dt):.6f}"
                  f"  damping {params[0]:.4f}")
    print("fitted damping:", round(float(params[0]), 4))


if __name__ == "__main__":
    main()
