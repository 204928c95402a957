"""Functions that tests/test_dask.py runs on Dask workers. The workers import this module by
name (conftest.py puts tests/ on sys.path, which the worker processes inherit), as Dask runs a
function from an importable module; test_dask.py also sends one as a script would, by value."""

import contextlib
import time

import distributed  # (the test extra installs it: a missing one fails the tests, it is not skipped)
import numpy as np

import s2s
from s2s import lax


@contextlib.contextmanager
def local_client(threads_per_worker: int):
    """A client of a LocalCluster of two worker processes, closed after the block."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=threads_per_worker, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def scheduler_names(client) -> tuple:
    """The events and variables left on the scheduler: a pmap deletes what it made (Dask
    deletes a variable when its message reaches the scheduler: wait for that, a while)."""
    for _ in range(50):
        names = client.run_on_scheduler(lambda dask_scheduler: (
            sorted(dask_scheduler.extensions["events"]._events),
            sorted(dask_scheduler.extensions["variables"].variables)))
        if names == ([], []):
            break
        time.sleep(0.1)
    return names


def loss(w, x, y):
    """A least-squares loss over one shard's examples, as a loop."""
    total = 0.0
    for i in range(x.shape[0]):
        r = np.dot(x[i], w) - y[i]
        total += r * r
    return total / x.shape[0]


def example_loss(w, x, y):
    """One example's loss."""
    r = np.tanh(np.dot(x, w)) - y
    return r * r


def training_step(w, x, y):
    """Data-parallel step: the gradient of the shard's loss, averaged over the shards."""
    g = s2s.grad(loss)(w, x, y)
    return w - 0.1 * lax.pmean(g, "i")


def rounds(x):
    """Twenty collectives in a row: rounds must not mix."""
    for _ in range(20):
        x = lax.pmean(x * 1.5, "i") + lax.axis_index("i")
    return x


def every_collective(v):
    return (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"), lax.all_gather(v, "i"),
            lax.axis_index("i"), lax.psum(1, "i"))


def fails_on_shard_one(x):
    if lax.axis_index("i") == 1:
        raise ValueError("shard one says no")
    return lax.psum(x, "i")


def returns_early_on_shard_one(x):
    if lax.axis_index("i") == 1:
        return x
    return lax.psum(x, "i")


def calls_different_collectives(x):
    if lax.axis_index("i") == 1:
        return lax.pmax(x, "i")
    return lax.psum(x, "i")


def over_worker_threads(x):
    """A pmap over the worker's own CPU devices inside the pmap over workers, with a
    collective over both axes."""
    return s2s.pmap(lambda row: lax.psum(row, ("i", "j")), "j", devices=s2s.devices()[:2])(x)


def pops_a_list(x):  # (reverse mode refuses list.pop())
    out = [x[0], x[1]]
    last = out.pop()
    return np.sum(x) + last


def sums_a_list(pair):
    """A list in, a collective over a list, a list out: lists stay lists."""
    total = lax.psum([pair[0], 2.0 * pair[1]], "i")
    return [total[0] + pair[1], {"b": total[1], "a": pair[0]}]


def psum_over_both(row):
    return lax.psum(row, ("i", "j"))
