# The embedded source journal: a Run's source items in one SQLite table, and
# each Run's head in another.
#
#     harness_source_items(run_id, sequence, thread_id, terminal, line, crc)
#     primary key (run_id, sequence); line = codec.encode(item); crc: see _sqlite
#     harness_source_runs(run_id, thread_id, last_sequence, terminal, crc)
#     primary key run_id; one row per Run, in the order of the Runs' first items
#
# Each row holds one item in the project's wire format (the JSON line of
# ``codec.encode``, which carries its own version ``v``), so a journal written
# by this release is read by a later one through ``codec.decode`` and the
# ``migrations`` the journal is given. The other columns are only the keys the
# queries need.
#
# ``append`` enforces the order of the Run's history at write time, inside the
# one transaction that writes the row and the Run's head: it builds the Run's
# ``HistoryCursor`` from the head (or a fresh one at ``first_sequence``) and runs the item
# through ``core.history.advance``, the policy every reader shares: the Run's
# first item carries ``first_sequence``, every later one the next sequence,
# the Thread never changes and nothing follows the terminal result. Only
# when that refuses an item at a sequence already stored is the slot looked
# at: a second delivery of the stored item is recognised (same decoded value)
# and ignored, even after the terminal result; a different item there is a
# ``JournalConflictError`` (a SequenceOrderError), or the AfterTerminalError
# ``advance`` raised when the Run has ended, as every reader reports it. So the
# table only ever holds contiguous, consistent Runs, and readers still check
# what they read (``check_prefix``, ``check_tail``) because a database file
# can be edited, pruned or restored from elsewhere.
#
# Readers page through the table in worker threads (see ``_sqlite``). Rows are
# never updated or deleted by the journal, so a prefix read in several pages
# is the same as one read at once. ``tail`` polls for rows after the last one
# it yielded and stops after the terminal result; polling is cheap here (one
# indexed range query) and needs no cross-process signalling.
#
# Every row is checked as it is read (types and checksum, ``_sqlite``), and a
# row found by its key must carry that key. The head row is what ``cursor``,
# ``finished``, ``runs`` and ``append`` read; it is checked against the
# highest sequence the items' index holds for the Run, and every read that
# goes to the end of what is stored must reach the head's sequence. So a
# damaged file that lost or hid the Run's last items (or holds items past its
# head) raises ``DamagedStoreError`` instead of a short cursor or a tail that
# waits for an item it cannot see. Items missing in the middle (rows deleted
# by hand) read as a gap, as they always did: a ``SequenceGapError``. To
# prune a whole Run, delete its rows from both tables.

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs

from ..core.errors import AfterTerminalError, SequenceOrderError
from ..core.history import HistoryCursor, advance
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.codec import DecodeError, Migration, decode, encode
from ._sqlite import FLAG, INTEGER, TEXT, Column, Database, Table, poll_interval_seconds
from .checks import Cursor, check_prefix, check_tail
from .errors import JournalConflictError

__all__ = ["SqliteSourceJournal"]

ITEMS = Table(
    "harness_source_items",
    (Column("run_id", TEXT), Column("sequence", INTEGER), Column("thread_id", TEXT), Column("terminal", FLAG),
     Column("line", TEXT)),
    key=("run_id", "sequence"),
)
HEADS = Table(
    "harness_source_runs",
    (Column("run_id", TEXT), Column("thread_id", TEXT), Column("last_sequence", INTEGER), Column("terminal", FLAG)),
    key=("run_id",),
    indexes=(("harness_source_runs_thread", "thread_id"),),
)


@attrs.frozen
class _Head:
    """A Run's head row, checked against the items' index."""

    thread_id: str
    last_sequence: int
    terminal: bool

_PAGE = 256


