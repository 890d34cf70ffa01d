# The shell. It owns one reference to an immutable ProjectionState and
# replaces it only after a transition has fully succeeded: ``observe`` after
# one reduce, ``resume`` after folding the entire history into a staged state
# that nobody else can see. Everything that can fail (iteration, conversion,
# correlation, the processor, cancellation) happens before that single
# assignment, so failure needs no clean-up: the old reference is still there.
#
# Live-only mode (``retain_events=False``) puts a ``LiveLog`` where the
# state keeps its events (see ``livelog``): the same reducer, the same
# events returned, none kept. A checkpoint (``checkpoint``) is the state as
# verified bytes; ``restore`` and ``resume(checkpoint=...)`` decode it into a
# new state value first and then commit it like any other.
#
# ``messages()`` is the AG-UI message list a client would have built
# (``conversation``): a live-only log that tracks messages folds it as it
# goes; a retained log is folded on demand from where the last call stopped
# (``_folded``: a cache of a value, so reads stay reads).
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
from typing import Any

from ag_ui.core import BaseEvent

from . import checkpoint as _checkpoint
from ._aio import as_async_iterable
from .conversation import EMPTY_CONVERSATION, Conversation, catch_up_events, fold_records, messages_of
from .encode import EncodedEvent, encode_records
from .errors import AguiObservationError, CheckpointError, EventsNotRetainedError
from .livelog import LiveLog
from .records import EventLog, RecordLog, build
from .reduce import Processor, step
from .source import HarnessStreamEvent
from .state import DEFAULT_OPTIONS, INITIAL_STATE, MAX_EVENT_BYTES, OrderPolicy, ProjectionOptions, ProjectionState
from .vocabulary import DEFAULT_VOCABULARY, Vocabulary

__all__ = ["HarnessAguiObserver"]


