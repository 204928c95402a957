"""Rules for Python's operators and builtins."""

import builtins
import math
import operator

import numpy as np

from s2s.rules import QUOTIENT_UNREAD, SELF_PRODUCT, nondifferentiable, rule
from s2s.runtime import copy, unbroadcast


@rule(operator.add)
def add(z, x, y):
    z_dot = x_dot + y_dot
    x_bar += unbroadcast(z_bar, x)
    y_bar += unbroadcast(z_bar, y)


@rule(operator.sub)
def sub(z, x, y):
    z_dot = x_dot - y_dot
    x_bar += unbroadcast(z_bar, x)
    y_bar -= unbroadcast(z_bar, y)


@rule(operator.mul)
def mul(z, x, y):
    z_dot = x_dot * y + x * y_dot
    x_bar += unbroadcast(z_bar * y, x)
    y_bar += unbroadcast(x * z_bar, y)


@rule(SELF_PRODUCT)
def mul_self(z, x, y):
    """x * x, both operands one variable: one contribution to x's adjoint rather than two."""
    z_dot = (x + x) * x_dot
    x_bar += (x + x) * z_bar


@rule(operator.truediv)
def truediv(z, x, y):
    z_dot = x_dot / y - z * y_dot / y
    x_bar += unbroadcast(z_bar / y, x)
    y_bar -= unbroadcast(z_bar * z / y, y)


@rule(QUOTIENT_UNREAD)
def truediv_in_loop(z, x, y):
    """x / y in a loop, where no other rule reads z: y's adjoint z_bar * z / y written with
    x and 1 / y (which the compiler computes once), so that the reverse sweep neither tapes
    z nor divides again to recompute it."""
    z_dot = x_dot / y - z * y_dot / y
    x_bar += unbroadcast(z_bar / y, x)
    y_bar -= unbroadcast(z_bar * x * (1.0 / y) * (1.0 / y), y)


@rule(operator.pow, np.power, builtins.pow, math.pow)
def pow(z, x, y):
    """The exponent's derivative is z * log(x), taken as 0 where x == 0 (as JAX does): there
    z is 0 for a positive exponent, and log(1) stands in for log(0) = -inf, whose product
    with 0 would be NaN."""
    z_dot = y * x ** (y - 1) * x_dot + z * np.log(np.where(x == 0, 1.0, x)) * y_dot
    x_bar += unbroadcast(z_bar * y * x ** (y - 1), x)
    y_bar += unbroadcast(z_bar * z * np.log(np.where(x == 0, 1.0, x)), y)


@rule(operator.mod, np.mod)
def mod(z, x, y):
    z_dot = x_dot - np.floor(x / y) * y_dot
    x_bar += unbroadcast(z_bar, x)
    y_bar -= unbroadcast(z_bar * np.floor(x / y), y)


@rule(operator.neg, np.negative)
def neg(y, x):
    y_dot = -x_dot
    x_bar -= y_bar


@rule(builtins.float)
def identity(y, x):
    y_dot = x_dot
    x_bar += y_bar


@rule(np.copy)
def copy_(y, x):
    """A copy's tangent is a copy too: writes into y must not reach x's tangent."""
    y_dot = copy(x_dot)
    x_bar += y_bar


@rule(builtins.abs, np.abs, np.absolute)
def abs(y, x):
    y_dot = np.sign(x) * x_dot
    x_bar += np.sign(x) * y_bar


@rule(builtins.max, np.maximum)
def maximum(z, x, y):
    """Ties share the derivative equally, as in JAX."""
    x_wins = (x > y) + 0.5 * (x == y)
    z_dot = x_dot * x_wins + y_dot * (1.0 - x_wins)
    x_bar += unbroadcast(z_bar * x_wins, x)
    y_bar += unbroadcast(z_bar * (1.0 - x_wins), y)


@rule(builtins.min, np.minimum)
def minimum(z, x, y):
    x_wins = (x < y) + 0.5 * (x == y)
    z_dot = x_dot * x_wins + y_dot * (1.0 - x_wins)
    x_bar += unbroadcast(z_bar * x_wins, x)
    y_bar += unbroadcast(z_bar * (1.0 - x_wins), y)


DECLARATIONS = [
    nondifferentiable(
        operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
        operator.not_, operator.is_, operator.is_not, operator.floordiv, np.floor_divide,
        builtins.int, builtins.len, builtins.round, builtins.bool, builtins.print,
    ),
]
