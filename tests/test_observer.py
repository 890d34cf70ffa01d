# The shell of SPEC section 5: every error case with its exact exception
# type, and the promise behind all of them, that a failed call changes
# nothing (the state is the very same object, the snapshot and the
# properties read as before, and the next good item projects as if the bad
# one had never been offered). Then what snapshot() is, and that nothing a
# caller receives is connected to what the observer holds.

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest
from ag_ui.core import BaseEvent, EventType, TextMessageContentEvent, TextMessageStartEvent
from pydantic import BaseModel

from harness_agui import (
    INITIAL_STATE,
    AguiObservationError,
    HarnessAguiObserver,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    SequenceGapError,
)
from harness_agui.source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
)
from harness_agui.testing import DEMO_START, SourceBuilder, simulated_run
from harness_agui.wire.codec import encode

THREAD, RUN = "thread-1", "run-1"


def at(seq: int) -> Any:
    return DEMO_START + timedelta(milliseconds=40 * seq)


def ev(seq: int, payload: Any, *, thread: str = THREAD, run: str = RUN) -> HarnessEvent:
    return HarnessEvent(thread_id=thread, run_id=run, sequence=seq, occurred_at=at(seq), event=payload)


def res(seq: int, result: RunResult | None = None, *, thread: str = THREAD, run: str = RUN) -> HarnessRunResultEvent:
    return HarnessRunResultEvent(thread_id=thread, run_id=run, sequence=seq, occurred_at=at(seq),
                                 result=result or RunResult(status="completed", output="ok"))


def obs(seq: int, value: Any = None, **kw: Any) -> HarnessEvent:
    return ev(seq, ObservationEvent(name="note", value=value), **kw)


def start(seq: int, index: int, part: Any) -> HarnessEvent:
    return ev(seq, PartStartEvent(index=index, part=part))


def delta(seq: int, index: int, d: Any) -> HarnessEvent:
    return ev(seq, PartDeltaEvent(index=index, delta=d))


def end(seq: int, index: int, part: Any) -> HarnessEvent:
    return ev(seq, PartEndEvent(index=index, part=part))


def notice(seq: int, n: int) -> HarnessEvent:
    return ev(seq, ExtensionEvent(kind="lifecycle", schema_version="1",
                                  payload={"type": "model_request_started", "request_index": n}))


def call(name: str = "f", args: Any = None, call_id: str = "c") -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)


def observed(items: Sequence[HarnessStreamEvent], processor: Any = None) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(processor)
    for item in items:
        observer.observe(item)
    return observer


def readings(observer: HarnessAguiObserver) -> tuple[Any, ...]:
    """Everything a caller can read from an observer."""
    return (observer.state, tuple(observer.snapshot()), observer.event_count, observer.thread_id, observer.run_id,
            observer.finished, observer.is_fresh)


def fail_on_value(value: Any) -> Callable[[Any, BaseEvent], BaseEvent]:
    """A processor that fails on the events of an observation carrying ``value``."""
    def processor(item: Any, event: BaseEvent) -> BaseEvent:
        if isinstance(item.event, ObservationEvent) and item.event.value == value:
            raise RuntimeError(f"processor failed on value {value!r}")
        return event
    return processor


def retype_content(item: Any, event: BaseEvent) -> BaseEvent:
    if item.sequence == 2 and isinstance(event, TextMessageContentEvent):
        return TextMessageStartEvent(message_id=event.message_id, timestamp=event.timestamp)
    return event


def rename_message(item: Any, event: BaseEvent) -> BaseEvent:
    if item.sequence == 2 and isinstance(event, TextMessageContentEvent):
        return event.model_copy(update={"message_id": "other"})
    return event


TEXT_OPEN = [notice(0, 0), start(1, 0, TextPart(content="He", id="m-1"))]
TOOL_OPEN = [notice(0, 0), start(1, 0, call("f", None, "c")), delta(2, 0, ToolCallPartDelta(args_delta='{"a":'))]
DICT_TOOL_OPEN = [notice(0, 0), start(1, 0, call("f", {"a": 1}, "c"))]
FINISHED = [obs(0), res(1)]

