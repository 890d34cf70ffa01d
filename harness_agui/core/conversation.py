# The AG-UI conversation of a Run, folded event by event into one value.
#
# This is the one interpretation of the AG-UI conversation in the library:
# ``fold_records(conversation, records)`` folds the records the reducer
# emits, ``fold_events(conversation, events)`` any AG-UI events (a snapshot,
# an SSE file, hand-made ones: each is read into the record it stands for
# and folded the same way). Nothing is mutated; every step returns a new
# ``Conversation``. Everything else reads that value: ``messages_of`` the
# message list the official client builds, ``catch_up_events`` what a client
# joining now needs, and the debug views (``harness_agui.debug``) the
# timeline they draw. None of them looks at an event again.
#
# The value. ``entries`` is the timeline: every entry in the order it
# started (the run's start, messages, tool calls, tool results, inputs,
# model requests, notices, subagents, the outcome), each entry updated in
# place (new value, same position) while it grows. The client's message
# list is an order over some of those entries: ``listed`` holds the
# positions of the messages it pushed, in push order, and ``after`` the tool
# messages it inserted after one of them, so an insert is a map update
# rather than a splice. ``by_id``, ``calls``, ``call_host`` and
# ``subagents`` find the position of the client's message with an id, of a
# tool call, of the message holding a call, of a subagent. While a message
# or tool call streams, its deltas go to its entry in ``open`` /
# ``open_calls`` (maps by id: cheaper per delta than a new timeline entry,
# and flat however many stream at once) and its end joins them into the
# entry as one chunk; ``settled`` holds the timeline without them, and
# ``entries`` adds them on reading.
#
# The rules, stated once. Those of the messages mirror ``@ag-ui/client``
# (1.0, its default event applier); ``tests/test_catch_up.py`` and
# ``tests/test_node_client.py`` hold the list to the client's own:
#
#   - TEXT_MESSAGE_START pushes a message ``{id, role, content: ""}`` unless
#     a message with that id exists; REASONING_MESSAGE_START pushes a
#     reasoning message the same way. Either opens the message: its start
#     and what streams into it are kept until its END.
#   - *_CONTENT appends to the first message with the id. TOOL_CALL_START
#     adds the call to the assistant message named by ``parentMessageId``;
#     when there is none it pushes a new assistant message with no content
#     (id: the parent id, or the call id when the parent is not an assistant
#     message or there is none: a "holder", which the views do not draw). A
#     start for a call id the client knows renames that call. TOOL_CALL_ARGS
#     appends to the call's args.
#   - TOOL_CALL_RESULT makes a tool message (with the event's metadata) and
#     inserts it after the assistant message holding the call and the tool
#     messages that directly follow it; without such a message it is pushed.
#   - REASONING_ENCRYPTED_VALUE sets ``encryptedValue`` on the message
#     (subtype "message") or the tool call ("tool-call") it names; when
#     there is none it becomes an "event" notice.
#   - Every entry made from a subagent's event keeps its ``subagentRunId``.
#
# What the client ignores, the timeline still shows, for a reader of a slice
# of a stream: content, args or an end for an id the client has no message
# (or call) for opens an entry of its own, ``started=False``, outside the
# list, which grows until its end. CUSTOM events, which build no message,
# become timeline entries: input text (``harness.input.<source>``, joined
# while the next chunk of the same source item directly follows), model
# requests, observations, extensions, tool results of calls outside the Run
# and other CUSTOM events; fragments of an oversized CUSTOM wait in
# ``fragments`` and are joined by ``core.custom.join_fragments`` (the one
# home of that rule), or become a "fragments" notice when they cannot be.
# Fragments of ``harness.event`` join into that CUSTOM entry, the carried
# event whole as its value; the stand-in after them is folded like any event,
# as the client applies it.
# SUBAGENT_STARTED adds a ``Subagent`` entry that its end updates in place;
# the run's outcome is an entry too, also kept in ``outcome``. Any other
# AG-UI event becomes an "event" notice with its fields. The fold never
# raises for odd content.
#
# Catch-up (``catch_up_events``): RUN_STARTED, one MESSAGES_SNAPSHOT (every
# message in order; a message or call still streaming is in it with the
# content it had at its start), the SUBAGENT_STARTED of every subagent
# still running, then for every message or call still open its start and one
# content record with what streamed since, and the terminal event once the
# Run has ended. Applied by the client, that gives exactly the messages the
# full stream gives, and every later live event applies cleanly.
#
# Everything is frozen: entries are attrs values, sequences are
# ``core.vector`` vectors and tuples, maps are ``core.idmap`` maps (a long
# Run's updates cost the garbage collector the same at its end as at its
# start: bench/conversation.py), and JSON from an event is kept as its
# compact text in a ``JsonValue``. Entries are copied with
# ``_fast.with_fields`` (attrs.evolve without its per-call introspection).

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TypeAlias

import attrs
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    MessagesSnapshotEvent,
    ReasoningMessage,
    ToolMessage,
    UserMessage,
)
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python
from pyrsistent import PVector, pvector

from . import _json
from . import records as ev
from ._fast import with_fields
from .custom import is_fragment, join_fragments
from .idmap import IdMap
from .records import KINDS, Record
from .vector import EMPTY_VECTOR, Vector

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
    "Subagent",
    "Fragment",
    "JsonValue",
    "owner_of",
    "fold_records",
    "fold_events",
    "fold_event",
    "messages_json",
    "messages_of",
    "catch_up_events",
]

_copy = with_fields


@attrs.frozen
class JsonValue:
    """A JSON value from an event, kept as its compact JSON text."""

    text: str

    @classmethod
    def of(cls, value: Any) -> JsonValue:
        """``value`` as JSON text; what JSON cannot hold is kept as its repr."""
        try:
            return cls(_json.dumps(value))  # the common case: a JSON value, written by the C encoder
        except (TypeError, ValueError, RecursionError):
            pass
        try:
            return cls(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr))
        except (ValueError, RecursionError):
            return cls(json.dumps(repr(value)))

    @property
    def value(self) -> Any:
        """A fresh plain copy (dicts, lists, scalars) of the value."""
        return json.loads(self.text)


