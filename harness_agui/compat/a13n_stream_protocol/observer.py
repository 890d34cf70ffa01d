# The observers of a13n-stream-protocol 0.21 (and, through ``Observer``, 0.5),
# as a thin shell over this library's reducer.
#
# Each observer holds one immutable ``ProjectionState`` projected in its
# vocabulary (held in its options) under the "unchecked" order policy: as in
# a13n-stream-protocol, the order of the items is the Host's to keep; only
# each Run's Thread is checked. ``observe()`` converts the native item at the
# door (``from_a13n``), runs one reducer step under the vocabulary bound to
# the native item (``vocabulary.bound``: it renders from it) and swaps the
# reference: a failure anywhere leaves the observer as it was. The events it
# returns, and those of ``snapshot()``, are built afresh from the records.
#
# The shell's own: the item types and correlation checks, the processor's
# view (it sees the native item), ``retain_events``, the asynchronous atomic
# ``resume()``, and ``export()`` / ``restore()`` through
# ``ObserverContinuation`` (the JSON upstream's Hosts persist: ``{"thread_id",
# "run_id", "state": {"request_index", "parts": {"<part index>": {kind,
# part_id, tool_name, emitted_content, emitted_signature}}, "children":
# {"<run id>": <state>}, "threads": {"<run id>": "<thread id>"}}}``), which
# maps one to one onto the Run states (the vocabulary's module comment says
# how a cursor is held).

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any, Self

import attrs
from ag_ui.core import Event

from ..._a13n_release import require_release
from ...a13n import from_a13n
from ...core.errors import AguiObservationError as _LibraryObservationError
from ...core.history import HistoryCursor
from ...core.livelog import LiveLog
from ...core.records import RecordLog
from ...core.reduce import step
from ...core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent, UnknownEvent
from ...core.state import (
    INITIAL_STATE,
    OpenPart,
    ProjectionOptions,
    ProjectionState,
    RunLedger,
    RunState,
    SubagentState,
)
from ...core.vocabulary import Vocabulary
from ._base import AguiEventProcessor, AguiObservationError, ObserverContinuation, PartCursor, RunCursor
from ._harness import natives as N
from .vocabulary import VOCABULARY, bound, published

__all__ = ["AguiEventProcessor", "AguiObservationError", "HarnessAguiObserver", "HarnessAguiStreamObserver",
           "ObserverContinuation", "PartCursor", "RunCursor"]


def stream_correlation(state: ProjectionState, item: HarnessStreamEvent) -> None:
    """A stream observer's check: each Run keeps the Thread it was first seen with."""
    if item.run_id == state.run_id or state.run_id is None:
        expected = state.thread_id
    else:
        sub = state.subagents.get(item.run_id)
        expected = None if sub is None else sub.run.history.thread_id
    if expected is not None and item.thread_id != expected:
        raise AguiObservationError("Harness Thread correlation changed for a Run")


