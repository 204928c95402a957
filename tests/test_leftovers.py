"""The leftover items of issues #14 and #16: loops over dicts, second and third derivatives
of prod, norm and cumprod, sums under jit, symbolic zeros, check_grads under Numba, dtype=
keywords, empty scans, optimizers under jit. Each derivative is checked against central
finite differences or a closed form; each refusal is an S2SError at the user's line."""

import cmath

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


# ---- 1. loops over dicts (in Python's insertion order: test_red_team_python.py) ----------


def loop_keys(d, x):
    s = 0.0
    for k in d:
        s = s + np.sum(d[k] ** 2 * x)
    return s


def loop_items(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(np.sin(v)) * len(k)
    return s


def loop_values(d):
    s = 0.0
    for v in d.values():
        s = s + np.sum(v * v * v)
    return s


def _dict():
    return {"bb": np.array([1.0, 2.0]), "a": np.array([3.0])}


def _dict_fd(fun, d, *rest):
    keys = sorted(d)
    flat = np.concatenate([d[k] for k in keys])
    cuts = np.cumsum([d[k].size for k in keys])[:-1]

    def flat_fun(v):
        return fun(dict(zip(keys, np.split(v, cuts))), *rest)

    g = central_difference_grad(flat_fun, [flat], 0)
    return dict(zip(keys, np.split(g, cuts)))


@pytest.mark.parametrize("fun", [loop_keys, loop_items, loop_values])
def test_grad_of_a_loop_over_a_dict(fun):
    d = _dict()
    rest = (1.5,) if fun is loop_keys else ()
    got = s2s.grad(fun)(d, *rest)
    want = _dict_fd(fun, d, *rest)
    assert sorted(got) == sorted(d)
    for k in d:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-7, atol=1e-8)


def test_jvp_hessian_and_vmap_of_a_loop_over_a_dict():
    d = _dict()
    tangent = {"bb": np.array([1.0, -1.0]), "a": np.array([0.5])}
    value, out_tangent = s2s.jvp(loop_keys, (d, 1.5), (tangent, 0.0))
    assert value == pytest.approx(loop_keys(d, 1.5))
    # d/dd sum(v^2 x) . t = sum(2 v t x)
    assert out_tangent == pytest.approx(sum(np.sum(2 * d[k] * tangent[k] * 1.5) for k in d))
    hess = s2s.hessian(loop_keys)(d, 1.5)
    np.testing.assert_allclose(hess["bb"]["bb"], 3.0 * np.eye(2))
    np.testing.assert_allclose(hess["a"]["bb"], np.zeros((1, 2)))
    batch = {"bb": np.arange(8.0).reshape(4, 2) / 7, "a": np.arange(4.0).reshape(4, 1) / 5}
    grads = s2s.vmap(s2s.grad(loop_items))(batch)
    for i in range(4):
        one = {k: v[i] for k, v in batch.items()}
        want = _dict_fd(loop_items, one)
        for k in batch:
            np.testing.assert_allclose(grads[k][i], want[k], rtol=1e-7, atol=1e-8)


def test_a_loop_over_int_indices_keeps_working():
    def f(xs, idx):
        s = 0.0
        for i in idx:
            s = s + xs[i] * xs[i]
        return s

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2s.grad(f)(x, [0, 2, 2]), [2.0, 0.0, 12.0])
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x, np.array([0, 2, 2])), [2.0, 0.0, 12.0])


@pytest.mark.parametrize("fun", [loop_keys, loop_items])
def test_a_loop_over_a_dict_under_jit_is_a_located_refusal(fun):
    rest = (1.5,) if fun is loop_keys else ()
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(s2s.grad(fun))(_dict(), *rest)
    message = str(info.value)
    assert "test_leftovers.py:" in message and "loop over a dict" in message and "backend='python'" in message


def ordered_by_keys(d, x):
    t = x
    for k in d:
        t = t * 2.0 + d[k]
    return t


def counts_keys(d, x):
    t = x
    for k in d:
        t = t * 2.0 + k
    return t


def test_a_loop_over_a_dict_takes_the_keys_in_insertion_order():
    # (it took them sorted: 9 for Python's 8, and a gradient of 4 for Python's 4 by chance)
    d = {"b": 1.0, "a": 2.0}
    assert ordered_by_keys(d, 1.0) == 8.0
    assert s2s.jit(ordered_by_keys, backend="python")(d, 1.0) == 8.0
    assert s2s.grad(ordered_by_keys, argnums=(0, 1))(d, 1.0) == ({"b": 2.0, "a": 1.0}, 4.0)


