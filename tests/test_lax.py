"""s2s.lax (cond, switch, fori_loop, while_loop, scan, select, stop_gradient) and JAX's x.at[i]
updates: as plain Python with JAX's semantics, and inside every transform, where they become the
native if/for/while they stand for. Derivatives are checked against central finite differences.

The programs are written as a JAX user writes them, `import numpy as jnp` and `import s2s as jax`.
"""

import os
import re

import numpy as jnp
import numpy as np
import pytest

import s2s
import s2s as jax
from finite_differences import central_difference_grad
from s2s import lax

BACKENDS = ["python", "cpu"]


def grad_on(fun, backend, argnums=0):
    g = s2s.grad(fun, argnums=argnums)
    return s2s.jit(g) if backend == "cpu" else g


def assert_grad(fun, args, backend, k=0, rtol=1e-6, atol=1e-8, reference=None):
    """s2s.grad (compiled by Numba on the cpu backend) against central finite differences of
    reference (fun itself unless fun uses .at, which plain NumPy arrays do not have)."""
    got = grad_on(fun, backend, k)(*args)
    want = central_difference_grad(reference or fun, args, k)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- plain Python: JAX's semantics -------------------------------------------------------
# Reference values from JAX 0.10.2 (x64 enabled), by /tmp/jaxenv/bin/python on:
#   lax.switch(k, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], 1.5) for k in (-3, 0, 1, 2, 9)
#       -> [1.5, 1.5, 3.0, 4.5, 4.5]
#   lax.scan(lambda c, x: (c + x, c * x), 1.0, jnp.array([1., 2., 3., 4.]), reverse=True)
#       -> 11.0, [10.0, 16.0, 15.0, 4.0]        (reverse=False: 11.0, [1.0, 4.0, 12.0, 28.0])
#   lax.scan(lambda c, x: (c * 2.0, (c, c + 1.0)), 1.0, None, length=3)
#       -> 8.0, ([1.0, 2.0, 4.0], [2.0, 3.0, 5.0])
#   lax.fori_loop(2, 6, lambda i, v: v * 2.0 + i, 1.0) -> 57.0;  fori_loop(5, 2, ...) -> 1.0
#   lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, 1.0)) -> (5, 7.59375)


def switch_table(k):
    return jax.lax.switch(k, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], 1.5)


def scan_reverse(xs):
    return jax.lax.scan(lambda c, x: (c + x, c * x), 1.0, xs, reverse=True)


def scan_forward(xs):
    return jax.lax.scan(lambda c, x: (c + x, c * x), 1.0, xs)


def scan_no_xs(c0):
    return jax.lax.scan(lambda c, x: (c * 2.0, (c, c + 1.0)), c0, None, length=3)


def fori_value(lo, hi):
    return lax.fori_loop(lo, hi, lambda i, v: v * 2.0 + i, 1.0)


def while_pair(x):
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))