class Observer:
    """What the observers of a13n-stream-protocol 0.21 and 0.5 share: all but
    0.21's continuations (``export`` / ``restore``). A subclass names its
    vocabulary and the a13n-harness series it reads; making one with another
    release installed raises ImportError naming both."""

    _stream = False
    _vocabulary: Vocabulary = VOCABULARY
    _supported: tuple[tuple[int, int], ...] = ((0, 20), (0, 21))

    def __init__(self, *, processor: AguiEventProcessor | None = None, retain_events: bool = True) -> None:
        require_release(f"{type(self).__module__}.{type(self).__qualname__}", self._supported)
        self._processor = processor
        self._retain_events = retain_events
        # Everything upstream publishes (a model-only input goes out with its ``display: false`` metadata, for the
        # consumer to hide), no event split, the order left to the Host.
        self._options = ProjectionOptions(show_hidden=True, max_event_bytes=None, vocabulary=self._vocabulary,
                                          order="unchecked")
        self._state = self._fresh()
        self._resuming = self._resume_completed = False

    def _fresh(self) -> ProjectionState:
        return INITIAL_STATE._replace(options=self._options, events=RecordLog() if self._retain_events else LiveLog())

    @property
    def thread_id(self) -> str | None:
        """The bound Harness Thread, once observation has begun."""
        return self._state.thread_id

    @property
    def run_id(self) -> str | None:
        """The bound Harness Run, once observation has begun."""
        return self._state.run_id

    @property
    def event_count(self) -> int:
        """How many events the observer holds (0 when it retains none): a bound for ``snapshot(stop=...)``."""
        return len(self._state.events) if self._retain_events else 0

    def snapshot(self, *, start: int = 0, stop: int | None = None) -> tuple[Event, ...]:
        """Fresh copies of the accumulated events in ``[start, stop)``.

        Raises AguiObservationError for an observer that retains no events,
        ValueError for a range outside them; changes nothing."""
        if not self._retain_events:
            raise AguiObservationError("Snapshots require retain_events=True")
        records = self._state.events
        end = len(records) if stop is None else stop
        if start < 0 or end < start or end > len(records):
            raise ValueError("snapshot range is outside the accumulated events")
        return tuple(published(record) for record in records[start:end])  # type: ignore[index]

    def observe(self, item: Any) -> tuple[Event, ...]:
        """Convert one item and accumulate its events; return them (fresh copies).

        Raises TypeError for anything but a Harness stream item,
        AguiObservationError (a ValueError) for an item that changes the
        Run's correlation, a part that changes kind or identity before its
        end, a processor that breaks its contract, or a call during
        ``resume()``; what pydantic raises for a native value it cannot
        write; and whatever the processor raises. On any error the observer
        is exactly as it was."""
        if self._resuming:
            raise AguiObservationError("Cannot observe while observer resumption is in progress")
        state, records = self._step(self._state, item)
        events = tuple(published(record) for record in records)  # before committing: nothing may fail after
        self._state = state
        return events

    def _step(self, state: ProjectionState, item: Any) -> tuple[ProjectionState, list[Any]]:
        source, native = _door(item)
        self._check_correlation(state, source)
        host, shown = self._processor, item if native is not None else source
        processor = None if host is None else (lambda _source, event: host(shown, event))
        if native is not None:
            state = state._replace(options=attrs.evolve(self._options, vocabulary=bound(self._vocabulary, native)))
        try:
            state, records = step(state, source, processor)
        except AguiObservationError:
            raise
        except _LibraryObservationError as error:
            raise AguiObservationError(error.reason) from error
        return state._replace(options=self._options), records

    def _check_correlation(self, state: ProjectionState, item: HarnessStreamEvent) -> None:
        if state.thread_id is not None and item.thread_id != state.thread_id:
            raise AguiObservationError("Harness Thread correlation changed within one observer")
        if state.run_id is not None and item.run_id != state.run_id:
            raise AguiObservationError("Harness Run correlation changed within one observer")

    async def resume(self, history: AsyncIterable[Any]) -> None:
        """Rebuild this fresh observer from a finite async iterable of the
        Run's items: each goes through ``observe()``'s conversion and
        processor into a staged state, committed when the iterable ends;
        nothing is returned (history is never published twice).

        Raises TypeError for a ``history`` that is not an async iterable,
        AguiObservationError if this observer observed or resumed before or a
        resume is in progress, and whatever iteration, conversion or the
        processor raise (cancellation included). On any failure the observer
        stays fresh; while a resume awaits items, ``observe()`` and
        ``export()`` raise and the properties show the fresh observer."""
        if not isinstance(history, AsyncIterable):
            raise TypeError("history must be an async iterable of Harness stream events")
        if self._resuming:
            raise AguiObservationError("Observer resumption is already in progress")
        if self._resume_completed or self.thread_id is not None or self.run_id is not None:
            raise AguiObservationError("Observer resumption requires a fresh observer")
        staged = self._fresh()
        self._resuming = True
        try:
            async for item in history:
                staged, _ = self._step(staged, item)
            self._state = staged
            self._resume_completed = True
        finally:
            self._resuming = False


class HarnessAguiObserver(Observer):
    """Converts and accumulates one public Harness Run as AG-UI events, in
    a13n-stream-protocol 0.21's vocabulary.

    ``observe()`` takes a13n-harness items (or this library's source items);
    ``processor(native_item, event) -> event | None`` may drop an event or
    rewrite its one content field. ``retain_events=False`` keeps no events
    (``snapshot()`` then raises, ``event_count`` stays 0).
    """

    def export(self) -> ObserverContinuation:
        """The conversion cursors (never the accumulated events), detached.
        Raises AguiObservationError during ``resume()``."""
        if self._resuming:
            raise AguiObservationError("Cannot export while observer resumption is in progress")
        state = self._state
        cursor = _run_cursor(state.root)
        if self._stream:
            children = sorted(state.subagents.values(), key=lambda s: s.order)
            cursor.children = {sub.run_id: _run_cursor(sub.run) for sub in children if not sub.finished}
            if state.thread_id is not None and state.run_id is not None:
                cursor.threads[state.run_id] = state.thread_id
            cursor.threads.update((sub.run_id, sub.run.history.thread_id) for sub in children
                                  if sub.run.history.thread_id is not None)
        return ObserverContinuation(thread_id=state.thread_id, run_id=state.run_id, state=cursor)

    @classmethod
    def restore(cls, continuation: ObserverContinuation, *, processor: AguiEventProcessor | None = None) -> Self:
        """A non-retaining observer that continues from ``continuation``
        (which is not shared) and counts as resumed."""
        saved = ObserverContinuation.model_validate(continuation.model_dump())
        observer = cls(processor=processor, retain_events=False)
        cursor = saved.state
        subagents = {}
        for order, run_id in enumerate(_child_order(cursor, saved.run_id)):
            child = cursor.children.get(run_id)
            if child is not None:
                subagents[run_id] = SubagentState(run_id, _run_state(child, run_id, cursor.threads.get(run_id)),
                                                  order=order)
            else:  # a Run that ended: its Thread is still its own
                subagents[run_id] = SubagentState(run_id, _run_state(RunCursor(), run_id, cursor.threads[run_id]),
                                                  status="completed", order=order)
        observer._state = observer._state._replace(root=_run_state(cursor, saved.run_id, saved.thread_id),
                                                   subagents=observer._state.subagents.update(subagents),
                                                   announced=len(subagents))
        observer._resume_completed = True
        return observer


