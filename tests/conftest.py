import os
import sys

# The CUDA simulator must be chosen before numba is first imported.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# LLVM's -O3 pipeline dominates the suite's compile time (Numba re-optimises every runtime
# helper linked into each generated function); the suite checks results, not speed, and
# LLVM's optimisation level does not change float semantics (no fastmath, so no fused
# multiply-adds either). Level 0 compiles test_linalg_rules.py in about two thirds of level 1's
# time (3.5 against 5.3 minutes, measured side by side). s2s names the module files by NUMBA_OPT
# too, so this code never reaches a default process's cache. Set NUMBA_OPT=3 to run the suite
# at Numba's default.
os.environ.setdefault("NUMBA_OPT", "0")
sys.path.insert(0, os.path.dirname(__file__))
