# The AG-UI message list, as the official client builds it, kept as a
# persistent value and grown record by record.
#
# ``fold_records(messages, records)`` applies emitted records the way
# ``@ag-ui/client`` (1.0, its default event applier) applies the events they
# stand for, and returns a new ``Messages`` value; nothing is mutated. The
# rules it mirrors, stated once:
#
#   - TEXT_MESSAGE_START pushes ``{id, role, content: ""}`` unless a message
#     with that id exists; REASONING_MESSAGE_START pushes a reasoning message
#     the same way; *_CONTENT appends to the first message with the id.
#   - TOOL_CALL_START adds the call to the assistant message named by
#     ``parentMessageId``; when there is none it pushes a new assistant
#     message (id: the parent id, or the call id when the parent is not an
#     assistant message, or the call id without a parent), which takes the
#     event's ``subagentRunId``. TOOL_CALL_ARGS appends to the call's args.
#   - TOOL_CALL_RESULT makes a tool message (with the event's metadata) and
#     inserts it after the assistant message holding the call and the tool
#     messages that directly follow it; without such a message it is pushed.
#   - REASONING_ENCRYPTED_VALUE sets ``encryptedValue`` on the message
#     (subtype "message") or the tool call ("tool-call") it names.
#   - Every message made from an event of a subagent keeps its
#     ``subagentRunId``.
#
# Layout. Messages are numbered in the order they were made (``key``, their
# index in ``messages``); the list the client holds is ``entries`` (keys in
# push order) with, after each entry, the tool messages inserted right after
# it (``after``), so an insert is a map update rather than a splice. While a
# message or tool call streams, its deltas go to its entry in ``open`` /
# ``open_calls`` (a map of a few entries, cheap to update per delta); its end
# joins them into the message or call as one string. Besides the messages,
# the value keeps what a client that joins now needs to accept the rest of
# the stream (``catch_up``): the RUN_STARTED record, the messages and tool
# calls started and not yet ended (with their start record and what
# streamed so far), the subagents running, and the terminal record.
#
# ``messages_of`` renders the list as ``ag_ui.core`` messages (fresh objects
# each time) and ``catch_up_records`` as the records of a late joiner's stream:
# RUN_STARTED, one MESSAGES_SNAPSHOT (every message, in order; a message or
# call still streaming is in it with empty content), the SUBAGENT_STARTED of
# every subagent still running, then for every message or call still open its
# start and one content record holding what streamed so far, and the terminal
# event when the Run has ended. Applied by the client, that gives exactly the
# messages the full stream gives, and every later live event applies cleanly.

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    MessagesSnapshotEvent,
    ReasoningMessage,
    ToolMessage,
    UserMessage,
)
from pydantic import TypeAdapter
from pyrsistent import PMap, PVector, pmap, pvector

from . import _json
from . import records as ev
from ._fast import with_fields
from .records import Record

__all__ = ["Messages", "EMPTY_MESSAGES", "fold_records", "messages_of", "messages_json", "catch_up_events"]

_NO_CHUNKS: PVector[str] = pvector()
_NO_KEYS: PVector[int] = pvector()


@attrs.frozen(slots=False)
class _Message:
    role: str
    id: str
    chunks: PVector[str] | None = _NO_CHUNKS  # None: no content (an assistant message made for tool calls)
    subagent_run_id: str | None = None
    tool_calls: PVector[str] | None = None
    tool_call_id: str | None = None
    encrypted_value: str | None = None
    metadata: str | None = None  # JSON text of the merged metadata


@attrs.frozen(slots=False)
class _Call:
    id: str
    name: str
    chunks: PVector[str] = _NO_CHUNKS
    encrypted_value: str | None = None


@attrs.frozen(slots=False)
class _Open:
    """A message or tool call started and not ended: its start record, the
    order it started in, what streamed into it since (kept here, a small
    map, until its end folds it into the message or call) and the timestamp
    of the latest of that."""

    id: str
    start: Record
    order: int
    chunks: PVector[str] = _NO_CHUNKS
    last: int = 0


# What is open at once is a handful of messages and calls: a short tuple, searched, is cheaper to
# update per delta than a map.
_Opens = tuple[_Open, ...]


def _find(opens: _Opens, entity_id: str) -> _Open | None:
    for o in opens:
        if o.id == entity_id:
            return o
    return None


def _without(opens: _Opens, entity_id: str) -> _Opens:
    return tuple(o for o in opens if o.id != entity_id)


def _with(opens: _Opens, new: _Open) -> _Opens:
    for i, o in enumerate(opens):
        if o.id == new.id:
            return opens[:i] + (new,) + opens[i + 1:]
    return opens + (new,)


