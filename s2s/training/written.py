"""TrainState.apply_gradients as a plain function that s2s reads inside a train_step s2s.jit
compiles: for optax.adam(1e-2) and an MLP's parameters,

    def apply_gradients(state, grads):
        updates, opt_state = optimizer_update(grads, state.opt_state, state.params)
        params = apply_updates(state.params, updates)
        return TrainState_fields(state.step + 1, params, opt_state)

with optimizer_update and apply_updates written beside it for that optimizer and that layout of
the parameters (s2s.optax's written.py). The module is a file of s2s's cache, one per optimizer
object and layout, with the namedtuple classes it builds in its namespace.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import re
from typing import Any, Callable

from ..backends import loading
from ..optax import written as optax_written

# A TrainState's apply_fn and tx choose the code; its other fields carry numbers (flax: pytree_node=False)
STATIC_FIELDS = ("apply_fn", "tx")

_WRITTEN: dict = {}  # (state class, id of tx, layout) -> (tx, the function)
_FIELDS_CLASSES: dict[type, type] = {}
_BY_NAME: dict[str, type] = {}


def dynamic_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in STATIC_FIELDS)


def fields_class(cls: type) -> type:
    """The namedtuple of a TrainState class's fields other than apply_fn and tx, named
    <Class>_fields and found again by that name in this module (generated code and Numba's cache
    name it there)."""
    made = _FIELDS_CLASSES.get(cls)
    if made is None:
        base = re.sub(r"\W", "_", cls.__qualname__) + "_fields"
        name = base if base not in _BY_NAME else f"{base}_{hashlib.sha1(cls.__module__.encode()).hexdigest()[:8]}"
        made = collections.namedtuple(name, dynamic_fields(cls))
        made.__module__ = __name__
        made.__doc__ = f"The fields of a {cls.__name__} that carry numbers, as a function s2s.jit compiles takes them."
        _FIELDS_CLASSES[cls] = made
        _BY_NAME[name] = made
    return made


def __getattr__(name: str) -> type:
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _written(cls: type, tx: Any, layout: tuple) -> tuple[str, dict]:
    """(module source, {name: class} its code builds) of apply_gradients for this state class,
    optimizer and layout of the parameters."""
    update, classes = optax_written.update_source(tx, layout)
    fields = fields_class(cls)
    classes[fields.__name__] = fields
    values = [f"state.{name}" for name in fields._fields]
    values[fields._fields.index("step")] = "state.step + 1"
    values[fields._fields.index("params")] = "params"
    values[fields._fields.index("opt_state")] = "opt_state"
    apply = "\n".join([
        "def apply_gradients(state, grads):",
        f'    """{cls.__name__}.apply_gradients(grads=grads): one step of the optimizer, written by s2s.training."""',
        "    updates, opt_state = optimizer_update(grads, state.opt_state, state.params)",
        "    params = apply_updates(state.params, updates)",
        f"    return {fields.__name__}({', '.join(values)})",
    ]) + "\n"
    header = (f"# Written by s2s.training for {cls.__name__}.apply_gradients: the optimizer's update written out "
              "for one layout\n# of the parameters. s2s.training adds the namedtuple classes it builds when it "
              "loads this file.\nimport numpy as np\n")
    source = "\n\n".join([header, update, optax_written.apply_updates_source(layout), apply])
    return source, classes


def apply_gradients_text(cls: type, tx: Any, layout: tuple) -> str:
    return _written(cls, tx, layout)[0]


def apply_gradients_function(cls: type, tx: Any, layout: tuple) -> Callable:
    """The plain function s2s reads for state.apply_gradients(grads=...) of a state of class cls
    holding tx, for parameters of this layout (an S2SError where tx cannot be written)."""
    key = (cls, id(tx), layout)
    found = _WRITTEN.get(key)
    if found is not None and found[0] is tx:
        return found[1]
    source, classes = _written(cls, tx, layout)
    suffix = "_" + hashlib.sha1(repr(sorted((n, c.__module__, c.__qualname__) for n, c in classes.items()))
                                .encode()).hexdigest()[:8]
    module = loading.import_generated(source, "apply_gradients", suffix=suffix)
    vars(module).update(classes)
    function = module.apply_gradients
    _WRITTEN[key] = (tx, function)
    return function
