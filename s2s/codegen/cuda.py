"""CUDA kernel text: per-example generated code as numba.cuda device functions, and a kernel
that runs one example per thread.

The per-example module (the primal or the specialised reverse mode that s2s.jit(s2s.vmap(f))
already compiles for the CPU) is rewritten, statement by statement, into code numba-cuda's
compiler takes (kernel code cannot allocate arrays or call NumPy's array functions):

- NumPy's elementwise functions on scalars become math.* (np.exp(x) -> math.exp(x)), np.abs
  becomes abs, np.power **, np.maximum and np.minimum conditional expressions (NaN wins, as in
  NumPy; np.fmax and np.fmin likewise, where a number wins over a NaN), np.sign one that keeps
  NumPy's 0 at 0 and nan at nan;
- a tape (runtime.new_tape in a range loop, one slot per iteration of the loop that pushes; a
  list in a while loop, .append / .pop) is a column of a global array that the launcher
  allocates, of shape (capacity, threads): step-major, thread t's slot s is tape[s, t], so that
  neighbouring threads touch neighbouring addresses. The kernel passes each thread's column
  (tape[:, t]) down to the device functions; a while loop's tape gets a count of its values. A
  thread whose example needs more room records that on `tape_status` and clamps its pushes (so
  that it never writes outside its column); the launcher then reruns the batch with longer
  tapes, without writing the module again (codegen/cuda_tapes.py, which also says why tapes are
  not cuda.local.array);
- an array the code makes by a statement of its own (y = np.zeros(n), np.empty_like(x),
  runtime.zeros_like(x), np.copy(x): Facts.kernel_local) becomes a cuda.local.array of the shape the
  probe saw (`locals_` below), filled as the call would; an example that asks for another shape
  sets its entry of tape_status, and the launcher raises an S2SError at the statement. If the
  entry function returns it, the array is the thread's row of the output instead (rows below);
  a helper that returns an array it made is inlined into its callers (Numba IR inlining: the
  array then lives in the caller's frame);
- the entry's array results are written into the thread's output rows, and it returns its
  numbers alone (numba-cuda returns no array that is not an argument);
- s2s.random's draws of one number become runtime.kernels.normal64 (...), draws of a shape and
  random.fold_in / random.split keys local arrays filled by runtime.kernels (cuda_random.py);
- everything else kernels cannot run (allocation by an expression, np.linalg, a reduction over
  a whole array, a list that is not a while loop's tape) is refused here, before numba-cuda
  sees it, as an S2SError naming the user's statement (the origin comment above it), that says
  backend="cpu" takes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst
import numpy as np
from libcst.metadata import MetadataWrapper, PositionProvider

from ..errors import S2SError
from ..rules import SAME_SPELLING, Facts, facts, spelled
from .cst_nodes import code, dotted, walk
from . import cuda_random, cuda_tapes
from .cuda_random import RANDOM_DRAWS
from .cuda_tapes import Tape, tape_lines  # noqa: F401 (the launcher's names for them)
from .format import format_source

# How a call is written in a kernel is declared with its function (templates/): Facts.kernel (np.exp
# of a number is math.exp, np.maximum a conditional expression, a runtime helper with a numba-cuda
# overload as it is), Facts.kernel_local (y = np.zeros(3) as a statement: a local array).
CONSTANTS = {"pi": "math.pi", "e": "math.e", "inf": "math.inf", "nan": "math.nan"}
NUMBA_TYPES = {"float64": "numba.float64", "float32": "numba.float32", "int64": "numba.int64",
               "int32": "numba.int32", "bool": "numba.boolean", "uint32": "numba.uint32", "uint64": "numba.uint64"}


def _is_dtype_check(line: cst.SimpleStatementLine) -> bool:
    """runtime.require_float_array(a, message) (analysis/activity.py's check of a write)."""
    statement = line.body[0] if len(line.body) == 1 else None
    return isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call) \
        and dotted(statement.value.func) == "runtime.require_float_array"


