# The run supervisor: what drives a Host's Runs, whoever asks for them (an
# HTTP route, a queue consumer, a test).
#
# Theory of operation. Each Run this process drives has one task, its
# driver, independent of any client:
#
#   resume     ``projector.rebuild``: a fresh observer is resumed from the
#              journal through the delivery cursor and checked against what
#              was delivered; the driver then holds the Run's stream cursor,
#              delivery cursor and last event id in memory (a Run started
#              here that neither log holds anything of starts from nothing,
#              after one read of both);
#   backlog    items journaled but not yet recorded (a crash between the two
#              in an earlier release, or another ingest process) are
#              projected and recorded;
#   live       the Harness stream (the runner's items for a new Run, the
#              ``reattach`` stream after a restart or a takeover) is read by
#              an ingest task into a bounded queue; the driver takes what is
#              queued, checks each item once against its in-memory stream
#              cursor (``core.history.advance_stream``), projects it
#              (``observe_encoded``), and hands the journal rows and the
#              event rows of the whole lot to the database's writer as one
#              ``StreamWrite`` (``host.batch``: group commit). Once that is
#              committed, the events go to the Run's followers in memory
#              (``host.feed``). An item the process holds is never read back
#              from the database, and never decoded again.
#
# Without a Harness stream (a recovered Run and no ``reattach``), the driver
# follows the journal's tail instead and records what someone else appends.
#
# A Run must end for its followers even when it cannot end normally: when
# the projection refuses an item (or the processor raises), when the Harness
# stream raises, ends without its result, or yields an item out of order,
# or when the database cannot store what the driver writes, one RUN_ERROR is
# committed as the Run's last event, with a code saying which
# (``FAILURE_CODES``), in the same transaction as the items before it; the
# journal keeps every item it accepted (the refused one too). Items queued
# before the Harness failed are projected first, so the RUN_ERROR comes after
# their events. A Run whose writes another projector's rows or a lost lease
# refuse (``ProjectorConflictError``, ``LeaseLostError``) is left to that
# projector: this driver stops, and its followers read the delivery log.
#
# Followers. ``follow`` gives a client the Run's SSE frames after its
# ``Last-Event-ID``: pages of the delivery log while it is behind the Run's
# feed, then the feed's frames as they are committed. A Run driven elsewhere
# (another server on the same PostgreSQL database, another process on the
# same SQLite file) gets a feed too, fed by one reader per Run and process.
# A late joiner (no Last-Event-ID) of a long Run driven here gets the
# projection's ``catch_up()`` instead of every delta: computed in a worker
# thread while the driver holds still (the observer must not move under it),
# kept for every joiner while the frames after it are still in the feed, and
# sent once everything it covers is committed.
#
# PostgreSQL. Each Run is driven under a lease (``host.postgres``): a new
# Run by the process it was started in, a Run whose lease is free (its
# server died, or hung past the lease's ttl) by whichever ``Worker`` takes
# it; every write of the driver is fenced by the lease in its transaction.

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from ag_ui.core import RunErrorEvent

from ..core.errors import AfterTerminalError, HistoryError, SequenceOrderError
from ..core.history import StreamCursor, advance_stream
from ..core.observer import HarnessAguiObserver
from ..core.reduce import Processor
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.agui import SSE_KEEPALIVE, agui_to_json, sse_frame
from ..wire.codec import encode
from .batch import BatchWriter, GroupCommit
from .bindings import WireRun
from .checks import Cursor
from .delivery import Page
from .errors import FollowerLimitError, ProjectorConflictError, StorageError
from .feed import RunFeed
from .projector import rebuild
from .protocols import Stores
from .retry import READ_AGAIN, RECONNECT
from .runner import StartedRun
from .writes import Head, Journaled, Recorded, StreamWrite

if TYPE_CHECKING:
    from .postgres import FencedDeliveryLog, Lease, PostgresLeases, Worker

__all__ = ["RunSupervisor", "FAILURE_CODES", "Reattach", "KEEPALIVE"]

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

KEEPALIVE = SSE_KEEPALIVE.encode()

FANOUT_FREE = 8
FANOUT_PAUSE = 0.0002
FANOUT_LONGEST = 0.1
"""The fan-out policy. A Run with at most ``FANOUT_FREE`` followers here sends each of them every commit
as it lands. With more, a follower that was sent frames pauses ``FANOUT_PAUSE`` seconds per follower of
the Run (at most ``FANOUT_LONGEST``) before it takes the next ones, all that gathered meanwhile in one
write: the sends per second of a Run stay about 5,000 whatever the number of its followers, so they
cannot take the event loop from the Run itself (100 ms between writes at 500 followers)."""


@attrs.frozen
class _End:
    """The Harness stream ended (``error`` None), raised ``error``, or was stopped by a cancel
    (``cancelled``); ``items`` is how many items it gave."""

    error: BaseException | None = None
    cancelled: bool = False
    items: int = 0


_SOURCE_ITEMS = (HarnessEvent, HarnessRunResultEvent)


