"""The small core language that every transform works on.

frontend/lower.py lowers a user's function into it: one operation per statement (ANF),
only structured control flow (if / counted for / while; no break, continue or early
return), and every statement keeps the Origin of the user statement it came from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Union

from ..errors import Origin


@dataclass(frozen=True)
class Name:
    id: str


@dataclass(frozen=True)
class Const:
    value: Any


Atom = Union[Name, Const]

# An array's attributes that describe it (its shape and dtype), not its values: reading one
# reads no value, and no derivative flows through it.
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype"})


@dataclass(frozen=True)
class Slice:
    lower: Atom | None
    upper: Atom | None
    step: Atom | None


@dataclass(frozen=True)
class NewAxis:
    pass


@dataclass(frozen=True)
class EllipsisIndex:
    pass


IndexItem = Union[Atom, Slice, NewAxis, EllipsisIndex]


@dataclass(frozen=True)
class Index:
    """x[items]; `is_tuple` keeps x[i, j] apart from x[(i, j)] only for printing."""

    items: tuple[IndexItem, ...]

    def atoms(self) -> list[Atom]:
        out: list[Atom] = []
        for item in self.items:
            if isinstance(item, Slice):
                out += [a for a in (item.lower, item.upper, item.step) if a is not None]
            elif isinstance(item, (Name, Const)):
                out.append(item)
        return out

    def is_basic_int(self) -> bool:
        """Only integer constants and slices: a write never repeats an element."""
        return all(
            isinstance(item, (Slice, NewAxis, EllipsisIndex))
            or (isinstance(item, Const) and isinstance(item.value, int))
            for item in self.items
        )


# ---- right-hand sides -------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """fn(*args, **kwargs). fn is the real object: operator.add, np.sin, a user function."""

    fn: Any
    args: tuple[Atom, ...]
    kwargs: tuple[tuple[str, Atom], ...] = ()


@dataclass(frozen=True)
class Subscript:
    value: Atom
    index: Index


@dataclass(frozen=True)
class Attribute:
    """A non-differentiable attribute (.shape, .ndim, .size, .dtype) or a namedtuple field."""

    value: Atom
    attr: str


@dataclass(frozen=True)
class Build:
    """A tuple, list or dict display; dict keys are constants."""

    kind: str  # "tuple" | "list" | "dict"
    elts: tuple[Atom, ...]
    keys: tuple[Any, ...] = ()


class TryProbe:
    """A try statement whose path the values decide, as a function of the generated module runs
    it on them (runtime.try_outcome calls it; codegen/emit.py writes it). Its parameters are the
    variables the try body reads; `statements` holds each statement of the body, lowered on its
    own; `handlers` each except clause in order, as (its exception classes as generated code
    names them, None for a bare except; whether it only re-raises); `errstate` the np.errstate settings around the try. It
    returns how many statements ran times len(handlers) plus the handler that caught, or
    `completed` where none raised. Not a dataclass: renaming the caller's variables (ir.rename)
    must not reach the names of its body, which its parameters bind."""

    def __init__(self, name: str, params: tuple, statements: tuple, handlers: tuple, errstate: tuple,
                 counter: str, origin: Origin, source: str | None = None):
        self.name, self.params, self.statements, self.handlers = name, params, statements, handlers
        self.errstate, self.counter, self.origin = errstate, counter, origin
        self.source = source  # (of one that generated code holds, read again: its text, written as it is)

    @classmethod
    def written(cls, function, origin: Origin) -> "TryProbe":
        """The probe a generated module holds (read again, for second order), by its source."""
        import inspect
        import textwrap

        return cls(function.__name__, (), (), (), (), "", origin, textwrap.dedent(inspect.getsource(function)))

    def __repr__(self) -> str:
        return f"TryProbe({self.name})"

    @property
    def completed(self) -> int:
        """The outcome where the body ran to its end (of a probe made from a try statement)."""
        return len(self.statements) * len(self.handlers)


# ---- statements -------------------------------------------------------------------


@dataclass
class Assign:
    """target = value, or a, b = value (unpacking) when targets has several names."""

    targets: tuple[str, ...]
    value: Expr
    origin: Origin
    inplace: bool = False  # from `x op= v`: NumPy updates an array x in place
    # set by analysis for `x op= v`: (other, message) for each other live name that may share
    # x's memory; run time refuses where it does (other None: where x is an array at all)
    alias_check: tuple[tuple[str | None, str], ...] = ()

    @property
    def unpack(self) -> bool:
        return len(self.targets) != 1


@dataclass
class SetItem:
    """base[index] = value (op None), base[index] += value (op "+"), -= (op "-")."""

    base: str
    index: Index
    value: Atom
    op: str | None
    origin: Origin
    # set by analysis: (other, message) for each other live name that may be a view of base
    # (`c = base[1]`: a row of a 2-d base, a number from a 1-d one); run time refuses where it is
    alias_check: tuple[tuple[str, str], ...] = ()
    # set by analysis where value carries a derivative and base may be an argument's array,
    # whose dtype the transform does not know: run time refuses (this message) where it holds
    # integers or bools, which cut value to a piecewise constant
    dtype_check: str = ""
    # `base[index] *= value` (and /=, **=): value is `base[index] * value`; where base is a list or
    # dict holding an array there, Python updated that array in place first
    augmented: bool = False


@dataclass(frozen=True)
class Pop:
    """tape.pop(): the last value pushed (tapes appear when generated code is transformed again)."""

    tape: str


Expr = Union[Name, Const, Call, Subscript, Attribute, Build, Pop]


@dataclass
class Push:
    """tape.append(value)."""

    tape: str
    value: Atom
    origin: Origin


@dataclass
class ExprStmt:
    """A call kept for its effect: print, or a runtime helper of generated code that updates
    its first argument in place (mutates names it)."""

    value: Call
    origin: Origin
    mutates: str | None = None


@dataclass
class If:
    """if test: body else: orelse; `negated` prints `if not test:`."""

    test: Atom
    body: list
    orelse: list
    origin: Origin
    negated: bool = False


@dataclass
class For:
    """for var in range(start, stop, step)."""

    var: str
    start: Atom
    stop: Atom
    step: Atom
    body: list
    origin: Origin


@dataclass
class While:
    """cond; while test: body; cond  (cond computes test every iteration)."""

    cond: list
    test: Atom
    body: list
    origin: Origin


@dataclass
class Return:
    value: Atom
    origin: Origin


# Only before control-flow lowering:
@dataclass
class Break:
    origin: Origin


@dataclass
class Continue:
    origin: Origin


Stmt = Union[Assign, SetItem, ExprStmt, If, For, While, Return, Break, Continue]


@dataclass
class Function:
    """A normalized user function: params, body ending in exactly one Return."""

    name: str
    params: list[str]
    body: list
    origin: Origin
    filename: str
    source_hash: str
    callees: dict[int, Any] = field(default_factory=dict)  # id -> the Python function called
    constants: dict[str, Any] = field(default_factory=dict)  # module constants it reads
    inlined: dict[str, Any] = field(default_factory=dict)  # module attributes it inlines (Config.SCALE)
    references: list = field(default_factory=list)  # (dotted name, module, qualname) of callees
    param_writes: dict = field(default_factory=dict)  # parameter -> how it is written in place
    call_sites: list = field(default_factory=list)  # frontend.argument_writes.CallSite of user calls
    # the user functions whose bodies are written out in this one's (frontend/writing_calls.py):
    # what it was made from, for the cache, besides its callees
    written_out: list = field(default_factory=list)
    # {id(callee): {position: "whole" | "element"}}: which arguments a callee's result may share
    # (frontend/result_views.py); a callee missing here may share any argument whole
    callee_results: dict = field(default_factory=dict)
    result_views: dict = field(default_factory=dict)  # this function's own such summary
    # {a name s2s gave a variable of the user's: the user's name}, for messages: an inlined
    # s2s.lax body's `v` becomes v_2 where the function already has a v
    display: dict = field(default_factory=dict)
    # {parameter: value} written in as constants: the call's static values (frontend/static_arguments.py)
    static: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=dict)  # {parameter: the type of its argument}, where isinstance reads it

    @property
    def result(self) -> Atom:
        last = self.body[-1]
        assert isinstance(last, Return)
        return last.value


class Names:
    """Fresh, deterministic names that never clash with the ones taken: base, base_2, ..."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.counter = 0

    def fresh(self, base: str) -> str:
        candidate, k = base, 1
        while candidate in self.taken:
            k += 1
            candidate = f"{base}_{k}"
        self.taken.add(candidate)
        return candidate

    def temp(self) -> str:
        """_t1, _t2, ...: the intermediate values of normalized code."""
        while True:
            self.counter += 1
            candidate = f"_t{self.counter}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate


def child_blocks(stmt) -> list[list]:
    if isinstance(stmt, If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, For):
        return [stmt.body]
    if isinstance(stmt, While):
        return [stmt.cond, stmt.body]
    return []


def walk(block: list):
    """Every statement of a block, nested ones included, in program order."""
    for stmt in block:
        yield stmt
        for child in child_blocks(stmt):
            yield from walk(child)


def names_in(expr) -> list[str]:
    """The variables an expression (or atom, or index) reads."""
    if isinstance(expr, Name):
        return [expr.id]
    if isinstance(expr, Const) or expr is None:
        return []
    if isinstance(expr, Call):
        out = []
        for a in expr.args:
            out += names_in(a)
        for _, a in expr.kwargs:
            out += names_in(a)
        return out
    if isinstance(expr, Subscript):
        return names_in(expr.value) + [a.id for a in expr.index.atoms() if isinstance(a, Name)]
    if isinstance(expr, Attribute):
        return names_in(expr.value)
    if isinstance(expr, Build):
        return [a.id for a in expr.elts if isinstance(a, Name)]
    if isinstance(expr, Index):
        return [a.id for a in expr.atoms() if isinstance(a, Name)]
    if isinstance(expr, Pop):
        return [expr.tape]
    raise TypeError(expr)


def stmt_reads(stmt) -> list[str]:
    """Variables read by the statement itself (not by nested blocks)."""
    if isinstance(stmt, Assign):
        return names_in(stmt.value)
    if isinstance(stmt, SetItem):
        return [stmt.base] + names_in(stmt.index) + names_in(stmt.value)
    if isinstance(stmt, ExprStmt):
        return names_in(stmt.value)
    if isinstance(stmt, Push):
        return [stmt.tape] + names_in(stmt.value)
    if isinstance(stmt, If):
        return names_in(stmt.test)
    if isinstance(stmt, For):
        return names_in(stmt.start) + names_in(stmt.stop) + names_in(stmt.step)
    if isinstance(stmt, While):
        return names_in(stmt.test)
    if isinstance(stmt, Return):
        return names_in(stmt.value)
    return []


