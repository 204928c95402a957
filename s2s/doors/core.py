"""What every door shares: the objects that hold a transform's generated module (Transformed for
reverse mode, ForwardTransformed for forward mode, Primal for s2s.jit of a plain function), the
binding of a call's arguments to the parameters generated code takes by position, and access to
generated source through the cache (the only path to libcst and black). s2s.jit and s2s.source
are here; the other doors build on this module."""

from __future__ import annotations

import functools
import inspect
import re
import types
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .. import backends, driver
from ..tree_util import pytree
from ..analysis.shapes import argument_facts, unit_axes
from ..driver import cache
from ..errors import S2SError, user_facing
from ..frontend import static_values
from ..frontend.signatures import own_signature
from ..options import OPTIONS, config
from ..progress import describe, progress
from .primitives import as_function
from .values import numpy_scalar, private_copies, zero_tangent
from .shipping import recorded


def _generated(fun: Callable, transform: str, options: dict) -> tuple[str, dict]:
    """(source, entries): a generated module from the cache, or generated now (the only path
    to libcst and black), and the names of its entry points by role ("name": the user
    function's generated name; "vjp", "grad", "jvp", "vmap", ...: driver.pipeline)."""
    source, manifest = _generated_manifest(fun, transform, options)
    return source, manifest["entries"]


def _generated_manifest(fun: Callable, transform: str, options: dict) -> tuple[str, dict]:
    """(source, manifest), as _generated: the manifest (cache.callee_manifest) lists the
    callees, module constants and references the module was made from."""

    def generate():
        with progress(f"writing the {transform} of {describe(fun)}"):
            return driver.generate(fun, transform, options)

    def uncached():
        source, dependencies = generate()
        return source, cache.callee_manifest(fun, dependencies)

    with cache.LOCK:  # (concurrent first calls: one generates, the others find its entry)
        if not callable(fun) or getattr(fun, "__code__", None) is None:
            return uncached()  # not a Python function: let the pipeline refuse it
        try:
            return cache.cached_manifest(fun, transform, options, generate)
        except OSError:
            return uncached()


def _generated_for_call(fun: Callable, transform: str, options: dict, args) -> tuple[str, dict]:
    """(source, entries) as _generated for code specialised to a call's kinds of arguments; for
    a function that squeezes an argument's values without axes, to which of their axes have
    length 1 too (options "unit_axes"), and then entries["unit_axes"] is True: the caller keys
    the code by them (_unit_axes_key)."""
    source, entries = _generated(fun, transform, options)
    if entries.get("wants_unit_axes"):
        source, entries = _generated(fun, transform, {**options, "unit_axes": unit_axes(args)})
        entries = {**entries, "unit_axes": True}
    return source, entries


def _unit_axes_key(args) -> tuple:
    return tuple(tuple(axes) if axes is not None else None for axes in unit_axes(args))


def _source(fun: Callable, transform: str, options: dict) -> str:
    """The generated module's source (see _generated)."""
    return _generated(fun, transform, options)[0]