# (history, bad item, processor): observing the bad item after the history
# must raise AguiObservationError and change nothing.
SEMANTIC_ERRORS: dict[str, tuple[list[HarnessStreamEvent], HarnessStreamEvent, Any]] = {
    "other thread": ([obs(0)], obs(1, thread="thread-2"), None),
    "other run": ([obs(0)], obs(1, run="run-2"), None),
    "other run on the terminal item": ([obs(0)], res(1, run="run-2"), None),
    "repeated sequence": ([obs(0), obs(1)], obs(1, "again"), None),
    "repeated sequence on the terminal item": ([obs(0), obs(1)], res(1), None),
    "decreasing sequence": ([obs(0), obs(1), obs(2)], obs(1), None),
    "skipped sequence": ([obs(0), obs(1)], obs(3), None),
    "first item not at sequence 0": ([], obs(1), None),
    "terminal item skipping a sequence": ([obs(0)], res(2), None),
    "event after the terminal item": (FINISHED, obs(2), None),
    "second terminal item": (FINISHED, res(2, RunResult(status="cancelled")), None),
    "delta of another kind": (TEXT_OPEN, delta(2, 0, ThinkingPartDelta(content_delta="x")), None),
    "tool call delta on a text part": (TEXT_OPEN, delta(2, 0, ToolCallPartDelta(args_delta="{}")), None),
    "end of another kind": (TEXT_OPEN, end(2, 0, ThinkingPart(content="He")), None),
    "text part ended as a tool call": (TEXT_OPEN, end(2, 0, call("f", "{}", "c")), None),
    "text end with another id": (TEXT_OPEN, end(2, 0, TextPart(content="He", id="m-2")), None),
    "thinking end with another id": ([start(0, 0, ThinkingPart(content="", id="t-1"))],
                                     end(1, 0, ThinkingPart(content="", id="t-2")), None),
    "tool call id changed by a delta": (TOOL_OPEN, delta(3, 0, ToolCallPartDelta(args_delta="1}", tool_call_id="d")),
                                        None),
    "tool call id changed at end": (TOOL_OPEN, end(3, 0, call("f", '{"a":1}', "d")), None),
    "tool name changed at end": (TOOL_OPEN, end(3, 0, call("g", '{"a":1}', "c")), None),
    "tool name delta after start": (TOOL_OPEN, delta(3, 0, ToolCallPartDelta(tool_name_delta="x")), None),
    "text args after object args": (DICT_TOOL_OPEN, delta(2, 0, ToolCallPartDelta(args_delta='{"b":2}')), None),
    "object args after text args": (TOOL_OPEN, delta(3, 0, ToolCallPartDelta(args_delta={"b": 2})), None),
    "part started again at an open index": (TEXT_OPEN, start(2, 0, TextPart(content="")), None),
    "delta for an index that is not open": (TEXT_OPEN, delta(2, 1, TextPartDelta(content_delta="x")), None),
    "end for an index that is not open": (TEXT_OPEN, end(2, 1, TextPart(content="x")), None),
    "tool call id used again while its call is open": (TOOL_OPEN, start(3, 1, call("f", None, "c")), None),
    "tool result while the call is still open": (TOOL_OPEN, ev(3, ToolResultEvent(
        tool_call_id="c", tool_name="f", outcome="success", content="x")), None),
    "model request index repeated": ([notice(0, 0)], notice(1, 0), None),
    "model request index decreasing": ([notice(0, 3)], notice(1, 2), None),
    "processor changes the event type": (TEXT_OPEN, delta(2, 0, TextPartDelta(content_delta="llo")), retype_content),
    "processor changes a structural field": (TEXT_OPEN, delta(2, 0, TextPartDelta(content_delta="llo")),
                                             rename_message),
}


@pytest.mark.parametrize("case", SEMANTIC_ERRORS)
def test_each_semantic_error_raises_agui_observation_error_and_changes_nothing(case: str) -> None:
    history, bad, processor = SEMANTIC_ERRORS[case]
    observer = observed(history, processor)
    before = readings(observer)
    with pytest.raises(AguiObservationError) as raised:
        observer.observe(bad)
    assert raised.value.sequence == bad.sequence
    assert raised.value.reason
    after = readings(observer)
    assert after[0] is before[0]
    assert after == before


