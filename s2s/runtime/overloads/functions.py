"""Overloads of the helpers of np.polyval, np.interp, np.linalg.matrix_power, np.repeat,
np.convolve, np.correlate, scipy.signal.convolve, np.fft.irfft, np.linspace and np.meshgrid (runtime/functions.py). A number and an
array take code of their own (Numba types them apart); options the rules refuse (np.interp's
left, right, period) are refused when Numba compiles."""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ... import runtime as rt
from .common import _compile, _is_none, _nd, _scalar
from .reductions import _shape_of, _tuple_source
from .shapes import _rows

# ---- np.polyval --------------------------------------------------------------------


def _coefficients(p):
    """p: a 1-d array, or a tuple or list of numbers (a display written in the call)."""
    if isinstance(p, types.Array) and p.ndim == 1:
        return
    if isinstance(p, (types.UniTuple, types.List)) and isinstance(p.dtype, (types.Number, types.Boolean)):
        return
    raise TypingError("s2s: under jit, np.polyval takes its coefficients p as a 1-d array (or a tuple or list "
                      "of numbers)")


@overload(rt.polyval)
def _polyval(p, x):
    _coefficients(p)
    if _scalar(x):
        def impl(p, x):
            out = 0.0 * x
            for i in range(len(p)):
                out = out * x + p[i]
            return out
        return impl

    def impl(p, x):
        out = np.zeros(x.shape)
        for i in range(len(p)):
            out = out * x + p[i]
        return out
    return impl


@overload(rt.polyder)
def _polyder(p):
    _coefficients(p)

    def impl(p):
        n = len(p) - 1
        out = np.zeros(max(n, 1))
        for i in range(n):
            out[i] = p[i] * (n - i)
        return out
    return impl


@overload(rt.polyval_bar_p)
def _polyval_bar_p(g, p, x):
    _coefficients(p)
    if _scalar(x) and _scalar(g):
        def impl(g, p, x):
            n = len(p) - 1
            out = np.zeros(n + 1)
            power = 1.0
            for i in range(n, -1, -1):
                out[i] = g * power
                power = power * x
            return out
        return impl

    def impl(g, p, x):
        n = len(p) - 1
        out = np.zeros(n + 1)
        power = np.ones(np.shape(g)) + 0.0 * x
        for i in range(n, -1, -1):
            out[i] = np.sum(g * power)
            power = power * x
        return out
    return impl


# ---- np.interp ---------------------------------------------------------------------


def _interp_defaults(left, right, period):
    if not (_is_none(left) and _is_none(right) and _is_none(period)):
        raise TypingError("s2s: " + rt.interp_options(left=1, right=None, period=None))


@register_jitable
def _segment(x, xp):
    """(j, k, inside) of runtime/functions.py's _segments, for one number x."""
    j = np.searchsorted(xp, x, side="right") - 1
    n = xp.shape[0]
    inside = j >= 0 and j < n - 1
    k = min(max(j, 0), max(n - 2, 0))
    return j, k, inside


@register_jitable
def _slope_at(x, xp, fp):
    if xp.shape[0] < 2:
        return 0.0
    _, k, inside = _segment(x, xp)
    if not inside:
        return 0.0
    return (fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k])


@overload(rt.interp_slope)
def _interp_slope(x, xp, fp, left=None, right=None, period=None):
    _interp_defaults(left, right, period)
    if _scalar(x):
        return lambda x, xp, fp, left=None, right=None, period=None: _slope_at(x, xp, fp)

    def impl(x, xp, fp, left=None, right=None, period=None):
        out = np.empty(x.shape)
        flat = out.reshape(out.size)
        xs = np.ascontiguousarray(x).reshape(x.size)
        for i in range(xs.size):
            flat[i] = _slope_at(xs[i], xp, fp)
        return out
    return impl


@overload(rt.interp_dot_fp)
def _interp_dot_fp(fp_dot, x, xp, left=None, right=None, period=None):
    _interp_defaults(left, right, period)
    return lambda fp_dot, x, xp, left=None, right=None, period=None: np.interp(x, xp, fp_dot)


