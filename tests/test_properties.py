# Property tests of replay equivalence, the snapshot law, determinism,
# failure atomicity and AG-UI validity, over the Runs that
# harness_agui.testing generates. The reference in every test is the same
# Run observed live by an observer that never failed.

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs
import pytest
from ag_ui.core import BaseEvent
from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import INITIAL_STATE, AguiObservationError, HarnessAguiObserver, HarnessEvent, assemble_custom
from harness_agui.core.jsonform import payload_to_json
from harness_agui.source import InputEvent, PartEndEvent, ToolCallPart
from harness_agui.testing import complete_histories, cut_points, histories, replay_stable_processors
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import decode, encode

processors = st.none() | replay_stable_processors()


class InjectedFailure(Exception):
    """Raised on purpose by a test's history or processor."""


@attrs.define
class FailOnce:
    """A processor that raises InjectedFailure on its ``at``-th call, once,
    and otherwise behaves like ``inner`` (or passes events through)."""

    inner: Any
    at: int
    calls: int = 0

    def __call__(self, item: Any, event: BaseEvent) -> BaseEvent | None:
        self.calls += 1
        if self.calls == self.at:
            raise InjectedFailure(f"processor call {self.at}")
        return event if self.inner is None else self.inner(item, event)


async def aiter_of(items: Sequence[Any], *, fail_at: int | None = None) -> AsyncIterator[Any]:
    for i, item in enumerate(items):
        if i == fail_at:
            raise InjectedFailure(f"history item {i}")
        yield item
    if fail_at == len(items):
        raise InjectedFailure("history end")


async def stall_after(items: Sequence[Any], reached: asyncio.Event, never: asyncio.Event) -> AsyncIterator[Any]:
    """Yield ``items``, set ``reached``, then wait for ``never`` (until cancelled)."""
    for item in items:
        yield item
    reached.set()
    await never.wait()
    raise AssertionError("the resume should have been cancelled while waiting")


def observe_all(history: Sequence[Any], processor: Any = None) -> tuple[HarnessAguiObserver, list[tuple]]:
    observer = HarnessAguiObserver(processor)
    return observer, [observer.observe(item) for item in history]


def assert_fresh(observer: HarnessAguiObserver) -> None:
    assert observer.is_fresh
    assert observer.state is INITIAL_STATE
    assert observer.snapshot() == ()
    assert observer.event_count == 0
    assert (observer.thread_id, observer.run_id, observer.finished) == (None, None, False)


# -- replay equivalence -------------------------------------------------------------------

@given(history=histories(), processor=processors, data=st.data())
def test_resuming_any_prefix_then_observing_the_rest_equals_live_observation(history, processor, data):
    reference, outputs = observe_all(history, processor)
    expected = reference.snapshot()
    counts = [0]
    for out in outputs:
        counts.append(counts[-1] + len(out))

    async def every_cut() -> None:
        for k in data.draw(cut_points(len(history)), label="cuts"):
            observer = HarnessAguiObserver(processor)
            assert await observer.resume(aiter_of(history[:k])) is None
            assert observer.snapshot() == expected[:counts[k]]
            assert not observer.is_fresh
            for j in range(k, len(history)):
                assert observer.observe(history[j]) == outputs[j], f"cut {k}, live item {j}"
            assert observer.snapshot() == expected
            assert observer.event_count == len(expected)
            assert (observer.thread_id, observer.run_id) == (reference.thread_id, reference.run_id)
            assert observer.finished == reference.finished

    asyncio.run(every_cut())


# -- the snapshot law ------------------------------------------------------------------------

slice_bounds = st.none() | st.integers(-60, 60)


@given(history=histories(), processor=processors, start=slice_bounds, stop=slice_bounds)
def test_snapshot_is_the_concatenation_of_everything_observe_returned(history, processor, start, stop):
    observer = HarnessAguiObserver(processor)
    published: list[BaseEvent] = []
    for item in history:
        out = observer.observe(item)
        assert type(out) is tuple
        published.extend(out)
        assert observer.event_count == len(published)
    snapshot = observer.snapshot()
    assert snapshot == tuple(published)
    assert tuple(snapshot) == tuple(published)
    assert len(snapshot) == observer.event_count == len(published)
    assert observer.snapshot(start, stop) == tuple(published[start:stop])
    assert snapshot[start:stop] == tuple(published[start:stop])
    if published:
        assert snapshot[-1] == published[-1] and snapshot[0] == published[0]


@given(history=histories(large_payloads=False))
def test_snapshotted_and_returned_events_are_detached_from_the_projection(history):
    observer = HarnessAguiObserver()
    returned = [e for item in history for e in observer.observe(item)]
    before = [agui_to_json(e) for e in observer.snapshot()]
    for event in [*returned, *observer.snapshot()]:
        event.timestamp = -1
        for name in ("delta", "message_id", "tool_call_id", "name", "content", "message"):
            if isinstance(getattr(event, name, None), str):
                setattr(event, name, "mutated")
        if isinstance(getattr(event, "value", None), dict):
            event.value.clear()
    assert [agui_to_json(e) for e in observer.snapshot()] == before


# -- determinism ------------------------------------------------------------------------------

@given(history=histories(), processor=processors)
def test_projection_is_the_same_across_observers_and_a_codec_round_trip(history, processor):
    decoded = [decode(encode(item)) for item in history]
    assert decoded == history
    first, _ = observe_all(history, processor)
    second, _ = observe_all(decoded, processor)
    resumed = HarnessAguiObserver(processor)
    asyncio.run(resumed.resume(decoded))
    wire = [agui_to_json(e) for e in first.snapshot()]
    assert [agui_to_json(e) for e in second.snapshot()] == wire
    assert [agui_to_json(e) for e in resumed.snapshot()] == wire


