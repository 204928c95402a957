"""The rules of NumPy's array functions: cumprod, cumsum, diff, roll, flip, hstack/vstack,
concatenate/stack on axis -1, diag, tril/triu, tile, sort, squeeze, atleast_Nd, einsum (lowered to
matmul, dot, outer, trace, transpose, sum or a broadcast product), astype and np.sum(dtype=), and
the ufunc spellings of the operators (np.add, np.multiply, ...) with np.logaddexp, np.pad in mode 'constant', np.select, np.partition
and the split family (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit), np.dstack, np.fft.fftshift
and ifftshift, np.r_[...] and np.c_[...]
(lowered to np.concatenate), np.broadcast_to and np.broadcast_arrays (each operand broadcast to
their shape). Each is checked
against central finite differences: gradients (python backend and under s2s.jit), Jacobians in
forward and reverse mode, Hessians (forward over reverse), vmap of the gradient, and float32
arguments; and the refusals, at the user's line, of what they do not take."""

import warnings

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from sampling import compiled_sample
from s2s.testing import check_grads

# ---- programs ---------------------------------------------------------------------------
# Scalar losses (x a vector of 6, A a 3x4 matrix, B a 4x3 matrix, T and U stacks of
# matrices); the weights make every output element count differently.


def cumprod_loss(x):
    return np.sum(np.cumprod(x) * np.arange(1.0, 7.0))


def cumprod_axis_loss(A):
    return np.sum(np.cumprod(A, axis=1) * A) + np.sum(np.cumprod(A, 0) ** 2)


def diff_loss(x):
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, 2) * x[:4])


def diff_axis_loss(A):
    return np.sum(np.diff(A, 2, axis=0) ** 2) + np.sum(np.diff(A, axis=1) * A[:, 1:])


def roll_loss(x):
    return np.sum(np.roll(x, 2) * x * np.arange(6.0))


def roll_axis_loss(A):
    return np.sum(np.roll(A, 1, axis=0) * A) + np.sum(np.roll(A, (1, -2), (0, 1)) * A**2)


def stacks_loss(x, A):
    h = np.hstack((x, x * 2.0))
    v = np.vstack((A, A * A))
    return np.sum(h**2 * np.arange(12.0)) + np.sum(v * np.sin(v)) + np.sum(np.hstack((A, A**2)) ** 2)


def last_axis_loss(A):
    c = np.concatenate((A, A * 2.0), axis=-1)
    s = np.stack((A, A**2), axis=-1)
    return np.sum(c**2 * np.arange(8.0)) + np.sum(s * A[:, :, None] ** 2)


def diag_loss(x):
    m = np.diag(x, 1)
    return np.sum(m**2 * np.arange(49.0).reshape(7, 7)) + np.sum(np.diag(np.outer(x, x), -1) ** 2)


def tile_loss(x):
    return np.sum(np.tile(x, 2) ** 2 * np.arange(12.0)) + np.sum(np.tile(x, (2, 1)) * x)


def sort_loss(x):
    return np.sum(np.sort(x) * np.arange(6.0)) + np.sum(np.sort(x * x) ** 2)


def sort_axis_loss(A):
    return np.sum(np.sort(A, axis=0) * A) + np.sum(np.sort(A, axis=None) ** 3 * np.arange(12.0))


def atleast_loss(x):
    return np.sum(np.atleast_2d(x) ** 2) + np.sum(np.atleast_1d(x) * 3.0) + np.sum(np.atleast_3d(x) ** 3)


def einsum_loss(A, B):
    c = np.einsum("ij,jk->ik", A, B)
    d = np.einsum("ij,j->i", A, B[:, 0]) + np.einsum("ij,ij->", A, A)
    return np.einsum("ii->", c) + np.einsum("ij->", A**2) + np.sum(np.einsum("ij->ji", A) * B) + np.sum(
        np.einsum("ij,jk->ki", A, B) ** 2) + np.sum(d**2)


def einsum_vector_loss(x):
    return np.einsum("i,i->", x, x) + np.sum(np.einsum("i,j->ij", x, x * 2.0) ** 2) + np.einsum("i,i", x, x**2)


def einsum_dots_inside_loss(T, U):
    """'...' after named indices, of T (2, 3, 4) and U (2, 4, 3)."""
    a = np.einsum("ij...,j...->i...", T, T[1] * U[1, 0, :, None])  # (2, 4)
    b = np.einsum("i...j,ij->...", T, U[:, :, 0])  # (3,)
    c = np.einsum("bi...,b...i->b...", T, U)  # (2, 4)
    d = np.einsum("i...,i", U[0], U[0, :, 0])  # implicit output: (3,)
    e = np.einsum("b...k,bk...->...b", T, U)  # (3, 2)
    return (np.sum(a**2 * np.arange(8.0).reshape(2, 4)) + np.sum(np.sin(b)) + np.sum(c**2) + np.sum(d * d)
            + np.sum(e * np.arange(6.0).reshape(3, 2)))


