"""The `s2s` command: transform, show and cache, sharing one engine with the API and the hook."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import io
import os
import sys
import tokenize
import traceback

from ..version import __version__
from .. import driver
from ..driver import cache
from ..errors import S2SError
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
    spec.loader.exec_module(module)
    return module


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


def generated_source(fn, mode: str, in_axes=0) -> str:
    """The same text the API and the import hook produce for this function and mode (for vmap,
    what s2s.jit(s2s.vmap(fn, in_axes)) compiles: the loop over the examples)."""
    if mode == "vmap":
        return loop_source(fn, in_axes)
    options = MODES[mode]
    if options is None:
        options = {"argnums": list(range(_parameter_count(fn))), "has_aux": False}
        return _source(fn, "vjp", options)
    return _source(fn, mode, options)


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
    for fn in selected_functions(module, args.function):
        for mode in modes:
            try:
                source = generated_source(fn, mode, in_axes)
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
        source = generated_source(fn, mode, _in_axes(args, [mode]))
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


def cache_command(args) -> int:
    if args.action == "list":
        for path in cache.entries() + cache.entries(os.path.join(cache.user_cache_dir(), "modules")):
            print(path)
    else:
        removed = cache.clear() + cache.clear(os.path.join(cache.user_cache_dir(), "modules"))
        print(f"removed {removed} entries from {cache.user_cache_dir()}")
    return 0


IN_AXES_HELP = ("for vmap: the mapped axis of each argument, or None for one passed whole, e.g. None,0,0 "
                "(default: 0 for every argument); a mapped argument is one array, and the function returns "
                "one array or number per example (pytrees need s2s.vmap on example arguments)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s2s", description="Source-to-source differentiation of NumPy code.")
    parser.add_argument("--version", action="version", version=f"s2s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("transform", help="write the generated code for a module's functions")
    t.add_argument("file", help="the user's .py file")
    t.add_argument("--function", action="append",
                   help="a function to transform (repeatable; default: the module's __s2s__ list, "
                        "else its public functions, skipping those s2s refuses)")
    t.add_argument("--mode", default="grad", help="comma-separated transforms: grad (reverse mode with "
                   "respect to the first argument), vjp (reverse mode, all arguments), jvp (forward mode), "
                   "vmap (a loop over the examples, mapped as --in-axes says)")
    t.add_argument("--in-axes", help=IN_AXES_HELP)
    t.add_argument("-o", "--output", default="generated", help="output directory (default: generated/)")
    t.set_defaults(run=transform)
    s = sub.add_parser("show", help="print the generated code of one function")
    s.add_argument("target", help="FILE.py:NAME")
    s.add_argument("--mode", default="grad", help="grad, vjp, jvp or vmap (default: grad)")
    s.add_argument("--in-axes", help=IN_AXES_HELP)
    s.add_argument("--after", metavar="PASS", help="print the code as it stands after this pass of the "
                   "transform's pipeline (lower; for grad and vjp plan, forward_sweep, reverse_sweep, vjp_module; "
                   "for jvp forward; then numba_routes, fuse, overlaps, loops, unparse, format)")
    s.set_defaults(run=show)
    k = sub.add_parser("check", help="report, without compiling, which transforms and backends take each "
                       "function, and the first blocker of each refusal")
    k.add_argument("file", help="the user's .py file")
    k.add_argument("--function", action="append",
                   help="a function to check (repeatable; default: the module's __s2s__ list, else its "
                        "public functions)")
    k.add_argument("--json", action="store_true", help="the report as JSON")
    k.set_defaults(run=check)
    c = sub.add_parser("cache", help="list or clear the cache of generated code")
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
