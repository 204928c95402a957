"""Forward rules for the runtime helpers that generated reverse-mode code calls.

Facts of a helper (s2s.rules.Facts): pure where it only reads its arguments (optimize/fuse.py;
not add_at or push_shape, which write into their first argument),
shape_argument where it reads only the shape of that argument (transforms/reverse.py).

They make generated code differentiable once more (forward over reverse: s2s.hessian).
Helpers are linear or bilinear in their array arguments, or piecewise constant.
"""

import numpy as np

from s2s import runtime
from s2s.rules import SAME_SPELLING, nondifferentiable, primitive, rule
from s2s.runtime import (
    add_at,
    add_attr,
    append_bar_arr,
    append_bar_values,
    array_bar,
    astype_bar,
    batch_broadcast,
    broadcast_like,
    carry_like,
    carry_like_item,
    batched_product,
    column_stack_bar,
    dstack_bar,
    batched_product_bar_a,
    batched_product_bar_b,
    batched_reshape,
    batched_transpose,
    batched_transpose_bar,
    concatenate_bar,
    split_bar,
    singular_covariance_refused,
    copy,
    derivative_like,
    cumprod_jvp,
    cumprod_jvp2,
    cumprod_vjp,
    cumprod_vjp_dx,
    cumsum_bar,
    diag_bar,
    half_over,
    diagonal_bar,
    diff_bar,
    flatten,
    dot_bar_x,
    gradient_flat,
    gradient_like,
    lstsq_residuals,
    residual_weights,
    flatten_bar,
    dot_bar_y,
    hstack_bar,
    irfft,
    irfft_bar,
    inner_bar_x,
    inner_bar_y,
    kron_bar_a,
    kron_bar_b,
    lift,
    number_if_0d,
    diagonal_matrix,
    eigen_quotient,
    real_eigenvalues,
    singular_values,
    matrix_diagonal,
    pair_differences,
    qr_inner_bar,
    strict_lower,
    lower_half,
    lower_symmetric,
    lower_symmetric_bar,
    matmul_bar_x,
    matmul_bar_y,
    matrix_trace,
    matrix_trace_bar,
    max_bar,
    mean_bar,
    new_tape,
    norm_bar,
    norm_bar_curvature,
    norm_curvature_options,
    outer_bar_x,
    outer_bar_y,
    pad,
    pad_bar,
    pad_constant_bar,
    partition_bar,
    partition_dot,
    per_matrix,
    per_matrix_bar,
    pop_adjoint,
    prod_bar,
    prod_bar_dx,
    prod_dot,
    prod_dot_dx,
    reshape_bar,
    right_solve,
    polyder,
    repeat_bar,
    roll_bar,
    rollaxis_bar,
    as_columns,
    from_columns,
    solve_bar_a,
    select_bar,
    select_default_bar,
    sort_bar,
    sort_dot,
    stack_bar,
    sum_bar,
    take,
    tensordot_bar_a,
    tensordot_bar_b,
    tile_bar,
    trace_bar,
    transpose_bar,
    tree_add,
    unbroadcast,
    weighted,
    masked,
    masked_bar,
    interp_slope,
    interp_bar_fp,
    interp_dot_fp,
    interp_slope_bar_fp,
    gradient_bar,
    sinc_curvature,
    take_bar,
    dynamic_index_bar,
    dynamic_update_index_bar,
    convolve_bar,
    cov_centered,
    cov_centered_bar,
    cov_result,
    cov_square,
    meshgrid_bar,
    meshgrid_spread,
    correlate_bar_a,
    correlate_bar_v,
    average_weights,
    average_weights_bar,
    unpack_bar,
    var_bar,
    vstack_bar,
)


@rule(runtime.copy, pure=True, like=True, number_stays=True, copies=True, dtype_from=(0,))
@primitive(runtime.copy, method="copy")  # x.copy(): a list stays a list, a dict a dict (np.copy makes arrays)
def copy_(y, x):
    y_dot = copy(x_dot)
    x_bar += y_bar


@rule(runtime.derivative_like, pure=True, shape_argument=1)
def derivative_like_(y, d, x):
    """d itself, checked against x's shape (a derivative an s2s.custom_vjp or custom_jvp rule gave)."""
    y_dot = derivative_like(d_dot, x)
    d_bar += y_bar


@rule(runtime.broadcast_like, pure=True, broadcasts=True, first_or_new=True)
def broadcast_like_(y, t, c):
    """t + zeros_like(c) (forward mode's tangent of a sum with an operand of zero tangent)."""
    y_dot = broadcast_like(t_dot, c)
    t_bar += unbroadcast(y_bar, t)


@rule(runtime.gradient_like, pure=True, view=True, shape_argument=1)
def gradient_like_(y, g, x):
    """The flat gradient g in x's structure (s2s.grad inside a transformed function): linear in g;
    x gives only the structure."""
    y_dot = gradient_like(g_dot, x)
    g_bar += gradient_flat(y_bar, g)


