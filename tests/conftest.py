import os
import random
import sys

import pytest

# The CUDA simulator must be chosen before numba is first imported.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# LLVM's -O3 pipeline dominates the suite's compile time (Numba re-optimises every runtime
# helper linked into each generated function); the suite checks results, not speed, and
# LLVM's optimisation level does not change float semantics (no fastmath, so no fused
# multiply-adds either). Level 0 compiles test_linalg_rules.py in about two thirds of level 1's
# time (3.5 against 5.3 minutes, measured side by side). s2s names the module files by NUMBA_OPT
# too, so this code never reaches a default process's cache. Set NUMBA_OPT=3 to run the suite
# at Numba's default. (At level 0 a function that calls another compiled function keeps a dead
# load of the callee's address, which Numba counts as a dynamic global: such functions are not
# cached, hence the suite's "Cannot cache ... as it uses dynamic globals" warnings. At the default
# level the load is removed and they are cached.)
os.environ.setdefault("NUMBA_OPT", "0")
sys.path.insert(0, os.path.dirname(__file__))
from file_processes import pytest_runtest_protocol  # noqa: E402,F401  (each test file in a process of its own)
from sampling import FULL_SUITE, SLOW_EVERY, sample_slow_cases, slow_test_functions  # noqa: E402
# The transform x rule matrix (test_rule_matrix.py) checks a sample of the rules under s2s.jit, in
# the CUDA simulator, in float32, vmap and second order, drawn from this seed: set here, in the process that starts pytest-xdist's
# workers (which inherit it, and so collect the same sample), new on each run, printed at its end.
os.environ.setdefault("S2S_RULE_MATRIX_SEED", str(random.SystemRandom().randrange(10**6)))

# The slowest files first (seconds of a cold-cache run, measured: test_rule_matrix about 240 on a
# loaded machine, test_second_order about 270 after its sampling, test_reverse_features 330,
# test_cuda 230, ...): pytest-xdist's --dist loadfile hands whole files to its two workers in
# collection order, and a long file handed out last keeps one worker busy while the other has
# nothing left to run.
SLOWEST_FIRST = ["test_rule_matrix.py", "test_reverse_features.py", "test_second_order.py", "test_cuda.py",
                 "test_linalg_rules.py", "test_rules_array_manipulation.py", "test_rules_scipy_stats.py",
                 "test_generated.py", "test_docs.py", "test_lax.py", "test_dask.py",
                 "test_properties.py", "test_rules_statistics.py", "test_jit_derivatives.py", "test_cache_and_hook.py",
                 "test_toolbox.py", "test_runtime.py", "test_vmap.py", "test_rules_polynomials.py", "test_float32.py",
                 "test_custom_rules.py", "test_reverse_lists.py"]


def pytest_terminal_summary(terminalreporter):
    if not FULL_SUITE:  # (under pytest-xdist this process collects nothing: the count is the file's)
        terminalreporter.write_line(
            f"slow tests: each of the {len(slow_test_functions())} slowest parametrized tests ran about one case "
            f"in {SLOW_EVERY}, the same on every run (tests/sampling.py; S2S_FULL_SUITE=1 runs them all)")
    seed = os.environ["S2S_RULE_MATRIX_SEED"]
    terminalreporter.write_line(f"rule matrix: the sampled columns checked the sample of S2S_RULE_MATRIX_SEED={seed} "
                                "(S2S_RULE_MATRIX=full checks every rule)")


def pytest_collection_modifyitems(session, config, items):
    kept, deselected = sample_slow_cases(items)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    rank = {name: k for k, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
