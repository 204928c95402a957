"""Helpers of the rules for np.polyval, np.interp, np.linalg.matrix_power, np.repeat, np.convolve,
np.correlate, scipy.signal.convolve, np.fft.irfft, np.linspace and np.meshgrid (templates/array_rules.py,
templates/scipy_rules.py): the primal where Numba lacks it, and the derivatives."""

from __future__ import annotations

import numpy as np

from .reductions import _shape_of

__all__ = ["polyval", "polyder", "polyval_bar_p", "interp_slope", "interp_dot_fp", "interp_bar_fp", "interp_slope_bar_fp",
           "interp_xp_refused", "interp_options", "matrix_power", "matrix_power_options", "repeat", "repeat_bar",
           "convolve", "correlate", "convolve_bar", "correlate_bar_a", "correlate_bar_v", "signal_convolve",
           "signal_convolve_bar1", "signal_convolve_bar2", "irfft_options", "irfft", "irfft_bar",
           "linspace_options", "linspace_grid", "meshgrid",
           "meshgrid_options", "meshgrid_spread", "meshgrid_bar", "real_if_close"]


# ---- np.polyval --------------------------------------------------------------------


def polyval(p, x):
    """np.polyval(p, x), which Numba lacks."""
    return np.polyval(p, x)


def polyder(p):
    """The coefficients of p's derivative (highest power first, as np.polyval takes them); of a
    constant polynomial, [0.0]. Linear in p."""
    p = np.asarray(p)
    n = p.shape[0] - 1
    if n < 1:
        return np.zeros(1, np.result_type(p, 1.0))
    return p[:-1] * np.arange(n, 0, -1)


def polyval_bar_p(g, p, x):
    """Adjoint in p of np.polyval(p, x): p[i] multiplies x ** (n - i), n = len(p) - 1, so its
    adjoint is the sum of g * x ** (n - i) over the result's elements."""
    n = np.shape(p)[0] - 1
    out = np.zeros(n + 1, np.result_type(g, x, 1.0))
    power = np.ones_like(np.asarray(x, dtype=out.dtype))
    for i in range(n, -1, -1):
        out[i] = np.sum(g * power)
        power = power * x
    return out


# ---- np.interp ---------------------------------------------------------------------


def interp_options(left=None, right=None, period=None, **_) -> str | None:
    """np.interp is differentiated with its defaults only (rules: Facts.options)."""
    if left is not None or right is not None or period is not None:
        return "np.interp is differentiated with its defaults only (no left, right or period)"
    return None


def _interp_defaults(left, right, period):
    problem = interp_options(left, right, period)
    if problem:
        raise ValueError(f"s2s: {problem}")


def _segments(x, xp):
    """For each x, the segment [xp[j], xp[j + 1]] np.interp takes its value from: j is the last
    knot at or left of x (searchsorted side='right' - 1). At a knot that is the segment to its
    right, as NumPy's own piecewise choice; at xp[-1] and beyond, and left of xp[0], there is none
    (np.interp gives fp[-1] or fp[0] there): inside is False."""
    xp = np.asarray(xp)
    j = np.searchsorted(xp, x, side="right") - 1
    inside = (j >= 0) & (j < xp.shape[0] - 1)
    k = np.clip(j, 0, max(xp.shape[0] - 2, 0))
    return j, k, inside


def interp_slope(x, xp, fp, left=None, right=None, period=None):
    """d np.interp(x, xp, fp) / dx: the slope of the segment x falls in (the one to the right of a
    knot x is at: see _segments); 0 outside (xp[0], xp[-1]) and at xp[-1], where np.interp is constant."""
    _interp_defaults(left, right, period)
    xp, fp = np.asarray(xp), np.asarray(fp)
    if xp.shape[0] < 2:
        return 0.0 * np.asarray(x, dtype=float)[()]
    _, k, inside = _segments(x, xp)
    slope = (fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k])
    return slope * inside


