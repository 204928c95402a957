"""`s2s check module.py`: which transforms and backends will take each function, found without
compiling anything, with the first blocker of each refusal at the user's file:line:column.

For every function it generates the code of each transform (the same pipeline the API runs,
so a refusal here is the S2SError the API would raise), and for the cpu backend it asks
Numba's typing registry, without compiling, whether Numba knows every NumPy and math function
the generated code calls; for the cuda backend (s2s.jit(s2s.vmap(f), backend="cuda")) it
rewrites the per-example code into kernel form, which refuses what a kernel cannot run. What only a call can decide (argument types and shapes: a list of
arrays, a dict, a stack of matrices for np.linalg) is checked when the function is called.
s2s/limits.py (docs/limits.md) lists what s2s.jit does not compile, and which of it check finds: the
NumPy functions Numba does not know, and the runtime helpers whose Numba form refuses every call.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import driver, limits
from ..backends.failures import origin_above
from ..codegen.cuda import device_functions
from ..errors import S2SError
from .. import runtime
from ..runtime import overloads
from .jacobians import SecondOrder
from .vmap_source import loop_source

BACKENDS = ("python", "cpu", "cuda")
# (row, what the API call is)
TRANSFORMS = (
    ("jit", "s2s.jit(f)"),
    ("grad", "s2s.grad(f)"),
    ("jvp", "s2s.jvp(f, ...)"),
    ("hessian", "s2s.hessian(f)"),
    ("vmap", "s2s.jit(s2s.vmap(f))"),
)
# The cuda backend runs s2s.jit(s2s.vmap(f), backend="cuda"): the vmap row is checked for it
# statically; the kernels of gradients depend on the arguments' kinds, known at the call.
NOT_CHECKED_FOR_CUDA = ("backend='cuda' takes s2s.jit(s2s.vmap(...)) only; the kernel form of this transform "
                        "is checked when it is called with example arguments", "call it, or use backend='cpu'")


@dataclass
class Blocker:
    """Why one transform or backend will not take the function: the first statement in the way."""

    where: str  # file:line:column, or the function where the statement is not known
    statement: str
    reason: str
    way_out: str

    def lines(self) -> list[str]:
        first = f"{self.where}  {self.statement}".rstrip() if self.statement else self.where
        return [first, f"    {self.reason}", f"    way out: {self.way_out}"]


def _blocker(exc: S2SError, fn) -> Blocker:
    origin = exc.origin
    if origin is None:
        where = f"{inspect.getsourcefile(fn)}:{fn.__code__.co_firstlineno}:1 (function {fn.__name__})"
        return Blocker(where, "", exc.reason, exc.hint or "see the message")
    return Blocker(f"{origin.filename}:{origin.line}:{origin.column}", origin.text, exc.reason,
                   exc.hint or "see the message")


def _generate(fn, row: str):
    """(source, user files) of the transform the row names, or raise its S2SError."""
    if row == "hessian":
        return SecondOrder(fn, 0, 0, scalar=False).source, _user_files(fn)
    if row == "vmap":
        return loop_source(fn, 0), _user_files(fn)
    transform, options = {"jit": ("primal", {}), "grad": ("grad", {"argnums": [0]}), "jvp": ("jvp", {})}[row]
    source, dependencies = driver.generate(fn, transform, options)
    return source, _user_files(fn, dependencies["functions"])


def _user_files(fn, callees=()) -> dict[str, str]:
    files = {}
    for f in (fn, *callees):
        try:
            path = inspect.getsourcefile(f)
        except TypeError:
            continue
        if path:
            files[os.path.basename(path)] = path
    return files


def _numba_typing():
    """Numba's typing context with its NumPy and linalg registries and s2s's overloads loaded."""
    from numba.core.registry import cpu_target

    overloads.register_numba()
    cpu_target.target_context.refresh()
    cpu_target.typing_context.refresh()
    return cpu_target.typing_context


def _resolved(node: ast.expr):
    """The numpy or math object an `np.x`, `np.linalg.x` or `math.x` expression names, or None."""
    path = []
    while isinstance(node, ast.Attribute):
        path.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in ("np", "math") or not path:
        return None
    value = np if node.id == "np" else math
    for part in reversed(path):
        value = getattr(value, part, None)
    return value


def _refused_helper(func: ast.expr):
    """(key, Limit) where func is `runtime.name`, a helper whose Numba form refuses every call."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "runtime":
        return limits.refused_helper(func.attr)
    return None


