# The Harness public stream as frozen values.
#
# Each field is declared once, with a kind from ``core.fields`` (``NAME``,
# ``TEXT``, ``COUNT``, ``JSON_VALUE``, ``nested(Usage)``, ...), and each class
# with its tag (``declared("tool_call")``). The kind is the field's check;
# the wire shapes (``core.jsonform``), the codec's reader, writer and version
# 1 check, the a13n-harness adapter's tables and the test strategies are all
# derived from these declarations.
#
# Every class here validates on construction: a wrong Python type raises
# TypeError, a value of the right type that the Harness contract forbids (a
# blank id, a negative sequence, a naive datetime, an unknown status) raises
# ValueError. The reducer can therefore trust any instance it is given and
# only has to check what depends on the history (correlation, ordering, part
# identity).
#
# The model covers the whole public stream of a real Harness (a13n-harness
# 0.21: pydantic-ai model events plus the Harness's own extensions), so that
# a journal of these values loses nothing (``harness_agui.a13n`` converts both
# ways). Fields the projection interprets are typed. Nested values it never
# interprets and that the Harness itself serialises with pydantic (provider
# details, citations, tool and content metadata, the HarnessState, message
# histories, usage records, enqueued messages) are kept as the JSON values
# pydantic writes for them. Vocabularies that a newer Harness may widen are
# open: an extension kind, an input source, a ``*_part_kind`` is any
# non-blank string (the known ones are listed in the constants below), and a
# part, delta, event or capability event this release does not know is kept
# whole as ``UnknownPart`` / ``UnknownDelta`` / ``UnknownEvent`` /
# ``CapabilityEvent``: its kind name and its JSON, never refused, never
# dropped. Tool outcomes and run statuses stay closed: the projection must
# know what each means.
#
# Binary content (a tool returning an image, a file part) is ``BinaryContent``
# with the bytes themselves; tool content that mixes text, JSON and media is a
# ``ContentList``. A plain JSON value (a list included) stays plain JSON, so
# there is exactly one way to write each value. Decimal quantities (usage cost
# and audio seconds) are kept exactly, as decimal strings.
#
# JSON-valued fields hold plain dicts and lists, checked to be JSON. The
# projection never keeps a reference to them: it keeps their compact text, so
# a Host that mutates a dict after observing it cannot change what was
# projected.
#
# This is also where the limits of the whole library are decided, once, so
# that anything a constructor accepts can be projected, serialised, written
# to a journal and stored: text is valid Unicode (no lone
# surrogate) and JSON values obey ``_json.check_json`` (nesting depth,
# integer length); an id or a name (every ``NAME`` and ``ID_TEXT`` field:
# thread, run, part, tool call, input and enqueue ids, and the words of the
# open vocabularies that CUSTOM names are made of) has at most
# MAX_SOURCE_ID_LENGTH (512) characters, because every fragment or delta an
# event is cut into repeats its ids and its name, and ``core.state``'s
# MIN_EVENT_BYTES leaves room for them; a ``sequence`` lies in
# 0..MAX_SEQUENCE (2**53 - 1, what every JSON reader and SQLite's INTEGER
# keep exactly); ``occurred_at`` is an instant that exists in UTC, so that
# converting it to UTC or to epoch milliseconds cannot overflow. A value with
# a named zone (say a ZoneInfo) is kept as the same wall time at its fixed
# UTC offset; that conversion only relabels the zone and cannot overflow
# either.

from __future__ import annotations

import typing
from datetime import datetime
from typing import Any, Literal, Union

import attrs

from ._json import JSON, check_json
from .fields import (
    ARGS,
    ARRAY,
    BOOL,
    BYTES,
    COUNT,
    COUNTS,
    DECIMAL,
    ID_TEXT,
    INDEX,
    INSTANT,
    JSON_VALUE,
    MAX_JSON_INT,
    MAX_SOURCE_ID_LENGTH,
    NAME,
    OBJECT,
    TEXT,
    TEXT_OR_OBJECT,
    Kind,
    choice,
    choices_of,
    declared,
    nested,
    tuple_of,
    type_error,
    union,
)

