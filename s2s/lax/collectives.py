"""The collectives of s2s.pmap (psum, pmean, pmax, pmin, all_gather, axis_index), exported as s2s.lax.*.

s2s.pmap (doors/pmap.py) runs each shard on its own thread and binds, on that thread, a Frame
per enclosing pmap: its axis name, the shard's index and the axis size. A collective over an
axis meets the other shards of that axis at a Rendezvous (a barrier); the last to arrive
combines every shard's value in shard order (not arrival order), so the result is the same
bits on every shard and on every run. Nested pmaps (distinct axis names) share one Root, where
the rendezvous of each group of shards is found: a collective over 'i' inside an inner pmap
over 'j' meets the shards with the same 'j' index and every 'i' index.

A shard that fails aborts the Root: every barrier breaks, the shards waiting there stop with
Aborted, and pmap reports the first real error. A shard that returns leaves every group it
belongs to: a collective that waits for it, or that it never called, is an S2SError in the
others (JAX traces one program for all shards; here each shard runs its own control flow).
"""

from __future__ import annotations

import functools
import sys
import threading
from dataclasses import dataclass
from typing import Any, Hashable

import numpy as np

from ..errors import Origin, S2SError
from ..tree_util import pytree

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]


class Aborted(Exception):
    """Raised in a shard whose rendezvous broke because another shard failed (pmap reports
    that shard's error, not this one)."""


class Root:
    """Everything one outermost pmap call shares among its shards and their nested pmaps."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rendezvous: dict = {}
        self.finished: list[dict] = []  # the frames ({name: index}) of each shard that returned
        self.failed = False

    def meeting(self, key: tuple, axes: tuple) -> "Rendezvous":
        with self.lock:
            if self.failed:
                raise Aborted()
            found = self.rendezvous.get(key)
            if found is None:
                found = self.rendezvous[key] = Rendezvous(key, axes)
                for frames_of_shard in self.finished:  # (a shard that returned before it was made)
                    found.leave(frames_of_shard)
        if found.axes != axes:  # nested pmaps of different sizes under different outer shards
            self.abort()
            raise S2SError(f"a collective over {key[0]!r} meets axes of sizes {axes} here but {found.axes} elsewhere",
                           hint="give every nested s2s.pmap over an axis the same size on every outer shard")
        return found

    def finish(self, frames_of_shard: dict) -> None:
        """A shard returned: the others must not wait for it at a collective it never calls."""
        with self.lock:
            self.finished.append(frames_of_shard)
            meetings = list(self.rendezvous.values())
        for meeting in meetings:
            meeting.leave(frames_of_shard)

    def abort(self) -> None:
        with self.lock:
            self.failed = True
            meetings = list(self.rendezvous.values())
        for meeting in meetings:
            meeting.barrier.abort()


@dataclass(frozen=True)
class Frame:
    """One enclosing pmap, as a shard thread sees it."""

    name: Hashable
    index: int
    size: int
    root: Root


_bound = threading.local()


def frames() -> tuple[Frame, ...]:
    """The pmaps around the current thread, outermost first."""
    return getattr(_bound, "frames", ())


def bind(frame_tuple: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """Set this thread's frames; returns the previous ones, to restore."""
    previous = frames()
    _bound.frames = frame_tuple
    return previous


