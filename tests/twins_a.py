"""A function named act, as tests/twins_b.py has one: s2s must keep them apart."""


def act(u):
    return u * u * 3.0
