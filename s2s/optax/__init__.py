"""Optimizers and losses in the shape of optax, as the JAX tutorial's training loops use them:
`import s2s.optax as optax`.

A gradient transformation is a pair of functions, `init(params) -> state` and
`update(updates, state, params=None) -> (updates, state)`, over any pytree of arrays and
numbers; `apply_updates(params, updates)` adds the updates to the parameters. The optimizers
(`adam`, `adamw`, `sgd`, `rmsprop`) are chains of the transformations below them, with optax's
formulas, defaults and state layout (named tuples with optax's field names); a learning rate is a
number or a schedule (a function of the step count: `exponential_decay`,
`warmup_cosine_decay_schedule`, ...). They run as Python and NumPy on the pytrees: call them on
the gradient a transformed function returns (s2s.optimizers keeps one compiled kernel per dtype,
where a loop's Python overhead matters).

The losses (`softmax_cross_entropy`, `softmax_cross_entropy_with_integer_labels`, `l2_loss`,
`sigmoid_binary_cross_entropy`) are NumPy code that s2s reads like a helper of the user's (losses.py):
called inside a function s2s transforms, they are differentiated, batched and compiled with it.
"""

from __future__ import annotations

from .losses import (
    l2_loss,
    sigmoid_binary_cross_entropy,
    softmax_cross_entropy,
    softmax_cross_entropy_with_integer_labels,
)
from .schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    warmup_cosine_decay_schedule,
)
from .transforms import (
    AddDecayedWeightsState,
    ClipByGlobalNormState,
    EmptyState,
    GradientTransformation,
    ScaleByAdamState,
    ScaleByRmsState,
    ScaleByScheduleState,
    TraceState,
    adam,
    adamw,
    add_decayed_weights,
    apply_updates,
    chain,
    clip_by_global_norm,
    global_norm,
    identity,
    rmsprop,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_schedule,
    sgd,
    trace,
)

__all__ = [
    "GradientTransformation", "EmptyState", "ScaleByAdamState", "ScaleByRmsState", "TraceState",
    "ScaleByScheduleState", "AddDecayedWeightsState", "ClipByGlobalNormState",
    "adam", "adamw", "sgd", "rmsprop", "chain", "identity", "scale", "scale_by_adam", "scale_by_rms",
    "scale_by_schedule", "scale_by_learning_rate", "trace", "add_decayed_weights", "clip_by_global_norm",
    "global_norm", "apply_updates",
    "constant_schedule", "linear_schedule", "cosine_decay_schedule", "exponential_decay", "join_schedules",
    "warmup_cosine_decay_schedule",
    "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "l2_loss", "sigmoid_binary_cross_entropy",
]
