"""What every test file's process would otherwise compile again, compiled once in the process
that forks them (file_processes.py).

A test file runs in a process forked from its pytest process, so it inherits what that process
has compiled, and a file that compiles anything first pays Numba's start (its typing and target
contexts, LLVM) and the compilation of the runtime helpers that most generated code calls
(unbroadcast, the reductions' adjoints, a loop's tape, slices), a few seconds each time. Compiling
one small function that calls them here, before the first file is forked, pays that once per
pytest process. It changes no test's result: a file compiles what it compiled before, less what it
finds already compiled. S2S_SUITE_WARM_UP=0 turns it off.
"""

import logging
import os
import warnings

import numpy as np


def _loss(x, w, b):
    hidden = np.tanh(x @ w + b)
    total = 0.0
    for i in range(x.shape[0]):
        total = total + np.sum(hidden[i] * hidden[i]) * 0.5
    scaled = hidden * 1.0
    scaled[0, :] = np.exp(hidden[1, :])
    return total + np.mean(np.maximum(scaled, 0.0) ** 2) + np.sum(np.sin(x), axis=0)[0]


def warm_up() -> None:
    """Compile _loss's gradient and forward derivative under s2s.jit; a failure here is left to
    the tests to meet (they run cold, as without this)."""
    if os.environ.get("S2S_SUITE_WARM_UP", "1") == "0":
        return
    import s2s

    x, w, b = np.linspace(0.1, 1.2, 6).reshape(3, 2), np.full((2, 2), 0.3), np.zeros(2)
    progress = logging.getLogger("s2s")  # (its "compiling ..." lines would precede the first test's)
    level = progress.level
    progress.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s2s.jit(s2s.value_and_grad(_loss, argnums=(0, 1, 2)))(x, w, b)
            s2s.jit(s2s.jacfwd(_loss))(x, w, b)
    except Exception as error:  # noqa: BLE001  (the tests themselves meet and report it)
        warnings.warn(f"tests/numba_warm_up.py: the warm-up failed ({error!r}); the tests run cold")
    finally:
        progress.setLevel(level)
