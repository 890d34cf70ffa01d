# The processor contract of SPEC section 6: ``processor(item, event)`` may
# drop an event (None) or rewrite its one content field; any other change is
# an AguiObservationError naming the event and the field. An exception raised
# by the processor reaches the caller of observe() or resume() and leaves the
# observer untouched, and a replay through the same processor gives the same
# projection as live observation.

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from typing import Any

import pytest
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    EventType,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from harness_agui import AguiObservationError, HarnessAguiObserver, HarnessStreamEvent
from harness_agui.source import RunResult, Usage
from harness_agui.testing import SourceBuilder, simulated_run

Processor = Callable[[Any, BaseEvent], "BaseEvent | None"]


def rich_run() -> list[HarnessStreamEvent]:
    """A completed run producing one event of every kind the projection emits."""
    b = SourceBuilder().user("What is 6 x 7?").request()
    b.thinking(0, ["Multiply ", "6 by 7."], signature="c2ln")
    b.text(1, ["Let me ", "compute."])
    b.tool_call(2, "calc", "c-1", ['{"expr": ', '"6*7"}']).tool_result("c-1", "calc", {"value": 42})
    b.observation("budget", {"left": 3})
    b.result(RunResult(status="completed", output={"answer": 42}, usage=Usage(input_tokens=10, output_tokens=4)))
    return b.items


def failed_run() -> list[HarnessStreamEvent]:
    return SourceBuilder().request().text(0, ["Hm"]).failed("model_error", "provider said no").items


def observed(items: list[HarnessStreamEvent], processor: Processor | None = None) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(processor)
    for item in items:
        observer.observe(item)
    return observer


def only(kind: EventType, change: Callable[[BaseEvent], BaseEvent | None]) -> Processor:
    """A processor applying ``change`` to events of one type and passing the rest."""
    def processor(item: Any, event: BaseEvent) -> BaseEvent | None:
        return change(event) if event.type == kind else event
    return processor


def types(events: Any) -> list[str]:
    return [e.type.value for e in events]


# -- dropping ----------------------------------------------------------------------------------

def test_a_processor_returning_none_drops_the_event_from_the_output_and_the_projection() -> None:
    items = rich_run()
    plain = observed(items)
    observer = HarnessAguiObserver(only(EventType.TEXT_MESSAGE_CONTENT, lambda e: None))
    returned = [e for item in items for e in observer.observe(item)]
    expected = [e for e in plain.snapshot() if e.type != EventType.TEXT_MESSAGE_CONTENT]
    assert returned == expected
    assert observer.snapshot() == tuple(expected)
    assert observer.event_count == len(expected) == plain.event_count - 3  # the question and two deltas


def test_dropping_every_event_of_an_item_returns_an_empty_tuple() -> None:
    items = rich_run()
    observer = HarnessAguiObserver(lambda item, event: None if item.sequence == 3 else event)
    outputs = [observer.observe(item) for item in items]
    assert outputs[3] == () and all(outputs[i] for i in (0, 1, 2, 4))


def test_dropping_run_started_is_allowed_and_the_run_stays_bound() -> None:
    observer = HarnessAguiObserver(only(EventType.RUN_STARTED, lambda e: None))
    first, *rest = rich_run()
    assert types(observer.observe(first)) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
    assert observer.run_id == "run-1"


# -- rewriting content fields ---------------------------------------------------------------------

CONTENT_REWRITES: dict[str, tuple[EventType, str, Any, Callable[[], list[HarnessStreamEvent]]]] = {
    "text delta": (EventType.TEXT_MESSAGE_CONTENT, "delta", "[redacted]", rich_run),
    "reasoning delta": (EventType.REASONING_MESSAGE_CONTENT, "delta", "…", rich_run),
    "tool call args delta": (EventType.TOOL_CALL_ARGS, "delta", " ", rich_run),
    "tool result content": (EventType.TOOL_CALL_RESULT, "content", '{"value":"hidden"}', rich_run),
    "encrypted value": (EventType.REASONING_ENCRYPTED_VALUE, "encrypted_value", "b3RoZXI=", rich_run),
    "run result": (EventType.RUN_FINISHED, "result", {"answer": "hidden", "n": [1, 2.5, None]}, rich_run),
    "run result removed": (EventType.RUN_FINISHED, "result", None, rich_run),
    "run result replaced by text": (EventType.RUN_FINISHED, "result", "forty-two", rich_run),
    "error message": (EventType.RUN_ERROR, "message", "Something went wrong.", failed_run),
}


