"""Every construct s2s does not handle raises S2SError with file:line:column and a way out."""

import cmath
import os
import re

import numpy as np
import pytest

import refused
import s2s
from finite_differences import central_difference_grad

CASES = {
    "uses_try": ("`except ... as name` is not supported", "except ValueError as err"),
    "uses_with": ("with statements are not supported", "with open"),
    "uses_global": ("global statements are not supported", "global COUNTER"),
    # (a nested def is written out where it is called: tests/test_nested_functions.py)
    "uses_nonlocal": ("nonlocal statements are not supported", "nonlocal total"),
    "uses_yield": ("yield is not supported", "yield x"),
    "uses_lambda": ("lambda expressions are supported only as the functions passed to s2s.lax forms", "lambda t"),
    "uses_class": ("class definitions are not supported", "class Box"),
    "uses_comprehension": ("set comprehensions are not supported", "{t * 2.0 for t in x}"),
    "no_rule": ("no derivative rule for unwrap", "np.unwrap"),
    # s2s differentiates real programs
    "complex_fft": ("does not differentiate fft with respect to its arguments; its result is complex", "np.fft.fft"),
    "complex_literal": ("a complex number meets a differentiated value here", "x * 1j"),
    "complex_made": ("a complex number meets a differentiated value here", "x + c"),
    "writes_argument": ("writing into y changes the argument x in place", "y[0] = 1.0"),
    "writes_through_alias": ("would also change z", "y[0] = x"),
    "arange_of_active": ("does not differentiate arange", "np.arange"),
    "bare_return": ("a bare return has no value", "return"),
    # input checks run on the primal values where they are plain (tests/test_control_flow.py)
    "raises_own_exception": ("raise is supported of Python's builtin exceptions", "raise ShapeError"),
    "raises_a_computed_message": ("the arguments of a raised exception are constants here", "raise ValueError"),
    "raises_again": ("a bare raise (re-raising) is not supported", "raise"),
    "in_a_computed_tuple": ("`in` and `not in` are supported alone, against a tuple of constants", "if mode in"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refusal_names_file_line_column_and_construct(name):
    reason, code = CASES[name]
    fn = getattr(refused, name)
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fn).source
    message = str(info.value)
    assert reason in message
    match = re.match(r"(.+):(\d+):(\d+): ", message)
    assert match, message
    assert os.path.basename(match.group(1)) == "refused.py"
    line = int(match.group(2))
    with open(refused.__file__) as handle:
        assert code in handle.read().splitlines()[line - 1]
    assert ";" in message.splitlines()[0] or "hint" not in message  # a way out follows the reason


def test_refusal_of_recursion():
    with pytest.raises(s2s.S2SError, match="recursive calls are not supported") as info:
        s2s.grad(refused.recursive).source
    # The location is the recursive call: every refusal names a file, line and column.
    assert info.value.origin is not None and info.value.origin.filename.endswith("refused.py")
    assert "return recursive(x * 2.0, n - 1)" in info.value.origin.text


def test_gradient_with_respect_to_integer_is_an_error():
    def f(x, n):
        return x * n

    with pytest.raises(s2s.S2SError, match="holds integers"):
        s2s.grad(f, argnums=1)(2.0, 3)
    with pytest.raises(s2s.S2SError, match="holds integers"):
        s2s.grad(f)(np.arange(3), 3.0)


def test_grad_needs_scalar_output():
    def f(x):
        return x * 2.0

    with pytest.raises(s2s.S2SError, match="scalar output"):
        s2s.grad(f)(np.ones(3))


def test_builtin_is_refused():  # (lambdas are taken: tests/test_lambdas.py)
    with pytest.raises(s2s.S2SError, match="not builtin_function_or_method objects"):
        s2s.grad(len).source  # (NumPy and math functions are taken: tests/test_jax_tutorial.py)


class Scaled:
    def __init__(self):
        self.scale = 2.0

    def loss(self, w):
        return np.sum(w ** 2) * self.scale


def test_a_bound_method_is_refused_with_the_spelling_that_works():
    model, w = Scaled(), np.array([0.5, -1.0])
    with pytest.raises(s2s.S2SError, match=r"bound methods \(Scaled.loss.*s2s.grad\(Scaled.loss, argnums=1\)"):
        s2s.grad(model.loss)(w)
    np.testing.assert_allclose(s2s.grad(Scaled.loss, argnums=1)(model, w), 4.0 * w)  # the way out, as it says


HISTORY = []


def records_into_a_global(x):
    HISTORY.append(x)
    return np.sum(x ** 2)


def test_a_change_to_a_global_list_says_what_to_do_instead():
    with pytest.raises(s2s.S2SError, match=r"HISTORY.append\(...\) changes HISTORY, which is not a variable of this "
                                           r"function.*has_aux=True") as info:
        s2s.grad(records_into_a_global)(np.ones(2))
    assert "test_refusals.py:" in str(info.value) and HISTORY == []


def test_a_function_without_a_rule_points_to_custom_rules():
    def mantissas(x):
        return np.sum(np.frexp(x)[0])

    with pytest.raises(s2s.S2SError, match="no derivative rule for frexp.*s2s.custom_vjp") as info:
        s2s.grad(mantissas)(np.ones(2))
    assert "test_refusals.py:" in str(info.value)


def test_in_place_update_of_a_shared_array_is_refused_when_it_runs():
    with pytest.raises(s2s.S2SError, match="updates an array that z also refers to") as info:
        s2s.grad(refused.augmented_alias)(np.ones(3))
    assert "refused.py:" in str(info.value)
    # The same code on numbers is ordinary Python: y is rebound, z keeps its value.
    assert s2s.grad(refused.augmented_scalar_alias)(1.5) == pytest.approx(2 * 1.5 + 1.0)


def test_update_after_reading_an_element_is_refused_only_where_it_is_a_view():
    """`y = x[1]; x += 3.0`: for a 1-d x, y is a number and NumPy leaves it alone, so s2s
    differentiates it; for a 2-d x, y is a row of x that NumPy changes too: refused."""
    x = np.array([0.3, -1.2, 2.0])
    expected = central_difference_grad(refused.update_after_element, (x,), 0)
    np.testing.assert_allclose(s2s.grad(refused.update_after_element)(x), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(refused.update_after_element))(x), expected, rtol=1e-6, atol=1e-8)
    direction = np.array([0.5, 1.0, -2.0])
    value, tangent = s2s.jvp(refused.update_after_element, (x,), (direction,))
    assert value == pytest.approx(refused.update_after_element(x))
    assert tangent == pytest.approx(expected @ direction)
    np.testing.assert_allclose(s2s.vmap(refused.update_after_element)(np.stack([x, 2 * x])),
                               [refused.update_after_element(x), refused.update_after_element(2 * x)])
    rows = np.ones((3, 2))
    with pytest.raises(s2s.S2SError, match="updates an array that y also refers to") as info:
        s2s.grad(refused.update_after_element)(rows)
    assert "refused.py:" in str(info.value) and "write `x = x + ...`" in str(info.value)
    with pytest.raises(s2s.S2SError, match="updates an array that y also refers to"):
        s2s.jvp(refused.update_after_element, (rows,), (rows,))
    with pytest.raises(s2s.S2SError, match="updates an array that y also refers to"):
        s2s.vmap(refused.update_after_element)(np.ones((2, 3, 2)))


