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


def central_differences(fun, x, h=1e-6):
    """The gradient of the scalar fun(x) of one array x."""
    return central_difference_grad(fun, (x,), 0, h)


def hessian_by_differences(fun, x, h=1e-4):
    """The Hessian of the scalar fun(x): central differences of central_differences, row by row."""
    return np.array([(central_differences(fun, x + h * e) - central_differences(fun, x - h * e)) / (2 * h)
                     for e in np.eye(x.size)])


def where(fun, text):
    """How an S2SError names the line of fun's source that holds text: `file.py:line:`."""
    import inspect
    import os

    lines, first = inspect.getsourcelines(fun)
    line = first + next(k for k, source in enumerate(lines) if text in source)
    return f"{os.path.basename(inspect.getsourcefile(fun))}:{line}:"
