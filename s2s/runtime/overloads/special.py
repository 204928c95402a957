"""Numba forms of the scipy.special helpers (runtime/special.py): they call SciPy's compiled
functions, which scipy.special.cython_special exports as C functions (the way Numba documents
for calling Cython code: numba.extending.get_cython_function_address).

Generated code is compiled with cache=True, so a compiled call must not hold an address, which
differs from process to process: each C function is given to LLVM under a name of its own
(llvmlite's add_symbol), and the compiled code calls it by that name. The names are given once
per process, when code that calls one is first compiled or loaded (ensure_symbols: the cpu
backend asks before it loads a module whose source calls one of these helpers), so that a
process that calls none does not import SciPy."""

from __future__ import annotations

import ctypes
import math
import re
from fractions import Fraction

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import get_cython_function_address, intrinsic, overload, register_jitable

from ... import runtime as rt
from .common import _compile, _is_none

_MODULE = "scipy.special.cython_special"


def _capsule_signature(capsule) -> str:
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return name(capsule).decode()


_WANTED: dict[str, int] = {}  # cython_special's C functions the intrinsics below call: name -> arity
_REGISTERED: list = []  # [True] once their symbols are given to LLVM in this process


def ensure_symbols() -> None:
    """Give LLVM the address of each C function the intrinsics call, under its own name, once."""
    if _REGISTERED:
        return
    import scipy.special.cython_special as cython_special

    exported = cython_special.__pyx_capi__
    for name, arity in _WANTED.items():
        wanted = "double (" + ", ".join(["double"] * arity) + ", int __pyx_skip_dispatch)"
        key = next((k for k in (name, *(f"__pyx_fuse_{j}{name}" for j in range(4)))
                    if k in exported and _capsule_signature(exported[k]) == wanted), None)
        if key is None:
            raise ImportError(f"scipy.special.cython_special exports no {wanted.replace('(', name + '(', 1)}")
        llvm.add_symbol(f"s2s_scipy_special_{name}", get_cython_function_address(_MODULE, key))
    _REGISTERED.append(True)


_CALLED = re.compile(r"\bruntime\.(" + "|".join(rt.special.__all__) + r")\b")


def ensure_symbols_for(source: str) -> None:
    """ensure_symbols, where generated source calls one of these helpers (before it is loaded:
    its cached machine code calls the C functions by their names)."""
    if not _REGISTERED and _CALLED.search(source):
        ensure_symbols()


def _c_function(name: str, arity: int):
    """An intrinsic calling cython_special's `double name(double, ...)`: of a fused function
    (real and complex, or float and double), its specialisation of doubles."""
    _WANTED[name] = arity
    symbol = f"s2s_scipy_special_{name}"
    double = llvm_ir.DoubleType()
    # (the trailing int of a cpdef function: skip_dispatch, 0 as Cython's own callers pass it)
    c_type = llvm_ir.FunctionType(double, [double] * arity + [llvm_ir.IntType(32)])

    def codegen(context, builder, signature, args):
        ensure_symbols()
        fn = cgutils.get_or_insert_function(builder.module, c_type, symbol)
        return builder.call(fn, [*args, llvm_ir.Constant(llvm_ir.IntType(32), 0)])

    if arity == 1:
        @intrinsic
        def call(typingctx, x):
            return types.float64(types.float64), codegen
    elif arity == 2:
        @intrinsic
        def call(typingctx, x, y):
            return types.float64(types.float64, types.float64), codegen
    else:
        @intrinsic
        def call(typingctx, x, y, z):
            return types.float64(types.float64, types.float64, types.float64), codegen
    return call


def _float_dtype(*operands):
    """The NumPy type of the result: float32 where the arrays given are float32 (numbers with them
    are taken as Python's, which do not promote), or without arrays the numbers; else float64."""
    arrays = [t.dtype for t in operands if isinstance(t, types.Array)]
    return np.float32 if all(k == types.float32 for k in arrays or operands) else np.float64


