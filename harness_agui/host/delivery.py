# The durable AG-UI delivery log, and the protocol that makes it crash-safe.
#
#     harness_agui_delivery_runs(run_id, thread_id, source_cursor, last_event_id, finished)
#     harness_agui_deliveries(run_id, event_id, source_sequence, event_type, data)
#
# Every AG-UI event a Host publishes gets an id: 1, 2, 3, ... per Run, in
# publication order, stored with the event's JSON (camelCase, as clients read
# it) and the sequence of the source item that produced it. The ids are the
# log's own, independent of source sequences (one item may produce no event
# or several), and never reused. A UI client that reconnects with the
# Server-Sent Events ``Last-Event-ID`` header is served every event after that
# id from the log, then follows new ones until the Run's terminal event.
#
# The protocol (what ``project_run`` does; a Host doing it by hand must keep
# the same order):
#
#   1. append: the source item is committed to the journal first.
#   2. record: ``observer.observe(item)`` gives the item's events, and
#      ``record(item, events)`` commits, in ONE transaction, the events with
#      their new ids AND the Run's delivery cursor (= the item's sequence).
#      An item whose events are all dropped still advances the cursor.
#   3. publish: clients are only ever served committed rows (``replay``,
#      ``follow``, ``sse``), so an id a client has seen can never be assigned
#      to anything else.
#
# On restart, the delivery cursor says exactly which items' events were
# delivered: the Host resumes a fresh observer from the journal prefix
# *through the delivery cursor* (not through the journal's end), checks that
# the rebuilt projection holds exactly the recorded events, and then tails
# the journal *after the delivery cursor*. Crash windows:
#
#   - before 1 commits: the item is in neither store; the Harness delivers it
#     again and the append happens then (a second delivery is a no-op).
#   - between 1 and 2: the item is journaled, its events are not recorded;
#     the tail yields it again (its sequence is after the delivery cursor),
#     the events are derived again (replay-stable, SPEC section 6, so they
#     are the same events) and get their ids then. No client saw them before.
#   - after 2 commits: the prefix holds the item; it is never recorded twice
#     (``record`` refuses anything but the item after the cursor: it runs the
#     item through ``core.history.advance`` from the stored cursor, the same
#     order every reader of the history checks).
#
# So every event id is assigned exactly once, and the published stream has
# neither gap nor duplicate, however often the Host dies. Two projectors that
# race on one Run (a Host restarted while its old process still runs) cannot
# both record an item: the cursor check runs inside the write transaction, so
# the slower one gets ``DeliveryOrderError`` and the log stays whole.

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs
from ag_ui.core import BaseEvent, EventType

from ..core.errors import HistoryError
from ..core.history import HistoryCursor, advance
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.agui import agui_to_json, sse_frame
from ._sqlite import Database, poll_interval_seconds
from .checks import Cursor
from .errors import DeliveryOrderError, UnknownEventIdError

__all__ = ["Delivery", "SqliteDeliveryLog", "parse_last_event_id"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS harness_agui_delivery_runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    source_cursor INTEGER NOT NULL,
    last_event_id INTEGER NOT NULL,
    finished INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS harness_agui_deliveries (
    run_id TEXT NOT NULL,
    event_id INTEGER NOT NULL,
    source_sequence INTEGER NOT NULL,
    event_type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, event_id)
)
"""

_PAGE = 512
_event_adapter: Any = None


def _parse_event(data: str) -> BaseEvent:
    global _event_adapter
    if _event_adapter is None:
        from ag_ui.core import Event
        from pydantic import TypeAdapter

        _event_adapter = TypeAdapter(Event)
    event: BaseEvent = _event_adapter.validate_json(data)
    return event


@attrs.frozen
class Delivery:
    """One published AG-UI event with its durable id.

    ``event_id`` is the id within the Run (1, 2, ...), ``source_sequence``
    the sequence of the source item that produced the event, ``data`` the
    event's JSON exactly as clients receive it.
    """

    run_id: str
    event_id: int
    source_sequence: int
    event_type: str
    data: str

    @property
    def event(self) -> BaseEvent:
        """The AG-UI event, parsed afresh from ``data`` on every access (detached)."""
        return _parse_event(self.data)

    def sse(self) -> str:
        """The Server-Sent Events frame for this event, carrying its id (``id: <event_id>``)."""
        return sse_frame(self.event, event_id=self.event_id)


def parse_last_event_id(value: str | int | None) -> int:
    """The event id a ``Last-Event-ID`` header (or query value) names; 0 for none.

    Accepts None, an empty or blank string, a decimal string or an int.
    Raises ValueError for anything else (a negative number, non-digits).
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"not an event id: {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            return 0
        if not text.isascii() or not text.isdigit():
            raise ValueError(f"not an event id: {value!r}")
        number = int(text)
    else:
        raise ValueError(f"not an event id: {value!r}")
    if number < 0:
        raise ValueError(f"not an event id: {value!r}")
    return number