def test_update_after_an_element_bound_on_one_branch_keeps_the_conservative_refusal():
    """The check cannot read a name that is not bound on every path: it refuses any array,
    and never fails with an unbound name."""
    for c in (1.0, -1.0):
        with pytest.raises(s2s.S2SError, match="updates an array that y may also refer to"):
            s2s.grad(refused.update_after_element_on_one_branch)(np.ones(3), c)
    # A number x passes it, y unbound (the branch that reads x[1] is not taken).
    f = s2s.jit(refused.update_after_element_on_one_branch, backend="python")
    assert f(1.5, -1.0) == pytest.approx(refused.update_after_element_on_one_branch(1.5, -1.0))


def test_jit_of_the_primal_keeps_numpy_aliasing_or_refuses():
    """s2s.jit(f) runs the same alias checks as the transforms: `z = y; z += x` on arrays
    changes y in NumPy, so it is refused rather than silently rebound."""
    with pytest.raises(s2s.S2SError, match="updates an array that y also refers to"):
        s2s.jit(refused.add_through_alias, backend="python")(np.array([0.5, 0.2, 0.1]))
    # Under Numba too, with the same message (file, line, column and a way out).
    with pytest.raises(s2s.S2SError, match=r"refused\.py:\d+:\d+: `x \+= ...` updates an array that y"):
        s2s.jit(refused.update_after_element)(np.ones((3, 2)))
    assert s2s.jit(refused.update_after_element)(np.ones(3)) == pytest.approx(2.0 * 15.0)


