"""Tapes of the cuda backend: global (capacity, threads) arrays, step-major, that the launcher
allocates (s2s/codegen/cuda_tapes.py, s2s/backends/cuda_tapes.py).

Run in Numba's simulator (tests/conftest.py); every case of cuda_cases.CASES here (while_grad,
doubling_grad, helper_while_grad, helper_tape_greeks, damped_grad, greeks) is also compiled to
PTX for sm_90 by tests/test_cuda.py::test_ptx. Gradients are checked against the cpu backend
and against central differences of the primal run on the cuda backend.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import s2s
from s2s.tree_util import pytree
import cuda_cases
from cuda_cases import CASES

from numba.core import config

SIMULATED = bool(config.ENABLE_CUDASIM)


def _agree(got, want):
    """Exact under the simulator (the same operations in the same order as the cpu backend)."""
    for g, w in zip(pytree.leaves(got), pytree.leaves(want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        if SIMULATED:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11)


def _launcher(jitted, args):
    return jitted._specialise(args, jitted._trees(args), "cuda")["launcher"]


def _central(f, args, argnum, h=1e-6):
    """Central differences of a vmapped f along its argument argnum (per example)."""
    up, down = list(args), list(args)
    up[argnum], down[argnum] = args[argnum] + h, args[argnum] - h
    return (f(*up) - f(*down)) / (2 * h)


def test_for_loop_trip_count_of_the_example_overflows_and_reruns():
    """damped(x, k) runs k steps, k of the example's own (5 for the first, up to 12): the probe
    sizes the tapes at 5, the kernel reports the overflow in tape_status, and the launcher reruns
    once with room for 12, without writing the module again; a second call reruns nothing."""
    make, args = CASES["damped_grad"]
    jitted = s2s.jit(make(), backend="cuda")
    x, k = args()
    got = jitted(x, k)
    launcher = _launcher(jitted, (x, k))
    source = launcher.source
    assert launcher.relaunches == 1
    assert [t.size for t in launcher.tapes] == [12] * 4 and not any(t.from_shapes for t in launcher.tapes)
    _agree(got, s2s.jit(make(), backend="cpu")(x, k))
    primal = s2s.jit(s2s.vmap(cuda_cases.damped), backend="cuda")
    np.testing.assert_allclose(got, _central(primal, (x, k), 0), rtol=1e-6, atol=1e-9)
    jitted(x, k)
    assert launcher.relaunches == 1 and launcher.source == source
    # longer trips than any so far: the tapes double (24 > 20) and the batch reruns once more
    k2 = k.copy()
    k2[7] = 20
    _agree(jitted(x, k2), s2s.jit(make(), backend="cpu")(x, k2))
    assert launcher.relaunches == 2 and [t.size for t in launcher.tapes] == [24] * 4


def test_monte_carlo_path_capacity_from_the_shapes():
    """The issue's Monte Carlo path: its tapes' capacity is z.shape[0] (`_t2 = z.shape[0]` in
    the generated code, followed back to the argument), evaluated from the arguments before
    each launch, so that paths of another length need no rerun; the greeks agree with the cpu
    backend and with central differences per path."""
    make, _ = CASES["greeks"]
    jitted = s2s.jit(make(), backend="cuda")
    primal = s2s.jit(s2s.vmap(cuda_cases.path_payoff, in_axes=(None, None, 0)), backend="cuda")
    cpu = s2s.jit(make(), backend="cpu")
    for steps in (32, 48, 8):
        s0, sigma, z = cuda_cases.path_args(n=130, steps=steps)  # (130: two blocks, one partly idle)
        delta, vega = jitted(s0, sigma, z)
        _agree((delta, vega), cpu(s0, sigma, z))
        inside = primal(s0, sigma, z) > 1e-4  # away from the kink at the strike
        np.testing.assert_allclose(delta[inside], _central(primal, (s0, sigma, z), 0)[inside], rtol=1e-6)
        np.testing.assert_allclose(vega[inside], _central(primal, (s0, sigma, z), 1)[inside], rtol=1e-5, atol=1e-8)
    launcher = _launcher(jitted, (s0, sigma, z))
    assert all(t.from_shapes and t.capacity == "z.shape[0]" for t in launcher.tapes)
    assert launcher.relaunches == 0
    assert "s_tape of path_payoff_vjp, float64: z.shape[0], evaluated from the arguments' shapes" in launcher.source


@pytest.mark.parametrize("name, fun, argnums", [("while_grad", cuda_cases.halves, (0,)),
                                                ("doubling_grad", cuda_cases.doubling, (0, 1)),
                                                ("helper_while_grad", cuda_cases.settle_sum, (0,)),
                                                ("for_while_grad", cuda_cases.for_while, (0,)),
                                                ("while_for_grad", cuda_cases.while_for, (0,))])
def test_while_loop_gradients(name, fun, argnums):
    """A while loop's tape (a list in the per-example code) is a global tape with a count of its
    values; trip counts are the examples' own (1 to 6, 3 to 13, a helper's loop inside a range
    loop, a while loop in a range loop, a range loop in a while loop): the first launch
    overflows and the batch reruns once. Against the cpu backend and central differences.
    for_while: the first launch's range tape of while-loop trip counts overflows, so its reverse
    sweep reads back a clamped slot and pops more than it pushed; the clamp keeps that inside
    the column (an IndexError in the simulator before both sides were clamped)."""
    make, args = CASES[name]
    jitted = s2s.jit(make(), backend="cuda")
    got = jitted(*args())
    _agree(got, s2s.jit(make(), backend="cpu")(*args()))
    launcher = _launcher(jitted, args())
    assert launcher.relaunches == 1 and any(t.kind == "while" for t in launcher.tapes)
    assert ".append(" not in launcher.source and ".pop(" not in launcher.source
    primal = s2s.jit(s2s.vmap(fun), backend="cuda")
    grads = got if len(argnums) > 1 else (got,)
    for argnum, grad in zip(argnums, grads):
        np.testing.assert_allclose(grad, _central(primal, args(), argnum), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name, fun, argnums", [("skip_steps_grad", cuda_cases.skip_steps, (0,)),
                                                ("skip_steps_of_data_grad", cuda_cases.skip_steps_of_data, (0,))])
def test_continue_in_a_loop_whose_tape_overflows(name, fun, argnums):
    """A `continue` and a helper call in a range loop of the example's own trip count (an int, or
    computed from the data): the first launch overflows the tapes, and the overflowing examples'
    reverse sweeps read some `continue` flags from clamped slots. In Numba's simulator their
    shape tapes were Python lists, and such a sweep popped a shape never pushed (IndexError:
    pop from empty list); in a kernel they keep nothing (backends/cuda_tapes.simulated_runtime).
    The rerun's gradients equal the cpu backend's and central differences of the primal."""
    make, args = CASES[name]
    jitted = s2s.jit(make(), backend="cuda")
    got = jitted(*args())
    _agree(got, s2s.jit(make(), backend="cpu")(*args()))
    assert _launcher(jitted, args()).relaunches == 1
    primal = s2s.jit(s2s.vmap(fun), backend="cuda")
    np.testing.assert_allclose(got, _central(primal, args(), 0), rtol=1e-6, atol=1e-9)


def test_device_arrays_with_tapes():
    """Device arrays in: the capacity from z.shape[0] is read from the device array's shape, and a
    while loop's overflow reruns on the same device inputs; results stay on the device."""
    from numba import cuda

    make, args = CASES["greeks"]
    s0, sigma, z = cuda_cases.path_args(n=64, steps=24)
    jitted = s2s.jit(make(), backend="cuda")
    delta, vega = jitted(s0, sigma, cuda.to_device(z))
    _agree((delta.copy_to_host(), vega.copy_to_host()), s2s.jit(make(), backend="cpu")(s0, sigma, z))
    assert _launcher(jitted, (s0, sigma, z)).relaunches == 0
    make, args = CASES["while_grad"]
    got = s2s.jit(make(), backend="cuda")(cuda.to_device(args()[0]))
    _agree(got.copy_to_host(), s2s.jit(make(), backend="cpu")(*args()))