class _Binder:
    """Binds a call's arguments as the user's function would: keywords moved to their
    positions and defaults filled in, since generated code takes every parameter by position
    (*args as one tuple, after the positional parameters, then the keyword-only ones:
    frontend.lower.parameter_names)."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self._signature = None
        self._count = None
        self.star: int | None = None  # where *args's tuple goes, for a function that has one
        self.star_name = ""
        self.general = False  # *args, keyword-only parameters or **kwargs: bound by the signature

    def settle(self) -> "_Binder":
        if self._count is None:
            try:
                # (of the function's own code: a functools.wraps wrapper's, not the wrapped one's)
                self._signature = own_signature(self.fun)
                parameters = list(self._signature.parameters.values())
                self._count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
                self.general = any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
                for p in parameters:
                    if p.kind == p.VAR_POSITIONAL:
                        self.star, self.star_name = self._count, p.name
            except (TypeError, ValueError):
                self._count = -1
        return self

    def __call__(self, args: tuple, kwargs: dict, argnums: tuple[int, ...] = ()) -> tuple:
        self.settle()
        if self.general:
            return self._bind_general(args, kwargs, argnums)
        if not kwargs and len(args) == self._count or self._count == -1 and not kwargs:
            return args
        name = getattr(self.fun, "__name__", "the function")
        for k in argnums:
            if k >= len(args):
                raise S2SError(f"argument {k} of {name} is differentiated, so it must be passed by position "
                               f"(got {len(args)} positional arguments)",
                               hint="pass it positionally, as JAX requires for argnums")
        if self._signature is None:
            raise S2SError(f"{name} takes no keyword arguments here", hint="pass the arguments positionally")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise S2SError(f"call to {name}: {exc}") from None
        bound.apply_defaults()
        params = list(self._signature.parameters.values())[:self._count]
        return tuple(bound.arguments[p.name] for p in params)

    def _bind_general(self, args: tuple, kwargs: dict, argnums: tuple[int, ...]) -> tuple:
        name = getattr(self.fun, "__name__", "the function")
        for k in argnums:
            if k < self._count and k >= len(args):
                raise S2SError(f"argument {k} of {name} is differentiated, so it must be passed by position "
                               f"(got {len(args)} positional arguments)",
                               hint="pass it positionally, as JAX requires for argnums")
            if k >= len(args) or k < -len(args) or k < 0 and self.star is not None:
                raise S2SError(f"argnums {k} is out of range for {len(args)} positional arguments",
                               hint="argnums count the positional arguments (from 0 where the function takes *args)")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise S2SError(f"call to {name}: {exc}") from None
        bound.apply_defaults()
        out = []
        for p in self._signature.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                if bound.arguments[p.name]:
                    raise S2SError(f"call to {name}: the keywords {', '.join(bound.arguments[p.name])} go to its "
                                   f"**{p.name}, which a transformed function leaves empty",
                                   hint="name them as parameters of the function (def f(x, *, scale=1.0))")
            else:
                out.append(tuple(bound.arguments[p.name]) if p.kind is p.VAR_POSITIONAL else bound.arguments[p.name])
        return tuple(out)

    def unbind(self, bound: tuple) -> tuple[tuple, dict]:
        """(args, kwargs) that call the user's function as the bound arguments say."""
        if not self.general:
            return tuple(bound), {}
        args, kwargs = [], {}
        values = iter(bound)
        for p in self._signature.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                continue
            value = next(values)
            if p.kind is p.VAR_POSITIONAL:
                args.extend(value)
            elif p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        return tuple(args), kwargs


_BINDERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def binder_of(fun: Callable) -> _Binder:
    try:
        binder = _BINDERS.get(fun)
        if binder is None:
            binder = _BINDERS[fun] = _Binder(fun)
    except TypeError:  # (not weak-referenceable)
        binder = _Binder(fun)
    return binder.settle()


