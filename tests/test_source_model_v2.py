# The source model and wire format of version 2: the whole public stream of
# a real Harness. Every value of every form survives the wire unchanged (and
# its line is stable); tool content that is JSON stays JSON and anything else
# is tagged, so the two never mix; binary data is checked on the way in; every
# version 1 line reads as the version 2 value it always meant, and a version 1
# line that uses what only version 2 has is refused. Every new payload
# projects onto something valid while its own projection rules are to come.

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import (
    BinaryContent,
    BuiltinToolReturnPart,
    ContentList,
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
    FilePart,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    MediaContent,
    MessageHistory,
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
    UnknownDelta,
    UnknownPart,
    Usage,
)
from harness_agui.testing import json_objects, json_values, payloads, source_items, tool_contents
from harness_agui.wire.codec import WIRE_VERSION, DecodeError, decode, encode, from_json, to_json
from harness_agui.wire.jsonl import Journal

ROOT = Path(__file__).resolve().parent.parent
V1_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "wire_v1"
EXAMPLES = ROOT / "examples" / "data"
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def event(payload: Any, sequence: int = 1) -> HarnessEvent:
    return HarnessEvent(thread_id="t", run_id="r", sequence=sequence, occurred_at=AT, event=payload)


def fails(line: str, *fragments: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode(line, line=4)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert str(info.value).startswith("line 4: ")


# -- the round trip ------------------------------------------------------------------------

@given(source_items())
def test_every_value_of_every_form_survives_encode_then_decode(item: HarnessStreamEvent) -> None:
    line = encode(item)
    assert json.loads(line)["v"] == WIRE_VERSION == 2
    back = decode(line)
    assert back == item
    assert encode(back) == line


@given(tool_contents())
def test_tool_content_comes_back_as_the_same_form(content: Any) -> None:
    back = decode(encode(event(ToolResultEvent(tool_call_id="c", tool_name="t", outcome="success",
                                               content=content)))).event
    assert type(back.content) is type(content)
    assert back.content == content


def test_a_json_object_shaped_like_a_tagged_item_stays_json() -> None:
    lookalike = {"type": "binary", "media_type": "image/png", "size": 0, "data": ""}
    item = event(ToolResultEvent(tool_call_id="c", tool_name="t", outcome="success", content=lookalike))
    data = to_json(item)
    assert data["event"]["content"] == lookalike and "content_typed" not in data["event"]
    assert decode(encode(item)).event.content == lookalike


def test_binary_content_is_base64_with_its_size_and_media_type() -> None:
    image = BinaryContent(data=b"\x89PNG\r\n", media_type="image/png", identifier="abc")
    item = event(ToolResultEvent(tool_call_id="c", tool_name="shot", outcome="success",
                                 content=ContentList(items=("A caption", image, {"n": 1}))))
    assert to_json(item)["event"]["content_typed"] == {"type": "list", "items": [
        {"type": "json", "value": "A caption"},
        {"type": "binary", "media_type": "image/png", "size": 6, "identifier": "abc", "data": "iVBORw0K"},
        {"type": "json", "value": {"n": 1}},
    ]}
    assert decode(encode(item)) == item


# -- what the decoder refuses -------------------------------------------------------------------

def _line(content: Any) -> str:
    item = event(ToolResultEvent(tool_call_id="c", tool_name="t", outcome="success", content=content))
    return encode(item)


def test_binary_data_that_is_not_canonical_base64_or_not_its_size_is_refused() -> None:
    line = _line(BinaryContent(data=b"A", media_type="text/plain"))
    assert '"data":"QQ=="' in line
    fails(line.replace('"data":"QQ=="', '"data":"QR=="'), "event.content_typed.data", "canonical")
    fails(line.replace('"data":"QQ=="', '"data":"Q Q=="'), "event.content_typed.data", "not base64")
    fails(line.replace('"size":1', '"size":2'), "event.content_typed.size is 2", "holds 1 bytes")


def test_content_written_both_ways_is_refused() -> None:
    data = json.loads(_line(BinaryContent(data=b"A", media_type="text/plain")))
    data["event"]["content"] = "text"
    fails(json.dumps(data), "event.content and event.content_typed exclude each other")


def test_an_unknown_content_type_is_refused() -> None:
    data = json.loads(_line(BinaryContent(data=b"A", media_type="text/plain")))
    data["event"]["content_typed"]["type"] = "blob"
    fails(json.dumps(data), "unknown content type 'blob'", "known: binary, media, list")


def test_a_content_list_of_only_json_is_refused_on_the_wire_as_in_python() -> None:
    with pytest.raises(ValueError, match="no binary or media item"):
        ContentList(items=("a", 1))
    data = json.loads(_line(ContentList(items=("a", MediaContent(kind="image-url", data={"url": "u"})))))
    data["event"]["content_typed"]["items"].pop()
    fails(json.dumps(data), "invalid item", "no binary or media item")


def test_binary_content_holds_bytes_and_a_media_type() -> None:
    with pytest.raises(TypeError, match="data"):
        BinaryContent(data="iVBOR", media_type="image/png")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="media_type"):
        BinaryContent(data=b"", media_type=" ")
    assert BinaryContent(data=b"abc", media_type="image/png").size == 3


