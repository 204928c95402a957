"""Which cases run in CI.

Numba compiling the generated modules is most of the suite's time on a cold cache (CI's always
is). Two samples keep CI within its time; S2S_FULL_SUITE=1 runs everything.

- Within a test: some tests run every case on the NumPy backend and compile a sample of them
  (`compiled_sample`): every k-th case in sorted order, the same on every run. S2S_FULL_JIT=1
  compiles them all.
- Across a test's cases: the test functions that took longest in a full run
  (tests/data/slow_tests.json, written by `python tests/slow_tests.py RUN.xml` from a run with
  --junitxml) run about one case in SLOW_EVERY, chosen by a hash of the case's id, the same on
  every run, and at least one (`sample_slow_cases`, called from conftest.py); pytest reports the
  rest as deselected.
"""

import json
import os
import zlib

FULL_SUITE = os.environ.get("S2S_FULL_SUITE") == "1"
FULL_JIT = FULL_SUITE or os.environ.get("S2S_FULL_JIT") == "1"
SLOW_EVERY = 8
SLOW_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "slow_tests.json")


def compiled_sample(cases, every):
    """The set of cases (sortable names) that compile: all under S2S_FULL_JIT=1, else every
    `every`-th in sorted order, starting with the first."""
    cases = sorted(cases)
    return set(cases) if FULL_JIT else set(cases[::every])


def slow_test_functions() -> set[str]:
    """The sampled test functions, as "test_file.py::test_name"."""
    with open(SLOW_TESTS) as f:
        return set(json.load(f)["functions"])


def sample_slow_cases(items: list) -> tuple[list, list]:
    """(kept, deselected) of the collected items."""
    if FULL_SUITE:
        return items, []
    slow = slow_test_functions()
    cases: dict[str, list] = {}
    for item in items:
        function = f"{item.path.name}::{item.originalname}"
        if function in slow:
            cases.setdefault(function, []).append(item)
    # (by a hash of each case's id, not by its place: every k-th place of a grid of parameters
    # would keep one value of its last parameter, the python backend of (python, cpu) say)
    kept_ids = set()
    for function, its_cases in cases.items():
        sample = [item for item in its_cases if zlib.crc32(item.nodeid.encode()) % SLOW_EVERY == 0]
        kept_ids |= {id(item) for item in sample or its_cases[:1]}
    kept = [item for item in items if id(item) in kept_ids or f"{item.path.name}::{item.originalname}" not in slow]
    deselected = [item for item in items if id(item) not in {id(k) for k in kept}]
    return kept, deselected
