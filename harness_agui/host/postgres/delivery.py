# The delivery log in PostgreSQL: the contract of ``SqliteDeliveryLog`` (see
# ``host/delivery.py`` for the protocol that makes a Host crash-safe), for
# Hosts whose workers share one database, plus fencing by lease.
#
#     harness_agui_delivery_runs(run_id, thread_id, source_cursor, last_event_id, finished, last_sequence)
#         one row per root Run: the delivery cursor (the position in the Run's stream of the last item
#         whose events are recorded), the last event id, and the root's own last sequence
#     harness_agui_delivery_children(run_id, root_run_id, thread_id, last_sequence, terminal)
#         one row per child Run whose items were recorded in a root's stream
#     harness_agui_deliveries(run_id, event_id, source_position, event_type, data)
#         primary key (run_id, event_id); run_id is the root Run
#     harness_agui_leases(run_id, holder, token, expires_at): see ``lease.py``
#
# ``record`` holds the Run's advisory lock for its transaction, checks the
# item against the stored cursor with ``core.history.advance_stream`` (each
# Run of the stream in its own order, nothing after the root's terminal
# result), compares ``expected_cursor``, and, when the log was opened through
# ``fenced(lease)``, checks in the same transaction that the lease is still
# the one in force: its row holds the lease's token and has not expired.
# The lease row is read ``FOR SHARE``, so a takeover (which updates that
# row) waits for this commit, and every record committed after a takeover
# carries the new holder's token: a holder paused past its lease (a long GC
# pause, a stopped process, a partition) cannot write when it wakes up.
# ``LeaseLostError`` (a ``ProjectorConflictError``) says so and nothing is
# written. The rule is the SQLite log's (``delivery.recorded``), and what it
# gives is written as a batch of one through the one write path
# (``writes.write_streams``). Each record sends ``NOTIFY
# harness_agui_delivery, <run id>``, delivered on commit, which wakes every
# follower of the Run in every process: ``follow`` / ``sse`` read what is
# recorded, then wait for that notification instead of polling.

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ag_ui.core import BaseEvent, RunErrorEvent

from ...core.encode import EncodedEvent
from ...core.source import HarnessStreamEvent
from .._store import Store
from ..checks import Cursor
from ..delivery import (
    Delivery,
    Page,
    _check_page,
    _Head,
    check_known_id,
    child_cursor,
    expect_cursor,
    failed,
    failure_json,
    follower_page,
    parse_last_event_id,
    record_rows,
    recorded,
    sse_frames,
)
from ..errors import DamagedStoreError
from ._pg import DELIVERY_CHANNEL, LOCK_DELIVERY, Database
from .lease import LEASE_SCHEMA, Lease
from .tables import BINDINGS_SCHEMA, CHILDREN, EVENTS
from .tables import DELIVERY_RUNS as RUNS
from .writes import check_leases, write_streams

__all__ = ["PostgresDeliveryLog", "FencedDeliveryLog"]

SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {RUNS} (
        run_id text PRIMARY KEY, thread_id text NOT NULL, source_cursor bigint NOT NULL,
        last_event_id bigint NOT NULL, finished boolean NOT NULL, last_sequence bigint NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {CHILDREN} (
        run_id text PRIMARY KEY, root_run_id text NOT NULL, thread_id text NOT NULL,
        last_sequence bigint NOT NULL, terminal boolean NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {EVENTS} (
        run_id text NOT NULL, event_id bigint NOT NULL, source_position bigint NOT NULL,
        event_type text NOT NULL, data text NOT NULL, PRIMARY KEY (run_id, event_id))""",
    *LEASE_SCHEMA,
    *BINDINGS_SCHEMA,
)
COLUMNS = {
    RUNS: ("run_id", "thread_id", "source_cursor", "last_event_id", "finished", "last_sequence"),
    CHILDREN: ("run_id", "root_run_id", "thread_id", "last_sequence", "terminal"),
    EVENTS: ("run_id", "event_id", "source_position", "event_type", "data"),
}
_PAGE = 512
_UNCHECKED: Any = object()


class PostgresDeliveryLog(Store):
    """Durable AG-UI event ids per Run, and replay after a ``Last-Event-ID``, in PostgreSQL.

    The contract of ``SqliteDeliveryLog`` (the same ``Delivery`` values and
    SSE ids, the same errors), shared by every worker that opens the same
    database: ``url``, ``read_only``, ``pool_size``, ``timeout`` and
    ``recheck`` are as for ``PostgresSourceJournal``. Followers (``follow``,
    ``sse``) are woken by PostgreSQL's NOTIFY when any process records
    events of their Run. ``fenced(lease)`` gives a view of the log whose
    ``record`` also checks a worker's lease (see ``PostgresLeases``).
    """

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 4, timeout: float = 30.0,
                 recheck: float = 30.0) -> None:
        self._db = Database(url, schema=SCHEMA, tables=COLUMNS, read_only=read_only, min_size=1,
                            max_size=pool_size, timeout=timeout, recheck=recheck)

    @property
    def url(self) -> str:
        """The database's URL (with its password, if it has one: do not log it; ``path`` is for that)."""
        return self._db.url

    def fenced(self, lease: Lease) -> FencedDeliveryLog:
        """This log as the holder of ``lease`` writes it: every ``record`` checks, in its own
        transaction, that the lease is still in force, else raises ``LeaseLostError`` and writes nothing."""
        if not isinstance(lease, Lease):
            raise TypeError(f"fenced() takes a Lease, not {type(lease).__name__}")
        return FencedDeliveryLog(self, lease)

    # -- writing -----------------------------------------------------------------

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent | EncodedEvent], *,
               expected_cursor: Any = _UNCHECKED, root_run_id: str | None = None) -> tuple[Delivery, ...]:
        """Assign ids to the events one source item produced and store them; the contract of
        ``SqliteDeliveryLog.record``. ``events`` are AG-UI events or the ``EncodedEvent``s of
        ``observer.observe_encoded(item)`` (stored as they are).

        The item is the next one of the stream of root Run ``root_run_id``
        (left out: the item's own Run; an item of a child Run must name its
        root); its position in the stream becomes the delivery cursor.
        Raises TypeError, ValueError for a blank ``root_run_id``,
        ``ProjectorConflictError`` when the stored cursor is not
        ``expected_cursor``, the ``HistoryError`` of ``advance_stream`` when
        the item is not the stream's next one (the class every reader
        raises for the fault), ``ReadOnlyStoreError``, psycopg errors;
        nothing is written then.
        """
        return self._record(item, events, expected_cursor, root_run_id, None)

    def _record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent | EncodedEvent], expected_cursor: Any,
                root_run_id: str | None, lease: Lease | None) -> tuple[Delivery, ...]:
        checked = expected_cursor is not _UNCHECKED
        root, rows = record_rows(item, events, expected_cursor, checked, root_run_id)
        with self._db.write("record", (LOCK_DELIVERY, root)) as conn:
            if lease is not None:
                check_leases(conn, {root: lease})
            head = self._head(conn, root)
            expect_cursor(root, head, expected_cursor, checked)
            child = None if head is None or item.run_id == root else child_cursor(root, item, conn.execute(
                f"SELECT root_run_id, thread_id, last_sequence, terminal FROM {CHILDREN} WHERE run_id = %s",
                (item.run_id,)).fetchone())
            write, out = recorded(root, head, child, item, rows)
            write_streams(conn, [write], verify=False)
        return out

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Delivery:
        """Record ``event`` as the last event of root Run ``run_id`` and end the Run; the contract of
        ``SqliteDeliveryLog.fail`` (for a Run whose projection failed or whose Harness went away: its
        followers end after the RUN_ERROR, and ``record`` refuses every later item of the Run).

        Raises TypeError for an event that is not a ``RunErrorEvent``, ``ProjectorConflictError`` when
        the stored cursor is not ``expected_cursor``, ``AfterTerminalError`` when the Run has already
        finished, ValueError when nothing is recorded and ``thread_id`` is missing, and as ``record``.
        """
        return self._fail(run_id, event, expected_cursor, thread_id, None)

    def _fail(self, run_id: str, event: RunErrorEvent, expected_cursor: Cursor, thread_id: str | None,
              lease: Lease | None) -> Delivery:
        data = failure_json(event)
        with self._db.write("fail", (LOCK_DELIVERY, run_id)) as conn:
            if lease is not None:
                check_leases(conn, {run_id: lease})
            write, delivery = failed(run_id, self._head(conn, run_id), data, expected_cursor, thread_id)
            write_streams(conn, [write], verify=False)
        return delivery

    # -- reading -----------------------------------------------------------------

    def cursor(self, run_id: str) -> Cursor:
        """The position in root Run ``run_id``'s stream of the last source item whose events are recorded
        (its sequence, for a Run without child Runs); None if none is."""
        head = self._read_head(run_id)
        return None if head is None or head.cursor < 0 else head.cursor

    def last_event_id(self, run_id: str) -> int:
        """The last event number assigned in the Run (the number of events recorded); 0 if none."""
        head = self._read_head(run_id)
        return 0 if head is None else head.last_event_id

    def finished(self, run_id: str) -> bool:
        """Whether the events of the Run's terminal item are recorded."""
        head = self._read_head(run_id)
        return head is not None and head.finished

    def replay(self, run_id: str, *, after: str | int | None = None) -> tuple[Delivery, ...]:
        """Every recorded event of the Run after the id ``after``, in id order; raises as
        ``SqliteDeliveryLog.replay`` does (``ForeignEventIdError``, ``UnknownEventIdError``)."""
        start = parse_last_event_id(after, run_id=run_id)
        with self._db.read() as conn:
            head = self._head(conn, run_id)
            last = check_known_id(run_id, 0 if head is None else head.last_event_id, start, after)
            rows = conn.execute(f"SELECT event_id, source_position, event_type, data FROM {EVENTS} WHERE run_id = %s "
                                "AND event_id > %s ORDER BY event_id", (run_id, start)).fetchall()
        return tuple(self._deliveries(run_id, start, rows, last, to_the_end=True))

    def page(self, run_id: str, *, after: int, limit: int = _PAGE) -> Page:
        """At most ``limit`` recorded events of the Run after event number ``after``, with the Run's last
        event id and whether it has finished, read in one snapshot; as ``SqliteDeliveryLog.page``."""
        _check_page(after, limit)
        with self._db.read() as conn:
            head = self._head(conn, run_id)
            last = check_known_id(run_id, 0 if head is None else head.last_event_id, after, after)
            rows = conn.execute(f"SELECT event_id, source_position, event_type, data FROM {EVENTS} WHERE run_id = %s "
                                "AND event_id > %s ORDER BY event_id LIMIT %s", (run_id, after, limit)).fetchall()
        deliveries = self._deliveries(run_id, after, rows, last, to_the_end=len(rows) < limit)
        return Page(tuple(deliveries), last, head is not None and head.finished)

    def follow(self, run_id: str, *, after: str | int | None = None, poll_interval: float | None = None,
               ) -> AsyncIterator[Delivery]:
        """Every event of the Run after the id ``after``, following new records, to the Run's terminal event.

        Raises as ``SqliteDeliveryLog.follow`` does: a foreign ``after``
        from this call, an unknown number from the first iteration. Woken
        by NOTIFY from any process (the store's ``recheck`` is a safety
        re-read); ``poll_interval`` is accepted for the SQLite signature
        and not used: nothing polls.
        """
        start = parse_last_event_id(after, run_id=run_id)
        if poll_interval is not None and (isinstance(poll_interval, bool) or not poll_interval > 0):
            raise ValueError(f"poll_interval must be a number of seconds > 0, not {poll_interval!r}")
        return self._follow(run_id, start, after, self._db.recheck)

    def sse(self, run_id: str, *, last_event_id: str | int | None = None, poll_interval: float | None = None,
            ) -> AsyncIterator[str]:
        """Server-Sent Events frames for a client that last saw ``last_event_id``: ``follow``, each
        delivery as its SSE frame. Raises as ``follow`` does."""
        deliveries = self.follow(run_id, after=last_event_id, poll_interval=poll_interval)
        return sse_frames(deliveries)

    # -- internals -----------------------------------------------------------------

    def _head(self, conn: Any, run_id: str) -> _Head | None:
        row = conn.execute(f"SELECT thread_id, source_cursor, last_event_id, finished, last_sequence FROM {RUNS} "
                           "WHERE run_id = %s", (run_id,)).fetchone()
        return None if row is None else _Head(*row)

    def _read_head(self, run_id: str) -> _Head | None:
        with self._db.connection() as conn:  # one statement: no transaction needed
            return self._head(conn, run_id)

    def _deliveries(self, run_id: str, after: int, rows: list[Any], last: int, *, to_the_end: bool,
                    ) -> list[Delivery]:
        out = []
        due = after + 1
        for event_id, position, kind, data in rows:
            if event_id != due:
                raise DamagedStoreError(f"missing (the next event stored is {event_id})", path=self._db.path,
                                        table=EVENTS, row=f"run_id={run_id!r:.80}, event_id={due}")
            out.append(Delivery(run_id, event_id, position, kind, data))
            due += 1
        if to_the_end and due <= last:
            raise DamagedStoreError(f"missing: the run's last event id is {last}", path=self._db.path, table=EVENTS,
                                    row=f"run_id={run_id!r:.80}, event_id={due}")
        return out

    def _page(self, run_id: str, after: int, asked: str | int | None, check: bool,
              ) -> tuple[tuple[Delivery, ...], bool, int]:
        return follower_page(self, run_id, after, asked, check)

    async def _follow(self, run_id: str, after: int, asked: str | int | None, recheck: float,
                      ) -> AsyncIterator[Delivery]:
        check = True
        with self._db.waiting(DELIVERY_CHANNEL, run_id) as woken:
            await self._db.listening()
            while True:
                deliveries, finished, last_id = await asyncio.to_thread(self._page, run_id, after, asked, check)
                check = False
                for delivery in deliveries:
                    yield delivery
                    after = delivery.event_id
                if finished and after >= last_id:
                    return
                if not deliveries:
                    await self._db.wait(woken, recheck)


class FencedDeliveryLog:
    """A ``PostgresDeliveryLog`` as the holder of one lease writes it (``PostgresDeliveryLog.fenced``).

    ``record`` is the log's, plus the lease check in the same transaction:
    ``LeaseLostError`` (a ``ProjectorConflictError``) when another worker
    took the Run over or the lease expired; nothing is written then. Every
    read is the log's own. Pass it to ``project_run`` as its delivery log.
    """

    def __init__(self, log: PostgresDeliveryLog, lease: Lease) -> None:
        self.log = log
        self.lease = lease

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent | EncodedEvent], *,
               expected_cursor: Any = _UNCHECKED, root_run_id: str | None = None) -> tuple[Delivery, ...]:
        """``PostgresDeliveryLog.record``, fenced by the lease (see the class)."""
        return self.log._record(item, events, expected_cursor, root_run_id, self.lease)

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Delivery:
        """``PostgresDeliveryLog.fail``, fenced by the lease."""
        return self.log._fail(run_id, event, expected_cursor, thread_id, self.lease)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    def __repr__(self) -> str:
        return f"<FencedDeliveryLog {self.log.path!r} {self.lease!r}>"

