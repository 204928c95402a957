"""np.convolve, np.correlate and scipy.signal.convolve: first and second derivatives in every
mode, in both arguments, for either argument the longer, against central differences, on the
python backend and under s2s.jit (Numba's np.convolve and np.correlate take no mode:
runtime.convolve does; Numba has no scipy.signal: runtime.signal_convolve sums directly)."""

import numpy as np
import pytest
import scipy.signal
from scipy.signal import convolve

import s2s
from finite_differences import central_difference_grad
from s2s.testing import check_grads

RNG = np.random.default_rng(5)
SIGNAL = RNG.normal(size=7)
KERNEL_ODD = RNG.normal(size=3)
KERNEL_EVEN = RNG.normal(size=4)
WEIGHTS = RNG.normal(size=10)


def smoothed(x, k, mode):
    return np.sum(np.sin(np.convolve(x, k * k, mode)) * WEIGHTS[:np.convolve(x, k, mode).shape[0]])


def correlated(x, k, mode):
    return np.sum(np.correlate(x, np.cos(k), mode) ** 2)


def correlated_kernel_first(x, k, mode):
    # the longer array second: np.correlate's "same" centres differently there
    return np.sum(np.exp(0.3 * np.correlate(k, x, mode)))


def all_modes(x, k):
    total = 0.0
    for mode in ("full", "same", "valid"):
        total = total + np.sum(np.convolve(x, k, mode) ** 2) + np.sum(np.correlate(x * x, k, mode))
        total = total + np.sum(np.correlate(k, x, mode) * np.convolve(k, x, mode))
    return total


FUNCTIONS = [smoothed, correlated, correlated_kernel_first]


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("kernel", [KERNEL_ODD, KERNEL_EVEN], ids=["odd", "even"])
@pytest.mark.parametrize("fun", FUNCTIONS, ids=lambda f: f.__name__)
def test_first_derivatives_in_both_arguments(fun, kernel, mode):
    check_grads(fun, (SIGNAL, kernel, mode), modes=("fwd", "rev"), argnums=(0, 1))


def fixed_mode(x, k):
    return np.sum(np.sin(np.convolve(x, k * k, "same"))) + np.sum(np.correlate(k, x, "same") ** 2)


def test_default_modes_and_positional_mode():
    def defaults(x, k):
        return np.sum(np.convolve(x, k) ** 2) + np.sum(np.correlate(x, k) ** 3)

    check_grads(defaults, (SIGNAL, KERNEL_EVEN), modes=("fwd", "rev"))
    check_grads(fixed_mode, (SIGNAL, KERNEL_EVEN), modes=("fwd", "rev"))


def test_under_jit_every_mode_and_both_orders():
    g = s2s.jit(s2s.grad(all_modes, argnums=(0, 1)))
    for kernel in (KERNEL_ODD, KERNEL_EVEN):
        got = g(SIGNAL, kernel)
        want = s2s.grad(all_modes, argnums=(0, 1))(SIGNAL, kernel)
        for a, b, k in zip(got, want, (0, 1)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(a, central_difference_grad(all_modes, (SIGNAL, kernel), k), rtol=1e-6, atol=1e-7)
        assert s2s.jit(all_modes)(SIGNAL, kernel) == pytest.approx(all_modes(SIGNAL, kernel), rel=1e-12)
    check_grads(all_modes, (SIGNAL, KERNEL_EVEN), modes=("fwd", "rev"), backend="cpu")


def all_modes_in_x(x):
    return all_modes(x, KERNEL_EVEN)


def all_modes_in_k(k):
    return all_modes(SIGNAL, k)


def kernel_from_the_signal(x):
    return fixed_mode(x, x[:4] * 0.5)


def _fd_hessian(f, x, eps=1e-5):
    grad = s2s.grad(f)
    return np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f,x", [(all_modes_in_x, SIGNAL), (all_modes_in_k, KERNEL_EVEN), (kernel_from_the_signal, SIGNAL)],
                         ids=lambda c: getattr(c, "__name__", ""))
def test_second_derivatives(f, x):
    np.testing.assert_allclose(s2s.hessian(f)(x), _fd_hessian(f, x), rtol=1e-6, atol=1e-7)


def test_second_derivatives_under_jit():
    np.testing.assert_allclose(s2s.jit(s2s.hessian(kernel_from_the_signal))(SIGNAL),
                               _fd_hessian(kernel_from_the_signal, SIGNAL), rtol=1e-6, atol=1e-7)


