# The Host kit's errors. The whole tree of the library's errors is drawn in
# ``harness_agui.core.errors``; this module re-exports the history errors
# from there (they used to live here) and adds the store's own.
#
# A history that breaks the order of its Run (an item of another Run, a
# repeated, decreasing or skipped sequence, an item after the terminal result,
# a prefix that stops short of the handoff cursor) raises a ``HistoryError``
# subclass from ``core.history``, whichever reader found it, the journal and
# the delivery log included, and the same class for the same fault: a
# delivery log asked to record an item twice raises the SequenceOrderError a
# journal raises for an item sent twice. A journal asked to store a different
# item at an occupied (run id, sequence) raises ``JournalConflictError``, a
# ``SequenceOrderError`` that says the slot holds another item.
#
# ``StorageError`` is the store itself failing: a file found damaged (a page
# SQLite cannot read, a row whose checksum, type or neighbours do not fit:
# ``DamagedStoreError``, naming the table and the row) or a write asked of a
# store opened read-only (``ReadOnlyStoreError``). ``DeliveryError`` is the
# delivery log turning a request down: a ``Last-Event-ID`` it never assigned,
# a rebuilt projection that is not what was delivered, another projector
# that recorded meanwhile. Both are ValueErrors; nothing was written.

from __future__ import annotations

import warnings
from typing import Any

from ..core.errors import (
    AfterTerminalError,
    ForeignRunError,
    HarnessAguiError,
    HistoryError,
    IncompletePrefixError,
    SequenceGapError,
    SequenceOrderError,
)

__all__ = [
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "StorageError",
    "DamagedStoreError",
    "ReadOnlyStoreError",
    "JournalConflictError",
    "DeliveryError",
    "UnknownEventIdError",
    "ForeignEventIdError",
    "DeliveryMismatchError",
    "ProjectorConflictError",
    "FollowerLimitError",
]


class StorageError(HarnessAguiError, ValueError):
    """A Host-kit store (source journal, delivery log, checkpoint store)
    cannot keep or give back what it holds: its file is damaged, or it was
    opened read-only; nothing was written."""


class DamagedStoreError(StorageError):
    """The store's file is damaged: SQLite reports it corrupt, or a row read
    back does not hold what was written (a checksum that does not match, a
    value of the wrong type, an event id missing between its neighbours).

    Nothing read from the damaged part is returned, and nothing is written.
    ``path`` is the database file, ``table`` the table being read (None when
    the file could not be read at all), ``row`` the row's key as text (for
    example ``run_id='r', sequence=3``; None when SQLite could not say which
    row), ``reason`` what was wrong. Restore the file from a copy: the store
    does not repair it.
    """

    def __init__(self, reason: str, *, path: str, table: str | None = None, row: str | None = None) -> None:
        self.path = path
        self.table = table
        self.row = row
        self.reason = reason
        where = "" if table is None else f"table {table}" + ("" if row is None else f", row {row}") + ": "
        super().__init__(f"{path}: damaged: {where}{reason}")


class ReadOnlyStoreError(StorageError):
    """A write was asked of a store opened with ``read_only=True``; nothing
    was written. ``path`` is the database file, ``operation`` the method."""

    def __init__(self, operation: str, *, path: str) -> None:
        self.path = path
        self.operation = operation
        super().__init__(f"{path}: opened read-only: {operation}() is refused")


class JournalConflictError(SequenceOrderError):
    """A different item was appended at a (run id, sequence) already stored.

    Nothing is written. ``run_id`` and ``sequence`` name the slot,
    ``expected`` the sequence the Run's next item must carry. A
    ``SequenceOrderError`` (the item repeats or goes back to a stored
    sequence, as every reader reports it) that also says the stored item
    differs; it is no longer a ``StorageError``.
    """

    def __init__(self, run_id: str, sequence: int, *, expected: int | None = None) -> None:
        super().__init__("a different item is already stored there", run_id=run_id, sequence=sequence,
                         expected=expected)


class DeliveryError(HarnessAguiError, ValueError):
    """The delivery log refused a request; nothing was written.

    ``run_id`` names the Run, ``reason`` what was wrong.
    """

    def __init__(self, reason: str, *, run_id: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(f"run {run_id!r}: {reason}")


class UnknownEventIdError(DeliveryError):
    """A client asked for the events after an id this log never assigned to the Run.

    ``event_id`` is what was asked, as given (the number, or the header's
    text); ``last_event_id`` the last id number assigned in the Run, None
    when the id was refused without looking (a ``ForeignEventIdError``).
    """

    def __init__(self, *, run_id: str, event_id: str | int, last_event_id: int | None,
                 reason: str | None = None) -> None:
        if reason is None:
            reason = f"event id {event_id} was never assigned (last is {last_event_id})"
        super().__init__(reason, run_id=run_id)
        self.event_id = event_id
        self.last_event_id = last_event_id


class ForeignEventIdError(UnknownEventIdError):
    """A ``Last-Event-ID`` that is not an id of this Run: another Run's id,
    a bare number (the id format before ids named their Run) or no id at all.
    Refused before anything is read or streamed; ``last_event_id`` is None.
    """

    def __init__(self, reason: str, *, run_id: str, event_id: str | int) -> None:
        super().__init__(run_id=run_id, event_id=event_id, last_event_id=None,
                         reason=f"Last-Event-ID {event_id!r:.80} {reason}")


class DeliveryMismatchError(DeliveryError):
    """A projection rebuilt from the journal disagrees with what was delivered.

    Raised on restart when the resumed projection does not hold exactly the
    events recorded for the delivered prefix (a processor that is not
    replay-stable, or a journal and delivery log that do not belong together).
    """


class ProjectorConflictError(DeliveryError):
    """Another projector recorded events for the Run since this one started.

    Two projectors ran on one Run at once (a Host restarted while its old
    process still runs, or ``project_run`` called twice): the delivery cursor
    moved under this one. Nothing was written by the call that found it; the
    log stays whole, and the other projector goes on. ``cursor`` is the
    delivery cursor this projector expected, ``found`` the one stored.
    """

    def __init__(self, *, run_id: str, cursor: int | None, found: int | None, reason: str | None = None) -> None:
        if reason is None:
            reason = (f"another projector recorded events for this run since this one started (it expected the "
                      f"delivery cursor at {cursor}, found {found})")
        super().__init__(reason, run_id=run_id)
        self.cursor = cursor
        self.found = found


class FollowerLimitError(DeliveryError):
    """A Run already has as many followers in this process as it may (``max_followers``); the new
    follower is turned away before anything is streamed (a server answers 503). ``limit`` is the
    limit."""

    def __init__(self, *, run_id: str, limit: int) -> None:
        super().__init__(f"the run already has {limit} followers here, the most it may have", run_id=run_id)
        self.limit = limit


def __getattr__(name: str) -> Any:
    # Names kept for one release, with a DeprecationWarning.
    if name == "DeliveryOrderError":
        warnings.warn("DeliveryOrderError is deprecated: the delivery logs raise the HistoryError of the fault "
                      "(SequenceOrderError, SequenceGapError, AfterTerminalError, ForeignRunError), as the "
                      "journals do; DeliveryOrderError is now HistoryError itself", DeprecationWarning,
                      stacklevel=2)
        return HistoryError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
