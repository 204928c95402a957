"""Hand-written Numba adjoints, the reference for "as fast as hand-written derivative code"."""

import numba
import numpy as np


@numba.njit(cache=True)
def ode_euler_grad(params, y0, steps, dt):
    a, b, c, d = params[0], params[1], params[2], params[3]
    xs = np.empty(steps + 1)
    ys = np.empty(steps + 1)
    x, y = y0[0], y0[1]
    xs[0], ys[0] = x, y
    for k in range(steps):
        dx = a * x - b * x * y
        dy = d * x * y - c * y
        x = x + dt * dx
        y = y + dt * dy
        xs[k + 1], ys[k + 1] = x, y
    xb, yb = 2.0 * (x - 1.0), 2.0 * (y - 0.5)
    ab = bb = cb = db = 0.0
    for k in range(steps - 1, -1, -1):
        x, y = xs[k], ys[k]
        dxb, dyb = dt * xb, dt * yb
        ab += dxb * x
        bb -= dxb * x * y
        db += dyb * x * y
        cb -= dyb * y
        xb, yb = xb + dxb * (a - b * y) + dyb * d * y, yb - dxb * b * x + dyb * (d * x - c)
    return np.array([ab, bb, cb, db])


@numba.njit(cache=True)
def nbody_energy_grad(pos, mass):
    n = pos.shape[0]
    g = np.zeros_like(pos)
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz + 0.01
            coef = mass[i] * mass[j] / (r2 * np.sqrt(r2))
            g[i, 0] += coef * dx
            g[i, 1] += coef * dy
            g[i, 2] += coef * dz
            g[j, 0] -= coef * dx
            g[j, 1] -= coef * dy
            g[j, 2] -= coef * dz
    return g
