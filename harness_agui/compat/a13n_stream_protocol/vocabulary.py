# The a13n-stream-protocol 0.21 vocabulary: the decisions of ``core.vocabulary``
# as that package makes them, for this library's reducer (the machinery of
# ``core.reduce`` is not restated here: routing, order, the subagent
# lifecycle, the processor applied once per event and the log are its).
#
# What a Run's items become (D1-D28 of the phase 1 notes, in short):
#   - RUN_STARTED (protocol version "1.0") is the root's lifecycle
#     run_started notice and nothing else; a child's is no event; a Run
#     without one has none;
#   - parts keep a cursor per part index, in the order the indexes were
#     opened: a text part's message id is its own id or
#     ``<run>:request-<n>:part-<i>:text``, a thinking part's always
#     ``...:reasoning``; a delta or an end without a start opens the message;
#     an end emits the final content only when nothing was emitted before,
#     and the signature likewise; a new model request closes nothing, and a
#     start at an open index replaces its cursor without an END; a tool call
#     is emitted whole at its end (START, the args as one ARGS, END) and
#     streams nothing before;
#   - a part change, a delta or a result without a standard event, every
#     other native event, a Harness extension (``a13n.harness.<kind>``), a
#     capability event (its own kind) and an input (``a13n.input.<source>``,
#     with the input's ContentMetadata as the event's metadata) is one CUSTOM
#     whose value is the item's correlation and ``event``: pydantic's JSON
#     of the native object;
#   - a successful tool result is TOOL_CALL_RESULT with the public content of
#     its execution value (never the model-only supplements); any other
#     outcome is a CUSTOM with the public value;
#   - the terminal result closes the Run's open text and reasoning messages
#     only (children are left as they are), and carries a ``raw_event`` with
#     the correlation and the status; interrupts list approvals, then calls;
#   - ids are never renamed; a delegation end closes the child's messages and
#     gives SUBAGENT_FINISHED (no result) or SUBAGENT_ERROR "Inline delegation
#     <status>.";
#   - the processor contract is a13n-stream-protocol's (``process``), and a
#     processed CUSTOM larger than 48 KiB travels as ``a13n.stream.fragment``
#     frames (``frame``).
#
# The native object. The reducer holds this library's source items, which
# carry everything a real Run's items hold; the JSON a13n-stream-protocol
# publishes is pydantic's dump of the a13n-harness object itself (its
# classes' field order, serializers and aliases, a Python object a tool
# returned), which the source model keeps only as JSON. So this vocabulary
# renders from the native item: the compat observer, which receives native
# items, projects each under this vocabulary bound to it (``bound``: the
# native item in hand, passed as an argument), and any other caller (a replay
# from a journal, a Host's own observer) gets ``to_a13n`` of the source item,
# which is the same object for every item of a real Run.
#
# a13n-stream-protocol 0.5 (``VOCABULARY_05``, named ``NAME_05``; a13n-harness
# 0.5) makes the same decisions but for these (``Release``): a reasoning
# message's id is its part's own id where it has one; a builtin tool call's
# start makes no cursor; a text delta without content still opens its message
# and gives an empty TEXT_MESSAGE_CONTENT; the JSON of a native event in a
# CUSTOM is pydantic's JSON of any value (``TypeAdapter(Any)``), a capability
# event's included (an unknown one's by ``CapabilityEvent``'s adapter); a
# completed Run's output is that JSON of the output, strictly JSON or omitted;
# an interrupt is the deferred ToolCallPart itself (id and tool call id both its
# id, its own tool name); and tool results follow ``content.RELEASE_05``.
#
# The per-Run state is the reducer's ``RunState``: its ledger's
# ``request_index`` (None counts as 0) and its ``parts``, one ``OpenPart`` per
# cursor in the order the cursors were made, read as a13n-stream-protocol's
# cursor: ``kind`` (text, thinking for "reasoning", tool_call),
# ``message_id`` (the cursor's id), ``streamed`` (1 once content was
# emitted), ``signature`` ("" once a signature was emitted, else None),
# ``started`` and ``tool_name`` (a tool name; ``started`` false for none).

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import Any