def einsum_batched_loss(T, U):
    # batches of matrix products, lowered to @ of stacks: 'bij,bjk->bik', and attention's scores
    # 'bqd,bkd->bqk' with the batch and the contracted index in other places ('ijk,lji->lki')
    return np.sum(np.einsum("bij,bjk->bik", T, U) ** 2) + np.sum(np.einsum("bij,bij->b", T, T) ** 2) + np.sum(
        np.einsum("bqd,bkd->bqk", T, T * 0.5 + 1.0) ** 2) + np.sum(np.einsum("ijk,lji->lki", T, np.transpose(U, (1, 2, 0))) ** 2)


def astype_loss(x):
    return np.sum(x.astype(np.float64) ** 3) + np.sum(x.astype(int) * x)


def sum_dtype_loss(x):
    return np.sum(x * x, dtype=np.float64) + np.sum(x, dtype=float) ** 2


def concatenators_loss(a):
    """np.r_ and np.c_ of arrays, numbers and constant ranges (a slice, a complex step's points)."""
    r = np.r_[a[0, 0], 2.0, a[1], 0:3, 0.0:1.0:3j]  # (12,)
    rows = np.r_[a, a * 2.0]  # (6, 4)
    c = np.c_[a[0], a[1] ** 2, 1:5]  # (4, 3)
    cols = np.c_[a, a[:, 0], a[0, 0] * np.ones((3, 1))]  # (3, 6)
    return (np.sum(r**2 * np.arange(12.0)) + np.sum(np.sin(rows)) + np.sum(c**2 * np.arange(12.0).reshape(4, 3))
            + np.sum(cols * np.c_[a, a[:, :2]]) + np.sum(np.c_[a[0, 0], 3.0] * a[2, :2]))


def existing_loss(x):
    a = np.multiply(x, x) + np.add(x, 1.0) - np.subtract(x, 0.5)
    b = np.divide(a, 2.0 + x) + np.true_divide(x, 3.0) + np.negative(x) + np.power(x, 3.0)
    return np.sum(np.cumsum(b) * np.flip(x)) + np.sum(np.logaddexp(x, b))


_rng = np.random.default_rng(14)
X = 0.5 + _rng.random(6)
X[2] = 0.0  # cumprod's derivatives must not divide by x
A = 0.5 + _rng.random((3, 4))
B = _rng.standard_normal((4, 3))
T, U = _rng.standard_normal((2, 3, 4)), _rng.standard_normal((2, 4, 3))
X_NONZERO = np.array([0.7, 1.3, 0.45, 0.9, 1.1, 0.6])

# name -> (function, arguments); the gradient is taken with respect to the first.
CASES = {
    "cumprod": (cumprod_loss, (X,)),
    "cumprod_axis": (cumprod_axis_loss, (A,)),
    "diff": (diff_loss, (X,)),
    "diff_axis": (diff_axis_loss, (A,)),
    "roll": (roll_loss, (X,)),
    "roll_axis": (roll_axis_loss, (A,)),
    "stacks": (stacks_loss, (X, A)),
    "last_axis": (last_axis_loss, (A,)),
    "diag": (diag_loss, (X,)),
    "tile": (tile_loss, (X,)),
    "sort": (sort_loss, (X_NONZERO,)),  # no ties: sort is differentiable there
    "sort_axis": (sort_axis_loss, (A,)),
    "atleast": (atleast_loss, (X,)),
    "einsum": (einsum_loss, (A, B)),
    "einsum_vector": (einsum_vector_loss, (X,)),
    "einsum_batched": (einsum_batched_loss, (T, U)),
    "einsum_dots_inside": (einsum_dots_inside_loss, (T, U)),
    "astype": (astype_loss, (X_NONZERO,)),  # int() jumps at integers: none near
    "sum_dtype": (sum_dtype_loss, (X,)),
    "existing": (existing_loss, (X_NONZERO,)),
    "concatenators": (concatenators_loss, (A,)),
}


def _fd(fn, args, k=0):
    return central_difference_grad(fn, list(args), k)


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_python_matches_finite_differences(name):
    fn, args = CASES[name]
    for k in range(len(args)):
        got = s2s.grad(fn, argnums=k)(*args)
        np.testing.assert_allclose(got, _fd(fn, args, k), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(compiled_sample(CASES, 2)))
def test_grad_jit_matches_python(name):
    """(half of the cases in CI, the same on every run; the rule matrix's jit column compiles a
    seeded sample of every rule, and S2S_FULL_JIT=1 all of these)"""
    fn, args = CASES[name]
    got = s2s.jit(s2s.grad(fn))(*args)
    np.testing.assert_allclose(got, _fd(fn, args), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got, s2s.grad(fn)(*args), rtol=1e-12, atol=1e-12)


# Forward mode: the Jacobian of the function that returns each loss's inner array.


def cumprod_vec(x):
    return np.cumprod(x * x)


def diff_vec(A):
    return np.diff(A * A, 2, axis=0)


