# The wire format: one source item per JSON line, versioned by "v".
#
# Encoding is a straight walk over the frozen source values; decoding is the
# reverse walk with a strict reader that names the line and the field at
# fault. Nothing is skipped: an unknown version, kind or payload type is an
# error unless the caller supplied a migration for that version, which turns
# the older JSON object into a current one before it is read.
#
# The same payload-to-JSON walk feeds the CUSTOM events of the projection, so
# a CUSTOM value carries exactly what a journal line would.

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from . import _json
from .source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    ObservationEvent,
    Part,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    Payload,
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

__all__ = [
    "WIRE_VERSION",
    "DecodeError",
    "Migration",
    "encode",
    "decode",
    "to_json",
    "from_json",
    "payload_to_json",
    "result_to_json",
    "agui_to_json",
    "sse_frame",
]

WIRE_VERSION = 1

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns a decoded JSON object of an older wire version into the next one."""


class DecodeError(ValueError):
    """A line of the wire format could not be decoded.

    ``line`` is the 1-based line number when the caller gave one, ``reason``
    what was wrong.
    """

    def __init__(self, reason: str, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(f"line {line}: {reason}" if line is not None else reason)


# -- encoding ------------------------------------------------------------------

def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _part_to_json(part: Part) -> dict[str, Any]:
    match part:
        case TextPart(content=content, id=id):
            return _drop_none({"type": "text", "content": content, "id": id})
        case ThinkingPart(content=content, id=id, signature=signature, provider_name=provider):
            return _drop_none(
                {"type": "thinking", "content": content, "id": id, "signature": signature, "provider_name": provider}
            )
        case ToolCallPart(tool_name=name, args=args, tool_call_id=call_id):
            return _drop_none({"type": "tool_call", "tool_name": name, "args": args, "tool_call_id": call_id})
    raise TypeError(f"not a part: {part!r}")


def _delta_to_json(delta: Any) -> dict[str, Any]:
    match delta:
        case TextPartDelta(content_delta=content):
            return {"type": "text", "content_delta": content}
        case ThinkingPartDelta(content_delta=content, signature_delta=signature):
            return _drop_none({"type": "thinking", "content_delta": content, "signature_delta": signature})
        case ToolCallPartDelta(tool_name_delta=name, args_delta=args, tool_call_id=call_id):
            return _drop_none(
                {"type": "tool_call", "tool_name_delta": name, "args_delta": args, "tool_call_id": call_id}
            )
    raise TypeError(f"not a part delta: {delta!r}")


def payload_to_json(payload: Payload) -> dict[str, Any]:
    """The wire JSON object of a payload (fresh dicts; JSON fields are shared)."""
    match payload:
        case PartStartEvent(index=index, part=part):
            return {"type": "part_start", "index": index, "part": _part_to_json(part)}
        case PartDeltaEvent(index=index, delta=delta):
            return {"type": "part_delta", "index": index, "delta": _delta_to_json(delta)}
        case PartEndEvent(index=index, part=part):
            return {"type": "part_end", "index": index, "part": _part_to_json(part)}
        case ToolResultEvent(tool_call_id=call_id, tool_name=name, outcome=outcome, content=content):
            return {"type": "tool_result", "tool_call_id": call_id, "tool_name": name, "outcome": outcome,
                    "content": content}
        case InputEvent(input_id=input_id, source=source, content=content, metadata=metadata):
            return _drop_none({"type": "input", "input_id": input_id, "source": source, "content": content,
                               "metadata": metadata})
        case ExtensionEvent(kind=kind, schema_version=version, payload=body):
            return {"type": "extension", "kind": kind, "schema_version": version, "payload": body}
        case ObservationEvent(name=name, value=value):
            return {"type": "observation", "name": name, "value": value}
    raise TypeError(f"not a Harness payload: {type(payload).__name__}")


def _deferred_call_to_json(call: DeferredToolCall) -> dict[str, Any]:
    return _drop_none({"tool_call_id": call.tool_call_id, "tool_name": call.tool_name, "args": call.args})


def result_to_json(result: RunResult) -> dict[str, Any]:
    """The wire JSON object of a run result."""
    out: dict[str, Any] = {"status": result.status}
    if result.output is not None:
        out["output"] = result.output
    if result.usage is not None:
        u = result.usage
        out["usage"] = _drop_none({
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "reasoning_tokens": u.reasoning_tokens,
        })
    if result.failure is not None:
        out["failure"] = {"code": result.failure.code, "message": result.failure.message}
    if result.deferred is not None:
        out["deferred"] = {
            "calls": [_deferred_call_to_json(c) for c in result.deferred.calls],
            "approvals": [_deferred_call_to_json(c) for c in result.deferred.approvals],
        }
    return out


def to_json(item: HarnessStreamEvent) -> dict[str, Any]:
    """The wire JSON object of a source item."""
    head = {
        "v": WIRE_VERSION,
        "kind": "event" if isinstance(item, HarnessEvent) else "result",
        "thread_id": item.thread_id,
        "run_id": item.run_id,
        "sequence": item.sequence,
        "occurred_at": item.occurred_at.isoformat(),
    }
    if isinstance(item, HarnessEvent):
        head["event"] = payload_to_json(item.event)
    elif isinstance(item, HarnessRunResultEvent):
        head["result"] = result_to_json(item.result)
    else:
        raise TypeError(f"not a Harness stream item: {type(item).__name__}")
    return head


def encode(item: HarnessStreamEvent) -> str:
    """One wire line (without a trailing newline) for a source item."""
    return _json.dumps(to_json(item))


# -- decoding --------------------------------------------------------------------
# A small strict reader: every accessor names the path of the field it reads,
# and any TypeError or ValueError raised by the frozen classes' validators is
# turned into a DecodeError by ``from_json``.

_MISSING = object()


class _Obj:
    __slots__ = ("data", "path")

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise DecodeError(f"{path or 'line'} must be a JSON object, not {type(data).__name__}")
        self.data = data
        self.path = path

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise DecodeError(f"missing field {self._at(key)}")
            return default
        return value

    def obj(self, key: str) -> _Obj:
        return _Obj(self.get(key), self._at(key))

    def opt_obj(self, key: str) -> _Obj | None:
        value = self.get(key, None)
        return None if value is None else _Obj(value, self._at(key))

    def typed(self, key: str, types: type | tuple[type, ...], default: Any = _MISSING) -> Any:
        value = self.get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
            names = "/".join(t.__name__ for t in _as_tuple(types))
            raise DecodeError(f"field {self._at(key)} must be {names}, not {type(value).__name__}")
        return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _part_from(o: _Obj) -> Part:
    kind = o.typed("type", str)
    if kind == "text":
        return TextPart(content=o.typed("content", str), id=o.get("id", None))
    if kind == "thinking":
        return ThinkingPart(
            content=o.typed("content", str),
            id=o.get("id", None),
            signature=o.get("signature", None),
            provider_name=o.get("provider_name", None),
        )
    if kind == "tool_call":
        return ToolCallPart(tool_name=o.typed("tool_name", str), args=o.get("args", None),
                            tool_call_id=o.typed("tool_call_id", str))
    raise DecodeError(f"unknown part type {kind!r} at {o.path}")


def _delta_from(o: _Obj) -> Any:
    kind = o.typed("type", str)
    if kind == "text":
        return TextPartDelta(content_delta=o.typed("content_delta", str))
    if kind == "thinking":
        return ThinkingPartDelta(content_delta=o.get("content_delta", None),
                                 signature_delta=o.get("signature_delta", None))
    if kind == "tool_call":
        return ToolCallPartDelta(tool_name_delta=o.get("tool_name_delta", None), args_delta=o.get("args_delta", None),
                                 tool_call_id=o.get("tool_call_id", None))
    raise DecodeError(f"unknown delta type {kind!r} at {o.path}")


def _payload_from(o: _Obj) -> Payload:
    kind = o.typed("type", str)
    if kind == "part_start":
        return PartStartEvent(index=o.typed("index", int), part=_part_from(o.obj("part")))
    if kind == "part_delta":
        return PartDeltaEvent(index=o.typed("index", int), delta=_delta_from(o.obj("delta")))
    if kind == "part_end":
        return PartEndEvent(index=o.typed("index", int), part=_part_from(o.obj("part")))
    if kind == "tool_result":
        return ToolResultEvent(tool_call_id=o.typed("tool_call_id", str), tool_name=o.typed("tool_name", str),
                               outcome=o.typed("outcome", str), content=o.get("content", None))
    if kind == "input":
        return InputEvent(input_id=o.typed("input_id", str), source=o.typed("source", str),
                          content=o.typed("content", (str, dict)), metadata=o.get("metadata", None))
    if kind == "extension":
        return ExtensionEvent(kind=o.typed("kind", str), schema_version=o.typed("schema_version", str),
                              payload=o.get("payload", None))
    if kind == "observation":
        return ObservationEvent(name=o.typed("name", str), value=o.get("value", None))
    raise DecodeError(f"unknown payload type {kind!r}")


def _deferred_call_from(o: _Obj) -> DeferredToolCall:
    return DeferredToolCall(tool_call_id=o.typed("tool_call_id", str), tool_name=o.typed("tool_name", str),
                            args=o.get("args", None))


def _deferred_list(o: _Obj, key: str) -> tuple[DeferredToolCall, ...]:
    items = o.typed(key, list, [])
    return tuple(_deferred_call_from(_Obj(x, f"{o.path}.{key}[{i}]")) for i, x in enumerate(items))


def _result_from(o: _Obj) -> RunResult:
    usage = o.opt_obj("usage")
    failure = o.opt_obj("failure")
    deferred = o.opt_obj("deferred")
    return RunResult(
        status=o.typed("status", str),
        output=o.get("output", None),
        usage=None if usage is None else Usage(
            input_tokens=usage.get("input_tokens", None),
            output_tokens=usage.get("output_tokens", None),
            cache_read_tokens=usage.get("cache_read_tokens", None),
            reasoning_tokens=usage.get("reasoning_tokens", None),
        ),
        failure=None if failure is None else Failure(code=failure.typed("code", str),
                                                     message=failure.typed("message", str)),
        deferred=None if deferred is None else Deferred(
            calls=_deferred_list(deferred, "calls"), approvals=_deferred_list(deferred, "approvals")
        ),
    )


def _datetime_from(o: _Obj, key: str) -> datetime:
    text = o.typed(key, str)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise DecodeError(f"field {key} is not an ISO 8601 datetime: {text!r}") from None
    if value.utcoffset() is None:
        raise DecodeError(f"field {key} has no timezone offset: {text!r}")
    return value


def from_json(data: Any, *, migrations: Mapping[int, Migration] | None = None,
              line: int | None = None) -> HarnessStreamEvent:
    """Decode one wire JSON object.

    ``migrations`` maps an older version number to a function that upgrades
    an object of that version to the next version; they are chained until the
    object is current. Raises DecodeError (a ValueError) naming ``line`` for
    anything that is not a valid current item.
    """
    try:
        o = _Obj(data, "")
        version = o.typed("v", int)
        seen = set()
        while version != WIRE_VERSION:
            migrate = (migrations or {}).get(version)
            if migrate is None or version in seen:
                raise DecodeError(f"unknown wire version {version} (this release reads v{WIRE_VERSION})")
            seen.add(version)
            o = _Obj(migrate(dict(o.data)), "")
            version = o.typed("v", int)
        kind = o.typed("kind", str)
        head = {
            "thread_id": o.typed("thread_id", str),
            "run_id": o.typed("run_id", str),
            "sequence": o.typed("sequence", int),
            "occurred_at": _datetime_from(o, "occurred_at"),
        }
        if kind == "event":
            return HarnessEvent(**head, event=_payload_from(o.obj("event")))
        if kind == "result":
            return HarnessRunResultEvent(**head, result=_result_from(o.obj("result")))
        raise DecodeError(f"unknown kind {kind!r} (expected 'event' or 'result')")
    except DecodeError as e:
        if e.line is None and line is not None:
            raise DecodeError(e.reason, line) from None
        raise
    except (TypeError, ValueError) as e:
        raise DecodeError(f"invalid item: {e}", line) from None


def decode(text: str | bytes, *, migrations: Mapping[int, Migration] | None = None,
           line: int | None = None) -> HarnessStreamEvent:
    """Decode one wire line; raises DecodeError naming ``line`` on any fault."""
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"decode() takes str or bytes, not {type(text).__name__}")
    try:
        data = _json.loads(text)
    except ValueError as e:
        raise DecodeError(f"malformed JSON: {e}", line) from None
    return from_json(data, migrations=migrations, line=line)


# -- AG-UI output -------------------------------------------------------------------
# The two forms AG-UI transports use: one JSON object per line, and Server-Sent
# Events frames. Both carry the camelCase wire names that AG-UI clients read.

def agui_to_json(event: Any) -> str:
    """One AG-UI event as compact JSON with camelCase wire names."""
    return event.model_dump_json(by_alias=True)


def sse_frame(event: Any, *, event_id: str | int | None = None) -> str:
    """One Server-Sent Events frame (``id:`` line when given, ``data:`` line,
    blank line) for an AG-UI event."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}data: {agui_to_json(event)}\n\n"