def test_tape_passed_down_to_a_helper():
    """A helper's range loop: the kernel passes the thread's column of the helper's tapes down
    through the entry; greeks equal the cpu backend's and the inlined path_payoff's."""
    make, args = CASES["helper_tape_greeks"]
    jitted = s2s.jit(make(), backend="cuda")
    got = jitted(*args())
    _agree(got, s2s.jit(make(), backend="cpu")(*args()))
    _agree(got, s2s.jit(CASES["greeks"][0](), backend="cuda")(*args()))
    source = _launcher(jitted, args()).source
    assert "def walk_vjp_wrt_s_sigma(s, sigma, z, out_bar, _t16_tape, s_tape, tape_status):" in source
    assert "def walk_payoff_vjp(s0, sigma, z, out_bar, _t16_tape, s_tape, tape_status):" in source
    assert re.search(r"walk_vjp_wrt_s_sigma\(\s*s0, sigma, z, _t1_bar, _t16_tape, s_tape, tape_status\s*\)", source)


def test_tapes_kept_within_the_memory_limit(monkeypatch):
    """With room for the tapes of only 128 threads (one block), the grid-stride loop runs the
    256 paths in two rounds on the same columns: the results do not change."""
    from s2s.backends import cuda_tapes

    make, args = CASES["greeks"]
    s0, sigma, z = args()
    want = s2s.jit(make(), backend="cpu")(s0, sigma, z)
    per_thread = 2 * z.shape[1] * 8  # two float64 tapes of z.shape[1] slots
    monkeypatch.setattr(cuda_tapes, "TAPE_MEMORY", per_thread * 128)
    assert cuda_tapes.blocks(len(z), [z.shape[1]] * 2, [8, 8], 128, 65536) == 1
    jitted = s2s.jit(make(), backend="cuda")
    _agree(jitted(s0, sigma, z), want)
    assert _launcher(jitted, (s0, sigma, z)).blocks == 1
    monkeypatch.setattr(cuda_tapes, "TAPE_MEMORY", 1 << 30)
    # 10^6 paths x 64 steps x float64: 512 MB a tape; 1 GiB holds two such tapes for a thread per
    # path (7813 blocks), four for half as many threads, each of which runs two paths or so
    assert cuda_tapes.blocks(10**6, [64, 64], [8, 8], 128, 65536) == 7813
    assert cuda_tapes.blocks(10**6, [64] * 4, [8] * 4, 128, 65536) == 4096


