# The one interpretation of an AG-UI conversation: events in, a frozen value out.
#
# ``fold_event(conversation, event)`` is a pure transition and ``fold`` runs
# it over a sequence; every view (the terminal conversation in ``pretty``,
# the text and HTML views in ``views``) renders the resulting
# ``Conversation`` and interprets no event itself. Entries are kept in the
# order they started: the run start, inputs, model requests, text and
# reasoning messages, tool calls, tool results, notices and the outcome. A
# streamed message or tool call is one entry that grows (new entry value,
# same position) until its END; ``Conversation.ids`` maps a message or call
# id to that position so a delta finds its entry in O(log n).
#
# Everything is frozen: entries are attrs values, sequences are pyrsistent
# vectors, and JSON taken from an event (CUSTOM payloads, results, media,
# interrupt args) is kept as its compact JSON text in a ``JsonValue``, so a
# conversation shares nothing mutable with the events it came from, keeps
# the order of object keys (``pyrsistent.freeze`` would not), and can be
# kept as a compact state; ``JsonValue.value`` gives a renderer a fresh
# plain copy. A value that is not JSON (a hand-made event can carry any
# Python object) is kept as its ``repr`` string rather than refused.
#
# The fold never raises for odd content. Rules for the edges, stated once:
# content, end or args for an id with no open entry open a new entry marked
# ``started=False`` (a slice that begins mid-message); a signature
# (REASONING_ENCRYPTED_VALUE, subtype message) marks the reasoning message
# of that id as signed, or becomes a notice when there is none; input text
# split into CUSTOM chunks is joined while the next chunk of the same source
# item directly follows; fragments of an oversized CUSTOM are buffered and
# joined with ``core.custom.assemble_custom`` (the one home of that rule),
# and fragments that cannot be joined become a "fragments" notice; the run's
# outcome is an entry too, and also kept in ``Conversation.outcome``.
# Events this module does not know become "event" notices with their fields.
#
# Subagents. Every entry made from an event knows the subagent run it belongs
# to (``subagent_run_id``, None for the root Run's own entries), taken from
# the event's ``subagentRunId``. SUBAGENT_STARTED adds a ``Subagent`` entry
# (name, parent tool call, parent subagent, depth) that SUBAGENT_FINISHED or
# SUBAGENT_ERROR updates in place; ``Conversation.scope(run_id)`` gives the
# entries of one Run and ``Conversation.subagents_of(tool_call_id, ...)``
# the subagents a tool call started, so a renderer can nest a subagent's work
# under the tool call that started it.
#
# A renderer should read entries by name and ignore fields it does not know.

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal, TypeAlias, TypeVar

import attrs
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEncryptedValueEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pyrsistent import PMap, PVector, pmap, pvector

from ..core.custom import assemble_custom, is_fragment

__all__ = [
    "Conversation",
    "EMPTY_CONVERSATION",
    "Entry",
    "RunStart",
    "Input",
    "Message",
    "ToolCall",
    "ToolResult",
    "ModelRequest",
    "Notice",
    "Outcome",
    "Interrupt",
    "TokenUsage",
    "Fragment",
    "Subagent",
    "fold",
    "fold_event",
    "JsonValue",
    "owner_of",
]



@attrs.frozen
class JsonValue:
    """A JSON value from an event, kept as its compact JSON text."""

    text: str

    @classmethod
    def of(cls, value: Any) -> JsonValue:
        """``value`` as JSON text; what JSON cannot hold is kept as its repr."""
        try:
            return cls(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr))
        except (ValueError, RecursionError):
            return cls(json.dumps(repr(value)))

    @property
    def value(self) -> Any:
        """A fresh plain copy (dicts, lists, scalars) of the value."""
        return json.loads(self.text)


def _json(value: Any) -> JsonValue | None:
    return None if value is None else JsonValue.of(value)

_NO_CHUNKS: PVector[str] = pvector()
_T = TypeVar("_T")


@attrs.frozen
class RunStart:
    """RUN_STARTED: the run the following entries belong to."""

    thread_id: str
    run_id: str
    parent_run_id: str | None = None
    at: int | None = None


