"""The transform x rule matrix: every derivative rule of the registry (a row, with its example
program in tests/rule_examples.py) through every transform (a column), checked against central
differences in float64:

  jvp, vjp      check_grads on the python backend: the tangent against central differences,
                the adjoint by <u, J v> = <J^T u, v> and component by component;
  float32       the derivative at float32 arguments: float32 results, within float32's precision
                of the central differences;
  vmap          s2s.vmap of the example over two examples against each example alone, and
                s2s.vmap of the gradient of <w, f> (w fixed weights) against central differences
                of each example;
  second order  the Hessian of <w, f>, forward over reverse, against central differences of its
                gradient (check_grads(order=2));
  jit           check_grads with backend="cpu": the modules s2s.jit compiles with Numba; a rule
                Numba cannot compile must be refused at the user's file:line:column;
  cuda          for rules with a kernel form (Facts.kernel: np.sin is math.sin in a kernel),
                s2s.jit(s2s.vmap(s2s.grad(f)), backend="cuda") of a function of numbers, in
                Numba's CUDA simulator (conftest.py), against central differences.

The jvp and vjp columns run every rule on every run. The jit and cuda columns compile, which
takes minutes for all of them, and float32, vmap and second order together take minutes too (the
suite's budget): a run checks a sample of each, drawn with a seed that the run prints at its end
(S2S_RULE_MATRIX_SEED=N draws the same sample again; successive runs cover every rule), and
S2S_RULE_MATRIX=full checks every rule in every column. A rule without an example fails test_every_rule_has_an_example; a cell
known to fail is a strict expected failure with its reason (KNOWN_GAPS), so that a fix is noticed.
"""

import importlib.util
import math
import os
import random
import re

import numpy as np
import pytest

import s2s
from s2s import S2SError, rules, runtime
from s2s.testing import check_grads
from s2s.tree_util import pytree

from rule_examples import ARGS, EXAMPLES, arity, example_of

FULL = os.environ.get("S2S_RULE_MATRIX") == "full"
SEED = int(os.environ.get("S2S_RULE_MATRIX_SEED", "0"))  # conftest.py draws one per run
SAMPLED = {"jit": 16, "cuda": 6, "float32": 110, "vmap": 130, "second_order": 110}  # rules checked per run

# (rule, column) -> why the cell fails: a strict expected failure until it is fixed. Each of these
# is a refusal (S2SError at the user's line), not a wrong number.
_NO_SECOND_ORDER = "second order refused: a helper of its reverse rule has no derivative rule"
KNOWN_GAPS: dict = {
    **{(fn, "second_order"): _NO_SECOND_ORDER
       for fn in (np.polyval, runtime.polyval, np.interp, np.corrcoef, runtime.batched_product)},
}


def _label(obj) -> str:
    module = getattr(obj, "__module__", None) or ("numpy" if isinstance(obj, np.ufunc) else "")
    return f"{module}.{getattr(obj, '__name__', obj)}".lstrip(".")


def _rule_objects() -> list:
    """Every function with a derivative template (not the one-line declarations)."""
    return [obj for obj, found in rules.load_rules().items() if found.kind == "rule"]


def _has_reverse(obj) -> bool:
    return bool(rules.lookup(obj).reverse)


def _spelling(obj) -> str | None:
    """How a function of numbers with a kernel form is written in a user's program."""
    if isinstance(obj, np.ufunc):
        return f"np.{obj.__name__}"
    if getattr(obj, "__module__", None) == "math":
        return f"math.{obj.__name__}"
    return None


def _kernel_rules() -> list:
    """Rules of functions of numbers that a CUDA kernel computes (Facts.kernel), of one or two."""
    return [obj for obj in _rule_objects()
            if _spelling(obj) and rules.facts(obj).kernel is not None and arity(obj) in (1, 2)]


def _cells(column: str, objects: list) -> list:
    """The parameters of one column: every rule, or on a sampled column a seeded sample."""
    if column in SAMPLED and not FULL:
        objects = sorted(objects, key=_label)
        objects = random.Random(f"{SEED}:{column}").sample(objects, min(SAMPLED[column], len(objects)))
    cells = []
    for obj in objects:
        reason = KNOWN_GAPS.get((obj, column))
        marks = [pytest.mark.xfail(strict=True, raises=S2SError, reason=reason)] if reason else []
        cells.append(pytest.param(obj, marks=marks, id=_label(obj)))
    return cells


# ---- the example programs, written to a module of their own (s2s reads their source) -------------


def _weights(value, rng) -> list:
    """Fixed weights of each leaf of an example's result: <w, f> is a number to differentiate."""
    return [rng.uniform(0.5, 1.5, np.shape(leaf)) if np.ndim(leaf) else float(rng.uniform(0.5, 1.5))
            for leaf in pytree.leaves(value)]


