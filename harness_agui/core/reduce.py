# Theory of operation
# -------------------
# ``step(state, item, processor)`` is the one transition of the library; it
# never mutates its inputs and raises before building anything when the item
# is unacceptable, so a caller that simply does not keep the result on error
# needs no clean-up. ``reduce`` is its public face (it also builds the AG-UI
# events); ``advance`` keeps only the state.
#
# A stream is one root Run and, when it delegates, its child Runs: the
# Harness forwards every child's items into the root's stream, each child
# with its own run id, thread id and sequences from 0, interleaved with the
# rest (nesting goes as deep as delegation does). The first item binds the
# root; ``history.is_root_item`` (the stores' membership rule too) says
# whether an item is the root's or a child's. A step then runs, in order:
#
#   1. the Run's order: ``history.advance`` on that Run's own cursor (the one
#      policy every reader shares), and for a child the delegation lifecycle
#      (below), which may refuse the item first;
#   2. the delegation lifecycle, whose table of a child's own items lives
#      in ``core.membership`` (``child_transition``, with the one test of
#      the announcement), applied by ``_child_step``, ``_delegation_end`` and
#      ``_terminal_step``:
#        - a child's first item (its lifecycle run_started, sequence 0) is
#          converted and its events held until its announcement;
#        - its second item must be the announcement (a delegation
#          ``inline_delegation`` "started" notice under the child's own run
#          id): SUBAGENT_STARTED, then the held events, then its own;
#        - a delegation end ("completed" / "failed", under the delegating
#          Run) closes the child's running children (deepest first,
#          SUBAGENT_ERROR ``CUT_OFF``), then the child's open parts, then
#          SUBAGENT_FINISHED (result: the child's last assistant text as
#          published) or SUBAGENT_ERROR (code: the delegation's status), before
#          the item's own events;
#        - the root's terminal item closes every child still running the same
#          way, emits the held events of children never announced, then
#          closes the root's parts and ends the run;
#   3. the per-Run rulebook, ``_run_step``, the same for the root and every
#      child: parts, tokens, tool calls and results, inputs, notices (below);
#   4. publishing (``_publish``): a message id or tool call id that another
#      Run of the stream published first is published as ``<id>:<run_id>``
#      (``<id>:<run_id>:<n>`` while taken), and every later event of that Run
#      that refers to it follows; a child's events carry its
#      ``subagent_run_id``; every published id is registered to its Run. A
#      stream without children publishes every id as it is and registers
#      nothing until its first child appears (``_delegating``, which counts
#      the root's ids then, from its state);
#   5. the processor, once per event, then the Host's size limit
#      (``core.fit``): the step's tail and ``_emit``. A child's held events
#      were processed and cut when their item came.
#
# Vocabularies. The steps above are the machinery; what the events say is
# the stream's vocabulary (``core.vocabulary``, named by
# ``ProjectionOptions.vocabulary``): the rulebook of step 3 and the end of a
# Run's parts (``convert``, ``close``, ``terminal``), where RUN_STARTED goes,
# the SUBAGENT_* events, whether a child's events wait for its announcement
# and whether an end cuts off the children below (step 2), whether ids are
# renamed (step 4), the processor contract (step 5) and any framing after
# it. The order checks of step 1 and 2 follow ``ProjectionOptions.order``
# (``core.history``): under "tap" a child Run's first item may be its
# announcement and its items wait for it whatever they are; under
# "unchecked" nothing about order or the lifecycle is refused (a child that
# was never announced, or that finished and sends again, is projected as it
# comes, under the parent its notice names). This module's own vocabulary,
# ``DEFAULT``, is built at its end from the rulebook below.
#
# The rulebook of a Run. Conversion is a single ``match`` on the payload
# type. Ids and timestamps come only from the item (the part's own id, else
# ``<run_id>:request-<n>:part-<index>:<kind>``; ``occurred_at`` in epoch
# milliseconds), so replaying a history gives the same bytes as observing
# it. A part start opens an ``OpenPart`` at its index, deltas stream content
# and count what was emitted, the end emits whatever the final part holds
# beyond that count and closes the message. A tool call's START waits until
# its name is known; its args text is held back until then. Whole-object args
# are emitted once, as compact JSON, when the part ends; text args that are
# not whole JSON at the part's end keep the call open until they are (or the
# Harness announces the call, its result comes, or the request or Run ends).
# pydantic-ai ends a part when the next part of its response starts, and can
# still stream it afterwards (text after the tool call that followed it, text
# part A after text part B): a text or thinking part whose end names a next
# part (``next_part_kind``) emits what its end holds beyond what streamed and
# stays open as ``ended``, taking its late deltas as content, and its END
# waits until the response is over: the end of its last part (no next part),
# the request's completed or failed notice, its index used again, a new
# request, the Run's end. So a client's message holds the response's whole
# text, and each message still gets exactly one START and one END.
# Parts still open when a new model request starts are closed; a closed part
# is kept as retired until its index is used again, and a late delta or end
# of one becomes a CUSTOM event (a preempted request's part never ends); at
# the terminal item open parts are closed.
#
# Tool calls go open -> ended -> answered. A result for an ended call is
# TOOL_CALL_RESULT, whatever its outcome, and so is a provider-executed
# call's builtin return; a call the Harness announces without this Run having
# started it (a resumed Run's calls of the Run it resumes) is ``resumed``:
# its tool result answers it (a builtin return does not: a provider runs
# only the calls of its own response); a result for any other call (or a second one) is a CUSTOM
# event, since AG-UI has no valid way to answer an unknown call; one for a
# call whose part is still streaming, an error. An id the Harness uses again
# after its call ended (servers that number calls per response) names a new
# call, published as ``<id>:<sequence>``.
#
# What reaches the UI (``ProjectionOptions``): an input or tool supplement
# the Harness marks ``display: false`` emits nothing unless ``show_hidden``;
# a tool result that names the client's own message (``CLIENT_MESSAGE_ID``)
# is not sent back; a user input that names one is a user message under that
# id (a server leaves it out of the stream of the client that sent it); a
# child Run's user input, the task it was delegated, is no user message.
#
# Nothing here reads the emitted events back: what a rule needs (id owners, a
# child's last text) is kept in the state (``core.state``).

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, cast

import attrs
from ag_ui.core import BaseEvent
from pyrsistent import pvector

from . import _json
from . import records as ev
from ._fast import new_tuple, part_streamed, with_fields
from ._json import JSON
from .custom import CUSTOM_FRAGMENT_CHARS, CUSTOM_MAX_CHARS, correlation, custom_records
from .errors import AguiObservationError, FinishedSubagentError, ForeignRunError, UnknownSubagentError
from .fit import DELTAS, fit, fits
from .history import HistoryCursor, advance_in_stream, is_root_item
from .history import advance as advance_history
from .idmap import IdMap
from .jsonform import content_to_json, deferred_call_to_json, payload_to_json
from .membership import announcement, child_transition, delegation_end
from .notices import (
    DelegationNotice,
    is_client_tool_call,
    is_run_started,
    model_request_ended,
    model_request_started,
)
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
    describe_wrong_item,
)
from .state import (
    DEFAULT_OPTIONS,
    EMPTY_MAP,
    INITIAL_RUN,
    OpenPart,
    PartKind,
    ProjectionOptions,
    ProjectionState,
    RunState,
    SubagentState,
    SubagentStatus,
    find_part,
)
from .vocabulary import DEFAULT_VOCABULARY, Vocabulary, register