def test_plain_python_has_jax_semantics():
    assert [switch_table(k) for k in (-3, 0, 1, 2, 9)] == [1.5, 1.5, 3.0, 4.5, 4.5]
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    carry, ys = scan_reverse(xs)
    assert carry == 11.0 and ys.tolist() == [10.0, 16.0, 15.0, 4.0]
    carry, ys = scan_forward(xs)
    assert carry == 11.0 and ys.tolist() == [1.0, 4.0, 12.0, 28.0]
    carry, (a, b) = scan_no_xs(1.0)
    assert carry == 8.0 and a.tolist() == [1.0, 2.0, 4.0] and b.tolist() == [2.0, 3.0, 5.0]
    assert fori_value(2, 6) == 57.0 and fori_value(5, 2) == 1.0
    assert while_pair(1.0) == (5, 7.59375)
    assert lax.cond(False, lambda a, b: a - b, lambda a, b: a + b, 2.0, 3.0) == 5.0
    assert lax.cond(True, lambda a: 2 * a, lambda a: a, operand=3.0) == 6.0
    assert lax.switch(1, [lambda a: 2 * a, lambda a: -a], operand=3.0) == -3.0
    with pytest.raises(TypeError, match="not both"):
        lax.cond(True, lambda a: a, lambda a: a, 1.0, operand=2.0)
    assert lax.select(np.array([True, False]), np.array([1.0, 2.0]), np.array([3.0, 4.0])).tolist() == [1.0, 4.0]
    x = np.array([1.0, 2.0])
    assert lax.stop_gradient(x) is x
    # scan over a tuple of xs, with a dict of outputs
    carry, ys = lax.scan(lambda c, x: (c + x[0] * x[1], {"p": x[0] * x[1]}), 0.0, (x, 2 * x))
    assert carry == 10.0 and ys["p"].tolist() == [2.0, 8.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformed_forms_give_the_plain_values(backend):
    """The native statements the forms become compute what the plain calls compute."""
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    jit = lambda f: s2s.jit(f, backend=backend)  # noqa: E731
    assert [jit(switch_table)(k) for k in (-3, 0, 1, 2, 9)] == [1.5, 1.5, 3.0, 4.5, 4.5]
    carry, ys = jit(scan_reverse)(xs)
    assert carry == 11.0 and ys.tolist() == [10.0, 16.0, 15.0, 4.0]
    carry, ys = jit(scan_forward)(xs)
    assert carry == 11.0 and ys.tolist() == [1.0, 4.0, 12.0, 28.0]
    carry, (a, b) = jit(scan_no_xs)(1.0)
    assert carry == 8.0 and a.tolist() == [1.0, 2.0, 4.0] and b.tolist() == [2.0, 3.0, 5.0]
    assert jit(fori_value)(2, 6) == 57.0 and jit(fori_value)(5, 2) == 1.0
    assert tuple(jit(while_pair)(1.0)) == (5, 7.59375)


# ---- derivatives of each form --------------------------------------------------------------


def fori_decay(x, n):
    return jnp.sum(lax.fori_loop(0, n, lambda i, x: x - 0.1 * jnp.sin(x) * i, x))


def fori_oscillator(x0, v0, k):
    """A tuple carry through a nested def (leapfrog steps of a spring)."""

    def step(i, state):
        x, v = state
        v = v - 0.05 * k * x
        x = x + 0.1 * v
        return (x, v)

    x, v = jax.lax.fori_loop(0, 20, step, (x0, v0))
    return jnp.sum(x ** 2) + jnp.sum(v * x)


def while_growth(x):
    i, y = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1 + jnp.cos(c[1])), (0, x))
    return jnp.sum(y)


def while_until(x):
    """The trip count depends on x (piecewise constant, so the derivative is the loop's)."""

    def keep_going(y):
        return jnp.sum(y) < 10.0

    def double(y):
        return y * 1.5 + 0.1

    return jnp.sum(jnp.sin(lax.while_loop(keep_going, double, x)))


def cond_branches(x, w):
    return lax.cond(jnp.sum(x) > 0, lambda a, b: jnp.sum(a ** 2 * b), lambda a, b: jnp.sum(jnp.sin(a) + b), x, w)


def cond_pair(x):
    """Both branches return a pair: the result is unpacked."""
    s, p = lax.cond(x[0] > 0.0, lambda: (jnp.sum(x), jnp.prod(x)), lambda: (jnp.max(x), jnp.sum(x ** 3)))
    return s * p


def operand_keyword(x, k):
    """JAX's keyword spelling of a single operand, in cond and switch."""
    a = lax.cond(x[0] > 0.0, lambda v: jnp.sum(v ** 2), lambda v: jnp.sum(jnp.cos(v)), operand=x)
    return a * lax.switch(k, [lambda v: jnp.prod(v), lambda v: jnp.sum(jnp.sin(v))], operand=x)


def switch_three(x, k):
    return lax.switch(k, [lambda x: jnp.sum(x ** 2), lambda x: jnp.sum(jnp.sin(x)), lambda x: jnp.prod(x)], x)


def scan_cumulative(xs, a):
    """ys stacked from numbers; a closure reads `a`."""
    carry, ys = lax.scan(lambda c, x: (a * c + x, c * x), 0.5, xs)
    return carry + jnp.sum(ys ** 2)


def scan_backwards(xs, a):
    carry, ys = lax.scan(lambda c, x: (a * c + x, jnp.sin(c) * x), 0.5, xs, reverse=True)
    return carry + jnp.sum(ys * jnp.arange(ys.shape[0]))