def test_closures_with_different_values_get_different_code():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2s.grad(refused.make_scaled(1.0))(x), 2 * x)
    np.testing.assert_allclose(s2s.grad(refused.make_scaled(3.0))(x), 6 * x)


# Every program of refused.py, with arguments that make s2s refuse it (some refuse only for
# some arguments, when the code runs): each refusal names refused.py, a line and a column.
SWEEP = {
    "uses_try": (1.0,), "uses_with": (1.0,), "uses_global": (1.0,), "uses_nonlocal": (1.0,),
    "uses_yield": (1.0,), "uses_lambda": (1.0,), "uses_class": (1.0,), "uses_comprehension": (np.ones(3),),
    "no_rule": (np.ones(3),), "writes_argument": (np.ones(3),), "writes_through_alias": (1.0,),
    "augmented_alias": (np.ones(3),), "update_after_element": (np.ones((3, 2)),),
    "update_after_element_on_one_branch": (np.ones(3), -1.0), "arange_of_active": (1.0,),
    "recursive": (1.0, 2), "bare_return": (1.0,), "writes_module_array": (1.0,),
    "writes_module_array_through_alias": (1.0,), "norm_of_unknown_order": (np.ones(3),),
    "reads_a_dict_global": (1.0,), "complex_fft": (np.ones(3),), "complex_literal": (np.ones(3),),
    "complex_made": (np.ones(3),), "raises_own_exception": (np.ones(3),), "raises_a_computed_message": (np.ones(3),),
    "raises_again": (np.ones(3),), "in_a_computed_tuple": (np.ones(3), 2.0),
}
# Not refused: they show what is accepted next to what is not.
ACCEPTED = {"augmented_scalar_alias", "add_through_alias", "make_scaled"}


def test_the_sweep_covers_every_program_of_refused_py():
    import inspect

    programs = {n for n, v in vars(refused).items() if inspect.isfunction(v) and v.__module__ == refused.__name__}
    assert programs - ACCEPTED == set(SWEEP)


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_every_refusal_names_file_line_and_column(name):
    fn = getattr(refused, name)
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(fn)(*SWEEP[name])
    match = re.match(r"(.+):(\d+):(\d+): ", str(info.value))
    assert match, str(info.value)
    assert os.path.basename(match.group(1)) == "refused.py"
    line, column = int(match.group(2)), int(match.group(3))
    with open(refused.__file__) as handle:
        text = handle.read().splitlines()[line - 1]
    assert line > 1 and 1 <= column <= len(text) and text.strip()


def test_writing_into_a_module_array_names_it():
    with pytest.raises(s2s.S2SError, match=r"refused\.py:\d+:\d+: 'TABLE' is an array of the module"):
        s2s.grad(refused.writes_module_array)(1.0)
    with pytest.raises(s2s.S2SError, match=r"refused\.py:\d+:\d+: writing into t changes 'TABLE'"):
        s2s.jit(refused.writes_module_array_through_alias, backend="python")(1.0)
    assert not refused.TABLE.any()  # refused before anything ran


# ---- s2s.jit with arguments Numba cannot take --------------------------------------


def _weighted(x, w):
    return np.sum(np.sin(x) * w)


@pytest.mark.parametrize("transform", ["primal", "grad"])
@pytest.mark.parametrize("bad,says", [
    ((None,), "argument w is None"),
    (("text",), "argument w is a str"),
    ((object(),), "argument w is an object, which Numba cannot take"),
])
def test_jit_names_the_function_and_the_argument_numba_cannot_take(transform, bad, says):
    f = s2s.jit(_weighted) if transform == "primal" else s2s.jit(s2s.grad(_weighted))
    with pytest.raises(s2s.S2SError) as info:
        f(np.ones(3), *bad)
    message = str(info.value)
    assert "s2s.jit of _weighted" in message and says in message
    assert re.match(r".*test_refusals\.py:\d+:\d+: ", message), message
    assert "backend='python'" in message


