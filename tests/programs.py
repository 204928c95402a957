"""User programs that the feature tests differentiate: one per language feature.

Each CASE is (function, args builder, argnums, jit) where jit says whether s2s.jit compiles it
(the primal and s2s.jit(s2s.grad(f))): False for a program on the list of s2s/limits.py, or one
tests/test_jit_parity.py's PYTHON_ONLY names with its reason.
"""

import math
from collections import namedtuple

import numpy as np

from helpers_module import smooth_step

# ---- operators ------------------------------------------------------------------------


def scalar_operators(x, y):
    a = (x + y) * (x - y) / (y * 2.0) + x**3 - (-y) ** 2
    b = x % 0.7 + 2.0**x + x**y
    return a + b


def broadcast_operators(a, b):
    c = a * b + b / (a + 3.0) - a**2 + 1.0 / b
    return np.sum(c - b + 2.0 * a)


def matmul_products(A, x):
    y = A @ x
    z = x @ A.T
    return np.sum(y**2) + x @ x + np.sum(z) + np.sum(A @ A.T)


def comparisons(x, y):
    if x < y and not x == y:
        r = x * y
    else:
        r = x + y
    if 0.0 < x < 5.0 or y > 10.0:
        r = r * 2.0
    return r


# ---- assignment -----------------------------------------------------------------------


def chained_and_tuple(x, y):
    a = b = x * 2.0
    c, d = y, a * b
    c, d = d * c, c + d
    return c * d + a


def augmented_names(x):
    y = x * 1.0
    y += 3.0 * x
    y -= x
    y *= x
    y /= 2.0
    y **= 2
    return np.sum(y)


def augmented_subscripts(x):
    z = np.zeros(4)
    z[0] += x[0]
    z[1] -= x[1] * 2.0
    z[2] = x[2]
    z[2] *= x[0]
    z[3] /= 2.0
    z[1:3] += x[1:3] ** 2
    return np.sum(z * z)


# ---- subscripts -----------------------------------------------------------------------


def subscript_reads(x):
    y = x[1:4] * x[-1] + x[::2][1]
    return np.sum(y) + x[0] * x[-2] + np.sum(x[:-1] * x[1:])


def subscript_2d(A):
    return A[1, 2] * np.sum(A[:, 0]) + np.sum(A[0] ** 2) + np.sum(A[1:, ::2]) + A[-1, -1]


def writes_into_new_arrays(x):
    y = np.zeros(4)
    y[0] = x[0]
    y[1:3] = x[1:3] ** 2
    y[3] = y[0] * y[1]
    y[0] = 5.0
    w = np.empty(2)
    w[0] = x[3]
    w[1] = x[0] * x[3]
    return np.sum(y * x) + w[0] * w[1]


def writes_into_copy(x):
    y = x.copy()
    y[0] = y[1] * 3.0
    y[2:] = np.sin(y[:-2])
    return np.sum(y**2)


def overwritten_variable(x):
    s = x[0]
    for i in range(3):
        s = np.sin(s) * x[1] + s
    s = s * s
    return s


def recurrence_in_place(x, a):
    y = np.zeros(6)
    y[0] = x
    for i in range(1, 6):
        y[i] = y[i - 1] * a + np.cos(y[i - 1])
    return np.sum(y**2)


# ---- control flow ---------------------------------------------------------------------


def if_elif_else(x):
    if x > 1.0:
        y = x**2
    elif x > 0.0:
        y = np.sin(x) * x
    else:
        y = -x
    return y * 3.0


def range_loops(x, n):
    s = 0.0
    for i in range(n):
        s = s + x**i / (i + 1.0)
    for j in range(2, 9, 3):
        s = s * x + j
    for k in range(5, 0, -2):
        s = s - x * k
    for m in range(-3, 4, 2):
        s = s + m * np.sin(x * s)
    return s


def loop_over_rows(A):
    s = 0.0
    for row in A:
        s = s * 0.5 + np.sum(row**2)
    return s


def while_loop(x):
    y = x
    n = 0
    while y < 10.0:
        y = y * 1.5 + 0.1
        n += 1
    return y * n