@dataclass
class Local:
    """An array the per-example code makes (np.zeros(3), runtime.zeros_like(x), np.copy(x)...),
    as a cuda.local.array of the shape the probe saw."""

    function: str
    name: str  # the variable it is assigned to
    line: int  # the line of its statement in the per-example source
    shape: tuple  # the same for every example (checked at run time)
    dtype: str  # a key of NUMBA_TYPES
    slot: int = 0  # its entry of tape_status (1 there: an example asked for another shape)
    constant: str = ""  # the module constant that holds shape


def _declared(name: str) -> Facts:
    """The facts of the function generated code calls as `name` ("np.exp", "runtime.copy")."""
    module, _, attr = name.partition(".")
    return facts(spelled(module, attr)) if attr and "." not in attr else facts(None)


def _local_call(name: str) -> tuple | None:
    """(what fills it, "size" or "like") where `a = name(...)` makes a local array (Facts.kernel_local)."""
    return _declared(name).kernel_local


def _makes_arrays(known: Facts) -> bool:
    return not known.elementwise and (known.creates or known.like or known.fresh or known.view or known.broadcasts)


# name = runtime.random.fold_in(key, i) / split(key, n): keys as local arrays of uint32
# and name = runtime.random.normal(key, shape) (and the other draws: codegen/cuda_random.py), into a local array
LOCAL_RANDOM = {"runtime.random.fold_in": "fold_in_into", "runtime.random.split": "split_into",
                **{f"runtime.random.{draw}": draw for draw in RANDOM_DRAWS}}


@dataclass
class Rewritten:
    source: str  # the device functions, formatted
    tapes: list[Tape] = field(default_factory=list)
    locals: list[Local] = field(default_factory=list)



def call_assignments(source: str, callee: str | None = None) -> dict[int, tuple[str, str]]:
    """{line: (function, variable)} of every statement `variable = <call>` in generated source
    (callee: only calls of that dotted name)."""
    found = {}
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    for function in wrapper.module.body:
        if not isinstance(function, cst.FunctionDef):
            continue
        for node in walk(function):
            if (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)
                    and (callee is None or dotted(node.value.func) == callee)):
                found[positions[node].start.line] = (function.name.value, node.targets[0].target.value)
    return found



def _atom(node: cst.BaseExpression) -> str:
    """node's code, in parentheses unless it is a name, a number or a call or subscript of one."""
    simple = (cst.Name, cst.Integer, cst.Float, cst.Call, cst.Subscript, cst.Attribute)
    return code(node) if isinstance(node, simple) and not node.lpar else f"({code(node)})"


def _literal_shape(node: cst.BaseExpression) -> bool:
    """Is node a shape written as numbers (3, or (3, 4))?"""
    if isinstance(node, cst.Integer):
        return True
    return isinstance(node, cst.Tuple) and all(isinstance(e.value, cst.Integer) for e in node.elements)



