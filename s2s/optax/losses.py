"""optax's losses as NumPy code, which s2s reads like a helper of the user's (frontend/source.py,
is_user_function): called inside a function s2s transforms, each is differentiated, batched and
compiled with it. Each returns the loss per example (optax's shapes); sum or average it."""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax


def softmax_cross_entropy(logits, labels):
    """-sum(labels * log_softmax(logits)) over the last axis: labels a distribution per row."""
    return -np.sum(labels * log_softmax(logits, axis=-1), axis=-1)


def softmax_cross_entropy_with_integer_labels(logits, labels):
    """-log_softmax(logits)[label] per row: labels the integer class of each row."""
    classes = np.arange(logits.shape[-1])
    chosen = np.expand_dims(labels, -1) == classes
    return -np.sum(np.where(chosen, log_softmax(logits, axis=-1), 0.0), axis=-1)


def l2_loss(predictions, targets=None):
    """0.5 * (predictions - targets) ** 2, elementwise (targets 0 where not given)."""
    errors = predictions if targets is None else predictions - targets
    return 0.5 * errors**2


def sigmoid_binary_cross_entropy(logits, labels):
    """-labels log(sigmoid(logits)) - (1 - labels) log(1 - sigmoid(logits)), elementwise, written
    so that it stays finite at large logits: log(sigmoid(x)) = -log(1 + exp(-x))."""
    return labels * np.logaddexp(0.0, -logits) + (1 - labels) * np.logaddexp(0.0, logits)
