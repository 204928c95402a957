"""s2s.pmap's shards on the workers of a Dask cluster: a script's global changed between calls
(not served stale by the worker's cache), a transform of a lambda made again on the worker, pmaps
from several threads at once (a shard that waits at a collective does not hold the worker's only
thread), an exception that does not unpickle on the client, an output that does not travel, a
shard that posts and returns while another waits, and the runners a worker keeps (bounded). Each
is checked against the pmap on threads, finite differences or a closed form; the cluster is a
LocalCluster of two worker processes of one thread each (the fewest places: a shard that holds
its place while it waits shows there). The pmap over Dask itself: test_dask.py."""

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import s2s
import dask_cases as cases
from dask_cases import scheduler_names
from s2s import lax
from s2s.doors import dask as shipping_to_dask
from s2s.tree_util import pytree
from finite_differences import central_difference_grad


@pytest.fixture(scope="module")
def client():
    with cases.local_client(threads_per_worker=1) as c:
        yield c


@pytest.fixture
def workers(client):
    return s2s.dask_devices(client)


def test_a_transform_of_a_lambda_is_made_again_on_the_worker(workers):
    # (a lambda is sent by value; s2s names it by its source when the transform is made, which
    # on the worker happens while the task unpickles: its file must be known by then)
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    g = s2s.pmap(s2s.grad(lambda v: np.sum(v ** 3)), devices=workers)(x)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-14)


def _psum_scaled(scale):
    def scaled(x):
        return lax.psum(x * scale, "i")
    return scaled


class TwoPartError(Exception):
    """An exception whose __init__ takes other arguments than its args: it pickles, and does not
    unpickle (pickle calls TwoPartError(message))."""

    def __init__(self, part, whole):
        super().__init__(f"{part} of {whole}")


def fails_with_two_parts(x):
    if lax.axis_index("i") == 1:
        raise TwoPartError("one", "two")
    return lax.psum(x, "i")


def test_an_exception_that_does_not_unpickle_reaches_the_client_by_its_text(client, workers):
    with pytest.raises(RuntimeError, match="TwoPartError: one of two") as raised:
        s2s.pmap(fails_with_two_parts, "i", devices=workers)(np.ones((2, 3)))
    assert "in the pmap shard 1 on a Dask worker" in str(raised.value)
    assert scheduler_names(client) == ([], [])


def returns_a_lock(x):
    total = lax.psum(x, "i")
    return threading.Lock() if lax.axis_index("i") == 1 else total


def test_an_output_that_does_not_travel_is_an_error_and_leaves_nothing_behind(client, workers):
    with pytest.raises(TypeError, match="pickle '_thread.lock'") as raised:
        s2s.pmap(returns_a_lock, "i", devices=workers)(np.ones((2, 3)))
    assert "in the pmap shard 1 on a Dask worker" in "".join(raised.value.__notes__)
    assert scheduler_names(client) == ([], [])


def test_runners_kept_on_a_worker_are_bounded(client, workers):
    kept = client.run(lambda: shipping_to_dask._RUNNERS_KEPT)
    try:
        client.run(lambda: setattr(shipping_to_dask, "_RUNNERS_KEPT", 2))
        x = np.arange(6.0).reshape(2, 3)
        for scale in (1.0, 2.0, 3.0, 4.0):  # four programs: a closure over another value each time
            np.testing.assert_array_equal(s2s.pmap(_psum_scaled(scale), "i", devices=workers)(x),
                                          np.broadcast_to(scale * x.sum(0), (2, 3)))
        assert all(count <= 2 for count in client.run(lambda: len(shipping_to_dask._RUNNERS)).values())
    finally:
        for address, value in kept.items():
            client.run(lambda: setattr(shipping_to_dask, "_RUNNERS_KEPT", value), workers=[address])


