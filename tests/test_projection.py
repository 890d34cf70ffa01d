# One test per row of SPEC section 4's table and per bullet under it.
#
# Runs are written with harness_agui.demo.SourceBuilder: thread "thread-1",
# run "run-1", sequences 0, 1, 2, ... and occurred_at starting at
# 2026-11-30T09:00:00Z and advancing 40 ms per item, so item ``seq`` has the
# AG-UI timestamp ``ts(seq)``. Expected events are written in their AG-UI
# wire form (camelCase, None fields left out), which is what a client reads:
# ``E("TEXT_MESSAGE_START", 1, messageId=..., role="assistant")``.

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from ag_ui.core import BaseEvent, CustomEvent, EventType
from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import (
    AguiObservationError,
    HarnessAguiObserver,
    HarnessEvent,
    HarnessStreamEvent,
    ProjectionState,
    assemble_custom,
    reduce,
)
from harness_agui.core.custom import is_fragment
from harness_agui.core.history import HistoryCursor
from harness_agui.core.reduce import APPROVAL_SCHEMA, INPUT_CHUNK_CHARS
from harness_agui.core.state import MAX_EVENT_BYTES, RunState
from harness_agui.source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
    InputEvent,
    ObservationEvent,
    PartDeltaEvent,
    PartStartEvent,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
    Usage,
)
from harness_agui.testing import DEMO_START, SourceBuilder, simulated_run

T0 = 1_796_029_200_000  # 2026-11-30T09:00:00Z in epoch milliseconds
THREAD, RUN = "thread-1", "run-1"


def ts(seq: int) -> int:
    return T0 + 40 * seq


def iso(seq: int) -> str:
    return (DEMO_START + timedelta(milliseconds=40 * seq)).isoformat()


def E(type_: str, seq: int, **fields: Any) -> dict[str, Any]:
    """An expected AG-UI event in wire form, stamped with item ``seq``'s time."""
    return {"type": type_, "timestamp": ts(seq), **fields}


def RS() -> dict[str, Any]:
    return E("RUN_STARTED", 0, threadId=THREAD, runId=RUN)


def custom_value(seq: int, payload: Any, **extra: Any) -> dict[str, Any]:
    return {"thread_id": THREAD, "run_id": RUN, "sequence": seq, "occurred_at": iso(seq), "payload": payload,
            **extra}


def CUSTOM(name: str, seq: int, payload: Any, **extra: Any) -> dict[str, Any]:
    return E("CUSTOM", seq, name=name, value=custom_value(seq, payload, **extra))


def wire(events: Any) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]


def per_item(items: list[HarnessStreamEvent]) -> list[list[dict[str, Any]]]:
    """What observe() returned for each item, in wire form."""
    observer = HarnessAguiObserver()
    return [wire(observer.observe(item)) for item in items]


def project(items: list[HarnessStreamEvent]) -> list[BaseEvent]:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return list(observer.snapshot())


def text_id(index: int, request: int = 0) -> str:
    return f"{RUN}:request-{request}:part-{index}:text"


def thinking_id(index: int, request: int = 0) -> str:
    return f"{RUN}:request-{request}:part-{index}:thinking"


# -- first item and timestamps ----------------------------------------------------------

def test_run_started_comes_before_the_first_items_own_events_and_only_once() -> None:
    b = SourceBuilder().observation("budget", {"left": 3}).observation("budget", {"left": 2})
    assert per_item(b.items) == [
        [RS(), CUSTOM("harness.observation", 0, {"type": "observation", "name": "budget", "value": {"left": 3}})],
        [CUSTOM("harness.observation", 1, {"type": "observation", "name": "budget", "value": {"left": 2}})],
    ]


def test_run_started_precedes_a_terminal_item_that_is_the_first_item() -> None:
    b = SourceBuilder().completed("ok")
    assert per_item(b.items) == [[
        RS(), E("RUN_FINISHED", 0, threadId=THREAD, runId=RUN, result="ok", outcome={"type": "success"}),
    ]]


def test_run_started_carries_the_first_items_thread_and_run() -> None:
    b = SourceBuilder("thread-x", "run-y").observation("n", None)
    events = wire(project(b.items))
    assert events[0] == {"type": "RUN_STARTED", "timestamp": T0, "threadId": "thread-x", "runId": "run-y"}


def test_a_state_whose_history_cursor_starts_later_takes_a_first_item_there_and_still_starts_the_run() -> None:
    item = SourceBuilder("thread-x", "run-y", first_sequence=41).observation("n", None).items[0]
    state, events = reduce(ProjectionState(root=RunState(history=HistoryCursor(next_sequence=41))), item)
    assert wire(events)[0] == {"type": "RUN_STARTED", "timestamp": T0, "threadId": "thread-x", "runId": "run-y"}
    assert (state.thread_id, state.run_id, state.last_sequence) == ("thread-x", "run-y", 41)


