# The a13n-harness adapter: its stream items to source items and back.
#
# ``from_a13n`` turns an item that an a13n-harness 0.21 Run yields (a
# ``HarnessEvent`` or the terminal ``HarnessRunResultEvent``, forwarded child
# items included) into the source item of this library; ``to_a13n`` rebuilds
# the a13n-harness object. The pair is lossless for every item of a real Run:
# ``to_a13n(decode(encode(from_a13n(x))))`` equals ``x`` (``a13n_equal``,
# since a ``HarnessRunResult`` compares by identity).
#
# How each value crosses:
#   - the classes the projection reads (parts, deltas, tool calls and results,
#     inputs, extensions, the result's status, usage, failure and deferred
#     calls) map field by field onto the typed source model;
#   - nested values the projection never reads are kept as the JSON that
#     pydantic itself writes for their exact type and rebuilt by the same
#     type's validator: provider details, citations, metadata, enqueued
#     messages, the HarnessState, usage records, the message history;
#   - binary data stays bytes (``BinaryContent``); other multimodal items
#     become ``MediaContent`` with pydantic's JSON;
#   - a part, delta or event of a class this release does not model (or a
#     subclass of one it does: a typed tool part) becomes ``UnknownPart`` /
#     ``UnknownDelta`` / ``UnknownEvent``, a capability event other than an
#     input a ``CapabilityEvent``: its kind and pydantic's JSON, rebuilt by
#     pydantic-ai's own discriminated unions;
#   - a completed Run's output is ``output_json()`` (the output type's own
#     JSON form); ``to_a13n(..., output_type=T)`` validates it back into a T
#     and gives the result T's adapter, without it the output stays JSON.
#   - ``all_messages()`` / ``new_messages()`` of a result need its message
#     history: it is kept in ``RunResult.history`` and handed back to
#     ``HarnessRunResult``'s own (private) constructor arguments, the only way
#     a rebuilt result can answer them.
#
# What cannot cross unchanged: a tool result or metadata that is a Python
# object rather than JSON or multimodal content (a pydantic model a tool
# returned, a tuple) is kept as its JSON form (what pydantic would send a
# model); ``Usage.reasoning_tokens`` (from older journals) has no place in
# a13n's ``RunUsageSummary``. The real Runs in tests/fixtures/a13n hold none
# of these.
#
# a13n-harness needs Python 3.13; this module imports it (and pydantic-ai)
# only when one of its functions is called, so ``harness_agui`` keeps working
# on 3.11 without it. Install it with ``pip install 'harness-agui[a13n]'``.

from __future__ import annotations

import copy
import dataclasses
import functools
from types import SimpleNamespace
from typing import Any