@pytest.mark.parametrize("case", CONTENT_REWRITES)
def test_a_processor_may_rewrite_each_content_field(case: str) -> None:
    kind, field, value, run = CONTENT_REWRITES[case]
    items = run()
    plain = observed(items)
    observer = HarnessAguiObserver(only(kind, lambda e: e.model_copy(update={field: value})))
    returned = [e for item in items for e in observer.observe(item)]
    expected = [e.model_copy(update={field: value}) if e.type == kind else e for e in plain.snapshot()]
    assert kind in {e.type for e in expected}
    assert returned == expected
    assert observer.snapshot() == tuple(expected)
    assert [getattr(e, field) for e in observer.snapshot() if e.type == kind] == [
        value for e in expected if e.type == kind]


def test_a_processor_may_change_the_content_of_the_event_it_was_given_in_place() -> None:
    def shout(item: Any, event: BaseEvent) -> BaseEvent:
        if isinstance(event, TextMessageContentEvent):
            event.delta = event.delta.upper()
        return event

    observer = observed(rich_run(), shout)
    text = "".join(e.delta for e in observer.snapshot() if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "WHAT IS 6 X 7?LET ME COMPUTE."  # the question is a user message too


def test_a_content_delta_emptied_by_the_processor_is_dropped() -> None:
    observer = observed(rich_run(), only(EventType.REASONING_MESSAGE_CONTENT, lambda e: e.model_copy(
        update={"delta": ""})))
    assert EventType.REASONING_MESSAGE_CONTENT not in {e.type for e in observer.snapshot()}
    assert EventType.REASONING_MESSAGE_START in {e.type for e in observer.snapshot()}


def test_an_identity_processor_gives_the_same_projection_as_none() -> None:
    items = rich_run()
    assert observed(items, lambda item, event: event).snapshot() == observed(items).snapshot()


def test_the_processor_sees_each_event_with_the_source_item_that_produced_it() -> None:
    items = rich_run()
    seen: list[tuple[int, str]] = []

    def record(item: Any, event: BaseEvent) -> BaseEvent:
        seen.append((item.sequence, event.type.value))
        return event

    observer = HarnessAguiObserver(record)
    expected = []
    for item in items:
        expected.extend((item.sequence, e.type.value) for e in observer.observe(item))
    assert seen == expected
    assert seen[0] == (0, "RUN_STARTED") and seen[-1] == (items[-1].sequence, "RUN_FINISHED")


def test_an_event_kept_and_mutated_by_the_processor_afterwards_changes_nothing_inside() -> None:
    kept: list[BaseEvent] = []

    def keep(item: Any, event: BaseEvent) -> BaseEvent:
        kept.append(event)
        return event

    items = rich_run()
    observer = observed(items, keep)
    for event in kept:
        if isinstance(event, CustomEvent):
            event.value["payload"] = "scribbled"
        if hasattr(event, "delta"):
            event.delta = "scribbled"
    assert observer.snapshot() == observed(items).snapshot()


# -- structural changes -------------------------------------------------------------------------------

STRUCTURAL: list[tuple[EventType, str, Any]] = [
    (EventType.RUN_STARTED, "thread_id", "thread-2"),
    (EventType.RUN_STARTED, "run_id", "run-2"),
    (EventType.RUN_STARTED, "timestamp", 0),
    (EventType.RUN_STARTED, "parent_run_id", "run-0"),
    (EventType.TEXT_MESSAGE_START, "message_id", "m-2"),
    (EventType.TEXT_MESSAGE_START, "role", "user"),
    (EventType.TEXT_MESSAGE_START, "name", "bot"),
    (EventType.TEXT_MESSAGE_CONTENT, "message_id", "m-2"),
    (EventType.TEXT_MESSAGE_CONTENT, "timestamp", None),
    (EventType.TEXT_MESSAGE_CONTENT, "metadata", {"note": 1}),
    (EventType.TEXT_MESSAGE_CONTENT, "raw_event", {"raw": True}),
    (EventType.TEXT_MESSAGE_CONTENT, "subagent_run_id", "sub-1"),
    (EventType.TEXT_MESSAGE_END, "message_id", "m-2"),
    (EventType.REASONING_MESSAGE_START, "message_id", "r-2"),
    (EventType.REASONING_MESSAGE_CONTENT, "message_id", "r-2"),
    (EventType.REASONING_MESSAGE_END, "message_id", "r-2"),
    (EventType.REASONING_ENCRYPTED_VALUE, "entity_id", "r-2"),
    (EventType.REASONING_ENCRYPTED_VALUE, "subtype", "tool-call"),
    (EventType.TOOL_CALL_START, "tool_call_id", "c-2"),
    (EventType.TOOL_CALL_START, "tool_call_name", "other_tool"),
    (EventType.TOOL_CALL_START, "parent_message_id", None),
    (EventType.TOOL_CALL_ARGS, "tool_call_id", "c-2"),
    (EventType.TOOL_CALL_END, "tool_call_id", "c-2"),
    (EventType.TOOL_CALL_RESULT, "message_id", "c-1:answer"),
    (EventType.TOOL_CALL_RESULT, "tool_call_id", "c-2"),
    (EventType.TOOL_CALL_RESULT, "role", "assistant"),
    (EventType.TOOL_CALL_RESULT, "metadata", {"harness": {"outcome": "failed", "tool_name": "calc"}}),
    (EventType.CUSTOM, "name", "harness.something_else"),
    (EventType.CUSTOM, "value", {"redacted": True}),
    (EventType.RUN_FINISHED, "run_id", "run-2"),
    (EventType.RUN_FINISHED, "outcome", {"type": "cancelled"}),
    (EventType.RUN_FINISHED, "usage", None),
]


@pytest.mark.parametrize(("kind", "field", "value"), STRUCTURAL, ids=[f"{k.value}.{f}" for k, f, _ in STRUCTURAL])
def test_changing_a_structural_field_raises_naming_the_field(kind: EventType, field: str, value: Any) -> None:
    processor = only(kind, lambda e: e.model_copy(update={field: value}))
    with pytest.raises(AguiObservationError, match=re.escape(f"{kind.value}.{field}")):
        observed(rich_run(), processor)


@pytest.mark.parametrize(("field", "value"), [("code", "other_code"), ("usage", [{"inputTokens": 1}]),
                                              ("timestamp", 1)])
def test_changing_a_structural_field_of_run_error_raises_naming_the_field(field: str, value: Any) -> None:
    processor = only(EventType.RUN_ERROR, lambda e: e.model_copy(update={field: value}))
    with pytest.raises(AguiObservationError, match=re.escape(f"RUN_ERROR.{field}")):
        observed(failed_run(), processor)


@pytest.mark.parametrize("replacement", [
    lambda e: TextMessageEndEvent(message_id=e.message_id, timestamp=e.timestamp),
    lambda e: TextMessageStartEvent(message_id=e.message_id, timestamp=e.timestamp),
    lambda e: e.model_dump(),
    lambda e: e.delta,
    lambda e: True,
], ids=["other-event-class", "start-for-content", "dict", "str", "bool"])
def test_changing_the_event_type_raises(replacement: Callable[[Any], Any]) -> None:
    processor = only(EventType.TEXT_MESSAGE_CONTENT, replacement)
    with pytest.raises(AguiObservationError, match="TEXT_MESSAGE_CONTENT"):
        observed(rich_run(), processor)


@pytest.mark.parametrize("kind", [EventType.TEXT_MESSAGE_CONTENT, EventType.CUSTOM, EventType.RUN_FINISHED],
                         ids=lambda k: k.value)
def test_adding_an_extra_field_raises_naming_the_field(kind: EventType) -> None:
    processor = only(kind, lambda e: type(e)(**dict(e), debug_note="added"))
    with pytest.raises(AguiObservationError, match="debug_note"):
        observed(rich_run(), processor)


@pytest.mark.parametrize(("kind", "field", "value"), [
    (EventType.TEXT_MESSAGE_CONTENT, "delta", 5),
    (EventType.TEXT_MESSAGE_CONTENT, "delta", None),
    (EventType.TOOL_CALL_ARGS, "delta", {"expr": "6*7"}),
    (EventType.TOOL_CALL_RESULT, "content", {"value": 42}),
    (EventType.REASONING_ENCRYPTED_VALUE, "encrypted_value", b"c2ln"),
    (EventType.RUN_FINISHED, "result", object()),
    (EventType.RUN_FINISHED, "result", {"x": math.nan}),
], ids=["delta-int", "delta-none", "args-dict", "result-content-dict", "encrypted-bytes", "result-object",
        "result-nan"])
def test_a_content_field_of_the_wrong_type_raises_naming_it(kind: EventType, field: str, value: Any) -> None:
    processor = only(kind, lambda e: e.model_copy(update={field: value}))
    with pytest.raises(AguiObservationError, match=kind.value):
        observed(rich_run(), processor)


def test_a_contract_violation_leaves_the_observer_exactly_as_before() -> None:
    items = rich_run()
    bad_at = 4

    def processor(item: Any, event: BaseEvent) -> BaseEvent:
        if item.sequence == bad_at:
            return event.model_copy(update={"timestamp": 1})
        return event

    observer = observed(items[:bad_at], processor)
    state, snapshot = observer.state, tuple(observer.snapshot())
    with pytest.raises(AguiObservationError, match="timestamp"):
        observer.observe(items[bad_at])
    assert observer.state is state and observer.snapshot() == snapshot and observer.event_count == len(snapshot)


# -- processor exceptions ---------------------------------------------------------------------------------

class HostPolicyError(Exception):
    pass


def failing_on(sequence: int, error: BaseException) -> Processor:
    def processor(item: Any, event: BaseEvent) -> BaseEvent:
        if item.sequence == sequence:
            raise error
        return event
    return processor


def test_a_processor_exception_propagates_from_observe_unchanged_and_leaves_the_observer_as_before() -> None:
    items = rich_run()
    error = HostPolicyError("blocked by policy")
    observer = observed(items[:6], failing_on(6, error))
    state, snapshot, count = observer.state, observer.snapshot(), observer.event_count
    with pytest.raises(HostPolicyError) as raised:
        observer.observe(items[6])
    assert raised.value is error
    assert observer.state is state and observer.snapshot() == snapshot and observer.event_count == count
    assert (observer.thread_id, observer.run_id, observer.finished) == ("thread-1", "run-1", False)


def test_a_processor_exception_on_the_terminal_item_leaves_the_run_unfinished() -> None:
    items = rich_run()
    observer = observed(items[:-1], failing_on(items[-1].sequence, HostPolicyError("no")))
    with pytest.raises(HostPolicyError):
        observer.observe(items[-1])
    assert not observer.finished
    assert observer.snapshot() == observed(items[:-1]).snapshot()


@pytest.mark.parametrize("at", [0, 6, -1], ids=["first-item", "middle-item", "last-item"])
def test_a_processor_exception_propagates_from_resume_and_leaves_the_observer_fresh(at: int) -> None:
    items = rich_run()
    error = HostPolicyError("blocked during replay")
    observer = HarnessAguiObserver(failing_on(items[at].sequence, error))
    with pytest.raises(HostPolicyError) as raised:
        asyncio.run(observer.resume(items))
    assert raised.value is error
    assert observer.is_fresh and observer.snapshot() == () and observer.event_count == 0
    assert (observer.thread_id, observer.run_id, observer.finished) == (None, None, False)


def test_a_contract_violation_during_resume_raises_and_leaves_the_observer_fresh() -> None:
    observer = HarnessAguiObserver(only(EventType.TOOL_CALL_END, lambda e: e.model_copy(update={"tool_call_id": "x"})))
    with pytest.raises(AguiObservationError, match="TOOL_CALL_END.tool_call_id"):
        asyncio.run(observer.resume(rich_run()))
    assert observer.is_fresh and observer.snapshot() == ()


# -- replay --------------------------------------------------------------------------------------------

def redact(item: Any, event: BaseEvent) -> BaseEvent | None:
    """A replay-stable Host processor: hides digits, drops reasoning text,
    rewrites results and keeps everything else."""
    if event.type == EventType.REASONING_MESSAGE_CONTENT:
        return None
    if event.type in (EventType.TEXT_MESSAGE_CONTENT, EventType.TOOL_CALL_ARGS):
        return event.model_copy(update={"delta": re.sub(r"\d", "#", event.delta)})
    if event.type == EventType.TOOL_CALL_RESULT:
        return event.model_copy(update={"content": f"[{len(event.content)} chars]"})
    if event.type == EventType.RUN_FINISHED:
        return event.model_copy(update={"result": {"redacted": True, "sequence": item.sequence}})
    return event


@pytest.mark.parametrize("run", [rich_run, simulated_run, failed_run], ids=["rich", "simulated", "failed"])
def test_replay_through_a_processor_gives_the_same_projection_as_live_observation(
    run: Callable[[], list[HarnessStreamEvent]]
) -> None:
    items = run()
    live_calls: list[tuple[int, BaseEvent]] = []
    replay_calls: list[tuple[int, BaseEvent]] = []

    def recording(calls: list[tuple[int, BaseEvent]]) -> Processor:
        def processor(item: Any, event: BaseEvent) -> BaseEvent | None:
            calls.append((item.sequence, event.model_copy(deep=True)))
            return redact(item, event)
        return processor

    live = observed(items, recording(live_calls))
    replayed = HarnessAguiObserver(recording(replay_calls))
    asyncio.run(replayed.resume(items))
    assert replayed.snapshot() == live.snapshot()
    assert replay_calls == live_calls
    assert EventType.REASONING_MESSAGE_CONTENT not in {e.type for e in live.snapshot()}


def test_resume_from_a_prefix_through_a_processor_then_live_equals_live_throughout() -> None:
    items = simulated_run()
    live = observed(items, redact)
    cut = len(items) // 2
    resumed = HarnessAguiObserver(redact)
    asyncio.run(resumed.resume(items[:cut]))
    tail = [e for item in items[cut:] for e in resumed.observe(item)]
    assert resumed.snapshot() == live.snapshot()
    assert tuple(tail) == live.snapshot()[len(live.snapshot()) - len(tail):]


# -- a replacement is held to the same limits as the source ------------------------------

def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("kind", "field", "value", "says"), [
    (EventType.RUN_FINISHED, "result", {"deep": _nested(300)}, "nested more than 240"),
    (EventType.RUN_FINISHED, "result", {"ok": 1, "\ud800": 2}, "lone surrogate"),
    (EventType.RUN_FINISHED, "result", ["fine", "\udfff"], "lone surrogate"),
    (EventType.RUN_FINISHED, "result", 10 ** 4100, "more than 4000 digits"),
    (EventType.TEXT_MESSAGE_CONTENT, "delta", "broken \ud83d text", "lone surrogate"),
    (EventType.TOOL_CALL_RESULT, "content", "\udc00", "lone surrogate"),
], ids=["result-too-deep", "result-surrogate-key", "result-surrogate-value", "result-huge-int",
        "delta-surrogate", "tool-result-surrogate"])
def test_a_replacement_that_could_not_be_serialised_is_refused_naming_the_field(kind: EventType, field: str,
                                                                                value: Any, says: str) -> None:
    items = rich_run()
    at = next(i for i, item in enumerate(items)
              if kind in {e.type for e in observed(items[:i + 1]).snapshot()[observed(items[:i]).event_count:]})
    processor = only(kind, lambda e: e.model_copy(update={field: value}))
    observer = observed(items[:at], processor)
    state, snapshot = observer.state, tuple(observer.snapshot())
    with pytest.raises(AguiObservationError, match=f"{kind.value}.{field}.*{says}|{says}.*{kind.value}.{field}"):
        observer.observe(items[at])
    assert observer.state is state and observer.snapshot() == snapshot
