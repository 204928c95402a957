"""Gaussian-process regression: the marginal likelihood's gradient in the kernel's hyperparameters.

The log marginal likelihood of observations y under a squared-exponential kernel with noise is the
log density of a multivariate normal, N(y; 0, K + noise I). It is written twice, as users write it:
once with scipy.stats.multivariate_normal.logpdf, once by hand with scipy.linalg's cho_factor and
cho_solve (the data-fit term y^T K^-1 y and the log determinant from the Cholesky factor's
diagonal). Both are differentiated with s2s.jit(s2s.grad(...)), checked against central finite
differences and against each other, and the hyperparameters are fitted by gradient ascent.

Run it: python examples/gaussian_process.py
"""

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import multivariate_normal as mvn

import s2s


def kernel(log_params, x):
    """Squared-exponential covariance plus noise; log_params = (log length, log signal var, log noise var)."""
    length, signal, noise = np.exp(log_params[0]), np.exp(log_params[1]), np.exp(log_params[2])
    squared = (x[:, None] - x[None, :]) ** 2
    return signal * np.exp(-0.5 * squared / length**2) + noise * np.eye(x.shape[0])


def log_marginal_likelihood(log_params, x, y):
    return mvn.logpdf(y, np.zeros(x.shape[0]), kernel(log_params, x))


def log_marginal_likelihood_cholesky(log_params, x, y):
    factor = cho_factor(kernel(log_params, x), lower=True)
    alpha = cho_solve(factor, y)
    log_det = 2.0 * np.sum(np.log(np.diag(factor[0])))
    return -0.5 * y @ alpha - 0.5 * log_det - 0.5 * x.shape[0] * np.log(2.0 * np.pi)


def main():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(-3.0, 3.0, size=40))
    y = np.sin(2.0 * x) + 0.1 * rng.normal(size=40)

    grad = s2s.jit(s2s.grad(log_marginal_likelihood))
    grad_cholesky = s2s.jit(s2s.grad(log_marginal_likelihood_cholesky))
    log_params = np.array([0.0, 0.0, -1.0])
    h = 1e-6
    fd = np.array([(log_marginal_likelihood(log_params + h * e, x, y)
                    - log_marginal_likelihood(log_params - h * e, x, y)) / (2 * h) for e in np.eye(3)])
    error = np.max(np.abs(grad(log_params, x, y) - fd))
    between = np.max(np.abs(grad(log_params, x, y) - grad_cholesky(log_params, x, y)))
    print(f"gradient vs finite differences: max abs difference {error:.2e}")
    print(f"multivariate_normal.logpdf vs cho_solve: gradients differ by {between:.2e}")
    assert error < 1e-5 and between < 1e-9, "the gradients disagree"

    for step in range(201):
        log_params = log_params + 0.01 * grad_cholesky(log_params, x, y)
        if step % 50 == 0:
            print(f"step {step:3d}  log marginal likelihood {log_marginal_likelihood(log_params, x, y):.4f}")
    length, signal, noise = np.exp(log_params)
    print(f"fitted length {length:.3f}, signal variance {signal:.3f}, noise variance {noise:.4f}")


if __name__ == "__main__":
    main()
