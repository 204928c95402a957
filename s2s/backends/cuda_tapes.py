"""The launcher's side of a kernel's tapes (codegen/cuda_tapes.py writes the kernel's side).

Each tape is one array in global memory of shape (capacity, threads), step-major: thread t
uses column t, and at each step neighbouring threads touch neighbouring addresses. The
capacity of a launch:

- a range loop's tape whose trip count names only the entry's arguments' shapes, numbers that
  are the same for every example and module constants (`range(z.shape[0])`, `range(STEPS)`):
  evaluated from the arguments before launch, exact;
- any other (a trip count of the example's own, `range(k)`; a loop in a helper; a while loop):
  the most the probe's first example or an earlier launch needed. An example that needs more
  records it in tape_status; the launcher reruns the batch with capacity max(needed, twice the
  old), so that any example works, at the cost of a rerun.

Memory: 10^6 examples x 64 steps x float64 is 512 MB per tape. The tapes have a column per
thread, not per example, and the kernel's grid-stride loop lets fewer threads run all the
examples: the launch takes no more threads than keep the tapes under TAPE_MEMORY bytes
(S2S_CUDA_TAPE_MEMORY, 1 GiB by default), which chunks the batch with no second launch. Half a
million threads (1 GiB of four such tapes) still exceeds what an H200 keeps resident at once
(132 SMs x 2048 threads).
"""

from __future__ import annotations

import ast
import os
import sys
import types

import numpy as np

from .. import runtime

TAPE_MEMORY = int(os.environ.get("S2S_CUDA_TAPE_MEMORY", 1 << 30))


def entry_params(source: str, entry: str) -> list[str]:
    """The parameter names of the per-example entry function."""
    function = next(f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name == entry)
    return [a.arg for a in function.args.args]


def unknown_values(names: list[str], trees: list, example: tuple) -> set[str]:
    """The entry's parameters whose values the launcher does not know before launch: arrays
    (their shapes it knows) and numbers of each example's own (mapped). A trip count that reads
    one differs between examples, or would need the data: the overflow protocol sizes its tape."""
    return {name for name, tree, value in zip(names, trees, example) if tree[1] is not None or np.ndim(value)}


def capacities(tapes, names: list[str], args: tuple, trees: list, constants: dict) -> list[int]:
    """Each tape's capacity for a launch on args: the trip count evaluated from the arguments
    where it is known from them (tape.from_shapes), otherwise tape.size."""
    bound = None
    found = []
    for tape in tapes:
        value = None
        if tape.from_shapes:
            if bound is None:
                bound = dict(constants)
                bound["runtime"] = runtime
                for name, arg, tree in zip(names, args, trees):
                    shape = tuple(np.shape(arg)) if not hasattr(arg, "copy_to_host") else tuple(arg.shape)
                    if tree[1] is not None:  # an example's array: its shape, without the batch axis
                        bound[name] = types.SimpleNamespace(shape=shape[:tree[1]] + shape[tree[1] + 1:])
                    elif shape:
                        bound[name] = types.SimpleNamespace(shape=shape)
                    else:
                        bound[name] = arg
            try:
                value = int(eval(tape.capacity, {"__builtins__": {"min": min, "max": max, "abs": abs, "int": int}},
                                 bound))
            except Exception:  # (not a function of the shapes after all: the overflow protocol covers it)
                value = None
        found.append(max(1, value) if value is not None else max(1, tape.size))
    return found


