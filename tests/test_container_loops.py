"""Loops over containers: over a dict's keys, values and items (in Python's insertion order, also
where the dict is rebuilt for a Hessian; with enumerate and zip; a dict both looped over and
indexed), over a list of layers or a tuple of numbers passed as an argument, and writes into what
a loop goes over. Derivatives against central differences in every mode. Refused at the user's
line: under s2s.jit a loop over a dict whose keys are not known when the code is generated (a dict
display written into; a dict argument of a function the jitted one calls) or
over a tuple or list argument, a loop that takes a dict's items by position, and a write into what
a loop goes over (with the way out)."""

import json
import operator
import os

import numpy as np
import pytest

import s2s
from checks import check_all
from finite_differences import central_difference_grad, where as at
from s2s.testing import check_grads
from s2s.tree_util import pytree

X = np.array([0.3, 0.7, 1.1])


# ---- loops over a dict's keys, values and items, in Python's insertion order --------------------
# (the order itself: test_sequence_semantics.py)


def loop_keys(d, x):
    s = 0.0
    for k in d:
        s = s + np.sum(d[k] ** 2 * x)
    return s


def loop_items(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(np.sin(v)) * len(k)
    return s


def loop_values(d):
    s = 0.0
    for v in d.values():
        s = s + np.sum(v * v * v)
    return s


def _dict():
    return {"bb": np.array([1.0, 2.0]), "a": np.array([3.0])}


def _dict_fd(fun, d, *rest):
    keys = sorted(d)
    flat = np.concatenate([d[k] for k in keys])
    cuts = np.cumsum([d[k].size for k in keys])[:-1]

    def flat_fun(v):
        return fun(dict(zip(keys, np.split(v, cuts))), *rest)

    g = central_difference_grad(flat_fun, [flat], 0)
    return dict(zip(keys, np.split(g, cuts)))


@pytest.mark.parametrize("fun", [loop_keys, loop_items, loop_values])
def test_grad_of_a_loop_over_a_dict(fun):
    d = _dict()
    rest = (1.5,) if fun is loop_keys else ()
    got = s2s.grad(fun)(d, *rest)
    want = _dict_fd(fun, d, *rest)
    assert sorted(got) == sorted(d)
    for k in d:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-7, atol=1e-8)


def test_jvp_hessian_and_vmap_of_a_loop_over_a_dict():
    d = _dict()
    tangent = {"bb": np.array([1.0, -1.0]), "a": np.array([0.5])}
    value, out_tangent = s2s.jvp(loop_keys, (d, 1.5), (tangent, 0.0))
    assert value == pytest.approx(loop_keys(d, 1.5))
    # d/dd sum(v^2 x) . t = sum(2 v t x)
    assert out_tangent == pytest.approx(sum(np.sum(2 * d[k] * tangent[k] * 1.5) for k in d))
    hess = s2s.hessian(loop_keys)(d, 1.5)
    np.testing.assert_allclose(hess["bb"]["bb"], 3.0 * np.eye(2))
    np.testing.assert_allclose(hess["a"]["bb"], np.zeros((1, 2)))
    batch = {"bb": np.arange(8.0).reshape(4, 2) / 7, "a": np.arange(4.0).reshape(4, 1) / 5}
    grads = s2s.vmap(s2s.grad(loop_items))(batch)
    for i in range(4):
        one = {k: v[i] for k, v in batch.items()}
        want = _dict_fd(loop_items, one)
        for k in batch:
            np.testing.assert_allclose(grads[k][i], want[k], rtol=1e-7, atol=1e-8)


def test_a_loop_over_int_indices_keeps_working():
    def f(xs, idx):
        s = 0.0
        for i in idx:
            s = s + xs[i] * xs[i]
        return s

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2s.grad(f)(x, [0, 2, 2]), [2.0, 0.0, 12.0])
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x, np.array([0, 2, 2])), [2.0, 0.0, 12.0])


def loop_items_in_a_helper(d):
    return 3.0 * loop_items(d)