@attrs.frozen
class Input:
    """An input to the run (harness.input.<source> CUSTOM events): text, possibly
    sent in several chunks, or a media object. ``run_id`` and ``sequence`` name
    the source item it came from."""

    source: str
    input_id: str | None = None
    chunks: PVector[str] | None = None  # None for media
    media: JsonValue | None = None
    metadata: JsonValue | None = None
    chunk_count: int = 1
    first_chunk: int = 0
    run_id: str | None = None
    sequence: int | None = None
    at: int | None = None
    subagent_run_id: str | None = None

    @property
    def text(self) -> str | None:
        return None if self.chunks is None else "".join(self.chunks)

    @property
    def next_chunk(self) -> int:
        return self.first_chunk + (1 if self.chunks is None else len(self.chunks))

    @property
    def complete(self) -> bool:
        """Whether the last chunk arrived (a media input is always complete)."""
        return self.chunks is None or self.next_chunk >= self.chunk_count

    @property
    def whole(self) -> bool:
        """Complete and starting at the first chunk."""
        return self.complete and self.first_chunk == 0


@attrs.frozen
class Message:
    """An assistant text message (kind "text") or a reasoning message."""

    kind: Literal["text", "reasoning"]
    message_id: str
    role: str | None = None
    chunks: PVector[str] = _NO_CHUNKS
    started: bool = False
    ended: bool = False
    signed: bool = False
    at: int | None = None
    subagent_run_id: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@attrs.frozen
class ToolCall:
    """A tool call: its name (None when its start is not among the events),
    the args text as streamed, and whether it ended. Its result is a separate
    ``ToolResult`` entry with the same ``tool_call_id``."""

    tool_call_id: str
    name: str | None = None
    parent_message_id: str | None = None
    chunks: PVector[str] = _NO_CHUNKS
    started: bool = False
    ended: bool = False
    at: int | None = None
    subagent_run_id: str | None = None

    @property
    def args(self) -> str:
        return "".join(self.chunks)


@attrs.frozen
class ToolResult:
    """The result of a tool call. ``in_run`` is False for a result whose call
    was not started in this run (the harness.tool_result CUSTOM event).
    ``content`` is the text a TOOL_CALL_RESULT carried, or frozen JSON."""

    tool_call_id: str
    tool_name: str | None = None
    outcome: str | None = None
    content: JsonValue = JsonValue("null")
    in_run: bool = True
    message_id: str | None = None
    at: int | None = None
    subagent_run_id: str | None = None


@attrs.frozen
class ModelRequest:
    """A lifecycle extension that starts model request ``index``."""

    index: JsonValue
    at: int | None = None
    subagent_run_id: str | None = None


NoticeCategory = Literal["observation", "extension", "custom", "event", "fragments"]


@attrs.frozen
class Notice:
    """Anything else worth a line: an observation (``name``, ``value``), an
    extension (``name`` is its kind, ``value`` its payload), another CUSTOM
    event (``name``, its value), an AG-UI event the fold does not interpret
    (``name`` is its type, ``value`` its fields), or fragments of an
    oversized CUSTOM that do not join (``value`` says why)."""

    category: NoticeCategory
    name: str
    value: JsonValue = JsonValue("null")
    schema_version: str | None = None
    at: int | None = None
    subagent_run_id: str | None = None


@attrs.frozen
class Interrupt:
    """One thing a suspended run waits for. ``args`` are the deferred call's
    arguments (from the interrupt's harness metadata)."""

    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    args: JsonValue | None = None
    metadata: JsonValue | None = None


@attrs.frozen
class TokenUsage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    total_tokens: int | None = None
    provider: str | None = None
    model: str | None = None


@attrs.frozen
class Outcome:
    """How the run ended: ``status`` is the RUN_FINISHED outcome type
    ("success", "interrupt", "cancelled") or "error" for RUN_ERROR, whose
    ``message`` and ``code`` are kept."""

    status: str
    result: JsonValue | None = None
    interrupts: tuple[Interrupt, ...] = ()
    usage: tuple[TokenUsage, ...] = ()
    message: str | None = None
    code: str | None = None
    at: int | None = None


@attrs.frozen
class Subagent:
    """A subagent Run (SUBAGENT_STARTED), updated in place when it ends.

    ``parent_tool_call_id`` is the tool call that started it and
    ``parent_subagent_run_id`` the subagent that made that call (None for
    the root Run); ``depth`` is 1 for a subagent of the root Run, 2 for one
    of its subagents, ... ``status`` is "running", "finished"
    (SUBAGENT_FINISHED: ``outcome`` and ``result`` are kept) or "error"
    (SUBAGENT_ERROR: ``message`` and ``code``). ``started`` is False for a
    subagent whose start is not among the events."""

    subagent_run_id: str
    name: str | None = None
    parent_tool_call_id: str | None = None
    parent_subagent_run_id: str | None = None
    depth: int = 1
    status: Literal["running", "finished", "error"] = "running"
    outcome: str | None = None
    result: JsonValue | None = None
    message: str | None = None
    code: str | None = None
    started: bool = False
    at: int | None = None
    ended_at: int | None = None