def test_a_loop_over_a_dict_that_does_not_index_it_is_refused():
    # (it went over d[0], d[1]: the values of a dict with int keys, 21 where Python gives 5)
    for run in (s2s.jit(counts_keys, backend="python"), s2s.grad(counts_keys, argnums=1)):
        with pytest.raises(s2s.S2SError, match=r"test_leftovers.py:\d+: a loop over a dict whose body does not "
                                               r"index it.*d\.keys\(\)"):
            run({0: 5.0, 1: 7.0}, 1.0)
    assert s2s.jit(counts_keys, backend="python")([0.0, 1.0], 1.0) == 5.0  # a list's items, as before


# ---- 2. second derivatives of np.prod (the rule of its adjoint helper, exact at zeros) ----


def prod_all(x):
    return np.prod(x)


def prod_rows(X):
    return np.sum(np.prod(X, axis=1) ** 2)


def prod_columns_kept(X):
    return np.sum(np.sin(np.prod(X, axis=0, keepdims=True)))


def _prod_hessian(x):
    """H[i, j] = the product of x without x[i] and x[j] (i != j), 0 on the diagonal."""
    n = len(x)
    return np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("x", [[0.5, -1.2, 2.0, 0.7], [0.5, 0.0, 2.0, 0.0], [0.0, 3.0, 1.5]])
def test_hessian_of_prod_is_the_closed_form_with_zeros(x):
    x = np.array(x)
    np.testing.assert_allclose(s2s.hessian(prod_all)(x), _prod_hessian(x), atol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(prod_all))(x), _prod_hessian(x), atol=1e-14)


@pytest.mark.parametrize("fun", [prod_rows, prod_columns_kept])
def test_hessian_of_prod_along_an_axis_against_finite_differences(fun):
    X = np.array([[0.5, 0.0, 2.0], [0.7, -1.1, 1.3]])
    g = s2s.grad(fun)
    want = np.array([central_difference_grad(lambda y: g(y).ravel()[k], [X], 0).ravel() for k in range(X.size)])
    for got in (s2s.hessian(fun)(X), s2s.jit(s2s.hessian(fun))(X)):
        np.testing.assert_allclose(got.reshape(X.size, X.size), want, atol=1e-8)


def test_grad_grad_of_prod_of_a_scalar():
    def f(t):
        return np.prod(np.array([t, 2 * t, t * t, 1.5]))  # 3 t^4

    assert s2s.grad(s2s.grad(f))(0.7) == pytest.approx(36 * 0.7**2)


# ---- 3. second derivatives of the spectral and nuclear norms (through the SVD) -----------


def norm_spectral(A):
    return np.linalg.norm(A, 2)


def norm_smallest(A):
    return np.linalg.norm(A, -2)


def norm_nuclear(A):
    return np.linalg.norm(A, "nuc")


def norm_nuclear_stack(A):
    return np.sum(np.linalg.norm(A, "nuc", axis=(1, 2)) ** 2)


def norm_spectral_axes(A):
    return np.sum(np.linalg.norm(A, 2, axis=(0, 2)))


def _fd_hessian(fun, x):
    g = s2s.grad(fun)
    return np.array([central_difference_grad(lambda y: g(y).ravel()[k], [x], 0).ravel() for k in range(x.size)])


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
@pytest.mark.parametrize("fun", [norm_spectral, norm_smallest, norm_nuclear])
def test_hessian_of_matrix_norms_through_the_svd(fun, shape):
    A = np.random.default_rng(1).normal(size=shape)
    want = _fd_hessian(fun, A)
    for got in (s2s.hessian(fun)(A), s2s.jit(s2s.hessian(fun))(A)):
        np.testing.assert_allclose(got.reshape(A.size, A.size), want, atol=1e-7)


