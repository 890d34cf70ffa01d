# The durable AG-UI delivery log, and the protocol that makes it crash-safe.
#
#     harness_agui_delivery_runs(run_id, thread_id, source_cursor, last_event_id, finished, last_sequence, crc)
#     harness_agui_delivery_children(run_id, root_run_id, thread_id, last_sequence, terminal, crc)
#     harness_agui_deliveries(run_id, event_id, source_position, event_type, data, crc)
#
# A Run here is a root Run: its one stream carries the items of the child Runs
# it delegates to as well (see ``journal``), and their events are the root
# Run's events. Every AG-UI event a Host publishes gets an id: 1, 2, 3, ...
# per root Run, in publication order, stored with the event's JSON (camelCase,
# as clients read it) and the position in the stream of the source item that
# produced it (its sequence, for a Run without child Runs). Where each Run of
# the stream stands is kept so that ``record`` checks every item by the same
# rule as every other reader: the root's own last sequence in its run row,
# each child Run's in a row of its own (so recording a child's item reads and
# writes that child's row only, whatever the number of child Runs). The ids are the
# log's own, independent of source sequences (one item may produce no event
# or several), and never reused. A UI client that reconnects with the
# Server-Sent Events ``Last-Event-ID`` header is served every event after that
# id from the log, then follows new ones until the Run's terminal event.
# What ``record`` and ``fail`` write is decided by ``recorded`` and ``failed``
# (the rules of both backends' logs) and written by ``write_records`` as a
# batch of one: the log's one write path, the group commit's too.
#
# Ids on the wire. Inside the log (and as ``Delivery.event_id``) an event's
# id is that number. What a client sees, the SSE ``id:`` field and so its
# ``Last-Event-ID``, is ``<number>.<tag>`` (``Delivery.sse_id``), the tag being
# the first 8 hex digits of the SHA-256 of the run id: ``17.5e1c09a3``. So an
# id names its Run: a ``Last-Event-ID`` copied from another Run, whose numbers
# overlap this one's, is refused (``ForeignEventIdError``) before anything is
# read or streamed, instead of being served from the wrong position; so are
# a malformed id and a bare number (the format before ids named their Run: a
# Host with clients still holding one may pass ``int(value)`` itself, as an
# int is the log's own number). The tag tells Runs apart; it is not a secret
# and authorises nothing. The ids stay short and ASCII, with nothing an SSE
# field cannot hold (no CR, LF or NUL).
#
# The protocol (what ``project_run`` does; a Host doing it by hand must keep
# the same order):
#
#   1. append: the source item is committed to the journal first.
#   2. record: ``observer.observe(item)`` gives the item's events, and
#      ``record(item, events, root_run_id=...)`` commits, in ONE transaction,
#      the events with their new ids AND the Run's delivery cursor (= the
#      item's position in the stream).
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
#     the events are derived again (replay-stable, by the processor contract, so they
#     are the same events) and get their ids then. No client saw them before.
#   - after 2 commits: the prefix holds the item; it is never recorded twice
#     (``record`` refuses anything but the item after the cursor: it runs the
#     item through ``core.history.advance_stream`` from the stored cursor, the
#     same order every reader of the history checks).
#
# So every event id is assigned exactly once, and the published stream has
# neither gap nor duplicate, however often the Host dies. Two projectors that
# race on one Run (a Host restarted while its old process still runs) cannot
# both record an item: each passes ``record`` the delivery cursor it last saw
# (``expected_cursor``), which is compared with the stored one inside the
# write transaction; the one that finds the cursor moved under it gets
# ``ProjectorConflictError`` and writes nothing, and the log stays whole.
# ``project_run`` also compares what it rebuilt with the events of the items
# *through its cursor* only, so a log that grew meanwhile is a conflict, not
# a ``DeliveryMismatchError`` (which means a processor that is not
# replay-stable, or stores that do not belong together).
#
# Damage. Rows are checked as they are read (types and checksum, see
# ``_sqlite``), and so is their arrangement: a Run's events carry every id
# from 1 to its run row's ``last_event_id`` and no other. Each read of the run
# row also reads the highest event id stored for the Run, and each replay page
# must continue where the last one stopped, so a missing, extra or orphaned
# row is a ``DamagedStoreError`` naming it, never a stream served with a hole.

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import hashlib
import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

import attrs
from ag_ui.core import BaseEvent, EventType, RunErrorEvent
from pyrsistent import pmap
from pyrsistent.typing import PMap

from ..core.encode import EncodedEvent
from ..core.errors import AfterTerminalError, ForeignRunError
from ..core.history import HistoryCursor, StreamCursor, advance_stream
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.agui import agui_to_json, sse_frame
from ._sqlite import FLAG, INTEGER, TEXT, Column, Database, Table, checksum, poll_interval_seconds, rewrite_table
from ._store import Store
from .checks import Cursor
from .errors import DamagedStoreError, ForeignEventIdError, ProjectorConflictError, UnknownEventIdError
from .writes import Head, Recorded, StreamWrite

__all__ = ["Delivery", "Page", "SqliteDeliveryLog", "parse_last_event_id", "sse_id"]

