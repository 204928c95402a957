"""Destination passing for the loop over examples of a compiled vmap (transforms/batching.py).

The driver of `s2s.jit(s2s.vmap(s2s.grad(f)))` stacks each example's gradient into a row of
arrays it allocated. Called as it is, the per-example vjp allocates its gradient, returns it in
a tuple, and the driver copies it into the row. `<vjp>_into` is the vjp with one more parameter
per output leaf, the row, which it writes instead of returning:

    def loss_vjp_into(w, x, y, out_bar, w_bar_out):
        if w_bar_out.shape != w.shape:
            return True  # the driver raises (runtime.check_batch)
        ...
        w_bar_out[:] = w_bar
        return False

A leaf is a gradient with respect to an array parameter, so it has that parameter's shape; the
row is checked against it on entry, and the elementwise loops (loops.py) may then take the row
to have that parameter's length (its fact ("row", parameter)) and compute the gradient straight
into it. The row is a fresh array nothing else refers to: the driver allocated it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from ..codegen.format import format_source
from .loops import loop_function

_MARKER = "__s2s_comment_{}__"  # (the markers of codegen/emit.py, which the passes know)
_MARKED = re.compile(r"^(\s*)__s2s_comment_(\d+)__$", re.M)


def _index_path(path: str) -> list[int] | None:
    """[1, 0] of "[1][0]"; None for a path with keys."""
    parts = re.findall(r"\[([^\]]*)\]", path)
    if "".join(f"[{p}]" for p in parts) != path or not all(p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


def _pure(node) -> bool:
    """Names, constants and tuples of them: a returned part that may be left out."""
    return isinstance(node, (ast.Name, ast.Constant)) or isinstance(node, ast.Tuple) and all(map(_pure, node.elts))


def _marked_text(text: str, comments: list[str]) -> str:
    """The function's text with each comment line turned into a marker statement."""
    lines = text.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            line = lines[row - 1]
            if line[:col].strip() == "":
                comments.append(token.string[1:].strip())
                lines[row - 1] = line[:col] + _MARKER.format(len(comments) - 1)
    return "\n".join(lines) + "\n"


def into_source(source: str, entry: str, leaves: list[tuple[str, str]], facts: dict) -> tuple[str, str] | None:
    """The module `source` with `<entry>_into` appended, and that name; None where the entry's
    return value does not show its leaves (a literal tuple ending in the leaves).

    leaves: (path into the entry's return value, the parameter whose shape the leaf has) per
    output leaf, in the driver's order; facts: the entry's parameters' (shapes.argument_facts)."""
    module = ast.parse(source)
    found = [s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == entry]
    if len(found) != 1:
        return None
    lines = source.splitlines()
    comments: list[str] = []
    function = ast.parse(_marked_text("\n".join(lines[found[0].lineno - 1:found[0].end_lineno]), comments)).body[0]
    body = function.body
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None or sum(
            isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for n in ast.walk(function)) != 1:
        return None
    params = [a.arg for a in function.args.args]
    if function.args.vararg or function.args.kwarg or function.args.kwonlyargs or function.decorator_list:
        return None
    returned = body[-1].value
    values = []
    for path, like in leaves:
        indices = _index_path(path)
        if indices is None or like not in params:
            return None
        node = returned
        for index in indices:
            if not isinstance(node, ast.Tuple) or index >= len(node.elts):
                return None
            node = node.elts[index]
        values.append(node)

    # what the return value holds besides the leaves must be pure (it is dropped)
    def rest_pure(node) -> bool:
        if any(node is v for v in values):
            return True
        if isinstance(node, ast.Tuple):
            return all(map(rest_pure, node.elts))
        return _pure(node)

    if not rest_pure(returned):
        return None

    taken = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)} | set(params) | {
        s.name for s in module.body if isinstance(s, ast.FunctionDef)}
    outs = []
    for j, value in enumerate(values):
        base = f"{value.id}_out" if isinstance(value, ast.Name) else f"out_{j}"
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        outs.append(name)

    def shape(n):
        return ast.Attribute(ast.Name(n, ast.Load()), "shape", ast.Load())

    docstring = [body[0]] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else []
    code = body[len(docstring):-1]
    check = ast.BoolOp(ast.Or(), [ast.Compare(shape(out), [ast.NotEq()], [shape(like)])
                                  for out, (_, like) in zip(outs, leaves)])
    if len(outs) == 1:
        check = check.values[0]
    comments.append("A row of another shape than the gradient's: the driver raises (runtime.check_batch).")
    new_body = [ast.Expr(ast.Constant(
        f"{entry}, writing its output leaves into {', '.join(outs)} (rows of the batched outputs, "
        f"which nothing else refers to) instead of returning them. Returns whether a row has another shape."))]
    new_body.append(ast.Expr(ast.Name(_MARKER.format(len(comments) - 1), ast.Load())))
    new_body.append(ast.If(check, [ast.Return(ast.Constant(True))], []))
    new_body += code
    for out, value in zip(outs, values):
        new_body.append(ast.Assign([ast.Subscript(ast.Name(out, ast.Load()), ast.Slice(), ast.Store())], value,
                                   lineno=0))
    new_body.append(ast.Return(ast.Constant(False)))
    function.name = f"{entry}_into"
    function.args.args += [ast.arg(out) for out in outs]
    function.body = new_body

    def comment(text: str) -> ast.stmt:
        comments.append(text.replace("\n", " "))
        return ast.Expr(ast.Name(_MARKER.format(len(comments) - 1), ast.Load()))

    defined = {s.name for s in module.body if isinstance(s, ast.FunctionDef)} | {
        t.id for s in module.body if isinstance(s, (ast.Assign, ast.Import, ast.ImportFrom))
        for t in (s.targets if isinstance(s, ast.Assign) else [])
        if isinstance(t, ast.Name)} | {function.name}
    loop_facts = {**facts, **{out: ("row", like) for out, (_, like) in zip(outs, leaves)}}
    loop_function(function, loop_facts, defined, comment, lone_dots=True)
    text = ast.unparse(ast.fix_missing_locations(function))
    text = _MARKED.sub(lambda m: f"{m.group(1)}# {comments[int(m.group(2))]}", text)
    return format_source(source.rstrip("\n") + "\n\n\n" + text + "\n"), function.name