@rule(runtime.gradient_flat, pure=True, fresh=True, shape_argument=1)
def gradient_flat_(y, bar, g):
    """gradient_like's adjoint: linear in bar."""
    y_dot = gradient_flat(bar_dot, g)


@rule(runtime.carry_like_item, pure=True, shape_argument=1)
def carry_like_item_(y, value, like, trips=None, where=None):
    """value; under Numba broadcast to the shape of like's items (see carry_like)."""
    y_dot = carry_like_item(value_dot, like)
    value_bar += unbroadcast(y_bar, value)


@rule(runtime.number_if_0d, pure=True, number_stays=True, dtype_from=(0,))
def number_if_0d_(y, x):
    """x (under Numba a 0-d array's number: transforms/zero_d_merges.py)."""
    y_dot = number_if_0d(x_dot)
    x_bar += y_bar


@rule(runtime.carry_like, pure=True, shape_argument=1)
def carry_like_(y, value, like, trips=None, where=None):
    """value; under Numba broadcast to like's shape (a loop carry that a loop makes an array:
    optimize/carries.py), which changes none of the elementwise values the loop computes."""
    y_dot = carry_like(value_dot, like)
    value_bar += unbroadcast(y_bar, value)


# The helpers of np.interp's rule, differentiated again (its Hessian): the slope is linear in fp and
# piecewise constant in x; the adjoint in fp linear in g, and in x through the interpolation weights.
@rule(runtime.interp_slope, pure=True, fresh=True)
def interp_slope_(y, x, xp, fp, left=None, right=None, period=None):
    y_dot = interp_slope(x, xp, fp_dot, left, right, period)
    fp_bar += interp_slope_bar_fp(y_bar, x, xp, fp, left, right, period)


@rule(runtime.interp_bar_fp, pure=True, fresh=True)
def interp_bar_fp_(r, g, x, xp, fp, left=None, right=None, period=None):
    r_dot = interp_bar_fp(g_dot, x, xp, fp, left, right, period) \
        + interp_slope_bar_fp(g * x_dot, x, xp, fp, left, right, period)
    g_bar += unbroadcast(interp_dot_fp(r_bar, x, xp, left, right, period), g)
    x_bar += unbroadcast(g * interp_slope(x, xp, r_bar, left, right, period), x)


@rule(runtime.interp_slope_bar_fp, pure=True, fresh=True)
def interp_slope_bar_fp_(r, g, x, xp, fp, left=None, right=None, period=None):
    r_dot = interp_slope_bar_fp(g_dot, x, xp, fp, left, right, period)
    g_bar += unbroadcast(interp_slope(x, xp, r_bar, left, right, period), g)


# x[mask] of a boolean mask under Numba (codegen/numba_routes.py), which the code generated for a
# gradient holds: differentiated again (a Hessian), its tangent is the mask's picks of x's tangent.
@rule(runtime.masked, pure=True, fresh=True, dtype_from=(0,))
def masked_(y, a, mask):
    y_dot = masked(a_dot, mask)
    a_bar += masked_bar(y_bar, a, mask)


@rule(runtime.masked_bar, pure=True, fresh=True)
def masked_bar_(r, g, a, mask):
    r_dot = masked_bar(g_dot, a, mask)
    g_bar += masked(r_bar, mask)


@rule(runtime.weighted, pure=True, broadcasts=True)
def weighted_(y, t, w):
    """t * w, 0 where w is 0 (np.fmax's tangent). w is a comparison's outcome, piecewise
    constant: its derivative is 0 wherever it has one."""
    y_dot = weighted(t_dot, w)
    t_bar += unbroadcast(weighted(y_bar, w), t)


@rule(runtime.unbroadcast, pure=True, shape_argument=1)
def unbroadcast_(y, g, x):
    """The sum of g over the axes it has beyond x's shape: its adjoint spreads back over them."""
    y_dot = unbroadcast(g_dot, x)
    g_bar += broadcast_like(y_bar, g)


@rule(runtime.sum_bar, pure=True, shape_argument=1)
def sum_bar_(y, g, x, axis=None, keepdims=False):
    y_dot = sum_bar(g_dot, x, axis, keepdims)


@rule(runtime.mean_bar, pure=True, shape_argument=1)
def mean_bar_(y, g, x, axis=None, keepdims=False):
    y_dot = mean_bar(g_dot, x, axis, keepdims)


@rule(runtime.max_bar, pure=True)
def max_bar_(r, g, y, x, axis=None, keepdims=False):
    """Which elements are the maximum does not change under a small perturbation."""
    r_dot = max_bar(g_dot, y, x, axis, keepdims)


@rule(runtime.var_bar, pure=True)
def var_bar_(y, g, x, axis=None, ddof=0, keepdims=False):
    y_dot = var_bar(g_dot, x, axis, ddof, keepdims) + var_bar(g, x_dot, axis, ddof, keepdims)