@attrs.define(eq=False)
class _Run:
    """A Run driven by this process: its driver's in-memory state (see the module comment)."""

    run_id: str
    thread_id: str
    feed: RunFeed
    source: AsyncIterable[HarnessStreamEvent] | None = None  # a POSTed Run's stream, until its driver takes it
    wire: WireRun | None = None  # how its clients name it (None: by the journal's ids)
    started: StartedRun | None = None  # the runner's Run (None: recovered or taken over)
    reattached: bool = False  # its stream is ``reattach``'s (after a restart or a takeover)
    task: asyncio.Task[Any] | None = None
    ingest: asyncio.Task[None] | None = None
    stopping: bool = False  # cancelled, and the driver stops reading its stream itself
    registered: asyncio.Event = attrs.field(factory=asyncio.Event)  # PostgreSQL: its lease was taken (or not)
    lease: Lease | None = None
    observer: HarnessAguiObserver | None = None
    cursor: StreamCursor = attrs.field(factory=StreamCursor)  # the stream after the last recorded item
    journal_end: int | None = None  # the journal's last position
    delivered: tuple[int, int] | None = None  # the stored (cursor, last event id); None: no delivery row
    last_event_id: int = 0
    ended: bool = False
    catching: asyncio.Future[tuple[int, bytes]] | None = None  # a catch-up being taken
    caught: tuple[int, bytes] | None = None  # the last catch-up: (event id it covers, its frames)

    @property
    def named(self) -> str:
        """The Run as its clients name it, for the messages they are sent: ``run 'r-1'`` (their run id)."""
        return f"run {(self.run_id if self.wire is None else self.wire.wire_run_id)!r}"


