# The embedded source journal: the stream of each root Run (its own items and
# those of the child Runs it delegated to, in arrival order) in one SQLite
# table, and the head of every Run (root or child) in another.
#
#     harness_source_items(run_id, position, item_run_id, sequence, thread_id, terminal, line, crc)
#     primary key (run_id, position): run_id is the stream's root Run, position
#     the item's place in the stream; unique (item_run_id, sequence): the item's
#     own Run and sequence. line = codec.encode(item); crc: see _sqlite
#     harness_source_runs(run_id, root_run_id, thread_id, last_sequence, terminal, last_position, crc)
#     primary key run_id; one row per Run (a root Run has root_run_id = run_id),
#     in the order of the Runs' first items
#
# A Run that delegates publishes one stream in which its child Runs' items
# (each Run numbering its own from 0) are interleaved with its own
# (core/reduce.py). That stream, in arrival order, is the Run's retained
# history: what ``read_prefix`` gives back for a resume, and what a handoff
# cursor points into. A cursor is a *position*: the index of an item in its
# root's stream, counted from the first sequence (0), so for a Run that
# delegates nothing an item's position is its sequence.
#
# Each row holds one item in the project's wire format (the JSON line of
# ``codec.encode``, which carries its own version ``v``), so a journal written
# by this release is read by a later one through ``codec.decode`` and the
# ``migrations`` the journal is given. One exception: a terminal result whose
# state holds a message history (an a13n-harness ``HarnessState``, the whole
# Thread's history) is stored with that history shared with an earlier result
# of its Thread (``_shared_history``: a row starting ``{"$history":``), so a
# turn stores what it added; readers expand it back to the appended item,
# in the worker thread that reads the page. The other columns are only the keys the
# queries need. A file written by a release whose journal kept one Run per
# table key (no positions) is upgraded when it is first opened for writing:
# each stored Run becomes a stream without children, position = sequence.
#
# ``append`` enforces the order of the stream at write time, inside the one
# transaction that writes the row and the heads: it builds a
# ``StreamCursor`` from the heads of the root and of the item's Run and runs
# the item through ``core.history.advance_stream``, the policy every reader
# shares: each Run's first item carries sequence 0 (the root's:
# ``first_sequence``), every later one the next sequence, a Run's Thread
# never changes, and nothing of the stream follows the root's terminal
# result. Only when that refuses an item at a sequence already stored is the
# slot looked at: a second delivery of the stored item is recognised (same
# decoded value) and ignored, even after the terminal result; a different
# item there is a ``JournalConflictError`` (a SequenceOrderError), or the
# AfterTerminalError the check raised when the stream has ended, as every
# reader reports it (``appended``: the rule of both backends' journals).
# The item is then written by ``write_items`` as a batch of one: the
# journal's one write path, the group commit's too. So the table only ever
# holds contiguous, consistent Runs, and readers still check what they read
# (``check_prefix``, ``check_tail``) because a database file can be edited,
# pruned or restored from elsewhere. Which child Runs a stream may carry
# (announced by a delegation, not yet finished) is the observer's check, not
# the journal's.
#
# Readers page through the table in worker threads (see ``_sqlite``). Rows are
# never updated or deleted by the journal, so a prefix read in several pages
# is the same as one read at once. The one exception is a stream of a single
# item that turns out to be a subagent's first item, appended without its
# root: the child's announcement moves it into its parent's stream
# (``announced_parent``), in the transaction that appends the announcement. ``tail`` polls for rows after the last one
# it yielded and stops after the root's terminal result; polling is cheap
# here (one indexed range query) and needs no cross-process signalling.
#
# Every row is checked as it is read (types and checksum, ``_sqlite``), and a
# row found by its key must carry that key. The head rows are what
# ``cursor``, ``finished``, ``runs`` and ``append`` read; a Run's head is
# checked against the highest sequence the items' index holds for that Run,
# and a root's also against the highest position of its stream, and every
# read that goes to the end of what is stored must reach the head's
# position. So a damaged file that lost or hid the stream's last items (or
# holds items past its head) raises ``DamagedStoreError`` instead of a short
# cursor or a tail that waits for an item it cannot see. Items missing in the
# middle (rows deleted by hand) read as a gap, as they always did: a
# ``SequenceGapError``, raised by the reader at the missing position (whose
# Run may be a child that has no later item to show the hole). To prune a whole Run, delete the rows of its stream
# (``run_id``) from the items table and those of its Runs (``root_run_id``)
# from the heads; a Run whose result a later Run's history is based on is
# pruned with that later Run (prune a Thread from its newest Run back).

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import attrs
from pyrsistent import pmap

