"""The source journal's contract, on every backend (SQLite and PostgreSQL): the same calls, the same
results, the same errors."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import (
    AfterTerminalError,
    ForeignRunError,
    IncompletePrefixError,
    JournalConflictError,
    ReadOnlyStoreError,
    SequenceGapError,
    SequenceOrderError,
)
from harness_agui.source import ToolCallPart
from harness_agui.testing import SourceBuilder, simulated_delegation, simulated_run
from harness_agui.wire.codec import encode


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


def read(journal: Any, run_id: str, through: int | None) -> list[HarnessStreamEvent]:
    return asyncio.run(collect(journal.read_prefix(run_id, through=through)))


def changed(item: Any) -> Any:
    return attrs.evolve(item, event=attrs.evolve(item.event, value={"i": 99}))


# -- append ------------------------------------------------------------------------

def test_append_stores_each_item_once_and_the_cursor_is_the_last_position(journal):
    items = simulated_run()
    assert all(journal.append(item) for item in items)
    assert journal.cursor("run-demo") == len(items) - 1
    assert journal.finished("run-demo")
    assert read(journal, "run-demo", len(items) - 1) == items


def test_appending_the_identical_item_again_is_a_no_op(journal):
    items = observations(3)
    for item in items:
        journal.append(item)
    assert journal.append(items[1]) is False
    assert journal.append(attrs.evolve(items[2])) is False
    assert journal.cursor("run-1") == 2
    assert read(journal, "run-1", 2) == items


def test_an_equal_item_whose_json_keys_come_in_another_order_is_a_duplicate(journal):
    b = SourceBuilder()
    b.tool_call(0, "search", "call-1", [])
    journal.append(b.items[0])
    reordered = attrs.evolve(b.items[1], event=attrs.evolve(
        b.items[1].event, part=ToolCallPart(tool_name="search", args={"b": 1, "a": 2}, tool_call_id="call-1")))
    journal.append(reordered)
    again = attrs.evolve(reordered, event=attrs.evolve(
        reordered.event, part=ToolCallPart(tool_name="search", args={"a": 2, "b": 1}, tool_call_id="call-1")))
    assert encode(again) != encode(reordered)
    assert journal.append(again) is False


def test_a_different_item_at_a_stored_sequence_is_a_conflict_and_writes_nothing(journal):
    items = observations(3)
    for item in items[:2]:
        journal.append(item)
    with pytest.raises(JournalConflictError) as info:
        journal.append(changed(items[1]))
    assert (info.value.run_id, info.value.sequence, info.value.expected) == ("run-1", 1, 2)
    assert isinstance(info.value, SequenceOrderError) and not isinstance(info.value, ValueError)  # an order fault
    assert read(journal, "run-1", 1) == items[:2]


def test_after_the_terminal_result_a_second_delivery_is_a_no_op_and_anything_else_is_after_terminal(journal):
    items = observations(3)
    for item in items:
        journal.append(item)
    assert journal.append(items[2]) is False
    assert journal.append(items[1]) is False
    with pytest.raises(AfterTerminalError) as info:
        journal.append(changed(items[1]))
    assert not isinstance(info.value, JournalConflictError)
    with pytest.raises(AfterTerminalError):
        journal.append(attrs.evolve(items[0], sequence=3))
    assert journal.cursor("run-1") == 2


def test_an_append_that_would_leave_a_gap_is_refused(journal):
    items = observations(5)
    journal.append(items[0])
    with pytest.raises(SequenceGapError) as info:
        journal.append(items[2])
    assert (info.value.run_id, info.value.sequence, info.value.expected) == ("run-1", 2, 1)
    assert journal.cursor("run-1") == 0


def test_a_run_must_start_at_its_first_sequence(backend):
    items = observations(4)
    journal = backend.journal()
    with pytest.raises(SequenceGapError):
        journal.append(items[1])
    assert journal.cursor("run-1") is None


def test_a_journal_with_another_first_sequence_starts_runs_there(backend):
    journal = backend.journal(first_sequence=5)
    late = SourceBuilder("thread-1", "run-1", first_sequence=5).observation("x", 1).items
    assert journal.append(late[0])
    assert journal.cursor("run-1") == 5
    with pytest.raises(SequenceOrderError):
        journal.append(observations(1, terminal=False)[0])


def test_a_run_cannot_change_thread(journal):
    items = observations(3)
    journal.append(items[0])
    with pytest.raises(ForeignRunError):
        journal.append(attrs.evolve(items[1], thread_id="thread-2"))
    assert journal.cursor("run-1") == 0


def test_append_refuses_what_is_not_a_source_item(journal):
    with pytest.raises(TypeError):
        journal.append({"sequence": 0})


def test_runs_are_listed_per_thread_in_append_order(journal):
    for item in observations(2, "run-b", "thread-1") + observations(2, "run-a", "thread-1") + observations(
            1, "run-c", "thread-2"):
        journal.append(item)
    assert journal.runs() == ("run-b", "run-a", "run-c")
    assert journal.runs("thread-1") == ("run-b", "run-a")
    assert journal.runs("nobody") == ()


def test_an_unknown_run_has_no_cursor_and_is_not_finished(journal):
    assert journal.cursor("nobody") is None
    assert not journal.finished("nobody")


# -- streams: a root Run and its child Runs --------------------------------------------

def test_a_delegating_stream_is_stored_in_arrival_order_with_one_position_per_item(journal):
    items = simulated_delegation()
    for item in items:
        assert journal.append(item, root_run_id="run-root")
    assert journal.cursor("run-root") == len(items) - 1
    assert journal.finished("run-root")
    assert journal.runs() == ("run-root",)
    assert journal.root_of("run-root-planner") == "run-root"
    assert journal.root_of("run-root") == "run-root"
    assert journal.root_of("nobody") is None
    assert read(journal, "run-root", len(items) - 1) == items
    cut = len(items) // 2
    assert read(journal, "run-root", cut) == items[:cut + 1]


def test_a_known_child_run_goes_to_its_roots_stream_without_naming_it(journal):
    items = simulated_delegation()
    child = next(i for i in items if i.run_id != "run-root")
    first = items.index(child)
    for item in items[:first + 1]:
        journal.append(item, root_run_id="run-root")
    for item in items[first + 1:]:
        # root_run_id left out for the stored child Run: its items join its root's stream
        journal.append(item, root_run_id=None if item.run_id == child.run_id else "run-root")
    assert journal.runs() == ("run-root",)
    assert read(journal, "run-root", len(items) - 1) == items


def test_a_child_run_is_read_through_its_root(journal):
    items = simulated_delegation()
    for item in items:
        journal.append(item, root_run_id="run-root")
    with pytest.raises(ValueError):
        journal.cursor("run-root-planner")


def test_a_second_delivery_of_a_child_item_is_a_no_op_and_a_different_one_a_conflict(journal):
    items = simulated_delegation()
    for item in items[:-1]:
        journal.append(item, root_run_id="run-root")
    child = [i for i in items[:-1] if i.run_id == "run-root-planner"]
    assert journal.append(child[1], root_run_id="run-root") is False
    assert journal.append(child[1]) is False
    other = attrs.evolve(child[1], occurred_at=child[1].occurred_at.replace(year=2001))
    with pytest.raises(JournalConflictError) as info:
        journal.append(other)
    assert (info.value.run_id, info.value.sequence) == ("run-root-planner", 1)


def test_child_items_after_the_roots_terminal_result_are_refused_naming_the_root(journal):
    items = simulated_delegation()
    for item in items:
        journal.append(item, root_run_id="run-root")
    child = [i for i in items if i.run_id == "run-root-planner"]
    after = SourceBuilder(child[-1].thread_id, child[-1].run_id, first_sequence=child[-1].sequence + 1)
    with pytest.raises(AfterTerminalError) as info:
        journal.append(after.observation("late", 1).items[0])
    assert info.value.run_id == "run-root"
    assert journal.append(child[-1]) is False  # the identical item: still a no-op
    late = SourceBuilder("thread-late", "run-late").observation("x", 1).items[0]
    with pytest.raises(ForeignRunError):  # no Run joins a stream that has ended
        journal.append(late, root_run_id="run-root")


def test_a_child_needs_its_roots_stream_and_a_run_stays_in_its_stream(journal):
    item = SourceBuilder("thread-c", "run-child").observation("x", 1).items[0]
    with pytest.raises(ForeignRunError):
        journal.append(item, root_run_id="run-nobody")
    for root in observations(2, "run-a", terminal=False) + observations(2, "run-b", terminal=False):
        journal.append(root)
    journal.append(item, root_run_id="run-a")
    following = SourceBuilder("thread-c", "run-child", first_sequence=1).observation("y", 2).items[0]
    with pytest.raises(ForeignRunError):
        journal.append(following, root_run_id="run-b")
    assert journal.cursor("run-a") == 2 and journal.cursor("run-b") == 1


def test_each_run_of_a_stream_keeps_its_own_order(journal):
    for root in observations(2, "run-a", terminal=False):
        journal.append(root)
    b = SourceBuilder("thread-c", "run-child")
    b.observation("x", 1).observation("y", 2).observation("z", 3)
    journal.append(b.items[0], root_run_id="run-a")
    with pytest.raises(SequenceGapError) as info:
        journal.append(b.items[2])
    assert info.value.run_id == "run-child"
    assert journal.append(b.items[1])
    assert journal.cursor("run-a") == 3


# -- read_prefix ---------------------------------------------------------------------

def test_read_prefix_gives_the_exact_prefix_and_resume_rebuilds_the_projection(journal):
    items = simulated_run()
    for item in items:
        journal.append(item)
    cut = 30
    assert read(journal, "run-demo", cut) == items[:cut + 1]
    observer = HarnessAguiObserver()
    asyncio.run(observer.resume(journal.read_prefix("run-demo", through=cut)))
    reference = HarnessAguiObserver()
    for item in items[:cut + 1]:
        reference.observe(item)
    assert observer.snapshot() == reference.snapshot()


def test_a_prefix_longer_than_one_page_is_read_whole_and_in_order(journal):
    items = observations(700)
    for item in items:
        journal.append(item)
    assert read(journal, "run-1", 699) == items
    assert read(journal, "run-1", 300) == items[:301]


def test_the_empty_prefix_reads_nothing(journal):
    assert read(journal, "run-1", None) == []


def test_a_prefix_beyond_what_is_stored_fails_resume_and_leaves_the_observer_fresh(journal):
    for item in observations(5, terminal=False):
        journal.append(item)
    observer = HarnessAguiObserver()
    with pytest.raises(IncompletePrefixError) as info:
        asyncio.run(observer.resume(journal.read_prefix("run-1", through=7)))
    assert (info.value.sequence, info.value.expected) == (4, 7)
    assert observer.is_fresh


def test_a_journal_reopened_on_the_same_database_reads_what_was_appended(backend):
    items = simulated_run()
    first = backend.journal()
    for item in items:
        first.append(item)
    first.close()
    second = backend.journal()
    assert second.cursor("run-demo") == len(items) - 1
    assert read(second, "run-demo", len(items) - 1) == items
    assert second.append(items[-1]) is False


def test_a_read_only_journal_reads_and_refuses_to_append(backend):
    items = observations(3)
    writer = backend.journal()
    for item in items[:2]:
        writer.append(item)
    reader = backend.journal(read_only=True)
    assert reader.read_only
    assert reader.cursor("run-1") == 1
    assert read(reader, "run-1", 1) == items[:2]
    with pytest.raises(ReadOnlyStoreError):
        reader.append(items[2])


# -- tail ----------------------------------------------------------------------------

def test_the_tail_follows_new_appends_until_the_terminal_result(journal):
    items = simulated_run()
    cut = 20
    for item in items[:cut + 1]:
        journal.append(item)

    async def scenario() -> list[HarnessStreamEvent]:
        async def harness() -> None:
            for item in items[cut + 1:]:
                await asyncio.sleep(0.001)
                await asyncio.to_thread(journal.append, item)

        writer = asyncio.create_task(harness())
        tail = await collect(journal.tail("run-demo", after=cut))
        await writer
        return tail

    tail = asyncio.run(scenario())
    assert read(journal, "run-demo", cut) + tail == items
    assert tail[0].sequence == cut + 1


def test_the_tail_follows_appends_made_through_another_store_object(backend):
    items = observations(60)
    journal, other = backend.journal(), backend.journal()
    journal.append(items[0])

    def writer() -> None:
        for item in items[1:]:
            other.append(item)

    thread = threading.Thread(target=writer)
    thread.start()
    tail = asyncio.run(collect(journal.tail("run-1", after=0)))
    thread.join()
    assert tail == items[1:]


def test_a_tail_after_a_position_inside_a_delegating_stream_continues_each_runs_order(journal):
    items = simulated_delegation()
    for item in items:
        journal.append(item, root_run_id="run-root")
    for cut in (None, 3, len(items) // 2, len(items) - 2):
        assert read(journal, "run-root", cut) + asyncio.run(collect(journal.tail("run-root", after=cut))) == items


def test_a_tail_from_the_start_reads_the_whole_run(journal):
    items = observations(5)
    for item in items:
        journal.append(item)
    assert asyncio.run(collect(journal.tail("run-1", after=None))) == items


def test_a_tail_after_the_terminal_result_ends_at_once(journal):
    for item in observations(4):
        journal.append(item)
    assert asyncio.run(collect(journal.tail("run-1", after=3))) == []


def test_a_tail_cursor_beyond_the_terminal_result_is_an_error(journal):
    for item in observations(4):
        journal.append(item)
    with pytest.raises(AfterTerminalError):
        asyncio.run(collect(journal.tail("run-1", after=6)))


def test_cancelling_a_waiting_tail_stops_it(journal):
    journal.append(observations(2)[0])

    async def scenario() -> list[int]:
        seen: list[int] = []

        async def consume() -> None:
            async for item in journal.tail("run-1", after=None):
                seen.append(item.sequence)

        task = asyncio.create_task(consume())
        while not seen:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    assert asyncio.run(scenario()) == [0]


def test_a_closed_journal_refuses_to_work(backend):
    journal = backend.journal()
    journal.close()
    journal.close()
    with pytest.raises(ValueError, match="closed"):
        journal.append(observations(1)[0])
    assert "closed" in repr(journal)


def test_writers_racing_to_deliver_the_same_stream_store_each_item_once(backend):
    items = simulated_delegation()
    outcomes: list[list[bool]] = []

    def harness() -> None:
        journal = backend.journal()
        outcomes.append([journal.append(item, root_run_id="run-root") for item in items])

    threads = [threading.Thread(target=harness) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(outcomes) == 3
    assert [sum(written) for written in zip(*outcomes, strict=True)] == [1] * len(items)
    reader = backend.journal()
    assert read(reader, "run-root", len(items) - 1) == items
