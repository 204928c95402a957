"""Parity of the two backends over the suite's programs: every program of the corpora (tests/programs.py,
idiom_cases.py, shadowing_cases.py, custom_rule_cases.py, test_comprehensions.py, the per-example transforms
of cuda_cases.py and cuda_random_cases.py, the functions of examples/, and limit_cases.py) gives the same
value and gradient on the python backend and under s2s.jit (Numba), to 1e-10 relative; or, when the program
is on the written list of what s2s.jit does not compile (s2s/limits.py, rendered as docs/pages/limits.md; LISTED
below names each program's limit), s2s.jit refuses it with an S2SError at the user's file:line whose message
is its limit's and which names a way out. limit_cases.py holds one program per limit and its way out, which
must compile and agree. `s2s check` is held to the same programs: it says no where s2s.jit refuses a limit
it can see without calling the function, at the same line, and never where s2s.jit compiles. The rule
examples are swept by tests/test_rule_matrix.py::test_jit, not here.

Each program is compiled twice (its primal and its gradient), which takes seconds: a run checks a seeded
sample of the programs off the list (S2S_PARITY_SEED=N draws another; the default is fixed; S2S_PARITY_ALL=1
checks all), every listed program (refused before Numba compiles: cheap) and a sample of the way outs.
`python tests/test_jit_parity.py [names...]` sweeps them outside pytest and prints one line per program
(agree / limit / DISAGREE / crash / refused / compiles, and where s2s check disagrees).
"""

import os
import sys

if __name__ == "__main__":  # (as conftest.py sets them for the suite, before numba is imported)
    os.environ.setdefault("NUMBA_OPT", "0")
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import importlib.util
import random
import re
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import s2s
from s2s import limits, random as s2s_random
from s2s.doors import check as checking
from s2s.tree_util import pytree

sys.path.insert(0, os.path.dirname(__file__))  # (run as a script: the corpora import each other by name)

import cuda_cases  # noqa: E402
import cuda_random_cases  # noqa: E402
import custom_rule_cases  # noqa: E402
import idiom_cases  # noqa: E402
import limit_cases  # noqa: E402
import programs  # noqa: E402
import shadowing_cases  # noqa: E402
import test_comprehensions  # noqa: E402

SAMPLE = 15
WAY_OUT_SAMPLE = 6  # (each compiles: a sample per run keeps the suite in its budget)
SEED = int(os.environ.get("S2S_PARITY_SEED", "20261206"))
ALL = os.environ.get("S2S_PARITY_ALL") == "1"
RTOL = 1e-10
EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


@dataclass
class Program:
    """A function and its arguments (args(rng)); argnums: what its gradient is taken with respect to,
    None when the program is a transform already (a cuda_cases vmap): then its value is compared only."""

    fun: Callable
    args: Callable[[np.random.Generator], tuple]
    argnums: Any = 0
    grad: bool = True  # False: a function without a derivative rule (its value only)


