"""A failed resume (history broken midway), then a retry with a reopened complete history.

    python examples/failed_resume_retry.py

A restarted Host rebuilds a Run's projection. Its first attempt reads the
history from a cold archive that lost an item: the history checks stop the
resume at the gap. Its second attempt reads from a replica whose connection
drops midway. After each failure the observer is exactly as fresh as before,
so the Host simply retries, this time from its SQLite journal, and then
continues live. The script checks the result and exits 0.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import HistoryError, SqliteSourceJournal, check_prefix
from harness_agui.testing import simulated_run

RUN_ID = "run-demo"


async def cold_archive(items: list[HarnessStreamEvent]) -> AsyncIterator[HarnessStreamEvent]:
    """An archive that lost the item at sequence 17."""
    for item in items:
        if item.sequence != 17:
            yield item


async def flaky_replica(items: list[HarnessStreamEvent]) -> AsyncIterator[HarnessStreamEvent]:
    """A replica whose connection drops after 25 items."""
    for n, item in enumerate(items):
        if n == 25:
            raise ConnectionResetError("replica connection reset by peer")
        yield item


def describe(observer: HarnessAguiObserver) -> str:
    return f"is_fresh={observer.is_fresh}, run_id={observer.run_id}, events={observer.event_count}"


async def main(workdir: Path) -> int:
    items = simulated_run(run_id=RUN_ID)
    cursor = 45  # the handoff cursor: the Host resumes through it and goes live after it
    journal = SqliteSourceJournal(workdir / "journal.db")
    for item in items[:cursor + 1]:
        journal.append(item)

    observer = HarnessAguiObserver()
    fresh_after_failure: list[bool] = []

    print("attempt 1: resume from the cold archive")
    try:
        await observer.resume(check_prefix(cold_archive(items), run_id=RUN_ID, through=cursor))
    except HistoryError as e:
        fresh_after_failure.append(observer.is_fresh)
        print(f"  refused: {type(e).__name__}: {e}")
        print(f"  (e.run_id={e.run_id!r}, e.sequence={e.sequence}, e.expected={e.expected})")
    print(f"  observer: {describe(observer)}")

    print("attempt 2: resume from a replica")
    try:
        await observer.resume(check_prefix(flaky_replica(items), run_id=RUN_ID, through=cursor))
    except ConnectionError as e:
        fresh_after_failure.append(observer.is_fresh)
        print(f"  failed: {type(e).__name__}: {e}")
    print(f"  observer: {describe(observer)}")

    print("attempt 3: resume from the journal, reopened")
    await observer.resume(journal.read_prefix(RUN_ID, through=cursor))
    print(f"  resumed: {describe(observer)}")

    published = []
    for item in items[cursor + 1:]:
        journal.append(item)
        published.extend(observer.observe(item))
    print(f"live: {len(items) - cursor - 1} more items, {len(published)} events published")

    reference = HarnessAguiObserver()
    for item in items:
        reference.observe(item)
    refused = fresh_after_failure == [True, True]
    same = observer.snapshot() == reference.snapshot()
    same = same and tuple(published) == tuple(reference.snapshot()[observer.event_count - len(published):])
    print()
    print(f"both broken histories were refused and the observer stayed fresh: {refused}")
    print(f"projection after the retry equals an uninterrupted run's:        {same}")
    journal.close()
    return 0 if refused and same else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(asyncio.run(main(Path(tmp))))
