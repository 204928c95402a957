"""The Python around the maths that only concerns warnings: `with np.errstate(...)`,
`with warnings.catch_warnings():` (and the filters set inside it), `warnings.warn(...)`. Their
bodies are differentiated as NumPy runs them, in every mode; what else a `with` statement or a
warnings call could do is refused at the user's line."""

import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

X = np.array([0.3, 0.6, 2.0])
DIRECTION = np.array([0.5, -1.0, 0.25])


def log_where_defined(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) * 2.0
        z = np.where(x > 0, y, 0.0)
    return np.sum(z * x)


def log_with_filters(x):
    total = 0.0
    for k in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            total = total + np.sum(np.log(x) * k)
    return total


def warns_when_large(x):
    if np.any(x > 1.5):
        warnings.warn("x is large", RuntimeWarning)
    if np.any(x > 100.0):
        warnings.warn(f"x reaches {np.max(x)}", stacklevel=2)  # (a formatted message: its text)
    with np.printoptions(precision=3), np.errstate(over="ignore"):
        s = np.sum(np.exp(x) ** 2)
    return s


FUNCTIONS = [log_where_defined, log_with_filters, warns_when_large]


@pytest.mark.parametrize("fun", FUNCTIONS, ids=lambda f: f.__name__)
def test_bodies_differentiate_in_every_mode(fun):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = central_difference_grad(fun, (X,), 0)
        np.testing.assert_allclose(s2s.grad(fun)(X), want, rtol=1e-6)
        np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(X), want, rtol=1e-6)
        assert s2s.jvp(fun, (X,), (DIRECTION,))[1] == pytest.approx(want @ DIRECTION, rel=1e-6)
        xs = np.stack([X, X * 0.5])
        np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)))(xs),
                                   [want, central_difference_grad(fun, (X * 0.5,), 0)], rtol=1e-6)


def test_a_warning_is_given_where_numpy_gives_it():
    with pytest.warns(RuntimeWarning, match="x is large"):
        s2s.grad(warns_when_large)(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2s.grad(warns_when_large)(X * 0.1)  # the branch not taken warns of nothing
    assert 'runtime.warn("x is large", "RuntimeWarning")' in s2s.source(s2s.grad(warns_when_large))
    with pytest.warns(UserWarning, match=r"x reaches \{np.max\(x\)\}"):
        s2s.grad(warns_when_large)(X * 100.0)


def test_filters_inside_catch_warnings_end_with_it():
    before = list(warnings.filters)
    s2s.grad(log_with_filters)(X)
    assert warnings.filters == before
    assert "simplefilter" not in s2s.source(s2s.grad(log_with_filters))


def sets_a_filter(x):
    warnings.simplefilter("ignore")
    return np.sum(x ** 2)


def opens_a_file(x):
    with open("values.txt") as handle:
        handle.write("x")
    return np.sum(x)


def names_the_manager(x):
    with np.errstate(all="ignore") as state:
        y = np.log(x)
    return np.sum(y)


@pytest.mark.parametrize("fun, words", [
    (sets_a_filter, r"warnings.simplefilter\(...\) changes the warnings of the whole process"),
    (opens_a_file, r"with statements are not supported, except np.errstate"),
    (names_the_manager, r"with statements are not supported, except np.errstate"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_what_else_they_could_do_is_refused_at_the_line(fun, words):
    with pytest.raises(s2s.S2SError, match=r"test_warning_statements.py:\d+:\d+: " + words):
        s2s.grad(fun)(X)
