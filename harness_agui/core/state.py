# The projection state: one immutable value per point in a Run's history.
#
# ``ProjectionState`` holds where the Run's history stands (a ``HistoryCursor``:
# the correlation bound by the first item, the sequence due next, whether the
# terminal item arrived; ``thread_id``, ``run_id``, ``last_sequence`` and
# ``finished`` read through to it), the model-request cursor,
# the parts still open, what became of every tool call, and the accumulated
# AG-UI events as records (see ``records``). The Run-long maps of tool calls
# and message ids are ``idmap`` tries rather than pyrsistent maps, so that
# the collector's share of an item stays flat over a long Run (see there).
# Open parts are a short tuple ordered by index rather than a map: a model
# response has a handful of parts open at once, and rebuilding a tuple of
# three is cheaper than a map update on the token-by-token hot path.
#
# ProjectionState is a frozen attrs class with an instance dict rather than
# slots: every observe() builds a new one, and attrs initialises a frozen
# dict class about twice as fast as a frozen slotted one (it fills the
# instance dict instead of calling object.__setattr__ per field); the
# reducer's token lane copies that dict and changes three entries. OpenPart,
# which nearly every item rebuilds and only the reducer builds, is a
# NamedTuple like the history cursor: named fields, and the cheapest frozen
# value CPython makes (bench/pipeline.py). Old states are garbage at once,
# so the larger instances cost nothing that lasts.
#
# A stream that carries subagent Runs (children forwarded into the root Run's
# stream, see ``subagents``) also holds a ``Delegation``: one
# ``SubagentState`` per child Run (its own per-run projection, a
# ProjectionState whose ``events`` stay empty, plus its link to its parent and
# its status) and the owners of every AG-UI id published in the stream. A
# Run that never delegated keeps ``delegation`` None and pays nothing for it.
#
# Nothing in here is mutable. Every transition in ``reduce`` builds new values
# and leaves the old ones intact, so any earlier state can be kept, compared
# (``is`` for "nothing changed") and resumed from.

from __future__ import annotations

from typing import Any, Literal, NamedTuple, TypeVar

import attrs
from pyrsistent import PMap, pmap

from .history import INITIAL_CURSOR, HistoryCursor
from .idmap import IdMap, IdSet
from .livelog import LiveLog
from .records import EventLog, RecordLog

__all__ = [
    "OpenPart", "ProjectionState", "INITIAL_STATE", "CallStatus", "PartKind", "SubagentState", "SubagentStatus",
    "Delegation",
]

PartKind = Literal["text", "thinking", "tool_call"]
CallStatus = Literal["open", "ended", "answered"]
SubagentStatus = Literal["pending", "running", "completed", "failed", "cut_off"]


class OpenPart(NamedTuple):
    """A part that has started and not yet ended.

    ``message_id`` is the AG-UI message id (the tool call id for tool calls);
    ``streamed`` counts the characters of content or args already emitted;
    a tool call whose name is not yet known holds its args text in
    ``pending`` and has ``started`` false; a tool call streaming its args as
    JSON objects holds their merge, as compact JSON text, in
    ``object_args_json``. A part that a new model request closed before its
    end (its END events are out) stays ``retired`` until a new part takes its
    index, so a late end of it is recognised.
    """

    index: int  # type: ignore[assignment]  # the field hides tuple.index, which nothing calls on a part
    kind: PartKind
    message_id: str
    part_id: str | None = None
    streamed: int = 0
    started: bool = True
    tool_name: str = ""
    pending: str = ""
    object_args_json: str | None = None
    signature: str | None = None
    retired: bool = False

    def __repr__(self) -> str:
        extra = "" if self.started else f", pending={len(self.pending)} chars"
        return f"OpenPart({self.index} {self.kind} {self.message_id!r}, streamed={self.streamed}{extra})"


def find_part(parts: tuple[OpenPart, ...], index: int) -> OpenPart | None:
    """The part of ``parts`` at ``index``, if any (a few parts: a scan)."""
    for p in parts:
        if p.index == index:
            return p
    return None


