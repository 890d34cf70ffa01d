"""The writer waits for company only where it can come (``host.batch``): a write of the one Run that writes
commits at once however long ``max_delay`` is; with two Runs writing, a write waits for the other's and both
commit in one transaction; a Run's last write takes it off the Runs waited for."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from harness_agui.host.batch import BatchWriter, GroupCommit
from harness_agui.host.writes import StreamWrite

LONG = 60.0  # a batch that waited for company would take this long; every test here ends far sooner


class Recording:
    """A backend that keeps the run ids of each committed batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()

    def connect(self) -> Any:
        return object()

    def commit(self, session: Any, writes: Sequence[StreamWrite], *, verify: bool) -> None:
        with self.lock:
            self.batches.append([w.root_run_id for w in writes])

    def lost(self, error: BaseException) -> bool:
        return False

    def close(self, session: Any) -> None:
        pass


def write(root: str, *, finished: bool = False) -> StreamWrite:
    return StreamWrite(root_run_id=root, thread_id=f"thread-{root}", finished=finished)


async def committed(future: asyncio.Future[None]) -> None:
    await asyncio.wait_for(future, LONG / 2)  # fails (rather than hangs) if the writer waited for company


def test_the_one_writing_run_commits_each_write_at_once() -> None:
    async def go() -> list[list[str]]:
        backend = Recording()
        writer = BatchWriter(backend, GroupCommit(max_delay=LONG))
        try:
            for _ in range(5):
                await committed(writer.submit(write("a")))
            await committed(writer.submit(write("a", finished=True)))
            await committed(writer.submit(write("b")))  # a has ended: b writes alone
        finally:
            await asyncio.to_thread(writer.close)
        return backend.batches

    assert asyncio.run(go()) == [["a"]] * 6 + [["b"]]


def test_a_write_waits_for_the_other_writing_run_and_shares_its_transaction() -> None:
    async def go() -> list[list[str]]:
        backend = Recording()
        writer = BatchWriter(backend, GroupCommit(max_delay=LONG))
        try:
            await committed(writer.submit(write("a")))
            b_first = writer.submit(write("b"))  # a wrote a moment ago: b's first write waits for a's next...
            await asyncio.sleep(0.2)
            assert not b_first.done()
            await committed(writer.submit(write("a")))  # ... and commits with it
            await committed(b_first)
            await asyncio.sleep(0.05)
            a_alone = writer.submit(write("a"))  # now a's write waits for b's next one
            await asyncio.sleep(0.2)
            assert not a_alone.done()
            b_ends = writer.submit(write("b", finished=True))
            await committed(a_alone)
            await committed(b_ends)
            await committed(writer.submit(write("a")))  # b has ended: a writes alone
        finally:
            await asyncio.to_thread(writer.close)
        return backend.batches

    assert asyncio.run(go()) == [["a"], ["b", "a"], ["a", "b"], ["a"]]


class Switches(Recording):
    """A backend that keeps the interpreter's switch interval seen during each commit."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[float] = []

    def commit(self, session: Any, writes: Sequence[StreamWrite], *, verify: bool) -> None:
        self.seen.append(sys.getswitchinterval())


def test_a_commit_runs_with_a_short_switch_interval_and_sets_it_back() -> None:
    # The driver lets go of the GIL around each statement; behind a busy loop each take back would wait a
    # whole interval. The writer lowers it while it commits, and puts back what it found.
    before = sys.getswitchinterval()

    async def go(policy: GroupCommit) -> list[float]:
        backend = Switches()
        writer = BatchWriter(backend, policy)
        try:
            await committed(writer.submit(write("a")))
            await committed(writer.submit(write("a", finished=True)))
        finally:
            await asyncio.to_thread(writer.close)
        return backend.seen

    # (the interpreter keeps the interval in microseconds: 0.00005 reads back as 4.99...e-05)
    assert asyncio.run(go(GroupCommit(max_delay=LONG))) == pytest.approx([0.00005, 0.00005])
    assert sys.getswitchinterval() == before
    assert asyncio.run(go(GroupCommit(max_delay=LONG, switch_interval=0.001))) == pytest.approx([0.001, 0.001])
    assert asyncio.run(go(GroupCommit(max_delay=LONG, switch_interval=None))) == [before, before]
    assert sys.getswitchinterval() == before


def test_with_more_runs_writing_the_interval_is_left_alone() -> None:
    # Many Runs writing: the long interval lets batches grow (less CPU per event); it is lowered only while
    # at most ``switch_runs`` Runs write.
    before = sys.getswitchinterval()

    async def go() -> list[float]:
        backend = Switches()
        writer = BatchWriter(backend, GroupCommit(max_delay=0, switch_runs=1))
        try:
            for root in ("a", "b", "c"):  # none finished: each stays among the Runs writing
                await committed(writer.submit(write(root)))
        finally:
            await asyncio.to_thread(writer.close)
        return backend.seen

    assert asyncio.run(go()) == pytest.approx([0.00005, 0.00005, before])
    assert sys.getswitchinterval() == before
