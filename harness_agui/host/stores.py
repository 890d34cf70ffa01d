# The stores of a Host, as every part of the kit sees them: one Protocol per
# store (``SourceJournal``, ``DeliveryLog``, ``CheckpointStore``), which the
# SQLite and the PostgreSQL classes both satisfy (the contract suite in
# tests/contract runs one set of tests on both), and one entry point that
# opens a database's two stores, whichever backend holds them: a SQLite file
# for one machine, PostgreSQL for several workers. The PostgreSQL classes are
# imported only for a postgresql:// URL, so the SQLite kit keeps needing
# nothing but the standard library.
#
# ``Stores`` is what the run supervisor drives: a journal and a delivery log
# on ONE database, so that an item and its events commit in one transaction,
# and the batched writer of that database (``host.batch``). ``stores_of``
# builds it from the two stores; the backend decides how a batch is written.

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from ag_ui.core import BaseEvent, RunErrorEvent

from ..core.encode import EncodedEvent
from ..core.history import StreamCursor
from ..core.observer import HarnessAguiObserver
from ..core.source import HarnessStreamEvent
from .checks import Cursor

__all__ = ["open_stores", "is_postgres_url", "SourceJournal", "DeliveryLog", "CheckpointStore", "Stores",
           "stores_of"]

_SQLITE_ONLY = ("synchronous", "poll_interval")
_POSTGRES_ONLY = ("pool_size", "recheck")


@runtime_checkable
class SourceJournal(Protocol):
    """A source journal (``SqliteSourceJournal``, ``PostgresSourceJournal``): the retained stream of
    each root Run, see ``SqliteSourceJournal`` for the contract of every method."""

    @property
    def path(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    def append(self, item: HarnessStreamEvent, *, root_run_id: str | None = None) -> bool: ...

    def cursor(self, run_id: str) -> Cursor: ...

    def finished(self, run_id: str) -> bool: ...

    def root_of(self, run_id: str) -> str | None: ...

    def runs(self, thread_id: str | None = None) -> tuple[str, ...]: ...

    def thread_of(self, run_id: str) -> str | None: ...

    def stream_cursor(self, run_id: str, *, through: Cursor) -> StreamCursor: ...

    def read_prefix(self, run_id: str, *, through: Cursor) -> AsyncIterator[HarnessStreamEvent]: ...

    def tail(self, run_id: str, *, after: Cursor, poll_interval: float | None = None,
             ) -> AsyncIterator[HarnessStreamEvent]: ...

    def close(self) -> None: ...


@runtime_checkable
class DeliveryLog(Protocol):
    """A delivery log (``SqliteDeliveryLog``, ``PostgresDeliveryLog`` and its fenced view): durable
    event ids per root Run; see ``SqliteDeliveryLog`` for the contract of every method."""

    @property
    def path(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent | EncodedEvent], *,
               root_run_id: str | None = None, expected_cursor: Any = ...) -> tuple[Any, ...]: ...

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Any: ...

    def cursor(self, run_id: str) -> Cursor: ...

    def last_event_id(self, run_id: str) -> int: ...

    def finished(self, run_id: str) -> bool: ...

    def replay(self, run_id: str, *, after: str | int | None = None) -> tuple[Any, ...]: ...

    def page(self, run_id: str, *, after: int, limit: int = ...) -> Any: ...

    def follow(self, run_id: str, *, after: str | int | None = None, poll_interval: float | None = None,
               ) -> AsyncIterator[Any]: ...

    def sse(self, run_id: str, *, last_event_id: str | int | None = None, poll_interval: float | None = None,
            ) -> AsyncIterator[str]: ...

    def close(self) -> None: ...


@runtime_checkable
class CheckpointStore(Protocol):
    """A checkpoint store (``SqliteCheckpointStore``): sealed checkpoints of Runs' projections."""

    @property
    def key(self) -> bytes: ...

    def offer(self, run_id: str, observer: HarnessAguiObserver, *,
              processor_identity: str | None = None) -> Any: ...

    def positions(self, run_id: str) -> list[int]: ...

    def load(self, run_id: str, position: int) -> Any: ...

    def close(self) -> None: ...


