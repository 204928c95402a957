"""The carries, xs and ys of s2s.lax's loops: a scan step that writes into its carry and returns it
(each step's output is kept as it was made, as in JAX), fori_loop and scan carries that are tuples
or are written in place, a carry of one array twice, an int carry that a float would cut, xs and
ys that are tuples, lists or dicts, scans of no steps, and checkpointed steps. Values against
plain Python with JAX's semantics, derivatives against central differences of the plain function;
what is refused names the user's variables."""

import re

import numpy as np
import pytest

import s2s
import shadowing_cases as cases
from checks import assert_names_the_user
from finite_differences import central_difference_grad
from s2s import lax

BACKENDS = ["python", "cpu"]
X = np.array([0.3, -0.2, 0.5, 0.8])
X3 = np.array([0.3, -0.7, 1.1])  # (the point of the in-place writes below)


# ---- a scan step that writes its carry in place and returns it as its output -----------------


def scan_returns_its_carry(x):
    def step(c, xi):
        c[0] = c[0] * xi + 1.0
        return c, c

    c, ys = lax.scan(step, x.copy(), x)
    return np.sum(c) + np.sum(ys * ys)


def by_hand(x):
    """The same program with each step's output copied as it is made: JAX's semantics, and the
    transformed scan's (it writes each row of ys as its step ends)."""
    c, rows = x.copy(), []
    for xi in x:
        c[0] = c[0] * xi + 1.0
        rows.append(c.copy())
    return np.sum(c) + np.sum(np.array(rows) ** 2)


def test_plain_scan_keeps_each_steps_output():
    # Called as plain Python too, each row of ys is the step's output as it was made, not the last
    # step's carry (the one array every step returns), which would give 24.79 for 15.13
    assert scan_returns_its_carry(X) == pytest.approx(by_hand(X), rel=1e-14)
    assert s2s.jit(scan_returns_its_carry, backend="python")(X) == pytest.approx(by_hand(X), rel=1e-14)
    np.testing.assert_allclose(s2s.grad(scan_returns_its_carry)(X),
                               central_difference_grad(scan_returns_its_carry, (X,), 0), rtol=1e-6, atol=1e-8)


# ---- xs and ys that are not arrays or tuple displays --------------------------------------


def ys_tuple_in_a_variable(x):
    def step(c, xi):
        c = c * xi + 0.3
        out = (c, c * xi)
        return c, out

    c, ys = lax.scan(step, 0.2, x)
    return c + np.sum(ys[0]) + np.sum(ys[1] * ys[1])


def pair_step(c, xi):
    c = c * xi + 0.3
    return c, (c, c * xi)


def ys_of_a_module_level_step(x):
    c, (a, b) = lax.scan(pair_step, 0.2, x)
    return c + np.sum(a) + np.sum(b * b)


def xs_tuple_in_a_variable(x):
    xs = (x, x * x)

    def step(c, r):
        a, b = r
        return c * a + b, c

    c, ys = lax.scan(step, 0.2, xs)
    return c + np.sum(ys)


def xs_list_display(x):
    def step(c, r):
        return c * r[0] + r[1], c

    c, ys = lax.scan(step, 0.2, [x, x * x])
    return c + np.sum(ys)


def ys_dict_display(x):
    def step(c, xi):
        c = c * xi + 0.3
        return c, {"p": c, "q": c * xi}

    c, ys = lax.scan(step, 0.2, x)
    return c + np.sum(ys["p"]) + np.sum(ys["q"] * ys["q"])