@pytest.mark.parametrize("fun", [loop_keys, loop_items])
def test_a_loop_over_a_dict_argument_under_jit(fun):
    """s2s.jit of the function and of its gradient, hessian and vmap, and s2s.jvp compiled, are generated
    for the call: the loop is written out for the dict's keys, in its order. A function it calls
    keeps the loop, refused at its line."""
    rest = (1.5,) if fun is loop_keys else ()
    grads = s2s.jit(s2s.grad(fun))(_dict(), *rest)
    want = _dict_fd(fun, _dict(), *rest)
    for k in want:
        np.testing.assert_allclose(grads[k], want[k], rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(fun)(_dict(), *rest), fun(_dict(), *rest), rtol=1e-12)
    if fun is loop_keys:
        hessian = s2s.jit(s2s.hessian(fun, argnums=1))(_dict(), 1.5)
        step = 1e-4
        expected = (fun(_dict(), 1.5 + step) - 2 * fun(_dict(), 1.5) + fun(_dict(), 1.5 - step)) / step ** 2
        np.testing.assert_allclose(hessian, expected, rtol=1e-5)
        batched = s2s.jit(s2s.vmap(fun, in_axes=(None, 0)))(_dict(), np.array([0.5, 1.5]))
        np.testing.assert_allclose(batched, [fun(_dict(), 0.5), fun(_dict(), 1.5)], rtol=1e-12)
        along = {"bb": np.array([0.3, -1.0]), "a": np.array([2.0])}
        _, derivative = s2s.jvp(fun, (_dict(), 1.5), (along, 0.5), backend="cpu")
        shifted = [fun({k: v + sign * step * along[k] for k, v in _dict().items()}, 1.5 + sign * step * 0.5)
                   for sign in (1, -1)]
        np.testing.assert_allclose(derivative, (shifted[0] - shifted[1]) / (2 * step), rtol=1e-6)
    else:
        tree = s2s.jit(s2s.hessian(fun))(_dict())  # (closed form: -sin(v) len(k) on the diagonal)
        for a, v in _dict().items():
            for b, w in _dict().items():
                expected = np.diag(-np.sin(v) * len(a)) if a == b else np.zeros((v.size, w.size))
                np.testing.assert_allclose(tree[a][b], expected, rtol=1e-10, atol=1e-12)
        with pytest.raises(s2s.S2SError) as info:
            s2s.jit(loop_items_in_a_helper)(_dict())
        message = str(info.value)
        assert at(loop_items, "for") in message and "loop over a dict" in message and "backend='python'" in message


def layers_by_name(params, x):
    h = x
    for name, W in params.items():
        h = np.tanh(h @ W)
    return np.sum(h)


def test_a_loop_over_a_dict_of_layers_of_different_shapes_under_jit():
    """Written out for the call's keys in the dict's order ("z" before "a": in sorted order the
    product would not even have matching shapes), each layer read at its key."""
    params = {"z": np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 0.3]]), "a": np.array([[0.1], [-0.2], [0.4]])}
    x = np.array([0.3, 0.7])
    grads = s2s.jit(s2s.grad(layers_by_name))(params, x)
    for k, W in params.items():
        def at(w, k=k):
            return layers_by_name({**params, k: w}, x)
        np.testing.assert_allclose(grads[k], central_difference_grad(at, (W,), 0), rtol=1e-7, atol=1e-9)
    # Per example: the examples of the dict keep its order (square layers, where the other order
    # would give other numbers, not an error)
    square = {"z": np.array([[1.0, 2.0], [0.5, -1.0]]), "a": np.array([[0.1, 0.3], [-0.2, 0.4]])}
    xs = np.array([[0.3, 0.7], [-0.5, 0.2]])
    per_example = s2s.jit(s2s.vmap(s2s.grad(layers_by_name, argnums=1), in_axes=(None, 0)))(square, xs)
    for b in range(2):
        np.testing.assert_allclose(per_example[b], central_difference_grad(layers_by_name, (square, xs[b]), 1),
                                   rtol=1e-7, atol=1e-9)


def ordered_by_keys(d, x):
    t = x
    for k in d:
        t = t * 2.0 + d[k]
    return t


def counts_keys(d, x):
    t = x
    for k in d:
        t = t * 2.0 + k
    return t


def test_a_loop_over_a_dict_takes_the_keys_in_insertion_order():
    # (it took them sorted: 9 for Python's 8, and a gradient of 4 for Python's 4 by chance)
    d = {"b": 1.0, "a": 2.0}
    assert ordered_by_keys(d, 1.0) == 8.0
    assert s2s.jit(ordered_by_keys, backend="python")(d, 1.0) == 8.0
    assert s2s.grad(ordered_by_keys, argnums=(0, 1))(d, 1.0) == ({"b": 2.0, "a": 1.0}, 4.0)


def test_a_loop_over_a_dict_that_does_not_index_it_is_refused():
    # (it went over d[0], d[1]: the values of a dict with int keys, 21 where Python gives 5)
    for run in (s2s.jit(counts_keys, backend="python"), s2s.grad(counts_keys, argnums=1)):
        with pytest.raises(s2s.S2SError, match=r"test_container_loops.py:\d+: a loop over a dict whose body does not "
                                               r"index it.*d\.keys\(\)"):
            run({0: 5.0, 1: 7.0}, 1.0)
    assert s2s.jit(counts_keys, backend="python")([0.0, 1.0], 1.0) == 5.0  # a list's items, as before


