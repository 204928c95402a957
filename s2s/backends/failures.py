"""Numba's refusals of generated code, told as the user's statement that produced it.

Numba names the generated file and line it could not compile. Every statement of a
generated module follows a comment with its origin (`# model.py:12  y = np.sin(x) * w`), so
the nearest such comment above that line is the user's statement: the S2SError names it,
with Numba's reason in one line; Numba's whole message stays in __cause__.
"""

from __future__ import annotations

import functools
import os
import re

from ..driver.origins import _column, _in_full, _origin_above, origin_above, through_generated  # noqa: F401  (origin_above: cuda.py, check.py)
from ..errors import Origin, S2SError
from ..progress import describe, progress
from .loading import forget_numba_caches

_WHERE = re.compile(r'File "([^"]+)", line (\d+)')
_HIGHLIGHT = re.compile(r"\x1b\[[0-9;]*m")  # the terminal bold of numba-cuda's messages (seen on an H200)


_OWN = re.compile(r"(?:[\w.]*Error: )?s2s: ")


def _reason(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Failed in nopython", "During:", "File ", "^"))
              and not line.startswith(("- ", "There are ", "Of which", "Overload", "With argument", "No match",
                                       "Rejected as", "Current", "<numerous>", "Known signatures"))]
    # a runtime overload's refusal (after "TypingError: " or another class's name, as Numba prints it)
    own = [line for line in lines if _OWN.match(line)]
    reason = own[0].split("s2s:", 1)[1].strip() if own else useful[0] if useful else (
        lines[0] if lines else "a compilation error")
    signature = next((line for line in lines if line.startswith(">>>")), None)
    if signature and signature not in reason and not own:  # (s2s's own refusal says what it refuses)
        reason += f" {signature[3:].strip()}"
    return reason[:300]


def translate(exc: Exception, user_files: tuple[str, ...] = ()) -> S2SError:
    """The S2SError for a Numba error raised while compiling a generated module."""
    message = _HIGHLIGHT.sub("", str(exc))
    sources = {os.path.basename(p): p for p in user_files if p}
    origin = None
    places = _WHERE.findall(message)
    # The innermost statement of a generated module (Numba names the deepest first): in a helper
    # the function calls, the helper's statement rather than the call; else the outermost place.
    generated = [(path, line) for path, line in places if os.path.basename(os.path.dirname(path)) == "modules"]
    for path, line in generated[:1] + list(reversed(places)):
        if os.path.basename(os.path.dirname(path)) in ("modules", "s2s") or path.endswith(".py"):
            origin = _origin_above(path, int(line), sources)
            if origin is not None:
                origin = _in_full(origin)
                break
    hint = ("backend='python' runs it as NumPy; rewrite the statement for Numba, or see Numba's full message "
            "in this error's __cause__")
    # rs.randn(n, d): runtime.draw(rs, ...) of a RandomState or Generator Numba cannot type, or of one it can
    # (a module's np.random.default_rng()), whose draw's keywords (size=n) its overload cannot take
    if "Cannot determine Numba type of <class 'numpy.random" in message or "Function(<function draw at" in message:
        return S2SError("a draw from a NumPy RandomState or Generator cannot be compiled by Numba (its generators "
                        "are not NumPy's, and the object's state would not advance)", origin,
                        hint="draw the samples outside the function and pass them in, or use s2s.random with a "
                             "key (s2s.random.normal(key, shape)); backend='python' draws as NumPy does")
    if "Cannot unify" in message:  # `s = 0.0` then `s = s + x` (an array), `out = 1` then `out = out * a`
        hint = ("a variable here takes values of two types (a number and an array, or an int and a float); "
                "under Numba give it its final type from its first assignment (np.zeros_like(x) rather than "
                "0.0, 1.0 rather than 1), or use backend='python'")
        promoted = _PROMOTED.search(message)
        if promoted:
            hint = _promotion_hint(*promoted.groups())
    reason = _reason(message)
    placed = _PLACED.match(reason)
    if placed:  # s2s's own refusal, as the python backend words it (its place, what to write instead)
        return S2SError(placed.group(1), origin)
    return S2SError(f"Numba cannot compile the code generated for this statement: {reason}", origin, hint=hint)


