"""np.dot of two 1-d arrays in the elementwise loops (s2s/optimize/loops.py, elements.py): a sum of
their product that starts from a zero of np.dot's dtype (runtime.dot_zero), proof that they have
one length (checked before any loop relies on it), and its adjoints runtime.dot_bar_x/y with a
number as elementwise products; a destination row (the fact ("row", p)) written by the loop; and
sums of booleans, which stay NumPy's logical or. The generated strings, and the gradients under
s2s.jit of programs with such dots (of views, of operands a loop overwrites, per example) against
central differences; more per-example gradients are in test_vmap_into.py."""

import ast
import textwrap

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, where
from s2s.optimize.loops import loop_function

ONE_D = ["array", 1]


def looped(source: str, facts: dict, lone_dots: bool = False) -> str:
    function = ast.parse(textwrap.dedent(source)).body[0]
    loop_function(function, facts, lone_dots=lone_dots)
    return ast.unparse(function)


def same(source: str) -> str:
    return ast.unparse(ast.parse(textwrap.dedent(source)).body[0])


rng = np.random.default_rng(21)


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_grad(fun, args, argnums, jit=True):
    """s2s.grad on the python backend (and under s2s.jit) against central differences."""
    want = [central_difference_grad(fun, args, k) for k in argnums]
    for g in [s2s.grad(fun, argnums=argnums)] + ([s2s.jit(s2s.grad(fun, argnums=argnums))] if jit else []):
        got = g(*args)
        for a, b in zip(got, want):
            close(a, b)


INTO = """
    def f_vjp_into(w, x, out_bar, w_bar_out):
        if w_bar_out.shape != w.shape:
            return True
        _t1 = np.dot(x, w)
        _t2 = np.tanh(_t1)
        w_bar = runtime.dot_bar_y((1.0 - _t2 * _t2) * out_bar / 2.0, x, w)
        w_bar_out[:] = w_bar
        return False
"""


def test_dot_and_its_adjoint_into_a_row():
    facts = {"w": ONE_D, "x": ONE_D, "out_bar": "float", "w_bar_out": ("row", "w")}
    assert looped(INTO, facts, lone_dots=True) == same("""
        def f_vjp_into(w, x, out_bar, w_bar_out):
            if x.shape[0] != w.shape[0]:
                raise ValueError('np.dot(x, w): the arrays have different lengths')
            if w_bar_out.shape != w.shape:
                return True
            _t1 = runtime.dot_zero(x, w)
            for k in range(w.shape[0]):
                _t1 += x[k] * w[k]
            _t2 = np.tanh(_t1)
            w_bar_scale = (1.0 - _t2 * _t2) * out_bar / 2.0
            for k in range(w.shape[0]):
                w_bar = w_bar_scale * x[k]
                w_bar_out[k] = w_bar
            return False
    """)


def test_a_lone_dot_stays_blas_outside_a_vmap():
    facts = {"w": ONE_D, "x": ONE_D, "out_bar": "float", "w_bar_out": ("row", "w")}
    text = looped(INTO, facts)
    assert "_t1 = np.dot(x, w)" in text
    assert "w_bar_out[k] = w_bar" in text  # the adjoint still goes into the row


def test_without_the_row_fact_the_parameter_is_not_written_by_a_loop():
    """A parameter is no fresh array: the store stays NumPy (it may alias an input)."""
    facts = {"w": ONE_D, "x": ONE_D, "out_bar": "float", "w_bar_out": ONE_D}
    text = looped(INTO, facts, lone_dots=True)
    assert "w_bar_out[:] = w_bar" in text


def test_no_proof_without_the_dot():
    """Without np.dot(x, w) nothing says x and w have one length: no loop mixes them."""
    source = """
        def f(w, x, g):
            a = runtime.dot_bar_y(g, x, w)
            b = a * w
            return b
    """
    assert looped(source, {"w": ONE_D, "x": ONE_D, "g": "float"}) == same(source)


def test_a_dot_inside_a_branch_proves_nothing():
    source = """
        def f(w, x, g):
            if g > 0:
                s = np.dot(x, w)
            a = x * w
            b = a * w
            return b
    """
    assert looped(source, {"w": ONE_D, "x": ONE_D, "g": "float"}, lone_dots=True) == same(source)


def test_a_rebound_operand_proves_nothing():
    source = """
        def f(w, x, g):
            s = np.dot(x, w)
            x = w
            a = x * w
            b = a * w
            return b
    """
    text = looped(source, {"w": ONE_D, "x": ONE_D, "g": "float"}, lone_dots=True)
    assert "raise" not in text and "np.dot(x, w)" in text


# ---- np.dot of two boolean arrays: a logical or, not a count ---------------------------------
# Taken as `a = 0; a += m[k] * n[k]`, a dot of boolean arrays would count the common Trues where
# np.dot gives True (jit(grad) twice the gradient below, silently). The sum starts from
# runtime.dot_zero(m, n), a zero of np.dot's dtype, which refuses booleans (and integers narrower
# than 64 bits, which np.dot wraps at their width).


