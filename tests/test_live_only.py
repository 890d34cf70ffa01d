# Live-only mode: HarnessAguiObserver(retain_events=False) keeps the
# conversion state, not the emitted events. It returns exactly the events a
# retained observer returns (plain, delegating and processed streams), counts
# them, refuses snapshot() with a clear error and stays as it was, and its
# memory does not grow with the events it emitted.

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core.errors import AguiObservationError, EventsNotRetainedError, HarnessAguiError
from harness_agui.testing import SourceBuilder, complete_histories, live_histories, simulated_delegation
from harness_agui.testing.delegation import delegating_runs
from harness_agui.testing.strategies import ReplayStableProcessor, invalid_cases, replay_stable_processors

STREAMS = st.one_of(complete_histories(), live_histories(), delegating_runs().map(lambda r: list(r.items)))


@given(STREAMS)
def test_a_live_only_observer_returns_the_same_events_as_one_that_retains_them(items: list[Any]) -> None:
    retained = HarnessAguiObserver()
    live = HarnessAguiObserver(retain_events=False)
    for item in items:
        assert live.observe(item) == retained.observe(item)
        assert live.event_count == retained.event_count
        assert (live.thread_id, live.run_id, live.finished) == (retained.thread_id, retained.run_id,
                                                                retained.finished)
    assert not live.retains_events and retained.retains_events


@given(complete_histories(), replay_stable_processors())
def test_a_processed_live_only_run_returns_the_same_events(items: list[Any],
                                                           processor: ReplayStableProcessor) -> None:
    retained = HarnessAguiObserver(processor=processor)
    live = HarnessAguiObserver(processor=processor, retain_events=False)
    for item in items:
        assert live.observe(item) == retained.observe(item)
    assert live.event_count == retained.event_count


@given(STREAMS)
def test_a_live_only_resume_continues_like_a_retained_one(items: list[Any]) -> None:
    cut = len(items) // 2
    retained, live = HarnessAguiObserver(), HarnessAguiObserver(retain_events=False)
    asyncio.run(retained.resume(items[:cut]))
    asyncio.run(live.resume(items[:cut]))
    assert live.event_count == retained.event_count
    assert not live.is_fresh
    for item in items[cut:]:
        assert live.observe(item) == retained.observe(item)


def test_snapshot_of_a_live_only_observer_is_a_clear_error_and_changes_nothing() -> None:
    items = list(simulated_delegation())
    live = HarnessAguiObserver(retain_events=False)
    for item in items[:5]:
        live.observe(item)
    before = live.state
    with pytest.raises(EventsNotRetainedError, match="retain_events=False") as error:
        live.snapshot()
    assert isinstance(error.value, AguiObservationError) and isinstance(error.value, HarnessAguiError)
    with pytest.raises(EventsNotRetainedError):
        live.snapshot(0, 2)
    assert live.state is before
    retained = HarnessAguiObserver()
    for item in items[:5]:
        retained.observe(item)
    assert live.observe(items[5]) == retained.observe(items[5])


def test_a_live_only_observer_without_message_tracking_refuses_messages_and_catch_up() -> None:
    live = HarnessAguiObserver(retain_events=False)
    live.observe(list(simulated_delegation())[0])
    assert not live.tracks_messages
    with pytest.raises(EventsNotRetainedError, match="track_messages"):
        live.messages()
    with pytest.raises(EventsNotRetainedError):
        live.catch_up()


@given(STREAMS)
def test_a_live_only_observer_that_tracks_messages_has_the_messages_of_a_retained_one(items: list[Any]) -> None:
    retained = HarnessAguiObserver()
    live = HarnessAguiObserver(retain_events=False, track_messages=True)
    for item in items:
        retained.observe(item)
        live.observe(item)
    assert live.messages() == retained.messages()
    assert live.catch_up() == retained.catch_up()


@given(invalid_cases())
def test_a_failed_observe_leaves_a_live_only_observer_as_it_was(case: Any) -> None:
    live = HarnessAguiObserver(retain_events=False, track_messages=True)
    for item in case.history:
        live.observe(item)
    before = live.state
    with pytest.raises(case.error):
        live.observe(case.item)
    assert live.state is before


def _long_run(messages: int, deltas: int) -> list[Any]:
    """A Run of ``messages`` model requests, each one streamed text message of ``deltas`` deltas."""
    builder = SourceBuilder("thread-long", "run-long").user("go")
    for m in range(messages):
        builder.request().text(0, [f"m{m}w{i} " for i in range(deltas)])
    return builder.completed("done").items


def _kept_bytes(make: Any, items: list[Any]) -> tuple[int, int]:
    """What an observer keeps alive after observing ``items``, and how many events it emitted."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        observer = make()
        for item in items:
            observer.observe(item)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, observer.event_count


def test_live_only_memory_stays_flat_over_a_run() -> None:
    # The items are kept by the test (and shared strings are the items'), so
    # this counts what the observer itself keeps alive per emitted event.
    items = _long_run(messages=20, deltas=1000)
    live, n = _kept_bytes(lambda: HarnessAguiObserver(retain_events=False), items)
    retained, n_retained = _kept_bytes(HarnessAguiObserver, items)
    assert n == n_retained > 20_000
    assert retained / n > 50, retained / n
    assert live / n < 10, live / n


def test_the_state_of_a_live_only_observer_refuses_a_snapshot_too() -> None:
    live = HarnessAguiObserver(retain_events=False)
    for item in simulated_delegation():
        live.observe(item)
    with pytest.raises(EventsNotRetainedError):
        live.state.snapshot()


@pytest.mark.parametrize("name", ["subagent", "nested_subagents", "failed_child"])
def test_a_live_only_observer_reports_the_final_text_of_real_subagents(name: str) -> None:
    from pathlib import Path

    from harness_agui.wire.codec import decode

    lines = (Path(__file__).parent / "fixtures" / "a13n" / f"{name}.jsonl").read_text(encoding="utf-8")
    items = [decode(line) for line in lines.splitlines() if line.strip()]
    retained, live = HarnessAguiObserver(), HarnessAguiObserver(retain_events=False)
    ends = []
    for item in items:
        events = retained.observe(item)
        assert live.observe(item) == events
        ends += [e for e in events if e.type.value == "SUBAGENT_FINISHED"]
    assert name == "failed_child" or any(e.result for e in ends)  # type: ignore[attr-defined]


def test_a_live_only_observer_reports_the_final_text_of_generated_subagents() -> None:
    items = list(simulated_delegation())
    retained, live = HarnessAguiObserver(), HarnessAguiObserver(retain_events=False)
    results = [e for item in items for e in retained.observe(item) if e.type.value == "SUBAGENT_FINISHED"]
    live_results = [e for item in items for e in live.observe(item) if e.type.value == "SUBAGENT_FINISHED"]
    assert live_results == results and all(e.result for e in results)  # type: ignore[attr-defined]
    # Every subagent finished: none of their text is kept.
    assert all(sub.last_text is None for sub in live.state.subagents.values())