_NULL = JsonValue("null")
_NO_CHUNKS: PVector[str] = pvector()


def _json_or_none(value: Any) -> JsonValue | None:
    return None if value is None else JsonValue.of(value)


# -- entries --------------------------------------------------------------------------------------

@attrs.frozen
class RunStart:
    """RUN_STARTED: the run the following entries belong to."""

    thread_id: str
    run_id: str
    at: int | None = None


@attrs.frozen(slots=False)
class Input:
    """An input to the run (harness.input.<source> CUSTOM events): text, possibly
    sent in several chunks, or a media object. ``run_id`` and ``sequence`` name
    the source item it came from."""

    source: str
    input_id: str | None = None
    chunks: tuple[str, ...] | None = None  # None for media
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


@attrs.frozen(slots=False)
class Message:
    """A text message (kind "text", with its role) or a reasoning message.

    ``chunks`` is its content (what streamed into it, joined into one at its end),
    or None for a holder: an assistant message the client made for tool
    calls that had no assistant message to join (no content; the views do
    not draw it). ``tool_calls`` are the ids of the calls the client holds
    in it. ``started`` is False for an entry opened by content or an end
    whose start is not among the events (the client ignores those); ``at``
    is the time of its first event, ``updated_at`` of its latest."""

    kind: Literal["text", "reasoning"]
    message_id: str
    role: str | None = None
    chunks: tuple[str, ...] | None = ()
    started: bool = False
    ended: bool = False
    at: int | None = None
    subagent_run_id: str | None = None
    tool_calls: tuple[str, ...] | None = None
    encrypted_value: str | None = None
    updated_at: int | None = None

    @property
    def text(self) -> str:
        return "".join(self.chunks or ())

    @property
    def signed(self) -> bool:
        """Whether an encrypted value (a reasoning signature) was set on it."""
        return self.encrypted_value is not None

    @property
    def holder(self) -> bool:
        """Whether this is an assistant message made only to hold tool calls."""
        return self.chunks is None


@attrs.frozen(slots=False)
class ToolCall:
    """A tool call: its name (None when its start is not among the events),
    the args text as streamed, and whether it ended. Its result is a separate
    ``ToolResult`` entry with the same ``tool_call_id``."""

    tool_call_id: str
    name: str | None = None
    parent_message_id: str | None = None
    chunks: tuple[str, ...] = ()
    started: bool = False
    ended: bool = False
    at: int | None = None
    subagent_run_id: str | None = None
    encrypted_value: str | None = None
    updated_at: int | None = None

    @property
    def args(self) -> str:
        return "".join(self.chunks)


@attrs.frozen(slots=False)
class ToolResult:
    """The result of a tool call. ``in_run`` is False for a result whose call
    was not started in this run (the harness.tool_result CUSTOM event), which
    is no message of the client's. ``content`` is the text a TOOL_CALL_RESULT
    carried (as a JSON string), or frozen JSON; ``metadata`` the JSON text
    of its metadata (``tool_name`` and ``outcome`` are read from there)."""

    tool_call_id: str
    tool_name: str | None = None
    outcome: str | None = None
    content: JsonValue = _NULL
    in_run: bool = True
    message_id: str | None = None
    at: int | None = None
    subagent_run_id: str | None = None
    metadata: str | None = None
    encrypted_value: str | None = None


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
    value: JsonValue = _NULL
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


@attrs.frozen(slots=False)
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


def owner_of(entry: Entry) -> str | None:
    """The Run an entry belongs to: its subagent run id, the parent subagent
    of a Subagent entry, None for the root Run's entries."""
    if isinstance(entry, Subagent):
        return entry.parent_subagent_run_id
    return getattr(entry, "subagent_run_id", None)


@attrs.frozen
class Fragment:
    """One fragment of an oversized harness CUSTOM event, waiting for the rest."""

    name: str
    index: int
    count: int
    data: str
    run_id: JsonValue = _NULL
    sequence: JsonValue = _NULL
    at: int | None = None
    subagent_run_id: str | None = None


@attrs.frozen(slots=False)
class _Open:
    """A message, tool call or subagent started and not ended: its start
    record (None for an entry opened by content without one), the order it
    opened in, the position of its entry, what streamed into it since (kept
    here until its end joins it into the entry: cheaper per delta than a new
    entry) and the timestamp of the latest of that. The chunks are a PVector
    (its C append is the cheapest per delta), which lives only as long as
    one message streams."""

    id: str
    start: Record | None
    order: int
    at: int
    chunks: PVector[str] = _NO_CHUNKS
    last: int | None = None


_NO_OPEN_IDS: IdMap[_Open] = IdMap()


@attrs.frozen
class _Opens:
    """What is open, by id, iterated in the order it opened. Usually a
    handful of messages and calls, but a Run with thousands of live
    subagents has a running entry and an open message for each: a map keeps
    each step's cost flat whatever their number (a tuple searched and copied
    on every delta made a catch-up of 4,000 live children quadratic:
    bench/catch_up.py)."""

    by_id: IdMap[_Open] = _NO_OPEN_IDS

    def get(self, entity_id: str) -> _Open | None:
        return self.by_id.get(entity_id)  # type: ignore[no-any-return]

    def with_open(self, opened: _Open) -> _Opens:
        """These with ``opened`` in place of what was open under its id."""
        by_id = self.by_id.set(opened.id, opened)
        return self if by_id is self.by_id else _Opens(by_id)

    def without(self, entity_id: str) -> _Opens:
        by_id = self.by_id.discard(entity_id)
        return self if by_id is self.by_id else _Opens(by_id)

    def __iter__(self) -> Iterator[_Open]:
        return iter(sorted(self.by_id.values(), key=_opened_order))

    def __len__(self) -> int:
        return len(self.by_id)