import attrs
import pydantic_core
from ag_ui.core import BaseEvent, CustomEvent, Event
from pydantic import JsonValue, TypeAdapter, ValidationError

from ...a13n import to_a13n
from ...core import _json
from ...core import records as ev
from ...core.custom import correlation
from ...core.fit import fits
from ...core.history import HistoryCursor
from ...core.records import Record
from ...core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent, ObservationEvent
from ...core.state import OpenPart, PartKind, ProjectionOptions, RunState, find_part
from ...core.vocabulary import Vocabulary, register
from ._base import AguiObservationError
from ._harness import natives as N
from ._harness import tool_execution_value
from .content import RELEASE_021 as CONTENT_021
from .content import RELEASE_05 as CONTENT_05
from .content import ContentRelease, public_tool_value, tool_result_content
from .fragments import FRAGMENT_EVENT_NAME, FRAME_THRESHOLD_BYTES, fragment_custom_event

__all__ = ["NAME", "NAME_05", "RELEASE_05", "RELEASE_021", "VOCABULARY", "VOCABULARY_05", "Release", "bound",
           "published", "usage_json"]

NAME = "a13n-stream-protocol/0.21"
"""The vocabulary's name (``ProjectionOptions(vocabulary=NAME)``)."""

NAME_05 = "a13n-stream-protocol/0.5"
"""The name of a13n-stream-protocol 0.5's vocabulary (a13n-harness 0.5)."""


@attrs.frozen
class Release:
    """What one a13n-stream-protocol release decides differently (see the module comment)."""

    own_reasoning_ids: bool
    builtin_call_cursor: bool
    empty_text_deltas: bool
    any_json: bool
    content: ContentRelease

# -- values -----------------------------------------------------------------------------------------

@lru_cache(maxsize=128)
def _adapter(cls: type) -> TypeAdapter[Any]:
    return TypeAdapter(cls)


_ANY = TypeAdapter(Any)
_JSON_VALUE = TypeAdapter(JsonValue)


def _dump_as(release: Release, value: Any, cls: type | None = None) -> Any:
    """The JSON of a native event as ``release`` writes it: pydantic's, by its own class's adapter (``cls``
    where given: its serializers and aliases, never a callback a field holds), or for 0.5 by the adapter of
    any value (``cls`` still names that of an unknown capability event). Raises what pydantic raises for an
    object it cannot write."""
    if release.any_json and (cls is None or cls is type(value)):
        adapter = _ANY
    else:
        adapter = _adapter(cls or type(value))
    return adapter.dump_python(value, mode="json", by_alias=True, warnings="error")


def _value(native: Any, event: Any) -> dict[str, Any]:
    return {**correlation(native), "event": event}


def _custom(ts: int, name: str, native: Any, event: Any) -> Record:
    return ev.custom(ts, name, _json.dumps(_value(native, event)))


def _pydantic_custom(ts: int, native: Any, event: Any, release: Release) -> Record:
    return _custom(ts, f"a13n.pydantic_ai.{event.event_kind}", native, _dump_as(release, event))


def _extension_custom(ts: int, native: Any, event: Any) -> Record:
    name = f"a13n.harness.{event.kind}"
    if event.kind == "tool":
        try:
            name = f"{name}.{N.ToolExtraEventPayload.model_validate(event.payload).name}"
        except ValidationError:
            pass
    return _custom(ts, name, native, event.model_dump(mode="json", by_alias=True))


def _args_text(args: Any) -> str:
    if isinstance(args, str):
        return args
    return json.dumps(pydantic_core.to_jsonable_python(args), ensure_ascii=False, separators=(",", ":"),
                      sort_keys=True)


