# The library's errors, in one tree.
#
#     HarnessAguiError                          everything this library raises on purpose
#     ├── AguiObservationError                  the observer's contract was broken
#     │   ├── HistoryError                      the order of a Run's history, whichever reader found it
#     │   │   ├── ForeignRunError               an item of another Run or Thread
#     │   │   │   └── UnknownSubagentError      ... of a subagent Run the stream never announced
#     │   │   ├── SequenceOrderError            a repeated or decreasing sequence
#     │   │   │   └── JournalConflictError      ... where a journal holds a different item (host)
#     │   │   ├── SequenceGapError              a skipped sequence (a retention gap)
#     │   │   ├── AfterTerminalError            an item after the terminal result
#     │   │   │   └── FinishedSubagentError     ... of, or naming, a subagent Run that already finished
#     │   │   └── IncompletePrefixError         a prefix that stops short of its handoff cursor
#     │   ├── CheckpointError                   a checkpoint refused: corrupt, foreign, other version or processor
#     │   └── EventsNotRetainedError            snapshot() of an observer that keeps no events
#     ├── DecodeError (also ValueError)         a wire line that does not decode (wire.codec)
#     ├── StorageError (also ValueError)        a store cannot keep or give back what it holds (host.errors)
#     │   ├── DamagedStoreError                 the store's file is damaged (names the table and row)
#     │   └── ReadOnlyStoreError                a write to a store opened read-only
#     ├── DeliveryError (also ValueError)       the delivery log refused a request; nothing was written (host)
#     │   ├── UnknownEventIdError               a Last-Event-ID the log never assigned
#     │   │   └── ForeignEventIdError           ... or not an id of this Run at all (another Run's, malformed)
#     │   ├── DeliveryMismatchError             a rebuilt projection differs from what was delivered
#     │   ├── ProjectorConflictError            another projector recorded for the Run meanwhile
#     │   │   └── LeaseLostError                ... because this worker's lease on the Run is lost (host.postgres)
#     │   └── FollowerLimitError                a Run that has as many followers as it may (host.supervisor)
#     ├── InconsistentState (also ValueError)  a restored state whose parts disagree; a CheckpointError to callers
#     ├── ThreadBindingError (also ValueError)  a binding that would split or share a client Thread (host.bindings)
#     ├── WriterClosedError (also RuntimeError) a write handed to a closed writer; nothing was written (host.batch)
#     ├── RunRefused (also ValueError)          a request no Run is started for; nothing was written (host.runner)
#     │   ├── ThreadConflictError               ... 409: it disagrees with the Thread's journal (a13n.runner)
#     │   ├── RunInputError                     ... 422: it cannot become an a13n Run (a13n.runner)
#     │   ├── RunConflictError                  ... 409: its run id is another Thread's Run (host.starts)
#     │   └── HarnessStartError                 ... 500: the runner failed to start it (host.starts)
#     └── PostgresNotFoundError (also RuntimeError)  no PostgreSQL binaries on this machine (testing.postgres)
#
# The drawing is checked against the classes (tests/test_error_tree.py): each
# class has one parent in the library, and a built-in it also is, named in
# parentheses, is its only other base. So a catch site never has to ask
# "which branch is this really": an order fault is a HistoryError whoever
# found it (the observer, a journal, a delivery log, a checker), a
# StorageError is only ever the store itself failing, and a DeliveryError is
# the delivery log turning a request down.
#
# Wrong Python types raise TypeError and bad arguments ValueError, as
# everywhere in Python; those are not in the tree.
#
# The history errors live here, in the core, because every reader raises
# them: the reducer (so observe() and resume()), the JSONL journal reader, the
# Host kit's checks, its journals and its delivery logs. They are AguiObservationErrors on
# purpose: a Host that catches the library's error around resume() to retry
# catches them too, and the observer is left fresh either way. Each keeps its
# arguments as attributes (``run_id``, ``sequence``, ``expected``, ...), so a
# Host can log or branch on them without parsing messages. A reader that
# knows where the item came from (a journal file) locates the error with
# ``at(line, source)``, which puts ``source:line:`` in front of the message.
#
# DecodeError, StorageError and DeliveryError stay ValueErrors, as they
# always were: the caller passed a value (a line, a file, an event id) that
# cannot be taken.

