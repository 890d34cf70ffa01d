# The projection state: one immutable value per point in a Run's stream.
#
# A stream is one root Run and, when it delegates, the child Runs whose items
# the Harness forwards into it (see ``reduce``). Every Run of the stream, the
# root and each child alike, has a ``RunState``: where its history stands (a
# ``HistoryCursor``), its model request, the parts it has open, what became
# of each of its tool calls, the message ids it has given, and the ids it
# publishes under another name because another Run of the stream published
# them first. A child also has a ``SubagentState``: its link to its parent
# (name, parent Run, delegating tool call, depth), its status, the events it
# produced before it was announced, and its latest assistant text (what its
# SUBAGENT_FINISHED reports).
#
# ``ProjectionState`` holds the root's RunState, the children by run id, the
# owner of every AG-UI message id and tool call id published in the stream
# (so an id two Runs use can be renamed), how many children were announced,
# and the emitted events: a ``RecordLog`` of records, or for a live-only
# observer a ``LiveLog`` that only counts them. Nothing in the reducer reads
# the events back: whatever a rule needs is in these values.
#
# ``OpenPart``, ``RunState`` and ``HistoryCursor`` are NamedTuples, built
# anew on nearly every item (a token rebuilds a part, the root's RunState and
# its cursor): named fields, and the cheapest frozen values CPython makes.
# ``ProjectionState`` and ``SubagentState`` are frozen attrs classes. The
# Run-long maps of tool calls and message ids are ``idmap`` tries, so that
# the collector's share of an item stays flat over a long Run. Open parts
# are a short tuple ordered by index: a model response has a handful of parts
# open at once, and rebuilding a tuple of three is cheaper than a map update.
#
# Nothing in here is mutable. Every transition in ``reduce`` builds new values
# and leaves the old ones intact, so any earlier state can be kept, compared
# (``is`` for "nothing changed") and resumed from.

from __future__ import annotations

from typing import Literal, NamedTuple

import attrs
from pyrsistent import PMap, PVector, pmap

from .history import INITIAL_CURSOR, HistoryCursor
from .idmap import IdMap, IdSet
from .livelog import LiveLog
from .records import EventLog, Record, RecordLog

