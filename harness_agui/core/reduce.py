# Theory of operation
# -------------------
# ``advance(state, item, processor)`` is the one transition of the library.
# It checks the item's type, then its place in the Run's history through
# ``history.advance`` (correlation, contiguous sequences from 0, nothing after
# the terminal item: the one policy every reader shares), converts it into
# AG-UI records, lets the optional processor rewrite or drop them, and
# returns a new ProjectionState with the records appended. It never mutates
# its inputs and raises before building anything when the item is
# unacceptable, so a caller that simply does not keep the result on error
# needs no clean-up. ``reduce`` is the public face of the
# same transition: it also builds the new AG-UI events for the caller.
#
# Conversion is a single ``match`` on the payload type. Ids and timestamps
# come only from the item (the part's own id, else
# ``<run_id>:request-<n>:part-<index>:<kind>``; ``occurred_at`` in epoch
# milliseconds), so replaying a history gives the same bytes as observing it.
#
# Parts: a start opens an ``OpenPart`` at its index, deltas stream content
# and count what was emitted, the end emits whatever the final part holds
# beyond that count and closes the message. A tool call's START waits until
# its name is known; its args text is held back until then. Whole-object args
# are emitted once, as compact JSON, when the part ends. Parts still open
# when a new model request starts, or when the terminal item arrives, are
# closed as if they had ended with what was streamed.
#
# Tool calls are tracked by id through open -> ended -> answered. A result
# for an ended call becomes TOOL_CALL_RESULT; for a call this Run never
# started (or already answered) it becomes a CUSTOM event, since AG-UI has no
# valid way to answer an unknown call; for a call whose part is still open
# it is an error (the Harness runs tools only after the model response).
#
# Tokens (a text, thinking or args delta of the one part streaming, most of
# a Run's items) take a lane that does the same without the dispatch: see
# ``_token_step``. Everything else, and every case that can fail, takes
# ``_step``, which is the whole rule book.
#
# Subagents: the first item binds the root Run; an item of another run id is
# an item of a delegated child Run. ``step`` runs the plain path below until
# the first such item, and from then on (``state.delegation`` set) hands every
# item to ``core.subagents``, which converts each Run's items with this very
# conversion (``_PerRun``) on that Run's own per-Run state and appends the
# child's records, attributed with its ``subagent_run_id``, to the one log.

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ag_ui.core import BaseEvent

from . import _json
from . import records as ev
from . import subagents as _subagents
from .custom import CUSTOM_FRAGMENT_CHARS, CUSTOM_MAX_CHARS, custom_records
from .errors import AguiObservationError, ForeignRunError, HistoryError
from .history import HistoryCursor
from .history import advance as advance_history
from .idmap import IdMap, IdSet
from .jsonform import content_to_json, deferred_call_to_json, payload_to_json
from .processor import apply_processor
from .records import Record
from .source import (
    MAX_JSON_INT,
    BinaryContent,
    BuiltinToolReturnPart,
    CapabilityEvent,
    ContentList,
    DeferredToolCall,
    DeferredToolRequestsEvent,
    EnqueuedMessagesEvent,
    ExtensionEvent,
    FilePart,
    FinalResultEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    MediaContent,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
    UnknownDelta,
    UnknownEvent,
    UnknownPart,
)
from .state import OpenPart, PartKind, ProjectionState, find_part

__all__ = ["Processor", "reduce", "advance", "INPUT_CHUNK_CHARS", "CUSTOM_MAX_CHARS", "CUSTOM_FRAGMENT_CHARS"]

Processor = Callable[[HarnessStreamEvent, BaseEvent], "BaseEvent | None"]

