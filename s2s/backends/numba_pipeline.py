"""The Numba compiler that generated modules are compiled with: Numba's own, plus one pass.

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
"""

from __future__ import annotations

import operator

from numba.core import ir, types
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


class GeneratedCodeCompiler(CompilerBase):
    """Numba's nopython pipeline with BooleanSumsAsOr after type inference."""

    def define_pipelines(self):
        manager = DefaultPassBuilder.define_nopython_pipeline(self.state)
        manager.add_pass_after(BooleanSumsAsOr, NopythonTypeInference)
        manager.finalize()
        return [manager]
