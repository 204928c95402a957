"""A variable that holds a number on one path and a 0-d array on another (s2s/transforms/zero_d_merges.py):
NumPy's arithmetic of 0-d arrays gives numbers and np.where a 0-d array, which Numba cannot type as one
variable. Under s2s.jit each 0-d binding of such a variable becomes a number; the python backend keeps
NumPy's values and types. Values against NumPy on both paths, derivatives (jit(grad), jvp, jit(hessian),
jit(vmap(grad))) against central differences, where the conversion is written and where it is not, and
the zero adjoint of a 0-d result under jit(grad)."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


def returns_a_number_or_a_0d_array(r, a):
    r = np.asarray(r)
    if a > 10.0:
        return a / r
    return np.where(r == 0, a, a / r)


def binds_a_number_or_a_0d_array(r, a):
    r = np.asarray(r)
    if a > 10.0:
        y = a / r
    else:
        y = np.where(r == 0, a, a / r)
    return y * y


def clipped_square(r):
    return np.where(r > 0, r * r, 0.0)


def returns_a_helper_or_arithmetic_of_it(r, a):
    if a > 10.0:
        return clipped_square(r)
    return clipped_square(r) * 2.0


def density(x, singular):
    # a user function returning a 0-d array on both paths: the reverse sweep zeroes the adjoint
    # of the path not taken, whose seed is the number 1.0
    if singular:
        return clipped_square(x) * 0.0 + np.where(x > 0, x, 0.0)
    return clipped_square(x + 1.0)


def updated_in_place(r, a):
    r = np.asarray(r)
    if a > 10.0:
        y = a / r
    else:
        y = np.where(r == 0, a, a / r)
    y += 1.0
    return y * y


FUNCTIONS = [returns_a_number_or_a_0d_array, binds_a_number_or_a_0d_array, returns_a_helper_or_arithmetic_of_it]


@pytest.mark.parametrize("fun", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("a", [3.0, 30.0], ids=["array path", "number path"])
def test_values_and_gradients_agree_with_numpy_on_both_paths(fun, a):
    r = 2.0
    expected = fun(r, a)
    assert s2s.jit(fun)(r, a) == pytest.approx(float(expected), rel=1e-14)
    reference = central_difference_grad(fun, (r, a), 0)
    assert s2s.jit(s2s.grad(fun))(r, a) == pytest.approx(float(reference), rel=1e-6)
    assert s2s.grad(fun)(r, a) == pytest.approx(float(reference), rel=1e-6)
    value, tangent = s2s.jvp(fun, (r, a), (1.0, 0.0))
    assert tangent == pytest.approx(float(reference), rel=1e-6)
    # the python backend keeps NumPy's types: a 0-d array where NumPy has one
    assert type(value) is type(expected)


def test_second_order_and_batched_gradients_compile():
    fun = binds_a_number_or_a_0d_array
    for a in (3.0, 30.0):
        first = s2s.grad(fun)
        by_differences = (first(2.0 + 1e-5, a) - first(2.0 - 1e-5, a)) / 2e-5
        assert s2s.jit(s2s.hessian(fun))(2.0, a) == pytest.approx(float(by_differences), rel=1e-6)
    rs = np.array([2.0, 3.0, 0.5])
    batched = s2s.jit(s2s.vmap(s2s.grad(fun), in_axes=(0, None)))(rs, 3.0)
    expected = [float(central_difference_grad(fun, (r, 3.0), 0)) for r in rs]
    np.testing.assert_allclose(batched, expected, rtol=1e-6)


def test_the_0d_binding_is_given_as_a_number_and_only_it():
    source = s2s.source(s2s.jit(binds_a_number_or_a_0d_array))
    assert source.count("runtime.number_if_0d(") == 1
    assert "y = runtime.number_if_0d(_t" in source
    assert "y = a / r\n" in source  # the arithmetic stays as it was
    assert "number_if_0d" not in s2s.source(s2s.jit(clipped_square))


def test_a_variable_written_in_place_is_left_as_numpy_has_it():
    # NumPy's `y += 1.0` writes into the 0-d array (and every name sharing it), a number would not:
    # no conversion, and s2s.jit refuses the two types at the user's line as before
    jitted = s2s.jit(updated_in_place)
    with pytest.raises(s2s.S2SError, match=r"test_zero_d_merges\.py:\d+:\d+: .*two types"):
        jitted(2.0, 30.0)
    assert "number_if_0d" not in s2s.source(jitted)
    assert s2s.grad(updated_in_place)(2.0, 30.0) == pytest.approx(
        float(central_difference_grad(updated_in_place, (2.0, 30.0), 0)), rel=1e-6)


@pytest.mark.parametrize("singular", [True, False])
def test_the_zero_adjoint_of_a_0d_result_is_a_number_under_jit(singular):
    reference = central_difference_grad(lambda x: density(x, singular), (0.7,), 0)
    assert s2s.jit(s2s.grad(density))(0.7, singular) == pytest.approx(float(reference), rel=1e-6)