def interp_dot_fp(fp_dot, x, xp, left=None, right=None, period=None):
    """The tangent of np.interp(x, xp, fp) in fp: linear in fp, it is np.interp of fp's tangent."""
    _interp_defaults(left, right, period)
    return np.interp(x, xp, fp_dot)


def interp_bar_fp(g, x, xp, fp, left=None, right=None, period=None):
    """Adjoint in fp of np.interp(x, xp, fp): each g goes to the two ends of its segment, with the
    weights of the interpolation (1 - w at the left, w at the right, w = (x - xp[j]) / (xp[j+1] - xp[j])),
    or all to fp[0] left of xp[0] and to fp[-1] at xp[-1] and beyond (scattered, repeats add)."""
    _interp_defaults(left, right, period)
    xp = np.asarray(xp)
    n = xp.shape[0]
    g = np.ravel(np.broadcast_to(g, np.shape(x)))
    xs = np.ravel(np.asarray(x))
    out = np.zeros(np.shape(fp), np.result_type(g, 1.0))
    j, k, inside = _segments(xs, xp)
    if n < 2:
        out[0] += np.sum(g)
        return out
    w = np.where(inside, (xs - xp[k]) / (xp[k + 1] - xp[k]), 0.0)
    np.add.at(out, k, np.where(inside, g * (1.0 - w), 0.0))
    np.add.at(out, k + 1, np.where(inside, g * w, 0.0))
    out[0] += np.sum(np.where(j < 0, g, 0.0))
    out[n - 1] += np.sum(np.where(j >= n - 1, g, 0.0))
    return out


def interp_slope_bar_fp(g, x, xp, fp, left=None, right=None, period=None):
    """Adjoint in fp of interp_slope (linear in fp): each g, over its segment's width, to the segment's
    right end and less it to its left end; nothing where x is outside (xp[0], xp[-1]). Also the
    derivative in x of interp_bar_fp, whose weights move with x at that rate (g * x_dot for g)."""
    _interp_defaults(left, right, period)
    xp = np.asarray(xp)
    out = np.zeros(np.shape(fp), np.result_type(g, 1.0))
    if xp.shape[0] < 2:
        return out
    g = np.ravel(np.broadcast_to(g, np.shape(x)))
    _, k, inside = _segments(np.ravel(np.asarray(x)), xp)
    rate = np.where(inside, g / (xp[k + 1] - xp[k]), 0.0)
    np.add.at(out, k, -rate)
    np.add.at(out, k + 1, rate)
    return out


def interp_xp_refused(xp):
    """Where np.interp's sample points xp depend on a differentiated input: s2s does not
    differentiate np.interp in xp (its rule's xp lines call this, so the call is refused there)."""
    raise ValueError("s2s: np.interp is not differentiated with respect to its sample points xp, which depend on "
                     "a differentiated input here: make xp a constant of the derivative (compute it from "
                     "arguments that are not differentiated), or interpolate with arithmetic on the segment")


# ---- np.linalg.matrix_power ---------------------------------------------------------


def matrix_power_options(n=None, **_) -> str | None:
    """np.linalg.matrix_power(A, n) is differentiated for an integer n (rules: Facts.options)."""
    if n is not None and not isinstance(n, (int, np.integer)):
        return f"np.linalg.matrix_power is differentiated for an integer n, not {n!r}"
    return None


def matrix_power(a, n):
    """np.linalg.matrix_power(a, n); Numba's is typed as an optional array, which the
    adjoint helpers around it do not take as an array."""
    return np.linalg.matrix_power(a, n)


# ---- np.repeat ---------------------------------------------------------------------


def repeat(x, repeats, axis=None):
    """np.repeat(x, repeats, axis), which Numba takes without an axis only."""
    return np.repeat(x, repeats, axis)


