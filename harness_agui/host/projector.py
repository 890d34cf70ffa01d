# The protocol of ``delivery.py`` in one call: rebuild from the journal up to
# what was delivered, check it, then tail the journal and record every item's
# events. A fresh start and a restart after a crash are the same call; only
# the delivery cursor differs.
#
# The call owns the Run's delivery cursor from the moment it reads it: the
# rebuilt projection is compared with the events of the items through that
# cursor (those never change once recorded), and each record passes the
# cursor the call itself left (``expected_cursor``). If another projector
# records meanwhile, the next comparison or record finds events or a cursor
# it did not write, and the call stops with ``ProjectorConflictError``,
# having written nothing after that point.
#
# Every storage call runs in a worker thread (``asyncio.to_thread``), so a
# durable commit (an fsync with ``synchronous=FULL``) never stalls the event
# loop; only ``observe_encoded()`` runs on it. This is the kit's protocol for
# a journal written by someone else (an ingest process, a Harness that
# appends): it tails the journal and records item by item. A server that
# holds the Harness stream itself drives its Runs with ``host.supervisor``,
# which journals and records each item in one batched commit and hands the
# events to its followers in memory; both start with ``rebuild``.

from __future__ import annotations

import asyncio
from collections.abc import Callable

import attrs

from ..core.encode import encoded
from ..core.observer import HarnessAguiObserver
from ..core.reduce import Processor
from .checkpoints import resume_from_checkpoint
from .checks import Cursor
from .delivery import Delivery
from .errors import DeliveryMismatchError, ProjectorConflictError
from .protocols import CheckpointStore, DeliveryLog, SourceJournal

__all__ = ["project_run", "rebuild", "Rebuilt"]


@attrs.frozen
class Rebuilt:
    """What ``rebuild`` found: the delivery ``cursor`` it rebuilt through (None: nothing recorded), the
    Run's ``last_event_id``, whether it had ``ended`` (finished, or failed by ``fail``), and whether it
    ended by ``fail`` (``failed``: the log's last event is that RUN_ERROR, not the projection's)."""

    cursor: Cursor
    last_event_id: int
    ended: bool
    failed: bool


async def rebuild(run_id: str, journal: SourceJournal, deliveries: DeliveryLog, observer: HarnessAguiObserver, *,
                  checkpoints: CheckpointStore | None = None, processor_identity: str | None = None) -> Rebuilt:
    """Resume fresh ``observer`` with root Run ``run_id``'s stream through its delivery cursor (from the
    newest valid checkpoint, when ``checkpoints`` is given) and check that the rebuilt projection holds
    exactly the recorded events. Raises as ``project_run`` does before it follows the journal."""
    cursor, ended, last = await asyncio.to_thread(_delivered, run_id, deliveries)
    failed = False
    if cursor is not None or ended:
        start = 0  # the events the rebuilt projection took from a checkpoint, not from the journal
        if cursor is not None and checkpoints is not None:
            used = await resume_from_checkpoint(observer, checkpoints, journal, run_id, through=cursor,
                                                processor_identity=processor_identity)
            start = 0 if used is None else used.event_count
        elif cursor is not None:
            await observer.resume(journal.read_prefix(run_id, through=cursor))
        failed = await asyncio.to_thread(_check_rebuilt, run_id, cursor, observer, deliveries, ended, start)
    return Rebuilt(cursor, last, ended, failed)


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
    rebuilt = await rebuild(run_id, journal, deliveries, observer, checkpoints=checkpoints,
                            processor_identity=processor_identity)
    cursor = rebuilt.cursor
    if observer.finished or rebuilt.failed:
        return observer
    async for item in journal.tail(run_id, after=cursor, poll_interval=poll_interval):
        events = observer.observe_encoded(item)  # the wire JSON, written from the records
        delivered = await asyncio.to_thread(deliveries.record, item, events, root_run_id=run_id,
                                            expected_cursor=cursor)
        cursor = 0 if cursor is None else cursor + 1  # the tail yields every position in turn
        if checkpoints is not None:
            await asyncio.to_thread(checkpoints.offer, run_id, observer, processor_identity=processor_identity)
        if publish is not None:
            publish(delivered)
    return observer


def _delivered(run_id: str, deliveries: DeliveryLog) -> tuple[Cursor, bool, int]:
    # The delivery log's cursor, whether the Run ended, and its last event id: one worker-thread hop.
    return deliveries.cursor(run_id), deliveries.finished(run_id), deliveries.last_event_id(run_id)


def _check_rebuilt(run_id: str, cursor: int | None, observer: HarnessAguiObserver, deliveries: DeliveryLog,
                   ended: bool, start: int) -> bool:
    # Whether the log ends with the RUN_ERROR of ``fail()`` after the rebuilt events (the Run was ended
    # for its clients without its terminal item); raises if the rebuilt events are not the recorded ones.
    # The first ``start`` events came from a checkpoint the Host wrote (trusted: it was taken of a
    # projection whose events were recorded), so only the events after them are compared.
    everything = deliveries.replay(run_id, after=start)
    through = -1 if cursor is None else cursor
    recorded = [d for d in everything if d.source_position <= through]
    if len(recorded) < len(everything):
        raise ProjectorConflictError(run_id=run_id, cursor=cursor, found=deliveries.cursor(run_id))
    failed = ended and not observer.finished and bool(recorded) and recorded[-1].event_type == "RUN_ERROR"
    if failed:
        recorded.pop()
    if observer.event_count != start + len(recorded):
        raise DeliveryMismatchError(
            f"the projection rebuilt from the journal has {observer.event_count} events, "
            f"the delivery log recorded {start + len(recorded)}", run_id=run_id)
    if not observer.retains_events:  # a live-only observer keeps no events to compare: the count must do
        return failed
    for delivered, event in zip(recorded, encoded(observer.snapshot(start)), strict=True):
        if delivered.data != event.json:
            raise DeliveryMismatchError(
                f"event {delivered.event_id} rebuilt from the journal differs from the one delivered", run_id=run_id)
    return failed