# Numba names a compiled function by its qualified name and a per-process counter, and a cached
# caller links to its callees by those names: the implementations of the helpers below, alike
# but for the C function they call, each get a name of their own (_compile), or a caller cached
# by one process may run another helper's code in the next (ndtri's for log_ndtr's).

_UNARY_ARRAY = """def {name}(x):
    out = np.empty(x.size, dtype)
    k = 0
    for v in x.flat:
        out[k] = scalar(np.float64(v))
        k += 1
    return out.reshape(x.shape)
"""
_UNARY_NUMBER = """def {name}(x):
    return dtype(scalar(np.float64(x)))
"""
# (in float64 both: Numba's np.broadcast_arrays takes arrays of one dtype, and gammainc(1, x) has an int)
_BINARY_ARRAY = """def {name}(x, y):
    a, b = np.broadcast_arrays(np.asarray(x).astype(np.float64), np.asarray(y).astype(np.float64))
    out = np.empty(a.shape, dtype)
    for index in np.ndindex(a.shape):
        out[index] = scalar(np.float64(a[index]), np.float64(b[index]))
    return out
"""
_BINARY_NUMBER = """def {name}(x, y):
    return dtype(scalar(np.float64(x), np.float64(y)))
"""
# (Numba's np.broadcast_arrays takes no two 0-d arrays, which np.where of numbers makes; NumPy's
# ufunc gives a number for them)
_BINARY_ZERO_D = """def {name}(x, y):
    return dtype(scalar(np.float64(np.asarray(x)[()]), np.float64(np.asarray(y)[()])))
"""


_TERNARY_ARRAY = """def {name}(x, y, z):
    a, b, c = np.broadcast_arrays(np.asarray(x).astype(np.float64), np.asarray(y).astype(np.float64),
                                  np.asarray(z).astype(np.float64))
    out = np.empty(a.shape, dtype)
    for index in np.ndindex(a.shape):
        out[index] = scalar(np.float64(a[index]), np.float64(b[index]), np.float64(c[index]))
    return out
"""
_TERNARY_NUMBER = """def {name}(x, y, z):
    return dtype(scalar(np.float64(x), np.float64(y), np.float64(z)))
"""
_TERNARY_ZERO_D = """def {name}(x, y, z):
    return dtype(scalar(np.float64(np.asarray(x)[()]), np.float64(np.asarray(y)[()]), np.float64(np.asarray(z)[()])))
"""


def _named(template: str, name: str, **env):
    return _compile(template.format(name=name), name, **env)


def _unary(helper, scalar):
    """The overload of an elementwise helper of one operand, from its scalar function of doubles."""

    @overload(helper)
    def _overload(x):
        dtype = _float_dtype(x)
        if isinstance(x, types.Array):
            return _named(_UNARY_ARRAY, f"{helper.__name__}_of_array", dtype=dtype, scalar=scalar)
        if isinstance(x, (types.Number, types.Boolean)):
            return _named(_UNARY_NUMBER, f"{helper.__name__}_of_number", dtype=dtype, scalar=scalar)
    return _overload


def _binary(helper, scalar):
    """The overload of an elementwise helper of two operands, broadcast as NumPy does."""

    @overload(helper)
    def _overload(x, y):
        dtype = _float_dtype(x, y)
        if all(isinstance(t, (types.Number, types.Boolean)) or isinstance(t, types.Array) and t.ndim == 0
               for t in (x, y)) and (isinstance(x, types.Array) or isinstance(y, types.Array)):
            return _named(_BINARY_ZERO_D, f"{helper.__name__}_of_0d", dtype=dtype, scalar=scalar)
        if isinstance(x, types.Array) or isinstance(y, types.Array):
            return _named(_BINARY_ARRAY, f"{helper.__name__}_of_arrays", dtype=dtype, scalar=scalar)
        if isinstance(x, (types.Number, types.Boolean)) and isinstance(y, (types.Number, types.Boolean)):
            return _named(_BINARY_NUMBER, f"{helper.__name__}_of_numbers", dtype=dtype, scalar=scalar)
    return _overload