FAILING_OBSERVES: dict[str, tuple[list[HarnessStreamEvent], HarnessStreamEvent, Any, type[BaseException]]] = {
    "bad correlation": ([obs(0), obs(1)], obs(2, run="run-other"), None, AguiObservationError),
    "processor error": ([obs(0), obs(1)], obs(2, "boom"), fail_on_value("boom"), RuntimeError),
    "part kind change": (TEXT_OPEN, delta(2, 0, ThinkingPartDelta(content_delta="x")), None, AguiObservationError),
    "after terminal": (FINISHED, obs(2), None, AguiObservationError),
    "repeated sequence": ([obs(0), obs(1)], obs(1), None, AguiObservationError),
    "wrong input type": ([obs(0)], ObservationEvent(name="n"), None, TypeError),
}
GOOD_NEXT = {
    "bad correlation": obs(2),
    "processor error": obs(2),
    "part kind change": delta(2, 0, TextPartDelta(content_delta="llo")),
    "after terminal": None,
    "repeated sequence": obs(2),
    "wrong input type": obs(1),
}


@pytest.mark.parametrize("case", FAILING_OBSERVES)
def test_a_failing_observe_leaves_snapshot_event_count_and_state_exactly_as_before(case: str) -> None:
    history, bad, processor, error = FAILING_OBSERVES[case]
    observer = observed(history, processor)
    untouched = observed(history, processor)
    state, snapshot, count = observer.state, observer.snapshot(), observer.event_count
    with pytest.raises(error):
        observer.observe(bad)
    assert observer.state is state
    assert observer.snapshot() == snapshot == tuple(untouched.snapshot())
    assert observer.event_count == count == untouched.event_count
    assert readings(observer)[1:] == readings(untouched)[1:]
    good = GOOD_NEXT[case]
    if good is not None:
        assert observer.observe(good) == untouched.observe(good)
        assert observer.snapshot() == untouched.snapshot()


def test_a_failed_first_observe_leaves_the_observer_fresh_and_resumable() -> None:
    observer = HarnessAguiObserver(fail_on_value("boom"))
    with pytest.raises(RuntimeError):
        observer.observe(obs(0, "boom"))
    assert observer.is_fresh and observer.thread_id is None and observer.run_id is None
    assert observer.snapshot() == () and observer.event_count == 0
    asyncio.run(observer.resume([obs(0), obs(1)]))
    assert observer.run_id == RUN and observer.event_count == 3


def test_a_failed_first_observe_binds_no_correlation() -> None:
    observer = HarnessAguiObserver()
    with pytest.raises(TypeError):
        observer.observe(None)  # type: ignore[arg-type]
    first = obs(0, thread="thread-9", run="run-9")
    assert [e.type for e in observer.observe(first)] == [EventType.RUN_STARTED, EventType.CUSTOM]
    assert (observer.thread_id, observer.run_id) == ("thread-9", "run-9")


def test_a_gap_in_the_sequence_is_refused_so_that_a_retention_gap_cannot_pass_unseen() -> None:
    observer = observed([obs(0), obs(1)])
    before = observer.state
    with pytest.raises(SequenceGapError) as raised:
        observer.observe(obs(7))
    assert (raised.value.run_id, raised.value.sequence, raised.value.expected) == (RUN, 7, 2)
    assert observer.state is before
    assert observer.observe(obs(2))[0].value["sequence"] == 2


def test_a_runs_first_item_must_carry_sequence_0() -> None:
    observer = HarnessAguiObserver()
    with pytest.raises(SequenceGapError) as raised:
        observer.observe(obs(3))
    assert (raised.value.sequence, raised.value.expected) == (3, 0)
    assert observer.is_fresh and observer.state is INITIAL_STATE


def test_the_first_successful_item_binds_thread_and_run() -> None:
    observer = HarnessAguiObserver()
    assert (observer.thread_id, observer.run_id, observer.event_count, observer.finished) == (None, None, 0, False)
    assert observer.is_fresh
    events = observer.observe(obs(0))
    assert isinstance(events, tuple)
    assert (observer.thread_id, observer.run_id, observer.event_count) == (THREAD, RUN, 2)
    assert not observer.is_fresh
    observer.observe(res(1))
    assert observer.finished and observer.event_count == 3