@pytest.mark.parametrize(("occurred_at", "expected"), [
    (datetime(2026, 11, 30, 9, 0, 0, 125999, tzinfo=UTC), T0 + 125),
    (datetime(2026, 11, 30, 10, 0, 0, 1000, tzinfo=timezone(timedelta(hours=1))), T0 + 1),
    (datetime(2026, 11, 30, 3, 30, 0, 999, tzinfo=timezone(timedelta(hours=-5, minutes=-30))), T0),
    (datetime(1970, 1, 1, tzinfo=UTC), 0),
    (datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC), -1),
], ids=["utc-micros-floored", "plus-one-hour", "minus-five-thirty", "epoch", "before-epoch-floored"])
def test_every_event_is_stamped_with_occurred_at_in_epoch_milliseconds(occurred_at: datetime, expected: int) -> None:
    item = HarnessEvent(thread_id=THREAD, run_id=RUN, sequence=0, occurred_at=occurred_at,
                        event=PartStartEvent(index=0, part=TextPart(content="Hi")))
    events = HarnessAguiObserver().observe(item)
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.TEXT_MESSAGE_START,
                                        EventType.TEXT_MESSAGE_CONTENT]
    assert [e.timestamp for e in events] == [expected] * 3


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=st.integers(-1439, 1439).map(lambda m: timezone(timedelta(minutes=m)))))
def test_the_timestamp_is_the_floor_of_the_milliseconds_since_the_epoch(occurred_at: datetime) -> None:
    item = HarnessEvent(thread_id=THREAD, run_id=RUN, sequence=0, occurred_at=occurred_at,
                        event=ObservationEvent(name="n", value=1))
    expected = (occurred_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert {e.timestamp for e in HarnessAguiObserver().observe(item)} == {expected}


# -- text parts ----------------------------------------------------------------------------

def test_a_streamed_text_part_gives_start_as_assistant_one_content_per_delta_and_end() -> None:
    b = SourceBuilder().text(0, ["Hel", "lo"])
    mid = text_id(0)
    assert per_item(b.items) == [
        [RS(), E("TEXT_MESSAGE_START", 0, messageId=mid, role="assistant")],
        [E("TEXT_MESSAGE_CONTENT", 1, messageId=mid, delta="Hel")],
        [E("TEXT_MESSAGE_CONTENT", 2, messageId=mid, delta="lo")],
        [E("TEXT_MESSAGE_END", 3, messageId=mid)],
    ]


def test_empty_text_deltas_give_no_content_event() -> None:
    deltas = [TextPartDelta(content_delta=""), TextPartDelta(content_delta="a"), TextPartDelta(content_delta="")]
    b = SourceBuilder().part(0, TextPart(content=""), deltas, TextPart(content="a"))
    mid = text_id(0)
    assert per_item(b.items) == [
        [RS(), E("TEXT_MESSAGE_START", 0, messageId=mid, role="assistant")],
        [],
        [E("TEXT_MESSAGE_CONTENT", 2, messageId=mid, delta="a")],
        [],
        [E("TEXT_MESSAGE_END", 4, messageId=mid)],
    ]


def test_text_present_only_in_the_end_part_is_emitted_once_before_end() -> None:
    b = SourceBuilder().part(0, TextPart(content=""), [], TextPart(content="Hello"))
    mid = text_id(0)
    assert per_item(b.items) == [
        [RS(), E("TEXT_MESSAGE_START", 0, messageId=mid, role="assistant")],
        [E("TEXT_MESSAGE_CONTENT", 1, messageId=mid, delta="Hello"), E("TEXT_MESSAGE_END", 1, messageId=mid)],
    ]


def test_text_in_the_start_part_is_emitted_at_start_and_never_repeated_at_end() -> None:
    b = SourceBuilder().part(0, TextPart(content="He"), [TextPartDelta(content_delta="llo")], TextPart(content="Hello"))
    mid = text_id(0)
    assert per_item(b.items) == [
        [RS(), E("TEXT_MESSAGE_START", 0, messageId=mid, role="assistant"),
         E("TEXT_MESSAGE_CONTENT", 0, messageId=mid, delta="He")],
        [E("TEXT_MESSAGE_CONTENT", 1, messageId=mid, delta="llo")],
        [E("TEXT_MESSAGE_END", 2, messageId=mid)],
    ]


def test_an_end_part_longer_than_what_was_streamed_adds_only_the_remainder() -> None:
    b = SourceBuilder().part(0, TextPart(content=""), [TextPartDelta(content_delta="Hel")], TextPart(content="Hello"))
    mid = text_id(0)
    assert per_item(b.items)[2] == [E("TEXT_MESSAGE_CONTENT", 2, messageId=mid, delta="lo"),
                                    E("TEXT_MESSAGE_END", 2, messageId=mid)]


def test_a_text_part_with_its_own_id_uses_it_as_the_message_id() -> None:
    b = SourceBuilder().text(0, ["Hi"], id="msg-7")
    events = wire(project(b.items))
    assert {e["messageId"] for e in events[1:]} == {"msg-7"}


def test_generated_message_ids_name_the_run_model_request_part_index_and_kind() -> None:
    b = SourceBuilder().text(3, ["a"]).request().thinking(0, ["b"]).request().text(2, ["c"]).thinking(5, ["d"])
    starts = [e for e in wire(project(b.items)) if e["type"].endswith("_START") and "messageId" in e]
    assert [e["messageId"] for e in starts] == [
        "run-1:request-0:part-3:text",
        "run-1:request-0:part-0:thinking",
        "run-1:request-1:part-2:text",
        "run-1:request-1:part-5:thinking",
    ]


def test_a_generated_id_already_used_in_the_run_gets_the_start_items_sequence_appended() -> None:
    # Two model responses with no model_request_started notice between them.
    b = SourceBuilder().text(0, ["a"]).thinking(1, ["b"]).text(0, ["c"]).completed("ok")
    events = project(b.items)
    starts = [e["messageId"] for e in wire(events) if e["type"] == "TEXT_MESSAGE_START"]
    assert starts == ["run-1:request-0:part-0:text", "run-1:request-0:part-0:text:6"]
    assert validate_agui(wire(events)).summary.errors == 0


def test_a_parts_own_id_used_by_two_parts_gets_the_second_start_items_sequence() -> None:
    # Provider summary parts of one reasoning item share its id: the Run is
    # not refused, and the AG-UI ids stay unique.
    b = SourceBuilder().thinking(0, ["a"], id="rs-1").thinking(1, ["b"], id="rs-1")
    events = project(b.items)
    starts = [e["messageId"] for e in wire(events) if e["type"] == "REASONING_MESSAGE_START"]
    assert starts == ["rs-1", f"rs-1:{b.items[3].sequence}"]
    assert validate_agui(wire(project(b.completed("ab").items))).summary.errors == 0


def test_the_request_index_comes_from_the_lifecycle_notice_not_from_counting_notices() -> None:
    notice = ExtensionEvent(kind="lifecycle", schema_version="1",
                            payload={"type": "model_request_started", "request_index": 7, "model": "m"})
    b = SourceBuilder().event(notice).text(0, ["x"])
    assert wire(project(b.items))[2]["messageId"] == "run-1:request-7:part-0:text"


# -- thinking parts ------------------------------------------------------------------------

def test_a_thinking_part_gives_reasoning_message_start_content_and_end() -> None:
    b = SourceBuilder().thinking(0, ["Let ", "me think"])
    mid = thinking_id(0)
    assert per_item(b.items) == [
        [RS(), E("REASONING_MESSAGE_START", 0, messageId=mid, role="reasoning")],
        [E("REASONING_MESSAGE_CONTENT", 1, messageId=mid, delta="Let ")],
        [E("REASONING_MESSAGE_CONTENT", 2, messageId=mid, delta="me think")],
        [E("REASONING_MESSAGE_END", 3, messageId=mid)],
    ]


def test_a_thinking_signature_becomes_an_encrypted_value_of_the_message_just_before_end() -> None:
    b = SourceBuilder().thinking(0, ["Hmm"], signature="c2ln")
    mid = thinking_id(0)
    assert per_item(b.items) == [
        [RS(), E("REASONING_MESSAGE_START", 0, messageId=mid, role="reasoning")],
        [E("REASONING_MESSAGE_CONTENT", 1, messageId=mid, delta="Hmm")],
        [],
        [E("REASONING_ENCRYPTED_VALUE", 3, subtype="message", entityId=mid, encryptedValue="c2ln"),
         E("REASONING_MESSAGE_END", 3, messageId=mid)],
    ]


def test_a_signature_delta_replaces_the_signature_and_the_last_one_is_the_encrypted_value() -> None:
    # pydantic-ai's rule, seen in real a13n-harness Runs: deltas 'ab' then 'cd' end as signature 'cd'.
    b = SourceBuilder().part(0, ThinkingPart(content="", id="th-1"), [
        ThinkingPartDelta(content_delta="Hmm", signature_delta="ab"),
        ThinkingPartDelta(signature_delta="cd"),
    ], ThinkingPart(content="Hmm", id="th-1"))
    assert per_item(b.items) == [
        [RS(), E("REASONING_MESSAGE_START", 0, messageId="th-1", role="reasoning")],
        [E("REASONING_MESSAGE_CONTENT", 1, messageId="th-1", delta="Hmm")],
        [],
        [E("REASONING_ENCRYPTED_VALUE", 3, subtype="message", entityId="th-1", encryptedValue="cd"),
         E("REASONING_MESSAGE_END", 3, messageId="th-1")],
    ]


def test_the_end_parts_signature_wins_over_signature_deltas() -> None:
    b = SourceBuilder().part(0, ThinkingPart(content=""), [ThinkingPartDelta(signature_delta="partial")],
                             ThinkingPart(content="x", signature="final"))
    assert per_item(b.items)[2] == [
        E("REASONING_MESSAGE_CONTENT", 2, messageId=thinking_id(0), delta="x"),
        E("REASONING_ENCRYPTED_VALUE", 2, subtype="message", entityId=thinking_id(0), encryptedValue="final"),
        E("REASONING_MESSAGE_END", 2, messageId=thinking_id(0)),
    ]


def test_a_signature_given_only_at_thinking_start_is_emitted_at_end() -> None:
    b = SourceBuilder().part(0, ThinkingPart(content="x", signature="early"), [], ThinkingPart(content="x"))
    assert per_item(b.items)[1] == [
        E("REASONING_ENCRYPTED_VALUE", 1, subtype="message", entityId=thinking_id(0), encryptedValue="early"),
        E("REASONING_MESSAGE_END", 1, messageId=thinking_id(0)),
    ]


# -- tool calls -------------------------------------------------------------------------------

def test_a_tool_call_starts_when_its_name_is_known_streams_args_as_they_arrive_and_ends_at_part_end() -> None:
    b = SourceBuilder().tool_call(0, "get_weather", "call-1", ['{"city": ', '"Lyon"}'])
    assert per_item(b.items) == [
        [RS(), E("TOOL_CALL_START", 0, toolCallId="call-1", toolCallName="get_weather")],
        [E("TOOL_CALL_ARGS", 1, toolCallId="call-1", delta='{"city": ')],
        [E("TOOL_CALL_ARGS", 2, toolCallId="call-1", delta='"Lyon"}')],
        [E("TOOL_CALL_END", 3, toolCallId="call-1")],
    ]


def test_text_args_in_the_start_part_are_emitted_right_after_start() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="f", args='{"a"', tool_call_id="c"),
                             [ToolCallPartDelta(args_delta=":1}")], ToolCallPart(tool_name="f", args='{"a":1}',
                                                                                  tool_call_id="c"))
    assert per_item(b.items) == [
        [RS(), E("TOOL_CALL_START", 0, toolCallId="c", toolCallName="f"),
         E("TOOL_CALL_ARGS", 0, toolCallId="c", delta='{"a"')],
        [E("TOOL_CALL_ARGS", 1, toolCallId="c", delta=":1}")],
        [E("TOOL_CALL_END", 2, toolCallId="c")],
    ]


