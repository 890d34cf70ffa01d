# The Host kit's errors. The whole tree of the library's errors is drawn in
# ``harness_agui.core.errors``; this module re-exports the history errors
# from there (they used to live here) and adds the storage errors.
#
# A history that breaks the order of its Run (an item of another Run, a
# repeated, decreasing or skipped sequence, an item after the terminal result,
# a prefix that stops short of the handoff cursor) raises a ``HistoryError``
# subclass, from ``core.history.advance``, whichever reader found it.
#
# A store that refuses a value raises a ``StorageError`` and writes nothing:
# a journal asked to store a different item at an occupied (run id,
# sequence) raises ``JournalConflictError``, which is also a
# ``SequenceOrderError`` (the item repeats or goes back to a stored
# sequence); a delivery log asked to record out of order or to resume from an
# unknown event id raises a ``DeliveryError``. StorageErrors are ValueErrors:
# the caller passed a value the store cannot accept.

from __future__ import annotations

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
    "JournalConflictError",
    "DeliveryError",
    "DeliveryOrderError",
    "UnknownEventIdError",
    "DeliveryMismatchError",
]


class StorageError(HarnessAguiError, ValueError):
    """A Host-kit store (source journal, delivery log) refused a value;
    nothing was written."""


class JournalConflictError(SequenceOrderError, StorageError):
    """A different item was appended at a (run id, sequence) already stored.

    Nothing is written. ``run_id`` and ``sequence`` name the slot,
    ``expected`` the sequence the Run's next item must carry. Both a
    ``SequenceOrderError`` (every reader refuses a repeated or earlier
    sequence with that class) and a ``StorageError``.
    """

    def __init__(self, run_id: str, sequence: int, *, expected: int | None = None) -> None:
        super().__init__("a different item is already stored there", run_id=run_id, sequence=sequence,
                         expected=expected)


class DeliveryError(StorageError):
    """The delivery log refused a request; nothing was written.

    ``run_id`` names the Run, ``reason`` what was wrong.
    """

    def __init__(self, reason: str, *, run_id: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(f"run {run_id!r}: {reason}")


class DeliveryOrderError(DeliveryError):
    """A batch was recorded for a source item that is not the next one.

    ``sequence`` is the item's sequence, ``cursor`` the last source sequence
    already recorded (None if none).
    """

    def __init__(self, reason: str, *, run_id: str, sequence: int, cursor: int | None) -> None:
        super().__init__(reason, run_id=run_id)
        self.sequence = sequence
        self.cursor = cursor


class UnknownEventIdError(DeliveryError):
    """A client asked for the events after an id this log never assigned.

    ``event_id`` is what was asked, ``last_event_id`` the last id assigned.
    """

    def __init__(self, *, run_id: str, event_id: int, last_event_id: int) -> None:
        super().__init__(f"event id {event_id} was never assigned (last is {last_event_id})", run_id=run_id)
        self.event_id = event_id
        self.last_event_id = last_event_id


class DeliveryMismatchError(DeliveryError):
    """A projection rebuilt from the journal disagrees with what was delivered.

    Raised on restart when the resumed projection does not hold exactly the
    events recorded for the delivered prefix (a processor that is not
    replay-stable, or a journal and delivery log that do not belong together).
    """
