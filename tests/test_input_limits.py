# What the boundary accepts, and where it stops: the source model's
# constructors and the wire decoder refuse, once and with the documented
# error naming the field or the line, every value that could not be emitted,
# stored or printed later (JSON nesting past the limit, lone surrogates,
# integers too long to write, sequences and token counts past 2**53 - 1,
# datetimes whose instant is outside the calendar, lines longer than the
# journal reader's limit), never later with an OverflowError, a
# PydanticSerializationError or a traceback. What they accept goes all the
# way through: it round-trips the wire and every event it gives serialises.

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from ag_ui.core import BaseEvent
from ag_ui.encoder import EventEncoder
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import (
    MAX_JSON_INT,
    BinaryContent,
    ContentList,
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    InputEvent,
    MessageHistory,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RunResult,
    TextPartDelta,
    ToolCallPart,
    ToolResultEvent,
    Usage,
)
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import DecodeError, decode, encode
from harness_agui.wire.jsonl import MAX_LINE_BYTES, Journal, scan_journal

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
PNG = BinaryContent(data=b"\x89PNG", media_type="image/png")
DEPTH_LIMIT = 240
"""The documented nesting limit of JSON values (docs/projection.md, core/_json.py)."""
TOO_DEEP = f"nested more than {DEPTH_LIMIT}"