def _calls(module: cst.Module) -> dict[str, set[str]]:
    """The top-level functions each top-level function names."""
    functions = {f.name.value: f for f in module.body if isinstance(f, cst.FunctionDef)}
    return {name: {n.value for n in walk(f) if isinstance(n, cst.Name) and n.value in functions}
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

    def __init__(self, origin_at, functions: set[str], tapes: dict[int, Tape], status: set[str],
                 locals_: dict[int, Local], entry: str, rows: list[tuple[str, str]], result: str,
                 number_paths: list[str], direct: dict[tuple[str, str], str], inline: set[str],
                 taken: dict[str, list[Tape]]):
        self.origin_at, self.functions = origin_at, functions
        self.tapes, self.status = tapes, status  # status: the functions that take tape_status
        self.locals = locals_
        # rows: (parameter, leaf path) of each array leaf of entry's result, which entry copies
        # into its thread's row of the output before it returns (through the variable result)
        self.entry, self.rows, self.result, self.number_paths = entry, rows, result, number_paths
        self.direct = direct  # (entry, local array) -> the output row it is made as
        self.inline = inline  # the functions that return arrays they made
        self.function = ""
        self.line = 0  # the line of the statement being rewritten
        self.clamped: dict[tuple[str, str], Local] = {}  # local arrays of a computed size
        self.tape_of: dict[str, Tape] = {}  # tape variable -> Tape, in the current function
        self.taken = taken  # function -> the tapes it takes as parameters (its own and its callees')

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
        if updated.name.value in self.inline:  # (Numba IR inlining: the array it returns lives on in the caller)
            decorator = cst.Decorator(cst.parse_expression('cuda.jit(device=True, inline="always")'), leading_lines=[
                cst.EmptyLine(comment=cst.Comment("# Inlined into its callers: it returns an array it made"))])
        else:
            decorator = cst.Decorator(cst.parse_expression("cuda.jit(device=True)"))
        params = list(updated.params.params)
        if updated.name.value == self.entry:
            params += [cst.Param(cst.Name(row)) for row, _ in self.rows]
        params += [cst.Param(cst.Name(cuda_tapes.param_in(t, updated.name.value)))
                   for t in self.taken.get(updated.name.value, ())]
        if updated.name.value in self.status:  # it has tapes or local arrays, or calls a function that has
            params.append(cst.Param(cst.Name("tape_status")))
        updated = updated.with_changes(params=updated.params.with_changes(params=params))
        return updated.with_changes(decorators=[decorator])

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.line = self.get_metadata(PositionProvider, node).start.line

    def _random_draw(self, original: cst.Call, updated: cst.Call, draw: str) -> cst.BaseExpression:
        """runtime.random.<draw>(key, ...) of one number (codegen/cuda_random.py)."""
        return cuda_random.scalar_draw(lambda what: self.refuse(original, what), updated, draw)

    def _kernel_call(self, original: cst.Call, updated: cst.Call, name: str, kernel: str) -> cst.BaseExpression:
        """The call as Facts.kernel writes it: a callee (math.exp), or an expression of the
        arguments ({0} ** {1}), each argument in parentheses where it needs them."""
        if kernel == SAME_SPELLING:
            return updated
        if "{" not in kernel:
            return updated.with_changes(func=cst.parse_expression(kernel))
        placeholders = {int(k) for k in re.findall(r"\{(\d+)\}", kernel)}
        if len(updated.args) != len(placeholders) or any(a.keyword or a.star for a in updated.args):
            self.refuse(original, f"{name} has no kernel form with these arguments")
        return cst.parse_expression(kernel.format(*(_atom(a.value) for a in updated.args)))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = dotted(updated.func) or ""
        if self.line in self.locals and (_local_call(name) is not None or name in LOCAL_RANDOM):
            return updated  # an array of a fixed shape: leave_SimpleStatementLine writes it
        if name.startswith("runtime.random.") and name[15:] in RANDOM_DRAWS:
            return self._random_draw(original, updated, name[15:])
        if name.startswith("np."):
            known = _declared(name)
            if known.kernel is not None:
                return self._kernel_call(original, updated, name, known.kernel)
            if name.startswith("np.linalg."):
                self.refuse(original, f"{name} has no kernel form")
            if known.reduction or known.product:
                self.refuse(original, f"{name} reduces a whole array, which has no kernel form yet")
            if known.kernel_local is not None or _makes_arrays(known):
                made = ("; as a statement of its own (a = np.zeros(3)) it becomes a local array of the shape "
                        "the first example made, but the first example did not run this one (a branch it does "
                        "not take), or it is inside an expression" if known.kernel_local is not None else "")
                self.refuse(original, f"{name} allocates an array, and kernels cannot allocate{made}")
            self.refuse(original, f"{name} has no kernel form (on a number, math.* or a builtin may)")
        if name.startswith("runtime.random."):
            self.refuse(original, f"{name[8:]} has no kernel form yet (a kernel draws with "
                                  f"{cuda_random.DRAWS}, and makes keys with random.fold_in and random.split)")
        if name.startswith("runtime."):
            helper = name[8:]
            if _declared(name).kernel == SAME_SPELLING:  # (a helper with a numba-cuda overload)
                return updated
            if helper == "sum_start":
                # sum(xs) starts from Python's 0: a kernel's sequences hold numbers (zeros of an
                # item's shape, the compiled start for arrays, would be allocated)
                return cst.Integer("0")
            if helper == "unpack_bar":
                # The adjoints of what a kernel unpacks stay a tuple of numbers (an array of them
                # would be allocated); the thread writes them out number by number.
                return updated.args[0].value
            if helper in ("carry_like", "carry_like_item"):
                # A kernel's carries are numbers, as its values are (an array one would be
                # allocated): the number the loop starts from, as NumPy has it (optimize/carries.py)
                return updated.args[0].value
            if helper in ("new_tape", "require_float_array"):
                return updated  # replaced with its statement (leave_Assign), or left out (leave_SimpleStatementLine)
            self.refuse(original, f"the runtime helper {name} (arrays, or a batched value) has no kernel form")
        tape = self.tape_of.get(dotted(updated.func.value) or "") if isinstance(updated.func, cst.Attribute) else None
        if tape is not None and tape.kind == "while":
            return updated  # tape.append(x) / x = tape.pop(): leave_SimpleStatementLine writes them
        method = updated.func.attr.value if isinstance(updated.func, cst.Attribute) else None
        if method is not None and (method in ("append", "pop") or hasattr(np.ndarray, method)) and not (
                dotted(updated.func.value) or "").startswith(("math", "cuda", "numba", "runtime", "np")):
            kind = ("a list that grows (other than a while loop's tape)" if updated.func.attr.value in ("append", "pop")
                    else f"the array method .{updated.func.attr.value}()")
            self.refuse(original, f"{kind} has no kernel form")
        if isinstance(updated.func, cst.Name) and updated.func.value in self.status:
            tapes = [cst.Arg(cst.Name(t.param)) for t in self.taken.get(updated.func.value, ())]
            return updated.with_changes(args=[*updated.args, *tapes, cst.Arg(cst.Name("tape_status"))])
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if dotted(updated) in {f"np.{c}" for c in CONSTANTS}:
            return cst.parse_expression(CONSTANTS[updated.attr.value])
        return updated

    def leave_BinaryOperation(self, original, updated: cst.BinaryOperation) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.MatrixMultiply):
            self.refuse(original, "@ (a matrix product) has no kernel form yet")
        return updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        local = self.clamped.get((self.function, updated.value.value)) if isinstance(updated.value, cst.Name) else None
        if local is not None:
            elements = []
            for axis, element in enumerate(updated.slice):
                index = element.slice
                if isinstance(index, cst.Index):
                    clamped = f"min({code(index.value)}, {local.constant}[{axis}] - 1)"
                    index = index.with_changes(value=cst.parse_expression(clamped))
                elements.append(element.with_changes(slice=index))
            return updated.with_changes(slice=elements)
        tape = self.tape_of.get(getattr(updated.value, "value", None)) if isinstance(updated.value, cst.Name) else None
        if tape is None or len(updated.slice) != 1:
            return updated
        return cst.parse_expression(cuda_tapes.clamped(tape, code(updated.slice[0].slice.value)))

    def _local(self, original, updated: cst.SimpleStatementLine, local: Local):
        """name = np.zeros(...) (and the like, Facts.kernel_local): a local array of the probe's shape,
        filled as the call would; an example that asks for another shape sets its tape_status."""
        statement = updated.body[0] if len(updated.body) == 1 else None
        call = getattr(statement, "value", None)
        name = dotted(call.func) if isinstance(call, cst.Call) else None
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, cst.Name)
                and (_local_call(name) is not None or name in LOCAL_RANDOM) and call.args):
            self.refuse(original, "it makes a new array (array arithmetic, or a NumPy function's array result), "
                                  "and kernels cannot allocate; an array of a fixed shape is made by a statement "
                                  "of its own (a = np.zeros(3), a = np.empty_like(x), a = np.copy(x))")
        target = local.name
        direct = self.direct.get((self.function, target))
        if direct is not None:  # the entry returns this array: it is the thread's output row itself
            create = f"{target} = {direct}"
        else:
            create = f"{target} = cuda.local.array({local.constant}, {NUMBA_TYPES[local.dtype]})"
        args = [code(a.value) for a in call.args]
        if name.startswith("runtime.random.") and name[15:] in RANDOM_DRAWS:  # a draw of a shape (cuda_random.py)
            lines, computed = cuda_random.local_draw(lambda what: self.refuse(original, what), call, name[15:], target,
                                                     local.dtype, local.shape, local.constant,
                                                     f"tape_status[{local.slot}] = 1")
            if computed:  # (its shape is checked, as np.zeros's below)
                self.clamped[(self.function, target)] = local
            return [cst.parse_statement(x) for x in [create, *lines]]
        if name in LOCAL_RANDOM:  # keys: fold_in, split
            lines = [create, f"runtime.kernels.{LOCAL_RANDOM[name]}({target}, {', '.join(args)})"]
            return [cst.parse_statement(x) for x in lines]
        filling, kind = _local_call(name)
        shape_arg = call.args[0].value
        if kind == "size" and not _literal_shape(shape_arg):
            # the size is computed: an example may ask for another, and until the launcher
            # reports it, that thread's indexing is clamped to the array (leave_Subscript)
            self.clamped[(self.function, target)] = local
        shape = f"{_atom(call.args[0].value)}.shape" if kind == "like" else f"runtime.kernels.shape_of({args[0]})"
        lines = [create, f"if {shape} != {local.constant}:\n    tape_status[{local.slot}] = 1\n"]
        if filling == "copy":
            lines.append(f"runtime.kernels.copy_into({target}, {args[0]})")
        elif filling is not None:
            value = args[1] if filling == "fill" else filling
            lines.append(f"runtime.kernels.fill({target}, {value})")
        return [cst.parse_statement(x) for x in lines]

    def _returned(self, updated: cst.SimpleStatementLine):
        """return x in the entry, when it has array results: those are copied into the thread's
        output rows, and the numbers alone are returned, as a flat tuple (numba-cuda returns no
        array but an argument, and a kernel's local arrays end with the function that made them)."""
        value = updated.body[0].value
        lines = [f"{self.result} = {code(value)}"]
        written = set(self.direct.values())  # (rows the code wrote itself)
        lines += [f"runtime.kernels.copy_into({row}, {self.result}{path})" for row, path in self.rows
                  if row not in written]
        numbers = [f"{self.result}{path}" for path in self.number_paths]
        if len(lines) == 1 and not numbers:  # every result is in its row already
            return [cst.parse_statement("return")]
        lines.append(f"return ({', '.join(numbers)},)" if numbers else "return")
        return [cst.parse_statement(x) for x in lines]

    def leave_SimpleStatementLine(self, original, updated: cst.SimpleStatementLine):
        line = self.get_metadata(PositionProvider, original).start.line
        local = self.locals.get(line)
        if local is not None:
            statements = self._local(original, updated, local)
            statements[0] = statements[0].with_changes(leading_lines=updated.leading_lines)
            return cst.FlattenSentinel(statements)
        if (self.function == self.entry and self.rows and len(updated.body) == 1
                and isinstance(updated.body[0], cst.Return) and updated.body[0].value is not None):
            statements = self._returned(updated)
            statements[0] = statements[0].with_changes(leading_lines=updated.leading_lines)
            return cst.FlattenSentinel(statements)
        if _is_dtype_check(updated):
            # The check of a write into an array of integers ran on the host, where the first
            # example runs as Python (backends/cuda.py); every example's array has its dtype
            return cst.RemovalSentinel.REMOVE
        tape = self.tapes.get(line)
        if tape is None:
            statements = self._pushed_or_popped(updated)
            if statements is None:
                return updated
        elif tape.kind == "range":
            statements = [cuda_tapes.check_range(tape, code(updated.body[0].value.args[1].value))]
        else:
            statements = [cuda_tapes.start_while(tape)]
        statements = [cst.parse_statement(x) for x in statements]
        statements[0] = statements[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel(statements)

    def _pushed_or_popped(self, updated: cst.SimpleStatementLine) -> list[str] | None:
        """tape.append(x) and y = tape.pop() of a while loop's tape, as statements."""
        statement = updated.body[0] if len(updated.body) == 1 else None
        call = getattr(statement, "value", None)
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return None
        tape = self.tape_of.get(dotted(call.func.value) or "")
        if tape is None or tape.kind != "while":
            return None
        if isinstance(statement, cst.Expr) and call.func.attr.value == "append":
            return cuda_tapes.push(tape, code(call.args[0].value))
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1 and call.func.attr.value == "pop":
            return cuda_tapes.pop(tape, code(statement.targets[0].target))
        return None


def _constant(name: str, suffix: str, used: set[str]) -> str:
    constant = re.sub(r"\W", "_", name).strip("_").upper() + suffix
    while constant in used:
        constant += "_"
    used.add(constant)
    return constant


def device_functions(source: str, entry: str, tapes: list[Tape], origin_at, locals_: list[Local] = (),
                     rows: list[tuple[str, str]] = (), number_paths: list[str] = (), inline=(),
                     unknown: set[str] = frozenset()) -> Rewritten:
    """The functions of the per-example module that entry reaches, rewritten for numba-cuda
    (module doc). tapes: each runtime.new_tape's size and dtype; locals_: each array the code
    makes, with its shape (both from the probe of the launcher); rows: (parameter, leaf path)
    of entry's array results, which it copies into its thread's output rows (it then returns
    the leaves at number_paths alone, as a flat tuple); unknown: the entry's parameters whose
    values the launcher does not know before launch (a tape's capacity that reads one is not
    known before launch; their shapes it knows).
    Raises S2SError at origin_at(line) (the user's statement that a line of source came from)
    for what a kernel cannot run."""
    module = cst.parse_module(source)
    calls = _calls(module)
    keep = reachable(calls, entry)
    by_line = {t.line: t for t in tapes}
    used: set[str] = set()
    cuda_tapes.name_tapes(tapes, module, entry, set(unknown))
    for slot, local in enumerate(locals_, len(tapes)):
        local.slot, local.constant = slot, _constant(local.name, "_SHAPE", used)
    status = {t.function for t in tapes} | {a.function for a in locals_}
    while True:  # and the functions that call them
        callers = {f for f in keep if calls[f] & status} - status
        if not callers:
            break
        status |= callers
    names = {n.value for n in walk(module) if isinstance(n, cst.Name)}
    result = next(r for r in ("result", *(f"result_{k}" for k in range(1, 1000))) if r not in names)
    direct = _direct_rows(module, entry, list(rows), locals_)
    transformer = _ToCuda(origin_at, set(keep), by_line, status, {a.line: a for a in locals_}, entry, list(rows),
                          result, list(number_paths), direct, set(inline), cuda_tapes.tape_params(tapes, calls, keep))
    rewritten = MetadataWrapper(module).visit(transformer)
    functions = {f.name.value: f for f in rewritten.body if isinstance(f, cst.FunctionDef)}
    # callees first: numba-cuda resolves a device function's callees when it is compiled,
    # and readers meet each function before its use
    body = [functions[name] for name in reversed(keep)]
    # the user's module constants that the generated code names (STEPS = 64), as the cpu module has them
    constants = [stmt for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine)
                 and all(isinstance(part, cst.Assign) for part in stmt.body)]
    text = cuda_tapes.kernel_comments(cst.Module(body=constants + body).code)
    return Rewritten(text, tapes, list(locals_))


