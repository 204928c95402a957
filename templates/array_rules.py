"""Rules for NumPy reductions, linear algebra, shape functions and array creation.

Under a rule, the facts of its functions that the passes read (s2s.rules.Facts): pure,
reduction, view, numba (the runtime helper that Numba needs instead), ..."""

import operator

import numpy as np

from s2s import runtime
from s2s.rules import SAME_SPELLING, Case, nondifferentiable, primitive, refuse_when_active, rule
from s2s.runtime import (
    dynamic_index_bar,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_bar,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    append_bar_arr,
    append_bar_values,
    array_bar,
    linspace_grid,
    linspace_options,
    meshgrid_bar,
    meshgrid_options,
    meshgrid_spread,
    convolve_bar,
    correlate_bar_a,
    correlate_bar_v,
    clip_inside,
    column_stack_bar,
    concatenate_bar,
    dstack_bar,
    fftshift,
    ifftshift,
    irfft,
    irfft_bar,
    irfft_options,
    astype,
    astype_bar,
    cumprod_jvp,
    cumprod_vjp,
    cumsum,
    cumsum_bar,
    diag_bar,
    diagonal_bar,
    diagonal_matrix,
    diff,
    diff_bar,
    flatten,
    flatten_bar,
    flatten_options,
    hstack_bar,
    roll,
    roll_bar,
    rollaxis_bar,
    qr_inner_bar,
    qr_options,
    svd_options,
    full_rank_solution,
    lstsq_residuals,
    residual_weights,
    select,
    select_bar,
    select_default_bar,
    sort_bar,
    sort_dot,
    split_bar,
    tile,
    tile_bar,
    vstack_bar,
    dot_bar_x,
    eigen_quotient,
    real_eigenvalues,
    singular_values,
    dot_bar_y,
    inner_bar_x,
    inner_bar_y,
    interp_bar_fp,
    interp_dot_fp,
    interp_options,
    interp_slope,
    interp_xp_refused,
    matrix_power_options,
    frechet_block,
    upper_right,
    polyder,
    polyval,
    polyval_bar_p,
    repeat,
    repeat_bar,
    kron,
    kron_bar_a,
    kron_bar_b,
    matmul_bar_x,
    matmul_bar_y,
    matrix_diagonal,
    matrix_trace,
    lower_half,
    lower_symmetric,
    lower_symmetric_bar,
    max_bar,
    max_dot,
    mean_bar,
    norm_bar,
    norm_dot,
    norm_options,
    outer_bar_x,
    outer_bar_y,
    pad,
    pad_bar,
    pad_constant_bar,
    pad_options,
    partition_bar,
    partition_dot,
    per_matrix,
    prod_bar,
    prod_dot,
    reshape_bar,
    right_solve,
    as_columns,
    from_columns,
    solve_bar_a,
    stack_bar,
    strict_lower,
    half_over,
    std_bar,
    sum_bar,
    tensordot,
    tensordot_bar_a,
    tensordot_bar_b,
    trace_bar,
    transpose_bar,
    unbroadcast,
    var_bar,
    var_dot,
    zeros_like,
)
from s2s.runtime.statistics import (
    gradient_bar,
    gradient_options,
    trapezoid_weights,
    trapezoid_x_refused,
    cross_options,
    sinc_slope,
    take_axis,
    take_bar,
    scatter_add,
    average_options,
    average_weights,
    corrcoef_gram_bar,
    corrcoef_options,
    corrcoef_scales,
    corrcoef_tangent,
    cov_centered,
    cov_centered_bar,
    cov_options,
    cov_result,
    cov_scale,
    cov_square,
    average_weights_bar,
    nan_reduction_options,
    quantile_options,
    quantile_q_refused,
    quantile_weights,
)

# ---- reductions -------------------------------------------------------------------
# Generated code calls runtime.reduce_<name> where a reduction takes an axis, keepdims or
# ddof (numba= below, codegen/numba_routes.py); reading generated code again (second order) meets those.


@rule(np.sum, runtime.reduce_sum, pure=True)
@primitive(np.sum, reduction=True, numba=runtime.reduce_sum, method="sum", dtype_casts="input", linear="all")
def sum(y, x, axis=None, keepdims=False):
    y_dot = np.sum(x_dot, axis=axis, keepdims=keepdims)
    x_bar += sum_bar(y_bar, x, axis, keepdims)


@rule(np.mean, runtime.reduce_mean, pure=True)
@primitive(np.mean, reduction=True, numba=runtime.reduce_mean, method="mean", dtype_casts="input", linear="all")
def mean(y, x, axis=None, keepdims=False):
    y_dot = np.mean(x_dot, axis=axis, keepdims=keepdims)
    x_bar += mean_bar(y_bar, x, axis, keepdims)


@rule(np.max, np.amax, np.min, np.amin, runtime.reduce_max, runtime.reduce_min, pure=True)
@primitive(np.max, np.amax, reduction=True, numba=runtime.reduce_max)
@primitive(np.max, method="max")
@primitive(np.min, np.amin, reduction=True, numba=runtime.reduce_min)
@primitive(np.min, method="min")
def max(y, x, axis=None, keepdims=False):
    """Ties share the derivative equally, as in JAX."""
    y_dot = max_dot(x_dot, y, x, axis, keepdims)
    x_bar += max_bar(y_bar, y, x, axis, keepdims)


@rule(np.prod, runtime.reduce_prod, pure=True)
@primitive(np.prod, reduction=True, numba=runtime.reduce_prod, method="prod", dtype_casts="input")
def prod(y, x, axis=None, keepdims=False):
    y_dot = prod_dot(x_dot, y, x, axis, keepdims)
    x_bar += prod_bar(y_bar, y, x, axis, keepdims)


@rule(np.var, runtime.reduce_var, pure=True)
@primitive(np.var, reduction=True, numba=runtime.reduce_var, method="var")
def var(y, x, axis=None, ddof=0, keepdims=False):
    y_dot = var_dot(x_dot, x, axis, ddof, keepdims)
    x_bar += var_bar(y_bar, x, axis, ddof, keepdims)


@rule(np.std, runtime.reduce_std, pure=True)
@primitive(np.std, reduction=True, numba=runtime.reduce_std, method="std")
def std(y, x, axis=None, ddof=0, keepdims=False):
    y_dot = var_dot(x_dot, x, axis, ddof, keepdims) * half_over(y)
    x_bar += std_bar(y_bar, y, x, axis, ddof, keepdims)


# ---- products ---------------------------------------------------------------------


@rule(np.inner, runtime.inner, pure=True)
@primitive(np.inner, numba=runtime.inner, numba_always=True, product="inner", linear="each", operands=(0, 1),
           batching="product")
def inner(z, x, y):
    """np.inner contracts the last axes: the same as np.dot for vectors only."""
    z_dot = np.inner(x_dot, y) + np.inner(x, y_dot)
    x_bar += inner_bar_x(z_bar, x, y)
    y_bar += inner_bar_y(z_bar, x, y)


@rule(np.dot, pure=True, method="dot", product="dot", linear="each", operands=(0, 1), batching="product")
def dot(z, x, y):
    z_dot = np.dot(x_dot, y) + np.dot(x, y_dot)
    x_bar += dot_bar_x(z_bar, x, y)
    y_bar += dot_bar_y(z_bar, x, y)


@rule(operator.matmul, np.matmul, pure=True, product="matmul", linear="each", batching="product")
@primitive(np.matmul, operands=(0, 1), lowered_to=operator.matmul)  # (Numba compiles `@`, not np.matmul)
def matmul(z, x, y):
    z_dot = x_dot @ y + x @ y_dot
    x_bar += matmul_bar_x(z_bar, x, y)
    y_bar += matmul_bar_y(z_bar, x, y)


@rule(np.outer, pure=True, product="outer", linear="each", operands=(0, 1), batching="product")
def outer(z, x, y):
    z_dot = np.outer(x_dot, y) + np.outer(x, y_dot)
    x_bar += outer_bar_x(z_bar, x, y)
    y_bar += outer_bar_y(z_bar, x, y)


# Numba lacks np.tensordot: under Numba generated code calls runtime.tensordot (overloads/linalg.py).
@rule(np.tensordot, runtime.tensordot, pure=True, fresh=True)
@primitive(np.tensordot, numba=runtime.tensordot, numba_always=True, linear="each")
def tensordot_(z, a, b, axes=2):
    """axes: an int or a pair of axis sequences, as NumPy takes them."""
    z_dot = tensordot(a_dot, b, axes) + tensordot(a, b_dot, axes)
    a_bar += tensordot_bar_a(z_bar, a, b, axes)
    b_bar += tensordot_bar_b(z_bar, a, b, axes)


# Numba's np.kron takes contiguous arrays only: under Numba, runtime.kron (overloads/linalg.py).
@rule(np.kron, runtime.kron, pure=True, fresh=True)
@primitive(np.kron, numba=runtime.kron, numba_always=True, linear="each", operands=(0, 1))
def kron_(z, a, b):
    """Of arrays of any ndim (under s2s.jit: two 1-d or two 2-d arrays)."""
    z_dot = kron(a_dot, b) + kron(a, b_dot)
    a_bar += kron_bar_a(z_bar, a, b)
    b_bar += kron_bar_b(z_bar, a, b)


# Numba's np.trace takes an offset only, of a matrix: runtime.trace under Numba where more is written.
@rule(np.trace, runtime.trace, pure=True, linear="all")
@primitive(np.trace, method="trace", numba=runtime.trace)
def trace(y, x, offset=0, axis1=0, axis2=1):
    """The sum of a diagonal (of a stack of matrices, along axis1 and axis2, one per matrix)."""
    y_dot = np.trace(x_dot, offset=offset, axis1=axis1, axis2=axis2)
    x_bar += trace_bar(y_bar, x, offset, axis1, axis2)


