# The JSON form of source values: plain dicts with the wire format's field
# names. The wire codec writes it behind its envelope, and the reducer puts it
# into CUSTOM events, so a CUSTOM value carries exactly what a journal line
# would (binary data aside: a CUSTOM value names it, a journal holds it).
#
# One table, ``SHAPES``, says for every class of the source model how each
# field is written: its wire name is the attrs field name, its ``kind`` says
# which JSON it becomes (``wire.codec`` reads the same table back, strictly).
# Classes that stand in a tagged union (parts, deltas, payloads, content
# items) carry their ``type`` tag first. A field whose value equals its
# default is left out, except where ``always`` keeps it (the fields version 1
# always wrote, so that what version 1 could say is written the same way).
#
# Tool content (``ToolContent``) is the one field with two spellings: a JSON
# value is written as it is under the field's name (``content``), and
# anything else under ``<name>_typed`` as a tagged object (``binary``,
# ``media``, or ``list`` whose items are tagged too, JSON ones as
# ``{"type": "json", "value": ...}``). So a tool result that happens to be a
# JSON object shaped like a tagged item can never be mistaken for one.
#
# Binary data is base64 with its ``size`` beside it. With
# ``binary_data=False`` (what the projection uses) the bytes are left out and
# only the reference remains: media type, size, identifier.

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Literal, get_args

import attrs

from .source import (
    BinaryContent,
    BuiltinToolReturnPart,
    CapabilityEvent,
    ContentList,
    Deferred,
    DeferredToolCall,
    DeferredToolRequestsEvent,
    EnqueuedMessagesEvent,
    ExtensionEvent,
    Failure,
    FilePart,
    FinalResultEvent,
    InputEvent,
    MediaContent,
    MessageHistory,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    Payload,
    RetryInfo,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolCallPartDelta,
    ToolContent,
    ToolResultEvent,
    UnknownDelta,
    UnknownEvent,
    UnknownPart,
    Usage,
)

__all__ = [
    "payload_to_json",
    "result_to_json",
    "deferred_call_to_json",
    "content_to_json",
    "value_to_json",
    "FieldKind",
    "WireField",
    "Shape",
    "SHAPES",
    "PART_TYPES",
    "DELTA_TYPES",
    "PAYLOAD_TYPES",
    "CONTENT_TYPES",
    "TYPED_SUFFIX",
]

FieldKind = Literal[
    "str",       # a string
    "int",       # an integer
    "bool",      # true or false
    "json",      # any JSON value
    "object",    # a JSON object
    "array",     # a JSON array
    "args",      # tool args: a string or a JSON object
    "text_or_object",  # input content: a string or a JSON object
    "choice",    # a string out of a closed vocabulary (``choices``)
    "datetime",  # an ISO 8601 string with an offset
    "binary",    # a BinaryContent
    "content",   # a ToolContent: JSON under the name, anything else under <name>_typed
    "nested",    # an object of ``cls``
    "tuple",     # an array of objects of ``cls``
    "part",      # a tagged part
    "delta",     # a tagged delta
    "items",     # the items of a ContentList: each tagged, JSON ones as {"type": "json", "value": ...}
]

TYPED_SUFFIX = "_typed"


@attrs.frozen
class WireField:
    name: str
    kind: FieldKind
    cls: type | None = None
    choices: tuple[str, ...] = ()
    always: bool = False
    required: bool = False
    default: Any = None  # the value left out when not ``always`` (a fresh one from ``default_factory``)
    default_factory: Any = None

    def is_default(self, value: Any) -> bool:
        default = self.default_factory() if self.default_factory is not None else self.default
        return type(value) is type(default) and value == default


@attrs.frozen
class Shape:
    cls: type
    tag: str | None
    fields: tuple[WireField, ...]
    keys: frozenset[str]  # every key its JSON object may have


