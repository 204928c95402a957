"""Per-example programs for tests/test_cuda.py, and the PTX check it runs in a subprocess.

The functions live in a real file (s2s reads their source); their line numbers are asserted
by the refusal tests (REFUSED below names each refused statement by its text).

Run as a script (`python tests/cuda_cases.py`, in a process without NUMBA_ENABLE_CUDASIM=1)
it compiles the kernel of every case of CASES to PTX for sm_90 and prints a JSON object
{case: "ok" | the error}: Numba's simulator runs code the real compiler rejects, so the
suite compiles every kernel it simulates.
"""

from __future__ import annotations

import json
import sys
import traceback

import numpy as np

import s2s
from s2s import random


def path_payoff(s0, sigma, z):  # one Monte Carlo path of a call struck at 1 (the example)
    s = s0
    for t in range(z.shape[0]):
        s = s * np.exp(-0.5 * sigma * sigma / z.shape[0] + sigma * np.sqrt(1.0 / z.shape[0]) * z[t])
    return max(s - 1.0, 0.0)


def gbm_step(s, sigma, x, n):  # a helper: its reverse mode is a device function of its own
    return s * np.exp(-0.5 * sigma * sigma / n + sigma * np.sqrt(1.0 / n) * x)


def payoff_and_terminal(s0, sigma, z):  # grad with has_aux: the terminal price rides along
    s = s0
    n = z.shape[0]
    for t in range(n):
        s = gbm_step(s, sigma, z[t], n)
    return max(s - 1.0, 0.0), s


def knock_out(s0, sigma, z):  # a branch per step: an up-and-out call
    s = s0
    alive = 1.0
    for t in range(z.shape[0]):
        s = s * np.exp(sigma * z[t] / 8.0)
        if s > 1.3:
            alive = 0.0
    return alive * max(s - 1.0, 0.0)


def damped(x, k):  # the trip count is the example's own: tapes grow when a later example needs more
    y = x
    for t in range(k):
        y = np.sin(y) * np.power(np.abs(y), 0.5) + 0.1 * t
    return y * y


def casts(x, k):  # NumPy casts, np.maximum, np.power and np.abs of numbers (and their derivatives)
    y = np.float64(k) * x + np.float32(0.5)
    return max(y, np.maximum(x, 0.0)) + np.power(np.abs(x), 1.5)


def moments(w, x):  # a whole (unmapped) weight vector, two outputs per example
    a = 0.0
    b = 0.0
    for i in range(x.shape[0]):
        u = np.tanh(w[i] * x[i])
        a = a + u
        b = np.maximum(b, u * u)
    return a, np.log1p(b) + np.pi


def rosen(x):  # a per-example vector, differentiated with value_and_grad
    total = 0.0
    for i in range(x.shape[0] - 1):
        total = total + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


