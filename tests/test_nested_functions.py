"""Functions defined with def inside the differentiated one and called there, as autograd's examples
write them (rnn.py's update and output, fluidsim's project): written out where they are called,
reading the variables around them as Python's closures do (when called, not when defined), writing
into the arrays they are given as NumPy does. Draws from a NumPy RandomState or Generator that the
function closes over (black-box SVI's rs.randn). Every mode against central differences."""

import numpy as np
import numpy.random as npr
import pytest

import s2s
from checks import check_all, close
from finite_differences import central_difference_grad, central_differences, hessian_by_differences, where

X = np.array([0.3, -1.2, 2.0, 0.7])


def closure_read(x):
    a = x[0]

    def g(v):
        return a * np.sin(v)
    return np.sum(g(x))


def late_binding(x):
    c = x[0]

    def g(v):
        return c * v
    c = x[1] ** 2  # the call below sees this c, as Python's closures do
    return np.sum(g(x))


def rebound_between_calls(x):
    def g(v):
        return c * v
    total = 0.0
    for i in range(3):
        c = x[i]
        total = total + np.sum(g(x))
    return total


def helpers_calling_each_other(x):
    def sq(v):
        return v * v

    def both(v):
        return sq(v) + np.sin(sq(v))
    return np.sum(both(x))


def tuple_return(x):
    def split(v):
        return v[:2], v[2:] ** 2
    a, b = split(x)
    return np.sum(a) * np.sum(b)


def defaults(x):
    s = x[0]

    def g(v, scale=s, power=2):  # scale is x[0]: a default is evaluated where the def runs
        return scale * v ** power
    s = 100.0
    return np.sum(g(x)) + np.sum(g(x, power=3)) + np.sum(g(power=1, v=x))


def early_returns(x):
    def soft(v):
        if v > 1.5:
            return 1.5 + 0.1 * (v - 1.5)
        for k in range(3):
            if v < -k:
                return -v * k
        return v * v
    total = 0.0
    for i in range(x.shape[0]):
        total = total + soft(x[i])
    return total


def inner_closure(x):
    def outer(v):
        w = v * 2.0

        def inner(u):
            return u * w
        return inner(v) + w
    return np.sum(outer(x))


def shadowed_free_name(x):
    w = x[0]

    def g(v):
        return v * w  # this function's w, not h's

    def h(v):
        w = v + 1.0
        return g(w)
    return np.sum(h(x))


def in_a_comprehension(x):
    def f(v):
        return np.exp(-v) * v
    return sum([f(x[i]) for i in range(x.shape[0])])


def comprehension_variable_of_the_same_name(x):
    i = 1

    def g():
        return x[i] * 2.0  # this function's i, not the comprehension's
    return sum([g() * x[i] for i in range(3)])


def closed_over_array_written(x):
    buf = np.zeros(3)

    def put(i, v):
        buf[i] = v  # into the caller's buf, as NumPy writes
    for i in range(3):
        put(i, x[i] * x[i + 1])
    return np.sum(buf ** 2)


def loop_with_break(x):
    def first_big(v):
        out = 0.0
        for i in range(v.shape[0]):
            if v[i] > 1.1:
                out = v[i] * v[i]
                break
        return out
    return first_big(x) + first_big(x * 3.0)


def called_from_a_lax_body(x):
    def sq(v):
        return v * v

    def body(i, c):
        return c + sq(x[i])
    return s2s.lax.fori_loop(0, 3, body, 0.0)


def fluid_like(x):
    vx = x[:3] * 1.0
    vy = x[1:] ** 2

    def project(vx, vy):  # as fluidsim's: subtracts a gradient from the caller's arrays
        p = 0.5 * (np.roll(vx, 1) - np.roll(vy, -1))
        vx -= p
        vy -= np.roll(p, 1) * vx
    for k in range(2):
        project(vx, vy)
    return np.sum(vx * vy) + np.sum(vx ** 2)


def item_write(x):
    v = x * 2.0

    def squash_first(u):
        u[0] = np.sin(u[0]) * u[1]
    squash_first(v)
    return np.sum(v ** 2)


def a_module_function_with_a_writing_helper(x):
    y = x ** 2

    def scale_rows(a, k):
        a *= k
        return a[0]
    first = scale_rows(y, x[1])
    return np.sum(y) + first


CASES = [closure_read, late_binding, rebound_between_calls, helpers_calling_each_other, tuple_return, defaults,
         early_returns, inner_closure, shadowed_free_name, in_a_comprehension, comprehension_variable_of_the_same_name,
         closed_over_array_written, loop_with_break, called_from_a_lax_body, fluid_like, item_write,
         a_module_function_with_a_writing_helper]


@pytest.mark.parametrize("fun", CASES, ids=lambda f: f.__name__)
def test_nested_functions_in_every_mode(fun):
    # grad, jit(grad) under Numba, jacfwd and jvp along each axis, against central differences
    check_all(fun, X.copy())
    for backend in ("python", "cpu"):  # the values are NumPy's: late binding, defaults, writes
        assert s2s.jit(fun, backend=backend)(X.copy()) == pytest.approx(fun(X.copy()), rel=1e-13)
    xs = np.stack([X, 0.5 * X, -X])
    got = s2s.vmap(s2s.grad(fun))(xs)
    for row, x in zip(got, xs):
        close(row, central_differences(fun, x.copy()))


