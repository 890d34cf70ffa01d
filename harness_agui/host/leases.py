# PostgreSQL: a supervisor's Runs driven under leases (``host.postgres.lease``
# keeps the rows). A Run started here is driven once this process holds its
# lease; if another server holds it (the same Run started there first), that
# one drives it and this one only serves the log. The ``Worker`` takes every
# Run whose lease is free (its server died, or hung past the lease's ttl):
# a Run started here goes on with its runner's stream, one taken over is
# re-attached to its Harness if it can be. Every write of the driver is
# fenced by the lease in its transaction.

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, Protocol

from ..core.source import HarnessStreamEvent
from .bindings import WireRun
from .driver import DrivenRun, close_stream
from .protocols import DeliveryLog, SourceJournal, Stores
from .retry import RECONNECT

if TYPE_CHECKING:
    from .postgres import FencedDeliveryLog, PostgresLeases

__all__ = ["LeasedDriving"]

log = logging.getLogger("harness_agui.host.supervisor")


class _Supervisor(Protocol):
    # What driving under leases needs of the supervisor that keeps the Runs (``host.supervisor``).
    stores: Stores
    journal: SourceJournal
    deliveries: DeliveryLog
    _runs: dict[str, DrivenRun]

    async def thread_of(self, run_id: str) -> str | None: ...

    def _register(self, run_id: str, thread_id: str, source: AsyncIterable[HarnessStreamEvent] | None, *,
                  wire: WireRun | None = None, reattached: bool = False) -> DrivenRun: ...

    async def _reattached(self, thread_id: str, run_id: str) -> AsyncIterable[HarnessStreamEvent] | None: ...

    async def _drive(self, run: DrivenRun) -> None: ...

    def _forget(self, run: DrivenRun) -> None: ...


class LeasedDriving:
    """Drives ``supervisor``'s Runs under the leases of ``leases`` (see the module comment); ``worker``
    takes over the Runs whose lease is free, looking every ``scan_interval`` seconds."""

    def __init__(self, supervisor: _Supervisor, leases: PostgresLeases, *, scan_interval: float) -> None:
        from .postgres import Worker

        self._supervisor = supervisor
        self.leases = leases
        self.worker = Worker(supervisor.journal, supervisor.deliveries, leases,  # type: ignore[arg-type]
                             drive=self._drive_taken, scan_interval=scan_interval)

    async def drive_started(self, run: DrivenRun) -> None:
        """Take the lease of ``run`` (started here) and drive it under the lease; ``run.registered`` is set
        once the lease is taken or found held by another server. The supervisor forgets the Run after."""
        supervisor = self._supervisor

        async def attempt() -> bool:
            lease = await asyncio.to_thread(self.leases.acquire, run.run_id)
            run.registered.set()  # the lease is taken (or another server holds it): the server may go on
            return lease is not None and await self.worker.project_leased(lease)

        try:
            # A database out of reach for a moment (a restart, sessions ended) is waited out; the Run's
            # Harness stream, once taken by the driver, continues through ``reattach``.
            await RECONNECT.call_async(attempt, supervisor.stores.lost)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %r: could not drive the run under a lease", run.run_id)
        finally:
            run.registered.set()
            if supervisor._runs.get(run.run_id) is run and run.task is None:
                supervisor._forget(run)
            await close_stream(run.source)

    async def _drive_taken(self, run_id: str, fenced: FencedDeliveryLog) -> None:
        # Called by the Worker with this process's lease on the Run: a Run started here (its runner's
        # stream), or one taken over (re-attached to its Harness, if it can be).
        supervisor = self._supervisor
        run = supervisor._runs.get(run_id)
        if run is None or run.task is not None:
            thread_id = await supervisor.thread_of(run_id) if run is None else run.thread_id
            if thread_id is None:
                return
            wire = await asyncio.to_thread(supervisor.stores.bindings.wire_of, run_id) if run is None else run.wire
            run = supervisor._register(run_id, thread_id, None, wire=wire)
            run.registered.set()
        if run.source is None:
            run.source = await supervisor._reattached(run.thread_id, run_id)
            run.reattached = run.source is not None
        run.lease = fenced.lease
        run.task = asyncio.current_task()
        await supervisor._drive(run)