def scan_pytrees(xs, zs, h0):
    """xs a tuple of arrays, a tuple carry, a tuple of outputs."""

    def step(carry, x):
        h, total = carry
        u, z = x
        h = jnp.tanh(h * u + z)
        return (h, total + jnp.sum(h)), (h, jnp.sum(h * z))

    (h, total), (hs, dots) = lax.scan(step, (h0, 0.0), (xs, zs))
    return total + jnp.sum(hs ** 2) + jnp.sum(dots) + jnp.sum(h)


def scan_dict_in_a_variable(xs, zs, h0):
    """xs a dict held in a variable: the step receives a dict of rows, as JAX's pytree xs."""

    def step(h, x):
        h = jnp.tanh(h * x["u"] + x["z"])
        return h, jnp.sum(h * x["z"])

    inputs = {"u": xs, "z": zs}
    h, dots = lax.scan(step, h0, inputs)
    return jnp.sum(h ** 2) + jnp.sum(dots ** 2)


def scan_dict_display(xs, zs, h0):
    """xs a dict display (keys out of order) holding a tuple display; a lambda step."""
    h, hs = lax.scan(lambda h, x: (jnp.sin(h) * x["pair"][0] + x["z"] * x["pair"][1], h),
                     h0, {"z": zs, "pair": (xs, xs ** 2)}, reverse=True)
    return jnp.sum(h) + jnp.sum(hs * hs)


def scan_dict_argument(h0, params):
    """A dict parameter as xs: its keys are not in the source (the code is the call's keys')."""
    h, hs = lax.scan(lambda h, x: (jnp.tanh(h * x["u"] + x["v"]), h), h0, params)
    return jnp.sum(h) + jnp.sum(hs * hs)


def scan_tuple_argument(h0, pair):
    """A tuple (or list) parameter as xs: the code is the call's length's."""
    h, hs = lax.scan(lambda h, x: (jnp.tanh(h * x[0] + x[1]), h), h0, pair)
    return jnp.sum(h) + jnp.sum(hs * hs)


def scan_without_outputs(h0, a):
    def step(h, _):
        return jnp.tanh(a * h + 0.3), None

    h, nothing = lax.scan(step, h0, length=6, unroll=2)  # xs left out; unroll (XLA's hint) ignored
    return jnp.sum(h)


def nested_forms(x, a):
    """A cond inside a fori_loop body, inside a scan step."""

    def step(c, xi):
        def inner(i, v):
            return lax.cond(v > 0.0, lambda v: v * a - 0.1 * i, lambda v: jnp.sin(v) + xi, v)

        c = lax.fori_loop(0, 3, inner, c + xi)
        return c, c * c

    c, ys = lax.scan(step, 0.2, x)
    return c + jnp.sum(ys)


def leaky_step(i, state):
    """A module-level body: called, and differentiated through, rather than inlined."""
    w, b = state
    return (w * 0.9 + i * 0.01, b - 0.1 * jnp.sum(w))


def module_level_body(w, b):
    w, b = lax.fori_loop(0, 5, leaky_step, (w, b))
    return jnp.sum(w ** 2) + b


def def_used_twice(x):
    def body(i, v):
        return v * 1.1 + jnp.sin(v)

    a = lax.fori_loop(0, 3, body, x)
    b = lax.fori_loop(0, 2, body, a * 2.0)
    return jnp.sum(a * b)


def closure_sees_latest(x):
    """A lambda reads the variable's value where the form runs it, as Python does."""
    s = 2.0
    y = lax.cond(True, lambda v: v * s, lambda v: v, x)
    s = 3.0
    z = lax.cond(True, lambda v: v * s, lambda v: v, x)
    return jnp.sum(y * z)


def masked(x):
    return jnp.sum(x * lax.stop_gradient(x)) + jnp.sum(lax.select(x > 0, x ** 3, -x))