# A refusal of a runtime overload that carries the statement's place and its way out, as the
# python backend raises it (runtime.require_fits: "model.py:12:5: scan: xs is a dict held in a ...").
_PLACED = re.compile(r"[^\s:]+\.py:\d+:\d+: (.*)$", re.S)


# Two dtypes of one array: `x = x * c` in a loop, with x float32 on entry and c a float64.
_PROMOTED = re.compile(r"Cannot unify array\((float\d+), (\d+)d, \w+\) and array\((float\d+), \2d, \w+\) "
                       r"for '([$A-Za-z_][\w$]*?)(?:\.\d+)?'")


def _promotion_hint(first: str, ndim: str, second: str, variable: str) -> str:
    """An array whose dtype changes from one iteration to the next: NumPy computes the first in
    float32 and the others in float64, which compiled code cannot (an array variable has one
    dtype); and Numba, unlike NumPy 2, also promotes float32 by a Python float or int."""
    narrow, wide = sorted((first, second), key=lambda d: int(d[5:]))
    # a generated temporary (_t3) or Numba's own ($binop_mul134): an array computed from a
    # number that the loop carries and promotes
    what = "an array computed here" if variable.startswith(("_", "$")) else f"the array {variable}"
    return (f"{what} is {narrow} on the first iteration and {wide} after (a {wide} number or array promotes "
            f"a value the loop carries; under Numba a Python number such as 1.5 does too, where NumPy keeps "
            f"{narrow}), and an array keeps one dtype in compiled code: keep the loop in {narrow} "
            f"(np.{narrow}(c) for a constant c, c.astype(np.{narrow}) for an array), or give the values it "
            f"carries their {wide} dtype before it (x = x.astype(np.{wide}), s = np.{wide}(s)), or use "
            f"backend='python'")


