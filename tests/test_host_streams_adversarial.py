# A second reading of "a delegating Run is one stream": the journal, the
# checks, the delivery log and the JSONL reader pushed where the first tests
# do not go. Random interleavings of child Runs, random cuts, random second
# deliveries, random crash points between the journal's append and the
# delivery log's record, several threads at once, files that mix two
# delegating streams, a store of the layout before streams, and rows deleted
# by hand.

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.core.errors import HistoryError
from harness_agui.core.history import StreamCursor, advance_stream
from harness_agui.core.source import ExtensionEvent, HarnessEvent
from harness_agui.host import (
    DamagedStoreError,
    ForeignRunError,
    SequenceGapError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    check_prefix,
    check_tail,
    project_run,
)
from harness_agui.host._sqlite import checksum
from harness_agui.testing import complete_delegating_histories, simulated_run
from harness_agui.testing import projection_json as uninterrupted
from harness_agui.testing.delegation import delegating_histories
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import decode, encode
from harness_agui.wire.jsonl import Journal

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "a13n"
REAL = ("subagent", "nested_subagents", "failed_child")
SLOW = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


def real(name: str) -> list[HarnessStreamEvent]:
    return [decode(line, line=n) for n, line in enumerate((FIXTURES / f"{name}.jsonl").read_text().splitlines(), 1)]


def collect(iterator: AsyncIterator[HarnessStreamEvent]) -> list[HarnessStreamEvent]:
    async def go() -> list[HarnessStreamEvent]:
        return [item async for item in iterator]
    return asyncio.run(go())


def children(items: list[HarnessStreamEvent]) -> list[str]:
    root = items[0].run_id
    return list(dict.fromkeys(i.run_id for i in items if i.run_id != root))


def renamed(items: list[HarnessStreamEvent], tag: str) -> list[HarnessStreamEvent]:
    """The same stream with every run id (and Thread) made distinct by ``tag``, links included, so
    that two generated streams can share one file or one store."""
    runs = {i.run_id for i in items}

    def name(value: Any) -> Any:
        return f"{tag}:{value}" if isinstance(value, str) and value in runs else value

    out = []
    for item in items:
        changes: dict[str, Any] = {"run_id": name(item.run_id), "thread_id": f"{tag}:{item.thread_id}"}
        if isinstance(item, HarnessEvent) and isinstance(item.event, ExtensionEvent) \
                and isinstance(item.event.payload, dict) and item.event.payload.get("type") == "inline_delegation":
            body = dict(item.event.payload)
            for key in ("child_run_id", "parent_run_id"):
                body[key] = name(body.get(key))
            changes["event"] = attrs.evolve(item.event, payload=body)
        out.append(attrs.evolve(item, **changes))
    return out


def interleaved(a: list[HarnessStreamEvent], b: list[HarnessStreamEvent],
                picks: list[bool]) -> list[HarnessStreamEvent]:
    """``a`` and ``b`` merged, each in its own order, ``picks`` choosing (True: a) while both last."""
    out, i, j = [], 0, 0
    for pick in picks:
        if i < len(a) and (pick or j == len(b)):
            out.append(a[i])
            i += 1
        elif j < len(b):
            out.append(b[j])
            j += 1
    return out + a[i:] + b[j:]




def write_jsonl(path: Path, items: list[HarnessStreamEvent]) -> Path:
    path.write_text("".join(encode(i) + "\n" for i in items))
    return path


@pytest.fixture(params=REAL)
def stream(request) -> list[HarnessStreamEvent]:
    return real(request.param)


# -- appending: which stream an item may join ------------------------------------------------

def test_appending_a_grandchild_to_the_stream_of_its_middle_run_is_refused_and_writes_nothing(tmp_path):
    items = real("nested_subagents")
    root = items[0].run_id
    middle, grandchild = children(items)
    first = next(n for n, i in enumerate(items) if i.run_id == grandchild)
    with SqliteSourceJournal(tmp_path / "j.db") as journal:
        for item in items[:first]:
            journal.append(item, root_run_id=root)
        # ``root_run_id`` names a child Run: that is not a stream, it is part of one.
        with pytest.raises(ForeignRunError):
            journal.append(items[first], root_run_id=middle)
        # Nothing was written and the store still reads back whole and undamaged.
        assert journal.runs() == (root,)
        assert journal.root_of(middle) == root and journal.root_of(grandchild) is None
        assert journal.cursor(root) == first - 1
        assert collect(journal.read_prefix(root, through=first - 1)) == items[:first]
        for item in items[first:]:  # and the stream goes on under its real root
            assert journal.append(item, root_run_id=root)
        assert collect(journal.read_prefix(root, through=len(items) - 1)) == items


