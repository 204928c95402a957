"""Run the benchmarks side by side in one process: python -m benchmarks [--quick]

For each workload: the primal under numba.njit, s2s.jit(s2s.grad(f)), a hand-written Numba
adjoint where it is short, and jax.jit(jax.grad(...)) written as a JAX user would; first-call
times (transform and compile) of s2s and JAX, and the transform time alone. Gradients are
checked to agree before any time is reported. Writes benchmarks/results/results.md and
results.png.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def per_call(fn, *args, min_time=0.3, repeat=5):
    """Median seconds per call, steady state (the caller has warmed fn up)."""
    runs = []
    for _ in range(repeat):
        count, start = 0, time.perf_counter()
        while True:
            fn(*args)
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time / repeat:
                break
        runs.append(elapsed / count)
    return statistics.median(runs)


def first_call(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def workloads(quick: bool):
    """(title, function name, kind, arguments); --quick runs a quarter of each size, and the
    titles give the sizes actually run."""
    rng = np.random.default_rng(0)
    scale = 0.25 if quick else 1.0
    n_steps = int(5000 * scale)
    n_paths = int(2000 * scale)
    n_bodies = 128
    n_rosenbrock = int(1e6 * scale)
    n_heat_steps = int(500 * scale)
    mlp_params = (rng.standard_normal((784, 128)) * 0.05, np.zeros(128),
                  rng.standard_normal((128, 10)) * 0.05, np.zeros(10))
    return [
        (f"ode (Euler, {n_steps} steps)", "ode_euler", "loop",
         (np.array([1.1, 0.4, 0.4, 0.1]), np.array([1.0, 1.0]), n_steps, 0.002)),
        (f"n-body energy (n={n_bodies})", "nbody_energy", "loop",
         (rng.standard_normal((n_bodies, 3)), rng.uniform(0.5, 1.5, n_bodies))),
        (f"Monte Carlo ({n_paths} paths x 50 steps)", "monte_carlo_call", "loop",
         ((1.0, 0.2), rng.standard_normal((n_paths, 50)), 0.02)),
        ("MLP 784-128-10, batch 512", "mlp_loss", "array",
         (mlp_params, rng.standard_normal((512, 784)), np.eye(10)[rng.integers(0, 10, 512)])),
        (f"Rosenbrock ({n_rosenbrock} elements)", "rosenbrock", "array", (rng.standard_normal(n_rosenbrock),)),
        (f"heat 1-D (n=1000, {n_heat_steps} steps)", "heat", "loop",
         (rng.standard_normal(1000), 0.2, n_heat_steps)),
    ]


def keep_freed_buffers() -> bool:
    """Tell glibc's malloc to keep freed buffers of up to 32 MiB in the heap.

    By default glibc hands each large freed buffer back to the OS and maps fresh pages for the
    next one, until a process's history raises that threshold by itself. Code that allocates a
    temporary per array operation (Numba's, and s2s's adjoints more than the primal) then pays
    a page fault per page on every call, and the array-heavy ratios moved by 2-3x from run to
    run with what the process had done before. Fixing the threshold makes runs comparable; it
    is what the threshold reaches on its own once a large buffer has been freed.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 512 << 20))
    except (OSError, AttributeError):  # not glibc
        return False