def _shape(cls: type, tag: str | None, kinds: Mapping[str, Any], always: tuple[str, ...] = (),
           optional: tuple[str, ...] = ()) -> Shape:
    """The shape of ``cls``: every attrs field in order, with its kind from
    ``kinds`` (a FieldKind, or (kind, class), or ("choice", choices)).
    ``optional`` names required fields that may still be left out (or null)
    on the wire when None."""
    out = []
    names = [a.name for a in attrs.fields(cls)]
    if set(kinds) != set(names):  # the table and the classes are kept in step
        raise AssertionError(f"{cls.__name__}: fields {names}, table {sorted(kinds)}")
    for a in attrs.fields(cls):
        spec = kinds[a.name]
        kind, extra = (spec, None) if isinstance(spec, str) else spec
        assert kind in get_args(FieldKind), kind
        factory = a.default.factory if isinstance(a.default, attrs.Factory) else None  # type: ignore[arg-type]
        out.append(WireField(
            name=a.name, kind=kind,  # type: ignore[arg-type]
            cls=extra if isinstance(extra, type) else None,
            choices=extra if isinstance(extra, tuple) else (),
            always=a.name in always,
            required=a.default is attrs.NOTHING and a.name not in optional,
            default=None if a.default is attrs.NOTHING or factory is not None else a.default,
            default_factory=factory,
        ))
    keys = {f.name for f in out} | {f.name + TYPED_SUFFIX for f in out if f.kind == "content"}
    keys |= {"size" for f in out if f.kind == "binary"} | ({"type"} if tag is not None else set())
    return Shape(cls, tag, tuple(out), frozenset(keys))


_OUTCOMES = ("choice", ("success", "failed", "denied", "interrupted", "retried"))
_STATUSES = ("choice", ("completed", "suspended", "failed", "cancelled"))

