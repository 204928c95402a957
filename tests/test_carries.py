"""Loop carries that start as a number and become arrays (s2s/optimize/carries.py): under s2s.jit
`s = 0.0; for i in range(n): s = s + x * i` starts s as an array of x's shape (Numba types a
variable once), where that changes none of the values NumPy computes. Where the promotion is
written and where it must not be (strings, no compilation); values against NumPy and
derivatives (jit(grad), jit(jvp), jit(hessian)) against central differences; a loop of no
iteration, after which NumPy still has the number, refused where it runs."""

import ast
import textwrap

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, hessian_by_differences, where
from s2s.optimize.carries import promote_carries

X = np.array([0.3, -0.7, 1.1, 0.5])
M = np.array([[0.4, -0.2], [1.3, 0.6], [-0.5, 0.9]])


def promoted(source: str) -> str:
    module = ast.parse(textwrap.dedent(source))
    return ast.unparse(ast.Module(promote_carries(module.body), []))


def test_a_number_that_a_range_loop_makes_an_array_starts_as_one():
    text = promoted("""
        def f(x, n):
            s = 0.0
            k = 0
            for i in range(3):
                t = s * 0.5
                s = t + x * i
                k = k + 1
            for j in range(n):
                s = s * x
            return s
    """)
    # before the first loop only (after it s is an array); k stays a number; the second loop's
    # trip count is not a constant: it goes to the helper, which refuses a loop of no iteration
    assert "s = runtime.carry_like(s, x)\n    for i in range(3):" in text
    assert "k = runtime.carry_like" not in text
    assert "runtime.carry_like(s, x, (n,))" not in text


@pytest.mark.parametrize("loop", [
    "for i in range(3):\n        s = np.dot(s, x) + x",        # not elementwise in s
    "for i in range(3):\n        t = s + 1.0\n        s = t + x\n    y = t",  # a number of the first iteration read after
    "for i in range(3):\n        y = np.sum(s)\n        s = s + x",       # read whole before it is bound
    "for i in range(3):\n        if i > 0:\n            s = s + x",        # bound in a branch
    "for v in x:\n        s = s + x * v",                                    # not a range loop
    "for i in range(0):\n        s = s + x",                                 # no iteration
    "for i in range(3):\n        s = s + 1.0",                               # stays a number
])
def test_left_as_it_is_where_not_proven_the_same(loop):
    source = f"def f(x):\n    s = 0.0\n    {loop}\n    return s\n"
    assert "carry_like" not in promoted(source)


def accumulates(x, n):
    s = 0.0
    acc = 1
    for i in range(n):
        s = s + x * i
        acc = acc * np.cos(x) + s * 0.5
    return np.sum(s ** 2) + np.sum(acc)


def running_max(A):
    s = 0.0
    for i in range(A.shape[0]):
        s = np.maximum(s, A * i) + np.tanh(A)
    return np.sum(s ** 2)


def test_carries_under_jit_match_numpy_and_finite_differences():
    assert s2s.jit(accumulates)(X, 3) == pytest.approx(accumulates(X, 3), rel=1e-12)
    expected = central_difference_grad(accumulates, (X, 3), 0)
    np.testing.assert_allclose(s2s.grad(accumulates)(X, 3), expected, rtol=1e-6, atol=1e-7)  # (python backend)
    np.testing.assert_allclose(s2s.jit(s2s.grad(accumulates))(X, 3), expected, rtol=1e-6, atol=1e-7)
    hessian = s2s.jit(s2s.hessian(accumulates))(X, 3)
    np.testing.assert_allclose(hessian, hessian_by_differences(lambda x: accumulates(x, 3), X), rtol=1e-4, atol=1e-4)
    # a 2-d carry, its tangent carried too (forward mode: s_dot starts as a number as well)
    assert s2s.jit(running_max)(M) == pytest.approx(running_max(M), rel=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(running_max))(M), central_difference_grad(running_max, (M,), 0),
                               rtol=1e-6, atol=1e-7)


def summed(x):
    s = 0.0
    for i in range(3):
        s = s + x
    return s


