"""The kernel of backends/cuda.py's sum_examples (a module of its own: it imports numba.cuda,
which the rest of s2s loads only when backend="cuda" is used, and Numba's simulator swaps the
module-level name `cuda` of a kernel's globals)."""

from numba import cuda


@cuda.jit
def chunk_sums(x, out, chunk):
    """out[c, j] = x[c * chunk, j] + x[c * chunk + 1, j] + ..., in order (x: (n, d)): one thread
    per (chunk, column), so the order of the additions does not depend on the launch."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    chunks = out.shape[0]
    d = out.shape[1]
    for k in range(start, chunks * d, stride):
        c = k // d
        j = k % d
        total = x[c * chunk, j]
        for i in range(c * chunk + 1, min(c * chunk + chunk, x.shape[0])):
            total += x[i, j]
        out[c, j] = total
