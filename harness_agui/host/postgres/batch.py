# Group commit on PostgreSQL (see ``host.batch`` for the design): the
# supervisor's writes of every Run of a process, committed by one writer
# thread on a connection of its own (not the stores' pool, so no write ever
# waits for a connection a reader holds), in one transaction per batch, its
# statements pipelined (one round trip for the batch) and one statement per
# table for all of the batch's rows (``_Rows``).
#
# In the transaction: the leases of the batch's Runs are read ``FOR SHARE``
# (a takeover, which updates the row, waits for this commit; a write whose
# lease is no longer in force fails with ``LeaseLostError``), then the item
# rows, the journal's head rows, the event rows, the delivery rows (updated
# only where they hold the cursor and last id the driver expects) and the
# child rows, and the NOTIFYs that wake followers and workers in other
# processes (delivered on commit). A second writer on a Run collides on a
# primary key or finds the delivery row moved: the batch is rolled back and
# its writes are committed one by one, each after reading the Run's rows
# (``verify``), so that only the write at fault fails.
#
# A connection lost mid-batch (the server restarted, sessions terminated)
# is reopened under ``retry.RECONNECT``, and the batch's writes are then
# committed one by one with ``verify``: a write whose commit went through
# before the connection broke is found already there and not written twice.

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import psycopg
import psycopg_pool

from ..batch import BatchWriter, GroupCommit
from ..errors import ProjectorConflictError
from ..writes import StreamWrite
from ._pg import DELIVERY_CHANNEL, JOURNAL_CHANNEL, STREAMS_CHANNEL, notify_key
from .bindings import PostgresRunBindings
from .delivery import CHILDREN as DELIVERY_CHILDREN
from .delivery import EVENTS, PostgresDeliveryLog
from .delivery import RUNS as DELIVERY_RUNS
from .journal import ITEMS, PostgresSourceJournal
from .journal import RUNS as JOURNAL_RUNS
from .lease import LEASES, LeaseLostError

__all__ = ["PostgresStores", "connection_lost"]


def connection_lost(error: BaseException) -> bool:
    """Whether ``error`` says a connection to the database is gone or cannot be had for now (the
    server restarted, the session was terminated, the pool had none): worth trying again."""
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout,
                              ConnectionError))


class PostgresStores:
    """A ``PostgresSourceJournal`` and a ``PostgresDeliveryLog`` of one database, as the supervisor
    drives them."""

    def __init__(self, journal: PostgresSourceJournal, deliveries: PostgresDeliveryLog) -> None:
        self.journal = journal
        self.deliveries = deliveries
        self._bindings: PostgresRunBindings | None = None

    @property
    def bindings(self) -> PostgresRunBindings:
        """The wire <-> source bindings of the database's Runs (``host.postgres.bindings``)."""
        if self._bindings is None:
            self._bindings = PostgresRunBindings(self.journal.url)
        return self._bindings

    def close(self) -> None:
        """Close what this object opened (the bindings); the journal and the log are the caller's."""
        if self._bindings is not None:
            self._bindings.close()

    def writer(self, policy: GroupCommit | None = None) -> BatchWriter:
        return BatchWriter(_Backend(self.journal.url), policy, name=f"harness-agui writer {self.journal.path}")

    def lost(self, error: BaseException) -> bool:
        return connection_lost(error)

    @contextlib.asynccontextmanager
    async def changes(self, run_id: str) -> AsyncIterator[Callable[[float], Awaitable[Any]]]:
        """A wait for the NOTIFY of a record of ``run_id`` by any process (or the given seconds); the
        block starts once the listening connection listens, so no commit made after it is missed."""
        db = self.deliveries._db
        with db.waiting(DELIVERY_CHANNEL, run_id) as event:
            await db.listening()

            async def wait(seconds: float) -> None:
                await db.wait(event, seconds)

            yield wait