def roll_vec(A):
    return np.roll(A * A, (1, 2), (0, 1))


def diag_vec(x):
    return np.diag(x * x, -1)


def tile_vec(x):
    return np.tile(x * x, (2, 1))


def sort_vec(A):
    return np.sort(A * A, axis=0)


def einsum_vec(A):
    return np.einsum("ij,kj->ik", A, A * A)


def stack_vec(x):
    return np.vstack((x, x * x))


VECTOR_CASES = {"cumprod": (cumprod_vec, X), "diff": (diff_vec, A), "roll": (roll_vec, A), "diag": (diag_vec, X),
                "tile": (tile_vec, X), "sort": (sort_vec, A), "einsum": (einsum_vec, A), "vstack": (stack_vec, X)}


def _fd_jacobian(fn, x, h=1e-6):
    columns = []
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = h
        columns.append((fn(x + e) - fn(x - e)) / (2 * h))
    return np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(fn(x)) + x.shape)


@pytest.mark.parametrize("name", sorted(VECTOR_CASES))
def test_jacobians_match_finite_differences(name):
    fn, x = VECTOR_CASES[name]
    expected = _fd_jacobian(fn, x)
    np.testing.assert_allclose(s2s.jacfwd(fn)(x), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jacrev(fn)(x), expected, rtol=1e-6, atol=1e-7)


SECOND_ORDER = ["cumprod", "cumprod_axis", "diff_axis", "roll_axis", "diag", "tile", "sort", "sort_axis",
                "einsum", "einsum_vector", "einsum_batched", "stacks", "last_axis", "atleast", "astype"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_hessian_matches_finite_differences_of_the_gradient(name):
    fn, args = CASES[name]
    grad = s2s.grad(fn)
    x = np.asarray(args[0], dtype=float)
    expected = _fd_jacobian(lambda z: grad(z, *args[1:]), x, h=1e-5)
    np.testing.assert_allclose(s2s.hessian(fn)(*args), expected, rtol=1e-5, atol=1e-6)


def test_hessian_of_cumprod_under_jit():
    np.testing.assert_allclose(s2s.jit(s2s.hessian(cumprod_loss))(X), s2s.hessian(cumprod_loss)(X),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(cumprod_axis_loss))(A), s2s.hessian(cumprod_axis_loss)(A),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["sort_axis", "tile", "last_axis", "diff_axis"])
def test_hessian_under_jit(name):
    fn, args = CASES[name]
    np.testing.assert_allclose(s2s.jit(s2s.hessian(fn))(*args), s2s.hessian(fn)(*args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["cumprod", "diff", "roll", "diag", "tile", "sort"])
def test_forward_mode_under_jit(name):
    fn, x = VECTOR_CASES[name]
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fn))(x), _fd_jacobian(fn, x), rtol=1e-6, atol=1e-7)


def cumprod_tangent(x):
    out, tangent = s2s.jvp(cumprod_vec, (x,), (x * x,))
    return tangent


def test_forward_over_forward_of_cumprod():
    """The forward rule of cumprod's tangent (runtime.cumprod_jvp2): jacfwd of a function that
    calls s2s.jvp, against finite differences of its values."""
    expected = _fd_jacobian(cumprod_tangent, X, h=1e-5)
    np.testing.assert_allclose(s2s.jacfwd(cumprod_tangent)(X), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(cumprod_tangent))(X), expected, rtol=1e-6, atol=1e-7)


# ---- vmap ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumprod", "diff", "roll", "diag", "tile", "sort", "einsum_vector", "atleast",
                                  "astype"])
def test_vmap_of_grad_matches_per_example_gradients(name):
    fn, _ = CASES[name]
    xs = 0.5 + np.random.default_rng(3).random((4, 6))
    expected = np.array([_fd(fn, (x,)) for x in xs])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fn))(xs), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.vmap(fn)(xs), [fn(x) for x in xs], rtol=1e-12)


def test_vmap_batches_along_the_axis_without_a_loop():
    As = 0.5 + np.random.default_rng(4).random((5, 3, 4))
    for fn, data in ((cumprod_loss, X[None] + np.arange(3.0)[:, None]), (cumprod_axis_loss, As),
                     (diff_axis_loss, As), (sort_axis_loss, As), (astype_loss, As[:, 0] + 0.1)):
        batched = s2s.vmap(fn)
        np.testing.assert_allclose(batched(data), [fn(d) for d in data], rtol=1e-12)
        assert "Not vectorised" not in s2s.source(batched), fn.__name__
    # A tuple of axes is a temporary of the normalized code: the loop over the examples takes it.
    batched = s2s.vmap(roll_axis_loss)
    np.testing.assert_allclose(batched(As), [roll_axis_loss(a) for a in As], rtol=1e-12)
    assert "no batching rule for roll over a computed axis" in s2s.source(batched)