def _tool_result(ts: int, call_id: str, content: Any) -> Record:
    if isinstance(content, str):
        return ev.tool_call_result(ts, f"{call_id}:result", call_id, content, None)  # type: ignore[arg-type]
    parts = _json.dumps([part.model_dump(mode="json", by_alias=True) for part in content])
    return ("TOOL_CALL_RESULT@full", ts, f"{call_id}:result", call_id, parts, "tool")


def usage_json(usage: Any) -> str | None:
    """The AG-UI token usage of a native RunUsageSummary as record JSON: None
    when it counted nothing; one entry, cache writes included."""
    total = usage.input_tokens + usage.output_tokens
    if total == 0 and usage.cache_read_tokens == 0 and usage.cache_write_tokens == 0:
        return None
    reasoning = usage.details.get("reasoning_tokens")
    entry = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "total_tokens": total,
             "reasoning_tokens": reasoning if isinstance(reasoning, int) else None,
             "cached_input_tokens": usage.cache_read_tokens, "cache_write_input_tokens": usage.cache_write_tokens}
    return _json.dumps([{k: v for k, v in entry.items() if v is not None}])


# -- cursors ----------------------------------------------------------------------------------------

def _cursor(index: int, kind: PartKind, part_id: str, tool_name: str | None = None, content: bool = False,
            signature: bool = False) -> OpenPart:
    return OpenPart(index, kind, part_id, streamed=1 if content else 0,
                    started=tool_name is not None or kind != "tool_call", tool_name=tool_name or "",
                    signature="" if signature else None)


def _put(parts: tuple[OpenPart, ...], part: OpenPart) -> tuple[OpenPart, ...]:
    """``parts`` with ``part`` at its index: in the place of the cursor it replaces, else last."""
    for i, p in enumerate(parts):
        if p.index == part.index:
            return parts[:i] + (part,) + parts[i + 1:]
    return parts + (part,)


def _without(parts: tuple[OpenPart, ...], index: int) -> tuple[OpenPart, ...]:
    return tuple(p for p in parts if p.index != index)


def _part_id(run_id: str, request: int, index: int, kind: str) -> str:
    return f"{run_id}:request-{request}:part-{index}:{kind}"


_KIND_CHANGED = "Pydantic part kind changed before its end event"


def _open(found: OpenPart | None, index: int, kind: PartKind, part_id: str, *,
          ending: bool = False) -> tuple[OpenPart, bool]:
    """``found`` (which must be of ``kind``, and at an end have ``part_id``), or a new cursor with ``part_id``;
    and whether it is new."""
    if found is None:
        return _cursor(index, kind, part_id), True
    if found.kind != kind:
        raise AguiObservationError(_KIND_CHANGED)
    if ending and found.message_id != part_id:
        raise AguiObservationError("Pydantic part identity changed before its end event")
    return found, False


# -- the rulebook of one Run ----------------------------------------------------------------------------

