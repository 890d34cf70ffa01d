# The wire format: every source item survives encode -> decode unchanged,
# the text is stable and matches the SPEC's examples, every kind of bad line
# is a DecodeError naming the line and the fault, and migrations let older
# lines be read. The AG-UI output forms (JSON lines, SSE frames) are checked
# at the end.

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from ag_ui.core import CustomEvent, TextMessageContentEvent
from hypothesis import given
from hypothesis import strategies as st

from harness_agui.core import _json
from harness_agui.core.source import (
    EXTENSION_KINDS,
    INPUT_SOURCES,
    TOOL_OUTCOMES,
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
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
    Usage,
)
from harness_agui.testing import (
    SourceBuilder,
    complete_histories,
    json_objects,
    json_values,
    simulated_run,
    source_items,
)
from harness_agui.wire import codec
from harness_agui.wire.agui import agui_to_json, sse_frame
from harness_agui.wire.codec import DecodeError, decode, encode, from_json, to_json

# -- strategies: every payload kind with every optional field set or not ----------------

_chars = st.characters(codec="utf-8")
texts = st.text(_chars, max_size=16)
ids = st.text(_chars, min_size=1, max_size=8).filter(lambda s: s.strip() != "")
tokens = st.none() | st.integers(min_value=0, max_value=2**40)


def opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


args = st.none() | texts | json_objects()
parts = st.one_of(
    st.builds(TextPart, content=texts, id=opt(ids)),
    st.builds(ThinkingPart, content=texts, id=opt(ids), signature=opt(texts), provider_name=opt(texts)),
    st.builds(ToolCallPart, tool_name=texts, args=args, tool_call_id=ids),
)
deltas = st.one_of(
    st.builds(TextPartDelta, content_delta=texts),
    st.builds(ThinkingPartDelta, content_delta=opt(texts), signature_delta=opt(texts)),
    st.builds(ToolCallPartDelta, tool_name_delta=opt(texts), args_delta=args, tool_call_id=opt(ids)),
)
indexes = st.integers(min_value=0, max_value=2**31)
payloads = st.one_of(
    st.builds(PartStartEvent, index=indexes, part=parts),
    st.builds(PartDeltaEvent, index=indexes, delta=deltas),
    st.builds(PartEndEvent, index=indexes, part=parts),
    st.builds(ToolResultEvent, tool_call_id=ids, tool_name=texts, outcome=st.sampled_from(TOOL_OUTCOMES),
              content=json_values()),
    st.builds(InputEvent, input_id=ids, source=st.sampled_from(INPUT_SOURCES), content=texts | json_objects(),
              metadata=opt(json_objects())),
    st.builds(ExtensionEvent, kind=st.sampled_from(EXTENSION_KINDS), schema_version=texts, payload=json_values()),
    st.builds(ObservationEvent, name=ids, value=json_values()),
)
deferred_calls = st.lists(st.builds(DeferredToolCall, tool_call_id=ids, tool_name=texts, args=args),
                          max_size=3, unique_by=lambda c: c.tool_call_id).map(tuple)
usages = opt(st.builds(Usage, input_tokens=tokens, output_tokens=tokens, cache_read_tokens=tokens,
                       reasoning_tokens=tokens))
results = st.one_of(
    st.builds(RunResult, status=st.just("completed"), output=json_values(), usage=usages),
    st.builds(RunResult, status=st.just("failed"), usage=usages,
              failure=st.builds(Failure, code=ids, message=texts)),
    st.builds(RunResult, status=st.just("cancelled"), usage=usages),
    st.builds(RunResult, status=st.just("suspended"), usage=usages,
              deferred=st.builds(Deferred, calls=deferred_calls, approvals=deferred_calls)
              .filter(lambda d: bool(d.calls or d.approvals))),
)
# Offsets down to the microsecond, as datetime allows; dates where every
# offset stays within datetime's range when compared in UTC.
zones = st.timedeltas(min_value=-timedelta(hours=23, minutes=59), max_value=timedelta(hours=23, minutes=59)) \
    .map(timezone)
moments = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=zones)
envelope = {"thread_id": ids, "run_id": ids, "sequence": st.integers(min_value=0, max_value=2**53 - 1),
            "occurred_at": moments}
