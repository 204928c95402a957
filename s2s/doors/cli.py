"""The `s2s` command: transform, show and cache, sharing one engine with the API and the hook."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import io
import os
import re
import sys
import tokenize
import traceback
import typing

import numpy as np

from ..version import __version__
from .. import driver
from ..driver import cache
from ..errors import Origin, S2SError
from ..frontend import named_lambda
from ..rules.custom import CustomRule
from .core import _source
from .vmap_source import loop_source

# vmap: the loop over the examples, from --in-axes (vmap_source.loop_source)
MODES = {"grad": {"argnums": [0], "has_aux": False}, "vjp": None, "jvp": {}, "vmap": None}


def load_user_module(path: str):
    """Import a user's .py file by path (its directory goes on sys.path for its imports)."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise S2SError(f"no such file: {path}")
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    way_out = "s2s imports the module to find its functions, as `import` runs it: python " \
              f"{os.path.basename(path)} shows the same failure"
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise S2SError(f"the module does not parse: {exc.msg}",
                       Origin(exc.filename or path, exc.lineno or 0, exc.offset or 0, (exc.text or "").strip()),
                       way_out) from exc
    except Exception as exc:
        raise S2SError(f"importing {os.path.basename(path)} raised {type(exc).__name__}: {exc}",
                       _innermost_user_frame(exc, path), way_out) from exc
    return module


def _innermost_user_frame(exc: BaseException, path: str) -> Origin | None:
    """Where in the user's file an exception raised while importing it was (its innermost frame
    there), for the message."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == path:
            found = Origin(path, frame.lineno or 0, (frame.colno or 0) + 1, (frame.line or "").strip())
    return found


def selected_functions(module, names: list[str] | None) -> list:
    """--function names, else the module's __s2s__ list, else its public functions."""
    if not names:
        names = list(getattr(module, "__s2s__", []))
    if not names:  # (not the rules of an s2s.custom_jvp or custom_vjp: only its derivatives call them)
        rules = {id(r) for v in vars(module).values() if isinstance(v, CustomRule) for r in _rule_functions(v)}
        names = [n for n, v in vars(module).items()
                 if inspect.isfunction(v) and v.__module__ == module.__name__ and not n.startswith("_")
                 and id(v) not in rules]
    functions = []
    for n in names:
        fn = getattr(module, n, None)
        if isinstance(fn, CustomRule):
            raise S2SError(f"{n} in {module.__file__} is an s2s.{fn.kind}, whose derivatives are its rule's",
                           hint="transform the functions that call it (their modules hold its rule), or "
                                "s2s.grad(...) it from Python")
        if not inspect.isfunction(fn):
            raise S2SError(f"{module.__file__} has no function named {n!r}")
        functions.append(named_lambda(fn))  # (sq = lambda x: x * x is written as lambda_<line>)
    return functions


def _rule_functions(custom: CustomRule) -> tuple:
    try:
        return custom.rule_functions()
    except S2SError:  # no rule yet
        return ()


def parse_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    for mode in modes:
        if mode not in MODES:
            raise S2SError(f"unknown mode {mode!r}; available: {', '.join(MODES)}")
    return modes


def parse_in_axes(text: str | None):
    """--in-axes: "None,0,0" (one entry per parameter) or "0" (every parameter); default 0."""
    if text is None:
        return 0
    try:
        axes = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        raise S2SError(f"--in-axes {text!r} is not a comma-separated list of ints and None",
                       hint="e.g. --in-axes None,0,0") from None
    return list(axes) if isinstance(axes, tuple) else axes


def _parameter_count(fn) -> int:
    """The parameters of fn's generated code (*args one tuple, **kwargs none: frontend.lower.parameter_names)."""
    return sum(p.kind is not p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())


def generated_source(fn, mode: str, in_axes=0, facts: list | None = None) -> str:
    """The same text the API and the import hook produce for this function and mode (for vmap,
    what s2s.jit(s2s.vmap(fn, in_axes)) compiles: the loop over the examples). With facts (one per
    parameter: what kind of argument it is), the module specialised for them, which s2s.jit
    compiles for arguments of those kinds."""
    if mode == "vmap":
        return loop_source(fn, in_axes)
    options = MODES[mode]
    transform = mode
    if options is None:
        transform, options = "vjp", {"argnums": list(range(_parameter_count(fn))), "has_aux": False}
    if facts is not None:
        # (jvp's module takes the tangents after the primals, each of its primal's kind)
        options = {**options, "facts": facts + facts if mode == "jvp" else facts}
        if mode == "grad":
            options["value"] = False  # (as s2s.jit(s2s.grad(f)) generates it: grad does not return the value)
    return _source(fn, transform, options)


