"""The pipeline is a list of named passes: each can be printed after, and an internal error
names the pass it happened in."""

import io
import subprocess
import sys

import pytest

import s2s
from s2s.driver import pipeline

from programs import calls_in_a_loop as FUN  # a helper, a loop and a branch: every pass has work
OPTIONS = {"grad": {"argnums": [0], "has_aux": False}, "jvp": {}, "primal": {}}


@pytest.mark.parametrize("transform", ["grad", "jvp", "primal"])
def test_printing_after_any_pass_leaves_the_result_unchanged(transform):
    plain, _ = pipeline.generate(FUN, transform, OPTIONS[transform])
    for name in pipeline.pass_names(transform):
        out = io.StringIO()
        source, _ = pipeline.generate(FUN, transform, OPTIONS[transform], after=name, out=out)
        assert source == plain, name
        printed = out.getvalue()
        assert printed.startswith(f"# ---- {transform} after {name} ----\n"), name
        assert f"def {FUN.__name__}" in printed, name
    assert printed.endswith(plain)  # after the last pass: the module itself


def test_the_environment_variable_prints_after_a_pass(monkeypatch, capsys):
    monkeypatch.setenv("S2S_DUMP_AFTER", "lower")
    pipeline.generate(FUN, "grad", OPTIONS["grad"])
    err = capsys.readouterr().err
    assert "# ---- grad after lower ----" in err and "normalized." in err


def test_an_unknown_pass_is_refused_with_the_list():
    with pytest.raises(s2s.S2SError, match="no pass 'fold'.*lower, reverse"):
        pipeline.generate(FUN, "grad", OPTIONS["grad"], after="fold")


def test_an_internal_error_names_its_pass(monkeypatch):
    def broken(unit):
        raise KeyError("boom")

    passes = tuple(pipeline.Pass(p.name, broken) if p.name == "fuse" else p for p in pipeline.PIPELINES["grad"])
    monkeypatch.setitem(pipeline.PIPELINES, "grad", passes)
    with pytest.raises(pipeline.InternalError, match="internal error in the 'fuse' pass of grad") as info:
        pipeline.generate(FUN, "grad", OPTIONS["grad"])
    assert isinstance(info.value.__cause__, KeyError)


def test_the_command_line_shows_the_code_after_a_pass(tmp_path):
    target = "examples/regression.py:loss"
    lowered = subprocess.run([sys.executable, "-m", "s2s", "show", target, "--after", "lower"],
                             capture_output=True, text=True, check=True).stdout
    assert lowered.startswith("# ---- grad after lower ----") and "def loss(params, x, y):" in lowered
    assert "loss_vjp" not in lowered
    swept = subprocess.run([sys.executable, "-m", "s2s", "show", target, "--after", "reverse"],
                           capture_output=True, text=True, check=True).stdout
    assert "def loss_vjp(" in swept and "def loss_value_and_grad(" in swept