def test_a_dict_loop_that_takes_items_by_position_is_an_s2s_error_at_the_loop():
    def over_keys(d, x):
        s = 0.0
        for k in d:
            s = s + np.sum(x * x) * len(k)  # k used, but not as an index: items are taken by position
        return s

    with pytest.raises(s2s.S2SError, match=r"a loop over a dict whose body does not index it.*d\.keys\(\)") as info:
        s2s.grad(over_keys, argnums=1)({"a": 1.0, "b": 2.0}, np.arange(3.0))
    assert f"test_container_loops.py:{over_keys.__code__.co_firstlineno + 2}:" in str(info.value)


# ---- a dict looped over and also indexed -----------------------------------------------
# `for k, v in d.items()` lowers to `_seq = d` and reads _seq[k]; where d is also read as d[k]
# the adjoints of d and _seq are gathered as dicts (`d_bar += _seq_bar` would be a raw TypeError).

P = {"b": np.array([0.3, -1.2]), "a": np.array([0.5, 0.9])}


def dict_items_then_indexed(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v * 3.0)
    for k in d:
        s = s + np.sum(d[k] * d[k])
    return s


def dict_comprehension_then_indexed(d):
    e = {k: v * 2.0 for k, v in d.items()}
    s = 0.0
    for k in e:
        s = s * 0.5 + np.sum(e[k] * d[k])
    return s


def _dict_differences(fun, d):
    keys = list(d)

    def of_leaves(*leaves):
        return fun(dict(zip(keys, leaves)))

    from finite_differences import central_difference_grad
    return {k: central_difference_grad(of_leaves, [d[j] for j in keys], i) for i, k in enumerate(keys)}


@pytest.mark.parametrize("fun", [dict_items_then_indexed, dict_comprehension_then_indexed])
def test_dict_looped_and_indexed(fun):
    got = s2s.grad(fun)(P)
    expected = _dict_differences(fun, P)
    assert list(got) == list(P)
    for k in P:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-5, atol=1e-7)


# ---- second derivatives of a loop over a dict -------------------------------------------
# s2s.hessian (and jacfwd(grad(f)), jacrev(grad(f))) call the function with its dict argument
# rebuilt by pytree.unflatten (doors/hessian.py): the rebuilt dict keeps the argument's key order,
# so that `for k in d:` goes over "z" before "a" as in f itself (with its keys sorted, the Hessian
# would be that of another function). jvp(grad) is the reference.


def halved_in_key_order(d):
    s = 0.0
    for k in d:
        s = s * 0.5 + d[k] ** 2
    return s  # {"z": z, "a": a}: 0.5 z**2 + a**2


@pytest.mark.parametrize("second", ["hessian", "jacfwd_grad", "jacrev_grad"])
def test_hessian_of_dict_loop_keeps_key_order(second):
    d = {"z": 0.3, "a": 0.5}
    transform = {"hessian": s2s.hessian, "jacfwd_grad": lambda f: s2s.jacfwd(s2s.grad(f)),
                 "jacrev_grad": lambda f: s2s.jacrev(s2s.grad(f))}[second]
    H = transform(halved_in_key_order)(d)
    h = 1e-4

    def at(z, a):
        return halved_in_key_order({"z": z, "a": a})

    zz = (at(0.3 + h, 0.5) - 2 * at(0.3, 0.5) + at(0.3 - h, 0.5)) / h ** 2
    aa = (at(0.3, 0.5 + h) - 2 * at(0.3, 0.5) + at(0.3, 0.5 - h)) / h ** 2
    np.testing.assert_allclose([H["z"]["z"], H["a"]["a"], H["z"]["a"]], [zz, aa, 0.0], rtol=1e-5, atol=1e-6)


def sines_weighted_by_each_entry(params, x):
    out = np.zeros_like(x)
    for k, v in params.items():
        out = out + v * np.sin(x)
    return out


@pytest.mark.parametrize("jacobian", [s2s.jacfwd, s2s.jacrev])
def test_jacobians_of_a_dict_loop_under_jit_are_written_out_for_the_call(jacobian):
    """Under s2s.jit, jacfwd's columns and jacrev's rows go through the code generated for the
    call's keys, the loop over them written out: against central differences of each output."""
    params = {"b": np.array([0.4, -1.1, 0.7]), "a": np.array([1.5, 0.2, -0.3])}
    x = np.array([0.3, -0.8, 1.2])
    J = s2s.jit(jacobian(sines_weighted_by_each_entry, argnums=1))(params, x)
    for i in range(3):
        expected = central_difference_grad(lambda v: sines_weighted_by_each_entry(params, v)[i], (x,), 0)
        np.testing.assert_allclose(J[i], expected, rtol=1e-6, atol=1e-9)


