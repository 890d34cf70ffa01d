# The source journal in PostgreSQL: the same contract as ``SqliteSourceJournal``
# (see ``host/journal.py``), for Hosts whose workers share one database.
#
#     harness_source_items(root_run_id, position, run_id, sequence, thread_id, terminal, line)
#         primary key (root_run_id, position), unique (run_id, sequence)
#     harness_source_runs(run_id, ord, root_run_id, thread_id, last_sequence, terminal, last_position)
#         primary key run_id; ord (an identity) gives the order of the Runs' first items
#
# A stream is a root Run's own items and its child Runs' items, interleaved
# in arrival order; ``position`` is an item's index in its root's stream,
# counted from ``first_sequence``, so for a Run without children an item's
# position is its sequence. ``append`` holds the stream's advisory lock (see
# ``_pg``) for its transaction, builds a ``StreamCursor`` from the heads of
# the root and of the item's Run, runs the item through
# ``core.history.advance_stream`` (the one policy), and only when that refuses
# an item at an occupied (run id, sequence) looks at the slot: the identical
# item again is a no-op (False), even after the terminal result; a different
# item there is a ``JournalConflictError``, or the ``AfterTerminalError`` the
# check raised once the stream has ended (``journal.appended``, the rule of
# both backends). Then it writes the item as a batch of one through the one
# write path (``writes.write_streams``): the row, the heads, and ``NOTIFY
# harness_agui_journal, <root run id>``, delivered when the transaction commits.
#
# Readers page through the stream by position in worker threads, each page
# one REPEATABLE READ snapshot, and pass what they read through
# ``check_prefix`` / ``check_tail``: a database can be edited or restored
# from elsewhere, so what is read is checked as what is written. ``tail``
# reads what is stored after its cursor, then waits for the stream's
# notification (it does not poll) and reads again, and ends after the root's
# terminal result. PostgreSQL types every column and checks its own pages
# (``initdb --data-checksums``), so rows carry no checksum of their own here;
# a head that disagrees with the items it heads is still a
# ``DamagedStoreError``.

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from pyrsistent import pmap

from ...core.errors import AfterTerminalError, ForeignRunError
from ...core.history import HistoryCursor, StreamCursor
from ...core.source import HarnessStreamEvent
from ...wire.codec import DecodeError, Migration, decode, encode
from ..checks import Cursor, check_tail
from ..errors import DamagedStoreError
from ..journal import _PAGE, _Head, _item, _SourceJournal, adopting_root, appended, check_append
from ._pg import JOURNAL_CHANNEL, LOCK_JOURNAL, Database, unused_poll_interval
from .tables import ITEMS
from .tables import JOURNAL_RUNS as RUNS
from .writes import write_streams

__all__ = ["PostgresSourceJournal"]

SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {ITEMS} (
        root_run_id text NOT NULL, position bigint NOT NULL, run_id text NOT NULL, sequence bigint NOT NULL,
        thread_id text NOT NULL, terminal boolean NOT NULL, line text NOT NULL,
        PRIMARY KEY (root_run_id, position), UNIQUE (run_id, sequence))""",
    f"""CREATE TABLE IF NOT EXISTS {RUNS} (
        run_id text PRIMARY KEY, ord bigint GENERATED ALWAYS AS IDENTITY, root_run_id text NOT NULL,
        thread_id text NOT NULL, last_sequence bigint NOT NULL, terminal boolean NOT NULL,
        last_position bigint NOT NULL)""",
    f"CREATE INDEX IF NOT EXISTS {RUNS}_roots ON {RUNS} (ord) WHERE run_id = root_run_id",
    f"CREATE INDEX IF NOT EXISTS {RUNS}_thread ON {RUNS} (thread_id, ord) WHERE run_id = root_run_id",
)
COLUMNS = {
    ITEMS: ("root_run_id", "position", "run_id", "sequence", "thread_id", "terminal", "line"),
    RUNS: ("run_id", "ord", "root_run_id", "thread_id", "last_sequence", "terminal", "last_position"),
}


class PostgresSourceJournal(_SourceJournal):
    """A durable, append-only journal of Harness source items in a PostgreSQL database.

    The contract of ``SqliteSourceJournal``, for several processes on
    several machines: ``url`` is a ``postgresql://`` URL (libpq's form:
    ``postgresql://user:password@host:port/dbname``, or
    ``postgresql://user@/dbname?host=/socket/dir``). The tables are created
    if missing (by whichever process opens a new database first). With
    ``read_only=True`` nothing is created or written and ``append`` raises
    ``ReadOnlyStoreError`` (a hot standby can serve the reads).
    ``migrations`` and ``first_sequence`` are as for the SQLite journal.
    ``pool_size`` is the most connections this object holds at once (one
    more is opened, on demand, to LISTEN for new items); ``timeout`` how
    long a call waits for a free connection, in seconds. ``recheck`` is how
    long a waiting ``tail`` goes without a notification before it reads
    again anyway (a safety net: it is woken by ``NOTIFY``, not by polling).

    One journal object may be used from any threads and tasks. Raises
    ValueError for a URL that is not a postgresql:// URL or bad settings,
    ``DamagedStoreError`` for tables with other columns (or missing ones,
    read-only), and psycopg / psycopg_pool errors for a database that
    cannot be reached within ``timeout``.
    """

    def __init__(self, url: str, *, migrations: Mapping[int, Migration] | None = None, first_sequence: int = 0,
                 read_only: bool = False, pool_size: int = 4, timeout: float = 30.0, recheck: float = 30.0) -> None:
        if not isinstance(first_sequence, int) or isinstance(first_sequence, bool) or first_sequence < 0:
            raise ValueError(f"first_sequence must be an int >= 0, not {first_sequence!r}")
        self._migrations = dict(migrations or {})
        self._first = first_sequence
        self._db = Database(url, schema=SCHEMA, tables=COLUMNS, read_only=read_only, min_size=1,
                            max_size=pool_size, timeout=timeout, recheck=recheck)

    @property
    def url(self) -> str:
        """The database's URL (with its password, if it has one: do not log it; ``path`` is for that)."""
        return self._db.url

    # -- writing -----------------------------------------------------------------

    def append(self, item: HarnessStreamEvent, *, root_run_id: str | None = None) -> bool:
        """Store one source item durably, in one transaction; the contract of ``SqliteSourceJournal.append``.

        With ``root_run_id`` None the item goes to the stream of its Run's
        root (its own stream for a Run not stored as a child); a
        ``root_run_id`` names the stream: an unknown run id other than it
        becomes a child Run of that stream, which must exist and not be
        finished. Returns True when written, False for a second delivery of
        the identical item (even after the terminal result). Raises
        TypeError for a value that is not a source item; the
        ``HistoryError``s of ``core.history.advance_stream`` for an item
        that is not its Run's next one (``JournalConflictError`` for a
        different item at a stored (run id, sequence), ``AfterTerminalError``
        for anything new after the root's terminal result);
        ``ForeignRunError`` when ``root_run_id`` is not the stored root of
        the item's Run, or names no stored stream; ``ReadOnlyStoreError`` on
        a read-only journal; psycopg errors for storage failures. On any
        error nothing is written. Blocks until the commit: from an event
        loop, call it through ``asyncio.to_thread``.
        """
        check_append(item, root_run_id)
        line = encode(item)
        run_id = item.run_id
        with self._db.write("append") as conn:
            root = root_run_id
            if root is None:  # the stream the Run belongs to, or its own
                head = self._head(conn, run_id)
                root = run_id if head is None else head.root_run_id
                adopted = self._adopting_root(conn, item, head)
                if adopted is not None:  # a subagent's first item was filed as a stream of its own: move it
                    for key in sorted((run_id, adopted)):
                        self._db.lock(conn, (LOCK_JOURNAL, key))
                    if self._adopting_root(conn, item, self._head(conn, run_id)) == adopted:
                        self._move_first_item(conn, run_id, adopted)
                    root = root_run_id = adopted
            while True:
                self._db.lock(conn, (LOCK_JOURNAL, root))
                head = self._head(conn, run_id)  # read again, under the lock (READ COMMITTED: a fresh snapshot)
                if root_run_id is not None or head is None or head.root_run_id == root:
                    return self._append(conn, item, line, root, head)
                root = head.root_run_id  # it became a child of another stream meanwhile: lock that one too

    def _adopting_root(self, conn: Any, item: HarnessStreamEvent, own: _Head | None) -> str | None:
        return adopting_root(item, own, self._first, lambda run_id: self._head(conn, run_id))

    def _move_first_item(self, conn: Any, run_id: str, root: str) -> None:
        # The one item of ``run_id``'s own stream goes to the end of ``root``'s, as a child's first item.
        head = self._head(conn, root)
        assert head is not None
        position = head.last_position + 1
        conn.execute(f"UPDATE {ITEMS} SET root_run_id = %s, position = %s WHERE root_run_id = %s AND position = %s",
                     (root, position, run_id, self._first))
        conn.execute(f"UPDATE {RUNS} SET root_run_id = %s, last_position = %s WHERE run_id = %s",
                     (root, position, run_id))
        conn.execute(f"UPDATE {RUNS} SET last_position = %s WHERE run_id = %s", (position, root))

    def _append(self, conn: Any, item: HarnessStreamEvent, line: str, root: str, head: _Head | None) -> bool:
        run_id, seq = item.run_id, item.sequence
        if head is not None and head.root_run_id != root:
            raise ForeignRunError(f"run {run_id!r} is stored in the stream of run {head.root_run_id!r}, not "
                                  f"{root!r}", run_id=root, sequence=seq, found_run_id=run_id,
                                  found_thread_id=item.thread_id)
        root_head = head if run_id == root else self._head(conn, root)
        if run_id != root and root_head is None:
            raise ForeignRunError(f"no stream of run {root!r} is stored, so run {run_id!r} cannot be its child",
                                  run_id=root, sequence=seq, found_run_id=run_id, found_thread_id=item.thread_id)
        write = appended(item, line, root, root_head, head, self._first, stored=lambda s: self._line(conn, run_id, s),
                         decode=lambda stored: self._decode(stored, run_id, seq))
        if write is None:
            return False
        write_streams(conn, [write], verify=False)
        return True

    def _line(self, conn: Any, run_id: str, seq: int) -> str | None:
        row = conn.execute(f"SELECT line FROM {ITEMS} WHERE run_id = %s AND sequence = %s", (run_id, seq)).fetchone()
        return None if row is None else str(row[0])

    # -- reading -----------------------------------------------------------------

    def stream_cursor(self, run_id: str, *, through: Cursor) -> StreamCursor:
        """Where each Run of root Run ``run_id``'s stream stands after position ``through`` (None: before
        the first item); as ``SqliteSourceJournal.stream_cursor``."""
        if through is None:
            return StreamCursor.of(run_id, first_sequence=self._first)
        with self._db.read() as conn:
            head = self._root(conn, run_id)
            if head is None or through > head.last_position:
                raise ValueError(f"the journal does not hold the stream of run {run_id!r} through position "
                                 f"{through}")
            cursor = _stream_at(conn, run_id, through)
        if cursor is None:
            raise DamagedStoreError("the stream's items do not fit together (a Run with two Threads, or no item "
                                    "of the root)", path=self._db.path, table=ITEMS, row=f"root_run_id={run_id!r:.80}")
        return cursor

    def root_of(self, run_id: str) -> str | None:
        """The root Run of the stream that holds Run ``run_id`` (itself for a root), None if not stored."""
        with self._db.connection() as conn:  # one statement: no transaction needed
            head = self._head(conn, run_id)
        return None if head is None else head.root_run_id

    def runs(self, thread_id: str | None = None) -> tuple[str, ...]:
        """The root run ids stored (of one Thread, if given), in the order their first item was appended."""
        sql = f"SELECT run_id FROM {RUNS} WHERE run_id = root_run_id"
        args: tuple[object, ...] = ()
        if thread_id is not None:
            sql += " AND thread_id = %s"
            args = (thread_id,)
        with self._db.read() as conn:
            return tuple(r[0] for r in conn.execute(sql + " ORDER BY ord", args))

    def tail(self, run_id: str, *, after: Cursor, poll_interval: float | None = None,
             ) -> AsyncIterator[HarnessStreamEvent]:
        """Every item of the root Run's stream after position ``after``, following new appends.

        Yields what is stored after the cursor, then waits for each next
        append (woken by PostgreSQL's NOTIFY from any process; the store's
        ``recheck`` is a safety re-read; ``poll_interval`` is accepted for
        the SQLite signature and not used: nothing polls), and ends after the root's terminal
        result (at once if the item at ``after`` is it). Raises the
        ``check_tail`` errors, and ``AfterTerminalError`` when ``after``
        lies beyond the stored terminal result. Cancelling the consuming
        task stops it cleanly."""
        return self._tail(run_id, after, unused_poll_interval(poll_interval, self._db.recheck))

    # -- internals -----------------------------------------------------------------

    def _decode(self, line: str, run_id: str, seq: int) -> HarnessStreamEvent:
        try:
            return decode(line, migrations=self._migrations)
        except DecodeError as e:
            raise DecodeError(f"journal row of run {run_id!r} at sequence {seq}: {e.reason}") from e

    def _head(self, conn: Any, run_id: str) -> _Head | None:
        row = conn.execute(f"SELECT root_run_id, thread_id, last_sequence, terminal, last_position FROM {RUNS} "
                           "WHERE run_id = %s", (run_id,)).fetchone()
        return None if row is None else _Head(*row)

    def _read_root(self, run_id: str) -> _Head | None:
        with self._db.connection() as conn:  # one statement: no transaction needed
            return self._root(conn, run_id)

    def _fetch(self, run_id: str, after: int, through: int | None) -> list[tuple[int, str, int, bool, str]]:
        # One page of (position, run id, sequence, terminal, line) after ``after`` (through ``through``); a
        # page that ends what is stored must reach the stream's head.
        sql = (f"SELECT position, run_id, sequence, terminal, line FROM {ITEMS} WHERE root_run_id = %s "
               "AND position > %s")
        args: tuple[object, ...] = (run_id, after)
        if through is not None:
            sql += " AND position <= %s"
            args += (through,)
        with self._db.read() as conn:
            head = self._root(conn, run_id)
            rows = conn.execute(sql + " ORDER BY position LIMIT %s", args + (_PAGE,)).fetchall()
        if head is not None and len(rows) < _PAGE:
            end = head.last_position if through is None else min(through, head.last_position)
            reached = rows[-1][0] if rows else after
            if reached < end:
                raise DamagedStoreError(f"missing: the stream's last position is {head.last_position} ({RUNS})",
                                        path=self._db.path, table=ITEMS,
                                        row=f"root_run_id={run_id!r:.80}, position={reached + 1}")
        return rows

    def _fetch_items(self, run_id: str, after: int, through: int | None) -> list[tuple[int, str, Any, bool]]:
        # ``_fetch``, each line decoded here, in the worker thread (a result's state may hold a long
        # Thread's whole history: never decoded on the event loop); a line that cannot be decoded gives its
        # error in the item's place, raised by the reader when it reaches it.
        out: list[tuple[int, str, Any, bool]] = []
        for position, item_run, seq, terminal, line in self._fetch(run_id, after, through):
            try:
                item: Any = self._decode(line, item_run, seq)
            except DecodeError as e:
                item = e
            out.append((position, item_run, item, terminal))
        return out

    async def _pages(self, run_id: str, through: int | None) -> AsyncIterator[HarnessStreamEvent]:
        last = self._first - 1
        while True:
            rows = await asyncio.to_thread(self._fetch_items, run_id, last, through)
            for position, _, item, _ in rows:
                yield _item(item)
                last = position
            if len(rows) < _PAGE:
                return

    def _start(self, run_id: str, after: Cursor) -> tuple[StreamCursor | Cursor, bool]:
        # The cursor a tail after ``after`` starts from: the stream cursor of the stored prefix through
        # ``after`` (each Run's next sequence), and whether the stream ended there.
        with self._db.read() as conn:
            head = self._root(conn, run_id)
            if head is None or after is None:
                return after, False
            if head.terminal and after >= head.last_position:
                if after > head.last_position:
                    raise AfterTerminalError(f"the tail cursor lies beyond the terminal result at position "
                                             f"{head.last_position}", run_id=run_id, sequence=after)
                return after, True
            if after > head.last_position:
                return after, False
            cursor = _stream_at(conn, run_id, after)
        # A damaged prefix: let the position-only check report what it meets.
        return (after, False) if cursor is None else (cursor, False)

    async def _tail(self, run_id: str, after: Cursor, recheck: float) -> AsyncIterator[HarnessStreamEvent]:
        start, ended = await asyncio.to_thread(self._start, run_id, after)
        if ended:
            return
        items = self._follow(run_id, after, recheck)
        async for item in check_tail(items, run_id=run_id, after=start, first_sequence=self._first):
            yield item

    async def _follow(self, run_id: str, after: Cursor, recheck: float) -> AsyncIterator[HarnessStreamEvent]:
        last = self._first - 1 if after is None else after
        async with self._db.changes(JOURNAL_CHANNEL, run_id) as wait:
            while True:
                rows = await asyncio.to_thread(self._fetch_items, run_id, last, None)
                for position, item_run, item, terminal in rows:
                    yield _item(item)
                    last = position
                    if terminal and item_run == run_id:
                        return
                if not rows:
                    await wait(recheck)


def _stream_at(conn: Any, run_id: str, through: int) -> StreamCursor | None:
    # The stream cursor of root Run ``run_id``'s stored prefix through position ``through`` (each Run's next
    # sequence); None when its rows do not fit together (a Run with two Threads, or no item of the root).
    rows = conn.execute(f"SELECT run_id, thread_id, max(sequence), bool_or(terminal) FROM {ITEMS} "
                        "WHERE root_run_id = %s AND position <= %s GROUP BY run_id, thread_id",
                        (run_id, through)).fetchall()
    runs = {r[0]: HistoryCursor(r[0], r[1], r[2] + 1, r[3]) for r in rows}
    root = runs.pop(run_id, None)
    if root is None or len(rows) != len(runs) + 1:
        return None
    return StreamCursor(root, pmap(runs), through + 1, True)
