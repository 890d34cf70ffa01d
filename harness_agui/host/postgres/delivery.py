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

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any

from ag_ui.core import BaseEvent, RunErrorEvent

from ...core.encode import EncodedEvent
from ...core.history import HistoryCursor
from ...core.source import HarnessStreamEvent
from ..checks import Cursor
from ..delivery import Delivery, _DeliveryLog, _Head, child_cursor
from ..writes import StreamWrite
from ._pg import DELIVERY_CHANNEL, LOCK_DELIVERY, Database, unused_poll_interval
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
_UNCHECKED: Any = object()


class PostgresDeliveryLog(_DeliveryLog):
    """Durable AG-UI event ids per Run, and replay after a ``Last-Event-ID``, in PostgreSQL.

    The contract of ``SqliteDeliveryLog`` (the same ``Delivery`` values and
    SSE ids, the same errors), shared by every worker that opens the same
    database: ``url``, ``read_only``, ``pool_size``, ``timeout`` and
    ``recheck`` are as for ``PostgresSourceJournal``. Followers (``follow``,
    ``sse``) are woken by PostgreSQL's NOTIFY when any process records
    events of their Run. ``fenced(lease)`` gives a view of the log whose
    ``record`` also checks a worker's lease (see ``PostgresLeases``).
    """

    _EVENTS_AFTER = (f"SELECT event_id, source_position, event_type, data FROM {EVENTS} WHERE run_id = %s "
                     "AND event_id > %s ORDER BY event_id")
    _LIMIT = " LIMIT %s"
    _TABLE = None

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
        return self._record(item, events, expected_cursor, expected_cursor is not _UNCHECKED, root_run_id)

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Delivery:
        """Record ``event`` as the last event of root Run ``run_id`` and end the Run; the contract of
        ``SqliteDeliveryLog.fail`` (for a Run whose projection failed or whose Harness went away: its
        followers end after the RUN_ERROR, and ``record`` refuses every later item of the Run).

        Raises TypeError for an event that is not a ``RunErrorEvent``, ``ProjectorConflictError`` when
        the stored cursor is not ``expected_cursor``, ``AfterTerminalError`` when the Run has already
        finished, ValueError when nothing is recorded and ``thread_id`` is missing, and as ``record``.
        """
        return self._fail(run_id, event, expected_cursor, thread_id)

    # -- what the PostgreSQL log says for itself (see delivery._DeliveryLog) ---------------

    @contextmanager
    def _writing(self, operation: str, run_id: str, lease: Lease | None) -> Iterator[Any]:
        with self._db.write(operation, (LOCK_DELIVERY, run_id)) as conn:
            if lease is not None:
                check_leases(conn, {run_id: lease})
            yield conn

    def _write(self, conn: Any, write: StreamWrite) -> None:
        write_streams(conn, [write], verify=False)

    def _interval(self, poll_interval: float | None) -> float:
        return unused_poll_interval(poll_interval, self._db.recheck)

    def _changes(self, run_id: str) -> AbstractAsyncContextManager[Callable[[float], Awaitable[Any]]]:
        return self._db.changes(DELIVERY_CHANNEL, run_id)

    def _events(self, run_id: str, rows: list[Any]) -> list[Any]:
        return rows  # (event id, position, type, data): PostgreSQL types its columns

    def _head(self, conn: Any, run_id: str) -> _Head | None:
        row = conn.execute(f"SELECT thread_id, source_cursor, last_event_id, finished, last_sequence FROM {RUNS} "
                           "WHERE run_id = %s", (run_id,)).fetchone()
        return None if row is None else _Head(*row)

    def _read_head(self, run_id: str) -> _Head | None:
        with self._db.connection() as conn:  # one statement: no transaction needed
            return self._head(conn, run_id)

    def _child(self, conn: Any, run_id: str, item: HarnessStreamEvent) -> HistoryCursor | None:
        return child_cursor(run_id, item, conn.execute(
            f"SELECT root_run_id, thread_id, last_sequence, terminal FROM {CHILDREN} WHERE run_id = %s",
            (item.run_id,)).fetchone())


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
        return self.log._record(item, events, expected_cursor, expected_cursor is not _UNCHECKED, root_run_id,
                                self.lease)

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Delivery:
        """``PostgresDeliveryLog.fail``, fenced by the lease."""
        return self.log._fail(run_id, event, expected_cursor, thread_id, self.lease)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    def __repr__(self) -> str:
        return f"<FencedDeliveryLog {self.log.path!r} {self.lease!r}>"

