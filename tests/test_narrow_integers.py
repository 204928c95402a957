"""Arithmetic of integers narrower than 64 bits under s2s.jit.

NumPy 2 computes `u - 3` of a uint8 array in uint8 and wraps (1 - 3 is 254); Numba computes it
in int64 (-2), also in its fused loops where it infers int8. s2s.jit refuses such a statement at
the user's line (backends/numba_pipeline.py, UnlikeNumPyArithmetic), for 8- and 16-bit
integers; narrow integers used as indexes, compared, combined with floats or int64 arrays (where
NumPy's result is not narrow), or whose result is stored in an array of NumPy's dtype (which
wraps it), compile and agree with the python backend. 32-bit integers are not checked.
"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

X = np.linspace(0.5, 2.0, 4)
U8 = np.array([1, 2, 250, 4], dtype=np.uint8)
I8 = np.array([100, -128, 3, 4], dtype=np.int8)  # (a + a: -56, 0, 6, 8; -a: -100, -128, -3, -4)


def shifted(x, u):
    return np.sum((u - 3) * x)


def looped(x, u):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + (u[i] + 250) * x[i]
    return s


def doubled(x, a):
    return np.sum((a + a) * x)


def counted(x, u):
    total = 0  # a Python int plus np.uint8 is np.uint8 in NumPy 2
    for i in range(u.shape[0]):
        total = total + u[i]
    return total * np.sum(x)


def branchy(x, u):
    s = 0.0
    for i in range(x.shape[0]):
        v = u[i] if x[i] > 1.0 else 0  # np.uint8 on one branch, a Python int on the other
        s = s + (v + 1) * x[i]
    return s


def negated(x, a):
    return np.sum(-a * x)


def converted(x, u):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + (int(u[i]) + 250) * x[i]  # a Python int: NumPy does not wrap
    return s


def widened(x, u):
    return np.sum((u.astype(np.int64) - 3) * x * x)


def stored(x, u):
    w = np.zeros(4, dtype=np.uint8)
    w += u  # uint8 arrays: Numba's sum is uint8 too, stored, so wrapped as NumPy's
    v = u + w
    for i in range(4):
        w[i] = w[i] + 250  # computed in int64, stored in uint8: wrapped
    return np.sum(w * v * x * x)


def shifted_in_place(x, u):
    w = u.copy()
    w -= 3  # (s2s writes w = w - 3, which Numba computes in int64)
    return np.sum(w * x)


def indexes32(x, idx):
    s = 0.0
    for i in range(idx.shape[0]):
        s = s + x[idx[i] + 1] ** 2  # int32: left as int64 is (they differ beyond 2^31)
    return s


def scaled(x, u):
    return np.sum(u / 255.0 * x * x)


def indexed(x, idx):
    s = 0.0
    for i in range(idx.shape[0]):
        s = s + x[idx[i]] * x[idx[i]]
    return s


def accumulated(x, u, acc):
    for i in range(u.shape[0]):
        acc[i] = acc[i] + u[i]  # int64 array element + np.uint8: int64 in NumPy too
    return np.sum(acc * x * x)


def _line(fun, text):
    import inspect

    lines, first = inspect.getsourcelines(fun)
    return first + next(k for k, line in enumerate(lines) if text in line)


ONLY_THE_PRIMAL = (doubled, negated)  # their gradient's module names a + a, so it is stored, and wraps


@pytest.mark.parametrize("fun, args, statement, says", [
    (shifted, (X, U8), "(u - 3)", "`-` of uint8 numbers: NumPy computes it in uint8 and wraps at 8 bits"),
    (looped, (X, U8), "(u[i] + 250)", "`+` of uint8 numbers"),
    (doubled, (X, I8), "(a + a)", "`+` of int8 numbers: NumPy computes it in int8"),
    (counted, (X, U8), "total + u[i]", "`+` of uint8 numbers"),
    (branchy, (X, U8), "(v + 1)", "`+` of uint8 numbers"),
    (negated, (X, I8), "-a * x", "`-` of int8 numbers"),
    (shifted_in_place, (X, U8), "w -= 3", "`-` of uint8 numbers"),
])
def test_arithmetic_that_numpy_wraps_is_refused_at_the_line(fun, args, statement, says):
    # (the python backend computes NumPy's wrapped numbers: 1 - 3 is 254 in uint8)
    assert s2s.grad(shifted)(X, U8)[0] == 254.0
    for transform in (lambda f: f,) if fun in ONLY_THE_PRIMAL else (lambda f: f, s2s.grad):
        with pytest.raises(s2s.S2SError, match=r"astype\(np.int64\)") as caught:
            s2s.jit(transform(fun))(*args)
        assert says in str(caught.value)
        assert caught.value.origin.line == _line(fun, statement)


@pytest.mark.parametrize("fun, args", [
    (scaled, (X, U8)),
    (indexed, (X, np.array([0, 3, 1, 3], dtype=np.int32))),
    (accumulated, (X, U8, np.zeros(4, dtype=np.int64))),
    (converted, (X, U8)),
    (stored, (X, U8)),
    (doubled, (X, I8)),
    (negated, (X, I8)),
    (indexes32, (X, np.array([0, 2, 1, 2], dtype=np.int32))),
    (widened, (X, U8)),
])
def test_narrow_integers_that_numpy_does_not_keep_narrow_compile(fun, args):
    want = s2s.grad(fun)(*[np.copy(a) for a in args])
    got = s2s.jit(s2s.grad(fun))(*[np.copy(a) for a in args])
    np.testing.assert_allclose(got, want, rtol=1e-14)
    differences = central_difference_grad(lambda x, *rest: fun(x, *[np.copy(a) for a in rest]), args, 0)
    np.testing.assert_allclose(got, differences, rtol=1e-6)
