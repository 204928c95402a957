import os
import sys

# The CUDA simulator must be chosen before numba is first imported.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
sys.path.insert(0, os.path.dirname(__file__))
