# The Host kit keeps a delegating Run as one stream: the root Run's items and
# its child Runs' items in arrival order, each Run in its own sequence domain.
# The journal stores and hands back that order, checks every Run's order on
# its own, and the handoff cursor is a position in the stream; the delivery
# log and project_run count in the same positions, so a restart at any
# position gives the uninterrupted projection.

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.core.history import StreamCursor, advance_stream
from harness_agui.host import (
    AfterTerminalError,
    ForeignRunError,
    JournalConflictError,
    SequenceGapError,
    SequenceOrderError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    StorageError,
    check_prefix,
    check_tail,
    project_run,
)
from harness_agui.host._sqlite import checksum
from harness_agui.testing import complete_delegating_histories, simulated_run
from harness_agui.testing import projection_json as uninterrupted
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import decode

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "a13n"


def real(name: str) -> list[HarnessStreamEvent]:
    return [decode(line, line=n) for n, line in enumerate((FIXTURES / f"{name}.jsonl").read_text().splitlines(), 1)]


def collect(iterator: AsyncIterator[HarnessStreamEvent]) -> list[HarnessStreamEvent]:
    async def go() -> list[HarnessStreamEvent]:
        return [item async for item in iterator]
    return asyncio.run(go())


def children(items: list[HarnessStreamEvent]) -> list[str]:
    root = items[0].run_id
    return list(dict.fromkeys(i.run_id for i in items if i.run_id != root))


@pytest.fixture
def journal(tmp_path):
    with SqliteSourceJournal(tmp_path / "host.db") as j:
        yield j


@pytest.fixture(params=["subagent", "nested_subagents", "failed_child"])
def stream(request) -> list[HarnessStreamEvent]:
    items = real(request.param)
    assert children(items), "the fixture delegates"
    return items


# -- the journal -------------------------------------------------------------------

def test_a_delegating_run_is_stored_and_read_back_as_one_stream_in_arrival_order(journal, stream):
    root = stream[0].run_id
    assert all(journal.append(item, root_run_id=root) for item in stream)
    assert journal.runs() == (root,)
    assert journal.cursor(root) == len(stream) - 1 and journal.finished(root)
    assert all(journal.root_of(child) == root for child in children(stream))
    assert collect(journal.read_prefix(root, through=len(stream) - 1)) == stream
    with sqlite3.connect(journal.path) as conn:
        positions = [r[0] for r in conn.execute("SELECT position FROM harness_source_items ORDER BY rowid")]
    assert positions == list(range(len(stream)))


def test_child_items_find_their_stream_once_their_run_is_known(journal, stream):
    root = stream[0].run_id
    firsts = {(i.run_id) for i in stream if i.sequence == 0}
    for item in stream:  # a child's first item names the root; everything else finds it
        journal.append(item, root_run_id=root if item.run_id in firsts and item.sequence == 0 else None)
    assert collect(journal.read_prefix(root, through=len(stream) - 1)) == stream


def test_every_item_delivered_again_is_recognised_even_after_the_root_ended(journal, stream):
    root = stream[0].run_id
    for item in stream:
        journal.append(item, root_run_id=root)
    assert not any(journal.append(item, root_run_id=root) for item in stream)
    assert not any(journal.append(item) for item in stream)
    assert journal.cursor(root) == len(stream) - 1


def test_prefix_and_tail_meet_at_every_position_without_gap_or_overlap(journal, stream):
    root = stream[0].run_id
    for item in stream:
        journal.append(item, root_run_id=root)
    for cut in [None, *range(len(stream))]:
        prefix = [] if cut is None else collect(journal.read_prefix(root, through=cut))
        assert prefix + collect(journal.tail(root, after=cut)) == stream, cut


def test_a_tail_follows_child_items_appended_while_it_waits(journal, stream):
    root = stream[0].run_id
    cut = len(stream) // 2
    for item in stream[:cut + 1]:
        journal.append(item, root_run_id=root)

    async def scenario() -> list[HarnessStreamEvent]:
        async def feed() -> None:
            for item in stream[cut + 1:]:
                await asyncio.sleep(0.001)
                await asyncio.to_thread(journal.append, item, root_run_id=root)
        feeder = asyncio.create_task(feed())
        got = [item async for item in journal.tail(root, after=cut, poll_interval=0.005)]
        await feeder
        return got

    assert asyncio.run(asyncio.wait_for(scenario(), 30)) == stream[cut + 1:]


