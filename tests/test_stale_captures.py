"""s2s.jvp, and a transform of a function that calls s2s.jvp, see a module's numbers and
arrays, and its functions, as they are now, also where a callee (not the function itself)
reads them: s2s.jvp is called anew each time, as jax.jvp traces anew (README, "see the array
as it is now"). Its memo of the generated module (doors/forward._forward_transformed) is renewed
when what the module was made from changes (driver/cache.Watch), and a module that calls a
nested s2s.jvp records what that one was made from (cache.NESTED_MANIFEST). Checked against
closed forms."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
from s2s.doors import forward

K = 1.0
V = np.array([1.0, 2.0])


def scaled_sine(u):
    return np.sin(u) * K


def through_scaled_sine(x):
    return scaled_sine(x)


def sine_times_first(u):
    return np.sin(u) * V[0]


def through_first(x):
    return sine_times_first(x)


through_first_lambda = lambda x: sine_times_first(x)  # noqa: E731  (s2s.jvp of a lambda)


# A notebook cell run twice: the second `def act` replaces the first under the same name.
def act(u):
    return np.tanh(u)


TANH_ACT = act


def act(u):  # noqa: F811
    return np.sin(u)


SINE_ACT = act


def through_act(x):
    return act(x) * 2.0


lambda_act = lambda u: np.tanh(u)  # noqa: E731  (a module-level lambda, defined anew below)
TANH_LAMBDA = lambda_act


def through_lambda_act(x):
    return lambda_act(x) * 2.0


class Config:
    SCALE = 1.0


def scaled_by_config(u):
    return np.sin(u) * Config.SCALE


def through_config(x):
    return scaled_by_config(x)


def sine_times_k(x):
    return np.sin(x) * K


def tangent_of_sine_times_k(x):
    return s2s.jvp(sine_times_k, (x,), (1.0,))[1]


@pytest.fixture(autouse=True)
def fresh_state(tmp_path, monkeypatch):
    """A fresh cache, and the module's globals as they were after each test."""
    global K, V, act, lambda_act
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    saved = K, V.copy(), act, Config.SCALE
    yield
    K, act, lambda_act = saved[0], saved[2], TANH_LAMBDA
    V[:] = saved[1]
    Config.SCALE = saved[3]


def test_jvp_sees_a_number_a_callee_reads():
    global K
    K = 1.0
    assert s2s.jvp(through_scaled_sine, (0.5,), (1.0,))[1] == pytest.approx(np.cos(0.5), rel=1e-14)
    K = 2.0
    out, tangent = s2s.jvp(through_scaled_sine, (0.5,), (1.0,))
    assert out == pytest.approx(2 * np.sin(0.5), rel=1e-14)
    assert tangent == pytest.approx(2 * np.cos(0.5), rel=1e-14)
    assert s2s.grad(through_scaled_sine)(0.5) == pytest.approx(2 * np.cos(0.5), rel=1e-14)


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("fun", [through_first, through_first_lambda], ids=["def", "lambda"])
def test_jvp_sees_an_array_a_callee_reads_written_in_place(fun, backend):
    V[0] = 1.0
    assert s2s.jvp(fun, (0.5,), (1.0,), backend=backend)[1] == pytest.approx(np.cos(0.5), rel=1e-14)
    V[0] = 3.0
    out, tangent = s2s.jvp(fun, (0.5,), (1.0,), backend=backend)
    assert out == pytest.approx(3 * np.sin(0.5), rel=1e-14)
    assert tangent == pytest.approx(3 * np.cos(0.5), rel=1e-14)


def test_jvp_sees_a_callee_defined_anew():
    global act
    act = TANH_ACT
    tangent = s2s.jvp(through_act, (0.5,), (1.0,))[1]
    assert tangent == pytest.approx(2 * (1 - np.tanh(0.5) ** 2), rel=1e-14)
    act = SINE_ACT  # the cell run again with another body
    tangent = s2s.jvp(through_act, (0.5,), (1.0,))[1]
    assert tangent == pytest.approx(2 * np.cos(0.5), rel=1e-14)


def test_jvp_sees_a_module_lambda_defined_anew():
    global lambda_act
    tangent = s2s.jvp(through_lambda_act, (0.5,), (1.0,))[1]
    assert tangent == pytest.approx(2 * (1 - np.tanh(0.5) ** 2), rel=1e-14)
    lambda_act = lambda u: np.sin(u)  # noqa: E731
    tangent = s2s.jvp(through_lambda_act, (0.5,), (1.0,))[1]
    assert tangent == pytest.approx(2 * np.cos(0.5), rel=1e-14)