def test_late_binding_and_defaults_against_closed_forms():
    x = X.copy()
    assert s2s.jit(late_binding, backend="python")(x) == pytest.approx(x[1] ** 2 * np.sum(x))
    # defaults: x0 (sum x^2 + sum x^3 + sum x)
    expected = x[0] * (np.sum(x ** 2) + np.sum(x ** 3) + np.sum(x))
    assert s2s.jit(defaults, backend="python")(x) == pytest.approx(expected)
    # shadowed_free_name: g reads f's w = x0, given h's w = x + 1
    assert s2s.jit(shadowed_free_name, backend="python")(x) == pytest.approx(np.sum((x + 1.0) * x[0]))
    assert s2s.jit(comprehension_variable_of_the_same_name, backend="python")(x) == pytest.approx(
        2.0 * x[1] * np.sum(x[:3]))


def test_second_order_through_nested_functions():
    for fun in (closure_read, helpers_calling_each_other, fluid_like):
        np.testing.assert_allclose(s2s.hessian(fun)(X.copy()), hessian_by_differences(fun, X.copy()),
                                   rtol=1e-5, atol=1e-5)


def rnn_loss(params, xs, ys):
    W, U, b, V = params

    def update(h, x):
        return np.tanh(h @ W + x @ U + b)

    def output(h):
        return h @ V
    h = np.zeros(W.shape[0])
    total = 0.0
    for t in range(xs.shape[0]):
        h = update(h, xs[t])
        total = total + np.sum((output(h) - ys[t]) ** 2)
    return total


def rnn_data():
    rng = np.random.default_rng(0)
    params = (0.5 * rng.normal(size=(3, 3)), rng.normal(size=(2, 3)), rng.normal(size=3), rng.normal(size=(3, 1)))
    return params, rng.normal(size=(4, 2)), rng.normal(size=(4, 1))


def rnn_differences(params, xs, ys):
    return [central_difference_grad(lambda p: rnn_loss(params[:k] + (p,) + params[k + 1:], xs, ys), (params[k],), 0)
            for k in range(len(params))]


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_an_rnn_whose_loss_defines_its_step(backend):
    params, xs, ys = rnn_data()
    expected = rnn_differences(params, xs, ys)
    got = s2s.jit(s2s.grad(rnn_loss), backend=backend)(params, xs, ys)
    for g, e in zip(got, expected):
        close(g, e)
    tangents = tuple(np.ones_like(p) for p in params)
    value, tangent = s2s.jvp(rnn_loss, (params, xs, ys), (tangents, np.zeros_like(xs), np.zeros_like(ys)))
    assert value == pytest.approx(rnn_loss(params, xs, ys), rel=1e-13)
    assert tangent == pytest.approx(sum(np.sum(e) for e in expected), rel=1e-6)


def test_the_rnn_gradient_reads_as_the_loop_with_the_steps_written_out():
    params, xs, ys = rnn_data()
    grad = s2s.grad(rnn_loss)
    grad(params, xs, ys)
    text = s2s.source(grad)
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any("update(" in line or "output(" in line for line in code)  # written out, no calls left
    assert "# test_nested_functions.py:" in text and "return np.tanh(h @ W + x @ U + b)" in text
    assert "h = np.tanh(" in text  # the step's result goes straight to the caller's h
    assert "        x = xs[t]\n" in text  # the step's parameter names the value it is given
    assert text == s2s.source(s2s.grad(rnn_loss))  # deterministic


def number_updated(x):
    def step(t, dt):
        t += dt  # rebinds step's t only, under Python: the caller's t stays
        return t * x
    t = x[0]
    y = step(t, 0.5)
    return np.sum(y) + t


def number_updated_unread(x):
    def step(t, dt):
        t += dt
        return t * x
    return np.sum(step(x[0], 0.5))  # (no variable of the caller's is given to t)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_an_update_of_a_number_parameter_is_refused_where_the_callers_variable_is_passed(backend):
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(s2s.grad(number_updated), backend=backend)(X.copy())
    assert "`t += ...` in step updates the caller's t in place" in str(info.value)
    assert "write `t = t + ...` in step" in str(info.value)
    assert where(number_updated, "t += dt") in str(info.value)
    close(s2s.jit(s2s.grad(number_updated_unread), backend=backend)(X.copy()),
          central_differences(number_updated_unread, X.copy()))


def recursive_helper(x):
    def f(v, n):
        if n == 0:
            return v
        return f(v * 2.0, n - 1)
    return np.sum(f(x, 2))


def helper_as_a_value(x):
    def f(v):
        return v
    g = f
    return np.sum(g(x))


def helper_before_its_def(x):
    y = f(x)

    def f(v):
        return v
    return np.sum(y)


