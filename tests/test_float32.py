"""float32 through the cpu backend's reverse mode: float32 stays float32.

A float32 number that a loop carries may be promoted to float64 by the loop (s * c, c an
np.float64 or a float64 0-d array): NumPy computes the first iteration in float32 and the
others in float64. Numba types such a number float64 throughout (the float32 value on entry
converts exactly), and its tape is typed by refinement: runtime's NumberTape unifies a
float32 tape with a float64 one into a float64 tape, so every pushed value is kept exactly.
An array cannot change dtype in compiled code (Numba refuses the primal too): that is an
S2SError at the user's line that says how to keep one dtype.

Gradients are checked against central differences of the same function in float64, with a
float32 tolerance, and against the python backend (NumPy's own dtypes), with a tolerance of
float32 rounding: the compiled code computes the first iteration's operations in float64
where NumPy computes them in float32.
"""

import numba
import numpy as np
import pytest
from finite_differences import central_difference_grad

import s2s
from s2s import random
from s2s import runtime

C = np.float64(0.9)
A = np.array(1.1)


def promoted_by_float64_number(x):
    s = x[0]
    for i in range(x.shape[0]):
        s = np.sin(s) * C + x[i]
    return s


def promoted_by_0d_array(x):
    s = x[0]
    for i in range(3):
        s = np.sin(s * A) + x[i] * s
    return s


def promoted_by_float64_addition(x):
    s = x[1]
    for i in range(3):
        s = np.cos(s + np.float64(0.25)) * x[i]
    return s


def promoted_in_while(x):
    s = x[0]
    i = 0
    while i < 3:
        s = np.sin(s) * C + x[i]
        i += 1
    return s


def promoted_in_nested_loops(x):
    s = x[0]
    for i in range(2):
        for j in range(3):
            s = np.sin(s * C) + x[j] * s
    return s * s


def number_times_python_float(x):
    s = x[0]
    for i in range(3):
        s = np.sin(s * 1.5) + x[i]
    return s


def array_stays_float32(x):
    for i in range(3):
        x = np.sin(x) * np.float32(1.5)
    return np.sum(x * x)


SCALAR_STATE = [promoted_by_float64_number, promoted_by_0d_array, promoted_by_float64_addition, promoted_in_while,
                promoted_in_nested_loops, number_times_python_float, array_stays_float32]
X32 = np.array([0.3, 0.5, 0.7], np.float32)
ROWS32 = np.stack([X32, X32 * 0.5, X32 + 0.1]).astype(np.float32)


def _central(fun, x32):
    return central_difference_grad(fun, (x32.astype(np.float64),), 0)


