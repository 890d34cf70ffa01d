# A Run's driver: the one task that takes a Run's Harness stream, projects
# it and commits it (the run supervisor, ``host.supervisor``, makes one per
# Run it drives, and forgets the Run when its driver returns).
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
#              queued, projects each item (``observe_encoded``, whose
#              reducer checks its order: the one check of an item here),
#              reads where the stream stands from the projection's state,
#              and hands the journal rows and the event rows of the whole
#              lot to the database's writer as one ``StreamWrite``
#              (made by ``host.plan``, the half of driving that awaits nothing;
#              ``host.batch``: group commit). Once that is
#              committed, the events go to the Run's followers in memory
#              (``host.feed``). An item the process holds is never read back
#              from the database, and never decoded again.
#
# Without a Harness stream (a recovered Run and no ``reattach``), the driver
# follows the journal's tail instead and records what someone else appends.
# ``project_run`` is that mode for a journal and a delivery log that need
# not share a database: each item's events are recorded in a transaction of
# their own (``DeliveryLog.record``, under the delivery cursor the driver
# left), a checkpoint is offered after each, and whatever fails is raised to
# the caller instead of ending the Run with a RUN_ERROR.
#
# A Run must end for its followers even when it cannot end normally: when
# the projection refuses an item (or the processor raises), when the Harness
# stream raises, ends without its result, or yields an item out of order,
# or when the database cannot store what the driver writes, one RUN_ERROR is
# committed as the Run's last event, with a code saying which
# (``host.supervisor.FAILURE_CODES``), in the same transaction as the items
# before it; the journal keeps every item it accepted (the refused one too).
# Items queued before the Harness failed are projected first, so the
# RUN_ERROR comes after their events. A Run whose writes another projector's
# rows or a lost lease refuse (``ProjectorConflictError``,
# ``LeaseLostError``) is left to that projector: this driver stops, and its
# followers read the delivery log. While a late joiner's catch-up is taken of
# the Run's observer (``host.followers``), the driver holds still.

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ..core.errors import HistoryError
from ..core.history import StreamCursor
from ..core.observer import HarnessAguiObserver
from ..core.reduce import Processor
from ..core.source import HarnessStreamEvent
from .batch import BatchWriter
from .bindings import WireRun
from .checks import Cursor
from .delivery import Delivery
from .errors import ProjectorConflictError, StorageError
from .feed import RunFeed
from .options import SupervisorOptions
from .plan import Plan, prepare, run_error
from .projector import rebuild
from .protocols import CheckpointStore, DeliveryLog, SourceJournal, Stores
from .runner import StartedRun
from .writes import Recorded, StreamWrite

if TYPE_CHECKING:
    from .postgres.lease import Lease

__all__ = ["RunDriver", "DrivenRun", "close_stream", "project_run"]

log = logging.getLogger("harness_agui.host.supervisor")


@attrs.frozen
class _End:
    """The Harness stream ended (``error`` None), raised ``error``, or was stopped by a cancel
    (``cancelled``); ``items`` is how many items it gave."""

    error: BaseException | None = None
    cancelled: bool = False
    items: int = 0


@attrs.define(eq=False)
class DrivenRun:
    """A Run driven by this process: its driver's in-memory state (see the module comment), and the
    ``feed`` its followers here read (None: a ``Worker``'s Run, which has no followers here)."""

    run_id: str
    thread_id: str
    feed: RunFeed | None = None
    source: AsyncIterable[HarnessStreamEvent] | None = None  # a POSTed Run's stream, until its driver takes it
    wire: WireRun | None = None  # how its clients name it (None: by the journal's ids)
    started: StartedRun | None = None  # the runner's Run (None: recovered or taken over)
    unwritten: StreamCursor | None = None  # found in neither log when it was bound: its cursor (until resumed)
    reattached: bool = False  # its stream is ``reattach``'s (after a restart or a takeover)
    task: asyncio.Task[Any] | None = None
    ingest: asyncio.Task[None] | None = None
    stopping: bool = False  # cancelled, and the driver stops reading its stream itself
    registered: asyncio.Event = attrs.field(factory=asyncio.Event)  # PostgreSQL: its lease was taken (or not)
    lease: Lease | None = None
    publish: Callable[[tuple[Delivery, ...]], object] | None = None  # told of each commit (a Worker's)
    observer: HarnessAguiObserver | None = None
    cursor: StreamCursor = attrs.field(factory=StreamCursor)  # the stream after the last recorded item (the
    # journal's at resume, then read from the projection's state at each commit: no order rule of the driver's)
    journal_end: int | None = None  # the journal's last position
    delivered: tuple[int, int] | None = None  # the stored (cursor, last event id); None: no delivery row
    last_event_id: int = 0
    ended: bool = False
    failed: bool = False  # this driver ended it with a RUN_ERROR
    catching: asyncio.Future[tuple[int, bytes]] | None = None  # a catch-up being taken
    caught: tuple[int, bytes] | None = None  # the last catch-up: (event id it covers, its frames)

    @property
    def named(self) -> str:
        """The Run as its clients name it, for the messages they are sent: ``run 'r-1'`` (their run id)."""
        return f"run {(self.run_id if self.wire is None else self.wire.wire_run_id)!r}"