def _opened_order(opened: _Open) -> int:
    return opened.order


_NO_OPENS = _Opens()

_NO_POSITIONS: IdMap[int] = IdMap()
_NO_AFTER: IdMap[tuple[int, ...]] = IdMap()


@attrs.frozen(slots=False)
class Conversation:
    """The conversation folded so far (see this module's comment).

    ``entries`` are in the order they started, each with what streamed into
    it so far; ``outcome`` is the last outcome entry; ``fragments`` are
    CUSTOM fragments still waiting for the rest of their event. Read the
    client's messages with ``messages_of``. (``settled`` holds the entries
    without what is still streaming into the open ones.)"""

    settled: Vector[Entry] = EMPTY_VECTOR
    listed: Vector[int] = EMPTY_VECTOR
    after: IdMap[tuple[int, ...]] = _NO_AFTER  # by str(position)
    by_id: IdMap[int] = _NO_POSITIONS
    calls: IdMap[int] = _NO_POSITIONS
    call_host: IdMap[int] = _NO_POSITIONS
    subagents: IdMap[int] = _NO_POSITIONS
    open: _Opens = _NO_OPENS  # messages still streaming (by message id)
    open_calls: _Opens = _NO_OPENS  # tool calls still streaming (by call id: another namespace)
    running: _Opens = _NO_OPENS  # subagents running (by subagent run id)
    fragments: tuple[Fragment, ...] = ()
    started: Record | None = None
    terminal: Record | None = None
    outcome: Outcome | None = None
    ticks: int = 0

    @property
    def entries(self) -> Vector[Entry]:
        """Every entry, in the order it started, with its content so far."""
        entries = self.settled
        for opened in (*self.open.by_id.values(), *self.open_calls.by_id.values()):
            if opened.chunks:
                entries = entries.set(opened.at, _streamed(entries[opened.at], opened))
        return entries

    def entry(self, at: int) -> Entry:
        """The entry at position ``at``, with its content so far."""
        entry = self.settled[at]
        if isinstance(entry, (Message, ToolCall)):
            opened = _open_at(self, entry, at)
            if opened is not None and opened.chunks:
                return _streamed(entry, opened)
        return entry

    @property
    def thread_id(self) -> str | None:
        return None if self.started is None else ev.field_of(self.started, "thread_id")  # type: ignore[no-any-return]

    @property
    def run_id(self) -> str | None:
        return None if self.started is None else ev.field_of(self.started, "run_id")  # type: ignore[no-any-return]

    def message(self, message_id: str) -> Message | ToolResult | None:
        """The client's message with that id (the first one made)."""
        at = self.by_id.get(message_id)
        return None if at is None else self.entry(at)  # type: ignore[return-value]

    def call(self, tool_call_id: str) -> ToolCall | None:
        """The client's tool call with that id."""
        at = self.calls.get(tool_call_id)
        return None if at is None else self.entry(at)  # type: ignore[return-value]

    def subagent(self, subagent_run_id: str) -> Subagent | None:
        """The Subagent entry of that subagent run id, if any."""
        at = self.subagents.get(subagent_run_id)
        return None if at is None else self.settled[at]  # type: ignore[return-value]

    def scope(self, subagent_run_id: str | None) -> list[int]:
        """The positions of the entries of one Run: the root Run's own
        (``None``, with its run start and outcome) or one subagent's. A
        Subagent entry belongs to the Run that started it."""
        return [pos for pos, e in enumerate(self.settled) if owner_of(e) == subagent_run_id]

    def subagents_of(self, tool_call_id: str, owner: str | None) -> list[int]:
        """The positions of the Subagent entries started by tool call
        ``tool_call_id`` of Run ``owner`` (None: the root Run)."""
        return [pos for pos, e in enumerate(self.settled)
                if isinstance(e, Subagent) and e.parent_tool_call_id == tool_call_id
                and e.parent_subagent_run_id == owner]

    def __repr__(self) -> str:
        return (f"Conversation({len(self.settled)} entries, {len(self.listed)} messages listed, "
                f"{len(self.open) + len(self.open_calls)} open)")


def _open_at(c: Conversation, entry: Message | ToolCall, at: int) -> _Open | None:
    """What is streaming into ``entry``, the entry at position ``at``: an
    open entry streams into the entry of its own id."""
    if type(entry) is ToolCall:
        opened = c.open_calls.get(entry.tool_call_id)
    else:
        opened = c.open.get(entry.message_id)  # type: ignore[union-attr]
    return opened if opened is not None and opened.at == at else None


def _streamed(entry: Any, opened: _Open) -> Any:
    """``entry`` with what streamed into it since ``opened`` (one chunk more)."""
    if not isinstance(entry, (Message, ToolCall)) or not opened.chunks:
        return entry
    return _copy(entry, chunks=(*(entry.chunks or ()), "".join(opened.chunks)), updated_at=opened.last)


EMPTY_CONVERSATION = Conversation()

STATE_CLASSES: tuple[type, ...] = (Conversation, RunStart, Input, Message, ToolCall, ToolResult, ModelRequest,
                                   Notice, Interrupt, TokenUsage, Outcome, Subagent, Fragment, JsonValue, _Open,
                                   _Opens)
"""The attrs classes a Conversation is made of (for ``core.checkpoint``)."""


# -- folding --------------------------------------------------------------------------------------

def fold_records(conversation: Conversation, records: Iterable[Record]) -> Conversation:
    """``conversation`` after ``records`` (in order). Never raises for odd content."""
    for record in records:
        conversation = _apply(conversation, record)
    return conversation