class SqliteDeliveryLog:
    """Durable AG-UI event ids per Run, and replay after a ``Last-Event-ID``.

    ``path`` is the database file (created if missing, WAL mode; it may be
    the journal's file). ``poll_interval`` is how long ``follow`` sleeps, in
    seconds, when it has caught up; ``synchronous`` and ``timeout`` are as for
    ``SqliteSourceJournal``. Safe to use from several threads and tasks.
    Raises ValueError for an in-memory path or an unknown ``synchronous``.
    """

    def __init__(self, path: str | os.PathLike[str], *, poll_interval: float = 0.05, synchronous: str = "FULL",
                 timeout: float = 30.0) -> None:
        self._poll_interval = poll_interval_seconds(poll_interval)
        self._db = Database(path, synchronous=synchronous, timeout=timeout, schema=_SCHEMA)

    @property
    def path(self) -> str:
        """The database file."""
        return self._db.path

    # -- writing -----------------------------------------------------------------

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent]) -> tuple[Delivery, ...]:
        """Assign ids to the events one source item produced and store them.

        Writes, in one transaction, the events (in order, with ids following
        the Run's last id) and the Run's delivery cursor, set to
        ``item.sequence``; an empty ``events`` only advances the cursor.
        Returns the new deliveries. Raises TypeError for a value that is not
        a source item or an AG-UI event; ``DeliveryOrderError`` when the item
        is not the Run's next one by ``core.history.advance`` (the Run's first
        record is sequence 0, each later one the next sequence, nothing after
        the terminal item, the Thread of the first): already recorded, skipped
        ahead, after the terminal item, another Thread. Its ``__cause__`` is
        the ``HistoryError`` that says which. sqlite3 errors for storage
        failures. On any error nothing is written.
        """
        if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
            raise TypeError(f"record() takes a Harness source item, not {type(item).__name__}")
        events = tuple(events)
        for e in events:
            if not isinstance(e, BaseEvent):
                raise TypeError(f"record() takes AG-UI events, not {type(e).__name__}")
        rows = [(e.type.value if isinstance(e.type, EventType) else str(e.type), agui_to_json(e)) for e in events]
        run_id, seq = item.run_id, item.sequence
        finished = isinstance(item, HarnessRunResultEvent)
        with self._db.write() as conn:
            head = conn.execute(
                "SELECT thread_id, source_cursor, last_event_id, finished FROM harness_agui_delivery_runs "
                "WHERE run_id = ?", (run_id,)).fetchone()
            if head is None:
                last_id, cursor = 0, HistoryCursor(run_id)
            else:
                thread_id, last, last_id, done = head
                cursor = HistoryCursor(run_id, thread_id, last + 1, bool(done))
            try:
                advance(cursor, item)
            except HistoryError as e:
                raise DeliveryOrderError(f"cannot record: {e.reason}", run_id=run_id, sequence=seq,
                                         cursor=cursor.last_sequence) from e
            out = tuple(Delivery(run_id, last_id + i, seq, kind, data) for i, (kind, data) in enumerate(rows, 1))
            conn.executemany(
                "INSERT INTO harness_agui_deliveries (run_id, event_id, source_sequence, event_type, data) "
                "VALUES (?, ?, ?, ?, ?)", [(d.run_id, d.event_id, seq, d.event_type, d.data) for d in out])
            conn.execute(
                "INSERT INTO harness_agui_delivery_runs (run_id, thread_id, source_cursor, last_event_id, finished) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET source_cursor = excluded.source_cursor, "
                "last_event_id = excluded.last_event_id, finished = excluded.finished",
                (run_id, item.thread_id, seq, last_id + len(out), int(finished)))
        return out

    # -- reading -----------------------------------------------------------------

    def cursor(self, run_id: str) -> Cursor:
        """The sequence of the last source item whose events are recorded; None if none is."""
        row = self._db.conn().execute("SELECT source_cursor FROM harness_agui_delivery_runs WHERE run_id = ?",
                                      (run_id,)).fetchone()
        return None if row is None else row[0]

    def last_event_id(self, run_id: str) -> int:
        """The last event id assigned in the Run (the number of events recorded); 0 if none."""
        row = self._db.conn().execute("SELECT last_event_id FROM harness_agui_delivery_runs WHERE run_id = ?",
                                      (run_id,)).fetchone()
        return 0 if row is None else row[0]

    def finished(self, run_id: str) -> bool:
        """Whether the events of the Run's terminal item are recorded."""
        row = self._db.conn().execute("SELECT finished FROM harness_agui_delivery_runs WHERE run_id = ?",
                                      (run_id,)).fetchone()
        return bool(row and row[0])

    def replay(self, run_id: str, *, after: str | int | None = None) -> tuple[Delivery, ...]:
        """Every recorded event of the Run after the id ``after``, in id order.

        ``after`` is a ``Last-Event-ID`` value (see ``parse_last_event_id``);
        None or 0 means from the first event. Returns what is recorded now.
        Raises ValueError for a malformed id and ``UnknownEventIdError`` for
        an id beyond the last one assigned.
        """
        start = parse_last_event_id(after)
        with self._db.read() as conn:
            self._known(conn, run_id, start)
            rows = conn.execute(
                "SELECT event_id, source_sequence, event_type, data FROM harness_agui_deliveries "
                "WHERE run_id = ? AND event_id > ? ORDER BY event_id", (run_id, start)).fetchall()
        return tuple(Delivery(run_id, *row) for row in rows)

    def follow(self, run_id: str, *, after: str | int | None = None, poll_interval: float | None = None,
               ) -> AsyncIterator[Delivery]:
        """Every event of the Run after the id ``after``, following new records.

        Returns an async iterator: first what is recorded, then, polling every
        ``poll_interval`` seconds (the log's default if None), each new
        delivery, ending after the Run's terminal event. The Run need not
        have started yet. A malformed ``after`` raises ValueError from this
        call; an id beyond the last one assigned raises
        ``UnknownEventIdError`` from the first iteration.
        """
        start = parse_last_event_id(after)
        interval = self._poll_interval if poll_interval is None else poll_interval_seconds(poll_interval)
        return self._follow(run_id, start, interval)

    def sse(self, run_id: str, *, last_event_id: str | int | None = None, poll_interval: float | None = None,
            ) -> AsyncIterator[str]:
        """Server-Sent Events frames for a client that last saw ``last_event_id``.

        Exactly ``follow`` with each delivery rendered as its SSE frame (an
        ``id:`` line with the event id, then the ``data:`` line), so the
        browser sends the right ``Last-Event-ID`` when it reconnects. Raises
        as ``follow`` does.
        """
        deliveries = self.follow(run_id, after=last_event_id, poll_interval=poll_interval)
        return _frames(deliveries)

    def close(self) -> None:
        """Close every connection; later calls raise ValueError. Closing twice is harmless."""
        self._db.close()

    def __enter__(self) -> SqliteDeliveryLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SqliteDeliveryLog {self._db.path!r}{' closed' if self._db.closed else ''}>"

    # -- internals -----------------------------------------------------------------

    @staticmethod
    def _known(conn: Any, run_id: str, after: int) -> None:
        if after == 0:
            return
        row = conn.execute("SELECT last_event_id FROM harness_agui_delivery_runs WHERE run_id = ?",
                           (run_id,)).fetchone()
        last = 0 if row is None else row[0]
        if after > last:
            raise UnknownEventIdError(run_id=run_id, event_id=after, last_event_id=last)

    def _page(self, run_id: str, after: int, check: bool) -> tuple[list[tuple[Any, ...]], bool, int]:
        with self._db.read() as conn:
            if check:
                self._known(conn, run_id, after)
            head = conn.execute("SELECT last_event_id, finished FROM harness_agui_delivery_runs WHERE run_id = ?",
                                (run_id,)).fetchone()
            rows = conn.execute(
                "SELECT event_id, source_sequence, event_type, data FROM harness_agui_deliveries "
                "WHERE run_id = ? AND event_id > ? ORDER BY event_id LIMIT ?", (run_id, after, _PAGE)).fetchall()
        last_id, finished = (0, False) if head is None else (head[0], bool(head[1]))
        return rows, finished, last_id

    async def _follow(self, run_id: str, after: int, interval: float) -> AsyncIterator[Delivery]:
        check = True
        while True:
            rows, finished, last_id = await asyncio.to_thread(self._page, run_id, after, check)
            check = False
            for row in rows:
                yield Delivery(run_id, *row)
                after = row[0]
            if finished and after >= last_id:
                return
            if not rows:
                await asyncio.sleep(interval)


async def _frames(deliveries: AsyncIterator[Delivery]) -> AsyncIterator[str]:
    async for delivery in deliveries:
        yield delivery.sse()