__all__ = [
    "BinaryContent",
    "MediaContent",
    "ContentList",
    "ToolContent",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "BuiltinToolReturnPart",
    "FilePart",
    "UnknownPart",
    "Part",
    "TextPartDelta",
    "ThinkingPartDelta",
    "ToolCallPartDelta",
    "UnknownDelta",
    "PartDelta",
    "PartStartEvent",
    "PartDeltaEvent",
    "PartEndEvent",
    "FinalResultEvent",
    "ToolCallEvent",
    "RetryInfo",
    "ToolResultEvent",
    "DeferredToolRequestsEvent",
    "EnqueuedMessagesEvent",
    "InputEvent",
    "CapabilityEvent",
    "ExtensionEvent",
    "ObservationEvent",
    "UnknownEvent",
    "Payload",
    "Usage",
    "Failure",
    "DeferredToolCall",
    "Deferred",
    "MessageHistory",
    "RunResult",
    "HarnessEvent",
    "HarnessRunResultEvent",
    "HarnessStreamEvent",
    "TOOL_OUTCOMES",
    "INPUT_SOURCES",
    "EXTENSION_KINDS",
    "RUN_STATUSES",
    "PART_KINDS",
    "MAX_JSON_INT",
    "MAX_SEQUENCE",
    "MAX_SOURCE_ID_LENGTH",
    "describe_wrong_item",
]

ToolOutcome = Literal["success", "failed", "denied", "interrupted", "retried"]
RunStatus = Literal["completed", "suspended", "failed", "cancelled"]

TOOL_OUTCOMES: tuple[str, ...] = choices_of(ToolOutcome)
"""Every outcome of a tool result (closed: the projection answers each)."""

RUN_STATUSES: tuple[str, ...] = choices_of(RunStatus)
"""Every status of a Run's result (closed)."""

INPUT_SOURCES: tuple[str, ...] = ("user", "steering", "context", "recovery", "async_subagent", "background_process")
"""The input sources a13n-harness 0.21 knows; ``InputEvent.source`` accepts any other non-blank name too."""

EXTENSION_KINDS: tuple[str, ...] = (
    "context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle", "tool", "diagnostic",
)
"""The extension kinds a13n-harness 0.21 knows; ``ExtensionEvent.kind`` accepts any other non-blank name too."""

PART_KINDS: tuple[str, ...] = (
    "text", "thinking", "tool-call", "builtin-tool-call", "builtin-tool-return", "compaction", "file", "speech",
)
"""The values of ``previous_part_kind`` / ``next_part_kind`` pydantic-ai 2.61 knows (any non-blank name is kept)."""

MAX_SEQUENCE = MAX_JSON_INT
"""The largest ``sequence`` of a source item: JSON-safe, and well inside SQLite's signed 64-bit INTEGER."""

_V1_OUTCOMES = ("success", "failed", "retried")  # the outcomes wire version 1 knew

# -- content ------------------------------------------------------------------------

@declared("binary")
@attrs.frozen
class BinaryContent:
    """Binary data (an image a tool returned, a file a model produced).

    The wire format writes ``data`` as base64 beside ``media_type`` and
    ``size``; a CUSTOM event carries only the reference (media type, size,
    identifier), never the bytes.
    """

    data: bytes = attrs.field(**BYTES())
    media_type: str = attrs.field(**NAME(known=("image/png", "image/jpeg", "audio/wav", "application/pdf",
                                                "text/plain", "application/octet-stream")))
    identifier: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    vendor_metadata: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))

    @property
    def size(self) -> int:
        """The number of bytes."""
        return len(self.data)