def fold_events(conversation: Conversation, events: Iterable[BaseEvent]) -> Conversation:
    """``conversation`` after ``events`` (in order). Raises only what
    iterating ``events`` raises, and TypeError for an item that is not an
    AG-UI event."""
    for event in events:
        conversation = fold_event(conversation, event)
    return conversation


def fold_event(conversation: Conversation, event: BaseEvent) -> Conversation:
    """The conversation after one more AG-UI event. Never raises for odd
    content; raises TypeError for something that is not an AG-UI event."""
    if not isinstance(event, BaseEvent):
        raise TypeError(f"fold_event() takes an AG-UI event, not {type(event).__name__}")
    record = _record_of(event)
    if record is None:
        conversation = _drop_fragments(conversation, f"incomplete before a {event.type.value} event")
        return _append(conversation, _event_notice(event, _at(event.timestamp)))
    return _apply(conversation, record)


def _at(timestamp: Any) -> int | None:
    return timestamp if type(timestamp) is int else None


def _record_of(event: BaseEvent) -> Record | None:
    """The record an event of a kind the projection emits stands for (its
    JSON fields as compact text); None for another kind."""
    kind = KINDS.get(event.type.value)
    if kind is None:
        return None
    values = []
    for name in kind.fields:
        value = getattr(event, name)
        if name in kind.json_fields:
            value = None if value is None else _json_text(value)
        elif value is not None and type(value) is not str:  # a TOOL_CALL_RESULT's content parts
            value = _json_text(value)
        values.append(value)
    record = kind.record(event.timestamp, *values)  # type: ignore[arg-type]
    sub = getattr(event, "subagent_run_id", None)
    if isinstance(sub, str) and kind.attributed is not None:
        record = ev.attributed(record, sub)
    return record


def _json_text(value: Any) -> str:
    """Compact JSON text of an event's field (models by their wire names);
    what strict JSON cannot hold is kept as its repr."""
    try:
        plain = to_jsonable_python(value, by_alias=True, fallback=repr)
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError):
        return _json.dumps(repr(value))


# What each record tag stands for: (the AG-UI type, whether the record carries a subagent run id).
_TAGS: dict[str, tuple[str, bool]] = {}


def _tag(record: Record) -> tuple[str, bool]:
    found = _TAGS.get(record[0])
    if found is None:
        found = _TAGS[record[0]] = (ev.event_type(record), ev.subagent_of(record) is not None)
    return found


def _apply(c: Conversation, record: Record) -> Conversation:
    kind, attributed = _tag(record)
    if c.fragments and kind != "CUSTOM":
        c = _drop_fragments(c, f"incomplete before a {kind} event")
    return _RULES[kind](c, record, record[1], ev.subagent_of(record) if attributed else None)


# -- the timeline and the list ------------------------------------------------------------------

_Stream = Literal["text", "reasoning", "tool"]  # what streams: a text or reasoning message, or a tool call


def _append(c: Conversation, entry: Entry) -> Conversation:
    """``entry`` added to the timeline only."""
    return _copy(c, settled=c.settled.append(entry))


def _pushed(c: Conversation, entries: Vector[Entry], entry: Message | ToolResult,
            message_id: str) -> dict[str, Any]:
    """The fields of ``c`` with ``entry`` added to ``entries`` and pushed onto the client's list."""
    at = len(entries)
    by_id = c.by_id if message_id in c.by_id else c.by_id.set(message_id, at)
    return {"settled": entries.append(entry), "listed": c.listed.append(at), "by_id": by_id}


def _replace(c: Conversation, at: int, entry: Entry) -> Conversation:
    return _copy(c, settled=c.settled.set(at, entry))


def _drained(entries: Vector[Entry], opened: _Open | None, *, ended: bool = False,
             ts: int | None = None) -> Vector[Entry]:
    """``entries`` with what streamed into ``opened`` joined into its entry
    (as one chunk, with what it held before), marked ended if ``ended``."""
    if opened is None:
        return entries
    entry = entries[opened.at]
    if not isinstance(entry, (Message, ToolCall)):
        return entries
    if not ended:
        return entries if not opened.chunks else entries.set(opened.at, _streamed(entry, opened))
    chunks = entry.chunks
    if chunks is not None or opened.chunks:  # a holder that nothing streamed into stays without content
        text = "".join(chunks or ()) + "".join(opened.chunks)
        chunks = (text,) if text else ()
    return entries.set(opened.at, _copy(entry, chunks=chunks, ended=True, updated_at=_at(ts)))


def _opening(c: Conversation, entries: Vector[Entry], entity_id: str, start: Record | None, at: int,
             ts: int | None, kind: _Stream) -> dict[str, Any]:
    """The fields of ``c`` (with ``entries``) with ``entity_id`` open,
    streaming into the entry at ``at``; what streamed into an earlier open
    entry of the same id stays in that entry."""
    opens = c.open_calls if kind == "tool" else c.open
    entries = _drained(entries, opens.get(entity_id))
    opens = opens.with_open(_Open(entity_id, start, c.ticks, at, _NO_CHUNKS, _at(ts)))
    return {"settled": entries, "open_calls" if kind == "tool" else "open": opens, "ticks": c.ticks + 1}


def _orphan(kind: _Stream, entity_id: str, ts: int | None, sub: str | None, *,
            ended: bool = False) -> Message | ToolCall:
    """The entry of content, args or an end whose start the client never saw."""
    at = _at(ts)
    if kind == "tool":
        return ToolCall(entity_id, ended=ended, at=at, subagent_run_id=sub, updated_at=at)
    return Message("text" if kind == "text" else "reasoning", entity_id, ended=ended, at=at, subagent_run_id=sub,
                   updated_at=at)


