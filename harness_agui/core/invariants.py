# What a projection state must satisfy to be one the reducer could have made,
# checked when a checkpoint is restored (``core.checkpoint``).
#
# Decoding a checkpoint builds only the state's own classes from fields of
# their declared types; that says nothing of how the parts agree. A
# checkpoint with a valid CRC can be written by anyone, and a forged one
# whose parts disagree (a subagent filed under another run id, a parent
# chain that loops, a held record of a kind the library never makes, a
# conversation whose index points at the wrong entry) decoded fine and then
# failed in ``observe``, ``messages`` or ``catch_up`` with a KeyError,
# IndexError, AssertionError or a pydantic ValidationError. ``check_state``
# states those agreements once, here, so that such a checkpoint is refused
# when it is restored and every accepted one is usable.
#
# The rules, for the stream (``ProjectionState``):
#   - the root Run is bound (run and thread ids) and has taken an item;
#   - every child is filed under its own run id, which its cursor holds, and
#     has taken an item; its announcement order is -1 (not yet ordered) or
#     one of 0 .. announced - 1, no two alike; only a pending child holds
#     records, each a record this release makes (``records.check``) of a
#     child of the stream; no parent chain loops;
#   - every owner of a published id is the root or a child;
#   - in every Run, open parts are in increasing index order, indices and
#     counts are not negative, only a tool call's part may wait for its name
#     or hold args, and the latest model request is not negative;
#   - a live-only log's conversation agrees with itself (``check_conversation``).
# And for a conversation (``Conversation``): every position its indexes hold
# is an entry of the right class with the right id (``by_id`` a message,
# ``calls`` a tool call, ``call_host`` a message, ``subagents`` a subagent,
# ``listed`` a message of the client's list, ``after`` tool results inserted
# after a listed message), every open entry is filed under its own id, names
# its entry and starts with a record of the matching kind, the records it
# keeps are records this release makes, and every listed message is one the
# client's list can hold (a role it knows, content where the message needs
# it, JSON that parses, tool calls that started): what ``messages()`` and ``catch_up()`` read of it. These
# rules restate what the client's own validation would say of the list,
# because running it (``messages_of``) would cost a restore more than the
# rest of the check.
#
# The cost is linear in the state (its children, parts, ids and, for a
# live-only log that tracks messages, the conversation's entries), next to
# the decoding of the same state. Each rule raises ``InconsistentState`` (a
# ValueError) naming what disagrees; nothing is changed.

from __future__ import annotations

from typing import Any

from . import _json
from . import records as ev
from .conversation import _MESSAGE, Conversation, Message, Subagent, ToolCall, ToolResult, _Opens
from .errors import HarnessAguiError
from .history import HistoryCursor
from .livelog import LiveLog
from .state import OpenPart, ProjectionState, RunState

__all__ = ["InconsistentState", "check_state", "check_conversation"]


class InconsistentState(HarnessAguiError, ValueError):
    """A state whose parts disagree (see the module comment)."""


def _fail(message: str) -> InconsistentState:
    return InconsistentState(message)


def check_state(state: ProjectionState) -> None:
    """InconsistentState unless ``state``'s parts agree (the module comment)."""
    root_id = state.run_id
    if root_id is None or state.thread_id is None:
        raise _fail("a root Run that is not bound")
    _check_run(state.root, root_id, "the root Run")
    subagents = state.subagents
    orders: set[int] = set()
    for key, sub in subagents.items():
        if sub.run_id != key:
            raise _fail(f"subagent {sub.run_id!r} filed under run id {key!r}")
        _check_run(sub.run, key, f"subagent {key!r}")
        if key == root_id:
            raise _fail(f"subagent {key!r} has the root Run's id")
        if sub.order != -1:
            if not 0 <= sub.order < state.announced or sub.order in orders:
                raise _fail(f"subagent {key!r} announced as number {sub.order} of {state.announced}")
            orders.add(sub.order)
        if sub.depth < 0:
            raise _fail(f"subagent {key!r} at depth {sub.depth}")
        if sub.pending:
            if sub.status != "pending":
                raise _fail(f"subagent {key!r} holds records though it is {sub.status}")
            for record in sub.pending:
                _check_record(record, f"a record held for subagent {key!r}")
                held_for = ev.subagent_of(record)
                if held_for is not None and held_for not in subagents:
                    raise _fail(f"a record held for subagent {key!r} names unknown subagent {held_for!r}")
    if state.announced < 0:
        raise _fail(f"{state.announced} subagents announced")
    _check_no_loop(state)
    for owners, what in ((state.message_owners, "message"), (state.call_owners, "tool call")):
        for published, owner in owners.items():
            if owner != root_id and owner not in subagents:
                raise _fail(f"{what} id {published!r} owned by unknown run {owner!r}")
    events = state.events
    if type(events) is LiveLog and events.messages is not None:
        check_conversation(events.messages)