def test_tapes_beyond_the_memory_limit_are_an_error_at_the_loop(monkeypatch):
    """Tapes that one block cannot hold within S2S_CUDA_TAPE_MEMORY: an S2SError at the user's
    statement whose values are taped, not a CUDA out-of-memory error."""
    from s2s.backends import cuda_tapes

    monkeypatch.setattr(cuda_tapes, "TAPE_MEMORY", 4 * 8 * 128 * 8)  # room for 8 steps of four tapes
    make, args = CASES["damped_grad"]
    with pytest.raises(s2s.S2SError, match="S2S_CUDA_TAPE_MEMORY") as info:
        s2s.jit(make(), backend="cuda")(*args())
    assert info.value.origin.line == _line_of("y = np.sin(y) * np.power(np.abs(y), 0.5) + 0.1 * t")


@pytest.mark.parametrize("name, statement", [("doubling_grad", "while x < 2.0:"), ("for_while_grad", "while y > 0.5:")])
def test_while_loop_tapes_beyond_the_memory_limit_are_an_error_at_the_while(monkeypatch, name, statement):
    """A while loop's tape is made at the top of its function, above every origin comment of
    it: the error named no user statement (or, in a later function, another function's). It
    names the user's `while` statement now, with its file, line and column."""
    from s2s.backends import cuda_tapes

    monkeypatch.setattr(cuda_tapes, "TAPE_MEMORY", 8 * 128 * 3)  # room for 3 float64 values a thread
    make, args = CASES[name]
    with pytest.raises(s2s.S2SError, match=r"cuda_cases.py:\d+:\d+: backend='cuda': an example needs \d+ values "
                                           r"on a tape .*raise S2S_CUDA_TAPE_MEMORY") as info:
        s2s.jit(make(), backend="cuda")(*args())
    assert info.value.origin.line == _line_of(statement) and info.value.origin.text == statement
    assert info.value.origin.column == 1 + len(_text_of(statement)) - len(_text_of(statement).lstrip())


