"""The last step of every module: black, pinned to one major version, so that the same input
gives byte-identical text."""

from __future__ import annotations


def format_source(text: str) -> str:
    import black  # here, not at the top: only a process that writes a module pays for it

    return black.format_str(text, mode=black.Mode(target_versions={black.TargetVersion.PY310}))
