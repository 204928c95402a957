"""Gradients generated for what their arguments are (s2s.jit; s2s/analysis/shapes.py).

Under s2s.jit a gradient is generated for its arguments' kinds (numbers, arrays and their
ndim). Where the shape classes prove that an adjoint already has its variable's shape, the
rule's unbroadcast and the shape tape that fed it are left out. These tests check the proofs
(what must and must not be proved), the generated code, and the gradients against central
differences wherever broadcasting does and does not happen.
"""

import numpy as np
import pytest

import s2s
from s2s.ir import nodes as ir
from s2s.driver import pipeline
from s2s.frontend.lower import normalize
from s2s.analysis.shapes import INTEGER, NUMBER, ShapeClasses, argument_facts

from finite_differences import central_difference_grad


def heat_like(u0, alpha, steps):
    u = u0.copy()
    for step in range(steps):
        new = u.copy()
        new[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = new
    return np.sum(u * u)


def scalar_loop(params, y0, steps, dt):
    a, b = params
    x = y0[0]
    for step in range(steps):
        x = x + dt * (a * x - b * x * x)
    return x * x


def broadcasts(x, row, s):
    """Adjoints that do need unbroadcast: a row added to every row, a number to an array,
    and x[1:] against x (equal lengths only when n == 2... never proved)."""
    y = x + row
    z = s * y
    w = z[:, 1:] * z[:, :-1]
    return np.sum(w) + np.sum(row[1:] * row[:1])


def shrinking(x, steps):
    y = x
    for step in range(steps):
        y = y[1:] * y[:-1]  # y's shape changes every step: nothing is proved
    return np.sum(y * x[: y.shape[0]])


def specialised(fun, *args) -> str:
    source, _ = pipeline.generate(fun, "grad", {"argnums": [0], "has_aux": False, "facts": argument_facts(args)})
    return source


def generic(fun) -> str:
    return pipeline.generate(fun, "grad", {"argnums": [0], "has_aux": False})[0]


def classes_of(fun, *args) -> tuple[ShapeClasses, ir.Function]:
    lowered = normalize(fun)
    facts = dict(zip(lowered.params, argument_facts(args)))
    return ShapeClasses(lowered, facts), lowered


# ---- the proofs ------------------------------------------------------------------------


def test_argument_facts():
    assert argument_facts((1.0, 2, True, np.float32(1), np.zeros((2, 3)), (1.0, np.zeros(2)), "s")) == [
        "float", "int", "bool", "float", ["array", 2], ["tuple", ["float", ["array", 1]]], None]


def test_slices_with_equal_trims_share_a_class_through_the_loop():
    classes, lowered = classes_of(heat_like, np.ones(8), 0.1, 3)
    loop = next(s for s in lowered.body if isinstance(s, ir.For))
    by_target = {s.targets[0]: s for s in ir.walk(loop.body) if isinstance(s, ir.Assign)}
    u_slices = [classes.post(by_target[t], t) for t in ("_t1", "_t2", "_t6")]  # u[1:-1], u[2:], u[:-2]
    assert u_slices[0] == u_slices[1] == u_slices[2] == ("arr", "u0", ((0, 2),))
    # alpha is a number: alpha * (...) keeps the class; u keeps u0's class around the loop.
    assert classes.post(by_target["_t8"], "_t8") == u_slices[0]
    assert classes.everywhere("u") == ("arr", "u0", ((0, 0),))


def test_numbers_ints_and_unpacking():
    classes, lowered = classes_of(scalar_loop, np.array([1.0, 2.0]), np.array([0.5]), 3, 0.1)
    first = lowered.body[0]
    assert classes.post(first, "a") == NUMBER and classes.post(first, "b") == NUMBER
    loop = next(s for s in lowered.body if isinstance(s, ir.For))
    assert classes.pre(loop.body[0], "step") == INTEGER
    assert classes.everywhere("x") == NUMBER


def test_nothing_is_proved_without_facts_or_across_a_changing_shape():
    classes, lowered = classes_of(shrinking, np.ones(6), 2)
    assert classes.everywhere("y") is None
    classes, _ = classes_of(heat_like, [1.0, 2.0], 0.1, 3)  # a list: not an array fact
    assert classes.everywhere("u") is None


def test_different_trims_and_different_arrays_are_different_classes():
    classes, lowered = classes_of(broadcasts, np.ones((3, 4)), np.ones(4), 2.0)
    by_target = {s.targets[0]: s for s in ir.walk(lowered.body) if isinstance(s, ir.Assign)}
    assert classes.post(by_target["y"], "y") is None  # x + row: different roots
    row_slices = [s for s in ir.walk(lowered.body) if isinstance(s, ir.Assign)
                  and isinstance(s.value, ir.Subscript) and s.value.value == ir.Name("row")]
    # row[1:] has n - 1 elements; row[:1] has min(1, n), which no trim describes.
    assert {classes.post(s, s.targets[0]) for s in row_slices} == {("arr", "row", ((0, 1),)), None}


# ---- the generated code ----------------------------------------------------------------


def test_specialised_code_has_no_unbroadcast_or_shape_tapes_where_shapes_are_proved():
    text = specialised(heat_like, np.ones(8), 0.1, 3)
    assert "Specialised (s2s.jit) for arguments: u0 1-d array, alpha float, steps int." in text
    assert "unbroadcast" not in text and "push_shape" not in text and "shape_tape" not in text
    assert "unbroadcast" in generic(heat_like) and "push_shape" in generic(heat_like)
    scalar = specialised(scalar_loop, np.array([1.0, 2.0]), np.array([0.5]), 3, 0.1)
    assert "unbroadcast" not in scalar and "shape_tape" not in scalar and " = x_bar\n" not in scalar


def test_unbroadcast_stays_where_broadcasting_happens():
    text = specialised(broadcasts, np.ones((3, 4)), np.ones(4), 2.0)
    assert "runtime.unbroadcast(" in text


def test_unbroadcast_stays_where_the_shape_changes_in_a_loop():
    assert "runtime.unbroadcast(" in specialised(shrinking, np.ones(6), 2)


def test_source_of_a_jitted_gradient_is_the_specialised_one():
    g = s2s.jit(s2s.grad(heat_like))
    assert "Specialised" not in g.source
    g(np.linspace(0.0, 1.0, 8), 0.1, 2)
    assert "u0 1-d array, alpha float, steps int" in s2s.source(g)


# ---- gradients against central differences -------------------------------------------------


CASES = [
    (heat_like, (np.linspace(0.0, 1.0, 9) ** 2, 0.1, 3), 0),
    (heat_like, (np.linspace(0.0, 1.0, 9) ** 2, 0.1, 3), 1),
    (heat_like, (np.array([0.3, 0.7]), 0.1, 2), 0),  # the slices are empty
    (scalar_loop, (np.array([1.0, 0.3]), np.array([0.5]), 4, 0.1), 0),
    (broadcasts, (np.arange(12.0).reshape(3, 4) / 7, np.array([0.5, -1.0, 2.0, 0.25]), 1.5), 0),
    (broadcasts, (np.arange(12.0).reshape(3, 4) / 7, np.array([0.5, -1.0, 2.0, 0.25]), 1.5), 1),
    (broadcasts, (np.arange(12.0).reshape(3, 4) / 7, np.array([0.5, -1.0, 2.0, 0.25]), 1.5), 2),
    (broadcasts, (np.arange(2.0).reshape(1, 2) + 0.5, np.array([0.5, -1.0]), 1.5), 1),  # n == 2
    (shrinking, (np.linspace(0.5, 1.5, 6), 2), 0),
]


@pytest.mark.parametrize("fun, args, argnum", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_specialised_gradients_match_central_differences(fun, args, argnum):
    jitted = s2s.jit(s2s.grad(fun, argnums=argnum))(*args)
    plain = s2s.grad(fun, argnums=argnum)(*args)
    expected = central_difference_grad(fun, args, argnum)
    np.testing.assert_allclose(jitted, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jitted, plain, rtol=1e-12, atol=1e-14)


def test_float32_stays_float32_in_specialised_code():
    u0 = (np.linspace(0.0, 1.0, 9) ** 2).astype(np.float32)
    g = s2s.jit(s2s.grad(heat_like))(u0, np.float32(0.1), 3)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, central_difference_grad(heat_like, (u0.astype(np.float64), 0.1, 3), 0),
                               rtol=1e-4, atol=1e-5)


def test_one_gradient_object_serves_several_kinds_of_arguments():
    g = s2s.jit(s2s.grad(broadcasts, argnums=2))
    x, row = np.arange(12.0).reshape(3, 4) / 7, np.array([0.5, -1.0, 2.0, 0.25])
    as_number = g(x, row, 1.5)
    as_row = g(x, row, np.array([1.5, 1.5, 1.5, 1.5]))  # s broadcast along the rows now
    assert np.ndim(as_number) == 0 and np.shape(as_row) == (4,)
    np.testing.assert_allclose(np.sum(as_row), as_number, rtol=1e-12)
    np.testing.assert_allclose(as_row, central_difference_grad(broadcasts, (x, row, np.full(4, 1.5)), 2),
                               rtol=1e-6)


# ---- grad leaves out a value it has no use for ----------------------------------------------


def pair_energy(pos, mass):
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i, 0] - pos[j, 0]
            energy = energy - mass[i] * mass[j] / np.sqrt(d * d + 0.01)
    return energy


