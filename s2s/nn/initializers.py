"""Parameter initialisers with flax.linen.initializers' names and formulas, drawn with s2s.random.

An initialiser is a function `init(key, shape, dtype) -> array`; the constructors below
(`lecun_normal()`, `variance_scaling(...)`) return one, as in Flax. The fans are JAX's: for a
kernel of shape (..., in, out) the receptive field is the product of the leading axes, fan_in =
in * receptive field and fan_out = out * receptive field (in_axis and out_axis choose the axes).
"""

from __future__ import annotations

import math

import numpy as np

from .. import random

# The standard deviation of a standard normal truncated to [-2, 2] (JAX's variance_scaling
# divides by it so that the truncated draw has the variance asked for).
_TRUNCATED_STDDEV = 0.87962566103423978


def zeros(key, shape, dtype=np.float64):
    return np.zeros(shape, dtype)


def ones(key, shape, dtype=np.float64):
    return np.ones(shape, dtype)


def constant(value, dtype=np.float64):
    def init(key, shape, dtype=dtype):
        return np.full(shape, value, dtype)
    return init


def normal(stddev=1e-2, dtype=np.float64):
    def init(key, shape, dtype=dtype):
        return random.normal(key, shape, dtype) * np.asarray(stddev, dtype)
    return init


def uniform(scale=1e-2, dtype=np.float64):
    def init(key, shape, dtype=dtype):
        return random.uniform(key, shape, dtype) * np.asarray(scale, dtype)
    return init


def _fans(shape, in_axis, out_axis) -> tuple[float, float]:
    if len(shape) < 2:
        raise ValueError(f"variance_scaling needs a shape of at least two axes, not {tuple(shape)}")
    receptive = math.prod(shape) / shape[in_axis] / shape[out_axis]
    return shape[in_axis] * receptive, shape[out_axis] * receptive


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, dtype=np.float64):
    """Draws with variance scale / n, n the fan_in, the fan_out or their mean (mode), from a normal
    truncated to two standard deviations ('truncated_normal'), a 'normal' or a 'uniform'."""
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling: mode {mode!r} is none of 'fan_in', 'fan_out', 'fan_avg'")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: distribution {distribution!r} is none of 'truncated_normal', "
                         "'normal', 'uniform'")

    def init(key, shape, dtype=dtype):
        fan_in, fan_out = _fans(tuple(shape), in_axis, out_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / denominator
        if distribution == "truncated_normal":
            stddev = math.sqrt(variance) / _TRUNCATED_STDDEV
            return random.truncated_normal(key, -2.0, 2.0, tuple(shape), dtype) * np.asarray(stddev, dtype)
        if distribution == "normal":
            return random.normal(key, tuple(shape), dtype) * np.asarray(math.sqrt(variance), dtype)
        return random.uniform(key, tuple(shape), dtype, -1.0, 1.0) * np.asarray(math.sqrt(3 * variance), dtype)
    return init


def lecun_normal(in_axis=-2, out_axis=-1, dtype=np.float64):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, dtype=np.float64):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, dtype=np.float64):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, dtype)


def glorot_uniform(in_axis=-2, out_axis=-1, dtype=np.float64):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, dtype=np.float64):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, dtype=np.float64):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, dtype)


xavier_normal, xavier_uniform = glorot_normal, glorot_uniform
kaiming_normal, kaiming_uniform = he_normal, he_uniform
