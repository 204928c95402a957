"""The Numba compiler that generated modules are compiled with: Numba's own, plus one pass.

NumPy's sum of two boolean arrays is their logical or (True + True is True). Numba computes
`m1 + m2` right by itself, but where it fuses the sum with the arithmetic around it,
`(m1 + m2) * x` or `np.exp(m1 + m2)`, its loop adds the elements as numbers, and True + True
is 2; so does `k += m2` under parallel=True. Generated code cannot see the dtypes of its
arguments, so the fix is made where Numba knows them: after type inference, and before the
rewrites that fuse array expressions (and the parfor passes), a sum typed as two booleans of
which one is an array becomes `|`, which is the same logical or for booleans and which Numba
computes as one in its loops too. A sum of two boolean numbers is left as Python's, 2.
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


@register_pass(mutates_CFG=False, analysis_only=False)
class BooleanSumsAsOr(FunctionPass):
    """m1 + m2 (and m1 += m2) of boolean arrays -> m1 | m2, in the typed IR."""

    _name = "s2s_boolean_sums_as_or"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state) -> bool:
        changed = False
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                expr = stmt.value if isinstance(stmt, ir.Assign) else None
                if not isinstance(expr, ir.Expr) or expr.op not in ("binop", "inplace_binop"):
                    continue
                replacement = _AS_OR.get((expr.op, expr.fn))
                sides = (state.typemap[expr.lhs.name], state.typemap[expr.rhs.name])
                if replacement is None or not all(map(_boolean, sides)) \
                        or not any(isinstance(t, types.Array) for t in sides):
                    continue
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
