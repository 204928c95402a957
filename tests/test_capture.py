"""Arrays a function reads from its closure or its module are captured as constants, as JAX
captures them when it traces: derivatives treat them as constants, a different array gives a
different module, and writing into one is refused."""

import numpy as np
import pytest

import s2s
from s2s.tree_util import pytree
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


# ---- s2s.hessian of pytree arguments and of several argnums (JAX's layout) -------------


def tree_loss(p):
    w, b = p
    return np.sum(np.sin(w) * b) + b**3


def two_argument_loss(w, b):
    return np.sum(np.sin(w) * b) + b**3


def vector_output(w, b):
    return np.sin(w) * b


def dict_loss(p):
    return np.sum(p["w"] ** 2 * p["s"][0]) + np.sum(np.exp(p["s"]))


def _hessian_by_differences(grad, args, argnums, h=1e-5):
    """H[i][j] of a scalar function from central differences of its (tuple-of-argnums) gradient:
    blocks of flat leaves, [i][j] with shape (size of i, size of j)."""
    def flat(k, a):
        return np.concatenate([np.ravel(leaf) for leaf in pytree.leaves(a)])

    base = [flat(k, args[k]) for k in argnums]
    out = [[None] * len(argnums) for _ in argnums]
    for pj, j in enumerate(argnums):
        leaves, structure = pytree.flatten(args[j])
        columns = []
        for e in range(base[pj].size):
            def shifted(delta):
                v = base[pj].copy()
                v[e] += delta
                pieces, start = [], 0
                for leaf in leaves:
                    n = np.size(leaf)
                    piece = v[start:start + n].reshape(np.shape(leaf))
                    pieces.append(piece if np.ndim(leaf) else float(piece))
                    start += n
                moved = list(args)
                moved[j] = pytree.unflatten(structure, pieces)
                return [flat(i, g) for i, g in zip(argnums, grad(*moved))]
            plus, minus = shifted(h), shifted(-h)
            columns.append([(p - m) / (2 * h) for p, m in zip(plus, minus)])
        for pi in range(len(argnums)):
            out[pi][pj] = np.stack([c[pi] for c in columns], axis=1)
    return out


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hessian_of_a_tuple_argument_in_jax_layout(backend):
    w, b = np.array([0.3, -0.5, 1.2]), 0.7
    H = s2s.jit(s2s.hessian(tree_loss), backend=backend)((w, b))
    # Closed form: d2/dw2 = diag(-sin(w) b), d2/dw db = cos(w), d2/db2 = 6 b.
    # JAX 0.10.2 (x64), jax.hessian(f)((w, b)) with jnp: shapes (((3, 3), (3,)), ((3,), ())),
    # H[0][1] = [0.95533649, 0.87758256, 0.36235775], H[1][1] = 4.2.
    assert [[np.shape(H[i][j]) for j in range(2)] for i in range(2)] == [[(3, 3), (3,)], [(3,), ()]]
    np.testing.assert_allclose(H[0][0], np.diag(-np.sin(w) * b), atol=1e-14)
    np.testing.assert_allclose(H[0][1], np.cos(w), rtol=1e-14)
    np.testing.assert_allclose(H[1][0], np.cos(w), rtol=1e-14)
    assert float(H[1][1]) == pytest.approx(6 * b, rel=1e-14)
    np.testing.assert_allclose(H[0][1], [0.95533649, 0.87758256, 0.36235775], rtol=1e-7)  # JAX's
    # The same as jacfwd(jacrev(f)) on a tuple argument.
    H2 = s2s.jacfwd(s2s.jacrev(tree_loss))((w, b))
    np.testing.assert_allclose(H2[0][1], H[0][1], rtol=1e-14)
    # And against central differences of the gradient.
    fd = _hessian_by_differences(lambda p: (s2s.grad(tree_loss)(p),), ((w, b),), (0,))[0][0]
    dense = np.block([[H[0][0], H[0][1][:, None]], [H[1][0][None, :], np.reshape(H[1][1], (1, 1))]])
    np.testing.assert_allclose(dense, fd, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hessian_with_several_argnums(backend):
    w, b = np.array([0.3, -0.5, 1.2]), 0.7
    H = s2s.jit(s2s.hessian(two_argument_loss, argnums=(0, 1)), backend=backend)(w, b)
    assert [[np.shape(H[i][j]) for j in range(2)] for i in range(2)] == [[(3, 3), (3,)], [(3,), ()]]
    fd = _hessian_by_differences(s2s.grad(two_argument_loss, argnums=(0, 1)), (w, b), (0, 1))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(np.reshape(H[i][j], fd[i][j].shape), fd[i][j], rtol=1e-7, atol=1e-8)
    # A vector output: H[i][j] has the shape out.shape + arg_i.shape + arg_j.shape (JAX 0.10.2:
    # (((3, 3, 3), (3, 3)), ((3, 3), (3,))), with H[1][1] = [0, 0, 0]).
    H = s2s.jit(s2s.hessian(vector_output, argnums=(0, 1)), backend=backend)(w, b)
    assert [[np.shape(H[i][j]) for j in range(2)] for i in range(2)] == [[(3, 3, 3), (3, 3)], [(3, 3), (3,)]]
    expected = np.zeros((3, 3, 3))
    for k in range(3):
        expected[k, k, k] = -np.sin(w[k]) * b
    np.testing.assert_allclose(H[0][0], expected, atol=1e-14)
    np.testing.assert_allclose(H[0][1], np.diag(np.cos(w)), atol=1e-14)
    np.testing.assert_allclose(H[1][1], np.zeros(3), atol=1e-14)


def test_hessian_of_a_dict_argument():
    p = {"w": np.array([0.5, -1.0]), "s": np.array([0.2, 0.4])}
    H = s2s.hessian(dict_loss)(p)
    assert set(H) == {"s", "w"} and set(H["w"]) == {"s", "w"}
    # d2/dw2 = 2 s0 I, d2/dw ds = [2 w, 0] columns, d2/ds2 = diag(exp(s)).
    np.testing.assert_allclose(H["w"]["w"], 2 * 0.2 * np.eye(2), rtol=1e-14)
    np.testing.assert_allclose(H["w"]["s"], np.stack([2 * p["w"], np.zeros(2)], axis=1), rtol=1e-14)
    np.testing.assert_allclose(H["s"]["w"], H["w"]["s"].T, rtol=1e-14)
    np.testing.assert_allclose(H["s"]["s"], np.diag(np.exp(p["s"])), rtol=1e-14)


def test_hessian_of_integer_leaves_is_refused():
    with pytest.raises(s2s.S2SError, match="holds a int leaf"):
        s2s.hessian(two_argument_loss, argnums=(0, 1))(np.ones(3), 1)


def test_jacfwd_of_jacrev_with_several_argnums_is_the_hessian():
    w, b = np.array([0.3, -0.5, 1.2]), 0.7
    H = s2s.hessian(two_argument_loss, argnums=(0, 1))(w, b)
    for inner in (s2s.jacrev(two_argument_loss, argnums=(0, 1)), s2s.grad(two_argument_loss, argnums=(0, 1))):
        H2 = s2s.jacfwd(inner, argnums=(0, 1))(w, b)
        for i in range(2):
            for j in range(2):
                np.testing.assert_allclose(H2[i][j], H[i][j], rtol=1e-14)
    with pytest.raises(s2s.S2SError, match="several argnums"):
        s2s.jacfwd(s2s.jacrev(two_argument_loss, argnums=(0, 1)), argnums=0)


# ---- a dict of constants of the module, read by constant keys ----------------------------

CONSTS = {"w": np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]]), "scale": 2.0,
          "layer": {"b": np.array([0.1, -0.2, 0.3]), "gains": [np.array([1.5, 0.5, 2.0]), np.array([1.0, -1.0, 0.5])]}}