def _message_start(c: Conversation, record: Record, ts: int, sub: str | None,
                   kind: Literal["text", "reasoning"]) -> Conversation:
    message_id = ev.field_of(record, "message_id")
    at = c.by_id.get(message_id)
    if at is not None:  # the client keeps the message it has; what streams from here on is sent again on catch-up
        return _copy(c, **_opening(c, c.settled, message_id, record, at, ts, kind))
    at = len(c.settled)
    role = ev.field_of(record, "role") if kind == "text" else "reasoning"
    entry = Message(kind, message_id, role, started=True, at=_at(ts), subagent_run_id=sub, updated_at=_at(ts))
    fields = _pushed(c, c.settled, entry, message_id)
    fields.update(_opening(c, fields["settled"], message_id, record, at, ts, kind))
    return _copy(c, **fields)


def _content(c: Conversation, entity_id: str, delta: str, ts: int, sub: str | None, kind: _Stream) -> Conversation:
    """Content (or args) for ``entity_id``: the client appends it to its
    message (or call) with that id, through the open entry while it
    streams; without one, it goes to an entry of its own, outside the list,
    open until its end."""
    call = kind == "tool"
    opens = c.open_calls if call else c.open
    opened = opens.get(entity_id)
    if opened is None or opened.start is None:
        found = (c.calls if call else c.by_id).get(entity_id)
        if found is not None:  # not streaming: straight into the client's message (or call)
            entry = c.settled[found]
            if type(entry) is ToolResult:
                return _replace(c, found, _copy(entry, content=JsonValue.of(entry.content.value + delta)))
            assert isinstance(entry, (Message, ToolCall))
            return _replace(c, found, _copy(entry, chunks=(*(entry.chunks or ()), delta), updated_at=_at(ts)))
        if opened is None:  # the client ignores it
            at = len(c.settled)
            c = _copy(c, **_opening(c, c.settled.append(_orphan(kind, entity_id, ts, sub)), entity_id, None, at, ts,
                                    kind))
            opens = c.open_calls if call else c.open
            opened = opens.get(entity_id)
            assert opened is not None
    opens = opens.with_open(_copy(opened, chunks=opened.chunks.append(delta), last=_at(ts)))
    return _copy(c, open_calls=opens) if call else _copy(c, open=opens)


def _end(c: Conversation, entity_id: str, ts: int, sub: str | None, kind: _Stream) -> Conversation:
    """The end of a message or call: it is no longer open, and what streamed
    into it becomes part of it, as one chunk. An end for nothing open
    changes nothing when the client has a message (or call) with that id,
    and otherwise makes an empty entry, started=False, outside the list."""
    call = kind == "tool"
    opens = c.open_calls if call else c.open
    opened = opens.get(entity_id)
    if opened is None:
        if (c.calls if call else c.by_id).get(entity_id) is not None:
            return c
        return _append(c, _orphan(kind, entity_id, ts, sub, ended=True))
    rest = opens.without(entity_id)
    entries = _drained(c.settled, opened, ended=True, ts=ts)
    return _copy(c, settled=entries, open_calls=rest) if call else _copy(c, settled=entries, open=rest)


def _is_assistant(entry: Entry) -> bool:
    return isinstance(entry, Message) and entry.kind == "text" and (entry.role or "assistant") == "assistant"


def _tool_call_start(c: Conversation, record: Record, ts: int, sub: str | None) -> Conversation:
    call_id, name = ev.field_of(record, "tool_call_id"), ev.field_of(record, "tool_call_name")
    existing = c.calls.get(call_id)
    if existing is not None:  # the client renames the call it has
        call = c.settled[existing]
        assert isinstance(call, ToolCall)
        entries = c.settled.set(existing, _copy(call, name=name))
        return _copy(c, **_opening(c, entries, call_id, record, existing, ts, "tool"))
    parent_id = ev.field_of(record, "parent_message_id")
    host = c.by_id.get(parent_id) if parent_id is not None else None
    fields: dict[str, Any] = {"settled": c.settled}
    if host is None or not _is_assistant(c.settled[host]):
        holder_id = call_id if parent_id is None or host is not None else parent_id
        host = len(c.settled)
        holder = Message("text", holder_id, "assistant", None, at=_at(ts), subagent_run_id=sub)
        fields = _pushed(c, c.settled, holder, holder_id)
    entries = fields["settled"]
    message = entries[host]
    assert isinstance(message, Message)
    entries = entries.set(host, _copy(message, tool_calls=(*(message.tool_calls or ()), call_id)))
    at = len(entries)
    entry = ToolCall(call_id, name, parent_id, started=True, at=_at(ts), subagent_run_id=sub, updated_at=_at(ts))
    fields.update(_opening(c, entries.append(entry), call_id, record, at, ts, "tool"))
    return _copy(c, **fields, calls=c.calls.set(call_id, at), call_host=c.call_host.set(call_id, host))


def _tool_result(c: Conversation, record: Record, ts: int, sub: str | None) -> Conversation:
    call_id, message_id = ev.field_of(record, "tool_call_id"), ev.field_of(record, "message_id")
    metadata = ev.field_of(record, "metadata")
    harness = _harness_metadata(_loads(metadata))
    name = _str_or_none(harness.get("tool_name"))
    if name is None:
        call = c.call(call_id)
        name = None if call is None else call.name
    content = JsonValue.of(ev.field_of(record, "content"))
    entry = ToolResult(call_id, name, _str_or_none(harness.get("outcome")), content, True, message_id, _at(ts), sub,
                       metadata)
    host = c.call_host.get(call_id)
    if host is None:
        return _copy(c, **_pushed(c, c.settled, entry, message_id))
    # After the host and the tool messages directly following it: the last
    # top-level message of that run of tool messages takes it after its own.
    listed, entries = c.listed, c.settled
    i = _index_in(listed, host)
    while i + 1 < len(listed) and type(entries[listed[i + 1]]) is ToolResult:
        i += 1
    anchor = str(listed[i])
    at = len(entries)
    by_id = c.by_id if message_id in c.by_id else c.by_id.set(message_id, at)
    return _copy(c, settled=entries.append(entry), by_id=by_id,
                 after=c.after.set(anchor, (*c.after.get(anchor, ()), at)))


