"""Writes random_jax.json: JAX's outputs that tests/test_random.py compares s2s.random against.

JAX is a reference only, never a dependency of s2s or its tests. Regenerate with
    /tmp/jaxenv/bin/python tests/data/make_random_jax.py        (JAX 0.10.2, CPU)
x64 mode is on, because s2s follows NumPy (float64 by default); float32 results are asked for
with dtype=jnp.float32 and are JAX's default-mode numbers.
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
assert jax.config.jax_threefry_partitionable


def ints(a):
    return np.asarray(a).astype(np.int64 if np.asarray(a).dtype.kind == "i" else np.uint64).tolist()


def floats(a):
    return [float(v) for v in np.asarray(a, np.float64).ravel()]


k0, k42 = jax.random.PRNGKey(0), jax.random.PRNGKey(42)
big = jax.random.PRNGKey(2**40 + 5)
out = {
    "jax_version": jax.__version__,
    "PRNGKey": {str(s): ints(jax.random.PRNGKey(s)) for s in (0, 1, 42, 2**32 - 1, 2**40 + 5, -1, -(2**40))},
    "split_0": ints(jax.random.split(k0)),
    "split_42_3": ints(jax.random.split(k42, 3)),
    "split_big_2x3": ints(jax.random.split(big, (2, 3))),
    "fold_in_0_7": ints(jax.random.fold_in(k0, 7)),
    "fold_in_42_max": ints(jax.random.fold_in(k42, 2**32 - 1)),
    "bits_u32_0_5": ints(jax.random.bits(k0, (5,), jnp.uint32)),
    "bits_u32_42_2x3": ints(jax.random.bits(k42, (2, 3), jnp.uint32)),
    "bits_u32_scalar": ints(jax.random.bits(k42, (), jnp.uint32)),
    "bits_u8_42_7": ints(jax.random.bits(k42, (7,), jnp.uint8)),
    "bits_u16_42_7": ints(jax.random.bits(k42, (7,), jnp.uint16)),
    "bits_u64_42_4": ints(jax.random.bits(k42, (4,), jnp.uint64)),
    "uniform_f32_0_7": floats(jax.random.uniform(k0, (7,), jnp.float32)),
    "uniform_f64_0_7": floats(jax.random.uniform(k0, (7,), jnp.float64)),
    "uniform_f32_42_2x3_m2_3": floats(jax.random.uniform(k42, (2, 3), jnp.float32, -2.0, 3.0)),
    "uniform_f64_42_2x3_m2_3": floats(jax.random.uniform(k42, (2, 3), jnp.float64, -2.0, 3.0)),
    "uniform_f64_scalar": floats(jax.random.uniform(big, ())),
    "normal_f32_0_1000": floats(jax.random.normal(k0, (1000,), jnp.float32)),
    "normal_f64_0_1000": floats(jax.random.normal(k0, (1000,), jnp.float64)),
    "normal_f64_42_2x3": floats(jax.random.normal(k42, (2, 3))),
    "randint_i64_42_10_m5_17": ints(jax.random.randint(k42, (10,), -5, 17)),
    "randint_i32_0_10_0_1000": ints(jax.random.randint(k0, (10,), 0, 1000, jnp.int32)),
    "randint_i64_0_6_0_2p40": ints(jax.random.randint(k0, (6,), 0, 2**40)),
    "randint_i64_42_4_full": ints(jax.random.randint(k42, (4,), -(2**63), 2**63 - 1)),
    "randint_i32_42_4_full": ints(jax.random.randint(k42, (4,), -(2**31), 2**31 - 1, jnp.int32)),
    "randint_i32_42_4_above": ints(jax.random.randint(k42, (4,), 0, 2**31, jnp.int32)),
    "randint_i64_42_3_empty": ints(jax.random.randint(k42, (3,), 5, 5)),
    "bernoulli_f64_42_10_03": ints(jax.random.bernoulli(k42, 0.3, (10,))),
    "bernoulli_f32_42_10_07": ints(jax.random.bernoulli(k42, jnp.float32(0.7), (10,))),
    "exponential_f64_42_6": floats(jax.random.exponential(k42, (6,))),
    "exponential_f32_42_6": floats(jax.random.exponential(k42, (6,), jnp.float32)),
    "truncated_normal_f64_42_6": floats(jax.random.truncated_normal(k42, -1.0, 2.0, (6,))),
    "truncated_normal_f32_42_6": floats(jax.random.truncated_normal(k42, -1.0, 2.0, (6,), jnp.float32)),
    "permutation_42_10": ints(jax.random.permutation(k42, 10)),
    "permutation_0_2000_head": ints(jax.random.permutation(k0, 2000)[:20]),
    "permutation_42_rows": ints(jax.random.permutation(k42, jnp.arange(12).reshape(4, 3))),
    "categorical_42_logits": floats(jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4]))),
    "categorical_42_12": ints(jax.random.categorical(k42, jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4])), shape=(12,))),
    "categorical_0_rows": ints(jax.random.categorical(k0, jnp.log(jnp.array([[0.5, 0.5, 0.0 + 1e-3],
                                                                              [0.1, 0.8, 0.1]])), axis=-1)),
}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "random_jax.json"), "w") as handle:
    handle.write("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in out.items()) + "\n}\n")
