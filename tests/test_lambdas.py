"""Lambdas, as JAX code writes them: s2s.grad(lambda p: loss(p, x, y)), s2s.jvp(lambda u: f(u, c),
...) inside a transformed function, module-level lambdas called by a def. Every derivative is
checked against a closed form or central differences."""

from __future__ import annotations

import numpy as np
import pytest

import s2s

C = 3.0
X = np.array([0.1, 0.5, 0.9])


def scaled_sines(x, c):
    return np.sum(np.sin(x) * c)


square = lambda u: u * u  # noqa: E731  (module-level lambdas, called by a def)
cube = lambda u: u ** 3  # noqa: E731


def square_plus_cube(x):
    return np.sum(square(x) + cube(x))


def path(x, rate):
    s = x
    for _ in range(5):
        s = s * np.exp(rate) + 0.1 * np.sin(s)
    return s


def slope_along_x(x, rate):  # JAX's jvp of a closure, inside a transformed function
    return s2s.jvp(lambda u: path(u, rate), (x,), (1.0,))[1]


def slope_along_rate(x, rate):  # the lambda's parameter in another place of the call
    y, y_dot = s2s.jvp(lambda r: path(x, r), (rate,), (1.0,))
    return y + y_dot


def passes_a_parameter_twice(x):
    return s2s.jvp(lambda u: path(u, u), (x,), (1.0,))[1]


def computes_with_a_parameter(x, rate):
    return s2s.jvp(lambda u: path(u * 2.0, rate), (x,), (1.0,))[1]


def jvp_of_a_nested_def(x, rate):
    def along(u):
        return path(u, rate)
    return s2s.jvp(along, (x,), (1.0,))[1]


def central_difference(fun, x, h=1e-6):
    return (fun(x + h) - fun(x - h)) / (2 * h)


def test_transforms_of_a_lambda_against_closed_forms():
    cos = C * np.cos(X)
    np.testing.assert_allclose(s2s.grad(lambda x: scaled_sines(x, C))(X), cos, rtol=1e-14)
    value, gradient = s2s.value_and_grad(lambda x: scaled_sines(x, C))(X)
    np.testing.assert_allclose(value, C * np.sum(np.sin(X)), rtol=1e-14)
    np.testing.assert_allclose(gradient, cos, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(lambda x: scaled_sines(x, C)))(X), cos, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(lambda x: scaled_sines(x, C))(X), C * np.sum(np.sin(X)), rtol=1e-14)
    _, tangent = s2s.jvp(lambda x: scaled_sines(x, C), (X,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.sum(cos), rtol=1e-14)
    _, pullback = s2s.vjp(lambda x: scaled_sines(x, C), X)
    np.testing.assert_allclose(pullback(1.0)[0], cos, rtol=1e-14)
    np.testing.assert_allclose(s2s.jacfwd(lambda x: np.sin(x) * C)(X), np.diag(cos), rtol=1e-14)
    np.testing.assert_allclose(s2s.jacrev(lambda x: np.sin(x) * C)(X), np.diag(cos), rtol=1e-14)
    np.testing.assert_allclose(s2s.hessian(lambda x: scaled_sines(x, C))(X), np.diag(-C * np.sin(X)),
                               rtol=1e-14, atol=1e-15)
    per_example = s2s.jit(s2s.vmap(s2s.grad(lambda x: np.sin(x) * C)))(X)
    np.testing.assert_allclose(per_example, cos, rtol=1e-14)
    np.testing.assert_allclose(s2s.pmap(lambda x: x * 2.0)(np.ones((1, 3))), 2.0 * np.ones((1, 3)))


def test_a_default_captures_as_in_python():
    c = 5.0
    gradient = s2s.grad(lambda x, c=c: scaled_sines(x, c))(X)
    np.testing.assert_allclose(gradient, c * np.cos(X), rtol=1e-14)


def test_two_lambdas_on_one_line_get_modules_of_their_own():
    two, five = s2s.grad(lambda x: scaled_sines(x, 2.0)), s2s.grad(lambda x: scaled_sines(x, 5.0))
    np.testing.assert_allclose(two(X), 2.0 * np.cos(X), rtol=1e-14)
    np.testing.assert_allclose(five(X), 5.0 * np.cos(X), rtol=1e-14)
    assert "def lambda_" in two.source and "_1_vjp(" in two.source and "_2_vjp(" in five.source


def test_the_generated_code_names_the_lambda_by_its_line():
    line = test_the_generated_code_names_the_lambda_by_its_line.__code__.co_firstlineno + 2
    transformed = s2s.grad(lambda x: scaled_sines(x, C))
    transformed(X)
    assert f"def lambda_{line}_vjp(x, out_bar):" in transformed.source
    assert f"test_lambdas.py:{line}" in transformed.source


def test_module_level_lambdas_called_by_a_def():
    want = 2 * X + 3 * X ** 2
    np.testing.assert_allclose(s2s.grad(square_plus_cube)(X), want, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(square_plus_cube))(X), want, rtol=1e-14)


