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