def convert(run: RunState, history: HistoryCursor, item: HarnessEvent, ts: int, out: list[Record],
            options: ProjectionOptions, *, release: Release | None = None, native: Any = None) -> RunState:
    """The records of a non-terminal item of Run ``run`` (appended to
    ``out``) and the Run's state after it, with ``history`` as its cursor."""
    if type(item.event) is ObservationEvent:  # this library's own (a13n-harness has none)
        observed = item.event
        out.append(ev.custom(ts, "a13n.harness.observation", _json.dumps(_value(item, {
            "name": observed.name, "value": observed.value}))))
        return RunState(history, run.parts, run.ledger)
    release = release or RELEASE_021
    native = to_a13n(item) if native is None else native
    source = native.event
    parts, request, ledger = run.parts, run.ledger.request_index or 0, run.ledger
    if isinstance(source, N.HarnessExtensionEvent):
        payload = source.payload
        notice = payload.get("type") if source.kind == "lifecycle" and isinstance(payload, dict) else None
        if notice == "run_started":
            # The root's (the machinery gives a child's nothing): its RUN_STARTED, in place of its CUSTOM.
            out.append(_run_started(ts, native.thread_id, native.run_id))
        else:
            index = payload.get("request_index") if notice == "model_request_started" else None
            if isinstance(index, int) and index >= 0:
                request = index  # a new request closes nothing: open parts keep their ids until they end
            out.append(_extension_custom(ts, native, source))
            ledger = ledger._replace(request_index=request)
    elif isinstance(source, N.InputTextEvent | N.InputMediaEvent):
        metadata = source.metadata.model_dump(mode="json")
        if options.show_hidden or source.metadata.display:
            name = "a13n.input.media" if isinstance(source, N.InputMediaEvent) else f"a13n.input.{source.source}"
            body = {"input_id": source.input_id, "source": source.source, "content": source.content,
                    "message_id": f"{native.run_id}:input:{native.sequence}",
                    "role": "user" if source.source in ("user", "steering") else "system"}
            out.append(("CUSTOM@full", ts, name, _json.dumps(_value(native, body)), _json.dumps(metadata)))
    elif isinstance(source, N.EnqueuedMessagesEvent):
        # Never the messages themselves: they may hold binary payloads.
        out.append(_custom(ts, "a13n.pydantic_ai.enqueued_messages", native,
                           {"event_kind": source.event_kind, "enqueue_id": source.enqueue_id}))
    elif isinstance(source, N.DeferredToolResultsEvent):
        out.append(_custom(ts, "a13n.pydantic_ai.deferred_tool_results", native, {
            "event_kind": source.event_kind, "call_ids": list(source.results.calls),
            "approval_ids": list(source.results.approvals)}))
    elif isinstance(source, N.CapabilityEvent):
        cls = N.CapabilityEvent if isinstance(source, N.UnknownCapabilityEvent) else type(source)
        out.append(_custom(ts, source.kind, native, _dump_as(release, source, cls)))
    else:
        events: list[Record] = []
        if isinstance(source, N.PartStartEvent):
            parts = _part_start(native, source, parts, request, ts, events, release)
        elif isinstance(source, N.PartDeltaEvent):
            parts = _part_delta(native, source, parts, request, ts, events, release)
        elif isinstance(source, N.PartEndEvent):
            parts = _part_end(native, source, parts, request, ts, events, release)
        elif isinstance(source, N.FunctionToolResultEvent | N.OutputToolResultEvent):
            source = _result(native, source, ts, events, release)
        out.extend(events or [_pydantic_custom(ts, native, source, release)])
    return RunState(history, parts, ledger)


def _part_start(native: Any, source: Any, parts: tuple[OpenPart, ...], request: int, ts: int,
                out: list[Record], release: Release) -> tuple[OpenPart, ...]:
    part, index = source.part, source.index
    if isinstance(part, N.TextPart):
        mid = part.id or _part_id(native.run_id, request, index, "text")
        out.append(ev.text_start(ts, mid))
        if part.content:
            out.append(ev.text_content(ts, mid, part.content))
        return _put(parts, _cursor(index, "text", mid, content=bool(part.content)))
    if isinstance(part, N.ThinkingPart):
        # 0.21 always generates it: the summary parts of one provider reasoning item share an id.
        mid = (release.own_reasoning_ids and part.id) or _part_id(native.run_id, request, index, "reasoning")
        out.append(ev.reasoning_start(ts, mid))
        if part.content:
            out.append(ev.reasoning_content(ts, mid, part.content))
        if part.signature:
            out.append(ev.reasoning_signature(ts, mid, part.signature))
        return _put(parts, _cursor(index, "thinking", mid, content=bool(part.content),
                                   signature=bool(part.signature)))
    if isinstance(part, N.ToolCallPart) or (release.builtin_call_cursor and isinstance(part, N.NativeToolCallPart)):
        # No event until its end (a CUSTOM of the start); a builtin call's start replaces any cursor too.
        return _put(parts, _cursor(index, "tool_call", part.tool_call_id, tool_name=part.tool_name))
    return parts


