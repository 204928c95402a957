"""Flax's layers (Dense, Conv, Embed, LayerNorm, Dropout, Sequential) with its fields, defaults,
parameter names and initialisers.

Each layer runs eagerly (init and apply) through the NumPy functions of functional.py, and says
how the code s2s.nn writes calls them (`written_call`): the written source then shows the very
same function applied to the layer's entries of the params dict.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import S2SError
from . import functional, initializers
from .module import Module, compact, static_hash


def _key_code(path: tuple, count: int) -> str:
    """The code of the key a module at path draws for its count-th use of the 'dropout' stream:
    rngs["dropout"] folded with the hash of the path and the count (module.py, Scope)."""
    return f'nn_random.fold_in(rngs["dropout"], {static_hash(tuple(path) + (count,))})'



def _drawn_as_flax(init_fn: Callable) -> Callable:
    """init_fn drawing as Flax draws: in float32 (Flax's param_dtype), widened to a float64
    param_dtype (s2s's default), so that init gives Flax's numbers; zeros and ones are the same
    either way. A float32 param_dtype is drawn as it is."""
    def draw(key, shape, dtype=np.float64):
        if np.dtype(dtype) != np.float64:
            return init_fn(key, shape, dtype)
        return np.asarray(init_fn(key, shape, np.float32), np.float64)
    return draw


class Layer(Module):
    """A layer whose written code is one call of a function of functional.py."""

    def written_call(self, params: str, args: list[str], kwargs: dict[str, str], writer: Any) -> str:
        raise NotImplementedError


def _one_argument(layer: Module, args: list, kwargs: dict) -> Any:
    if len(args) != 1 or kwargs:
        raise S2SError(f"{type(layer).__name__} is called with one argument, the input, here",
                       hint=f"call {type(layer).__name__}(...)(x)")
    return args[0]


class Dense(Layer):
    """y = x @ kernel + bias over the last axis; kernel (in, features): lecun_normal, bias: zeros."""

    features: int
    use_bias: bool = True
    kernel_init: Callable = initializers.lecun_normal()
    bias_init: Callable = initializers.zeros
    param_dtype: Any = np.float64

    @compact
    def __call__(self, inputs):
        x = np.asarray(inputs)
        kernel = self.param("kernel", _drawn_as_flax(self.kernel_init), (x.shape[-1], self.features), self.param_dtype)
        if not self.use_bias:
            return functional.dense_without_bias(x, kernel)
        bias = self.param("bias", _drawn_as_flax(self.bias_init), (self.features,), self.param_dtype)
        return functional.dense(x, kernel, bias)

    def written_call(self, params, args, kwargs, writer):
        x = _one_argument(self, args, kwargs)
        if not self.use_bias:
            return f'nn_functional.dense_without_bias({x}, {params}["kernel"])'
        return f'nn_functional.dense({x}, {params}["kernel"], {params}["bias"])'


def _padding(padding: Any, kernel_size: tuple) -> list[tuple[int, int]]:
    """(low, high) zero padding per spatial axis, for stride 1: 'SAME' keeps the size (the odd one
    after, as XLA), 'VALID' pads nothing, an int pads both sides, pairs are taken as given."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return [(0, 0)] * len(kernel_size)
        if padding.upper() == "SAME":
            return [((k - 1) // 2, k - 1 - (k - 1) // 2) for k in kernel_size]
        raise S2SError(f"Conv padding {padding!r} is not supported", hint="use 'SAME', 'VALID', an int or (low, high) pairs")
    if isinstance(padding, int):
        return [(padding, padding)] * len(kernel_size)
    pairs = [tuple(p) if not isinstance(p, int) else (p, p) for p in padding]
    if len(pairs) != len(kernel_size):
        raise S2SError(f"Conv padding {padding!r} has not one pair per spatial axis", hint="give one (low, high) per axis")
    return pairs


class Conv(Layer):
    """Cross-correlation over the spatial axes of channels-last inputs (NWC, NHWC: Flax's layout),
    any leading batch axes; kernel kernel_size + (in, features): lecun_normal, bias: zeros.
    One or two spatial axes, stride 1, no dilation (s2s.nn refuses the others)."""

    features: int
    kernel_size: Any
    strides: Any = 1
    padding: Any = "SAME"
    input_dilation: Any = 1
    kernel_dilation: Any = 1
    feature_group_count: int = 1
    use_bias: bool = True
    kernel_init: Callable = initializers.lecun_normal()
    bias_init: Callable = initializers.zeros
    param_dtype: Any = np.float64

    def _checked(self) -> tuple[tuple, list]:
        kernel_size = (self.kernel_size,) if isinstance(self.kernel_size, int) else tuple(self.kernel_size)
        if len(kernel_size) not in (1, 2):
            raise S2SError(f"Conv with {len(kernel_size)} spatial axes is not supported by s2s.nn", hint="use 1 or 2")
        for setting in ("strides", "input_dilation", "kernel_dilation"):
            value = getattr(self, setting)
            if any(v != 1 for v in ((value,) if isinstance(value, int) else tuple(value or (1,)))):
                raise S2SError(f"Conv {setting}={value!r} is not supported by s2s.nn (only 1)",
                               hint="subsample the result (y[:, ::2, ::2, :]) for a stride")
        if self.feature_group_count != 1:
            raise S2SError("Conv feature_group_count other than 1 is not supported by s2s.nn",
                           hint="split the channels and use one Conv per group")
        return kernel_size, _padding(self.padding, kernel_size)

    @compact
    def __call__(self, inputs):
        kernel_size, pads = self._checked()
        x = np.asarray(inputs)
        kernel = self.param("kernel", _drawn_as_flax(self.kernel_init), kernel_size + (x.shape[-1], self.features),
                            self.param_dtype)
        flat = [p for pair in pads for p in pair]
        y = (functional.conv_1d if len(kernel_size) == 1 else functional.conv_2d)(x, kernel, *flat)
        if self.use_bias:
            y = y + self.param("bias", _drawn_as_flax(self.bias_init), (self.features,), self.param_dtype)
        return y

    def written_call(self, params, args, kwargs, writer):
        x = _one_argument(self, args, kwargs)
        kernel_size, pads = self._checked()
        flat = ", ".join(str(p) for pair in pads for p in pair)
        call = f'nn_functional.conv_{len(kernel_size)}d({x}, {params}["kernel"], {flat})'
        return f'{call} + {params}["bias"]' if self.use_bias else call


class Embed(Layer):
    """Rows of an embedding table (num_embeddings, features) picked by integer ids; the table:
    variance_scaling(1.0, 'fan_in', 'normal', out_axis=0)."""

    num_embeddings: int
    features: int
    embedding_init: Callable = initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)
    param_dtype: Any = np.float64

    @compact
    def __call__(self, inputs):
        table = self.param("embedding", _drawn_as_flax(self.embedding_init), (self.num_embeddings, self.features),
                           self.param_dtype)
        return functional.embed(table, np.asarray(inputs))

    def written_call(self, params, args, kwargs, writer):
        return f'nn_functional.embed({params}["embedding"], {_one_argument(self, args, kwargs)})'


class LayerNorm(Layer):
    """Normalised over the last axis, then scale (ones) and bias (zeros), epsilon 1e-6."""

    epsilon: float = 1e-6
    use_bias: bool = True
    use_scale: bool = True
    scale_init: Callable = initializers.ones
    bias_init: Callable = initializers.zeros
    param_dtype: Any = np.float64

    @compact
    def __call__(self, x):
        x = np.asarray(x)
        features = (x.shape[-1],)
        scale = self.param("scale", _drawn_as_flax(self.scale_init), features, self.param_dtype) \
            if self.use_scale else 1.0
        bias = self.param("bias", _drawn_as_flax(self.bias_init), features, self.param_dtype) if self.use_bias else 0.0
        return functional.layer_norm(x, scale, bias, self.epsilon)

    def written_call(self, params, args, kwargs, writer):
        x = _one_argument(self, args, kwargs)
        if not self.use_scale and not self.use_bias:
            return f"nn_functional.layer_norm_without_affine({x}, {self.epsilon!r})"
        scale = f'{params}["scale"]' if self.use_scale else "1.0"
        bias = f'{params}["bias"]' if self.use_bias else "0.0"
        return f"nn_functional.layer_norm({x}, {scale}, {bias}, {self.epsilon!r})"


class Dropout(Layer):
    """Zeroes each entry with probability rate and scales the rest by 1 / (1 - rate), with a key of
    the 'dropout' stream (rngs={'dropout': key} to apply); the identity when deterministic (set
    here or passed at the call: Dropout(0.5)(x, deterministic=not train))."""

    rate: float
    deterministic: bool | None = None
    rng_collection: str = "dropout"

    def _deterministic(self, given):
        deterministic = self.deterministic if given is None else given
        if deterministic is None:
            raise S2SError("Dropout is given no deterministic flag (in its fields or at the call)",
                           hint="write nn.Dropout(rate, deterministic=...) or call it with deterministic=...")
        return deterministic

    @compact
    def __call__(self, inputs, deterministic: bool | None = None):
        if self.rng_collection != "dropout":
            raise S2SError("Dropout draws from the 'dropout' stream only in s2s.nn", hint="leave rng_collection as is")
        if self._deterministic(deterministic) or self.rate == 0.0:
            return inputs
        return functional.dropout(np.asarray(inputs), self.rate, False, self.make_rng("dropout"))

    def written_call(self, params, args, kwargs, writer):
        if len(args) == 2:
            kwargs = {"deterministic": args[1], **kwargs}
            args = args[:1]
        if set(kwargs) - {"deterministic"} or len(args) != 1:
            raise S2SError("Dropout is called with the input and, optionally, deterministic=...",
                           hint="call nn.Dropout(rate)(x, deterministic=...)")
        given = kwargs.get("deterministic", self._nn.get("deterministic_code") or "None")
        static = writer.static_text(given)
        if static is not writer.DYNAMIC:
            deterministic = self._deterministic(static)
            if deterministic or self.rate == 0.0:
                return args[0]
            flag = "False"
        else:
            flag = given if self.deterministic is None else f"{given} if {given} is not None else {self.deterministic!r}"
        writer.uses_rngs = True
        scope = self._scope()
        count = scope.rng_counts["dropout"] = scope.rng_counts.get("dropout", 0) + 1
        return f"nn_functional.dropout({args[0]}, {self.rate!r}, {flag}, {_key_code(scope.path, count)})"


class Sequential(Module):
    """Each layer applied to the result of the one before; a layer may be a module or a function
    (nn.relu). As in Flax, modules that no module made (made outside init and apply, or in a
    setup) are its layers_0, layers_2, ... by their place in the list; modules made inline in an
    @nn.compact method (Sequential([nn.Dense(4), nn.relu, nn.Dense(2)]) there) stay that
    method's module's Dense_0 and Dense_1, and the Sequential has no parameters of its own."""

    layers: Sequence[Any]

    def __call__(self, *args, **kwargs):
        if not self.layers:
            raise S2SError("Sequential has no layers", hint="give it at least one")
        outputs = self.layers[0](*args, **kwargs)
        for layer in self.layers[1:]:
            outputs = layer(*outputs) if isinstance(outputs, tuple) else layer(outputs)
        return outputs

    def written_call(self, params, args, kwargs, writer):
        if not self.layers:
            raise S2SError("Sequential has no layers", hint="give it at least one")
        code = None
        for layer in self.layers:
            if isinstance(layer, Module):
                inner = writer.program_call_of_child(self, layer, params, [code] if code else args,
                                                     {} if code else kwargs)
            else:
                inner = f"{writer.constant(layer)}({code if code else ', '.join(args)})"
            code = inner
        return code