def test_a_deferred_call_with_a_target_call_that_is_another_call_is_refused() -> None:
    target = ToolCallPart(tool_name="deploy", args='{"env":"prod"}', tool_call_id="call-1", tool_kind="function")
    DeferredToolCall(tool_call_id="call-1", tool_name="deploy", args='{"env":"prod"}', target_call=target)
    with pytest.raises(ValueError, match="target_call"):
        DeferredToolCall(tool_call_id="call-2", tool_name="deploy", args='{"env":"prod"}', target_call=target)


def test_a_decimal_usage_field_must_be_a_finite_decimal_number() -> None:
    assert Usage(cost="0.0125", audio_seconds="0").cost == "0.0125"
    for bad in ("NaN", "Infinity", "1,5", " 1", ""):
        with pytest.raises(ValueError, match="cost"):
            Usage(cost=bad)
    with pytest.raises(TypeError, match="cost"):
        Usage(cost=0.5)  # type: ignore[arg-type]


def test_suspend_reason_and_history_are_checked() -> None:
    with pytest.raises(ValueError, match="suspend_reason"):
        RunResult(status="completed", suspend_reason="deferred")
    with pytest.raises(ValueError, match="new_message_index"):
        MessageHistory(messages=[{}], new_message_index=2)


def test_an_output_tool_result_has_no_user_content() -> None:
    with pytest.raises(ValueError, match="user_content"):
        ToolResultEvent(tool_call_id="c", tool_name="final_result", outcome="success", user_content="x", output=True)


# -- version 1 ---------------------------------------------------------------------------------------

_V1_OUTCOMES = ("success", "failed", "retried")
_V1_SOURCES = ("user", "steering", "context", "recovery", "async_subagent", "background_process")
_V1_KINDS = ("context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle", "tool", "diagnostic")
_texts = st.text(st.characters(codec="utf-8"), max_size=12)
_ids = _texts.filter(lambda s: s.strip() != "")
_opt = st.none
_args = st.none() | _texts | json_objects()
_v1_parts = st.one_of(
    st.builds(TextPart, content=_texts, id=_opt() | _ids),
    st.builds(ThinkingPart, content=_texts, id=_opt() | _ids, signature=_opt() | _texts,
              provider_name=_opt() | _texts),
    st.builds(ToolCallPart, tool_name=_texts, args=_args, tool_call_id=_ids),
)
_v1_payloads = st.one_of(
    st.builds(PartStartEvent, index=st.integers(0, 99), part=_v1_parts),
    st.builds(PartEndEvent, index=st.integers(0, 99), part=_v1_parts),
    st.builds(PartDeltaEvent, index=st.integers(0, 99), delta=st.one_of(
        st.builds(TextPartDelta, content_delta=_texts),
        st.builds(ThinkingPartDelta, content_delta=_opt() | _texts, signature_delta=_opt() | _texts),
        st.builds(ToolCallPartDelta, tool_name_delta=_opt() | _texts, args_delta=_args, tool_call_id=_opt() | _ids))),
    st.builds(ToolResultEvent, tool_call_id=_ids, tool_name=_texts, outcome=st.sampled_from(_V1_OUTCOMES),
              content=json_values()),
    st.builds(InputEvent, input_id=_ids, source=st.sampled_from(_V1_SOURCES), content=_texts | json_objects(),
              metadata=_opt() | json_objects()),
    st.builds(ExtensionEvent, kind=st.sampled_from(_V1_KINDS), schema_version=_texts, payload=json_values()),
    st.builds(ObservationEvent, name=_ids, value=json_values()),
)
_v1_calls = st.lists(st.builds(DeferredToolCall, tool_call_id=_ids, tool_name=_texts, args=_args), max_size=2,
                     unique_by=lambda c: c.tool_call_id).map(tuple)