# -- rows deleted by hand: a child's item is never silently skipped ---------------------------

def _without_last_item_of_a_child(tmp_path: Path) -> tuple[SqliteSourceJournal, list[HarnessStreamEvent], int]:
    items = real("failed_child")  # the child simply stops: no later item of it shows a hole
    root, child = items[0].run_id, children(items)[0]
    last = max(n for n, i in enumerate(items) if i.run_id == child)
    journal = SqliteSourceJournal(tmp_path / "j.db")
    for item in items:
        journal.append(item, root_run_id=root)
    with sqlite3.connect(journal.path) as conn:
        assert conn.execute("DELETE FROM harness_source_items WHERE item_run_id = ? AND sequence = ?",
                            (child, items[last].sequence)).rowcount == 1
    return journal, items, last


@pytest.mark.parametrize("after", ["before it", "from the start"])
def test_a_tail_never_passes_over_a_missing_child_item_in_the_middle_of_the_stream(tmp_path, after):
    journal, items, last = _without_last_item_of_a_child(tmp_path)
    with journal:
        cursor = last - 1 if after == "before it" else None
        with pytest.raises(SequenceGapError) as info:
            collect(journal.tail(items[0].run_id, after=cursor))
        assert (info.value.run_id, info.value.expected) == (items[0].run_id, last)


def test_a_prefix_over_a_missing_child_item_names_the_missing_position(tmp_path):
    journal, items, last = _without_last_item_of_a_child(tmp_path)
    with journal:
        with pytest.raises(SequenceGapError) as info:
            collect(journal.read_prefix(items[0].run_id, through=len(items) - 1))
        assert info.value.expected == last
        # The items before the hole are still served (and nothing after it).
        assert collect(journal.read_prefix(items[0].run_id, through=last - 1)) == items[:last]


def test_a_missing_root_item_in_the_middle_still_reads_as_a_gap_of_its_position(tmp_path):
    items = simulated_run()
    with SqliteSourceJournal(tmp_path / "j.db") as journal:
        for item in items:
            journal.append(item)
        with sqlite3.connect(journal.path) as conn:
            conn.execute("DELETE FROM harness_source_items WHERE sequence = 5")
        for read in (lambda: journal.read_prefix("run-demo", through=10), lambda: journal.tail("run-demo", after=2)):
            with pytest.raises(SequenceGapError) as info:
                collect(read())
            assert (info.value.sequence, info.value.expected) == (6, 5)


# -- random streams, random second deliveries, random cuts -----------------------------------

@SLOW
@given(items=delegating_histories(), data=st.data())
def test_random_redeliveries_are_recognised_and_the_stream_reads_back_whole(tmp_path_factory, items, data):
    if not items:
        return
    root = items[0].run_id
    path = tmp_path_factory.mktemp("redeliver") / "j.db"
    written = 0
    with SqliteSourceJournal(path) as journal:
        for n, item in enumerate(items):
            # a first delivery names the root for a child's first item; later ones may or may not
            new_run = item.sequence == 0
            assert journal.append(item, root_run_id=root if new_run or data.draw(st.booleans()) else None)
            written += 1
            for again in data.draw(st.lists(st.integers(0, n), max_size=2)):
                named = data.draw(st.booleans())
                assert journal.append(items[again], root_run_id=root if named else None) is False
        assert written == len(items)
        assert journal.cursor(root) == len(items) - 1
        assert collect(journal.read_prefix(root, through=len(items) - 1)) == items
        cut = data.draw(st.one_of(st.none(), st.integers(0, len(items) - 1)))
        prefix = [] if cut is None else collect(journal.read_prefix(root, through=cut))
        if journal.finished(root):
            assert prefix + collect(journal.tail(root, after=cut)) == items
        else:  # a live stream: the tail waits for more; take what is there
            async def some() -> list[HarnessStreamEvent]:
                got: list[HarnessStreamEvent] = []
                want = len(items) - (0 if cut is None else cut + 1)
                if want == 0:
                    return got
                async for item in journal.tail(root, after=cut, poll_interval=0.001):
                    got.append(item)
                    if len(got) == want:
                        break
                return got
            assert prefix + asyncio.run(asyncio.wait_for(some(), 30)) == items


