"""Programs for tests/test_program_idioms.py (s2s reads their source)."""

import numpy as np


def scaled_square(x, a=2.0):  # a default the call leaves out
    return np.sum(x ** 2) * a


def appended_squares(x):
    vals = []
    for i in range(x.shape[0]):
        vals.append(x[i] ** 2)
    return np.sum(np.array(vals))


def horner_backwards(x):
    s = 0.0
    for i in reversed(range(x.shape[0])):
        s = s * 0.5 + x[i]
    return s


def strided_backwards(x, k):
    s = 0.0
    for i in reversed(range(1, x.shape[0], k)):
        s = s * 0.5 + x[i] * i
    return s


def tuple_state(x0, v0):
    s = (x0, v0)
    for i in range(3):
        s = (s[0] + 0.1 * s[1], s[1] - 0.1 * s[0])
    return np.sum(s[0] ** 2)


def sine_layers(ws, x):  # a list of arrays of different shapes, not mapped by vmap
    s = 0.0
    for w in ws:
        s = s + np.sum(np.sin(w * x))
    return s


def least_squares(w, x):
    return np.mean((x @ w - 1.0) ** 2)


def builtin_max(x):
    return max(x)


def repeated_scaling(x, a):
    for t in range(2):
        x = x * a
    return np.sum(x)


def energy_and_forces(x, c):  # (value, aux), as jax.hessian(..., has_aux=True) takes
    return np.sum(np.sin(x) * x ** 2) * c, np.cos(x)