def main(argv=None):
    quick = "--quick" in (argv or sys.argv[1:])
    kept = keep_freed_buffers()
    os.environ["S2S_CACHE_DIR"] = tempfile.mkdtemp(prefix="s2s-bench-")  # cold: first calls compile
    sys.path.insert(0, os.path.dirname(HERE))
    import numba

    import s2s
    from s2s.tree_util import pytree
    from benchmarks import hand_adjoints, tape_memory, workloads as w
    from s2s.driver import pipeline

    try:
        import jax

        from benchmarks import jax_versions as jw
    except ImportError:
        jax = jw = None
        print("JAX is not installed (pip install '.[bench]'): the JAX columns stay empty")

    # The first transform of a process also imports the formatter (black) and libcst's parser
    # and warms their caches: a cost once per process, timed here on its own; the transform
    # column is the median of repeated transforms, as the other columns are of repeated calls.
    start = time.perf_counter()
    pipeline.generate(w.ode_euler, "grad", {"argnums": [0], "has_aux": False})
    first_transform_s = time.perf_counter() - start
    rows = []
    for title, name, kind, args in workloads(quick):
        f = getattr(w, name)
        numba_args = tuple(tuple(a) if isinstance(a, (tuple, list)) else a for a in args)
        row = {"workload": title, "kind": kind}
        transforms = []
        for _ in range(3):
            start = time.perf_counter()
            pipeline.generate(f, "grad", {"argnums": [0], "has_aux": False})
            transforms.append(time.perf_counter() - start)
        row["transform_s"] = float(np.median(transforms))
        try:
            primal = numba.njit(f)
            primal(*numba_args)
        except numba.core.errors.TypingError:
            # NumPy that numba.njit rejects (the MLP's reductions with keepdims): the primal is
            # s2s.jit(f), the user's code normalized and compiled by Numba with runtime reductions
            primal = s2s.jit(f)
            primal(*args)
            row["workload"] += " *"
        grad = s2s.jit(s2s.grad(f))
        row["first_s2s_s"] = first_call(grad, *args)
        g = grad(*args)
        reference = s2s.grad(f)(*args)  # the python backend, itself checked by the test suite
        for a, b in zip(pytree.leaves(g), pytree.leaves(reference)):
            assert np.allclose(a, b, rtol=1e-8, atol=1e-10), f"{name}: Numba and NumPy gradients differ"
        row["primal_s"] = per_call(primal, *numba_args)
        row["s2s_s"] = per_call(grad, *args)
        hand = getattr(hand_adjoints, name + "_grad", None)
        if hand is not None:
            hg = hand(*numba_args)
            assert np.allclose(np.ravel(hg), np.concatenate([np.ravel(x) for x in pytree.leaves(g)]),
                               rtol=1e-8, atol=1e-10), f"{name}: hand adjoint disagrees"
            row["hand_s"] = per_call(hand, *numba_args)
        if jw is not None:
            jf = getattr(jw, name)
            static = (2,) if name in ("ode_euler", "heat") else ()
            jgrad = jax.jit(jax.grad(jf), static_argnums=static)
            jargs = tuple(tuple(a) if isinstance(a, (tuple, list)) else a for a in args)
            row["first_jax_s"] = first_call(lambda *a: jax.block_until_ready(jgrad(*a)), *jargs)
            jg = jgrad(*jargs)
            for a, b in zip(jax.tree_util.tree_leaves(jg), pytree.leaves(g)):
                assert np.allclose(np.asarray(a), b, rtol=1e-6, atol=1e-9), f"{name}: JAX gradient disagrees"
            row["jax_s"] = per_call(lambda *a: jax.block_until_ready(jgrad(*a)), *jargs)
        forward_row(row, f, args, name, jax, jw)
        row["tape_bytes"] = tape_memory.tape_bytes(f, args)
        rows.append(row)
        print(f"{title:40s} primal {row['primal_s'] * 1e3:9.3f} ms  s2s grad {row['s2s_s'] * 1e3:9.3f} ms"
              f"  ratio {row['s2s_s'] / row['primal_s']:6.2f}"
              + (f"  JAX {row['jax_s'] * 1e3:9.3f} ms" if "jax_s" in row else ""), flush=True)
    batched_rows = batching_rows(quick, jax, per_call, first_call)
    write_results(rows, quick, jax, batched_rows, kept, first_transform_s)


def forward_row(row, f, args, name, jax, jw):
    """Forward mode: one jvp along a random direction of the first argument, s2s (compiled)
    against jax.jit of jax.jvp; the tangent is checked against central differences first."""
    import s2s
    from s2s.tree_util import pytree

    rng = np.random.default_rng(1)
    direction = pytree.unflatten(pytree.flatten(args[0])[1],
                                     [rng.standard_normal(np.shape(leaf)) for leaf in pytree.leaves(args[0])])
    tangents = (direction,) + tuple(pytree.unflatten(pytree.flatten(a)[1], [np.zeros(np.shape(x)) if isinstance(
        x, np.ndarray) else 0.0 * x for x in pytree.leaves(a)]) for a in args[1:])

    def shifted(h):
        leaves = [x + h * d for x, d in zip(pytree.leaves(args[0]), pytree.leaves(direction))]
        return (pytree.unflatten(pytree.flatten(args[0])[1], leaves),) + tuple(args[1:])

    def jvp():
        return s2s.jvp(f, args, tangents, backend="cpu")

    jvp()
    h = 1e-6
    fd = (f(*shifted(h)) - f(*shifted(-h))) / (2 * h)
    assert np.allclose(jvp()[1], fd, rtol=1e-5, atol=1e-8), f"{name}: jvp disagrees with central differences"
    row["jvp_s"] = per_call(jvp)
    if jw is not None:
        import functools

        jf = getattr(jw, name)
        rest = tuple(tuple(a) if isinstance(a, (tuple, list)) else a for a in args[1:])
        first = tuple(args[0]) if isinstance(args[0], (tuple, list)) else args[0]
        jdirection = tuple(direction) if isinstance(direction, (tuple, list)) else direction
        static = (3,) if name in ("ode_euler", "heat") else ()  # the step count, as for grad
        jjvp = jax.jit(lambda p, t, *more: jax.jvp(lambda q: jf(q, *more), (p,), (t,)), static_argnums=static)
        out = jax.block_until_ready(jjvp(first, jdirection, *rest))
        assert np.allclose(float(out[1]), jvp()[1], rtol=1e-6, atol=1e-9), f"{name}: JAX jvp disagrees"
        row["jax_jvp_s"] = per_call(lambda: jax.block_until_ready(jjvp(first, jdirection, *rest)))


