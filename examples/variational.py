"""Variational inference with the reparameterisation trick, and scipy.special.logsumexp in the loss.

The target is a mixture of three Gaussians in the plane, whose log density is a logsumexp over its
components. The approximation q is a Gaussian with a diagonal covariance, z = mean + exp(log_std) * eps;
the objective is the negative evidence lower bound, averaged over fixed draws eps (drawn once, outside
the function, so the objective is a deterministic function of the variational parameters). Its
gradient comes from s2s.jit(s2s.grad(...)) and is checked against central finite differences before
the fit.

Run it: python examples/variational.py
"""

import numpy as np
from scipy.special import logsumexp

import s2s

MEANS = np.array([[-2.0, 0.0], [2.0, 0.5], [0.0, 3.0]])
LOG_WEIGHTS = np.log(np.array([0.2, 0.5, 0.3]))
STD = 0.8


def log_target(z):
    """log p(z) for each row of z: a mixture of isotropic Gaussians, one logsumexp over components."""
    squared = np.sum((z[:, None, :] - MEANS[None, :, :]) ** 2, axis=2)  # (samples, components)
    log_components = LOG_WEIGHTS - 0.5 * squared / STD**2 - 2.0 * np.log(STD) - np.log(2.0 * np.pi)
    return logsumexp(log_components, axis=1)


def negative_elbo(params, eps):
    """-E_q[log p(z)] - entropy(q), with params = (mean, log_std) and z = mean + exp(log_std) * eps."""
    mean, log_std = params[:2], params[2:]
    z = mean + np.exp(log_std) * eps
    entropy = np.sum(log_std) + 0.5 * mean.shape[0] * (1.0 + np.log(2.0 * np.pi))
    return -np.mean(log_target(z)) - entropy


def main():
    rng = np.random.default_rng(0)
    eps = rng.normal(size=(400, 2))
    grad = s2s.jit(s2s.grad(negative_elbo))

    params = np.array([0.5, 0.5, 0.0, 0.0])
    h = 1e-6
    fd = np.array([(negative_elbo(params + h * e, eps) - negative_elbo(params - h * e, eps)) / (2 * h)
                   for e in np.eye(4)])
    error = np.max(np.abs(grad(params, eps) - fd))
    print(f"gradient vs finite differences: max abs difference {error:.2e}")
    assert error < 1e-6, "the gradient disagrees with finite differences"

    for step in range(301):
        params = params - 0.05 * grad(params, eps)
        if step % 100 == 0:
            print(f"step {step:3d}  negative ELBO {negative_elbo(params, eps):.4f}")
    print("variational mean:", np.round(params[:2], 3), " std:", np.round(np.exp(params[2:]), 3))


if __name__ == "__main__":
    main()