INPUT_CHUNK_CHARS = 8192
"""Input text is carried in CUSTOM events of at most this many characters."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_KIND_OF_PART: dict[type, PartKind] = {TextPart: "text", ThinkingPart: "thinking", ToolCallPart: "tool_call"}
_KIND_OF_DELTA = {TextPartDelta: "text", ThinkingPartDelta: "thinking", ToolCallPartDelta: "tool_call"}
_Streamed = TextPart | ThinkingPart | ToolCallPart  # the parts that stream: a start, deltas, an end
# Until their projection rules exist, the other payloads and parts become CUSTOM events of these names.
_PART_NAMES: dict[type, str] = {BuiltinToolReturnPart: "builtin_tool_return", FilePart: "file"}
_PAYLOAD_NAMES: dict[type, str] = {FinalResultEvent: "final_result",
                                   DeferredToolRequestsEvent: "deferred_tool_requests",
                                   EnqueuedMessagesEvent: "enqueued_messages"}


def _unknown_kind(part: Any) -> str:
    assert isinstance(part, UnknownPart)
    return f"part.{part.part_kind}"


def reduce(
    state: ProjectionState, item: HarnessStreamEvent, *, processor: Processor | None = None
) -> tuple[ProjectionState, tuple[BaseEvent, ...]]:
    """Project one source item onto ``state``.

    Returns the new state and the AG-UI events this item produced (fresh
    objects). Pure: ``state`` and ``item`` are not changed.

    Raises TypeError for an item that is not a Harness stream item; a
    ``HistoryError`` (ForeignRunError, AfterTerminalError, SequenceOrderError,
    SequenceGapError; see ``core.history`` for the policy: a Run's items are
    numbered contiguously from 0) for an item out of the Run's order, and in a
    stream that carries subagent Runs (``core.subagents``), the same per Run,
    UnknownSubagentError (a ForeignRunError) for an item of a Run the stream
    never announced and FinishedSubagentError (an AfterTerminalError) for an
    item of, or naming, a subagent Run that already finished; and
    AguiObservationError for an item the projection does not allow or a
    processor that breaks its contract; exceptions from the processor itself
    propagate. In every case no new state exists.
    """
    new, records = step(state, item, processor)
    return new, tuple(ev.build(r) for r in records)


def advance(state: ProjectionState, item: HarnessStreamEvent, processor: Processor | None = None) -> ProjectionState:
    """The new state after ``item``; the events it produced are the records
    appended to ``state.events``. See ``reduce`` for what it raises."""
    return step(state, item, processor)[0]


def step(state: ProjectionState, item: HarnessStreamEvent,
         processor: Processor | None = None) -> tuple[ProjectionState, list[Record]]:
    """``advance``, also returning the records it appended (the observer's
    hot path: no slicing of the accumulated records)."""
    if type(item) is HarnessEvent and type(item.event) is PartDeltaEvent and state.delegation is None:
        stepped = _token_step(state, item, item.event, processor)
        if stepped is not None:
            return stepped
    return _step(state, item, processor)


def _step(state: ProjectionState, item: HarnessStreamEvent,
          processor: Processor | None) -> tuple[ProjectionState, list[Record]]:
    """``step`` for every item: what ``_token_step`` does for a token too."""
    if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
        raise TypeError(f"expected HarnessEvent or HarnessRunResultEvent, not {type(item).__name__}")
    if state.delegation is not None:  # the stream has carried a subagent Run: see core/subagents.py
        return _subagents.step(state, item, processor, _PER_RUN)
    try:
        history = advance_history(state.history, item)  # the order of the Run's history: raises HistoryError
    except ForeignRunError:
        if item.run_id == state.history.run_id:
            raise
        return _subagents.step(state, item, processor, _PER_RUN)  # another Run: a subagent's first item
    records: list[Record] = []
    parts: tuple[OpenPart, ...]
    ts = (item.occurred_at - _EPOCH) // _MS
    if state.history.thread_id is None:
        records.append(ev.run_started(ts, item.thread_id, item.run_id))

    message_ids = state.message_ids
    if isinstance(item, HarnessRunResultEvent):
        calls = _close_all(state, ts, records)
        records.extend(_terminal(item, ts))
        parts, request, parent = (), state.request_index, None
    else:
        parts, calls, request, parent = _project(state, item, ts, records)
        if isinstance(item.event, PartStartEvent):
            message_ids = _with_started_message(message_ids, item.event, parts)

    if processor is not None and records:
        records = apply_processor(processor, item, records)
    return ProjectionState.of(
        history, request, parent, parts, calls, message_ids,
        state.events.extend(records) if records else state.events,
    ), records


# The token lane. Most items of a Run are tokens: a text, thinking or tool
# call args delta of the one part that is streaming. For those, _token_step
# does what _step would (the same history check, record, part and state)
# without _step's dispatch, which saves about 7% of observe_encoded() on the
# benchmark's Runs (bench/pipeline.py). Anything else, including every case
# that could fail, goes to _step. tests/test_token_lane.py checks that both
# give equal states and records for every item of generated histories.

def _token_step(state: ProjectionState, item: HarnessEvent, payload: PartDeltaEvent,
                processor: Processor | None) -> tuple[ProjectionState, list[Record]] | None:
    """``_step(state, item, processor)`` for a token, or None to take ``_step``."""
    parts = state.parts
    if len(parts) != 1:
        return None
    part, delta = parts[0], payload.delta
    if part.index != payload.index or part.retired:
        return None
    make: Callable[[int, str, str], Record]
    text: Any
    if type(delta) is TextPartDelta:
        if part.kind != "text":
            return None
        text, make = delta.content_delta, ev.text_content
    elif type(delta) is ThinkingPartDelta:
        if part.kind != "thinking" or delta.signature_delta:
            return None
        text, make = delta.content_delta, ev.reasoning_content
    elif type(delta) is ToolCallPartDelta:
        if (part.kind != "tool_call" or not part.started or part.object_args_json is not None
                or delta.tool_name_delta or (delta.tool_call_id is not None and delta.tool_call_id != part.message_id)):
            return None
        text, make = delta.args_delta, ev.tool_call_args
    else:
        return None
    if not text or type(text) is not str:  # nothing to stream, or object args
        return None
    try:
        history = advance_history(state.history, item)
    except HistoryError:
        return None  # _step raises it, or takes the item of another Run as a subagent's
    record = make((item.occurred_at - _EPOCH) // _MS, part.message_id, text)
    # ProjectionState.of with all but three fields as they were: the instance dict, copied.
    fields = state.__dict__.copy()
    fields["history"] = history
    fields["parts"] = (_streamed(part, part.streamed + len(text)),)
    if processor is None:
        records = [record]
        fields["events"] = state.events.append(record)
    else:
        records = apply_processor(processor, item, [record])
        if records:
            fields["events"] = state.events.extend(records)
    new = _new(ProjectionState)
    _set_dict(new, "__dict__", fields)
    return new, records


def _with_started_message(message_ids: IdSet, payload: PartStartEvent, parts: tuple[OpenPart, ...]) -> IdSet:
    """``message_ids`` plus the id of the text or reasoning message the part
    start ``payload`` opened (the same set for a tool call)."""
    if isinstance(payload.part, (TextPart, ThinkingPart)):
        started = find_part(parts, payload.index)
        assert started is not None
        return message_ids.add(started.message_id)
    return message_ids


class _PerRun:
    """The per-Run conversion of this module, as ``core.subagents`` runs it on
    each Run (root and children) of a stream that carries subagent Runs.
    ``convert`` is step()'s non-terminal branch and ``close`` + ``terminal``
    its terminal one: a change to either must be made in both."""

    @staticmethod
    def timestamp(item: HarnessStreamEvent) -> int:
        return (item.occurred_at - _EPOCH) // _MS

    @staticmethod
    def convert(run: ProjectionState, history: HistoryCursor, item: HarnessEvent, ts: int,
                out: list[Record]) -> ProjectionState:
        parts, calls, request, parent = _project(run, item, ts, out)
        message_ids = run.message_ids
        if isinstance(item.event, PartStartEvent):
            message_ids = _with_started_message(message_ids, item.event, parts)
        return ProjectionState.of(history, request, parent, parts, calls, message_ids, run.events, run.delegation)

    @staticmethod
    def close(run: ProjectionState, ts: int, out: list[Record]) -> ProjectionState:
        calls = _close_all(run, ts, out)
        return ProjectionState.of(run.history, run.request_index, None, (), calls, run.message_ids, run.events,
                                  run.delegation)

    @staticmethod
    def terminal(item: HarnessRunResultEvent, ts: int) -> list[Record]:
        return _terminal(item, ts)


_PER_RUN = _PerRun()


# What a non-terminal item leaves open: (parts, calls, request index, parent message id).
_Progress = tuple[tuple[OpenPart, ...], IdMap, "int | None", "str | None"]


def _project(state: ProjectionState, item: HarnessEvent, ts: int, out: list[Record]) -> _Progress:
    """Append the records of a non-terminal item to ``out``; return the new
    (parts, calls, request index, parent message id)."""
    parts, calls, request, parent = state.parts, state.calls, state.request_index, state.parent_message_id
    payload = item.event
    match payload:
        case PartDeltaEvent():
            return _token(parts, parent, item, payload, ts, out), calls, request, parent

        case PartStartEvent(part=source_part) | PartEndEvent(part=source_part) if (
                type(source_part) not in _KIND_OF_PART):
            # A start-only part (builtin tool return, file) or a part kind this release does not model.
            out.extend(_custom(item, ts, f"harness.{_PART_NAMES.get(type(source_part)) or _unknown_kind(source_part)}"))
            return parts, calls, request, parent

        case PartStartEvent(index=index, part=source_part):
            if (open_ := find_part(parts, index)) is not None and not open_.retired:
                raise AguiObservationError(
                    f"part {index} started again before its {open_.kind} part ended", sequence=item.sequence
                )
            kind = _KIND_OF_PART[type(source_part)]
            assert isinstance(source_part, (TextPart, ThinkingPart, ToolCallPart))  # the case above took the others
            part, calls, parent = _start(state, index, kind, source_part, item, ts, calls, parent, out)
            return _replace(parts, part), calls, request, parent

        case PartEndEvent(index=index, part=final):
            part = _open_part(parts, index, item)
            if part.retired:  # the late end of a part a new model request closed: its message is over
                out.extend(_custom(item, ts, "harness.part_end"))
                return tuple(p for p in parts if p.index != index), calls, request, parent
            assert isinstance(final, (TextPart, ThinkingPart, ToolCallPart))  # the first case took the others
            _check_same_part(part, final, item.sequence)
            calls = _close(part, final, ts, parent, calls, out)
            return tuple(p for p in parts if p.index != index), calls, request, parent

        case ToolResultEvent(tool_call_id=call_id):
            status = calls.get(call_id)
            if status == "ended":
                out.append(_tool_result(payload, ts))
                return parts, calls.set(call_id, "answered"), request, parent
            if status == "open":
                raise AguiObservationError(
                    f"tool result for call {call_id!r} arrived before the call's part ended", sequence=item.sequence
                )
            out.extend(_custom(item, ts, "harness.tool_result"))
            return parts, calls, request, parent

        case InputEvent(source=source, content=content):
            if isinstance(content, str) and source in _MESSAGE_SOURCES:
                out.extend(_user_message(item, content, ts))
            elif isinstance(content, str):
                out.extend(_input_chunks(item, payload, ts))
            else:
                out.extend(_custom(item, ts, f"harness.input.{source}"))
            return parts, calls, request, parent

        case ExtensionEvent(kind=kind):
            started = _model_request_started(payload)
            if started is not None:
                if request is not None and started <= request:
                    raise AguiObservationError(
                        f"model request {started} started after model request {request}", sequence=item.sequence
                    )
                calls = _close_all(state, ts, out)
                parts, request, parent = _retire(parts), started, None
            out.extend(_custom(item, ts, f"harness.extension.{kind}"))
            return parts, calls, request, parent

        case ObservationEvent():
            out.extend(_custom(item, ts, "harness.observation"))
            return parts, calls, request, parent

        case ToolCallEvent(output=output):
            out.extend(_custom(item, ts, "harness.output_tool_call" if output else "harness.function_tool_call"))
            return parts, calls, request, parent

        case FinalResultEvent() | DeferredToolRequestsEvent() | EnqueuedMessagesEvent():
            out.extend(_custom(item, ts, f"harness.{_PAYLOAD_NAMES[type(payload)]}"))
            return parts, calls, request, parent

        case CapabilityEvent(kind=kind):
            out.extend(_custom(item, ts, f"harness.capability.{kind}"))
            return parts, calls, request, parent

        case UnknownEvent(event_kind=kind):
            out.extend(_custom(item, ts, f"harness.{kind}"))
            return parts, calls, request, parent

    raise TypeError(f"not a Harness payload: {type(payload).__name__}")  # unreachable: validated by HarnessEvent


# -- parts -------------------------------------------------------------------------

def _token(parts: tuple[OpenPart, ...], parent: str | None, item: HarnessEvent, payload: PartDeltaEvent, ts: int,
           out: list[Record]) -> tuple[OpenPart, ...]:
    """Append the records of a part delta to ``out``; return the new open parts
    (a delta changes nothing else)."""
    index, delta = payload.index, payload.delta
    if type(delta) is UnknownDelta:
        out.extend(_custom(item, ts, f"harness.part_delta.{delta.part_delta_kind}"))
        return parts
    # Usually exactly one part is open and streaming: skip the search.
    part = parts[0] if len(parts) == 1 and parts[0].index == index else _open_part(parts, index, item)
    if part.retired:  # a late delta of a part a new model request closed
        out.extend(_custom(item, ts, "harness.part_delta"))
        return parts
    kind = _KIND_OF_DELTA[type(delta)]
    if kind != part.kind:
        raise AguiObservationError(
            f"part {index} changed kind from {part.kind} to {kind} before its end", sequence=item.sequence
        )
    return _replace(parts, _delta(part, delta, ts, parent, out, item.sequence))


def _open_part(parts: tuple[OpenPart, ...], index: int, item: HarnessEvent) -> OpenPart:
    part = find_part(parts, index)
    if part is None:
        what = "delta" if isinstance(item.event, PartDeltaEvent) else "end"
        raise AguiObservationError(f"part {what} for index {index}, which is not open", sequence=item.sequence)
    return part


def _replace(parts: tuple[OpenPart, ...], part: OpenPart) -> tuple[OpenPart, ...]:
    """``parts`` with ``part`` in place of the one at its index (or added, in index order)."""
    index = part.index
    if len(parts) == 1 and parts[0].index == index:  # the usual case: one part streaming
        return (part,)
    for i, p in enumerate(parts):
        if p.index == index:
            return parts[:i] + (part,) + parts[i + 1:]
        if p.index > index:
            return parts[:i] + (part,) + parts[i:]
    return parts + (part,)


def _message_id(state: ProjectionState, item: HarnessEvent, index: int, kind: str, own: str | None) -> str:
    """The AG-UI id of a text or reasoning message. A generated id that an
    earlier part already used (a Harness that sent no model-request notice
    between two responses) gets the start item's sequence appended, so ids
    stay unique and replay-stable; so does a part's own id used twice (the
    summary parts of one provider reasoning item share it)."""
    if own is not None:
        # Provider summary parts share one reasoning id, so an own id can recur.
        return own if own not in state.message_ids else f"{own}:{item.sequence}"
    generated = f"{item.run_id}:request-{state.request_index or 0}:part-{index}:{kind}"
    return generated if generated not in state.message_ids else f"{generated}:{item.sequence}"


def _start(state: ProjectionState, index: int, kind: PartKind, source: _Streamed, item: HarnessEvent, ts: int,
           calls: IdMap, parent: str | None, out: list[Record]) -> tuple[OpenPart, IdMap, str | None]:
    if isinstance(source, ToolCallPart):
        call_id = source.tool_call_id
        opened = calls.set(call_id, "open")
        if len(opened) == len(calls):  # the id was there already
            raise AguiObservationError(f"tool call id {call_id!r} is used twice in this run", sequence=item.sequence)
        calls = opened
        args = source.args
        part = OpenPart(index, "tool_call", call_id, started=False, tool_name=source.tool_name,
                        pending=args if isinstance(args, str) else "",
                        object_args_json=_json.dumps(args) if isinstance(args, dict) else None)
        if source.tool_name:
            part = _start_tool_call(part, ts, parent, out)
        return part, calls, parent

    message_id = _message_id(state, item, index, kind, source.id)
    if isinstance(source, TextPart):
        out.append(ev.text_start(ts, message_id))
        parent = message_id
        content = ev.text_content
        signature = None
    else:
        out.append(ev.reasoning_start(ts, message_id))
        content = ev.reasoning_content
        signature = source.signature
    if source.content:
        out.append(content(ts, message_id, source.content))
    part = OpenPart(index, kind, message_id, part_id=source.id, streamed=len(source.content), signature=signature)
    return part, calls, parent


def _start_tool_call(part: OpenPart, ts: int, parent: str | None, out: list[Record]) -> OpenPart:
    out.append(ev.tool_call_start(ts, part.message_id, part.tool_name, parent))
    if part.pending:
        out.append(ev.tool_call_args(ts, part.message_id, part.pending))
    return _evolve(part, started=True, streamed=len(part.pending), pending="")


def _evolve(part: OpenPart, **changes: Any) -> OpenPart:
    return part._replace(**changes)


def _streamed(part: OpenPart, streamed: int) -> OpenPart:
    """``_evolve(part, streamed=streamed)``, the one change a token makes,
    without ``_replace``'s generic path (a third of the cost)."""
    index, kind, message_id, part_id, _, started, tool_name, pending, object_args_json, signature, retired = part
    return _new_part(OpenPart, (index, kind, message_id, part_id, streamed, started, tool_name, pending,
                                object_args_json, signature, retired))


