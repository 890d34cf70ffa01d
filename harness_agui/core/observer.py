# The shell. It owns one reference to an immutable ProjectionState and
# replaces it only after a transition has fully succeeded: ``observe`` after
# one reduce, ``resume`` after folding the entire history into a staged state
# that nobody else can see. Everything that can fail (iteration, conversion,
# correlation, the processor, cancellation) happens before that single
# assignment, so failure needs no clean-up: the old reference is still there.
#
# The only other fields are the processor (fixed at construction), a flag
# that a resume committed (even an empty one), and the gate: a lock taken
# without waiting by every state-changing call for its whole duration. The
# Host must serialize those calls; the gate does not do it for them, it
# catches a violation (two threads at once, a processor that calls back into
# its own observer, observe() while resume() awaits items) and refuses the
# late call with AguiObservationError before it reads the state, so the call
# that holds the gate commits as if it were alone. Taking an uncontended lock
# costs a few tens of nanoseconds.

from __future__ import annotations

import threading
from collections.abc import AsyncIterable, Iterable

from ag_ui.core import BaseEvent

from ._aio import as_async_iterable
from .errors import AguiObservationError
from .records import EventLog, build
from .reduce import Processor, advance, step
from .source import HarnessStreamEvent
from .state import INITIAL_STATE, ProjectionState

__all__ = ["HarnessAguiObserver"]


class HarnessAguiObserver:
    """Projects one Harness Run onto AG-UI events.

    Create one observer per Run. ``observe()`` each live item and publish what
    it returns; after a restart, create a fresh observer, ``await
    resume(history)`` with the retained prefix of the Run, then continue
    observing the live tail.

    ``processor(source_item, event) -> event | None`` may rewrite the content
    of events or drop them; see SPEC section 6.

    State-changing calls must be serialized by the caller; reads (properties,
    ``snapshot()``) are safe at any time.
    """

    __slots__ = ("_processor", "_state", "_resumed", "_resuming", "_gate")

    def __init__(self, processor: Processor | None = None) -> None:
        if processor is not None and not callable(processor):
            raise TypeError(f"processor must be callable, not {type(processor).__name__}")
        self._processor = processor
        self._state: ProjectionState = INITIAL_STATE
        self._resumed = False
        self._resuming = False
        self._gate = threading.Lock()

    # -- reads ---------------------------------------------------------------

    @property
    def state(self) -> ProjectionState:
        """The current immutable projection state."""
        return self._state

    @property
    def thread_id(self) -> str | None:
        """The Thread bound by the first successful item, else None."""
        return self._state.thread_id

    @property
    def run_id(self) -> str | None:
        """The Run bound by the first successful item, else None."""
        return self._state.run_id

    @property
    def event_count(self) -> int:
        """How many AG-UI events the projection holds."""
        return len(self._state.events)

    @property
    def finished(self) -> bool:
        """Whether the terminal item has been observed."""
        return self._state.finished

    @property
    def is_fresh(self) -> bool:
        """True until an item is observed or a resume commits."""
        return self._state is INITIAL_STATE and not self._resumed

    def snapshot(self, start: int | None = None, stop: int | None = None) -> EventLog:
        """The accumulated projection (or the slice ``[start:stop]`` of it).

        Returns an immutable sequence; events are built when read, and each
        read gives a new, detached object. Taking a whole snapshot costs the
        same whatever the length of the Run. Raises nothing.
        """
        events = self._state.events
        if start is None and stop is None:
            return EventLog(events)
        return EventLog(events[start:stop])

    # -- changes ----------------------------------------------------------------

    def observe(self, item: HarnessStreamEvent) -> tuple[BaseEvent, ...]:
        """Project one live item; return the new AG-UI events, in order.

        Raises TypeError for an item of the wrong type, AguiObservationError
        for an item the Run's history does not allow (other correlation,
        repeated or decreasing sequence, after the terminal item, a part
        changing kind or identity), for a processor that breaks its contract,
        and while another state-changing call is in progress on this observer
        (a resume awaiting items, another thread, or a processor calling back
        into its own observer; that other call is unaffected); an exception
        raised by the processor propagates. On any error the item is not
        accumulated: the state, snapshot and properties are exactly as before.
        """
        gate = self._gate
        if not gate.acquire(False):
            raise _busy(self, "observe()")
        try:
            state, records = step(self._state, item, self._processor)
            # Build before committing: nothing may fail after the state is swapped.
            if len(records) == 1:
                events: tuple[BaseEvent, ...] = (build(records[0]),)
            else:
                events = tuple([build(r) for r in records])
            self._state = state
        finally:
            gate.release()
        return events

    async def resume(self, history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent]) -> None:
        """Rebuild the projection from the retained prefix of this Run.

        ``history`` is a finite async (or plain) iterable of one Run's items
        in source order. Each goes through exactly the conversion and
        processor path of ``observe()``, into a staged state that is committed
        only when the iterable is exhausted. Returns None: history is never
        published again; ``snapshot()`` shows it afterwards.

        Raises AguiObservationError if this observer has already observed an
        item or committed a resume, or if a resume is in progress; TypeError
        for a ``history`` that is not iterable or yields a wrong type; and
        whatever iteration, conversion, correlation checks or the processor
        raise, including cancellation. On any failure the observer is exactly
        as fresh as before and the Host may retry with a reopened history.
        """
        gate = self._gate
        if not gate.acquire(False):
            raise _busy(self, "resume()")
        try:
            await self._resume(history)
        finally:
            gate.release()

    async def _resume(self, history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent]) -> None:
        if not self.is_fresh:
            raise AguiObservationError("resume() needs a fresh observer; this one has already observed or resumed")
        items = as_async_iterable(history, "the history given to resume()")
        processor = self._processor
        staged = INITIAL_STATE
        self._resuming = True
        try:
            async for item in items:
                staged = advance(staged, item, processor)
        finally:
            self._resuming = False
        self._state = staged
        self._resumed = True

    def __repr__(self) -> str:
        if self._resuming:
            status = "resuming"
        elif self._state.run_id is None:
            status = "fresh" if not self._resumed else "resumed empty"
        else:
            status = "finished" if self._state.finished else "live"
        run = "" if self._state.run_id is None else f" run={self._state.run_id!r}"
        return f"<HarnessAguiObserver {status}{run} events={self.event_count}>"


def _busy(observer: HarnessAguiObserver, call: str) -> AguiObservationError:
    what = "a resume() is in progress" if observer._resuming else "another state-changing call is in progress"
    return AguiObservationError(
        f"{call} refused: {what} on this observer (calls that change an observer must be serialized)"
    )
