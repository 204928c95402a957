"""The Numba compiler that generated modules are compiled with: Numba's own, plus two passes.

NumPy's sum of two booleans is their logical or (True + True is True) for its boolean arrays
and its boolean scalars (np.bool_: an element of a boolean array, a comparison of array
elements); Python's, of two bools, is 2. Numba types np.bool_ and bool alike and adds them as
numbers, and where it fuses `m1 + m2` of arrays with the arithmetic around it, `(m1 + m2) * x`
or `np.exp(m1 + m2)`, its loop does the same: True + True is 2. Generated code cannot see
dtypes, nor tell np.bool_ from bool, so the fix is made where Numba knows the types: after
type inference, and before the rewrites that fuse array expressions (and the parfor passes),
a sum typed as two booleans becomes `|`, the same logical or, where one side is an array or
a NumPy scalar (NumPy's own: read from an array, or computed from one; numpy_scalars). A sum of
two Python bools (arguments, constants, comparisons of Python numbers) stays 2.

The second pass refuses what Numba cannot compute as NumPy does: arithmetic of 8- and 16-bit
integers whose NumPy result wraps at that width, and `-` of NumPy's booleans, which NumPy
refuses (UnlikeNumPyArithmetic).
"""

from __future__ import annotations

import operator

import numpy as np
from numba.core import ir, types
from numba.core.errors import TypingError
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.typed_passes import NopythonTypeInference

_AS_OR = {("binop", operator.add): operator.or_, ("inplace_binop", operator.iadd): operator.ior}


def _boolean(t) -> bool:
    return t == types.boolean or isinstance(t, types.Array) and t.dtype == types.boolean


def _numpy_call(fnty) -> bool:
    """A call whose number result is a NumPy scalar: a NumPy function, an s2s runtime helper
    (NumPy's semantics), or a method of an array (x.sum())."""
    if isinstance(fnty, types.BoundFunction):
        return isinstance(fnty.this, types.Array)
    module = getattr(getattr(fnty, "typing_key", None), "__module__", None) or ""
    return module.split(".")[0] == "numpy" or module.startswith("s2s.runtime")


def numpy_scalars(func_ir, typemap) -> set[str]:
    """Variables that hold a NumPy scalar where the code runs as NumPy: an element of an array,
    a NumPy function's number, and arithmetic, comparisons and copies of them (a NumPy scalar
    with a Python number is a NumPy scalar), to a fixpoint over every definition of a name."""
    assigns = [stmt for block in func_ir.blocks.values() for stmt in block.body if isinstance(stmt, ir.Assign)]
    found: set[str] = set()
    while True:
        more = {stmt.target.name for stmt in assigns
                if stmt.target.name not in found and _makes_numpy_scalar(stmt.value, typemap, found)}
        if not more:
            return found
        found |= more


def _makes_numpy_scalar(value, typemap, found) -> bool:
    if isinstance(value, ir.Var):
        return value.name in found
    if not isinstance(value, ir.Expr):
        return False  # (an argument, a constant, a global)
    if value.op in ("getitem", "static_getitem"):
        return isinstance(typemap[value.value.name], types.Array)
    if value.op in ("binop", "inplace_binop"):
        return value.lhs.name in found or value.rhs.name in found
    if value.op == "unary":
        return value.fn is not operator.not_ and value.value.name in found  # (`not` is a Python bool)
    if value.op in ("cast", "phi"):
        return any(v.name in found for v in value.list_vars())
    if value.op == "call":
        return _numpy_call(typemap[value.func.name])
    return False


@register_pass(mutates_CFG=False, analysis_only=False)
class BooleanSumsAsOr(FunctionPass):
    """a + b (and a += b) of two booleans of NumPy's -> a | b, in the typed IR."""

    _name = "s2s_boolean_sums_as_or"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state) -> bool:
        changed = False
        numpy_values = None
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                expr = stmt.value if isinstance(stmt, ir.Assign) else None
                if not isinstance(expr, ir.Expr) or expr.op not in ("binop", "inplace_binop"):
                    continue
                replacement = _AS_OR.get((expr.op, expr.fn))
                sides = (state.typemap[expr.lhs.name], state.typemap[expr.rhs.name])
                if replacement is None or not all(map(_boolean, sides)):
                    continue
                if not any(isinstance(t, types.Array) for t in sides):
                    if numpy_values is None:
                        numpy_values = numpy_scalars(state.func_ir, state.typemap)
                    if expr.lhs.name not in numpy_values and expr.rhs.name not in numpy_values:
                        continue  # two Python bools: 2
                del state.calltypes[expr]
                expr.fn = replacement
                if expr.op == "inplace_binop":
                    expr.immutable_fn = operator.or_
                state.calltypes[expr] = state.typingctx.resolve_function_type(replacement, sides, {})
                changed = True
        return changed


