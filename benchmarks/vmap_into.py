"""s2s.jit(s2s.vmap(s2s.grad(f))) against the hand-written prange loops of benchmarks/batching.py,
side by side in one process: each round calls every contender in turn, and each keeps its best
round (a shared machine slows some rounds down). Also the driver as it was before the examples
wrote into their rows (each returned its gradient, which runtime.batch_store copied), compiled
from the same per-example code. Run: python -m benchmarks.vmap_into [threads ...]."""

from __future__ import annotations

import sys
import time

import numba
import numpy as np

import s2s
from s2s import backends
from s2s.tree_util import pytree
from benchmarks.batching import workloads


def best_of(functions: dict, args: tuple, rounds: int = 30, calls: int = 5) -> dict:
    for fn in functions.values():
        fn(*args)
    best = {k: float("inf") for k in functions}
    for _ in range(rounds):
        for k, fn in functions.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            best[k] = min(best[k], (time.perf_counter() - start) / calls)
    return best


def returning_driver(g, source: str):
    """The driver of g as before destination passing (None where g has no _into)."""
    lines = source.splitlines()
    at = next((j for j, line in enumerate(lines) if "_into(" in line and "mismatch[b] =" in line), None)
    if at is None:
        return None
    line = lines[at]
    indent = line[:len(line) - len(line.lstrip())]
    call = line.split("=", 1)[1].strip()
    name, rest = call.split("(", 1)
    args = [a.strip() for a in rest.rstrip(")").split(",")]
    outs = [a for a in args if a.startswith("out_")]
    kept = [a for a in args if not a.startswith("out_")]
    lines[at:at + 1] = [f"{indent}result = {name[:-5]}({', '.join(kept)})"] + [
        f"{indent}mismatch[b] |= runtime.batch_store({o[:-3]}, b, result[1][{j}])" for j, o in enumerate(outs)]
    driver = next(line.split("(")[0][4:] for line in lines if line.startswith("def ") and line.endswith(":")
                  and "_vmap(" in line)
    module = backends.load("\n".join(lines) + "\n", driver + "_returning", "cpu", parallel=(driver,))
    return getattr(module, driver)


def main(threads: list[int]) -> None:
    for count in threads:
        numba.set_num_threads(count)
        for title, f, hand, in_axes, args in workloads(quick=False):
            g = s2s.jit(s2s.vmap(s2s.grad(f), in_axes=in_axes))
            numba_args = tuple(tuple(a) if isinstance(a, (tuple, list)) else a for a in args)
            got, want = g(*args), hand(*numba_args)
            for a, b in zip(pytree.leaves(got), pytree.leaves(want)):
                assert np.allclose(a, b, rtol=1e-9, atol=1e-12), title
            contenders = {"s2s": lambda *a: g(*a), "hand": hand}
            old = returning_driver(g, s2s.source(g))
            if old is not None:
                contenders["returning"] = old
            best = best_of(contenders, numba_args)
            hand_s = best["hand"]
            print(f"{count} thread{'s' if count > 1 else ' '} {title:48s} "
                  + "  ".join(f"{k} {v * 1e3:7.3f} ms ({v / hand_s:4.2f}x)" for k, v in best.items()), flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [numba.config.NUMBA_NUM_THREADS])