_v1_usage = _opt() | st.builds(Usage, *(_opt() | st.integers(0, 10**6) for _ in range(4)))
_v1_results = st.one_of(
    st.builds(RunResult, status=st.just("completed"), output=json_values(), usage=_v1_usage),
    st.builds(RunResult, status=st.just("failed"), failure=st.builds(Failure, code=_ids, message=_texts),
              usage=_v1_usage),
    st.builds(RunResult, status=st.just("cancelled"), usage=_v1_usage),
    st.builds(RunResult, status=st.just("suspended"), usage=_v1_usage,
              deferred=st.builds(Deferred, calls=_v1_calls, approvals=_v1_calls)
              .filter(lambda d: bool(d.calls or d.approvals))),
)
_v1_items = st.builds(HarnessEvent, event=_v1_payloads, thread_id=_ids, run_id=_ids, sequence=st.integers(0, 99),
                      occurred_at=st.just(AT)) | st.builds(
    HarnessRunResultEvent, result=_v1_results, thread_id=_ids, run_id=_ids, sequence=st.integers(0, 99),
    occurred_at=st.just(AT))


@given(_v1_items)
def test_every_version_1_line_reads_as_the_value_it_always_meant(item: HarnessStreamEvent) -> None:
    # What version 1 could say, version 2 writes with the same bytes but for "v".
    line = encode(item)
    v1 = line.replace('{"v":2,', '{"v":1,', 1)
    assert v1 != line
    assert decode(v1) == item
    assert encode(decode(v1)) == line


def test_the_version_1_journals_kept_as_fixtures_read_as_the_current_examples() -> None:
    names = sorted(p.name for p in V1_FIXTURES.glob("*.jsonl"))
    assert names == ["approval_then_new_run.jsonl", "chat_with_reasoning.jsonl", "suspended_for_approval.jsonl",
                     "tool_calls_with_failure.jsonl"]
    for name in names:
        old = (V1_FIXTURES / name).read_text(encoding="utf-8").splitlines()
        new = (EXAMPLES / name).read_text(encoding="utf-8").splitlines()
        assert all(json.loads(line)["v"] == 1 for line in old)
        assert [decode(line) for line in old] == [decode(line) for line in new]
        for run_id in dict.fromkeys(decode(line).run_id for line in new):  # the Journal reader migrates too
            assert list(Journal(V1_FIXTURES / name, run_id=run_id)) == list(Journal(EXAMPLES / name, run_id=run_id))


V1_LINE = ('{"v":1,"kind":"event","thread_id":"t","run_id":"r","sequence":3,"occurred_at":"2026-11-30T09:00:00+00:00",'
           '"event":{"type":"part_delta","index":0,"delta":{"type":"text","content_delta":"Hel"}}}')


@pytest.mark.parametrize(("change", "message"), [
    (('"content_delta":"Hel"', '"content_delta":"Hel","provider_name":"x"'), "unknown field event.delta.provider_name"),
    (('"type":"text","content_delta"', '"type":"unknown","part_delta_kind":"x","data":{},"content_delta"'),
     "unknown delta type 'unknown' at event.delta in wire version 1"),
    (('"type":"part_delta","index":0,"delta":{"type":"text","content_delta":"Hel"}',
      '"type":"final_result"'), "unknown payload type 'final_result' at event in wire version 1"),
], ids=["new field", "new delta type", "new payload type"])
def test_a_version_1_line_that_uses_what_only_version_2_has_is_refused(change: tuple[str, str], message: str) -> None:
    line = V1_LINE.replace(*change)
    assert line != V1_LINE
    fails(line, message)


def test_a_caller_migration_for_version_1_replaces_the_default() -> None:
    seen = []

    def mine(old: dict[str, Any]) -> dict[str, Any]:
        seen.append(old["sequence"])
        return {**old, "v": 2, "sequence": old["sequence"] + 1}

    assert decode(V1_LINE, migrations={1: mine}).sequence == 4
    assert seen == [3]
    assert from_json(json.loads(V1_LINE)).sequence == 3