def test_end_args_longer_than_what_was_streamed_add_only_the_remainder_before_end() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="f", args=None, tool_call_id="c"),
                             [ToolCallPartDelta(args_delta='{"a":')],
                             ToolCallPart(tool_name="f", args='{"a":1}', tool_call_id="c"))
    assert per_item(b.items)[2] == [E("TOOL_CALL_ARGS", 2, toolCallId="c", delta="1}"),
                                    E("TOOL_CALL_END", 2, toolCallId="c")]


def test_a_tool_call_whose_name_arrives_in_deltas_starts_at_its_first_args_delta() -> None:
    final = ToolCallPart(tool_name="get_weather", args='{"city":"Lyon"}', tool_call_id="c")
    b = SourceBuilder().part(0, ToolCallPart(tool_name="", args=None, tool_call_id="c"), [
        ToolCallPartDelta(tool_name_delta="get_"),
        ToolCallPartDelta(tool_name_delta="weather", tool_call_id="c"),
        ToolCallPartDelta(args_delta='{"city":'),
        ToolCallPartDelta(args_delta='"Lyon"}'),
    ], final)
    assert per_item(b.items) == [
        [RS()],
        [],
        [],
        [E("TOOL_CALL_START", 3, toolCallId="c", toolCallName="get_weather"),
         E("TOOL_CALL_ARGS", 3, toolCallId="c", delta='{"city":')],
        [E("TOOL_CALL_ARGS", 4, toolCallId="c", delta='"Lyon"}')],
        [E("TOOL_CALL_END", 5, toolCallId="c")],
    ]


def test_args_that_arrive_before_the_name_are_held_back_and_sent_after_start() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="", args='{"a":', tool_call_id="c"), [
        ToolCallPartDelta(args_delta="1"),
        ToolCallPartDelta(tool_name_delta="f", args_delta="}"),
    ], ToolCallPart(tool_name="f", args='{"a":1}', tool_call_id="c"))
    assert per_item(b.items) == [
        [RS()],
        [],
        [E("TOOL_CALL_START", 2, toolCallId="c", toolCallName="f"), E("TOOL_CALL_ARGS", 2, toolCallId="c",
                                                                          delta='{"a":1}')],
        [E("TOOL_CALL_END", 3, toolCallId="c")],
    ]


def test_a_tool_call_whose_name_is_known_only_at_its_end_starts_there() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="", args=None, tool_call_id="c"), [],
                             ToolCallPart(tool_name="lookup", args="{}", tool_call_id="c"))
    assert per_item(b.items) == [
        [RS()],
        [E("TOOL_CALL_START", 1, toolCallId="c", toolCallName="lookup"),
         E("TOOL_CALL_ARGS", 1, toolCallId="c", delta="{}"),
         E("TOOL_CALL_END", 1, toolCallId="c")],
    ]


def test_whole_object_args_are_emitted_once_as_compact_json_at_part_end() -> None:
    args = {"q": "pluie à Lyon", "limit": 3, "filters": {"days": [1, 2]}, "exact": None}
    b = SourceBuilder().part(0, ToolCallPart(tool_name="search", args=args, tool_call_id="c"), [],
                             ToolCallPart(tool_name="search", args=args, tool_call_id="c"))
    assert per_item(b.items) == [
        [RS(), E("TOOL_CALL_START", 0, toolCallId="c", toolCallName="search")],
        [E("TOOL_CALL_ARGS", 1, toolCallId="c",
           delta='{"q":"pluie à Lyon","limit":3,"filters":{"days":[1,2]},"exact":null}'),
         E("TOOL_CALL_END", 1, toolCallId="c")],
    ]


