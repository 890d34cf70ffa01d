"""What a client already holds is left out of the frames sent back to it (``wire.held.HeldByClient``): the
user messages it sent, and on a retried POST the part of each message, reasoning and tool call's arguments it
got before its connection dropped."""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import RunAgentInput

from harness_agui.wire.agui import sse_frame
from harness_agui.wire.held import HeldByClient


def held(*messages: dict[str, Any]) -> HeldByClient:
    return HeldByClient(RunAgentInput.model_validate({
        "threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": list(messages)}).messages)


def chunk(*events: dict[str, Any]) -> bytes:
    return "".join(sse_frame(json.dumps(e, separators=(",", ":"), ensure_ascii=False), event_id=f"{n}.tag")
                   for n, e in enumerate(events, 1)).encode()


def sent(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for frame in data.split(b"\n\n")[:-1]:
        lines = dict(line.split(b": ", 1) for line in frame.split(b"\n"))
        out.append((lines[b"id"].decode(), json.loads(lines[b"data"])))
    return out


def text(message_id: str, delta: str) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta}


def test_the_held_part_of_each_message_is_dropped_and_a_delta_across_its_end_keeps_its_tail() -> None:
    filter_ = held({"id": "u-1", "role": "user", "content": "Hi \"there\""},
                   {"id": "a\\1", "role": "assistant", "content": "Hello wor",
                    "toolCalls": [{"id": "c-1", "type": "function", "function": {"name": "f", "arguments": "{\"a\""}}]},
                   {"id": "c-1:result", "role": "tool", "toolCallId": "c-1", "content": "ok"})
    out = sent(filter_(chunk(
        {"type": "TEXT_MESSAGE_START", "messageId": "u-1", "role": "user"}, text("u-1", "Hi \"there\""),
        {"type": "TEXT_MESSAGE_END", "messageId": "u-1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a\\1", "role": "assistant"},
        text("a\\1", "Hello "), text("a\\1", "world"), text("a\\1", "!"),
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c-1", "delta": "{\"a\": 1}"},
        {"type": "TOOL_CALL_RESULT", "messageId": "c-1:result", "toolCallId": "c-1", "content": "ok"},
        text("other", "untouched"))))
    assert [(i, e["type"], e.get("delta")) for i, e in out] == [
        ("1.tag", "TEXT_MESSAGE_START", None), ("3.tag", "TEXT_MESSAGE_END", None),
        ("4.tag", "TEXT_MESSAGE_START", None), ("6.tag", "TEXT_MESSAGE_CONTENT", "ld"),
        ("7.tag", "TEXT_MESSAGE_CONTENT", "!"), ("8.tag", "TOOL_CALL_ARGS", ": 1}"),
        ("10.tag", "TEXT_MESSAGE_CONTENT", "untouched")]
    assert not filter_.active
    again = chunk(text("u-1", "more"))
    assert filter_(again) is again  # nothing held any more: chunks pass as they are


def test_a_chunk_without_deltas_or_results_passes_unparsed_and_events_are_filtered_alike() -> None:
    filter_ = held({"id": "u-1", "role": "user", "content": "abc"})
    plain = chunk({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    assert filter_(plain) is plain
    events = [text("u-1", "ab"), text("u-1", "cd"), text("x", "y")]
    assert [filter_.event(e) for e in events] == [None, text("u-1", "d"), text("x", "y")]
