"""First-order optimizers in the shape of JAX's `jax.example_libraries.optimizers`.

Each maker returns an `(init_fun, update_fun, get_params)` triple over any pytree of float
scalars and arrays (tuples, lists, dicts, namedtuples):

>>> import numpy as np, s2s
>>> def loss(params):
...     return np.sum((params["w"] - 3.0) ** 2)
>>> init_fun, update_fun, get_params = s2s.optimizers.adam(0.1)
>>> state = init_fun({"w": np.zeros(2)})
>>> for i in range(300):
...     state = update_fun(i, s2s.grad(loss)(get_params(state)), state)
>>> np.round(get_params(state)["w"], 3).tolist()
[3.0, 3.0]

The update formulas are JAX's. What differs is how the state is kept: all leaves of one
dtype live in one contiguous 1-d buffer (and so do the moment estimates of each), and an
update is one numba.njit kernel call per dtype over the whole buffer, so a training loop
pays no Python or NumPy call per leaf and per operation; only the gradient's leaves are
copied into one buffer. A state is never changed in place (update_fun returns a new one, as in
JAX); the arrays get_params returns are views into it (writing into them changes that
state's parameters, as a NumPy training loop would).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .tree_util import pytree
from .errors import S2SError

Schedule = Callable[[int], float]


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


class _Layout:
    """Where each leaf of the parameters lives: its dtype group, offset, shape and kind."""

    def __init__(self, leaves: list, structure: Any):
        self.structure = structure
        self.dtypes: list[np.dtype] = []
        self.places: list[tuple] = []  # (group, start, stop, shape, kind)
        sizes: list[int] = []
        for k, leaf in enumerate(leaves):
            if pytree.is_integer_leaf(leaf) or not isinstance(leaf, (float, np.floating, np.ndarray)) \
                    or np.asarray(leaf).dtype.kind != "f":
                raise S2SError(f"optimizers take pytrees of float scalars and arrays; leaf {k} is "
                               f"{type(leaf).__name__} {getattr(leaf, 'dtype', '')}".rstrip(),
                               hint="pass floats (e.g. 1.0 instead of 1, or x.astype(float))")
            dtype = np.asarray(leaf).dtype
            if dtype not in self.dtypes:
                self.dtypes.append(dtype)
                sizes.append(0)
            group = self.dtypes.index(dtype)
            size = int(np.size(leaf))
            kind = "array" if isinstance(leaf, np.ndarray) else type(leaf)
            self.places.append((group, sizes[group], sizes[group] + size, np.shape(leaf), kind))
            sizes[group] += size
        self.shapes = [place[3] for place in self.places]
        self.getter: Callable | None = None  # _leaf_getter, on first use
        self.groups = [[k for k, place in enumerate(self.places) if place[0] == g] for g in range(len(self.dtypes))]

    def pack(self, leaves: list) -> list[np.ndarray]:
        """One contiguous buffer per dtype group, the leaves raveled in order."""
        buffers = []
        for group, dtype in zip(self.groups, self.dtypes):
            parts = [np.ravel(leaves[k]) for k in group]
            buffers.append(np.concatenate(parts, dtype=dtype) if parts else np.empty(0, dtype))
        return buffers

    def unpack(self, buffers: list[np.ndarray]) -> Any:
        out = []
        for group, start, stop, shape, kind in self.places:
            view = buffers[group][start:stop]
            if kind == "array":
                out.append(view.reshape(shape))
            else:
                out.append(kind(view[0]))
        return pytree.unflatten(self.structure, out)


class OptimizerState:
    """An optimizer's state: the parameters and the optimizer's slots (moments, velocity),
    each one buffer per dtype of the parameters' leaves. Pass it to update_fun and get_params."""

    __slots__ = ("layout", "params", "slots", "_tree")

    def __init__(self, layout: _Layout, params: list, slots: list):
        self.layout = layout
        self.params = params  # one buffer per dtype group
        self.slots = slots  # per slot, one buffer per dtype group
        # get_params hands out views of params, writable: Numba types a read-only array as
        # another type, and would compile every function they are passed to a second time.
        self._tree = None

    def __repr__(self) -> str:
        sizes = ", ".join(f"{b.size} {b.dtype}" for b in self.params)
        return f"OptimizerState({len(self.layout.places)} leaves: {sizes}; {len(self.slots)} slots)"


