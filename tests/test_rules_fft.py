"""The rule of np.fft.irfft of real data (templates/array_rules.py): irfft(x, n, axis, norm) is linear
in x, a sum of cosines of its first n // 2 + 1 entries, and its adjoint is the weighted real part of
rfft of the cotangent (runtime/functions.py; under Numba, which has no np.fft, both are sums of
cosines written out). Checked against central differences of np.fft.irfft itself: the gradient
(python backend, and compiled by s2s.jit), the jvp, and the gradient under s2s.vmap; for the default
n, an even n and odd ones (shorter and longer than 2 (L - 1)), along axis 0 of a matrix, and with
each norm. And the refusals, at the user's line: a complex spectrum, out=. (np.fft.fftshift and
ifftshift: tests/test_rules_array_manipulation.py.)"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, where
from s2s.testing import check_grads

_rng = np.random.default_rng(3)
A = _rng.standard_normal((4, 6))  # L = 6 along the last axis (n = 10 by default), 4 along axis 0
STACK = A + 0.1 * _rng.standard_normal((3, 4, 6))

# ---- programs ------------------------------------------------------------------------------
# Each reads its transform through a nonlinearity, so that every entry of the result counts.


def default_n(A):
    return np.sum(np.sin(2.0 * np.fft.irfft(A)))  # n = 10: the Nyquist entry A[:, 5] counts once


def even_n(A):
    return np.sum(np.sin(2.0 * np.fft.irfft(A, 8)))  # reads 5 of the 6 entries


def odd_n_shorter(A):
    return np.sum(np.sin(2.0 * np.fft.irfft(A, 7, norm="ortho")))  # reads 4, no Nyquist entry


def odd_n_longer(A):
    return np.sum(np.sin(2.0 * np.fft.irfft(A, n=13, norm="backward")))  # 7 entries: A padded with a zero


def along_axis_0(A):
    return np.sum(np.sin(2.0 * np.fft.irfft(A, axis=0, norm="forward")))  # L = 4, n = 6


CASES = [default_n, even_n, odd_n_shorter, odd_n_longer, along_axis_0]


def every_case(A):
    """The cases above in one function (one compiled function under s2s.jit)."""
    spectra = (np.fft.irfft(A), np.fft.irfft(A, 8), np.fft.irfft(A, 7, norm="ortho"),
               np.fft.irfft(A, n=13, norm="backward"), np.fft.irfft(A, axis=0, norm="forward"))
    return sum(np.sum(np.sin(2.0 * y)) for y in spectra)


@pytest.mark.parametrize("fun", CASES, ids=lambda f: f.__name__)
def test_gradient_and_jvp_against_central_differences(fun):
    np.testing.assert_allclose(s2s.grad(fun)(A), central_difference_grad(fun, (A,), 0), rtol=1e-6, atol=1e-7)
    check_grads(fun, (A,), modes=("fwd",))


def test_under_jit():
    """The value and the gradient that s2s.jit compiles (irfft and its adjoint as sums of cosines;
    a tangent is the primal's helper again), of every case at once: one compilation."""
    value, gradient = s2s.jit(s2s.value_and_grad(every_case))(A)
    assert value == pytest.approx(every_case(A), rel=1e-12)
    np.testing.assert_allclose(gradient, central_difference_grad(every_case, (A,), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fun", [default_n, along_axis_0], ids=lambda f: f.__name__)
def test_vmap_of_the_gradient(fun):
    """Batched along the example's axis (the batch is last in the vectorised code: axis -1 moves)."""
    got = s2s.vmap(s2s.grad(fun))(STACK)
    for b, example in enumerate(STACK):
        np.testing.assert_allclose(got[b], central_difference_grad(fun, (example,), 0), rtol=1e-6, atol=1e-7)


# ---- refusals ------------------------------------------------------------------------------


def of_a_complex_argument(A):
    return np.sum(np.sin(np.fft.irfft(A)))


def of_a_complex_spectrum(A):
    return np.sum(np.fft.irfft(A + 1j * A))


def into_out(A, out):
    return np.sum(np.fft.irfft(A, out=out))


def test_a_complex_spectrum_is_refused_at_the_line():
    """Where it is differentiated: irfft reads the imaginary parts too (not where it is computed alone)."""
    with pytest.raises(s2s.S2SError, match=where(of_a_complex_argument, "irfft") + r"\d+: np.fft.irfft is "
                       "differentiated of real data, and this array is complex"):
        s2s.grad(of_a_complex_argument)(A + 0.5j)
    assert s2s.jit(of_a_complex_argument, backend="python")(A + 0.5j) == of_a_complex_argument(A + 0.5j)
    with pytest.raises(s2s.S2SError, match=where(of_a_complex_spectrum, "1j") + r"\d+: a complex number meets a "
                       "differentiated value"):
        s2s.grad(of_a_complex_spectrum)(A)


def test_out_is_refused_at_the_line():
    with pytest.raises(s2s.S2SError, match=where(into_out, "out=") + r"\d+: np.fft.irfft\(..., out=...\) writes into "
                       "out"):
        s2s.grad(into_out)(A, np.zeros((4, 10)))