def test_vmap_of_grad_under_jit():
    xs = 0.5 + np.random.default_rng(3).random((4, 6))
    for fn in (cumprod_loss, sort_loss, roll_loss):
        expected = np.array([_fd(fn, (x,)) for x in xs])
        np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fn)))(xs), expected, rtol=1e-6, atol=1e-7)


# ---- float32 ------------------------------------------------------------------------


def float32_loss(x):
    y = np.cumprod(x) + np.roll(x, 1) + np.sort(x)
    z = np.diff(np.tile(y, 2)) + np.einsum("i,i->", y, x)
    return np.sum(z * z) + np.sum(x.astype(np.float64) ** 2)


def test_float32_stays_float32_and_matches_float64():
    x64 = X_NONZERO
    x32 = x64.astype(np.float32)
    for run in (s2s.grad(float32_loss), s2s.jit(s2s.grad(float32_loss))):
        g32 = run(x32)
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, _fd(float32_loss, (x64,)), rtol=2e-5, atol=2e-5)


def test_astype_float32_derivative_goes_back_to_float64():
    def loss(x):
        return np.sum(x.astype(np.float32) ** 2)

    g = s2s.grad(loss)(X_NONZERO)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2.0 * X_NONZERO, rtol=1e-6)  # closed form, up to float32 rounding


# ---- refusals -----------------------------------------------------------------------


def einsum_dots_not_in_the_output(x):
    return np.sum(np.einsum("i...->i", x))


def einsum_keywords(A):
    return np.sum(np.einsum("ij->ji", A, optimize=True))


def cast_computed(x, y):
    return np.sum(x.astype(y.dtype))


def cast_to_an_argument_type(x, t):
    return np.sum(np.sin(x.astype(t)))


def r_with_a_directive(x):
    return np.sum(np.r_["0,2", x, x])


def vstack_mixed(A, x):
    return np.sum(np.vstack((A, x)))


def atleast_number(x):
    return np.sum(np.atleast_1d(x[0]))


def einsum_dots_one(a, b):
    return np.einsum("ij...,j...->i...", a, b)


def einsum_dots_two(a, b):
    return np.einsum("i...j,ij->...", a, b)


def einsum_dots_three(a, b):
    return np.einsum("bi...,b...i->b...", a, b)


def einsum_dots_four(a, b):
    return np.einsum("b...k,bk...->...b", a, b)


def einsum_dots_five(a, b):
    return np.einsum("i...,i", a, b)


def einsum_dots_six(a, b):
    return np.einsum("...i,j...->j...i", a, b)


def einsum_dots_seven(a, b):
    return np.einsum("ij...,jk->ik...", a, b)


@pytest.mark.parametrize("fn, a, b", [
    (einsum_dots_one, T, T[1]), (einsum_dots_two, T, U[:, :, 0]), (einsum_dots_three, T, U), (einsum_dots_four, T, U),
    (einsum_dots_five, U[0], U[0, :, 0]), (einsum_dots_six, T[0], U[0]), (einsum_dots_seven, T[0], U[0, :, :2])])
def test_einsum_with_dots_after_named_indices_is_numpys(fn, a, b):
    """The lowering's values are np.einsum's (the gradients: einsum_dots_inside's)."""
    for backend in ("python", "cpu"):
        np.testing.assert_allclose(s2s.jit(fn, backend=backend)(a, b), fn(a, b), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("fn", [einsum_dots_not_in_the_output, einsum_keywords])
def test_unsupported_einsum_is_refused_at_its_line(fn):
    """A '...' of an operand that the output written after '->' lacks; keyword arguments
    (optimize=, out=) are not read."""
    with pytest.raises(s2s.S2SError, match=r"test_rules_array_manipulation.py:\d+:\d+: np.einsum"):
        s2s.grad(fn)(np.ones((3, 3)))


def test_r_with_a_string_directive_is_refused_at_its_line():
    with pytest.raises(s2s.S2SError, match=r"test_rules_array_manipulation.py:\d+:\d+: np.r_\[...\] with a string"):
        s2s.grad(r_with_a_directive)(X)


def test_cast_to_a_computed_type_is_refused():
    with pytest.raises(s2s.S2SError, match="the type of a cast must be a constant"):
        s2s.grad(cast_computed)(X, X)


def test_cast_to_a_type_passed_as_an_argument():
    # (a type argument is static: written into the code generated for the call)
    expected = central_difference_grad(cast_to_an_argument_type, (X, np.float64), 0)
    assert np.allclose(s2s.grad(cast_to_an_argument_type)(X, np.float64), expected, atol=1e-6)


def squeeze_all(A):
    return np.sum(np.squeeze(A[0:1]) ** 2)


def vstack_of_blocks(a):
    joined = np.vstack((a, a[:1] * 2.0))
    return np.sum(np.sin(joined) * np.arange(joined.size).reshape(joined.shape))


@pytest.mark.parametrize("fn, args", [(vstack_mixed, (A, A[0])), (atleast_number, (X,)),
                                      (vstack_of_blocks, (np.arange(24.0).reshape(2, 3, 4) / 7.0,))])
def test_what_numba_lacks_compiles_through_runtime_helpers(fn, args):
    expected = _fd(fn, args)
    np.testing.assert_allclose(s2s.grad(fn)(*args), expected, rtol=1e-6, atol=1e-7)  # the python backend
    np.testing.assert_allclose(s2s.jit(s2s.grad(fn))(*args), expected, rtol=1e-6, atol=1e-7)


# np.hstack, np.vstack and np.column_stack of one array join its rows x[0], x[1], ...: Numba's own
# take a tuple only. Weights make every element of the result count differently.


def hstack_rows(x):
    y = np.hstack(x)
    return np.sum(np.sin(y) * np.arange(1.0, 1.0 + y.size).reshape(y.shape))


def vstack_rows(x):
    y = np.vstack(x)
    return np.sum(y**2 * np.arange(1.0, 1.0 + y.size).reshape(y.shape))


def column_stack_rows(x):
    y = np.column_stack(x)
    return np.sum(y**3 * np.arange(1.0, 1.0 + y.size).reshape(y.shape))


@pytest.mark.parametrize("fn", [hstack_rows, vstack_rows, column_stack_rows])
@pytest.mark.parametrize("x", [X, A, T], ids=["vector", "matrix", "stack"])
def test_a_stack_of_one_array_joins_its_rows_under_jit(fn, x):
    assert s2s.jit(fn)(x) == pytest.approx(fn(x), rel=1e-12)
    expected = _fd(fn, (x,))
    np.testing.assert_allclose(s2s.grad(fn)(x), expected, rtol=1e-6, atol=1e-7)  # the python backend
    np.testing.assert_allclose(s2s.jit(s2s.grad(fn))(x), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fn))(x), expected, rtol=1e-6, atol=1e-7)  # forward mode


