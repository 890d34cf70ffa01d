# One SQLite database file, opened once per thread.
#
# A sqlite3 connection must not be used by two threads at once, and the kit
# reads from worker threads (``asyncio.to_thread``) so that a long page of
# history never stalls the event loop, while the Host appends from its own
# thread. So each thread gets its own connection, opened on first use and
# kept in a thread-local; ``close()`` closes all of them (connections are
# opened with ``check_same_thread=False`` only so that this one call may come
# from any thread; no connection is ever shared by two threads otherwise).
#
# Every connection runs in autocommit mode (``isolation_level=None``): a
# read is one statement, or an explicit read transaction when two reads must
# see the same snapshot, and a write is an explicit ``BEGIN IMMEDIATE`` ...
# ``COMMIT``, which takes the write lock up front so that the checks made
# inside the transaction still hold when it commits. The file is in WAL mode,
# so readers (in this process or another) never block the writer or each
# other, and a commit is one append to the write-ahead log. ``synchronous``
# defaults to FULL: a committed write survives a power cut, not only a crash
# of the process (NORMAL keeps the latter guarantee and is much cheaper).

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")


class Database:
    __slots__ = ("path", "_synchronous", "_timeout", "_local", "_lock", "_conns", "_closed")

    _conns: list[tuple[threading.Thread, sqlite3.Connection]]

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str, timeout: float, schema: str) -> None:
        path = os.fspath(path)
        if not isinstance(path, str) or not path or path == ":memory:" or path.startswith("file:"):
            raise ValueError(f"a database file path is needed (in-memory databases are per connection): {path!r}")
        if synchronous.upper() not in _SYNC_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNC_MODES)}, not {synchronous!r}")
        self.path = path
        self._synchronous = synchronous.upper()
        self._timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns = []
        self._closed = False
        conn = self.conn()
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise ValueError(f"{path!r} cannot be put in WAL mode (journal_mode is {mode})")
        with self.write() as c:
            for statement in _statements(schema):
                c.execute(statement)

    def conn(self) -> sqlite3.Connection:
        if self._closed:
            raise ValueError(f"{self.path!r} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            with self._lock:
                if self._closed:
                    conn.close()
                    raise ValueError(f"{self.path!r} is closed")
                ended = [c for t, c in self._conns if not t.is_alive()]
                self._conns = [(t, c) for t, c in self._conns if t.is_alive()]
                self._conns.append((threading.current_thread(), conn))
            for old in ended:
                old.close()
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed if the block returns, rolled back if it raises."""
        conn = self.conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every statement in the block sees the same snapshot."""
        conn = self.conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for _, conn in conns:
            conn.close()

    @property
    def closed(self) -> bool:
        return self._closed


def _statements(schema: str) -> list[str]:
    return [s.strip() for s in schema.split(";") if s.strip()]


def poll_interval_seconds(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"poll_interval must be a number of seconds > 0, not {value!r}")
    return float(value)
