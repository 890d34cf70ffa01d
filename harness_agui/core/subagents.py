# Subagents: one stream, many Runs.
#
# A Harness Run that delegates publishes, in its one stream, its own items
# and the forwarded items of its child Runs (and theirs: nesting goes as deep
# as delegation does). A child has its own run id, thread id and sequence
# domain (from 0), and its items are interleaved with everyone else's. The
# facts this module relies on (INPUT_SPACE.md section 2, a13n-lab REPORT
# S11-S13):
#
#   - a child's first item is its own lifecycle ``run_started`` at sequence 0;
#   - its sequence 1 is the link, a ``delegation`` extension
#     ``{"type": "inline_delegation", "action": "started", "child_run_id",
#     "parent_run_id", "parent_tool_call_id", "subagent", ...}`` under the
#     child's own run id (the *announcement*);
#   - the end of a delegation, ``action`` "completed" or "failed", comes under
#     the delegating Run's run id (the root, or a middle child);
#   - a child has no terminal item; a failed one simply stops (open parts
#     without their end), and when the root is cancelled mid-child the
#     child's items just stop and the root's terminal follows.
#
# The observer binds the root Run with the first item; an item of another run
# id is a child item. ``reduce.step`` runs the plain single-Run path until
# the first child item arrives, and from then on (``state.delegation`` is no
# longer None) hands every item to ``step`` below. Each Run, root and child,
# is converted by the very same per-Run conversion (``reduce``'s, reached
# through the ``RunConversion`` it passes in, so this module does not import
# the reducer) on its own per-Run state: a child keeps a whole
# ProjectionState of its own in its ``SubagentState``, whose history cursor
# checks that child's order with ``history.advance`` like any Run's.
#
# What the stream becomes in AG-UI:
#
#   - a child's items before its announcement (its run_started) are converted
#     and held in ``SubagentState.pending``; the announcement emits
#     SUBAGENT_STARTED (name, parentToolCallId, parentSubagentRunId for a
#     grandchild), then the held events, then its own CUSTOM event;
#   - every event of a child is the ordinary event with ``subagent_run_id``
#     set (``records.attributed``); a child never gets RUN_STARTED or
#     RUN_FINISHED;
#   - the end of a delegation closes the child's still running children
#     (deepest first, each with SUBAGENT_ERROR code ``CUT_OFF``), then the
#     child's open parts, then emits SUBAGENT_FINISHED (outcome success,
#     result: the text of the child's last assistant text message as
#     published, when it has one) or SUBAGENT_ERROR (code: the delegation's ``status``), then
#     the delegating Run's own CUSTOM event for the item;
#   - the root's terminal item closes every child still running the same way
#     (SUBAGENT_ERROR ``CUT_OFF``), emits the held events of children never
#     announced, then closes the root's parts and ends the run;
#   - the delegation extensions themselves stay CUSTOM events
#     (``harness.extension.delegation``), so nothing of the source is lost.
#
# Ids stay unique across the stream. Generated message ids already hold the
# run id. A message id (a part's own id, a tool result's ``<call>:result``)
# or a tool call id that another Run of the stream already published is
# published as ``<id>:<run_id>`` instead (``<id>:<run_id>:<n>``, n = 2, 3,
# ... while that is taken too), and every later event of that Run that
# refers to it (content, end, args, signature, parentMessageId, the tool
# result and its ``<renamed call>:result`` message id, a grandchild's
# parentToolCallId) uses the new id. The first Run to publish an id keeps
# it, so a stream without collisions is published unchanged. Message ids and
# tool call ids are separate namespaces, as in AG-UI.
#
# Order faults (core.errors): the first item of an unknown run that is not a
# run_started at sequence 0 is an item of a foreign Run, the ForeignRunError
# any reader of one Run's history raises. An item of a run the stream never
# announced (a second item that is not its announcement), an announcement
# naming a parent that is unknown or not yet announced, a delegation end sent
# by a Run that did not start that child, or a subagent Run starting after
# the root's terminal result is an UnknownSubagentError (a ForeignRunError); an
# item of a finished child, an announcement naming a finished parent, or a
# second end of one delegation is a FinishedSubagentError (an
# AfterTerminalError). A child's repeated, earlier or skipped sequence is the
# usual SequenceOrderError / SequenceGapError under the child's run id.
# A delegation end that names no child Run the stream linked (a dispatch
# that failed before the child ran) is only its CUSTOM event.

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import attrs
from pyrsistent import PMap