class _Backend:
    def __init__(self, url: str) -> None:
        self.url = url

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True)

    def lost(self, error: BaseException) -> bool:
        return connection_lost(error)

    def close(self, session: psycopg.Connection[Any]) -> None:
        session.close()

    def commit(self, session: psycopg.Connection[Any], writes: Sequence[StreamWrite], *, verify: bool) -> None:
        conn = session
        with conn.transaction():
            _check_leases(conn, writes)
            if verify:
                writes = [w for w in writes if not _already_there(conn, w)]
            with conn.pipeline() as pipeline, conn.cursor() as cur, conn.cursor() as updates:
                items = [(w.root_run_id, i.position, i.run_id, i.sequence, i.thread_id, i.terminal, i.wire_line())
                         for w in writes for i in w.items]
                if items:
                    _ITEMS.run(cur, items)
                heads = [(h.run_id, w.root_run_id, h.thread_id, h.last_sequence, h.terminal, h.last_position)
                         for w in writes for h in w.heads]
                if heads:
                    _HEADS.run(cur, heads)
                events = [(w.root_run_id, e.event_id, e.position, e.type, e.data) for w in writes for e in w.events]
                if events:
                    _EVENTS.run(cur, events)
                new = [(w.root_run_id, w.thread_id, w.cursor, w.last_event_id, w.finished, w.root_last_sequence)
                       for w in writes if w.records and w.delivered is None]
                if new:
                    _DELIVERIES.run(cur, new)
                moved = [(w.cursor, w.last_event_id, w.finished, w.root_last_sequence, w.root_run_id, *w.delivered)
                         for w in writes if w.records and w.delivered is not None]
                if moved:
                    _MOVES.run(updates, moved)  # a cursor of its own: its rowcount is the rows moved
                children = [(c.run_id, w.root_run_id, c.thread_id, c.last_sequence, c.terminal)
                            for w in writes for c in w.children]
                if children:
                    _CHILDREN.run(cur, children)
                # A new stream is work for the workers unless its driver holds its lease: no worker may take
                # it then, and one that outlives the lease is found by the workers' periodic scan.
                notes = sorted({(JOURNAL_CHANNEL, notify_key(w.root_run_id)) for w in writes if w.items}
                               | {(STREAMS_CHANNEL, notify_key(w.root_run_id)) for w in writes
                                  if w.items and w.journal_last is None and w.lease is None}
                               | {(DELIVERY_CHANNEL, notify_key(w.root_run_id)) for w in writes if w.records})
                if notes:
                    cur.execute("SELECT pg_notify(c, k) FROM unnest(%b::text[], %b::text[]) AS n(c, k)",
                                ([c for c, _ in notes], [k for _, k in notes]))
                pipeline.sync()
                if moved and updates.rowcount != len(moved):
                    raise ProjectorConflictError(run_id=writes[0].root_run_id, cursor=None, found=None, reason=(
                        "another projector recorded events for a run of this batch since its driver read it"))


# From this many rows for one table, a batch writes them with one statement (below); under it, with one
# statement per row. The arrays go in PostgreSQL's binary format (``%b``): psycopg writes a text-format array
# in Python, quoting and escaping each element (about 60 us a journal row, whose JSON line is full of quotes,
# against about 4 us in binary). In binary, on batches of one item of each of N Runs, the arrays cost the
# writer 29 us a write against 62 per row at N = 32, and PostgreSQL 35 us against 60; at N = 2 they cost
# more than they save, and 6 to 8 is where the two meet.
_ARRAYS_FROM = 8


class _Rows:
    """The rows of a batch for one table in one statement: the columns as arrays, unnested in the batch's
    order (the journal's runs take their ``ord`` in that order). A batch of fewer than ``_ARRAYS_FROM`` rows,
    or one naming a key twice (``key``: the column a statement must not touch twice, e.g. an upsert's),
    keeps a statement per row, so that each sees the one before."""

    def __init__(self, one: str, all_rows: str, key: int | None = None) -> None:
        self.one = one
        self.all_rows = all_rows
        self.key = key

    @classmethod
    def insert(cls, table: str, columns: str, *, update: str = "") -> _Rows:
        """The INSERTs of ``columns`` ("name:type ..."); with ``update`` ("name ..."), an upsert on the first
        column that sets those."""
        pairs = [column.split(":") for column in columns.split()]
        names = ", ".join(name for name, _ in pairs)
        arrays = ", ".join(f"%b::{kind}[]" for _, kind in pairs)
        upsert = "" if not update else (f"ON CONFLICT ({pairs[0][0]}) DO UPDATE SET "
                                        + ", ".join(f"{name} = excluded.{name}" for name in update.split()))
        return cls(f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(pairs))}) {upsert}",
                   f"INSERT INTO {table} ({names}) SELECT {names} FROM unnest({arrays}) WITH ORDINALITY "
                   f"AS v({names}, n) ORDER BY n {upsert}", key=0 if upsert else None)

    def run(self, cur: psycopg.Cursor[Any], rows: list[tuple[Any, ...]]) -> None:
        if len(rows) >= _ARRAYS_FROM and (self.key is None or len({row[self.key] for row in rows}) == len(rows)):
            cur.execute(self.all_rows, [list(column) for column in zip(*rows, strict=True)])
        else:
            cur.executemany(self.one, rows)


_ITEMS = _Rows.insert(ITEMS, "root_run_id:text position:bigint run_id:text sequence:bigint thread_id:text "
                             "terminal:boolean line:text")
_HEADS = _Rows.insert(JOURNAL_RUNS, "run_id:text root_run_id:text thread_id:text last_sequence:bigint "
                                    "terminal:boolean last_position:bigint",
                      update="last_sequence terminal last_position")