def _check_no_loop(state: ProjectionState) -> None:
    subagents = state.subagents
    done: set[str] = set()
    for key in subagents:
        seen = []
        at: str | None = key
        while at is not None and at not in done and at in subagents:
            if at in seen:
                raise _fail(f"subagent {key!r} descends from itself")
            seen.append(at)
            at = subagents[at].parent_run_id
        done.update(seen)


def _check_run(run: RunState, run_id: str, what: str) -> None:
    history: HistoryCursor = run.history
    if history.run_id != run_id or history.thread_id is None:
        raise _fail(f"{what} whose cursor is of run {history.run_id!r}")
    if history.next_sequence < 1:
        raise _fail(f"{what} whose cursor expects sequence {history.next_sequence}")
    _check_parts(run.parts, what, "open")
    _check_parts(run.retired, what, "retired")
    request = run.request_index
    if request is not None and request < 0:
        raise _fail(f"{what} at model request {request}")


def _check_parts(parts: tuple[OpenPart, ...], what: str, which: str) -> None:
    last = -1
    for part in parts:
        if part.index <= last:
            raise _fail(f"{what} whose {which} parts are not in increasing index order")
        last = part.index
        if part.streamed < 0:
            raise _fail(f"{what} whose part {part.index} streamed {part.streamed} characters")
        if part.kind != "tool_call" and (not part.started or part.pending or part.object_args_json is not None):
            raise _fail(f"{what} whose {part.kind} part {part.index} waits like a tool call")


def _check_record(record: Any, what: str) -> None:
    try:
        ev.check(record)
    except ValueError as e:
        raise _fail(f"{what}: {e}") from None


# -- the conversation --------------------------------------------------------------------------

def check_conversation(c: Conversation) -> None:
    """InconsistentState unless conversation ``c`` agrees with itself (the
    module comment)."""
    settled = tuple(c.settled)  # read once: indexing a tuple is cheaper than a Vector lookup per index
    n = len(settled)

    def entry(at: Any, cls: type | tuple[type, ...], what: str) -> Any:
        if type(at) is not int or not 0 <= at < n:
            raise _fail(f"{what} at position {at!r} of {n} entries")
        found = settled[at]
        if not isinstance(found, cls):
            raise _fail(f"{what} at position {at}, which holds a {type(found).__name__}")
        return found

    for message_id, at in c.by_id.items():
        found = entry(at, (Message, ToolResult), f"message {message_id!r}")
        if found.message_id != message_id:
            raise _fail(f"message {message_id!r} at position {at}, which holds message {found.message_id!r}")
    for call_id, at in c.calls.items():
        if entry(at, ToolCall, f"tool call {call_id!r}").tool_call_id != call_id:
            raise _fail(f"tool call {call_id!r} at position {at}, which holds another call")
    for call_id, at in c.call_host.items():
        entry(at, Message, f"the message holding tool call {call_id!r}")
    for run_id, at in c.subagents.items():
        if entry(at, Subagent, f"subagent {run_id!r}").subagent_run_id != run_id:
            raise _fail(f"subagent {run_id!r} at position {at}, which holds another subagent")
    listed = set()
    for at in c.listed:
        _check_listed(c, settled, entry(at, (Message, ToolResult), "a listed message"), at)
        listed.add(at)
    for key, inserted in c.after.items():
        if not key.isdigit() or int(key) not in listed:
            raise _fail(f"tool results inserted after position {key!r}, which is no listed message")
        for at in inserted:
            _check_listed(c, settled, entry(at, ToolResult, f"a tool result inserted after position {key}"), at)
    _check_opens(c.open, entry, Message, ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"), "message_id",
                 c.ticks, started=False)
    _check_opens(c.open_calls, entry, ToolCall, ("TOOL_CALL_START",), "tool_call_id", c.ticks, started=False)
    _check_opens(c.running, entry, Subagent, ("SUBAGENT_STARTED",), "subagent_run_id", c.ticks, started=True)
    if c.started is not None:
        _check_record(c.started, "the run start")
        if ev.event_type(c.started) != "RUN_STARTED":
            raise _fail(f"a run start that is a {c.started[0]}")
    if c.terminal is not None:
        _check_record(c.terminal, "the run's end")
        if ev.event_type(c.terminal) not in ("RUN_FINISHED", "RUN_ERROR"):
            raise _fail(f"a run's end that is a {c.terminal[0]}")
    for fragment in c.fragments:
        if not 0 <= fragment.index < fragment.count:
            raise _fail(f"fragment {fragment.index} of {fragment.count}")


