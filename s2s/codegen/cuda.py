"""CUDA kernel text: per-example generated code as numba.cuda device functions, and a kernel
that runs one example per thread.

The per-example module (the primal or the specialised reverse mode that s2s.jit(s2s.vmap(f))
already compiles for the CPU) is rewritten, statement by statement, into code numba-cuda's
compiler takes (kernel code cannot allocate arrays or call NumPy's array functions):

- NumPy's elementwise functions on scalars become math.* (np.exp(x) -> math.exp(x)), np.abs
  becomes abs, np.power **, np.maximum and np.minimum conditional expressions (NaN wins, as in
  NumPy), np.sign one that keeps NumPy's 0 at 0 and nan at nan;
- a tape (runtime.new_tape, one slot per iteration of the loop that pushes) becomes a
  cuda.local.array of a size fixed when the module is specialised (the capacity the first
  example needed, `tapes` below). A thread whose example needs more records that on
  `tape_status` and clamps its pushes (so that it never writes outside the array); the
  launcher then specialises again with room for it and runs the batch again;
- everything else kernels cannot run (allocation, np.linalg, a reduction over a whole array,
  a list that grows) is refused here, before numba-cuda sees it, as an S2SError naming the
  user's statement (the origin comment above it), that says backend="cpu" takes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..errors import S2SError
from .format import format_source

# np.<name> on a scalar -> math.<name>: the functions numba-cuda implements for float32 and
# float64 (libdevice), with NumPy's result for a number.
MATH = {name: name for name in ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan",
                                "sinh", "cosh", "tanh", "hypot", "isnan", "isinf", "isfinite", "copysign")}
MATH.update(arcsin="asin", arccos="acos", arctan="atan", arctan2="atan2", arcsinh="asinh", arccosh="acosh",
            arctanh="atanh")
BUILTINS = {"abs": "abs", "absolute": "abs", "fabs": "abs"}
CONSTANTS = {"pi": "math.pi", "e": "math.e", "inf": "math.inf", "nan": "math.nan"}
CASTS = {"float32", "float64", "int32", "int64", "bool_"}  # numba-cuda converts numbers with these
ALLOCATING = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "array",
              "asarray", "arange", "linspace", "copy", "concatenate", "stack", "reshape", "outer", "cumsum",
              "where", "clip", "sort", "transpose"}
REDUCING = {"sum", "mean", "max", "min", "prod", "dot", "vdot", "inner", "matmul", "var", "std", "argmax", "argmin",
            "all", "any", "trace", "cumprod", "amax", "amin", "einsum", "tensordot"}
METHODS = ALLOCATING | REDUCING | {"append", "pop", "astype", "item", "tolist", "fill"}
# The runtime helpers with numba-cuda overloads (runtime/overloads/cuda.py), for numbers.
KERNEL_HELPERS = {"zeros_like", "ones_like", "copy", "tree_add", "unbroadcast", "range_len"}
NUMBA_TYPES = {"float64": "numba.float64", "float32": "numba.float32", "int64": "numba.int64",
               "int32": "numba.int32", "bool": "numba.boolean"}


@dataclass
class Tape:
    """A tape of the per-example code, as the kernel holds it."""

    function: str
    name: str  # the tape's variable
    line: int  # the line of its runtime.new_tape in the per-example source
    size: int  # room in the kernel's local array
    dtype: str  # a key of NUMBA_TYPES
    slot: int = 0  # its entry of tape_status
    constant: str = ""  # the module constant that holds size


@dataclass
class Rewritten:
    source: str  # the device functions, formatted
    tapes: list[Tape] = field(default_factory=list)


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def tape_lines(source: str) -> dict[int, tuple[str, str]]:
    """{line: (function, tape)} of every runtime.new_tape assignment in generated source."""
    found = {}
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    for function in wrapper.module.body:
        if not isinstance(function, cst.FunctionDef):
            continue
        for node in _walk(function):
            if (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                    and _dotted(node.value.func) == "runtime.new_tape" and len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)):
                found[positions[node].start.line] = (function.name.value, node.targets[0].target.value)
    return found


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _atom(node: cst.BaseExpression) -> str:
    """node's code, in parentheses unless it is a name, a number or a call or subscript of one."""
    simple = (cst.Name, cst.Integer, cst.Float, cst.Call, cst.Subscript, cst.Attribute)
    return _code(node) if isinstance(node, simple) and not node.lpar else f"({_code(node)})"


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


def _calls(module: cst.Module) -> dict[str, set[str]]:
    """The top-level functions each top-level function names."""
    functions = {f.name.value: f for f in module.body if isinstance(f, cst.FunctionDef)}
    return {name: {n.value for n in _walk(f) if isinstance(n, cst.Name) and n.value in functions}
            for name, f in functions.items()}