@rule(runtime.std_bar, pure=True)
def std_bar_(r, g, y, x, axis=None, ddof=0, keepdims=False):
    r_dot = var_bar(g_dot * half_over(y) - 2.0 * g * y_dot * half_over(y) ** 2, x, axis, ddof, keepdims) + var_bar(
        g * half_over(y), x_dot, axis, ddof, keepdims
    )


@rule(runtime.half_over, pure=True)
def half_over_(h, y):
    """1 / (2 y), 0 at y = 0 (std's adjoint): its derivative -1 / (2 y^2) is -2 h^2, 0 there too."""
    h_dot = -2.0 * h * h * y_dot
    y_bar += -2.0 * h * h * h_bar


@rule(runtime.matmul_bar_x, pure=True)
def matmul_bar_x_(r, g, x, y):
    r_dot = matmul_bar_x(g_dot, x, y) + matmul_bar_x(g, x, y_dot)


@rule(runtime.matmul_bar_y, pure=True)
def matmul_bar_y_(r, g, x, y):
    r_dot = matmul_bar_y(g_dot, x, y) + matmul_bar_y(g, x_dot, y)


@rule(runtime.dot_bar_x, pure=True)
def dot_bar_x_(r, g, x, y):
    r_dot = dot_bar_x(g_dot, x, y) + dot_bar_x(g, x, y_dot)


@rule(runtime.dot_bar_y, pure=True)
def dot_bar_y_(r, g, x, y):
    r_dot = dot_bar_y(g_dot, x, y) + dot_bar_y(g, x_dot, y)


@rule(runtime.inner_bar_x, pure=True)
def inner_bar_x_(r, g, x, y):
    r_dot = inner_bar_x(g_dot, x, y) + inner_bar_x(g, x, y_dot)


@rule(runtime.inner_bar_y, pure=True)
def inner_bar_y_(r, g, x, y):
    r_dot = inner_bar_y(g_dot, x, y) + inner_bar_y(g, x_dot, y)


@rule(runtime.outer_bar_x, pure=True)
def outer_bar_x_(r, g, x, y):
    r_dot = outer_bar_x(g_dot, x, y) + outer_bar_x(g, x, y_dot)


@rule(runtime.outer_bar_y, pure=True)
def outer_bar_y_(r, g, x, y):
    r_dot = outer_bar_y(g_dot, x, y) + outer_bar_y(g, x_dot, y)


@rule(runtime.tensordot_bar_a, pure=True, shape_argument=1)
def tensordot_bar_a_(r, g, a, b, axes=2):
    r_dot = tensordot_bar_a(g_dot, a, b, axes) + tensordot_bar_a(g, a, b_dot, axes)


@rule(runtime.tensordot_bar_b, pure=True, shape_argument=2)
def tensordot_bar_b_(r, g, a, b, axes=2):
    r_dot = tensordot_bar_b(g_dot, a, b, axes) + tensordot_bar_b(g, a_dot, b, axes)


@rule(runtime.kron_bar_a, pure=True, shape_argument=1)
def kron_bar_a_(r, g, a, b):
    r_dot = kron_bar_a(g_dot, a, b) + kron_bar_a(g, a, b_dot)


@rule(runtime.kron_bar_b, pure=True, shape_argument=2)
def kron_bar_b_(r, g, a, b):
    r_dot = kron_bar_b(g_dot, a, b) + kron_bar_b(g, a_dot, b)


@rule(runtime.lower_half, pure=True)
def lower_half_(y, x):
    y_dot = lower_half(x_dot)
    x_bar += lower_half(y_bar)


@rule(runtime.lower_symmetric, pure=True)
def lower_symmetric_(y, x):
    y_dot = lower_symmetric(x_dot)
    x_bar += lower_symmetric_bar(y_bar)


@rule(runtime.lower_symmetric_bar, pure=True)
def lower_symmetric_bar_(y, g):
    y_dot = lower_symmetric_bar(g_dot)
    g_bar += lower_symmetric(y_bar)


@rule(runtime.matrix_diagonal, pure=True, fresh=True)
def matrix_diagonal_(y, m):
    y_dot = matrix_diagonal(m_dot)
    m_bar += diagonal_matrix(y_bar)


@rule(runtime.diagonal_matrix, pure=True, fresh=True)
def diagonal_matrix_(y, d):
    y_dot = diagonal_matrix(d_dot)
    d_bar += matrix_diagonal(y_bar)


@rule(runtime.eigen_quotient, pure=True, fresh=True)
def eigen_quotient_(y, w, x):
    """Linear in x; in w, d(x / gap) = -(x / gap) / gap * d(gap)."""
    y_dot = eigen_quotient(w, x_dot) - eigen_quotient(w, y * pair_differences(w_dot))


