"""Static arguments (frontend/static_arguments.py): a string, None, a type or a function passed to a
transformed function chooses its code, as JAX's trace runs the Python around the maths. The code
generated for the call has the value written in (einsum subscripts, a dtype, the function called),
the branch its tests do not take left out, and a try/except it decides taken as Python takes it;
callees get the values their calls pass. Every derivative is checked against central differences."""

import functools

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, central_differences, hessian_by_differences, where

X = np.array([0.3, 1.7, 0.9, 2.2])
A = np.arange(6.0).reshape(2, 3) / 5.0
B = np.arange(12.0).reshape(3, 4) / 7.0


def contracted(subscripts, a, b):
    return np.sum(np.sin(np.einsum(subscripts, a, b)))


def spread(x, mean_fn=None, when="end"):
    if mean_fn is None:
        m = np.mean(x)
    else:
        m = mean_fn(x)
    scale = 2.0 if when == "begin" else 1.0
    return scale * np.sum((x - m) ** 2)


def trimmed_mean(v):
    return np.mean(v[1:])


def centred(x, mean_fn=None):
    if mean_fn is None:
        return x - np.mean(x)
    return x - mean_fn(x)


def cast_then_square(x, dtype=float):
    y = np.asarray(x, dtype=dtype)
    return np.sum(np.sin(y) * y)


def centre(x, mean_fn=None, dtype=float):
    y = np.asarray(x, dtype=dtype)
    if mean_fn is None:
        return y - np.mean(y)
    return y - mean_fn(y)


def chosen_centre(x, how="median"):
    if how == "median":
        c = centre(x, np.median)
    elif how == "trimmed":
        c = centre(x, mean_fn=trimmed_mean)
    else:
        c = centre(x)
    return np.sum(c ** 2)


_WHEN_TO_NUMBER = {"end": 0, "begin": 1, "e": 0, "b": 1}


def when_number(when):
    if isinstance(when, np.ndarray):
        return when
    try:
        return _WHEN_TO_NUMBER[when]
    except (KeyError, TypeError):
        return 1


def annuity(rate, n, when="end"):
    when = when_number(when)
    if when not in (0, 1):
        raise ValueError("when must be 'begin' or 'end'")
    return (1 + rate * when) * ((1 + rate) ** n - 1) / rate


def scaled_by(x, s):
    if isinstance(s, np.ndarray):
        factor = np.sum(s ** 2)
    else:
        factor = s
    return np.sum(np.sin(x) * factor)


def in_precision(x, kind="double"):
    dtype = np.float64 if kind == "double" else np.float32
    form = "squares"
    if form == "squares":
        y = np.asarray(x, dtype=dtype) ** 2
    else:
        y = x
    return np.sum(np.sin(y))


def shadowed_in_a_comprehension(x, mode="a"):
    return sum(np.sum(x) * len(mode) for mode in ["bb", "ccc"])


def value_dependent_try(x):
    try:
        y = np.sqrt(x)
    except ValueError:
        y = x
    return np.sum(y)


@pytest.mark.parametrize("subscripts", ["ij,jk->ik", "ij,jk->ki", "ij,jk->"])
def test_einsum_subscripts_passed_as_an_argument(subscripts):
    expected = central_differences(lambda a: contracted(subscripts, a, B), A)
    assert np.allclose(s2s.grad(contracted, argnums=1)(subscripts, A, B), expected, atol=1e-6)
    if subscripts == "ij,jk->ik":  # (one compiled: the others differ only in the string)
        assert np.allclose(s2s.jit(s2s.grad(contracted, argnums=1))(subscripts, A, B), expected, atol=1e-6)
    _, pullback = s2s.vjp(lambda a: contracted(subscripts, a, B), A)
    assert np.allclose(pullback(1.0)[0], expected, atol=1e-6)


@pytest.mark.parametrize("extra", [(), (np.median, "begin"), (trimmed_mean,), (lambda v: np.max(v),)],
                         ids=["defaults", "numpy-function-and-string", "user-function", "lambda"])