Entry: TypeAlias = RunStart | Input | Message | ToolCall | ToolResult | ModelRequest | Notice | Outcome | Subagent


@attrs.frozen
class Fragment:
    """One fragment of an oversized harness CUSTOM event, waiting for the rest."""

    name: str
    index: int
    count: int
    data: str
    run_id: JsonValue = JsonValue("null")
    sequence: JsonValue = JsonValue("null")
    at: int | None = None
    subagent_run_id: str | None = None


@attrs.frozen
class Conversation:
    """The conversation so far. ``entries`` are in the order they started;
    ``outcome`` is the last outcome entry; ``fragments`` are CUSTOM fragments
    still waiting for the rest of their event; ``ids`` maps ("text",
    "reasoning" or "tool", id) to the position of the latest entry with that
    id."""

    entries: PVector[Entry] = attrs.field(factory=pvector)
    thread_id: str | None = None
    run_id: str | None = None
    outcome: Outcome | None = None
    fragments: PVector[Fragment] = attrs.field(factory=pvector)
    ids: PMap[tuple[str, str], int] = attrs.field(factory=pmap)

    def entry(self, kind: str, entity_id: str) -> Message | ToolCall | None:
        """The latest message ("text", "reasoning") or tool call ("tool") with that id."""
        at = self.ids.get((kind, entity_id))
        if at is None:
            return None
        found = self.entries[at]
        assert isinstance(found, (Message, ToolCall))
        return found

    def subagent(self, subagent_run_id: str) -> Subagent | None:
        """The Subagent entry of that subagent run id, if any."""
        at = self.ids.get(("subagent", subagent_run_id))
        if at is None:
            return None
        found = self.entries[at]
        assert isinstance(found, Subagent)
        return found

    def scope(self, subagent_run_id: str | None) -> list[int]:
        """The positions of the entries of one Run: the root Run's own
        (``None``, with its run start and outcome) or one subagent's. A
        Subagent entry belongs to the Run that started it."""
        return [pos for pos, e in enumerate(self.entries) if owner_of(e) == subagent_run_id]

    def subagents_of(self, tool_call_id: str, owner: str | None) -> list[int]:
        """The positions of the Subagent entries started by tool call
        ``tool_call_id`` of Run ``owner`` (None: the root Run)."""
        return [pos for pos, e in enumerate(self.entries)
                if isinstance(e, Subagent) and e.parent_tool_call_id == tool_call_id
                and e.parent_subagent_run_id == owner]


def owner_of(entry: Entry) -> str | None:
    """The Run an entry belongs to: its subagent run id, the parent subagent
    of a Subagent entry, None for the root Run's entries."""
    if isinstance(entry, Subagent):
        return entry.parent_subagent_run_id
    return getattr(entry, "subagent_run_id", None)


EMPTY_CONVERSATION = Conversation()

# The init fields of the classes the fold copies on every event: ``_copy`` is ``attrs.evolve`` without the
# per-call introspection, which took most of the fold's time (these classes have no aliases or init=False).
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in attrs.fields(cls)) for cls in (Conversation, Message, ToolCall, Input, Subagent)
}


def fold(events: Iterable[BaseEvent], conversation: Conversation = EMPTY_CONVERSATION) -> Conversation:
    """Fold ``events`` into ``conversation`` (by default an empty one).

    Raises only what iterating ``events`` raises, and TypeError for an item
    that is not an AG-UI event."""
    for event in events:
        conversation = fold_event(conversation, event)
    return conversation


def fold_event(conversation: Conversation, event: BaseEvent) -> Conversation:
    """The conversation after one more AG-UI event. Never raises for odd
    content; raises TypeError for something that is not an AG-UI event."""
    if not isinstance(event, BaseEvent):
        raise TypeError(f"fold_event() takes an AG-UI event, not {type(event).__name__}")
    if is_fragment(event):
        assert isinstance(event, CustomEvent)
        return _fragment(conversation, event)
    if conversation.fragments:
        conversation = _drop_fragments(conversation, f"incomplete before a {event.type.value} event")
    return _interpret(conversation, event)


# -- the transitions -------------------------------------------------------------------