__all__ = [
    "OpenPart", "RunState", "ProjectionState", "INITIAL_STATE", "INITIAL_RUN", "CallStatus", "PartKind",
    "SubagentState", "SubagentStatus", "find_part",
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


_NO_RENAMES: PMap[str, str] = pmap()


class RunState(NamedTuple):
    """What the projection knows of one Run of the stream (the root or a child).

    ``history`` is the Run's cursor, ``request_index`` its latest model
    request (None before any), ``parent_message_id`` the latest assistant
    text message of that request (the parent of its tool calls), ``parts``
    the parts open (or retired, see OpenPart) in index order, ``calls`` what
    became of each tool call id, ``message_ids`` the ids given to its text
    and reasoning messages (each unique in the Run). ``renamed_messages`` and
    ``renamed_calls`` map the message and tool call ids this Run uses to the
    ones published for it, where those differ (another Run of the stream
    published the id first).
    """

    history: HistoryCursor = INITIAL_CURSOR
    request_index: int | None = None
    parent_message_id: str | None = None
    parts: tuple[OpenPart, ...] = ()
    calls: IdMap[CallStatus] = IdMap()
    message_ids: IdSet = IdSet()
    renamed_messages: PMap[str, str] = _NO_RENAMES
    renamed_calls: PMap[str, str] = _NO_RENAMES

    @property
    def thread_id(self) -> str | None:
        return self.history.thread_id

    @property
    def run_id(self) -> str | None:
        return self.history.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the Run's last item, -1 before the first."""
        return self.history.next_sequence - 1

    @property
    def finished(self) -> bool:
        return self.history.finished

    def part(self, index: int) -> OpenPart | None:
        """The open part at ``index``, if any (a retired part is not open)."""
        part = find_part(self.parts, index)
        return part if part is not None and not part.retired else None

    @property
    def open_parts(self) -> tuple[OpenPart, ...]:
        """The parts still open, in index order (without retired ones)."""
        return tuple(p for p in self.parts if not p.retired)

    def __repr__(self) -> str:
        parts = ", ".join(f"{p.index}:{p.kind}" for p in self.open_parts) or "none"
        return (f"RunState({self.history!r}, request={self.request_index}, open parts={parts}, "
                f"calls={len(self.calls)})")


INITIAL_RUN = RunState()
"""The RunState of a Run that has no item yet."""


@attrs.frozen(repr=False, slots=False)
class SubagentState:
    """One child Run in the stream of a root Run.

    ``run`` is its RunState. ``status`` is "pending" from its first item
    until its announcement links it to its parent, then "running", and
    finally "completed", "failed" or "cut_off" (still running when its parent
    finished or the root Run ended). ``name`` is the subagent's name,
    ``parent_run_id`` the delegating Run, ``parent_tool_call_id`` the
    delegating tool call as published (renamed if its id was renamed),
    ``depth`` 1 for a child of the root Run, 2 for a grandchild, ...;
    ``order`` counts announcements in the stream. ``pending`` holds the
    records of its items before the announcement (processed when they came).
    ``last_text`` is the published id of its latest assistant text message and
    the content that message published so far.
    """

    run_id: str
    run: RunState
    status: SubagentStatus = "pending"
    name: str | None = None
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    depth: int = 0
    order: int = -1
    pending: tuple[Record, ...] = ()
    last_text: tuple[str, PVector[str]] | None = None

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed", "cut_off")

    def __repr__(self) -> str:
        link = "" if self.parent_run_id is None else f" of {self.parent_run_id!r} via {self.parent_tool_call_id!r}"
        return (f"SubagentState({self.run_id!r} {self.name or '?'} {self.status}{link}, "
                f"last_sequence={self.run.last_sequence}, open parts={len(self.run.open_parts)})")


_NO_SUBAGENTS: PMap[str, SubagentState] = pmap()
_NO_OWNERS: IdMap[str] = IdMap()


@attrs.frozen(repr=False, slots=False)
class ProjectionState:
    """The whole projection of one Run's stream up to some item.

    ``root`` is the root Run's RunState; ``subagents`` one SubagentState per
    child Run, by run id (empty for a Run that never delegated);
    ``message_owners`` and ``call_owners`` the Run that published each AG-UI
    message id and tool call id; ``announced`` how many children were
    announced; ``events`` the emitted events as records (a ``LiveLog``, which
    only counts them, for a live-only observer). The root's fields read
    through (``history``, ``parts``, ``calls``, ...).
    """

    root: RunState = INITIAL_RUN
    subagents: PMap[str, SubagentState] = _NO_SUBAGENTS
    message_owners: IdMap[str] = _NO_OWNERS
    call_owners: IdMap[str] = _NO_OWNERS
    announced: int = 0
    events: RecordLog | LiveLog = RecordLog()

    # -- the root Run ------------------------------------------------------------------------

    @property
    def history(self) -> HistoryCursor:
        return self.root.history

    @property
    def thread_id(self) -> str | None:
        """The Thread bound by the first item, else None."""
        return self.root.history.thread_id

    @property
    def run_id(self) -> str | None:
        """The Run bound by the first item, else None."""
        return self.root.history.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the root Run's last item, -1 before the first."""
        return self.root.history.next_sequence - 1

    @property
    def finished(self) -> bool:
        """Whether the terminal item arrived."""
        return self.root.history.finished

    @property
    def request_index(self) -> int | None:
        return self.root.request_index

    @property
    def parent_message_id(self) -> str | None:
        return self.root.parent_message_id

    @property
    def parts(self) -> tuple[OpenPart, ...]:
        return self.root.parts

    @property
    def calls(self) -> IdMap[CallStatus]:
        return self.root.calls

    @property
    def message_ids(self) -> IdSet:
        return self.root.message_ids

    def part(self, index: int) -> OpenPart | None:
        """The root Run's open part at ``index``, if any."""
        return self.root.part(index)

    @property
    def open_parts(self) -> tuple[OpenPart, ...]:
        """The root Run's parts still open, in index order."""
        return self.root.open_parts

    @property
    def delegation(self) -> PMap[str, SubagentState] | None:
        """The subagent Runs of a stream that delegates; None for a Run that
        never did."""
        return self.subagents or None

    # -- the stream ----------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """The position of the last item taken in the Run's stream (counted
        as the Host kit's journal counts it: from the root Run's first
        sequence, child Runs' items included; -1 before the first)."""
        return self.last_sequence + sum(sub.run.history.next_sequence for sub in self.subagents.values())

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

    def __repr__(self) -> str:
        if self.run_id is None:
            return "ProjectionState(fresh)"
        status = "finished" if self.finished else "live"
        parts = ", ".join(f"{p.index}:{p.kind}" for p in self.open_parts) or "none"
        subagents = f", subagents={len(self.subagents)}" if self.subagents else ""
        return (
            f"ProjectionState(run={self.run_id!r} {status}, last_sequence={self.last_sequence}, "
            f"request={self.request_index}, open parts={parts}, calls={len(self.calls)}{subagents}, "
            f"events={len(self.events)})"
        )


INITIAL_STATE = ProjectionState()
"""The state of an observer that has seen nothing."""