class HarnessAguiObserver:
    """Projects one Harness Run onto AG-UI events.

    Create one observer per Run. ``observe()`` each live item and publish what
    it returns; after a restart, create a fresh observer, ``await
    resume(history)`` with the retained prefix of the Run, then continue
    observing the live tail.

    ``processor(source_item, event) -> event | None`` may rewrite the content
    of events or drop them (``core.processor`` states the contract).

    ``retain_events=False`` makes a live-only observer: it keeps the
    conversion state but not the emitted events (the Host's delivery log
    keeps those), so its memory does not grow with them; ``snapshot()``
    then raises EventsNotRetainedError and ``event_count`` still counts.
    ``track_messages=True`` lets a live-only observer answer ``messages()``
    and ``catch_up()`` (it keeps the conversation's content for that); a
    retained observer always can.

    ``show_hidden``, ``max_event_bytes``, ``user_messages``,
    ``client_thread_id``, ``client_run_id``, ``order`` and ``vocabulary``
    choose how the stream is projected (``core.state.ProjectionOptions``): by
    default nothing the Harness marks for the model only is published, no
    event's JSON exceeds 64 KiB, user inputs become user messages, the Run is
    named by the Harness's own ids, each Run's items must be numbered from 0
    without a gap (``order="tap"`` takes a13n-harness's producer tap followed
    by the terminal item instead: see docs/drop-in.md, "The producer tap"), and the
    events are this library's vocabulary (``vocabulary=`` a ``Vocabulary``, or
    the name of one made, such as ``"a13n-stream-protocol/0.21"``, speaks
    another: ``core.vocabulary``).

    State-changing calls must be serialized by the caller; reads (properties,
    ``snapshot()``, ``messages()``, ``catch_up()``, ``checkpoint()``) are
    safe at any time.
    """

    __slots__ = ("_processor", "_state", "_initial", "_resumed", "_resuming", "_gate", "_folded")

    def __init__(self, processor: Processor | None = None, *, retain_events: bool = True,
                 track_messages: bool = False, show_hidden: bool = False,
                 max_event_bytes: int | None = MAX_EVENT_BYTES, user_messages: bool = True,
                 client_thread_id: str | None = None, client_run_id: str | None = None,
                 order: OrderPolicy = "strict", vocabulary: str | Vocabulary = DEFAULT_VOCABULARY) -> None:
        if processor is not None and not callable(processor):
            raise TypeError(f"processor must be callable, not {type(processor).__name__}")
        if not isinstance(retain_events, bool) or not isinstance(track_messages, bool):
            raise TypeError("retain_events and track_messages must be bools")
        options = ProjectionOptions(show_hidden=show_hidden, max_event_bytes=max_event_bytes,
                                    user_messages=user_messages, client_thread_id=client_thread_id,
                                    client_run_id=client_run_id, vocabulary=vocabulary, order=order)
        self._processor = processor
        initial = INITIAL_STATE if options == DEFAULT_OPTIONS else INITIAL_STATE._replace(options=options)
        self._initial: ProjectionState = initial if retain_events else initial._replace(
            events=LiveLog.tracking(track_messages))
        self._state: ProjectionState = self._initial
        self._resumed = False
        self._resuming = False
        self._gate = threading.Lock()
        self._folded: tuple[Any, Conversation] = (RecordLog(), EMPTY_CONVERSATION)

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
        """How many AG-UI events the projection holds (has emitted, for a
        live-only observer)."""
        return len(self._state.events)

    @property
    def options(self) -> ProjectionOptions:
        """How this observer projects (fixed at construction)."""
        return self._initial.options

    @property
    def retains_events(self) -> bool:
        """False for a live-only observer (``retain_events=False``)."""
        return not isinstance(self._initial.events, LiveLog)

    @property
    def tracks_messages(self) -> bool:
        """Whether ``messages()`` and ``catch_up()`` are available."""
        events = self._initial.events
        return not isinstance(events, LiveLog) or events.messages is not None

    @property
    def finished(self) -> bool:
        """Whether the terminal item has been observed."""
        return self._state.finished

    @property
    def is_fresh(self) -> bool:
        """True until an item is observed or a resume commits."""
        return self._state is self._initial and not self._resumed

    def snapshot(self, start: int | None = None, stop: int | None = None) -> EventLog:
        """The accumulated projection (or the slice ``[start:stop]`` of it).

        Returns an immutable sequence; events are built when read, and each
        read gives a new, detached object. Taking a whole snapshot costs the
        same whatever the length of the Run. Raises EventsNotRetainedError
        for a live-only observer (``retain_events=False``), which keeps none.
        """
        events = self._state.events
        if isinstance(events, LiveLog):
            raise EventsNotRetainedError(
                "snapshot() of a live-only observer: it keeps no events (retain_events=False); read them from "
                "the delivery log, or use catch_up() / messages()")
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

    def observe_encoded(self, item: HarnessStreamEvent) -> tuple[EncodedEvent, ...]:
        """``observe()``, returning the new events as they go on the wire:
        an ``EncodedEvent`` (type name, and ``json`` exactly as
        ``wire.agui.agui_to_json`` writes the event ``observe()`` would have
        returned) per event, written from the projection's records without
        building the events. Raises what ``observe()`` raises and leaves the
        observer in the same state on error; the processor sees the same
        events as with ``observe()``."""
        gate = self._gate
        if not gate.acquire(False):
            raise _busy(self, "observe_encoded()")
        try:
            state, records = step(self._state, item, self._processor)
            encoded = encode_records(records)  # before committing, like observe()
            self._state = state
        finally:
            gate.release()
        return encoded

    async def resume(self, history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent], *,
                     checkpoint: bytes | None = None, processor_identity: str | None = None,
                     run_id: str | None = None, key: bytes | None = None) -> None:
        """Rebuild the projection from the retained prefix of this Run.

        ``history`` is a finite async (or plain) iterable of one Run's items
        in source order. Each goes through exactly the conversion and
        processor path of ``observe()``, into a staged state that is committed
        only when the iterable is exhausted. Returns None: history is never
        published again; ``snapshot()`` shows it afterwards.

        With ``checkpoint`` (bytes from ``checkpoint()``), the staged state
        starts as the one the checkpoint holds and ``history`` holds only the
        items after it (its first item is the one after the checkpoint's
        last sequence). The checkpoint is verified before any item is read
        (see ``restore`` for ``processor_identity``, ``run_id`` and ``key``;
        a live-only observer takes a retained checkpoint, not the other way
        round). Restoring never runs code, whatever the bytes; seal
        checkpoints kept where others could write with ``key`` (see
        ``core.checkpoint``).

        Raises AguiObservationError if this observer has already observed an
        item or committed a resume, or if a resume is in progress;
        CheckpointError (an AguiObservationError) for a checkpoint that does
        not verify, is another Run's, another version's, or was written under
        another processor identity; ValueError for a processor without
        ``processor_identity`` when a checkpoint is given; TypeError for a
        ``history`` that is not iterable or yields a wrong type; and whatever
        iteration, conversion, correlation checks (a gap after the
        checkpoint is a SequenceGapError) or the processor raise, including
        cancellation. On any failure the observer is exactly as fresh as
        before and the Host may retry with a reopened history, or without
        the checkpoint.
        """
        gate = self._gate
        if not gate.acquire(False):
            raise _busy(self, "resume()")
        try:
            await self._resume(history, checkpoint, processor_identity, run_id, key)
        finally:
            gate.release()

    async def _resume(self, history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent],
                      checkpoint: bytes | None = None, processor_identity: str | None = None,
                      run_id: str | None = None, key: bytes | None = None) -> None:
        if not self.is_fresh:
            raise AguiObservationError("resume() needs a fresh observer; this one has already observed or resumed")
        staged = self._initial
        if checkpoint is not None:
            staged = self._decode(checkpoint, processor_identity, run_id, key)
        items = as_async_iterable(history, "the history given to resume()")
        processor = self._processor
        self._resuming = True
        try:
            async for item in items:
                staged = step(staged, item, processor)[0]
        finally:
            self._resuming = False
        self._state = staged
        self._resumed = True

    # -- checkpoints -------------------------------------------------------------------

    def checkpoint(self, *, processor_identity: str | None = None, key: bytes | None = None) -> bytes:
        """The current state as a checkpoint: versioned, self-describing,
        checksummed bytes (see ``core.checkpoint``) that ``restore`` or
        ``resume(history, checkpoint=...)`` turn back into this state.

        ``processor_identity`` names the processor (a version string of the
        Host's processing rules, say): the checkpoint keeps its digest and
        resumes only under the same identity. ``key`` seals it with an
        HMAC-SHA-256 instead of a CRC-32 (which detects damage only).

        Raises ValueError for an observer with a processor and no
        ``processor_identity``, or one that has not bound a Run yet; changes
        nothing. Safe at any time (it reads one state value).
        """
        if self._processor is not None and processor_identity is None:
            raise ValueError("an observer with a processor needs processor_identity to write a checkpoint: the "
                             "projection depends on the processor")
        return _checkpoint.encode(self._state, processor_identity=processor_identity, key=key)

    @classmethod
    def restore(cls, data: bytes, *, processor: Processor | None = None, processor_identity: str | None = None,
                run_id: str | None = None, key: bytes | None = None, retain_events: bool | None = None,
                track_messages: bool | None = None, options: ProjectionOptions | None = None,
                ) -> HarnessAguiObserver:
        """A new observer in exactly the state of the one that wrote
        checkpoint ``data``: it continues with the item after the
        checkpoint's last sequence.

        ``processor`` is the processor to continue with and
        ``processor_identity`` its identity, which must be the one the
        checkpoint was written with (both None for no processor). With
        ``run_id`` the checkpoint must be of that Run; with ``key`` it must be
        sealed with that HMAC key (and without, with none).
        ``retain_events`` and ``track_messages`` default to the checkpoint's
        mode; a retained checkpoint restores live-only, not the other way
        round. The observer projects with the checkpoint's options
        (``ProjectionOptions``), or ``options``, which must then equal them.

        A checkpoint is decoded as data into the state's own types, so no
        bytes can make restoring run code. Without ``key`` its CRC-32
        detects damage only, and the state is checked in full as it is
        decoded; with ``key`` its HMAC also refuses a change by anyone
        without the key. The retained events are not read at restore: each
        sealed block of them is checked against its digest and decoded when
        first read, and one that fails raises CheckpointError ("corrupt")
        from that read (``snapshot()``, ``messages()``, ``catch_up()``,
        ``checkpoint()``).

        Raises TypeError for ``data`` that is not bytes, ValueError for a
        processor without ``processor_identity``, and CheckpointError (an
        AguiObservationError; ``problem`` says which) for bytes that are not
        a checkpoint, a damaged one, one of another format, library or
        Python version, of another Run, written under another processor
        identity or other options, or without the events or messages the mode
        asks for. Nothing is created on error.
        """
        events = _checkpoint.inspect(data)
        retain = events.retained if retain_events is None else retain_events
        track = events.messages if track_messages is None else track_messages
        observer = cls(processor, retain_events=retain, track_messages=track and not retain)
        state = observer._decode(data, processor_identity, run_id, key, adopt_options=True)
        if options is not None:
            observer._check_options(state, options)
            state = state._replace(options=options)
        elif state.options.rules is None:
            raise CheckpointError(f"a checkpoint in vocabulary {state.options.vocabulary!r}, which this process has "
                                  "not made: pass options=ProjectionOptions(vocabulary=<its Vocabulary>, ...)",
                                  problem="options")
        observer._initial = observer._initial._replace(options=state.options)
        observer._state = state
        observer._resumed = True
        return observer

    def _decode(self, data: bytes, processor_identity: str | None, run_id: str | None,
                key: bytes | None, *, adopt_options: bool = False) -> ProjectionState:
        """The state checkpoint ``data`` holds, in this observer's mode (and
        with its options, unless ``adopt_options``)."""
        if self._processor is not None and processor_identity is None:
            raise ValueError("an observer with a processor needs the processor_identity its checkpoint was "
                             "written with")
        state = _checkpoint.decode(data, processor_identity=processor_identity, run_id=run_id, key=key)
        if not adopt_options:
            self._check_options(state, self._initial.options)
            state = state._replace(options=self._initial.options)
        events = state.events
        wanted = self._initial.events
        if isinstance(wanted, LiveLog):
            track = wanted.messages is not None
            if isinstance(events, LiveLog):
                if track and events.messages is None:
                    raise CheckpointError("a live-only checkpoint without the message list, for an observer that "
                                          "tracks messages", problem="mode")
                live = events if track else events.without_messages()
            elif track:  # the conversation folds every record (the retained ones read, and checked, now)
                live = LiveLog.of_records(events, track_messages=True)
            else:  # only their number: the retained records are not read
                live = LiveLog(len(events))
            if live is not events:
                state = state._replace(events=live)
        elif isinstance(events, LiveLog):
            raise CheckpointError("a live-only checkpoint holds no events, for an observer that retains them",
                                  problem="mode")
        return state

    @staticmethod
    def _check_options(state: ProjectionState, options: ProjectionOptions) -> None:
        if state.options != options:
            raise CheckpointError(f"a checkpoint written under other projection options ({state.options}, not "
                                  f"{options})", problem="options")

    # -- the conversation ----------------------------------------------------------------

    def _messages(self) -> Conversation:
        events = self._state.events
        if isinstance(events, LiveLog):
            if events.messages is None:
                raise EventsNotRetainedError(
                    "messages() of a live-only observer that does not track them (track_messages=False)")
            return events.messages
        log, messages = self._folded
        if log is not events:
            if len(log) > len(events):  # not an earlier state of this log: start over
                messages, log = EMPTY_CONVERSATION, RecordLog()
            messages = fold_records(messages, events[len(log):])
            self._folded = (events, messages)
        return messages

    def messages(self) -> tuple[Any, ...]:
        """The AG-UI messages (``ag_ui.core`` message objects, fresh on each
        call) that the official client builds from the projection so far:
        user, assistant (with tool calls), tool and reasoning messages, each
        of a subagent with its ``subagent_run_id``. Raises
        EventsNotRetainedError for a live-only observer made without
        ``track_messages=True``; changes nothing."""
        return messages_of(self._messages())

    def catch_up(self) -> tuple[BaseEvent, ...]:
        """The events a client joining now needs instead of the whole
        stream: RUN_STARTED, one MESSAGES_SNAPSHOT of every message so far
        (a message or tool call still streaming is in it, empty), the
        SUBAGENT_STARTED of every subagent still running, then the start and
        the content so far of every message and tool call still open, and
        the terminal event if the Run has ended. Applied by a client, every
        later event of ``observe()`` applies cleanly and the messages end up
        as with the full stream. Empty for an observer that has seen
        nothing. Raises EventsNotRetainedError for a live-only observer made
        without ``track_messages=True``; changes nothing."""
        return catch_up_events(self._messages())

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