def test_object_args_deltas_are_merged_and_emitted_once_when_the_end_part_has_no_args() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="search", args={"q": "rain"}, tool_call_id="c"), [
        ToolCallPartDelta(args_delta={"limit": 3}),
        ToolCallPartDelta(args_delta={"q": "showers"}),
    ], ToolCallPart(tool_name="search", args=None, tool_call_id="c"))
    assert per_item(b.items) == [
        [RS(), E("TOOL_CALL_START", 0, toolCallId="c", toolCallName="search")],
        [],
        [],
        [E("TOOL_CALL_ARGS", 3, toolCallId="c", delta='{"q":"showers","limit":3}'),
         E("TOOL_CALL_END", 3, toolCallId="c")],
    ]


def test_object_args_of_the_end_part_are_the_final_args() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="search", args=None, tool_call_id="c"),
                             [ToolCallPartDelta(args_delta={"q": "draft"})],
                             ToolCallPart(tool_name="search", args={"q": "final", "n": 1}, tool_call_id="c"))
    assert per_item(b.items)[2] == [E("TOOL_CALL_ARGS", 2, toolCallId="c", delta='{"q":"final","n":1}'),
                                    E("TOOL_CALL_END", 2, toolCallId="c")]


def test_text_args_streamed_then_object_args_at_the_end_is_an_observation_error() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="f", args=None, tool_call_id="c"),
                             [ToolCallPartDelta(args_delta='{"a":')],
                             ToolCallPart(tool_name="f", args={"a": 1}, tool_call_id="c"))
    observer = HarnessAguiObserver()
    for item in b.items[:-1]:
        observer.observe(item)
    before = observer.state
    with pytest.raises(AguiObservationError, match="object args"):
        observer.observe(b.items[-1])
    assert observer.state is before


@pytest.mark.parametrize("args", [None, ""], ids=["none", "empty"])
def test_a_tool_call_without_args_gives_start_and_end_only(args: str | None) -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="now", args=args, tool_call_id="c"), [],
                             ToolCallPart(tool_name="now", args=args, tool_call_id="c"))
    assert per_item(b.items) == [[RS(), E("TOOL_CALL_START", 0, toolCallId="c", toolCallName="now")],
                                 [E("TOOL_CALL_END", 1, toolCallId="c")]]


@pytest.mark.parametrize("chunks", [
    ['{"city": ', '"Lyon", ', '"day": "tomorrow"}'],
    ["[1, ", "2, 3]"],
    ['{"nested": {"a": [', "true, null", "]}}"],
    ['{"t": "line\\nbreak \\"quoted\\" é"}'],
], ids=["object", "array", "nested", "escapes"])
def test_the_concatenated_args_of_a_call_are_valid_json_equal_to_the_final_args(chunks: list[str]) -> None:
    b = SourceBuilder().request().text(0, ["Calling."]).tool_call(1, "f", "call-1", chunks)
    events = project(b.items)
    args = "".join(e.delta for e in events if e.type == EventType.TOOL_CALL_ARGS)
    final = b.items[-1].event.part.args
    assert args == final
    json.loads(args)


def test_tool_call_start_names_the_preceding_assistant_text_message_of_the_same_request_as_parent() -> None:
    b = SourceBuilder().request().thinking(0, ["hmm"]).text(1, ["Let me check."]).tool_call(2, "f", "c1", ["{}"])
    starts = [e for e in wire(project(b.items)) if e["type"] == "TOOL_CALL_START"]
    assert starts == [E("TOOL_CALL_START", 7, toolCallId="c1", toolCallName="f", parentMessageId=text_id(1))]


def test_tool_call_parent_is_the_latest_text_message_and_uses_the_parts_own_id() -> None:
    b = (SourceBuilder().request().text(0, ["One."]).text(1, ["Two."], id="msg-two")
         .tool_call(2, "f", "c1", ["{}"]).tool_call(3, "g", "c2", ["{}"]))
    starts = [e for e in wire(project(b.items)) if e["type"] == "TOOL_CALL_START"]
    assert [e["parentMessageId"] for e in starts] == ["msg-two", "msg-two"]


def test_a_tool_call_without_preceding_text_in_its_request_has_no_parent() -> None:
    b = (SourceBuilder().request().text(0, ["Earlier request."]).request().tool_call(0, "f", "c1", ["{}"])
         .text(1, ["After the call."]))
    starts = [e for e in wire(project(b.items)) if e["type"] == "TOOL_CALL_START"]
    assert starts == [E("TOOL_CALL_START", 5, toolCallId="c1", toolCallName="f")]


def test_a_late_starting_tool_call_still_gets_the_text_parent() -> None:
    b = SourceBuilder().request().text(0, ["Checking."]).part(
        1, ToolCallPart(tool_name="", args=None, tool_call_id="c1"), [ToolCallPartDelta(tool_name_delta="f")],
        ToolCallPart(tool_name="f", args="{}", tool_call_id="c1"))
    starts = [e for e in wire(project(b.items)) if e["type"] == "TOOL_CALL_START"]
    assert starts[0]["parentMessageId"] == text_id(0)


# -- tool results ------------------------------------------------------------------------------

@pytest.mark.parametrize("outcome", ["success", "failed", "retried"])
def test_a_result_of_a_call_started_in_this_run_is_a_tool_call_result_whatever_the_outcome(outcome: str) -> None:
    b = SourceBuilder().tool_call(0, "lookup", "call-1", ["{}"]).tool_result("call-1", "lookup", "42 found", outcome)
    assert per_item(b.items)[-1] == [E(
        "TOOL_CALL_RESULT", 3, messageId="call-1:result", toolCallId="call-1", content="42 found", role="tool",
        metadata={"harness": {"outcome": outcome, "tool_name": "lookup"}},
    )]


@pytest.mark.parametrize(("content", "text"), [
    ("plain text", "plain text"),
    ('{"already": "json text"}', '{"already": "json text"}'),
    ({"temp": 12.5, "city": "Zürich", "tags": ["a", None]}, '{"temp":12.5,"city":"Zürich","tags":["a",null]}'),
    ([1, 2, 3], "[1,2,3]"),
    (7, "7"),
    (True, "true"),
    (None, "null"),
], ids=["text", "json-looking-text", "object", "list", "int", "bool", "none"])
def test_tool_result_content_is_text_as_given_or_compact_json(content: Any, text: str) -> None:
    b = SourceBuilder().tool_call(0, "f", "c", ["{}"]).tool_result("c", "f", content)
    (event,) = project(b.items)[-1:]
    assert event.type == EventType.TOOL_CALL_RESULT
    assert event.content == text


def test_a_result_of_a_call_ended_in_an_earlier_model_request_is_still_a_tool_call_result() -> None:
    b = (SourceBuilder().request().tool_call(0, "f", "c", ["{}"]).request()
         .tool_result("c", "f", {"ok": True}))
    assert wire(project(b.items))[-1]["type"] == "TOOL_CALL_RESULT"


def test_a_result_of_a_call_not_started_in_this_run_is_a_namespaced_custom() -> None:
    b = SourceBuilder().tool_result("call-from-earlier-run", "lookup", {"rows": 2}, "failed")
    assert per_item(b.items) == [[RS(), CUSTOM("harness.tool_result", 0, {
        "type": "tool_result", "tool_call_id": "call-from-earlier-run", "tool_name": "lookup", "outcome": "failed",
        "content": {"rows": 2},
    })]]