from ..core.errors import AfterTerminalError, ForeignRunError, SequenceGapError, SequenceOrderError
from ..core.history import HistoryCursor, StreamCursor, advance_stream
from ..core.membership import announcement
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.codec import DecodeError, Migration, decode, encode, from_json
from ._shared_history import HEAD_CHARS, MARK, HistoryHead, _SharedHistoryError, expand, read_head, stored_form
from ._sqlite import FLAG, INTEGER, TEXT, Column, Database, Table, poll_interval_seconds, rewrite_table
from ._store import Store
from .checks import Cursor, _check_args, check_prefix, check_tail
from .errors import DamagedStoreError, JournalConflictError, ProjectorConflictError
from .writes import Head, Journaled, StreamWrite

__all__ = ["SqliteSourceJournal"]

# The layout of the release before streams: one Run per key, no positions.
_ITEMS_V1 = Table(
    "harness_source_items",
    (Column("run_id", TEXT), Column("sequence", INTEGER), Column("thread_id", TEXT), Column("terminal", FLAG),
     Column("line", TEXT)),
    key=("run_id", "sequence"),
)
_HEADS_V1 = Table(
    "harness_source_runs",
    (Column("run_id", TEXT), Column("thread_id", TEXT), Column("last_sequence", INTEGER), Column("terminal", FLAG)),
    key=("run_id",),
    indexes=(("harness_source_runs_thread", "thread_id"),),
)


def _upgrade_items(conn: Any, path: str) -> None:
    rewrite_table(conn, path, _ITEMS_V1, ITEMS, lambda v: (v[0], v[1], v[0], v[1], v[2], v[3], v[4]))


def _upgrade_heads(conn: Any, path: str) -> None:
    rewrite_table(conn, path, _HEADS_V1, HEADS, lambda v: (v[0], v[0], v[1], v[2], v[3], v[2]))


ITEMS = Table(
    "harness_source_items",
    (Column("run_id", TEXT), Column("position", INTEGER), Column("item_run_id", TEXT), Column("sequence", INTEGER),
     Column("thread_id", TEXT), Column("terminal", FLAG), Column("line", TEXT)),
    key=("run_id", "position"),
    unique=(("harness_source_items_run", "item_run_id, sequence"),),
    upgrades=((_ITEMS_V1.names, _upgrade_items),),
)
HEADS = Table(
    "harness_source_runs",
    (Column("run_id", TEXT), Column("root_run_id", TEXT), Column("thread_id", TEXT),
     Column("last_sequence", INTEGER), Column("terminal", FLAG), Column("last_position", INTEGER)),
    key=("run_id",),
    indexes=(("harness_source_runs_thread", "thread_id"), ("harness_source_runs_root", "root_run_id")),
    upgrades=((_HEADS_V1.names, _upgrade_heads),),
)


HEADS_UPSERT = (f"{HEADS.insert} ON CONFLICT (run_id) DO UPDATE SET last_sequence = excluded.last_sequence, "
                "terminal = excluded.terminal, last_position = excluded.last_position, crc = excluded.crc")


@attrs.frozen
class _Head:
    """A Run's head row, checked against the items' index."""

    root_run_id: str
    thread_id: str
    last_sequence: int
    terminal: bool
    last_position: int

    def cursor(self, run_id: str) -> HistoryCursor:
        return HistoryCursor(run_id, self.thread_id, self.last_sequence + 1, self.terminal)


_PAGE = 256


def announced_parent(item: HarnessStreamEvent) -> str | None:
    """The Run that ``item`` says its own Run is a subagent of, when ``item`` is that Run's announcement
    (``core.membership.announcement``) at its sequence 1; else None.

    A subagent's first item (its ``run_started``, sequence 0) says nothing of its parent: appended without
    ``root_run_id`` it starts a stream of its own. Its announcement does say, and the journals (both
    backends) then move that first item into the stream the parent is in, so that a Host that appends a
    delegating Run's items without ``root_run_id`` still keeps one stream. Shared by both backends."""
    notice = announcement(item) if item.sequence == 1 else None
    if notice is None:
        return None
    parent = notice.parent_run_id
    return parent if parent is not None and parent != item.run_id else None


def adopting_root(item: HarnessStreamEvent, own: Any, first: int, head: Callable[[str], Any]) -> str | None:
    """The root Run whose stream a subagent's Run belongs in, when ``item``
    is its announcement (see ``announced_parent``) arriving without a root
    while its first item, alone at position ``first``, was filed as a stream
    of its own (``own``, the head row of ``item``'s Run); else None. ``head``
    reads a Run's head row. Raises AfterTerminalError when that stream has
    ended. Shared by the journals of both backends."""
    parent = announced_parent(item)
    if parent is None or own is None or own.root_run_id != item.run_id or own.last_sequence != 0 \
            or own.last_position != first or own.terminal:
        return None
    parent_head = head(parent)
    if parent_head is None:
        return None
    root = head(parent_head.root_run_id)
    if root is None or root.root_run_id == item.run_id:
        return None
    if root.terminal:
        raise AfterTerminalError(f"run {item.run_id!r} announces itself as a subagent of run {parent!r}, whose "
                                 f"stream (of run {parent_head.root_run_id!r}) has ended", run_id=item.run_id,
                                 sequence=item.sequence)
    return str(parent_head.root_run_id)