def refuse_star_args(fun: Callable, door: str, keywords: bool = False) -> None:
    """S2SError for a door that takes only named parameters (its argnums or in_axes are not
    mapped into *args's tuple); keywords: nor keyword-only ones or **kwargs."""
    binder = binder_of(fun)
    name = getattr(fun, "__name__", "the function")
    if binder.star is not None or keywords and binder.general:
        what = "*args" if binder.star is not None else "keyword-only parameters or **kwargs"
        params = [p for p in binder._signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        named = [p.name for p in params if p.kind is not p.VAR_POSITIONAL] if binder.star is None else \
            [p.name for p in params[:binder.star]] + ["a", "b"]
        passed = [p.name if p.kind is not p.KEYWORD_ONLY else f"{p.name}={p.name}" for p in params
                  if p.kind is not p.VAR_POSITIONAL] if binder.star is None else named
        raise S2SError(f"{door} of {name}, which takes {what}, is not supported (grad, value_and_grad, vjp, jvp "
                       "and jit are)", hint=f"give {door} a function of named positional parameters that calls it, "
                       f"e.g. def g({', '.join(named)}): return {name}({', '.join(passed)})")


def call_bound(fun: Callable, args: Sequence) -> Any:
    """fun called with its arguments as generated code takes them (_Binder: *args as one tuple,
    keyword-only ones by position)."""
    positional, keywords = binder_of(fun).unbind(tuple(args))
    return fun(*positional, **keywords)


def _argnums_tuple(argnums) -> tuple[int, ...]:
    if isinstance(argnums, int):
        return (argnums,)
    return tuple(argnums)


def _unbatched(fun: Callable) -> Callable:
    """A transform of s2s.vmap(f) transforms the vmap's loop over the examples, a plain function;
    one of np.tanh transforms `def tanh(x): return np.tanh(x)` (primitives.py); one of s2s.jit(f)
    transforms f."""
    if isinstance(fun, Primal):
        fun = fun.fun
    return fun.as_loop_function() if hasattr(fun, "as_loop_function") else as_function(fun)


class StaticSiblings:
    """A door whose call passes static values (strings, None, types, functions:
    frontend/static_arguments.py) runs as the same door of a copy of its function that carries
    them (its sibling), whose generated code has them written in; .source shows the latest
    call's. A door says how it is made for another function (for_function)."""

    fun: Callable
    _siblings: dict
    _latest_sibling: Any = None
    # positions of the bound arguments that are static whatever they are (s2s.jit's static_argnums)
    static_positions: tuple[int, ...] = ()

    def for_function(self, fun: Callable) -> Any:
        raise NotImplementedError

    def for_arguments(self, bound: tuple, static_positions: tuple[int, ...] = (), objects: dict | None = None) -> Any:
        """This door, or its sibling for the static values of the bound arguments (of a door
        over another, vmap(grad(f)), the door over the other's sibling); objects: what
        static_values.split_objects split from them."""
        inner = self.fun
        marked = static_positions or self.static_positions
        fun = inner.for_arguments(bound, marked) if isinstance(inner, StaticSiblings) \
            else static_values.specialised(inner, bound, marked, objects)
        sibling = self
        if fun is not self.fun:
            siblings = self.__dict__.setdefault("_siblings", {})
            sibling = siblings.get(fun)
            if sibling is None:
                sibling = siblings[fun] = self.for_function(fun)
        self._latest_sibling = sibling if sibling is not self else None
        return sibling


class Derivative(StaticSiblings):
    """Base of the derivatives (Transformed here, jacobians.Jacobian and SecondOrder) that grad,
    jacfwd, jacrev and hessian differentiate again by their own means (jacobians.py, higher.py):
    a Transformed of one is refused."""


class Transformed(Derivative):
    """The result of a transform: callable, with the generated module in .source."""

    def __init__(self, fun: Callable, kind: str, argnums=0, has_aux: bool = False, backend: str = "python",
                 rows: bool = False, tape_budget: int | str | None = None):
        fun = _unbatched(fun)
        if isinstance(fun, Derivative):
            raise S2SError(f"{kind} of an already transformed function is not supported (grad, jacfwd, jacrev and "
                           "hessian of grad, jacfwd, jacrev and hessian are, up to third derivatives, without has_aux)",
                           hint="use s2s.grad(s2s.grad(f)), s2s.hessian(f), s2s.jacfwd(s2s.jacrev(f)) or, for third "
                                "derivatives, s2s.jacfwd(s2s.hessian(f))")
        self.fun = fun
        self._bind = _Binder(fun)
        self.kind = kind
        self.argnums = argnums
        self.has_aux = has_aux
        self.backend = backend
        self.rows = rows  # also the compiled loop over stacks of cotangents (jacrev)
        # the bytes a loop's tape may take before it runs checkpointed; None: s2s.config's s2s_tape_budget
        self.tape_budget = None if tape_budget is None else OPTIONS["s2s_tape_budget"].accept(tape_budget)
        functools.update_wrapper(self, fun, updated=())  # not fun's __dict__: it may be a transform
        self._source: str | None = None
        self._entries: dict = {}  # the entry points of _source
        self._module = None
        self._vjp = None
        self._argnums = self._user_argnums = _argnums_tuple(argnums)
        self._picks = None
        star = self._bind.settle().star
        if star is not None:
            # argnums count the positional arguments, as JAX's: those that *args takes are items
            # of its tuple, differentiated as a whole; each gradient is picked from the tuple's
            if any(k < 0 for k in self._user_argnums):
                raise S2SError(f"argnums of {getattr(fun, '__name__', 'a function')}, which takes *args, are "
                               "counted from 0", hint="pass argnums as non-negative positions")
            self._argnums = tuple(sorted({min(k, star) for k in self._user_argnums}))
            self._picks = tuple((self._argnums.index(min(k, star)), k - star if k >= star else None)
                                for k in self._user_argnums)
        # Under s2s.jit a gradient is generated for what its arguments are (numbers, arrays
        # and their ndim: shapes.argument_facts), as JAX traces per signature: the vjp for
        # each kind of call, and the source of the latest.
        self._by_facts: dict = {}
        self._by_plain_kinds: dict = {}  # _plain_kinds(args) -> what _by_facts holds, and the seed
        self._squeezing: set = set()  # kinds whose code is specialised to the axes of length 1 too
        self._specialised_source: str | None = None
        self._specialised_entries: dict = {}

    @property
    def source(self) -> str:
        """The generated module; once called, the one for the latest call's static values
        and, under s2s.jit, its kinds of arguments."""
        if self._latest_sibling is not None:
            return self._latest_sibling.source
        return self._own_source()

    def _own_source(self) -> str:
        if self._specialised_source is not None:
            return self._specialised_source
        return self.generated()[0]

    def generated(self) -> tuple[str, dict]:
        """(source, entries) of the module for any kind of arguments."""
        if self._source is None:
            options = {"argnums": list(self._argnums), "has_aux": self.has_aux}
            if self.rows:
                options["rows"] = True
            if self.tape_budget is not None:
                options["tape_budget"] = self.tape_budget
            self._source, self._entries = _generated(self.fun, "grad", options)
        return self._source, self._entries

    def module(self):
        if self._module is None:
            self._module = backends.load(self._own_source(), self.fun.__name__, self.backend)
        return self._module

    def for_function(self, fun: Callable) -> "Transformed":
        return Transformed(fun, self.kind, self.argnums, self.has_aux, self.backend, self.rows, self.tape_budget)

    def with_backend(self, backend: str) -> "Transformed":
        other = Transformed(self.fun, self.kind, self.argnums, self.has_aux, backend, self.rows, self.tape_budget)
        other._source, other._entries = self._source, self._entries
        return other

    def _vjp_function(self):
        # Looked up once: searching the source on every call costs more than a small gradient.
        if self._vjp is None:
            self._vjp = backends.entry(self.module(), f"{self._entry_name()}_vjp", self.fun)
        return self._vjp

    def _entry_name(self) -> str:
        """The generated name of the function (its vjp is `<name>_vjp`) in .source."""
        return (self._specialised_entries if self._specialised_source is not None else self.generated()[1])["name"]

    def _facts_key(self, args) -> tuple:
        """The key of _by_facts: the kinds of the arguments, and where the code for those kinds
        squeezes without axes, which of the arguments' axes have length 1."""
        key = _kinds(args)
        return (key, _unit_axes_key(args)) if key in self._squeezing else key

    def specialised(self, args) -> tuple[str, dict]:
        """(source, entries) of the module generated for these kinds of arguments (numbers,
        arrays and their ndim), as s2s.jit runs it; its gradient's seed is a number."""
        options = {"argnums": list(self._argnums), "has_aux": self.has_aux, "facts": argument_facts(args)}
        if self.kind == "grad":
            options["value"] = False  # grad has no use for it (left out where proved a number)
        if self.tape_budget is not None:
            options["tape_budget"] = self.tape_budget
        return _generated_for_call(self.fun, "grad", options, args)

    def specialised_source(self, args) -> str:
        return self.specialised(args)[0]

    def _specialised_vjp(self, args):
        """The vjp generated for these kinds of arguments (s2s.jit of grad and value_and_grad)."""
        key = self._facts_key(args)
        found = self._by_facts.get(key)
        if found is None:
            source, entries = self.specialised(args)
            if entries.get("unit_axes"):
                self._squeezing.add(key)
                key = self._facts_key(args)
            module = backends.load(source, self.fun.__name__, self.backend)
            found = self._by_facts[key] = (backends.entry(module, entries["vjp"], self.fun), source, entries)
        self._specialised_source, self._specialised_entries = found[1], found[2]
        return found[0]

    def _user_grads(self, grads, args) -> tuple:
        """The gradients by the user's argnums, from those by generated code's parameters."""
        grads = tuple(pytree.restructure(g, args[k]) for g, k in zip(grads, self._argnums))
        if self._picks is None:
            return grads
        return tuple(grads[i] if item is None else grads[i][item] for i, item in self._picks)

    def _check_args(self, args):
        if self._picks is not None:
            star = self._bind.star
            for k in self._user_argnums:
                if k >= star + len(args[star]):
                    raise S2SError(f"argnums {k} is out of range for {star + len(args[star])} positional arguments")
                if k >= star and any(pytree.is_integer_leaf(leaf) for leaf in pytree.leaves(args[star])):
                    raise S2SError(f"cannot differentiate with respect to argument {k} of {self.fun.__name__}: "
                                   f"the arguments its *{self._bind.star_name} takes are differentiated together, "
                                   "and one of them holds integers",
                                   hint="pass floats, or take the integer argument as a named parameter")
        for k in self._argnums:
            if not -len(args) <= k < len(args):
                raise S2SError(f"argnums {k} is out of range for {len(args)} arguments",
                               hint="argnums count the positional arguments")
            arg = args[k]
            if any(pytree.is_integer_leaf(leaf) for leaf in ((arg,) if isinstance(arg, np.ndarray)
                                                             else pytree.leaves(arg))):
                raise S2SError(
                    f"cannot differentiate with respect to argument {k} of {self.fun.__name__}: it "
                    "holds integers", hint="pass floats (e.g. 1.0 instead of 1) or leave it out of argnums")

    def _call_args(self, args):
        if self.backend == "cpu":
            return tuple(pytree.to_numba(a) for a in args)
        return args

    def _require_scalar(self, value) -> None:
        if not isinstance(value, float) and np.ndim(value) != 0:
            raise S2SError(f"grad of {self.fun.__name__} needs a scalar output, got shape {np.shape(value)}",
                           hint="use s2s.vjp or s2s.jacrev for vector outputs")

    @user_facing
    def __call__(self, *args, **kwargs):
        # The common call under s2s.jit, positional arrays and floats of kinds seen before,
        # skips what the first such call settled: binding, the checks, the seed, conversions.
        plain = _plain_kinds(args) if not kwargs and self.backend == "cpu" and not self.static_positions else None
        seen = self._by_plain_kinds.get(plain) if plain is not None else None
        if seen is None:
            bound = self._bind(args, kwargs, self._user_argnums)
            sibling = self.for_arguments(bound)
            if sibling is not self:
                return sibling(*args, **kwargs)
            rememberable = plain is not None and bound is args  # (nothing bound by keyword or default)
            self._check_args(bound)
        try:
            if seen is not None:
                self._latest_sibling = None
                vjp_function, self._specialised_source, self._specialised_entries, seed = seen
                call_args = args + (seed,)
            else:
                args = bound
                vjp_function = self._specialised_vjp(args) if self.backend == "cpu" else self._vjp_function()
                call_args = self._call_args(args) + (_seed(args),)
            out, grads = vjp_function(*call_args)
        except S2SError:
            raise
        except Exception as failure:  # noqa: BLE001 - re-raised unless the output explains it
            # The seed is a number; a reverse sweep that indexes it (or Numba typing it) fails
            # before the output's shape is known. Say why.
            try:
                value = _plain_value(self.fun, private_copies(args))
            except Exception:  # noqa: BLE001
                raise failure from None
            self._require_scalar(value[0] if self.has_aux else value)
            raise
        if seen is None and rememberable and _kinds(args) not in self._squeezing:
            self._by_plain_kinds[plain] = self._by_facts[_kinds(args)] + (call_args[-1],)
        if out is not None:  # None: a module that proved the value a number left it out
            if self.backend == "cpu" and self.has_aux:
                out = pytree.from_numba(out)  # (aux may hold dicts)
            self._require_scalar(out[0] if self.has_aux else out)
            if self.backend == "cpu" and self.kind == "value_and_grad" and not self.has_aux:
                out = numpy_scalar(out, args, getattr(vjp_function, "dispatcher", None), call_args)
        grads = self._user_grads(grads, args)
        grad = grads[0] if isinstance(self.argnums, int) else grads
        if self.kind == "value_and_grad":
            if self.has_aux:
                return (out[0], out[1]), grad
            return out, grad
        if self.has_aux:
            return grad, out[1]
        return grad


def _kinds(args) -> tuple:
    """A key for what the arguments are, as shapes.argument_facts sees them (cheap: on
    every call)."""
    return tuple((type(a), a.ndim, a.dtype == np.bool_) if isinstance(a, np.ndarray)
                 else (type(a), _kinds(a)) if isinstance(a, (tuple, list))
                 else (dict, tuple(a), _kinds(tuple(a.values()))) if isinstance(a, dict) else type(a) for a in args)


def _plain_kinds(args) -> tuple | None:
    """A key for arguments that are all arrays of one or more dimensions (their dtype and ndim)
    or floats, which compiled code takes as they are; None for any other call."""
    key = []
    for a in args:
        if type(a) is np.ndarray and a.ndim:
            key.append((a.dtype, a.ndim))
        elif type(a) is float:
            key.append(float)
        else:
            return None
    return tuple(key)


def _seed(args) -> float:
    """The cotangent 1 of a scalar output: float32 when every float input is float32, so that
    a float32 program stays float32 (Numba types np.dot of mixed dtypes as an error)."""
    single = False
    for arg in args:  # (on every call: no np.asarray, no issubdtype, leaves only where needed)
        for leaf in (arg,) if isinstance(arg, np.ndarray) else pytree.leaves(arg):
            dtype = getattr(leaf, "dtype", None)
            if dtype is None:
                if isinstance(leaf, float):
                    return 1.0
            elif dtype.kind == "f":
                if dtype != np.float32:
                    return 1.0
                single = True
    return np.float32(1.0) if single else 1.0


@recorded
def jit(fun: Callable, *, backend: str = "cpu", static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None) -> Callable:
    """Compile a transformed function (or a plain one) for a backend: "cpu" (numba.njit) or "python".

    Strings, None, types and functions passed to it choose the code by themselves; the arguments
    static_argnums and static_argnames name are static too, whatever they are (an int, a tuple of
    ints such as einsum's sublists or a shape: hashable, as JAX asks): the code is generated for
    each value, with the value written in.
    """
    if config.jax_disable_jit:
        backend = "python"
    if hasattr(fun, "with_backend"):  # an s2s transform: Transformed, Jacobian, SecondOrder, Batched
        door = fun.with_backend(backend)
    else:
        door = Primal(fun, backend)
    if static_argnums is not None or static_argnames is not None:
        door.static_positions = _static_positions(door, static_argnums, static_argnames)
    return door


def _static_positions(door: Any, static_argnums, static_argnames) -> tuple[int, ...]:
    """The positions, among the arguments as generated code takes them, of those static_argnums
    and static_argnames name: refused where one is out of range, is a *args item, or is
    differentiated."""
    fun = door
    while not isinstance(fun, types.FunctionType) and hasattr(fun, "fun"):
        fun = fun.fun
    name = getattr(fun, "__name__", "the function")
    numbers = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames or ())
    binder = binder_of(fun)
    parameters = list(binder._signature.parameters.values()) if binder._signature is not None else []
    order = [None if p.kind is p.VAR_POSITIONAL else p.name for p in parameters if p.kind is not p.VAR_KEYWORD]
    count = binder._count
    positions = set()
    for k in numbers:
        if not -count <= k < count:
            raise S2SError(f"static_argnums {k} is out of range: {name} takes {count} positional parameters"
                           + (" before *args (an item of *args cannot be static)" if binder.star is not None else ""),
                           hint=f"count from 0 among {', '.join(str(n) for n in order[:count])}")
        positions.add(k % count)
    for given in names:
        if given not in order:
            raise S2SError(f"static_argnames names {given!r}, which is not a parameter of {name}",
                           hint=f"name one of {', '.join(str(n) for n in order if n is not None)}")
        positions.add(order.index(given))
    differentiated = set()
    for attribute in ("_argnums", "argnums", "outer_argnums", "inner_argnum"):
        if getattr(door, attribute, None) is not None:
            differentiated.update(_argnums_tuple(getattr(door, attribute)))
    for k in sorted(positions):
        if k in differentiated or k - count in differentiated:
            raise S2SError(f"argument {k} ({order[k]}) of {name} is both differentiated and static",
                           hint="leave it out of static_argnums: a derivative is taken of numbers that vary")
    return tuple(sorted(positions))


