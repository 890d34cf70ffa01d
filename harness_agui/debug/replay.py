# Step-through replay of a retained Run, for people debugging it.
#
# ``steps`` walks a history with the reducer's own transition, ``advance``,
# and hands out every intermediate state exactly as the reducer returned it:
# states are immutable and share structure, so keeping all of them costs a
# few pointers per step and nothing is copied. A step's events are the
# records its item appended to the state, built into AG-UI events only when
# somebody reads them.
#
# A history holds source items or wire lines (decoded here and numbered from
# 1, blank lines passed over), or is a path to a JSONL journal that is read
# line by line. ``diagnose`` makes the same walk but turns the first failure
# (the iterable raising, an undecodable line, an item the reducer or the
# processor refuses, the processor raising) into a report instead of an
# exception. The lookups are plain scans that compare records, so finding a
# message in a long Run builds no AG-UI event at all.

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, Literal

import attrs

from ..core._aio import as_async_iterable
from ..core.records import EventLog, Record, event_type, field_of
from ..core.reduce import Processor, advance
from ..core.source import HarnessEvent, HarnessStreamEvent, PartDeltaEvent, PartEndEvent, PartStartEvent
from ..core.state import INITIAL_STATE, OpenPart, ProjectionState
from ..wire.codec import decode
from .views import (
    diagnosis_html,
    diagnosis_repr,
    diagnosis_text,
    failed_step_repr,
    step_html,
    step_repr,
    step_text,
)

__all__ = [
    "Step",
    "FailedStep",
    "Diagnosis",
    "Stage",
    "History",
    "steps",
    "asteps",
    "diagnose",
    "adiagnose",
    "find_message",
    "find_tool_call",
    "part_steps",
]

Entry = HarnessStreamEvent | str | bytes
History = Iterable[Entry] | os.PathLike[str]
"""Source items, wire lines (str or bytes), or the path of a JSONL journal."""

Stage = Literal["read", "decode", "project"]
"""Where a replay failed: reading the history, decoding a line, or projecting an item."""


@attrs.frozen(repr=False)
class Step:
    """One item of a replayed history and what it did.

    ``position`` counts items from 0; ``line`` is the 1-based journal line
    the item was decoded from (None when the history held items). ``before``
    and ``after`` are the very states the reducer took and returned, and
    ``events`` the AG-UI events this item produced, built when read.
    """

    position: int
    item: HarnessStreamEvent
    before: ProjectionState
    after: ProjectionState
    events: EventLog
    line: int | None = None

    @property
    def records(self) -> Sequence[Record]:
        """The records this item appended to the state (the events unbuilt)."""
        return self.after.snapshot().records[len(self.before.events):]

    @property
    def sequence(self) -> int:
        return self.item.sequence

    @property
    def request(self) -> int | None:
        """The model request the Run is in after this item."""
        return self.after.request_index

    @property
    def open_parts(self) -> tuple[OpenPart, ...]:
        """The parts still open after this item, in index order."""
        return self.after.open_parts

    def __repr__(self) -> str:
        return step_repr(self)

    def __str__(self) -> str:
        return step_text(self)

    def _repr_html_(self) -> str:
        return step_html(self)


@attrs.frozen(repr=False)
class FailedStep:
    """Where a replay stopped.

    ``item`` is what the history yielded at ``position`` (None when the
    history raised or the line could not be decoded; ``text`` then holds the
    line). ``before`` is the state the item met, ``error`` the exception.
    """

    position: int
    line: int | None
    item: Any
    text: str | None
    before: ProjectionState
    stage: Stage
    error: Exception

    @property
    def message(self) -> str:
        return str(self.error)

    @property
    def error_type(self) -> str:
        return type(self.error).__name__

    def __repr__(self) -> str:
        return failed_step_repr(self)


@attrs.frozen(repr=False)
class Diagnosis:
    """The result of ``diagnose``: how far a history replays and why it stops.

    ``items`` and ``events`` count what was projected before the failure
    (or in all, when ``failure`` is None); ``state`` is the last good state.
    """

    items: int
    events: int
    state: ProjectionState
    failure: FailedStep | None = None

    @property
    def ok(self) -> bool:
        """True when every item of the history was projected."""
        return self.failure is None

    @property
    def finished(self) -> bool:
        """Whether the replayed items include the Run's terminal item."""
        return self.state.finished

    def event_counts(self) -> dict[str, int]:
        """How many events of each AG-UI type the replay produced."""
        return dict(Counter(event_type(record) for record in self.state.snapshot().records))

    def __repr__(self) -> str:
        return diagnosis_repr(self)

    def __str__(self) -> str:
        return diagnosis_text(self)

    def _repr_html_(self) -> str:
        return diagnosis_html(self)