@SLOW
@given(items=complete_delegating_histories(), data=st.data())
def test_check_tail_from_the_cursor_of_any_prefix_continues_every_run_where_it_stopped(items, data):
    root = items[0].run_id
    cut = data.draw(st.integers(0, len(items) - 1))
    cursor = StreamCursor.of(root)
    for item in collect(check_prefix(items, run_id=root, through=cut)):
        cursor = advance_stream(cursor, item)
    assert cursor.last_position == cut
    assert collect(check_tail(items[cut + 1:], run_id=root, after=cursor)) == items[cut + 1:]
    # a second delivery of any item already behind the cursor is refused
    again = items[data.draw(st.integers(0, cut))]
    with pytest.raises(HistoryError):
        collect(check_tail([again], run_id=root, after=cursor))


# -- crashing between the journal and the delivery log -----------------------------------------

@SLOW
@given(items=complete_delegating_histories(), data=st.data())
def test_project_run_after_a_crash_between_append_and_record_anywhere_publishes_everything_once(
        tmp_path_factory, items, data):
    root = items[0].run_id
    expected = uninterrupted(items)
    appended = data.draw(st.integers(0, len(items)), label="appended")
    # The process died after appending ``appended`` items and recording all of them, or all but
    # the last one (it died between that item's append and its record).
    recorded = appended - data.draw(st.integers(0, min(1, appended)), label="unrecorded")
    path = tmp_path_factory.mktemp("crash") / "host.db"
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log:
        observer = HarnessAguiObserver()
        for n, item in enumerate(items[:appended]):
            journal.append(item, root_run_id=root)
            if n < recorded:
                log.record(item, observer.observe(item), root_run_id=root)

        async def restart() -> None:
            async def feed() -> None:
                for item in items[appended:]:
                    await asyncio.to_thread(journal.append, item, root_run_id=root)
                    await asyncio.sleep(0)
            feeder = asyncio.create_task(feed())
            await project_run(root, journal, log, poll_interval=0.002)
            await feeder

        asyncio.run(asyncio.wait_for(restart(), 60))
        delivered = log.replay(root)
        assert [d.data for d in delivered] == expected
        assert [d.event_id for d in delivered] == list(range(1, len(expected) + 1))
        assert log.cursor(root) == journal.cursor(root) == len(items) - 1
        # every event points at the position of the item that produced it
        observer = HarnessAguiObserver()
        positions = [n for n, item in enumerate(items) for _ in observer.observe(item)]
        assert [d.source_position for d in delivered] == positions


# -- several threads at once ---------------------------------------------------------------------

