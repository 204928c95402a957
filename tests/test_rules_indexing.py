"""Rules of indexing: gathers through index arrays (a repeated index accumulates its adjoint) and
boolean masks, on the python backend and under s2s.jit, against closed forms; and the index and
truth methods x.argmax(), x.argmin(), x.argsort(), (x > 0).any() and .all(), whose results carry
no derivative, against central differences."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, hessian_by_differences, where

BACKENDS = ["python", "cpu"]
X = np.array([0.3, -0.7, 1.1])


# ---- gathers with index arrays and boolean masks, under jit too ----------------------------


def _embedding(W, idx):
    return np.sum(np.tanh(W[idx]) ** 2)


def _positive_cubes(A):
    return np.sum(A[A > 0.2] ** 3)


def _masked_rows(A, keep):
    picked = A[keep]
    return np.sum(picked * picked)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_gathers_with_index_arrays_and_masks_against_closed_forms(backend):
    rng = np.random.default_rng(4)
    W, idx = rng.normal(size=(5, 3)), np.array([0, 3, 3, 1])  # row 3 twice: its adjoint accumulates
    A = rng.normal(size=(3, 4))
    keep = np.array([True, False, True])

    def grad(f):
        return s2s.jit(s2s.grad(f)) if backend == "cpu" else s2s.grad(f)

    expected = np.zeros_like(W)
    np.add.at(expected, idx, 2 * np.tanh(W[idx]) * (1 - np.tanh(W[idx]) ** 2))
    np.testing.assert_allclose(grad(_embedding)(W, idx), expected, rtol=1e-13)
    np.testing.assert_allclose(grad(_positive_cubes)(A), np.where(A > 0.2, 3 * A ** 2, 0.0), rtol=1e-13)
    np.testing.assert_allclose(grad(_positive_cubes)(A[0]), np.where(A[0] > 0.2, 3 * A[0] ** 2, 0.0), rtol=1e-13)
    np.testing.assert_allclose(grad(_masked_rows)(A, keep), 2 * A * keep[:, None], rtol=1e-13)
    if backend == "cpu":  # the value itself: numba.njit indexes with 1-D masks only
        assert s2s.jit(_positive_cubes)(A) == pytest.approx(np.sum(A[A > 0.2] ** 3), rel=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hessian_of_a_masked_selection(backend):
    """x[x > 0.2] ** 3 summed: its Hessian is diag(6 x) where the mask picks (the code of the
    gradient reads runtime.masked, differentiated again), also of a matrix's entries."""
    x = np.array([0.5, -0.3, 1.2, 0.8, 0.1])
    np.testing.assert_allclose(s2s.jit(s2s.hessian(_positive_cubes), backend=backend)(x),
                               np.diag(np.where(x > 0.2, 6.0 * x, 0.0)), rtol=1e-13)
    A = np.array([[0.4, -1.0], [0.9, 0.25]])
    flat = hessian_by_differences(lambda v: _positive_cubes(v.reshape(2, 2)), A.ravel())
    np.testing.assert_allclose(s2s.jit(s2s.hessian(_positive_cubes), backend=backend)(A).reshape(4, 4), flat,
                               rtol=1e-6, atol=1e-6)


