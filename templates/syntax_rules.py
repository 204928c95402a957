"""Rules for Python's operators and builtins.

Facts of an operator (s2s.rules.Facts): elementwise on arrays (as written in Python),
cheap to recompute, and integer="kept" where ints in give an int."""

import builtins
import math
import operator

import numpy as np

from s2s import runtime
from s2s.rules import POW_OF_A_VARIABLE, QUOTIENT_UNREAD, SELF_PRODUCT, nondifferentiable, primitive, rule
from s2s.runtime import copy, unbroadcast, weighted


@rule(operator.add, np.add, cheap=True, integer="kept", linear="all")
@primitive(operator.add, elementwise=True)
def add(z, x, y):
    z_dot = x_dot + y_dot
    x_bar += unbroadcast(z_bar, x)
    y_bar += unbroadcast(z_bar, y)


@rule(operator.sub, np.subtract, cheap=True, integer="kept", linear="all")
@primitive(operator.sub, elementwise=True)
def sub(z, x, y):
    z_dot = x_dot - y_dot
    x_bar += unbroadcast(z_bar, x)
    y_bar -= unbroadcast(z_bar, y)


@rule(operator.mul, np.multiply, cheap=True, integer="kept", linear="each")
@primitive(operator.mul, elementwise=True)
def mul(z, x, y):
    z_dot = x_dot * y + x * y_dot
    x_bar += unbroadcast(z_bar * y, x)
    y_bar += unbroadcast(x * z_bar, y)


@rule(SELF_PRODUCT)
def mul_self(z, x, y):
    """x * x, both operands one variable: one contribution to x's adjoint rather than two."""
    z_dot = (x + x) * x_dot
    x_bar += (x + x) * z_bar


@rule(operator.truediv, np.divide, cheap=True, integer="never", linear=(0,))  # np.true_divide is np.divide
@primitive(operator.truediv, elementwise=True)
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
@primitive(operator.pow, elementwise=True)  # cheap where the exponent is a small int (transforms/reverse.py)
@primitive(operator.pow, np.power, integer="power")
@primitive(np.power, kernel="({0} ** {1})")
@primitive(math.pow, numpy=np.power)
def pow(z, x, y):
    """The exponent's derivative is z * log(x), taken as 0 where x == 0 (as JAX does): there
    z is 0 for a positive exponent, and log(1) stands in for log(0) = -inf, whose product
    with 0 would be NaN."""
    z_dot = y * x ** (y - 1) * x_dot + z * np.log(np.where(x == 0, 1.0, x)) * y_dot
    x_bar += unbroadcast(z_bar * y * x ** (y - 1), x)
    y_bar += unbroadcast(z_bar * z * np.log(np.where(x == 0, 1.0, x)), y)


# x ** y of a variable exponent (s2s.rules.POW_OF_A_VARIABLE): the power rule's y * x ** (y - 1)
# is 0 * inf = NaN at y == 0, x == 0 (where x ** 0 is 1 for every x: its derivative is 0), and
# Python's 0.0 ** -0.5 raises ZeroDivisionError where the derivative is inf. As JAX's rule, x ** 1
# at y == 0; the exponent np.where gives is NumPy's number, whose power of 0 is inf. (A constant
# exponent folds in pow's: 2 * x for x ** 2.)
@rule(POW_OF_A_VARIABLE)
def pow_of_a_variable(z, x, y):
    z_dot = y * x ** np.where(y == 0, 1.0, y - 1) * x_dot + z * np.log(np.where(x == 0, 1.0, x)) * y_dot
    x_bar += unbroadcast(z_bar * y * x ** np.where(y == 0, 1.0, y - 1), x)
    y_bar += unbroadcast(z_bar * z * np.log(np.where(x == 0, 1.0, x)), y)


@rule(operator.mod, np.mod)
@primitive(operator.mod, elementwise=True, cheap=True, integer="kept")
def mod(z, x, y):
    z_dot = x_dot - np.floor(x / y) * y_dot
    x_bar += unbroadcast(z_bar, x)
    y_bar -= unbroadcast(z_bar * np.floor(x / y), y)


@rule(operator.neg, np.negative, cheap=True, integer="kept", linear="all")
@primitive(operator.neg, elementwise=True)
@primitive(np.negative, scalar_safe=True)
def neg(y, x):
    y_dot = -x_dot
    x_bar -= y_bar


# s2s differentiates real programs (a complex constant or np.fft in a differentiated function is
# refused: analysis/activity.py), where these are NumPy's identities and zeros of real data.
@rule(np.real, pure=True, view=True, first_or_new=True, broadcasts=True, dtype_from=(0,), linear="all")
def real(y, x):
    """Of real data the identity (NumPy returns x itself)."""
    y_dot = np.real(x_dot)
    x_bar += y_bar


@rule(np.real_if_close, runtime.real_if_close, pure=True, view=True, first_or_new=True, broadcasts=True,
      dtype_from=(0,), linear="all")
@primitive(np.real_if_close, numba=runtime.real_if_close, numba_always=True)
def real_if_close(y, x, tol=100):
    """Of real data the identity (NumPy returns x itself): tol has nothing to decide."""
    y_dot = np.real(x_dot)
    x_bar += y_bar


@rule(np.conjugate, pure=True, fresh=True, dtype_from=(0,))  # (np.conj is np.conjugate)
@primitive(np.conjugate, method=("conj", "conjugate"))
def conjugate(y, x):
    """Of real data the identity."""
    y_dot = np.conjugate(x_dot)
    x_bar += y_bar


