# The one write path of the PostgreSQL stores: ``write_streams`` writes
# ``StreamWrite``s (``host.writes``) in the caller's transaction, for the
# group-commit writer (``batch``: every Run's writes of a batch) and for the
# stores' one-item methods (``journal.append``, ``delivery.record`` and
# ``fail``: a batch of one, after they checked the item against what the
# database holds, under the Run's advisory lock).
#
# In the transaction: the leases of the writes that carry one are read
# ``FOR SHARE`` (a takeover, which updates the row, waits for this commit; a
# write whose lease is no longer in force fails with ``LeaseLostError``),
# then the item rows, the journal's head rows, the event rows, the delivery
# rows (updated only where they hold the cursor and last id the driver
# expects) and the child rows, and the NOTIFYs that wake followers and
# workers in other processes (delivered on commit). The statements are
# pipelined (one round trip) and write each table's rows of all the writes at
# once (``_Rows``). The pipeline is ended, not synced: psycopg's
# ``Pipeline.sync()`` flushes what is queued once and then waits for the
# results, so a statement larger than the socket takes at once (about 1 MiB
# here: one long result line) stayed half sent while the server waited for
# the rest, and both waited for ever. Leaving the pipeline flushes until all
# of it is sent, then reads.

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from ..delivery import recorded_already
from ..errors import ProjectorConflictError
from ..journal import appended_already
from ..writes import StreamWrite
from ._pg import DELIVERY_CHANNEL, JOURNAL_CHANNEL, STREAMS_CHANNEL, notify_key
from .lease import LEASES, Lease, LeaseLostError
from .tables import CHILDREN, DELIVERY_RUNS, EVENTS, ITEMS, JOURNAL_RUNS

__all__ = ["write_streams", "check_leases"]


def write_streams(conn: psycopg.Connection[Any], writes: Sequence[StreamWrite], *, verify: bool) -> None:
    """Write ``writes`` in ``conn``'s open transaction (see the module comment). With ``verify``, each
    write's Run is read first: a write already there is skipped, ProjectorConflictError when another
    writer's rows are. Raises ``LeaseLostError`` for a lease no longer in force, ProjectorConflictError
    for a delivery row that moved, psycopg errors (a row's key taken); the caller rolls back."""
    check_leases(conn, {w.root_run_id: w.lease for w in writes if w.lease is not None})
    if verify:
        writes = [w for w in writes if not _already_there(conn, w)]
    moved = [(w.cursor, w.last_event_id, w.finished, w.root_last_sequence, w.root_run_id, *w.delivered)
             for w in writes if w.records and w.delivered is not None]
    with conn.cursor() as cur, conn.cursor() as updates:
        with conn.pipeline():
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
_CHILDREN = _Rows.insert(CHILDREN, "run_id:text root_run_id:text thread_id:text last_sequence:bigint "
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


def check_leases(conn: psycopg.Connection[Any], leased: Mapping[str, Lease]) -> None:
    """LeaseLostError unless each lease of ``leased`` (root run id -> lease) is on its Run and still in
    force; the lease rows are read ``FOR SHARE``, so that a takeover waits for the caller's commit."""
    if not leased:
        return
    for run_id, lease in leased.items():
        if lease.run_id != run_id:
            raise LeaseLostError(f"the lease is on run {lease.run_id!r}, not this one", run_id=run_id)
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
    # is due; ProjectorConflictError when another writer's rows are there instead (the rules of both
    # backends: ``journal.appended_already``, ``delivery.recorded_already``).
    root = write.root_run_id
    journal_done = records_done = True
    if write.items:
        row = conn.execute(f"SELECT last_position FROM {JOURNAL_RUNS} WHERE run_id = %s", (root,)).fetchone()
        journal_done = appended_already(write, None if row is None else row[0], lambda positions: dict(conn.execute(
            f"SELECT position, line FROM {ITEMS} WHERE root_run_id = %s AND position = ANY(%s)",
            (root, list(positions))).fetchall()))
    if write.records:
        found = conn.execute(f"SELECT source_cursor, last_event_id, finished FROM {DELIVERY_RUNS} WHERE run_id = %s",
                             (root,)).fetchone()
        records_done = recorded_already(write, found, lambda: conn.execute(
            f"SELECT data FROM {EVENTS} WHERE run_id = %s AND event_id = %s", (root, write.last_event_id)).fetchone())
    if journal_done != records_done and write.items and write.records:
        # Both parts commit together: one there and the other not is another writer's doing.
        raise ProjectorConflictError(run_id=root, cursor=None, found=None, reason=(
            "the run's journal and delivery log disagree with this write: another writer is at work"))
    return journal_done and records_done
