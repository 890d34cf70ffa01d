# The Harness public stream as frozen values.
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
# integer length); a ``sequence`` lies in 0..MAX_SEQUENCE (2**53 - 1, what
# every JSON reader and SQLite's INTEGER keep exactly); ``occurred_at`` is an
# instant that exists in UTC, so that converting it to UTC or to epoch
# milliseconds cannot overflow. A value with a named zone (say a ZoneInfo) is
# kept as the same wall time at its fixed UTC offset; that conversion only
# relabels the zone and cannot overflow either.

from __future__ import annotations

from datetime import UTC, datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, Union

import attrs

from ._json import JSON, check_json, check_text

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
]

ToolOutcome = Literal["success", "failed", "denied", "interrupted", "retried"]
RunStatus = Literal["completed", "suspended", "failed", "cancelled"]

TOOL_OUTCOMES: tuple[str, ...] = ("success", "failed", "denied", "interrupted", "retried")
"""Every outcome of a tool result (closed: the projection answers each)."""

INPUT_SOURCES: tuple[str, ...] = ("user", "steering", "context", "recovery", "async_subagent", "background_process")
"""The input sources a13n-harness 0.21 knows; ``InputEvent.source`` accepts any other non-blank name too."""

EXTENSION_KINDS: tuple[str, ...] = (
    "context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle", "tool", "diagnostic",
)
"""The extension kinds a13n-harness 0.21 knows; ``ExtensionEvent.kind`` accepts any other non-blank name too."""

RUN_STATUSES: tuple[str, ...] = ("completed", "suspended", "failed", "cancelled")

PART_KINDS: tuple[str, ...] = (
    "text", "thinking", "tool-call", "builtin-tool-call", "builtin-tool-return", "compaction", "file", "speech",
)
"""The values of ``previous_part_kind`` / ``next_part_kind`` pydantic-ai 2.61 knows (any non-blank name is kept)."""


# -- validators ---------------------------------------------------------------

def _type_error(inst: Any, attr: attrs.Attribute, value: Any, expected: str) -> TypeError:
    return TypeError(
        f"{type(inst).__name__}.{attr.name} must be {expected}, not {type(value).__name__} ({value!r:.60})"
    )


def _str(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str):
        raise _type_error(inst, attr, value, "str")
    if not value.isascii():
        check_text(value, f"{type(inst).__name__}.{attr.name}")


