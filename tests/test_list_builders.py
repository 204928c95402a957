"""list(x), xs.extend(ys) of any sequence, and loops over sequences that cannot be dicts:
derivatives against central differences, in both modes and under s2s.jit."""

import numpy as np
import pytest

import s2s

from finite_differences import central_differences

X = np.array([0.3, 0.7, 1.1])


def extended_by_a_list_and_an_array(x):
    ys = [x[0]]
    t = [x[1], x[2] * x[0]]
    ys.extend(t)
    ys.extend(np.sin(x[:2]))
    return ys[-1] * ys[0] + ys[2] * ys[3]


def listed_then_appended(x):
    t = list(x)
    t.append(t[0] * t[2])
    return t[0] * t[1] + t[-1]


def listed_generator(x):
    t = list(v * v for v in x)
    return t[0] * t[2] + t[1]


def extended_in_a_loop(x):
    xs = []
    for i in range(3):
        x = np.cos(x) * 0.9
        xs.extend([x, x * 2.0])
    return np.sum(np.array(xs) ** 2)


def listed_rows(x):
    rows = list(np.outer(x, x))
    return np.sum(rows[1] * rows[2])


CASES = [extended_by_a_list_and_an_array, listed_then_appended, listed_generator, extended_in_a_loop, listed_rows]
TRANSFORMS = {
    "grad": s2s.grad,
    "jacfwd": s2s.jacfwd,
    "jit grad": lambda f: s2s.jit(s2s.grad(f)),
    "jit jacfwd": lambda f: s2s.jit(s2s.jacfwd(f)),
}


@pytest.mark.parametrize("transform", list(TRANSFORMS), ids=str)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_derivatives(f, transform):
    np.testing.assert_allclose(TRANSFORMS[transform](f)(X), central_differences(f, X), rtol=1e-6, atol=1e-8)


def test_list_of_x_is_a_loop_that_appends():
    grad = s2s.grad(listed_then_appended)
    grad(X)
    source = s2s.source(grad)
    assert "    t = []\n" in source and "t.append(_item)" in source


def loops(x):
    vals = [x[0], x[1] * 2.0]
    s = 0.0
    for v in vals:
        s = s + v * v
    for v in x:
        s = s + np.sin(v)
    for r in np.cos(x):
        s = s + r
    return s


def test_only_a_loop_over_what_may_be_a_dict_is_checked():
    grad = s2s.grad(loops)
    np.testing.assert_allclose(grad(X), central_differences(loops, X), rtol=1e-6, atol=1e-8)
    source = s2s.source(grad)
    # x is an argument (it could be a dict); vals is a list and np.cos(x) an array
    assert source.count("runtime.require_not_dict(") == 1
    assert 'runtime.require_not_dict(_seq, "test_list_builders.py:' in source  # (the loop over x)


def test_a_dict_argument_is_still_refused():
    def total(d):
        s = 0.0
        for v in d:
            s = s + v
        return s
    with pytest.raises(s2s.S2SError, match=r"test_list_builders.py:\d+: a loop over a dict whose body does not index"):
        s2s.grad(total)({1: 2.0, 0: 3.0})


def inserted(x):
    t = [x[0]]
    t.insert(0, x[1])
    return t[0] * t[1]


def test_other_in_place_list_methods_are_refused_by_name():
    with pytest.raises(s2s.S2SError, match=r"list\.insert\(\) is not supported.*\.append, \.extend or a comprehension") \
            as info:
        s2s.grad(inserted)(X)
    assert "test_list_builders.py:" in str(info.value) and "t.insert(0, x[1])" in str(info.value)
