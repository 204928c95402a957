"""s2s.pmap over the workers of a Dask cluster: s2s.dask_devices(client).

Each worker of the cluster is a device; a pmap over them sends shard i to worker i as a Dask
task. What the task carries is the pmapped function: the user's function goes by cloudpickle
(as Dask sends every function), an s2s transform around it by the call that made it
(shipping.py), and the worker generates and compiles the transform itself, once per worker
process for the same function (its own s2s cache and Numba cache make that cheap after the
first time). cloudpickle sends a function defined in a script or a notebook by value, and
s2s reads source: the task keeps the file name of that code (cloudpickle drops it) and carries
the text of its files, which the worker puts in linecache before it unpickles the function, so
that the worker reads the function as the client does. A shard task leaves the worker's pool
of threads (distributed.secede): it may wait at a collective, and a waiting shard must not
hold the place of another call's shard that its own call waits for.

Collectives (s2s.lax.psum, pmean, ..., lax/collectives.py) meet through the scheduler: each shard
posts its value under a name of the call, round and position (a distributed.Variable, with a
distributed.Event that says it is there), reads every other shard's, and combines them all in
shard order, so that every shard gets the same bits, as on threads. A shard that fails sets
the call's abort event; a shard that returns sets its own, so that others waiting for it at a
collective stop with an S2SError instead of waiting forever.
"""

from __future__ import annotations

import collections
import hashlib
import io
import linecache
import pickle
import threading
import traceback
import types
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from ..lax import collectives
from ..tree_util import pytree
from ..errors import S2SError
from .pmap import choose_runner


@dataclass(frozen=True)
class DaskDevice:
    """A worker of a Dask cluster, as a device of s2s.pmap: its shard runs there as a task."""

    id: int
    worker: str  # the worker's address
    client: Any = field(compare=False, hash=False, repr=False)
    platform: str = "cpu"
    device_kind: str = "dask"

    def __repr__(self) -> str:
        return f"DaskDevice(id={self.id}, worker={self.worker!r})"

    def runner(self, fun: Any, backend: str) -> "Shipped":
        """What a pmap over Dask workers runs: fun, sent to the workers with its sources."""
        return Shipped(fun, backend)


def _distributed():
    try:
        import distributed
    except ImportError:
        raise S2SError("s2s.dask_devices needs Dask's distributed package, which is not installed",
                       hint='pip install "s2s[dask]" (or pip install distributed)') from None
    return distributed


def dask_devices(client: Any) -> list[DaskDevice]:
    """The workers of a Dask cluster (a distributed.Client), as devices for s2s.pmap, in the
    order of their addresses: s2s.pmap(f, devices=s2s.dask_devices(client)) runs shard i on
    worker i.

    The workers need s2s (and what the function imports) installed; a function defined in a
    script or a notebook travels with its source, one from an importable module is imported
    there, as Dask does (client.upload_file or an installed package makes it importable).
    """
    distributed = _distributed()
    if not isinstance(client, distributed.Client):
        raise S2SError(f"s2s.dask_devices takes a distributed.Client, got {type(client).__name__}",
                       hint="client = distributed.Client(address); s2s.dask_devices(client)")
    try:
        info = client.scheduler_info(n_workers=-1)  # (every worker: by default newer versions list a few)
    except TypeError:  # (older versions list them all, and have no n_workers)
        info = client.scheduler_info()
    workers = sorted(info["workers"])
    if not workers:
        raise S2SError("s2s.dask_devices: the Dask cluster has no workers",
                       hint="start workers (or wait for them: client.wait_for_workers(n))")
    return [DaskDevice(k, address, client) for k, address in enumerate(workers)]


# ---- what travels: the function and the text of its source files -------------------------

_DYNAMIC = "<dynamic-code>"  # cloudpickle's file name for the code it sends by value


def _dump_keeping_files(fun: Any) -> tuple[bytes, list[str]]:
    """fun by cloudpickle, keeping the file name of the code it sends by value (cloudpickle
    writes <dynamic-code>), and the names of those files: s2s reads a function's source by its
    file name, and the worker must have it before anything unpickled reads it (an s2s
    transform of a lambda, made again in the middle of unpickling, names it by its source)."""
    import cloudpickle  # (a dependency of distributed)

    files: set[str] = set()

    class Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.CodeType) and obj.co_filename != _DYNAMIC:
                files.add(obj.co_filename)
                # (the code as cloudpickle sends it, the code in its constants reduced the same
                # way, then its file name; pickle's memo holds the copy: its id is not reused)
                return _in_file, (obj.replace(co_filename=_DYNAMIC), obj.co_filename)
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    Pickler(buffer).dump(fun)
    return buffer.getvalue(), sorted(files)


def _in_file(code: types.CodeType, filename: str) -> types.CodeType:
    return code.replace(co_filename=filename)