def _part_delta(native: Any, source: Any, parts: tuple[OpenPart, ...], request: int, ts: int,
                out: list[Record], release: Release) -> tuple[OpenPart, ...]:
    delta, index, run_id = source.delta, source.index, native.run_id
    found = find_part(parts, index)
    if isinstance(delta, N.TextPartDelta):
        if not delta.content_delta and not release.empty_text_deltas:
            return parts  # a citation-only delta: its CUSTOM
        cursor, opened = _open(found, index, "text", _part_id(run_id, request, index, "text"))
        if opened:
            out.append(ev.text_start(ts, cursor.message_id))
        out.append(ev.text_content(ts, cursor.message_id, delta.content_delta))
        return _put(parts, cursor._replace(streamed=1))
    if isinstance(delta, N.ThinkingPartDelta):
        cursor, opened = _open(found, index, "thinking", _part_id(run_id, request, index, "reasoning"))
        if opened:
            out.append(ev.reasoning_start(ts, cursor.message_id))
        if delta.content_delta:
            out.append(ev.reasoning_content(ts, cursor.message_id, delta.content_delta))
            cursor = cursor._replace(streamed=1)
        if delta.signature_delta:
            out.append(ev.reasoning_signature(ts, cursor.message_id, delta.signature_delta))
            cursor = cursor._replace(signature="")
        return _put(parts, cursor)
    if isinstance(delta, N.ToolCallPartDelta):
        if found is None:
            cursor = OpenPart(index, "tool_call", delta.tool_call_id or _part_id(run_id, request, index, "tool"),
                              started=False)
        elif found.kind != "tool_call":
            raise AguiObservationError(_KIND_CHANGED)
        elif delta.tool_call_id and delta.tool_call_id != found.message_id:
            raise AguiObservationError("Pydantic tool-call identity changed before its end event")
        else:
            cursor = found
        if delta.tool_name_delta:
            cursor = cursor._replace(tool_name=cursor.tool_name + delta.tool_name_delta, started=True)
        return _put(parts, cursor)
    return parts


def _part_end(native: Any, source: Any, parts: tuple[OpenPart, ...], request: int, ts: int,
              out: list[Record], release: Release) -> tuple[OpenPart, ...]:
    part, index, run_id = source.part, source.index, native.run_id
    found = find_part(parts, index)
    parts = _without(parts, index)  # any end settles the cursor at its index
    if isinstance(part, N.TextPart):
        mid = part.id or (found.message_id if found is not None else None) or _part_id(run_id, request, index, "text")
        cursor, opened = _open(found, index, "text", mid, ending=True)
        if opened:
            out.append(ev.text_start(ts, mid))
        if part.content and not cursor.streamed:
            out.append(ev.text_content(ts, mid, part.content))
        out.append(ev.text_end(ts, mid))
    elif isinstance(part, N.ThinkingPart):
        mid = ((release.own_reasoning_ids and part.id) or (found.message_id if found is not None else None)
               or _part_id(run_id, request, index, "reasoning"))
        cursor, opened = _open(found, index, "thinking", mid, ending=True)
        if opened:
            out.append(ev.reasoning_start(ts, mid))
        if part.content and not cursor.streamed:
            out.append(ev.reasoning_content(ts, mid, part.content))
        if part.signature and cursor.signature is None:
            out.append(ev.reasoning_signature(ts, mid, part.signature))
        out.append(ev.reasoning_end(ts, mid))
    elif isinstance(part, N.ToolCallPart):
        call_id = found.message_id if found is not None else part.tool_call_id
        _open(found, index, "tool_call", call_id, ending=True)
        out.append(ev.tool_call_start(ts, call_id, part.tool_name, None))
        if part.args is not None:
            out.append(ev.tool_call_args(ts, call_id, _args_text(part.args)))
        out.append(ev.tool_call_end(ts, call_id))
    return parts