def _describe(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, tuple) and hasattr(type(value), "_s2s_keys"):  # (pytree.to_numba's DictTuple)
        return "a dict"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} (a list or tuple becomes a tuple under s2s.jit)"
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def _is_plain(value) -> bool:
    """An argument every generated function takes: an array of numbers, or a number."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biufc"
    return isinstance(value, (bool, int, float, complex, np.number, np.bool_))


def argument_error(function, args: tuple, exc: Exception, user_files: tuple[str, ...], fun=None) -> S2SError:
    """The S2SError for a call that Numba could not compile for these arguments: it names the
    user's function and the arguments that are neither arrays nor numbers (None, a string, a
    list where the code wants an array, an object Numba cannot type), with the statement that
    failed where Numba names one."""
    import inspect

    import numba

    name = getattr(fun, "__name__", None) or function.__name__
    try:
        params = list(inspect.signature(getattr(function, "py_func", function)).parameters)
    except (TypeError, ValueError):
        params = []
    odd = []
    for k, value in enumerate(args):
        label = params[k] if k < len(params) else f"#{k}"
        if _is_plain(value):
            continue
        try:
            numba.typeof(value)
        except (ValueError, TypeError):  # Numba cannot type it at all: nothing compiled
            where = _definition(fun)
            return S2SError(f"s2s.jit of {name}: argument {label} is {_describe(value)}, which Numba cannot take",
                            where, "pass arrays, numbers, or tuples of them, or use backend='python'")
        odd.append(f"argument {label} is {_describe(value)}")
    translated = translate(exc, user_files)
    # No argument is to blame for a refusal of s2s's own overloads (it names its cause), nor where
    # Numba cannot give one variable of the code one type (`acc = 0.0`, then `acc = acc + array`).
    if not odd or "s2s:" in str(exc) or "Cannot unify" in str(exc):
        return translated
    return S2SError(f"s2s.jit of {name}: {', '.join(odd)}, which this code cannot take under Numba "
                    f"({translated.reason.split(': ', 1)[-1]})", translated.origin,
                    "pass an array (np.asarray) or a number there, or use backend='python'")


# A refusal that names its statement: "s2s: model.py:12: np.stack of a list ..."
_LOCATED = re.compile(r"s2s: ([^\s:]+\.py):(\d+): (.*)$", re.S)


def _located(file: str, line: int, user_files: tuple[str, ...]) -> Origin | None:
    """The statement at file:line (a base name, as origin comments give it): in the user's
    file, or, where file is a generated module (a second derivative's), the user's statement
    that its line came from."""
    sources = {os.path.basename(p): p for p in user_files if p}
    origin = through_generated(Origin(sources.get(file, file), line, 1, ""), sources)
    if origin is None or origin.text:
        return origin
    try:
        with open(origin.filename, encoding="utf-8") as handle:
            text = handle.read().splitlines()[origin.line - 1].strip()
    except (OSError, IndexError):
        text = ""
    return Origin(origin.filename, origin.line, _column(origin.filename, origin.line), text)


def _definition(fun) -> Origin | None:
    """Where fun is defined: its `def` line."""
    code = getattr(fun, "__code__", None)
    if code is None:
        return None
    line = code.co_firstlineno
    return Origin(code.co_filename, line, _column(code.co_filename, line), f"def {fun.__name__}(...)")


def _while_compiling(exc: Exception) -> bool:
    """Was exc raised inside Numba's compiler (an internal assertion of its lowering), rather
    than by the compiled code as it ran?"""
    frame = exc.__traceback__
    while frame is not None:
        path = frame.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if "/numba/core/" in path and os.path.basename(path) in ("compiler.py", "lowering.py", "typed_passes.py"):
            return True
        frame = frame.tb_next
    return False


def checked(function, user_files: tuple[str, ...] = (), fun=None):
    """function (a Numba dispatcher) called so that a compilation error is an S2SError."""
    from numba.core.errors import NumbaError

    doing = f"compiling {function.__name__} with Numba" + (f", for {describe(fun)}" if fun is not None else "")

    @functools.wraps(function)
    def call(*args):
        try:
            if function.overloads:  # (compiled for some types already: the common call, not watched)
                return _recovering(function, args)
            with progress(doing):  # the first call compiles (or reads Numba's cache)
                return _recovering(function, args)
        except NumbaError as exc:
            raise argument_error(function, args, exc, user_files, fun) from exc
        except Exception as exc:
            if isinstance(exc, ValueError) and str(exc).startswith("s2s:"):
                # A runtime helper's refusal in compiled code, which keeps no traceback of the
                # statement: the statement the helper names (`where`, codegen/numba_routes.py),
                # else the function's definition, and the backend that names the statement.
                located = _LOCATED.match(str(exc))
                if located:
                    raise S2SError(located.group(3), _located(located.group(1), int(located.group(2)),
                                                              user_files)) from exc
                raise S2SError(f"{str(exc)[len('s2s:'):].strip()} (in compiled code; backend='python' names the "
                               f"statement)", _definition(fun)) from exc
            if isinstance(exc, ZeroDivisionError):
                # Compiled with NumPy's error model, a division by zero is inf or nan, as NumPy's;
                # what still raises is Numba's power of a number to a negative int (x ** -2 at 0),
                # which NumPy computes as a float power (inf).
                raise S2SError(f"division by zero in the compiled code of {getattr(fun, '__name__', '?')}: "
                               "Numba raises it for a power to a negative int (x ** -2 at 0), where NumPy gives "
                               "inf", _definition(fun),
                               "write the exponent as a float (x ** -2.0), or backend='python' runs it as NumPy "
                               "and names the statement") from exc
            if not _while_compiling(exc):
                raise
            name = getattr(fun, "__name__", None) or function.__name__
            raise S2SError(f"Numba failed while compiling the code generated for {name} ({type(exc).__name__} "
                           f"inside Numba: {str(exc)[:200] or 'no message'})", _definition(fun),
                           "backend='python' runs it as NumPy; Numba's traceback is in this error's "
                           f"__cause__{_known_cause(exc)}") from exc

    call.dispatcher = function
    return call


# Failures inside Numba's lowering whose cause in the user's code is known: (the exception's type,
# words of its message, the cause and its way out).
_KNOWN_LOWERING_FAILURES = [
    ("AssertionError", (), "a write through a boolean mask of two or more dimensions, y[mask] = v, which "
                           "Numba cannot lower: write y = np.where(mask, v, y)"),
    ("NotImplementedError", ("lowering", "getitem", ", 0, '", "...)"),
     "a[...] of a 0-d array a, which Numba cannot lower: a[()] reads its number"),
]


def _known_cause(exc: Exception) -> str:
    for kind, words, cause in _KNOWN_LOWERING_FAILURES:
        if type(exc).__name__ == kind and all(word in str(exc) for word in words):
            return f" (a known cause: {cause})"
    return ""


def _recovering(function, args):
    """function(*args), compiled again without Numba's on-disk cache where that cache names a
    generated module that no longer exists (its file was removed from s2s's cache)."""
    try:
        return function(*args)
    except ModuleNotFoundError as exc:
        if not str(getattr(exc, "name", "") or "").startswith("s2s_generated"):
            raise
        forget_numba_caches()
        return function(*args)


def runtime_refusal(exc: ValueError, user_files: tuple[str, ...] = ()) -> S2SError | None:
    """The S2SError for a runtime helper's refusal ("s2s: ...", e.g. a write through an index
    array with repeated entries) raised while generated code ran as NumPy: at the user's
    statement that the innermost generated frame of its traceback came from."""
    message = str(exc)
    if not message.startswith("s2s:"):
        return None
    sources = {os.path.basename(p): p for p in user_files if p}
    origins, frame = [], exc.__traceback__
    while frame is not None:
        path = frame.tb_frame.f_code.co_filename
        if os.path.basename(os.path.dirname(path)) == "modules":  # a generated module of the cache
            found = _origin_above(path, frame.tb_lineno, sources)
            if found is not None:
                origins.append(found)
        frame = frame.tb_next
    # the innermost statement of the user's own files (a generated vmap loop names itself)
    users = [o for o in origins if os.path.isabs(o.filename) and os.path.basename(os.path.dirname(o.filename)) != "modules"]
    origin = through_generated((users or origins or [None])[-1], sources)
    if origin is None:
        return None
    return S2SError(message[len("s2s:"):].strip(), origin)


def located(function, user_files: tuple[str, ...] = ()):
    """function (generated, run as NumPy) called so that a runtime helper's refusal names the
    user's statement."""

    @functools.wraps(function)
    def call(*args):
        try:
            return function(*args)
        except ValueError as exc:
            refusal = runtime_refusal(exc, user_files)
            if refusal is None:
                raise
            raise refusal from exc
        except KeyError as exc:  # a dict indexed with a key it lacks, at the user's statement
            key = exc.args[0] if exc.args else None
            how = (" (where this statement loops over a dict, s2s reads the dict by position, d[0], d[1], ...: "
                   "loop over d.keys(), d.values() or d.items() instead, `for k, v in d.items():`, with "
                   "enumerate(d.items()) for a counter)" if isinstance(key, int) else "")
            told = ValueError(f"s2s: no key {key!r} in a dict indexed here{how}").with_traceback(exc.__traceback__)
            refusal = runtime_refusal(told, user_files)
            if refusal is None:
                raise
            raise refusal from exc

    return call