def masks(w, m, n):
    a = np.dot(m, n)
    b = np.dot(w, m)
    return a * b * b


def test_dot_of_boolean_masks_is_refused_under_jit_not_counted():
    w = np.array([0.5, -1.0, 2.0, 0.25])
    m, n = np.array([True, False, True, True]), np.array([True, True, True, False])
    close(s2s.grad(masks)(w, m, n), central_difference_grad(masks, [w, m, n], 0))
    # (a boolean array is not looped over: Numba's np.dot refuses booleans, at the statement)
    with pytest.raises(s2s.S2SError, match=r"dot\(array\(bool") as info:
        s2s.jit(s2s.grad(masks))(w, m, n)
    assert where(masks, "a = np.dot(m, n)") in str(info.value)


def test_dot_zero_has_the_dtype_of_np_dot():
    from s2s import runtime

    f32, f64, i64 = np.ones(2, np.float32), np.ones(2), np.arange(2)
    assert runtime.dot_zero(f32, f32).dtype == np.dot(f32, f32).dtype == np.float32
    assert runtime.dot_zero(f32, f64).dtype == np.float64
    assert runtime.dot_zero(i64, i64).dtype == np.int64
    assert runtime.dot_zero(i64, f32).dtype == np.dot(i64, f32).dtype
    for narrow in (np.ones(2, bool), np.ones(2, np.int32)):
        with pytest.raises(TypeError, match="no compiled form"):
            runtime.dot_zero(narrow, narrow)


def test_the_sum_of_a_dot_starts_from_a_zero_of_its_operands():
    text = looped("""
        def f(w, x, g):
            a = np.dot(w[1:], w[:-1])
            return a
    """, {"w": ["array", 1], "x": ["array", 1], "g": "float"}, lone_dots=True)
    assert "a = runtime.dot_zero(w, w)\n    for k in range(max(0, w.shape[0] - 1)):\n        a += w[k + 1] * w[k]" \
        in text


def test_a_dot_of_a_temporary_sums_it_as_an_array():
    """t would be a number of the loop, which has no dtype before it to start the sum from:
    t stays an array, computed before the loop, and the sum starts from dot_zero(t, x)."""
    text = looped("""
        def f(w, x, g):
            s = np.dot(w, x)
            t = np.sin(w) * g
            u = np.dot(t, x)
            return s + u
    """, {"w": ["array", 1], "x": ["array", 1], "g": "float"})
    assert "t = np.sin(w) * g\n    s = runtime.dot_zero(w, x)\n    u = runtime.dot_zero(t, x)" in text
    assert "u += t[k] * x[k]" in text


# ---- booleans added in a loop ---------------------------------------------------------------------
# NumPy's sum of two boolean arrays is their logical or; the elementwise loops (optimize/loops.py)
# leave a sum of two operands known boolean, such as (x[1:] > 0.0) + (x[:-1] > 1.0), as NumPy's,
# where a sum of two numbers would be 2 where both hold (jit(grad) silently off there). (Boolean
# arrays passed as arguments: test_boolean_arrays.py.)


def shifted_or(x):
    return np.sum(((x[1:] > 0.0) + (x[:-1] > 1.0)) * (x[1:] - x[:-1]) ** 2)


def test_a_sum_of_comparisons_stays_a_logical_or_under_jit():
    x = np.array([0.5, -1.0, 2.0, 0.25, 1.5, 0.7])
    check_grad(shifted_or, [x], (0,))
    # (the loops pass leaves the sum as NumPy, as written, and reads its elements in the loop;
    # under Numba the sum of two boolean arrays is a logical or: backends/numba_pipeline.py)
    source = s2s.grad(shifted_or).specialised([x])[0]
    assert "_t5 = (x[1:] > 0.0) + (x[:-1] > 1.0)" in source and "_t5[k]" in source
    assert "x[k + 1] > 0.0" not in source


def summed_comparisons(x):
    s = np.sum(x + ((x > 0.0) + (x > 1.0)))
    return s * s


def test_a_sum_of_comparisons_inside_an_array_expression_python_backend():
    x = np.array([0.5, -1.0, 2.0, 0.25, 1.5, 0.7])
    close(s2s.grad(summed_comparisons)(x), central_difference_grad(summed_comparisons, [x], 0))


# Numba 0.68 fuses x + ((x > 0.0) + (x > 1.0)) into one loop over numbers, in which True + True
# is 2 (numba.njit of that expression alone gives 4.0 at x = 2.0, NumPy 3.0): s2s compiles
# generated code with a pass that makes a sum of two boolean arrays `|` (backends/numba_pipeline.py).
def test_a_sum_of_comparisons_inside_an_array_expression_under_jit():
    x = np.array([0.5, -1.0, 2.0, 0.25, 1.5, 0.7])
    assert s2s.jit(summed_comparisons)(x) == summed_comparisons(x)
    close(s2s.jit(s2s.grad(summed_comparisons))(x), central_difference_grad(summed_comparisons, [x], 0))