# The layout of the release before streams: no per-Run cursors, source sequences.
_RUNS_V1 = Table(
    "harness_agui_delivery_runs",
    (Column("run_id", TEXT), Column("thread_id", TEXT), Column("source_cursor", INTEGER),
     Column("last_event_id", INTEGER), Column("finished", FLAG)),
    key=("run_id",),
)
# The layout of the first release with streams: every Run's cursor in one JSON column of the root's row.
_RUNS_V2 = Table(
    "harness_agui_delivery_runs",
    (Column("run_id", TEXT), Column("thread_id", TEXT), Column("source_cursor", INTEGER),
     Column("last_event_id", INTEGER), Column("finished", FLAG), Column("runs", TEXT)),
    key=("run_id",),
)
_EVENTS_V1 = Table(
    "harness_agui_deliveries",
    (Column("run_id", TEXT), Column("event_id", INTEGER), Column("source_sequence", INTEGER),
     Column("event_type", TEXT), Column("data", TEXT)),
    key=("run_id", "event_id"),
)


def _upgrade_runs_v1(conn: Any, path: str) -> None:
    # Every Run of that release was a stream without children: its cursor was its sequence.
    rewrite_table(conn, path, _RUNS_V1, RUNS, lambda v: (*v, v[2]))


def _upgrade_runs_v2(conn: Any, path: str) -> None:
    # The JSON of every Run's cursor becomes the root's last sequence and one row per child Run.
    children: list[tuple[Any, ...]] = []

    def convert(v: tuple[Any, ...]) -> tuple[Any, ...]:
        run_id = v[0]
        try:
            runs = {run: (str(thread), int(due), bool(ended)) for run, (thread, due, ended) in json.loads(v[5]).items()}
            _, due, _ = runs.pop(run_id)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise _RUNS_V2.damaged(path, v, f"column runs does not hold the stream's cursors ({e})") from None
        children.extend((child, run_id, thread, due - 1, int(ended)) for child, (thread, due, ended) in runs.items())
        return (*v[:5], due - 1)

    rewrite_table(conn, path, _RUNS_V2, RUNS, convert)
    for statement in CHILDREN.schema():
        conn.execute(statement)
    conn.executemany(CHILDREN.insert, [CHILDREN.sealed(row) for row in children])


def _upgrade_events(conn: Any, path: str) -> None:
    rewrite_table(conn, path, _EVENTS_V1, EVENTS, lambda v: v)


RUNS = Table(
    "harness_agui_delivery_runs",
    (Column("run_id", TEXT), Column("thread_id", TEXT), Column("source_cursor", INTEGER),
     Column("last_event_id", INTEGER), Column("finished", FLAG), Column("last_sequence", INTEGER)),
    key=("run_id",),
    upgrades=((_RUNS_V1.names, _upgrade_runs_v1), (_RUNS_V2.names, _upgrade_runs_v2)),
)
CHILDREN = Table(
    "harness_agui_delivery_children",
    (Column("run_id", TEXT), Column("root_run_id", TEXT), Column("thread_id", TEXT),
     Column("last_sequence", INTEGER), Column("terminal", FLAG)),
    key=("run_id",),
    indexes=(("harness_agui_delivery_children_root", "root_run_id"),),
)
EVENTS = Table(
    "harness_agui_deliveries",
    (Column("run_id", TEXT), Column("event_id", INTEGER), Column("source_position", INTEGER),
     Column("event_type", TEXT), Column("data", TEXT)),
    key=("run_id", "event_id"),
    upgrades=((_EVENTS_V1.names, _upgrade_events),),
)
CHILDREN_UPSERT = (f"{CHILDREN.insert} ON CONFLICT (run_id) DO UPDATE SET last_sequence = excluded.last_sequence, "
                   "terminal = excluded.terminal, crc = excluded.crc")

_PAGE = 512
_TAG_DIGITS = 8
_SSE_ID = re.compile(r"(0|[1-9][0-9]{0,18})\.([0-9a-f]{" + str(_TAG_DIGITS) + "})")
_event_adapter: Any = None


def _parse_event(data: str) -> BaseEvent:
    global _event_adapter
    if _event_adapter is None:
        from ag_ui.core import Event
        from pydantic import TypeAdapter

        _event_adapter = TypeAdapter(Event)
    event: BaseEvent = _event_adapter.validate_json(data)
    return event


@functools.lru_cache(maxsize=4096)
def _run_tag(run_id: str) -> str:
    # Computed once per Run (while it is among the latest few thousand asked for), not per event.
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:_TAG_DIGITS]


@attrs.frozen
class Delivery:
    """One published AG-UI event with its durable id.

    ``run_id`` is the root Run, ``event_id`` the id within it (1, 2, ...),
    ``source_position`` the position in the root Run's stream of the source
    item that produced the event (its sequence, for a Run without child
    Runs), ``data`` the event's JSON exactly as clients receive it.
    """

    run_id: str
    event_id: int
    source_position: int
    event_type: str
    data: str

    @property
    def event(self) -> BaseEvent:
        """The AG-UI event, parsed afresh from ``data`` on every access (detached)."""
        return _parse_event(self.data)

    @property
    def sse_id(self) -> str:
        """The id clients see: ``<event_id>.<tag>``, the tag naming the Run (8 hex digits of a digest
        of the run id). The SSE ``id:`` field, so what a reconnecting browser sends as
        ``Last-Event-ID``; accepted back for this Run only (``parse_last_event_id``)."""
        return sse_id(self.run_id, self.event_id)

    def sse(self) -> str:
        """The Server-Sent Events frame for this event, carrying its id (``id: <sse_id>``): the stored JSON
        as it is (one line: compact JSON holds no line break)."""
        return sse_frame(self.data, event_id=self.sse_id)