def _gathers_with_slices(T):
    """An index list with slices and integers: NumPy puts the gathered axis where the list
    stands (T[:, [1, 1], 2:]), or first where a slice separates it from an integer (T[3, 2:, [1, 3]])."""
    a = np.sum(T[[0, 1, 2], :, :] ** 2 * np.arange(48.0).reshape(3, 4, 4))
    b = np.sum(T[3, 2:, [1, 3]] ** 2 * np.array([[1.0, 2.0], [3.0, 5.0]]))
    c = np.sum(T[:, [1, 1], 2:] * np.arange(16.0).reshape(4, 2, 2))
    d = np.sum(np.sin(T[1:, [3, 0], :]) * np.arange(24.0).reshape(3, 2, 4))
    return a + b + c + d + np.sum(T[[0, 2], 1, [3, 3]] * np.array([2.0, 7.0]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gathers_mixing_an_index_list_with_slices_and_integers(backend):
    T = np.random.default_rng(6).normal(size=(4, 4, 4))
    np.testing.assert_allclose(s2s.jit(s2s.grad(_gathers_with_slices), backend=backend)(T),
                               central_difference_grad(_gathers_with_slices, (T,), 0), rtol=1e-7, atol=1e-7)


def _writes_through_index_arrays(x):
    """Writes through integer index arrays with distinct entries: each written element takes one
    value, so the adjoint of the value is the written elements' adjoint, taken before they are cleared."""
    z = np.zeros(4)
    z[np.array([0, 3, 2])] += x[:3]
    m = np.ones((4, 2)) * x[3]
    m[np.array([2, 0])] = np.outer(x[:2], x[1:3])
    m[[1, 3], 1] = x[1:3] ** 2  # (an index list with an integer: an array in the code Numba compiles)
    return np.sum(z ** 2 * np.arange(1.0, 5.0)) + np.sum(np.sin(m))


def _writes_through_a_repeated_index(x):
    z = np.zeros(4)
    idx = np.array([0, 2, 2])
    z[idx] += x[:3]
    return np.sum(z ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_through_index_arrays_with_distinct_entries(backend):
    x = np.array([0.3, 0.5, 0.9, 1.3])
    f = _writes_through_index_arrays
    np.testing.assert_allclose(s2s.jit(s2s.grad(f), backend=backend)(x), central_difference_grad(f, (x,), 0),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(f), backend=backend)(x), hessian_by_differences(f, x),
                               rtol=1e-5, atol=2e-5)
    # NumPy's z[idx] += v keeps one of the repeated writes: no derivative, refused at the statement
    # (under jit too, where the compiled check is given the statement's place).
    with pytest.raises(s2s.S2SError, match=r"index array repeats entries.*np.add.at\(x, idx, v\)") as info:
        s2s.jit(s2s.grad(_writes_through_a_repeated_index), backend=backend)(x)
    assert where(_writes_through_a_repeated_index, "z[idx] += x[:3]") in str(info.value)


# ---- index and truth methods: x.argmax(), x.argmin(), x.argsort(), (x > 0).any(), .all() ----------------


def index_methods(x):
    i = x.argmax()
    j = x.argmin()
    k = x.argsort()
    y = x * x
    if (x > -1.0).all() and (x > 1.0).any():
        y = y * 2.0
    return y[i] + x[j] * x[k[1]]


def argmax_along_rows(m):
    i = m.argmax(axis=1)
    return np.sum(m[0, i[0]] * m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_and_truth_methods(backend):
    grad = s2s.jit(s2s.grad(index_methods), backend=backend)
    np.testing.assert_allclose(grad(X), central_difference_grad(index_methods, (X,), 0), rtol=1e-6, atol=1e-8)
    m = np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 5.0]])
    np.testing.assert_allclose(s2s.jit(s2s.grad(argmax_along_rows), backend=backend)(m),
                               central_difference_grad(argmax_along_rows, (m,), 0), rtol=1e-6, atol=1e-8)


def _gathered_twice(h):
    h = np.tanh(h[ROWS_AGAIN])
    h = np.tanh(h[ROWS_AGAIN])
    return np.sum(h)


def _gathered_in_a_loop(h):
    for t in range(2):
        h = h + np.tanh(h[SOURCES] @ MIX)[:4]
    return np.sum(h * h)


ROWS_AGAIN = np.array([0, 1, 2, 2])
SOURCES = np.array([0, 1, 2, 2, 3])
MIX = np.array([[0.5, -0.2], [0.1, 0.3]])