def _at_path(node: cst.BaseExpression, path: str) -> str | None:
    """The name at an index path ("[1][0]") of a literal tuple expression, if it is one."""
    for index in re.findall(r"\[(-?\d+)\]", path) if re.fullmatch(r"(\[-?\d+\])*", path) else None:
        if not isinstance(node, cst.Tuple) or not -len(node.elements) <= int(index) < len(node.elements):
            return None
        node = node.elements[int(index)].value
    return node.value if isinstance(node, cst.Name) else None


def _direct_rows(module: cst.Module, entry: str, rows: list[tuple[str, str]], locals_) -> dict:
    """{(entry, local array): row} for each array result of entry that is a local array of its
    own, made once and returned at one path by every return: the thread's output row is that
    array (no local memory, no copy)."""
    function = next((f for f in module.body if isinstance(f, cst.FunctionDef) and f.name.value == entry), None)
    if function is None:
        return {}
    returns = [n.value for n in walk(function) if isinstance(n, cst.Return)]
    assigned: dict[str, int] = {}
    for node in walk(function):
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            assigned[node.target.value] = assigned.get(node.target.value, 0) + 1
    made = {a.name for a in locals_ if a.function == entry}
    found: dict[str, list[str]] = {}
    for row, path in rows:
        names = {_at_path(value, path) if value is not None else None for value in returns}
        if len(names) == 1 and None not in names:
            found.setdefault(names.pop(), []).append(row)
    return {(entry, name): rows_[0] for name, rows_ in found.items()
            if len(rows_) == 1 and name in made and assigned.get(name) == 1}