from __future__ import annotations

from typing import Any

__all__ = [
    "HarnessAguiError",
    "AguiObservationError",
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "UnknownSubagentError",
    "FinishedSubagentError",
    "CheckpointError",
    "EventsNotRetainedError",
]


class HarnessAguiError(Exception):
    """The root of every error this library raises on purpose (see the tree
    in this module's comment). Catch it to catch them all; TypeError for
    wrong Python types is not part of it."""


class AguiObservationError(HarnessAguiError):
    """A source item, a history or a processor broke the observer's contract.

    Raised for semantic faults: correlation changing within one observer, a
    part changing kind or identity before its end, a repeated, decreasing or
    skipped sequence, an item after the terminal item, a processor changing
    an event type or structural field, and misuse of ``resume()``. The
    history faults are the ``HistoryError`` subclasses. The observer is left
    exactly as it was before the failing call.

    ``reason`` is the message; ``sequence`` the source sequence of the item
    at fault when there is one.
    """

    def __init__(self, reason: str, *, sequence: int | None = None) -> None:
        self.reason = reason
        self.sequence = sequence
        super().__init__(reason if sequence is None else f"sequence {sequence}: {reason}")


class HistoryError(AguiObservationError):
    """A source history broke the order of its Run (see ``core.history``).

    ``run_id`` is the Run being read (None only when nothing bound one yet),
    ``sequence`` the sequence of the item at fault (None when the fault is
    that an item is missing at the end), ``expected`` the sequence that was
    due there when there is one, and ``reason`` the message. ``source`` and
    ``line`` say where the item was read from when the reader knew it (a
    journal file and its 1-based line), else None; ``str()`` is then
    ``source:line: run 'r', sequence n: reason``.
    """

    def __init__(self, reason: str, *, run_id: str | None, sequence: int | None, expected: int | None = None,
                 source: str | None = None, line: int | None = None) -> None:
        super().__init__(reason, sequence=sequence)
        self.run_id = run_id
        self.expected = expected
        self.source = source
        self.line = line
        self.args = (str(self),)

    def __str__(self) -> str:
        where = "" if self.line is None else f"{self.source or '<stream>'}:{self.line}: "
        run = f"run {self.run_id!r}" + ("" if self.sequence is None else f", sequence {self.sequence}")
        return f"{where}{run}: {self.reason}"

    def _fields(self) -> dict[str, Any]:
        # Everything __init__ takes, so that copies and pickles are whole.
        fields = dict(vars(self))
        fields.pop("args", None)
        fields.pop("__traceback__", None)
        return fields

    def at(self, line: int | None, source: str | None = None, *, note: str | None = None) -> HistoryError:
        """The same error (same class and attributes), located at ``line`` of
        ``source``, with `` (note)`` added to the reason when given. Returns a
        new error; this one is unchanged."""
        fields = self._fields()
        fields.update(line=line, source=source)
        if note:
            fields["reason"] = f"{fields['reason']} ({note})"
        return _rebuild(type(self), fields)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self._fields())


def _rebuild(cls: type[HistoryError], fields: dict[str, Any]) -> HistoryError:
    error = cls.__new__(cls)
    error.__dict__.update(fields)
    error.args = (str(error),)
    return error


class ForeignRunError(HistoryError):
    """An item of another Run, or of another Thread than the Run's first
    item, appeared in a Run's history.

    ``found_run_id`` and ``found_thread_id`` are the item's; ``thread_id`` is
    the Thread the Run is bound to (None if no item bound it yet).
    """

    def __init__(self, reason: str, *, run_id: str | None, sequence: int | None, thread_id: str | None = None,
                 found_run_id: str | None = None, found_thread_id: str | None = None, **where: Any) -> None:
        self.thread_id = thread_id
        self.found_run_id = found_run_id
        self.found_thread_id = found_thread_id
        super().__init__(reason, run_id=run_id, sequence=sequence, **where)