def test_a_function_argument_is_called(extra):
    expected = central_differences(lambda x: spread(x, *extra), X)
    assert np.allclose(s2s.grad(spread)(X, *extra), expected, atol=1e-6)
    assert np.allclose(s2s.jit(s2s.grad(spread))(X, *extra), expected, atol=1e-6)
    assert np.allclose(s2s.hessian(spread)(X, *extra), hessian_by_differences(lambda x: spread(x, *extra), X),
                       atol=1e-4)
    if extra and extra[0] is np.median:
        assert np.isclose(s2s.jit(spread)(X, *extra), spread(X, *extra))


def test_jacobians_and_vmap_with_a_function_argument():
    expected = np.array([central_differences(lambda x: centred(x, np.median)[i], X) for i in range(X.size)])
    for jacobian in (s2s.jacrev, s2s.jacfwd):
        assert np.allclose(jacobian(centred)(X, np.median), expected, atol=1e-6)
        assert np.allclose(s2s.jit(jacobian(centred))(X, np.median), expected, atol=1e-6)
    xs = np.stack([X, X[::-1] * 2.0, X + 1.0])
    per_example = np.array([central_differences(lambda x: spread(x, np.median, "begin"), x) for x in xs])
    batched = s2s.vmap(s2s.grad(spread), in_axes=(0, None, None))(xs, np.median, "begin")
    assert np.allclose(batched, per_example, atol=1e-6)
    compiled = s2s.jit(s2s.vmap(spread, in_axes=(0, None, None)))(xs, np.median, "begin")
    assert np.allclose(compiled, [spread(x, np.median, "begin") for x in xs])


def test_the_generated_code_has_the_values_written_in_and_the_branch_taken_only():
    g = s2s.grad(spread)
    g(X, np.median, "begin")
    source = g.source
    assert "For the call's mean_fn=numpy.median, when='begin'" in source
    assert "runtime.median(x)" in source and "np.mean" not in source
    code = [line.strip() for line in source.splitlines() if not line.strip().startswith("#")]
    assert "scale = 2.0" in code and not any(line.startswith(("if ", "else")) for line in code)
    g(X)  # the same transform, called with other values: their own code, shown after the call
    assert "np.mean" in g.source and "median" not in g.source
    compile(source, "<generated>", "exec")


@pytest.mark.parametrize("dtype", [float, np.float64, np.dtype("float64")], ids=["float", "np.float64", "dtype"])
def test_a_dtype_argument(dtype):
    expected = central_differences(lambda x: cast_then_square(x, dtype), X)
    assert np.allclose(s2s.grad(cast_then_square)(X, dtype), expected, atol=1e-6)
    assert np.allclose(s2s.jit(s2s.grad(cast_then_square))(X, dtype), expected, atol=1e-6)


def test_a_float32_dtype_argument_computes_in_float32():
    x32 = X.astype(np.float32)
    gradient = s2s.grad(cast_then_square)(X, np.float32)
    exact = np.cos(x32) * x32 + np.sin(x32)  # d(sin(y) y)/dy, at the float32 values
    assert np.allclose(gradient, exact, rtol=1e-6)


@pytest.mark.parametrize("how", ["median", "trimmed", "mean"])
def test_static_values_reach_the_functions_called(how):
    expected = central_differences(lambda x: chosen_centre(x, how), X)
    assert np.allclose(s2s.grad(chosen_centre)(X, how), expected, atol=1e-6)
    assert np.allclose(s2s.jit(s2s.grad(chosen_centre))(X, how), expected, atol=1e-6)
    columns = [s2s.jvp(functools.partial(chosen_centre, how=how), (X,), (e,))[1] for e in np.eye(X.size)]
    assert np.allclose(columns, expected, atol=1e-6)


def test_jvp_of_a_partial_that_binds_a_function():
    columns = [s2s.jvp(functools.partial(spread, mean_fn=np.median), (X,), (e,))[1] for e in np.eye(X.size)]
    assert np.allclose(columns, central_differences(lambda x: spread(x, np.median), X), atol=1e-6)


