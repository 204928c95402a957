"""A trace of what s2s does, as jax.profiler.trace records one: `with s2s.profiler.trace(log_dir):`
(or start_trace(log_dir) ... stop_trace()) records, on every thread, each transform s2s writes,
each compilation (Numba's, or its reading of a cached one), and each call of a transformed
function, with their durations.

The trace is written, when it closes, in the Chrome trace-event format (JSON, gzipped) at
`log_dir/plugins/profile/<run>/<host>.trace.json.gz`: the file and the place TensorBoard's profile
plugin reads a trace from (its trace viewer), and a file that https://ui.perfetto.dev and
chrome://tracing open as it is. That format because every common viewer reads it and it needs no
library to write. stop_trace returns the file's path, and `with trace(log_dir) as written:` gives it
as written.path once the block has ended.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import threading
import time
from typing import Iterator

from . import progress

__all__ = ["trace", "start_trace", "stop_trace"]

_CATEGORIES = {"writing": "transform", "compiling": "compile", "call": "call"}


class _Trace:
    def __init__(self, log_dir: str):
        self.log_dir = str(log_dir)
        self.events: list[dict] = []
        self.origin = time.perf_counter()
        self.lock = threading.Lock()

    def __call__(self, category: str, name: str, start: float, end: float) -> None:
        event = {"name": name, "cat": _CATEGORIES.get(category, category), "ph": "X", "pid": os.getpid(),
                 "tid": threading.get_ident(), "ts": (start - self.origin) * 1e6, "dur": (end - start) * 1e6}
        with self.lock:
            self.events.append(event)

    def write(self) -> str:
        run = time.strftime("%Y_%m_%d_%H_%M_%S")
        folder = os.path.join(self.log_dir, "plugins", "profile", run)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{socket.gethostname()}.trace.json.gz")
        with self.lock:
            events = sorted(self.events, key=lambda e: e["ts"])
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
        return path


_open: list[_Trace] = []


def start_trace(log_dir: str) -> None:
    """Start recording (one trace at a time, as JAX's)."""
    if _open:
        raise RuntimeError("s2s.profiler: a trace is already open; stop_trace() it first")
    recorder = _Trace(log_dir)
    _open.append(recorder)
    progress.recorders.append(recorder)


def stop_trace() -> str:
    """Stop recording and write the trace: returns the file's path."""
    if not _open:
        raise RuntimeError("s2s.profiler: no trace is open; start_trace(log_dir) first")
    recorder = _open.pop()
    progress.recorders.remove(recorder)
    return recorder.write()


class TraceFile:
    """What `with trace(log_dir) as written:` names: written.path is the trace's file once the
    block has ended (None before)."""

    def __init__(self):
        self.path: str | None = None


@contextlib.contextmanager
def trace(log_dir: str) -> Iterator[TraceFile]:
    """Record what runs inside the block; the trace is written when the block ends."""
    written = TraceFile()
    start_trace(log_dir)
    try:
        yield written
    finally:
        written.path = stop_trace()
