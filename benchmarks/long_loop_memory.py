"""Long loops in bounded memory: python -m benchmarks.long_loop_memory [--steps N] [--size M] [--rounds R]

The gradient of an explicit diffusion-reaction loop (N steps of an M-number state, written into
in place: `v[1:-1] = ...`) under s2s.jit, taped (a tape budget larger than its tape) and
checkpointed (the default budget, 1 GiB, which its 3.2 GB tape exceeds). Peak RSS is measured
in a fresh process for each (the whole process: interpreter, Numba, the gradient); the time
ratio side by side in one process, the best of R interleaved rounds after a warm-up call. The
two gradients must be equal. Writes benchmarks/results/long_loop_memory.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
UNLIMITED = "1TiB"  # a budget no tape here reaches: the loop stays taped


def diffusion_reaction(v, n):
    for i in range(n):
        v[1:-1] = v[1:-1] + 0.2 * (v[2:] - 2.0 * v[1:-1] + v[:-2]) + 0.001 * (v[1:-1] - v[1:-1] ** 3)
    return np.sum(v * v)


def initial_state(size: int) -> np.ndarray:
    return 0.5 + 0.1 * np.sin(np.linspace(0.0, 6.0, size))


def gradient(budget: str | None):
    import s2s

    return s2s.jit(s2s.grad(diffusion_reaction, tape_budget=budget))


CHILD = """
import json, resource, sys
sys.path.insert(0, {root!r})
from benchmarks.long_loop_memory import gradient, initial_state
g = gradient({budget!r})
g(initial_state(8), 3)  # (compiled before the measured call)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
g(initial_state({size}), {steps})
print(json.dumps({{"before": before * 1024, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}}))
"""


def peak_rss(budget: str | None, steps: int, size: int) -> dict:
    code = CHILD.format(root=ROOT, budget=budget, size=size, steps=steps)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400_000)
    parser.add_argument("--size", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    steps, size = options.steps, options.size

    memory = {label: peak_rss(budget, steps, size) for label, budget in (("taped", UNLIMITED),
                                                                          ("checkpointed", None))}
    taped, checkpointed = gradient(UNLIMITED), gradient(None)
    v = initial_state(size)
    assert np.array_equal(taped(v, steps), checkpointed(v, steps)), "the checkpointed gradient differs"
    times = {"taped": [], "checkpointed": []}
    for _ in range(options.rounds):
        for label, fun in (("taped", taped), ("checkpointed", checkpointed)):
            start = time.perf_counter()
            fun(v, steps)
            times[label].append(time.perf_counter() - start)
    best = {label: min(t) for label, t in times.items()}
    tape_gb = steps * (size - 2) * 8 / 1e9
    lines = [
        "# Long loops in bounded memory",
        "",
        f"`python -m benchmarks.long_loop_memory --steps {steps} --size {size} --rounds {options.rounds}` "
        f"on {platform.machine()}, {os.cpu_count()} cores: the gradient of an explicit diffusion-reaction "
        f"loop under s2s.jit, whose tape would hold {tape_gb:.2f} GB. Peak RSS of a fresh process "
        "(interpreter, Numba and all); time the best of interleaved rounds in one process.",
        "",
        "| gradient | peak RSS (GB) | time (s) | time / taped |",
        "|---|---|---|---|",
    ]
    for label in ("taped", "checkpointed"):
        lines.append(f"| {label} | {memory[label]['peak'] / 1e9:.2f} | {best[label]:.2f} | "
                     f"{best[label] / best['taped']:.2f} |")
    lines += ["", "The two gradients are equal, bit for bit."]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(HERE, "results", "long_loop_memory.md"), "w") as out:
        out.write(text)


if __name__ == "__main__":
    main()