def sse_id(run_id: str, event_id: int) -> str:
    """The id clients see for event ``event_id`` of root Run ``run_id``: ``<event_id>.<tag>`` (see
    ``Delivery.sse_id``). A Host that sends other frames (a late joiner's catch-up) gives the last one
    the id of the last event it covers, so that a reconnect continues after it."""
    return f"{event_id}.{_run_tag(run_id)}"


def parse_last_event_id(value: str | int | None, *, run_id: str) -> int:
    """The event number a ``Last-Event-ID`` header (or query value) names in the Run ``run_id``; 0 for none.

    Accepts None or a blank string (from the start), an id this log gave an
    event of that Run (``Delivery.sse_id``: ``<number>.<tag>``, surrounding
    blanks ignored), or an int >= 0, taken as the log's own event number (the
    Host's bookkeeping, such as ``Delivery.event_id``; a header value is a
    str). Raises ``ForeignEventIdError`` (an ``UnknownEventIdError``, so a
    ValueError) for anything else: an id of another Run, a bare number (the
    id format before ids named their Run), a negative number, any other text
    or type. TypeError for a run id that is not a str. Whether the number
    was ever assigned is checked by the log (``replay``, ``follow``).
    """
    if not isinstance(run_id, str):
        raise TypeError(f"run_id must be a str, not {type(run_id).__name__}")
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ForeignEventIdError("is not an event id (a negative number)", run_id=run_id, event_id=value)
        return value
    if not isinstance(value, str):
        raise ForeignEventIdError(f"is not an event id (a {type(value).__name__})", run_id=run_id, event_id=value)
    text = value.strip()
    if not text:
        return 0
    match = _SSE_ID.fullmatch(text)
    if match is None:
        if text.isascii() and text.isdigit():
            reason = "is a bare number, not an id of this log (<number>.<run tag>)"
        else:
            reason = "is not an id of this log (<number>.<run tag>)"
    elif match[2] != _run_tag(run_id):
        reason = "is an id of another run"
    else:
        return int(match[1])
    raise ForeignEventIdError(reason, run_id=run_id, event_id=value)


class _Unchecked(enum.Enum):
    UNCHECKED = "unchecked"


@attrs.frozen
class Page:
    """One page of a Run's recorded events (``SqliteDeliveryLog.page``): the ``deliveries``, in id
    order, the Run's ``last_event_id`` and whether it had ``finished`` when the page was read."""

    deliveries: tuple[Delivery, ...]
    last_event_id: int
    finished: bool


def run_id_of(cursor: HistoryCursor) -> str:
    """The run id of a cursor that is bound to its Run."""
    assert cursor.run_id is not None
    return cursor.run_id


@attrs.frozen
class _Head:
    """A Run's row of the delivery log, checked against the highest event id stored."""

    thread_id: str
    cursor: int
    last_event_id: int
    finished: bool
    last_sequence: int

    def stream(self, run_id: str, child: HistoryCursor | None = None) -> StreamCursor:
        """The stream cursor after the recorded items, as far as one more item needs it: the root's
        own cursor and, for an item of a child Run the stream holds, that child's (``child``)."""
        root = HistoryCursor(run_id, self.thread_id, self.last_sequence + 1, self.finished)
        children: PMap[str, HistoryCursor] = pmap() if child is None else pmap({run_id_of(child): child})
        return StreamCursor(root, children, self.cursor + 1, opened=True)


