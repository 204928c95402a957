"""Pure-NumPy packages as they are shipped, installed as test dependencies (pytransform3d and
numpy-financial, BSD-3-Clause). pytransform3d's rotation functions validate their input (np.asarray
with a dtype, shape checks that raise with %-formatted messages, `in` tests of constants), unpack
arrays its helpers build, clip numbers and join arrays with tuples; numpy-financial's take
`when="end"`, which a helper looks up in a dict of the module inside a try (a static argument),
nper finds a zero rate by the division it breaks, in a try the values decide, and ipmt hands arrays
to helpers that test for them.
s2s differentiates them unchanged, in grad, jvp and jit(grad), checked against central
differences; the import hook reaches the package without `__s2s__`, lazily."""

import functools
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import numpy_financial as npf  # (test dependencies: pyproject's test extra installs them)
import pytransform3d.rotations as pr

import s2s
from finite_differences import central_difference_grad

Q = np.array([0.8, 0.2, -0.3, 0.4])
AXIS_ANGLE = np.array([0.3, 0.5, 0.81, 0.7])
W3 = np.arange(1.0, 10.0).reshape(3, 3) / 9.0
W4 = np.array([1.0, -2.0, 0.5, 3.0])


def rotated_weight(q):
    return np.sum(pr.matrix_from_quaternion(q) * W3)


def axis_angle_weight(a):
    return np.sum(pr.matrix_from_axis_angle(a) * W3)


def quaternion_to_axis_angle(q):
    return np.sum(pr.axis_angle_from_quaternion(q) * W4)


def axis_angle_to_quaternion(a):
    return np.sum(pr.quaternion_from_axis_angle(a) * W4)


def euler_weight(e):
    return np.sum(pr.matrix_from_euler(e, 0, 1, 2, True) * W3)


def composed(q):
    return np.sum(pr.concatenate_quaternions(q, np.array([0.5, 0.5, 0.5, 0.5])) * W4)


def rotated_vector(q):
    return np.sum(pr.q_prod_vector(q, np.array([1.0, 2.0, 3.0])) * np.array([1.0, -2.0, 0.5]))


def slerp_weight(q):
    return np.sum(pr.quaternion_slerp(np.array([1.0, 0.0, 0.0, 0.0]), q / np.linalg.norm(q), 0.3) * W4)


CASES = [(rotated_weight, Q), (axis_angle_weight, AXIS_ANGLE), (quaternion_to_axis_angle, Q),
         (axis_angle_to_quaternion, AXIS_ANGLE), (euler_weight, np.array([0.3, -0.2, 0.5])), (composed, Q),
         (rotated_vector, Q), (slerp_weight, Q)]


@pytest.mark.parametrize("fun, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_the_package_s_functions_in_every_mode(fun, x):
    want = central_difference_grad(fun, (x,), 0)
    np.testing.assert_allclose(s2s.grad(fun)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(x), want, rtol=1e-6, atol=1e-8)
    direction = np.linspace(-1.0, 1.0, x.size)
    assert s2s.jvp(fun, (x,), (direction,))[1] == pytest.approx(want @ direction, rel=1e-6, abs=1e-9)


def test_a_package_function_differentiated_directly():
    a, b = np.array([1.0, 0.2, -0.3]), np.array([0.1, 1.0, 0.4])
    want = central_difference_grad(pr.angle_between_vectors, (a, b), 0)
    np.testing.assert_allclose(s2s.grad(pr.angle_between_vectors)(a, b), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(pr.angle_between_vectors))(a, b), want, rtol=1e-6, atol=1e-8)


LOAN = (0.005, 360.0, 200000.0, -1000.0)  # rate, periods, then (by the function) a value and a payment


