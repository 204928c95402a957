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
        items = ", ".join(f"{key!r}: {example_expr(f'{path}[{key!r}]', child, index)}"
                          for key, child in zip(tree[1], tree[2]))
        return "{" + items + "}"
    items = [example_expr(f"{path}[{k}]", child, index) for k, child in enumerate(tree[1])]
    if tree[0] == "namedtuple":  # the python backend only: s2s.jit refuses mapped namedtuple leaves
        return f"type({path})({', '.join(items)})"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


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


def driver_source(name: str, params: list[str], trees: list[ArgTree], kernel: Kernel,
                  out_axes: list[int]) -> str:
    """The `<name>_vmap` function: a loop over examples, parallel under s2s.jit."""
    fresh = ir.Names(params + [kernel.entry]).fresh
    n, b, result, mismatch = fresh("n"), fresh("b"), fresh("result"), fresh("mismatch")
    outs = [fresh(f"out_{k}") for k in range(len(kernel.leaf_paths))]
    size = next(s for s in (first_batched(p, t) for p, t in zip(params, trees)) if s)

    def call(index: str) -> str:
        args = [example_expr(p, t, index) for p, t in zip(params, trees)] + kernel.extra_args
        return f"{result} = {kernel.entry}({', '.join(args)})"

    doc = (f"Vmap of {kernel.description}, batched over {described_axes(params, trees)}: "
           "a loop over the examples (parallel under s2s.jit).")
    lines = [f"def {name}_vmap({', '.join(params)}):", f'    """{doc}"""', f"    {n} = {size}", f"    {call('0')}"]
    for out, path in zip(outs, kernel.leaf_paths):
        lines += [f"    {out} = runtime.batch_empty({n}, {result}{path})", f"    {out}[0] = {result}{path}"]
    # Every example's output must have the first one's shape (a smaller one would broadcast):
    # batch_store flags a mismatch, and check_batch raises after the parallel loop.
    lines += [f"    {mismatch} = np.zeros({n}, dtype=np.bool_)",
              f"    for {b} in runtime.prange(1, {n}):", f"        {call(b)}"]
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
                  out_axes: list[int], why_loop: str = "") -> str:
    """The per-example module with the batched driver appended, and a header that says how
    the function was batched (and, on the python backend, why not by batching rules)."""
    header = (f"# Generated by s2s: vmap of {kernel.description}, batched over "
              f"{described_axes(params, trees)} by a loop over the examples\n"
              f"# (runtime.prange: parallel under s2s.jit). The per-example code follows:\n")
    if why_loop:
        header += "".join(f"# {line}\n" for line in f"Not vectorised: {why_loop}".splitlines())
    text = header + kernel.source + "\n\n" + driver_source(name, params, trees, kernel, out_axes)
    return format_source(text)


def leaf_paths(tree: Any, prefix: str = "") -> list[str]:
    """Index paths of the leaves of a (flattened-order) pytree structure from pytree.flatten."""
    if tree[0] == "leaf":
        return [prefix]
    if tree[0] == "dict":
        return [p for key, child in zip(tree[1], tree[2]) for p in leaf_paths(child, f"{prefix}[{key!r}]")]
    return [p for k, child in enumerate(tree[2]) for p in leaf_paths(child, f"{prefix}[{k}]")]