def _program(fun: Any, backend: str) -> bytes:
    """What a shard task carries: fun pickled (by the call that made it, for an s2s transform:
    shipping.py), its backend, and the text of each file of the code that travels by value (a
    script's or a notebook's functions; an importable module's travel by name)."""
    pickled, files = _dump_keeping_files(fun)
    texts = {name: "".join(linecache.getlines(name)) for name in files}
    return pickle.dumps((backend, {name: text for name, text in texts.items() if text}, pickled))


# ---- on the worker ---------------------------------------------------------------------

# The digest of a program sent -> what its shards run, per worker process; the most recently
# used first out, so that a program sent anew on every call (a closure over a changing value)
# does not keep every compiled runner alive.
_RUNNERS: collections.OrderedDict[str, Callable] = collections.OrderedDict()
_RUNNERS_KEPT = 32
_RUNNERS_LOCK = threading.Lock()


def _runner(payload: bytes) -> Callable:
    digest = hashlib.sha256(payload).hexdigest()
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(digest)
        if runner is None:
            backend, texts, pickled = pickle.loads(payload)
            for filename, text in texts.items():  # (mtime None: linecache keeps it as it is)
                linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
            runner = _RUNNERS[digest] = choose_runner(pickle.loads(pickled), backend)[0]
            while len(_RUNNERS) > _RUNNERS_KEPT:
                _RUNNERS.popitem(last=False)
        _RUNNERS.move_to_end(digest)
    return runner