class _DeliveryLog(Store):
    # What the delivery logs of both backends share: every read, the followers, and ``record`` / ``fail``
    # (the rules below, written as a batch of one). Each backend says the rest: ``_head`` (a Run's row in an
    # open transaction) and ``_read_head`` (alone), ``_child`` (a child Run's stored cursor), ``_events``
    # (rows of a page as (event id, position, type, data), checked as the backend checks them),
    # ``_writing`` and ``_write`` (a write transaction, and the backend's one write path), ``_interval``
    # and ``_changes`` (how a follower that has caught up waits), and the SQL of a page.

    _EVENTS_AFTER: str  # a Run's event rows after an id, in id order
    _LIMIT: str  # at most so many of them
    _TABLE: Any  # the table a read names in its errors (SQLite's; PostgreSQL's read takes none)

    def _record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent | EncodedEvent], expected_cursor: Any,
                checked: bool, root_run_id: str | None, lease: Any = None) -> tuple[Delivery, ...]:
        run_id, rows = record_rows(item, events, expected_cursor, checked, root_run_id)
        with self._writing("record", run_id, lease) as conn:
            head = self._head(conn, run_id)
            expect_cursor(run_id, head, expected_cursor, checked)
            child = None if head is None or item.run_id == run_id else self._child(conn, run_id, item)
            write, out = recorded(run_id, head, child, item, rows)
            self._write(conn, write)
        return out

    def _fail(self, run_id: str, event: RunErrorEvent, expected_cursor: Cursor, thread_id: str | None,
              lease: Any = None) -> Delivery:
        data = failure_json(event)
        with self._writing("fail", run_id, lease) as conn:
            write, delivery = failed(run_id, self._head(conn, run_id), data, expected_cursor, thread_id)
            self._write(conn, write)
        return delivery

    # -- reading -----------------------------------------------------------------

    def cursor(self, run_id: str) -> Cursor:
        """The position in root Run ``run_id``'s stream of the last source item whose events are recorded
        (its sequence, for a Run without child Runs); None if none is. Raises ``DamagedStoreError`` when
        the Run's row is damaged or disagrees with its events."""
        head = self._read_head(run_id)
        return None if head is None or head.cursor < 0 else head.cursor

    def last_event_id(self, run_id: str) -> int:
        """The last event number assigned in the Run (the number of events recorded); 0 if none.
        Raises as ``cursor`` does."""
        head = self._read_head(run_id)
        return 0 if head is None else head.last_event_id

    def finished(self, run_id: str) -> bool:
        """Whether the events of the Run's terminal item are recorded. Raises as ``cursor`` does."""
        head = self._read_head(run_id)
        return head is not None and head.finished

    def replay(self, run_id: str, *, after: str | int | None = None) -> tuple[Delivery, ...]:
        """Every recorded event of the Run after the id ``after``, in id order.

        ``after`` is a ``Last-Event-ID`` value or the log's own number (see
        ``parse_last_event_id``); None, blank or 0 means from the first
        event. Returns what is recorded now. Raises ``ForeignEventIdError``
        for an id that is not one of this Run's, ``UnknownEventIdError`` for
        a number beyond the last one assigned (both ValueErrors), and
        ``DamagedStoreError`` when a row of the Run is damaged or missing.
        """
        start = parse_last_event_id(after, run_id=run_id)
        return self._read(run_id, start, after, None).deliveries

    def page(self, run_id: str, *, after: int, limit: int = _PAGE) -> Page:
        """At most ``limit`` recorded events of the Run after event number ``after`` (the log's own
        number, 0 for the first), in id order, read in one snapshot with the Run's last event id and
        whether it has finished: a reader pages through a long Run without holding it in memory.

        Raises ``UnknownEventIdError`` for an ``after`` beyond the last id assigned, ValueError for a
        negative ``after`` or a ``limit`` below 1, ``DamagedStoreError`` as ``replay`` does."""
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise ValueError(f"after is an event number >= 0, not {after!r}")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, not {limit!r}")
        return self._read(run_id, after, after, limit)

    def follow(self, run_id: str, *, after: str | int | None = None, poll_interval: float | None = None,
               ) -> AsyncIterator[Delivery]:
        """Every event of the Run after the id ``after``, following new records.

        Returns an async iterator: first what is recorded, then each new
        delivery, ending after the Run's terminal event. Once caught up, a
        SQLite log polls every ``poll_interval`` seconds (the log's default
        if None); a PostgreSQL log is woken by NOTIFY from any process (its
        ``recheck`` is a safety re-read) and accepts ``poll_interval`` for
        the same signature without using it. The Run need not have started
        yet. An ``after`` that is not an id of this Run raises
        ``ForeignEventIdError`` from this call, before anything is read; a
        number beyond the last one assigned raises ``UnknownEventIdError``
        from the first iteration, before anything is yielded; a damaged or
        missing row raises ``DamagedStoreError`` before it would be yielded.
        """
        start = parse_last_event_id(after, run_id=run_id)
        return self._follow(run_id, start, after, self._interval(poll_interval))

    def sse(self, run_id: str, *, last_event_id: str | int | None = None, poll_interval: float | None = None,
            ) -> AsyncIterator[str]:
        """Server-Sent Events frames for a client that last saw ``last_event_id``.

        Exactly ``follow`` with each delivery rendered as its SSE frame (an
        ``id:`` line with its ``sse_id``, then the ``data:`` line), so the
        browser sends the right ``Last-Event-ID`` when it reconnects. Raises
        as ``follow`` does: a foreign or malformed ``last_event_id`` from this
        call, so that a Host can answer with an error status before it starts
        a stream.
        """
        deliveries = self.follow(run_id, after=last_event_id, poll_interval=poll_interval)
        return _sse_frames(deliveries)

    # -- internals -----------------------------------------------------------------

    def _read(self, run_id: str, after: int, asked: str | int | None, limit: int | None) -> Page:
        # The events after ``after`` (at most ``limit``), in one snapshot with the Run's row; an ``after``
        # beyond the last id is reported as ``asked``.
        sql, args = (self._EVENTS_AFTER, (run_id, after)) if limit is None else \
            (self._EVENTS_AFTER + self._LIMIT, (run_id, after, limit))
        with self._db.read(self._TABLE, f"the events of run {run_id!r} after {after}") as conn:
            head = self._head(conn, run_id)
            last = 0 if head is None else head.last_event_id
            if after > last:
                raise UnknownEventIdError(run_id=run_id, event_id=asked if asked is not None else after,
                                          last_event_id=last)
            rows = conn.execute(sql, args).fetchall()
        out = []
        due = after + 1
        for event_id, position, kind, data in self._events(run_id, rows):
            if event_id != due:
                raise self._missing(run_id, due, f"missing (the next event stored is {event_id})")
            out.append(Delivery(run_id, event_id, position, kind, data))
            due += 1
        if (limit is None or len(rows) < limit) and due <= last:
            raise self._missing(run_id, due, f"missing: the run's last event id is {last}")
        return Page(tuple(out), last, head is not None and head.finished)

    def _missing(self, run_id: str, event_id: int, reason: str) -> DamagedStoreError:
        return DamagedStoreError(reason, path=self.path, table="harness_agui_deliveries",
                                 row=f"run_id={run_id!r:.80}, event_id={event_id}")

    def _page(self, run_id: str, after: int, asked: str | int | None, check: bool,
              ) -> tuple[tuple[Delivery, ...], bool, int]:
        # A follower's next page after event id ``after``: its deliveries, whether the Run has finished, and
        # its last event id. With ``check``, an unknown id is reported as the one the follower ``asked`` for
        # (its Last-Event-ID), naming the Run's last event id.
        try:
            page = self.page(run_id, after=after)
        except UnknownEventIdError:
            if not check:
                raise
            raise UnknownEventIdError(run_id=run_id, event_id=asked if asked is not None else after,
                                      last_event_id=self.last_event_id(run_id)) from None
        return page.deliveries, page.finished, page.last_event_id

    async def _follow(self, run_id: str, after: int, asked: str | int | None, interval: float,
                      ) -> AsyncIterator[Delivery]:
        check = True
        async with self._changes(run_id) as wait:
            while True:
                deliveries, finished, last_id = await asyncio.to_thread(self._page, run_id, after, asked, check)
                check = False
                for delivery in deliveries:
                    yield delivery
                    after = delivery.event_id
                if finished and after >= last_id:
                    return
                if not deliveries:
                    await wait(interval)

    # What each backend says (see the class comment).
    _head: Callable[[Any, str], _Head | None]
    _read_head: Callable[[str], _Head | None]
    _child: Callable[[Any, str, HarnessStreamEvent], HistoryCursor | None]
    _events: Callable[[str, list[Any]], Iterable[tuple[int, int, str, str]]]
    _writing: Callable[[str, str, Any], AbstractContextManager[Any]]
    _write: Callable[[Any, StreamWrite], None]
    _interval: Callable[[float | None], float]
    _changes: Callable[[str], AbstractAsyncContextManager[Callable[[float], Awaitable[Any]]]]