X = np.array([0.3, -0.2, 0.5, 0.8])
H0 = np.array([0.1, -0.3, 0.2])
ROWS = np.array([[0.3, -0.2, 0.5], [0.8, 0.1, -0.4], [0.2, 0.6, -0.1], [-0.3, 0.4, 0.7]])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, args, k", [
    (fori_decay, (X, 4), 0),
    (fori_oscillator, (X, X[::-1].copy(), 2.0), 0),
    (fori_oscillator, (X, X[::-1].copy(), 2.0), 2),
    (while_growth, (X,), 0),
    (while_until, (X,), 0),
    (cond_branches, (X, 1.5), 0),
    (cond_branches, (-X, 1.5), 1),
    (cond_pair, (X,), 0),
    (cond_pair, (-X,), 0),
    (operand_keyword, (X, 0), 0),
    (operand_keyword, (-X, 1), 0),
    (scan_cumulative, (X, 0.7), 0),
    (scan_cumulative, (X, 0.7), 1),
    (scan_backwards, (X, 0.7), 0),
    (scan_backwards, (X, 0.7), 1),
    (scan_pytrees, (X, X ** 2, H0), 0),
    (scan_pytrees, (X, X ** 2, H0), 2),
    (scan_without_outputs, (X, 0.9), 1),
    (scan_dict_in_a_variable, (X, X ** 2, 0.4), 0),
    (scan_dict_in_a_variable, (X, X ** 2, 0.4), 1),
    (scan_dict_in_a_variable, (X, X ** 2, 0.4), 2),
    (scan_dict_display, (X, X ** 2, 0.4), 0),
    (scan_dict_display, (X, X ** 2, 0.4), 1),
    (scan_dict_display, (X, X ** 2, 0.4), 2),
    (scan_dict_display, (ROWS, ROWS ** 2, H0), 0),  # (rows of arrays: a dict of a tuple of arrays each step)
    (nested_forms, (X, 0.8), 0),
    (nested_forms, (X, 0.8), 1),
    (module_level_body, (X, 0.5), 0),
    (module_level_body, (X, 0.5), 1),
    (def_used_twice, (X,), 0),
    (closure_sees_latest, (X,), 0),
], ids=lambda v: getattr(v, "__name__", None) or ("" if isinstance(v, tuple) else str(v)))
def test_grad_against_finite_differences(fun, args, k, backend):
    assert_grad(fun, args, backend, k)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", [-2, 0, 1, 2, 5])
def test_switch_clamps_its_index_in_grad(index, backend):
    assert_grad(switch_three, (X, index), backend)


def test_closure_reads_the_latest_value():
    np.testing.assert_allclose(s2s.grad(closure_sees_latest)(X), 12.0 * X)  # d/dx sum(2x * 3x)


def test_stop_gradient_and_select():
    # d/dx [x * sg(x)] = sg(x) = x; select: 3x^2 where x > 0, else -1
    want = X + np.where(X > 0, 3 * X ** 2, -1.0)
    np.testing.assert_allclose(s2s.grad(masked)(X), want)
    np.testing.assert_allclose(s2s.jit(s2s.grad(masked))(X), want)
    out, tangent = s2s.jvp(masked, (X,), (np.ones_like(X),))
    np.testing.assert_allclose(tangent, np.sum(want))


@pytest.mark.parametrize("fun, args", [
    (fori_oscillator, (X, X[::-1].copy(), 2.0)),
    (scan_pytrees, (X, X ** 2, H0)),
    (scan_dict_in_a_variable, (X, X ** 2, 0.4)),
    (scan_dict_display, (X, X ** 2, 0.4)),
    (cond_branches, (X, 1.5)),
    (while_growth, (X,)),
])
def test_forward_mode_against_finite_differences(fun, args):
    direction = np.array([0.3, -1.0, 0.5, 2.0])
    out, tangent = s2s.jvp(fun, args, (direction,) + tuple(np.zeros_like(a) for a in args[1:]))
    assert out == pytest.approx(fun(*args))
    assert tangent == pytest.approx(central_difference_grad(fun, args, 0) @ direction, rel=1e-6, abs=1e-8)
    J = s2s.jit(s2s.jacfwd(fun))(*args)
    np.testing.assert_allclose(J, central_difference_grad(fun, args, 0), rtol=1e-6, atol=1e-8)