def _plain_value(fun: Callable, args: Sequence) -> Any:
    """fun of the arguments bound as generated code takes them (call_bound), for its value's
    shape; a function that uses JAX's x.at[i].set(v), which NumPy
    arrays do not have and s2s writes out, runs as its generated primal on the python backend."""
    try:
        return call_bound(fun, args)
    except AttributeError as exc:
        if "'at'" not in str(exc) or not inspect.isfunction(fun):
            raise
    primal = Primal(fun, "python")
    return primal.for_arguments(tuple(args))._call_bound(args)


class Primal(StaticSiblings):
    """A user function compiled as it is (its normalized primal), for s2s.jit(f)."""

    def __init__(self, fun: Callable, backend: str):
        fun = as_function(fun)
        self.fun = fun
        self._bind = _Binder(fun)
        self.backend = backend
        functools.update_wrapper(self, fun, updated=())  # not fun's __dict__: it may be a transform
        self._source = None
        self._entries: dict = {}
        self._compiled = None
        # {kinds of arguments: (compiled, source)} where the code tests an ndim, which the code
        # generated for each kind of call decides (transforms/static_properties.py), a call
        # passes a tuple of items of different kinds, over which a loop is written out item by
        # item (frontend/dict_loops.py), the code squeezes without axes (to the axes of length 1
        # of the arguments too, for the kinds in _squeezing), or the code for every call has a
        # variable of two types which the code for a kind of call may not have (optimize/carries.py); else None
        self._by_kinds: dict | None = None
        self._squeezing: set = set()
        self._specialised_source = None

    @property
    def source(self) -> str:
        if self._latest_sibling is not None:
            return self._latest_sibling.source
        return self._specialised_source or self._own_source()

    def _own_source(self) -> str:
        if self._source is None:
            self._source, self._entries = _generated(self.fun, "primal", {})
        return self._source

    def for_function(self, fun: Callable) -> "Primal":
        return Primal(fun, self.backend)

    def as_called_function(self) -> Callable:
        """The function itself, for a transformed function that calls this one (jax.jit is
        transparent to jax.grad): its code is transformed and compiled with the caller's."""
        return self.fun

    @user_facing
    def __call__(self, *args, **kwargs):
        bound = self._bind(args, kwargs)
        # (a TrainState goes in as its arrays, its apply_fn and tx written into the code: static_values)
        bound, objects = static_values.split_objects(bound)
        out = self.for_arguments(bound, objects=objects)._call_bound(bound)
        return static_values.join_objects(out, objects) if objects else out

    def _compiled_for(self, args: tuple):
        if self._compiled is None:
            source = self._own_source()
            if self.backend == "cpu" and (_tests_an_ndim(source) or _SQUEEZES_WITHOUT_AXES.search(source)):
                self._by_kinds = {}
            module = backends.load(source, self.fun.__name__, self.backend)
            # (the function's generated name: a callee of the same name may hold its own)
            name = self._entries.get("name", self.fun.__name__)
            self._compiled = backends.entry(module, name, self.fun)
        if self._by_kinds is None:
            if self.backend != "cpu" or not _items_to_write_out(args, self._own_source()):
                return self._compiled
            self._by_kinds = {}  # (from now on: a loop over such a tuple or dict is written out for its items)
        key = _kinds(args)
        key = (key, _unit_axes_key(args)) if key in self._squeezing else key
        found = self._by_kinds.get(key)
        if found is None:
            source, entries = _generated_for_call(self.fun, "primal", {"facts": argument_facts(args)}, args)
            if entries.get("unit_axes"):
                self._squeezing.add(key)
                key = (key, _unit_axes_key(args))
            module = backends.load(source, self.fun.__name__, self.backend)
            found = self._by_kinds[key] = (backends.entry(module, entries["name"], self.fun), source)
        self._specialised_source = found[1]
        return found[0]

    def _call_bound(self, args: tuple):
        try:
            return self._run(self._compiled_for(args), args)
        except S2SError as refusal:
            # A variable of two types in the code for every call (a carry that the arguments' rows
            # make an array: optimize/carries.py) may have one type in the code for this kind of call
            if self.backend != "cpu" or self._by_kinds is not None or "Cannot unify" not in str(refusal):
                raise
            self._by_kinds = {}
        return self._run(self._compiled_for(args), args)

    def _run(self, compiled, args: tuple):
        if self.backend == "cpu":
            plain = _plain_kinds(args)
            if plain is not None and not any(k is not float and k[0] == np.float32 for k in plain):
                # (the common call: arrays that are not float32, and floats, go in as they are;
                # a number that comes back is already what NumPy's value would be)
                return pytree.from_numba(compiled(*args))
            call_args = tuple(pytree.to_numba(a) for a in args)
            out = pytree.from_numba(compiled(*call_args))
            # (a float32 number comes back from Numba as a Python float)
            return numpy_scalar(out, args, getattr(compiled, "dispatcher", None), call_args, whole=True)
        return compiled(*args)


