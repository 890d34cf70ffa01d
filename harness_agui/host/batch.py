# Group commit: the items and events of every Run of a process, written to
# their database in batched transactions by one writer thread.
#
# Theory of operation. Each Run's driver (``host.supervisor``) holds the
# Run's cursors in memory, checks each item once, projects it, and describes
# what must be committed as a ``StreamWrite``: the journal rows of its items,
# the head rows after them, the event rows with their ids, the delivery row
# after them, and what the database must hold before (the stream's last
# position, the delivery cursor and last event id). It hands that to the
# ``BatchWriter`` of the database and awaits the commit; only then are the
# events sent to anyone. So each item is durable, with its events, before
# any of its events leaves the process, at synchronous=FULL as at NORMAL.
#
# The writer is one thread with its own connection, fed by a queue: no
# thread hop per item, and no write ever waits behind a reader (readers use
# other connections; SQLite's WAL and PostgreSQL's MVCC keep them apart). It
# takes what is queued, waits at most ``GroupCommit.max_delay`` for more
# while the batch holds fewer than ``max_items`` items, and commits the whole
# batch in ONE transaction: one fsync per batch, not per item. Under load
# the batches grow by themselves (what queues during one commit is the next
# batch); when the load is light a write waits at most ``max_delay``.
#
# It waits only for company that can come. A Run's driver awaits each
# commit before it writes again, so the Runs already in the batch add
# nothing to it; only another Run can. The writer keeps the Runs it saw
# write in the last ``ACTIVE`` seconds (a Run's last write, the one that
# ends it, takes it off), and stops waiting once each of them is in the
# batch: one Run at a time commits each write at once, many share fsyncs.
#
# Each store has one write path, and a batch is what it writes: the
# journal's rows go through ``journal.write_items``, the delivery log's
# through ``delivery.write_records`` (on PostgreSQL both through
# ``postgres.writes.write_streams``). The stores' one-item methods
# (``append``, ``record``, ``fail``) check their item against what the
# database holds, under the write lock, and write it as a batch of one.
# Nothing in a driver's batch is checked again by rule: the driver's
# in-memory cursors already said the items are in order. The database still
# fences every write: the rows' keys are dense positions and event ids, so
# a second writer on a Run collides on a primary key, and the delivery row
# is updated only where it holds the cursor and last id the driver expects
# (PostgreSQL also checks the Run's lease in the same transaction). A batch
# that fails is rolled back and its writes are committed again one by one,
# each after reading what the database holds: a write whose rows are
# already there (its commit went through before a connection was lost) is
# done; one that finds another writer's rows fails with
# ``ProjectorConflictError`` (``LeaseLostError`` on PostgreSQL); one that
# cannot be written fails with the store's error. Only the write at fault
# fails: the others of its batch commit. A lost connection is reopened and
# the batch tried again under ``retry.RECONNECT``.

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs

from ..core.errors import HarnessAguiError
from ._sqlite import Database
from .bindings import SqliteRunBindings
from .delivery import SqliteDeliveryLog, write_records
from .journal import SqliteSourceJournal, write_items
from .retry import RECONNECT, RetryPolicy
from .writes import Head, Journaled, Recorded, StreamWrite

__all__ = ["GroupCommit", "StreamWrite", "Journaled", "Head", "Recorded", "BatchWriter", "WriterClosedError"]


def _positive_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, not {value!r}")


