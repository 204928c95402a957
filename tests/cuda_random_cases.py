"""Per-example programs that draw with s2s.random in CUDA kernels (tests/test_cuda_random.py).

Run as a script (`python tests/cuda_random_cases.py`, in a process without
NUMBA_ENABLE_CUDASIM=1), it compiles the kernel of every case of CASES to PTX for sm_90 and
prints a JSON object {case: "ok" | the error}, as tests/cuda_cases.py does for its cases.
"""

from __future__ import annotations

import json
import sys
import traceback

import numpy as np

import s2s
from s2s import random


def numbers(key, logits):  # one number of each draw
    e = random.exponential(key)
    e32 = random.exponential(key, (), np.float32)
    b = random.bernoulli(key, 0.3)
    b32 = random.bernoulli(key, np.float32(0.7))
    r = random.randint(key, (), -5, 17)
    r32 = random.randint(key, (), 0, 1000, np.int32)
    t = random.truncated_normal(key, -1.0, 2.0)
    t32 = random.truncated_normal(key, 0.5, 3.0, (), np.float32)
    c = random.categorical(key, logits)
    return e, e32, b, b32, r, r32, t, t32, c


def wide_integers(key):  # randint over spans past 2**32 and 2**63 (the wrapping arithmetic)
    a = random.randint(key, (), -(2**62), 2**62 + 12345)
    b = random.randint(key, (), -(2**63), 2**63 - 1)
    c = random.randint(key, (), -(2**31), 2**40, np.int32)
    return a, b, c


def arrays(key):  # draws of a shape, into local arrays (the output rows)
    e = random.exponential(key, (3,))
    b = random.bernoulli(key, 0.5, (2, 3))
    r = random.randint(key, (5,), 0, 10)
    t = random.truncated_normal(key, -1.0, 1.0, (4,))
    e32 = random.exponential(key, (2,), np.float32)
    r32 = random.randint(key, (3,), -3, 3, np.int32)
    t32 = random.truncated_normal(key, -2.0, 0.0, (2,), np.float32)
    return e, b, r, t, e32, r32, t32


def coins(key, p):  # bernoulli of an array of probabilities (the example's own row)
    return random.bernoulli(key, p)


def shuffles(key, x):  # permutations of range(6) and of the example's row
    order = random.permutation(key, 6)
    shuffled = random.permutation(key, x)
    return order, shuffled


def long_shuffle(key):  # 1700 elements: two rounds of sorting (JAX's rounds for n > 1625)
    return random.permutation(key, 1700)


def waits(key, mu, sigma):  # the reparameterisation trick through exponential and truncated_normal
    y = mu + sigma * random.exponential(key)
    t = random.truncated_normal(random.fold_in(key, 1), -1.0, 2.0)
    return np.sin(y) + y * t * sigma


def drawn_waits(key, mu, sigma):  # the same through a draw of a shape
    z = random.exponential(key, (4,))
    total = 0.0
    for i in range(4):
        total = total + np.exp(-(mu + sigma * z[i]))
    return total


# ---- refused ------------------------------------------------------------------------------

def columns(key, logits):  # categorical along the first axis of 2-d logits (an array of categories)
    return random.categorical(key, logits, axis=0)


def bounded(key, lower, upper):  # truncated_normal of arrays of bounds
    t = random.truncated_normal(key, lower, upper)
    return t[0]


def shuffled_rows(key, x):  # the rows of a 2-d array
    y = random.permutation(key, x)
    return y[0, 0]


def _keys(n=64):
    return random.split(random.PRNGKey(9), n)


def _logits(n=64):
    return np.random.default_rng(3).standard_normal((n, 5))


# name -> (the transformed function, before s2s.jit, and its arguments)
CASES = {
    "numbers": (lambda: s2s.vmap(numbers), lambda: (_keys(), _logits())),
    "wide_integers": (lambda: s2s.vmap(wide_integers), lambda: (_keys(),)),
    "arrays": (lambda: s2s.vmap(arrays), lambda: (_keys(),)),
    "coins": (lambda: s2s.vmap(coins), lambda: (_keys(), np.random.default_rng(4).random((64, 3)))),
    "shuffles": (lambda: s2s.vmap(shuffles), lambda: (_keys(), _logits())),
    "long_shuffle": (lambda: s2s.vmap(long_shuffle), lambda: (_keys(2),)),
    "waits_greeks": (lambda: s2s.vmap(s2s.grad(waits, argnums=(1, 2)), in_axes=(0, None, None)),
                     lambda: (_keys(), 0.3, 1.7)),
    "drawn_waits_greeks": (lambda: s2s.vmap(s2s.grad(drawn_waits, argnums=(1, 2)), in_axes=(0, None, None)),
                           lambda: (_keys(), 0.3, 1.7)),
}

