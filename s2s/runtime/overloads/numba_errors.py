"""Numba's own error paths whose compilation costs more than the code that reaches them.

Every assignment of an array into a slice (`a[i:j] = b`, `c[:, k] = row`) is compiled by Numba
with a check of the shapes, and the CPU target's message for a mismatch formats both shapes as
strings: compiling that formatting (str of each integer, a join, an f-string) takes about 3 s at
the first such assignment of each pair of ndims in a process, several times what the rest of a
small function costs. Numba's generic target raises the same ValueError with a fixed message, and
that compiles in a few milliseconds. The CPU target is given the generic message here: a mismatch
still raises ValueError at the same point, without the shapes in its text (the python backend, or
NumPy itself, names them).
"""

from numba.core.typing.templates import builtin_registry
from numba.np import arrayobj


def _use_the_generic_message() -> None:
    # (the registry's entries, not a typing context's: resolving through a context would load
    # every registry, a cost the first compile pays anyway but a cached call need not; a Numba
    # without these names keeps its own message)
    stub = getattr(arrayobj, "raise_with_shape_context", None)
    cpu = getattr(arrayobj, "ol_raise_with_shape_context_cpu", None)
    generic = getattr(arrayobj, "ol_raise_with_shape_context_generic", None)
    if stub is None or cpu is None or generic is None:
        return
    for function, function_type in builtin_registry.globals:
        if function is stub:
            for template in function_type.templates:
                if getattr(template, "_overload_func", None) is cpu:
                    template._overload_func = generic


_use_the_generic_message()
