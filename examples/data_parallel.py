"""Data-parallel training with s2s.pmap: each device takes a shard of the batch, computes its
gradient, and s2s.lax.pmean averages the gradients over the devices.

This is JAX's data-parallel step, on CPU devices (s2s.devices(); here 2 of them). Each shard
runs on its own thread; the gradient is s2s.jit(s2s.grad(loss)), compiled Numba code that
releases the GIL, so the shards compute at the same time, and pmean meets them in the middle.
With shards of equal size, the mean of the shard gradients of a mean loss is the gradient of
the full batch: the example checks that against the single-device gradient, then trains.

Run it: python examples/data_parallel.py
With --dask, the devices are the workers of a Dask cluster (s2s.dask_devices): here a
LocalCluster of two worker processes; give distributed.Client a scheduler's address to use
other machines. The step is the same code: each worker receives train_step and grad_loss,
compiles them, and the pmean meets the shards through the scheduler.

    python examples/data_parallel.py --dask
"""

import os

import numpy as np

os.environ.setdefault("S2S_CPU_DEVICES", "2")  # (read when pmap runs: 2 CPU devices)

import s2s  # noqa: E402


def loss(params, x, y):
    """Mean squared error of a one-hidden-layer model on a batch (x: rows of features)."""
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    prediction = hidden @ params["w2"] + params["b2"]
    return np.mean((prediction - y) ** 2)


grad_loss = s2s.jit(s2s.grad(loss))  # compiled once, called by every shard


def train_step(params, x, y, learning_rate):
    """One step on this device's shard: the gradient averaged over the devices, the update."""
    grads = s2s.lax.pmean(grad_loss(params, x, y), "i")
    return {k: params[k] - learning_rate * grads[k] for k in params}, grads


def main(devices=None):
    rng = np.random.default_rng(0)
    n_devices, batch, features, width = 2, 512, 3, 16
    x = rng.normal(size=(batch, features))
    y = np.sin(x @ np.array([1.0, -0.5, 2.0]))
    params = {"w1": 0.5 * rng.normal(size=(features, width)), "b1": np.zeros(width),
              "w2": 0.5 * rng.normal(size=width), "b2": 0.0}

    # (n_devices, batch / n_devices, ...): the leading axis is mapped over the devices; the
    # parameters and the learning rate are broadcast (in_axes None); the new parameters are the
    # same on every device (out_axes None checks it and returns one copy)
    step = s2s.pmap(train_step, "i", in_axes=(None, 0, 0, None), out_axes=None,
                    devices=devices or s2s.devices()[:n_devices])
    shards_x = x.reshape(n_devices, batch // n_devices, features)
    shards_y = y.reshape(n_devices, batch // n_devices)

    _, grads = step(params, shards_x, shards_y, 0.1)
    full = grad_loss(params, x, y)  # one device, the whole batch
    error = max(np.max(np.abs(grads[k] - full[k])) for k in params)
    print(f"data-parallel gradient matches the full-batch gradient: max abs difference {error:.1e}")
    assert error < 1e-12, "the averaged shard gradients disagree with the full-batch gradient"

    for i in range(301):
        if i % 100 == 0:
            print(f"step {i:3d}  loss {loss(params, x, y):.5f}")
        params, _ = step(params, shards_x, shards_y, 0.1)
    assert loss(params, x, y) < 0.5 * np.mean(y ** 2), "training did not reduce the loss"


def main_on_dask():
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        workers = s2s.dask_devices(client)
        print(f"devices: {workers}")
        main(workers)


if __name__ == "__main__":
    import sys

    main_on_dask() if "--dask" in sys.argv else main()
