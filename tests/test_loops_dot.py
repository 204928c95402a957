"""np.dot of two 1-d arrays in the elementwise loops (s2s/optimize/loops.py, elements.py): a sum of
their product, proof that they have one length (checked before any loop relies on it), and its
adjoints runtime.dot_bar_x/y with a number as elementwise products; and a destination row
(the fact ("row", p)) written by the loop. Strings only; the gradients are in test_vmap_into.py."""

import ast
import textwrap

from s2s.optimize.loops import loop_function

ONE_D = ["array", 1]


def looped(source: str, facts: dict, lone_dots: bool = False) -> str:
    function = ast.parse(textwrap.dedent(source)).body[0]
    loop_function(function, facts, lone_dots=lone_dots)
    return ast.unparse(function)


def same(source: str) -> str:
    return ast.unparse(ast.parse(textwrap.dedent(source)).body[0])


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
