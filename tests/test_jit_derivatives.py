"""Derivatives under s2s.jit (Numba) of programs whose generated code used to need what Numba
lacks: unpacking an array (its adjoint is a tuple: runtime.unpack_bar makes it an array), an
array built from lists of numbers (runtime.array_bar / reshape_bar of a list), a list of
numbers read back (runtime.zeros_like of a list), a gather with an integer list (the list is
made an array: codegen/numba_routes.py), np.linalg.norm with keepdims, and np.sum or np.mean
of a number (whose adjoint is a number). Every gradient is checked against central differences
or a closed form; first derivatives on both backends."""

import numpy as np
import pytest
from finite_differences import central_difference_grad

import s2s

X = np.array([0.3, 0.5, 0.7, 0.9])
M = np.array([[1.0, 2.0, 0.5], [0.2, -1.0, 0.4]])


# ---- unpacking an array ------------------------------------------------------------------


def unpack(x):
    a, b, c = x[:3]
    return a * b + np.sin(c)


def unpack_whole(x):
    p, q, r, s = x
    a, b = x[1:3]
    return p * q * r + s * s + a / b


def unpack_rows(x):
    r, s = x
    return np.sum(r * np.sin(s)) + np.sum(r * r)


def unpack_in_loop(x):
    t = 0.0
    for i in range(3):
        a, b = x[i : i + 2]
        t = t + a * b * b
    return t


def unpack_tuple(x):
    pair = (x[0], x[1] * 2.0)
    a, b = pair
    return a * b + x[2]


# ---- arrays and lists of numbers ----------------------------------------------------------


def matrix_of_numbers(x):
    m = np.array([[x[0], x[1]], [x[2], x[3]]])
    return np.sum(m @ m)


def vector_of_numbers(x):
    v = np.array([x[0] * x[1], np.sin(x[2]), 2.0])
    return np.sum(v * v)


def rows_of_numbers(x):
    m = np.array([[x[0], 1.0], [x[1] * x[2], x[3]], [x[3], x[0] ** 2]])
    return np.sum(np.tanh(m) * np.arange(6.0).reshape(3, 2))


def list_of_numbers(x):
    v = [x[0] * 2.0, x[1], x[2] ** 2]
    return v[0] + v[1] * v[2]


def long_list_of_numbers(x):
    v = [x[0], x[1] * x[2], np.cos(x[3]), x[0] * x[3], 3.0, x[2]]
    return v[0] * v[5] + v[1] + v[2] * v[3] - v[4] * v[1] + v[-1]


def list_read_in_loop(x):
    v = [x[0] * x[1], x[2], x[3] ** 2]
    t = 0.0
    for i in range(3):
        t = t + v[i] * v[i]
    return t


def list_of_arrays(x):
    v = [x * 2.0, x**2]
    return np.sum(v[0] * v[1])


# ---- gathers with an integer list --------------------------------------------------------


def gather(x):
    return np.sum(x[[0, 0, 1]] ** 2)


def gather_named(x):
    idx = [3, 0, 3, 3]
    return np.sum(x[idx] * x[idx] * np.arange(1.0, 5.0))


def gather_rows(x):
    return np.sum(np.sin(x[[1, 0, 1]]))


# ---- np.linalg.norm with keepdims --------------------------------------------------------


def norm_keepdims(x):
    return np.sum(x / np.linalg.norm(x, axis=1, keepdims=True))


def norm_columns_keepdims(x):
    return np.sum(x * np.linalg.norm(x, ord=1, axis=0, keepdims=True))


def norm_whole_keepdims(x):
    return np.sum(x / np.linalg.norm(x, keepdims=True)) + np.sum(np.linalg.norm(x * x, keepdims=True))


def norm_fro_keepdims(x):
    return np.sum(x * np.linalg.norm(x, "fro", keepdims=True)) + np.sum(np.linalg.norm(x, 1, keepdims=True))


def norm_vector_axis(x):
    return np.linalg.norm(x, axis=0) * np.sum(x / np.linalg.norm(x, axis=-1, keepdims=True) ** 2)


SCALAR_CASES = [
    (unpack, X),
    (unpack_whole, X),
    (unpack_rows, M),
    (unpack_in_loop, X),
    (unpack_tuple, X),
    (matrix_of_numbers, X),
    (vector_of_numbers, X),
    (rows_of_numbers, X),
    (list_of_numbers, X),
    (long_list_of_numbers, X),
    (list_read_in_loop, X),
    (gather, X),
    (gather_named, X),
    (gather_rows, M),
    (norm_keepdims, M),
    (norm_columns_keepdims, M),
    (norm_whole_keepdims, M),
    (norm_whole_keepdims, X),
    (norm_fro_keepdims, M),
    (norm_vector_axis, X),
]
IDS = [f"{f.__name__}-{a.ndim}d" for f, a in SCALAR_CASES]


