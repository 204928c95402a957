"""The loop form of s2s.vmap written from the in_axes alone, for the command line and
`s2s check`, which have no example arguments to call the function on."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from . import core
from ..errors import S2SError
from ..transforms import batching


def loop_source(fun: Callable, in_axes: Any = 0) -> str:
    """The loop form of s2s.vmap(fun, in_axes) written from the axes alone, for the command
    line, which has no example arguments to call the function on: fun's primal module and
    `<name>_vmap`, a loop over the examples (parallel under s2s.jit), the text that
    s2s.jit(s2s.vmap(fun, in_axes)) compiles for such arguments. An argument mapped along an
    int axis is one array, one passed whole (None) any value; fun returns one array or number
    per example, and `<name>_vmap` returns the stacked outputs as a 1-tuple. Mapped pytree
    arguments and pytree outputs need the API (their structure comes from example arguments)."""
    if not inspect.isfunction(fun):
        raise S2SError(f"vmap from the command line takes a plain function, got {type(fun).__name__}")
    params = [p.name for p in inspect.signature(fun).parameters.values()]
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(params)
    if any(isinstance(a, (tuple, list, dict)) for a in axes):
        raise S2SError(f"vmap from the command line maps whole arguments (an int axis or None for each), "
                       f"not the leaves of pytree arguments: in_axes {in_axes!r}",
                       hint="call s2s.vmap(f, in_axes=...) on example arguments and read its .source")
    if len(axes) != len(params) or not all(
            a is None or isinstance(a, int) and not isinstance(a, bool) and a >= 0 for a in axes):
        raise S2SError(f"vmap from the command line takes in_axes of None or non-negative ints, one per "
                       f"parameter of {fun.__name__} ({', '.join(params)}), got {in_axes!r}",
                       hint="e.g. --in-axes None,0,0; negative axes need the API (they depend on the shapes)")
    if all(a is None for a in axes):
        raise S2SError("vmap needs at least one mapped argument; in_axes maps none",
                       hint="give the batched argument's axis in in_axes (e.g. 0)")
    source, entries = core._generated(fun, "primal", {})
    name = entries["name"]
    # One output leaf at the top of the result: its ndim only matters for out_axes other than 0.
    kernel = batching.Kernel(source, name, [], [""], [0], fun.__name__)
    return batching.module_source(name, params, [("leaf", a) for a in axes], kernel, [0])
