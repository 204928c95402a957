"""The vmap transform: a batched driver around per-example generated code.

The batched function is the per-example module (the primal, the reverse mode of a grad, or
another batched module) with one more function, `<name>_vmap`, that loops over the examples:

    def loss_grad_vmap(params, xs, ys):
        n = xs.shape[0]
        result = loss_vjp(params, xs[0], ys[0], 1.0)
        out_0 = runtime.batch_empty(n, result[1][0])
        out_0[0] = result[1][0]
        mismatch = np.zeros(n, dtype=np.bool_)
        for b in runtime.prange(1, n):
            result = loss_vjp(params, xs[b], ys[b], 1.0)
            mismatch[b] |= runtime.batch_store(out_0, b, result[1][0])
        runtime.check_batch(mismatch)
        return (out_0,)

`runtime.prange` is numba.prange: under s2s.jit the module is compiled with
`parallel=True` and the examples run on all cores; on the python backend it is range.
The driver is specialised to the argument structure and the mapped axes (known when the
batched function is called, as in JAX's tracing), so the indexing it does is written out:
`xs[:, b]` for in_axes=1. It returns the stacked output leaves as a flat tuple; out_axes
other than 0 are applied with np.transpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..codegen.format import format_source
from ..ir import nodes as ir

# An argument tree: ("leaf", axis or None) | ("seq", [children]) | ("namedtuple", [children])
# | ("dict", keys, [children]).
ArgTree = tuple


@dataclass
class Kernel:
    """The per-example code a driver calls: a module, its entry, and how to call it."""

    source: str  # the per-example module
    entry: str  # the function the driver calls
    extra_args: list[str]  # appended to the call (the cotangent seed of a gradient)
    leaf_paths: list[str]  # where each output leaf sits in the entry's return value
    leaf_ndims: list[int]  # per-example ndim of each output leaf
    description: str  # "grad of loss with respect to params"
    # `<entry>_into` (optimize/into.py), in source: the entry writing its output leaves into
    # rows of the driver's outputs, passed after extra_args; returns whether a row's shape is off
    into: str | None = None


# A batching pattern of a value: True (batched), False (not), or a tuple of patterns (a tuple
# value). The vectorised modules of transforms/vectorize.py record their result's pattern.
Pattern = Any


def anything(p: Pattern) -> bool:
    return any(anything(x) for x in p) if isinstance(p, tuple) else bool(p)


def element(p: Pattern, k: int) -> Pattern:
    return p[k] if isinstance(p, tuple) and -len(p) <= k < len(p) else anything(p)


def leaf_patterns(structure: Any, pattern: Pattern) -> list[bool]:
    """The pattern of each leaf of an output structure (from pytree.flatten), in order."""
    if structure[0] == "leaf":
        return [anything(pattern)]
    children = structure[2]
    return [p for k, child in enumerate(children)
            for p in leaf_patterns(child, element(pattern, k) if structure[0] == "seq" else anything(pattern))]


def is_batched(tree: ArgTree) -> bool:
    if tree[0] == "leaf":
        return tree[1] is not None
    return any(is_batched(child) for child in tree[-1])


def example_expr(path: str, tree: ArgTree, index: str) -> str:
    """The per-example value of the argument at path: indexed where it is batched."""
    if not is_batched(tree):
        return path
    if tree[0] == "leaf":
        return f"{path}[{':, ' * tree[1]}{index}]"
    if tree[0] == "dict":
        items = [example_expr(f"{path}[{key!r}]", child, index) for key, child in zip(tree[1], tree[2])]
    else:
        items = [example_expr(f"{path}[{k}]", child, index) for k, child in enumerate(tree[1])]
    return _rebuilt(path, tree, items)


def _rebuilt(shell: str, tree: ArgTree, items: list[str]) -> str:
    """A container of the kind of `shell` (a dict's keys, a namedtuple's class) holding items."""
    joined = ", ".join(items) + ("," if len(items) == 1 else "")
    if tree[0] == "seq":
        return f"({joined})"
    return f"runtime.with_items({shell}, ({joined}))"


def is_nested(tree: ArgTree) -> bool:
    """Does the argument hold a container inside a container? Numba's parallel loop passes a
    tuple's items to its worker function one level deep, and rejects a tuple inside a tuple
    ("scalar type ... given for non scalar argument"): the driver takes such an argument
    flattened (flat_parameters), and rebuilds it in the loop."""
    return tree[0] != "leaf" and any(child[0] != "leaf" for child in tree[-1])


def flat_parameters(param: str, tree: ArgTree, fresh) -> tuple[list[str], Any]:
    """The driver's parameters for a nested argument, in the order of flat_values: a name
    per leaf and per dict or namedtuple (a shell: what with_items needs of it, its keys or
    class; a function argument, which is where Numba's parallel loop finds a namedtuple's
    class); and the expression tree that rebuilds the argument from them."""
    names: list[str] = []

    def walk(tree):
        if tree[0] == "leaf":
            names.append(fresh(f"{param}_leaf"))
            return names[-1], tree
        parts = [walk(child) for child in tree[-1]]
        shell = None
        if tree[0] != "seq":
            shell = fresh(f"{param}_shell")
            names.append(shell)
        return ("rebuilt", shell, tree, parts)

    return names, walk(tree)


def flat_values(value: Any, tree: ArgTree, shell) -> list:
    """The values of flat_parameters for an argument: its leaves, and shell(x) for each of
    its dicts and namedtuples, in the order flat_parameters names them."""
    if tree[0] == "leaf":
        return [value]
    # (a dict under s2s.jit is a DictTuple, a tuple of its values in the keys' sorted order)
    children = [value[k] for k in tree[1]] if isinstance(value, dict) else list(value)
    items = [v for child_value, child in zip(children, tree[-1]) for v in flat_values(child_value, child, shell)]
    return items if tree[0] == "seq" else items + [shell(value)]


def _first_batched_node(node) -> str | None:
    if node[0] == "rebuilt":
        return next((s for s in map(_first_batched_node, node[3]) if s), None)
    return first_batched(*node)


def _rebuilt_expr(node, index: str) -> str:
    if node[0] == "rebuilt":
        _, shell, tree, parts = node
        return _rebuilt(shell, tree, [_rebuilt_expr(part, index) for part in parts])
    name, tree = node
    return example_expr(name, tree, index)


def appended_parameters(functions: list) -> set[str]:
    """The parameters of the entry (the last of these lowered functions, callees first) whose
    list the function may append to: `t.append(v)`, through another name (`u = t`) or in a
    callee it passes t to. A loop over examples passes each its own list there, as vmap gives
    every example its own copy of a shared argument. (An over-approximation: a name rebound
    to another list still counts, which costs a copy.)"""
    found: dict[int, set[str]] = {}
    for fn in functions:
        names = {p: {p} for p in fn.params}  # each parameter's names: itself and its aliases
        appended: set[str] = set()
        statements = list(ir.walk(fn.body))
        for _ in range(2):  # (an alias made after its use, in a loop)
            for stmt in statements:
                if isinstance(stmt, ir.Assign) and not stmt.unpack and isinstance(stmt.value, ir.Name):
                    for aliases in names.values():
                        if stmt.value.id in aliases:
                            aliases.add(stmt.targets[0])
                for param, aliases in names.items():
                    if isinstance(stmt, ir.Push) and stmt.tape in aliases:
                        appended.add(param)
                    call = stmt.value if isinstance(stmt, (ir.Assign, ir.ExprStmt)) else None
                    if isinstance(call, ir.Call):
                        callee = next((f for f in functions if f.python is call.fn), None)
                        if callee is not None and any(
                                isinstance(arg, ir.Name) and arg.id in aliases and name in found[id(callee)]
                                for name, arg in zip(callee.params, call.args)):
                            appended.add(param)
        found[id(fn)] = appended
    return found[id(functions[-1])]


def first_batched(path: str, tree: ArgTree) -> str | None:
    """`xs.shape[0]`: the batch size, read from the first batched leaf."""
    if tree[0] == "leaf":
        return f"{path}.shape[{tree[1]}]" if tree[1] is not None else None
    keys = tree[1] if tree[0] == "dict" else range(len(tree[1]))
    for key, child in zip(keys, tree[-1]):
        found = first_batched(f"{path}[{key!r}]", child)
        if found:
            return found
    return None


def described_axes(params: list[str], trees: list[ArgTree]) -> str:
    parts = []
    for p, tree in zip(params, trees):
        if tree[0] == "leaf" and tree[1] is not None:
            parts.append(f"axis {tree[1]} of {p}")
        elif tree[0] != "leaf" and is_batched(tree):
            parts.append(f"the mapped leaves of {p}")
    return ", ".join(parts)


# (how codegen writes a failed assert and the user's raise of a builtin exception)
_ASSERTS = re.compile(r"^\s*raise \w+\b", re.M)


def driver_source(name: str, params: list[str], trees: list[ArgTree], kernel: Kernel,
                  out_axes: list[int], private: bool = False) -> str:
    """The `<name>_vmap` function: a loop over examples, parallel under s2s.jit. private (the
    python backend, where a list stays a list): an argument the examples share that holds lists
    or dicts is passed to each example as lists and dicts of its own (runtime.fresh_containers),
    so what one example appends to it the others do not see. (Under s2s.jit lists are tuples.)"""
    fresh = ir.Names(params + [kernel.entry]).fresh
    n, b, result, mismatch = fresh("n"), fresh("b"), fresh("result"), fresh("mismatch")
    outs = [fresh(f"out_{k}") for k in range(len(kernel.leaf_paths))]
    nodes, signature = [], []
    for p, t in zip(params, trees):
        if is_nested(t) and not private:  # (in Python, no parallel loop: they come as they are)
            names, node = flat_parameters(p, t, fresh)
            signature += names
            nodes.append(node)
        else:
            signature.append(p)
            nodes.append((p, t))

    size = next(s for s in map(_first_batched_node, nodes) if s)

    def shared(node) -> bool:
        return private and node[0] != "rebuilt" and node[1][0] != "leaf" and not is_batched(node[1])

    def arguments(index: str) -> list[str]:
        return [f"runtime.fresh_containers({node[0]})" if shared(node) else _rebuilt_expr(node, index)
                for node in nodes] + kernel.extra_args

    def call(index: str) -> str:
        return f"{result} = {kernel.entry}({', '.join(arguments(index))})"

    # An example's failed assert (or raise) raises: Numba loses an exception raised in a function called
    # from a parallel loop (numba/numba#9673), so such a loop runs the examples one by one.
    loop = "range" if _ASSERTS.search(kernel.source) else "runtime.prange"
    doc = (f"Vmap of {kernel.description}, batched over {described_axes(params, trees)}: "
           + ("a loop over the examples, one by one (an example's assert or raise may fail)." if loop == "range"
              else "a loop over the examples (parallel under s2s.jit)."))
    if any(map(is_nested, trees)) and not private:
        doc += (" Arguments that nest containers come flattened (their leaves, and a shell of each dict "
                "and namedtuple), as Numba's parallel loop takes them.")
    lines = [f"def {name}_vmap({', '.join(signature)}):", f'    """{doc}"""', f"    {n} = {size}"]
    lines.append(f"    {call('0')}")
    for out, path in zip(outs, kernel.leaf_paths):
        lines += [f"    {out} = runtime.batch_empty({n}, {result}{path})", f"    {out}[0] = {result}{path}"]
    # Every example's output must have the first one's shape (a smaller one would broadcast):
    # batch_store flags a mismatch, and check_batch raises after the parallel loop.
    lines += [f"    {mismatch} = np.zeros({n}, dtype=np.bool_)",
              f"    for {b} in {loop}(1, {n}):"]
    if kernel.into:  # the other examples write their leaves into their rows themselves
        rows = [f"{out}[{b}]" for out in outs]
        lines.append(f"        {mismatch}[{b}] = {kernel.into}({', '.join(arguments(b) + rows)})")
    else:
        lines.append(f"        {call(b)}")
        lines += [f"        {mismatch}[{b}] |= runtime.batch_store({out}, {b}, {result}{path})"
                  for out, path in zip(outs, kernel.leaf_paths)]
    lines.append(f"    runtime.check_batch({mismatch})")
    returned = []
    for out, axis, ndim in zip(outs, out_axes, kernel.leaf_ndims):
        if axis == 0:
            returned.append(out)
        else:  # the batch axis moves from the front to `axis`
            order = list(range(1, ndim + 1))
            order.insert(axis, 0)
            returned.append(f"np.transpose({out}, {tuple(order)})")
    lines.append(f"    return ({', '.join(returned)}{',' if len(returned) == 1 else ''})")
    return "\n".join(lines) + "\n"


def module_source(name: str, params: list[str], trees: list[ArgTree], kernel: Kernel,
                  out_axes: list[int], why_loop: str = "", private: bool = False) -> str:
    """The per-example module with the batched driver appended, and a header that says how
    the function was batched (and, on the python backend, why not by batching rules)."""
    how = "(one by one: an example's assert or raise may fail)" if _ASSERTS.search(kernel.source) \
        else "(runtime.prange: parallel under s2s.jit)"
    header = (f"# Generated by s2s: vmap of {kernel.description}, batched over "
              f"{described_axes(params, trees)} by a loop over the examples\n"
              f"# {how}. The per-example code follows:\n")
    if why_loop:
        header += "".join(f"# {line}\n" for line in f"Not vectorised: {why_loop}".splitlines())
    text = header + kernel.source + "\n\n" + driver_source(name, params, trees, kernel, out_axes, private)
    return format_source(text)


def leaf_paths(tree: Any, prefix: str = "") -> list[str]:
    """Index paths of the leaves of a (flattened-order) pytree structure from pytree.flatten."""
    if tree[0] == "leaf":
        return [prefix]
    if tree[0] == "dict":
        return [p for key, child in zip(tree[1], tree[2]) for p in leaf_paths(child, f"{prefix}[{key!r}]")]
    return [p for k, child in enumerate(tree[2]) for p in leaf_paths(child, f"{prefix}[{k}]")]
