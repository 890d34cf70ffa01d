# project_run with a checkpoint store: a restart resumes from the latest
# checkpoint plus the items after it, checks only the events after the
# checkpoint against the delivery log, and publishes exactly what an
# uninterrupted projection would; a damaged checkpoint is passed over.

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.host.checkpoints import SqliteCheckpointStore
from harness_agui.testing import projection_json as uninterrupted
from harness_agui.testing import simulated_run
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import decode

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "a13n"




def stream_of(name: str) -> list[HarnessStreamEvent]:
    if name == "simulated":
        return simulated_run()
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    return [decode(line, line=n) for n, line in enumerate(lines, 1)]


async def first_process(path: Path, items: list[HarnessStreamEvent], stop: int, every: int) -> None:
    # Journals everything, projects through ``stop`` with checkpoints, then "dies".
    root = items[0].run_id
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log, \
            SqliteCheckpointStore(path, every=every) as store:
        for item in items:
            journal.append(item, root_run_id=root)
        observer = HarnessAguiObserver()
        for position, item in enumerate(items[:stop + 1]):
            log.record(item, observer.observe(item), root_run_id=root,
                       expected_cursor=None if position == 0 else position - 1)
            store.offer(root, observer)


@pytest.mark.parametrize("name", ["simulated", "subagent", "nested_subagents"])
def test_a_restart_from_the_latest_checkpoint_publishes_the_uninterrupted_projection(tmp_path, name):
    items = stream_of(name)
    root = items[0].run_id
    path = tmp_path / "host.db"
    stop = len(items) * 2 // 3
    asyncio.run(first_process(path, items, stop, every=5))
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log, \
            SqliteCheckpointStore(path, every=5) as store:
        latest = store.latest(root, through=stop)
        assert latest is not None and 0 < latest.position <= stop
        observer = asyncio.run(project_run(root, journal, log, checkpoints=store, poll_interval=0.005))
        assert observer.finished
        assert [d.data for d in log.replay(root)] == uninterrupted(items)
        assert [agui_to_json(e) for e in observer.snapshot()] == uninterrupted(items)
        assert max(store.positions(root)) > stop  # the second process went on checkpointing


def test_a_damaged_checkpoint_row_is_passed_over_for_the_full_prefix(tmp_path):
    items = simulated_run()
    path = tmp_path / "host.db"
    stop = len(items) // 2
    asyncio.run(first_process(path, items, stop, every=1_000_000))
    with SqliteCheckpointStore(path, every=1) as store, SqliteDeliveryLog(path) as log:
        observer = HarnessAguiObserver()
        for item in items[:stop + 1]:
            observer.observe(item)
        store.save("run-demo", observer.checkpoint(key=store.key))
    with sqlite3.connect(path) as conn:
        assert conn.execute("UPDATE harness_checkpoints SET data = 'AAAA' || substr(data, 5)").rowcount == 1
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log, \
            SqliteCheckpointStore(path, every=1_000_000) as store:
        asyncio.run(project_run("run-demo", journal, log, checkpoints=store, poll_interval=0.005))
        assert [d.data for d in log.replay("run-demo")] == uninterrupted(items)


def _rewriter(change):  # type: ignore[no-untyped-def]
    def processor(item, event):  # type: ignore[no-untyped-def]
        delta = getattr(event, "delta", None)
        return event.model_copy(update={"delta": change(delta)}) if isinstance(delta, str) else event
    return processor


@pytest.mark.parametrize("identity", ["shout v1", "shout v2"])
def test_a_checkpoint_is_used_only_under_the_processor_identity_it_was_written_with(tmp_path, identity):
    # The stored checkpoint claims "shout v1" but was taken under another processor: used, it would
    # give a projection that differs from the recorded one; under another identity it is refused.
    items = simulated_run()
    path = tmp_path / "host.db"
    stop = len(items) // 2
    shout, whisper = _rewriter(str.upper), _rewriter(str.lower)
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log, \
            SqliteCheckpointStore(path, every=1) as store:
        for item in items:
            journal.append(item)
        recorded, lying = HarnessAguiObserver(shout), HarnessAguiObserver(whisper)
        for item in items[:stop + 1]:
            log.record(item, recorded.observe(item))
            lying.observe(item)
        store.save("run-demo", lying.checkpoint(processor_identity="shout v1", key=store.key))
        rebuilt = asyncio.run(project_run("run-demo", journal, log, processor=shout, checkpoints=store,
                                          processor_identity=identity, poll_interval=0.005))
    expected = HarnessAguiObserver(shout)
    for item in items:
        expected.observe(item)
    same = [agui_to_json(e) for e in rebuilt.snapshot()] == [agui_to_json(e) for e in expected.snapshot()]
    assert same is (identity == "shout v2")
