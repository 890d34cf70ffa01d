# The projection state: one immutable value per point in a Run's history.
#
# ``ProjectionState`` holds where the Run's history stands (a ``HistoryCursor``:
# the correlation bound by the first item, the sequence due next, whether the
# terminal item arrived; ``thread_id``, ``run_id``, ``last_sequence`` and
# ``finished`` read through to it), the model-request cursor,
# the parts still open, what became of every tool call, and the accumulated
# AG-UI events as records (see ``records``). Open parts are a short tuple
# ordered by index rather than a map: a model response has a handful of parts
# open at once, and rebuilding a tuple of three is cheaper than a map update
# on the token-by-token hot path.
#
# Both classes are frozen attrs classes with an instance dict rather than
# slots: every observe() builds a new ProjectionState and usually a new
# OpenPart, and attrs initialises a frozen dict class about twice as fast as
# a frozen slotted one (it fills the instance dict instead of calling
# object.__setattr__ per field). Old states are garbage at once, so the
# larger instances cost nothing that lasts.
#
# Nothing in here is mutable. Every transition in ``reduce`` builds new values
# and leaves the old ones intact, so any earlier state can be kept, compared
# (``is`` for "nothing changed") and resumed from.

from __future__ import annotations

from typing import Literal

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from .history import INITIAL_CURSOR, HistoryCursor
from .records import EventLog, RecordLog

__all__ = ["OpenPart", "ProjectionState", "INITIAL_STATE", "CallStatus", "PartKind"]

PartKind = Literal["text", "thinking", "tool_call"]
CallStatus = Literal["open", "ended", "answered"]


@attrs.frozen(repr=False, slots=False)
class OpenPart:
    """A part that has started and not yet ended.

    ``message_id`` is the AG-UI message id (the tool call id for tool calls);
    ``streamed`` counts the characters of content or args already emitted;
    a tool call whose name is not yet known holds its args text in
    ``pending`` and has ``started`` false; a tool call streaming its args as
    JSON objects holds their merge, as compact JSON text, in
    ``object_args_json``.
    """

    index: int
    kind: PartKind
    message_id: str
    part_id: str | None = None
    streamed: int = 0
    started: bool = True
    tool_name: str = ""
    pending: str = ""
    object_args_json: str | None = None
    signature: str | None = None

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
    calls: PMap[str, CallStatus] = pmap()
    message_ids: PSet[str] = pset()
    events: RecordLog = RecordLog()

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
        """The accumulated events as an immutable, lazily built sequence."""
        return EventLog(self.events)

    def part(self, index: int) -> OpenPart | None:
        """The open part at ``index``, if any."""
        return find_part(self.parts, index)

    @classmethod
    def of(cls, history: HistoryCursor, request_index: int | None, parent_message_id: str | None,
           parts: tuple[OpenPart, ...], calls: PMap[str, CallStatus], message_ids: PSet[str],
           events: RecordLog) -> ProjectionState:
        """``ProjectionState(...)`` with every field given, for the reducer's
        hot path: it fills the instance dict the way attrs' generated
        ``__init__`` does, without that method's per-call set-up (the class has
        no validators or converters to skip). tests/test_state_pickle.py checks
        that both ways build equal values."""
        state = _new(cls)
        state.__dict__.update(history=history, request_index=request_index, parent_message_id=parent_message_id,
                              parts=parts, calls=calls, message_ids=message_ids, events=events)
        return state

    def __repr__(self) -> str:
        if self.run_id is None:
            return "ProjectionState(fresh)"
        status = "finished" if self.finished else "live"
        parts = ", ".join(f"{p.index}:{p.kind}" for p in self.parts) or "none"
        return (
            f"ProjectionState(run={self.run_id!r} {status}, last_sequence={self.last_sequence}, "
            f"request={self.request_index}, open parts={parts}, calls={len(self.calls)}, "
            f"events={len(self.events)})"
        )


_new = object.__new__

INITIAL_STATE = ProjectionState()
"""The state of an observer that has seen nothing."""