def _index_in(listed: Vector[int], at: int) -> int:
    """Where position ``at`` is in ``listed`` (which increases): usually near the end."""
    hi = len(listed)
    lo = hi - 1
    step = 1
    while lo > 0 and listed[lo] > at:  # gallop back from the end, then bisect
        hi = lo
        lo = max(0, lo - step)
        step *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if listed[mid] < at:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _encrypted_value(c: Conversation, record: Record, ts: int) -> Conversation:
    entity_id, value = ev.field_of(record, "entity_id"), ev.field_of(record, "encrypted_value")
    at = (c.calls if ev.field_of(record, "subtype") == "tool-call" else c.by_id).get(entity_id)
    if at is None:
        return _append(c, _event_notice(ev.build(record), _at(ts)))
    entry = c.settled[at]
    assert isinstance(entry, (Message, ToolCall, ToolResult))
    return c if entry.encrypted_value == value else _replace(c, at, _copy(entry, encrypted_value=value))


def _run_start(c: Conversation, record: Record, ts: int, sub: str | None) -> Conversation:
    start = RunStart(ev.field_of(record, "thread_id"), ev.field_of(record, "run_id"), _at(ts))
    return _copy(c, settled=c.settled.append(start), started=record)


def _run_end(c: Conversation, record: Record, ts: int) -> Conversation:
    event: Any = ev.build(record)
    at = _at(ts)
    usage = _usage(event.usage)
    if ev.event_type(record) == "RUN_ERROR":
        outcome = Outcome("error", usage=usage, message=event.message, code=event.code, at=at)
    else:
        ended = event.outcome
        interrupts = tuple(_interrupt(i) for i in getattr(ended, "interrupts", None) or ())
        outcome = Outcome(ended.type if ended is not None else "success", _json_or_none(event.result), interrupts,
                          usage, at=at)
    return _copy(c, settled=c.settled.append(outcome), outcome=outcome, terminal=record)


def _subagent_start(c: Conversation, record: Record, ts: int) -> Conversation:
    run_id, parent_sub = ev.field_of(record, "subagent_run_id"), ev.field_of(record, "parent_subagent_run_id")
    parent = c.subagent(parent_sub) if parent_sub is not None else None
    entry = Subagent(run_id, ev.field_of(record, "name"), ev.field_of(record, "parent_tool_call_id"), parent_sub,
                     parent.depth + 1 if parent is not None else 1, started=True, at=_at(ts))
    at = len(c.settled)
    running = c.running.with_open(_Open(run_id, record, c.ticks, at))
    return _copy(c, settled=c.settled.append(entry), subagents=c.subagents.set(run_id, at), running=running,
                 ticks=c.ticks + 1)


def _subagent_end(c: Conversation, record: Record, ts: int, **changes: Any) -> Conversation:
    run_id = ev.field_of(record, "subagent_run_id")
    at = c.subagents.get(run_id)
    c = _copy(c, running=c.running.without(run_id))
    if at is None:
        entry = Subagent(run_id, at=_at(ts), ended_at=_at(ts), **changes)
        return _copy(c, settled=c.settled.append(entry), subagents=c.subagents.set(run_id, len(c.settled)))
    found = c.settled[at]
    assert isinstance(found, Subagent)
    return _replace(c, at, _copy(found, ended_at=_at(ts), **changes))


def _subagent_finished(c: Conversation, record: Record, ts: int, sub: str | None) -> Conversation:
    result = ev.field_of(record, "result")
    return _subagent_end(c, record, ts, status="finished", outcome=_type_of(ev.field_of(record, "outcome")),
                         result=None if result is None else JsonValue(result))


def _subagent_error(c: Conversation, record: Record, ts: int, sub: str | None) -> Conversation:
    return _subagent_end(c, record, ts, status="error", message=ev.field_of(record, "message"),
                         code=ev.field_of(record, "code"))


_Rule = Callable[[Conversation, Record, Any, "str | None"], Conversation]

# Every record kind's transition, by its AG-UI type.
_RULES: dict[str, _Rule] = {
    "RUN_STARTED": _run_start,
    "RUN_FINISHED": lambda c, r, ts, sub: _run_end(c, r, ts),
    "RUN_ERROR": lambda c, r, ts, sub: _run_end(c, r, ts),
    "TEXT_MESSAGE_START": lambda c, r, ts, sub: _message_start(c, r, ts, sub, "text"),
    "TEXT_MESSAGE_CONTENT": lambda c, r, ts, sub: _content(c, ev.field_of(r, "message_id"), ev.field_of(r, "delta"),
                                                           ts, sub, "text"),
    "TEXT_MESSAGE_END": lambda c, r, ts, sub: _end(c, ev.field_of(r, "message_id"), ts, sub, "text"),
    "REASONING_MESSAGE_START": lambda c, r, ts, sub: _message_start(c, r, ts, sub, "reasoning"),
    "REASONING_MESSAGE_CONTENT": lambda c, r, ts, sub: _content(c, ev.field_of(r, "message_id"),
                                                                ev.field_of(r, "delta"), ts, sub, "reasoning"),
    "REASONING_MESSAGE_END": lambda c, r, ts, sub: _end(c, ev.field_of(r, "message_id"), ts, sub, "reasoning"),
    "REASONING_ENCRYPTED_VALUE": lambda c, r, ts, sub: _encrypted_value(c, r, ts),
    "TOOL_CALL_START": _tool_call_start,
    "TOOL_CALL_ARGS": lambda c, r, ts, sub: _content(c, ev.field_of(r, "tool_call_id"), ev.field_of(r, "delta"),
                                                     ts, sub, "tool"),
    "TOOL_CALL_END": lambda c, r, ts, sub: _end(c, ev.field_of(r, "tool_call_id"), ts, sub, "tool"),
    "TOOL_CALL_RESULT": _tool_result,
    "CUSTOM": lambda c, r, ts, sub: _custom_record(c, r, ts, sub),
    "SUBAGENT_STARTED": lambda c, r, ts, sub: _subagent_start(c, r, ts),
    "SUBAGENT_FINISHED": _subagent_finished,
    "SUBAGENT_ERROR": _subagent_error,
}
assert _RULES.keys() == KINDS.keys(), "every record kind has its rule"