items = st.one_of(st.builds(HarnessEvent, event=payloads, **envelope),
                  st.builds(HarnessRunResultEvent, result=results, **envelope))

AT = datetime(2026, 11, 30, 9, 0, 0, 125000, tzinfo=UTC)


def event(payload: Any, **changes: Any) -> HarnessEvent:
    head = {"thread_id": "t", "run_id": "r", "sequence": 3, "occurred_at": AT, **changes}
    return HarnessEvent(event=payload, **head)


def result(res: RunResult) -> HarnessRunResultEvent:
    return HarnessRunResultEvent(thread_id="t", run_id="r", sequence=9, occurred_at=AT, result=res)


# -- round trip -----------------------------------------------------------------------------

@given(items)
def test_every_item_survives_encode_then_decode_unchanged(item: HarnessStreamEvent) -> None:
    line = encode(item)
    back = decode(line)
    assert back == item
    assert back.occurred_at.utcoffset() == item.occurred_at.utcoffset()
    assert encode(back) == line


@given(items)
def test_an_encoded_line_is_one_line_of_utf8_json(item: HarnessStreamEvent) -> None:
    line = encode(item)
    assert "\n" not in line and "\r" not in line
    assert json.loads(line.encode("utf-8")) == to_json(item)
    assert decode(line.encode("utf-8")) == item


@given(st.one_of(items, source_items()))
def test_the_generated_writers_write_the_text_of_the_json_object_byte_for_byte(item: HarnessStreamEvent) -> None:
    # encode() writes an item by generated writers; the line must be exactly the compact JSON of to_json().
    assert encode(item) == _json.dumps(to_json(item))


@given(complete_histories())
def test_every_item_of_a_generated_run_survives_the_wire(history: list[HarnessStreamEvent]) -> None:
    assert [decode(encode(item)) for item in history] == history


EXAMPLES = {
    "text part with non-ASCII content": event(PartStartEvent(
        index=0, part=TextPart(content="Grüße, 世界! 🌍 مرحبا", id="msg-ü"))),
    "thinking part with signature": event(PartEndEvent(index=1, part=ThinkingPart(
        content="hmm", id="think-1", signature="c2ln", provider_name="anthropic"))),
    "tool call with nested JSON args": event(PartEndEvent(index=2, part=ToolCallPart(
        tool_name="search", tool_call_id="call-1",
        args={"query": "café", "filters": {"tags": ["a", {"deep": [1, 2.5, None, True]}], "n": -0.0}}))),
    "tool call with text args": event(PartStartEvent(index=2, part=ToolCallPart(
        tool_name="search", tool_call_id="call-1", args='{"query": "ca'))),
    "tool call with no args": event(PartStartEvent(index=2, part=ToolCallPart(
        tool_name="", tool_call_id="call-1", args=None))),
    "text delta": event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="Hel"))),
    "thinking delta of a signature": event(PartDeltaEvent(index=0, delta=ThinkingPartDelta(signature_delta="x"))),
    "tool call delta with object args": event(PartDeltaEvent(index=0, delta=ToolCallPartDelta(
        tool_name_delta="sea", args_delta={"k": {"v": [1]}}, tool_call_id="call-1"))),
    "failed tool result": event(ToolResultEvent(tool_call_id="call-1", tool_name="search", outcome="failed",
                                                content={"error": "timeout", "after_s": 10})),
    "retried tool result with null content": event(ToolResultEvent(tool_call_id="c", tool_name="t",
                                                                   outcome="retried", content=None)),
    "text input with metadata": event(InputEvent(input_id="in-1", source="steering", content="stop ✋",
                                                 metadata={"by": "ops"})),
    "media input": event(InputEvent(input_id="in-2", source="user",
                                    content={"media_type": "image/png", "url": "https://example.test/a.png"})),
    "extension": event(ExtensionEvent(kind="lifecycle", schema_version="1",
                                      payload={"type": "model_request_started", "request_index": 2})),
    "observation": event(ObservationEvent(name="budget", value=[1, "two", {"3": 4.5}])),
    "offset and microseconds": event(ObservationEvent(name="x"), occurred_at=datetime(
        2026, 3, 29, 1, 59, 59, 999999, tzinfo=timezone(timedelta(hours=-3, minutes=-30)))),
    "offset with seconds": event(ObservationEvent(name="x"), occurred_at=datetime(
        1970, 1, 2, tzinfo=timezone(timedelta(hours=5, minutes=53, seconds=28)))),
    "completed result": result(RunResult(status="completed", output={"answer": "42", "sources": []},
                                         usage=Usage(input_tokens=12, output_tokens=3, cache_read_tokens=0,
                                                     reasoning_tokens=7))),
    "suspended result": result(RunResult(status="suspended", deferred=Deferred(
        calls=(DeferredToolCall(tool_call_id="c1", tool_name="ask", args={"q": "?"}),),
        approvals=(DeferredToolCall(tool_call_id="c2", tool_name="delete", args='{"path": "/"}'),)))),
    "failed result": result(RunResult(status="failed", failure=Failure(code="model_error", message="overloaded"))),
    "cancelled result": result(RunResult(status="cancelled", usage=Usage())),
}