def check_append(item: Any, root_run_id: Any) -> None:
    """``append()``'s arguments: TypeError for a value that is not a source item, ValueError for a blank
    ``root_run_id``. Shared by the journals of both backends."""
    if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
        raise TypeError(f"append() takes a Harness source item, not {type(item).__name__}")
    if root_run_id is not None and (not isinstance(root_run_id, str) or not root_run_id.strip()):
        raise ValueError(f"root_run_id must be a non-blank str or None, not {root_run_id!r}")


def appended(item: HarnessStreamEvent, line: str, root_id: str, root: _Head | None, own: _Head | None, first: int,
             *, stored: Callable[[int], str | None], decode: Callable[[str], Any]) -> StreamWrite | None:
    """What ``append()`` writes for ``item`` (stored as ``line``) at the end of the stream of ``root_id``,
    whose stored head is ``root`` (None: no item yet; ``first`` is its first sequence) and that of the
    item's Run ``own``: the write of one item (``write_items``, ``postgres.writes``), or None for a
    second delivery of the item stored at its slot (``stored(sequence)`` reads the line there, None if
    none; ``decode`` decodes it). Raises the ``HistoryError`` of ``advance_stream`` for an item that is
    not its Run's next one, ``JournalConflictError`` for a different item at a stored slot of a stream
    that has not ended. Shared by the journals of both backends."""
    if root is None:
        cursor = StreamCursor.of(root_id, first_sequence=first)
    else:
        children = pmap() if own is None or item.run_id == root_id else pmap({item.run_id: own.cursor(item.run_id)})
        cursor = StreamCursor(root.cursor(root_id), children, root.last_position + 1, opened=True)
    try:
        after = advance_stream(cursor, item)
    except (SequenceOrderError, AfterTerminalError) as e:
        mine = cursor.cursor_of(item.run_id)
        if mine is not None and item.sequence < mine.next_sequence:  # a stored slot, perhaps: a second delivery
            there = stored(item.sequence)
            if there is not None:
                if there == line or decode(there) == item:
                    return None
                if isinstance(e, SequenceOrderError):
                    raise JournalConflictError(item.run_id, item.sequence, expected=mine.next_sequence) from None
        raise
    position = after.next_position - 1
    terminal = isinstance(item, HarnessRunResultEvent)
    heads: tuple[Head, ...] = (Head(item.run_id, item.thread_id, item.sequence, terminal, position),)
    if root is not None and item.run_id != root_id:  # the root's head holds the stream's last position
        heads += (Head(root_id, root.thread_id, root.last_sequence, root.terminal, position),)
    return StreamWrite(root_run_id=root_id, thread_id=item.thread_id, journal_last=cursor.last_position,
                       items=(Journaled(position, item.run_id, item.sequence, item.thread_id, terminal, line),),
                       heads=heads)


class _SourceJournal(Store):
    # What the journals of both backends share: the reads of a root Run's head and its checked prefix,
    # over what each backend says for itself: ``_head`` (a Run's head row, in an open transaction),
    # ``_read_root`` (a root Run's head, read alone) and ``_pages`` (the stream's items by position).

    _first: int

    def cursor(self, run_id: str) -> Cursor:
        """The position of the last item stored in the stream of root Run ``run_id``, None if none is
        (for a Run without child Runs, the sequence of its last item). Raises ValueError for the id of a
        child Run (its items are read through its root's stream), ``DamagedStoreError`` if the Run's head
        is damaged or disagrees with its items."""
        head = self._read_root(run_id)
        return None if head is None else head.last_position

    def finished(self, run_id: str) -> bool:
        """Whether the terminal result of root Run ``run_id`` is stored. Raises as ``cursor`` does."""
        head = self._read_root(run_id)
        return head is not None and head.terminal

    def thread_of(self, run_id: str) -> str | None:
        """The Thread of root Run ``run_id``, None if the journal holds none of its items. Raises as
        ``cursor`` does (ValueError for a child Run's id)."""
        head = self._read_root(run_id)
        return None if head is None else head.thread_id

    def read_prefix(self, run_id: str, *, through: Cursor) -> AsyncIterator[HarnessStreamEvent]:
        """The exact prefix of root Run ``run_id``'s stream up to and including position ``through``, checked.

        Returns an async iterator of the stored items in stream order (child
        items included), to be passed to ``HarnessAguiObserver.resume()``;
        ``through=None`` is the empty prefix. It raises the ``check_prefix``
        errors (``HistoryError``s, which leave a resuming observer fresh): in
        particular ``IncompletePrefixError`` when the journal does not hold
        the stream up to ``through``. A stored line that cannot be decoded
        raises DecodeError naming the run and sequence, a damaged row
        ``DamagedStoreError`` naming it (nothing of it is yielded). Bad
        arguments raise ValueError or TypeError from this call.
        """
        items = self._pages(run_id, through)
        return check_prefix(items, run_id=run_id, through=through, first_sequence=self._first)

    def _root(self, conn: Any, run_id: str) -> _Head | None:
        # The head of root Run ``run_id`` (None: not stored); ValueError for a child Run's: its items are
        # read through its root's stream.
        head = self._head(conn, run_id)
        if head is not None and head.root_run_id != run_id:
            raise ValueError(f"run {run_id!r} is a child Run in the stream of run {head.root_run_id!r}: its items "
                             "are read through that stream")
        return head

    # What each backend says (see the class comment).
    _head: Callable[[Any, str], _Head | None]
    _read_root: Callable[[str], _Head | None]
    _pages: Callable[[str, int | None], AsyncIterator[HarnessStreamEvent]]


