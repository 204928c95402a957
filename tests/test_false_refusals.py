"""Programs s2s refused though it differentiates them correctly (found by a red-team read), now
accepted and checked against central differences; and the refusals that stay, which name the
user's variables (never s2s's temporaries such as _t3 or an inlined body's v_2)."""

import re

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

BACKENDS = ["python", "cpu"]
X = np.array([0.3, -0.7, 1.1])
TEMPORARIES = re.compile(r"\b(_t\d+|\w+_\d+|\w+_init)\b")  # s2s's names: _t3, v_2, acc_2, v_2_init


def central_difference_hessian(fun, x, h=1e-4):
    """Second central differences of the scalar fun, entry by entry."""
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(a, b):
                y = x.copy()
                y[i] += a
                y[j] += b
                return fun(y)
            hessian[i, j] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    return hessian


def assert_names_the_user(error, *names):
    reason = error.reason
    for name in names:
        assert re.search(rf"\b{name}\b", reason), reason
    assert not TEMPORARIES.search(reason), reason


# ---- 1. second derivatives of code that reads m[1][2], then writes m[1, 2] ------------------


def chained_index(x):
    m = np.outer(x, x) + np.eye(3)
    e = m[1][2]
    m[1, 2] = e * x[0]
    return np.sum(m * m)


def row_then_element(x):
    m = np.outer(x, x) + np.eye(3)
    r = m[1]
    e = r[0]
    m[1, 2] = e * x[0]
    return np.sum(m * m)


def lu_energy(x):  # LU elimination without pivoting, reading A[k][k] and A[i][k]
    A = np.outer(x, x) + 3.0 * np.eye(3)
    for k in range(3):
        for i in range(k + 1, 3):
            factor = A[i][k] / A[k][k]
            for j in range(k, 3):
                A[i, j] = A[i, j] - factor * A[k][j]
    return np.sum(A * A)


def row_shape_after_the_write(x):  # r's shape, which the write does not change, is read after it
    m = np.outer(x, x) + np.eye(3)
    r = m[1]
    m[1, 2] = x[0] * 2.0
    return np.sum(m * m) * r.shape[0]


def row_read_after_the_write(x):  # r is a row of m: the write changes what r holds
    m = np.outer(x, x)
    r = m[1]
    m[1, 2] = x[0]
    return np.sum(r * r)


@pytest.mark.parametrize("fun", [chained_index, row_then_element, lu_energy, row_shape_after_the_write])
def test_second_derivatives_after_an_element_read_and_a_write(fun):
    gradient = s2s.grad(fun)(X)
    np.testing.assert_allclose(gradient, central_difference_grad(fun, (X,), 0), rtol=1e-7, atol=1e-8)
    expected = central_difference_hessian(fun, X)
    for transform in (s2s.hessian(fun), s2s.jacfwd(s2s.grad(fun)), s2s.jacrev(s2s.grad(fun)),
                      s2s.jit(s2s.hessian(fun)), s2s.jit(s2s.hessian(fun), backend="python")):
        np.testing.assert_allclose(transform(X), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transform", [s2s.grad, s2s.hessian])
def test_a_row_read_after_the_write_is_still_refused(transform):
    with pytest.raises(s2s.S2SError, match="a view of it") as info:
        transform(row_read_after_the_write)(X)
    assert_names_the_user(info.value, "m", "r")


# ---- 2. in-place writes inside s2s.lax bodies with a tuple carry, and inside a scan step -------


def fori_tuple_carry(x):
    def body(i, carry):
        v, acc = carry
        v[i] = v[i] * x[i]
        return v, acc + v[i]

    v, acc = s2s.lax.fori_loop(0, 3, body, (x.copy(), 0.0))
    return acc + np.sum(v * x)


def scan_writes_its_carry(x, xs):
    def step(v, a):
        v[0] = v[1] * a
        return v, a * v[2]

    v, ys = s2s.lax.scan(step, x.copy(), xs)
    return np.sum(v * x) + np.sum(ys)


def unpacked_alias(x):  # a is v itself: the write changes a, read after it
    v = x * 1.0
    t = (v, 1.0)
    a, b = t
    v[0] = 5.0
    return np.sum(a) + b


def unpacked_on_two_paths(x, flag):  # a is v on one path, b on the other
    v = x * 1.0
    w = x * 2.0
    if flag > 0:
        t = (v, w)
    else:
        t = (w, v)
    a, b = t
    v[0] = 5.0
    return np.sum(a) + np.sum(b)


@pytest.mark.parametrize("fun, args, names", [(unpacked_alias, (X,), ("v", "a")),
                                              (unpacked_on_two_paths, (X, 1.0), ("v", "a")),
                                              (unpacked_on_two_paths, (X, -1.0), ("v", "a"))])
def test_an_element_of_a_tuple_that_is_the_written_array_is_still_refused(fun, args, names):
    with pytest.raises(s2s.S2SError, match="would also change") as info:
        s2s.grad(fun)(*args)
    assert_names_the_user(info.value, *names)


def fori_one_array_twice(x):  # v and acc are one array: writing into v changes acc
    w = x.copy()

    def body(i, carry):
        v, acc = carry
        v[i] = v[i] * x[i]
        return v, acc + v[i]

    v, acc = s2s.lax.fori_loop(0, 3, body, (w, w))
    return np.sum(acc) + np.sum(v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_write_into_one_element_of_a_tuple_carry(backend):
    value = s2s.jit(fori_tuple_carry, backend=backend)(X)
    assert value == pytest.approx(fori_tuple_carry(X), rel=1e-14)
    gradient = s2s.jit(s2s.grad(fori_tuple_carry), backend=backend)(X)
    np.testing.assert_allclose(gradient, central_difference_grad(fori_tuple_carry, (X,), 0), rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_step_that_writes_into_its_carry(backend):
    xs = np.array([1.0, 3.0, -0.5])
    value = s2s.jit(scan_writes_its_carry, backend=backend)(X, xs)
    assert value == pytest.approx(scan_writes_its_carry(X, xs), rel=1e-14)
    gradient = s2s.jit(s2s.grad(scan_writes_its_carry), backend=backend)(X, xs)
    np.testing.assert_allclose(gradient, central_difference_grad(scan_writes_its_carry, (X, xs), 0), rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_of_no_steps_returns_the_carry_its_step_would_write_into_as_given(backend):
    # the step still runs once, on rows of zeros, for the shapes of the (empty) outputs, as in JAX
    xs = np.zeros(0)
    expected = float(np.sum(X * X))
    assert scan_writes_its_carry(X, xs) == pytest.approx(expected, rel=1e-14)  # s2s.lax.scan itself
    assert s2s.jit(scan_writes_its_carry, backend=backend)(X, xs) == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scan_writes_its_carry), backend=backend)(X, xs), 2.0 * X,
                               rtol=1e-14)


def test_a_carry_of_one_array_twice_is_refused_with_the_users_names():
    with pytest.raises(s2s.S2SError, match="would also change") as info:
        s2s.grad(fori_one_array_twice)(X)
    assert_names_the_user(info.value, "v", "acc")


def scan_writes_the_argument(x, xs):  # the carry is x itself: the step would write into the argument
    def step(v, a):
        v[0] = v[1] * a
        return v, a

    v, ys = s2s.lax.scan(step, x, xs)
    return np.sum(v)


def scan_keeps_the_old_carry(x, xs):  # w is v: the write changes the output w[0] would be read from
    def step(v, a):
        w = v
        v[0] = v[1] * a
        return v, w[0]

    v, ys = s2s.lax.scan(step, x.copy(), xs)
    return np.sum(v) + np.sum(ys)


@pytest.mark.parametrize("fun, names", [(scan_writes_the_argument, ("v", "x")),
                                        (scan_keeps_the_old_carry, ("v", "w"))])
def test_refusals_inside_a_scan_step_name_the_users_variables(fun, names):
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fun)(X, np.ones(2))
    assert_names_the_user(info.value, *names)
    assert re.search(rf"\b{names[0]} = {names[0]}\.copy\(\)", info.value.hint), info.value.hint