# Numba lacks np.diagonal: under Numba generated code calls runtime.diagonal.
@rule(np.diagonal, runtime.diagonal, pure=True, linear="all", dtype_from=(0,))
@primitive(np.diagonal, view=True, numba=runtime.diagonal, numba_always=True, method="diagonal")
@primitive(runtime.diagonal, fresh=True)
def diagonal_(y, x, offset=0, axis1=0, axis2=1):
    """A view of a diagonal (the last axis of the result); the adjoint puts it back on zeros."""
    y_dot = np.diagonal(x_dot, offset=offset, axis1=axis1, axis2=axis2)
    x_bar += diagonal_bar(y_bar, x, offset, axis1, axis2)


# ---- shapes -----------------------------------------------------------------------


@rule(np.transpose, pure=True, view=True, method="transpose", dtype_from=(0,), batching="transpose")
def transpose(y, x, axes=None):
    y_dot = np.transpose(x_dot, axes)
    x_bar += transpose_bar(y_bar, axes)


@rule(np.reshape, runtime.reshape, pure=True, view=True, dtype_from=(0,), batching="reshape")
@primitive(np.reshape, method="reshape", numba=runtime.reshape, numba_always=True)
def reshape(y, x, shape):
    y_dot = np.reshape(x_dot, shape)
    x_bar += reshape_bar(y_bar, x)


@rule(np.ravel, view=True, method="ravel", dtype_from=(0,), batching="reshape")
def ravel(y, x):
    y_dot = np.ravel(x_dot)
    x_bar += reshape_bar(y_bar, x)


@rule(np.squeeze, runtime.squeeze)
@primitive(np.squeeze, view=True, numba=runtime.squeeze, numba_always=True, method="squeeze", dtype_from=(0,))
@primitive(runtime.squeeze, pure=True)
def squeeze(y, x, axis=None):
    y_dot = np.squeeze(x_dot, axis)
    x_bar += reshape_bar(y_bar, x)


@rule(np.swapaxes, pure=True, view=True, method="swapaxes")
def swapaxes(y, x, axis1, axis2):
    y_dot = np.swapaxes(x_dot, axis1, axis2)
    x_bar += np.swapaxes(y_bar, axis1, axis2)


@rule(np.moveaxis, pure=True, view=True)
def moveaxis(y, x, source, destination):
    """A transpose: its adjoint moves the axes back (source and destination ints or tuples)."""
    y_dot = np.moveaxis(x_dot, source, destination)
    x_bar += np.moveaxis(y_bar, destination, source)


@rule(np.flip, runtime.flip, pure=True)
@primitive(np.flip, view=True, numba=runtime.flip, dtype_from=(0,), batching="along_every_axis")
@primitive(runtime.flip, fresh=True)
def flip(y, x, axis=None):
    y_dot = np.flip(x_dot, axis)
    x_bar += np.flip(y_bar, axis)


@rule(np.flipud, pure=True, view=True, dtype_from=(0,), broadcasts=True)
def flipud(y, x):
    """np.flip(x, 0), its own adjoint (the batch, last under vmap, is not flipped)."""
    y_dot = np.flipud(x_dot)
    x_bar += np.flipud(y_bar)


@rule(np.fliplr, pure=True, view=True, dtype_from=(0,), broadcasts=True)
def fliplr(y, x):
    """np.flip(x, 1), its own adjoint."""
    y_dot = np.fliplr(x_dot)
    x_bar += np.fliplr(y_bar)


# Numba's np.rot90 takes no axes: under Numba, runtime.rot90 where k or axes are written.
@rule(np.rot90, runtime.rot90, pure=True, view=True, dtype_from=(0,))
@primitive(np.rot90, numba=runtime.rot90)
def rot90(y, x, k=1, axes=(0, 1)):
    """k quarter turns in the plane of axes; the adjoint turns back, -k."""
    y_dot = np.rot90(x_dot, k, axes)
    x_bar += np.rot90(y_bar, -k, axes)


# Numba lacks np.rollaxis: under Numba generated code calls runtime.rollaxis.
@rule(np.rollaxis, runtime.rollaxis, pure=True, view=True, dtype_from=(0,))
@primitive(np.rollaxis, numba=runtime.rollaxis, numba_always=True)
def rollaxis(y, x, axis, start=0):
    """A transpose: the adjoint moves the axis back (runtime.rollaxis_bar)."""
    y_dot = np.rollaxis(x_dot, axis, start)
    x_bar += rollaxis_bar(y_bar, axis, start)


# x.flatten(): np.ravel's rule, but a copy (frontend/expressions.py reads the method's spelling).
@rule(runtime.flatten, pure=True, fresh=True, method="flatten", dtype_from=(0,), options=flatten_options)
def flatten_(y, x, order="C"):
    y_dot = flatten(x_dot, order)
    x_bar += flatten_bar(y_bar, x, order)


@rule(np.cumsum, runtime.cumsum, pure=True, fresh=True)
@primitive(np.cumsum, numba=runtime.cumsum, numba_always=True, method="cumsum", linear="all", batching="along_axis")
def cumsum_(y, x, axis=None):
    y_dot = cumsum(x_dot, axis)
    x_bar += cumsum_bar(y_bar, x, axis)


@rule(np.cumprod, runtime.cumprod, pure=True, fresh=True)
@primitive(np.cumprod, numba=runtime.cumprod, method="cumprod", batching="along_axis")
def cumprod(y, x, axis=None):
    """Derivatives by the recurrence y[k] = y[k-1] * x[k], never dividing by x: exact at zeros."""
    y_dot = cumprod_jvp(x_dot, x, axis)
    x_bar += cumprod_vjp(y_bar, x, axis)


@rule(np.diff, runtime.diff, pure=True, fresh=True)
@primitive(np.diff, numba=runtime.diff, batching="along_axis")
def diff_(y, x, n=1, axis=-1):
    y_dot = diff(x_dot, n, axis)
    x_bar += diff_bar(y_bar, x, n, axis)


@rule(np.roll, runtime.roll, pure=True, fresh=True)
@primitive(np.roll, numba=runtime.roll, dtype_from=(0,), batching="along_axis_in_shape")
def roll_(y, x, shift, axis=None):
    y_dot = roll(x_dot, shift, axis)
    x_bar += roll_bar(y_bar, shift, axis)


@rule(np.sort, runtime.sort, pure=True, fresh=True)
@primitive(np.sort, numba=runtime.sort, dtype_from=(0,), batching="along_axis")
def sort(y, x, axis=-1):
    """The derivative follows the sorting permutation (np.argsort, stable at ties)."""
    y_dot = sort_dot(x_dot, x, axis)
    x_bar += sort_bar(y_bar, x, axis)


# Numba's np.partition takes no axis: runtime.partition, whose permutation (the order within each
# side is the library's choice) is the one its derivatives follow, on both backends.
@rule(np.partition, runtime.partition, pure=True, fresh=True)
@primitive(np.partition, numba=runtime.partition, numba_always=True, dtype_from=(0,), batching="along_axis")
def partition_(y, a, kth, axis=-1, kind="introselect", order=None):
    """As np.sort's: the derivative follows the partitioning permutation (np.argpartition)."""
    y_dot = partition_dot(a_dot, a, kth, axis)
    a_bar += partition_bar(y_bar, a, kth, axis)


@rule(np.tile, runtime.tile, pure=True, fresh=True)
@primitive(np.tile, numba=runtime.tile, numba_always=True)
def tile_(y, x, reps):
    y_dot = tile(x_dot, reps)
    x_bar += tile_bar(y_bar, x, reps)


@rule(np.diag, pure=True, view=True)  # of a matrix, a view of its diagonal
def diag(y, x, k=0):
    """A vector to a matrix with it on the k-th diagonal, or a matrix's k-th diagonal."""
    y_dot = np.diag(x_dot, k)
    x_bar += diag_bar(y_bar, x, k)


@rule(np.tril, pure=True, fresh=True)
def tril(y, x, k=0):
    """Linear: the lower triangle of each matrix (of a vector: of its rows, stacked)."""
    y_dot = np.tril(x_dot, k)
    x_bar += unbroadcast(np.tril(y_bar, k), x)


@rule(np.triu, pure=True, fresh=True)
def triu(y, x, k=0):
    """Linear: the upper triangle of each matrix (of a vector: of its rows, stacked)."""
    y_dot = np.triu(x_dot, k)
    x_bar += unbroadcast(np.triu(y_bar, k), x)


# Numba lacks np.repeat with an axis: under Numba generated code calls runtime.repeat.
@rule(np.repeat, runtime.repeat, pure=True, fresh=True)
@primitive(np.repeat, numba=runtime.repeat, numba_always=True, method="repeat")
def repeat_(y, x, repeats, axis=None):
    """Linear: each element copied repeats times (an int, or one count per element); the
    adjoint sums the copies back."""
    y_dot = repeat(x_dot, repeats, axis)
    x_bar += repeat_bar(y_bar, x, repeats, axis)


# np.atleast_*d of one argument (several give a list, which has no rule). Numba's take an
# array only: under Numba generated code calls runtime.atleast_*d (of a number too).
@rule(np.atleast_1d, runtime.atleast_1d, pure=True, view=True)
@primitive(np.atleast_1d, numba=runtime.atleast_1d, numba_always=True)
def atleast_1d(y, x):
    y_dot = np.atleast_1d(x_dot)
    x_bar += reshape_bar(y_bar, x)