def blocks(n: int, rows: list[int], itemsizes: list[int], per_block: int, max_blocks: int) -> int:
    """Blocks for n examples: one thread each, up to max_blocks, and no more threads than keep
    the tapes (rows x itemsize bytes per thread) within TAPE_MEMORY."""
    count = max(1, min(max_blocks, -(-n // per_block)))
    per_thread = sum(r * s for r, s in zip(rows, itemsizes))
    if per_thread:
        count = max(1, min(count, TAPE_MEMORY // (per_thread * per_block)))
    return count


def longest(tapes, rows: list[int], per_block: int):
    """The longest tape (by bytes a thread) when the tapes of one block of per_block threads
    exceed TAPE_MEMORY (the launch cannot shrink below a block), else None."""
    sizes = [r * np.dtype(t.dtype).itemsize for t, r in zip(tapes, rows)]
    if sum(sizes) * per_block <= TAPE_MEMORY:
        return None
    return max(zip(sizes, range(len(tapes))))[1]


def allocate(cuda, tapes, rows: list[int], threads_: int, stream) -> list:
    """The tapes of a launch: (capacity, threads) arrays, uninitialised (a slot is written
    before it is read)."""
    return [cuda.device_array((r, threads_), dtype=np.dtype(t.dtype), stream=stream) for t, r in zip(tapes, rows)]


def grown(tapes, rows: list[int], needed) -> bool:
    """After a launch: each tape an example overflowed gets capacity max(needed, twice the
    launch's) for the next launch (and is no longer taken as known from the shapes). Whether
    any did."""
    again = False
    for tape, launched, need in zip(tapes, rows, needed):
        if int(need) > launched:
            tape.size = max(int(need), 2 * launched)
            tape.from_shapes = False
            again = True
    return again


# ---- the probe's view of a while loop's tape -------------------------------------------------

class _Recording(list):
    """A while loop's tape in the probe: a list that records [the most values on it, every value
    pushed] (the values give the tape's dtype)."""

    def __init__(self, record: list):
        super().__init__()
        self.record = record

    def append(self, value) -> None:
        super().append(value)
        self.record[0] = max(self.record[0], len(self))
        self.record[1].append(value)


def recording_lists(source: str, lines: list[int]) -> str:
    """source with each while loop's tape (`tape = []` at lines) made by runtime.list_tape(),
    which the probe records; the lines stay where they are."""
    text = source.splitlines(keepends=True)
    for line in lines:
        head, _, tail = text[line - 1].rpartition("[]")
        text[line - 1] = f"{head}runtime.list_tape(){tail}"
    return "".join(text)


def list_tape_recorder(seen: dict):
    """runtime.list_tape for the probe: {line: (the most values on it, the values pushed)}."""
    def list_tape():
        return _Recording(seen.setdefault(sys._getframe(1).f_lineno, [0, []]))
    return list_tape


# ---- where a tape's error points ------------------------------------------------------------

def origin_line(lines: list[str], line: int, name: str, kind: str) -> int:
    """The line of the per-example source whose origin comment names the user's statement of a
    tape made at `line`. A range loop's tape is made at its first push, below that statement's
    comment. A while loop's (`name = []`) is made at the top of its function, above every
    comment of the function (where the nearest comment above is another function's, or none):
    its statement is the `while` around its first push."""
    if kind != "while":
        return line
    for k in range(line, len(lines)):
        text = lines[k]
        if text.lstrip().startswith(f"{name}.append("):
            indent = len(text) - len(text.lstrip())
            for j in range(k - 1, line - 1, -1):
                above = lines[j].lstrip()
                if above.startswith("while ") and len(lines[j]) - len(above) < indent:
                    return j + 1
            return k + 1
    return line


# ---- the simulator's shape tapes ------------------------------------------------------------

def simulated_runtime() -> types.SimpleNamespace:
    """The runtime a kernel module calls in Numba's simulator: the plain helpers, except the
    shape tapes, which take their kernel form (runtime/overloads/cuda.py): a kernel's values
    are numbers, or arrays of the shape it was specialised with, so a shape tape keeps nothing
    and a pop gives back the shape the variable holds.

    As plain lists (the python backend's form) they failed where a GPU does not: in a launch
    that overflows a tape, an example clamps its pushes to the last slot, so its reverse sweep
    reads some branch flags (`continue`, `if`) of other iterations, takes a branch its forward
    sweep did not, and pops a shape that was never pushed ("pop from empty list"). The values
    such a sweep computes are discarded (the launcher reruns the batch with longer tapes), and
    each value it reads from a clamped slot is one the example pushed, so on a GPU it stays
    within its tapes and its loops' trip counts."""
    return types.SimpleNamespace(**{**vars(runtime), "shape_tape": _no_shape_tape, "push_shape": _pushed_shape,
                                    "pop_shape": _popped_shape, "top_shape": _popped_shape})


def _no_shape_tape():
    return 0


def _pushed_shape(tape, x):
    return np.shape(x)


def _popped_shape(tape, like):
    return like
