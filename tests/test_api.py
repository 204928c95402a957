"""The public API follows JAX: argnums, has_aux, value_and_grad, vjp, pytrees, dtypes."""

import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from programs import Point, has_aux_loss, returns_tuple, tuple_params


def loss(params, x, y):
    w, b = params
    pred = x @ w + b
    return np.mean((pred - y) ** 2)


def data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal(3), 0.4), rng.standard_normal((6, 3)), rng.standard_normal(6)


def analytic(params, x, y):
    w, b = params
    r = x @ w + b - y
    return 2 * x.T @ r / len(y), 2 * np.mean(r), -2 * r / len(y)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_grad_of_the_issue_example_matches_the_formula(backend):
    params, x, y = data()
    g = s2s.jit(s2s.grad(loss), backend=backend)
    gw, gb = g(params, x, y)
    ew, eb, ey = analytic(params, x, y)
    np.testing.assert_allclose(gw, ew, rtol=1e-12)
    assert isinstance(gb, float) and abs(gb - eb) < 1e-12
    (gw2, gb2), gy = s2s.jit(s2s.grad(loss, argnums=(0, 2)), backend=backend)(params, x, y)
    np.testing.assert_allclose(gy, ey, rtol=1e-12)
    np.testing.assert_allclose(gw2, ew, rtol=1e-12)


def test_value_and_grad_and_vjp():
    params, x, y = data()
    value, (gw, gb) = s2s.value_and_grad(loss)(params, x, y)
    assert value == pytest.approx(loss(params, x, y), rel=1e-14)
    out, pullback = s2s.vjp(loss, params, x, y)
    assert out == pytest.approx(value)
    (pw, pb), px, py = pullback(2.0)
    np.testing.assert_allclose(pw, 2 * gw, rtol=1e-12)
    ew, eb, ey = analytic(params, x, y)
    np.testing.assert_allclose(py, 2 * ey, rtol=1e-12)
    assert px.shape == x.shape


def test_vjp_of_a_tuple_output():
    x = np.array([0.3, -1.2, 2.0])
    (a, b), pullback = s2s.vjp(returns_tuple, x)
    u, v = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 0.25])
    (gx,) = pullback((u, v))
    np.testing.assert_allclose(gx, 2 * np.cos(x) * u - np.sin(x) * v, rtol=1e-12)


def test_has_aux():
    x = np.array([0.5, -2.0, 1.0])
    g, aux = s2s.grad(has_aux_loss, has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * x)
    assert aux == 1.0
    (value, aux2), g2 = s2s.value_and_grad(has_aux_loss, has_aux=True)(x)
    assert value == pytest.approx(np.sum(x**2)) and aux2 == 1.0
    np.testing.assert_allclose(g2, 2 * x)


def test_gradients_have_the_structure_of_their_argument():
    x = np.random.default_rng(0).standard_normal((4, 3))
    w = np.array([0.1, 0.2, 0.3])
    g = s2s.grad(tuple_params)([w, 0.5], x)
    assert isinstance(g, list) and g[0].shape == (3,) and isinstance(g[1], float)
    r = x @ w + 0.5
    np.testing.assert_allclose(g[0], 2 * x.T @ r)

    def f(p, x):
        return np.sum(p.a * x + p.b * x**2)

    gp = s2s.grad(f)(Point(np.ones(3), 2.0), np.array([1.0, 2.0, 3.0]))
    assert isinstance(gp, Point)
    np.testing.assert_allclose(gp.a, [1.0, 2.0, 3.0])
    assert gp.b == pytest.approx(14.0)


def test_float32_stays_float32():
    def f(x):
        return np.sum(np.sin(x) * 2.0)

    x = np.linspace(0, 1, 5, dtype=np.float32)
    g = s2s.grad(f)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(x), rtol=1e-6)


def test_source_is_deterministic_and_readable():
    a = s2s.source(s2s.grad(loss))
    b = s2s.source(s2s.grad(loss))
    assert a == b
    assert "def loss_vjp(params, x, y, out_bar):" in a
    assert "# test_api.py:" in a and "# Grad of: test_api.py:" in a
    assert "w_bar" in a and "b_bar" in a
    compile(a, "generated", "exec")


def weighted_sines(x, a):
    return np.sum(np.sin(x) * a) + a**2


def test_check_grads_catches_an_error_in_one_component_that_one_projection_misses():
    """The projection check alone passed a gradient 0.14% off in one component: each
    component of a small gradient is also checked against central differences."""
    from s2s.testing import _check_reverse_components

    x, a = np.linspace(0.0, 1.0, 5), 0.7
    cotangent = 1.0
    right = (np.cos(x) * a, float(np.sum(np.sin(x)) + 2 * a))
    _check_reverse_components(weighted_sines, [x, a], (0, 1), cotangent, right, 1e-6, 1e-5, 1e-6)
    wrong = (right[0] * np.array([1.0, 1.0, 1.0014, 1.0, 1.0]), right[1])
    with pytest.raises(AssertionError, match="component"):
        _check_reverse_components(weighted_sines, [x, a], (0, 1), cotangent, wrong, 1e-6, 1e-5, 1e-6)