__all__ = ["Processor", "reduce", "advance", "step", "INPUT_CHUNK_CHARS", "CUSTOM_MAX_CHARS",
           "CUSTOM_FRAGMENT_CHARS", "CUT_OFF", "interrupt_id", "InterruptReason", "APPROVAL_SCHEMA",
           "CLIENT_MESSAGE_ID", "DEFAULT"]

Processor = Callable[[HarnessStreamEvent, BaseEvent], "BaseEvent | None"]
InterruptReason = Literal["tool_call", "tool_approval"]

INPUT_CHUNK_CHARS = 8192
"""Input text is carried in CUSTOM events of at most this many characters."""

CLIENT_MESSAGE_ID = "ag_ui_message_id"
"""The metadata key under which an input or a tool result names the AG-UI message a client already holds for
it (a served client's own user message, or the result of a tool it ran): the projection does not send it back."""

CUT_OFF = "harness_agui.subagent_cut_off"
"""The SUBAGENT_ERROR code of a subagent still running when its parent
finished or the root Run ended."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_KIND_OF_PART: dict[type, PartKind] = {TextPart: "text", ThinkingPart: "thinking", ToolCallPart: "tool_call"}
_KIND_OF_DELTA = {TextPartDelta: "text", ThinkingPartDelta: "thinking", ToolCallPartDelta: "tool_call"}
_DELTA_OF_KIND = {kind: delta for delta, kind in _KIND_OF_DELTA.items()}
_Streamed = TextPart | ThinkingPart | ToolCallPart  # the parts that stream: a start, deltas, an end
# Until their projection rules exist, the other payloads and parts become CUSTOM events of these names.
_PART_NAMES: dict[type, str] = {BuiltinToolReturnPart: "builtin_tool_return", FilePart: "file"}
_PAYLOAD_NAMES: dict[type, str] = {FinalResultEvent: "final_result",
                                   DeferredToolRequestsEvent: "deferred_tool_requests",
                                   EnqueuedMessagesEvent: "enqueued_messages"}
_SUCCESS = _json.dumps({"type": "success"})


def reduce(
    state: ProjectionState, item: HarnessStreamEvent, *, processor: Processor | None = None
) -> tuple[ProjectionState, tuple[BaseEvent, ...]]:
    """Project one source item onto ``state``.

    Returns the new state and the AG-UI events this item produced (fresh
    objects). Pure: ``state`` and ``item`` are not changed.

    Raises TypeError for an item that is not a Harness stream item; a
    ``HistoryError`` for an item out of its Run's order (ForeignRunError,
    AfterTerminalError, SequenceOrderError, SequenceGapError; see
    ``core.history``: each Run's items are numbered contiguously from 0),
    UnknownSubagentError (a ForeignRunError) for an item of a child Run the
    stream never announced, and FinishedSubagentError (an
    AfterTerminalError) for an item of, or naming, a child Run that already
    finished; and AguiObservationError for an item the projection does not
    allow or a processor that breaks its contract; exceptions from the
    processor itself propagate. In every case no new state exists.
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
    hot path). See ``reduce`` for what it raises."""
    if type(item) is not HarnessEvent and not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
        raise TypeError(describe_wrong_item(item))
    root = state.root
    cursor = root.history
    if item.run_id != cursor.run_id and not is_root_item(cursor, item):
        return _child_step(state, item, processor)
    options = state[6]
    if options.plain:  # this library's vocabulary and the strict order, without looking anything up
        history, vocab = advance_history(cursor, item), DEFAULT
    else:
        history, vocab = options.advance(cursor, item), options.rules
    # (the root Run's order, by its policy, has raised HistoryError by now if it had to)
    age = item.occurred_at - _EPOCH  # in whole milliseconds: a little cheaper than floor division by a timedelta
    ts = age.days * 86_400_000 + age.seconds * 1000 + age.microseconds // 1000
    if type(item) is HarnessRunResultEvent:
        return _terminal_step(state, history, item, ts, processor)
    event: HarnessEvent = item  # type: ignore[assignment]  # the terminal item took the branch above
    if cursor.thread_id is not None or vocab.announces_run != "first_item":
        out = []
    else:
        out = [vocab.run_started(ts, options.client_thread_id or event.thread_id,
                                 options.client_run_id or event.run_id)]
    if state.subagents is not EMPTY_MAP:  # a delegating stream: the item may end a child's delegation first
        state, closed = _delegation_end(state, event, ts)
        run = vocab.convert(root, history, event, ts, out, options)
        state, run, out = _publish(state, run, event.run_id, out, attribute=False)
        return _emit(state._replace(root=run), event, processor, [(True, closed), (True, out)])
    # A stream without children publishes every id as it is, and its owners are only counted once a
    # child appears (``_delegating``).
    run = vocab.convert(root, history, event, ts, out, options)
    # _shaped(), written out: the processor, the framing, the size limit
    records = out if processor is None or not out else vocab.process(processor, event, out)
    if vocab.frame is not None and records:
        records = vocab.frame(event, records, 0)
    events = state.events
    if len(records) == 1:
        record = records[0]  # a token's delta: fits() written out, at a token's cost
        if record[0] in DELTAS and len(record[2]) + len(record[3]) <= options.delta_chars or fits(
                records, options.max_event_bytes):
            events = events.append(record)
        else:
            records = fit(records, event, options.max_event_bytes)  # type: ignore[arg-type]  # not None: fits said False
            events = events.extend(records)
    elif records:
        limit = options.max_event_bytes
        if limit is not None and not fits(records, limit):
            records = fit(records, event, limit)
        events = events.extend(records)
    # state._replace(root=run, events=events), written out: a token's state.
    return new_tuple(ProjectionState, (run, state[1], state[2], state[3], state[4], events, state[6])), records


# -- the delegation lifecycle ----------------------------------------------------------------------

def _child_step(state: ProjectionState, item: HarnessStreamEvent,
                processor: Processor | None) -> tuple[ProjectionState, list[Record]]:
    """An item of a child Run (any run id but the bound root's)."""
    options = state.options
    order, vocab = options.order, options.rules
    root_id, run_id = state.run_id, item.run_id
    sub = state.subagents.get(run_id)
    outcome = child_transition(order, None if sub is None else sub.status, item)  # the lifecycle's one table
    if outcome == "foreign":  # nothing says this is a subagent Run: as for any reader of one Run's history
        raise _foreign(state, item, f"an item of run {run_id!r} in the stream of run {root_id!r} (a subagent "
                                    f"run starts with its lifecycle run_started at sequence 0)")
    if outcome == "finished" and sub is not None:
        raise FinishedSubagentError(
            f"an item of subagent run {run_id!r}, which already {_ended(sub)} in the stream of run {root_id!r}",
            run_id=run_id, sequence=item.sequence, subagent_run_id=run_id, root_run_id=root_id)
    if sub is None or sub.finished:  # a new child (unchecked, one that finished and sends again starts afresh)
        if state.finished and order != "unchecked":
            raise _unknown(state, item, f"subagent run {run_id!r} starts after the terminal result of run "
                                        f"{root_id!r}")
        sub = SubagentState(run_id, INITIAL_RUN)
        if not vocab.holds_children:  # nothing waits for the announcement: ordered as they appear
            sub = with_fields(sub, order=state.announced)
            state = state._replace(announced=state.announced + 1)
        if state.subagents is EMPTY_MAP and vocab.renames_ids:
            state = _delegating(state)
    history = advance_in_stream(state.root.history, sub.run.history if sub.run.history.started else None, item,
                                order=order)
    age = item.occurred_at - _EPOCH
    ts = age.days * 86_400_000 + age.seconds * 1000 + age.microseconds // 1000
    if isinstance(item, HarnessRunResultEvent):
        if order != "unchecked":
            raise AguiObservationError(
                f"a terminal result of subagent run {run_id!r} in the stream of run {root_id!r}: only the root "
                f"Run has one", sequence=item.sequence)
        # Unchecked (a13n-harness never forwards one): it ends the child's open parts, and nothing else.
        closing: list[Record] = []
        run = _run(vocab.close(sub.run, ts, closing), history)
        state, run, closing = _publish(state, run, run_id, closing, attribute=True)
        state = state._replace(subagents=state.subagents.set(run_id, with_fields(sub, run=run)))
        return _emit(state, item, processor, [(True, closing)])
    pieces: list[tuple[bool, list[Record]]] = []
    notice = announcement(item) if outcome == "running" and sub.status == "pending" else None
    if notice is not None:
        state, sub, started = _announce(state, sub, item, notice, ts)
        pieces += [(True, started), (False, list(sub.pending))]
        sub = with_fields(sub, pending=())
    elif sub.status == "pending" and vocab.holds_children:
        if outcome == "unannounced":
            raise _unknown(state, item, f"an item of run {run_id!r}, which the stream of run {root_id!r} never "
                                        f"announced as a subagent run (its sequence 1 must be its inline_delegation "
                                        f"started notice)")
        # held until the announcement: the Run's first item (under the tap, any item before it)
    else:
        state, closed = _delegation_end(state, item, ts)
        pieces.append((True, closed))
        sub = state.subagents.get(run_id, sub)
    own: list[Record] = []
    if vocab.announces_run == "run_started" and is_run_started(item):
        run = _run(sub.run, history)  # a child's run_started: only the root Run has a RUN_STARTED
    else:
        run = vocab.convert(sub.run, history, item, ts, own, _child_options(options))  # type: ignore[arg-type]
    state, run, own = _publish(state, run, run_id, own, attribute=True)
    sub = with_fields(sub, run=run)
    if not pieces:  # held as they will go out, shaped by their own item
        held, _ = _shaped(vocab, processor, item, own, state.options.max_event_bytes, 0)
        return state._replace(subagents=state.subagents.set(run_id, with_fields(sub, pending=tuple(held)))), []
    pieces.append((True, own))
    return _emit(state._replace(subagents=state.subagents.set(run_id, sub)), item, processor, pieces)


def _announce(state: ProjectionState, sub: SubagentState, item: HarnessEvent, notice: DelegationNotice,
              ts: int) -> tuple[ProjectionState, SubagentState, list[Record]]:
    """A pending child's announcement: its link to the parent Run."""
    root_id, run_id = state.run_id, sub.run_id
    parent_id = notice.parent_run_id
    if parent_id == root_id:
        depth, parent_subagent, parent_calls = 1, None, state.root.renamed_calls
    else:
        parent = state.subagents.get(parent_id) if parent_id is not None else None
        if state.options.order == "unchecked" and (parent is None or parent.status == "pending" or parent.finished):
            pass  # whatever the parent, the child is announced under it
        elif parent is None or parent.status == "pending":
            raise _unknown(state, item, f"subagent run {run_id!r} names parent run {parent_id!r}, which is neither "
                                        f"run {root_id!r} nor a subagent run announced in its stream",
                           parent_run_id=parent_id)
        elif parent.finished:
            raise FinishedSubagentError(
                f"subagent run {run_id!r} names parent run {parent_id!r}, which already {_ended(parent)}",
                run_id=run_id, sequence=item.sequence, subagent_run_id=parent_id, root_run_id=root_id)
        depth = 1 if parent is None else parent.depth + 1
        parent_subagent, parent_calls = parent_id, EMPTY_MAP if parent is None else parent.run.renamed_calls
    call = notice.parent_tool_call_id
    if call is not None:
        call = parent_calls.get(call, call)
    name = notice.subagent or "subagent"
    order = sub.order if sub.order >= 0 else state.announced
    if sub.order < 0:
        state = state._replace(announced=state.announced + 1)
    sub = with_fields(sub, status="running", name=name, parent_run_id=parent_id, parent_tool_call_id=call,
                      depth=depth, order=order)
    vocab = state.options.rules
    return state, sub, [vocab.subagent_started(ts, run_id, name, parent_subagent, call)]


def _delegation_end(state: ProjectionState, item: HarnessEvent, ts: int) -> tuple[ProjectionState, list[Record]]:
    """If ``item`` ends a delegation of its Run, close that child: the records
    to emit before the item's own."""
    notice = delegation_end(item)
    if notice is None:
        return state, []
    options = state.options
    vocab, checked = options.rules, options.order != "unchecked"
    child_id = notice.child_run_id
    assert child_id is not None  # delegation_end names the child
    child = state.subagents.get(child_id)
    if child is None or (child.status == "pending" and vocab.holds_children):
        return state, []  # a dispatch that failed before the child ran: only the item's own CUSTOM event
    if child.finished:
        if not checked:
            return state, []
        raise FinishedSubagentError(
            f"run {item.run_id!r} ends the delegation to subagent run {child_id!r}, which already {_ended(child)}",
            run_id=item.run_id, sequence=item.sequence, subagent_run_id=child_id, root_run_id=state.run_id)
    if child.parent_run_id != item.run_id and checked:
        raise _unknown(state, item, f"run {item.run_id!r} ends the delegation to subagent run {child_id!r}, which "
                                    f"run {child.parent_run_id!r} started",
                       found_run_id=item.run_id, subagent_run_id=child_id, parent_run_id=child.parent_run_id)
    out: list[Record] = []
    if vocab.closes_children:
        for sub in sorted(_descendants(state, child_id), key=lambda s: (-s.depth, s.order)):
            state = _close_subagent(state, sub.run_id, ts, "cut_off", out,
                                    f"subagent {sub.name!r} was still running when its parent finished", CUT_OFF)
    if notice.action == "completed":
        state = _close_subagent(state, child_id, ts, "completed", out)
    else:
        state = _close_subagent(state, child_id, ts, "failed", out, code=notice.status or "failed")
    return state, out


def _terminal_step(state: ProjectionState, history: HistoryCursor, item: HarnessRunResultEvent, ts: int,
                   processor: Processor | None) -> tuple[ProjectionState, list[Record]]:
    """The root Run's terminal item: every child still running is cut off
    (deepest first), the held events of children never announced go out,
    then the root's parts are closed and the run ends (as far as the
    vocabulary closes children and holds their events)."""
    vocab = state.options.rules
    pieces: list[tuple[bool, list[Record]]] = []
    if vocab.announces_run == "first_item" and state.root.history.thread_id is None:
        pieces.append((True, [vocab.run_started(ts, state.options.client_thread_id or item.thread_id,
                                                state.options.client_run_id or item.run_id)]))
    closed: list[Record] = []
    if vocab.closes_children:
        for sub in sorted((s for s in state.subagents.values() if s.running), key=lambda s: (-s.depth, s.order)):
            state = _close_subagent(state, sub.run_id, ts, "cut_off", closed,
                                    f"the run ended before subagent {sub.name!r} finished", CUT_OFF)
    pieces.append((True, closed))
    if vocab.holds_children:
        for sub in sorted((s for s in state.subagents.values() if s.status == "pending"), key=lambda s: s.run_id):
            pieces.append((False, list(sub.pending)))  # processed when they came
            state = state._replace(subagents=state.subagents.set(sub.run_id, with_fields(
                sub, status="cut_off", pending=())))
    own: list[Record] = []
    run = _run(vocab.terminal(state.root, item, ts, own), history)
    if state.options.client_thread_id is not None or state.options.client_run_id is not None:
        own = [_named_by_client(r, state.options) for r in own]
    state, run, own = _publish(state, run, item.run_id, own, attribute=False)
    pieces.append((True, own))
    return _emit(state._replace(root=run), item, processor, pieces)


def _close_subagent(state: ProjectionState, run_id: str, ts: int, status: SubagentStatus, out: list[Record],
                    message: str | None = None, code: str | None = None) -> ProjectionState:
    """End a running child: its open parts, then SUBAGENT_FINISHED (status
    "completed") or SUBAGENT_ERROR (the vocabulary's for "failed", with
    ``code`` the delegation's status; ``message`` and ``code`` for a cut-off),
    appended to ``out``."""
    vocab = state.options.rules
    sub = state.subagents[run_id]
    closing: list[Record] = []
    run = vocab.close(sub.run, ts, closing)
    state, run, closing = _publish(state, run, run_id, closing, attribute=True)
    out.extend(closing)
    if status == "completed":
        text = None if sub.last_text is None or not sub.last_text[1] else _json.dumps("".join(sub.last_text[1]))
        out.append(vocab.subagent_finished(ts, run_id, text))
    elif status == "failed":
        assert code is not None
        out.append(vocab.subagent_failed(ts, run_id, sub.name, code))
    else:
        assert message is not None
        out.append(ev.subagent_error(ts, run_id, message, code))
    # Its last text is never read again: dropped, so finished children cost no memory for it.
    return state._replace(subagents=state.subagents.set(run_id, with_fields(sub, run=run, status=status,
                                                                                last_text=None)))


def _descendants(state: ProjectionState, run_id: str) -> list[SubagentState]:
    """The running children of ``run_id``, and theirs."""
    found = []
    for sub in state.subagents.values():
        parent = sub.parent_run_id
        while parent is not None and parent != run_id:
            above = state.subagents.get(parent)
            parent = above.parent_run_id if above is not None else None
        if parent == run_id and sub.running:
            found.append(sub)
    return found


@functools.lru_cache(maxsize=32)
def _child_options(options: ProjectionOptions) -> ProjectionOptions:
    """The options a child Run's items are projected with: the stream's, but
    its user input (the task it was delegated, as JSON) is no user message: a
    stock client would show it as the user's. The delegate call's args carry
    the task, and SUBAGENT_STARTED names that call."""
    return options if not options.user_messages else attrs.evolve(options, user_messages=False)


def _ended(sub: SubagentState) -> str:
    return {"completed": "completed", "failed": "failed"}.get(sub.status, "was cut off")


def _foreign(state: ProjectionState, item: HarnessStreamEvent, message: str) -> ForeignRunError:
    return ForeignRunError(message, run_id=state.run_id, sequence=item.sequence, thread_id=state.thread_id,
                           found_run_id=item.run_id, found_thread_id=item.thread_id)


def _unknown(state: ProjectionState, item: HarnessStreamEvent, message: str, **extra: Any) -> UnknownSubagentError:
    fields: dict[str, Any] = {"found_run_id": item.run_id, "subagent_run_id": item.run_id}
    fields.update(extra)
    return UnknownSubagentError(message, run_id=state.run_id, sequence=item.sequence, thread_id=state.thread_id,
                                found_thread_id=item.thread_id, **fields)


# -- emitting: the processor, once per event, and what a child's last text is -----------------------

def _emit(state: ProjectionState, item: HarnessStreamEvent, processor: Processor | None,
          pieces: list[tuple[bool, list[Record]]]) -> tuple[ProjectionState, list[Record]]:
    """The item's records in order: fresh ones shaped (``_shaped``), held
    ones (a child's events from before its announcement) as they were kept,
    shaped by their own item; appended to the log."""
    vocab = state.options.rules
    records: list[Record] = []
    limit = state.options.max_event_bytes
    made = 0  # the item's fresh records so far, processed: where a framing vocabulary counts from
    for fresh, piece in pieces:
        if fresh and piece:
            piece, processed = _shaped(vocab, processor, item, piece, limit, made)
            made += processed
        records.extend(piece)
    state = state._replace(events=state.events.extend(records)) if records else state
    return _note_texts(state, records), records


def _shaped(vocab: Vocabulary, processor: Processor | None, item: HarnessStreamEvent, records: list[Record],
            limit: int | None, first: int) -> tuple[list[Record], int]:
    """An item's fresh records as they go out, in the one order every path
    takes (the childless fast path in ``step`` writes it out for a token's
    cost): the processor, then the vocabulary's framing of large events
    (``first``: the place of the first among the item's processed records),
    then the size limit. Also returns how many records the processor gave."""
    if processor is not None and records:
        records = vocab.process(processor, item, records)
    processed = len(records)
    if vocab.frame is not None and records:
        records = vocab.frame(item, records, first)
    if limit is not None and records and not fits(records, limit):
        records = fit(records, item, limit)
    return records, processed


def _note_texts(state: ProjectionState, records: list[Record]) -> ProjectionState:
    """Keep each child's latest assistant text message as published: its id
    and content (what its SUBAGENT_FINISHED reports)."""
    subagents = state.subagents
    for record in records:
        tag = record[0]
        if tag == "TEXT_MESSAGE_START@subagent" and ev.field_of(record, "role") == "assistant":
            run_id = ev.field_of(record, "subagent_run_id")
            sub = subagents[run_id]
            subagents = subagents.set(run_id, with_fields(sub, last_text=(ev.field_of(record, "message_id"),
                                                                          pvector())))
        elif tag == "TEXT_MESSAGE_CONTENT@subagent":
            run_id = ev.field_of(record, "subagent_run_id")
            sub = subagents[run_id]
            if sub.last_text is not None and sub.last_text[0] == ev.field_of(record, "message_id"):
                subagents = subagents.set(run_id, with_fields(sub, last_text=(
                    sub.last_text[0], sub.last_text[1].append(ev.field_of(record, "delta")))))
    return state if subagents is state.subagents else state._replace(subagents=subagents)


# -- publishing ids ------------------------------------------------------------------------------

def _delegating(state: ProjectionState) -> ProjectionState:
    """The state of a stream whose first child Run just appeared: until now
    the root published every id as it was, so each id it published is its own
    (its text, reasoning and user messages, its tool calls, the result of each
    answered call)."""
    root, root_id = state.root, state.run_id
    assert root_id is not None
    messages = [*root.message_ids, *(f"{c}:result" for c, status in root.calls.items() if status == "answered")]
    return state._replace(message_owners=IdMap((m, root_id) for m in messages),
                       call_owners=IdMap((c, root_id) for c in root.calls))

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


def _publish(state: ProjectionState, run: RunState, run_id: str, records: list[Record], *, attribute: bool,
             ) -> tuple[ProjectionState, RunState, list[Record]]:
    """``records`` of Run ``run_id`` as published: ids renamed where another
    Run published them first, new ids registered to ``run_id``, and the
    subagent run id set when ``attribute``."""
    if not state.options.rules.renames_ids:
        return state, run, [ev.attributed(r, run_id) for r in records] if attribute else records
    messages, calls = run.renamed_messages, run.renamed_calls
    if not attribute and messages is EMPTY_MAP and calls is EMPTY_MAP:
        for record in records:
            if record[0] in _PUBLISHES:
                break
        else:
            return state, run, records  # a token of a Run whose ids were never renamed: nothing to do
    message_owners, call_owners = state.message_owners, state.call_owners
    out = []
    for record in records:
        kind = record[0]
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
    if message_owners is not state.message_owners or call_owners is not state.call_owners:
        state = state._replace(message_owners=message_owners, call_owners=call_owners)
    if messages is not run.renamed_messages or calls is not run.renamed_calls:
        run = _run(run, run.history, renamed_messages=messages, renamed_calls=calls)
    return state, run, out


# -- the rulebook of one Run ----------------------------------------------------------------------

def _run_step(run: RunState, history: HistoryCursor, item: HarnessEvent, ts: int, out: list[Record],
              options: ProjectionOptions) -> RunState:
    """Append the records of a non-terminal item of Run ``run`` to ``out``;
    return the Run's state after it, with ``history`` as its cursor.
    ``options`` are the stream's, and for a child Run ``_CHILD_OPTIONS`` of
    them (a child's user input is its delegated task, never the client's)."""
    _, parts, ledger = run  # one unpacking: all a token reads of its Run
    payload = item.event
    if type(payload) is PartDeltaEvent:  # most items of a Run (tokens): ahead of the match, calls spared
        index, delta = payload.index, payload.delta
        # Usually exactly one part is open and streaming: skip the search.
        part = parts[0] if len(parts) == 1 and parts[0].index == index else find_part(parts, index)
        if part is None or type(delta) is not _DELTA_OF_KIND[part.kind]:
            return _odd_delta(run, history, item, part, _KIND_OF_DELTA.get(type(delta)), ts, out)
        streams = part.kind
        if streams == "text":
            text = delta.content_delta  # type: ignore[union-attr]
            if text:
                out.append(ev.text_content(ts, part.message_id, text))
                part = part_streamed(part, part.streamed + len(text))
        elif streams == "thinking":
            thought, signature = delta.content_delta, delta.signature_delta  # type: ignore[union-attr]
            if thought:
                out.append(ev.reasoning_content(ts, part.message_id, thought))
            if signature:
                # A signature delta replaces the signature (pydantic-ai's rule; a
                # real Run streams 'sig-part1' then '-part2' and ends with '-part2').
                part = part._replace(streamed=part.streamed + len(thought or ""), signature=signature)
            elif thought:
                part = part_streamed(part, part.streamed + len(thought))
        else:
            assert type(delta) is ToolCallPartDelta
            part = _tool_call_delta(part, delta, ts, ledger.parent_message_id, out, item.sequence)
        # _run(run, history, parts), written out: a token's RunState.
        return new_tuple(RunState, (history, (part,) if len(parts) == 1 else _replace(parts, part), ledger))
    request, parent = ledger.request_index, ledger.parent_message_id
    match payload:
        case PartStartEvent(part=BuiltinToolReturnPart() as returned) if run.calls.get(
                run.call_id(returned.tool_call_id)) == "ended":
            # The provider ran the call the model made: its answer, like any tool result's.
            call_id = run.call_id(returned.tool_call_id)
            out.append(_tool_result(call_id, returned.tool_name, returned.outcome, returned.content, None, ts,
                                    provider_executed=True))
            return _run(run, history, calls=run.calls.set(call_id, "answered"))

        case PartStartEvent(part=source_part) | PartEndEvent(part=source_part) if (
                type(source_part) not in _KIND_OF_PART):
            # A start-only part (builtin tool return of an unknown call, file) or a part kind this release
            # does not model.
            out.extend(_custom(item, ts, f"harness.{_PART_NAMES.get(type(source_part)) or _unknown_kind(source_part)}"))

        case PartStartEvent(index=index, part=source_part):
            if (open_ := find_part(parts, index)) is not None:
                if not open_.ended:
                    raise AguiObservationError(
                        f"part {index} started again before its {open_.kind} part ended", sequence=item.sequence
                    )
                run = _end_held(run, ts, out, index)  # its index is used again: nothing more streams into it
            assert isinstance(source_part, (TextPart, ThinkingPart, ToolCallPart))  # the case above took the others
            return _start(run, history, index, source_part, item, ts, out)

        case PartEndEvent(index=index, part=final):
            part = find_part(parts, index)
            if part is None:
                if find_part(run.retired, index) is None:
                    raise AguiObservationError(f"part end for index {index}, which is not open",
                                               sequence=item.sequence)
                out.extend(_custom(item, ts, "harness.part_end"))  # a late end: its message is over
                run = _run(run, history, retired=_without(run.retired, index))
                return run if payload.next_part_kind is not None else _end_held(run, ts, out)
            assert isinstance(final, (TextPart, ThinkingPart, ToolCallPart))  # the first case took the others
            _check_same_part(part, final, item.sequence)
            last = payload.next_part_kind is None  # no part of the response follows: the response is over
            if isinstance(final, ToolCallPart) and isinstance(final.args, str) and not _complete_json(final.args):
                # pydantic-ai ends a call's part when the next part starts, and its last args can still come
                # as deltas: the call stays open in AG-UI (its args must be whole JSON) until they do, until
                # the Harness announces the call (with its whole args) or a result, a new request or the end.
                part = _args_so_far(part, final, ts, parent, out)
                run = _run(run, history, _replace(parts, part), calls=run.calls.set(part.message_id, "ended"))
                return _end_held(run, ts, out) if last else run
            if not last and not isinstance(final, ToolCallPart):
                # The next part of the response started, and pydantic-ai may still stream this one: its
                # message takes what the end holds beyond what streamed and stays open for the rest.
                return _run(run, history, _replace(parts, _held(part, final, ts, out)))
            run = _run(run, history, _without(parts, index))
            if last:
                run = _end_held(run, ts, out)  # the parts it held end first, then this one
            calls = _close(part, final, ts, parent, run.calls, out)
            return _run(run, history, retired=_replace(run.retired, part), calls=calls)

        case ToolResultEvent(tool_call_id=source_id):
            call_id = run.call_id(source_id)
            status = run.calls.get(call_id)
            content = _visible(payload.content, payload.metadata, options)
            if status == "ended" or status == "resumed":
                run = _end_call(run, call_id, None, ts, out)  # a call still waiting for its last args
                if not (isinstance(payload.metadata, dict) and payload.metadata.get(CLIENT_MESSAGE_ID) is not None):
                    out.append(_tool_result(call_id, payload.tool_name, payload.outcome, content, payload.retry, ts))
                # else the client ran the tool and holds its result message
                return _run(run, history, calls=run.calls.set(call_id, "answered"))
            if status == "open":
                raise AguiObservationError(
                    f"tool result for call {source_id!r} arrived before the call's part ended", sequence=item.sequence
                )
            shown = payload if content is payload.content else attrs.evolve(payload, content=content)
            out.extend(_custom(item, ts, "harness.tool_result", payload_to_json(shown, binary_data=False)))

        case InputEvent(source=source, content=content, metadata=metadata):
            if not options.show_hidden and metadata is not None and metadata.get("display") is False:
                pass  # for the model only (the trusted dynamic context, say): the journal keeps it
            elif source == "user" and not options.user_messages:
                pass  # a client that holds its own user messages, or a child's delegated task
            elif isinstance(content, str) and source in _MESSAGE_SOURCES:
                # under the id of the client's own message when it names one: the viewers that lack it add it,
                # the client that sent it has it (a server leaves it out of that client's own stream)
                client = metadata.get(CLIENT_MESSAGE_ID) if metadata is not None else None
                out.extend(_user_message(item, content, ts, client if isinstance(client, str) and client else None))
                run = _run(run, history, message_ids=run.message_ids.add(ev.field_of(out[-1], "message_id")))
            elif isinstance(content, str):
                out.extend(_input_chunks(item, payload, ts))
            else:
                out.extend(_custom(item, ts, f"harness.input.{source}"))

        case ExtensionEvent(kind=kind):
            started = model_request_started(payload)
            if started is not None:
                if request is not None and started <= request:
                    raise AguiObservationError(
                        f"model request {started} started after model request {request}", sequence=item.sequence
                    )
                retired = run.retired
                for part in parts:
                    retired = _replace(retired, part)
                run = _run(_close_run(run, ts, out), history, retired=retired, request_index=started)
            elif model_request_ended(payload):
                run = _run(_end_held(run, ts, out), history)  # the response is whole: what it held ends
            out.extend(_custom(item, ts, f"harness.extension.{kind}"))

        case ObservationEvent():
            out.extend(_custom(item, ts, "harness.observation"))

        case ToolCallEvent(output=output, part=called):
            run = _end_call(run, run.call_id(called.tool_call_id), called, ts, out)  # whole args, at last
            out.extend(_custom(item, ts, "harness.output_tool_call" if output else "harness.function_tool_call"))
            if not output and run.call_id(called.tool_call_id) not in run.calls:
                # A call this Run never started: one of an earlier Run, resumed in this one (a resumed Run
                # re-announces each deferred call, approved, denied or answered, then its result follows).
                # Answerable by TOOL_CALL_RESULT, which a client that saw the earlier Run holds the call for;
                # its start is not sent again. A function call: a provider's builtin return never answers it.
                run = _run(run, history, calls=run.calls.set(called.tool_call_id, "resumed"))

        case FinalResultEvent() | DeferredToolRequestsEvent() | EnqueuedMessagesEvent():
            out.extend(_custom(item, ts, f"harness.{_PAYLOAD_NAMES[type(payload)]}"))

        case CapabilityEvent(kind=kind):
            out.extend(_custom(item, ts, f"harness.capability.{kind}"))

        case UnknownEvent(event_kind=kind):
            out.extend(_custom(item, ts, f"harness.{kind}"))

        case _:  # pragma: no cover - HarnessEvent validates its payload
            raise TypeError(f"not a Harness payload: {type(payload).__name__}")
    return _run(run, history)


def _odd_delta(run: RunState, history: HistoryCursor, item: HarnessEvent, part: OpenPart | None,
               kind: str | None, ts: int, out: list[Record]) -> RunState:
    """A delta that streams no open part of its kind: an unknown delta kind
    or a late delta of a closed part (CUSTOM events), else an error."""
    payload = item.event
    assert isinstance(payload, PartDeltaEvent)
    index, delta = payload.index, payload.delta
    if kind is None:
        assert isinstance(delta, UnknownDelta)
        out.extend(_custom(item, ts, f"harness.part_delta.{delta.part_delta_kind}"))
    elif part is not None:
        raise AguiObservationError(f"part {index} changed kind from {part.kind} to {kind} before its end",
                                   sequence=item.sequence)
    elif find_part(run.retired, index) is not None:
        out.extend(_custom(item, ts, "harness.part_delta"))  # a late delta of a part already closed
    else:
        raise AguiObservationError(f"part delta for index {index}, which is not open", sequence=item.sequence)
    return _run(run, history)


def _unknown_kind(part: Any) -> str:
    assert isinstance(part, UnknownPart)
    return f"part.{part.part_kind}"


def _run(run: RunState, history: HistoryCursor, parts: tuple[OpenPart, ...] | None = None,
         **ledger: Any) -> RunState:
    """``run`` after an item: its cursor ``history``, its open ``parts`` and
    the ledger fields named in ``ledger`` where they changed."""
    return new_tuple(RunState, (history, run.parts if parts is None else parts,
                                run.ledger._replace(**ledger) if ledger else run.ledger))


def _complete_json(args: str) -> bool:
    """Whether tool call args text is whole: empty (no args) or a JSON value."""
    if not args:
        return True
    try:
        _json.loads(args)
    except ValueError:
        return False
    return True


def _args_so_far(part: OpenPart, final: ToolCallPart, ts: int, parent: str | None, out: list[Record]) -> OpenPart:
    """The end of a tool call's part whose args are not whole yet: its START if
    it had none, and what ``final`` holds beyond what was streamed; the call
    stays open."""
    if not part.started:
        part = _start_tool_call(part._replace(tool_name=final.tool_name), ts, parent, out)
    args = final.args
    assert isinstance(args, str)
    if len(args) > part.streamed:
        out.append(ev.tool_call_args(ts, part.message_id, args[part.streamed:]))
        part = part_streamed(part, len(args))
    return part


def _end_call(run: RunState, call_id: str, final: ToolCallPart | None, ts: int, out: list[Record]) -> RunState:
    """``run`` with the call ``call_id`` ended, if its part is still open
    after its part end (its args were not whole): the args ``final`` holds
    beyond what was streamed, then TOOL_CALL_END. ``run`` itself otherwise."""
    if run.calls.get(call_id) != "ended":
        return run
    for part in run.parts:
        if part.message_id == call_id and part.kind == "tool_call":
            calls = _close(part, final, ts, run.parent_message_id, run.calls, out)
            return _run(run, run.history, _without(run.parts, part.index), retired=_replace(run.retired, part),
                        calls=calls)
    return run


def _held(part: OpenPart, final: TextPart | ThinkingPart, ts: int, out: list[Record]) -> OpenPart:
    """A text or thinking part the source ended while its response goes on:
    what ``final`` holds beyond what was streamed is emitted, its signature
    kept for its END, and the part stays open as ``ended``."""
    content = final.content
    if len(content) > part.streamed:
        emit = ev.text_content if part.kind == "text" else ev.reasoning_content
        out.append(emit(ts, part.message_id, content[part.streamed:]))
    signature = (final.signature if isinstance(final, ThinkingPart) else None) or part.signature
    return part._replace(streamed=max(part.streamed, len(content)), signature=signature, ended=True)


def _end_held(run: RunState, ts: int, out: list[Record], index: int | None = None) -> RunState:
    """``run`` with its ``ended`` parts (only the one at ``index``, if given)
    closed, their END events appended to ``out``, and retired; ``run`` itself
    when there are none."""
    held = [p for p in run.parts if p.ended and (index is None or p.index == index)]
    if not held:
        return run
    parts, retired = run.parts, run.retired
    for part in held:
        _close(part, None, ts, run.parent_message_id, run.calls, out)
        parts, retired = _without(parts, part.index), _replace(retired, part)
    return _run(run, run.history, parts, retired=retired)


def _close_run(run: RunState, ts: int, out: list[Record]) -> RunState:
    """``run`` with its open parts ended (their END events appended to
    ``out``) and no parent message."""
    calls = run.calls
    for part in run.parts:
        calls = _close(part, None, ts, run.parent_message_id, calls, out)
    return _run(run, run.history, (), parent_message_id=None, calls=calls)


# -- parts -------------------------------------------------------------------------

def _without(parts: tuple[OpenPart, ...], index: int) -> tuple[OpenPart, ...]:
    return tuple(p for p in parts if p.index != index)


def _replace(parts: tuple[OpenPart, ...], part: OpenPart) -> tuple[OpenPart, ...]:
    """``parts`` with ``part`` in place of the one at its index (or added, in index order)."""
    index = part.index
    for i, p in enumerate(parts):
        if p.index == index:
            return parts[:i] + (part,) + parts[i + 1:]
        if p.index > index:
            return parts[:i] + (part,) + parts[i:]
    return parts + (part,)


def _message_id(run: RunState, item: HarnessEvent, index: int, kind: str, own: str | None) -> str:
    """The AG-UI id of a text or reasoning message. A generated id that an
    earlier part already used (a Harness that sent no model-request notice
    between two responses) gets the start item's sequence appended, so ids
    stay unique and replay-stable; so does a part's own id used twice (the
    summary parts of one provider reasoning item share it)."""
    if own is not None:
        return own if own not in run.message_ids else f"{own}:{item.sequence}"
    generated = f"{item.run_id}:request-{run.request_index or 0}:part-{index}:{kind}"
    return generated if generated not in run.message_ids else f"{generated}:{item.sequence}"


def _start(run: RunState, history: HistoryCursor, index: int, source: _Streamed, item: HarnessEvent, ts: int,
           out: list[Record]) -> RunState:
    parent = run.parent_message_id
    if isinstance(source, ToolCallPart):
        source_id = source.tool_call_id
        call_id, reused = run.call_id(source_id), run.ledger.reused_calls
        status = run.calls.get(call_id)
        if status == "open":
            raise AguiObservationError(f"tool call id {source_id!r} is used twice in this run", sequence=item.sequence)
        if status is not None:
            # The Harness names a later call like an earlier one (OpenAI-compatible servers number the calls
            # of each response from call_0): this one is published under an id of its own, stable on replay.
            call_id = f"{source_id}:{item.sequence}"
            reused = reused.set(source_id, call_id)
        args = source.args
        part = OpenPart(index, "tool_call", call_id, part_id=source_id, started=False, tool_name=source.tool_name,
                        pending=args if isinstance(args, str) else "",
                        object_args_json=_json.dumps(args) if isinstance(args, dict) else None)
        if source.tool_name:
            part = _start_tool_call(part, ts, parent, out)
        return _run(run, history, _replace(run.parts, part), retired=_without(run.retired, index),
                    calls=run.calls.set(call_id, "open"), reused_calls=reused)

    kind = _KIND_OF_PART[type(source)]
    message_id = _message_id(run, item, index, kind, source.id)
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
    return _run(run, history, _replace(run.parts, part), parent_message_id=parent,
                retired=_without(run.retired, index), message_ids=run.message_ids.add(message_id))


def _start_tool_call(part: OpenPart, ts: int, parent: str | None, out: list[Record]) -> OpenPart:
    out.append(ev.tool_call_start(ts, part.message_id, part.tool_name, parent))
    if part.pending:
        out.append(ev.tool_call_args(ts, part.message_id, part.pending))
    return part._replace(started=True, streamed=len(part.pending), pending="")


def _tool_call_delta(part: OpenPart, delta: ToolCallPartDelta, ts: int, parent: str | None, out: list[Record],
                     seq: int) -> OpenPart:
    mid = part.message_id
    name, args, call_id = delta.tool_name_delta, delta.args_delta, delta.tool_call_id
    if call_id is not None and call_id != part.part_id:
        raise AguiObservationError(
            f"part {part.index} changed tool call id from {part.part_id!r} to {call_id!r} before its end",
            sequence=seq)
    if name:
        if part.started:
            raise AguiObservationError(f"tool call {mid!r} changed its name after TOOL_CALL_START", sequence=seq)
        part = part._replace(tool_name=part.tool_name + name)
    if isinstance(args, dict):
        if part.streamed or part.pending:
            raise AguiObservationError(f"tool call {mid!r} mixed text args with object args", sequence=seq)
        merged = {**_json.loads(part.object_args_json), **args} if part.object_args_json else args
        return part._replace(object_args_json=_json.dumps(merged))
    if args:
        if part.object_args_json is not None:
            raise AguiObservationError(f"tool call {mid!r} mixed object args with text args", sequence=seq)
        if part.started:
            out.append(ev.tool_call_args(ts, mid, args))
            return part_streamed(part, part.streamed + len(args))
        part = part._replace(pending=part.pending + args)
        if part.tool_name:
            part = _start_tool_call(part, ts, parent, out)
    return part


def _check_same_part(part: OpenPart, final: _Streamed, seq: int) -> None:
    kind = _KIND_OF_PART[type(final)]
    if kind != part.kind:
        raise AguiObservationError(f"part {part.index} changed kind from {part.kind} to {kind} before its end",
                                   sequence=seq)
    if isinstance(final, ToolCallPart):
        if final.tool_call_id != part.part_id:
            raise AguiObservationError(
                f"part {part.index} ended as tool call {final.tool_call_id!r}, started as {part.part_id!r}",
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
                part = part._replace(tool_name=final.tool_name)
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


# -- other payloads ------------------------------------------------------------------

def _tool_result(call_id: str, tool_name: str, outcome: str, content: ToolContent, retry: RetryInfo | None,
                 ts: int, *, provider_executed: bool = False) -> Record:
    """The TOOL_CALL_RESULT answering call ``call_id`` (its id in this Run's
    events), whatever the outcome; the outcome, the tool and how the call ran
    in ``metadata.harness``."""
    harness: dict[str, Any] = {"outcome": outcome, "tool_name": tool_name}
    if provider_executed:
        harness["provider_executed"] = True
    if retry is not None:
        harness["retry"] = {k: v for k, v in (("cause", retry.cause), ("attempt", retry.attempt),
                                              ("max_retries", retry.max_retries)) if v is not None}
    if isinstance(content, (BinaryContent, MediaContent, ContentList)):
        harness["content"] = _content_parts(content)
    text = content if isinstance(content, str) else _json.dumps(content_to_json(content, binary_data=False))
    meta = _json.dumps({"harness": harness})
    return ev.tool_call_result(ts, f"{call_id}:result", call_id, text, meta)


def _visible(content: ToolContent, metadata: Any, options: ProjectionOptions) -> ToolContent:
    """The part of a tool result's content a UI may see. A tool that returns
    supplements for the model beside its value (a13n-harness makes the
    content a list of the value and the supplements, described by
    ``metadata["a13n.tool-content"]``: ``result_index``, and one content
    metadata per supplement in ``items``) shows its value and the supplements
    whose ``display`` is not false; with ``show_hidden``, or content without
    a description this release can read, everything."""
    if options.show_hidden or not isinstance(metadata, dict):
        return content
    described = metadata.get("a13n.tool-content")
    values = content.items if isinstance(content, ContentList) else content if isinstance(content, list) else None
    if not isinstance(described, dict) or values is None:
        return content
    at, items = described.get("result_index"), described.get("items")
    supplements = [v for i, v in enumerate(values) if i != at]
    if type(at) is not int or not 0 <= at < len(values) or not isinstance(items, list) \
            or len(items) != len(supplements):
        return content
    shown = [values[at], *(v for v, meta in zip(supplements, items, strict=True)
                           if not (isinstance(meta, dict) and meta.get("display") is False))]
    if len(shown) == len(values):
        return content
    if len(shown) == 1:
        return shown[0]
    if any(isinstance(v, (BinaryContent, MediaContent)) for v in shown):
        return ContentList(tuple(shown))
    return cast(list[JSON], shown)


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


def _custom(item: HarnessEvent, ts: int, name: str, payload: dict[str, Any] | None = None,
            chunk: dict[str, int] | None = None) -> list[Record]:
    source = correlation(item)
    value = dict(source)
    value["payload"] = payload if payload is not None else payload_to_json(item.event, binary_data=False)
    if chunk is not None:
        value["chunk"] = chunk
    return custom_records(ts, name, value, source)


_MESSAGE_SOURCES = frozenset(("user", "steering"))
"""Input sources whose text becomes an AG-UI user message (others stay CUSTOM)."""


def _user_message(item: HarnessEvent, text: str, ts: int, message_id: str | None = None) -> list[Record]:
    """A user or steering text input as an AG-UI user message, so a client
    that reloads shows the question. Its id is the client's own message's
    (``message_id``, from ``CLIENT_MESSAGE_ID``), else ``<run_id>:input-<sequence>``:
    unique in the Run and across Runs, and the same on every replay."""
    message_id = message_id or f"{item.run_id}:input-{item.sequence}"
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


def interrupt_id(tool_call_id: str, reason: InterruptReason) -> str:
    """The id of the interrupt a suspended Run gives a deferred call (reason
    ``"tool_call"``: the call's own id, whose answer is its result) or an
    approval (``"tool_approval"``: ``<tool_call_id>:approval``): what a
    client's ``resume[]`` entry names."""
    return tool_call_id if reason == "tool_call" else f"{tool_call_id}:approval"


APPROVAL_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "boolean", "description": "true approves the call, false denies it"},
        {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
         "required": ["approved"], "additionalProperties": False},
    ],
}
"""The ``responseSchema`` of an approval interrupt: true or false, or ``{"approved", "reason"}``."""


