"""Overloads of the value and shape tapes."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.datamodel.models import ArrayModel
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload, register_model

from ... import runtime as rt
from .common import _compile, _scalar
from .values import _row_of_numbers


# ---- value tapes --------------------------------------------------------------------
# Numbers go on an array of their own dtype: a store and a load per push and pop. Other
# values (arrays, whose shapes may change from one iteration to the next, and tuples) go
# on a list of references, as on the python backend.
#
# A number tape is made at the first push, from the value pushed; but Numba types a loop's
# carried number by refining it: in `s = x[0]` (float32), then `s = s * c` (c a float64)
# in the loop, Numba first types the s that the loop pushes as float32 and then, having
# seen the product, as float64, and it types the tape again at each step. Arrays of two
# dtypes do not unify, so a tape typed as a plain array failed ("Cannot unify
# array(float32, 1d, C) and array(float64, 1d, C) for 's_tape'"). A NumberTape unifies
# with a tape of another number type into a tape of their common type (float32 and float64:
# float64), the type NumPy gives the pushed values over all iterations; so every push is
# stored without rounding, whichever push made the tape.


class NumberTape(types.Array):
    """The tape of a number: a 1-d C-contiguous array that unifies by its dtype."""

    def __init__(self, dtype):
        super().__init__(dtype, 1, "C", name=f"number_tape({dtype})")

    def unify(self, typingctx, other):
        if isinstance(other, NumberTape):
            dtype = typingctx.unify_pairs(self.dtype, other.dtype)
            if dtype is not None:
                return NumberTape(dtype)
        return super().unify(typingctx, other)


register_model(NumberTape)(ArrayModel)


@intrinsic
def _as_number_tape(typingctx, array):
    """The array itself, typed as a NumberTape (the same data, the same layout in memory)."""
    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])
    return NumberTape(array.dtype)(array), codegen


@overload(rt.new_tape)
def _new_tape(x, capacity):
    if _scalar(x):
        dtype = types.unliteral(x)

        def number_tape(x, capacity):
            return _as_number_tape(np.empty(capacity, dtype))
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
    if isinstance(x, types.List) and _scalar(x.dtype):
        # A list of numbers: the shape of its adjoint, an array of its length (zeros_like), which
        # zeros_shaped makes again (a list made anew in a loop, whose name the reverse sweep may
        # find bound to another pass's list: reverse/sweep.py, materialize)
        def numbers(tape, x):
            tape.append(len(x))
            return (len(x),)
        return numbers
    if isinstance(x, types.List) and _row_of_numbers(x.dtype):
        # A list of lists or tuples of numbers: its adjoint's shape, (length, the rows' length),
        # which rows of different lengths have not (an adjoint row would broadcast into another)
        def rows(tape, x):
            n = len(x[0]) if len(x) > 0 else 0
            for k in range(len(x)):
                if len(x[k]) != n:
                    raise ValueError("s2s: under s2s.jit, the adjoint of a list of lists of different lengths "
                                     "has no compiled form; backend='python' takes it")
            tape.append(len(x))
            tape.append(n)
            return (len(x), n)
        return rows
    if isinstance(x, types.List) and isinstance(x.dtype, types.Array):
        # A list of arrays of one shape: its adjoint's, the items' shape after the length
        # (zeros_like's, whose check of one shape runs where the adjoint is made)
        ndim = x.dtype.ndim
        pushes = "".join(f"        tape.append(x[0].shape[{k}])\n" for k in range(ndim))
        zeros = "".join("        tape.append(0)\n" for _ in range(ndim))
        dims = ", ".join(["len(x)"] + [f"tape[len(tape) - {ndim - k}]" for k in range(ndim)])
        return _compile(f"def impl(tape, x):\n    tape.append(len(x))\n    if len(x) > 0:\n{pushes}    else:\n"
                        f"{zeros}    return ({dims})\n", "impl")
    if _tree_of_arrays(x):
        # A tuple of arrays and numbers (or of such tuples), such as a layer (W, b) read at an
        # index known at run time, or a dict's row {"z": z[i], "pair": (a[i], b[i])}: the shape
        # of each array, one after the other, returned in the tuple's structure
        lines: list[str] = []
        shapes = _pushed_shapes(x, "x", lines)
        return _compile("def impl(tape, x):\n" + "".join(lines) + f"    return {shapes}\n", "impl")
    if not isinstance(x, types.Array):
        return lambda tape, x: ()

    def impl(tape, x):
        shape = x.shape
        for dim in shape:
            tape.append(dim)
        return shape
    return impl


def _tree_of_arrays(x) -> bool:
    """A tuple whose items are arrays, numbers or such tuples, with an array among them."""
    def made_of_arrays(t) -> bool:
        if isinstance(t, types.Array) or _scalar(t):
            return True
        return isinstance(t, types.BaseTuple) and all(made_of_arrays(item) for item in t.types)

    def holds_an_array(t) -> bool:
        return isinstance(t, types.Array) or (
            isinstance(t, types.BaseTuple) and any(holds_an_array(item) for item in t.types))
    return isinstance(x, types.BaseTuple) and made_of_arrays(x) and holds_an_array(x)


def _pushed_shapes(t, expr: str, lines: list) -> str:
    """The text of push_shape's result for a value of type t (at expr), appending its pushes."""
    if isinstance(t, types.Array):
        lines += [f"    tape.append({expr}.shape[{d}])\n" for d in range(t.ndim)]
        return f"{expr}.shape"
    if isinstance(t, types.BaseTuple):
        return "(" + "".join(_pushed_shapes(item, f"{expr}[{k}]", lines) + ", " for k, item in enumerate(t.types)) + ")"
    return "()"