SHAPES: dict[type, Shape] = {s.cls: s for s in (
    # content items
    _shape(BinaryContent, "binary", {"data": "binary", "media_type": "str", "identifier": "str",
                                     "vendor_metadata": "object"}),
    _shape(MediaContent, "media", {"kind": "str", "data": "object"}),
    _shape(ContentList, "list", {"items": "items"}),
    # parts
    _shape(TextPart, "text", {"content": "str", "id": "str", "provider_name": "str", "provider_details": "object",
                              "citations": "array"}),
    _shape(ThinkingPart, "thinking", {"content": "str", "id": "str", "signature": "str", "provider_name": "str",
                                      "provider_details": "object"}),
    _shape(ToolCallPart, "tool_call", {"tool_name": "str", "args": "args", "tool_call_id": "str", "tool_kind": "str",
                                       "id": "str", "provider_name": "str", "provider_details": "object",
                                       "builtin": "bool"}, optional=("args",)),
    _shape(BuiltinToolReturnPart, "builtin_tool_return", {
        "tool_name": "str", "content": "content", "tool_call_id": "str", "tool_kind": "str", "metadata": "json",
        "timestamp": "datetime", "outcome": _OUTCOMES, "provider_name": "str", "provider_details": "object"},
        always=("content",)),
    _shape(FilePart, "file", {"content": ("nested", BinaryContent), "id": "str", "provider_name": "str",
                              "provider_details": "object"}),
    _shape(UnknownPart, "unknown", {"part_kind": "str", "data": "object"}, always=("data",)),
    # deltas
    _shape(TextPartDelta, "text", {"content_delta": "str", "provider_name": "str", "provider_details": "object",
                                   "citations_delta": "array"}),
    _shape(ThinkingPartDelta, "thinking", {"content_delta": "str", "signature_delta": "str", "provider_name": "str",
                                           "provider_details": "object"}),
    _shape(ToolCallPartDelta, "tool_call", {"tool_name_delta": "str", "args_delta": "args", "tool_call_id": "str",
                                            "provider_name": "str", "provider_details": "object"}),
    _shape(UnknownDelta, "unknown", {"part_delta_kind": "str", "data": "object"}, always=("data",)),
    # payloads
    _shape(PartStartEvent, "part_start", {"index": "int", "part": "part", "previous_part_kind": "str"}),
    _shape(PartDeltaEvent, "part_delta", {"index": "int", "delta": "delta"}),
    _shape(PartEndEvent, "part_end", {"index": "int", "part": "part", "next_part_kind": "str"}),
    _shape(FinalResultEvent, "final_result", {"tool_name": "str", "tool_call_id": "str"}),
    _shape(ToolCallEvent, "tool_call", {"part": ("nested", ToolCallPart), "args_valid": "bool", "output": "bool"}),
    _shape(ToolResultEvent, "tool_result", {
        "tool_call_id": "str", "tool_name": "str", "outcome": _OUTCOMES, "content": "content", "tool_kind": "str",
        "metadata": "json", "timestamp": "datetime", "retry": ("nested", RetryInfo), "user_content": "content",
        "output": "bool"}, always=("content",)),
    _shape(DeferredToolRequestsEvent, "deferred_tool_requests", {
        "calls": ("tuple", ToolCallPart), "approvals": ("tuple", ToolCallPart), "metadata": "object"},
        always=("calls", "approvals")),
    _shape(EnqueuedMessagesEvent, "enqueued_messages", {"enqueue_id": "str", "messages": "array", "parts": "array"},
           always=("messages",)),
    _shape(InputEvent, "input", {"input_id": "str", "source": "str", "content": "text_or_object", "metadata": "object",
                                 "capability_id": "str", "tool_call_id": "str", "tool_name": "str"}),
    _shape(CapabilityEvent, "capability", {"kind": "str", "capability_id": "str", "tool_call_id": "str",
                                           "tool_name": "str", "data": "object"}, always=("data",)),
    _shape(ExtensionEvent, "extension", {"kind": "str", "schema_version": "str", "payload": "json"},
           always=("payload",)),
    _shape(ObservationEvent, "observation", {"name": "str", "value": "json"}, always=("value",)),
    _shape(UnknownEvent, "unknown", {"event_kind": "str", "data": "object"}, always=("data",)),
    # the result
    _shape(RetryInfo, None, {"cause": "str", "attempt": "int", "max_retries": "int"}),
    _shape(Usage, None, {"input_tokens": "int", "output_tokens": "int", "cache_read_tokens": "int",
                         "reasoning_tokens": "int", "cache_write_tokens": "int", "input_audio_tokens": "int",
                         "cache_audio_read_tokens": "int", "output_audio_tokens": "int", "audio_seconds": "str",
                         "cost": "str", "details": "object", "requests": "int", "tool_calls": "int",
                         "provider_receipts": "int", "unknown_cost_records": "int", "incomplete_requests": "int",
                         "model_usage_coverage": "str"}),
    _shape(Failure, None, {"code": "str", "message": "str", "details": "object", "retry_hint": "str"}),
    _shape(DeferredToolCall, None, {"tool_call_id": "str", "tool_name": "str", "args": "args",
                                    "target_identity": "str", "target_call": ("nested", ToolCallPart),
                                    "model_call": ("nested", ToolCallPart)}),
    _shape(Deferred, None, {"calls": ("tuple", DeferredToolCall), "approvals": ("tuple", DeferredToolCall),
                            "metadata": "object"}, always=("calls", "approvals")),
    _shape(MessageHistory, None, {"messages": "array", "new_message_index": "int"}, always=("new_message_index",)),
    _shape(RunResult, None, {
        "status": _STATUSES, "output": "json", "usage": ("nested", Usage), "failure": ("nested", Failure),
        "deferred": ("nested", Deferred), "suspend_reason": "str", "state": "object", "usage_records": "array",
        "history": ("nested", MessageHistory)}),
)}


def _types(*classes: type) -> dict[str, type]:
    return {SHAPES[c].tag: c for c in classes}  # type: ignore[misc]


