# The source model validates on construction: a wrong Python type is a
# TypeError, a value of the right type that the Harness contract forbids is a
# ValueError, and JSON-valued fields accept only values that survive the wire
# format unchanged. Each case below starts from a valid set of arguments and
# breaks exactly one of them, so a failure names the field at fault.

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from harness_agui import HarnessEvent, HarnessRunResultEvent
from harness_agui.source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
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

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TEXT = TextPart(content="hi")
CALL = DeferredToolCall(tool_call_id="call-1", tool_name="lookup", args={"q": "x"})

# A valid keyword set for every class of the source model.
VALID: dict[type, dict[str, Any]] = {
    TextPart: {"content": "hi", "id": "msg-1"},
    ThinkingPart: {"content": "hmm", "id": "th-1", "signature": "sig", "provider_name": "anthropic"},
    ToolCallPart: {"tool_name": "lookup", "args": '{"q":1}', "tool_call_id": "call-1"},
    TextPartDelta: {"content_delta": "h"},
    ThinkingPartDelta: {"content_delta": "h", "signature_delta": "s"},
    ToolCallPartDelta: {"tool_name_delta": "look", "args_delta": "{", "tool_call_id": "call-1"},
    PartStartEvent: {"index": 0, "part": TEXT},
    PartDeltaEvent: {"index": 0, "delta": TextPartDelta(content_delta="h")},
    PartEndEvent: {"index": 0, "part": TEXT},
    ToolResultEvent: {"tool_call_id": "call-1", "tool_name": "lookup", "outcome": "success", "content": {"a": 1}},
    InputEvent: {"input_id": "in-1", "source": "user", "content": "hello", "metadata": {"lang": "en"}},
    ExtensionEvent: {"kind": "usage", "schema_version": "1", "payload": {"tokens": 3}},
    ObservationEvent: {"name": "budget", "value": [1, 2]},
    Usage: {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 0, "reasoning_tokens": 0},
    Failure: {"code": "model_error", "message": "boom"},
    DeferredToolCall: {"tool_call_id": "call-1", "tool_name": "lookup", "args": None},
    Deferred: {"calls": (CALL,), "approvals": ()},
    RunResult: {"status": "completed", "output": "done", "usage": Usage(input_tokens=1)},
    HarnessEvent: {"thread_id": "t", "run_id": "r", "sequence": 0, "occurred_at": AT,
                   "event": ObservationEvent(name="n", value=None)},
    HarnessRunResultEvent: {"thread_id": "t", "run_id": "r", "sequence": 3, "occurred_at": AT,
                            "result": RunResult(status="cancelled")},
}


def build(cls: type, **changes: Any) -> Any:
    return cls(**{**VALID[cls], **changes})


