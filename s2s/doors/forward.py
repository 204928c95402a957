"""Forward mode at the door: s2s.jvp, and the generated forward-mode module of a function
(ForwardTransformed) that jvp, jacfwd, hessian and s2s.jvp inside a transformed function use."""

from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .. import backends, pytree
from ..analysis.shapes import argument_facts
from ..driver import cache
from ..errors import S2SError
from ..frontend.nested import register_nested_transform
from .api import Primal, Transformed, _generated_manifest, _kinds, _source, _unbatched
from .values import scalar_like, tangent_in_primal_dtype, zero_tangent


class ForwardTransformed:
    """The generated forward-mode module of a function (jvp), loaded for a backend."""

    def __init__(self, fun: Callable, backend: str = "python", has_aux: bool = False, columns: bool = False,
                 active: tuple[int, ...] | None = None):
        fun = _unbatched(fun)
        self.fun = fun
        self.backend = backend
        self.has_aux = has_aux
        self.columns = columns  # also the compiled loops over stacks of tangents (jacfwd)
        # only these arguments have tangents (the entry takes them after the primals); the
        # others' are symbolic zeros, never multiplied (0 * inf is NaN); None: every argument
        self.active = None if active is None else tuple(active)
        self._source: str | None = None
        self._names: dict = {}  # the entry points of _source
        self._module = None
        self._entries: dict = {}
        self._by_facts: dict = {}  # kinds of the arguments -> the specialised entry (cpu)
        self.manifests: list[dict] = []  # of the modules generated or read so far
        self.watches: list = []  # cache.Watch of each: is the memo (_forward_transformed) current?
        self._parameters: list | None = None  # of fun's signature (with_defaults)

    def _generated(self, options: dict) -> tuple[str, dict]:
        source, manifest = _generated_manifest(self.fun, "jvp", options)
        self.manifests.append(manifest)
        self.watches.append(cache.Watch(manifest, self.fun))
        return source, manifest["entries"]

    def current(self) -> bool:
        for watch in self.watches:
            if not watch.current():
                return False
        return True

    @property
    def source(self) -> str:
        if self._source is None:
            options = {}
            if self.has_aux:
                options["has_aux"] = True
            if self.columns:
                options["columns"] = True
            if self.active is not None:
                options["active"] = list(self.active)
            self._source, self._names = self._generated(options)
        return self._source

    def module(self):
        if self._module is None:
            self._module = backends.load(self.source, self.fun.__name__ + "_jvp", self.backend)
        return self._module

    def entry(self, suffix: str = "_jvp"):
        if suffix not in self._entries:  # looked up once: a small jvp costs less than a getattr
            self.source  # generated with its names
            function_name = self._names.get("jvp", "") if suffix == "_jvp" else ""  # program_jvp_wrt_x_a
            self._entries[suffix] = backends.entry(self.module(), function_name or self._names["name"] + suffix,
                                                   self.fun)
        return self._entries[suffix]

    def entry_wrt(self, k: int):
        """The forward mode with respect to argument k alone, which its columns driver calls
        (the others' tangents are symbolic zeros): of a module made with columns=True."""
        suffix = f"_jvp_columns_{k}"
        if suffix not in self._entries:
            self.source  # generated with its names
            self._entries[suffix] = backends.entry(self.module(), self._names["wrt"][k], self.fun)
        return self._entries[suffix]

    def with_defaults(self, primals: tuple, tangents: tuple) -> tuple[tuple, tuple]:
        """The primals and tangents for every parameter: those the call leaves out take their
        defaults, with zero tangents (jax.jvp calls fun(*primals), so defaults are constants)."""
        if self._parameters is None:  # once: the memo is renewed when fun's defaults change
            try:
                self._parameters = list(inspect.signature(self.fun).parameters.values())
            except (TypeError, ValueError):
                self._parameters = []
        parameters = self._parameters
        if len(parameters) <= len(primals):
            return primals, tangents
        missing = [p for p in parameters[len(primals):] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if not missing or any(p.default is p.empty for p in missing):
            return primals, tangents  # too few arguments: the call raises its own TypeError
        defaults = tuple(p.default for p in missing)
        return primals + defaults, tangents + tuple(zero_tangent(d) for d in defaults)

    def call_args(self, args):
        if self.backend == "cpu":
            return tuple(pytree.to_numba(a) for a in args)
        return tuple(args)

    def specialised_source(self, args) -> str:
        """The forward module generated for these kinds of primals and tangents (s2s.jvp on
        the cpu backend): its elementwise statements over 1-d arrays run as loops."""
        return _source(self.fun, "jvp", {"facts": argument_facts(args)})

    def specialised_entry(self, args):
        key = _kinds(args)
        if key not in self._by_facts:
            options = {"facts": argument_facts(args)}
            if self.active is not None:
                options["active"] = list(self.active)
            source, names = self._generated(options)
            module = backends.load(source, self.fun.__name__ + "_jvp", self.backend)
            self._by_facts[key] = backends.entry(module, names["jvp"], self.fun)
        return self._by_facts[key]


_FORWARD: "weakref.WeakKeyDictionary | None" = None


def _forward_transformed(fun: Callable, backend: str) -> ForwardTransformed:
    """One ForwardTransformed per function and backend, as s2s.grad(f) holds one module: s2s.jvp
    is called in loops, and looking the source up in the cache on each call would dominate."""
    global _FORWARD
    if _FORWARD is None:
        _FORWARD = weakref.WeakKeyDictionary()
    try:
        per_backend = _FORWARD.setdefault(fun, {})
    except TypeError:  # not weak-referenceable: no memo
        return ForwardTransformed(fun, backend)
    # A new module where what fun captures (closure, module numbers and arrays) has changed
    # since, or what its module was made from (callees, transitively, and the constants they
    # read: cache.Watch): s2s.jvp is called anew each time, as jax.jvp traces anew.
    stamp = cache.captured_stamp(fun)
    known = per_backend.get(backend)
    if known is None or known[0] != stamp or not known[1].current():
        per_backend[backend] = (stamp, ForwardTransformed(fun, backend))
    return per_backend[backend][1]


def _nested_entry(fun: Callable) -> Callable:
    """The generated forward mode of fun that s2s.jvp(fun, ...) inside a transformed function
    calls, carrying what its module was made from (cache.NESTED_MANIFEST): the caller's
    module records those, so that it is made anew when they change."""
    transformed = _forward_transformed(fun, "python")
    entry = inspect.unwrap(transformed.entry())
    setattr(entry, cache.NESTED_MANIFEST, cache.nested_manifest(transformed.fun, transformed.manifests))
    return entry


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, backend: str = "python"):
    """Forward mode, as jax.jvp: (fun(*primals), the derivative along tangents).

    The forward-mode module of fun is generated (or read from the cache) on the first call
    and kept for later calls with the same function object, as s2s.jvp is called in loops.

    >>> import numpy as np, s2s
    >>> def f(x):
    ...     return x * np.sin(x)
    >>> out, out_dot = s2s.jvp(f, (1.0,), (1.0,))
    >>> bool(abs(out_dot - (np.sin(1.0) + np.cos(1.0))) < 1e-12)
    True
    """
    if isinstance(fun, Primal) and backend == "python":  # jvp(jit(f)) is f's forward mode, compiled
        return jvp(fun.fun, primals, tangents, backend=fun.backend)
    if isinstance(fun, Transformed) and fun.kind in ("grad", "value_and_grad") and not fun.rows:
        from .hvp import jvp_of_gradient  # (hvp.py builds on ForwardTransformed here)

        # the Hessian-vector product jvp(grad(f), (x,), (v,)): forward mode over the reverse code
        return jvp_of_gradient(fun, tuple(primals), tuple(tangents), fun.backend if backend == "python" else backend)
    if hasattr(fun, "with_backend") or isinstance(fun, Primal):  # jacfwd/jacrev, hessian, vmap; jit
        name = getattr(fun, "__name__", "the function")
        raise S2SError(f"s2s.jvp of an already transformed function ({type(fun).__name__} of {name}) is not "
                       "supported",
                       hint="take jvp of the plain function (s2s.jvp(f, ...) for jit(f)); for a Hessian-vector "
                            "product, s2s.jvp(s2s.grad(f), (x,), (v,))")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise S2SError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    for k, (p, t) in enumerate(zip(primals, tangents)):
        if [np.shape(a) for a in pytree.leaves(p)] != [np.shape(a) for a in pytree.leaves(t)]:
            raise S2SError(f"jvp: the tangent of argument {k} does not have the structure and shapes "
                           "of its primal")
        if any(isinstance(a, np.ndarray) and pytree.is_integer_leaf(a) for a in pytree.leaves(p)):
            # (as JAX, which takes only float0 tangents there; the forward mode takes every
            # argument's array as floats: a value written into a copy of it would keep its tangent)
            raise S2SError(f"jvp: argument {k} holds an array of integers (or bools), which has no tangent",
                           hint="close over it (s2s.jvp(lambda x: f(x, labels), (x,), (t,))), or pass floats")
    transformed = _forward_transformed(fun, backend)
    primals, tangents = transformed.with_defaults(primals, tangents)
    if backend == "cpu":
        tangents = tuple(scalar_like(t, p) for p, t in zip(primals, tangents))
    call = transformed.call_args(primals + tangents)
    entry = transformed.specialised_entry(call) if backend == "cpu" else transformed.entry()
    out, out_dot = entry(*call)
    if backend == "cpu":  # (dicts come back from compiled code as DictTuples)
        out, out_dot = pytree.from_numba(out), pytree.from_numba(out_dot)
    return out, tangent_in_primal_dtype(out, out_dot)


# s2s.jvp(f, ...) inside a transformed function calls f's generated forward mode.
register_nested_transform(jvp, _nested_entry)
