"""The crash test on every backend: a Host killed with SIGKILL at random points loses and duplicates
nothing, whether its stores are a SQLite file or a PostgreSQL database.

The Host (``serve`` below, forked for each start) opens its stores with ``open_stores`` on the
backend's target, ingests the long Run of ``crash_host`` (resending from the journal's cursor, as a
Harness subscription does) and runs ``project_run``. The first start kills itself just before the
events of one randomly chosen item are recorded; the next starts are SIGKILLed by the test after a
random delay; the last runs to the end. Between starts a client reconnects with the last event id it
saw. Afterwards both stores hold every item and event exactly once, and the client saw each id once.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from ag_ui.core import BaseEvent
from crash_host import RUN_ID, long_run

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import Delivery, open_stores, project_run
from harness_agui.wire.agui import agui_to_json

RANDOM_KILLS = 3
STREAM_SECONDS = 0.6
CONTEXT = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")


def _options(target: str) -> dict[str, Any]:
    return {} if target.startswith("postgresql://") else {"poll_interval": 0.002, "synchronous": "NORMAL"}


class Dying:
    """A delivery log that kills its own process just before recording the events of one item."""

    def __init__(self, log: Any, before: int | None) -> None:
        self.log = log
        self.before = before

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent], **options: Any) -> tuple[Delivery, ...]:
        if item.sequence == self.before:
            os.kill(os.getpid(), signal.SIGKILL)
        result: tuple[Delivery, ...] = self.log.record(item, events, **options)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)


async def _host(target: str, before: int | None, ready: Callable[[], object]) -> None:
    journal, log = open_stores(target, **_options(target))
    ready()

    async def ingest() -> None:
        cursor = await asyncio.to_thread(journal.cursor, RUN_ID)
        for item in long_run()[0 if cursor is None else cursor:]:
            await asyncio.to_thread(journal.append, item)

    harness = asyncio.create_task(ingest())
    await project_run(RUN_ID, journal, Dying(log, before))
    await harness
    journal.close()
    log.close()


def serve(target: str, before: int | None, ready: Callable[[], object]) -> None:
    asyncio.run(_host(target, before, ready))


def start_host(target: str, die_before_record: int | None = None) -> Any:
    ready = CONTEXT.Event()
    process = CONTEXT.Process(target=serve, args=(target, die_before_record, ready.set), daemon=True)
    process.start()
    while not ready.wait(0.05):
        if not process.is_alive():
            raise AssertionError(f"the host died while starting (exit code {process.exitcode})")
    return process


def finish(process: Any, timeout: float | None = None) -> int | None:
    process.join(timeout)
    if process.is_alive():
        os.kill(process.pid, signal.SIGKILL)
        process.join()
    return process.exitcode


@pytest.mark.parametrize("seed", [1, 2])
def test_a_host_killed_at_random_points_delivers_every_event_exactly_once(backend, seed):
    rng = random.Random(seed)
    items = long_run()
    observer = HarnessAguiObserver()
    expected = [agui_to_json(e) for item in items for e in observer.observe(item)]
    target = backend.target
    received: list[Delivery] = []

    def stores() -> tuple[Any, Any]:
        return open_stores(target, **_options(target))

    def reconnect() -> None:
        journal, log = stores()
        last = received[-1].sse_id if received else None
        received.extend(log.replay(RUN_ID, after=last))
        journal.close()
        log.close()

    window = rng.randrange(1, len(items) - 1)
    assert finish(start_host(target, die_before_record=window)) == -signal.SIGKILL
    journal, log = stores()
    assert log.cursor(RUN_ID) == window - 1
    assert journal.cursor(RUN_ID) >= window
    left = (len(items) - 1 - log.cursor(RUN_ID)) / len(items)
    journal.close()
    log.close()
    reconnect()

    for _ in range(RANDOM_KILLS):
        assert finish(start_host(target), timeout=rng.uniform(0.0, STREAM_SECONDS * left)) in (0, -signal.SIGKILL)
        reconnect()
        journal, log = stores()
        left = (len(items) - 1 - (log.cursor(RUN_ID) or 0)) / len(items)
        journal.close()
        log.close()

    assert finish(start_host(target)) == 0
    reconnect()

    journal, log = stores()
    try:
        stored = asyncio.run(_collect(journal.read_prefix(RUN_ID, through=len(items) - 1)))
        assert stored == items
        everything = log.replay(RUN_ID)
        assert [d.event_id for d in everything] == list(range(1, len(expected) + 1))
        assert [d.data for d in everything] == expected
        assert log.finished(RUN_ID)
    finally:
        journal.close()
        log.close()
    assert [d.event_id for d in received] == list(range(1, len(expected) + 1))
    assert [d.data for d in received] == expected


async def _collect(iterator: Any) -> list[HarnessStreamEvent]:
    return [item async for item in iterator]
