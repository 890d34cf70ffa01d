# The run supervisor: the one owner of a Host's Runs, whoever asks for them
# (an HTTP route, a queue consumer, a test). It starts a Run a client asks
# for (``open_run``: ``host.starts``), drives it (one driver task per Run:
# ``host.driver``), ends it with one RUN_ERROR when it cannot end normally,
# resumes the unfinished ones at start-up (``start``), cancels them, and
# serves their followers (``follow``: ``host.followers``). Nothing else in
# a server starts or drives a Run: this module keeps which Runs are driven
# here and when (recovery, registration), those modules how; on PostgreSQL
# each Run is driven under a lease (``host.leases``) and a start holds its
# Thread's lock in the database too (``host.postgres.locks``).
# (``project_run``, the driver's record-by-record mode, and a
# ``host.postgres.Worker`` made without a supervisor, project a journaled Run
# for a Host of its own.)

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from ag_ui.core import RunAgentInput

from ..core.history import StreamCursor
from ..core.observer import HarnessAguiObserver
from ..core.reduce import Processor
from ..core.source import HarnessStreamEvent
from .batch import BatchWriter
from .bindings import WireRun
from .checks import Cursor
from .driver import DrivenRun, RunDriver, close_stream
from .errors import StorageError
from .followers import KEEPALIVE, RunFollowers
from .leases import LeasedDriving
from .options import SupervisorOptions
from .protocols import Stores
from .retry import READ_AGAIN
from .runner import RequestContext, Runner, StartedRun
from .starts import Asked, RunStarts

if TYPE_CHECKING:
    from .postgres import PostgresLeases

__all__ = ["RunSupervisor", "SupervisorOptions", "FAILURE_CODES", "Reattach", "KEEPALIVE"]

log = logging.getLogger("harness_agui.host.supervisor")

Reattach = Callable[[str, str, Cursor], AsyncIterable[HarnessStreamEvent]]
"""After a restart or a takeover, called with ``(thread_id, run_id, after)``: the Harness stream of the
unfinished Run from after ``after``, the journal's cursor (the position of the last item journaled,
None for none). Items resent from earlier are harmless (a stored item delivered again is skipped)."""

FAILURE_CODES = {
    "harness_agui.projection_failed": "the projection refused a source item (or the processor raised)",
    "harness_agui.source_refused": "the Harness stream broke the order of the Run (out of order, foreign, "
                                   "or a different item where one is stored)",
    "harness_agui.harness_failed": "the Harness stream raised",
    "harness_agui.harness_ended": "the Harness stream ended without the Run's terminal result",
    "harness_agui.storage_failed": "the database could not store the Run's items or events",
    "harness_agui.harness_lost": "the Run was found unfinished after a restart or a takeover, and its Harness "
                                 "had nothing more to send (the Harness Run was lost with its process)",
    "harness_agui.cancelled": "the Run was cancelled and its Harness stream cannot end it itself (a plain "
                              "runner, or a Run continued after a restart): the server stopped reading it",
}
"""The ``code`` of the RUN_ERROR that ends a Run that could not end normally."""