def test_a_class_number_set_anew():
    """Config.SCALE is inlined as a literal; the cache records its value, as a module number's."""
    Config.SCALE = 1.0
    assert s2s.jvp(through_config, (0.5,), (1.0,))[1] == pytest.approx(np.cos(0.5), rel=1e-14)
    assert s2s.grad(through_config)(0.5) == pytest.approx(np.cos(0.5), rel=1e-14)
    Config.SCALE = 2.0
    assert s2s.jvp(through_config, (0.5,), (1.0,))[1] == pytest.approx(2 * np.cos(0.5), rel=1e-14)
    assert s2s.grad(through_config)(0.5) == pytest.approx(2 * np.cos(0.5), rel=1e-14)
    assert s2s.grad(scaled_by_config)(0.5) == pytest.approx(2 * np.cos(0.5), rel=1e-14)


def test_transforms_of_a_nested_jvp_see_the_number_now():
    """grad, jit and vmap of a function that calls s2s.jvp, made after the number changed."""
    global K
    for k in (1.0, 2.0, 1.0):
        K = k
        assert s2s.grad(tangent_of_sine_times_k)(0.5) == pytest.approx(-k * np.sin(0.5), rel=1e-14)
        assert s2s.jit(tangent_of_sine_times_k)(0.5) == pytest.approx(k * np.cos(0.5), rel=1e-14)
        np.testing.assert_allclose(s2s.vmap(tangent_of_sine_times_k)(np.array([0.5, 1.0])),
                                   k * np.cos([0.5, 1.0]), rtol=1e-14)
        out, tangent = s2s.jvp(tangent_of_sine_times_k, (0.5,), (1.0,))
        assert out == pytest.approx(k * np.cos(0.5), rel=1e-14)
        assert tangent == pytest.approx(-k * np.sin(0.5), rel=1e-14)


def test_the_memo_is_kept_while_nothing_changes():
    """s2s.jvp in a loop reuses its generated module (no lookup per call) while what the
    module was made from is unchanged, callees and module arrays included."""
    for fun in (through_scaled_sine, through_first, through_act, through_lambda_act, through_config,
                tangent_of_sine_times_k):
        s2s.jvp(fun, (0.5,), (1.0,))
        first = forward._forward_transformed(fun, "python")
        s2s.jvp(fun, (0.25,), (1.0,))
        assert forward._forward_transformed(fun, "python") is first


def test_a_closure_keeps_its_memo():
    """Values a closure captured are in the key, not module constants: they never make the
    memo look stale (which would regenerate the module on every call)."""
    def make(c, A):
        def f(x):
            return scaled_sine(x) * c + np.sum(A) * x
        return f

    f = make(3.0, np.array([1.0, 2.0]))
    assert s2s.jvp(f, (0.5,), (1.0,))[1] == pytest.approx(3 * np.cos(0.5) + 3.0, rel=1e-14)
    first = forward._forward_transformed(f, "python")
    assert s2s.jvp(f, (0.5,), (1.0,))[1] == pytest.approx(3 * np.cos(0.5) + 3.0, rel=1e-14)
    assert forward._forward_transformed(f, "python") is first


def test_a_nested_jvp_across_processes(tmp_path):
    """A second process reads the first one's cache entries where they are current (the
    callers of a nested s2s.jvp record the user's function and its constants, not the generated
    module, which another process does not have) and makes them anew where not."""
    script = tmp_path / "nested_script.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np, s2s
        def f(x): return np.sin(x) * k
        def outer(x): return s2s.jvp(f, (x,), (1.0,))[1]
        for k in map(float, sys.argv[1:]):
            print(s2s.grad(outer)(0.5), s2s.jit(outer)(0.5))
    """))
    cache = tmp_path / "cache"
    env = dict(os.environ, S2S_CACHE_DIR=str(cache))

    def run(*ks):
        result = subprocess.run([sys.executable, str(script), *map(str, ks)], capture_output=True, text=True,
                                env=env, cwd=tmp_path, timeout=300)
        assert result.returncode == 0, result.stderr
        got = [[float(v) for v in line.split()] for line in result.stdout.split("\n") if line.strip()]
        np.testing.assert_allclose(got, [[-k * np.sin(0.5), k * np.cos(0.5)] for k in ks], rtol=1e-14)
        return {n: os.stat(cache / n).st_mtime_ns for n in os.listdir(cache) if n.startswith("__main__.outer.")}

    written = run(1.0, 2.0)
    assert len(written) == 2  # grad and primal (jit) of outer, last made for k = 2
    assert run(2.0) == written  # current: read, not written again
    assert run(3.0, 2.0).keys() == written.keys()