@register_jitable
def _scatter(out, g, x, xp):
    n = xp.shape[0]
    j, k, inside = _segment(x, xp)
    if n < 2 or j < 0:
        out[0] += g
    elif not inside:
        out[n - 1] += g
    else:
        w = (x - xp[k]) / (xp[k + 1] - xp[k])
        out[k] += g * (1.0 - w)
        out[k + 1] += g * w


@overload(rt.interp_bar_fp)
def _interp_bar_fp(g, x, xp, fp, left=None, right=None, period=None):
    _interp_defaults(left, right, period)
    if _scalar(x):
        def impl(g, x, xp, fp, left=None, right=None, period=None):
            out = np.zeros(fp.shape[0])
            _scatter(out, g, x, xp)
            return out
        return impl

    def impl(g, x, xp, fp, left=None, right=None, period=None):
        out = np.zeros(fp.shape[0])
        xs = np.ascontiguousarray(x).reshape(x.size)
        gs = np.ascontiguousarray(np.broadcast_to(g, x.shape)).reshape(x.size)
        for i in range(xs.size):
            _scatter(out, gs[i], xs[i], xp)
        return out
    return impl


@register_jitable
def _scatter_rate(out, g, x, xp):
    _, k, inside = _segment(x, xp)
    if inside:
        rate = g / (xp[k + 1] - xp[k])
        out[k] -= rate
        out[k + 1] += rate


@overload(rt.interp_slope_bar_fp)
def _interp_slope_bar_fp(g, x, xp, fp, left=None, right=None, period=None):
    _interp_defaults(left, right, period)

    def impl(g, x, xp, fp, left=None, right=None, period=None):
        out = np.zeros(fp.shape[0])
        if xp.shape[0] < 2:
            return out
        xs = np.ascontiguousarray(np.asarray(x) * 1.0).reshape(-1)
        gs = np.ascontiguousarray(np.broadcast_to(np.asarray(g) * 1.0, np.asarray(x).shape)).reshape(-1)
        for i in range(xs.size):
            _scatter_rate(out, gs[i], xs[i], xp)
        return out
    return impl


@overload(rt.interp_xp_refused)
def _interp_xp_refused(xp):
    raise TypingError("s2s: np.interp is not differentiated with respect to its sample points xp, which depend on "
                      "a differentiated input here: make xp a constant of the derivative")


# ---- np.linalg.matrix_power ---------------------------------------------------------


def _square(name, a):
    if not (isinstance(a, types.Array) and a.ndim == 2):
        raise TypingError(f"s2s: under jit, np.linalg.matrix_power and its derivative take one 2-d matrix ({name})")


@overload(rt.matrix_power)
def _matrix_power(a, n):
    _square("A", a)

    def impl(a, n):
        base = np.ascontiguousarray(a).copy()
        if n < 0:
            base = np.linalg.inv(base)
        k = n if n >= 0 else -n
        out = np.eye(a.shape[0], dtype=a.dtype)
        while k > 0:  # by squaring, as NumPy computes it
            if k % 2 == 1:
                out = out @ base
            k //= 2
            if k > 0:
                base = base @ base
        return out
    return impl


# ---- np.repeat ---------------------------------------------------------------------


def _repeats(repeats):
    """The function that gives the counts of each element."""
    if isinstance(repeats, types.Integer):
        return _int_counts
    if isinstance(repeats, types.Array) and repeats.ndim == 1 and isinstance(repeats.dtype, types.Integer):
        return _array_counts
    raise TypingError("s2s: under jit, np.repeat takes repeats as an int or a 1-d array of ints")


@register_jitable
def _int_counts(repeats, n):
    return np.full(n, repeats, np.int64)


@register_jitable
def _array_counts(repeats, n):
    if repeats.size == 1:
        return np.full(n, repeats[0], np.int64)
    if repeats.size != n:
        raise ValueError("s2s: np.repeat's repeats has one count per element along the axis, or one")
    return repeats.astype(np.int64)