class RunSupervisor:
    """Starts and drives Runs on one database (see the module comment) and serves their followers.

    ``stores`` is the database (``host.stores.stores_of(journal, deliveries)``). ``runner`` starts the
    Runs clients ask for (``open_run``; ``host.runner.Runner``). ``processor`` is the projection's
    processor. ``reattach`` (see ``Reattach``; default: the runner's own ``reattach``, if it has one)
    reconnects recovered and taken-over Runs to their Harness. ``group_commit`` sets the writer's
    batches (``host.batch.GroupCommit``).
    ``leases`` (PostgreSQL: a ``PostgresLeases``) makes every Run driven under a lease, with a
    ``Worker`` that takes over Runs whose lease is free, looking every ``scan_interval`` seconds, and
    every start hold its Thread's lock in the database.
    ``poll_interval``: how often a follower here looks for events recorded by another process on
    SQLite (PostgreSQL wakes it by NOTIFY; ``recheck`` is its safety re-read). ``catch_up_after``:
    a late joiner of a Run with more events than that gets ``catch_up()`` (None: never).
    ``max_followers``: the most followers a Run may have in this process (``follow`` raises
    ``FollowerLimitError`` past it). ``window``: how many recent frames a Run's feed keeps;
    ``page``: how many events a follower behind it reads at a time. ``keepalive``: seconds of
    silence after which a follower is sent a comment. ``batch_items``: the most items a driver
    takes from its queue for one write; ``queue_items``: how many items a Harness may run ahead
    of its driver. ``observer_options`` go to every Run's ``HarnessAguiObserver`` (``show_hidden``,
    ``max_event_bytes``, ...; a Run's ``client_thread_id`` / ``client_run_id`` are its binding's wire ids).

    Those settings are the fields of ``options`` (a frozen ``SupervisorOptions``, kept as ``options``),
    or keywords of the same names, which are laid over ``options`` when both are given. Raises
    ValueError for a number out of range or an observer option it cannot take, TypeError for an
    unknown keyword.
    """

    def __init__(self, stores: Stores, *, runner: Runner | None = None, processor: Processor | None = None,
                 reattach: Reattach | None = None, leases: PostgresLeases | None = None,
                 options: SupervisorOptions | None = None, **settings: Any) -> None:
        options = SupervisorOptions() if options is None else options
        if settings:  # the keyword form: the options' fields, over ``options`` when both are given
            options = attrs.evolve(options, **settings)
        self.options = options
        HarnessAguiObserver(processor, **options.observer_options)  # the options' own errors, now
        if reattach is None:
            reattach = getattr(runner, "reattach", None)
        self.stores = stores
        self.journal = stores.journal
        self.deliveries = stores.deliveries
        self.reattach = reattach
        self.leases = leases
        wait_remote = float(options.poll_interval) if leases is None else float(options.recheck)
        self._runs: dict[str, DrivenRun] = {}
        self._runs_started = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._leased: LeasedDriving | None = None  # PostgreSQL, once started
        self._worker_task: asyncio.Task[None] | None = None
        self._driver = RunDriver(stores, processor=processor, options=options, wait_remote=wait_remote)
        self._followers = RunFollowers(stores, self._runs, options=options, wait_remote=wait_remote,
                                       spawn=self._spawn)
        # A Run leased here may be started by another server on the same Thread: its starts lock the Thread in
        # the database too.
        self._starts = RunStarts(self, runner, None if leases is None else stores.thread_locks())

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def writer(self) -> BatchWriter:
        """The database's writer (made on first use)."""
        return self._driver.writer

    async def start(self, *, recover: bool = True) -> tuple[str, ...]:
        """Resume every unfinished Run of the database (with ``recover``) and return their run ids.

        On PostgreSQL a ``Worker`` does it instead, and goes on doing it: it takes every Run whose
        lease is free, re-attaches its Harness and drives it; nothing is returned, as that happens in
        the background. Raises what the stores raise for a damaged database."""
        if self.leases is not None:
            self._leased = LeasedDriving(self, self.leases, scan_interval=float(self.options.scan_interval))
            if recover:
                self._worker_task = asyncio.create_task(self._leased.worker.run(), name="harness-agui lease worker")
            return ()
        if not recover:
            return ()
        resumed = []
        for run_id in await asyncio.to_thread(self.journal.runs):
            if run_id in self._runs or await asyncio.to_thread(self.deliveries.finished, run_id):
                continue
            thread_id = await self.thread_of(run_id)
            if thread_id is None:
                continue
            wire = await asyncio.to_thread(self.stores.bindings.wire_of, run_id)
            source = await self._reattached(thread_id, run_id)
            self._launch(run_id, thread_id, source, wire=wire, reattached=source is not None)
            resumed.append(run_id)
        # Runs bound by a server that died before their first item: continued from nothing by ``reattach``
        # (a Harness that can start them again), or ended for their clients.
        for wire in await asyncio.to_thread(self.stores.bindings.unjournaled):
            if wire.source_run_id in self._runs:
                continue
            source = await self._reattached(wire.source_thread_id, wire.source_run_id)
            self._launch(wire.source_run_id, wire.source_thread_id, source, wire=wire, reattached=source is not None)
            resumed.append(wire.source_run_id)
        if resumed:
            log.info("resumed %d unfinished run(s): %s", len(resumed), ", ".join(resumed))
        return tuple(resumed)

    async def stop(self) -> None:
        """Cancel every driver and reader (every commit is whole: the next start resumes), and commit
        what the writer holds. The stores stay open (they are the caller's)."""
        self._followers.stopped = True  # no reader is started for a follower from now on
        tasks = [t for t in self._tasks if not t.done()]
        if self._worker_task is not None:
            tasks.append(self._worker_task)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._followers.close()
        await self._driver.close()
        await self._starts.close()

    async def wait(self, run_id: str) -> None:
        """Wait until this process's driver of the Run has ended (at once if there is none)."""
        run = self._runs.get(run_id)
        if run is not None and run.task is not None:
            await asyncio.gather(run.task, return_exceptions=True)

    def driving(self, run_id: str) -> bool:
        """Whether this process drives (or is about to drive) the Run."""
        return run_id in self._runs

    @property
    def driven(self) -> tuple[str, ...]:
        """The (source) run ids this process drives now."""
        return tuple(self._runs)

    async def live_runs(self) -> frozenset[str]:
        """The root Runs being driven now: by this process, and on PostgreSQL by any server holding a
        lease on them (an unexpired one: a server that died keeps its Runs until their leases expire)."""
        here = frozenset(run_id for run_id, run in self._runs.items() if not run.ended)
        if self.leases is None:
            return here
        leased = await READ_AGAIN.call_async(lambda: asyncio.to_thread(self.leases.live),  # type: ignore[union-attr]
                                             self.stores.lost)
        return here | leased

    def thread_here(self, run_id: str) -> str | None:
        """The Thread of root Run ``run_id`` if this process drives it (None otherwise)."""
        run = self._runs.get(run_id)
        return None if run is None else run.thread_id

    def journaled_thread(self, run_id: str) -> str | None:
        """The Thread the journal holds for root Run ``run_id`` (blocking: call it in a worker thread); None
        for a Run not journaled or a child Run's id (not a Run a client follows)."""
        try:
            return self.journal.thread_of(run_id)
        except StorageError:
            raise
        except ValueError:  # a child Run's id
            return None

    async def thread_of(self, run_id: str) -> str | None:
        """The Thread of root Run ``run_id``: this process's, else the journal's, else its binding's (a
        Run bound but not journaled yet); None for a Run nobody started (or a child Run's id)."""
        run = self._runs.get(run_id)
        if run is not None:
            return run.thread_id
        thread_id = await asyncio.to_thread(self.journaled_thread, run_id)
        if thread_id is None:
            wire = await asyncio.to_thread(self.stores.bindings.wire_of, run_id)
            thread_id = None if wire is None else wire.source_thread_id
        return thread_id

    async def last_event_id(self, run_id: str) -> int:
        """The last event id committed for the Run (0: none)."""
        feed = self._followers.feeds.get(run_id)
        run = self._runs.get(run_id)
        if feed is not None and feed.local and (run is None or run.observer is not None):
            return feed.last
        # A Run whose driver has not resumed it yet (just recovered at start-up): its feed does not know
        # what was committed before the restart, the delivery log does.
        return await asyncio.to_thread(self.deliveries.last_event_id, run_id)

    async def ask(self, thread_id: str, run_id: str) -> Asked:
        """What ``open_run`` needs read before the request is authorized, in one worker-thread hop: the
        client Thread's bound Runs (``Asked.thread_runs``, for its ``RequestContext``) and its run id's
        binding. Raises what the stores raise."""
        return await self._starts.ask(thread_id, run_id)

    async def open_run(self, run_input: RunAgentInput, context: RequestContext, *,
                       asked: Asked | None = None) -> WireRun:
        """The Run a client's ``run_input`` names (its binding), started when new: the Thread's lock is
        held (across servers on PostgreSQL) while the runner starts it, it is bound and registered, and
        driven from then on (``host.starts``). ``asked`` is what ``ask`` found for this request. Raises
        ``host.starts.RunConflictError`` for a run id of another Thread, the runner's ``RunRefused``
        (and one for a ``Last-Event-ID`` header on a new Run), ``host.starts.HarnessStartError`` when
        the runner fails, and what the stores raise; nothing is started then."""
        return await self._starts.open(run_input, context, asked=asked)

    async def resolve(self, thread_id: str, run_id: str) -> WireRun | None:
        """The binding of the Run its clients name ``thread_id`` / ``run_id`` (the wire ids), None when
        the database knows no such Run of that Thread. A Run journaled without a binding is its own."""
        return await self._starts.resolve(thread_id, run_id)

    def start_run(self, started: StartedRun, *, wire: WireRun | None = None,
                  unwritten: StreamCursor | None = None) -> bool:
        """Start driving ``started`` (a runner's Run, ``host.runner``) under its Harness ids: its
        ``items()`` are taken inside the Run's task, so that what they raise ends the Run cleanly.
        ``wire`` is how its clients name it (default: the started Run's wire ids), which the Run's
        RUN_STARTED and RUN_FINISHED carry; the caller stores it first (``Stores.bindings``). Returns
        False, and starts nothing, when this process drives a Run of that id already. On PostgreSQL
        the Run's lease is taken in the background: ``registered(run_id)`` waits for it. ``open_run``
        calls it; a caller of its own holds the Thread's lock itself. ``unwritten``: what ``unwritten``
        said of the Run after it was bound (SQLite only), so its driver need not read it again."""
        self._runs_started += 1  # counted even when refused: its caller may have bound it
        run_id = started.run_id
        if run_id in self._runs:
            return False
        if wire is None:
            wire = WireRun(started.wire_thread_id, started.wire_run_id, started.thread_id, run_id)
        run = self._launch(run_id, started.thread_id, _deferred(started.items), wire=wire)
        run.started, run.unwritten = started, unwritten
        return True

    @property
    def runs_started(self) -> int:
        """How many times ``start_run`` was called in this process (a start reads its Thread's bindings
        again under the Thread's lock only when this has changed since it first read them)."""
        return self._runs_started

    def unwritten(self, run_id: str) -> StreamCursor | None:
        """The stream cursor of Run ``run_id`` before its first item when neither the journal nor the
        delivery log holds anything of it, else None (blocking: call it in a worker thread)."""
        return self._driver.unwritten(run_id)

    async def registered(self, run_id: str) -> None:
        """Wait until a Run started here is registered where other servers see it (PostgreSQL: its lease
        is taken, or found taken by another server); at once on SQLite and for a Run not driven here."""
        run = self._runs.get(run_id)
        if run is not None and self._leased is not None:
            await run.registered.wait()

    def cancel(self, run_id: str) -> bool:
        """Ask the Run this process drives to stop: its Harness is told (``StartedRun.cancel()``) and the
        Run ends through its own stream (a13n-harness: RUN_FINISHED with the cancelled outcome). A Run
        whose Harness cannot end it itself (a plain runner, a Run continued after a restart) stops being
        read, and ends with RUN_ERROR ``harness_agui.cancelled``. Returns True when a cancel was asked,
        False when the Run has ended or is not driven here. Idempotent."""
        run = self._runs.get(run_id)
        if run is None or run.ended:
            return False
        started = run.started
        if started is not None:
            started.cancel()
            if getattr(started, "cancels_itself", True):
                return True
        if not run.stopping:
            run.stopping = True
            if run.ingest is not None:
                run.ingest.cancel()
        return True

    # -- driving -----------------------------------------------------------------------------

    def _launch(self, run_id: str, thread_id: str, source: AsyncIterable[HarnessStreamEvent] | None, *,
                wire: WireRun | None = None, reattached: bool = False) -> DrivenRun:
        run = self._register(run_id, thread_id, source, wire=wire, reattached=reattached)
        if self._leased is None:
            run.task = self._spawn(self._drive(run), f"harness-agui run {run_id}")
        else:  # PostgreSQL: the Run is driven under this process's lease on it
            self._spawn(self._leased.drive_started(run), f"harness-agui lease {run_id}")
        return run

    def _register(self, run_id: str, thread_id: str, source: AsyncIterable[HarnessStreamEvent] | None, *,
                  wire: WireRun | None = None, reattached: bool = False) -> DrivenRun:
        # The Run is driven here from now on: its followers here read its driver's feed.
        run = DrivenRun(run_id, thread_id, self._followers.driven_here(run_id), source, wire=wire,
                        reattached=reattached)
        self._runs[run_id] = run
        return run

    def _spawn(self, coroutine: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _reattached(self, thread_id: str, run_id: str) -> AsyncIterable[HarnessStreamEvent] | None:
        if self.reattach is None or await asyncio.to_thread(self.journal.finished, run_id):
            return None
        cursor = await asyncio.to_thread(self.journal.cursor, run_id)
        reattach = self.reattach
        return _deferred(lambda: reattach(thread_id, run_id, cursor))

    async def _drive(self, run: DrivenRun) -> None:
        try:
            await self._driver.drive(run)
        finally:
            self._forget(run)

    def _forget(self, run: DrivenRun) -> None:
        # The driver is done: what follows is read from the delivery log.
        if self._runs.get(run.run_id) is run:
            del self._runs[run.run_id]
        if run.feed is not None:
            self._followers.released(run.feed)

    # -- followers -----------------------------------------------------------------------------

    def follow(self, run_id: str, *, after: int = 0, late_joiner: bool = False) -> AsyncIterator[bytes]:
        """The Run's SSE frames after event ``after`` (as byte chunks, several frames each when several
        are ready), to its last event; a keep-alive comment after ``keepalive`` seconds of silence. A
        ``late_joiner`` (no Last-Event-ID) of a long Run driven here is sent ``catch_up()`` first (see
        ``host.followers``). Raises ``FollowerLimitError`` at once when the Run already has
        ``max_followers`` followers here. ``after`` must be known to be at most the Run's last id."""
        return self._followers.follow(run_id, after=after, late_joiner=late_joiner)


async def _deferred(source: Callable[[], AsyncIterable[HarnessStreamEvent]]) -> AsyncIterator[HarnessStreamEvent]:
    # The stream ``source()`` returns, started inside the Run's task (so that what it raises, even when
    # called, ends the Run cleanly) and closed with it.
    iterator = aiter(source())
    try:
        async for item in iterator:
            yield item
    finally:
        await close_stream(iterator)

