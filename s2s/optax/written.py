"""An optimizer's update written out as plain Python for one layout of the parameters, which
s2s reads and compiles like the user's code: a train_step that s2s.jit compiles whole calls it
for `state.apply_gradients(grads=grads)` (s2s.training).

The transformations in transforms.py run tree_map over closures, which s2s cannot read. Here
each one that transforms.py made (its RECIPES entry says which, with its settings) is written
leaf by leaf for the parameters' layout (their dict keys and nesting), with its settings as
literals and its formulas in the same order of operations, so that the compiled step computes
what the Python one does. For optax.adam(1e-2) and an MLP's parameters:

    def optimizer_update(updates, state, params):
        # scale_by_adam(b1=0.9, b2=0.999, eps=1e-08, eps_root=0.0)
        count_0 = state[0].count + 1
        mu_0_Dense_0_bias = 0.9 * state[0].mu["params"]["Dense_0"]["bias"] + (1 - 0.9) * updates["params"]...
        ...
        return ({"params": {"Dense_0": {"bias": update_Dense_0_bias, ...}}}, (ScaleByAdamState(count_0, ...), ...))

A schedule (a learning rate or weight decay that is a function of the step) and a mask given as
a function are not written: they are Python functions of the count or of the parameters, which
the writer cannot read; update_source raises an S2SError saying so.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import numpy as np

from ..errors import S2SError
from . import transforms

# ---- layouts: what the code depends on of a tree's structure ----------------------------------


def layout_of(tree: Any) -> tuple:
    """A hashable description of a tree's structure: its dicts' keys (in order), tuples' and
    lists' lengths, namedtuple classes, and each leaf's kind (an array's dtype, a number)."""
    if isinstance(tree, dict):
        return ("dict", tuple((k, layout_of(v)) for k, v in tree.items()))
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return ("named", type(tree), tuple(layout_of(v) for v in tree))
    if isinstance(tree, (tuple, list)):
        return ("tuple", tuple(layout_of(v) for v in tree))
    if isinstance(tree, np.ndarray):
        return ("array", tree.dtype.str)
    if tree is None:
        return ("none",)
    return ("number", type(tree).__name__)


def leaves(layout: tuple, path: tuple = ()) -> Iterator[tuple[tuple, tuple]]:
    """(path, leaf layout) of each leaf, in the tree's order; a path is a tuple of steps
    ("key", k), ("index", i) and ("field", name)."""
    kind = layout[0]
    if kind == "dict":
        for key, sub in layout[1]:
            yield from leaves(sub, path + (("key", key),))
    elif kind == "named":
        for name, sub in zip(layout[1]._fields, layout[2]):
            yield from leaves(sub, path + (("field", name),))
    elif kind == "tuple":
        for k, sub in enumerate(layout[1]):
            yield from leaves(sub, path + (("index", k),))
    elif kind != "none":
        yield path, layout


def access(base: str, path: tuple) -> str:
    """The expression of the leaf at path within base: base["Dense_0"]["bias"], base[0].mu."""
    text = base
    for step, value in path:
        if step == "key":
            text += f'["{value}"]' if isinstance(value, str) and '"' not in value and "\\" not in value \
                else f"[{value!r}]"
        elif step == "index":
            text += f"[{value}]"
        else:
            text += f".{value}"
    return text


def display(layout: tuple, names: Iterator[str], classes: dict) -> str:
    """The expression that builds a tree of this layout from the leaves' names, in order (classes:
    the namedtuple classes' names in the written module, filled in)."""
    kind = layout[0]
    if kind == "dict":
        items = ", ".join(f"{access('', (('key', k),))[1:-1]}: {display(sub, names, classes)}" for k, sub in layout[1])
        return "{" + items + "}"
    if kind == "named":
        cls = layout[1]
        name = classes.setdefault(cls.__name__, cls)
        if name is not cls:
            raise S2SError(f"two namedtuple classes named {cls.__name__} in one optimizer state")
        return f"{cls.__name__}({', '.join(display(sub, names, classes) for sub in layout[2])})"
    if kind == "tuple":
        parts = [display(sub, names, classes) for sub in layout[1]]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if kind == "none":
        return "None"
    return next(names)


def leaf_names(layout: tuple) -> list[str]:
    """A readable name for each leaf (Dense_0_kernel): its path's keys, less those every leaf shares
    at the front ("params")."""
    paths = [path for path, _ in leaves(layout)]
    shared = 0
    while paths and all(len(p) > shared + 1 and p[shared] == paths[0][shared] for p in paths):
        shared += 1
    names, taken = [], set()
    for path in paths:
        name = "_".join(re.sub(r"\W", "_", str(value)) for _, value in path[shared:]).strip("_") or "leaf"
        name = name if name[0].isalpha() else f"leaf_{name}"
        candidate, k = name, 2
        while candidate in taken:
            candidate, k = f"{name}_{k}", k + 1
        taken.add(candidate)
        names.append(candidate)
    return names


# ---- the update ----------------------------------------------------------------------------


def _number(value: Any) -> str:
    """A setting as a literal of the code (a Python float's repr reads back as the same float)."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    raise S2SError(f"the optimizer's setting {value!r} is not a number", hint="give the optimizer numbers")


def _settings(settings: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in settings.items() if not callable(v) and k != "transforms")


class UpdateWriter:
    """The lines of `optimizer_update(updates, state, params)` for one transformation and one
    layout of the parameters."""

    def __init__(self, layout: tuple):
        self.layout = layout
        self.paths = [path for path, _ in leaves(layout)]
        self.names = leaf_names(layout)
        self.lines: list[str] = []
        self.classes: dict[str, type] = {}
        # the expression of each leaf's update so far
        self.updates = [access("updates", path) for path in self.paths]

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)

    def rebind(self, k: int, value: str, indent: int = 1) -> None:
        """The update of leaf k is now value (bound to its name)."""
        name = f"update_{self.names[k]}"
        self.emit(f"{name} = {value}", indent)
        self.updates[k] = name

    def tree(self, names: list[str]) -> str:
        return display(self.layout, iter(names), self.classes)

    def state_class(self, cls: type) -> str:
        self.classes.setdefault(cls.__name__, cls)
        return cls.__name__

    def transformation(self, tx: Any, state: str, label: str) -> str:
        """Lines for tx on the updates, with its state the expression state; returns the
        expression of its new state. label: its place in the chain (names of its values)."""
        recipe = transforms.RECIPES.get(getattr(tx, "update", None))
        if recipe is None:
            raise S2SError("an optimizer's update that s2s.optax did not make cannot be compiled inside the step "
                           "(s2s reads the transformations of s2s.optax by what they are, not their code)",
                           hint="build the optimizer from s2s.optax's transformations, or take the step in Python")
        kind, settings = recipe
        if kind != "chain":
            self.emit(f"# {kind}({_settings(settings)})")
        return getattr(self, f"write_{kind}")(state, label, **settings)

    def write_chain(self, state: str, label: str, transforms: tuple) -> str:
        parts = [self.transformation(t, f"{state}[{j}]", f"{label}{j}") for j, t in enumerate(transforms)]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def write_identity(self, state: str, label: str) -> str:
        return state

    def write_scale(self, state: str, label: str, step_size) -> str:
        for k, g in enumerate(self.updates):
            self.rebind(k, f"{_number(step_size)} * {g}")
        return state

    def write_scale_by_schedule(self, state: str, label: str, step_size_fn) -> str:
        raise S2SError("a learning rate that is a schedule cannot be compiled inside the step yet (the schedule is "
                       "a Python function of the step count)",
                       hint="give the optimizer a number as its learning rate, or take the step in Python: "
                            "state = state.apply_gradients(grads=s2s.jit(s2s.grad(loss))(state.params, batch))")

    def write_scale_by_adam(self, state: str, label: str, b1, b2, eps, eps_root, nesterov) -> str:
        b1, b2, eps, eps_root = (_number(v) for v in (b1, b2, eps, eps_root))
        count = f"count_{label}"
        self.emit(f"{count} = {state}.count + 1")
        mus, nus = [], []
        for k, (path, g) in enumerate(zip(self.paths, self.updates)):
            mu, nu = f"mu_{label}_{self.names[k]}", f"nu_{label}_{self.names[k]}"
            self.emit(f"{mu} = {b1} * {access(f'{state}.mu', path)} + (1 - {b1}) * {g}")
            self.emit(f"{nu} = {b2} * {access(f'{state}.nu', path)} + (1 - {b2}) * {g} * {g}")
            mus.append(mu)
            nus.append(nu)
            if nesterov:
                mu_hat = f"({b1} * {mu} / (1 - {b1} ** ({count} + 1)) + (1 - {b1}) * {g} / (1 - {b1} ** {count}))"
            else:
                mu_hat = f"{mu} / (1 - {b1} ** {count})"
            self.rebind(k, f"{mu_hat} / (np.sqrt({nu} / (1 - {b2} ** {count}) + {eps_root}) + {eps})")
        cls = self.state_class(transforms.ScaleByAdamState)
        return f"{cls}({count}, {self.tree(mus)}, {self.tree(nus)})"

    def write_scale_by_rms(self, state: str, label: str, decay, eps) -> str:
        decay, eps = _number(decay), _number(eps)
        nus = []
        for k, (path, g) in enumerate(zip(self.paths, self.updates)):
            nu = f"nu_{label}_{self.names[k]}"
            self.emit(f"{nu} = {decay} * {access(f'{state}.nu', path)} + (1 - {decay}) * {g} * {g}")
            nus.append(nu)
            self.rebind(k, f"{g} / np.sqrt({nu} + {eps})")
        return f"{self.state_class(transforms.ScaleByRmsState)}({self.tree(nus)})"

    def write_trace(self, state: str, label: str, decay, nesterov) -> str:
        decay = _number(decay)
        traces = []
        for k, (path, g) in enumerate(zip(self.paths, self.updates)):
            trace = f"trace_{label}_{self.names[k]}"
            self.emit(f"{trace} = {g} + {decay} * {access(f'{state}.trace', path)}")
            traces.append(trace)
            self.rebind(k, f"{g} + {decay} * {trace}" if nesterov else trace)
        return f"{self.state_class(transforms.TraceState)}({self.tree(traces)})"

    def write_add_decayed_weights(self, state: str, label: str, weight_decay, mask) -> str:
        if callable(weight_decay) or callable(mask):
            what = "a weight decay that is a schedule" if callable(weight_decay) else "a mask given as a function"
            raise S2SError(f"{what} cannot be compiled inside the step (it is a Python function, of the step count "
                           "or of the parameters)",
                           hint="give the weight decay as a number and the mask as a tree of booleans like the "
                                "parameters, or take the step in Python")
        rate = _number(weight_decay)
        for k, (path, g) in enumerate(zip(self.paths, self.updates)):
            chosen = True if mask is None else bool(_at(mask, path))
            if chosen:
                self.rebind(k, f"{g} + {rate} * {access('params', path)}")
        return state

    def write_clip_by_global_norm(self, state: str, label: str, max_norm) -> str:
        max_norm = _number(max_norm)
        for k, g in enumerate(self.updates):
            if not g.startswith("update_"):
                self.rebind(k, g)
        norm = f"norm_{label}"
        squares = " + ".join(f"np.sum(np.square({g}))" for g in self.updates) or "0.0"
        self.emit(f"{norm} = np.sqrt({squares})")
        self.emit(f"if not {norm} < {max_norm}:")
        for k, g in enumerate(self.updates):
            self.rebind(k, f"{g} / {norm} * {max_norm}", indent=2)
        return state


def _at(tree: Any, path: tuple) -> Any:
    for step, value in path:
        tree = getattr(tree, value) if step == "field" else tree[value]
    return tree


def update_source(tx: Any, layout: tuple) -> tuple[str, dict]:
    """(the source of `optimizer_update(updates, state, params)` for tx on parameters of this
    layout, {name: the namedtuple class it builds}), or an S2SError where tx has a part that
    cannot be written."""
    writer = UpdateWriter(layout)
    new_state = writer.transformation(tx, "state", "")
    updates = writer.tree(writer.updates)
    head = ["def optimizer_update(updates, state, params):",
            '    """The optimizer\'s update (s2s.optax), leaf by leaf for parameters of this layout."""']
    return "\n".join(head + writer.lines + [f"    return ({updates}, {new_state})"]) + "\n", writer.classes


def apply_updates_source(layout: tuple) -> str:
    """The source of `apply_updates(params, updates)` for parameters of this layout: each leaf
    plus its update, an array keeping its dtype (transforms.apply_updates)."""
    names = leaf_names(layout)
    lines = ["def apply_updates(params, updates):",
             '    """params + updates, leaf by leaf (s2s.optax.apply_updates)."""']
    for name, (path, leaf) in zip(names, leaves(layout)):
        added = f"{access('params', path)} + {access('updates', path)}"
        if leaf[0] == "array" and np.dtype(leaf[1]) != np.float64:
            added = f"({added}).astype(np.{np.dtype(leaf[1]).name})"
        lines.append(f"    {name} = {added}")
    classes: dict = {}
    lines.append(f"    return {display(layout, iter(names), classes)}")
    if classes:
        raise S2SError("apply_updates inside a compiled step takes parameters in dicts, tuples and lists",
                       hint="hold the parameters in dicts (as s2s.nn's init returns them)")
    return "\n".join(lines) + "\n"
