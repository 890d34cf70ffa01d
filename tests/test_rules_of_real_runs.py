# Projection rules for shapes real a13n-harness Runs take (INPUT_SPACE.md
# section 9): a tool call id used again in a later response, deltas that
# arrive after their part ended, a provider-executed (builtin) call and its
# return, the calls a resumed Run re-announces, and what the Harness marks
# for the model only. Each Run completes with a valid projection, every
# finished call is answered, and replay gives the same bytes.

from __future__ import annotations

import asyncio
import json
from typing import Any

from ag_ui_validate.pytest_plugin import validate_agui

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import BinaryContent, BuiltinToolReturnPart, ThinkingPart, ThinkingPartDelta
from harness_agui.source import (
    ContentList,
    InputEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
)
from harness_agui.testing import SourceBuilder
from harness_agui.wire.agui import agui_to_json


def _events(items: list[Any], **options: Any) -> list[dict[str, Any]]:
    observer = HarnessAguiObserver(**options)
    events = [json.loads(agui_to_json(e)) for item in items for e in observer.observe(item)]
    replayed = HarnessAguiObserver(**options)
    asyncio.run(replayed.resume(items))
    assert [json.loads(agui_to_json(e)) for e in replayed.snapshot()] == events  # replay-stable
    return events


def _valid(events: list[dict[str, Any]]) -> None:
    report = validate_agui(events)
    problems = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert problems == [], problems


def _answered(events: list[dict[str, Any]]) -> None:
    ended = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_END"}
    results = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    assert ended <= results, ended - results


def test_a_tool_call_id_used_again_in_a_later_response_is_published_under_an_id_of_its_own() -> None:
    b = SourceBuilder().user("twice").request()
    b.tool_call(0, "search", "call_0", ['{"q":', '"a"}']).tool_result("call_0", "search", "first")
    b.request().tool_call(0, "search", "call_0", ['{"q":"b"}'])
    second_start = next(i.sequence for i in reversed(b.items)
                        if isinstance(i.event, PartStartEvent) and isinstance(i.event.part, ToolCallPart))
    b.tool_result("call_0", "search", "second").request().text(0, ["done"]).completed("done")
    events = _events(b.items)
    _valid(events)
    _answered(events)
    starts = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert starts == ["call_0", f"call_0:{second_start}"]
    results = {e["toolCallId"]: e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    assert results == {"call_0": "first", f"call_0:{second_start}": "second"}
    args = [e for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == f"call_0:{second_start}"]
    assert "".join(e["delta"] for e in args) == '{"q":"b"}'


def test_deltas_and_args_after_their_part_ended_are_taken_and_kept() -> None:
    b = SourceBuilder().user("go").request()
    b.event(PartStartEvent(index=0, part=ThinkingPart(content="hm")))
    b.event(PartStartEvent(index=1, part=ToolCallPart(tool_name="f", args='{"a":', tool_call_id="c")))
    b.event(PartEndEvent(index=0, part=ThinkingPart(content="hm")))  # ended when the call began ...
    b.event(PartDeltaEvent(index=0, delta=ThinkingPartDelta(content_delta=" more")))  # ... yet more came
    b.event(PartDeltaEvent(index=1, delta=ToolCallPartDelta(args_delta="1}", tool_call_id="c")))
    b.event(PartEndEvent(index=1, part=ToolCallPart(tool_name="f", args='{"a":1}', tool_call_id="c")))
    b.event(PartDeltaEvent(index=1, delta=ToolCallPartDelta(args_delta=" ", tool_call_id="c")))
    b.event(PartStartEvent(index=2, part=TextPart(content="A")))
    b.event(PartStartEvent(index=3, part=TextPart(content="B")))
    b.event(PartEndEvent(index=2, part=TextPart(content="A")))
    b.event(PartDeltaEvent(index=2, delta=TextPartDelta(content_delta="a")))
    b.event(PartEndEvent(index=2, part=TextPart(content="Aa")))  # a second end of an ended part
    b.event(PartEndEvent(index=3, part=TextPart(content="B")))
    b.tool_result("c", "f", "ok").completed("done")
    events = _events(b.items)
    _valid(events)
    _answered(events)
    late = [e for e in events if e["type"] == "CUSTOM" and e["name"] in ("harness.part_delta", "harness.part_end")]
    payloads = [e["value"]["payload"] for e in late]
    assert [(p["type"], p["index"]) for p in payloads] == [("part_delta", 0), ("part_delta", 1), ("part_delta", 2),
                                                           ("part_end", 2)]
    assert payloads[0]["delta"]["content_delta"] == " more"


def test_a_provider_executed_call_is_answered_by_its_builtin_return() -> None:
    b = SourceBuilder().user("search").request()
    b.part(0, ToolCallPart(tool_name="web_search", args={"query": "rain"}, tool_call_id="srvtoolu_01",
                           builtin=True), [], ToolCallPart(tool_name="web_search", args={"query": "rain"},
                                                           tool_call_id="srvtoolu_01", builtin=True))
    b.event(PartStartEvent(index=1, part=BuiltinToolReturnPart(tool_name="web_search", content={"hits": 3},
                                                               tool_call_id="srvtoolu_01")))
    b.event(PartStartEvent(index=2, part=BuiltinToolReturnPart(tool_name="web_search", content="stray",
                                                               tool_call_id="srvtoolu_99")))
    b.text(3, ["It rains."]).completed("It rains.")
    events = _events(b.items)
    _valid(events)
    _answered(events)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "srvtoolu_01" and result["content"] == '{"hits":3}'
    assert result["metadata"]["harness"] == {"outcome": "success", "tool_name": "web_search", "provider_executed": True}
    returns = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "harness.builtin_tool_return"]
    assert [e["value"]["payload"]["part"]["tool_call_id"] for e in returns] == ["srvtoolu_99"]  # an unknown call's


