# One PostgreSQL database shared by the kit's stores: a connection pool, the
# tables, per-key write locks, and the LISTEN/NOTIFY wake-ups of followers.
#
# Connections. Each store holds a ``psycopg_pool.ConnectionPool`` of
# autocommit connections; a read or a write borrows one for one explicit
# transaction (``read()``, ``write()``) and gives it back. The pool checks a
# connection before it lends it, so a session the server ended meanwhile (a
# restart, ``pg_terminate_backend``) is replaced, not handed to a caller. The calls are
# synchronous, like the SQLite stores', and the async readers run them in
# worker threads (``asyncio.to_thread``), so that a page of history never
# stalls the event loop. Writes run at READ COMMITTED and take a
# transaction-scoped advisory lock on the key they change (a stream's root
# run id, a Run of the delivery log) before they read anything: so the
# checks made in the transaction still hold when it commits, writers of
# different keys never wait for each other, and each statement after the
# lock sees every commit made before it was granted. (Two-int advisory locks,
# the first int naming the kit's table, the second ``hashtext`` of the key:
# two keys that hash alike merely share a lock.)
#
# Schema. ``CREATE TABLE IF NOT EXISTS`` is not safe when two processes run
# it at once (both may try to create the same type), so the schema is made
# under a transaction-scoped advisory lock of its own, by whichever store
# opens a new database first; a database that holds the tables is not
# written. The tables found must have the columns this release writes.
#
# Wake-ups. A write that commits something a follower waits for sends
# ``NOTIFY <channel>, <key>`` in its transaction: PostgreSQL delivers it on
# commit, to every connection that LISTENs, in every process. Each store
# opens at most one listening connection, in one daemon thread, the first
# time a follower waits; the thread hands each notification to the asyncio
# events of the followers waiting for that key (``call_soon_threadsafe``).
# A follower registers its event *before* it reads, so a commit between its
# read and its wait still wakes it. If the listening connection is lost, the
# thread reconnects and then wakes every follower, since notifications sent
# in between are lost: each re-reads, so none misses a commit. Followers do
# not poll; they also re-read after ``recheck`` seconds without a
# notification (a long safety interval, 30 s by default), so a network that
# silently drops a connection delays a follower, never strands it. A server
# that cannot LISTEN at all (a hot standby: NOTIFY does not reach replicas)
# leaves followers re-reading every ``recheck`` seconds; a store opened on a
# replica should be given a short one.

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ..errors import DamagedStoreError, ReadOnlyStoreError

log = logging.getLogger("harness_agui.host.postgres")

# The first int of the kit's advisory locks; the second names the key.
LOCK_SCHEMA = 0x48414700  # "HAG\0"
LOCK_JOURNAL = 0x48414701
LOCK_DELIVERY = 0x48414702
LOCK_LEASE = 0x48414703
LOCK_WORKER = 0x48414704
LOCK_THREAD = 0x48414705  # one Run at a time per Thread (the server's start of a Run)

JOURNAL_CHANNEL = "harness_agui_journal"
DELIVERY_CHANNEL = "harness_agui_delivery"
STREAMS_CHANNEL = "harness_agui_streams"  # a new stream (its root run id): work for the workers