def _copy(value: _T, **changes: Any) -> _T:
    kwargs = {name: getattr(value, name) for name in _FIELDS[type(value)]}
    kwargs.update(changes)
    return type(value)(**kwargs)


def _append(conv: Conversation, entry: Entry, key: tuple[str, str] | None = None) -> Conversation:
    at = len(conv.entries)
    ids = conv.ids if key is None else conv.ids.set(key, at)
    return _copy(conv, entries=conv.entries.append(entry), ids=ids)


def _replace(conv: Conversation, at: int, entry: Entry) -> Conversation:
    return _copy(conv, entries=conv.entries.set(at, entry))


def _open_message(conv: Conversation, kind: Literal["text", "reasoning"], message_id: str,
                  at: int | None, sub: str | None = None) -> tuple[Conversation, int, Message]:
    """The open message with that id, or a new one (started=False) when there is none."""
    pos = conv.ids.get((kind, message_id))
    if pos is not None:
        found = conv.entries[pos]
        if isinstance(found, Message) and not found.ended:
            return conv, pos, found
    msg = Message(kind, message_id, at=at, subagent_run_id=sub)
    conv = _append(conv, msg, (kind, message_id))
    return conv, len(conv.entries) - 1, msg


def _open_call(conv: Conversation, call_id: str, at: int | None,
               sub: str | None = None) -> tuple[Conversation, int, ToolCall]:
    pos = conv.ids.get(("tool", call_id))
    if pos is not None:
        found = conv.entries[pos]
        if isinstance(found, ToolCall) and not found.ended:
            return conv, pos, found
    call = ToolCall(call_id, at=at, subagent_run_id=sub)
    conv = _append(conv, call, ("tool", call_id))
    return conv, len(conv.entries) - 1, call


def _add_text(conv: Conversation, kind: Literal["text", "reasoning"], message_id: str, delta: str,
              at: int | None, sub: str | None = None) -> Conversation:
    conv, pos, msg = _open_message(conv, kind, message_id, at, sub)
    return _replace(conv, pos, _copy(msg, chunks=msg.chunks.append(delta)))


def _end_message(conv: Conversation, kind: Literal["text", "reasoning"], message_id: str,
                 at: int | None, sub: str | None = None) -> Conversation:
    conv, pos, msg = _open_message(conv, kind, message_id, at, sub)
    return _replace(conv, pos, _copy(msg, ended=True))


def _interpret(conv: Conversation, event: BaseEvent) -> Conversation:
    at = event.timestamp if isinstance(event.timestamp, int) else None
    sub = getattr(event, "subagent_run_id", None)
    sub = sub if isinstance(sub, str) else None
    match event:
        case RunStartedEvent():
            start = RunStart(event.thread_id, event.run_id, event.parent_run_id, at)
            return attrs.evolve(_append(conv, start), thread_id=event.thread_id, run_id=event.run_id)
        case TextMessageStartEvent():
            msg = Message("text", event.message_id, role=event.role, started=True, at=at, subagent_run_id=sub)
            return _append(conv, msg, ("text", event.message_id))
        case TextMessageContentEvent():
            return _add_text(conv, "text", event.message_id, event.delta, at, sub)
        case TextMessageEndEvent():
            return _end_message(conv, "text", event.message_id, at, sub)
        case ReasoningMessageStartEvent():
            msg = Message("reasoning", event.message_id, role=event.role, started=True, at=at, subagent_run_id=sub)
            return _append(conv, msg, ("reasoning", event.message_id))
        case ReasoningMessageContentEvent():
            return _add_text(conv, "reasoning", event.message_id, event.delta, at, sub)
        case ReasoningMessageEndEvent():
            return _end_message(conv, "reasoning", event.message_id, at, sub)
        case ReasoningEncryptedValueEvent():
            pos = conv.ids.get(("reasoning", event.entity_id)) if event.subtype == "message" else None
            if pos is None:
                return _append(conv, _event_notice(event, at))
            signed = conv.entries[pos]
            assert isinstance(signed, Message)
            return conv if signed.signed else _replace(conv, pos, _copy(signed, signed=True))
        case ToolCallStartEvent():
            call = ToolCall(event.tool_call_id, event.tool_call_name, event.parent_message_id, started=True, at=at,
                            subagent_run_id=sub)
            return _append(conv, call, ("tool", event.tool_call_id))
        case ToolCallArgsEvent():
            conv, pos, call = _open_call(conv, event.tool_call_id, at, sub)
            return _replace(conv, pos, _copy(call, chunks=call.chunks.append(event.delta)))
        case ToolCallEndEvent():
            conv, pos, call = _open_call(conv, event.tool_call_id, at, sub)
            return _replace(conv, pos, _copy(call, ended=True))
        case ToolCallResultEvent():
            return _append(conv, attrs.evolve(_tool_result(conv, event, at), subagent_run_id=sub))
        case CustomEvent():
            return _custom(conv, event, at, sub)
        case SubagentStartedEvent():
            parent = conv.subagent(event.parent_subagent_run_id) if event.parent_subagent_run_id else None
            entry = Subagent(event.subagent_run_id, event.name, event.parent_tool_call_id,
                             event.parent_subagent_run_id, parent.depth + 1 if parent is not None else 1,
                             started=True, at=at)
            return _append(conv, entry, ("subagent", event.subagent_run_id))
        case SubagentFinishedEvent():
            ended = event.outcome.type if event.outcome is not None else None
            return _end_subagent(conv, event.subagent_run_id, at, status="finished", outcome=ended,
                                 result=_json(event.result))
        case SubagentErrorEvent():
            return _end_subagent(conv, event.subagent_run_id, at, status="error", message=event.message,
                                 code=event.code)
        case RunFinishedEvent():
            outcome = event.outcome
            kind = outcome.type if outcome is not None else "success"
            interrupts = tuple(_interrupt(i) for i in getattr(outcome, "interrupts", None) or ())
            return _outcome(conv, Outcome(kind, _json(event.result), interrupts, _usage(event.usage), at=at))
        case RunErrorEvent():
            return _outcome(conv, Outcome("error", usage=_usage(event.usage), message=event.message,
                                          code=event.code, at=at))
        case _:
            return _append(conv, _event_notice(event, at))


