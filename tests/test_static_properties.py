"""Tests of a value's ndim in code generated for one kind of call (s2s/transforms/static_properties.py):
`if z.ndim == 1:`, `np.ndim(z)`, `len(np.shape(z))` on an array the function computes are decided for the
arguments s2s.jit specialises to (numbers, arrays and their ndim), and the branch not taken is dropped,
so that Numba, which types both branches of a test of a computed array's ndim, compiles the function.
Values and derivatives against NumPy and central differences, for each kind of argument; the generated
code with the test decided."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, hessian_by_differences


def sums_a_vector(x, a):
    z = np.exp(x * a)
    if z.ndim == 1:
        return np.sum(z)
    return z


def normalised_where_an_array(x, mean):
    pdf = np.exp(-(np.asarray(x) - mean) ** 2)
    if len(np.shape(pdf)) > 0:
        return np.sum(pdf / np.sum(pdf) * pdf)
    return pdf * 2.0


def flag_and_matrix(x, flag):
    z = np.tanh(x)
    if flag and np.ndim(z) == 2:  # false wherever z is not a matrix, whatever flag is
        return np.sum(z @ z)
    return np.sum(z * z)


CASES = [
    (sums_a_vector, (0.4, 3.0)),
    (sums_a_vector, (np.array([0.1, -0.3]), 3.0)),
    (normalised_where_an_array, (1.3, 0.5)),
    (normalised_where_an_array, (np.array([1.3, 0.2, -0.4]), 0.5)),
    (flag_and_matrix, (np.array([0.1, -0.3]), True)),
    (flag_and_matrix, (np.array([[0.1, -0.3], [0.7, 0.2]]), True)),
]


@pytest.mark.parametrize("fun, args", CASES, ids=lambda v: getattr(v, "__name__", None) or f"ndim {np.ndim(v[0])}")
def test_gradients_under_jit_agree_with_differences(fun, args):
    reference = central_difference_grad(fun, args, 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(*args), reference, rtol=1e-6)
    np.testing.assert_allclose(s2s.grad(fun)(*args), reference, rtol=1e-6)


@pytest.mark.parametrize("x", [0.4, np.array([0.1, -0.3])], ids=["number", "vector"])
def test_jvp_compiled_agrees_with_differences(x):
    t = np.ones_like(x)
    reference = np.sum(central_difference_grad(sums_a_vector, (x, 3.0), 0) * t)
    tangent = s2s.jvp(sums_a_vector, (x, 3.0), (t, 0.0), backend="cpu")[1]
    assert tangent == pytest.approx(float(reference), rel=1e-6)


def test_the_test_is_decided_in_the_generated_code():
    jitted = s2s.jit(s2s.grad(sums_a_vector))
    jitted(np.array([0.1, -0.3]), 3.0)
    source = s2s.source(jitted)
    assert ".ndim" not in source and "if " not in source.split("def sums_a_vector_vjp")[1]
    # the python backend's code, for any argument, keeps the test
    assert ".ndim" in s2s.source(s2s.grad(sums_a_vector))


@pytest.mark.parametrize("fun, args", CASES, ids=lambda v: getattr(v, "__name__", None) or f"ndim {np.ndim(v[0])}")
def test_the_function_itself_under_jit_gives_numpys_values(fun, args):
    np.testing.assert_allclose(s2s.jit(fun)(*args), fun(*args), rtol=1e-14)


def test_a_jitted_function_is_generated_for_each_kind_of_call_where_it_tests_an_ndim():
    jitted = s2s.jit(sums_a_vector)
    jitted(np.array([0.1, -0.3]), 3.0)
    assert "Specialised (s2s.jit) for arguments: x 1-d array, a float." in s2s.source(jitted)
    assert ".ndim" not in s2s.source(jitted).split("def sums_a_vector")[1]
    assert jitted(0.4, 3.0) == pytest.approx(sums_a_vector(0.4, 3.0))
    assert "x float" in s2s.source(jitted)
    # a function that tests no ndim is generated once, for every call
    plain = s2s.jit(clipped)
    plain(np.array([0.1, -0.3]))
    assert "Specialised" not in s2s.source(plain)


def clipped(x):
    return np.sum(np.clip(x, 0.0, 1.0) * x.shape[0])


def sum_of_squares_or_of_products(x):
    z = np.sin(x)
    if z.ndim == 1:
        return np.sum(z ** 2)
    return np.sum(z[:, 0] * z[:, 1])


def flattened_where_a_matrix(x):
    if x.ndim == 2:
        x = x.reshape(-1)
    return np.sum(x ** 3)


@pytest.mark.parametrize("fun, x", [(sum_of_squares_or_of_products, np.array([0.3, -1.2, 0.8])),
                                    (sum_of_squares_or_of_products, np.array([[0.3, -1.2], [0.8, 0.5]])),
                                    (flattened_where_a_matrix, np.array([[0.3, -1.2], [0.8, 0.5]]))],
                         ids=["1-d", "2-d", "reshaped"])
def test_hessians_and_vmap_under_jit_decide_the_test_for_the_call(fun, x):
    """The Hessian under s2s.jit takes the vjp generated for the call's kinds where it tests an
    ndim (as s2s.jit of the function and of its gradient do), and vmap's compiled kernel the code
    generated for the example's: against differences of the gradient, and NumPy per example."""
    hessian = s2s.jit(s2s.hessian(fun))(x)
    reference = hessian_by_differences(lambda v: fun(v.reshape(x.shape)), x.ravel())
    np.testing.assert_allclose(hessian.reshape(x.size, x.size), reference, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(x), central_difference_grad(fun, (x,), 0), rtol=1e-6)
    batch = np.stack([x, 0.5 * x, -x])
    np.testing.assert_allclose(s2s.jit(s2s.vmap(fun))(batch), [fun(row) for row in batch], rtol=1e-13)


