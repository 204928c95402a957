"""What one call of a small compiled function costs beyond the compiled code: s2s.jit(f) and
s2s.jit(s2s.grad(f)) against calling their Numba dispatchers directly, side by side in one
process, each its best of interleaved rounds (a shared machine slows some rounds down), and
jax.jit(jax.grad(f)) where JAX is installed. A training loop of a small model calls these
thousands of times. Run: python -m benchmarks.dispatch."""

from __future__ import annotations

import numpy as np

import s2s
from benchmarks.vmap_into import best_of


def loss(w, x):
    return np.sum((x * w - 1.0) ** 2) + w[0]


def main() -> None:
    w, x = np.linspace(0.5, 1.5, 8), np.linspace(-1.0, 1.0, 8)
    value, grad = s2s.jit(loss), s2s.jit(s2s.grad(loss))
    value(w, x), grad(w, x)
    vjp = grad._specialised_vjp((w, x)).dispatcher  # (the compiled entry the call reaches)
    primal = value._compiled.dispatcher
    functions = {
        "s2s.jit(f)": lambda w, x: value(w, x),
        "compiled f": lambda w, x: primal(w, x),
        "s2s.jit(grad(f))": lambda w, x: grad(w, x),
        "compiled vjp": lambda w, x: vjp(w, x, 1.0),
    }
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jax_grad = jax.jit(jax.grad(lambda w, x: jax.numpy.sum((x * w - 1.0) ** 2) + w[0]))
        functions["jax.jit(jax.grad(f))"] = lambda w, x: jax_grad(w, x).block_until_ready()
    except ImportError:
        pass
    best = best_of(functions, (w, x), calls=2000)
    for name, seconds in best.items():
        print(f"{name:24s} {seconds * 1e6:7.2f} us a call")
    print(f"s2s.jit(f) / compiled f: {best['s2s.jit(f)'] / best['compiled f']:.2f}; "
          f"s2s.jit(grad(f)) / compiled vjp: {best['s2s.jit(grad(f))'] / best['compiled vjp']:.2f}")


if __name__ == "__main__":
    main()
