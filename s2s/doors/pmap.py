"""s2s.pmap: a function mapped over devices, with JAX's semantics, on CPU devices.

pmap(f)(x) splits the mapped axis of its arguments into shards, one per device (s2s.devices():
S2S_CPU_DEVICES of them), runs f on each shard on its own thread, and stacks the results. The
shards run at the same time where the code they run releases the GIL: Numba code, which s2s
compiles with nogil=True (backends/__init__.py). So f runs as:

- an s2s transform (grad, vmap, jacrev, jit(...)): the transform, compiled for the cpu
  backend as jax.pmap compiles (a transform still on the python backend is moved to "cpu");
- a plain function: s2s.jit(f), compiled once and called by every shard;
- a plain function that s2s cannot compile, in particular one that calls a collective
  (s2s.lax.psum, ...; the frontend refuses those) or calls s2s.jit'ted functions: as Python
  on each shard's thread, where the collectives meet (lax/collectives.py) and the compiled
  functions it calls run without the GIL. `.mode` says which, and why.

backend="python" runs everything as generated NumPy (no Numba), for debugging.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
from typing import Any, Callable, Sequence

import numpy as np

from .. import backends
from ..lax import collectives
from ..tree_util import pytree
from ..errors import S2SError, user_facing
from .core import Primal
from .devices import CpuDevice, devices as list_devices
from .vmap import Batched
from .shipping import recorded


def _is_cuda(device: Any) -> bool:
    return getattr(device, "device_kind", None) == "cuda"


def _is_dask(device: Any) -> bool:
    return getattr(device, "device_kind", None) == "dask"


def choose_runner(fun: Callable, backend: str) -> tuple[Callable, str]:
    """What a shard on a CPU device runs for fun, and a line that says how (Pmapped.mode)."""
    if isinstance(fun, Primal) or isinstance(fun, Pmapped):
        return fun, f"calls {type(fun).__name__} (backend {getattr(fun, 'backend', 'cpu')!r})"
    if hasattr(fun, "with_backend"):  # an s2s transform
        if getattr(fun, "backend", None) == "python" and backend == "cpu":
            return fun.with_backend("cpu"), "compiled: the transform on the cpu backend"
        return fun, f"calls the transform (backend {getattr(fun, 'backend', '?')!r})"
    if backend == "python":
        return fun, "python: backend='python'"
    try:
        compiled = Primal(fun, "cpu")
        compiled.source  # the frontend runs here: a collective, or what s2s cannot read, refuses
    except S2SError as refusal:
        return fun, f"python: s2s.jit cannot compile it ({refusal.reason})"
    return compiled, "compiled: s2s.jit(fun)"

# Shard threads, shared by every pmap; a pmap inside a shard (nested) takes more of them:
# the executor starts a thread whenever none is idle, so waiting shards never starve others.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=512, thread_name_prefix="s2s-pmap")


def _axis_tree(arg: Any, spec: Any, where: str) -> tuple:
    """The argument's structure with the mapped axis (or None) of each leaf; spec is a prefix
    of the argument's tree (JAX's in_axes)."""
    if spec is None or isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if isinstance(arg, dict):
            return ("dict", sorted(arg), [_axis_tree(arg[k], spec, f"{where}[{k!r}]") for k in sorted(arg)])
        if isinstance(arg, (tuple, list)):
            return ("seq", type(arg), [_axis_tree(x, spec, f"{where}[{k}]") for k, x in enumerate(arg)])
        if spec is None:
            return ("leaf", None)
        ndim = np.ndim(arg)
        if ndim == 0 or not -ndim <= spec < ndim:
            raise S2SError(f"pmap: in_axes maps {where} over axis {spec}, but it has {ndim} dimensions",
                           hint="pass None in in_axes for values that every shard receives whole")
        return ("leaf", int(spec) % ndim)
    if isinstance(spec, dict) and isinstance(arg, dict) and sorted(spec) == sorted(arg):
        return ("dict", sorted(arg), [_axis_tree(arg[k], spec[k], f"{where}[{k!r}]") for k in sorted(arg)])
    if isinstance(spec, (tuple, list)) and isinstance(arg, (tuple, list)) and len(spec) == len(arg):
        return ("seq", type(arg), [_axis_tree(x, s, f"{where}[{k}]") for k, (x, s) in enumerate(zip(arg, spec))])
    raise S2SError(f"pmap: in_axes entry {spec!r} for {where} does not match its structure ({type(arg).__name__})",
                   hint="give an int or None, or a tuple/dict that is a prefix of the argument's tree")


def _sizes(arg: Any, tree: tuple, where: str):
    """(where, size) of each mapped leaf."""
    if tree[0] == "leaf":
        if tree[1] is not None:
            yield where, np.shape(arg)[tree[1]]
        return
    keys = tree[1] if tree[0] == "dict" else range(len(tree[2]))
    for key, child in zip(keys, tree[2]):
        yield from _sizes(arg[key], child, f"{where}[{key!r}]")


def _shard(arg: Any, tree: tuple, index: int, copy: bool = True) -> Any:
    """Shard `index` of an argument: mapped leaves sliced, every array a private copy (JAX's
    arrays are immutable; a shard that writes to its arguments must not reach the caller's
    arrays or another shard's). Without copy, NumPy arrays are views: for a CUDA kernel, whose
    arguments are copied anyway, to page-locked buffers."""
    if tree[0] == "leaf":
        if tree[1] is not None:
            if not isinstance(arg, np.ndarray):
                return np.take(arg, index, axis=tree[1])  # (a copy)
            # a view, then its copy: np.array copies without the GIL, so the shards' threads copy
            # at once, where np.take's copies on threads ran 10x slower than one after the other
            view = np.moveaxis(arg, tree[1], 0)[index]
            return np.array(view) if copy and isinstance(view, np.ndarray) else view
        return np.array(arg) if copy and isinstance(arg, np.ndarray) else arg
    if tree[0] == "dict":
        return {k: _shard(arg[k], child, index, copy) for k, child in zip(tree[1], tree[2])}
    items = [_shard(x, child, index, copy) for x, child in zip(arg, tree[2])]
    return type(arg)(*items) if pytree.is_namedtuple(arg) else type(arg)(items)


def _stack(outputs: list, spec: Any, where: str) -> Any:
    """The shards' outputs (equal structures) stacked along out_axes, a prefix of their tree;
    None: the value every shard returned (it must be the same on all)."""
    first = outputs[0]
    if isinstance(spec, dict) and isinstance(first, dict) or isinstance(spec, (tuple, list)) and isinstance(
            first, (tuple, list)):
        keys = sorted(first) if isinstance(first, dict) else range(len(first))
        if (sorted(spec) if isinstance(spec, dict) else len(spec)) != (list(keys) if isinstance(first, dict)
                                                                    else len(first)):
            raise S2SError(f"pmap: out_axes {spec!r} does not match the output {where}",
                           hint="give an int or None, or a prefix of the output's tree")
        parts = {k: _stack([o[k] for o in outputs], spec[k], f"{where}[{k!r}]") for k in keys}
        if isinstance(first, dict):
            return parts
        items = [parts[k] for k in keys]
        return type(first)(*items) if pytree.is_namedtuple(first) else type(first)(items)
    if isinstance(first, dict) or isinstance(first, (tuple, list)):
        keys = sorted(first) if isinstance(first, dict) else range(len(first))
        parts = {k: _stack([o[k] for o in outputs], spec, f"{where}[{k!r}]") for k in keys}
        if isinstance(first, dict):
            return parts
        items = [parts[k] for k in keys]
        return type(first)(*items) if pytree.is_namedtuple(first) else type(first)(items)
    if spec is None:
        if not all(np.array_equal(o, first, equal_nan=np.asarray(first).dtype.kind in "fc") for o in outputs[1:]):
            raise S2SError(f"pmap: out_axes=None asks for the output {where} that every shard shares, "
                           "but the shards returned different values",
                           hint="reduce it first (s2s.lax.psum, pmean, ...) or map it (out_axes=0)")
        return first
    if not isinstance(spec, (int, np.integer)) or isinstance(spec, bool):
        raise S2SError(f"pmap: out_axes entry {spec!r} for the output {where} is not an int or None")
    arrays = [np.asarray(o) for o in outputs]
    if not -arrays[0].ndim - 1 <= spec <= arrays[0].ndim:
        raise S2SError(f"pmap: out_axes {spec} is out of range for the output {where} of {arrays[0].ndim} dimensions "
                       "per shard")
    return np.stack(arrays, axis=spec)


def _reshape_hint(n: int, count: int, where: str) -> str:
    k = -(-n // count)
    even = "" if n % count == 0 else f" (pad the axis to {count * k} first: {n} is not a multiple of {count})"
    return (f"reshape to (n_devices, k) and map the rest with s2s.vmap inside{even}:\n"
            f"        x = x.reshape({count}, {k}, *x.shape[1:])\n"
            f"        y = s2s.pmap(s2s.vmap(f))(x)      # shape ({count}, {k}, ...)\n"
            f"        y = y.reshape({count * k}, *y.shape[2:]){'' if n % count == 0 else f'[:{n}]'}\n"
            f"    or set S2S_CPU_DEVICES={n} (devices beyond the number of cores share the cores)")


class Pmapped:
    """s2s.pmap(fun, ...): callable; the shards of a call run on threads, one per device."""

    def __init__(self, fun: Callable, axis_name: Any = None, in_axes: Any = 0, out_axes: Any = 0,
                 static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence[Any] | None = None,
                 backend: str | None = None):
        if not callable(fun):
            raise S2SError(f"pmap takes a function, got {type(fun).__name__}")
        if backend not in (None, "cpu", "python", "cuda"):
            raise S2SError(f"pmap: backend {backend!r} has no devices for pmap",
                           hint="use backend=None or 'cpu' (CPU devices, compiled), 'cuda' (GPUs, or the streams "
                                "of s2s.devices('cuda', streams=k)), or 'python' (no compilation)")
        if isinstance(in_axes, dict):
            raise S2SError("pmap: in_axes is a dict; give one entry per positional argument",
                           hint="in_axes=({'w': 0, 'b': None},) for a single dict argument")
        self.fun = fun
        self.axis_name = axis_name
        self.in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self.out_axes = out_axes
        static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
            else tuple(static_broadcasted_argnums)
        self.static = static
        self.devices = None if devices is None else list(devices)
        on_gpu = self.devices is not None and any(_is_cuda(d) for d in self.devices)
        on_dask = self.devices is not None and any(_is_dask(d) for d in self.devices)
        kind = _is_cuda if on_gpu else _is_dask if on_dask else (lambda d: isinstance(d, CpuDevice))
        if self.devices is not None and not all(kind(d) for d in self.devices):
            raise S2SError(f"pmap: devices {self.devices!r} are not all CPU devices, all CUDA devices or all "
                           "Dask workers",
                           hint="pass s2s.devices()[:k], s2s.devices('cuda', streams=k)[:k] or "
                                "s2s.dask_devices(client)[:k]")
        if on_gpu and backend not in (None, "cuda"):
            raise S2SError(f"pmap: backend {backend!r} with CUDA devices", hint="leave backend out, or 'cuda'")
        if on_dask and backend == "cuda":
            raise S2SError("pmap: backend 'cuda' with Dask workers as devices",
                           hint="Dask workers run the cpu backend (or 'python'); leave backend out")
        self.backend = "cuda" if on_gpu else backend or "cpu"
        self.dask = on_dask  # the shards run as tasks on Dask workers (doors/dask.py)
        functools.update_wrapper(self, fun, updated=())
        self.mode: str | None = None  # how the shards run, decided on the first call
        self._runner: Callable | None = None
        self._lock = threading.Lock()

    # ---- how each shard runs -----------------------------------------------------------

    def _shard_function(self) -> Callable:
        if self._runner is not None:
            return self._runner
        with self._lock:  # shards of concurrent calls decide once
            if self._runner is None:
                self._runner, self.mode = self._choose()
        return self._runner

    def _choose(self) -> tuple[Callable, str]:
        if self.backend == "cuda":
            return self._choose_cuda(self.fun)
        if self.dask:  # (a Dask worker ships fun to the workers: doors/dask.py)
            shipped = self.devices[0].runner(self.fun, self.backend)
            return shipped, f"dask: {shipped.mode}, on each worker"
        return choose_runner(self.fun, self.backend)

    @staticmethod
    def _choose_cuda(fun) -> tuple[Callable, str]:
        """On CUDA devices a shard runs s2s.jit(s2s.vmap(f), backend="cuda") on its GPU and stream,
        the one form the cuda backend compiles; a plain function runs as Python on the shard's
        thread, where the cuda-jitted functions it calls launch on the shard's stream."""
        if isinstance(fun, Batched):
            return (fun if fun.backend == "cuda" else fun.with_backend("cuda")), "cuda: the vmap's kernel on each stream"
        if hasattr(fun, "with_backend") or isinstance(fun, Primal):
            raise S2SError(f"pmap over CUDA devices runs s2s.vmap(...) per shard, not {type(fun).__name__}",
                           hint="map the examples of a shard with s2s.vmap: s2s.pmap(s2s.vmap(s2s.grad(f)), "
                                "devices=s2s.devices('cuda', streams=2))")
        return fun, "python: the function on each shard's thread, its cuda kernels on the shard's stream"

    # ---- a call --------------------------------------------------------------------------

    def _trees(self, args: tuple, static: tuple) -> list:
        if isinstance(self.in_axes, tuple):
            if len(self.in_axes) != len(args):
                raise S2SError(f"pmap: in_axes has {len(self.in_axes)} entries for {len(args)} positional arguments",
                               hint="give one entry (an int, None or a prefix tree) per positional argument")
            specs = self.in_axes
        else:
            specs = (self.in_axes,) * len(args)
        return [_axis_tree(a, None if k in static else s, f"argument {k}")
                for k, (a, s) in enumerate(zip(args, specs))]

    @user_facing
    def __call__(self, *args, **kwargs):
        static = tuple(k % len(args) if -len(args) <= k < len(args) else k for k in self.static)
        for k in static:
            if not 0 <= k < len(args):
                raise S2SError(f"pmap: static_broadcasted_argnums {k} is out of range for {len(args)} positional "
                               "arguments")
            try:
                hash(args[k])
            except TypeError:
                raise S2SError(f"pmap: static argument {k} is a {type(args[k]).__name__}, which is not hashable",
                               hint="pass numbers, strings or tuples as static arguments, arrays as mapped or "
                                    "broadcast (in_axes None) ones") from None
        trees = self._trees(args, static)
        keyword_trees = {name: _axis_tree(v, 0, f"keyword argument {name!r}") for name, v in kwargs.items()}
        sizes = [s for k, (a, t) in enumerate(zip(args, trees)) for s in _sizes(a, t, f"argument {k}")]
        sizes += [s for name, v in kwargs.items() for s in _sizes(v, keyword_trees[name], f"keyword {name!r}")]
        if not sizes:
            raise S2SError("pmap needs at least one argument with a mapped axis",
                           hint="map an argument (in_axes=0), or call the function directly")
        if len({size for _, size in sizes}) != 1:
            listing = ", ".join(f"{where}: {size}" for where, size in sizes)
            raise S2SError(f"pmap: the mapped axes have different sizes ({listing})",
                           hint="give every mapped axis the same size, the number of shards")
        n = sizes[0][1]
        self._check_devices(n, sizes[0][0])
        runner = self._shard_function()
        copy = not (self.backend == "cuda" and isinstance(runner, Batched))  # (a kernel: see _shard)

        def sliced(i: int) -> tuple[tuple, dict]:
            """Shard i's arguments, copied on its own thread: the copies of the shards overlap."""
            return (tuple(_shard(a, t, i, copy) for a, t in zip(args, trees)),
                    {name: _shard(v, keyword_trees[name], i, copy) for name, v in kwargs.items()})

        outputs = self._run(runner, sliced, n)
        structures = [pytree.flatten(o)[1] for o in outputs]
        if any(s != structures[0] for s in structures):
            raise S2SError("pmap: the shards returned outputs of different structures",
                           hint="return the same pytree from every shard")
        return _stack(outputs, self.out_axes, "")

    def _check_devices(self, n: int, where: str) -> None:
        if self.devices is not None:
            if n != len(self.devices):
                raise S2SError(f"pmap: the mapped axis of {where} has size {n}, but pmap was given "
                               f"{len(self.devices)} devices", hint="map an axis of exactly len(devices)")
            return
        if self.backend == "cuda":
            count = len(list_devices("cuda"))
            if n > count:
                raise S2SError(f"pmap: the mapped axis of {where} has size {n}, but there {'is' if count == 1 else 'are'} only {count} GPU{'' if count == 1 else 's'} "
                               "(s2s.devices('cuda'))",
                               hint=f"give the GPU several streams, devices=s2s.devices('cuda', streams={n}), or "
                                    + _reshape_hint(n, count, where).split(" or set S2S_CPU_DEVICES")[0])
            return
        count = len(list_devices())
        if n > count:
            raise S2SError(f"pmap: the mapped axis of {where} has size {n}, but there are only {count} devices "
                           f"(s2s.devices(); S2S_CPU_DEVICES, by default the number of cores)",
                           hint=_reshape_hint(n, count, where))

    def _run(self, runner: Callable, sliced: Callable, n: int) -> list:
        outer = collectives.frames()
        if self.axis_name is not None and any(f.name == self.axis_name for f in outer):
            raise S2SError(f"pmap: the axis name {self.axis_name!r} is already bound by an enclosing pmap",
                           hint="give the nested pmap another axis_name")
        if self.dask:
            if outer:
                raise S2SError("pmap over Dask workers inside another pmap's shard",
                               hint="make the pmap over Dask workers the outermost; a pmap inside it (over "
                                    "the worker's own CPU devices) may use collectives of both")
            return runner.run(self.devices, self.axis_name, sliced, n)
        root = outer[0].root if outer else collectives.Root()

        gpus = (self.devices or list_devices("cuda")) if self.backend == "cuda" else None

        def shard(i: int):
            previous = collectives.bind(outer + (collectives.Frame(self.axis_name, i, n, root),))
            try:
                shard_args, shard_kwargs = sliced(i)
                if gpus is None:
                    out = runner(*shard_args, **shard_kwargs)
                else:  # page-locked copies, so that this shard's copies overlap another's kernel
                    # (a kernel's outputs are new arrays, so its staging buffers can serve the next
                    # call; a Python function may return its arguments)
                    reuse = isinstance(runner, Batched)
                    with backends.cuda_pinned((shard_args, shard_kwargs), gpus[i], reuse) as staged:
                        with backends.cuda_on_device(gpus[i]):  # (synchronizes the stream on leaving)
                            out = runner(*staged[0], **staged[1])
                root.finish({f.name: f.index for f in collectives.frames()})
                return out
            except BaseException:
                root.abort()  # the others must not wait at a barrier for this shard
                raise
            finally:
                collectives.bind(previous)

        futures = [_POOL.submit(shard, i) for i in range(1, n)]
        results, errors = [None] * n, [None] * n
        try:
            results[0] = shard(0)  # on the caller's thread: one thread fewer to start and join
        except BaseException as exc:  # noqa: BLE001 - reported below, after the others stop
            errors[0] = exc
        for i, future in enumerate(futures, 1):
            try:
                results[i] = future.result()
            except BaseException as exc:  # noqa: BLE001
                errors[i] = exc
        failures = [e for e in errors if e is not None]
        if failures:
            real = [e for e in failures if not isinstance(e, collectives.Aborted)]
            raise (real or failures)[0]
        return results


@recorded
def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence[Any] | None = None,
         backend: str | None = None) -> Pmapped:
    """Map fun over the leading axis (in_axes) of its arguments, one shard per CPU device, the
    shards on concurrent threads, as jax.pmap; collectives (s2s.lax.psum, pmean, pmax, pmin,
    all_gather, axis_index) over axis_name combine the shards.

    >>> import numpy as np, s2s
    >>> def normalise(x):
    ...     return x / s2s.lax.psum(np.sum(x), 'i')
    >>> s2s.pmap(normalise, 'i', devices=s2s.devices()[:1])(np.array([[1.0, 3.0]]))
    array([[0.25, 0.75]])

    The mapped axis may not be longer than the number of devices (s2s.devices(), set by
    S2S_CPU_DEVICES): reshape it to (n_devices, k) and put an s2s.vmap inside.
    """
    return Pmapped(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend)

