"""The last step of every module: black, pinned to one major version, so that the same input
gives byte-identical text."""

from __future__ import annotations

import threading

# Threads of one process (s2s.pmap's shards, specialising their first call at once) may format
# at the same time: the first import of black happens under this lock, as a second thread that
# imports it meanwhile could find the module half made ("module 'black' has no attribute 'Mode'").
_IMPORT_LOCK = threading.Lock()


def format_source(text: str) -> str:
    with _IMPORT_LOCK:
        import black  # here, not at the top: only a process that writes a module pays for it

    return black.format_str(text, mode=black.Mode(target_versions={black.TargetVersion.PY310}))