def test_a_lambda_returned_by_a_function_keeps_its_closure():
    make = lambda a: (lambda b: b * a * a)  # noqa: E731
    assert s2s.grad(make(3.0))(2.0) == 9.0
    assert s2s.grad(make(4.0))(2.0) == 16.0


def test_an_error_in_a_lambda_names_its_line_and_column():
    line = test_an_error_in_a_lambda_names_its_line_and_column.__code__.co_firstlineno + 4
    with pytest.raises(s2s.S2SError, match="set comprehensions are not supported") as info:
        s2s.grad(
            lambda x: np.sum(np.array({v for v in x})))(X)
    assert info.value.origin.line == line
    assert info.value.origin.column == 39  # the comprehension, in the file's columns (1-based)


def test_a_lambda_after_other_characters_on_its_line():
    ä = 2.0  # (code objects count columns in UTF-8 bytes)
    np.testing.assert_allclose(s2s.grad(lambda x: np.sum(x * x) * ä)(X), 2 * ä * X, rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_of_a_closing_lambda_inside_a_transform(backend):
    """s2s.jvp(lambda u: f(u, c), (x,), (t,)) is f's forward mode with a zero tangent for c:
    against central differences, under jit and vmap, and differentiated again (reverse over
    forward), also with respect to what the lambda closes over."""
    x, rate = 0.7, 0.05
    h = 1e-6
    run = s2s.jit(slope_along_x, backend=backend)
    np.testing.assert_allclose(run(x, rate), central_difference(lambda u: path(u, rate), x), rtol=1e-7)
    value_and_slope = s2s.jit(slope_along_rate, backend=backend)(x, rate)
    np.testing.assert_allclose(value_and_slope, path(x, rate) + central_difference(lambda r: path(x, r), rate),
                               rtol=1e-7)
    xs = np.linspace(0.2, 1.0, 5)
    batched = s2s.jit(s2s.vmap(slope_along_x, in_axes=(0, None)), backend=backend)(xs, rate)
    np.testing.assert_allclose(batched, [central_difference(lambda u: path(u, rate), v) for v in xs], rtol=1e-7)
    second = s2s.jit(s2s.grad(slope_along_x, argnums=(0, 1)), backend=backend)(x, rate)
    want_x = (slope_along_x(x + h, rate) - slope_along_x(x - h, rate)) / (2 * h)
    want_rate = (slope_along_x(x, rate + h) - slope_along_x(x, rate - h)) / (2 * h)
    np.testing.assert_allclose(second, (want_x, want_rate), rtol=1e-6)


@pytest.mark.parametrize("fun, says", [
    (passes_a_parameter_twice, "passes each of its 1 parameters once"),
    (computes_with_a_parameter, "passes its parameters as whole arguments"),
    (jvp_of_a_nested_def, "not a function it defines"),
])
def test_jvp_of_other_closures_inside_a_transform_is_refused(fun, says):
    with pytest.raises(s2s.S2SError, match=says) as info:
        s2s.jit(fun)(0.7, 0.05) if fun is not passes_a_parameter_twice else s2s.jit(fun)(0.7)
    assert info.value.origin is not None and info.value.origin.filename.endswith("test_lambdas.py")
    assert "s2s.jvp(f, (x, c), (t, 0.0))" in str(info.value)
