"""`s2s check`: the static report agrees with what the API does when the function is called."""

import json
import textwrap

import numpy as np
import pytest

import s2s
from s2s.doors import check as checking
from s2s.doors.cli import load_user_module, main

MODULE = textwrap.dedent('''
    import numpy as np

    def smooth(x, w):
        y = np.tanh(x * w)
        return np.sum(y ** 2)

    def truncated(x):
        t = np.fix(x)
        return np.sum(t)

    def path(s0, sigma, z):
        s = s0
        for t in range(z.shape[0]):
            s = s * np.exp(sigma * z[t])
        return max(s - 1.0, 0.0)

    def determinant(A):
        return np.linalg.det(A)

    def recursive(x):
        if x > 1.0:
            return recursive(x - 1.0)
        return x

    def over_a_dict(params, x):
        s = 0.0
        for name, w in params.items():
            s = s + np.sum(w * x)
        return s

    def over_a_dict_in_a_helper(params, x):
        return 2.0 * over_a_dict(params, x)
''')


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("check") / "checked_module.py"
    path.write_text(MODULE)
    return load_user_module(str(path))


def test_accepted_function_is_ok_everywhere_and_compiles(module):
    report = checking.check_function(module.smooth)
    assert checking.accepted_everywhere(report)
    assert report["vmap"]["cuda"] is not None  # np.sum of a whole array has no kernel form
    # what check accepts for the cpu backend, s2s.jit compiles
    x, w = np.linspace(-1.0, 1.0, 5), 0.7
    grad = s2s.jit(s2s.grad(module.smooth, argnums=1))(x, w)
    assert np.isclose(grad, np.sum(2 * np.tanh(x * w) * (1 - np.tanh(x * w) ** 2) * x))


def test_numba_refusal_is_found_without_compiling_and_is_real(module):
    report = checking.check_function(module.truncated)
    jit = report["jit"]
    assert jit["python"] is None
    blocker = jit["cpu"]
    assert blocker.where.endswith("checked_module.py:9:5")
    assert "np.fix" in blocker.reason and blocker.statement == "t = np.fix(x)"
    # and the API agrees: the cpu backend refuses the same statement when it compiles
    with pytest.raises(s2s.S2SError, match="checked_module.py:9"):
        s2s.jit(module.truncated)(np.ones(3))
    assert s2s.jit(module.truncated, backend="python")(np.full(3, -1.5)) == -3.0


def test_transform_refusal_names_the_first_blocker(module):
    report = checking.check_function(module.recursive)
    for row, cells in report.items():
        assert cells["python"] is cells["cpu"]
        assert cells["python"].where.endswith("checked_module.py:23:9"), row
        assert "recursi" in cells["python"].reason and cells["python"].way_out
    with pytest.raises(s2s.S2SError, match="checked_module.py:23:9"):
        s2s.grad(module.recursive)(3.0)


def test_command_line_table_json_and_exit_status(module, capsys):
    path = module.__file__
    assert main(["check", path, "--function", "smooth"]) == 0
    table = capsys.readouterr().out
    assert "smooth" in table and "backend='cuda' cannot run" in table
    assert main(["check", path]) == 1
    table = capsys.readouterr().out
    assert "[1]" in table and "checked_module.py:9:5  t = np.fix(x)" in table
    assert main(["check", path, "--json", "--function", "truncated"]) == 1
    (item,) = json.loads(capsys.readouterr().out)
    assert item["function"] == "truncated"
    assert item["transforms"]["jit"]["python"] is None
    assert item["transforms"]["jit"]["cpu"]["reason"] == "Numba does not compile np.fix"


def test_cuda_kernels_are_checked_for_vmap(module):
    report = checking.check_function(module.path)
    assert report["vmap"]["cuda"] is None  # numbers, a loop, indexing into the arguments
    blocker = checking.check_function(module.determinant)["vmap"]["cuda"]
    assert blocker.where.endswith("checked_module.py:19:5") and "np.linalg.det has no kernel form" in blocker.reason
    assert "backend='cpu'" in blocker.way_out


def test_a_loop_over_a_dict_argument_is_reported_where_its_keys_are_not_known(module):
    """Numba reads a dict (a tuple of its values by sorted key) at constant keys only. s2s.jit
    generates the code of the function it is given for the call, whose dict's keys write the loop
    out; a function it calls keeps the loop, which is refused: the cpu column says so at the loop."""
    params, x = {"b": np.array([1.0, 2.0]), "a": np.array([0.5, -1.0])}, np.array([0.3, 0.7])
    report = checking.check_function(module.over_a_dict)
    assert all(report[row]["cpu"] is None for row in ("jit", "grad", "jvp", "hessian", "vmap"))
    np.testing.assert_allclose(s2s.jit(module.over_a_dict)(params, x), np.sum((params["a"] + params["b"]) * x))
    np.testing.assert_allclose(s2s.jit(s2s.grad(module.over_a_dict, argnums=1))(params, x), params["a"] + params["b"])
    report = checking.check_function(module.over_a_dict_in_a_helper)
    for row in ("jit", "grad"):
        blocker = report[row]["cpu"]
        assert report[row]["python"] is None
        assert blocker.where.endswith("checked_module.py:28:5") and "loop over a dict" in blocker.reason
        assert "in the function s2s.jit is given" in blocker.way_out
    for door in (s2s.jit(module.over_a_dict_in_a_helper), s2s.jit(s2s.grad(module.over_a_dict_in_a_helper, 1))):
        with pytest.raises(s2s.S2SError, match="checked_module.py:28:5: .*loop over a dict"):
            door(params, x)
