# The log of a live-only observer (``HarnessAguiObserver(retain_events=False)``).
#
# The reducer writes a Run's events only by ``state.events.extend(records)``,
# and the state keeps whatever that returns. A ``LiveLog`` in that place takes
# the same records and keeps their number, not the records, so a live-only
# observer's memory does not grow with the events it has emitted: the Host's
# delivery log keeps them. The reducer never reads the log back.
#
# With ``messages`` (``track_messages=True``), the log also folds every
# record into the conversation (``core.conversation``: the client's message
# list and the timeline of the debug views), so that ``messages()``,
# ``catch_up()`` and the views work without the events; that keeps the
# conversation's content, which grows with the text and the entries, not
# with every delta.

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .conversation import EMPTY_CONVERSATION, Conversation, fold_records
from .records import Record

__all__ = ["LiveLog"]


class LiveLog:
    """A log that counts records (and, optionally, folds them into the
    conversation) without keeping them. Immutable: ``extend`` returns a new
    log."""

    __slots__ = ("_count", "_messages")

    _count: int
    _messages: Conversation | None

    def __init__(self, count: int = 0, messages: Conversation | None = None) -> None:
        if type(count) is not int or count < 0:
            raise ValueError(f"a LiveLog counts from 0, not {count!r}")
        self._count = count
        self._messages = messages

    @classmethod
    def tracking(cls, track_messages: bool) -> LiveLog:
        """An empty log that folds the conversation when ``track_messages``."""
        return cls(0, EMPTY_CONVERSATION if track_messages else None)

    @classmethod
    def of_records(cls, records: Iterable[Record], *, track_messages: bool = False) -> LiveLog:
        """The LiveLog of a log that held ``records``."""
        return cls.tracking(track_messages).extend(records)

    @property
    def messages(self) -> Conversation | None:
        """The conversation folded from the records, when this log tracks it."""
        return self._messages

    def without_messages(self) -> LiveLog:
        """This log, not tracking the conversation."""
        return self if self._messages is None else LiveLog(self._count)

    def extend(self, records: Iterable[Record]) -> LiveLog:
        """A new log with ``records`` appended (this one if there are none)."""
        if not isinstance(records, (list, tuple)):
            records = tuple(records)
        if not records:
            return self
        messages = self._messages
        if messages is not None:
            messages = fold_records(messages, records)
        return LiveLog(self._count + len(records), messages)

    def append(self, record: Record) -> LiveLog:
        return self.extend((record,))

    def __len__(self) -> int:
        return self._count

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LiveLog):
            return self._count == other._count and self._messages == other._messages
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return LiveLog, (self._count, self._messages)

    def __repr__(self) -> str:
        return f"LiveLog({self._count} records, not retained)"
