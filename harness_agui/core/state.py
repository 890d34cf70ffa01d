# The projection state: one immutable value per point in a Run's history.
#
# ``ProjectionState`` holds the correlation bound by the first item, the last
# sequence seen, whether the terminal item arrived, the model-request cursor,
# the parts still open, what became of every tool call, and the accumulated
# AG-UI events as records (see ``_events``). Open parts are a short tuple
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
    ``pending`` and has ``started`` false.
    """

    index: int
    kind: PartKind
    message_id: str
    part_id: str | None = None
    streamed: int = 0
    started: bool = True
    tool_name: str = ""
    pending: str = ""
    dict_args: str | None = None
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
    """The whole projection of one Run up to some item."""

    thread_id: str | None = None
    run_id: str | None = None
    last_sequence: int = -1
    finished: bool = False
    request_index: int | None = None
    parent_message_id: str | None = None
    parts: tuple[OpenPart, ...] = ()
    calls: PMap[str, CallStatus] = pmap()
    messages: PSet[str] = pset()
    events: RecordLog = RecordLog()

    @property
    def event_count(self) -> int:
        return len(self.events)

    def snapshot(self) -> EventLog:
        """The accumulated events as an immutable, lazily built sequence."""
        return EventLog(self.events)

    def part(self, index: int) -> OpenPart | None:
        """The open part at ``index``, if any."""
        return find_part(self.parts, index)

    def _repr_html_(self) -> str:
        from ..debug.views import state_html

        return state_html(self)

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


INITIAL_STATE = ProjectionState()
"""The state of an observer that has seen nothing."""