@rule(runtime.real_eigenvalues, pure=True, first_or_new=True)
def real_eigenvalues_(y, w):
    """The identity (of real eigenvalues; it refuses complex ones)."""
    y_dot = w_dot
    w_bar += y_bar


@rule(runtime.full_rank_solution, pure=True, first_or_new=True)
def full_rank_solution_(y, x, rank, a):
    """The identity in x (np.linalg.lstsq's solution; it refuses a rank-deficient a)."""
    y_dot = x_dot
    x_bar += y_bar


@rule(runtime.lstsq_residuals, pure=True, fresh=True, shape_argument=1)
def lstsq_residuals_(y, value, residuals):
    """value in the residuals' shape: linear in value."""
    y_dot = lstsq_residuals(value_dot, residuals)


@rule(runtime.residual_weights, pure=True, fresh=True)
def residual_weights_(y, r, residuals_bar):
    """r * residuals_bar, or zeros: bilinear."""
    y_dot = residual_weights(r_dot, residuals_bar) + residual_weights(r, residuals_bar_dot)


@rule(runtime.singular_values, pure=True, first_or_new=True)
def singular_values_(y, s, u, vh):
    """The identity in s (u and vh are read for their shapes)."""
    y_dot = s_dot
    s_bar += y_bar


@rule(runtime.strict_lower, pure=True, fresh=True)
def strict_lower_(y, x):
    y_dot = strict_lower(x_dot)
    x_bar += strict_lower(y_bar)


@rule(runtime.qr_inner_bar, pure=True, fresh=True)
def qr_inner_bar_(y, e):
    y_dot = qr_inner_bar(e_dot)


@rule(runtime.right_solve, pure=True, fresh=True)
def right_solve_(y, x, r):
    """y = x inv(r): y_dot = (x_dot - y r_dot) inv(r)."""
    y_dot = right_solve(x_dot - y @ r_dot, r)


@rule(runtime.trace_bar, pure=True, fresh=True, shape_argument=1)
def trace_bar_(r, g, x, offset=0, axis1=0, axis2=1):
    r_dot = trace_bar(g_dot, x, offset, axis1, axis2)
    g_bar += np.trace(r_bar, offset=offset, axis1=axis1, axis2=axis2)


@rule(runtime.diagonal_bar, pure=True, fresh=True, shape_argument=1)
def diagonal_bar_(r, g, x, offset=0, axis1=0, axis2=1):
    r_dot = diagonal_bar(g_dot, x, offset, axis1, axis2)
    g_bar += np.diagonal(r_bar, offset=offset, axis1=axis1, axis2=axis2)


@rule(runtime.transpose_bar, pure=True)
def transpose_bar_(r, g, axes=None):
    r_dot = transpose_bar(g_dot, axes)


@rule(runtime.reshape_bar, pure=True, shape_argument=1)
def reshape_bar_(r, g, x):
    r_dot = reshape_bar(g_dot, x)


@rule(runtime.concatenate_bar)
def concatenate_bar_(r, g, xs, axis=0):
    r_dot = concatenate_bar(g_dot, xs, axis)


@rule(runtime.split_bar, pure=True, fresh=True)
def split_bar_(r, parts, x, axis=0):
    r_dot = split_bar(parts_dot, x, axis)


@rule(runtime.stack_bar)
def stack_bar_(r, g, xs, axis=0):
    r_dot = stack_bar(g_dot, xs, axis)


@rule(runtime.array_bar)
def array_bar_(r, g, x):
    r_dot = array_bar(g_dot, x)


@rule(runtime.norm_bar, options=norm_curvature_options)
def norm_bar_(r, g, y, x, ord=None, axis=None, keepdims=False):
    r_dot = norm_bar(g_dot, y, x, ord, axis, keepdims) + norm_bar_curvature(g, y, x, x_dot, ord, axis, keepdims)


@rule(runtime.as_columns, pure=True)
def as_columns_(y, v, a, b):
    """Linear in v: a reshape (or v itself)."""
    y_dot = as_columns(v_dot, a, b)
    v_bar += from_columns(y_bar, a, b)


@rule(runtime.from_columns, pure=True)
def from_columns_(y, v, a, b):
    y_dot = from_columns(v_dot, a, b)
    v_bar += as_columns(y_bar, a, b)


@rule(runtime.solve_bar_a)
def solve_bar_a_(r, b_adjoint, x):
    r_dot = solve_bar_a(b_adjoint_dot, x) + solve_bar_a(b_adjoint, x_dot)


@rule(runtime.matrix_trace, pure=True)
def matrix_trace_(y, x):
    y_dot = matrix_trace(x_dot)
    x_bar += matrix_trace_bar(y_bar, x)


@rule(runtime.matrix_trace_bar, pure=True)
def matrix_trace_bar_(r, g, x):
    r_dot = matrix_trace_bar(g_dot, x)