def test_hessian_of_the_spectral_norm_is_the_closed_form_of_a_diagonal_matrix():
    # sigma_1(A) for A = [[3, e], [0, 1]] is the largest root of s^4 - (10 + e^2) s^2 + 9 = 0
    # (A^T A has trace 10 + e^2 and determinant 9).
    A = np.array([[3.0, 0.0], [0.0, 1.0]])
    h = s2s.hessian(norm_spectral)(A).reshape(4, 4)
    # d^2 sigma / de^2 at e = 0 from the root: sigma^2 = (10 + e^2 + sqrt((10 + e^2)^2 - 36)) / 2
    # gives d(sigma^2)/d(e^2) = (1 + 10 / 8) / 2 = 9 / 8, so sigma'' = 2 * (9 / 8) / (2 * 3) = 3 / 8.
    assert h[1, 1] == pytest.approx(3 / 8)
    assert h[0, 0] == pytest.approx(0.0, abs=1e-12)  # sigma is linear in a00 there


@pytest.mark.parametrize("fun", [norm_nuclear_stack, norm_spectral_axes])
def test_hessian_of_matrix_norms_of_stacks(fun):
    A = np.random.default_rng(2).normal(size=(2, 3, 4))
    np.testing.assert_allclose(s2s.hessian(fun)(A).reshape(A.size, A.size), _fd_hessian(fun, A), atol=1e-6)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hessian_of_the_spectral_norm_at_repeated_singular_values_is_a_located_refusal(backend):
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(s2s.hessian(norm_spectral), backend=backend)(np.eye(3))
    message = str(info.value)
    assert "test_leftovers.py:" in message and "distinct" in message and "ord='fro'" in message


# ---- 4. third derivatives through np.cumprod and np.prod: a located refusal ---------------


def cumprod_of_three(t):
    return np.sum(np.cumprod(np.array([t, 2 * t, t * t])))  # t + 2 t^2 + 2 t^4


def prod_of_three(t):
    return np.prod(np.array([t, 2 * t, t * t]))  # 2 t^4


def cumprod_as_a_loop(t):
    p = 1.0
    s = 0.0
    for v in [t, 2 * t, t * t]:
        p = p * v
        s = s + p
    return s


@pytest.mark.parametrize("fun", [cumprod_of_three, prod_of_three])
def test_third_derivatives_through_cumprod_and_prod_are_located_refusals(fun):
    assert s2s.grad(s2s.grad(fun))(0.7) == pytest.approx(
        (4 + 24 * 0.7**2) if fun is cumprod_of_three else 24 * 0.7**2)
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(s2s.grad(s2s.grad(fun)))(0.7)
    message = str(info.value)
    assert "test_leftovers.py:" in message and "derivatives of this order" in message
    assert info.value.origin.text.startswith("return np.")  # the user's statement, not generated code


def test_the_way_out_of_that_refusal_works():
    # d^3/dt^3 (t + 2 t^2 + 2 t^4) = 48 t
    assert s2s.grad(s2s.grad(s2s.grad(cumprod_as_a_loop)))(0.7) == pytest.approx(48 * 0.7)


# ---- 5. the adjoint of np.sum of a number is a number under jit ----------------------------


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


# ---- 6. no zeros for the tangent of an operand that has none ---------------------------------


def minus_a_constant(x, c):
    return np.sum(np.sin(x - c))


def constant_minus(x, c):
    y = c - x
    return np.sum(y * y)


def minus_an_element_then_an_array(x, c):
    w = x * 2.0 - c[0]
    return np.sum(w - np.cos(c))


