"""List comprehensions, lowered to the loop a person writes (`ys = []`, `for`, `if`,
`ys.append(...)`), and builtin sum/max/min of a sequence or a generator, lowered to the loop
Python runs. Derivatives are checked against central differences; refusals name the line."""

import numpy as np
import pytest

import s2s
from finite_differences import central_difference_grad, where

X = np.array([0.3, -0.2, 0.5, 0.9])
Y = np.array([1.1, 0.4, -0.7, 2.0])


# ---- the programs ---------------------------------------------------------------------

def over_range(x, a):
    ys = [x[i] ** 2 * a for i in range(len(x))]
    return ys[0] + 3.0 * ys[2] - ys[3]


def over_an_array_with_a_condition(x, a):
    ys = [np.sin(v) * a for v in x if v > 0]
    return ys[0] + 2.0 * ys[1] + ys[-1] * ys[-1]


def over_enumerate(x):
    ys = [np.exp(v) * i for i, v in enumerate(x)]
    return ys[1] + ys[3] * ys[2]


def over_zip(x, y):
    return np.sum(np.array([a * np.cos(b) for a, b in zip(x, y)]))


def over_enumerate_zip(x, y):
    ys = [i * a * b for i, (a, b) in enumerate(zip(x, y))]
    return ys[1] + ys[2] * ys[3]


def over_reversed_range(x):
    ys = [x[i] * (i + 1) for i in reversed(range(len(x)))]
    return ys[0] * ys[1] - ys[-1]


def over_dict_items(x):
    d = {"a": x[0], "b": x[1] * x[2]}
    ys = [v * v for k, v in d.items()]
    return ys[0] + ys[1]


def several_conditions(x):
    ys = [v * v if v > 0 else -2.0 * v for v in x if v != 0.7 if v < 1.0]
    return ys[0] + ys[1] * ys[-1]


def two_clauses(x, y):
    ps = [a * b for a in x for b in y if a > b]
    return ps[0] + ps[1] * ps[-1]


def second_clause_reads_the_first(x):
    ps = [a * b for a in x for b in x[:2] * a]
    return ps[0] - ps[3] * ps[5]


def shadowing(x):
    i = 3
    ys = [x[i] for i in range(2)]
    return ys[0] * i + ys[1] * x[i]


def shadowing_a_float(x):
    v = 10.0
    ys = [v * v for v in x]
    return ys[1] * v


def in_a_loop(x):
    total = 0.0
    for k in range(3):
        ys = [x[i] * x[k] for i in range(len(x)) if i != k]
        total = total + ys[0] * ys[-1]
    return total


def nested(x, y):
    m = [[a * b for a in x] for b in y]
    return m[1][2] + m[3][0] * m[0][1]


def nested_over_rows(a):
    m = [[np.sin(v) * i for v in row] for i, row in enumerate(a)]
    return m[1][2] * m[2][0] + sum(sum(r) for r in m)


def reads_its_own_name(x):
    x = [v * 2.0 for v in x]
    return x[0] * x[2]


def list_of_a_generator(x):
    ys = list(np.tanh(v) for v in x)
    return ys[1] * ys[2]


def sum_of_a_generator(x, a):
    return sum(np.sin(v) * a for v in x if v > 0)


def sum_of_a_generator_with_start(x):
    return sum((v * w for v in x for w in x), 1.5)


def sum_of_a_list_comprehension(x):
    return sum([v * np.exp(v) for v in x if v < 0.8], start=0.5)


def sum_of_a_list(x):
    ys = [v ** 3 for v in x]
    return sum(ys) + sum(ys, 2.0)


def sum_max_min_of_a_tuple(t):
    return sum(t) + max(t) * min(t)


def max_min_of_a_generator(x):
    return max(v * v for v in x) - min(np.sin(v) for v in x)


def dict_comprehension(x):
    d = {"a": x[0], "b": x[1] * x[2]}
    e = {k: np.exp(v) * 2.0 for k, v in d.items()}
    f = {i: x[i] ** 2 for i in range(len(x)) if i != 1}
    return e["a"] + e["b"] * f[2] + f[3] * f[0]


def sum_of_the_rows(a):
    return np.sum(sum(a) ** 2)


# ---- values and forward mode -----------------------------------------------------------

