"""The written list of what s2s.jit does not compile (s2s/limits.py) and its page, docs/pages/limits.md:
the page is the list rendered, so that the two cannot drift; every limit has a way out and a message
its refusal matches; every helper it names for `s2s check` is a runtime helper. (Which programs of the
suite's corpora each limit refuses, and that s2s check agrees: tests/test_jit_parity.py.)"""

import os
import re

from s2s import limits, runtime

PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "pages", "limits.md")


def test_the_page_is_the_list_rendered():
    with open(PAGE, encoding="utf-8") as handle:
        page = handle.read()
    assert page == limits.markdown(), "docs/pages/limits.md is not s2s/limits.py: run `python -m s2s.limits > docs/pages/limits.md`"


def test_every_limit_has_a_kind_a_message_and_a_way_out():
    for key, limit in limits.LIMITS.items():
        assert re.fullmatch(r"[a-z0-9-]+", key)
        assert limit.kind in (limits.NUMBA, limits.KNOWN_GAP), key
        assert limit.what and limit.way_out, key
        re.compile(limit.message)
        assert f"`{key}`" in limits.markdown()


def test_the_helpers_check_reports_are_runtime_helpers():
    for key, limit in limits.LIMITS.items():
        for helper in limit.helpers:
            assert callable(getattr(runtime, helper, None)), (key, helper)
            assert limits.refused_helper(helper) == (key, limit)
    assert limits.refused_helper("sum_start") is None