def break_and_continue(x):
    s = 0.0
    for i in range(10):
        if i % 2 == 0:
            continue
        s = s + x * i
        if s > 5.0:
            break
    return s * x


def while_with_break(x):
    y = x
    while y < 100.0:
        y = y * y + 1.0
        if y > 20.0:
            break
    return y


def early_returns(x):
    if x < 0.0:
        return -x * 2.0
    for i in range(5):
        x = x * 1.1
        if x > 3.0:
            return x**2
    return x


def nested_loops(A, b):
    n = A.shape[0]
    out = np.zeros(n)
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc = acc + A[i, j] * b[j]
        out[i] = np.tanh(acc)
    return np.sum(out * b)


# ---- calls ----------------------------------------------------------------------------


def helper_pair(a, b):
    return a * np.sin(b), a + b


def calls_user_functions(x, y):
    p, q = helper_pair(x, y)
    r = helper_pair(q, p)[0]
    return p * q + r + smooth_step(x - y, 3.0)


def helper_with_loop(v, steps):
    for i in range(steps):
        v = v + 0.1 * np.cos(v)
    return v


def calls_in_a_loop(x):
    s = x
    for i in range(3):
        s = helper_with_loop(s, 2) * x
    return np.sum(s)


# ---- builtins and math ----------------------------------------------------------------


def builtins_and_math(x, y):
    a = abs(x - y) + min(x, y) * max(x, 2.0 * y) + float(x)
    b = math.sin(x) * math.exp(y) + math.log(x + 3.0) + math.sqrt(x * x + 1.0)
    c = math.tanh(y) + math.atan2(y, x) + math.erf(x) + math.pow(x + 2.0, 1.5)
    return a + b + c


def uses_len(x):
    n = len(x)
    s = 0.0
    for i in range(n):
        s = s + x[i] * (i + 1)
    return s / n


# ---- numpy ----------------------------------------------------------------------------


def elementwise_family(x):
    a = np.sin(x) + np.cos(x) + np.tan(x) + np.arcsin(x) + np.arccos(x) + np.arctan(x)
    b = np.sinh(x) + np.cosh(x) + np.tanh(x) + np.exp(x) + np.expm1(x)
    c = np.log(x + 2.0) + np.log1p(x) + np.log2(x + 2.0) + np.log10(x + 2.0) + np.sqrt(x + 1.0)
    d = np.square(x) + np.power(x + 2.0, 1.7) + np.abs(x) + np.sign(x) * x
    return np.sum(a * b + c * d)


def reductions(A):
    a = np.sum(A) + np.mean(A) + np.prod(A[0]) + np.max(A) + np.min(A)
    b = np.var(A) + np.std(A)
    return a + b


def reductions_with_axis(A):
    a = np.sum(np.sum(A, axis=0) ** 2) + np.sum(np.mean(A, axis=1) ** 2)
    b = np.sum(np.max(A, axis=1)) + np.sum(np.min(A, axis=0) * 2.0)
    c = np.sum(np.var(A, axis=0)) + np.sum(np.std(A, axis=1)) + np.sum(np.prod(A, axis=1))
    d = np.sum(np.sum(A, axis=1, keepdims=True) * A)
    return a + b + c + d


def linear_algebra(A, x):
    a = np.dot(A, x) + np.matmul(A, x)
    b = np.outer(x, x)
    c = np.trace(A) + np.dot(x, x)
    return np.sum(a**2) + np.sum(b * A) + c


def shape_functions(A, x):
    a = np.transpose(A) @ x
    b = np.reshape(A, (A.size,))
    c = np.ravel(A) * 2.0
    d = np.concatenate((x, a, x * 2.0))
    e = np.stack((x, a))
    return np.sum(a) + np.sum(b * c) + np.sum(d**2) + np.sum(e * e)


def squeeze_and_expand(x):
    """np.squeeze without axis= (its result's ndim depends on the shape): s2s.jit finds the axes
    from which of the argument's axes have length 1."""
    f = np.squeeze(np.expand_dims(x, 0))
    return np.sum(f**3) + np.inner(x, f)


