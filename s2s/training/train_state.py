"""flax.training.train_state.TrainState: the step count, the function that applies the model,
its parameters, the optimizer (an s2s.optax gradient transformation) and the optimizer's state,
in one immutable value.

    state = train_state.TrainState.create(apply_fn=model_apply, params=params, tx=optax.adam(1e-3))
    grads = s2s.grad(loss)(state.params, batch)
    state = state.apply_gradients(grads=grads)

apply_gradients runs the optimizer's update as Python and NumPy on the pytrees (s2s.optax), on the
gradient a transformed function returns. A train_step that s2s.jit compiles whole is not supported:
inside a transformed function, state.apply_fn(...) and state.apply_gradients(...) are refused with an
S2SError at their line (what an argument holds is known only when the code runs); jit the gradient
of a module-level loss and take the step in Python."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from .. import optax


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