@register_jitable
def _repeat_rows(r, counts):
    out = np.empty((r.shape[0], counts.sum()), r.dtype)
    for i in range(r.shape[0]):
        at = 0
        for j in range(r.shape[1]):
            for _ in range(counts[j]):
                out[i, at] = r[i, j]
                at += 1
    return out


@register_jitable
def _repeat_bar_rows(r, counts):
    out = np.zeros((r.shape[0], counts.size), r.dtype)
    for i in range(r.shape[0]):
        at = 0
        for j in range(counts.size):
            for _ in range(counts[j]):
                out[i, j] += r[i, at]
                at += 1
    return out


@overload(rt.repeat)
def _repeat(x, repeats, axis=None):
    _counts = _repeats(repeats)
    if _is_none(axis):
        if _scalar(x):
            return lambda x, repeats, axis=None: _repeat_rows(np.full((1, 1), x), _counts(repeats, 1))[0]

        def impl(x, repeats, axis=None):
            r = np.ascontiguousarray(x).reshape((1, x.size))
            return _repeat_rows(r, _counts(repeats, x.size))[0]
        return impl
    nd = _nd(x)

    def impl(x, repeats, axis=None):
        a = axis % nd
        r, shape = _rows(x, a)
        out = _repeat_rows(r, _counts(repeats, r.shape[1]))
        return np.swapaxes(out.reshape(shape[:-1] + (out.shape[1],)), a, -1)
    return impl


@overload(rt.repeat_bar)
def _repeat_bar(g, x, repeats, axis=None):
    _counts = _repeats(repeats)
    if _is_none(axis):
        if _scalar(x):
            return lambda g, x, repeats, axis=None: np.sum(g)

        def impl(g, x, repeats, axis=None):
            r = np.ascontiguousarray(g).reshape((1, g.size))
            return _repeat_bar_rows(r, _counts(repeats, x.size))[0].reshape(x.shape)
        return impl
    nd = _nd(x)

    def impl(g, x, repeats, axis=None):
        a = axis % nd
        r, shape = _rows(g, a)
        out = _repeat_bar_rows(r, _counts(repeats, x.shape[a]))
        return np.ascontiguousarray(np.swapaxes(out.reshape(shape[:-1] + (out.shape[1],)), a, -1))
    return impl


# ---- np.convolve and np.correlate ----------------------------------------------------------
# Numba's np.convolve and np.correlate take no mode: each mode is a slice of the full result
# (np.convolve(a, v), or np.correlate's "valid" result of the zero-padded a). The offsets are
# runtime/functions.py's.


def _vectors(name, *arrays):
    if not all(isinstance(a, types.Array) and a.ndim == 1 for a in arrays):
        raise TypingError(f"s2s: under jit, {name} takes 1-d arrays")


@register_jitable
def _mode_offset(n, m, mode, correlation):
    if mode == "full":
        return 0
    if mode == "valid":
        return min(n, m) - 1
    if mode == "same":
        if correlation and m > n:
            return min(n, m) // 2
        return (min(n, m) - 1) // 2
    raise ValueError("mode must be one of 'full', 'same' or 'valid'")


@register_jitable
def _mode_length(n, m, mode):
    if mode == "full":
        return n + m - 1
    if mode == "same":
        return max(n, m)
    return max(n, m) - min(n, m) + 1


@register_jitable
def _full_cotangent(g, n, m, mode, correlation):
    full = np.zeros(n + m - 1, g.dtype)
    start = _mode_offset(n, m, mode, correlation)
    full[start:start + g.shape[0]] = g
    return full


@register_jitable
def _in_mode(full, n, m, mode, correlation):
    """The part of the full result that `mode` keeps."""
    start = _mode_offset(n, m, mode, correlation)
    return full[start:start + _mode_length(n, m, mode)].copy()


@overload(rt.convolve)
def _convolve(a, v, mode="full"):
    _vectors("np.convolve", a, v)
    return lambda a, v, mode="full": _in_mode(np.convolve(a, v), a.shape[0], v.shape[0], mode, False)