@attrs.frozen
class _Recording:
    """``project_run``'s stores: a journal and a delivery log (perhaps of two databases), and the
    checkpoint store offered each recorded item's projection."""

    journal: SourceJournal
    deliveries: DeliveryLog
    checkpoints: CheckpointStore | None
    processor_identity: str | None

    def lost(self, error: BaseException) -> bool:
        return False  # nothing is left for later: ``project_run`` raises what it meets


class RunDriver:
    """Drives Runs on one database, one task per Run (see the module comment): the supervisor's
    ``stores``, ``processor`` and ``options`` (its observer options, batch sizes and the database's
    writer's ``group_commit``; the writer is made on first use). ``wait_remote``: how often a Run
    without a Harness stream looks for what another process appended to its SQLite journal (None:
    PostgreSQL's, whose tail is woken by NOTIFY)."""

    def __init__(self, stores: Stores | _Recording, *, processor: Processor | None, options: SupervisorOptions,
                 wait_remote: float | None = None) -> None:
        self.stores = stores
        self.recording = stores if isinstance(stores, _Recording) else None  # ``project_run``'s mode
        self.journal = stores.journal
        self.deliveries = stores.deliveries
        self.processor = processor
        self.options = options
        self._wait_remote = wait_remote
        self._writer: BatchWriter | None = None

    @property
    def writer(self) -> BatchWriter:
        """The database's writer (made on first use)."""
        if self._writer is None:
            assert not isinstance(self.stores, _Recording)
            self._writer = self.stores.writer(self.options.group_commit)
        return self._writer

    async def close(self) -> None:
        """Commit what the writer holds and close it (once every driver has stopped)."""
        if self._writer is not None:
            await asyncio.to_thread(self._writer.close)

    async def drive(self, run: DrivenRun) -> None:
        """Drive ``run`` to its end (see the module comment); raises ``ProjectorConflictError`` (a lease
        lost) and what says the database is out of reach only for a Run driven under a lease, for the
        ``Worker`` to count or to try again later. The caller forgets the Run afterwards."""
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
            if source is None and run.journal_end is None and self.recording is None:  # bound, never journaled
                await self._give_up(run, "harness_agui.harness_lost",
                                    f"{run.named} was found without any item after a restart or a takeover, "
                                    "and there is no Harness to continue it (no reattach)")
                return
            if source is None:
                await self._follow_journal(run)
                return
            queue: asyncio.Queue[HarnessStreamEvent | _End] = asyncio.Queue(self.options.queue_items)
            ingest = run.ingest = asyncio.create_task(_ingest(source, queue, lambda: run.stopping),
                                                      name=f"harness-agui ingest {run.run_id}")
            source = None
            await self._live(run, queue)
        except asyncio.CancelledError:
            raise
        except ProjectorConflictError as e:  # another projector (or the lease's new holder) goes on
            log.warning("run %r: another projector owns the run; this one stops: %s", run.run_id, e)
            if run.lease is not None or self.recording is not None:
                raise  # the Worker counts it
        except Exception as e:
            if self.recording is not None:
                raise
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
            await close_stream(source)
            if run.catching is not None:
                await asyncio.gather(run.catching, return_exceptions=True)


    async def _resume(self, run: DrivenRun) -> bool:
        # Rebuild the projection through the delivery cursor; False when the Run has ended (or cannot go on).
        wire = run.wire
        named = wire is not None and (wire.wire_thread_id, wire.wire_run_id) != (wire.source_thread_id,
                                                                                 wire.source_run_id)
        observer = run.observer if run.observer is not None else HarnessAguiObserver(
            self.processor, **self.options.observer_options,
            client_thread_id=wire.wire_thread_id if named else None,  # type: ignore[union-attr]
            client_run_id=wire.wire_run_id if named else None)  # type: ignore[union-attr]
        if run.started is not None:  # started here: most often a Run neither log holds anything of
            blank, run.unwritten = run.unwritten, None  # read when it was bound (SQLite)
            if blank is None:
                try:
                    blank = await asyncio.to_thread(self.unwritten, run.run_id)
                except Exception:  # noqa: BLE001 - the rebuild below reads the same and meets the same error
                    blank = None
            if blank is not None:  # what the rebuild below would find, read in one hop instead of two
                run.observer = observer
                run.last_event_id, run.delivered = 0, None
                _reset_feed(run, 0)
                run.cursor, run.journal_end = blank, None
                return True
        recording = self.recording
        try:
            rebuilt = await rebuild(run.run_id, self.journal, self.deliveries, observer,
                                    checkpoints=None if recording is None else recording.checkpoints,
                                    processor_identity=None if recording is None else recording.processor_identity)
        except (ProjectorConflictError, StorageError):
            raise
        except Exception as e:
            if recording is not None or self.stores.lost(e):
                raise
            log.error("run %r: the projection cannot be rebuilt: %s: %s", run.run_id, type(e).__name__, e)
            await self._fail_unrebuilt(run, e)
            return False
        run.observer = observer
        run.last_event_id = rebuilt.last_event_id
        run.delivered = None if rebuilt.cursor is None else (rebuilt.cursor, rebuilt.last_event_id)
        if rebuilt.ended or observer.finished or rebuilt.failed:
            run.ended = True
            _reset_feed(run, rebuilt.last_event_id, finished=True)
            return False
        # The feed knows what was committed before the Run goes on: from here ``last_event_id()`` answers
        # from it, so a client reconnecting while the journal is read below is not told "never assigned".
        _reset_feed(run, rebuilt.last_event_id)
        run.cursor, run.journal_end = await asyncio.to_thread(self._journal_at, run.run_id, rebuilt.cursor)
        return True

    def unwritten(self, run_id: str) -> StreamCursor | None:
        """The stream's cursor before its first item when neither the journal nor the delivery log holds
        anything of Run ``run_id``, else None (the Run is rebuilt); blocking, for a worker thread. A Run
        with no item recorded and no event has not finished either: its end is an event."""
        if self.journal.cursor(run_id) is not None or self.deliveries.cursor(run_id) is not None \
                or self.deliveries.last_event_id(run_id):
            return None
        return self.journal.stream_cursor(run_id, through=None)

    def _journal_at(self, run_id: str, through: Cursor) -> tuple[StreamCursor, Cursor]:
        # In a worker thread: the stream's cursor after ``through`` and the journal's last position.
        return self.journal.stream_cursor(run_id, through=through), self.journal.cursor(run_id)

    async def _backlog(self, run: DrivenRun) -> None:
        # Project and record the items journaled after the delivery cursor (recorded nowhere yet).
        end = run.journal_end
        if end is None or run.cursor.next_position > end or self.recording is not None:
            return  # ``project_run`` records them as it follows the tail
        remaining = end - run.cursor.next_position + 1
        tail = self.journal.tail(run.run_id, after=run.cursor.last_position)
        try:
            batch: list[HarnessStreamEvent] = []
            async for item in tail:
                batch.append(item)
                remaining -= 1
                if len(batch) == self.options.batch_items or not remaining:
                    if await self._step(run, batch, journaled=True):
                        return
                    batch = []
                if not remaining:
                    return
        finally:
            await close_stream(tail)

    async def _follow_journal(self, run: DrivenRun) -> None:
        # No Harness stream here: record what another process appends to the journal, to the end.
        tail = self.journal.tail(run.run_id, after=run.cursor.last_position, poll_interval=self._wait_remote)
        try:
            async for item in tail:
                if await self._step(run, [item], journaled=True):
                    return
        finally:
            await close_stream(tail)

    async def _live(self, run: DrivenRun, queue: asyncio.Queue[HarnessStreamEvent | _End]) -> None:
        limit = self.options.batch_items
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

    async def _step(self, run: DrivenRun, items: list[HarnessStreamEvent], *, journaled: bool) -> bool:
        # Project and commit ``items`` (appending them too unless ``journaled``); True once the Run has ended.
        if self.recording is not None:
            for item in items:
                await self._record(run, item, self.recording)
            return run.ended
        while items:
            await self._hold_for_catch_up(run)
            plan = prepare(run, items, journaled=journaled)
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

    async def _record(self, run: DrivenRun, item: HarnessStreamEvent, recording: _Recording) -> None:
        # ``project_run``'s commit: the item's events in a transaction of their own, under the delivery
        # cursor this driver left (another projector's records are found, not written over).
        observer = run.observer
        assert observer is not None
        events = observer.observe_encoded(item)  # the wire JSON, written from the records
        cursor = None if run.delivered is None else run.delivered[0]
        delivered = await asyncio.to_thread(self.deliveries.record, item, events, root_run_id=run.run_id,
                                            expected_cursor=cursor)
        if delivered:
            run.last_event_id = delivered[-1].event_id
        run.delivered = (0 if cursor is None else cursor + 1, run.last_event_id)  # the tail yields every position
        run.ended = observer.finished
        if recording.checkpoints is not None:
            await asyncio.to_thread(recording.checkpoints.offer, run.run_id, observer,
                                    processor_identity=recording.processor_identity)
        if run.publish is not None:
            run.publish(delivered)

    async def _commit(self, run: DrivenRun, plan: Plan) -> None:
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
        run.failed = plan.ends and not plan.cursor.finished
        _publish(run, write.events, plan.ends)

    async def _give_up(self, run: DrivenRun, code: str, message: str) -> None:
        # End the Run for its followers with one RUN_ERROR after what is committed.
        if run.ended:
            return
        log.error("run %r ended with RUN_ERROR %s: %s", run.run_id, code, message)
        position = -1 if run.delivered is None else run.delivered[0]
        event = Recorded(run.last_event_id + 1, position, "RUN_ERROR", run_error(code, message))
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
            run.ended = run.failed = True
            return
        run.delivered = (position, event.event_id)
        run.last_event_id = event.event_id
        run.ended = run.failed = True
        _publish(run, (event,), True)

    async def fail(self, run: DrivenRun, message: Callable[[Cursor], str]) -> None:
        """End ``run``, whose projection is lost (it could not be rebuilt, or what drove it failed), with
        one RUN_ERROR ``harness_agui.projection_failed`` after what the delivery log holds; ``message``
        is given the delivery cursor. Raises what reading the delivery log raises (a RUN_ERROR that
        cannot be recorded is logged, and the Run is ``ended`` all the same)."""
        cursor = await asyncio.to_thread(self.deliveries.cursor, run.run_id)
        last = await asyncio.to_thread(self.deliveries.last_event_id, run.run_id)
        run.delivered = None if cursor is None else (cursor, last)
        run.last_event_id = last
        _reset_feed(run, last)
        await self._give_up(run, "harness_agui.projection_failed", message(cursor))

    async def _fail_unrebuilt(self, run: DrivenRun, error: BaseException) -> None:
        # The projection could not be rebuilt from the journal: end the Run after what was delivered.
        def message(cursor: Cursor) -> str:
            where = "its start" if cursor is None else f"position {cursor}"
            return (f"the projection of {run.named} could not be rebuilt through {where}: "
                    f"{type(error).__name__}: {error}")

        await self.fail(run, message)

    async def _check_resent(self, run: DrivenRun, item: HarnessStreamEvent) -> str | None:
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

    async def _hold_for_catch_up(self, run: DrivenRun) -> None:
        # The observer must not move while a catch-up is taken of it in a worker thread.
        catching = run.catching
        if catching is not None and not catching.done():
            await asyncio.wait({catching})