@rule(builtins.float, pure=True, fusable=True, cheap=True, kernel="float", batching="float")
def identity(y, x):
    y_dot = x_dot
    x_bar += y_bar


@rule(np.copy, pure=True, like=True, copies=True, dtype_from=(0,), kernel_local=("copy", "like"))
def copy_(y, x):
    """A copy's tangent is a copy too: writes into y must not reach x's tangent."""
    y_dot = copy(x_dot)
    x_bar += y_bar


@rule(builtins.abs, np.abs, np.absolute, np.fabs, cheap=True)
@primitive(builtins.abs, elementwise=True, pure=True, fusable=True, integer="kept", numpy=np.abs)
@primitive(np.abs, scalar_safe=True, kernel="abs")
def abs(y, x):
    y_dot = np.sign(x) * x_dot
    x_bar += np.sign(x) * y_bar


@rule(builtins.max, np.maximum, cheap=True)
@primitive(builtins.max, pure=True, fusable=True, integer="kept", numpy=np.maximum, kernel="max", batching="extremum")
@primitive(np.maximum, scalar_safe=True, kernel="({0} if {0} >= {1} or {0} != {0} else {1})")  # (NaN wins, as in NumPy)
def maximum(z, x, y):
    """Ties share the derivative equally, as in JAX. x wins unless y is larger: Python's max(x, y)
    is x where y is NaN (np.maximum is NaN there, with no derivative worth the name)."""
    x_wins = 1.0 - (y > x) - 0.5 * (x == y)
    z_dot = x_dot * x_wins + y_dot * (1.0 - x_wins)
    x_bar += unbroadcast(z_bar * x_wins, x)
    y_bar += unbroadcast(z_bar * (1.0 - x_wins), y)


@rule(builtins.min, np.minimum, cheap=True)
@primitive(builtins.min, pure=True, fusable=True, integer="kept", numpy=np.minimum, kernel="min", batching="extremum")
@primitive(np.minimum, scalar_safe=True, kernel="({0} if {0} <= {1} or {0} != {0} else {1})")
def minimum(z, x, y):
    x_wins = 1.0 - (y < x) - 0.5 * (x == y)
    z_dot = x_dot * x_wins + y_dot * (1.0 - x_wins)
    x_bar += unbroadcast(z_bar * x_wins, x)
    y_bar += unbroadcast(z_bar * (1.0 - x_wins), y)


@rule(np.fmax, cheap=True)
@primitive(np.fmax, scalar_safe=True, kernel="({0} if {0} >= {1} or {1} != {1} else {1})")  # (a number wins)
def fmax(z, x, y):
    """As np.maximum, but a number wins over a NaN (x != x is NaN), as np.fmax takes it. The
    tangent of the argument not taken is dropped, not multiplied by 0: where that argument is
    NaN its tangent may be NaN too (runtime.weighted)."""
    x_wins = 1.0 - (y > x) - 0.5 * (x == y) - (x != x)
    z_dot = weighted(x_dot, x_wins) + weighted(y_dot, 1.0 - x_wins)
    x_bar += unbroadcast(z_bar * x_wins, x)
    y_bar += unbroadcast(z_bar * (1.0 - x_wins), y)


@rule(np.fmin, cheap=True)
@primitive(np.fmin, scalar_safe=True, kernel="({0} if {0} <= {1} or {1} != {1} else {1})")
def fmin(z, x, y):
    x_wins = 1.0 - (y < x) - 0.5 * (x == y) - (x != x)
    z_dot = weighted(x_dot, x_wins) + weighted(y_dot, 1.0 - x_wins)
    x_bar += unbroadcast(z_bar * x_wins, x)
    y_bar += unbroadcast(z_bar * (1.0 - x_wins), y)


DECLARATIONS = [
    nondifferentiable(operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                      elementwise=True, cheap=True),
    nondifferentiable(operator.floordiv, elementwise=True, cheap=True, integer="kept"),
    nondifferentiable(operator.not_, cheap=True),
    # ~ & | ^ of booleans (a mask's complement, and, or) and of ints (bitwise); of floats NumPy's TypeError
    nondifferentiable(operator.invert, np.invert, elementwise=True, arity=1, cheap=True, integer="kept"),
    nondifferentiable(operator.and_, operator.or_, operator.xor, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
                      elementwise=True, arity=2, cheap=True, integer="kept"),
    nondifferentiable(operator.is_, operator.is_not, np.floor_divide, builtins.round, builtins.bool, builtins.print),
    nondifferentiable(builtins.int, pure=True, fusable=True, integer="always", kernel="int"),
    nondifferentiable(builtins.len, pure=True, integer="always", reads_shape_of=(0,), batching="example_len"),
    # +x has no rule: lowering drops it (the facts are for the passes that meet it).
    primitive(operator.pos, elementwise=True, cheap=True, integer="kept", linear="all"),
    primitive(np.positive, np.conjugate, linear="all"),
    # of real data zeros (read-only, of x's shape): no derivative
    nondifferentiable(np.imag, pure=True, like=True, broadcasts=True, dtype_from=(0,)),
    # copies of a list, tuple or dict, which hold its items themselves (analysis/points_to.py)
    primitive(builtins.list, builtins.tuple, builtins.dict, copies=True),
    primitive(np.copy, fresh=True),
]