@overload(rt.correlate)
def _correlate(a, v, mode="valid"):
    _vectors("np.correlate", a, v)
    return lambda a, v, mode="valid": _in_mode(np.convolve(a, v[::-1]), a.shape[0], v.shape[0], mode, True)


@overload(rt.convolve_bar)
def _convolve_bar(g, this, other, mode="full"):
    _vectors("np.convolve", g, this, other)
    return lambda g, this, other, mode="full": np.correlate(
        _full_cotangent(g, this.shape[0], other.shape[0], mode, False), other)


@overload(rt.correlate_bar_a)
def _correlate_bar_a(g, a, v, mode="valid"):
    _vectors("np.correlate", g, a, v)
    return lambda g, a, v, mode="valid": np.correlate(_full_cotangent(g, a.shape[0], v.shape[0], mode, True), v[::-1])


@overload(rt.correlate_bar_v)
def _correlate_bar_v(g, a, v, mode="valid"):
    _vectors("np.correlate", g, a, v)
    return lambda g, a, v, mode="valid": np.correlate(
        _full_cotangent(g, a.shape[0], v.shape[0], mode, True), a)[::-1].copy()


# ---- scipy.signal.convolve ---------------------------------------------------------------
# Direct sums written out for the arrays' ndim: the full result accumulates in1[i] * in2[j] at
# i + j, and a mode keeps its centred part (runtime/functions.py); each adjoint sums the full
# cotangent at i + j times the other argument's j (or i).


def _signal_arrays(*arrays):
    if not all(isinstance(a, types.Array) and a.ndim >= 1 for a in arrays) or len({a.ndim for a in arrays}) > 1:
        raise TypingError("s2s: under jit, scipy.signal.convolve takes two arrays of one ndim (1 or more)")


@register_jitable
def _signal_part(n1, n2, mode):
    """(start, length) along one axis of the part of the full result that mode keeps."""
    if mode == "full":
        return 0, n1 + n2 - 1
    if mode == "same":
        return (n2 - 1) // 2, n1
    if mode == "valid":
        return min(n1, n2) - 1, max(n1, n2) - min(n1, n2) + 1
    raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")


def _loops(names, bounds, body, depth=1):
    """Nested for loops of names over range(bounds), around body (lines), from depth."""
    lines = []
    for k, (i, n) in enumerate(zip(names, bounds)):
        lines.append("    " * (depth + k) + f"for {i} in range({n}):")
    return lines + ["    " * (depth + len(names)) + line for line in body]


@overload(rt.signal_convolve)
def _signal_convolve(in1, in2, mode="full", method="auto"):
    _signal_arrays(in1, in2)
    d = in1.ndim
    i = [f"i{k}" for k in range(d)]
    j = [f"j{k}" for k in range(d)]
    lines = ["def impl(in1, in2, mode='full', method='auto'):",
             f"    full = np.zeros(({''.join(f'in1.shape[{k}] + in2.shape[{k}] - 1, ' for k in range(d))}), dtype)"]
    lines += ["    if mode == 'valid':",
              f"        larger1 = {' and '.join(f'in1.shape[{k}] >= in2.shape[{k}]' for k in range(d))}",
              f"        larger2 = {' and '.join(f'in2.shape[{k}] >= in1.shape[{k}]' for k in range(d))}",
              "        if not (larger1 or larger2):",
              "            raise ValueError(\"for 'valid' mode, one must be at least as large as the other in "
              "every dimension\")"]
    lines += _loops(i, [f"in1.shape[{k}]" for k in range(d)],
                    ["a = in1[" + ", ".join(i) + "]"]
                    + _loops(j, [f"in2.shape[{k}]" for k in range(d)],
                             ["full[" + ", ".join(f"{a} + {b}" for a, b in zip(i, j)) + "] += a * in2["
                              + ", ".join(j) + "]"], 0))
    for k in range(d):
        lines.append(f"    s{k}, n{k} = _signal_part(in1.shape[{k}], in2.shape[{k}], mode)")
    lines.append("    return full[" + ", ".join(f"s{k}:s{k} + n{k}" for k in range(d)) + "].copy()")
    dtype = np.result_type(np.float64 if not isinstance(in1.dtype, types.Float) else str(in1.dtype),
                           np.float64 if not isinstance(in2.dtype, types.Float) else str(in2.dtype))
    return _compile("\n".join(lines) + "\n", "impl", dtype=dtype, _signal_part=_signal_part)