def normalised_rows(x):
    z = x * 2.0 - 1.0
    if z.ndim == 1:
        z = z[None, :]
    return np.sum(np.tanh(z) ** 2, axis=1)


@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 0.8]), np.array([[0.3, -1.2], [0.8, 0.5]])], ids=["1-d", "2-d"])
def test_jacrev_under_jit_decides_the_test_for_the_call(x):
    """jacrev's rows are pulled back through the vjp generated for the call's kinds: against central
    differences of each output."""
    jacobian = s2s.jit(s2s.jacrev(normalised_rows))(x)
    out = normalised_rows(x)
    for i in range(out.size):
        np.testing.assert_allclose(jacobian[i], central_difference_grad(lambda v: normalised_rows(v)[i], (x,), 0),
                                   rtol=1e-6, atol=1e-9)


# ---- np.squeeze without axes: the axes s2s.jit finds from the arguments' axes of length 1 ---------


def squeezes_a_product(X, w):
    return np.sum(np.sin((X @ w).squeeze()) * np.arange(3.0))


def squeezes_a_reassigned_parameter(x):
    x = x.T  # (its argument's axes of length 1 are not x's now: the squeeze is not decided from them)
    return np.sum(np.squeeze(x) ** 2)


def squeezes_an_argument(x):
    y = np.squeeze(np.expand_dims(x, 0).T * 2.0)
    return np.sum(y ** 3) + np.sum(np.squeeze(x[:, None]))


def test_squeeze_without_axes_under_jit_is_specialised_to_the_axes_of_length_1():
    r = np.random.default_rng(3)
    X, w = r.standard_normal((3, 4)), r.standard_normal((4, 1))
    grad = s2s.jit(s2s.grad(squeezes_a_product, argnums=(0, 1)))
    got = grad(X, w)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], central_difference_grad(squeezes_a_product, [X, w], k), rtol=1e-6, atol=1e-8)
    assert "runtime.squeeze(_t1, axis=(1,))" in s2s.source(grad)
    assert "w 2-d array (axis 1 of length 1)" in s2s.source(grad)
    # another call whose arguments have other axes of length 1 gets code of its own (a (1, 3) result: axis 0 goes)
    jitted = s2s.jit(lambda X, w: np.sin((X @ w).squeeze()))
    for X, w in ((X, w), (X[:1], w), (X[:1], np.ones((4, 3)))):
        np.testing.assert_allclose(jitted(X, w), np.sin((X @ w).squeeze()))
        assert np.ndim(jitted(X, w)) == np.ndim(np.sin((X @ w).squeeze()))


def test_a_squeeze_of_a_reassigned_parameter_is_refused_with_the_way_out():
    with pytest.raises(s2s.S2SError, match=r"test_static_properties.py:\d+:\d+: .*np.squeeze\(x, axis=k\)"):
        s2s.jit(s2s.grad(squeezes_a_reassigned_parameter))(np.ones((1, 3)))


@pytest.mark.parametrize("shape", [(4,), (1,)])
def test_squeeze_without_axes_under_jit_in_every_mode(shape):
    x = np.random.default_rng(4).standard_normal(shape)
    want = central_difference_grad(squeezes_an_argument, [x], 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(squeezes_an_argument))(x), want, rtol=1e-6, atol=1e-8)
    t = np.linspace(0.5, 1.0, x.size).reshape(shape)
    value, tangent = s2s.jvp(squeezes_an_argument, (x,), (t,))
    np.testing.assert_allclose(tangent, np.dot(want, t), rtol=1e-6)
    # sum((2x)^3) + sum(x): the Hessian is diagonal, 48 x
    np.testing.assert_allclose(s2s.jit(s2s.hessian(squeezes_an_argument))(x),
                               np.diag(48.0 * x.ravel()).reshape(shape + shape), rtol=1e-12, atol=1e-12)