@declared("media")
@attrs.frozen
class MediaContent:
    """Any other multimodal content item (a URL to an image, audio, video or
    document, an uploaded file, a cache point, ...): its ``kind`` and the
    JSON of its other fields."""

    kind: str = attrs.field(**NAME(known=("image-url", "audio-url", "document-url", "video-url", "uploaded-file",
                                          "cache-point")))
    data: dict[str, JSON] = attrs.field(factory=dict, **OBJECT())


def _content_item(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, (BinaryContent, MediaContent)):
        check_json(value, f"{type(inst).__name__}.{attr.name}")


def _content_items(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise type_error(inst, attr, value, "tuple")
    for item in value:
        _content_item(inst, attr, item)
    if not any(isinstance(item, (BinaryContent, MediaContent)) for item in value):
        raise ValueError(f"{type(inst).__name__}.{attr.name} holds no binary or media item: a list of JSON values "
                         "is plain JSON, not a ContentList")


ITEMS = Kind("items", "items", _content_items)
"""The items of a ContentList: JSON values and at least one binary or media item."""


@declared("list")
@attrs.frozen
class ContentList:
    """Content that mixes JSON values (text, numbers, objects) with at least
    one binary or media item, in order (``["A caption", <image>]``)."""

    items: tuple[JSON | BinaryContent | MediaContent, ...] = attrs.field(**ITEMS())


ToolContent = Union[JSON, BinaryContent, MediaContent, ContentList]  # noqa: UP007 (JSON is a string alias)
"""What a tool returns: a JSON value, a binary or media item, or a list mixing them."""


def _tool_content(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, (BinaryContent, MediaContent, ContentList)):
        check_json(value, f"{type(inst).__name__}.{attr.name}")


CONTENT = Kind("content", "content", _tool_content)
"""Tool content: a JSON value (None is JSON null), a binary or media item, or a ContentList."""


# -- parts and deltas -----------------------------------------------------------

@declared("text", v1=True)
@attrs.frozen
class TextPart:
    content: str = attrs.field(**TEXT(v1=True))
    id: str | None = attrs.field(default=None, **NAME(optional=True, v1=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))
    citations: list[JSON] | None = attrs.field(default=None, **ARRAY(optional=True))


@declared("thinking", v1=True)
@attrs.frozen
class ThinkingPart:
    content: str = attrs.field(**TEXT(v1=True))
    id: str | None = attrs.field(default=None, **NAME(optional=True, v1=True))
    signature: str | None = attrs.field(default=None, **TEXT(optional=True, v1=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True, v1=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))


@declared("tool_call", v1=True)
@attrs.frozen
class ToolCallPart:
    """A tool call the model makes. ``builtin`` marks a call of a provider's
    builtin tool (pydantic-ai's ``NativeToolCallPart``), which the provider
    runs itself. ``args`` is required but may be None (the wire leaves it out)."""

    tool_name: str = attrs.field(**TEXT(v1=True))
    args: str | dict[str, JSON] | None = attrs.field(**ARGS(may_omit=True, v1=True))
    tool_call_id: str = attrs.field(**NAME(v1=True))
    tool_kind: str | None = attrs.field(default=None, **TEXT(optional=True))
    id: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))
    builtin: bool = attrs.field(default=False, **BOOL())


@declared("builtin_tool_return")
@attrs.frozen
class BuiltinToolReturnPart:
    """What a provider's builtin tool returned, as part of the model response
    (it gets a part start and no end)."""

    tool_name: str = attrs.field(**TEXT())
    content: ToolContent = attrs.field(**CONTENT(always=True))
    tool_call_id: str = attrs.field(**NAME())
    tool_kind: str | None = attrs.field(default=None, **TEXT(optional=True))
    metadata: JSON = attrs.field(default=None, **JSON_VALUE())
    timestamp: datetime | None = attrs.field(default=None, **INSTANT(optional=True))
    outcome: ToolOutcome = attrs.field(default="success", **choice(ToolOutcome)())
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))


@declared("file")
@attrs.frozen
class FilePart:
    """A file the model produced (it gets a part start and no end)."""

    content: BinaryContent = attrs.field(**nested(BinaryContent)())
    id: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))


