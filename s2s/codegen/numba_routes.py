"""A pass over the finished module: NumPy calls that numba.njit rejects go to runtime helpers."""

from __future__ import annotations

import ast

from .emit import name

# NumPy that numba.njit rejects, and the runtime helper generated code calls instead (the
# helper is NumPy itself on the python backend). Reductions are only rerouted when they
# take an axis, keepdims or ddof: Numba compiles np.sum(x) as it is.
REDUCTIONS = {"sum": "reduce_sum", "mean": "reduce_mean", "max": "reduce_max", "amax": "reduce_max",
              "min": "reduce_min", "amin": "reduce_min", "prod": "reduce_prod", "var": "reduce_var",
              "std": "reduce_std"}
ALWAYS_REROUTED = {"squeeze": "squeeze", "inner": "inner"}


class RouteNumbaRejects(ast.NodeTransformer):
    """np.max(x, axis=1, keepdims=True) -> runtime.reduce_max(x, axis=1, keepdims=True).

    Done on the finished module, so that the user's own calls and the calls that
    derivative templates write (np.sum(x_dot, axis=axis, keepdims=keepdims)) agree.
    """

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "np"):
            return node
        helper = ALWAYS_REROUTED.get(func.attr)
        if helper is None and func.attr in REDUCTIONS and (len(node.args) > 1 or node.keywords):
            helper = REDUCTIONS[func.attr]
        if helper is not None:
            node.func = ast.Attribute(name("runtime"), helper, ast.Load())
        return node


def route_numba_rejects(body: list[ast.stmt]) -> list[ast.stmt]:
    return RouteNumbaRejects().visit(ast.Module(body=body, type_ignores=[])).body