@pytest.mark.parametrize("fun", [minus_a_constant, constant_minus, minus_an_element_then_an_array])
def test_forward_mode_makes_no_zeros_for_a_constant_operand(fun):
    jac = s2s.jacfwd(fun)
    x = np.array([0.5, -0.2, 0.9])
    for c in (np.array([0.1, 0.2, 0.3]), np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])):  # (and a broadcast)
        if fun is minus_an_element_then_an_array and c.ndim == 2:
            continue
        want = central_difference_grad(fun, [x, c], 0)
        np.testing.assert_allclose(jac(x, c), want, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(s2s.jit(s2s.jacfwd(fun))(x, c), want, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(s2s.hessian(fun)(x, c), s2s.jit(s2s.hessian(fun))(x, c), atol=1e-12)
    assert "zeros_like" not in s2s.source(jac)


def test_broadcast_like_is_t_plus_zeros():
    from s2s import runtime

    t = np.array([1.0, 2.0])
    assert runtime.broadcast_like(t, np.zeros(2)) is t  # no zeros made
    assert runtime.broadcast_like(t, 3.0) is t
    wide = runtime.broadcast_like(t, np.zeros((3, 2)))
    np.testing.assert_array_equal(wide, np.tile(t, (3, 1)))
    t32 = t.astype(np.float32)
    assert runtime.broadcast_like(t32, np.zeros(2)).dtype == np.float64  # as t32 + zeros(2)


# ---- 8. dtype=float, np.float64, np.float32 as keywords inside transformed functions --------


def dtype_keywords(x):
    a = np.zeros(3, dtype=float) + np.ones(3, dtype=np.float64) + np.full(3, 2.0, dtype=float)
    b = np.arange(3, dtype=float) + np.asarray([1, 2, 3], dtype=float) + np.array([0, 1, 0], dtype=np.float64)
    c = np.full(3, x[0], dtype=np.float64) * np.empty(3, dtype=float).size
    return np.sum(x * (a + b) + c)


def float32_keywords(x):
    z = np.ones(3, dtype=np.float32) * x + np.asarray([1, 2, 3], dtype=np.float32)
    return np.sum(z * z)


def draws_with_dtype(mu):
    key = s2s.random.PRNGKey(0)
    return np.sum(mu + s2s.random.normal(key, (3,), dtype=float) * s2s.random.uniform(key, (3,), dtype=float))


def full_of_ints(x):
    return np.sum(np.full(3, x[0], dtype=int))


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun", [dtype_keywords, draws_with_dtype])
def test_dtype_keywords_inside_transformed_functions(fun, backend):
    x = np.array([0.5, 1.0, 2.0])
    want = central_difference_grad(fun, [x], 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun), backend=backend)(x), want, rtol=1e-7, atol=1e-8)
    _, tangent = s2s.jvp(fun, (x,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(want))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_float32_dtype_keywords_stay_float32(backend):
    x = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    g = s2s.jit(s2s.grad(float32_keywords), backend=backend)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * (x + np.array([1, 2, 3])), rtol=1e-6)


def test_full_with_an_integer_dtype_of_a_differentiated_value_is_refused():
    with pytest.raises(s2s.S2SError, match=r"test_leftovers.py:\d+:\d+: .*floating dtype"):
        s2s.grad(full_of_ints)(np.array([0.5, 1.0]))


# ---- 9. s2s.lax.scan of length 0: the initial carry and empty stacks, as JAX's --------------
# JAX 0.10.2 (x64), the reference:
#   /tmp/jaxenv/bin/python -c "import jax, jax.numpy as jnp; jax.config.update('jax_enable_x64', True);
#     body = lambda c, x: (c + x * 2.0, (c * x, jnp.sum(x)));  # (c the new carry in both)
#     print(jax.lax.scan(body, jnp.zeros(2) + 1.5, jnp.zeros((0, 2))))"
#   -> carry [1.5, 1.5], stacks of shapes (0, 2) and (0,), float64;
#   jax.lax.scan(lambda c, _: (c * 2.0, c), 1.5, None, length=0) -> (1.5, shape (0,));
#   jax.grad of its carry -> 1.0.


def scan_step(c, x):
    c = c + x * 2.0
    return c, c * x


def scan_sum(c0, xs):
    c, ys = s2s.lax.scan(scan_step, c0, xs)
    return c + np.sum(ys)


def scan_of_length(c0, n):
    c, ys = s2s.lax.scan(lambda c, _: (c * 2.0, c), c0, None, length=n)
    return c + np.sum(ys)


def scan_reversed(c0, xs):
    c, ys = s2s.lax.scan(scan_step, c0, xs, reverse=True)
    return c * 3.0 + np.sum(ys)


