"""A recurrent network written as autograd users write one: helper functions inside the loss.

The loss defines `update` (the recurrent step) and `predict` (the read-out) inside itself, closing
over the weights, and loops over time: one-step-ahead prediction of a noisy sine wave. Its gradient
is s2s.grad on the default backend and s2s.jit(s2s.grad(...)) compiled; both are checked against
central finite differences, and the compiled one trains the network with Adam.

Run it: python examples/rnn.py
"""

import numpy as np

import s2s


def loss(params, inputs, targets):
    """Mean squared one-step-ahead error of a tanh RNN over a sequence (inputs: time x features)."""
    W_in, W_h, b, W_out = params

    def update(h, x):
        return np.tanh(x @ W_in + h @ W_h + b)

    def predict(h):
        return h @ W_out

    h = np.zeros(W_h.shape[0])
    total = 0.0
    for t in range(inputs.shape[0]):
        h = update(h, inputs[t])
        total = total + np.sum((predict(h) - targets[t]) ** 2)
    return total / inputs.shape[0]


def flat_finite_differences(f, params, h=1e-6):
    """Central differences of f with respect to every entry of every array in the tuple params."""
    grads = []
    for k, p in enumerate(params):
        g = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            up, down = [q.copy() for q in params], [q.copy() for q in params]
            up[k][i] += h
            down[k][i] -= h
            g[i] = (f(tuple(up)) - f(tuple(down))) / (2 * h)
        grads.append(g)
    return grads


def main():
    rng = np.random.default_rng(0)
    time = np.linspace(0.0, 12.0, 61)
    series = np.sin(time) + 0.05 * rng.normal(size=time.shape)
    inputs, targets = series[:-1, None], series[1:, None]
    hidden = 8
    params = (0.5 * rng.normal(size=(1, hidden)), 0.5 * rng.normal(size=(hidden, hidden)),
              np.zeros(hidden), 0.5 * rng.normal(size=(hidden, 1)))

    fd = flat_finite_differences(lambda p: loss(p, inputs, targets), params)
    compiled = s2s.jit(s2s.grad(loss))
    for name, grad in (("python backend", s2s.grad(loss)), ("s2s.jit", compiled)):
        error = max(np.max(np.abs(g - f)) for g, f in zip(grad(params, inputs, targets), fd))
        print(f"{name}: gradient vs finite differences, max abs difference {error:.2e}")
        assert error < 1e-6, "the gradient disagrees with finite differences"

    init, update, get_params = s2s.optimizers.adam(0.02)
    state = init(params)
    for step in range(301):
        state = update(step, compiled(get_params(state), inputs, targets), state)
        if step % 100 == 0:
            print(f"step {step:3d}  loss {loss(get_params(state), inputs, targets):.5f}")
    print(f"trained: one-step-ahead mean squared error {loss(get_params(state), inputs, targets):.5f}")


if __name__ == "__main__":
    main()