@rule(runtime.per_matrix, pure=True)
def per_matrix_(y, s):
    y_dot = per_matrix(s_dot)
    s_bar += per_matrix_bar(y_bar, s)


@rule(runtime.per_matrix_bar, pure=True)
def per_matrix_bar_(r, g, s):
    r_dot = per_matrix_bar(g_dot, s)


@rule(runtime.cumsum_bar, pure=True)
def cumsum_bar_(r, g, x, axis=None):
    r_dot = cumsum_bar(g_dot, x, axis)


@rule(runtime.tree_add, pure=True)
def tree_add_(r, a, b):
    r_dot = tree_add(a_dot, b_dot)


@rule(runtime.unpack_bar, pure=True)
def unpack_bar_(r, parts, source):
    """Linear in the parts; source gives only the kind of the result (an array or a tuple)."""
    r_dot = unpack_bar(parts_dot, source)


@rule(runtime.pop_adjoint)
def pop_adjoint_(r, bar):
    """Linear: the tangent's last item and the rest (in place for a list, as the value's)."""
    r_dot = pop_adjoint(bar_dot)


@rule(runtime.add_at)
def add_at_(r, c, key, value):
    r_dot = add_at(c_dot, key, value_dot)


@rule(runtime.add_attr, pure=True)
def add_attr_(r, c, name, value):
    r_dot = add_attr(c_dot, name, value_dot)


@rule(runtime.take, pure=True)
def take_(r, a, index, *, where=None):
    r_dot = take(a_dot, index)


@rule(runtime.new_tape, reverse_none=True)
def new_tape_(t, x, capacity):
    """The tangents of the values on a tape go on a tape of their own, made alongside it. A new
    tape holds none of x's value (x gives its dtype): no adjoint flows back to x."""
    t_dot = new_tape(x_dot, capacity)


DECLARATIONS = [
    nondifferentiable(runtime.zeros_like, pure=True, like=True, number_stays=True),
    # Where a try leaves its body: a number the branches after it test (frontend/try_statements.py).
    nondifferentiable(runtime.try_outcome, integer="always"),
    # s2s.grad(f)(x) inside a transformed function: how many numbers x holds, and a tangent of one of them.
    nondifferentiable(runtime.flat_size, runtime.unit_tangent, pure=True),
    nondifferentiable(runtime.zeros_shaped, runtime.ones_like, runtime.shape, runtime.clip_inside, runtime.range_len,
                      runtime.dict_keys, runtime.has_key, runtime.shares_memory, pure=True),
    # sum(xs) starts from it: 0 (zeros of the items' shape under Numba), whatever xs holds.
    nondifferentiable(runtime.sum_start, pure=True, fresh=True),
    # `for k in d:` goes over loop_keys(d): d itself where d is not a dict (so a view of it).
    nondifferentiable(runtime.loop_keys, pure=True, view=True),
    # s2s.lax.stop_gradient: the identity, through which no derivative flows (its result is its argument).
    nondifferentiable(runtime.stop_gradient, pure=True, view=True, broadcasts=True),
    nondifferentiable(runtime.require_number, runtime.require_unshared, runtime.require_distinct, runtime.require_fits,
                      runtime.require_float_array, runtime.require_not_dict, runtime.require_array,
                      runtime.require_updatable, runtime.require_scalar, runtime.assertion_failed,
                      runtime.shape_tape, runtime.push_shape, runtime.pop_shape),
    # Helpers of the forward and reverse templates that are never differentiated themselves.
    primitive(runtime.max_dot, runtime.var_dot, pure=True),
    primitive(runtime.copy, runtime.zeros_like, runtime.zeros_shaped, runtime.ones_like, runtime.sum_bar, fresh=True),
    # They return their first argument (an adjoint updated in place, or passed through) or a new value.
    primitive(runtime.unbroadcast, runtime.add_at, runtime.add_attr, first_or_new=True),
    # They read only the shape (and dtype) of these arguments (analysis/points_to.py).
    primitive(runtime.zeros_like, runtime.shape, reads_shape_of=(0,)),
    primitive(runtime.zeros_shaped, runtime.push_shape, reads_shape_of=(1,)),
    # The helpers with numba-cuda overloads (runtime/overloads/cuda.py): kernels call them on numbers.
    primitive(runtime.zeros_like, runtime.ones_like, runtime.copy, runtime.broadcast_like, runtime.add_at,
              runtime.index_add, runtime.tree_add, runtime.unbroadcast, runtime.range_len, runtime.shape_tape,
              runtime.push_shape, runtime.pop_shape, runtime.kernel_number, runtime.derivative_like,
              runtime.weighted, runtime.dot_zero, runtime.number_if_0d, runtime.astype, runtime.astype_integer, runtime.astype_bar,
              kernel=SAME_SPELLING),
    # As a statement of its own in a kernel, a local array (codegen/cuda.py).
    primitive(runtime.zeros_like, kernel_local=("0", "like")),
    primitive(runtime.ones_like, kernel_local=("1", "like")),
    primitive(runtime.copy, kernel_local=("copy", "like")),
]


