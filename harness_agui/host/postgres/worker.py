# A worker: one process of a Host that runs several behind a load balancer.
# Every worker opens the same database; each projects the Runs whose lease it
# holds, and any worker serves any Run's followers from the delivery log.
#
# ``Worker.run()`` looks for work when a new stream is journaled (NOTIFY on
# ``harness_agui_streams``) and every ``scan_interval`` seconds: the root
# Runs whose events are not all recorded and whose lease is free (none yet,
# expired, or held by a dead worker: see ``lease.py``). For each it takes the
# lease and drives the Run under it: with the ``drive`` it was given (a
# server's supervisor, which re-attaches the Harness), or else with the
# supervisor's own driver (``host.driver.RunDriver``, with no Harness
# stream), which resumes from the journal through the delivery cursor, checks
# what was delivered, and follows the journal's tail to the terminal result,
# each write fenced by the lease; a renewer task keeps the lease alive
# meanwhile. So a Run is projected, committed and failed by one code path,
# whoever drives it. A lease found lost (by the renewer, or by a fenced write
# that was refused) stops that projection; whoever holds the lease now goes
# on from the delivery cursor. So after a worker is SIGKILLed, its Runs are
# taken over within about ``scan_interval`` seconds (its liveness lock goes
# with its connection), and after it hangs, within its leases' ``ttl``. A
# projection that fails for good (an item the observer refuses, a processor
# that raises, a damaged store) ends its Run with one RUN_ERROR, recorded
# under the lease; one that fails because the database cannot be reached is
# tried again later, with a growing pause.

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import psycopg
import psycopg_pool

from ...core.reduce import Processor
from ..delivery import Delivery
from ..driver import DrivenRun, RunDriver
from ..errors import ProjectorConflictError
from ..options import SupervisorOptions
from ._pg import LOCK_WORKER, STREAMS_CHANNEL
from .batch import PostgresStores
from .delivery import RUNS as DELIVERY_RUNS
from .delivery import FencedDeliveryLog, PostgresDeliveryLog
from .journal import RUNS as JOURNAL_RUNS
from .journal import PostgresSourceJournal
from .lease import LEASES, Lease, LeaseLostError, PostgresLeases
from .tables import BINDINGS

__all__ = ["Worker"]

log = logging.getLogger("harness_agui.host.postgres")

# What says the database cannot be reached now (retried later), not that the projection failed.
_UNREACHABLE = (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout, OSError)

# The Runs to take: root Runs of the journal whose events are not all recorded, and Runs bound by a server
# (``harness_wire_runs``) that has neither journaled nor recorded anything of them yet, whose lease is
# free: a server takes a new Run's lease right after binding it, so a bound Run with a free lease was left
# by a server that died before its first item. (One that died between the two leaves a binding without a
# lease, which is not taken: nothing of it reached a client but a 200 without events.)
_PENDING = (
    "SELECT run_id FROM ("
    f"SELECT r.run_id, 0 AS kind, r.ord FROM {JOURNAL_RUNS} r "
    f"LEFT JOIN {DELIVERY_RUNS} d ON d.run_id = r.run_id "
    "WHERE r.run_id = r.root_run_id AND d.finished IS NOT TRUE "
    f"UNION ALL SELECT w.source_run_id, 1, w.ord FROM {BINDINGS} w "
    f"WHERE NOT EXISTS (SELECT 1 FROM {JOURNAL_RUNS} r WHERE r.run_id = w.source_run_id) "
    f"AND NOT EXISTS (SELECT 1 FROM {DELIVERY_RUNS} d WHERE d.run_id = w.source_run_id) "
    f"AND EXISTS (SELECT 1 FROM {LEASES} l WHERE l.run_id = w.source_run_id)"
    f") p LEFT JOIN {LEASES} l USING (run_id) "
    "WHERE l.run_id IS NULL OR l.expires_at < clock_timestamp() OR pg_try_advisory_xact_lock(%s, l.holder) "
    "ORDER BY kind, ord LIMIT %s"
)