@pytest.mark.parametrize("fn, args", [(squeeze_all, (A,))])
def test_what_numba_cannot_compile_is_an_error_at_the_users_line(fn, args):
    np.testing.assert_allclose(s2s.grad(fn)(*args), _fd(fn, args), rtol=1e-6, atol=1e-7)  # the python backend
    line = fn.__code__.co_firstlineno + 1
    with pytest.raises(s2s.S2SError, match=rf"test_rules_array_manipulation.py:{line}:\d+: Numba cannot compile"):
        s2s.jit(s2s.grad(fn))(*args)


# ---- tril, triu ----------------------------------------------------------------------


def lower_energy(a):
    return np.sum(np.tril(a, -1) ** 2) + np.sum(np.triu(a) * a)


def test_tril_and_triu_gradients():
    a = np.arange(9.0).reshape(3, 3) / 7.0
    expected = 2 * np.tril(a, -1) + 2 * np.triu(a)  # d/da of sum(triu(a) * a) is 2 * triu(a)
    np.testing.assert_allclose(s2s.grad(lower_energy)(a), expected, rtol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.grad(lower_energy))(a), expected, rtol=1e-15)


# ---- np.dstack, np.fft.fftshift and ifftshift ------------------------------------------------


def shifted_and_stacked(x, A):
    return (np.sum(np.fft.fftshift(A) * A) + np.sum(np.fft.ifftshift(A ** 2, axes=1) * A)
            + np.sum(np.fft.fftshift(x, axes=0) * np.arange(5.0)) + np.sum(np.dstack((A, A * A)) ** 2)
            + np.sum(np.dstack((x, x * 2.0)) * np.arange(10.0).reshape(1, 5, 2)))


def weighted_shift(x, w):
    return np.sum(np.fft.fftshift(x) * w)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_dstack_and_the_half_shifts(backend):
    """Against central differences; the gradient of sum(w * fftshift(x)) is ifftshift(w), in closed form."""
    x, A = np.linspace(-1.0, 1.2, 5), np.arange(12.0).reshape(3, 4) / 7.0 - 0.5
    check_grads(shifted_and_stacked, (x, A), order=2 if backend == "python" else 1, backend=backend)
    w = np.arange(5.0) ** 2
    np.testing.assert_array_equal(s2s.jit(s2s.grad(weighted_shift), backend=backend)(x, w), np.fft.ifftshift(w))
    if backend == "cpu":
        assert s2s.jit(shifted_and_stacked)(x, A) == pytest.approx(shifted_and_stacked(x, A), rel=1e-14)


# ---- the ufunc spellings of the operators, np.logaddexp, np.cumsum and np.flip --------


def ufunc_spellings(x, y):
    return np.sum(np.multiply(np.add(x, y), np.subtract(x, 2.0 * y)) + np.divide(x, y) + np.true_divide(y, x))


def new_array_rules(x, y):
    return np.sum(np.logaddexp(x, y) * np.cumsum(x) + np.flip(y) * x)