@pytest.mark.parametrize("item", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_each_payload_kind_round_trips(item: HarnessStreamEvent) -> None:
    assert decode(encode(item)) == item


def test_non_ascii_text_is_written_as_is_not_escaped() -> None:
    line = encode(EXAMPLES["text part with non-ASCII content"])
    assert "Grüße, 世界! 🌍 مرحبا" in line


def test_a_line_whose_text_decodes_to_a_lone_surrogate_is_refused_naming_the_field() -> None:
    line = encode(event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="a?b")))).replace("?", "\\ud800")
    with pytest.raises(DecodeError, match=r"^line 5: invalid item: TextPartDelta.content_delta contains a lone "
                                          r"surrogate \(U\+D800\)"):
        decode(line, line=5)


def test_the_spec_examples_decode_and_encode_back_to_the_same_text_but_for_the_version() -> None:
    lines = [
        '{"v":1,"kind":"event","thread_id":"t","run_id":"r","sequence":3,'
        '"occurred_at":"2026-11-30T09:00:00.125000+00:00","event":{"type":"part_delta","index":0,'
        '"delta":{"type":"text","content_delta":"Hel"}}}',
        '{"v":1,"kind":"result","thread_id":"t","run_id":"r","sequence":9,'
        '"occurred_at":"2026-11-30T09:00:01+00:00","result":{"status":"completed","output":"Hello",'
        '"usage":{"input_tokens":12,"output_tokens":3}}}',
    ]
    # The SPEC's examples are version 1 lines: read through the default migration, written as version 2.
    assert [encode(decode(line)) for line in lines] == [line.replace('"v":1', '"v":2') for line in lines]
    assert decode(lines[0]) == event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="Hel")))


def test_optional_fields_may_be_absent_or_null() -> None:
    absent = ('{"v":1,"kind":"event","thread_id":"t","run_id":"r","sequence":3,"occurred_at":'
              '"2026-11-30T09:00:00.125+00:00","event":{"type":"part_start","index":0,"part":{"type":"thinking",'
              '"content":""}}}')
    null = absent.replace('"content":""', '"content":"","id":null,"signature":null,"provider_name":null')
    assert decode(absent) == decode(null) == event(PartStartEvent(index=0, part=ThinkingPart(content="")))


def test_encoding_is_deterministic_and_keys_come_in_a_fixed_order() -> None:
    run = simulated_run()
    assert [encode(i) for i in run] == [encode(i) for i in simulated_run()]
    assert list(json.loads(encode(run[0]))) == ["v", "kind", "thread_id", "run_id", "sequence", "occurred_at",
                                                 "event"]


def test_encode_refuses_what_is_not_a_source_item() -> None:
    with pytest.raises(TypeError):
        encode({"v": 1})  # type: ignore[arg-type]


def test_decode_refuses_what_is_not_text() -> None:
    with pytest.raises(TypeError, match="str or bytes"):
        decode(3)  # type: ignore[arg-type]


# -- decoding errors: one test per fault, each naming the line ------------------------------------