def hessian_by_differences(fun, args):
    return np.array([central_difference_grad(lambda *a: s2s.grad(fun)(*a)[i], args, 0, h=1e-5)
                     for i in range(len(args[0]))])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, args", [
    (fori_decay, (X, 3)),
    (scan_cumulative, (X, 0.7)),
    (scan_dict_in_a_variable, (X, X ** 2, 0.4)),
    (while_growth, (X,)),
    (cond_branches, (X, 1.5)),
])
def test_hessian_against_differences_of_the_gradient(fun, args, backend):
    H = s2s.jit(s2s.hessian(fun), backend=backend)(*args)
    np.testing.assert_allclose(H, hessian_by_differences(fun, args), rtol=1e-5, atol=1e-6)


def test_hessian_of_a_scan_over_a_dict_that_holds_a_tuple():
    """The step's row, a dict holding a tuple, is a variable of the loop's own in reverse mode:
    its adjoint's zeros take the shape taped for each step (numbers here), on both backends."""
    args = (X, X ** 2, 0.4)
    expected = hessian_by_differences(scan_dict_display, args)
    np.testing.assert_allclose(s2s.hessian(scan_dict_display)(*args), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(scan_dict_display))(*args), expected, rtol=1e-5, atol=1e-6)


def _dict_carry_step(carry, row):
    h = np.tanh(carry["h"] * row["a"] + row["b"])
    return {"h": h, "s": carry["s"] + np.sum(h)}, h


def scan_with_a_dict_carry(h0, A, B):
    carry, ys = lax.scan(_dict_carry_step, {"h": h0, "s": 0.0}, {"a": A, "b": B})
    return carry["s"] + np.sum(ys ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dict_carry_display_under_every_transform(backend):
    """The initial carry a dict display: its adjoint meets the loop's (a copy of it holds the
    initial carry) leaf by leaf, where Numba adds no dicts; gradient against central differences,
    the Hessian against differences of the gradient."""
    A, B = BATCH.T[:3].copy(), BATCH.T[1:].copy()
    h0 = np.array([0.2, -0.5, 0.9])
    np.testing.assert_allclose(s2s.jit(s2s.grad(scan_with_a_dict_carry), backend=backend)(h0, A, B),
                               central_difference_grad(scan_with_a_dict_carry, (h0, A, B), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(scan_with_a_dict_carry), backend=backend)(h0, A, B),
                               hessian_by_differences(scan_with_a_dict_carry, (h0, A, B)), rtol=1e-5, atol=1e-6)


BATCH = np.array([[0.3, -0.2, 0.5, 0.8], [1.0, 0.4, -0.6, 0.1], [-0.5, -0.4, 0.2, 0.3]])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, in_axes, args", [
    (scan_cumulative, (0, None), (BATCH, 0.7)),
    (cond_branches, (0, None), (BATCH, 1.5)),
    (while_until, 0, (BATCH,)),
    (fori_oscillator, (0, 0, None), (BATCH, BATCH[::-1].copy(), 2.0)),
    (scan_dict_in_a_variable, (0, None, None), (BATCH, X ** 2, 0.4)),
    (scan_dict_display, (0, 0, None), (BATCH, BATCH[::-1].copy(), 0.4)),
])
def test_vmap_of_grad(fun, in_axes, args, backend):
    batched = s2s.vmap(s2s.grad(fun), in_axes=in_axes)
    if backend == "cpu":
        batched = s2s.jit(batched)
    got = batched(*args)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    for b in range(BATCH.shape[0]):
        example = tuple(a[b] if axis == 0 else a for a, axis in zip(args, axes))
        np.testing.assert_allclose(got[b], central_difference_grad(fun, example, 0), rtol=1e-6, atol=1e-8)
    values = s2s.vmap(fun, in_axes=in_axes)(*args)
    np.testing.assert_allclose(values, [fun(*(a[b] if axis == 0 else a for a, axis in zip(args, axes)))
                                        for b in range(BATCH.shape[0])])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dict_tuple_or_list_argument_as_xs(backend):
    """Each entry is sliced along its first axis, as JAX's pytree xs: the code is generated for
    the call's keys (or number of items), another call's regenerates it."""
    rows = np.stack([X, X[::-1] * 0.5, X * X]).T  # (4, 3): four steps
    params = {"v": rows[:, :2] * 0.3, "u": rows[:, 1:]}
    h0 = np.array([0.2, -0.4])
    cases = [(scan_dict_argument, params), (scan_tuple_argument, (params["u"], params["v"]))]
    if backend == "python":  # (a list compiles as the tuple does: compiling it again says nothing more)
        cases.append((scan_tuple_argument, [params["u"], params["v"]]))
    for fun, xs in cases:
        value, got = s2s.jit(s2s.value_and_grad(fun, argnums=(0, 1)), backend=backend)(h0, xs)
        assert value == pytest.approx(fun(h0, xs), rel=1e-13)
        np.testing.assert_allclose(got[0], central_difference_grad(fun, (h0, xs), 0), rtol=1e-6, atol=1e-8)
        for k in ("u", "v") if isinstance(xs, dict) else (0, 1):
            def moved(v, k=k):
                changed = dict(xs) if isinstance(xs, dict) else list(xs)
                changed[k] = v
                return fun(h0, changed if not isinstance(xs, tuple) else tuple(changed))
            np.testing.assert_allclose(got[1][k], central_difference_grad(moved, (xs[k],), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fun, reference, args", [
    (masked, masked, (BATCH,)),
    (scan_cumulative, scan_cumulative, (BATCH, 0.7)),
    (scan_backwards, scan_backwards, (BATCH, 0.7)),
    (fori_decay, fori_decay, (BATCH, 3)),
    (switch_three, switch_three, (BATCH, 1)),
])
def test_vmap_values_python_backend(fun, reference, args):
    """On the python backend these vectorise (stop_gradient and scan's stacks have batching rules)."""
    in_axes = (0,) + (None,) * (len(args) - 1)
    batched = s2s.vmap(fun, in_axes=in_axes)
    got = batched(*args)
    assert "vectorised by batching rules" in s2s.source(batched).splitlines()[0]
    np.testing.assert_allclose(got, [reference(row, *args[1:]) for row in args[0]])


