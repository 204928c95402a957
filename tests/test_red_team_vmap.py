"""Red team of s2s.vmap (python backend, vectorised by batching rules): silent wrong values
found by comparing with the loop over the examples, and with central differences for
vmap(grad(f)). Each case failed before its fix."""

import numpy as np

import s2s
from finite_differences import central_differences

rng = np.random.default_rng(15)


def loop_over(fun, xs):
    """The reference: fun of each example, stacked on axis 0."""
    return np.stack([np.asarray(fun(x)) for x in xs])


W = rng.normal(size=3)


def clip_by_keyword(x):
    return np.clip(x, a_min=-0.5, a_max=W)


def clip_by_keyword_sum(x):
    return np.sum(np.clip(x, a_min=-0.5, a_max=W) ** 2)


def test_an_array_given_by_keyword_is_lifted_like_a_positional_operand():
    # np.clip(x, a_min=-0.5, a_max=W) was written with W as it is, which lines up with the
    # batch axis (last): example b was clipped by W[b] (3 examples of 3 hide the shape error).
    xs = rng.normal(size=(3, 3))
    np.testing.assert_allclose(s2s.vmap(clip_by_keyword)(xs), loop_over(clip_by_keyword, xs))
    got = s2s.vmap(s2s.grad(clip_by_keyword_sum))(xs)
    np.testing.assert_allclose(got, [central_differences(clip_by_keyword_sum, x) for x in xs], atol=1e-6)


def larger_and_smaller(x):
    return max(x[0], x[1]), min(x[0], x[1])


def test_python_max_of_a_nan_keeps_its_first_argument():
    # Python's max(a, b) is a unless b > a: max(1.0, nan) is 1.0. The batching rule wrote
    # np.maximum, which gives nan (s2s.jit and s2s.jit(s2s.vmap(f)) give 1.0).
    xs = np.array([[1.0, np.nan], [np.nan, 1.0], [2.0, 3.0]])
    got = s2s.vmap(larger_and_smaller)(xs)
    expected = [loop_over(lambda x: larger_and_smaller(x)[k], xs) for k in range(2)]
    np.testing.assert_array_equal(got[0], expected[0])  # [1.0, nan, 3.0]
    np.testing.assert_array_equal(got[1], expected[1])  # [1.0, nan, 2.0]