GOOD = json.loads(encode(EXAMPLES["tool call with nested JSON args"]))
GOOD_RESULT = json.loads(encode(EXAMPLES["suspended result"]))


def changed(base: dict[str, Any], path: str, value: Any) -> str:
    """``base`` as a line with the field at dotted ``path`` set to ``value``
    (or removed, for the DELETE marker)."""
    data = json.loads(json.dumps(base))
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return json.dumps(data)


DELETE = object()


def fails(line: str | bytes, *fragments: str, number: int = 7) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode(line, line=number)
    e = info.value
    assert e.line == number
    message = str(e)
    assert message.startswith(f"line {number}: ")
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    return e


def test_malformed_json_names_the_line_and_column() -> None:
    fails('{"v":1,"kind":', "malformed JSON", "column 15")


def test_a_cut_off_string_is_malformed_json() -> None:
    fails('{"v":1,"kind":"ev', "malformed JSON: Unterminated string starting at column 15")


def test_nan_is_refused_as_malformed_json() -> None:
    fails(changed(GOOD, "sequence", 1).replace('"sequence": 1', '"sequence": NaN'), "NaN is not a JSON value")


def test_json_nested_too_deeply_is_malformed_not_a_crash() -> None:
    fails("[" * 200_000, "nested too deeply")


def test_bytes_that_are_not_utf8_name_the_byte() -> None:
    fails(b'{"v":1,"x":"\xff"}', "not UTF-8 text", "byte 12")


def test_an_empty_line_is_an_error() -> None:
    fails("   ", "empty line")


def test_a_line_that_is_not_an_object_is_an_error() -> None:
    fails("[1, 2]", "the item must be an object, not array")


def test_a_missing_version_is_an_error() -> None:
    fails(changed(GOOD, "v", DELETE), "missing field v")


def test_a_version_that_is_not_an_integer_is_an_error() -> None:
    fails(changed(GOOD, "v", "1"), "field v must be integer, not string")


def test_an_unknown_newer_version_is_an_error() -> None:
    fails(changed(GOOD, "v", 3), "unknown wire version 3", "reads version 2")


def test_an_older_version_without_a_migration_is_an_error() -> None:
    fails(changed(GOOD, "v", 0), "wire version 0 is older", "no migration")


def test_an_unknown_kind_is_an_error() -> None:
    fails(changed(GOOD, "kind", "snapshot"), "unknown kind 'snapshot'")


def test_an_unknown_payload_type_is_an_error() -> None:
    fails(changed(GOOD, "event.type", "part_flush"), "unknown payload type 'part_flush'", "known: part_start")


def test_an_unknown_part_type_names_where_it_is() -> None:
    fails(changed(GOOD, "event.part.type", "image"), "unknown part type 'image' at event.part")


def test_an_unknown_delta_type_names_where_it_is() -> None:
    line = encode(EXAMPLES["text delta"]).replace('"type":"text"', '"type":"audio"')
    fails(line, "unknown delta type 'audio' at event.delta")


def test_a_missing_field_is_named_by_its_path() -> None:
    fails(changed(GOOD, "event.part.tool_call_id", DELETE), "missing field event.part.tool_call_id")


def test_a_missing_envelope_field_is_named() -> None:
    fails(changed(GOOD, "run_id", DELETE), "missing field run_id")


def test_a_missing_payload_object_is_named() -> None:
    fails(changed(GOOD, "event", DELETE), "missing field event")


def test_a_mistyped_field_names_the_json_types() -> None:
    fails(changed(GOOD, "sequence", "3"), "field sequence must be integer, not string")


def test_a_boolean_is_not_an_integer() -> None:
    fails(changed(GOOD, "event.index", True), "field event.index must be integer, not boolean")


def test_a_float_is_not_an_integer() -> None:
    fails(changed(GOOD, "sequence", 3.0), "field sequence must be integer, not number")


def test_null_in_a_required_field_is_an_error() -> None:
    fails(changed(GOOD, "event.part.tool_name", None), "field event.part.tool_name must be string, not null")


def test_args_of_the_wrong_json_type_are_an_error() -> None:
    fails(changed(GOOD, "event.part.args", [1, 2]), "field event.part.args must be string or object, not array")