@declared("unknown")
@attrs.frozen
class UnknownPart:
    """A response part of a kind this release does not model (``speech``,
    ``compaction``, a future kind): its ``part_kind`` and the JSON of its
    other fields, kept whole."""

    part_kind: str = attrs.field(**NAME(known=("speech", "compaction", "tool-search-call")))
    data: dict[str, JSON] = attrs.field(factory=dict, **OBJECT(always=True))


Part = TextPart | ThinkingPart | ToolCallPart | BuiltinToolReturnPart | FilePart | UnknownPart


@declared("text", v1=True)
@attrs.frozen
class TextPartDelta:
    content_delta: str = attrs.field(**TEXT(v1=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))
    citations_delta: list[JSON] | None = attrs.field(default=None, **ARRAY(optional=True))


@declared("thinking", v1=True)
@attrs.frozen
class ThinkingPartDelta:
    """More reasoning. A ``signature_delta`` replaces the part's signature
    (pydantic-ai's rule); the final part's signature is authoritative."""

    content_delta: str | None = attrs.field(default=None, **TEXT(optional=True, v1=True))
    signature_delta: str | None = attrs.field(default=None, **TEXT(optional=True, v1=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))


@declared("tool_call", v1=True)
@attrs.frozen
class ToolCallPartDelta:
    tool_name_delta: str | None = attrs.field(default=None, **TEXT(optional=True, v1=True))
    args_delta: str | dict[str, JSON] | None = attrs.field(default=None, **ARGS(optional=True, v1=True))
    tool_call_id: str | None = attrs.field(default=None, **NAME(optional=True, v1=True))
    provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    provider_details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))


@declared("unknown")
@attrs.frozen
class UnknownDelta:
    """A part delta of a kind this release does not model, kept whole."""

    part_delta_kind: str = attrs.field(**NAME(known=("speech",)))
    data: dict[str, JSON] = attrs.field(factory=dict, **OBJECT(always=True))


PartDelta = TextPartDelta | ThinkingPartDelta | ToolCallPartDelta | UnknownDelta


# -- payloads -------------------------------------------------------------------

@declared("part_start", v1=True)
@attrs.frozen
class PartStartEvent:
    index: int = attrs.field(**INDEX(v1=True))
    part: Part = attrs.field(**union(Part, "part")(v1=True))
    previous_part_kind: str | None = attrs.field(default=None, **NAME(optional=True, known=PART_KINDS))


@declared("part_delta", v1=True)
@attrs.frozen
class PartDeltaEvent:
    index: int = attrs.field(**INDEX(v1=True))
    delta: PartDelta = attrs.field(**union(PartDelta, "delta")(v1=True))


@declared("part_end", v1=True)
@attrs.frozen
class PartEndEvent:
    index: int = attrs.field(**INDEX(v1=True))
    part: Part = attrs.field(**union(Part, "part")(v1=True))
    next_part_kind: str | None = attrs.field(default=None, **NAME(optional=True, known=PART_KINDS))


@declared("final_result")
@attrs.frozen
class FinalResultEvent:
    """The model started what may be the final result: after the first text
    of a response, or the start of an output tool call. It does not end the
    answer."""

    tool_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    tool_call_id: str | None = attrs.field(default=None, **NAME(optional=True))


@declared("tool_call")
@attrs.frozen
class ToolCallEvent:
    """The Harness is about to handle a tool call (pydantic-ai's
    ``FunctionToolCallEvent``, or ``OutputToolCallEvent`` when ``output``).
    ``args_valid`` is False when the args failed validation, None when
    unknown (a call resolved by deferred results)."""

    part: ToolCallPart = attrs.field(**nested(ToolCallPart)())
    args_valid: bool | None = attrs.field(default=None, **BOOL(optional=True))
    output: bool = attrs.field(default=False, **BOOL())