@pytest.mark.parametrize(("fun", "x"), SCALAR_CASES, ids=IDS)
def test_jit_grad_against_central_differences(fun, x):
    expected = central_difference_grad(fun, (x,), 0)
    got = s2s.jit(s2s.grad(fun))(x.copy())
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.grad(fun)(x.copy()), expected, rtol=1e-6, atol=1e-8)  # python backend
    value, grad = s2s.jit(s2s.value_and_grad(fun))(x.copy())
    np.testing.assert_allclose(value, fun(x.copy()), rtol=1e-13)
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("fun", "x"), [(unpack, X), (matrix_of_numbers, X), (list_of_numbers, X),
                                         (gather, X), (norm_keepdims, M)], ids=lambda v: getattr(v, "__name__", ""))
def test_jit_jacrev_and_jacfwd_against_central_differences(fun, x):
    expected = central_difference_grad(fun, (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.jacrev(fun))(x.copy()), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fun))(x.copy()), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("fun", "x"), [(unpack, X), (unpack_rows, M), (matrix_of_numbers, X),
                                         (list_of_numbers, X), (gather, X), (norm_whole_keepdims, X)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_jit_hessian_against_central_differences_of_the_gradient(fun, x):
    """Each row of the Hessian against central differences of the gradient's component (the
    gradient itself is checked against central differences of the value above)."""
    hessian = s2s.jit(s2s.hessian(fun))(x.copy()).reshape(x.size, x.size)
    grad = s2s.grad(fun)
    for k, index in enumerate(np.ndindex(x.shape)):
        expected = central_difference_grad(lambda v: grad(v)[index], (x,), 0, h=1e-5)
        np.testing.assert_allclose(hessian[k], expected.ravel(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("fun", "x"), [(unpack, X), (matrix_of_numbers, X), (list_of_numbers, X),
                                         (gather, X), (norm_keepdims, M)], ids=lambda v: getattr(v, "__name__", ""))
def test_jit_vmap_grad_against_central_differences(fun, x):
    batch = np.stack([x, x * 1.5 - 0.2, np.cos(x) + 0.1])
    got = s2s.jit(s2s.vmap(s2s.grad(fun)))(batch)
    for row, example in zip(got, batch):
        np.testing.assert_allclose(row, central_difference_grad(fun, (example,), 0), rtol=1e-6, atol=1e-8)


def test_the_adjoint_of_a_gather_adds_each_repeated_entry():
    # d/dx sum(x[[0, 0, 1]] ** 2) = (4 x0, 2 x1, 0, 0): both reads of x[0] count (np.add.at)
    np.testing.assert_allclose(s2s.jit(s2s.grad(gather))(X), [4 * X[0], 2 * X[1], 0.0, 0.0], rtol=1e-15)


def test_a_list_index_becomes_an_array_in_the_generated_code():
    g = s2s.jit(s2s.grad(gather_named))
    g(X)
    assert "idx = np.array([3, 0, 3, 3])" in s2s.source(g)


def test_unpacking_an_array_gives_an_array_adjoint_under_jit():
    g = s2s.jit(s2s.grad(unpack))
    np.testing.assert_allclose(g(X), [X[1], X[0], np.cos(X[2]), 0.0], rtol=1e-15)
    assert "runtime.unpack_bar((a_bar, b_bar, c_bar), _t1)" in s2s.source(g)
    # where the unpacked value is a tuple display, its adjoint stays a tuple
    assert "unpack_bar" not in s2s.source(s2s.jit(s2s.grad(unpack_tuple)))


def quaternion(q):
    """A helper that builds an array and returns it."""
    r = np.empty(4)
    r[:3] = q[1:] * 2.0
    r[3] = q[0]
    return r


def unpack_helper_array(q):
    w, x, y, z = quaternion(q)
    return w * x + y * z ** 2


def halves(q):
    return q[0] * 2.0, np.sin(q[1:])


def unpack_helper_tuple(q):
    a, b = halves(q)
    return a * np.sum(b ** 2)


@pytest.mark.parametrize("fun", [unpack_helper_array, unpack_helper_tuple], ids=lambda f: f.__name__)
def test_unpacking_what_a_helper_returns_in_every_mode(fun):
    """An array or a tuple: either may come back from a user's function, and its adjoint is of its kind."""
    q = np.array([0.3, 0.5, -0.7, 1.1])
    want = central_difference_grad(fun, (q,), 0)
    np.testing.assert_allclose(s2s.grad(fun)(q), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(q), want, rtol=1e-6, atol=1e-8)
    direction = np.array([0.2, -1.0, 0.4, 0.7])
    assert s2s.jvp(fun, (q,), (direction,))[1] == pytest.approx(want @ direction, rel=1e-6)


def test_unpack_bar_on_the_python_backend():
    from s2s import runtime

    parts = (1.0, 2.0)
    assert runtime.unpack_bar(parts, (3.0, 4.0)) is parts
    got = runtime.unpack_bar(parts, np.zeros(2, np.float32))
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.tolist() == [1.0, 2.0]


def test_norm_keepdims_values_under_jit_match_numpy():
    for fun, x in [(norm_keepdims, M), (norm_columns_keepdims, M), (norm_whole_keepdims, M),
                   (norm_whole_keepdims, X), (norm_fro_keepdims, M), (norm_vector_axis, X)]:
        np.testing.assert_allclose(s2s.jit(fun)(x.copy()), fun(x.copy()), rtol=1e-13)


def test_a_list_of_arrays_under_jit():
    # Its adjoint under jit is an array with a row per item (tests/test_jit_lists.py has more).
    expected = central_difference_grad(list_of_arrays, (X,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(list_of_arrays))(X), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.grad(list_of_arrays)(X), expected, rtol=1e-6, atol=1e-8)


# ---- the adjoint of np.sum of a number is a number under jit -------------------------------


def sum_of_a_number_in_a_loop(a):
    b = a
    for i in range(3):
        b = np.sum(b) * a  # b = a^4 at the end
    return b


def mean_of_a_number_in_a_loop(a):
    b = a
    for i in range(2):
        b = np.mean(b) * a + 1.0  # b = a^3 + a + 1
    return b


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_grad_of_a_sum_of_a_number_under_jit(backend):
    a = 0.7
    g = s2s.jit(s2s.grad(sum_of_a_number_in_a_loop), backend=backend)(a)
    assert isinstance(g, float) and g == pytest.approx(4 * a**3)
    gg = s2s.jit(s2s.grad(s2s.grad(sum_of_a_number_in_a_loop)), backend=backend)(a)
    assert isinstance(gg, float) and gg == pytest.approx(12 * a**2)
    assert s2s.jit(s2s.grad(mean_of_a_number_in_a_loop), backend=backend)(a) == pytest.approx(3 * a**2 + 1)


# ---- reductions of a number: the number itself (max, min, mean), 0 (var) -------------------


def max_of_a_number(a):
    return np.max(a * a) + np.min(np.sin(a)) * 2.0


def var_and_mean_of_a_number(a):
    return np.var(a * a) + np.mean(a**3) + a


@pytest.mark.parametrize("fun", [max_of_a_number, var_and_mean_of_a_number])
def test_reductions_of_a_number_under_jit(fun):
    a = 0.7
    expected = central_difference_grad(fun, [a], 0)
    assert s2s.jit(fun)(a) == pytest.approx(fun(a), rel=1e-12)
    assert s2s.grad(fun)(a) == pytest.approx(expected, rel=1e-6)  # the python backend
    assert s2s.jit(s2s.grad(fun))(a) == pytest.approx(expected, rel=1e-6)
    assert s2s.jit(s2s.jacfwd(fun))(a) == pytest.approx(expected, rel=1e-6)  # forward mode


def std_of_a_number(a):
    return np.std(a * 3.0) + a


def test_the_std_of_a_number_under_jit():
    """np.std of a number is 0 for every value: its derivative is 0, under jit as on the python backend."""
    assert s2s.jit(std_of_a_number)(0.7) == pytest.approx(0.7)
    assert s2s.jit(s2s.grad(std_of_a_number))(0.7) == s2s.grad(std_of_a_number)(0.7) == 1.0


# ---- an argument that is None --------------------------------------------------------------


def weights_by_default(x, w=None, b=None):
    if w is None:
        w = np.ones(3) * 2.0
    s = np.sum(np.sin(w * x))
    if b is not None:
        s = s + np.sum(b * x)
    return s


def test_a_none_argument_takes_its_branch_under_jit():
    """The gradient is generated for each kind of call, as JAX traces per signature: a None
    argument decides `if w is None:`, and the branch not taken (`w * x` of a None w, which
    Numba cannot type) is left out."""
    x, b = np.array([0.3, 0.5, 0.9]), np.array([1.0, -2.0, 0.5])
    grad = s2s.jit(s2s.grad(weights_by_default))
    for args in ((None,), (None, b)):
        expected = central_difference_grad(lambda v: weights_by_default(v, *args), (x,), 0)
        np.testing.assert_allclose(grad(x, *args), expected, rtol=1e-7, atol=1e-9)
    source = s2s.source(grad)  # (of the latest call: w None, b an array)
    assert "w None, b 1-d array" in source and "is None" not in source and "is not None" not in source


def rows_of_arrays(x):
    """np.array of a nested display whose items are arrays: an array of two more dimensions."""
    return np.sum(np.sin(np.array([[2.0 * x, x + 1.0], [x, x * x]])) * np.arange(1.0, 5.0).reshape(2, 2, 1, 1))


def rows_of_array_tuples(x):
    stacked = np.array(((x, np.cos(x)), (x ** 3, x)))
    return np.sum(stacked[0, 1] * stacked[1, 0])


@pytest.mark.parametrize("fun", [rows_of_arrays, rows_of_array_tuples], ids=lambda f: f.__name__)
def test_array_of_rows_of_arrays_in_every_mode(fun):
    x = np.array([[0.3, -0.5], [1.1, 0.2], [0.7, 0.9]])
    want = central_difference_grad(fun, (x,), 0)
    np.testing.assert_allclose(s2s.grad(fun)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(fun)(x), fun(x), rtol=1e-12)
    direction = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    assert s2s.jvp(fun, (x,), (direction,))[1] == pytest.approx(np.sum(want * direction), rel=1e-6)


def append_to_a_list(values, last):
    return np.sum(np.sin(np.append(values, last)) ** 2)


def test_append_to_a_list_argument_under_jit():
    """A list argument (a tuple under s2s.jit) appended to: its gradient is a list, as JAX's."""
    values, last = [0.3, -1.2, 0.8], 0.5
    want = central_difference_grad(lambda v, w: append_to_a_list(list(v), w), (np.array(values), last), 0)
    want_last = central_difference_grad(lambda v, w: append_to_a_list(list(v), w), (np.array(values), last), 1)
    for grad in (s2s.grad(append_to_a_list, argnums=(0, 1)), s2s.jit(s2s.grad(append_to_a_list, argnums=(0, 1)))):
        got, got_last = grad(values, last)
        assert isinstance(got, list)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
        assert got_last == pytest.approx(want_last, rel=1e-6)


def clipped_cosine(x):
    """np.clip of numbers (a cosine kept inside [-1, 1] before arccos), as library code writes it."""
    c = np.clip(np.sum(x * x) - 1.0, -1.0, 1.0)
    return np.arccos(c) * x[0]


def joined_with_displays(x):
    """np.hstack of an array, a tuple display and a list display: NumPy makes each an array."""
    return np.sum(np.hstack((x * 2.0, (x[0] ** 2,), [x[1], 3.0])) ** 2)


def as_float_array(a):
    return np.asarray(a, dtype=np.float64) * 2.0


def wraps_a_number(x):
    """np.asarray of a number in a helper: a 0-d array whose adjoint, under jit, is a number again."""
    angle = x[2]
    angle = as_float_array(angle)
    return np.sum(x[:2]) * angle


@pytest.mark.parametrize("fun", [clipped_cosine, joined_with_displays, wraps_a_number], ids=lambda f: f.__name__)
def test_forms_of_library_code_in_every_mode(fun):
    x = np.array([0.6, -0.5, 0.4])
    want = central_difference_grad(fun, (x,), 0)
    np.testing.assert_allclose(s2s.grad(fun)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(fun)(x), fun(x), rtol=1e-12)
    direction = np.array([0.3, 1.0, -0.7])
    assert s2s.jvp(fun, (x,), (direction,))[1] == pytest.approx(want @ direction, rel=1e-6)


def contracted_by_list_axes(a, b):
    """np.tensordot with its axes as a list of lists, as NumPy's documentation writes them."""
    return np.sum(np.tensordot(a, b, axes=[[-1], [0]]) ** 2)


def test_nested_list_arguments_of_library_functions_under_jit():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 4)), rng.standard_normal((4, 3))
    want = central_difference_grad(contracted_by_list_axes, (a, b), 0)
    np.testing.assert_allclose(s2s.grad(contracted_by_list_axes)(a, b), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(contracted_by_list_axes))(a, b), want, rtol=1e-6, atol=1e-8)


# ---- a reshape whose shape is taped ------------------------------------------------------
# An argument rebound to its reshape has its former shape taped; the adjoint is reshaped back to
# it (runtime.reshape_bar of a tuple of ints: a shape, not a list of numbers).


def flattened_in_place(x):
    x = x.reshape(-1)
    return np.sum(x ** 3)


def column_in_place(x):
    x = x.reshape(x.shape[0] * x.shape[1], 1)
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("fun", [flattened_in_place, column_in_place])
@pytest.mark.parametrize("x", [M, M[:, :1]], ids=["2x3", "2x1"])
def test_an_argument_rebound_to_its_reshape(fun, x):
    for backend in ("python", "cpu"):
        got = s2s.jit(s2s.grad(fun), backend=backend)(x)
        assert got.shape == x.shape
        np.testing.assert_allclose(got, central_difference_grad(fun, (x,), 0), rtol=1e-6, atol=1e-9)