from . import _json
from . import records as ev
from .errors import AguiObservationError, FinishedSubagentError, ForeignRunError, UnknownSubagentError
from .history import INITIAL_CURSOR, HistoryCursor
from .history import advance as advance_history
from .idmap import IdMap
from .processor import apply_processor
from .records import Record
from .source import ExtensionEvent, HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from .state import INITIAL_STATE, Delegation, ProjectionState, SubagentState, SubagentStatus, with_changes

__all__ = ["RunConversion", "DelegationNotice", "delegation_notice", "step", "CUT_OFF"]

CUT_OFF = "harness_agui.subagent_cut_off"
"""The SUBAGENT_ERROR code of a subagent still running when its parent
finished or the root Run ended."""

_SUCCESS = _json.dumps({"type": "success"})


class RunConversion(Protocol):
    """The per-Run conversion ``reduce`` passes to ``step``."""

    def timestamp(self, item: HarnessStreamEvent) -> int:
        """The item's ``occurred_at`` in epoch milliseconds."""

    def convert(self, run: ProjectionState, history: HistoryCursor, item: HarnessEvent, ts: int,
                out: list[Record]) -> ProjectionState:
        """Append the records of a non-terminal item of ``run`` to ``out``;
        return ``run`` after it, with ``history`` as its cursor."""

    def close(self, run: ProjectionState, ts: int, out: list[Record]) -> ProjectionState:
        """Append the ends of ``run``'s open parts to ``out``; return ``run``
        with no part open."""

    def terminal(self, item: HarnessRunResultEvent, ts: int) -> list[Record]:
        """The records of the root Run's terminal item."""


Processor = Callable[[Any, Any], Any]


@attrs.frozen
class DelegationNotice:
    """The fields of an ``inline_delegation`` extension payload this module
    reads (each None when absent or not a string)."""

    action: str
    child_run_id: str | None
    parent_run_id: str | None
    parent_tool_call_id: str | None
    subagent: str | None
    status: str | None


def delegation_notice(payload: Any) -> DelegationNotice | None:
    """The delegation notice a payload carries, or None for any other payload."""
    if type(payload) is not ExtensionEvent or payload.kind != "delegation":
        return None
    body = payload.payload
    if not isinstance(body, dict) or body.get("type") != "inline_delegation":
        return None
    action = body.get("action")
    if not isinstance(action, str):
        return None

    def text(name: str) -> str | None:
        value = body.get(name)
        return value if isinstance(value, str) else None

    return DelegationNotice(action, text("child_run_id"), text("parent_run_id"), text("parent_tool_call_id"),
                            text("subagent") or text("child_instance_id"), text("status"))


def _is_run_started(item: HarnessStreamEvent) -> bool:
    if not isinstance(item, HarnessEvent) or type(item.event) is not ExtensionEvent:
        return False
    body = item.event.payload
    return item.event.kind == "lifecycle" and isinstance(body, dict) and body.get("type") == "run_started"


# -- the transition ----------------------------------------------------------------------

def step(state: ProjectionState, item: HarnessStreamEvent, processor: Processor | None,
         conv: RunConversion) -> tuple[ProjectionState, list[Record]]:
    """``reduce.step`` for a stream that carries subagent Runs: ``item`` is an
    item of the root Run bound by ``state`` or of a child Run. Same contract
    as ``reduce.step``; raises the errors named in this module's comment."""
    delegation = state.delegation if state.delegation is not None else _begin(state)
    ts = conv.timestamp(item)
    if item.run_id == state.history.run_id:
        return _root_step(state, delegation, item, ts, processor, conv)
    return _child_step(state, delegation, item, ts, processor, conv)