def _result(native: Any, source: Any, ts: int, out: list[Record], release: Release) -> Any:
    """A successful result's TOOL_CALL_RESULT; for any other outcome nothing, and the event its CUSTOM
    carries: the result with the public form of its execution value, without the user content."""
    part = source.part
    if not isinstance(part, N.ToolReturnPart):
        return source
    # Only the execution value is readable: the supplements a tool returned are the model's.
    value = tool_execution_value(part.content, part.metadata)
    if part.outcome == "success":
        out.append(_tool_result(ts, part.tool_call_id, tool_result_content(value, release=release.content)))
        return source
    public = replace(source, part=replace(part, content=public_tool_value(value, release=release.content)))
    return replace(public, content=None) if isinstance(public, N.FunctionToolResultEvent) else public


# -- ends -------------------------------------------------------------------------------------------

def close(run: RunState, ts: int, out: list[Record]) -> RunState:
    """The END of every open text and reasoning message of ``run``, in cursor
    order; tool-call cursors end without an event."""
    for part in run.parts:
        if part.kind == "text":
            out.append(ev.text_end(ts, part.message_id))
        elif part.kind == "thinking":
            out.append(ev.reasoning_end(ts, part.message_id))
    return RunState(run.history, (), run.ledger)


def terminal(run: RunState, item: HarnessRunResultEvent, ts: int, out: list[Record], *,
             release: Release | None = None, native: Any = None) -> RunState:
    release = release or RELEASE_021
    run = close(run, ts, out)
    native = to_a13n(item) if native is None else native
    result = native.result
    usage = usage_json(result.usage)
    raw: dict[str, Any] = {**correlation(native), "status": result.status}
    if result.status == "failed":
        raw["failure"] = result.failure.model_dump(mode="json", by_alias=True)
        out.append(("RUN_ERROR@full", ts, result.failure.message, result.failure.code, usage, _json.dumps(raw)))
        return run
    output = None
    if result.status == "completed":
        outcome: dict[str, Any] = {"type": "success"}
        try:
            if release.any_json:  # 0.5: pydantic's JSON of the output, strictly JSON
                value = _JSON_VALUE.validate_python(_ANY.dump_python(result.output, mode="json", warnings="error"),
                                                    strict=True)
            else:
                value = result.output_json()
        except (TypeError, ValueError):
            raw["result_omitted"] = True
        else:
            output = None if value is None else _json.dumps(value)
    elif result.status == "suspended":
        outcome = {"type": "interrupt", "interrupts": _interrupts(result.deferred, release)}
    else:
        outcome = {"type": "cancelled"}
    out.append(("RUN_FINISHED@full", ts, native.thread_id, native.run_id, output, _json.dumps(outcome), usage,
                _json.dumps(raw)))
    return run


def _interrupts(deferred: Any, release: Release) -> list[dict[str, Any]]:
    """Approvals, then calls. A deferred entry of 0.21 names its target and model calls; one of 0.5 is
    pydantic-ai's ToolCallPart itself (``any_json``), named as it is."""
    found = []
    for reason, calls in (("approval", deferred.approvals), ("external", deferred.calls)):
        for entry in calls:
            target, model = (entry, entry) if release.any_json else (entry.target_call, entry.model_call)
            name = N.client_tool_name(target, deferred.metadata.get(target.tool_call_id, {})) \
                if reason == "external" and not release.any_json else target.tool_name
            found.append({"id": target.tool_call_id, "tool_call_id": model.tool_call_id, "reason": reason,
                          "metadata": pydantic_core.to_jsonable_python({
                              "tool_name": name, "args": target.args,
                              "tool_metadata": deferred.metadata.get(target.tool_call_id)})})
    return found