_new_part = tuple.__new__
_new = object.__new__
_set_dict = object.__setattr__  # ProjectionState is frozen: its own __setattr__ refuses


def _delta(part: OpenPart, delta: Any, ts: int, parent: str | None, out: list[Record], seq: int) -> OpenPart:
    # Type checks rather than ``match`` class patterns: this runs once per token.
    mid = part.message_id
    if type(delta) is TextPartDelta:
        text = delta.content_delta
        if not text:
            return part
        out.append(ev.text_content(ts, mid, text))
        return _streamed(part, part.streamed + len(text))

    if type(delta) is ThinkingPartDelta:
        thought, signature = delta.content_delta, delta.signature_delta
        if thought:
            out.append(ev.reasoning_content(ts, mid, thought))
        if signature:
            # A signature delta replaces the signature (pydantic-ai's rule; a
            # real Run streams 'sig-part1' then '-part2' and ends with '-part2').
            return _evolve(part, streamed=part.streamed + len(thought or ""), signature=signature)
        if not thought:
            return part
        return _streamed(part, part.streamed + len(thought))

    assert type(delta) is ToolCallPartDelta
    name, args, call_id = delta.tool_name_delta, delta.args_delta, delta.tool_call_id
    if call_id is not None and call_id != mid:
        raise AguiObservationError(
            f"part {part.index} changed tool call id from {mid!r} to {call_id!r} before its end", sequence=seq
        )
    if name:
        if part.started:
            raise AguiObservationError(f"tool call {mid!r} changed its name after TOOL_CALL_START", sequence=seq)
        part = _evolve(part, tool_name=part.tool_name + name)
    if isinstance(args, dict):
        if part.streamed or part.pending:
            raise AguiObservationError(f"tool call {mid!r} mixed text args with object args", sequence=seq)
        merged = {**_json.loads(part.object_args_json), **args} if part.object_args_json else args
        return _evolve(part, object_args_json=_json.dumps(merged))
    if args:
        if part.object_args_json is not None:
            raise AguiObservationError(f"tool call {mid!r} mixed object args with text args", sequence=seq)
        if part.started:
            out.append(ev.tool_call_args(ts, mid, args))
            return _streamed(part, part.streamed + len(args))
        part = _evolve(part, pending=part.pending + args)
        if part.tool_name:
            part = _start_tool_call(part, ts, parent, out)
    return part