def _ternary(helper, scalar):
    """The overload of an elementwise helper of three operands (betainc), broadcast as NumPy does."""

    @overload(helper)
    def _overload(x, y, z):
        dtype = _float_dtype(x, y, z)
        operands = (x, y, z)
        if all(isinstance(t, (types.Number, types.Boolean)) or isinstance(t, types.Array) and t.ndim == 0
               for t in operands) and any(isinstance(t, types.Array) for t in operands):
            return _named(_TERNARY_ZERO_D, f"{helper.__name__}_of_0d", dtype=dtype, scalar=scalar)
        if any(isinstance(t, types.Array) for t in operands):
            return _named(_TERNARY_ARRAY, f"{helper.__name__}_of_arrays", dtype=dtype, scalar=scalar)
        if all(isinstance(t, (types.Number, types.Boolean)) for t in operands):
            return _named(_TERNARY_NUMBER, f"{helper.__name__}_of_numbers", dtype=dtype, scalar=scalar)
    return _overload


for _name in ("expit", "logit", "erf", "erfc", "erfinv", "erfcinv", "ndtr", "log_ndtr", "ndtri", "gammaln", "loggamma",
              "gamma", "rgamma", "gammasgn", "entr", "j0", "j1", "y0", "y1", "i0", "i1", "i0e", "i1e"):
    _unary(getattr(rt, _name), _c_function(_name, 1))
_unary(rt.digamma, _c_function("psi", 1))
for _name in ("xlogy", "xlog1py", "beta", "betaln", "gammainc", "gammaincc", "stdtr", "jv", "yv", "yn", "iv", "ive"):
    _binary(getattr(rt, _name), _c_function(_name, 2))
_ternary(rt.betainc, _c_function("betainc", 3))


# ---- polygamma: cython_special has no Hurwitz zeta, so it is summed here ----

_psi = _c_function("psi", 1)


def _euler_maclaurin_coefficients(count: int) -> np.ndarray:
    """B_2j / (2j)! for j = 1..count, B the Bernoulli numbers (from their recurrence, exactly)."""
    bernoulli = [Fraction(1)]
    for m in range(1, 2 * count + 1):
        bernoulli.append(-sum(math.comb(m + 1, k) * bernoulli[k] for k in range(m)) / (m + 1))
    return np.array([float(bernoulli[2 * j] / math.factorial(2 * j)) for j in range(1, count + 1)])


_EULER_MACLAURIN = _euler_maclaurin_coefficients(12)


@register_jitable
def _hurwitz_zeta(s, q):
    """zeta(s, q), the sum over k >= 0 of (q + k) ** -s, for s > 1: the terms while q + k < 10
    summed, the rest by the Euler-Maclaurin formula from a = q + k (after 12 corrections its
    remainder is below double precision there). Below 0 an integer s (polygamma's) is needed."""
    if s == 1.0:
        return math.inf
    if s < 1.0:
        return math.nan
    if q <= 0.0 and q == math.floor(q):
        return math.inf
    if q < 0.0 and s != math.floor(s):
        return math.nan  # ((q + k) ** -s is not real)
    total = 0.0
    a = q
    while a < 10.0:
        total += a ** -s
        a += 1.0
    total += a ** (1.0 - s) / (s - 1.0) + 0.5 * a ** -s
    rising = s  # s (s + 1) ... (s + 2j - 2), the odd derivatives of x ** -s up to sign
    power = a ** (-s - 1.0)  # a ** (-s - 2j + 1)
    for j in range(len(_EULER_MACLAURIN)):
        term = _EULER_MACLAURIN[j] * rising * power
        total += term
        if abs(term) <= 1e-17 * abs(total):
            break
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
        power /= a * a
    return total


@register_jitable
def _polygamma(n, x):
    if n == 0:
        return _psi(x)
    sign = 1.0 if n % 2 == 1 else -1.0
    return sign * math.gamma(n + 1.0) * _hurwitz_zeta(n + 1.0, x)