@pytest.mark.parametrize("when", ["end", "begin", "b", "anything else"])
def test_a_try_the_static_values_decide_takes_the_path_python_takes(when):
    # when_number looks the string up in a dict of the module; a KeyError runs its handler. The
    # parameter is static until annuity's first statement assigns it (then an ordinary number).
    expected = central_differences(lambda r: annuity(r, 12.0, when), np.array(0.01))
    assert np.isclose(s2s.grad(annuity)(0.01, 12.0, when), expected, rtol=1e-6)
    assert np.isclose(s2s.jit(s2s.grad(annuity))(0.01, 12.0, when), expected, rtol=1e-6)
    assert np.isclose(s2s.jvp(functools.partial(annuity, when=when), (0.01, 12.0), (1.0, 0.0))[1], expected,
                      rtol=1e-6)
    g = s2s.grad(annuity)
    g(0.01, 12.0, when)
    code = [line.strip() for line in g.source.splitlines() if not line.strip().startswith("#")]
    assert not any(line.startswith(("try", "except")) for line in code)


def test_a_try_the_values_decide_is_run_on_them():
    # (not decided here: a function of the generated module runs it on the values, tests/test_try_statements.py)
    g = s2s.grad(value_dependent_try)
    np.testing.assert_allclose(g(X), central_differences(value_dependent_try, X), rtol=1e-6)
    assert "@runtime.runs_as_python" in g.source


@pytest.mark.parametrize("s", [2.5, np.array([0.5, -1.0, 2.0, 0.25])], ids=["number", "array"])
def test_isinstance_of_an_argument_is_decided_by_its_type(s):
    h = 1e-6  # (by hand for a number: central_difference_grad passes it as a 0-d array, which is an ndarray)
    by_number = (scaled_by(X, s + h) - scaled_by(X, s - h)) / (2 * h) if np.ndim(s) == 0 else None
    for argnums in (0, 1):
        expected = central_difference_grad(scaled_by, (X, s), argnums) if argnums == 0 or by_number is None \
            else by_number
        assert np.allclose(s2s.grad(scaled_by, argnums=argnums)(X, s), expected, atol=1e-6)
        assert np.allclose(s2s.jit(s2s.grad(scaled_by, argnums=argnums))(X, s), expected, atol=1e-6)
    g = s2s.grad(scaled_by)
    g(X, s)
    assert f"decided for the call's argument types: x ndarray, s {type(s).__name__}" in g.source


def weighted_balance(rate, n, when):
    return annuity_of_arrays(rate, n, when) * rate


def annuity_of_arrays(rate, n, when):
    when = when_number(when)  # (when_number tests isinstance(when, np.ndarray): an array here)
    return (1 + rate * when) * ((1 + rate) ** n - 1) / rate


def balances(rate, n, when="end"):
    """numpy-financial's way: `when` made a number, then arrays, then handed down to helpers."""
    when = when_number(when)
    rate, n, when = np.broadcast_arrays(rate, n, when)
    scale = np.asarray(2.0)
    a, b = map(np.asarray, [rate, n])
    if isinstance(scale, np.ndarray):
        half = scale * 0.5
    else:
        half = 0.0
    return np.sum(weighted_balance(a, b, when) * half)


@pytest.mark.parametrize("when", ["end", "begin"])
def test_isinstance_of_an_array_the_function_makes_is_decided_here_and_in_the_functions_it_calls(when):
    rates = np.array([0.01, 0.02])
    want = central_difference_grad(balances, (rates, 12.0, when), 0)
    np.testing.assert_allclose(s2s.grad(balances)(rates, 12.0, when), want, rtol=1e-6)
    assert s2s.jvp(lambda r: balances(r, 12.0, when), (rates,), (np.ones(2),))[1] == pytest.approx(np.sum(want),
                                                                                                   rel=1e-6)
    g = s2s.grad(balances)
    g(rates, 12.0, when)
    code = [line for line in g.source.splitlines() if not line.lstrip().startswith("#")]
    assert not any("isinstance" in line or "half = 0.0" in line for line in code)


@pytest.mark.parametrize("kind", ["double", "single"])
def test_a_variable_assigned_a_static_value_is_that_constant(kind):
    g = s2s.grad(in_precision)(X, kind)
    if kind == "double":
        assert np.allclose(g, central_differences(lambda x: in_precision(x, kind), X), atol=1e-6)
    else:  # float32 squares: the derivative of sin(y) y=x**2 at the float32 values
        y = X.astype(np.float32) ** 2
        assert np.allclose(g, np.cos(y) * 2 * X.astype(np.float32), rtol=1e-6)
    assert np.allclose(s2s.jit(s2s.grad(in_precision))(X, kind), g, rtol=1e-6)


