"""The display fold of the compat package, over a13n-stream-protocol-vocabulary event JSON."""

from __future__ import annotations

from typing import Any

import pytest

from harness_agui.compat.a13n_stream_protocol.display import (
    MAX_OBSERVATION_BYTES,
    DisplayContinuation,
    DisplayFold,
    DisplaySnapshot,
    item_id,
)


def custom(name: str, event: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": name, "timestamp": 1000,
            "value": {"thread_id": "t", "run_id": "run", "sequence": 1, "occurred_at": "x", "event": event}, **extra}


def request_started() -> dict[str, Any]:
    return custom("a13n.harness.lifecycle", {"kind": "lifecycle", "payload": {"type": "model_request_started"}})


def args_delta(text: str) -> dict[str, Any]:
    return custom("a13n.pydantic_ai.part_delta", {"index": 1, "event_kind": "part_delta", "delta": {
        "tool_name_delta": None, "args_delta": text, "tool_call_id": "call", "part_delta_kind": "tool_call"}})


STREAM: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "run", "timestamp": 1000},
    request_started(),
    custom("a13n.input.user", {"input_id": "a1", "source": "user", "content": "Hi", "message_id": "run:input:2",
                               "role": "user"}, metadata={"display": True, "source_id": None, "media": False}),
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "timestamp": 1000},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hello", "timestamp": 1000},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": " world", "timestamp": 1000},
    {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1000},
    args_delta('{"q"'),
    args_delta(': 1}'),
    {"type": "TOOL_CALL_START", "toolCallId": "call", "toolCallName": "search", "timestamp": 1000},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "call", "delta": '{"q": 1}', "timestamp": 1000},
    {"type": "TOOL_CALL_END", "toolCallId": "call", "timestamp": 1000},
    {"type": "TOOL_CALL_RESULT", "toolCallId": "call", "messageId": "call:result", "content": "found",
     "timestamp": 2000},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "run", "timestamp": 3000},
]


def test_a_run_folds_into_input_message_tool_call_and_observation_items() -> None:
    fold = DisplayFold("run", attempt=1)
    fold.fold([dict(event) for event in STREAM])
    by_kind = {(item.kind, item.content.get("name")): item for item in fold.items.values()}
    message = fold.items[item_id("run", "text_message", "m")]
    assert message.content["text"] == "hello world" and message.state == "completed"
    assert message.content["responseGroup"] == "run:1:2"
    user = fold.items[item_id("run", "text_message", "run:input:2")]
    assert user.content["text"] == "Hi" and user.content["input_source"] == "user"
    call = fold.items[item_id("run", "tool_call", "call")]
    assert call.state == "completed" and call.content["result"] == "found" and call.content["arguments_complete"]
    assert call.first_stream_id == "1-10" and call.last_stream_id == "1-13"
    assert call.ended_at is not None and call.ended_at.timestamp() == 2
    streamed = by_kind[("observation", "a13n.pydantic_ai.part_delta")]
    assert streamed.content["value"]["event"]["delta"]["args_delta"] == '{"q": 1}'   # two deltas, one item
    assert sorted(item.ordinal for item in fold.items.values()) == list(range(1, len(fold.items) + 1))


def test_restoring_at_every_cut_and_folding_the_rest_gives_the_same_items() -> None:
    whole = DisplayFold("run", attempt=1)
    whole.fold([dict(event) for event in STREAM])
    for cut in range(len(STREAM) + 1):
        fold = DisplayFold("run", attempt=1)
        fold.fold([dict(event) for event in STREAM[:cut]])
        snapshot = DisplaySnapshot.model_validate_json(fold.export().model_dump_json())
        restored = DisplayFold.restore(snapshot)
        restored.fold([dict(event) for event in STREAM[cut:]])
        assert restored.items == whole.items, cut
        assert restored.export_continuation() == whole.export_continuation()


def test_capture_delta_returns_only_items_changed_since_the_last_capture() -> None:
    fold = DisplayFold("run")
    fold.fold([dict(event) for event in STREAM[:4]])
    assert len(fold.capture_delta().items) == 4
    fold.changed.clear()   # a live publisher draining does not consume checkpoint changes
    fold.fold([dict(STREAM[4])])
    delta = fold.capture_delta()
    assert [item.content.get("text") for item in delta.items] == ["hello"]
    assert fold.capture_delta().items == []


def test_an_observation_over_the_size_bound_keeps_only_its_name_unless_content_is_retained() -> None:
    event = custom("customer.big", {"text": "x" * MAX_OBSERVATION_BYTES})
    for retain, expected in ((False, {"omitted": True}), (True, event["value"])):
        fold = DisplayFold("run", retain_content=retain)
        (observed,) = fold.fold([dict(event)])
        assert observed.item is not None and fold.items[observed.item.id].content["value"] == expected


def test_a_retried_result_observation_fails_its_tool_call_item() -> None:
    fold = DisplayFold("run")
    fold.fold([dict(STREAM[9])])
    result = custom("a13n.pydantic_ai.function_tool_result", {"event_kind": "function_tool_result", "part": {
        "tool_name": "search", "content": "bad args", "tool_call_id": "call", "outcome": "retried",
        "part_kind": "tool-return"}})
    (observed,) = fold.fold([result])
    assert observed.item is not None and observed.item.state == "failed"
    assert fold.items[observed.item.id].content["retry"] is True


def test_a_continuation_for_another_attempt_is_refused() -> None:
    continuation = DisplayFold("run", attempt=1).export_continuation()
    with pytest.raises(ValueError, match="does not match"):
        DisplayFold("run", attempt=2, continuation=continuation)


def test_a_fresh_continuation_has_the_json_shape_of_upstream_checkpoints() -> None:
    dumped = DisplayFold("run", attempt=2).export_continuation().model_dump(mode="json")
    assert dumped == DisplayContinuation.model_validate(dumped).model_dump(mode="json")
    assert dumped["observer"] == {"thread_id": None, "run_id": None,
                                  "state": {"request_index": 0, "parts": {}, "children": {}, "threads": {}}}
    assert "memory_sources" not in dumped


def test_converting_a_native_item_without_a13n_harness_names_what_to_install() -> None:
    try:
        import a13n_harness  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"harness-agui\[a13n\]"):
            DisplayFold("run").events(object())
    else:
        with pytest.raises(TypeError, match="HarnessEvent or HarnessRunResultEvent"):
            DisplayFold("run").events(object())
