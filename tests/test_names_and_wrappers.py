"""Names in transformed code: functions that share a name, decorated functions and lambdas in
files that change, each read as Python runs it; and the names generated code introduces (a scan's
ys and c_init, an inlined body's parameters, vmap's batch size n, runtime, h_vjp,
f_value_and_grad), which neither hide the user's module names nor are taken by the user's own.
Values against closed forms."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
import shadowing_cases as cases
import twins_a
import twins_b

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def twice(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


@twice
def doubled_sine(x):
    return np.sin(x)


def calls_doubled_sine(x):
    return doubled_sine(x) + 1.0


def both_acts(x):
    return twins_a.act(x) + twins_b.act(x)


def act(x):  # the name of the callee it calls
    return twins_b.act(x) * 2.0 + x


def make(c):
    def inner(u):
        return np.sin(u) * c
    return inner


TWO, THREE = make(2.0), make(3.0)


def two_closures(x):
    return TWO(x) + 10.0 * THREE(x)


@functools.lru_cache(maxsize=None)
def remembered_sine(u):
    return np.sin(u) * 3.0


def calls_remembered(x):
    return remembered_sine(x) + x


def with_default(u, c=2.0):
    return np.sin(u * c) * u


def tangent_with_default(x):
    return s2s.jvp(with_default, (x,), (1.0,))[1]


X = 0.5


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_functools_wraps_decorator_is_kept(backend):
    assert s2s.jit(doubled_sine, backend=backend)(X) == pytest.approx(2 * np.sin(X), rel=1e-15)
    assert s2s.jit(s2s.grad(doubled_sine), backend=backend)(X) == pytest.approx(2 * np.cos(X), rel=1e-15)
    assert s2s.jit(s2s.grad(calls_doubled_sine), backend=backend)(X) == pytest.approx(2 * np.cos(X), rel=1e-15)
    xs = np.array([0.5, 0.6])
    np.testing.assert_allclose(s2s.jit(s2s.vmap(doubled_sine), backend=backend)(xs), 2 * np.sin(xs), rtol=1e-15)
    assert s2s.jvp(doubled_sine, (X,), (1.0,))[1] == pytest.approx(2 * np.cos(X), rel=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_callees_of_one_name_from_two_modules(backend):
    assert s2s.jit(both_acts, backend=backend)(X) == pytest.approx(3 * X * X + 5 * np.sin(X), rel=1e-15)
    assert s2s.jit(s2s.grad(both_acts), backend=backend)(X) == pytest.approx(6 * X + 5 * np.cos(X), rel=1e-15)
    assert s2s.jvp(both_acts, (X,), (1.0,))[1] == pytest.approx(6 * X + 5 * np.cos(X), rel=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_function_named_as_its_callee(backend):
    assert s2s.jit(act, backend=backend)(X) == pytest.approx(10 * np.sin(X) + X, rel=1e-15)
    assert s2s.jit(s2s.grad(act), backend=backend)(X) == pytest.approx(10 * np.cos(X) + 1, rel=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_two_closures_of_one_factory(backend):
    assert s2s.jit(two_closures, backend=backend)(X) == pytest.approx(32 * np.sin(X), rel=1e-15)
    assert s2s.jit(s2s.grad(two_closures), backend=backend)(X) == pytest.approx(32 * np.cos(X), rel=1e-15)
    with_lambda = s2s.jit(s2s.grad(lambda x: TWO(x) - THREE(x)), backend=backend)
    assert with_lambda(X) == pytest.approx(-np.cos(X), rel=1e-14)


def test_a_lambda_returning_a_parenthesised_tuple():
    x = np.array([0.2, 0.4])
    (value, aux), gradient = s2s.value_and_grad(lambda x: (np.sum(np.sin(x)), x * 3.0), has_aux=True)(x)
    np.testing.assert_allclose(gradient, np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(aux, 3 * x, rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jvp_inside_takes_the_callees_defaults(backend):
    # d/dx of the tangent of sin(2u) u: -4 sin(2x) x + 4 cos(2x)
    got = s2s.jit(s2s.grad(tangent_with_default), backend=backend)(X)
    assert got == pytest.approx(-4 * np.sin(2 * X) * X + 4 * np.cos(2 * X), rel=1e-14)
    assert s2s.jit(tangent_with_default, backend=backend)(X) == pytest.approx(
        2 * np.cos(2 * X) * X + np.sin(2 * X), rel=1e-15)


def test_an_edit_to_a_lambdas_later_lines_makes_a_new_module(tmp_path):
    """black writes a long lambda over several lines; inspect gives its first line only, so the
    cache key must still see an edit of the others (two processes, one on-disk cache)."""
    script = tmp_path / "model.py"
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
    answers = []
    for power in (2, 4):
        script.write_text(textwrap.dedent(f"""\
            import s2s
            g = s2s.grad(
                lambda x: x ** 3
                + x ** {power}
            )
            print(g(2.0))
            """))
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        answers.append(float(done.stdout.split()[-1]))
    assert answers == [3 * 4 + 2 * 2, 3 * 4 + 4 * 8]


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_an_lru_cache_function_is_read_as_the_function(backend):
    assert s2s.jit(s2s.grad(calls_remembered), backend=backend)(X) == pytest.approx(3 * np.cos(X) + 1, rel=1e-15)
    assert s2s.jit(s2s.grad(remembered_sine), backend=backend)(X) == pytest.approx(3 * np.cos(X), rel=1e-15)


def test_an_lru_cache_callee_is_found_in_the_cache_by_a_second_process(tmp_path):
    script = tmp_path / "remembered.py"
    script.write_text(textwrap.dedent("""\
        import functools
        import numpy as np
        import s2s

        @functools.lru_cache(maxsize=None)
        def scale(u):
            return np.sin(u) * 3.0

        def f(x):
            return scale(x) + x

        print(s2s.grad(f)(0.5))
        """))
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
    for _ in range(2):  # the second reads the first's entry, checking the callee behind the cache
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert float(done.stdout.split()[-1]) == pytest.approx(3 * np.cos(0.5) + 1, rel=1e-15)


# ---- names s2s introduces, and the user's names it uses itself ---------------------------------

SHADOWED = [(cases.scan_then_module_ys, 3.0), (cases.fori_then_module_s, 15.0), (cases.scan_then_module_c, 6.0),
            (cases.scan_then_module_c_init, 12.0), (cases.times_module_n, 4.0)]


@pytest.mark.parametrize("fun, slope", SHADOWED, ids=[f.__name__ for f, _ in SHADOWED])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_names_s2s_introduces_do_not_hide_module_names(fun, slope, backend):
    x = 0.5
    assert s2s.jit(fun, backend=backend)(x) == pytest.approx(slope * x)  # each is linear: f = slope * x
    assert s2s.jit(s2s.grad(fun), backend=backend)(x) == pytest.approx(slope)
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2s.vmap(fun)(xs), slope * xs)  # vectorised on the python backend
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fun))(xs), np.full(3, slope))


def local_named_runtime(x):
    runtime = x * 2.0
    np_ = runtime * x
    return np.sum(np_)


def helper_h(x):
    return x * x


def helper_h_vjp(x):  # what helper_h's reverse mode would be called
    return np.sin(x)


def calls_h_and_h_vjp(x):
    return np.sum(helper_h(x) + helper_h_vjp(x))


def scaled_value_and_grad(x):
    return x * 3.0


def scaled(x):
    return np.sum(scaled_value_and_grad(x))


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_user_names_that_generated_code_also_uses(backend):
    """A local named runtime, helpers named h and h_vjp, a helper named f_value_and_grad next
    to f: generated modules resolve their own names whatever the user calls things."""
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(s2s.jit(s2s.grad(local_named_runtime), backend=backend)(x), 4 * x, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(calls_h_and_h_vjp), backend=backend)(x), 2 * x + np.cos(x),
                               rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(scaled), backend=backend)(x), [3.0, 3.0], rtol=1e-14)
    np.testing.assert_allclose(s2s.jacfwd(local_named_runtime)(x), 4 * x, rtol=1e-14)


# ---- functools.partial given to a transform: its bound arguments are constants, and argnums count
# the parameters left, as JAX's do ----


def weighted_loss(w, x, scale, shift=0.0):
    return np.sum((np.sin(w) * x - shift) ** 2) * scale


W = np.array([0.3, -0.2, 1.1])
XS = np.array([0.5, 1.5, -2.0])


def test_a_partial_in_every_transform():
    from finite_differences import central_differences, hessian_by_differences

    loss = functools.partial(weighted_loss, x=XS, scale=3.0)
    want = central_differences(loss, W)
    for grad in (s2s.grad(loss), s2s.jit(s2s.grad(loss))):
        np.testing.assert_allclose(grad(W), want, rtol=1e-6, atol=1e-8)
    for value_and_grad in (s2s.value_and_grad(loss), s2s.jit(s2s.value_and_grad(loss))):
        value, grad = value_and_grad(W)
        assert value == pytest.approx(loss(W), rel=1e-14)
        np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)
    assert s2s.jit(loss)(W) == pytest.approx(loss(W), rel=1e-14)
    t = np.array([1.0, -0.5, 2.0])
    value, tangent = s2s.jvp(loss, (W,), (t,))
    assert value == pytest.approx(loss(W), rel=1e-14) and tangent == pytest.approx(want @ t, rel=1e-6)
    np.testing.assert_allclose(s2s.hessian(loss)(W), hessian_by_differences(loss, W), rtol=1e-5, atol=1e-5)
    batch = np.stack([W, -W, 2.0 * W])
    per_example = np.stack([central_differences(loss, w) for w in batch])
    for vmapped in (s2s.vmap(s2s.grad(loss)), s2s.jit(s2s.vmap(s2s.grad(loss)))):
        np.testing.assert_allclose(vmapped(batch), per_example, rtol=1e-6, atol=1e-8)


def test_argnums_of_a_partial_count_the_parameters_it_leaves():
    from finite_differences import central_difference_grad

    loss = functools.partial(weighted_loss, W, shift=0.25)  # x and scale are left: argnums 0 and 1
    want_x = central_difference_grad(loss, (XS, 2.0), 0)
    want_scale = np.sum((np.sin(W) * XS - 0.25) ** 2)  # the loss is linear in scale
    np.testing.assert_allclose(s2s.grad(loss)(XS, 2.0), want_x, rtol=1e-6)
    assert s2s.jit(s2s.grad(loss, argnums=1))(XS, 2.0) == pytest.approx(want_scale, rel=1e-12)
    grad_x, grad_scale = s2s.grad(loss, argnums=(0, 1))(XS, 2.0)
    np.testing.assert_allclose(grad_x, want_x, rtol=1e-6)
    assert grad_scale == pytest.approx(want_scale, rel=1e-12)
    _, tangent = s2s.jvp(loss, (XS, 2.0), (np.zeros(3), 1.0))
    assert tangent == pytest.approx(want_scale, rel=1e-12)
    twice = functools.partial(loss, scale=2.0)  # a partial of a partial (Python flattens it)
    np.testing.assert_allclose(s2s.grad(twice)(XS), want_x, rtol=1e-6)


def test_a_partial_of_what_s2s_cannot_read_is_refused():
    class Scaled:
        def __call__(self, w, scale):
            return np.sum(w) * scale

    with pytest.raises(s2s.S2SError, match="functools.partial of Scaled objects"):
        s2s.grad(functools.partial(Scaled(), scale=2.0))(W)


# ---- a functools.wraps wrapper of *args and **kwargs that only forwards them is read as the function
# it wraps (its other statements, which read neither, do not run in transformed code); another is
# transformed as it is written ----

CALLS = [0]


def counted(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLS[0] += 1
        return fn(*args, **kwargs)
    return wrapper


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        print("calling", fn.__name__)
        result = fn(*args, **kwargs)
        print("done")
        return result
    return wrapper


def scaled_twice(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


@counted
def spring_energy(x, k):
    return 0.5 * k * np.sum(x ** 2) + np.sum(np.sin(x))


@logged
@counted
def damped(x):
    return np.sum(np.exp(-x) * x)


@scaled_twice
def cubes(x):
    return np.sum(x ** 3)


def calls_the_wrapped(x):
    return spring_energy(x, 3.0) * 2.0 + damped(x)


def calls_a_scaling_wrapper(x):
    return cubes(x) + 1.0


def test_forwarding_wrappers_are_read_as_the_function_they_wrap(capsys):
    from finite_differences import central_difference_grad, central_differences

    x = np.array([0.5, 1.5, -2.0])
    want = central_difference_grad(spring_energy, (x, 3.0), 0)
    for grad in (s2s.grad(spring_energy), s2s.jit(s2s.grad(spring_energy))):
        np.testing.assert_allclose(grad(x, 3.0), want, rtol=1e-6)
    assert s2s.grad(spring_energy, argnums=1)(x, 3.0) == pytest.approx(0.5 * np.sum(x ** 2), rel=1e-12)
    for fun in (damped, calls_the_wrapped):
        want = central_differences(fun, x)
        for grad in (s2s.grad(fun), s2s.jit(s2s.grad(fun))):
            np.testing.assert_allclose(grad(x), want, rtol=1e-6)
        assert s2s.jvp(fun, (x,), (np.ones(3),))[1] == pytest.approx(np.sum(want), rel=1e-6)
        batch = np.stack([x, -x])
        np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(fun)))(batch),
                                   [central_differences(fun, row) for row in batch], rtol=1e-6)
    capsys.readouterr()
    calls = CALLS[0]
    s2s.jit(s2s.grad(damped))(x)
    assert CALLS[0] == calls and capsys.readouterr().out == ""  # (the wrapper's statements do not run)


@pytest.mark.parametrize("fun", [cubes, calls_a_scaling_wrapper])
def test_a_wrapper_that_does_more_than_forward_is_differentiated_as_written(fun):
    """scaled_twice's wrapper, 2.0 * fn(*args, **kwargs), is transformed itself: its *args is one
    tuple, and fn's call takes its items by fn's own parameters."""
    from finite_differences import central_differences

    x = np.array([0.5, 1.5])
    want = central_differences(fun, x)
    for grad in (s2s.grad(fun), s2s.jit(s2s.grad(fun))):
        np.testing.assert_allclose(grad(x), want, rtol=1e-6)
    assert s2s.jvp(fun, (x,), (np.ones(2),))[1] == pytest.approx(np.sum(want), rel=1e-6)
    assert fun is calls_a_scaling_wrapper or "def wrapper_vjp(args, out_bar):" in s2s.source(s2s.grad(fun))
