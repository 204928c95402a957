"""Tapes in a CUDA kernel: global, step-major, one column per thread.

The reverse mode of the per-example code keeps values the reverse sweep needs on tapes: in a
range loop `tape = runtime.new_tape(x, capacity)` at the first push, then `tape[count] = x` and
`x = tape[count]`; in a while loop a list, `tape = []`, `tape.append(x)` and `x = tape.pop()`.
A kernel cannot allocate, so here each tape becomes a parameter: the launcher allocates, per
tape, one array in global memory of shape (capacity, threads), and each thread passes its
column (tape[:, thread]) down to the device function that pushes. The layout is step-major:
slot s of thread t is tape[s, t], so at each step neighbouring threads touch neighbouring
addresses (coalesced).

- range loop: `tape = runtime.new_tape(x, capacity)` becomes a check of the capacity against the
  column's length (tape.shape[0]); reads and writes are clamped to the column;
- while loop: `tape = []` becomes a count of the values on it (tape_len = 0), `tape.append(x)`
  a write at tape_len (clamped) and tape_len += 1, `x = tape.pop()` tape_len -= 1 and a read;
- an example that needs more room than the launch gave its tape records the room it needs with
  cuda.atomic.max on its tape's entry of tape_status, and never writes outside its column; the
  launcher then reruns the batch with a larger tape (backends/cuda_tapes.py). The module is
  not written again: a tape's capacity is the length of the array it is given.

Why not cuda.local.array, even for small tapes of a constant size? Local memory lives in the
same DRAM (cached the same way in L1/L2) and the hardware interleaves it per thread as the
step-major layout does, so it saves no traffic; but its size is a compile-time constant, so an
example that needs more costs a new module and an NVVM compilation instead of a new array, and
the driver reserves it for every resident thread outside the launcher's memory budget. A tape
indexed by a loop counter stays in memory either way (registers need constant indices).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .cst_nodes import code, dotted, walk


@dataclass
class Tape:
    """A tape of the per-example code, as the kernel holds it: a column of a global array."""

    function: str
    name: str  # the tape's variable
    line: int  # the line of its runtime.new_tape (or `name = []`) in the per-example source
    size: int  # the capacity of the next launch, when it is not known from the arguments' shapes
    dtype: str  # a key of codegen.cuda.NUMBA_TYPES
    kind: str = "range"  # "range": runtime.new_tape in a range loop; "while": a list that grows
    capacity: str = ""  # range: the capacity expression, in the variables of function
    slot: int = 0  # its entry of tape_status
    param: str = ""  # the kernel's parameter (and the parameter of callers that pass it down)
    count: str = ""  # while: the variable that counts the values on it
    from_shapes: bool = False  # capacity names only the entry's arguments' shapes and numbers not mapped



def tape_lines(source: str) -> dict[int, tuple[str, str, str, str]]:
    """{line: (function, tape, kind, capacity)} of every tape of generated source: each
    `tape = runtime.new_tape(x, capacity)` (kind "range") and each `tape = []` whose only uses
    are `tape.append(x)` statements and `y = tape.pop()` (kind "while", capacity "")."""
    found = {}
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    for function in wrapper.module.body:
        if not isinstance(function, cst.FunctionDef):
            continue
        lists, uses = {}, {}
        for node in walk(function):
            if not (isinstance(node, cst.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)):
                continue
            target, value = node.targets[0].target.value, node.value
            line = positions[node].start.line
            if isinstance(value, cst.Call) and dotted(value.func) == "runtime.new_tape":
                found[line] = (function.name.value, target, "range", code(value.args[1].value))
            elif isinstance(value, cst.List) and not value.elements:
                lists.setdefault(target, []).append(line)
        for node in walk(function):  # every use of a list: name.append(x) / name.pop() alone
            if isinstance(node, cst.Name) and node.value in lists:
                uses[node.value] = uses.get(node.value, 0) + 1
        for node in walk(function):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and isinstance(node.func.value, cst.Name) and node.func.value.value in lists \
                    and ((node.func.attr.value == "append" and len(node.args) == 1)
                         or (node.func.attr.value == "pop" and not node.args)):
                uses[node.func.value.value] -= 1
        for name, lines in lists.items():
            if len(lines) == 1 and uses[name] == 1:  # (the one use left: its assignment)
                found[lines[0]] = (function.name.value, name, "while", "")
    return found


def names_of(module: cst.Module) -> dict[str, set[str]]:
    """The names each top-level function uses."""
    return {f.name.value: {n.value for n in walk(f) if isinstance(n, cst.Name)}
            for f in module.body if isinstance(f, cst.FunctionDef)}


def assignments(function: cst.FunctionDef) -> dict[str, int]:
    """How many statements assign each name in a function (its parameters keep their values
    where it assigns them none)."""
    found: dict[str, int] = {}
    for node in walk(function):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            for name in {n.value for n in walk(node.target) if isinstance(n, cst.Name)}:
                found[name] = found.get(name, 0) + 1
    return found


def _expanded(expression: str, function: cst.FunctionDef, counts: dict[str, int]) -> cst.BaseExpression:
    """expression with each name that the function assigns once, by a statement of its body
    (not in a loop or a branch: `_t2 = z.shape[0]`), replaced by what it assigns, so that a
    trip count reads in the function's arguments."""
    once = {}
    for line in function.body.body:
        for part in getattr(line, "body", ()) if isinstance(line, cst.SimpleStatementLine) else ():
            if (isinstance(part, cst.Assign) and len(part.targets) == 1 and isinstance(part.targets[0].target, cst.Name)
                    and counts.get(part.targets[0].target.value) == 1):
                once[part.targets[0].target.value] = part.value

    class Expand(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return once[updated.value].with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
                if updated.value in once else updated

        def leave_Attribute(self, original, updated):  # (z.shape: the attribute's name is no variable)
            return updated.with_changes(attr=original.attr)

    node = cst.parse_expression(expression)
    for _ in range(8):  # (names assigned from names assigned once)
        expanded = node.visit(Expand())
        if expanded.deep_equals(node):
            break
        node = expanded
    return node


def name_tapes(tapes: list[Tape], module: cst.Module, entry: str, unknown: set[str] = frozenset()) -> None:
    """Each tape's slot, kernel parameter (its own name unless another function uses it) and,
    for a while loop's tape, the variable that counts its values; and whether its capacity is
    known from the entry's arguments before launch (from_shapes: it names parameters of the
    entry that the entry never assigns and module constants, and of the parameters in unknown,
    whose values the host does not know before launch (arrays, numbers of each example's own),
    their shapes alone)."""
    names = names_of(module)
    everything = set().union(*names.values()) if names else set()
    taken = set(everything)
    functions = {f.name.value: f for f in module.body if isinstance(f, cst.FunctionDef)}
    for slot, tape in enumerate(tapes):
        tape.slot = slot
        elsewhere = any(tape.name in used for f, used in names.items() if f != tape.function)
        clash = sum(t.name == tape.name for t in tapes) > 1
        param = tape.name if not (elsewhere or clash) else re.sub(r"\W", "_", f"{tape.function}_{tape.name}")
        while param in taken and param != tape.name:
            param += "_"
        taken.add(param)
        tape.param = param
        if tape.kind == "while":
            count = f"{tape.name}_len"
            while count in names.get(tape.function, ()) or count in taken:
                count += "_"
            taken.add(count)
            tape.count = count
        elif tape.function == entry and tape.function in functions:
            function = functions[tape.function]
            counts = assignments(function)
            capacity = _expanded(tape.capacity, function, counts)
            used = {n.value for n in walk(capacity) if isinstance(n, cst.Name)}
            tape.from_shapes = not (used & set(counts)) and not (_values(capacity) & set(unknown))
            if tape.from_shapes:
                tape.capacity = code(capacity.with_changes(lpar=[], rpar=[]))


def _values(expression: cst.BaseExpression) -> set[str]:
    """The names whose values an expression reads (not z in z.shape, nor an attribute's name)."""
    shapes = {id(n.value) for n in walk(expression)
              if isinstance(n, cst.Attribute) and n.attr.value == "shape" and isinstance(n.value, cst.Name)}
    attrs = {id(n.attr) for n in walk(expression) if isinstance(n, cst.Attribute)}
    return {n.value for n in walk(expression) if isinstance(n, cst.Name) and id(n) not in shapes | attrs}


def owners(tapes: list[Tape]) -> dict[str, list[Tape]]:
    by_function: dict[str, list[Tape]] = {}
    for tape in tapes:
        by_function.setdefault(tape.function, []).append(tape)
    return by_function


def tape_params(tapes: list[Tape], calls: dict[str, set[str]], keep: list[str]) -> dict[str, list[Tape]]:
    """{function: the tapes it takes as parameters}: its own and those of the functions it
    calls, directly or not, in slot order (callers pass them down positionally)."""
    own = owners(tapes)
    needs = {f: set(t.slot for t in own.get(f, ())) for f in keep}
    changed = True
    while changed:
        changed = False
        for f in keep:
            for callee in calls.get(f, ()):
                if callee in needs and not needs[callee] <= needs[f]:
                    needs[f] |= needs[callee]
                    changed = True
    by_slot = {t.slot: t for t in tapes}
    return {f: [by_slot[s] for s in sorted(slots)] for f, slots in needs.items() if slots}


def param_in(tape: Tape, function: str) -> str:
    """The name of tape in function: its own variable where it is pushed, the kernel's
    parameter where it is passed down."""
    return tape.name if tape.function == function else tape.param


# ---- the statements --------------------------------------------------------------------------

def room(tape: Tape) -> str:
    return f"{tape.name}.shape[0]"


def clamped(tape: Tape, index: str) -> str:
    """tape[index], never outside its column: an example that overflows keeps writing its last
    slot, and may then read back values that send its reverse sweep another way and pop more
    than it pushed (below slot 0); its results are discarded, and the batch runs again with a
    longer tape."""
    return f"{tape.name}[max(0, min({index}, {room(tape)} - 1))]"


def check_range(tape: Tape, capacity: str) -> str:
    """What runtime.new_tape(x, capacity) becomes: the column is the tape; one that is too short
    reports the room this example needs (only an overflowing thread writes tape_status)."""
    return (f"if {capacity} > {room(tape)}:\n"
            f"    cuda.atomic.max(tape_status, {tape.slot}, {capacity})\n")


def start_while(tape: Tape) -> str:
    return f"{tape.count} = 0  # the values on {tape.name}, this thread's column of a global tape"


def push(tape: Tape, value: str) -> list[str]:
    """tape.append(value) of a while loop's tape."""
    return [f"if {tape.count} >= {room(tape)}:\n"
            f"    cuda.atomic.max(tape_status, {tape.slot}, {tape.count} + 1)\n",
            f"{clamped(tape, tape.count)} = {value}",
            f"{tape.count} += 1"]


def pop(tape: Tape, target: str) -> list[str]:
    """target = tape.pop() of a while loop's tape."""
    return [f"{tape.count} -= 1", f"{target} = {clamped(tape, tape.count)}"]


# The reverse mode's note on its tapes (transforms/reverse/core.py), as it reads in a kernel.
_MADE = re.compile(r"# In range loops a tape is made at its first push, with room for one value per iteration\n"
                   r"(\s*)# \(the loops' trip counts, known on entry\); ")


def kernel_comments(text: str) -> str:
    """The per-example code's comments on its tapes, as they hold in the kernel."""
    return _MADE.sub(lambda m: "# Each tape is this thread's column of a global array (a parameter); range loops\n"
                               f"{m.group(1)}# check its room at their first push; ", text)


def header(tapes: list[Tape]) -> list[str]:
    """The kernel module's comment on its tapes."""
    if not tapes:
        return []
    lines = ["# Tapes live in global memory: the launcher allocates one array per tape, of shape",
             "# (capacity, threads), step-major (thread t's slot s is tape[s, t], so neighbouring threads",
             "# touch neighbouring addresses), and each thread passes its column tape[:, t] down to the",
             "# device function that pushes. An example that needs more room than its column has reports",
             "# it in tape_status and clamps its pushes; the launcher reruns the batch with longer tapes.",
             "# The tapes, and their capacity:"]
    for t in tapes:
        if t.kind == "while":
            capacity = "a while loop's: the most values an example pushed so far (grown on overflow)"
        elif t.from_shapes:
            capacity = f"{t.capacity}, evaluated from the arguments' shapes before launch"
        else:
            capacity = f"{t.capacity}, the most an example needed so far (grown on overflow)"
        name = t.param if t.param == t.name else f"{t.param} ({t.name})"
        lines.append(f"#   {name} of {t.function}, {t.dtype}: {capacity}")
    return lines