def local_lines(source: str) -> dict[int, tuple[str, str]]:
    """{line: (function, variable)} of every statement `variable = <call>` in generated source
    (the candidates for a local array: the probe says which of them made one)."""
    return call_assignments(source)


def kernel_module(name: str, description: str, axes: str, header: str, device: Rewritten, kernel: str) -> str:
    """The whole module: header, imports, tape sizes, device functions and the kernel."""
    lines = [f"# Generated by s2s: vmap of {description}, batched over {axes}, as a CUDA kernel",
             "# (numba.cuda): one thread per example in a grid-stride loop; the per-example code runs as",
             "# device functions, with math.* for NumPy's functions of a number."]
    if device.locals:
        lines += ["# Arrays the per-example code makes are cuda.local.array of the shapes below (the first",
                  "# example's), or the thread's row of an output where it returns them; an example that",
                  "# asks for another shape is an error."]
    lines += cuda_tapes.header(device.tapes)
    lines += [line for line in header.splitlines() if line.startswith("#")]
    lines += ["import math", "", "import numba", "import numpy as np", "from numba import cuda", "",
              "from s2s import runtime", ""]
    lines += [f"{a.constant} = {a.shape!r}  # {a.function}: {a.name}, a local array" for a in device.locals]
    return format_source("\n".join(lines) + "\n\n\n" + device.source + "\n\n" + kernel)


