"""Transform on import, for the packages a user names.

    s2s.install_import_hook("mypkg")              # a package and its submodules
    s2s.install_import_hook("numpy_financial")    # an installed package, as shipped
    s2s.install_import_hook("mylab_*")            # packages whose names match a pattern (fnmatch)

From then on, importing one of those modules runs it as usual and then, for every function the
module lists in `__s2s__ = ["loss", ...]`, writes the generated source of its gradient
(`s2s.grad(f)`, argnums=0) and of its forward mode (`s2s.jvp`) to `__pycache__/s2s/` beside the
module's bytecode. A module without `__s2s__` (an installed package, as shipped) is transformed
lazily: nothing happens at import, and the transforms of a function are written beside its
bytecode when they are first asked for (`s2s.grad(numpy_financial.pmt)`), where that folder is
writable (else in the user's cache). A function s2s cannot transform never fails the import: it
stays as it is, and its refusal is raised when its derivative is asked for. Modules outside the
named packages import exactly as before.

Later, in this process or another, `s2s.grad(mypkg.model.loss)` finds that source in the
cache (checked against the current source of the function and of every function it calls)
and runs it without importing libcst or black. The files are ordinary Python modules that
can be read, diffed and imported; each defines `<name>_vjp` (and `<name>_value_and_grad`),
or `<name>_jvp`, as `s2s.source` shows.
"""

from __future__ import annotations

import fnmatch
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from typing import Any

from .. import driver
from ..driver import cache
from ..errors import S2SError
from ..frontend import named_lambda

HOOK_TRANSFORMS = (("grad", {"argnums": [0], "has_aux": False}), ("jvp", {}))


class _TransformingLoader(importlib.abc.Loader):
    """Runs the module with the usual loader, then transforms what it lists in __s2s__."""

    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        transform_module(module)

    def __getattr__(self, name):  # get_source, get_filename, ...: inspect needs them
        return getattr(self.inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, packages: tuple[str, ...]):
        self.packages = packages

    def wants(self, fullname: str) -> bool:
        top = fullname.partition(".")[0]
        return any(fullname == p or fullname.startswith(p + ".") or fnmatch.fnmatchcase(top, p)
                   for p in self.packages)

    def find_spec(self, fullname, path, target=None):
        if not self.wants(fullname):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _TransformingLoader(spec.loader)
        return spec


def transform_module(module: Any) -> list[str]:
    """Write the cache entries for the functions module.__s2s__ names; returns their paths. A
    module's other functions are written when first asked for (cache.HOOKED_FILES)."""
    import inspect

    path = getattr(module, "__file__", None)
    if path:
        cache.HOOKED_FILES.add(os.path.abspath(path))
    written = []
    for name in getattr(module, "__s2s__", ()):
        fn = getattr(module, name, None)
        if not inspect.isfunction(fn):
            warnings.warn(f"s2s: {module.__name__}.__s2s__ names {name!r}, which is not a function", stacklevel=2)
            continue
        fn = named_lambda(fn)
        directory = cache.bytecode_cache_dir(fn)
        for transform, options in HOOK_TRANSFORMS:
            if cache.lookup(fn, transform, options) is not None:
                continue
            try:
                source, dependencies = driver.generate(fn, transform, options)
            except S2SError:
                # (refused: the function stays as it is; s2s.grad or s2s.jvp of it raises the
                # same error when it is asked for, not the import)
                continue
            written.append(cache.store(fn, transform, options, source, dependencies, directory))
    return written


def install_import_hook(*packages: str) -> None:
    """Transform modules of these packages (and their submodules) when they are imported: each
    name is a package, or a pattern of top-level package names ("mylab_*")."""
    if not packages:
        raise ValueError("install_import_hook needs at least one package name")
    for finder in sys.meta_path:
        if isinstance(finder, _Finder):
            finder.packages = tuple(sorted(set(finder.packages) | set(packages)))
            return
    sys.meta_path.insert(0, _Finder(tuple(packages)))
