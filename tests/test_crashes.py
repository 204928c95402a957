"""Programs that once crashed with a raw Python or Numba error naming no line of the user's
code; each now works, checked against central differences (s2s.testing.check_grads)."""

import numpy as np
import pytest

import s2s
from s2s.testing import check_grads


def stepped_inner_range(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i, n, 2):
            s = s + x[i] * x[j]
    return s


def descending_stepped_inner_range(x):
    n = x.shape[0]
    s = 0.0
    for i in range(2):
        for j in range(n, 0, -2):
            s = s + np.sin(x[j - 1]) * x[i]
    return s


@pytest.mark.parametrize("fun", [stepped_inner_range, descending_stepped_inner_range])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_nested_loops_with_a_stepped_inner_range(fun, backend):
    """The inner loop's trip count is taped per outer iteration (it raised UnboundLocalError:
    j_trips, the count pushed before it was assigned)."""
    x = np.array([0.3, 0.5, -0.2, 0.9, 1.1])
    check_grads(fun, (x,), order=2 if backend == "python" else 1, backend=backend)


def mlp_over_a_list(Ws, x):
    h = x
    for i in range(len(Ws)):
        h = np.tanh(h @ Ws[i])
    return np.sum(h)


def mlp_iterating(Ws, x):
    h = x
    for W in Ws:
        h = np.tanh(h @ W)
    return np.sum(h)


def mlp_of_pairs(params, x):
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.sum(h)


def mlp_indexing_pairs(params, x):
    h = x
    for i in range(len(params)):
        h = np.tanh(h @ params[i][0] + params[i][1])
    return np.sum(h)


def weighted_sum(ws, x):
    s = 0.0
    for i in range(len(ws)):
        s = s + ws[i] * x[i]
    return s


def _network():
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((3, 4)), rng.standard_normal((4, 2))]
    bs = [rng.standard_normal(4), rng.standard_normal(2)]
    return Ws, [(W, b) for W, b in zip(Ws, bs)], rng.standard_normal(3)


@pytest.mark.parametrize("fun, pairs", [(mlp_over_a_list, False), (mlp_iterating, False), (mlp_of_pairs, True),
                                        (mlp_indexing_pairs, True)])
def test_loops_over_a_list_of_layers(fun, pairs):
    """The usual MLP: layers of different widths in a list, indexed or iterated by a loop;
    the gradient has the list's structure (python backend)."""
    Ws, params, x = _network()
    args = (params if pairs else Ws, x)
    check_grads(fun, args, argnums=(0,), modes=("rev", "fwd"))
    grad = s2s.grad(fun)(*args)
    assert isinstance(grad, list) and len(grad) == 2
    if pairs:
        assert all(isinstance(g, tuple) and g[0].shape == W.shape and g[1].shape == b.shape
                   for g, (W, b) in zip(grad, params))


def test_a_loop_over_a_tuple_of_numbers():
    x = np.array([0.3, -1.2, 2.0])
    grad = s2s.grad(weighted_sum)((0.5, 1.5, 2.0), x)
    assert isinstance(grad, tuple)
    np.testing.assert_allclose(grad, x, rtol=1e-14)
    check_grads(weighted_sum, ((0.5, 1.5, 2.0), x))


def test_a_loop_over_a_tuple_under_jit_is_refused_with_its_line():
    Ws, _, x = _network()
    with pytest.raises(s2s.S2SError, match=r"test_crashes.py:\d+:\d+: under s2s.jit, Ws, a tuple or list, is read"):
        s2s.jit(s2s.grad(mlp_over_a_list))(Ws, x)


def squeezed(x):
    y = np.squeeze(x)
    return np.sum(y * y)