def _signal_convolve_adjoint(g, in1, in2, shaped: str, other: str):
    """The adjoint in the argument named `shaped` (in1 or in2): r[i] = the sum over j of the full
    cotangent at i + j times other[j], the cotangent g put at its centred place in the full shape
    (its mode read off g's shape, as runtime/functions.py does)."""
    _signal_arrays(g, in1, in2)
    d = g.ndim
    i = [f"i{k}" for k in range(d)]
    j = [f"j{k}" for k in range(d)]
    lines = ["def impl(g, in1, in2, mode='full'):",
             f"    full = np.zeros(({''.join(f'in1.shape[{k}] + in2.shape[{k}] - 1, ' for k in range(d))}), "
             "np.float64)",
             "    full[" + ", ".join(f"(full.shape[{k}] - g.shape[{k}]) // 2:(full.shape[{k}] - g.shape[{k}]) // 2 "
                                     f"+ g.shape[{k}]" for k in range(d)) + "] = g",
             f"    r = np.zeros({shaped}.shape, np.float64)"]
    lines += _loops(i, [f"{shaped}.shape[{k}]" for k in range(d)],
                    ["total = 0.0"]
                    + _loops(j, [f"{other}.shape[{k}]" for k in range(d)],
                             [f"total += full[{', '.join(f'{a} + {b}' for a, b in zip(i, j))}] "
                              f"* {other}[{', '.join(j)}]"],
                             0)
                    + [f"r[{', '.join(i)}] = total"])
    return _compile("\n".join(lines + ["    return r"]) + "\n", "impl")


@overload(rt.signal_convolve_bar1)
def _signal_convolve_bar1(g, in1, in2, mode="full"):
    return _signal_convolve_adjoint(g, in1, in2, "in1", "in2")


@overload(rt.signal_convolve_bar2)
def _signal_convolve_bar2(g, in1, in2, mode="full"):
    return _signal_convolve_adjoint(g, in1, in2, "in2", "in1")


# ---- np.fft.irfft -------------------------------------------------------------------------
# Numba has no np.fft: irfft of real data is its sum of cosines (runtime/functions.py), and its
# adjoint the transposed sum (n // 2 + 1 by n products a row, where an FFT takes n log n: the
# short transforms of a model's spectra). The array is a C-contiguous (before, length, after)
# block whose middle axis one compiled loop of each kind transforms, whatever the axis, n and
# norm; an overload, written for the array's ndim, only reads the options and puts the result
# back in its shape (small compilations, and few: n and axis are not typed as literals).


def _irfft_of_real(a, refusal: str):
    """The dtype of irfft's result of a real array a (float32 stays float32, as NumPy's); a complex
    one is refused."""
    if not isinstance(a, types.Array) or a.ndim < 1:
        raise TypingError("s2s: under jit, np.fft.irfft and its derivative take arrays")
    if isinstance(a.dtype, types.Complex):
        raise TypingError(refusal)
    return np.float32 if a.dtype == types.float32 else np.float64


_IRFFT_OF_COMPLEX = ("s2s: under jit, np.fft.irfft takes a real array (Numba has no np.fft: s2s sums the cosines "
                     "of real data)")


