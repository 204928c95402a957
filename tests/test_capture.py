"""Arrays a function reads from its closure or its module are captured as constants, as JAX
captures them when it traces: derivatives treat them as constants, a different array gives a
different module, and writing into one is refused."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad

# A module-level array the functions below read (and one test changes).
W = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
LAYERS = [np.array([[0.5, 0.0], [0.2, -0.3]]), np.array([[1.0, 1.0], [-0.5, 2.0]])]


def make(A):
    def f(x):
        return np.sum((A @ x) ** 2)

    return f


def sine_of_module_array(x):
    return np.sum(np.sin(W @ x))


def through_layers(x):
    h = x
    for k in range(len(LAYERS)):
        h = np.tanh(LAYERS[k] @ h)
    return np.sum(h)


def make_scaled(scale, shift):
    def f(x):
        return np.sum(scale * x**2) + shift

    return f


def make_writer(A):
    def f(x):
        A[0] = x
        return np.sum(A)

    return f


def make_alias_writer(A):
    def f(x):
        B = A
        B[0] = x
        return np.sum(B)

    return f


A1 = np.array([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])
A2 = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 0.5]])
X = np.array([0.3, -0.7])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_closure_over_an_array_against_closed_forms(backend):
    f = make(A1)
    # f = |A x|^2: gradient 2 A^T A x, Hessian 2 A^T A (A is a constant: no derivative).
    grad = s2s.jit(s2s.grad(f), backend=backend)
    np.testing.assert_allclose(grad(X), 2 * A1.T @ A1 @ X, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(f), backend=backend)(X), 2 * A1.T @ A1, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(s2s.grad(f)), backend=backend)(X), 2 * A1.T @ A1, rtol=1e-12)
    batch = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(s2s.jit(s2s.vmap(f), backend=backend)(batch), [f(x) for x in batch], rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(f)), backend=backend)(batch),
                               [2 * A1.T @ A1 @ x for x in batch], rtol=1e-12)
    assert s2s.jit(f, backend=backend)(X) == pytest.approx(f(X), rel=1e-14)


def test_the_generated_code_names_the_array_by_its_content():
    source = s2s.grad(make(A1)).source
    line = next(t for t in source.splitlines() if t.startswith("A = "))
    assert line.startswith('A = runtime.captured("') and line.endswith('", "float64", (3, 2))')
    assert "[[" not in source  # not its values written out


def test_two_closures_over_different_arrays_give_two_results():
    g1, g2 = s2s.grad(make(A1)), s2s.grad(make(A2))
    np.testing.assert_allclose(g1(X), 2 * A1.T @ A1 @ X, rtol=1e-12)
    np.testing.assert_allclose(g2(X), 2 * A2.T @ A2 @ X, rtol=1e-12)
    assert g1.source != g2.source
    # Equal content, another array object: the same module.
    assert s2s.grad(make(A1.copy())).source == g1.source
    # Arrays that print alike (repr elides the middle of large arrays) are still told apart.
    big = np.zeros((3, 2000))
    other = big.copy()
    other[1, 1000] = 1.0
    assert repr(big) == repr(other)
    y = np.ones(2000)
    assert s2s.grad(make(big))(y) == pytest.approx(np.zeros(2000))
    np.testing.assert_allclose(s2s.grad(make(other))(y), 2 * other.T @ other @ y)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_module_level_arrays_and_lists_of_arrays(backend):
    x = X
    expected = central_difference_grad(sine_of_module_array, (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(sine_of_module_array), backend=backend)(x), expected,
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.grad(sine_of_module_array), backend=backend)(x),
                               W.T @ np.cos(W @ x), rtol=1e-12)
    expected = central_difference_grad(through_layers, (x,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(through_layers), backend=backend)(x), expected,
                               rtol=1e-7, atol=1e-9)


def test_numpy_scalars_of_the_closure():
    f = make_scaled(np.float64(1.5), np.float32(2.0))
    np.testing.assert_allclose(s2s.grad(f)(X), 3.0 * X, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(X), 3.0 * X, rtol=1e-12)


def test_changing_a_module_array_between_calls():
    """JAX captures a global array when it traces: jax.grad (traced anew on each call) sees the
    change, jax.jit(jax.grad(f)) keeps the array of its trace. Reference (JAX 0.10.2, x64),
    /tmp/jaxenv/bin/python with W = [1, 2], f(x) = sum(W * x), g = jax.grad(f), jg = jax.jit(g):
        g(x), jg(x)          -> [1. 2.] [1. 2.]
        W[0] = 10.0          -> [10. 2.] [1. 2.]
        W = np.array([3, 3]) -> [3. 3.] [1. 2.]
    s2s captures when a transform generates its module: an s2s.grad(f) object keeps what it
    captured (as jax.jit keeps its trace); a new transform, and s2s.jvp (called anew, as
    jax.jvp), see the array as it is now: the cache keys on the content, never on a stale copy."""
    global W
    original = W
    try:
        W = original.copy()
        g = s2s.grad(sine_of_module_array)
        before = W.T @ np.cos(W @ X)
        np.testing.assert_allclose(g(X), before, rtol=1e-12)
        _, tangent = s2s.jvp(sine_of_module_array, (X,), (X,))
        assert tangent == pytest.approx(before @ X, rel=1e-12)
        W[0, 0] = 5.0  # in place
        now = W.T @ np.cos(W @ X)
        np.testing.assert_allclose(g(X), before, rtol=1e-12)  # captured when g generated its module
        np.testing.assert_allclose(s2s.grad(sine_of_module_array)(X), now, rtol=1e-12)
        np.testing.assert_allclose(s2s.jit(s2s.grad(sine_of_module_array))(X), now, rtol=1e-12)
        _, tangent = s2s.jvp(sine_of_module_array, (X,), (X,))
        assert tangent == pytest.approx(now @ X, rel=1e-12)
        W = 2 * W  # rebound
        now = W.T @ np.cos(W @ X)
        np.testing.assert_allclose(s2s.grad(sine_of_module_array)(X), now, rtol=1e-12)
        _, tangent = s2s.jvp(sine_of_module_array, (X,), (X,))
        assert tangent == pytest.approx(now @ X, rel=1e-12)
    finally:
        W = original


def test_captured_arrays_are_copies():
    A = A1.copy()
    g = s2s.grad(make(A))
    g(X)
    A[:] = 0.0  # the module holds what it captured
    np.testing.assert_allclose(g(X), 2 * A1.T @ A1 @ X, rtol=1e-12)


@pytest.mark.parametrize("maker,line", [(make_writer, "A[0] = x"), (make_alias_writer, "B[0] = x")])
def test_writing_into_a_captured_array_is_refused(maker, line):
    for transform in (s2s.grad, lambda f: s2s.jit(f, backend="python"), s2s.jit):
        with pytest.raises(s2s.S2SError) as info:
            transform(maker(np.ones(3)))(2.0)
        message = str(info.value)
        assert "test_capture.py:" in message and line in message
        assert "captur" in message and "copy" in message


def test_other_closed_over_values_are_refused_with_their_kind():
    handle = {"a": 1.0}

    def f(x):
        return x * handle

    with pytest.raises(s2s.S2SError, match=r"test_capture.py:\d+:\d+: the closed-over variable 'handle' \(dict\)"):
        s2s.grad(f)(1.0)