# -- the walk --------------------------------------------------------------------

_BLANK: Any = object()


class _Walk:
    __slots__ = ("processor", "state", "position", "entries")

    def __init__(self, processor: Processor | None) -> None:
        if processor is not None and not callable(processor):
            raise TypeError(f"processor must be callable, not {type(processor).__name__}")
        self.processor = processor
        self.state = INITIAL_STATE
        self.position = 0
        self.entries = 0

    def read(self, entry: Any) -> tuple[Any, int | None]:
        """(item, line) for one entry of the history; item _BLANK for a blank line.
        Raises DecodeError for a line that is not a valid item."""
        self.entries += 1
        if isinstance(entry, (str, bytes)):
            if not entry.strip():
                return _BLANK, self.entries
            return decode(entry, line=self.entries), self.entries
        return entry, None

    def advance(self, item: Any, line: int | None) -> Step:
        before = self.state
        after = advance(before, item, self.processor)
        step = Step(self.position, item, before, after, after.snapshot()[len(before.events):], line)
        self.state = after
        self.position += 1
        return step

    def feed(self, entry: Any) -> Step | None:
        item, line = self.read(entry)
        return None if item is _BLANK else self.advance(item, line)

    def outcome(self, entry: Any) -> FailedStep | None:
        """Feed one entry; a failure is returned rather than raised."""
        try:
            item, line = self.read(entry)
        except Exception as e:
            text = entry.decode("utf-8", "replace") if isinstance(entry, bytes) else entry
            return self.failed("decode", e, line=self.entries, text=text.rstrip("\r\n"))
        if item is _BLANK:
            return None
        try:
            self.advance(item, line)
        except Exception as e:
            return self.failed("project", e, item=item, line=line)
        return None

    def failed(self, stage: Stage, error: Exception, *, item: Any = None, line: int | None = None,
               text: str | None = None) -> FailedStep:
        if stage == "read" and line is None:  # a journal reader's error may know its line
            at = getattr(error, "line", None)
            line = at if isinstance(at, int) and not isinstance(at, bool) else None
        return FailedStep(self.position, line, item, text, self.state, stage, error)

    def diagnosis(self, failure: FailedStep | None = None) -> Diagnosis:
        return Diagnosis(self.position, len(self.state.events), self.state, failure)


def _journal(path: os.PathLike[str]) -> Iterator[bytes]:
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            yield line[3:] if number == 1 and line.startswith(b"\xef\xbb\xbf") else line


def _entries(history: Any, *, allow_async: bool) -> Iterable[Any] | AsyncIterable[Any]:
    if isinstance(history, os.PathLike):
        return _journal(history)
    if isinstance(history, (str, bytes)):
        raise TypeError("a history is an iterable of items or lines, or a path: wrap a journal file name in "
                        "pathlib.Path, and a single line in a list")
    if allow_async and isinstance(history, AsyncIterable):
        return history
    if isinstance(history, Iterable):
        return history
    if isinstance(history, AsyncIterable):
        raise TypeError("steps() and diagnose() read plain iterables; use asteps() or adiagnose() for an async one")
    raise TypeError(f"a history is an iterable of items or lines, or a path, not {type(history).__name__}")


def steps(history: History, processor: Processor | None = None) -> Iterator[Step]:
    """Replay ``history`` item by item; yield one ``Step`` per item.

    ``history`` is a plain iterable of source items or wire lines (str or
    bytes; blank lines are passed over), such as a list, an open journal
    file or a ``harness_agui.journal.Journal``, or the ``os.PathLike`` path
    of a JSONL journal, read lazily. Use ``asteps`` for an async iterable.
    Each item goes through ``harness_agui.reduce.advance`` with
    ``processor``, exactly as ``HarnessAguiObserver.observe`` would do it;
    ``step.after`` is the state ``advance`` returned and the next step's
    ``before`` is that same object.

    Raises TypeError at once for a ``history`` that is none of these (a str
    is refused: pass ``Path(name)`` for a file) or a processor that is not
    callable. While iterating, raises what the history, decoding
    (``DecodeError``) or ``advance`` raise, after yielding every step
    before the failing item; nothing is kept between calls.
    """
    walk = _Walk(processor)
    entries = _entries(history, allow_async=False)
    assert isinstance(entries, Iterable)
    return _steps(walk, entries)


def _steps(walk: _Walk, entries: Iterable[Any]) -> Iterator[Step]:
    for entry in entries:
        step = walk.feed(entry)
        if step is not None:
            yield step