# ---- vectorised batching (python backend) ------------------------------------------
# vmap(grad(f)) on the python backend differentiates the vectorised batch of f (vectorize.py):
# these are the reverse rules of the helpers that code calls.


@rule(runtime.lift)
def lift_(y, x):
    y_dot = lift(x_dot)
    x_bar += np.sum(y_bar, axis=-1)


@rule(runtime.batch_broadcast, dtype_from=(0,))
def batch_broadcast_(y, x, n):
    y_dot = batch_broadcast(x_dot, n)
    x_bar += np.sum(y_bar, axis=-1)


@rule(runtime.batched_product)
def batched_product_(y, kind, a, b, a_batched, b_batched):
    y_dot = batched_product(kind, a_dot, b, a_batched, b_batched) + batched_product(kind, a, b_dot, a_batched, b_batched)
    a_bar += batched_product_bar_a(y_bar, kind, a, b, a_batched, b_batched)
    b_bar += batched_product_bar_b(y_bar, kind, a, b, a_batched, b_batched)


@rule(runtime.batched_transpose)
def batched_transpose_(y, x, axes=None):
    y_dot = batched_transpose(x_dot, axes)
    x_bar += batched_transpose_bar(y_bar, axes)


@rule(runtime.batched_reshape)
def batched_reshape_(y, x, shape):
    y_dot = batched_reshape(x_dot, shape)
    x_bar += np.reshape(y_bar, np.shape(x))


@rule(runtime.batch_example, array_result=True)
def batch_example_(y, x, first):
    """The identity, with a check of the output's shape."""
    y_dot = x_dot
    x_bar += y_bar


DECLARATIONS += [
    nondifferentiable(
        runtime.batch_empty,
        runtime.batch_size,
        runtime.zeros_row,
        runtime.example_axes,
        runtime.example_shape,
        runtime.example_ndim,
        runtime.example_size,
        runtime.example_len,
    ),
    primitive(runtime.batch_empty, array_result=True),
]


# ---- helpers of the rules in array_rules.py for scans, shifts and rearrangements ---------
# Linear in their first argument; sort's permutation is piecewise constant in x, and cumprod's
# helpers are differentiated in x by the helpers of its second derivatives.

DECLARATIONS += [primitive(runtime.cumprod_jvp2, runtime.cumprod_vjp_dx, pure=True, fresh=True)]


# np.prod's helpers: linear in their first argument; their derivatives in x (the products of
# all elements but two, exact where x has zeros) are helpers with no rule of their own.

DECLARATIONS += [primitive(runtime.prod_bar_dx, runtime.prod_dot_dx, pure=True, fresh=True)]


@rule(runtime.prod_bar, pure=True)
def prod_bar_(r, g, y, x, axis=None, keepdims=False):
    r_dot = prod_bar(g_dot, y, x, axis, keepdims) + prod_bar_dx(g, x, x_dot, axis, keepdims)


@rule(runtime.prod_dot, pure=True)
def prod_dot_(r, t, y, x, axis=None, keepdims=False):
    r_dot = prod_dot(t_dot, y, x, axis, keepdims) + prod_dot_dx(t, x, x_dot, axis, keepdims)


@rule(runtime.cumprod_jvp, pure=True, fresh=True)
def cumprod_jvp_(r, t, x, axis=None):
    r_dot = cumprod_jvp(t_dot, x, axis) + cumprod_jvp2(t, x_dot, x, axis)


@rule(runtime.cumprod_vjp, pure=True, fresh=True)
def cumprod_vjp_(r, g, x, axis=None):
    r_dot = cumprod_vjp(g_dot, x, axis) + cumprod_vjp_dx(g, x, x_dot, axis)


@rule(runtime.diff_bar, pure=True, fresh=True)
def diff_bar_(r, g, x, n=1, axis=-1):
    r_dot = diff_bar(g_dot, x, n, axis)


@rule(runtime.roll_bar, pure=True, fresh=True)
def roll_bar_(r, g, shift, axis=None):
    r_dot = roll_bar(g_dot, shift, axis)


@rule(runtime.rollaxis_bar, pure=True, fresh=True)
def rollaxis_bar_(r, g, axis, start=0):
    r_dot = rollaxis_bar(g_dot, axis, start)
    g_bar += np.rollaxis(r_bar, axis, start)


@rule(runtime.flatten_bar, pure=True, fresh=True, shape_argument=1)
def flatten_bar_(r, g, x, order="C"):
    r_dot = flatten_bar(g_dot, x, order)
    g_bar += flatten(r_bar, order)


@rule(runtime.sort_dot, pure=True, fresh=True)
def sort_dot_(r, t, x, axis=-1):
    r_dot = sort_dot(t_dot, x, axis)


