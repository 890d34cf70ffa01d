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

from __future__ import annotations

from collections.abc import Callable

from ..core.observer import HarnessAguiObserver
from ..core.reduce import Processor
from ..wire.agui import agui_to_json
from .delivery import Delivery, SqliteDeliveryLog
from .errors import DeliveryMismatchError, ProjectorConflictError
from .journal import SqliteSourceJournal

__all__ = ["project_run"]


async def project_run(
    run_id: str,
    journal: SqliteSourceJournal,
    deliveries: SqliteDeliveryLog,
    *,
    processor: Processor | None = None,
    publish: Callable[[tuple[Delivery, ...]], object] | None = None,
    poll_interval: float | None = None,
) -> HarnessAguiObserver:
    """Project one Run from the journal into the delivery log, to its end.

    Creates an observer (with ``processor``), resumes it from the journal
    prefix through the delivery cursor (the last item whose events are
    recorded), checks that the rebuilt projection holds exactly the recorded
    events (one JSON rendering per delivered event), then follows ``journal.tail`` after that cursor: each item is
    observed and its events recorded with their ids in one transaction, and
    ``publish`` (if given) is called with the new deliveries after each
    commit. Returns the observer once the terminal item's events are
    recorded (at once if they already were).

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
    observer = HarnessAguiObserver(processor)
    cursor = deliveries.cursor(run_id)
    if cursor is not None:
        await observer.resume(journal.read_prefix(run_id, through=cursor))
        _check_rebuilt(run_id, cursor, observer, deliveries)
        if observer.finished:
            return observer
    async for item in journal.tail(run_id, after=cursor, poll_interval=poll_interval):
        delivered = deliveries.record(item, observer.observe(item), expected_cursor=cursor)
        cursor = item.sequence
        if publish is not None:
            publish(delivered)
    return observer


def _check_rebuilt(run_id: str, cursor: int, observer: HarnessAguiObserver, deliveries: SqliteDeliveryLog) -> None:
    everything = deliveries.replay(run_id)
    recorded = [d for d in everything if d.source_sequence <= cursor]
    if len(recorded) < len(everything):
        raise ProjectorConflictError(run_id=run_id, cursor=cursor, found=deliveries.cursor(run_id))
    if observer.event_count != len(recorded):
        raise DeliveryMismatchError(
            f"the projection rebuilt from the journal has {observer.event_count} events, "
            f"the delivery log recorded {len(recorded)}", run_id=run_id)
    for delivered, event in zip(recorded, observer.snapshot(), strict=True):
        if delivered.data != agui_to_json(event):
            raise DeliveryMismatchError(
                f"event {delivered.event_id} rebuilt from the journal differs from the one delivered", run_id=run_id)
