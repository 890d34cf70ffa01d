# The stores of a Host, as every part of the kit sees them: one Protocol per
# store (``SourceJournal``, ``DeliveryLog``, ``CheckpointStore``), which the
# SQLite and the PostgreSQL classes both satisfy (the contract suite in
# tests/contract runs one set of tests on both), and ``Stores``: a journal and
# a delivery log on one database with that database's batched writer, what
# the run supervisor drives (``host.stores.stores_of`` makes one).

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
from ag_ui.core import BaseEvent, RunErrorEvent

from ..core.encode import EncodedEvent
from ..core.history import StreamCursor
from ..core.observer import HarnessAguiObserver
from ..core.source import HarnessStreamEvent
from .bindings import RunBindings
from .checks import Cursor

if TYPE_CHECKING:  # for the annotations only: these modules import this one, or what does
    from .batch import BatchWriter, GroupCommit
    from .delivery import Delivery, Page
    from .postgres.lease import PostgresLeases
    from .postgres.locks import ThreadLocks

__all__ = ["SourceJournal", "DeliveryLog", "CheckpointStore", "StoredCheckpoint", "Stores"]


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
               root_run_id: str | None = None, expected_cursor: Any = ...) -> tuple[Delivery, ...]: ...

    def fail(self, run_id: str, event: RunErrorEvent, *, expected_cursor: Cursor,
             thread_id: str | None = None) -> Delivery: ...

    def cursor(self, run_id: str) -> Cursor: ...

    def last_event_id(self, run_id: str) -> int: ...

    def finished(self, run_id: str) -> bool: ...

    def replay(self, run_id: str, *, after: str | int | None = None) -> tuple[Delivery, ...]: ...

    def page(self, run_id: str, *, after: int, limit: int = ...) -> Page: ...

    def follow(self, run_id: str, *, after: str | int | None = None, poll_interval: float | None = None,
               ) -> AsyncIterator[Delivery]: ...

    def sse(self, run_id: str, *, last_event_id: str | int | None = None, poll_interval: float | None = None,
            ) -> AsyncIterator[str]: ...

    def close(self) -> None: ...


@attrs.frozen
class StoredCheckpoint:
    """One stored checkpoint: its Run, the stream position of its last item,
    and its bytes."""

    run_id: str
    position: int
    last_sequence: int
    event_count: int
    data: bytes = attrs.field(repr=lambda d: f"<{len(d)} bytes>")


@runtime_checkable
class CheckpointStore(Protocol):
    """A checkpoint store (``SqliteCheckpointStore``): sealed checkpoints of Runs' projections."""

    @property
    def key(self) -> bytes: ...

    def offer(self, run_id: str, observer: HarnessAguiObserver, *,
              processor_identity: str | None = None) -> StoredCheckpoint | None: ...

    def positions(self, run_id: str) -> list[int]: ...

    def load(self, run_id: str, position: int) -> StoredCheckpoint | None: ...

    def close(self) -> None: ...


class Stores(Protocol):
    """A journal and a delivery log on one database, and how that database writes a batch: what the
    run supervisor (``host.supervisor``) drives. Made by ``stores_of``."""

    @property
    def journal(self) -> SourceJournal: ...

    @property
    def deliveries(self) -> DeliveryLog: ...

    @property
    def bindings(self) -> RunBindings:
        """The wire <-> source bindings of the database's Runs (``host.bindings``), opened on first use."""
        ...

    def close(self) -> None:
        """Close what the ``Stores`` opened itself (the bindings); the journal and the log are the caller's."""
        ...

    def writer(self, policy: GroupCommit | None = None) -> BatchWriter:
        """A new ``host.batch.BatchWriter`` for this database (one per supervisor)."""
        ...

    def leases(self, ttl: float) -> PostgresLeases | None:
        """New leases on the database's Runs, for a server that shares it with others (PostgreSQL: a
        ``PostgresLeases`` with ``ttl``, which the caller closes), or None where one process drives every
        Run of the database (SQLite)."""
        ...

    def thread_locks(self) -> ThreadLocks | None:
        """New database-wide locks on Threads, for servers that start Runs on one database (PostgreSQL:
        ``host.postgres.locks.ThreadLocks``, which the caller closes), or None where a Thread's starts
        are locked in the process alone (SQLite)."""
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
