"""Rules for elementwise functions of NumPy and the math module.

NumPy ufuncs and math functions are elementwise, pure and fused by Numba without saying so
(s2s.rules.facts); the lines under a rule add what else the passes know: scalar_safe (loops
may call it on scalars), cheap (recomputed rather than taped), numpy (the ufunc that
vectorize uses for a math function)."""

import math

import numpy as np

from s2s.rules import nondifferentiable, primitive, rule
from s2s.runtime import unbroadcast


@rule(np.sin, math.sin)
@primitive(np.sin, scalar_safe=True, kernel="math.sin")
@primitive(math.sin, numpy=np.sin)
def sin(y, x):
    y_dot = np.cos(x) * x_dot
    x_bar += np.cos(x) * y_bar


@rule(np.cos, math.cos)
@primitive(np.cos, scalar_safe=True, kernel="math.cos")
@primitive(math.cos, numpy=np.cos)
def cos(y, x):
    y_dot = -np.sin(x) * x_dot
    x_bar -= np.sin(x) * y_bar


@rule(np.tan, math.tan)
@primitive(np.tan, scalar_safe=True, kernel="math.tan")
@primitive(math.tan, numpy=np.tan)
def tan(y, x):
    y_dot = (1.0 + y * y) * x_dot
    x_bar += (1.0 + y * y) * y_bar


@rule(np.arcsin, math.asin)
@primitive(np.arcsin, scalar_safe=True, kernel="math.asin")
@primitive(math.asin, numpy=np.arcsin)
def arcsin(y, x):
    y_dot = x_dot / np.sqrt(1.0 - x * x)
    x_bar += y_bar / np.sqrt(1.0 - x * x)


@rule(np.arccos, math.acos)
@primitive(np.arccos, scalar_safe=True, kernel="math.acos")
@primitive(math.acos, numpy=np.arccos)
def arccos(y, x):
    y_dot = -x_dot / np.sqrt(1.0 - x * x)
    x_bar -= y_bar / np.sqrt(1.0 - x * x)


@rule(np.arctan, math.atan)
@primitive(np.arctan, scalar_safe=True, kernel="math.atan")
@primitive(math.atan, numpy=np.arctan)
def arctan(y, x):
    y_dot = x_dot / (1.0 + x * x)
    x_bar += y_bar / (1.0 + x * x)


@rule(np.arctan2, math.atan2)
@primitive(math.atan2, numpy=np.arctan2)
@primitive(np.arctan2, kernel="math.atan2")
def arctan2(z, y, x):
    z_dot = (x * y_dot - y * x_dot) / (x * x + y * y)
    y_bar += unbroadcast(z_bar * x / (x * x + y * y), y)
    x_bar -= unbroadcast(z_bar * y / (x * x + y * y), x)


@rule(np.hypot, math.hypot)
@primitive(math.hypot, numpy=np.hypot)
@primitive(np.hypot, kernel="math.hypot")
def hypot(z, x, y):
    z_dot = (x * x_dot + y * y_dot) / z
    x_bar += unbroadcast(z_bar * x / z, x)
    y_bar += unbroadcast(z_bar * y / z, y)


@rule(np.sinh, math.sinh)
@primitive(np.sinh, scalar_safe=True, kernel="math.sinh")
@primitive(math.sinh, numpy=np.sinh)
def sinh(y, x):
    y_dot = np.cosh(x) * x_dot
    x_bar += np.cosh(x) * y_bar


@rule(np.cosh, math.cosh)
@primitive(np.cosh, scalar_safe=True, kernel="math.cosh")
@primitive(math.cosh, numpy=np.cosh)
def cosh(y, x):
    y_dot = np.sinh(x) * x_dot
    x_bar += np.sinh(x) * y_bar


@rule(np.tanh, math.tanh)
@primitive(np.tanh, scalar_safe=True, kernel="math.tanh")
@primitive(math.tanh, numpy=np.tanh)
def tanh(y, x):
    y_dot = (1.0 - y * y) * x_dot
    x_bar += (1.0 - y * y) * y_bar