def test_each_run_of_the_stream_is_checked_on_its_own_at_append(journal, stream):
    root = stream[0].run_id
    child = children(stream)[0]
    kid = [i for i in stream if i.run_id == child]
    upto = stream.index(kid[2])
    for item in stream[:upto]:
        journal.append(item, root_run_id=root)
    with pytest.raises(SequenceGapError) as gap:
        journal.append(kid[3])
    assert (gap.value.run_id, gap.value.sequence, gap.value.expected) == (child, 3, 2)
    with pytest.raises(JournalConflictError) as conflict:
        journal.append(attrs.evolve(kid[1], sequence=1, event=kid[0].event))
    assert (conflict.value.run_id, conflict.value.sequence) == (child, 1)
    with pytest.raises(ForeignRunError, match="not started"):
        journal.append(attrs.evolve(kid[3], run_id="run-stranger"), root_run_id=root)
    with pytest.raises(ForeignRunError, match="belongs to the stream of run"):
        journal.append(kid[2], root_run_id="run-elsewhere")
    with pytest.raises(ForeignRunError, match="holds no item yet"):
        journal.append(attrs.evolve(kid[0], run_id="run-orphan"), root_run_id="run-elsewhere")
    assert journal.cursor(root) == upto - 1
    with pytest.raises(ValueError, match="child Run in the stream of run"):
        journal.cursor(child)


def test_nothing_of_the_stream_follows_the_roots_terminal_result(journal):
    items = real("subagent")
    root = items[0].run_id
    for item in items:
        journal.append(item, root_run_id=root)
    child = children(items)[0]
    last_of_child = [i for i in items if i.run_id == child][-1]
    late = attrs.evolve(last_of_child, sequence=last_of_child.sequence + 1)
    with pytest.raises(AfterTerminalError) as info:
        journal.append(late)
    assert info.value.run_id == root
    with pytest.raises(ForeignRunError):  # nothing starts once the stream has ended
        journal.append(attrs.evolve(items[0], run_id="run-new-child"), root_run_id=root)


def test_a_journal_without_children_keeps_position_equal_to_sequence(journal):
    items = simulated_run()
    for item in items:
        journal.append(item)
    with sqlite3.connect(journal.path) as conn:
        rows = conn.execute("SELECT position, sequence FROM harness_source_items ORDER BY position").fetchall()
    assert all(p == s for p, s in rows) and len(rows) == len(items)


# -- the checks on any iterable ------------------------------------------------------

def test_check_prefix_checks_each_run_and_stops_at_a_position(stream):
    root = stream[0].run_id
    cut = len(stream) // 2
    assert collect(check_prefix(iter(stream), run_id=root, through=cut)) == stream[:cut + 1]
    child = children(stream)[0]
    broken = [i for i in stream if not (i.run_id == child and i.sequence == 2)]
    with pytest.raises(SequenceGapError) as info:
        collect(check_prefix(broken, run_id=root, through=len(broken) - 1))
    assert info.value.run_id == child


def test_check_tail_from_a_stream_cursor_knows_each_runs_next_sequence(stream):
    root = stream[0].run_id
    for cut in range(len(stream) - 1):
        cursor = StreamCursor.of(root)
        for item in stream[:cut + 1]:
            cursor = advance_stream(cursor, item)
        assert collect(check_tail(stream[cut + 1:], run_id=root, after=cursor)) == stream[cut + 1:]
    with pytest.raises(ValueError, match="belongs to the stream of run"):
        check_tail([], run_id="run-other", after=cursor)


# -- the delivery log and project_run ------------------------------------------------



def test_the_delivery_cursor_is_the_position_of_the_last_recorded_item(tmp_path, stream):
    root = stream[0].run_id
    with SqliteDeliveryLog(tmp_path / "d.db") as log:
        observer = HarnessAguiObserver()
        for n, item in enumerate(stream):
            delivered = log.record(item, observer.observe(item), root_run_id=root)
            assert log.cursor(root) == n and all(d.source_position == n for d in delivered)
        assert log.finished(root)
        assert [d.data for d in log.replay(root)] == uninterrupted(stream)
        child = children(stream)[0]
        again = next(i for i in stream if i.run_id == child and i.sequence == 1)
        with pytest.raises(AfterTerminalError):
            log.record(again, [], root_run_id=root)


def test_the_delivery_log_refuses_a_childs_item_out_of_its_order(tmp_path):
    items = real("subagent")
    root, child = items[0].run_id, children(real("subagent"))[0]
    kid = [i for i in items if i.run_id == child]
    upto = items.index(kid[2])
    with SqliteDeliveryLog(tmp_path / "d.db") as log:
        for item in items[:upto]:
            log.record(item, [], root_run_id=root)
        for wrong, fault in ((kid[1], SequenceOrderError), (kid[3], SequenceGapError)):
            with pytest.raises(fault) as info:
                log.record(wrong, [], root_run_id=root)
            assert type(info.value) is fault and log.cursor(root) == upto - 1
        assert log.cursor(root) == upto - 1


