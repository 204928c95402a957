"""s2s.custom_vjp (the user's reverse-mode rule), s2s.custom_jvp and s2s.checkpoint (also written
inline, s2s.checkpoint(f)(x)), checked against closed forms and central differences: reverse mode
calls the rule, forward mode of a custom_vjp is refused (as in JAX), second derivatives
differentiate the rule's bwd forward. (custom_jvp rules written as JAX code writes them, and the
ones reverse mode refuses: test_custom_jvp_rules.py.)"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
import custom_rule_cases as cases
from checks import check_all
from finite_differences import central_difference_grad

BACKENDS = ["python", "cpu"]
X = np.array([0.1, 0.5, -0.2, 0.03])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_rule_not_the_body_is_differentiated(backend):
    # the body is the identity (gradient 18 x); the rule clips the incoming cotangent 6 x to [-1, 1]
    gradient = s2s.jit(s2s.grad(cases.clipped_loss), backend=backend)(X)
    np.testing.assert_allclose(gradient, 3.0 * np.clip(6.0 * X, -1.0, 1.0), rtol=1e-14)
    assert not np.allclose(gradient, 18.0 * X)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stable_rule_where_the_body_overflows(backend):
    w, x = np.array([1.0, 800.0, -2.0]), np.ones(3)
    with np.errstate(over="ignore"):  # the value, log1p(exp(800)), is inf as in NumPy
        gradient = s2s.jit(s2s.grad(cases.softplus_loss), backend=backend)(w, x)
    np.testing.assert_allclose(gradient, 1.0 / (1.0 + np.exp(-w)), rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_function_itself_and_argnums(backend):
    assert s2s.jit(s2s.grad(cases.log1pexp), backend=backend)(0.5) == pytest.approx(1 / (1 + np.exp(-0.5)), rel=1e-14)
    x, a = np.array([0.3, -1.2]), 1.7
    gx, ga = s2s.jit(s2s.grad(cases.sine_energy, argnums=(0, 1)), backend=backend)(x, a)
    np.testing.assert_allclose(gx, 2 * a * a * np.sin(x) * np.cos(x), rtol=1e-13)
    assert ga == pytest.approx(2 * a * np.sum(np.sin(x) ** 2), rel=1e-13)
    gx = s2s.jit(s2s.grad(cases.sine_energy), backend=backend)(x, -a)  # bwd's other branch
    np.testing.assert_allclose(gx, 2 * a * a * np.sin(x) * np.cos(x), rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_calling_the_rule_against_differences(backend):
    z = np.array([0.5, 1.2, -0.7, 0.9])
    gradient = s2s.jit(s2s.grad(cases.softplus_chain), backend=backend)(0.3, z)
    assert gradient == pytest.approx(float(central_difference_grad(cases.softplus_chain, (0.3, z), 0)), rel=1e-8)


def test_second_derivatives_differentiate_bwd():
    # bwd is the exact derivative here, so the Hessian is the function's own
    z = np.array([0.5, 1.2, -0.7, 0.9])
    gradient = s2s.grad(cases.softplus_chain)
    h = 1e-5
    expected = (gradient(0.3 + h, z) - gradient(0.3 - h, z)) / (2 * h)
    assert s2s.hessian(cases.softplus_chain)(0.3, z) == pytest.approx(expected, rel=1e-7)
    x = np.array([0.3, -1.2])
    hessian = s2s.hessian(cases.sine_energy)(x, 1.7)
    np.testing.assert_allclose(hessian, np.diag(2 * 1.7 ** 2 * np.cos(2 * x)), rtol=1e-12, atol=1e-15)


def test_jacrev_vjp_and_vmap():
    x = np.array([0.1, 0.5])
    jacobian = s2s.jacrev(lambda u: cases.clip_gradient(3.0 * u, -1.0, 1.0) ** 2)(x)
    np.testing.assert_allclose(jacobian, np.diag(3.0 * np.clip(6.0 * x, -1.0, 1.0)), rtol=1e-14)
    value, pullback = s2s.vjp(cases.log1pexp, 0.5)
    assert pullback(2.0)[0] == pytest.approx(2.0 / (1 + np.exp(-0.5)), rel=1e-14)
    batch = np.stack([np.linspace(-1.0, 1.0, 4), np.linspace(0.0, 2.0, 4)])
    expected = 3.0 * np.clip(6.0 * batch, -1.0, 1.0)
    for transform in (s2s.vmap(s2s.grad(cases.clipped_loss)), s2s.jit(s2s.vmap(s2s.grad(cases.clipped_loss)))):
        np.testing.assert_allclose(transform(batch), expected, rtol=1e-14)


def test_forward_mode_is_refused_at_the_function():
    for attempt in (lambda: s2s.jvp(cases.softplus_chain, (0.3, np.ones(2)), (1.0, np.zeros(2))),
                    lambda: s2s.jacfwd(cases.clipped_loss)(X)):
        with pytest.raises(s2s.S2SError, match="custom_vjp rule, which gives its reverse mode only") as info:
            attempt()
        assert info.value.origin.filename.endswith("custom_rule_cases.py")


def test_a_rule_without_one_cotangent_per_argument_is_refused_at_its_return():
    with pytest.raises(s2s.S2SError, match=r"must return a tuple with one cotangent per argument") as info:
        s2s.grad(cases.calls_two_arguments)(X)
    assert info.value.origin.text == "return g * a  # one cotangent for two arguments"
    with pytest.raises(s2s.S2SError, match=r"no_rule is an s2s.custom_vjp with no rule.*defvjp"):
        s2s.grad(cases.calls_no_rule)(X)
    with pytest.raises(s2s.S2SError, match="nondiff_argnums"):
        s2s.custom_vjp(cases.clipped_loss, nondiff_argnums=(1,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cotangent_of_another_shape_is_refused_at_the_return(backend):
    with pytest.raises(s2s.S2SError, match=r"returned a derivative whose shape is not its argument's") as info:
        s2s.jit(s2s.grad(cases.calls_unsummed, argnums=(0, 1)), backend=backend)(X, 2.0)
    if backend == "python":
        assert info.value.origin.text.startswith("return (g * a, g * x)")
    else:  # (compiled code names the function, and says which backend names the statement)
        assert info.value.origin.filename.endswith("custom_rule_cases.py") and "backend='python'" in str(info.value)
    # with respect to x alone, a's cotangent is not used, and not checked
    gradient = s2s.jit(s2s.grad(cases.calls_unsummed), backend=backend)(X, 2.0)
    np.testing.assert_allclose(gradient, 8.0 * X, rtol=1e-14)


def test_plain_calls_run_the_function():
    np.testing.assert_array_equal(cases.clip_gradient(X, -1.0, 1.0), X)
    assert s2s.jit(cases.clipped_loss)(X) == pytest.approx(9.0 * np.sum(X * X), rel=1e-14)
    assert "clip_gradient_bwd" not in s2s.source(s2s.jit(cases.clipped_loss))  # only the vjp calls the rule


def test_a_rule_defined_anew_is_seen(tmp_path):
    """defvjp with other functions, in this process; and a bwd whose body changes, in a second
    process that would otherwise take the first one's cache entry."""
    module = tmp_path / "rule_module.py"

    def write(bwd_body):
        module.write_text(textwrap.dedent(f"""
            import numpy as np, s2s

            @s2s.custom_vjp
            def f(x):
                return np.sin(x)

            def f_fwd(x):
                return np.sin(x), x

            def f_bwd(x, g):
                return ({bwd_body},)

            def doubled_bwd(x, g):
                return (2.0 * g * np.cos(x),)

            f.defvjp(f_fwd, f_bwd)

            def loss(x):
                return f(x) * 3.0
        """))

    program = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import s2s, rule_module
        first = s2s.grad(rule_module.loss)(0.5)
        rule_module.f.defvjp(rule_module.f_fwd, rule_module.doubled_bwd)
        print(repr(float(first)), repr(float(s2s.grad(rule_module.loss)(0.5))))
    """)

    def run():
        out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                             env={**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")})
        return [float(v) for v in out.stdout.split()]

    write("g * np.cos(x)")
    assert run() == pytest.approx([3 * np.cos(0.5), 6 * np.cos(0.5)], rel=1e-14)
    write("g * np.cos(x) + 1.0")  # a wrong rule, as the user wrote it: used as written
    assert run() == pytest.approx([3 * np.cos(0.5) + 1.0, 6 * np.cos(0.5)], rel=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_checkpoint_is_transparent(backend):
    assert s2s.checkpoint(cases.checkpointed_path) is cases.checkpointed_path
    assert s2s.remat is s2s.checkpoint
    s0, z = np.array([0.4, -0.3]), np.array([0.7, -1.1, 0.2])
    gradient = s2s.jit(s2s.grad(cases.checkpointed_path), backend=backend)(s0, z)
    np.testing.assert_allclose(gradient, central_difference_grad(cases.checkpointed_path, (s0, z), 0), rtol=1e-8)
    # the reverse sweep runs each step's body again: its temporaries (u) are not taped
    source = s2s.source(s2s.grad(cases.checkpointed_path))
    assert "damped_step_vjp" in source and "u_tape" not in source


# ---- s2s.custom_jvp ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_in_both_modes_against_closed_forms(backend):
    x, y = np.array([0.3, -1.1, 0.7]), 2.0
    gx, gy = s2s.jit(s2s.grad(cases.sine_scaled_energy, argnums=(0, 1)), backend=backend)(x, y)
    np.testing.assert_allclose(gx, 2 * y * y * np.sin(x) * np.cos(x), rtol=1e-13)
    assert gy == pytest.approx(2 * y * np.sum(np.sin(x) ** 2), rel=1e-13)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(cases.sine_scaled_energy), backend=backend)(x, y), gx, rtol=1e-13)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(cases.sine_scaled_energy), backend=backend)(x, y),
                               np.diag(y * y * 2 * np.cos(2 * x)), rtol=1e-12, atol=1e-14)
    tangent = s2s.jvp(cases.sine_scaled_energy, (x, y), (np.ones(3), 0.5), backend=backend)[1]
    assert tangent == pytest.approx(np.sum(gx) + 0.5 * gy, rel=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_rule_not_body_in_both_modes(backend):
    # the body, floor, has derivative 0; the rule passes the tangent through
    x = np.array([0.1, 0.5, -0.2, 1.3])
    expected = 2.0 * np.floor(3.0 * x) * 3.0
    np.testing.assert_allclose(s2s.jit(s2s.grad(cases.floored_energy), backend=backend)(x), expected, rtol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(cases.floored_energy), backend=backend)(x), expected, rtol=1e-15)
    assert np.any(expected != 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_stable_where_the_body_overflows_and_in_a_loop(backend):
    w = np.array([1.0, 800.0, -2.0])
    with np.errstate(over="ignore"):
        gradient = s2s.jit(s2s.grad(cases.softplus_sum), backend=backend)(w)
    np.testing.assert_allclose(gradient, 1.0 / (1.0 + np.exp(-w)), rtol=1e-14)
    z = np.array([0.5, 1.2, -0.7, 0.9])
    gradient = s2s.jit(s2s.grad(cases.softplus_steps), backend=backend)(0.3, z)
    assert gradient == pytest.approx(float(central_difference_grad(cases.softplus_steps, (0.3, z), 0)), rel=1e-8)
    h = 1e-5  # the rule is the exact derivative: the Hessian is the function's own
    first = s2s.grad(cases.softplus_steps)
    assert s2s.hessian(cases.softplus_steps)(0.3, z) == pytest.approx(
        (first(0.3 + h, z) - first(0.3 - h, z)) / (2 * h), rel=1e-7)


def test_custom_jvp_under_vmap():
    batch = np.stack([np.linspace(-1.0, 1.0, 4), np.linspace(0.0, 2.0, 4)])
    expected = 2.0 * np.floor(3.0 * batch) * 3.0
    for transform in (s2s.vmap(s2s.grad(cases.floored_energy)), s2s.jit(s2s.vmap(s2s.grad(cases.floored_energy)))):
        np.testing.assert_allclose(transform(batch), expected, rtol=1e-15)


def test_custom_jvp_refusals():
    with pytest.raises(s2s.S2SError, match="returned a derivative whose shape is not"):
        s2s.jvp(cases.calls_summed_tangent, (X,), (np.ones(4),))
    with pytest.raises(s2s.S2SError, match="returned a derivative whose shape is not"):
        s2s.grad(cases.calls_summed_tangent)(X)
    with pytest.raises(s2s.S2SError, match=r"jvp_without_rule is an s2s.custom_jvp with no rule"):
        s2s.grad(cases.calls_jvp_without_rule)(X)


def test_the_command_line_transforms_the_callers_not_the_rules(tmp_path):
    """`s2s transform` of a module with custom rules writes the callers' modules (each with its
    rule inside), which run in a fresh process without s2s's transforms."""
    import shutil

    shutil.copy(cases.__file__, tmp_path / "custom_rule_cases.py")
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-m", "s2s", "transform", "custom_rule_cases.py", "--function",
                    "sine_scaled_energy", "--function", "clipped_loss", "--mode", "grad"],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    program = textwrap.dedent("""
        import importlib.util, json, numpy as np
        def load(name):
            spec = importlib.util.spec_from_file_location(name, "generated/" + name + ".py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        x = np.array([0.3, -1.1])
        _, (gx,) = load("custom_rule_cases_sine_scaled_energy_grad").sine_scaled_energy_value_and_grad(x, 2.0)
        _, (gc,) = load("custom_rule_cases_clipped_loss_grad").clipped_loss_value_and_grad(x)
        print(json.dumps([list(gx), list(gc)]))
    """)
    out = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env, check=True, capture_output=True,
                         text=True)
    import json

    gx, gc = json.loads(out.stdout)
    x = np.array([0.3, -1.1])
    np.testing.assert_allclose(gx, 2 * 4.0 * np.sin(x) * np.cos(x), rtol=1e-13)
    np.testing.assert_allclose(gc, 3.0 * np.clip(6.0 * x, -1.0, 1.0), rtol=1e-14)
    with pytest.raises(s2s.S2SError, match="transforming the rule itself is not supported"):
        s2s.grad(cases.softplus_jvp)((0.5,), (0.0,))