# ---- JAX tutorial code, as written for JAX -----------------------------------------------


def rnn_loss(params, xs, targets):
    """An Elman RNN over a sequence with lax.scan (JAX's RNN tutorials), a mean-squared loss."""
    W, U, b = params

    def cell(h, x):
        h = jnp.tanh(W @ h + U @ x + b)
        return h, h

    h0 = jnp.zeros(W.shape[0])
    _, hs = jax.lax.scan(cell, h0, xs)
    return jnp.mean((hs[:, 0] - targets) ** 2)


def train_loss(lr, w, x, y):
    """Gradient descent written with lax.fori_loop (the update's gradient by hand); the loss
    after training, whose derivative in lr is the hyper-gradient of the learning rate."""

    def update(i, w):
        residual = x @ w - y
        return w - lr * 2.0 * (x.T @ residual) / y.shape[0]

    w = jax.lax.fori_loop(0, 25, update, w)
    return jnp.mean((x @ w - y) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rnn_with_scan(backend):
    rng = np.random.default_rng(0)
    W, U, b = rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(4, 3)) * 0.5, rng.normal(size=4) * 0.1
    xs, targets = rng.normal(size=(7, 3)), rng.normal(size=7)
    g = grad_on(rnn_loss, backend)((W, U, b), xs, targets)
    assert isinstance(g, tuple) and len(g) == 3  # the structure of params
    for k, leaf in enumerate((W, U, b)):
        def of_leaf(value, k=k):
            params = [W, U, b]
            params[k] = value
            return rnn_loss(tuple(params), xs, targets)
        np.testing.assert_allclose(g[k], central_difference_grad(of_leaf, (leaf,), 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hypergradient_through_fori_loop(backend):
    rng = np.random.default_rng(1)
    x, y, w = rng.normal(size=(20, 3)), rng.normal(size=20), np.zeros(3)
    assert_grad(train_loss, (0.05, w, x, y), backend, 0)
    assert_grad(train_loss, (0.05, w, x, y), backend, 1)


def test_generated_code_is_native_control_flow():
    for fun in (fori_decay, while_growth, cond_branches, scan_cumulative, switch_three):
        text = s2s.source(s2s.grad(fun))
        code = "\n".join(line for line in text.split('"""', 2)[2].splitlines() if not line.strip().startswith("#"))
        code = re.sub(r'"[^"\n]*"', '""', code)  # (a scan's dtype check names this file, test_lax.py)
        assert "lax" not in code and "lambda" not in code  # the forms are written out
        assert re.search(r"\b(for|while|if) ", code)
    assert "for i in range(n):" in s2s.source(s2s.grad(fori_decay))


# ---- x.at[index] updates -----------------------------------------------------------------


def at_updates(x):
    y = x.at[1].set(x[0] ** 2)
    z = y.at[0].add(3.0 * x[2])
    w = z.at[2:].multiply(x[1])
    v = w.at[0].divide(x[3] + 2.0)
    u = v.at[3].power(2)
    return jnp.sum(u ** 2) + x.at[1:3].get()[0]


def at_updates_numpy(x):
    """at_updates as NumPy writes it (arrays have no .at outside s2s), the reference."""
    y = x.copy()
    y[1] = x[0] ** 2
    z = y.copy()
    z[0] += 3.0 * x[2]
    w = z.copy()
    w[2:] *= x[1]
    v = w.copy()
    v[0] /= x[3] + 2.0
    u = v.copy()
    u[3] **= 2
    return np.sum(u ** 2) + x[1:3][0]


def at_extremes(x, c):
    y = x.at[0:2].min(c * x[3])
    z = y.at[2:].max(c)
    return jnp.sum(jnp.sin(z) * x)


def at_extremes_numpy(x, c):
    y = x.copy()
    y[0:2] = np.minimum(y[0:2], c * x[3])
    z = y.copy()
    z[2:] = np.maximum(z[2:], c)
    return np.sum(np.sin(z) * x)


def at_in_a_loop(x, n):
    out = jnp.zeros(n)
    for i in range(n):
        out = out.at[i].set(jnp.sum(x ** (i + 1)))
    return jnp.sum(out * out)


def at_in_a_loop_numpy(x, n):
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.sum(x ** (i + 1))
    return np.sum(out * out)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun, reference, args, k", [
    (at_updates, at_updates_numpy, (X,), 0),
    (at_extremes, at_extremes_numpy, (X, 0.4), 0),
    (at_extremes, at_extremes_numpy, (X, 0.4), 1),
    (at_in_a_loop, at_in_a_loop_numpy, (X, 3), 0),
], ids=["updates", "extremes-x", "extremes-c", "loop"])
def test_at_updates_against_finite_differences(fun, reference, args, k, backend):
    assert s2s.jit(fun, backend=backend)(*args) == pytest.approx(reference(*args))
    assert_grad(fun, args, backend, k, reference=reference)


