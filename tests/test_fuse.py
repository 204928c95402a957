"""The pass that folds single-use temporaries (s2s/optimize/fuse.py): before/after strings."""

import ast
import textwrap

import numpy as np

import s2s
from s2s.optimize.fuse import fuse_function


def fused(source: str) -> str:
    function = ast.parse(textwrap.dedent(source)).body[0]
    return ast.unparse(fuse_function(function))


def same(source: str) -> str:
    return ast.unparse(ast.parse(textwrap.dedent(source)).body[0])


def test_a_chain_of_temporaries_becomes_one_expression():
    assert fused("""
        def f(x):
            _t1 = x[1:]
            _t2 = _t1 * 2.0
            _t3 = np.sin(_t2)
            y = _t3 - 1.0
            return y
    """) == same("""
        def f(x):
            y = np.sin(x[1:] * 2.0) - 1.0
            return y
    """)


UNCHANGED = {
    "a mutation in between": """
        def f(x):
            _t1 = x * 2.0
            x[0] = 1.0
            y = _t1 + 1.0
            return y
    """,
    "a rebinding in between": """
        def f(x):
            _t1 = x * 2.0
            x = 3.0
            y = _t1 + x
            return y
    """,
    "a use inside a loop": """
        def f(x):
            _t1 = x * 2.0
            for i in range(3):
                y = _t1 + i
            return y
    """,
    "a user-named variable": """
        def f(x):
            a = x * 2.0
            y = a + 1.0
            return y
    """,
    "a temporary used twice": """
        def f(x):
            _t1 = x * 2.0
            y = _t1 + _t1
            return y
    """,
    "another origin line's group": """
        def f(x):
            __s2s_comment_0__
            _t1 = x * 2.0
            __s2s_comment_1__
            y = _t1 + 1.0
            return y
    """,
    "a call that may change something": """
        def f(x):
            _t1 = g(x)
            y = _t1 + 1.0
            return y
    """,
    "a call in between that may change what it reads": """
        def f(x, tape):
            _t1 = x[0] * 2.0
            tape.append(x)
            y = _t1 + 1.0
            return y
    """,
    "an in-place update of an array that a view may share": """
        def f(x, g):
            x_bar = runtime.zeros_like(x)
            v = x_bar[1:]
            _t1_bar = v * 2.0
            x_bar[:-1] += g
            y = _t1_bar + 1.0
            return (y, x_bar)
    """,
}


def test_what_must_not_fold():
    for why, source in UNCHANGED.items():
        assert fused(source) == same(source), why


def test_a_branch_test_folds_but_not_into_its_body():
    assert fused("""
        def f(x):
            _t1 = x > 0.0
            _t2 = x * 2.0
            if _t1:
                y = _t2
            else:
                y = x
            return y
    """) == same("""
        def f(x):
            _t2 = x * 2.0
            if x > 0.0:
                y = _t2
            else:
                y = x
            return y
    """)


def test_unbroadcast_is_dropped_where_the_shapes_are_provably_equal():
    # x[1:] and x[:-1] have max(0, n - 1) rows; arithmetic with numbers keeps a shape.
    assert fused("""
        def f(x, g):
            _t1 = x[1:]
            _t2 = x[:-1]
            _t3 = _t1 - _t2 ** 2
            _t3_bar = runtime.sum_bar(g, _t3)
            _t1_bar = runtime.unbroadcast(3.0 * _t3_bar, _t1)
            _t2_bar = -runtime.unbroadcast(_t3_bar, _t2)
            return (_t1_bar, _t2_bar)
    """) == same("""
        def f(x, g):
            _t3_bar = runtime.sum_bar(g, x[1:] - x[:-1] ** 2)
            _t1_bar = 3.0 * _t3_bar
            _t2_bar = -_t3_bar
            return (_t1_bar, _t2_bar)
    """)


def test_unbroadcast_stays_where_shapes_may_differ():
    source = """
        def f(x, y, g):
            _t1 = x * y
            _t1_bar = runtime.sum_bar(g, _t1)
            x_bar = runtime.unbroadcast(_t1_bar * y, x)
            s_bar = runtime.unbroadcast(_t1_bar, x[2:])
            u_bar = runtime.unbroadcast(_t1_bar, x[:1])
            v_bar = runtime.unbroadcast(x[1:] * 2.0, x[:0])
            return (x_bar, s_bar, u_bar, v_bar)
    """
    assert fused(source).count("runtime.unbroadcast(") == 4


