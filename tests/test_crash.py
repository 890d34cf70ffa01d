"""The crash test: a Host killed with SIGKILL at random points loses and duplicates nothing.

Each seed starts the Host of tests/crash_host.py as a child process on a fresh
database several times. The
first start kills itself at an exact, randomly chosen point of the protocol
(an item journaled and observed, its events not yet recorded: the crash
window the delivery cursor exists for); the next starts are SIGKILLed by this
test after a random delay (during start-up, resume, streaming, or not at all
if the Host was quicker); the last start runs to the end. Between starts a UI client reconnects
with the last event id it saw and reads what was delivered since. Afterwards
the journal holds every source item exactly once, the delivery log holds ids
1..N each exactly once, the client saw each id exactly once, and both the
delivered stream and the projection rebuilt from the journal equal an
uninterrupted run's.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from crash_host import RUN_ID, long_run, serve

from harness_agui import HarnessAguiObserver
from harness_agui.host import Delivery, SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.wire.agui import agui_to_json

RANDOM_KILLS = 3
STREAM_SECONDS = 0.3  # about how long a Host takes to stream the whole Run; kills aim within what is left
# Fork where the platform has it: a restart then costs no interpreter start-up.
CONTEXT = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")


def start_host(database: Path, die_before_record: int | None = None) -> Any:
    ready = CONTEXT.Event()
    process = CONTEXT.Process(target=serve, args=(str(database), die_before_record, ready.set), daemon=True)
    process.start()
    while not ready.wait(0.05):
        if not process.is_alive():
            raise AssertionError(f"the host died while starting (exit code {process.exitcode})")
    return process


def finish(process: Any, timeout: float | None = None) -> int | None:
    """Wait for the Host to exit (SIGKILL it first after ``timeout`` seconds); its exit code."""
    process.join(timeout)
    if process.is_alive():
        os.kill(process.pid, signal.SIGKILL)
        process.join()
    return process.exitcode


def uninterrupted_projection() -> list[str]:
    observer = HarnessAguiObserver()
    for item in long_run():
        observer.observe(item)
    return [agui_to_json(e) for e in observer.snapshot()]


class Client:
    """A UI client that reconnects with Last-Event-ID and keeps what it was sent."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.received: list[Delivery] = []

    def reconnect(self) -> None:
        last = self.received[-1].event_id if self.received else None
        with SqliteDeliveryLog(self.database) as log:
            self.received.extend(log.replay(RUN_ID, after=last))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_host_killed_at_random_points_delivers_every_event_exactly_once(tmp_path, seed):
    rng = random.Random(seed)
    items = long_run()
    expected = uninterrupted_projection()
    database = tmp_path / "host.db"
    client = Client(database)

    window = rng.randrange(1, len(items) - 1)
    assert finish(start_host(database, die_before_record=window)) == -signal.SIGKILL
    with SqliteSourceJournal(database) as journal, SqliteDeliveryLog(database) as log:
        assert log.cursor(RUN_ID) == window - 1
        assert journal.cursor(RUN_ID) >= window
    client.reconnect()

    for _ in range(RANDOM_KILLS):
        with SqliteDeliveryLog(database) as log:
            left = (len(items) - 1 - log.cursor(RUN_ID)) / len(items)
        delay = rng.uniform(0.0, STREAM_SECONDS * left)
        assert finish(start_host(database), timeout=delay) in (0, -signal.SIGKILL)
        client.reconnect()

    assert finish(start_host(database)) == 0
    client.reconnect()

    with SqliteSourceJournal(database) as journal:
        stored = asyncio.run(_collect(journal.read_prefix(RUN_ID, through=len(items) - 1)))
        assert stored == items
        rebuilt = HarnessAguiObserver()
        asyncio.run(rebuilt.resume(journal.read_prefix(RUN_ID, through=len(items) - 1)))
        assert [agui_to_json(e) for e in rebuilt.snapshot()] == expected

    with sqlite3.connect(database) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT event_id FROM harness_agui_deliveries WHERE run_id = ? ORDER BY event_id", (RUN_ID,))]
        source_rows = conn.execute("SELECT COUNT(*) FROM harness_source_items").fetchone()[0]
    assert ids == list(range(1, len(expected) + 1))
    assert source_rows == len(items)
    with SqliteDeliveryLog(database) as log:
        assert [d.data for d in log.replay(RUN_ID)] == expected
        assert log.finished(RUN_ID)
    assert [d.event_id for d in client.received] == ids
    assert [d.data for d in client.received] == expected


async def _collect(iterator):  # type: ignore[no-untyped-def]
    return [item async for item in iterator]
