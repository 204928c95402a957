"""The >>> examples in the public docstrings run."""

import doctest

import s2s.api


def test_api_docstring_examples():
    result = doctest.testmod(s2s.api)
    assert result.attempted >= 8 and result.failed == 0