def test_a_second_result_for_an_answered_call_is_a_namespaced_custom() -> None:
    b = SourceBuilder().tool_call(0, "f", "c", ["{}"]).tool_result("c", "f", "one").tool_result("c", "f", "two",
                                                                                                  "retried")
    out = per_item(b.items)
    assert [e["type"] for e in out[-2]] == ["TOOL_CALL_RESULT"]
    assert out[-1] == [CUSTOM("harness.tool_result", 4, {
        "type": "tool_result", "tool_call_id": "c", "tool_name": "f", "outcome": "retried", "content": "two",
    })]


# -- inputs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["user", "steering"])
def test_a_user_or_steering_text_input_is_a_user_message(source: str) -> None:
    # A client that reloads the run shows the question (and the steering) as user messages.
    b = SourceBuilder().event(InputEvent(input_id="in-1", source=source, content="Hello there",
                                         metadata={"lang": "en"}))
    mid = "run-1:input-0"
    assert per_item(b.items) == [[RS(), E("TEXT_MESSAGE_START", 0, messageId=mid, role="user"),
                                  E("TEXT_MESSAGE_CONTENT", 0, messageId=mid, delta="Hello there"),
                                  E("TEXT_MESSAGE_END", 0, messageId=mid)]]
    assert validate_agui(wire(project(b.completed("ok").items))).summary.errors == 0


def test_an_empty_user_input_is_a_user_message_without_content() -> None:
    b = SourceBuilder().event(InputEvent(input_id="in-1", source="user", content=""))
    assert [e["type"] for e in per_item(b.items)[0]] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END"]


@pytest.mark.parametrize("source", ["context", "recovery", "async_subagent", "background_process"])
def test_an_input_of_another_source_is_a_namespaced_custom_and_not_a_text_message(source: str) -> None:
    b = SourceBuilder().event(InputEvent(input_id="in-1", source=source, content="Hello there",
                                         metadata={"lang": "en"}))
    assert per_item(b.items) == [[RS(), CUSTOM(f"harness.input.{source}", 0, {
        "type": "input", "input_id": "in-1", "source": source, "content": "Hello there", "metadata": {"lang": "en"},
    }, chunk={"index": 0, "count": 1})]]


def test_input_text_is_split_into_chunks_of_at_most_8192_characters_in_order() -> None:
    assert INPUT_CHUNK_CHARS == 8192
    text = "".join(chr(0x4E00 + i % 2000) for i in range(2 * 8192 + 5))
    b = SourceBuilder().event(InputEvent(input_id="in-1", source="context", content=text))
    events = per_item(b.items)[0]
    payload = {"type": "input", "input_id": "in-1", "source": "context"}
    assert events == [RS()] + [
        CUSTOM("harness.input.context", 0, {**payload, "content": text[i * 8192:(i + 1) * 8192]},
               chunk={"index": i, "count": 3})
        for i in range(3)
    ]
    assert "".join(e["value"]["payload"]["content"] for e in events[1:]) == text


@pytest.mark.parametrize(("length", "sizes"), [
    (0, [0]), (1, [1]), (8191, [8191]), (8192, [8192]), (8193, [8192, 1]), (3 * 8192, [8192] * 3),
])
def test_input_chunk_boundaries(length: int, sizes: list[int]) -> None:
    b = SourceBuilder().event(InputEvent(input_id="in-1", source="recovery", content="x" * length))
    events = project(b.items)[1:]
    assert [len(e.value["payload"]["content"]) for e in events] == sizes
    assert [e.value["chunk"] for e in events] == [{"index": i, "count": len(sizes)} for i in range(len(sizes))]


def test_a_media_input_is_one_custom_carrying_the_media_description_and_metadata() -> None:
    media = {"media_type": "image/png", "url": "https://files.example/cat.png", "size": 48213}
    b = SourceBuilder().event(InputEvent(input_id="in-2", source="user", content=media, metadata={"name": "cat"}))
    assert per_item(b.items) == [[RS(), CUSTOM("harness.input.user", 0, {
        "type": "input", "input_id": "in-2", "source": "user", "content": media, "metadata": {"name": "cat"},
    })]]


# -- extensions and other observations ------------------------------------------------------------

@pytest.mark.parametrize("kind", ["context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle",
                                  "tool", "diagnostic"])
def test_an_extension_is_a_custom_named_after_its_kind(kind: str) -> None:
    b = SourceBuilder().event(ExtensionEvent(kind=kind, schema_version="2.1", payload={"detail": [1, "two"]}))
    assert per_item(b.items) == [[RS(), CUSTOM(f"harness.extension.{kind}", 0, {
        "type": "extension", "kind": kind, "schema_version": "2.1", "payload": {"detail": [1, "two"]},
    })]]


def test_a_model_request_notice_is_also_projected_as_a_lifecycle_custom() -> None:
    b = SourceBuilder().request()
    assert per_item(b.items) == [[RS(), CUSTOM("harness.extension.lifecycle", 0, {
        "type": "extension", "kind": "lifecycle", "schema_version": "1",
        "payload": {"type": "model_request_started", "request_index": 0},
    })]]


@pytest.mark.parametrize("value", [None, 3, "text", [1, {"a": None}], {"remaining": 18000}])
def test_another_observation_is_a_custom_carrying_its_name_and_value(value: Any) -> None:
    b = SourceBuilder().observation("token_budget", value)
    assert per_item(b.items) == [[RS(), CUSTOM("harness.observation", 0, {
        "type": "observation", "name": "token_budget", "value": value,
    })]]


def test_custom_correlation_is_the_source_items_own() -> None:
    at = datetime(2026, 12, 1, 8, 30, 15, 250000, tzinfo=timezone(timedelta(hours=2)))
    first = HarnessEvent(thread_id="th", run_id="ru", sequence=0, occurred_at=at,
                         event=ObservationEvent(name="n", value=1))
    second = HarnessEvent(thread_id="th", run_id="ru", sequence=1, occurred_at=at + timedelta(seconds=1),
                          event=ObservationEvent(name="n", value=2))
    observer = HarnessAguiObserver()
    observer.observe(first)
    (event,) = observer.observe(second)
    assert event.value == {"thread_id": "th", "run_id": "ru", "sequence": 1,
                           "occurred_at": "2026-12-01T08:30:16.250000+02:00",
                           "payload": {"type": "observation", "name": "n", "value": 2}}


# -- the terminal item ---------------------------------------------------------------------------

def test_a_completed_result_is_run_finished_with_success_output_and_token_usage() -> None:
    b = SourceBuilder().result(RunResult(status="completed", output="Done.", usage=Usage(
        input_tokens=12, output_tokens=3, cache_read_tokens=4, reasoning_tokens=1)))
    assert per_item(b.items) == [[RS(), E(
        "RUN_FINISHED", 0, threadId=THREAD, runId=RUN, result="Done.", outcome={"type": "success"},
        usage=[{"inputTokens": 12, "outputTokens": 3, "totalTokens": 15, "reasoningTokens": 1,
                "cachedInputTokens": 4}],
    )]]


