"""np.einsum, lowered into the calls it stands for: matmul, dot, outer, trace, transpose, sum,
diagonal; a batch of matrix products ('bij,bjk->bik', 'bhqd,bhkd->bhqk') as @ of stacks; and for
what else two operands contract, a broadcast product summed over the contracted indices. Those calls have derivative, batching and Numba rules
of their own, and Numba has no np.einsum.

Three or more operands are contracted two at a time, left to right, each intermediate keeping the
indices the output or a later operand still reads. An index repeated in one operand ('ii->i',
'lli') takes that operand's diagonal first (np.diagonal). A leading '...' ('...ij,...jk->...ik')
stands for the broadcast axes in front of the named ones: the lowering then addresses the named
axes from the end (negative axes, np.moveaxis), which holds whatever number of axes the '...'
stands for, and the broadcast product aligns them as NumPy does. A '...' after named indices
('ij...,j...->i...') is brought first: the axes in front of it are moved to the end (their
positions from the front, their places from the end), and the output's moved back. The interleaved form
(`np.einsum(a, [0, 1], b, [1, 2], [0, 2])`) is read into subscripts first (expressions.py).

`lower_einsum` gets the subscripts and the operand atoms, and callbacks that emit a call or a
subscript and return the atom of its result; it raises EinsumRefused (a reason and a hint)
for what it does not take: '...' in the operands and not in an output written after '->'.
"""

from __future__ import annotations

import operator
import string
from typing import Any, Callable

import numpy as np

from ..ir import nodes as ir

HINT = ("write it with np.matmul, np.dot, np.outer, np.trace, np.transpose or np.sum, or with '...' in the "
        "output too where an operand has it, and a sum over those axes after ('...ij,...jk->...ik')")

LETTERS = string.ascii_lowercase + string.ascii_uppercase  # (NumPy's sublist integers 0..51, in its order)
_DOTS = "..."


class EinsumRefused(Exception):
    pass


def sublist_subscripts(sublists: list[list], output: list | None) -> str:
    """The subscripts string of the interleaved form einsum(a, [0, 1], b, [1, 2], [0, 2]):
    integers as letters (NumPy's order: 0..25 lowercase, 26..51 uppercase), Ellipsis as '...'."""
    def spell(items) -> str:
        out = []
        for item in items:
            if item is Ellipsis:
                out.append(_DOTS)
            elif isinstance(item, int) and 0 <= item < len(LETTERS):
                out.append(LETTERS[item])
            else:
                raise EinsumRefused(f"np.einsum's sublists take integers 0 to 51 and Ellipsis, not {item!r}")
        return "".join(out)
    text = ",".join(spell(s) for s in sublists)
    return text if output is None else text + "->" + spell(output)


def parse(subscripts: str, count: int) -> tuple[list[str], str, bool]:
    """The input and output index strings, without the '...'; without '->' NumPy's implicit
    output (the indices that appear once, in alphabetical order, after the '...'); and whether
    a leading '...' is there (then in the output too, where any operand has it)."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    operands = inputs.split(",")
    if len(operands) != count:
        raise EinsumRefused(f"np.einsum subscripts {subscripts!r} name {len(operands)} operands, "
                            f"the call passes {count}")
    dots = any(_DOTS in s for s in operands)
    if dots or _DOTS in output:
        if not all(s.count(".") == 0 or s.startswith(_DOTS) and s.count(".") == 3 for s in operands) or \
                arrow and not (output.startswith(_DOTS) and output.count(".") == 3):
            raise EinsumRefused(f"np.einsum with '...' in an operand and not in the output written after '->' "
                                f"({subscripts!r}) is not supported")
        operands = [s[3:] if s.startswith(_DOTS) else s for s in operands]
        output = output[3:]
    letters = "".join(operands)
    if not all(c.isalpha() for c in letters + output):
        raise EinsumRefused(f"np.einsum subscripts {subscripts!r} are not letters, commas, '...' and '->'")
    if not arrow:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output) or set(output) - set(letters):
        raise EinsumRefused(f"np.einsum output {output!r} repeats an index or names one no operand has")
    return operands, output, dots


def lower_einsum(subscripts: str, atoms: list, call: Callable[..., Any], subscript: Callable[..., Any]):
    """The atom of einsum(subscripts, *atoms): call(fn, args, kwargs) and subscript(atom, items)
    emit the statements."""
    if not atoms:
        raise EinsumRefused("np.einsum needs an operand")
    subscripts, atoms, moved = _dots_first(subscripts, list(atoms), call)
    result = _lower(subscripts, atoms, call, subscript)
    if moved:  # the output's named axes in front of its '...' go back there
        n, m = moved
        result = call(np.moveaxis, [result, ir.Const(tuple(range(-n - m, -m))), ir.Const(tuple(range(n)))])
    return result


def _dots_first(subscripts: str, atoms: list, call):
    """A '...' after named indices ('ij...,j...->i...'): each such operand's named axes in front of
    it moved behind it (np.moveaxis: from the front to the end), so that its '...' comes first;
    likewise the output's, whose (count in front, count behind) are returned for the move back."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    operands = inputs.split(",")
    if len(operands) != len(atoms):
        return subscripts, atoms, None  # (parse says so)
    for k, spec in enumerate(operands):
        if spec.count(".") == 3 and _DOTS in spec and not spec.startswith(_DOTS):
            front, back = spec.split(_DOTS)
            n, m = len(front), len(back)
            atoms[k] = call(np.moveaxis, [atoms[k], ir.Const(tuple(range(n))), ir.Const(tuple(range(-n - m, -m)))])
            operands[k] = _DOTS + front + back
    moved = None
    if arrow and output.count(".") == 3 and _DOTS in output and not output.startswith(_DOTS):
        front, back = output.split(_DOTS)
        moved, output = (len(front), len(back)), _DOTS + front + back
    return ",".join(operands) + arrow + output, atoms, moved