# Numba's names of the scalar types, as --signature spells them, and the kind of argument each is.
_NUMBA_SCALARS = {"float64": "float", "float32": "float", "double": "float", "f8": "float", "f4": "float",
                  "int64": "int", "int32": "int", "intp": "int", "i8": "int", "i4": "int",
                  "boolean": "bool", "bool_": "bool", "b1": "bool"}


def parse_signature(text: str, fn) -> list:
    """--signature "float64[:], float64, int64" (Numba's spelling, one type per parameter): the
    kind of each argument, as s2s.jit learns it from the arguments it is called with."""
    items = [item.strip() for item in re.split(r",(?![^\[]*\])", text.strip()) if item.strip()]
    parameters = list(inspect.signature(fn).parameters)
    if len(items) != len(parameters):
        raise S2SError(f"--signature gives {len(items)} types for the {len(parameters)} parameters of "
                       f"{fn.__name__} ({', '.join(parameters)})", hint='e.g. --signature "float64[:], float64, int64"')
    facts = []
    for item in items:
        found = re.fullmatch(r"(\w+)\s*(?:\[([:,\s]*)\])?", item)
        kind = _NUMBA_SCALARS.get(found.group(1)) if found else None
        if kind is None:
            raise S2SError(f"--signature: {item!r} is not a type s2s specialises for",
                           hint="Numba's names: float64, float32, int64, int32, boolean, with [:] per array "
                                "dimension (float64[:, :])")
        dims = found.group(2)
        if dims is None:
            facts.append(kind)
        else:
            fact = ["array", dims.count(":")]
            facts.append(fact + ["bool"] if kind == "bool" else fact)
    return facts


