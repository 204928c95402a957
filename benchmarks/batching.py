"""Per-example workloads for s2s.vmap: s2s.jit(s2s.vmap(s2s.grad(f))) against a hand-written
Numba prange loop and jax.jit(jax.vmap(jax.grad(f))). Run by `python -m benchmarks`."""

from __future__ import annotations

import math

import numba
import numpy as np

STRIKE = 1.0


def example_loss(w, x, y):
    """Logistic cross-entropy of one example: per-example gradients (array-light)."""
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def path_payoff(market, z, dt):
    """One Monte Carlo path with its own time loop: per-path delta and vega (loop-heavy)."""
    spot, sigma = market
    s = spot
    for t in range(z.shape[0]):
        s = s * math.exp(-0.5 * sigma * sigma * dt + sigma * math.sqrt(dt) * z[t])
    return max(s - STRIKE, 0.0)


@numba.njit(parallel=True, cache=True)
def example_loss_grads_hand(w, x, y):
    out = np.empty(x.shape)
    for i in numba.prange(x.shape[0]):
        z = 0.0
        for j in range(x.shape[1]):
            z += x[i, j] * w[j]
        scale = 1.0 / (1.0 + math.exp(-z)) - y[i]
        for j in range(x.shape[1]):
            out[i, j] = scale * x[i, j]
    return out


@numba.njit(parallel=True, cache=True)
def path_payoff_grads_hand(market, z, dt):
    spot, sigma = market
    delta = np.empty(z.shape[0])
    vega = np.empty(z.shape[0])
    for i in numba.prange(z.shape[0]):
        s, dlog_dsigma = spot, 0.0
        for t in range(z.shape[1]):
            s = s * math.exp(-0.5 * sigma * sigma * dt + sigma * math.sqrt(dt) * z[i, t])
            dlog_dsigma += -sigma * dt + math.sqrt(dt) * z[i, t]
        in_money = 1.0 if s > STRIKE else 0.0
        delta[i] = in_money * s / spot
        vega[i] = in_money * s * dlog_dsigma
    return delta, vega


def jax_versions():
    import jax
    import jax.numpy as jnp
    from jax import lax

    jax.config.update("jax_enable_x64", True)

    def loss(w, x, y):
        p = 1.0 / (1.0 + jnp.exp(-jnp.dot(x, w)))
        return -(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))

    def payoff(market, z, dt):
        spot, sigma = market

        def step(t, s):
            return s * jnp.exp(-0.5 * sigma * sigma * dt + sigma * jnp.sqrt(dt) * z[t])

        return jnp.maximum(lax.fori_loop(0, z.shape[0], step, spot) - STRIKE, 0.0)

    return {
        "example_loss": jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))),
        "path_payoff": jax.jit(jax.vmap(jax.grad(payoff), in_axes=(None, 0, None))),
    }


def workloads(quick: bool):
    rng = np.random.default_rng(0)
    n = 5000 if quick else 20000
    x = rng.standard_normal((n, 32))
    return [
        (f"per-example logistic gradients ({n} x 32)", example_loss, example_loss_grads_hand, (None, 0, 0),
         (rng.standard_normal(32) * 0.2, x, (rng.random(n) > 0.5).astype(float))),
        (f"per-path delta and vega ({n} paths x 64 steps)", path_payoff, path_payoff_grads_hand, (None, 0, None),
         ((1.05, 0.25), rng.standard_normal((n, 64)), 1.0 / 64)),
    ]
