# What a run's driver commits in one go (see ``host.batch``): plain values, with
# no behaviour, shared by the driver that computes them (``host.supervisor``)
# and the stores that write them (``journal``, ``delivery`` and their
# PostgreSQL counterparts).

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Journaled", "Head", "Recorded", "StreamWrite"]


@attrs.frozen
class Journaled:
    """One item to append: its position in the root's stream, its own Run and sequence, its wire line.

    ``line`` is None for a terminal result, whose ``item`` the store writes in its worker thread (its
    line, whose state may hold a long Thread's whole history, is never encoded on the event loop; the
    SQLite journal stores that history shared with the Thread's earlier results: ``_shared_history``)."""

    position: int
    run_id: str
    sequence: int
    thread_id: str
    terminal: bool
    line: str | None
    item: Any = attrs.field(default=None, eq=False, repr=False)

    def wire_line(self) -> str:
        """``line``, or the wire line of ``item`` when ``line`` is None."""
        if self.line is not None:
            return self.line
        from ..wire.codec import encode

        return encode(self.item)


@attrs.frozen
class Head:
    """Where one Run of a stream stands after a write: its Thread, last sequence, whether its terminal
    result is in, and (journal heads) the position of its last item (the stream's last, for the root)."""

    run_id: str
    thread_id: str
    last_sequence: int
    terminal: bool
    last_position: int = -1


@attrs.frozen
class Recorded:
    """One event to record: its id, the position of the item that produced it, its type and JSON."""

    event_id: int
    position: int
    type: str
    data: str


@attrs.frozen
class StreamWrite:
    """What one driver commits for one root Run in one go (see the module comment).

    Journal: ``items`` are appended after position ``journal_last`` (None: the stream has no item
    yet), and ``heads`` are the head rows of the Runs they touched, afterwards. Delivery log:
    ``events`` are recorded after ``delivered`` (the stored (cursor, last event id) the driver
    expects; None: the Run has no delivery row yet), leaving the cursor at ``cursor`` (-1: no item
    recorded), the last id at ``last_event_id``, the Run ``finished`` or not, the root's own last
    sequence at ``root_last_sequence`` and the child Runs touched at ``children``. ``lease`` is the
    PostgreSQL lease the write is fenced by. ``records`` is false when the delivery log is left
    alone (an item journaled, nothing recorded)."""

    root_run_id: str
    thread_id: str
    journal_last: int | None = None
    items: tuple[Journaled, ...] = ()
    heads: tuple[Head, ...] = ()
    records: bool = False
    delivered: tuple[int, int] | None = None
    events: tuple[Recorded, ...] = ()
    cursor: int = -1
    last_event_id: int = 0
    finished: bool = False
    root_last_sequence: int = -1
    children: tuple[Head, ...] = ()
    lease: Any = None

    @property
    def size(self) -> int:
        """How many source items the write holds (at least 1: a failure alone counts as one)."""
        return max(1, len(self.items))