# name -> (function, its arguments, the refused statement, what the message says)
REFUSED = {
    "categorical_axis": (columns, lambda: (_keys(4), _logits(4).reshape(4, 5, 1)),
                         "return random.categorical(key, logits, axis=0)", "more than one dimension"),
    "truncated_array_bounds": (bounded, lambda: (_keys(4), -np.ones((4, 3)), np.ones((4, 3))),
                               "t = random.truncated_normal(key, lower, upper)", "array parameters"),
    "permutation_of_rows": (shuffled_rows, lambda: (_keys(4), np.ones((4, 3, 2))), "y = random.permutation(key, x)",
                            "more than one dimension"),
}


def ptx_report() -> dict:
    from s2s.backends import cuda as cuda_backend

    try:  # numba-cuda without its NVVM (the cu12 extra) cannot compile: the tests say so and skip
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception as exc:
        return {"__nvvm__": f"{type(exc).__name__}: {exc}"}
    report = {}
    for name, (make, args) in CASES.items():
        try:
            ptx = cuda_backend.compile_ptx(s2s.jit(make(), backend="cuda"), *args())
            report[name] = "ok" if ".visible .entry" in ptx else "no kernel entry in the PTX"
        except Exception:  # reported to the test, which fails with it
            report[name] = traceback.format_exc()
    return report


if __name__ == "__main__" and not sys.argv[1:]:
    sys.stdout.write("S2S-PTX " + json.dumps(ptx_report()) + "\n")


def integer_report() -> dict:
    """randint's and permutation's element code (runtime.kernels), compiled by Numba for the CPU
    (register_jitable, as overloads/cuda.py registers it for numba-cuda): Numba's typing of its
    uint64 / int64 arithmetic is what a GPU runs, and this process has no simulator in the way.
    {check: "ok" | what differed}."""
    import numba
    from numba.extending import register_jitable

    from s2s.runtime import kernels as K

    for f in (random.threefry2x32, random._rotl, random._mix, random._four_rounds, K._hash, K._add64, K._mul64,
              K._unsigned, K._signed, K._randint_setup, K._randint, K._split2, K.randint32, K.randint64, K._shuffle):
        register_jitable(f)

    @numba.njit
    def randints(keys, lo, hi, wide):
        out = np.empty(keys.shape[0], np.int64)
        for b in range(keys.shape[0]):
            out[b] = K.randint64(keys[b], lo, hi) if wide else np.int64(K.randint32(keys[b], lo, hi))
        return out

    @numba.njit
    def shuffles(keys, n):
        out = np.empty((keys.shape[0], n), np.int64)
        for b in range(keys.shape[0]):
            K._shuffle(out[b], keys[b])
        return out

    keys, report = _keys(32), {}
    spans = [(-5, 17, True), (-(2**62), 2**62 + 12345, True), (-(2**63), 2**63 - 1, True), (3, 3, True),
             (0, 10, False), (-(2**31), 2**31 - 1, False), (-(2**31), 2**40, False), (0, 2**31 - 1, False)]
    for lo, hi, wide in spans:
        got = randints(keys, lo, hi, wide)
        want = [int(random.randint(k, (), lo, hi, np.int64 if wide else np.int32)) for k in keys]
        report[f"randint {lo} {hi} {wide}"] = "ok" if got.tolist() == want else f"{got.tolist()} != {want}"
    for n in (1, 7, 1700):
        got = shuffles(keys[:2], n)
        want = [random.permutation(k, n).tolist() for k in keys[:2]]
        report[f"permutation {n}"] = "ok" if got.tolist() == want else "the orders differ"
    return report


if __name__ == "__main__" and sys.argv[1:] == ["--integers"]:
    sys.stdout.write("S2S-INTEGERS " + json.dumps(integer_report()) + "\n")