def _lower(subscripts: str, atoms: list, call, subscript):
    operands, output, tail = parse(subscripts, len(atoms))
    if len(atoms) == 1 and not tail and len(operands[0]) == 2 and len(set(operands[0])) == 1 and output == "":
        return call(np.trace, [atoms[0]])
    atoms = list(atoms)
    for k, spec in enumerate(operands):
        atoms[k], operands[k] = _diagonals(atoms[k], spec, call, tail)
    if len(atoms) == 1:
        return _one(atoms[0], operands[0], output, call, tail=tail)
    a, sa = atoms[0], operands[0]
    for k in range(1, len(atoms)):
        later = output + "".join(operands[k + 1:])
        kept = output if k == len(atoms) - 1 else "".join(dict.fromkeys(c for c in sa + operands[k] if c in later))
        a, sa = _two(a, sa, atoms[k], operands[k], kept, call, subscript, tail), kept
    return a


def _diagonals(x, spec: str, call, tail: bool):
    """x with each index its spec repeats taken along its diagonal (np.diagonal puts it last)."""
    while len(set(spec)) != len(spec):
        c = next(c for c in spec if spec.count(c) > 1)
        p, q = spec.index(c), spec.index(c, spec.index(c) + 1)
        shift = len(spec) if tail else 0
        x = call(np.diagonal, [x], [("axis1", ir.Const(p - shift)), ("axis2", ir.Const(q - shift))])
        spec = "".join(d for k, d in enumerate(spec) if k not in (p, q)) + c
    return x, spec


def _two(a, sa: str, b, sb: str, output: str, call, subscript, tail: bool):
    """The atom of the contraction of a (indices sa) with b (sb) into output's indices."""
    # An index of one operand alone that the output drops is summed out of it first.
    keep_a = "".join(c for c in sa if c in output or c in sb)
    keep_b = "".join(c for c in sb if c in output or c in sa)
    a, sa = _one(a, sa, keep_a, call, tail=tail), keep_a
    b, sb = _one(b, sb, keep_b, call, tail=tail), keep_b
    shared = [c for c in sa if c in sb]
    contracted = [c for c in shared if c not in output]
    batch = [c for c in shared if c in output]
    only_a, only_b = [c for c in sa if c not in sb], [c for c in sb if c not in sa]
    if not tail and not batch and len(contracted) <= 1 and len(only_a) <= 1 and len(only_b) <= 1:
        if not contracted:
            if not only_a or not only_b:  # a number times an array
                return _one(call(operator.mul, [a, b]), sa + sb, output, call)
            return _one(call(np.outer, [a, b]), sa + sb, output, call)
        a = _one(a, "".join(only_a) + contracted[0], None, call, sa)
        b = _one(b, contracted[0] + "".join(only_b), None, call, sb)
        return _one(call(operator.matmul, [a, b]), "".join(only_a + only_b), output, call)
    if not tail and batch and len(contracted) == 1 and len(only_a) == 1 and len(only_b) == 1:
        # A batch of matrix products ('bhqd,bhkd->bhqk'): a stack of matrices @ a stack, whose
        # matrices the products of BLAS multiply (the broadcast product would hold every term).
        a = _one(a, "".join(batch + only_a + contracted), None, call, sa)
        b = _one(b, "".join(batch + contracted + only_b), None, call, sb)
        return _one(call(operator.matmul, [a, b]), "".join(batch + only_a + only_b), output, call)
    # The general case: both operands laid out along output + contracted indices, multiplied
    # with broadcasting, and summed over the contracted ones. (With a '...' too: Numba's `@`
    # multiplies no stacks of matrices.)
    layout = output + "".join(contracted)
    product = call(operator.mul, [_spread(a, sa, layout, call, subscript, tail),
                                  _spread(b, sb, layout, call, subscript, tail)])
    if not contracted:
        return product
    axes = tuple(k - len(layout) if tail else k for k in range(len(output), len(layout)))
    return call(np.sum, [product], [("axis", ir.Const(axes[0] if len(axes) == 1 else axes))])


def _one(x, spec: str, output: str | None, call, given: str | None = None, tail: bool = False):
    """x, whose indices are spec, summed over what output lacks and put into output's order
    (output None: spec is the wanted order of x's indices `given`). tail: x has axes in front of
    the named ones (a '...'), so these are addressed from the end."""
    if output is None:
        output, spec = spec, given
    dropped = tuple(k - len(spec) if tail else k for k, c in enumerate(spec) if c not in output)
    if dropped and len(dropped) == len(spec) and not tail:
        return call(np.sum, [x])
    if dropped:
        x = call(np.sum, [x], [("axis", ir.Const(dropped[0] if len(dropped) == 1 else dropped))])
        spec = "".join(c for c in spec if c in output)
    if spec != output:
        if tail:
            n = len(spec)
            x = call(np.moveaxis, [x, ir.Const(tuple(spec.index(c) - n for c in output)), ir.Const(tuple(range(-n, 0)))])
        else:
            x = call(np.transpose, [x, ir.Const(tuple(spec.index(c) for c in output))])
    return x


def _spread(x, spec: str, layout: str, call, subscript, tail: bool = False):
    """x with its indices in layout's order and a new axis of length one for each index of
    layout it lacks, to broadcast against the other operand."""
    present = "".join(c for c in layout if c in spec)
    x = _one(x, present, None, call, spec, tail=tail)
    if present == layout:
        return x
    items = [ir.Slice(None, None, None) if c in spec else ir.NewAxis() for c in layout]
    return subscript(x, [ir.EllipsisIndex()] + items if tail else items)
