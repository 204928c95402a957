"""s2s.custom_jvp rules as JAX code writes them, in reverse mode (the rule's transpose) and in
forward mode: a rule that unpacks primals and tangents from one display of tuples, or packs them
into one tuple (and the same unpacking in a loop, and a tuple carry, under s2s.jit); and the rules
that reverse mode refuses at the user's line: one that branches or loops on its tangent's values,
one not linear in its tangent, one whose tangent has the wrong shape. Checked against central
differences of the plain function or closed forms (the rules' own tests: test_custom_rules.py)."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s import lax

BACKENDS = ["python", "cpu"]
X = np.array([0.3, -0.2, 0.5, 0.8])


# ---- a custom_jvp rule that unpacks primals and tangents in one statement ----------------------


@s2s.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents  # (and calls the function itself for its value, as JAX's docs do)
    return softplus(x), t / (1.0 + np.exp(-x))


def softplus_weighted(x):
    return np.sum(softplus(x) * x)


def swapped_in_a_loop(x):
    a, b = x[0], x[1]
    for _ in range(3):
        a, b = b, a * b + 1.0  # (a display that reads the names it binds: unpacked as a tuple)
    return a * b


@pytest.mark.parametrize("fun", [softplus_weighted, swapped_in_a_loop])
def test_unpacking_a_display_of_tuples(fun):
    # The tuple (primals, tangents) made x active in the rule's transpose, whose reverse mode then
    # called softplus's reverse mode for softplus(x): a RecursionError
    want = central_difference_grad(fun, (X,), 0)
    for transform in (s2s.grad, s2s.jacfwd, s2s.jacrev):
        np.testing.assert_allclose(transform(fun)(X), want, rtol=1e-7, atol=1e-9)


def scan_of_a_tuple_carry(x):
    def step(c, xi):
        a, b = c
        new = (a * xi + b, np.sin(b) + xi)  # (the carry is a tuple held in a variable)
        return new, a

    init = (0.5, 0.2)
    c, ys = lax.scan(step, init, x)
    return c[0] + c[1] + np.sum(ys)


@pytest.mark.parametrize("fun", [softplus_weighted, scan_of_a_tuple_carry])
def test_items_of_a_tuple_held_in_a_variable_under_jit(fun):
    # The adjoint of a tuple's item was added in place (bar[1] += ...), which Numba refuses for a
    # tuple: s2s.jit(s2s.grad(fun)) was an S2SError where the python backend ran
    want = central_difference_grad(fun, (X,), 0)
    np.testing.assert_allclose(s2s.jit(s2s.grad(fun))(X), want, rtol=1e-7, atol=1e-9)


@s2s.custom_jvp
def softplus_packed(x):
    return np.log1p(np.exp(x))


@softplus_packed.defjvp
def softplus_packed_jvp(primals, tangents):
    both = (primals[0], tangents[0])
    a, t = both  # (a holds the primal only: it is not differentiated in the rule's transpose)
    return softplus_packed(a), t / (1.0 + np.exp(-a))


def softplus_packed_weighted(x):
    return np.sum(softplus_packed(x) * x)


def test_a_rule_that_packs_primal_and_tangent_in_one_tuple():
    # a took the tuple's activity, so the transpose called softplus_packed's reverse mode for
    # softplus_packed(a), which is the transpose again: a RecursionError
    want = np.log1p(np.exp(X)) + X / (1.0 + np.exp(-X))
    np.testing.assert_allclose(s2s.grad(softplus_packed_weighted)(X), want, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.grad(softplus_packed_weighted))(X), want, rtol=1e-12)


# ---- jvp rules that reverse mode cannot transpose: refused at the rule ---------------------------


@s2s.custom_jvp
def sine_with_shortcut(x):
    return np.sin(x)


@sine_with_shortcut.defjvp
def sine_with_shortcut_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    if np.all(x_dot == 0.0):  # a shortcut for a zero tangent: the path the transpose would take
        return np.sin(x), np.zeros_like(x)
    return np.sin(x), np.cos(x) * x_dot


def squared_sine_with_shortcut(x):
    return np.sum(sine_with_shortcut(x) ** 2)


@s2s.custom_jvp
def running_sum(x):
    return np.cumsum(x)


@running_sum.defjvp
def running_sum_jvp(primals, tangents):  # a loop over the tangent's length: its shape, not its values
    x, = primals
    x_dot, = tangents
    out = np.zeros_like(x)
    total = 0.0
    for i in range(x_dot.shape[0]):
        total = total + x_dot[i]
        out[i] = total
    return np.cumsum(x), out


def squared_running_sum(x):
    return np.sum(running_sum(x * x) ** 2)


def test_a_jvp_rule_that_branches_on_its_tangent_is_refused_in_reverse_mode():
    """grad through a custom_jvp whose rule tests its tangent (`if np.all(x_dot == 0)`) was 0:
    reverse mode transposes the rule at zero tangents. JAX refuses it under grad; so does s2s,
    at the if. Forward mode runs the rule on the real tangents and is right; a loop over the
    tangent's shape is no test on its values."""
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(s2s.S2SError, match="branches .or loops. on the values of its tangents"):
        s2s.grad(squared_sine_with_shortcut)(x)
    by_differences = central_difference_grad(squared_sine_with_shortcut, (x,), 0)
    np.testing.assert_allclose(s2s.jvp(squared_sine_with_shortcut, (x,), (np.ones(3),))[1], np.sum(by_differences),
                               rtol=1e-6)
    np.testing.assert_allclose(s2s.grad(squared_running_sum)(x), central_difference_grad(squared_running_sum, (x,), 0),
                               rtol=1e-6)


@s2s.custom_jvp
def sine_through_abs(x):
    return np.sin(x)


@sine_through_abs.defjvp
def sine_through_abs_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return np.sin(x), np.cos(x) * (np.abs(x_dot) * np.sign(x_dot))  # x_dot, through functions not linear in it


def squared_sine_through_abs(x):
    return np.sum(sine_through_abs(x) ** 2)


def test_a_jvp_rule_not_linear_in_its_tangent_is_refused_in_reverse_mode():
    """abs(x_dot) * sign(x_dot) is x_dot, but the transpose differentiates it at x_dot = 0: the
    gradient was 0 (want 2 sin(x) cos(x)). JAX has no transpose for abs either."""
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(s2s.S2SError, match="not linear in the tangents .absolute."):
        s2s.grad(squared_sine_through_abs)(x)
    np.testing.assert_allclose(s2s.jvp(squared_sine_through_abs, (x,), (np.ones(3),))[1],
                               np.sum(central_difference_grad(squared_sine_through_abs, (x,), 0)), rtol=1e-6)


# ---- an s2s.custom_jvp rule whose tangent has the wrong shape, in reverse mode ---------------


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
