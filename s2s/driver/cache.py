"""Generated modules on disk, shared by the API, the command line and the import hook.

An entry is the generated source of one transform of one function, stored as a .py file
whose last line is a checksum of the rest, so that a truncated or corrupted file is
detected and regenerated, never executed. Its name is derived from a key over the s2s
version, the transform and its options, and the source of the function; the entry lists
the user functions the function calls, with the hash of each one's source, and the values
of the module constants the generated code contains; a lookup checks those too (where it
calls a generated forward mode, s2s.jvp inside, it lists what that one was made from
instead: NESTED_MANIFEST). Watch checks the same list cheaply in a process. The entry
also records the module's entry points ({role: function name}, from driver.generate), which
a lookup gives back with the source, so that callers never search the text for them.
Looking an entry up needs neither libcst nor black.

Entries live in the user cache directory (S2S_CACHE_DIR, else ~/.cache/s2s), created
with user-only permissions; the import hook also writes them beside a module's bytecode
(__pycache__/s2s/). A directory or file that is not owned by the current user, or that
others can write, is refused with a warning and the entry is regenerated elsewhere.
The key also covers a fingerprint of s2s's own source and templates, so that an edited
s2s (a development checkout, a CI run on a reused machine) never reuses old entries.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import stat
import sys
import tempfile
import threading
import types
import warnings
from typing import Any

import numpy as np

from ..errors import S2SError
from ..options import config
from ..frontend.static_values import carried, carried_keys, carried_kinds, carried_objects
from ..frontend.static_values import describe as describe_static
from ..rules.custom import CustomRule
from ..runtime.constants import constant_text, is_capturable
from ..version import __version__

CHECKSUM_PREFIX = "# s2s-checksum: "
# Held while a transform is generated or looked up (doors/core._generated) and while a generated
# module is imported and wrapped for Numba (backends.load): the first calls of one function on
# several threads at once (the shards of s2s.pmap) generate, import and compile it once, and
# never see a module half imported. Re-entrant: generating a transform loads others.
LOCK = threading.RLock()
MANIFEST_PREFIX = "# s2s-manifest: "


def user_cache_dir() -> str:
    root = os.environ.get("S2S_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "s2s")
    return root


def bytecode_cache_dir(fn: Any) -> str | None:
    """The import hook's directory for fn's module: <module dir>/__pycache__/s2s."""
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return None
    if not path:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(path)), "__pycache__", "s2s")


def _trusted(path: str) -> bool:
    """Owned by us and not writable by anyone else."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return True
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


_fallback: str | None = None


def usable_dir(directory: str) -> str:
    """directory, created with mode 0700 if missing; or a private fallback if it is not trusted."""
    global _fallback
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        pass
    if os.path.isdir(directory) and _trusted(directory):
        return directory
    warnings.warn(f"s2s: not using the cache directory {directory}: it is not owned by you or others "
                  "can write to it; using a private temporary directory instead", stacklevel=3)
    if _fallback is None:
        _fallback = tempfile.mkdtemp(prefix="s2s-cache-")
    return _fallback