def _check_same_part(part: OpenPart, final: _Streamed, seq: int) -> None:
    kind = _KIND_OF_PART[type(final)]
    if kind != part.kind:
        raise AguiObservationError(f"part {part.index} changed kind from {part.kind} to {kind} before its end",
                                   sequence=seq)
    if isinstance(final, ToolCallPart):
        if final.tool_call_id != part.message_id:
            raise AguiObservationError(
                f"part {part.index} ended as tool call {final.tool_call_id!r}, started as {part.message_id!r}",
                sequence=seq,
            )
        if isinstance(final.args, dict) and (part.streamed or part.pending):
            raise AguiObservationError(
                f"tool call {part.message_id!r} streamed text args but ended with object args", sequence=seq
            )
        if part.started and final.tool_name != part.tool_name:
            raise AguiObservationError(
                f"tool call {part.message_id!r} ended as {final.tool_name!r}, started as {part.tool_name!r}",
                sequence=seq,
            )
    elif final.id is not None and part.part_id is not None and final.id != part.part_id:
        raise AguiObservationError(
            f"part {part.index} ended with id {final.id!r}, started with id {part.part_id!r}", sequence=seq
        )


def _close(part: OpenPart, final: _Streamed | None, ts: int, parent: str | None, calls: IdMap,
           out: list[Record]) -> IdMap:
    """Emit the end of ``part``: what ``final`` holds beyond what was streamed,
    then the END event(s). Returns the updated call statuses."""
    mid = part.message_id
    if part.kind == "tool_call":
        if not part.started:
            if isinstance(final, ToolCallPart):
                part = _evolve(part, tool_name=final.tool_name)
            part = _start_tool_call(part, ts, parent, out)
        args = final.args if isinstance(final, ToolCallPart) else None
        if isinstance(args, str):
            if len(args) > part.streamed:
                out.append(ev.tool_call_args(ts, mid, args[part.streamed:]))
        elif part.streamed == 0:
            text = _json.dumps(args) if isinstance(args, dict) else part.object_args_json
            if text is not None:
                out.append(ev.tool_call_args(ts, mid, text))
        out.append(ev.tool_call_end(ts, mid))
        return calls.set(mid, "ended")

    content = final.content if isinstance(final, (TextPart, ThinkingPart)) else ""
    if part.kind == "text":
        if len(content) > part.streamed:
            out.append(ev.text_content(ts, mid, content[part.streamed:]))
        out.append(ev.text_end(ts, mid))
        return calls
    if len(content) > part.streamed:
        out.append(ev.reasoning_content(ts, mid, content[part.streamed:]))
    signature = (final.signature if isinstance(final, ThinkingPart) else None) or part.signature
    if signature:
        out.append(ev.reasoning_signature(ts, mid, signature))
    out.append(ev.reasoning_end(ts, mid))
    return calls