@pytest.mark.parametrize("cls", list(VALID), ids=lambda c: c.__name__)
def test_every_source_class_accepts_its_valid_arguments_and_is_frozen(cls: type) -> None:
    value = build(cls)
    assert value == build(cls)
    field = attrs.fields(cls)[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(value, field, getattr(value, field))


WRONG_TYPES = [
    (TextPart, "content", None),
    (TextPart, "content", b"bytes"),
    (TextPart, "id", 7),
    (ThinkingPart, "content", None),
    (ThinkingPart, "id", 1.5),
    (ThinkingPart, "signature", b"sig"),
    (ThinkingPart, "provider_name", 3),
    (ToolCallPart, "tool_name", None),
    (ToolCallPart, "args", ["a"]),
    (ToolCallPart, "args", 5),
    (ToolCallPart, "tool_call_id", None),
    (TextPartDelta, "content_delta", None),
    (TextPartDelta, "content_delta", 1),
    (ThinkingPartDelta, "content_delta", 1),
    (ThinkingPartDelta, "signature_delta", ["s"]),
    (ToolCallPartDelta, "tool_name_delta", 1),
    (ToolCallPartDelta, "args_delta", 1.0),
    (ToolCallPartDelta, "args_delta", ["x"]),
    (ToolCallPartDelta, "tool_call_id", 9),
    (PartStartEvent, "index", "0"),
    (PartStartEvent, "index", True),
    (PartStartEvent, "index", 0.0),
    (PartStartEvent, "part", TextPartDelta(content_delta="h")),
    (PartStartEvent, "part", {"type": "text", "content": "hi"}),
    (PartDeltaEvent, "index", None),
    (PartDeltaEvent, "delta", TEXT),
    (PartEndEvent, "index", False),
    (PartEndEvent, "part", None),
    (ToolResultEvent, "tool_call_id", 1),
    (ToolResultEvent, "tool_name", None),
    (ToolResultEvent, "outcome", True),
    (ToolResultEvent, "content", object()),
    (ToolResultEvent, "content", b"raw"),
    (InputEvent, "input_id", None),
    (InputEvent, "source", 0),
    (InputEvent, "content", b"\x89PNG raw bytes"),
    (InputEvent, "content", ["text"]),
    (InputEvent, "content", None),
    (InputEvent, "metadata", ["a"]),
    (InputEvent, "metadata", "lang=en"),
    (ExtensionEvent, "kind", None),
    (ExtensionEvent, "schema_version", 1),
    (ExtensionEvent, "payload", {1, 2}),
    (ObservationEvent, "name", 5),
    (ObservationEvent, "value", datetime(2026, 1, 1, tzinfo=UTC)),
    (Usage, "input_tokens", "12"),
    (Usage, "output_tokens", 1.0),
    (Usage, "cache_read_tokens", True),
    (Usage, "reasoning_tokens", [1]),
    (Failure, "code", None),
    (Failure, "message", 500),
    (DeferredToolCall, "tool_call_id", None),
    (DeferredToolCall, "tool_name", 1),
    (DeferredToolCall, "args", [1]),
    (Deferred, "calls", [CALL]),
    (Deferred, "calls", (CALL, "call-2")),
    (Deferred, "approvals", CALL),
    (RunResult, "status", None),
    (RunResult, "output", (1, 2)),
    (RunResult, "usage", {"input_tokens": 1}),
    (HarnessEvent, "thread_id", None),
    (HarnessEvent, "run_id", 1),
    (HarnessEvent, "sequence", "0"),
    (HarnessEvent, "sequence", 0.0),
    (HarnessEvent, "sequence", True),
    (HarnessEvent, "occurred_at", "2026-11-30T09:00:00+00:00"),
    (HarnessEvent, "occurred_at", 1796029200.0),
    (HarnessEvent, "occurred_at", date(2026, 11, 30)),
    (HarnessEvent, "event", TEXT),
    (HarnessEvent, "event", RunResult(status="cancelled")),
    (HarnessEvent, "event", {"type": "observation", "name": "n"}),
    (HarnessRunResultEvent, "thread_id", b"t"),
    (HarnessRunResultEvent, "sequence", None),
    (HarnessRunResultEvent, "occurred_at", None),
    (HarnessRunResultEvent, "result", {"status": "completed"}),
    (HarnessRunResultEvent, "result", ObservationEvent(name="n")),
]


@pytest.mark.parametrize(("cls", "field", "value"), WRONG_TYPES,
                         ids=[f"{c.__name__}.{f}={v!r:.20}" for c, f, v in WRONG_TYPES])
def test_a_wrong_python_type_raises_type_error_naming_the_field(cls: type, field: str, value: Any) -> None:
    with pytest.raises(TypeError, match=field):
        build(cls, **{field: value})


def test_run_result_with_wrong_failure_or_deferred_type_raises_type_error() -> None:
    with pytest.raises(TypeError, match="failure"):
        RunResult(status="failed", failure={"code": "x", "message": "y"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="deferred"):
        RunResult(status="suspended", deferred=(CALL,))  # type: ignore[arg-type]


BLANK_IDS = [
    (HarnessEvent, "thread_id"),
    (HarnessEvent, "run_id"),
    (HarnessRunResultEvent, "thread_id"),
    (HarnessRunResultEvent, "run_id"),
    (TextPart, "id"),
    (ThinkingPart, "id"),
    (ToolCallPart, "tool_call_id"),
    (ToolCallPartDelta, "tool_call_id"),
    (ToolResultEvent, "tool_call_id"),
    (InputEvent, "input_id"),
    (ObservationEvent, "name"),
    (Failure, "code"),
    (DeferredToolCall, "tool_call_id"),
]


@pytest.mark.parametrize("blank", ["", " ", "\t\n"], ids=["empty", "space", "whitespace"])
@pytest.mark.parametrize(("cls", "field"), BLANK_IDS, ids=[f"{c.__name__}.{f}" for c, f in BLANK_IDS])
def test_a_blank_id_raises_value_error(cls: type, field: str, blank: str) -> None:
    with pytest.raises(ValueError, match=field):
        build(cls, **{field: blank})


NEGATIVES = [
    (HarnessEvent, "sequence"),
    (HarnessRunResultEvent, "sequence"),
    (PartStartEvent, "index"),
    (PartDeltaEvent, "index"),
    (PartEndEvent, "index"),
    (Usage, "input_tokens"),
    (Usage, "output_tokens"),
    (Usage, "cache_read_tokens"),
    (Usage, "reasoning_tokens"),
]


@pytest.mark.parametrize(("cls", "field"), NEGATIVES, ids=[f"{c.__name__}.{f}" for c, f in NEGATIVES])
def test_a_negative_sequence_index_or_count_raises_value_error(cls: type, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        build(cls, **{field: -1})
    assert getattr(build(cls, **{field: 0}), field) == 0


@pytest.mark.parametrize("cls", [HarnessEvent, HarnessRunResultEvent], ids=lambda c: c.__name__)
def test_a_naive_datetime_raises_value_error_and_any_offset_is_accepted(cls: type) -> None:
    with pytest.raises(ValueError, match="occurred_at"):
        build(cls, occurred_at=datetime(2026, 11, 30, 9, 0))
    paris = timezone(timedelta(hours=1))
    assert build(cls, occurred_at=datetime(2026, 11, 30, 10, 0, tzinfo=paris)).occurred_at == AT


UNKNOWN_ENUMS = [
    (ToolResultEvent, "outcome", "ok"),
    (ToolResultEvent, "outcome", "Success"),
    (InputEvent, "source", ""),
    (ExtensionEvent, "kind", ""),
    (RunResult, "status", "done"),
    (RunResult, "status", "running"),
]


@pytest.mark.parametrize(("cls", "field", "value"), UNKNOWN_ENUMS,
                         ids=[f"{c.__name__}.{f}={v!r}" for c, f, v in UNKNOWN_ENUMS])
def test_an_unknown_enum_string_raises_value_error(cls: type, field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        build(cls, **{field: value})


# Vocabularies a newer Harness may widen are open: any non-blank name is kept.
OPEN_VOCABULARIES = [
    (InputEvent, "source", "system"),
    (InputEvent, "source", "email"),
    (ExtensionEvent, "kind", "misc"),
    (ExtensionEvent, "kind", "LIFECYCLE"),
]


@pytest.mark.parametrize(("cls", "field", "value"), OPEN_VOCABULARIES,
                         ids=[f"{c.__name__}.{f}={v!r}" for c, f, v in OPEN_VOCABULARIES])
def test_an_open_vocabulary_keeps_a_name_it_does_not_know(cls: type, field: str, value: str) -> None:
    assert getattr(build(cls, **{field: value}), field) == value


@pytest.mark.parametrize(("cls", "field", "values"), [
    (ToolResultEvent, "outcome", ("success", "failed", "denied", "interrupted", "retried")),
    (InputEvent, "source", ("user", "steering", "context", "recovery", "async_subagent", "background_process")),
    (ExtensionEvent, "kind", ("context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle",
                              "tool", "diagnostic")),
], ids=["outcome", "source", "kind"])
def test_every_enum_value_of_the_spec_is_accepted(cls: type, field: str, values: tuple[str, ...]) -> None:
    for value in values:
        assert getattr(build(cls, **{field: value}), field) == value


FAILURE = Failure(code="model_error", message="boom")
DEFERRED = Deferred(calls=(CALL,))

INCONSISTENT_RESULTS = {
    "output on a failed run": {"status": "failed", "output": "x", "failure": FAILURE},
    "output on a suspended run": {"status": "suspended", "output": "x", "deferred": DEFERRED},
    "output on a cancelled run": {"status": "cancelled", "output": {"partial": True}},
    "failed run without failure": {"status": "failed"},
    "failure on a completed run": {"status": "completed", "failure": FAILURE},
    "failure on a cancelled run": {"status": "cancelled", "failure": FAILURE},
    "suspended run without deferred": {"status": "suspended"},
    "suspended run with nothing deferred": {"status": "suspended", "deferred": Deferred()},
    "deferred on a completed run": {"status": "completed", "deferred": DEFERRED},
    "deferred on a failed run": {"status": "failed", "failure": FAILURE, "deferred": DEFERRED},
}


@pytest.mark.parametrize("kwargs", INCONSISTENT_RESULTS.values(), ids=INCONSISTENT_RESULTS.keys())
def test_a_run_result_inconsistent_with_its_status_raises_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RunResult(**kwargs)


def test_consistent_run_results_of_every_status_are_accepted() -> None:
    usage = Usage(input_tokens=3, output_tokens=4)
    assert RunResult(status="completed", output=None).output is None
    assert RunResult(status="completed", output={"a": [1, 2.5, None]}, usage=usage).usage == usage
    assert RunResult(status="failed", failure=FAILURE, usage=usage).failure == FAILURE
    assert RunResult(status="suspended", deferred=Deferred(approvals=(CALL,))).deferred is not None
    assert RunResult(status="cancelled", usage=usage).status == "cancelled"


def test_deferred_rejects_a_tool_call_id_named_twice_in_calls_or_in_approvals() -> None:
    other = DeferredToolCall(tool_call_id="call-1", tool_name="other")
    with pytest.raises(ValueError, match="calls"):
        Deferred(calls=(CALL, other))
    with pytest.raises(ValueError, match="approvals"):
        Deferred(approvals=(CALL, other))
    both = Deferred(calls=(CALL,), approvals=(other,))
    assert both.calls[0].tool_call_id == both.approvals[0].tool_call_id


def test_evolve_re_runs_the_validators() -> None:
    item = build(HarnessEvent)
    with pytest.raises(ValueError, match="run_id"):
        attrs.evolve(item, run_id="")
    with pytest.raises(TypeError, match="sequence"):
        attrs.evolve(item, sequence="1")
    with pytest.raises(ValueError, match="status"):
        attrs.evolve(RunResult(status="cancelled"), status="paused")


# -- JSON-valued fields -----------------------------------------------------------

JSON_FIELDS = [
    (ToolResultEvent, "content"),
    (ExtensionEvent, "payload"),
    (ObservationEvent, "value"),
    (RunResult, "output"),
]
NOT_JSON_TYPES = {
    "tuple": (1, 2),
    "tuple nested in a list": [1, (2, 3)],
    "tuple nested in a dict": {"a": {"b": ("c",)}},
    "int key": {1: "one"},
    "nested int key": {"a": [{2: "two"}]},
    "none key": {None: 1},
    "set": {"a", "b"},
    "bytes": {"raw": b"\x00"},
}
NOT_JSON_NUMBERS = {
    "nan": math.nan,
    "infinity": math.inf,
    "negative infinity nested": {"a": [1.0, -math.inf]},
    "nan nested in a dict": {"a": {"b": float("nan")}},
}


@pytest.mark.parametrize("value", NOT_JSON_TYPES.values(), ids=NOT_JSON_TYPES.keys())
@pytest.mark.parametrize(("cls", "field"), JSON_FIELDS, ids=[f"{c.__name__}.{f}" for c, f in JSON_FIELDS])
def test_a_json_field_holding_a_tuple_a_non_string_key_or_another_type_raises_type_error(
    cls: type, field: str, value: Any
) -> None:
    with pytest.raises(TypeError, match=field):
        build(cls, **{field: value})


@pytest.mark.parametrize("value", NOT_JSON_NUMBERS.values(), ids=NOT_JSON_NUMBERS.keys())
@pytest.mark.parametrize(("cls", "field"), JSON_FIELDS, ids=[f"{c.__name__}.{f}" for c, f in JSON_FIELDS])
def test_a_json_field_holding_a_non_finite_number_raises_value_error(cls: type, field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        build(cls, **{field: value})


@pytest.mark.parametrize(("cls", "field"), [
    (ToolCallPart, "args"),
    (ToolCallPartDelta, "args_delta"),
    (DeferredToolCall, "args"),
    (InputEvent, "metadata"),
    (InputEvent, "content"),
], ids=["ToolCallPart.args", "ToolCallPartDelta.args_delta", "DeferredToolCall.args", "InputEvent.metadata",
        "InputEvent.content"])
def test_object_valued_fields_check_what_the_object_holds(cls: type, field: str) -> None:
    with pytest.raises(TypeError):
        build(cls, **{field: {"a": (1,)}})
    with pytest.raises(TypeError):
        build(cls, **{field: {3: "x"}})
    with pytest.raises(ValueError):
        build(cls, **{field: {"a": math.nan}})
    nested = {"a": [1, 2.5, True, None, "s", {"b": []}]}
    assert getattr(build(cls, **{field: nested}), field) == nested


@pytest.mark.parametrize("value", [None, True, 0, -3, 2**70, 1.5, "", "text", [], {}, [{"a": [None, 1.0]}],
                                   {"k": {"nested": ["x", False]}}])
def test_every_json_value_is_accepted_in_a_json_field(value: Any) -> None:
    assert ObservationEvent(name="n", value=value).value == value