@pytest.mark.parametrize("fun", [npf.pmt, npf.fv, npf.pv], ids=["pmt", "fv", "pv"])
@pytest.mark.parametrize("when", [None, "end", "begin"])
def test_financial_functions_with_when_in_every_mode(fun, when):
    args = LOAN + ((when,) if when is not None else ())  # (None: when's default)
    want = central_difference_grad(fun, args, 0)
    assert s2s.grad(fun)(*args) == pytest.approx(want, rel=1e-6)
    if when != "end":  # (compiled for the default and for 'begin': 'end' is the default's code)
        assert s2s.jit(s2s.grad(fun))(*args) == pytest.approx(want, rel=1e-6)
    extra = {} if when is None else {"when": when}
    tangent = s2s.jvp(functools.partial(fun, **extra), LOAN, (1.0, 0.0, 0.0, 0.0))[1]
    assert tangent == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("rate", [0.05, 0.0], ids=["rate", "zero-rate"])
def test_nper_whose_try_the_values_decide(rate):
    # nper divides under np.errstate(divide="raise") inside a try: at a zero rate the division
    # raises and its handler picks the zero-rate formula, as NumPy runs it
    args = (rate, -100.0, 1000.0)
    for k in (0, 1, 2) if rate else (1, 2):  # (at zero the rate's central difference crosses to the other path)
        assert s2s.grad(npf.nper, argnums=k)(*args) == pytest.approx(central_difference_grad(npf.nper, args, k),
                                                                      rel=1e-6)
    tangent = s2s.jvp(npf.nper, args, (0.0, 1.0, 1.0))[1]
    assert tangent == pytest.approx(sum(central_difference_grad(npf.nper, args, k) for k in (1, 2)), rel=1e-6)
    # (compiled, such a try is tests/test_try_statements.py's: nper of numbers gives a float on one
    # branch and a 0-d array on the other, one variable of two types that Numba refuses)


@pytest.mark.parametrize("fun", [npf.ipmt, npf.ppmt], ids=["ipmt", "ppmt"])
def test_interest_and_principal_whose_helpers_test_for_arrays(fun):
    # ipmt makes `when` an array (np.broadcast_arrays) and hands it to pmt and fv, whose
    # _convert_when tests isinstance(when, np.ndarray): decided, as for an argument; its try around
    # np.where runs on the values
    args = (0.05, 3.0, 12.0, 1000.0)
    for k in (0, 3):
        assert s2s.grad(fun, argnums=k)(*args) == pytest.approx(central_difference_grad(fun, args, k), rel=1e-6)
    tangent = s2s.jvp(fun, args, (1.0, 0.0, 0.0, 0.0))[1]
    assert tangent == pytest.approx(central_difference_grad(fun, args, 0), rel=1e-6)


HOOKED = '''
import pathlib, sys
import numpy as np
import s2s

s2s.install_import_hook("pytransform3d")
import pytransform3d.rotations as pr

stored = pathlib.Path(sys.argv[1])
before = set(stored.glob("*.py")) if stored.exists() else set()
q1, q2 = np.array([0.8, 0.2, -0.3, 0.4]), np.array([0.5, 0.5, 0.5, 0.5])
print(repr(s2s.grad(pr.quaternion_dist)(q1, q2).tolist()))
after = set(stored.glob("*.py"))
print(sorted(p.name.split(".")[-4] for p in after - before))  # written by this process
print(sorted(p.name.split(".")[-4] for p in after))
'''


def test_the_import_hook_transforms_the_package_lazily_beside_its_bytecode(tmp_path):
    """The package has no __s2s__: importing it under the hook transforms nothing; the gradient
    asked for is written beside the package's bytecode (or in the user's cache where that
    folder is not writable), and a later process reads it from there."""
    folder = pathlib.Path(pr.__file__).parent / "__pycache__" / "s2s"
    script = tmp_path / "hooked.py"
    script.write_text(HOOKED)
    q1, q2 = np.array([0.8, 0.2, -0.3, 0.4]), np.array([0.5, 0.5, 0.5, 0.5])
    want = central_difference_grad(pr.quaternion_dist, (q1, q2), 0)
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")}
    for run in range(2):  # (the second process finds what the first wrote, and writes nothing)
        done = subprocess.run([sys.executable, str(script), str(folder)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        grad_line, written_line, stored_line = done.stdout.splitlines()
        np.testing.assert_allclose(eval(grad_line), want, rtol=1e-6, atol=1e-8)
        if os.access(folder.parent, os.W_OK):
            assert "quaternion_dist" in stored_line
            if run == 1:
                assert written_line == "[]"