def _text_of(statement: str) -> str:
    with open(cuda_cases.__file__, encoding="utf-8") as handle:
        return handle.read().splitlines()[_line_of(statement) - 1]


def _line_of(statement: str) -> int:
    with open(cuda_cases.__file__, encoding="utf-8") as handle:
        return next(k for k, line in enumerate(handle.read().splitlines(), 1) if line.strip() == statement)


def test_kernel_text_of_tapes():
    """codegen/cuda.py's rewriting of a range loop's tape and a while loop's, before and after."""
    from s2s.codegen import cuda as codegen

    before = (
        "def f(x, n, out_bar):\n"
        "    x_tape_len = 0\n"
        "    y_tape = []\n"
        "    for i in range(n):\n"
        "        if x_tape_len == 0:\n"
        "            x_tape = runtime.new_tape(x, n)\n"
        "        x_tape[x_tape_len] = x\n"
        "        x_tape_len += 1\n"
        "        x = math.sin(x)\n"
        "    while x > 0.1:\n"
        "        y_tape.append(x)\n"
        "        x = x * 0.5\n"
        "    x = y_tape.pop()\n"
        "    x_tape_len -= 1\n"
        "    return x_tape[x_tape_len] + x\n"
    )
    after = (
        "@cuda.jit(device=True)\n"
        "def f(x, n, out_bar, x_tape, y_tape, tape_status):\n"
        "    x_tape_len = 0\n"
        "    y_tape_len = 0  # the values on y_tape, this thread's column of a global tape\n"
        "    for i in range(n):\n"
        "        if x_tape_len == 0:\n"
        "            if n > x_tape.shape[0]:\n"
        "                cuda.atomic.max(tape_status, 0, n)\n"
        "        x_tape[max(0, min(x_tape_len, x_tape.shape[0] - 1))] = x\n"
        "        x_tape_len += 1\n"
        "        x = math.sin(x)\n"
        "    while x > 0.1:\n"
        "        if y_tape_len >= y_tape.shape[0]:\n"
        "            cuda.atomic.max(tape_status, 1, y_tape_len + 1)\n"
        "        y_tape[max(0, min(y_tape_len, y_tape.shape[0] - 1))] = x\n"
        "        y_tape_len += 1\n"
        "        x = x * 0.5\n"
        "    y_tape_len -= 1\n"
        "    x = y_tape[max(0, min(y_tape_len, y_tape.shape[0] - 1))]\n"
        "    x_tape_len -= 1\n"
        "    return x_tape[max(0, min(x_tape_len, x_tape.shape[0] - 1))] + x\n"
    )
    found = codegen.tape_lines(before)
    assert found == {6: ("f", "x_tape", "range", "n"), 3: ("f", "y_tape", "while", "")}
    tapes = [codegen.Tape("f", "x_tape", 6, 4, "float64", "range", "n"),
             codegen.Tape("f", "y_tape", 3, 1, "float64", "while")]
    rewritten = codegen.device_functions(before, "f", tapes, lambda line: None)
    assert rewritten.source == after
    assert tapes[0].from_shapes  # n: a parameter the function never assigns, known on the host
    codegen.device_functions(before, "f", tapes, lambda line: None, unknown={"n"})
    assert not tapes[0].from_shapes  # n: a number of each example's own