def test_a_comprehension_variable_named_like_a_static_parameter_is_the_comprehension_s():
    assert np.allclose(s2s.grad(shadowed_in_a_comprehension)(X), np.full(X.size, 5.0))


# ---- s2s.jit's static_argnums and static_argnames -----------------------------------------


def interleaved(a, sublist_a, b, sublist_b):
    return np.sum(np.sin(np.einsum(a, sublist_a, b, sublist_b)))


def head_energy(x, n):
    if n > 2:
        return np.sum(x[:n] ** 2) * n
    return np.sum(np.cos(x))


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_einsum_sublists_marked_static_are_read_as_the_call_passes_them(backend):
    gradient = s2s.jit(s2s.grad(interleaved, argnums=(0, 2)), static_argnums=(1, 3), backend=backend)
    for args in [(A, (0, 1), B, (1, 2)), (A.T, (1, 0), B.T, (2, 1)), (A, (0, 1), A, (2, 1))]:
        got = gradient(*args)
        for g, k in zip(got, (0, 2)):
            np.testing.assert_allclose(g, central_difference_grad(interleaved, args, k), rtol=1e-6, atol=1e-8)


def test_a_static_number_is_written_in_and_decides_the_branch():
    compiled = s2s.jit(head_energy, static_argnames="n")
    for n in (1, 3, 4):
        np.testing.assert_allclose(compiled(X, n), head_energy(X, n))
    np.testing.assert_allclose(compiled(X, n=3), head_energy(X, 3))
    code = compiled.source
    assert "For the call's n=3" in code and "x[:3]" in code and "np.cos" not in code
    gradient = s2s.jit(s2s.grad(head_energy), static_argnums=1)
    for n in (1, 3):
        np.testing.assert_allclose(gradient(X, n), central_difference_grad(head_energy, (X, n), 0), rtol=1e-6)


def test_static_arguments_through_vmap_and_hessian():
    rows = np.array([[0.3, 1.2, -0.4, 2.0], [1.1, 0.2, 0.5, -0.7]])
    batched = s2s.jit(s2s.vmap(head_energy, in_axes=(0, None)), static_argnums=1)
    np.testing.assert_allclose(batched(rows, 3), [head_energy(r, 3) for r in rows])
    hessian = s2s.jit(s2s.hessian(head_energy), static_argnums=1)
    for n in (1, 3):
        np.testing.assert_allclose(hessian(X, n), hessian_by_differences(lambda x: head_energy(x, n), X),
                                   rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("marked, message", [
    (dict(static_argnums=2), "static_argnums 2 is out of range: head_energy takes 2 positional parameters"),
    (dict(static_argnames="m"), "static_argnames names 'm', which is not a parameter of head_energy"),
])
def test_static_argnums_that_name_no_parameter_are_refused(marked, message):
    with pytest.raises(s2s.S2SError, match=message):
        s2s.jit(head_energy, **marked)


def test_a_differentiated_argument_cannot_be_static():
    with pytest.raises(s2s.S2SError, match=r"argument 0 \(x\) of head_energy is both differentiated and static"):
        s2s.jit(s2s.grad(head_energy), static_argnums=0)


def test_a_static_value_must_be_hashable_as_jax_asks():
    with pytest.raises(s2s.S2SError, match="a static value must be hashable, which a list is not"):
        s2s.jit(interleaved, static_argnums=(1, 3))(A, [0, 1], B, [1, 2])


def test_einsum_sublists_held_by_arguments_not_marked_static_are_refused_with_the_way_out():
    with pytest.raises(s2s.S2SError, match=r"mark sublist_a and the other arguments that hold sublists static"
                                           r" \(s2s.jit\(f, static_argnums=...\)") as refusal:
        s2s.grad(interleaved)(A, (0, 1), B, (1, 2))
    assert where(interleaved, "np.einsum") in str(refusal.value)
