"""The workloads written as a JAX user would: lax loops where JAX wants them, vectorised code
elsewhere. Imported only by the benchmark (JAX is the `bench` extra, never a dependency)."""

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)


def ode_euler(params, y0, steps, dt):
    a, b, c, d = params[0], params[1], params[2], params[3]

    def step(_, state):
        x, y = state
        return x + dt * (a * x - b * x * y), y + dt * (d * x * y - c * y)

    x, y = lax.fori_loop(0, steps, step, (y0[0], y0[1]))
    return (x - 1.0) ** 2 + (y - 0.5) ** 2


def nbody_energy(pos, mass):
    diff = pos[:, None, :] - pos[None, :, :]
    r = jnp.sqrt(jnp.sum(diff * diff, axis=-1) + 0.01)
    pairs = jnp.triu(jnp.ones((pos.shape[0], pos.shape[0])), k=1)
    return -jnp.sum(pairs * mass[:, None] * mass[None, :] / r)


def monte_carlo_call(params, z, dt):
    s0, sigma = params

    def step(t, s):
        return s * jnp.exp(-0.5 * sigma * sigma * dt + sigma * jnp.sqrt(dt) * z[:, t])

    s = lax.fori_loop(0, z.shape[1], step, jnp.full(z.shape[0], s0))
    return jnp.mean(jnp.maximum(s - 1.0, 0.0))


def mlp_loss(params, x, onehot):
    w1, b1, w2, b2 = params
    hidden = jnp.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    logp = jax.nn.log_softmax(logits, axis=1)
    return -jnp.sum(onehot * logp) / x.shape[0]


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def heat(u0, alpha, steps):
    def step(_, u):
        return u.at[1:-1].set(u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]))

    u = lax.fori_loop(0, steps, step, u0)
    return jnp.sum(u * u)
