"""Reverse mode recomputes cheap pure values in the reverse sweep instead of taping them.

Each program is checked against finite differences; the generated source shows which
values were taped (pushed on `name_tape`) and which were recomputed.
"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad
from s2s.testing import check_grads


def _pushes(text: str, var: str) -> bool:
    """The generated source pushes var on its tape: a list tape, or one sized on entry."""
    return f"{var}_tape.append({var})" in text or f"{var}_tape[{var}_tape_len] = {var}" in text


def _has_value_tapes(text: str) -> bool:
    return "_tape = []" in text or "runtime.new_tape(" in text or ".append(" in text or ".pop()" in text


def pairwise(pos, w):
    total = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            r = np.sqrt(d * d + 0.1)
            total = total + w[i] * w[j] * d * d / r
    return total


def branch_on_recomputed(x, a):
    total = 0.0
    for i in range(a.shape[0]):
        k = i + 1
        d = a[i] * x - a[k % a.shape[0]]
        if d > 0.0:
            total = total + d * d
        else:
            total = total - np.sqrt(1.0 + d * d) * x
    return total


def read_then_written_in_loop(x, a):
    c = a * 1.0
    total = 0.0
    for i in range(c.shape[0]):
        u = c[i] * x
        total = total + np.sin(u)
        c[i] = u * 2.0
    return total + np.sum(c * c)


def written_after_loop(x, a):
    c = a * 1.0
    total = 0.0
    for i in range(c.shape[0]):
        u = c[i] * x
        total = total + np.sin(u)
    c[:] = 0.5
    return total + np.sum(c)


def written_through_alias_after_loop(x, a):
    c = a * 1.0
    r = c[:]
    total = 0.0
    for i in range(c.shape[0]):
        u = r[i] * x
        total = total + np.sin(u)
    c[:] = 0.5
    return total + np.sum(c)


def transcendental_taped(x, a):
    total = 0.0
    for i in range(a.shape[0]):
        e = np.exp(a[i] * x)
        total = total + e * e
    return total


def _rng():
    return np.random.default_rng(3)


def _check(fn, args, backend="python"):
    """check_grads, and every component of the gradient against central differences at a
    tighter tolerance than check_grads' own component check (a wrong recomputation may
    shift one component only, and by little)."""
    check_grads(fn, args, modes=("rev",), backend=backend)
    argnums = tuple(range(len(args)))
    got = s2s.jit(s2s.grad(fn, argnums=argnums), backend=backend)(*args)
    for k in argnums:
        want = central_difference_grad(fn, args, k)
        np.testing.assert_allclose(np.ravel(got[k]), np.ravel(want), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_pairwise_values_are_recomputed_not_taped(backend):
    rng = _rng()
    args = [rng.standard_normal(6), rng.uniform(0.5, 1.5, 6)]
    _check(pairwise, args, backend)
    text = s2s.source(s2s.grad(pairwise, argnums=(0, 1)))
    assert "Recomputed rather than taped" in text
    assert not _has_value_tapes(text)


def test_recomputed_inside_branches_and_int_indices():
    rng = _rng()
    _check(branch_on_recomputed, [0.7, rng.standard_normal(5)])
    text = s2s.source(s2s.grad(branch_on_recomputed, argnums=(0, 1)))
    assert not _has_value_tapes(text) and "Recomputed rather than taped" in text


def test_transcendental_results_stay_on_tapes():
    _check(transcendental_taped, [0.7, _rng().standard_normal(5)])
    text = s2s.source(s2s.grad(transcendental_taped, argnums=(0, 1)))
    assert _pushes(text, "e") and text.count("e = np.exp(_t") == 1


@pytest.mark.parametrize("fn", [read_then_written_in_loop, written_after_loop, written_through_alias_after_loop])
def test_reads_of_written_arrays_are_taped(fn):
    rng = _rng()
    _check(fn, [0.7, rng.standard_normal(5)])
    text = s2s.source(s2s.grad(fn, argnums=(0, 1)))
    assert _pushes(text, "u")


def test_reads_of_written_arrays_are_taped_numba():
    rng = _rng()
    _check(written_through_alias_after_loop, [0.7, rng.standard_normal(5)], "cpu")


def popped_operands(p, x, y):
    for k in range(5):
        u = p * x
        v = u * y
        w = x * y
        x = x + 0.1 * (v - w)
        y = y - 0.1 * w
    return x + y


def popped_operand_overwritten_in_between(p, x, y):
    for k in range(5):
        u = p * x
        x = x * 0.5
        v = u * y
        w = x * y
        x = x + 0.1 * (v - w)
        y = y - 0.1 * w
    return x + y


def test_recomputed_from_values_popped_for_later_statements():
    _check(popped_operands, [1.3, 0.7, 0.4])
    text = s2s.source(s2s.grad(popped_operands, argnums=(0, 1, 2)))
    assert "Recomputed rather than taped: u " in text and "u_tape" not in text
    _check(popped_operand_overwritten_in_between, [1.3, 0.7, 0.4])
    text = s2s.source(s2s.grad(popped_operand_overwritten_in_between, argnums=(0, 1, 2)))
    assert _pushes(text, "u")


def quotients(x, a):
    total = 0.0
    for i in range(a.shape[0]):
        d = a[i] - x
        r = np.sqrt(d * d + 0.5)
        u = x / r
        total = total + a[i] / r + u * u
    return total


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_quotients_no_rule_reads_are_not_divided_again(backend):
    """a[i] / r feeds only a sum: its rule reads a[i] and 1 / r, and the reverse sweep
    neither tapes the quotient nor divides again to recompute it. u = x / r is read by
    u * u's rule, so its own rule reads u. d * d gives d one contribution."""
    _check(quotients, [0.7, _rng().standard_normal(5)], backend)
    text = s2s.source(s2s.grad(quotients, argnums=(0, 1)))
    assert not _has_value_tapes(text)
    assert "* (1.0 / r) * (1.0 / r), r)" in text and "u_bar * u / r, r)" in text
    assert "d_bar = (d + d) * " in text
