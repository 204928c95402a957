"""Explicit elementwise loops in code specialised to its arguments (s2s/optimize/loops.py): where the
loop appears and where it must not (strings, no compilation), and gradients of small
programs under s2s.jit against central differences and the python backend."""

import ast
import textwrap

import numpy as np
import pytest

import s2s
from s2s.optimize.loops import loop_function

from finite_differences import central_difference_grad

ONE_D = ["array", 1]


def looped(source: str, facts: dict) -> str:
    function = ast.parse(textwrap.dedent(source)).body[0]
    loop_function(function, facts)
    return ast.unparse(function)


def same(source: str) -> str:
    return ast.unparse(ast.parse(textwrap.dedent(source)).body[0])


ROSENBROCK = """
    def f_vjp(x, out_bar):
        _t2 = x[:-1]
        _t4 = x[1:] - _t2 ** 2
        _t8 = 1.0 - x[:-1]
        _t11 = np.sum(100.0 * _t4 ** 2 + _t8 ** 2)
        _t11_bar = out_bar
        x_bar = runtime.zeros_like(x)
        x_bar[:-1] += -(_t11_bar * 2 * _t8)
        _t4_bar = 100.0 * _t11_bar * 2 * _t4
        x_bar[:-1] += -_t4_bar * 2 * _t2
        x_bar[1:] += _t4_bar
        return (_t11, (x_bar,))
"""


def test_rosenbrock_becomes_one_loop():
    assert looped(ROSENBROCK, {"x": ONE_D, "out_bar": "float"}) == same("""
        def f_vjp(x, out_bar):
            _t11_bar = out_bar
            x_bar = runtime.zeros_like(x)
            _t11 = 0
            for k in range(max(0, x.shape[0] - 1)):
                _t2 = x[k]
                _t4 = x[k + 1] - _t2 ** 2
                _t8 = 1.0 - x[k]
                _t11 += 100.0 * _t4 ** 2 + _t8 ** 2
                x_bar[k] += -(_t11_bar * 2 * _t8)
                _t4_bar = 100.0 * _t11_bar * 2 * _t4
                x_bar[k] += -_t4_bar * 2 * _t2
                x_bar[k + 1] += _t4_bar
            return (_t11, (x_bar,))
    """)


def test_rosenbrock_without_its_value_carries_one_delay():
    # grad does not compute the value: x_bar[k + 1] += ... waits in a number for one iteration
    source = ROSENBROCK.replace("_t11 = np.sum(100.0 * _t4 ** 2 + _t8 ** 2)", "").replace("(_t11, ", "(None, ")
    assert looped(source, {"x": ONE_D, "out_bar": "float"}) == same("""
        def f_vjp(x, out_bar):
            _t11_bar = out_bar
            x_bar = runtime.zeros_like(x)
            x_bar_k1_prev = 0.0
            for k in range(max(0, x.shape[0] - 1)):
                _t2 = x[k]
                _t4 = x[k + 1] - _t2 ** 2
                _t8 = 1.0 - x[k]
                x_bar[k] += -(_t11_bar * 2 * _t8)
                _t4_bar = 100.0 * _t11_bar * 2 * _t4
                x_bar[k] += -_t4_bar * 2 * _t2
                x_bar_k1 = _t4_bar
                x_bar[k] += x_bar_k1_prev
                x_bar_k1_prev = x_bar_k1
            if x.shape[0] > 1:
                x_bar[x.shape[0] - 1] += x_bar_k1_prev
            return (None, (x_bar,))
    """)


def test_a_temporary_only_its_sum_adjoint_read_goes():
    # runtime.sum_bar(g, t) is g in the loop: t is left unread, and goes
    assert looped("""
        def f_vjp(x, out_bar):
            _t1 = x[1:] * x[:-1]
            _t2 = np.sin(_t1)
            _t2_bar = runtime.sum_bar(out_bar, _t2)
            x_bar = runtime.zeros_like(x)
            x_bar[1:] += _t2_bar * np.cos(_t1) * x[:-1]
            x_bar[1:] += x[1:]
            return (None, (x_bar,))
    """, {"x": ONE_D, "out_bar": "float"}) == same("""
        def f_vjp(x, out_bar):
            x_bar = runtime.zeros_like(x)
            for k in range(max(0, x.shape[0] - 1)):
                _t1 = x[k + 1] * x[k]
                _t2_bar = out_bar
                x_bar[k + 1] += _t2_bar * np.cos(_t1) * x[k]
                x_bar[k + 1] += x[k + 1]
            return (None, (x_bar,))
    """)