def _irfft_options(n, axis, norm, length: str) -> str:
    """The source that reads irfft's options: its number of points m (n, or 2 (length - 1)) and
    its scale, of norm None or a literal (_unknown_norm: numba.literally makes a variable's one)."""
    if _is_none(n):
        points = f"2 * ({length} - 1)"
    elif isinstance(n, types.Integer):
        points = "n"
    else:
        raise TypingError("s2s: under jit, np.fft.irfft takes n as an int or None")
    if not isinstance(axis, (types.Integer, types.Omitted, int)):
        raise TypingError("s2s: under jit, np.fft.irfft takes axis as an int")
    scales = {None: "float(m)", "backward": "float(m)", "ortho": "np.sqrt(float(m))", "forward": "1.0"}
    value = None if _is_none(norm) else getattr(norm, "literal_value", norm)
    if not isinstance(value, str) and value is not None:
        raise TypingError("s2s: under jit, np.fft.irfft takes norm None, 'backward', 'ortho' or 'forward'")
    # (another string is refused when it runs, as NumPy refuses it: Numba asked for a literal type,
    # and a refusal while it types one is not told)
    return f"    m = _some_points({points})\n    scale = {scales.get(value, '_refused_norm(m)')}\n"


def _unknown_norm(norm) -> bool:
    """norm is a string that Numba has not typed as a literal (a variable's)."""
    return isinstance(norm, types.UnicodeType) and not isinstance(norm, types.StringLiteral)


@register_jitable
def _some_points(m):
    if m < 1:
        raise ValueError("s2s: np.fft.irfft takes n >= 1 (an array of one entry along the axis needs n)")
    return m


@register_jitable
def _refused_norm(m):
    """Refuses a norm NumPy does not know (m >= 1 here: the return only gives the call its type)."""
    if m > 0:
        raise ValueError("s2s: np.fft.irfft takes norm None, 'backward', 'ortho' or 'forward'")
    return 1.0


@register_jitable
def _axis_of(axis, ndim):
    if axis < -ndim or axis >= ndim:
        raise ValueError("s2s: np.fft.irfft's axis is out of bounds for the array")
    return axis % ndim


@register_jitable
def _around(shape, axis):
    """The products of the lengths before the axis and after it."""
    before, after = 1, 1
    for k in range(len(shape)):
        if k < axis:
            before *= shape[k]
        elif k > axis:
            after *= shape[k]
    return before, after


@register_jitable
def _cosines(count, m, scale):
    """(count, m): row k is c_k cos(2 pi k j / m) / scale, irfft's weights; k j is reduced mod m
    first, so that each angle is an exact multiple of 2 pi / m."""
    basis = np.empty((count, m))
    for k in range(count):
        weight = (1.0 if k == 0 or 2 * k == m else 2.0) / scale
        for j in range(m):
            basis[k, j] = weight * np.cos(2.0 * np.pi * ((k * j) % m) / m)
    return basis