@attrs.frozen(slots=False)
class Messages:
    """The AG-UI messages a client has built from the records folded so far
    (see this module's comment). Read it with ``messages_of``."""

    messages: PVector[_Message] = pvector()  # by key: keys are handed out 0, 1, 2, ...
    entries: PVector[int] = _NO_KEYS
    after: PMap[int, PVector[int]] = pmap()
    by_id: PMap[str, int] = pmap()
    calls: PMap[str, _Call] = pmap()
    call_host: PMap[str, int] = pmap()
    open: _Opens = ()  # messages still streaming (by message id)
    open_calls: _Opens = ()  # tool calls still streaming (by call id: another namespace)
    subagents: _Opens = ()  # subagents running (by subagent run id)
    started: Record | None = None
    terminal: Record | None = None
    ticks: int = 0

    def __len__(self) -> int:
        return len(self.messages)

    def __repr__(self) -> str:
        return f"Messages({len(self.messages)} messages, {len(self.open) + len(self.open_calls)} open)"


EMPTY_MESSAGES = Messages()

_copy = with_fields  # attrs.evolve for these classes, without its per-call introspection (see _fast)


def fold_records(messages: Messages, records: Iterable[Record]) -> Messages:
    """``messages`` after the client applied ``records`` (in order)."""
    for record in records:
        messages = _apply(messages, record)
    return messages


def _push(m: Messages, message: _Message, *, top: bool = True) -> tuple[Messages, int]:
    key = len(m.messages)
    by_id = m.by_id if message.id in m.by_id else m.by_id.set(message.id, key)
    entries = m.entries.append(key) if top else m.entries
    return _copy(m, messages=m.messages.append(message), entries=entries, by_id=by_id), key


def _opened(m: Messages, entity_id: str, record: Record, *, call: bool) -> Messages:
    opened = _Open(entity_id, record, m.ticks, _NO_CHUNKS, record[1])
    if call:
        return _copy(m, open_calls=_with(m.open_calls, opened), ticks=m.ticks + 1)
    return _copy(m, open=_with(m.open, opened), ticks=m.ticks + 1)


def _stream(m: Messages, entity_id: str, delta: str, ts: int, *, call: bool) -> Messages:
    """Content (or args) for ``entity_id``: into its open entry while it
    streams, else straight into the message (or call) the client finds."""
    streaming = m.open_calls if call else m.open
    opened = _find(streaming, entity_id)
    if opened is not None:
        streaming = _with(streaming, _copy(opened, chunks=opened.chunks.append(delta), last=ts))
        return _copy(m, open_calls=streaming) if call else _copy(m, open=streaming)
    if call:
        found = m.calls.get(entity_id)
        if found is None:
            return m  # the client warns and ignores it
        return _copy(m, calls=m.calls.set(entity_id, _copy(found, chunks=found.chunks.append(delta))))
    key = m.by_id.get(entity_id)
    if key is None:
        return m
    message = m.messages[key]
    chunks = message.chunks if message.chunks is not None else _NO_CHUNKS
    return _copy(m, messages=m.messages.set(key, _copy(message, chunks=chunks.append(delta))))


def _ended(m: Messages, entity_id: str, *, call: bool) -> Messages:
    """The end of a message or call: what streamed into its open entry
    becomes part of it, as one chunk."""
    streaming = m.open_calls if call else m.open
    opened = _find(streaming, entity_id)
    if opened is None:
        return m
    rest = _without(streaming, entity_id)
    m = _copy(m, open_calls=rest) if call else _copy(m, open=rest)
    if not opened.chunks:
        return m
    text = "".join(opened.chunks)
    if call:
        found = m.calls.get(entity_id)
        if found is None:
            return m
        return _copy(m, calls=m.calls.set(entity_id, _copy(found, chunks=_joined(found.chunks, text))))
    key = m.by_id.get(entity_id)
    if key is None:
        return m
    message = m.messages[key]
    return _copy(m, messages=m.messages.set(key, _copy(message, chunks=_joined(message.chunks, text))))


def _joined(chunks: PVector[str] | None, text: str) -> PVector[str]:
    return pvector([text]) if not chunks else pvector(["".join(chunks) + text])


# What each record tag does: (the AG-UI type, whether the record is a subagent's).
_TAGS: dict[str, tuple[str, bool]] = {}


def _tag(record: Record) -> tuple[str, bool]:
    found = _TAGS.get(record[0])
    if found is None:
        found = _TAGS[record[0]] = (ev.event_type(record), ev.subagent_of(record) is not None)
    return found


