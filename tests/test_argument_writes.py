"""Writes into arguments: a helper that writes into the variable its caller passes changes the
caller's array, as under NumPy, in every mode (its body is written out at the call); one whose
write could not reach the caller (a view passed, a write through a second helper or another name
of the array) is refused at the call, as s2s gives every function a private copy; no transform
changes the caller's arrays or differentiates at a changed point; jvp of an already transformed
function is refused with a way out. Values against central differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

X = np.array([2.0, 3.0])


def scale(y, a):
    y *= a
    return y


def through_scale(x):
    y = x.copy()
    z = scale(y, x[0])  # NumPy: y is now x * x[0]
    return np.sum(y) + 0.0 * np.sum(z)


def setfirst(y, v):
    y[0] = v
    return y


def through_setfirst(x):
    y = np.zeros(2)
    r = setfirst(y, x[0] * x[1])  # NumPy: y[0] is now x0 * x1
    return np.sum(y) + np.sum(r)


def setfirst_of_view(x):
    y = np.zeros((2, 2))
    r = setfirst(y[1], x[0])  # NumPy: writes row 1 of y
    return np.sum(y * x[1]) + np.sum(r)


def own_copy(y, v):
    y = y.copy()
    y[0] = v
    return y


def through_own_copy(x):
    y = np.zeros(2)
    r = own_copy(y, x[0] * x[1])  # y stays zero: the helper writes into its own copy
    return np.sum(y) + np.sum(r)


def rebinds(x):
    y = x.copy()
    y = scale(y, x[0])  # the way out: y names the written array
    return np.sum(y)


def rebinds_zeros(x):
    y = np.zeros(2)
    y = setfirst(y, x[0] * x[1])  # a y without a tangent of its own gets one inside setfirst
    return np.sum(y) + x[1]


def returns_it(x):
    y = x * 2.0
    return setfirst_and_sum(y, x[1])  # nothing reads y afterwards


def setfirst_and_sum(y, v):
    y = setfirst(y, v)  # writes into the caller's y (NumPy), which returns_it never reads again
    return np.sum(y)


def numpy_value(fun, x):
    return fun(np.array(x, dtype=float))


def fd(fun, x):
    return central_difference_grad(lambda v: fun(np.array(v, dtype=float)), (np.array(x, dtype=float),), 0)


@pytest.mark.parametrize("fun, helper, param, line_text", [
    (setfirst_of_view, "setfirst", "y", "r = setfirst(y[1], x[0])"),
])
@pytest.mark.parametrize("door", ["value_and_grad", "grad_cpu", "jit", "jvp", "jacfwd"])
def test_a_helper_writing_into_a_view_of_the_callers_array_is_refused_at_the_call(fun, helper, param, line_text,
                                                                                 door):
    with pytest.raises(s2s.S2SError) as info:
        if door == "value_and_grad":
            s2s.jit(s2s.value_and_grad(fun), backend="python")(X.copy())
        elif door == "grad_cpu":
            s2s.grad(fun)(X.copy())
        elif door == "jit":
            s2s.jit(fun, backend="python")(X.copy())
        elif door == "jvp":
            s2s.jvp(fun, (X.copy(),), (np.ones(2),))
        else:
            s2s.jacfwd(fun)(X.copy())
    text = str(info.value)
    assert f"{helper} writes into its parameter {param} in place" in text
    assert "test_argument_writes.py:" in text and line_text in text
    assert f"= {helper}(" in text  # the way out: assign the result


def test_the_refusal_points_at_the_callers_column():
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(setfirst_of_view)(X.copy())
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "r = setfirst(y[1], x[0])" in t)
    assert f"test_argument_writes.py:{line}:9:" in str(info.value)


@pytest.mark.parametrize("fun", [through_scale, through_setfirst])
def test_a_helper_writing_into_the_callers_array_changes_it_in_every_mode(fun):
    # through_scale: y = x x0 -> x0 (x0 + x1), grad (2 x0 + x1, x0); through_setfirst: 2 x0 x1 + x1
    expected = fd(fun, X)
    for backend in ("python", "cpu"):
        value, grad = s2s.jit(s2s.value_and_grad(fun), backend=backend)(X.copy())
        assert value == pytest.approx(numpy_value(fun, X), rel=1e-14)
        np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jacfwd(fun)(X.copy()), expected, rtol=1e-6, atol=1e-8)
    _, tangent = s2s.jvp(fun, (X.copy(),), (np.array([0.0, 1.0]),))
    assert tangent == pytest.approx(expected[1], rel=1e-6)
    xs = np.stack([X, 2.0 * X])
    for row, x in zip(s2s.vmap(s2s.grad(fun))(xs), xs):
        np.testing.assert_allclose(row, fd(fun, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.grad(through_scale)(X.copy()), [2 * X[0] + X[1], X[0]])


def project(vx, vy):
    """As autograd's fluidsim.py: subtract a gradient from the caller's velocity arrays."""
    p = 0.25 * (np.roll(vx, -1) - np.roll(vx, 1) + np.roll(vy, -1) - np.roll(vy, 1))
    vx -= 0.5 * (np.roll(p, -1) - np.roll(p, 1))
    vy -= 0.5 * (np.roll(p, 1) - np.roll(p, -1))
    vy[0] = vy[0] * vx[1]


def fluid_steps(v):
    vx, vy = np.sin(v), v * v
    for _ in range(3):
        project(vx, vy)
        vx = vx + 0.1 * vy
    return np.sum(vx * vy)


V = np.array([0.3, -1.2, 2.0, 0.7, 0.1])


@pytest.mark.parametrize("door", ["grad", "jit_grad", "jvp", "jacrev", "vmap_grad", "hessian"])
def test_a_statement_calling_a_helper_that_writes_into_two_arrays(door):
    expected = fd(fluid_steps, V)
    if door == "grad":
        np.testing.assert_allclose(s2s.grad(fluid_steps)(V.copy()), expected, rtol=1e-6, atol=1e-8)
    elif door == "jit_grad":
        np.testing.assert_allclose(s2s.jit(s2s.grad(fluid_steps))(V.copy()), expected, rtol=1e-6, atol=1e-8)
        assert s2s.jit(fluid_steps)(V.copy()) == pytest.approx(fluid_steps(V.copy()), rel=1e-13)
    elif door == "jvp":
        e = np.eye(V.size)[2]
        value, tangent = s2s.jvp(fluid_steps, (V.copy(),), (e,))
        assert value == pytest.approx(fluid_steps(V.copy()), rel=1e-13)
        assert tangent == pytest.approx(expected[2], rel=1e-6)
    elif door == "jacrev":
        np.testing.assert_allclose(s2s.jacrev(fluid_steps)(V.copy()), expected, rtol=1e-6, atol=1e-8)
    elif door == "vmap_grad":
        vs = np.stack([V, -V])
        for row, v in zip(s2s.vmap(s2s.grad(fluid_steps))(vs), vs):
            np.testing.assert_allclose(row, fd(fluid_steps, v), rtol=1e-6, atol=1e-8)
    else:
        from finite_differences import hessian_by_differences
        np.testing.assert_allclose(s2s.hessian(fluid_steps)(V.copy()), hessian_by_differences(fluid_steps, V.copy()),
                                   rtol=1e-5, atol=1e-5)


def shift(t, dt):
    t += dt  # for a number: rebinds shift's t only
    return t


def shifted_number(x):
    t = x[0]
    u = shift(t, 0.5)
    return u * t


def test_an_update_of_a_number_a_helper_is_given_is_refused_with_the_rewrite():
    for backend in ("python", "cpu"):
        with pytest.raises(s2s.S2SError) as info:
            s2s.jit(s2s.grad(shifted_number), backend=backend)(X.copy())
        assert "`t += ...` in shift updates the caller's t in place" in str(info.value)
        assert "write `t = t + ...` in shift" in str(info.value)


@pytest.mark.parametrize("fun", [through_own_copy, rebinds, rebinds_zeros, returns_it])
def test_helpers_whose_writes_the_caller_cannot_see_still_differentiate(fun):
    value, grad = s2s.jit(s2s.value_and_grad(fun), backend="python")(X.copy())
    assert value == pytest.approx(numpy_value(fun, X))
    np.testing.assert_allclose(grad, fd(fun, X), rtol=1e-6, atol=1e-8)
    _, tangent = s2s.jvp(fun, (X.copy(),), (np.array([1.0, 0.0]),))
    assert tangent == pytest.approx(fd(fun, X)[0], rel=1e-6)


def test_closed_forms_of_the_helpers_that_work():
    # through_own_copy: 0 + x0*x1 + 0 -> grad (x1, x0); rebinds: x0*(x0+x1) -> (2x0+x1, x0)
    np.testing.assert_allclose(s2s.grad(through_own_copy)(X.copy()), [3.0, 2.0])
    np.testing.assert_allclose(s2s.grad(rebinds)(X.copy()), [7.0, 2.0])
    # compiled forward mode: own_copy's y gets a zero tangent of its own (numba.njit)
    _, tangent = s2s.jvp(through_own_copy, (X.copy(),), (np.array([0.0, 1.0]),), backend="cpu")
    assert tangent == pytest.approx(2.0)


def argw(x):
    x[0] = x[0] * x[1]
    return np.sum(x ** 2)


def test_vjp_leaves_the_callers_array_and_differentiates_at_its_point():
    x = X.copy()
    out, pullback = s2s.vjp(argw, x)
    np.testing.assert_array_equal(x, X)
    assert out == pytest.approx(numpy_value(argw, X))  # (x0 x1)^2 + x1^2 = 45
    (g,) = pullback(1.0)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_allclose(g, fd(argw, X), rtol=1e-6)  # (2 x0 x1^2, 2 x0^2 x1 + 2 x1) = (36, 30)
    np.testing.assert_allclose(g, [36.0, 30.0])


@pytest.mark.parametrize("door", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian", "jvp", "vmap"])
def test_no_door_changes_the_callers_array(door):
    x = X.copy()
    if door == "grad":
        g = s2s.jit(s2s.grad(argw), backend="python")(x)
        np.testing.assert_allclose(g, [36.0, 30.0])
    elif door == "value_and_grad":
        s2s.jit(s2s.value_and_grad(argw), backend="python")(x)
    elif door == "jacrev":
        np.testing.assert_allclose(s2s.jit(s2s.jacrev(argw), backend="python")(x), [36.0, 30.0])
    elif door == "jacfwd":
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(argw), backend="python")(x), [36.0, 30.0])
    elif door == "hessian":
        s2s.jit(s2s.hessian(argw), backend="python")(x)
    elif door == "jvp":
        _, t = s2s.jvp(argw, (x,), (np.array([0.0, 1.0]),))
        assert t == pytest.approx(30.0)
    else:
        xs = np.stack([X, X])
        s2s.jit(s2s.vmap(argw), backend="python")(xs)
        np.testing.assert_array_equal(xs, np.stack([X, X]))
    np.testing.assert_array_equal(x, X)


def smooth(x):
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("make", [s2s.jacrev, s2s.jacfwd, s2s.vmap, s2s.hessian])
def test_jvp_of_a_transformed_function_is_refused_with_a_way_out(make):
    # (s2s.jvp(s2s.jit(f), ...) is f's forward mode, compiled: tests/test_jax_idioms.py; of
    # s2s.grad(f), a Hessian-vector product: tests/test_hvp.py)
    with pytest.raises(s2s.S2SError, match="jvp of an already transformed function") as info:
        s2s.jvp(make(smooth), (np.ones(3),), (np.ones(3),))
    assert "s2s.jvp(s2s.grad(f), (x,), (v,))" in str(info.value)


def test_the_suggested_hessian_vector_product_matches_differences_of_the_gradient():
    x, v, h = np.array([0.3, -1.2, 2.0]), np.array([1.0, -0.5, 0.25]), 1e-5
    hvp = s2s.jacfwd(s2s.grad(smooth))(x) @ v
    grad = s2s.grad(smooth)
    reference = (grad(x + h * v) - grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(hvp, reference, rtol=1e-6, atol=1e-8)
    # closed form: the Hessian is diagonal, 2 cos x - x sin x
    np.testing.assert_allclose(hvp, (2 * np.cos(x) - x * np.sin(x)) * v, rtol=1e-12)


def rebinds_with_an_alias(x):
    y = x.copy()
    w = y
    y = scale(y, x[0])  # NumPy: w is the scaled array too
    return np.sum(w)


def scales_in_place(y, a):
    y = scale(y, a)  # the caller's y is scaled under NumPy
    return y


def through_two_levels(x):
    y = x.copy()
    z = scales_in_place(y, x[0])
    return np.sum(y) + 0.0 * np.sum(z)


def scales_a_copy(y, a):
    y = y.copy()
    y = scale(y, a)
    return y


def through_two_levels_on_a_copy(x):
    y = x.copy()
    z = scales_a_copy(y, x[0])  # y unchanged: x0 + x1 + x0 (x0 + x1)
    return np.sum(y) + np.sum(z)


@pytest.mark.parametrize("fun, expected", [
    (rebinds_with_an_alias, "scale writes into its parameter y"),
    (through_two_levels, "scales_in_place writes into its parameter y in place (passed to scale"),
])
def test_writes_reaching_the_caller_through_an_alias_or_another_helper_are_refused(fun, expected):
    with pytest.raises(s2s.S2SError, match=None) as info:
        s2s.grad(fun)(X.copy())
    assert expected in str(info.value)


def test_a_helper_passing_its_own_copy_on_differentiates():
    fun = through_two_levels_on_a_copy
    g = s2s.jit(s2s.grad(fun), backend="python")(X.copy())
    np.testing.assert_allclose(g, fd(fun, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, [1.0 + 2 * X[0] + X[1], 1.0 + X[0]])