def test_scan_of_length_zero_in_plain_python():
    def body(c, x):
        c = c + x * 2.0
        return c, (c * x, np.sum(x))

    c, (a, b) = s2s.lax.scan(body, np.zeros(2) + 1.5, np.zeros((0, 2)))
    np.testing.assert_array_equal(c, [1.5, 1.5])
    assert a.shape == (0, 2) and b.shape == (0,) and a.dtype == np.float64
    c, ys = s2s.lax.scan(lambda c, _: (c * 2.0, c), 1.5, None, length=0)
    assert c == 1.5 and ys.shape == (0,)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_scan_of_length_zero_transformed(backend):
    empty = np.zeros(0)
    assert s2s.jit(scan_sum, backend=backend)(1.5, empty) == 1.5
    assert s2s.jit(s2s.grad(scan_sum), backend=backend)(1.5, empty) == 1.0
    np.testing.assert_array_equal(s2s.jit(s2s.grad(scan_sum, argnums=1), backend=backend)(1.5, empty), empty)
    assert s2s.jit(scan_of_length, backend=backend, static_argnums=(1,))(1.5, 0) == 1.5
    assert s2s.jit(s2s.grad(scan_of_length), backend=backend)(1.5, 0) == 1.0
    assert s2s.jit(s2s.grad(scan_reversed), backend=backend)(1.5, empty) == 3.0
    # and with steps, still the closed form: c2 = c0 + 2 (x1 + x2), ys = (c1 x1, c2 x2)
    xs = np.array([1.0, 2.0])
    assert s2s.jit(s2s.grad(scan_sum), backend=backend)(1.5, xs) == pytest.approx(1 + 1 + 2)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scan_reversed), backend=backend)(1.5, xs),
                               central_difference_grad(scan_reversed, [1.5, xs], 0), rtol=1e-7)


def test_scan_of_length_zero_under_vmap():
    got = s2s.vmap(scan_sum, in_axes=(0, 0))(np.array([1.5, 2.5]), np.zeros((2, 0)))
    np.testing.assert_array_equal(got, [1.5, 2.5])
    np.testing.assert_array_equal(s2s.vmap(s2s.grad(scan_sum), in_axes=(0, 0))(np.array([1.5, 2.5]), np.zeros((2, 0))),
                                  [1.0, 1.0])


# ---- 10. s2s.optimizers inside s2s.jit: a located refusal that says what to do ---------------

_init, _opt_update, _get_params = s2s.optimizers.adam(0.1)


def _fit_loss(w, x):
    return np.sum((w * x - 1.0) ** 2)


_fit_grad = s2s.grad(_fit_loss)


def step_with_the_optimizer(i, state, x):
    g = _fit_grad(_get_params(state), x)
    return _opt_update(i, g, state)


def step_with_a_nested_grad(w, x):
    return w - 0.1 * s2s.grad(_fit_loss)(w, x)


def step_with_a_nested_value_and_grad(w, x):
    return w - 0.1 * s2s.value_and_grad(_fit_loss)(w, x)[1]


def test_optimizer_update_inside_jit_is_refused_with_the_way_out():
    state = _init(np.zeros(3))
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(step_with_the_optimizer)(0, state, np.ones(3))
    message = str(info.value)
    assert "test_leftovers.py:" in message and "s2s.jit(s2s.grad(loss))" in message
    with pytest.raises(s2s.S2SError, match=r"test_leftovers.py:\d+:\d+: a transform called inside"):
        s2s.jit(step_with_a_nested_value_and_grad)(np.zeros(3), np.ones(3))
    # s2s.grad(f)(...) inside is taken (in forward mode, tests/test_third_order.py): w - 0.2 (w x - 1) x
    np.testing.assert_allclose(s2s.jit(step_with_a_nested_grad, backend="python")(np.zeros(3), np.ones(3)), 0.2)
    # the way out: the gradient jitted, the update outside (it converges to w = 1 / x)
    grad_jit = s2s.jit(s2s.grad(_fit_loss))
    x = np.array([1.0, 2.0, 4.0])
    for i in range(500):
        state = _opt_update(i, grad_jit(_get_params(state), x), state)
    np.testing.assert_allclose(_get_params(state), 1.0 / x, atol=1e-4)


# ---- 11. s2s.random's NumPy path, in uint32 blocks: the same bits as the reference hash ------


def test_blocked_random_draws_equal_the_whole_array_kernels():
    from s2s import random as R

    key = R.PRNGKey(7)
    n = 3 * R._BLOCK + 11  # several blocks and a partial one
    i = np.arange(n, dtype=np.uint64)
    y0, y1 = R.threefry2x32(key[0], key[1], i >> np.uint64(32), i & np.uint64(0xFFFFFFFF))  # the uint64 form
    np.testing.assert_array_equal(R.bits(key, (n,)), (y0 ^ y1).astype(np.uint32))
    np.testing.assert_array_equal(R.bits(key, (n,), np.uint64), (y0 << np.uint64(32)) | y1)
    for dtype, whole in ((np.float64, R._normal_f64), (np.float32, R._normal_f32)):
        np.testing.assert_array_equal(R.normal(key, (n,), dtype).view(np.uint8), whole(key, n).view(np.uint8))
    np.testing.assert_array_equal(R.exponential(key, (n,)), -R._log1p_f64(-R._unit_f64(key, n)))


