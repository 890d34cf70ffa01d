"""The delivery log's contract and project_run's restart protocol, on every backend (SQLite and
PostgreSQL): the same ids, the same SSE frames, the same errors."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import BaseEvent, RunErrorEvent, TextMessageContentEvent
from ag_ui_validate.pytest_plugin import assert_valid_agui

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import (
    AfterTerminalError,
    Delivery,
    DeliveryMismatchError,
    ForeignEventIdError,
    ForeignRunError,
    HistoryError,
    IncompletePrefixError,
    ProjectorConflictError,
    ReadOnlyStoreError,
    SequenceGapError,
    SequenceOrderError,
    UnknownEventIdError,
    parse_last_event_id,
    project_run,
)
from harness_agui.testing import SourceBuilder, simulated_delegation, simulated_run
from harness_agui.testing import projection_json as uninterrupted
from harness_agui.wire.agui import agui_to_json


def projected(items: list[HarnessStreamEvent], processor: Any = None) -> list[tuple[HarnessStreamEvent,
                                                                                    tuple[BaseEvent, ...]]]:
    observer = HarnessAguiObserver(processor)
    return [(item, observer.observe(item)) for item in items]




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
    second = SourceBuilder("t", "run-b").completed("ok").items
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
    with pytest.raises(SequenceOrderError, match="sequence repeated: 2 was due") as repeat:
        log.record(*pairs[1])
    assert (repeat.value.run_id, repeat.value.sequence, repeat.value.expected) == ("r", 1, 2)
    assert type(repeat.value) is SequenceOrderError  # the class every reader raises, the journals included
    with pytest.raises(SequenceGapError, match="sequence 2 missing") as skip:
        log.record(*pairs[3])
    assert type(skip.value) is SequenceGapError
    assert (log.cursor("r"), log.last_event_id("r")) == (1, 3)
    log.record(*pairs[2])
    log.record(*pairs[3])
    with pytest.raises(AfterTerminalError, match="after the terminal result at sequence 3") as late:
        log.record(SourceBuilder("t", "r", first_sequence=4).observation("late", 0).items[0], ())
    assert type(late.value) is AfterTerminalError
    assert log.cursor("r") == 3


def test_a_runs_first_record_is_sequence_0_and_later_ones_keep_its_thread(log):
    items = SourceBuilder("t", "r").observation("x", 1).observation("y", 2).items
    with pytest.raises(SequenceGapError, match="sequence 0 missing") as late:
        log.record(items[1], ())
    assert type(late.value) is SequenceGapError
    log.record(items[0], ())
    other = SourceBuilder("t-other", "r", first_sequence=1).observation("y", 2).items[0]
    with pytest.raises(ForeignRunError, match="thread 't-other'") as foreign:
        log.record(other, ())
    assert type(foreign.value) is ForeignRunError
    assert (log.cursor("r"), log.last_event_id("r")) == (0, 0)


def test_record_refuses_what_is_not_an_item_or_an_event(log):
    item = SourceBuilder().observation("x", 1).items[0]
    with pytest.raises(TypeError):
        log.record("item", ())
    with pytest.raises(TypeError):
        log.record(item, [{"type": "CUSTOM"}])
    assert log.cursor("run-1") is None


def test_the_events_of_a_delegating_stream_are_the_roots_with_one_position_per_item(log):
    items = simulated_delegation()
    positions: list[int] = []
    for item, events in projected(items):
        delivered = log.record(item, events, root_run_id="run-root")
        positions.extend(d.source_position for d in delivered)
        assert {d.run_id for d in delivered} <= {"run-root"}
    assert log.cursor("run-root") == len(items) - 1
    assert log.finished("run-root")
    assert [d.data for d in log.replay("run-root")] == uninterrupted(items)
    assert positions == sorted(positions)
    child = next(i for i in items if i.run_id != "run-root")
    with pytest.raises(AfterTerminalError):
        log.record(child, (), root_run_id="run-root")


def test_a_child_item_recorded_out_of_its_runs_order_is_refused(log):
    items = simulated_delegation()
    pairs = projected(items)
    child_items = [n for n, (item, _) in enumerate(pairs) if item.run_id != "run-root"]
    first, second = child_items[0], child_items[1]
    for item, events in pairs[:first + 1]:
        log.record(item, events, root_run_id="run-root")
    skipped = pairs[second][0]
    if second == first + 1:
        with pytest.raises(HistoryError):
            log.record(pairs[child_items[2]][0], (), root_run_id="run-root")
    else:
        with pytest.raises(SequenceGapError):
            log.record(skipped if skipped.sequence > 1 else pairs[child_items[2]][0], (), root_run_id="run-root")
    assert log.cursor("run-root") == first


# -- fail: a Run that ends without its terminal item ------------------------------------------

def test_fail_ends_a_run_with_one_run_error_and_followers_end_after_it(log):
    items = simulated_run()
    pairs = projected(items)
    for item, events in pairs[:10]:
        log.record(item, events)
    delivered = log.fail("run-demo", RunErrorEvent(message="the harness went away", code="gone"), expected_cursor=9)
    assert delivered.event_type == "RUN_ERROR" and delivered.event_id == log.last_event_id("run-demo")
    assert log.finished("run-demo") and log.cursor("run-demo") == 9
    followed = asyncio.run(collect(log.follow("run-demo")))
    assert followed[-1] == delivered
    with pytest.raises(AfterTerminalError):
        log.record(*pairs[10])
    with pytest.raises(AfterTerminalError):
        log.fail("run-demo", RunErrorEvent(message="again"), expected_cursor=9)
    with pytest.raises(ProjectorConflictError):
        log.fail("other", RunErrorEvent(message="x"), expected_cursor=3)
    with pytest.raises(ValueError):
        log.fail("other", RunErrorEvent(message="x"), expected_cursor=None)
    first = log.fail("other", RunErrorEvent(message="x"), expected_cursor=None, thread_id="t")
    assert first.event_id == 1 and log.finished("other")


# -- replay and Last-Event-ID ----------------------------------------------------------------

def test_replay_after_a_last_event_id_gives_everything_after_it(log):
    for item, events in projected(simulated_run()):
        log.record(item, events)
    everything = log.replay("run-demo")
    assert [d.event_id for d in everything] == list(range(1, len(everything) + 1))
    assert log.replay("run-demo", after=everything[39].sse_id) == everything[40:]
    assert log.replay("run-demo", after=40) == everything[40:]
    assert log.replay("run-demo", after=len(everything)) == ()


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
        for item, events in projected(b.completed("ok").items):
            log.record(item, events)


def test_an_event_id_names_its_run_and_a_foreign_one_is_refused_before_anything_is_streamed(log):
    _two_runs(log)
    a = asyncio.run(collect(log.sse("run-a")))
    ids_a = [_id_line(f) for f in a]
    assert [d.sse_id for d in log.replay("run-a")] == ids_a
    assert [parse_last_event_id(i, run_id="run-a") for i in ids_a] == list(range(1, len(ids_a) + 1))
    foreign = _id_line(asyncio.run(collect(log.sse("run-b")))[2])
    with pytest.raises(ForeignEventIdError):
        log.replay("run-a", after=foreign)
    with pytest.raises(ForeignEventIdError):
        log.follow("run-a", after=foreign)
    with pytest.raises(ForeignEventIdError):
        log.sse("run-a", last_event_id=foreign)
    with pytest.raises(ForeignEventIdError):
        log.replay("run-a", after="17")


def test_a_delivery_parses_back_to_an_equal_detached_event(log):
    items = SourceBuilder("t", "r").text(0, ["Hel", "lo"]).items
    pairs = projected(items)
    log.record(*pairs[0])
    item, events = pairs[1]
    delivered = log.record(item, events)
    event = delivered[0].event
    assert isinstance(event, TextMessageContentEvent) and event == events[0]
    assert log.replay("r", after=delivered[0].event_id - 1)[0].event == events[0]


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
                await asyncio.to_thread(log.record, item, events)

        writer = asyncio.create_task(host())
        seen = await collect(log.follow("run-demo"))
        await writer
        return seen

    seen = asyncio.run(scenario())
    assert [d.data for d in seen] == uninterrupted(items)
    assert [d.event_id for d in seen] == list(range(1, len(seen) + 1))


def test_a_follower_sees_what_another_store_object_records(backend):
    writer, reader = backend.deliveries(), backend.deliveries()
    items = simulated_run()
    pairs = projected(items)

    def host() -> None:
        for item, events in pairs:
            writer.record(item, events)

    thread = threading.Thread(target=host)
    thread.start()
    seen = asyncio.run(collect(reader.follow("run-demo")))
    thread.join()
    assert [d.data for d in seen] == uninterrupted(items)


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


def test_a_read_only_log_reads_and_refuses_to_record(backend):
    writer = backend.deliveries()
    pairs = projected(simulated_run())
    for item, events in pairs[:5]:
        writer.record(item, events)
    reader = backend.deliveries(read_only=True)
    assert reader.replay("run-demo") == writer.replay("run-demo")
    with pytest.raises(ReadOnlyStoreError):
        reader.record(*pairs[5])


# -- project_run: the protocol ---------------------------------------------------------------

def test_project_run_records_a_whole_run_from_the_journal(journal, log):
    items = simulated_run()
    published: list[Delivery] = []

    async def scenario() -> HarnessAguiObserver:
        async def harness() -> None:
            for item in items:
                await asyncio.to_thread(journal.append, item)
                await asyncio.sleep(0.001)

        writer = asyncio.create_task(harness())
        observer = await project_run("run-demo", journal, log, publish=published.extend)
        await writer
        return observer

    observer = asyncio.run(scenario())
    assert observer.finished
    assert [d.data for d in published] == uninterrupted(items)
    assert list(log.replay("run-demo")) == published


def test_project_run_projects_a_delegating_stream_and_resumes_it_anywhere(journal, log):
    items = simulated_delegation()
    expected = uninterrupted(items)
    pairs = projected(items)
    for item in items:
        journal.append(item, root_run_id="run-root")
    cut = len(items) // 2
    for item, events in pairs[:cut]:
        log.record(item, events, root_run_id="run-root")
    observer = asyncio.run(project_run("run-root", journal, log))
    assert observer.finished
    assert [d.data for d in log.replay("run-root")] == expected
    assert_valid_agui([json.loads(d.data) for d in log.replay("run-root")])


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
    for item in simulated_run():
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


def test_a_restart_whose_journal_lost_delivered_items_fails_without_recording(backend, log, tmp_path):
    from harness_agui.host import SqliteSourceJournal

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


def test_two_projectors_racing_on_one_run_cannot_both_deliver(journal, log):
    items = simulated_run()
    for item in items:
        journal.append(item)

    async def race() -> list[Any]:
        return await asyncio.gather(project_run("run-demo", journal, log), project_run("run-demo", journal, log),
                                    return_exceptions=True)

    outcomes = asyncio.run(race())
    kinds = sorted(type(o).__name__ for o in outcomes)
    assert "HarnessAguiObserver" in kinds and set(kinds) <= {"HarnessAguiObserver", "ProjectorConflictError"}
    assert [d.data for d in log.replay("run-demo")] == uninterrupted(items)


def test_projectors_racing_from_threads_either_finish_or_report_the_conflict_and_the_log_stays_whole(backend):
    items = simulated_run()
    expected = uninterrupted(items)
    journal = backend.journal()
    for item in items[:30]:
        journal.append(item)
    outcomes: list[Any] = []

    def projector() -> None:
        own = backend.deliveries()
        try:
            outcomes.append(asyncio.run(project_run("run-demo", journal, own)))
        except Exception as e:  # noqa: BLE001 (judged below)
            outcomes.append(e)

    threads = [threading.Thread(target=projector) for _ in range(3)]
    for t in threads:
        t.start()
    for item in items[30:]:
        journal.append(item)
    for t in threads:
        t.join(60)
    kinds = sorted(type(o).__name__ for o in outcomes)
    assert set(kinds) <= {"HarnessAguiObserver", "ProjectorConflictError"}, outcomes
    assert "HarnessAguiObserver" in kinds
    everything = backend.deliveries().replay("run-demo")
    assert [d.data for d in everything] == expected
    assert [d.event_id for d in everything] == list(range(1, len(expected) + 1))
