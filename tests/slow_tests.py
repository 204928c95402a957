"""Writes tests/data/slow_tests.json from a run's --junitxml file: the parametrized test functions
whose cases took together at least THRESHOLD seconds, and each at least CASE_THRESHOLD on average
(those that compile: the many quick cases of a rule-table test stay whole), which CI runs a sample
of (sampling.py).

    S2S_FULL_SUITE=1 python -m pytest -n 2 --dist loadfile --junitxml=/tmp/run.xml
    python tests/slow_tests.py /tmp/run.xml
"""

import collections
import json
import re
import sys
import xml.etree.ElementTree as ElementTree

from sampling import SLOW_TESTS

THRESHOLD = 3.0  # seconds, summed over a function's cases
CASE_THRESHOLD = 0.3  # seconds, a case's mean


def slow_functions(junit_path: str) -> dict[str, float]:
    seconds: dict[str, float] = collections.Counter()
    cases: dict[str, int] = collections.Counter()
    for case in ElementTree.parse(junit_path).iter("testcase"):
        module = case.get("classname").rsplit(".", 1)[-1]
        name = re.sub(r"\[.*", "", case.get("name"))  # (the function, without its case's parameters)
        function = f"{module}.py::{name}"
        seconds[function] += float(case.get("time"))
        cases[function] += 1
    return {f: round(s, 1) for f, s in sorted(seconds.items()) 
            if cases[f] > 1 and s >= THRESHOLD and s / cases[f] >= CASE_THRESHOLD}


if __name__ == "__main__":
    functions = slow_functions(sys.argv[1])
    with open(SLOW_TESTS, "w") as f:
        json.dump({"threshold_seconds": THRESHOLD, "case_threshold_seconds": CASE_THRESHOLD, "functions": functions},
                  f, indent=1)
        f.write("\n")
    print(f"{len(functions)} slow test functions written to {SLOW_TESTS}")