def stmt_writes(stmt) -> list[str]:
    """Variables the statement itself binds or modifies in place."""
    if isinstance(stmt, Assign):
        return list(stmt.targets)
    if isinstance(stmt, SetItem):
        return [stmt.base]
    if isinstance(stmt, Push):
        return [stmt.tape]
    if isinstance(stmt, ExprStmt) and stmt.mutates:
        return [stmt.mutates]
    if isinstance(stmt, For):
        return [stmt.var]
    return []


# Fields of statements that hold variable names as strings (the rest hold atoms and blocks).
_NAME_FIELDS = {"targets", "base", "var", "tape", "mutates"}


def rename(node, mapping: dict[str, str]):
    """node (a statement, expression, block or function body) with variables renamed."""
    if not mapping:
        return node
    if isinstance(node, Name):
        return Name(mapping.get(node.id, node.id))
    if isinstance(node, list):
        return [rename(item, mapping) for item in node]
    if isinstance(node, tuple):
        return tuple(rename(item, mapping) for item in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if f.name in _NAME_FIELDS:
            if isinstance(value, str):
                changes[f.name] = mapping.get(value, value)
            elif isinstance(value, tuple):
                changes[f.name] = tuple(mapping.get(v, v) if isinstance(v, str) else v for v in value)
        elif isinstance(value, (Name, list, tuple)) or dataclasses.is_dataclass(value):
            changes[f.name] = rename(value, mapping)
    return dataclasses.replace(node, **changes) if changes else node