def reachable(calls: dict[str, set[str]], entry: str) -> list[str]:
    """The functions that entry calls, directly or not (entry first)."""
    order, stack = [entry], [entry]
    while stack:
        for callee in sorted(calls[stack.pop()]):
            if callee not in order:
                order.append(callee)
                stack.append(callee)
    return order


class _ToCuda(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, origin_at, functions: set[str], tapes: dict[int, Tape], status: set[str]):
        self.origin_at, self.functions = origin_at, functions
        self.tapes, self.status = tapes, status  # status: the functions that take tape_status
        self.function = ""
        self.tape_of: dict[str, Tape] = {}  # tape variable -> Tape, in the current function

    def refuse(self, node: cst.CSTNode, what: str) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        raise S2SError(f"backend='cuda' cannot run this statement in a kernel: {what}",
                       self.origin_at(line),
                       hint="backend='cpu' takes it (s2s.jit(..., backend='cpu')); or keep the per-example code "
                            "to numbers, loops and indexing into the arguments")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.function = node.name.value
        self.tape_of = {t.name: t for t in self.tapes.values() if t.function == self.function}

    def leave_FunctionDef(self, original, updated: cst.FunctionDef) -> cst.FunctionDef:
        decorator = cst.Decorator(cst.parse_expression("cuda.jit(device=True)"))
        if updated.name.value in self.status:  # it has tapes, or calls a function that has
            params = updated.params.with_changes(params=[*updated.params.params, cst.Param(cst.Name("tape_status"))])
            updated = updated.with_changes(params=params)
        return updated.with_changes(decorators=[decorator])

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = _dotted(updated.func) or ""
        if name.startswith("np."):
            short = name[3:]
            if short in MATH:
                return updated.with_changes(func=cst.parse_expression(f"math.{MATH[short]}"))
            if short in BUILTINS:
                return updated.with_changes(func=cst.Name(BUILTINS[short]))
            if short in ("power", "float_power") and len(updated.args) == 2:
                base, exponent = (_atom(a.value) for a in updated.args)
                return cst.parse_expression(f"({base} ** {exponent})")  # (** groups to the right)
            if short == "sign" and len(updated.args) == 1:  # NumPy's: 0 at 0, nan at nan, +-1 at +-inf
                x = _atom(updated.args[0].value)
                return cst.parse_expression(f"(1.0 if {x} > 0 else (-1.0 if {x} < 0 else {x} * 0.0))")
            if short in ("maximum", "minimum") and len(updated.args) == 2:  # NaN wins, as in NumPy
                a, b = (_atom(x.value) for x in updated.args)
                compare = ">=" if short == "maximum" else "<="
                return cst.parse_expression(f"({a} if {a} {compare} {b} or {a} != {a} else {b})")
            if short == "square" and len(updated.args) == 1:
                x = _atom(updated.args[0].value)
                return cst.parse_expression(f"({x} * {x})")
            if short in CASTS:
                return updated
            if short.startswith("linalg."):
                self.refuse(original, f"{name} has no kernel form")
            if short in ALLOCATING:
                self.refuse(original, f"{name} allocates an array, and kernels cannot allocate")
            if short in REDUCING:
                self.refuse(original, f"{name} reduces a whole array, which has no kernel form yet")
            self.refuse(original, f"{name} has no kernel form (on a number, math.* or a builtin may)")
        if name.startswith("runtime."):
            helper = name[8:]
            if helper in KERNEL_HELPERS:
                return updated
            if helper == "new_tape":
                return updated  # replaced with its statement (leave_Assign)
            self.refuse(original, f"the runtime helper {name} (arrays, or a batched value) has no kernel form")
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value in METHODS and not (
                _dotted(updated.func.value) or "").startswith(("math", "cuda")):
            kind = ("a list that grows (the tape of a while loop)" if updated.func.attr.value in ("append", "pop")
                    else f"the array method .{updated.func.attr.value}()")
            self.refuse(original, f"{kind} has no kernel form")
        if isinstance(updated.func, cst.Name) and updated.func.value in self.status:
            return updated.with_changes(args=[*updated.args, cst.Arg(cst.Name("tape_status"))])
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if _dotted(updated) in {f"np.{c}" for c in CONSTANTS}:
            return cst.parse_expression(CONSTANTS[updated.attr.value])
        return updated

    def leave_BinaryOperation(self, original, updated: cst.BinaryOperation) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.MatrixMultiply):
            self.refuse(original, "@ (a matrix product) has no kernel form yet")
        return updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        tape = self.tape_of.get(getattr(updated.value, "value", None)) if isinstance(updated.value, cst.Name) else None
        if tape is None or len(updated.slice) != 1:
            return updated
        # Clamped: a thread whose example overflows the tape never writes outside it (its
        # results are discarded and the batch runs again with a larger tape).
        index = _code(updated.slice[0].slice.value)
        return cst.parse_expression(f"{tape.name}[min({index}, {tape.constant} - 1)]")

    def leave_SimpleStatementLine(self, original, updated: cst.SimpleStatementLine):
        line = self.get_metadata(PositionProvider, original).start.line
        tape = self.tapes.get(line)
        if tape is None:
            return updated
        capacity = _code(updated.body[0].value.args[1].value)
        create = cst.parse_statement(f"{tape.name} = cuda.local.array({tape.constant}, {NUMBA_TYPES[tape.dtype]})")
        # Only a thread whose example overflows the tape touches tape_status (no contention).
        check = cst.parse_statement(f"if {capacity} > {tape.constant}:\n"
                                    f"    cuda.atomic.max(tape_status, {tape.slot}, {capacity})\n")
        return cst.FlattenSentinel([create.with_changes(leading_lines=updated.leading_lines), check])


