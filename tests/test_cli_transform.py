"""`s2s transform module.py` without --function: the module's public functions, of which those
s2s refuses (drivers that draw random numbers, print or time) are skipped with their refusal,
where the first refusal used to stop the command (five of the eight bundled examples)."""

import importlib.util
import os
import textwrap

import numpy as np
import pytest

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


def test_a_module_that_fails_to_import_is_an_error_at_its_line(tmp_path, capsys):
    broken = write(tmp_path, "import numpy as np\n\n\ndef f(x)\n    return x\n", "broken")
    assert cli.main(["transform", broken, "-o", str(tmp_path / "a")]) == 1
    err = without_progress(capsys.readouterr().err)
    assert err.startswith(f"s2s: error: {broken}:4:") and "does not parse" in err and "Traceback" not in err
    failing = write(tmp_path, "import numpy as np\n\n\ndef f(x):\n    return x\n\n\nZ = np.ones(3) @ np.ones(4)\n",
                    "failing")
    assert cli.main(["check", failing]) == 1
    err = without_progress(capsys.readouterr().err)
    assert err.startswith(f"s2s: error: {failing}:8:5: importing failing.py raised ValueError") and "Traceback" not in err
    assert cli.main(["transform", failing, "--debug"]) == 1  # --debug after the command, as before it
    assert "Traceback" in capsys.readouterr().err


def test_version_and_the_cache_commands(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit):
        cli.main(["-V"])
    assert capsys.readouterr().out.startswith("s2s ")
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    assert cli.main(["cache", "list"]) == 0
    assert capsys.readouterr().out == f"the cache at {tmp_path / 'cache'} is empty\n"


STENCIL = '''
import numpy as np


def heat(u0, alpha, steps):
    u = u0.copy()
    for t in range(steps):
        new = u.copy()
        for i in range(1, u.shape[0] - 1):
            new[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = new
    return np.sum(u ** 2)


def decay(x: float, rate: float, steps: int):
    for k in range(steps):
        x = x - rate * x * x
    return x


Vector = np.ndarray[tuple[int], np.dtype[np.float64]]


def heat_annotated(u0: Vector, alpha: float, steps: int):
    return heat(u0, alpha, steps)


def heat_plain_array(u0: np.ndarray, alpha: float, steps: int):
    return heat(u0, alpha, steps)


def fit(params: tuple[Vector, float], x: np.ndarray[tuple[int, int], np.dtype[np.float64]], mask: np.ndarray[tuple[int], np.dtype[np.bool_]]):
    w, b = params
    return np.sum(np.where(mask, x @ w + b, 0.0) ** 2)
'''


def test_show_writes_the_module_jit_compiles_for_a_signature(tmp_path, capsys):
    import s2s

    path = write(tmp_path, STENCIL, "stencil")
    module = load(path, "stencil")
    args = (np.linspace(0.0, 1.0, 6), 0.1, 3)
    jitted = s2s.jit(s2s.grad(module.heat))
    np.testing.assert_allclose(jitted(*args), central_difference_grad(module.heat, list(args), 0), rtol=1e-6)
    assert cli.main(["show", f"{path}:heat", "--signature", "float64[:], float64, int64"]) == 0
    shown = capsys.readouterr().out
    assert shown == jitted._specialised_source and "u0 1-d array, alpha float, steps int" in shown
    assert cli.main(["show", f"{path}:heat"]) == 0
    general = capsys.readouterr().out
    assert "Specialised" not in general and len(general.splitlines()) > len(shown.splitlines())
    # annotations that tell every parameter's kind choose the specialised module too
    assert cli.main(["show", f"{path}:decay"]) == 0
    assert "x float, rate float, steps int" in capsys.readouterr().out
    # arrays in NumPy's shape-typed spelling give their dimensions; a plain np.ndarray does not
    assert cli.main(["show", f"{path}:heat_annotated"]) == 0
    assert "u0 1-d array, alpha float, steps int" in capsys.readouterr().out
    assert cli.main(["show", f"{path}:heat_plain_array"]) == 0
    assert "Specialised" not in capsys.readouterr().out
    fit_args = ((np.array([0.5, -1.0]), 0.25), np.arange(6.0).reshape(3, 2), np.array([True, False, True]))
    fit_grad = s2s.jit(s2s.grad(module.fit))
    expected = central_difference_grad(lambda w: module.fit((w, 0.25), *fit_args[1:]), [fit_args[0][0]], 0)
    np.testing.assert_allclose(fit_grad(*fit_args)[0], expected, rtol=1e-6)
    assert cli.main(["show", f"{path}:fit"]) == 0
    assert capsys.readouterr().out == fit_grad._specialised_source
    assert cli.main(["show", f"{path}:heat", "--signature", "float64[:], float64"]) == 1
    assert "2 types for the 3 parameters of heat" in capsys.readouterr().err


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