class RunSupervisor:
    """Drives Runs on one database (see the module comment) and serves their followers.

    ``stores`` is the database (``host.stores.stores_of(journal, deliveries)``). ``processor`` is
    the projection's processor. ``reattach`` (see ``Reattach``) reconnects recovered and taken-over
    Runs to their Harness. ``group_commit`` sets the writer's batches (``host.batch.GroupCommit``).
    ``leases`` (PostgreSQL: a ``PostgresLeases``) makes every Run driven under a lease, with a
    ``Worker`` that takes over Runs whose lease is free, looking every ``scan_interval`` seconds.
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
    """

    def __init__(self, stores: Stores, *, processor: Processor | None = None, reattach: Reattach | None = None,
                 group_commit: GroupCommit | None = None, leases: PostgresLeases | None = None,
                 scan_interval: float = 0.5,
                 poll_interval: float = 0.05, recheck: float = 30.0, catch_up_after: int | None = 1000,
                 max_followers: int = 1000, window: int = 1024, page: int = 512, keepalive: float = 15.0,
                 batch_items: int = 256, queue_items: int = 1024,
                 observer_options: Mapping[str, Any] | None = None) -> None:
        for name, count in (("max_followers", max_followers), ("window", window), ("page", page),
                            ("batch_items", batch_items), ("queue_items", queue_items)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{name} must be an int >= 1, not {count!r}")
        for name, seconds in (("poll_interval", poll_interval), ("recheck", recheck), ("keepalive", keepalive),
                              ("scan_interval", scan_interval)):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
                raise ValueError(f"{name} must be a number of seconds > 0, not {seconds!r}")
        if catch_up_after is not None and (isinstance(catch_up_after, bool) or not isinstance(catch_up_after, int)
                                           or catch_up_after < 0):
            raise ValueError(f"catch_up_after must be an int >= 0 or None, not {catch_up_after!r}")
        options = dict(observer_options or {})
        reserved = sorted({"client_thread_id", "client_run_id", "retain_events"} & set(options))
        if reserved:
            raise ValueError(f"observer_options may not set {', '.join(reserved)}: the supervisor sets them per Run")
        HarnessAguiObserver(processor, **options)  # the options' own errors, now
        self.observer_options = options
        self.stores = stores
        self.journal = stores.journal
        self.deliveries = stores.deliveries
        self.processor = processor
        self.reattach = reattach
        self.leases = leases
        self.max_followers = max_followers
        self.catch_up_after = catch_up_after
        self._group_commit = group_commit
        self._scan_interval = float(scan_interval)
        self._wait_remote = float(poll_interval) if leases is None else float(recheck)
        self._window = window
        self._page = page
        self._keepalive = float(keepalive)
        self._batch_items = batch_items
        self._queue_items = queue_items
        self._writer: BatchWriter | None = None
        self._runs: dict[str, _Run] = {}
        self._feeds: dict[str, RunFeed] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._worker: Worker | None = None
        self._worker_task: asyncio.Task[None] | None = None
        self._stopped = False

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def writer(self) -> BatchWriter:
        """The database's writer (made on first use)."""
        if self._writer is None:
            self._writer = self.stores.writer(self._group_commit)
        return self._writer

    async def start(self, *, recover: bool = True) -> tuple[str, ...]:
        """Resume every unfinished Run of the database (with ``recover``) and return their run ids.

        On PostgreSQL a ``Worker`` does it instead, and goes on doing it: it takes every Run whose
        lease is free, re-attaches its Harness and drives it; nothing is returned, as that happens in
        the background. Raises what the stores raise for a damaged database."""
        if self.leases is not None:
            from .postgres import Worker

            self._worker = Worker(self.journal, self.deliveries, self.leases,  # type: ignore[arg-type]
                                  drive=self._drive_leased, scan_interval=self._scan_interval)
            if recover:
                self._worker_task = asyncio.create_task(self._worker.run(), name="harness-agui lease worker")
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
        self._stopped = True
        tasks = [t for t in self._tasks if not t.done()]
        if self._worker_task is not None:
            tasks.append(self._worker_task)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for feed in list(self._feeds.values()):
            feed.close()
        if self._writer is not None:
            await asyncio.to_thread(self._writer.close)

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
        feed = self._feeds.get(run_id)
        run = self._runs.get(run_id)
        if feed is not None and feed.local and (run is None or run.observer is not None):
            return feed.last
        # A Run whose driver has not resumed it yet (just recovered at start-up): its feed does not know
        # what was committed before the restart, the delivery log does.
        return await asyncio.to_thread(self.deliveries.last_event_id, run_id)

    def start_run(self, started: StartedRun, *, wire: WireRun | None = None) -> bool:
        """Start driving ``started`` (a runner's Run, ``host.runner``) under its Harness ids: its
        ``items()`` are taken inside the Run's task, so that what they raise ends the Run cleanly.
        ``wire`` is how its clients name it (default: the started Run's wire ids), which the Run's
        RUN_STARTED and RUN_FINISHED carry; the caller stores it first (``Stores.bindings``). Returns
        False, and starts nothing, when this process drives a Run of that id already. On PostgreSQL
        the Run's lease is taken in the background: ``registered(run_id)`` waits for it."""
        run_id = started.run_id
        if run_id in self._runs:
            return False
        if wire is None:
            wire = WireRun(started.wire_thread_id, started.wire_run_id, started.thread_id, run_id)
        run = self._launch(run_id, started.thread_id, _deferred(started.items), wire=wire)
        run.started = started
        return True

    async def registered(self, run_id: str) -> None:
        """Wait until a Run started here is registered where other servers see it (PostgreSQL: its lease
        is taken, or found taken by another server); at once on SQLite and for a Run not driven here."""
        run = self._runs.get(run_id)
        if run is not None and self._worker is not None:
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
                wire: WireRun | None = None, reattached: bool = False) -> _Run:
        feed = self._feeds.get(run_id)
        if feed is None or feed.closed:
            feed = self._feeds[run_id] = RunFeed(run_id, window=self._window, local=True)
        feed.local = True
        run = _Run(run_id, thread_id, feed, source, wire=wire, reattached=reattached)
        self._runs[run_id] = run
        if self._worker is None:
            run.task = self._spawn(self._drive(run), f"harness-agui run {run_id}")
        else:  # PostgreSQL: the Run is driven under this process's lease on it
            self._spawn(self._lease_posted(run), f"harness-agui lease {run_id}")
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

    async def _lease_posted(self, run: _Run) -> None:
        # Take the lease of a Run started here and drive it (``_drive_leased``); if another process holds
        # it (the same Run started there first), that one drives it and this one only serves the log.
        worker = self._worker
        leases = self.leases
        assert worker is not None and leases is not None
        async def attempt() -> bool:
            lease = await asyncio.to_thread(leases.acquire, run.run_id)
            run.registered.set()  # the lease is taken (or another server holds it): the server may go on
            return lease is not None and await worker.project_leased(lease)

        try:
            # A database out of reach for a moment (a restart, sessions ended) is waited out; the Run's
            # Harness stream, once taken by the driver, continues through ``reattach``.
            await RECONNECT.call_async(attempt, self.stores.lost)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %r: could not drive the run under a lease", run.run_id)
        finally:
            run.registered.set()
            if self._runs.get(run.run_id) is run and run.task is None:
                self._forget(run)
            await _close(run.source)

    async def _drive_leased(self, run_id: str, fenced: FencedDeliveryLog) -> None:
        # Called by the Worker with this process's lease on the Run: a Run started here (its runner's
        # stream), or one taken over (re-attached to its Harness, if it can be).
        run = self._runs.get(run_id)
        if run is None or run.task is not None:
            thread_id = await self.thread_of(run_id) if run is None else run.thread_id
            if thread_id is None:
                return
            wire = await asyncio.to_thread(self.stores.bindings.wire_of, run_id) if run is None else run.wire
            run = self._launch_taken(run_id, thread_id, wire)
        if run.source is None:
            run.source = await self._reattached(run.thread_id, run_id)
            run.reattached = run.source is not None
        run.lease = fenced.lease
        run.task = asyncio.current_task()
        await self._drive(run)

    def _launch_taken(self, run_id: str, thread_id: str, wire: WireRun | None) -> _Run:
        feed = self._feeds.get(run_id)
        if feed is None or feed.closed:
            feed = self._feeds[run_id] = RunFeed(run_id, window=self._window)
        feed.local = True
        run = _Run(run_id, thread_id, feed, wire=wire)
        run.registered.set()
        self._runs[run_id] = run
        return run

    async def _drive(self, run: _Run) -> None:
        source, run.source = run.source, None
        ingest: asyncio.Task[None] | None = None
        try:
            if not await self._resume(run):
                return
            await self._backlog(run)
            if run.ended:
                return
            if run.stopping:  # cancelled before its stream was read
                await self._give_up(run, "harness_agui.cancelled", f"{run.named} was cancelled")
                return
            if source is None and run.journal_end is None:  # bound, never journaled, and no Harness to ask
                await self._give_up(run, "harness_agui.harness_lost",
                                    f"{run.named} was found without any item after a restart or a takeover, "
                                    "and there is no Harness to continue it (no reattach)")
                return
            if source is None:
                await self._follow_journal(run)
                return
            queue: asyncio.Queue[HarnessStreamEvent | _End] = asyncio.Queue(self._queue_items)
            ingest = run.ingest = asyncio.create_task(_ingest(source, queue, lambda: run.stopping),
                                                      name=f"harness-agui ingest {run.run_id}")
            source = None
            await self._live(run, queue)
        except asyncio.CancelledError:
            raise
        except ProjectorConflictError as e:  # another projector (or the lease's new holder) goes on
            log.warning("run %r: another projector owns the run; this one stops: %s", run.run_id, e)
            if run.lease is not None:
                raise  # the Worker counts it
        except Exception as e:
            if self.stores.lost(e):  # the database is out of reach: no RUN_ERROR can be written either
                log.warning("run %r: the database cannot be reached (%s: %s); the run is left for later",
                            run.run_id, type(e).__name__, e)
                if run.lease is not None:
                    raise  # the Worker tries the Run again later
            log.exception("run %r: the run's driver failed", run.run_id)
            if not run.ended:
                await self._give_up(run, "harness_agui.storage_failed",
                                    f"{run.named}: the database could not store the run: "
                                    f"{type(e).__name__}: {e}")
        finally:
            if ingest is not None:
                ingest.cancel()
                await asyncio.gather(ingest, return_exceptions=True)
            await _close(source)
            if run.catching is not None:
                await asyncio.gather(run.catching, return_exceptions=True)
            self._forget(run)

    def _forget(self, run: _Run) -> None:
        # The driver is done: what follows is read from the delivery log.
        if self._runs.get(run.run_id) is run:
            del self._runs[run.run_id]
        feed = run.feed
        if self._feeds.get(run.run_id) is feed:
            feed.local = False
            if feed.finished:
                if not feed.followers:
                    del self._feeds[run.run_id]
            else:  # given up here (another projector, or stopped): its followers read the log again
                del self._feeds[run.run_id]
                feed.close()

    async def _resume(self, run: _Run) -> bool:
        # Rebuild the projection through the delivery cursor; False when the Run has ended (or cannot go on).
        wire = run.wire
        named = wire is not None and (wire.wire_thread_id, wire.wire_run_id) != (wire.source_thread_id,
                                                                                 wire.source_run_id)
        observer = HarnessAguiObserver(self.processor, **self.observer_options,
                                       client_thread_id=wire.wire_thread_id if named else None,  # type: ignore[union-attr]
                                       client_run_id=wire.wire_run_id if named else None)  # type: ignore[union-attr]
        if run.started is not None:  # started here: most often a Run neither log holds anything of
            try:
                blank = await asyncio.to_thread(self._blank, run.run_id)
            except Exception:  # noqa: BLE001 - the rebuild below reads the same and meets the same error
                blank = None
            if blank is not None:  # what the rebuild below would find, read in one hop instead of two
                run.observer = observer
                run.last_event_id, run.delivered = 0, None
                run.feed.reset(0)
                run.cursor, run.journal_end = blank, None
                return True
        try:
            rebuilt = await rebuild(run.run_id, self.journal, self.deliveries, observer)
        except (ProjectorConflictError, StorageError):
            raise
        except Exception as e:
            if self.stores.lost(e):
                raise
            log.error("run %r: the projection cannot be rebuilt: %s: %s", run.run_id, type(e).__name__, e)
            await self._fail_unrebuilt(run, e)
            return False
        run.observer = observer
        run.last_event_id = rebuilt.last_event_id
        run.delivered = None if rebuilt.cursor is None else (rebuilt.cursor, rebuilt.last_event_id)
        if rebuilt.ended:
            run.ended = True
            run.feed.reset(rebuilt.last_event_id, finished=True)
            return False
        # The feed knows what was committed before the Run goes on: from here ``last_event_id()`` answers
        # from it, so a client reconnecting while the journal is read below is not told "never assigned".
        run.feed.reset(rebuilt.last_event_id)
        run.cursor, run.journal_end = await asyncio.to_thread(self._journal_at, run.run_id, rebuilt.cursor)
        return True

    def _blank(self, run_id: str) -> StreamCursor | None:
        # In a worker thread: the stream's cursor before its first item when neither the journal nor the
        # delivery log holds anything of the Run (else None: the Run is rebuilt). A Run with no item
        # recorded and no event has not finished either: its end is an event.
        if self.journal.cursor(run_id) is not None or self.deliveries.cursor(run_id) is not None \
                or self.deliveries.last_event_id(run_id):
            return None
        return self.journal.stream_cursor(run_id, through=None)

    def _journal_at(self, run_id: str, through: Cursor) -> tuple[StreamCursor, Cursor]:
        # In a worker thread: the stream's cursor after ``through`` and the journal's last position.
        return self.journal.stream_cursor(run_id, through=through), self.journal.cursor(run_id)

    async def _backlog(self, run: _Run) -> None:
        # Project and record the items journaled after the delivery cursor (recorded nowhere yet).
        end = run.journal_end
        if end is None or run.cursor.next_position > end:
            return
        remaining = end - run.cursor.next_position + 1
        tail = self.journal.tail(run.run_id, after=run.cursor.last_position)
        try:
            batch: list[HarnessStreamEvent] = []
            async for item in tail:
                batch.append(item)
                remaining -= 1
                if len(batch) == self._batch_items or not remaining:
                    if await self._step(run, batch, journaled=True):
                        return
                    batch = []
                if not remaining:
                    return
        finally:
            await _close(tail)

    async def _follow_journal(self, run: _Run) -> None:
        # No Harness stream here: record what another process appends to the journal, to the end.
        tail = self.journal.tail(run.run_id, after=run.cursor.last_position, poll_interval=self._wait_remote)
        try:
            async for item in tail:
                if await self._step(run, [item], journaled=True):
                    return
        finally:
            await _close(tail)

    async def _live(self, run: _Run, queue: asyncio.Queue[HarnessStreamEvent | _End]) -> None:
        limit = self._batch_items
        while True:
            taken: list[HarnessStreamEvent | _End] = [await queue.get()]
            while len(taken) < limit and not queue.empty():
                taken.append(queue.get_nowait())
            items: list[HarnessStreamEvent] = []
            end: _End | None = None
            for entry in taken:
                if isinstance(entry, _End):
                    end = entry
                    break
                items.append(entry)
            if items and await self._step(run, items, journaled=False):
                return
            if end is not None:
                if end.cancelled:
                    await self._give_up(run, "harness_agui.cancelled",
                                        f"{run.named} was cancelled: the server stopped reading its "
                                        "Harness stream")
                elif end.error is None and run.reattached and not end.items:
                    await self._give_up(run, "harness_agui.harness_lost",
                                        f"{run.named} was found unfinished after a restart or a takeover, "
                                        "and its Harness had nothing more to send: the Harness Run was lost with "
                                        "its process")
                elif end.error is None:
                    await self._give_up(run, "harness_agui.harness_ended",
                                        f"the Harness stream of {run.named} ended without the run's result")
                else:
                    await self._give_up(run, "harness_agui.harness_failed",
                                        f"the Harness stream of {run.named} failed: "
                                        f"{type(end.error).__name__}: {end.error}")
                return

    async def _step(self, run: _Run, items: list[HarnessStreamEvent], *, journaled: bool) -> bool:
        # Project and commit ``items`` (appending them too unless ``journaled``); True once the Run has ended.
        while items:
            await self._hold_for_catch_up(run)
            plan = self._prepare(run, items, journaled=journaled)
            if plan.write is not None:
                await self._commit(run, plan)
            if run.ended:
                return True
            items = items[plan.taken:]
            if plan.resent is not None:
                items = items[1:]
                refusal = await self._check_resent(run, plan.resent)
                if refusal is not None:
                    await self._give_up(run, "harness_agui.source_refused", refusal)
                    return True
        return False

    def _prepare(self, run: _Run, items: list[HarnessStreamEvent], *, journaled: bool) -> _Plan:
        # One check per item (its order, against the in-memory stream cursor), its projection, and the
        # rows that commit both; stops at an item to compare with the journal (a resend) or at a failure.
        root = run.run_id
        observer = run.observer
        assert observer is not None
        cursor = run.cursor
        last_id = run.last_event_id
        rows: list[Journaled] = []
        heads: dict[str, Head] = {}
        events: list[Recorded] = []
        children: dict[str, Head] = {}
        failure: tuple[str, str] | None = None
        resent: HarnessStreamEvent | None = None
        taken = 0
        for item in items:
            if type(item) not in _SOURCE_ITEMS:  # the Harness's fault, not the database's
                failure = ("harness_agui.source_refused", f"{run.named}: the Harness yielded a "
                                                          f"{type(item).__name__}, not a source item")
                break
            try:
                after = advance_stream(cursor, item)
            except HistoryError as e:
                if not journaled and isinstance(e, (SequenceOrderError, AfterTerminalError)) and _resent(cursor, item):
                    resent = item
                else:
                    code = "harness_agui.projection_failed" if journaled else "harness_agui.source_refused"
                    failure = (code, f"run {root!r}: the Harness item at sequence {item.sequence} is out of order: "
                                     f"{type(e).__name__}: {e}")
                break
            position = after.next_position - 1
            if not journaled:
                own = after.cursor_of(item.run_id)
                assert own is not None
                # A result's line is written by the store, in its worker thread: its state may hold a long
                # Thread's whole history (a13n-harness), too much to encode on the event loop.
                line = None if type(item) is HarnessRunResultEvent else encode(item)
                rows.append(Journaled(position, item.run_id, item.sequence, item.thread_id, own.finished, line, item))
                heads[item.run_id] = Head(item.run_id, item.thread_id, item.sequence, own.finished, position)
                if item.run_id != root:
                    top = after.root
                    heads[root] = Head(root, str(top.thread_id), top.next_sequence - 1, top.finished, position)
            taken += 1
            try:
                encoded = observer.observe_encoded(item)
            except Exception as e:
                failure = ("harness_agui.projection_failed",
                           f"the projection of run {root!r} failed at the source item at sequence {item.sequence}: "
                           f"{type(e).__name__}: {e}")
                break
            for kind, data in encoded:
                last_id += 1
                events.append(Recorded(last_id, position, kind, data))
            if item.run_id != root:
                kid = after.children[item.run_id]
                children[item.run_id] = Head(item.run_id, item.thread_id, item.sequence, kid.finished)
            cursor = after
            if after.finished:
                break
        if not rows and cursor is run.cursor and failure is None:
            return _Plan(None, cursor, taken, resent, False)
        position = -1 if cursor.last_position is None else cursor.last_position
        if failure is not None:
            code, message = failure
            log.error("run %r ended with RUN_ERROR %s: %s", root, code, message)
            last_id += 1
            events.append(Recorded(last_id, position, "RUN_ERROR", _run_error(code, message)))
        top = cursor.root
        write = StreamWrite(
            root_run_id=root, thread_id=run.thread_id,
            journal_last=run.journal_end, items=tuple(rows), heads=tuple(heads.values()),
            records=True, delivered=run.delivered, events=tuple(events), cursor=position, last_event_id=last_id,
            finished=cursor.finished or failure is not None,
            root_last_sequence=top.next_sequence - 1 if top.started else -1, children=tuple(children.values()),
            lease=run.lease)
        return _Plan(write, cursor, taken, resent, write.finished)

    async def _commit(self, run: _Run, plan: _Plan) -> None:
        write = plan.write
        assert write is not None
        try:
            await self.writer.submit(write)
        except (ProjectorConflictError, asyncio.CancelledError):
            raise
        except Exception as e:
            if self.stores.lost(e):
                raise
            log.error("run %r: the database refused a write: %s: %s", run.run_id, type(e).__name__, e)
            await self._give_up(run, "harness_agui.storage_failed",
                                f"{run.named}: the database could not store the run's items: "
                                f"{type(e).__name__}: {e}")
            return
        run.cursor = plan.cursor
        if write.items:
            run.journal_end = write.items[-1].position
        run.delivered = (write.cursor, write.last_event_id)
        run.last_event_id = write.last_event_id
        run.ended = plan.ends
        run.feed.publish(((e.event_id, e.data) for e in write.events), finished=plan.ends)

    async def _give_up(self, run: _Run, code: str, message: str) -> None:
        # End the Run for its followers with one RUN_ERROR after what is committed.
        if run.ended:
            return
        log.error("run %r ended with RUN_ERROR %s: %s", run.run_id, code, message)
        position = -1 if run.delivered is None else run.delivered[0]
        event = Recorded(run.last_event_id + 1, position, "RUN_ERROR", _run_error(code, message))
        top = run.cursor.root
        write = StreamWrite(root_run_id=run.run_id, thread_id=run.thread_id, records=True, delivered=run.delivered,
                            events=(event,), cursor=position, last_event_id=event.event_id, finished=True,
                            root_last_sequence=top.next_sequence - 1 if top.started else -1, lease=run.lease)
        try:
            await self.writer.submit(write)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.error("run %r: could not record the RUN_ERROR (%s: %s): %s: %s", run.run_id, code, message,
                      type(e).__name__, e)
            run.ended = True
            return
        run.delivered = (position, event.event_id)
        run.last_event_id = event.event_id
        run.ended = True
        run.feed.publish([(event.event_id, event.data)], finished=True)

    async def _fail_unrebuilt(self, run: _Run, error: BaseException) -> None:
        # The projection could not be rebuilt from the journal: end the Run after what was delivered.
        cursor = await asyncio.to_thread(self.deliveries.cursor, run.run_id)
        last = await asyncio.to_thread(self.deliveries.last_event_id, run.run_id)
        run.delivered = None if cursor is None else (cursor, last)
        run.last_event_id = last
        run.feed.reset(last)
        where = "its start" if cursor is None else f"position {cursor}"
        await self._give_up(run, "harness_agui.projection_failed",
                            f"the projection of {run.named} could not be rebuilt through {where}: "
                            f"{type(error).__name__}: {error}")

    async def _check_resent(self, run: _Run, item: HarnessStreamEvent) -> str | None:
        # An item at a stored sequence (a re-attached Harness resending from earlier): harmless when it is
        # the stored item, a refusal (why, as text) when it differs.
        try:
            written = await asyncio.to_thread(self.journal.append, item, root_run_id=run.run_id)
        except HistoryError as e:
            return (f"{run.named}: the Harness item at sequence {item.sequence} differs from the one stored: "
                    f"{type(e).__name__}: {e}")
        if written:  # the journal did not hold it after all: the driver's view is stale
            raise ProjectorConflictError(run_id=run.run_id, cursor=run.journal_end, found=None, reason=(
                "the journal changed under this driver (an item it had counted was not stored)"))
        return None

    # -- catch-up --------------------------------------------------------------------------

    async def _hold_for_catch_up(self, run: _Run) -> None:
        # The observer must not move while a catch-up is taken of it in a worker thread.
        catching = run.catching
        if catching is not None and not catching.done():
            await asyncio.wait({catching})

    async def _catch_up(self, run: _Run) -> tuple[int, bytes] | None:
        """The catch-up frames of a Run driven here and the last event id they cover, shared by every
        joiner while the frames after it are still in the feed; None when it cannot be taken."""
        caught = run.caught
        if caught is not None and caught[0] >= run.feed.base:
            return caught
        if run.catching is None or run.catching.done():
            observer, tag = run.observer, run.feed.tag
            if observer is None or not observer.tracks_messages:
                return None
            run.catching = asyncio.get_running_loop().run_in_executor(None, _take_catch_up, observer, tag)
        catching = run.catching
        try:
            caught = await asyncio.shield(catching)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %r: the catch-up could not be taken; the joiner is sent the log", run.run_id)
            return None
        run.caught = caught
        return caught

    # -- followers -----------------------------------------------------------------------------

    def follow(self, run_id: str, *, after: int = 0, late_joiner: bool = False) -> AsyncIterator[bytes]:
        """The Run's SSE frames after event ``after`` (as byte chunks, several frames each when several
        are ready), to its last event; a keep-alive comment after ``keepalive`` seconds of silence. A
        ``late_joiner`` (no Last-Event-ID) of a long Run driven here is sent ``catch_up()`` first (see
        the module comment). Raises ``FollowerLimitError`` at once when the Run already has
        ``max_followers`` followers here. ``after`` must be known to be at most the Run's last id."""
        feed = self._feeds.get(run_id)
        if feed is not None and feed.followers >= self.max_followers:
            raise FollowerLimitError(run_id=run_id, limit=self.max_followers)
        return self._follow(run_id, after, late_joiner)

    async def _follow(self, run_id: str, after: int, late_joiner: bool) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        feed = await self._attach(run_id)
        try:
            if late_joiner and self.catch_up_after is not None:
                run = self._runs.get(run_id)
                if run is not None and run.feed is feed and feed.last > self.catch_up_after:
                    caught = await self._catch_up(run)
                    if caught is not None:
                        covers, frames = caught
                        while feed.last < covers and not (feed.finished or feed.closed):
                            await feed.wait(feed.last, self._keepalive)
                        if feed.last >= covers:  # everything it covers is committed
                            yield frames
                            after = covers
            quiet_since = loop.time()
            while True:
                if feed.closed:
                    self._detach(feed)
                    feed = await self._attach(run_id)
                chunk = feed.after(after)
                if chunk is None:  # behind the feed's window: a page of the log
                    page = await self._page_after(run_id, after)
                    if page.deliveries:
                        yield b"".join(feed.frame(d.event_id, d.data) for d in page.deliveries)
                        after = page.deliveries[-1].event_id
                        quiet_since = loop.time()
                        continue
                    if page.finished and after >= page.last_event_id:
                        return
                    await asyncio.sleep(self._wait_remote)  # the log lags the feed (a replica): read again
                    continue
                if chunk:
                    after = feed.last
                    yield chunk
                    quiet_since = loop.time()
                    if feed.followers > FANOUT_FREE:  # many followers: each takes what a pause gathered
                        await asyncio.sleep(min(FANOUT_LONGEST, feed.followers * FANOUT_PAUSE))
                    continue
                if feed.finished:
                    return
                silent = loop.time() - quiet_since
                if silent >= self._keepalive:
                    yield KEEPALIVE
                    quiet_since = loop.time()
                    continue
                # Nothing after ``after`` in the feed: the follower has all it holds (or more: pages of the log
                # may run ahead of a reader's feed), so wait for the feed to move past its own last event.
                await feed.wait(feed.last, self._keepalive - silent)
        finally:
            self._detach(feed)

    async def _attach(self, run_id: str) -> RunFeed:
        # The Run's feed here: its driver's, a reader's shared with other followers, or a new reader's.
        feed = self._feeds.get(run_id)
        if feed is None or feed.closed:
            page = await self._page_after(run_id, 0, limit=1)  # the Run's last id and end, in one snapshot
            feed = self._feeds.get(run_id)
            if feed is None or feed.closed:
                feed = RunFeed(run_id, last_event_id=page.last_event_id, finished=page.finished, window=self._window)
                if not page.finished and not self._stopped:
                    self._feeds[run_id] = feed
                    self._spawn(self._read_for(feed), f"harness-agui reader {run_id}")
        feed.followers += 1
        return feed

    def _detach(self, feed: RunFeed) -> None:
        feed.followers -= 1
        if not feed.followers and not feed.local and self._feeds.get(feed.run_id) is feed and feed.finished:
            del self._feeds[feed.run_id]

    async def _read_for(self, feed: RunFeed) -> None:
        # One reader per Run driven elsewhere: a page after each wake-up, fanned out to the followers here.
        run_id = feed.run_id
        try:
            async with self.stores.changes(run_id) as changed:
                while feed.followers and not (feed.local or feed.closed or feed.finished):
                    page = await self._page_after(run_id, feed.last)
                    if feed.local or feed.closed:
                        return
                    done = page.finished and (not page.deliveries or page.deliveries[-1].event_id >= page.last_event_id)
                    feed.publish(((d.event_id, d.data) for d in page.deliveries), finished=done)
                    if len(page.deliveries) == self._page:
                        continue
                    if not done:
                        await changed(self._wait_remote)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %r: reading the delivery log for this process's followers failed", run_id)
            feed.close()
        finally:
            if self._feeds.get(run_id) is feed and not feed.local:
                del self._feeds[run_id]
                if not feed.finished:
                    feed.close()

    async def _page_after(self, run_id: str, after: int, *, limit: int | None = None) -> Page:
        page_size = self._page if limit is None else limit

        async def read() -> Page:
            page: Page = await asyncio.to_thread(self.deliveries.page, run_id, after=after, limit=page_size)
            return page

        return await READ_AGAIN.call_async(read, self.stores.lost)