def test_jvp_of_grad_of_dict_loop():  # (forward over reverse is right: a reference for the above)
    d = {"z": 0.3, "a": 0.5}
    _, hv = s2s.jvp(s2s.grad(halved_in_key_order), (d,), ({"z": 1.0, "a": 0.0},))
    np.testing.assert_allclose([hv["z"], hv["a"]], [1.0, 0.0], atol=1e-9)


# ---- a loop over a dict's keys in sorted order: sorted(d), sorted(d.items()), sorted(d.keys()) -----
# (the keys sorted, whatever the dict's order; under s2s.jit written out for the call's keys, sorted)


def sorted_keys_weighted(d):
    A = 0.0
    for i, k in enumerate(sorted(d)):
        A = A + np.sum(np.sin(d[k])) * (i + 1.0)
    return A


def sorted_items_weighted(d):
    t = 0.0
    for i, (k, v) in enumerate(sorted(d.items())):
        t = t + np.sum(v ** 2) * (i + 1.0)
    for i, (k, v) in enumerate(sorted(d.items(), key=operator.itemgetter(0))):
        t = t + np.sum(np.sin(v)) * (i + 2.0)
    return t


def sorted_keys_view(d):
    t = 0.0
    for k in sorted(d.keys()):
        t = t * 2.0 + np.sum(np.cos(d[k]))
    return t


def squares_over_items(d):
    t = 0.0
    for k, v in d.items():
        t = t + np.sum(v ** 2)
    return t


def _unsorted_dict():  # (insertion order is not sorted order: a loop in the wrong order gives other numbers)
    return {"item_X": np.array([0.3, -0.4, 1.2, 0.1]), "item_1": np.array([0.5, 1.5, -2.0]),
            "item_2": np.array([[0.2, 0.4], [-0.6, 0.9]])}


def _grad_by_differences(fun, d):
    return {k: central_difference_grad(lambda v, k=k: fun({**d, k: v}), (d[k],), 0) for k in d}


@pytest.mark.parametrize("fun", [sorted_keys_weighted, sorted_items_weighted, sorted_keys_view, squares_over_items])
def test_a_loop_over_a_dicts_keys_in_sorted_order(fun):
    d = _unsorted_dict()
    got = s2s.grad(fun)(d)
    want = _grad_by_differences(fun, d)
    assert sorted(got) == sorted(d)
    for k in d:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-7, atol=1e-8)
    check_grads(fun, (d,), modes=("fwd",))


def test_a_loop_over_a_dicts_sorted_keys_under_jit():
    """Written out for the call's keys in sorted order (sorted of the dict is a list Numba cannot make)."""
    d = _unsorted_dict()
    jitted = s2s.jit(s2s.grad(sorted_keys_weighted))
    got = jitted(d)
    want = _grad_by_differences(sorted_keys_weighted, d)
    for k in d:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-7, atol=1e-8)
    assert "sorted(" not in jitted.source and "runtime.loop_keys" not in jitted.source
    assert jitted.source.index('d["item_1"]') < jitted.source.index('d["item_2"]') < jitted.source.index('d["item_X"]')


# ---- enumerate and zip of a dict -----------------------------------------------------------------
# `for i, k in enumerate(d)` goes over the keys, as `for k in d` does (not d[0], d[1], ...). Under
# s2s.jit a loop over a dict display is written out key by key; over one that the loop writes into,
# it is refused (Numba cannot index a dict at a key known only at run time).


def enumerate_a_dict(x):
    d = {"a": x[0], "b": x[1], "c": x[2]}
    s = 0.0
    for i, k in enumerate(d):
        s = s + d[k] * d[k] * (i + 1.0)
    return s


def enumerate_a_dicts_items(x):
    d = {"a": x[0], "b": x[1], "c": x[2]}
    s = 0.0
    for i, (k, v) in enumerate(d.items()):
        s = s + np.sin(v) * (i + 1.0)
    return s


def enumerate_a_dicts_keys_and_values(x):
    d = {"b": x[0], "a": x[1] * x[2]}
    s = 0.0
    for i, k in enumerate(d.keys()):
        s = s + d[k] * (i + 2.0)
    for i, v in enumerate(d.values()):
        s = s + v * v * i
    return s


