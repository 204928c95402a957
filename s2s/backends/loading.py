"""Generated source as modules: stored in a real file of the cache, imported once per process,
and for the cpu backend every function compiled by numba.njit."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings

from ..driver import cache
from ..errors import S2SError
from ..runtime import overloads

BACKENDS = ("python", "cpu", "cuda")


def write_module(source: str, stem: str) -> str:
    """Store generated source in a real file (tracebacks, pdb, inspect and Numba's on-disk
    cache need one), named by its hash so that later processes find the same file."""
    directory = cache.usable_dir(os.path.join(cache.user_cache_dir(), "modules"))
    # The name also changes with s2s's own code: Numba's cache of this file keeps the runtime
    # overloads compiled into it, and only checks the file itself. It does not record the
    # LLVM optimisation level either: code compiled under NUMBA_OPT (the test suite lowers it)
    # is kept apart from code compiled at Numba's default.
    key = cache.implementation_fingerprint() + os.environ.get("NUMBA_OPT", "") + source
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    path = os.path.join(directory, f"{stem}_{digest}.py")
    if not os.path.exists(path) or _read(path) != source:
        cache.write_atomic(path, source)
    return path


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


_loaded: dict[tuple[str, str], types.ModuleType] = {}
# Compiled functions by what decides their machine code: modules of different transforms
# of one function hold the same function (grad, jacrev and hessian modules each hold f_vjp),
# which is compiled once per process, not once per module.
_compiled: dict[tuple[str, bool], object] = {}


def _function_keys(source: str) -> dict[str, str]:
    """For each top-level function of generated source, a hash of its code, of the module's
    other statements (imports, constants) and of every generated function it calls, directly
    or not: two functions with equal keys compile to the same code."""
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    context = "\n".join(ast.dump(node) for node in tree.body if not isinstance(node, ast.FunctionDef))
    code = {name: ast.dump(node) for name, node in functions.items()}
    calls = {name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in functions}
             for name, node in functions.items()}
    keys = {}
    for name in functions:
        reached, stack = {name}, [name]
        while stack:
            for callee in calls[stack.pop()] - reached:
                reached.add(callee)
                stack.append(callee)
        text = "\n".join([name, context] + [f"{n}\n{code[n]}" for n in sorted(reached)])
        keys[name] = hashlib.sha256(text.encode()).hexdigest()
    return keys


def import_generated(source: str, stem: str, suffix: str = "") -> types.ModuleType:
    """Generated source as the module s2s_generated.<its file><suffix>, from a real file in the
    cache (so that s2s and inspect can read its functions again), imported once per process and
    under cache.LOCK: another thread never finds it in sys.modules half executed."""
    with cache.LOCK:
        path = write_module(source, stem)
        name = f"s2s_generated.{os.path.splitext(os.path.basename(path))[0]}{suffix}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module


def load(source: str, stem: str, backend: str = "python", parallel: tuple[str, ...] = ()) -> types.ModuleType:
    """Import generated source as a module; for "cpu", every function is numba.njit'ed, and
    the functions named in `parallel` (batched drivers over runtime.prange) with parallel=True.
    Only the outermost driver is parallel: Numba's default threading layer cannot nest.
    Every function releases the GIL (nogil=True), so that the shards of s2s.pmap, each on its
    own thread, run at the same time. Loading is under cache.LOCK: threads that load one
    module at once get one module, and each function is compiled once."""
    if backend not in BACKENDS:
        raise S2SError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "cuda":
        raise S2SError("backend='cuda' compiles s2s.vmap of per-example code (one thread per example)",
                       hint="write s2s.jit(s2s.vmap(f, in_axes=...), backend='cuda'), or use backend='cpu'")
    with cache.LOCK:
        return _load(source, stem, backend, parallel)


def _load(source: str, stem: str, backend: str, parallel: tuple[str, ...]) -> types.ModuleType:
    path = write_module(source, stem)
    key = (path, backend)
    if key in _loaded:
        return _loaded[key]
    module_name = f"s2s_generated.{os.path.splitext(os.path.basename(path))[0]}_{backend}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    if backend == "cpu":
        import numba

        from .numba_pipeline import GeneratedCodeCompiler

        overloads.register_numba()
        overloads.special.ensure_symbols_for(source)  # (SciPy's C functions, by name: only where called)
        # A try probe is called in object mode (runtime.objmode), which holds the GIL for that
        # call alone: Numba's warning that the block runs without nogil says nothing to the user.
        warnings.filterwarnings("ignore", message=".*Code running in object mode won't allow parallel execution",
                                category=numba.NumbaWarning)
        # Numba's compiler, with NumPy's sum of two booleans (numba_pipeline.py), and NumPy's
        # division: x[i] / 0.0 and the derivative of log(x) at 0 are inf or nan, as NumPy's
        # scalars give them, where Numba's default (Python's) raises ZeroDivisionError.
        compile_ = functools.partial(numba.njit, cache=True, nogil=True, error_model="numpy",
                                     pipeline_class=GeneratedCodeCompiler)
        keys = _function_keys(source)
        inlined = inlined_functions(source, parallel)
        for attr, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType) and value.__module__ == module_name:
                if getattr(value, "__s2s_python__", False):
                    continue  # (a try probe, which compiled code calls in object mode: runtime.runs_as_python)
                shared = (keys.get(attr), attr in parallel, attr in inlined)
                if shared[0] is None or value.__name__ != attr:  # not a generated `def`
                    setattr(module, attr, compile_(parallel=attr in parallel)(value))
                    continue
                if shared not in _compiled:
                    options = {"inline": "always"} if attr in inlined else {"parallel": attr in parallel}
                    _compiled[shared] = compile_(**options)(value)
                setattr(module, attr, _compiled[shared])
    _loaded[key] = module
    return module


# A wrapper of at most this many statements, without loops, is inlined into its one caller
INLINED_STATEMENTS = 8


def inlined_functions(source: str, parallel: tuple[str, ...] = ()) -> set[str]:
    """The generated functions that Numba inlines into their caller (inline="always") rather than
    compiles on their own: small wrappers without loops (a nested grad's helper, a TrainState's
    apply_gradients) that one call of another function calls and nothing else names. Numba
    optimises a compiled function again inside each function that links it, so each level of
    calls costs LLVM's time over all the code below it: a train_step's first compile took 50-54 s
    with its wrappers inlined against 64 s. Inlining larger functions was measured too and made
    other first compiles slower (an MLP's gradient by a third): each caller's typing grows. Never
    inlined: a function with a Python block (objmode) or a prange loop, one a parallel driver calls."""
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    named: dict[str, int] = {}
    callers: dict[str, list[str]] = {}
    for caller, node in functions.items():
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in functions:
                named[n.id] = named.get(n.id, 0) + 1
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions:
                callers.setdefault(n.func.id, []).append(caller)
    inlined = set()
    for name, its_callers in callers.items():
        node = functions[name]
        if len(its_callers) != 1 or named.get(name) != 1 or its_callers[0] in (*parallel, name) \
                or len(node.body) > INLINED_STATEMENTS:
            continue
        if any(isinstance(n, (ast.For, ast.While, ast.With, ast.Try)) for n in ast.walk(node)):
            continue
        if any(isinstance(n, ast.Attribute) and n.attr in ("prange", "objmode") for n in ast.walk(node)):
            continue
        inlined.add(name)
    return inlined


def forget_numba_caches() -> None:
    """Empty the on-disk Numba caches of every generated function loaded: their next call
    compiles again (and caches anew). For a stale cache that names a generated module whose
    file is gone."""
    dispatchers = list(_compiled.values()) + [value for module in _loaded.values() for value in vars(module).values()]
    for dispatcher in dispatchers:
        stored = getattr(dispatcher, "_cache", None)
        if stored is not None and hasattr(stored, "flush"):
            stored.flush()


class _GeneratedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `s2s_generated.<file>_<backend>`, the names load() gives generated modules, from
    the cache's files. Numba's on-disk cache records the module of a compiled function's
    globals by name, and one module's functions may call another's (load() shares equal
    functions between modules): a later process that loads only the second would otherwise
    fail with ModuleNotFoundError while reading the cache. The module is loaded as load() does."""

    PACKAGE = "s2s_generated"

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.PACKAGE:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if not fullname.startswith(self.PACKAGE + "."):
            return None
        base, _, backend = fullname[len(self.PACKAGE) + 1:].rpartition("_")
        file = os.path.join(cache.user_cache_dir(), "modules", base + ".py")
        if backend not in BACKENDS or not os.path.exists(file):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin=file)

    def create_module(self, spec):
        if spec.name == self.PACKAGE:
            return None
        base, _, backend = spec.name[len(self.PACKAGE) + 1:].rpartition("_")
        return load(_read(spec.origin), base.rsplit("_", 1)[0], backend)

    def exec_module(self, module):
        if module.__name__ == self.PACKAGE:
            module.__path__ = []


if not any(isinstance(f, _GeneratedModules) for f in sys.meta_path):
    sys.meta_path.append(_GeneratedModules())
