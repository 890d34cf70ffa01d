"""The durable AG-UI delivery log, SSE output with ids, and project_run's restart protocol."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import BaseEvent, TextMessageContentEvent
from ag_ui_validate.pytest_plugin import assert_valid_agui

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import (
    AfterTerminalError,
    Delivery,
    DeliveryMismatchError,
    DeliveryOrderError,
    ForeignEventIdError,
    ForeignRunError,
    IncompletePrefixError,
    ProjectorConflictError,
    SequenceGapError,
    SequenceOrderError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    UnknownEventIdError,
    parse_last_event_id,
    project_run,
)
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.wire.agui import agui_to_json


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


def uninterrupted(items: list[HarnessStreamEvent]) -> list[str]:
    return [agui_to_json(e) for _, events in projected(items) for e in events]


async def collect(iterator: AsyncIterator[Any]) -> list[Any]:
    return [x async for x in iterator]


# -- ids -------------------------------------------------------------------------------

def test_every_published_event_gets_the_next_id_of_its_run(log):
    items = simulated_run()
    ids: list[int] = []
    for item, events in projected(items):
        delivered = log.record(item, events)
        assert [d.source_position for d in delivered] == [item.sequence] * len(events)
        assert [d.data for d in delivered] == [agui_to_json(e) for e in events]
        ids.extend(d.event_id for d in delivered)
    assert ids == list(range(1, len(ids) + 1))
    assert log.last_event_id("run-demo") == len(ids)
    assert log.cursor("run-demo") == items[-1].sequence
    assert log.finished("run-demo")


def test_event_ids_are_independent_of_source_sequences_and_of_other_runs(log):
    first = SourceBuilder("t", "run-a").observation("hello", 0).observation("x", 1).completed("ok").items
    second = SourceBuilder("t", "run-b", first_sequence=0).completed("ok").items
    a = [d for item, events in projected(first) for d in log.record(item, events)]
    b = [d for item, events in projected(second) for d in log.record(item, events)]
    assert [d.event_id for d in a] == [1, 2, 3, 4]
    assert [d.source_position for d in a] == [0, 0, 1, 2]
    assert [d.event_id for d in b] == [1, 2]


def test_an_item_whose_events_were_all_dropped_still_advances_the_cursor(log):
    items = SourceBuilder("t", "r").observation("x", 1).observation("y", 2).items
    log.record(items[0], ())
    assert (log.cursor("r"), log.last_event_id("r")) == (0, 0)
    (_, events), = projected(items[:1])
    log.record(items[1], events[:1])
    assert (log.cursor("r"), log.last_event_id("r")) == (1, 1)


def test_recording_an_item_twice_skipping_one_or_after_the_terminal_is_refused_and_writes_nothing(log):
    items = SourceBuilder("t", "r").observation("x", 1).observation("y", 2).observation("z", 3).completed("ok").items
    pairs = projected(items)
    log.record(*pairs[0])
    log.record(*pairs[1])
    with pytest.raises(DeliveryOrderError, match="sequence repeated: 2 was due") as repeat:
        log.record(*pairs[1])
    assert (repeat.value.sequence, repeat.value.cursor) == (1, 1)
    assert type(repeat.value.__cause__) is SequenceOrderError
    with pytest.raises(DeliveryOrderError, match="sequence 2 missing") as skip:
        log.record(*pairs[3])
    assert type(skip.value.__cause__) is SequenceGapError
    assert (log.cursor("r"), log.last_event_id("r")) == (1, 3)
    log.record(*pairs[2])
    log.record(*pairs[3])
    with pytest.raises(DeliveryOrderError, match="after the terminal result at sequence 3") as late:
        log.record(SourceBuilder("t", "r", first_sequence=4).observation("late", 0).items[0], ())
    assert type(late.value.__cause__) is AfterTerminalError
    assert log.cursor("r") == 3


def test_a_runs_first_record_is_sequence_0_and_later_ones_keep_its_thread(log):
    items = SourceBuilder("t", "r").observation("x", 1).observation("y", 2).items
    with pytest.raises(DeliveryOrderError, match="sequence 0 missing") as late:
        log.record(items[1], ())
    assert type(late.value.__cause__) is SequenceGapError
    log.record(items[0], ())
    other = SourceBuilder("t-other", "r", first_sequence=1).observation("y", 2).items[0]
    with pytest.raises(DeliveryOrderError, match="thread 't-other'") as foreign:
        log.record(other, ())
    assert type(foreign.value.__cause__) is ForeignRunError
    assert (log.cursor("r"), log.last_event_id("r")) == (0, 0)


def test_record_refuses_what_is_not_an_item_or_an_event(log):
    item = SourceBuilder().observation("x", 1).items[0]
    with pytest.raises(TypeError):
        log.record("item", ())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        log.record(item, [{"type": "CUSTOM"}])  # type: ignore[list-item]
    assert log.cursor("run-1") is None


# -- replay and Last-Event-ID ----------------------------------------------------------------

def test_replay_after_a_last_event_id_gives_everything_after_it(log):
    for item, events in projected(simulated_run()):
        log.record(item, events)
    everything = log.replay("run-demo")
    assert [d.event_id for d in everything] == list(range(1, len(everything) + 1))
    assert log.replay("run-demo", after=everything[39].sse_id) == everything[40:]
    assert log.replay("run-demo", after=40) == everything[40:]
    assert log.replay("run-demo", after=len(everything)) == ()


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


def test_an_id_the_log_never_assigned_is_refused(log):
    for item, events in projected(SourceBuilder("t", "r").observation("hi", 0).items):
        log.record(item, events)
    with pytest.raises(UnknownEventIdError) as info:
        log.replay("r", after=9)
    assert (info.value.event_id, info.value.last_event_id) == (9, 2)
    with pytest.raises(UnknownEventIdError):
        asyncio.run(collect(log.follow("other-run", after=1)))


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


# -- SSE --------------------------------------------------------------------------------

def test_sse_frames_carry_the_durable_ids_and_the_event_json(log):
    items = simulated_run()
    expected = uninterrupted(items)
    for item, events in projected(items):
        log.record(item, events)
    seventieth = log.replay("run-demo")[69]
    frames = asyncio.run(collect(log.sse("run-demo", last_event_id=seventieth.sse_id)))
    assert len(frames) == len(expected) - 70
    tag = seventieth.sse_id.removeprefix("70.")
    for n, frame in enumerate(frames, start=71):
        head, data, blank = frame.split("\n", 2)
        assert head == f"id: {n}.{tag}"
        assert data == f"data: {expected[n - 1]}"
        assert blank == "\n"


def test_the_delivered_stream_of_a_complete_run_is_valid_ag_ui(log):
    for item, events in projected(simulated_run()):
        log.record(item, events)
    assert_valid_agui([json.loads(d.data) for d in log.replay("run-demo")])


def test_follow_waits_for_new_records_and_ends_after_the_terminal_event(log):
    items = simulated_run()
    pairs = projected(items)

    async def scenario() -> list[Delivery]:
        async def host() -> None:
            for item, events in pairs:
                await asyncio.sleep(0.001)
                log.record(item, events)

        writer = asyncio.create_task(host())
        seen = await collect(log.follow("run-demo"))
        await writer
        return seen

    seen = asyncio.run(scenario())
    assert [d.data for d in seen] == uninterrupted(items)
    assert [d.event_id for d in seen] == list(range(1, len(seen) + 1))


def test_a_client_reconnecting_with_its_last_id_sees_every_event_exactly_once(log):
    items = simulated_run()
    pairs = projected(items)
    received: list[Delivery] = []
    last: str | None = None
    for start in range(0, len(pairs), 7):
        for item, events in pairs[start:start + 7]:
            log.record(item, events)
        frames = log.replay("run-demo", after=last)
        received.extend(frames)
        if frames:
            last = frames[-1].sse_id
    assert [d.event_id for d in received] == list(range(1, len(received) + 1))
    assert [d.data for d in received] == uninterrupted(items)


# -- project_run: the protocol ---------------------------------------------------------------

def test_project_run_records_a_whole_run_from_the_journal(journal, log):
    items = simulated_run()
    published: list[Delivery] = []

    async def scenario() -> HarnessAguiObserver:
        async def harness() -> None:
            for item in items:
                journal.append(item)
                await asyncio.sleep(0.001)

        writer = asyncio.create_task(harness())
        observer = await project_run("run-demo", journal, log, publish=published.extend)
        await writer
        return observer

    observer = asyncio.run(scenario())
    assert observer.finished
    assert [d.data for d in published] == uninterrupted(items)
    assert list(log.replay("run-demo")) == published


def test_a_restart_after_items_were_journaled_but_not_delivered_derives_their_events_once(journal, log):
    items = simulated_run()
    pairs = projected(items)
    for item in items[:40]:
        journal.append(item)
    for item, events in pairs[:25]:
        log.record(item, events)
    delivered_before = log.replay("run-demo")
    for item in items[40:]:
        journal.append(item)

    observer = asyncio.run(project_run("run-demo", journal, log))
    everything = log.replay("run-demo")
    assert everything[:len(delivered_before)] == delivered_before
    assert [d.event_id for d in everything] == list(range(1, len(everything) + 1))
    assert [d.data for d in everything] == uninterrupted(items)
    assert observer.snapshot() == [e for _, events in pairs for e in events]


def test_project_run_on_a_finished_run_records_nothing_more(journal, log):
    items = simulated_run()
    for item in items:
        journal.append(item)
    asyncio.run(project_run("run-demo", journal, log))
    before = log.replay("run-demo")
    observer = asyncio.run(project_run("run-demo", journal, log))
    assert observer.finished and log.replay("run-demo") == before


def _shout(item: HarnessStreamEvent, event: BaseEvent) -> BaseEvent | None:
    if isinstance(event, TextMessageContentEvent):
        return event.model_copy(update={"delta": event.delta.upper()})
    return event


def test_a_restart_with_a_processor_that_is_not_replay_stable_is_refused(journal, log):
    items = simulated_run()
    for item in items:
        journal.append(item)
    for item, events in projected(items[:50], _shout):
        log.record(item, events)
    with pytest.raises(DeliveryMismatchError, match="differs"):
        asyncio.run(project_run("run-demo", journal, log))
    assert log.cursor("run-demo") == 49


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


def test_two_projectors_racing_on_one_run_cannot_both_deliver(journal, log):
    items = simulated_run()
    for item in items:
        journal.append(item)

    async def race() -> list[Any]:
        return await asyncio.gather(project_run("run-demo", journal, log), project_run("run-demo", journal, log),
                                    return_exceptions=True)

    outcomes = asyncio.run(race())
    assert sorted(type(o).__name__ for o in outcomes) == ["HarnessAguiObserver", "ProjectorConflictError"]
    assert [d.data for d in log.replay("run-demo")] == uninterrupted(items)


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