def _subagent_finished(ts: int, run_id: str, text: str | None) -> Record:
    return ev.subagent_finished(ts, run_id, None, '{"type":"success"}')


def _subagent_failed(ts: int, run_id: str, name: str | None, status: str) -> Record:
    return ev.subagent_error(ts, run_id, f"Inline delegation {status}.", status)


def _run_started(ts: int, thread_id: str, run_id: str) -> Record:
    return ("RUN_STARTED@full", ts, thread_id, run_id, "1.0")


# -- the processor contract ----------------------------------------------------------------------------

_EVENTS = TypeAdapter(Event)
_MUTABLE: dict[str, str] = {
    "TEXT_MESSAGE_CONTENT": "delta", "REASONING_MESSAGE_CONTENT": "delta",
    "REASONING_ENCRYPTED_VALUE": "encrypted_value", "TOOL_CALL_ARGS": "delta", "TOOL_CALL_RESULT": "content",
    "RUN_FINISHED": "result", "RUN_ERROR": "message",
}
"""The one field a processor may change, by event type (none of a CUSTOM or a SUBAGENT_* event)."""
_CORRELATION = ("thread_id", "run_id", "sequence", "occurred_at")


def process(processor: Callable[[Any, Any], Any], item: HarnessStreamEvent, records: list[Record]) -> list[Record]:
    """The records left after ``processor`` saw the event of each, under
    a13n-stream-protocol's contract: None drops an event; a replacement must
    be a valid AG-UI event of the same type, change nothing but its type's
    one content field, and keep the source correlation of a CUSTOM value or
    a ``raw_event``. Raises AguiObservationError naming what it changed;
    an exception from the processor propagates."""
    out = []
    for record in records:
        kind = ev.kind_of(record)
        original = kind.build(record)
        candidate = processor(item, kind.build(record))
        if candidate is None:
            continue
        out.append(_captured(record, original, _replacement(original, candidate)))
    return out


def _replacement(original: BaseEvent, candidate: object) -> BaseEvent:
    if not isinstance(candidate, BaseEvent):
        raise AguiObservationError("The event processor returned a non-AG-UI value")
    try:
        replacement: BaseEvent = _EVENTS.validate_python(candidate.model_dump(mode="python"), strict=True)
    except ValueError as e:
        raise AguiObservationError("The event processor returned an invalid AG-UI event") from e
    if replacement.type != original.type:
        raise AguiObservationError("The event processor changed the AG-UI event type")
    before, after = original.model_dump(mode="python"), replacement.model_dump(mode="python")
    mutable = _MUTABLE.get(original.type.value)
    for name in before.keys() | after.keys():
        if name != mutable and (name not in before or name not in after or before[name] != after[name]):
            raise AguiObservationError(f"The event processor changed structural field {name}")
    if isinstance(original, CustomEvent) and isinstance(replacement, CustomEvent):
        nested, changed = original.value, replacement.value
    else:
        nested, changed = original.raw_event, replacement.raw_event
    if isinstance(nested, dict) and isinstance(changed, dict):
        for name in _CORRELATION:
            if name in nested and changed.get(name) != nested[name]:
                raise AguiObservationError(f"The event processor changed {name} source correlation")
    return replacement


def _captured(record: Record, original: BaseEvent, replacement: BaseEvent) -> Record:
    """The record of ``replacement``, which differs from ``original`` in its content field at most."""
    name = _MUTABLE.get(original.type.value)
    if name is None:
        return record
    value = getattr(replacement, name)
    if value == getattr(original, name):
        return record
    kind = ev.kind_of(record)
    if name == "content" and not isinstance(value, str):  # content parts: the fuller kind holds them as JSON
        text = _json.dumps([part.model_dump(mode="json", by_alias=True) for part in value])
        if "content" not in kind.json_fields:
            full = ("TOOL_CALL_RESULT@full", record[1], ev.field_of(record, "message_id"),
                    ev.field_of(record, "tool_call_id"), text, ev.field_of(record, "role"))
            subagent = ev.subagent_of(record)
            return full if subagent is None else ev.attributed(full, subagent)
        return ev.with_content(record, text)
    if name in kind.json_fields:
        return ev.with_content(record, None if value is None else _json.dumps(pydantic_core.to_jsonable_python(value)))
    return ev.with_content(record, value)