def test_a_statement_numba_cannot_compile_is_an_s2s_error_at_its_line():
    """Under s2s.jit, Numba's refusal names the user's statement (file:line:column), not a
    line of the generated module; Numba's message stays in __cause__."""
    with pytest.raises(s2s.S2SError, match=r"test_crashes.py:\d+:5: Numba cannot compile .*squeeze") as info:
        s2s.jit(s2s.grad(squeezed))(np.ones((3, 1)))
    assert "y = np.squeeze(x)" in str(info.value)
    assert type(info.value.__cause__).__name__ == "TypingError"
    np.testing.assert_allclose(s2s.grad(squeezed)(np.ones((3, 1))), 2 * np.ones((3, 1)))  # the python backend


def accumulates_an_array_from_a_number(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return np.sum(s)


def int_that_becomes_a_float(a):
    out = 1
    for i in range(3):
        out = out * a
    return out


def test_a_variable_of_two_types_under_jit_says_how_to_type_it():
    """Numba types a variable once: the refusal names the statement and says what to write. A
    number that turns from an int into a float compiles (its tape unifies by dtype: NumberTape)."""
    x = np.array([0.3, 0.7, 0.9])
    with pytest.raises(s2s.S2SError, match=r"test_crashes.py:\d+:5: .*np.zeros_like\(x\) rather than 0.0"):
        s2s.jit(accumulates_an_array_from_a_number)(x, 3)
    assert s2s.jit(s2s.grad(int_that_becomes_a_float))(1.5) == pytest.approx(3 * 1.5 ** 2)
    # both are right on the python backend (value and closed-form derivatives)
    assert s2s.jit(accumulates_an_array_from_a_number, backend="python")(x, 3) == pytest.approx(3 * np.sum(x))
    np.testing.assert_allclose(s2s.grad(accumulates_an_array_from_a_number)(x, 3), 3.0 * np.ones(3))
    assert s2s.grad(int_that_becomes_a_float)(1.5) == pytest.approx(3 * 1.5 ** 2)


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


def local_named_runtime(x):
    runtime = x * 2.0
    np_ = runtime * x
    return np.sum(np_)


def helper_h(x):
    return x * x


def helper_h_vjp(x):  # what helper_h's reverse mode would be called
    return np.sin(x)


def calls_h_and_h_vjp(x):
    return np.sum(helper_h(x) + helper_h_vjp(x))


def scaled_value_and_grad(x):
    return x * 3.0


def scaled(x):
    return np.sum(scaled_value_and_grad(x))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_user_names_that_generated_code_also_uses(backend):
    """A local named runtime, helpers named h and h_vjp, a helper named f_value_and_grad next
    to f: generated modules resolve their own names whatever the user calls things."""
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(s2s.jit(s2s.grad(local_named_runtime), backend=backend)(x), 4 * x, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(calls_h_and_h_vjp), backend=backend)(x), 2 * x + np.cos(x),
                               rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scaled), backend=backend)(x), [3.0, 3.0], rtol=1e-14)
    np.testing.assert_allclose(s2s.jacfwd(local_named_runtime)(x), 4 * x, rtol=1e-14)


def double_buffered_heat(u, steps):
    n = u.shape[0]
    for t in range(steps):
        v = u.copy()
        for i in range(n):
            v[i] = u[i] + 0.1 * (u[i - 1] - 2.0 * u[i] + u[(i + 1) % n])
        u = v
    return np.sum(u * u)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_double_buffered_time_stepping_is_not_refused(backend):
    """v = u.copy() at the top of each step is a new array, not the one u = v refers to from the
    step before (the alias analysis told them apart by where they were made, not when)."""
    u = np.array([0.1, 0.5, -0.3, 0.8])
    check_grads(double_buffered_heat, (u, 3), argnums=(0,), backend=backend)


def reshaped(x):
    return np.sum(np.reshape(x, (3, 3)) ** 2 * np.arange(9.0).reshape(3, 3))


def reshaped_by_method(x, a, b):
    return np.sum(x.reshape(a, b)[0] * 2.0)