def test_a_resumed_run_answers_the_calls_it_re_announces_without_starting_them_again() -> None:
    b = SourceBuilder("thread-1", "run-2")
    for call_id, outcome in (("call-ask", "success"), ("call-deploy", "denied"), ("call-x", "failed")):
        b.event(ToolCallEvent(part=ToolCallPart(tool_name="t", args="{}", tool_call_id=call_id), args_valid=None))
        b.event(ToolResultEvent(tool_call_id=call_id, tool_name="t", outcome=outcome, content=outcome))
    b.request().text(0, ["ok"]).completed("ok")
    events = _events(b.items)
    results = {e["toolCallId"]: e["metadata"]["harness"]["outcome"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    assert results == {"call-ask": "success", "call-deploy": "denied", "call-x": "failed"}
    assert not [e for e in events if e["type"].startswith("TOOL_CALL_") and e["type"] != "TOOL_CALL_RESULT"]
    assert [e["name"] for e in events if e["type"] == "CUSTOM"].count("harness.tool_result") == 0



def test_a_builtin_return_never_answers_a_call_of_an_earlier_run() -> None:
    # A provider runs only the calls of its own response: a builtin return naming a call the Run re-announced
    # (one of an earlier Run) is not its answer, so no TOOL_CALL_RESULT names a call this Run never started.
    b = SourceBuilder("thread-1", "run-2")
    b.event(ToolCallEvent(part=ToolCallPart(tool_name="t", args="{}", tool_call_id="call-ask"), args_valid=None))
    b.request()
    b.event(PartStartEvent(index=0, part=BuiltinToolReturnPart(tool_name="t", content="x", tool_call_id="call-ask")))
    b.event(ToolResultEvent(tool_call_id="call-ask", tool_name="t", outcome="success", content="answer"))
    b.text(1, ["ok"]).completed("ok")
    events = _events(b.items)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "call-ask" and result["content"] == "answer"
    assert "provider_executed" not in result["metadata"]["harness"]
    returns = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "harness.builtin_tool_return"]
    assert [e["value"]["payload"]["part"]["tool_call_id"] for e in returns] == ["call-ask"]

SECRET = "Current Environment mounts (trusted dynamic context): /secret"


def _hidden_run() -> list[Any]:
    b = SourceBuilder().user("hi")
    b.event(InputEvent(input_id="context-1", source="context", content=SECRET,
                       metadata={"display": False, "source_id": "a13n.environment-mounts"}))
    b.event(InputEvent(input_id="surface-1", source="user", content="hidden surface context",
                       metadata={"display": False}))
    b.request().tool_call(0, "chart", "call-chart", ["{}"])
    supplement = BinaryContent(data=b"\x89PNG model-only", media_type="image/png")
    b.event(ToolResultEvent(
        tool_call_id="call-chart", tool_name="chart", outcome="success",
        content=ContentList(({"rendered": True}, "model-only note", supplement, "shown note")),
        metadata={"a13n.tool-content": {"result_index": 0, "items": [
            {"display": False}, {"display": False}, {"display": True}]}}))
    b.event(ToolResultEvent(tool_call_id="call-unknown", tool_name="chart", outcome="success",
                            content=[{"v": 1}, "model-only note"],
                            metadata={"a13n.tool-content": {"result_index": 0, "items": [{"display": False}]}}))
    return b.request().text(0, ["done"]).completed("done").items


def test_what_the_harness_marks_for_the_model_only_never_reaches_an_event() -> None:
    items = _hidden_run()
    events = _events(items)
    _valid(events)
    wire = "".join(json.dumps(e) for e in events)
    for hidden in (SECRET, "hidden surface context", "model-only note", "UE5HIG1vZGVsLW9ubHk="):
        assert hidden not in wire
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(result["content"]) == [{"rendered": True}, "shown note"]
    users = [e for e in events if e["type"] == "TEXT_MESSAGE_START" and e["role"] == "user"]
    assert len(users) == 1  # "hi"; the hidden surface input makes no turn


def test_show_hidden_publishes_everything_for_debugging() -> None:
    events = _events(_hidden_run(), show_hidden=True)
    wire = "".join(json.dumps(e) for e in events)
    for hidden in (SECRET, "hidden surface context", "model-only note"):
        assert hidden in wire


def test_a_host_whose_client_holds_its_user_messages_can_leave_them_out() -> None:
    b = SourceBuilder().user("hello").request().text(0, ["hi"]).completed("hi")
    events = _events(b.items, user_messages=False)
    _valid(events)
    assert not [e for e in events if e.get("role") == "user"]
    assert "hello" not in "".join(json.dumps(e) for e in events)


# -- the same rules on real a13n-harness Runs (tests/fixtures/a13n, made by tools/make_a13n_fixtures.py) --------

def _fixture(name: str) -> list[Any]:
    from pathlib import Path

    from harness_agui.wire.codec import decode

    path = Path(__file__).parent / "fixtures" / "a13n" / f"{name}.jsonl"
    return [decode(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_real_run_whose_server_numbers_calls_per_response_answers_every_call() -> None:
    items = _fixture("reused_call_ids")
    events = _events(items)
    _valid(events)
    _answered(events)
    starts = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert len(starts) == 4 == len(set(starts)) and starts[:2] == ["call_0", "call_1"]
    assert all(s.startswith(("call_0:", "call_1:")) for s in starts[2:])


def test_a_real_run_with_deltas_after_their_part_ended_keeps_them_and_its_call_whole() -> None:
    events = _events(_fixture("late_deltas"))
    _valid(events)
    _answered(events)
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == "call-echo")
    assert json.loads(args) == {"text": "late"}  # the args that came after the part's end are in the call
    late = [e["value"]["payload"] for e in events if e["type"] == "CUSTOM" and e["name"] == "harness.part_delta"]
    assert [p["delta"]["content_delta"] for p in late] == ["streams, I think."]  # reasoning after its end


def test_a_real_run_with_a_provider_executed_call_answers_it() -> None:
    events = _events(_fixture("structured_output"))
    _answered(events)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == "builtin-search-1"]
    assert result["metadata"]["harness"]["provider_executed"] is True


def test_no_real_run_sends_what_the_harness_marks_for_the_model_only_and_its_journal_keeps_it() -> None:
    from pathlib import Path

    from harness_agui.wire.agui import sse_frame

    hidden = ("trusted dynamic context", "<agent-context")
    names = sorted(p.stem for p in (Path(__file__).parent / "fixtures" / "a13n").glob("*.jsonl"))
    for name in names:
        items = _fixture(name)
        journal = (Path(__file__).parent / "fixtures" / "a13n" / f"{name}.jsonl").read_text(encoding="utf-8")
        sent, observer = "", HarnessAguiObserver()
        for item in items:  # one observer per Run: a file may hold a Thread's Runs one after the other
            sent += "".join(sse_frame(e) for e in observer.observe(item))
            if observer.finished:
                observer = HarnessAguiObserver()
        for text in hidden:
            assert text in journal, (name, text)
            assert text not in sent, (name, text)
    # A tool's supplements for the model only: the multimodal Run's chart returns its value, a note and an
    # image, the note and the image marked display: false.
    sent = "".join(sse_frame(e) for e in _events_of(_fixture("multimodal")))
    assert "Chart attached:" not in sent and '\\"rendered\\":true' in sent  # its value, JSON in the content


def _events_of(items: list[Any]) -> list[Any]:
    observer = HarnessAguiObserver()
    return [e for item in items for e in observer.observe(item)]