@rule(np.arcsinh, math.asinh)
@primitive(np.arcsinh, scalar_safe=True, kernel="math.asinh")
@primitive(math.asinh, numpy=np.arcsinh)
def arcsinh(y, x):
    y_dot = x_dot / np.sqrt(x * x + 1.0)
    x_bar += y_bar / np.sqrt(x * x + 1.0)


@rule(np.arccosh, math.acosh)
@primitive(np.arccosh, scalar_safe=True, kernel="math.acosh")
@primitive(math.acosh, numpy=np.arccosh)
def arccosh(y, x):
    y_dot = x_dot / np.sqrt(x * x - 1.0)
    x_bar += y_bar / np.sqrt(x * x - 1.0)


@rule(np.arctanh, math.atanh)
@primitive(np.arctanh, scalar_safe=True, kernel="math.atanh")
@primitive(math.atanh, numpy=np.arctanh)
def arctanh(y, x):
    y_dot = x_dot / (1.0 - x * x)
    x_bar += y_bar / (1.0 - x * x)


@rule(np.exp, math.exp)
@primitive(np.exp, scalar_safe=True, kernel="math.exp")
@primitive(math.exp, numpy=np.exp)
def exp(y, x):
    y_dot = y * x_dot
    x_bar += y * y_bar


@rule(np.expm1, math.expm1)
@primitive(np.expm1, scalar_safe=True, kernel="math.expm1")
@primitive(math.expm1, numpy=np.expm1)
def expm1(y, x):
    y_dot = (y + 1.0) * x_dot
    x_bar += (y + 1.0) * y_bar


@rule(np.exp2)
@primitive(np.exp2, scalar_safe=True)
def exp2(y, x):
    y_dot = y * np.log(2.0) * x_dot
    x_bar += y * np.log(2.0) * y_bar


@rule(np.cbrt)
@primitive(np.cbrt, scalar_safe=True)
def cbrt(y, x):
    y_dot = x_dot / (3.0 * y * y)
    x_bar += y_bar / (3.0 * y * y)


@rule(np.reciprocal)
@primitive(np.reciprocal, scalar_safe=True)
def reciprocal(y, x):
    y_dot = -(y * y) * x_dot
    x_bar += -(y * y) * y_bar


@rule(np.log, math.log)
@primitive(np.log, scalar_safe=True, kernel="math.log")
@primitive(math.log, numpy=np.log)
def log(y, x):
    y_dot = x_dot / x
    x_bar += y_bar / x


@rule(np.log1p, math.log1p)
@primitive(np.log1p, scalar_safe=True, kernel="math.log1p")
@primitive(math.log1p, numpy=np.log1p)
def log1p(y, x):
    y_dot = x_dot / (1.0 + x)
    x_bar += y_bar / (1.0 + x)


@rule(np.log2, math.log2)
@primitive(np.log2, scalar_safe=True, kernel="math.log2")
@primitive(math.log2, numpy=np.log2)
def log2(y, x):
    y_dot = x_dot / (x * np.log(2.0))
    x_bar += y_bar / (x * np.log(2.0))


@rule(np.log10, math.log10)
@primitive(np.log10, scalar_safe=True, kernel="math.log10")
@primitive(math.log10, numpy=np.log10)
def log10(y, x):
    y_dot = x_dot / (x * np.log(10.0))
    x_bar += y_bar / (x * np.log(10.0))


@rule(np.logaddexp)
def logaddexp(z, x, y):
    """log(exp(x) + exp(y)): each operand's weight is its share, exp(operand - z), at most 1."""
    z_dot = x_dot * np.exp(x - z) + y_dot * np.exp(y - z)
    x_bar += unbroadcast(z_bar * np.exp(x - z), x)
    y_bar += unbroadcast(z_bar * np.exp(y - z), y)


@rule(np.logaddexp2)
def logaddexp2(z, x, y):
    """log2(2**x + 2**y): each operand's weight is its share, 2**(operand - z)."""
    z_dot = x_dot * np.exp2(x - z) + y_dot * np.exp2(y - z)
    x_bar += unbroadcast(z_bar * np.exp2(x - z), x)
    y_bar += unbroadcast(z_bar * np.exp2(y - z), y)


