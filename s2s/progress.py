"""What s2s is doing, when it takes a while: a transform written or compiled for more than about a
second says so on stderr, then how long it took, through Python's logging (the logger "s2s").

    logging.getLogger("s2s").setLevel(logging.WARNING)   # silence it
    logging.getLogger("s2s").handlers[:] = [my_handler]  # send it elsewhere
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from typing import Any, Iterator



class _Stderr(logging.StreamHandler):
    """A handler that writes to sys.stderr as it is when it writes (a notebook's, a redirected one)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


logger = logging.getLogger("s2s")
if not logger.handlers:
    _stderr = _Stderr()
    _stderr.setFormatter(logging.Formatter("s2s: %(message)s"))
    logger.addHandler(_stderr)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # (shown once, by its own handler, whatever the root logger does)

AFTER_SECONDS = 1.0
_active = threading.local()  # the outermost piece of work on this thread speaks for the ones inside it

# Where s2s.profiler records, while a trace is open: each is called with (category, name, start,
# end), perf_counter seconds, for every piece of work and every call of a transformed function.
recorders: list = []


def record(category: str, name: str, start: float, end: float) -> None:
    """Tell the open traces of a piece of work (category: its kind, "writing", "compiling", "call")."""
    for recorder in list(recorders):
        recorder(category, name, start, end)


def describe(fun: Any) -> str:
    """`loss (model.py:12)`: a user's function as the messages name it."""
    name = getattr(fun, "__name__", None) or type(fun).__name__
    code = getattr(fun, "__code__", None)
    if code is None:
        return name
    return f"{name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


@contextlib.contextmanager
def progress(doing: str) -> Iterator[None]:
    """Say `doing ...` if the work inside takes longer than AFTER_SECONDS, then how long it took
    (and record it, where a profiler trace is open)."""
    if recorders:
        begun = time.perf_counter()
        try:
            with _said(doing):
                yield
        finally:
            record(doing.split(" ")[0], doing, begun, time.perf_counter())
        return
    with _said(doing):
        yield


@contextlib.contextmanager
def _said(doing: str) -> Iterator[None]:
    """The saying: by the outermost piece of work on this thread only."""
    if getattr(_active, "depth", 0):
        _active.depth += 1
        try:
            yield
        finally:
            _active.depth -= 1
        return
    shown = threading.Event()

    def announce() -> None:
        shown.set()
        logger.info("%s ...", doing)

    start = time.perf_counter()
    timer = threading.Timer(AFTER_SECONDS, announce)
    timer.daemon = True
    timer.start()
    _active.depth = 1
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        _active.depth = 0
        timer.cancel()
        timer.join()  # (an announcement under way is written before the last word)
        if shown.is_set():
            ended = "stopped after" if failed else "done in"
            logger.info("%s: %s %.1f s", doing, ended, time.perf_counter() - start)