def batching_rows(quick, jax, per_call, first_call):
    """vmap: s2s.jit(s2s.vmap(s2s.grad(f))) against a hand-written prange loop and JAX."""
    import s2s
    from s2s.tree_util import pytree
    from benchmarks import batching

    jax_fns = batching.jax_versions() if jax is not None else {}
    rows = []
    for title, f, hand, in_axes, args in batching.workloads(quick):
        row = {"workload": title}
        numba_args = tuple(tuple(a) if isinstance(a, (tuple, list)) else a for a in args)
        fast = s2s.jit(s2s.vmap(s2s.grad(f), in_axes=in_axes))
        row["first_s2s_s"] = first_call(fast, *args)
        got = fast(*args)
        expected = hand(*numba_args)
        for a, b in zip(pytree.leaves(got), pytree.leaves(expected)):
            assert np.allclose(a, b, rtol=1e-9, atol=1e-12), f"{f.__name__}: vmap and hand loop disagree"
        row["s2s_s"] = per_call(fast, *args)
        row["hand_s"] = per_call(hand, *numba_args)
        if f.__name__ in jax_fns:
            jf = jax_fns[f.__name__]
            row["first_jax_s"] = first_call(lambda *a: jax.block_until_ready(jf(*a)), *numba_args)
            for a, b in zip(jax.tree_util.tree_leaves(jf(*numba_args)), pytree.leaves(got)):
                assert np.allclose(np.asarray(a), b, rtol=1e-6, atol=1e-9), f"{f.__name__}: JAX disagrees"
            row["jax_s"] = per_call(lambda *a: jax.block_until_ready(jf(*a)), *numba_args)
        rows.append(row)
        print(f"{title:48s} s2s vmap(grad) {row['s2s_s'] * 1e3:9.3f} ms  hand prange {row['hand_s'] * 1e3:9.3f} ms"
              + (f"  JAX {row['jax_s'] * 1e3:9.3f} ms" if "jax_s" in row else ""), flush=True)
    return rows