def test_jit_names_a_list_passed_for_an_array():
    with pytest.raises(s2s.S2SError, match=r"test_refusals\.py:\d+:\d+: s2s.jit of _weighted: argument x is a "
                                           r"tuple of 3 \(a list or tuple becomes a tuple"):
        s2s.jit(_weighted)([1.0, 2.0, 3.0], 2.0)
    # NumPy takes the list: the python backend runs it as NumPy does.
    assert s2s.jit(_weighted, backend="python")([1.0, 2.0, 3.0], 2.0) == pytest.approx(_weighted(np.arange(1.0, 4.0), 2.0))


# ---- refusals in jacrev, of a forward-only rule, and of a runtime helper name the user's statement


def repeated_write(x):
    y = np.zeros(3)
    y[np.array([1, 1, 2])] = x * 2.0
    return np.sum(y ** 2)


def test_jacrev_refusals_name_the_users_statement():
    x = np.array([0.3, 0.7, 1.1])
    for jacobian in (s2s.jacrev(repeated_write), s2s.jit(s2s.jacrev(repeated_write))):
        with pytest.raises(s2s.S2SError) as info:
            jacobian(x)
        assert info.value.origin is not None and info.value.origin.filename.endswith("test_refusals.py")


def first_of_many(*args):
    return np.sum(np.tril(args[0]) ** 2)


@pytest.mark.parametrize("transform", [s2s.hessian, s2s.vmap, lambda f: s2s.grad(s2s.grad(f))],
                         ids=["hessian", "vmap", "grad-grad"])
def test_star_args_are_refused_by_the_doors_that_do_not_bind_them(transform):
    """grad, vjp, jvp, jit and the Jacobians bind argnums into *args (test_api.py); second
    derivatives and vmap do not, and say what to do instead."""
    with pytest.raises(s2s.S2SError, match=r"which takes \*args, is not supported \(grad, value_and_grad, vjp, jvp "
                                           r"and jit are\); give .* e\.g\. def g\(a, b\): return first_of_many\(a, b\)"):
        transform(first_of_many)(np.eye(3))


def test_a_forward_only_rule_is_refused_in_reverse_mode():
    def through_take(x):
        return np.sum(s2s.runtime.take(x, np.array([0, 2])) ** 2)

    with pytest.raises(s2s.S2SError, match="forward-mode rule only"):
        s2s.grad(through_take)(np.array([0.5, 0.7, 0.9]))


def writes_through_a_repeated_index(x, v):
    z = x * 1.0
    idx = np.array([0, 0, 2])
    z[idx] += v
    return np.sum(z * z)


def test_a_runtime_refusal_names_the_users_statement():
    """A runtime helper's refusal while generated code runs as NumPy (a write through an index
    array with repeated entries) is an S2SError at the user's statement."""
    x, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.7, 0.9])
    with pytest.raises(s2s.S2SError, match=r"test_refusals.py:\d+:5: a write x\[idx\] = v whose index array repeats") as info:
        s2s.grad(writes_through_a_repeated_index, argnums=(0, 1))(x, v)
    assert "z[idx] += v" in str(info.value)
    assert type(info.value.__cause__) is ValueError


# ---- library functions that generated code names, and one it cannot name -----------------


def power_spectrum(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2)


def complex_root(x):
    return cmath.sqrt(x[0]).real * 2.0


def test_np_fft_is_named_in_generated_code_and_a_function_s2s_cannot_name_has_its_line():
    x = np.array([0.3, 1.2, -0.5, 0.7])
    # (np.fft.fft is named in generated code: the primal under backend="python" runs, and is not
    # refused with no line as "cannot name <function fft>")
    assert s2s.jit(power_spectrum, backend="python")(x) == pytest.approx(power_spectrum(x), rel=1e-14)
    with pytest.raises(s2s.S2SError, match="does not differentiate fft with respect to its arguments; its result is complex"):
        s2s.grad(power_spectrum)(x)
    with pytest.raises(s2s.S2SError, match=r"test_refusals.py:\d+:\d+: cannot name <built-in function sqrt>"):
        s2s.jit(complex_root, backend="python")(x)
