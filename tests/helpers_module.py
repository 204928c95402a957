"""A second module, so that tests can differentiate through imported functions."""

import numpy as np

SCALE = 0.5


def smooth_step(x, k):
    return 1.0 / (1.0 + np.exp(-k * x)) * SCALE