def repeat_bar(g, x, repeats, axis=None):
    """Adjoint of np.repeat(x, repeats, axis): the copies of each element summed back (of an int
    repeats, g viewed with the copies on an axis of their own; of an array, scattered by index)."""
    shape = np.shape(x)
    if axis is None:
        g, n, axis = np.ravel(g), int(np.prod(shape, dtype=np.int64)), 0
    else:
        axis = axis % len(shape)
        n = shape[axis]
    g = np.moveaxis(np.asarray(g), axis, 0)
    if np.ndim(repeats) == 0:
        summed = np.sum(np.reshape(g, (n, int(repeats)) + g.shape[1:]), axis=1)
    else:
        summed = np.zeros((n,) + g.shape[1:], g.dtype)
        np.add.at(summed, np.repeat(np.arange(n), repeats), g)
    summed = np.moveaxis(summed, 0, axis)
    return np.reshape(summed, shape) if np.ndim(x) else summed.reshape(())[()]


# ---- np.convolve and np.correlate ----------------------------------------------------------
# Both are bilinear. With n = len(a) and m = len(v), each mode's result is a slice of the
# full one (length n + m - 1) that starts at an offset; a cotangent g of the slice is a
# cotangent of the full result that is zero elsewhere. The full convolution's adjoint in
# one argument is that cotangent correlated with the other argument ("valid": of the
# argument's length); np.correlate(a, v) is the convolution of a with v reversed.


def convolve(a, v, mode="full"):
    """np.convolve(a, v, mode): Numba's takes no mode."""
    return np.convolve(a, v, mode)


def correlate(a, v, mode="valid"):
    """np.correlate(a, v, mode): Numba's takes no mode."""
    return np.correlate(a, v, mode)


def _offset(n, m, mode, correlation):
    """Where np.convolve's (or np.correlate's) result in `mode` starts in the full result.
    NumPy centres "same" on the shorter argument; np.correlate rounds that centre up where
    v is the longer argument."""
    if mode == "full":
        return 0
    if mode == "valid":
        return min(n, m) - 1
    if mode == "same":
        return min(n, m) // 2 if correlation and m > n else (min(n, m) - 1) // 2
    raise ValueError(f"mode must be one of 'full', 'same' or 'valid', not {mode!r}")


def _full_cotangent(g, n, m, mode, correlation):
    g = np.asarray(g)
    full = np.zeros(n + m - 1, np.result_type(g, 0.0))
    start = _offset(n, m, mode, correlation)
    full[start:start + g.shape[0]] = g
    return full


def convolve_bar(g, this, other, mode="full"):
    """Adjoint of np.convolve(a, v, mode) in one argument (`this`, for its length) given the
    other: the full cotangent correlated with `other`. NumPy's offsets are symmetric in a and v.
    np.convolve takes a number as an array of one: its adjoint is a number."""
    n, m = np.size(this), np.size(other)
    adjoint = np.correlate(_full_cotangent(g, n, m, mode, False), np.ravel(other), "valid")
    return adjoint[0] if np.ndim(this) == 0 else adjoint


def correlate_bar_a(g, a, v, mode="valid"):
    """Adjoint of np.correlate(a, v, mode) in a."""
    full = _full_cotangent(g, np.shape(a)[0], np.shape(v)[0], mode, True)
    return np.correlate(full, np.asarray(v)[::-1], "valid")


def correlate_bar_v(g, a, v, mode="valid"):
    """Adjoint of np.correlate(a, v, mode) in v: that of the reversed v, reversed."""
    full = _full_cotangent(g, np.shape(a)[0], np.shape(v)[0], mode, True)
    return np.correlate(full, a, "valid")[::-1]


# ---- scipy.signal.convolve ---------------------------------------------------------------
# Of two arrays of one ndim: the full result has shape in1.shape + in2.shape - 1, and each mode
# keeps a centred part of it (SciPy's _centered): "same" in1's shape, "valid" the shape of the
# larger less the smaller plus one. The adjoint in each argument correlates the cotangent, put
# back in its place in the full shape, with the other argument ("valid": that argument's shape).


def _float(a):
    a = np.asarray(a)
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)


def signal_convolve(in1, in2, mode="full", method="auto"):
    """scipy.signal.convolve(in1, in2, mode, method), of float arrays."""
    import scipy.signal

    return scipy.signal.convolve(_float(in1), _float(in2), mode, method)


