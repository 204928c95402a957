"""The one exception type s2s raises about user code."""

from __future__ import annotations

from dataclasses import dataclass


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


class NoBatchingRule(S2SError):
    """A statement has no batching rule (transforms/vectorize.py): batch by a loop over the
    examples instead (transforms/batching.py)."""