def counted_comparisons(a, b):
    return a * ((a > 0.0) + (b > 0.0))  # (of two Python bools: 2 where both hold, as Python counts)


def test_a_sum_of_two_number_comparisons_still_counts_under_jit():
    assert s2s.jit(counted_comparisons)(2.0, 1.0) == counted_comparisons(2.0, 1.0) == 4.0
    assert s2s.jit(s2s.grad(counted_comparisons))(2.0, 1.0) == pytest.approx(2.0)  # d/da of 2a


# ---- np.dot of views, of an array with itself, in loops that overwrite its operands -------------


def views(W, x):
    return (np.dot(W[0], x) + np.dot(W[1][::-1], x) ** 2 + np.dot(x[::2], x[1::2]) * np.dot(x, x)
            + (W[1] @ x) * np.dot(W[0, 1:], x[:-1]))


def overwritten_in_loop(w, x):
    s = 0.0
    for i in range(3):
        t = np.dot(w, x)
        x = x * t
        w = np.sin(w) + t
        s = s + t
    return s


def written_in_place_in_loop(w, x):
    v = x.copy()
    s = 0.0
    for i in range(3):
        t = np.dot(w, v)
        v[i] = t  # the dot's operand changes under it: the reverse sweep needs each pass's v
        s = s + t * v[0]
    return s


def looped_dots(w, x):
    """A dot beside elementwise statements of its length: the loops of jit(grad) take it."""
    t = np.dot(x, w)
    y = x * w + t
    z = np.exp(-y * y) + np.dot(w[1:], w[:-1])
    return np.sum(z) + t * np.dot(w, w)


@pytest.mark.parametrize("fun, shapes", [
    (views, [(2, 6), (6,)]),
    (overwritten_in_loop, [(4,), (4,)]),
    (written_in_place_in_loop, [(4,), (4,)]),
    (looped_dots, [(5,), (5,)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_dots_against_central_differences(fun, shapes):
    args = [rng.normal(size=s) * 0.4 for s in shapes]
    check_grad(fun, args, (0, 1))


def test_dot_operands_of_different_lengths_raise_under_jit():
    """The loops take np.dot's operands to have one length: checked before any loop reads."""
    g = s2s.jit(s2s.grad(looped_dots, argnums=(0, 1)))
    g(rng.normal(size=5), rng.normal(size=5))
    for w, x in ((rng.normal(size=5), rng.normal(size=4)), (rng.normal(size=3), rng.normal(size=6))):
        with pytest.raises(ValueError):
            s2s.grad(looped_dots)(w, x)
        with pytest.raises(ValueError):
            g(w, x)


# ---- per-example gradients (<vjp>_into) --------------------------------------------------------


def per_example(fun, args, in_axes, argnums):
    """(central differences, a Python loop of s2s.grad) per example, stacked on axis 0."""
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    examples = [[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)] for b in range(n)]
    grad = s2s.grad(fun, argnums=argnums)
    loop = [grad(*e) for e in examples]
    as64 = [[np.asarray(a, float) for a in e] for e in examples]
    central = [[central_difference_grad(fun, e, k) for k in argnums] for e in as64]
    return ([np.stack([c[j] for c in central]) for j in range(len(argnums))],
            [np.stack([r[j] for r in loop]) for j in range(len(argnums))])


def dot_model(w, x):
    t = np.dot(x, w)
    return np.sum(np.sin(w * t) * x) + t * np.dot(w, w) + np.dot(w[::-1], x) ** 2


@pytest.mark.parametrize("case", ["float32 strided rows, w shared", "w batched on axis 1, x shared"])
def test_per_example_gradients(case):
    W, X = rng.normal(size=(7, 5)) * 0.5, rng.normal(size=(7, 10))[:, ::2]  # X: rows with a stride
    if case.startswith("float32"):
        args, in_axes, argnums, tol = [W[0].astype(np.float32), X.astype(np.float32)], (None, 0), (1, 0), 2e-3
    else:
        args, in_axes, argnums, tol = [W.T, X[0]], (1, None), (0, 1), 1e-6
    g = s2s.jit(s2s.vmap(s2s.grad(dot_model, argnums=argnums), in_axes=in_axes))
    got = g(*args)
    assert "_vjp_into(" in s2s.source(g)
    central, loop = per_example(dot_model, args, in_axes, argnums)
    for a, c, b in zip(got, central, loop):
        assert a.dtype == b.dtype == args[0].dtype
        close(a, c, rtol=tol, atol=tol)
        close(a, b, rtol=tol, atol=tol * 1e-2)