@rule(np.atleast_2d, runtime.atleast_2d, pure=True, view=True)
@primitive(np.atleast_2d, numba=runtime.atleast_2d, numba_always=True)
def atleast_2d(y, x):
    y_dot = np.atleast_2d(x_dot)
    x_bar += reshape_bar(y_bar, x)


@rule(np.atleast_3d, runtime.atleast_3d, pure=True, view=True)
@primitive(np.atleast_3d, numba=runtime.atleast_3d, numba_always=True)
def atleast_3d(y, x):
    y_dot = np.atleast_3d(x_dot)
    x_bar += reshape_bar(y_bar, x)


@rule(runtime.astype, pure=True, fresh=True, broadcasts=True, integer="never")  # (a cast to a float type)
def astype_(y, x, dtype):
    """x.astype(float type) (frontend/expressions.py): the adjoint goes back to x's type."""
    y_dot = astype(x_dot, dtype)
    x_bar += astype_bar(y_bar, x)


@rule(np.expand_dims, view=True, dtype_from=(0,), batching="expand_dims")
def expand_dims(y, x, axis):
    y_dot = np.expand_dims(x_dot, axis)
    x_bar += reshape_bar(y_bar, x)


@rule(np.concatenate, pure=True, batching="join")
def concatenate(y, xs, axis=0):
    y_dot = np.concatenate(xs_dot, axis)
    xs_bar += concatenate_bar(y_bar, xs, axis)


# The split family: a list of views of x, as many as the call asks (known only when it runs where
# the sections are a variable). Each is linear: the tangent splits x's tangent as x is split, and x's
# adjoint joins the pieces' adjoints (runtime.split_bar), which holds for any number of pieces.
@rule(np.broadcast_to, pure=True, view=True, dtype_from=(0,))
def broadcast_to(y, x, shape):
    """x repeated along the axes it broadcasts over: its adjoint sums them back."""
    y_dot = np.broadcast_to(x_dot, shape)
    x_bar += unbroadcast(y_bar, x)


@rule(np.split, pure=True, view=True)
def split(y, x, indices_or_sections, axis=0):
    y_dot = np.split(x_dot, indices_or_sections, axis)
    x_bar += split_bar(y_bar, x, axis)


@rule(np.array_split, pure=True, view=True)
def array_split(y, x, indices_or_sections, axis=0):
    y_dot = np.array_split(x_dot, indices_or_sections, axis)
    x_bar += split_bar(y_bar, x, axis)


@rule(np.hsplit, pure=True, view=True)
def hsplit(y, x, indices_or_sections):
    """Along axis 1, or 0 of a 1-d x (split_bar's axis None)."""
    y_dot = np.hsplit(x_dot, indices_or_sections)
    x_bar += split_bar(y_bar, x, None)


@rule(np.vsplit, pure=True, view=True)
def vsplit(y, x, indices_or_sections):
    y_dot = np.vsplit(x_dot, indices_or_sections)
    x_bar += split_bar(y_bar, x, 0)


@rule(np.dsplit, pure=True, view=True)
def dsplit(y, x, indices_or_sections):
    y_dot = np.dsplit(x_dot, indices_or_sections)
    x_bar += split_bar(y_bar, x, 2)


# Numba's np.stack stacks tuples only: runtime.stack under Numba (a list of arrays too), which
# gets the statement's place (`where`: numba_routes.py) to name where it refuses a list.
@rule(np.stack, runtime.stack, pure=True)
@primitive(np.stack, numba=runtime.stack, numba_always=True, batching="join")
def stack(y, xs, axis=0, *, where=None):
    y_dot = np.stack(xs_dot, axis)
    xs_bar += stack_bar(y_bar, xs, axis)


@rule(np.hstack, pure=True, fresh=True)
def hstack(y, xs):
    y_dot = np.hstack(xs_dot)
    xs_bar += hstack_bar(y_bar, xs)


# Numba's np.vstack joins arrays of one ndim only: runtime.vstack under Numba (a 2-d and a 1-d).
@rule(np.vstack, runtime.vstack, pure=True, fresh=True)
@primitive(np.vstack, numba=runtime.vstack, numba_always=True)
def vstack(y, xs):
    y_dot = np.vstack(xs_dot)
    xs_bar += vstack_bar(y_bar, xs)


# np.row_stack, NumPy's deprecated name of np.vstack: its tangent is written with np.vstack.
@rule(np.row_stack, pure=True, fresh=True)
@primitive(np.row_stack, numba=runtime.vstack, numba_always=True)
def row_stack(y, xs):
    y_dot = np.vstack(xs_dot)
    xs_bar += vstack_bar(y_bar, xs)


@rule(np.column_stack, pure=True, fresh=True)
def column_stack(y, xs):
    """np.hstack of the arrays, vectors as columns: the adjoint cuts g's columns back."""
    y_dot = np.column_stack(xs_dot)
    xs_bar += column_stack_bar(y_bar, xs)


@rule(np.dstack, pure=True, fresh=True)
def dstack(y, xs):
    """np.concatenate along axis 2 of the arrays made 3-d: the adjoint cuts g's slices back."""
    y_dot = np.dstack(xs_dot)
    xs_bar += dstack_bar(y_bar, xs)


# np.fft.fftshift and ifftshift permute x (each axis rolled by half its length, forward and back):
# real and linear, each the other's adjoint. Numba has no np.fft: runtime's under Numba.
@rule(np.fft.fftshift, runtime.fftshift, pure=True, fresh=True, linear="all", dtype_from=(0,))
@primitive(np.fft.fftshift, numba=runtime.fftshift, numba_always=True)
def fftshift_(y, x, axes=None):
    y_dot = fftshift(x_dot, axes)
    x_bar += ifftshift(y_bar, axes)


@rule(np.fft.ifftshift, runtime.ifftshift, pure=True, fresh=True, linear="all", dtype_from=(0,))
@primitive(np.fft.ifftshift, numba=runtime.ifftshift, numba_always=True)
def ifftshift_(y, x, axes=None):
    y_dot = ifftshift(x_dot, axes)
    x_bar += fftshift(y_bar, axes)


# np.fft.irfft of real data: a real sum of cosines, linear in the spectrum a; its adjoint is the
# weighted real part of rfft of the cotangent (runtime/functions.py), which refuses a complex a
# when it runs. Numba has no np.fft: runtime's under Numba. (The other transforms' results are
# complex: refused below.)
@rule(np.fft.irfft, runtime.irfft, pure=True, fresh=True, linear="all", integer="never", options=irfft_options,
      batching="along_axis")
@primitive(np.fft.irfft, numba=runtime.irfft, numba_always=True)
def irfft_(y, a, n=None, axis=-1, norm=None, out=None):
    y_dot = irfft(a_dot, n, axis, norm)
    a_bar += irfft_bar(y_bar, a, n, axis, norm)


@rule(np.append, pure=True, fresh=True, linear="all", operands=(0, 1), dtype_from=(0, 1))
def append(y, arr, values, axis=None):
    """np.concatenate of arr and values (both flattened, where axis is None)."""
    y_dot = np.append(arr_dot, values_dot, axis)
    arr_bar += append_bar_arr(y_bar, arr, values, axis)
    values_bar += append_bar_values(y_bar, arr, values, axis)


# Numba lacks np.pad: under Numba generated code calls runtime.pad (mode 'constant' only).
@rule(np.pad, runtime.pad, pure=True, fresh=True, linear="all", options=pad_options, dtype_from=(0,))
@primitive(np.pad, numba=runtime.pad, numba_always=True)
def pad_(y, array, pad_width, mode="constant", constant_values=0.0, stat_length=None, end_values=0.0,
         reflect_type="even"):
    """Mode 'constant' (the others are refused where differentiated: Facts.options, and the helpers
    where the mode is a variable): linear in the array and in the constant, a number (values per
    axis are refused where differentiated: runtime.pad_constant_bar). pad_width in any of its forms."""
    y_dot = pad(array_dot, pad_width, mode, constant_values_dot)
    array_bar += pad_bar(y_bar, array, pad_width, mode)
    constant_values_bar += pad_constant_bar(y_bar, array, pad_width, constant_values)


# Numba's np.select takes a list of arrays and a number as default: runtime.select under Numba.
@rule(np.select, runtime.select, pure=True, fresh=True, linear=(1, 2))
@primitive(np.select, numba=runtime.select, numba_always=True)
def select_(y, condlist, choicelist, default=0):
    """Linear in the choices and the default (the conditions are constants of the derivative):
    each adjoint is y's where that value was picked."""
    y_dot = select(condlist, choicelist_dot, default_dot)
    choicelist_bar += select_bar(y_bar, condlist, choicelist)
    default_bar += select_default_bar(y_bar, condlist, default)


# Numba's np.array builds arrays of sequences and numbers, not of an array: under Numba,
# np.array of anything but a tuple or list (numba_sequences) is runtime.array.
@rule(np.array, np.asarray, runtime.array, pure=True, broadcasts=True)
@primitive(np.asarray, view=True)
@primitive(np.array, np.asarray, dtype_casts="result", dtype_from=(0,), batching="array")
@primitive(np.array, numba=runtime.array, numba_always=True, numba_sequences=True)
@primitive(runtime.array, fresh=True)
def array(y, x, *, where=None):
    y_dot = np.array(x_dot)
    x_bar += array_bar(y_bar, x)


# ---- selection --------------------------------------------------------------------


@rule(np.where, pure=True, broadcasts=True, arity=3, operands=(1, 2), linear=(1, 2), kernel="({1} if {0} else {2})")
def where(z, condition, x, y):
    z_dot = np.where(condition, x_dot, y_dot)
    x_bar += unbroadcast(np.where(condition, z_bar, 0.0), x)
    y_bar += unbroadcast(np.where(condition, 0.0, z_bar), y)


