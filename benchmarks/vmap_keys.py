"""s2s.vmap over a batch of keys on the Python path: time per call of draws under vmap.

    python -m benchmarks.vmap_keys

Prints the median time of vmap(f)(keys) for a few draws and batch sizes (no assertions: a
measurement to compare before and after a change).
"""

from __future__ import annotations

import time

import numpy as np

import s2s
from s2s import random


def draws(key):
    a = random.normal(key)
    b = random.uniform(key, (3,), minval=-1.0, maxval=2.0)
    c = random.randint(key, (), 0, 10)
    d = random.exponential(random.fold_in(key, 7), (2,))
    return a + b[0] + c + d[1]


def one_normal(key):
    return random.normal(key)


def median_time(f, *args, repeat=7):
    f(*args)  # (the first call generates the module)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    for name, fun in (("one normal", one_normal), ("four draws + fold_in", draws)):
        vectorised = s2s.vmap(fun)
        for n in (10, 1000):
            keys = random.split(random.PRNGKey(0), n)
            seconds = median_time(vectorised, keys)
            print(f"vmap({name}) over {n:5d} keys: {seconds * 1e3:8.2f} ms ({seconds / n * 1e6:7.1f} us per key)")


if __name__ == "__main__":
    main()