@pytest.mark.parametrize("f", [_gathered_twice, _gathered_in_a_loop], ids=["twice", "in_a_loop"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gather_of_repeated_rows_of_a_rebound_variable(f, backend):
    """Where s2s.jit's facts do not prove h an array, the adjoint of h[idx] is added by
    runtime.add_at, which now accumulates repeated rows too (under jit row 2 had the adjoint of
    one of its two copies, 0.64 for 1.28)."""
    h = np.array([[0.2, -0.1], [0.4, 0.3], [-0.5, 0.1], [0.3, 0.2]])
    np.testing.assert_allclose(s2s.jit(s2s.grad(f), backend=backend)(h), central_difference_grad(f, (h,), 0),
                               rtol=1e-7, atol=1e-9)


# ---- segment sums: np.add.at and np.bincount with repeated indices -------------------------

SEGMENTS = np.array([0, 2, 0, 1, 2, 2])  # segment 2 three times, 0 twice, 3 never
ROWS = np.array([1, 0, 1])


def _add_at_into_an_argument(out, vals):
    np.add.at(out, SEGMENTS, vals)
    return np.sum(np.sin(out) * out)


def _add_at_rows(out, vals):
    totals = out * 1.0
    np.add.at(totals, ROWS, vals ** 2)  # rows of a matrix; row 1 twice
    np.add.at(totals, 0, vals[0])  # one index, the values spread along the row
    return np.sum(np.tanh(totals))


def _segment_sum_by_bincount(w, x):
    sums = np.bincount(SEGMENTS, weights=w * x[SEGMENTS % 3], minlength=5)
    return np.sum(np.sin(sums) * np.arange(5.0))


def _segment_sums_both_ways(vals):
    by_add_at = np.zeros(4)
    np.add.at(by_add_at, SEGMENTS, vals)
    return np.sum(by_add_at * np.bincount(SEGMENTS, vals, 4))


SEGMENT_SUMS = [
    (_add_at_into_an_argument, (np.array([0.1, 0.2, 0.3]), 0.1 * np.arange(6.0) + 0.05)),
    (_add_at_rows, (np.array([[0.1, 0.2], [0.3, -0.4]]), np.array([[0.5, -0.2], [0.7, 0.1], [-0.3, 0.6]]))),
    (_segment_sum_by_bincount, (0.1 * np.arange(6.0) - 0.2, np.array([0.4, -0.9, 1.3]))),
    (_segment_sums_both_ways, (0.1 * np.arange(6.0) + 0.05,)),
]


def _copied(f):
    """f on copies of its arguments: np.add.at writes into the caller's array, which the central
    differences pass again (s2s's transforms never write into an argument, as JAX's)."""
    return lambda *args: f(*(np.array(a, copy=True) for a in args))


@pytest.mark.parametrize("f, args", SEGMENT_SUMS, ids=[f.__name__ for f, _ in SEGMENT_SUMS])
@pytest.mark.parametrize("backend", BACKENDS)
def test_segment_sums_with_repeated_indices(f, args, backend):
    """The adjoint of the values is the result's adjoint read at each index (repeated indices each
    read it), and of add.at's array its result's adjoint: against central differences in every mode."""
    reference = _copied(f)
    for k in range(len(args)):
        expected = central_difference_grad(reference, args, k)
        got = s2s.jit(s2s.grad(f, argnums=k), backend=backend)(*args)
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(f, argnums=k), backend=backend)(*args), expected,
                                   rtol=1e-7, atol=1e-9)
    value, tangent = s2s.jvp(f, args, tuple(np.ones_like(a) for a in args))
    assert value == pytest.approx(reference(*args), rel=1e-13)
    assert tangent == pytest.approx(sum(np.sum(central_difference_grad(reference, args, k)) for k in range(len(args))),
                                    rel=1e-7)
    H = s2s.jit(s2s.hessian(f), backend=backend)(*args)
    flat = args[0].size
    expected = [np.ravel(central_difference_grad(lambda *a: np.ravel(s2s.grad(f)(*a))[i], args, 0, h=1e-5))
                for i in range(flat)]
    np.testing.assert_allclose(np.reshape(H, (flat, flat)), expected, rtol=1e-6, atol=1e-8)
    batch = [np.stack([a, 0.5 * a - 0.1]) for a in args]
    grads = s2s.jit(s2s.vmap(s2s.grad(f)), backend=backend)(*batch)
    for b in range(2):
        np.testing.assert_allclose(grads[b], central_difference_grad(reference, [a[b] for a in batch], 0),
                                   rtol=1e-7, atol=1e-9)


def test_add_at_leaves_the_callers_array_as_it_was():
    out, vals = np.array([0.1, 0.2, 0.3]), np.ones(6)
    for g in (s2s.grad(_add_at_into_an_argument, argnums=1), s2s.jit(s2s.grad(_add_at_into_an_argument, argnums=1))):
        g(out, vals)
        np.testing.assert_array_equal(out, [0.1, 0.2, 0.3])