class Stores(Protocol):
    """A journal and a delivery log on one database, and how that database writes a batch: what the
    run supervisor (``host.supervisor``) drives. Made by ``stores_of``."""

    @property
    def journal(self) -> SourceJournal: ...

    @property
    def deliveries(self) -> DeliveryLog: ...

    def writer(self, policy: Any) -> Any:
        """A new ``host.batch.BatchWriter`` for this database (one per supervisor)."""
        ...

    def lost(self, error: BaseException) -> bool:
        """Whether ``error`` says the database cannot be reached for now (read again later), rather
        than that the read or write itself is wrong."""
        ...

    def changes(self, run_id: str) -> AbstractAsyncContextManager[Callable[[float], Awaitable[Any]]]:
        """For as long as the block lasts, an awaitable ``wait(seconds)`` that returns when another
        process may have recorded events of ``run_id`` since the block began or the last wait (a NOTIFY
        on PostgreSQL), or after ``seconds`` (all SQLite can do: it has no notification)."""
        ...


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` is a ``postgresql://`` (or ``postgres://``) URL rather than a file path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def open_stores(target: str | os.PathLike[str], **options: Any) -> tuple[Any, Any]:
    """The source journal and the delivery log of one database: ``(journal, deliveries)``.

    ``target`` is a SQLite file path (``SqliteSourceJournal`` and
    ``SqliteDeliveryLog`` on that one file) or a ``postgresql://`` URL
    (``PostgresSourceJournal`` and ``PostgresDeliveryLog``, which need the
    ``postgres`` extra). ``options`` go to both constructors (for example
    ``read_only=True``); an option the chosen backend does not have is
    ignored, so one call serves both: ``synchronous``, ``poll_interval``
    are SQLite's (PostgreSQL followers are woken by NOTIFY), ``pool_size``
    and ``recheck`` PostgreSQL's. Raises what the constructors raise;
    ImportError naming the extra when a URL is given without psycopg
    installed. Close both when done.
    """
    postgres = is_postgres_url(target)
    for name in (_SQLITE_ONLY if postgres else _POSTGRES_ONLY):
        options.pop(name, None)
    if postgres:
        try:
            from .postgres import PostgresDeliveryLog, PostgresSourceJournal
        except ImportError as e:  # pragma: no cover - depends on the installation
            raise ImportError(f"a postgresql:// database needs the postgres extra: pip install "
                              f"'harness-agui[postgres]' ({e})") from e
        journal_pg = PostgresSourceJournal(str(target), **options)
        try:
            return journal_pg, PostgresDeliveryLog(str(target), **options)
        except BaseException:
            journal_pg.close()
            raise
    from .delivery import SqliteDeliveryLog
    from .journal import SqliteSourceJournal

    journal = SqliteSourceJournal(target, **options)
    try:
        return journal, SqliteDeliveryLog(target, **options)
    except BaseException:
        journal.close()
        raise


def stores_of(journal: SourceJournal, deliveries: DeliveryLog) -> Stores:
    """The ``Stores`` of a journal and a delivery log of ONE database (the same SQLite file, or the same
    PostgreSQL database), which the supervisor writes an item and its events to in one transaction.

    Raises TypeError for stores of another kind, ValueError for stores of two databases or of two
    backends, or read-only ones."""
    from .delivery import SqliteDeliveryLog
    from .journal import SqliteSourceJournal

    if journal.read_only or deliveries.read_only:
        raise ValueError("the stores a supervisor drives must be writable (read_only=False)")
    if isinstance(journal, SqliteSourceJournal) and isinstance(deliveries, SqliteDeliveryLog):
        if os.path.realpath(journal.path) != os.path.realpath(deliveries.path):
            raise ValueError(f"the journal ({journal.path}) and the delivery log ({deliveries.path}) must share one "
                             "database: an item and its events are committed in one transaction")
        from .batch import SqliteStores

        return SqliteStores(journal, deliveries)
    try:
        from .postgres import PostgresDeliveryLog, PostgresSourceJournal
        from .postgres.batch import PostgresStores
    except ImportError:  # pragma: no cover - depends on the installation
        PostgresSourceJournal = PostgresDeliveryLog = None  # type: ignore[assignment,misc]
    if PostgresSourceJournal is not None and isinstance(journal, PostgresSourceJournal) \
            and isinstance(deliveries, PostgresDeliveryLog):
        if journal.url != deliveries.url:
            raise ValueError(f"the journal ({journal.path}) and the delivery log ({deliveries.path}) must share one "
                             "database: an item and its events are committed in one transaction")
        return PostgresStores(journal, deliveries)
    raise TypeError(f"no supervisor backend for a {type(journal).__name__} and a {type(deliveries).__name__}: "
                    "give the SQLite or the PostgreSQL stores of one database")
