"""The cpu backend inlines small wrappers into their one caller (backends/loading.py,
inlined_functions): which generated functions Numba compiles with inline="always", and that
code with such wrappers computes what the python backend does."""

import numpy as np

import s2s
from s2s.backends.loading import INLINED_STATEMENTS, inlined_functions

SOURCE = '''
def wrapper(a, b):
    value, adjoints = vjp(a, b, 1.0)
    return adjoints[0]


def vjp(a, b, out_bar):
    return (a * b, (out_bar * b,))


def called_twice(x):
    return x + 1.0


def with_a_loop(x):
    for i in range(3):
        x = x + i
    return x


def passed_as_a_value(x):
    return x


def parallel_body(x):
    return x * 2.0


def driver(x):
    return parallel_body(x)


def long(x):
''' + "".join(f"    x = x + {k}.0\n" for k in range(INLINED_STATEMENTS + 1)) + '''    return x


def entry(a, b):
    g = wrapper(a, b)
    return called_twice(g) + called_twice(a) + with_a_loop(b) + long(a) + runtime.apply(passed_as_a_value, a)
'''


def test_small_wrappers_with_one_caller_are_inlined_and_nothing_else():
    assert inlined_functions(SOURCE, ("driver",)) == {"wrapper", "vjp"}
    assert inlined_functions(SOURCE) == {"wrapper", "vjp", "parallel_body"}


def step(w, x):
    grad_fn = s2s.value_and_grad(energy)
    value, g = grad_fn(w, x)
    return w - 0.5 * g, value


def energy(w, x):
    return np.sum(np.tanh(w * x) ** 2)


def test_a_compiled_function_with_inlined_wrappers_computes_what_python_does():
    w, x = np.array([0.3, -0.2, 0.8]), np.array([1.0, 2.0, -1.5])
    jitted = s2s.jit(step)
    got, value = jitted(w, x)
    assert {"energy_value_and_grad_w"} <= inlined_functions(s2s.source(jitted))
    want, want_value = s2s.jit(step, backend="python")(w, x)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert value == want_value
    # and against the closed form: d/dw sum(tanh(w x)^2) = 2 tanh(w x) (1 - tanh(w x)^2) x
    t = np.tanh(w * x)
    np.testing.assert_allclose(got, w - 0.5 * 2 * t * (1 - t ** 2) * x, rtol=1e-13)