def test_project_run_restarted_at_every_position_publishes_the_uninterrupted_projection(tmp_path, stream):
    root = stream[0].run_id
    expected = uninterrupted(stream)
    for cut in range(0, len(stream), max(1, len(stream) // 12)):
        path = tmp_path / f"cut{cut}.db"
        with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log:
            for item in stream:
                journal.append(item, root_run_id=root)
            observer = HarnessAguiObserver()
            for item in stream[:cut + 1]:  # the first process recorded through ``cut``, then died
                log.record(item, observer.observe(item), root_run_id=root)
            asyncio.run(project_run(root, journal, log, poll_interval=0.005))
            assert [d.data for d in log.replay(root)] == expected
            assert [d.event_id for d in log.replay(root)] == list(range(1, len(expected) + 1))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(items=complete_delegating_histories())
def test_generated_delegating_streams_survive_a_restart_anywhere(tmp_path_factory, items):
    root = items[0].run_id
    path = tmp_path_factory.mktemp("gen") / "host.db"
    expected = uninterrupted(items)
    cut = len(items) // 3
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log:
        for item in items:
            assert journal.append(item, root_run_id=root)
        observer = HarnessAguiObserver()
        for item in items[:cut]:
            log.record(item, observer.observe(item), root_run_id=root)
        asyncio.run(project_run(root, journal, log, poll_interval=0.005))
        assert [d.data for d in log.replay(root)] == expected
        for k in (None, cut, len(items) - 1):
            prefix = [] if k is None else collect(journal.read_prefix(root, through=k))
            assert prefix + collect(journal.tail(root, after=k)) == items


# -- upgrading a delivery log of the release before streams ------------------------------

def test_a_delivery_log_of_the_layout_before_streams_is_upgraded_and_continues(tmp_path):
    items = simulated_run()
    observer = HarnessAguiObserver()
    batches = [(item, observer.observe(item)) for item in items]
    path = tmp_path / "old.db"
    cut = len(items) // 2
    runs: list[tuple[Any, ...]] = []
    events: list[tuple[Any, ...]] = []
    for item, batch in batches[:cut + 1]:
        for event in batch:
            events.append(("run-demo", len(events) + 1, item.sequence, event.type.value, agui_to_json(event)))
    runs.append(("run-demo", "thread-demo", cut, len(events), 0))
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE harness_agui_delivery_runs (run_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
                     "source_cursor INTEGER NOT NULL, last_event_id INTEGER NOT NULL, finished INTEGER NOT NULL, "
                     "crc INTEGER NOT NULL, PRIMARY KEY (run_id))")
        conn.execute("CREATE TABLE harness_agui_deliveries (run_id TEXT NOT NULL, event_id INTEGER NOT NULL, "
                     "source_sequence INTEGER NOT NULL, event_type TEXT NOT NULL, data TEXT NOT NULL, "
                     "crc INTEGER NOT NULL, PRIMARY KEY (run_id, event_id))")
        conn.executemany("INSERT INTO harness_agui_delivery_runs VALUES (?, ?, ?, ?, ?, ?)",
                         [(*r, checksum(r)) for r in runs])
        conn.executemany("INSERT INTO harness_agui_deliveries VALUES (?, ?, ?, ?, ?, ?)",
                         [(*e, checksum(e)) for e in events])
    with pytest.raises(StorageError, match="earlier release"):
        SqliteDeliveryLog(path, read_only=True)
    with SqliteDeliveryLog(path) as log:
        assert log.cursor("run-demo") == cut and log.last_event_id("run-demo") == len(events)
        with pytest.raises(SequenceOrderError):
            log.record(items[cut], [])
        for item, batch in batches[cut + 1:]:
            log.record(item, batch, expected_cursor=log.cursor("run-demo"))
        assert [d.data for d in log.replay("run-demo")] == [agui_to_json(e) for _, b in batches for e in b]


def test_a_delivery_log_that_kept_every_runs_cursor_as_json_is_upgraded_to_a_row_per_child_and_continues(
        tmp_path, stream):
    root = stream[0].run_id
    observer = HarnessAguiObserver()
    batches = [(item, observer.observe(item)) for item in stream]
    cut = next(n for n, item in enumerate(stream) if item.run_id != root) + 3
    path = tmp_path / "v2.db"
    with SqliteDeliveryLog(path) as log:
        for item, batch in batches[:cut + 1]:
            log.record(item, batch, root_run_id=root)
    # The same file as the release that kept the stream's cursors in one JSON column wrote it.
    with sqlite3.connect(path) as conn:
        run = conn.execute("SELECT run_id, thread_id, source_cursor, last_event_id, finished, last_sequence "
                           "FROM harness_agui_delivery_runs").fetchone()
        cursors = {run[0]: [run[1], run[5] + 1, bool(run[4])]}
        for child, thread, last, ended in conn.execute("SELECT run_id, thread_id, last_sequence, terminal FROM "
                                                       "harness_agui_delivery_children"):
            cursors[child] = [thread, last + 1, bool(ended)]
        conn.execute("DROP TABLE harness_agui_delivery_children")
        conn.execute("DROP TABLE harness_agui_delivery_runs")
        conn.execute("CREATE TABLE harness_agui_delivery_runs (run_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
                     "source_cursor INTEGER NOT NULL, last_event_id INTEGER NOT NULL, finished INTEGER NOT NULL, "
                     "runs TEXT NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (run_id))")
        values = (*run[:5], json.dumps(cursors, separators=(",", ":")))
        conn.execute("INSERT INTO harness_agui_delivery_runs VALUES (?, ?, ?, ?, ?, ?, ?)", (*values, checksum(values)))
    assert len(cursors) > 1
    with pytest.raises(StorageError, match="earlier release"):
        SqliteDeliveryLog(path, read_only=True)
    with SqliteDeliveryLog(path) as log:
        assert log.cursor(root) == cut
        with pytest.raises(SequenceOrderError):
            log.record(stream[cut], [], root_run_id=root)
        for item, batch in batches[cut + 1:]:
            log.record(item, batch, root_run_id=root, expected_cursor=log.cursor(root))
        assert [d.data for d in log.replay(root)] == uninterrupted(stream)
    with sqlite3.connect(path) as conn:
        upgraded = conn.execute("SELECT run_id, root_run_id, thread_id, last_sequence, terminal FROM "
                                "harness_agui_delivery_children ORDER BY run_id").fetchall()
    assert upgraded == sorted((run_id, root, next(i.thread_id for i in stream if i.run_id == run_id),
                               max(i.sequence for i in stream if i.run_id == run_id), 0)
                              for run_id in children(stream))


# -- the JSONL journal ------------------------------------------------------------------

def test_a_jsonl_file_of_one_stream_reads_whole_and_stops_at_a_position(tmp_path, stream):
    from harness_agui.wire.codec import encode
    from harness_agui.wire.jsonl import Journal

    path = tmp_path / "run.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in stream))
    assert list(Journal(path)) == stream
    assert list(Journal(path, run_id=stream[0].run_id)) == stream
    for cut in (0, len(stream) // 2, len(stream) - 1):
        assert list(Journal(path, through=cut)) == stream[:cut + 1]
        assert list(Journal(path, run_id=stream[0].run_id, through=cut)) == stream[:cut + 1]


def test_a_chosen_stream_is_told_apart_from_other_runs_in_one_file_by_its_links(tmp_path, stream):
    from harness_agui.wire.codec import encode
    from harness_agui.wire.jsonl import Journal

    other = simulated_run(run_id="run-other", thread_id="thread-other")
    mixed: list[HarnessStreamEvent] = []
    for n in range(max(len(stream), len(other))):  # one of each, in turn
        mixed += stream[n:n + 1] + other[n:n + 1]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in mixed))
    assert list(Journal(path, run_id=stream[0].run_id)) == stream
    assert list(Journal(path, run_id="run-other")) == other
    with pytest.raises(AfterTerminalError, match="an item of run 'run-other' after the terminal result"):
        list(Journal(path))  # unchosen, the file is one stream, and run-other outlives its root


def test_a_child_whose_announcement_is_not_written_yet_is_left_out_at_the_end_of_the_file(tmp_path):
    from harness_agui.wire.codec import encode
    from harness_agui.wire.jsonl import Journal

    items = real("subagent")
    child = children(items)[0]
    first = next(n for n, i in enumerate(items) if i.run_id == child)
    announcement = next(n for n, i in enumerate(items) if i.run_id == child and i.sequence == 1)
    cut = items[:announcement]  # the child's first item is written, its announcement is not
    path = tmp_path / "live.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in cut))
    assert list(Journal(path, run_id=items[0].run_id)) == cut[:first] + cut[first + 1:]
    assert list(Journal(path)) == cut  # the file as one stream: nothing to tell apart


def test_check_journal_names_each_child_run_with_its_parent_and_subagent():
    from harness_agui.wire.jsonl import check_journal

    report = check_journal(FIXTURES / "nested_subagents.jsonl")
    assert report.ok
    root, planner, worker = report.runs
    assert (root.parent_run_id, root.subagent, root.status) == (None, None, "completed")
    assert (planner.parent_run_id, planner.subagent) == (root.run_id, "planner")
    assert (worker.parent_run_id, worker.subagent) == (planner.run_id, "worker")
    assert f"subagent 'worker' of run {planner.run_id!r}" in report.describe()