@rule(np.clip, pure=True, broadcasts=True, method="clip", operands=(0, 1, 2), linear=())
def clip(y, a, a_min, a_max):
    """Where a is cut off, the result follows the bound: its tangent is the bound's."""
    y_dot = clip_inside(a, a_min, a_max) * a_dot + (a < a_min) * a_min_dot + (a > a_max) * a_max_dot
    a_bar += unbroadcast(y_bar * clip_inside(a, a_min, a_max), a)
    a_min_bar += unbroadcast(y_bar * (a < a_min), a_min)
    a_max_bar += unbroadcast(y_bar * (a > a_max), a_max)


# ---- polynomials and interpolation ------------------------------------------------


# Numba lacks np.polyval: under Numba generated code calls runtime.polyval (overloads/functions.py).
@rule(np.polyval, runtime.polyval, pure=True, fresh=True)
@primitive(np.polyval, numba=runtime.polyval, numba_always=True)
def polyval_(y, p, x):
    """p a 1-d array of coefficients, highest power first; x a number or an array. In x the
    derivative is p's derivative polynomial at x; in p, the powers of x (linear in p)."""
    y_dot = polyval(p_dot, x) + polyval(polyder(p), x) * x_dot
    p_bar += polyval_bar_p(y_bar, p, x)
    x_bar += unbroadcast(y_bar * polyval(polyder(p), x), x)


@rule(np.interp, pure=True, fresh=True, options=interp_options)
def interp(y, x, xp, fp, left=None, right=None, period=None):
    """With left, right and period at their defaults only (a value for one is refused). In x: the
    slope of the segment x falls in, 0 left of xp[0] and from xp[-1] on. At a knot xp[j] the
    derivative is the slope of the segment to its right, [xp[j], xp[j + 1]]: the piece NumPy
    itself evaluates there (its search takes the last knot <= x). In fp: linear, the two
    interpolation weights. xp is not differentiated: where it depends on a differentiated input
    the call is refused at its line (interp_xp_refused raises, or under Numba does not compile)."""
    y_dot = interp_slope(x, xp, fp, left, right, period) * x_dot + interp_dot_fp(fp_dot, x, xp, left, right, period) \
        + interp_xp_refused(xp_dot)
    x_bar += unbroadcast(y_bar * interp_slope(x, xp, fp, left, right, period), x)
    fp_bar += interp_bar_fp(y_bar, x, xp, fp, left, right, period)
    xp_bar += interp_xp_refused(xp)


# ---- linear algebra ---------------------------------------------------------------


@rule(np.linalg.norm, runtime.linalg_norm, pure=True, options=norm_options)
@primitive(np.linalg.norm, numba=runtime.linalg_norm)
def norm(y, x, ord=None, axis=None, keepdims=False):
    y_dot = norm_dot(x_dot, y, x, ord, axis, keepdims)
    x_bar += norm_bar(y_bar, y, x, ord, axis, keepdims)


@rule(np.linalg.solve)
def solve(x, a, b):
    """a may be a stack of matrices: transposes swap the last two axes only; the leading axes of a
    and of a matrix b broadcast (a (3, 3) b solved with each matrix of a stack). One vector b with a
    stack is solved with each matrix (NumPy 2): its solution, a vector per matrix, is taken as columns
    (as_columns) in the products."""
    x_dot = from_columns(np.linalg.solve(a, as_columns(b_dot, a, b) - a_dot @ as_columns(x, a, b)), a, b)
    b_adjoint = np.linalg.solve(np.swapaxes(a, -1, -2), as_columns(x_bar, a, b))
    b_bar += unbroadcast(from_columns(b_adjoint, a, b), b)
    a_bar -= unbroadcast(solve_bar_a(b_adjoint, as_columns(x, a, b)), a)


@rule(np.linalg.det)
def det(y, a):
    """a may be a stack of matrices, y then holds one determinant per matrix."""
    y_dot = y * matrix_trace(np.linalg.solve(a, a_dot))
    a_bar += per_matrix(y_bar * y) * np.swapaxes(np.linalg.inv(a), -1, -2)


@rule(np.linalg.slogdet)
def slogdet(y, a):
    """y = (sign, log|det a|), per matrix of a stack: the sign is piecewise constant (its
    tangent is zero, no adjoint flows from it); log|det a| has the derivative of log det a."""
    y_dot = (zeros_like(y[0]), matrix_trace(np.linalg.solve(a, a_dot)))
    a_bar += per_matrix(y_bar[1]) * np.swapaxes(np.linalg.inv(a), -1, -2)


@rule(np.linalg.cholesky)
def cholesky(y, a):
    """y = L, lower triangular with L @ L.T = S, where S is the symmetric matrix that a's lower
    triangle stands for: NumPy reads nothing else of a, so a's upper triangle has no derivative
    and the gradient is lower triangular (an entry below the diagonal carries the adjoint of
    both S[i, j] and S[j, i]). For a symmetric a and a symmetric perturbation this is JAX's
    (symmetrised) derivative; a gradient that flows on to what built a symmetric a (X @ X.T)
    is the same either way. Forward and reverse rules of Murray 2016 (arXiv:1602.07527):
    L_dot = L Phi(L^-1 S_dot L^-T), Phi the lower triangle with its diagonal halved."""
    y_t = np.swapaxes(y, -1, -2)
    y_dot = y @ lower_half(np.linalg.solve(y, np.swapaxes(np.linalg.solve(y, lower_symmetric(a_dot)), -1, -2)))
    left = np.linalg.solve(y_t, lower_half(y_t @ y_bar))
    a_bar += lower_symmetric_bar(np.swapaxes(np.linalg.solve(y_t, np.swapaxes(left, -1, -2)), -1, -2))


# Numba's np.linalg.eigh and eigvalsh take no UPLO: runtime.linalg_eigh and _eigvalsh under Numba where it is written.
@rule(np.linalg.eigh, runtime.linalg_eigh)
@primitive(np.linalg.eigh, numba=runtime.linalg_eigh)
def eigh(y, a, UPLO="L"):
    """y = (w, V), a = V diag(w) V.T for the symmetric matrix a's lower triangle stands for (NumPy
    reads nothing else: see cholesky; UPLO="U", the upper one: EIGH_UPPER's rule). JAX's formula:
    w_dot = diag(M), V_dot = V (F * M), with M = V.T a_dot V and F[i, j] = 1 / (w[j] - w[i]). At a
    repeated eigenvalue the eigenvectors are not differentiable (any rotation within its eigenspace
    is as good a result): their derivative there is infinite or NaN, as JAX's. Where nothing reads
    the eigenvectors, eigen_quotient leaves their zero terms out and the eigenvalues' derivative
    stays finite at a repeated eigenvalue: there the sorted eigenvalues have a kink, and it is exact
    for what is differentiable, a symmetric function of them (a sum, a trace); second derivatives
    through eigh are NaN there."""
    v_t = np.swapaxes(y[1], -1, -2)
    m = v_t @ lower_symmetric(a_dot) @ y[1]
    y_dot = (matrix_diagonal(m), y[1] @ eigen_quotient(y[0], m))
    a_bar += lower_symmetric_bar(y[1] @ (diagonal_matrix(y_bar[0]) + eigen_quotient(y[0], v_t @ y_bar[1])) @ v_t)


def _upper(call) -> bool:
    """UPLO="U" (or "u") written in a call of eigh or eigvalsh: NumPy reads a's upper triangle."""
    given = call.constant("UPLO")
    return isinstance(given, str) and given.upper() == "U"


EIGH_UPPER = Case("np.linalg.eigh of the upper triangle", of=(np.linalg.eigh, runtime.linalg_eigh), when=_upper)
EIGVALSH_UPPER = Case("np.linalg.eigvalsh of the upper triangle", of=(np.linalg.eigvalsh, runtime.linalg_eigvalsh),
                      when=_upper)


EIGH_UPLO_UNKNOWN = Case("np.linalg.eigh or eigvalsh with UPLO not a constant",
                         of=(np.linalg.eigh, runtime.linalg_eigh, np.linalg.eigvalsh, runtime.linalg_eigvalsh),
                         when=lambda call: call.passed_variable("UPLO"))


@rule(EIGH_UPPER)
def eigh_upper(y, a, UPLO="L"):
    """eigh's rule for the symmetric matrix a's upper triangle stands for: that of a.T's lower
    one, so the gradient is upper triangular."""
    v_t = np.swapaxes(y[1], -1, -2)
    m = v_t @ lower_symmetric(np.swapaxes(a_dot, -1, -2)) @ y[1]
    y_dot = (matrix_diagonal(m), y[1] @ eigen_quotient(y[0], m))
    a_bar += np.swapaxes(lower_symmetric_bar(
        y[1] @ (diagonal_matrix(y_bar[0]) + eigen_quotient(y[0], v_t @ y_bar[1])) @ v_t), -1, -2)


@rule(np.linalg.eigvalsh, runtime.linalg_eigvalsh)
@primitive(np.linalg.eigvalsh, numba=runtime.linalg_eigvalsh)
def eigvalsh(y, a, UPLO="L"):
    """The eigenvalues of eigh, without F: finite at repeated eigenvalues (see eigh)."""
    v = np.linalg.eigh(a)[1]
    y_dot = matrix_diagonal(np.swapaxes(v, -1, -2) @ lower_symmetric(a_dot) @ v)
    a_bar += lower_symmetric_bar(v @ diagonal_matrix(y_bar) @ np.swapaxes(v, -1, -2))