# -- reading JSON and event fields --------------------------------------------------------------

def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _type_of(outcome_text: str | None) -> str | None:
    outcome = _loads(outcome_text)
    kind = outcome.get("type") if isinstance(outcome, dict) else None
    return kind if isinstance(kind, str) else None


def _event_notice(event: BaseEvent, at: int | None) -> Notice:
    data = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("type", None)
    data.pop("timestamp", None)
    return Notice("event", event.type.value, JsonValue.of(data), at=at)


def _harness_metadata(metadata: Any) -> dict[str, Any]:
    harness = metadata.get("harness") if isinstance(metadata, dict) else None
    return harness if isinstance(harness, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _interrupt(it: Any) -> Interrupt:
    args = _harness_metadata(it.metadata).get("args")
    return Interrupt(it.id, it.reason, it.message, it.tool_call_id, _json_or_none(args), _json_or_none(it.metadata))


def _usage(usage: Any) -> tuple[TokenUsage, ...]:
    return tuple(
        TokenUsage(u.input_tokens, u.output_tokens, u.reasoning_tokens, u.cached_input_tokens,
                   u.cache_write_input_tokens, u.total_tokens, u.provider, u.model)
        for u in usage or ()
    )


# -- CUSTOM events ------------------------------------------------------------------------------

_INPUT = "harness.input."
_EXTENSION = "harness.extension."


def _custom_record(c: Conversation, record: Record, ts: int, sub: str | None) -> Conversation:
    name, value = ev.field_of(record, "name"), _loads(ev.field_of(record, "value"))
    if isinstance(value, dict) and "fragment" in value:
        event = ev.build(record)
        if is_fragment(event):
            assert isinstance(event, CustomEvent)
            return _fragment(c, event)
    if c.fragments:
        c = _drop_fragments(c, "incomplete before a CUSTOM event")
    return _custom(c, name, value, _at(ts), sub)


def _custom(c: Conversation, name: str, value: Any, at: int | None, sub: str | None) -> Conversation:
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict) and name.startswith(_INPUT):
        return _input(c, name[len(_INPUT):], value, payload, at, sub)
    return _append(c, _custom_entry(name, value, payload, at, sub))


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


def _input(c: Conversation, source: str, value: dict[str, Any], payload: dict[str, Any],
           at: int | None, sub: str | None) -> Conversation:
    content = payload.get("content")
    chunk = value.get("chunk")
    index = _int_or_none(chunk.get("index")) if isinstance(chunk, dict) else None
    count = _int_or_none(chunk.get("count")) if isinstance(chunk, dict) else None
    run_id, sequence = _str_or_none(value.get("run_id")), _int_or_none(value.get("sequence"))
    last = c.settled[-1] if c.settled else None
    if (isinstance(content, str) and index and isinstance(last, Input) and last.chunks is not None
            and not last.complete and last.next_chunk == index and last.source == source
            and (last.run_id, last.sequence) == (run_id, sequence)):
        return _replace(c, len(c.settled) - 1, _copy(last, chunks=(*last.chunks, content)))
    text = content if isinstance(content, str) else None
    entry = Input(source, _str_or_none(payload.get("input_id")), None if text is None else (text,),
                  None if text is not None else JsonValue.of(content), _json_or_none(payload.get("metadata")),
                  count if count and count > 0 else 1, index if index and index > 0 else 0, run_id, sequence, at,
                  sub)
    return _append(c, entry)


def _fragment(c: Conversation, event: CustomEvent) -> Conversation:
    value = event.value
    meta = value["fragment"]
    index, count = _int_or_none(meta.get("index")), _int_or_none(meta.get("count"))
    at = _at(event.timestamp)
    if index is None or count is None or not 0 <= index < count:
        c = _drop_fragments(c, "incomplete before a fragment out of sequence")
        return _append(c, Notice("fragments", event.name, JsonValue.of("a fragment without a valid index and count"),
                                 at=at))
    if c.fragments and index == 0:
        c = _drop_fragments(c, "incomplete before the first fragment of another event")
    piece = Fragment(event.name, index, count, value["data"], JsonValue.of(value.get("run_id")),
                     JsonValue.of(value.get("sequence")), at, event.subagent_run_id)
    pending = (*c.fragments, piece)
    if len(pending) < count:
        return _copy(c, fragments=pending)
    c = _copy(c, fragments=())
    try:
        joined = join_fragments([_fragment_event(f) for f in pending])
    except ValueError as e:
        return _append(c, Notice("fragments", event.name, JsonValue.of(f"fragments that do not join ({e})"), at=at))
    sub = joined.subagent_run_id
    return _custom(c, joined.name, joined.value, _at(joined.timestamp), sub if isinstance(sub, str) else None)


def _fragment_event(f: Fragment) -> CustomEvent:
    value = {"run_id": f.run_id.value, "sequence": f.sequence.value,
             "fragment": {"index": f.index, "count": f.count}, "data": f.data}
    return CustomEvent(name=f.name, value=value, timestamp=f.at, subagent_run_id=f.subagent_run_id)


