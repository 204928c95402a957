"""s2s.pmap over 2 CPU devices against 1, the same total work, side by side in one process.

    python -m benchmarks.pmap_cpu [--quick]

The workload is loop-heavy: each shard prices its own Monte Carlo paths (a plain Python loop
over paths and time steps, compiled by s2s.jit with nogil=True). One device runs all the
paths in one shard, shape (1, paths, steps); two devices run half each, shape (2, paths/2,
steps), on two threads at once. The results are checked to agree before any time is
reported; times are the best of several calls after a warm-up. A control without s2s (a
Numba loop on two threads against one) says what speed-up the machine allowed then. Writes
benchmarks/results/pmap_cpu.md, with the load average when it ran (the machine is shared).
"""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np

os.environ.setdefault("S2S_CPU_DEVICES", "2")

import s2s  # noqa: E402  (after S2S_CPU_DEVICES: the devices are read from it)

HERE = os.path.dirname(os.path.abspath(__file__))


def payoffs(z, s0, sigma):
    """The mean call payoff of this shard's paths: z is (paths, steps) of normal draws."""
    n_paths, n_steps = z.shape
    dt = 1.0 / n_steps
    total = 0.0
    for p in range(n_paths):
        s = s0
        for t in range(n_steps):
            s = s * np.exp(-0.5 * sigma * sigma * dt + sigma * np.sqrt(dt) * z[p, t])
        total += max(s - 1.0, 0.0)
    return total / n_paths


def threads_ceiling(repeat):
    """What the machine gives two threads right now, without s2s: a Numba loop (nogil=True) run
    once on one thread and twice on two threads; the ratio 2 * one / two is the speed-up any
    2-thread code could reach (about 2 on two idle cores, 1 when another process holds a core)."""
    import threading

    import numba

    @numba.njit(nogil=True)
    def spin(n):
        total = 0.0
        for i in range(n):
            total += np.sin(i * 1e-3)
        return total

    spin(10)

    def two():
        threads = [threading.Thread(target=spin, args=(20_000_000,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return 2 * best_of(lambda: spin(20_000_000), repeat) / best_of(two, repeat)


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(quick: bool = False) -> str:
    paths, steps, repeat = (20_000, 128, 5) if quick else (100_000, 256, 7)
    z = np.random.default_rng(0).standard_normal((paths, steps))
    one = s2s.pmap(payoffs, in_axes=(0, None, None), devices=s2s.devices()[:1])
    two = s2s.pmap(payoffs, in_axes=(0, None, None), devices=s2s.devices()[:2])
    z1, z2 = z.reshape(1, paths, steps), z.reshape(2, paths // 2, steps)
    price1 = one(z1, 1.0, 0.2)[0]
    price2 = np.mean(two(z2, 1.0, 0.2))
    assert abs(price1 - price2) < 1e-12 * abs(price1), (price1, price2)
    load_before = os.getloadavg()
    t1 = best_of(lambda: one(z1, 1.0, 0.2), repeat)
    t2 = best_of(lambda: two(z2, 1.0, 0.2), repeat)
    ceiling = threads_ceiling(repeat)
    load_after = os.getloadavg()
    lines = [
        "# s2s.pmap on CPU devices: 2 devices against 1, the same work",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"NumPy {np.__version__}, Numba {__import__('numba').__version__}. Run with `python -m benchmarks.pmap_cpu"
        f"{' --quick' if quick else ''}`.",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.2f}, {load_before[1]:.2f}, {load_before[2]:.2f}; "
        f"after: {load_after[0]:.2f}, {load_after[1]:.2f}, {load_after[2]:.2f} (the machine is shared).",
        "",
        f"Workload: Monte Carlo call price, {paths} paths x {steps} steps, a loop per path (`payoffs` in "
        f"benchmarks/pmap_cpu.py), s2s.pmap of the plain function ({two.mode}). Best of {repeat} calls after a "
        "warm-up; the two prices agree to 1e-12.",
        "",
        "| devices | shards x paths | best ms | speed-up |",
        "|---|---|---|---|",
        f"| 1 | 1 x {paths} | {t1 * 1e3:.1f} | 1.00 |",
        f"| 2 | 2 x {paths // 2} | {t2 * 1e3:.1f} | {t1 / t2:.2f} |",
        "",
        f"Control, without s2s: a Numba loop (nogil=True) on two threads against one thread reached "
        f"{ceiling:.2f}x in the same run: the most that two threads got from the machine then.",
        "",
    ]
    text = "\n".join(lines)
    if not quick:
        with open(os.path.join(HERE, "results", "pmap_cpu.md"), "w") as handle:
            handle.write(text)
    return text


if __name__ == "__main__":
    print(main(quick="--quick" in sys.argv))
