"""Tapes: values and shapes a reverse sweep reads back, in the order it needs them."""

from __future__ import annotations

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
