"""The one exception type s2s raises about user code."""

from __future__ import annotations

import functools
import os
import time
import types
from dataclasses import dataclass
from typing import Callable

from . import progress
from .options import config


@dataclass(frozen=True)
class Origin:
    """Where a statement of the user's program came from."""

    filename: str
    line: int
    column: int
    text: str  # the source line, stripped, for messages and origin comments

    def short(self) -> str:
        import os

        return f"{os.path.basename(self.filename)}:{self.line}"

    @classmethod
    def of_frame(cls, frame: types.FrameType) -> "Origin":
        """Where a running frame is: the line and column of the instruction it runs (a call of
        s2s's, for an error raised at the user's line while the user's code runs)."""
        import linecache

        positions = list(frame.f_code.co_positions())
        at = frame.f_lasti // 2
        line, _, column, _ = positions[at] if at < len(positions) else (None,) * 4
        line = line or frame.f_lineno
        text = (linecache.getline(frame.f_code.co_filename, line) or "").strip()
        return cls(frame.f_code.co_filename, line, (column or 0) + 1, text)


class S2SError(Exception):
    """A construct s2s cannot transform correctly.

    The message names the file, line and column of the user's code, the construct,
    and what to do instead.
    """

    def __init__(self, message: str, origin: Origin | None = None, hint: str = ""):
        self.origin = origin
        self.reason = message
        self.hint = hint
        text = message
        if hint:
            text += f"; {hint}"
        if origin is not None:
            text = f"{origin.filename}:{origin.line}:{origin.column}: {text}"
            if origin.text:
                text += f"\n    {origin.text}"
        super().__init__(text)


S2SError.__module__ = "s2s"  # (as the user imports it: tracebacks print s2s.S2SError)


class NoBatchingRule(S2SError):
    """A statement has no batching rule (transforms/vectorize.py): batch by a loop over the
    examples instead (transforms/batching.py)."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _own_frames_removed(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without the frames of s2s's own files (generated modules live elsewhere
    and stay: an error in them is at a line the user can read)."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            kept.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for frame in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return rebuilt


def user_facing(fun: Callable) -> Callable:
    """Decorate an entry point that runs the user's function: an S2SError leaves it with s2s's own
    frames taken out of its traceback, as JAX filters its tracebacks, so that it ends at the
    user's call and the message names the user's line. `s2s.config.update("jax_traceback_filtering",
    "off")` (or JAX_TRACEBACK_FILTERING=off) keeps every frame. While an s2s.profiler trace is
    open, each call is recorded there."""

    @functools.wraps(fun)
    def entry(*args, **kwargs):
        start = time.perf_counter() if progress.recorders else None  # (a profiler trace is open)
        try:
            return fun(*args, **kwargs)
        except S2SError as error:
            if config.jax_traceback_filtering == "off":
                raise
            raise error.with_traceback(_own_frames_removed(error.__traceback__))  # (s2s's frames hidden: JAX_TRACEBACK_FILTERING=off shows them)
        finally:
            if start is not None:
                progress.record("call", f"call: {_call_name(fun, args)}", start, time.perf_counter())

    return entry


def _call_name(fun: Callable, args: tuple) -> str:
    """`Transformed of loss (model.py:12)`: the transform object called, and the user's function."""
    owner = args[0] if args else None
    what = getattr(owner, "fun", None)
    return f"{type(owner).__name__} of {progress.describe(what)}" if what is not None else fun.__qualname__
