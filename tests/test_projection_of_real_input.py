"""How the shapes of a real a13n-harness stream project onto AG-UI.

Each test builds the shape a real Run produced (steering that preempts a
request, tool outcomes beyond success and failure, multimodal tool content,
the native pydantic-ai event kinds) and checks both the events and that the
complete Run passes the AG-UI validator without error or warning.
"""

from __future__ import annotations

from typing import Any

from ag_ui_validate.pytest_plugin import validate_agui

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import (
    BinaryContent,
    ContentList,
    FinalResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RetryInfo,
    TextPart,
    TextPartDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolResultEvent,
)
from harness_agui.testing import SourceBuilder
from harness_agui.wire.agui import agui_to_json


def _wire(items: list[Any]) -> list[dict[str, Any]]:
    import json

    observer = HarnessAguiObserver()
    return [json.loads(agui_to_json(e)) for item in items for e in observer.observe(item)]


def _clean(events: list[dict[str, Any]]) -> None:
    summary = validate_agui(events).summary
    assert (summary.errors, summary.warnings) == (0, 0), validate_agui(events).diagnostics


def test_a_preempted_text_part_is_closed_by_the_next_request_and_its_late_end_is_accepted() -> None:
    b = SourceBuilder().user("Write a long essay.").request()
    b.event(PartStartEvent(index=0, part=TextPart(content="Starting a long ")))
    b.event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="essay")))
    b.request()  # immediate steering: a new request while part 0 is open
    b.event(PartEndEvent(index=0, part=TextPart(content="Starting a long essay")))  # the late end
    b.text(0, ["Switching as asked."])
    b.completed("done")
    events = _wire(b.items)
    first = "run-1:request-0:part-0:text"
    kinds = [(e["type"], e.get("messageId") or e.get("name")) for e in events]
    notices = [i for i, k in enumerate(kinds) if k == ("CUSTOM", "harness.extension.lifecycle")]
    # The open message ends when the new request starts, not at its late PartEnd.
    assert notices[0] < kinds.index(("TEXT_MESSAGE_END", first)) < notices[1]
    assert ("CUSTOM", "harness.part_end") in kinds
    assert [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"].count(first) == 1
    _clean(events)


def test_a_part_that_never_ends_is_closed_at_the_next_request_or_the_terminal_item() -> None:
    b = SourceBuilder().user("q").request()
    b.event(PartStartEvent(index=0, part=TextPart(content="Partial ")))
    b.request()
    b.event(PartStartEvent(index=0, part=TextPart(content="Recovered ")))
    b.completed("x")
    events = _wire(b.items)
    ends = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"]
    assert ends == ["run-1:input-0", "run-1:request-0:part-0:text", "run-1:request-1:part-0:text"]
    _clean(events)


def test_a_late_delta_of_a_retired_part_is_kept_as_a_custom_event() -> None:
    b = SourceBuilder().request()
    b.event(PartStartEvent(index=0, part=TextPart(content="a")))
    b.request()
    b.event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="late")))
    b.completed("x")
    events = _wire(b.items)
    assert [e["name"] for e in events if e["type"] == "CUSTOM"][-1] == "harness.part_delta"
    _clean(events)


def _call(b: SourceBuilder, call_id: str, name: str = "deploy") -> SourceBuilder:
    return b.tool_call(0, name, call_id, ['{"x": 1}'])


def test_denied_and_interrupted_results_answer_their_call_with_the_outcome_in_metadata() -> None:
    b = SourceBuilder().request()
    _call(b, "c-1").request()
    _call(b, "c-2")
    b.tool_result("c-1", "deploy", "Not allowed on Fridays.", outcome="denied")
    b.tool_result("c-2", "deploy", "interrupted", outcome="interrupted")
    b.completed("ok")
    events = _wire(b.items)
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [(r["toolCallId"], r["content"], r["metadata"]["harness"]["outcome"]) for r in results] == [
        ("c-1", "Not allowed on Fridays.", "denied"), ("c-2", "interrupted", "interrupted")]
    _clean(events)


def test_a_retried_result_carries_its_retry_info() -> None:
    b = SourceBuilder().request()
    _call(b, "c-1", "double")
    b.event(ToolResultEvent(tool_call_id="c-1", tool_name="double", outcome="retried",
                            content=[{"type": "int_parsing", "loc": ["value"]}],
                            retry=RetryInfo(cause="validation_error", attempt=1, max_retries=1)))
    b.completed("ok")
    events = _wire(b.items)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["metadata"]["harness"]["retry"] == {"cause": "validation_error", "attempt": 1, "max_retries": 1}
    assert result["content"] == '[{"type":"int_parsing","loc":["value"]}]'
    _clean(events)


def test_a_multimodal_result_is_text_content_with_agui_content_parts_in_metadata() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(20))
    b = SourceBuilder().request()
    _call(b, "c-1", "captioned")
    b.event(ToolResultEvent(tool_call_id="c-1", tool_name="captioned", outcome="success",
                            content=ContentList(items=("A caption", BinaryContent(data=png, media_type="image/png")))))
    b.completed("ok")
    events = _wire(b.items)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert isinstance(result["content"], str)
    assert "base64" not in result["content"] and "iVBOR" not in result["content"]  # a reference, not the bytes
    parts = result["metadata"]["harness"]["content"]
    assert parts[0] == {"type": "text", "text": "A caption"}
    assert parts[1]["type"] == "image"
    assert parts[1]["source"]["type"] == "data" and parts[1]["source"]["mimeType"] == "image/png"
    import base64

    assert base64.b64decode(parts[1]["source"]["value"]) == png
    _clean(events)


def test_native_event_kinds_keep_their_kind_in_the_custom_name() -> None:
    call = ToolCallPart(tool_name="final_result", args="{}", tool_call_id="out-1")
    b = SourceBuilder().request()
    b.event(FinalResultEvent(tool_name=None, tool_call_id=None))
    b.event(ToolCallEvent(part=ToolCallPart(tool_name="double", args="{}", tool_call_id="c-9"), args_valid=True))
    b.event(ToolCallEvent(part=call, args_valid=False, output=True))
    b.completed("ok")
    names = [e["name"] for e in _wire(b.items) if e["type"] == "CUSTOM"]
    assert names == ["harness.extension.lifecycle", "harness.final_result", "harness.function_tool_call",
                     "harness.output_tool_call"]