# ---- 3. a tuple or list of numbers read from an array that is written later -------------------


def first_two(v):
    return v[0], v[1]


def tuple_of_elements(x):
    v = x * 1.0
    t = (v[0], v[1])
    v[0] = 5.0
    return t[0] * t[1] + np.sum(v)


def tuple_from_a_helper(x):
    v = x * 1.0
    t = first_two(v)
    v[0] = 5.0
    return t[0] * t[1] + np.sum(v)


def list_of_elements(x):
    v = x * 1.0
    t = [v[0], v[1]]
    v[0] = 5.0
    return t[0] * t[1] + np.sum(v)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [tuple_of_elements, tuple_from_a_helper, list_of_elements])
def test_a_container_of_elements_is_not_called_a_view(fun, backend):
    # Still refused (the run-time check reads arrays, not what a tuple holds), but said as it is.
    with pytest.raises(s2s.S2SError, match="where it holds rows of v") as info:
        s2s.jit(s2s.grad(fun), backend=backend)(X)
    assert "a view of it" not in info.value.reason
    assert_names_the_user(info.value, "v", "t")


# ---- 4. an s2s.custom_jvp rule whose tangent has the wrong shape, in reverse mode ------------


@s2s.custom_jvp
def doubled(x):
    return x * 2.0


@doubled.defjvp
def doubled_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return x * 2.0, x_dot[:2] * 2.0  # a tangent of 2 elements for a value of 4


def calls_doubled(x):
    return np.sum(doubled(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tangent_of_the_wrong_shape_is_refused_before_the_rules_reverse_sweep(backend):
    x = np.array([0.5, 1.0, 1.5, 2.0])
    with pytest.raises(s2s.S2SError, match="returned a derivative whose shape is not") as info:
        s2s.jit(s2s.grad(calls_doubled), backend=backend)(x)
    if backend == "python":  # the rule's return, and the two shapes
        assert info.value.origin.text == "return x * 2.0, x_dot[:2] * 2.0  # a tangent of 2 elements for a value of 4"
        assert "(shape (2,) for shape (4,))" in info.value.reason
    with pytest.raises(s2s.S2SError, match="returned a derivative whose shape is not"):
        s2s.jvp(calls_doubled, (x,), (np.ones(4),))
    with pytest.raises(s2s.S2SError, match="returned a derivative whose shape is not"):
        s2s.jit(s2s.hessian(calls_doubled), backend=backend)(x)


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
