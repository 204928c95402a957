"""Under s2s.jit, what Numba cannot compile is an S2SError at the user's statement
(file:line:column), not a raw Numba error naming a line of the generated module: a NumPy function
Numba lacks, a variable of two types (with what to write instead), an internal error of Numba's
compiler (with the known cause it names, if any); an error the program itself raises stays
itself. Numba's error is kept as the S2SError's __cause__."""

import numpy as np
import pytest

import s2s


def squeezed(x):
    y = np.squeeze(np.reshape(x, (1, -1)))  # (which axes have length 1 after a reshape, s2s.jit does not follow)
    return np.sum(y * y)


def test_a_statement_numba_cannot_compile_is_an_s2s_error_at_its_line():
    """Under s2s.jit, Numba's refusal names the user's statement (file:line:column), not a
    line of the generated module; Numba's message stays in __cause__."""
    with pytest.raises(s2s.S2SError, match=r"test_jit_errors.py:\d+:5: Numba cannot compile .*squeeze") as info:
        s2s.jit(s2s.grad(squeezed))(np.ones((3, 1)))
    assert "y = np.squeeze(np.reshape(x, (1, -1)))" in str(info.value) and "np.squeeze(x, axis=k)" in str(info.value)
    assert type(info.value.__cause__).__name__ == "TypingError"
    with pytest.raises(s2s.S2SError, match=r"test_jit_errors.py:\d+:5: .*np.squeeze\(x, axis=k\)"):
        s2s.jit(squeezed)(np.ones((3, 1)))
    np.testing.assert_allclose(s2s.grad(squeezed)(np.ones((3, 1))), 2 * np.ones((3, 1)))  # the python backend


def accumulates_an_array_from_a_number(x, n):
    s = 0.0
    i = 0
    while i < n:  # (a loop starts s as an array where its shape is followed: test_carries.py; not cumsum's)
        s = s + np.cumsum(x) * i
        i += 1
    return np.sum(s)


def int_that_becomes_a_float(a):
    out = 1
    for i in range(3):
        out = out * a
    return out


def test_a_variable_of_two_types_under_jit_says_how_to_type_it():
    """Numba types a variable once: the refusal names the statement and says what to write. A
    number that turns from an int into a float compiles (its tape unifies by dtype: NumberTape)."""
    x = np.array([0.3, 0.7, 0.9])
    with pytest.raises(s2s.S2SError, match=r"test_jit_errors.py:\d+:\d+: .*np.zeros_like\(x\) rather than 0.0"):
        s2s.jit(accumulates_an_array_from_a_number)(x, 3)
    assert s2s.jit(s2s.grad(int_that_becomes_a_float))(1.5) == pytest.approx(3 * 1.5 ** 2)
    # both are right on the python backend (value and closed-form derivatives)
    assert s2s.jit(accumulates_an_array_from_a_number, backend="python")(x, 3) == pytest.approx(
        3 * np.sum(np.cumsum(x)))
    np.testing.assert_allclose(s2s.grad(accumulates_an_array_from_a_number)(x, 3), [9.0, 6.0, 3.0])
    assert s2s.grad(int_that_becomes_a_float)(1.5) == pytest.approx(3 * 1.5 ** 2)


def sums_through_a_helper(x):
    return np.sum(accumulates_an_array_from_a_number(x, 3) * x)


def test_a_refused_statement_in_a_helper_is_named_there_not_at_the_call():
    """The statement Numba cannot compile is in a function the jitted one calls: the refusal names
    the helper's line (in the function, its gradient and its hessian), where the fix is written."""
    line = accumulates_an_array_from_a_number.__code__.co_firstlineno + 4  # s = s + np.cumsum(x) * i
    x = np.array([0.3, 0.7, 0.9])
    for compiled in (s2s.jit(sums_through_a_helper), s2s.jit(s2s.grad(sums_through_a_helper)),
                     s2s.jit(s2s.hessian(sums_through_a_helper))):
        with pytest.raises(s2s.S2SError, match=rf"test_jit_errors.py:{line}:\d+: .*Cannot unify"):
            compiled(x)


def grows_with_a_dict_argument(p, x):
    acc = x * p["w"]
    for i in range(2):
        acc = acc[..., None] * x  # (one more dimension each time: a variable Numba cannot type once)
    return np.sum(acc)


def test_a_typing_failure_is_not_blamed_on_a_dict_argument():
    """A dict argument is not what Numba refuses here: the variable of two types is, at its statement."""
    x = np.array([0.3, 0.7])
    with pytest.raises(s2s.S2SError, match=r"test_jit_errors.py:\d+:5: .*Cannot unify") as refusal:
        s2s.jit(grows_with_a_dict_argument)({"w": 2.0}, x)
    assert "argument p" not in str(refusal.value) and "np.asarray" not in str(refusal.value)
    assert s2s.jit(grows_with_a_dict_argument, backend="python")({"w": 2.0}, x) == pytest.approx(2.0 * np.sum(x) ** 3)


def test_an_internal_error_of_numbas_compiler_is_an_s2s_error_and_a_runtime_error_stays_itself():
    import numba

    from s2s.backends.failures import checked

    @numba.njit
    def pick(A, mask):  # a 2-d boolean mask: Numba's lowering asserts (generated code routes it: runtime.masked)
        return A[mask].sum()

    def user(A, mask):
        return pick(A, mask)

    with pytest.raises(s2s.S2SError, match="Numba failed while compiling the code generated for user") as info:
        checked(pick, (), user)(np.ones((2, 2)), np.ones((2, 2)) > 0)
    assert info.value.origin is not None and info.value.origin.line == user.__code__.co_firstlineno

    @numba.njit
    def refuse(x):
        if x > 1.0:
            raise ValueError("too large")
        return x

    with pytest.raises(ValueError, match="too large"):
        checked(refuse, (), user)(2.0)


def ellipsis_of_a_0d_array(x):
    a = np.array(x[0] * 2.0)
    return a[...] * x[1]


def write_through_a_2d_mask(x):
    y = x * 1.0
    y[x > 0.5] = 0.0
    return np.sum(y)


@pytest.mark.parametrize("fn, x, cause", [
    (ellipsis_of_a_0d_array, np.array([1.0, 3.0]), r"a\[\.\.\.\] of a 0-d array a, .*: a\[\(\)\] reads its number"),
    (write_through_a_2d_mask, np.ones((2, 2)), r"a write through a boolean mask of two or more dimensions.*np\.where\(mask, v, y\)"),
])
def test_numba_lowering_failures_name_their_known_cause(fn, x, cause):
    # each hint for its own failure only (a[...] of a 0-d array was sent to the boolean mask's)
    with pytest.raises(s2s.S2SError, match=f"Numba failed while compiling.*a known cause: {cause}"):
        s2s.jit(fn)(x)


def writes_a_slice(x, y):
    z = x * 1.0
    z[1:3] = y
    return np.sum(z * z)


def test_a_slice_written_from_an_array_of_another_length_raises_value_error_under_jit():
    # (Numba's message is the fixed one of its generic target: s2s.runtime.overloads.numba_errors)
    grad = s2s.jit(s2s.grad(writes_a_slice))
    np.testing.assert_allclose(grad(np.arange(4.0), np.ones(2)), [0.0, 0.0, 0.0, 6.0])
    with pytest.raises(ValueError, match="cannot assign slice"):
        grad(np.arange(4.0), np.ones(3))
    with pytest.raises(ValueError):
        writes_a_slice(np.arange(4.0), np.ones(3))