def _opt_str(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is not None:
        if not isinstance(value, str):
            raise _type_error(inst, attr, value, "str or None")
        _str(inst, attr, value)


def _id(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    _str(inst, attr, value)
    if not value.strip():
        raise ValueError(f"{type(inst).__name__}.{attr.name} must not be blank")


def _opt_id(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is not None:
        _id(inst, attr, value)


def _non_negative_int(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _type_error(inst, attr, value, "int")
    if value < 0:
        raise ValueError(f"{type(inst).__name__}.{attr.name} must be >= 0, got {value}")


def _opt_non_negative_int(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is not None:
        _non_negative_int(inst, attr, value)


MAX_JSON_INT = 2**53 - 1
"""The largest integer every JSON reader keeps exactly (AG-UI's bound for counts)."""

MAX_SEQUENCE = MAX_JSON_INT
"""The largest ``sequence`` of a source item: JSON-safe, and well inside SQLite's signed 64-bit INTEGER."""


def _sequence(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    _non_negative_int(inst, attr, value)
    if value > MAX_SEQUENCE:
        raise ValueError(f"{type(inst).__name__}.{attr.name} must be <= 2**53 - 1, got {value}")


def _token_count(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    _opt_non_negative_int(inst, attr, value)
    if value is not None and value > MAX_JSON_INT:
        raise ValueError(f"{type(inst).__name__}.{attr.name} must be <= 2**53 - 1, got {value}")


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(inst: Any, attr: attrs.Attribute, value: Any) -> None:
        _str(inst, attr, value)
        if value not in choices:
            raise ValueError(f"{type(inst).__name__}.{attr.name} must be one of {', '.join(choices)}; got {value!r}")

    return check


def _json(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    check_json(value, f"{type(inst).__name__}.{attr.name}")


def _args(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        _str(inst, attr, value)
        return
    if not isinstance(value, dict):
        raise _type_error(inst, attr, value, "str, dict or None")
    _json(inst, attr, value)


def _opt_object(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise _type_error(inst, attr, value, "dict or None")
    _json(inst, attr, value)


def _instance(*types: type) -> Any:
    names = " or ".join(t.__name__ for t in types)

    def check(inst: Any, attr: attrs.Attribute, value: Any) -> None:
        if not isinstance(value, types):
            raise _type_error(inst, attr, value, names)

    return check


def _fixed_offset(value: Any) -> Any:
    """An aware datetime with a zone (say ZoneInfo) as the same instant at a
    fixed UTC offset, so that it survives the wire format unchanged (an
    ambiguous local time never compares equal across zones otherwise). The
    wall time is kept and only the zone relabelled, which cannot overflow
    (``astimezone`` goes through UTC, which can)."""
    if isinstance(value, datetime) and value.tzinfo is not None and type(value.tzinfo) is not timezone:
        offset = value.utcoffset()
        if offset is not None:
            return value.replace(tzinfo=timezone(offset), fold=0)
    return value


def _aware(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, datetime):
        raise _type_error(inst, attr, value, "datetime")
    if value.utcoffset() is None:
        raise ValueError(f"{type(inst).__name__}.{attr.name} must be timezone-aware, got {value!r}")
    try:
        if value.year == 1 or value.year == 9999:  # only within a day of the calendar's ends can UTC overflow
            value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{type(inst).__name__}.{attr.name} {value.isoformat()} is outside the range of "
                         "datetime in UTC (years 1 to 9999)") from None


def _tuple_of(cls: type) -> Any:
    def check(inst: Any, attr: attrs.Attribute, value: Any) -> None:
        if not isinstance(value, tuple):
            raise _type_error(inst, attr, value, f"tuple of {cls.__name__}")
        for v in value:
            if not isinstance(v, cls):
                raise _type_error(inst, attr, v, f"{cls.__name__} items")

    return check


def _bool(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, bool):
        raise _type_error(inst, attr, value, "bool")


def _opt_bool(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise _type_error(inst, attr, value, "bool or None")


def _object(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, dict):
        raise _type_error(inst, attr, value, "dict")
    _json(inst, attr, value)


def _array(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, list):
        raise _type_error(inst, attr, value, "list")
    _json(inst, attr, value)


def _opt_array(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is not None:
        _array(inst, attr, value)


def _opt_aware(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is not None:
        _aware(inst, attr, value)


def _opt_decimal(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    """A decimal number written as text ("0", "0.0125"), kept exactly."""
    if value is None:
        return
    if not isinstance(value, str):
        raise _type_error(inst, attr, value, "str (a decimal number) or None")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{type(inst).__name__}.{attr.name} must be a decimal number, got {value!r:.60}") from None
    if not number.is_finite() or value != value.strip() or len(value) > 100:
        raise ValueError(f"{type(inst).__name__}.{attr.name} must be a finite decimal number, got {value!r:.60}")


def _opt_counts(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise _type_error(inst, attr, value, "dict of str to int, or None")
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, int) or isinstance(v, bool):
            raise _type_error(inst, attr, value, "dict of str to int")
        check_text(k, f"{type(inst).__name__}.{attr.name} (a key)")
        if abs(v) > MAX_JSON_INT:
            raise ValueError(f"{type(inst).__name__}.{attr.name}[{k!r}] must be within +-(2**53 - 1), got {v}")


def _opt_instance(*types: type) -> Any:
    check = _instance(*types)

    def opt(inst: Any, attr: attrs.Attribute, value: Any) -> None:
        if value is not None:
            check(inst, attr, value)

    return opt


# -- content ------------------------------------------------------------------------

@attrs.frozen
class BinaryContent:
    """Binary data (an image a tool returned, a file a model produced).

    The wire format writes ``data`` as base64 beside ``media_type`` and
    ``size``; a CUSTOM event carries only the reference (media type, size,
    identifier), never the bytes.
    """

    data: bytes = attrs.field(validator=_instance(bytes))
    media_type: str = attrs.field(validator=_id)
    identifier: str | None = attrs.field(default=None, validator=_opt_str)
    vendor_metadata: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)

    @property
    def size(self) -> int:
        """The number of bytes."""
        return len(self.data)


@attrs.frozen
class MediaContent:
    """Any other multimodal content item (a URL to an image, audio, video or
    document, an uploaded file, a cache point, ...): its ``kind`` and the
    JSON of its other fields."""

    kind: str = attrs.field(validator=_id)
    data: dict[str, JSON] = attrs.field(factory=dict, validator=_object)


def _content_item(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, (BinaryContent, MediaContent)):
        check_json(value, f"{type(inst).__name__}.{attr.name}")


def _content_items(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, tuple):
        raise _type_error(inst, attr, value, "tuple")
    for item in value:
        _content_item(inst, attr, item)
    if not any(isinstance(item, (BinaryContent, MediaContent)) for item in value):
        raise ValueError(f"{type(inst).__name__}.{attr.name} holds no binary or media item: a list of JSON values "
                         "is plain JSON, not a ContentList")


@attrs.frozen
class ContentList:
    """Content that mixes JSON values (text, numbers, objects) with at least
    one binary or media item, in order (``["A caption", <image>]``)."""

    items: tuple[JSON | BinaryContent | MediaContent, ...] = attrs.field(validator=_content_items)


ToolContent = Union[JSON, BinaryContent, MediaContent, ContentList]  # noqa: UP007 (JSON is a string alias)
"""What a tool returns: a JSON value, a binary or media item, or a list mixing them."""


def _tool_content(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, (BinaryContent, MediaContent, ContentList)):
        check_json(value, f"{type(inst).__name__}.{attr.name}")


# -- parts and deltas -----------------------------------------------------------

@attrs.frozen
class TextPart:
    content: str = attrs.field(validator=_str)
    id: str | None = attrs.field(default=None, validator=_opt_id)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)
    citations: list[JSON] | None = attrs.field(default=None, validator=_opt_array)


@attrs.frozen
class ThinkingPart:
    content: str = attrs.field(validator=_str)
    id: str | None = attrs.field(default=None, validator=_opt_id)
    signature: str | None = attrs.field(default=None, validator=_opt_str)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)


@attrs.frozen
class ToolCallPart:
    """A tool call the model makes. ``builtin`` marks a call of a provider's
    builtin tool (pydantic-ai's ``NativeToolCallPart``), which the provider
    runs itself."""

    tool_name: str = attrs.field(validator=_str)
    args: str | dict[str, JSON] | None = attrs.field(validator=_args)
    tool_call_id: str = attrs.field(validator=_id)
    tool_kind: str | None = attrs.field(default=None, validator=_opt_str)
    id: str | None = attrs.field(default=None, validator=_opt_str)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)
    builtin: bool = attrs.field(default=False, validator=_bool)


@attrs.frozen
class BuiltinToolReturnPart:
    """What a provider's builtin tool returned, as part of the model response
    (it gets a part start and no end)."""

    tool_name: str = attrs.field(validator=_str)
    content: ToolContent = attrs.field(validator=_tool_content)
    tool_call_id: str = attrs.field(validator=_id)
    tool_kind: str | None = attrs.field(default=None, validator=_opt_str)
    metadata: JSON = attrs.field(default=None, validator=_json)
    timestamp: datetime | None = attrs.field(default=None, converter=_fixed_offset, validator=_opt_aware)
    outcome: ToolOutcome = attrs.field(default="success", validator=_one_of(TOOL_OUTCOMES))
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)


@attrs.frozen
class FilePart:
    """A file the model produced (it gets a part start and no end)."""

    content: BinaryContent = attrs.field(validator=_instance(BinaryContent))
    id: str | None = attrs.field(default=None, validator=_opt_str)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)


@attrs.frozen
class UnknownPart:
    """A response part of a kind this release does not model (``speech``,
    ``compaction``, a future kind): its ``part_kind`` and the JSON of its
    other fields, kept whole."""

    part_kind: str = attrs.field(validator=_id)
    data: dict[str, JSON] = attrs.field(factory=dict, validator=_object)


Part = TextPart | ThinkingPart | ToolCallPart | BuiltinToolReturnPart | FilePart | UnknownPart


@attrs.frozen
class TextPartDelta:
    content_delta: str = attrs.field(validator=_str)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)
    citations_delta: list[JSON] | None = attrs.field(default=None, validator=_opt_array)


@attrs.frozen
class ThinkingPartDelta:
    """More reasoning. A ``signature_delta`` replaces the part's signature
    (pydantic-ai's rule); the final part's signature is authoritative."""

    content_delta: str | None = attrs.field(default=None, validator=_opt_str)
    signature_delta: str | None = attrs.field(default=None, validator=_opt_str)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)


@attrs.frozen
class ToolCallPartDelta:
    tool_name_delta: str | None = attrs.field(default=None, validator=_opt_str)
    args_delta: str | dict[str, JSON] | None = attrs.field(default=None, validator=_args)
    tool_call_id: str | None = attrs.field(default=None, validator=_opt_id)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)
    provider_details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)


@attrs.frozen
class UnknownDelta:
    """A part delta of a kind this release does not model, kept whole."""

    part_delta_kind: str = attrs.field(validator=_id)
    data: dict[str, JSON] = attrs.field(factory=dict, validator=_object)


PartDelta = TextPartDelta | ThinkingPartDelta | ToolCallPartDelta | UnknownDelta

_PARTS = (TextPart, ThinkingPart, ToolCallPart, BuiltinToolReturnPart, FilePart, UnknownPart)
_DELTAS = (TextPartDelta, ThinkingPartDelta, ToolCallPartDelta, UnknownDelta)


# -- payloads -------------------------------------------------------------------

@attrs.frozen
class PartStartEvent:
    index: int = attrs.field(validator=_non_negative_int)
    part: Part = attrs.field(validator=_instance(*_PARTS))
    previous_part_kind: str | None = attrs.field(default=None, validator=_opt_id)


@attrs.frozen
class PartDeltaEvent:
    index: int = attrs.field(validator=_non_negative_int)
    delta: PartDelta = attrs.field(validator=_instance(*_DELTAS))


@attrs.frozen
class PartEndEvent:
    index: int = attrs.field(validator=_non_negative_int)
    part: Part = attrs.field(validator=_instance(*_PARTS))
    next_part_kind: str | None = attrs.field(default=None, validator=_opt_id)


@attrs.frozen
class FinalResultEvent:
    """The model started what may be the final result: after the first text
    of a response, or the start of an output tool call. It does not end the
    answer."""

    tool_name: str | None = attrs.field(default=None, validator=_opt_str)
    tool_call_id: str | None = attrs.field(default=None, validator=_opt_id)


@attrs.frozen
class ToolCallEvent:
    """The Harness is about to handle a tool call (pydantic-ai's
    ``FunctionToolCallEvent``, or ``OutputToolCallEvent`` when ``output``).
    ``args_valid`` is False when the args failed validation, None when
    unknown (a call resolved by deferred results)."""

    part: ToolCallPart = attrs.field(validator=_instance(ToolCallPart))
    args_valid: bool | None = attrs.field(default=None, validator=_opt_bool)
    output: bool = attrs.field(default=False, validator=_bool)


@attrs.frozen
class RetryInfo:
    """Why a tool result asks the model to try again."""

    cause: str = attrs.field(validator=_id)
    attempt: int | None = attrs.field(default=None, validator=_token_count)
    max_retries: int | None = attrs.field(default=None, validator=_token_count)


@attrs.frozen
class ToolResultEvent:
    """The result of a tool call (pydantic-ai's ``FunctionToolResultEvent``,
    or ``OutputToolResultEvent`` when ``output``): its ``ToolReturnPart``'s
    fields, plus ``user_content``, the event's own content for the user."""

    tool_call_id: str = attrs.field(validator=_id)
    tool_name: str = attrs.field(validator=_str)
    outcome: ToolOutcome = attrs.field(validator=_one_of(TOOL_OUTCOMES))
    content: ToolContent = attrs.field(default=None, validator=_tool_content)
    tool_kind: str | None = attrs.field(default=None, validator=_opt_str)
    metadata: JSON = attrs.field(default=None, validator=_json)
    timestamp: datetime | None = attrs.field(default=None, converter=_fixed_offset, validator=_opt_aware)
    retry: RetryInfo | None = attrs.field(default=None, validator=_opt_instance(RetryInfo))
    user_content: ToolContent = attrs.field(default=None, validator=_tool_content)
    output: bool = attrs.field(default=False, validator=_bool)

    def __attrs_post_init__(self) -> None:
        if self.output and self.user_content is not None:
            raise ValueError("ToolResultEvent.user_content belongs to function tool results, not output tool results")


@attrs.frozen
class DeferredToolRequestsEvent:
    """The Run stops to wait for tool calls run elsewhere (``calls``) and
    for approvals; ``metadata`` is keyed by tool call id."""

    calls: tuple[ToolCallPart, ...] = attrs.field(default=(), validator=_tuple_of(ToolCallPart))
    approvals: tuple[ToolCallPart, ...] = attrs.field(default=(), validator=_tuple_of(ToolCallPart))
    metadata: dict[str, JSON] = attrs.field(factory=dict, validator=_object)


@attrs.frozen
class EnqueuedMessagesEvent:
    """Messages enqueued into the Run (steering) were delivered into its
    history: pydantic-ai's JSON of the messages and parts."""

    enqueue_id: str = attrs.field(validator=_id)
    messages: list[JSON] = attrs.field(factory=list, validator=_array)
    parts: list[JSON] = attrs.field(factory=list, validator=_array)


def _input_content(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    if isinstance(value, dict):
        check_json(value, f"{type(inst).__name__}.{attr.name}")
    elif isinstance(value, str):
        check_text(value, f"{type(inst).__name__}.{attr.name}")
    else:
        raise _type_error(inst, attr, value, "str or dict")


@attrs.frozen
class InputEvent:
    """An input to the Run. ``content`` is text, or a JSON object describing
    media (never raw bytes). ``source`` is one of INPUT_SOURCES or any other
    non-blank name; ``capability_id``, ``tool_call_id`` and ``tool_name``
    attribute it to what emitted it."""

    input_id: str = attrs.field(validator=_id)
    source: str = attrs.field(validator=_id)
    content: str | dict[str, JSON] = attrs.field(validator=_input_content)
    metadata: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)
    capability_id: str | None = attrs.field(default=None, validator=_opt_str)
    tool_call_id: str | None = attrs.field(default=None, validator=_opt_str)
    tool_name: str | None = attrs.field(default=None, validator=_opt_str)


@attrs.frozen
class CapabilityEvent:
    """An event a capability emitted (a file edit applied, a shell status, a
    context summary, ...), other than an input: its namespaced ``kind``, its
    attribution and the JSON of its own fields."""

    kind: str = attrs.field(validator=_id)
    capability_id: str | None = attrs.field(default=None, validator=_opt_str)
    tool_call_id: str | None = attrs.field(default=None, validator=_opt_str)
    tool_name: str | None = attrs.field(default=None, validator=_opt_str)
    data: dict[str, JSON] = attrs.field(factory=dict, validator=_object)


@attrs.frozen
class ExtensionEvent:
    """A Harness extension event. ``kind`` is one of EXTENSION_KINDS or any
    other non-blank name."""

    kind: str = attrs.field(validator=_id)
    schema_version: str = attrs.field(validator=_str)
    payload: JSON = attrs.field(default=None, validator=_json)


@attrs.frozen
class ObservationEvent:
    """Any other public observation, named by whoever made it."""

    name: str = attrs.field(validator=_id)
    value: JSON = attrs.field(default=None, validator=_json)


@attrs.frozen
class UnknownEvent:
    """An event of a class this release does not model (a deferred-results
    event, a realtime session event, a future event): its ``event_kind`` and
    the JSON of its other fields, kept whole."""

    event_kind: str = attrs.field(validator=_id)
    data: dict[str, JSON] = attrs.field(factory=dict, validator=_object)


Payload = (
    PartStartEvent | PartDeltaEvent | PartEndEvent | FinalResultEvent | ToolCallEvent | ToolResultEvent
    | DeferredToolRequestsEvent | EnqueuedMessagesEvent | InputEvent | CapabilityEvent | ExtensionEvent
    | ObservationEvent | UnknownEvent
)
_PAYLOADS = (
    PartStartEvent, PartDeltaEvent, PartEndEvent, FinalResultEvent, ToolCallEvent, ToolResultEvent,
    DeferredToolRequestsEvent, EnqueuedMessagesEvent, InputEvent, CapabilityEvent, ExtensionEvent, ObservationEvent,
    UnknownEvent,
)


# -- the run result -----------------------------------------------------------------

@attrs.frozen
class Usage:
    """Token and cost counts of a Run. Every field is optional; a13n-harness
    fills all but ``reasoning_tokens``. ``audio_seconds`` and ``cost`` are
    decimal numbers written as text, kept exactly."""

    input_tokens: int | None = attrs.field(default=None, validator=_token_count)
    output_tokens: int | None = attrs.field(default=None, validator=_token_count)
    cache_read_tokens: int | None = attrs.field(default=None, validator=_token_count)
    reasoning_tokens: int | None = attrs.field(default=None, validator=_token_count)
    cache_write_tokens: int | None = attrs.field(default=None, validator=_token_count)
    input_audio_tokens: int | None = attrs.field(default=None, validator=_token_count)
    cache_audio_read_tokens: int | None = attrs.field(default=None, validator=_token_count)
    output_audio_tokens: int | None = attrs.field(default=None, validator=_token_count)
    audio_seconds: str | None = attrs.field(default=None, validator=_opt_decimal)
    cost: str | None = attrs.field(default=None, validator=_opt_decimal)
    details: dict[str, int] | None = attrs.field(default=None, validator=_opt_counts)
    requests: int | None = attrs.field(default=None, validator=_token_count)
    tool_calls: int | None = attrs.field(default=None, validator=_token_count)
    provider_receipts: int | None = attrs.field(default=None, validator=_token_count)
    unknown_cost_records: int | None = attrs.field(default=None, validator=_token_count)
    incomplete_requests: int | None = attrs.field(default=None, validator=_token_count)
    model_usage_coverage: str | None = attrs.field(default=None, validator=_opt_id)


@attrs.frozen
class Failure:
    """Why a Run failed. ``details`` is safe JSON; ``retry_hint`` says what
    a retry needs (a13n-harness: none, new_run, dependency_change)."""

    code: str = attrs.field(validator=_id)
    message: str = attrs.field(validator=_str)
    details: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)
    retry_hint: str | None = attrs.field(default=None, validator=_opt_id)


@attrs.frozen
class DeferredToolCall:
    """A tool call (or an approval of one) that the suspended Run waits for.

    ``tool_call_id``, ``tool_name`` and ``args`` are the call to answer (the
    *target* call, whose id a resume names). ``target_call`` is that call in
    full when it carries more than these three fields; ``model_call`` is the
    call the model made when it differs from the target (a forwarded call);
    ``target_identity`` names the tool that runs it (``tool/<capability>/<name>``).
    """

    tool_call_id: str = attrs.field(validator=_id)
    tool_name: str = attrs.field(validator=_str)
    args: str | dict[str, JSON] | None = attrs.field(default=None, validator=_args)
    target_identity: str | None = attrs.field(default=None, validator=_opt_str)
    target_call: ToolCallPart | None = attrs.field(default=None, validator=_opt_instance(ToolCallPart))
    model_call: ToolCallPart | None = attrs.field(default=None, validator=_opt_instance(ToolCallPart))

    def __attrs_post_init__(self) -> None:
        target = self.target_call
        if target is not None and (target.tool_call_id, target.tool_name, target.args) != (
                self.tool_call_id, self.tool_name, self.args):
            raise ValueError("DeferredToolCall.target_call must have the call's tool_call_id, tool_name and args")

    @property
    def model_call_id(self) -> str:
        """The id of the call the model made (the target's id unless forwarded)."""
        return self.model_call.tool_call_id if self.model_call is not None else self.tool_call_id


def _unique_ids(inst: Any, attr: attrs.Attribute, value: Any) -> None:
    _tuple_of(DeferredToolCall)(inst, attr, value)
    ids = [c.tool_call_id for c in value]
    if len(set(ids)) != len(ids):
        raise ValueError(f"Deferred.{attr.name} names a tool call id more than once: {ids}")


@attrs.frozen
class Deferred:
    """What a suspended Run waits for. ``metadata`` is keyed by tool call id."""

    calls: tuple[DeferredToolCall, ...] = attrs.field(default=(), validator=_unique_ids)
    approvals: tuple[DeferredToolCall, ...] = attrs.field(default=(), validator=_unique_ids)
    metadata: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)


@attrs.frozen
class MessageHistory:
    """The model messages of a Thread at the end of a Run (pydantic-ai's JSON
    of each message); the Run's own messages start at ``new_message_index``."""

    messages: list[JSON] = attrs.field(validator=_array)
    new_message_index: int = attrs.field(default=0, validator=_non_negative_int)

    def __attrs_post_init__(self) -> None:
        if self.new_message_index > len(self.messages):
            raise ValueError(f"MessageHistory.new_message_index {self.new_message_index} is past the "
                             f"{len(self.messages)} messages")


@attrs.frozen
class RunResult:
    """The outcome of a Run. ``output`` belongs to completed Runs only,
    ``failure`` to failed ones, ``deferred`` (at least one call or approval)
    and ``suspend_reason`` to suspended ones. ``state`` is the Harness's
    continuation state as JSON, ``usage_records`` its usage records as JSON,
    ``history`` the Thread's model messages."""

    status: RunStatus = attrs.field(validator=_one_of(RUN_STATUSES))
    output: JSON = attrs.field(default=None, validator=_json)
    usage: Usage | None = attrs.field(default=None, validator=_opt_instance(Usage))
    failure: Failure | None = attrs.field(default=None, validator=_opt_instance(Failure))
    deferred: Deferred | None = attrs.field(default=None, validator=_opt_instance(Deferred))
    suspend_reason: str | None = attrs.field(default=None, validator=_opt_id)
    state: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)
    usage_records: list[JSON] | None = attrs.field(default=None, validator=_opt_array)
    history: MessageHistory | None = attrs.field(default=None, validator=_opt_instance(MessageHistory))

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

@attrs.frozen
class HarnessEvent:
    """One public item of a Run's stream, other than the terminal result."""

    thread_id: str = attrs.field(validator=_id)
    run_id: str = attrs.field(validator=_id)
    sequence: int = attrs.field(validator=_sequence)
    occurred_at: datetime = attrs.field(converter=_fixed_offset, validator=_aware)
    event: Payload = attrs.field(validator=_instance(*_PAYLOADS))


@attrs.frozen
class HarnessRunResultEvent:
    """The sole terminal item of a Run."""

    thread_id: str = attrs.field(validator=_id)
    run_id: str = attrs.field(validator=_id)
    sequence: int = attrs.field(validator=_sequence)
    occurred_at: datetime = attrs.field(converter=_fixed_offset, validator=_aware)
    result: RunResult = attrs.field(validator=_instance(RunResult))


HarnessStreamEvent = HarnessEvent | HarnessRunResultEvent
