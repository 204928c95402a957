"""The >>> examples in the public docstrings run."""

import doctest

import s2s.doors.api
import s2s.doors.vmap


def test_api_docstring_examples():
    result = doctest.testmod(s2s.doors.api)
    assert result.attempted >= 8 and result.failed == 0


def test_vmap_docstring_examples():
    result = doctest.testmod(s2s.doors.vmap)
    assert result.attempted >= 1 and result.failed == 0


def test_lax_docstring_examples():
    import s2s.lax

    result = doctest.testmod(s2s.lax)
    assert result.attempted >= 7 and result.failed == 0