def _close_all(state: ProjectionState, ts: int, out: list[Record]) -> IdMap:
    calls = state.calls
    for part in state.parts:
        if not part.retired:
            calls = _close(part, None, ts, state.parent_message_id, calls, out)
    return calls


def _retire(parts: tuple[OpenPart, ...]) -> tuple[OpenPart, ...]:
    """The parts a new model request leaves behind, after ``_close_all`` ended
    their messages: kept as retired, so a late PartEnd (or delta) for one is
    taken as a CUSTOM event instead of refused; a new part at the same index
    replaces it. A preempted or failed request never ends its parts in real
    Runs; this is for a Harness that does."""
    return tuple(p if p.retired else _evolve(p, retired=True) for p in parts)


# -- other payloads ------------------------------------------------------------------

def _model_request_started(payload: ExtensionEvent) -> int | None:
    body = payload.payload
    if payload.kind != "lifecycle" or not isinstance(body, dict) or body.get("type") != "model_request_started":
        return None
    n = body.get("request_index")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _tool_result(payload: ToolResultEvent, ts: int) -> Record:
    content = payload.content
    harness: dict[str, Any] = {"outcome": payload.outcome, "tool_name": payload.tool_name}
    if payload.retry is not None:
        retry = payload.retry
        harness["retry"] = {k: v for k, v in (("cause", retry.cause), ("attempt", retry.attempt),
                                              ("max_retries", retry.max_retries)) if v is not None}
    if isinstance(content, (BinaryContent, MediaContent, ContentList)):
        harness["content"] = _content_parts(content)
    text = content if isinstance(content, str) else _json.dumps(content_to_json(content, binary_data=False))
    meta = _json.dumps({"harness": harness})
    return ev.tool_call_result(ts, f"{payload.tool_call_id}:result", payload.tool_call_id, text, meta)