def test_vmap_of_a_reshape_keeps_the_shape_unbatched():
    """vmap (vectorised NumPy) of np.reshape(x, (3, 3)) and x.reshape(a, b): the shape tuple was
    lifted as if it were batched data."""
    X = np.random.default_rng(1).standard_normal((4, 9))
    batched = s2s.vmap(reshaped)
    np.testing.assert_allclose(batched(X), [reshaped(x) for x in X], rtol=1e-13)
    assert "batched_reshape" in s2s.source(batched)  # vectorised, not the loop over examples
    np.testing.assert_allclose(s2s.vmap(reshaped_by_method, in_axes=(0, None, None))(X, 3, 3),
                               [reshaped_by_method(x, 3, 3) for x in X], rtol=1e-13)
    grads = s2s.vmap(s2s.grad(reshaped))(X)
    np.testing.assert_allclose(grads, 2 * X * np.arange(9.0), rtol=1e-13)


def writes_through_a_repeated_index(x, v):
    z = x * 1.0
    idx = np.array([0, 0, 2])
    z[idx] += v
    return np.sum(z * z)


def test_a_runtime_refusal_names_the_users_statement():
    """A runtime helper's refusal while generated code runs as NumPy (a write through an index
    array with repeated entries) is an S2SError at the user's statement."""
    x, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.7, 0.9])
    with pytest.raises(s2s.S2SError, match=r"test_crashes.py:\d+:5: a write x\[idx\] = v whose index array repeats") as info:
        s2s.grad(writes_through_a_repeated_index, argnums=(0, 1))(x, v)
    assert "z[idx] += v" in str(info.value)
    assert type(info.value.__cause__) is ValueError


def test_an_internal_error_of_numbas_compiler_is_an_s2s_error_and_a_runtime_error_stays_itself():
    import numba

    from s2s.backends.failures import checked

    @numba.njit
    def pick(A, mask):  # a 2-d boolean mask: Numba's lowering asserts (generated code routes it: runtime.masked)
        return A[mask].sum()

    def user(A, mask):
        return pick(A, mask)

    with pytest.raises(s2s.S2SError, match="Numba failed while compiling the code generated for user") as info:
        checked(pick, (), user)(np.ones((2, 2)), np.ones((2, 2)) > 0)
    assert info.value.origin is not None and info.value.origin.line == user.__code__.co_firstlineno

    @numba.njit
    def refuse(x):
        if x > 1.0:
            raise ValueError("too large")
        return x

    with pytest.raises(ValueError, match="too large"):
        checked(refuse, (), user)(2.0)


def ellipsis_of_a_0d_array(x):
    a = np.array(x[0] * 2.0)
    return a[...] * x[1]


def write_through_a_2d_mask(x):
    y = x * 1.0
    y[x > 0.5] = 0.0
    return np.sum(y)


@pytest.mark.parametrize("fn, x, cause", [
    (ellipsis_of_a_0d_array, np.array([1.0, 3.0]), r"a\[\.\.\.\] of a 0-d array a, .*: a\[\(\)\] reads its number"),
    (write_through_a_2d_mask, np.ones((2, 2)), r"a write through a boolean mask of two or more dimensions.*np\.where\(mask, v, y\)"),
])
def test_numba_lowering_failures_name_their_known_cause(fn, x, cause):
    # each hint for its own failure only (a[...] of a 0-d array was sent to the boolean mask's)
    with pytest.raises(s2s.S2SError, match=f"Numba failed while compiling.*a known cause: {cause}"):
        s2s.jit(fn)(x)


def test_a_dict_loop_that_takes_items_by_position_is_an_s2s_error_at_the_loop():
    def over_keys(d, x):
        s = 0.0
        for k in d:
            s = s + np.sum(x * x) * len(k)  # k used, but not as an index: items are taken by position
        return s

    with pytest.raises(s2s.S2SError, match=r"a loop over a dict whose body does not index it.*d\.keys\(\)") as info:
        s2s.grad(over_keys, argnums=1)({"a": 1.0, "b": 2.0}, np.arange(3.0))
    assert f"test_crashes.py:{over_keys.__code__.co_firstlineno + 2}:" in str(info.value)