def write_results(rows, quick, jax, batched_rows=(), kept_freed_buffers=False, first_transform_s=None):
    import numba

    out = os.path.join(HERE, "results")
    os.makedirs(out, exist_ok=True)

    def ms(value):
        return f"{value * 1e3:.3f}" if value is not None else "-"

    def kib(value):
        return f"{value / 1024:.1f} KiB"

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b is not None else "-"

    lines = [
        "# s2s benchmarks" + (" (quick run)" if quick else ""),
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.processor() or 'cpu'}; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, Numba {numba.__version__}"
        + (f", JAX {jax.__version__}" if jax else ", JAX not installed") + ".",
        "Times are medians of steady-state calls in one process; first calls include transform "
        "and compilation (s2s with a cold cache)."
        + (" glibc's malloc keeps freed buffers of up to 32 MiB (mallopt; see keep_freed_buffers in "
           "benchmarks/__main__.py): otherwise each large temporary faults its pages in again and the "
           "array-heavy ratios move by 2-3x with the process's history." if kept_freed_buffers else
           " (malloc's thresholds were left at their defaults.)"),
        "",
        "| workload | kind | primal (Numba) ms | s2s grad ms | grad / primal | hand adjoint ms | hand / primal "
        "| JAX grad ms | JAX / s2s | s2s first call s | JAX first call s | transform s | tape memory |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['kind']} | {ms(r['primal_s'])} | {ms(r['s2s_s'])} | "
            f"{ratio(r['s2s_s'], r['primal_s'])} | {ms(r.get('hand_s'))} | {ratio(r.get('hand_s'), r['primal_s'])} | "
            f"{ms(r.get('jax_s'))} | {ratio(r.get('jax_s'), r['s2s_s'])} | {r['first_s2s_s']:.2f} | "
            f"{r['first_jax_s']:.2f} | {r['transform_s']:.3f} | {kib(r['tape_bytes'])} |" if "first_jax_s" in r else
            f"| {r['workload']} | {r['kind']} | {ms(r['primal_s'])} | {ms(r['s2s_s'])} | "
            f"{ratio(r['s2s_s'], r['primal_s'])} | {ms(r.get('hand_s'))} | {ratio(r.get('hand_s'), r['primal_s'])} | "
            f"- | - | {r['first_s2s_s']:.2f} | - | {r['transform_s']:.3f} | {kib(r['tape_bytes'])} |")
    lines.append("")
    lines.append("\\* numba.njit rejects this primal (reductions with axis= and keepdims=): its primal column is "
                 "s2s.jit(f), the same code normalized, with runtime implementations of those reductions.")
    lines.append("")
    lines.append("Tape memory: bytes the forward sweep stores for the reverse sweep in one gradient call "
                 "(benchmarks/tape_memory.py; 8 bytes a number, as Numba stores them).")
    if first_transform_s is not None:
        lines.append("")
        lines.append("Transform: libcst to formatted source of the general grad module, the median of three. The "
                     "first transform of a process also imports black and libcst and warms their caches: "
                     f"{first_transform_s:.2f} s for the ODE's.")
    lines += [
        "",
        "## Forward mode: one jvp along a random direction of the first argument",
        "",
        "`s2s.jvp(f, primals, tangents, backend=\"cpu\")` against `jax.jit` of `jax.jvp`, both checked "
        "against central differences first.",
        "",
        "| workload | primal (Numba) ms | s2s jvp ms | jvp / primal | JAX jvp ms | JAX / s2s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "jvp_s" in r:
            lines.append(f"| {r['workload']} | {ms(r['primal_s'])} | {ms(r['jvp_s'])} | {ratio(r['jvp_s'], r['primal_s'])} "
                         f"| {ms(r.get('jax_jvp_s'))} | {ratio(r.get('jax_jvp_s'), r['jvp_s'])} |")
    if batched_rows:
        lines += [
            "",
            "## Per-example gradients: s2s.jit(s2s.vmap(s2s.grad(f)))",
            "",
            f"A parallel loop (Numba prange) over compiled per-example code, on {os.cpu_count()} cores; the "
            "hand-written loop is a Numba prange loop with the derivative written out.",
            "",
            "| workload | s2s vmap(grad) ms | hand prange ms | s2s / hand | JAX vmap(grad) ms | JAX / s2s "
            "| s2s first call s | JAX first call s |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in batched_rows:
            lines.append(f"| {r['workload']} | {ms(r['s2s_s'])} | {ms(r['hand_s'])} | {ratio(r['s2s_s'], r['hand_s'])} "
                         f"| {ms(r.get('jax_s'))} | {ratio(r.get('jax_s'), r['s2s_s'])} | {r['first_s2s_s']:.2f} "
                         f"| {r['first_jax_s']:.2f} |" if "jax_s" in r else
                         f"| {r['workload']} | {ms(r['s2s_s'])} | {ms(r['hand_s'])} | {ratio(r['s2s_s'], r['hand_s'])} "
                         f"| - | - | {r['first_s2s_s']:.2f} | - |")
    with open(os.path.join(out, "results.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    names = [r["workload"].split(" (")[0] for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.bar(x - 0.2, [r["s2s_s"] / r["primal_s"] for r in rows], 0.4, label="s2s grad / Numba primal")
    if all("jax_s" in r for r in rows):
        ax.bar(x + 0.2, [r["jax_s"] / r["s2s_s"] for r in rows], 0.4, label="JAX grad / s2s grad (>1: s2s faster)")
    ax.axhline(3.0, color="gray", linestyle="--", linewidth=1, label="target grad/primal = 3")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x, names, rotation=15)
    ax.set_yscale("log")
    ax.set_ylabel("ratio (log scale)")
    ax.set_title("s2s gradients: cost relative to the primal, and speed relative to JAX")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "results.png"), dpi=110)
    # the docs site's copy (MkDocs serves files of its docs folder only)
    fig.savefig(os.path.join(os.path.dirname(__file__), "..", "docs", "pages", "benchmarks.png"), dpi=110)
    print(f"wrote {out}/results.md and results.png (and docs/pages/benchmarks.png)")


if __name__ == "__main__":
    main()