def test_the_carry_has_numpys_dtype():
    """A Python number with an array has the array's dtype in NumPy 2: a float32 carry stays float32."""
    for x in (X.astype(np.float32), np.arange(4)):
        got = s2s.jit(summed)(x)
        assert got.dtype == summed(x).dtype and np.array_equal(got, summed(x))


def test_the_promotion_is_in_the_generated_code():
    source = s2s.source(s2s.jit(accumulates))
    assert "s = runtime.carry_like(s, x, (n,), where=" in source
    assert "acc = runtime.carry_like(acc, x, (n,), where=" in source


def test_a_loop_of_no_iteration_is_refused_where_it_runs():
    """NumPy still has the number 0.0 after it: compiled code cannot (s is an array there)."""
    assert accumulates(X, 0) == 1.0
    with pytest.raises(s2s.S2SError, match="this loop ran no iteration") as info:
        s2s.jit(accumulates)(X, 0)
    assert where(accumulates, "for i in range(n):") in str(info.value)


def sum_of_squared_rows(A):
    s = 0.0
    for i in range(A.shape[0]):
        s = s + A[i] ** 2
    return np.sum(np.sin(s))


def weighted_rows(A, w):
    total = 0.0
    for i in range(len(w)):
        total = total + A[i] * w[i]
    return np.sum(np.sin(total))


@pytest.mark.parametrize("fun, args", [(sum_of_squared_rows, (M,)), (sum_of_squared_rows, (X,)),
                                       (weighted_rows, (M, X[:3])), (weighted_rows, (X, X))],
                         ids=["rows", "numbers", "weighted rows", "weighted numbers"])
def test_a_carry_that_items_of_the_arguments_make_an_array(fun, args):
    """s = s + A[i] ** 2: the rows have no name before the loop; s starts as an array of the shape
    of A's items (of A's and w's broadcast), the number itself where the items are numbers."""
    assert s2s.jit(fun)(*args) == pytest.approx(fun(*args), rel=1e-14)
    for k in range(len(args)):
        reference = central_difference_grad(fun, args, k)
        np.testing.assert_allclose(s2s.jit(s2s.grad(fun, argnums=k))(*args), reference, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fun, args", [(sum_of_squared_rows, (M,)), (weighted_rows, (M, X[:3]))],
                         ids=["rows", "weighted rows"])
def test_a_carry_that_rows_make_an_array_in_second_order_and_vmap(fun, args):
    """The same carries in s2s.jit of the Hessian (its code is generated for the call's kinds) and
    of vmap (the per-example code for the example's): the Hessian against differences of the
    gradient, vmap against NumPy example by example."""
    last = len(args) - 1
    hessian = s2s.jit(s2s.hessian(fun, argnums=last))(*args)
    x = args[last]
    reference = hessian_by_differences(lambda v: fun(*args[:last], v.reshape(x.shape)), x.ravel())
    np.testing.assert_allclose(hessian.reshape(x.size, x.size), reference, rtol=1e-5, atol=1e-6)
    batch = np.stack([args[last], 0.5 * args[last] + 0.1, -args[last]])
    in_axes = (None,) * last + (0,)
    per_example = s2s.jit(s2s.vmap(fun, in_axes=in_axes))(*args[:last], batch)
    np.testing.assert_allclose(per_example, [fun(*args[:last], b) for b in batch], rtol=1e-13)


def test_the_promotion_to_items_is_in_the_code_for_arguments_with_rows_only():
    """Written where an argument has rows (the code for that kind of call), not for vectors, whose
    items are numbers, nor in the code for any argument (the command line's)."""
    jitted = s2s.jit(weighted_rows)
    jitted(M, X[:3])
    assert "total = runtime.carry_like_item(total, (A, w), (_t1,), where=" in s2s.source(jitted)
    assert "Specialised (s2s.jit) for arguments: A 2-d array, w 1-d array." in s2s.source(jitted)
    grad = s2s.jit(s2s.grad(sum_of_squared_rows))
    assert "s = runtime.carry_like_item(s, A, (_t" in grad.specialised_source((M,))
    assert "carry_like_item" not in grad.specialised_source((X,))
    assert "carry_like_item" not in s2s.source(s2s.grad(sum_of_squared_rows))
    with pytest.raises(s2s.S2SError, match="this loop ran no iteration"):
        s2s.jit(weighted_rows)(np.zeros((0, 2)), np.zeros(0))