def _literal(weight) -> str:
    return repr(weight) if isinstance(weight, float) else f"np.array({weight.tolist()!r})"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """For each rule: `example_k`, its example, and `total_k`, <w, example_k> (a number)."""
    lines = ["import builtins", "import math", "import operator", "", "import numpy as np", "import scipy.linalg", "import scipy.signal",
             "import scipy.special", "",
             "from s2s import runtime", ""]
    rng = np.random.default_rng(11)
    names = {}
    examples = {obj: example_of(obj) for obj in _rule_objects() if example_of(obj) is not None}
    for k, (obj, (params, body)) in enumerate(examples.items()):
        if "return" not in body:
            body = f"return {body}"
        lines += ["", f"def example_{k}({params}):", f"    {body}", ""]
        names[obj] = k
    path = tmp_path_factory.mktemp("rule_matrix") / "rule_examples_module.py"
    path.write_text("\n".join(lines))
    module = _load(path)
    for obj, k in names.items():  # <w, f> of each example, with weights of its result's shape
        params = examples[obj][0]
        value = getattr(module, f"example_{k}")(*_arguments(obj))
        weights = _weights(value, rng)
        if isinstance(value, tuple):  # (a tuple of arrays, or a namedtuple)
            terms = [f"np.sum(out[{j}] * W_{k}_{j})" for j in range(len(weights))]
        else:
            terms = [f"np.sum(out * W_{k}_0)"]
        lines += [""] + [f"W_{k}_{j} = {_literal(w)}" for j, w in enumerate(weights)]
        lines += ["", f"def total_{k}({params}):", f"    out = example_{k}({params})", f"    return {' + '.join(terms)}", ""]
    path.write_text("\n".join(lines))
    module = _load(path)
    return {obj: (getattr(module, f"example_{k}"), getattr(module, f"total_{k}")) for obj, k in names.items()}


