"""The encoded path: AG-UI wire JSON written from records (core.encode) is
byte for byte what pydantic writes for the event built from the record,
and what ``ag_ui.encoder.EventEncoder`` frames."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui.core import (
    CustomEvent,
    ReasoningMessageStartEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core import records as ev
from harness_agui.core.encode import EncodedEvent, encode_records, encoded, event_json, record_json, records_json
from harness_agui.core.records import KINDS, attributed, build
from harness_agui.testing import complete_histories, histories, json_values, replay_stable_processors
from harness_agui.testing.delegation import delegating_histories
from harness_agui.wire.agui import agui_to_json, json_line, sse_frame


def pydantic_json(record: ev.Record) -> str:
    """The reference: the event built from the record, dumped by pydantic."""
    return build(record).model_dump_json(by_alias=True)


def assert_encodes_like_pydantic(observer: HarnessAguiObserver) -> None:
    records = list(observer.state.events)
    expected = [pydantic_json(r) for r in records]
    assert records_json(records) == expected
    assert [record_json(r) for r in records] == expected
    assert [e.json for e in encoded(observer.snapshot())] == expected
    assert [e.type for e in encoded(observer.snapshot())] == [ev.event_type(r) for r in records]
    assert [event_json(e) for e in observer.snapshot()] == expected
    encoder = EventEncoder()
    assert [sse_frame(e) for e in encoded(observer.snapshot())] == [encoder.encode(e) for e in observer.snapshot()]


@given(complete_histories())
def test_every_event_of_a_history_encodes_as_pydantic_dumps_it(items: list[Any]) -> None:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    assert_encodes_like_pydantic(observer)


@given(delegating_histories(max_depth=2, max_children=3))
def test_every_event_of_a_delegating_stream_encodes_as_pydantic_dumps_it(items: list[Any]) -> None:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    assert_encodes_like_pydantic(observer)


@given(histories(), replay_stable_processors())
def test_observe_encoded_returns_the_json_of_what_observe_returns(items: list[Any], processor: Any) -> None:
    plain, fast = HarnessAguiObserver(processor), HarnessAguiObserver(processor)
    for item in items:
        events = plain.observe(item)
        got = fast.observe_encoded(item)
        assert all(type(e) is EncodedEvent for e in got)
        assert [e.json for e in got] == [e.model_dump_json(by_alias=True) for e in events]
        assert [e.type for e in got] == [e.type.value for e in events]
    assert fast.state == plain.state


def test_observe_encoded_fails_like_observe_and_keeps_the_state() -> None:
    observer = HarnessAguiObserver()
    with pytest.raises(TypeError):
        observer.observe_encoded("not an item")  # type: ignore[arg-type]
    assert observer.is_fresh


@given(complete_histories())
def test_a_resumed_observer_encodes_its_snapshot_like_the_live_one(items: list[Any]) -> None:
    live = HarnessAguiObserver()
    sent = [e for item in items for e in live.observe_encoded(item)]
    rebuilt = HarnessAguiObserver()
    asyncio.run(rebuilt.resume(items))
    assert list(encoded(rebuilt.snapshot())) == sent
    assert list(encoded(rebuilt.snapshot()[1:3])) == sent[1:3]


# -- hand-made records: every odd value ----------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["", "é", "\u2028\u2029", "\x00\x1f\x7f", '"\\/', "\U0001f600", "{}", "e-07"])


@given(_TEXT, _TEXT, st.integers(0, 2**53 - 1))
def test_text_records_encode_as_pydantic_dumps_them(a: str, b: str, ts: int) -> None:
    for record in (ev.text_content(ts, a or "m", b or "d"), ev.tool_call_start(ts, a, b, None),
                   ev.tool_call_start(ts, a, b, a), ev.reasoning_start(ts, a), ev.text_start(ts, a, "user"),
                   ev.reasoning_signature(ts, a, b), ev.subagent_started(ts, a, b, None, a),
                   ev.subagent_error(ts, a, b, None), attributed(ev.tool_call_args(ts, a, b), "sub-1")):
        assert record_json(record) == pydantic_json(record)


_FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [1e-5, 1e-7, 1.5e-9, 1e-10, 1e16, 1e22, -0.0, 5e-324, 1e300, 0.1])


@given(json_values(max_leaves=8) | st.lists(_FLOATS) | st.integers(-(10**80), 10**80), _TEXT)
def test_json_values_encode_as_pydantic_dumps_them(value: Any, text: str) -> None:
    from harness_agui.core import _json

    payload = _json.dumps({"payload": value, "text": text})
    for record in (ev.custom(7, "harness.x", payload), ev.custom(7, "harness.x", _json.dumps(value)),
                   attributed(ev.custom(7, "harness.x", payload), "sub-1"),
                   ev.tool_call_result(7, "c:result", "c", text, payload),
                   ev.run_finished(7, "t", "r", _json.dumps(value), '{"type":"success"}', None),
                   ev.subagent_finished(7, "s", _json.dumps(value), '{"type":"success"}'),
                   ev.run_error(7, text or "failed", None, None, payload)):
        assert record_json(record) == pydantic_json(record)


def test_a_float_pydantic_spells_differently_takes_the_slow_path_and_matches() -> None:
    record = ev.custom(1, "harness.x", json.dumps({"v": 1e-07}, separators=(",", ":")))
    assert '1e-07' in record[3]
    expected = '{"type":"CUSTOM","timestamp":1,"name":"harness.x","value":{"v":1e-7}}'
    assert record_json(record) == pydantic_json(record) == expected


def test_a_lone_surrogate_is_escaped_as_the_event_path_does() -> None:
    record = ev.text_content(5, "m", "a\ud800b")
    text = record_json(record)
    expected = '{"type":"TEXT_MESSAGE_CONTENT","timestamp":5,"messageId":"m","delta":"a\\ud800b"}'
    assert text == agui_to_json(build(record)) == expected
    assert text.encode("utf-8")
    assert encode_records([record])[0].json == text


def test_a_record_without_a_timestamp_or_with_a_wrong_type_takes_the_slow_path() -> None:
    no_time = ("TEXT_MESSAGE_END", None, "m")
    assert record_json(no_time) == pydantic_json(no_time) == '{"type":"TEXT_MESSAGE_END","messageId":"m"}'
    with pytest.raises(ValueError):  # what build raises
        record_json(("TEXT_MESSAGE_END", 1, 5))


def test_every_kind_has_a_frame_except_those_with_nested_models() -> None:
    from harness_agui.core.encode import _ENCODERS, _no_frame

    slow = {tag for tag, frame in _ENCODERS.items() if frame is _no_frame}
    # The fuller kinds another vocabulary uses hold nested models too: a terminal event's outcome and usage,
    # a tool result's content parts.
    assert slow == {"RUN_FINISHED", "RUN_ERROR", "SUBAGENT_FINISHED", "RUN_FINISHED@full", "RUN_ERROR@full",
                    "TOOL_CALL_RESULT@full", "TOOL_CALL_RESULT@full@subagent"}
    assert set(KINDS) <= set(_ENCODERS)


# -- events ---------------------------------------------------------------------------------------------

def test_a_changed_or_extended_event_is_dumped_by_pydantic() -> None:
    event = TextMessageStartEvent(message_id="m", timestamp=3)
    assert event_json(event) == event.model_dump_json(by_alias=True)
    event.name = "Ann"
    assert event_json(event) == event.model_dump_json(by_alias=True)
    assert '"name":"Ann"' in event_json(event)
    extended = TextMessageContentEvent(message_id="m", delta="d", extra_field=1)  # type: ignore[call-arg]
    assert event_json(extended) == extended.model_dump_json(by_alias=True)
    meta = ToolCallStartEvent(tool_call_id="c", tool_call_name="f", metadata={"x": 1e-7})
    assert event_json(meta) == meta.model_dump_json(by_alias=True)
    sub = ReasoningMessageStartEvent(message_id="m", subagent_run_id="s")
    assert event_json(sub) == sub.model_dump_json(by_alias=True)
    custom = CustomEvent(name="n", value={"a": None})
    assert event_json(custom) == custom.model_dump_json(by_alias=True)


def test_wire_helpers_take_events_and_encoded_events_alike() -> None:
    event = TextMessageContentEvent(message_id="m", delta="héllo", timestamp=5)
    enc = EncodedEvent("TEXT_MESSAGE_CONTENT", agui_to_json(event))
    assert agui_to_json(enc) == agui_to_json(event)
    assert sse_frame(enc) == sse_frame(event) == EventEncoder().encode(event)
    assert sse_frame(enc, event_id=4) == sse_frame(event, event_id=4) == f"id: 4\ndata: {enc.json}\n\n"
    assert json_line(enc) == enc.json + "\n"
    with pytest.raises(ValueError):
        sse_frame(enc, event_id="1\ndata: x")


# -- the compact JSON text every JSON field holds (core._json.dumps) ------------------------------

@given(value=json_values(max_leaves=12))
def test_the_compact_json_of_a_value_is_what_the_standard_library_writes(value: Any) -> None:
    from harness_agui.core import _json
    assert _json.dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert _json.loads(_json.dumps(value)) == value


def test_compact_json_refuses_what_is_not_json() -> None:
    from harness_agui.core import _json
    with pytest.raises(TypeError, match="not JSON serializable"):
        _json.dumps({"a": {1, 2}})
    with pytest.raises(ValueError, match="not JSON compliant"):
        _json.dumps([float("nan")])
    assert _json.dumps("caf\u00e9 \"q\"\n") == '"caf\u00e9 \\"q\\"\\n"'
    # and reads it back with one decoder, str or bytes, refusing NaN and Infinity either way
    assert _json.loads('{"a":[1,2.5]}') == _json.loads(b'{"a":[1,2.5]}') == {"a": [1, 2.5]}
    for bad in ("[NaN]", b"[-Infinity]"):
        with pytest.raises(ValueError, match="is not a JSON value"):
            _json.loads(bad)