def device_functions(source: str, entry: str, tapes: list[Tape], origin_at) -> Rewritten:
    """The functions of the per-example module that entry reaches, rewritten for numba-cuda
    (module doc). tapes: each runtime.new_tape's size and dtype, from the probe of the launcher.
    Raises S2SError at origin_at(line) (the user's statement that a line of source came from)
    for what a kernel cannot run."""
    module = cst.parse_module(source)
    calls = _calls(module)
    keep = reachable(calls, entry)
    by_line = {t.line: t for t in tapes}
    used = set()
    for slot, tape in enumerate(tapes):
        constant = re.sub(r"\W", "_", tape.name).strip("_").upper() + "_SIZE"
        while constant in used:
            constant += "_"
        used.add(constant)
        tape.slot, tape.constant = slot, constant
    status = {t.function for t in tapes}
    while True:  # and the functions that call them
        callers = {f for f in keep if calls[f] & status} - status
        if not callers:
            break
        status |= callers
    transformer = _ToCuda(origin_at, set(keep), by_line, status)
    rewritten = MetadataWrapper(module).visit(transformer)
    functions = {f.name.value: f for f in rewritten.body if isinstance(f, cst.FunctionDef)}
    # callees first: numba-cuda resolves a device function's callees when it is compiled,
    # and readers meet each function before its use
    body = [functions[name] for name in reversed(keep)]
    text = cst.Module(body=body).code
    return Rewritten(text, tapes)


def kernel_module(name: str, description: str, axes: str, header: str, device: Rewritten, kernel: str) -> str:
    """The whole module: header, imports, tape sizes, device functions and the kernel."""
    lines = [f"# Generated by s2s: vmap of {description}, batched over {axes}, as a CUDA kernel",
             "# (numba.cuda): one thread per example in a grid-stride loop; the per-example code runs as",
             "# device functions, with math.* for NumPy's functions of a number."]
    if device.tapes:
        lines += ["# Tapes are cuda.local.array of the sizes below, fixed when the batch was specialised;",
                  "# an example that needs more is recorded in tape_status, and the launcher specialises",
                  "# again with room for it."]
    lines += [line for line in header.splitlines() if line.startswith("#")]
    lines += ["import math", "", "import numba", "import numpy as np", "from numba import cuda", "",
              "from s2s import runtime", ""]
    lines += [f"{t.constant} = {t.size}  # {t.function}: {t.name}" for t in device.tapes]
    return format_source("\n".join(lines) + "\n\n\n" + device.source + "\n\n" + kernel)


def kernel_source(name: str, params: list[str], mapped: list[str], size: str, outs: list[str],
                  call: str, leaf_paths: list[str], status: bool, doc: str) -> str:
    """The `<name>_kernel` function: each thread runs the examples start, start + stride, ..."""
    fresh = set(params) | set(outs)
    b = "b" if "b" not in fresh else "b_"
    args = params + outs + (["tape_status"] if status else [])
    lines = ["@cuda.jit", f"def {name}_kernel({', '.join(args)}):", f'    """{doc}"""',
             "    start = cuda.grid(1)", "    stride = cuda.gridsize(1)",
             f"    for {b} in range(start, {size}, stride):",
             f"        result = {call.replace('{b}', b)}"]
    lines += [f"        {out}[{b}] = result{path}" for out, path in zip(outs, leaf_paths)]
    return "\n".join(lines) + "\n"
