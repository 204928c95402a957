"""Every runtime helper compiles under numba.njit for scalars and arrays of several ndims,
and agrees with its NumPy version."""

import numba
import numpy as np
import pytest

from s2s import runtime as rt
from s2s.runtime import overloads
from s2s.errors import S2SError

overloads.register_numba()

rng = np.random.default_rng(3)


def jit_call(helper, *args):
    """Call a runtime helper from inside a numba.njit function, as generated code does."""
    names = ", ".join(f"a{k}" for k in range(len(args)))
    namespace = {"rt": rt, "helper": helper}
    exec(f"def wrapper({names}):\n    return helper({names})\n", namespace)
    return numba.njit(namespace["wrapper"])(*args)


@pytest.mark.parametrize("g_shape,x_shape", [((), ()), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)),
                                             ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((4, 2, 3), (2, 3)),
                                             ((4, 2, 3), (4, 1, 3))])
def test_unbroadcast(g_shape, x_shape):
    g = rng.standard_normal(g_shape) if g_shape else 1.5
    x = rng.standard_normal(x_shape) if x_shape else 0.5
    np.testing.assert_allclose(jit_call(rt.unbroadcast, g, x), rt.unbroadcast(g, x))
    expected = np.sum(np.broadcast_to(g, np.broadcast_shapes(np.shape(g), np.shape(x))).reshape(
        (-1,) + tuple(x_shape)) if len(g_shape) > len(x_shape) else g, axis=0) if len(g_shape) > len(x_shape) else None
    if expected is not None and np.shape(expected) == x_shape:
        np.testing.assert_allclose(rt.unbroadcast(g, x), expected)


@pytest.mark.parametrize("value", [1.5, np.float32(2.0), np.ones(3), np.ones((2, 3)), np.ones((2, 1, 3))])
def test_value_helpers(value):
    z = jit_call(rt.zeros_like, value)
    assert np.shape(z) == np.shape(value) and np.all(np.asarray(z) == 0)
    c = jit_call(rt.copy, value)
    np.testing.assert_array_equal(c, value)
    assert jit_call(rt.shape, value) == np.shape(value)


def test_tree_helpers():
    tree = (np.ones(2), 3.0)
    z = jit_call(rt.zeros_like, tree)
    assert z[1] == 0.0 and np.all(z[0] == 0)
    s = jit_call(rt.tree_add, tree, tree)
    np.testing.assert_allclose(s[0], 2.0)
    namespace = {"rt": rt}
    exec("def add_second(c, v):\n    return rt.add_at(c, 1, v)\n", namespace)
    a = numba.njit(namespace["add_second"])(tree, 2.0)
    assert a[1] == 5.0


@pytest.mark.parametrize("shape,axis", [((5,), None), ((5,), 0), ((3, 4), None), ((3, 4), 0), ((3, 4), -1)])
def test_reduction_adjoints(shape, axis):
    x = rng.uniform(0.5, 1.5, shape)
    for helper, reducer in [(rt.sum_bar, np.sum), (rt.mean_bar, np.mean)]:
        g = reducer(x, axis=axis) * 0 + 1.3 if axis is not None else 1.3
        np.testing.assert_allclose(jit_call(helper, g, x, axis), helper(g, x, axis))
    y = np.max(x, axis=axis)
    g = y * 0 + 0.7
    np.testing.assert_allclose(jit_call(rt.max_bar, g, y, x, axis), rt.max_bar(g, y, x, axis))
    if axis is None:
        y = np.prod(x)
        np.testing.assert_allclose(jit_call(rt.prod_bar, 1.0, y, x), rt.prod_bar(1.0, y, x))
        np.testing.assert_allclose(jit_call(rt.var_bar, 1.0, x), rt.var_bar(1.0, x))


REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std"]
# Each case compiles a function of fourteen reductions: a few representative axis forms keep
# the suite's compile time down (the helpers are generated per ndim and axis alike).
AXES = [((5,), 0), ((3, 4), -2), ((3, 4), (0, 1)), ((2, 3, 4), None), ((2, 3, 4), (-1, 1))]


def jit_source(body: str, *args):
    """Compile `def f(x, ...): return <body>` with numba.njit; axis and keepdims are literals
    in the source, as generated code writes them."""
    names = ", ".join(f"a{k}" for k in range(len(args)))
    namespace = {"rt": rt, "np": np}
    exec(f"def f({names}):\n    return {body}\n", namespace)
    return numba.njit(namespace["f"])(*args)


