"""np.meshgrid: differentiated of two arrays ('xy' and 'ij'), to any order, and
compiled under s2s.jit (Numba has no np.meshgrid: runtime.meshgrid, of one to three 1-d arrays,
which is what a grid of constants needs). Derivatives against central differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, hessian_by_differences, where

A = np.array([0.3, 1.1, -0.4])
B = np.array([0.5, -0.2, 0.9, 1.7])


def close(got, want, atol=1e-7):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=atol)


def surface(a, b, k):
    x, y = np.meshgrid(a * k, b)
    return np.sum(np.sin(x) * y * y + x * y)


def surface_ij(a, b, k):
    x, y = np.meshgrid(a, b * k, indexing="ij")
    return np.sum(np.cos(x * y) + x * x * y)


def one_grid(a, b, k):
    return np.sum(np.meshgrid(a, b)[1] ** 3) * k  # (the other grid's adjoint is zero)


@pytest.mark.parametrize("f", [surface, surface_ij, one_grid], ids=lambda f: f.__name__)
def test_gradient_and_tangent_against_differences(f):
    args = [A, B, 1.3]
    for argnum in range(3):
        close(s2s.grad(f, argnums=argnum)(*args), central_difference_grad(f, args, argnum))
    tangent = s2s.jvp(lambda a: f(a, B, 1.3), (A,), (np.ones(3),))[1]
    close(tangent, np.sum(central_difference_grad(f, args, 0)), atol=1e-6)


@pytest.mark.parametrize("f", [surface, surface_ij], ids=lambda f: f.__name__)
def test_second_order(f):
    want = hessian_by_differences(lambda a: f(a, B, 1.3), A)
    close(s2s.hessian(f)(A, B, 1.3), want, atol=1e-4)
    close(s2s.jacfwd(s2s.grad(f))(A, B, 1.3), want, atol=1e-4)


def test_under_jit():
    args = [A, B, 1.3]
    for f in (surface, surface_ij):
        close(s2s.jit(s2s.grad(f, argnums=(0, 1)))(*args)[1], central_difference_grad(f, args, 1))
    close(s2s.jit(s2s.hessian(surface))(A, B, 1.3), s2s.hessian(surface)(A, B, 1.3))


XS = np.linspace(0.0, 1.0, 5)


def field_on_grids(k, xs):
    x, y = np.meshgrid(xs, 2.0 * xs)
    cube = np.meshgrid(xs, xs[:3], xs[:2], indexing="ij")
    line = np.meshgrid(xs)
    return np.sum(np.sin(k * x) * y) + np.sum(cube[2] * k * k) + np.sum(line[0] * k)


def test_grids_of_constants_compile_under_jit():
    # (of one, two or three arrays: np.meshgrid refused Numba's compilation at the line before)
    assert s2s.jit(field_on_grids)(2.0, XS) == pytest.approx(field_on_grids(2.0, XS), rel=1e-12)
    want = central_difference_grad(field_on_grids, [2.0, XS], 0)
    close(s2s.grad(field_on_grids)(2.0, XS), want)
    close(s2s.jit(s2s.grad(field_on_grids))(2.0, XS), want)
    x, y = s2s.jit(lambda xs: np.meshgrid(xs, xs[:2]))(XS)  # the grids themselves, as NumPy's
    assert np.array_equal(x, np.meshgrid(XS, XS[:2])[0]) and np.array_equal(y, np.meshgrid(XS, XS[:2])[1])


def of_three(a, b):
    x, y, z = np.meshgrid(a, b, a * b[:3])
    return np.sum(x * y * z)


def sparse(a, b):
    x, y = np.meshgrid(a, b, sparse=True)
    return np.sum(x * y)


@pytest.mark.parametrize("f, says, line", [
    (of_three, "np.meshgrid is differentiated of two arrays", "x, y, z = np.meshgrid(a, b, a * b[:3])"),
    (sparse, r"sparse=True\) is not differentiated", "x, y = np.meshgrid(a, b, sparse=True)")],
    ids=["three arrays", "sparse"])
def test_refused_at_the_line(f, says, line):
    with pytest.raises(s2s.S2SError, match=says) as info:
        s2s.grad(f)(A, B)
    assert where(f, line) in str(info.value)
