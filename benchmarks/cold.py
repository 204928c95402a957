"""Cold start, side by side: python -m benchmarks.cold [--quick] [--rounds N]

What a user waits for before the first gradient: for each workload, a fresh Python process with
empty s2s and Numba caches runs to its first s2s.jit(s2s.grad(f)) result (interpreter start,
imports, the transform, Numba's compilation and the call); a second process that finds the
caches the first one left (warm: the edit-free rerun); and a fresh process to JAX's first
jax.jit(jax.grad(f)) result, written as a JAX user would (benchmarks/jax_versions.py). Each is
the wall-clock time from the process's start to its first gradient, the best of --rounds runs
(interleaved, so that a busy moment of the machine falls on both). Every gradient is checked
against the python backend's in the child. Writes benchmarks/results/cold.md.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOADS = ("ode_euler", "nbody_energy", "monte_carlo_call", "mlp_loss", "rosenbrock")

# The child: builds the workload's arguments as the benchmark does, then its first jitted gradient.
S2S_CHILD = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, {root!r})
import numpy as np
import s2s
from benchmarks import workloads as w
from benchmarks.__main__ import workloads
from s2s.tree_util import pytree
name, quick = {name!r}, {quick!r}
args = next(a for _, n, _, a in workloads(quick) if n == name)
imported = time.perf_counter()
g = s2s.jit(s2s.grad(getattr(w, name)))(*args)
first, done = time.perf_counter(), time.time()
reference = s2s.grad(getattr(w, name))(*args)  # (after the time is taken)
assert all(np.allclose(a, b, rtol=1e-8, atol=1e-10) for a, b in zip(pytree.leaves(g), pytree.leaves(reference)))
print("TIMES", imported - start, first - imported, done)
"""

JAX_CHILD = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, {root!r})
import jax
from benchmarks import jax_versions as jw
from benchmarks.__main__ import workloads
name, quick = {name!r}, {quick!r}
args = next(a for _, n, _, a in workloads(quick) if n == name)
args = tuple(tuple(a) if isinstance(a, (tuple, list)) else a for a in args)
imported = time.perf_counter()
static = (2,) if name in ("ode_euler", "heat") else ()
jax.block_until_ready(jax.jit(jax.grad(getattr(jw, name)), static_argnums=static)(*args))
print("TIMES", imported - start, time.perf_counter() - imported, time.time())
"""


def _run(code: str, env: dict) -> tuple[float, float, float]:
    """(from the process's start to its first gradient, its imports, its first gradient) in
    seconds, of one child process (which checks the gradient after that)."""
    start = time.time()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    if result.returncode != 0:
        raise RuntimeError(result.stdout + result.stderr)
    line = next(line for line in result.stdout.splitlines() if line.startswith("TIMES"))
    imports, first, done = (float(x) for x in line.split()[1:])
    return done - start, imports, first


def _env(cache: str) -> dict:
    env = dict(os.environ)
    env.update(S2S_CACHE_DIR=os.path.join(cache, "s2s"), NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
    return env


def measure(name: str, quick: bool, rounds: int, with_jax: bool) -> dict:
    best: dict = {}

    def keep(key, value):
        if key not in best or value[0] < best[key][0]:
            best[key] = value

    for _ in range(rounds):
        cache = tempfile.mkdtemp(prefix="s2s-cold-")
        try:
            code = S2S_CHILD.format(root=ROOT, name=name, quick=quick)
            keep("s2s cold", _run(code, _env(cache)))
            keep("s2s warm", _run(code, _env(cache)))  # (the caches the first process left)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        if with_jax:
            cache = tempfile.mkdtemp(prefix="jax-cold-")
            try:
                keep("JAX cold", _run(JAX_CHILD.format(root=ROOT, name=name, quick=quick), _env(cache)))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    return best


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    try:
        import jax  # noqa: F401

        with_jax = True
    except ImportError:
        with_jax = False
        print("JAX is not installed (pip install '.[bench]'): the JAX column stays empty")
    rows = []
    for name in WORKLOADS:
        best = measure(name, quick, rounds, with_jax)
        rows.append((name, best))
        print(name, json.dumps({k: [round(x, 3) for x in v] for k, v in best.items()}), flush=True)
    lines = [f"# Cold start: first jitted gradient of a fresh process ({'quick' if quick else 'full'} sizes)", "",
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; best of {rounds} interleaved rounds; seconds from a process's start to its first gradient "
             "(its imports; its first gradient).", "",
             "| workload | s2s cold | s2s warm | JAX cold | s2s cold / JAX cold |", "| --- | --- | --- | --- | --- |"]
    for name, best in rows:
        def cell(key):
            if key not in best:
                return "-"
            whole, imports, first = best[key]
            return f"{whole:.2f} ({imports:.2f}; {first:.2f})"
        ratio = f"{best['s2s cold'][0] / best['JAX cold'][0]:.2f}" if "JAX cold" in best else "-"
        lines.append(f"| {name} | {cell('s2s cold')} | {cell('s2s warm')} | {cell('JAX cold')} | {ratio} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "cold.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