def power_with_default(x, a=2.0):
    return np.sum(x**a)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_default_and_keyword_arguments_bind_as_in_python(backend):
    """grad(f)(x) uses a's default; grad(f)(x, a=3.0) passes it by keyword (as JAX accepts)."""
    x = np.array([1.0, 2.0, 3.0])
    g = s2s.jit(s2s.grad(power_with_default), backend=backend)
    np.testing.assert_allclose(g(x), 2 * x, rtol=1e-14)
    np.testing.assert_allclose(g(x, a=3.0), 3 * x**2, rtol=1e-14)
    assert s2s.jit(power_with_default, backend=backend)(x, a=1.0) == pytest.approx(6.0)
    np.testing.assert_allclose(s2s.jacfwd(power_with_default)(x), 2 * x, rtol=1e-14)
    np.testing.assert_allclose(s2s.jacrev(power_with_default)(x, a=3.0), 3 * x**2, rtol=1e-14)
    np.testing.assert_allclose(s2s.hessian(power_with_default)(x), 2 * np.eye(3), rtol=1e-14)


def test_a_differentiated_argument_passed_by_keyword_is_refused():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(s2s.S2SError, match="argument 1 of power_with_default is differentiated"):
        s2s.grad(power_with_default, argnums=1)(x, a=3.0)
    with pytest.raises(s2s.S2SError, match="unexpected keyword argument 'b'"):
        s2s.grad(power_with_default)(x, b=3.0)


def product_of_varargs(*args):
    return args[0] * np.sin(args[1])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_argnums_count_the_arguments_that_star_args_takes(backend):
    """As JAX binds argnums: position 1 of product_of_varargs(2.0, 0.5) is args[1]; generated code
    takes *args as one tuple, and the door picks each gradient from the tuple's."""
    a, b = 2.0, 0.5
    assert s2s.jit(s2s.grad(product_of_varargs, argnums=0), backend=backend)(a, b) == pytest.approx(np.sin(b))
    assert s2s.jit(s2s.grad(product_of_varargs, argnums=1), backend=backend)(a, b) == pytest.approx(a * np.cos(b))
    both = s2s.jit(s2s.grad(product_of_varargs, argnums=(1, 0)), backend=backend)(a, b)
    assert both == pytest.approx((a * np.cos(b), np.sin(b)))
    out, out_dot = s2s.jvp(product_of_varargs, (a, b), (1.0, 0.0), backend=backend)
    assert (out, out_dot) == pytest.approx((a * np.sin(b), np.sin(b)))
    with pytest.raises(s2s.S2SError, match="argnums 2 is out of range for 2 positional arguments"):
        s2s.grad(product_of_varargs, argnums=2)(a, b)


@pytest.mark.parametrize("jacobian", [s2s.jacrev, s2s.jacfwd, lambda f, argnums: s2s.jit(s2s.jacrev(f, argnums))],
                         ids=["jacrev", "jacfwd", "jit-jacrev"])
def test_jacobians_of_a_function_of_star_args(jacobian):
    """argnums count the arguments the call passes, as JAX's: the Jacobian is taken of a function
    of as many named parameters that calls it."""
    a, x = 2.0, np.array([0.5, -1.0])
    assert jacobian(product_of_varargs, 1)(a, x) == pytest.approx(np.diag(a * np.cos(x)))
    d_a, d_x = jacobian(product_of_varargs, (0, 1))(a, x)
    assert d_a == pytest.approx(np.sin(x)) and d_x == pytest.approx(np.diag(a * np.cos(x)))


def test_a_cotangent_must_match_the_output():
    x = np.array([0.3, -1.2, 2.0])
    (a, b), pullback = s2s.vjp(returns_tuple, x)
    u = np.ones(3)
    with pytest.raises(s2s.S2SError, match="the cotangent is an array or number, the output a tuple of 2"):
        pullback(u)
    with pytest.raises(s2s.S2SError, match=r"cotangent \(leaf 1\) has shape \(\), the output \(3,\)"):
        pullback((u, 1.0))
    with pytest.raises(s2s.S2SError, match="dtype float32, the output float64"):
        pullback((u, u.astype(np.float32)))
    with pytest.raises(s2s.S2SError, match="dtype int64"):
        pullback((u, np.ones(3, dtype=np.int64)))
    (gx,) = pullback((u, u))  # the right cotangent still works
    np.testing.assert_allclose(gx, 2 * np.cos(x) - np.sin(x), rtol=1e-12)


def sum_of_powers(x, a):
    return np.sum(x**a)


def power(x, a):
    return x**a


def sum_of_powers_through_a_helper(x, a):
    return np.sum(power(x, a))