@pytest.mark.parametrize("shape,axis", AXES)
def test_reductions_over_axes_match_numpy(shape, axis):
    """runtime.reduce_<name> is NumPy's reduction, under numba.njit too, for every axis form."""
    x = rng.uniform(0.5, 1.5, shape)
    calls = [f"rt.reduce_{name}(a0, axis={axis!r}, keepdims={keep})" for name in REDUCTIONS for keep in (False, True)]
    got = jit_source("(" + ", ".join(calls) + ",)", x)
    for (name, keep), value in zip([(n, k) for n in REDUCTIONS for k in (False, True)], got):
        expected = getattr(np, name)(x, axis=axis, keepdims=keep)
        assert np.shape(value) == np.shape(expected), (name, keep)
        np.testing.assert_allclose(value, expected, rtol=1e-12, err_msg=f"{name} keepdims={keep}")
        np.testing.assert_array_equal(getattr(rt, f"reduce_{name}")(x, axis=axis, keepdims=keep), expected)
    ddof = jit_source(f"(rt.reduce_var(a0, {axis!r}, 1), rt.reduce_std(a0, axis={axis!r}, ddof=1, keepdims=True))", x)
    np.testing.assert_allclose(ddof[0], np.var(x, axis=axis, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(ddof[1], np.std(x, axis=axis, ddof=1, keepdims=True), rtol=1e-12)


# The helpers are loop nests written per ndim and axes: 2-D cases for each keepdims, and a
# 3-D one whose kept axis lies between two reduced ones.
@pytest.mark.parametrize("shape,axis,keep", [((3, 4), 0, False), ((3, 4), -1, True), ((2, 3, 4), (0, 2), False)])
def test_reduction_adjoints_over_axes(shape, axis, keep):
    """The adjoint and tangent helpers of reductions agree with their NumPy versions under jit."""
    x = rng.uniform(0.5, 1.5, shape)
    x_dot = rng.standard_normal(shape)
    x[(0,) * len(shape)] = np.max(x)  # a tie in the max: the derivative is shared equally
    a = f"{axis!r}"
    helpers = {
        "sum_bar": ("g, a1", np.sum), "mean_bar": ("g, a1", np.mean), "max_bar": ("g, y, a1", np.max),
        "prod_bar": ("g, y, a1", np.prod), "var_bar": ("g, a1", np.var), "std_bar": ("g, y, a1", np.std),
        "max_dot": ("a2, y, a1", np.max), "prod_dot": ("a2, y, a1", np.prod), "var_dot": ("a2, a1", np.var),
    }
    for helper, (args, reducer) in helpers.items():
        y = reducer(x, axis=axis, keepdims=keep)
        g = y * 0.0 + rng.uniform(0.5, 1.5, np.shape(y))
        ddof = ", 0" if helper.startswith(("var", "std")) else ""
        body = f"rt.{helper}({args.replace('g', 'a0').replace('y', 'a3')}, {a}{ddof}, {keep})"
        got = jit_source(body, g, x, x_dot, y)
        py_args = [{"g": g, "y": y, "a1": x, "a2": x_dot}[n.strip()] for n in args.split(",")]
        expected = getattr(rt, helper)(*py_args, axis, *((0,) if ddof else ()), keep)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14, err_msg=helper)


def test_reduction_axis_from_an_argument():
    """An axis that is an argument of the compiled function is made a compile-time constant."""
    x = rng.standard_normal((3, 4))
    f = numba.njit(lambda x, k: rt.reduce_max(x, k, True))
    np.testing.assert_array_equal(f(x, 0), np.max(x, axis=0, keepdims=True))
    np.testing.assert_array_equal(f(x, 1), np.max(x, axis=1, keepdims=True))


def test_squeeze_and_inner():
    x = rng.standard_normal((3, 1, 2, 1))
    np.testing.assert_array_equal(jit_source("rt.squeeze(a0, axis=1)", x), np.squeeze(x, axis=1))
    np.testing.assert_array_equal(jit_source("rt.squeeze(a0, (-1, 1))", x), np.squeeze(x, axis=(-1, 1)))
    with pytest.raises(numba.core.errors.TypingError, match="np.squeeze needs its axes"):
        jit_source("rt.squeeze(a0)", x)
    with pytest.raises(ValueError, match="size not equal to one"):
        jit_source("rt.squeeze(a0, 0)", x)
    for xs, ys in [((3,), (3,)), ((2, 3), (3,)), ((3,), (4, 3)), ((2, 3), (4, 3)), ((), (3,))]:
        a, b = rng.standard_normal(xs), rng.standard_normal(ys)
        a = a if xs else 1.5
        np.testing.assert_allclose(jit_source("rt.inner(a0, a1)", a, b), np.inner(a, b), rtol=1e-12)
        g = rng.standard_normal(np.shape(np.inner(a, b)))
        if xs:
            np.testing.assert_allclose(jit_call(rt.inner_bar_x, g, a, b), rt.inner_bar_x(g, a, b), rtol=1e-12)
        np.testing.assert_allclose(jit_call(rt.inner_bar_y, g, a, b), rt.inner_bar_y(g, a, b), rtol=1e-12)


def test_prod_adjoint_is_exact_at_zero():
    x = np.array([2.0, 0.0, 3.0])
    np.testing.assert_allclose(rt.prod_bar(1.0, 0.0, x), [0.0, 6.0, 0.0])
    np.testing.assert_allclose(jit_call(rt.prod_bar, 1.0, 0.0, x), [0.0, 6.0, 0.0])


@pytest.mark.parametrize("xs,ys", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4))])
def test_matmul_adjoints(xs, ys):
    x, y = rng.standard_normal(xs), rng.standard_normal(ys)
    g = rng.standard_normal(np.shape(x @ y)) if np.ndim(x @ y) else 1.2
    np.testing.assert_allclose(jit_call(rt.matmul_bar_x, g, x, y), rt.matmul_bar_x(g, x, y))
    np.testing.assert_allclose(jit_call(rt.matmul_bar_y, g, x, y), rt.matmul_bar_y(g, x, y))
    # <g, x @ y> is linear in x: its gradient is matmul_bar_x.
    eps = 1e-6
    d = rng.standard_normal(xs)
    fd = (np.sum(g * ((x + eps * d) @ y)) - np.sum(g * ((x - eps * d) @ y))) / (2 * eps)
    assert fd == pytest.approx(np.sum(rt.matmul_bar_x(g, x, y) * d), rel=1e-6)


