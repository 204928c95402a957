"""flax.training.train_state.TrainState: the step count, the function that applies the model,
its parameters, the optimizer (an s2s.optax gradient transformation) and the optimizer's state,
in one immutable value.

    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))
    grads = s2s.grad(loss)(state.params, batch)
    state = state.apply_gradients(grads=grads)

Outside transformed code, apply_gradients runs the optimizer's update as Python and NumPy on the
pytrees (s2s.optax). A train_step that s2s.jit compiles whole takes the state as its arrays, as
Flax's TrainState is a pytree whose apply_fn and tx are static fields:

    @s2s.jit
    def train_step(state, batch):
        def loss_fn(params):
            logits = state.apply_fn(params, batch["image"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        grads = s2s.grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads)

The call passes the compiled code a namedtuple of the state's other fields (step, params,
opt_state, and a subclass's own), `state.apply_fn` is read as the function it holds (a model's
apply: the plain function s2s.nn writes), `state.apply_gradients(grads=...)` as a plain function
written for the optimizer and the parameters' layout (written.py), and the namedtuple the code
returns is made a TrainState again with the argument's apply_fn and tx (the static_values
protocol: __s2s_split__, __s2s_join__, __s2s_method__).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable

from .. import optax
from ..driver import cache
from ..optax.written import layout_of
from .written import STATIC_FIELDS, apply_gradients_function, apply_gradients_text, dynamic_fields, fields_class


@dataclasses.dataclass(frozen=True)
class TrainState:
    step: int
    apply_fn: Callable
    params: Any
    tx: optax.GradientTransformation
    opt_state: Any

    @classmethod
    def create(cls, *, apply_fn: Callable, params: Any, tx: optax.GradientTransformation, **kwargs) -> "TrainState":
        """A state at step 0, the optimizer's state initialised from params; kwargs: the fields of
        a subclass (as Flax's create passes them on)."""
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx, opt_state=tx.init(params), **kwargs)

    def apply_gradients(self, *, grads: Any, **kwargs) -> "TrainState":
        """The state after one step of the optimizer on grads (a pytree like params)."""
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        return self.replace(step=self.step + 1, params=optax.apply_updates(self.params, updates),
                            opt_state=opt_state, **kwargs)

    def replace(self, **changes) -> "TrainState":
        return dataclasses.replace(self, **changes)

    # ---- under s2s.jit (frontend/static_values.py) ------------------------------------------

    __s2s_methods__ = ("apply_gradients(grads=...)",)

    @classmethod
    def __s2s_fields_class__(cls) -> type:
        """The namedtuple of this class's fields that carry numbers."""
        return fields_class(cls)

    def __s2s_split__(self) -> tuple[Any, dict, tuple]:
        # (dicts in sorted-key order, as tree_map gives them back, and so the optimizer's state and
        # apply_gradients' parameters: the code compiled for the first step serves the next ones)
        fields = fields_class(type(self))(*(_in_sorted_order(getattr(self, f)) for f in dynamic_fields(type(self))))
        static = {name: getattr(self, name) for name in STATIC_FIELDS}
        return fields, static, layout_of(fields.params)

    @classmethod
    def __s2s_join__(cls, fields: Any, static: dict) -> "TrainState":
        return cls(**fields._asdict(), **static)

    @classmethod
    def __s2s_method__(cls, name: str, static: dict, layout: tuple) -> Callable | None:
        if name != "apply_gradients":
            return None
        return apply_gradients_function(cls, static["tx"], layout)

    @classmethod
    def __s2s_static_text__(cls, static: dict, layout: tuple) -> str:
        """What the code written for a state depends on besides its arrays: the function apply_fn
        stands for, and the source written for apply_gradients (the optimizer's settings in it)."""
        apply_fn = static["apply_fn"]
        if hasattr(apply_fn, "as_called_function"):
            apply_fn = apply_fn.as_called_function()
        try:
            written = apply_gradients_text(cls, static["tx"], layout)
        except Exception as exc:  # noqa: BLE001 - the call of apply_gradients refuses it, at its line
            written = f"not written: {exc}"
        digest = hashlib.sha256(written.encode()).hexdigest()[:16]
        return f"apply_fn={cache.static_text(apply_fn)}; apply_gradients={digest}"


def _in_sorted_order(tree: Any) -> Any:
    """tree with each dict's keys in sorted order (the same leaves; tree itself where it is so)."""
    if isinstance(tree, dict):
        keys = list(tree)
        try:
            ordered = sorted(keys)
        except TypeError:
            ordered = keys
        items = [(k, _in_sorted_order(tree[k])) for k in ordered]
        if ordered == keys and all(v is tree[k] for k, v in items):
            return tree  # (what a compiled step returns: its next call takes it as it is)
        return dict(items)
    if isinstance(tree, (tuple, list)):
        items = [_in_sorted_order(v) for v in tree]
        if all(a is b for a, b in zip(items, tree)):
            return tree
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    return tree


fields_class(TrainState)