async def _sse_frames(deliveries: AsyncIterator[Delivery]) -> AsyncIterator[str]:
    async for delivery in deliveries:
        yield delivery.sse()


class SqliteDeliveryLog(_DeliveryLog):
    """Durable AG-UI event ids per Run, and replay after a ``Last-Event-ID``.

    ``path`` is the database file (created if missing, WAL mode; it may be
    the journal's file). ``poll_interval`` is how long ``follow`` sleeps, in
    seconds, when it has caught up; ``synchronous``, ``timeout`` and
    ``read_only`` are as for ``SqliteSourceJournal`` (read-only: ``record``
    raises ``ReadOnlyStoreError``, every read works). Safe to use from
    several threads and tasks, and from several processes at once. Raises
    ValueError for an in-memory path or an unknown ``synchronous``, and the
    journal's errors for a file that cannot be opened.

    Every read checks what it uses (each row's types and checksum, and that
    the Run's ids run from 1 to its last id with none missing) and raises
    ``DamagedStoreError`` naming the table and the row instead of serving a
    damaged log.
    """

    _EVENTS_AFTER = f"SELECT {EVENTS.select} FROM {EVENTS.name} WHERE run_id = ? AND event_id > ? ORDER BY event_id"
    _LIMIT = " LIMIT ?"
    _TABLE = EVENTS

    def __init__(self, path: str | os.PathLike[str], *, poll_interval: float = 0.05, synchronous: str = "FULL",
                 timeout: float = 30.0, read_only: bool = False) -> None:
        self._poll_interval = poll_interval_seconds(poll_interval)
        self._db = Database(path, synchronous=synchronous, timeout=timeout, tables=(RUNS, CHILDREN, EVENTS),
                            read_only=read_only)

    # -- writing -----------------------------------------------------------------

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent | EncodedEvent], *,
               root_run_id: str | None = None,
               expected_cursor: Cursor | _Unchecked = _Unchecked.UNCHECKED) -> tuple[Delivery, ...]:
        """Assign ids to the events one source item produced and store them.

        The item belongs to the stream of root Run ``root_run_id`` (left
        out: the item's own Run; an item of a child Run must name its root).
        ``events`` are AG-UI events, or the ``EncodedEvent``s of
        ``observer.observe_encoded(item)`` (stored as they are, with no event
        built or dumped). Writes, in one transaction, the events (in order, with ids following
        the root Run's last id) and the delivery cursor, set to the item's
        position in the stream (the item's sequence, for a Run without child
        Runs); an empty ``events`` only advances the cursor.
        ``expected_cursor``, when given, is the delivery cursor the caller
        last saw (None: nothing recorded yet): a projector passes it so that
        another projector's records are noticed. Returns the new deliveries.

        Raises TypeError for a value that is not a source item or an AG-UI
        event; ``ProjectorConflictError`` when the stored cursor is not
        ``expected_cursor`` (another projector recorded since); and the
        ``HistoryError`` of ``core.history.advance_stream`` when the item is
        not the stream's next one, the class every reader raises for the
        fault (the journals included): ``SequenceOrderError`` (already
        recorded), ``SequenceGapError`` (skipped ahead, or a first record
        that is not sequence 0), ``AfterTerminalError`` (after the root's
        terminal item, or after ``fail``), ``ForeignRunError`` (another
        Thread, or a child Run of another stream). ``ReadOnlyStoreError`` on
        a read-only log, ``DamagedStoreError`` when the Run's stored rows are
        damaged, sqlite3 errors for storage failures. On any error nothing
        is written. Recording an item of a child Run reads and writes that
        child's row only: its cost does not grow with the number of child
        Runs in the stream.
        """
        checked = expected_cursor is not _Unchecked.UNCHECKED
        return self._record(item, events, expected_cursor, checked, root_run_id)

    # -- a Run that ends without its terminal item (used by harness_agui.serve) ----------
    # A Run whose projection fails (an item the observer refuses, a processor
    # that raises) or whose Harness goes away never records its terminal
    # item, so its followers would wait for ever. ``fail`` records one
    # RUN_ERROR as the Run's last event and marks the Run finished, in one
    # transaction guarded by ``expected_cursor`` like ``record``; afterwards
    # ``record`` refuses every item of the Run (its stream has ended) and
    # ``follow`` / ``sse`` end after the RUN_ERROR. The journal is untouched.

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Delivery:
        """Record ``event`` as the last event of root Run ``run_id`` and end the Run.

        ``expected_cursor`` is the delivery cursor the caller last saw (None:
        nothing recorded yet), checked as ``record`` checks it; the cursor
        itself does not move (``cursor()`` stays None when nothing was
        recorded: -1 is stored), and the RUN_ERROR's row carries that cursor
        as its source position.
        ``thread_id`` is needed only when nothing of the Run was recorded yet.
        Returns the new delivery.

        Raises TypeError when ``event`` is not a ``RunErrorEvent``;
        ``ProjectorConflictError`` when the stored cursor is not
        ``expected_cursor``; ``AfterTerminalError`` when the Run has already
        finished (its terminal events, or an earlier failure, are recorded);
        ValueError when nothing is recorded and ``thread_id`` is missing;
        ``ReadOnlyStoreError``, ``DamagedStoreError`` and sqlite3 errors as
        ``record``. On any error nothing is written.
        """
        return self._fail(run_id, event, expected_cursor, thread_id)

    # -- what the SQLite log says for itself (see _DeliveryLog) ---------------------------

    def _writing(self, operation: str, run_id: str, lease: Any) -> AbstractContextManager[Any]:
        return self._db.write(operation, EVENTS)

    def _write(self, conn: Any, write: StreamWrite) -> None:
        write_records(self, conn, [write], verify=False)

    def _interval(self, poll_interval: float | None) -> float:
        return self._poll_interval if poll_interval is None else poll_interval_seconds(poll_interval)

    @contextlib.asynccontextmanager
    async def _changes(self, run_id: str) -> AsyncIterator[Callable[[float], Awaitable[Any]]]:
        yield asyncio.sleep  # SQLite has no notification: a follower polls

    def _events(self, run_id: str, rows: list[Any]) -> Iterator[tuple[int, int, str, str]]:
        path = self._db.path
        for row in rows:
            run, event_id, position, kind, data = EVENTS.checked(path, row)
            if run != run_id:
                raise EVENTS.damaged(path, None, f"the run's index gave a row of run {run!r:.80}", run_id=run_id,
                                     event_id=event_id)
            yield event_id, position, kind, data
    def _head(self, conn: Any, run_id: str) -> _Head | None:
        path = self._db.path
        row = conn.execute(f"SELECT {RUNS.select} FROM {RUNS.name} WHERE run_id = ?", (run_id,)).fetchone()
        top = conn.execute(f"SELECT MAX(event_id) FROM {EVENTS.name} WHERE run_id = ?", (run_id,)).fetchone()[0]
        if row is None:
            if top is not None:
                raise RUNS.damaged(path, None, f"missing, while {EVENTS.name} holds events of the run "
                                               f"(up to id {top!r:.40})", run_id=run_id)
            return None
        run, thread_id, cursor, last, finished, last_sequence = RUNS.checked(path, row)
        if run != run_id:
            raise RUNS.damaged(path, None, f"the index gave the row of run {run!r:.80}", row[0], run_id=run_id)
        if last < 0:
            raise RUNS.damaged(path, None, f"column last_event_id holds {last}", run_id=run_id)
        if top != (last or None):
            if top is not None and type(top) is not int:
                raise EVENTS.damaged(path, None, "column event_id does not hold an integer", run_id=run_id,
                                     event_id=top)
            if top is not None and top > last:
                raise EVENTS.damaged(path, None, f"beyond the run's last event id {last}", run_id=run_id,
                                     event_id=top)
            raise EVENTS.damaged(path, None, f"missing: the run's last event id is {last}", run_id=run_id,
                                 event_id=(top or 0) + 1)
        return _Head(thread_id, cursor, last, bool(finished), last_sequence)

    def _child(self, conn: Any, run_id: str, item: HarnessStreamEvent) -> HistoryCursor | None:
        # The stored cursor of the child Run of ``item`` (``child_cursor``), its row checked.
        row = conn.execute(f"SELECT {CHILDREN.select} FROM {CHILDREN.name} WHERE run_id = ?",
                           (item.run_id,)).fetchone()
        if row is None:
            return None
        child, *stored = CHILDREN.checked(self._db.path, row)
        if child != item.run_id:
            raise CHILDREN.damaged(self._db.path, None, f"the index gave the row of run {child!r:.80}", row[0],
                                   run_id=item.run_id)
        return child_cursor(run_id, item, tuple(stored))

    def _read_head(self, run_id: str) -> _Head | None:
        with self._db.read(RUNS, f"the delivery row of run {run_id!r}") as conn:
            return self._head(conn, run_id)



