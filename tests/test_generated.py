"""generated/ is a golden file: it must match what s2s writes for examples/ today."""

import difflib
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = ["regression.py", "ode.py", "newton.py"]
MODES = "grad,jvp"


@pytest.mark.parametrize("example", EXAMPLES)
def test_generated_code_is_current(example, tmp_path):
    path = os.path.join(ROOT, "examples", example)
    result = subprocess.run([sys.executable, "-m", "s2s", "transform", path, "--mode", MODES, "-o", str(tmp_path)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    written = sorted(os.listdir(tmp_path))
    assert written
    for name in written:
        fresh = (tmp_path / name).read_text()
        golden_path = os.path.join(ROOT, "generated", name)
        golden = open(golden_path).read() if os.path.exists(golden_path) else ""
        if fresh != golden:
            diff = "".join(difflib.unified_diff(golden.splitlines(True), fresh.splitlines(True),
                                                golden_path, "fresh"))
            pytest.fail(f"generated/{name} is out of date; regenerate with:\n"
                        f"    s2s transform examples/{example} --mode {MODES}\n{diff[:3000]}")


@pytest.mark.parametrize("example", EXAMPLES)
def test_generation_is_byte_identical_across_processes(example, tmp_path):
    path = os.path.join(ROOT, "examples", example)
    outs = []
    for k in range(2):
        out = tmp_path / str(k)
        subprocess.run([sys.executable, "-m", "s2s", "transform", path, "--mode", MODES, "-o", str(out)], check=True,
                       capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": str(k)})
        outs.append({n: (out / n).read_bytes() for n in os.listdir(out)})
    assert outs[0] == outs[1]


def an_argument(fact):
    """A value of the kind an argument fact describes (what the module is specialised for)."""
    if fact in ("float", "int", "bool"):
        return {"float": 0.5, "int": 3, "bool": True}[fact]
    if fact[0] == "array":
        return np.full((2,) * fact[1], fact[2:] == ["bool"] or 0.5)
    return tuple(an_argument(item) for item in fact[1])


@pytest.mark.parametrize("example", EXAMPLES)
def test_generated_files_are_what_s2s_jit_compiles(example):
    """The examples annotate their arguments' kinds (shape-typed arrays, floats, ints, tuples), so
    generated/ holds the modules s2s.jit compiles for such arguments: s2s.jit(s2s.grad(f)) and
    s2s.jit(s2s.jvp-based jacfwd(f))."""
    import importlib.util

    import s2s
    from s2s.doors.cli import facts_from_annotations

    path = os.path.join(ROOT, "examples", example)
    spec = importlib.util.spec_from_file_location("example_" + example[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in module.__s2s__:
        fn = getattr(module, name)
        facts = facts_from_annotations(fn)
        assert facts is not None, f"{example}: every parameter of {name} is annotated with its kind"
        args = [an_argument(fact) for fact in facts]
        golden = open(os.path.join(ROOT, "generated", f"{example[:-3]}_{name}_grad.py")).read()
        assert s2s.grad(fn).specialised_source(args) == golden
        golden = open(os.path.join(ROOT, "generated", f"{example[:-3]}_{name}_jvp.py")).read()
        assert s2s.doors.core.ForwardTransformed(fn).specialised_source(args + args) == golden


def test_a_generated_file_is_the_source_of_the_jitted_gradient():
    import importlib.util

    import s2s

    spec = importlib.util.spec_from_file_location("example_regression", os.path.join(ROOT, "examples", "regression.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    grad = s2s.jit(s2s.grad(module.loss))
    grad((np.ones(3), 0.5), np.ones((4, 3)), np.ones(4))
    assert s2s.source(grad) == open(os.path.join(ROOT, "generated", "regression_loss_grad.py")).read()


def test_examples_run(tmp_path):
    for example in EXAMPLES + ["per_example.py", "monte_carlo.py", "data_parallel.py", "variational.py", "rnn.py",
                               "gaussian_process.py", "flax_mnist_like.py"]:
        result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example)],
                                capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        assert any(line in result.stdout for line in ("recovered w:", "fitted damping", "root:", "vega: Monte Carlo",
                                                      "data-parallel gradient matches", "variational mean:",
                                                      "trained: one-step-ahead", "fitted length", "trained the MLP:"))
