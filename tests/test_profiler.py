"""s2s.profiler: a trace records each transform, each compilation and each call of a transformed
function with its duration, and is written as Chrome trace events (gzipped JSON) where
TensorBoard's profile plugin looks for one."""

import gzip
import json
import os

import numpy as np
import pytest

import s2s
from s2s import progress


def cube_sum(x):
    return np.sum(x * x * x)


def test_a_trace_records_transforms_compilations_and_calls(tmp_path):
    with s2s.profiler.trace(str(tmp_path)) as written:
        gradient = s2s.jit(s2s.grad(cube_sum))
        gradient(np.ones(3))
        gradient(np.ones(3))
        s2s.grad(cube_sum)(np.ones(2))
    assert written.path.startswith(os.path.join(str(tmp_path), "plugins", "profile"))
    assert written.path.endswith(".trace.json.gz")
    with gzip.open(written.path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kinds = [(e["cat"], e["name"]) for e in events]
    assert sum(1 for cat, _ in kinds if cat == "call") == 3
    assert any(cat == "transform" and "grad of cube_sum" in name for cat, name in kinds)
    assert any(cat == "compile" and "Numba" in name for cat, name in kinds)
    first_call = next(e for e in events if e["cat"] == "call")
    compile_event = next(e for e in events if e["cat"] == "compile")
    # (the first call holds its compilation, on its thread)
    assert first_call["ts"] <= compile_event["ts"] and \
        compile_event["ts"] + compile_event["dur"] <= first_call["ts"] + first_call["dur"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert progress.recorders == []


def test_one_trace_at_a_time(tmp_path):
    s2s.profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already open"):
        s2s.profiler.start_trace(str(tmp_path))
    path = s2s.profiler.stop_trace()
    assert os.path.isfile(path)
    with pytest.raises(RuntimeError, match="no trace is open"):
        s2s.profiler.stop_trace()