@declared()
@attrs.frozen
class RetryInfo:
    """Why a tool result asks the model to try again."""

    cause: str = attrs.field(**NAME(known=("model_retry", "validation_error")))
    attempt: int | None = attrs.field(default=None, **COUNT(optional=True))
    max_retries: int | None = attrs.field(default=None, **COUNT(optional=True))


@declared("tool_result", v1=True)
@attrs.frozen
class ToolResultEvent:
    """The result of a tool call (pydantic-ai's ``FunctionToolResultEvent``,
    or ``OutputToolResultEvent`` when ``output``): its ``ToolReturnPart``'s
    fields, plus ``user_content``, the event's own content for the user."""

    tool_call_id: str = attrs.field(**NAME(v1=True))
    tool_name: str = attrs.field(**TEXT(v1=True))
    outcome: ToolOutcome = attrs.field(**choice(ToolOutcome)(v1=_V1_OUTCOMES))
    content: ToolContent = attrs.field(default=None, **CONTENT(always=True, v1=True))
    tool_kind: str | None = attrs.field(default=None, **TEXT(optional=True))
    metadata: JSON = attrs.field(default=None, **JSON_VALUE())
    timestamp: datetime | None = attrs.field(default=None, **INSTANT(optional=True))
    retry: RetryInfo | None = attrs.field(default=None, **nested(RetryInfo)(optional=True))
    user_content: ToolContent = attrs.field(default=None, **CONTENT())
    output: bool = attrs.field(default=False, **BOOL())

    def __attrs_post_init__(self) -> None:
        if self.output and self.user_content is not None:
            raise ValueError("ToolResultEvent.user_content belongs to function tool results, not output tool results")


@declared("deferred_tool_requests")
@attrs.frozen
class DeferredToolRequestsEvent:
    """The Run stops to wait for tool calls run elsewhere (``calls``) and
    for approvals; ``metadata`` is keyed by tool call id."""

    calls: tuple[ToolCallPart, ...] = attrs.field(default=(), **tuple_of(ToolCallPart)(always=True))
    approvals: tuple[ToolCallPart, ...] = attrs.field(default=(), **tuple_of(ToolCallPart)(always=True))
    metadata: dict[str, JSON] = attrs.field(factory=dict, **OBJECT())


@declared("enqueued_messages")
@attrs.frozen
class EnqueuedMessagesEvent:
    """Messages enqueued into the Run (steering) were delivered into its
    history: pydantic-ai's JSON of the messages and parts."""

    enqueue_id: str = attrs.field(**NAME())
    messages: list[JSON] = attrs.field(factory=list, **ARRAY(always=True))
    parts: list[JSON] = attrs.field(factory=list, **ARRAY())


@declared("input", v1=True)
@attrs.frozen
class InputEvent:
    """An input to the Run. ``content`` is text, or a JSON object describing
    media (never raw bytes). ``source`` is one of INPUT_SOURCES or any other
    non-blank name; ``capability_id``, ``tool_call_id`` and ``tool_name``
    attribute it to what emitted it."""

    input_id: str = attrs.field(**NAME(v1=True))
    source: str = attrs.field(**NAME(known=INPUT_SOURCES, v1=INPUT_SOURCES))
    content: str | dict[str, JSON] = attrs.field(**TEXT_OR_OBJECT(v1=True))
    metadata: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True, v1=True))
    capability_id: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    tool_call_id: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    tool_name: str | None = attrs.field(default=None, **TEXT(optional=True))


@declared("capability")
@attrs.frozen
class CapabilityEvent:
    """An event a capability emitted (a file edit applied, a shell status, a
    context summary, ...), other than an input: its namespaced ``kind``, its
    attribution and the JSON of its own fields."""

    kind: str = attrs.field(**NAME(known=("a13n.shell.status", "a13n.filesystem.edit_applied",
                                          "a13n.context.handoff_summary", "a13n.context.restored",
                                          "a13n.context.compaction_summary")))
    capability_id: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    tool_call_id: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    tool_name: str | None = attrs.field(default=None, **TEXT(optional=True))
    data: dict[str, JSON] = attrs.field(factory=dict, **OBJECT(always=True))