def test_updates_ahead_are_carried_in_numbers():
    # u_bar[k + 1] and u_bar[k + 2] would be read back by the next iterations (no vectorising):
    # their terms wait in numbers, one per delay, until the loop reaches their element
    assert looped("""
        def f(u, alpha, out_bar):
            u_bar = runtime.zeros_like(u)
            _t9_bar = out_bar * u[1:-1]
            _t7_bar = alpha * _t9_bar
            u_bar[:-2] += _t7_bar
            u_bar[1:-1] -= 2.0 * _t7_bar
            u_bar[2:] += _t7_bar
            u_bar[1:-1] += _t9_bar
            return u_bar
    """, {"u": ONE_D, "alpha": "float", "out_bar": "float"}) == same("""
        def f(u, alpha, out_bar):
            u_bar = runtime.zeros_like(u)
            u_bar_k1_prev = 0.0
            u_bar_k2_prev = 0.0
            u_bar_k2_prev2 = 0.0
            for k in range(max(0, u.shape[0] - 2)):
                _t9_bar = out_bar * u[k + 1]
                _t7_bar = alpha * _t9_bar
                u_bar[k] += _t7_bar
                u_bar_k1 = -(2.0 * _t7_bar)
                u_bar_k2 = _t7_bar
                u_bar_k1 += _t9_bar
                u_bar[k] += u_bar_k1_prev + u_bar_k2_prev2
                u_bar_k1_prev = u_bar_k1
                u_bar_k2_prev2 = u_bar_k2_prev
                u_bar_k2_prev = u_bar_k2
            if u.shape[0] > 2:
                u_bar[u.shape[0] - 2] += u_bar_k1_prev + u_bar_k2_prev2
                u_bar[u.shape[0] - 1] += u_bar_k2_prev
            return u_bar
    """)


