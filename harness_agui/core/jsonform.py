# The JSON form of source values: plain dicts with the wire format's field
# names. The wire codec writes it behind its envelope, and the reducer puts it
# into CUSTOM events, so a CUSTOM value carries exactly what a journal line
# would.

from __future__ import annotations

from typing import Any

from .source import (
    DeferredToolCall,
    ExtensionEvent,
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
)

__all__ = ["payload_to_json", "result_to_json", "deferred_call_to_json"]


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


def deferred_call_to_json(call: DeferredToolCall) -> dict[str, Any]:
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
            "calls": [deferred_call_to_json(c) for c in result.deferred.calls],
            "approvals": [deferred_call_to_json(c) for c in result.deferred.approvals],
        }
    return out