_PART_OF_MEDIA = {"image": "image", "audio": "audio", "video": "video"}


def _content_parts(content: BinaryContent | MediaContent | ContentList) -> list[dict[str, Any]]:
    """Multimodal tool content as AG-UI content parts (text, image, audio,
    video, document), binaries as base64 data sources. AG-UI allows them as
    TOOL_CALL_RESULT content, but validators flag an array there, so the
    result's content is text and these parts travel in its metadata."""
    items = content.items if isinstance(content, ContentList) else (content,)
    parts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, BinaryContent):
            kind = _PART_OF_MEDIA.get(item.media_type.split("/", 1)[0], "document")
            source = {"type": "data", "value": base64.b64encode(item.data).decode("ascii"),
                      "mimeType": item.media_type}
            parts.append({"type": kind, "source": source})
        elif isinstance(item, MediaContent):
            url = item.data.get("url")
            kind = _PART_OF_MEDIA.get(item.kind.split("-", 1)[0], "document")
            if isinstance(url, str):
                source = {"type": "url", "value": url}
                media_type = item.data.get("media_type")
                if isinstance(media_type, str):
                    source["mimeType"] = media_type
                parts.append({"type": kind, "source": source})
            else:
                parts.append({"type": "text", "text": _json.dumps(content_to_json(item, binary_data=False))})
        else:
            parts.append({"type": "text", "text": item if isinstance(item, str) else _json.dumps(item)})
    return parts