# -- every new value projects somewhere valid ------------------------------------------------------

# The payloads that have no projection rule of their own (inputs, extensions and
# observations have theirs, tested with the projection).
_NEW_KINDS = (
    "FinalResultEvent", "ToolCallEvent", "DeferredToolRequestsEvent", "EnqueuedMessagesEvent", "CapabilityEvent",
    "UnknownEvent",
)


def _projects_alone(payload: Any) -> bool:
    if type(payload).__name__ in _NEW_KINDS:
        return True
    if isinstance(payload, (PartStartEvent, PartEndEvent)):
        return isinstance(payload.part, (BuiltinToolReturnPart, FilePart, UnknownPart))
    if isinstance(payload, PartDeltaEvent):
        return isinstance(payload.delta, UnknownDelta)
    return isinstance(payload, ToolResultEvent)  # for a call this Run never started: a CUSTOM event


@given(payloads().filter(_projects_alone))
def test_a_payload_without_its_own_projection_yet_becomes_a_valid_custom_event(payload: Any) -> None:
    items = [event(payload, 0), HarnessRunResultEvent(thread_id="t", run_id="r", sequence=1, occurred_at=AT,
                                                      result=RunResult(status="cancelled"))]
    observer = HarnessAguiObserver()
    produced = [e for item in items for e in observer.observe(item)]
    kinds = [e.type.value for e in produced]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert set(kinds[1:-1]) == {"CUSTOM"}
    assert all(e.name.startswith("harness.") for e in produced[1:-1])
    text = json.dumps([e.model_dump(mode="json") for e in produced])
    assert not any(base64.b64encode(b.data).decode() in text for b in _binaries(payload) if len(b.data) >= 8)
    assert_valid_agui([e.model_dump(mode="json", by_alias=True) for e in produced])


def _binaries(value: Any) -> list[BinaryContent]:
    """Every BinaryContent inside a source value."""
    if isinstance(value, BinaryContent):
        return [value]
    if isinstance(value, ContentList):
        return [b for x in value.items for b in _binaries(x)]
    if attrs.has(type(value)):
        return [b for f in attrs.fields(type(value)) for b in _binaries(getattr(value, f.name))]
    if isinstance(value, tuple):
        return [b for x in value for b in _binaries(x)]
    return []


def test_a_binary_in_a_custom_event_is_a_reference_without_its_bytes() -> None:
    image = BinaryContent(data=b"\x89PNG" * 100, media_type="image/png", identifier="img-1")
    items = [event(PartStartEvent(index=2, part=FilePart(content=image)), 0)]
    (started, custom) = HarnessAguiObserver().observe(items[0])
    assert custom.name == "harness.file"
    assert custom.value["payload"]["part"]["content"] == {"type": "binary", "media_type": "image/png", "size": 400,
                                                          "identifier": "img-1"}


@pytest.mark.parametrize("outcome", ["denied", "interrupted"])
def test_a_denied_or_interrupted_call_is_answered_like_the_others(outcome: str) -> None:
    call = ToolCallPart(tool_name="deploy", args='{"env":"prod"}', tool_call_id="call-1")
    content = ContentList(items=("Not allowed", BinaryContent(data=b"x", media_type="image/png")))
    items = [event(PartStartEvent(index=0, part=call), 0), event(PartEndEvent(index=0, part=call), 1),
             event(ToolResultEvent(tool_call_id="call-1", tool_name="deploy", outcome=outcome, content=content), 2)]
    observer = HarnessAguiObserver()
    produced = [e for item in items for e in observer.observe(item)]
    result = produced[-1]
    assert result.type.value == "TOOL_CALL_RESULT" and result.tool_call_id == "call-1"
    assert json.loads(result.content) == {"type": "list", "items": [
        {"type": "json", "value": "Not allowed"}, {"type": "binary", "media_type": "image/png", "size": 1}]}


def test_a_builtin_tool_call_projects_like_a_tool_call() -> None:
    call = ToolCallPart(tool_name="web_search", args={"query": "weather"}, tool_call_id="bt-1", builtin=True)
    items = [event(PartStartEvent(index=0, part=call), 0), event(PartEndEvent(index=0, part=call), 1)]
    observer = HarnessAguiObserver()
    kinds = [e.type.value for item in items for e in observer.observe(item)]
    assert kinds == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
