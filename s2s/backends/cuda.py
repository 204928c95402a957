"""The cuda backend: s2s.jit(s2s.vmap(f), backend="cuda") as a numba.cuda kernel.

specialise() writes the kernel module for one specialisation of a vmap (codegen/cuda.py),
loads it, and returns the launcher that s2s.vmap calls: arguments are copied to the device
(device arrays are used as they are), one thread runs each example, and the outputs are
copied back (or stay on the device when an input was a device array).

Tapes of the per-example reverse mode (a range loop's, a while loop's) live in global memory:
the launcher allocates one (capacity, threads) array per tape before each launch, step-major,
and each thread uses its column (cuda_tapes.py: capacities, memory, the arrays). A capacity is
evaluated from the arguments' shapes where the trip count is known from them; otherwise it is
the most that the probe (the per-example code run once in Python on the first example, with
runtime.new_tape and the while loops' lists recording their length and dtype) or an earlier
launch needed. A later example that needs more raises its tape's entry of tape_status; the
launcher then runs the batch again with longer tapes (the module stays as it is), so a probe
that saw too little costs time, not results.

The probe also finds the arrays the per-example code makes (their shapes become the kernel's
local arrays) and refuses, at the user's statement, those a kernel cannot hold.

Also here: the GPU side of s2s.device_put / device_get / block_until_ready (to_device, to_host,
synchronize), launch() on a given stream, and sum_examples(), a deterministic total over the
examples. compile_ptx() compiles a specialisation's kernel to PTX without a GPU (the test suite
uses it: Numba's simulator runs code that the real compiler rejects).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import runtime
from ..runtime import overloads
from ..codegen import cuda as codegen
from ..errors import Origin, S2SError
from ..transforms import batching
from ..tree_util import pytree
from . import cuda_tapes, failures
from .loading import import_generated, write_module

THREADS_PER_BLOCK = 128
MAX_BLOCKS = 65536  # more examples than threads: each thread takes several (grid-stride loop)


def cuda_module():
    """numba.cuda, or an S2SError that says how to install it."""
    try:
        from numba import cuda
    except ImportError:
        cuda = None
    # Numba's own numba.cuda (deprecated, "Built-in") is not the target s2s writes for.
    if getattr(cuda, "implementation", None) != "NVIDIA":
        raise S2SError("backend='cuda' needs numba-cuda, which is not installed",
                       hint="pip install 's2s[cuda]' (numba-cuda with the CUDA 12 toolkit), or use backend='cpu'")
    return cuda


@dataclass(frozen=True)
class CudaDevice:
    """A GPU that numba-cuda sees (in Numba's simulator, the one simulated GPU); with a stream
    number, one of several streams of that GPU, each a device of s2s.pmap."""

    id: int = 0
    platform: str = "gpu"
    device_kind: str = "cuda"
    stream: int | None = None

    def __repr__(self) -> str:
        return f"CudaDevice(id={self.id})" if self.stream is None else f"CudaDevice(id={self.id}, stream={self.stream})"


def available() -> bool:
    """Is numba-cuda installed, and does it see a GPU (or run its simulator)?"""
    try:
        return bool(cuda_module().is_available())
    except S2SError:
        return False


def devices(streams: int | None = None) -> list[CudaDevice]:
    """The GPUs numba-cuda sees, as devices (none where CUDA is not available); streams=k: k
    devices per GPU, one per stream, so that a pmap's shards overlap on one GPU."""
    if not available():
        return []
    gpus = [gpu.id for gpu in cuda_module().gpus]
    if streams is None:
        return [CudaDevice(g) for g in gpus]
    if not isinstance(streams, int) or streams < 1:
        raise S2SError(f"s2s.devices: streams={streams!r} is not a positive number of streams per GPU")
    return [CudaDevice(g, stream=k) for g in gpus for k in range(streams)]


# ---- the device a thread computes on: the shards of s2s.pmap --------------------------------

_here = threading.local()
_streams: dict = {}
_streams_lock = threading.Lock()


def _stream_of(device: CudaDevice):
    """The numba-cuda stream of a device (one per GPU and stream number, made on first use)."""
    key = (device.id, device.stream)
    with _streams_lock:
        if key not in _streams:
            _streams[key] = cuda_module().stream()
        return _streams[key]


@contextlib.contextmanager
def on_device(device: CudaDevice):
    """Run the kernels this thread launches on device's GPU and stream (s2s.pmap's shards),
    and wait for them before leaving: the shard's results are then complete."""
    cuda = cuda_module()
    with cuda.gpus[device.id]:
        stream = _stream_of(device)
        previous, _here.stream = getattr(_here, "stream", 0), stream
        try:
            yield stream
        finally:
            _here.stream = previous
            stream.synchronize()


_simulator = threading.Lock()


def _simulated_launch():
    """Numba's simulator runs a kernel's threads as Python threads that it finds through
    module-wide state: two host threads (pmap shards) launching at once would mix them, so there
    launches take turns (on a GPU they overlap on their streams)."""
    from numba.core import config

    return _simulator if config.ENABLE_CUDASIM else contextlib.nullcontext()


class _StagingPool:
    """Page-locked host buffers for the arguments of pmap shards, kept from one call to the next.

    Page-locking memory (cuMemHostAlloc) costs far more than copying into it: on an H200, a pmap
    over 4 streams of the greeks of 10^6 paths x 64 steps that page-locked new buffers on every
    call took 308 ms, where one launch with pageable copies took 85 ms. A buffer serves one shard
    at a time (taken, then given back once the shard's stream has finished with it); the free
    buffers kept hold at most LIMIT bytes, the least recently used shapes going first."""

    LIMIT = 4 << 30

    def __init__(self) -> None:
        self._free: dict = {}  # (gpu, shape, dtype) -> free buffers, the most recently used key last
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, gpu: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
        key = (gpu, shape, dtype.str)
        with self._lock:
            free = self._free.get(key)
            if free:
                buffer = free.pop()
                self._bytes -= buffer.nbytes
                return buffer
        cuda = cuda_module()
        with cuda.gpus[gpu]:  # (page-locked for the context of that GPU)
            return cuda.pinned_array(shape, dtype=dtype)

    def give(self, gpu: int, buffer: np.ndarray) -> None:
        key = (gpu, buffer.shape, buffer.dtype.str)
        with self._lock:
            self._free[key] = self._free.pop(key, []) + [buffer]
            self._bytes += buffer.nbytes
            while self._bytes > self.LIMIT:  # drop the least recently used (freed when collected)
                oldest = next(iter(self._free))
                self._bytes -= self._free[oldest].pop().nbytes
                if not self._free[oldest]:
                    del self._free[oldest]


_staging = _StagingPool()


@contextlib.contextmanager
def pinned(tree: Any, device: CudaDevice, reuse: bool = True):
    """A pytree's arrays copied to page-locked host memory, so that copies to the GPU on a stream
    are asynchronous (a pmap shard's arguments). With reuse, the buffers come from a pool and go
    back to it when the block ends: the caller must have synchronized the stream by then, and
    must not return them (a kernel's outputs are new arrays; a Python function's may be its
    arguments, so for one, reuse=False)."""
    cuda = cuda_module()
    taken = []

    def pin(leaf):
        if not isinstance(leaf, np.ndarray) or leaf.ndim == 0:
            return leaf
        if reuse:
            page_locked = _staging.take(device.id, leaf.shape, leaf.dtype)
            taken.append(page_locked)
        else:
            with cuda.gpus[device.id]:
                page_locked = cuda.pinned_array(leaf.shape, dtype=leaf.dtype)
        page_locked[...] = leaf
        return page_locked

    leaves, structure = pytree.flatten(tree)
    try:
        yield pytree.unflatten(structure, [pin(leaf) for leaf in leaves])
    finally:
        for buffer in taken:
            _staging.give(device.id, buffer)


def to_device(tree: Any, device: CudaDevice) -> Any:
    """A pytree's arrays and numbers copied to the GPU device (device arrays stay as they are);
    numbers stay numbers (a kernel takes them by value)."""
    if not available():
        raise S2SError("s2s.device_put: CUDA is not available (numba-cuda sees no GPU)",
                       hint="put arrays on the CPU (s2s.device_put(x)), or install numba-cuda on a machine with a GPU")
    cuda = cuda_module()
    leaves, structure = pytree.flatten(tree)
    with cuda.gpus[device.id]:
        moved = [leaf if is_device_array(leaf) or np.ndim(leaf) == 0
                 else cuda.to_device(np.ascontiguousarray(leaf)) for leaf in leaves]
    return pytree.unflatten(structure, moved)


def to_host(tree: Any) -> Any:
    """A pytree's device arrays copied to NumPy arrays (anything else as it is)."""
    leaves, structure = pytree.flatten(tree)
    return pytree.unflatten(structure, [leaf.copy_to_host() if is_device_array(leaf) else leaf for leaf in leaves])


def synchronize(tree: Any) -> None:
    """Wait for the kernels and copies that may produce a pytree's device arrays."""
    if any(is_device_array(leaf) for leaf in pytree.leaves(tree)):
        cuda_module().synchronize()


def is_device_array(x: Any) -> bool:
    return hasattr(x, "copy_to_host")  # numba-cuda's device arrays (the simulator's have no __cuda_array_interface__)


def _dtype_key(value: Any) -> str:
    dtype = np.asarray(value).dtype
    if np.ndim(value) != 0:
        return "array"
    return "bool" if dtype == np.bool_ else str(dtype) if str(dtype) in codegen.NUMBA_TYPES else "float64"


def _owns_new_array(value: Any, known: set[int]) -> bool:
    """Is value an array whose memory none of the known arrays (the arguments) holds?"""
    if not isinstance(value, np.ndarray) or value.ndim == 0 or id(value) in known:
        return False  # (a 0-d array, such as random.normal(key)'s, is a number in a kernel)
    return id(_memory(value)) not in known


def _memory(value: np.ndarray) -> Any:
    """The object that owns value's memory (NumPy points a view of a view at it)."""
    while isinstance(value, np.ndarray) and value.base is not None:
        value = value.base
    return value


@dataclass
class Probed:
    """What the probe saw: tapes {line: (largest capacity, dtype)}, arrays made {line: {(shape,
    dtype)}}, and the return lines where a function other than the entry returned an array it made."""

    tapes: dict
    made: dict
    escapes: list


def probe(source: str, stem: str, entry: str, example: tuple, extra: list[str]) -> Probed:
    """Run the per-example code on one example in Python, watching it. A kernel cannot
    allocate, so each statement that makes an array (a new array in its frame after it runs)
    must be one that codegen/cuda.py writes as a local array of the shape seen here, or it is
    refused at the user's line before numba-cuda sees it."""
    path = write_module(source, stem)
    seen: dict[int, tuple[int, str]] = {}
    made: dict[int, set] = {}
    escapes: list[int] = []

    tapes: list[tuple[int, list]] = []

    def new_tape(x, capacity):
        line = sys._getframe(1).f_lineno
        size, dtype = seen.get(line, (0, _dtype_key(x)))
        seen[line] = (max(size, int(capacity)), dtype)
        tape = runtime.new_tape(x, capacity)
        tapes.append((line, tape))
        return tape

    known: set[int] = set()
    for value in example:  # the arguments and the arrays they hold
        for leaf in pytree.leaves(value):
            if isinstance(leaf, np.ndarray):
                known.add(id(leaf))
                known.add(id(leaf.base) if leaf.base is not None else id(leaf))
    last_line: dict[int, int] = {}
    mine: dict[int, set[int]] = {}  # frame -> the arrays it made
    keep: list = []  # (the arrays seen stay alive, so that their ids are not reused)

    def trace(frame, event, arg):
        # (the frame's arrays after each of its lines: one that owns new memory was made by the
        # line that ran before)
        if frame.f_code.co_filename != path:
            return None
        if event in ("line", "return"):
            previous = last_line.get(id(frame))
            for name, value in list(frame.f_locals.items()):
                if _owns_new_array(value, known):
                    # (and its memory: a view of it, k1 of k1, k2 = random.split(key), is not new)
                    known.update((id(value), id(_memory(value))))
                    keep.append(value)
                    mine.setdefault(id(frame), set()).add(id(value))
                    if previous is None and frame.f_back is not None and frame.f_back.f_code.co_filename == path:
                        previous = frame.f_back.f_lineno  # an argument made by the caller's call (f(z * 0.0))
                    if previous is not None:
                        made.setdefault(previous, set()).add((value.shape, str(value.dtype)))
            last_line[id(frame)] = frame.f_lineno
        if event == "return":  # an array made by the return statement itself (return z[0] * z)
            for leaf in pytree.leaves(arg) if arg is not None else ():
                if _owns_new_array(leaf, known):
                    known.add(id(leaf))
                    keep.append(leaf)
                    made.setdefault(frame.f_lineno, set()).add((leaf.shape, str(leaf.dtype)))
        if event == "return" and frame.f_code.co_name != entry and arg is not None:
            if any(id(leaf) in mine.get(id(frame), ()) for leaf in pytree.leaves(arg)):
                escapes.append((frame.f_lineno, frame.f_code.co_name))
        return trace

    recording = types.SimpleNamespace(**{k: getattr(runtime, k) for k in dir(runtime) if not k.startswith("__")})
    recording.new_tape = new_tape
    recording.unpack_bar = lambda parts, source: parts  # as kernels have it (codegen/cuda.py)
    lists: dict[int, list] = {}  # while loops' tapes: {line: [the most values on it, the values]}
    recording.list_tape = cuda_tapes.list_tape_recorder(lists)
    whiles = [line for line, found in codegen.tape_lines(source).items() if found[2] == "while"]
    namespace = {"__name__": f"s2s_generated.probe_{stem}", "__file__": path}
    exec(compile(cuda_tapes.recording_lists(source, whiles), path, "exec"), namespace)
    namespace["runtime"] = recording
    extras = [eval(e, {"np": np}) for e in extra]  # the seed: "1.0" or "np.float32(1.0)"
    old = sys.gettrace()
    sys.settrace(trace)
    try:
        namespace[entry](*example, *extras)
    finally:
        sys.settrace(old)
    # A tape's dtype is that of every value pushed, not only the first: NumPy promotes a float32
    # number to float64 in a loop where it meets a float64 (s = s * np.exp(<float64>)).
    for line, tape in tapes:
        keys = {_dtype_key(value) for value in tape}
        if seen[line][1] != "array" and keys - {seen[line][1]}:
            seen[line] = (seen[line][0], _widest(tape))
    for line, (size, values) in lists.items():
        if values:
            seen[line] = (size, _widest(values))
    return Probed(seen, made, escapes)


def _widest(values: list) -> str:
    """The dtype key of a tape that holds values ("array" if one is an array)."""
    if any(_dtype_key(value) == "array" for value in values):
        return "array"
    widest = str(np.result_type(*[np.asarray(v).dtype for v in values]))
    return widest if widest in codegen.NUMBA_TYPES else "float64"


def _origin_files(user) -> tuple[str, ...]:
    try:
        return (inspect.getsourcefile(user),) if user is not None else ()
    except TypeError:
        return ()


def check_arguments(params: list[str], trees: list, spec: dict) -> None:
    for p, tree in zip(params, trees):
        if tree[0] != "leaf":
            raise S2SError(f"backend='cuda' takes arrays and numbers as arguments; {p} is a "
                           f"{tree[0]} (a pytree)", hint="pass its leaves as separate arguments, or use backend='cpu'")


def module_text(base: str, params: list[str], trees: list, kernel: batching.Kernel, tapes: list[codegen.Tape],
                user_files: tuple[str, ...], locals_: list[codegen.Local] = (), inline: list[str] = (),
                unknown: set[str] = frozenset()) -> str:
    lines, sources = kernel.source.splitlines(), {os.path.basename(p): p for p in user_files if p}
    outs = [f"out_{k}" for k in range(len(kernel.leaf_paths))]
    array_outs = [out for out, ndim in zip(outs, kernel.leaf_ndims) if ndim]
    taken = set(re.findall(r"\w+", kernel.source))
    rows = []
    for out, path in zip(outs, kernel.leaf_paths):
        if out in array_outs:
            row = f"{out}_row"
            while row in taken:
                row += "_"
            rows.append((row, path))
    numbers = [path for out, path in zip(outs, kernel.leaf_paths) if out not in array_outs]
    device = codegen.device_functions(kernel.source, kernel.entry, tapes,
                                      lambda line: failures.origin_above(lines, line, sources), locals_, rows,
                                      numbers, inline, unknown)
    size = next(s for s in (batching.first_batched(p, t) for p, t in zip(params, trees)) if s)
    args = [batching.example_expr(p, t, "{b}") for p, t in zip(params, trees)] + kernel.extra_args
    if rows:
        args.append("{rows}")
    if tapes:
        args.append("{tapes}")
    status = bool(tapes) or bool(locals_)
    if status:
        args.append("tape_status")
    axes = batching.described_axes(params, trees)
    doc = f"Vmap of {kernel.description}, batched over {axes}: one example per thread."
    if array_outs:
        doc += " Array results are written into each thread's rows of the outputs."
    if tapes:
        doc += (" Tapes are (capacity, threads) arrays in global memory, step-major: this thread's column"
                " tape[:, start] is its tape, whichever example it runs.")
    text = codegen.kernel_source(base, params, [], size, outs, f"{kernel.entry}({', '.join(args)})",
                                 kernel.leaf_paths, status, doc, tuple(array_outs), tuple(t.param for t in tapes))
    return codegen.kernel_module(base, kernel.description, axes, kernel.source, device, text)


def _load(source: str, stem: str) -> types.ModuleType:
    from numba.core import config

    if not config.ENABLE_CUDASIM:  # the simulator calls the plain helpers
        overloads.register_cuda()
    module = import_generated(source, stem, "_cuda")
    if config.ENABLE_CUDASIM:  # (but shape tapes as a kernel keeps them: cuda_tapes.simulated_runtime)
        module.runtime = cuda_tapes.simulated_runtime()
    return module


# Numba's signature of runtime.kernel_number where it refused an output's dtype (compile_error)
_KERNEL_NUMBER = re.compile(r"kernel_number\(array\((\w+), \d+d, \w+\), (\w+)\)")


class Launcher:
    """One specialisation of a vmap on the cuda backend: its module, and the call s2s.vmap makes."""

    def __init__(self, base: str, params: list[str], trees: list, kernel: batching.Kernel, spec: dict,
                 example: tuple, user):
        cuda_module()
        check_arguments(params, trees, spec)
        self.base, self.params, self.trees, self.kernel = base, params, trees, kernel
        self.dtypes = spec["leaf_dtypes"]
        self.shapes = [np.shape(leaf) for leaf in pytree.leaves(spec["probe"])]  # per example
        self.user_files = _origin_files(user)
        self.user = user
        self.spec = None
        sources = {os.path.basename(p): p for p in self.user_files}

        def at(line):
            return failures.origin_above(kernel.source.splitlines(), line, sources)

        tried = next((k for k, text in enumerate(kernel.source.splitlines(), 1) if "runtime.try_outcome(" in text), None)
        if tried is not None:  # (its probe runs as Python: frontend/try_statements.py)
            raise S2SError("backend='cuda' cannot run a try whose path the values decide in a kernel", at(tried),
                           hint="backend='cpu' takes it (s2s.jit(..., backend='cpu')); or test the input with an if")
        probed = probe(kernel.source, base + "_probe", kernel.entry, example, kernel.extra_args)

        # A helper that returns an array it made (the reverse mode of a helper that takes an
        # array returns its adjoint) is inlined into its callers, where the array then lives.
        self.inline = sorted({function for _, function in probed.escapes})
        self.tapes = []
        for line, (function, name, kind, capacity) in sorted(codegen.tape_lines(kernel.source).items()):
            size, dtype = probed.tapes.get(line, (1, "float64"))  # not reached on the probe: grown on demand
            if dtype == "array":
                raise S2SError(f"backend='cuda' keeps tapes of numbers; {function} tapes an array ({name})",
                               at(cuda_tapes.origin_line(kernel.source.splitlines(), line, name, kind)),
                               hint="backend='cpu' takes it")
            self.tapes.append(codegen.Tape(function, name, line, max(size, 1), dtype, kind, capacity))
        self.entry_params = cuda_tapes.entry_params(kernel.source, kernel.entry)
        self.unknown = cuda_tapes.unknown_values(self.entry_params, trees, example)
        self.relaunches = 0  # launches run again because an example needed a longer tape
        candidates = codegen.local_lines(kernel.source)
        self.locals, others = [], []
        for line, kinds in sorted(probed.made.items()):
            if line not in candidates:
                others.append(line)
                continue
            function, name = candidates[line]
            if len(kinds) > 1:
                shapes = ", ".join(sorted(str(shape) for shape, _ in kinds))
                raise S2SError(f"backend='cuda' cannot run this statement in a kernel: the array it makes changes "
                               f"shape ({shapes}), and a kernel's arrays have one shape, fixed when it is "
                               "specialised", at(line), hint="make it once, of the largest shape, or use backend='cpu'")
            (shape, dtype), = kinds
            if dtype not in codegen.NUMBA_TYPES:
                raise S2SError(f"backend='cuda' cannot run this statement in a kernel: it makes an array of "
                               f"{dtype}", at(line), hint="backend='cpu' takes it")
            self.locals.append(codegen.Local(function, name, line, tuple(shape), dtype))
        self._build()  # refuses what codegen/cuda.py knows a kernel cannot run
        if others:
            raise S2SError("backend='cuda' cannot run this statement in a kernel: it makes a new array (array "
                           "arithmetic, or a NumPy function's array result), and kernels cannot allocate",
                           at(others[0]), hint="write it as a loop over the elements (an array of a fixed shape is "
                                               "made by a statement of its own: a = np.zeros(3)), or use "
                                               "backend='cpu'")

    def _build(self) -> None:
        self.source = module_text(self.base, self.params, self.trees, self.kernel, self.tapes, self.user_files,
                                  self.locals, self.inline, self.unknown)
        self.module = _load(self.source, self.base + "_cuda")
        self.function = getattr(self.module, f"{self.base}_kernel")
        if self.spec is not None:  # s2s.source shows the module that ran
            self.spec["source"] = self.source

    def compile_error(self, exc: Exception) -> S2SError:
        """numba-cuda's refusal of the kernel, at the user's statement where its message names a
        line of the module; otherwise (an error inside one of numba-cuda's own implementations,
        such as an array allocation, names none) at the user's function."""
        error = failures.translate(exc, self.user_files)
        if error.origin is not None or self.user is None:
            return error
        try:
            lines, first = inspect.getsourcelines(getattr(self.user, "__code__", self.user))
            origin = Origin(inspect.getsourcefile(self.user), first, 1, lines[0].strip())
        except (OSError, TypeError):
            return error
        reason = error.reason.split("statement: ", 1)[-1]  # (the statement is not known)
        # runtime.kernel_number refused to store an example's result in the output array (its dtype,
        # not an allocation). Numba's message names the types in the signature it could not
        # match; the refusal's own text was missing from it when the kernel compiled on an H200.
        stored = _KERNEL_NUMBER.search(str(exc))
        if stored:
            return S2SError(runtime.KERNEL_NUMBER.format(value=stored[2], out=stored[1]), origin,
                            hint="or use backend='cpu'")
        return S2SError(f"numba-cuda cannot compile the kernel code of {self.user.__name__}: {reason} "
                        "(in a kernel this is most often array arithmetic or a NumPy call that makes an array: "
                        "kernels cannot allocate)", origin,
                        hint="keep the per-example code to numbers, loops and indexing, or use backend='cpu'")

    def device_arguments(self, args: tuple) -> tuple:
        cuda = cuda_module()
        return tuple(a if is_device_array(a) or np.ndim(a) == 0 else cuda.to_device(np.ascontiguousarray(a))
                     for a in args)

    def __call__(self, *args):
        return self.launch(args, getattr(_here, "stream", 0))  # (a pmap shard's stream: on_device)

    def launch(self, args: tuple, stream=0) -> tuple:
        """Run the kernel on args (NumPy arrays, numbers, device arrays) on a numba-cuda stream
        (0: the default stream). NumPy inputs are copied in on that stream, and the outputs
        copied back (with a stream, asynchronously: call stream.synchronize() before reading
        them); with a device array among the inputs the outputs stay on the device."""
        cuda = cuda_module()
        on_device = any(is_device_array(a) for a in args)
        n = next(np.shape(a)[t[1]] if not is_device_array(a) else a.shape[t[1]]
                 for a, t in zip(args, self.trees) if t[1] is not None)
        device_args = tuple(a if is_device_array(a) or np.ndim(a) == 0
                            else cuda.to_device(np.ascontiguousarray(a), stream=stream) for a in args)
        outs = [cuda.device_array((n, *shape), dtype=np.dtype(d), stream=stream)
                for d, shape in zip(self.dtypes, self.shapes)]
        slots = len(self.tapes) + len(self.locals)
        constants = vars(self.module)
        while True:
            rows = cuda_tapes.capacities(self.tapes, self.entry_params, args, self.trees, constants)
            too_long = cuda_tapes.longest(self.tapes, rows, THREADS_PER_BLOCK)
            if too_long is not None:
                tape = self.tapes[too_long]
                raise S2SError(f"backend='cuda': an example needs {rows[too_long]} values on a tape ({tape.name}); the "
                               f"tapes of one block of {THREADS_PER_BLOCK} threads exceed S2S_CUDA_TAPE_MEMORY="
                               f"{cuda_tapes.TAPE_MEMORY} bytes",
                               self.origin(cuda_tapes.origin_line(self.kernel.source.splitlines(), tape.line,
                                                                  tape.name, tape.kind)),
                               hint="raise S2S_CUDA_TAPE_MEMORY (bytes, read at import), or use backend='cpu'")
            blocks = cuda_tapes.blocks(n, rows, [np.dtype(t.dtype).itemsize for t in self.tapes], THREADS_PER_BLOCK,
                                       MAX_BLOCKS)
            tapes = cuda_tapes.allocate(cuda, self.tapes, rows, blocks * THREADS_PER_BLOCK, stream)
            status = cuda.to_device(np.zeros(slots, dtype=np.int64), stream=stream) if slots else None
            self.blocks = blocks  # (the last launch's: tests/test_cuda_tapes.py)
            kernel = self.function[blocks, THREADS_PER_BLOCK, stream]
            try:
                with _simulated_launch():
                    kernel(*device_args, *outs, *tapes, *([status] if slots else []))
            except Exception as exc:  # a numba-cuda compilation error: name the user's statement
                from numba.core.errors import NumbaError

                if isinstance(exc, NumbaError):
                    raise self.compile_error(exc) from exc
                raise
            needed = status.copy_to_host(stream=stream) if slots else []
            if slots and stream:
                stream.synchronize()
            for local, flag in zip(self.locals, needed[len(self.tapes):]):
                if flag:
                    raise S2SError("backend='cuda': an example makes an array of another shape than the first "
                                   f"example's {local.shape}, the shape of the kernel's local array",
                                   self.origin(local.line), hint="make arrays of one shape for every example, or "
                                                                 "use backend='cpu'")
            if not cuda_tapes.grown(self.tapes, rows, needed[:len(self.tapes)]):
                break
            self.relaunches += 1  # an example needs a longer tape: run the batch again with room
        axes = self.spec["out_axes"] if self.spec else [0] * len(outs)
        if on_device:
            if any(axis not in (0, None) for axis in axes):
                raise S2SError("backend='cuda' keeps outputs on the device with the batch axis first",
                               hint="use out_axes=0 (and np.moveaxis on the result), or pass NumPy inputs")
            return tuple(outs)
        hosted = [o.copy_to_host(stream=stream) for o in outs]
        return tuple(np.moveaxis(h, 0, axis) if axis else h for h, axis in zip(hosted, axes))

    def origin(self, line: int):
        sources = {os.path.basename(p): p for p in self.user_files}
        return failures.origin_above(self.kernel.source.splitlines(), line, sources)


def compile_ptx(jitted, *args, cc: tuple[int, int] = (9, 0)) -> str:
    """The PTX of the kernel s2s.jit(s2s.vmap(f), backend="cuda") runs for these arguments (cuda_ptx.py)."""
    from .cuda_ptx import compile_ptx as compile_

    return compile_(jitted, *args, cc=cc)


def specialise(base: str, params: list[str], trees: list, kernel: batching.Kernel, spec: dict, example: tuple,
               user) -> dict:
    """The entries of a vmap specialisation on the cuda backend (s2s.vmap's spec)."""
    launcher = Launcher(base, params, trees, kernel, spec, example, user)
    launcher.spec = spec
    return {"source": launcher.source, "driver": f"{base}_kernel", "description": kernel.description,
            "call": launcher, "launcher": launcher}


# ---- streams ---------------------------------------------------------------------------------

def launch(jitted, args: tuple, stream=0) -> Any:
    """Run s2s.jit(s2s.vmap(f), backend="cuda") on args on a numba-cuda stream, without waiting:
    a pmap over one GPU maps shards to streams this way, so that the copies of one shard overlap
    the kernel of another (pass pinned host arrays, numba.cuda.pinned_array, for the copies to be
    asynchronous). NumPy inputs are copied in on the stream; the result (the vmap's output
    structure) holds NumPy arrays that are filled once stream.synchronize() returns, or device
    arrays when an input was one. out_axes=None outputs are not checked here: use the vmap.
    Numba's simulator runs streams synchronously.

    >>> # stream = numba.cuda.stream(); out = launch(greeks, (1.0, 0.2, z), stream); stream.synchronize()
    """
    spec = jitted._specialise(args, jitted._trees(args), "cuda")
    leaves = spec["launcher"].launch(tuple(args), stream)
    return pytree.unflatten(spec["structure"], list(leaves))


# ---- a deterministic total over the examples -----------------------------------------------------

CHUNK = 256  # examples summed in order by one thread: the tree's shape depends on n alone


def _sum_kernel():
    cuda_module()
    from . import cuda_reduce

    return cuda_reduce.chunk_sums


def sum_examples(x, mean: bool = False, stream=0):
    """The sum (or mean) over axis 0 of a kernel's per-example output, on the GPU and
    deterministic: each thread adds CHUNK consecutive examples in order, then the partial sums
    are added the same way, until one row is left. The order of the additions depends on the
    number of examples alone (not on the launch or on timing: no atomics), so the result is
    bit-identical from run to run. x: a device array (the result stays on the device) or a NumPy
    array (copied in, and the result back)."""
    cuda = cuda_module()
    on_device = is_device_array(x)
    data = x if on_device else cuda.to_device(np.ascontiguousarray(x), stream=stream)
    n, shape = data.shape[0], data.shape[1:]
    if n == 0:
        raise S2SError("sum_examples of no examples", hint="pass at least one example")
    width = int(np.prod(shape, dtype=np.int64))
    current = data.reshape(n, width)
    while current.shape[0] > 1:
        chunks = -(-current.shape[0] // CHUNK)
        out = cuda.device_array((chunks, width), dtype=current.dtype, stream=stream)
        blocks = max(1, min(MAX_BLOCKS, -(-chunks * width // THREADS_PER_BLOCK)))
        _sum_kernel()[blocks, THREADS_PER_BLOCK, stream](current, out, CHUNK)
        current = out
    total = current.reshape(*shape) if shape else current.reshape(1)
    if mean:  # (one division per element, on the host's side of the call: n is a number)
        host = total.copy_to_host(stream=stream) / current.dtype.type(n)
        host = host.astype(current.dtype)
        return cuda.to_device(host, stream=stream) if on_device else (host if shape else host[0])
    if on_device:
        return total
    host = total.copy_to_host(stream=stream)
    return host if shape else host[0]
