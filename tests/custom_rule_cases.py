"""Functions with s2s.custom_vjp rules, for tests/test_custom_rules.py (s2s reads their source,
and the refusal tests name their lines by the statements' text)."""

import numpy as np

import s2s


@s2s.custom_vjp
def clip_gradient(x, lo, hi):  # the identity, whose gradient is clipped (JAX's documentation example)
    return x


def clip_gradient_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_gradient_bwd(residuals, g):
    lo, hi = residuals
    return (np.clip(g, lo, hi), 0.0, 0.0)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def clipped_loss(x):
    return np.sum(clip_gradient(3.0 * x, -1.0, 1.0) ** 2)


@s2s.custom_vjp
def log1pexp(x):  # log(1 + e^x): its body's derivative is inf / inf = nan for large x
    return np.log1p(np.exp(x))


def log1pexp_fwd(x):
    return log1pexp(x), x  # (the rule may call the function itself)


def log1pexp_bwd(x, g):
    return (g * (1.0 - 1.0 / (1.0 + np.exp(x))),)


log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)


def softplus_loss(w, x):
    return np.sum(log1pexp(x * w))


def softplus_chain(s, z):  # a loop calling the custom function: its rule runs at each step
    for t in range(z.shape[0]):
        s = log1pexp(s * z[t]) - 0.5
    return s


@s2s.custom_vjp
def scaled_sine(x, a):  # a rule with a branch in bwd, each path returning its tuple
    return np.sin(x) * a


def scaled_sine_fwd(x, a):
    return np.sin(x) * a, (np.cos(x), np.sin(x), a)


def scaled_sine_bwd(residuals, g):
    cos_x, sin_x, a = residuals
    if a > 0.0:
        return (g * a * cos_x, np.sum(g * sin_x))
    return (a * cos_x * g, np.sum(sin_x * g))


scaled_sine.defvjp(scaled_sine_fwd, scaled_sine_bwd)


def sine_energy(x, a):
    return np.sum(scaled_sine(x, a) ** 2)


# ---- rules s2s refuses ----------------------------------------------------------------------


@s2s.custom_vjp
def two_arguments(x, a):
    return x * a


def two_arguments_fwd(x, a):
    return x * a, (x, a)


def two_arguments_bwd(residuals, g):
    x, a = residuals
    return g * a  # one cotangent for two arguments


two_arguments.defvjp(two_arguments_fwd, two_arguments_bwd)


def calls_two_arguments(x):
    return np.sum(two_arguments(x, 2.0))


@s2s.custom_vjp
def unsummed(x, a):
    return x * a


def unsummed_fwd(x, a):
    return x * a, (x, a)


def unsummed_bwd(residuals, g):
    x, a = residuals
    return (g * a, g * x)  # a's cotangent not summed over x's axis: the shape of x, not of a


unsummed.defvjp(unsummed_fwd, unsummed_bwd)


def calls_unsummed(x, a):
    return np.sum(unsummed(x, a) ** 2)


@s2s.custom_vjp
def no_rule(x):
    return x * 2.0


def calls_no_rule(x):
    return np.sum(no_rule(x))


# ---- s2s.checkpoint ---------------------------------------------------------------------------


@s2s.checkpoint
def damped_step(s, z):
    u = np.tanh(s * z)
    return s + 0.1 * u * u


@s2s.checkpoint(policy=None, prevent_cse=False)
def other_step(s, z):
    return s * np.cos(z)


def checkpointed_path(s, z):
    for t in range(z.shape[0]):
        s = damped_step(s, z[t])
        s = other_step(s, z[t])
    return np.sum(s * s)


# ---- s2s.custom_jvp ---------------------------------------------------------------------------


@s2s.custom_jvp
def sine_scaled(x, y):
    return np.sin(x) * y


@sine_scaled.defjvp
def sine_scaled_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    primal_out = sine_scaled(x, y)  # (the rule may call the function itself)
    return primal_out, np.cos(x) * x_dot * y + np.sin(x) * y_dot


def sine_scaled_energy(x, y):
    return np.sum(sine_scaled(x, y) ** 2)


@s2s.custom_jvp
def softplus(x):  # log(1 + e^x), with a tangent that stays finite for large x
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    x, = primals  # JAX's one-element unpacking
    x_dot, = tangents
    return softplus(x), x_dot * (1.0 - 1.0 / (1.0 + np.exp(x)))


def softplus_sum(w):
    return np.sum(softplus(w))


def softplus_steps(s, z):
    for t in range(z.shape[0]):
        s = softplus(s * z[t]) - 0.5
    return s


@s2s.custom_jvp
def straight_through_floor(x):  # floor, whose rule passes the tangent through (a linear rule)
    return np.floor(x)


@straight_through_floor.defjvp
def straight_through_floor_jvp(primals, tangents):
    (x,) = primals
    (x_dot,) = tangents
    return np.floor(x), x_dot


def floored_energy(x):
    return np.sum(straight_through_floor(3.0 * x) ** 2)


@s2s.custom_jvp
def summed_tangent(x):  # a rule whose tangent has the wrong shape (a number for an array)
    return x * 2.0


@summed_tangent.defjvp
def summed_tangent_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return x * 2.0, np.sum(x_dot) * 2.0


def calls_summed_tangent(x):
    return np.sum(summed_tangent(x))


@s2s.custom_jvp
def jvp_without_rule(x):
    return x * 2.0


def calls_jvp_without_rule(x):
    return np.sum(jvp_without_rule(x))


# ---- rules whose value differs from the body's, None cotangents, jvp rules with two returns -----


@s2s.custom_vjp
def stable_softplus(x):  # the body overflows at 800; fwd's value is the stable form
    return np.log1p(np.exp(x))


def stable_softplus_fwd(x):
    return np.logaddexp(0.0, x), x


def stable_softplus_bwd(x, g):
    return (g / (1.0 + np.exp(-x)),)


stable_softplus.defvjp(stable_softplus_fwd, stable_softplus_bwd)


def scaled_stable_softplus(x, c):
    return c * stable_softplus(x)


@s2s.custom_jvp
def stable_softplus_jvp(x):
    return np.log1p(np.exp(x))


@stable_softplus_jvp.defjvp
def stable_softplus_jvp_rule(primals, tangents):
    x, = primals
    x_dot, = tangents
    return np.logaddexp(0.0, x), x_dot / (1.0 + np.exp(-x))


def scaled_stable_softplus_jvp(x, c):
    return c * stable_softplus_jvp(x)


@s2s.custom_vjp
def times(x, a):
    return x * a


def times_fwd(x, a):
    return x * a, a


def times_bwd(a, g):
    return (g * a, None)  # None: a zero cotangent, as JAX allows


times.defvjp(times_fwd, times_bwd)


def summed_times(x, a):
    return np.sum(times(x, a))


@s2s.custom_jvp
def branchy_times(x, a):
    return x * a


@branchy_times.defjvp
def branchy_times_jvp(primals, tangents):  # two returns: their adjoints must have one type under Numba
    x, a = primals
    x_dot, a_dot = tangents
    if a > 0.5:
        return x * a, a * x_dot + x * a_dot
    return x * a, a * x_dot + x * a_dot


def summed_branchy_times(x, a):
    return np.sum(branchy_times(x, a))


@s2s.custom_jvp
def triple(x):
    return x * 2.0


@triple.defjvp
def triple_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return x * 2.0, 2.0 * x_dot, 0.0  # three items: not a (value, tangent) pair


def squared_triple(x):
    return np.sum(triple(x) ** 2)