def write_into_a_dict_in_a_loop_over_it(x):
    d = {"a": x[0], "b": x[1]}
    for k in d:
        d[k] = d[k] * x[2]
    return d["a"] * d["b"]


@pytest.mark.parametrize("f", [enumerate_a_dict, enumerate_a_dicts_items, enumerate_a_dicts_keys_and_values,
                               write_into_a_dict_in_a_loop_over_it], ids=lambda f: f.__name__)
def test_loops_over_a_dict(f):
    written_into = f is write_into_a_dict_in_a_loop_over_it
    check_all(f, X, jit=not written_into)
    if written_into:
        with pytest.raises(s2s.S2SError, match="under s2s.jit a loop over a dict is not supported"):
            s2s.jit(s2s.grad(f))(X)


def enumerate_a_dict_argument(d):
    s = 0.0
    for i, k in enumerate(d):
        s = s + d[k] * (i + 1.0)
    return s


def test_enumerate_a_dict_argument():
    g = s2s.grad(enumerate_a_dict_argument)({"u": 0.5, "v": 2.0})
    assert g == {"u": 1.0, "v": 2.0}


def zip_of_a_dict(x):
    d = {"a": x[0], "b": x[1]}
    s = 0.0
    for k, v in zip(d, x):
        s = s + v * d[k]
    return s


def test_a_dict_read_by_position_names_the_loop_and_the_way_out():
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(zip_of_a_dict)(X)
    message = str(info.value)
    assert at(zip_of_a_dict, "for k, v in zip(d, x):") in message
    assert "no key 0 in a dict" in message
    assert "loop over d.keys(), d.values() or d.items()" in message
    assert "takes items by position" not in message


def enumerate_a_dict_into_pairs(x):
    d = {"a": x[0], "b": x[1]}
    s = 0.0
    for i, (k, v) in enumerate(d):
        s = s + v * i
    return s


def test_enumerate_of_a_dict_unpacked_says_what_to_write():
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(enumerate_a_dict_into_pairs)(X)
    message = str(info.value)
    assert at(enumerate_a_dict_into_pairs, "for i, (k, v) in enumerate(d):") in message
    assert "enumerate(d.items())" in message


# ---- writing into what a loop goes over: refused in the user's words -----------------------------
# (the message names the user's list or dict, never `_keys` or `_seq`, names of s2s's)


def write_into_a_list_in_a_loop_over_it(x):
    t = [1, 0]
    for k in t:
        t[k] = t[k] + 1
    return x[0] * t[0]


def write_into_a_dict_argument_in_a_loop_over_it(d, x):
    for k in d:
        d[k] = d[k] * x[2]
    return d["a"] + d["b"]


def test_a_write_into_what_a_loop_goes_over_is_refused_in_the_users_words():
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(write_into_a_list_in_a_loop_over_it)(X)
    message = str(info.value)
    assert at(write_into_a_list_in_a_loop_over_it, "t[k] = t[k] + 1") in message
    assert "writing into t inside the loop `for k in t:`" in message
    assert "`for k in list(t):`" in message
    assert "_keys" not in message and "_seq" not in message
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(write_into_a_dict_argument_in_a_loop_over_it, argnums=1)({"a": 1.0, "b": 2.0}, X)
    message = str(info.value)
    assert at(write_into_a_dict_argument_in_a_loop_over_it, "d[k] = d[k] * x[2]") in message
    assert "`for k in d.keys():`" in message
    assert "_keys" not in message


def the_way_out_for_a_list(x):
    t = [1, 0]
    for k in list(t):
        t[k] = t[k] + 1
    return x[0] * t[0]


def test_the_way_out_works():
    check_all(the_way_out_for_a_list, X)


# ---- loops over a list of layers or a tuple of numbers passed as an argument -------------------


def mlp_over_a_list(Ws, x):
    h = x
    for i in range(len(Ws)):
        h = np.tanh(h @ Ws[i])
    return np.sum(h)


def mlp_iterating(Ws, x):
    h = x
    for W in Ws:
        h = np.tanh(h @ W)
    return np.sum(h)


def mlp_of_pairs(params, x):
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.sum(h)


def mlp_indexing_pairs(params, x):
    h = x
    for i in range(len(params)):
        h = np.tanh(h @ params[i][0] + params[i][1])
    return np.sum(h)