@overload(rt.polygamma)
def _polygamma_overload(n, x):
    dtype = _float_dtype(x)
    if isinstance(x, types.Array):
        def impl(n, x):
            out = np.empty(x.size, dtype)
            k = 0
            for v in x.flat:
                out[k] = _polygamma(n, np.float64(v))
                k += 1
            return out.reshape(x.shape)
        return impl
    if isinstance(x, (types.Number, types.Boolean)):
        return lambda n, x: dtype(_polygamma(n, np.float64(x)))


# ---- multigammaln: d (d - 1) / 4 log(pi) and d gammaln; its derivatives, sums of polygamma ----


@overload(rt.multigammaln)
def _multigammaln(a, d):
    dtype = _float_dtype(a)
    if isinstance(a, types.Array):
        def impl(a, d):
            total = 0.25 * d * (d - 1) * math.log(math.pi) + rt.gammaln(a.astype(np.float64))
            for j in range(1, d):
                total += rt.gammaln(a - 0.5 * j)
            return total.astype(dtype)
        return impl
    if isinstance(a, (types.Number, types.Boolean)):
        def impl(a, d):
            total = 0.25 * d * (d - 1) * math.log(math.pi)
            for j in range(d):
                total += rt.gammaln(a - 0.5 * j)
            return dtype(total)
        return impl


@overload(rt.multipolygamma)
def _multipolygamma(n, a, d):
    dtype = _float_dtype(a)
    if isinstance(a, types.Array):
        def impl(n, a, d):
            total = rt.polygamma(n, a.astype(np.float64))
            for j in range(1, d):
                total += rt.polygamma(n, a - 0.5 * j)
            return total.astype(dtype)
        return impl
    if isinstance(a, (types.Number, types.Boolean)):
        def impl(n, a, d):
            total = 0.0
            for j in range(d):
                total += rt.polygamma(n, a - 0.5 * j)
            return dtype(total)
        return impl


# ---- logsumexp, softmax, log_softmax: along an axis (None: all), less the largest value ------


def _options(return_sign):
    """return_sign (a pair of results) is refused: only its default, False, compiles."""
    value = getattr(return_sign, "value", getattr(return_sign, "literal_value", return_sign))
    if not (_is_none(return_sign) or value is False):
        raise TypingError("s2s: under jit, scipy.special.logsumexp takes no return_sign")


@register_jitable
def _finite_or_zero(m):
    """m with its infinite entries 0 (every value -inf: exp(a - m) is then 0, not nan). A loop:
    Numba's np.where of three arrays took about 2.5 s to compile in each process."""
    out = np.asarray(m).copy()
    flat = out.reshape(out.size)  # (a view: the copy is C-contiguous)
    for i in range(flat.size):
        if not np.isfinite(flat[i]):
            flat[i] = 0
    return out


@overload(rt.logsumexp)
def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    _options(return_sign)
    if _is_none(b):
        def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
            m = _finite_or_zero(rt.reduce_max(a, axis, True))
            return np.log(rt.reduce_sum(np.exp(a - m), axis, keepdims)) + rt.reduce_sum(m, axis, keepdims)
        return impl

    def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
        m = _finite_or_zero(rt.reduce_max(a, axis, True))
        return np.log(rt.reduce_sum(np.exp(a - m) * b, axis, keepdims)) + rt.reduce_sum(m, axis, keepdims)
    return impl


@overload(rt.softmax)
def _softmax(x, axis=None):
    def impl(x, axis=None):
        e = np.exp(x - _finite_or_zero(rt.reduce_max(x, axis, True)))
        return e / rt.reduce_sum(e, axis, True)
    return impl


@overload(rt.log_softmax)
def _log_softmax(x, axis=None):
    def impl(x, axis=None):
        z = x - _finite_or_zero(rt.reduce_max(x, axis, True))
        return z - np.log(rt.reduce_sum(np.exp(z), axis, True))
    return impl