def cumulative(w, x):  # a vector per example, made with np.zeros (a local array in the kernel)
    y = np.zeros(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + np.tanh(w * x[i])
        y[i] = acc
    return y


def logistic_loss(w, x, y):  # per-example gradients with respect to a whole weight vector
    s = 0.0
    for i in range(x.shape[0]):
        s = s + w[i] * x[i]
    p = 1.0 / (1.0 + np.exp(-s))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def smoothed(w, x):  # a local array the gradient reads back
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = np.sin(w * x[i])
    total = 0.0
    for i in range(x.shape[0]):
        total = total + y[i] * y[i]
    return total


def draws(key, mu, sigma):  # random numbers per example, from a batch of keys
    z = random.normal(key)
    u = random.uniform(key, minval=-1.0, maxval=3.0)
    return mu + sigma * z + u, random.uniform(key)


def draws32(key):  # float32 draws (the cpu backend cannot compile them: the test compares with NumPy)
    return random.uniform(key, (), np.float32), random.normal(key, (), np.float32)


PATH_STEPS = 16  # a module constant: the kernel module has it too


def random_path(key, s0, sigma):  # a Monte Carlo path with its own normal draws, one per step
    s = s0
    for t in range(PATH_STEPS):
        k = random.fold_in(key, t)
        s = s * np.exp(-0.5 * sigma * sigma / PATH_STEPS + sigma * 0.25 * random.normal(k))
    return max(s - 1.0, 0.0)


def drawn_path(key, s0, sigma):  # the path's normals as one draw of a shape (a local array)
    z = random.normal(key, (PATH_STEPS,))
    u = random.uniform(key, (2, 3), np.float32, -1.0, 1.0)
    s = s0
    for t in range(PATH_STEPS):
        s = s * np.exp(-0.5 * sigma * sigma / PATH_STEPS + sigma * 0.25 * z[t])
    return max(s - 1.0, 0.0) + u[1, 2]


def split_draws(key):
    keys = random.split(key, 3)
    return random.uniform(keys[0]) + random.normal(keys[2])


def unpacked_keys(key, s):  # JAX's idiom: a key split into two names, the key carried by a loop
    k1, k2 = random.split(key)
    total = s * random.normal(k1) + random.uniform(k2)
    for t in range(4):
        key, sub = random.split(key)
        total = total + s * random.normal(sub)
    return total


def fixed_reads(p):  # an example's array read at fixed indices: its adjoint adds into one element each
    return p[0] * p[1] + p[2] ** 2


def label_read(p, k):  # read at an integer argument of the example (a label)
    return p[k] * 2.0 + p[0]


def euler_state(k):  # a fixed-size state updated in place from itself (its shape is taped for the reverse)
    s = np.zeros(2)
    s[0] = 1.0
    for t in range(50):
        s[0] = s[0] + 0.02 * s[1]
        s[1] = s[1] - 0.02 * k * s[0]
    return s[0]


def scaled_copy(s, z):  # an array made like an argument, written with values that carry derivatives
    w = np.zeros_like(z)  # (its dtype is the argument's: run time checks it, on the host)
    total = 0.0
    for t in range(z.shape[0]):
        w[t] = s * z[t]
        total = total + w[t] * w[t]
    return total


def growth(s0, sigma, z):
    s = s0
    for t in range(z.shape[0]):
        s = s * np.exp(sigma * z[t])
    return s


def growth_tangent(s0, sigma, z):  # forward mode inside vmap: s2s.jvp in the per-example code
    return s2s.jvp(growth, (s0, sigma, z), (0.0, 1.0, np.zeros_like(z)))


DRIFT = 0.01  # a module constant: its tangent is zero, so forward mode writes runtime.broadcast_like


def drifted(s0, sigma, z):
    s = s0
    for t in range(z.shape[0]):
        s = s * np.exp(sigma * z[t]) + DRIFT
    return s


def drifted_tangent(s0, sigma, z):  # forward mode along sigma through a sum with a constant
    return s2s.jvp(drifted, (s0, sigma, z), (0.0, 1.0, np.zeros_like(z)))


def drifted_slope(s0, sigma, z):  # JAX's jvp of a closure: the lambda's z gets a zero tangent
    return s2s.jvp(lambda v: drifted(s0, v, z), (sigma,), (1.0,))[1]


def floored(s0, sigma, z):
    """np.fmax in a loop, where z holds NaNs: the floor wins there, with its zero tangent."""
    s = s0
    for t in range(z.shape[0]):
        s = np.fmax(s * np.exp(sigma * z[t]), 0.5 * s0)
    return s


def floored_tangent(s0, sigma, z):  # forward mode through np.fmax: runtime.weighted in the kernel
    return s2s.jvp(floored, (s0, sigma, z), (1.0, 1.0, np.zeros_like(z)))


def growth_tangent_inline(s0, sigma, z):  # the same with an array made inside the call
    y, y_dot = s2s.jvp(growth, (s0, sigma, z), (1.0, 0.0, z * 0.0))
    return y_dot


def halves(x):  # a while loop under grad: its tape is a list that grows, in a kernel a global one
    while x > 1.0:
        x = x * 0.5 + 0.1 * np.sin(x)
    return x


def doubling(x, r):  # a while loop whose trip count is the example's own, two values taped per trip
    t = 0.0
    while x < 2.0:
        x = x * (1.0 + r) + 0.01 * np.sin(x)
        t = t + np.sqrt(x)
    return t


def settle(x):  # a helper with a while loop: its tape is passed down by its caller
    while x > 1.0:
        x = x * 0.5 + 0.1 * np.sin(x)
    return x


def settle_sum(x, k):  # the helper's while loop inside a range loop whose trip count is the example's own
    total = 0.0
    for i in range(k):
        total = total + settle(x + i) * np.cos(x * i)
    return total


def for_while(x, k):  # a while loop in a range loop: its trip counts go on a range loop's tape
    total = 0.0
    for i in range(k):
        y = x + 0.5 * i
        while y > 0.5:
            y = y * 0.6 + 0.05 * np.sin(y)
        total = total + y * y
    return total


def while_for(x, z):  # a range loop in a while loop: its values go on the while loop's tape
    s = 0.0
    while x < 3.0:
        for t in range(z.shape[0]):
            x = x + 0.1 * np.tanh(x * z[t])
        s = s + x
        x = x + 0.2
    return s


def nudge(y, t):  # the helper skip_steps calls in its loop
    return np.sin(y) * 0.9 + 0.05 * t


def skip_steps(x, k):  # a `continue` in a range loop whose trip count is the example's own (an int)
    y = x
    for t in range(k):
        y = nudge(y, t) * y + 0.3
        if t % 2 == 0:
            continue
        y = y * 0.9
    return y * y


def skip_steps_of_data(x):  # the same, with the trip count computed from the data
    y = x
    for t in range(int(x * 5.0)):
        y = nudge(y, t) * y + 0.3
        if t % 2 == 0:
            continue
        y = y * 0.9
    return y * y


def walk(s, sigma, z):  # a helper with a range loop over a shape: its tape is known before launch
    for t in range(z.shape[0]):
        s = s * np.exp(-0.5 * sigma * sigma / z.shape[0] + sigma * np.sqrt(1.0 / z.shape[0]) * z[t])
    return s


def walk_payoff(s0, sigma, z):
    return max(walk(s0, sigma, z) - 1.0, 0.0)


# ---- refused: (function, in_axes, the refused statement, what the message says) --------------

def uses_solve(a, b):
    x = np.linalg.solve(a, b)
    return x[0]


def allocates(x):  # an array of a fixed shape: a local array in the kernel
    y = np.zeros(3)
    y[0] = x
    return y[0] * 2.0


def reduces(z):
    total = np.sum(z * z)
    return total


def matvec(a, z):
    y = a @ z
    return y[0]


def guarded_reciprocal(t):
    try:
        y = 1.0 / t
    except ZeroDivisionError:
        y = t
    return y * y


def per_example_array(z):
    return z[0] * z


def sized_by_data(x, k):  # an array whose size is the example's own: the kernel's has one shape
    y = np.zeros(k)
    for i in range(k):
        y[i] = x * i
    return y[0]


def make_buffer(n):  # a helper that returns an array it made: inlined into its caller in the kernel
    y = np.zeros(n)
    return y


def uses_buffer(z):
    y = make_buffer(z.shape[0])
    for i in range(z.shape[0]):
        y[i] = z[i] * 2.0
    return y[1]


def raw_bits(key):  # (the draws have kernel forms: tests/test_cuda_random.py; random.bits has none yet)
    return random.bits(key)


def inner(w, x):  # a helper of a vector: its reverse mode returns w's adjoint, an array it made
    s = 0.0
    for i in range(x.shape[0]):
        s = s + w[i] * x[i]
    return s


def squared_error(w, x, y):
    return (inner(w, x) - y) ** 2


def draws_a_vector(key):  # a draw of a shape inside an expression: a statement of its own after lowering
    return random.normal(key, (4,))[3]


def rarely_draws_a_vector(key, x):  # on a branch the first example does not take: its shape is not known
    if x > 100.0:
        z = random.normal(key, (4,))
        return z[0]
    return x


def rosen_pair(pair):
    return rosen(pair[0]) + rosen(pair[1])


def scaled(z):  # array arithmetic: the simulator would run it, numba-cuda's compiler refuses it
    y = z * 2.0
    return y[0]


def rarely_scaled(z):  # the same, on a branch the first example does not take
    if z[0] > 100.0:
        y = z * 2.0
        return y[0]
    return z[0]


def rarely_allocates(x):  # np.zeros on a branch the first example does not take: its shape is not known
    r = x * 2.0
    if x > 1.0:
        w = np.zeros(3)
        w[0] = x
        r = w[0] * 3.0
    return r


# refused by numba-cuda's compiler (in the PTX check): its message names no line of the kernel
# module, so the error names the user's function (the line of its def)
def zero_or_excess(x):  # an int on one branch, a float on the other: numba-cuda returns floats
    if x[0] < 2.0:
        return 0
    return x[0] - 2.0


# name: (function, the line the refusal names, what it says)
COMPILE_REFUSED = {"array_arithmetic_untaken": (rarely_scaled, "def rarely_scaled(z):  # the same, on a branch "
                                                               "the first example does not take",
                                                "kernels cannot allocate"),
                   "int_output_float_later": (zero_or_excess, "def zero_or_excess(x):  # an int on one branch, a "
                                                              "float on the other: numba-cuda returns floats",
                                              "wider than the first example's int64")}


@s2s.custom_vjp
def stable_softplus(x):  # an s2s.custom_vjp: its fwd and bwd are device functions of the kernel
    return np.log1p(np.exp(x))


def stable_softplus_fwd(x):
    return max(x, 0.0) + np.log1p(np.exp(-abs(x))), x


def stable_softplus_bwd(x, g):
    return (g / (1.0 + np.exp(-x)),)


stable_softplus.defvjp(stable_softplus_fwd, stable_softplus_bwd)


@s2s.custom_jvp
def smooth_abs(x):  # an s2s.custom_jvp: reverse mode runs its rule's transpose in the kernel
    return np.sqrt(x * x + 0.01)


@smooth_abs.defjvp
def smooth_abs_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    value = smooth_abs(x)
    return value, x / value * x_dot


def softplus_path(s0, sigma, z):  # a path through both custom functions
    s = s0
    for t in range(z.shape[0]):
        s = stable_softplus(s + sigma * z[t]) - 0.5 * smooth_abs(s)
    return s


def _rng():
    return np.random.default_rng(7)


def path_args(n=256, steps=32, dtype=np.float64):
    z = _rng().standard_normal((n, steps)).astype(dtype)
    return dtype(1.0), dtype(0.2), z


def floored_args():
    s0, sigma, z = path_args(n=64, steps=8)
    z[::3, 2] = np.nan  # the product is NaN at step 2 of every third path: the floor wins there
    return s0, sigma, z


def damped_args():
    k = np.arange(3, 3 + 24) % 11 + 2  # the first example runs 5 steps, others up to 12
    return np.linspace(0.2, 1.4, 24), k


def moments_args():
    return np.linspace(-1.0, 1.0, 5), _rng().standard_normal((30, 5))


def logistic_args():
    rng = _rng()
    return rng.standard_normal(5), rng.standard_normal((50, 5)), (rng.random(50) > 0.5).astype(np.float64)


def keys_args(n=64):
    return random.split(random.PRNGKey(3), n), 0.5, 2.0


def rosen_args():
    return (_rng().standard_normal((40, 4)),)


def while_args():  # halves runs 1 to 6 trips: the first example the fewest (the probe sees 1)
    return (np.linspace(2.0, 50.0, 40),)


def doubling_args():
    return np.linspace(1.9, 0.2, 30), np.linspace(0.02, 0.2, 30)


def for_while_args():  # (x = 0.5 + i/2 would sit on the while loop's test: no derivative there)
    return np.linspace(0.31, 2.53, 12), np.arange(12) % 4 + 1


def while_for_args():
    return np.linspace(2.0, 0.1, 10), np.abs(_rng().standard_normal((10, 3)))  # (the fewest trips first)


def skip_args():  # 2 to 8 trips, the first example the fewest: the first launch overflows
    return np.linspace(0.2, 1.4, 12), np.arange(12) % 7 + 2


def skip_data_args():  # int(5 x): 1 to 8 trips, the first example the fewest (5 x never near an integer)
    return (np.linspace(0.31, 1.71, 12),)


def settle_args():
    return np.linspace(0.3, 4.0, 20), np.arange(20) % 5 + 1


# name -> (the transformed function, before s2s.jit, and its arguments)
CASES = {
    "path_payoff": (lambda: s2s.vmap(path_payoff, in_axes=(None, None, 0)), path_args),
    "greeks": (lambda: s2s.vmap(s2s.grad(path_payoff, argnums=(0, 1)), in_axes=(None, None, 0)), path_args),
    "greeks_float32": (lambda: s2s.vmap(s2s.grad(path_payoff, argnums=(0, 1)), in_axes=(None, None, 0)),
                       lambda: path_args(dtype=np.float32)),
    "greeks_axis_1": (lambda: s2s.vmap(s2s.grad(path_payoff, argnums=(0, 1)), in_axes=(None, None, 1)),
                      lambda: path_args()[:2] + (np.ascontiguousarray(path_args()[2].T),)),
    "damped_grad": (lambda: s2s.vmap(s2s.grad(damped), in_axes=(0, 0)), damped_args),
    "helper_has_aux": (lambda: s2s.vmap(s2s.grad(payoff_and_terminal, argnums=(0, 1), has_aux=True),
                                        in_axes=(None, None, 0)), lambda: path_args(n=64)),
    "knock_out_value_and_grad": (lambda: s2s.vmap(s2s.value_and_grad(knock_out, argnums=1), in_axes=(None, None, 0)),
                                 lambda: path_args(n=64)),
    "casts_grad": (lambda: s2s.vmap(s2s.grad(casts)), lambda: (np.linspace(-1.0, 1.0, 9), np.arange(9) % 3)),
    "moments": (lambda: s2s.vmap(moments, in_axes=(None, 0)), moments_args),
    "rosen_grad": (lambda: s2s.vmap(s2s.grad(rosen)), rosen_args),
    "rosen_value_and_grad": (lambda: s2s.vmap(s2s.value_and_grad(rosen)), rosen_args),
    "cumulative": (lambda: s2s.vmap(cumulative, in_axes=(None, 0)), lambda: (0.7, rosen_args()[0])),
    "cumulative_out_axes_1": (lambda: s2s.vmap(cumulative, in_axes=(None, 0), out_axes=1),
                              lambda: (0.7, rosen_args()[0])),
    "logistic_per_example_grads": (lambda: s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0)), logistic_args),
    "smoothed_grad": (lambda: s2s.vmap(s2s.grad(smoothed, argnums=(0, 1)), in_axes=(None, 0)),
                      lambda: (0.7, rosen_args()[0])),
    "draws": (lambda: s2s.vmap(draws, in_axes=(0, None, None)), keys_args),
    "allocates_grad": (lambda: s2s.vmap(s2s.grad(allocates)), lambda: (np.linspace(0, 1, 4),)),
    "jvp_in_vmap": (lambda: s2s.vmap(growth_tangent, in_axes=(None, None, 0)), lambda: path_args(n=64)),
    "drifted_tangent": (lambda: s2s.vmap(drifted_tangent, in_axes=(None, None, 0)), lambda: path_args(n=64)),
    "floored_tangent": (lambda: s2s.vmap(floored_tangent, in_axes=(None, None, 0)), floored_args),
    "drifted_slope": (lambda: s2s.vmap(drifted_slope, in_axes=(None, None, 0)), lambda: path_args(n=64)),
    "fixed_reads_grad": (lambda: s2s.vmap(s2s.grad(fixed_reads)), lambda: (np.arange(12.0).reshape(4, 3) + 0.5,)),
    "label_read_grad": (lambda: s2s.vmap(s2s.grad(label_read)),
                        lambda: (np.arange(12.0).reshape(4, 3) + 0.5, np.array([0, 1, 2, 1]))),
    "scaled_copy_grad": (lambda: s2s.vmap(s2s.grad(scaled_copy), in_axes=(None, 0)),
                         lambda: (0.7, rosen_args()[0])),
    "euler_state_grad": (lambda: s2s.vmap(s2s.grad(euler_state)), lambda: (np.linspace(0.5, 1.5, 8),)),
    "draws32": (lambda: s2s.vmap(draws32), lambda: keys_args(256)[:1]),
    "random_path_greeks": (lambda: s2s.vmap(s2s.grad(random_path, argnums=(1, 2)), in_axes=(0, None, None)),
                           lambda: (keys_args()[0], 1.0, 0.2)),
    "drawn_path_greeks": (lambda: s2s.vmap(s2s.grad(drawn_path, argnums=(1, 2)), in_axes=(0, None, None)),
                          lambda: (keys_args()[0], 1.0, 0.2)),
    "helper_returns_array": (lambda: s2s.vmap(uses_buffer), lambda: (rosen_args()[0],)),
    "helper_array_adjoint": (lambda: s2s.vmap(s2s.grad(squared_error), in_axes=(None, 0, 0)), logistic_args),
    "draws_a_vector": (lambda: s2s.vmap(draws_a_vector), lambda: keys_args()[:1]),
    "split_draws": (lambda: s2s.vmap(split_draws), lambda: keys_args()[:1]),
    "unpacked_keys_grad": (lambda: s2s.vmap(s2s.grad(unpacked_keys, argnums=1), in_axes=(0, None)),
                           lambda: (keys_args()[0], 0.5)),
    "unpacked_keys": (lambda: s2s.vmap(unpacked_keys, in_axes=(0, None)), lambda: (keys_args()[0], 0.5)),
    "value_and_greeks": (lambda: s2s.vmap(s2s.value_and_grad(path_payoff, argnums=(0, 1)), in_axes=(None, None, 0)),
                         lambda: path_args(n=64)),
    "while_grad": (lambda: s2s.vmap(s2s.grad(halves)), while_args),
    "doubling_grad": (lambda: s2s.vmap(s2s.grad(doubling, argnums=(0, 1))), doubling_args),
    "helper_while_grad": (lambda: s2s.vmap(s2s.grad(settle_sum)), settle_args),
    "for_while_grad": (lambda: s2s.vmap(s2s.grad(for_while)), for_while_args),
    "while_for_grad": (lambda: s2s.vmap(s2s.grad(while_for)), while_for_args),
    "skip_steps_grad": (lambda: s2s.vmap(s2s.grad(skip_steps)), skip_args),
    "skip_steps_of_data_grad": (lambda: s2s.vmap(s2s.grad(skip_steps_of_data)), skip_data_args),
    "helper_tape_greeks": (lambda: s2s.vmap(s2s.grad(walk_payoff, argnums=(0, 1)), in_axes=(None, None, 0)),
                           lambda: path_args(n=64)),
    "custom_rules_grad": (lambda: s2s.vmap(s2s.grad(softplus_path, argnums=(0, 1)), in_axes=(None, None, 0)),
                          lambda: path_args(n=64, steps=8)),
}

