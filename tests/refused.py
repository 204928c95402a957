"""Programs s2s must refuse with an S2SError naming file, line and column."""

import numpy as np

COUNTER = [0]


def uses_try(x):
    try:
        y = x * 2.0
    except ValueError as err:  # noqa: F841
        y = x
    return y


def uses_with(x):
    with open("f") as handle:
        y = x
    return y


def uses_global(x):
    global COUNTER
    return x


def uses_nonlocal(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v
        return total
    return add(x)


def uses_yield(x):
    yield x


def uses_lambda(x):
    fs = [lambda t: t * 2.0]  # (a lambda assigned once to a name is a nested function)
    return fs[0](x)


def uses_class(x):
    class Box:
        pass
    return x


def uses_comprehension(x):
    seen = {t * 2.0 for t in x}  # (list and dict comprehensions are supported, a set one is not)
    return np.sum(x) * len(seen)


def no_rule(x):
    return np.sum(np.unwrap(x))


def complex_fft(x):
    return np.sum(np.fft.fft(x).real)


def complex_literal(x):
    return np.sum(np.real(x * 1j))


def complex_made(x):
    c = complex(1.0, 2.0) * 2.0
    return np.sum(np.abs(x + c))


def writes_argument(x):
    y = x  # a write into the argument through another name (a direct x[0] = ... works on a private copy)
    y[0] = 1.0
    return np.sum(x)


def writes_through_alias(x):
    y = np.zeros(3)
    z = y
    y[0] = x
    return np.sum(z) + y[1]


def augmented_alias(x):
    y = x * 1.0
    z = y
    y += 1.0
    return np.sum(z * y)


def augmented_scalar_alias(x):
    y = x * 1.0
    z = y
    y += 1.0
    return z * y


def update_after_element(x):
    # y = x[1]: a number for a 1-d x (the update leaves it alone), a row view for a 2-d x
    # (NumPy's `x += ...` changes it too, which s2s refuses when it runs)
    x = x * 2.0
    y = x[1]
    x += 3.0
    return np.sum(y * x)


def update_after_element_on_one_branch(x, c):
    # y is not bound where `x += ...` runs when c <= 0: the check cannot read it
    x = x * 2.0
    if c > 0.0:
        y = x[1]
    x += 3.0
    z = np.sum(x)
    if c > 0.0:
        z = z * y
    return z


def arange_of_active(x):
    return np.sum(np.arange(x, 5.0))


def recursive(x, n):
    if n == 0:
        return x
    return recursive(x * 2.0, n - 1)


def bare_return(x):
    return


def add_through_alias(x):
    y = np.zeros(3)
    z = y
    z += x
    return np.sum(y * x)


def make_scaled(c):
    def scaled(x):
        return c * np.sum(x**2)

    return scaled


TABLE = np.zeros(3)


def writes_module_array(x):
    TABLE[0] = x
    return np.sum(TABLE)


def writes_module_array_through_alias(x):
    t = TABLE
    t[1] = x
    return np.sum(t)


def norm_of_unknown_order(x):
    return np.linalg.norm(x, ord="max")


def reads_a_dict_global(x):
    return x * SETTINGS


SETTINGS = {"scale": 2.0}


class ShapeError(Exception):
    pass


def raises_own_exception(x):
    if x.ndim != 1:
        raise ShapeError("x must be 1-d")
    return np.sum(x)


def raises_a_computed_message(x):
    if x.ndim != 1:
        raise ValueError("x must be 1-d, got " + str(x.ndim))
    return np.sum(x)


def raises_again(x):
    if x.ndim != 1:
        raise
    return np.sum(x)


def in_a_computed_tuple(x, mode):
    if mode in (mode, "b"):
        return np.sum(x)
    return np.sum(x ** 2)
