"""Checks that several test files share: a function's derivatives in every mode against central
differences (check_all), and that a refusal's reason names the user's variables, never s2s's
temporaries (assert_names_the_user)."""

import re

import numpy as np

import s2s
from finite_differences import central_differences


def close(a, b):
    """a against b (central differences), to the tolerance of check_all."""
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def check_all(f, x, jit=True):
    """The gradient of the scalar f at x (s2s.grad, and s2s.jit(s2s.grad(f)) unless jit=False),
    its Jacobian in forward mode and s2s.jvp along each axis, against central differences."""
    expected = central_differences(f, x)
    close(s2s.grad(f)(x), expected)
    if jit:
        close(s2s.jit(s2s.grad(f))(x), expected)
    close(s2s.jacfwd(f)(x), expected)
    for k in range(x.size):  # s2s.jvp along each axis
        e = np.zeros_like(x)
        e[k] = 1.0
        value, tangent = s2s.jvp(f, (x,), (e,))
        np.testing.assert_allclose(value, f(x), rtol=1e-12)
        np.testing.assert_allclose(tangent, expected[k], rtol=1e-6, atol=1e-7)


TEMPORARIES = re.compile(r"\b(_t\d+|\w+_\d+|\w+_init)\b")  # s2s's names: _t3, v_2, acc_2, v_2_init


def assert_names_the_user(error, *names):
    """The S2SError's reason names each of the user's names, and none of s2s's temporaries."""
    reason = error.reason
    for name in names:
        assert re.search(rf"\b{name}\b", reason), reason
    assert not TEMPORARIES.search(reason), reason


PROGRESS = re.compile(r"^s2s: (writing|compiling) .*( \.\.\.|: (done in|stopped after) [0-9.]+ s)$")


def without_progress(stderr: str) -> str:
    """stderr without s2s's progress lines (said when work takes over a second, as it may on a busy machine)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not PROGRESS.match(line.rstrip("\n")))
