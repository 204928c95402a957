"""The >>> examples in the public docstrings run."""

import doctest

import s2s.doors.api
import s2s.doors.forward
import s2s.doors.jacobians
import s2s.doors.vmap


def test_api_docstring_examples():
    result = doctest.testmod(s2s.doors.api)
    assert result.attempted >= 3 and result.failed == 0
    result = doctest.testmod(s2s.doors.forward)  # s2s.jvp's
    assert result.attempted >= 2 and result.failed == 0
    result = doctest.testmod(s2s.doors.jacobians)  # s2s.hessian's
    assert result.attempted >= 1 and result.failed == 0


def test_vmap_docstring_examples():
    result = doctest.testmod(s2s.doors.vmap)
    assert result.attempted >= 1 and result.failed == 0


def test_lax_docstring_examples():
    import s2s.lax

    result = doctest.testmod(s2s.lax)
    assert result.attempted >= 7 and result.failed == 0


def test_toolbox_docstring_examples():
    import s2s.doors.devices
    import s2s.optimizers
    import s2s.runtime.debug

    for module, least in ((s2s.optimizers, 4), (s2s.runtime.debug, 2), (s2s.doors.devices, 6)):
        result = doctest.testmod(module)
        assert result.attempted >= least and result.failed == 0, module.__name__


def test_pmap_docstring_examples():
    import s2s.lax.collectives
    import s2s.doors.pmap

    for module, least in ((s2s.doors.pmap, 3), (s2s.lax.collectives, 2)):
        result = doctest.testmod(module)
        assert result.attempted >= least and result.failed == 0, module.__name__
