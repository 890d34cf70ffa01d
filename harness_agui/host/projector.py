# The start of every projection from a journal (the driver's, and so
# ``project_run``'s and a ``Worker``'s): rebuild the projection through the
# delivery cursor, from the newest valid checkpoint when there is one, and
# check it against the recorded events (those never change once recorded).
# A projector that finds events past the cursor it read, or different ones,
# stops (``ProjectorConflictError``, ``DeliveryMismatchError``) having
# written nothing. Storage is read in worker threads (``asyncio.to_thread``).

from __future__ import annotations

import asyncio

import attrs

from ..core.encode import encoded
from ..core.observer import HarnessAguiObserver
from .checkpoints import resume_from_checkpoint
from .checks import Cursor
from .errors import DeliveryMismatchError, ProjectorConflictError
from .protocols import CheckpointStore, DeliveryLog, SourceJournal

__all__ = ["rebuild", "Rebuilt"]


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