class Worker:
    """Projects, among the Runs of one database, those no live worker holds.

    ``journal``, ``deliveries`` and ``leases`` must share one database.
    Each Run it takes is projected from the journal by the run supervisor's
    driver (``host.driver``) with ``processor``; ``publish`` is called with
    each Run's new deliveries after their commit.
    ``scan_interval`` is how often, in seconds, the worker looks for Runs
    whose holder died or hung, besides the notification of each new stream;
    ``max_runs`` caps the Runs it projects at once. ``drive``, when given,
    replaces that projection for each Run this worker takes: it is awaited
    as ``drive(run_id, fenced_log)`` and must record only under that
    fenced log's lease (a Host whose worker also re-attaches the Harness stream of
    a Run it takes over, as ``harness_agui.serve`` may, passes its own);
    the lease is renewed while it runs and it is cancelled when the lease
    is lost. ``active`` is the set of Runs it projects now; ``completed``
    counts the Runs it projected to their end, ``failed`` those it ended
    with a RUN_ERROR, ``lost`` the projections it gave up to another worker.
    """

    def __init__(self, journal: PostgresSourceJournal, deliveries: PostgresDeliveryLog, leases: PostgresLeases, *,
                 processor: Processor | None = None,
                 publish: Callable[[tuple[Delivery, ...]], object] | None = None,
                 scan_interval: float = 0.5, max_runs: int = 1000,
                 drive: Callable[[str, FencedDeliveryLog], Awaitable[object]] | None = None) -> None:
        self.drive = drive
        self.journal = journal
        self.deliveries = deliveries
        self.leases = leases
        self.processor = processor
        self.publish = publish
        self.scan_interval = float(scan_interval)
        self.max_runs = max_runs
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._retry: dict[str, float] = {}  # run id: loop time before which it is not taken again
        self._pause: dict[str, float] = {}
        self._driver: RunDriver | None = None
        self.completed = 0
        self.failed = 0
        self.lost = 0

    @property
    def active(self) -> frozenset[str]:
        """The run ids this worker projects now."""
        return frozenset(self._tasks)

    def pending(self) -> list[str]:
        """Root Runs whose events are not all recorded and whose lease is free, oldest first."""
        with self.journal._db.connection() as conn:
            rows = conn.execute(_PENDING, (LOCK_WORKER, self.max_runs)).fetchall()  # type: ignore[arg-type]
        return [r[0] for r in rows]

    async def run(self) -> None:
        """Project free Runs until cancelled; cancelling stops every projection (their leases are released)."""
        db = self.journal._db
        try:
            async with db.changes(STREAMS_CHANNEL, None) as wait:
                while True:
                    try:
                        await self._scan()
                    except _UNREACHABLE:
                        log.warning("cannot look for runs to project now", exc_info=True)
                    await wait(self.scan_interval)
        finally:
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._close_driver()

    async def _scan(self) -> None:
        if not await asyncio.to_thread(self.leases.alive):
            log.warning("this worker's liveness lock is not held (the database cannot be reached, or its session "
                        "ended): it takes no run until it holds it again")
            return
        now = asyncio.get_running_loop().time()
        for run_id in await asyncio.to_thread(self.pending):
            if run_id in self._tasks or len(self._tasks) >= self.max_runs or self._retry.get(run_id, 0) > now:
                continue
            lease = await asyncio.to_thread(self.leases.acquire, run_id)
            if lease is not None:
                self._tasks[run_id] = asyncio.create_task(self._project(lease))

    async def project(self, run_id: str) -> bool:
        """Take ``run_id``'s lease and project it to its end; False when another live worker holds it
        or took it over meanwhile. A Run whose projection fails for good is ended with a RUN_ERROR (and
        counted in ``failed``). Raises what says the database cannot be reached, and what ``drive``
        raises (after that RUN_ERROR)."""
        lease = await asyncio.to_thread(self.leases.acquire, run_id)
        if lease is None:
            return False
        try:
            return await self.project_leased(lease)
        finally:
            if not self._tasks:  # not scanning: nothing else of this worker writes now
                await self._close_driver()

    async def _project(self, lease: Lease) -> None:
        run_id = lease.run_id
        try:
            await self.project_leased(lease)
            self._retry.pop(run_id, None)
        except _UNREACHABLE as e:
            pause = min(30.0, max(self.scan_interval, 2 * self._pause.get(run_id, 0.25)))
            self._pause[run_id] = pause
            self._retry[run_id] = asyncio.get_running_loop().time() + pause
            log.warning("run %r: the database could not be reached (%s); again in %.1f s", run_id, e, pause)
        except Exception:
            log.exception("projecting run %r failed", run_id)
        finally:
            self._tasks.pop(run_id, None)

    async def project_leased(self, lease: Lease) -> bool:
        """Project the Run of ``lease`` (taken by this worker's ``leases``) to its end, renewing the lease
        meanwhile, and release it; as ``project``."""
        projection = asyncio.current_task()
        assert projection is not None
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._renew(lease, projection, lost))
        try:
            fenced = self.deliveries.fenced(lease)
            if self.drive is not None:
                await self.drive(lease.run_id, fenced)
            elif not await self._follow(lease):
                self.failed += 1
                return True
            self.completed += 1
            return True
        except ProjectorConflictError as e:
            self.lost += 1
            log.info("run %r: %s", lease.run_id, e)
            return False
        except asyncio.CancelledError:
            if lost.is_set():
                self.lost += 1
                return False
            raise
        except _UNREACHABLE:
            raise
        except Exception as e:
            # The projection itself failed (an item the observer refuses, a processor that raises or is
            # not replay-stable, a damaged store): end the Run for its followers with one RUN_ERROR, as
            # harness_agui.serve does, and let the error through.
            await self._fail(lease, e)
            raise
        finally:
            renewer.cancel()
            with contextlib.suppress(BaseException):
                await renewer
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.leases.release, lease)

    def _driver_of(self) -> RunDriver:
        # The supervisor's driver, on this worker's database (its writer is made on first use).
        if self._driver is None:
            stores = PostgresStores(self.journal, self.deliveries)
            self._driver = RunDriver(stores, processor=self.processor, options=SupervisorOptions())
        return self._driver

    async def _close_driver(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            assert isinstance(driver.stores, PostgresStores)
            driver.stores.close()
            await driver.close()

    async def _follow(self, lease: Lease) -> bool:
        # No ``drive``: the driver follows the Run's journal to its end under the lease. False when it ended
        # the Run with a RUN_ERROR.
        run = await self._run_of(lease)
        if run is None:
            return True  # nothing of it to drive (it was not a Run after all)
        await self._driver_of().drive(run)
        return not run.failed

    async def _fail(self, lease: Lease, error: Exception) -> None:
        # ``drive`` raised: its Run's projection is lost; the driver ends it with a RUN_ERROR under the lease.
        run_id = lease.run_id
        try:
            run = await self._run_of(lease)
            if run is not None:
                await self._driver_of().fail(
                    run, lambda _: f"the projection of run {run_id!r} failed: {type(error).__name__}: {error}")
        except Exception:  # the database cannot be read now: the Run is taken again at a later scan
            log.exception("run %r: could not record the RUN_ERROR", run_id)

    async def _run_of(self, lease: Lease) -> DrivenRun | None:
        # The leased Run as the driver drives it, named as its clients name it (a server's binding).
        run_id, stores = lease.run_id, self._driver_of().stores
        assert isinstance(stores, PostgresStores)
        wire = await asyncio.to_thread(stores.bindings.wire_of, run_id)
        thread_id = await asyncio.to_thread(self.journal.thread_of, run_id)
        if thread_id is None and wire is not None:
            thread_id = wire.source_thread_id
        if thread_id is None:
            return None
        return DrivenRun(run_id, thread_id, wire=wire, lease=lease, publish=self.publish)

    async def _renew(self, lease: Lease, projection: asyncio.Task[object], lost: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(lease.ttl / 3)
            try:
                await asyncio.to_thread(self.leases.renew, lease)
            except LeaseLostError:
                lost.set()
                projection.cancel()
                return
            except Exception:  # the database is unreachable for now: the fenced record decides
                log.warning("run %r: could not renew the lease", lease.run_id, exc_info=True)