@rule(runtime.sort_bar, pure=True, fresh=True)
def sort_bar_(r, g, x, axis=-1):
    r_dot = sort_bar(g_dot, x, axis)


@rule(runtime.partition_dot, pure=True, fresh=True)
def partition_dot_(r, t, x, kth, axis=-1):
    r_dot = partition_dot(t_dot, x, kth, axis)


@rule(runtime.partition_bar, pure=True, fresh=True)
def partition_bar_(r, g, x, kth, axis=-1):
    r_dot = partition_bar(g_dot, x, kth, axis)


@rule(runtime.polyder, pure=True, fresh=True)
def polyder_(r, p):
    """Linear in p (np.polyval's rule differentiated once more)."""
    r_dot = polyder(p_dot)


@rule(runtime.repeat_bar, pure=True, fresh=True)
def repeat_bar_(r, g, x, repeats, axis=None):
    r_dot = repeat_bar(g_dot, x, repeats, axis)


@rule(runtime.tile_bar, pure=True, fresh=True)
def tile_bar_(r, g, x, reps):
    r_dot = tile_bar(g_dot, x, reps)


@rule(runtime.diag_bar, pure=True, fresh=True)
def diag_bar_(r, g, x, k=0):
    r_dot = diag_bar(g_dot, x, k)


@rule(runtime.hstack_bar)
def hstack_bar_(r, g, xs):
    r_dot = hstack_bar(g_dot, xs)


@rule(runtime.column_stack_bar)
def column_stack_bar_(r, g, xs):
    r_dot = column_stack_bar(g_dot, xs)


@rule(runtime.dstack_bar)
def dstack_bar_(r, g, xs):
    r_dot = dstack_bar(g_dot, xs)


@rule(runtime.append_bar_arr, pure=True, fresh=True)
def append_bar_arr_(r, g, arr, values, axis=None):
    r_dot = append_bar_arr(g_dot, arr, values, axis)


@rule(runtime.append_bar_values, pure=True, fresh=True)
def append_bar_values_(r, g, arr, values, axis=None):
    r_dot = append_bar_values(g_dot, arr, values, axis)


@rule(runtime.irfft_bar, pure=True, fresh=True, integer="never", shape_argument=1, linear=(0,))
def irfft_bar_(r, g, a, n=None, axis=-1, norm=None):
    """Linear in g (a gives its shape): its transpose is irfft itself."""
    r_dot = irfft_bar(g_dot, a, n, axis, norm)
    g_bar += irfft(r_bar, n, axis, norm)


@rule(runtime.pad_bar, pure=True, fresh=True, shape_argument=1)
def pad_bar_(r, g, x, pad_width, mode="constant"):
    r_dot = pad_bar(g_dot, x, pad_width, mode)
    g_bar += pad(r_bar, pad_width, mode)


@rule(runtime.pad_constant_bar, pure=True, shape_argument=1)
def pad_constant_bar_(r, g, x, pad_width, constant_values):
    """Linear in g; constant_values gives its kind only (a number)."""
    r_dot = pad_constant_bar(g_dot, x, pad_width, constant_values)


@rule(runtime.select_bar, pure=True, fresh=True)
def select_bar_(r, g, condlist, choicelist):
    r_dot = select_bar(g_dot, condlist, choicelist)


@rule(runtime.select_default_bar, pure=True, fresh=True)
def select_default_bar_(r, g, condlist, default):
    r_dot = select_default_bar(g_dot, condlist, default)


@rule(runtime.vstack_bar)
def vstack_bar_(r, g, xs):
    r_dot = vstack_bar(g_dot, xs)


@rule(runtime.astype_bar, pure=True, fresh=True)
def astype_bar_(r, g, x):
    r_dot = astype_bar(g_dot, x)


# np.linalg.eigh's helper of second derivatives, never differentiated itself.
DECLARATIONS += [primitive(runtime.pair_differences, pure=True, fresh=True)]


# ---- statistics -----------------------------------------------------------------
# np.quantile's weights are piecewise constant in x (which element sits at which sorted position
# changes only at ties): their derivative is 0. quantile_q_refused raises where it runs.
DECLARATIONS += [nondifferentiable(runtime.quantile_weights, runtime.quantile_q_refused, pure=True, fresh=True)]
# np.trapezoid's weights: constant where its rule calls them (an active x or dx is refused there).
DECLARATIONS += [nondifferentiable(runtime.trapezoid_weights, runtime.trapezoid_x_refused, pure=True, fresh=True)]
# np.linspace's grid: fractions of the way from start to stop (start and stop give its shape).
DECLARATIONS += [nondifferentiable(runtime.linspace_grid, pure=True, fresh=True)]


