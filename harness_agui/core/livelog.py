# The log of a live-only observer (``HarnessAguiObserver(retain_events=False)``).
#
# The reducer writes a Run's events only by ``state.events.extend(records)``,
# and the state keeps whatever that returns. A ``LiveLog`` in that place takes
# the same records and keeps their number, not the records, so a live-only
# observer's memory does not grow with the events it has emitted: the Host's
# delivery log keeps them.
#
# Two readers of the log in the reducer need some records back, and a
# LiveLog keeps exactly those (``_KEEP``), so that the projection is the same
# byte for byte as with a retained log:
#
#   - when a stream's first subagent item arrives, ``core.subagents`` reads
#     the ids the root Run has published so far (the START of each text,
#     reasoning message and tool call, and each tool result: one id per
#     message, not per delta). A LiveLog keeps those ids (strings the state
#     shares anyway), and iterating it gives one stand-in record per id, of
#     the kind that published it, with those ids and nothing else;
#   - when a subagent's delegation completes, it reads the content records
#     of that subagent's last assistant text message back from the log, by
#     position (``log[at:]``): a LiveLog keeps the text content records of
#     each running subagent from the start of its latest assistant message,
#     with their positions (older ones, and a finished subagent's, are never
#     read again and are dropped).
#
# Iterating a LiveLog gives those stand-ins and the kept text records, and
# slicing it ``[at:]`` the kept text records at positions from ``at``: enough
# for those two readers, and what they find is what they would find in the
# full log. Anything else that would read the events (``snapshot()``)
# refuses in the observer.
#
# With ``messages`` (``track_messages=True``), the log also folds every
# record into the AG-UI message list (``core.conversation``), so that
# ``messages()`` and ``catch_up()`` work without the events; that keeps the
# conversation's content, which grows with the text, not with the events.

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any, overload

from pyrsistent import PVector, pvector

from . import records as ev
from .conversation import EMPTY_MESSAGES, Messages, fold_records
from .records import Record

__all__ = ["LiveLog"]

# The kinds whose records publish a message id (a root Run's, before any subagent), or a tool call id.
_PUBLISHING = frozenset(("TEXT_MESSAGE_START", "REASONING_MESSAGE_START", "TOOL_CALL_RESULT"))
_CALL_START = "TOOL_CALL_START"
_SUBAGENT_TEXT = "TEXT_MESSAGE_CONTENT@subagent"
_SUBAGENT_START = "TEXT_MESSAGE_START@subagent"
_SUBAGENT_ENDS = frozenset(("SUBAGENT_FINISHED", "SUBAGENT_ERROR"))
_NO_RECORDS: PVector[Record] = pvector()
_NO_IDS: PVector[str] = pvector()
_NO_POSITIONS: PVector[int] = pvector()


class LiveLog:
    """A log that counts records and keeps only what the reducer reads back
    (see the module comment); optionally the message list as well."""

    __slots__ = ("_count", "_message_ids", "_call_ids", "_texts", "_positions", "_messages")

    def __init__(self, *, track_messages: bool = False) -> None:
        self._count = 0
        self._message_ids = _NO_IDS
        self._call_ids = _NO_IDS
        self._texts = _NO_RECORDS
        self._positions = _NO_POSITIONS
        self._messages: Messages | None = EMPTY_MESSAGES if track_messages else None

    @classmethod
    def _of(cls, count: int, message_ids: PVector[str], call_ids: PVector[str], texts: PVector[Record],
            positions: PVector[int], messages: Messages | None) -> LiveLog:
        log = object.__new__(cls)
        log._count = count
        log._message_ids = message_ids
        log._call_ids = call_ids
        log._texts = texts
        log._positions = positions
        log._messages = messages
        return log

    @classmethod
    def of_records(cls, records: Iterable[Record], *, track_messages: bool = False) -> LiveLog:
        """The LiveLog of a log that held ``records``."""
        return cls(track_messages=track_messages).extend(records)

    @property
    def messages(self) -> Messages | None:
        """The message list, when this log tracks it."""
        return self._messages

    def without_messages(self) -> LiveLog:
        """This log, not tracking the message list."""
        if self._messages is None:
            return self
        return LiveLog._of(self._count, self._message_ids, self._call_ids, self._texts, self._positions, None)

    def extend(self, records: Iterable[Record]) -> LiveLog:
        """A new log with ``records`` appended (this one if there are none)."""
        if not isinstance(records, (list, tuple)):
            records = tuple(records)
        if not records:
            return self
        count = self._count
        message_ids, call_ids = self._message_ids, self._call_ids
        texts, positions = self._texts, self._positions
        for i, record in enumerate(records):
            tag = record[0]
            if tag in _PUBLISHING:
                message_ids = message_ids.append(ev.field_of(record, "message_id"))
            elif tag == _CALL_START:
                call_ids = call_ids.append(ev.field_of(record, "tool_call_id"))
            elif tag == _SUBAGENT_TEXT:
                texts = texts.append(record)
                positions = positions.append(count + i)
            elif texts and (tag in _SUBAGENT_ENDS or tag == _SUBAGENT_START
                            and ev.field_of(record, "role") == "assistant"):
                # That subagent's earlier text is never read again: its last assistant message starts
                # here, or it has ended.
                run_id = ev.subagent_of(record) if tag == _SUBAGENT_START else ev.field_of(record, "subagent_run_id")
                texts, positions = _dropped(texts, positions, run_id)
        messages = self._messages
        if messages is not None:
            messages = fold_records(messages, records)
        return LiveLog._of(count + len(records), message_ids, call_ids, texts, positions, messages)

    def append(self, record: Record) -> LiveLog:
        return self.extend((record,))

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Record]:
        for message_id in self._message_ids:
            yield ev.text_start(0, message_id)
        for call_id in self._call_ids:
            yield ev.tool_call_start(0, call_id, "", None)
        yield from self._texts

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Record, ...]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice) and index.stop is None and index.step is None:
            start = index.start or 0
            if start < 0:
                start = max(0, start + self._count)
            first = bisect.bisect_left(self._positions, start)
            return tuple(self._texts[first:])
        raise IndexError("a live-only observer keeps no events (retain_events=False)")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LiveLog):
            return (self._count == other._count and self._message_ids == other._message_ids
                    and self._call_ids == other._call_ids and self._texts == other._texts
                    and self._positions == other._positions and self._messages == other._messages)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return _live_log, (self._count, self._message_ids, self._call_ids, self._texts, self._positions,
                           self._messages)

    def __repr__(self) -> str:
        return f"LiveLog({self._count} records, not retained)"


def _dropped(texts: PVector[Record], positions: PVector[int], run_id: str | None,
             ) -> tuple[PVector[Record], PVector[int]]:
    """``texts`` (and their ``positions``) without subagent ``run_id``'s."""
    kept = [(r, p) for r, p in zip(texts, positions, strict=True) if ev.subagent_of(r) != run_id]
    if len(kept) == len(texts):
        return texts, positions
    return pvector(r for r, _ in kept), pvector(p for _, p in kept)


def _live_log(count: int, message_ids: PVector[str], call_ids: PVector[str], texts: PVector[Record],
              positions: PVector[int], messages: Messages | None) -> LiveLog:
    return LiveLog._of(count, message_ids, call_ids, texts, positions, messages)
