"""s2s.pmap over the workers of a Dask cluster (s2s.dask_devices), and transforms that pickle.

The cluster is a LocalCluster of two worker processes: each shard runs in another process,
which receives the function by pickle and generates and compiles it itself, and the
collectives meet through the scheduler. Results are checked against the same pmap on threads
(CPU devices), finite differences and closed forms."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
import dask_cases as cases
from dask_cases import scheduler_names
from finite_differences import central_difference_grad



@pytest.fixture(scope="module")
def client():
    with cases.local_client(threads_per_worker=2) as c:
        yield c


@pytest.fixture
def workers(client):
    return s2s.dask_devices(client)


def data(seed=0, shards=2, examples=6, features=3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=features), rng.normal(size=(shards, examples, features)),
            rng.normal(size=(shards, examples)))


def test_dask_devices_are_the_workers_in_address_order(client, workers):
    addresses = sorted(client.scheduler_info(n_workers=-1)["workers"])
    assert [d.worker for d in workers] == addresses and [d.id for d in workers] == [0, 1]
    assert repr(workers[0]) == f"DaskDevice(id=0, worker={addresses[0]!r})"
    with pytest.raises(s2s.S2SError, match="takes a distributed.Client"):
        s2s.dask_devices("tcp://127.0.0.1:8786")


def test_grad_on_each_worker_matches_finite_differences(workers):
    w, x, y = data()
    g = s2s.pmap(s2s.grad(cases.loss), in_axes=(None, 0, 0), devices=workers)(w, x, y)
    assert g.shape == (2, 3)
    for k in range(2):
        np.testing.assert_allclose(g[k], central_difference_grad(cases.loss, (w, x[k], y[k]), 0),
                                   rtol=1e-6, atol=1e-8)


def test_vmap_of_grad_per_worker_equals_threads(workers, monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "2")
    w, x, y = data(1)
    per_example = s2s.vmap(s2s.grad(cases.example_loss), in_axes=(None, 0, 0))
    on_workers = s2s.pmap(per_example, in_axes=(None, 0, 0), devices=workers)(w, x, y)
    on_threads = s2s.pmap(per_example, in_axes=(None, 0, 0))(w, x, y)
    assert on_workers.shape == (2, 6, 3)
    np.testing.assert_array_equal(on_workers, on_threads)
    r = np.tanh(x @ w) - y  # closed form: d/dw (tanh(x.w) - y)^2 = 2 r (1 - tanh^2) x
    np.testing.assert_allclose(on_workers, (2 * r * (1 - np.tanh(x @ w) ** 2))[..., None] * x, rtol=1e-12)


def test_data_parallel_training_step_averages_gradients_over_workers(client, workers):
    w, x, y = data(2)
    step = s2s.pmap(cases.training_step, "i", in_axes=(None, 0, 0), devices=workers)
    new = step(w, x, y)
    mean_grad = np.mean([central_difference_grad(cases.loss, (w, x[k], y[k]), 0) for k in range(2)], axis=0)
    np.testing.assert_allclose(new[0], w - 0.1 * mean_grad, rtol=1e-6, atol=1e-8)
    assert np.array_equal(new[0], new[1])  # the same bits on every shard
    assert step.mode.startswith("dask: python")  # (a collective: the function runs as Python on the worker)
    assert scheduler_names(client) == ([], [])


def test_collectives_over_workers_equal_collectives_over_threads(client, workers, monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "2")
    x = np.arange(6.0).reshape(2, 3) ** 1.5
    on_workers = s2s.pmap(cases.every_collective, "i", devices=workers)(x)
    on_threads = s2s.pmap(cases.every_collective, "i")(x)
    for a, b in zip(on_workers, on_threads):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(on_workers[0][0], x.sum(0))
    chained = s2s.pmap(cases.rounds, "i", devices=workers)(x)
    np.testing.assert_array_equal(chained, s2s.pmap(cases.rounds, "i")(x))
    assert scheduler_names(client) == ([], [])


def test_lists_stay_lists_through_arguments_collectives_and_results(workers, monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "2")
    pair = [np.arange(6.0).reshape(2, 3), np.array([[1.0], [2.0]])]
    on_workers = s2s.pmap(cases.sums_a_list, "i", devices=workers)(pair)
    on_threads = s2s.pmap(cases.sums_a_list, "i")(pair)
    assert type(on_workers) is list and type(on_workers[1]) is dict
    for a, b in zip(s2s.tree_util.tree_leaves(on_workers), s2s.tree_util.tree_leaves(on_threads)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(on_workers[0][1], pair[0].sum(0) + pair[1][1])


def test_pmap_over_worker_threads_inside_pmap_over_workers(workers, monkeypatch):
    x = np.arange(12.0).reshape(2, 2, 3)
    out = s2s.pmap(cases.over_worker_threads, "i", devices=workers)(x)
    assert out.shape == (2, 2, 3)
    assert all(np.array_equal(row, x.reshape(4, 3).sum(0)) for row in out.reshape(4, 3))


def test_a_pmap_object_as_the_function_of_a_pmap_over_workers(client, workers, monkeypatch):
    # (its inner shards run on the worker's threads, which must reach the scheduler through the
    # worker's client: through another, their posts never arrived and the call waited forever)
    monkeypatch.setenv("S2S_CPU_DEVICES", "2")
    x = np.arange(12.0).reshape(2, 2, 3)
    nested = s2s.pmap(s2s.pmap(cases.psum_over_both, "j"), "i", devices=workers)
    for _ in range(3):
        out = nested(x)
        assert all(np.array_equal(row, x.reshape(4, 3).sum(0)) for row in out.reshape(4, 3))
    assert scheduler_names(client) == ([], [])


def test_a_failing_shard_reports_its_error_and_the_others_stop(client, workers):
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="shard one says no"):
        s2s.pmap(cases.fails_on_shard_one, "i", devices=workers)(x)
    with pytest.raises(s2s.S2SError, match="returned without calling s2s.lax.psum"):
        s2s.pmap(cases.returns_early_on_shard_one, "i", devices=workers)(x)
    with pytest.raises(s2s.S2SError, match="called different collectives"):
        s2s.pmap(cases.calls_different_collectives, "i", devices=workers)(x)
    assert scheduler_names(client) == ([], [])


def test_refusals_reach_the_client_with_the_user_s_line(workers):
    with pytest.raises(s2s.S2SError, match="dask_cases.py:") as refused:
        s2s.pmap(s2s.grad(cases.pops_a_list), devices=workers)(np.ones((2, 3)))
    assert "list.pop()" in str(refused.value)
    with pytest.raises(s2s.S2SError, match="size 3, but pmap was given 2 devices"):
        s2s.pmap(s2s.grad(cases.loss), in_axes=(None, 0, 0), devices=workers)(*data(shards=3))
    with pytest.raises(s2s.S2SError, match="backend 'cuda' with Dask workers"):
        s2s.pmap(cases.loss, devices=workers, backend="cuda")
    with pytest.raises(s2s.S2SError, match="not all CPU devices, all CUDA devices or all Dask workers"):
        s2s.pmap(cases.loss, devices=[workers[0], s2s.devices()[0]])


SCRIPT = '''
import numpy as np, s2s, distributed

def simulate(k, x0):              # defined in the script: cloudpickle sends it by value
    x = x0
    for t in range(50):
        x = x + 0.01 * (-k * x + np.sin(x))
    return x

def final_sum(k, x0):
    return np.sum(simulate(k, x0))

if __name__ == "__main__":
    with distributed.Client(distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                     dashboard_address=None)) as client:
        ks = np.array([0.5, 2.0])
        x0 = np.linspace(0.1, 1.0, 4)
        sensitivity = s2s.pmap(s2s.jit(s2s.grad(final_sum)), in_axes=(0, None), devices=s2s.dask_devices(client))
        print(repr(sensitivity(ks, x0).tolist()))
        h = 1e-6
        print(repr([(final_sum(k + h, x0) - final_sum(k - h, x0)) / (2 * h) for k in ks]))
'''


def test_a_script_s_own_functions_travel_with_their_source(tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(SCRIPT))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    got, want = (eval(line) for line in run.stdout.strip().splitlines()[-2:])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_data_parallel_example_trains_on_dask_workers(tmp_path):
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "data_parallel.py")
    run = subprocess.run([sys.executable, example, "--dask"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "devices: [DaskDevice(id=0" in run.stdout and "data-parallel gradient matches" in run.stdout


# ---- transforms pickle as the call that made them ---------------------------------------


@pytest.mark.parametrize("make", [
    lambda: s2s.grad(cases.loss),
    lambda: s2s.value_and_grad(cases.loss, argnums=(0, 2)),
    lambda: s2s.jit(s2s.grad(cases.loss)),
    lambda: s2s.jacrev(cases.loss),
    lambda: s2s.jacfwd(cases.loss),
    lambda: s2s.hessian(cases.loss),
    lambda: s2s.jit(cases.loss),
])
def test_transforms_pickle_as_their_recipe(make):
    w, x, y = data(3, shards=1)
    made = make()
    again = pickle.loads(pickle.dumps(made))
    assert type(again) is type(made) and again is not made
    for a, b in zip(s2s.tree_util.tree_leaves(made(w, x[0], y[0])), s2s.tree_util.tree_leaves(again(w, x[0], y[0]))):
        np.testing.assert_array_equal(a, b)


def test_vmap_pickles_with_its_axes():
    per_example = s2s.jit(s2s.vmap(s2s.grad(cases.example_loss), in_axes=(None, 0, 0)))
    w, x, y = data(4, shards=1)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(per_example))(w, x[0], y[0]), per_example(w, x[0], y[0]))


def test_an_internal_object_does_not_pickle_silently():
    inner = s2s.grad(cases.loss).with_backend("cpu")  # (made by s2s, not by a public transform)
    with pytest.raises(s2s.S2SError, match="cannot be sent to another process"):
        pickle.dumps(inner)