@pytest.mark.parametrize(("output", "expected"), [
    ({"answer": 42, "sources": ["a", "b"]}, {"result": {"answer": 42, "sources": ["a", "b"]}}),
    ([1, "two"], {"result": [1, "two"]}),
    (0, {"result": 0}),
    (False, {"result": False}),
    (None, {}),
], ids=["object", "list", "zero", "false", "none"])
def test_completed_output_is_the_run_finished_result(output: Any, expected: dict[str, Any]) -> None:
    b = SourceBuilder().observation("n", 1).completed(output)
    assert per_item(b.items)[-1] == [E("RUN_FINISHED", 1, threadId=THREAD, runId=RUN, outcome={"type": "success"},
                                       **expected)]


@pytest.mark.parametrize(("usage", "expected"), [
    (Usage(input_tokens=5), [{"inputTokens": 5}]),
    (Usage(output_tokens=0), [{"outputTokens": 0}]),
    (Usage(input_tokens=0, output_tokens=0), [{"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}]),
    (Usage(), None),
], ids=["input-only", "output-only", "zeros", "empty"])
def test_token_usage_carries_only_the_counts_the_harness_reported(usage: Usage,
                                                                    expected: list[dict[str, int]] | None) -> None:
    b = SourceBuilder().result(RunResult(status="completed", usage=usage))
    (_, finished) = per_item(b.items)[0]
    assert finished.get("usage") == expected


def test_a_total_that_would_exceed_the_json_bound_is_left_out_and_the_run_still_finishes() -> None:
    b = SourceBuilder().user("hi").completed("ok", input_tokens=2**52, output_tokens=2**52)
    observer = HarnessAguiObserver()
    for item in b.items:
        observer.observe(item)
    (usage,) = observer.snapshot()[-1].usage
    assert usage.input_tokens == 2**52 and usage.output_tokens == 2**52 and usage.total_tokens is None
    assert observer.finished


def test_a_suspended_result_is_run_finished_with_one_interrupt_per_deferred_call_and_approval() -> None:
    deferred = Deferred(
        calls=(DeferredToolCall(tool_call_id="c-1", tool_name="ask_user", args={"question": "Which city?"}),),
        approvals=(DeferredToolCall(tool_call_id="c-2", tool_name="delete_file", args='{"path":"/tmp/x"}'),
                   DeferredToolCall(tool_call_id="c-3", tool_name="send_mail")),
    )
    b = SourceBuilder().result(RunResult(status="suspended", deferred=deferred))
    assert per_item(b.items) == [[RS(), E("RUN_FINISHED", 0, threadId=THREAD, runId=RUN, outcome={
        "type": "interrupt",
        "interrupts": [
            {"id": "c-1", "reason": "tool_call", "message": "Waiting for the result of ask_user", "toolCallId": "c-1",
             "responseSchema": {"description": "The result of ask_user: any JSON value"},
             "metadata": {"harness": {"tool_call_id": "c-1", "tool_name": "ask_user",
                                      "args": {"question": "Which city?"}, "model_call_id": "c-1"}}},
            {"id": "c-2:approval", "reason": "tool_approval", "message": "Waiting for approval of delete_file",
             "toolCallId": "c-2", "responseSchema": APPROVAL_SCHEMA,
             "metadata": {"harness": {"tool_call_id": "c-2", "tool_name": "delete_file", "args": '{"path":"/tmp/x"}',
                                      "model_call_id": "c-2"}}},
            {"id": "c-3:approval", "reason": "tool_approval", "message": "Waiting for approval of send_mail",
             "toolCallId": "c-3", "responseSchema": APPROVAL_SCHEMA,
             "metadata": {"harness": {"tool_call_id": "c-3", "tool_name": "send_mail", "model_call_id": "c-3"}}},
        ],
    })]]


def test_a_run_suspended_on_the_clients_own_tool_finishes_with_success_and_approvals_stay_interrupts() -> None:
    # AG-UI's frontend tools: the client runs the call it streamed and sends the tool message, no resume[].
    marker = {"a13n.harness.client-tool": {"declared_name": "confirm", "toolset_id": "ag-ui"}}
    client = DeferredToolCall(tool_call_id="c-1", tool_name="confirm", args='{"q": "ok?"}',
                              target_identity="tool/ag-ui/confirm")
    alone = SourceBuilder().result(RunResult(status="suspended", deferred=Deferred(
        calls=(client,), metadata={"c-1": marker})))
    assert per_item(alone.items)[0][-1]["outcome"] == {"type": "success"}
    approval = DeferredToolCall(tool_call_id="c-2", tool_name="deploy")
    external = DeferredToolCall(tool_call_id="c-3", tool_name="ask_user")  # run outside, not by the client
    mixed = SourceBuilder().result(RunResult(status="suspended", deferred=Deferred(
        calls=(client, external), approvals=(approval,), metadata={"c-1": marker})))
    outcome = per_item(mixed.items)[0][-1]["outcome"]
    assert [(i["id"], i["reason"]) for i in outcome["interrupts"]] == [("c-3", "tool_call"),
                                                                        ("c-2:approval", "tool_approval")]


def test_a_forwarded_deferred_call_keeps_both_ids_and_its_metadata_in_the_interrupt() -> None:
    target = ToolCallPart(tool_name="deploy", args="{}", tool_call_id="target-1")
    model = ToolCallPart(tool_name="delegate", args="{}", tool_call_id="model-1")
    call = DeferredToolCall(tool_call_id="target-1", tool_name="deploy", args="{}", target_identity="tool/x/deploy",
                            target_call=target, model_call=model)
    deferred = Deferred(approvals=(call,), metadata={"target-1": {"reason": "prod"}})
    b = SourceBuilder().result(RunResult(status="suspended", deferred=deferred))
    (interrupt,) = per_item(b.items)[0][-1]["outcome"]["interrupts"]
    assert interrupt["toolCallId"] == "target-1"
    harness = interrupt["metadata"]["harness"]
    assert harness["model_call_id"] == "model-1"
    assert harness["metadata"] == {"reason": "prod"}
    assert harness["target_identity"] == "tool/x/deploy"


def test_a_failures_details_and_retry_hint_reach_run_error_metadata() -> None:
    result = RunResult(status="failed", failure=Failure(code="model_recovery_exhausted", message="gave up",
                                                        details={"status_code": 503}, retry_hint="new_run"))
    b = SourceBuilder().result(result)
    assert per_item(b.items)[0][-1] == E("RUN_ERROR", 0, message="gave up", code="model_recovery_exhausted",
                                         metadata={"harness": {"details": {"status_code": 503},
                                                               "retry_hint": "new_run"}})


def test_a_failed_result_is_run_error_with_message_and_code() -> None:
    b = SourceBuilder().observation("n", 1).failed("model_error", "The model refused the request.")
    assert per_item(b.items)[-1] == [E("RUN_ERROR", 1, message="The model refused the request.",
                                       code="model_error")]


def test_a_failed_result_with_usage_reports_it_on_run_error() -> None:
    b = SourceBuilder().result(RunResult(status="failed", failure=Failure(code="timeout", message="took too long"),
                                         usage=Usage(input_tokens=9, output_tokens=1)))
    assert per_item(b.items)[0][-1] == E("RUN_ERROR", 0, message="took too long", code="timeout",
                                         usage=[{"inputTokens": 9, "outputTokens": 1, "totalTokens": 10}])


def test_a_cancelled_result_is_run_finished_with_the_cancelled_outcome() -> None:
    b = SourceBuilder().cancelled()
    assert per_item(b.items) == [[RS(), E("RUN_FINISHED", 0, threadId=THREAD, runId=RUN,
                                          outcome={"type": "cancelled"})]]


# -- closing open parts -------------------------------------------------------------------------

def _open_parts_run() -> SourceBuilder:
    """A model response cut off with three parts open, started out of index order."""
    b = SourceBuilder().request()
    b.event(PartStartEvent(index=2, part=ToolCallPart(tool_name="f", args='{"a":', tool_call_id="c")))
    b.event(PartStartEvent(index=0, part=ThinkingPart(content="hmm")))
    b.event(PartDeltaEvent(index=0, delta=ThinkingPartDelta(signature_delta="sig")))
    b.event(PartStartEvent(index=1, part=TextPart(content="Par")))
    b.event(PartDeltaEvent(index=2, delta=ToolCallPartDelta(args_delta="1}")))
    return b


CLOSES = [
    E("REASONING_ENCRYPTED_VALUE", 6, subtype="message", entityId=thinking_id(0), encryptedValue="sig"),
    E("REASONING_MESSAGE_END", 6, messageId=thinking_id(0)),
    E("TEXT_MESSAGE_END", 6, messageId=text_id(1)),
    E("TOOL_CALL_END", 6, toolCallId="c"),
]


@pytest.mark.parametrize(("result", "terminal"), [
    (RunResult(status="completed", output="partial"),
     E("RUN_FINISHED", 6, threadId=THREAD, runId=RUN, result="partial", outcome={"type": "success"})),
    (RunResult(status="cancelled"), E("RUN_FINISHED", 6, threadId=THREAD, runId=RUN, outcome={"type": "cancelled"})),
    (RunResult(status="failed", failure=Failure(code="crash", message="worker died")),
     E("RUN_ERROR", 6, message="worker died", code="crash")),
    (RunResult(status="suspended", deferred=Deferred(approvals=(DeferredToolCall(tool_call_id="c", tool_name="f"),))),
     E("RUN_FINISHED", 6, threadId=THREAD, runId=RUN, outcome={"type": "interrupt", "interrupts": [
         {"id": "c:approval", "reason": "tool_approval", "message": "Waiting for approval of f", "toolCallId": "c",
          "responseSchema": APPROVAL_SCHEMA,
          "metadata": {"harness": {"tool_call_id": "c", "tool_name": "f", "model_call_id": "c"}}}]})),
], ids=["completed", "cancelled", "failed", "suspended"])
def test_parts_still_open_at_the_terminal_item_are_closed_in_index_order_before_the_terminal_event(
    result: RunResult, terminal: dict[str, Any]
) -> None:
    b = _open_parts_run().result(result)
    assert per_item(b.items)[-1] == CLOSES + [terminal]


def test_a_new_model_request_closes_open_parts_before_its_own_custom() -> None:
    b = _open_parts_run().request()
    assert per_item(b.items)[-1] == CLOSES + [CUSTOM("harness.extension.lifecycle", 6, {
        "type": "extension", "kind": "lifecycle", "schema_version": "1",
        "payload": {"type": "model_request_started", "request_index": 1},
    })]


def test_a_tool_call_still_waiting_for_its_args_when_the_run_ends_is_started_and_ended() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="", args=None, tool_call_id="c"),
                             [ToolCallPartDelta(tool_name_delta="lookup")], None).cancelled()
    assert per_item(b.items)[-1] == [
        E("TOOL_CALL_START", 2, toolCallId="c", toolCallName="lookup"),
        E("TOOL_CALL_END", 2, toolCallId="c"),
        E("RUN_FINISHED", 2, threadId=THREAD, runId=RUN, outcome={"type": "cancelled"}),
    ]


def test_a_call_closed_by_the_terminal_item_is_answerable_by_nothing_afterwards() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="f", args="{}", tool_call_id="c"), [], None).cancelled()
    events = wire(project(b.items))
    assert [e["type"] for e in events] == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                                           "RUN_FINISHED"]