class Rendezvous:
    """A barrier for one group of shards, and two rounds of slots: a shard can be at most one
    collective ahead of the slowest (it cannot pass the next barrier alone), so round k and
    round k+1 never share slots. key: (the axes reduced over, the (name, index) of the others);
    axes: ((name, size), ...) of the axes reduced over, whose indices give the position."""

    def __init__(self, key: tuple, axes: tuple):
        self.key, self.axes = key, axes
        self.size = int(np.prod([size for _, size in axes]))
        self.slots = [[None] * self.size, [None] * self.size]
        self.results: list = [None, None]
        self.rounds = [0] * self.size  # per position: collectives done
        self.round = 0  # collectives combined
        self.lock = threading.Lock()
        self.arrived = 0  # shards waiting in the current round
        self.left: set[int] = set()  # positions whose shard returned
        self.error: S2SError | None = None
        self.barrier = threading.Barrier(self.size, action=self._combine)

    def position(self, frames_of_shard: dict) -> int | None:
        """The position of the shard with these frames ({name: index}), if it is one of the group."""
        names = {name for name, _ in self.axes} | {name for name, _ in self.key[1]}
        if set(frames_of_shard) != names or any(frames_of_shard[n] != i for n, i in self.key[1]):
            return None
        index = 0
        for name, size in self.axes:
            index = index * size + frames_of_shard[name]
        return index

    def leave(self, frames_of_shard: dict) -> None:
        position = self.position(frames_of_shard)
        if position is None:
            return
        with self.lock:
            self.left.add(position)
            if self.arrived:  # others wait for it in this round: they would wait forever
                self._fail(position)

    def _fail(self, position: int) -> None:
        waiting = next((slot[0] for slot in self.slots[self.round % 2] if slot is not None), None)
        what = f"s2s.lax.{waiting[0]}" if waiting else "a collective"
        self.error = S2SError(f"the shard at position {position} of the pmap axes {self.key[0]!r} returned without "
                              f"calling {what}, which the other shards wait in",
                              hint="call the same collectives, in the same order, on every shard")
        self.barrier.abort()

    def exchange(self, position: int, request: tuple, value: Any) -> Any:
        with self.lock:
            if self.left and self.error is None:
                self.slots[self.rounds[position] % 2][position] = (request, value)
                self._fail(min(self.left))
            if self.error is not None:
                raise self.error
            self.arrived += 1
            k = self.rounds[position] % 2
            self.rounds[position] += 1
            self.slots[k][position] = (request, value)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            if self.error is not None:
                raise self.error from None
            raise Aborted() from None
        result = self.results[k]
        if isinstance(result, S2SError):
            raise result
        combined, structure = result
        if position:  # each shard its own arrays: a shard may write to its result
            combined = [np.array(leaf) if isinstance(leaf, np.ndarray) else leaf for leaf in combined]
        return pytree.unflatten(structure, combined)

    def _combine(self) -> None:
        """Run once per round by the last shard to arrive, while the others wait."""
        with self.lock:
            self.arrived = 0
        k = self.round % 2
        self.round += 1
        slots, self.slots[k] = self.slots[k], [None] * self.size
        self.results[k] = combine(slots, self.size)


def combine(slots: list, size: int) -> tuple | S2SError:
    """One round of a collective: every shard's (request, value), in shard order, combined in
    that order (not arrival order), so that every shard that combines them gets the same bits.
    Returns (combined leaves, structure), or the S2SError every shard raises."""
    requests = [request for request, _ in slots]
    if any(r != requests[0] for r in requests):
        first = next(p for p, r in enumerate(requests) if r != requests[0])
        return S2SError(
            f"the shards of a pmap called different collectives: position 0 {_describe(requests[0])}, "
            f"position {first} {_describe(requests[first])}",
            hint="call the same collectives, in the same order and on values of the same shapes, on every shard")
    op, options, structure = requests[0][0], requests[0][1], requests[0][2]
    columns = zip(*(pytree.flatten(value)[0] for _, value in slots))
    try:
        combined = [_COMBINE[op](list(column), size, options) for column in columns]
    except Exception as exc:  # noqa: BLE001 - every shard raises it, not only this one
        return S2SError(f"s2s.lax.{op}: {exc}")
    return combined, structure


def _describe(request: tuple) -> str:
    op, options, _, shapes = request
    return f"{op}{dict(options) if options else ''} of shapes {list(shapes)}"


def _total(values: list, size: int, options: tuple) -> Any:
    total = values[0]
    for value in values[1:]:  # in shard order: the same bits every run
        total = total + value
    return total


def _mean(values: list, size: int, options: tuple) -> Any:
    return np.true_divide(_total(values, size, options), size)


def _extreme(pick):
    def combine(values: list, size: int, options: tuple) -> Any:
        return functools.reduce(pick, values)
    return combine


def _gather(values: list, size: int, options: tuple) -> Any:
    axis, tiled = dict(options)["axis"], dict(options)["tiled"]
    arrays = [np.asarray(v) for v in values]
    if tiled:
        if arrays[0].ndim == 0:
            raise ValueError("all_gather(..., tiled=True) concatenates arrays; the value is a scalar")
        return np.concatenate(arrays, axis=axis)
    return np.stack(arrays, axis=axis)


_COMBINE = {"psum": _total, "pmean": _mean, "pmax": _extreme(np.maximum), "pmin": _extreme(np.minimum),
            "all_gather": _gather}