def _apply(m: Messages, record: Record) -> Messages:
    kind, attributed = _tag(record)
    sub = ev.subagent_of(record) if attributed else None
    ts = record[1]
    if kind == "TEXT_MESSAGE_CONTENT" or kind == "REASONING_MESSAGE_CONTENT":
        return _stream(m, ev.field_of(record, "message_id"), ev.field_of(record, "delta"), ts, call=False)
    if kind == "TOOL_CALL_ARGS":
        return _stream(m, ev.field_of(record, "tool_call_id"), ev.field_of(record, "delta"), ts, call=True)
    if kind == "TEXT_MESSAGE_START" or kind == "REASONING_MESSAGE_START":
        message_id = ev.field_of(record, "message_id")
        m = _opened(m, message_id, record, call=False)
        if message_id in m.by_id:
            return m
        role = (ev.field_of(record, "role") or "assistant") if kind == "TEXT_MESSAGE_START" else "reasoning"
        m, _ = _push(m, _Message(role, message_id, subagent_run_id=sub))
        return m
    if kind == "TEXT_MESSAGE_END" or kind == "REASONING_MESSAGE_END":
        return _ended(m, ev.field_of(record, "message_id"), call=False)
    if kind == "TOOL_CALL_END":
        return _ended(m, ev.field_of(record, "tool_call_id"), call=True)
    if kind == "TOOL_CALL_START":
        return _tool_call_start(m, record, sub)
    if kind == "TOOL_CALL_RESULT":
        return _tool_result(m, record, sub)
    if kind == "REASONING_ENCRYPTED_VALUE":
        entity_id, value = ev.field_of(record, "entity_id"), ev.field_of(record, "encrypted_value")
        if ev.field_of(record, "subtype") == "tool-call":
            call = m.calls.get(entity_id)
            return m if call is None else _copy(m, calls=m.calls.set(entity_id, _copy(call, encrypted_value=value)))
        key = m.by_id.get(entity_id)
        if key is None:
            return m
        return _copy(m, messages=m.messages.set(key, _copy(m.messages[key], encrypted_value=value)))
    if kind == "RUN_STARTED":
        return _copy(m, started=record)
    if kind == "RUN_FINISHED" or kind == "RUN_ERROR":
        return _copy(m, terminal=record)
    if kind == "SUBAGENT_STARTED":
        run_id = ev.field_of(record, "subagent_run_id")
        return _copy(m, subagents=_with(m.subagents, _Open(run_id, record, m.ticks, _NO_CHUNKS, ts)),
                     ticks=m.ticks + 1)
    if kind == "SUBAGENT_FINISHED" or kind == "SUBAGENT_ERROR":
        return _copy(m, subagents=_without(m.subagents, ev.field_of(record, "subagent_run_id")))
    return m  # CUSTOM and anything else builds no message


def _tool_call_start(m: Messages, record: Record, sub: str | None) -> Messages:
    call_id, name = ev.field_of(record, "tool_call_id"), ev.field_of(record, "tool_call_name")
    m = _opened(m, call_id, record, call=True)
    existing = m.calls.get(call_id)
    if existing is not None:
        return m if existing.name == name else _copy(m, calls=m.calls.set(call_id, _copy(existing, name=name)))
    parent_id = ev.field_of(record, "parent_message_id")
    host = m.by_id.get(parent_id) if parent_id is not None else None
    if host is not None and m.messages[host].role == "assistant":
        message = m.messages[host]
    else:
        new_id = call_id if parent_id is None or host is not None else parent_id
        m, host = _push(m, _Message("assistant", new_id, chunks=None, subagent_run_id=sub))
        message = m.messages[host]
    calls = message.tool_calls if message.tool_calls is not None else _NO_CHUNKS
    message = _copy(message, tool_calls=calls.append(call_id))
    return _copy(m, messages=m.messages.set(host, message), calls=m.calls.set(call_id, _Call(call_id, name)),
                 call_host=m.call_host.set(call_id, host))


def _tool_result(m: Messages, record: Record, sub: str | None) -> Messages:
    call_id = ev.field_of(record, "tool_call_id")
    message = _Message("tool", ev.field_of(record, "message_id"), pvector([ev.field_of(record, "content")]),
                       subagent_run_id=sub, tool_call_id=call_id, metadata=ev.field_of(record, "metadata"))
    host = m.call_host.get(call_id)
    if host is None:
        m, _ = _push(m, message)
        return m
    # After the host and the tool messages directly following it: the last
    # top-level entry of that run of tool messages takes it after its own.
    entries, messages = m.entries, m.messages
    at = _position(m, host)
    while at + 1 < len(entries) and messages[entries[at + 1]].role == "tool":
        at += 1
    anchor = entries[at]
    m, key = _push(m, message, top=False)
    return _copy(m, after=m.after.set(anchor, m.after.get(anchor, _NO_KEYS).append(key)))