_EVENTS = _Rows.insert(EVENTS, "run_id:text event_id:bigint source_position:bigint event_type:text data:text")
_DELIVERIES = _Rows.insert(DELIVERY_RUNS, "run_id:text thread_id:text source_cursor:bigint last_event_id:bigint "
                                          "finished:boolean last_sequence:bigint")
_CHILDREN = _Rows.insert(DELIVERY_CHILDREN, "run_id:text root_run_id:text thread_id:text last_sequence:bigint "
                                            "terminal:boolean", update="last_sequence terminal")
# A delivery row moves only where it holds the cursor and last id its driver expects (rows: new cursor, last
# id, finished, last sequence, run id, expected cursor, expected last id).
_MOVES = _Rows(
    f"UPDATE {DELIVERY_RUNS} SET source_cursor = %s, last_event_id = %s, finished = %s, last_sequence = %s "
    "WHERE run_id = %s AND source_cursor = %s AND last_event_id = %s",
    f"UPDATE {DELIVERY_RUNS} AS d SET source_cursor = v.c, last_event_id = v.l, finished = v.f, last_sequence = v.s "
    "FROM unnest(%b::bigint[], %b::bigint[], %b::boolean[], %b::bigint[], %b::text[], %b::bigint[], %b::bigint[]) "
    "AS v(c, l, f, s, r, oc, ol) WHERE d.run_id = v.r AND d.source_cursor = v.oc AND d.last_event_id = v.ol",
    key=4)


def _check_leases(conn: psycopg.Connection[Any], writes: Sequence[StreamWrite]) -> None:
    leased = {w.root_run_id: w.lease for w in writes if w.lease is not None}
    if not leased:
        return
    rows = conn.execute(f"SELECT run_id, holder, token, expires_at >= clock_timestamp() FROM {LEASES} "
                        "WHERE run_id = ANY(%s) FOR SHARE", (sorted(leased),)).fetchall()
    found = {run_id: (holder, token, alive) for run_id, holder, token, alive in rows}
    for run_id, lease in leased.items():
        row = found.get(run_id)
        if row is None or row[1] != lease.token:
            held = "no lease" if row is None else f"token {row[1]} of worker {row[0]}"
            raise LeaseLostError(f"another worker took the run over (its lease holds {held}, this worker's token "
                                 f"is {lease.token}); nothing was written", run_id=run_id)
        if not row[2]:
            raise LeaseLostError(f"the lease of token {lease.token} expired before this write; nothing was written",
                                 run_id=run_id)


def _already_there(conn: psycopg.Connection[Any], write: StreamWrite) -> bool:
    # Read what the database holds for the Run: True when the write is already committed, False when it
    # is due; ProjectorConflictError when another writer's rows are there instead.
    root = write.root_run_id
    journal_done = True
    if write.items:
        row = conn.execute(f"SELECT last_position FROM {JOURNAL_RUNS} WHERE run_id = %s", (root,)).fetchone()
        found = None if row is None else row[0]
        if found == write.journal_last:
            journal_done = False
        else:
            first, last = write.items[0], write.items[-1]
            lines = dict(conn.execute(f"SELECT position, line FROM {ITEMS} WHERE root_run_id = %s AND position = "
                                      "ANY(%s)", (root, [first.position, last.position])).fetchall())
            if found is None or found < last.position or lines != {first.position: first.wire_line(),
                                                                    last.position: last.wire_line()}:
                raise ProjectorConflictError(run_id=root, cursor=write.journal_last, found=found, reason=(
                    f"another writer appended to the run's stream since this one read it (it expected the stream's "
                    f"last position at {write.journal_last}, found {found})"))
    records_done = True
    if write.records:
        row = conn.execute(f"SELECT source_cursor, last_event_id, finished FROM {DELIVERY_RUNS} WHERE run_id = %s",
                           (root,)).fetchone()
        found_head = None if row is None else (row[0], row[1])
        if found_head == write.delivered:
            records_done = False
        else:
            stored = None if not write.events else conn.execute(
                f"SELECT data FROM {EVENTS} WHERE run_id = %s AND event_id = %s",
                (root, write.last_event_id)).fetchone()
            if row is None or found_head != (write.cursor, write.last_event_id) or row[2] != write.finished \
                    or (write.events and stored != (write.events[-1].data,)):
                expected = None if write.delivered is None else write.delivered[0]
                raise ProjectorConflictError(run_id=root, cursor=expected, found=None if row is None else row[0])
    if journal_done != records_done and write.items and write.records:
        # Both parts commit together: one there and the other not is another writer's doing.
        raise ProjectorConflictError(run_id=root, cursor=None, found=None, reason=(
            "the run's journal and delivery log disagree with this write: another writer is at work"))
    return journal_done and records_done
