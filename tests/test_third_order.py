"""Third derivatives composed as JAX composes them: jacfwd(hessian(f)), hessian(grad(f)),
jacrev(jacfwd(jacrev(f))), grad(hessian(f)) of a number, grad(jacfwd(f)), ..., checked against
closed forms and central differences of hand-written second derivatives (never s2s itself),
on the python backend and under s2s.jit; and what stays refused, with its way out."""

import collections
import math

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, where


# ---- a scalar function of an array, with mixed terms, and its closed-form derivatives -----


def cubic_mix(x):
    return np.sum(np.sin(x) * x**3) + x[0] * x[1] * x[2] + np.exp(x[1] * x[2])


def cubic_mix_tensor(x):
    """d3 cubic_mix / dx_i dx_j dx_k, by hand."""
    s, c = np.sin(x), np.cos(x)
    T = np.zeros((3, 3, 3))
    for i in range(3):  # d3/dx3 (x^3 sin x)
        T[i, i, i] = 6 * s[i] + 18 * x[i] * c[i] - 9 * x[i] ** 2 * s[i] - x[i] ** 3 * c[i]
    for p in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
        T[p] += 1.0  # x0 x1 x2
    e = math.exp(x[1] * x[2])  # exp(x1 x2): d3/dx1^2 dx2 = e (2 x1 + x1^2 x2), and so on
    for (i, j, k), value in {(1, 1, 1): x[2] ** 3 * e, (2, 2, 2): x[1] ** 3 * e,
                             (1, 1, 2): (2 * x[2] + x[1] * x[2] ** 2) * e,
                             (2, 2, 1): (2 * x[1] + x[2] * x[1] ** 2) * e}.items():
        for p in {(i, j, k), (i, k, j), (k, i, j)}:
            T[p] += value
    return T


X = np.array([0.3, -0.7, 1.1])

COMPOSITIONS = {
    "jacfwd(hessian(f))": lambda f: s2s.jacfwd(s2s.hessian(f)),
    "jacrev(hessian(f))": lambda f: s2s.jacrev(s2s.hessian(f)),
    "hessian(grad(f))": lambda f: s2s.hessian(s2s.grad(f)),
    "jacfwd(jacfwd(jacrev(f)))": lambda f: s2s.jacfwd(s2s.jacfwd(s2s.jacrev(f))),
    "jacrev(jacfwd(jacrev(f)))": lambda f: s2s.jacrev(s2s.jacfwd(s2s.jacrev(f))),
    "jacfwd(jacfwd(grad(f)))": lambda f: s2s.jacfwd(s2s.jacfwd(s2s.grad(f))),
}


@pytest.mark.parametrize("compose", COMPOSITIONS.values(), ids=COMPOSITIONS.keys())
def test_third_derivative_tensors_match_the_closed_form(compose):
    T = compose(cubic_mix)(X)
    assert T.shape == (3, 3, 3)
    np.testing.assert_allclose(T, cubic_mix_tensor(X), rtol=1e-12, atol=1e-12)


def test_the_third_derivative_compiles_under_jit_and_agrees():
    third = s2s.jit(s2s.jacfwd(s2s.hessian(cubic_mix)))
    np.testing.assert_allclose(third(X), cubic_mix_tensor(X), rtol=1e-12, atol=1e-12)
    # float32 in, float32 out, as grad (on the python backend: one Numba compile is enough here)
    assert s2s.jacfwd(s2s.hessian(cubic_mix))(X.astype(np.float32)).dtype == np.float32


# ---- an array output and two arguments: central differences of hand-written Hessians -----


def bilinear_field(x, y):
    return np.array([x[0] ** 2 * x[1] * y[0], np.sin(x[0] * y[1]) * x[1] ** 2])