def test_a_sum_adjoint_stays_a_number_where_the_other_operands_give_the_shape():
    assert fused("""
        def f(x, out_bar):
            _t1 = x[1:] - x[:-1]
            _t2 = _t1 * _t1
            _t3 = np.sum(_t2)
            _t3_bar = out_bar
            _t2_bar = runtime.sum_bar(_t3_bar, _t2)
            _t1_bar = _t2_bar * _t1 + _t1 * _t2_bar
            return (_t3, _t1_bar)
    """) == same("""
        def f(x, out_bar):
            _t1 = x[1:] - x[:-1]
            _t3 = np.sum(_t1 * _t1)
            _t2_bar = out_bar
            _t1_bar = _t2_bar * _t1 + _t1 * _t2_bar
            return (_t3, _t1_bar)
    """)
    # Where the adjoint itself is the result, it must be the full array.
    source = """
        def f(x, out_bar):
            _t1 = x[1:] - x[:-1]
            _t3 = np.sum(_t1)
            _t3_bar = out_bar
            _t1_bar = runtime.sum_bar(_t3_bar, _t1)
            y_bar = _t1_bar * 2.0
            return (_t3, _t1_bar, y_bar)
    """
    assert "runtime.sum_bar(out_bar, _t1)" in fused(source)


def test_an_in_place_update_of_a_private_adjoint_is_not_a_barrier():
    assert fused("""
        def f(x, g):
            _t1_bar = g * 2.0
            x_bar = runtime.zeros_like(x)
            x_bar[1:] += g
            x_bar[:-1] += _t1_bar
            return x_bar
    """) == same("""
        def f(x, g):
            x_bar = runtime.zeros_like(x)
            x_bar[1:] += g
            x_bar[:-1] += g * 2.0
            return x_bar
    """)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_rosenbrock_gradient_is_fused_and_correct_on_both_backends():
    g = s2s.grad(rosenbrock)
    assert "unbroadcast" not in g.source and "_t3 =" not in g.source
    x = np.linspace(-1.0, 1.5, 7)
    expected = np.zeros_like(x)
    expected[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    expected[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    np.testing.assert_allclose(g(x), expected, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(g)(x), expected, rtol=1e-12)


def test_dead_code_goes_through_loops_where_nothing_reads_it():
    # What only the left-out value needed: an accumulator of the reader's name, the loops
    # left empty, and the temporaries they read.
    assert fused("""
        def f(pos, out_bar):
            n = pos.shape[0]
            energy = 0.0
            for i in range(n):
                _t2 = i + 1
                for j in range(_t2, n):
                    d = pos[i] - pos[j]
                    energy = energy - 1.0 / d
            pos_bar = runtime.zeros_like(pos)
            for i in range(n - 1, -1, -1):
                for j in range(n - 1, i, -1):
                    pos_bar[j] += out_bar
            return (None, (pos_bar,))
    """) == same("""
        def f(pos, out_bar):
            n = pos.shape[0]
            pos_bar = runtime.zeros_like(pos)
            for i in range(n - 1, -1, -1):
                for j in range(n - 1, i, -1):
                    pos_bar[j] += out_bar
            return (None, (pos_bar,))
    """)


KEPT_ALIVE = {
    "read in a later iteration": """
        def f(x, n):
            s = 0.0
            t = 0.0
            for k in range(n):
                t = s * 2.0
                s = x[k]
            return t
    """,
    "a loop variable read after the loop": """
        def f(x, n):
            k = 0
            for k in range(n):
                pass
            return x * k
    """,
    "an in-place update of an array another name may share": """
        def f(x):
            v = x[1:]
            v += 1.0
            return x
    """,
    "a call that may change something": """
        def f(x, tape):
            v = runtime.new_tape(x, 3)
            tape.append(x)
            return x
    """,
    "a while loop (it must still run, or not end)": """
        def f(x):
            while x > 1.0:
                pass
            return x
    """,
}


def test_what_dead_code_removal_keeps():
    for why, source in KEPT_ALIVE.items():
        assert fused(source) == same(source), why