def selection_functions(x, y):
    a = np.where(x > y, x * y, x + y)
    b = np.clip(x, -0.5, 0.5)
    c = np.maximum(x, y) + np.minimum(x, 0.1)
    return np.sum(a + b * c)


def creation_functions(x):
    n = x.shape[0]
    z = np.zeros(n) + np.ones(n) * 2.0 + np.zeros_like(x) + np.ones_like(x)
    f = np.full(n, x[0])
    e = np.eye(n) @ x
    r = np.arange(n) * x
    g = np.linspace(0.0, 1.0, n) * x
    return np.sum(z * x + f * e + r + g)


def linalg_functions(A, b):
    x = np.linalg.solve(A, b)
    d = np.linalg.det(A)
    Ai = np.linalg.inv(A)
    return np.linalg.norm(x) + d + np.sum(Ai * Ai)


def methods_and_attributes(A, x):
    n = A.shape[0] + A.ndim + A.size
    s = A.sum() + A.mean() + A.T.sum() + A.reshape(A.size).dot(A.ravel())
    y = A.dot(x)
    z = A.copy()
    z[0, 0] = y[0]
    return s * n + np.sum(z) + np.sum(A.sum(axis=0) * x)


def array_from_scalars(x, y):
    v = np.array([x * y, x + y, np.sin(x)])
    return np.sum(v**2)


# ---- pytrees --------------------------------------------------------------------------


def tuple_params(params, x):
    w, b = params
    return np.sum((x @ w + b) ** 2)


def list_params(params, x):
    w = params[0]
    b = params[1]
    return np.sum(np.tanh(x @ w) + b)


def dict_params(params, x):
    return np.sum((x * params["scale"] + params["shift"]) ** 2)


Point = namedtuple("Point", ["a", "b"])


def namedtuple_params(p, x):
    return np.sum(p.a * x + p.b * x**2)


def returns_tuple(x):
    return np.sin(x) * 2.0, np.cos(x)


def has_aux_loss(x):
    loss = np.sum(x**2)
    return loss, np.max(x)


def rng_args():
    return np.random.default_rng(42)


