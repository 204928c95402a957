"""Wrong values that a red-team read of user-shaped programs found (session 10), each checked
against a closed form or central differences, or now refused with a located S2SError."""

import numpy as np
import pytest

import s2s
import shadowing_cases as cases
from finite_differences import central_difference_grad

SHADOWED = [(cases.scan_then_module_ys, 3.0), (cases.fori_then_module_s, 15.0), (cases.scan_then_module_c, 6.0),
            (cases.scan_then_module_c_init, 12.0), (cases.times_module_n, 4.0)]


@pytest.mark.parametrize("fun, slope", SHADOWED, ids=[f.__name__ for f, _ in SHADOWED])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_names_s2s_introduces_do_not_hide_module_names(fun, slope, backend):
    x = 0.5
    assert s2s.jit(fun, backend=backend)(x) == pytest.approx(slope * x)  # each is linear: f = slope * x
    assert s2s.jit(s2s.grad(fun), backend=backend)(x) == pytest.approx(slope)
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2s.vmap(fun)(xs), slope * xs)  # vectorised on the python backend
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(xs), np.full(3, slope))


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


def test_vmap_refuses_an_example_wider_than_the_first_where_numba_types_them_alike():
    ss = np.array([0.5, 1.7, 2.3])
    for batched in (s2s.vmap(cases.zero_or_excess, in_axes=(0, None)),
                    s2s.jit(s2s.vmap(cases.zero_or_excess, in_axes=(0, None)), backend="python"),
                    s2s.vmap(s2s.value_and_grad(cases.zero_or_excess), in_axes=(0, None))):
        with pytest.raises(s2s.S2SError, match="example 1's output is float64, wider than the first example's int64"):
            batched(ss, 1.0)
    # under s2s.jit Numba gives every example the one type float64: the values are NumPy's
    got = s2s.jit(s2s.vmap(cases.zero_or_excess, in_axes=(0, None)))(ss, 1.0)
    np.testing.assert_allclose(got, [0.0, 0.7, 1.3])
    value, slope = s2s.jit(s2s.vmap(s2s.value_and_grad(cases.zero_or_excess), in_axes=(0, None)))(ss, 1.0)
    np.testing.assert_allclose(value, [0.0, 0.7, 1.3])
    np.testing.assert_allclose(slope, [0.0, 1.0, 1.0])


def counter_after_break(x):
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            break
    return x[0] * i


def enumerate_after_break(x):
    s = 0.0
    for k, v in enumerate(x):
        if v > 1.0:
            break
        s = s + v
    return s * k + v


def inner_counter_after_break(x):
    t = 0.0
    for i in range(3):
        for j in range(x.shape[0]):
            if x[j] > 1.0 + i:
                break
        t = t + x[j] * (i + j)
    return t


def slice_from_the_break(x):
    y = x.copy()
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            break
    y[i:] += x[0] * 2.0
    return np.sum(y * y)


BREAKS = [counter_after_break, enumerate_after_break, inner_counter_after_break, slice_from_the_break]


@pytest.mark.parametrize("fun", BREAKS, ids=[f.__name__ for f in BREAKS])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_the_loop_counter_after_break_is_the_breaking_steps(fun, backend):
    """A loop left by break runs out its range with the later steps skipped; the counter once
    came out as the range's last value (x[0] * 4 instead of x[0] * 1 here)."""
    x = np.array([0.7, 2.2, 0.5, 3.3, 0.1])
    want = central_difference_grad(fun, (x,), 0)
    value, grad = s2s.jit(s2s.value_and_grad(fun), backend=backend)(x)
    assert value == pytest.approx(fun(x))
    np.testing.assert_allclose(grad, want, atol=1e-6)
    _, tangent = s2s.jvp(fun, (x,), (np.ones(5),), backend=backend)
    assert tangent == pytest.approx(np.sum(want), abs=1e-6)


def square_of_a_matrix(x):
    A = x.reshape(2, 2)
    return np.sum(A @ A.T)


