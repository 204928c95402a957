"""Liveness: at each statement of a structured function (blocks nested by if, for and
while; no goto), which names may still be read later.

One backward analysis serves both representations s2s reasons about: the IR (the in-place
write checks of activity.py) and emitted Python (the dead code of optimize/dead_code.py).
A client says how a statement nests (`structure`) and what a simple statement reads and
binds (`simple`); the join over branches and the fixpoint over loops are here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Branches:
    """A statement that runs one of its blocks (if/else): reads is what choosing reads."""

    reads: set
    blocks: list


@dataclass
class Loop:
    """A loop whose iterations run `pre` (the IR's statements that compute a while's test),
    test the condition (reading `test`), then run `body`, which starts by binding `bound`
    (a for loop's variable). `reads`: what starting the loop reads (a range's bounds)."""

    body: list
    reads: set = field(default_factory=set)
    test: set = field(default_factory=set)
    pre: list = field(default_factory=list)
    bound: set = field(default_factory=set)


class Liveness:
    """Backward liveness; subclasses give `structure` and `simple`, and may record what is
    live after each statement (`after`). Statements inside loops are recorded once, in a
    last pass over the loop at its fixpoint."""

    def structure(self, stmt, live: set) -> Branches | Loop | None:
        """How stmt nests, or None for a statement `simple` handles."""
        raise NotImplementedError

    def simple(self, stmt, live: set, record: bool) -> set:
        """What is live before a statement without blocks, given what is live after it."""
        raise NotImplementedError

    def after(self, stmt, live: set) -> None:
        """Called with what is live after each statement, in the recording pass."""

    def block(self, block: list, live_out: set, record: bool = True) -> set:
        live = set(live_out)
        for stmt in reversed(block):
            if record:
                self.after(stmt, live)
            live = self.stmt(stmt, live, record)
        return live

    def stmt(self, stmt, live: set, record: bool) -> set:
        form = self.structure(stmt, live)
        if form is None:
            return self.simple(stmt, live, record)
        if isinstance(form, Branches):
            before = set(form.reads)
            for block in form.blocks:
                before |= self.block(block, live, record)
            return before
        head = self._loop_head(form, live)
        if record:
            self.block(form.body, head, True)
            self.block(form.pre, self._at_test(form, live, head), True)
        return head | form.reads

    def _at_test(self, loop: Loop, live: set, head: set) -> set:
        """Live where the condition is tested: it is read, then the loop ends or the body runs."""
        return live | loop.test | (self.block(loop.body, head, False) - loop.bound)

    def _loop_head(self, loop: Loop, live: set) -> set:
        """Live where each iteration starts (and so before the loop): the least fixpoint,
        approached from below."""
        head: set = set()
        while True:
            new = head | self.block(loop.pre, self._at_test(loop, live, head), False)
            if new == head:
                return head
            head = new