CASES = {
    "scalar_operators": (scalar_operators, lambda r: (1.3, 0.8), (0, 1), True),
    "broadcast_operators": (broadcast_operators, lambda r: (r.random((3, 4)) + 0.5, r.random(4) + 0.5), (0, 1), True),
    "matmul_products": (matmul_products, lambda r: (r.standard_normal((3, 3)), r.standard_normal(3)), (0, 1), True),
    "comparisons": (comparisons, lambda r: (1.5, 2.5), (0, 1), True),
    "chained_and_tuple": (chained_and_tuple, lambda r: (0.7, -1.2), (0, 1), True),
    "augmented_names": (augmented_names, lambda r: (r.standard_normal(5),), (0,), True),
    "augmented_subscripts": (augmented_subscripts, lambda r: (r.standard_normal(4),), (0,), True),
    "subscript_reads": (subscript_reads, lambda r: (r.standard_normal(6),), (0,), True),
    "subscript_2d": (subscript_2d, lambda r: (r.standard_normal((4, 5)),), (0,), True),
    "writes_into_new_arrays": (writes_into_new_arrays, lambda r: (r.standard_normal(4),), (0,), True),
    "writes_into_copy": (writes_into_copy, lambda r: (r.standard_normal(5),), (0,), True),
    "overwritten_variable": (overwritten_variable, lambda r: (r.standard_normal(2),), (0,), True),
    "recurrence_in_place": (recurrence_in_place, lambda r: (0.3, 0.9), (0, 1), True),
    "if_elif_else_pos": (if_elif_else, lambda r: (1.7,), (0,), True),
    "if_elif_else_mid": (if_elif_else, lambda r: (0.4,), (0,), True),
    "if_elif_else_neg": (if_elif_else, lambda r: (-0.4,), (0,), True),
    "range_loops": (range_loops, lambda r: (0.9, 4), (0,), True),
    "loop_over_rows": (loop_over_rows, lambda r: (r.standard_normal((4, 3)),), (0,), True),
    "while_loop": (while_loop, lambda r: (1.3,), (0,), True),
    "break_and_continue": (break_and_continue, lambda r: (0.8,), (0,), True),
    "while_with_break": (while_with_break, lambda r: (1.1,), (0,), True),
    "early_returns_neg": (early_returns, lambda r: (-1.0,), (0,), True),
    "early_returns_loop": (early_returns, lambda r: (2.0,), (0,), True),
    "early_returns_end": (early_returns, lambda r: (0.5,), (0,), True),
    "nested_loops": (nested_loops, lambda r: (r.standard_normal((3, 3)), r.standard_normal(3)), (0, 1), True),
    "calls_user_functions": (calls_user_functions, lambda r: (0.6, 1.1), (0, 1), True),
    "calls_in_a_loop": (calls_in_a_loop, lambda r: (r.standard_normal(3),), (0,), True),
    "builtins_and_math": (builtins_and_math, lambda r: (0.6, 0.35), (0, 1), True),
    "uses_len": (uses_len, lambda r: (r.standard_normal(5),), (0,), True),
    "elementwise_family": (elementwise_family, lambda r: (r.uniform(-0.8, 0.8, 5),), (0,), True),
    "reductions": (reductions, lambda r: (r.uniform(0.5, 1.5, (3, 4)),), (0,), True),
    "reductions_with_axis": (reductions_with_axis, lambda r: (r.uniform(0.5, 1.5, (3, 4)),), (0,), True),
    "linear_algebra": (linear_algebra, lambda r: (r.standard_normal((3, 3)), r.standard_normal(3)), (0, 1), True),
    "shape_functions": (shape_functions, lambda r: (r.standard_normal((3, 3)), r.standard_normal(3)), (0, 1), True),
    "squeeze_and_expand": (squeeze_and_expand, lambda r: (r.standard_normal(3),), (0,), True),
    "selection_functions": (selection_functions, lambda r: (r.standard_normal(6), r.standard_normal(6)), (0, 1), True),
    "creation_functions": (creation_functions, lambda r: (r.standard_normal(4),), (0,), True),
    "linalg_functions": (linalg_functions, lambda r: (r.standard_normal((3, 3)) + 3 * np.eye(3), r.standard_normal(3)), (0, 1), True),
    "methods_and_attributes": (methods_and_attributes, lambda r: (r.standard_normal((3, 3)), r.standard_normal(3)), (0, 1), True),
    "array_from_scalars": (array_from_scalars, lambda r: (0.4, 1.3), (0, 1), True),
    "tuple_params": (tuple_params, lambda r: ((r.standard_normal(3), 0.5), r.standard_normal((4, 3))), (0,), True),
    "list_params": (list_params, lambda r: ([r.standard_normal(3), r.standard_normal(1)], r.standard_normal((4, 3))), (0,), True),
    "dict_params": (dict_params, lambda r: ({"scale": r.standard_normal(3), "shift": 0.3}, r.standard_normal(3)), (0,), True),
    "namedtuple_params": (namedtuple_params, lambda r: (Point(r.standard_normal(3), 0.7), r.standard_normal(3)), (0,), True),
}


# ---- harder combinations --------------------------------------------------------------


def branches_in_loop_used_after(x):
    y = x
    for i in range(6):
        if i % 3 == 0:
            y = np.sin(y) * 2.0
        elif i % 3 == 1:
            y = y * y
        else:
            z = y + 1.0
            y = z / (1.0 + y * y)
    return y + i * x


def array_accumulation(X, w):
    acc = np.zeros(X.shape[1])
    for i in range(X.shape[0]):
        acc = acc + X[i] * w[i]
    total = acc
    return np.sum(total**2)


def while_inside_for(x):
    s = 0.0
    for i in range(3):
        t = x + i
        while t < 5.0:
            t = t * 1.7 + 0.2
        s = s + t * x
    return s


def computed_indices(x):
    y = np.zeros(2 * x.shape[0])
    for i in range(x.shape[0]):
        j = 2 * i
        y[j] = x[i] ** 2
        y[j + 1] = y[j] * x[i]
    return np.sum(y * y)


def defined_in_loop_used_after(x):
    for i in range(4):
        last = x * (i + 1.0)
        x = np.cos(last)
    return last * x