class SqliteSourceJournal:
    """A durable, append-only journal of Harness source items in one SQLite file.

    ``path`` is the database file (created if missing, put in WAL mode; it may
    be shared with a ``SqliteDeliveryLog``). With ``read_only=True`` the file
    is opened for reading only (SQLite's ``mode=ro``): it must exist and hold
    a journal, nothing is ever written to it, and ``append`` raises
    ``ReadOnlyStoreError``; a file on read-only media whose ``-shm`` file is
    missing is read as an unchanging snapshot. ``migrations`` is passed to
    ``codec.decode`` for every stored line, so items written by an older wire
    version can be read. ``first_sequence`` is the sequence of a Run's first
    item: 0, as a Harness numbers them (see ``core.history``); an observer
    expects 0, so a journal told otherwise can be read by ``read_prefix``
    but not resumed into an observer. ``poll_interval`` is how long ``tail`` sleeps, in seconds, when it
    has caught up. ``synchronous`` is SQLite's durability level (FULL: a
    committed append survives a power cut; NORMAL: it survives a crash of the
    process). ``timeout`` is how long a write waits for another writer.

    One journal object may be used from several threads and tasks; each
    thread gets its own connection, and any number of processes may open the
    same file at once (each open waits up to ``timeout`` for the others).
    Raises ValueError for an in-memory path, an unknown ``synchronous`` mode
    or a file that cannot use WAL; ``DamagedStoreError`` for a file that is
    not a database or whose table is damaged; with ``read_only``,
    FileNotFoundError for a missing file and ``StorageError`` for a file
    without a journal; sqlite3 errors for a file that cannot be opened (a
    lock still held after ``timeout``).

    Every read checks each row it uses (value types and the row's checksum)
    and raises ``DamagedStoreError`` naming the table and the row instead of
    returning what a damaged file holds.
    """

    def __init__(self, path: str | os.PathLike[str], *, migrations: Mapping[int, Migration] | None = None,
                 first_sequence: int = 0, poll_interval: float = 0.05, synchronous: str = "FULL",
                 timeout: float = 30.0, read_only: bool = False) -> None:
        if not isinstance(first_sequence, int) or isinstance(first_sequence, bool) or first_sequence < 0:
            raise ValueError(f"first_sequence must be an int >= 0, not {first_sequence!r}")
        self._poll_interval = poll_interval_seconds(poll_interval)
        self._migrations = dict(migrations or {})
        self._first = first_sequence
        self._db = Database(path, synchronous=synchronous, timeout=timeout, tables=(ITEMS, HEADS),
                            read_only=read_only)

    @property
    def path(self) -> str:
        """The database file."""
        return self._db.path

    @property
    def read_only(self) -> bool:
        """Whether the journal was opened with ``read_only=True``."""
        return self._db.read_only

    # -- writing -----------------------------------------------------------------

    def append(self, item: HarnessStreamEvent) -> bool:
        """Store one source item durably, in one transaction.

        Returns True when the item was written, False when the identical item
        was already stored at its (run id, sequence) (a duplicate delivery;
        nothing is written). Raises TypeError for a value that is not a
        source item; otherwise the ``HistoryError`` of ``core.history.advance``
        for an item that is not the Run's next one: ``JournalConflictError``
        (a ``SequenceOrderError``) when a different item is stored at that
        slot of a Run that has not ended, ``SequenceOrderError`` for an
        earlier sequence that was never stored, ``SequenceGapError`` for a skipped sequence (or a first item
        not at ``first_sequence``), ``AfterTerminalError`` after the Run's
        terminal result, ``ForeignRunError`` when the Run's Thread would
        change; DecodeError
        when the stored item it is compared with cannot be decoded;
        ``ReadOnlyStoreError`` on a read-only journal; ``DamagedStoreError``
        when a stored row it reads is damaged; sqlite3 errors for storage
        failures. On any error nothing is written.

        It blocks until the commit is durable (an fsync with the default
        ``synchronous="FULL"``); from a busy event loop, call it through
        ``asyncio.to_thread``: each thread has its own connection.
        """
        if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
            raise TypeError(f"append() takes a Harness source item, not {type(item).__name__}")
        line = encode(item)
        run_id, seq = item.run_id, item.sequence
        with self._db.write("append", ITEMS) as conn:
            head = self._head(conn, run_id)
            if head is None:
                cursor = HistoryCursor(run_id, next_sequence=self._first)
            else:
                cursor = HistoryCursor(run_id, head.thread_id, head.last_sequence + 1, head.terminal)
            try:
                advance(cursor, item)
            except (SequenceOrderError, AfterTerminalError) as e:
                if seq < cursor.next_sequence:  # a stored slot, perhaps: a second delivery is no fault
                    row = self._row(conn, run_id, seq)
                    if row is not None:
                        stored = row[4]
                        if stored == line or self._decode(stored, run_id, seq) == item:
                            return False
                        if isinstance(e, SequenceOrderError):
                            raise JournalConflictError(run_id, seq, expected=cursor.next_sequence) from None
                raise
            terminal = int(isinstance(item, HarnessRunResultEvent))
            conn.execute(ITEMS.insert, ITEMS.sealed((run_id, seq, item.thread_id, terminal, line)))
            conn.execute(f"{HEADS.insert} ON CONFLICT (run_id) DO UPDATE SET last_sequence = excluded.last_sequence, "
                         "terminal = excluded.terminal, crc = excluded.crc",
                         HEADS.sealed((run_id, item.thread_id, seq, terminal)))
        return True

    # -- reading -----------------------------------------------------------------

    def cursor(self, run_id: str) -> Cursor:
        """The sequence of the Run's last stored item, None if none is stored.
        Raises ``DamagedStoreError`` if the Run's head is damaged or disagrees with its items."""
        head = self._read_head(run_id)
        return None if head is None else head.last_sequence

    def finished(self, run_id: str) -> bool:
        """Whether the Run's terminal result is stored. Raises as ``cursor`` does."""
        head = self._read_head(run_id)
        return head is not None and head.terminal

    def runs(self, thread_id: str | None = None) -> tuple[str, ...]:
        """The run ids stored (of one Thread, if given), in the order their first item was appended.
        Raises ``DamagedStoreError`` for a damaged head row, or one missing or at odds with its items.
        Reads the whole index of the items table."""
        where, args = ("", ()) if thread_id is None else (" WHERE thread_id = ?", (thread_id,))
        with self._db.read(HEADS, "the runs") as conn:
            rows = conn.execute(f"SELECT {HEADS.select} FROM {HEADS.name}{where} ORDER BY rowid", args).fetchall()
            heads = [HEADS.checked(self.path, row) for row in rows]
            for head, row in zip(heads, rows, strict=True):
                if thread_id is not None and head[1] != thread_id:
                    raise HEADS.damaged(self.path, head, f"the index gave this row for thread {thread_id!r:.80}",
                                        row[0])
                self._head(conn, head[0])  # it agrees with the Run's items
            orphan = conn.execute(f"SELECT run_id FROM {ITEMS.name} WHERE run_id NOT IN "
                                  f"(SELECT run_id FROM {HEADS.name}) LIMIT 1").fetchone()
        if orphan is not None:
            raise HEADS.damaged(self.path, None, f"missing, while {ITEMS.name} holds items of the run",
                                run_id=orphan[0])
        return tuple(head[0] for head in heads)

    def read_prefix(self, run_id: str, *, through: Cursor) -> AsyncIterator[HarnessStreamEvent]:
        """The Run's exact prefix up to and including sequence ``through``, checked.

        Returns an async iterator of the stored items in order, to be passed
        to ``HarnessAguiObserver.resume()``; ``through=None`` is the empty
        prefix. It raises the ``check_prefix`` errors (``HistoryError``s,
        which leave a resuming observer fresh): in particular
        ``IncompletePrefixError`` when the journal does not hold the Run up
        to ``through``. A stored line that cannot be decoded raises
        DecodeError naming the run and sequence, a damaged row
        ``DamagedStoreError`` naming it (nothing of it is yielded). Bad
        arguments raise ValueError or TypeError from this call.
        """
        items = self._pages(run_id, through)
        return check_prefix(items, run_id=run_id, through=through, first_sequence=self._first)

    def tail(self, run_id: str, *, after: Cursor, poll_interval: float | None = None,
             ) -> AsyncIterator[HarnessStreamEvent]:
        """Every item of the Run after sequence ``after``, following new appends.

        Returns an async iterator that yields the stored items after the
        cursor, then waits (polling every ``poll_interval`` seconds, the
        journal's default if None) for each next one, and ends after the
        terminal result; if the item at ``after`` is the terminal result it
        ends at once. Its first item is the one right after ``after``, so a
        prefix read ``through`` the same cursor and this tail have neither gap
        nor overlap. Raises the ``check_tail`` errors, and
        ``AfterTerminalError`` when ``after`` lies beyond the stored terminal
        result; a damaged row raises as for ``read_prefix``. Cancelling the
        consuming task stops it cleanly.
        """
        interval = self._poll_interval if poll_interval is None else poll_interval_seconds(poll_interval)
        items = self._follow(run_id, after, interval)
        return check_tail(items, run_id=run_id, after=after, first_sequence=self._first)

    def close(self) -> None:
        """Close every connection; later calls raise ValueError. Closing twice is harmless."""
        self._db.close()

    def __enter__(self) -> SqliteSourceJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._db.closed else " read-only" if self._db.read_only else ""
        return f"<SqliteSourceJournal {self._db.path!r}{state}>"

    # -- internals -----------------------------------------------------------------

    def _decode(self, line: str, run_id: str, seq: int) -> HarnessStreamEvent:
        try:
            return decode(line, migrations=self._migrations)
        except DecodeError as e:
            raise DecodeError(f"journal row of run {run_id!r} at sequence {seq}: {e.reason}") from e

    def _head(self, conn: Any, run_id: str) -> _Head | None:
        # The head row, and the highest sequence the items' index holds for the Run: they must agree.
        row = conn.execute(f"SELECT {HEADS.select} FROM {HEADS.name} WHERE run_id = ?", (run_id,)).fetchone()
        top = conn.execute(f"SELECT MAX(sequence) FROM {ITEMS.name} WHERE run_id = ?", (run_id,)).fetchone()[0]
        if row is None:
            if top is not None:
                raise HEADS.damaged(self.path, None, f"missing, while {ITEMS.name} holds items of the run "
                                                     f"(up to sequence {top!r:.40})", run_id=run_id)
            return None
        run, thread_id, last, terminal = HEADS.checked(self.path, row)
        if run != run_id:
            raise HEADS.damaged(self.path, None, f"the index gave the row of run {run!r:.80}", row[0], run_id=run_id)
        if top != last:
            if top is not None and type(top) is not int:
                raise ITEMS.damaged(self.path, None, "column sequence does not hold an integer", run_id=run_id,
                                    sequence=top)
            if top is not None and top > last:
                raise ITEMS.damaged(self.path, None, f"beyond the run's last sequence {last} ({HEADS.name})",
                                    run_id=run_id, sequence=top)
            raise ITEMS.damaged(self.path, None, f"missing: the run's last sequence is {last} ({HEADS.name})",
                                run_id=run_id, sequence=last)
        return _Head(thread_id, last, bool(terminal))

    def _row(self, conn: Any, run_id: str, seq: int) -> tuple[Any, ...] | None:
        # One row by its key, checked, and checked to be the row of that key (a damaged index
        # can lead a lookup to another row, whole and with a good checksum).
        row = conn.execute(f"SELECT {ITEMS.select} FROM {ITEMS.name} WHERE run_id = ? AND sequence = ?",
                           (run_id, seq)).fetchone()
        if row is None:
            return None
        values = ITEMS.checked(self.path, row)
        if values[0] != run_id or values[1] != seq:
            raise ITEMS.damaged(self.path, values, f"the index gave this row for sequence {seq}", row[0])
        return values

    def _read_head(self, run_id: str) -> _Head | None:
        with self._db.read(HEADS, f"the head of run {run_id!r}") as conn:
            return self._head(conn, run_id)

    def _fetch(self, run_id: str, after: int, through: int | None) -> list[tuple[int, int, str]]:
        # One page of (sequence, terminal, line) after ``after`` (through ``through``), checked; a page
        # that ends what is stored must reach the Run's head (else its last items are missing).
        sql = f"SELECT {ITEMS.select} FROM {ITEMS.name} WHERE run_id = ? AND sequence > ?"
        args: tuple[object, ...] = (run_id, after)
        if through is not None:
            sql += " AND sequence <= ?"
            args += (through,)
        with self._db.read(ITEMS, f"run {run_id!r} after sequence {after}") as conn:
            head = self._head(conn, run_id)
            rows = conn.execute(sql + " ORDER BY sequence LIMIT ?", args + (_PAGE,)).fetchall()
        out = []
        for row in rows:
            run, seq, _, terminal, line = ITEMS.checked(self.path, row)
            if run != run_id:
                raise ITEMS.damaged(self.path, None, f"the run's index gave a row of run {run!r:.80}",
                                    run_id=run_id, sequence=seq)
            out.append((seq, terminal, line))
        if head is not None and len(rows) < _PAGE:
            end = head.last_sequence if through is None else min(through, head.last_sequence)
            reached = out[-1][0] if out else after
            if reached < end:
                raise ITEMS.damaged(self.path, None, f"missing: the run's last sequence is {head.last_sequence} "
                                                     f"({HEADS.name})", run_id=run_id, sequence=reached + 1)
        return out

    async def _pages(self, run_id: str, through: int | None) -> AsyncIterator[HarnessStreamEvent]:
        last = self._first - 1
        while True:
            rows = await asyncio.to_thread(self._fetch, run_id, last, through)
            for seq, _, line in rows:
                yield self._decode(line, run_id, seq)
                last = seq
            if len(rows) < _PAGE:
                return

    def _terminal(self, run_id: str) -> int | None:
        head = self._read_head(run_id)
        return head.last_sequence if head is not None and head.terminal else None

    async def _follow(self, run_id: str, after: Cursor, interval: float) -> AsyncIterator[HarnessStreamEvent]:
        last = self._first - 1 if after is None else after
        terminal = await asyncio.to_thread(self._terminal, run_id)
        if terminal is not None and last >= terminal:
            if last > terminal:
                raise AfterTerminalError(f"the tail cursor lies beyond the terminal result at sequence {terminal}",
                                         run_id=run_id, sequence=last)
            return
        while True:
            rows = await asyncio.to_thread(self._fetch, run_id, last, None)
            for seq, terminal_flag, line in rows:
                yield self._decode(line, run_id, seq)
                last = seq
                if terminal_flag:
                    return
            if not rows:
                await asyncio.sleep(interval)