def _root_step(state: ProjectionState, d: Delegation, item: HarnessStreamEvent, ts: int,
               processor: Processor | None, conv: RunConversion) -> tuple[ProjectionState, list[Record]]:
    history = advance_history(state.history, item)  # the root Run's own order
    root_id = state.history.run_id
    assert root_id is not None
    out: list[Record] = []
    if isinstance(item, HarnessRunResultEvent):
        open_ = sorted((s for s in d.runs.values() if s.running), key=lambda s: (-s.depth, s.order))
        for sub in open_:
            if d.runs[sub.run_id].running:
                d, records = _close(state, d, sub.run_id, ts, conv, "cut_off",
                                    f"the run ended before subagent {sub.name!r} finished", CUT_OFF)
                out.extend(_processed(processor, item, records))
        for sub in sorted((s for s in d.runs.values() if s.status == "pending"), key=lambda s: s.run_id):
            out.extend(sub.pending)  # held events of a child never announced: processed when they came
            d = with_changes(d, runs=d.runs.set(sub.run_id, with_changes(sub, status="cut_off", pending=())))
        own: list[Record] = []
        run = conv.close(state, ts, own)
        own.extend(conv.terminal(item, ts))
        d, own = _publish_root(d, root_id, own)
        out.extend(_processed(processor, item, own))
        run = ProjectionState.of(history, run.request_index, None, (), run.calls, run.message_ids, run.events)
    else:
        assert isinstance(item, HarnessEvent)
        d, records = _delegation_end(state, d, item, ts, conv)
        out.extend(_processed(processor, item, records))
        own = []
        run = conv.convert(state, history, item, ts, own)
        d, own = _publish_root(d, root_id, own)
        out.extend(_processed(processor, item, own))
    d = _note_texts(d, len(state.events), out)
    return _commit(run, state, d, out), out


def _child_step(state: ProjectionState, d: Delegation, item: HarnessStreamEvent, ts: int,
                processor: Processor | None, conv: RunConversion) -> tuple[ProjectionState, list[Record]]:
    root_id = state.history.run_id
    run_id = item.run_id
    sub = d.runs.get(run_id)
    if sub is None:
        return _first_child_item(state, d, item, ts, processor, conv), []
    if sub.finished:
        raise FinishedSubagentError(
            f"an item of subagent run {run_id!r}, which already {_ended(sub)} in the stream of run {root_id!r}",
            run_id=run_id, sequence=item.sequence, subagent_run_id=run_id, root_run_id=root_id)
    history = advance_history(sub.run.history, item)  # the child's own order: repeat, decrease, gap
    if isinstance(item, HarnessRunResultEvent):
        raise AguiObservationError(
            f"a terminal result of subagent run {run_id!r} in the stream of run {root_id!r}: only the root Run "
            f"has one", sequence=item.sequence)
    out: list[Record] = []
    if sub.status == "pending":
        d, sub, started = _announce(state, d, sub, item, ts)
        out.extend(_processed(processor, item, started))
        out.extend(sub.pending)
        sub = with_changes(sub, pending=())
    else:
        d, records = _delegation_end(state, d, item, ts, conv)
        out.extend(_processed(processor, item, records))
        sub = d.runs[run_id]
    own: list[Record] = []
    run = conv.convert(sub.run, history, item, ts, own)
    d, sub, own = _publish_child(d, with_changes(sub, run=run), own)
    out.extend(_processed(processor, item, own))
    d = with_changes(d, runs=d.runs.set(run_id, sub))
    d = _note_texts(d, len(state.events), out)
    return _commit(state, state, d, out), out


def _first_child_item(state: ProjectionState, d: Delegation, item: HarnessStreamEvent, ts: int,
                      processor: Processor | None, conv: RunConversion) -> ProjectionState:
    """A child Run's first item: its run_started at sequence 0, held until
    its announcement."""
    root_id = state.history.run_id
    run_id = item.run_id
    if item.sequence != 0 or not _is_run_started(item):
        # Nothing says this is a subagent Run: as for any reader of one Run's history, a foreign Run.
        raise ForeignRunError(
            f"an item of run {run_id!r} in the stream of run {root_id!r} (a subagent run starts with its "
            f"lifecycle run_started at sequence 0)",
            run_id=root_id, sequence=item.sequence, thread_id=state.thread_id, found_run_id=run_id,
            found_thread_id=item.thread_id)
    if state.finished:
        raise UnknownSubagentError(
            f"subagent run {run_id!r} starts after the terminal result of run {root_id!r}",
            run_id=root_id, sequence=item.sequence, thread_id=state.thread_id, found_run_id=run_id,
            found_thread_id=item.thread_id, subagent_run_id=run_id)
    assert isinstance(item, HarnessEvent)
    history = advance_history(INITIAL_CURSOR, item)
    own: list[Record] = []
    run = conv.convert(INITIAL_STATE, history, item, ts, own)
    sub = SubagentState(run_id, run)
    d, sub, own = _publish_child(d, sub, own)
    sub = with_changes(sub, pending=tuple(_processed(processor, item, own)))
    d = with_changes(d, runs=d.runs.set(run_id, sub))
    return _commit(state, state, d, [])


