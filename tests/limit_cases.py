"""One program per entry of s2s/limits.py: what s2s.jit refuses today, for tests/test_jit_parity.py
(which checks that each is refused at its line, under its limit, and runs on the python backend).
A known gap that is fixed shows there as a program that compiles: take it off the list, and keep its
program here, where the sweep holds it to agree (gather_and_slice, fancy_augmented_write, none_argument,
energy's per-example Hessians, the products of two dtypes and with a number, np.dot beyond two
dimensions, a transposed reshape, the variance of a list, stacked eigh and svd, bernoulli of an array
of probabilities)."""

import numpy as np

from s2s import random

GENERATOR = np.random.default_rng(5)


def unknown_to_numba(x):
    return np.sum(np.fix(x * 3.0) * x)


def draws_from_a_generator(x):
    z = GENERATOR.normal(0.0, 1.0, x.shape[0])
    return np.sum(x * z)


def dot_beyond_two_dimensions(A, B):
    return np.sum(np.sin(np.dot(A, B)))


def sum_over_dict_items(params, x):
    s = 0.0
    for k, v in params.items():
        s = s + np.sum(np.sin(v * x))
    return s


def loop_over_dict_items(params, x):
    return 2.0 * sum_over_dict_items(params, x)


def dot_of_float_and_int(x, counts):
    return np.sum(np.dot(x, counts) ** 2)


def transpose_then_reshape(A):
    v = A.T.reshape(-1)
    return np.sum(v * np.arange(v.shape[0]))


def number_becomes_array(X):
    s = 0.0
    for i in range(X.shape[0]):
        s = s + np.cumsum(X[i])
    return np.sum(s)


def variance_of_a_list(a, b):
    return np.var([a, b * 2.0, a * b])


def dot_with_a_number(A):
    return np.sum(np.dot(A, 2.0) ** 2)


def squeeze_without_axis(x):
    y = np.squeeze(np.reshape(x, (1, -1)))
    return np.sum(y ** 2)


def gather_and_slice(A, idx):
    return np.sum(A[idx, 1:] ** 2)


def fancy_augmented_write(x, idx):
    z = np.zeros(4)
    z[idx] += x
    return np.sum(z * z)


def layers_of_different_shapes(ws, x, k):
    return np.sum(np.sin(ws[k] * x))  # a matrix or a vector, by an index known at run time


def none_argument(x, mask=None):
    if mask is None:
        return np.sum(x ** 2)
    return np.sum(x ** 2 * mask)


def stacked_eigh(As):
    return np.sum(np.linalg.eigh(As + np.swapaxes(As, -1, -2))[0] ** 2)


def stacked_svd(As):
    return np.sum(np.linalg.svd(As, compute_uv=False) ** 2)


def bernoulli_of_an_array(key, p):
    b = random.bernoulli(key, p)
    return np.sum(b * p)


def energy(x):  # for s2s.jit(s2s.vmap(s2s.hessian(energy)))
    return np.sum(np.sin(x) * x ** 2)


# ---- each limit's way out, as its docs/pages/limits.md entry words it: these compile and agree ------------


def loop_over_dict_items_way_out(params, x):
    s = 0.0
    for k, v in params.items():
        s = s + np.sum(np.sin(v * x))
    return 2.0 * s


def number_becomes_array_way_out(X):
    s = np.zeros_like(X[0])
    for i in range(X.shape[0]):
        s = s + np.cumsum(X[i])
    return np.sum(s)


def squeeze_without_axis_way_out(x):
    y = np.squeeze(np.reshape(x, (1, -1)), axis=0)
    return np.sum(y ** 2)


def layers_of_different_shapes_way_out(ws, x, k):
    w1, w2 = ws
    if k == 0:
        return np.sum(np.sin(w1 * x))
    return np.sum(np.sin(w2 * x))

