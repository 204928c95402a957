"""Signatures beyond plain positional parameters: *args (generated code takes it as one tuple,
and argnums count the positional arguments as JAX's), keyword-only parameters (taken by position
after the others, with their defaults where the call leaves them out), **kwargs that only pass an
empty dict on, and f(*t) where the number of t's items is known. Gradients and jvps against
central differences; what cannot be bound is refused with an S2SError at the user's line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, central_differences, hessian_by_differences, where as at

X = np.array([0.3, 0.5, 1.7])
Y = np.array([1.0, 2.0, 3.0])
T = np.array([0.1, -0.2, 0.3])


def product(x, y):
    return np.sum(np.sin(x) * y)


def forwarder(*args, **kwargs):
    return product(*args, **kwargs)


def loss(params, *args):
    x, y = args
    return np.sum((params * x - y) ** 2)


def total(*xs):
    return sum(np.sum(x ** 2) for x in xs)


def scaled(x, *, scale=2.0):
    return np.sum(x * scale) ** 2


def sunpos(dt, lat, *, radians=False):
    if not radians:
        lat = np.deg2rad(lat)
    return np.sum(np.sin(lat) * np.cos(dt))


def shifted(x, *, shift):
    return x + shift


def calls_keyword_helpers(x):
    return np.sum(shifted(x, shift=1.0) ** 2) + scaled(x) + scaled(x, scale=0.5)


def mean_square(*xs):
    return sum(np.mean(x ** 2) for x in xs) / len(xs)


def calls_star_helpers(x, y):
    pair = (x, 2.0 * y)
    return product(*pair) + mean_square(x, y, x * y) + forwarder(y, x)


def passes_its_args_on(w, *args):
    return w * product(*args) + total(*args)


def differences(fun, args, k):
    """Central differences with respect to the k-th positional argument, keywords fixed."""
    return central_difference_grad(fun, args, k)


CASES = [  # (function, positional arguments, keywords, argnums)
    (forwarder, (X, Y), {}, (0, 1)),
    (loss, (X, X, Y), {}, (0, 1, 2)),
    (total, (X, Y, X * Y), {}, (0, 2)),
    (scaled, (X,), {}, (0,)),
    (scaled, (X,), {"scale": 3.0}, (0,)),
    (sunpos, (X, Y), {}, (0, 1)),
    (sunpos, (X, Y), {"radians": True}, (1,)),
    (calls_keyword_helpers, (X,), {}, (0,)),
    (calls_star_helpers, (X, Y), {}, (0, 1)),
    (passes_its_args_on, (1.5, X, Y), {}, (0, 1, 2)),
]


@pytest.mark.parametrize("fun, args, kwargs, argnums", CASES,
                         ids=[f"{c[0].__name__}-{'-'.join(c[2]) or 'positional'}" for c in CASES])
def test_grad_and_jvp_against_central_differences(fun, args, kwargs, argnums):
    def plain(*a):
        return fun(*a, **kwargs)

    grads = s2s.grad(fun, argnums=argnums)(*args, **kwargs)
    for k, g in zip(argnums, grads):
        np.testing.assert_allclose(g, differences(plain, args, k), rtol=1e-6, atol=1e-7)
    for k in argnums:  # jvp along a direction of argument k (keywords take their defaults in jvp)
        if kwargs:
            continue
        tangents = tuple(np.zeros_like(a) if j != k else (T if np.ndim(a) else 1.0) for j, a in enumerate(args))
        out, out_dot = s2s.jvp(fun, args, tangents)
        np.testing.assert_allclose(out, fun(*args), rtol=1e-12)
        np.testing.assert_allclose(out_dot, np.sum(differences(plain, args, k) * (T if np.ndim(args[k]) else 1.0)),
                                   rtol=1e-6, atol=1e-7)


def compiled_spellings(x, y):
    """Several signatures in one compiled program: the callees take *args and keyword-only
    parameters, and so does the entry (jit below)."""
    return passes_its_args_on(0.5, x, y) + calls_keyword_helpers(y) + sunpos(x, y, radians=True)


def test_compiled_gradients_of_star_args_and_keyword_only_parameters():
    expected = [differences(compiled_spellings, (X, Y), k) for k in (0, 1)]
    gx, gy = s2s.jit(s2s.grad(compiled_spellings, argnums=(0, 1)))(X, Y)
    np.testing.assert_allclose(gx, expected[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gy, expected[1], rtol=1e-6, atol=1e-7)
    g = s2s.jit(s2s.grad(loss, argnums=(0, 2)))(X, X, Y)
    np.testing.assert_allclose(g[1], differences(loss, (X, X, Y), 2), rtol=1e-6, atol=1e-7)
    g = s2s.jit(s2s.grad(sunpos))(X, Y, radians=True)
    np.testing.assert_allclose(g, differences(lambda a, b: sunpos(a, b, radians=True), (X, Y), 0), rtol=1e-6,
                               atol=1e-7)
    out, out_dot = s2s.jvp(total, (X, Y), (T, T), backend="cpu")
    np.testing.assert_allclose(out_dot, np.sum(2 * X * T + 2 * Y * T), rtol=1e-12)
    assert s2s.jit(scaled)(X, scale=3.0) == pytest.approx(scaled(X, scale=3.0))


def test_keyword_only_parameters_in_jacobians_second_order_and_check_grads():
    np.testing.assert_allclose(s2s.hessian(scaled)(X), hessian_by_differences(scaled, X), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(s2s.jacrev(scaled)(X, scale=3.0),
                               central_differences(lambda x: scaled(x, scale=3.0), X), rtol=1e-6)
    np.testing.assert_allclose(s2s.jacfwd(sunpos, argnums=1)(X, Y),
                               differences(sunpos, (X, Y), 1), rtol=1e-6, atol=1e-8)
    s2s.testing.check_grads(scaled, (X,), order=2)
    s2s.testing.check_grads(sunpos, (X, Y), order=2)


def test_helpers_with_star_args_in_batched_and_second_order_code():
    batch = np.stack([X, 0.5 * X])
    want = np.stack([differences(calls_star_helpers, (row, Y), 0) for row in batch])
    for batched in (s2s.vmap(s2s.grad(calls_star_helpers), in_axes=(0, None)),
                    s2s.jit(s2s.vmap(s2s.grad(calls_star_helpers), in_axes=(0, None)))):
        np.testing.assert_allclose(batched(batch, Y), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.hessian(calls_star_helpers)(X, Y),
                               hessian_by_differences(lambda x: calls_star_helpers(x, Y), X), rtol=1e-5, atol=1e-4)


def test_star_args_are_one_tuple_in_generated_code():
    text = s2s.source(s2s.grad(loss))
    assert "def loss_vjp(params, args, out_bar):" in text
    assert "x, y = args" in text
    text = s2s.source(s2s.grad(scaled))
    assert "def scaled_vjp(x, scale, out_bar):" in text


def passes_one_on(*args):
    return scaled(*args)


def test_a_call_of_star_args_into_fixed_parameters_checks_their_number():
    """scaled(*args) takes args's one item; with two, Python's call raises a TypeError, and so
    does the transformed code, in every mode, rather than drop the second."""
    np.testing.assert_allclose(s2s.grad(passes_one_on)(X), differences(passes_one_on, (X,), 0), rtol=1e-6)
    for transformed in (s2s.grad(passes_one_on), s2s.jit(s2s.grad(passes_one_on)), s2s.jit(passes_one_on)):
        with pytest.raises(TypeError, match=r"scaled\(\) takes 1 positional argument; \*args gives another number"):
            transformed(X, Y)


def test_keywords_into_kwargs_are_refused_at_the_door():
    with pytest.raises(s2s.S2SError, match=r"the keywords y go to its \*\*kwargs, which a transformed function "
                                           r"leaves empty; name them as parameters"):
        s2s.grad(forwarder)(X, y=Y)


def reads_kwargs(x, **kwargs):
    return np.sum(x) * len(kwargs)


def gives_keywords_to_kwargs(x):
    return forwarder(x, y=x)


def spreads_into_defaults(x, *args):
    return product_with_default(*args)


def product_with_default(x, y=2.0):
    return np.sum(x * y)


def spreads_a_loop_variable(x):
    for t in ((x, x),):
        pass
    return np.sum(np.maximum(*t))


@pytest.mark.parametrize("fun, text, message", [
    (reads_kwargs, "len(kwargs)", r"\*\*kwargs is supported only passed on whole to a call"),
    (gives_keywords_to_kwargs, "forwarder(x, y=x)", r"forwarder is given keywords its \*\*kwargs takes \(y\)"),
    (spreads_into_defaults, "product_with_default(*args)", r"the number of items of \*args is not known when s2s "
                                                          r"reads the function"),
    (spreads_a_loop_variable, "np.maximum(*t)", r"a starred argument is supported where the number of its items is "
                                             r"known"),
], ids=["kwargs-read", "keywords-to-kwargs", "spread-into-defaults", "spread-of-unknown-length"])
def test_unbindable_signatures_are_refused_at_the_users_line(fun, text, message):
    with pytest.raises(s2s.S2SError, match=message) as info:
        s2s.grad(fun)(X, X) if fun is spreads_into_defaults else s2s.grad(fun)(X)
    assert at(fun, text) in str(info.value)


def zero_first(v):
    v[0] = 0.0
    return np.sum(v ** 2)


def spreads_into_a_writing_helper(x, *args):
    s = zero_first(*args)
    return s + np.sum(args[0]) * x


def test_a_helper_that_writes_into_what_a_starred_argument_gives_is_refused():
    """Under NumPy zero_first changes args[0] in place, which the caller reads after; s2s gives the
    helper a private copy, so it refuses the call rather than return the unchanged sum."""
    with pytest.raises(s2s.S2SError, match=r"zero_first writes into its parameter v in place .* the caller's array "
                                           r"args\[\.\.\.\]") as info:
        s2s.grad(spreads_into_a_writing_helper)(1.0, X.copy())
    assert at(spreads_into_a_writing_helper, "zero_first(*args)") in str(info.value)