def _announce(state: ProjectionState, d: Delegation, sub: SubagentState, item: HarnessEvent,
              ts: int) -> tuple[Delegation, SubagentState, list[Record]]:
    """A pending child's second item, which must be its announcement."""
    root_id = state.history.run_id
    run_id = sub.run_id
    notice = delegation_notice(item.event)
    if notice is None or notice.action != "started" or notice.child_run_id != run_id:
        raise UnknownSubagentError(
            f"an item of run {run_id!r}, which the stream of run {root_id!r} never announced as a subagent run "
            f"(its sequence 1 must be its inline_delegation started notice)",
            run_id=root_id, sequence=item.sequence, thread_id=state.thread_id, found_run_id=run_id,
            found_thread_id=item.thread_id, subagent_run_id=run_id)
    parent_id = notice.parent_run_id
    parent_calls: PMap[str, str]
    if parent_id == root_id:
        depth, parent_subagent, parent_calls = 1, None, d.renamed_calls
    else:
        parent = d.runs.get(parent_id) if parent_id is not None else None
        if parent is None or parent.status == "pending":
            raise UnknownSubagentError(
                f"subagent run {run_id!r} names parent run {parent_id!r}, which is neither run {root_id!r} nor a "
                f"subagent run announced in its stream",
                run_id=root_id, sequence=item.sequence, thread_id=state.thread_id, found_run_id=run_id,
                found_thread_id=item.thread_id, subagent_run_id=run_id, parent_run_id=parent_id)
        if parent.finished:
            raise FinishedSubagentError(
                f"subagent run {run_id!r} names parent run {parent_id!r}, which already {_ended(parent)}",
                run_id=run_id, sequence=item.sequence, subagent_run_id=parent_id, root_run_id=root_id)
        depth, parent_subagent, parent_calls = parent.depth + 1, parent.run_id, parent.renamed_calls
    call = notice.parent_tool_call_id
    if call is not None:
        call = parent_calls.get(call, call)
    name = notice.subagent or "subagent"
    sub = with_changes(sub, status="running", name=name, parent_run_id=parent_id, parent_tool_call_id=call,
                       depth=depth, order=d.announced)
    d = with_changes(d, announced=d.announced + 1)
    return d, sub, [ev.subagent_started(ts, run_id, name, parent_subagent, call)]


def _delegation_end(state: ProjectionState, d: Delegation, item: HarnessEvent, ts: int,
                    conv: RunConversion) -> tuple[Delegation, list[Record]]:
    """If ``item`` ends a delegation of its Run, close that child: the records
    to emit before the item's own."""
    notice = delegation_notice(item.event)
    if notice is None or notice.action not in ("completed", "failed") or notice.child_run_id is None:
        return d, []
    child_id = notice.child_run_id
    child = d.runs.get(child_id)
    if child is None or child.status == "pending":
        return d, []
    root_id = state.history.run_id
    if child.finished:
        raise FinishedSubagentError(
            f"run {item.run_id!r} ends the delegation to subagent run {child_id!r}, which already {_ended(child)}",
            run_id=item.run_id, sequence=item.sequence, subagent_run_id=child_id, root_run_id=root_id)
    if child.parent_run_id != item.run_id:
        raise UnknownSubagentError(
            f"run {item.run_id!r} ends the delegation to subagent run {child_id!r}, which run "
            f"{child.parent_run_id!r} started",
            run_id=root_id, sequence=item.sequence, thread_id=state.thread_id, found_run_id=item.run_id,
            found_thread_id=item.thread_id, subagent_run_id=child_id, parent_run_id=child.parent_run_id)
    out: list[Record] = []
    for sub in sorted(_descendants(d, child_id), key=lambda s: (-s.depth, s.order)):
        d, records = _close(state, d, sub.run_id, ts, conv, "cut_off",
                            f"subagent {sub.name!r} was still running when its parent finished", CUT_OFF)
        out.extend(records)
    if notice.action == "completed":
        d, records = _close(state, d, child_id, ts, conv, "completed", None, None)
    else:
        status = notice.status or "failed"
        d, records = _close(state, d, child_id, ts, conv, "failed",
                            f"subagent {child.name!r} did not complete ({status})", status)
    out.extend(records)
    return d, out