BATCH = np.stack([X, 0.9 * X])
TRANSFORMS = {
    "value": lambda f: s2s.jit(f, backend="python")(X),
    "grad": lambda f: s2s.grad(f)(X),
    "jacfwd": lambda f: s2s.jacfwd(f)(X),
    "vmap": lambda f: s2s.vmap(f)(BATCH),
    "vmap_grad": lambda f: s2s.vmap(s2s.grad(f))(BATCH),
}


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_a_tuple_output_in_a_variable_is_refused(transform):
    # ys was stacked as one (n, 2) array, so ys[0] was the first step's pair: the value 1.15
    # where NumPy gives 2.58, and jacfwd [0.585, 0.294, 0.182, 0.414] for [0.181, 0.967, 0.959, 1.80]
    for fun in (ys_tuple_in_a_variable, ys_of_a_module_level_step):
        with pytest.raises(s2s.S2SError, match="the step's output y is a tuple, list or dict held in a variable"):
            transform(fun)


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_xs_that_is_not_an_array_or_a_tuple_display_is_refused(transform):
    # AttributeError: 'tuple' (or 'list', 'dict') object has no attribute 'shape'; and vmap of
    # the list display gave [0.087, 1.30, 0.29] where NumPy gives [1.46, 1.36, 0.84]
    with pytest.raises(s2s.S2SError, match="xs is a tuple, list or dict held in a variable"):
        transform(xs_tuple_in_a_variable)
    if transform is TRANSFORMS["vmap"]:
        # s2s.vmap of a function s2s refuses to transform calls it once per example, in Python
        np.testing.assert_allclose(transform(xs_list_display), [xs_list_display(row) for row in BATCH])
        np.testing.assert_allclose(transform(ys_dict_display), [ys_dict_display(row) for row in BATCH])
        return
    with pytest.raises(s2s.S2SError, match="takes xs as one array or a tuple display"):
        transform(xs_list_display)
    with pytest.raises(s2s.S2SError, match="not a list or dict"):
        transform(ys_dict_display)


def test_plain_values_of_the_refused_programs():
    """(The plain functions run: the refusals are s2s's, not NumPy's.)"""
    for fun in (ys_tuple_in_a_variable, ys_of_a_module_level_step, xs_tuple_in_a_variable, xs_list_display,
                ys_dict_display):
        assert np.isfinite(fun(X))


# ---- a carry that starts as an int and becomes a float ---------------------------------------


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_scan_whose_int_carry_becomes_a_float_is_refused_not_cut(backend):
    xs = np.array([-0.5, 0.7, 0.9])
    for transformed in (s2s.jit(cases.int_carry_scan, backend=backend),
                        s2s.jit(s2s.grad(cases.int_carry_scan), backend=backend)):
        with pytest.raises(s2s.S2SError, match=r"shadowing_cases.py:\d+:\d+: scan: .*\(0.0, not 0\)"):
            transformed(xs)


def test_a_scan_with_a_float_carry_differentiates():
    def float_carry(xs):
        def body(c, x):
            return c + x, c
        _, hs = s2s.lax.scan(body, 0.0, xs)
        return np.sum(hs * xs)

    xs = np.array([-0.5, 0.7, 0.9])
    want = central_difference_grad(float_carry, (xs,), 0)
    np.testing.assert_allclose(want, [1.6, 0.4, 0.2], atol=1e-7)  # c_t = x_0 + ... + x_{t-1}
    np.testing.assert_allclose(s2s.grad(float_carry)(xs), want, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.grad(float_carry))(xs), want, atol=1e-7)


# ---- in-place writes inside s2s.lax bodies with a tuple carry, and inside a scan step ----------


def fori_tuple_carry(x):
    def body(i, carry):
        v, acc = carry
        v[i] = v[i] * x[i]
        return v, acc + v[i]

    v, acc = s2s.lax.fori_loop(0, 3, body, (x.copy(), 0.0))
    return acc + np.sum(v * x)


def scan_writes_its_carry(x, xs):
    def step(v, a):
        v[0] = v[1] * a
        return v, a * v[2]

    v, ys = s2s.lax.scan(step, x.copy(), xs)
    return np.sum(v * x) + np.sum(ys)