def test_observe_returns_a_tuple_even_when_an_item_produces_nothing() -> None:
    observer = observed(TEXT_OPEN)
    assert observer.observe(delta(2, 0, TextPartDelta(content_delta=""))) == ()


def test_observe_commits_only_after_its_events_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness_agui.core import records

    b = SourceBuilder().user("hi").text(0, ["a"])
    observer = HarnessAguiObserver()
    observer.observe(b.items[0])
    before = observer.state

    def broken_build(self: object, record: object) -> object:
        raise RuntimeError("cannot build")

    monkeypatch.setattr(records.Kind, "build", broken_build)
    with pytest.raises(RuntimeError):
        observer.observe(b.items[1])
    assert observer.state is before


# -- resume on a non-fresh observer ---------------------------------------------------------

def _non_fresh_observers() -> dict[str, HarnessAguiObserver]:
    after_observe = observed([obs(0)])
    after_resume = HarnessAguiObserver()
    asyncio.run(after_resume.resume([obs(0), obs(1)]))
    after_empty_resume = HarnessAguiObserver()
    asyncio.run(after_empty_resume.resume([]))
    finished = observed(FINISHED)
    return {"observed": after_observe, "resumed": after_resume, "resumed-empty": after_empty_resume,
            "finished": finished}


@pytest.mark.parametrize("which", ["observed", "resumed", "resumed-empty", "finished"])
def test_resume_on_an_observer_that_has_observed_or_resumed_raises_and_changes_nothing(which: str) -> None:
    observer = _non_fresh_observers()[which]
    before = readings(observer)
    assert not observer.is_fresh
    with pytest.raises(AguiObservationError):
        asyncio.run(observer.resume([obs(5)]))
    assert readings(observer) == before and readings(observer)[0] is before[0]


def test_an_empty_resume_commits_an_empty_projection_that_observe_continues() -> None:
    observer = HarnessAguiObserver()
    assert asyncio.run(observer.resume([])) is None
    assert observer.snapshot() == () and observer.run_id is None
    assert [e.type for e in observer.observe(obs(0))] == [EventType.RUN_STARTED, EventType.CUSTOM]


# -- wrong Python types --------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    None, 3, "text", {"v": 1, "kind": "event"}, ObservationEvent(name="n"), RunResult(status="cancelled"),
    TextPart(content="x"), [obs(0)],
], ids=["none", "int", "str", "dict", "payload", "run-result", "part", "list"])
def test_observe_with_a_wrong_python_type_raises_type_error_and_changes_nothing(bad: Any) -> None:
    for observer in (HarnessAguiObserver(), observed([obs(0)])):
        before = readings(observer)
        with pytest.raises(TypeError):
            observer.observe(bad)
        assert readings(observer) == before


def test_observe_of_an_encoded_wire_line_raises_type_error() -> None:
    with pytest.raises(TypeError):
        HarnessAguiObserver().observe(encode(obs(0)))  # type: ignore[arg-type]


@pytest.mark.parametrize("history", [None, 5, "items", b"items", obs(0)], ids=["none", "int", "str", "bytes", "item"])
def test_resume_with_something_that_is_not_an_iterable_of_items_raises_type_error_and_stays_fresh(history: Any) -> None:
    observer = HarnessAguiObserver()
    with pytest.raises(TypeError):
        asyncio.run(observer.resume(history))
    assert observer.is_fresh and readings(observer) == readings(HarnessAguiObserver())


@pytest.mark.parametrize("bad", [{"v": 1}, "line", None, ObservationEvent(name="n")], ids=["dict", "str", "none",
                                                                                          "payload"])
def test_resume_of_a_history_yielding_a_wrong_type_raises_type_error_and_stays_fresh(bad: Any) -> None:
    observer = HarnessAguiObserver()
    with pytest.raises(TypeError):
        asyncio.run(observer.resume([obs(0), obs(1), bad]))
    assert observer.is_fresh and observer.snapshot() == () and observer.run_id is None