def test_an_unknown_field_is_an_error_not_dropped() -> None:
    fails(changed(GOOD, "event.part.signatur", "x"), "unknown field event.part.signatur")


def test_an_unknown_envelope_field_is_an_error() -> None:
    fails(changed(GOOD, "result", {"status": "completed"}), "unknown field result")


def test_several_unknown_fields_are_counted() -> None:
    data = json.loads(changed(GOOD, "extra_a", 1))
    data["extra_b"] = 2
    fails(json.dumps(data), "unknown field extra_a (and 1 more)")


def test_a_value_outside_its_enumeration_is_an_error() -> None:
    line = encode(EXAMPLES["failed tool result"]).replace('"outcome":"failed"', '"outcome":"ok"')
    fails(line, "field event.outcome must be one of success, failed, denied, interrupted, retried; got 'ok'")


def test_an_input_source_is_an_open_vocabulary_in_version_2_and_closed_in_version_1() -> None:
    line = encode(EXAMPLES["media input"]).replace('"source":"user"', '"source":"email"')
    assert decode(line).event.source == "email"
    fails(line.replace('"v":2', '"v":1'), "field event.source must be one of user")


def test_an_unknown_result_status_is_an_error() -> None:
    fails(changed(GOOD_RESULT, "result.status", "paused"), "field result.status must be one of completed")


def test_a_value_the_source_model_refuses_is_an_error() -> None:
    fails(changed(GOOD, "sequence", -1), "invalid item", "sequence must be >= 0")


def test_a_blank_id_is_an_error() -> None:
    fails(changed(GOOD, "thread_id", "  "), "invalid item", "must not be blank")


def test_a_result_inconsistent_with_its_status_is_an_error() -> None:
    fails(changed(GOOD_RESULT, "result.deferred", DELETE), "invalid item", "suspended RunResult needs")


def test_a_deferred_call_missing_a_field_is_named_by_index() -> None:
    fails(changed(GOOD_RESULT, "result.deferred.approvals", [{"tool_call_id": "c9"}]),
          "missing field result.deferred.approvals[0].tool_name")


def test_a_timestamp_without_offset_is_an_error() -> None:
    fails(changed(GOOD, "occurred_at", "2026-11-30T09:00:00"), "field occurred_at has no timezone offset")


def test_a_timestamp_that_is_not_iso_8601_is_an_error() -> None:
    fails(changed(GOOD, "occurred_at", "yesterday"), "field occurred_at is not an ISO 8601 datetime")


def test_a_decode_error_is_a_value_error_with_its_parts_as_attributes() -> None:
    e = fails(changed(GOOD, "kind", "x"), number=12)
    assert isinstance(e, ValueError)
    assert (e.line, e.source) == (12, None)
    assert e.reason == "unknown kind 'x' (expected 'event' or 'result')"


def test_a_decode_error_without_a_line_is_just_the_reason() -> None:
    with pytest.raises(DecodeError) as info:
        decode("{}")
    assert str(info.value) == "missing field v"
    assert info.value.line is None


def test_a_decode_error_located_in_a_file_reads_like_a_compiler_message() -> None:
    e = DecodeError("missing field v").at(4, "runs/a.jsonl")
    assert str(e) == "runs/a.jsonl:4: missing field v"
    assert (e.line, e.source, e.reason) == (4, "runs/a.jsonl", "missing field v")


# -- migrations ------------------------------------------------------------------------------

# A made-up wire version 0: flat field names, a "type" instead of "kind", and
# text deltas written as {"delta": "..."} with the part index in "part".
V0_LINE = json.dumps({
    "v": 0, "type": "event", "thread": "t", "run": "r", "seq": 3, "at": "2026-11-30T09:00:00.125000+00:00",
    "payload": {"op": "delta", "part": 0, "delta": "Hel"},
})


def v0_to_v1(old: dict[str, Any]) -> dict[str, Any]:
    payload = old["payload"]
    if payload["op"] != "delta":
        raise ValueError(f"v0 op {payload['op']!r} has no v1 form")
    return {
        "v": 1, "kind": old["type"], "thread_id": old["thread"], "run_id": old["run"], "sequence": old["seq"],
        "occurred_at": old["at"],
        "event": {"type": "part_delta", "index": payload["part"],
                  "delta": {"type": "text", "content_delta": payload["delta"]}},
    }