def fori_one_array_twice(x):  # v and acc are one array: writing into v changes acc
    w = x.copy()

    def body(i, carry):
        v, acc = carry
        v[i] = v[i] * x[i]
        return v, acc + v[i]

    v, acc = s2s.lax.fori_loop(0, 3, body, (w, w))
    return np.sum(acc) + np.sum(v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_write_into_one_element_of_a_tuple_carry(backend):
    value = s2s.jit(fori_tuple_carry, backend=backend)(X3)
    assert value == pytest.approx(fori_tuple_carry(X3), rel=1e-14)
    gradient = s2s.jit(s2s.grad(fori_tuple_carry), backend=backend)(X3)
    np.testing.assert_allclose(gradient, central_difference_grad(fori_tuple_carry, (X3,), 0), rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_step_that_writes_into_its_carry(backend):
    xs = np.array([1.0, 3.0, -0.5])
    value = s2s.jit(scan_writes_its_carry, backend=backend)(X3, xs)
    assert value == pytest.approx(scan_writes_its_carry(X3, xs), rel=1e-14)
    gradient = s2s.jit(s2s.grad(scan_writes_its_carry), backend=backend)(X3, xs)
    np.testing.assert_allclose(gradient, central_difference_grad(scan_writes_its_carry, (X3, xs), 0), rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_of_no_steps_returns_the_carry_its_step_would_write_into_as_given(backend):
    # the step still runs once, on rows of zeros, for the shapes of the (empty) outputs, as in JAX
    xs = np.zeros(0)
    expected = float(np.sum(X3 * X3))
    assert scan_writes_its_carry(X3, xs) == pytest.approx(expected, rel=1e-14)  # s2s.lax.scan itself
    assert s2s.jit(scan_writes_its_carry, backend=backend)(X3, xs) == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scan_writes_its_carry), backend=backend)(X3, xs), 2.0 * X3,
                               rtol=1e-14)


def test_a_carry_of_one_array_twice_is_refused_with_the_users_names():
    with pytest.raises(s2s.S2SError, match="would also change") as info:
        s2s.grad(fori_one_array_twice)(X3)
    assert_names_the_user(info.value, "v", "acc")


def scan_writes_the_argument(x, xs):  # the carry is x itself: the step would write into the argument
    def step(v, a):
        v[0] = v[1] * a
        return v, a

    v, ys = s2s.lax.scan(step, x, xs)
    return np.sum(v)


def scan_keeps_the_old_carry(x, xs):  # w is v: the write changes the output w[0] would be read from
    def step(v, a):
        w = v
        v[0] = v[1] * a
        return v, w[0]

    v, ys = s2s.lax.scan(step, x.copy(), xs)
    return np.sum(v) + np.sum(ys)


@pytest.mark.parametrize("fun, names", [(scan_writes_the_argument, ("v", "x")),
                                        (scan_keeps_the_old_carry, ("v", "w"))])
def test_refusals_inside_a_scan_step_name_the_users_variables(fun, names):
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fun)(X3, np.ones(2))
    assert_names_the_user(info.value, *names)
    assert re.search(rf"\b{names[0]} = {names[0]}\.copy\(\)", info.value.hint), info.value.hint


# ---- s2s.lax.scan of length 0: the initial carry and empty stacks, as JAX's -----------------
# JAX 0.10.2 (x64), the reference:
#   /tmp/jaxenv/bin/python -c "import jax, jax.numpy as jnp; jax.config.update('jax_enable_x64', True);
#     body = lambda c, x: (c + x * 2.0, (c * x, jnp.sum(x)));  # (c the new carry in both)
#     print(jax.lax.scan(body, jnp.zeros(2) + 1.5, jnp.zeros((0, 2))))"
#   -> carry [1.5, 1.5], stacks of shapes (0, 2) and (0,), float64;
#   jax.lax.scan(lambda c, _: (c * 2.0, c), 1.5, None, length=0) -> (1.5, shape (0,));
#   jax.grad of its carry -> 1.0.


def scan_step(c, x):
    c = c + x * 2.0
    return c, c * x