class SqliteSourceJournal(_SourceJournal):
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
    def synchronous(self) -> str:
        """SQLite's durability level the journal writes with (``FULL``, ``NORMAL``, ...)."""
        return self._db.synchronous

    # -- writing -----------------------------------------------------------------

    def append(self, item: HarnessStreamEvent, *, root_run_id: str | None = None) -> bool:
        """Store one source item durably, at the end of its root Run's stream, in one transaction.

        The stream is that of ``root_run_id``: the Run whose public stream
        the Host is reading. Left out, it is the stream the item's Run
        already belongs to, or, for a Run the journal does not know, a new
        stream whose root is the item's own Run; a subagent's first item
        filed so is moved into the stream of the Run that delegated to it
        when its announcement (its sequence 1) comes (``announced_parent``),
        so a delegating Run's items appended without ``root_run_id`` still
        make one stream. An item of a Run other than
        the root is a child item: a new child Run joins the root's stream
        (which must exist) with its first item, at sequence 0.

        Returns True when the item was written, False when the identical item
        was already stored at its (run id, sequence) (a duplicate delivery;
        nothing is written). Raises TypeError for a value that is not a
        source item, ValueError for a blank ``root_run_id``; otherwise the
        ``HistoryError`` of ``core.history.advance_stream`` for an item that
        is not its Run's next one: ``JournalConflictError`` (a
        ``SequenceOrderError``) when a different item is stored at that slot
        of a stream that has not ended, ``SequenceOrderError`` for an earlier
        sequence that was never stored, ``SequenceGapError`` for a skipped
        sequence (or a root's first item not at ``first_sequence``),
        ``AfterTerminalError`` after the root's terminal result (or the
        Run's own), ``ForeignRunError`` when a Run's Thread would change,
        when ``root_run_id`` names another stream than the one the item's
        Run belongs to, when the root's stream does not exist yet for a
        child item, or for a child Run whose first item is not at sequence
        0; DecodeError when the stored item it is compared with cannot be
        decoded; ``ReadOnlyStoreError`` on a read-only journal;
        ``DamagedStoreError`` when a stored row it reads is damaged; sqlite3
        errors for storage failures. On any error nothing is written.

        It blocks until the commit is durable (an fsync with the default
        ``synchronous="FULL"``); from a busy event loop, call it through
        ``asyncio.to_thread``: each thread has its own connection.
        """
        check_append(item, root_run_id)
        run_id, seq = item.run_id, item.sequence
        with self._db.write("append", ITEMS) as conn:
            line = self._stored_line(conn, item)
            own = self._head(conn, run_id)
            if root_run_id is None and own is not None and own.root_run_id == run_id:
                adopted = self._adopting_root(conn, item, own)
                if adopted is not None:  # a subagent's first item was filed as a stream of its own: move it
                    self._move_first_item(conn, run_id, adopted)
                    own, root_run_id = self._head(conn, run_id), adopted
            root_id = own.root_run_id if own is not None else root_run_id if root_run_id is not None else run_id
            if root_run_id is not None and root_run_id != root_id:
                raise ForeignRunError(f"an item of run {run_id!r}, which belongs to the stream of run {root_id!r}, "
                                      f"appended to the stream of run {root_run_id!r}", run_id=root_run_id,
                                      sequence=seq, found_run_id=run_id, found_thread_id=item.thread_id)
            root = own if root_id == run_id else self._head(conn, root_id)
            if root is not None and root.root_run_id != root_id:
                # ``root_run_id`` names a child Run (say a middle subagent): its items live in the
                # stream of its own root, so writing this item under it would file it in a stream
                # that does not exist and overwrite the child's head with a root's row (whose
                # checksum then no longer matches: the store would read as damaged).
                raise ForeignRunError(f"an item of run {run_id!r} appended to the stream of run {root_id!r}, "
                                      f"which is a child Run in the stream of run {root.root_run_id!r}",
                                      run_id=root_id, sequence=seq, found_run_id=run_id,
                                      found_thread_id=item.thread_id)
            if root_id != run_id and root is None:
                raise ForeignRunError(f"an item of run {run_id!r} for the stream of run {root_id!r}, which holds "
                                      "no item yet", run_id=root_id, sequence=seq, found_run_id=run_id,
                                      found_thread_id=item.thread_id)
            write = appended(item, line, root_id, root, own, self._first, stored=lambda s: self._line(conn, run_id, s),
                             decode=lambda stored: self._decode(stored, run_id, seq, conn))
            if write is None:
                return False
            write_items(self, conn, [write], verify=False)
        return True

    def _adopting_root(self, conn: Any, item: HarnessStreamEvent, own: _Head | None) -> str | None:
        return adopting_root(item, own, self._first, lambda run_id: self._head(conn, run_id))

    def _move_first_item(self, conn: Any, run_id: str, root_id: str) -> None:
        # The one item of ``run_id``'s own stream goes to the end of ``root_id``'s, as a child's first item.
        row = conn.execute(f"SELECT {ITEMS.select} FROM {ITEMS.name} WHERE run_id = ? AND position = ?",
                           (run_id, self._first)).fetchone()
        if row is None:
            raise ITEMS.damaged(self.path, None, "missing: the run's head holds one item", run_id=run_id)
        _, _, item_run, seq, thread_id, terminal, line = ITEMS.checked(self.path, row)
        root = self._head(conn, root_id)
        assert root is not None
        position = root.last_position + 1
        conn.execute(f"DELETE FROM {ITEMS.name} WHERE run_id = ? AND position = ?", (run_id, self._first))
        conn.execute(f"DELETE FROM {HEADS.name} WHERE run_id = ?", (run_id,))
        conn.execute(ITEMS.insert, ITEMS.sealed((root_id, position, item_run, seq, thread_id, terminal, line)))
        conn.execute(HEADS.insert, HEADS.sealed((run_id, root_id, thread_id, seq, terminal, position)))
        conn.execute(HEADS_UPSERT, HEADS.sealed((root_id, root_id, root.thread_id, root.last_sequence,
                                                 int(root.terminal), position)))

    # -- reading -----------------------------------------------------------------

    def stream_cursor(self, run_id: str, *, through: Cursor) -> StreamCursor:
        """Where each Run of root Run ``run_id``'s stream stands after position ``through`` (None: before
        the first item): the cursor a writer continues the stream from, or a reader a tail. Raises
        ValueError for a child Run's id or a position beyond what is stored, ``DamagedStoreError`` for
        rows that do not fit together."""
        if through is None:
            return StreamCursor.of(run_id, first_sequence=self._first)
        start, terminal, stored = self._handoff(run_id, through)
        if not stored or start is None:
            raise ValueError(f"the journal does not hold the stream of run {run_id!r} through position {through}")
        return start

    def root_of(self, run_id: str) -> str | None:
        """The root Run of the stream that holds Run ``run_id`` (itself for a root), None if unknown.
        Raises ``DamagedStoreError`` for a damaged head."""
        head = self._read_head(run_id)
        return None if head is None else head.root_run_id

    def runs(self, thread_id: str | None = None) -> tuple[str, ...]:
        """The root run ids stored (of one Thread, if given), in the order their first item was appended.
        Child Runs are not listed: their items are in their root's stream (``root_of``).
        Raises ``DamagedStoreError`` for a damaged head row, or one missing or at odds with its items.
        Reads the whole index of the items table."""
        where, args = ("", ()) if thread_id is None else (" WHERE thread_id = ?", (thread_id,))
        with self._db.read(HEADS, "the runs") as conn:
            rows = conn.execute(f"SELECT {HEADS.select} FROM {HEADS.name}{where} ORDER BY rowid", args).fetchall()
            heads = [HEADS.checked(self.path, row) for row in rows]
            for head, row in zip(heads, rows, strict=True):
                if thread_id is not None and head[2] != thread_id:
                    raise HEADS.damaged(self.path, head, f"the index gave this row for thread {thread_id!r:.80}",
                                        row[0])
                self._head(conn, head[0])  # it agrees with the Run's items
            orphan = conn.execute(f"SELECT item_run_id FROM {ITEMS.name} WHERE item_run_id NOT IN "
                                  f"(SELECT run_id FROM {HEADS.name}) LIMIT 1").fetchone()
        if orphan is not None:
            raise HEADS.damaged(self.path, None, f"missing, while {ITEMS.name} holds items of the run",
                                run_id=orphan[0])
        return tuple(head[0] for head in heads if head[0] == head[1])

    def tail(self, run_id: str, *, after: Cursor, poll_interval: float | None = None,
             ) -> AsyncIterator[HarnessStreamEvent]:
        """Every item of root Run ``run_id``'s stream after position ``after``, following new appends.

        Returns an async iterator that yields the stored items after the
        cursor, then waits (polling every ``poll_interval`` seconds, the
        journal's default if None) for each next one, and ends after the
        root's terminal result; if the item at ``after`` is that result it
        ends at once. Its first item is the one right after ``after``, so a
        prefix read ``through`` the same cursor and this tail have neither gap
        nor overlap; each Run's order is checked from where the prefix left
        it (a cursor beyond what is stored yet is waited for). Raises the
        ``check_tail`` errors, and ``AfterTerminalError`` when
        ``after`` lies beyond the stored terminal result; ValueError for the
        id of a child Run; a damaged row raises as for ``read_prefix``.
        Cancelling the consuming task stops it cleanly.
        """
        interval = self._poll_interval if poll_interval is None else poll_interval_seconds(poll_interval)
        _check_args(run_id, after, self._first)  # now: a bad cursor must not be waited for
        return self._checked_tail(run_id, after, interval)

    # -- internals -----------------------------------------------------------------

    def _decode(self, line: str, run_id: str, seq: int, conn: Any) -> HarnessStreamEvent:
        # A stored line: a wire line, or a result whose history is shared with earlier ones of its Thread
        # (``_shared_history``), whose bases are read with ``conn`` (in its transaction). In a worker thread.
        try:
            if not line.startswith(MARK):
                return decode(line, migrations=self._migrations)
            try:
                data = expand(line, lambda base: self._result_line(conn, base))
            except _SharedHistoryError as e:
                raise ITEMS.damaged(self.path, None, str(e), run_id=run_id, sequence=seq) from None
            except DamagedStoreError:
                raise
            except ValueError as e:
                raise DecodeError(f"malformed JSON: {e}") from None
            return from_json(data, migrations=self._migrations)
        except DecodeError as e:
            raise DecodeError(f"journal row of run {run_id!r} at sequence {seq}: {e.reason}") from e

    def _result_line(self, conn: Any, run_id: str) -> str:
        # The stored line of root Run ``run_id``'s terminal result (a base of a shared history), checked.
        head = self._head(conn, run_id)
        row = None if head is None or not head.terminal or head.root_run_id != run_id \
            else self._row(conn, run_id, head.last_sequence)
        if row is None:
            raise ITEMS.damaged(self.path, None, "missing: a later result of the thread shares its history with "
                                                 "this run's result", run_id=run_id)
        return str(row[6])

    def _stored_line(self, conn: Any, item: HarnessStreamEvent) -> str:
        # The line to store for ``item``: its wire line, or for a result whose state holds a message history,
        # the shared form based on the longest stored history of its Thread it continues. In the writer's
        # transaction (``conn``), in a worker thread.
        if type(item) is not HarnessRunResultEvent or not isinstance(item.result.state, dict):
            return encode(item)
        rows = conn.execute(
            f"SELECT h.run_id, substr(i.line, 1, {HEAD_CHARS}) FROM {HEADS.name} h JOIN {ITEMS.name} i "
            "ON i.item_run_id = h.run_id AND i.sequence = h.last_sequence "
            "WHERE h.thread_id = ? AND h.root_run_id = h.run_id AND h.terminal = 1 AND h.run_id != ?",
            (item.thread_id, item.run_id)).fetchall()
        bases = []
        for run_id, prefix in rows:
            head = read_head(prefix) if isinstance(prefix, str) else None
            if head is not None:
                bases.append(HistoryHead(run_id, *head))
        stored = stored_form(item, bases)
        return encode(item) if stored is None else stored

    def _head(self, conn: Any, run_id: str) -> _Head | None:
        # The head row, and the highest sequence the items' index holds for the Run: they must agree;
        # for a root, the highest position of its stream too.
        row = conn.execute(f"SELECT {HEADS.select} FROM {HEADS.name} WHERE run_id = ?", (run_id,)).fetchone()
        top = conn.execute(f"SELECT MAX(sequence) FROM {ITEMS.name} WHERE item_run_id = ?", (run_id,)).fetchone()[0]
        if row is None:
            if top is not None:
                raise HEADS.damaged(self.path, None, f"missing, while {ITEMS.name} holds items of the run "
                                                     f"(up to sequence {top!r:.40})", run_id=run_id)
            return None
        run, root_id, thread_id, last, terminal, position = HEADS.checked(self.path, row)
        if run != run_id:
            raise HEADS.damaged(self.path, None, f"the index gave the row of run {run!r:.80}", row[0], run_id=run_id)
        self._agrees(run_id, top, last, "sequence", "last sequence")
        if root_id == run_id:
            end = conn.execute(f"SELECT MAX(position) FROM {ITEMS.name} WHERE run_id = ?", (run_id,)).fetchone()[0]
            self._agrees(run_id, end, position, "position", "last position")
        return _Head(root_id, thread_id, last, bool(terminal), position)

    def _agrees(self, run_id: str, top: Any, last: int, column: str, what: str) -> None:
        if top == last:
            return
        if top is not None and type(top) is not int:
            raise ITEMS.damaged(self.path, None, f"column {column} does not hold an integer", run_id=run_id,
                                **{column: top})
        if top is not None and top > last:
            raise ITEMS.damaged(self.path, None, f"beyond the run's {what} {last} ({HEADS.name})",
                                run_id=run_id, **{column: top})
        raise ITEMS.damaged(self.path, None, f"missing: the run's {what} is {last} ({HEADS.name})",
                            run_id=run_id, **{column: last})

    def _line(self, conn: Any, run_id: str, seq: int) -> str | None:
        row = self._row(conn, run_id, seq)
        return None if row is None else str(row[6])

    def _row(self, conn: Any, run_id: str, seq: int) -> tuple[Any, ...] | None:
        # One row by its Run and sequence, checked, and checked to be the row of that key (a damaged
        # index can lead a lookup to another row, whole and with a good checksum).
        row = conn.execute(f"SELECT {ITEMS.select} FROM {ITEMS.name} WHERE item_run_id = ? AND sequence = ?",
                           (run_id, seq)).fetchone()
        if row is None:
            return None
        values = ITEMS.checked(self.path, row)
        if values[2] != run_id or values[3] != seq:
            raise ITEMS.damaged(self.path, values, f"the index gave this row for sequence {seq} of run "
                                                   f"{run_id!r:.80}", row[0])
        return values

    def _read_head(self, run_id: str) -> _Head | None:
        with self._db.read(HEADS, f"the head of run {run_id!r}") as conn:
            return self._head(conn, run_id)

    def _read_root(self, run_id: str) -> _Head | None:
        with self._db.read(HEADS, f"the head of run {run_id!r}") as conn:
            return self._root(conn, run_id)

    def _fetch(self, run_id: str, after: int, through: int | None) -> list[tuple[int, str, Any, int]]:
        # One page of (position, item run id, item, terminal) after position ``after`` (through
        # ``through``), checked; a page that ends what is stored must reach the stream's head. Each line
        # is decoded here, in the worker thread, and in the page's read transaction (a shared history's
        # bases are read in it): a large result is never decoded on the event loop. A line that cannot
        # be decoded gives its error in the item's place, raised by the reader when it reaches it.
        sql = f"SELECT {ITEMS.select} FROM {ITEMS.name} WHERE run_id = ? AND position > ?"
        args: tuple[object, ...] = (run_id, after)
        if through is not None:
            sql += " AND position <= ?"
            args += (through,)
        with self._db.read(ITEMS, f"run {run_id!r} after position {after}") as conn:
            head = self._root(conn, run_id)
            rows = conn.execute(sql + " ORDER BY position LIMIT ?", args + (_PAGE,)).fetchall()
            out: list[tuple[int, str, Any, int]] = []
            for row in rows:
                run, position, item_run, seq, _, terminal, line = ITEMS.checked(self.path, row)
                if run != run_id:
                    raise ITEMS.damaged(self.path, None, f"the run's index gave a row of run {run!r:.80}",
                                        run_id=run_id, position=position)
                try:
                    item: Any = self._decode(line, item_run, seq, conn)
                except (DecodeError, DamagedStoreError) as e:
                    item = e
                out.append((position, item_run, item, terminal))
        if head is not None and len(rows) < _PAGE:
            end = head.last_position if through is None else min(through, head.last_position)
            reached = out[-1][0] if out else after
            if reached < end:
                raise ITEMS.damaged(self.path, None, f"missing: the run's last position is {head.last_position} "
                                                     f"({HEADS.name})", run_id=run_id, position=reached + 1)
        return out

    async def _pages(self, run_id: str, through: int | None) -> AsyncIterator[HarnessStreamEvent]:
        last = self._first - 1
        while True:
            rows = await asyncio.to_thread(self._fetch, run_id, last, through)
            for position, _, item, _ in rows:
                _contiguous(run_id, last, position)
                yield _item(item)
                last = position
            if len(rows) < _PAGE:
                return

    def _handoff(self, run_id: str, after: Cursor) -> tuple[StreamCursor | None, int | None, bool]:
        # The stream cursor at position ``after`` (each Run's next sequence there), the position of
        # the stored terminal result, if any, and whether the stream is stored through ``after`` yet.
        with self._db.read(ITEMS, f"the stream of run {run_id!r} through position {after}") as conn:
            head = self._root(conn, run_id)
            terminal = head.last_position if head is not None and head.terminal else None
            if after is None:
                return None, terminal, True
            if head is None or (head.last_position < after and terminal is None):
                return None, terminal, False
            rows = conn.execute(f"SELECT item_run_id, thread_id, MAX(sequence), MAX(terminal) FROM {ITEMS.name} "
                                "WHERE run_id = ? AND position <= ? GROUP BY item_run_id, thread_id",
                                (run_id, after)).fetchall()
        runs = {}
        for item_run, thread_id, last, ended in rows:
            if item_run in runs:
                raise ITEMS.damaged(self.path, None, "the run's items name more than one thread", run_id=item_run)
            runs[item_run] = HistoryCursor(item_run, thread_id, last + 1, bool(ended))
        root = runs.pop(run_id, None)
        if root is None:  # nothing of the root through ``after``: the check reports what the tail holds
            return None, terminal, True
        return StreamCursor(root, pmap(runs), after + 1, opened=True), terminal, True

    async def _checked_tail(self, run_id: str, after: Cursor, interval: float) -> AsyncIterator[HarnessStreamEvent]:
        # A cursor beyond what is stored yet (a copy of the journal that lags behind the delivery log,
        # a cursor from elsewhere) is waited for, as a tail always did: each Run's next sequence at
        # ``after`` can only be read once the stream holds ``after``. Taken from a shorter stream, the
        # cursor would expect the items in between after ``after`` and call the next one a gap.
        while True:
            start, terminal, stored = await asyncio.to_thread(self._handoff, run_id, after)
            if stored:
                break
            await asyncio.sleep(interval)
        items = self._follow(run_id, after, terminal, interval)
        async for item in check_tail(items, run_id=run_id, after=after if start is None else start,
                                     first_sequence=self._first):
            yield item

    async def _follow(self, run_id: str, after: Cursor, terminal: int | None, interval: float,
                      ) -> AsyncIterator[HarnessStreamEvent]:
        last = self._first - 1 if after is None else after
        if terminal is not None and last >= terminal:
            if last > terminal:
                raise AfterTerminalError(f"the tail cursor lies beyond the terminal result at position {terminal}",
                                         run_id=run_id, sequence=last)
            return
        while True:
            rows = await asyncio.to_thread(self._fetch, run_id, last, None)
            for position, item_run, item, terminal_flag in rows:
                _contiguous(run_id, last, position)
                yield _item(item)
                last = position
                if terminal_flag and item_run == run_id:
                    return
            if not rows:
                await asyncio.sleep(interval)


