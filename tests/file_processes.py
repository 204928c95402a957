"""Each test file runs in a process of its own, forked from the pytest process (or pytest-xdist
worker) when the file's first test starts and ended after its last.

Why: Numba never frees the machine code it compiles (a compiled function's memory stays after the
function is collected, ~3 MB each), and the suite compiles thousands of functions. In one long
worker that memory adds up to more than the machine has; in a process per file it is given back
when the file ends. The cost is that a file cannot reuse in memory what an earlier file compiled
(the disk caches still serve it).

The child runs each test's setup, call and teardown as pytest would, and sends the reports back
to the parent, which logs them: the terminal, --durations, -x and pytest-xdist see ordinary
reports. What the child would send to pytest-xdist's controller itself (warnings) goes back the
same way and is sent by the parent, the only process that may write to the controller.

S2S_SUITE_FORK=0 runs every file in the pytest process itself (for a debugger, say).
"""

from __future__ import annotations

import os
import pickle
import struct

import pytest
from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from numba_warm_up import warm_up

ENABLED = hasattr(os, "fork") and os.environ.get("S2S_SUITE_FORK", "1") != "0"


def _send(fd: int, value) -> None:
    data = pickle.dumps(value)
    os.write(fd, struct.pack("<Q", len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _receive_exactly(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int):
    header = _receive_exactly(fd, 8)
    if header is None:
        return None
    data = _receive_exactly(fd, struct.unpack("<Q", header)[0])
    return None if data is None else pickle.loads(data)


def _event_senders(config) -> list:
    """pytest-xdist's worker plugin (the object that writes to the controller), where present."""
    return [plugin for plugin in config.pluginmanager.get_plugins()
            if callable(getattr(plugin, "sendevent", None)) and hasattr(plugin, "channel")]


class FileProcess:
    """A child that runs the tests of one file, one at a time, as the parent names them."""

    def __init__(self, item):
        self.path = item.path
        self.items = item.session.items
        self.index = {id(each): k for k, each in enumerate(self.items)}
        to_child_read, self.to_child = os.pipe()
        self.from_child, from_child_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.to_child)
            os.close(self.from_child)
            self._serve(item.config, to_child_read, from_child_write)
        os.close(to_child_read)
        os.close(from_child_write)

    def _serve(self, config, requests: int, replies: int) -> None:
        status = 0
        try:
            events = []
            for plugin in _event_senders(config):
                plugin.sendevent = lambda name, **kwargs: events.append((name, kwargs))
            while (request := _receive(requests)) is not None:
                item_index, next_index = request
                nextitem = None if next_index is None else self.items[next_index]
                reports = runtestprotocol(self.items[item_index], nextitem=nextitem, log=False)
                serialised = [config.hook.pytest_report_to_serializable(config=config, report=report)
                              for report in reports]
                _send(replies, (serialised, events[:]))
                events.clear()
        except BaseException:  # the parent reports the test as failed when no reply comes
            status = 1
        finally:
            os._exit(status)

    def run(self, item, nextitem) -> list:
        """The reports of item's setup, call and teardown (and the events the child held back)."""
        next_index = None if nextitem is None else self.index[id(nextitem)]
        _send(self.to_child, (self.index[id(item)], next_index))
        reply = _receive(self.from_child)
        if reply is None:
            return None
        serialised, events = reply
        config = item.config
        for plugin in _event_senders(config):
            for name, kwargs in events:
                plugin.sendevent(name, **kwargs)
        return [config.hook.pytest_report_from_serializable(config=config, data=data) for data in serialised]

    def close(self) -> int:
        os.close(self.to_child)
        os.close(self.from_child)
        return os.waitpid(self.pid, 0)[1]


_current: FileProcess | None = None
_warmed = False


def _ended_report(item, status: int) -> TestReport:
    return TestReport(item.nodeid, item.location, {}, "failed",
                      f"the process running {item.path.name} ended during this test (wait status {status})", "call")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    global _current
    global _warmed
    if not ENABLED:
        return None
    if not _warmed:  # (in this process, before its first file is forked: numba_warm_up.py)
        warm_up()
        _warmed = True
    if _current is None or _current.path != item.path:
        _current = FileProcess(item)
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = _current.run(item, nextitem)
    if reports is None:
        reports = [_ended_report(item, _current.close())]
        _current = None
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    if _current is not None and (nextitem is None or nextitem.path != item.path):
        _current.close()
        _current = None
    return True
