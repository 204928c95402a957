"""Overloads of the value and shape tapes."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ... import runtime as rt
from .common import _compile, _scalar


# ---- value tapes --------------------------------------------------------------------
# Numbers go on an array of their own dtype: a store and a load per push and pop. Other
# values (arrays, whose shapes may change from one iteration to the next, and tuples) go
# on a list of references, as on the python backend.


@overload(rt.new_tape)
def _new_tape(x, capacity):
    if _scalar(x):
        dtype = types.unliteral(x)

        def number_tape(x, capacity):
            return np.empty(capacity, dtype)
        return number_tape

    def reference_tape(x, capacity):
        return [x] * capacity
    return reference_tape


# ---- shape tapes --------------------------------------------------------------------
# A shape tape is a flat list of int64 dimensions: a value of ndim k pushes k ints, a
# scalar pushes nothing. pop_shape learns k from the type of `like` (a shape pushed on
# the same tape: every variable that the reverse transform passes there receives only
# pushes and pops of that one tape, so its type is the pushed values' shape type).


@overload(rt.shape_tape)
def _shape_tape():
    def impl():
        tape = [0]
        tape.pop()
        return tape
    return impl


@overload(rt.push_shape)
def _push_shape(tape, x):
    if not isinstance(x, types.Array):
        return lambda tape, x: ()

    def impl(tape, x):
        shape = x.shape
        for dim in shape:
            tape.append(dim)
        return shape
    return impl


@overload(rt.pop_shape)
def _pop_shape(tape, like):
    ndim = len(like) if isinstance(like, types.BaseTuple) else 0
    if ndim == 0:
        return lambda tape, like: ()
    pops = "".join(f"    d{k} = tape.pop()\n" for k in reversed(range(ndim)))
    dims = ", ".join(f"d{k}" for k in range(ndim)) + ("," if ndim == 1 else "")
    return _compile(f"def impl(tape, like):\n{pops}    return ({dims})\n", "impl")