def _example(name: str):
    path = os.path.join(EXAMPLES_DIR, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"s2s_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _corpus() -> dict[str, Program]:
    out: dict[str, Program] = {}
    for name, (fun, args, argnums, _) in programs.CASES.items():
        out[f"programs.{name}"] = Program(fun, args, argnums)

    i = idiom_cases
    for name, program in {
        "scaled_square": Program(i.scaled_square, lambda r: (r.standard_normal(4),)),
        "appended_squares": Program(i.appended_squares, lambda r: (r.standard_normal(4),)),
        "horner_backwards": Program(i.horner_backwards, lambda r: (r.standard_normal(5),)),
        "strided_backwards": Program(i.strided_backwards, lambda r: (r.standard_normal(7), 2)),
        "tuple_state": Program(i.tuple_state, lambda r: (r.standard_normal(3), r.standard_normal(3)), (0, 1)),
        "sine_layers": Program(i.sine_layers, lambda r: ([r.standard_normal(3), r.standard_normal((2, 3))],
                                                         r.standard_normal(3)), (0, 1)),
        "least_squares": Program(i.least_squares, lambda r: (r.standard_normal(3), r.standard_normal((5, 3))), (0, 1)),
        "builtin_max": Program(i.builtin_max, lambda r: (r.standard_normal(5),)),
        "repeated_scaling": Program(i.repeated_scaling, lambda r: (r.standard_normal(3), 0.7), (0, 1)),
        "message_passing": Program(i.message_passing, lambda r: (0.3 * r.standard_normal((4, 2)),
                                                                 r.uniform(0.5, 1.0, (3, 5, 2)),
                                                                 0.1 * r.standard_normal((3, 4, 2))), (0, 1, 2)),
    }.items():
        out[f"idiom_cases.{name}"] = program

    s = shadowing_cases
    for fun in (s.scan_then_module_ys, s.fori_then_module_s, s.scan_then_module_c, s.scan_then_module_c_init,
                s.times_module_n):
        out[f"shadowing_cases.{fun.__name__}"] = Program(fun, lambda r: (0.7,))
    out["shadowing_cases.zero_or_excess"] = Program(s.zero_or_excess, lambda r: (1.7, 0.5))

    c = custom_rule_cases
    x4 = lambda r: (np.array([0.1, 0.5, -0.2, 0.03]),)  # noqa: E731
    for name, program in {
        "clipped_loss": Program(c.clipped_loss, x4),
        "softplus_loss": Program(c.softplus_loss, lambda r: (0.7, r.standard_normal(4)), (0, 1)),
        "softplus_chain": Program(c.softplus_chain, lambda r: (0.3, r.standard_normal(5))),
        "sine_energy": Program(c.sine_energy, lambda r: (r.standard_normal(4), 0.8), (0, 1)),
        "calls_unsummed": Program(c.calls_unsummed, lambda r: (np.array([0.1, 0.5, -0.2, 0.03]), 2.0)),
        "checkpointed_path": Program(c.checkpointed_path, lambda r: (r.standard_normal(3), r.standard_normal(4))),
        "sine_scaled_energy": Program(c.sine_scaled_energy, lambda r: (r.standard_normal(4), 0.8), (0, 1)),
        "softplus_sum": Program(c.softplus_sum, x4),
        "softplus_steps": Program(c.softplus_steps, lambda r: (0.3, r.standard_normal(5))),
        "floored_energy": Program(c.floored_energy, x4),
        "scaled_stable_softplus": Program(c.scaled_stable_softplus, lambda r: (0.4, 1.3), (0, 1)),
        "scaled_stable_softplus_jvp": Program(c.scaled_stable_softplus_jvp, lambda r: (0.4, 1.3), (0, 1)),
        "summed_times": Program(c.summed_times, lambda r: (r.standard_normal(4), 1.3), (0, 1)),
        "summed_branchy_times": Program(c.summed_branchy_times, lambda r: (r.standard_normal(4), 1.3), (0, 1)),
    }.items():
        out[f"custom_rule_cases.{name}"] = program

    for fun, args in test_comprehensions.CASES:
        out[f"comprehensions.{fun.__name__}"] = Program(fun, lambda r, args=args: args,
                                                        tuple(range(len(args))))

    # the per-example transforms of the CUDA tests, here on the cpu backend against the python one
    for module in (cuda_cases, cuda_random_cases):
        for name, (make, args) in module.CASES.items():
            out[f"{module.__name__}.{name}"] = Program(make, lambda r, args=args: args(), None)

    # one program per limit of s2s/limits.py
    lc = limit_cases
    for name, program in {
        "unknown_to_numba": Program(lc.unknown_to_numba, lambda r: (r.standard_normal(3),), grad=False),
        "draws_from_a_generator": Program(lc.draws_from_a_generator, lambda r: (r.standard_normal(3),)),
        "dot_beyond_two_dimensions": Program(lc.dot_beyond_two_dimensions, lambda r: (r.standard_normal((2, 3, 4)),
                                                                                      r.standard_normal((2, 4, 3)))),
        "loop_over_dict_items": Program(lc.loop_over_dict_items, lambda r: ({"a": r.standard_normal(3),
                                                                             "b": r.standard_normal(3)},
                                                                            r.standard_normal(3)), (0, 1)),
        "dot_of_float_and_int": Program(lc.dot_of_float_and_int, lambda r: (r.standard_normal((2, 3)),
                                                                            np.array([1, 2, 3]))),
        "transpose_then_reshape": Program(lc.transpose_then_reshape, lambda r: (r.standard_normal((2, 3)),)),
        "number_becomes_array": Program(lc.number_becomes_array, lambda r: (r.standard_normal((3, 2)),)),
        "variance_of_a_list": Program(lc.variance_of_a_list, lambda r: (0.3, 1.2), (0, 1)),
        "dot_with_a_number": Program(lc.dot_with_a_number, lambda r: (r.standard_normal((2, 3)),)),
        "squeeze_without_axis": Program(lc.squeeze_without_axis, lambda r: (r.standard_normal(3),)),
        "gather_and_slice": Program(lc.gather_and_slice, lambda r: (r.standard_normal((3, 4)), np.array([0, 2]))),
        "fancy_augmented_write": Program(lc.fancy_augmented_write, lambda r: (r.standard_normal(2), np.array([1, 3]))),
        "layers_of_different_shapes": Program(lc.layers_of_different_shapes, lambda r: (
            [r.standard_normal(3), r.standard_normal((2, 3))], r.standard_normal(3), 1)),
        "none_argument": Program(lc.none_argument, lambda r: (r.standard_normal(3), None)),
        "stacked_eigh": Program(lc.stacked_eigh, lambda r: (r.standard_normal((2, 3, 3)),)),
        "stacked_svd": Program(lc.stacked_svd, lambda r: (r.standard_normal((2, 3, 3)),)),
        "bernoulli_of_an_array": Program(lc.bernoulli_of_an_array, lambda r: (s2s_random.PRNGKey(3), r.uniform(0.2, 0.8, 5)),
                                         1),
        "vmap_hessian": Program(lambda: s2s.vmap(s2s.hessian(lc.energy)), lambda r: (r.standard_normal((4, 3)),),
                                None),
    }.items():
        out[f"limit_cases.{name}"] = program
        way_out = getattr(lc, f"{name}_way_out", None)
        if way_out is not None:
            out[f"limit_cases.{name}_way_out"] = Program(way_out, program.args, program.argnums)

    regression, gp, tutorial_nn = _example("regression"), _example("gaussian_process"), _example("jax_tutorial")
    monte_carlo, newton, ode = _example("monte_carlo"), _example("newton"), _example("ode")
    per_example, rnn, tutorial = _example("per_example"), _example("rnn"), _example("tutorial")
    variational, data_parallel = _example("variational"), _example("data_parallel")
    points = lambda r: np.sort(r.uniform(-3.0, 3.0, 8))  # noqa: E731
    for name, program in {
        "regression.loss": Program(regression.loss, lambda r: ((r.standard_normal(3), 0.3), r.standard_normal((6, 3)),
                                                                r.standard_normal(6))),
        "gaussian_process.log_marginal_likelihood": Program(
            gp.log_marginal_likelihood, lambda r: (np.array([0.1, -0.2, -1.5]), points(r), r.standard_normal(8))),
        "gaussian_process.log_marginal_likelihood_cholesky": Program(
            gp.log_marginal_likelihood_cholesky, lambda r: (np.array([0.1, -0.2, -1.5]), points(r),
                                                            r.standard_normal(8))),
        "jax_tutorial.loss": Program(tutorial_nn.loss, lambda r: (tutorial_nn.init_params(r, 4),
                                                                  np.linspace(-3.0, 3.0, 6).reshape(-1, 1),
                                                                  np.sin(np.linspace(-3.0, 3.0, 6)))),
        "monte_carlo.path_payoff": Program(monte_carlo.path_payoff, lambda r: ((1.05, 0.25), r.standard_normal(8) + 0.5,
                                                                               1.0 / 8)),
        "newton.rosenbrock": Program(newton.rosenbrock, lambda r: (r.standard_normal(4),)),
        "ode.final_state_loss": Program(ode.final_state_loss, lambda r: (np.array([0.3, 1.2]), 1.0, 0.0,
                                                                         np.array([0.2, -1.0]), 50, 0.01)),
        "per_example.example_loss": Program(per_example.example_loss, lambda r: (r.standard_normal(3),
                                                                                 r.standard_normal(3), 1.0)),
        "rnn.loss": Program(rnn.loss, lambda r: ((0.5 * r.standard_normal((2, 3)), 0.5 * r.standard_normal((3, 3)),
                                                  r.standard_normal(3), r.standard_normal((3, 2))),
                                                 r.standard_normal((4, 2)), r.standard_normal((4, 2)))),
        "tutorial.squared_error": Program(tutorial.squared_error, lambda r: (r.standard_normal(3), 0.5,
                                                                            r.standard_normal((8, 3)),
                                                                            r.standard_normal(8)), (0, 1)),
        "tutorial.cubic": Program(tutorial.cubic, lambda r: (1.5,)),
        "tutorial.energy": Program(tutorial.energy, lambda r: (np.array([0.5, -1.0, 2.0]),)),
        "tutorial.mse": Program(tutorial.mse, lambda r: ((0.3, -0.2), r.standard_normal(6), r.standard_normal(6))),
        "tutorial.cross_entropy": Program(tutorial.cross_entropy, lambda r: (
            {"hidden": {"w": r.standard_normal((2, 4)), "b": np.zeros(4)},
             "out": {"w": r.standard_normal((4, 2)), "b": np.zeros(2)}}, r.standard_normal((6, 2)),
            np.array([0, 1, 1, 0, 1, 0]))),
        "tutorial.clipped_growth": Program(tutorial.clipped_growth, lambda r: (1.5, 8)),
        "tutorial.sine_sum": Program(tutorial.sine_sum, lambda r: (r.standard_normal(3),)),
        "variational.negative_elbo": Program(variational.negative_elbo, lambda r: (np.array([0.1, -0.2, -0.5, 0.3]),
                                                                                   r.standard_normal((5, 2)))),
        "data_parallel.loss": Program(data_parallel.loss, lambda r: (
            {"w1": r.standard_normal((3, 4)), "b1": np.zeros(4), "w2": r.standard_normal(4), "b2": 0.1},
            r.standard_normal((5, 3)), r.standard_normal(5))),
    }.items():
        if program.args is not None:
            out[f"examples.{name}"] = program
    return out


PROGRAMS = _corpus()

# program -> the limit (a key of s2s.limits.LIMITS) under which s2s.jit refuses it today
LISTED: dict[str, str] = {
    "limit_cases.unknown_to_numba": "numpy-function-unknown-to-numba",
    "limit_cases.draws_from_a_generator": "random-state-draws",
    "limit_cases.loop_over_dict_items": "dict-loop",
    "limit_cases.number_becomes_array": "number-becomes-array",
    "limit_cases.squeeze_without_axis": "squeeze-without-axis",
    "limit_cases.layers_of_different_shapes": "layers-of-different-shapes",
}
# programs.CASES whose 4th field (jit) is False for another reason than a limit: they compile and agree
PYTHON_ONLY = {
    "keepdims_max_with_ties": "its ties: checked on the python backend against central differences only",
    "tuple_axes_reductions": "compile time of the 3-D adjoint helpers (keepdims_max_min covers them under jit)",
}
# programs that s2s.jit fails on without an S2SError (a strict expected failure: a fix is noticed)
CRASHES: dict[str, str] = {}


def _leaves(value) -> list:
    return [np.asarray(leaf) for leaf in pytree.leaves(value)]


def _assert_same(got, want, what: str) -> None:
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), f"{what}: {len(got)} leaves under s2s.jit, {len(want)} on the python backend"
    # relative to the largest entry of all the leaves: a gradient whose entries cancel to 1e-17
    # in one leaf (a bias whose terms sum to zero) is zero up to rounding in both backends
    finite = [np.abs(w[np.isfinite(w)]) for w in want if w.size]
    scale = max([float(np.max(f)) for f in finite if f.size] + [1e-300])
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{what} (leaf {k}): shape {g.shape} under s2s.jit, {w.shape} on the python backend"
        # a float32 leaf (s2s.random's float32 draws) to a few of its ulps: NumPy's float32 log1p and the
        # one Numba compiles round differently, by an ulp at one draw in 64 (s2s/random: XLA's is its own too)
        rtol = 4 * float(np.finfo(np.float32).eps) if w.dtype == np.float32 else RTOL
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, equal_nan=True, err_msg=f"{what} (leaf {k})")