W_KEY = "w"


def through_module_dict(x):
    h = np.sin(CONSTS["w"] @ x * CONSTS["scale"]) + CONSTS["layer"]["b"]
    return np.sum(CONSTS["layer"]["gains"][1] * h**2) + CONSTS[W_KEY][0, 1] * x[0]


def make_dict_reader(P):
    def f(x):
        return np.sum(np.tanh(P["w"] @ x) * P["scale"])

    return f


def reads_a_dict_by_a_variable_key(x):
    k = "w" if x[0] > 0 else "v"  # (k = "w" would be a constant: a static value the call gives)
    return np.sum(CONSTS[k] @ x)


def reads_a_dict_whole(x):
    return np.sum(x) + len(CONSTS)


def _through_module_dict_grad(x):
    w, scale, b, gain = CONSTS["w"], CONSTS["scale"], CONSTS["layer"]["b"], CONSTS["layer"]["gains"][1]
    u = w @ x * scale
    h = np.sin(u) + b
    return w.T @ (2 * gain * h * np.cos(u) * scale) + np.array([w[0, 1], 0.0])


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_module_dict_of_arrays_read_by_constant_keys(backend):
    f = through_module_dict
    expected = central_difference_grad(f, (X,), 0)
    np.testing.assert_allclose(expected, _through_module_dict_grad(X), rtol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f), backend=backend)(X), _through_module_dict_grad(X), rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(f), backend=backend)(X), expected, rtol=1e-7, atol=1e-9)
    value, tangent = s2s.jvp(f, (X,), (np.array([1.0, -2.0]),))
    assert value == pytest.approx(f(X), rel=1e-14)
    assert tangent == pytest.approx(expected @ [1.0, -2.0], rel=1e-7)
    H = s2s.jit(s2s.hessian(f), backend=backend)(X)
    np.testing.assert_allclose(H, np.array([central_difference_grad(lambda x: _through_module_dict_grad(x)[i], (X,), 0)
                                            for i in range(2)]), rtol=1e-6, atol=1e-8)
    batch = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(f)), backend=backend)(batch),
                               [_through_module_dict_grad(x) for x in batch], rtol=1e-12)
    assert s2s.jit(f, backend=backend)(X) == pytest.approx(f(X), rel=1e-14)