# -- failure atomicity ----------------------------------------------------------------------

@given(history=histories(max_steps=25), processor=processors, data=st.data())
def test_a_resume_failing_at_any_position_leaves_the_observer_fresh_and_a_retry_succeeds(history, processor, data):
    reference, _ = observe_all(history, processor)
    expected = reference.snapshot()
    counting = FailOnce(processor, at=0)
    observe_all(history, counting)
    processor_calls = counting.calls

    async def retry(observer: HarnessAguiObserver) -> None:
        assert_fresh(observer)
        await observer.resume(aiter_of(history))
        assert observer.snapshot() == expected

    async def every_position() -> None:
        for i in data.draw(cut_points(len(history)), label="source fails at"):
            observer = HarnessAguiObserver(processor)
            with pytest.raises(InjectedFailure):
                await observer.resume(aiter_of(history, fail_at=i))
            await retry(observer)

        for at in data.draw(cut_points(processor_calls, first=1), label="processor fails at"):
            observer = HarnessAguiObserver(FailOnce(processor, at))
            with pytest.raises(InjectedFailure):
                await observer.resume(aiter_of(history))
            await retry(observer)

        for i in data.draw(cut_points(len(history)), label="cancelled after"):
            observer = HarnessAguiObserver(processor)
            reached, never = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(observer.resume(stall_after(history[:i], reached, never)))
            await reached.wait()
            assert_fresh(observer)
            if history:
                with pytest.raises(AguiObservationError):
                    observer.observe(history[0])
            with pytest.raises(AguiObservationError):
                await observer.resume([])
            assert_fresh(observer)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await retry(observer)

    asyncio.run(every_position())


@given(history=histories(max_steps=25), processor=processors, data=st.data())
def test_an_observe_whose_processor_raises_leaves_the_item_unaccumulated(history, processor, data):
    reference, outputs = observe_all(history, processor)
    counting = FailOnce(processor, at=0)
    observe_all(history, counting)
    for at in data.draw(cut_points(counting.calls, first=1), label="processor fails at"):
        observer = HarnessAguiObserver(FailOnce(processor, at))
        failed = 0
        for item, expected in zip(history, outputs, strict=True):
            before = observer.state
            try:
                out = observer.observe(item)
            except InjectedFailure:
                failed += 1
                assert observer.state is before
                assert observer.event_count == len(before.events)
                out = observer.observe(item)  # the processor fails only once: the retry goes through
            assert out == expected
        assert failed == 1
        assert observer.snapshot() == reference.snapshot()


# -- AG-UI validity and what the events carry ---------------------------------------------------

@given(history=complete_histories())
def test_every_complete_run_projects_onto_a_valid_agui_run(history):
    observer, _ = observe_all(history)
    report = validate_agui([e.model_dump(mode="json", by_alias=True) for e in observer.snapshot()])
    findings = [f"{d.rule} {d.severity} at {d.event_index}: {d.message}" for d in report.diagnostics
                if d.severity in ("error", "warning")]
    assert (report.summary.errors, report.summary.warnings) == (0, 0), findings
    assert report.internal_errors == []


@given(history=complete_histories())
def test_streamed_tool_call_args_concatenate_to_the_final_args(history):
    observer, _ = observe_all(history)
    streamed: dict[str, str] = {}
    for event in observer.snapshot():
        if event.type.value == "TOOL_CALL_ARGS":
            streamed[event.tool_call_id] = streamed.get(event.tool_call_id, "") + event.delta
    for item in history:
        if isinstance(item, HarnessEvent) and isinstance(item.event, PartEndEvent):
            part = item.event.part
            if isinstance(part, ToolCallPart) and part.args is not None:
                text = streamed.get(part.tool_call_id, "")
                if isinstance(part.args, str):
                    assert text == part.args
                else:
                    assert json.loads(text) == part.args


@given(history=histories())
def test_custom_events_carry_their_source_item_and_input_text_in_ordered_chunks(history):
    observer, outputs = observe_all(history)
    for item, out in zip(history, outputs, strict=True):
        customs = [e for e in assemble_custom(out) if e.type.value == "CUSTOM"]
        if not isinstance(item, HarnessEvent):
            continue
        for event in customs:
            value = event.value
            assert (value["thread_id"], value["run_id"], value["sequence"]) == (item.thread_id, item.run_id,
                                                                               item.sequence)
            assert value["occurred_at"] == item.occurred_at.isoformat()
        payload = payload_to_json(item.event, binary_data=False)  # a CUSTOM event names a binary, without its bytes
        if isinstance(item.event, InputEvent) and item.event.source in ("user", "steering") \
                and isinstance(item.event.content, str):
            # A user or steering text is a user message, not a CUSTOM event.
            texts = [e.delta for e in out if e.type.value == "TEXT_MESSAGE_CONTENT"]
            assert not customs and "".join(texts) == item.event.content
        elif isinstance(item.event, InputEvent) and isinstance(item.event.content, str):
            chunks = [e.value["payload"]["content"] for e in customs]
            assert "".join(chunks) == item.event.content
            assert all(len(c) <= 8192 for c in chunks)
            assert [e.value["chunk"] for e in customs] == [{"index": i, "count": len(chunks)}
                                                           for i in range(len(chunks))]
        elif customs:
            assert [e.value["payload"] for e in customs] == [payload]
