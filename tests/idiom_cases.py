"""Programs for tests/test_program_idioms.py (s2s reads their source)."""

import numpy as np

import s2s


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


# A small graph network: the constants in a module-level dict, one scan step per dict of inputs,
# messages summed into their nodes with np.add.at and averaged by np.bincount's degrees, and a
# weight bound on one path only, read under a later condition.
GRAPH = {"src": np.array([0, 1, 2, 2, 3]), "dst": np.array([1, 2, 0, 1, 1]),
         "W": np.array([[0.5, -0.2], [0.1, 0.3]]), "scale": 0.7}


def message_passing(h, gains, biases):
    def step(h, x):
        messages = np.tanh(h[GRAPH["src"]] @ GRAPH["W"]) * x["gain"]
        incoming = np.zeros_like(h)
        np.add.at(incoming, GRAPH["dst"], messages)
        degree = np.bincount(GRAPH["dst"], minlength=4)
        h = h + GRAPH["scale"] * incoming / np.maximum(degree, 1)[:, None] + x["bias"]
        return h, np.sum(h * h)

    inputs = {"gain": gains, "bias": biases}
    h, energies = s2s.lax.scan(step, h, inputs)
    ok = energies[-1] > 1.0
    if ok:
        w = np.exp(-0.1 * energies[-1])
        ok = w > 0.5
    if ok:
        return w * np.sum(h)
    return np.sum(h) + np.sum(energies)