def write_records(log: SqliteDeliveryLog, conn: Any, writes: Sequence[StreamWrite], *, verify: bool) -> None:
    """Record supervisors' events (``host.batch``) inside the caller's write transaction: the event rows
    with their ids, each Run's row where it holds what its driver expects (else ProjectorConflictError,
    or an IntegrityError for a row another writer created), the child Runs' rows; all writes' rows in one
    statement per table. With ``verify`` each Run's row is read first: a write already there is skipped."""
    events: list[tuple[Any, ...]] = []
    new: list[tuple[Any, ...]] = []
    moved: list[tuple[Any, ...]] = []
    children: list[tuple[Any, ...]] = []
    for write in writes:
        if not write.records or (verify and _already_recorded(log, conn, write)):
            continue
        root = write.root_run_id
        events += [EVENTS.sealed((root, e.event_id, e.position, e.type, e.data)) for e in write.events]
        values = (root, write.thread_id, write.cursor, write.last_event_id, int(write.finished),
                  write.root_last_sequence)
        if write.delivered is None:
            new.append(RUNS.sealed(values))
        else:
            moved.append((*values[1:], checksum(values), root, *write.delivered))
        children += [CHILDREN.sealed((c.run_id, root, c.thread_id, c.last_sequence, int(c.terminal)))
                     for c in write.children]
    if events:
        conn.executemany(EVENTS.insert, events)
    if new:
        conn.executemany(RUNS.insert, new)
    if moved:
        changed = conn.executemany(
            f"UPDATE {RUNS.name} SET thread_id = ?, source_cursor = ?, last_event_id = ?, finished = ?, "
            "last_sequence = ?, crc = ? WHERE run_id = ? AND source_cursor = ? AND last_event_id = ?", moved).rowcount
        if changed != len(moved):
            raise ProjectorConflictError(run_id=moved[0][6], cursor=None, found=None, reason=(
                "another projector recorded events for a run of this batch since its driver read it"))
    if children:
        conn.executemany(CHILDREN_UPSERT, children)


