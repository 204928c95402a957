"""optax's gradient transformations and optimizers, on pytrees of NumPy arrays and numbers.

Each transformation is an `(init, update)` pair; `update(updates, state, params=None)` returns
the transformed updates and the new state (a named tuple with optax's fields; never changed in
place). The optimizers are chains of them, as optax builds its own: adam is scale_by_adam then the
learning rate's scaling (with its sign flipped: updates are added to the parameters)."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import weakref

import numpy as np

from ..tree_util import tree_leaves, tree_map


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    pass


class ScaleByAdamState(NamedTuple):
    count: Any  # updates so far
    mu: Any  # first moment of the updates
    nu: Any  # second moment


class ScaleByRmsState(NamedTuple):
    nu: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByScheduleState(NamedTuple):
    count: Any


class AddDecayedWeightsState(NamedTuple):
    count: Any  # (with a weight decay that is a schedule; EmptyState otherwise)


ClipByGlobalNormState = EmptyState

# What each transformation made here is, by its update function: (kind, settings), from which
# written.py writes the update as code s2s.jit compiles (a train_step's state.apply_gradients).
RECIPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _made(kind: str, init: Callable, update: Callable, **settings) -> GradientTransformation:
    RECIPES[update] = (kind, settings)
    return GradientTransformation(init, update)


def _zeros_like(params):
    return tree_map(lambda p: np.zeros_like(np.asarray(p, dtype=float) if np.ndim(p) == 0 else p), params)


def _unchanged(params):
    return EmptyState()


def identity() -> GradientTransformation:
    return _made("identity", _unchanged, lambda updates, state, params=None: (updates, state))


def scale(step_size: float) -> GradientTransformation:
    """Every update times step_size."""
    return _made("scale", _unchanged, lambda updates, state, params=None: (
        tree_map(lambda g: step_size * g, updates), state), step_size=step_size)


def scale_by_schedule(step_size_fn: Callable[[int], float]) -> GradientTransformation:
    """Every update times step_size_fn(count), count the updates before this one."""

    def update(updates, state, params=None):
        step_size = step_size_fn(state.count)
        return tree_map(lambda g: step_size * g, updates), ScaleByScheduleState(state.count + 1)

    return _made("scale_by_schedule", lambda params: ScaleByScheduleState(0), update, step_size_fn=step_size_fn)


def scale_by_learning_rate(learning_rate, *, flip_sign: bool = True) -> GradientTransformation:
    """Times -learning_rate (a number, or a schedule of the count): a step down the gradient."""
    sign = -1.0 if flip_sign else 1.0
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, *,
                  nesterov: bool = False) -> GradientTransformation:
    """Kingma and Ba's Adam: the bias-corrected first moment over the root of the second's (plus
    eps_root inside, eps outside); nesterov: Dozat's NAdam correction of the first moment."""

    def init(params):
        return ScaleByAdamState(0, _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: b1 * m + (1 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1 - b2) * g * g, updates, state.nu)
        count = state.count + 1
        if nesterov:
            mu_hat = tree_map(lambda m, g: b1 * m / (1 - b1 ** (count + 1)) + (1 - b1) * g / (1 - b1 ** count),
                              mu, updates)
        else:
            mu_hat = tree_map(lambda m: m / (1 - b1 ** count), mu)
        out = tree_map(lambda m, v: m / (np.sqrt(v / (1 - b2 ** count) + eps_root) + eps), mu_hat, nu)
        return out, ScaleByAdamState(count, mu, nu)

    return _made("scale_by_adam", init, update, b1=b1, b2=b2, eps=eps, eps_root=eps_root, nesterov=nesterov)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0) -> GradientTransformation:
    """Tieleman and Hinton's RMSProp: each update over the root of the running mean of its
    squares (eps inside the root, as optax's default)."""

    def init(params):
        return ScaleByRmsState(tree_map(lambda z: z + initial_scale, _zeros_like(params)))

    def update(updates, state, params=None):
        nu = tree_map(lambda g, v: decay * v + (1 - decay) * g * g, updates, state.nu)
        return tree_map(lambda g, v: g / np.sqrt(v + eps), updates, nu), ScaleByRmsState(nu)

    return _made("scale_by_rms", init, update, decay=decay, eps=eps)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: the trace t = g + decay * t; the update is t (nesterov: g + decay * t)."""

    def update(updates, state, params=None):
        new = tree_map(lambda g, t: g + decay * t, updates, state.trace)
        out = tree_map(lambda g, t: g + decay * t, updates, new) if nesterov else new
        return out, TraceState(new)

    return _made("trace", lambda params: TraceState(_zeros_like(params)), update, decay=decay, nesterov=nesterov)


def add_decayed_weights(weight_decay=0.0, mask=None) -> GradientTransformation:
    """Adds weight_decay * params to the updates (decoupled weight decay); mask: a pytree of
    booleans like params, or a function of params giving one, choosing the leaves it applies to."""

    def init(params):
        return AddDecayedWeightsState(0) if callable(weight_decay) else EmptyState()

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights (adamw) needs the parameters: call update(updates, state, params)")
        rate = weight_decay(state.count) if callable(weight_decay) else weight_decay
        new_state = AddDecayedWeightsState(state.count + 1) if callable(weight_decay) else state
        chosen = mask(params) if callable(mask) else mask
        if chosen is None:
            return tree_map(lambda g, p: g + rate * p, updates, params), new_state
        return tree_map(lambda g, p, m: g + rate * p if m else g, updates, params, chosen), new_state

    return _made("add_decayed_weights", init, update, weight_decay=weight_decay, mask=mask)


def global_norm(updates) -> float:
    """The 2-norm of all the leaves together."""
    return float(np.sqrt(sum(np.sum(np.square(leaf)) for leaf in tree_leaves(updates))))


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """The updates scaled down together to max_norm where their global norm is above it."""

    def update(updates, state, params=None):
        norm = global_norm(updates)
        if norm < max_norm:
            return updates, state
        return tree_map(lambda g: g / norm * max_norm, updates), state

    return _made("clip_by_global_norm", _unchanged, update, max_norm=max_norm)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """The transformations applied in order; the state is the tuple of theirs."""

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        states = []
        for transform, its_state in zip(transforms, state):
            updates, its_state = transform.update(updates, its_state, params)
            states.append(its_state)
        return updates, tuple(states)

    return _made("chain", init, update, transforms=transforms)


def _added(p, u):
    if isinstance(p, np.ndarray):
        return (p + u).astype(p.dtype, copy=False)
    return p + u  # (a number stays a number)


def apply_updates(params, updates):
    """params + updates, leaf by leaf (an array keeps its dtype)."""
    return tree_map(_added, params, updates)


# ---- the optimizers --------------------------------------------------------------------


def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, *,
         nesterov: bool = False) -> GradientTransformation:
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=nesterov), scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
          weight_decay=1e-4, mask=None, *, nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov and Hutter): weight_decay * params added to
    Adam's step before the learning rate scales it."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=nesterov), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def sgd(learning_rate, momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with momentum (heavy ball, or Nesterov's) where given."""
    return chain(trace(momentum, nesterov) if momentum is not None else identity(),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
    return chain(scale_by_rms(decay, eps, initial_scale), scale_by_learning_rate(learning_rate),
                 trace(momentum, nesterov) if momentum is not None else identity())
