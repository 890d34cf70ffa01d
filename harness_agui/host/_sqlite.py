# One SQLite database file, opened once per thread; its tables, and how a
# row read back is known to be the row that was written.
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
# read is an explicit read transaction (``read()``), so that the statements
# in it see one snapshot, and a write is an explicit ``BEGIN IMMEDIATE`` ...
# ``COMMIT`` (``write()``), which takes the write lock up front so that the
# checks made inside the transaction still hold when it commits. The file is
# in WAL mode, so readers (in this process or another) never block the
# writer or each other, and a commit is one append to the write-ahead log.
# ``synchronous`` defaults to FULL: a committed write survives a power cut,
# not only a crash of the process (NORMAL keeps the latter guarantee and is
# much cheaper).
#
# Opening. A new file is put in WAL mode and given its tables. Several
# processes may open the same new file at once, and SQLite answers the
# journal-mode switch with "database is locked" at once, without waiting,
# when waiting could deadlock (this connection holds a read lock while
# another holds the write lock), busy timeout or not. So the open is a loop:
# look (the mode, the tables), change only what is missing, and on
# SQLITE_BUSY / SQLITE_LOCKED sleep a little and look again, until
# ``timeout`` has passed; then the error is raised. A file that is already
# set up is not written at all. The tables found must have exactly the
# columns this release writes.
#
# Read-only. ``read_only=True`` opens every connection with the URI
# ``file:...?mode=ro``: SQLite refuses any write, and ``write()`` refuses
# before it starts (``ReadOnlyStoreError``). Nothing is created: the file and
# its tables must exist. To read a WAL file SQLite needs its ``-shm`` index;
# where that file is missing and the directory is read-only (a replica on
# read-only media), the file is opened as immutable (``immutable=1``): SQLite
# then takes no locks and assumes nobody changes the file while it is open,
# which holds on such media. In a writable directory SQLite creates the
# empty ``-wal`` / ``-shm`` companions as for any reader; the database file
# itself is never written.
#
# Damage. Every table has a ``crc`` column: the CRC-32 of the row's values
# (each value's length and UTF-8 text, in column order). A row read back is
# checked before anything of it is used: each value must have its column's
# type (text, integer, or a 0/1 flag; SQLite stores whatever it is given, so
# a raw write can put text in an integer column), and the checksum must
# match. Text that is not UTF-8 is read as ``_NotText`` instead of raising
# (the connection's ``text_factory``), so that the check can name the row.
# SQLite's own reports of a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB, and
# an error message that is not UTF-8 because it quotes a damaged schema,
# which sqlite3 raises as UnicodeDecodeError) are turned into the same
# ``DamagedStoreError``. Together these mean a damaged
# row is refused, never served as a different event. (A damaged index can
# still hide a row from a query; that reads as a row that is not there, which
# the history checks and the delivery log's id checks report.)

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from .errors import DamagedStoreError, ReadOnlyStoreError, StorageError

_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
_NO_SHM = (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY)

TEXT, INTEGER, FLAG = "text", "integer", "flag"
_SQL_TYPES = {TEXT: "TEXT", INTEGER: "INTEGER", FLAG: "INTEGER"}


class _NotText(bytes):
    """Stored text that is not UTF-8: what the text factory gives instead of raising."""

    def __repr__(self) -> str:
        return f"<not UTF-8: {bytes(self)[:40]!r}>"


def _text(data: bytes) -> str | _NotText:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _NotText(data)


