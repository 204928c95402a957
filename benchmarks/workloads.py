"""The benchmark workloads, as a user writes them: plain NumPy with loops.

s2s reads this file, so each workload is a module-level function.
"""

import numpy as np


def ode_euler(params, y0, steps, dt):
    """Lotka-Volterra predator-prey, explicit Euler: loop-heavy, scalar state."""
    a, b, c, d = params
    x = y0[0]
    y = y0[1]
    for step in range(steps):
        dx = a * x - b * x * y
        dy = d * x * y - c * y
        x = x + dt * dx
        y = y + dt * dy
    return (x - 1.0) ** 2 + (y - 0.5) ** 2


def nbody_energy(pos, mass):
    """Gravitational potential energy of n bodies, pairwise loops."""
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            energy = energy - mass[i] * mass[j] / np.sqrt(dx * dx + dy * dy + dz * dz + 0.01)
    return energy


def monte_carlo_call(params, z, dt):
    """A European call by Monte Carlo: a time-stepping loop per path."""
    s0, sigma = params
    n_paths = z.shape[0]
    n_steps = z.shape[1]
    total = 0.0
    for p in range(n_paths):
        s = s0
        for t in range(n_steps):
            s = s * np.exp(-0.5 * sigma * sigma * dt + sigma * np.sqrt(dt) * z[p, t])
        total = total + max(s - 1.0, 0.0)
    return total / n_paths


def mlp_loss(params, x, onehot):
    """Two-layer MLP with softmax cross-entropy: a numerically stable log-softmax, row by row
    (reductions with axis= and keepdims=, which numba.njit alone rejects)."""
    w1, b1, w2, b2 = params
    hidden = np.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(onehot * logp) / x.shape[0]


def rosenbrock(x):
    """Rosenbrock on many elements: array-heavy, slices."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def heat(u0, alpha, steps):
    """1-D heat equation: slice writes inside a time loop."""
    u = u0.copy()
    for step in range(steps):
        new = u.copy()
        new[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = new
    return np.sum(u * u)