@declared("extension", v1=True)
@attrs.frozen
class ExtensionEvent:
    """A Harness extension event. ``kind`` is one of EXTENSION_KINDS or any
    other non-blank name."""

    kind: str = attrs.field(**NAME(known=EXTENSION_KINDS, v1=EXTENSION_KINDS))
    schema_version: str = attrs.field(**TEXT(v1=True))
    payload: JSON = attrs.field(default=None, **JSON_VALUE(always=True, v1=True))


@declared("observation", v1=True)
@attrs.frozen
class ObservationEvent:
    """Any other public observation, named by whoever made it."""

    name: str = attrs.field(**NAME(v1=True))
    value: JSON = attrs.field(default=None, **JSON_VALUE(always=True, v1=True))


@declared("unknown")
@attrs.frozen
class UnknownEvent:
    """An event of a class this release does not model (a deferred-results
    event, a realtime session event, a future event): its ``event_kind`` and
    the JSON of its other fields, kept whole."""

    event_kind: str = attrs.field(**NAME(known=("deferred_tool_results", "custom")))
    data: dict[str, JSON] = attrs.field(factory=dict, **OBJECT(always=True))


Payload = (
    PartStartEvent | PartDeltaEvent | PartEndEvent | FinalResultEvent | ToolCallEvent | ToolResultEvent
    | DeferredToolRequestsEvent | EnqueuedMessagesEvent | InputEvent | CapabilityEvent | ExtensionEvent
    | ObservationEvent | UnknownEvent
)


# -- the run result -----------------------------------------------------------------

@declared(v1=True)
@attrs.frozen
class Usage:
    """Token and cost counts of a Run. Every field is optional; a13n-harness
    fills all but ``reasoning_tokens``. ``audio_seconds`` and ``cost`` are
    decimal numbers written as text, kept exactly."""

    input_tokens: int | None = attrs.field(default=None, **COUNT(optional=True, v1=True))
    output_tokens: int | None = attrs.field(default=None, **COUNT(optional=True, v1=True))
    cache_read_tokens: int | None = attrs.field(default=None, **COUNT(optional=True, v1=True))
    reasoning_tokens: int | None = attrs.field(default=None, **COUNT(optional=True, v1=True))
    cache_write_tokens: int | None = attrs.field(default=None, **COUNT(optional=True))
    input_audio_tokens: int | None = attrs.field(default=None, **COUNT(optional=True))
    cache_audio_read_tokens: int | None = attrs.field(default=None, **COUNT(optional=True))
    output_audio_tokens: int | None = attrs.field(default=None, **COUNT(optional=True))
    audio_seconds: str | None = attrs.field(default=None, **DECIMAL(optional=True))
    cost: str | None = attrs.field(default=None, **DECIMAL(optional=True))
    details: dict[str, int] | None = attrs.field(default=None, **COUNTS(optional=True))
    requests: int | None = attrs.field(default=None, **COUNT(optional=True))
    tool_calls: int | None = attrs.field(default=None, **COUNT(optional=True))
    provider_receipts: int | None = attrs.field(default=None, **COUNT(optional=True))
    unknown_cost_records: int | None = attrs.field(default=None, **COUNT(optional=True))
    incomplete_requests: int | None = attrs.field(default=None, **COUNT(optional=True))
    model_usage_coverage: str | None = attrs.field(default=None, **NAME(optional=True,
                                                                       known=("all", "responses_only")))


@declared(v1=True)
@attrs.frozen
class Failure:
    """Why a Run failed. ``details`` is safe JSON; ``retry_hint`` says what
    a retry needs (a13n-harness: none, new_run, dependency_change)."""

    code: str = attrs.field(**NAME(v1=True))
    message: str = attrs.field(**TEXT(v1=True))
    details: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))
    retry_hint: str | None = attrs.field(default=None, **NAME(optional=True,
                                                             known=("none", "new_run", "dependency_change")))