# -- framing -----------------------------------------------------------------------------------------

def frame(item: HarnessStreamEvent, records: list[Record], first: int = 0) -> list[Record]:
    """``records`` with every CUSTOM event whose JSON exceeds 48 KiB replaced
    by its ``a13n.stream.fragment`` frames, named after the item and the
    event's place among the item's processed events (``records[0]``'s is
    ``first``)."""
    out: list[Record] = []
    for i, record in enumerate(records, first):
        if ev.event_type(record) != "CUSTOM" or fits([record], FRAME_THRESHOLD_BYTES):  # surely small: not measured
            out.append(record)
            continue
        event = ev.build(record)
        assert isinstance(event, CustomEvent)
        frames = fragment_custom_event(event, identity=f"{item.thread_id}:{item.run_id}:{item.sequence}:{i}")
        if len(frames) == 1:
            out.append(record)
            continue
        subagent = ev.subagent_of(record)
        for piece in frames:
            framed = ev.custom(record[1], piece.name, _json.dumps(piece.value))
            out.append(framed if subagent is None else ev.attributed(framed, subagent))
    return out


def published(record: Record) -> Event:
    """The event a13n-stream-protocol publishes for ``record``, fresh. It
    validates each processed event from that event's own dump, so every field
    the dump writes is set (``model_dump(exclude_unset=True)`` writes the
    type, a reasoning start's role); a fragment frame it constructs from the
    frame's fields alone, which leaves its type unset. Raises what
    ``records.build`` raises."""
    if ev.event_type(record) == "CUSTOM" and ev.field_of(record, "name") == FRAGMENT_EVENT_NAME:
        return ev.build(record)  # type: ignore[return-value]
    return ev.build_complete(record)  # type: ignore[return-value]


VOCABULARY = Vocabulary(
    name=NAME, convert=convert, close=close, terminal=terminal, run_started=_run_started,
    announces_run="run_started", subagent_started=ev.subagent_started, subagent_finished=_subagent_finished,
    subagent_failed=_subagent_failed, holds_children=False, closes_children=False, renames_ids=False,
    process=process, frame=frame)
"""a13n-stream-protocol 0.21's vocabulary."""
register(VOCABULARY)

RELEASE_021 = Release(own_reasoning_ids=False, builtin_call_cursor=True, empty_text_deltas=False, any_json=False,
                      content=CONTENT_021)
RELEASE_05 = Release(own_reasoning_ids=True, builtin_call_cursor=False, empty_text_deltas=True, any_json=True,
                     content=CONTENT_05)

VOCABULARY_05 = attrs.evolve(VOCABULARY, name=NAME_05, convert=functools.partial(convert, release=RELEASE_05),
                             terminal=functools.partial(terminal, release=RELEASE_05))
"""a13n-stream-protocol 0.5's vocabulary (a13n-harness 0.5)."""
register(VOCABULARY_05)


def bound(vocabulary: Vocabulary, native: Any) -> Vocabulary:
    """``vocabulary`` rendering from ``native``, the a13n-harness object of the one item it is given (the
    compat observer's, which has it in hand)."""
    convert: Any = functools.partial(vocabulary.convert, native=native)  # type: ignore[call-arg]
    terminal: Any = functools.partial(vocabulary.terminal, native=native)  # type: ignore[call-arg]
    return attrs.evolve(vocabulary, convert=convert, terminal=terminal)