# ---- the kernels, one per optimizer, over whole buffers ------------------------------------
#
# Written with JAX's formulas and operation order; compiled by numba.njit on first use (the
# import stays out of `import s2s`). Scalars come in the buffer's dtype, so float32 parameters
# are updated in float32 arithmetic, as JAX does.


def _sgd_kernel(x, g, step):
    out = np.empty_like(x)
    for k in range(x.shape[0]):
        out[k] = x[k] - step * g[k]
    return out


def _momentum_kernel(x, g, velocity, step, mass):
    out, new_velocity = np.empty_like(x), np.empty_like(x)
    for k in range(x.shape[0]):
        v = mass * velocity[k] + g[k]
        new_velocity[k] = v
        out[k] = x[k] - step * v
    return out, new_velocity


def _rmsprop_kernel(x, g, avg_sq_grad, step, gamma, one_minus_gamma, eps):
    out, new_avg = np.empty_like(x), np.empty_like(x)
    for k in range(x.shape[0]):
        a = avg_sq_grad[k] * gamma + g[k] * g[k] * one_minus_gamma
        new_avg[k] = a
        out[k] = x[k] - step * g[k] / np.sqrt(a + eps)
    return out, new_avg


def _adam_kernel(x, g, m, v, step, b1, one_minus_b1, b2, one_minus_b2, correction1, correction2, eps):
    out, new_m, new_v = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    for k in range(x.shape[0]):
        mk = one_minus_b1 * g[k] + b1 * m[k]
        vk = one_minus_b2 * (g[k] * g[k]) + b2 * v[k]
        new_m[k] = mk
        new_v[k] = vk
        mhat = mk / correction1
        vhat = vk / correction2
        out[k] = x[k] - step * mhat / (np.sqrt(vhat) + eps)
    return out, new_m, new_v


_COMPILED: dict = {}


def _compiled(kernel: Callable) -> Callable:
    found = _COMPILED.get(kernel)
    if found is None:
        import numba

        found = _COMPILED[kernel] = numba.njit(cache=True)(kernel)
    return found


# ---- the pytree side -----------------------------------------------------------------------


def make_schedule(step_size: float | Schedule) -> Schedule:
    """A step size as a schedule `i -> float` (a number is a constant schedule)."""
    if callable(step_size):
        return step_size
    if np.ndim(step_size) == 0:
        value = float(step_size)
        return lambda i: value
    raise S2SError(f"a step size is a number or a schedule i -> float, got {type(step_size).__name__}")


def _leaf_getter(layout: _Layout) -> Callable:
    """A function that returns the leaves of a pytree with the layout's structure and shapes,
    or None for anything else: written out for the structure (t["layer0"]["w"], ...), as
    pytree.flatten's recursion would cost more than the update itself."""
    lines, counter = ["def leaves(t0):"], [0]

    def walk(node, var):
        if node[0] == "leaf":
            shape = layout.shapes[len(leaves_out)]
            if shape:
                lines.append(f"    if getattr({var}, 'shape', None) != {shape!r}: return None")
            else:  # (a vector for a number would shift every later leaf of its dtype group)
                lines.append(f"    if ndim({var}) != 0: return None")
            leaves_out.append(var)
            return
        kind = dict if node[0] == "dict" else node[1]
        names[f"T{id(kind)}"] = kind
        lines.append(f"    if type({var}) is not T{id(kind)} or len({var}) != {len(node[2])}: return None")
        keys = node[1] if node[0] == "dict" else range(len(node[2]))
        for key, child in zip(keys, node[2]):
            counter[0] += 1
            child_var = f"t{counter[0]}"
            lines.append(f"    {child_var} = {var}[{key!r}]")
            walk(child, child_var)

    leaves_out: list[str] = []
    names: dict = {"ndim": np.ndim}
    walk(layout.structure, "t0")
    lines.append(f"    return [{', '.join(leaves_out)}]")
    exec("\n".join(lines), names)  # noqa: S102 - written here from the layout
    return names["leaves"]


