"""An example program for every derivative rule of the registry: the rows of the transform x
rule matrix (tests/test_rule_matrix.py).

EXAMPLES gives each registered function a small program: its parameters (drawn from ARGS:
vectors of length 3, a well-conditioned 3x3 matrix, numbers; positive and below one where
log, sqrt or arcsin need it) and a body that calls the function as generated code or a user
would spell it (an expression, or statements ending in a return).
"""

import builtins
import importlib
import math
import operator
from collections import namedtuple

import numpy as np

from s2s import rules, runtime
from s2s.rules import POW_OF_A_VARIABLE, QUOTIENT_UNREAD, SELF_PRODUCT

# The cases declared in templates/ (a module of the package s2s.templates once the rules are loaded)
LOGSUMEXP_SCALED = rules.load_rules() and importlib.import_module("s2s.templates.scipy_rules").LOGSUMEXP_SCALED
_ARRAY_RULES = importlib.import_module("s2s.templates.array_rules")
SVD_VECTORS, EIGH_UPPER, EIGVALSH_UPPER = _ARRAY_RULES.SVD_VECTORS, _ARRAY_RULES.EIGH_UPPER, _ARRAY_RULES.EIGVALSH_UPPER

Pair = namedtuple("Pair", "a b")
_rng = np.random.default_rng(7)
ARGS = {
    "x": 0.2 + 0.6 * _rng.random(3),  # in (0.2, 0.8): log, sqrt, arcsin, arccos
    "y": 1.1 + 0.8 * _rng.random(3),
    "s": 0.6,
    "t": 1.3,
    "A": 3.0 * np.eye(3) + 0.3 * _rng.random((3, 3)),
    "p": Pair(0.4, 0.9),
}

