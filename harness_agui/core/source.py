# The Harness public stream as frozen values.
#
# Every class here validates on construction: a wrong Python type raises
# TypeError, a value of the right type that the Harness contract forbids (a
# blank id, a negative sequence, a naive datetime, an unknown status) raises
# ValueError. The reducer can therefore trust any instance it is given and
# only has to check what depends on the history (correlation, ordering, part
# identity).
#
# JSON-valued fields (tool args, tool results, payloads, run output) hold
# plain dicts and lists, checked to be JSON. The projection never keeps a
# reference to them: it keeps their compact text, so a Host that mutates a
# dict after observing it cannot change what was projected.
#
# This is also where the limits of the whole library are decided, once, so
# that anything a constructor accepts can be projected, serialised, written
# to a journal and stored (issue 13): text is valid Unicode (no lone
# surrogate) and JSON values obey ``_json.check_json`` (nesting depth,
# integer length); a ``sequence`` lies in 0..MAX_SEQUENCE (2**53 - 1, what
# every JSON reader and SQLite's INTEGER keep exactly); ``occurred_at`` is an
# instant that exists in UTC, so that converting it to UTC or to epoch
# milliseconds cannot overflow. A value with a named zone (say a ZoneInfo) is
# kept as the same wall time at its fixed UTC offset; that conversion only
# relabels the zone and cannot overflow either.

from __future__ import annotations

from datetime import UTC, datetime, timezone
from typing import Any, Literal

import attrs

from ._json import JSON, check_json, check_text

__all__ = [
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "Part",
    "TextPartDelta",
    "ThinkingPartDelta",
    "ToolCallPartDelta",
    "PartDelta",
    "PartStartEvent",
    "PartDeltaEvent",
    "PartEndEvent",
    "ToolResultEvent",
    "InputEvent",
    "ExtensionEvent",
    "ObservationEvent",
    "Payload",
    "Usage",
    "Failure",
    "DeferredToolCall",
    "Deferred",
    "RunResult",
    "HarnessEvent",
    "HarnessRunResultEvent",
    "HarnessStreamEvent",
    "TOOL_OUTCOMES",
    "INPUT_SOURCES",
    "EXTENSION_KINDS",
    "RUN_STATUSES",
    "MAX_JSON_INT",
    "MAX_SEQUENCE",
]

ToolOutcome = Literal["success", "failed", "retried"]
InputSource = Literal["user", "steering", "context", "recovery", "async_subagent", "background_process"]
ExtensionKind = Literal[
    "context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle", "tool", "diagnostic"
]
RunStatus = Literal["completed", "suspended", "failed", "cancelled"]

TOOL_OUTCOMES: tuple[str, ...] = ("success", "failed", "retried")
INPUT_SOURCES: tuple[str, ...] = ("user", "steering", "context", "recovery", "async_subagent", "background_process")
EXTENSION_KINDS: tuple[str, ...] = (
    "context", "state", "recovery", "invocation", "delegation", "usage", "lifecycle", "tool", "diagnostic",
)
RUN_STATUSES: tuple[str, ...] = ("completed", "suspended", "failed", "cancelled")


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


# -- parts and deltas -----------------------------------------------------------

@attrs.frozen
class TextPart:
    content: str = attrs.field(validator=_str)
    id: str | None = attrs.field(default=None, validator=_opt_id)


@attrs.frozen
class ThinkingPart:
    content: str = attrs.field(validator=_str)
    id: str | None = attrs.field(default=None, validator=_opt_id)
    signature: str | None = attrs.field(default=None, validator=_opt_str)
    provider_name: str | None = attrs.field(default=None, validator=_opt_str)


@attrs.frozen
class ToolCallPart:
    tool_name: str = attrs.field(validator=_str)
    args: str | dict[str, JSON] | None = attrs.field(validator=_args)
    tool_call_id: str = attrs.field(validator=_id)


Part = TextPart | ThinkingPart | ToolCallPart


@attrs.frozen
class TextPartDelta:
    content_delta: str = attrs.field(validator=_str)


@attrs.frozen
class ThinkingPartDelta:
    content_delta: str | None = attrs.field(default=None, validator=_opt_str)
    signature_delta: str | None = attrs.field(default=None, validator=_opt_str)


@attrs.frozen
class ToolCallPartDelta:
    tool_name_delta: str | None = attrs.field(default=None, validator=_opt_str)
    args_delta: str | dict[str, JSON] | None = attrs.field(default=None, validator=_args)
    tool_call_id: str | None = attrs.field(default=None, validator=_opt_id)


PartDelta = TextPartDelta | ThinkingPartDelta | ToolCallPartDelta

_PARTS = (TextPart, ThinkingPart, ToolCallPart)
_DELTAS = (TextPartDelta, ThinkingPartDelta, ToolCallPartDelta)


# -- payloads -------------------------------------------------------------------