@rule(EIGVALSH_UPPER)
def eigvalsh_upper(y, a, UPLO="L"):
    """eigvalsh's rule of the upper triangle (see eigh_upper)."""
    v = np.linalg.eigh(a, "U")[1]
    y_dot = matrix_diagonal(np.swapaxes(v, -1, -2) @ lower_symmetric(np.swapaxes(a_dot, -1, -2)) @ v)
    a_bar += np.swapaxes(lower_symmetric_bar(v @ diagonal_matrix(y_bar) @ np.swapaxes(v, -1, -2)), -1, -2)


# Numba's np.linalg.eig raises an error of its own where the eigenvalues are complex: runtime.linalg_eig.
@rule(np.linalg.eig, runtime.linalg_eig)
@primitive(np.linalg.eig, numba=runtime.linalg_eig, numba_always=True)
def eig(y, a):
    """y = (w, V), a = V diag(w) V^-1 with V's columns of unit length, for a real matrix whose
    eigenvalues are real (symmetric, triangular, ...; complex ones are refused when the code runs:
    runtime.real_eigenvalues). With M = V^-1 a_dot V and F as eigh's: w_dot = diag(M) and
    V_dot = P - V diag(V.T P) for P = V (F * M), the last term keeping each column's length 1.
    At a repeated eigenvalue the eigenvectors have no derivative (see eigh)."""
    w = real_eigenvalues(y[0])
    v_t = np.swapaxes(y[1], -1, -2)
    m = np.linalg.solve(y[1], a_dot @ y[1])
    p = y[1] @ eigen_quotient(w, m)
    y_dot = (matrix_diagonal(m), p - y[1] * np.sum(y[1] * p, axis=-2, keepdims=True))
    b = v_t @ y_bar[1]
    c = diagonal_matrix(y_bar[0]) + eigen_quotient(w, b - v_t @ y[1] * np.expand_dims(matrix_diagonal(b), -2))
    a_bar += np.linalg.solve(v_t, c @ v_t)


@rule(np.linalg.eigvals, runtime.linalg_eigvals)
@primitive(np.linalg.eigvals, numba=runtime.linalg_eigvals, numba_always=True)
def eigvals(y, a):
    """eig's eigenvalues alone: w_dot = diag(V^-1 a_dot V), a_bar = V^-T diag(w_bar) V.T. Where the
    eigenvalues are complex so is V, and real_eigenvalues refuses the derivative (under Numba,
    runtime.linalg_eig refuses first)."""
    v = np.linalg.eig(a)[1]
    y_dot = real_eigenvalues(matrix_diagonal(np.linalg.solve(v, a_dot @ v)))
    a_bar += real_eigenvalues(np.linalg.solve(np.swapaxes(v, -1, -2), diagonal_matrix(y_bar) @ np.swapaxes(v, -1, -2)))


@rule(np.linalg.qr, options=qr_options)
def qr(y, a, mode="reduced"):
    """y = (Q, R) of a matrix with at least as many rows as columns and of full rank (R invertible;
    a wide matrix's R is not square: runtime.right_solve raises, naming qr). JAX's forward rule: with
    X = a_dot R^-1, C = Q.T X and D = tril(C, -1) - tril(C, -1).T, Q_dot = Q (D - C) + X and
    R_dot = (C - D) R; the reverse rule is its transpose: with E = Q.T Q_bar - R_bar R.T,
    a_bar = (Q_bar + Q (tril(E - E.T, -1) - E)) R^-T."""
    q_t = np.swapaxes(y[0], -1, -2)
    r_t = np.swapaxes(y[1], -1, -2)
    x = right_solve(a_dot, y[1])
    c = q_t @ x
    d = strict_lower(c) - np.swapaxes(strict_lower(c), -1, -2)
    y_dot = (y[0] @ (d - c) + x, (c - d) @ y[1])
    a_bar += right_solve(y_bar[0] + y[0] @ qr_inner_bar(q_t @ y_bar[0] - y_bar[1] @ r_t), r_t)


# Numba's np.linalg.svd takes no compute_uv: runtime.linalg_svd under Numba where options are written.
@rule(np.linalg.svd, runtime.linalg_svd, options=svd_options)
@primitive(np.linalg.svd, numba=runtime.linalg_svd)
def svd(y, a, full_matrices=True, compute_uv=True, hermitian=False):
    """compute_uv=False: y = s, the singular values of each matrix, descending. With the reduced
    a = U diag(s) V.T: s_dot = diag(U.T a_dot V), a_bar = U diag(s_bar) V.T (Magnus 1985; JAX's
    rule). At a repeated singular value this is the derivative of the sorted values where they
    have one: a symmetric function of them (a sum, a norm) is exact there, as for eigvalsh; at a
    zero singular value s has a kink (as |x| at 0) and this is one of its one-sided slopes.
    With the singular vectors: SVD_VECTORS's rule."""
    usv = np.linalg.svd(a, full_matrices=False)
    y_dot = matrix_diagonal(np.swapaxes(usv[0], -1, -2) @ a_dot @ np.swapaxes(usv[2], -1, -2))
    a_bar += usv[0] @ diagonal_matrix(y_bar) @ usv[2]


SVD_VECTORS = Case("np.linalg.svd with its singular vectors", of=(np.linalg.svd, runtime.linalg_svd),
                   when=lambda call: call.constant("compute_uv", True) is not False)


@rule(SVD_VECTORS)
def svd_vectors(y, a, full_matrices=True, compute_uv=True, hermitian=False):
    """y = (U, s, Vh) of the reduced a = U diag(s) V.T, V = Vh.T (a square matrix, or
    full_matrices=False: runtime.singular_values refuses the others' extra columns), for distinct
    nonzero singular values (where two are equal the vectors have no derivative; at a zero one they
    have none either). With P = U.T a_dot V, F[i, j] = 1 / (s[j]**2 - s[i]**2) (eigen_quotient of
    s**2) and rows s_j = s[None, :], columns s_i = s[:, None]: s_dot = diag(P),
    U_dot = U (F * (P s_j + (P s_j).T)) + (I - U U.T) a_dot V / s_j and
    V_dot = V (F * (s_i P + (s_i P).T)) + (I - V V.T) a_dot.T U / s_j (Townsend 2016; JAX's rule). The
    reverse rule is its transpose: with J = F * (U.T U_bar), K = F * (V.T V_bar),
    a_bar = U (diag(s_bar) + (J + J.T) s_j + s_i (K + K.T)) V.T + (I - U U.T) U_bar / s_j V.T
    + U (V_bar / s_j).T (I - V V.T). Singular vectors have NumPy's signs: a loss that reads them
    should not depend on a sign (u @ diag(s) @ vh, u ** 2)."""
    s = singular_values(y[1], y[0], y[2])
    v = np.swapaxes(y[2], -1, -2)
    u_t = np.swapaxes(y[0], -1, -2)
    s_j = np.expand_dims(s, -2)
    s_i = np.expand_dims(s, -1)
    p = u_t @ a_dot @ v
    a_v = a_dot @ v
    a_u = np.swapaxes(a_dot, -1, -2) @ y[0]
    y_dot = (y[0] @ eigen_quotient(s * s, p * s_j + np.swapaxes(p * s_j, -1, -2)) + (a_v - y[0] @ (u_t @ a_v)) / s_j,
             matrix_diagonal(p),
             np.swapaxes(v @ eigen_quotient(s * s, s_i * p + np.swapaxes(s_i * p, -1, -2))
                         + (a_u - v @ (y[2] @ a_u)) / s_j, -1, -2))
    j = eigen_quotient(s * s, u_t @ y_bar[0])
    v_bar = np.swapaxes(y_bar[2], -1, -2)
    k = eigen_quotient(s * s, y[2] @ v_bar)
    u_bar_s = y_bar[0] / s_j
    v_bar_s = v_bar / s_j
    a_bar += (y[0] @ (diagonal_matrix(y_bar[1]) + (j + np.swapaxes(j, -1, -2)) * s_j
                      + s_i * (k + np.swapaxes(k, -1, -2)) - np.swapaxes(v_bar_s, -1, -2) @ v) @ y[2]
              + (u_bar_s - y[0] @ (u_t @ u_bar_s)) @ y[2] + y[0] @ np.swapaxes(v_bar_s, -1, -2))


# Numba's np.linalg.lstsq takes no rcond=None: runtime.linalg_lstsq under Numba.
@rule(np.linalg.lstsq, runtime.linalg_lstsq)
@primitive(np.linalg.lstsq, numba=runtime.linalg_lstsq)
def lstsq(y, a, b, rcond=None):
    """y = (x, residuals, rank, s) for a of full rank (below it the derivative is refused when the
    code runs: runtime.full_rank_solution). With P = pinv(a) and r = b - a x, Golub and Pereyra's
    x' = P (b' - a' x) + P P.T a'.T r + (I - P a) a'.T P.T x; the residuals, |r|^2 per column
    (empty where m <= n), change by 2 r.(b' - a' x) (a.T r = 0); the rank is piecewise constant,
    and s are a's singular values (svd's rule). Written with pinv, @ and helpers that have rules
    of their own, so that second derivatives follow."""
    x = full_rank_solution(y[0], y[2], a)
    p = np.linalg.pinv(a)
    p_t = np.swapaxes(p, -1, -2)
    r = b - a @ x
    usv = np.linalg.svd(a, full_matrices=False)
    y_dot = (
        p @ (b_dot - a_dot @ x) + p @ (p_t @ (np.swapaxes(a_dot, -1, -2) @ r))
        + np.swapaxes(a_dot, -1, -2) @ (p_t @ x) - p @ (a @ (np.swapaxes(a_dot, -1, -2) @ (p_t @ x))),
        lstsq_residuals(2.0 * np.sum(r * (b_dot - a_dot @ x), axis=0), y[1]),
        zeros_like(y[2]),
        # (zeros of s's shape where a is not differentiated: an item of a tuple tangent)
        matrix_diagonal(np.swapaxes(usv[0], -1, -2) @ a_dot @ np.swapaxes(usv[2], -1, -2)) + zeros_like(y[3]),
    )
    weights = residual_weights(r, y_bar[1])
    a_bar += (-solve_bar_a(p_t @ y_bar[0], x) + solve_bar_a(r, y_bar[0]) @ (p @ p_t)
              + solve_bar_a(p_t @ x, y_bar[0] - np.swapaxes(a, -1, -2) @ (p_t @ y_bar[0]))
              - 2.0 * solve_bar_a(weights, x) + usv[0] @ diagonal_matrix(y_bar[3]) @ usv[2])
    b_bar += p_t @ y_bar[0] + 2.0 * weights


