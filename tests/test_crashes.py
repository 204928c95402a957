"""Programs that once crashed with a raw Python or Numba error naming no line of the user's
code; each now works, checked against central differences (s2s.testing.check_grads)."""

import numpy as np
import pytest

import s2s
from s2s.testing import check_grads


def stepped_inner_range(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i, n, 2):
            s = s + x[i] * x[j]
    return s


def descending_stepped_inner_range(x):
    n = x.shape[0]
    s = 0.0
    for i in range(2):
        for j in range(n, 0, -2):
            s = s + np.sin(x[j - 1]) * x[i]
    return s


@pytest.mark.parametrize("fun", [stepped_inner_range, descending_stepped_inner_range])
@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_nested_loops_with_a_stepped_inner_range(fun, backend):
    """The inner loop's trip count is taped per outer iteration (it raised UnboundLocalError:
    j_trips, the count pushed before it was assigned)."""
    x = np.array([0.3, 0.5, -0.2, 0.9, 1.1])
    check_grads(fun, (x,), order=2 if backend == "python" else 1, backend=backend)