def _runs(name: str):
    """(the python backend's (value, gradient), the jitted pair of callables) of a program."""
    program = PROGRAMS[name]
    args = program.args(np.random.default_rng(0))
    if program.argnums is None:
        transform = program.fun()
        return args, [("value", s2s.jit(transform, backend="python"), s2s.jit(transform))]
    runs = [("value", s2s.jit(program.fun, backend="python"), s2s.jit(program.fun))]
    if program.grad:
        grad = s2s.grad(program.fun, argnums=program.argnums)
        runs.append(("gradient", s2s.jit(grad, backend="python"), s2s.jit(grad)))
    return args, runs


def _is_users(filename: str) -> bool:
    """A file of the corpora (tests/, examples/), not a generated module."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.abspath(filename)) in (here, EXAMPLES_DIR)


def outcome(name: str) -> tuple[str, str, dict]:
    """(verdict, detail, reached) of one program. verdict: "agree"; "limit" when s2s.jit refuses it
    under the limit LISTED names (at the user's file:line, with a way out); "refused" when it refuses a
    program not on the list, or otherwise than listed; "compiles" when a listed program compiles and
    agrees; "DISAGREE"; "crash". reached: {part: the refusal's Origin, or None where it compiled}."""
    listed = LISTED.get(name)
    args, runs = _runs(name)
    reached: dict = {}
    for part, python, compiled in runs:
        want = python(*args)
        try:
            got = compiled(*args)
        except s2s.S2SError as refusal:
            reached[part] = refusal.origin
            message = str(refusal)
            where = f"{refusal.origin.filename}:{refusal.origin.line}" if refusal.origin else "no line"
            detail = f"{part}: {where}: {message.splitlines()[0][:200]}"
            if listed is None:
                return "refused", f"not on the list of limits: {detail}", reached
            limit = limits.LIMITS[listed]
            if limit.line and (refusal.origin is None or not _is_users(refusal.origin.filename)):
                return "refused", f"listed as {listed}, but the refusal names no line of the program: {detail}", reached
            if not refusal.hint:
                return "refused", f"listed as {listed}, but the refusal names no way out: {detail}", reached
            if not re.search(limit.message, message):
                return "refused", f"listed as {listed} ({limit.message!r}), refused otherwise: {detail}", reached
            return "limit", f"{listed}: {detail}", reached
        except Exception as exc:  # noqa: BLE001 - reported as a crash, the test fails with it
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            return "crash", f"{part}: {type(exc).__name__}: {first}", reached
        reached[part] = None
        try:
            _assert_same(got, want, f"{part} of {name}")
        except AssertionError as exc:
            return "DISAGREE", " ".join(str(exc).split())[:400], reached
    if listed is not None:
        return "compiles", f"listed as {listed} but s2s.jit compiles it and agrees: take it off the list", reached
    return "agree", "", reached


def check_disagreements(name: str, reached: dict) -> list[str]:
    """Where `s2s check` (its jit and grad rows, cpu column) disagrees with what s2s.jit did: it must
    refuse at the line s2s.jit refuses, and say ok where s2s.jit compiles; s2s.jit may refuse what
    check said ok only under a limit that depends on the arguments (not Limit.found_by_check)."""
    program = PROGRAMS[name]
    if program.argnums is None:  # (a transform already: check takes the functions of a module)
        return []
    report = checking.check_function(program.fun)
    problems = []
    for row, part in (("jit", "value"), ("grad", "gradient")):
        if part not in reached or report[row]["python"] is not None:  # (refused on every backend: check's
            continue  # grad is with respect to the first argument, the program's may be another)
        blocker, origin = report[row]["cpu"], reached[part]
        if blocker is not None and origin is None:
            problems.append(f"s2s check refuses {row} on cpu ({blocker.where}: {blocker.reason}), s2s.jit compiles it")
        elif blocker is not None and not blocker.where.startswith(f"{origin.filename}:{origin.line}:"):
            problems.append(f"s2s check refuses {row} on cpu at {blocker.where}, s2s.jit at "
                            f"{origin.filename}:{origin.line}")
        elif blocker is None and origin is not None:
            limit = limits.LIMITS.get(LISTED.get(name, ""))
            if limit is None or limit.found_by_check:
                problems.append(f"s2s check says ok for {row} on cpu, s2s.jit refuses it at {origin.filename}:"
                                f"{origin.line}")
    return problems


def _sample() -> list[str]:
    """The programs off the list (those on it run on every run, the way outs as a sample, below)."""
    names = sorted(name for name in PROGRAMS if name not in LISTED and not name.endswith("_way_out"))
    if ALL:
        return names
    return sorted(random.Random(SEED).sample(names, min(SAMPLE, len(names))))


def _params(names: list[str]) -> list:
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=CRASHES[name])) if name in CRASHES
            else name for name in names]