class HarnessAguiStreamObserver(HarnessAguiObserver):
    """Observes a Host's root stream and its forwarded inline children in
    source order: one Run's events, and its children's with their
    ``subagentRunId``. Each Run keeps its own part cursors; only the root has
    RUN_* events; a delegation's notices start and end its child."""

    _stream = True
    _check_correlation = staticmethod(stream_correlation)  # type: ignore[assignment]


def _door(item: Any) -> tuple[HarnessStreamEvent, Any]:
    """The source item of ``item`` and its native object (None for a source item)."""
    if type(item) is HarnessEvent or type(item) is HarnessRunResultEvent:
        return item, None
    if not isinstance(item, N.HarnessEvent | N.HarnessRunResultEvent):
        raise TypeError("item must be a HarnessEvent or HarnessRunResultEvent")
    try:
        return from_a13n(item), item
    except ValueError:
        # What the source model cannot carry (an event pydantic cannot write, an output without a JSON form)
        # still routes by its correlation; the vocabulary renders it from the native item, raising what
        # pydantic raises where a13n-stream-protocol does.
        if isinstance(item, N.HarnessRunResultEvent):
            return from_a13n(N.HarnessRunResultEvent(thread_id=item.thread_id, run_id=item.run_id,
                                                     sequence=item.sequence, occurred_at=item.occurred_at,
                                                     result=item.result.replace(output=None))), item
        kind = getattr(item.event, "event_kind", None)
        return HarnessEvent(thread_id=item.thread_id, run_id=item.run_id, sequence=item.sequence,
                            occurred_at=item.occurred_at, event=UnknownEvent(
                                event_kind=kind if isinstance(kind, str) and kind else "unknown", data={})), item


def _child_order(cursor: RunCursor, root_run_id: str | None) -> list[str]:
    """The child Runs of a continuation in the one order ``export()`` writes
    both ``threads`` and ``children`` in: each Run with a Thread where
    ``threads`` has it, each open child no later than ``children`` has it, and
    an open child without a Thread yet after every Run with one (upstream
    adds its Thread at the end when its first item comes)."""
    children = list(cursor.children)
    order: list[str] = []
    waiting = 0  # children[:waiting] are placed
    for run_id in cursor.threads:
        if run_id == root_run_id or run_id in order:
            continue
        if run_id in cursor.children:
            while children[waiting] != run_id:  # open children listed before it come first
                if children[waiting] not in order:
                    order.append(children[waiting])
                waiting += 1
        order.append(run_id)
    return order + [run_id for run_id in children if run_id not in order]


def _run_cursor(run: RunState) -> RunCursor:
    return RunCursor(request_index=run.ledger.request_index or 0, parts={
        part.index: PartCursor(kind="reasoning" if part.kind == "thinking" else part.kind, part_id=part.message_id,
                               tool_name=part.tool_name if part.kind == "tool_call" and part.started else None,
                               emitted_content=part.streamed > 0, emitted_signature=part.signature is not None)
        for part in run.parts})


def _run_state(cursor: RunCursor, run_id: str | None, thread_id: str | None) -> RunState:
    parts = tuple(
        OpenPart(index, "thinking" if part.kind == "reasoning" else part.kind, part.part_id,
                 streamed=1 if part.emitted_content else 0,
                 started=part.kind != "tool_call" or part.tool_name is not None, tool_name=part.tool_name or "",
                 signature="" if part.emitted_signature else None)
        for index, part in cursor.parts.items())
    return RunState(HistoryCursor(run_id, thread_id), parts, RunLedger(request_index=cursor.request_index))