def _correlation(item: HarnessStreamEvent) -> dict[str, Any]:
    return {
        "thread_id": item.thread_id,
        "run_id": item.run_id,
        "sequence": item.sequence,
        "occurred_at": item.occurred_at.isoformat(),
    }


def _custom(item: HarnessEvent, ts: int, name: str, payload: dict[str, Any] | None = None,
            chunk: dict[str, int] | None = None) -> list[Record]:
    correlation = _correlation(item)
    value = dict(correlation)
    value["payload"] = payload if payload is not None else payload_to_json(item.event, binary_data=False)
    if chunk is not None:
        value["chunk"] = chunk
    return custom_records(ts, name, value, correlation)


_MESSAGE_SOURCES = frozenset(("user", "steering"))
"""Input sources whose text becomes an AG-UI user message (others stay CUSTOM)."""


def _user_message(item: HarnessEvent, text: str, ts: int) -> list[Record]:
    """A user or steering text input as an AG-UI user message, so a client
    that reloads shows the question. Its id is ``<run_id>:input-<sequence>``:
    unique in the Run and across Runs, and the same on every replay."""
    message_id = f"{item.run_id}:input-{item.sequence}"
    out = [ev.text_start(ts, message_id, "user")]
    if text:
        out.append(ev.text_content(ts, message_id, text))
    out.append(ev.text_end(ts, message_id))
    return out