@rule(runtime.average_weights, pure=True, fresh=True, shape_argument=0)
def average_weights_(w, a, weights, axis=None):
    """Linear in the weights; a gives the shape only."""
    w_dot = average_weights(a, weights_dot, axis)
    weights_bar += average_weights_bar(w_bar, a, weights, axis)


@rule(runtime.average_weights_bar, pure=True, fresh=True)
def average_weights_bar_(r, g, a, weights, axis=None):
    r_dot = average_weights_bar(g_dot, a, weights, axis)
    g_bar += average_weights(g, r_bar, axis)


@rule(runtime.dynamic_index_bar, pure=True, fresh=True)
def dynamic_index_bar_(r, g, operand, index, axis=0, keepdims=True):
    r_dot = dynamic_index_bar(g_dot, operand, index, axis, keepdims)


@rule(runtime.dynamic_update_index_bar, pure=True, fresh=True)
def dynamic_update_index_bar_(r, g, update, index, axis):
    r_dot = dynamic_update_index_bar(g_dot, update, index, axis)


@rule(runtime.take_bar, pure=True, fresh=True)
def take_bar_(r, g, a, indices, axis=None):
    r_dot = take_bar(g_dot, a, indices, axis)


@rule(runtime.sinc_slope, pure=True, fresh=True)
def sinc_slope_(r, x):
    """np.sinc's second derivative (runtime.sinc_curvature: a series near 0; no third)."""
    r_dot = sinc_curvature(x) * x_dot


@rule(runtime.gradient_bar, pure=True, fresh=True)
def gradient_bar_(r, g, f, spacing=1.0, axis=None):
    r_dot = gradient_bar(g_dot, f, spacing, axis)


# np.cov's helpers: linear in their first argument, in pairs that are each other's transpose.


@rule(runtime.cov_centered, pure=True, fresh=True)
def cov_centered_(y, m, rowvar=True):
    y_dot = cov_centered(m_dot, rowvar)
    m_bar += cov_centered_bar(y_bar, m, rowvar)


@rule(runtime.cov_centered_bar, pure=True, fresh=True, shape_argument=1)
def cov_centered_bar_(y, g, m, rowvar=True):
    y_dot = cov_centered_bar(g_dot, m, rowvar)
    g_bar += cov_centered(y_bar, rowvar)


@rule(runtime.cov_result, pure=True, fresh=True, shape_argument=1)
def cov_result_(y, a, m):
    y_dot = cov_result(a_dot, m)
    a_bar += cov_square(y_bar, a)


@rule(runtime.cov_square, pure=True, fresh=True, shape_argument=1)
def cov_square_(y, g, x):
    y_dot = cov_square(g_dot, x)
    g_bar += reshape_bar(y_bar, g)


# np.meshgrid's tangent and adjoint helpers: linear in their first argument, each the other's
# transpose; the second gives a shape only. Closed under differentiation (any order).


@rule(runtime.meshgrid_spread, pure=True, fresh=True, shape_argument=1)
def meshgrid_spread_(y, v, grid, k, indexing="xy"):
    y_dot = meshgrid_spread(v_dot, grid, k, indexing)
    v_bar += meshgrid_bar(y_bar, v, k, indexing)


@rule(runtime.meshgrid_bar, pure=True, fresh=True, shape_argument=1)
def meshgrid_bar_(y, g, x, k, indexing="xy"):
    y_dot = meshgrid_bar(g_dot, x, k, indexing)
    g_bar += meshgrid_spread(y_bar, g, k, indexing)


# The adjoints of np.convolve and np.correlate: linear in the cotangent and in the other
# argument; the argument they are the adjoint of gives its length only.


@rule(runtime.convolve_bar, pure=True, fresh=True, shape_argument=1)
def convolve_bar_(r, g, this, other, mode="full"):
    r_dot = convolve_bar(g_dot, this, other, mode) + convolve_bar(g, this, other_dot, mode)


@rule(runtime.correlate_bar_a, pure=True, fresh=True, shape_argument=1)
def correlate_bar_a_(r, g, a, v, mode="valid"):
    r_dot = correlate_bar_a(g_dot, a, v, mode) + correlate_bar_a(g, a, v_dot, mode)


@rule(runtime.correlate_bar_v, pure=True, fresh=True, shape_argument=2)
def correlate_bar_v_(r, g, a, v, mode="valid"):
    r_dot = correlate_bar_v(g_dot, a, v, mode) + correlate_bar_v(g, a_dot, v, mode)


# A covariance of lower rank that a density is computed from (scipy_forms/stats.py:
# multivariate_normal with allow_singular): the density has no derivative in it, and a derivative
# that flows through it raises where it runs (the covariance may be of full rank on another call).
@rule(runtime.singular_covariance, pure=True, view=True)
def singular_covariance_(y, c):
    y_dot = singular_covariance_refused(c_dot)
    c_bar += singular_covariance_refused(y_bar)


DECLARATIONS += [nondifferentiable(runtime.singular_covariance_refused, pure=True)]