@attrs.frozen
class _Plan:
    """What ``_prepare`` made of a run of items: the write (None: nothing to commit), the stream cursor
    after the items it projected, how many items it took, an item to compare with the journal before
    going on, and whether the write ends the Run."""

    write: StreamWrite | None
    cursor: StreamCursor
    taken: int
    resent: HarnessStreamEvent | None
    ends: bool


def _resent(cursor: StreamCursor, item: HarnessStreamEvent) -> bool:
    # An item at a sequence its Run has already passed: perhaps the stored item sent again.
    own = cursor.cursor_of(item.run_id)
    return own is not None and item.sequence < own.next_sequence


def _run_error(code: str, message: str) -> str:
    return agui_to_json(RunErrorEvent(message=message, code=code, timestamp=int(time.time() * 1000)))


def _take_catch_up(observer: HarnessAguiObserver, tag: str) -> tuple[int, bytes]:
    # In a worker thread, while the driver holds still: the catch-up of the observer's state and the last
    # event id it covers, as frames (the last one carries that id, so a reconnect continues after it).
    count = observer.event_count
    events = observer.catch_up()
    frames = [sse_frame(e) for e in events]
    if frames:
        frames[-1] = sse_frame(events[-1], event_id=f"{count}.{tag}")
    return count, "".join(frames).encode("utf-8", "surrogatepass")