def _end_subagent(conv: Conversation, subagent_run_id: str, at: int | None, **changes: Any) -> Conversation:
    pos = conv.ids.get(("subagent", subagent_run_id))
    if pos is None:
        return _append(conv, Subagent(subagent_run_id, at=at, ended_at=at, **changes),
                       ("subagent", subagent_run_id))
    found = conv.entries[pos]
    assert isinstance(found, Subagent)
    return _replace(conv, pos, _copy(found, ended_at=at, **changes))


def _outcome(conv: Conversation, outcome: Outcome) -> Conversation:
    return attrs.evolve(_append(conv, outcome), outcome=outcome)


def _event_fields(event: BaseEvent) -> dict[str, Any]:
    data = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("type", None)
    data.pop("timestamp", None)
    return data


def _event_notice(event: BaseEvent, at: int | None) -> Notice:
    return Notice("event", event.type.value, JsonValue.of(_event_fields(event)), at=at)


def _harness_metadata(metadata: Any) -> dict[str, Any]:
    harness = metadata.get("harness") if isinstance(metadata, dict) else None
    return harness if isinstance(harness, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tool_result(conv: Conversation, event: ToolCallResultEvent, at: int | None) -> ToolResult:
    harness = _harness_metadata(event.metadata)
    name = _str_or_none(harness.get("tool_name"))
    if name is None:
        call = conv.entry("tool", event.tool_call_id)
        name = call.name if isinstance(call, ToolCall) else None
    raw = event.content
    content = JsonValue.of(raw if isinstance(raw, str) else
                           [part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in raw])
    return ToolResult(event.tool_call_id, name, _str_or_none(harness.get("outcome")), content,
                      message_id=event.message_id, at=at)


def _interrupt(it: Any) -> Interrupt:
    args = _harness_metadata(it.metadata).get("args")
    return Interrupt(it.id, it.reason, it.message, it.tool_call_id, _json(args), _json(it.metadata))


def _usage(usage: Any) -> tuple[TokenUsage, ...]:
    return tuple(
        TokenUsage(u.input_tokens, u.output_tokens, u.reasoning_tokens, u.cached_input_tokens,
                   u.cache_write_input_tokens, u.total_tokens, u.provider, u.model)
        for u in usage or ()
    )


_INPUT = "harness.input."
_EXTENSION = "harness.extension."


def _custom(conv: Conversation, event: CustomEvent, at: int | None, sub: str | None = None) -> Conversation:
    name, value = event.name, event.value
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict) and name.startswith(_INPUT):
        return _input(conv, name[len(_INPUT):], value, payload, at, sub)
    return _append(conv, _custom_entry(name, value, payload, at, sub))