def doubled(x):
    return x * 2.0


def test_grad_leaves_out_a_value_proved_a_number():
    pos, mass = np.array([[0.1, 1.0], [0.5, -1.0], [-0.7, 0.0], [1.3, 2.0]]), np.array([1.0, 0.5, 2.0, 1.5])
    g = s2s.jit(s2s.grad(pair_energy))
    got = g(pos, mass)
    source = s2s.source(g)
    assert "returns (None, adjoints of pos)" in source and "def pair_energy_grad(pos, mass):" in source
    code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
    assert "energy = " not in code and code.count("for i in range") == 1  # the forward sweep went
    np.testing.assert_allclose(got, central_difference_grad(pair_energy, (pos, mass), 0), rtol=1e-6, atol=1e-9)
    value, again = s2s.jit(s2s.value_and_grad(pair_energy))(pos, mass)  # value_and_grad keeps it
    assert value == pytest.approx(pair_energy(pos, mass), rel=1e-12)
    np.testing.assert_allclose(again, got, rtol=1e-12)


def test_grad_keeps_a_value_not_proved_a_number_and_still_checks_it():
    g = s2s.jit(s2s.grad(doubled))
    with pytest.raises(s2s.S2SError, match="scalar output"):
        g(np.ones(3))
    assert "returns (value, adjoints of x)" in g.specialised_source((np.ones(3),))


# ---- reshape of an array that is not C-contiguous (runtime.reshape under s2s.jit) --------------
# Numba reshapes only what it can view in the new shape; NumPy copies the rest (A.T.reshape(-1)),
# and so does runtime.reshape's compiled form.


def reshaped_views(A):
    flat = A.T.reshape(-1)
    columns = A[:, 1:].reshape((-1,))
    return np.sum(flat * np.arange(flat.size)) + np.sum(columns ** 2) + np.sum(np.reshape(A[::2], (2, -1)) ** 3)


def test_reshape_of_a_transpose_or_a_slice_under_jit():
    A = np.arange(1.0, 13.0).reshape(3, 4) / 7.0
    assert s2s.jit(reshaped_views)(A) == pytest.approx(reshaped_views(A), rel=1e-12)
    expected = central_difference_grad(reshaped_views, (A,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(reshaped_views))(A), expected, rtol=1e-6, atol=1e-6)
    assert "runtime.reshape(" in s2s.source(s2s.jit(reshaped_views))
