# Projection rules for shapes real a13n-harness Runs take (INPUT_SPACE.md
# section 9): a tool call id used again in a later response, deltas that
# arrive after their part ended, a provider-executed (builtin) call and its
# return, the calls a resumed Run re-announces, and what the Harness marks
# for the model only. Each Run completes with a valid projection, every
# finished call is answered, and replay gives the same bytes.

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import given, settings
from hypothesis import strategies as st
from test_checkpoint import _check_continues_alike

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import BinaryContent, BuiltinToolReturnPart, ThinkingPart, ThinkingPartDelta
from harness_agui.source import (
    ContentList,
    ExtensionEvent,
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
    # The reasoning that came after its part's end is in its message, which ends with the response.
    thought = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert thought == "While the call streams, I think."
    assert not [e for e in events if e["type"] == "CUSTOM" and e["name"] == "harness.part_delta"]


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


# -- parts a response streams after their end (issue 36, item 14) ---------------------------------------------
# pydantic-ai ends a part when the next part of its response starts (its end names that part:
# ``next_part_kind``) and can still stream the earlier part: text after the tool call that followed it, text
# part A after text part B. A client must hold each part's whole text, so the message of such a part stays open
# until the response is over, and each message still gets one START and one END.

def interleaved_response() -> list[Any]:
    """A synthetic Run whose first response streams text part 0 after its end, twice (after the tool call of
    part 1 began and after text part 2 began), and reasoning part 3 after its end; the final texts:
    ``INTERLEAVED_TEXTS``."""
    b = SourceBuilder().user("Look at the tasks and the notes.").request()
    b.event(PartStartEvent(index=0, part=TextPart(content="Let me look ")))
    b.event(PartEndEvent(index=0, part=TextPart(content="Let me look "), next_part_kind="tool-call"))
    b.event(PartStartEvent(index=1, part=ToolCallPart(tool_name="lookup", args='{"what": ', tool_call_id="c1"),
                           previous_part_kind="text"))
    b.event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="at two things. ")))
    b.event(PartDeltaEvent(index=1, delta=ToolCallPartDelta(args_delta='"tasks"}')))
    b.event(PartEndEvent(index=1, part=ToolCallPart(tool_name="lookup", args='{"what": "tasks"}', tool_call_id="c1"),
                         next_part_kind="text"))
    b.event(PartStartEvent(index=2, part=TextPart(content="First, the tasks"), previous_part_kind="tool-call"))
    b.event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="Then the notes.")))
    b.event(PartEndEvent(index=2, part=TextPart(content="First, the tasks"), next_part_kind="thinking"))
    b.event(PartStartEvent(index=3, part=ThinkingPart(content="Two "), previous_part_kind="text"))
    b.event(PartDeltaEvent(index=2, delta=TextPartDelta(content_delta=".")))
    b.event(PartEndEvent(index=3, part=ThinkingPart(content="Two things", signature="sig-1")))  # the last part
    b.tool_result("c1", "lookup", "nothing open")
    return b.request().text(0, ["Nothing is open."]).completed("Nothing is open.").items


INTERLEAVED_TEXTS = {"run-1:request-0:part-0:text": "Let me look at two things. Then the notes.",
                     "run-1:request-0:part-2:text": "First, the tasks.",
                     "run-1:request-0:part-3:thinking": "Two things",
                     "run-1:request-1:part-0:text": "Nothing is open."}


def _texts(events: list[Any]) -> dict[str, str]:
    """What the client holds as each assistant and reasoning message's text (the conversation fold, which mirrors
    @ag-ui/client; tests/test_node_client.py asks the client itself)."""
    from harness_agui.core.conversation import EMPTY_CONVERSATION, fold_events, messages_json

    if events and isinstance(events[0], dict):
        from ag_ui.core import Event
        from pydantic import TypeAdapter

        events = [TypeAdapter(Event).validate_python(e) for e in events]
    messages = messages_json(fold_events(EMPTY_CONVERSATION, events))
    return {m["id"]: m.get("content") or "" for m in messages if m["role"] in ("assistant", "reasoning")}


