# Group commit on PostgreSQL (see ``host.batch`` for the design): the
# supervisor's writes of every Run of a process, committed by one writer
# thread on a connection of its own (not the stores' pool, so no write ever
# waits for a connection a reader holds), in one transaction per batch,
# written by the stores' one write path (``writes.write_streams``: the
# leases, the rows of every table, the NOTIFYs). A second writer on a Run
# collides on a primary key or finds the delivery row moved: the batch is
# rolled back and its writes are committed one by one, each after reading
# the Run's rows (``verify``), so that only the write at fault fails.
#
# A connection lost mid-batch (the server restarted, sessions terminated)
# is reopened under ``retry.RECONNECT``, and the batch's writes are then
# committed one by one with ``verify``: a write whose commit went through
# before the connection broke is found already there and not written twice.

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import psycopg
import psycopg_pool

from ..batch import BatchWriter, GroupCommit
from ..writes import StreamWrite
from ._pg import DELIVERY_CHANNEL
from .bindings import PostgresRunBindings
from .delivery import PostgresDeliveryLog
from .journal import PostgresSourceJournal
from .lease import PostgresLeases
from .locks import ThreadLocks
from .writes import _ARRAYS_FROM as _ARRAYS_FROM  # where a batch is large (its tests import it from here)
from .writes import write_streams

__all__ = ["PostgresStores", "connection_lost"]


def connection_lost(error: BaseException) -> bool:
    """Whether ``error`` says a connection to the database is gone or cannot be had for now (the
    server restarted, the session was terminated, the pool had none): worth trying again."""
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout,
                              ConnectionError))


class PostgresStores:
    """A ``PostgresSourceJournal`` and a ``PostgresDeliveryLog`` of one database, as the supervisor
    drives them."""

    def __init__(self, journal: PostgresSourceJournal, deliveries: PostgresDeliveryLog) -> None:
        self.journal = journal
        self.deliveries = deliveries
        self._bindings: PostgresRunBindings | None = None

    @property
    def bindings(self) -> PostgresRunBindings:
        """The wire <-> source bindings of the database's Runs (``host.postgres.bindings``)."""
        if self._bindings is None:
            self._bindings = PostgresRunBindings(self.journal.url)
        return self._bindings

    def close(self) -> None:
        """Close what this object opened (the bindings); the journal and the log are the caller's."""
        if self._bindings is not None:
            self._bindings.close()

    def writer(self, policy: GroupCommit | None = None) -> BatchWriter:
        return BatchWriter(_Backend(self.journal.url), policy, name=f"harness-agui writer {self.journal.path}")

    def leases(self, ttl: float) -> PostgresLeases:
        return PostgresLeases(self.journal.url, ttl=ttl)

    def thread_locks(self) -> ThreadLocks:
        return ThreadLocks(self.journal.url)

    def lost(self, error: BaseException) -> bool:
        return connection_lost(error)

    @contextlib.asynccontextmanager
    async def changes(self, run_id: str) -> AsyncIterator[Callable[[float], Awaitable[Any]]]:
        """A wait for the NOTIFY of a record of ``run_id`` by any process (or the given seconds); the
        block starts once the listening connection listens, so no commit made after it is missed."""
        db = self.deliveries._db
        with db.waiting(DELIVERY_CHANNEL, run_id) as event:
            await db.listening()

            async def wait(seconds: float) -> None:
                await db.wait(event, seconds)

            yield wait


class _Backend:
    def __init__(self, url: str) -> None:
        self.url = url

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True)

    def lost(self, error: BaseException) -> bool:
        return connection_lost(error)

    def close(self, session: psycopg.Connection[Any]) -> None:
        session.close()

    def commit(self, session: psycopg.Connection[Any], writes: Sequence[StreamWrite], *, verify: bool) -> None:
        with session.transaction():
            write_streams(session, writes, verify=verify)