@rule(np.linalg.pinv)
def pinv(y, a):
    """y = a+, where a's rank does not change near a (a matrix of full rank, tall or wide): Golub
    and Pereyra's derivative, -a+ da a+ + a+ a+.T da.T (I - a a+) + (I - a+ a) da.T a+.T a+.
    Where singular values cross NumPy's cutoff (rcond) pinv jumps: no derivative there."""
    y_t = np.swapaxes(y, -1, -2)
    a_dot_t = np.swapaxes(a_dot, -1, -2)
    g_t = np.swapaxes(y_bar, -1, -2)
    y_dot = -(y @ a_dot @ y) + y @ y_t @ (a_dot_t - a_dot_t @ a @ y) + (a_dot_t - y @ a @ a_dot_t) @ y_t @ y
    a_bar += -(y_t @ y_bar @ y_t) + (g_t - a @ y @ g_t) @ y @ y_t + y_t @ y @ (g_t - g_t @ y @ a)


# Numba's np.linalg.matrix_power is typed as an optional array: runtime.matrix_power under Numba.
@rule(np.linalg.matrix_power, runtime.matrix_power, pure=True, fresh=True, options=matrix_power_options)
@primitive(np.linalg.matrix_power, numba=runtime.matrix_power, numba_always=True)
def matrix_power(y, a, n):
    """For an integer n. The derivative of a^n along a_dot (for n >= 0 the product rule's sum over
    k of a^k a_dot a^(n-1-k)) is the upper right block of the n-th power of [[a, a_dot], [0, a]],
    as expm's is of its exponential (a function of a block triangular matrix), and the adjoint
    that of [[a.T, y_bar], [0, a.T]]: written with matrix_power itself, second order follows."""
    y_dot = upper_right(np.linalg.matrix_power(frechet_block(a, a_dot), n))
    a_bar += upper_right(np.linalg.matrix_power(frechet_block(np.swapaxes(a, -1, -2), y_bar), n))


@rule(np.linalg.inv)
def inv(y, a):
    y_dot = -(y @ a_dot @ y)
    a_bar -= np.swapaxes(y, -1, -2) @ y_bar @ np.swapaxes(y, -1, -2)


# ---- creation ---------------------------------------------------------------------


def float_dtype_options(dtype=None, **_) -> str | None:
    """np.full(shape, v, dtype=int) truncates v: its derivative is not the rule's."""
    if dtype is not None and np.dtype(dtype).kind != "f":
        return f"np.full with dtype={np.dtype(dtype)} is differentiated only with a floating dtype"
    return None


@rule(np.full, pure=True, creates=True, options=float_dtype_options, dtype_from=(1,), kernel_local=("fill", "size"))
def full(y, shape, fill_value, dtype=None):
    y_dot = np.full(shape, fill_value_dot, dtype)
    fill_value_bar += np.sum(y_bar)


