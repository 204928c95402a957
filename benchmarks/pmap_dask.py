"""s2s.pmap over Dask workers: 2 workers against 1, the same total work, and what a call costs.

    python -m benchmarks.pmap_dask [--quick]

A LocalCluster of two worker processes (one thread each) runs the Monte Carlo workload of
benchmarks/pmap_cpu.py (`payoffs`, a loop per path, compiled by s2s.jit on each worker): one
worker prices all the paths in one shard, two workers half each. The prices are checked to
agree before any time is reported; times are the best of several calls after a warm-up (the
first call generates and compiles on each worker). The same pricing again with the normal draws
made on each worker from a key per shard (only the keys travel). Then the cost of a call itself: a pmap of
a function that does nothing, and one whose shards meet at an s2s.lax.pmean of 1000 floats,
against the same pmaps on threads (CPU devices). Writes benchmarks/results/pmap_dask.md.
"""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

import s2s
from benchmarks.pmap_cpu import best_of, payoffs

HERE = os.path.dirname(os.path.abspath(__file__))


def drawn_payoffs(key, n_paths, n_steps, s0, sigma):
    """payoffs of this shard's own paths, drawn on the worker from its key: nothing but the key
    travels (16 bytes a shard, where the drawn z is 205 MB in all)."""
    z = s2s.random.normal(key, (n_paths, n_steps))
    return payoffs(z, s0, sigma)


def black_scholes_call(s0, sigma):
    """The exact price the Monte Carlo estimates (strike 1, one year, no rate)."""
    from math import erf, log, sqrt

    d1 = (log(s0) + 0.5 * sigma * sigma) / sigma
    cdf = lambda v: 0.5 * (1.0 + erf(v / sqrt(2.0)))  # noqa: E731
    return s0 * cdf(d1) - cdf(d1 - sigma)


def nothing(x):
    return x


def averaged(x):
    return s2s.lax.pmean(x, "i")


def main(quick: bool = False) -> str:
    import distributed

    paths, steps, repeat = (20_000, 128, 5) if quick else (100_000, 256, 7)
    z = np.random.default_rng(0).standard_normal((paths, steps))
    z1, z2 = z.reshape(1, paths, steps), z.reshape(2, paths // 2, steps)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as client:
        workers = s2s.dask_devices(client)
        one = s2s.pmap(payoffs, in_axes=(0, None, None), devices=workers[:1])
        two = s2s.pmap(payoffs, in_axes=(0, None, None), devices=workers)
        price1, price2 = one(z1, 1.0, 0.2)[0], np.mean(two(z2, 1.0, 0.2))
        assert abs(price1 - price2) < 1e-12 * abs(price1), (price1, price2)
        load_before = os.getloadavg()
        t1 = best_of(lambda: one(z1, 1.0, 0.2), repeat)
        t2 = best_of(lambda: two(z2, 1.0, 0.2), repeat)
        # The same work with the draws made on the workers: shard i draws from key i.
        drawn = {n: s2s.pmap(drawn_payoffs, in_axes=(0, None, None, None, None), static_broadcasted_argnums=(1, 2),
                             devices=workers[:n]) for n in (1, 2)}
        keys = {n: s2s.random.split(s2s.random.PRNGKey(0), n) for n in (1, 2)}
        exact = black_scholes_call(1.0, 0.2)
        for n in (1, 2):  # other draws than z's: each price within 5 standard errors of the exact one
            price = np.mean(drawn[n](keys[n], paths // n, steps, 1.0, 0.2))
            assert abs(price - exact) < 5 * 0.15 / np.sqrt(paths), (n, price, exact)
        d1 = best_of(lambda: drawn[1](keys[1], paths, steps, 1.0, 0.2), repeat)
        d2 = best_of(lambda: drawn[2](keys[2], paths // 2, steps, 1.0, 0.2), repeat)
        small, vector = np.zeros((2, 1)), np.ones((2, 1000))
        calls = {}
        for name, devices in (("Dask workers", workers), ("threads", s2s.devices()[:2])):
            empty = s2s.pmap(nothing, devices=devices)
            mean = s2s.pmap(averaged, "i", devices=devices)
            empty(small), mean(vector)
            calls[name] = (best_of(lambda: empty(small), 3 * repeat), best_of(lambda: mean(vector), 3 * repeat))
        load_after = os.getloadavg()
        mode = two.mode
    cluster.close()
    lines = [
        "# s2s.pmap over Dask workers: 2 workers against 1, the same work",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"NumPy {np.__version__}, Numba {__import__('numba').__version__}, distributed {distributed.__version__}. "
        f"Run with `python -m benchmarks.pmap_dask{' --quick' if quick else ''}`: a LocalCluster of 2 worker "
        "processes, 1 thread each, on this machine.",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.2f}, {load_before[1]:.2f}, {load_before[2]:.2f}; "
        f"after: {load_after[0]:.2f}, {load_after[1]:.2f}, {load_after[2]:.2f} (the machine is shared).",
        "",
        f"Workload: Monte Carlo call price, {paths} paths x {steps} steps (`payoffs` of benchmarks/pmap_cpu.py), "
        f"s2s.pmap of the plain function ({mode}). Best of {repeat} calls after a warm-up; the two prices agree "
        "to 1e-12.",
        "",
        "| workers | shards x paths | best ms | speed-up |",
        "|---|---|---|---|",
        f"| 1 | 1 x {paths} | {t1 * 1e3:.1f} | 1.00 |",
        f"| 2 | 2 x {paths // 2} | {t2 * 1e3:.1f} | {t1 / t2:.2f} |",
        "",
        "Each call above sends the shards' normal draws (8 bytes x paths x steps) to the workers. The same "
        "pricing with the draws made on each worker from its own key (`s2s.random.normal(key, (paths, steps))` in "
        "the shard, `drawn_payoffs`; only the key travels; other draws, so the prices are checked against the "
        "exact Black-Scholes price, within 5 standard errors):",
        "",
        "| workers | shards x paths | best ms | speed-up |",
        "|---|---|---|---|",
        f"| 1 | 1 x {paths} | {d1 * 1e3:.1f} | 1.00 |",
        f"| 2 | 2 x {paths // 2} | {d2 * 1e3:.1f} | {d1 / d2:.2f} |",
        "",
        f"Drawing on the workers scales, but here it costs {d1 / t1:.0f}x the shipped call: s2s.random's normals "
        "are JAX's bit for bit (a Threefry hash, erfinv with emulated fused multiply-adds), "
        f"{d1 / (paths * steps) * 1e9:.0f} ns a draw under Numba on one worker, with the pricing.",
        "",
        "What a call costs (2 shards, best of several): a task per shard, its arguments sent to its worker and its "
        "result back, and a collective is a round trip to the scheduler per shard.",
        "",
        "| devices | pmap of a function that returns its argument, ms | pmap with one pmean of 1000 floats, ms |",
        "|---|---|---|",
        *(f"| {name} | {a * 1e3:.2f} | {b * 1e3:.2f} |" for name, (a, b) in calls.items()),
        "",
    ]
    text = "\n".join(lines)
    if not quick:
        with open(os.path.join(HERE, "results", "pmap_dask.md"), "w") as handle:
            handle.write(text)
    return text


if __name__ == "__main__":
    print(main(quick="--quick" in sys.argv))