@register_jitable
def _cosine_sums(blocks, out, scale):
    """out[p, j, q] = the sum over k of blocks[p, k, q] times irfft's weight of (k, j), for out's m =
    out.shape[1] points (the entries of blocks past m // 2 are not read)."""
    m = out.shape[1]
    count = min(blocks.shape[1], m // 2 + 1)
    basis = _cosines(count, m, scale)
    for p in range(blocks.shape[0]):
        for k in range(count):
            for j in range(m):
                weight = basis[k, j]
                for q in range(blocks.shape[2]):
                    out[p, j, q] += blocks[p, k, q] * weight


@register_jitable
def _cosine_sums_bar(g, out, scale):
    """out[p, k, q] = the sum over j of g[p, j, q] times irfft's weight of (k, j), for the k up to
    m // 2 (m = g.shape[1]; out, zeros, has the length of irfft's argument)."""
    m = g.shape[1]
    count = min(out.shape[1], m // 2 + 1)
    basis = _cosines(count, m, scale)
    for p in range(g.shape[0]):
        for k in range(count):
            for j in range(m):
                weight = basis[k, j]
                for q in range(g.shape[2]):
                    out[p, k, q] += g[p, j, q] * weight


def _with_length(ndim: int, array: str, length: str) -> str:
    """The source of the shape of an array with another length along the axis ax."""
    return _tuple_source(f"{length} if ax == {k} else {array}.shape[{k}]" for k in range(ndim))


@overload(rt.irfft)
def _irfft_real(a, n=None, axis=-1, norm=None, out=None):
    dtype = _irfft_of_real(a, _IRFFT_OF_COMPLEX)
    if not _is_none(out):
        raise TypingError(f"s2s: {rt.functions.IRFFT_OUT}")
    if _unknown_norm(norm):
        return lambda a, n=None, axis=-1, norm=None, out=None: numba.literally(norm)
    source = ("def impl(a, n=None, axis=-1, norm=None, out=None):\n"
              f"    ax = _axis_of(axis, {a.ndim})\n"
              "    length = a.shape[ax]\n"
              f"{_irfft_options(n, axis, norm, 'length')}"
              "    before, after = _around(a.shape, ax)\n"
              "    y = np.zeros((before, m, after), dtype)\n"
              "    _cosine_sums(np.ascontiguousarray(a).reshape((before, length, after)), y, scale)\n"
              f"    return y.reshape({_with_length(a.ndim, 'a', 'm')})\n")
    return _compile(source, "impl", dtype=dtype, _axis_of=_axis_of, _some_points=_some_points, _around=_around,
                    _cosine_sums=_cosine_sums, _refused_norm=_refused_norm)


@overload(rt.irfft_bar)
def _irfft_bar(g, a, n=None, axis=-1, norm=None):
    if not isinstance(a, types.BaseTuple):  # (a, or its shape)
        _irfft_of_real(a, rt.functions.IRFFT_COMPLEX)
    dtype = _irfft_of_real(g, _IRFFT_OF_COMPLEX)
    if _unknown_norm(norm):
        return lambda g, a, n=None, axis=-1, norm=None: numba.literally(norm)
    source = ("def impl(g, a, n=None, axis=-1, norm=None):\n"
              f"    ax = _axis_of(axis, {g.ndim})\n"
              "    length = _shape_of(a)[ax]\n"
              f"{_irfft_options(n, axis, norm, 'length')}"
              "    if g.shape[ax] != m:\n"
              "        raise ValueError('s2s: the cotangent of np.fft.irfft has n entries along the axis')\n"
              "    before, after = _around(g.shape, ax)\n"
              "    out = np.zeros((before, length, after), dtype)\n"
              "    _cosine_sums_bar(np.ascontiguousarray(g).reshape((before, m, after)), out, scale)\n"
              f"    return out.reshape({_with_length(g.ndim, 'g', 'length')})\n")
    return _compile(source, "impl", dtype=dtype, _axis_of=_axis_of, _some_points=_some_points, _around=_around,
                    _shape_of=_shape_of, _cosine_sums_bar=_cosine_sums_bar, _refused_norm=_refused_norm)


# ---- np.linspace -------------------------------------------------------------------------


@overload(rt.linspace_grid)
def _linspace_grid(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if not (_scalar(start) and _scalar(stop)):
        raise TypingError("s2s: under jit, np.linspace is differentiated with numbers as start and stop")
    if not (isinstance(retstep, (types.Omitted, types.Boolean, bool)) and _is_none(dtype)
            and isinstance(axis, (types.Omitted, types.Integer, int))):
        raise TypingError("s2s: np.linspace is differentiated in start and stop with retstep=False, dtype=None "
                          "and axis=0 only")

    def impl(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
        if retstep or axis != 0:
            raise ValueError("s2s: np.linspace is differentiated in start and stop with retstep=False, dtype=None "
                             "and axis=0 only")
        if num < 0:
            raise ValueError("Number of samples must be non-negative.")
        steps = num - 1 if endpoint else num
        return np.arange(num) / max(steps, 1)
    return impl


# ---- np.meshgrid ----------------------------------------------------------------------
# Numba has no np.meshgrid: runtime.meshgrid of one, two or three 1-d arrays, full grids (a
# grid of constants, np.meshgrid(xs, ys), is the common use, and is not differentiated).

_MESHGRID = "s2s: under jit, np.meshgrid takes one to three 1-d arrays, indexing 'xy' or 'ij', and sparse=False"


def _vector(t) -> bool:
    return isinstance(t, types.Array) and t.ndim == 1


@register_jitable
def _meshgrid_indexing(indexing, sparse):
    if sparse or (indexing != "xy" and indexing != "ij"):
        raise ValueError(_MESHGRID)
    return indexing == "xy"


@overload(rt.meshgrid)
def _meshgrid(x1, x2=None, x3=None, indexing="xy", sparse=False, copy=True):
    given = [t for t in (x1, x2, x3) if not _is_none(t)]
    if not all(_vector(t) for t in given) or not isinstance(sparse, (types.Omitted, types.Boolean, bool)):
        raise TypingError(_MESHGRID)
    if len(given) == 1:
        def one(x1, x2=None, x3=None, indexing="xy", sparse=False, copy=True):
            _meshgrid_indexing(indexing, sparse)
            return (x1.copy(),)
        return one
    if len(given) == 2:
        def two(x1, x2=None, x3=None, indexing="xy", sparse=False, copy=True):
            xy = _meshgrid_indexing(indexing, sparse)
            rows, columns = (x2, x1) if xy else (x1, x2)
            g1 = np.empty((rows.shape[0], columns.shape[0]), x1.dtype)
            g2 = np.empty((rows.shape[0], columns.shape[0]), x2.dtype)
            for i in range(rows.shape[0]):
                for j in range(columns.shape[0]):
                    g1[i, j] = x1[j] if xy else x1[i]
                    g2[i, j] = x2[i] if xy else x2[j]
            return (g1, g2)
        return two

    def three(x1, x2=None, x3=None, indexing="xy", sparse=False, copy=True):
        xy = _meshgrid_indexing(indexing, sparse)
        n1, n2, n3 = x1.shape[0], x2.shape[0], x3.shape[0]
        shape = (n2, n1, n3) if xy else (n1, n2, n3)  # ('xy' swaps the first two axes)
        g1, g2, g3 = np.empty(shape, x1.dtype), np.empty(shape, x2.dtype), np.empty(shape, x3.dtype)
        for i in range(n1):
            for j in range(n2):
                for k in range(n3):
                    at = (j, i, k) if xy else (i, j, k)
                    g1[at], g2[at], g3[at] = x1[i], x2[j], x3[k]
        return (g1, g2, g3)
    return three


@register_jitable
def _repeated_axis(k, indexing):
    if (indexing != "xy" and indexing != "ij") or (k != 0 and k != 1):
        raise ValueError("s2s: np.meshgrid is differentiated of two arrays, with indexing 'xy' or 'ij' and "
                         "sparse=False")
    return k if indexing == "xy" else 1 - k


@overload(rt.meshgrid_spread)
def _meshgrid_spread(v, grid, k, indexing="xy"):
    if not (_vector(v) and isinstance(grid, types.Array) and grid.ndim == 2):
        raise TypingError(_MESHGRID)

    def impl(v, grid, k, indexing="xy"):
        axis = _repeated_axis(k, indexing)
        out = np.empty(grid.shape)
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                out[i, j] = v[j] if axis == 0 else v[i]
        return out
    return impl


@overload(rt.meshgrid_bar)
def _meshgrid_bar(g, x, k, indexing="xy"):
    if not (_vector(x) and isinstance(g, types.Array) and g.ndim == 2):
        raise TypingError(_MESHGRID)

    def impl(g, x, k, indexing="xy"):
        return np.sum(g, axis=_repeated_axis(k, indexing))
    return impl


@overload(rt.real_if_close)
def _real_if_close(a, tol=100):
    dtype = a.dtype if isinstance(a, types.Array) else a
    if isinstance(dtype, types.Complex):
        raise TypingError("s2s: under jit, np.real_if_close takes real data (s2s differentiates real programs)")
    return lambda a, tol=100: a