def cumsum_over_an_axis(A):
    return np.sum(np.cumsum(A, axis=0) * np.flip(A, 1))


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun", [ufunc_spellings, new_array_rules])
def test_rules_people_use(fun, backend):
    """The ufunc spellings of the operators, np.logaddexp, np.cumsum and np.flip have rules."""
    x, y = np.array([0.3, 0.7, 1.2]), np.array([1.5, 0.4, 2.0])
    check_grads(fun, (x, y), order=2 if backend == "python" else 1, backend=backend)


def test_cumsum_over_an_axis_on_the_python_backend_and_under_jit():
    A = np.arange(6.0).reshape(2, 3) / 7
    check_grads(cumsum_over_an_axis, (A,), order=2)
    check_grads(cumsum_over_an_axis, (A,), order=1, backend="cpu")  # runtime.cumsum's overload takes an axis


# ---- np.pad (mode 'constant') --------------------------------------------------------


def pad_energy(A, s):
    return np.sum(np.pad(A, ((1, 0), (2, 1)), constant_values=s) ** 2)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_pad_gradient_in_the_array_and_the_constant(backend):
    """d/dA sum(pad(A, c)**2) is 2A; d/dc is 2c times the number of padded elements."""
    A, s = np.arange(12.0).reshape(3, 4) / 7.0, 0.3
    padded = (3 + 1) * (4 + 3) - A.size
    got = s2s.jit(s2s.grad(pad_energy, argnums=(0, 1)), backend=backend)(A, s)
    np.testing.assert_allclose(got[0], 2 * A, rtol=1e-14)
    np.testing.assert_allclose(got[1], 2 * s * padded, rtol=1e-14)


def pad_reflect(x):
    return np.sum(np.pad(x, 1, mode="reflect") ** 2)


def pad_mode_of(x, mode):
    return np.sum(np.pad(x, 1, mode=mode) ** 2)


def pad_per_side(x, s):
    return np.sum(np.pad(x, 1, constant_values=(s, 1.0)) ** 2)


def test_pad_in_another_mode_is_refused_at_its_line():
    line = pad_reflect.__code__.co_firstlineno + 1
    with pytest.raises(s2s.S2SError, match=rf"test_rules_array_manipulation.py:{line}:\d+: np.pad with mode='reflect'"):
        s2s.grad(pad_reflect)(X)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_pad_mode_in_a_variable_is_checked_when_it_runs(backend):
    grad = s2s.jit(s2s.grad(pad_mode_of), backend=backend)
    np.testing.assert_allclose(grad(X, "constant"), 2 * X, rtol=1e-14)
    with pytest.raises(s2s.S2SError, match=r"test_rules_array_manipulation.py:\d+:\d+: .*np.pad"):
        grad(X, "reflect")


def test_pad_with_constants_per_side_is_refused_in_them():
    """Reverse mode takes one number (values per axis and side fill regions that overlap at the
    corners, where the last axis's value wins); the array's gradient is still taken."""
    np.testing.assert_allclose(s2s.grad(pad_per_side)(X, 0.5), 2 * X, rtol=1e-14)
    with pytest.raises(s2s.S2SError, match=r"constant_values given as one number"):
        s2s.grad(pad_per_side, argnums=1)(X, 0.5)


# ---- np.select ----------------------------------------------------------------------


def select_weighted(a, b, d):
    x = np.array([0.2, 0.6, 0.9, 0.4])
    return np.sum(np.select([x > 0.5, x > 0.3], [a, b * b], d) * np.arange(1.0, 5.0))


def select_of_built_lists(x):
    conditions = []
    choices = []
    for k in range(3):
        conditions.append(x > 0.3 * k)
        choices.append(x * k)
    return np.sum(np.select(conditions, choices) * x)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_select_gradient_is_the_weight_where_each_value_is_picked(backend):
    """The first condition that holds picks its choice (x > 0.3 holds at 0.6 and 0.9 too, but
    x > 0.5 picks those); the default takes the rest."""
    a, b, d = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 1.5, 2.5, 3.5]), 0.7
    w = np.arange(1.0, 5.0)
    got = s2s.jit(s2s.grad(select_weighted, argnums=(0, 1, 2)), backend=backend)(a, b, d)
    np.testing.assert_allclose(got[0], w * [0, 1, 1, 0], rtol=1e-14)
    np.testing.assert_allclose(got[1], 2 * b * w * [0, 0, 0, 1], rtol=1e-14)
    np.testing.assert_allclose(got[2], w[0], rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_select_of_lists_built_in_a_loop(backend):
    x = np.array([0.2, 0.5, 0.9])
    check_grads(select_of_built_lists, (x,), order=1, backend=backend)


# ---- np.partition ------------------------------------------------------------------


def third_smallest_and_two_below(x):
    p = np.partition(x, 2)
    return p[2] * 10.0 + np.sum(p[:2] ** 2)


def smallest_of_each_column(A):
    return np.sum(np.partition(A, 0, axis=0)[0] * np.arange(1.0, 5.0))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_partition_gradient_follows_the_elements(backend):
    """The third smallest element takes 10 where it is; the two below it, 2x each."""
    x = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2])
    got = s2s.jit(s2s.grad(third_smallest_and_two_below), backend=backend)(x)
    np.testing.assert_allclose(got, [0.0, 0.2, 0.0, 10.0, 0.0, 0.4], rtol=1e-14)
    A = np.array([[0.4, 0.1, 0.8, 0.3], [0.2, 0.5, 0.6, 0.9], [0.7, 0.3, 0.1, 0.6]])
    want = np.zeros_like(A)
    want[np.argmin(A, axis=0), np.arange(4)] = np.arange(1.0, 5.0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(smallest_of_each_column), backend=backend)(A), want, rtol=1e-14)