def write_items(journal: SqliteSourceJournal, conn: Any, writes: Sequence[StreamWrite], *, verify: bool) -> None:
    """Append supervisors' items (``host.batch``) inside the caller's write transaction: the rows and the
    heads as the drivers computed them, all writes' rows in one statement per table. A second writer on a
    stream collides on a row's key (an IntegrityError that fails the batch). With ``verify``, each
    stream's stored head is read first: a write whose rows are already there is skipped,
    ProjectorConflictError if another writer's rows are."""
    rows: list[tuple[Any, ...]] = []
    heads: list[tuple[Any, ...]] = []
    for write in writes:
        if any(i.line is None for i in write.items):  # a result's line: written here, off the event loop
            write = attrs.evolve(write, items=tuple(
                i if i.line is not None else attrs.evolve(i, line=journal._stored_line(conn, i.item))
                for i in write.items))
        if not write.items or (verify and _already_appended(journal, conn, write)):
            continue
        root = write.root_run_id
        rows += [ITEMS.sealed((root, i.position, i.run_id, i.sequence, i.thread_id, int(i.terminal), i.line))
                 for i in write.items]
        heads += [HEADS.sealed((h.run_id, root, h.thread_id, h.last_sequence, int(h.terminal), h.last_position))
                  for h in write.heads]
    if rows:
        conn.executemany(ITEMS.insert, rows)
        conn.executemany(HEADS_UPSERT, heads)