def repeated_write(x):
    y = np.zeros(3)
    y[np.array([1, 1, 2])] = x * 2.0
    return np.sum(y ** 2)


def test_jit_jacrev_of_float32_matmuls_pulls_float32_cotangents():
    x = np.array([0.3, 0.7, 1.1, 0.2], np.float32)
    A = x.astype(np.float64).reshape(2, 2)
    want = np.tile(2 * A.sum(axis=0), 2)  # d sum(A A^T) / dA_ij = 2 (the sum of column j)
    jac = s2s.jit(s2s.jacrev(square_of_a_matrix))(x)
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, want, rtol=1e-6)


def test_jacrev_refusals_name_the_users_statement():
    x = np.array([0.3, 0.7, 1.1])
    for jacobian in (s2s.jacrev(repeated_write), s2s.jit(s2s.jacrev(repeated_write))):
        with pytest.raises(s2s.S2SError) as info:
            jacobian(x)
        assert info.value.origin is not None and info.value.origin.filename.endswith("test_red_team.py")


def add_into_a_zero_row(a):
    y = np.zeros(3)
    y[0] += a
    return np.sum(y ** 2)


def write_into_shared(x, a):
    x[0] += a
    return np.sum(x ** 2)


def transposed_by_axes(X):
    return np.sum(np.transpose(X, (1, 0)) * np.arange(2.0))


def copied_into(a):
    y = np.zeros((3, 2))
    y[0] = s2s.runtime.copy(a)
    return np.sum(y ** 2)


def test_vmap_of_grad_of_an_augmented_write_on_the_python_backend():
    """vmap(grad(f)) on the python backend differentiates f's vectorised batch, whose writes read
    `runtime.copy(a)`: runtime.copy's rule had no reverse line, so the gradient was zero."""
    a = np.array([0.5, 0.7])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(add_into_a_zero_row))(a), 2 * a)
    np.testing.assert_allclose(s2s.grad(copied_into)(a), 2 * a)


def test_vmap_writes_of_examples_into_a_shared_argument_go_into_copies():
    x, a = np.ones(3), np.array([0.5, 0.7])
    want = [write_into_shared(x.copy(), ai) for ai in a]
    np.testing.assert_allclose(s2s.vmap(write_into_shared, in_axes=(None, 0))(x, a), want)
    np.testing.assert_allclose(x, np.ones(3))  # the caller's array is untouched
    np.testing.assert_allclose(s2s.vmap(s2s.grad(write_into_shared, argnums=1), in_axes=(None, 0))(x, a),
                               2 * (1 + a))
    X = np.random.default_rng(0).normal(size=(3, 2, 3))
    np.testing.assert_allclose(s2s.vmap(transposed_by_axes)(X), [transposed_by_axes(Xi) for Xi in X])


def test_a_forward_only_rule_is_refused_in_reverse_mode():
    def through_take(x):
        return np.sum(s2s.runtime.take(x, np.array([0, 2])) ** 2)

    with pytest.raises(s2s.S2SError, match="forward-mode rule only"):
        s2s.grad(through_take)(np.array([0.5, 0.7, 0.9]))


def decay_sum(x, n):
    t = np.arange(n) * 0.5
    return np.sum(np.exp(-t * x[0]) * x[1])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jacfwd_and_hessian_leave_an_integer_argument_they_do_not_differentiate_alone(backend):
    """np.arange(n) of an int n is refused when n is differentiated; jacfwd and hessian once
    made the forward mode of every argument, n's included, and refused the program."""
    x = np.array([0.3, 1.2])
    want = central_difference_grad(lambda x: decay_sum(x, 5), (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(decay_sum), backend=backend)(x, 5), want, rtol=1e-6)
    t = np.arange(5) * 0.5
    e = np.exp(-t * x[0])
    hessian = np.array([[np.sum(t * t * e) * x[1], -np.sum(t * e)], [-np.sum(t * e), 0.0]])
    np.testing.assert_allclose(s2s.jit(s2s.hessian(decay_sum), backend=backend)(x, 5), hessian, rtol=1e-9)
