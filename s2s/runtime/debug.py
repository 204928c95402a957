"""s2s.debug.print: printing from inside transformed and compiled functions."""

from __future__ import annotations

import builtins
import contextlib
import re
import string

from ..tree_util import pytree
from ..errors import S2SError
from .constants import generators_kept


def debug_print(fmt: str, *args, **kwargs) -> None:
    """Print fmt.format(*args, **kwargs) on every call, as jax.debug.print.

    Inside a function that s2s transforms the call runs where the user's statement runs:
    once per call of the function (in derivative code, in the forward sweep, not in the
    reverse one), under s2s.jit too (through Numba's object mode: see the overload), and
    once per example in a vmap. Each call prints one whole line; under s2s.jit a vmap runs
    its examples on all cores at once, so the lines of different examples come in the order
    the threads reach them (as JAX's unordered debug.print).

    >>> import s2s
    >>> s2s.debug.print("x = {x}, y = {}", 2.0, x=1.5)
    x = 1.5, y = 2.0
    """
    if not isinstance(fmt, str):
        raise S2SError(f"s2s.debug.print takes a format string first, got {type(fmt).__name__}")
    if not _silenced:
        builtins.print(fmt.format(*args, **kwargs))


def debug_show(fmt: str, args: tuple) -> None:
    """What compiled code calls (in object mode): dicts, which compiled code holds as DictTuples,
    are printed as dicts again."""
    if not _silenced:
        builtins.print(fmt.format(*(pytree.from_numba(a) for a in args)))


_silenced: list = []  # non-empty while s2s runs a function for its output's shape


@contextlib.contextmanager
def debug_silenced():
    """No debug output while s2s runs the user's function only to learn its output's structure
    (vmap's probe of the first example, a Jacobian's output shape): the user sees one line per
    call they made, as with JAX, which traces instead. Nor does it advance the NumPy random
    generators the function draws from (runtime.constants.generators_kept)."""
    _silenced.append(True)
    try:
        with generators_kept():
            yield
    finally:
        _silenced.pop()


_FIELD = re.compile(r"([^.\[]*)(.*)", re.DOTALL)


def positional_format(fmt: str, count: int, names: list[str]) -> str:
    """The format string with every field numbered, for count positional arguments followed
    by the keyword arguments `names`: debug_print("{x} {}", a, x=b) is called in generated
    code as debug_print("{1} {0}", a, b), which Numba takes (no keyword arguments).
    Raises ValueError (or KeyError, IndexError) for a format string that str.format would refuse."""
    parts, auto = [], 0
    for literal, field, spec, conversion in string.Formatter().parse(fmt):
        parts.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        first, rest = _FIELD.match(field).groups()
        if first == "":
            index = auto
            auto += 1
        elif first.isdigit():
            index = int(first)
            if index >= count:  # (not a keyword argument's place)
                raise IndexError(f"replacement index {index} out of range for {count} positional arguments")
        else:
            index = count + names.index(first) if first in names else None
            if index is None:
                raise KeyError(first)
        if index >= count + len(names):
            raise IndexError(f"replacement index {index} out of range for {count} positional arguments")
        if spec and "{" in spec:
            raise ValueError("nested replacement fields in a format spec")
        parts.append("{" + str(index) + rest + (f"!{conversion}" if conversion else "")
                     + (f":{spec}" if spec else "") + "}")
    return "".join(parts)


__all__ = ["debug_print", "debug_show", "debug_silenced", "positional_format"]