@pytest.mark.parametrize("name", _params(_sample()))
def test_python_and_jit_agree_and_check_says_so(name):
    verdict, detail, reached = outcome(name)
    assert verdict in ("agree", "limit"), f"{name}: {verdict}: {detail}"
    assert check_disagreements(name, reached) == []


def test_every_listed_program_is_in_the_corpus_and_every_limit_is_used():
    assert set(LISTED) <= set(PROGRAMS), sorted(set(LISTED) - set(PROGRAMS))
    assert set(LISTED.values()) <= set(limits.LIMITS)


@pytest.mark.parametrize("name", _params(sorted(LISTED)))
def test_each_listed_program_is_refused_as_listed(name):
    """Every program on the list, on every run: refused at its line under its limit (a known gap that
    is fixed shows here as "compiles": take it off the list). (Refused before Numba compiles: cheap.)"""
    verdict, detail, reached = outcome(name)
    assert verdict == "limit", f"{name}: {verdict}: {detail}"
    assert check_disagreements(name, reached) == []


def _way_outs() -> list[str]:
    names = sorted(name for name in PROGRAMS if name.endswith("_way_out"))
    if ALL:
        return names
    return sorted(random.Random(SEED).sample(names, min(WAY_OUT_SAMPLE, len(names))))


@pytest.mark.parametrize("name", _way_outs())
def test_each_way_out_compiles_and_agrees(name):
    """The way out that docs/pages/limits.md gives for a limit, written out: s2s.jit compiles it."""
    verdict, detail, reached = outcome(name)
    assert verdict == "agree", f"{name}: {verdict}: {detail}"


def test_the_jit_field_of_the_cases_is_the_list():
    """programs.CASES says jit=False exactly for its programs on the list (and those PYTHON_ONLY says why)."""
    off = {name for name, case in programs.CASES.items() if not case[3]}
    listed = {name.split(".", 1)[1] for name in LISTED if name.startswith("programs.")}
    assert off == listed | set(PYTHON_ONLY)


def test_every_limit_has_a_program():
    assert set(LISTED.values()) == set(limits.LIMITS)


def test_the_corpus_holds_every_program_of_the_cases():
    """A new case in programs.CASES, idiom_cases or the examples' __s2s__ is swept without another edit."""
    assert {f"programs.{name}" for name in programs.CASES} <= set(PROGRAMS)
    assert len(PROGRAMS) > 100


if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(PROGRAMS):
        try:
            verdict, detail, reached = outcome(name)
            problems = check_disagreements(name, reached)
            if problems:
                detail += f"  [s2s check: {'; '.join(problems)}]"
        except Exception as exc:  # noqa: BLE001 - the python backend itself failed
            verdict, detail = "crash", f"python backend: {type(exc).__name__}: {exc}"[:300]
            traceback.print_exc()
        print(f"{name}\t{verdict}\t{detail}", flush=True)