def asteps(history: AsyncIterable[Entry] | History, processor: Processor | None = None) -> AsyncIterator[Step]:
    """``steps`` for an async iterable history (plain iterables and paths are
    accepted too): ``async for step in asteps(journal): ...``.

    Raises TypeError at once as ``steps`` does; while iterating, raises what
    the history, decoding or ``advance`` raise, after yielding every step
    before the failing item.
    """
    walk = _Walk(processor)
    entries = _entries(history, allow_async=True)
    if isinstance(entries, AsyncIterable):
        return _asteps(walk, entries)
    return aiter(as_async_iterable(_steps(walk, entries), "history"))


async def _asteps(walk: _Walk, entries: AsyncIterable[Any]) -> AsyncIterator[Step]:
    async for entry in entries:
        step = walk.feed(entry)
        if step is not None:
            yield step


def diagnose(history: History, processor: Processor | None = None) -> Diagnosis:
    """Replay ``history`` (as ``steps`` reads it) up to its first failure.

    Returns a ``Diagnosis``: with ``failure`` None and the counts of items
    and events when every item projects, else with a ``FailedStep`` naming
    the position (and journal line) of the first failure, the item, the
    state before it, the stage ("read": the iterable raised; "decode": a
    line is not a valid item; "project": the reducer or the processor
    refused the item or raised) and the exception.

    Never raises for a failure inside the history (any ``Exception``);
    raises TypeError for a ``history`` that is not a history at all or a
    processor that is not callable. Cancellation and KeyboardInterrupt
    propagate.
    """
    walk = _Walk(processor)
    entries = _entries(history, allow_async=False)
    assert isinstance(entries, Iterable)
    try:
        iterator = iter(entries)
    except Exception as e:
        return walk.diagnosis(walk.failed("read", e))
    try:
        while True:
            try:
                entry = next(iterator)
            except StopIteration:
                return walk.diagnosis()
            except Exception as e:
                return walk.diagnosis(walk.failed("read", e))
            failure = walk.outcome(entry)
            if failure is not None:
                return walk.diagnosis(failure)
    finally:
        if entries is not history:  # the journal file this call opened
            iterator.close()  # type: ignore[attr-defined]


async def adiagnose(history: AsyncIterable[Entry] | History, processor: Processor | None = None) -> Diagnosis:
    """``diagnose`` for an async iterable history (plain iterables and paths
    are accepted too). Raises and returns as ``diagnose`` does."""
    walk = _Walk(processor)
    entries = _entries(history, allow_async=True)
    if not isinstance(entries, AsyncIterable):
        return diagnose(entries, processor)
    iterator = aiter(entries)
    while True:
        try:
            entry = await anext(iterator)
        except StopAsyncIteration:
            return walk.diagnosis()
        except Exception as e:
            return walk.diagnosis(walk.failed("read", e))
        failure = walk.outcome(entry)
        if failure is not None:
            return walk.diagnosis(failure)


# -- lookups ---------------------------------------------------------------------------

def find_message(steps: Iterable[Step], message_id: str) -> Step:
    """The first step whose events carry ``message_id`` as their message id
    or tool call id: the step that started that text, reasoning or tool
    result message, or that tool call.

    Reads ``steps`` only as far as the match. Raises KeyError when no step
    did.
    """
    for step in steps:
        for record in step.records:
            if field_of(record, "message_id") == message_id or field_of(record, "tool_call_id") == message_id:
                return step
    raise KeyError(f"no step produced an event for message id {message_id!r}")


def find_tool_call(steps: Iterable[Step], tool_call_id: str) -> Step:
    """The step that emitted TOOL_CALL_START for ``tool_call_id`` (the start
    waits until the tool name is known, so this may be a delta or the end
    of the part). Reads ``steps`` only as far as the match. Raises KeyError
    when no step did."""
    for step in steps:
        for record in step.records:
            if event_type(record) == "TOOL_CALL_START" and field_of(record, "tool_call_id") == tool_call_id:
                return step
    raise KeyError(f"no step started tool call {tool_call_id!r}")


def part_steps(steps: Iterable[Step], index: int, *, request: int | None = None) -> tuple[Step, ...]:
    """The steps that touched the part at ``index``: its start, deltas and
    end, and an item that closed it implicitly (a new model request or the
    terminal item). Part indexes restart with every model request: give
    ``request`` to keep one request's part, or None for all of them.
    Raises nothing; an index no item touched gives an empty tuple."""
    out = []
    for step in steps:
        payload = step.item.event if isinstance(step.item, HarnessEvent) else None
        touched = isinstance(payload, (PartStartEvent, PartDeltaEvent, PartEndEvent)) and payload.index == index
        closed = step.before.part(index) is not None and step.after.part(index) is None
        if (touched or closed) and (request is None or step.before.request_index == request):
            out.append(step)
    return tuple(out)
