"""np.einsum, lowered into the calls it stands for: matmul, dot, outer, trace, transpose, sum,
and for what else two operands contract (a batch index, 'bij,bjk->bik'), a broadcast product
summed over the contracted indices. Those calls have derivative, batching and Numba rules of
their own, and Numba has no np.einsum.

`lower_einsum` gets the subscripts and the operand atoms, and callbacks that emit a call or a
subscript and return the atom of its result; it raises EinsumRefused (a reason and a hint)
for what it does not take: '...', an index repeated in one operand other than a whole trace
('ii->'), more than two operands.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..ir import nodes as ir

HINT = ("write it with np.matmul, np.dot, np.outer, np.trace, np.transpose or np.sum, or as a product "
        "of at most two operands with distinct indices each")


class EinsumRefused(Exception):
    pass


def parse(subscripts: str, count: int) -> tuple[list[str], str]:
    """The input and output index strings; without '->' NumPy's implicit output (the indices
    that appear once, in alphabetical order)."""
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise EinsumRefused("np.einsum with '...' is not supported")
    inputs, arrow, output = spec.partition("->")
    operands = inputs.split(",")
    if len(operands) != count:
        raise EinsumRefused(f"np.einsum subscripts {subscripts!r} name {len(operands)} operands, "
                            f"the call passes {count}")
    letters = "".join(operands)
    if not all(c.isalpha() for c in letters + output):
        raise EinsumRefused(f"np.einsum subscripts {subscripts!r} are not letters, commas and '->'")
    if not arrow:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output) or set(output) - set(letters):
        raise EinsumRefused(f"np.einsum output {output!r} repeats an index or names one no operand has")
    return operands, output


def lower_einsum(subscripts: str, atoms: list, call: Callable[..., Any], subscript: Callable[..., Any]):
    """The atom of einsum(subscripts, *atoms): call(fn, args, kwargs) and subscript(atom, items)
    emit the statements."""
    if len(atoms) not in (1, 2):
        raise EinsumRefused(f"np.einsum of {len(atoms)} operands is not supported (one or two)")
    operands, output = parse(subscripts, len(atoms))
    for spec in operands:
        if len(set(spec)) != len(spec) and not (len(atoms) == 1 and len(spec) == 2 and output == ""):
            raise EinsumRefused(f"np.einsum with an index repeated in one operand ({spec!r}) is not supported "
                                "other than the trace 'ii->'")
    if len(atoms) == 1:
        if len(set(operands[0])) == 1 and len(operands[0]) == 2:
            return call(np.trace, [atoms[0]])
        return _one(atoms[0], operands[0], output, call)
    a, b = atoms
    sa, sb = operands
    # An index of one operand alone that the output drops is summed out of it first.
    a, sa = _one(a, sa, "".join(c for c in sa if c in output or c in sb), call), \
        "".join(c for c in sa if c in output or c in sb)
    b, sb = _one(b, sb, "".join(c for c in sb if c in output or c in sa), call), \
        "".join(c for c in sb if c in output or c in sa)
    shared = [c for c in sa if c in sb]
    contracted = [c for c in shared if c not in output]
    batch = [c for c in shared if c in output]
    only_a, only_b = [c for c in sa if c not in sb], [c for c in sb if c not in sa]
    if not batch and len(contracted) <= 1 and len(only_a) <= 1 and len(only_b) <= 1:
        if not contracted:
            if not only_a or not only_b:  # a number times an array
                return _one(call(operator.mul, [a, b]), sa + sb, output, call)
            return _one(call(np.outer, [a, b]), sa + sb, output, call)
        a = _one(a, "".join(only_a) + contracted[0], None, call, sa)
        b = _one(b, contracted[0] + "".join(only_b), None, call, sb)
        return _one(call(operator.matmul, [a, b]), "".join(only_a + only_b), output, call)
    # The general case: both operands laid out along output + contracted indices, multiplied
    # with broadcasting, and summed over the contracted ones.
    layout = output + "".join(contracted)
    product = call(operator.mul, [_spread(a, sa, layout, call, subscript), _spread(b, sb, layout, call, subscript)])
    if not contracted:
        return product
    axes = tuple(range(len(output), len(layout)))
    return call(np.sum, [product], [("axis", ir.Const(axes[0] if len(axes) == 1 else axes))])


def _one(x, spec: str, output: str | None, call, given: str | None = None):
    """x, whose indices are spec, summed over what output lacks and transposed into output's
    order (output None: spec is the wanted order of x's indices `given`)."""
    if output is None:
        output, spec = spec, given
    dropped = tuple(k for k, c in enumerate(spec) if c not in output)
    if dropped and len(dropped) == len(spec):
        return call(np.sum, [x])
    if dropped:
        x = call(np.sum, [x], [("axis", ir.Const(dropped[0] if len(dropped) == 1 else dropped))])
        spec = "".join(c for c in spec if c in output)
    if spec != output:
        x = call(np.transpose, [x, ir.Const(tuple(spec.index(c) for c in output))])
    return x


def _spread(x, spec: str, layout: str, call, subscript):
    """x with its indices in layout's order and a new axis of length one for each index of
    layout it lacks, to broadcast against the other operand."""
    present = "".join(c for c in layout if c in spec)
    x = _one(x, present, None, call, spec)
    if present == layout:
        return x
    items = [ir.Slice(None, None, None) if c in spec else ir.NewAxis() for c in layout]
    return subscript(x, items)