# -- oversized CUSTOM events --------------------------------------------------------------------

def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("value", [
    "x" * 100_000,
    '"\\' * 60_000,
    "".join(chr(c) for c in range(32)) * 4000,
    {"rows": [{"id": i, "name": f"row {i}", "tags": ["é", None, True]} for i in range(4000)]},
], ids=["plain", "quotes-and-backslashes", "control-characters", "structured"])
def test_an_oversized_custom_is_split_into_ordered_fragments_that_assemble_custom_restores_exactly(value: Any) -> None:
    b = SourceBuilder().observation("start", None).observation("big", value).observation("after", 1)
    out = per_item(b.items)
    expected = CustomEvent(name="harness.observation", timestamp=ts(1),
                           value=custom_value(1, {"type": "observation", "name": "big", "value": value}))
    fragments = out[1]
    assert len(fragments) > 1
    for i, fragment in enumerate(fragments):
        assert fragment["type"] == "CUSTOM"
        assert fragment["name"] == "harness.observation"
        assert fragment["timestamp"] == ts(1)
        assert set(fragment["value"]) == {"thread_id", "run_id", "sequence", "occurred_at", "fragment", "data"}
        assert fragment["value"]["sequence"] == 1
        assert fragment["value"]["fragment"] == {"index": i, "count": len(fragments)}
        assert len(_compact(fragment).encode()) <= MAX_EVENT_BYTES
    assert "".join(f["value"]["data"] for f in fragments) == _compact(expected.value)

    observed = project(b.items)
    assert all(is_fragment(e) for e in observed[2:2 + len(fragments)])
    assembled = list(assemble_custom(observed))
    assert len(assembled) == 4
    assert assembled[2] == expected
    assert assembled[2].value == expected.value
    assert assembled[:2] == observed[:2] and assembled[3] == observed[-1]