def mlp_as_in_jax_readme(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return np.sum(outputs ** 2)


def mlp_output_layer_after_the_loop(params, inputs):
    activations = inputs
    for W, b in params[:-1]:
        outputs = np.dot(activations, W) + b
        activations = np.tanh(outputs)
    final_W, final_b = params[-1]
    return np.sum((np.dot(activations, final_W) + final_b) ** 2)


def mlp_output_layer_unpacked_into_the_loops_names(params, inputs):
    activations = inputs
    for W, b in params[:-1]:
        outputs = np.dot(activations, W) + b
        activations = np.tanh(outputs)
    W, b = params[-1]  # (W and b of the output layer: after the loop, nothing reads the loop's W)
    return np.sum((np.dot(activations, W) + b) ** 2)


def mlp_rebinding_a_variable_bound_before_the_loop(params, inputs):
    outputs = inputs
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return np.sum(outputs ** 2) + np.sum(inputs)


def weighted_sum(ws, x):
    s = 0.0
    for i in range(len(ws)):
        s = s + ws[i] * x[i]
    return s


def _network():
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((3, 4)), rng.standard_normal((4, 2))]
    bs = [rng.standard_normal(4), rng.standard_normal(2)]
    return Ws, [(W, b) for W, b in zip(Ws, bs)], rng.standard_normal(3)


@pytest.mark.parametrize("fun, pairs", [(mlp_over_a_list, False), (mlp_iterating, False), (mlp_of_pairs, True),
                                        (mlp_indexing_pairs, True)])
def test_loops_over_a_list_of_layers(fun, pairs):
    """The usual MLP: layers of different widths in a list, indexed or iterated by a loop;
    the gradient has the list's structure (python backend)."""
    Ws, params, x = _network()
    args = (params if pairs else Ws, x)
    check_grads(fun, args, argnums=(0,), modes=("rev", "fwd"))
    grad = s2s.grad(fun)(*args)
    assert isinstance(grad, list) and len(grad) == 2
    if pairs:
        assert all(isinstance(g, tuple) and g[0].shape == W.shape and g[1].shape == b.shape
                   for g, (W, b) in zip(grad, params))


@pytest.mark.parametrize("fun", [mlp_as_in_jax_readme, mlp_output_layer_after_the_loop,
                                 mlp_output_layer_unpacked_into_the_loops_names,
                                 mlp_rebinding_a_variable_bound_before_the_loop])
@pytest.mark.parametrize("widths", [(2, 1, 3), (3, 4, 2), (2, 5, 1, 3)])
def test_a_variable_bound_anew_in_each_layer_takes_that_layers_shape(fun, widths):
    """`outputs = np.dot(inputs, W) + b` binds outputs anew in each pass, with that layer's
    width: the zeros its adjoint restarts from in the reverse loop take the width of the layer
    before (a shape tape), not the last layer's, which would broadcast (a layer of width 1
    after one of width 3 summed three copies of its adjoint)."""
    rng = np.random.default_rng(7)
    params = [(rng.standard_normal((m, n)), rng.standard_normal(n)) for m, n in zip(widths[:-1], widths[1:])]
    inputs = rng.standard_normal((5, widths[0]))
    grad = s2s.grad(fun)(params, inputs)
    assert isinstance(grad, list) and len(grad) == len(params)
    for k, (W, b) in enumerate(params):
        for j, part in enumerate((W, b)):
            def loss_of_part(value, k=k, j=j):
                changed = [list(layer) for layer in params]
                changed[k][j] = value
                return fun([tuple(layer) for layer in changed], inputs)
            np.testing.assert_allclose(grad[k][j], central_difference_grad(loss_of_part, (part,), 0),
                                       rtol=1e-6, atol=1e-6)
    check_grads(fun, (params, inputs), argnums=(0, 1), modes=("rev", "fwd"))


def test_a_loop_over_a_tuple_of_numbers():
    x = np.array([0.3, -1.2, 2.0])
    grad = s2s.grad(weighted_sum)((0.5, 1.5, 2.0), x)
    assert isinstance(grad, tuple)
    np.testing.assert_allclose(grad, x, rtol=1e-14)
    check_grads(weighted_sum, ((0.5, 1.5, 2.0), x))


@pytest.mark.parametrize("fun", [mlp_over_a_list, mlp_iterating, mlp_of_pairs, mlp_indexing_pairs,
                                 mlp_as_in_jax_readme, mlp_output_layer_after_the_loop,
                                 mlp_output_layer_unpacked_into_the_loops_names])