# ---- a rule's value where the body overflows, a None cotangent, a rule with two returns --------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [cases.scaled_stable_softplus, cases.scaled_stable_softplus_jvp])
def test_the_rules_value_is_the_value_where_it_is_differentiated(fun, backend):
    # as in JAX: the body overflows (inf) at 800, the rule's value is 800; d/dc = 800 too
    with np.errstate(over="ignore"):
        value, (gx, gc) = s2s.jit(s2s.value_and_grad(fun, argnums=(0, 1)), backend=backend)(800.0, 2.0)
        assert (value, gx, gc) == pytest.approx((1600.0, 2.0, 800.0), rel=1e-15)
        out, pullback = s2s.vjp(fun, 800.0, 2.0)
        assert out == pytest.approx(1600.0, rel=1e-15)
        assert pullback(1.0) == pytest.approx((2.0, 800.0), rel=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bwd_may_return_none_for_a_zero_cotangent(backend):
    gx, ga = s2s.jit(s2s.grad(cases.summed_times, argnums=(0, 1)), backend=backend)(np.array([0.3, -0.7]), 0.7)
    np.testing.assert_allclose(gx, [0.7, 0.7], rtol=1e-15)
    assert ga == 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_jvp_rule_with_two_returns_in_reverse_mode(backend):
    x = np.array([0.3, -0.7])
    for a in (0.9, 0.2):
        gx, ga = s2s.jit(s2s.grad(cases.summed_branchy_times, argnums=(0, 1)), backend=backend)(x, a)
        np.testing.assert_allclose(gx, [a, a], rtol=1e-15)
        assert ga == pytest.approx(np.sum(x), rel=1e-15)


def test_jvp_of_a_custom_jvp_whose_rule_calls_it():
    x = np.array([0.3, 1.2])
    value, tangent = s2s.jvp(cases.softplus, (x,), (np.ones(2),))
    np.testing.assert_allclose(tangent, 1 / (1 + np.exp(-x)), rtol=1e-14)
    np.testing.assert_allclose(s2s.jacfwd(cases.sine_scaled)(x, 2.0), np.diag(2.0 * np.cos(x)), rtol=1e-14)


def test_a_jvp_rule_must_return_a_pair():
    for transform in (s2s.grad, s2s.jacfwd):
        with pytest.raises(s2s.S2SError, match=r"must return a pair \(value, tangent\)") as info:
            transform(cases.squared_triple)(np.array([1.2, -0.4]))
        assert info.value.origin.text.startswith("return x * 2.0, 2.0 * x_dot, 0.0")


def test_the_import_hook_leaves_out_forward_mode_a_custom_vjp_refuses(tmp_path):
    package = tmp_path / "rulepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(textwrap.dedent("""
        import numpy as np, s2s

        __s2s__ = ["loss"]

        @s2s.custom_vjp
        def clipped(x):
            return x

        def clipped_fwd(x):
            return x, None

        def clipped_bwd(res, g):
            return (np.clip(g, -1.0, 1.0),)

        clipped.defvjp(clipped_fwd, clipped_bwd)

        def loss(x):
            return np.sum(clipped(3.0 * x) ** 2)
    """))
    program = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import numpy as np, s2s
        s2s.install_import_hook("rulepkg")
        import rulepkg.model
        print(list(s2s.grad(rulepkg.model.loss)(np.array([0.1, 0.5]))))
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                         env={**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")})
    np.testing.assert_allclose(eval(out.stdout.strip().splitlines()[-1]), [1.8, 3.0], rtol=1e-14)


# ---- s2s.checkpoint(f)(x) written inline, as JAX code writes jax.checkpoint(f)(x) ------------
# checkpoint returns f, so the call is f's (no "cannot resolve the called function").

X3 = np.array([0.3, 0.7, 1.1])  # (the point of the inline checkpoints)


def sines(x):
    return np.sin(x) * x[0]


def decay(s, z):
    return s * np.exp(0.1 * z)


def inline_checkpoint(x):
    return np.sum(s2s.checkpoint(sines)(x))


def inline_checkpoint_in_a_loop(x):
    s = x[0]
    for t in range(3):
        s = s2s.checkpoint(decay, prevent_cse=False)(s, x[t])
    return s


def inline_remat(x):
    return np.sum(s2s.remat(sines)(x) ** 2)


@pytest.mark.parametrize("f", [inline_checkpoint, inline_checkpoint_in_a_loop, inline_remat],
                         ids=lambda f: f.__name__)
def test_inline_checkpoint(f):
    check_all(f, X3)
