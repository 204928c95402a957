"""The pipeline is a list of named passes: each can be printed after, and an internal error
names the pass it happened in."""

import ast
import io
import re
import subprocess
import sys

import numpy as np
import pytest

import s2s
from s2s.driver import pipeline

from programs import calls_in_a_loop as FUN  # a helper, a loop and a branch: every pass has work
from programs import helper_with_loop
from s2s.transforms.reverse import ForwardSweeps, ReversePlans, ReverseSweeps
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
    with pytest.raises(s2s.S2SError, match="no pass 'fold'.*lower, plan, forward_sweep, reverse_sweep, vjp_module"):
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
    swept = subprocess.run([sys.executable, "-m", "s2s", "show", target, "--after", "vjp_module"],
                           capture_output=True, text=True, check=True).stdout
    assert "def loss_vjp(" in swept and "def loss_value_and_grad(" in swept


# ---- reverse mode: plan, forward sweep, reverse sweep, module ------------------------


def spring(x, a):  # in the loop: d recomputed (cheap, from a and x), total taped (overwritten)
    total = 0.0
    for i in range(a.shape[0]):
        d = a[i] * x
        total = total * np.cos(total) + np.sin(d)
    return total


SPRING = spring.__code__.co_firstlineno  # its line; d's is SPRING + 3, total's SPRING + 4


def after(fn, transform, name, options=None):
    out = io.StringIO()
    source, _ = pipeline.generate(fn, transform, options or OPTIONS["grad"], after=name, out=out)
    return out.getvalue(), source


@pytest.mark.parametrize("transform", ["grad", "vjp"])
def test_reverse_mode_is_three_named_passes_and_the_module(transform):
    names = pipeline.pass_names(transform)
    assert names[:5] == ["lower", "plan", "forward_sweep", "reverse_sweep", "vjp_module"]
    assert "reverse" not in names


def test_each_reverse_pass_hands_an_explicit_result_to_the_next():
    unit = pipeline.Unit(FUN, "grad", OPTIONS["grad"])
    results = {}
    for step in pipeline.PIPELINES["grad"][:5]:
        step.run(unit)
        results[step.name] = (unit.plans, unit.forward_sweeps, unit.reverse_sweeps, unit.body)
    plans, forward, reverse, body = results["vjp_module"]
    # each pass adds its own result, which the next one reads, and no other
    assert [[r is None for r in results[name]] for name in ("plan", "forward_sweep", "reverse_sweep")] == [
        [False, True, True, True], [False, False, True, True], [False, False, False, True]]
    assert all(results[name][0] is plans for name in results if name != "lower")
    assert results["reverse_sweep"][1] is forward
    assert isinstance(plans, ReversePlans) and isinstance(forward, ForwardSweeps)
    assert isinstance(reverse, ReverseSweeps) and body is not None
    assert forward.plans is plans and reverse.forward is forward
    # one plan, forward sweep and reverse sweep for the entry and for the helper it calls in its loop
    assert len(plans.plans) == len(forward.sweeps) == 2
    assert [fname for _, _, fname, _ in reverse.made] == ["calls_in_a_loop_vjp", "helper_with_loop_vjp_wrt_v"]
    entry_plan = plans.plans[plans.entry]
    assert entry_plan.active_params == ["x"] and entry_plan.out_bar == "out_bar"
    assert any(action == "value" for action, _, _ in entry_plan.decisions.values())  # s is taped in the loop
    assert [d.name for d in body if isinstance(d, ast.FunctionDef)][-2:] == ["calls_in_a_loop_vjp",
                                                                             "calls_in_a_loop_value_and_grad"]


