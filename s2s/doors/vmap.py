"""s2s.vmap: the public batching transform, as an object with .source, composable with the others.

A batched function is specialised when it is called, as JAX traces on the first call: the
argument structure, the mapped axes and the per-example output structure decide the driver
that transforms/batching.py writes. Each specialisation is generated and compiled once.

The per-example modules (primal, grad) and, on the python backend, the vectorised modules
(the "vmap" and "vmap_total" transforms of driver/pipeline.py) come through the one door of
the engine, core._generated, so they are cached like every transform, with the names of their
entry points; the loop driver around a per-example module is written here (from the axes
alone, for the command line: vmap_source.py).
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import inspect
from typing import Any, Callable

import numpy as np

from . import core
from .. import runtime
from .. import backends
from ..tree_util import pytree
from ..driver import cache
from .. import frontend
from ..transforms import batching
from ..ir import nodes as ir
from ..errors import NoBatchingRule, S2SError, user_facing
from .jacobians import SecondOrder
from .primitives import as_function
from .shipping import recorded
from ..analysis.shapes import argument_facts
from ..optimize.into import into_source


def _seq_kind(arg) -> str:
    """Namedtuples are rebuilt with their own type when a driver indexes their leaves."""
    return "namedtuple" if pytree.is_namedtuple(arg) else "seq"


def _axis_tree(arg: Any, spec: Any, where: str) -> batching.ArgTree:
    """The argument's structure with the mapped axis of each leaf (JAX's pytree prefixes)."""
    if spec is None or isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if isinstance(arg, dict):
            keys = sorted(arg)
            return ("dict", keys, [_axis_tree(arg[k], spec, f"{where}[{k!r}]") for k in keys])
        if isinstance(arg, (tuple, list)):
            return (_seq_kind(arg), [_axis_tree(x, spec, f"{where}[{k}]") for k, x in enumerate(arg)])
        if spec is None:
            return ("leaf", None)
        ndim = np.ndim(arg)
        if not -ndim <= spec < max(ndim, 1) or ndim == 0:
            raise S2SError(f"vmap: in_axes asks to map {where} over axis {spec}, but it has "
                           f"{ndim} dimensions", hint="pass None for values that are not batched")
        return ("leaf", int(spec) % ndim)
    if isinstance(spec, dict) and isinstance(arg, dict) and sorted(spec) == sorted(arg):
        keys = sorted(arg)
        return ("dict", keys, [_axis_tree(arg[k], spec[k], f"{where}[{k!r}]") for k in keys])
    if isinstance(spec, (tuple, list)) and isinstance(arg, (tuple, list)) and len(spec) == len(arg):
        return (_seq_kind(arg), [_axis_tree(x, s, f"{where}[{k}]") for k, (x, s) in enumerate(zip(arg, spec))])
    raise S2SError(f"vmap: in_axes entry {spec!r} for {where} does not match its structure "
                   f"({type(arg).__name__})", hint="give an int or None, or a prefix of the argument's tree")


def _mapped_leaves(arg: Any, tree: batching.ArgTree, where: str):
    """(description, axis, size) of each batched leaf."""
    if tree[0] == "leaf":
        if tree[1] is not None:
            yield where, tree[1], np.shape(arg)[tree[1]]
        return
    keys = tree[1] if tree[0] == "dict" else range(len(tree[1]))
    for key, child in zip(keys, tree[-1]):
        yield from _mapped_leaves(arg[key], child, f"{where}[{key!r}]")


def _example(arg: Any, tree: batching.ArgTree, index: int) -> Any:
    """A private copy of one example of the argument (the probe must not write to the caller's arrays)."""
    if tree[0] == "leaf":
        if hasattr(arg, "copy_to_host"):  # a CUDA device array: copy only the example to the host
            if tree[1] is None:
                return arg.copy_to_host()
            # (a slice: an index of a 1-d device array would give a number, not a device array)
            row = arg[(slice(None),) * tree[1] + (slice(index, index + 1),)].copy_to_host()
            return np.take(row, 0, axis=tree[1])
        return np.take(arg, index, axis=tree[1]) if tree[1] is not None else copy.deepcopy(arg)
    if tree[0] == "dict":  # (in the dict's own order, which a loop over it follows)
        examples = {k: _example(arg[k], child, index) for k, child in zip(tree[1], tree[2])}
        return {k: examples[k] for k in arg}
    items = [_example(x, child, index) for x, child in zip(arg, tree[1])]
    return type(arg)(*items) if pytree.is_namedtuple(arg) else type(arg)(items)


def _signature(args: tuple, trees: list) -> tuple:
    """What a specialisation depends on: structures, mapped axes, and each leaf's type, dtype and
    per-example shape (the output structure may depend on shapes; the batch size does not)."""
    def key(arg, tree):
        if tree[0] == "leaf":
            shape = list(np.shape(arg))
            if tree[1] is not None:
                del shape[tree[1]]
            dtype = arg.dtype if hasattr(arg, "copy_to_host") else np.asarray(arg).dtype  # (not a device copy)
            return (type(arg).__name__, str(dtype), tuple(shape), tree[1])
        if tree[0] == "dict":  # (and its order: code generated for the call loops over it so)
            return ("dict", tuple(arg), tuple((k, key(arg[k], c)) for k, c in zip(tree[1], tree[2])))
        return (tree[0], type(arg).__name__, tuple(key(a, c) for a, c in zip(arg, tree[1])))

    return tuple(key(a, t) for a, t in zip(args, trees))


def _call_key(args: Any) -> Any:
    """A cheap key that determines a call's specialisation and its checks: the types, dtypes
    and whole shapes of the leaves (so also the batch size), or None for anything else (then
    the call takes the full path). Computing _trees and _signature costs tens of microseconds,
    as long as the compiled driver takes for hundreds of small examples."""
    if isinstance(args, np.ndarray):
        return (args.dtype, args.shape)
    if isinstance(args, (float, np.number)) or isinstance(args, int) and -2**63 <= args < 2**63:
        return type(args)  # (bool is an int; a larger int is another dtype: the full path)
    if isinstance(args, (tuple, list)):
        keys = tuple(_call_key(x) for x in args)
        return None if None in keys else (type(args), keys)
    return None


def _without_facts_line(source: str) -> str:
    """Generated source without the header's line on what s2s.jit saw of the arguments."""
    return "".join(line for line in source.splitlines(keepends=True)
                   if not line.startswith("# Specialised (s2s.jit) for arguments:"))


def _second_order_kernel(fun: SecondOrder, example: tuple):
    """(source, entry, output, description) of one example's second derivative (hessian(f),
    jacfwd(grad(f))) under s2s.jit: the module s2s.jit(hessian(f)) compiles, and an entry that
    calls its driver with the bases of the output and of the argument, laid out as
    SecondOrder lays them out (out.shape + x.shape + wrt.shape). None where the derivative is
    not of one array or number with respect to one (then the examples are refused as before)."""
    k, inner = fun.outer_argnums, fun.inner_argnum
    if fun.has_aux or not isinstance(k, int) or not -len(example) <= k < len(example) \
            or not -len(example) <= inner < len(example):
        return None
    k, inner = k % len(example), inner % len(example)
    for value in (example[inner], example[k]):
        if not isinstance(value, (float, np.floating, np.ndarray)) or pytree.is_integer_leaf(value):
            return None
    output = fun.with_backend("python")(*example)
    with runtime.debug_silenced():
        value = core._plain_value(fun.fun, copy.deepcopy(example))
    if not isinstance(value, (float, int, np.floating, np.ndarray)):
        return None
    out_shape, in_shape, wrt_shape = np.shape(value), np.shape(example[inner]), np.shape(example[k])
    source = fun.source
    drivers = [d for d in ast.parse(source).body
               if isinstance(d, ast.FunctionDef) and d.name.endswith(f"_second_order_{k}")]
    if len(drivers) != 1 or len(drivers[0].args.args) != len(example) + 2:
        return None
    params = [a.arg for a in drivers[0].args.args[:-2]]  # (the user's parameters, then the two bases)
    drivers = [drivers[0].name]
    rows, cols, size = (int(np.prod(s)) for s in (out_shape, wrt_shape, in_shape))
    # (a number argument is passed as a float, as SecondOrder passes it; a batched one is np.float64)
    call = ", ".join(f"float({p})" if j in (inner, k) and not np.ndim(example[j]) else p
                     for j, p in enumerate(params))
    cotangents, tangents = (f"np.eye({n})" if len(shape) == 1 else f"np.eye({n}).reshape({(n,) + shape})" if shape
                            else "np.ones(1)" for n, shape in ((rows, out_shape), (cols, wrt_shape)))
    shape = wrt_shape if fun.scalar else out_shape + in_shape + wrt_shape
    laid_out = f"laid_out.reshape({shape})" if shape else "laid_out[0, 0, 0]"
    entry = f"{drivers[0]}_example"
    source += (f"\n\ndef {entry}({', '.join(params)}):\n"
               f"    \"\"\"One example's second derivative, laid out as out.shape + x.shape + wrt.shape.\"\"\"\n"
               f"    blocks = np.asarray({drivers[0]}({call}, {cotangents}, {tangents}))\n"
               f"    laid_out = np.ascontiguousarray(np.transpose(blocks.reshape(({rows}, {cols}, {size})), (0, 2, 1)))\n"
               f"    return {laid_out}\n")
    return source, entry, output, f"second derivative of {fun.fun.__name__}"


def _param_names(fun: Callable, count: int) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(fun).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    if len(names) != count or len(set(names)) != count:
        names = [f"arg{k}" for k in range(count)]
    return names


def _view_paths(view: Any, structure: Any) -> list[str]:
    """Index paths into a kernel's return value for each output leaf; view is a raw path (the
    subtree there has the output's structure) or a tuple of views, one per output element."""
    if isinstance(view, str):
        return batching.leaf_paths(structure, view)
    if structure[0] != "seq" or len(structure[2]) != len(view):
        raise S2SError("vmap: the output does not have the expected structure")  # internal
    return [p for v, child in zip(view, structure[2]) for p in _view_paths(v, child)]


def _plain_structure(structure: Any) -> list:
    """A pytree.flatten structure as JSON values (options of the vmap transform): the type of
    a sequence by its name."""
    if structure[0] == "leaf":
        return ["leaf"]
    if structure[0] == "dict":
        return ["dict", list(structure[1]), [_plain_structure(c) for c in structure[2]]]
    return ["seq", structure[1].__name__, [_plain_structure(c) for c in structure[2]]]


def _pattern(value: Any) -> batching.Pattern:
    """A batching pattern as recorded with a module (JSON: lists for tuples)."""
    return tuple(_pattern(v) for v in value) if isinstance(value, list) else value


class Batched(core.StaticSiblings):
    """s2s.vmap(fun): fun mapped over an axis of its arguments."""

    def __init__(self, fun: Callable, in_axes: Any = 0, out_axes: Any = 0, backend: str | None = None):
        if not callable(fun):
            raise S2SError(f"vmap takes a function, got {type(fun).__name__}")
        self.fun = as_function(fun)  # np.dot -> def dot(x, y): return np.dot(x, y)
        core.refuse_star_args(self.fun, "vmap", keywords=True)  # (in_axes count named parameters)
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.backend = backend or getattr(fun, "backend", "python")
        # Name and docstring only: copying fun's __dict__ would overwrite this object's fields
        # when fun is another s2s transform.
        functools.update_wrapper(self, fun, updated=())
        # Callers record the name they call and this qualname (driver/cache.py checks both), so it
        # names the axes too: rebinding `predict` to a vmap with other axes is a change.
        self.__qualname__ = f"vmap({getattr(fun, '__qualname__', fun)}, in_axes={in_axes!r}, out_axes={out_axes!r})"
        self._specialised: dict = {}
        self._by_call_key: dict = {}  # _call_key of a checked call -> its specialisation
        self._defaults: tuple | None = None  # (positional parameters, their defaults), see _with_defaults
        self._last_source: str | None = None
        self._loop_function: Callable | None = None

    def with_backend(self, backend: str) -> "Batched":
        return Batched(self.fun, self.in_axes, self.out_axes, backend)

    def for_function(self, fun: Callable) -> "Batched":
        return Batched(fun, self.in_axes, self.out_axes, self.backend)

    @property
    def source(self) -> str:
        """The generated module of the last specialisation (call the function once first)."""
        if self._latest_sibling is not None:
            return self._latest_sibling.source
        if self._last_source is None:
            raise S2SError("the batched source depends on the arguments' structure and mapped axes",
                           hint="call the vmapped function once, then read its .source")
        return self._last_source

    # ---- inside other transforms -----------------------------------------------------

    def as_loop_function(self) -> Callable:
        """This vmap as a plain Python loop over the examples, for grad, jvp and jit of a
        function that calls it: the transforms differentiate the loop like user code.
        Written to a real file (the transforms read its source)."""
        if self._loop_function is not None:
            return self._loop_function
        fun = self.fun.as_loop_function() if isinstance(self.fun, Batched) else self.fun
        if not inspect.isfunction(fun) or fun.__name__ == "<lambda>":
            raise S2SError("transforms of a function that calls s2s.vmap(f) need f to be a plain function "
                           "(defined with def) or another such vmap",
                           hint="call the vmapped function outside the transform, or vmap the function itself")
        params = _param_names(fun, len(inspect.signature(fun).parameters))
        axes = self.in_axes if isinstance(self.in_axes, (tuple, list)) else (self.in_axes,) * len(params)
        if len(axes) != len(params) or not all(
                a is None or isinstance(a, int) and not isinstance(a, bool) and a >= 0 for a in axes):
            raise S2SError(f"inside another transform, vmap takes in_axes of None or non-negative ints, one per "
                           f"parameter of {fun.__name__}, got {self.in_axes!r}",
                           hint="map whole arguments (pytree prefixes and negative axes need the argument shapes)")
        if self.out_axes != 0 or not any(a is not None for a in axes):
            raise S2SError("inside another transform, vmap takes out_axes=0 and at least one mapped argument")
        trees = [("leaf", a) for a in axes]
        fresh = ir.Names(params + [fun.__name__]).fresh
        n, b, first, out = fresh("n"), fresh("b"), fresh("first"), fresh("out")
        size = next(batching.first_batched(p, t) for p, t in zip(params, trees) if t[1] is not None)

        # A shared argument whose list fun appends to: each example appends to a list of its own
        # (the loop is differentiated and compiled as user code, where the examples would see
        # each other's items).
        try:
            appended = batching.appended_parameters(frontend.lowered_functions(fun))
        except S2SError:  # (the transforms that lower fun say why)
            appended = set()

        def call(index):
            args = [f"list({p})" if p in appended and t[1] is None else batching.example_expr(p, t, index)
                    for p, t in zip(params, trees)]
            return f"{fun.__name__}({', '.join(args)})"

        # The module is shared by everything that maps this function, so its source names the
        # function fully: two functions called f in different modules get modules of their own.
        try:
            code = cache.function_source(fun)
        except (OSError, TypeError):
            code = ""
        origin = f"{fun.__module__}.{fun.__qualname__}, source sha256 {hashlib.sha256(code.encode()).hexdigest()[:16]}"
        source = (
            f"import numpy as np\n"
            f"from s2s import runtime\n\n\n"
            f"def {fun.__name__}_vmap({', '.join(params)}):\n"
            f'    """s2s.vmap({fun.__name__}, in_axes={self.in_axes!r}) as a loop over the examples.\n\n'
            f'    {fun.__name__} is {origin}."""\n'
            f"    {n} = {size}\n"
            f"    {first} = runtime.batch_example({call('0')}, None)\n"
            f"    {out} = runtime.batch_empty({n}, {first})\n"
            f"    {out}[0] = {first}\n"
            f"    for {b} in range(1, {n}):\n"
            f"        {out}[{b}] = runtime.batch_example({call(b)}, {first})\n"
            f"    return {out}\n"
        )
        module = backends.import_generated(source, f"{fun.__name__}_vmap_loop")
        setattr(module, fun.__name__, fun)  # the per-example function the loop calls
        self._loop_function = getattr(module, f"{fun.__name__}_vmap")
        return self._loop_function

    # ---- arguments ------------------------------------------------------------------

    def _trees(self, args: tuple) -> list:
        spec = self.in_axes
        if isinstance(spec, list):
            spec = tuple(spec)
        if isinstance(spec, tuple):
            if len(spec) != len(args):
                raise S2SError(f"vmap: in_axes has {len(spec)} entries but the function was called "
                               f"with {len(args)} arguments", hint="give one entry per positional argument")
        else:
            spec = (spec,) * len(args)
        trees = [_axis_tree(a, s, f"argument {k}") for k, (a, s) in enumerate(zip(args, spec))]
        mapped = [m for k, (a, t) in enumerate(zip(args, trees)) for m in _mapped_leaves(a, t, f"argument {k}")]
        if not mapped:
            raise S2SError("vmap needs at least one mapped argument; in_axes maps none",
                           hint="give the batched argument's axis in in_axes (e.g. 0)")
        sizes = {size for _, _, size in mapped}
        if len(sizes) != 1:
            detail = "; ".join(f"{where} has size {size} along axis {axis}" for where, axis, size in mapped)
            raise S2SError(f"vmap got inconsistent sizes for the mapped axes: {detail}",
                           hint="map arguments that have the same batch size")
        if sizes == {0}:
            raise S2SError("vmap over an empty batch (size 0) is not supported",
                           hint="skip the call when there are no examples")
        return trees

    # ---- the per-example code -------------------------------------------------------

    def _kernel(self, example: tuple, backend: str):
        """(Kernel or None, per-example output): None when fun has no generated code (then the
        python backend loops over the examples in Python)."""
        fun = self.fun
        if isinstance(fun, Batched):
            spec = fun._specialise(example, fun._trees(example), backend)
            if spec["driver"] is None:
                return None, fun.with_backend("python")(*example)
            output = fun.with_backend("python")(*example)  # batched: the inner batch axis is in it
            kernel = batching.Kernel(spec["source"], spec["driver"], [],
                                     [f"[{k}]" for k in range(len(spec["leaf_dtypes"]))],
                                     [np.ndim(x) for x in pytree.leaves(output)], f"vmap of {spec['description']}")
            return kernel, output
        if isinstance(fun, core.Transformed) and fun.kind in ("grad", "value_and_grad"):
            output = fun.with_backend("python")(*example)
            # Compiled, the per-example gradient is specialised for the examples' kinds.
            source, entries = fun.specialised(example) if backend in ("cpu", "cuda") else fun.generated()
            entry = entries["vjp"]
            grads = "[1][0]" if isinstance(fun.argnums, int) else "[1]"
            if fun.kind == "grad":
                view = (grads, "[0][1]") if fun.has_aux else grads
            else:
                view = ((("[0][0]", "[0][1]") if fun.has_aux else "[0]"), grads)
            seed = core._seed(example)
            extra = ["np.float32(1.0)" if isinstance(seed, np.float32) else "1.0"]
            what = f"{'grad' if fun.kind == 'grad' else 'value_and_grad'} of {fun.fun.__name__}"
        elif isinstance(fun, SecondOrder) and backend == "cpu":
            found = _second_order_kernel(fun, example)
            if found is None:
                return None, fun(*example)
            source, entry, output, what = found
            view, extra = "", []
        elif isinstance(fun, core.Primal) or inspect.isfunction(fun) and not isinstance(fun, type):
            plain = fun.fun if isinstance(fun, core.Primal) else fun
            output = core._plain_value(plain, copy.deepcopy(example))
            try:
                source, entries = core._generated(plain, "primal", {})
                if backend == "cpu":
                    # Compiled, the per-example code is that generated for the example's kinds where it
                    # differs, as s2s.jit's of the function: a loop over a dict's keys written out
                    # (frontend/dict_loops.py), a test of an ndim decided (transforms/static_properties.py),
                    # a carry that a loop makes an array started as one (optimize/carries.py)
                    for_example, named = core._generated(plain, "primal", {"facts": argument_facts(example)})
                    if _without_facts_line(for_example) != source:
                        source, entries = for_example, named
            except S2SError:
                if backend == "python" and not isinstance(fun, core.Primal):
                    return None, output  # e.g. a lambda around s2s.jvp: loop in Python
                raise
            entry, view, extra, what = entries["name"], "", [], plain.__name__
        else:
            return None, fun(*example)
        structure = pytree.flatten(output)[1]
        leaves = pytree.leaves(output)
        kernel = batching.Kernel(source, entry, extra, _view_paths(view, structure),
                                 [np.ndim(x) for x in leaves], what)
        if backend == "cpu" and isinstance(fun, core.Transformed) and fun.kind == "grad" and not fun.has_aux:
            self._with_into(kernel, fun, example, leaves)
        return kernel, output

    @staticmethod
    def _with_into(kernel: batching.Kernel, fun, example: tuple, leaves: list) -> None:
        """Under s2s.jit, the examples after the first write their gradients into the rows of
        the driver's outputs (optimize/into.py) where each is an array of one or more
        dimensions, the gradient with respect to an array argument (so of its shape)."""
        argnums = (fun.argnums,) if isinstance(fun.argnums, int) else tuple(fun.argnums)
        argnums = tuple(k % len(example) for k in argnums)
        if len(leaves) != len(argnums) or not all(
                isinstance(example[k], np.ndarray) and example[k].ndim >= 1 for k in argnums) or not all(
                isinstance(leaf, np.ndarray) and leaf.shape == example[k].shape for leaf, k in zip(leaves, argnums)):
            return
        module = ast.parse(kernel.source)
        function = next((s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == kernel.entry), None)
        if function is None:
            return
        params = [a.arg for a in function.args.args]
        facts = {p: f for p, f in zip(params, argument_facts(example))}
        facts[params[-1]] = "float"  # the seed
        found = into_source(kernel.source, kernel.entry, [(path, params[k]) for path, k in zip(kernel.leaf_paths, argnums)],
                            facts)
        if found is not None:
            kernel.source, kernel.into = found

    def _out_axes(self, output: Any) -> list:
        """The out_axes entry of each output leaf, resolved against its per-example ndim."""
        leaves, structure = pytree.flatten(output)

        def expand(spec, node, out):
            if spec is None or isinstance(spec, (int, np.integer)):
                out.extend([spec] * len(batching.leaf_paths(node)))
            elif node[0] == "seq" and isinstance(spec, (tuple, list)) and len(spec) == len(node[2]):
                for s, child in zip(spec, node[2]):
                    expand(s, child, out)
            elif node[0] == "dict" and isinstance(spec, dict) and sorted(spec) == node[1]:
                for key, child in zip(node[1], node[2]):
                    expand(spec[key], child, out)
            else:
                raise S2SError(f"vmap: out_axes {self.out_axes!r} does not match the output's structure",
                               hint="give an int, None, or a prefix of the output tree")
            return out

        axes = expand(self.out_axes, structure, [])
        resolved = []
        for axis, leaf in zip(axes, leaves):
            if axis is None:
                resolved.append(None)
                continue
            ndim = np.ndim(leaf) + 1
            if not -ndim <= axis < ndim:
                raise S2SError(f"vmap: out_axes {axis} is out of range for an output with {ndim - 1} "
                               "dimensions per example")
            resolved.append(int(axis) % ndim)
        return resolved

    def _specialise(self, args: tuple, trees: list, backend: str) -> dict:
        key = (_signature(args, trees), backend)
        found = self._specialised.get(key)
        if found is None:
            example = tuple(_example(a, t, 0) for a, t in zip(args, trees))
            with runtime.debug_silenced():  # (the probe is not one of the user's calls)
                kernel, probe = self._kernel(example, backend)  # (user code: not under the lock)
            with cache.LOCK:  # concurrent first calls (pmap's shards): one specialises, the others find it
                found = self._specialised.get(key) or self._specialise_now(key, args, trees, example, kernel, probe,
                                                                                 backend)
        return found

    def _specialise_now(self, key: tuple, args: tuple, trees: list, example: tuple, kernel, probe,
                        backend: str) -> dict:
        axes = self._out_axes(probe)
        spec = {"probe": probe, "structure": pytree.flatten(probe)[1], "out_axes": axes,
                "leaf_dtypes": [np.asarray(x).dtype for x in pytree.leaves(probe)],
                "floating": [np.issubdtype(np.asarray(x).dtype, np.floating) for x in pytree.leaves(probe)],
                "leaf_ndims": [np.ndim(x) for x in pytree.leaves(probe)]}
        if kernel is None:
            if backend != "python":
                raise S2SError(f"vmap of {getattr(self.fun, '__name__', self.fun)!r} has no generated code to compile",
                               hint="vmap a plain function, s2s.grad, s2s.value_and_grad, s2s.jit or s2s.vmap "
                                    "of one; or use backend='python'")
            what = getattr(self.fun, "__name__", type(self.fun).__name__)
            spec.update(source=f"# s2s.vmap of {what}: it has no generated code, so the python backend calls it "
                               f"once per example, in Python.\n", driver=None, call=None, description=what)
        else:
            params = _param_names(self.fun.fun if isinstance(self.fun, (core.Transformed, core.Primal)) else self.fun,
                                  len(args))
            base = kernel.entry[:-4] + "_grad" if kernel.entry.endswith("_vjp") else kernel.entry
            if isinstance(self.fun, core.Transformed) and self.fun.kind == "value_and_grad":
                base = kernel.entry[:-4] + "_value_and_grad"
            # out_axes None: stack, then check every example agrees (as JAX refuses a batched output)
            source, why_loop = None, ""
            if backend == "python":
                source, why_loop = self._vectorized(params, trees, spec, kernel)
            if backend == "cuda":  # a kernel module and its launcher (backends/cuda.py)
                user = self.fun
                while hasattr(user, "fun"):
                    user = user.fun
                spec.update(backends.cuda_vmap(base, params, trees, kernel, spec, example, user))
                self._specialised[key] = spec
                return spec
            if source is None:
                source = batching.module_source(base, params, trees, kernel, [a or 0 for a in axes], why_loop,
                                                private=backend == "python")
                # (the compiled loop driver takes them so)
                spec["flat_args"] = backend != "python" and any(map(batching.is_nested, trees))
            spec.update(source=source, driver=f"{base}_vmap", description=kernel.description)
            if "vectorized_call" in spec:  # a Python driver around generated code: nothing to embed
                spec["call"], spec["driver"] = spec.pop("vectorized_call"), None
            else:
                module = backends.load(source, base + "_vmap", backend, parallel=(f"{base}_vmap",))
                user = self.fun
                while hasattr(user, "fun"):  # the user's function inside transforms of it
                    user = user.fun
                spec["call"] = backends.entry(module, f"{base}_vmap", user if inspect.isfunction(user) else None)
        self._specialised[key] = spec
        return spec

    def _vectorized(self, params, trees, spec, kernel) -> tuple[str | None, str]:
        """On the python backend, a plain function is batched by rules into vectorised NumPy
        where every statement has one (the "vmap" transform): (source, "") or (None, why not)."""
        fun = self.fun
        if isinstance(fun, core.Primal):
            fun = fun.fun
        if isinstance(fun, core.Transformed):
            return self._vectorized_grad(params, trees, spec)
        if not inspect.isfunction(fun) or isinstance(self.fun, Batched):
            return None, "batching rules cover plain functions and their gradients; this is " + kernel.description
        options = {"params": params, "trees": trees, "out_structure": _plain_structure(spec["structure"]),
                   "leaf_paths": kernel.leaf_paths, "out_axes": [a or 0 for a in spec["out_axes"]],
                   "description": kernel.description}
        try:
            source = core._source(fun, "vmap", options)
        except NoBatchingRule as exc:
            return None, str(exc)
        return source, ""

    def _vectorized_grad(self, params, trees, spec) -> tuple[str | None, str]:
        """vmap(grad(f)) on the python backend: the gradient of the vectorised batch's total
        (the "vmap_total" transform), the differentiated arguments broadcast to the batch.
        Sets spec["call"] to the Python driver; returns its two modules as the source."""
        fun = self.fun
        argnums = core._argnums_tuple(fun.argnums)
        forced = [k in argnums or k - len(trees) in argnums for k in range(len(trees))]
        options = {"params": params, "trees": trees, "forced": forced, "has_aux": fun.has_aux}
        try:
            source, entries = core._generated(fun.fun, "vmap_total", options)
            module = backends.import_generated(source, entries["total"])
            gradient = core.Transformed(getattr(module, entries["total"]), "grad", fun.argnums)
            grad_source = gradient.source
        except S2SError as exc:  # no batching rule, or no derivative rule for the batched code
            return None, str(exc)
        batched = getattr(module, entries["batched"])
        result = _pattern(entries["result"])
        # which output leaves carry the batch: every gradient (its argument was broadcast), and
        # the value's leaves where the batched entry's result pattern says so
        value_pattern = batching.element(result, 0) if fun.has_aux else result
        if fun.kind == "grad":
            pattern = (True, batching.element(result, 1)) if fun.has_aux else True
        else:
            pattern = ((value_pattern, batching.element(result, 1)) if fun.has_aux else value_pattern, True)
        batched_leaves = batching.leaf_patterns(spec["structure"], pattern)
        out_axes = [a or 0 for a in spec["out_axes"]]

        def call(*args):
            n = next(size for k, (a, t) in enumerate(zip(args, trees)) for _, _, size in _mapped_leaves(a, t, ""))
            moved = tuple(_moved(a, t, f, n) for a, t, f in zip(args, trees, forced))
            grads = gradient(*moved)
            if fun.kind == "grad" and not fun.has_aux:
                output = grads
            else:
                value = batched(*moved)
                output = (grads, value[1]) if fun.kind == "grad" else (value, grads)
            return tuple(np.moveaxis(np.asarray(leaf) if is_batched else runtime.batch_broadcast(leaf, n), -1, axis)
                         for leaf, is_batched, axis in zip(pytree.leaves(output), batched_leaves, out_axes))

        spec["vectorized_call"] = call
        return source + "\n\n# The gradient of the batch total, by s2s.grad:\n\n" + grad_source, ""

    def _with_defaults(self, args: tuple) -> tuple:
        """Parameters left to their defaults are passed, unmapped: the generated code takes them all."""
        if self._defaults is None:
            fun = self.fun
            while isinstance(fun, (Batched, core.Transformed, core.Primal)):
                fun = fun.fun
            try:
                params = [p for p in inspect.signature(fun).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            except (TypeError, ValueError):
                params = []
            self._defaults = (len(params), tuple(p.default for p in params))
        count, defaults = self._defaults
        missing = defaults[len(args):count]
        if not missing or any(d is inspect.Parameter.empty for d in missing):
            return args
        return args + missing

    @user_facing
    def __call__(self, *args, **kwargs):
        if kwargs:
            raise S2SError(f"vmap: pass the arguments positionally (got {', '.join(kwargs)} by keyword)",
                           hint="in_axes names positions, as in JAX")
        given, passed = len(args), args
        args = self._with_defaults(args)
        sibling = self.for_arguments(args)  # (static values: core.StaticSiblings)
        if sibling is not self:
            return sibling(*passed)
        call_key = _call_key(args)
        if call_key is not None:
            call_key = (given, call_key, self.backend, repr(self.in_axes))
        found = self._by_call_key.get(call_key) if call_key is not None else None
        if found is not None:  # a call like an earlier one: its trees and checks hold
            spec, trees = found
        else:
            in_axes = self.in_axes
            if given < len(args):  # defaults are not mapped
                axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * given
                if len(axes) == given:
                    self.in_axes = axes + (None,) * (len(args) - given)
            try:
                trees = self._trees(args)
            finally:
                self.in_axes = in_axes
            spec = self._specialise(args, trees, self.backend)
            if call_key is not None:
                if len(self._by_call_key) >= 64:  # e.g. many batch sizes: keep the record small
                    self._by_call_key.clear()
                self._by_call_key[call_key] = (spec, trees)
        if spec["call"] is None:  # no generated code: a Python loop over examples
            n = next(size for k, (a, t) in enumerate(zip(args, trees)) for _, _, size in _mapped_leaves(a, t, ""))
            outputs = [pytree.flatten(self.fun(*copy.deepcopy([_example(a, t, b) for a, t in zip(args, trees)])))
                       for b in range(n)]  # (copies: fun may write into its arguments)
            if any(repr(structure) != repr(spec["structure"]) for _, structure in outputs) or any(
                    np.shape(x) != np.shape(y) for leaves, _ in outputs for x, y in zip(leaves, outputs[0][0])):
                raise S2SError("vmap: the examples' outputs differ in structure or shape",
                               hint="return values of the same shape for every example")
            outputs = [leaves for leaves, _ in outputs]
            stacked = [np.stack([np.asarray(o[k]) for o in outputs]) for k in range(len(spec["leaf_dtypes"]))]
            stacked = [np.moveaxis(s, 0, a) if a else s for s, a in zip(stacked, spec["out_axes"])]
        else:
            call_args = tuple(pytree.to_numba(a) for a in args) if self.backend == "cpu" else args
            if spec.get("flat_args"):  # the loop driver takes nested arguments flattened
                call_args = tuple(v for a, t in zip(call_args, trees)
                                  for v in (batching.flat_values(a, t, _shell) if batching.is_nested(t) else (a,)))
            try:
                stacked = list(spec["call"](*call_args))
            except ValueError as exc:  # runtime.batch_example: an example's output has another shape
                if "s2s: vmap" not in str(exc):
                    raise
                raise S2SError(str(exc).replace("s2s: vmap: ", "vmap: "),
                               hint="return values of one shape and dtype for every example") from None
        self._last_source = spec["source"]  # after the call: the cuda backend may write it again
        # The vectorised code returns what it computed, which may be a view of an argument
        # (vmap of `return x`, `x.T`, `x[0]`) or another output (`return x, x`): the caller
        # gets arrays of its own, as from the loop over examples, whose writes change nothing else.
        given_arrays = [a for a in pytree.leaves(args) if isinstance(a, np.ndarray)]
        leaves = []
        for value, dtype, axis, floating in zip(stacked, spec["leaf_dtypes"], spec["out_axes"], spec["floating"]):
            if hasattr(value, "copy_to_host") and axis is not None:  # a CUDA device array (the inputs were)
                leaves.append(value)
                continue
            value = value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)
            if axis is None:  # out_axes=None: the output must not depend on the example
                if not all(np.array_equal(v, value[0], equal_nan=value.dtype.kind in "fc") for v in value[1:]):
                    raise S2SError("vmap: out_axes=None for an output that differs between examples",
                                   hint="give that output an axis in out_axes")
                value = value[0]
            if floating and value.dtype != dtype:
                value = value.astype(dtype)
            if any(isinstance(other, np.ndarray) and np.may_share_memory(value, other) for other in given_arrays + leaves):
                value = value.copy()
            leaves.append(value)
        return pytree.unflatten(spec["structure"], leaves)


def _shell(container: Any) -> Any:
    """What the batched driver's with_items needs of a dict or namedtuple of a nested argument:
    its keys (a dict) or its class (a namedtuple, or a DictTuple under s2s.jit), without the
    arrays, which would nest containers again (batching.is_nested)."""
    if isinstance(container, tuple):
        return type(container)(*([0] * len(container)))
    return container


def _moved(arg: Any, tree: batching.ArgTree, forced: bool, n: int) -> Any:
    """An argument of a vectorised batch: mapped axes last, forced (differentiated) leaves
    broadcast to the batch."""
    if tree[0] == "leaf":
        if tree[1] is not None:
            return np.moveaxis(arg, tree[1], -1)
        return runtime.batch_broadcast(arg, n) if forced else arg
    if tree[0] == "dict" or not (forced or batching.is_batched(tree)):
        return arg
    items = [_moved(a, t, forced, n) for a, t in zip(arg, tree[1])]
    return type(arg)(*items) if tree[0] == "namedtuple" else tuple(items)


@recorded
def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Batched:
    """Map fun over an axis of its arguments, as jax.vmap.

    in_axes and out_axes are an int, None (not mapped), a tuple with one entry per positional
    argument, or a pytree prefix of the arguments (outputs). Under s2s.jit the examples run in
    parallel over compiled per-example code.

    >>> import numpy as np, s2s
    >>> def f(w, x):
    ...     return np.sum(w * x)
    >>> s2s.vmap(f, in_axes=(None, 0))(np.ones(3), np.arange(6.0).reshape(2, 3)).tolist()
    [3.0, 12.0]
    """
    if isinstance(fun, core.Primal):  # vmap(jit(f)) is jit(vmap(f)), its examples compiled
        return core.jit(Batched(fun.fun, in_axes, out_axes), backend=fun.backend)
    return Batched(fun, in_axes, out_axes)
