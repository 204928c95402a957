"""Checkpointed range loops in reverse mode (transforms/reverse/checkpointing.py): a loop whose
tape would exceed the tape budget runs in stretches from snapshots of its carried values, and
its gradient is the taped gradient's, bit for bit. A tiny budget forces the checkpointed path.
"""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad


def explicit_steps(v, n):  # an array rebound each trip
    for i in range(n):
        v = v + 0.01 * np.sin(v)
    return np.sum(v * v)


def diffusion_in_place(v, n):  # an array written into each trip, a slice of it taped
    for i in range(n):
        v[1:-1] = v[1:-1] + 0.1 * (v[2:] - 2 * v[1:-1] + v[:-2]) - 0.01 * v[1:-1] ** 3
    return np.sum(v)


def scalar_recurrence(x, n):  # numbers carried, a loop that starts at 2
    s = 0.0
    a = x[0]
    for i in range(2, n):
        a = a * 0.9 + np.sin(a) * x[1]
        s = s + a * a
    return s


X = np.linspace(0.1, 1.0, 8)


@pytest.mark.parametrize("fun, n", [(explicit_steps, 40), (diffusion_in_place, 40), (scalar_recurrence, 23)])
def test_checkpointed_gradient_equals_the_taped_one(fun, n):
    checkpointed = s2s.grad(fun, tape_budget=64)
    assert "_snapshots" in checkpointed.source and "checkpoint_stride" in checkpointed.source
    got = checkpointed(X.copy(), n)
    assert np.array_equal(got, s2s.grad(fun)(X.copy(), n))
    np.testing.assert_allclose(got, central_difference_grad(lambda x: fun(x.copy(), n), (X,), 0), rtol=1e-6, atol=1e-8)


def test_checkpointed_gradient_compiles_under_numba():
    compiled = s2s.jit(s2s.grad(scalar_recurrence, tape_budget=64))
    assert np.array_equal(compiled(X, 23), s2s.grad(scalar_recurrence)(X, 23))
    assert "a_snapshots" in s2s.source(compiled)


def test_the_budget_comes_from_the_config_and_its_environment_variable(monkeypatch):
    assert s2s.config.s2s_tape_budget is None  # (S2S_TAPE_BUDGET, read at import, is unset in the tests)
    assert "checkpoint_stride" not in s2s.grad(explicit_steps).source  # (no budget: the taped loop alone)
    try:
        s2s.config.update("s2s_tape_budget", "64B")
        assert s2s.config.s2s_tape_budget == 64
        source = s2s.grad(explicit_steps).source
        assert "runtime.checkpoint_stride(n, 1, 64," in source
        assert np.array_equal(s2s.grad(explicit_steps)(X, 40), s2s.grad(explicit_steps, tape_budget="1GiB")(X, 40))
    finally:
        s2s.config.update("s2s_tape_budget", None)
    with pytest.raises(ValueError, match="bytes"):
        s2s.config.update("s2s_tape_budget", "lots")
    monkeypatch.setenv("S2S_TAPE_BUDGET", "512MiB")
    from s2s.options import Config
    assert Config().s2s_tape_budget == 512 << 20


def test_loops_checkpointing_cannot_restore_keep_their_tape():
    def with_break(x, n):
        for i in range(n):
            x = x * 1.01
            if i > 5:
                break
        return np.sum(x)

    def rebound_and_written(x, n):
        for i in range(n):
            x = x * 1.01
            x[0] = x[1]
        return np.sum(x)

    for fun in (with_break, rebound_and_written):
        transformed = s2s.grad(fun, tape_budget=0)
        assert "checkpoint_stride" not in transformed.source
        np.testing.assert_allclose(transformed(X.copy(), 20),
                                   central_difference_grad(lambda x: fun(x.copy(), 20), (X,), 0), rtol=1e-6)