# (and d.get("w", default), which code generated for the call reads at the key, or not at all)
_LOOPS_OVER_KEYS = ("runtime.dict_keys(", "runtime.loop_keys(", "runtime.has_key(")


def _items_to_write_out(args, source: str) -> bool:
    """Does the call pass a tuple or list whose items are of different kinds (a matrix and a
    vector), or a dict whose keys a loop of source (the code for any call) goes over? Such a loop
    is written out item by item in code generated for the call (frontend/dict_loops.py): Numba
    can index neither at an index known only at run time."""
    if any(isinstance(a, (tuple, list)) and len(set(_kinds(a))) > 1 for a in args):
        return True
    return loops_over_dict_keys(args, source)


def loops_over_dict_keys(args, source: str) -> bool:
    """Does the call pass a dict whose keys a loop of source (the code for any call) goes over?"""
    return any(isinstance(a, dict) for a in args) and any(loop in source for loop in _LOOPS_OVER_KEYS)


_SQUEEZES_WITHOUT_AXES = re.compile(r"\bsqueeze\([\w.]+\)")
_READS_AN_NDIM = re.compile(r"\.ndim\b|np\.ndim\(")
_BOUND_TO_A_SHAPE = re.compile(r"^\s*(\w+) = (?:np\.shape\(\w+\)|\w+\.shape)$", re.M)