def _already_recorded(log: SqliteDeliveryLog, conn: Any, write: StreamWrite) -> bool:
    head = log._head(conn, write.root_run_id)
    return recorded_already(write, None if head is None else (head.cursor, head.last_event_id, head.finished),
                            lambda: conn.execute(f"SELECT data FROM {EVENTS.name} WHERE run_id = ? AND event_id = ?",
                                                 (write.root_run_id, write.last_event_id)).fetchone())


def recorded_already(write: StreamWrite, found: tuple[int, int, bool] | None, last: Callable[[], Any]) -> bool:
    """Whether the events of ``write`` (a retry's) are recorded already, given the Run's stored (cursor, last
    event id, finished), None for no row, and ``last()``, the stored row ``(data,)`` of the write's last
    event: False when they are due, ProjectorConflictError when another writer's are there. Shared by the
    delivery logs of both backends."""
    if (None if found is None else found[:2]) == write.delivered:
        return False
    if found == (write.cursor, write.last_event_id, write.finished) and (
            not write.events or last() == (write.events[-1].data,)):
        return True  # committed before the connection was lost, or by the batch's first attempt
    expected = None if write.delivered is None else write.delivered[0]
    raise ProjectorConflictError(run_id=write.root_run_id, cursor=expected, found=None if found is None else found[0])


# -- the argument and cursor rules of record() and fail(), shared by the delivery logs of both backends --

def record_rows(item: Any, events: Sequence[BaseEvent | EncodedEvent], expected_cursor: Any, checked: bool,
                root_run_id: str | None) -> tuple[str, list[tuple[str, str]]]:
    """``record()``'s arguments, checked: the root run id of the item's stream and the ``(event type,
    JSON)`` row of each event (an EncodedEvent as it is). ``checked``: ``expected_cursor`` was given."""
    if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
        raise TypeError(f"record() takes a Harness source item, not {type(item).__name__}")
    if checked and expected_cursor is not None and (
            not isinstance(expected_cursor, int) or isinstance(expected_cursor, bool)):
        raise TypeError(f"expected_cursor is an int position or None, not {type(expected_cursor).__name__}")
    if root_run_id is not None and (not isinstance(root_run_id, str) or not root_run_id.strip()):
        raise ValueError(f"root_run_id must be a non-blank str or None, not {root_run_id!r}")
    rows: list[tuple[str, str]] = []
    for e in events:
        if type(e) is EncodedEvent:
            rows.append(e)
        elif isinstance(e, BaseEvent):
            rows.append((e.type.value if isinstance(e.type, EventType) else str(e.type), agui_to_json(e)))
        else:
            raise TypeError(f"record() takes AG-UI events, not {type(e).__name__}")
    return (item.run_id if root_run_id is None else root_run_id), rows


