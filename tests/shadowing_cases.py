"""Functions that read module-level names which s2s's own code could reuse for variables it
introduces (a scan's stacked outputs `ys` and saved carry `c_init`, an inlined body's
parameters, vectorised vmap's batch size `n`): tests/test_names_and_wrappers.py; and values whose
type is an int on one path and a float on another (a scan's carry: tests/test_lax_carries.py; a
function's result: tests/test_vmap_batching.py)."""

import numpy as np

from s2s import lax

ys = np.array([1.0, 2.0])
n = 4.0
s = 5.0
c = 3.0
c_init = 5.0


def scan_then_module_ys(x):  # f = 3 x
    _, hs = lax.scan(lambda c, v: (c, v * x), 0.0, np.ones(2))
    return np.sum(hs * ys)


def fori_then_module_s(x):  # f = 3 x * 5
    def body(k, s):
        return s + x * k
    r = lax.fori_loop(0, 3, body, 0.0)
    return r * s


def scan_then_module_c(x):  # f = 2 x * 3
    _, hs = lax.scan(lambda c, u: (c + u, u * x), 0.0, np.ones(2))
    return np.sum(hs) * c


def scan_then_module_c_init(x):  # f = 2 x * 5 + 2 x
    cc, hs = lax.scan(lambda c, u: (c + u * x, u * x), 0.0, np.ones(2))
    return cc * c_init + np.sum(hs)


def times_module_n(x):  # f = 4 x
    return x * n


def int_carry_scan(xs):
    def body(c, x):
        return c + x, c
    _, hs = lax.scan(body, 0, xs)
    return np.sum(hs * xs)


def zero_or_excess(s, k):  # an int on one branch, a float on the other
    if s < k:
        return 0
    return s - k