def facts_from_annotations(fn) -> list | None:
    """The kind of each parameter its annotation tells, or None unless every parameter's is told:
    float, int, bool and NumPy's scalar types; an array whose annotation gives its number of
    dimensions (NumPy's shape-typed `np.ndarray[tuple[int, int], np.dtype[np.float64]]`: a plain
    `np.ndarray` or `NDArray[np.float64]` does not say how many); a tuple of such kinds
    (`tuple[float, float]`)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation that does not evaluate tells nothing
        return None
    facts = [_fact_of_hint(hints.get(name)) for name in inspect.signature(fn).parameters]
    return facts if all(f is not None for f in facts) else None


def _fact_of_hint(hint):
    """The argument fact (shapes.argument_fact) that a type hint tells, or None."""
    if hint is bool or hint is np.bool_:
        return "bool"
    if hint is float or isinstance(hint, type) and issubclass(hint, np.floating):
        return "float"
    if hint is int or isinstance(hint, type) and issubclass(hint, np.integer):
        return "int"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is np.ndarray and len(args) == 2:
        shape = typing.get_args(args[0]) if typing.get_origin(args[0]) is tuple else None
        scalars = typing.get_args(args[1]) if typing.get_origin(args[1]) is np.dtype else ()
        if not shape or Ellipsis in shape or len(scalars) != 1 or not isinstance(scalars[0], type):
            return None  # (tuple[Any, ...]: NDArray's shape, any number of dimensions)
        if issubclass(scalars[0], np.bool_):
            return ["array", len(shape), "bool"]
        return ["array", len(shape)] if issubclass(scalars[0], np.number) else None
    if origin is tuple and args and Ellipsis not in args:
        items = [_fact_of_hint(a) for a in args]
        return ["tuple", items] if all(i is not None for i in items) else None
    return None


def facts_for(fn, args, mode: str) -> list | None:
    """The kinds of fn's arguments, from --signature or else fn's annotations (when they tell every
    parameter's), for the module s2s.jit compiles; None for the module for arguments of any kind."""
    if args.signature is not None:
        if mode == "vmap":
            raise S2SError("--signature applies to --mode grad, vjp and jvp (vmap's loop wraps the primal)")
        return parse_signature(args.signature, fn)
    return facts_from_annotations(fn) if mode != "vmap" else None


def source_after(fn, mode: str, after: str, in_axes=0) -> str:
    """The code of this function and mode as it stands after one pass of its pipeline
    (generated afresh, not read from the cache)."""
    if mode == "vmap":
        raise S2SError("--after shows the passes of one pipeline; the loop form of vmap wraps the "
                       "primal's module", hint="use --mode grad, vjp or jvp with --after")
    transform, options = mode, MODES[mode]
    if options is None:
        transform = "vjp"
        options = {"argnums": list(range(_parameter_count(fn))), "has_aux": False}
    captured = io.StringIO()
    driver.generate(fn, transform, options, after=after, out=captured)
    return captured.getvalue()


def output_name(fn, mode: str) -> str:
    stem = os.path.splitext(os.path.basename(inspect.getsourcefile(fn)))[0]
    return f"{stem}_{fn.__name__}_{mode}.py"


def transform(args) -> int:
    """Write each selected function's modules. Where the functions are the module's public
    ones (no --function, no __s2s__ list), one that s2s refuses at a line of the user's code
    (a driver that prints, draws random numbers or times) is skipped with that refusal on
    stderr, and the exit status is 1 only where nothing was written; a function named by
    --function or __s2s__ that s2s refuses is an error."""
    module = load_user_module(args.file)
    modes = parse_modes(args.mode)
    in_axes = _in_axes(args, modes)
    named = bool(args.function or getattr(module, "__s2s__", None))
    os.makedirs(args.output, exist_ok=True)
    written, skipped = 0, 0
    functions = selected_functions(module, args.function)
    if args.signature is not None and len(functions) != 1:
        raise S2SError(f"--signature gives the argument types of one function; {len(functions)} are selected",
                       hint="name it with --function NAME")
    for fn in functions:
        for mode in modes:
            try:
                source = generated_source(fn, mode, in_axes, facts_for(fn, args, mode))
            except S2SError as exc:
                if named or exc.origin is None:  # (no line of the user's: a usage error)
                    raise
                print(f"s2s: skipped {fn.__name__} ({mode}): {str(exc).splitlines()[0]}", file=sys.stderr)
                skipped += 1
                continue
            path = os.path.join(args.output, output_name(fn, mode))
            cache.write_atomic(path, source)
            os.chmod(path, 0o644)
            print(f"wrote {path}")
            written += 1
    if skipped:
        print(f"s2s: wrote {written}, skipped {skipped}; to choose the functions, pass --function NAME or "
              f"list them in the module's __s2s__", file=sys.stderr)
    return 0 if written else 1


def _in_axes(args, modes: list[str]):
    if args.in_axes is not None and "vmap" not in modes:
        raise S2SError("--in-axes applies to --mode vmap")
    return parse_in_axes(args.in_axes)


def _highlight(source: str) -> str:
    """ANSI colours for a terminal: keywords bold, comments dim, strings green, numbers cyan."""
    import keyword

    out, last = [], (1, 0)
    lines = source.splitlines(keepends=True)

    def text_between(start, end):
        (r0, c0), (r1, c1) = start, end
        if r0 == r1:
            return lines[r0 - 1][c0:c1] if r0 - 1 < len(lines) else ""
        return lines[r0 - 1][c0:] + "".join(lines[r0:r1 - 1]) + (lines[r1 - 1][:c1] if r1 - 1 < len(lines) else "")

    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        out.append(text_between(last, tok.start))
        text = tok.string
        if tok.type == tokenize.COMMENT:
            text = f"\x1b[2m{text}\x1b[0m"
        elif tok.type == tokenize.STRING:
            text = f"\x1b[32m{text}\x1b[0m"
        elif tok.type == tokenize.NUMBER:
            text = f"\x1b[36m{text}\x1b[0m"
        elif tok.type == tokenize.NAME and keyword.iskeyword(text):
            text = f"\x1b[1;35m{text}\x1b[0m"
        out.append(text)
        last = tok.end
    return "".join(out)


def show(args) -> int:
    path, _, name = args.target.rpartition(":")
    if not path or not name:
        raise S2SError("show takes FILE.py:NAME")
    module = load_user_module(path)
    (fn,) = selected_functions(module, [name])
    (mode,) = parse_modes(args.mode)
    if args.after:
        source = source_after(fn, mode, args.after, _in_axes(args, [mode]))
    else:
        source = generated_source(fn, mode, _in_axes(args, [mode]), facts_for(fn, args, mode))
    sys.stdout.write(_highlight(source) if sys.stdout.isatty() else source)
    return 0


def check(args) -> int:
    """The static report of `s2s check`; exit status 1 where a transform or backend refuses."""
    from . import check as checking

    module = load_user_module(args.file)
    reports = [(fn, checking.check_function(fn)) for fn in selected_functions(module, args.function)]
    if args.json:
        print(checking.dumps([checking.as_json(fn, report) for fn, report in reports]))
    else:
        print("\n\n".join(checking.render(fn, report) for fn, report in reports))
    return 0 if all(checking.accepted_everywhere(report) for _, report in reports) else 1


def _megabytes(paths: list[str]) -> str:
    size = 0
    for path in paths:
        try:
            size += os.path.getsize(path)
        except FileNotFoundError:
            pass
    return f"{size / 1e6:.1f} MB"


def cache_command(args) -> int:
    root = cache.user_cache_dir()
    if args.action == "clear":
        count, size = cache.clear_all(root)
        print(f"removed {count} files ({size / 1e6:.1f} MB) from {root}: generated code and Numba's compiled code")
        return 0
    found = cache.stored_files(root)
    if not any(found.values()):
        print(f"the cache at {root} is empty")
        return 0
    for path in found["transforms"]:
        # (an entry's name: <module>.<function>.<transform>.<key>.py)
        *named, transform, _key, _py = os.path.basename(path).split(".")
        print(f"{'.'.join(named):<48} {transform:<16} {path}")
    print(f"{len(found['transforms'])} transforms ({_megabytes(found['transforms'])}), {len(found['modules'])} "
          f"modules the backends import ({_megabytes(found['modules'])}), {len(found['compiled'])} files of "
          f"Numba's compiled code ({_megabytes(found['compiled'])}) in {root}")
    return 0


IN_AXES_HELP = ("for vmap: the mapped axis of each argument, or None for one passed whole, e.g. None,0,0 "
                "(default: 0 for every argument); a mapped argument is one array, and the function returns "
                "one array or number per example (pytrees need s2s.vmap on example arguments)")


SIGNATURE_HELP = ('the kinds of the arguments, in Numba\'s spelling ("float64[:], float64, int64"): the module is '
                  "the one s2s.jit compiles for such arguments (without it: from the annotations where they tell "
                  "every parameter's kind, e.g. alpha: float, steps: int; else the module for arguments of any kind)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s2s", description="Source-to-source differentiation of NumPy code.")
    parser.add_argument("-V", "--version", action="version", version=f"s2s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    # (--debug also after the command: SUPPRESS keeps the command's parser from resetting it)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show a traceback on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("transform", parents=[common], help="write the generated code for a module's functions "
                       "(s2s imports the module, which runs its top-level code)")
    t.add_argument("file", help="the user's .py file")
    t.add_argument("--function", action="append",
                   help="a function to transform (repeatable; default: the module's __s2s__ list, "
                        "else its public functions, skipping those s2s refuses)")
    t.add_argument("--mode", default="grad", help="comma-separated transforms: grad (reverse mode with "
                   "respect to the first argument), vjp (reverse mode, all arguments), jvp (forward mode), "
                   "vmap (a loop over the examples, mapped as --in-axes says)")
    t.add_argument("--in-axes", help=IN_AXES_HELP)
    t.add_argument("-o", "--output", default="generated", help="output directory (default: generated/)")
    t.add_argument("--signature", help=SIGNATURE_HELP)
    t.set_defaults(run=transform)
    s = sub.add_parser("show", parents=[common], help="print the generated code of one function")
    s.add_argument("target", help="FILE.py:NAME")
    s.add_argument("--mode", default="grad", help="grad, vjp, jvp or vmap (default: grad)")
    s.add_argument("--in-axes", help=IN_AXES_HELP)
    s.add_argument("--signature", help=SIGNATURE_HELP)
    s.add_argument("--after", metavar="PASS", help="print the code as it stands after this pass of the "
                   "transform's pipeline (lower; for grad and vjp plan, forward_sweep, reverse_sweep, vjp_module; "
                   "for jvp forward; then numba_routes, fuse, overlaps, loops, unparse, format)")
    s.set_defaults(run=show)
    k = sub.add_parser("check", parents=[common], help="report, without compiling, which transforms and backends "
                       "take each function, and the first blocker of each refusal (s2s imports the module)")
    k.add_argument("file", help="the user's .py file")
    k.add_argument("--function", action="append",
                   help="a function to check (repeatable; default: the module's __s2s__ list, else its "
                        "public functions)")
    k.add_argument("--json", action="store_true", help="the report as JSON")
    k.set_defaults(run=check)
    c = sub.add_parser("cache", parents=[common], help="list or clear the cache of generated code and of Numba's "
                       "compiled code")
    c.add_argument("action", choices=["list", "clear"])
    c.set_defaults(run=cache_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except S2SError as exc:
        if args.debug:
            traceback.print_exc()
        else:
            print(f"s2s: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
