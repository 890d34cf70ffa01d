# The Host kit's errors.
#
# A history that breaks the Harness contract (an item of another Run, a
# repeated, decreasing or skipped sequence, an item after the terminal result,
# a prefix that stops short of the handoff cursor) raises a
# subclass of ``HistoryError``. ``HistoryError`` is an ``AguiObservationError``
# on purpose: when the checks run inside ``resume()``, a Host that already
# catches the library's error to retry a resume catches these too, and the
# observer is left fresh either way. Each class keeps its arguments as
# attributes, so a Host can log or branch on ``run_id``, ``sequence`` and
# ``expected`` without parsing messages.
#
# Storage faults are not history faults: a journal asked to overwrite a stored
# item with a different one raises ``JournalConflictError``, and a delivery log
# asked to record out of order or to resume from an unknown event id raises a
# ``DeliveryError``. Both are ValueErrors: the caller passed a value the store
# cannot accept, and nothing was written.

from __future__ import annotations

from ..core.errors import AguiObservationError

__all__ = [
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "JournalConflictError",
    "DeliveryError",
    "DeliveryOrderError",
    "UnknownEventIdError",
    "DeliveryMismatchError",
]


class HistoryError(AguiObservationError):
    """A source history broke the Harness contract.

    ``run_id`` is the Run being read, ``sequence`` the sequence of the item at
    fault (None when the fault is that an item is missing at the end),
    ``expected`` the sequence that was due there when there is one, and
    ``reason`` the message.
    """

    def __init__(self, reason: str, *, run_id: str, sequence: int | None, expected: int | None = None) -> None:
        super().__init__(reason, sequence=sequence)
        self.run_id = run_id
        self.expected = expected
        self.args = (str(self),)

    def __str__(self) -> str:
        where = f"run {self.run_id!r}" + ("" if self.sequence is None else f", sequence {self.sequence}")
        return f"{where}: {self.reason}"


class ForeignRunError(HistoryError):
    """An item of another Run (or of another Thread) appeared in a Run's history."""


class SequenceOrderError(HistoryError):
    """An item repeated or went back to an earlier sequence."""


class SequenceGapError(HistoryError):
    """An item skipped one or more sequences (``expected`` was due)."""


class AfterTerminalError(HistoryError):
    """An item came after the Run's terminal result."""


class IncompletePrefixError(HistoryError):
    """A prefix ended before the requested handoff cursor (``expected``).

    ``sequence`` is the last sequence the prefix held, None if it was empty.
    """


class JournalConflictError(ValueError):
    """A different item was appended at a (run id, sequence) already stored.

    Nothing is written. ``run_id`` and ``sequence`` name the slot.
    """

    def __init__(self, run_id: str, sequence: int) -> None:
        self.run_id = run_id
        self.sequence = sequence
        super().__init__(f"run {run_id!r}, sequence {sequence}: a different item is already stored there")


class DeliveryError(ValueError):
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