def test_loops_over_layers_of_different_widths_under_jit(fun):
    """A list of layers becomes a tuple under s2s.jit, of items of one type (2-d arrays, or
    pairs of a 2-d and a 1-d array) whose shapes differ: the loop reads it at an index known
    at run time, and its adjoint is made anew at that index (runtime.add_at); the gradient
    keeps the list's structure. Against central differences, as on the python backend."""
    Ws, params, x = _network()
    layers = Ws if fun in (mlp_over_a_list, mlp_iterating) else params
    if fun in (mlp_as_in_jax_readme, mlp_output_layer_after_the_loop, mlp_output_layer_unpacked_into_the_loops_names):
        layers = layers + [(np.ones((2, 3)) * 0.3, np.array([0.1, -0.2, 0.3]))]
        x = np.stack([x, x * 0.5])
    grad = s2s.jit(s2s.grad(fun))(layers, x)
    assert isinstance(grad, list) and len(grad) == len(layers)
    for k, layer in enumerate(layers):
        parts = (layer,) if isinstance(layer, np.ndarray) else layer
        for j, part in enumerate(parts):
            def loss_of_part(value, k=k, j=j):
                changed = [list(item) if isinstance(item, tuple) else item for item in layers]
                if isinstance(layers[k], tuple):
                    changed[k][j] = value
                else:
                    changed[k] = value
                return fun([tuple(item) if isinstance(item, list) else item for item in changed], x)
            got = grad[k][j] if isinstance(layer, tuple) else grad[k]
            np.testing.assert_allclose(got, central_difference_grad(loss_of_part, (part,), 0), rtol=1e-6, atol=1e-6)


def test_a_loop_over_items_of_different_types_under_jit_is_written_out():
    """A 2-d and a 1-d array: a tuple under s2s.jit that no index known at run time reads. Where
    the code is generated for the call (s2s.jit of the function and of its gradient) the loop is
    written out item by item; in a helper, whose code is not, it is refused at the helper's line."""
    layers = [np.ones((3, 4)) * 0.1, np.ones(4) * 0.2]
    x = np.arange(3.0)
    assert s2s.jit(mlp_over_a_list)(layers, x) == pytest.approx(mlp_over_a_list(layers, x), rel=1e-14)
    grads = s2s.jit(s2s.grad(mlp_over_a_list))(layers, x)
    assert isinstance(grads, list) and len(grads) == 2
    for k in range(2):
        def loss_of(value, k=k):
            return mlp_over_a_list([value if j == k else w for j, w in enumerate(layers)], x)
        np.testing.assert_allclose(grads[k], central_difference_grad(loss_of, (layers[k],), 0), rtol=1e-6, atol=1e-9)
    tangents = ([np.ones((3, 4)), np.ones(4)], np.zeros(3))
    assert s2s.jvp(mlp_over_a_list, (layers, x), tangents, backend="cpu")[1] == pytest.approx(
        sum(np.sum(g * t) for g, t in zip(grads, tangents[0])), rel=1e-12)
    text = s2s.jit(s2s.grad(mlp_over_a_list)).specialised_source((layers, x))
    assert not any(line.strip().startswith("for ") for line in text.splitlines())  # (written out)
    with pytest.raises(s2s.S2SError, match=r"test_container_loops.py:\d+:\d+: s2s.jit of mlp_through_a_helper: "
                                           r"argument Ws is a tuple of 2 .*use backend='python'"):
        s2s.jit(s2s.grad(mlp_through_a_helper))(layers, x)
    check_grads(mlp_through_a_helper, (layers, x), argnums=(0,), modes=("rev",))  # (the way out)


def mlp_through_a_helper(Ws, x):
    return mlp_over_a_list(Ws, x) * 2.0