def _position(m: Messages, key: int) -> int:
    # Entries hold keys in increasing order (keys are handed out in push order): a binary search.
    entries = m.entries
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


# -- reading -----------------------------------------------------------------------------------

def _order(m: Messages) -> list[int]:
    """The keys of every message, in the client's order."""
    out: list[int] = []
    after = m.after
    for key in m.entries:
        out.append(key)
        tail = after.get(key)
        if tail is not None:
            out.extend(tail)
    return out


def _message_json(m: Messages, message: _Message, *, streaming: bool) -> dict[str, Any]:
    """One message as the client holds it (camelCase JSON); with
    ``streaming``, without what streamed into it since its start when it is
    still open (the catch-up's content record sends that again)."""
    out: dict[str, Any] = {"id": message.id, "role": message.role}
    opened = _find(m.open, message.id)
    if message.chunks is not None or opened is not None:
        text = "".join(message.chunks or ())
        if opened is not None and not streaming:
            text += "".join(opened.chunks)
        out["content"] = text
    if message.tool_calls is not None:
        calls = []
        for call_id in message.tool_calls:
            call = m.calls[call_id]
            args = "".join(call.chunks)
            streamed = _find(m.open_calls, call_id)
            if streamed is not None and not streaming:
                args += "".join(streamed.chunks)
            entry: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": call.name,
                                                                                     "arguments": args}}
            if call.encrypted_value is not None:
                entry["encryptedValue"] = call.encrypted_value
            calls.append(entry)
        out["toolCalls"] = calls
    if message.tool_call_id is not None:
        out["toolCallId"] = message.tool_call_id
    if message.encrypted_value is not None:
        out["encryptedValue"] = message.encrypted_value
    if message.metadata is not None:
        out["metadata"] = _json.loads(message.metadata)
    if message.subagent_run_id is not None:
        out["subagentRunId"] = message.subagent_run_id
    return out


def messages_json(m: Messages, *, streaming: bool = False) -> list[dict[str, Any]]:
    """The messages as the client's JSON (camelCase keys, absent fields left out)."""
    messages = m.messages
    return [_message_json(m, messages[key], streaming=streaming) for key in _order(m)]


_MESSAGE: TypeAdapter[Any] = TypeAdapter(UserMessage | AssistantMessage | ToolMessage | ReasoningMessage)


def messages_of(m: Messages) -> tuple[Any, ...]:
    """The messages as fresh ``ag_ui.core`` message objects, in order."""
    return tuple(_MESSAGE.validate_python(d) for d in messages_json(m))


def catch_up_events(m: Messages) -> tuple[BaseEvent, ...]:
    """What a client joining now needs (see this module's comment), as fresh
    events. Empty before RUN_STARTED."""
    if m.started is None:
        return ()
    out: list[BaseEvent] = [ev.build(m.started)]
    out.append(MessagesSnapshotEvent.model_validate(
        {"timestamp": _latest(m), "messages": messages_json(m, streaming=True)}))
    for opened in sorted(m.subagents, key=lambda o: o.order):
        out.append(ev.build(opened.start))
    for opened in sorted((*m.open, *m.open_calls), key=lambda o: o.order):
        out.append(ev.build(opened.start))
        record = _content_so_far(opened)
        if record is not None:
            out.append(ev.build(record))
    if m.terminal is not None:
        out.append(ev.build(m.terminal))
    return tuple(out)


def _latest(m: Messages) -> int | None:
    stamps: list[int] = [m.started[1]] if m.started is not None else []
    stamps.extend(o.last for o in (*m.open, *m.open_calls))
    if m.terminal is not None:
        stamps.append(m.terminal[1])
    return max(stamps) if stamps else None


def _content_so_far(opened: _Open) -> Record | None:
    entity_id = opened.id
    text = "".join(opened.chunks)
    if not text:
        return None
    start = opened.start
    kind = ev.event_type(start)
    if kind == "TOOL_CALL_START":
        record = ev.tool_call_args(opened.last, entity_id, text)
    elif kind == "TEXT_MESSAGE_START":
        record = ev.text_content(opened.last, entity_id, text)
    else:
        record = ev.reasoning_content(opened.last, entity_id, text)
    sub = ev.subagent_of(start)
    return record if sub is None else ev.attributed(record, sub)