def _layout_of_a_tuple(like):
    """Where like is the shape push_shape gave a tuple of arrays: its layout, a list per tuple
    holding each array's ndim (0 for a number) or a nested tuple's layout; else None."""
    if not (isinstance(like, types.BaseTuple) and len(like) > 0 and all(isinstance(t, types.BaseTuple) for t in like.types)
            and any(len(t) > 0 for t in like.types)):
        return None

    def layout(t):  # (an array's shape holds integers; a tuple's, shapes)
        if all(isinstance(item, types.Integer) for item in t.types):
            return len(t)
        return [layout(item) for item in t.types]
    return [layout(t) for t in like.types]


def _dims(layout) -> int:
    return layout if isinstance(layout, int) else sum(_dims(item) for item in layout)


def _layout_text(layout, dims) -> str:
    """The shapes of a tuple's arrays in layout's structure, their dimensions taken from the
    iterator dims in push order."""
    if isinstance(layout, int):
        names = [next(dims) for _ in range(layout)]
        return f"({', '.join(names)},)" if names else "()"
    return "(" + "".join(_layout_text(item, dims) + ", " for item in layout) + ")"


@overload(rt.pop_shape)
def _pop_shape(tape, like):
    layout = _layout_of_a_tuple(like)
    if layout is not None:
        total = _dims(layout)
        pops = "".join(f"    d{k} = tape.pop()\n" for k in reversed(range(total)))
        shapes = _layout_text(layout, iter(f"d{k}" for k in range(total)))
        return _compile(f"def impl(tape, like):\n{pops}    return {shapes}\n", "impl")
    ndim = len(like) if isinstance(like, types.BaseTuple) else 0
    if ndim == 0:
        return lambda tape, like: ()
    pops = "".join(f"    d{k} = tape.pop()\n" for k in reversed(range(ndim)))
    dims = ", ".join(f"d{k}" for k in range(ndim)) + ("," if ndim == 1 else "")
    return _compile(f"def impl(tape, like):\n{pops}    return ({dims})\n", "impl")


@overload(rt.top_shape)
def _top_shape(tape, like):
    layout = _layout_of_a_tuple(like)
    if layout is not None:
        total = _dims(layout)
        shapes = _layout_text(layout, iter(f"tape[n - {total - k}]" for k in range(total)))
        return _compile(f"def impl(tape, like):\n    n = len(tape)\n    if n < {total}:\n        return like\n"
                        f"    return {shapes}\n", "impl")
    ndim = len(like) if isinstance(like, types.BaseTuple) else 0
    if ndim == 0:
        return lambda tape, like: ()
    dims = ", ".join(f"tape[n - {ndim - k}]" for k in range(ndim)) + ("," if ndim == 1 else "")
    return _compile(f"def impl(tape, like):\n    n = len(tape)\n    if n < {ndim}:\n        return like\n"
                    f"    return ({dims})\n", "impl")


# ---- checkpointing ------------------------------------------------------------------


@overload(rt.snapshot_bytes)
def _snapshot_bytes(x):
    if isinstance(x, types.Array):
        return lambda x: x.nbytes
    if _scalar(x):
        size = np.dtype(str(types.unliteral(x))).itemsize if isinstance(types.unliteral(x), types.Number) else 1
        return lambda x: size
    return lambda x: -1  # (a list, a tuple: its loop stays taped)


@overload(rt.checkpoint_stride)
def _checkpoint_stride(trips, pushes, budget, *sizes):
    return rt.checkpoint_stride  # (plain Python over numbers, which Numba compiles as it is)