@pytest.mark.parametrize("payload", [
    ToolResultEvent(tool_call_id="unknown", tool_name="dump", outcome="success", content="y" * 70_000),
    ExtensionEvent(kind="state", schema_version="1", payload={"blob": "z" * 70_000}),
    InputEvent(input_id="in-1", source="context", content={"media_type": "text/csv", "preview": "w" * 70_000}),
], ids=["tool-result", "extension", "media-input"])
def test_every_kind_of_custom_is_fragmented_when_oversized(payload: Any) -> None:
    b = SourceBuilder().event(payload)
    events = project(b.items)[1:]
    assert len(events) >= 2 and all(is_fragment(e) for e in events)
    (whole,) = assemble_custom(events)
    assert whole.value["payload"]["type"] == {"ToolResultEvent": "tool_result", "ExtensionEvent": "extension",
                                              "InputEvent": "input"}[type(payload).__name__]


def test_a_custom_of_exactly_the_maximum_size_is_not_fragmented_and_one_more_byte_is() -> None:
    def sized(n: int) -> SourceBuilder:
        return SourceBuilder().observation("pad", "p" * n)

    overhead = len(_compact(per_item(sized(0).items)[0][1]).encode())
    exact = per_item(sized(MAX_EVENT_BYTES - overhead).items)[0]
    assert len(exact) == 2 and "payload" in exact[1]["value"]
    assert len(_compact(exact[1]).encode()) == MAX_EVENT_BYTES
    over = per_item(sized(MAX_EVENT_BYTES - overhead + 1).items)[0]
    assert len(over) > 2 and all("fragment" in e["value"] for e in over[1:])


def test_assemble_custom_passes_other_events_through_unchanged() -> None:
    events = project(simulated_run())
    assert list(assemble_custom(events)) == events


def test_assemble_custom_rejects_incomplete_or_interleaved_fragments() -> None:
    b = SourceBuilder().observation("big", "q" * 100_000).observation("next", 1)
    events = project(b.items)
    fragments, after = events[1:-1], events[-1]
    with pytest.raises(ValueError):
        list(assemble_custom(fragments[:-1]))
    with pytest.raises(ValueError):
        list(assemble_custom(fragments[:1] + [after] + fragments[1:]))
    with pytest.raises(ValueError):
        list(assemble_custom([fragments[1], fragments[0]] + fragments[2:]))


# -- the projection of complete runs is valid AG-UI ------------------------------------------------

def _validator_runs() -> dict[str, list[HarnessStreamEvent]]:
    runs: dict[str, list[HarnessStreamEvent]] = {"simulated": simulated_run()}

    b = SourceBuilder().user("Delete my old files.").request().text(0, ["I will ask first."])
    b.tool_call(1, "list_files", "c-1", ['{"dir": "/tmp"}']).tool_result("c-1", "list_files", ["a", "b"])
    b.request().tool_call(0, "delete_file", "c-2", ['{"path": "/tmp/a"}'])
    b.result(RunResult(status="suspended", deferred=Deferred(
        calls=(DeferredToolCall(tool_call_id="c-9", tool_name="ask_user", args={"q": "sure?"}),),
        approvals=(DeferredToolCall(tool_call_id="c-2", tool_name="delete_file", args='{"path": "/tmp/a"}'),))))
    runs["suspended"] = b.items

    b = SourceBuilder().user("Go.").request().thinking(0, ["Planning"], signature="c2ln").text(1, ["Work"])
    b.event(PartStartEvent(index=2, part=TextPart(content="half")))
    b.failed("model_error", "the provider closed the stream")
    runs["failed-with-open-part"] = b.items

    b = SourceBuilder().request()
    b.event(PartStartEvent(index=0, part=ThinkingPart(content="a", signature="s")))
    b.event(PartStartEvent(index=1, part=TextPart(content="b")))
    b.event(PartStartEvent(index=2, part=ToolCallPart(tool_name="f", args={"x": 1}, tool_call_id="c")))
    runs["cancelled-with-open-parts"] = b.cancelled().items

    b = SourceBuilder().tool_result("c-old", "f", "late").request().tool_call(0, "f", "c-1", ["{}"])
    b.tool_result("c-1", "f", {"error": "boom"}, "failed").tool_result("c-1", "f", "again", "retried")
    runs["unknown-and-repeated-results"] = b.completed({"ok": False}, input_tokens=10, output_tokens=2).items

    b = SourceBuilder().user("z" * 20_000).observation("big", "y" * 100_000)
    b.event(InputEvent(input_id="m", source="background_process", content={"media_type": "image/png", "url": "u"}))
    for kind in ("context", "state", "recovery", "invocation", "delegation", "usage", "tool", "diagnostic"):
        b.event(ExtensionEvent(kind=kind, schema_version="1", payload={"k": kind}))
    runs["customs"] = b.completed("done").items

    b = SourceBuilder().request().text(0, ["Searching."], id="msg-1")
    b.part(1, ToolCallPart(tool_name="", args=None, tool_call_id="c-1"), [
        ToolCallPartDelta(tool_name_delta="sea"), ToolCallPartDelta(tool_name_delta="rch"),
        ToolCallPartDelta(args_delta='{"q":'), ToolCallPartDelta(args_delta='"rain"}'),
    ], ToolCallPart(tool_name="search", args='{"q":"rain"}', tool_call_id="c-1"))
    b.part(2, ToolCallPart(tool_name="stats", args={"a": 1}, tool_call_id="c-2"),
           [ToolCallPartDelta(args_delta={"b": [1, 2]})],
           ToolCallPart(tool_name="stats", args=None, tool_call_id="c-2"))
    b.tool_result("c-1", "search", "rainy").tool_result("c-2", "stats", {"mean": 1.5})
    runs["tool-call-shapes"] = b.result(RunResult(status="completed", output=None, usage=Usage(
        input_tokens=100, output_tokens=20, cache_read_tokens=50, reasoning_tokens=5))).items

    runs["terminal-only"] = SourceBuilder().cancelled().items
    return runs


VALIDATOR_RUNS = _validator_runs()


@pytest.mark.parametrize("name", VALIDATOR_RUNS)
def test_the_projection_of_a_complete_run_passes_ag_ui_validate_without_errors_or_warnings(name: str) -> None:
    events = project(VALIDATOR_RUNS[name])
    report = validate_agui([e.model_dump(mode="json", by_alias=True) for e in events])
    problems = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert (report.summary.errors, report.summary.warnings, problems) == (0, 0, [])


def test_a_host_that_serves_a_run_under_its_clients_ids_names_them_in_run_started_and_run_finished() -> None:
    b = SourceBuilder().user("hi").request().text(0, ["ok"]).completed("ok")
    observer = HarnessAguiObserver(client_thread_id="4c1f-uuid", client_run_id="client-run-7")
    events = wire([e for item in b.items for e in observer.observe(item)])
    assert (events[0]["threadId"], events[0]["runId"]) == ("4c1f-uuid", "client-run-7")
    assert (events[-1]["threadId"], events[-1]["runId"]) == ("4c1f-uuid", "client-run-7")
    assert observer.run_id == RUN  # the state keeps the Harness's ids
    with pytest.raises(ValueError):
        HarnessAguiObserver(client_run_id=" ")