def _gradient_buffers(layout: _Layout, grads: Any) -> list[np.ndarray]:
    if layout.getter is None:
        layout.getter = _leaf_getter(layout)
    try:
        leaves = layout.getter(grads)
    except (KeyError, IndexError, TypeError):
        leaves = None
    if leaves is not None:
        return layout.pack(leaves)
    leaves, structure = pytree.flatten(grads)  # (not the fast path's kind of tree: check it)
    if structure != layout.structure or [np.shape(g) for g in leaves] != layout.shapes:
        raise S2SError("update_fun: the gradient does not have the structure and shapes of the parameters",
                       hint="pass s2s.grad(loss)(get_params(state), ...), a pytree like the parameters")
    return layout.pack(leaves)


def _optimizer(kernel: Callable, slot_count: int, scalars: Callable) -> Optimizer:
    """(init_fun, update_fun, get_params) around a kernel(x, g, *slots, *scalars(i, dtype))
    that returns the new x and slots."""

    def init_fun(x0: Any) -> OptimizerState:
        leaves, structure = pytree.flatten(x0)
        layout = _Layout(leaves, structure)
        params = layout.pack(leaves)  # (np.concatenate copies: the caller's arrays stay apart)
        return OptimizerState(layout, params, [[np.zeros_like(b) for b in params] for _ in range(slot_count)])

    def update_fun(i: int, grads: Any, state: OptimizerState) -> OptimizerState:
        if not isinstance(state, OptimizerState):
            raise S2SError(f"update_fun takes the state init_fun returned, got {type(state).__name__}")
        layout = state.layout
        gradients = _gradient_buffers(layout, grads)
        compiled = _compiled(kernel)
        params, slots = [], [[] for _ in range(slot_count)]
        for group, (x, g) in enumerate(zip(state.params, gradients)):
            result = compiled(x, g, *(slot[group] for slot in state.slots), *scalars(i, x.dtype.type))
            result = result if slot_count else (result,)
            params.append(result[0])
            for s in range(slot_count):
                slots[s].append(result[1 + s])
        return OptimizerState(layout, params, slots)

    def get_params(state: OptimizerState) -> Any:
        if not isinstance(state, OptimizerState):
            raise S2SError(f"get_params takes the state init_fun returned, got {type(state).__name__}")
        if state._tree is None:
            state._tree = state.layout.unpack(state.params)
        return state._tree

    return Optimizer(init_fun, update_fun, get_params)


def sgd(step_size: float | Schedule) -> Optimizer:
    """Stochastic gradient descent: x <- x - step_size(i) * g."""
    schedule = make_schedule(step_size)
    return _optimizer(_sgd_kernel, 0, lambda i, t: (t(schedule(i)),))


def momentum(step_size: float | Schedule, mass: float) -> Optimizer:
    """Heavy-ball momentum: v <- mass * v + g; x <- x - step_size(i) * v."""
    schedule = make_schedule(step_size)
    return _optimizer(_momentum_kernel, 1, lambda i, t: (t(schedule(i)), t(mass)))


def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8) -> Optimizer:
    """RMSProp: a <- a * gamma + g**2 * (1 - gamma); x <- x - step_size(i) * g / sqrt(a + eps)."""
    schedule = make_schedule(step_size)
    return _optimizer(_rmsprop_kernel, 1, lambda i, t: (t(schedule(i)), t(gamma), t(1.0 - gamma), t(eps)))


def adam(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Optimizer:
    """Adam (Kingma and Ba): moment estimates m, v with bias correction 1 - b**(i + 1)."""
    schedule = make_schedule(step_size)

    def scalars(i, t):
        # JAX: 1 - jnp.asarray(b1, m.dtype) ** (i + 1), in the parameters' dtype
        return (t(schedule(i)), t(b1), t(1 - b1), t(b2), t(1 - b2),
                t(1 - t(b1) ** (i + 1)), t(1 - t(b2) ** (i + 1)), t(eps))

    return _optimizer(_adam_kernel, 2, scalars)


__all__ = ["Optimizer", "OptimizerState", "adam", "make_schedule", "momentum", "rmsprop", "sgd"]
