"""Every language feature of the core, differentiated in forward and reverse mode on both backends.

Each case is checked against central finite differences (s2s.testing.check_grads), and
the python and Numba backends must agree with each other.
"""

import numpy as np
import pytest

import s2s
from s2s.tree_util import pytree
from finite_differences import central_difference_grad
from programs import CASES
from sampling import compiled_sample
from specialised import specialised_grad
from s2s.testing import check_grads


def _args(case):
    fn, build, argnums, jit = CASES[case]
    return fn, build(np.random.default_rng(7)), argnums, jit


@pytest.mark.parametrize("case", sorted(CASES))
def test_reverse_mode_matches_finite_differences(case):
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("rev",), argnums=argnums)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_specialised_for_the_arguments_agrees(case):
    """The module s2s.jit compiles for these arguments' kinds (unbroadcast left out where shapes
    are proved equal), run as NumPy, gives the general module's gradient."""
    fn, args, argnums, _ = _args(case)
    expected = s2s.grad(fn, argnums=argnums)(*args)
    got = specialised_grad(fn, args, argnums)
    for a, b in zip(pytree.leaves(got), pytree.leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(b)


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_mode_matches_finite_differences(case):
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("fwd",), argnums=argnums)


@pytest.mark.parametrize("case", sorted(compiled_sample((c for c in CASES if CASES[c][3]), 2)))
def test_numba_backend_matches_finite_differences_and_python(case):
    """(half of the cases in CI: the parity sweep of tests/test_jit_parity.py compiles a sample of
    them too; S2S_FULL_JIT=1 compiles all)"""
    fn, args, argnums, _ = _args(case)
    s2s.testing.check_grads(fn, args, modes=("fwd", "rev"), argnums=argnums, backend="cpu")
    g = s2s.grad(fn, argnums=argnums)
    expected = g(*args)
    got = s2s.jit(g)(*args)
    for a, b in zip(pytree.leaves(got), pytree.leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def float32_recurrence(x, n):
    y = x[0]
    for i in range(n):
        y = np.sin(y) * x[1]
    return y * y


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_tapes_in_range_loops_keep_float32(backend):
    """A float32 number taped in a range loop stays float32 (under Numba, on a float32 array)."""
    x = np.array([0.7, 1.3], np.float32)
    g = s2s.jit(s2s.grad(float32_recurrence), backend=backend)(x, 6)
    assert g.dtype == np.float32
    eps = 1e-6
    wide = x.astype(np.float64)
    fd = [(float32_recurrence(wide + eps * e, 6) - float32_recurrence(wide - eps * e, 6)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-4)


# In-place updates whose right side overlaps the elements they write. NumPy reads the right side
# in full before it writes; Numba, left alone, updates element by element and reads elements it
# has already updated (z[1:] += z[:-1] became a running sum). Each is checked, on both backends,
# against NumPy's own value and central finite differences.


def shift_add(x):
    z = x.copy()
    z[1:] += z[:-1]
    return np.sum(z * z)


def shift_subtract(x):
    z = np.sin(x)
    z[1:] -= z[:-1]
    return np.sum(z * z * x)


def shift_add_backwards(x):
    z = x * 2.0
    z[:-1] += z[1:]
    z[1:] += z[:-1]
    return np.sum(z * z)


def shift_add_through_a_view(x):
    z = x.copy()
    behind = z[:-1]
    z[1:] += behind
    z += z[::-1]
    return np.sum(z * z * z)


def shift_assign(x):
    z = x.copy()
    z[1:] = z[:-1] * 2.0
    w = z * x
    w[:-1] = w[1:]
    return np.sum(w * z)


def rows_add(X):
    Z = X.copy()
    Z[1:, :] += Z[:-1, :]
    Z[:, 1:] -= Z[:, :-1]
    return np.sum(Z * Z)


OVERLAPPING = {
    "shift_add": (shift_add, np.array([0.3, 0.5, -0.2, 0.9])),
    "shift_subtract": (shift_subtract, np.array([0.3, 0.5, -0.2, 0.9, 1.1])),
    "shift_add_backwards": (shift_add_backwards, np.array([0.3, 0.5, -0.2, 0.9, 1.1])),
    "shift_add_through_a_view": (shift_add_through_a_view, np.array([0.3, 0.5, -0.2, 0.9, 1.1])),
    "shift_assign": (shift_assign, np.array([0.3, 0.5, -0.2, 0.9, 1.1])),
    "rows_add": (rows_add, np.arange(12.0).reshape(4, 3) * 0.1 - 0.3),
}


def test_overlapping_updates_are_not_noops():
    """The programs read the right side before the write: an element-by-element update differs."""
    z = np.array([0.3, 0.5, -0.2, 0.9])
    running = z.copy()
    for k in range(1, 4):
        running[k] += running[k - 1]
    assert shift_add(z) == pytest.approx(np.sum((z + np.r_[0.0, z[:-1]]) ** 2))
    assert not np.isclose(shift_add(z), np.sum(running ** 2))


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
@pytest.mark.parametrize("case", sorted(OVERLAPPING))
def test_overlapping_in_place_updates_value_and_grad(case, jit):
    fn, x = OVERLAPPING[case]
    transform = s2s.value_and_grad(fn)
    value, grad = (s2s.jit(transform) if jit else transform)(x.copy())
    assert value == pytest.approx(fn(x.copy()), rel=1e-12)
    np.testing.assert_allclose(grad, central_difference_grad(fn, [x], 0), rtol=1e-6, atol=1e-8)


def test_overlapping_in_place_update_grad_under_jit():
    """s2s.jit(s2s.grad(f)): the module that leaves the value out (the reported case)."""
    x = np.array([0.3, 0.5, -0.2, 0.9])
    grad = s2s.jit(s2s.grad(shift_add))(x)
    np.testing.assert_allclose(grad, [2.2, 2.2, 2.0, 1.4], rtol=1e-12)
    np.testing.assert_allclose(grad, central_difference_grad(shift_add, [x], 0), rtol=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("case", sorted(OVERLAPPING))
def test_overlapping_in_place_updates_jvp(case, backend):
    fn, x = OVERLAPPING[case]
    v = np.random.default_rng(3).standard_normal(x.shape)
    value, tangent = s2s.jvp(fn, (x.copy(),), (v,), backend=backend)
    eps = 1e-6
    assert value == pytest.approx(fn(x.copy()), rel=1e-12)
    assert tangent == pytest.approx((fn(x + eps * v) - fn(x - eps * v)) / (2 * eps), rel=1e-6, abs=1e-8)


def test_updates_from_fresh_arrays_are_not_copied():
    """Only a right side that may share the target's memory is copied first."""
    def f(x):
        z = x.copy()
        z[1:] += x[:-1]
        z[:-1] -= z[1:] * 2.0
        return np.sum(z * z)

    source = s2s.grad(f).source
    assert "+= runtime.copy(" not in source and "-= runtime.copy(" not in source
    assert "z[1:] += runtime.copy(" in s2s.grad(shift_add).source


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_overlapping_in_place_update_second_order(backend):
    """The Hessian (forward over reverse) of an overlapping update, against differences of the gradient."""
    fn, x = OVERLAPPING["shift_add_backwards"]
    s2s.testing.check_grads(fn, [x], order=2, backend=backend)


def writes_into_its_argument(x, a, b):
    x[0] = a * b
    return np.sum(x * x)


def writes_into_its_argument_after_reading_it(x):
    y = x ** 2
    x[0] = y[1] * y[2]
    return np.sum(x * y)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_writes_into_an_argument_work_on_a_private_copy(backend):
    """x[0] = v on a parameter: the derivatives are those of the function of the values passed,
    and the caller's array is not changed (s2s.jit too: it works on the same private copy)."""
    x = np.array([1.0, 2.0, 3.0])
    grads = s2s.jit(s2s.grad(writes_into_its_argument, argnums=(0, 1, 2)), backend=backend)(x, 2.0, 3.0)
    # f = (a b)^2 + x1^2 + x2^2
    np.testing.assert_allclose(grads[0], [0.0, 4.0, 6.0])
    assert grads[1] == pytest.approx(2 * 2.0 * 3.0 ** 2) and grads[2] == pytest.approx(2 * 3.0 * 2.0 ** 2)
    # f = x0^2 x1^2 x2^2 + x1^3 + x2^3
    closed = [2 * x[0] * x[1] ** 2 * x[2] ** 2, 2 * x[1] * x[2] ** 2 * x[0] ** 2 + 3 * x[1] ** 2,
              2 * x[2] * x[1] ** 2 * x[0] ** 2 + 3 * x[2] ** 2]
    np.testing.assert_allclose(s2s.jit(s2s.grad(writes_into_its_argument_after_reading_it), backend=backend)(x), closed)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    check_grads(writes_into_its_argument_after_reading_it, (x,), order=2, backend=backend)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def updates_its_argument_in_place(x):
    x += 1.0
    return x ** 3


def test_jacobians_and_hessians_do_not_see_the_functions_own_writes():
    """jacfwd, jacrev and hessian run the user's function for its output's shape: on copies, so
    that `x += 1.0` inside it does not move the point they differentiate at."""
    x = np.array([0.5, -1.0, 2.0])
    expected = np.diag(3 * (x + 1.0) ** 2)
    np.testing.assert_allclose(s2s.jacfwd(updates_its_argument_in_place)(x), expected)
    np.testing.assert_allclose(s2s.jacrev(updates_its_argument_in_place)(x), expected)
    hessian = s2s.hessian(sum_of_cubes_after_an_update)(x)
    np.testing.assert_allclose(hessian, np.diag(6 * (x + 1.0)))
    np.testing.assert_array_equal(x, [0.5, -1.0, 2.0])


def sum_of_cubes_after_an_update(x):
    x += 1.0
    return np.sum(x ** 3)
