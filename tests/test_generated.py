"""generated/ is a golden file: it must match what s2s writes for examples/ today."""

import difflib
import os
import subprocess
import sys

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


@pytest.mark.parametrize("example", EXAMPLES)
def test_generated_files_are_what_the_api_compiles(example):
    """The examples run s2s.jit(s2s.grad(f)) under Numba; that is the code in generated/."""
    import importlib.util

    import s2s

    path = os.path.join(ROOT, "examples", example)
    spec = importlib.util.spec_from_file_location("example_" + example[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in module.__s2s__:
        golden = open(os.path.join(ROOT, "generated", f"{example[:-3]}_{name}_grad.py")).read()
        assert s2s.grad(getattr(module, name)).source == golden
        golden = open(os.path.join(ROOT, "generated", f"{example[:-3]}_{name}_jvp.py")).read()
        assert s2s.doors.core.ForwardTransformed(getattr(module, name)).source == golden


def test_examples_run(tmp_path):
    for example in EXAMPLES + ["per_example.py", "monte_carlo.py", "data_parallel.py", "variational.py", "rnn.py", "gaussian_process.py"]:
        result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example)],
                                capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        assert any(line in result.stdout for line in ("recovered w:", "fitted damping", "root:", "vega: Monte Carlo",
                                                             "data-parallel gradient matches", "variational mean:", "trained: one-step-ahead", "fitted length"))