from .core._json import check_json
from .core.source import (
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
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    MediaContent,
    MessageHistory,
    ObservationEvent,
    Part,
    PartDelta,
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

__all__ = ["from_a13n", "to_a13n", "a13n_equal", "a13n_differences"]


@functools.cache
def _lib() -> SimpleNamespace:
    """a13n-harness and pydantic-ai, imported on first use, and the pydantic
    adapters built from them (after a13n-harness registered its events)."""
    try:
        import a13n_harness as a13n  # type: ignore[import-not-found, unused-ignore]
        import pydantic_ai.messages as pai  # type: ignore[import-not-found, unused-ignore]
        from a13n_harness.tools.deferred import (  # type: ignore[import-not-found, unused-ignore]
            DeferredToolCall as A13nDeferredToolCall,
        )
        from a13n_harness.tools.deferred import (  # type: ignore[import-not-found, unused-ignore]
            DeferredToolRequests as A13nDeferredToolRequests,
        )
        from a13n_harness.usage import (  # type: ignore[import-not-found, unused-ignore]
            ModelUsageRecord,
            ProviderUsageRecord,
            RunUsageSummary,
        )
        from pydantic import TypeAdapter
        from pydantic_ai._deferred import (  # type: ignore[import-not-found, unused-ignore]
            DeferredToolRequests as PaiDeferredToolRequests,
        )
    except ImportError as e:
        raise ImportError(
            "harness_agui.a13n needs a13n-harness (Python 3.13+): pip install 'harness-agui[a13n]'"
        ) from e
    return SimpleNamespace(
        a13n=a13n,
        pai=pai,
        TypeAdapter=TypeAdapter,
        A13nDeferredToolCall=A13nDeferredToolCall,
        A13nDeferredToolRequests=A13nDeferredToolRequests,
        PaiDeferredToolRequests=PaiDeferredToolRequests,
        ModelUsageRecord=ModelUsageRecord,
        ProviderUsageRecord=ProviderUsageRecord,
        RunUsageSummary=RunUsageSummary,
        events=TypeAdapter(pai.AgentStreamEvent),
        parts=TypeAdapter(pai.ModelResponsePart),
        deltas=TypeAdapter(pai.ModelResponsePartDelta),
        messages=TypeAdapter(tuple[pai.ModelMessage, ...]),
        request_parts=TypeAdapter(tuple[pai.ModelRequestPart, ...]),
        citations=TypeAdapter(list[pai.Citation]),
        user_content=TypeAdapter(pai.UserContent),
        rich=(*pai.MULTI_MODAL_CONTENT_TYPES, pai.TextContent, pai.CachePoint),
        tool_call_classes={pai.ToolCallPart: False, pai.NativeToolCallPart: True},
    )


# -- a13n-harness to source items --------------------------------------------------------------

def from_a13n(item: Any) -> HarnessStreamEvent:
    """The source item of an a13n-harness stream item.

    Raises TypeError for anything that is not an a13n ``HarnessEvent`` or
    ``HarnessRunResultEvent``, ValueError for a value the source model
    refuses (it names the field), ImportError without a13n-harness.
    """
    lib = _lib()
    head = {"thread_id": item.thread_id, "run_id": item.run_id, "sequence": item.sequence,
            "occurred_at": item.occurred_at} if isinstance(item, (lib.a13n.HarnessEvent,
                                                                   lib.a13n.HarnessRunResultEvent)) else None
    if isinstance(item, lib.a13n.HarnessEvent):
        return HarnessEvent(**head, event=_payload_from(lib, item.event))  # type: ignore[arg-type]
    if isinstance(item, lib.a13n.HarnessRunResultEvent):
        return HarnessRunResultEvent(**head, result=_result_from(lib, item.result))  # type: ignore[arg-type]
    raise TypeError(f"from_a13n() takes an a13n-harness HarnessEvent or HarnessRunResultEvent, "
                    f"not {type(item).__name__}")


def _json(value: Any, what: str) -> Any:
    """A detached JSON copy of ``value``; a Python value that is not JSON
    becomes pydantic's JSON form of it."""
    try:
        check_json(value, what)
    except TypeError:
        import pydantic_core

        value = pydantic_core.to_jsonable_python(value)
        check_json(value, what)
        return value
    return copy.deepcopy(value)


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


def _payload_from(lib: SimpleNamespace, ev: Any) -> Payload:
    pai, kind = lib.pai, type(ev)
    if kind is pai.PartStartEvent:
        return PartStartEvent(index=ev.index, part=_part_from(lib, ev.part), previous_part_kind=ev.previous_part_kind)
    if kind is pai.PartDeltaEvent:
        return PartDeltaEvent(index=ev.index, delta=_delta_from(lib, ev.delta))
    if kind is pai.PartEndEvent:
        return PartEndEvent(index=ev.index, part=_part_from(lib, ev.part), next_part_kind=ev.next_part_kind)
    if kind is pai.FinalResultEvent:
        return FinalResultEvent(tool_name=ev.tool_name, tool_call_id=ev.tool_call_id)
    if kind in (pai.FunctionToolCallEvent, pai.OutputToolCallEvent) and type(ev.part) is pai.ToolCallPart:
        return ToolCallEvent(part=_tool_call_from(lib, ev.part), args_valid=ev.args_valid,
                             output=kind is pai.OutputToolCallEvent)
    if kind in (pai.FunctionToolResultEvent, pai.OutputToolResultEvent) and type(ev.part) is pai.ToolReturnPart:
        part = ev.part
        user = getattr(ev, "content", None)
        return ToolResultEvent(
            tool_call_id=part.tool_call_id, tool_name=part.tool_name, outcome=part.outcome,
            content=_content_from(lib, part.content, "ToolResultEvent.content"), tool_kind=part.tool_kind,
            metadata=_json(part.metadata, "ToolResultEvent.metadata"), timestamp=part.timestamp,
            retry=None if part.retry is None else RetryInfo(cause=part.retry.cause, attempt=part.retry.attempt,
                                                            max_retries=part.retry.max_retries),
            user_content=None if user is None else _content_from(lib, user, "ToolResultEvent.user_content"),
            output=kind is pai.OutputToolResultEvent)
    if kind is pai.DeferredToolRequestsEvent and type(ev.requests) is lib.PaiDeferredToolRequests and all(
            type(c) is pai.ToolCallPart for c in (*ev.requests.calls, *ev.requests.approvals)):
        r = ev.requests
        return DeferredToolRequestsEvent(calls=tuple(_tool_call_from(lib, c) for c in r.calls),
                                         approvals=tuple(_tool_call_from(lib, c) for c in r.approvals),
                                         metadata=_json(r.metadata, "DeferredToolRequestsEvent.metadata"))
    if kind is pai.EnqueuedMessagesEvent:
        return EnqueuedMessagesEvent(enqueue_id=ev.enqueue_id,
                                     messages=lib.messages.dump_python(tuple(ev.messages), mode="json"),
                                     parts=lib.request_parts.dump_python(tuple(ev.parts), mode="json"))
    if kind in (lib.a13n.InputTextEvent, lib.a13n.InputMediaEvent):
        return InputEvent(input_id=ev.input_id, source=ev.source, content=_json(ev.content, "InputEvent.content"),
                          metadata=ev.metadata.model_dump(mode="json"), capability_id=ev.capability_id,
                          tool_call_id=ev.tool_call_id, tool_name=ev.tool_name)
    if kind is lib.a13n.HarnessExtensionEvent:
        return ExtensionEvent(kind=ev.kind, schema_version=ev.schema_version,
                              payload=_json(ev.payload, "ExtensionEvent.payload"))
    if isinstance(ev, pai.CapabilityEvent):
        data = lib.events.dump_python(ev, mode="json")
        return CapabilityEvent(kind=ev.kind, capability_id=ev.capability_id, tool_call_id=ev.tool_call_id,
                               tool_name=ev.tool_name,
                               data=_without(data, "kind", "capability_id", "tool_call_id", "tool_name", "event_kind"))
    data = lib.events.dump_python(ev, mode="json")
    return UnknownEvent(event_kind=data["event_kind"], data=_without(data, "event_kind"))


def _tool_call_from(lib: SimpleNamespace, part: Any) -> ToolCallPart:
    return ToolCallPart(tool_name=part.tool_name, args=_json(part.args, "ToolCallPart.args"),
                        tool_call_id=part.tool_call_id, tool_kind=part.tool_kind, id=part.id,
                        provider_name=part.provider_name,
                        provider_details=_json(part.provider_details, "ToolCallPart.provider_details"),
                        builtin=lib.tool_call_classes[type(part)])


def _part_from(lib: SimpleNamespace, part: Any) -> Part:
    pai, kind = lib.pai, type(part)
    details = _json(getattr(part, "provider_details", None), "provider_details")
    if kind is pai.TextPart:
        citations = None if part.citations is None else lib.citations.dump_python(part.citations, mode="json")
        return TextPart(content=part.content, id=part.id, provider_name=part.provider_name, provider_details=details,
                        citations=citations)
    if kind is pai.ThinkingPart:
        return ThinkingPart(content=part.content, id=part.id, signature=part.signature,
                            provider_name=part.provider_name, provider_details=details)
    if kind in lib.tool_call_classes:
        return _tool_call_from(lib, part)
    if kind is pai.NativeToolReturnPart:
        return BuiltinToolReturnPart(
            tool_name=part.tool_name, content=_content_from(lib, part.content, "BuiltinToolReturnPart.content"),
            tool_call_id=part.tool_call_id, tool_kind=part.tool_kind,
            metadata=_json(part.metadata, "BuiltinToolReturnPart.metadata"), timestamp=part.timestamp,
            outcome=part.outcome, provider_name=part.provider_name, provider_details=details)
    if kind is pai.FilePart and isinstance(part.content, pai.BinaryContent):
        return FilePart(content=_binary_from(part.content), id=part.id, provider_name=part.provider_name,
                        provider_details=details)
    data = lib.parts.dump_python(part, mode="json")
    return UnknownPart(part_kind=data["part_kind"], data=_without(data, "part_kind"))


def _delta_from(lib: SimpleNamespace, delta: Any) -> PartDelta:
    pai, kind = lib.pai, type(delta)
    if kind is pai.TextPartDelta:
        citations = (None if delta.citations_delta is None
                     else lib.citations.dump_python(delta.citations_delta, mode="json"))
        return TextPartDelta(content_delta=delta.content_delta, provider_name=delta.provider_name,
                             provider_details=_json(delta.provider_details, "TextPartDelta.provider_details"),
                             citations_delta=citations)
    if kind is pai.ThinkingPartDelta and not callable(delta.provider_details):
        return ThinkingPartDelta(content_delta=delta.content_delta, signature_delta=delta.signature_delta,
                                 provider_name=delta.provider_name,
                                 provider_details=_json(delta.provider_details, "ThinkingPartDelta.provider_details"))
    if kind is pai.ToolCallPartDelta:
        return ToolCallPartDelta(tool_name_delta=delta.tool_name_delta,
                                 args_delta=_json(delta.args_delta, "ToolCallPartDelta.args_delta"),
                                 tool_call_id=delta.tool_call_id, provider_name=delta.provider_name,
                                 provider_details=_json(delta.provider_details, "ToolCallPartDelta.provider_details"))
    data = lib.deltas.dump_python(delta, mode="json")
    return UnknownDelta(part_delta_kind=data["part_delta_kind"], data=_without(data, "part_delta_kind"))


def _binary_from(value: Any) -> BinaryContent:
    return BinaryContent(data=bytes(value.data), media_type=value.media_type, identifier=value.identifier,
                         vendor_metadata=_json(value.vendor_metadata, "BinaryContent.vendor_metadata"))


def _item_from(lib: SimpleNamespace, value: Any, what: str) -> Any:
    if isinstance(value, lib.pai.BinaryContent):
        return _binary_from(value)
    if isinstance(value, lib.rich):
        data = lib.user_content.dump_python(value, mode="json")
        return MediaContent(kind=data["kind"], data=_without(data, "kind"))
    return _json(value, what)


def _content_from(lib: SimpleNamespace, value: Any, what: str) -> ToolContent:
    """Tool or user content: JSON stays JSON; a binary or media item, or a
    list holding one, becomes the typed form."""
    if isinstance(value, (list, tuple)) and any(isinstance(x, lib.rich) for x in value):
        return ContentList(items=tuple(_item_from(lib, x, what) for x in value))
    return _item_from(lib, value, what)  # type: ignore[no-any-return]


def _result_from(lib: SimpleNamespace, r: Any) -> RunResult:
    messages = r.all_messages()
    u = r.usage
    usage = Usage(
        input_tokens=u.input_tokens, output_tokens=u.output_tokens, cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens, input_audio_tokens=u.input_audio_tokens,
        cache_audio_read_tokens=u.cache_audio_read_tokens, output_audio_tokens=u.output_audio_tokens,
        audio_seconds=str(u.audio_seconds), cost=None if u.cost is None else str(u.cost), details=dict(u.details),
        requests=u.requests, tool_calls=u.tool_calls, provider_receipts=u.provider_receipts,
        unknown_cost_records=u.unknown_cost_records, incomplete_requests=u.incomplete_requests,
        model_usage_coverage=u.model_usage_coverage)
    f = r.failure
    failure = None if f is None else Failure(code=f.code, message=f.message, details=f.details,
                                             retry_hint=f.retry_hint)
    d = r.deferred
    deferred = None if d is None else Deferred(
        calls=tuple(_deferred_call_from(lib, c) for c in d.calls),
        approvals=tuple(_deferred_call_from(lib, c) for c in d.approvals),
        metadata=_json(d.metadata, "Deferred.metadata"))
    return RunResult(
        status=r.status,
        output=r.output_json() if r.status == "completed" else None,
        usage=usage,
        failure=failure,
        deferred=deferred,
        suspend_reason=r.suspend_reason,
        state=None if r.state is None else r.state.model_dump(mode="json", by_alias=True),
        usage_records=[record.model_dump(mode="json") for record in r.usage_records],
        history=MessageHistory(messages=lib.messages.dump_python(messages, mode="json"),
                               new_message_index=len(messages) - len(r.new_messages())),
    )


def _deferred_call_from(lib: SimpleNamespace, call: Any) -> DeferredToolCall:
    target = _tool_call_from(lib, call.target_call)
    model = _tool_call_from(lib, call.model_call)
    plain = ToolCallPart(tool_name=target.tool_name, args=target.args, tool_call_id=target.tool_call_id)
    return DeferredToolCall(tool_call_id=target.tool_call_id, tool_name=target.tool_name, args=target.args,
                            target_identity=call.target_identity, target_call=None if target == plain else target,
                            model_call=None if model == target else model)


# -- source items to a13n-harness --------------------------------------------------------------

def to_a13n(item: HarnessStreamEvent, *, output_type: Any = None) -> Any:
    """The a13n-harness stream item a source item describes.

    ``output_type`` is the Run's output type (a pydantic model, say): a
    completed result's output is validated into it and the result gets its
    adapter, as the Harness built it. Without it the output stays the JSON
    value (what ``output_json()`` gives either way).

    Raises TypeError for anything but a source item, ValueError (pydantic's
    ValidationError) for a value a13n-harness refuses, ImportError without
    a13n-harness.
    """
    lib = _lib()
    if isinstance(item, HarnessEvent):
        return lib.a13n.HarnessEvent(thread_id=item.thread_id, run_id=item.run_id, sequence=item.sequence,
                                     occurred_at=item.occurred_at, event=_payload_to(lib, item.event))
    if isinstance(item, HarnessRunResultEvent):
        return lib.a13n.HarnessRunResultEvent(thread_id=item.thread_id, run_id=item.run_id, sequence=item.sequence,
                                              occurred_at=item.occurred_at,
                                              result=_result_to(lib, item, output_type))
    raise TypeError(f"to_a13n() takes a HarnessEvent or HarnessRunResultEvent, not {type(item).__name__}")


def _payload_to(lib: SimpleNamespace, p: Payload) -> Any:
    pai, a13n = lib.pai, lib.a13n
    match p:
        case PartStartEvent(index=index, part=part, previous_part_kind=previous):
            return pai.PartStartEvent(index=index, part=_part_to(lib, part), previous_part_kind=previous)
        case PartDeltaEvent(index=index, delta=delta):
            return pai.PartDeltaEvent(index=index, delta=_delta_to(lib, delta))
        case PartEndEvent(index=index, part=part, next_part_kind=following):
            return pai.PartEndEvent(index=index, part=_part_to(lib, part), next_part_kind=following)
        case FinalResultEvent(tool_name=name, tool_call_id=call_id):
            return pai.FinalResultEvent(tool_name=name, tool_call_id=call_id)
        case ToolCallEvent(part=part, args_valid=valid, output=output):
            cls = pai.OutputToolCallEvent if output else pai.FunctionToolCallEvent
            return cls(_tool_call_to(lib, part), args_valid=valid)
        case ToolResultEvent():
            retry = None if p.retry is None else pai.RetryInfo(p.retry.cause, attempt=p.retry.attempt,
                                                               max_retries=p.retry.max_retries)
            stamp = {} if p.timestamp is None else {"timestamp": p.timestamp}  # else the part stamps itself
            part = pai.ToolReturnPart(tool_name=p.tool_name, content=_content_to(lib, p.content),
                                      tool_call_id=p.tool_call_id, tool_kind=p.tool_kind,
                                      metadata=copy.deepcopy(p.metadata), outcome=p.outcome, retry=retry, **stamp)
            if p.output:
                return pai.OutputToolResultEvent(part)
            user = None if p.user_content is None else _content_to(lib, p.user_content)
            return pai.FunctionToolResultEvent(part, content=user)
        case DeferredToolRequestsEvent(calls=calls, approvals=approvals, metadata=metadata):
            return pai.DeferredToolRequestsEvent(lib.PaiDeferredToolRequests(
                calls=[_tool_call_to(lib, c) for c in calls], approvals=[_tool_call_to(lib, c) for c in approvals],
                metadata=copy.deepcopy(metadata)))
        case EnqueuedMessagesEvent(enqueue_id=enqueue_id, messages=messages, parts=parts):
            return pai.EnqueuedMessagesEvent(enqueue_id=enqueue_id, messages=lib.messages.validate_python(messages),
                                             parts=lib.request_parts.validate_python(parts))
        case InputEvent():
            cls = a13n.InputTextEvent if isinstance(p.content, str) else a13n.InputMediaEvent
            extra = {} if p.metadata is None else {"metadata": a13n.ContentMetadata.model_validate(p.metadata)}
            return cls(capability_id=p.capability_id, tool_call_id=p.tool_call_id, tool_name=p.tool_name,
                       input_id=p.input_id, source=p.source, content=copy.deepcopy(p.content), **extra)
        case ExtensionEvent(kind=kind, schema_version=version, payload=payload):
            return a13n.HarnessExtensionEvent(kind=kind, schema_version=version, payload=copy.deepcopy(payload))
        case CapabilityEvent():
            return lib.events.validate_python({**p.data, "kind": p.kind, "capability_id": p.capability_id,
                                               "tool_call_id": p.tool_call_id, "tool_name": p.tool_name,
                                               "event_kind": "capability"})
        case UnknownEvent(event_kind=kind, data=data):
            return lib.events.validate_python({**data, "event_kind": kind})
        case ObservationEvent():
            raise ValueError("an ObservationEvent has no a13n-harness counterpart (a13n-harness never emits one)")
    raise TypeError(f"not a Harness payload: {type(p).__name__}")  # pragma: no cover - validated by HarnessEvent


def _tool_call_to(lib: SimpleNamespace, part: ToolCallPart) -> Any:
    cls = lib.pai.NativeToolCallPart if part.builtin else lib.pai.ToolCallPart
    return cls(part.tool_name, copy.deepcopy(part.args), part.tool_call_id, tool_kind=part.tool_kind, id=part.id,
               provider_name=part.provider_name, provider_details=copy.deepcopy(part.provider_details))


def _part_to(lib: SimpleNamespace, part: Part) -> Any:
    pai = lib.pai
    match part:
        case TextPart():
            citations = None if part.citations is None else lib.citations.validate_python(part.citations)
            return pai.TextPart(part.content, id=part.id, provider_name=part.provider_name,
                                provider_details=copy.deepcopy(part.provider_details), citations=citations)
        case ThinkingPart():
            return pai.ThinkingPart(part.content, id=part.id, signature=part.signature,
                                    provider_name=part.provider_name,
                                    provider_details=copy.deepcopy(part.provider_details))
        case ToolCallPart():
            return _tool_call_to(lib, part)
        case BuiltinToolReturnPart():
            kwargs = {} if part.timestamp is None else {"timestamp": part.timestamp}
            return pai.NativeToolReturnPart(part.tool_name, _content_to(lib, part.content), part.tool_call_id,
                                            tool_kind=part.tool_kind, metadata=copy.deepcopy(part.metadata),
                                            outcome=part.outcome, provider_name=part.provider_name,
                                            provider_details=copy.deepcopy(part.provider_details), **kwargs)
        case FilePart():
            return pai.FilePart(_binary_to(lib, part.content), id=part.id, provider_name=part.provider_name,
                                provider_details=copy.deepcopy(part.provider_details))
        case UnknownPart(part_kind=kind, data=data):
            return lib.parts.validate_python({**data, "part_kind": kind})
    raise TypeError(f"not a part: {type(part).__name__}")  # pragma: no cover


def _delta_to(lib: SimpleNamespace, delta: PartDelta) -> Any:
    pai = lib.pai
    match delta:
        case TextPartDelta():
            citations = (None if delta.citations_delta is None
                         else lib.citations.validate_python(delta.citations_delta))
            return pai.TextPartDelta(delta.content_delta, provider_name=delta.provider_name,
                                     provider_details=copy.deepcopy(delta.provider_details),
                                     citations_delta=citations)
        case ThinkingPartDelta():
            return pai.ThinkingPartDelta(content_delta=delta.content_delta, signature_delta=delta.signature_delta,
                                         provider_name=delta.provider_name,
                                         provider_details=copy.deepcopy(delta.provider_details))
        case ToolCallPartDelta():
            return pai.ToolCallPartDelta(tool_name_delta=delta.tool_name_delta,
                                         args_delta=copy.deepcopy(delta.args_delta), tool_call_id=delta.tool_call_id,
                                         provider_name=delta.provider_name,
                                         provider_details=copy.deepcopy(delta.provider_details))
        case UnknownDelta(part_delta_kind=kind, data=data):
            return lib.deltas.validate_python({**data, "part_delta_kind": kind})
    raise TypeError(f"not a part delta: {type(delta).__name__}")  # pragma: no cover


def _binary_to(lib: SimpleNamespace, value: BinaryContent) -> Any:
    content = lib.pai.BinaryContent(value.data, media_type=value.media_type, identifier=value.identifier,
                                    vendor_metadata=copy.deepcopy(value.vendor_metadata))
    return lib.pai.BinaryContent.narrow_type(content)  # an image comes back a BinaryImage, as pydantic-ai reads it


def _content_to(lib: SimpleNamespace, content: ToolContent) -> Any:
    if isinstance(content, ContentList):
        return [_content_to(lib, x) for x in content.items]
    if isinstance(content, BinaryContent):
        return _binary_to(lib, content)
    if isinstance(content, MediaContent):
        return lib.user_content.validate_python({**content.data, "kind": content.kind})
    return copy.deepcopy(content)


def _result_to(lib: SimpleNamespace, item: HarnessRunResultEvent, output_type: Any) -> Any:
    a13n, r = lib.a13n, item.result
    adapter = None if output_type is None else lib.TypeAdapter(output_type)
    output = None
    if r.status == "completed":
        output = copy.deepcopy(r.output) if adapter is None else adapter.validate_python(r.output)
    u = r.usage or Usage()
    counts = {name: getattr(u, name) for name in (
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "input_audio_tokens",
        "cache_audio_read_tokens", "output_audio_tokens", "audio_seconds", "cost", "details", "requests",
        "tool_calls", "provider_receipts", "unknown_cost_records", "incomplete_requests", "model_usage_coverage")}
    usage = lib.RunUsageSummary(**{k: v for k, v in counts.items() if v is not None})
    f = r.failure
    failure = None if f is None else a13n.SafeFailure(
        code=f.code, message=f.message, details=f.details or {}, **({} if f.retry_hint is None else
                                                                     {"retry_hint": f.retry_hint}))
    d = r.deferred
    deferred = None if d is None else lib.A13nDeferredToolRequests(
        calls=[_deferred_call_to(lib, c) for c in d.calls], approvals=[_deferred_call_to(lib, c) for c in d.approvals],
        metadata=copy.deepcopy(d.metadata) if d.metadata is not None else {})
    records = [(lib.ProviderUsageRecord if isinstance(rec, dict) and rec.get("kind") == "provider"
                else lib.ModelUsageRecord).model_validate(rec) for rec in (r.usage_records or ())]
    history = r.history
    return a13n.HarnessRunResult(
        thread_id=item.thread_id, run_id=item.run_id, status=r.status, output=output,
        state=None if r.state is None else a13n.HarnessState.model_validate(r.state),
        usage=usage, usage_records=records, failure=failure, suspend_reason=r.suspend_reason, deferred=deferred,
        _messages=() if history is None else lib.messages.validate_python(history.messages),
        _new_message_index=0 if history is None else history.new_message_index,
        _output_adapter=adapter,
    )


def _deferred_call_to(lib: SimpleNamespace, call: DeferredToolCall) -> Any:
    target = call.target_call or ToolCallPart(tool_name=call.tool_name, args=call.args,
                                              tool_call_id=call.tool_call_id)
    return lib.A13nDeferredToolCall(model_call=_tool_call_to(lib, call.model_call or target),
                                    target_call=_tool_call_to(lib, target),
                                    target_identity=call.target_identity or "")


# -- equality -----------------------------------------------------------------------------------

def a13n_differences(a: Any, b: Any) -> list[str]:
    """How two a13n-harness stream items differ, field by field (empty when
    they are equal). A ``HarnessRunResult`` compares by identity, so its
    public fields are compared instead: status, output (and ``output_json()``
    of a completed Run), state, usage, usage records, failure, suspension,
    deferred calls, ``all_messages()`` and ``new_messages()``.

    One difference is not counted: an image held as a plain pydantic-ai
    ``BinaryContent`` (a tool may return one) equals the same image as a
    ``BinaryImage``, which is what ``to_a13n`` builds. pydantic-ai's own JSON
    form (the message history, the HarnessState) does not tell them apart
    either and reads both back as a ``BinaryImage``."""
    lib = _lib()
    if type(a) is not type(b):
        return [f"types differ: {type(a).__name__} and {type(b).__name__}"]
    if not isinstance(a, (lib.a13n.HarnessEvent, lib.a13n.HarnessRunResultEvent)):
        return [] if a == b else [f"{a!r} != {b!r}"]
    out = [f"{name}: {getattr(a, name)!r} != {getattr(b, name)!r}"
           for name in ("thread_id", "run_id", "sequence", "occurred_at") if getattr(a, name) != getattr(b, name)]
    if a.occurred_at.utcoffset() != b.occurred_at.utcoffset():
        out.append(f"occurred_at offset: {a.occurred_at.utcoffset()} != {b.occurred_at.utcoffset()}")
    if isinstance(a, lib.a13n.HarnessEvent):
        if a.event != b.event and _narrowed(lib, a.event) != _narrowed(lib, b.event):
            out.append(f"event: {a.event!r} != {b.event!r}")
        return out
    ra, rb = a.result, b.result
    for name in ("thread_id", "run_id", "status", "output", "state", "usage", "usage_records", "failure",
                 "suspend_reason", "deferred"):
        va, vb = getattr(ra, name), getattr(rb, name)
        if va != vb or type(va) is not type(vb):
            out.append(f"result.{name}: {va!r} != {vb!r}")
    for name in ("all_messages", "new_messages"):
        if getattr(ra, name)() != getattr(rb, name)():
            out.append(f"result.{name}() differ")
    if ra.status == "completed" and ra.output_json() != rb.output_json():
        out.append(f"result.output_json(): {ra.output_json()!r} != {rb.output_json()!r}")
    return out


def _narrowed(lib: SimpleNamespace, value: Any) -> Any:
    """``value`` with every plain ``BinaryContent`` image as a ``BinaryImage``
    (a copy where anything changes)."""
    if type(value) is lib.pai.BinaryContent:
        return lib.pai.BinaryContent.narrow_type(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_narrowed(lib, x) for x in value)
    if isinstance(value, dict):
        return {k: _narrowed(lib, v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        twin = copy.copy(value)
        for f in dataclasses.fields(value):
            object.__setattr__(twin, f.name, _narrowed(lib, getattr(value, f.name)))
        return twin
    return value


def a13n_equal(a: Any, b: Any) -> bool:
    """Whether two a13n-harness stream items are equal (see ``a13n_differences``)."""
    return not a13n_differences(a, b)