def numba_blocker(source: str, files: dict[str, str], written_out: Any = None) -> Blocker | None:
    """The first call in a generated module to a NumPy or math function Numba does not know, or to a
    runtime helper whose Numba form refuses every call (s2s/limits.py: Limit.helpers); a loop over a
    dict (runtime.dict_keys) only outside the function written_out names (s2s.jit generates the code
    of the function it is given for the call, which writes a dict argument's loop out key by key:
    frontend/dict_loops.py; a function it calls keeps the loop)."""
    typing = _numba_typing()
    lines = source.splitlines()
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    for call in sorted(calls, key=lambda node: (node.lineno, node.col_offset)):
        found = _refused_helper(call.func)
        origin = origin_above(lines, call.lineno, files) if found is not None else None
        if found is not None and not (ast.unparse(call.func) == "runtime.dict_keys" and _inside(origin, written_out)):
            key, limit = found
            where = f"{origin.filename}:{origin.line}:{origin.column}" if origin else "generated code"
            return Blocker(where, origin.text if origin else "",
                           f"s2s.jit does not compile {limit.what} (docs/pages/limits.md: {key})", limit.way_out)
        value = _resolved(call.func)
        if value is None:
            continue
        try:
            known = typing._get_global_type(value) is not None
        except Exception:  # noqa: BLE001 - an object Numba cannot even describe
            known = False
        if known:
            continue
        spelled = ast.unparse(call.func)
        origin = origin_above(lines, call.lineno, files)
        where = f"{origin.filename}:{origin.line}:{origin.column}" if origin else "generated code"
        return Blocker(where, origin.text if origin else "", f"Numba does not compile {spelled}",
                       "backend='python' runs it as NumPy, or write it with functions Numba knows")
    return None


def _inside(origin, fn) -> bool:
    """Is the user's statement at origin in fn's own source lines?"""
    if origin is None or fn is None:
        return False
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn)
    except (OSError, TypeError):
        return False
    return os.path.basename(origin.filename) == os.path.basename(path) and first <= origin.line < first + len(lines)


def cuda_blocker(fn) -> Blocker | None:
    """The first statement of fn (and the functions it calls) that a CUDA kernel cannot run,
    as s2s.jit(s2s.vmap(fn), backend="cuda") would refuse it before compiling."""
    source, dependencies = driver.generate(fn, "primal", {})
    lines, files = source.splitlines(), _user_files(fn, dependencies["functions"])
    try:
        device_functions(source, dependencies["entries"]["name"], [], lambda line: origin_above(lines, line, files))
    except S2SError as exc:
        return _blocker(exc, fn)
    return None


def check_function(fn) -> dict:
    """{row: {backend: None (accepted) or Blocker}} for one function."""
    report = {}
    for row, _ in TRANSFORMS:
        try:
            source, files = _generate(fn, row)
        except S2SError as exc:
            blocker = _blocker(exc, fn)
            report[row] = {"python": blocker, "cpu": blocker, "cuda": blocker}
            continue
        # (s2s.jit generates the function's code for the call: a loop over a dict argument is then
        # written out for its keys, which only the call knows)
        report[row] = {"python": None, "cpu": numba_blocker(source, files, written_out=fn)}
        report[row]["cuda"] = cuda_blocker(fn) if row == "vmap" else Blocker("", "", *NOT_CHECKED_FOR_CUDA)
    return report


def render(fn, report: dict) -> str:
    """The report of one function as a table, then the blockers it refers to, numbered."""
    where = f"{inspect.getsourcefile(fn)}:{fn.__code__.co_firstlineno}"
    out = [f"{fn.__name__}  ({where})", f"  {'':<9}" + "".join(f"{b:<10}" for b in BACKENDS).rstrip()]
    notes: list[Blocker] = []
    for row, _ in TRANSFORMS:
        cells = []
        for backend in BACKENDS:
            blocker = report[row][backend]
            if blocker is None:
                cells.append("ok")
            elif blocker.reason == NOT_CHECKED_FOR_CUDA[0]:
                cells.append("-")
            else:
                if blocker not in notes:
                    notes.append(blocker)
                cells.append(f"no [{notes.index(blocker) + 1}]")
        out.append((f"  {row:<9}" + "".join(f"{c:<10}" for c in cells)).rstrip())
    out.append("  cuda: s2s.jit(s2s.vmap(f), backend='cuda') is checked (vmap); '-': checked at the call")
    out.append("  cpu: 'ok' where no limit of docs/limits.md that check can see applies; those that depend on the "
               "arguments' types and shapes are found at the call")
    for k, blocker in enumerate(notes, 1):
        first, *rest = blocker.lines()
        out.append(f"  [{k}] {first}")
        out.extend(f"  {line}" for line in rest)
    return "\n".join(out)


def as_json(fn, report: dict) -> dict:
    return {"function": fn.__name__, "file": inspect.getsourcefile(fn), "line": fn.__code__.co_firstlineno,
            "transforms": {row: {b: (None if v is None else asdict(v)) for b, v in cells.items()}
                           for row, cells in report.items()}}


def accepted_everywhere(report: dict) -> bool:
    """Every transform on python and cpu (the exit status; cuda is reported, not required)."""
    return all(cells[b] is None for cells in report.values() for b in BACKENDS[:2])


def dumps(items: list[dict]) -> str:
    return json.dumps(items, indent=2)

