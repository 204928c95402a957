"""Functions around a generated module's entry: grad's wrapper of the vjp, and compiled loops for
the Jacobian transforms, where one call computes every column (jacfwd), row (jacrev) or row and
column (hessian, forward over reverse)."""

from __future__ import annotations

import ast

from ..codegen.emit import name
from ..ir import nodes as ir


def grad_wrapper(ename: str, entry: ir.Function, argnums: tuple[int, ...], value_skipped: bool) -> ast.FunctionDef:
    """`<name>_value_and_grad(params)`, which calls the vjp with the seed 1.0; `<name>_grad`, of the
    gradient alone, where the vjp leaves the value out (value_skipped)."""
    params = entry.params
    call = ast.Call(name(f"{ename}_vjp"), [name(p) for p in params] + [ast.Constant(1.0)], [])
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    wrt = ", ".join(params[k] for k in argnums)
    if value_skipped:
        doc = ast.Expr(ast.Constant(f"Gradient of {entry.name} with respect to {wrt}."))
        call = ast.Subscript(call, ast.Constant(1), ast.Load())
        return ast.FunctionDef(f"{ename}_grad", args, [doc, ast.Return(call)], [], None, lineno=0)
    doc = ast.Expr(ast.Constant(f"Value and gradient of {entry.name} with respect to {wrt}."))
    return ast.FunctionDef(f"{ename}_value_and_grad", args, [doc, ast.Return(call)], [], None, lineno=0)


def columns_driver(fname: str, params: list[str], mode: str, argnum: int = 0,
                   has_aux: bool = False, jvp_name: str | None = None) -> ast.FunctionDef:
    """A loop over a stack of tangents (jvp) or cotangents (vjp), for jacfwd and jacrev:
    compiled with the rest of the module, so a Jacobian is one call, not one per column. The
    columns are a batch (runtime.prange), compiled without parallel=True for now: a parfor on
    every Jacobian adds to its first-call compile time, which is not measured against the gain.
    jvp_name: the forward mode with respect to params[argnum] alone (mode "jvp")."""
    fresh = ir.Names(params).fresh
    stack = fresh("tangents" if mode == "jvp" else "cotangents")
    count, first, out, row = fresh("count"), fresh("first"), fresh("out"), fresh("row")
    args = ", ".join(params)
    if mode == "jvp":
        def call(index: str) -> str:
            return f"{jvp_name}({args}, {stack}[{index}])[1]" + ("[0]" if has_aux else "")

        header = f"def {fname}_jvp_columns_{argnum}({args}, {stack}):\n"
        doc = f"Tangents of {fname} for each row of {stack}, a stack of tangents of {params[argnum]}."
        if has_aux:
            doc = doc[:-1] + " (of its first result; the second is auxiliary)."
    else:
        def call(index: str) -> str:
            return f"{fname}_vjp({args}, {stack}[{index}])[1][0]"

        header = f"def {fname}_vjp_rows({args}, {stack}):\n"
        doc = f"Adjoints of {params[argnum]} for each row of {stack}, a stack of output cotangents."
    text = (
        header
        + f'    """{doc}"""\n'
        + f"    {count} = {stack}.shape[0]\n"
        + f"    {first} = {call('0')}\n"
        + f"    {out} = np.empty(({count},) + np.shape({first}))\n"
        + f"    {out}[0] = {first}\n"
        + f"    for {row} in runtime.prange(1, {count}):\n"
        + f"        {out}[{row}] = {call(row)}\n"
        + f"    return {out}\n"
    )
    return ast.parse(text).body[0]


def second_order_driver(vjp_name: str, jvp_name: str, params: list[str], argnum: int) -> ast.FunctionDef:
    """Forward over reverse: for each output cotangent (row) and each tangent of one argument
    (column), the derivative of the adjoint; compiled with the module, one call in all.
    jvp_name: the forward mode of vjp_name with respect to params[argnum] alone."""
    fresh = ir.Names(params).fresh
    primal = params[:-1]
    cot, tan, rows, cols, first, out, r, c = (fresh(n) for n in (
        "cotangents", "tangents", "rows", "cols", "first", "out", "r", "c"))

    def call(ri: str, ci: str) -> str:
        return f"{jvp_name}({', '.join(primal)}, {cot}[{ri}], {tan}[{ci}])[1][1][0]"

    text = (
        f"def {vjp_name}_second_order_{argnum}({', '.join(primal)}, {cot}, {tan}):\n"
        f'    """d/d{primal[argnum]} of the adjoint, for each row of {cot} and of {tan}."""\n'
        f"    {rows} = {cot}.shape[0]\n"
        f"    {cols} = {tan}.shape[0]\n"
        f"    {first} = {call('0', '0')}\n"
        f"    {out} = np.empty(({rows}, {cols}) + np.shape({first}))\n"
        f"    for {r} in range({rows}):\n"
        f"        for {c} in range({cols}):\n"
        f"            {out}[{r}, {c}] = {call(r, c)}\n"
        f"    return {out}\n"
    )
    return ast.parse(text).body[0]
