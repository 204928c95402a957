"""A function named act, as tests/twins_a.py has one: s2s must keep them apart."""

import numpy as np


def act(u):
    return np.sin(u) * 5.0