def test_text_streamed_after_its_part_ended_is_in_its_message_which_ends_with_the_response() -> None:
    events = _events(interleaved_response())
    _valid(events)
    _answered(events)
    assert _texts(events) == INTERLEAVED_TEXTS
    assert not [e for e in events if e["type"] == "CUSTOM" and e["name"].startswith("harness.part_")]
    kinds = [(e["type"], e.get("messageId") or e.get("toolCallId")) for e in events
             if e["type"].startswith(("TEXT_MESSAGE", "REASONING_MESSAGE", "TOOL_CALL_START", "TOOL_CALL_END"))]
    for mid in INTERLEAVED_TEXTS:
        assert [k for k, m in kinds if m == mid and k.endswith(("_START", "_END"))] == [
            k for k in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "REASONING_MESSAGE_START", "REASONING_MESSAGE_END")
            if k.startswith("REASONING" if mid.endswith("thinking") else "TEXT")]
    # The messages of the first response end when its last part does, in index order, a signature before its END.
    first = [k for k in kinds if k[1] and k[1].startswith("run-1:request-0")]
    assert first[-4:] == [("TEXT_MESSAGE_END", "run-1:request-0:part-0:text"),
                          ("TEXT_MESSAGE_END", "run-1:request-0:part-2:text"),
                          ("REASONING_MESSAGE_CONTENT", "run-1:request-0:part-3:thinking"),
                          ("REASONING_MESSAGE_END", "run-1:request-0:part-3:thinking")]
    signed = [e for e in events if e["type"] == "REASONING_ENCRYPTED_VALUE"]
    assert [(e["entityId"], e["encryptedValue"]) for e in signed] == [("run-1:request-0:part-3:thinking", "sig-1")]


def _held_text(b: SourceBuilder, index: int = 0) -> SourceBuilder:
    b.event(PartStartEvent(index=index, part=TextPart(content="Hel")))
    b.event(PartEndEvent(index=index, part=TextPart(content="Hello"), next_part_kind="file"))
    return b.event(PartDeltaEvent(index=index, delta=TextPartDelta(content_delta=", world")))


def _ends(events: list[dict[str, Any]], message_id: str) -> list[int]:
    return [i for i, e in enumerate(events) if e["type"] == "TEXT_MESSAGE_END" and e["messageId"] == message_id]


def test_a_held_message_ends_when_its_request_completes_or_fails() -> None:
    for notice in ("model_request_completed", "model_request_failed"):
        b = _held_text(SourceBuilder().user("hi").request())
        b.event(ExtensionEvent(kind="lifecycle", schema_version="1", payload={"type": notice, "request_index": 0}))
        b.event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="!")))  # after the response: a late delta
        events = _events(b.completed("Hello, world").items)
        _valid(events)
        assert _texts(events) == {"run-1:request-0:part-0:text": "Hello, world"}
        (end,) = _ends(events, "run-1:request-0:part-0:text")
        notice_at = next(i for i, e in enumerate(events) if e["type"] == "CUSTOM" and e["value"]["payload"].get(
            "payload", {}).get("type") == notice)
        assert end == notice_at - 1
        late = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "harness.part_delta"]
        assert [e["value"]["payload"]["delta"]["content_delta"] for e in late] == ["!"]


def test_a_held_message_ends_when_its_index_starts_again_a_request_starts_or_the_run_ends() -> None:
    again = _held_text(SourceBuilder().user("hi").request())
    again.event(PartStartEvent(index=0, part=TextPart(content="Bye")))
    again.event(PartEndEvent(index=0, part=TextPart(content="Bye")))
    request = _held_text(SourceBuilder().user("hi").request()).request().text(0, ["Bye"])
    run_end = _held_text(SourceBuilder().user("hi").request())
    for b, texts in ((again, {"run-1:request-0:part-0:text": "Hello, world",
                              f"run-1:request-0:part-0:text:{len(again.items) - 2}": "Bye"}),
                     (request, {"run-1:request-0:part-0:text": "Hello, world", "run-1:request-1:part-0:text": "Bye"}),
                     (run_end, {"run-1:request-0:part-0:text": "Hello, world"})):
        events = _events(b.completed("done").items)
        _valid(events)
        assert _texts(events) == texts
        assert all(len(_ends(events, mid)) == 1 for mid in texts)


