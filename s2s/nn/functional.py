"""The arithmetic of s2s.nn's layers and activations, as plain NumPy functions.

s2s reads these as it reads a helper of the user's (frontend/source.py, is_user_function): the
function s2s.nn writes for a module calls them (`x = nn_functional.dense(x, params["Dense_0"]
["kernel"], params["Dense_0"]["bias"])`), and s2s differentiates, batches and compiles them with
the caller. Each takes arrays and numbers only, never a module, so that the generated source
says everything a layer computes. The formulas are Flax's (flax.linen), in NumPy.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .. import random


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def tanh(x):
    return np.tanh(x)


def gelu(x, approximate=True):
    """Flax's default is the tanh approximation (approximate=True); approximate=False is the
    exact form with the error function."""
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + special.erf(x * 0.7071067811865476))


def softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def one_hot(x, num_classes, dtype=np.float64):
    """Row k of the identity for each class index k (an index outside [0, num_classes) gives a
    row of zeros, as in JAX)."""
    return (np.expand_dims(x, -1) == np.arange(num_classes)).astype(dtype)


def dense(x, kernel, bias):
    return x @ kernel + bias


def dense_without_bias(x, kernel):
    return x @ kernel


def embed(embedding, ids):
    """The rows of the table that the integer ids pick (any shape of ids)."""
    return embedding[ids]


def layer_norm(x, scale, bias, epsilon):
    """Normalised over the last axis, then scaled and shifted (use_scale and use_bias: Flax's
    defaults)."""
    mean = np.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(variance + epsilon) * scale + bias


def layer_norm_without_affine(x, epsilon):
    mean = np.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(variance + epsilon)


def dropout(x, rate, deterministic, key):
    """x with each entry kept with probability 1 - rate and scaled by 1 / (1 - rate), else 0
    (Flax's mask: random.bernoulli(key, 1 - rate, x.shape), drawn in float32 as Flax draws it);
    x itself when deterministic."""
    if deterministic:
        return x
    keep = 1.0 - rate
    mask = random.bernoulli(key, np.float32(keep), x.shape)
    return np.where(mask, x / keep, 0.0)


def conv_1d(x, kernel, pad_low, pad_high):
    """Cross-correlation over the axis before the last (features last, as Flax's NWC), stride 1:
    x (..., width, in), kernel (k, in, out), the width padded with zeros by pad_low and pad_high."""
    k = kernel.shape[0]
    width = x.shape[-2] + pad_low + pad_high - k + 1
    padded = np.concatenate((np.zeros(x.shape[:-2] + (pad_low, x.shape[-1])), x,
                             np.zeros(x.shape[:-2] + (pad_high, x.shape[-1]))), axis=-2)
    out = padded[..., 0:width, :] @ kernel[0]
    for i in range(1, k):
        out = out + padded[..., i:i + width, :] @ kernel[i]
    return out


def conv_2d(x, kernel, pad_top, pad_bottom, pad_left, pad_right):
    """Cross-correlation over the two axes before the last (NHWC, as Flax), stride 1:
    x (..., height, width, in), kernel (kh, kw, in, out), zero padding as given."""
    kh, kw = kernel.shape[0], kernel.shape[1]
    rows = np.concatenate((np.zeros(x.shape[:-3] + (pad_top,) + x.shape[-2:]), x,
                           np.zeros(x.shape[:-3] + (pad_bottom,) + x.shape[-2:])), axis=-3)
    padded = np.concatenate((np.zeros(rows.shape[:-2] + (pad_left, x.shape[-1])), rows,
                             np.zeros(rows.shape[:-2] + (pad_right, x.shape[-1]))), axis=-2)
    height = padded.shape[-3] - kh + 1
    width = padded.shape[-2] - kw + 1
    out = padded[..., 0:height, 0:width, :] @ kernel[0, 0]
    for i in range(kh):
        for j in range(kw):
            if i > 0 or j > 0:
                out = out + padded[..., i:i + height, j:j + width, :] @ kernel[i, j]
    return out