@pytest.mark.parametrize("fun", SCALAR_STATE, ids=lambda f: f.__name__)
def test_jit_grad_of_promoted_loops(fun):
    compiled = s2s.jit(s2s.grad(fun))(X32)
    on_numpy = s2s.grad(fun)(X32)
    assert compiled.dtype == np.float32 and on_numpy.dtype == np.float32
    np.testing.assert_allclose(compiled, on_numpy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(compiled, _central(fun, X32), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("fun", SCALAR_STATE, ids=lambda f: f.__name__)
def test_jit_vmap_grad_of_promoted_loops(fun):
    compiled = s2s.jit(s2s.vmap(s2s.grad(fun)))(ROWS32)
    assert compiled.dtype == np.float32 and compiled.shape == ROWS32.shape
    for row, got in zip(ROWS32, compiled):
        np.testing.assert_allclose(got, s2s.grad(fun)(row), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, _central(fun, row), rtol=1e-4, atol=2e-5)


def scalar_argument(s):
    for i in range(3):
        s = np.sin(s) * C
    return s


def test_jit_grad_of_a_float32_number_argument():
    s = np.float32(0.3)
    got = s2s.jit(s2s.grad(scalar_argument))(s)
    assert np.asarray(got).dtype == np.float32
    assert got == pytest.approx(s2s.grad(scalar_argument)(s), rel=1e-6)
    assert got == pytest.approx(central_difference_grad(scalar_argument, (0.3,), 0), rel=1e-4)


def test_a_number_tape_takes_the_common_type_of_its_pushes():
    """The tape is made at the first push, of the float32 s; the loop makes s float64 (Numba
    types s by refinement): the tape is float64 and holds every push exactly."""
    runtime.overloads.register_numba()

    @numba.njit
    def pushes(x, c):
        s = x[0]
        count = 0
        for i in range(3):
            if count == 0:
                tape = runtime.new_tape(s, 3)
            tape[count] = s
            count += 1
            s = s * c
        return np.asarray(tape)

    x = np.array([0.1], np.float32)
    tape = pushes(x, np.float64(1.0 / 3.0))
    assert tape.dtype == np.float64
    assert tape[0] == np.float64(x[0])  # the float32 push, not rounded
    assert tape[1] == np.float64(x[0]) * np.float64(1.0 / 3.0) and tape[2] == tape[1] * np.float64(1.0 / 3.0)
    same = pushes(x, np.float32(0.5))
    assert same.dtype == np.float32 and list(same) == [np.float32(0.1), np.float32(0.05), np.float32(0.025)]


# ---- arrays that change dtype in a loop: refused under Numba, with the way out ---------


def array_promoted_by_float64(x):
    for i in range(3):
        x = np.sin(x) * C
    return np.sum(x)


def array_times_python_float(x):
    for i in range(3):
        x = np.sin(x * 1.5)
    return np.sum(x)


def array_of_a_promoted_number(x):
    s = x[0]
    for i in range(3):
        s = s * C + np.sum(np.sin(x) * s)
    return s


def array_kept_float32(x):
    for i in range(3):
        x = np.sin(x * np.float32(1.5))
    return np.sum(x)


@pytest.mark.parametrize("fun", [array_promoted_by_float64, array_times_python_float, array_of_a_promoted_number],
                         ids=lambda f: f.__name__)
def test_an_array_that_changes_dtype_in_a_loop_is_refused_at_its_line(fun):
    # NumPy computes it (float32, then float64): the python backend's gradient is right
    np.testing.assert_allclose(s2s.grad(fun)(X32), _central(fun, X32), rtol=1e-4, atol=2e-5)
    for compiled in (s2s.jit(s2s.grad(fun)), s2s.jit(fun)):
        with pytest.raises(s2s.S2SError, match=r"test_float32\.py:\d+:\d+") as refusal:
            compiled(X32)
        message = str(refusal.value)
        assert "float32 on the first iteration and float64 after" in message
        assert "np.float32(c)" in message and "backend='python'" in message


def test_the_way_out_np_float32_constant_compiles():
    got = s2s.jit(s2s.grad(array_kept_float32))(X32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, s2s.grad(array_kept_float32)(X32), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, _central(array_kept_float32, X32), rtol=1e-4, atol=2e-5)


# ---- s2s.random's float draws under s2s.jit: shape () and shaped, float32 and float64 ----


def uniform_draws(key):
    return (random.uniform(key, (), np.float32), random.uniform(key, (), np.float64),
            random.uniform(key, (), np.float32, 0.5, 2.0), random.uniform(key, (2, 3), np.float32),
            random.uniform(key, 5, np.float32, -1.0, 1.0), random.bernoulli(key, np.float32(0.3), ()),
            random.bernoulli(key, np.float32(0.3), (4,)), random.bernoulli(key, 0.6, ()))


def logarithmic_draws(key):
    return (random.normal(key, (), np.float32), random.normal(key, (), np.float64), random.normal(key, (3,), np.float32),
            random.exponential(key, (), np.float32), random.exponential(key, (), np.float64),
            random.exponential(key, (2, 3), np.float32), random.truncated_normal(key, -1.0, 2.0, (), np.float32),
            random.truncated_normal(key, -1.0, 2.0, (), np.float64),
            random.truncated_normal(key, -1.0, 2.0, (4,), np.float32))


def float32_draw_in_a_program(key, x):
    u = random.uniform(key, (), np.float32)
    e = random.exponential(random.fold_in(key, 1), (), np.float32)
    return x * u + e


KEYS = [random.PRNGKey(3), random.PRNGKey(12345), random.PRNGKey(2**40 + 5)]


def _same_kind(got, want):
    """A draw of shape () is a number where NumPy's is one (Numba returns a float32 number
    as a Python float: its value is the float32's), a 0-d array where NumPy's is one."""
    assert np.ndim(got) == np.ndim(want) and isinstance(got, np.ndarray) == isinstance(want, np.ndarray)
    got = np.asarray(got, np.asarray(want).dtype)
    assert got.shape == np.shape(want)
    return got


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_uniform_and_bernoulli_draws_under_jit_equal_numpy_bit_for_bit(key):
    compiled, plain = s2s.jit(uniform_draws)(key), uniform_draws(key)
    assert len(compiled) == len(plain) == 8
    for k, (c, p) in enumerate(zip(compiled, plain)):
        c = _same_kind(c, p)
        assert c.tobytes() == np.asarray(p).tobytes(), k


def _ulps(got, want):
    want = np.asarray(want)
    return np.max(np.abs(got - want) / np.spacing(np.abs(want)))


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_logarithmic_draws_under_jit_equal_numpy_within_ulps(key):
    """normal, exponential and truncated_normal go through log: NumPy's float32 log (its own
    SIMD code) and Numba's (libm's logf) differ in the last bit for some 40% of arguments, so
    these draws are equal but for an ulp or three in some draws (measured over 4000 float32
    draws: normal 23 differ, at most by 3 ulp; exponential 213, by 1; truncated_normal 12, by
    3; float64: exponential 2 by 1 ulp)."""
    compiled, plain = s2s.jit(logarithmic_draws)(key), logarithmic_draws(key)
    assert len(compiled) == len(plain) == 9
    for k, (c, p) in enumerate(zip(compiled, plain)):
        c = _same_kind(c, p)
        assert c.dtype == np.asarray(p).dtype and _ulps(c, p) <= 4, k


def test_a_float32_draw_keeps_a_float32_program_float32():
    key, x = random.PRNGKey(9), np.array([0.5, 1.5, -2.0], np.float32)
    got, want = s2s.jit(float32_draw_in_a_program)(key, x), float32_draw_in_a_program(key, x)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ---- NumPy scalars captured from the module keep their type in generated code ----------

K32 = np.float32(1.5)


def array_times_global_float32(x):
    for i in range(3):
        x = np.sin(x * K32)
    return np.sum(x)


def test_a_captured_np_float32_keeps_a_float32_loop_float32_under_jit():
    """K32 is written np.float32(1.5) (as 1.5, Numba would type it float64 and the loop's
    array would change dtype): the way out that the refusal above names works for globals."""
    assert "K32 = np.float32(1.5)" in s2s.source(s2s.jit(s2s.grad(array_times_global_float32)))
    got = s2s.jit(s2s.grad(array_times_global_float32))(X32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, s2s.grad(array_times_global_float32)(X32), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, _central(array_times_global_float32, X32), rtol=1e-4, atol=2e-5)


def test_a_captured_np_float64_promotes_on_the_python_backend_as_numpy_does():
    """C is an np.float64, which NumPy 2 lets promote a float32 (a Python float would not):
    the python backend's value is the function's own, float64."""
    value, grad = s2s.value_and_grad(promoted_by_float64_number)(X32)
    assert type(value) is np.float64 and value == promoted_by_float64_number(X32)
    assert grad.dtype == np.float32


@pytest.mark.parametrize("fun, dtype", [(promoted_by_float64_number, np.float64), (array_stays_float32, np.float32),
                                        (promoted_in_while, np.float64)], ids=lambda v: getattr(v, "__name__", ""))
def test_jit_value_and_grad_value_has_numpys_dtype(fun, dtype):
    value, grad = s2s.jit(s2s.value_and_grad(fun))(X32)
    assert type(value) is dtype and grad.dtype == np.float32
    assert value == pytest.approx(fun(X32), rel=1e-6)


def square_of_a_matrix(x):
    A = x.reshape(2, 2)
    return np.sum(A @ A.T)


def test_jit_jacrev_of_float32_matmuls_pulls_float32_cotangents():
    x = np.array([0.3, 0.7, 1.1, 0.2], np.float32)
    A = x.astype(np.float64).reshape(2, 2)
    want = np.tile(2 * A.sum(axis=0), 2)  # d sum(A A^T) / dA_ij = 2 (the sum of column j)
    jac = s2s.jit(s2s.jacrev(square_of_a_matrix))(x)
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, want, rtol=1e-6)