@rule(np.deg2rad, np.radians, math.radians, cheap=True, linear="all")
@primitive(np.deg2rad, np.radians, scalar_safe=True, kernel="({0} * 0.017453292519943295)")  # (pi / 180)
@primitive(math.radians, numpy=np.deg2rad)
def deg2rad(y, x):
    y_dot = x_dot * (np.pi / 180.0)
    x_bar += y_bar * (np.pi / 180.0)


@rule(np.rad2deg, np.degrees, math.degrees, cheap=True, linear="all")
@primitive(np.rad2deg, np.degrees, scalar_safe=True, kernel="({0} * 57.29577951308232)")  # (180 / pi)
@primitive(math.degrees, numpy=np.rad2deg)
def rad2deg(y, x):
    y_dot = x_dot * (180.0 / np.pi)
    x_bar += y_bar * (180.0 / np.pi)


@rule(np.sqrt, math.sqrt)
@primitive(np.sqrt, scalar_safe=True, cheap=True, kernel="math.sqrt")
@primitive(math.sqrt, numpy=np.sqrt, cheap=True)
def sqrt(y, x):
    """The adjoint multiplies by 1 / y, as the division rule's does: where sqrt(x) is also
    a divisor (1 / sqrt(x), x / norm), the compiler computes that reciprocal once."""
    y_dot = x_dot / (2.0 * y)
    x_bar += 0.5 * y_bar * (1.0 / y)


@rule(np.square, scalar_safe=True, cheap=True, kernel="({0} * {0})")
def square(y, x):
    y_dot = 2.0 * x * x_dot
    x_bar += 2.0 * x * y_bar


@rule(math.fabs, numpy=np.abs, cheap=True)
def fabs(y, x):
    y_dot = np.sign(x) * x_dot
    x_bar += np.sign(x) * y_bar


@rule(math.erf)
def erf(y, x):
    y_dot = 2.0 / math.sqrt(math.pi) * math.exp(-x * x) * x_dot
    x_bar += 2.0 / math.sqrt(math.pi) * math.exp(-x * x) * y_bar


@rule(math.erfc)
def erfc(y, x):
    y_dot = -2.0 / math.sqrt(math.pi) * math.exp(-x * x) * x_dot
    x_bar -= 2.0 / math.sqrt(math.pi) * math.exp(-x * x) * y_bar


DECLARATIONS = [
    # NumPy's sign: 0 at 0, nan at nan, +-1 at +-inf
    nondifferentiable(np.sign, scalar_safe=True, cheap=True, kernel="(1.0 if {0} > 0 else (-1.0 if {0} < 0 else {0} * 0.0))"),
    nondifferentiable(np.floor, np.ceil, np.trunc, np.fix, cheap=True),
    nondifferentiable(math.floor, integer="always", cheap=True, numpy=np.floor),
    nondifferentiable(math.ceil, integer="always", cheap=True, numpy=np.ceil),
    nondifferentiable(math.trunc, integer="always", cheap=True),
    nondifferentiable(np.round, np.rint, np.isnan, np.isinf, np.isfinite, math.isnan, math.isinf, math.isfinite),
    primitive(np.isnan, kernel="math.isnan"),
    primitive(np.isinf, kernel="math.isinf"),
    primitive(np.isfinite, kernel="math.isfinite"),
    nondifferentiable(
        np.greater, np.less, np.greater_equal, np.less_equal, np.equal, np.not_equal,
        np.logical_and, np.logical_or, np.logical_not, cheap=True,
    ),
    # Elementwise functions without a rule of their own that the passes meet in generated code.
    primitive(np.add, np.subtract, np.multiply, np.positive, np.fabs, scalar_safe=True, cheap=True),
    primitive(np.divide, np.fmax, np.fmin, np.copysign, math.copysign, cheap=True),
    primitive(np.fabs, kernel="abs"),
    primitive(np.copysign, kernel="math.copysign"),
    primitive(np.float_power, kernel="({0} ** {1})"),
]
