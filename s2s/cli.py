"""The `s2s` command: transform a module's functions and write the generated source."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
import traceback

from . import __version__, pipeline
from .errors import S2SError

MODES = ("grad", "jvp")


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
    if not names:
        names = [n for n, v in vars(module).items()
                 if inspect.isfunction(v) and v.__module__ == module.__name__ and not n.startswith("_")]
    functions = []
    for n in names:
        fn = getattr(module, n, None)
        if not inspect.isfunction(fn):
            raise S2SError(f"{module.__file__} has no function named {n!r}")
        functions.append(fn)
    return functions


def output_name(fn, mode: str) -> str:
    stem = os.path.splitext(os.path.basename(inspect.getsourcefile(fn)))[0]
    return f"{stem}_{fn.__name__}_{mode}.py"


def transform(args) -> int:
    module = load_user_module(args.file)
    modes = [m.strip() for m in args.mode.split(",") if m.strip()]
    for mode in modes:
        if mode not in MODES:
            raise S2SError(f"unknown mode {mode!r}; available: {', '.join(MODES)}")
    os.makedirs(args.output, exist_ok=True)
    for fn in selected_functions(module, args.function):
        for mode in modes:
            source = pipeline.module_source(fn, mode)
            path = os.path.join(args.output, output_name(fn, mode))
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(source)
            os.replace(tmp, path)
            print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s2s", description="Source-to-source differentiation of NumPy code.")
    parser.add_argument("--version", action="version", version=f"s2s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("transform", help="write the generated code for a module's functions")
    t.add_argument("file", help="the user's .py file")
    t.add_argument("--function", action="append",
                   help="a function to transform (repeatable; default: the module's __s2s__ list, "
                        "else its public functions)")
    t.add_argument("--mode", default="grad", help="comma-separated transforms: grad (reverse mode), "
                   "jvp (forward mode); default: grad")
    t.add_argument("-o", "--output", default="generated", help="output directory (default: generated/)")
    t.set_defaults(run=transform)
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