@declared(v1=True)
@attrs.frozen
class DeferredToolCall:
    """A tool call (or an approval of one) that the suspended Run waits for.

    ``tool_call_id``, ``tool_name`` and ``args`` are the call to answer (the
    *target* call, whose id a resume names). ``target_call`` is that call in
    full when it carries more than these three fields; ``model_call`` is the
    call the model made when it differs from the target (a forwarded call);
    ``target_identity`` names the tool that runs it (``tool/<capability>/<name>``).
    """

    tool_call_id: str = attrs.field(**NAME(v1=True))
    tool_name: str = attrs.field(**TEXT(v1=True))
    args: str | dict[str, JSON] | None = attrs.field(default=None, **ARGS(optional=True, v1=True))
    target_identity: str | None = attrs.field(default=None, **ID_TEXT(optional=True))
    target_call: ToolCallPart | None = attrs.field(default=None, **nested(ToolCallPart)(optional=True))
    model_call: ToolCallPart | None = attrs.field(default=None, **nested(ToolCallPart)(optional=True))

    def __attrs_post_init__(self) -> None:
        target = self.target_call
        if target is not None and (target.tool_call_id, target.tool_name, target.args) != (
                self.tool_call_id, self.tool_name, self.args):
            raise ValueError("DeferredToolCall.target_call must have the call's tool_call_id, tool_name and args")

    @property
    def model_call_id(self) -> str:
        """The id of the call the model made (the target's id unless forwarded)."""
        return self.model_call.tool_call_id if self.model_call is not None else self.tool_call_id


_deferred_calls = tuple_of(DeferredToolCall).check


def _unique_calls(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    _deferred_calls(inst, attr, value)
    ids = [c.tool_call_id for c in value]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{type(inst).__name__}.{attr.name} names a tool call id more than once: {ids}")


UNIQUE_CALLS = tuple_of(DeferredToolCall, _unique_calls)
"""Deferred tool calls, no tool call id twice."""


@declared(v1=True)
@attrs.frozen
class Deferred:
    """What a suspended Run waits for. ``metadata`` is keyed by tool call id."""

    calls: tuple[DeferredToolCall, ...] = attrs.field(default=(), **UNIQUE_CALLS(always=True, v1=True))
    approvals: tuple[DeferredToolCall, ...] = attrs.field(default=(), **UNIQUE_CALLS(always=True, v1=True))
    metadata: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))


@declared()
@attrs.frozen
class MessageHistory:
    """The model messages of a Thread at the end of a Run (pydantic-ai's JSON
    of each message); the Run's own messages start at ``new_message_index``."""

    messages: list[JSON] = attrs.field(**ARRAY())
    new_message_index: int = attrs.field(default=0, **INDEX(always=True))

    def __attrs_post_init__(self) -> None:
        if self.new_message_index > len(self.messages):
            raise ValueError(f"MessageHistory.new_message_index {self.new_message_index} is past the "
                             f"{len(self.messages)} messages")