@pytest.mark.parametrize("fun, reason, text", [
    (recursive_helper, "recursive calls of nested functions are not supported (f -> f)", "return f(v * 2.0, n - 1)"),
    (helper_as_a_value, "the nested function f can be called, or passed to s2s.lax forms", "g = f"),
    (helper_before_its_def, "the nested function f is called before its def", "y = f(x)"),
])
def test_nested_functions_refused_at_the_line(fun, reason, text):
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fun)(X.copy())
    assert reason in str(info.value)
    assert where(fun, text) in str(info.value)


# ---- draws from a NumPy RandomState or Generator ------------------------------------------------

D, SAMPLES = 2, 5


def log_density(z):
    return -0.5 * np.sum(z ** 2, axis=1) - 0.1 * np.sum(z ** 4, axis=1)


def black_box_svi(num_samples):
    """An objective as autograd's black_box_svi.py builds it: a RandomState in its closure."""
    rs = npr.RandomState(0)

    def objective(params):
        mean, log_std = params[:D], params[D:]
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        entropy = 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)
        return -(entropy + np.mean(log_density(samples)))
    return objective, rs


def with_samples(samples):
    """The objective with its draws fixed: what the derivative of one call is taken of."""
    def objective(params):
        mean, log_std = params[:D], params[D:]
        z = samples * np.exp(log_std) + mean
        return -(0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std) + np.mean(log_density(z)))
    return objective


P = np.array([0.1, -0.2, 0.3, -0.4])


def test_draws_from_a_closed_over_random_state_are_numpys_and_constants_of_the_gradient():
    objective, rs = black_box_svi(SAMPLES)
    reference = npr.RandomState(0)  # the same stream, drawn by NumPy
    grad = s2s.grad(objective)
    for _ in range(2):  # each call draws anew, as the state advances
        samples = reference.randn(SAMPLES, D)
        close(grad(P), central_differences(with_samples(samples), P))
        assert rs.randn() == reference.randn()  # the stream is where NumPy's is
    samples = reference.randn(SAMPLES, D)
    value, tangent = s2s.jvp(objective, (P,), (np.ones(4),))
    assert value == pytest.approx(with_samples(samples)(P), rel=1e-13)
    assert tangent == pytest.approx(np.sum(central_differences(with_samples(samples), P)), rel=1e-6)
    assert "runtime.draw(rs, \"randn\", num_samples, D)" in s2s.source(grad)


RNG = np.random.default_rng(3)


def noisy_sines(x):
    eps = RNG.normal(size=(4, x.shape[0]))
    return np.sum(np.sin(x + 0.1 * eps))


def test_vmap_draws_for_each_example_in_turn_as_a_loop_does():
    xs = np.stack([X, 2.0 * X])
    state = RNG.bit_generator.state
    got = s2s.vmap(s2s.grad(noisy_sines))(xs)
    after = RNG.bit_generator.state
    RNG.bit_generator.state = state
    for row, x in zip(got, xs):
        eps = RNG.normal(size=(4, x.size))
        close(row, central_differences(lambda v: np.sum(np.sin(v + 0.1 * eps)), x))
    assert RNG.bit_generator.state == after


def test_a_draw_under_jit_is_refused_with_the_ways_out():
    objective, _ = black_box_svi(SAMPLES)
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(s2s.grad(objective))(P)
    message = str(info.value)
    assert "a draw from a NumPy RandomState or Generator cannot be compiled by Numba" in message
    assert "draw the samples outside the function" in message and "s2s.random" in message
    assert "test_nested_functions.py:" in message and "rs.randn(num_samples, D)" in message


def test_a_keyword_draw_of_a_module_generator_under_jit_is_refused_with_the_ways_out():
    """RNG.normal(size=...): Numba types a Generator, and its refusal is the draw's, not the keyword's."""
    with pytest.raises(s2s.S2SError) as info:
        s2s.jit(noisy_sines)(X)
    message = str(info.value)
    assert "a draw from a NumPy RandomState or Generator cannot be compiled by Numba" in message
    assert "eps = RNG.normal(size=(4, x.shape[0]))" in message and "s2s.random" in info.value.hint


def draw_of_an_active_mean(x):
    return np.sum(RNG.normal(x, 1.0))


def generator_as_a_value(x):
    r = RNG
    return np.sum(x)


@pytest.mark.parametrize("fun, reason, text", [
    (draw_of_an_active_mean, "mu + sigma * rs.standard_normal(shape)", "RNG.normal(x, 1.0)"),
    (generator_as_a_value, "can be drawn from", "r = RNG"),
])
def test_draws_refused_at_the_line(fun, reason, text):
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fun)(X.copy())
    assert reason in str(info.value)
    assert where(fun, text) in str(info.value)


def global_state_draws(x):
    return np.sum(x * np.random.randn(3))


def test_draws_from_numpys_global_random_state():
    np.random.seed(5)
    grad = s2s.grad(global_state_draws)(X[:3].copy())
    after = np.random.randn()
    np.random.seed(5)
    np.testing.assert_array_equal(grad, np.random.randn(3))  # the gradient of sum(x * eps) is eps
    assert np.random.randn() == after
