"""Find a function's source, parse it with libcst and resolve the names it uses."""

from __future__ import annotations

import builtins
import hashlib
import inspect
import linecache
import math
import textwrap
import types
import weakref
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
    if fn.__code__.co_name == LAMBDA:
        return _parse_lambda(fn)
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


LAMBDA = "<lambda>"
_LAMBDA_COPIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@dataclass
class _FoundLambda:
    node: cst.Lambda
    name: str  # lambda_<line>, or lambda_<line>_<k> for the k-th of several on its line
    positions: Any
    lines: list[str]


def _file_lambdas(filename: str) -> tuple[list[cst.Lambda], Any, list[str]]:
    """The lambdas of a source file, in source order, with positions; parsed once per text."""
    lines = linecache.getlines(filename)
    text = "".join(lines)
    cached = _PARSED_FILES.get(filename)
    if cached is not None and cached[0] == text:
        return cached[1]
    if not text:
        found = ([], {}, [])
    else:
        try:
            wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        except cst.ParserSyntaxError:
            found = ([], {}, [])
        else:
            positions = wrapper.resolve(PositionProvider)
            nodes = [n for n in walk_nodes(wrapper.module) if isinstance(n, cst.Lambda)]
            nodes.sort(key=lambda n: (positions[n].start.line, positions[n].start.column))
            found = (nodes, positions, text.splitlines())
    _PARSED_FILES[filename] = (text, found)
    return found


_PARSED_FILES: dict[str, tuple[str, Any]] = {}


def walk_nodes(node: cst.CSTNode):
    """node and every node under it."""
    yield node
    for child in node.children:
        yield from walk_nodes(child)


def _find_lambda(fn: Any) -> _FoundLambda:
    """The lambda expression in its file that fn's code was compiled from: the lambdas on the
    code's first line whose parameters are its parameters and whose body holds every position
    of its instructions, the innermost of them."""
    code = fn.__code__
    filename = inspect.getsourcefile(fn) or code.co_filename
    nodes, positions, lines = _file_lambdas(filename)
    line = code.co_firstlineno
    on_line = [n for n in nodes if positions[n].start.line == line]
    spans = [(a, c) for a, _, c, _ in code.co_positions() if a is not None and c is not None and (a, c) != (line, 0)]
    ends = [(b, d) for _, b, _, d in code.co_positions() if b is not None and d is not None and (b, d) != (line, 0)]
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])

    def fits(node: cst.Lambda) -> bool:
        named = [p.name.value for p in (*node.params.posonly_params, *node.params.params,
                                          *node.params.kwonly_params)]
        body = positions[node.body]
        start, end = _bytes_at(lines, body.start), _bytes_at(lines, body.end)
        return named == params and all(start <= s for s in spans) and all(e <= end for e in ends)

    fitting = [n for n in on_line if fits(n)]
    if not fitting:
        raise S2SError(f"the source of the lambda at {filename}:{line} is not available",
                       hint="define the function with `def` in a .py file")
    node = min(fitting, key=lambda n: (positions[n].end.line - positions[n].start.line,
                                       positions[n].end.column - positions[n].start.column))
    name = f"lambda_{line}" if len(on_line) == 1 else f"lambda_{line}_{on_line.index(node) + 1}"
    return _FoundLambda(node, name, positions, lines)


def _bytes_at(lines: list[str], position) -> tuple[int, int]:
    """(line, column) with the column in UTF-8 bytes, as code objects count it."""
    text = lines[position.line - 1] if 0 < position.line <= len(lines) else ""
    return position.line, len(text[:position.column].encode())


def named_lambda(fn: Any) -> Any:
    """A lambda as a function with a name generated code can use (lambda_<line>), sharing its
    code, globals, defaults and closure: jax.grad(lambda p: loss(p, x, y)) written for s2s."""
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_name != LAMBDA or fn.__name__ != LAMBDA:
        return fn
    try:
        return _LAMBDA_COPIES[fn]
    except KeyError:
        pass
    name = _find_lambda(fn).name
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__[:-len(LAMBDA)] + name
    copy.__module__ = fn.__module__
    copy.__doc__ = fn.__doc__
    _LAMBDA_COPIES[fn] = copy
    return copy


def _parse_lambda(fn: Any) -> ParsedFunction:
    """A lambda read as `def lambda_<line>(params): return body`; the function's nodes keep the
    file's positions (first_line 1, indent 0), so errors name the lambda's line and column."""
    found = _find_lambda(fn)
    lam = found.node
    statement = cst.SimpleStatementLine([cst.Return(value=lam.body)])
    block = cst.IndentedBlock([statement])
    node = cst.FunctionDef(name=cst.Name(found.name), params=lam.params, body=block)
    positions = {n: found.positions[n] for n in walk_nodes(lam)}
    for made in (node, node.name, block, statement, statement.body[0]):
        positions[made] = found.positions[lam]
    source = cst.Module([node]).code
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    return ParsedFunction(fn, node, positions, filename, 1, 0, found.lines, source, digest)


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
