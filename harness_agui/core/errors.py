"""The library's own error type."""

from __future__ import annotations

__all__ = ["AguiObservationError"]


class AguiObservationError(Exception):
    """A source item, a history or a processor broke the observer's contract.

    Raised for semantic faults: correlation changing within one observer, a
    part changing kind or identity before its end, a repeated or decreasing
    sequence, an item after the terminal item, a processor changing an event
    type or structural field, and misuse of ``resume()``. The observer is
    left exactly as it was before the failing call.

    ``reason`` is the message; ``sequence`` the source sequence of the item
    at fault when there is one.
    """

    def __init__(self, reason: str, *, sequence: int | None = None) -> None:
        self.reason = reason
        self.sequence = sequence
        super().__init__(reason if sequence is None else f"sequence {sequence}: {reason}")
