"""Boolean arrays passed as arguments, and NumPy's boolean scalars, under s2s.jit.

NumPy's sum of two boolean arrays is their logical or. Numba fuses `(m1 + m2) * x` into one
loop over the elements, in which True + True is 2; s2s's own elementwise loops did the same
with the elements of boolean arguments. Every jit path (the primal, grad, value_and_grad,
hessian, jacfwd, vmap) gave wrong values and gradients, silently, where both masks hold.
Generated modules are now compiled with a Numba pass that makes such a sum `|`
(backends/numba_pipeline.py), and the loops leave boolean arguments as NumPy
(analysis/shapes.py: their fact says "bool"). So did NumPy's boolean scalars (an element of a
boolean array, a comparison of array elements: np.True_ + np.True_ is True) in loops; two Python
bools still add to 2, as in Python. Derivatives are checked
against central differences, values against NumPy.
"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, hessian_by_differences

X = np.array([1.0, 2.0, -3.0, 0.5, 1.5])
M1 = np.array([True, True, False, False, True])
M2 = np.array([True, False, True, False, True])


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def either_mask(x, m1, m2):
    return np.sum((m1 + m2) * x * x)


def inside_a_ufunc(x, m1, m2):
    return np.sum(np.sin(m1 + m2 + 0.5) * x * x)


def added_in_place(x, m1, m2):
    k = m1.copy()
    k += m2
    return np.sum(k * x * x)


def with_a_flag(x, m1, flag):
    return np.sum((m1 + flag) * x * x)


def test_every_jit_path_adds_boolean_arrays_as_numpy():
    args = (X, M1, M2)
    want = central_difference_grad(either_mask, list(args), 0)
    close(want, 2.0 * X * (M1 | M2))  # (the formula: x * x where either mask holds)
    close(s2s.jit(either_mask)(*args), either_mask(*args))
    close(s2s.jit(s2s.grad(either_mask))(*args), want)
    value, grad = s2s.jit(s2s.value_and_grad(either_mask))(*args)
    close(value, either_mask(*args))
    close(grad, want)
    close(s2s.jit(s2s.jacfwd(either_mask))(*args), want)
    hessian = np.diag(2.0 * (M1 | M2))  # the formula, which second differences agree with
    np.testing.assert_allclose(hessian_by_differences(lambda x: either_mask(x, M1, M2), X), hessian, atol=1e-4)
    close(s2s.jit(s2s.hessian(either_mask))(*args), hessian)


def test_a_sum_of_boolean_arrays_inside_a_ufunc_and_with_a_boolean_number():
    for fun, args in ((inside_a_ufunc, (X, M1, M2)), (with_a_flag, (X, M1, True))):
        close(s2s.jit(fun)(*args), fun(*args))
        close(s2s.jit(s2s.grad(fun))(*args), central_difference_grad(fun, list(args), 0))


def test_a_boolean_array_added_in_place_per_example():
    xs = np.stack([X, 2.0 * X, X - 1.0])
    per_example = s2s.jit(s2s.vmap(s2s.grad(added_in_place), in_axes=(0, None, None)))(xs, M1, M2)
    for x, got in zip(xs, per_example):
        close(got, central_difference_grad(added_in_place, [x, M1, M2], 0))


def counted_neighbours(x, m):
    s = np.sum((m[1:] + m[:-1]) * 1.0)
    return s * np.sum(x * x)


def test_the_elementwise_loops_leave_boolean_arguments_to_numpy():
    # (m's statements were one loop over numbers, m[k + 1] + m[k], which is 2 where both hold:
    # the value and the gradient were 4/3 of NumPy's here)
    m = np.array([True, True, False, True, True])
    value, grad = s2s.jit(s2s.value_and_grad(counted_neighbours))(X, m)
    assert value == counted_neighbours(X, m)
    close(grad, central_difference_grad(counted_neighbours, [X, m], 0))
    source = s2s.value_and_grad(counted_neighbours).specialised([X, m])[0]
    assert "m 1-d boolean array" in source and "m[1:] + m[:-1]" in source


def elements_of_a_mask(x, m):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + (m[i] + m[i + 1]) * x[i]
    return s


def compared_elements(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + ((x[i] > 0.0) + (x[i + 1] > 0.0)) * x[i] * x[i]
    return s


def elements_added_in_place(x, m1, m2):
    s = 0.0
    for i in range(x.shape[0]):
        b = m1[i]
        b += m2[i]
        s = s + b * x[i]
    return s


def python_bools(x, flag):
    return (flag + (x.shape[0] > 2)) * np.sum(x * x)  # (True + True: 2, on both backends)


def test_numpy_boolean_scalars_add_as_numpy_and_python_bools_as_python():
    for fun, args in ((elements_of_a_mask, (X, M1)), (compared_elements, (X,)),
                      (elements_added_in_place, (X, M1, M2)), (python_bools, (X, True))):
        assert s2s.jit(fun)(*args) == fun(*args)
        close(s2s.jit(s2s.grad(fun))(*args), central_difference_grad(fun, list(args), 0))
    close(s2s.grad(python_bools)(X, True), 4.0 * X)


# ---- `-` of NumPy booleans: NumPy refuses it; s2s.jit refuses it at the line (it computed ints) --


def boolean_steps(x, m):
    return np.sum((m[1:] - m[:-1]) * x[1:] * x[1:])


def negated_mask(x, m):
    return np.sum(-m * x)


def complement(x, m):
    return np.sum((1 - m) * x * x)  # a Python int minus booleans: ints in NumPy too


@pytest.mark.parametrize("fun, statement", [(boolean_steps, "(m[1:] - m[:-1])"), (negated_mask, "-m * x")])
def test_subtracting_numpy_booleans_is_refused_as_numpy_refuses_it(fun, statement):
    x, m = np.linspace(0.5, 2.0, 5), np.array([True, False, True, True, False])
    with pytest.raises(TypeError, match="boolean"):
        fun(x, m)  # NumPy
    with pytest.raises(s2s.S2SError, match=r"of NumPy booleans: NumPy refuses it.*logical_xor") as caught:
        s2s.jit(s2s.grad(fun))(x, m)
    import inspect

    lines, first = inspect.getsourcelines(fun)
    assert caught.value.origin.line == first + next(k for k, line in enumerate(lines) if statement in line)


def test_a_python_int_minus_booleans_compiles():
    x, m = np.linspace(0.5, 2.0, 5), np.array([True, False, True, True, False])
    want = central_difference_grad(complement, (x, m), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(complement))(x, m), want, rtol=1e-7)


# ---- `~ & | ^`: NumPy's logical not, and, or, xor of booleans, bitwise of ints; piecewise constant --


def outside_the_mask(x):
    mask = x > 1.2
    return np.sum(np.where(~mask, x ** 2, 0.0)) + np.sum(x[~mask] * 3.0)


def outside_a_given_mask(x, m):
    return np.sum(x[~m] ** 2) + np.sum(np.where(~(m | (x < 0.0)) ^ (m & (x > 1.2)), np.sin(x), 0.0))


def bitwise_not_of_ints(x):
    n = x.shape[0]
    weights = ~np.arange(n)  # -1, -2, ...
    return np.sum(x * weights) * ~n  # ~n is -(n + 1)


def element_flags(x):
    s = 0.0
    for i in range(x.shape[0]):
        big = x[i] > 1.2  # a NumPy boolean: ~ is its logical not
        if ~big:
            s = s + x[i] ** 2
        else:
            s = s + np.sin(x[i])
    return s


@pytest.mark.parametrize("fun", [outside_the_mask, bitwise_not_of_ints, element_flags])
def test_invert_in_every_mode(fun):
    from checks import check_all

    check_all(fun, X)
    batch = np.stack([X, X * 1.1 - 0.2])
    want = np.stack([central_difference_grad(fun, (row,), 0) for row in batch])
    close(s2s.vmap(s2s.grad(fun))(batch), want)
    close(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch), want)
    for row in batch:
        assert s2s.jit(fun)(row) == pytest.approx(fun(row), rel=1e-12)


def test_invert_of_a_boolean_argument():
    want = central_difference_grad(outside_a_given_mask, (X, M1), 0)
    close(s2s.grad(outside_a_given_mask)(X, M1), want)
    close(s2s.jit(s2s.grad(outside_a_given_mask))(X, M1), want)
    batch = np.stack([X, -X])
    close(s2s.vmap(s2s.grad(outside_a_given_mask), in_axes=(0, None))(batch, M1),
          np.stack([central_difference_grad(outside_a_given_mask, (row, M1), 0) for row in batch]))
    _, tangent = s2s.jvp(lambda x: outside_a_given_mask(x, M1), (X,), (np.ones_like(X),))
    close(tangent, np.sum(want))


def narrowed_mask(x):
    keep = x > -1.0
    keep &= x < 1.8
    keep |= x > 2.5
    keep ^= np.abs(x) < 0.1
    return np.sum(np.where(keep, x ** 2, np.sin(x)))


def flags_set_per_element(x):
    m = np.zeros(x.shape[0], dtype=np.bool_)
    for i in range(x.shape[0]):
        m[i] |= x[i] > 1.0
    return np.sum(x[m] ** 2)


def shared_mask(x):
    keep = x > -1.0
    other = keep
    keep &= x < 1.8  # NumPy updates keep in place, so other too
    return np.sum(np.where(other, x ** 2, np.sin(x)))


@pytest.mark.parametrize("fun", [narrowed_mask, flags_set_per_element])
def test_augmented_bitwise_assignments(fun):
    from checks import check_all

    x = np.array([0.05, 1.5, -2.0, 3.0, 0.7])
    assert s2s.jit(fun)(x) == pytest.approx(fun(x), rel=1e-14)
    check_all(fun, x)
    batch = np.stack([x, x * 1.1])
    want = np.stack([central_difference_grad(fun, (row,), 0) for row in batch])
    close(s2s.vmap(s2s.grad(fun))(batch), want)
    close(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch), want)


def test_an_in_place_and_of_a_shared_mask_is_refused_as_other_updates_are():
    with pytest.raises(s2s.S2SError, match=r"`keep &= \.\.\.` updates an array that other also refers to"):
        s2s.grad(shared_mask)(np.array([0.05, 1.5, -2.0, 3.0, 0.7]))