async def project_run(
    run_id: str,
    journal: SourceJournal,
    deliveries: DeliveryLog,
    *,
    processor: Processor | None = None,
    publish: Callable[[tuple[Delivery, ...]], object] | None = None,
    poll_interval: float | None = None,
    checkpoints: CheckpointStore | None = None,
    processor_identity: str | None = None,
    observer: HarnessAguiObserver | None = None,
) -> HarnessAguiObserver:
    """Project one root Run's stream (with its child Runs' items) from the journal into the delivery log,
    to its end.

    Creates an observer (with ``processor``), resumes it from the journal
    prefix (from the latest valid checkpoint in ``checkpoints`` and the
    items after it, when a store is given) through the delivery cursor (the position of the last item whose
    events are recorded), checks that the rebuilt projection holds exactly the recorded
    events (one JSON rendering per delivered event), then follows ``journal.tail`` after that cursor: each item is
    observed and its events recorded with their ids in one transaction
    (then, with ``checkpoints``, offered to the store, which keeps one every
    ``every`` items), and
    ``publish`` (if given) is called with the new deliveries after each
    commit. Returns the observer once the terminal item's events are
    recorded (at once if they already were, or if the Run was ended by
    ``SqliteDeliveryLog.fail``: then the observer holds the projection
    through the delivery cursor, without the recorded RUN_ERROR).

    ``checkpoints`` (a ``SqliteCheckpointStore``) makes a restart cost the
    items after the latest checkpoint instead of the whole stream; a
    checkpoint that is damaged or does not verify is skipped for an older
    one or the full prefix. ``processor_identity`` names ``processor`` in
    the checkpoints (required with a processor: a checkpoint written under
    another identity is never used); the store seals them with its key.

    ``observer``, when given, is the fresh observer to project with (made
    with the processor, or with ``retain_events=False`` for a live-only
    projection, whose rebuilt events can only be counted against the
    recorded ones, not compared), so that the Host can read it while the Run is projected
    (``messages()``, ``catch_up()``); it is the one returned.

    Raises the journal's ``HistoryError``s (a retained prefix that is broken
    or shorter than what was delivered), ``DeliveryMismatchError`` when the
    rebuilt projection differs from the recorded events (a processor that is
    not replay-stable, or stores that do not belong together),
    ``ProjectorConflictError`` when another projector recorded events for the
    Run since this call read the delivery cursor (two projectors on one Run:
    let the other one finish), ``DamagedStoreError`` for a damaged store,
    whatever ``observe()``, ``record()`` or ``publish`` raise, and
    cancellation. After an error the stores are consistent (every commit is
    whole) but the observer is lost: call ``project_run`` again to continue.
    """
    if observer is None:
        observer = HarnessAguiObserver(processor)
    elif processor is not None or not observer.is_fresh:
        raise ValueError("observer= takes a fresh observer, made with the processor (and no processor= beside it)")
    driver = RunDriver(_Recording(journal, deliveries, checkpoints, processor_identity), processor=None,
                       options=SupervisorOptions(), wait_remote=poll_interval)
    await driver.drive(DrivenRun(run_id, "", observer=observer, publish=publish))
    return observer


def _publish(run: DrivenRun, events: Sequence[Recorded], finished: bool) -> None:
    # Committed events go to the Run's followers here, and to its ``publish`` (a Worker's) as deliveries.
    if run.feed is not None:
        run.feed.publish(((e.event_id, e.data) for e in events), finished=finished)
    if run.publish is not None:
        run.publish(tuple(Delivery(run.run_id, e.event_id, e.position, e.type, e.data) for e in events))


def _reset_feed(run: DrivenRun, last_event_id: int, *, finished: bool = False) -> None:
    if run.feed is not None:
        run.feed.reset(last_event_id, finished=finished)


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
        await close_stream(iterator)


async def close_stream(stream: object) -> None:
    # Close a Harness stream (an async generator's ``aclose``), whatever its clean-up raises.
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except asyncio.CancelledError:
            raise
        except BaseException:  # noqa: B036 - a Harness stream's clean-up never takes the server down
            log.warning("closing a Harness stream raised", exc_info=True)