def kernel_source(name: str, params: list[str], mapped: list[str], size: str, outs: list[str],
                  call: str, leaf_paths: list[str], status: bool, doc: str, array_outs: tuple = (),
                  tapes: tuple = ()) -> str:
    """The `<name>_kernel` function: each thread runs the examples start, start + stride, ...
    array_outs: the outputs whose leaves are arrays (the call writes their rows, `{rows}` in
    call); the others are numbers, stored from the call's result. tapes: the kernel's tape
    parameters, (capacity, threads) arrays of which each thread passes its column (`{tapes}`
    in call)."""
    taken = set(params) | set(outs) | set(tapes) | {"tape_status", "cuda"}

    def fresh(base: str) -> str:  # the kernel's own names never hide a parameter
        while base in taken:
            base += "_"
        taken.add(base)
        return base

    b, start, stride, result = fresh("b"), fresh("start"), fresh("stride"), fresh("result")
    args = params + outs + list(tapes) + (["tape_status"] if status else [])
    columns = ", ".join(f"{tape}[:, {start}]" for tape in tapes)
    rows = ", ".join(f"{out}[{b}]" for out in outs if out in array_outs)
    lines = ["@cuda.jit", f"def {name}_kernel({', '.join(args)}):", f'    """{doc}"""',
             f"    {start} = cuda.grid(1)", f"    {stride} = cuda.gridsize(1)",
             f"    for {b} in range({start}, {size}, {stride}):",
             f"        {'' if array_outs and len(array_outs) == len(outs) else f'{result} = '}"
             f"{call.replace('{b}', b).replace('{rows}', rows).replace('{tapes}', columns)}"]
    if array_outs:  # the call returns the numbers alone, in order
        numbers = [out for out in outs if out not in array_outs]
        lines += [f"        {out}[{b}] = runtime.kernel_number({out}, {result}[{k}])" for k, out in enumerate(numbers)]
    else:
        lines += [f"        {out}[{b}] = runtime.kernel_number({out}, {result}{path})" for out, path in zip(outs, leaf_paths)]
    return "\n".join(lines) + "\n"