NOT_CARRIED = {
    "read in the loop": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            v = runtime.zeros_like(x)
            w[1:] += x[:-1]
            w[:-1] += x[1:] * 2.0
            v[:-1] += w[:-1] * 3.0
            return v
    """,
    "written with =": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[1:] += x[:-1]
            w[:-1] = x[1:] * 2.0
            return w
    """,
    "beside a sum (not vectorised anyway)": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            s = np.sum(x[1:] * x[:-1])
            w[:-1] += x[1:] * 2.0
            w[1:] += x[:-1]
            return (s, w)
    """,
    "not made by runtime.zeros_like (its dtype unknown)": """
        def f(x, out_bar):
            w = np.zeros_like(x)
            w[:-1] += x[1:] * 2.0
            w[1:] += x[:-1]
            return w
    """,
}


@pytest.mark.parametrize("case", sorted(NOT_CARRIED))
def test_updates_ahead_stay_where_not_proven_safe(case):
    out = looped(NOT_CARRIED[case], {"x": ONE_D, "out_bar": "float"})
    assert "for k in range(max(0, x.shape[0] - 1)):" in out  # a loop, but written as it was
    assert "_prev" not in out and "w[k + 1] +=" in out


def test_without_facts_nothing_changes():
    assert looped(ROSENBROCK, {"x": None, "out_bar": "float"}) == same(ROSENBROCK)
    assert looped(ROSENBROCK, {"x": ["array", 2], "out_bar": "float"}) == same(ROSENBROCK)


UNCHANGED = {
    "an update that reads its own array": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[:-1] += x[1:]
            w[1:] += w[:-1] * 2.0
            return w
    """,
    "an overlapping update, its right side copied first (s2s/codegen.py)": """
        def f(x, out_bar):
            w = np.copy(x)
            w[1:] += runtime.copy(w[:-1])
            w[:-1] -= runtime.copy(w[1:])
            return w
    """,
    "a write into a parameter": """
        def f(x, out_bar):
            x[:-1] += x[1:] * 2.0
            x[1:] += x[:-1] * 3.0
            return x
    """,
    "a write into an array another name refers to": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            v = w[1:]
            w[:-1] += x[1:] * 2.0
            w[1:] += x[:-1] * 3.0
            return v
    """,
    "arrays of different lengths": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[:-1] += x[1:]
            w += x * 3.0
            return w
    """,
    "two parameters of unproven equal length": """
        def f(x, y):
            w = runtime.zeros_like(x)
            w += x * y
            w += y * 2.0
            return w
    """,
    "a division": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[:-1] += x[1:] / x[:-1]
            w[1:] += x[:-1]
            return w
    """,
    "a temporary read after the run": """
        def f(x, out_bar):
            _t1 = x[1:] * 2.0
            w = runtime.zeros_like(x)
            w[:-1] += _t1
            return (w, _t1)
    """,
    "a call that is not elementwise": """
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[:-1] += np.cumsum(x[1:])
            w[1:] += x[:-1]
            return w
    """,
}


@pytest.mark.parametrize("case", sorted(UNCHANGED))
def test_left_as_numpy(case):
    source = UNCHANGED[case]
    facts = {"x": ONE_D, "y": ONE_D, "out_bar": "float"}
    assert looped(source, facts) == same(source)


def test_a_read_ahead_of_a_write_starts_a_new_loop():
    # w[1:] after w[:-1] += ...: element k + 1 is not written yet when the loop reaches k
    assert looped("""
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[:-1] += x[1:] * 2.0
            _t1 = w[1:] * x[:-1]
            w[1:] += _t1 * 3.0
            return w
    """, {"x": ONE_D, "out_bar": "float"}) == same("""
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            for k in range(max(0, x.shape[0] - 1)):
                w[k] += x[k + 1] * 2.0
            for k in range(max(0, x.shape[0] - 1)):
                _t1 = w[k + 1] * x[k]
                w[k + 1] += _t1 * 3.0
            return w
    """)


def test_a_hazard_ends_the_run_and_the_rest_still_loops():
    # reading w[1:] right after writing w[:-1] would read ahead: a second loop starts there
    out = looped("""
        def f(x, out_bar):
            w = runtime.zeros_like(x)
            w[:-1] += x[1:] * 2.0
            w[1:] += x[:-1] * 3.0
            v = runtime.zeros_like(x)
            v[:-1] += w[1:] * x[1:]
            v[1:] += x[:-1]
            return v
    """, {"x": ONE_D, "out_bar": "float"})
    assert out.count("for k in range(max(0, x.shape[0] - 1)):") == 2


# ---- gradients, compiled -----------------------------------------------------------------


def offsets(x):
    """Slices of three lengths, a sum of products, a sine."""
    return np.sum(x[2:] * x[:-2] - np.sin(x[1:-1]) ** 2) + np.sum(x[1:] * x[:-1]) + 0.5 * np.sum(x * x)


def writes(x, a):
    """Slice writes into a copy, as in a stencil, and a scalar parameter."""
    y = x.copy()
    y[1:-1] = x[1:-1] + a * (x[2:] - 2.0 * x[1:-1] + x[:-2])
    y[1:] = y[1:] * x[:-1]
    return np.sum(y * y)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("fun, extra", [(offsets, ()), (writes, (0.3,)), (rosen, ())])
def test_gradients_under_jit(fun, extra):
    rng = np.random.default_rng(1)
    compiled, plain = s2s.jit(s2s.grad(fun)), s2s.grad(fun)
    for n in (7, 2, 1, 0):  # n smaller than the trims: empty loops
        x = rng.standard_normal(n)
        args = (x,) + extra
        got = compiled(*args)
        assert got.dtype == np.float64 and got.shape == x.shape
        np.testing.assert_allclose(got, plain(*args), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, central_difference_grad(fun, args, 0), rtol=1e-6, atol=1e-6)
    assert "for k in range(" in compiled.source


def shifted(x):
    """The gradient's loop adds into x_bar at offsets k and k + 1 (one delay), with no sum."""
    y = x.copy()
    y[1:] = x[1:] * np.sin(x[:-1])
    return np.sum(y * y)


def stencil(x):
    """Offsets k, k + 1 and k + 2 (delays of one and two iterations)."""
    y = x.copy()
    y[1:-1] = x[2:] * x[:-2] - np.sin(x[1:-1]) * x[2:]
    return np.sum(y * y)


@pytest.mark.parametrize("fun", [shifted, stencil])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_carried_updates_under_jit(fun, dtype):
    # lengths 0 to 3: the loop runs never, or fewer times than its delays are long
    rng = np.random.default_rng(3)
    compiled = s2s.jit(s2s.grad(fun))
    for n in (0, 1, 2, 3, 7):
        x = rng.standard_normal(n).astype(dtype)
        got = compiled(x)
        assert got.dtype == dtype and got.shape == x.shape
        expected = central_difference_grad(fun, (x.astype(np.float64),), 0)
        tolerance = 1e-6 if dtype == np.float64 else 1e-3
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
    assert "_prev = 0.0" in compiled.source and ("_prev2 = 0.0" in compiled.source) == (fun is stencil)


def test_float32_stays_float32():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(9).astype(np.float32)
    compiled = s2s.jit(s2s.grad(rosen))
    got = compiled(x)
    assert got.dtype == np.float32
    assert "for k in range(" in compiled.source
    np.testing.assert_allclose(got, s2s.grad(rosen)(x.astype(np.float64)), rtol=1e-4, atol=1e-3)


def test_the_command_line_code_stays_numpy():
    assert "for k in range(" not in s2s.source(s2s.grad(rosen))


def shifted_products(x, s):
    return np.sum(x[1:-1] * x[2:] * s + np.sin(x[2:]) * x[:-2])


def test_jvp_on_the_cpu_backend_loops_too():
    x, s = np.linspace(0.2, 1.4, 8), 0.7
    x_dot, s_dot = np.linspace(-1.0, 1.0, 8), 0.3
    forward = s2s.doors.core.ForwardTransformed(shifted_products)
    assert "for k in range(max(0, x.shape[0] - 2))" in forward.specialised_source((x, s, x_dot, s_dot))
    value, tangent = s2s.jvp(shifted_products, (x, s), (x_dot, s_dot), backend="cpu")
    h = 1e-6
    expected = (shifted_products(x + h * x_dot, s + h * s_dot) - shifted_products(x - h * x_dot, s - h * s_dot)) / (2 * h)
    np.testing.assert_allclose(value, shifted_products(x, s), rtol=1e-12)
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)
    np.testing.assert_allclose(tangent, s2s.jvp(shifted_products, (x, s), (x_dot, s_dot))[1], rtol=1e-12)
