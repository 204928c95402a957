"""Small readings of libcst nodes that the CUDA rewriting modules share (cuda.py,
cuda_tapes.py, cuda_random.py)."""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """"runtime.kernels.normal64" of a name or attribute chain; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def code(node: cst.CSTNode) -> str:
    """The source text of a node."""
    return cst.Module(body=[]).code_for_node(node)


def walk(node: cst.CSTNode):
    """node and everything below it, depth first."""
    yield node
    for child in node.children:
        yield from walk(child)