def test_add_at_is_written_as_a_scatter_into_a_copy():
    source = s2s.grad(_add_at_into_an_argument, argnums=(0, 1)).source
    assert "out = runtime.scatter_add(out, SEGMENTS, vals)" in source
    assert "runtime.take_axis(" in source


def _subtract_at(out, vals):
    np.subtract.at(out, SEGMENTS, vals)
    return np.sum(out)


def _add_at_of_two_axes(A, vals):
    np.add.at(A, (ROWS, ROWS), vals)
    return np.sum(A)


def _add_at_into_a_module_array(vals):
    np.add.at(SEGMENTS, np.array([0, 1]), vals)
    return np.sum(vals)


def _add_at_into_a_shared_array(out, vals):
    kept = out
    np.add.at(out, SEGMENTS, vals)
    return np.sum(out * kept)


def _copyto(out, vals):
    np.copyto(out, vals)
    return np.sum(out)


def _fill(out, vals):
    out.fill(0.0)
    return np.sum(out * vals)


@pytest.mark.parametrize("f, reason", [
    (_subtract_at, r"np.subtract.at\(...\) is not supported; np.add.at\(a, indices, values\) is"),
    (_add_at_of_two_axes, r"np.add.at with a tuple of index arrays \(several axes\) is not supported; index a raveled"),
    (_add_at_into_a_module_array, r"'SEGMENTS' is an array of the module, which s2s captures as a constant"),
    (_add_at_into_a_shared_array, r"np.add.at\(out, ...\) updates an array that kept also refers to"),
    (_copyto, r"np.copyto\(...\) changes its argument in place \(and returns None\), which s2s does not support; "
              r"write the new values with indexing"),
    (_fill, r"out.fill\(...\) changes its argument in place"),
], ids=["subtract_at", "two_axes", "module_array", "shared", "copyto", "fill"])
def test_in_place_numpy_calls_are_refused_with_a_way_out(f, reason):
    """(np.add.at's statement was refused with `assign its result to a name`: it returns None.)"""
    args = {_add_at_of_two_axes: (np.ones((3, 3)), np.ones(3)), _add_at_into_a_module_array: (np.ones(6),),
            _add_at_into_a_shared_array: (np.ones(3), np.ones(6))}.get(f, (np.ones(3), np.ones(3)))
    with pytest.raises(s2s.S2SError, match=r"test_rules_indexing.py:\d+:\d+: " + reason):
        s2s.grad(f)(*args)


def test_add_at_with_indices_other_than_integers_is_refused_where_it_runs():
    def masked_add(out, vals):
        np.add.at(out, out > 0.5, vals)
        return np.sum(out)

    out = np.array([0.2, 0.7, 0.9])
    with pytest.raises(s2s.S2SError, match=r"np.add.at is differentiated with indices along the first axis"):
        s2s.grad(masked_add, argnums=1)(out, 1.0)
    with pytest.raises(s2s.S2SError, match=r"np.add.at takes indices along the first axis"):
        s2s.jit(s2s.grad(masked_add, argnums=1))(out, 1.0)


def rows_by_cast_labels(W):
    labels = W[:, -1].astype(np.int64)  # (repeated: rows 0 and 1 are gathered twice and more)
    chosen = np.int64(W[:, -2])
    return np.sum(W[labels, :-2] ** 2) + np.sum(W[chosen, 0])


def test_rows_gathered_by_an_index_array_made_by_a_cast_add_up_their_repeats():
    # (a cast of an array is an array of ints, not an int: its adjoint adds repeated rows up)
    W = np.array([[0.5, 1.0, 0.2, 0.3], [1.5, -1.0, 1.7, 1.2], [0.5, 2.0, 0.9, 0.6], [-0.5, 0.25, 0.1, 1.9]])
    want = central_difference_grad(rows_by_cast_labels, (W,), 0)
    np.testing.assert_allclose(s2s.grad(rows_by_cast_labels)(W), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(rows_by_cast_labels))(W), want, rtol=1e-6, atol=1e-8)