def nested(depth: int, leaf: Any = 0) -> Any:
    """A JSON value of ``depth`` levels: alternately arrays and objects."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def event(payload: Any, sequence: int = 0) -> HarnessEvent:
    return HarnessEvent(thread_id="t", run_id="r", sequence=sequence, occurred_at=AT, event=payload)


def result(run_result: RunResult, sequence: int = 0) -> HarnessRunResultEvent:
    return HarnessRunResultEvent(thread_id="t", run_id="r", sequence=sequence, occurred_at=AT, result=run_result)


def assert_serialises(events: Any) -> None:
    encoder = EventEncoder()
    for e in events:
        assert isinstance(e, BaseEvent)
        e.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")
        agui_to_json(e).encode("utf-8")
        encoder.encode(e).encode("utf-8")


def observe_all(items: list[Any]) -> list[BaseEvent]:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return list(observer.snapshot())


# Every JSON-valued slot of the source model, as a function of the value put
# there one level down (inside a one-key object), so that ``nested(d)`` in a
# slot is a value of depth d + 1.
JSON_SLOTS = {
    "tool call args": lambda v: [event(PartStartEvent(index=0, part=ToolCallPart("f", {"a": v}, "c1"))),
                                 event(PartEndEvent(index=0, part=ToolCallPart("f", {"a": v}, "c1")), 1)],
    "tool result content": lambda v: [event(ToolResultEvent(tool_call_id="c9", tool_name="f", outcome="success",
                                                            content={"a": v}))],
    "input metadata": lambda v: [event(InputEvent(input_id="i", source="user", content="x", metadata={"m": v}))],
    "input media": lambda v: [event(InputEvent(input_id="i", source="user", content={"m": v}))],
    "extension payload": lambda v: [event(ExtensionEvent(kind="diagnostic", schema_version="1", payload={"a": v}))],
    "observation value": lambda v: [event(ObservationEvent(name="o", value={"a": v}))],
    "run output": lambda v: [result(RunResult(status="completed", output={"a": v}))],
    "deferred args": lambda v: [result(RunResult(status="suspended", deferred=Deferred(
        calls=(DeferredToolCall(tool_call_id="c1", tool_name="f", args={"a": v}),))))],
    # The deepest places the projection puts a value: an item of a content list in a CUSTOM value, the
    # Harness's metadata of a deferred call in an interrupt, and the terminal item's state and history
    # (journaled, not projected).
    "content list item": lambda v: [event(ToolResultEvent(tool_call_id="c9", tool_name="f", outcome="success",
                                                          content=ContentList(items=({"a": v}, PNG))))],
    "deferred metadata": lambda v: [result(RunResult(status="suspended", deferred=Deferred(
        calls=(DeferredToolCall(tool_call_id="c1", tool_name="f"),), metadata={"c1": v})))],
    "run state and history": lambda v: [result(RunResult(status="cancelled", state={"a": v},
                                                         history=MessageHistory(messages=[v])))],
}


# -- the documented limits -------------------------------------------------------------------------

def test_the_documented_limits_are_the_ones_enforced() -> None:
    from harness_agui.core._json import MAX_INT_DIGITS, MAX_JSON_DEPTH
    from harness_agui.core.source import MAX_SEQUENCE

    assert (MAX_JSON_DEPTH, MAX_INT_DIGITS, MAX_SEQUENCE) == (DEPTH_LIMIT, 4000, 2**53 - 1)


# -- JSON nesting depth ----------------------------------------------------------------------------

def test_a_self_referencing_list_is_refused_instead_of_looping_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match=TOO_DEEP):
        ObservationEvent(name="o", value=loop)


@pytest.mark.parametrize("version", [2, 1])
@pytest.mark.parametrize("depth", [DEPTH_LIMIT + 1, 300, 600])
def test_a_wire_line_nested_deeper_than_the_limit_is_a_decode_error_naming_the_field(depth: int, version: int) -> None:
    # Version 1 lines go through the migration, which copies the line's object first: without recursion, so a
    # line nested as deep as the parser reads still fails in the source model, naming the field. (How deep the
    # parser reads depends on the caller's stack: under pytest-xdist a 950-deep line is already "nested too
    # deeply", a DecodeError too, tested below.)
    line = encode(event(ObservationEvent(name="o", value=None))).replace('{"v":2,', f'{{"v":{version},', 1)
    line = line.replace('"value":null', '"value":' + "[" * depth + "]" * depth)
    with pytest.raises(DecodeError, match=rf"line 7: .*ObservationEvent\.value.*{TOO_DEEP}"):
        decode(line, line=7)


def test_a_wire_line_nested_past_what_the_parser_reads_is_a_decode_error() -> None:
    line = encode(event(ObservationEvent(name="o", value=None)))
    line = line.replace('"value":null', '"value":' + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DecodeError, match=r"line 7: malformed JSON: nested too deeply"):
        decode(line, line=7)


@pytest.mark.parametrize("slot", JSON_SLOTS)
def test_a_source_value_nested_deeper_than_the_limit_is_refused_by_its_constructor(slot: str) -> None:
    with pytest.raises(ValueError, match=TOO_DEEP):
        JSON_SLOTS[slot](nested(DEPTH_LIMIT))  # the slot wraps the value one level deeper


@pytest.mark.parametrize("slot", JSON_SLOTS)
def test_a_value_nested_to_the_limit_is_accepted_and_every_event_it_gives_serialises(slot: str) -> None:
    items = JSON_SLOTS[slot](nested(DEPTH_LIMIT - 1))
    assert [decode(encode(i)) for i in items] == items
    assert_serialises(observe_all(items))


# -- lone surrogates -------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["\ud800", "a\udfffb", "\udc80x"])
def test_a_lone_surrogate_object_key_is_refused_by_the_constructor_and_the_decoder(key: str) -> None:
    with pytest.raises(ValueError, match="ObservationEvent.value.*lone surrogate"):
        ObservationEvent(name="o", value={"ok": [{key: 1}]})
    escaped = json.dumps(key)  # "\ud800": the only way a lone surrogate reaches a wire line
    line = encode(event(ObservationEvent(name="o", value=None))).replace('"value":null',
                                                                         '"value":{' + escaped + ':1}')
    with pytest.raises(DecodeError, match="line 3: .*lone surrogate"):
        decode(line, line=3)


def test_a_lone_surrogate_in_any_text_is_refused_because_agui_serialisers_refuse_it() -> None:
    with pytest.raises(ValueError, match="TextPartDelta.content_delta.*lone surrogate"):
        TextPartDelta(content_delta="half \ud83d")
    with pytest.raises(ValueError, match="HarnessEvent.run_id.*lone surrogate"):
        HarnessEvent(thread_id="t", run_id="r\udc00", sequence=0, occurred_at=AT,
                     event=ObservationEvent(name="o"))
    with pytest.raises(ValueError, match="ToolResultEvent.content.*lone surrogate"):
        ToolResultEvent(tool_call_id="c", tool_name="f", outcome="success", content=["\udfff"])
    line = encode(event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="X")))).replace("X", "\\ud83d")
    with pytest.raises(DecodeError, match="lone surrogate"):
        decode(line)


def test_a_surrogate_pair_written_as_two_escapes_is_one_character_and_accepted() -> None:
    line = encode(event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="X")))).replace("X",
                                                                                               "\\ud83c\\udf0d")
    item = decode(line)
    assert item.event.delta.content_delta == "\U0001f30d"


# -- integers: JSON-safe, writable -----------------------------------------------------------------

def test_an_integer_too_long_to_write_as_json_is_refused_by_the_constructor() -> None:
    with pytest.raises(ValueError, match="ToolResultEvent.content.*digits"):
        ToolResultEvent(tool_call_id="c", tool_name="f", outcome="success", content={"n": -(10**5000)})
    big = 10**3999  # 4000 digits: writable, and accepted
    items = [event(ToolResultEvent(tool_call_id="c", tool_name="f", outcome="success", content=big))]
    assert decode(encode(items[0])) == items[0]
    assert_serialises(observe_all(items))


def test_token_counts_beyond_what_json_keeps_exactly_are_refused_at_construction() -> None:
    Usage(input_tokens=MAX_JSON_INT)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        Usage(input_tokens=MAX_JSON_INT + 1)


# -- sequences past the JSON-safe integer range ----------------------------------------------------

def test_a_sequence_past_2_53_minus_1_is_refused_by_the_constructor() -> None:
    HarnessEvent(thread_id="t", run_id="r", sequence=2**53 - 1, occurred_at=AT, event=ObservationEvent(name="o"))
    for seq in (2**53, 2**63, 2**64):
        with pytest.raises(ValueError, match=r"HarnessEvent.sequence must be <= 2\*\*53 - 1"):
            HarnessEvent(thread_id="t", run_id="r", sequence=seq, occurred_at=AT, event=ObservationEvent(name="o"))
        with pytest.raises(ValueError, match=r"HarnessRunResultEvent.sequence must be <= 2\*\*53 - 1"):
            HarnessRunResultEvent(thread_id="t", run_id="r", sequence=seq, occurred_at=AT,
                                  result=RunResult(status="cancelled"))


def test_a_wire_line_with_a_sequence_past_the_range_is_a_decode_error() -> None:
    line = encode(event(ObservationEvent(name="o"))).replace('"sequence":0', f'"sequence":{2**63}')
    with pytest.raises(DecodeError, match=r"line 4: .*sequence must be <= 2\*\*53 - 1"):
        decode(line, line=4)


# -- datetimes: the edge of the calendar, ambiguous local times ------------------------------------

EDGE_DATETIMES = [
    datetime(1, 1, 1, tzinfo=ZoneInfo("Asia/Tokyo")),
    datetime(1, 1, 1, 8, tzinfo=timezone(timedelta(hours=9))),
    datetime.max.replace(tzinfo=ZoneInfo("America/New_York")),
    datetime(9999, 12, 31, 20, tzinfo=ZoneInfo("America/New_York")),
    datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-1))),
]


@pytest.mark.parametrize("at", EDGE_DATETIMES, ids=str)
def test_a_datetime_whose_utc_instant_is_past_the_calendar_raises_value_error(at: datetime) -> None:
    with pytest.raises(ValueError, match="HarnessEvent.occurred_at .*outside the range"):
        HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at, event=ObservationEvent(name="o"))
    with pytest.raises(ValueError, match="HarnessRunResultEvent.occurred_at"):
        HarnessRunResultEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at,
                              result=RunResult(status="cancelled"))


def test_a_wire_line_whose_utc_instant_is_past_the_calendar_is_a_decode_error() -> None:
    line = encode(event(ObservationEvent(name="o"))).replace("2026-11-30T09:00:00+00:00",
                                                             "0001-01-01T00:00:00+09:00")
    with pytest.raises(DecodeError, match="line 2: .*outside the range"):
        decode(line, line=2)


@pytest.mark.parametrize("at", [
    datetime(1, 1, 1, 9, 19, tzinfo=ZoneInfo("Asia/Tokyo")),
    datetime.min.replace(tzinfo=UTC),
    datetime.max.replace(tzinfo=UTC),
    datetime(9999, 12, 31, 18, tzinfo=ZoneInfo("America/New_York")),
    datetime(1, 1, 1, tzinfo=timezone(-timedelta(hours=23, minutes=59, seconds=59, microseconds=999999))),
    datetime.max.replace(tzinfo=timezone(timedelta(hours=23, minutes=59, seconds=59, microseconds=999999))),
], ids=str)
def test_a_datetime_at_the_edge_of_the_calendar_round_trips_and_projects(at: datetime) -> None:
    items = [HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at, event=ObservationEvent(name="o"))]
    assert decode(encode(items[0])) == items[0]
    events = observe_all(items)
    expected_ms = (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert {e.timestamp for e in events} == {expected_ms}
    assert_serialises(events)


any_zone = st.one_of(
    st.timezones(),
    st.timedeltas(min_value=-timedelta(hours=23, minutes=59, seconds=59, microseconds=999999),
                  max_value=timedelta(hours=23, minutes=59, seconds=59, microseconds=999999)).map(timezone),
)


@settings(max_examples=300)
@given(st.datetimes(timezones=any_zone, allow_imaginary=True) | st.sampled_from(EDGE_DATETIMES))
def test_any_accepted_datetime_round_trips_the_wire_and_becomes_a_timestamp(at: datetime) -> None:
    try:
        item = HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at, event=ObservationEvent(name="o"))
    except ValueError as e:
        assert "outside the range" in str(e)
        return
    # The same wall time at the same offset (inter-zone == is False for a repeated local time, by design).
    assert item.occurred_at.replace(tzinfo=None) == at.replace(tzinfo=None)
    assert item.occurred_at.utcoffset() == at.utcoffset()
    assert decode(encode(item)) == item
    [started, custom] = observe_all([item])
    assert started.timestamp == custom.timestamp == (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert_serialises([started, custom])


def test_an_ambiguous_local_time_survives_the_wire_format_as_the_same_instant() -> None:
    at = datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"), fold=1)
    item = HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at,
                        event=ObservationEvent(name="x", value=1))
    assert item.occurred_at.utcoffset() == at.utcoffset()
    assert item.occurred_at.timestamp() == at.timestamp()
    assert decode(encode(item)) == item


# -- journal lines longer than the reader's limit --------------------------------------------------

def test_a_line_longer_than_the_limit_is_a_decode_error_naming_the_line() -> None:
    good = encode(event(ObservationEvent(name="o"))) + "\n"
    long = encode(event(ObservationEvent(name="o", value="x" * 500), sequence=1)) + "\n"
    data = (good + long + encode(event(ObservationEvent(name="o"), sequence=2)) + "\n").encode()
    limit = len(good)
    with pytest.raises(DecodeError, match=rf"^j:2: line longer than {limit} bytes"):
        list(Journal(io.BytesIO(data), name="j", max_line_bytes=limit))
    scanned = list(scan_journal(io.BytesIO(data), name="j", max_line_bytes=limit))
    assert [s.line for s in scanned] == [1, 2, 3]
    assert scanned[0].item is not None and scanned[2].item is not None
    assert scanned[1].error is not None and scanned[1].error.reason == f"line longer than {limit} bytes"
    assert len(list(Journal(io.BytesIO(data), max_line_bytes=len(long) - 1))) == 3  # the limit leaves out the newline


def test_the_line_limit_is_a_positive_int_and_defaults_to_256_mib() -> None:
    assert MAX_LINE_BYTES == 256 * 1024 * 1024
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_line_bytes"):
            Journal(io.BytesIO(b""), max_line_bytes=bad)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=6), st.integers(1, 45), st.integers(1, 9),
       st.booleans(), st.booleans())
def test_a_line_is_read_whole_across_chunks_and_an_over_long_one_refused_without_being_held(
        lengths: list[int], limit: int, chunk: int, last_newline: bool, text: bool) -> None:
    from harness_agui.wire import jsonl

    lines = ["x" * n + "\n" for n in lengths]
    if not last_newline:
        lines[-1] = lines[-1][:-1]
    data = "".join(lines)
    source: Any = io.StringIO(data) if text else io.BytesIO(data.encode())
    original = jsonl._CHUNK
    jsonl._CHUNK = chunk
    try:
        read = list(jsonl._numbered(source, limit))
    finally:
        jsonl._CHUNK = original
    expected, start = [], 0
    for number, line in enumerate((x for x in lines if x), 1):
        long = len(line.rstrip("\n")) > limit
        # An over-long line is reported at the byte past the limit: what was read of it.
        expected.append((number, start + limit + 1 if long else start + len(line), None if long else line))
        start += len(line)
    assert [(n, e, None if isinstance(raw, jsonl._LongLine) else (raw if text else raw.decode()))
            for n, e, raw in read] == expected
