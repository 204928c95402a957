"""Monte Carlo option sensitivities (delta and vega) with vmap over paths.

Each path of a European call is simulated with its own time-stepping loop. s2s.grad of the
one-path payoff gives the pathwise derivatives with respect to the spot and the volatility;
s2s.vmap maps them over the paths, in parallel under s2s.jit. Their means are the Monte
Carlo delta and vega, checked against Black-Scholes within three standard errors.

Run it: python examples/monte_carlo.py
"""

import math

import numpy as np

import s2s

STRIKE = 1.0


def path_payoff(market, z, dt):
    """The discounted payoff of one path; z holds the path's standard normal increments."""
    spot, sigma = market
    s = spot
    for t in range(z.shape[0]):
        s = s * math.exp(-0.5 * sigma * sigma * dt + sigma * math.sqrt(dt) * z[t])
    return max(s - STRIKE, 0.0)


def black_scholes(spot, sigma, maturity):
    """Call price, delta and vega at zero rates."""
    d1 = (math.log(spot / STRIKE) + 0.5 * sigma**2 * maturity) / (sigma * math.sqrt(maturity))
    d2 = d1 - sigma * math.sqrt(maturity)
    cdf = lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0)))  # noqa: E731
    price = spot * cdf(d1) - STRIKE * cdf(d2)
    vega = spot * math.exp(-0.5 * d1 * d1) / math.sqrt(2.0 * math.pi) * math.sqrt(maturity)
    return price, cdf(d1), vega


def main():
    rng = np.random.default_rng(1)
    n_paths, n_steps, maturity = 20000, 64, 1.0
    dt = maturity / n_steps
    z = rng.standard_normal((n_paths, n_steps))
    market = (1.05, 0.25)  # spot, volatility

    sensitivities = s2s.jit(s2s.vmap(s2s.grad(path_payoff), in_axes=(None, 0, None)))
    deltas, vegas = sensitivities(market, z, dt)  # one pair per path
    payoffs = s2s.jit(s2s.vmap(path_payoff, in_axes=(None, 0, None)))(market, z, dt)
    price, delta, vega = black_scholes(*market, maturity)
    for name, samples, exact in (("price", payoffs, price), ("delta", deltas, delta), ("vega", vegas, vega)):
        estimate, error = np.mean(samples), np.std(samples) / math.sqrt(n_paths)
        print(f"{name}: Monte Carlo {estimate:.4f} +- {error:.4f}   Black-Scholes {exact:.4f}")
        assert abs(estimate - exact) < 3 * error, f"the Monte Carlo {name} disagrees with Black-Scholes"

    # The pathwise derivatives of one path that ends in the money, against central differences
    k, h = int(np.argmax(payoffs > 0)), 1e-6
    fd_delta = (path_payoff((1.05 + h, 0.25), z[k], dt) - path_payoff((1.05 - h, 0.25), z[k], dt)) / (2 * h)
    fd_vega = (path_payoff((1.05, 0.25 + h), z[k], dt) - path_payoff((1.05, 0.25 - h), z[k], dt)) / (2 * h)
    print(f"path {k}: delta {deltas[k]:.6f} (central difference {fd_delta:.6f}), "
          f"vega {vegas[k]:.6f} (central difference {fd_vega:.6f})")
    assert abs(deltas[k] - fd_delta) < 1e-6 and abs(vegas[k] - fd_vega) < 1e-6


if __name__ == "__main__":
    main()
