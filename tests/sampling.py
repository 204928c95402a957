"""Which cases compile under Numba in CI.

Numba compiling the generated modules is most of the suite's time on a cold cache (CI's
always is). Some tests run every case on the NumPy backend and compile a sample of them; the
sample is every k-th case in sorted order, so it is the same on every run. S2S_FULL_JIT=1
compiles them all.
"""

import os

FULL_JIT = os.environ.get("S2S_FULL_JIT") == "1"


def compiled_sample(cases, every):
    """The set of cases (sortable names) that compile: all under S2S_FULL_JIT=1, else every
    `every`-th in sorted order, starting with the first."""
    cases = sorted(cases)
    return set(cases) if FULL_JIT else set(cases[::every])