def _names(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _frames_of(op: str, axis_name: Any) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    """(the frames named, in the order named; the frames of the thread). An axis that no
    enclosing pmap binds is an S2SError (JAX: NameError 'unbound axis name')."""
    bound = frames()
    by_name = {f.name: f for f in bound}
    names = _names(axis_name)
    if not names or len(set(names)) != len(names):
        raise S2SError(f"s2s.lax.{op}: axis names {axis_name!r} must be one name or distinct names")
    for name in names:
        if name is None:
            raise S2SError(f"s2s.lax.{op}: the axis name is None",
                           hint="name the pmap's axis, s2s.pmap(f, axis_name='i'), and pass that name")
        if name not in by_name:
            where = (f"the enclosing pmaps bind {[f.name for f in bound]}" if bound
                     else "it is called outside any s2s.pmap shard")
            raise S2SError(f"s2s.lax.{op}: unbound axis name {name!r} ({where})", _caller(),
                           hint=f"call it inside s2s.pmap(f, axis_name={name!r}), on the shard's own thread; in a "
                                "function that s2s transforms (vmap, grad, jit) it cannot run: call it in the "
                                "pmapped function on the transform's result, e.g. "
                                "g = s2s.lax.pmean(s2s.grad(loss)(p, shard), 'i')")
    return tuple(by_name[n] for n in names), bound


def _caller() -> Origin | None:
    """Where the user called the collective: the first frame outside this module."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return None if frame is None else Origin.of_frame(frame)


def _position(named: tuple[Frame, ...]) -> tuple[int, int]:
    """(index, size) over the named axes, row-major in the order named (JAX's for a tuple)."""
    index, size = 0, 1
    for frame in named:
        index, size = index * frame.size + frame.index, size * frame.size
    return index, size


def _collective(op: str, x: Any, axis_name: Any, options: tuple = ()) -> Any:
    named, bound = _frames_of(op, axis_name)
    position, size = _position(named)
    leaves, structure = pytree.flatten(x)
    shapes = tuple((np.shape(leaf), np.asarray(leaf).dtype.str) for leaf in leaves)
    chosen = {f.name for f in named}
    key = (tuple(f.name for f in named), tuple((f.name, f.index) for f in bound if f.name not in chosen))
    meeting = bound[0].root.meeting(key, tuple((f.name, f.size) for f in named))
    return meeting.exchange(position, (op, options, structure, shapes), x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of x (a pytree) over the shards of the pmap axis axis_name (a name or a tuple
    of nested pmaps' names), added in shard order: every shard gets the same bits, every run.

    psum(1, 'i') is the axis size, as in JAX. Inside s2s.pmap only:

    >>> import numpy as np, s2s
    >>> s2s.pmap(lambda x: s2s.lax.psum(x, 'i'), 'i', devices=s2s.devices()[:1])(np.array([3.0]))
    array([3.])
    """
    _no_groups("psum", axis_index_groups)
    return _collective("psum", x, axis_name)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """psum(x, axis_name) divided by the number of shards (true division, as NumPy: the mean of
    integers is a float)."""
    _no_groups("pmean", axis_index_groups)
    return _collective("pmean", x, axis_name)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The elementwise maximum of x over the shards (np.maximum: a NaN wins, as in JAX)."""
    _no_groups("pmax", axis_index_groups)
    return _collective("pmax", x, axis_name)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The elementwise minimum of x over the shards (np.minimum: a NaN wins, as in JAX)."""
    _no_groups("pmin", axis_index_groups)
    return _collective("pmin", x, axis_name)


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False, axis_index_groups: Any = None) -> Any:
    """Every shard's x (a pytree), stacked in shard order along a new axis `axis` of the
    result, or concatenated along the existing axis `axis` with tiled=True, as in JAX."""
    _no_groups("all_gather", axis_index_groups)
    return _collective("all_gather", x, axis_name, (("axis", int(axis)), ("tiled", bool(tiled))))


def axis_index(axis_name: Any) -> np.int32:
    """This shard's index along the pmap axis axis_name (int32, as in JAX); for a tuple of
    nested axes, the row-major index over them in the order named."""
    named, _ = _frames_of("axis_index", axis_name)
    return np.int32(_position(named)[0])


def _no_groups(op: str, groups: Any) -> None:
    if groups is not None:
        raise S2SError(f"s2s.lax.{op}: axis_index_groups is not supported",
                       hint="reduce over the whole axis, or split the work with a nested s2s.pmap and a second axis name")


COLLECTIVES = (psum, pmean, pmax, pmin, all_gather, axis_index)