def _place(fn: Any) -> str:
    """Where fn is written (file and first line): generated code names the user's lines in
    its comments and errors, so a function copied elsewhere gets its own module."""
    code = getattr(_code_owner(fn), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""


def function_source(fn: Any) -> str:
    """The text that identifies fn's source: that of its code (inspect.getsource(fn) would
    follow __wrapped__ to the function a functools.wraps decorator wraps). Of a lambda,
    inspect gives its first lines only: its bytecode and constants tell an edit of the rest."""
    code = getattr(_code_owner(fn), "__code__", None)
    if code is None:
        return inspect.getsource(fn)
    text = inspect.getsource(code)
    if code.co_name == "<lambda>":
        text += "\0" + _code_fingerprint(code)
    return text


def _code_fingerprint(code: Any) -> str:
    consts = [_code_fingerprint(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return repr((code.co_code.hex(), code.co_names, code.co_varnames, code.co_freevars, consts))


def source_hash(fn: Any) -> str:
    return hashlib.sha256((_place(fn) + "\0" + function_source(fn)).encode()).hexdigest()


_fingerprint: str | None = None


def implementation_fingerprint() -> str:
    """A hash of s2s's own code and templates: an edited s2s never reuses old entries."""
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256(__version__.encode())
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # s2s/
        # Installed, the templates are s2s/templates (inside the walk); in a checkout, ../templates.
        checkout_templates = os.path.join(os.path.dirname(package), "templates")
        files = []
        for top in (package, checkout_templates):
            for folder, subfolders, names in os.walk(top):
                subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
                files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
        for path in files:
            with open(path, "rb") as handle:
                digest.update(os.path.basename(path).encode() + b"\0" + handle.read())
        _fingerprint = digest.hexdigest()[:16]
    return _fingerprint


def _code_owner(fn: Any) -> Any:
    """fn, or for a wrapper without code of its own (@functools.lru_cache) the function it wraps."""
    while getattr(fn, "__code__", None) is None and getattr(fn, "__wrapped__", None) is not None:
        fn = fn.__wrapped__
    return fn


def baked_state(fn: Any) -> str:
    """Values generated code takes from a function object besides its source: default
    arguments (inlined at call sites) and the values a closure captured; of an s2s.custom_vjp
    or custom_jvp, also which functions its rule is (defvjp may name others later)."""
    rule = ""
    if isinstance(fn, CustomRule):
        try:
            rule = repr([f"{f.__module__}.{f.__qualname__}" for f in fn.rule_functions()])
        except S2SError:  # no rule yet: transforming the function says so
            pass
    static = [(name, static_text(value)) for name, value in carried(fn).items()] + \
        [(name, f"{kind.__module__}.{kind.__qualname__}") for name, kind in carried_kinds(fn).items()] + \
        [(name, f"container of {keys!r}") for name, keys in carried_keys(fn).items()] + \
        [(name, f"{cls.__module__}.{cls.__qualname__}: {cls.__s2s_static_text__(held, layout)}")
         for name, (cls, held, layout) in carried_objects(fn).items()]
    fn = _code_owner(fn)
    closure = []
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure.append((name, constant_text(cell.cell_contents)))
            except ValueError:
                closure.append((name, "<empty>"))
    return repr((fn.__defaults__, getattr(fn, "__kwdefaults__", None), closure) + ((static,) if static else ())) + rule


def static_text(value: Any) -> str:
    """A static value a specialised copy carries (frontend/static_arguments.py), the same in
    every process: a Python function by its place, source and state (two lambdas of a module
    share a name)."""
    if isinstance(value, types.FunctionType):
        return f"{describe_static(value)}:{source_hash(value)}:{baked_state(value)}"
    return describe_static(value)


# The values captured_stamp records of what a function reads from its module.
_STAMPED = (int, float, complex, np.number, np.ndarray, tuple, list, dict)


def captured_stamp(fn: Any) -> str:
    """What fn now reads from its closure and its module's numbers and arrays (arrays by a
    hash of their content): a memo of a transform of fn is current while this is unchanged."""
    names = getattr(getattr(fn, "__code__", None), "co_names", ())
    scope = getattr(fn, "__globals__", {})
    read = [(n, constant_text(scope[n])) for n in names
            if isinstance(scope.get(n), _STAMPED)]
    return repr((baked_state(fn), read))


def entry_key(fn: Any, transform: str, options: dict) -> str:
    if "tape_budget" not in options:  # (reverse mode writes s2s.config's budget into the code: pipeline.py)
        options = {**options, "tape_budget": config.s2s_tape_budget}
    payload = json.dumps({"s2s": __version__, "code": implementation_fingerprint(),
                          "state": baked_state(fn), "transform": transform, "options": options,
                          "module": fn.__module__, "name": fn.__qualname__, "place": _place(fn),
                          "source": function_source(fn)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def entry_name(fn: Any, transform: str, options: dict) -> str:
    return f"{fn.__module__}.{fn.__name__}.{transform}.{entry_key(fn, transform, options)}.py"


def _seal(source: str, manifest: dict) -> str:
    body = source + MANIFEST_PREFIX + json.dumps(manifest, sort_keys=True) + "\n"
    return body + CHECKSUM_PREFIX + hashlib.sha256(body.encode()).hexdigest() + "\n"


def _unseal(text: str) -> tuple[str, dict] | None:
    """The source and manifest of an entry, or None if it is damaged."""
    body, sep, last = text.rpartition(CHECKSUM_PREFIX)
    if not sep or hashlib.sha256(body.encode()).hexdigest() != last.strip():
        return None
    source, sep, manifest = body.rpartition(MANIFEST_PREFIX)
    if not sep:
        return None
    try:
        return source, json.loads(manifest)
    except json.JSONDecodeError:
        return None


# The attribute of a generated function that a nested transform hands to the frontend
# (s2s.jvp(f, ...) inside a transformed function: api.register_nested_transform): the manifest
# of what that generated module was made from, f itself included. A module that calls it
# depends on those, not on the generated module, which another process does not have.
NESTED_MANIFEST = "__s2s_manifest__"


def callee_row(fn: Any) -> list:
    return [fn.__module__, fn.__qualname__, source_hash(fn), baked_state(fn)]


def nested_manifest(fn: Any, manifests: list[dict]) -> dict:
    """What the generated modules of fn (manifests) were made from, fn itself included."""
    merged = {"callees": [callee_row(fn)], "constants": [], "references": []}
    for manifest in manifests:
        for key in merged:
            merged[key] += manifest.get(key, [])
    return {key: _unique(rows) for key, rows in merged.items()}


def _unique(rows: list) -> list:
    return [list(r) for r in sorted({tuple(r) for r in rows})]


def callee_manifest(fn: Any, dependencies: dict) -> dict:
    callees, constants, references, generated = [], [], [], set()
    for c in dependencies.get("functions", []):
        nested = getattr(c, NESTED_MANIFEST, None)
        if nested is None:
            callees.append(callee_row(c))
            continue
        # a generated forward mode (nested s2s.jvp): what it was made from, not itself
        generated.add(c.__module__)
        callees += nested["callees"]
        constants += nested["constants"]
        references += nested["references"]
    constants += [c for c in dependencies.get("constants", []) if c[0] not in generated]
    references += [r for r in dependencies.get("references", []) if r[0] not in generated]
    return {"callees": _unique(callees), "constants": _unique(constants), "references": _unique(references),
            "entries": dependencies.get("entries", {})}


def _callees_current(fn: Any, manifest: dict) -> bool:
    """Do the user functions recorded in the manifest still have the same source, and the
    module constants the same values?"""
    for module_name, constant, text in manifest.get("constants", []):
        # (constant: a name, or an attribute a function inlines, Config.SCALE)
        if not _has_module(fn, module_name) or constant_text(_resolve(module_name, constant, fn)) != text:
            return False
    for caller_module, path, module_name, qualname in manifest.get("references", []):
        target = _resolve(caller_module, path, fn)
        if getattr(target, "__module__", None) != module_name or getattr(target, "__qualname__", None) != qualname:
            return False  # the caller's name now refers to another function
    for module_name, qualname, digest, state in manifest.get("callees", []):
        target = _resolve(module_name, qualname, fn)
        if target is None:
            return False
        try:
            if source_hash(target) != digest or baked_state(target) != state:
                return False
        except (OSError, TypeError):
            return False
    return True


def _resolve(module_name: str, path: str, fn: Any = None) -> Any:
    """What module_name.path (a dotted path) holds now, or None; the names of fn's own module
    as fn reads them (_own_globals)."""
    scope = _own_globals(fn, module_name)
    if scope is not None:
        first, _, rest = path.partition(".")
        target = scope.get(first)
        for part in rest.split(".") if rest else ():
            target = getattr(target, part, None)
        return target
    target = sys.modules.get(module_name)
    for part in path.split("."):
        target = getattr(target, part, None)
    return target


def _own_globals(fn: Any, module_name: str) -> dict | None:
    """fn's globals where they are not its module's: a function sent to another process by
    value (cloudpickle, as Dask sends a script's functions) reads the values sent with it, and
    a module of its name there, if any, is another program (a Dask worker's __main__ is the
    client's script, imported anew: its arrays as the file sets them, not as the client changed
    them). Of fn's module only; None where the module's own names are the ones read."""
    scope = getattr(fn, "__globals__", None)
    if scope is None or module_name != getattr(fn, "__module__", None):
        return None
    return None if getattr(sys.modules.get(module_name), "__dict__", None) is scope else scope


def _has_module(fn: Any, module_name: str) -> bool:
    return module_name in sys.modules or _own_globals(fn, module_name) is not None


class Watch:
    """Whether what a module was made from is unchanged in this process, cheaply: a memo of a
    generated module (doors/forward's s2s.jvp memo) asks on every call, as a lookup checks the manifest
    on disk. The callees are taken when it is made (just checked by a lookup, or just
    generated from): each must still be the object that its module's name holds (a function
    defined anew, as a notebook cell run again, is another object), with the same defaults and
    closure values; each module constant must have the same value; each name a function calls
    must hold the same function. fn: the function the module transforms, whose own closure and globals
    the memo checks itself (captured_stamp), so they are left out here."""

    # Arrays up to this size are compared by their bytes, a copy kept here; larger ones by
    # the digest of their content, as the manifest records them (no second copy of them).
    BYTES_UP_TO = 1 << 16

    def __init__(self, manifest: dict, fn: Any = None):
        # Each check reads a name from a module's namespace, kept here with the module (a
        # module removed from sys.modules and imported anew is another one: not current).
        self.callees = []
        for module_name, qualname, _digest, state in manifest.get("callees", []):
            target = _resolve(module_name, qualname)
            self.callees.append((*_place_of(module_name, qualname), target, getattr(target, "__code__", None),
                                 state))
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        own = set(getattr(getattr(fn, "__code__", None), "co_names", ())) \
            if getattr(module, "__dict__", None) is getattr(fn, "__globals__", False) else set()
        self.constants = []
        for module_name, constant, text in manifest.get("constants", []):
            value = _resolve(module_name, constant)
            if module_name == getattr(fn, "__module__", None) and constant in own and isinstance(value, _STAMPED):
                continue
            if constant_text(value) != text:
                continue  # not the module's (a closure's value, in the key and captured_stamp)
            known = None
            if is_capturable(value) and value.nbytes <= self.BYTES_UP_TO:
                known = (value.dtype, value.shape, value.tobytes())
            self.constants.append((*_place_of(module_name, constant), text, known))
        # A name a function calls must still hold the same object (a module-level lambda, whose
        # qualname names no attribute, defined anew is another one); one that is a callee's own
        # (helper in helper's module) is that callee's check.
        covered = {(m, q) for m, q, *_ in manifest.get("callees", []) if _resolve(m, q) is not None}
        self.references = [(*_place_of(r[0], r[1]), _resolve(r[0], r[1])) for r in manifest.get("references", [])
                           if (r[0], r[1]) != (r[2], r[3]) or (r[2], r[3]) not in covered]
        self.nothing = not (self.callees or self.constants or self.references)

    def current(self) -> bool:
        if self.nothing:
            return True
        for module_name, module, path, target, code, state in self.callees:
            now = _read(module_name, module, path)
            if now is not target or getattr(now, "__code__", None) is not code:
                return False
            if (getattr(now, "__defaults__", None) or getattr(now, "__kwdefaults__", None)
                    or getattr(now, "__closure__", None)) \
                    and baked_state(now) != state:
                return False
        for module_name, module, path, text, known in self.constants:
            value = _read(module_name, module, path)
            if known is not None:
                if not (isinstance(value, np.ndarray) and value.dtype == known[0] and value.shape == known[1]
                        and value.tobytes() == known[2]):
                    return False
            elif constant_text(value) != text:
                return False
        for caller_module, module, path, target in self.references:
            if _read(caller_module, module, path) is not target:
                return False
        return True


def _place_of(module_name: str, path: str) -> tuple:
    """(module name, the module now, path) for _read."""
    return module_name, sys.modules.get(module_name), path


_ABSENT = object()


def _read(module_name: str, module: Any, path: str) -> Any:
    """What module.path holds now, or _ABSENT where the module is no longer the one imported."""
    if sys.modules.get(module_name) is not module:
        return _ABSENT
    if "." not in path:
        return getattr(module, "__dict__", {}).get(path)
    return _resolve(module_name, path)


def lookup(fn: Any, transform: str, options: dict) -> tuple[str, dict] | None:
    """(source, entries) of this transform of fn, if a valid, current entry exists; entries
    names the module's entry points by role (driver.generate)."""
    found = lookup_manifest(fn, transform, options)
    return None if found is None else (found[0], found[1]["entries"])


def lookup_manifest(fn: Any, transform: str, options: dict) -> tuple[str, dict] | None:
    """(source, manifest) of this transform of fn, if a valid, current entry exists."""
    try:
        name = entry_name(fn, transform, options)
    except (OSError, TypeError):
        return None
    for directory in filter(None, (bytecode_cache_dir(fn), user_cache_dir())):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        if not (_trusted(directory) and _trusted(path)):
            warnings.warn(f"s2s: ignoring the cache entry {path}: it is not owned by you or others "
                          "can write to it", stacklevel=3)
            continue
        with open(path, encoding="utf-8") as handle:
            unsealed = _unseal(handle.read())
        if unsealed is None:
            continue  # truncated or corrupted: regenerate
        source, manifest = unsealed
        if "entries" in manifest and _callees_current(fn, manifest):
            return source, manifest
    return None


# The files of modules the import hook has seen (doors/hook.py): the transforms of their functions,
# written when first asked for, go beside their bytecode (for every later process), where that is
# writable, as the hook's own entries do.
HOOKED_FILES: set[str] = set()


def _hooked_directory(fn: Any) -> str | None:
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return None
    if not path or os.path.abspath(path) not in HOOKED_FILES:
        return None
    directory = bytecode_cache_dir(fn)
    existing = directory
    while existing and not os.path.exists(existing):
        existing = os.path.dirname(existing)
    return directory if existing and os.access(existing, os.W_OK) else None


def store(fn: Any, transform: str, options: dict, source: str, dependencies: dict,
          directory: str | None = None) -> str:
    """Write an entry atomically (temporary file, then rename); returns its path."""
    target_dir = usable_dir(directory or user_cache_dir())
    path = os.path.join(target_dir, entry_name(fn, transform, options))
    write_atomic(path, _seal(source, callee_manifest(fn, dependencies)))
    return path


def write_atomic(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def entries(directory: str | None = None) -> list[str]:
    directory = directory or user_cache_dir()
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if n.endswith(".py") and not n.startswith(".tmp-"))


def clear(directory: str | None = None) -> int:
    removed = 0
    for path in entries(directory):
        os.unlink(path)
        removed += 1
    return removed


# What s2s keeps under user_cache_dir(): the transforms' sources at its top, and in these folders the
# modules the backends import, and the small modules written for functools.partial, NumPy functions
# passed as functions, and derivatives called inside transformed functions.
AREAS = ("modules", "nested", "partials", "primitives")


def stored_files(root: str | None = None) -> dict[str, list[str]]:
    """The files of the cache by kind: "transforms" (one per function and transform), "modules"
    (what the backends import, and the helpers' modules), "compiled" (Numba's cache of them)."""
    root = root or user_cache_dir()
    found = {"transforms": entries(root), "modules": [], "compiled": []}
    for area in AREAS:
        found["modules"] += entries(os.path.join(root, area))
        compiled = os.path.join(root, area, "__pycache__")
        if os.path.isdir(compiled):
            found["compiled"] += sorted(os.path.join(compiled, n) for n in os.listdir(compiled)
                                        if n.endswith((".nbi", ".nbc")))
    return found


def clear_all(root: str | None = None) -> tuple[int, int]:
    """Remove every file of stored_files: (how many, their bytes)."""
    count = size = 0
    for paths in stored_files(root).values():
        for path in paths:
            try:
                size += os.path.getsize(path)
                os.unlink(path)
                count += 1
            except FileNotFoundError:
                pass  # (removed meanwhile by another process)
    return count, size


def cached_source(fn: Any, transform: str, options: dict, generate) -> tuple[str, dict]:
    """(source, entries) of a transform: from the cache if current, else generate() and store it.

    generate() returns (source, dependencies); it is the only path that imports libcst and black.
    """
    source, manifest = cached_manifest(fn, transform, options, generate)
    return source, manifest["entries"]


def cached_manifest(fn: Any, transform: str, options: dict, generate) -> tuple[str, dict]:
    """(source, manifest) of a transform, as cached_source: the manifest lists what the module
    was made from (Watch checks it in a process)."""
    found = lookup_manifest(fn, transform, options)
    if found is not None:
        return found
    source, dependencies = generate()
    try:
        store(fn, transform, options, source, dependencies, _hooked_directory(fn))
    except OSError as exc:
        warnings.warn(f"s2s: could not write the cache: {exc}", stacklevel=2)
    except TypeError:  # options that JSON cannot hold (a pytree key of another type): not cached
        pass
    return source, callee_manifest(fn, dependencies)