def test_the_plan_names_what_is_taped_and_recomputed():
    printed, _ = after(spring, "grad", "plan")
    assert printed.startswith("# ---- grad after plan ----\n")
    lines = printed.splitlines()
    title = f"# spring_vjp: reverse mode of spring (test_pipeline.py:{SPRING}) for the adjoints of x"
    table = lines[lines.index(title) + 1:]
    assert re.match(r"#   line +statement +rule +reads +from$", table[0])
    # the statement, its rule, the value its reverse sweep reads, where it finds it
    assert re.search(r"^#   \d+ +_t6 = np\.sin\(d\) +sin +d +recomputed$", printed, re.M)
    assert re.search(r"^#   \d+ +_t5 = total \* _t4 +mul +_t4 +a tape$", printed, re.M)
    assert re.search(r"^# +total +a tape$", printed, re.M)  # the product's other operand
    assert re.search(r"^# +shape of _t6 +a tape of its shape$", printed, re.M)
    assert f"#   recomputed at line {SPRING + 4}: d, by _t3 = a[i]; d = _t3 * x" in lines
    assert "#   active: _t4, _t5, _t6, d, total, x" in lines
    # then the code the table refers to, as lowered
    assert "def spring(x, a):" in printed and "        _t6 = np.sin(d)" in printed


def test_the_plan_names_the_reverse_modes_that_calls_ask_for():
    printed, _ = after(FUN, "grad", "plan")
    call = FUN.__code__.co_firstlineno + 3  # s = helper_with_loop(s, 2) * x
    assert f"#   call at line {call}: _t1 = helper_with_loop(s, 2) asks for helper_with_loop_vjp_wrt_v " \
           "(the adjoints of v)" in printed
    helper = f"programs.py:{helper_with_loop.__code__.co_firstlineno}"
    assert f"# helper_with_loop_vjp_wrt_v: reverse mode of helper_with_loop ({helper}) for the adjoints of v" in printed
    assert re.search(r"^#   \d+ +_t1 = np\.cos\(v\) +cos +v +a tape$", printed, re.M)


def test_the_forward_sweep_is_the_primal_with_the_pushes():
    printed, source = after(spring, "grad", "forward_sweep")
    assert printed.startswith("# ---- grad after forward_sweep ----\n")
    code = printed.split("\ndef spring_vjp(x, a, out_bar):\n", 1)[1]
    for line in ["total_tape_len = 0", "_t5_shape_tape = runtime.shape_tape()", "for i in range(_t2):",
                 "total_tape[total_tape_len] = total", "_t6 = np.sin(d)", "total = _t5 + _t6"]:
        assert line in code, line
    assert "d_tape" not in code  # d is recomputed, not taped
    assert "_bar" not in code and "pop" not in code and "return" not in code  # no reverse sweep yet
    assert "total_tape[total_tape_len] = total" in source  # as the module will have it


def test_the_reverse_sweep_pops_and_recomputes():
    printed, source = after(spring, "grad", "reverse_sweep")
    assert printed.startswith("# ---- grad after reverse_sweep ----\n")
    code = printed.split("\ndef spring_vjp(x, a, out_bar):\n", 1)[1]
    for line in ["total_bar = out_bar", "for i in range(_t2 - 1, -1, -1):", "total = total_tape[total_tape_len]",
                 f"# Recomputed rather than taped: d (test_pipeline.py:{SPRING + 3})", "d = _t3 * x",
                 "d_bar = np.cos(d) * _t6_bar", "# adjoints returned: x: x_bar"]:
        assert line in code, line
    assert "total_tape[total_tape_len] = total" not in code  # the forward sweep is left out
    assert "value_and_grad" not in printed  # the module and its wrapper come next
    assert "d_bar = np.cos(d) * _t6_bar" in source


def test_the_module_after_the_reverse_passes_is_unchanged_by_printing_them():
    plain, _ = pipeline.generate(spring, "grad", OPTIONS["grad"])
    for name in ("plan", "forward_sweep", "reverse_sweep", "vjp_module"):
        assert after(spring, "grad", name)[1] == plain, name
    module, _ = after(spring, "grad", "vjp_module")
    assert "def spring_vjp(x, a, out_bar):" in module and "def spring_value_and_grad(x, a):" in module