@rule(np.full_like, options=float_dtype_options, dtype_from=(0,), reads_shape_of=(0,), kernel_local=("fill", "like"))
def full_like(y, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    y_dot = np.full_like(a, fill_value_dot, dtype, shape=shape)
    fill_value_bar += np.sum(y_bar)



# ---- statistics: order statistics, NaN-aware reductions ----------------
# np.quantile(a, q, axis) is np.sum(W * a, axis) with W (runtime.quantile_weights) piecewise
# constant in a: its derivative is W's weighted sum of tangents, its adjoint W times y_bar spread
# back over the axis. Numba's own take no axis: under Numba generated code calls runtime.quantile.


@rule(np.quantile, runtime.quantile, pure=True, fresh=True, options=quantile_options)
@primitive(np.quantile, numba=runtime.quantile, numba_always=True)
def quantile(y, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """The linear method, one number q (a constant of the derivative: a q that depends on a
    differentiated input is refused). Ties: the weight goes to the equal elements in index order
    (a stable sort), a valid subgradient."""
    w = quantile_weights(a, q, axis)
    y_dot = np.sum(w * a_dot, axis=axis, keepdims=keepdims) + quantile_q_refused(q_dot)
    a_bar += w * sum_bar(y_bar, a, axis, keepdims)
    q_bar += quantile_q_refused(q)


@rule(np.percentile, runtime.percentile, pure=True, fresh=True, options=quantile_options)
@primitive(np.percentile, numba=runtime.percentile, numba_always=True)
def percentile(y, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """np.quantile's rule at q / 100."""
    w = quantile_weights(a, q / 100.0, axis)
    y_dot = np.sum(w * a_dot, axis=axis, keepdims=keepdims) + quantile_q_refused(q_dot)
    a_bar += w * sum_bar(y_bar, a, axis, keepdims)
    q_bar += quantile_q_refused(q)


@rule(np.median, runtime.median, pure=True, fresh=True, options=quantile_options)
@primitive(np.median, numba=runtime.median, numba_always=True)
def median(y, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.quantile's rule at q = 0.5: of an even count, half to each middle element."""
    w = quantile_weights(a, 0.5, axis)
    y_dot = np.sum(w * a_dot, axis=axis, keepdims=keepdims)
    a_bar += w * sum_bar(y_bar, a, axis, keepdims)


# NaN entries contribute nothing to np.nansum and np.nanmean: their derivative is 0.
@rule(np.nansum, runtime.nansum, pure=True, fresh=True, options=nan_reduction_options)
@primitive(np.nansum, numba=runtime.nansum)
def nansum(y, a, axis=None, dtype=None, out=None, keepdims=False):
    kept = np.where(np.isnan(a), 0.0, 1.0)
    y_dot = np.sum(kept * a_dot, axis=axis, keepdims=keepdims)
    a_bar += kept * sum_bar(y_bar, a, axis, keepdims)


@rule(np.nanmean, runtime.nanmean, pure=True, fresh=True, options=nan_reduction_options)
@primitive(np.nanmean, numba=runtime.nanmean)
def nanmean(y, a, axis=None, dtype=None, out=None, keepdims=False):
    """The mean of the entries that are not NaN: each has weight 1 / their count."""
    kept = np.where(np.isnan(a), 0.0, 1.0)
    count = np.sum(kept, axis=axis, keepdims=keepdims)
    y_dot = np.sum(kept * a_dot, axis=axis, keepdims=keepdims) / count
    a_bar += kept * sum_bar(y_bar / count, a, axis, keepdims)


@rule(np.nan_to_num, pure=True, fresh=True)
def nan_to_num(y, x, copy=True, nan=0.0, posinf=None, neginf=None):
    """1 where x is finite, 0 where NaN or an infinity is replaced (by constants)."""
    y_dot = np.where(np.isfinite(x), x_dot, 0.0)
    x_bar += unbroadcast(np.where(np.isfinite(x), y_bar, 0.0), x)



@rule(np.ptp, runtime.ptp, pure=True, fresh=True)
@primitive(np.ptp, numba=runtime.ptp)
def ptp(y, a, axis=None, out=None, keepdims=False):
    """np.max - np.min; ties share the derivative equally, as np.max's rule."""
    hi = np.max(a, axis=axis, keepdims=keepdims)
    lo = np.min(a, axis=axis, keepdims=keepdims)
    y_dot = max_dot(a_dot, hi, a, axis, keepdims) - max_dot(a_dot, lo, a, axis, keepdims)
    a_bar += max_bar(y_bar, hi, a, axis, keepdims) - max_bar(y_bar, lo, a, axis, keepdims)


@rule(np.average, runtime.average, pure=True, fresh=True, options=average_options)
@primitive(np.average, numba=runtime.average, numba_always=True)
def average(y, a, axis=None, weights=None, returned=False, keepdims=False):
    """sum(w a) / sum(w), w the weights spread to a's shape (average_weights, linear in weights);
    in w the derivative is (a - y) / sum(w). Weights may be differentiated too."""
    w = average_weights(a, weights, axis)
    total = np.sum(w, axis=axis, keepdims=keepdims)
    centered = a - sum_bar(y, a, axis, keepdims)
    y_dot = (np.sum(w * a_dot, axis=axis, keepdims=keepdims)
             + np.sum(average_weights(a, weights_dot, axis) * centered, axis=axis, keepdims=keepdims)) / total
    a_bar += w * sum_bar(y_bar / total, a, axis, keepdims)
    weights_bar += average_weights_bar(centered * sum_bar(y_bar / total, a, axis, keepdims), a, weights, axis)



@rule(np.take, runtime.take_axis, pure=True, fresh=True)
@primitive(np.take, numba=runtime.take_axis)
def take(y, a, indices, axis=None, out=None, mode="raise"):
    """Linear in a; indices are integers (no derivative). Repeated indices accumulate."""
    y_dot = np.take(a_dot, indices, axis)
    a_bar += take_bar(y_bar, a, indices, axis)



# The statement np.add.at(a, indices, values): the frontend writes a = scatter_add(a, indices, values).
@rule(runtime.scatter_add, pure=True, fresh=True, linear="all")
def scatter_add_(y, a, indices, values):
    """Linear in a and values; indices are integers along a's first axis (no derivative).
    Repeated indices add their values into one element, whose adjoint each of them receives."""
    y_dot = scatter_add(a_dot, indices, values_dot)
    a_bar += y_bar
    values_bar += unbroadcast(take_axis(y_bar, indices, 0), values)


# s2s.lax's dynamic slices (s2s.lax exports these runtime helpers themselves): the start indices
# are integers (no derivative), each clamped as JAX clamps it, in the derivative as in the value.
@rule(runtime.dynamic_slice, pure=True, fresh=True)
def dynamic_slice_(y, operand, start_indices, slice_sizes):
    """Linear in operand: its adjoint is y_bar where the block was read, zeros elsewhere."""
    y_dot = dynamic_slice(operand_dot, start_indices, slice_sizes)
    operand_bar += dynamic_update_slice(zeros_like(operand), y_bar, start_indices)


@rule(runtime.dynamic_update_slice, pure=True, fresh=True, linear="all")
def dynamic_update_slice_(y, operand, update, start_indices):
    """Linear in operand and update jointly: update's adjoint is y_bar read at the block,
    operand's is y_bar with the block (written over) zeroed."""
    y_dot = dynamic_update_slice(operand_dot, update_dot, start_indices)
    operand_bar += dynamic_update_slice(y_bar, zeros_like(update), start_indices)
    update_bar += dynamic_slice(y_bar, start_indices, np.shape(update))


@rule(runtime.dynamic_slice_in_dim, pure=True, fresh=True)
def dynamic_slice_in_dim_(y, operand, start_index, slice_size, axis=0):
    y_dot = dynamic_slice_in_dim(operand_dot, start_index, slice_size, axis)
    operand_bar += dynamic_update_slice_in_dim(zeros_like(operand), y_bar, start_index, axis)


@rule(runtime.dynamic_update_slice_in_dim, pure=True, fresh=True, linear="all")
def dynamic_update_slice_in_dim_(y, operand, update, start_index, axis):
    y_dot = dynamic_update_slice_in_dim(operand_dot, update_dot, start_index, axis)
    operand_bar += dynamic_update_slice_in_dim(y_bar, zeros_like(update), start_index, axis)
    update_bar += dynamic_slice_in_dim(y_bar, start_index, np.shape(update)[axis], axis)


@rule(runtime.dynamic_index_in_dim, pure=True, fresh=True)
def dynamic_index_in_dim_(y, operand, index, axis=0, keepdims=True):
    y_dot = dynamic_index_in_dim(operand_dot, index, axis, keepdims)
    operand_bar += dynamic_index_bar(y_bar, operand, index, axis, keepdims)


@rule(runtime.dynamic_update_index_in_dim, pure=True, fresh=True, linear="all")
def dynamic_update_index_in_dim_(y, operand, update, index, axis):
    y_dot = dynamic_update_index_in_dim(operand_dot, update_dot, index, axis)
    operand_bar += dynamic_update_index_in_dim(y_bar, zeros_like(update), index, axis)
    update_bar += dynamic_update_index_bar(y_bar, update, index, axis)


@rule(np.bincount, pure=True, fresh=True)
def bincount(y, x, weights=None, minlength=0):
    """y[k] sums the weights where x == k (x integers, no derivative): linear in weights, whose
    adjoint is y_bar read at x (repeated values of x read one element of y_bar each)."""
    y_dot = np.bincount(x, weights_dot, minlength)
    weights_bar += take_axis(y_bar, x, 0)


# ---- elementwise and vector functions ----------------------------------


@rule(np.heaviside, runtime.heaviside, pure=True, broadcasts=True)
@primitive(np.heaviside, numba=runtime.heaviside, numba_always=True)
def heaviside(y, x1, x2):
    """Piecewise constant in x1 (derivative 0, also at the step); y is x2 where x1 == 0."""
    y_dot = np.where(x1 == 0.0, x2_dot, 0.0)
    x2_bar += unbroadcast(np.where(x1 == 0.0, y_bar, 0.0), x2)


@rule(np.angle, pure=True)
def angle(y, z, deg=False):
    """Of real data: 0 where z >= 0 (+0.0), pi (180 with deg=True) where z < 0 (and -0.0): piecewise
    constant, its derivative 0 (also at the step), so no adjoint flows to z."""
    y_dot = zeros_like(y)


# NumPy's modified Bessel function of order 0: its derivative is I_1 (SciPy's), and under Numba,
# which lacks np.i0, SciPy's I_0 (runtime.i0, cython_special) computes it.
@rule(np.i0, pure=True, broadcasts=True, fresh=True, dtype_from=(0,))
@primitive(np.i0, numba=runtime.i0, numba_always=True)
def i0(y, x):
    y_dot = runtime.i1(x) * x_dot
    x_bar += unbroadcast(y_bar * runtime.i1(x), x)


@rule(np.sinc, pure=True, broadcasts=True)
def sinc(y, x):
    """(cos(pi x) - sinc(x)) / x, 0 at x = 0 (runtime.sinc_slope: a series near 0)."""
    y_dot = sinc_slope(x) * x_dot
    x_bar += unbroadcast(y_bar * sinc_slope(x), x)


@rule(np.cross, pure=True, fresh=True, options=cross_options, linear="each", operands=(0, 1))
def cross(z, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Of 3-vectors along the last axis (stacks broadcast): bilinear; <g, a x b> = <a, b x g>.
    (axisa, axisb, axisc and axis: frontend/expressions.py moves the vectors last and back.)"""
    z_dot = np.cross(a_dot, b) + np.cross(a, b_dot)
    a_bar += unbroadcast(np.cross(b, z_bar), a)
    b_bar += unbroadcast(np.cross(z_bar, a), b)



@rule(np.trapezoid, runtime.trapezoid, pure=True, fresh=True)
@primitive(np.trapezoid, numba=runtime.trapezoid, numba_always=True)
def trapezoid(r, y, x=None, dx=1.0, axis=-1):
    """Linear in y: np.sum(W * y, axis) with W half of each neighbouring spacing
    (runtime.trapezoid_weights). x and dx are constants of the derivative (else refused)."""
    w = trapezoid_weights(y, x, dx, axis)
    r_dot = np.sum(w * y_dot, axis=axis) + trapezoid_x_refused(x_dot) + trapezoid_x_refused(dx_dot)
    y_bar += w * sum_bar(r_bar, y, axis)
    x_bar += trapezoid_x_refused(x)
    dx_bar += trapezoid_x_refused(dx)



@rule(np.convolve, runtime.convolve, pure=True, fresh=True)
@primitive(np.convolve, numba=runtime.convolve, numba_always=True)
def convolve(z, a, v, mode="full"):
    """Bilinear; the adjoint in each argument correlates the cotangent with the other
    (runtime.convolve_bar), in any mode."""
    z_dot = np.convolve(a_dot, v, mode) + np.convolve(a, v_dot, mode)
    a_bar += convolve_bar(z_bar, a, v, mode)
    v_bar += convolve_bar(z_bar, v, a, mode)


@rule(np.correlate, runtime.correlate, pure=True, fresh=True)
@primitive(np.correlate, numba=runtime.correlate, numba_always=True)
def correlate(z, a, v, mode="valid"):
    """Of real arrays: np.convolve of a with v reversed (runtime.correlate_bar_a, _v)."""
    z_dot = np.correlate(a_dot, v, mode) + np.correlate(a, v_dot, mode)
    a_bar += correlate_bar_a(z_bar, a, v, mode)
    v_bar += correlate_bar_v(z_bar, a, v, mode)


@rule(np.linspace, pure=True, creates=True, fresh=True, options=linspace_options)
def linspace(y, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Linear in start and stop: start + (stop - start) * t for a constant grid t
    (runtime.linspace_grid), whose first element is 0 and, with the endpoint, last is 1."""
    t = linspace_grid(start, stop, num, endpoint, retstep, dtype, axis)
    y_dot = (1.0 - t) * start_dot + t * stop_dot
    start_bar += unbroadcast(np.sum((1.0 - t) * y_bar, axis=0), start)
    stop_bar += unbroadcast(np.sum(t * y_bar, axis=0), stop)


@rule(np.meshgrid, runtime.meshgrid, pure=True, fresh=True, options=meshgrid_options)
@primitive(np.meshgrid, numba=runtime.meshgrid, numba_always=True)
def meshgrid(y, x1, x2, indexing="xy", sparse=False, copy=True):
    """Of two arrays: the grid y[k] repeats xk (flattened) along the other axis. Linear: the
    tangent of a grid spreads xk's tangent over it (meshgrid_spread), the adjoint of xk sums
    the grid's adjoint along that axis (meshgrid_bar)."""
    y_dot = (meshgrid_spread(x1_dot, y[0], 0, indexing), meshgrid_spread(x2_dot, y[1], 1, indexing))
    x1_bar += meshgrid_bar(y_bar[0], x1, 0, indexing)
    x2_bar += meshgrid_bar(y_bar[1], x2, 1, indexing)


@rule(np.cov, pure=True, fresh=True, options=cov_options)
def cov(c, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """c = X X^T / (N - ddof), X the variables (rows of cov_centered) less their means:
    c_dot = (X_dot X^T + X X_dot^T) / (N - ddof), and m's adjoint is (C + C^T) X / (N - ddof)
    for c's adjoint C, centred (the means' adjoint, for rows of zero mean, is zero)."""
    x = cov_centered(m, rowvar)
    scale = cov_scale(m, rowvar, bias, ddof)
    c_dot = cov_result(scale * (cov_centered(m_dot, rowvar) @ x.T + x @ cov_centered(m_dot, rowvar).T), m)
    m_bar += cov_centered_bar(scale * ((cov_square(c_bar, x) + cov_square(c_bar, x).T) @ x), m, rowvar)


@rule(np.corrcoef, pure=True, fresh=True, options=corrcoef_options)
def corrcoef(r, m, y=None, rowvar=True, bias=None, ddof=None, dtype=None):
    """r = G / sqrt(g g^T), G = X X^T of the centred variables X (cov_centered) and g its
    diagonal, as np.corrcoef (np.cov's divisor cancels; clipped to [-1, 1], where only the
    diagonal, whose derivative is 0, meets the bounds). corrcoef_tangent and corrcoef_gram_bar
    are the derivative and its transpose in X X^T; the k x k r of one variable is 1."""
    x = cov_centered(m, rowvar)
    full = cov_square(r, x)
    scales = corrcoef_scales(x)
    r_dot = cov_result(corrcoef_tangent(cov_centered(m_dot, rowvar) @ x.T, full, scales), m)
    m_bar += cov_centered_bar(corrcoef_gram_bar(cov_square(r_bar, x), full, scales) @ x, m, rowvar)


@rule(np.gradient, runtime.gradient, pure=True, fresh=True, options=gradient_options)
@primitive(np.gradient, numba=runtime.gradient, numba_always=True)
def gradient(r, f, spacing=1.0, axis=None, edge_order=1):
    """Of f with one number as its spacing (a constant of the derivative), along an axis (one
    array) or several (a tuple, one array per axis): linear in f."""
    r_dot = np.gradient(f_dot, spacing, axis=axis) + trapezoid_x_refused(spacing_dot)
    f_bar += gradient_bar(r_bar, f, spacing, axis)
    spacing_bar += trapezoid_x_refused(spacing)


# Calls whose rule is not their function's: picked by the call's arguments (analysis.rule_for).
WHERE_INDICES = Case("np.where(condition)", of=(np.where,),  # np.nonzero's index arrays
                     when=lambda call: call.positional == 1 and not call.kwargs)
MESHGRID_NOT_OF_TWO = Case("np.meshgrid", of=(np.meshgrid, runtime.meshgrid),  # of one array, or of three or more
                           when=lambda call: call.positional != 2)
COV_NOT_OF_ONE = Case("np.cov", of=(np.cov,),  # of two data sets (y), or weighted
                      when=lambda call: call.given("y", "fweights", "aweights"))
CORRCOEF_NOT_OF_ONE = Case("np.corrcoef", of=(np.corrcoef,),  # of two data sets (y)
                           when=lambda call: call.given("y"))


DECLARATIONS = [
    nondifferentiable(np.zeros, np.ones, pure=True, creates=True),
    nondifferentiable(np.empty, np.eye, np.identity, creates=True),
    primitive(np.zeros, np.ones, np.empty, integer="never"),  # (floats, where no dtype is given)
    primitive(np.zeros, kernel_local=("0", "size")),
    primitive(np.ones, kernel_local=("1", "size")),
    primitive(np.empty, kernel_local=(None, "size")),
    nondifferentiable(np.zeros_like, np.ones_like, np.empty_like, pure=True, like=True),
    primitive(np.zeros_like, np.ones_like, np.empty_like, dtype_from=(0,), reads_shape_of=(0,), batching="prototype"),
    primitive(np.zeros_like, kernel_local=("0", "like")),
    primitive(np.ones_like, kernel_local=("1", "like")),
    primitive(np.empty_like, kernel_local=(None, "like")),
    # The zero adjoint of np.split's pieces (reverse mode's, a list of arrays under Numba too).
    nondifferentiable(runtime.split_zeros, pure=True, fresh=True, reads_shape_of=(0,)),
    nondifferentiable(np.shape, pure=True, reads_shape_of=(0,), batching="example_shape"),
    nondifferentiable(np.broadcast_shapes, pure=True),
    nondifferentiable(np.ndim, np.size, reads_shape_of=(0,)),
    nondifferentiable(np.argmax, np.argmin, np.argsort, np.searchsorted, np.count_nonzero),
    primitive(np.argmax, method="argmax"),
    primitive(np.argmin, method="argmin"),
    primitive(np.argsort, method="argsort"),
    nondifferentiable(np.any, np.all, reduction=True),
    primitive(np.any, method="any"),
    primitive(np.all, method="all"),
    primitive(np.arange, dtype_from=(0, 1, 2)),
    primitive(np.vdot, operands=(0, 1)),
    primitive(np.einsum, linear="each"),
    # NumPy's functions whose result may be a list or tuple of arrays (analysis/points_to.py)
    primitive(np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.meshgrid, np.broadcast_arrays,
              np.atleast_1d, np.atleast_2d, np.atleast_3d, np.unique, np.nonzero, np.where, np.indices,
              np.histogram, np.gradient, np.ix_, sequence=True),
    # NumPy's functions that always make arrays (of numbers too: 0-d), or sequences of them.
    primitive(np.array, np.asarray, np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
              np.full_like, np.eye, np.identity, np.arange, np.linspace, np.copy, ndarray="result"),
    primitive(np.broadcast_arrays, np.meshgrid, np.split, np.array_split, ndarray="items"),
    # np.where(condition) and np.nonzero: integer index arrays (x[np.where(x > 0.5)]).
    nondifferentiable(WHERE_INDICES, np.nonzero, np.flatnonzero, np.argwhere),
    # x.astype(int): frontend/expressions.py lowers it to this (its result is an integer array).
    nondifferentiable(runtime.astype_integer, pure=True, integer="always", broadcasts=True),
    nondifferentiable(runtime.cov_scale, pure=True),
    refuse_when_active(
        "np.corrcoef is differentiated of one data set: for two variables x and y, "
        "np.corrcoef(np.stack((x, y)))", CORRCOEF_NOT_OF_ONE),
    refuse_when_active(
        "np.cov is differentiated of one data set without weights: for two variables x and y, "
        "np.cov(np.stack((x, y)))", COV_NOT_OF_ONE),
    refuse_when_active("which triangle eigh reads decides its derivative: write UPLO as a constant, 'L' or 'U'",
                       EIGH_UPLO_UNKNOWN),
    refuse_when_active(
        "np.meshgrid is differentiated of two arrays: build a grid of one or of three arrays with "
        "np.broadcast_to(x[:, None, None], shape) and the like", MESHGRID_NOT_OF_TWO),
    # a discrete Fourier transform's result is complex: s2s differentiates real programs
    refuse_when_active(
        "its result is complex, and s2s differentiates real programs: write the transform as a product with "
        "constant real matrices (np.cos and np.sin of the frequencies times the positions), or give it a rule "
        "of your own with s2s.custom_vjp",
        *(getattr(np.fft, n) for n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn",
                                       "ihfft"))),
    refuse_when_active(
        "build the array from a constant grid and scale it: start + step * np.arange(n)",
        np.arange, pure=True, creates=True,
    ),
    # s2s.random (runtime.random): a draw is a constant of the derivative (the reparameterisation
    # trick: mu + sigma * random.normal(key, shape) differentiates in mu and sigma); keys are
    # integers. Bernoulli's p and categorical's logits only move the draws' thresholds: piecewise
    # constant, as JAX's. permutation(key, x) of an array moves x's rows: not a constant of x, so
    # it is refused where x is differentiated (its derivative would be dropped).
    nondifferentiable(runtime.random.PRNGKey, runtime.random.key, runtime.random.split, runtime.random.fold_in,
                      runtime.random.bits, runtime.random.normal, runtime.random.randint, runtime.random.bernoulli,
                      runtime.random.categorical, runtime.random.exponential,
                      pure=True, fresh=True),
    refuse_when_active("permute by an index: x[random.permutation(key, x.shape[0])]",
                       runtime.random.permutation, pure=True, fresh=True),
    refuse_when_active("draw with the default bounds and scale: minval + (maxval - minval) * random.uniform(key, shape)",
                       runtime.random.uniform, pure=True, fresh=True),
    refuse_when_active("draw a standard truncated normal with constant bounds, then scale and shift it",
                       runtime.random.truncated_normal, pure=True, fresh=True),
    # rs.randn(n, d) of a NumPy RandomState or Generator the function reads from its closure or
    # module: drawn as NumPy draws (its state advances), a constant of the derivative; not pure (it
    # changes the generator: never recomputed, moved or dropped). An argument that carries a
    # derivative (rs.normal(mu, sigma)) would lose it.
    refuse_when_active("draw standard samples and shift and scale them: mu + sigma * rs.standard_normal(shape)",
                       runtime.draw, fresh=True),
    # Without a rule: conversions and a cumulative sum that read their arguments only.
    primitive(np.float64, np.float32, np.int64, pure=True),
    primitive(np.float64, np.float32, np.int64, np.int32, np.bool_, kernel=SAME_SPELLING),  # (numba-cuda converts numbers)
    # New arrays (or numbers), never views of an argument: an in-place update may read them
    # while it writes its target (codegen/overlaps.py).
    primitive(np.array, np.zeros, np.ones, np.full, np.zeros_like, np.ones_like, np.empty_like, np.full_like,
              np.arange, np.linspace, np.concatenate, np.stack, np.dot, np.matmul, np.outer, np.inner, np.sum,
              np.mean, np.prod, fresh=True),
]