@attrs.frozen(repr=False, slots=False)
class ProjectionState:
    """The whole projection of one Run up to some item.

    ``message_ids`` are the AG-UI message ids already given to a text or
    reasoning message of this Run (each must stay unique), ``calls`` what
    became of each tool call id, ``events`` the emitted events as records.
    """

    history: HistoryCursor = INITIAL_CURSOR
    request_index: int | None = None
    parent_message_id: str | None = None
    parts: tuple[OpenPart, ...] = ()
    calls: IdMap[CallStatus] = IdMap()
    message_ids: IdSet = IdSet()
    events: RecordLog | LiveLog = RecordLog()
    delegation: Delegation | None = None

    @property
    def subagents(self) -> PMap[str, SubagentState]:
        """Every subagent Run seen in the stream, by run id (empty for a Run
        that never delegated)."""
        return _NO_SUBAGENTS if self.delegation is None else self.delegation.runs

    @property
    def thread_id(self) -> str | None:
        """The Thread bound by the first item, else None."""
        return self.history.thread_id

    @property
    def run_id(self) -> str | None:
        """The Run bound by the first item, else None."""
        return self.history.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the last item, -1 before the first."""
        return self.history.next_sequence - 1

    @property
    def finished(self) -> bool:
        """Whether the terminal item arrived."""
        return self.history.finished

    @property
    def event_count(self) -> int:
        return len(self.events)

    def snapshot(self) -> EventLog:
        """The accumulated events as an immutable, lazily built sequence.
        Raises EventsNotRetainedError for the state of a live-only observer
        (its ``events`` keep only their number, see ``livelog``)."""
        if not isinstance(self.events, RecordLog):
            from .errors import EventsNotRetainedError
            raise EventsNotRetainedError("the state of a live-only observer keeps no events (retain_events=False)")
        return EventLog(self.events)

    def part(self, index: int) -> OpenPart | None:
        """The open part at ``index``, if any (a retired part is not open)."""
        part = find_part(self.parts, index)
        return part if part is not None and not part.retired else None

    @property
    def open_parts(self) -> tuple[OpenPart, ...]:
        """The parts still open, in index order (without retired ones)."""
        return tuple(p for p in self.parts if not p.retired)

    @classmethod
    def of(cls, history: HistoryCursor, request_index: int | None, parent_message_id: str | None,
           parts: tuple[OpenPart, ...], calls: IdMap[CallStatus], message_ids: IdSet,
           events: RecordLog | LiveLog, delegation: Delegation | None = None) -> ProjectionState:
        """``ProjectionState(...)`` with every field given, for the reducer's
        hot path: it fills the instance dict the way attrs' generated
        ``__init__`` does, without that method's per-call set-up (the class has
        no validators or converters to skip). tests/test_state_pickle.py checks
        that both ways build equal values."""
        state = _new(cls)
        # One store per field, in field order: cheaper than building a keyword dict for update().
        fields = state.__dict__
        fields["history"] = history
        fields["request_index"] = request_index
        fields["parent_message_id"] = parent_message_id
        fields["parts"] = parts
        fields["calls"] = calls
        fields["message_ids"] = message_ids
        fields["events"] = events
        fields["delegation"] = delegation
        return state

    def __repr__(self) -> str:
        if self.run_id is None:
            return "ProjectionState(fresh)"
        status = "finished" if self.finished else "live"
        parts = ", ".join(f"{p.index}:{p.kind}" for p in self.open_parts) or "none"
        subagents = "" if self.delegation is None else f", subagents={len(self.delegation.runs)}"
        return (
            f"ProjectionState(run={self.run_id!r} {status}, last_sequence={self.last_sequence}, "
            f"request={self.request_index}, open parts={parts}, calls={len(self.calls)}{subagents}, "
            f"events={len(self.events)})"
        )


_new = object.__new__


@attrs.frozen(repr=False, slots=False)
class SubagentState:
    """One child Run in the stream of a root Run (see ``subagents``).

    ``run`` is the child's own per-run projection (history cursor, open
    parts, tool calls, model request, message ids; its ``events`` stay
    empty: the child's events are in the root state's one log). ``status``
    is "pending" from its first item until its announcement links it to its
    parent, then "running", and finally "completed", "failed" or "cut_off"
    (still running when its parent finished or the root Run ended).
    ``name`` is the subagent's name, ``parent_run_id`` the delegating Run,
    ``parent_tool_call_id`` the delegating tool call as published (renamed
    if its id was renamed), ``depth`` 1 for a child of the root Run, 2 for a
    grandchild, ...; ``order`` counts announcements in the stream.
    ``pending`` holds the records of its items before the announcement.
    ``renamed_messages`` and ``renamed_calls`` map the message and tool call
    ids this Run uses to the ones published for it (only those that differ).
    ``last_text`` is the published id of its latest assistant text message
    and the position of its TEXT_MESSAGE_START in the log.
    """

    run_id: str
    run: ProjectionState
    status: SubagentStatus = "pending"
    name: str | None = None
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    depth: int = 0
    order: int = -1
    pending: tuple[tuple[Any, ...], ...] = ()
    renamed_messages: PMap[str, str] = pmap()
    renamed_calls: PMap[str, str] = pmap()
    last_text: tuple[str, int] | None = None

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed", "cut_off")

    def __repr__(self) -> str:
        link = "" if self.parent_run_id is None else f" of {self.parent_run_id!r} via {self.parent_tool_call_id!r}"
        return (f"SubagentState({self.run_id!r} {self.name or '?'} {self.status}{link}, "
                f"last_sequence={self.run.last_sequence}, open parts={len(self.run.parts)})")


@attrs.frozen(repr=False, slots=False)
class Delegation:
    """What a stream that carries subagent Runs knows beyond the root Run's
    own projection: ``runs``, one SubagentState per child Run by run id;
    ``message_owners`` and ``call_owners``, the Run that published each
    AG-UI message id and tool call id (so that an id used by two Runs can be
    renamed, see ``subagents``); ``renamed_messages`` and ``renamed_calls``,
    the root Run's own renames; ``announced``, how many children were
    announced."""

    runs: PMap[str, SubagentState] = pmap()
    message_owners: IdMap[str] = IdMap()
    call_owners: IdMap[str] = IdMap()
    renamed_messages: PMap[str, str] = pmap()
    renamed_calls: PMap[str, str] = pmap()
    announced: int = 0

    def __repr__(self) -> str:
        return f"Delegation({len(self.runs)} subagent runs, {self.announced} announced)"


_NO_SUBAGENTS: PMap[str, SubagentState] = pmap()

_T = TypeVar("_T", SubagentState, Delegation)


def with_changes(value: _T, **changes: Any) -> _T:
    """``attrs.evolve(value, **changes)`` for a SubagentState or Delegation,
    without its per-call introspection (a delegating stream makes a few per
    item; neither class has validators or converters to re-run)."""
    new = _new(type(value))
    fields = new.__dict__
    fields.update(value.__dict__)
    assert changes.keys() <= fields.keys(), f"no such field: {sorted(changes.keys() - fields.keys())}"
    fields.update(changes)
    return new

INITIAL_STATE = ProjectionState()
"""The state of an observer that has seen nothing."""