def _interrupts(result: RunResult) -> list[dict[str, Any]]:
    # A call of one of the client's own tools is no interrupt: as AG-UI's frontend tools go, the Run ends and
    # the client runs the call it streamed, answering with a tool message in its next request.
    assert result.deferred is not None
    out = []
    waits: tuple[tuple[InterruptReason, str, tuple[DeferredToolCall, ...]], ...] = (
        ("tool_call", "the result of", result.deferred.calls),
        ("tool_approval", "approval of", result.deferred.approvals))
    for reason, verb, calls in waits:
        for call in calls:
            if reason == "tool_call" and is_client_tool_call(call.tool_call_id, result.deferred.metadata):
                continue
            schema = APPROVAL_SCHEMA if reason == "tool_approval" else {
                "description": f"The result of {call.tool_name}: any JSON value"}
            out.append({
                "id": interrupt_id(call.tool_call_id, reason),
                "reason": reason,
                "message": f"Waiting for {verb} {call.tool_name}",
                "toolCallId": call.tool_call_id,
                "responseSchema": schema,
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
        interrupts = _interrupts(result)
        outcome = {"type": "interrupt", "interrupts": interrupts} if interrupts else {"type": "success"}
    else:
        outcome = {"type": "cancelled"}
    return [ev.run_finished(ts, item.thread_id, item.run_id, output, _json.dumps(outcome), usage)]


def _named_by_client(record: Record, options: ProjectionOptions) -> Record:
    """A RUN_FINISHED record naming the Run by its clients' ids (``ProjectionOptions.client_thread_id`` /
    ``client_run_id``); any other record as it is."""
    if ev.event_type(record) != "RUN_FINISHED":
        return record
    if options.client_thread_id is not None:
        record = ev.with_field(record, "thread_id", options.client_thread_id)
    if options.client_run_id is not None:
        record = ev.with_field(record, "run_id", options.client_run_id)
    return record


# -- this library's vocabulary ----------------------------------------------------------------------


def _end_run(run: RunState, item: HarnessRunResultEvent, ts: int, out: list[Record]) -> RunState:
    """The root Run's open parts ended, then its terminal event."""
    run = _close_run(run, ts, out)
    out.extend(_terminal(item, ts))
    return run


def _subagent_finished(ts: int, run_id: str, text: str | None) -> Record:
    return ev.subagent_finished(ts, run_id, text, _SUCCESS)


def _subagent_failed(ts: int, run_id: str, name: str | None, status: str) -> Record:
    return ev.subagent_error(ts, run_id, f"subagent {name!r} did not complete ({status})", status)


DEFAULT = Vocabulary(
    name=DEFAULT_VOCABULARY, convert=_run_step, close=_close_run, terminal=_end_run, run_started=ev.run_started,
    announces_run="first_item", subagent_started=ev.subagent_started, subagent_finished=_subagent_finished,
    subagent_failed=_subagent_failed, holds_children=True, closes_children=True, renames_ids=True,
    process=apply_processor, frame=None)
"""This library's vocabulary, the default of every projection (docs/projection.md, "What the projection looks like")."""
register(DEFAULT)
object.__setattr__(DEFAULT_OPTIONS, "rules", DEFAULT)  # made (by core.state) before DEFAULT was registered