def heat_equation(u0, alpha):
    u = u0.copy()
    for step in range(20):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        new = u.copy()
        new[1:-1] = u[1:-1] + alpha * lap
        u = new
    return np.sum(u**2)


def monte_carlo_paths(s0, sigma, z):
    n_paths = z.shape[0]
    n_steps = z.shape[1]
    total = 0.0
    for p in range(n_paths):
        s = s0
        for t in range(n_steps):
            s = s * np.exp(-0.5 * sigma * sigma * 0.01 + sigma * 0.1 * z[p, t])
        total = total + max(s - 1.0, 0.0)
    return total / n_paths


def row_view_then_write(A):
    B = A.copy()
    r = B[0]
    s = np.sum(r * r)
    B[0, 0] = s
    return np.sum(B * B)


CASES.update({
    "branches_in_loop_used_after": (branches_in_loop_used_after, lambda r: (0.7,), (0,), True),
    "array_accumulation": (array_accumulation, lambda r: (r.standard_normal((4, 3)), r.standard_normal(4)), (0, 1), True),
    "while_inside_for": (while_inside_for, lambda r: (1.3,), (0,), True),
    "computed_indices": (computed_indices, lambda r: (r.standard_normal(3),), (0,), True),
    "defined_in_loop_used_after": (defined_in_loop_used_after, lambda r: (0.4,), (0,), True),
    "heat_equation": (heat_equation, lambda r: (r.standard_normal(8), 0.2), (0, 1), True),
    "monte_carlo_paths": (monte_carlo_paths, lambda r: (1.0, 0.3, r.standard_normal((5, 6))), (0, 1), True),
    "row_view_then_write": (row_view_then_write, lambda r: (r.standard_normal((3, 3)),), (0,), True),
})


def aliased_number_update(x, a):
    """`y = a; y += ...` on numbers: y is rebound and a keeps its value (checked at run time)."""
    y = a
    y += x * 2.0
    return y * a


CASES["aliased_number_update"] = (aliased_number_update, lambda r: (0.3, 1.7), (0, 1), True)


def unpack_array_param(params, x):
    """An array argument unpacked into names: its adjoint is built as a tuple, returned as an array."""
    a, b = params
    return a * np.sin(b * x)


CASES["unpack_array_param"] = (unpack_array_param, lambda r: (np.array([0.5, 1.3]), 0.7), (0, 1), True)


# ---- y = f(y) whose rule reads both the old and the new y ------------------------------


def reassigned_from_itself(x):
    y = x * 2.0
    y = 1.0 / y
    z = x + 1.0
    z = 1.0 / z
    return np.sum(y) + np.sum(z)


def reassigned_chain(a, b):
    y = a / b
    y = b / y
    y = a / y
    s = 0.0
    for i in range(3):
        s = s + a * i + 1.0
    s = 1.0 / s
    return y * s


def reassigned_in_loop(x):
    y = x[0]
    for i in range(3):
        y = y ** x[1]
        y = x[2] ** y
    v = x * 2.0
    v = np.linalg.norm(v)
    return y + v


def reassigned_reduction(A):
    A = A * 1.5
    A = np.max(A, axis=1)
    return np.sum(A)


CASES.update({
    "reassigned_from_itself": (reassigned_from_itself, lambda r: (np.array([0.7, 0.4, 1.3]),), (0,), True),
    "reassigned_chain": (reassigned_chain, lambda r: (0.7, 1.3), (0, 1), True),
    "reassigned_in_loop": (reassigned_in_loop, lambda r: (np.array([0.9, 1.2, 1.1]),), (0,), True),
    "reassigned_reduction": (reassigned_reduction, lambda r: (r.standard_normal((3, 4)),), (0,), True),
})