# Arithmetic whose NumPy result can be an integer of the operands' narrow width (it wraps there).
_INTEGER_ARITHMETIC = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//",
                       operator.mod: "%", operator.pow: "**", operator.lshift: "<<", operator.rshift: ">>",
                       operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.neg: "-",
                       operator.invert: "~", operator.pos: "+", operator.iadd: "+=", operator.isub: "-=",
                       operator.imul: "*=", operator.ifloordiv: "//=", operator.imod: "%=", operator.ipow: "**=",
                       operator.ilshift: "<<=", operator.irshift: ">>=", operator.iand: "&=", operator.ior: "|=",
                       operator.ixor: "^="}


_COMPARISONS = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne, operator.not_,
                operator.contains}


# Python's numbers as NumPy 2 sees them (NEP 50): "weak", they take the other operand's type.
_WEAK = {"bool": True, "int": 0, "float": 0.0}
_WEAK_OF_KIND = {"b": "bool", "i": "int", "u": "int", "f": "float"}


def _kind_of_type(t):
    """What a value of Numba type t is where the code runs as NumPy: an array's dtype, the dtype
    of a scalar narrower than 64 bits, or a Python number ("int", "float", "bool"); None where
    it is none of these. A 64-bit number of unknown origin counts as Python's: with a narrow integer
    it stays narrow, so it is the cautious guess."""
    if isinstance(t, types.Array):
        return np.dtype(str(t.dtype)) if isinstance(t.dtype, (types.Number, types.Boolean)) else None
    if isinstance(t, types.Boolean):
        return "bool"
    if isinstance(t, types.Integer):
        return "int" if t.bitwidth == 64 else np.dtype(str(t))
    if isinstance(t, types.Float):
        return "float" if t.bitwidth == 64 else np.dtype(str(t))
    return None


_SUBTRACTIONS = {operator.sub, operator.isub, operator.neg}


def _numpy_bool(kind) -> bool:
    """NumPy's boolean (a boolean array's elements), not Python's, which is "bool" here (and
    which np.dtype(np.bool_) == "bool" would take for it)."""
    return isinstance(kind, np.dtype) and kind.kind == "b"


def _narrow(kind) -> bool:
    """An 8- or 16-bit integer: wrapping at its width is an everyday event (uint8 image data).
    32-bit integers (int32 indexes) are left as 64-bit ones are: they differ beyond 2^31."""
    return isinstance(kind, np.dtype) and kind.kind in "iu" and kind.itemsize < 4


def _combine(op, left: set, right: set) -> set:
    if op in _COMPARISONS:
        return {"bool"}
    extra = (0.0,) if op in (operator.truediv, operator.itruediv) else ()
    out = set()
    for a in left:
        for b in right:
            python = isinstance(a, str) and isinstance(b, str)  # (a dtype may == "int": compare types)
            kind = np.result_type(_WEAK[a] if isinstance(a, str) else a, _WEAK[b] if isinstance(b, str) else b, *extra)
            out.add(_WEAK_OF_KIND.get(kind.kind, kind) if python else kind)
    return out


def numpy_kinds(func_ir, typemap) -> dict[str, set]:
    """The types each variable can have where the code runs as NumPy (NEP 50): a set of dtypes
    and Python numbers, to a fixpoint over every definition of a name. In `total = 0` and then
    `total = total + u[i]`, total is a Python int and then np.uint8, where Numba types it int64
    throughout."""
    assigns = [stmt for block in func_ir.blocks.values() for stmt in block.body if isinstance(stmt, ir.Assign)]
    kinds: dict[str, set] = {}
    while True:
        changed = False
        for stmt in assigns:
            found = _kinds_of(stmt.value, typemap.get(stmt.target.name), typemap, kinds)
            known = kinds.setdefault(stmt.target.name, set())
            if not found <= known:
                known |= found
                changed = True
        if not changed:
            return kinds


def _kinds_of(value, result_type, typemap, kinds) -> set:
    def of(var):
        return kinds.get(var.name, set())

    if isinstance(value, ir.Var):
        return of(value)
    if isinstance(value, ir.Const):
        constant = value.value
        if isinstance(constant, np.generic):
            return {np.dtype(type(constant))}
        weak = "bool" if isinstance(constant, bool) else "int" if isinstance(constant, int) else (
            "float" if isinstance(constant, float) else None)
        return {weak} if weak else set()
    if isinstance(value, ir.Expr):
        if value.op in ("binop", "inplace_binop"):
            return _combine(value.fn, of(value.lhs), of(value.rhs))
        if value.op == "unary":
            return {"bool"} if value.fn is operator.not_ else of(value.value)
        if value.op in ("cast", "phi"):
            return set().union(*(of(v) for v in value.list_vars()))
        if value.op in ("getitem", "static_getitem") and isinstance(typemap[value.value.name], types.Array):
            return {_kind_of_type(typemap[value.value.name])} - {None}  # (an element is NumPy's: its dtype)
        if value.op == "call":
            builtin = getattr(typemap[value.func.name], "typing_key", None)
            if builtin in (min, max, abs):
                return set().union(*(of(v) for v in value.args))  # (Python's: one of the arguments, as it is)
            if builtin in (int, float, bool):  # a Python number (Numba keeps int(np.uint8)'s uint8)
                return {builtin.__name__}
    kind = _kind_of_type(result_type)  # an argument, an element of an array, a call's result, ...
    return set() if kind is None else {kind}