def test_a_held_part_ended_again_as_the_last_part_ends_once_with_its_whole_text() -> None:
    b = _held_text(SourceBuilder().user("hi").request())
    b.event(PartStartEvent(index=1, part=TextPart(content="Bye")))
    b.event(PartEndEvent(index=0, part=TextPart(content="Hello, world!")))  # its end again, now the last part
    events = _events(b.completed("Hello, world!").items)
    _valid(events)
    assert _texts(events) == {"run-1:request-0:part-0:text": "Hello, world!", "run-1:request-0:part-1:text": "Bye"}
    assert len(_ends(events, "run-1:request-0:part-0:text")) == 1


def test_a_part_end_that_names_no_next_part_still_ends_its_message_at_once() -> None:
    # Sources that do not say what follows (this library's own builders, older journals) end as before.
    b = SourceBuilder().user("hi").request()
    b.event(PartStartEvent(index=0, part=TextPart(content="Hi")))
    b.event(PartEndEvent(index=0, part=TextPart(content="Hi")))
    b.event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta=" there")))
    events = _events(b.completed("Hi").items)
    (end,) = _ends(events, "run-1:request-0:part-0:text")
    assert events[end - 1]["type"] == "TEXT_MESSAGE_CONTENT" and _texts(events) == {"run-1:request-0:part-0:text": "Hi"}
    assert [e["name"] for e in events if e["type"] == "CUSTOM"][-1:] == ["harness.part_delta"]


@dataclass
class RunFinals:
    """One root Run of a real journal: its events, the final text (in the Run's terminal history) of each text
    or reasoning message whose model request completed, and the messages of requests that failed (a provider
    error, or preempted by steering: the history drops such a response, or keeps what streamed of it as
    ``interrupted`` when the Run fails)."""

    events: list[Any]
    finals: dict[str, str]
    unfinished: set[str]


def run_finals(items: list[Any]) -> list[RunFinals]:
    """The ``RunFinals`` of each root Run in ``items`` (a journal may hold a Thread's Runs one after the other)."""
    from harness_agui.core.source import HarnessRunResultEvent

    runs: list[list[Any]] = [[]]
    for item in items:
        runs[-1].append(item)
        if isinstance(item, HarnessRunResultEvent) and item.run_id == runs[-1][0].run_id:
            runs.append([])
    return [_finals_of(run) for run in runs if run]