CASES = [
    (over_range, (X, 1.5)),
    (over_an_array_with_a_condition, (X, 2.0)),
    (over_enumerate, (X,)),
    (over_zip, (X, Y)),
    (over_enumerate_zip, (X, Y)),
    (over_reversed_range, (X,)),
    (several_conditions, (X,)),
    (two_clauses, (X, Y)),
    (second_clause_reads_the_first, (X,)),
    (shadowing, (X,)),
    (shadowing_a_float, (X,)),
    (in_a_loop, (X,)),
    (nested, (X, Y)),
    (nested_over_rows, (np.arange(12.0).reshape(4, 3) / 10,)),
    (reads_its_own_name, (X,)),
    (list_of_a_generator, (X,)),
    (sum_of_a_generator, (X, 2.0)),
    (sum_of_a_generator_with_start, (X,)),
    (sum_of_a_list_comprehension, (X,)),
    (sum_of_a_list, (X,)),
    (max_min_of_a_generator, (X,)),
]
NAMES = [fn.__name__ for fn, _ in CASES]


@pytest.mark.parametrize("fn, args", CASES, ids=NAMES)
def test_jacfwd_matches_central_differences(fn, args):
    for k in range(len(args)):
        want = central_difference_grad(fn, args, k)
        np.testing.assert_allclose(s2s.jacfwd(fn, argnums=k)(*args), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, args", CASES, ids=NAMES)
def test_the_primal_computes_what_python_does(fn, args):
    assert s2s.jit(fn, backend="python")(*args) == pytest.approx(fn(*args), rel=1e-14)


@pytest.mark.parametrize("fn, args", CASES, ids=NAMES)
def test_the_primal_under_numba(fn, args):
    assert s2s.jit(fn)(*args) == pytest.approx(fn(*args), rel=1e-12)


def test_jvp_of_a_comprehension():
    v = np.array([1.0, -0.5, 0.25, 2.0])
    value, tangent = s2s.jvp(over_an_array_with_a_condition, (X, 2.0), (v, 0.0))
    assert value == pytest.approx(over_an_array_with_a_condition(X, 2.0), rel=1e-14)
    want = central_difference_grad(over_an_array_with_a_condition, (X, 2.0), 0) @ v
    assert tangent == pytest.approx(want, rel=1e-6)


def test_a_comprehension_over_a_dict():
    want = central_difference_grad(over_dict_items, (X,), 0)
    np.testing.assert_allclose(s2s.jacfwd(over_dict_items)(X), want, rtol=1e-6, atol=1e-8)
    assert s2s.jit(over_dict_items, backend="python")(X) == pytest.approx(over_dict_items(X), rel=1e-14)


def test_a_dict_comprehension():
    assert s2s.jit(dict_comprehension, backend="python")(X) == pytest.approx(dict_comprehension(X), rel=1e-14)
    want = central_difference_grad(dict_comprehension, (X,), 0)
    np.testing.assert_allclose(s2s.jacfwd(dict_comprehension)(X), want, rtol=1e-6, atol=1e-8)
    code = s2s.source(s2s.jit(dict_comprehension, backend="python"))
    # (a loop over a dict whose keys are known is written out key by key; a range loop stays a loop)
    assert 'v = _seq["b"]' in code and 'e["b"] = ' in code and "f[i] = x[i] ** 2" in code


def test_grad_of_a_dict_comprehension():
    # (d[k] = v in a loop takes reverse mode, with no list grown)
    want = central_difference_grad(dict_comprehension, (X,), 0)
    np.testing.assert_allclose(s2s.grad(dict_comprehension)(X), want, rtol=1e-6, atol=1e-8)


def test_a_tuple_argument():
    t = (1.0, 3.0, 2.0)
    assert s2s.jit(sum_max_min_of_a_tuple)(t) == 9.0
    # d/dt of t0 + t1 + t2 + t1 * t0 (max is t[1], min t[0]) is (1 + 3, 1 + 1, 1)
    assert tuple(s2s.jacfwd(sum_max_min_of_a_tuple)(t)) == pytest.approx((4.0, 2.0, 1.0), rel=1e-14)


def test_sum_of_the_rows_of_a_matrix():
    # builtin sum of a 2-d array adds its rows, as the lowered loop does (python backend: Numba
    # cannot start a sum of arrays at the number 0)
    a = np.arange(12.0).reshape(4, 3) / 10
    assert s2s.jit(sum_of_the_rows, backend="python")(a) == pytest.approx(sum_of_the_rows(a), rel=1e-14)
    want = central_difference_grad(sum_of_the_rows, (a,), 0)
    np.testing.assert_allclose(s2s.jacfwd(sum_of_the_rows)(a), want, rtol=1e-6, atol=1e-8)


# ---- the generated code --------------------------------------------------------------------

def test_the_generated_code_is_the_loop_a_person_writes():
    code = s2s.source(s2s.jit(over_an_array_with_a_condition, backend="python"))
    assert "ys = []" in code and "if v > 0:" in code and "ys.append(np.sin(v) * a)" in code


def test_a_comprehension_variable_does_not_overwrite_the_functions_own():
    assert s2s.jit(shadowing, backend="python")(X) == pytest.approx(X[0] * 3 + X[1] * X[3], rel=1e-14)
    code = s2s.source(s2s.jit(shadowing, backend="python"))
    assert "for i_2 in range(2):" in code and "ys.append(x[i_2])" in code
    assert s2s.jit(shadowing_a_float, backend="python")(X) == pytest.approx(X[1] ** 2 * 10.0, rel=1e-14)


def test_sum_of_a_generator_adds_in_the_loop():
    for fn in (sum_of_a_generator, sum_of_a_list_comprehension):
        code = s2s.source(s2s.jit(fn, backend="python"))
        assert ".append(" not in code and "_sum = _sum + " in code


# ---- reverse mode ---------------------------------------------------------------------------

NO_LIST = (sum_of_a_generator, sum_of_a_generator_with_start, sum_of_a_list_comprehension)
BUILDS_NO_LIST = [c for c in CASES if c[0] in NO_LIST] + [(sum_of_the_rows, (np.arange(12.0).reshape(4, 3) / 10,))]


@pytest.mark.parametrize("fn, args", [c for c in CASES if c[0] not in NO_LIST],
                         ids=[fn.__name__ for fn, _ in CASES if fn not in NO_LIST])
def test_grad_matches_central_differences(fn, args):
    for k in range(len(args)):
        want = central_difference_grad(fn, args, k)
        np.testing.assert_allclose(s2s.grad(fn, argnums=k)(*args), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, args", BUILDS_NO_LIST, ids=[fn.__name__ for fn, _ in BUILDS_NO_LIST])
def test_grad_of_sums_that_build_no_list(fn, args):
    # sum(f(v) for v in x) adds in the loop, with no list between: reverse mode takes it today
    for k in range(len(args)):
        want = central_difference_grad(fn, args, k)
        np.testing.assert_allclose(s2s.grad(fn, argnums=k)(*args), want, rtol=1e-6, atol=1e-8)


def test_hessian_of_a_sum_of_a_generator():
    # 1.5 + sum(v * w for v in x for w in x) is 1.5 + sum(x) ** 2, whose Hessian is 2 everywhere
    np.testing.assert_allclose(s2s.hessian(sum_of_a_generator_with_start)(X), np.full((4, 4), 2.0), rtol=1e-14)


# ---- refusals --------------------------------------------------------------------------------

def array_of_a_generator(x):
    return np.sum(np.array(v * 2.0 for v in x))


def tuple_of_a_generator(x):
    return np.sum(tuple(v * 2.0 for v in x))


def set_comprehension(x):
    return len({v for v in x})


def unsupported_inside(x):
    ys = [np.sin(v) * v.byteswap() for v in x]
    return ys[0]


def starred_target(x):
    pairs = [(x[0], x[1], x[2]), (x[1], x[2], x[3])]
    return sum(a * len(b) for a, *b in pairs)


def comprehension_variable_does_not_leak(x):
    ys = [x[j] for j in range(2)]
    return ys[0] * j  # noqa: F821 (a NameError in Python 3, as in s2s)


REFUSALS = [
    (array_of_a_generator, "not of array .*0-d object array", "np.array(v * 2.0 for v in x)"),
    (tuple_of_a_generator, "supported only as the one argument of sum, max, min or list, not of tuple",
     "tuple(v * 2.0"),
    (set_comprehension, "set comprehensions are not supported", "{v for v in x}"),
    (unsupported_inside, r"the method \.byteswap\(\) is not supported", "v.byteswap()"),
    (comprehension_variable_does_not_leak, "the name 'j' is not defined", "ys[0] * j"),
    # (a starred target was read as `a, b = item`: a raw ValueError when the loop ran)
    (starred_target, "a for loop unpacks into plain names only", "for a, *b in pairs"),
]


@pytest.mark.parametrize("fn, message, text", REFUSALS, ids=[r[0].__name__ for r in REFUSALS])
def test_refusals_name_the_users_line(fn, message, text):
    # (s2s.jacfwd first runs the function as Python, which raises its own NameError for j)
    transforms = [lambda f: s2s.jit(f, backend="python")]
    if fn is not comprehension_variable_does_not_leak:
        transforms.append(s2s.jacfwd)
    for transform in transforms:
        with pytest.raises(s2s.S2SError, match=message) as info:
            transform(fn)(X)
        assert where(fn, text) in str(info.value)