def _seconds(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{attribute.name} must be a number of seconds >= 0, not {value!r}")


def _seconds_or_none(owner: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _seconds(owner, attribute, value)


@attrs.frozen
class GroupCommit:
    """How the writer groups writes into transactions.

    A batch closes when it holds ``max_items`` source items (of all Runs), or ``max_delay`` seconds
    after its first write was taken, whichever comes first; what queued meanwhile goes into it. 0
    for ``max_delay`` commits what is queued at once. Larger batches cost fewer fsyncs per item;
    ``max_delay`` is the most a write waits for company when the load is light.

    ``switch_interval``: while the writer has writes queued or committing and at most ``switch_runs``
    Runs write (those that wrote in the last ``ACTIVE`` seconds), the interpreter's thread switch
    interval (``sys.setswitchinterval``) is at most this many seconds; it is set back to what it was
    once the writer is idle or more Runs write. The writer thread, and the database driver around each
    statement, let go of the GIL and must take it back; behind an event loop kept busy (an agent
    working between two of its items) each take waits a whole interval, 5 ms by default: a Run's first
    write took 10-15 ms from submit to commit where it needs about 1. With many Runs writing, the long
    interval is what lets batches grow: the short one cost 20-40% more CPU per event at 100 Runs
    (``bench.serve_load``), for lower latency. None leaves the interval alone."""

    max_items: int = attrs.field(default=512, validator=_positive_int)
    max_delay: float = attrs.field(default=0.002, validator=_seconds)
    switch_interval: float | None = attrs.field(default=0.00005, validator=_seconds_or_none)
    switch_runs: int = attrs.field(default=2, validator=_positive_int)


class Backend(Protocol):
    """How one database writes batches; its methods run in the writer thread only."""

    def connect(self) -> Any:
        """A new session (connection) for the writer."""
        ...

    def commit(self, session: Any, writes: Sequence[StreamWrite], *, verify: bool) -> None:
        """Commit ``writes`` in one transaction, or raise and commit nothing. With ``verify`` (one
        write, after a failed batch): read what the database holds first, do nothing if the write is
        already there, raise ``ProjectorConflictError`` if another writer's rows are."""
        ...

    def lost(self, error: BaseException) -> bool:
        """Whether ``error`` says the session's connection is gone (reconnect and try again)."""
        ...

    def close(self, session: Any) -> None: ...


class WriterClosedError(HarnessAguiError, RuntimeError):
    """A write was submitted to a writer that was closed; nothing was written."""


_STOP = object()
_Entry = tuple[StreamWrite, asyncio.Future[None]]

ACTIVE = 1.0
"""Seconds after its last write that a Run still counts as one whose next write may join a batch."""


class BatchWriter:
    """One database's writer thread (see the module comment). ``submit`` from the event loop; ``close``
    when done. The thread starts with the first write."""

    def __init__(self, backend: Backend, policy: GroupCommit | None = None, *, name: str = "harness-agui writer",
                 reconnect: RetryPolicy = RECONNECT) -> None:
        self.backend = backend
        self.policy = policy or GroupCommit()
        self.reconnect = reconnect
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._name = name
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._active: dict[str, float] = {}  # written by the writer thread: root run id -> when it last wrote
        self._switching = False  # whether this writer holds the switch interval low (GroupCommit)
        self.batches = 0
        self.items = 0

    def submit(self, write: StreamWrite) -> asyncio.Future[None]:
        """Queue ``write``; the future is done when it is committed (its result None) or refused (the
        store's error; nothing of that write was written). Call from the event loop."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._closed:
                raise WriterClosedError("the writer is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put((write, future))
            if not self._switching and len(self._active) <= self.policy.switch_runs:
                self._switching = _SWITCHES.lower(self.policy.switch_interval)  # set back by _idle
        return future

    def _idle(self, *, stopped: bool = False) -> None:
        with self._lock:
            if self._switching and (stopped or self._queue.empty() or len(self._active) > self.policy.switch_runs):
                self._switching = False
                _SWITCHES.restore()

    def close(self) -> None:
        """Commit what is queued, then stop the thread. Blocking (call it in a thread from a loop);
        closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(_STOP)
            thread.join()

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        session: Any = None
        try:
            while True:
                batch, stop = self._take()
                if batch:
                    session, results = self._commit(session, batch)
                    _settle_soon(results)
                    self._idle()
                if stop:
                    return
        finally:
            self._idle(stopped=True)
            if session is not None:
                with contextlib.suppress(Exception):
                    self.backend.close(session)

    def _take(self) -> tuple[list[_Entry], bool]:
        first = self._queue.get()
        if first is _STOP:
            return [], True
        batch: list[_Entry] = [first]
        size = first[0].size
        now = time.monotonic()
        deadline = now + self.policy.max_delay
        active = self._active
        for root in [r for r, seen in active.items() if seen < now - ACTIVE]:
            del active[root]
        waiting = set(active)  # the Runs whose next write could still join this batch
        self._saw(first[0], now, waiting)
        while size < self.policy.max_items:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                wait = deadline - time.monotonic()
                if wait <= 0 or not waiting:
                    break
                try:
                    entry = self._queue.get(timeout=wait)
                except queue.Empty:
                    break
            if entry is _STOP:
                self._queue.put(_STOP)  # after this batch
                break
            batch.append(entry)
            size += entry[0].size
            self._saw(entry[0], time.monotonic(), waiting)
        return batch, False

    def _saw(self, write: StreamWrite, now: float, waiting: set[str]) -> None:
        root = write.root_run_id
        waiting.discard(root)
        if write.finished:
            self._active.pop(root, None)
        else:
            self._active[root] = now

    def _commit(self, session: Any, batch: list[_Entry]) -> tuple[Any, list[tuple[asyncio.Future[None], Any]]]:
        writes = [w for w, _ in batch]
        try:
            session = self._session(session)
            self.backend.commit(session, writes, verify=False)
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            if session is not None and self.backend.lost(e):
                with contextlib.suppress(Exception):
                    self.backend.close(session)
                session = None
            # One by one, each after reading what the database holds: only the write at fault fails.
            results = []
            for write, future in batch:
                session, outcome = self._one(session, write)
                results.append((future, outcome))
            return session, results
        self.batches += 1
        self.items += sum(w.size for w in writes)
        return session, [(future, None) for _, future in batch]

    def _one(self, session: Any, write: StreamWrite) -> tuple[Any, BaseException | None]:
        pauses = self.reconnect.pauses()
        while True:
            try:
                session = self._session(session)
                self.backend.commit(session, [write], verify=True)
                self.items += write.size
                return session, None
            except Exception as e:
                if session is not None and self.backend.lost(e):
                    with contextlib.suppress(Exception):
                        self.backend.close(session)
                    session = None
                pause = next(pauses, None) if self.backend.lost(e) else None
                if pause is None:
                    return session, e
                time.sleep(pause)

    def _session(self, session: Any) -> Any:
        if session is not None:
            return session
        return self.reconnect.call(self.backend.connect, self.backend.lost)


class _SwitchInterval:
    # The interpreter's switch interval, held low while any writer has writes queued or committing
    # (``GroupCommit.switch_interval``: from the submit that finds its writer idle, so the thread's own
    # wake-up does not wait either) and set back to what it was when the last one is idle. One per
    # process: the writers of several databases may be busy at once.

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._saved = 0.0

    def lower(self, interval: float | None) -> bool:
        """Hold the interval at most ``interval`` (True), or leave it alone when None (False)."""
        if not interval:
            return False
        with self._lock:
            if self._holders == 0:
                self._saved = sys.getswitchinterval()
            self._holders += 1
            if interval < sys.getswitchinterval():
                sys.setswitchinterval(interval)
        return True

    def restore(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                sys.setswitchinterval(self._saved)


_SWITCHES = _SwitchInterval()


def _settle_soon(results: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    # One callback per event loop per batch (not per write) resolves the batch's futures.
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], BaseException | None]]] = {}
    for future, outcome in results:
        by_loop.setdefault(future.get_loop(), []).append((future, outcome))
    for loop, entries in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for these any more
            loop.call_soon_threadsafe(_settle, entries)


