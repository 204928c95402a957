"""XLA's CPU numerics that s2s.random emulates, on NumPy arrays (numba.njit compiles them too):
fused multiply-adds (_fma32, _fma64), the polynomials of erf_inv (M. Giles) and log1p (Cephes)
evaluated step by step as XLA evaluates them. s2s.random imports these names; CUDA kernel code
(runtime/kernels.py) evaluates the same polynomials on numbers.
"""

from __future__ import annotations

import numpy as np


def _fma32(a, b, c):
    """a * b + c rounded once, of float32 arrays (XLA contracts u * span + minval into one fused
    multiply-add). The product is exact in float64; the sum is rounded to odd in float64 (the
    odd neighbour where inexact), which a rounding to float32 then rounds correctly."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64) + p * 0.0
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)  # s + t == p + c exactly (TwoSum)
    even = (s.view(np.int64) & 1) == 0
    s = np.where((t != 0.0) & even, np.nextafter(s, np.where(t > 0.0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def _fma64(a, b, c):
    """a * b + c of float64 arrays: Dekker's exact product and Knuth's TwoSum, so that only the
    last of three roundings is not exact; it agrees with a fused multiply-add but where the
    result is within an ulp's fraction of a tie (none in 2 * 10**5 random triples checked
    against exact rational arithmetic)."""
    b = b + a * 0.0
    c = c + a * 0.0
    p = a * b
    ca, cb = a * 134217729.0, b * 134217729.0  # 2**27 + 1: Veltkamp's split into 26-bit halves
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # a * b == p + e exactly
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)
    return s + (t + e)


# M. Giles, "Approximating the erfinv function" (GPU Gems / 2010): the polynomials XLA evaluates
# for erf_inv, in w = -log1p(-x*x). float32: two pieces split at w = 5.
_ERFINV_F32 = ((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
               (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
# float64: three pieces split at w = 6.25 and w = 16.
_ERFINV_F64 = ((-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
                1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
                6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
                2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
                1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
                4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
                0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
                0.24015818242558961693, 1.6536545626831027356),
               (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
                1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
                2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
                6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
                0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
                -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
                3.0838856104922207635),
               (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
                -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
                2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
                -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
                7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
                1.0103004648645343977, 4.8499064014085844221))
_F32_A = tuple(np.float32(c) for c in _ERFINV_F32[0])
_F32_B = tuple(np.float32(c) for c in _ERFINV_F32[1])
_F64_A, _F64_B, _F64_C = _ERFINV_F64


def _horner32(coefficients, w):
    """The polynomial at w, each step one fused multiply-add, as XLA evaluates it: _fma32 with
    w's float64 value made once."""
    w64 = w.astype(np.float64)
    p = coefficients[0] + w * 0
    for c in coefficients[1:]:
        q = p.astype(np.float64) * w64
        c64 = np.float64(c)
        s = q + c64
        z = s - q
        t = (q - (s - z)) + (c64 - z)
        even = (s.view(np.int64) & 1) == 0
        s = np.where((t != 0.0) & even, np.nextafter(s, np.where(t > 0.0, np.inf, -np.inf)), s)
        p = s.astype(np.float32)
    return p


def _horner64(coefficients, w):
    """_fma64 step by step, with the split of w into halves made once."""
    cw = w * 134217729.0
    wh = cw - (cw - w)
    wl = w - wh
    p = coefficients[0] + w * 0
    for c in coefficients[1:]:
        q = p * w
        cp = p * 134217729.0
        ph = cp - (cp - p)
        pl = p - ph
        e = ((ph * wh - q) + ph * wl + pl * wh) + pl * wl  # p * w == q + e exactly
        s = q + c
        z = s - q
        t = (q - (s - z)) + (c - z)
        p = s + (t + e)
    return p


# log1p as XLA's CPU backend computes it: for |x| < sqrt(2) - 1 the Cephes rational function
# x - x**2/2 + x**3 * P(x)/Q(x) (polynomials by fused multiply-adds), else log(1 + x). NumPy's
# log1p differs from it by up to ~130 ulp in float64 near the switch.
_LOG1P_P = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
            2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
            2.0039553499201281259648e1)
_LOG1P_Q = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
            3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)
_LOG1P_P32 = tuple(np.float32(c) for c in _LOG1P_P)
_LOG1P_Q32 = tuple(np.float32(c) for c in _LOG1P_Q)


# Each piece of a piecewise function is evaluated on its own elements only (the emulated fused
# multiply-adds cost some twenty operations each). Arguments of any shape; NumPy or Numba.


def _log1p_f32(x):
    x = x.ravel()
    out = np.log(x + np.float32(1.0))
    i = np.nonzero(np.abs(x) < np.float32(0.41421356237309504880))[0]
    s = x[i]
    s2 = s * s
    out[i] = s + (np.float32(-0.5) * s2 + (s * s2) * (_horner32(_LOG1P_P32, s) / _horner32(_LOG1P_Q32, s)))
    return out


def _log1p_f64(x):
    x = x.ravel()
    out = np.log(x + 1.0)
    i = np.nonzero(np.abs(x) < 0.41421356237309504880)[0]
    s = x[i]
    s2 = s * s
    out[i] = s + (-0.5 * s2 + (s * s2) * (_horner64(_LOG1P_P, s) / _horner64(_LOG1P_Q, s)))
    return out


def _erfinv_f32(x):
    shape, x = x.shape, x.ravel()
    w = -_log1p_f32(-x * x)
    p = np.empty_like(x)
    low = w < np.float32(5.0)
    i = np.nonzero(low)[0]
    p[i] = _horner32(_F32_A, w[i] - np.float32(2.5))
    i = np.nonzero(~low)[0]
    p[i] = _horner32(_F32_B, np.sqrt(w[i]) - np.float32(3.0))
    return np.where(np.abs(x) == np.float32(1.0), x * np.float32(np.inf), p * x).reshape(shape)


def _erfinv_f64(x):
    shape, x = x.shape, x.ravel()
    w = -_log1p_f64(-x * x)
    p = np.empty_like(x)
    low, middle = w < 6.25, (w >= 6.25) & (w < 16.0)
    i = np.nonzero(low)[0]
    p[i] = _horner64(_F64_A, w[i] - 3.125)
    i = np.nonzero(middle)[0]
    p[i] = _horner64(_F64_B, np.sqrt(w[i]) - 3.25)
    i = np.nonzero(~low & ~middle)[0]
    p[i] = _horner64(_F64_C, np.sqrt(w[i]) - 5.0)
    return np.where(np.abs(x) == 1.0, x * np.inf, p * x).reshape(shape)