def test_a_module_dict_entry_is_a_constant_named_after_it():
    source = s2s.grad(through_module_dict).source
    assert 'CONSTS_w = runtime.captured("' in source and 'CONSTS_layer_b = runtime.captured("' in source
    assert "* 2.0" in source  # a number of the dict is written in
    assert "[[" not in source


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_closed_over_dict_of_arrays(backend):
    P1 = {"w": A1, "scale": 0.5}
    P2 = {"w": A2, "scale": 3.0}
    for P in (P1, P2):
        f = make_dict_reader(P)
        np.testing.assert_allclose(s2s.jit(s2s.grad(f), backend=backend)(X),
                                   P["w"].T @ ((1 - np.tanh(P["w"] @ X) ** 2) * P["scale"]), rtol=1e-12)


def test_changing_a_module_dict_between_transforms():
    """As for a module's array (above): a new transform sees the dict as it is now, an entry
    changed in place or the dict rebound; the transform made before keeps what it captured."""
    global CONSTS
    original = CONSTS
    try:
        CONSTS = {**original, "w": original["w"].copy()}
        g = s2s.grad(through_module_dict)
        before = _through_module_dict_grad(X)
        np.testing.assert_allclose(g(X), before, rtol=1e-12)
        _, tangent = s2s.jvp(through_module_dict, (X,), (X,))
        assert tangent == pytest.approx(before @ X, rel=1e-12)
        CONSTS["w"][0, 0] = 5.0  # in place
        now = _through_module_dict_grad(X)
        np.testing.assert_allclose(g(X), before, rtol=1e-12)
        np.testing.assert_allclose(s2s.grad(through_module_dict)(X), now, rtol=1e-12)
        np.testing.assert_allclose(s2s.jit(s2s.grad(through_module_dict))(X), now, rtol=1e-12)
        _, tangent = s2s.jvp(through_module_dict, (X,), (X,))
        assert tangent == pytest.approx(now @ X, rel=1e-12)
        CONSTS["scale"] = 3.0  # a number of the dict, written into the generated code
        now = _through_module_dict_grad(X)
        np.testing.assert_allclose(s2s.grad(through_module_dict)(X), now, rtol=1e-12)
        np.testing.assert_allclose(s2s.jit(s2s.grad(through_module_dict))(X), now, rtol=1e-12)
    finally:
        CONSTS = original


def test_a_module_dict_read_other_than_by_constant_keys_is_refused():
    with pytest.raises(s2s.S2SError, match=r"test_capture.py:\d+:\d+: CONSTS is a dict of the module or the "
                                           r"closure, indexed here by a value known only when the function runs"):
        s2s.grad(reads_a_dict_by_a_variable_key)(X)
    with pytest.raises(s2s.S2SError, match=r"test_capture.py:\d+:\d+: the global 'CONSTS' \(dict\) is read here "
                                           r"as a whole.*constant key"):
        s2s.grad(reads_a_dict_whole)(X)
