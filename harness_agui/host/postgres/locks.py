# One Run at a time per Thread, across every server on a database: the lock a
# server holds on a Thread from the moment its runner reads the Thread until
# the new Run is registered (its lease taken).
#
# It is a session advisory lock (``pg_advisory_lock``), held on a connection
# for as long as the block lasts: a server that dies releases it with its
# session. The connections are asynchronous (psycopg's AsyncConnection, from a
# pool of their own): a start waiting for a busy Thread waits on the event
# loop, never in a worker thread, so that however many wait, the reads and the
# lease the holder needs to finish never lack a thread or a connection. A
# connection whose lock or unlock did not complete (a cancellation, a lost
# session) is closed rather than given back to the pool, so that no pooled
# connection keeps a Thread locked.

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ._pg import LOCK_THREAD, redacted

__all__ = ["ThreadLocks"]


class ThreadLocks:
    """Database-wide locks on Threads (see the module comment). ``url`` is the database, ``size`` the most
    locks held at once by this process (more wait for a connection), ``timeout`` how long a start waits for
    one. Use ``hold(key)`` from an event loop; ``close()`` when done."""

    def __init__(self, url: str, *, size: int = 16, timeout: float = 30.0) -> None:
        self.name = redacted(url)
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
            url, kwargs={"autocommit": True}, min_size=1, max_size=size, timeout=timeout, open=False,
            name=f"harness-agui thread locks {self.name}", check=AsyncConnectionPool.check_connection)
        self._opened = False

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of ``key`` (a Thread's id) for the block: one block at a time per key across every
        process on the database. Raises what psycopg and its pool raise for a database out of reach."""
        if not self._opened:
            self._opened = True
            await self._pool.open(wait=True)
        async with self._pool.connection() as conn:
            try:
                await conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (LOCK_THREAD, key))
            except BaseException:
                await conn.close()  # the lock may have been granted: the session must not go back to the pool
                raise
            try:
                yield
            finally:
                try:
                    await conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_THREAD, key))
                except BaseException:
                    await conn.close()
                    raise

    async def close(self) -> None:
        """Close the connections (releasing any lock still held). Closing twice is harmless."""
        await self._pool.close()