def _settle(entries: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for future, outcome in entries:
        if future.done():  # the driver was cancelled meanwhile: the write is whole either way
            continue
        if outcome is None:
            future.set_result(None)
        else:
            future.set_exception(outcome)


# -- the stores a supervisor drives -----------------------------------------------------------

class DatabaseStores:
    """A journal and a delivery log of one database, as the supervisor drives them (``host.protocols.Stores``),
    and the database's Run bindings (``bindings``, opened on first use, closed by ``close()``)."""

    def __init__(self, journal: Any, deliveries: Any) -> None:
        self.journal = journal
        self.deliveries = deliveries
        self._bindings: Any = None

    @property
    def bindings(self) -> Any:
        """The wire <-> source bindings of the database's Runs (``host.bindings``)."""
        if self._bindings is None:
            self._bindings = self._open_bindings()
        return self._bindings

    def close(self) -> None:
        """Close what this object opened (the bindings); the journal and the log are the caller's."""
        if self._bindings is not None:
            self._bindings.close()

    def changes(self, run_id: str) -> contextlib.AbstractAsyncContextManager[Callable[[float], Awaitable[Any]]]:
        """A wait for records of ``run_id`` made by another process, of at most the given seconds: woken by
        PostgreSQL's NOTIFY (the block starts once the listening connection listens, so no commit made
        after it is missed); SQLite has no notification, so it sleeps (the caller polls; one poller per Run
        per process)."""
        return self.deliveries._changes(run_id)  # type: ignore[no-any-return]

    def _open_bindings(self) -> Any:
        raise NotImplementedError


class SqliteStores(DatabaseStores):
    """A ``SqliteSourceJournal`` and a ``SqliteDeliveryLog`` on one file (see ``DatabaseStores``)."""

    journal: SqliteSourceJournal
    deliveries: SqliteDeliveryLog

    def _open_bindings(self) -> SqliteRunBindings:
        return SqliteRunBindings(self.journal.path, synchronous=self.journal.synchronous)

    def writer(self, policy: GroupCommit | None = None) -> BatchWriter:
        return BatchWriter(_SqliteBackend(self.journal, self.deliveries), policy,
                           name=f"harness-agui writer {self.journal.path}")

    def leases(self, ttl: float) -> None:
        return None  # one process drives a file's Runs: nothing to lease

    def thread_locks(self) -> None:
        return None  # the process's own locks are all a file's starts need

    def lost(self, error: BaseException) -> bool:
        return False  # a file does not go away: a SQLite error is the call's own


class _SqliteBackend:
    def __init__(self, journal: SqliteSourceJournal, deliveries: SqliteDeliveryLog) -> None:
        self.journal = journal
        self.deliveries = deliveries

    def connect(self) -> Database:
        return self.journal._db  # its connection for the writer thread is the thread's own

    def commit(self, session: Any, writes: Sequence[StreamWrite], *, verify: bool) -> None:
        with session.write("commit a batch") as conn:
            write_items(self.journal, conn, writes, verify=verify)
            write_records(self.deliveries, conn, writes, verify=verify)

    def lost(self, error: BaseException) -> bool:
        return False  # a file does not go away: a SQLite error is the write's own

    def close(self, session: Any) -> None:
        pass
