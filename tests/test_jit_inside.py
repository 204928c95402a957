"""An @s2s.jit function called inside a transformed function is its code, transformed and
compiled with the caller's, as jax.jit is transparent to jax.grad. Checked against closed
forms; a jit defined anew (a notebook cell run again) is seen as it is now."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s


@s2s.jit
def scaled_sine(x, a):
    return np.sin(x) * a


def loss(x):
    return np.sum(scaled_sine(x, 2.0) ** 2)


@s2s.jit
def jitted_loss(x):
    return loss(x) + 1.0


def plain_tanh(u):
    return np.tanh(u)


fast_act = s2s.jit(plain_tanh)  # the jit under a name of its own
TANH_ACT = fast_act
SINE_ACT = s2s.jit(np.sin)


def through_act(x):
    return fast_act(x) * 2.0


X = np.array([0.3, 0.7, -1.1])


def loss_gradient(x):  # d/dx sum((2 sin x)^2) = 8 sin x cos x
    return 8.0 * np.sin(x) * np.cos(x)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_grad_of_a_function_calling_a_jit(backend):
    gradient = s2s.jit(s2s.grad(loss), backend=backend)(X)
    np.testing.assert_allclose(gradient, loss_gradient(X), rtol=1e-13)


def test_grad_and_jvp_of_a_jit_calling_a_jit():
    assert jitted_loss(X) == pytest.approx(np.sum(4 * np.sin(X) ** 2) + 1.0, rel=1e-14)
    np.testing.assert_allclose(s2s.grad(jitted_loss)(X), loss_gradient(X), rtol=1e-13)
    value, tangent = s2s.jvp(loss, (X,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(loss_gradient(X)), rel=1e-13)


def test_hessian_and_vmap_of_a_function_calling_a_jit():
    # sum 4 sin^2 x: the Hessian is diagonal, 8 cos 2x
    np.testing.assert_allclose(s2s.hessian(loss)(X), np.diag(8.0 * np.cos(2 * X)), rtol=1e-12, atol=1e-14)
    batch = np.stack([X, 2 * X])
    per_example = s2s.jit(s2s.vmap(s2s.grad(loss)))(batch)
    np.testing.assert_allclose(per_example, loss_gradient(batch), rtol=1e-13)


def test_a_jit_defined_anew_is_seen():
    global fast_act
    fast_act = TANH_ACT
    assert s2s.jvp(through_act, (0.5,), (1.0,))[1] == pytest.approx(2 * (1 - np.tanh(0.5) ** 2), rel=1e-14)
    assert s2s.grad(through_act)(0.5) == pytest.approx(2 * (1 - np.tanh(0.5) ** 2), rel=1e-14)
    fast_act = SINE_ACT  # the name now holds another jit
    try:
        assert s2s.jvp(through_act, (0.5,), (1.0,))[1] == pytest.approx(2 * np.cos(0.5), rel=1e-14)
        assert s2s.grad(through_act)(0.5) == pytest.approx(2 * np.cos(0.5), rel=1e-14)
    finally:
        fast_act = TANH_ACT


def test_a_jitted_callee_across_processes(tmp_path):
    """The second process takes the first one's cache entry; after the helper's body changes,
    the entry is not used."""
    module = tmp_path / "jitted_callee.py"
    program = textwrap.dedent("""
        import sys
        import numpy as np, s2s
        sys.path.insert(0, {folder!r})
        import jitted_callee
        print(repr(float(s2s.grad(jitted_callee.f)(0.5))))
    """).format(folder=str(tmp_path))
    env_cache = {"S2S_CACHE_DIR": str(tmp_path / "cache")}

    def run(body):
        module.write_text("import numpy as np, s2s\n\n\n@s2s.jit\ndef act(u):\n    return " + body
                          + "\n\n\ndef f(x):\n    return act(x) * 3.0\n")
        out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                             env={**os.environ, **env_cache}, check=True)
        return float(out.stdout.strip().splitlines()[-1])

    assert run("np.tanh(u)") == pytest.approx(3 * (1 - np.tanh(0.5) ** 2), rel=1e-14)
    assert run("np.tanh(u)") == pytest.approx(3 * (1 - np.tanh(0.5) ** 2), rel=1e-14)
    assert run("np.sin(u)") == pytest.approx(3 * np.cos(0.5), rel=1e-14)
