"""SqliteSourceJournal: its own tests (the wire format in its rows, WAL, the layout upgrade, threads). The
contract it shares with the PostgreSQL journal is tested once, on both backends, in tests/contract."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from harness_agui import DecodeError, HarnessStreamEvent
from harness_agui.host import (
    AfterTerminalError,
    DamagedStoreError,
    JournalConflictError,
    SequenceGapError,
    SequenceOrderError,
    SqliteSourceJournal,
    StorageError,
)
from harness_agui.host._sqlite import checksum
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.wire.codec import encode


@pytest.fixture
def journal(tmp_path: Path) -> Any:
    # NORMAL: commits survive a crash of the process, not a power cut; FULL
    # (the default) costs an fsync per append, which the suite does not need.
    j = SqliteSourceJournal(tmp_path / "journal.db", poll_interval=0.005, synchronous="NORMAL")
    yield j
    j.close()


def observations(n: int, run_id: str = "run-1", thread_id: str = "thread-1", *, terminal: bool = True,
                 ) -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id)
    for i in range(n - 1 if terminal else n):
        b.observation("step", {"i": i})
    if terminal:
        b.completed("done")
    return b.items


async def collect(iterator: AsyncIterator[HarnessStreamEvent]) -> list[HarnessStreamEvent]:
    return [item async for item in iterator]


def rows(path: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT run_id, sequence, line FROM harness_source_items ORDER BY run_id, sequence"
                            ).fetchall()


# -- append ------------------------------------------------------------------------

def test_append_stores_the_item_in_the_wire_format_and_returns_true(journal):
    items = simulated_run()
    assert all(journal.append(item) for item in items)
    stored = rows(journal.path)
    assert [line for _, _, line in stored] == [encode(item) for item in items]
    assert journal.cursor("run-demo") == len(items) - 1
    assert journal.finished("run-demo")


def test_the_database_is_in_wal_mode(journal):
    with sqlite3.connect(journal.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_appending_the_identical_item_again_is_a_no_op(journal):
    items = observations(3)
    for item in items:
        journal.append(item)
    before = rows(journal.path)
    assert journal.append(items[1]) is False
    assert journal.append(attrs.evolve(items[2])) is False
    assert rows(journal.path) == before


def test_a_different_item_at_a_stored_sequence_is_a_conflict_and_writes_nothing(journal):
    items = observations(3)
    for item in items[:2]:
        journal.append(item)
    before = rows(journal.path)
    other = attrs.evolve(items[1], event=attrs.evolve(items[1].event, value={"i": 99}))
    with pytest.raises(JournalConflictError) as info:
        journal.append(other)
    assert (info.value.run_id, info.value.sequence, info.value.expected) == ("run-1", 1, 2)
    assert not isinstance(info.value, ValueError)  # an order fault, not a value the store refuses
    assert isinstance(info.value, SequenceOrderError)  # what every reader raises for a repeated sequence
    assert rows(journal.path) == before


def test_after_the_terminal_result_a_second_delivery_is_a_no_op_and_anything_else_is_after_terminal(journal):
    items = observations(3)
    for item in items:
        journal.append(item)
    before = rows(journal.path)
    assert journal.append(items[2]) is False
    assert journal.append(items[1]) is False
    other = attrs.evolve(items[1], event=attrs.evolve(items[1].event, value={"i": 99}))
    with pytest.raises(AfterTerminalError) as info:
        journal.append(other)
    assert not isinstance(info.value, JournalConflictError)
    assert rows(journal.path) == before


def test_a_run_must_start_at_its_first_sequence(tmp_path):
    items = observations(4)
    with SqliteSourceJournal(tmp_path / "a.db") as journal:
        with pytest.raises(SequenceGapError):
            journal.append(items[1])
        assert journal.cursor("run-1") is None
    late = SourceBuilder("thread-1", "run-1", first_sequence=5).observation("x", 1).items
    with SqliteSourceJournal(tmp_path / "b.db", first_sequence=5) as journal:
        assert journal.append(late[0])
        with pytest.raises(SequenceOrderError):
            journal.append(items[0])


def test_nothing_can_be_appended_after_the_terminal_result(journal):
    items = observations(3)
    for item in items:
        journal.append(item)
    with pytest.raises(AfterTerminalError):
        journal.append(attrs.evolve(items[0], sequence=3))
    assert journal.cursor("run-1") == 2


# -- read_prefix ---------------------------------------------------------------------

def test_a_prefix_longer_than_one_page_is_read_whole_and_in_order(journal):
    items = observations(700)
    for item in items:
        journal.append(item)
    assert asyncio.run(collect(journal.read_prefix("run-1", through=699))) == items
    assert asyncio.run(collect(journal.read_prefix("run-1", through=300))) == items[:301]


def test_the_empty_prefix_reads_nothing(journal):
    assert asyncio.run(collect(journal.read_prefix("run-1", through=None))) == []


def test_a_row_removed_behind_the_journals_back_is_reported_as_a_gap(journal):
    for item in observations(6):
        journal.append(item)
    with sqlite3.connect(journal.path) as conn:
        conn.execute("DELETE FROM harness_source_items WHERE sequence = 3")
    with pytest.raises(SequenceGapError) as info:
        asyncio.run(collect(journal.read_prefix("run-1", through=5)))
    assert (info.value.sequence, info.value.expected) == (4, 3)


def test_a_journal_reopened_from_the_same_file_reads_what_was_appended(tmp_path):
    items = simulated_run()
    with SqliteSourceJournal(tmp_path / "j.db") as first:
        for item in items:
            first.append(item)
    with SqliteSourceJournal(tmp_path / "j.db") as second:
        assert second.cursor("run-demo") == len(items) - 1
        assert asyncio.run(collect(second.read_prefix("run-demo", through=len(items) - 1))) == items
        assert second.append(items[-1]) is False


def _v0(item: HarnessStreamEvent) -> str:
    # What a hypothetical older release wrote: version 0 called "sequence" "seq".
    line = encode(item)
    return line.replace('"v":2', '"v":0', 1).replace('"sequence":', '"seq":', 1)


def _migrate_v0(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["sequence"] = data.pop("seq")
    data["v"] = 2
    return data


def _old_layout(path: Any, rows: list[tuple[Any, ...]], heads: list[tuple[Any, ...]]) -> None:
    # A file as the release before streams wrote it: one Run per key, no positions.
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE harness_source_items (run_id TEXT NOT NULL, sequence INTEGER NOT NULL, "
                     "thread_id TEXT NOT NULL, terminal INTEGER NOT NULL, line TEXT NOT NULL, crc INTEGER NOT NULL, "
                     "PRIMARY KEY (run_id, sequence))")
        conn.execute("CREATE TABLE harness_source_runs (run_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
                     "last_sequence INTEGER NOT NULL, terminal INTEGER NOT NULL, crc INTEGER NOT NULL, "
                     "PRIMARY KEY (run_id))")
        conn.execute("CREATE INDEX harness_source_runs_thread ON harness_source_runs (thread_id)")
        conn.executemany("INSERT INTO harness_source_items VALUES (?, ?, ?, ?, ?, ?)",
                         [(*row, checksum(row)) for row in rows])
        conn.executemany("INSERT INTO harness_source_runs VALUES (?, ?, ?, ?, ?)",
                         [(*head, checksum(head)) for head in heads])


def test_rows_of_an_older_wire_version_are_read_through_the_migration_hook(tmp_path):
    items = observations(3)
    path = tmp_path / "old.db"
    rows = [(i.run_id, i.sequence, i.thread_id, int(i is items[-1]), _v0(i)) for i in items[:2]]
    _old_layout(path, rows, [("run-1", "thread-1", 1, 0)])
    with SqliteSourceJournal(path) as plain:
        with pytest.raises(DecodeError, match="run 'run-1' at sequence 0: .*version 0"):
            asyncio.run(collect(plain.read_prefix("run-1", through=1)))
    with SqliteSourceJournal(path, migrations={0: _migrate_v0}) as migrating:
        assert asyncio.run(collect(migrating.read_prefix("run-1", through=1))) == items[:2]
        assert migrating.append(items[1]) is False
        assert migrating.append(items[2]) is True
        assert asyncio.run(collect(migrating.read_prefix("run-1", through=2))) == items


def test_a_file_of_the_layout_before_streams_is_upgraded_when_first_opened_for_writing(tmp_path):
    one, two = simulated_run(run_id="run-a"), simulated_run(run_id="run-b")
    path = tmp_path / "old.db"
    rows = [(i.run_id, i.sequence, i.thread_id, int(i is run[-1]), encode(i)) for run in (one, two) for i in run]
    heads = [(run[0].run_id, run[0].thread_id, len(run) - 1, 1) for run in (one, two)]
    _old_layout(path, rows, heads)
    with pytest.raises(StorageError, match="layout of an earlier release; open the store once for writing"):
        SqliteSourceJournal(path, read_only=True)
    with SqliteSourceJournal(path) as journal:
        assert journal.runs() == ("run-a", "run-b")
        assert journal.cursor("run-b") == len(two) - 1 and journal.finished("run-b")
        assert asyncio.run(collect(journal.read_prefix("run-a", through=len(one) - 1))) == one
        assert journal.append(one[3]) is False
    with SqliteSourceJournal(path, read_only=True) as reader:  # upgraded once, for good
        assert asyncio.run(collect(reader.read_prefix("run-b", through=len(two) - 1))) == two


def test_a_damaged_row_of_the_old_layout_stops_the_upgrade_and_changes_nothing(tmp_path):
    items = simulated_run()
    path = tmp_path / "old.db"
    rows = [(i.run_id, i.sequence, i.thread_id, int(i is items[-1]), encode(i)) for i in items]
    _old_layout(path, rows, [(items[0].run_id, items[0].thread_id, len(items) - 1, 1)])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE harness_source_items SET line = 'x' || line WHERE sequence = 3")
    with pytest.raises(DamagedStoreError, match="sequence=3"):
        SqliteSourceJournal(path)
    with sqlite3.connect(path) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(harness_source_items)")]
    assert columns == ["run_id", "sequence", "thread_id", "terminal", "line", "crc"]


# -- tail ----------------------------------------------------------------------------

def test_the_tail_follows_new_appends_until_the_terminal_result(journal):
    items = simulated_run()
    cut = 20
    for item in items[:cut + 1]:
        journal.append(item)

    async def scenario() -> tuple[list[HarnessStreamEvent], list[HarnessStreamEvent]]:
        prefix = await collect(journal.read_prefix("run-demo", through=cut))

        async def harness() -> None:
            for item in items[cut + 1:]:
                await asyncio.sleep(0.001)
                journal.append(item)

        writer = asyncio.create_task(harness())
        tail = await collect(journal.tail("run-demo", after=cut))
        await writer
        return prefix, tail

    prefix, tail = asyncio.run(scenario())
    assert prefix + tail == items
    assert tail[0].sequence == cut + 1


def test_the_tail_follows_appends_made_by_another_thread(journal):
    items = observations(60)
    journal.append(items[0])
    done = threading.Event()

    def writer() -> None:
        for item in items[1:]:
            journal.append(item)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    tail = asyncio.run(collect(journal.tail("run-1", after=0)))
    thread.join()
    assert done.is_set() and tail == items[1:]


def test_a_tail_after_the_terminal_result_ends_at_once(journal):
    items = observations(4)
    for item in items:
        journal.append(item)
    assert asyncio.run(collect(journal.tail("run-1", after=3))) == []


# -- lifecycle -----------------------------------------------------------------------

def test_an_in_memory_database_is_refused():
    with pytest.raises(ValueError, match="in-memory"):
        SqliteSourceJournal(":memory:")


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ValueError):
        SqliteSourceJournal(tmp_path / "x.db", poll_interval=0)
    with pytest.raises(ValueError):
        SqliteSourceJournal(tmp_path / "x.db", synchronous="SOMETIMES")
    with pytest.raises(ValueError):
        SqliteSourceJournal(tmp_path / "x.db", first_sequence=-1)


def test_a_closed_journal_refuses_to_work(tmp_path):
    journal = SqliteSourceJournal(tmp_path / "c.db")
    journal.close()
    journal.close()
    with pytest.raises(ValueError, match="closed"):
        journal.append(observations(1)[0])
    assert "closed" in repr(journal)


def test_a_long_lived_journal_keeps_one_connection_per_live_thread(journal):
    for item in observations(3):
        journal.append(item)
    for _ in range(5):  # every asyncio.run has its own worker threads
        assert len(asyncio.run(collect(journal.read_prefix("run-1", through=2)))) == 3
    alive = {t for t in threading.enumerate()}
    owners = [t for t, _ in journal._db._conns]
    assert len(owners) == len(set(owners))
    assert sum(1 for t in owners if t not in alive) <= 1  # only the last run's worker may be gone yet