REFUSED = {
    "linalg": (uses_solve, (None, 0), "x = np.linalg.solve(a, b)", "np.linalg.solve has no kernel form",
               lambda: (np.eye(3) + 0.1, _rng().standard_normal((4, 3)))),
    "reduction": (reduces, 0, "total = np.sum(z * z)", "np.sum reduces a whole array",
                  lambda: (_rng().standard_normal((4, 3)),)),
    "array_arithmetic": (scaled, 0, "y = z * 2.0", "it makes a new array", lambda: (np.ones((4, 3)),)),
    "random_bits": (raw_bits, 0, "return random.bits(key)", "random.bits has no kernel form yet",
                    lambda: (random.split(random.PRNGKey(0), 4),)),
    "zeros_untaken": (rarely_allocates, 0, "w = np.zeros(3)", "the first example did not run this one",
                      lambda: (np.array([0.5, 0.7, 1.5]),)),
    "random_shape_untaken": (rarely_draws_a_vector, 0, "z = random.normal(key, (4,))",
                             "random.normal of a shape makes an array",
                             lambda: (random.split(random.PRNGKey(0), 4), np.linspace(0.0, 1.0, 4))),
    "array_argument": (growth_tangent_inline, (None, None, 0),
                       "y, y_dot = s2s.jvp(growth, (s0, sigma, z), (1.0, 0.0, z * 0.0))", "it makes a new array",
                       lambda: path_args(n=4)),
    "matmul": (matvec, (None, 0), "y = a @ z", "@ (a matrix product) has no kernel form",
               lambda: (np.eye(3), _rng().standard_normal((4, 3)))),
    "try": (guarded_reciprocal, 0, "try:", "a try whose path the values decide", lambda: (np.array([1.0, 0.0]),)),
}


