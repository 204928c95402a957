"""Rules for elementwise functions of NumPy and the math module."""

import math

import numpy as np

from s2s.rules import nondifferentiable, rule
from s2s.runtime import unbroadcast


@rule(np.sin, math.sin)
def sin(y, x):
    y_dot = np.cos(x) * x_dot
    x_bar += np.cos(x) * y_bar


@rule(np.cos, math.cos)
def cos(y, x):
    y_dot = -np.sin(x) * x_dot
    x_bar -= np.sin(x) * y_bar


@rule(np.tan, math.tan)
def tan(y, x):
    y_dot = (1.0 + y * y) * x_dot
    x_bar += (1.0 + y * y) * y_bar


@rule(np.arcsin, math.asin)
def arcsin(y, x):
    y_dot = x_dot / np.sqrt(1.0 - x * x)
    x_bar += y_bar / np.sqrt(1.0 - x * x)


@rule(np.arccos, math.acos)
def arccos(y, x):
    y_dot = -x_dot / np.sqrt(1.0 - x * x)
    x_bar -= y_bar / np.sqrt(1.0 - x * x)


@rule(np.arctan, math.atan)
def arctan(y, x):
    y_dot = x_dot / (1.0 + x * x)
    x_bar += y_bar / (1.0 + x * x)


@rule(np.arctan2, math.atan2)
def arctan2(z, y, x):
    z_dot = (x * y_dot - y * x_dot) / (x * x + y * y)
    y_bar += unbroadcast(z_bar * x / (x * x + y * y), y)
    x_bar -= unbroadcast(z_bar * y / (x * x + y * y), x)


@rule(np.hypot, math.hypot)
def hypot(z, x, y):
    z_dot = (x * x_dot + y * y_dot) / z
    x_bar += unbroadcast(z_bar * x / z, x)
    y_bar += unbroadcast(z_bar * y / z, y)


@rule(np.sinh, math.sinh)
def sinh(y, x):
    y_dot = np.cosh(x) * x_dot
    x_bar += np.cosh(x) * y_bar


@rule(np.cosh, math.cosh)
def cosh(y, x):
    y_dot = np.sinh(x) * x_dot
    x_bar += np.sinh(x) * y_bar


@rule(np.tanh, math.tanh)
def tanh(y, x):
    y_dot = (1.0 - y * y) * x_dot
    x_bar += (1.0 - y * y) * y_bar


@rule(np.exp, math.exp)
def exp(y, x):
    y_dot = y * x_dot
    x_bar += y * y_bar


@rule(np.expm1, math.expm1)
def expm1(y, x):
    y_dot = (y + 1.0) * x_dot
    x_bar += (y + 1.0) * y_bar


@rule(np.log, math.log)
def log(y, x):
    y_dot = x_dot / x
    x_bar += y_bar / x


@rule(np.log1p, math.log1p)
def log1p(y, x):
    y_dot = x_dot / (1.0 + x)
    x_bar += y_bar / (1.0 + x)


@rule(np.log2, math.log2)
def log2(y, x):
    y_dot = x_dot / (x * np.log(2.0))
    x_bar += y_bar / (x * np.log(2.0))


@rule(np.log10, math.log10)
def log10(y, x):
    y_dot = x_dot / (x * np.log(10.0))
    x_bar += y_bar / (x * np.log(10.0))


@rule(np.sqrt, math.sqrt)
def sqrt(y, x):
    """The adjoint multiplies by 1 / y, as the division rule's does: where sqrt(x) is also
    a divisor (1 / sqrt(x), x / norm), the compiler computes that reciprocal once."""
    y_dot = x_dot / (2.0 * y)
    x_bar += 0.5 * y_bar * (1.0 / y)


@rule(np.square)
def square(y, x):
    y_dot = 2.0 * x * x_dot
    x_bar += 2.0 * x * y_bar


@rule(math.fabs)
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
    nondifferentiable(
        np.sign, np.floor, np.ceil, np.round, np.rint, np.trunc, math.floor, math.ceil,
        math.trunc, np.isnan, np.isinf, np.isfinite, math.isnan, math.isinf, math.isfinite,
        np.greater, np.less, np.greater_equal, np.less_equal, np.equal, np.not_equal,
        np.logical_and, np.logical_or, np.logical_not,
    ),
]
