"""Tape memory of a generated reverse sweep: the values the forward sweep stored for it.

Measured on the python backend: when the reverse sweep starts, every local named `*_tape`
holds what was taped. Each stored number counts 8 bytes and each array its nbytes, as under
Numba, where tapes hold float64 values and arrays (not Python objects).
"""

from __future__ import annotations

import sys

import numpy as np


def _nbytes(value) -> int:
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return int(np.asarray(value).nbytes)


def tape_bytes(f, args) -> int:
    """Bytes on f's reverse-mode tapes when its reverse sweep starts, for one gradient call."""
    import s2s

    transformed = s2s.grad(f)
    vjp = transformed._vjp_function()
    lines = transformed.source.splitlines()
    start = next(k for k, line in enumerate(lines) if "# Reverse sweep" in line and
                 k > next(j for j, l in enumerate(lines) if l.startswith(f"def {vjp.__name__}(")))
    measured = []

    def tracer(frame, event, arg):
        if frame.f_code is not vjp.__code__:
            return None
        if event == "line" and frame.f_lineno > start + 1 and not measured:
            measured.append(sum(_nbytes(v) for k, v in frame.f_locals.items() if k.endswith("_tape")))
        return tracer

    sys.settrace(tracer)
    try:
        transformed(*args)
    finally:
        sys.settrace(None)
    return measured[0] if measured else 0