def _close(state: ProjectionState, d: Delegation, run_id: str, ts: int, conv: RunConversion,
           status: SubagentStatus, message: str | None, code: str | None) -> tuple[Delegation, list[Record]]:
    """End a running child: its open parts, then SUBAGENT_FINISHED (status
    "completed") or SUBAGENT_ERROR."""
    sub = d.runs[run_id]
    out: list[Record] = []
    run = conv.close(sub.run, ts, out)
    d, sub, out = _publish_child(d, with_changes(sub, run=run), out)
    if status == "completed":
        out.append(ev.subagent_finished(ts, run_id, _final_text(state, sub), _SUCCESS))
    else:
        assert message is not None
        out.append(ev.subagent_error(ts, run_id, message, code))
    sub = with_changes(sub, status=status)
    return with_changes(d, runs=d.runs.set(run_id, sub)), out


def _descendants(d: Delegation, run_id: str) -> list[SubagentState]:
    """The running children of ``run_id``, and theirs."""
    found = []
    for sub in d.runs.values():
        parent = sub.parent_run_id
        while parent is not None and parent != run_id:
            above = d.runs.get(parent)
            parent = above.parent_run_id if above is not None else None
        if parent == run_id and sub.running:
            found.append(sub)
    return found


def _ended(sub: SubagentState) -> str:
    return {"completed": "completed", "failed": "failed"}.get(sub.status, "was cut off")


def _final_text(state: ProjectionState, sub: SubagentState) -> str | None:
    """The text of the child's last assistant text message as published,
    JSON-encoded; None when it has none."""
    if sub.last_text is None:
        return None
    message_id, at = sub.last_text
    chunks = [ev.field_of(r, "delta") for r in state.events[at:]
              if ev.event_type(r) == "TEXT_MESSAGE_CONTENT" and ev.field_of(r, "message_id") == message_id]
    return _json.dumps("".join(chunks)) if chunks else None


def _note_texts(d: Delegation, base: int, records: list[Record]) -> Delegation:
    """Remember where each child's latest assistant text message starts in the log."""
    for i, record in enumerate(records):
        if ev.event_type(record) == "TEXT_MESSAGE_START" and ev.field_of(record, "role") == "assistant":
            run_id = ev.subagent_of(record)
            if run_id is not None:
                sub = d.runs[run_id]
                d = with_changes(d, runs=d.runs.set(run_id, with_changes(
                    sub, last_text=(ev.field_of(record, "message_id"), base + i))))
    return d


def _processed(processor: Processor | None, item: HarnessStreamEvent, records: list[Record]) -> list[Record]:
    if processor is None or not records:
        return records
    return apply_processor(processor, item, records)


def _commit(run: ProjectionState, state: ProjectionState, d: Delegation, records: list[Record]) -> ProjectionState:
    """The root state: ``run``'s own per-Run fields, ``state``'s log with
    ``records`` appended, and ``d``."""
    events = state.events.extend(records) if records else state.events
    return ProjectionState.of(run.history, run.request_index, run.parent_message_id, run.parts, run.calls,
                              run.message_ids, events, d)


# -- unique ids ------------------------------------------------------------------------------
# Which field of which event type publishes a new id, and which refer to one:
# "m" is the message id namespace, "c" the tool call id namespace.

