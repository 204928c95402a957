"""Progress: work that takes longer than about a second says what it is and how long it took, on the
logger "s2s" (stderr by default); quick work says nothing."""

import importlib.util
import logging
import time

import numpy as np
import pytest

import s2s
from s2s import progress as progress_module
from s2s.progress import progress


@pytest.fixture
def said(monkeypatch):
    """The messages of the logger "s2s", as a list that fills while the test runs."""
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Collect()
    logger = logging.getLogger("s2s")
    logger.addHandler(handler)
    yield messages
    logger.removeHandler(handler)


def test_slow_work_is_announced_then_timed(said, monkeypatch):
    monkeypatch.setattr(progress_module, "AFTER_SECONDS", 0.05)
    with progress("writing the grad of loss"):
        with progress("an inner step"):  # the outermost speaks for it
            time.sleep(0.3)
    assert said[0] == "writing the grad of loss ..."
    assert said[1].startswith("writing the grad of loss: done in ") and said[1].endswith(" s")
    assert len(said) == 2


def test_quick_work_says_nothing_and_a_failure_says_it_stopped(said, monkeypatch):
    with progress("quick"):
        pass
    assert said == []
    monkeypatch.setattr(progress_module, "AFTER_SECONDS", 0.05)
    with pytest.raises(ValueError):
        with progress("slow then failing"):
            time.sleep(0.3)
            raise ValueError
    assert said[-1].startswith("slow then failing: stopped after ")


def test_a_transform_and_its_compilation_are_announced(said, monkeypatch, tmp_path):
    monkeypatch.setattr(progress_module, "AFTER_SECONDS", 0.0)
    path = tmp_path / "announced_model.py"  # (a new file: written and compiled in this test)
    path.write_text("import numpy as np\n\n\ndef announced_loss(w):\n    return np.sum(np.tanh(w) ** 2)\n")
    spec = importlib.util.spec_from_file_location("announced_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    w = np.array([0.3, -0.7])
    np.testing.assert_allclose(s2s.jit(s2s.grad(module.announced_loss))(w), 2 * np.tanh(w) / np.cosh(w) ** 2)
    assert "writing the grad of announced_loss (announced_model.py:4) ..." in said
    assert any(m.startswith("compiling ") and "for announced_loss (announced_model.py:4)" in m and "done in" in m
               for m in said)


def test_the_logger_writes_to_stderr_as_it_is_then(capsys):
    logging.getLogger("s2s").info("a word")
    assert capsys.readouterr().err == "s2s: a word\n"