PART_TYPES: dict[str, type] = _types(TextPart, ThinkingPart, ToolCallPart, BuiltinToolReturnPart, FilePart, UnknownPart)
DELTA_TYPES: dict[str, type] = _types(TextPartDelta, ThinkingPartDelta, ToolCallPartDelta, UnknownDelta)
PAYLOAD_TYPES: dict[str, type] = _types(
    PartStartEvent, PartDeltaEvent, PartEndEvent, FinalResultEvent, ToolCallEvent, ToolResultEvent,
    DeferredToolRequestsEvent, EnqueuedMessagesEvent, InputEvent, CapabilityEvent, ExtensionEvent, ObservationEvent,
    UnknownEvent,
)
CONTENT_TYPES: dict[str, type] = _types(BinaryContent, MediaContent, ContentList)


# -- writing ------------------------------------------------------------------------------

def value_to_json(value: Any, *, binary_data: bool = True) -> dict[str, Any]:
    """The JSON object of any source value in ``SHAPES`` (fresh dicts; JSON
    fields are shared with the value). Raises TypeError for anything else."""
    shape = SHAPES.get(type(value))
    if shape is None:
        raise TypeError(f"not a source value: {type(value).__name__}")
    if type(value) is BinaryContent:
        return _binary_to_json(value, binary_data)
    out: dict[str, Any] = {"type": shape.tag} if shape.tag is not None else {}
    for f in shape.fields:
        v = getattr(value, f.name)
        if not f.required and not f.always and f.is_default(v):
            continue
        kind = f.kind
        if kind == "content":
            if isinstance(v, (BinaryContent, MediaContent, ContentList)):
                out[f.name + TYPED_SUFFIX] = value_to_json(v, binary_data=binary_data)
            else:
                out[f.name] = v
        elif kind in ("nested", "part", "delta"):
            out[f.name] = value_to_json(v, binary_data=binary_data)
        elif kind == "tuple":
            out[f.name] = [value_to_json(x, binary_data=binary_data) for x in v]
        elif kind == "items":
            out[f.name] = [_item_to_json(x, binary_data) for x in v]
        elif kind == "datetime":
            out[f.name] = v.isoformat()
        else:
            out[f.name] = v
    return out


def _binary_to_json(value: BinaryContent, binary_data: bool) -> dict[str, Any]:
    # The reference first, the (long) data last, so that a journal line reads well.
    out: dict[str, Any] = {"type": "binary", "media_type": value.media_type, "size": len(value.data)}
    if value.identifier is not None:
        out["identifier"] = value.identifier
    if value.vendor_metadata is not None:
        out["vendor_metadata"] = value.vendor_metadata
    if binary_data:
        out["data"] = base64.b64encode(value.data).decode("ascii")
    return out


def _item_to_json(item: Any, binary_data: bool) -> dict[str, Any]:
    if isinstance(item, (BinaryContent, MediaContent)):
        return value_to_json(item, binary_data=binary_data)
    return {"type": "json", "value": item}


def content_to_json(content: ToolContent, *, binary_data: bool = True) -> Any:
    """The JSON of tool content: a JSON value as it is, anything else as its
    tagged object (what the wire writes under ``<field>_typed``)."""
    if isinstance(content, (BinaryContent, MediaContent, ContentList)):
        return value_to_json(content, binary_data=binary_data)
    return content


def payload_to_json(payload: Payload, *, binary_data: bool = True) -> dict[str, Any]:
    """The wire JSON object of a payload (fresh dicts; JSON fields are shared)."""
    if type(payload) not in PAYLOAD_TYPES.values():
        raise TypeError(f"not a Harness payload: {type(payload).__name__}")
    return value_to_json(payload, binary_data=binary_data)


def deferred_call_to_json(call: DeferredToolCall) -> dict[str, Any]:
    return value_to_json(call)


def result_to_json(result: RunResult, *, binary_data: bool = True) -> dict[str, Any]:
    """The wire JSON object of a run result."""
    if type(result) is not RunResult:
        raise TypeError(f"not a RunResult: {type(result).__name__}")
    return value_to_json(result, binary_data=binary_data)