def expect_cursor(run_id: str, head: Any, expected_cursor: Any, checked: bool = True) -> int | None:
    """The delivery cursor stored in ``head`` (None: nothing recorded, or no head); when ``checked``,
    ProjectorConflictError unless it is ``expected_cursor``."""
    found = None if head is None or head.cursor < 0 else head.cursor
    if checked and expected_cursor != found:
        raise ProjectorConflictError(run_id=run_id, cursor=expected_cursor, found=found)
    return found


def failure_json(event: Any) -> str:
    """The JSON of the RUN_ERROR ``fail()`` records; TypeError for anything else."""
    if not isinstance(event, RunErrorEvent):
        raise TypeError(f"fail() takes a RunErrorEvent, not {type(event).__name__}")
    return agui_to_json(event)


def check_fail(run_id: str, head: Any, expected_cursor: Any, thread_id: str | None) -> None:
    """``fail()``'s rules against the Run's stored head: the expected cursor; a ``thread_id`` when
    nothing is recorded yet; not after the Run finished."""
    expect_cursor(run_id, head, expected_cursor)
    if head is None:
        if not isinstance(thread_id, str) or not thread_id.strip():
            raise ValueError(f"run {run_id!r} has no delivery yet: fail() needs its thread_id")
    elif head.finished:
        raise AfterTerminalError("cannot fail: the run has already finished (its terminal events, or an earlier "
                                 "failure, are recorded)", run_id=run_id, sequence=None)


def child_cursor(run_id: str, item: HarnessStreamEvent, row: tuple[Any, ...] | None) -> HistoryCursor | None:
    """The stored cursor of ``item``'s child Run in the stream of root Run ``run_id``, from its row (its
    root, Thread, last sequence and whether it ended; None: none recorded); ForeignRunError for a child
    Run of another stream."""
    if row is None:
        return None
    root, thread_id, last, terminal = row
    if root != run_id:
        raise ForeignRunError(f"an item of run {item.run_id!r}, a child Run in the stream of run {root!r}, "
                              f"recorded in the stream of run {run_id!r}", run_id=run_id, sequence=item.sequence,
                              found_run_id=item.run_id, found_thread_id=item.thread_id)
    return HistoryCursor(item.run_id, thread_id, last + 1, bool(terminal))


def recorded(run_id: str, head: _Head | None, child: HistoryCursor | None, item: HarnessStreamEvent,
             rows: Sequence[tuple[str, str]]) -> tuple[StreamWrite, tuple[Delivery, ...]]:
    """What ``record()`` writes for ``item``'s events (``rows``: ``record_rows``) in the stream of root Run
    ``run_id`` after its stored ``head`` (None: nothing recorded) and, for a child Run's item, that Run's
    stored cursor (``child``): the write of one item, and its deliveries. Raises the ``HistoryError`` of
    ``advance_stream`` when the item is not the stream's next one. Shared by the logs of both backends."""
    if head is None:
        last_id, cursor, delivered = 0, StreamCursor.of(run_id), None
    else:
        last_id, cursor, delivered = head.last_event_id, head.stream(run_id, child), (head.cursor, head.last_event_id)
    after = advance_stream(cursor, item)
    position = after.next_position - 1
    out = tuple(Delivery(run_id, last_id + i, position, kind, data) for i, (kind, data) in enumerate(rows, 1))
    kid = after.children.get(item.run_id)
    children = () if kid is None else (Head(item.run_id, item.thread_id, kid.next_sequence - 1, kid.finished),)
    root = after.root
    write = StreamWrite(root_run_id=run_id, thread_id=root.thread_id or item.thread_id, records=True,
                        delivered=delivered, events=tuple(Recorded(d.event_id, position, d.event_type, d.data)
                                                          for d in out),
                        cursor=position, last_event_id=last_id + len(out), finished=after.finished,
                        root_last_sequence=root.next_sequence - 1, children=children)
    return write, out


def failed(run_id: str, head: _Head | None, data: str, expected_cursor: Any, thread_id: str | None,
           ) -> tuple[StreamWrite, Delivery]:
    """What ``fail()`` writes for the RUN_ERROR ``data`` (``failure_json``) of root Run ``run_id``, after
    ``check_fail``: the one event, after the stored cursor (which stays), and the Run finished (so that
    ``record()`` refuses whatever follows). Shared by the logs of both backends."""
    check_fail(run_id, head, expected_cursor, thread_id)
    if head is None:
        assert thread_id is not None  # check_fail saw to it
        delivered, last_id, cursor, thread, last_sequence = None, 0, -1, thread_id, -1
    else:
        delivered = (head.cursor, head.last_event_id)
        last_id, cursor, thread, last_sequence = head.last_event_id, head.cursor, head.thread_id, head.last_sequence
    delivery = Delivery(run_id, last_id + 1, cursor, EventType.RUN_ERROR.value, data)
    write = StreamWrite(root_run_id=run_id, thread_id=thread, records=True, delivered=delivered,
                        events=(Recorded(delivery.event_id, cursor, delivery.event_type, data),), cursor=cursor,
                        last_event_id=delivery.event_id, finished=True, root_last_sequence=last_sequence)
    return write, delivery