def bilinear_field_hessian_x(x, y):
    """d2 bilinear_field[o] / dx_i dx_j, by hand."""
    H = np.zeros((2, 2, 2))
    H[0, 0, 0], H[0, 0, 1] = 2 * x[1] * y[0], 2 * x[0] * y[0]
    H[0, 1, 0] = 2 * x[0] * y[0]
    s, c = math.sin(x[0] * y[1]), math.cos(x[0] * y[1])
    H[1, 0, 0] = -s * y[1] ** 2 * x[1] ** 2
    H[1, 0, 1] = H[1, 1, 0] = 2 * c * y[1] * x[1]
    H[1, 1, 1] = 2 * s
    return H


def differences(fun, z, h=1e-5):
    """d fun / dz (fun array-valued), by central differences: fun's shape + z's shape."""
    return np.stack([(fun(z + h * e) - fun(z - h * e)) / (2 * h) for e in np.eye(z.size)], axis=-1)


def test_an_array_output_and_a_second_argument_match_differences_of_the_hand_written_hessian():
    x, y = np.array([0.4, 1.3]), np.array([0.8, -0.6])
    by_x = s2s.jacfwd(s2s.jacfwd(s2s.jacrev(bilinear_field)))(x, y)
    assert by_x.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(by_x, differences(lambda z: bilinear_field_hessian_x(z, y), x), atol=1e-8)
    by_y = s2s.jacrev(s2s.jacfwd(s2s.jacrev(bilinear_field)), argnums=1)(x, y)
    np.testing.assert_allclose(by_y, differences(lambda z: bilinear_field_hessian_x(x, z), y), atol=1e-8)


# ---- grad of a number-valued second derivative; grad of jacfwd --------------------------


def quintic(t):
    return t**5 * np.sin(t)


def test_grad_of_a_hessian_or_jacobian_of_a_number_matches_the_closed_form():
    t = 0.8
    s, c = math.sin(t), math.cos(t)
    second = 20 * t**3 * s + 10 * t**4 * c - t**5 * s
    third = 60 * t**2 * s + 60 * t**3 * c - 15 * t**4 * s - t**5 * c
    assert s2s.grad(s2s.jacfwd(quintic))(t) == pytest.approx(second, rel=1e-13)
    assert s2s.grad(s2s.hessian(quintic))(t) == pytest.approx(third, rel=1e-13)
    assert s2s.grad(s2s.jacfwd(s2s.jacrev(quintic)))(t) == pytest.approx(third, rel=1e-13)
    assert s2s.jacfwd(s2s.grad(s2s.grad(quintic)))(t) == pytest.approx(third, rel=1e-13)


def scaled_norm(t, y):
    return np.sin(t) * np.sum(y**2)


def test_grad_of_grad_with_respect_to_an_array_argument_is_an_array():
    # was a number (the first element) before: grad(grad(f, 0), 1) of f(t, y), y an array
    t, y = 0.3, np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(s2s.grad(s2s.grad(scaled_norm, 0), 1)(t, y), 2 * math.cos(t) * y, rtol=1e-13)
    # and the third: d/dt of that
    np.testing.assert_allclose(s2s.jacfwd(s2s.grad(s2s.grad(scaled_norm, 0), 1))(t, y), -2 * math.sin(t) * y,
                               rtol=1e-13)


# ---- what stays refused, and its way out ------------------------------------------------


def test_fourth_derivatives_are_refused():
    for make in (lambda: s2s.jacfwd(s2s.jacfwd(s2s.hessian(cubic_mix))),
                 lambda: s2s.hessian(s2s.hessian(cubic_mix)),
                 lambda: s2s.grad(s2s.grad(s2s.grad(s2s.grad(quintic))))):
        with pytest.raises(s2s.S2SError, match="fourth derivatives"):
            make()


def test_derivatives_of_value_and_grad_are_refused():
    # (jacfwd(value_and_grad(f)) gave the Hessian alone, where JAX gives the pair (gradient, Hessian))
    for make in (s2s.jacfwd, s2s.jacrev, s2s.hessian):
        with pytest.raises(s2s.S2SError, match=r"derivatives of s2s.value_and_grad\(f\) are not supported"):
            make(s2s.value_and_grad(cubic_mix))(X)


