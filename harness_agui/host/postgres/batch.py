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

from collections.abc import Sequence
from typing import Any

import psycopg
import psycopg_pool

from ..batch import BatchWriter, DatabaseStores, GroupCommit
from ..writes import StreamWrite
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


class PostgresStores(DatabaseStores):
    """A ``PostgresSourceJournal`` and a ``PostgresDeliveryLog`` of one database (see ``host.batch.DatabaseStores``)."""

    journal: PostgresSourceJournal
    deliveries: PostgresDeliveryLog

    def _open_bindings(self) -> PostgresRunBindings:
        return PostgresRunBindings(self.journal.url)

    def writer(self, policy: GroupCommit | None = None) -> BatchWriter:
        return BatchWriter(_Backend(self.journal.url), policy, name=f"harness-agui writer {self.journal.path}")

    def leases(self, ttl: float) -> PostgresLeases:
        return PostgresLeases(self.journal.url, ttl=ttl)

    def thread_locks(self) -> ThreadLocks:
        return ThreadLocks(self.journal.url)

    lost = staticmethod(connection_lost)


class _Backend:
    def __init__(self, url: str) -> None:
        self.url = url

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True)

    lost = staticmethod(connection_lost)

    def close(self, session: psycopg.Connection[Any]) -> None:
        session.close()

    def commit(self, session: psycopg.Connection[Any], writes: Sequence[StreamWrite], *, verify: bool) -> None:
        with session.transaction():
            write_streams(session, writes, verify=verify)