def _input_chunks(item: HarnessEvent, payload: InputEvent, ts: int) -> list[Record]:
    text = payload.content
    assert isinstance(text, str)
    chunks = [text[i:i + INPUT_CHUNK_CHARS] for i in range(0, len(text), INPUT_CHUNK_CHARS)] or [""]
    name = f"harness.input.{payload.source}"
    base = payload_to_json(payload, binary_data=False)
    out: list[Record] = []
    for i, chunk in enumerate(chunks):
        body = dict(base, content=chunk)
        out.extend(_custom(item, ts, name, body, {"index": i, "count": len(chunks)}))
    return out


# -- the terminal item -------------------------------------------------------------------

def _usage(result: RunResult) -> str | None:
    u = result.usage
    if u is None:
        return None
    entry = {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "reasoning_tokens": u.reasoning_tokens,
        "cached_input_tokens": u.cache_read_tokens,
    }
    if u.input_tokens is not None and u.output_tokens is not None and u.input_tokens + u.output_tokens <= MAX_JSON_INT:
        entry["total_tokens"] = u.input_tokens + u.output_tokens
    entry = {k: v for k, v in entry.items() if v is not None}
    return _json.dumps([entry]) if entry else None


def _interrupts(result: RunResult) -> list[dict[str, Any]]:
    assert result.deferred is not None
    out = []
    for reason, verb, calls in (("tool_call", "the result of", result.deferred.calls),
                                ("tool_approval", "approval of", result.deferred.approvals)):
        for call in calls:
            out.append({
                "id": call.tool_call_id if reason == "tool_call" else f"{call.tool_call_id}:approval",
                "reason": reason,
                "message": f"Waiting for {verb} {call.tool_name}",
                "toolCallId": call.tool_call_id,
                "metadata": {"harness": _deferred_metadata(call, result.deferred.metadata)},
            })
    return out


def _deferred_metadata(call: DeferredToolCall, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """What an interrupt tells about its call: the call as JSON, both ids (the
    call to answer and the call the model made, which differ for a forwarded
    call) and the Harness's metadata for it."""
    out = deferred_call_to_json(call)
    out["model_call_id"] = call.model_call_id
    extra = (metadata or {}).get(call.tool_call_id)
    if extra is not None:
        out["metadata"] = extra
    return out


def _terminal(item: HarnessRunResultEvent, ts: int) -> list[Record]:
    result = item.result
    usage = _usage(result)
    status = result.status
    if status == "failed":
        failure = result.failure
        assert failure is not None
        extra = {k: v for k, v in (("details", failure.details), ("retry_hint", failure.retry_hint)) if v is not None}
        meta = _json.dumps({"harness": extra}) if extra else None
        return [ev.run_error(ts, failure.message, failure.code, usage, meta)]
    output = None
    if status == "completed":
        outcome: dict[str, Any] = {"type": "success"}
        if result.output is not None:
            output = _json.dumps(result.output)
    elif status == "suspended":
        outcome = {"type": "interrupt", "interrupts": _interrupts(result)}
    else:
        outcome = {"type": "cancelled"}
    return [ev.run_finished(ts, item.thread_id, item.run_id, output, _json.dumps(outcome), usage)]
