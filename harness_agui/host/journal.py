# The embedded source journal: a Run's source items in one SQLite table.
#
#     harness_source_items(run_id, sequence, thread_id, terminal, line)
#     primary key (run_id, sequence); line = codec.encode(item)
#
# Each row holds one item in the project's wire format (the JSON line of
# ``codec.encode``, which carries its own version ``v``), so a journal written
# by this release is read by a later one through ``codec.decode`` and the
# ``migrations`` the journal is given. The other columns are only the keys the
# queries need.
#
# ``append`` enforces the order of the Run's history at write time, inside the
# one transaction that writes the row: it builds the Run's ``HistoryCursor``
# from the head row (or a fresh one at ``first_sequence``) and runs the item
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

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping

from ..core.errors import AfterTerminalError, SequenceOrderError
from ..core.history import HistoryCursor, advance
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.codec import DecodeError, Migration, decode, encode
from ._sqlite import Database, poll_interval_seconds
from .checks import Cursor, check_prefix, check_tail
from .errors import JournalConflictError

__all__ = ["SqliteSourceJournal"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS harness_source_items (
    run_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    thread_id TEXT NOT NULL,
    terminal INTEGER NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);
CREATE INDEX IF NOT EXISTS harness_source_items_thread ON harness_source_items (thread_id)
"""

_PAGE = 256


class SqliteSourceJournal:
    """A durable, append-only journal of Harness source items in one SQLite file.

    ``path`` is the database file (created if missing, put in WAL mode; it may
    be shared with a ``SqliteDeliveryLog``). ``migrations`` is passed to
    ``codec.decode`` for every stored line, so items written by an older wire
    version can be read. ``first_sequence`` is the sequence of a Run's first
    item: 0, as a Harness numbers them (see ``core.history``); an observer
    expects 0, so a journal told otherwise can be read by ``read_prefix``
    but not resumed into an observer. ``poll_interval`` is how long ``tail`` sleeps, in seconds, when it
    has caught up. ``synchronous`` is SQLite's durability level (FULL: a
    committed append survives a power cut; NORMAL: it survives a crash of the
    process). ``timeout`` is how long a write waits for another writer.

    One journal object may be used from several threads and tasks; each
    thread gets its own connection. Raises ValueError for an in-memory path,
    an unknown ``synchronous`` mode or a file that cannot use WAL, and
    sqlite3 errors for a file that cannot be opened.
    """

    def __init__(self, path: str | os.PathLike[str], *, migrations: Mapping[int, Migration] | None = None,
                 first_sequence: int = 0, poll_interval: float = 0.05, synchronous: str = "FULL",
                 timeout: float = 30.0) -> None:
        if not isinstance(first_sequence, int) or isinstance(first_sequence, bool) or first_sequence < 0:
            raise ValueError(f"first_sequence must be an int >= 0, not {first_sequence!r}")
        self._poll_interval = poll_interval_seconds(poll_interval)
        self._migrations = dict(migrations or {})
        self._first = first_sequence
        self._db = Database(path, synchronous=synchronous, timeout=timeout, schema=_SCHEMA)

    @property
    def path(self) -> str:
        """The database file."""
        return self._db.path

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
        when the stored item it is compared with cannot be decoded; sqlite3
        errors for storage failures. On any error nothing is written.

        It blocks until the commit is durable (an fsync with the default
        ``synchronous="FULL"``); from a busy event loop, call it through
        ``asyncio.to_thread``: each thread has its own connection.
        """
        if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
            raise TypeError(f"append() takes a Harness source item, not {type(item).__name__}")
        line = encode(item)
        run_id, seq = item.run_id, item.sequence
        with self._db.write() as conn:
            head = conn.execute(
                "SELECT sequence, thread_id, terminal FROM harness_source_items WHERE run_id = ? "
                "ORDER BY sequence DESC LIMIT 1", (run_id,)).fetchone()
            if head is None:
                cursor = HistoryCursor(run_id, next_sequence=self._first)
            else:
                cursor = HistoryCursor(run_id, head[1], head[0] + 1, bool(head[2]))
            try:
                advance(cursor, item)
            except (SequenceOrderError, AfterTerminalError) as e:
                if seq < cursor.next_sequence:  # a stored slot, perhaps: a second delivery is no fault
                    row = conn.execute("SELECT line FROM harness_source_items WHERE run_id = ? AND sequence = ?",
                                       (run_id, seq)).fetchone()
                    if row is not None:
                        if row[0] == line or self._decode(row[0], run_id, seq) == item:
                            return False
                        if isinstance(e, SequenceOrderError):
                            raise JournalConflictError(run_id, seq, expected=cursor.next_sequence) from None
                raise
            conn.execute(
                "INSERT INTO harness_source_items (run_id, sequence, thread_id, terminal, line) VALUES (?, ?, ?, ?, ?)",
                (run_id, seq, item.thread_id, int(isinstance(item, HarnessRunResultEvent)), line))
        return True

    # -- reading -----------------------------------------------------------------

    def cursor(self, run_id: str) -> Cursor:
        """The sequence of the Run's last stored item, None if none is stored. Raises nothing else."""
        row = self._db.conn().execute("SELECT MAX(sequence) FROM harness_source_items WHERE run_id = ?",
                                      (run_id,)).fetchone()
        return None if row is None else row[0]

    def finished(self, run_id: str) -> bool:
        """Whether the Run's terminal result is stored."""
        row = self._db.conn().execute(
            "SELECT 1 FROM harness_source_items WHERE run_id = ? AND terminal = 1 LIMIT 1", (run_id,)).fetchone()
        return row is not None

    def runs(self, thread_id: str | None = None) -> tuple[str, ...]:
        """The run ids stored (of one Thread, if given), in the order their first item was appended."""
        if thread_id is None:
            rows = self._db.conn().execute(
                "SELECT run_id FROM harness_source_items GROUP BY run_id ORDER BY MIN(rowid)").fetchall()
        else:
            rows = self._db.conn().execute(
                "SELECT run_id FROM harness_source_items WHERE thread_id = ? GROUP BY run_id ORDER BY MIN(rowid)",
                (thread_id,)).fetchall()
        return tuple(r[0] for r in rows)

    def read_prefix(self, run_id: str, *, through: Cursor) -> AsyncIterator[HarnessStreamEvent]:
        """The Run's exact prefix up to and including sequence ``through``, checked.

        Returns an async iterator of the stored items in order, to be passed
        to ``HarnessAguiObserver.resume()``; ``through=None`` is the empty
        prefix. It raises the ``check_prefix`` errors (``HistoryError``s,
        which leave a resuming observer fresh): in particular
        ``IncompletePrefixError`` when the journal does not hold the Run up
        to ``through``. A stored line that cannot be decoded raises
        DecodeError naming the run and sequence. Bad arguments raise
        ValueError or TypeError from this call.
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
        result. Cancelling the consuming task stops it cleanly.
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
        return f"<SqliteSourceJournal {self._db.path!r}{' closed' if self._db.closed else ''}>"

    # -- internals -----------------------------------------------------------------

    def _decode(self, line: str, run_id: str, seq: int) -> HarnessStreamEvent:
        try:
            return decode(line, migrations=self._migrations)
        except DecodeError as e:
            raise DecodeError(f"journal row of run {run_id!r} at sequence {seq}: {e.reason}") from e

    def _fetch(self, run_id: str, after: int, through: int | None) -> list[tuple[int, int, str]]:
        sql = "SELECT sequence, terminal, line FROM harness_source_items WHERE run_id = ? AND sequence > ?"
        args: tuple[object, ...] = (run_id, after)
        if through is not None:
            sql += " AND sequence <= ?"
            args += (through,)
        return self._db.conn().execute(sql + " ORDER BY sequence LIMIT ?", args + (_PAGE,)).fetchall()

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
        row = self._db.conn().execute(
            "SELECT sequence FROM harness_source_items WHERE run_id = ? AND terminal = 1", (run_id,)).fetchone()
        return None if row is None else row[0]

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
