"""The cuda backend on a real GPU: correctness against the cpu backend, then the greeks timing.

Run once on a machine with an NVIDIA GPU (the test suite only has Numba's simulator and PTX):

    pip install ".[cuda]" && python benchmarks/gpu.py [--paths 1000000] [--steps 64] [--tests]

(On a machine whose Python packages are given, as the lent H200 of 2026-12-04 was: carry
libcst, black, pytokens and platformdirs, and NumPy 2.4 where NumPy is 2.5, whose removal of
np.row_stack numba-cuda 0.30.4 trips on, and put them first on PYTHONPATH with the repository.)

1. Every case of tests/cuda_cases.py, s2s.jit(..., backend="cuda") against backend="cpu"
   (float64: relative 1e-10, float32: 1e-4; libdevice's exp and the fused multiply-adds of
   NVVM change the last bits, so not exact as in the simulator). Exit status 1 on a mismatch.
   Then the deterministic total (backends.cuda.sum_examples): two runs bit-identical.
2. Per-path delta and vega of the issue's Monte Carlo example, paths x steps normals:
   s2s cuda (NumPy in and out: the copies are timed; and device arrays in and out; and the
   normals drawn in the kernel from a key per path, with no z array; and s2s.pmap of it over 4
   streams of the GPU, NumPy in and out), s2s cpu (numba parallel over the cores), and
   jax.jit(jax.vmap(jax.grad(...))) on the GPU where JAX is installed.
   Steady state: one warm-up call, then the median of 5.
3. With --tests, the cuda test files on the GPU (run_cuda_tests).
Writes benchmarks/results/gpu.md and prints it, replacing the file (what is learnt from a run
goes in gpu_notes.md beside it). About two minutes on an H200, compilation included; --tests
adds about one more.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import s2s  # noqa: E402
import cuda_cases  # noqa: E402
from s2s import random  # noqa: E402
from s2s.tree_util import pytree  # noqa: E402

STEPS = 64


def keyed_payoff(key, s0, sigma):  # the example's path with its normals drawn per step from its key
    s = s0
    for t in range(STEPS):
        s = s * np.exp(-0.5 * sigma * sigma / STEPS + sigma * np.sqrt(1.0 / STEPS) * random.normal(random.fold_in(key, t)))
    return max(s - 1.0, 0.0)


def check_cases() -> tuple[list[str], bool]:
    rows = []
    failed = False
    for name, (make, args) in sorted(cuda_cases.CASES.items()):
        try:  # one case's failure is a row of the table, and the others still run
            got = pytree.leaves(s2s.jit(make(), backend="cuda")(*args()))
            reference = "python" if name in ("greeks_float32", "draws32") else "cpu"  # see tests/test_cuda.py
            want = pytree.leaves(s2s.jit(make(), backend=reference)(*args()))
        except Exception as error:  # noqa: BLE001 (reported, and the exit status is 1)
            failed = True
            rows.append(f"| {name} | ERROR {type(error).__name__}: {_one_line(error)} | |")
            continue
        worst = 0.0
        ok = len(got) == len(want)
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            rtol = 1e-4 if w.dtype == np.float32 else 1e-10
            ok &= g.dtype == w.dtype and bool(np.allclose(g, w, rtol=rtol, atol=rtol))
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            worst = max(worst, float(np.max(np.abs(g64 - w64) / np.maximum(np.abs(w64), 1e-300))))
        failed |= not ok
        rows.append(f"| {name} | {'ok' if ok else 'MISMATCH'} | {worst:.2e} |")
    from numba import cuda

    from s2s.backends import cuda as cuda_backend

    what = "sum_examples of 10^6 x 3, twice: bit-identical"
    try:
        per_example = cuda.to_device(np.random.default_rng(2).standard_normal((1_000_003, 3)))
        first, second = (cuda_backend.sum_examples(per_example).copy_to_host() for _ in range(2))
        same = bool(np.array_equal(first, second)) and np.allclose(first, per_example.copy_to_host().sum(axis=0))
        rows.append(f"| {what} | {'ok' if same else 'MISMATCH'} | |")
    except Exception as error:  # noqa: BLE001 (reported, and the exit status is 1)
        same = False
        rows.append(f"| {what} | ERROR {type(error).__name__}: {_one_line(error)} | |")
    failed |= not same
    return rows, failed


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:300].replace("|", "/")


def median_time(call, repeats: int = 5) -> float:
    call()  # warm-up: compilation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_greeks(paths: int, steps: int) -> tuple[list[str], bool]:
    from numba import cuda

    z = np.random.default_rng(0).standard_normal((paths, steps))
    transformed = s2s.vmap(s2s.grad(cuda_cases.path_payoff, argnums=(0, 1)), in_axes=(None, None, 0))
    on_gpu = s2s.jit(transformed, backend="cuda")
    on_cpu = s2s.jit(transformed, backend="cpu")
    z_device = cuda.to_device(z)
    # (steps, paths): neighbouring threads read neighbouring addresses (coalesced)
    by_step = s2s.jit(s2s.vmap(s2s.grad(cuda_cases.path_payoff, argnums=(0, 1)), in_axes=(None, None, 1)),
                      backend="cuda")
    zt_device = cuda.to_device(np.ascontiguousarray(z.T))

    def device_call():
        out = on_gpu(1.0, 0.2, z_device)
        cuda.synchronize()
        return out

    def coalesced_call():
        out = by_step(1.0, 0.2, zt_device)
        cuda.synchronize()
        return out

    keys = s2s.device_put(random.split(random.PRNGKey(0), paths), "cuda")
    keyed = s2s.jit(s2s.vmap(s2s.grad(keyed_payoff, argnums=(1, 2)), in_axes=(0, None, None)), backend="cuda")

    def keyed_call():
        out = keyed(keys, 1.0, 0.2)
        cuda.synchronize()
        return out

    # s2s.pmap over 4 streams of the one GPU: each shard's copies overlap another shard's kernel
    shards = 4
    z_shards = z[: paths - paths % shards].reshape(shards, paths // shards, steps)
    on_streams = s2s.pmap(transformed, in_axes=(None, None, 0), devices=s2s.devices("cuda", streams=shards))

    rows = []
    gpu, cpu = on_gpu(1.0, 0.2, z), on_cpu(1.0, 0.2, z)
    by_step_host = [np.asarray(x.copy_to_host()) for x in by_step(1.0, 0.2, zt_device)]
    agree = all(np.allclose(g, c, rtol=1e-10, atol=1e-12) for g, c in zip(list(gpu) + by_step_host, list(cpu) * 2))
    try:
        streamed = [np.asarray(x).reshape(-1) for x in on_streams(1.0, 0.2, z_shards)]
        streams_agree = all(np.allclose(g, c[: len(g)], rtol=1e-10, atol=1e-12) for g, c in zip(streamed, cpu))
    except Exception as error:  # noqa: BLE001 (reported, and the exit status is 1)
        streams_agree = False
        rows.append(f"| s2s.pmap over {shards} streams | ERROR {type(error).__name__}: {_one_line(error)} | |")
    agree &= streams_agree
    for what, call in (("s2s cuda, NumPy in and out (copies included)", lambda: on_gpu(1.0, 0.2, z)),
                       ("s2s cuda, device arrays in and out", device_call),
                       ("s2s cuda, device arrays, z as (steps, paths) with in_axes=1", coalesced_call),
                       ("s2s cuda, normals drawn in the kernel (random.fold_in + normal per step)", keyed_call),
                       (f"s2s.pmap of it over {shards} streams of the GPU, NumPy in and out",
                        lambda: on_streams(1.0, 0.2, z_shards)),
                       ("s2s cpu (numba, parallel)", lambda: on_cpu(1.0, 0.2, z))):
        try:
            seconds = median_time(call)
        except Exception as error:  # noqa: BLE001 (reported, and the exit status is 1)
            agree = False
            rows.append(f"| {what} | ERROR {type(error).__name__}: {_one_line(error)} | |")
            continue
        rows.append(f"| {what} | {seconds * 1e3:.2f} | {paths / seconds / 1e6:.1f} |")
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)

        def jax_payoff(s0, sigma, zs):
            n = zs.shape[0]
            step = lambda s, x: (s * jnp.exp(-0.5 * sigma * sigma / n + sigma * jnp.sqrt(1.0 / n) * x), None)
            s, _ = jax.lax.scan(step, s0, zs)
            return jnp.maximum(s - 1.0, 0.0)

        greeks = jax.jit(jax.vmap(jax.grad(jax_payoff, argnums=(0, 1)), in_axes=(None, None, 0)))
        zj = jax.device_put(z)
        seconds = median_time(lambda: jax.block_until_ready(greeks(1.0, 0.2, zj)))
        rows.append(f"| jax.jit(jax.vmap(jax.grad)) on {jax.devices()[0].platform}, device arrays | "
                    f"{seconds * 1e3:.2f} | {paths / seconds / 1e6:.1f} |")
    except ImportError:
        rows.append("| JAX | not installed | |")
    except Exception as error:  # noqa: BLE001 (JAX's failure is reported; it is only a reference)
        rows.append(f"| JAX | ERROR {type(error).__name__}: {_one_line(error)} | |")
    return rows, agree


def _versions() -> str:
    from importlib import metadata

    from numba import cuda

    found = []
    for package in ("numpy", "numba", "numba-cuda", "jax"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    try:
        found.append("CUDA driver API " + ".".join(map(str, cuda.cudadrv.driver.driver.get_version())))
    except Exception:  # noqa: BLE001 (a version line is no reason to stop the check)
        pass
    return f"Python {sys.version.split()[0]}, " + ", ".join(found)


def run_cuda_tests() -> tuple[list[str], bool]:
    """The cuda test files on the GPU (NUMBA_ENABLE_CUDASIM=0), in a pytest process of their own:
    the suite's checks, with tolerances where the simulator agrees exactly."""
    import subprocess

    files = ["tests/test_cuda.py", "tests/test_cuda_random.py", "tests/test_cuda_tapes.py"]
    workers = str(max(1, min(8, (os.cpu_count() or 2) // 2)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, "-rfE",
                           "--tb=line", *files], cwd=os.path.dirname(HERE), capture_output=True, text=True,
                          env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
    lines = done.stdout.splitlines()
    summary = next((line.strip("= ") for line in reversed(lines) if " passed" in line or " failed" in line),
                   f"no summary (pytest's exit status {done.returncode}; its last line: {lines[-1:]})")
    failures = [f"- {line}" for line in lines if line.startswith(("FAILED", "ERROR"))]
    return ["## The cuda test files on the GPU", "",
            f"`NUMBA_ENABLE_CUDASIM=0 python -m pytest -n {workers} {' '.join(files)}`: {summary}", "",
            *failures[:40], ""], done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--tests", action="store_true", help="also run the cuda test files on the GPU (pytest, "
                                                              "pytest-xdist: the test extra)")
    options = parser.parse_args()
    from numba import config, cuda

    if config.ENABLE_CUDASIM or not cuda.is_available():
        print("benchmarks/gpu.py needs a GPU (and NUMBA_ENABLE_CUDASIM unset): nothing was run", file=sys.stderr)
        return 2
    device = cuda.get_current_device()
    checks, failed = check_cases()
    header = [f"# s2s on {device.name.decode() if isinstance(device.name, bytes) else device.name} "
              f"(compute capability {device.compute_capability})", "", _versions(), "",
              "## cuda backend against the cpu backend (tests/cuda_cases.py)", "",
              "| case | result | largest relative difference |", "|---|---|---|", *checks, ""]
    print("\n".join(header), flush=True)  # before the timings, which take the longest
    timings, agree = time_greeks(options.paths, options.steps)
    lines = [*header,
             f"## Per-path delta and vega, {options.paths} paths x {options.steps} steps (float64)", "",
             f"cuda and cpu gradients agree per path (relative 1e-10): {agree}", "",
             "| implementation | median ms | million paths / s |", "|---|---|---|", *timings, ""]
    passed = True
    if options.tests:
        tests, passed = run_cuda_tests()
        lines += tests
    text = "\n".join(lines)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "gpu.md"), "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    return 1 if failed or not agree or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