def ptx_report() -> dict:
    from s2s.backends import cuda as cuda_backend

    report = {}
    try:  # numba-cuda without its NVVM (the cu12 extra) cannot compile: the tests say so and skip
        import numba
        from numba import cuda
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception as exc:
        return {"__nvvm__": f"{type(exc).__name__}: {exc}"}
    for name, (make, args) in CASES.items():
        try:
            ptx = cuda_backend.compile_ptx(s2s.jit(make(), backend="cuda"), *args())
            report[name] = "ok" if ".visible .entry" in ptx else "no kernel entry in the PTX"
        except Exception:  # reported to the test, which fails with it
            report[name] = traceback.format_exc()
    try:  # the kernel of sum_examples (the deterministic total over examples)
        from numba import float32, float64

        from s2s.backends import cuda_reduce

        for t in (float64, float32):
            ptx, _ = cuda.compile_ptx(cuda_reduce.chunk_sums.py_func, (t[:, :], t[:, ::1], numba.int64), cc=(9, 0))
        report["__sum_examples__"] = "ok" if ".visible .entry" in ptx else "no kernel entry in the PTX"
    except Exception:
        report["__sum_examples__"] = traceback.format_exc()
    for name, (fun, statement, _) in COMPILE_REFUSED.items():
        try:
            cuda_backend.compile_ptx(s2s.jit(s2s.vmap(fun), backend="cuda"), np.ones((4, 3)))
            report[name] = "compiled"
        except s2s.S2SError as exc:
            report[name] = {"line": exc.origin.line if exc.origin else None, "message": str(exc)}
        except Exception:
            report[name] = traceback.format_exc()
    return report


if __name__ == "__main__":
    sys.stdout.write("S2S-PTX " + json.dumps(ptx_report()) + "\n")