class _Scheduler:
    """Events and variables of a fake scheduler, on which another shard posts its slot and
    returns while this one's wait times out (the order of a real race, made certain)."""

    def __init__(self):
        self.events, self.values, self.on_timeout = set(), {}, []
        self.get_client = lambda: None  # (the worker's client: none here)
        outer = self

        class Event:
            def __init__(self, name, client=None):
                self.name = name

            def set(self):
                outer.events.add(self.name)

            def clear(self):
                outer.events.discard(self.name)

            def is_set(self):
                return self.name in outer.events

            def wait(self, timeout=None):
                if self.name not in outer.events and outer.on_timeout:
                    outer.on_timeout.pop(0)()
                    return False
                return self.name in outer.events

        class Variable:
            def __init__(self, name, client=None):
                self.name = name

            def set(self, value):
                outer.values[self.name] = value

            def get(self):
                return outer.values[self.name]

            def delete(self):
                outer.values.pop(self.name, None)

        self.Event, self.Variable = Event, Variable


def test_a_shard_that_posts_and_returns_during_a_wait_is_not_taken_for_gone(monkeypatch):
    scheduler = _Scheduler()
    monkeypatch.setattr(shipping_to_dask, "_distributed", lambda: scheduler)
    root = shipping_to_dask._DaskRoot("call")
    key, axes = (("i",), ()), (("i", 2),)
    request = ("psum", (), pytree.flatten(np.ones(3))[1], (((3,), "<f8"),))
    other = shipping_to_dask._DaskRoot("call")

    def posts_then_returns():  # shard 1: its slot of round 0, then it returns
        other.set(other.name(key, 0, 1), (request, np.full(3, 2.0)))
        other.finish({"i": 1})

    scheduler.on_timeout.append(posts_then_returns)
    total = shipping_to_dask._Meeting(root, key, axes).exchange(0, request, np.full(3, 1.0))
    np.testing.assert_array_equal(total, np.full(3, 3.0))


SCRIPT = '''
import numpy as np, s2s, distributed

SCALE = np.array([1.0, 2.0, 3.0])

def loss(x):                      # reads a global array of the script: sent with it, by value
    return np.sum((np.sin(x) * SCALE) ** 2)

def through_a_callee(x):
    return loss(x)

if __name__ == "__main__":
    with distributed.Client(distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                     dashboard_address=None)) as client:
        client.wait_for_workers(2)
        workers = s2s.dask_devices(client)
        x = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
        grads = []
        for scale in ([1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [-5.0, 0.5, 4.0]):
            SCALE = np.array(scale)   # (a worker imports this script as its __main__: SCALE is 1, 2, 3 there)
            for f in (loss, through_a_callee):
                grads.append(s2s.pmap(s2s.grad(f), devices=workers)(x).tolist())
        print(repr(grads))
'''


def test_a_script_s_global_changed_between_calls_gives_the_new_gradient(tmp_path):
    script = tmp_path / "changes_a_global.py"
    script.write_text(textwrap.dedent(SCRIPT))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    grads = np.array(eval(run.stdout.strip().splitlines()[-1]))
    x = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    for got, scale in zip(grads, [s for s in ([1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [-5.0, 0.5, 4.0]) for _ in "fc"]):
        scale = np.array(scale)
        for k in range(2):
            want = central_difference_grad(lambda v: np.sum((np.sin(v) * scale) ** 2), (x[k],), 0)
            np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-9)


# (last: a deadlock here would leave the workers' threads waiting for good)
def test_pmaps_called_from_many_threads_at_once_do_not_deadlock(client, workers, monkeypatch):
    # Shard 0 of one call may run on worker 0 while shard 1 of another runs on worker 1, each
    # waiting at psum for a shard queued behind the other: a shard must not hold the worker's
    # only thread while it waits.
    x = np.arange(6.0).reshape(2, 3)
    results = {}

    def call(k):
        try:
            results[k] = s2s.pmap(cases.rounds, "i", devices=workers)(x + k)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results[k] = exc

    threads = [threading.Thread(target=call, args=(k,), daemon=True) for k in range(12)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "pmaps over Dask workers deadlocked"
    monkeypatch.setenv("S2S_CPU_DEVICES", "2")
    on_threads = s2s.pmap(cases.rounds, "i")
    for k in range(12):
        assert isinstance(results[k], np.ndarray), results[k]
        np.testing.assert_array_equal(results[k], on_threads(x + k))
    assert scheduler_names(client) == ([], [])