async def _ingest(source: AsyncIterable[HarnessStreamEvent], queue: asyncio.Queue[HarnessStreamEvent | _End],
                  stopping: Callable[[], bool]) -> None:
    # Read the Harness stream into the driver's queue (bounded: a Harness runs at most that far ahead).
    # Whatever the stream raises (SystemExit and KeyboardInterrupt included: a Harness must not take the
    # server down) ends the Run; only a cancellation goes through: the driver's (it stops), or a cancel of
    # the Run (``stopping()``), after which the stream is closed and the Run ends cancelled.
    iterator = aiter(source)
    count = 0
    try:
        try:
            async for item in iterator:
                await queue.put(item)
                count += 1
            end = _End(items=count)
        except asyncio.CancelledError:
            if not stopping():
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            end = _End(cancelled=True, items=count)
        except BaseException as e:  # noqa: B036 - see above: the Harness is contained, whatever it raises
            end = _End(e, items=count)
        await queue.put(end)
    finally:
        await _close(iterator)


async def _deferred(source: Callable[[], AsyncIterable[HarnessStreamEvent]]) -> AsyncIterator[HarnessStreamEvent]:
    # The stream ``source()`` returns, started inside the Run's task (so that what it raises, even when
    # called, ends the Run cleanly) and closed with it.
    iterator = aiter(source())
    try:
        async for item in iterator:
            yield item
    finally:
        await _close(iterator)


async def _close(stream: object) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except asyncio.CancelledError:
            raise
        except BaseException:  # noqa: B036 - a Harness stream's clean-up never takes the server down
            log.warning("closing a Harness stream raised", exc_info=True)

