"""History checks of the Host kit: check_prefix and check_tail."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import AguiObservationError, HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import (
    AfterTerminalError,
    ForeignRunError,
    HistoryError,
    IncompletePrefixError,
    SequenceGapError,
    SequenceOrderError,
    check_prefix,
    check_tail,
)
from harness_agui.testing import SourceBuilder, simulated_run


def run_items(n: int = 6, run_id: str = "run-1", thread_id: str = "thread-1", *, terminal: bool = True,
              first_sequence: int = 0) -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id, first_sequence=first_sequence)
    for i in range(n - 1 if terminal else n):
        b.observation("step", i)
    if terminal:
        b.completed("done")
    return b.items


async def collect(iterator: AsyncIterator[HarnessStreamEvent]) -> list[HarnessStreamEvent]:
    return [item async for item in iterator]


def read(iterator: AsyncIterator[HarnessStreamEvent]) -> list[HarnessStreamEvent]:
    return asyncio.run(collect(iterator))


async def agen(items: Iterable[HarnessStreamEvent]) -> AsyncIterator[HarnessStreamEvent]:
    for item in items:
        yield item


def resequenced(item: HarnessStreamEvent, sequence: int) -> HarnessStreamEvent:
    return attrs.evolve(item, sequence=sequence)


# -- what passes ----------------------------------------------------------------

def test_a_complete_contiguous_history_passes_through_unchanged():
    items = run_items(6)
    assert read(check_prefix(items, run_id="run-1", through=5)) == items
    assert read(check_prefix(agen(items), run_id="run-1", through=5)) == items
    assert read(check_tail(items, run_id="run-1", after=None)) == items


def test_a_prefix_stops_at_the_cursor_without_pulling_further():
    items = run_items(6)
    pulled: list[int] = []

    async def live() -> AsyncIterator[HarnessStreamEvent]:
        for item in items:
            pulled.append(item.sequence)
            yield item
        raise AssertionError("the check pulled past the cursor")

    assert read(check_prefix(live(), run_id="run-1", through=2)) == items[:3]
    assert pulled == [0, 1, 2]


def test_a_live_subscription_can_be_read_on_for_the_tail_after_the_prefix():
    items = run_items(8)

    async def scenario() -> tuple[list[HarnessStreamEvent], list[HarnessStreamEvent]]:
        subscription = agen(items)
        prefix = await collect(check_prefix(subscription, run_id="run-1", through=3))
        tail = await collect(check_tail(subscription, run_id="run-1", after=3))
        return prefix, tail

    prefix, tail = asyncio.run(scenario())
    assert prefix + tail == items
    assert [i.sequence for i in tail] == [4, 5, 6, 7]


def test_an_empty_prefix_pulls_nothing():
    def explode() -> Iterable[HarnessStreamEvent]:
        raise AssertionError("pulled")
        yield  # pragma: no cover

    assert read(check_prefix(explode(), run_id="run-1", through=None)) == []


def test_a_tail_ends_with_the_terminal_result_and_pulls_nothing_after_it():
    items = run_items(5)

    async def endless() -> AsyncIterator[HarnessStreamEvent]:
        for item in items:
            yield item
        raise AssertionError("pulled after the terminal result")

    assert read(check_tail(agen(items[2:]), run_id="run-1", after=1)) == items[2:]
    assert read(check_tail(endless(), run_id="run-1", after=None)) == items


def test_a_run_may_start_at_another_first_sequence():
    items = run_items(4, first_sequence=10)
    assert read(check_prefix(items, run_id="run-1", through=13, first_sequence=10)) == items
    with pytest.raises(SequenceGapError):
        read(check_prefix(items, run_id="run-1", through=13))


# -- what fails, and how it names the fault -------------------------------------

def test_an_item_of_another_run_raises_foreign_run_error_naming_run_and_sequence():
    items = run_items(5)
    items[2] = attrs.evolve(items[2], run_id="run-2")
    with pytest.raises(ForeignRunError) as info:
        read(check_prefix(items, run_id="run-1", through=4))
    assert info.value.run_id == "run-1" and info.value.sequence == 2
    assert "run 'run-1', sequence 2" in str(info.value) and "run-2" in str(info.value)


def test_an_item_of_another_thread_raises_foreign_run_error():
    items = run_items(5)
    items[3] = attrs.evolve(items[3], thread_id="thread-2")
    with pytest.raises(ForeignRunError, match="thread"):
        read(check_tail(items, run_id="run-1", after=None))


def test_a_repeated_sequence_raises_sequence_order_error():
    items = run_items(5)
    history = items[:3] + [items[2]] + items[3:]
    with pytest.raises(SequenceOrderError) as info:
        read(check_prefix(history, run_id="run-1", through=4))
    assert (info.value.sequence, info.value.expected) == (2, 3)
    assert "repeated" in str(info.value)


def test_a_decreasing_sequence_raises_sequence_order_error():
    items = run_items(5)
    history = items[:3] + [resequenced(items[3], 1)]
    with pytest.raises(SequenceOrderError, match="went back"):
        read(check_prefix(history, run_id="run-1", through=4))


def test_a_gap_raises_sequence_gap_error_naming_the_missing_sequence():
    items = run_items(6)
    history = items[:2] + items[4:]
    with pytest.raises(SequenceGapError) as info:
        read(check_prefix(history, run_id="run-1", through=5))
    assert (info.value.run_id, info.value.sequence, info.value.expected) == ("run-1", 4, 2)
    assert "2 to 3 missing" in str(info.value)


def test_a_history_that_starts_late_is_a_gap():
    items = run_items(6)
    with pytest.raises(SequenceGapError) as info:
        read(check_prefix(items[1:], run_id="run-1", through=5))
    assert (info.value.sequence, info.value.expected) == (1, 0)


def test_an_item_after_the_terminal_result_raises_after_terminal_error():
    items = run_items(4)
    extra = attrs.evolve(items[0], sequence=4)
    with pytest.raises(AfterTerminalError) as info:
        read(check_prefix(items + [extra], run_id="run-1", through=4))
    assert info.value.sequence == 4 and "terminal result at sequence 3" in str(info.value)


def test_a_prefix_that_stops_before_the_cursor_raises_incomplete_prefix_error():
    items = run_items(6)
    with pytest.raises(IncompletePrefixError) as info:
        read(check_prefix(items[:3], run_id="run-1", through=4))
    assert (info.value.run_id, info.value.sequence, info.value.expected) == ("run-1", 2, 4)
    with pytest.raises(IncompletePrefixError) as empty:
        read(check_prefix([], run_id="run-1", through=0))
    assert empty.value.sequence is None and "empty" in str(empty.value)


def test_a_prefix_whose_cursor_lies_beyond_the_terminal_result_is_incomplete():
    items = run_items(4)
    with pytest.raises(IncompletePrefixError, match="terminal result"):
        read(check_prefix(items, run_id="run-1", through=9))


def test_a_tail_that_overlaps_its_cursor_raises_sequence_order_error():
    items = run_items(6)
    with pytest.raises(SequenceOrderError):
        read(check_tail(items[2:], run_id="run-1", after=2))


def test_a_tail_that_skips_past_its_cursor_raises_sequence_gap_error():
    items = run_items(6)
    with pytest.raises(SequenceGapError) as info:
        read(check_tail(items[4:], run_id="run-1", after=2))
    assert info.value.expected == 3


def test_items_before_the_fault_are_yielded_and_the_faulty_one_is_not():
    items = run_items(6)
    history = items[:3] + items[4:]
    seen: list[int] = []

    async def consume() -> None:
        async for item in check_prefix(history, run_id="run-1", through=5):
            seen.append(item.sequence)

    with pytest.raises(SequenceGapError):
        asyncio.run(consume())
    assert seen == [0, 1, 2]


def test_history_errors_are_observation_errors():
    assert issubclass(HistoryError, AguiObservationError)
    for cls in (ForeignRunError, SequenceOrderError, SequenceGapError, AfterTerminalError, IncompletePrefixError):
        assert issubclass(cls, HistoryError)


def test_errors_raised_by_the_history_itself_propagate_unchanged():
    class StorageDown(OSError):
        pass

    async def broken() -> AsyncIterator[HarnessStreamEvent]:
        yield run_items(3)[0]
        raise StorageDown("replica went away")

    with pytest.raises(StorageDown):
        read(check_prefix(broken(), run_id="run-1", through=2))


def test_a_value_that_is_not_a_source_item_raises_type_error():
    with pytest.raises(TypeError, match="not a source item"):
        read(check_prefix(["not an item"], run_id="run-1", through=0))  # type: ignore[list-item]


def test_bad_arguments_raise_at_once_from_the_call():
    items = run_items(3)
    with pytest.raises(ValueError):
        check_prefix(items, run_id=" ", through=1)
    with pytest.raises(TypeError):
        check_prefix(items, run_id="run-1", through="2")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_tail(items, run_id="run-1", after=-1)
    with pytest.raises(ValueError):
        check_prefix(items, run_id="run-1", through=3, first_sequence=-1)
    with pytest.raises(TypeError):
        check_prefix(42, run_id="run-1", through=1)  # type: ignore[arg-type]


# -- with resume() ----------------------------------------------------------------

def test_a_failed_checked_resume_leaves_the_observer_fresh_and_a_retry_succeeds():
    items = simulated_run()
    cut = len(items) // 2
    broken = items[:10] + items[11:cut + 1]
    observer = HarnessAguiObserver()
    with pytest.raises(SequenceGapError):
        asyncio.run(observer.resume(check_prefix(broken, run_id="run-demo", through=cut)))
    assert observer.is_fresh and observer.event_count == 0 and observer.run_id is None

    asyncio.run(observer.resume(check_prefix(items, run_id="run-demo", through=cut)))
    reference = HarnessAguiObserver()
    for item in items[:cut + 1]:
        reference.observe(item)
    assert observer.snapshot() == reference.snapshot()
    assert observer.observe(items[cut + 1]) == reference.observe(items[cut + 1])


def test_a_short_prefix_fails_resume_although_every_item_is_valid():
    items = simulated_run()
    observer = HarnessAguiObserver()
    with pytest.raises(IncompletePrefixError):
        asyncio.run(observer.resume(check_prefix(items[:5], run_id="run-demo", through=8)))
    assert observer.is_fresh


# -- every single corruption of a valid history is caught -------------------------

@st.composite
def corrupted(draw: st.DrawFn) -> tuple[list[HarnessStreamEvent], int, type[HistoryError]]:
    n = draw(st.integers(2, 12))
    items = run_items(n)
    through = n - 1
    kind = draw(st.sampled_from(["drop", "repeat", "swap", "foreign", "after_terminal", "truncate"]))
    i = draw(st.integers(0, n - 2))
    if kind == "drop":
        return items[:i] + items[i + 1:], through, SequenceGapError
    if kind == "repeat":
        return items[:i + 1] + [items[i]] + items[i + 1:], through, SequenceOrderError
    if kind == "swap":
        return items[:i] + [items[i + 1], items[i]] + items[i + 2:], through, SequenceGapError
    if kind == "foreign":
        return items[:i] + [attrs.evolve(items[i], run_id="run-x")] + items[i + 1:], through, ForeignRunError
    if kind == "after_terminal":
        return items + [attrs.evolve(items[i], sequence=n)], n, AfterTerminalError
    return items[:i + 1], through, IncompletePrefixError


@given(corrupted())
def test_every_single_corruption_of_a_valid_history_raises_its_history_error(case):
    history, through, expected = case
    with pytest.raises(expected) as info:
        read(check_prefix(history, run_id="run-1", through=through))
    assert info.value.run_id == "run-1"


@given(st.integers(1, 12), st.data())
def test_a_valid_prefix_and_its_tail_together_give_the_whole_run(n, data):
    items = run_items(n)
    cursor = data.draw(st.one_of(st.none(), st.integers(0, n - 1)))
    prefix = read(check_prefix(items, run_id="run-1", through=cursor))
    start = 0 if cursor is None else cursor + 1
    tail = read(check_tail(items[start:], run_id="run-1", after=cursor))
    assert prefix + tail == items
