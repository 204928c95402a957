"""Find a function's source, parse it with libcst and resolve the names it uses."""

from __future__ import annotations

import builtins
import hashlib
import inspect
import math
import textwrap
import types
from dataclasses import dataclass
from typing import Any

import libcst as cst
import numpy as np
from libcst.metadata import MetadataWrapper, PositionProvider

from .. import runtime

from ..errors import Origin, S2SError


@dataclass
class ParsedFunction:
    fn: Any
    node: cst.FunctionDef
    positions: Any  # node -> CodeRange (in the dedented snippet)
    filename: str
    first_line: int  # line number of the snippet's first line in the file
    indent: int  # columns removed by dedenting
    lines: list[str]  # the file's lines, for messages
    source: str
    source_hash: str

    def origin(self, node: cst.CSTNode) -> Origin:
        pos = self.positions[node].start
        line = self.first_line + pos.line - 1
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return Origin(self.filename, line, pos.column + self.indent + 1, text)

    def error(self, node: cst.CSTNode, message: str, hint: str = "") -> S2SError:
        return S2SError(message, self.origin(node), hint)


def parse_function(fn: Any) -> ParsedFunction:
    """Parse the source of a Python function into a libcst FunctionDef with positions."""
    if not isinstance(fn, types.FunctionType):
        raise S2SError(
            f"s2s transforms Python functions, not {type(fn).__name__} objects",
            hint="pass a function defined with `def`",
        )
    if fn.__name__ == "<lambda>":
        raise S2SError(
            "s2s cannot transform a lambda", hint="define the function with `def`"
        )
    try:
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise S2SError(
            f"the source of {fn.__qualname__} is not available ({exc})",
            hint="define the function in a .py file",
        ) from None
    raw = "".join(lines)
    source = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    node = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef)), None
    )
    if node is None:
        raise S2SError(f"could not find the definition of {fn.__qualname__}")
    try:
        with open(filename, encoding="utf-8") as handle:
            file_lines = handle.read().splitlines()
    except OSError:
        file_lines = [""] * (first_line - 1) + raw.splitlines()
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    return ParsedFunction(
        fn, node, positions, filename, first_line, indent, file_lines, source, digest
    )


_MISSING = object()


class Resolver:
    """Looks up the global (or closure) names a function reads, as real objects."""

    def __init__(self, fn: Any):
        self.globals = fn.__globals__
        self.closure: dict[str, Any] = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass

    def lookup(self, name: str) -> Any:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    def resolve(self, node: cst.BaseExpression) -> Any:
        """The object a dotted name (np.linalg.norm) refers to, or _MISSING."""
        if isinstance(node, cst.Name):
            return self.lookup(node.value)
        if isinstance(node, cst.Attribute):
            base = self.resolve(node.value)
            if base is _MISSING or not isinstance(base, types.ModuleType):
                return _MISSING
            return getattr(base, node.attr.value, _MISSING)
        return _MISSING


MISSING = _MISSING


def is_user_function(obj: Any) -> bool:
    """A Python function s2s should transform inter-procedurally."""
    if not isinstance(obj, types.FunctionType):
        return False
    module = getattr(obj, "__module__", "") or ""
    root = module.split(".")[0]
    return root not in {"numpy", "math", "s2s", "numba", "builtins"}


def spelling(obj: Any) -> str | None:
    """How generated code names a library function: np.sin, np.linalg.norm, math.exp, abs."""
    name = getattr(obj, "__name__", None)
    if name is None:
        return None
    if getattr(np, name, None) is obj:
        return f"np.{name}"
    if getattr(np.linalg, name, None) is obj:
        return f"np.linalg.{name}"
    if getattr(math, name, None) is obj:
        return f"math.{name}"
    if getattr(builtins, name, None) is obj:
        return name
    if getattr(runtime.random, name, None) is obj:
        return f"runtime.random.{name}"  # s2s.random, however the user imported it
    if getattr(runtime, name, None) is obj:
        return f"runtime.{name}"  # generated code that is transformed again
    return None
