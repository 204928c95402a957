"""Central finite differences, the reference the tests check gradients against."""

import numpy as np


def central_difference_grad(fun, args, k, h=1e-6):
    """The gradient of the scalar fun(*args) with respect to args[k], one component at a
    time (args[k] a number or an array; a number is passed as a 0-d array)."""
    x = np.array(args[k], dtype=float)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = list(args), list(args)
        up[k], down[k] = x.copy(), x.copy()
        up[k][index] += h
        down[k][index] -= h
        grad[index] = (fun(*up) - fun(*down)) / (2 * h)
    return grad