# ---- np.array of a number ------------------------------------------------------------


def array_of_a_number(s):
    return np.sum(np.array(s) * 3.0) + np.asarray(s) ** 2


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_array_of_a_number_takes_its_adjoint_as_a_number(backend):
    """A 0-d array's adjoint may reach np.array's rule as a number: d/ds (3 s + s ** 2) = 3 + 2 s."""
    assert s2s.jit(s2s.grad(array_of_a_number), backend=backend)(0.5) == pytest.approx(4.0, rel=1e-15)


# ---- the split family -----------------------------------------------------------------


def halves_product(x):
    a, b = np.split(x, 2)
    return np.sum(a * b)


def split_at_indices(x):
    parts = np.split(x, [1, 4])
    return np.sum(parts[0]) * 2.0 + np.sum(parts[2] ** 2) + np.sum(parts[1] * parts[1][0])


def split_along_axes(A):
    top, bottom = np.split(A, [1], axis=0)
    left, right = np.split(A * A, 2, axis=1)
    return np.sum(top * bottom[0]) + np.sum(left * np.cos(right))


def array_split_unevenly(x):
    ps = np.array_split(x, 4)  # pieces of 2, 2, 1, 1
    return np.sum(ps[1] ** 2) + np.sum(ps[3] * ps[0][0])


def split_unpacked_unevenly(x):
    a, b, c = np.array_split(x * x, [1, 4])
    return np.sum(a * c) + np.sum(np.sin(b))


def hsplit_vsplit_dsplit(A, x, T):
    left, right = np.hsplit(A, 2)
    up, down = np.vsplit(A * 2.0, [1])
    v1, v2 = np.hsplit(x, [2])
    front, back = np.dsplit(T, 2)
    return (np.sum(left * right) + np.sum(up**2) + np.sum(down) + np.sum(v1 * v2[0])
            + np.sum(front * np.sin(back)))


def sections_in_a_variable(x, n):
    total = 0.0
    for p in np.split(x, n):
        total = total + np.sum(p**2) * p[0]
    return total


_T = np.random.default_rng(15).random((2, 3, 4))
SPLIT_CASES = {
    "unpacked": (split_unpacked_unevenly, (X,)),
    "axes": (split_along_axes, (A,)),
    "hvd": (hsplit_vsplit_dsplit, (A, X, _T)),
    "variable_sections": (sections_in_a_variable, (X, 3)),
    "indices": (split_at_indices, (X,)),
    "uneven": (array_split_unevenly, (X,)),
}


def test_split_gradient_is_the_other_half():
    """d/dx sum(a * b) for a, b the halves of x is (b, a), in both modes and under s2s.jit."""
    x = np.arange(1.0, 7.0)
    want = np.concatenate((x[3:], x[:3]))
    np.testing.assert_allclose(s2s.grad(halves_product)(x), want, rtol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.grad(halves_product))(x), want, rtol=1e-15)
    np.testing.assert_allclose(s2s.jvp(halves_product, (x,), (np.ones(6),))[1], np.sum(x), rtol=1e-15)


@pytest.mark.parametrize("name", sorted(SPLIT_CASES))
def test_split_family_matches_finite_differences(name):
    fn, args = SPLIT_CASES[name]
    check_grads(fn, args, order=2)


@pytest.mark.parametrize("name", ["unpacked", "axes", "hvd", "variable_sections", "indices", "uneven"])
def test_split_family_under_jit(name):
    """Unpacked pieces (a tuple of adjoints), and an indexed list of pieces, of one shape or of
    different shapes (its adjoint a list of arrays, one per piece: runtime.split_zeros), however
    many pieces there are: the count may be known only as it runs."""
    fn, args = SPLIT_CASES[name]
    check_grads(fn, args, order=1, backend="cpu")


# ---- np.einsum: '...', three or more operands, repeated indices, the interleaved form -----


def einsum_leading_dots(a, b):
    return np.sum(np.einsum("...jk,...lj->...lk", a, b) ** 2) + np.sum(np.einsum("...,...->...", a, b) ** 2)


def einsum_dots_summed(a, b):
    return np.sum(np.einsum("...k,...nk->...", a, b) ** 2) + np.sum(np.einsum("...ij,...jk->...ik", b, b[0].T) ** 2)