def _drop_fragments(c: Conversation, why: str) -> Conversation:
    if not c.fragments:
        return c
    first = c.fragments[0]
    why = f"{len(c.fragments)} of {first.count} fragments, {why}"
    return _append(_copy(c, fragments=()), Notice("fragments", first.name, JsonValue.of(why), at=first.at))


# -- reading the client's messages --------------------------------------------------------------

def _order(c: Conversation) -> list[int]:
    """The positions of the client's messages, in its order."""
    out: list[int] = []
    after = c.after
    for at in c.listed:
        out.append(at)
        tail = after.get(str(at)) if after else None
        if tail is not None:
            out.extend(tail)
    return out


def _text(chunks: tuple[str, ...] | None, opened: _Open | None, streaming: bool) -> str:
    text = "".join(chunks or ())
    if opened is not None and not streaming:
        text += "".join(opened.chunks)
    return text


def _message_json(c: Conversation, at: int, *, streaming: bool,
                  opens: tuple[dict[int, _Open], dict[int, _Open]] | None = None) -> dict[str, Any]:
    """One message as the client holds it (camelCase JSON); with
    ``streaming``, without what streamed into it since its start when it is
    still open (the catch-up's content record sends that again). ``opens``:
    the open messages and calls by position (``_opens_by_at``), for a caller
    that asks for many messages."""
    if opens is None:
        opens = _opens_by_at(c)
    open_messages, open_calls = opens
    entry = c.settled[at]
    if type(entry) is ToolResult:
        out: dict[str, Any] = {"id": entry.message_id, "role": "tool", "content": entry.content.value,
                               "toolCallId": entry.tool_call_id}
        if entry.encrypted_value is not None:
            out["encryptedValue"] = entry.encrypted_value
        if entry.metadata is not None:
            out["metadata"] = _json.loads(entry.metadata)
        if entry.subagent_run_id is not None:
            out["subagentRunId"] = entry.subagent_run_id
        return out
    assert isinstance(entry, Message)
    out = {"id": entry.message_id, "role": "reasoning" if entry.kind == "reasoning" else entry.role or "assistant"}
    opened = open_messages.get(at)
    if entry.chunks is not None or (opened is not None and opened.chunks and not streaming):
        out["content"] = _text(entry.chunks, opened, streaming)
    if entry.tool_calls is not None:
        calls = []
        for call_id in entry.tool_calls:
            call_at = c.calls[call_id]
            call = c.settled[call_at]
            assert isinstance(call, ToolCall)
            args = _text(call.chunks, open_calls.get(call_at), streaming)
            item: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": call.name,
                                                                                    "arguments": args}}
            if call.encrypted_value is not None:
                item["encryptedValue"] = call.encrypted_value
            calls.append(item)
        out["toolCalls"] = calls
    if entry.encrypted_value is not None:
        out["encryptedValue"] = entry.encrypted_value
    if entry.subagent_run_id is not None:
        out["subagentRunId"] = entry.subagent_run_id
    return out


def _opens_by_at(c: Conversation) -> tuple[dict[int, _Open], dict[int, _Open]]:
    # The open messages and tool calls by their position: one pass, so that a snapshot of n messages
    # with m open (many live subagents) costs n + m, not n * m.
    return {o.at: o for o in c.open.by_id.values()}, {o.at: o for o in c.open_calls.by_id.values()}


def messages_json(c: Conversation, *, streaming: bool = False) -> list[dict[str, Any]]:
    """The client's messages as its JSON (camelCase keys, absent fields left out)."""
    opens = _opens_by_at(c)
    return [_message_json(c, at, streaming=streaming, opens=opens) for at in _order(c)]


_MESSAGE: TypeAdapter[Any] = TypeAdapter(UserMessage | AssistantMessage | ToolMessage | ReasoningMessage)


def messages_of(c: Conversation) -> tuple[Any, ...]:
    """The client's messages as fresh ``ag_ui.core`` message objects, in order."""
    return tuple(_MESSAGE.validate_python(d) for d in messages_json(c))


def catch_up_events(c: Conversation) -> tuple[BaseEvent, ...]:
    """What a client joining now needs (see this module's comment), as fresh
    events. Empty before RUN_STARTED."""
    if c.started is None:
        return ()
    out: list[BaseEvent] = [ev.build(c.started)]
    out.append(MessagesSnapshotEvent.model_validate(
        {"timestamp": _latest(c), "messages": messages_json(c, streaming=True)}))
    for opened in c.running:
        assert opened.start is not None
        out.append(ev.build(opened.start))
    for opened in sorted((*c.open.by_id.values(), *c.open_calls.by_id.values()), key=_opened_order):
        if opened.start is None:  # an entry the client never saw started
            continue
        out.append(ev.build(opened.start))
        record = _content_so_far(opened)
        if record is not None:
            out.append(ev.build(record))
    if c.terminal is not None:
        out.append(ev.build(c.terminal))
    return tuple(out)


def _latest(c: Conversation) -> int | None:
    stamps = [c.started[1]] if c.started is not None else []
    stamps.extend(o.last for o in (*c.open.by_id.values(), *c.open_calls.by_id.values()) if o.start is not None)
    if c.terminal is not None:
        stamps.append(c.terminal[1])
    known = [s for s in stamps if type(s) is int]
    return max(known) if known else None


def _content_so_far(opened: _Open) -> Record | None:
    text = "".join(opened.chunks)
    if not text:
        return None
    start = opened.start
    assert start is not None
    kind = ev.event_type(start)
    stamp = opened.last if opened.last is not None else start[1]
    if kind == "TOOL_CALL_START":
        record = ev.tool_call_args(stamp, opened.id, text)
    elif kind == "TEXT_MESSAGE_START":
        record = ev.text_content(stamp, opened.id, text)
    else:
        record = ev.reasoning_content(stamp, opened.id, text)
    sub = ev.subagent_of(start)
    return record if sub is None else ev.attributed(record, sub)