def _code(error: sqlite3.Error) -> int:
    return (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF


def checksum(values: Sequence[Any]) -> int:
    """The CRC-32 a row's ``crc`` column holds: of each value's length in bytes, a colon and its UTF-8
    text, in order."""
    parts = []
    for value in values:
        text = value if type(value) is str else str(value)
        # Joined as text and encoded once: an ASCII value's length in bytes is its length.
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        parts.append(f"{size}:{text}")
    return zlib.crc32("".join(parts).encode("utf-8", "surrogatepass"))


@attrs.frozen
class Column:
    name: str
    kind: str  # TEXT, INTEGER or FLAG

    def holds(self, value: Any) -> bool:
        if self.kind == TEXT:
            return type(value) is str
        return type(value) is int and (self.kind == INTEGER or value in (0, 1))


@attrs.frozen(slots=False)  # not slotted: the SQL texts below are computed once, on first use
class Table:
    """A table of the kit: its columns (the ``crc`` column is added), its key, its indexes."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    indexes: tuple[tuple[str, str], ...] = ()  # (index name, column list)
    unique: tuple[tuple[str, str], ...] = ()  # unique indexes, the same way
    # The upgrades from earlier releases' layouts of this table: (their column names without crc,
    # a function(conn, path) that rewrites the table in this layout inside the open's transaction).
    upgrades: tuple[tuple[tuple[str, ...], Any], ...] = ()

    def upgrade_from(self, columns: tuple[str, ...]) -> Any:
        """The upgrade of a table found with ``columns`` (crc included), None for none."""
        return next((up for names, up in self.upgrades if columns == (*names, "crc")), None)

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @functools.cached_property
    def select(self) -> str:
        """The column list of a checked read: ``rowid``, every column, ``crc``."""
        return ", ".join(("rowid", *self.names, "crc"))

    @functools.cached_property
    def insert(self) -> str:
        names = (*self.names, "crc")
        return f"INSERT INTO {self.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"

    def schema(self) -> list[str]:
        columns = [f"{c.name} {_SQL_TYPES[c.kind]} NOT NULL" for c in self.columns]
        statements = [f"CREATE TABLE IF NOT EXISTS {self.name} ({', '.join(columns)}, crc INTEGER NOT NULL, "
                      f"PRIMARY KEY ({', '.join(self.key)}))"]
        statements += [f"CREATE INDEX IF NOT EXISTS {name} ON {self.name} ({on})" for name, on in self.indexes]
        statements += [f"CREATE UNIQUE INDEX IF NOT EXISTS {name} ON {self.name} ({on})" for name, on in self.unique]
        return statements

    def sealed(self, values: Sequence[Any]) -> tuple[Any, ...]:
        """The values to insert: ``values`` and their checksum."""
        return (*values, checksum(values))

    def checked(self, path: str, row: Sequence[Any]) -> tuple[Any, ...]:
        """The values of a row read with ``select``, once its types and checksum are right;
        else DamagedStoreError naming the row."""
        rowid, *values, crc = row
        for column, value in zip(self.columns, values, strict=True):
            if not column.holds(value):
                raise self.damaged(path, values, f"column {column.name} holds {_describe(value)}, not "
                                                 f"{'0 or 1' if column.kind == FLAG else column.kind}", rowid)
        if type(crc) is not int or crc != checksum(values):
            raise self.damaged(path, values, "the row's checksum does not match its values", rowid)
        return tuple(values)

    def damaged(self, path: str, values: Sequence[Any] | None, reason: str, rowid: Any = None,
                **key: Any) -> DamagedStoreError:
        """A DamagedStoreError for one row, named by its key (from ``values``, or ``key``)."""
        if values is not None:
            key = {name: value for name, value in zip(self.names, values, strict=False) if name in self.key}
        row = ", ".join(f"{name}={value!r:.80}" for name, value in key.items())
        if rowid is not None:
            row += f" (rowid {rowid})"
        return DamagedStoreError(reason, path=path, table=self.name, row=row or None)


def rewrite_table(conn: sqlite3.Connection, path: str, old: Table, new: Table,
                  convert: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> None:
    """Rewrite table ``old`` (same name, an earlier layout) as ``new``, inside the caller's write
    transaction: every row is checked as ``old`` and stored as ``new`` from ``convert(values)``,
    with its new checksum. A damaged row raises DamagedStoreError and the transaction rolls back."""
    kept = f"{old.name}_upgrading"
    conn.execute(f"ALTER TABLE {old.name} RENAME TO {kept}")
    for name, _ in (*old.indexes, *old.unique):
        conn.execute(f"DROP INDEX IF EXISTS {name}")
    for statement in new.schema():
        conn.execute(statement)
    select = old.select.replace("rowid, ", f"{kept}.rowid, ", 1)
    # In pages by rowid, not with one fetchall(): a journal's table holds every line ever written,
    # and the upgrade should not need the whole file in memory at once.
    last: Any = None
    while True:
        where = "" if last is None else f" WHERE {kept}.rowid > ?"
        rows = conn.execute(f"SELECT {select} FROM {kept}{where} ORDER BY {kept}.rowid LIMIT 512",
                            () if last is None else (last,)).fetchall()
        for row in rows:
            conn.execute(new.insert, new.sealed(convert(old.checked(path, row))))
        if len(rows) < 512:
            break
        last = rows[-1][0]
    conn.execute(f"DROP TABLE {kept}")


def _describe(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, _NotText):
        return "text that is not UTF-8"
    if isinstance(value, str):
        return f"text {value!r:.40}"
    if isinstance(value, bytes):
        return "a blob"
    if isinstance(value, float):
        return f"the real {value!r}"
    return f"{value!r:.40}"


class Database:
    __slots__ = ("path", "read_only", "_uri", "_synchronous", "_timeout", "_tables", "_local", "_lock", "_conns",
                 "_closed")

    _conns: list[tuple[threading.Thread, sqlite3.Connection]]

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str, timeout: float, tables: Sequence[Table],
                 read_only: bool = False) -> None:
        path = os.fspath(path)
        if not isinstance(path, str) or not path or path == ":memory:" or path.startswith("file:"):
            raise ValueError(f"a database file path is needed (in-memory databases are per connection): {path!r}")
        if synchronous.upper() not in _SYNC_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNC_MODES)}, not {synchronous!r}")
        if not isinstance(read_only, bool):
            raise TypeError(f"read_only must be a bool, not {type(read_only).__name__}")
        self.path = path
        self.read_only = read_only
        self._uri: str | None = None
        self._synchronous = synchronous.upper()
        self._timeout = timeout
        self._tables = tuple(tables)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns = []
        self._closed = False
        try:
            if read_only:
                self._open_read_only()
            else:
                self._open()
            self._check_columns()
        except BaseException:
            self.close()
            raise

    # -- opening -----------------------------------------------------------------------

    def _open(self) -> None:
        deadline = time.monotonic() + self._timeout
        pause = 0.001
        while True:
            try:
                with self.damage():
                    self._set_up(self.conn())
                return
            except sqlite3.OperationalError as e:
                if _code(e) not in _BUSY or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _set_up(self, conn: sqlite3.Connection) -> None:
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise ValueError(f"{self.path!r} cannot be put in WAL mode (journal_mode is {mode})")
        if self._missing(conn) or self._outdated(conn) or self._unindexed(conn):
            with self.write("open"):
                for table in self._outdated(conn):
                    table.upgrade_from(self._columns(conn, table))(conn, self.path)
                for table in self._tables:
                    for statement in table.schema():
                        conn.execute(statement)

    def _columns(self, conn: sqlite3.Connection, table: Table) -> tuple[str, ...]:
        return tuple(r[1] for r in conn.execute(f"PRAGMA table_info({table.name})"))

    def _outdated(self, conn: sqlite3.Connection) -> list[Table]:
        # Tables in an earlier release's layout, which the open upgrades.
        return [t for t in self._tables if t.upgrade_from(self._columns(conn, t)) is not None]

    def _open_read_only(self) -> None:
        if not os.path.isfile(self.path):
            raise FileNotFoundError(errno.ENOENT, "no such database file (a read-only store creates nothing)",
                                    self.path)
        base = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
        self._uri = base
        try:
            with self.damage():
                missing = self._missing(self.conn())
        except sqlite3.OperationalError as e:
            # A WAL file without its -shm index, where it cannot be created: SQLite says CANTOPEN on
            # a read-only file system, READONLY in a directory the process may not write.
            if _code(e) not in _NO_SHM or os.path.exists(self.path + "-shm"):
                raise
            self._drop_connections()
            self._uri = base + "&immutable=1"
            with self.damage():
                missing = self._missing(self.conn())
        if missing:
            with self.damage():
                outdated = self._outdated(self.conn())
            if outdated:  # an earlier release's file, which lacked a table this one adds
                raise _earlier(self.path, outdated[0])
            raise StorageError(f"{self.path}: no table {', '.join(missing)}: not a store of this kind, or one "
                               "that was never written (a read-only store creates nothing)")

    def _missing(self, conn: sqlite3.Connection) -> list[str]:
        found = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return [t.name for t in self._tables if t.name not in found]

    def _unindexed(self, conn: sqlite3.Connection) -> bool:
        # Whether an index is missing: a later release may add one to a table an earlier one made (a
        # read-only open goes without it).
        found = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        return any(name not in found for t in self._tables for name, _ in (*t.indexes, *t.unique))

    def _check_columns(self) -> None:
        with self.read() as conn:
            for table in self._tables:
                found = self._columns(conn, table)
                if table.upgrade_from(found) is not None:
                    raise _earlier(self.path, table)
                if found != (*table.names, "crc"):
                    raise DamagedStoreError(
                        f"its columns are ({', '.join(map(str, found))}), not ({', '.join(table.names)}, crc): "
                        f"damaged, or not written by this release", path=self.path, table=table.name)

    # -- connections and transactions -------------------------------------------------------

    def conn(self) -> sqlite3.Connection:
        if self._closed:
            raise ValueError(f"{self.path!r} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._uri is None:
                conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None,
                                       check_same_thread=False)
                conn.execute(f"PRAGMA synchronous={self._synchronous}")
            else:
                conn = sqlite3.connect(self._uri, uri=True, timeout=self._timeout, isolation_level=None,
                                       check_same_thread=False)
            conn.text_factory = _text
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
    def damage(self, table: Table | None = None, reading: str | None = None) -> Iterator[None]:
        """Turn SQLite's reports of a damaged file into DamagedStoreError (``reading`` says what was read)."""
        try:
            yield
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            if isinstance(e, UnicodeDecodeError):
                # sqlite3 decodes SQLite's error messages strictly: one that quotes damaged schema
                # text arrives as this instead of the DatabaseError (values never do: ``_text``).
                reason = f"SQLite reported an error in text that is not UTF-8 ({e.reason})"
            elif _code(e) in _DAMAGED:
                reason = f"SQLite: {e}"
            else:
                raise
            reason += "" if reading is None else f" (reading {reading})"
            raise DamagedStoreError(reason, path=self.path, table=None if table is None else table.name) from e

    @contextmanager
    def write(self, operation: str, table: Table | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed if the block returns, rolled back if it raises.
        Raises ReadOnlyStoreError at once on a read-only store."""
        if self.read_only:
            raise ReadOnlyStoreError(operation, path=self.path)
        with self.damage(table):
            conn = self.conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @contextmanager
    def read(self, table: Table | None = None, reading: str | None = None) -> Iterator[sqlite3.Connection]:
        """One read transaction: every statement in the block sees the same snapshot."""
        with self.damage(table, reading):
            conn = self.conn()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def _drop_connections(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for _, conn in conns:
            conn.close()
        self._local = threading.local()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for _, conn in conns:
            conn.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def synchronous(self) -> str:
        return self._synchronous


def _earlier(path: str, table: Table) -> StorageError:
    return StorageError(f"{path}: table {table.name} has the layout of an earlier release; open the store once "
                        "for writing to upgrade it")


def poll_interval_seconds(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"poll_interval must be a number of seconds > 0, not {value!r}")
    return float(value)
