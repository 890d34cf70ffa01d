"""The SQLite delivery log's own tests: SSE ids, Last-Event-ID parsing, and project_run's restart
protocol where it depends on SQLite. The contract it shares with the PostgreSQL log (ids, replay,
record, project_run) is tested once, on both backends, in tests/contract."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import BaseEvent, TextMessageContentEvent

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import (
    Delivery,
    ForeignEventIdError,
    IncompletePrefixError,
    ProjectorConflictError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    UnknownEventIdError,
    parse_last_event_id,
    project_run,
)
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.testing import projection_json as uninterrupted


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "host.db"


@pytest.fixture
def log(db: Path) -> Any:
    deliveries = SqliteDeliveryLog(db, poll_interval=0.005, synchronous="NORMAL")
    yield deliveries
    deliveries.close()


@pytest.fixture
def journal(db: Path) -> Any:
    j = SqliteSourceJournal(db, poll_interval=0.005, synchronous="NORMAL")
    yield j
    j.close()


def projected(items: list[HarnessStreamEvent], processor: Any = None) -> list[tuple[HarnessStreamEvent,
                                                                                    tuple[BaseEvent, ...]]]:
    observer = HarnessAguiObserver(processor)
    return [(item, observer.observe(item)) for item in items]




async def collect(iterator: AsyncIterator[Any]) -> list[Any]:
    return [x async for x in iterator]


# -- ids -------------------------------------------------------------------------------

def test_record_refuses_what_is_not_an_item_or_an_event(log):
    item = SourceBuilder().observation("x", 1).items[0]
    with pytest.raises(TypeError):
        log.record("item", ())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        log.record(item, [{"type": "CUSTOM"}])  # type: ignore[list-item]
    assert log.cursor("run-1") is None


# -- replay and Last-Event-ID ----------------------------------------------------------------

def test_last_event_id_values_are_parsed_strictly(log):
    items = SourceBuilder("t", "r").user("hi").items
    for item, events in projected(items):
        log.record(item, events)
    second = log.replay("r")[1].sse_id
    assert parse_last_event_id(None, run_id="r") == 0
    assert parse_last_event_id("", run_id="r") == 0
    assert parse_last_event_id(f" {second} ", run_id="r") == 2
    assert parse_last_event_id(3, run_id="r") == 3
    for bad in ("-1", "abc", "1.5", "١٢", "17", -4, True, 2.0):
        with pytest.raises(ValueError):
            parse_last_event_id(bad, run_id="r")  # type: ignore[arg-type]


def _id_line(frame: str) -> str:
    head = frame.split("\n", 1)[0]
    assert head.startswith("id: ")
    return head.removeprefix("id: ")


def _two_runs(log: Any) -> None:
    for run_id in ("run-a", "run-b"):
        b = SourceBuilder("t", run_id).user("hello").observation("x", 1).text(0, ["a", "b", "c"])
        items = b.completed("ok").items
        for item, events in projected(items):
            log.record(item, events)


def test_an_event_id_names_its_run_and_stays_a_short_valid_sse_id(log):
    _two_runs(log)
    a = asyncio.run(collect(log.sse("run-a")))
    b = asyncio.run(collect(log.sse("run-b")))
    ids_a, ids_b = [_id_line(f) for f in a], [_id_line(f) for f in b]
    assert len(set(ids_a)) == len(ids_a) and not set(ids_a) & set(ids_b)
    for event_id in ids_a + ids_b:
        assert len(event_id) <= 24 and event_id.isascii() and event_id.isprintable() and " " not in event_id
    assert [d.sse_id for d in log.replay("run-a")] == ids_a
    assert [parse_last_event_id(i, run_id="run-a") for i in ids_a] == list(range(1, len(ids_a) + 1))


def test_a_last_event_id_copied_from_another_run_is_refused_before_anything_is_streamed(log):
    _two_runs(log)
    foreign = _id_line(asyncio.run(collect(log.sse("run-b")))[2])  # in range for run-a too
    with pytest.raises(ForeignEventIdError) as info:
        log.replay("run-a", after=foreign)
    assert (info.value.run_id, info.value.event_id, info.value.last_event_id) == ("run-a", foreign, None)
    assert isinstance(info.value, UnknownEventIdError)
    with pytest.raises(ForeignEventIdError):
        log.follow("run-a", after=foreign)          # from the call: no response has been started yet
    with pytest.raises(ForeignEventIdError):
        log.sse("run-a", last_event_id=foreign)
    with pytest.raises(ForeignEventIdError):
        parse_last_event_id(foreign, run_id="run-a")


@pytest.mark.parametrize("bad", ["17", " 3 ", "-1", "abc", "1.5", "١٢", "3.zzzzzzzz", "03.{tag}", "3.{tag}x",
                                 "3.{tag}.{tag}", "3.{TAG}", "99999999999999999999.{tag}", "3:{tag}"])
def test_a_malformed_or_bare_last_event_id_is_refused_naming_it(log, bad):
    _two_runs(log)
    tag = log.replay("run-a")[0].sse_id.split(".")[1]
    bad = bad.format(tag=tag, TAG=tag.upper())
    with pytest.raises(ForeignEventIdError, match="Last-Event-ID") as info:
        log.replay("run-a", after=bad)
    assert info.value.event_id == bad
    with pytest.raises(ForeignEventIdError):
        log.sse("run-a", last_event_id=bad)


def test_an_int_after_is_the_logs_own_event_number_and_blank_means_from_the_start(log):
    _two_runs(log)
    everything = log.replay("run-a")
    assert log.replay("run-a", after=3) == everything[3:]          # the Host's own bookkeeping
    assert log.replay("run-a", after=everything[3].sse_id) == everything[4:]
    assert log.replay("run-a", after=" " + everything[3].sse_id + " ") == everything[4:]
    assert log.replay("run-a", after="") == log.replay("run-a", after=None) == everything
    assert parse_last_event_id(None, run_id="r") == parse_last_event_id("  ", run_id="r") == 0
    for bad in (-4, True, 2.0):
        with pytest.raises(ValueError):
            parse_last_event_id(bad, run_id="run-a")  # type: ignore[arg-type]


def test_a_delivery_parses_back_to_an_equal_detached_event(log):
    items = SourceBuilder("t", "r").text(0, ["Hel", "lo"]).items
    pairs = projected(items)
    log.record(*pairs[0])
    item, events = pairs[1]
    delivered = log.record(item, events)
    event = delivered[0].event
    assert isinstance(event, TextMessageContentEvent) and event == events[0]
    event.delta = "changed"
    assert delivered[0].event.delta == "Hel"
    assert log.replay("r", after=delivered[0].event_id - 1)[0].event == events[0]


# -- project_run: the protocol ---------------------------------------------------------------

def test_project_run_on_a_finished_run_records_nothing_more(journal, log):
    items = simulated_run()
    for item in items:
        journal.append(item)
    asyncio.run(project_run("run-demo", journal, log))
    before = log.replay("run-demo")
    observer = asyncio.run(project_run("run-demo", journal, log))
    assert observer.finished and log.replay("run-demo") == before


def test_a_restart_whose_journal_lost_delivered_items_fails_without_recording(db, log, tmp_path):
    items = simulated_run()
    other = SqliteSourceJournal(tmp_path / "elsewhere.db", synchronous="NORMAL")
    for item in items[:10]:
        other.append(item)
    for item, events in projected(items[:20]):
        log.record(item, events)
    with pytest.raises(IncompletePrefixError):
        asyncio.run(project_run("run-demo", other, log))
    assert log.cursor("run-demo") == 19
    other.close()


def test_the_journal_and_the_delivery_log_may_share_one_file(db, journal, log):
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"harness_source_items", "harness_agui_delivery_runs", "harness_agui_deliveries"} <= tables


def test_a_projector_that_started_while_another_was_recording_reports_the_conflict_not_a_mismatch(db, journal,
                                                                                                    log):
    # The slower projector reads the delivery cursor (20), and while it rebuilds the projection up to
    # there, the first one records on to 40 and beyond. What it rebuilt is right; the log moved under it.
    items = simulated_run()
    for item in items:
        journal.append(item)
    first_at_20, second_resuming, first_at_40 = threading.Event(), threading.Event(), threading.Event()

    def first_progress(delivered: tuple[Delivery, ...]) -> None:
        cursor = log.cursor("run-demo")
        if cursor == 20:
            first_at_20.set()
            assert second_resuming.wait(10)
        if cursor == 40:
            first_at_40.set()

    def slow_identity(item: HarnessStreamEvent, event: BaseEvent) -> BaseEvent:
        if not second_resuming.is_set():
            second_resuming.set()
            assert first_at_40.wait(10)
        return event

    outcome: dict[str, Any] = {}

    def first() -> None:
        with SqliteDeliveryLog(db, poll_interval=0.005, synchronous="NORMAL") as own:
            outcome["first"] = asyncio.run(project_run("run-demo", journal, own, publish=first_progress))

    thread = threading.Thread(target=first)
    thread.start()
    assert first_at_20.wait(10)
    with pytest.raises(ProjectorConflictError, match="another projector recorded events") as info:
        asyncio.run(project_run("run-demo", journal, log, processor=slow_identity))
    thread.join(10)
    assert (info.value.run_id, info.value.cursor) == ("run-demo", 20) and info.value.found >= 40
    assert outcome["first"].finished
    everything = log.replay("run-demo")
    assert [d.data for d in everything] == uninterrupted(items)
    assert [d.event_id for d in everything] == list(range(1, len(everything) + 1))


def test_projectors_racing_from_threads_either_finish_or_report_the_conflict_and_the_log_stays_whole(tmp_path):
    items = simulated_run()
    expected = uninterrupted(items)
    rng = random.Random(9)
    for trial in range(8):
        path = tmp_path / f"race-{trial}.db"
        with SqliteSourceJournal(path, poll_interval=0.002, synchronous="OFF") as journal:
            for item in items[:rng.randrange(len(items))]:
                journal.append(item)
            outcomes: list[Any] = []

            def projector(delay: float, path: Path = path, outcomes: list[Any] = outcomes) -> None:
                time.sleep(delay)
                with SqliteDeliveryLog(path, poll_interval=0.002, synchronous="OFF") as own:
                    try:
                        outcomes.append(asyncio.run(project_run("run-demo", journal, own)))
                    except Exception as e:  # noqa: BLE001 (judged below)
                        outcomes.append(e)

            threads = [threading.Thread(target=projector, args=(rng.random() * 0.05,)) for _ in range(3)]
            for t in threads:
                t.start()
            for item in items:
                journal.append(item)
                if rng.random() < 0.2:
                    time.sleep(0.001)
            for t in threads:
                t.join(30)
            kinds = sorted(type(o).__name__ for o in outcomes)
            assert set(kinds) <= {"HarnessAguiObserver", "ProjectorConflictError"}, (trial, outcomes)
            assert "HarnessAguiObserver" in kinds
            with SqliteDeliveryLog(path) as log:
                everything = log.replay("run-demo")
            assert [d.data for d in everything] == expected
            assert [d.event_id for d in everything] == list(range(1, len(expected) + 1))