def redacted(url: str) -> str:
    """The URL without its password, to name the database in errors and reprs."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<postgresql database>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def notify_key(key: str) -> str:
    """A NOTIFY payload naming ``key`` (payloads are limited to 8000 bytes; a long key is hashed)."""
    if len(key) <= 200:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def unused_poll_interval(value: float | None, recheck: float) -> float:
    """``recheck``, once ``value`` (the ``poll_interval`` of the SQLite stores' followers, which nothing
    here polls with) is None or a number of seconds > 0; else ValueError."""
    if value is not None and (isinstance(value, bool) or not value > 0):
        raise ValueError(f"poll_interval must be a number of seconds > 0, not {value!r}")
    return recheck


class Database:
    """A pool of connections to one database, with the tables of one store."""

    def __init__(self, url: str, *, schema: Sequence[str], tables: Mapping[str, tuple[str, ...]], read_only: bool,
                 min_size: int, max_size: int, timeout: float, recheck: float) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"a postgresql:// URL is needed, not {url!r:.80}")
        if not isinstance(read_only, bool):
            raise TypeError(f"read_only must be a bool, not {type(read_only).__name__}")
        if isinstance(recheck, bool) or not isinstance(recheck, (int, float)) or not recheck > 0:
            raise ValueError(f"recheck must be a number of seconds > 0, not {recheck!r}")
        self.url = url
        self.path = redacted(url)
        self.read_only = read_only
        self.recheck = float(recheck)
        options = {"autocommit": True}
        # check: a pooled connection is tried (an empty query) before it is handed out, and replaced
        # when the server ended its session meanwhile (a restart, pg_terminate_backend, a network blip).
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url, kwargs=options, min_size=min_size, max_size=max_size, timeout=timeout, open=False,
            name=f"harness-agui {self.path}", check=ConnectionPool.check_connection)
        self._closed = False
        self._listener: _Listener | None = None
        self._listener_lock = threading.Lock()
        try:
            self._pool.open(wait=True, timeout=timeout)
            if not read_only:
                self._set_up(schema)
            self._check_columns(tables)
        except BaseException:
            self.close()
            raise

    def _set_up(self, schema: Sequence[str]) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
            for statement in schema:
                conn.execute(statement)  # type: ignore[arg-type]

    def _check_columns(self, tables: Mapping[str, tuple[str, ...]]) -> None:
        with self.read() as conn:
            for table, columns in tables.items():
                found = tuple(r[0] for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                    "AND table_name = %s ORDER BY ordinal_position", (table,)))
                if not found:
                    raise DamagedStoreError("no such table (a read-only store creates nothing)", path=self.path,
                                            table=table)
                if found != columns:
                    raise DamagedStoreError(f"its columns are ({', '.join(found)}), not ({', '.join(columns)}): "
                                            "not written by this release", path=self.path, table=table)

    @contextmanager
    def read(self, table: object = None, reading: str | None = None) -> Iterator[psycopg.Connection[Any]]:
        """One read-only transaction (REPEATABLE READ: every statement sees one snapshot). ``table`` and
        ``reading`` are what a SQLite read names in its errors, taken for the same call and not used."""
        self._check_open()
        with self._pool.connection() as conn:
            # Set on the connection, these go into the BEGIN statement itself: no extra round trip.
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            with conn.transaction():
                yield conn

    @contextmanager
    def write(self, operation: str, lock: tuple[int, str] | None = None) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction, holding the advisory lock ``(class, key)`` when given."""
        self._check_open()
        if self.read_only:
            raise ReadOnlyStoreError(operation, path=self.path)
        with self._pool.connection() as conn:
            conn.isolation_level = None  # the server's default, READ COMMITTED: see the module comment
            conn.read_only = None
            with conn.transaction():
                if lock is not None:
                    self.lock(conn, lock)
                yield conn

    @staticmethod
    def lock(conn: psycopg.Connection[Any], lock: tuple[int, str]) -> None:
        """Take the advisory lock ``(class, key)`` for the rest of ``conn``'s transaction."""
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", lock)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection, for statements that manage their own transactions, and for a
        read of one statement: that sees one snapshot by itself, without ``read()``'s BEGIN and COMMIT
        (two round trips of the three a lookup would otherwise take once its connection is checked)."""
        self._check_open()
        with self._pool.connection() as conn:
            conn.isolation_level = None
            conn.read_only = None
            yield conn

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the store of {self.path} is closed")

    # -- wake-ups ----------------------------------------------------------------------

    async def listening(self) -> None:
        """Wait until the listening connection listens (at once, after the first time), or at most
        5 s: a server that cannot LISTEN (a hot standby, where NOTIFY does not reach) leaves the
        followers re-reading every ``recheck`` seconds, which is then what they do."""
        listener = self._listener
        assert listener is not None
        if not listener.ready.is_set() and not await asyncio.to_thread(listener.ready.wait, min(5.0, self.recheck)):
            if not listener.warned:
                listener.warned = True
                log.warning("%s: cannot LISTEN (%s): followers re-read every %s s instead", self.path,
                            listener.error, self.recheck)
        if self._closed:
            raise ValueError(f"the store of {self.path} is closed")

    @asynccontextmanager
    async def changes(self, channel: str, key: str | None) -> AsyncIterator[Callable[[float], Awaitable[None]]]:
        """A wait of at most the given seconds for a notification for ``key`` on ``channel`` (any key, for
        None), registered for the life of the block; call from the event loop. The block starts once the
        listening connection listens (``listening``), so no commit made after it starts is missed."""
        self._check_open()
        with self._listener_lock:
            if self._listener is None:
                self._listener = _Listener(self.url)
            listener = self._listener
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        listener.add(channel, key, entry)
        try:
            await self.listening()
            yield lambda seconds: self.wait(event, seconds)
        finally:
            listener.remove(channel, key, entry)

    async def wait(self, event: asyncio.Event, seconds: float | None = None) -> None:
        """Wait for ``event`` (at most ``seconds``, ``recheck`` if None), then clear it.

        ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11, ``wait_for`` loses a
        cancellation that arrives just as the event is set, and the follower would never end."""
        try:
            async with asyncio.timeout(self.recheck if seconds is None else seconds):
                await event.wait()
        except TimeoutError:
            pass
        event.clear()

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True
        with self._listener_lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self._pool.close()

    @property
    def closed(self) -> bool:
        return self._closed


_Entry = tuple[asyncio.AbstractEventLoop, asyncio.Event]


class _Listener:
    """One LISTENing connection in a daemon thread, waking the asyncio events registered per (channel, key)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._lock = threading.Lock()
        self._waiters: dict[tuple[str, str | None], list[_Entry]] = {}
        self._closed = False
        self._error: BaseException | None = None
        self.warned = False
        self.ready = threading.Event()
        self._conn: psycopg.Connection[Any] | None = None
        self._thread = threading.Thread(target=self._run, name="harness-agui-listen", daemon=True)
        self._thread.start()

    def add(self, channel: str, key: str | None, entry: _Entry) -> None:
        with self._lock:
            self._waiters.setdefault((channel, None if key is None else notify_key(key)), []).append(entry)

    def remove(self, channel: str, key: str | None, entry: _Entry) -> None:
        with self._lock:
            entries = self._waiters.get((channel, None if key is None else notify_key(key)), [])
            if entry in entries:
                entries.remove(entry)
            if not entries:
                self._waiters.pop((channel, None if key is None else notify_key(key)), None)

    @property
    def error(self) -> BaseException | None:
        """Why the last attempt to listen failed, if it did."""
        return self._error

    def _wake(self, entries: list[_Entry]) -> None:
        for loop, event in entries:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the loop is closed: its follower is gone
                pass

    def _wake_key(self, channel: str, key: str) -> None:
        with self._lock:
            entries = list(self._waiters.get((channel, key), ())) + list(self._waiters.get((channel, None), ()))
        self._wake(entries)

    def _wake_all(self) -> None:
        with self._lock:
            entries = [e for es in self._waiters.values() for e in es]
        self._wake(entries)

    def _run(self) -> None:
        pause = 0.05
        while not self._closed:
            try:
                with psycopg.connect(self._url, autocommit=True) as conn:
                    self._conn = conn
                    conn.execute(f"LISTEN {JOURNAL_CHANNEL}")
                    conn.execute(f"LISTEN {DELIVERY_CHANNEL}")
                    conn.execute(f"LISTEN {STREAMS_CHANNEL}")
                    self._error = None
                    self.ready.set()
                    self._wake_all()  # what was sent while nobody listened: everyone re-reads
                    pause = 0.05
                    while not self._closed:
                        for note in conn.notifies(timeout=0.5):
                            self._wake_key(note.channel, note.payload)
            except psycopg.Error as e:
                self._error = e
                self.ready.clear()
                if self._closed:
                    return
                self._wake_all()
                threading.Event().wait(pause)
                pause = min(pause * 2, 2.0)
            finally:
                self._conn = None

    def close(self) -> None:
        self._closed = True
        self.ready.set()