def _full_signal_cotangent(g, in1, in2):
    """g, the cotangent of a mode's result, at its place in the full result (zeros around it)."""
    g = np.asarray(g)
    full = np.zeros(tuple(n + m - 1 for n, m in zip(np.shape(in1), np.shape(in2))), np.result_type(g, 0.0))
    full[tuple(slice((f - o) // 2, (f - o) // 2 + o) for f, o in zip(full.shape, g.shape))] = g
    return full


def signal_convolve_bar1(g, in1, in2, mode="full"):
    """Adjoint of scipy.signal.convolve(in1, in2, mode) in in1 (whose shape alone it reads)."""
    import scipy.signal

    return scipy.signal.correlate(_full_signal_cotangent(g, in1, in2), _float(in2), "valid")


def signal_convolve_bar2(g, in1, in2, mode="full"):
    """Adjoint of scipy.signal.convolve(in1, in2, mode) in in2 (whose shape alone it reads)."""
    import scipy.signal

    return scipy.signal.correlate(_full_signal_cotangent(g, in1, in2), _float(in1), "valid")


# ---- np.fft.irfft ------------------------------------------------------------------------
# Of real x of length L along the axis, irfft(x, n) (n = 2 (L - 1) by default) reads the first
# n // 2 + 1 entries of x (zeros where x is shorter) as a Hermitian spectrum; for real entries
#   y_j = (x_0 + sum_{0 < k < n/2} 2 x_k cos(2 pi k j / n) + [n even] x_{n/2} cos(pi j)) / s,
# s = n for norm None or "backward", sqrt(n) for "ortho", 1 for "forward". It is linear in x;
# its transpose is x_bar_k = c_k / s * sum_j g_j cos(2 pi k j / n) for k <= n // 2 (c_0 = 1,
# c_{n/2} = 1 for even n, c_k = 2 otherwise) and 0 beyond, cut or padded to L: the sums of
# cosines are the real part of rfft(g, n). Its adjoint in a complex x is refused (irfft reads the
# imaginary parts too, and s2s differentiates real programs); a tangent of any x is irfft's.

IRFFT_COMPLEX = ("s2s: np.fft.irfft is differentiated of real data, and this array is complex: s2s differentiates "
                 "real programs (write the transform of complex data with np.cos and np.sin of the frequencies "
                 "times the positions, on its real and imaginary parts as two real arrays)")
IRFFT_OUT = "np.fft.irfft(..., out=...) writes into out, which s2s does not follow: use the returned value"


def irfft_options(n=None, axis=-1, norm=None, out=None, **_) -> str | None:
    """np.fft.irfft is differentiated with any n, axis and norm, without out= (rules: Facts.options;
    irfft refuses an out= that is a variable when it runs)."""
    if out is not None:
        return IRFFT_OUT
    if norm not in (None, "backward", "ortho", "forward"):
        return f"np.fft.irfft takes norm None, 'backward', 'ortho' or 'forward', not {norm!r}"
    return None


def _irfft_scale(m, norm):
    """What irfft of m points divides its sum of cosines by."""
    if norm is None or norm == "backward":
        return float(m)
    if norm == "ortho":
        return float(np.sqrt(m))
    if norm == "forward":
        return 1.0
    raise ValueError(f"s2s: np.fft.irfft takes norm None, 'backward', 'ortho' or 'forward', not {norm!r}")


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """np.fft.irfft(a, n, axis, norm), which generated code calls for np.fft.irfft and for its
    tangents (Numba has no np.fft: overloads/functions.py sums the cosines of real data)."""
    if out is not None:
        raise ValueError(f"s2s: {IRFFT_OUT}")
    return np.fft.irfft(a, n, axis, norm)


def irfft_bar(g, a, n=None, axis=-1, norm=None):
    """Adjoint of np.fft.irfft(a, n, axis, norm) in real a (a may be its shape, where generated code
    keeps only that): the weighted real part of rfft(g, n) along the axis, cut or padded to a's length."""
    if np.iscomplexobj(a):
        raise ValueError(IRFFT_COMPLEX)
    length = _shape_of(a)[axis]
    m = 2 * (length - 1) if n is None else int(n)
    sums = np.moveaxis(np.fft.rfft(np.asarray(g), m, axis).real, axis, -1)  # (m // 2 + 1 of them)
    sums[..., 1:(m + 1) // 2] *= 2.0
    sums /= _irfft_scale(m, norm)
    out = np.zeros(sums.shape[:-1] + (length,), sums.dtype)
    kept = min(length, sums.shape[-1])
    out[..., :kept] = sums[..., :kept]
    return np.moveaxis(out, -1, axis)


# ---- np.linspace -------------------------------------------------------------------------


def linspace_options(num=50, endpoint=True, retstep=False, dtype=None, axis=0, **_) -> str | None:
    """np.linspace is differentiated in start and stop with a float result along axis 0
    (rules: Facts.options; runtime.linspace_grid checks the same where they are variables)."""
    if retstep is not False:
        return "retstep=True is not differentiated: compute the step as (stop - start) / (num - 1)"
    if dtype is not None:
        return "dtype= is not differentiated: convert the result with .astype(dtype)"
    if axis != 0:
        return "np.linspace is differentiated along axis 0 only: np.moveaxis the result"
    return None


def linspace_grid(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """t with np.linspace(start, stop, num, endpoint) == start + (stop - start) * t: the
    fractions of the way from start to stop, shaped (num, 1, ...) to broadcast against array
    endpoints. A constant of the derivative."""
    if retstep or dtype is not None or axis != 0:
        raise ValueError("s2s: np.linspace is differentiated in start and stop with retstep=False, dtype=None "
                         "and axis=0 only")
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    steps = num - 1 if endpoint else num
    t = np.arange(num) / max(steps, 1)
    return t.reshape((num,) + (1,) * np.ndim(np.broadcast(start, stop)))


# ---- np.meshgrid --------------------------------------------------------------------


def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    """np.meshgrid, as a tuple (Numba has none: overloads/functions.py compiles it of one to three
    1-d arrays)."""
    return tuple(np.meshgrid(*xi, indexing=indexing, sparse=sparse, copy=copy))


def meshgrid_options(indexing="xy", sparse=False, copy=True, **_) -> str | None:
    """np.meshgrid is differentiated of two arrays, into full grids (rules: Facts.options;
    meshgrid_spread and meshgrid_bar check the same where the options are variables)."""
    if sparse is not False:
        return "np.meshgrid(..., sparse=True) is not differentiated: use the full grids (sparse=False)"
    if indexing not in ("xy", "ij"):
        return "np.meshgrid is differentiated of two arrays, with indexing 'xy' or 'ij'"
    return None


def _repeated_axis(k, indexing) -> int:
    """The axis of its 2-d grid along which np.meshgrid(x1, x2, indexing=indexing) repeats xk."""
    if indexing not in ("xy", "ij") or k not in (0, 1):
        raise ValueError("s2s: np.meshgrid is differentiated of two arrays, with indexing 'xy' or 'ij' and "
                         "sparse=False")
    return k if indexing == "xy" else 1 - k


def meshgrid_spread(v, grid, k, indexing="xy"):
    """The grid k of np.meshgrid(x1, x2, indexing=indexing) with v for xk: v repeated along the
    axis xk is repeated over, to the shape of grid. Linear in v (the tangents of the grids)."""
    axis = _repeated_axis(k, indexing)
    return np.broadcast_to(np.expand_dims(np.ravel(v), axis), np.shape(grid)) * 1.0


def meshgrid_bar(g, x, k, indexing="xy"):
    """Adjoint of grid k of np.meshgrid(x1, x2, indexing=indexing) in xk (x): g summed along the
    axis xk is repeated over, in x's shape. The transpose of meshgrid_spread."""
    return np.reshape(np.sum(g, axis=_repeated_axis(k, indexing)), np.shape(x))


def real_if_close(a, tol=100):
    """np.real_if_close, which Numba lacks; of the real data s2s differentiates, a itself."""
    return np.real_if_close(a, tol)