def _already_appended(journal: SqliteSourceJournal, conn: Any, write: StreamWrite) -> bool:
    head = journal._root(conn, write.root_run_id)
    return appended_already(write, None if head is None else head.last_position, lambda positions: dict(conn.execute(
        f"SELECT position, line FROM {ITEMS.name} WHERE run_id = ? AND position IN (?, ?)",
        (write.root_run_id, *positions)).fetchall()))


def appended_already(write: StreamWrite, found: int | None, lines: Callable[[tuple[int, int]], Any]) -> bool:
    """Whether the items of ``write`` (a retry's) are stored already, given the stream's stored last
    position ``found`` and ``lines(positions)``, the stored lines at the write's first and last positions:
    False when they are due, ProjectorConflictError when another writer's are there. Shared by the journals
    of both backends."""
    if found == write.journal_last:
        return False
    first, last = write.items[0], write.items[-1]
    ends = {first.position: first.wire_line(), last.position: last.wire_line()}
    if found is not None and found >= last.position and lines((first.position, last.position)) == ends:
        return True  # committed before the connection was lost, or by the batch's first attempt
    raise ProjectorConflictError(run_id=write.root_run_id, cursor=write.journal_last, found=found, reason=(
        f"another writer appended to the run's stream since this one read it (it expected the stream's last "
        f"position at {write.journal_last}, found {found})"))


def _item(decoded: Any) -> HarnessStreamEvent:
    # A row's item as ``_fetch`` decoded it, or the error it met.
    if isinstance(decoded, BaseException):
        raise decoded
    return decoded  # type: ignore[no-any-return]


def _contiguous(run_id: str, last: int, position: int) -> None:
    # Positions are given out one by one in the append's transaction, so a stream read back in
    # position order holds every position. A row missing in the middle of the stream (deleted by
    # hand) is a retention gap, whoever's item it held: the per-Run checks alone do not see the
    # last item of a child Run that is missing (no later item of that Run shows the hole), and a
    # tail would pass over it, so the position itself is checked here.
    if position != last + 1:
        missing = f"{last + 1}" if position == last + 2 else f"{last + 1} to {position - 1}"
        raise SequenceGapError(f"position {missing} of the stream missing", run_id=run_id, sequence=position,
                               expected=last + 1)
