"""Tapes: values and shapes a reverse sweep reads back, in the order it needs them."""

from __future__ import annotations

import numpy as np

from .values import tree_shape



# A value that the reverse sweep needs after the primal overwrites it goes on a tape. In
# loops whose trip counts are known on entry (range loops) the tape is made at the first
# push with room for every iteration, and the generated code keeps a count of the values
# on it: `tape[count] = x; count += 1`, then `count -= 1; x = tape[count]` in the reverse
# sweep. Here it is a list; under Numba an array of numbers (runtime/overloads/).


def new_tape(x, capacity):
    """A tape with room for `capacity` values like x (a slot is written before it is read)."""
    return [x] * capacity


# ---- shape tapes --------------------------------------------------------------------
# The reverse sweep needs the shape of some overwritten values (to unbroadcast adjoints).
# Pushing a shape returns it, and popping is handed the variable that received the push:
# under Numba that variable's type (its ndim) says how much was pushed, so the shapes of
# scalars cost nothing (runtime/overloads/). Here shapes are plain tuples on a list.


def shape_tape():
    return []


def push_shape(tape, x):
    """Push x's shape and return it."""
    shape = tree_shape(x)
    tape.append(shape)
    return shape


def pop_shape(tape, like):
    """The last shape pushed; `like` holds a shape pushed on the same tape."""
    return tape.pop()


def top_shape(tape, like):
    """The last shape pushed, left on the tape; `like` (a shape popped from it) where it is
    empty. A variable first bound in a loop has its shape taped after each binding: once the
    reverse sweep has popped this pass's, the top is the one its earlier binding had."""
    return tape[-1] if tape else like


# ---- checkpointing ------------------------------------------------------------------
# A range loop whose tape would exceed the tape budget runs checkpointed (the reverse
# transform's checkpointing.py writes it): the forward sweep runs the loop untaped, keeping a
# snapshot of its carried values every `stride` trips; the reverse sweep, from the last stretch
# of trips to the first, restores a snapshot, reruns that stretch taped and reverses it. Two
# levels: the tapes hold one stretch, the snapshots one value per stretch, and the loop's
# primal runs twice in all.


def snapshot_bytes(x):
    """The bytes one snapshot of x takes: an array's nbytes, a number's 8; -1 for a value
    checkpointing does not snapshot (a list, a tuple, a dict), whose loop stays taped."""
    if isinstance(x, np.ndarray):
        return int(x.nbytes)
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        return int(np.asarray(x).itemsize)
    return -1


def checkpoint_stride(trips, pushes, budget, *sizes):
    """How many trips one stretch of a checkpointed loop runs; 0 where the whole loop is taped.

    trips: the loop's trip count; pushes: the values its tapes take per trip; budget: the bytes
    its tape may take (s2s.config's s2s_tape_budget, or grad's tape_budget); sizes: the bytes of
    a snapshot of each carried value (snapshot_bytes). A trip is taken to tape `pushes` values
    as large as the largest carried value. The stride balances the tape of one stretch against
    the snapshots (about sqrt(trips) of each where the tape per trip is the carried state), and
    is cut to what the budget holds if it must."""
    state = 0
    largest = 0
    for size in sizes:
        if size < 0:
            return 0
        state += size
        largest = max(largest, size)
    per_trip = pushes * max(largest, 1)
    if trips <= 1 or trips * per_trip <= budget:
        return 0
    stride = int(np.sqrt(trips * max(state, 1) / per_trip))
    if stride * per_trip > budget:
        stride = budget // per_trip
    return min(max(stride, 1), trips)