_ROLES = (None, "assistant", "user")  # the text messages the client's list holds (``conversation.messages_of``)


def _check_listed(c: Conversation, settled: tuple[Any, ...], found: Message | ToolResult, at: int) -> None:
    """A message of the client's list that ``messages_of`` and a catch-up can read: what
    ``conversation._message_json`` writes of it is a message of the client's."""
    if isinstance(found, ToolResult):
        if not found.in_run or found.message_id is None:
            raise _fail(f"a listed tool result at position {at} that is no message of the client's")
        try:
            content = found.content.value
            metadata = None if found.metadata is None else _json.loads(found.metadata)
        except (ValueError, RecursionError) as e:
            raise _fail(f"a listed tool result at position {at} whose JSON does not parse ({e})") from None
        if metadata is not None and type(metadata) is not dict:
            raise _fail(f"a listed tool result at position {at} whose metadata is not an object")
        if type(content) is not str:  # content parts: the client's own validation says (rare)
            try:
                _MESSAGE.validate_python({"id": found.message_id, "role": "tool", "content": content,
                                          "toolCallId": found.tool_call_id})
            except ValueError as e:
                raise _fail(f"a listed tool result at position {at} whose content is no message's ({e})") from None
        return
    if found.kind == "reasoning" or found.role == "user":
        if found.chunks is None:
            raise _fail(f"listed message {found.message_id!r} without content")
    elif found.role not in _ROLES:
        raise _fail(f"listed message {found.message_id!r} of role {found.role!r}")
    for call_id in found.tool_calls or ():
        call_at = c.calls.get(call_id)
        if call_at is None or settled[call_at].name is None:
            raise _fail(f"message {found.message_id!r} holds tool call {call_id!r}, which never started")


def _check_opens(opens: _Opens, entry: Any, cls: type, kinds: tuple[str, ...], id_field: str,
                 ticks: int, *, started: bool) -> None:
    for key, opened in opens.by_id.items():
        if opened.id != key:
            raise _fail(f"{opened.id!r} open under the id {key!r}")
        if not 0 <= opened.order < ticks:
            raise _fail(f"{opened.id!r} opened as number {opened.order} of {ticks}")
        found = entry(opened.at, cls, f"open {opened.id!r}")
        if getattr(found, "message_id" if cls is Message else id_field) != opened.id:
            raise _fail(f"open {opened.id!r} at position {opened.at}, which holds another entry")
        start = opened.start
        if start is None:
            if started:
                raise _fail(f"open {opened.id!r} without its start")
            continue
        _check_record(start, f"the start of open {opened.id!r}")
        if ev.event_type(start) not in kinds or ev.field_of(start, id_field) != opened.id:
            raise _fail(f"open {opened.id!r} started by a {start[0]} of another id")