def test_a_migration_upgrades_an_older_line_before_it_is_decoded() -> None:
    item = decode(V0_LINE, migrations={0: v0_to_v1})
    assert item == event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="Hel")))
    assert json.loads(encode(item))["v"] == codec.WIRE_VERSION


def test_migrations_are_chained_until_the_line_is_current() -> None:
    older = json.dumps({"v": -1, "wrapped": json.loads(V0_LINE)})
    item = decode(older, migrations={-1: lambda o: o["wrapped"], 0: v0_to_v1})
    assert item == decode(V0_LINE, migrations={0: v0_to_v1})


def test_a_migrated_line_is_checked_like_any_other() -> None:
    broken = V0_LINE.replace('"seq": 3', '"seq": "3"')
    with pytest.raises(DecodeError, match="line 2: field sequence must be integer, not string"):
        decode(broken, migrations={0: v0_to_v1}, line=2)


def test_a_failing_migration_is_a_decode_error_that_keeps_the_cause() -> None:
    line = V0_LINE.replace('"op": "delta"', '"op": "reset"')
    with pytest.raises(DecodeError, match="line 5: migration from wire version 0 failed: ValueError") as info:
        decode(line, migrations={0: v0_to_v1}, line=5)
    assert isinstance(info.value.__cause__, ValueError)


def test_a_migration_that_returns_no_dict_is_an_error() -> None:
    with pytest.raises(DecodeError, match="returned list, not dict"):
        decode(V0_LINE, migrations={0: lambda o: [o]})


def test_migrations_that_loop_are_an_error_not_a_hang() -> None:
    with pytest.raises(DecodeError, match="lead back to wire version 0"):
        decode(V0_LINE, migrations={0: lambda o: {**o, "v": -1}, -1: lambda o: {**o, "v": 0}})


def test_a_migration_gets_a_copy_and_the_callers_object_is_untouched() -> None:
    data = json.loads(V0_LINE)
    before = json.loads(V0_LINE)

    def destructive(old: dict[str, Any]) -> dict[str, Any]:
        new = v0_to_v1(old)
        old["payload"].clear()
        return new

    from_json(data, migrations={0: destructive})
    assert data == before


def test_migrations_are_not_consulted_for_current_lines() -> None:
    def never(old: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("called")

    item = EXAMPLES["observation"]
    assert decode(encode(item), migrations={0: never, 1: never}) == item


# -- AG-UI output forms -------------------------------------------------------------------------

def test_agui_json_uses_the_camel_case_wire_names_and_leaves_unset_fields_out() -> None:
    text = agui_to_json(TextMessageContentEvent(message_id="m-1", delta="héllo", timestamp=5))
    assert json.loads(text) == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "héllo",
                                "timestamp": 5}
    assert "\n" not in text


def test_agui_json_survives_a_lone_surrogate_in_event_text() -> None:
    text = agui_to_json(TextMessageContentEvent(message_id="m-1", delta="a\ud800b"))
    text.encode("utf-8")
    assert json.loads(text)["delta"] == "a\ud800b"


def test_an_sse_frame_is_a_data_line_and_a_blank_line() -> None:
    e = CustomEvent(name="x", value={"multi\nline": "text\n"})
    frame = sse_frame(e)
    assert frame == f"data: {agui_to_json(e)}\n\n"
    assert frame.count("\n") == 2


def test_an_sse_frame_carries_an_id_when_given() -> None:
    e = TextMessageContentEvent(message_id="m", delta="d")
    assert sse_frame(e, event_id=41).startswith("id: 41\ndata: {")
    assert sse_frame(e, event_id="run-1:7").startswith("id: run-1:7\ndata: ")


def test_an_sse_id_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        sse_frame(TextMessageContentEvent(message_id="m", delta="d"), event_id="1\ndata: forged")


def test_the_demo_run_writes_one_line_per_item() -> None:
    items = SourceBuilder().user("hi").completed("ok").items
    text = "".join(encode(i) + "\n" for i in items)
    assert [decode(line) for line in text.splitlines()] == items