def _returnable(exc: BaseException) -> BaseException:
    """exc, or a RuntimeError that says it, where exc would not reach the client: it must
    pickle here and unpickle there (an exception whose __init__ takes other arguments than
    its args does not)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any failure of either
        text = f"{type(exc).__name__}: {exc}"
        notes = getattr(exc, "__notes__", None)
        return RuntimeError("\n".join([text, *notes]) if notes else text)


def _shard_task(payload: bytes, call: str, axis_name: Any, index: int, size: int, arguments: tuple):
    """A shard, run on a worker: (output, None, names to delete) or (None, error, names)."""
    args, kwargs = arguments
    # Out of the worker's pool of threads: a shard may wait at a collective for a shard that
    # another call's shard, waiting for this call's, holds back on another worker (pmaps from
    # two threads or two clients at once); outside the pool, waiting takes no task's place.
    try:
        _distributed().secede()
    except Exception:  # noqa: BLE001 - not in a worker's task thread: nothing to leave
        pass
    root = _DaskRoot(call)
    previous = collectives.bind((collectives.Frame(axis_name, index, size, root),))
    try:
        out = _runner(payload)(*args, **kwargs)
        root.finish({f.name: f.index for f in collectives.frames()})
        # (pickled here: an output that does not travel is this shard's error, and the names it
        # posted still reach the client, which deletes them)
        return _dump_keeping_files(out)[0], None, root.posted
    except BaseException as exc:  # noqa: BLE001 - sent back whole, with the worker's traceback as a note
        root.abort()
        if not isinstance(exc, collectives.Aborted) and hasattr(exc, "add_note"):  # (Python 3.11)
            exc.add_note(f"(in the pmap shard {index} on a Dask worker)\n" + "".join(traceback.format_exc()))
        return None, _returnable(exc), root.posted
    finally:
        collectives.bind(previous)


def _name(call: str, *parts: Any) -> str:
    """The name on the scheduler of an event or variable of a call."""
    return "s2s-pmap/" + call + "/" + "/".join(map(repr, parts))


class _DaskRoot:
    """collectives.Root for shards in other processes: the rendezvous go through the scheduler.
    Names are those of the call, so that calls never meet; the client deletes them after it."""

    def __init__(self, call: str):
        self.call = call
        # The worker's client, found on the task's thread: the shards of a pmap inside this one
        # run on threads of their own, where distributed.get_client() may find another client.
        self.client = _distributed().get_client()
        self.lock = threading.Lock()
        self.rounds: dict = {}  # (key, position) -> collectives done there
        self.posted: list[tuple[str, bool]] = []  # (name, also a variable?) of the events this shard set

    def name(self, *parts: Any) -> str:
        return _name(self.call, *parts)

    def set(self, name: str, value: Any = None) -> None:
        """Set the event `name`, after the variable `name` where a value is given."""
        distributed = _distributed()
        if value is not None:  # (pickled here: Dask's own encoding of a variable turns lists into tuples)
            distributed.Variable(name, client=self.client).set(pickle.dumps(value, protocol=5))
        distributed.Event(name, client=self.client).set()
        with self.lock:
            self.posted.append((name, value is not None))

    def unset(self, name: str) -> None:
        distributed = _distributed()
        distributed.Event(name, client=self.client).clear()
        distributed.Variable(name, client=self.client).delete()
        with self.lock:
            self.posted.remove((name, True))

    def is_set(self, name: str) -> bool:
        return _distributed().Event(name, client=self.client).is_set()

    def meeting(self, key: tuple, axes: tuple) -> "_Meeting":
        if self.is_set(self.name("abort")):
            raise collectives.Aborted()
        return _Meeting(self, key, axes)

    def finish(self, frames_of_shard: dict) -> None:
        self.set(self.name("left", sorted(frames_of_shard.items(), key=repr)))

    def abort(self) -> None:
        try:
            self.set(self.name("abort"))
        except Exception:  # noqa: BLE001 - the scheduler is gone: nobody is left to tell
            pass


class _Meeting:
    """One group of shards at a collective, as collectives.Rendezvous, through the scheduler."""

    def __init__(self, root: _DaskRoot, key: tuple, axes: tuple):
        self.root, self.key, self.axes = root, key, axes
        self.size = 1
        for _, size in axes:
            self.size *= size

    def frames_at(self, position: int) -> dict:
        indices = {}
        for name, size in reversed(self.axes):
            position, indices[name] = divmod(position, size)
        return {**dict(self.key[1]), **indices}

    def exchange(self, position: int, request: tuple, value: Any) -> Any:
        root = self.root
        with root.lock:
            done = root.rounds.get((self.key, position), 0)
            root.rounds[(self.key, position)] = done + 1
        slot = lambda p: root.name(self.key, done, p)  # noqa: E731
        root.set(slot(position), (request, value))
        slots = [(request, value) if p == position else self._wait(slot(p), p, request) for p in range(self.size)]
        if done:  # every shard has posted this round, so each has read the last: it may go
            root.unset(root.name(self.key, done - 1, position))
        result = collectives.combine(slots, self.size)
        if isinstance(result, S2SError):
            raise result
        combined, structure = result
        return pytree.unflatten(structure, combined)

    def _wait(self, name: str, position: int, request: tuple) -> Any:
        distributed = _distributed()
        ready = distributed.Event(name, client=self.root.client)
        left = self.root.name("left", sorted(self.frames_at(position).items(), key=repr))
        while not ready.wait(timeout=0.5):
            if self.root.is_set(self.root.name("abort")):
                raise collectives.Aborted()
            # (the shard sets its slot before it leaves: where it left, the slot tells whether it
            # posted this round between the wait and this look)
            if self.root.is_set(left) and not ready.is_set():
                raise S2SError(f"the shard at position {position} of the pmap axes {self.key[0]!r} returned "
                               f"without calling s2s.lax.{request[0]}, which the other shards wait in",
                               hint="call the same collectives, in the same order, on every shard")
        return pickle.loads(distributed.Variable(name, client=self.root.client).get())


# ---- on the client -----------------------------------------------------------------------

class Shipped:
    """What Pmapped runs over Dask workers: fun, sent to the workers with its sources."""

    def __init__(self, fun: Any, backend: str):
        # (a transform is generated on the workers, where it runs: what it refuses comes back
        # as the S2SError it raised there, with the user's file and line)
        self.mode = choose_runner(fun, backend)[1]
        self.fun, self.backend = fun, backend

    def run(self, devices: list[DaskDevice], axis_name: Any, sliced: Callable, n: int) -> list:
        distributed = _distributed()
        client = devices[0].client
        if any(d.client is not client for d in devices):
            raise S2SError("pmap: the Dask devices come from different clients",
                           hint="list them once, s2s.dask_devices(client)")
        payload = _program(self.fun, self.backend)
        call = uuid.uuid4().hex
        futures = []
        for i in range(n):
            # (each shard's arguments go straight to its worker, not inside the task through the
            # scheduler, which warns about large tasks and would hold a copy of them)
            [arguments] = client.scatter([sliced(i)], workers=[devices[i].worker], hash=False)
            futures.append(client.submit(_shard_task, payload, call, axis_name, i, n, arguments,
                                         key=f"s2s-pmap-{call}-{i}", workers=[devices[i].worker],
                                         allow_other_workers=False, pure=False))
        try:
            answers = client.gather(futures)
        except BaseException:
            # (a worker that left, a task cancelled, an interrupt: the shards still waiting at a
            # collective stop; what they posted stays on the scheduler)
            try:
                distributed.Event(_name(call, "abort"), client=client).set()
            except Exception:  # noqa: BLE001 - the scheduler is gone: nobody is left to tell
                pass
            raise
        for name, has_value in sorted({entry for _, _, posted in answers for entry in posted}):
            distributed.Event(name, client=client).clear()
            if has_value:
                distributed.Variable(name, client=client).delete()
        errors = [error for _, error, _ in answers if error is not None]
        if errors:
            real = [e for e in errors if not isinstance(e, collectives.Aborted)]
            raise (real or errors)[0]
        return [pickle.loads(out) for out, _, _ in answers]