class SequenceOrderError(HistoryError):
    """An item repeated or went back to an earlier sequence (``expected``
    was due)."""


class SequenceGapError(HistoryError):
    """An item skipped one or more sequences (``expected`` was due): a
    retention gap, or a Run whose first item does not carry its first
    sequence."""


class AfterTerminalError(HistoryError):
    """An item came after the Run's terminal result (at
    ``terminal_sequence``, when the reader knows it)."""

    def __init__(self, reason: str, *, run_id: str | None, sequence: int | None,
                 terminal_sequence: int | None = None, **where: Any) -> None:
        self.terminal_sequence = terminal_sequence
        super().__init__(reason, run_id=run_id, sequence=sequence, **where)


class IncompletePrefixError(HistoryError):
    """A prefix ended before the requested handoff cursor (``expected``).

    ``sequence`` is the last sequence the prefix held, None if it was empty.
    """


class UnknownSubagentError(ForeignRunError):
    """In a stream that carries subagent Runs (see ``core.reduce``): an
    item of a Run that started as a subagent Run but was never announced in
    the stream, an announcement that names a parent Run the stream does not
    know, a delegation end sent by a Run that did not start that subagent, or
    a subagent Run starting after the root Run's terminal result. (The first
    item of another Run that does not start like a subagent Run is a plain
    ForeignRunError, as for any reader of one Run's history.)

    As for every ForeignRunError, ``run_id`` and ``thread_id`` are the root
    Run's and ``found_run_id`` / ``found_thread_id`` the item's (``sequence``
    is the item's, in its own Run). ``subagent_run_id`` is the subagent Run
    concerned and ``parent_run_id`` the parent Run named, where they apply.
    """

    def __init__(self, reason: str, *, run_id: str | None, sequence: int | None,
                 subagent_run_id: str | None = None, parent_run_id: str | None = None, **rest: Any) -> None:
        self.subagent_run_id = subagent_run_id
        self.parent_run_id = parent_run_id
        super().__init__(reason, run_id=run_id, sequence=sequence, **rest)


class FinishedSubagentError(AfterTerminalError):
    """In a stream that carries subagent Runs: an item of a subagent Run that
    already finished (its delegation completed or failed, or the root Run's
    terminal result cut it off), an announcement naming a finished parent,
    or a second end of the same delegation.

    ``run_id`` and ``sequence`` are the item's (its own Run and sequence),
    ``subagent_run_id`` the finished subagent Run, ``root_run_id`` the root
    Run of the stream; ``terminal_sequence`` is None (a subagent Run has no
    terminal item of its own).
    """

    def __init__(self, reason: str, *, run_id: str | None, sequence: int | None,
                 subagent_run_id: str | None = None, root_run_id: str | None = None, **rest: Any) -> None:
        self.subagent_run_id = subagent_run_id
        self.root_run_id = root_run_id
        super().__init__(reason, run_id=run_id, sequence=sequence, **rest)


class CheckpointError(AguiObservationError):
    """A checkpoint (``core.checkpoint``) was refused; nothing of it was applied.

    ``problem`` says why: "format" (not a checkpoint, or truncated),
    "version" (another format or library version), "corrupt" (its checksum
    or its contents do not match), "foreign" (another Run than the one
    expected), "processor" (written under another processor identity),
    "options" (written under other projection options) or "mode" (a
    checkpoint without events for an observer that retains them).
    The Host's answer is the same for all of them: discard the checkpoint
    and resume from the full history.
    """

    def __init__(self, reason: str, *, problem: str) -> None:
        super().__init__(reason)
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return _checkpoint_error, (self.reason, self.problem)


def _checkpoint_error(reason: str, problem: str) -> CheckpointError:
    return CheckpointError(reason, problem=problem)


class EventsNotRetainedError(AguiObservationError):
    """The observer was made with ``retain_events=False``: it keeps the
    conversion state, not the emitted events, so there is no snapshot to
    give. The observer is unchanged."""