@attrs.frozen
class PartStartEvent:
    index: int = attrs.field(validator=_non_negative_int)
    part: Part = attrs.field(validator=_instance(*_PARTS))


@attrs.frozen
class PartDeltaEvent:
    index: int = attrs.field(validator=_non_negative_int)
    delta: PartDelta = attrs.field(validator=_instance(*_DELTAS))


@attrs.frozen
class PartEndEvent:
    index: int = attrs.field(validator=_non_negative_int)
    part: Part = attrs.field(validator=_instance(*_PARTS))


@attrs.frozen
class ToolResultEvent:
    tool_call_id: str = attrs.field(validator=_id)
    tool_name: str = attrs.field(validator=_str)
    outcome: ToolOutcome = attrs.field(validator=_one_of(TOOL_OUTCOMES))
    content: JSON = attrs.field(default=None, validator=_json)


@attrs.frozen
class InputEvent:
    """An input to the Run. ``content`` is text, or a JSON object describing
    media (never raw bytes)."""

    input_id: str = attrs.field(validator=_id)
    source: InputSource = attrs.field(validator=_one_of(INPUT_SOURCES))
    content: str | dict[str, JSON] = attrs.field(validator=_instance(str, dict))
    metadata: dict[str, JSON] | None = attrs.field(default=None, validator=_opt_object)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.content, dict):
            check_json(self.content, "InputEvent.content")
        else:
            check_text(self.content, "InputEvent.content")


@attrs.frozen
class ExtensionEvent:
    kind: ExtensionKind = attrs.field(validator=_one_of(EXTENSION_KINDS))
    schema_version: str = attrs.field(validator=_str)
    payload: JSON = attrs.field(default=None, validator=_json)


@attrs.frozen
class ObservationEvent:
    """Any other public observation of the Harness."""

    name: str = attrs.field(validator=_id)
    value: JSON = attrs.field(default=None, validator=_json)


Payload = (
    PartStartEvent | PartDeltaEvent | PartEndEvent | ToolResultEvent | InputEvent | ExtensionEvent | ObservationEvent
)
_PAYLOADS = (
    PartStartEvent, PartDeltaEvent, PartEndEvent, ToolResultEvent, InputEvent, ExtensionEvent, ObservationEvent
)


# -- the run result -----------------------------------------------------------------

@attrs.frozen
class Usage:
    input_tokens: int | None = attrs.field(default=None, validator=_token_count)
    output_tokens: int | None = attrs.field(default=None, validator=_token_count)
    cache_read_tokens: int | None = attrs.field(default=None, validator=_token_count)
    reasoning_tokens: int | None = attrs.field(default=None, validator=_token_count)


@attrs.frozen
class Failure:
    code: str = attrs.field(validator=_id)
    message: str = attrs.field(validator=_str)


@attrs.frozen
class DeferredToolCall:
    """A tool call (or an approval of one) that the suspended Run waits for."""

    tool_call_id: str = attrs.field(validator=_id)
    tool_name: str = attrs.field(validator=_str)
    args: str | dict[str, JSON] | None = attrs.field(default=None, validator=_args)


@attrs.frozen
class Deferred:
    calls: tuple[DeferredToolCall, ...] = attrs.field(default=(), validator=_tuple_of(DeferredToolCall))
    approvals: tuple[DeferredToolCall, ...] = attrs.field(default=(), validator=_tuple_of(DeferredToolCall))

    def __attrs_post_init__(self) -> None:
        for name in ("calls", "approvals"):
            ids = [c.tool_call_id for c in getattr(self, name)]
            if len(set(ids)) != len(ids):
                raise ValueError(f"Deferred.{name} names a tool call id more than once: {ids}")


@attrs.frozen
class RunResult:
    """The outcome of a Run. ``output`` belongs to completed Runs only,
    ``failure`` to failed ones and ``deferred`` (at least one call or
    approval) to suspended ones."""

    status: RunStatus = attrs.field(validator=_one_of(RUN_STATUSES))
    output: JSON = attrs.field(default=None, validator=_json)
    usage: Usage | None = attrs.field(default=None, validator=attrs.validators.optional(_instance(Usage)))
    failure: Failure | None = attrs.field(default=None, validator=attrs.validators.optional(_instance(Failure)))
    deferred: Deferred | None = attrs.field(default=None, validator=attrs.validators.optional(_instance(Deferred)))

    def __attrs_post_init__(self) -> None:
        status = self.status
        if self.output is not None and status != "completed":
            raise ValueError(f"RunResult.output belongs to completed runs, not {status}")
        if (self.failure is not None) != (status == "failed"):
            raise ValueError("RunResult.failure is required for failed runs and allowed only there")
        if status == "suspended":
            if self.deferred is None or not (self.deferred.calls or self.deferred.approvals):
                raise ValueError("a suspended RunResult needs at least one deferred tool call or approval")
        elif self.deferred is not None:
            raise ValueError(f"RunResult.deferred belongs to suspended runs, not {status}")


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