def test_grad_of_an_array_valued_second_derivative_is_refused_with_the_jacobian_as_way_out():
    with pytest.raises(s2s.S2SError, match=r"has shape \(3, 3\).*s2s.jacfwd\(s2s.hessian\(f\)\)"):
        s2s.grad(s2s.hessian(cubic_mix))(X)


# ---- s2s.grad, hessian, jacfwd called inside a transformed function ----------------------


def trace_of_hessian(x):
    return np.trace(s2s.hessian(cubic_mix)(x))


def test_the_gradient_of_a_laplacian_matches_the_closed_form():
    expected = np.einsum("iik->k", cubic_mix_tensor(X))
    np.testing.assert_allclose(s2s.grad(trace_of_hessian)(X), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2s.jacfwd(trace_of_hessian)(X), expected, rtol=1e-12, atol=1e-12)


def cubic_mix_gradient(x):
    """d cubic_mix / dx, by hand."""
    g = np.sin(x) * 3 * x**2 + np.cos(x) * x**3
    g += np.array([x[1] * x[2], x[0] * x[2], x[0] * x[1]])
    e = math.exp(x[1] * x[2])
    g[1] += x[2] * e
    g[2] += x[1] * e
    return g


def gradient_penalty(x):
    return np.sum(s2s.grad(cubic_mix)(x) ** 2)


def velocity(x):
    return np.array([x[0] ** 2 * x[1], np.sin(x[1]) * x[2], x[2] ** 3])


def divergence(x):
    return np.trace(s2s.jacfwd(velocity)(x))