@declared(v1=True)
@attrs.frozen
class RunResult:
    """The outcome of a Run. ``output`` belongs to completed Runs only,
    ``failure`` to failed ones, ``deferred`` (at least one call or approval)
    and ``suspend_reason`` to suspended ones. ``state`` is the Harness's
    continuation state as JSON, ``usage_records`` its usage records as JSON,
    ``history`` the Thread's model messages."""

    status: RunStatus = attrs.field(**choice(RunStatus)(v1=True))
    output: JSON = attrs.field(default=None, **JSON_VALUE(v1=True))
    usage: Usage | None = attrs.field(default=None, **nested(Usage)(optional=True, v1=True))
    failure: Failure | None = attrs.field(default=None, **nested(Failure)(optional=True, v1=True))
    deferred: Deferred | None = attrs.field(default=None, **nested(Deferred)(optional=True, v1=True))
    suspend_reason: str | None = attrs.field(default=None, **NAME(optional=True, known=("deferred",)))
    state: dict[str, JSON] | None = attrs.field(default=None, **OBJECT(optional=True))
    usage_records: list[JSON] | None = attrs.field(default=None, **ARRAY(optional=True))
    history: MessageHistory | None = attrs.field(default=None, **nested(MessageHistory)(optional=True))

    def __attrs_post_init__(self) -> None:
        status = self.status
        if self.output is not None and status != "completed":
            raise ValueError(f"RunResult.output belongs to completed runs, not {status}")
        if (self.failure is not None) != (status == "failed"):
            raise ValueError("RunResult.failure is required for failed runs and allowed only there")
        if status == "suspended":
            if self.deferred is None or not (self.deferred.calls or self.deferred.approvals):
                raise ValueError("a suspended RunResult needs at least one deferred tool call or approval")
        else:
            if self.deferred is not None:
                raise ValueError(f"RunResult.deferred belongs to suspended runs, not {status}")
            if self.suspend_reason is not None:
                raise ValueError(f"RunResult.suspend_reason belongs to suspended runs, not {status}")


# -- envelopes ---------------------------------------------------------------------

@declared("event", v1=True, tag_key="kind")
@attrs.frozen
class HarnessEvent:
    """One public item of a Run's stream, other than the terminal result."""

    thread_id: str = attrs.field(**NAME(v1=True))
    run_id: str = attrs.field(**NAME(v1=True))
    sequence: int = attrs.field(**COUNT(v1=True))
    occurred_at: datetime = attrs.field(**INSTANT(v1=True))
    event: Payload = attrs.field(**union(Payload, "payload")(v1=True))


@declared("result", v1=True, tag_key="kind")
@attrs.frozen
class HarnessRunResultEvent:
    """The sole terminal item of a Run."""

    thread_id: str = attrs.field(**NAME(v1=True))
    run_id: str = attrs.field(**NAME(v1=True))
    sequence: int = attrs.field(**COUNT(v1=True))
    occurred_at: datetime = attrs.field(**INSTANT(v1=True))
    result: RunResult = attrs.field(**nested(RunResult)(v1=True))


HarnessStreamEvent = HarnessEvent | HarnessRunResultEvent


def describe_wrong_item(value: Any) -> str:
    """Why ``value`` is not a source item, and what to do instead: the text
    of the TypeError that ``observe()``, ``resume()`` and the journals raise
    for it. An a13n-harness item (same class name, another class) is told to
    go through ``harness_agui.a13n.from_a13n``; a wire line or its JSON
    object through the wire codec; a bare payload or run result into its
    envelope."""
    kind = type(value)
    got = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
    expected = "expected a harness_agui HarnessEvent or HarnessRunResultEvent"
    module = kind.__module__ or ""
    if module.split(".")[0] in ("a13n_harness", "pydantic_ai") or kind.__name__ in (
            "HarnessEvent", "HarnessRunResultEvent"):
        return (f"{expected}, not {got}: convert an a13n-harness stream item first with "
                "harness_agui.a13n.from_a13n(item)")
    if isinstance(value, (str, bytes, bytearray)):
        return f"{expected}, not {kind.__name__}: decode a wire line first with harness_agui.wire.codec.decode(line)"
    if isinstance(value, dict):
        return (f"{expected}, not dict: read a wire JSON object first with "
                "harness_agui.wire.codec.from_json(data)")
    if isinstance(value, typing.get_args(Payload)):
        return (f"{expected}, not a bare {kind.__name__}: wrap a payload in a HarnessEvent(thread_id, run_id, "
                "sequence, occurred_at, event)")
    if isinstance(value, RunResult):
        return (f"{expected}, not a bare RunResult: wrap it in a HarnessRunResultEvent(thread_id, run_id, "
                "sequence, occurred_at, result)")
    return f"{expected}, not {got}"