def _tests_an_ndim(source: str) -> bool:
    """Does generated code read an ndim (z.ndim, np.ndim(z), the len of a shape)?"""
    return _READS_AN_NDIM.search(source) is not None or any(
        f"len({name})" in source for name in _BOUND_TO_A_SHAPE.findall(source))


def source(transformed: Any) -> str:
    """The readable generated source of a transformed function."""
    text = getattr(transformed, "source", None)
    if not isinstance(text, str):
        raise S2SError("s2s.source takes the result of an s2s transform")
    return text


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
        self._squeezing: set = set()  # kinds whose entry is specialised to the axes of length 1 too
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

    def specialised_entry(self, args, given: tuple | None = None):
        """The entry generated for these kinds of arguments (call_args's), or of the arguments as
        given, where they are (a dict's keys in its own order: a loop over it goes so)."""
        described = given if given is not None else args
        key = _kinds(described)
        key = (key, _unit_axes_key(described)) if key in self._squeezing else key
        if key not in self._by_facts:
            options = {"facts": argument_facts(described)}
            if self.active is not None:
                options["active"] = list(self.active)
            source, names = self._generated(options)
            if names.get("wants_unit_axes"):  # (it squeezes without axes: see _generated_for_call)
                source, names = self._generated({**options, "unit_axes": unit_axes(described)})
                self._squeezing.add(key)
                key = (key, _unit_axes_key(described))
            module = backends.load(source, self.fun.__name__ + "_jvp", self.backend)
            self._by_facts[key] = backends.entry(module, names["jvp"], self.fun)
        return self._by_facts[key]
