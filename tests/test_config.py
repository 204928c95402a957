"""s2s.config (JAX's option names where they mean something here) and how an S2SError reaches the
user: its traceback ends at the user's call, without s2s's own frames, unless filtering is off."""

import os

import numpy as np
import pytest

import s2s

PACKAGE = os.path.dirname(os.path.abspath(s2s.__file__)) + os.sep


def refused(x):
    with open(os.devnull):
        pass
    return np.sum(x)


def own_frames(error):
    tb, files = error.__traceback__, []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(PACKAGE):
            files.append(os.path.basename(tb.tb_frame.f_code.co_filename))
        tb = tb.tb_next
    return files


@pytest.fixture
def option():
    """Set an option for one test; restore it after."""
    saved = dict(s2s.config._values)
    yield s2s.config.update
    s2s.config._values.update(saved)


@pytest.mark.parametrize("call", [
    lambda: s2s.grad(refused)(np.ones(3)),
    lambda: s2s.jit(s2s.vmap(s2s.grad(refused)))(np.ones((2, 3))),
    lambda: s2s.jvp(refused, (np.ones(3),), (np.ones(3),)),
    lambda: s2s.vjp(refused, np.ones(3)),
    lambda: s2s.hessian(refused)(np.ones(3)),
    lambda: s2s.jit(refused)(np.ones(3)),
], ids=["grad", "jit_vmap_grad", "jvp", "vjp", "hessian", "jit"])
def test_an_error_leaves_without_the_frames_of_s2s(call):
    with pytest.raises(s2s.S2SError, match="with statements are not supported") as caught:
        call()
    assert own_frames(caught.value) == ["errors.py"]  # (the one frame that re-raises it)
    assert "test_config.py:15:5" in str(caught.value)  # the user's line, in the message


def test_filtering_off_keeps_every_frame(option):
    option("jax_traceback_filtering", "off")
    with pytest.raises(s2s.S2SError) as caught:
        s2s.grad(refused)(np.ones(3))
    assert len(own_frames(caught.value)) > 5 and "lower.py" in own_frames(caught.value)


def test_x64_is_what_s2s_does(option):
    option("jax_enable_x64", True)
    assert s2s.config.jax_enable_x64 is True
    with pytest.raises(ValueError, match="pass float32 arrays"):
        s2s.config.update("jax_enable_x64", False)
    assert s2s.config.jax_enable_x64 is True


def test_disable_jit_runs_the_generated_python(option):
    def f(x):
        return np.sum(np.sin(x) * x)

    option("jax_disable_jit", True)
    jitted = s2s.jit(s2s.grad(f))
    assert jitted.backend == "python"
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(jitted(x), np.cos(x) * x + np.sin(x), rtol=1e-14)
    assert s2s.jit(f).backend == "python" and s2s.jit(f)(x) == pytest.approx(f(x), rel=1e-14)


def test_options_s2s_does_not_have_say_what_to_do_instead():
    with pytest.raises(ValueError, match="backend='cpu' | 'cuda'"):
        s2s.config.update("jax_platform_name", "cpu")
    with pytest.raises(ValueError, match="its options are jax_enable_x64"):
        s2s.config.update("jax_no_such_thing", 1)
    with pytest.raises(AttributeError, match="no option"):
        s2s.config.jax_no_such_thing