def _custom_entry(name: str, value: Any, payload: Any, at: int | None, sub: str | None) -> Entry:
    if not isinstance(payload, dict):
        return Notice("custom", name, JsonValue.of(value), at=at, subagent_run_id=sub)
    if name.startswith(_EXTENSION):
        body = payload.get("payload")
        if name == "harness.extension.lifecycle" and isinstance(body, dict) \
                and body.get("type") == "model_request_started":
            return ModelRequest(JsonValue.of(body.get("request_index")), at, sub)
        return Notice("extension", name[len(_EXTENSION):], JsonValue.of(body),
                      _str_or_none(payload.get("schema_version")), at, sub)
    if name == "harness.observation":
        return Notice("observation", str(payload.get("name")), JsonValue.of(payload.get("value")), at=at,
                      subagent_run_id=sub)
    if name == "harness.tool_result":
        return ToolResult(str(payload.get("tool_call_id")), _str_or_none(payload.get("tool_name")),
                          _str_or_none(payload.get("outcome")), JsonValue.of(payload.get("content")),
                          in_run=False, at=at, subagent_run_id=sub)
    return Notice("custom", name, JsonValue.of(payload if name.startswith("harness.") else value), at=at,
                  subagent_run_id=sub)


def _input(conv: Conversation, source: str, value: dict[str, Any], payload: dict[str, Any],
           at: int | None, sub: str | None = None) -> Conversation:
    content = payload.get("content")
    chunk = value.get("chunk")
    index = _int_or_none(chunk.get("index")) if isinstance(chunk, dict) else None
    count = _int_or_none(chunk.get("count")) if isinstance(chunk, dict) else None
    run_id, sequence = _str_or_none(value.get("run_id")), _int_or_none(value.get("sequence"))
    last = conv.entries[-1] if conv.entries else None
    if (isinstance(content, str) and index and isinstance(last, Input) and last.chunks is not None
            and not last.complete and last.next_chunk == index and last.source == source
            and (last.run_id, last.sequence) == (run_id, sequence)):
        return _replace(conv, len(conv.entries) - 1, _copy(last, chunks=last.chunks.append(content)))
    text = content if isinstance(content, str) else None
    entry = Input(source, _str_or_none(payload.get("input_id")), None if text is None else pvector([text]),
                  None if text is not None else JsonValue.of(content), _json(payload.get("metadata")),
                  count if count and count > 0 else 1, index if index and index > 0 else 0, run_id, sequence, at,
                  sub)
    return _append(conv, entry)


# -- fragments of an oversized CUSTOM ----------------------------------------------------------

def _fragment(conv: Conversation, event: CustomEvent) -> Conversation:
    value = event.value
    meta = value["fragment"]
    index, count = _int_or_none(meta.get("index")), _int_or_none(meta.get("count"))
    at = event.timestamp if isinstance(event.timestamp, int) else None
    if index is None or count is None or not 0 <= index < count:
        conv = _drop_fragments(conv, "incomplete before a fragment out of sequence") if conv.fragments else conv
        return _append(conv, Notice("fragments", event.name, JsonValue.of("a fragment without a valid index and count"),
                                            at=at))
    if conv.fragments and index == 0:
        conv = _drop_fragments(conv, "incomplete before the first fragment of another event")
    piece = Fragment(event.name, index, count, value["data"], JsonValue.of(value.get("run_id")),
                     JsonValue.of(value.get("sequence")), at, event.subagent_run_id)
    pending = conv.fragments.append(piece)
    if len(pending) < count:
        return attrs.evolve(conv, fragments=pending)
    conv = attrs.evolve(conv, fragments=pvector())
    try:
        (joined,) = assemble_custom(_as_event(f) for f in pending)
    except ValueError as e:
        return _append(conv, Notice("fragments", event.name, JsonValue.of(f"fragments that do not join ({e})"),
                                            at=at))
    return _interpret(conv, joined)


def _as_event(f: Fragment) -> CustomEvent:
    value = {"run_id": f.run_id.value, "sequence": f.sequence.value,
             "fragment": {"index": f.index, "count": f.count}, "data": f.data}
    return CustomEvent(name=f.name, value=value, timestamp=f.at, subagent_run_id=f.subagent_run_id)


def _drop_fragments(conv: Conversation, why: str) -> Conversation:
    first = conv.fragments[0]
    why = f"{len(conv.fragments)} of {first.count} fragments, {why}"
    note = Notice("fragments", first.name, JsonValue.of(why), at=first.at)
    return _append(attrs.evolve(conv, fragments=pvector()), note)