def _finals_of(items: list[Any]) -> RunFinals:
    """The ``RunFinals`` of one root Run's stream. A message is matched to its part by the item that started it:
    the part's index in the response of the request it streamed in, the k-th completed request being the k-th
    complete response the Run added to the history."""
    from harness_agui.core.notices import model_request_started
    from harness_agui.core.source import ExtensionEvent as Extension

    observer, events, root, request = HarnessAguiObserver(), [], items[0].run_id, 0
    parts: dict[str, tuple[int, int, str]] = {}
    completed: list[int] = []
    failed: set[int] = set()
    for item in items:
        new = observer.observe(item)
        events += new
        payload = getattr(item, "event", None)
        if item.run_id != root:
            continue
        if type(payload) is Extension:
            body = payload.payload
            started = model_request_started(payload)
            notice = body.get("type") if payload.kind == "lifecycle" and isinstance(body, dict) else None
            if started is not None:
                request = started
            elif notice == "model_request_completed":
                assert body.get("request_index") == request
                completed.append(request)
            elif notice == "model_request_failed":
                failed.add(request)
        elif isinstance(payload, PartStartEvent) and isinstance(payload.part, (TextPart, ThinkingPart)):
            (start,) = [e for e in new if e.type.value in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START")]
            kind = "text" if isinstance(payload.part, TextPart) else "thinking"
            parts[start.message_id] = (request, payload.index, kind)
    history = items[-1].result.history
    assert history is not None
    responses = [m for m in history.messages[history.new_message_index:]
                 if m["kind"] == "response" and m.get("state") == "complete"]
    assert len(responses) == len(completed), (len(responses), completed)
    finals: dict[str, str] = {}
    for message_id, (n, index, kind) in parts.items():
        if n in completed:
            part = responses[completed.index(n)]["parts"][index]
            assert part["part_kind"] == kind, (message_id, part)
            finals[message_id] = part["content"]
    unfinished = set(parts) - set(finals)
    assert all(parts[m][0] in failed for m in unfinished), unfinished
    return RunFinals(events, finals, unfinished)


def test_every_real_run_holds_in_each_message_the_final_text_of_its_part() -> None:
    from pathlib import Path

    names = sorted(p.stem for p in (Path(__file__).parent / "fixtures" / "a13n").glob("*.jsonl"))
    checked = 0
    for name in names:
        for run in run_finals(_fixture(name)):
            texts = _texts(run.events)
            assert {m: texts.get(m) for m in run.finals} == run.finals, name
            checked += len(run.finals)
            assert bool(run.unfinished) == (name in ("steering", "provider_error_recovered", "provider_error_exhausted",
                                                     "failed_run")), name
    assert checked >= 25
    (interleaved,) = run_finals(_fixture("interleaved_parts"))
    assert "Let me look at two things. Then the notes." in interleaved.finals.values()
    (late,) = run_finals(_fixture("late_deltas"))
    assert "While the call streams, I think." in late.finals.values()


_NEXT_KIND = {"text": "text", "thinking": "thinking", "tool_call": "tool-call"}


@st.composite
def interleaved_responses(draw: st.DrawFn) -> tuple[list[Any], dict[str, str]]:
    """One response as pydantic-ai streams it: parts start one after the other, each start ends the part before
    it (its end names the new part's kind, and holds what that part streamed so far), and text and reasoning
    deltas for any started part come in any order, before or after its end; the last part's end names no next
    part. Returns the Run's items and the whole text of each text and reasoning message."""
    kinds = draw(st.lists(st.sampled_from(list(_NEXT_KIND)), min_size=1, max_size=4))
    pieces = [draw(st.lists(st.text("ab .\n", min_size=1, max_size=3), min_size=1, max_size=4))
              if kind != "tool_call" else ["{}"] for kind in kinds]
    b = SourceBuilder().user("go").request()

    def part(i: int, upto: int) -> Any:
        text = "".join(pieces[i][:upto])
        if kinds[i] == "tool_call":
            return ToolCallPart(tool_name="f", args=text, tool_call_id=f"call-{i}")
        return (TextPart if kinds[i] == "text" else ThinkingPart)(content=text)

    sent = [0] * len(kinds)
    started = 0
    while True:
        choices = [("start", started)] if started < len(kinds) else []
        choices += [("delta", i) for i in range(started) if sent[i] < len(pieces[i])]
        if not choices:
            break
        action, i = draw(st.sampled_from(choices))
        if action == "start":
            if started:
                b.event(PartEndEvent(index=started - 1, part=part(started - 1, sent[started - 1]),
                                     next_part_kind=_NEXT_KIND[kinds[i]]))
            b.event(PartStartEvent(index=i, part=part(i, 1)))
            sent[i], started = 1, started + 1
        else:
            piece = pieces[i][sent[i]]
            delta = TextPartDelta(content_delta=piece) if kinds[i] == "text" else ThinkingPartDelta(content_delta=piece)
            b.event(PartDeltaEvent(index=i, delta=delta))
            sent[i] += 1
    b.event(PartEndEvent(index=len(kinds) - 1, part=part(len(kinds) - 1, sent[-1])))
    if draw(st.booleans()):
        b.event(ExtensionEvent(kind="lifecycle", schema_version="1",
                               payload={"type": "model_request_completed", "request_index": 0}))
    for i, kind in enumerate(kinds):
        if kind == "tool_call":
            b.tool_result(f"call-{i}", "f", "ok")
    texts = {f"run-1:request-0:part-{i}:{kind}": "".join(pieces[i]) for i, kind in enumerate(kinds)
             if kind != "tool_call"}
    return b.completed("done").items, texts


@settings(max_examples=60, deadline=None)
@given(interleaved_responses(), st.data())
def test_any_interleaving_of_a_response_gives_each_message_its_whole_text(
        run: tuple[list[Any], dict[str, str]], data: st.DataObject) -> None:
    items, texts = run
    events = _events(items)  # replay gives the same events
    _valid(events)
    _answered(events)
    assert {m: t for m, t in _texts(events).items() if t or m in texts} == texts  # (a call's holder is empty)
    for mid in texts:
        starts_and_ends = [e["type"] for e in events if e.get("messageId") == mid and e["type"].endswith(
            ("_START", "_END"))]
        assert len(starts_and_ends) == 2, (mid, starts_and_ends)
    assert not [e for e in events if e["type"] == "CUSTOM" and e["name"].startswith("harness.part_")]
    _check_continues_alike(items, data.draw(st.integers(1, len(items))))  # a checkpoint anywhere continues alike