def test_vmap_of_the_gradient_of_an_mlp_under_jit():
    """JAX's README: jit(vmap(grad(loss), in_axes=(None, 0, 0))), per-example gradients of
    layers of different widths, each against the python backend's gradient of that example
    (itself checked against central differences above)."""
    rng = np.random.default_rng(3)
    widths = (2, 5, 3, 2)
    params = [(rng.standard_normal((m, n)), rng.standard_normal(n)) for m, n in zip(widths[:-1], widths[1:])]
    inputs, targets = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))

    def loss(params, x, y):
        return np.sum((predict_with_layers(params, x) - y) ** 2)

    per_example = s2s.jit(s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0)))(params, inputs, targets)
    assert isinstance(per_example, list) and len(per_example) == len(params)
    for e in range(len(inputs)):
        def loss_of(flat, e=e):
            return loss(_unflatten(flat, params), inputs[e], targets[e])
        expected = _unflatten(central_difference_grad(loss_of, (_flatten(params),), 0), params)
        for (W_bars, b_bars), (W_bar, b_bar) in zip(per_example, expected):
            np.testing.assert_allclose(W_bars[e], W_bar, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(b_bars[e], b_bar, rtol=1e-6, atol=1e-6)


def predict_with_layers(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def _flatten(params):
    return np.concatenate([np.concatenate([W.ravel(), b]) for W, b in params])


def _unflatten(flat, like):
    out, at = [], 0
    for W, b in like:
        out.append((flat[at:at + W.size].reshape(W.shape), flat[at + W.size:at + W.size + b.size]))
        at += W.size + b.size
    return out

def hidden_then_output(params, x):
    """JAX's README MLP: the hidden layers in a loop over a slice of the list, the output after."""
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    return np.sum((h @ params[-1][0] + params[-1][1]) ** 2)


def every_other_layer(ws, x):
    h = x
    for W in ws[::2]:
        h = np.tanh(W @ h)
    return np.dot(ws[-1], h)


@pytest.mark.parametrize("container", [list, tuple])
def test_a_loop_over_a_constant_slice_of_layers_under_jit(container):
    """A slice at constant bounds of a list of items of different kinds: the loop is written out
    over the items it keeps, read from the list itself (their adjoints go to its own items)."""
    rng = np.random.default_rng(3)
    pairs = [(rng.standard_normal((4, 3)) * 0.5, rng.standard_normal(3) * 0.1),
             (rng.standard_normal((3, 2)) * 0.5, rng.standard_normal(2) * 0.1),
             (rng.standard_normal((2, 1)) * 0.5, rng.standard_normal(1) * 0.1)]
    ws = [rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((3, 3)), rng.standard_normal((2, 3)) * 0.5,
          rng.standard_normal(2)]
    x4 = rng.standard_normal(4)
    for fun, layers, x in [(hidden_then_output, container(pairs), x4), (every_other_layer, container(ws), x4)]:
        assert s2s.jit(fun)(layers, x) == pytest.approx(fun(layers, x), rel=1e-12)
        flat, structure = pytree.flatten(layers)
        for backend in ("python", "cpu"):
            grads = s2s.jit(s2s.grad(fun), backend=backend)(layers, x)
            assert isinstance(grads, container)
            for k, leaf in enumerate(flat):
                def loss_of(value, k=k):
                    return fun(pytree.unflatten(structure, [value if j == k else v for j, v in enumerate(flat)]), x)
                np.testing.assert_allclose(pytree.leaves(grads)[k], central_difference_grad(loss_of, (leaf,), 0),
                                           rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(s2s.jit(s2s.grad(fun, argnums=1))(layers, x),
                                   central_difference_grad(fun, (layers, x), 1), rtol=1e-6, atol=1e-9)


# ---- JAX's README MLP, against JAX's own gradients (tests/data/make_readme_mlp_jax.py) ---------------


def readme_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)  # inputs to the next layer
    return outputs  # no activation on the last layer


def readme_loss(params, inputs, targets):
    preds = readme_predict(params, inputs)
    return np.sum((preds - targets) ** 2)


def readme_loss_output_layer_after_the_loop(params, inputs, targets):
    for W, b in params[:-1]:
        inputs = np.tanh(np.dot(inputs, W) + b)
    W, b = params[-1]
    return np.sum((np.dot(inputs, W) + b - targets) ** 2)


@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("fun", [readme_loss, readme_loss_output_layer_after_the_loop])
def test_the_mlp_of_jax_readme_gives_jax_gradients(fun, container):
    """grad, jit(grad), vmap(grad, in_axes=(None, 0, 0)) and its jit, on layers of different
    widths: JAX's values, and the structure of params (a list stays a list, each layer a tuple)."""
    with open(os.path.join(os.path.dirname(__file__), "data", "readme_mlp_jax.json")) as f:
        data = json.load(f)
    params = container(tuple(np.array(part) for part in layer) for layer in data["params"])
    inputs, targets = np.array(data["inputs"]), np.array(data["targets"])
    expected = data[fun.__name__.replace("readme_", "")]
    assert fun(params, inputs, targets) == pytest.approx(expected["value"], rel=1e-12)

    def same(got, want):
        assert isinstance(got, container) and len(got) == len(want)
        for layer, (W_bar, b_bar) in zip(got, want):
            assert isinstance(layer, tuple) and len(layer) == 2
            np.testing.assert_allclose(layer[0], W_bar, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(layer[1], b_bar, rtol=1e-10, atol=1e-12)

    grad_loss = s2s.grad(fun)
    same(grad_loss(params, inputs, targets), expected["grad"])
    same(s2s.jit(grad_loss)(params, inputs, targets), expected["grad"])
    same(s2s.vmap(grad_loss, in_axes=(None, 0, 0))(params, inputs, targets), expected["per_example"])
    same(s2s.jit(s2s.vmap(grad_loss, in_axes=(None, 0, 0)))(params, inputs, targets), expected["per_example"])