# ---- 12. a Numba cache that names a generated module no longer there: compiled again ---------

_STALE_PROGRAM = '''
import sys
import cmath

import numpy as np
import s2s
sys.path.insert(0, {here!r})
from stale_module import f, g
p = {{"w": np.ones((2, 2)) * 0.3, "b": np.ones(2)}}
x = np.array([0.5, 1.0])
{calls}
'''
_STALE_MODULE = '''
import cmath

import numpy as np


def h(x, w):
    return np.tanh(x @ w)


def f(p, x):
    return np.sum(h(x, p["w"]) * p["b"])


def g(p, x):
    return np.sum(h(x, p["w"]) ** 2)
'''


def test_a_stale_numba_cache_is_compiled_again(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    (tmp_path / "stale_module.py").write_text(_STALE_MODULE)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "s2s"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def run(calls):
        program = _STALE_PROGRAM.format(here=str(tmp_path), calls=calls)
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.split()

    # grad(f) and grad(g) share h's generated functions; the cache then names both modules
    run("s2s.jit(s2s.grad(f))(p, x); s2s.jit(s2s.grad(g))(p, x); print(s2s.jit(s2s.value_and_grad(g))(p, x)[0])")
    shutil.rmtree(tmp_path / "s2s" / "modules")  # s2s's files gone, Numba's index kept
    value = float(run("print(s2s.jit(s2s.value_and_grad(g))(p, x)[0])")[0])
    h = np.tanh(np.array([0.5, 1.0]) @ (np.ones((2, 2)) * 0.3))
    assert value == pytest.approx(np.sum(h**2))


# ---- 7. check_grads(..., backend="cpu", order=2) on the README's examples ----------------------
# (No raw Numba error was found any more: the README's functions and the corpus of
# tests/programs.py pass check_grads(order=2, backend="cpu"); these keep it so.)


def readme_loss(params, x, y):
    w, b = params
    pred = x @ w + b
    return np.mean((pred - y) ** 2)


def readme_path_payoff(s0, sigma, z):
    s = s0
    for t in range(z.shape[0]):
        s = s * np.exp(-0.5 * sigma * sigma / z.shape[0] + sigma * np.sqrt(1.0 / z.shape[0]) * z[t])
    return max(s - 1.0, 0.0)


def readme_rnn_loss(params, xs, targets):
    W, U, b = params

    def cell(h, x):
        h = np.tanh(W @ h + U @ x + b)
        return h, h

    _, hs = s2s.lax.scan(cell, np.zeros(W.shape[0]), xs)
    return np.mean((hs[:, 0] - targets) ** 2)


def test_check_grads_of_the_readme_examples_under_numba():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=5)
    s2s.testing.check_grads(readme_loss, ((rng.normal(size=3), 0.3), x, y), order=2, argnums=(0,), backend="cpu")
    s2s.testing.check_grads(readme_path_payoff, (1.0, 0.2, rng.normal(size=8)), order=2, argnums=(0, 1),
                            backend="cpu")
    params = (rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3, 2)), rng.normal(size=3))
    s2s.testing.check_grads(readme_rnn_loss, (params, rng.normal(size=(4, 2)), rng.normal(size=4)), order=2,
                            argnums=(0,), backend="cpu")


# ---- library functions generated code names (found by helper comp) ----------------------


def power_spectrum(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2)


def complex_root(x):
    return cmath.sqrt(x[0]).real * 2.0


def test_np_fft_is_named_in_generated_code_and_a_function_s2s_cannot_name_has_its_line():
    x = np.array([0.3, 1.2, -0.5, 0.7])
    # (the primal under backend="python" was an S2SError with no line: "cannot name <function fft>")
    assert s2s.jit(power_spectrum, backend="python")(x) == pytest.approx(power_spectrum(x), rel=1e-14)
    with pytest.raises(s2s.S2SError, match="no derivative rule for fft"):
        s2s.grad(power_spectrum)(x)
    with pytest.raises(s2s.S2SError, match=r"test_leftovers.py:\d+:\d+: cannot name <built-in function sqrt>"):
        s2s.jit(complex_root, backend="python")(x)