def scaled_products(w, x):
    acc = 0.0
    for i in range(3):
        acc = acc + w * x * i
    return np.sum(acc)


def sines_of_products(w, x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + np.sin(w * x) * i
    return np.sum(acc ** 2)


W2, X31 = np.array([0.5, 1.5]), np.array([[2.0], [-1.0], [0.3]])


@pytest.mark.parametrize("fun, args", [(scaled_products, (W2, X31)), (sines_of_products, (W2, X31, 4)),
                                       (scaled_products, (0.7, W2))], ids=["two arrays", "a ufunc of them", "a number"])
def test_a_carry_that_two_arguments_broadcast_together_make_an_array(fun, args):
    """acc = acc + w * x * i of two arrays whose shapes only broadcast together: acc starts as the
    number broadcast to their broadcast shape, runtime.carry_like(acc, (w, x)); gradients on
    both backends against central differences, the tangent, the Hessian and vmap of the gradient."""
    assert s2s.jit(fun)(*args) == pytest.approx(fun(*args), rel=1e-14)
    reference = central_difference_grad(fun, args, 0)
    for backend in ("python", "cpu"):
        np.testing.assert_allclose(s2s.jit(s2s.grad(fun), backend=backend)(*args), reference, rtol=1e-6, atol=1e-9)
    tangent = np.ones_like(args[0]) if isinstance(args[0], np.ndarray) else 1.0
    zeros = tuple(np.zeros_like(a) if isinstance(a, np.ndarray) else a for a in args[1:])
    if fun is scaled_products:
        assert s2s.jvp(fun, args, (tangent,) + zeros, backend="cpu")[1] == pytest.approx(
            np.sum(reference * tangent), rel=1e-6)
    else:
        np.testing.assert_allclose(s2s.jit(s2s.hessian(fun))(*args),
                                   hessian_by_differences(lambda w: fun(w, *args[1:]), args[0]), rtol=1e-5, atol=1e-3)
        per_example = s2s.jit(s2s.vmap(s2s.grad(fun), in_axes=(0, None, None)))(np.stack([W2, 2 * W2]), X31, 4)
        np.testing.assert_allclose(per_example[1], central_difference_grad(fun, (2 * W2, X31, 4), 0),
                                   rtol=1e-6, atol=1e-9)
    jitted = s2s.jit(fun)
    jitted(*args)
    assert "acc = runtime.carry_like(acc, (w, x)" in s2s.source(jitted)


def rows_until(A, stop):
    s = 0.0
    i = 0
    while i < A.shape[0] and i < stop:
        s = s + np.sin(A[i]) * (i + 1.0)
        i += 1
    return np.sum(s ** 2)


@pytest.mark.parametrize("args", [(M, 3), (M, 2), (X, 4)], ids=["rows", "some rows", "numbers"])
def test_a_carry_that_a_while_loop_makes_an_array(args):
    """A while loop whose test changes nothing starts its carry as an array of the items' shape,
    refused where the test is false on entry (NumPy then keeps the number)."""
    assert s2s.jit(rows_until)(*args) == pytest.approx(rows_until(*args), rel=1e-14)
    reference = central_difference_grad(rows_until, args, 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(rows_until))(*args), reference, rtol=1e-6, atol=1e-9)
    tangent = np.ones_like(args[0])
    _, derivative = s2s.jvp(rows_until, args, (tangent, 0), backend="cpu")
    assert derivative == pytest.approx(np.sum(reference * tangent), rel=1e-6)


def test_the_promotion_before_a_while_loop_reads_its_test_on_entry():
    jitted = s2s.jit(rows_until)
    jitted(M, 3)
    code = " ".join(s2s.source(jitted).split())  # (black may break the call over lines)
    assert "s = runtime.carry_like_item( s, A, i < A.shape[0] and i < stop, where=" in code
    assert rows_until(M, 0) == 0.0
    with pytest.raises(s2s.S2SError, match="this loop ran no iteration") as info:
        jitted(M, 0)
    assert where(rows_until, "while i < A.shape[0]") in str(info.value)