def test_a_gradient_penalty_and_a_divergence_match_differences_and_closed_forms():
    def penalty_by_hand(z):
        return np.sum(cubic_mix_gradient(z) ** 2)

    h = 1e-6
    reference = np.array([(penalty_by_hand(X + h * e) - penalty_by_hand(X - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(s2s.grad(gradient_penalty)(X), reference, rtol=1e-7)
    # div v = 2 x0 x1 + cos(x1) x2 + 3 x2^2
    expected = [2 * X[1], 2 * X[0] - math.sin(X[1]) * X[2], math.cos(X[1]) + 6 * X[2]]
    np.testing.assert_allclose(s2s.grad(divergence)(X), expected, rtol=1e-13)


cubic_mix_grad = s2s.grad(cubic_mix)
cubic_mix_hessian = s2s.jit(s2s.hessian(cubic_mix))  # (jitted: its code is read as the plain transform's)


def penalty_of_a_transform_made_outside(x):
    return np.sum(cubic_mix_grad(x) ** 2) + np.trace(cubic_mix_hessian(x))


def test_a_transform_made_outside_and_called_inside():
    # g = s2s.grad(f) at module level and g(x) inside, as JAX code writes it
    def penalty_by_hand(z):
        return np.sum(cubic_mix_gradient(z) ** 2)

    h = 1e-6
    expected = np.array([(penalty_by_hand(X + h * e) - penalty_by_hand(X - h * e)) / (2 * h) for e in np.eye(3)])
    expected += np.einsum("iik->k", cubic_mix_tensor(X))
    np.testing.assert_allclose(s2s.grad(penalty_of_a_transform_made_outside)(X), expected, rtol=1e-7)


# A physics-informed loss: u(p, z) = p0 sin(z0) exp(z1) + p1 z0^3 z1 + p2 |z|^2 on points z,
# and the sum over points of (laplacian_z u - source)^2, differentiated with respect to p.


def field(p, z):
    return p[0] * np.sin(z[0]) * np.exp(z[1]) + p[1] * z[0] ** 3 * z[1] + p[2] * np.sum(z**2)


def residual_loss(p, points, source):
    total = 0.0
    for k in range(points.shape[0]):
        laplacian = np.trace(s2s.hessian(field, argnums=1)(p, points[k]))
        total = total + (laplacian - source[k]) ** 2
    return total


def residual_loss_grad_by_hand(p, points, source):
    """laplacian u = 0 p0 (sin exp is harmonic) + 6 z0 z1 p1 + 4 p2: the loss is quadratic in p."""
    g = np.zeros(3)
    for z, s in zip(points, source):
        basis = np.array([0.0, 6 * z[0] * z[1], 4.0])
        g += 2 * (basis @ p - s) * basis
    return g


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_the_gradient_of_a_physics_informed_loss(backend):
    p = np.array([0.7, -0.4, 1.3])
    points = np.array([[0.2, 0.9], [-0.5, 0.4], [1.1, -0.3]])
    source = np.array([1.0, -2.0, 0.5])
    got = s2s.jit(s2s.grad(residual_loss), backend=backend)(p, points, source)
    np.testing.assert_allclose(got, residual_loss_grad_by_hand(p, points, source), rtol=1e-12, atol=1e-12)


def slope_of_a_number(t):
    return s2s.grad(quintic)(t) ** 2


def gradient_of_an_array(x):
    return np.sum(s2s.grad(velocity)(x))


def hessian_with_aux(x):
    return np.sum(s2s.hessian(cubic_mix, has_aux=True)(x))


def hessian_of_a_number(t):
    return s2s.hessian(quintic)(t)


def test_what_stays_refused_inside_a_transformed_function():
    # (checks made as the written helper runs: each names the user's statement that called it)
    with pytest.raises(s2s.S2SError, match=r"takes an array as its argument t, not a number.*s2s.jvp") as info:
        s2s.grad(hessian_of_a_number)(0.4)
    assert where(hessian_of_a_number, "s2s.hessian(quintic)") in str(info.value)
    with pytest.raises(s2s.S2SError, match=r"number output; for an array output use s2s.jacfwd\(velocity\)") as info:
        s2s.grad(gradient_of_an_array)(X)
    assert where(gradient_of_an_array, "s2s.grad(velocity)") in str(info.value)
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(hessian_with_aux)(X)
    assert where(hessian_with_aux, "has_aux") in str(info.value) and "argnums only" in str(info.value)


# ---- s2s.grad of numbers, tuples, grad of grad, closures and value_and_grad inside ---------


def _fanout(x):
    return np.sin(np.sin(x) + np.sin(x))


def _fanout2(x, y):
    return np.sin(np.sin(x) + np.sin(y)) * x * y


def _inner_prod(t):
    return t[0] * t[1]


def _sinsq(x):
    return np.sum(np.sin(x) ** 2)


def grad_of_a_number(x):  # the gradient of a function of a number is a number, as JAX's
    return s2s.grad(_fanout)(x)


def grad_of_grad(x):
    return s2s.grad(s2s.grad(_fanout))(x)


def grad_of_another_number_argument(x, y):
    return s2s.grad(_fanout2, 1)(x, y)


def grad_of_a_tuple_argument(x):
    return np.sum(np.sin(np.array(s2s.grad(_inner_prod)((x, x)))))


def grad_of_a_lambda_closing_over_x(x):
    inner_fun = lambda y: x * y  # noqa: E731
    return x * s2s.grad(inner_fun)(2.0)


def grad_of_a_nested_def_closing_over_x(x):
    def inner_fun(y):
        return y * x
    return x * s2s.grad(inner_fun)(2.0)


def grad_of_an_inline_lambda(x):
    return s2s.grad(lambda y: np.exp(y) * np.tanh(x[0]))(x[1])


def value_and_grad_inside(x):
    return s2s.value_and_grad(_sinsq)(x)[0] + np.sum(s2s.value_and_grad(_sinsq)(x)[1] ** 2)


def _dict_energy(p):
    return np.sum(np.sin(p["a"]) * p["b"]) + p["c"] ** 2


def grad_of_a_dict_argument(x):  # the gradient of a function of a dict is a dict with its keys
    g = s2s.grad(_dict_energy)({"a": x, "b": 2.0 * x, "c": x[0]})
    return np.sum(np.sin(g["a"])) + np.sum(g["b"] ** 2) + g["c"]


NESTED_CASES = {
    grad_of_a_number: (0.7,),
    grad_of_grad: (0.7,),
    grad_of_another_number_argument: (0.7, 0.4),
    grad_of_a_tuple_argument: (0.7,),
    grad_of_a_lambda_closing_over_x: (0.7,),
    grad_of_a_nested_def_closing_over_x: (0.7,),
    grad_of_an_inline_lambda: (np.array([0.3, 0.8]),),
    value_and_grad_inside: (np.array([0.3, 0.8, -0.5]),),
    grad_of_a_dict_argument: (np.array([0.3, 0.8, -0.5]),),
}


@pytest.mark.parametrize("fun", list(NESTED_CASES), ids=lambda f: f.__name__)
def test_nested_grads_of_numbers_tuples_closures_and_grads_match_differences(fun):
    args = NESTED_CASES[fun]
    expected = central_difference_grad(fun, args, 0, h=1e-5)
    got = s2s.grad(fun)(*args)
    assert np.ndim(got) == np.ndim(args[0])
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8)
    tangent = np.ones_like(args[0]) if np.ndim(args[0]) else 1.0
    out, slope = s2s.jvp(fun, args, (tangent,) + tuple(0.0 for _ in args[1:]))
    np.testing.assert_allclose(out, fun(*args), rtol=1e-13)
    np.testing.assert_allclose(slope, np.sum(expected), rtol=1e-7, atol=1e-8)


def test_the_gradient_of_a_number_inside_is_a_number_and_closures_carry_their_derivative():
    assert isinstance(s2s.grad(_fanout)(0.7), float)  # (outside, as a reference)
    assert type(grad_of_a_number(0.7)) is type(s2s.grad(_fanout)(0.7))
    # d/dx x * grad(lambda y: x * y)(2.0) = d/dx x * x = 2x
    assert s2s.grad(grad_of_a_lambda_closing_over_x)(0.7) == pytest.approx(1.4, rel=1e-14)
    assert s2s.grad(grad_of_a_nested_def_closing_over_x)(-1.5) == pytest.approx(-3.0, rel=1e-14)
    # the third derivative of sin(2 sin x), by hand: f' = 2 cos(2 sin x) cos x
    def second(x):
        return -4 * np.sin(2 * np.sin(x)) * np.cos(x) ** 2 - 2 * np.cos(2 * np.sin(x)) * np.sin(x)
    assert grad_of_grad(0.7) == pytest.approx(second(0.7), rel=1e-12)


def test_nested_grads_of_a_number_and_a_closure_compile_under_jit():
    def both(x):
        return grad_of_grad(x) + grad_of_a_lambda_closing_over_x(x) + grad_of_a_tuple_argument(x)

    got = s2s.jit(s2s.grad(both))(0.7)
    expected = central_difference_grad(both, (0.7,), 0, h=1e-5)
    assert got == pytest.approx(float(expected), rel=1e-7)


Pair = collections.namedtuple("Pair", "w b")


def _pair_energy(p):
    return np.sum(np.cos(p.w) * p.b)


def grads_of_a_namedtuple(p):
    return s2s.grad(_pair_energy)(p)


def grads_of_a_dict_in_a_nested_def(params, x):
    def loss_fn(q):
        return np.sum(np.tanh(x @ q["w"] + q["b"]) ** 2)
    return s2s.grad(loss_fn)(params)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_nested_grads_of_a_dict_and_a_namedtuple_have_their_structure_under_jit(backend):
    rng = np.random.default_rng(3)
    params, x = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}, rng.normal(size=(4, 3))
    got = s2s.jit(grads_of_a_dict_in_a_nested_def, backend=backend)(params, x)
    assert isinstance(got, dict) and sorted(got) == ["b", "w"]

    def loss(w, b):
        return np.sum(np.tanh(x @ w + b) ** 2)

    for k, key in enumerate(["w", "b"]):
        expected = central_difference_grad(loss, (params["w"], params["b"]), k)
        np.testing.assert_allclose(got[key], expected, rtol=1e-7, atol=1e-9)
    pair = Pair(np.array([0.3, 0.8]), np.array([1.5, -0.5]))
    got = s2s.jit(grads_of_a_namedtuple, backend=backend)(pair)
    assert type(got) is Pair
    np.testing.assert_allclose(got.w, central_difference_grad(lambda w: _pair_energy(Pair(w, pair.b)), (pair.w,), 0),
                               rtol=1e-7)
    np.testing.assert_allclose(got.b, central_difference_grad(lambda b: _pair_energy(Pair(pair.w, b)), (pair.b,), 0),
                               rtol=1e-7)


def _rollout_energy(w, x):
    """A loop of tanh updates: its reverse mode keeps a tape of the steps."""
    h = x
    for _ in range(4):
        h = np.tanh(w @ h + 0.1)
    return np.sum(h ** 2), h


def gradient_step_in_a_compiled_function(w, x):
    grad_fn = s2s.value_and_grad(_rollout_energy, has_aux=True)
    (energy, h), g = grad_fn(w, x)
    return w - 0.1 * g, energy, h


def nested_grad_of_a_loop(w, x):
    return s2s.grad(lambda v: _rollout_energy(v, x)[0])(w)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_nested_grad_in_a_function_compiled_only_is_one_reverse_sweep(backend):
    """Where the function around is compiled and not differentiated, s2s.grad(f)(w) is a call of
    f's generated reverse mode (its tape included), not one jvp per number of w; has_aux and a
    transform bound to a name first (grad_fn = s2s.value_and_grad(f, has_aux=True)) too."""
    rng = np.random.default_rng(5)
    w, x = rng.normal(size=(3, 3)) * 0.6, rng.normal(size=3)
    expected = central_difference_grad(lambda v: _rollout_energy(v, x)[0], (w,), 0)
    jitted = s2s.jit(nested_grad_of_a_loop, backend=backend)
    np.testing.assert_allclose(jitted(w, x), expected, rtol=1e-7, atol=1e-9)
    assert "def _rollout_energy_vjp_wrt_w(" in s2s.source(jitted) and "_jvp" not in s2s.source(jitted)
    stepped, energy, h = s2s.jit(gradient_step_in_a_compiled_function, backend=backend)(w, x)
    np.testing.assert_allclose(stepped, w - 0.1 * expected, rtol=1e-7, atol=1e-9)
    assert energy == pytest.approx(_rollout_energy(w, x)[0], rel=1e-14)
    np.testing.assert_allclose(h, _rollout_energy(w, x)[1], rtol=1e-14)


def test_has_aux_inside_a_function_that_is_differentiated_is_refused_at_its_line():
    with pytest.raises(s2s.S2SError, match=r"has_aux=True\) inside a function s2s differentiates") as info:
        s2s.grad(lambda w, x: np.sum(gradient_step_in_a_compiled_function(w, x)[0]))(np.eye(3), np.ones(3))
    assert where(gradient_step_in_a_compiled_function, "has_aux") in str(info.value)


def grad_of_a_lambda_in_a_loop_body(x):
    return s2s.lax.fori_loop(0, 2, lambda i, c: c + s2s.grad(lambda y: x * y)(c), x)


def grad_of_a_lambda_with_a_default(x):
    return s2s.grad(lambda y, c=2.0: x * y * c)(1.0)


def test_what_stays_refused_of_nested_functions_given_to_grad():
    with pytest.raises(s2s.S2SError, match=r"in the body of the transformed function itself") as info:
        s2s.grad(grad_of_a_lambda_in_a_loop_body)(0.5)
    assert where(grad_of_a_lambda_in_a_loop_body, "lambda y") in str(info.value)
    with pytest.raises(s2s.S2SError, match=r"plain positional parameters") as info:
        s2s.grad(grad_of_a_lambda_with_a_default)(0.5)
    assert where(grad_of_a_lambda_with_a_default, "lambda y") in str(info.value)