@register_pass(mutates_CFG=False, analysis_only=True)
class UnlikeNumPyArithmetic(FunctionPass):
    """Refuses arithmetic that NumPy computes otherwise, or not at all.

    NumPy 2 computes `u - 3` of a uint8 array in uint8 and wraps at 8 bits (1 - 3 is 254), and so
    the sum of two int8 numbers or arrays; Numba computes both in int64 (-2), also inside its
    fused loops where the types it infers say int8. Numba cannot be made to wrap there, so
    arithmetic whose NumPy result can be an 8- or 16-bit integer is refused, with the conversion
    that makes both agree. NumPy raises TypeError for `-` of its booleans (`m[i] - m[j]`, `-m`),
    which Numba computes as integers: refused too. Only functions with an 8- or 16-bit integer
    or a boolean array among their types are looked at."""

    _name = "s2s_unlike_numpy_arithmetic"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state) -> bool:
        if not any(_narrow(kind) or _numpy_bool(kind) for kind in map(_kind_of_type, state.typemap.values())):
            return False
        kinds = None
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                expr = stmt.value if isinstance(stmt, ir.Assign) else None
                if not isinstance(expr, ir.Expr) or expr.op not in ("binop", "inplace_binop", "unary"):
                    continue
                if expr.fn not in _INTEGER_ARITHMETIC:
                    continue
                if kinds is None:
                    kinds = numpy_kinds(state.func_ir, state.typemap)
                    uses = _uses(state.func_ir)
                if expr.fn in _SUBTRACTIONS and any(map(_numpy_bool, kinds.get(stmt.target.name, ()))):
                    raise TypingError(
                        f"s2s: `{_INTEGER_ARITHMETIC[expr.fn]}` of NumPy booleans: NumPy refuses it (TypeError), "
                        "where Numba would compute integers; use `^` (np.logical_xor) for a difference of "
                        "booleans and `~` for a negation, or convert first: m.astype(np.int64)", loc=stmt.loc)
                narrow = sorted({str(k) for k in kinds.get(stmt.target.name, ()) if _narrow(k)})
                if narrow and not _wrapped_by_its_store(expr, stmt.target.name, narrow, state.typemap, uses):
                    raise TypingError(
                        f"s2s: `{_INTEGER_ARITHMETIC[expr.fn]}` of {narrow[0]} numbers: NumPy computes it in "
                        f"{narrow[0]} and wraps at {8 * np.dtype(narrow[0]).itemsize} bits, where Numba computes "
                        f"it in int64 (s2s.jit would differ where it overflows); convert first: a.astype(np.int64), "
                        f"or a.astype(np.float64) for data", loc=stmt.loc)
        return False


def _uses(func_ir) -> dict[str, list]:
    """The statements that read each variable."""
    uses: dict[str, list] = {}
    for block in func_ir.blocks.values():
        for stmt in block.body:
            for var in stmt.list_vars():
                if not (isinstance(stmt, ir.Assign) and var is stmt.target):
                    uses.setdefault(var.name, []).append(stmt)
    return uses


def _wrapped_by_its_store(expr, name: str, narrow: list[str], typemap, uses) -> bool:
    """Does the result go only into memory of NumPy's narrow dtype, whose store wraps it as NumPy
    would (integer arithmetic is modulo 2^bits)? `w += u` of uint8 arrays, `v = a + a` of int8
    arrays, and `w[i] = w[i] + 1`, which Numba computes in int64 and stores in uint8."""
    if len(narrow) != 1:
        return False
    dtype = np.dtype(narrow[0])

    def holds(t) -> bool:
        return isinstance(t, types.Array) and str(t.dtype) == str(dtype)

    if expr.op == "inplace_binop" and holds(typemap[expr.lhs.name]):
        return True  # (an array updated in place: its elements are stored in its dtype)
    if holds(typemap[name]) and not name.startswith("$"):
        # an array Numba makes in NumPy's dtype (the sum of two uint8 arrays) and keeps under a
        # name: stored, so wrapped. Numba fuses a temporary ($: Var.is_temp) into the array
        # expression around it (RewriteArrayExprs), whose loop computes in int64: `(a + a) * x`.
        return True
    readers = uses.get(name, [])
    return bool(readers) and all(isinstance(stmt, (ir.SetItem, ir.StaticSetItem)) and stmt.value.name == name
                                 and holds(typemap[stmt.target.name]) for stmt in readers)


class GeneratedCodeCompiler(CompilerBase):
    """Numba's nopython pipeline with BooleanSumsAsOr and UnlikeNumPyArithmetic after type
    inference."""

    def define_pipelines(self):
        manager = DefaultPassBuilder.define_nopython_pipeline(self.state)
        manager.add_pass_after(BooleanSumsAsOr, NopythonTypeInference)
        manager.add_pass_after(UnlikeNumPyArithmetic, BooleanSumsAsOr)
        manager.finalize()
        return [manager]