def _load(path):
    spec = importlib.util.spec_from_file_location("rule_examples_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _params(obj) -> list[str]:
    return [p.strip() for p in example_of(obj)[0].split(",")]


def _arguments(obj) -> list:
    return [ARGS[p] for p in _params(obj)]


def _modes(obj) -> list[str]:
    found = rules.lookup(obj)
    return [m for m, has in (("fwd", found.forward), ("rev", found.reverse)) if has]


def _central_gradient(fun, args: list, eps: float = 1e-6) -> list:
    """The gradient of a function of numbers, arrays and namedtuples of numbers, by central
    differences in float64, leaf by leaf, in the structure of each argument."""
    gradient = []
    for k, arg in enumerate(args):
        leaves, structure = pytree.flatten(arg)
        leaf_gradients = []
        for j, leaf in enumerate(leaves):
            values = np.array(leaf, dtype=np.float64)
            g = np.zeros(values.shape)
            for index in np.ndindex(values.shape):
                sides = []
                for step in (eps, -eps):
                    moved = values.copy()
                    moved[index] += step
                    moved_leaves = list(leaves)
                    moved_leaves[j] = moved if np.ndim(leaf) else float(moved)
                    moved_args = list(args)
                    moved_args[k] = pytree.unflatten(structure, moved_leaves)
                    sides.append(float(fun(*moved_args)))
                g[index] = (sides[0] - sides[1]) / (2 * eps)
            leaf_gradients.append(g)
        gradient.append(leaf_gradients)
    return gradient


def _assert_gradient(got: tuple, want: list, rtol: float, what: str) -> None:
    for k, (got_arg, want_leaves) in enumerate(zip(got, want)):
        for j, (g, w) in enumerate(zip(pytree.leaves(got_arg), want_leaves)):
            scale = max(1.0, float(np.max(np.abs(w))) if np.size(w) else 1.0)
            assert np.allclose(np.asarray(g, np.float64), w, rtol=rtol, atol=rtol * scale), (
                f"{what}: leaf {j} of argument {k} is {g!r} by s2s, {w!r} by central differences")


# ---- the columns -------------------------------------------------------------------------------


def test_every_rule_has_an_example():
    missing = [_label(obj) for obj in _rule_objects() if example_of(obj) is None]
    assert not missing, f"rules without an example in tests/rule_examples.py EXAMPLES: {missing}"


def test_every_example_is_of_a_rule():
    stale = [_label(obj) for obj in EXAMPLES if obj not in _rule_objects()]
    assert not stale, f"examples of functions with no derivative rule: {stale}"


@pytest.mark.parametrize("obj", _cells("jvp", [o for o in _rule_objects() if rules.lookup(o).forward]))
def test_jvp(obj, programs):
    check_grads(programs[obj][0], _arguments(obj), modes=("fwd",), backend="python")


@pytest.mark.parametrize("obj", _cells("vjp", [o for o in _rule_objects() if _has_reverse(o)]))
def test_vjp(obj, programs):
    check_grads(programs[obj][0], _arguments(obj), modes=("rev",), backend="python")


def _float32(value):
    """value with every float leaf in float32 (numbers as np.float32)."""
    leaves, structure = pytree.flatten(value)
    return pytree.unflatten(structure, [np.asarray(leaf, np.float32) if np.ndim(leaf) else np.float32(leaf)
                                        for leaf in leaves])


@pytest.mark.parametrize("obj", _cells("float32", [o for o in _rule_objects() if _has_reverse(o)]))
def test_float32(obj, programs):
    example, total = programs[obj]
    args = _arguments(obj)
    want = _central_gradient(total, args)
    got = s2s.grad(total, argnums=tuple(range(len(args))))(*[_float32(a) for a in args])
    for arg in got:
        for leaf in pytree.leaves(arg):
            if isinstance(leaf, np.ndarray):
                assert leaf.dtype == np.float32, f"a float64 adjoint ({leaf.dtype}) of float32 arguments"
    _assert_gradient(got, want, rtol=2e-3, what=f"gradient of <w, {_label(obj)}> at float32 arguments")


def _batched(obj) -> tuple[list, list]:
    """Two examples of the arguments (the second moved a little), and their stacks on axis 0."""
    rng = np.random.default_rng(5)
    examples = [_arguments(obj)]
    examples.append([pytree.unflatten(pytree.flatten(a)[1], [leaf + 0.01 * rng.uniform(-1, 1, np.shape(leaf))
                                                              for leaf in pytree.leaves(a)]) for a in examples[0]])
    stacked = [pytree.unflatten(pytree.flatten(a)[1], [np.stack([pytree.leaves(e[k])[j] for e in examples])
                                                       for j in range(len(pytree.leaves(a)))])
               for k, a in enumerate(examples[0])]
    return examples, stacked


@pytest.mark.parametrize("obj", _cells("vmap", _rule_objects()))
def test_vmap(obj, programs):
    example, total = programs[obj]
    examples, stacked = _batched(obj)
    batched = s2s.vmap(example)(*stacked)
    for b, args in enumerate(examples):
        for got, want in zip(pytree.leaves(batched), pytree.leaves(example(*args))):
            np.testing.assert_allclose(np.asarray(got)[b], want, rtol=1e-10, atol=1e-12,
                                       err_msg=f"example {b} of s2s.vmap({_label(obj)})")
    if not _has_reverse(obj):
        return
    gradients = s2s.vmap(s2s.grad(total, argnums=tuple(range(len(stacked)))))(*stacked)
    for b, args in enumerate(examples):
        got = tuple(pytree.unflatten(pytree.flatten(g)[1], [np.asarray(leaf)[b] for leaf in pytree.leaves(g)])
                    for g in gradients)
        _assert_gradient(got, _central_gradient(total, args), rtol=1e-5,
                         what=f"example {b} of s2s.vmap(s2s.grad(<w, {_label(obj)}>))")


@pytest.mark.parametrize("obj", _cells("second_order", [o for o in _rule_objects() if _has_reverse(o)]))
def test_second_order(obj, programs):
    check_grads(programs[obj][1], _arguments(obj), order=2, modes=(), backend="python")


@pytest.mark.parametrize("obj", _cells("jit", _rule_objects()))
def test_jit(obj, programs):
    try:
        check_grads(programs[obj][0], _arguments(obj), modes=_modes(obj), backend="cpu")
    except S2SError as refusal:
        message = str(refusal)
        assert re.search(r"rule_examples_module\.py:\d+:\d+", message), f"a refusal without the user's line: {message}"
        pytest.xfail(f"refused under s2s.jit: {message.splitlines()[0]}")


@pytest.fixture(scope="module")
def kernel_programs(tmp_path_factory):
    """For each rule with a kernel form: a function of one or two numbers that calls it."""
    lines = ["import math", "", "import numpy as np", ""]
    names = {}
    for k, obj in enumerate(_kernel_rules()):
        params = "s, t" if arity(obj) == 2 else "s"
        lines += ["", f"def kernel_{k}({params}):", f"    return {_spelling(obj)}({params}) * s", ""]
        names[obj] = k
    path = tmp_path_factory.mktemp("rule_matrix_kernels") / "kernel_examples.py"
    path.write_text("\n".join(lines))
    module = _load(path)
    return {obj: getattr(module, f"kernel_{k}") for obj, k in names.items()}


@pytest.mark.parametrize("obj", _cells("cuda", _kernel_rules()))
def test_cuda(obj, kernel_programs):
    fun = kernel_programs[obj]
    n = arity(obj)
    rng = np.random.default_rng(3)
    # numbers where the example's parameters have theirs: x and s in (0.2, 0.8), y and t in (1.1, 1.9)
    columns = [(1.1 + 0.8 * rng.random(4)) if p in ("y", "t") else (0.2 + 0.6 * rng.random(4)) for p in _params(obj)]
    got = s2s.jit(s2s.vmap(s2s.grad(fun, argnums=tuple(range(n)))), backend="cuda")(*columns)
    for b in range(4):
        args = [float(c[b]) for c in columns]
        want = _central_gradient(fun, args)
        _assert_gradient(tuple(np.asarray(g)[b] for g in got), want, rtol=1e-5,
                         what=f"example {b} of the CUDA kernel of s2s.vmap(s2s.grad({_spelling(obj)}))")


def test_kernel_column_covers_the_elementwise_rules():
    """The cuda column has rows: the rules of functions of numbers with a kernel form."""
    assert {math.sin, np.sin, np.arctan2} <= set(_kernel_rules())