# function -> (parameters, body: an expression, or statements ending in a return). An elementwise
# function of one or two arguments (a NumPy ufunc, a math function) needs none: example_of writes
# np.sin(x), np.arctan2(x, y), math.sin(s), math.atan2(s, t) for it.
EXAMPLES = {
    **{getattr(np, n): ("x", f"np.{n}(x)") for n in ["copy", "array", "asarray", "ravel"]},
    np.arccosh: ("y", "np.arccosh(y)"),  # (of numbers above 1)
    math.acosh: ("t", "math.acosh(t)"),
    np.mod: ("y, x", "np.mod(y, x)"),
    np.fmax: ("x, y", "np.fmax(x, y * 0.5)"),
    np.fmin: ("x, y", "np.fmin(x, y * 0.5)"),
    operator.add: ("x, y", "x + y"),
    operator.sub: ("x, y", "x - y"),
    operator.mul: ("x, y", "x * y"),
    operator.truediv: ("x, y", "x / y"),
    operator.pow: ("x, y", "x ** 3 * y + y ** 0.5"),  # (of a constant exponent: x ** y is POW_OF_A_VARIABLE's)
    np.power: ("x, y", "np.power(x, 3) * y + np.power(y, 0.5)"),
    POW_OF_A_VARIABLE: ("x, y", "x ** y + np.power(y, x)"),
    operator.mod: ("y, x", "y % x"),
    operator.neg: ("x", "-x"),
    np.flip: ("A", "np.flip(A, 0) * A"),
    # (a covariance of lower rank: its rule raises where a derivative flows through it, which
    # tests/test_rules_scipy_stats.py checks; here it is a constant of the derivative)
    runtime.singular_covariance: ("A", "np.sum(runtime.singular_covariance(np.ones((3, 3))) @ A)"),
    runtime.flip: ("A", "runtime.flip(A, (0, 1)) * A"),
    np.cumsum: ("x, A", "np.cumsum(x) + np.sum(np.cumsum(A, 1) * A)"),
    np.flipud: ("x, A", "np.flipud(A) * A + np.flipud(x) * x"),
    np.fliplr: ("A", "np.fliplr(A * A) * A"),
    np.rot90: ("A", "np.rot90(A) * A + np.sum(np.rot90(np.reshape(A, (3, 1, 3)), k=-3, axes=(2, 0)) ** 2)"
                    " + np.rot90(A * A, 2)"),
    runtime.rot90: ("A", "runtime.rot90(np.reshape(A * A, (1, 3, 3)), 3, (1, 2)) * A"),
    np.rollaxis: ("A", "np.sum(np.rollaxis(np.reshape(A, (3, 1, 3)), 2) * A[:, :1, None]) * A"
                       " + np.rollaxis(np.reshape(A * A, (1, 3, 3)), -3, start=3)[0]"),
    runtime.rollaxis: ("A", "runtime.rollaxis(np.reshape(A * A, (3, 1, 3)), 0, 2)[:, 0] * A"),
    runtime.rollaxis_bar: ("A", "runtime.rollaxis_bar(np.reshape(A * A, (3, 1, 3)), 1, 3)[0] * A[0]"),
    runtime.flatten: ("A", "A.flatten() * A.flatten('F') + runtime.flatten(A * A, order='F')"),
    runtime.flatten_bar: ("x, A", "runtime.flatten_bar(np.ravel(A * A), A, 'F') * A + runtime.flatten_bar(x * x, x)[0]"),
    runtime.cumsum: ("x", "runtime.cumsum(x)"),
    runtime.cumsum_bar: ("x, y", "runtime.cumsum_bar(x * y, y)"),
    operator.matmul: ("A, x", "A @ x"),
    SELF_PRODUCT: ("x", "x * x"),
    QUOTIENT_UNREAD: ("x, y", "r = 0.0 * x\n    for i in range(2):\n        r = r + x / y\n    return r"),
    builtins.abs: ("s", "abs(s)"),
    builtins.float: ("s", "float(s)"),
    builtins.max: ("s, t", "max(s, t)"),
    builtins.min: ("s, t", "min(s, t)"),
    builtins.pow: ("s, t", "pow(s, t)"),
    # reductions
    **{getattr(np, n): ("A", f"np.{n}(A, axis=0)") for n in ["sum", "mean", "max", "min", "amax", "amin", "prod",
                                                             "var", "std"]},
    **{getattr(runtime, f"reduce_{n}"): ("A", f"runtime.reduce_{n}(A, axis=1)")
       for n in ["sum", "mean", "max", "min", "prod", "var", "std"]},
    # products
    np.inner: ("x, y", "np.inner(x, y)"),
    runtime.inner: ("x, y", "runtime.inner(x, y)"),
    np.dot: ("A, x", "np.dot(A, x)"),
    np.matmul: ("A, x", "np.matmul(A, x)"),
    np.outer: ("x, y", "np.outer(x, y)"),
    np.trace: ("A", "np.trace(A) * np.trace(A * A, offset=1) + np.trace(A, -1) * A.trace(1)"
                    " + np.trace(np.reshape(A, (3, 1, 3)), 0, 2, axis2=0) * 2.0"),
    runtime.trace: ("A", "runtime.trace(np.reshape(A * A, (3, 3, 1)), -1, 1, 0) * A[0]"),
    np.diagonal: ("A", "np.diagonal(A) * A + np.diagonal(A * A, 1) @ A[:2] + A.diagonal(offset=-1) @ A[1:]"
                       " + np.sum(np.diagonal(np.reshape(A, (3, 1, 3)), axis1=2, axis2=0) ** 2)"),
    runtime.diagonal: ("A", "runtime.diagonal(np.reshape(A * A, (1, 3, 3)), 1, 1, 2) * A[:, :2]"),
    runtime.diagonal_bar: ("x, A", "runtime.diagonal_bar(x * x, A) * A + runtime.diagonal_bar(x[:2] * A[0, :2], A, -1)"),
    np.tensordot: ("A, x", "np.tensordot(A, x, 1) + np.tensordot(A, A, axes=((1, 0), (0, 1)))"),
    runtime.tensordot: ("A, x", "runtime.tensordot(x, A, ((0,), (1,)))"),
    np.kron: ("x, A", "np.kron(x, x * 2.0) + np.sum(np.kron(A, A[:2, :2]) ** 2)"),
    runtime.kron: ("A", "runtime.kron(A[0], A[1])"),
    # shapes
    np.transpose: ("A", "np.transpose(A)"),
    np.reshape: ("A", "np.reshape(A, (9,))"),
    runtime.reshape: ("A", "runtime.reshape(np.transpose(A * A), (9,)) + np.reshape(A.T, -1)"),
    np.squeeze: ("x", "np.squeeze(np.reshape(x, (1, 3)), 0)"),
    runtime.squeeze: ("x", "runtime.squeeze(np.reshape(x, (1, 3)), 0)"),
    np.swapaxes: ("A", "np.swapaxes(A, 0, 1)"),
    np.expand_dims: ("x", "np.expand_dims(x, 0)"),
    np.moveaxis: ("A", "np.moveaxis(np.reshape(A, (3, 1, 3)), (0, 1), (2, 0)) * A[0]"),
    np.concatenate: ("x, y", "np.concatenate((x, y))"),
    np.hstack: ("x, A", "np.hstack((x, x * 2.0)) + np.sum(np.hstack((A, A * A)))"),
    np.vstack: ("x, A", "np.vstack((A, x)) * 2.0"),
    np.row_stack: ("x, A", "np.row_stack((A, x * x)) * 2.0"),
    np.pad: ("x, A, s", "np.sum(np.pad(A, 1) ** 2) + np.sum(np.pad(A * A, ((1, 0), (2, 1)), constant_values=s) ** 2)"
                        " * np.pad(x, (2, 1), 'constant', constant_values=s * s)"
                        " + np.sum(np.pad(x, [(1, 2)], mode='constant', constant_values=(1.0, 2.0)) * 3.0)"),
    runtime.pad: ("A, s", "runtime.pad(A * A, (1, 2), 'constant', s) * 2.0"),
    np.select: ("x, y, A, s", "np.select([A > 1.0, A < 0.15], [A * A, x * s], s)"
                              " + np.select((x > 0.5,), (np.sin(x),)) * np.select([x < 0.4, x >= 0.4], [y, x * y], default=0.5)"),
    runtime.select: ("x, A, s", "runtime.select((A > 1.0, A < 0.15), (A * A, x * s), s)"),
    np.column_stack: ("x, A", "np.column_stack((x, A * x, x * x)) ** 2"),
    np.i0: ("x", "np.i0(x * 3.0 - 1.5)"),
    # (np.interp's helpers, on the knots 0, 0.5, 1, 2; the queries 2x fall inside)
    runtime.interp_slope: ("x, y", "runtime.interp_slope(np.array([0.3, 0.9, 1.6]), np.array([0.0, 0.5, 1.0, 2.0]),"
                                   " np.concatenate((x, y[:1])) ** 2)"),
    runtime.interp_bar_fp: ("x, y", "runtime.interp_bar_fp(x * y, x * 2.0, np.array([0.0, 0.5, 1.0, 2.0]), np.zeros(4))"),
    runtime.interp_slope_bar_fp: ("x, y", "runtime.interp_slope_bar_fp(x * y, x * 2.0, np.array([0.0, 0.5, 1.0, 2.0]),"
                                          " np.zeros(4))"),
    np.dstack: ("x, A", "np.sum(np.dstack((A, A * x, x * x[:, None])) ** 2, axis=2)"
                        " + np.sum(np.dstack((x, x * 2.0))[0], axis=1)"),
    np.fft.fftshift: ("x, A", "np.fft.fftshift(x) * x + np.sum(np.fft.fftshift(A * A, axes=1) * A, axis=0)"
                              " + np.fft.fftshift(A, axes=(0, 1))[0] ** 2"),
    runtime.fftshift: ("A", "runtime.fftshift(np.reshape(A * A, (1, 9)), 1)[0, :3] * A[0]"),
    np.fft.ifftshift: ("x, A", "np.fft.ifftshift(x * x) * x + np.sum(np.fft.ifftshift(A, axes=(0,)) * A, axis=1)"),
    runtime.ifftshift: ("A", "runtime.ifftshift(np.reshape(A * A, (9,)))[:3] * A[1]"),
    # irfft: the default n (4, of 3 entries), odd n that read the 3 (5), pad them (7) or cut them (3), axis 0, norms
    np.fft.irfft: ("x, A", "np.fft.irfft(x * x) * x[0] + np.sum(np.fft.irfft(A, 5, axis=0, norm='ortho') ** 2)"
                           " + np.fft.irfft(A * x, n=7, norm='forward')[1, :4] + np.sum(np.fft.irfft(x, 3) * x)"),
    runtime.irfft: ("A", "runtime.irfft(A * A, 4, 0)[:3] * A"),
    runtime.irfft_bar: ("x, y, A", "runtime.irfft_bar(np.outer(x, y + x), A, 3, 0, 'forward') * A"
                                   " + runtime.irfft_bar(np.concatenate((x * y, y[:1])), x)"),
    np.append: ("x, y, A, s", "np.append(x, y * x) * np.append(A, s)[3:9] + np.sum(np.append(A, x[None] * A[0], axis=0) ** 2)"
                              " + np.sum(np.append(A, A[:, :1] * x[:, None], 1) ** 3) + np.sum(np.append(x, [s, 1.0]) ** 2)"),
    np.cumprod: ("x, A", "np.cumprod(x) + np.sum(np.cumprod(A, 1) * A)"),
    runtime.cumprod: ("A", "runtime.cumprod(A, 0)"),
    np.diff: ("x, A", "np.sum(np.diff(x) ** 2) + np.sum(np.diff(A, 2, axis=0) * A[0])"),
    runtime.diff: ("A", "runtime.diff(A, 1, 0)"),
    np.roll: ("x, A", "np.roll(x, 1) * x + np.sum(np.roll(A, (1, 2), (0, 1)) * A)"),
    runtime.roll: ("A", "runtime.roll(A, -1, 1)"),
    # (weights equal within each side: NumPy and Numba order the sides differently)
    np.partition: ("x, A", "p = np.partition(A * A, -2, axis=None, kind='introselect')\n"
                           "    return np.partition(x, 1) * x + np.sum(np.partition(A, (0, 2), axis=0) * A)"
                           " + np.sum(p[:7] ** 2) + p[7] * 3.0 + p[8]"),
    runtime.partition: ("x, A", "runtime.partition(A, 1, 0) * x + runtime.partition(x * x, 0)"),
    np.sort: ("x, A", "np.sort(x) * x + np.sum(np.sort(A, axis=0) * A) + np.sum(np.sort(A, axis=None) ** 2)"),
    runtime.sort: ("A", "runtime.sort(A, 0) ** 2"),
    np.tile: ("x, A", "np.tile(x, 2) ** 2 + np.sum(np.tile(A, (2, 1, 1)) ** 2)"),
    np.broadcast_to: ("x, s", "np.broadcast_to(x * s, (2, 3)) ** 2 + np.broadcast_to(s, (3,))"),
    runtime.tile: ("x", "runtime.tile(x, (2, 1))"),
    np.diag: ("x, A", "np.diag(x, 1) + np.sum(np.diag(A, -1) ** 2)"),
    np.tril: ("x, A", "np.tril(A, -1) * 2.0 + np.sum(np.tril(x) ** 2)"),
    np.triu: ("x, A", "np.triu(A) * 2.0 + np.sum(np.triu(x, 1) ** 2)"),
    np.atleast_1d: ("s", "np.atleast_1d(s) * 2.0"),
    np.atleast_2d: ("x", "np.atleast_2d(x) ** 2"),
    np.atleast_3d: ("A", "np.atleast_3d(A) ** 2"),
    runtime.atleast_1d: ("s, x", "runtime.atleast_1d(s) * runtime.atleast_1d(x)"),
    runtime.atleast_2d: ("s, x", "runtime.atleast_2d(s) * runtime.atleast_2d(x) ** 2"),
    runtime.atleast_3d: ("s, A", "runtime.atleast_3d(s) * runtime.atleast_3d(A) ** 2"),
    runtime.vstack: ("x, A", "runtime.vstack((A, x, x * A[0])) * 2.0"),
    runtime.stack: ("x", "runtime.stack((x, x * 2.0))[1] * x"),
    runtime.array: ("x, A", "runtime.array(x * 2.0) + runtime.array(A)[0]"),
    runtime.astype: ("x", "runtime.astype(x, np.float64) ** 2"),
    np.stack: ("x, y", "np.stack((x, y), 1)"),
    # selection
    np.where: ("x, y", "np.where(x > 0.5, x, y)"),
    np.clip: ("x, s, t", "np.clip(x, s - 0.15, t - 0.8)"),
    # linear algebra
    np.linalg.norm: ("x", "np.linalg.norm(x)"),
    runtime.linalg_norm: ("A", "np.sum(runtime.linalg_norm(A, 3, 0) ** 2)"),
    np.linalg.solve: ("A, x", "np.linalg.solve(A, x)"),
    np.linalg.det: ("A", "np.linalg.det(A)"),
    np.linalg.inv: ("A", "np.linalg.inv(A)"),
    np.linalg.matrix_power: ("A", "np.linalg.matrix_power(A, 3)"),
    runtime.matrix_power: ("A", "runtime.matrix_power(A, 2)"),
    np.polyval: ("x, y, s", "np.polyval(y, x) + np.polyval(y, s) * x"),
    runtime.polyval: ("x, y", "runtime.polyval(y, x)"),
    runtime.polyder: ("y", "runtime.polyder(y * y)"),
    np.interp: ("x, y", "np.interp(x * 2.0, np.array([0.0, 0.7, 1.4]), y * y) + np.interp(x[0], np.array([0.1, 0.3, 0.9]), y)"),
    np.repeat: ("x, A", "np.repeat(x, 2) * np.sum(np.repeat(A, 2, axis=1) ** 2)"),
    runtime.repeat: ("x", "runtime.repeat(x, 3)"),
    np.linalg.slogdet: ("A", "np.linalg.slogdet(A)[1] * np.linalg.slogdet(A)[0]"),
    np.linalg.cholesky: ("A", "np.linalg.cholesky(A @ A.T)"),
    np.linalg.eigh: ("A", "np.linalg.eigh(A + A.T)[0] + np.sum(np.linalg.eigh(A + A.T)[1] ** 2 * A, axis=0)"),
    np.linalg.eigvalsh: ("A", "np.linalg.eigvalsh(A @ A.T)"),
    EIGH_UPPER: ("A", "np.linalg.eigh(A, 'U')[0] + np.sum(np.linalg.eigh(A @ A.T, UPLO='U')[1] ** 2 * A, axis=0)"),
    EIGVALSH_UPPER: ("A", "np.linalg.eigvalsh(A @ A, UPLO='U')"),
    runtime.linalg_eigh: ("A", "runtime.linalg_eigh(A, 'L')[0] + runtime.linalg_eigh(A)[1][0] ** 2"),
    runtime.linalg_eigvalsh: ("A", "runtime.linalg_eigvalsh(A * A, 'U')"),
    # (of matrices with real eigenvalues: symmetric, triangular)
    np.linalg.eig: ("A", "np.linalg.eig(A + A.T)[0] + np.sum(np.linalg.eig(A @ A.T)[1] ** 2 * A, axis=0)"),
    runtime.linalg_eig: ("A", "runtime.linalg_eig(np.triu(A) + np.diag(np.arange(3.0)))[0] "
                              "+ runtime.linalg_eig(A + A.T)[1][0] ** 2"),
    runtime.linalg_eigvals: ("A", "runtime.linalg_eigvals(np.triu(A) + np.diag(np.arange(3.0))) * 2.0"),
    np.linalg.eigvals: ("A", "np.linalg.eigvals(np.triu(A) + np.diag(np.arange(3.0))) * np.linalg.eigvals(A @ A.T)"),
    runtime.gradient_like: ("x, A", "runtime.gradient_like(x * x, A[0]) + runtime.gradient_like(A.ravel()[:3] * x[0], x)"),
    runtime.gradient_flat: ("x, y", "runtime.gradient_flat(x * y, y) * x"),
    runtime.full_rank_solution: ("x, A", "runtime.full_rank_solution(x * x, 3, A)"),
    runtime.lstsq_residuals: ("x, s", "runtime.lstsq_residuals(x * s, x) + runtime.lstsq_residuals(s * s, x[:1])"),
    runtime.residual_weights: ("x, y", "runtime.residual_weights(x * y, y[:1]) + runtime.residual_weights(x, y[:0])"),
    runtime.real_eigenvalues: ("x", "runtime.real_eigenvalues(x * x)"),
    np.linalg.qr: ("A", "np.linalg.qr(A)[0] + np.linalg.qr(A)[1] * 2.0"),
    np.linalg.pinv: ("A", "np.linalg.pinv(A[:, :2]) @ A"),
    np.linalg.svd: ("A", "np.linalg.svd(A[:, :2], compute_uv=False)"),
    # (squares of the singular vectors: NumPy picks their signs)
    SVD_VECTORS: ("A", "np.linalg.svd(A[:, :2], full_matrices=False)[0] ** 2 @ np.linalg.svd(A)[1][:2]"
                       " + np.sum(np.linalg.svd(A[:2], False, True)[2] ** 2, axis=0)"),
    runtime.singular_values: ("A", "runtime.singular_values(np.linalg.svd(A * A)[1], np.eye(3), np.eye(3))"),
    runtime.linalg_svd: ("A", "runtime.linalg_svd(A[:, :2], False, False)"),
    np.linalg.lstsq: ("A, x", "np.linalg.lstsq(A[:, :2], x, rcond=None)[0] + np.sum(np.linalg.lstsq(A[:, :2], x, "
                              "rcond=None)[1]) + np.linalg.lstsq(A[:, :2], x, rcond=None)[3][0]"),
    runtime.linalg_lstsq: ("A, x", "runtime.linalg_lstsq(A[:, :2], x)[0]"),
    # creation
    np.full: ("s", "np.full(3, s)"),
    np.full_like: ("x, s", "np.full_like(x, s)"),
    # runtime helpers of generated code (second order)
    runtime.copy: ("x", "runtime.copy(x)"),
    runtime.derivative_like: ("x, y", "runtime.derivative_like(x * y, y)"),
    runtime.unbroadcast: ("A, x", "runtime.unbroadcast(A, x)"),
    runtime.weighted: ("x, y, s", "runtime.weighted(x * y, np.array([1.0, 0.0, 0.5])) + runtime.weighted(s * x, 0.0)"),
    runtime.sum_bar: ("s, x", "runtime.sum_bar(s, x)"),
    runtime.mean_bar: ("s, x", "runtime.mean_bar(s, x)"),
    runtime.max_bar: ("s, x", "runtime.max_bar(s, np.max(x), x)"),
    runtime.var_bar: ("s, x", "runtime.var_bar(s, x)"),
    runtime.std_bar: ("s, x", "runtime.std_bar(s, np.std(x), x)"),
    runtime.half_over: ("x", "np.sum(runtime.half_over(x * x + 0.5))"),
    runtime.matmul_bar_x: ("x, A, y", "runtime.matmul_bar_x(x, A, y)"),
    runtime.matmul_bar_y: ("x, A, y", "runtime.matmul_bar_y(x, A, y)"),
    runtime.dot_bar_x: ("x, A, y", "runtime.dot_bar_x(x, A, y)"),
    runtime.dot_bar_y: ("x, A, y", "runtime.dot_bar_y(x, A, y)"),
    runtime.inner_bar_x: ("s, x, y", "runtime.inner_bar_x(s, x, y)"),
    runtime.inner_bar_y: ("s, x, y", "runtime.inner_bar_y(s, x, y)"),
    runtime.outer_bar_x: ("A, x, y", "runtime.outer_bar_x(A, x, y)"),
    runtime.outer_bar_y: ("A, x, y", "runtime.outer_bar_y(A, x, y)"),
    runtime.trace_bar: ("s, x, A", "runtime.trace_bar(s, A) + runtime.trace_bar(x[:1] * s, np.reshape(A, (3, 1, 3)), 1, 0, 2)[:, 0]"),
    runtime.transpose_bar: ("A", "runtime.transpose_bar(A, None)"),
    runtime.reshape_bar: ("x, A", "runtime.reshape_bar(np.reshape(A, (9,)), A) + x[0]"),
    runtime.cumprod_jvp: ("x, y", "runtime.cumprod_jvp(x, y)"),
    runtime.cumprod_vjp: ("x, y", "runtime.cumprod_vjp(x, y)"),
    runtime.broadcast_like: ("x, A", "runtime.broadcast_like(x, A)"),
    runtime.carry_like: ("x, y", "runtime.carry_like(x[0] * y[1], x) + x * y"),
    runtime.carry_like_item: ("x, A", "runtime.carry_like_item(x[0] * x[1], A) + A[0] * x"),
    runtime.number_if_0d: ("s, x", "runtime.number_if_0d(np.where(s > 0.0, s * s, s)) * x + runtime.number_if_0d(x)"),
    runtime.prod_bar: ("s, x", "runtime.prod_bar(s, np.prod(x), x)"),
    runtime.prod_dot: ("x, y", "runtime.prod_dot(x, np.prod(y), y)"),
    runtime.diff_bar: ("x, A", "runtime.diff_bar(x[:2] * A[0, :2], x)"),
    runtime.roll_bar: ("A", "runtime.roll_bar(A * A, (1, -1), (0, 1))"),
    runtime.sort_dot: ("x, y", "runtime.sort_dot(x * y, y)"),
    runtime.sort_bar: ("x, y", "runtime.sort_bar(x * y, y)"),
    runtime.tile_bar: ("x", "runtime.tile_bar(np.tile(x, 2) * x[0], x, 2)"),
    runtime.repeat_bar: ("x", "runtime.repeat_bar(np.repeat(x, 2) * x[0], x, 2)"),
    runtime.diag_bar: ("x, A", "runtime.diag_bar(x, A) + runtime.diag_bar(A * A, x)[0]"),
    runtime.hstack_bar: ("x, y", "runtime.hstack_bar(np.hstack((x, y)) * x[0], (x, y))"),
    runtime.vstack_bar: ("x, A", "runtime.vstack_bar(np.vstack((A, x)) * x[0], (A, x))"),
    runtime.pad_bar: ("x, A", "runtime.pad_bar(np.pad(A * A, 1) * 2.0, A, 1) + runtime.pad_bar(np.pad(x * x, (2, 0)), x, (2, 0))"),
    runtime.pad_constant_bar: ("x, A", "runtime.pad_constant_bar(np.pad(A * A, 1), A, 1, 0.5) * x"),
    runtime.partition_dot: ("x, A", "runtime.partition_dot(A * A, A, 1, 0) + runtime.partition_dot(x, x * x, (0, 2))"),
    runtime.partition_bar: ("x, A", "runtime.partition_bar(A * A, A, 1, 0) + runtime.partition_bar(x * x, x, 1, None)"),
    runtime.select_bar: ("x, A, s", "g, h = runtime.select_bar(A * A, (A > 1.0, A < 0.15), (A, x))\n    return g + h * s"),
    runtime.select_default_bar: ("x, A", "runtime.select_default_bar(A * A, (A > 1.0, A < 0.15), x)"),
    runtime.column_stack_bar: ("x, A", "runtime.column_stack_bar(np.column_stack((x, A)) * x[0], (x, A))"),
    runtime.masked: ("x, A", "np.sum(runtime.masked(x * x, x > 0.4)) + runtime.masked(A * A, A > 1.0)[:2]"),
    runtime.masked_bar: ("x", "runtime.masked_bar(x * x, x, x > 0.0) + runtime.masked_bar(x[:1] * 2.0, x, x >= x[2])"),
    runtime.dstack_bar: ("x, A", "runtime.dstack_bar(np.dstack((A, x * A)) * x[0], (A, A))[1]"),
    runtime.append_bar_arr: ("x, A", "runtime.append_bar_arr(np.ravel(A[:2] * A[2]), x, A[0])"
                                     " + runtime.append_bar_arr(A * x, A[:, :1], x, 1)[:, 0]"),
    runtime.append_bar_values: ("x, A", "runtime.append_bar_values(np.ravel(A[:2] * A[2]), x, A[0])"
                                        " + runtime.append_bar_values(A * x, A[:1], A[1:], 0)[0]"),
    runtime.astype_bar: ("x, y", "runtime.astype_bar(x * y, y)"),
    runtime.concatenate_bar: ("x, y", "runtime.concatenate_bar(np.concatenate((x, y)) * 2.0, (x, y), 0)"),
    runtime.stack_bar: ("x, y", "runtime.stack_bar(np.stack((x, y)) * 2.0, (x, y), 0)"),
    runtime.array_bar: ("x", "runtime.array_bar(x * 2.0, x)"),
    runtime.unpack_bar: ("x", "runtime.unpack_bar((x[0] * x[1], x[2] * 2.0, x[0]), x)"),
    runtime.norm_bar: ("s, x", "runtime.norm_bar(s, np.linalg.norm(x), x)"),
    runtime.solve_bar_a: ("x, y", "runtime.solve_bar_a(x, y)"),
    runtime.as_columns: ("x, A", "S = np.stack([A, 2.0 * A])\n    return np.sum(runtime.as_columns(x, S, x) * S[:, :, :1])"),
    runtime.from_columns: ("x, A", "S = np.stack([A, 2.0 * A])\n    return np.sum(runtime.from_columns(S[:, :, :1], S, x) * x)"),
    runtime.tensordot_bar_a: ("A, x", "runtime.tensordot_bar_a(A[0] * x, A, x, 1)"),
    runtime.tensordot_bar_b: ("A, x", "runtime.tensordot_bar_b(A[0] * x, A, x, ((1,), (0,)))"),
    runtime.kron_bar_a: ("x, y", "runtime.kron_bar_a(np.kron(x, y) * x[0], x, y)"),
    runtime.kron_bar_b: ("x, y", "runtime.kron_bar_b(np.kron(x, y) * x[0], x, y)"),
    runtime.lower_half: ("A", "runtime.lower_half(A)"),
    runtime.lower_symmetric: ("A", "runtime.lower_symmetric(A)"),
    runtime.lower_symmetric_bar: ("A", "runtime.lower_symmetric_bar(A)"),
    runtime.matrix_diagonal: ("A", "runtime.matrix_diagonal(A)"),
    runtime.diagonal_matrix: ("x", "runtime.diagonal_matrix(x)"),
    runtime.eigen_quotient: ("x, A", "runtime.eigen_quotient(x * np.array([1.0, 2.0, 3.0]), A)"),
    runtime.strict_lower: ("A", "runtime.strict_lower(A)"),
    runtime.qr_inner_bar: ("A", "runtime.qr_inner_bar(A)"),
    runtime.right_solve: ("x, A", "runtime.right_solve(np.outer(x, x), A)"),
    runtime.matrix_trace: ("A", "runtime.matrix_trace(A)"),
    runtime.matrix_trace_bar: ("s, A", "runtime.matrix_trace_bar(s, A)"),
    runtime.per_matrix: ("x", "runtime.per_matrix(x)"),
    runtime.per_matrix_bar: ("x", "runtime.per_matrix_bar(runtime.per_matrix(x) * 2.0, x)"),
    runtime.tree_add: ("x, y", "runtime.tree_add(x, y)"),
    runtime.pop_adjoint: ("x, y", "r = runtime.pop_adjoint(x * y)\n    t = runtime.pop_adjoint([x[0] * y[0], x[1], x[2]])"
                                  "\n    return r[1] * r[0] + t[0] * t[1][1]"),
    runtime.add_at: ("x, s", "runtime.add_at(runtime.copy(x), 1, s)"),
    runtime.add_attr: ("p, s", "runtime.add_attr(p, 'a', s)"),
    runtime.take: ("x", "runtime.take(x, 1)"),
    runtime.new_tape: ("x", "t = runtime.new_tape(x, 2)\n    return x"),
    # helpers of vectorised batching (python backend)
    runtime.lift: ("x", "runtime.lift(x)"),
    runtime.batch_broadcast: ("x", "runtime.batch_broadcast(x, 2)"),
    runtime.batched_product: ("A", "runtime.batched_product('inner', A, A * 2.0, True, True)"),
    runtime.batched_transpose: ("A", "runtime.batched_transpose(A, None)"),
    runtime.batched_reshape: ("A", "runtime.batched_reshape(A, (3,))"),
    runtime.batch_example: ("x, y", "runtime.batch_example(x, y)"),
    # statistics
    np.quantile: ("x, A", "np.quantile(x, 0.3) * x + np.sum(np.quantile(A, 0.6, axis=0) ** 2)"),
    runtime.quantile: ("A", "runtime.quantile(A, 0.3, 1, keepdims=True) * A"),
    np.percentile: ("x, A", "np.percentile(x, 30.0) * x + np.sum(np.percentile(A, 75, axis=1) ** 2)"),
    runtime.percentile: ("A", "runtime.percentile(A, 40.0, 0) ** 2"),
    np.median: ("x, A", "np.median(x) * x + np.sum(np.median(A, axis=1, keepdims=True) * A)"),
    runtime.median: ("A", "runtime.median(A, 0) ** 2"),
    np.nansum: ("x, A", "np.nansum(x) * x + np.sum(np.nansum(A, axis=0) ** 2)"),
    runtime.nansum: ("A", "runtime.nansum(A, 1, keepdims=True) * A"),
    np.nanmean: ("x, A", "np.nanmean(x) * x + np.sum(np.nanmean(A, axis=0) ** 2)"),
    runtime.nanmean: ("A", "runtime.nanmean(A, 1) ** 2"),
    np.nan_to_num: ("x", "np.nan_to_num(x) * x"),
    np.ptp: ("x, A", "np.ptp(x) * x + np.sum(np.ptp(A, axis=0) ** 2)"),
    runtime.ptp: ("A", "runtime.ptp(A, 1, keepdims=True) * A"),
    np.average: ("x, y, A", "np.average(x, weights=y) * x + np.sum(np.average(A, 1, x) ** 2) + np.average(A)"),
    runtime.average: ("A, x", "runtime.average(A, 0, x * x) ** 2"),
    runtime.average_weights: ("A, x", "runtime.average_weights(A, x, 1) * A"),
    runtime.average_weights_bar: ("A, x", "runtime.average_weights_bar(A * A, A, x, 0) * x"),
    np.convolve: ("x, y", "np.sum(np.convolve(x, y * x) ** 2) + np.convolve(x, y[:2], 'same') @ y + np.sum(np.convolve(y[:2], x, 'valid'))"),
    np.correlate: ("x, y", "np.correlate(x, y * x) ** 2 + np.correlate(x[:2], y, 'same') @ y + np.sum(np.correlate(x, y[:2], 'full') ** 2)"),
    runtime.convolve: ("x, y", "runtime.convolve(x, y[:2], 'same') @ y"),
    runtime.correlate: ("x, y", "runtime.correlate(x[:2], y, 'full') @ np.concatenate((x, y[:1]))"),
    runtime.convolve_bar: ("x, y", "runtime.convolve_bar(x * y, y[:2], x, 'same') @ y[:2]"),
    runtime.correlate_bar_a: ("x, y", "runtime.correlate_bar_a(x * y, y[:2], x * x, 'same') @ x[:2]"),
    runtime.correlate_bar_v: ("x, y", "runtime.correlate_bar_v(x * y, y[:2], x * x, 'same') @ y"),
    np.linspace: ("s, t", "np.sum(np.sin(np.linspace(s, t * t, 5)) * np.arange(5.0))"),
    np.cov: ("x, A", "np.cov(x * x) * np.sum(np.cov(A) * A) + np.sum(np.cov(A, rowvar=False, bias=True) ** 2)"),
    np.corrcoef: ("x, y, A", "np.sum(np.corrcoef(A) * A) + np.corrcoef(np.stack((x, y * x)))[0, 1] + np.corrcoef(x)"),
    runtime.cov_centered: ("A", "np.sum(runtime.cov_centered(A * A, False) * A)"),
    runtime.cov_centered_bar: ("x, A", "np.sum(runtime.cov_centered_bar(A * A, A, True) * A) + x[0]"),
    runtime.cov_result: ("x, A", "np.sum(runtime.cov_result(A * A, A) * A) + runtime.cov_result(A[:1, :1] * x[0], x)"),
    runtime.cov_square: ("x, A", "np.sum(runtime.cov_square(A * x, A) * A) + np.sum(runtime.cov_square(x[0] * x[1], A[:1]))"),
    np.split: ("x, A", "a, b, c = np.split(x * x, 3)\n    p, q = np.split(A, [1], axis=1)\n"
                       "    return a * b + c * x + np.sum(p * q, axis=1) + np.split(A * x, 3, axis=-1)[2][:, 0]"),
    np.array_split: ("x, y", "a, b = np.array_split(x * y, 2)\n    return np.sum(a ** 2) * x + b[0] * y"),
    np.hsplit: ("x, A", "p, q = np.hsplit(A * A, [2])\n    return np.sum(p, axis=1) * q[:, 0] + np.hsplit(x, 3)[1] * x"),
    np.vsplit: ("A", "p, q = np.vsplit(A, [2])\n    return np.sum(p * p, axis=0) * q[0]"),
    np.dsplit: ("A", "p, q = np.dsplit(np.reshape(A * A, (1, 3, 3)), [1])\n    return p[0, :, 0] * np.sum(q[0], axis=1)"),
    runtime.split_bar: ("x, A", "runtime.split_bar((x * x, A[0] * x), np.zeros(6), 0)[1:4] * x"
                                " + np.sum(runtime.split_bar([A * A, A[:, :1]], np.zeros((3, 4)), None), axis=1)"),
    np.meshgrid: ("x, y", "g, h = np.meshgrid(x, y * y)\n    p, q = np.meshgrid(x * x, y[:2], indexing='ij')"
                          "\n    return np.sum(np.sin(g) * h) + np.sum(p * q * q)"),
    runtime.meshgrid: ("x, y", "g, h = runtime.meshgrid(x, y[:2], indexing='ij')\n    return np.sum(g * g * h)"),
    runtime.meshgrid_spread: ("x, A", "np.sum(runtime.meshgrid_spread(x * x, A, 1, 'xy') * A)"),
    runtime.meshgrid_bar: ("x, A", "runtime.meshgrid_bar(A * A, x, 0, 'ij') * x"),
    np.take: ("x, A", "np.take(x, np.array([0, 2, 2])) * x + np.sum(np.take(A, np.array([1, 0]), axis=1) ** 2)"),
    runtime.take_axis: ("A", "runtime.take_axis(A, np.array([2, 2, 0]), axis=0) ** 2"),
    runtime.take_bar: ("x, A", "runtime.take_bar(x * x, A, np.array([1, 1, 2]), 1)"),
    # s2s.lax's dynamic slices (the runtime helpers themselves), starts clamped as JAX's: 5 is 3 - size
    runtime.dynamic_slice: ("A", "runtime.dynamic_slice(A * A, (1, 5), (2, 2))"),
    runtime.dynamic_update_slice: ("x, A", "runtime.dynamic_update_slice(A * A, np.outer(x, x)[1:], (4, 0))"),
    runtime.dynamic_slice_in_dim: ("A", "runtime.dynamic_slice_in_dim(A * A, 2, 2, axis=1)"),
    runtime.dynamic_update_slice_in_dim: ("x, A",
                                          "runtime.dynamic_update_slice_in_dim(A * A, np.outer(x, x)[:2], 1, 0)"),
    runtime.dynamic_index_in_dim: ("A", "runtime.dynamic_index_in_dim(A * A, 1, 1, False) * A[0]"),
    runtime.dynamic_update_index_in_dim: ("x, A", "runtime.dynamic_update_index_in_dim(A * A, x * x, -1, 1)"),
    runtime.dynamic_index_bar: ("x, A", "runtime.dynamic_index_bar(x * x, A, 2, 0, False)"),
    runtime.dynamic_update_index_bar: ("x, A", "runtime.dynamic_update_index_bar(A * A, x, 1, 0)"),
    # np.add.at(a, indices, values) is written a = runtime.scatter_add(a, indices, values); repeated indices
    runtime.scatter_add: ("x, s, A", "y = A * x\n    np.add.at(y, np.array([0, 2, 0, 0]), np.vstack((A, x)) * s)"
                                     "\n    z = x * 1.0\n    np.add.at(z, np.array([1, 1]), s * s)"
                                     "\n    np.add.at(z, 2, x[0])\n    return np.sum(y * y, axis=0) + z"),
    np.bincount: ("x, y", "np.bincount(np.array([2, 0, 2]), weights=x * y, minlength=4)[1:]"
                          " + np.bincount(np.array([1, 1, 0]), x)[0] * y"),
    np.heaviside: ("x, s", "np.heaviside(x - 0.5, s) * x + np.heaviside(x * 0.0, s * s)"),
    runtime.heaviside: ("x, s", "runtime.heaviside(x * 0.0, s) * x"),
    np.angle: ("x, A", "np.angle(x - 0.5) * x + np.sum(np.angle(0.5 - A, deg=True) * A, axis=0) + np.angle(x[0] * 0.0)"),
    np.sinc: ("x", "np.sinc(x)"),
    runtime.sinc_slope: ("x", "runtime.sinc_slope(x - 0.5)"),
    np.cross: ("x, y, A", "np.cross(x, y) + np.sum(np.cross(A, y) ** 2) + np.cross(A, A * A, axis=0)[0]"
                          " + np.cross(A, x * A, axisa=0, axisb=1, axisc=0)[1]"),
    # of real data: real and conj are the identity, imag zeros
    np.real: ("x, A", "np.real(x) * x + A.real @ x + np.sum(A.imag) + np.imag(x) * x"),
    np.real_if_close: ("x", "np.real_if_close(x * x, tol=1000) + np.real_if_close(x)"),
    runtime.real_if_close: ("x", "runtime.real_if_close(x * x)"),
    np.conjugate: ("x, A", "np.conj(x) * x + A.conj() @ x.conjugate()"),
    np.trapezoid: ("x, A", "np.trapezoid(x * x, np.array([0.0, 0.4, 1.1])) + np.sum(np.trapezoid(A, dx=0.5, axis=0) ** 2)"),
    runtime.trapezoid: ("A", "runtime.trapezoid(A ** 2, None, 0.3, 0)"),
    np.gradient: ("x, A", "gy, gx = np.gradient(A * A)\n"
                          "    return np.gradient(x * x, 0.5) * x + np.sum(gy * gx, axis=0) + np.gradient(A, axis=-1)[0]"),
    runtime.gradient: ("x, A", "runtime.gradient(x) ** 2 + runtime.gradient(A * A, 1.0, 0)[1]"),
    runtime.gradient_bar: ("x, y, A", "runtime.gradient_bar(x * y, y, 2.0) + runtime.gradient_bar((A * A, A), A, 1.0)[0]"),
    # scipy.special, as users spell it (the rules are the runtime helpers' it is written as)
    runtime.expit: ("x, s", "scipy.special.expit(x * 4.0 - 2.0) + scipy.special.expit(s)"),
    runtime.logit: ("x", "scipy.special.logit(x)"),
    runtime.erf: ("x, s", "scipy.special.erf(x) * scipy.special.erf(s)"),
    runtime.erfc: ("x", "scipy.special.erfc(x * 2.0 - 1.0)"),
    runtime.erfinv: ("x", "scipy.special.erfinv(x * 1.2 - 0.3)"),
    runtime.ndtr: ("x", "scipy.special.ndtr(x * 3.0 - 1.5)"),
    runtime.log_ndtr: ("x", "scipy.special.log_ndtr(x * 4.0 - 2.5)"),
    runtime.ndtri: ("x", "scipy.special.ndtri(x)"),
    runtime.gammaln: ("y, t", "scipy.special.gammaln(y * 2.0 - 1.5) + scipy.special.gammaln(t)"),
    runtime.digamma: ("y", "scipy.special.digamma(y - 0.7)"),
    runtime.gamma: ("y", "scipy.special.gamma(y * 2.0 - 1.5)"),
    runtime.polygamma: ("y", "scipy.special.polygamma(1, y) + runtime.polygamma(2, y - 0.6)"),
    runtime.erfcinv: ("x", "scipy.special.erfcinv(x * 1.5)"),
    runtime.loggamma: ("y", "scipy.special.loggamma(y * 2.0)"),
    runtime.rgamma: ("y", "scipy.special.rgamma(y * 2.0 - 1.5)"),
    runtime.entr: ("x", "scipy.special.entr(x)"),
    runtime.j0: ("x", "scipy.special.j0(x * 3.0)"),
    runtime.j1: ("x", "scipy.special.j1(x * 3.0 - 1.0)"),
    runtime.y0: ("y", "scipy.special.y0(y)"),
    runtime.y1: ("y", "scipy.special.y1(y * 2.0)"),
    runtime.i0: ("x", "scipy.special.i0(x * 3.0 - 1.5)"),
    runtime.i1: ("x", "scipy.special.i1(x * 3.0 - 1.5)"),
    runtime.i0e: ("x", "scipy.special.i0e(x * 3.0 - 1.5)"),
    runtime.i1e: ("x", "scipy.special.i1e(x * 3.0 - 1.5)"),
    # (the orders are constants: their derivatives have no closed form, and a varied one is refused)
    runtime.jv: ("x", "scipy.special.jv(1.5, x * 3.0) + scipy.special.jn(2, x - 0.5)"),
    runtime.yv: ("y", "scipy.special.yv(0.5, y * 2.0)"),
    runtime.yn: ("y", "scipy.special.yn(2, y * 2.0)"),
    runtime.iv: ("x", "scipy.special.iv(2.5, x * 2.0) + scipy.special.iv(1, x * 2.0 - 1.0)"),
    runtime.ive: ("x", "scipy.special.ive(1.0, x * 3.0 - 1.5) + scipy.special.ive(0.5, x)"),
    runtime.beta: ("x, y", "scipy.special.beta(x, y) + scipy.special.beta(y, x * 2.0)"),
    runtime.multigammaln: ("y", "scipy.special.multigammaln(y + 1.0, 3) + scipy.special.multigammaln(y[0] * 2.0, 1)"),
    runtime.multipolygamma: ("y", "runtime.multipolygamma(0, y + 1.0, 2) + runtime.multipolygamma(1, y, 3)"),
    runtime.xlogy: ("x, y, s", "scipy.special.xlogy(x, y) + scipy.special.xlogy(s, x)"),
    runtime.xlog1py: ("x, y", "scipy.special.xlog1py(x, y - 1.0) * y"),
    runtime.betaln: ("x, y, t", "scipy.special.betaln(x, y) + scipy.special.betaln(t, x)"),
    # (the shapes a, b, df are constants: their derivatives have no closed form, and a varied one is refused)
    runtime.gammainc: ("x, y", "scipy.special.gammainc(2.5, y) * x + scipy.special.gammainc(0.7, x * 2.0)"),
    runtime.gammaincc: ("x, y", "scipy.special.gammaincc(1.5, y * x) + scipy.special.gammaincc(3.0, y)"),
    runtime.betainc: ("x", "scipy.special.betainc(2.0, 3.5, x) + scipy.special.betainc(0.6, 1.4, x * x)"),
    runtime.stdtr: ("x, s", "scipy.special.stdtr(4.0, x - s) + scipy.special.stdtr(1.5, x * 3.0)"),
    runtime.logsumexp: ("x, A", "scipy.special.logsumexp(A, axis=0) * x + scipy.special.logsumexp(x * 3.0)"
                                " + np.sum(scipy.special.logsumexp(A * A, 1, keepdims=True) * A)"),
    LOGSUMEXP_SCALED: ("x, y, A", "scipy.special.logsumexp(A, axis=1, b=y) * x"
                                          " + scipy.special.logsumexp(x, b=x * y)"),
    runtime.softmax: ("x, A", "scipy.special.softmax(A * 2.0, axis=1) * x + scipy.special.softmax(A, axis=0) * A"
                              " + np.sum(scipy.special.softmax(x * 3.0))"),
    runtime.log_softmax: ("x, A", "scipy.special.log_softmax(A * 2.0, axis=0) * x"
                                  " + np.sum(scipy.special.log_softmax(A) * A)"),
    # scipy.linalg, as users spell it; A[::-1] is factored with row swaps (lu_factor's pivots)
    runtime.solve_triangular: ("A, x", "scipy.linalg.solve_triangular(A, x, lower=True) + scipy.linalg.solve_triangular("
                                       "A, np.outer(x, x) + A, trans='T', unit_diagonal=True)[0]"),
    runtime.cholesky: ("A", "scipy.linalg.cholesky(A @ A.T) + scipy.linalg.cholesky(A @ A.T + A, lower=True) * A"),
    runtime.cho_factor: ("A", "np.triu(scipy.linalg.cho_factor(A @ A.T)[0])"),
    runtime.cho_solve: ("A, x", "scipy.linalg.cho_solve(scipy.linalg.cho_factor(A @ A.T, lower=True), x)"
                                " + scipy.linalg.cho_solve((np.triu(A), False), x)"),
    runtime.lu_factor: ("A", "scipy.linalg.lu_factor(A[::-1])[0]"),
    runtime.lu_solve: ("A, x", "scipy.linalg.lu_solve(scipy.linalg.lu_factor(A[::-1]), x)"
                               " + scipy.linalg.lu_solve(scipy.linalg.lu_factor(A), x, trans=1)"),
    runtime.expm: ("A", "scipy.linalg.expm(A * 0.4)"),
    runtime.signal_convolve: ("x, y, A", "np.sum(scipy.signal.convolve(x, y * x) ** 2) + scipy.signal.convolve(x, y[:2], 'same') @ y"
                                         " + np.sum(scipy.signal.convolve(A[:2, :2] * A[1:, 1:], A, mode='valid'))"),
    runtime.signal_convolve_bar1: ("x, y", "runtime.signal_convolve_bar1(x * y, y, x[:2], 'same') @ y"),
    runtime.signal_convolve_bar2: ("x, y", "runtime.signal_convolve_bar2(x[:2] * y[1:], x[:2], y, 'valid') @ y"),
    runtime.det: ("A", "scipy.linalg.det(A) * A + scipy.linalg.det(A @ A.T, check_finite=False)"),
    runtime.inv: ("A", "scipy.linalg.inv(A) * A + scipy.linalg.inv(A @ A.T + A)"),
    runtime.solve_banded: ("A, x", "scipy.linalg.solve_banded((1, 1), A + 3.0, x) @ x"
                                   " + np.sum(scipy.linalg.solve_banded((0, 2), A[::-1] + 1.0, np.outer(x, x), check_finite=False))"),
    runtime.solve_sylvester: ("A, x", "scipy.linalg.solve_sylvester(A, A.T + 1.0, A * x)"),
    runtime.sqrtm: ("A", "scipy.linalg.sqrtm(A @ A.T)"),
    runtime.banded_dense: ("A", "runtime.banded_dense((1, 1), A * A) + runtime.banded_dense((0, 2), A)"),
    runtime.banded_pack: ("A", "runtime.banded_pack(A * A, (1, 1)) @ A[0] + np.sum(runtime.banded_pack(A, (2, 0)))"),
    runtime.triangle: ("A", "runtime.triangle(A * A, True) + runtime.triangle(A, False, True)"),
    runtime.trans_op: ("A", "runtime.trans_op(A * A, 1) + runtime.trans_op(A, 'N') * A"),
    runtime.unit_lower: ("A", "runtime.unit_lower(A * A)"),
    runtime.lu_permute: ("x, A", "runtime.lu_permute(A * A, np.array([2, 1, 2])) + runtime.lu_permute(x, np.array([1, 1, 2]))"),
    runtime.lu_permute_bar: ("x, A", "runtime.lu_permute_bar(A * A, np.array([2, 1, 2]))"
                                     " + runtime.lu_permute_bar(x, np.array([1, 1, 2]))"),
    runtime.frechet_block: ("A", "runtime.frechet_block(A, A * A)"),
    runtime.upper_right: ("A", "runtime.upper_right(np.kron(A[:2, :2], A[1:, 1:]))"),
    runtime.block_diagonal_sum: ("A", "runtime.block_diagonal_sum(np.kron(A[:2, :2], A[1:, 1:]))"),
}


def arity(obj) -> int:
    """How many inputs a rule's template takes without a default (its first parameter is the result)."""
    parameters = rules.lookup(obj).signature.parameters.values()
    return sum(p.default is p.empty for p in parameters) - 1


def example_of(obj) -> tuple[str, str] | None:
    """The example of a rule: its entry in EXAMPLES, or for an elementwise function of one or
    two arguments a call of it (vectors in (0.2, 0.8) and (1.1, 1.9), numbers 0.6 and 1.3)."""
    if obj in EXAMPLES:
        return EXAMPLES[obj]
    if isinstance(obj, np.ufunc) and obj.nout == 1 and obj.nin in (1, 2):
        params = "x" if obj.nin == 1 else "x, y"
        return params, f"np.{obj.__name__}({params})"
    if getattr(obj, "__module__", None) == "math" and rules.lookup(obj) is not None and arity(obj) in (1, 2):
        params = "s" if arity(obj) == 1 else "s, t"
        return params, f"math.{obj.__name__}({params})"
    return None