def test_two_streams_and_their_redeliveries_appended_from_four_threads_are_each_stored_once(tmp_path):
    a = renamed(real("nested_subagents"), "a")
    b = renamed(real("failed_child"), "b")
    results: dict[tuple[str, int], list[bool]] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []
    with SqliteSourceJournal(tmp_path / "j.db") as journal:
        def worker(items: list[HarnessStreamEvent]) -> None:
            try:
                root = items[0].run_id
                for item in items:
                    done = journal.append(item, root_run_id=root)
                    with lock:
                        results.setdefault((item.run_id, item.sequence), []).append(done)
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(s,)) for s in (a, b, a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert all(sorted(v) == [False, True] for v in results.values())
        assert len(results) == len(a) + len(b)
        assert set(journal.runs()) == {a[0].run_id, b[0].run_id}
        assert collect(journal.read_prefix(a[0].run_id, through=len(a) - 1)) == a
        assert collect(journal.read_prefix(b[0].run_id, through=len(b) - 1)) == b


# -- the layout before streams ------------------------------------------------------------------

_V1_SCHEMA = (
    "CREATE TABLE harness_source_items (run_id TEXT NOT NULL, sequence INTEGER NOT NULL, thread_id TEXT NOT NULL, "
    "terminal INTEGER NOT NULL, line TEXT NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (run_id, sequence))",
    "CREATE TABLE harness_source_runs (run_id TEXT NOT NULL, thread_id TEXT NOT NULL, last_sequence INTEGER NOT NULL, "
    "terminal INTEGER NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (run_id))",
    "CREATE INDEX harness_source_runs_thread ON harness_source_runs (thread_id)",
)


def _v1_journal(path: Path, runs: list[list[HarnessStreamEvent]]) -> None:
    """A journal file as the release before streams wrote it: one Run per key, the Runs' items
    interleaved in append order (so rowids do not follow any one Run)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        for statement in _V1_SCHEMA:
            conn.execute(statement)
        heads: dict[str, tuple[Any, ...]] = {}
        longest = max(len(r) for r in runs)
        for n in range(longest):
            for run in runs:
                if n < len(run):
                    item = run[n]
                    row = (item.run_id, item.sequence, item.thread_id, int(item.sequence == len(run) - 1 and
                                                                          not isinstance(item, HarnessEvent)),
                           encode(item))
                    conn.execute("INSERT INTO harness_source_items VALUES (?, ?, ?, ?, ?, ?)", (*row, checksum(row)))
                    head = (item.run_id, item.thread_id, item.sequence, row[3])
                    if item.run_id not in heads:
                        conn.execute("INSERT INTO harness_source_runs VALUES (?, ?, ?, ?, ?)", (*head, checksum(head)))
                    else:
                        conn.execute("UPDATE harness_source_runs SET last_sequence = ?, terminal = ?, crc = ? "
                                     "WHERE run_id = ?", (head[2], head[3], checksum(head), head[0]))
                    heads[item.run_id] = head


def test_a_journal_of_the_layout_before_streams_is_upgraded_whole_with_its_indexes(tmp_path):
    done = simulated_run(run_id="run-done", thread_id="thread-1")
    live = real("subagent")
    root = live[0].run_id
    own = [i for i in live if i.run_id == root]
    cut = own.index(next(i for i in own if i.sequence == 16))  # the root is about to delegate
    path = tmp_path / "old.db"
    _v1_journal(path, [done, own[:cut + 1]])
    with SqliteSourceJournal(path) as journal:
        assert journal.runs() == ("run-done", root)
        assert journal.runs("thread-1") == ("run-done",)
        assert journal.cursor("run-done") == len(done) - 1 and journal.finished("run-done")
        assert journal.cursor(root) == cut and not journal.finished(root)
        assert collect(journal.read_prefix("run-done", through=len(done) - 1)) == done
        assert all(not journal.append(i) for i in done)  # second deliveries are still recognised
        # the upgraded root goes on delegating: its stream continues at the next position
        rest = live[live.index(own[cut]) + 1:]
        for item in rest:
            assert journal.append(item, root_run_id=root)
        assert collect(journal.read_prefix(root, through=cut + len(rest))) == live
    with sqlite3.connect(path) as conn:
        schema = {name: sql for name, sql in conn.execute("SELECT name, sql FROM sqlite_master")}
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert not [n for n in schema if "upgrading" in n]
        assert "UNIQUE" in schema["harness_source_items_run"]
        assert {"harness_source_runs_thread", "harness_source_runs_root"} <= set(schema)
        positions = conn.execute("SELECT run_id, position, item_run_id, sequence FROM harness_source_items "
                                 "WHERE run_id = 'run-done' ORDER BY position").fetchall()
        assert positions == [("run-done", n, "run-done", n) for n in range(len(done))]


def test_a_damaged_row_of_the_layout_before_streams_stops_the_upgrade_and_changes_nothing(tmp_path):
    done = simulated_run(run_id="run-done", thread_id="thread-1")
    path = tmp_path / "old.db"
    _v1_journal(path, [done])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE harness_source_items SET line = line || ' ' WHERE sequence = 3")
        before = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    with pytest.raises(DamagedStoreError):
        SqliteSourceJournal(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == before
        assert conn.execute("SELECT COUNT(*) FROM harness_source_items").fetchone() == (len(done),)


# -- the JSONL reader: choosing one stream in a file of several -----------------------------------

@SLOW
@given(a=delegating_histories().filter(bool), b=delegating_histories(), data=st.data())
def test_a_file_mixing_two_delegating_streams_gives_each_chosen_stream_whole_and_cut_anywhere(
        tmp_path_factory, a, b, data):
    a, b = renamed(a, "a"), renamed(b, "b")
    picks = data.draw(st.lists(st.booleans(), min_size=len(a) + len(b), max_size=len(a) + len(b)))
    path = write_jsonl(tmp_path_factory.mktemp("mixed") / "mixed.jsonl", interleaved(a, b, picks))
    # A child never announced (its stream cut, or its root ended, between its first item and its
    # announcement) cannot be told apart from another stream's Run and is left out (see
    # test_a_child_cut_off_before_its_announcement_by_the_roots_end_is_kept_only_by_a_one_stream_read).
    a_read = announced_only(a)
    assert list(Journal(path, run_id=a[0].run_id)) == a_read
    cut = data.draw(st.integers(0, len(a_read) - 1))
    assert list(Journal(path, run_id=a[0].run_id, through=cut)) == a_read[:cut + 1]
    if b:
        assert list(Journal(path, run_id=b[0].run_id)) == announced_only(b)


def announced_only(items: list[HarnessStreamEvent]) -> list[HarnessStreamEvent]:
    root = items[0].run_id
    pending = {i.run_id for i in items if i.sequence == 0} - {i.run_id for i in items if i.sequence == 1} - {root}
    return [i for i in items if i.run_id not in pending]


def _cancelled_before_the_childs_announcement() -> list[HarnessStreamEvent]:
    from harness_agui.core.source import HarnessRunResultEvent, RunResult

    items = real("subagent")
    root, child = items[0].run_id, children(items)[0]
    first = next(n for n, i in enumerate(items) if i.run_id == child)
    last_root = [i for i in items[:first] if i.run_id == root][-1]
    end = HarnessRunResultEvent(thread_id=last_root.thread_id, run_id=root, sequence=last_root.sequence + 1,
                                occurred_at=items[first].occurred_at, result=RunResult(status="cancelled"))
    return [*items[:first + 1], end]


def test_a_child_cut_off_before_its_announcement_by_the_roots_end_is_kept_only_by_a_one_stream_read(tmp_path):
    # The documented limit of choosing a stream by ``run_id``: a child Run's first item carries nothing
    # that links it to its root, so a child never announced before its root ended cannot be told apart
    # from another stream's Run and is left out; a file read as one stream (no ``run_id``) keeps it.
    items = _cancelled_before_the_childs_announcement()
    path = write_jsonl(tmp_path / "cancelled.jsonl", items)
    live = uninterrupted(items)
    whole = HarnessAguiObserver()
    asyncio.run(whole.resume(Journal(path)))
    assert [agui_to_json(e) for e in whole.snapshot()] == live
    child = items[-2]
    assert child.run_id != items[0].run_id and child.sequence == 0
    assert list(Journal(path, run_id=items[0].run_id)) == items[:-2] + items[-1:]


def _after_a_run_that_died_at_its_first_item(root_items: int) -> tuple[list[HarnessStreamEvent],
                                                                        list[HarnessStreamEvent]]:
    """A file in which a Run died after its first item, then a root Run wrote ``root_items`` more
    items and delegated to a child, whose announcement comes after an item of a third Run. Returns
    (the file's items, the root's stream)."""
    from harness_agui.testing.delegation import RunWriter

    dead = RunWriter("thread-dead", "run-dead").run_started().items
    other = RunWriter("thread-other", "run-other").run_started().observation("x", 1).items
    root = RunWriter("thread-root", "run-root").run_started()
    for k in range(root_items):
        root.observation("tick", k)
    body = list(root.items)
    child = RunWriter("thread-child", "run-child").run_started()
    child.delegation("started", child_run_id="run-child", subagent="helper", parent_run_id="run-root",
                     parent_tool_call_id="call-1", status="running")
    root.delegation("completed", child_run_id="run-child", subagent="helper", parent_run_id="run-root",
                    parent_tool_call_id="call-1", status="completed").cancelled()
    end = root.items[len(body):]
    c0, c1 = child.items
    return dead + body + [c0, other[0], other[1], c1] + end, body + [c0, c1] + end


@pytest.mark.parametrize("root_items", [10, 4093, 4094, 4095])
def test_the_streams_own_items_never_push_a_waiting_child_out_of_the_held_back_items(tmp_path, root_items):
    lines, expected = _after_a_run_that_died_at_its_first_item(root_items)
    path = write_jsonl(tmp_path / "long.jsonl", lines)
    assert list(Journal(path, run_id="run-root")) == expected


@pytest.mark.parametrize("name", REAL)
def test_a_chosen_stream_whose_childs_announcement_was_lost_is_not_served_without_that_child(tmp_path, name):
    items = real(name)
    child = children(items)[0]
    lost = next(n for n, i in enumerate(items) if i.run_id == child and i.sequence == 1)
    path = write_jsonl(tmp_path / "hole.jsonl", items[:lost] + items[lost + 1:])
    # Without a chosen Run the hole is found (a gap in the child's sequences) ...
    with pytest.raises(SequenceGapError):
        list(Journal(path))
    # ... and a chosen stream must not quietly drop the whole child instead: a retention gap is
    # detected, never skipped (SPEC section 7).
    with pytest.raises(HistoryError):
        list(Journal(path, run_id=items[0].run_id))


def test_a_host_upgraded_mid_run_projects_the_delegation_that_follows_without_a_seam(tmp_path):
    live = real("subagent")
    root = live[0].run_id
    first_child = next(n for n, i in enumerate(live) if i.run_id != root)
    before = live[:first_child]  # the old release stored these, and delivered the first few
    delivered = len(before) // 2
    path = tmp_path / "old.db"
    _v1_journal(path, [before])
    observer = HarnessAguiObserver()
    events: list[tuple[Any, ...]] = []
    for item in before[:delivered]:
        for event in observer.observe(item):
            events.append((root, len(events) + 1, item.sequence, event.type.value, agui_to_json(event)))
    head = (root, before[0].thread_id, delivered - 1, len(events), 0)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE harness_agui_delivery_runs (run_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
                     "source_cursor INTEGER NOT NULL, last_event_id INTEGER NOT NULL, finished INTEGER NOT NULL, "
                     "crc INTEGER NOT NULL, PRIMARY KEY (run_id))")
        conn.execute("CREATE TABLE harness_agui_deliveries (run_id TEXT NOT NULL, event_id INTEGER NOT NULL, "
                     "source_sequence INTEGER NOT NULL, event_type TEXT NOT NULL, data TEXT NOT NULL, "
                     "crc INTEGER NOT NULL, PRIMARY KEY (run_id, event_id))")
        conn.execute("INSERT INTO harness_agui_delivery_runs VALUES (?, ?, ?, ?, ?, ?)", (*head, checksum(head)))
        conn.executemany("INSERT INTO harness_agui_deliveries VALUES (?, ?, ?, ?, ?, ?)",
                         [(*e, checksum(e)) for e in events])
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log:
        assert log.cursor(root) == delivered - 1 and journal.cursor(root) == len(before) - 1

        async def go() -> None:
            async def feed() -> None:
                for item in live[first_child:]:
                    await asyncio.to_thread(journal.append, item, root_run_id=root)
            feeder = asyncio.create_task(feed())
            await project_run(root, journal, log, poll_interval=0.002)
            await feeder

        asyncio.run(asyncio.wait_for(go(), 60))
        assert [d.data for d in log.replay(root)] == uninterrupted(live)
        assert log.cursor(root) == journal.cursor(root) == len(live) - 1


# -- the delivery log: second records, records out of order, two recorders ---------------------

@SLOW
@given(items=delegating_histories().filter(bool), data=st.data())
def test_the_delivery_log_refuses_every_record_but_the_streams_next_item_and_writes_nothing(
        tmp_path_factory, items, data):
    from harness_agui.host import HistoryError

    root = items[0].run_id
    path = tmp_path_factory.mktemp("log") / "d.db"
    observer = HarnessAguiObserver()
    with SqliteDeliveryLog(path) as log:
        # Every item already recorded is refused, and every later item but the next one of its own Run
        # (a new child's first item included: a child may join the stream at any point, and which may
        # is the observer's check): the log knows each Run's order, not how the Runs interleave.
        due: dict[str, int] = {}

        def refused(k: int, n: int) -> bool:
            if k == n:
                return False
            if k < n or n == 0:
                return True
            return items[k].sequence != due.get(items[k].run_id, 0)

        for n, item in enumerate(items):
            candidates = [k for k in range(len(items)) if refused(k, n)]
            if not candidates:
                candidates = [n]  # (nothing to try: draws nothing below)
            for wrong in data.draw(st.lists(st.sampled_from(candidates), max_size=2 if candidates != [n] else 0)):
                last = log.last_event_id(root) if n else 0
                with pytest.raises(HistoryError):
                    log.record(items[wrong], [], root_run_id=root)
                assert log.cursor(root) == (n - 1 if n else None)
                assert (log.last_event_id(root) if n else 0) == last
            log.record(item, observer.observe(item), root_run_id=root, expected_cursor=n - 1 if n else None)
            due[item.run_id] = item.sequence + 1
        assert [d.data for d in log.replay(root)] == [agui_to_json(e) for e in observer.snapshot()]


def test_two_recorders_racing_on_one_stream_record_each_item_once(tmp_path):
    from harness_agui.host import HistoryError, ProjectorConflictError

    items = real("nested_subagents")
    root = items[0].run_id
    wins: list[int] = []
    errors: list[BaseException] = []
    with SqliteDeliveryLog(tmp_path / "d.db") as log:
        def recorder() -> None:
            observer = HarnessAguiObserver()
            try:
                for n, item in enumerate(items):
                    events = observer.observe(item)
                    try:
                        log.record(item, events, root_run_id=root, expected_cursor=n - 1 if n else None)
                        wins.append(n)
                    except (ProjectorConflictError, HistoryError):
                        pass
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=recorder) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert sorted(wins) == list(range(len(items)))
        delivered = log.replay(root)
        assert [d.data for d in delivered] == uninterrupted(items)
        assert [d.event_id for d in delivered] == list(range(1, len(delivered) + 1))


def test_an_upgrade_of_a_journal_longer_than_a_page_keeps_every_row_and_its_order(tmp_path):
    from harness_agui.testing.delegation import RunWriter

    def long_run(run_id: str, n: int) -> list[HarnessStreamEvent]:
        w = RunWriter(f"thread-{run_id}", run_id).run_started()
        for k in range(n):
            w.observation("tick", k)
        return w.cancelled().items

    runs = [long_run("run-a", 700), long_run("run-b", 450), simulated_run(run_id="run-c", thread_id="t")]
    path = tmp_path / "old.db"
    _v1_journal(path, runs)
    with SqliteSourceJournal(path) as journal:
        assert journal.runs() == ("run-a", "run-b", "run-c")
        for run in runs:
            assert collect(journal.read_prefix(run[0].run_id, through=len(run) - 1)) == run
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM harness_source_items").fetchone() == (sum(map(len, runs)),)


@pytest.mark.parametrize("name", ["simulated", *REAL])
def test_a_tail_from_a_cursor_beyond_what_is_stored_waits_for_the_stream_to_reach_it(tmp_path, name):
    items = simulated_run() if name == "simulated" else real(name)
    root = items[0].run_id
    stored, after = len(items) // 3, 2 * len(items) // 3  # the journal lags behind the cursor
    with SqliteSourceJournal(tmp_path / "j.db") as journal:
        for item in items[:stored]:
            journal.append(item, root_run_id=root)

        async def go() -> list[HarnessStreamEvent]:
            async def feed() -> None:
                for item in items[stored:]:
                    await asyncio.sleep(0.001)
                    await asyncio.to_thread(journal.append, item, root_run_id=root)
            feeder = asyncio.create_task(feed())
            got = [item async for item in journal.tail(root, after=after, poll_interval=0.001)]
            await feeder
            return got

        assert asyncio.run(asyncio.wait_for(go(), 30)) == items[after + 1:]


@pytest.mark.parametrize("bad", [-1, "3", True, 2.0])
def test_a_tail_with_a_bad_cursor_raises_at_once_instead_of_waiting(tmp_path, bad):
    with SqliteSourceJournal(tmp_path / "j.db") as journal:
        with pytest.raises((TypeError, ValueError)):
            journal.tail("run-unknown", after=bad)