_PUBLISHES: dict[str, tuple[str, str]] = {
    "TEXT_MESSAGE_START": ("message_id", "m"),
    "REASONING_MESSAGE_START": ("message_id", "m"),
    "TOOL_CALL_START": ("tool_call_id", "c"),
    "TOOL_CALL_RESULT": ("message_id", "m"),
}
_REFERS: dict[str, tuple[tuple[str, str], ...]] = {
    "TEXT_MESSAGE_CONTENT": (("message_id", "m"),),
    "TEXT_MESSAGE_END": (("message_id", "m"),),
    "REASONING_MESSAGE_CONTENT": (("message_id", "m"),),
    "REASONING_MESSAGE_END": (("message_id", "m"),),
    "REASONING_ENCRYPTED_VALUE": (("entity_id", "m"),),
    "TOOL_CALL_START": (("parent_message_id", "m"),),
    "TOOL_CALL_ARGS": (("tool_call_id", "c"),),
    "TOOL_CALL_END": (("tool_call_id", "c"),),
    "TOOL_CALL_RESULT": (("tool_call_id", "c"),),
}


def _begin(state: ProjectionState) -> Delegation:
    """The Delegation of a stream whose first child item just arrived: the
    root owns every id it published so far."""
    root_id = state.history.run_id
    assert root_id is not None
    owners: dict[str, dict[str, str]] = {"m": {}, "c": {}}
    for record in state.events:
        published = _PUBLISHES.get(ev.event_type(record))
        if published is not None:
            field, space = published
            owners[space][ev.field_of(record, field)] = root_id
    return Delegation(message_owners=IdMap(owners["m"]), call_owners=IdMap(owners["c"]))


def _publish_root(d: Delegation, root_id: str, records: list[Record]) -> tuple[Delegation, list[Record]]:
    d, messages, calls, out = _publish(d, root_id, d.renamed_messages, d.renamed_calls, records, False)
    if messages is not d.renamed_messages or calls is not d.renamed_calls:
        d = with_changes(d, renamed_messages=messages, renamed_calls=calls)
    return d, out


def _publish_child(d: Delegation, sub: SubagentState,
                   records: list[Record]) -> tuple[Delegation, SubagentState, list[Record]]:
    d, messages, calls, out = _publish(d, sub.run_id, sub.renamed_messages, sub.renamed_calls, records, True)
    if messages is not sub.renamed_messages or calls is not sub.renamed_calls:
        sub = with_changes(sub, renamed_messages=messages, renamed_calls=calls)
    return d, sub, out


def _publish(d: Delegation, run_id: str, messages: PMap[str, str], calls: PMap[str, str],
             records: Iterable[Record], attribute: bool
             ) -> tuple[Delegation, PMap[str, str], PMap[str, str], list[Record]]:
    """``records`` of Run ``run_id`` as published: ids renamed where another
    Run published them first, new ids registered to ``run_id``, and the
    subagent run id set when ``attribute``."""
    message_owners, call_owners = d.message_owners, d.call_owners
    out = []
    for record in records:
        kind = ev.event_type(record)
        original_call = ev.field_of(record, "tool_call_id") if kind == "TOOL_CALL_RESULT" else None
        for field, space in _REFERS.get(kind, ()):
            value = ev.field_of(record, field)
            renamed = (messages if space == "m" else calls).get(value) if value is not None else None
            if renamed is not None:
                record = ev.with_field(record, field, renamed)
        published = _PUBLISHES.get(kind)
        if published is not None:
            field, space = published
            value = ev.field_of(record, field)
            if original_call is not None and original_call in calls and value == f"{original_call}:result":
                value = f"{calls[original_call]}:result"
            owners = message_owners if space == "m" else call_owners
            table = messages if space == "m" else calls
            owner = owners.get(value)
            if owner is not None and (owner != run_id or value in table.values()):
                fresh = f"{value}:{run_id}"
                n = 2
                while fresh in owners:
                    fresh = f"{value}:{run_id}:{n}"
                    n += 1
                if kind != "TOOL_CALL_RESULT":
                    table = table.set(ev.field_of(record, field), fresh)
                value = fresh
            if value != ev.field_of(record, field):
                record = ev.with_field(record, field, value)
            owners = owners.set(value, run_id)
            if space == "m":
                message_owners, messages = owners, table
            else:
                call_owners, calls = owners, table
        out.append(ev.attributed(record, run_id) if attribute else record)
    if message_owners is not d.message_owners or call_owners is not d.call_owners:
        d = with_changes(d, message_owners=message_owners, call_owners=call_owners)
    return d, messages, calls, out