def test_float32_stays_float32():
    x, k = SIGNAL.astype(np.float32), KERNEL_ODD.astype(np.float32)
    for backend in ("python", "cpu"):
        gx, gk = s2s.jit(s2s.grad(fixed_mode, argnums=(0, 1)), backend=backend)(x, k)
        assert gx.dtype == np.float32 and gk.dtype == np.float32
        want = s2s.grad(fixed_mode, argnums=(0, 1))(SIGNAL, KERNEL_ODD)
        np.testing.assert_allclose(gx, want[0], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gk, want[1], rtol=1e-4, atol=1e-5)


def scaled_by_a_number(s, x):
    return np.sum(np.convolve(x, s, "same") ** 2) + np.sum(np.convolve(s * s, x) * WEIGHTS[:3])


def test_a_number_is_an_array_of_one():
    """np.convolve takes a number as a 1-element array; its gradient is a number. Numba's
    np.convolve takes arrays only: under jit, a refusal at the line."""
    check_grads(scaled_by_a_number, (0.4, SIGNAL[:3]), modes=("fwd", "rev"))
    g = s2s.grad(scaled_by_a_number)(0.4, SIGNAL[:3])
    assert np.ndim(g) == 0
    assert g == pytest.approx(central_difference_grad(scaled_by_a_number, (0.4, SIGNAL[:3]), 0), rel=1e-7)
    with pytest.raises(s2s.S2SError, match=r"test_convolution\.py:\d+:\d+: .*np.convolve takes 1-d arrays"):
        s2s.jit(s2s.grad(scaled_by_a_number))(0.4, SIGNAL[:3])


# ---- scipy.signal.convolve: arrays of any ndim, SciPy's modes ("same" keeps in1's shape) ---------

IMAGE = RNG.normal(size=(5, 4))
PATCH = RNG.normal(size=(3, 2))


def filtered(x, k, mode):
    return np.sum(np.sin(scipy.signal.convolve(x, k * k, mode=mode))) + np.sum(convolve(k, x, mode, "direct") ** 2)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("x,k", [(SIGNAL, KERNEL_EVEN), (IMAGE, PATCH)], ids=["1-d", "2-d"])
def test_scipy_convolve_in_both_arguments(x, k, mode):
    check_grads(filtered, (x, k, mode), modes=("fwd", "rev"), argnums=(0, 1))


def every_scipy_mode(x, k):
    return sum(np.sum(np.sin(convolve(x, k, mode)) * convolve(x, k, mode)) for mode in ("full", "same", "valid"))


def test_scipy_convolve_under_jit_and_its_second_derivatives():
    """The compiled direct sums against SciPy's values and central differences, a 3-d pair
    included; the Hessian in the image against differences of the gradient (compiled, the rule
    matrix's second-order column holds it)."""
    volume, block = RNG.normal(size=(3, 4, 2)), RNG.normal(size=(2, 2, 2))
    compiled = s2s.jit(s2s.value_and_grad(every_scipy_mode, argnums=(0, 1)))
    for x, k in ((IMAGE, PATCH), (PATCH, IMAGE), (volume, block)):
        value, grads = compiled(x, k)
        assert value == pytest.approx(every_scipy_mode(x, k), rel=1e-12)
        for got, argnum in zip(grads, (0, 1)):
            np.testing.assert_allclose(got, central_difference_grad(every_scipy_mode, (x, k), argnum),
                                       rtol=1e-6, atol=1e-7)

    def in_the_image(x):
        return every_scipy_mode(x, PATCH)

    want = np.array([(s2s.grad(in_the_image)(IMAGE + 1e-5 * e) - s2s.grad(in_the_image)(IMAGE - 1e-5 * e)) / 2e-5
                     for e in np.eye(IMAGE.size).reshape(-1, *IMAGE.shape)])
    got = s2s.hessian(in_the_image)(IMAGE)
    np.testing.assert_allclose(got.reshape(IMAGE.size, IMAGE.size), want.reshape(IMAGE.size, IMAGE.size),
                               rtol=1e-6, atol=1e-6)


def test_scipy_convolve_valid_needs_one_argument_larger_in_every_axis():
    mixed = RNG.normal(size=(2, 6))
    with pytest.raises(ValueError, match="at least as large as the other in every dimension"):
        s2s.jit(every_scipy_mode)(IMAGE, mixed)