def scan_sum(c0, xs):
    c, ys = s2s.lax.scan(scan_step, c0, xs)
    return c + np.sum(ys)


def scan_of_length(c0, n):
    c, ys = s2s.lax.scan(lambda c, _: (c * 2.0, c), c0, None, length=n)
    return c + np.sum(ys)


def scan_reversed(c0, xs):
    c, ys = s2s.lax.scan(scan_step, c0, xs, reverse=True)
    return c * 3.0 + np.sum(ys)


def test_scan_of_length_zero_in_plain_python():
    def body(c, x):
        c = c + x * 2.0
        return c, (c * x, np.sum(x))

    c, (a, b) = s2s.lax.scan(body, np.zeros(2) + 1.5, np.zeros((0, 2)))
    np.testing.assert_array_equal(c, [1.5, 1.5])
    assert a.shape == (0, 2) and b.shape == (0,) and a.dtype == np.float64
    c, ys = s2s.lax.scan(lambda c, _: (c * 2.0, c), 1.5, None, length=0)
    assert c == 1.5 and ys.shape == (0,)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_scan_of_length_zero_transformed(backend):
    empty = np.zeros(0)
    assert s2s.jit(scan_sum, backend=backend)(1.5, empty) == 1.5
    assert s2s.jit(s2s.grad(scan_sum), backend=backend)(1.5, empty) == 1.0
    np.testing.assert_array_equal(s2s.jit(s2s.grad(scan_sum, argnums=1), backend=backend)(1.5, empty), empty)
    assert s2s.jit(scan_of_length, backend=backend, static_argnums=(1,))(1.5, 0) == 1.5
    assert s2s.jit(s2s.grad(scan_of_length), backend=backend)(1.5, 0) == 1.0
    assert s2s.jit(s2s.grad(scan_reversed), backend=backend)(1.5, empty) == 3.0
    # and with steps, still the closed form: c2 = c0 + 2 (x1 + x2), ys = (c1 x1, c2 x2)
    xs = np.array([1.0, 2.0])
    assert s2s.jit(s2s.grad(scan_sum), backend=backend)(1.5, xs) == pytest.approx(1 + 1 + 2)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scan_reversed), backend=backend)(1.5, xs),
                               central_difference_grad(scan_reversed, [1.5, xs], 0), rtol=1e-7)


def test_scan_of_length_zero_under_vmap():
    got = s2s.vmap(scan_sum, in_axes=(0, 0))(np.array([1.5, 2.5]), np.zeros((2, 0)))
    np.testing.assert_array_equal(got, [1.5, 2.5])
    np.testing.assert_array_equal(s2s.vmap(s2s.grad(scan_sum), in_axes=(0, 0))(np.array([1.5, 2.5]), np.zeros((2, 0))),
                                  [1.0, 1.0])


# ---- jax.checkpoint(step) passed to a form ---------------------------------------------------


def scan_of_a_checkpointed_step(x):
    def step(c, xi):
        return np.tanh(c * xi + 0.2), c * c

    c, ys = lax.scan(s2s.checkpoint(step), 0.3, x)
    return c + np.sum(ys)


def fori_of_a_remat_body(x):
    def body(i, v):
        return v * 0.9 + np.sin(v) * x[i]

    return np.sum(lax.fori_loop(0, 3, s2s.remat(body, prevent_cse=False), x * 1.0))


@pytest.mark.parametrize("fun", [scan_of_a_checkpointed_step, fori_of_a_remat_body])
def test_a_checkpointed_function_passed_to_a_form(fun):
    # s2s.checkpoint(step) is step itself, a function s2s reads (not refused as "the f of
    # s2s.lax.scan must be a function s2s can read")
    assert s2s.jit(fun, backend="python")(X) == pytest.approx(fun(X), rel=1e-14)
    np.testing.assert_allclose(s2s.grad(fun)(X), central_difference_grad(fun, (X,), 0), rtol=1e-6, atol=1e-8)