@pytest.mark.parametrize("processor", [5, "upper", object()], ids=["int", "str", "object"])
def test_a_processor_that_is_not_callable_raises_type_error(processor: Any) -> None:
    with pytest.raises(TypeError):
        HarnessAguiObserver(processor)


# -- snapshot() -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def live() -> tuple[HarnessAguiObserver, tuple[BaseEvent, ...]]:
    observer = HarnessAguiObserver()
    published = tuple(e for item in simulated_run() for e in observer.observe(item))
    return observer, published


def test_a_fresh_snapshot_is_empty() -> None:
    snap = HarnessAguiObserver().snapshot()
    assert len(snap) == 0 and snap == () and list(snap) == []
    with pytest.raises(IndexError):
        snap[0]


def test_snapshot_is_an_immutable_sequence_with_len_indexing_and_iteration(live: Any) -> None:
    observer, published = live
    snap = observer.snapshot()
    assert isinstance(snap, Sequence)
    assert len(snap) == len(published) == observer.event_count
    assert snap[0] == published[0] and snap[0].type == EventType.RUN_STARTED
    assert snap[-1] == published[-1] and snap[-1].type == EventType.RUN_FINISHED
    assert snap[len(published) // 2] == published[len(published) // 2]
    assert list(snap) == list(published)
    assert [e.type for e in reversed(snap)] == [e.type for e in reversed(published)]
    assert snap[3] in snap
    with pytest.raises(IndexError):
        snap[len(published)]
    with pytest.raises(TypeError):
        snap[0] = published[1]  # type: ignore[index]
    with pytest.raises(TypeError):
        del snap[0]  # type: ignore[attr-defined]
    assert not hasattr(snap, "append")


def test_snapshot_equals_a_tuple_or_list_of_the_same_events_and_nothing_else(live: Any) -> None:
    observer, published = live
    snap = observer.snapshot()
    assert snap == published and published == snap
    assert snap == list(published)
    assert snap == observer.snapshot()
    assert snap != published[:-1]
    assert snap != published + (published[0],)
    changed = published[:5] + (published[5].model_copy(update={"timestamp": 0}),) + published[6:]
    assert snap != changed
    assert snap != "not events"


@pytest.mark.parametrize("bounds", [
    slice(None), slice(1, 4), slice(0, 0), slice(-5, None), slice(None, -3), slice(10, 2), slice(2, 1000),
    slice(None, None, 2), slice(None, None, -1),
], ids=str)
def test_slicing_a_snapshot_gives_a_snapshot_equal_to_the_tuple_slice(live: Any, bounds: slice) -> None:
    observer, published = live
    part = observer.snapshot()[bounds]
    assert isinstance(part, Sequence)
    assert part == published[bounds]
    assert len(part) == len(published[bounds])


@pytest.mark.parametrize(("start", "stop"), [
    (None, None), (0, None), (5, None), (None, 5), (3, 9), (-4, None), (None, -4), (-6, -2), (9, 3), (0, 10_000),
])
def test_snapshot_with_start_and_stop_equals_the_slice_of_the_whole(live: Any, start: int | None,
                                                                     stop: int | None) -> None:
    observer, published = live
    assert observer.snapshot(start, stop) == published[start:stop]
    assert observer.snapshot(start, stop) == observer.snapshot()[start:stop]


def test_a_snapshot_does_not_change_when_the_observer_goes_on() -> None:
    items = simulated_run()
    observer = observed(items[:10])
    early = observer.snapshot()
    early_events = tuple(early)
    for item in items[10:]:
        observer.observe(item)
    assert len(early) == len(early_events) < observer.event_count
    assert early == early_events
    assert observer.snapshot()[:len(early)] == early


# -- detachment --------------------------------------------------------------------------------------

def _detach_run() -> list[HarnessStreamEvent]:
    b = SourceBuilder().request().text(0, ["Hel", "lo"])
    b.tool_call(1, "lookup", "c-1", ['{"q": 1}']).tool_result("c-1", "lookup", {"rows": [1, 2]})
    b.observation("budget", {"left": {"tokens": 10}, "list": [1, 2]})
    b.result(RunResult(status="completed", output={"answer": {"text": "Hello", "refs": [1]}}))
    return b.items


def _mutate(event: BaseEvent) -> None:
    """Scribble over everything mutable in an AG-UI event."""
    for name in type(event).model_fields:
        if name == "type":
            continue
        value = getattr(event, name)
        if isinstance(value, str):
            setattr(event, name, value + "!")
        elif isinstance(value, int):
            setattr(event, name, value + 1)
        elif isinstance(value, dict):
            for k in list(value):
                if isinstance(value[k], dict):
                    value[k]["scribbled"] = True
                elif isinstance(value[k], list):
                    value[k].append("scribbled")
            value["scribbled"] = True
        elif isinstance(value, list):
            value.append("scribbled")
            for v in value:
                if isinstance(v, BaseModel):
                    _mutate(v)
        elif isinstance(value, BaseModel):
            _mutate(value)


def test_mutating_events_returned_by_observe_changes_nothing_inside() -> None:
    items = _detach_run()
    observer, reference = HarnessAguiObserver(), observed(items)
    scribbled = []
    for item in items:
        for event in observer.observe(item):
            _mutate(event)
            scribbled.append(event)
    assert all(a != b for a, b in zip(scribbled, reference.snapshot(), strict=True))
    assert observer.snapshot() == reference.snapshot()
    assert observer.state.events == reference.state.events


def test_mutating_snapshotted_events_changes_nothing_inside() -> None:
    items = _detach_run()
    observer, reference = observed(items), observed(items)
    snap = observer.snapshot()
    read = list(snap) + [snap[i] for i in range(len(snap))] + list(observer.snapshot(2, 6))
    for event in read:
        _mutate(event)
    pristine = list(reference.snapshot())
    assert all(a != b for a, b in zip(read, pristine + pristine + pristine[2:6], strict=True))
    assert snap == reference.snapshot()
    assert observer.snapshot() == reference.snapshot()


@pytest.mark.parametrize("kind", [EventType.CUSTOM, EventType.RUN_FINISHED, EventType.TOOL_CALL_RESULT])
def test_mutating_dict_values_inside_a_returned_event_changes_nothing_inside(kind: EventType) -> None:
    items = _detach_run()
    observer = observed(items)
    (event,) = [e for e in observer.snapshot() if e.type == kind][-1:]
    pristine = event.model_copy(deep=True)
    if kind == EventType.CUSTOM:
        event.value["payload"]["value"]["left"]["tokens"] = -1
        event.value["payload"]["value"]["list"].append(3)
        event.value["sequence"] = 99
    elif kind == EventType.RUN_FINISHED:
        event.result["answer"]["text"] = "Goodbye"
        event.result["answer"]["refs"].clear()
    else:
        event.metadata["harness"]["outcome"] = "failed"
        event.metadata.clear()
    (again,) = [e for e in observer.snapshot() if e.type == kind][-1:]
    assert again == pristine and again != event


def test_mutating_the_interrupts_of_a_suspended_run_changes_nothing_inside() -> None:
    b = SourceBuilder().result(RunResult(status="suspended", deferred=Deferred(
        approvals=(DeferredToolCall(tool_call_id="c", tool_name="rm", args={"path": "/x"}),))))
    observer = HarnessAguiObserver()
    finished = observer.observe(b.items[0])[-1]
    pristine = finished.model_copy(deep=True)
    finished.outcome.interrupts[0].metadata["harness"]["args"]["path"] = "/"
    finished.outcome.interrupts.clear()
    assert observer.snapshot()[-1] == pristine


def test_mutating_source_json_after_observing_it_changes_nothing_inside() -> None:
    value = {"left": {"tokens": 10}}
    args = {"q": "rain"}
    items = [obs(0, value), start(1, 0, call("search", args, "c")), end(2, 0, call("search", args, "c")),
             res(3, RunResult(status="completed", output=value))]
    observer = observed(items)
    before = tuple(observer.snapshot())
    value["left"]["tokens"] = 0
    args["q"] = "sun"
    assert observer.snapshot() == before
    assert observer.snapshot()[1].value["payload"]["value"] == {"left": {"tokens": 10}}