def sum_of_squares_through_a_helper(x):
    return np.sum(power(x, 2.0))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_grad_computes_no_adjoint_of_an_argument_it_does_not_differentiate(backend):
    # d/da of x ** a is x ** a * log(x): at x = 0 it warns (and is nan or inf), so it must not
    # be computed for a gradient with respect to x, neither here nor in a helper's vjp.
    x = np.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        direct = s2s.jit(s2s.grad(sum_of_powers), backend=backend)(x, 2.0)
        helper = s2s.jit(s2s.grad(sum_of_powers_through_a_helper), backend=backend)(x, 2.0)
        constant = s2s.jit(s2s.grad(sum_of_squares_through_a_helper), backend=backend)(x)
    for g in (direct, helper, constant):
        np.testing.assert_allclose(g, 2 * x, rtol=1e-15)
    np.testing.assert_allclose(helper, central_difference_grad(sum_of_powers_through_a_helper, (x, 2.0), 0),
                               rtol=1e-8, atol=1e-9)
    for fn in (sum_of_powers, sum_of_powers_through_a_helper, sum_of_squares_through_a_helper):
        assert "np.log" not in s2s.source(s2s.grad(fn))
    # Where a's adjoint is asked for, the helper's vjp returns both (away from x = 0).
    gx, ga = s2s.grad(sum_of_powers_through_a_helper, argnums=(0, 1))(x + 1, 2.0)
    np.testing.assert_allclose(gx, 2 * (x + 1), rtol=1e-15)
    assert ga == pytest.approx(np.sum((x + 1) ** 2 * np.log(x + 1)), rel=1e-14)


def sum_of_squares(x):
    return np.sum(x**2)


def dict_output(x):
    return {"a": x * 2.0, "b": np.sin(x)}


def test_float32_stays_float32_in_hessians_and_compiled_values():
    x = np.array([0.3, 0.5], dtype=np.float32)
    h = s2s.hessian(sum_of_squares)(x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, 2 * np.eye(2), rtol=1e-6)
    value, grad = s2s.jit(s2s.value_and_grad(sum_of_squares))(x)
    assert type(value) is np.float32 and grad.dtype == np.float32  # as on the python backend
    assert value == pytest.approx(0.34, rel=1e-6)


def test_jit_of_jacrev_with_a_dict_output():
    # (once refused: compiled code could not take a dict cotangent back)
    x = np.array([0.3, 0.5])
    for jac in (s2s.jit(s2s.jacrev(dict_output))(x), s2s.jacrev(dict_output)(x)):
        assert sorted(jac) == ["a", "b"]
        np.testing.assert_allclose(jac["a"], 2 * np.eye(2))
        np.testing.assert_allclose(jac["b"], np.diag(np.cos(x)), rtol=1e-14)
    assert s2s.jit(dict_output)(x).keys() == {"a", "b"}


def test_repeated_compiled_calls_see_each_call_s_kinds_of_arguments():
    """s2s.jit(grad) remembers what the first call of each kind of plain arguments settled (the
    seed, the checks, the compiled entry): calls after it, of other dtypes, by keyword, with
    defaults or with integers, are each treated as their own kind."""
    g = s2s.jit(s2s.grad(power_with_default))
    x = np.array([1.0, 2.0, 3.0])
    for _ in range(2):  # (the second round takes the remembered path)
        np.testing.assert_allclose(g(x, 2.0), 2 * x, rtol=1e-14)  # d/dx sum(x^a) = a x^(a-1)
        single = g(x.astype(np.float32), 2.0)
        assert single.dtype == np.float32
        np.testing.assert_allclose(single, 2 * x, rtol=1e-6)
        np.testing.assert_allclose(g(x, a=3.0), 3 * x**2, rtol=1e-14)
        np.testing.assert_allclose(g(x), 2 * x, rtol=1e-14)
        np.testing.assert_allclose(g(x[::-1], 2.0), 2 * x[::-1], rtol=1e-14)  # (a strided view)
        with pytest.raises(s2s.S2SError, match="holds integers"):
            g(np.array([1, 2, 3]), 2.0)
    value_and_grad = s2s.jit(s2s.value_and_grad(power_with_default))
    for _ in range(2):
        value, grad = value_and_grad(x.astype(np.float32), 2.0)
        assert value == pytest.approx(14.0) and grad.dtype == np.float32
        np.testing.assert_allclose(grad, 2 * x, rtol=1e-6)


def no_copies(a):
    return np.repeat(a, 0) * 2.0


def sum_of_rows(a):
    return np.sum(a, axis=0) * 3.0


@pytest.mark.parametrize("jit", [False, True])
def test_jacobians_with_no_rows_or_no_columns_are_empty(jit):
    """An output (jacrev) or an input (jacfwd) with no elements: JAX's empty Jacobian, of the
    output's shape then the input's (there is no row to pull, no column to push)."""
    wrap = s2s.jit if jit else (lambda f: f)
    a = np.arange(24.0).reshape(2, 3, 4)
    for jacobian in (s2s.jacrev, s2s.jacfwd):
        assert wrap(jacobian(no_copies))(a).shape == (0, 2, 3, 4)
        empty = wrap(jacobian(sum_of_rows))(np.zeros((0, 3)))
        assert empty.shape == (3, 0, 3)
    np.testing.assert_array_equal(wrap(s2s.jacrev(sum_of_rows))(np.ones((2, 3))),
                                  3.0 * np.stack([np.eye(3)] * 2, axis=1))