@pytest.mark.parametrize("value", [np.float32(1.5), 3, True, 1.0 + 2.0j, np.ones(3), (1.0, np.ones(2))])
def test_new_tape_holds_values_of_their_own_type(value):
    namespace = {"rt": rt}
    exec("def roundtrip(x):\n    tape = rt.new_tape(x, 3)\n    tape[2] = x\n    return tape[2], tape\n", namespace)
    got, tape = numba.njit(namespace["roundtrip"])(value)
    for a, b in zip(np.atleast_1d(got) if not isinstance(value, tuple) else got, np.atleast_1d(value)
                    if not isinstance(value, tuple) else value):
        np.testing.assert_array_equal(a, b)
    if np.isscalar(value):  # numbers go on an array of their dtype
        assert isinstance(tape, np.ndarray) and tape.shape == (3,) and tape.dtype == np.asarray(value).dtype
    assert rt.new_tape(value, 3)[2] is value  # the python backend keeps the values themselves


def test_require_unshared_refuses_where_the_memory_overlaps():
    """x op= v runs as x = x op v: refused where another name shares x's memory (a row, the
    array itself, a container that may hold it), not for a number, a copy or empty arrays;
    the Numba overload agrees with NumPy's may_share_memory."""
    a = np.ones((3, 4))
    cases = [(a, a[1], True), (a, a[1:, ::-1], True), (a[::-1], a[2], True), (a, (a,), True),
             (a, a.copy(), False), (a, 2.0, False), (a[0], a[0, 1], False), (np.ones(0), np.ones(0), False),
             (2.0, a, False)]
    for x, other, refused in cases:
        for call in (rt.require_unshared, lambda *args: jit_call(rt.require_unshared, *args)):
            if refused:
                with pytest.raises(S2SError, match="shared"):
                    call(x, other, "shared")
            else:
                call(x, other, "shared")
    # Vectorised code: a trailing batch axis; a 1-d batch is a batch of numbers.
    rt.require_unshared(a[0], a[0, 1:], "shared", x_batched=True, other_batched=True)
    b = np.ones((3, 2, 4))  # a batch of 4 examples, each 3 x 2: b[1] is a row of each
    with pytest.raises(S2SError, match="shared"):
        rt.require_unshared(b, b[1], "shared", x_batched=True, other_batched=True)


def test_generator_states_are_given_back_after_nested_probes():
    """A probe inside a probe (the Hessian's inside a Jacobian's) with a generator known: each
    gives back the states it found, and the outer one the first (the states hold arrays, which
    the bookkeeping must not compare)."""
    from s2s.runtime.constants import generator_number, generators_kept

    drawn = np.random.RandomState(7)
    generator_number(drawn)
    with generators_kept():
        with generators_kept():
            drawn.randn(3)
        drawn.randn(2)
    np.testing.assert_array_equal(drawn.randn(4), np.random.RandomState(7).randn(4))
