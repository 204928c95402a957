"""Where a statement of generated code came from: the origin comment above it
(`# model.py:12  y = np.sin(x) * w`), followed through generated modules (second derivatives
differentiate generated code) to the user's own file."""

from __future__ import annotations

import os
import re

from ..errors import Origin
from . import cache

_ORIGIN = re.compile(r"^\s*# (?:Grad of: )?([^\s:]+\.py):(\d+)  (.*)$")


def _origin_above(path: str, line: int, sources: dict) -> Origin | None:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    return origin_above(lines, line, sources)


def origin_above(lines: list[str], line: int, sources: dict) -> Origin | None:
    """The user's statement that line (1-based) of a generated module's lines belongs to: the
    nearest origin comment above it. sources: the user's files by base name."""
    for text in reversed(lines[:line]):
        found = _ORIGIN.match(text)
        if found:
            name, number, statement = found.groups()
            filename = sources.get(name, name)
            return Origin(filename, int(number), _column(filename, int(number)), statement.strip())
    return None


def through_generated(origin: Origin | None, sources: dict | None = None) -> Origin | None:
    """origin, or where it came from when it is a statement of a generated module (the code
    that a second derivative differentiates): the nearest origin comment above it, followed
    through every generated module until the user's own file."""
    directory = os.path.join(cache.user_cache_dir(), "modules")
    sources = dict(sources or {})
    for _ in range(8):  # (a module generated from a module generated from ..., a few levels)
        if origin is None:
            return None
        path = origin.filename if os.path.isabs(origin.filename) else os.path.join(directory, origin.filename)
        if os.path.basename(os.path.dirname(path)) != "modules" or not os.path.exists(path):
            return _in_full(origin)
        found = _origin_above(path, origin.line, sources)
        if found is None:
            return origin
        origin = found
    return origin


def _in_full(origin: Origin) -> Origin:
    """origin with its file's full path where an origin comment gave only its base name: the
    one loaded module of that name."""
    import sys

    if os.path.isabs(origin.filename):
        return origin
    paths = {os.path.abspath(f) for f in (getattr(m, "__file__", None) for m in list(sys.modules.values()))
             if isinstance(f, str) and os.path.basename(f) == origin.filename}
    if len(paths) != 1:
        return origin
    path = paths.pop()
    return Origin(path, origin.line, _column(path, origin.line), origin.text)


def _column(filename: str, line: int) -> int:
    """Where the statement starts on its line (1 where the file cannot be read)."""
    try:
        with open(filename, encoding="utf-8") as handle:
            text = handle.read().splitlines()[line - 1]
    except (OSError, IndexError):
        return 1
    return len(text) - len(text.lstrip()) + 1