def gather_with_repeats(x, A):
    """An index array from argmax repeats entries: the gather's adjoint must add them up."""
    idx = np.argmax(A, axis=1)
    return np.sum(x[idx] ** 2) + np.sum(x[idx // 1] * 0.5)


def inner_of_vectors(x, y):
    return np.inner(x, y) * np.sum(np.inner(x, 2.0))


CASES.update({
    "gather_with_repeats": (gather_with_repeats, lambda r: (np.array([0.7, -0.4, 1.3]),
                                                          np.array([[1.0, 0, 0], [2.0, 0, 0], [0, 0, 5.0]])), (0,), True),
    "inner_of_vectors": (inner_of_vectors, lambda r: (r.standard_normal(3), r.standard_normal(3)), (0, 1), True),
})


def sum_with_constant_array(a, x):
    """a + ones(3): the tangent of a scalar broadcast to an array keeps the array's shape."""
    c = np.ones(3)
    z = a + c
    y = x + 1.0
    y[0] = 2.0 * y[1]  # must not write into x's tangent
    return np.sum(z * y) * a


CASES["sum_with_constant_array"] = (sum_with_constant_array, lambda r: (0.7, np.array([0.7, -0.4, 1.3])), (0, 1), True)


def slice_and_index_array(A, idx):
    """A slice and an index array in one subscript, read and written."""
    B = np.zeros(A.shape)
    B[:, idx] = A[:, idx] * 2.0
    return np.sum(B * B) + np.sum(A[idx, 1:])


CASES["slice_and_index_array"] = (slice_and_index_array, lambda r: (r.standard_normal((3, 4)), np.array([0, 2])), (0,), True)


# ---- pytrees through helpers, self-subscripts, shapes that change ----------------------


def linear_of_pair(p, x):
    w, b = p
    return np.sum(w * x) + b


def pair_through_helpers(p, x):
    """A tuple argument passed to a helper twice and in a loop: its adjoints add leaf by leaf."""
    s = linear_of_pair(p, x) * linear_of_pair(p, x * x)
    for i in range(3):
        s = s + linear_of_pair(p, x * i) ** 2
    return s


def self_subscripts(x):
    """y = y[...] reads the old y; the reversed order and the shorter array keep their shapes."""
    x = x[::-1]
    y = x[1:] * 1.0
    y = y[1:]
    return np.sum(x * np.arange(4.0)) + np.sum(y * y)


def shrinking_in_loops(x):
    y = x * 1.0
    for i in range(2):
        y = y[1:] + y[:-1] * y[1:]
    z = x * 1.0
    while z.shape[0] > 1:
        z = z[1:] * z[:-1]
    return np.sum(y * y) + np.sum(z)


def invariants_and_changing_ndim(x, c):
    """Loop-invariant temporaries (k, w) need no tape; y changes ndim between its loops."""
    y = x * 1.0
    total = 0.0
    for i in range(3):
        for j in range(i):
            k = c * c
            w = np.exp(x) * c
            total = total + k * np.sum(y * w)
        y = y * (c + 0.5)
    y = np.sum(y)
    for i in range(2):
        y = y + c * y
    return y + total


def counted_tapes(x, w, n):
    """Tapes in range loops (preallocated, runtime.new_tape): an array value in nested loops
    (one with step -1, one whose trips change), a number taped inside an `if`, an outer loop
    of step 2 that may not run."""
    v = x * 1.0
    s = 0.5
    for i in range(1, 2 * n, 2):
        for j in range(2, 0, -1):
            v = np.sin(v) * w[j]
        first = i // 2
        for k in range(first, n):  # trips that change with i: counted before the loops
            s = np.sin(s) * w[k % 3] + 0.2
        if i % 4 == 1:
            s = s * np.sum(v)
        else:
            s = np.cos(s + w[0])
    return s + np.sum(v * v)


CASES.update({
    "invariants_and_changing_ndim": (invariants_and_changing_ndim, lambda r: (np.array([0.3, -0.7, 1.2]), 0.8),
                                     (0, 1), True),
    "pair_through_helpers": (pair_through_helpers, lambda r: ((np.array([0.5, 0.1, -0.2]), 0.7),
                                                             np.array([0.3, -0.7, 1.2])), (0,), True),
    "self_subscripts": (self_subscripts, lambda r: (np.array([0.3, -0.7, 1.2, 0.5]),), (0,), True),
    "counted_tapes": (counted_tapes, lambda r: (np.array([0.3, -0.7, 1.2]), np.array([0.4, 1.1, 0.9]), 3),
                      (0, 1), True),
    "counted_tapes_zero_trips": (counted_tapes, lambda r: (np.array([0.3, -0.7, 1.2]), np.array([0.4, 1.1, 0.9]), 0),
                                 (0, 1), True),
    "shrinking_in_loops": (shrinking_in_loops, lambda r: (np.array([0.3, -0.7, 1.2, 0.5]),), (0,), True),
})


# ---- reductions over axes that numba.njit rejects (runtime.reduce_*) ---------------------


def log_softmax_cross_entropy(logits, labels):
    """The numerically stable log-softmax of a classifier, as a NumPy user writes it."""
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(log_probs * labels, axis=-1))


def variance_over_axis0(X):
    """Standardised columns: np.var and np.std over axis 0, the mean kept for broadcasting."""
    centered = (X - X.mean(axis=0, keepdims=True)) / np.sqrt(np.var(X, axis=0) + 0.1)
    return np.sum(centered ** 3) + np.sum(X.std(axis=0, ddof=1)) + np.sum(np.var(X, axis=-2, keepdims=True))


def keepdims_max_min(X):
    """Max and min over one axis and over several; ties share the derivative equally."""
    m = np.max(X, axis=-1, keepdims=True)
    n = X.min(axis=(0, 2))
    top = np.amax(X, axis=(1, 2), keepdims=True)
    return np.sum(np.exp(X - m)) + np.sum(n * n) + np.sum(top * X) + np.sum(np.max(X, keepdims=True))


def tuple_axes_reductions(X):
    a = np.sum(X, axis=(0, 2)) * np.mean(X, axis=(-1, 0))
    b = np.sum(X, axis=(1,), keepdims=True) * X
    c = np.prod(X, axis=(0, -1)) + np.prod(X, axis=1, keepdims=True).sum(axis=0)[0, 0]
    return np.sum(a) + np.sum(b * b) + np.sum(c) + np.var(X, ddof=1)


def squeeze_with_axis(X, y):
    """np.squeeze with axis=, and np.inner of matrices, compile under s2s.jit."""
    s = np.squeeze(X[:, 1:2, :], axis=1)
    t = np.squeeze(X[0:1, 0:1, :], axis=(0, 1))
    return np.sum(np.inner(s, y) ** 2) + np.sum(np.inner(t, y)) * np.inner(t, t)


CASES.update({
    "log_softmax_cross_entropy": (log_softmax_cross_entropy, lambda r: (r.standard_normal((4, 5)),
                                                                        np.eye(5)[[0, 3, 1, 4]]), (0,), True),
    "variance_over_axis0": (variance_over_axis0, lambda r: (r.standard_normal((5, 3)),), (0,), True),
    "keepdims_max_min": (keepdims_max_min, lambda r: (r.standard_normal((2, 3, 4)),), (0,), True),
    # Two-way ties only: a central difference across a tie of two sees half of each side.
    "keepdims_max_with_ties": (keepdims_max_min, lambda r: (np.array([[[1.0, 2.0, 2.0, 0.5], [0.3, 0.3, -1.0, 0.1],
                                                                      [0.7, 0.1, 0.2, 0.0]]]),), (0,), False),
    # python only: the 3-D adjoint helpers compile slowly under Numba, and keepdims_max_min
    # (3-D, tuple axes) already covers them under jit
    "tuple_axes_reductions": (tuple_axes_reductions, lambda r: (r.uniform(0.5, 1.5, (2, 3, 2)),), (0,), False),
    "squeeze_with_axis": (squeeze_with_axis, lambda r: (r.standard_normal((3, 2, 4)), r.standard_normal((2, 4))), (0, 1), True),
})


def products_beyond_two_dimensions(A, B, v):
    """np.dot and np.inner contract other axes than matmul beyond 2-D (Numba's take 1-d and 2-d
    arrays: s2s.jit's forms multiply the rows of the contracted axes)."""
    return np.sum(np.sin(np.dot(A, B))) + np.sum(np.inner(A, v) ** 2) + np.sum(np.cos(A @ v))


CASES["products_beyond_two_dimensions"] = (
    products_beyond_two_dimensions,
    lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((2, 4, 3)), r.standard_normal(4)), (0, 1, 2), True)
