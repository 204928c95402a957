"""`s2s transform module.py` without --function: the module's public functions, of which those
s2s refuses (drivers that draw random numbers, print or time) are skipped with their refusal,
where the first refusal used to stop the command (five of the eight bundled examples)."""

import importlib.util
import os
import textwrap

import numpy as np

from checks import without_progress
from finite_differences import central_difference_grad
from s2s.doors import cli

MODULE = '''
import numpy as np


def energy(x):
    return np.sum(np.sin(x) * x)


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=3)
    print(energy(x))
'''


def write(tmp_path, text, name):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_public_functions_that_s2s_refuses_are_skipped_with_their_line(tmp_path, capsys):
    path = write(tmp_path, MODULE, "driven")
    out = tmp_path / "out"
    assert cli.main(["transform", path, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert os.listdir(out) == ["driven_energy_grad.py"]
    assert f"s2s: skipped main (grad): {path}:11:9:" in captured.err and ".normal() is not supported" in captured.err
    assert "wrote 1, skipped 1" in captured.err
    # the written module is the gradient
    spec = importlib.util.spec_from_file_location("driven_energy_grad", out / "driven_energy_grad.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.array([0.3, -1.2, 2.0])
    want = central_difference_grad(lambda x: np.sum(np.sin(x) * x), [x], 0)
    value, (x_bar,) = module.energy_vjp(x, 1.0)
    np.testing.assert_allclose(x_bar, want, rtol=1e-6, atol=1e-8)


def test_nothing_written_is_a_failure_and_a_named_function_is_not_skipped(tmp_path, capsys):
    only_driver = write(tmp_path, MODULE.replace("def energy(x)", "def _energy(x)").replace("print(energy", "print(_energy"),
                        "only_driver")
    assert cli.main(["transform", only_driver, "-o", str(tmp_path / "a")]) == 1
    assert "skipped main" in capsys.readouterr().err
    listed = write(tmp_path, MODULE + "\n__s2s__ = ['energy', 'main']\n", "listed")
    assert cli.main(["transform", listed, "-o", str(tmp_path / "b")]) == 1
    err = without_progress(capsys.readouterr().err)
    assert err.startswith(f"s2s: error: {listed}:11:9:") and "skipped" not in err
    named = write(tmp_path, MODULE, "named")
    assert cli.main(["transform", named, "--function", "main", "-o", str(tmp_path / "c")]) == 1
    assert without_progress(capsys.readouterr().err).startswith(f"s2s: error: {named}:11:9:")