def test_vmap_of_at_updates():
    """vmap runs the generated primal on an example (plain NumPy arrays have no .at)."""
    np.testing.assert_allclose(s2s.vmap(at_extremes, in_axes=(0, None))(BATCH, 0.4),
                               [at_extremes_numpy(row, 0.4) for row in BATCH])
    got = s2s.jit(s2s.vmap(s2s.grad(at_updates)))(BATCH)
    np.testing.assert_allclose(got, [central_difference_grad(at_updates_numpy, (row,), 0) for row in BATCH],
                               rtol=1e-6, atol=1e-8)


def at_gather_add(x, v, idx):
    y = x.at[idx].add(v)
    return jnp.sum(y * y)


def at_gather_add_numpy(x, v, idx):
    y = x.copy()
    y[idx] += v
    return np.sum(y * y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_at_add_refuses_repeated_index_entries(backend):
    """JAX adds every repeat of an index; NumPy's y[idx] += v adds one: refused, not different."""
    x, v = X[:3].copy(), np.array([1.0, 2.0, 3.0])
    with pytest.raises(s2s.S2SError, match=r"test_lax.py:\d+:\d+: x.at\[...\].add\(v\) with an index array that "
                       r"names an element twice"):
        s2s.jit(at_gather_add, backend=backend)(x, v, np.array([0, 2, 0]))
    distinct = np.array([2, 0, 1])
    assert s2s.jit(at_gather_add, backend=backend)(x, v, distinct) == pytest.approx(at_gather_add_numpy(x, v, distinct))
    np.testing.assert_allclose(s2s.grad(at_gather_add, argnums=1)(x, v, distinct),
                               central_difference_grad(at_gather_add_numpy, (x, v, distinct), 1))


def test_at_updates_second_order_and_vjp():
    H = s2s.hessian(at_extremes)(X, 0.4)
    want = np.array([central_difference_grad(lambda x: s2s.grad(at_extremes)(x, 0.4)[i], (X,), 0, h=1e-5)
                     for i in range(4)])
    np.testing.assert_allclose(H, want, rtol=1e-5, atol=1e-6)
    out, pullback = s2s.vjp(at_updates, X)
    assert out == pytest.approx(at_updates_numpy(X))
    np.testing.assert_allclose(pullback(1.0)[0], central_difference_grad(at_updates_numpy, (X,), 0), rtol=1e-6)


def test_at_updates_leave_their_array_unchanged():
    def checked(x):
        y = x.at[0].set(5.0)
        return jnp.sum(x) + 10.0 * y[0]

    assert s2s.jit(checked, backend="python")(X) == pytest.approx(np.sum(X) + 50.0)
    np.testing.assert_allclose(s2s.grad(checked)(X), np.ones(4))


# ---- refusals ----------------------------------------------------------------------------


def body_is_a_variable(x):
    f = x * 2.0
    return lax.fori_loop(0, 3, f, x)


def body_is_numpy(x):
    return lax.fori_loop(0, 3, np.sin, x)


def carry_changes_structure(x):
    return lax.fori_loop(0, 3, lambda i, c: (c[0], c[1], c[0]), (x, x))


def branches_differ(x):
    return lax.cond(x > 0, lambda x: (x, x), lambda x: (x, x, x), x)


def wrong_arity(x):
    return lax.fori_loop(0, 3, lambda c: c * 2.0, x)


def scan_needs_length(x):
    c, ys = lax.scan(lambda c, _: (c * 2.0, c), x, None)
    return c


def scan_reverse_variable(x, flag):
    c, ys = lax.scan(lambda c, x: (c * x, c), 1.0, x, reverse=flag)
    return c


def nested_def_early_return(x):
    def body(i, y):
        if y > 1.0:
            return y
        return y * 2.0

    return lax.fori_loop(0, 3, body, x)


def bare_at(x):
    a = x.at
    return jnp.sum(x)


def at_unknown_method(x):
    return jnp.sum(x.at[0].apply(jnp.sin))


REFUSALS = {
    body_is_a_variable: ("the body_fun of s2s.lax.fori_loop must be a function s2s can read", "f, x)"),
    body_is_numpy: ("the body_fun of s2s.lax.fori_loop must be a function s2s can read", "np.sin"),
    carry_changes_structure: ("the carry of s2s.lax.fori_loop changes structure", "(c[0], c[1], c[0])"),
    branches_differ: ("the result of s2s.lax.cond changes structure", "(x, x, x)"),
    wrong_arity: ("the lambda takes 1 arguments where this s2s.lax form passes 2", "lambda c"),
    scan_needs_length: ("s2s.lax.scan over xs=None needs length=", "lax.scan"),
    scan_reverse_variable: ("reverse= of s2s.lax.scan must be True or False", "reverse=flag"),
    bare_at: ("x.at[...] is supported only followed by an update", "a = x.at"),
    at_unknown_method: ("x.at[...].apply() is not supported", "x.at[0].apply"),
}


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_nested_def_with_an_early_return_as_the_loop_body(backend):
    # 0.3 doubles twice (1.2, then returned as it is), 0.7 once (1.4): derivatives 4 and 2
    for x, slope in ((0.3, 4.0), (0.7, 2.0)):
        assert s2s.jit(nested_def_early_return, backend=backend)(x) == pytest.approx(nested_def_early_return(x))
        assert s2s.jit(s2s.grad(nested_def_early_return), backend=backend)(x) == pytest.approx(slope)
        assert s2s.jvp(nested_def_early_return, (x,), (1.0,))[1] == pytest.approx(slope)


@pytest.mark.parametrize("fun", list(REFUSALS), ids=lambda f: f.__name__)
def test_refusals_name_file_line_column(fun):
    reason, code = REFUSALS[fun]
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fun).source
    message = str(info.value)
    assert reason in message, message
    match = re.match(r"(.+):(\d+):(\d+): ", message)
    assert match and os.path.basename(match.group(1)) == "test_lax.py", message
    with open(__file__) as handle:
        line = handle.read().splitlines()[int(match.group(2)) - 1]
    assert code in line, (line, message)