def einsum_three_operands(a, b, c):
    return np.sum(np.einsum("ijk,lji,lli->lki", a, b, c) ** 2)


def einsum_diagonals(a):
    return np.sum(np.einsum("ii->i", a) ** 2) + np.sum(np.einsum("abcd->bd", a[None, :, None, :]) ** 3)


def einsum_implicit_output(a, b):
    return np.sum(np.einsum("ij,k", a, b) ** 2 * np.arange(36.0).reshape(3, 4, 3))


def einsum_interleaved(a, b):
    return np.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) ** 2) + np.sum(np.einsum(a, (1, 0)) * a.T)


def einsum_interleaved_dots(a, b):
    return np.sum(np.einsum(a, [Ellipsis, 0, 1], b, [..., 1, 2], [Ellipsis, 0, 2]) ** 2)


def einsum_interleaved_three(a, b, c):
    return np.sum(np.einsum(a, [0, 1, 2], b, [3, 1, 0], c, [3, 3, 0], [3, 2, 0]) ** 2)


_e = np.random.default_rng(16)
EINSUM_CASES = {
    "leading_dots": (einsum_leading_dots, (_e.standard_normal((4, 4)), _e.standard_normal((3, 4, 4)))),
    "leading_dots_other_way": (einsum_leading_dots, (_e.standard_normal((3, 4, 4)), _e.standard_normal((4, 4)))),
    "dots_summed": (einsum_dots_summed, (_e.standard_normal((3, 5)), _e.standard_normal((3, 5, 5)))),
    "three_operands": (einsum_three_operands, (_e.standard_normal((3, 4, 4)), _e.standard_normal((4, 4, 3)),
                                               _e.standard_normal((4, 4, 3)))),
    "diagonals": (einsum_diagonals, (_e.standard_normal((3, 3)),)),
    "implicit_output": (einsum_implicit_output, (_e.standard_normal((3, 4)), _e.standard_normal(3))),
    "interleaved": (einsum_interleaved, (_e.standard_normal((2, 3)), _e.standard_normal((3, 4)))),
    "interleaved_dots": (einsum_interleaved_dots, (_e.standard_normal((2, 2, 3)), _e.standard_normal((3, 4)))),
    "interleaved_three": (einsum_interleaved_three, (_e.standard_normal((3, 4, 4)), _e.standard_normal((4, 4, 3)),
                                                     _e.standard_normal((4, 4, 3)))),
}


@pytest.mark.parametrize("name", sorted(EINSUM_CASES))
def test_einsum_forms_match_numpy_and_finite_differences(name):
    """The lowered calls compute np.einsum's value, and their derivatives (forward, reverse, and
    the Hessian) agree with central differences; so do the compiled ones."""
    fn, args = EINSUM_CASES[name]
    value, _ = s2s.value_and_grad(fn)(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    check_grads(fn, args, order=2)
    check_grads(fn, args, order=1, backend="cpu")


def test_numpy_s_own_python_functions_passed_to_a_transform_are_taken_by_their_rules():
    # np.row_stack is a Python function in NumPy 2 (it warns, then calls np.vstack with dtype=):
    # given to a transform as it is, s2s calls it by its rule, as it calls np.tanh
    a, b = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out, pullback = s2s.vjp(np.row_stack, (a, b))
    np.testing.assert_array_equal(out, np.vstack((a, b)))
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    (grads,) = pullback(g)
    np.testing.assert_array_equal(grads[0], g[0])
    np.testing.assert_array_equal(grads[1], g[1])


def broadcast_pair(p0, p1):
    p0, p1 = np.broadcast_arrays(p0, p1)
    return np.sum(np.sin(p0) * np.cos(p1) + p0 * p1)


@pytest.mark.parametrize("first", [np.array([0.5, 2.0]), 2.0], ids=["vector", "number"])
def test_broadcast_arrays_in_every_mode(first):
    # (each operand broadcast to the shape of both: np.broadcast_to, whose adjoint sums back)
    second = np.arange(6.0).reshape(3, 2) / 3.0
    for k in (0, 1):
        want = central_difference_grad(broadcast_pair, (first, second), k)
        np.testing.assert_allclose(s2s.grad(broadcast_pair, argnums=k)(first, second), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2s.jit(s2s.grad(broadcast_pair, argnums=k))(first, second), want,
                                   rtol=1e-6, atol=1e-8)
    tangent = np.ones_like(first) if np.ndim(first) else 1.0
    assert s2s.jvp(broadcast_pair, (first, second), (tangent, np.zeros_like(second)))[1] == pytest.approx(
        np.sum(central_difference_grad(broadcast_pair, (first, second), 0)), rel=1e-6)


def test_a_batch_of_matrix_products_is_lowered_to_matmul_of_stacks():
    grad = s2s.grad(einsum_batched_loss)
    grad(T, U)
    text = s2s.source(grad)
    assert text.count(" @ ") == 3 and "None" not in text  # (no operand spread to broadcast)
