# Source journals on disk: one wire line per source item (see ``codec``).
#
# Everything here streams. A journal is read one line at a time from a binary
# file, so memory does not grow with the file; only the line being decoded is
# held. Three readers sit on the same line loop:
#
# - ``Journal`` is the strict reader a Host hands to ``resume()``. It selects
#   one Run, stops after a given sequence, and refuses, naming the file and
#   the line, anything that would make the prefix untrustworthy: an
#   undecodable line, a second Run when none was chosen, a repeated,
#   decreasing or missing sequence, an item after the terminal result. It is
#   both a plain and an async iterable, and a Journal over a path reopens the
#   file on every iteration, so a failed resume can simply be retried.
# - ``scan_journal`` is the lenient reader: every non-blank line, decoded or
#   with its DecodeError, never raising for content.
# - ``check_journal`` folds the lenient reader into a per-Run report (the
#   ``harness-agui check`` command). It remembers which sequences it has seen
#   as a list of intervals, which stays one interval long for a healthy Run,
#   and it runs each Run through the reducer with the accumulated events
#   dropped after every step, so it finds the items ``resume()`` would refuse
#   without holding the projection.
#
# Blank lines carry no item and are passed over; a UTF-8 byte order mark at
# the start of the file is ignored. Reads happen in the calling thread; the
# async iterator gives the event loop a turn every ``yield_every`` items so a
# long resume stays cancellable and does not starve other tasks.

from __future__ import annotations

import asyncio
import bisect
import io
import os
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from typing import IO, Any

import attrs

from ..core.errors import AguiObservationError
from ..core.reduce import advance
from ..core.source import HarnessRunResultEvent, HarnessStreamEvent
from ..core.state import INITIAL_STATE, ProjectionState
from .codec import DecodeError, Migration, from_json, parse_json_line

__all__ = [
    "Journal",
    "JournalEntry",
    "JournalError",
    "ScannedLine",
    "scan_journal",
    "LineFault",
    "RunReport",
    "JournalReport",
    "check_journal",
]

JournalSource = str | os.PathLike[str] | IO[bytes] | IO[str]
"""A path, or an open binary (preferred) or text stream."""

_BOM = b"\xef\xbb\xbf"


class JournalError(ValueError):
    """A journal's items break the order of their Run.

    Raised by ``Journal`` for a second Run when none was chosen, a repeated,
    decreasing or (unless allowed) skipped sequence, and an item after the
    terminal result. ``source`` is the file name, ``line`` the 1-based line,
    ``run_id`` and ``sequence`` those of the item at fault, ``reason`` the
    message; ``str()`` is one line, ``source:line: reason``.
    """

    def __init__(self, reason: str, *, source: str, line: int, run_id: str | None = None,
                 sequence: int | None = None) -> None:
        self.reason = reason
        self.source = source
        self.line = line
        self.run_id = run_id
        self.sequence = sequence
        super().__init__(f"{source}:{line}: {reason}")


@attrs.frozen
class JournalEntry:
    """One item of a journal with where it was read: ``line`` (1-based) and
    ``end``, the offset just after the line (bytes; characters for a text
    stream)."""

    line: int
    end: int
    item: HarnessStreamEvent


@attrs.frozen
class ScannedLine:
    """One non-blank line as the lenient reader saw it: exactly one of
    ``item`` and ``error`` is set. ``run_id`` is the item's Run, or for an
    undecodable line the ``run_id`` its JSON names, if any."""

    line: int
    end: int
    item: HarnessStreamEvent | None
    error: DecodeError | None
    run_id: str | None


# -- the line loop -------------------------------------------------------------------

def _source_name(source: JournalSource, name: str | None) -> str:
    if name is not None:
        return name
    if isinstance(source, (str, os.PathLike)):
        return os.fsdecode(source)
    stream_name = getattr(source, "name", None)
    return stream_name if isinstance(stream_name, str) else "<stream>"


class _Lines:
    """Opens a source afresh for each pass; a stream is rewound if it can be,
    and refused on a second pass if it cannot."""

    def __init__(self, source: JournalSource) -> None:
        if isinstance(source, (str, os.PathLike)):
            self.path: str | os.PathLike[str] | None = source
            self.stream: IO[Any] | None = None
            self.start: int | None = None
        elif hasattr(source, "readline"):
            self.path = None
            self.stream = source
            try:
                self.start = source.tell() if source.seekable() else None
            except (OSError, ValueError):
                self.start = None
        else:
            raise TypeError(f"a journal source is a path or an open file, not {type(source).__name__}")
        self.passes = 0

    def __iter__(self) -> Generator[tuple[int, int, bytes | str], None, None]:
        if self.stream is None:
            assert self.path is not None
            with open(self.path, "rb") as f:
                yield from _numbered(f)
            return
        if self.passes and self.start is None:
            raise RuntimeError("this journal's stream cannot be rewound, so it can be read only once")
        self.passes += 1
        if self.start is not None:
            self.stream.seek(self.start)
        yield from _numbered(self.stream)


def _numbered(f: IO[Any]) -> Iterator[tuple[int, int, bytes | str]]:
    end = 0
    for number, raw in enumerate(f, start=1):
        end += len(raw)
        yield number, end, raw


def _text_of(raw: bytes | str, number: int) -> str:
    if isinstance(raw, bytes):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"not UTF-8 text ({e.reason} at byte {e.start})", number) from None
    return raw[1:] if number == 1 and raw.startswith("\ufeff") else raw


def _parse(raw: bytes | str, number: int) -> Any:
    """The JSON value of a non-blank line; _BLANK for a blank one."""
    text = _text_of(raw, number)
    if not text.strip():
        return _BLANK
    try:
        return parse_json_line(text, number)
    except DecodeError as e:
        if not text.endswith("\n"):
            hint = " (the last line has no newline: was the file cut off mid-write?)"
            raise DecodeError(e.reason + hint, number) from None
        raise


_BLANK = object()


def _peek_run(data: Any) -> str | None:
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) else None


# -- the strict reader ---------------------------------------------------------------

class Journal:
    """A JSONL source journal read lazily, in order, for one Run.

    ``source`` is a path (reopened on every iteration, so the Journal can be
    iterated again, e.g. to retry a failed ``resume()``) or an open stream
    (binary preferred; rewound for another pass when seekable, else readable
    once). ``run_id`` selects a Run, passing over the items of others; without
    it the first item's Run is selected and an item of another Run is an
    error. Reading stops before the first item of the Run whose sequence is
    greater than ``through``. ``migrations`` is passed to the decoder.

    Iterating (plain or async) yields the selected items and raises, naming
    the file and line: DecodeError for a line that does not decode (whichever
    Run it belongs to), JournalError for a second Run when none was chosen, a
    repeated or decreasing sequence, a gap in sequence (unless
    ``allow_gaps``), an item of the Run with another thread id, and an item
    after the terminal result; OSError when the file cannot be read;
    RuntimeError when a stream that cannot be rewound is read a second time.
    Nothing is left open after an iteration ends, fails or is closed.
    """

    def __init__(self, source: JournalSource, *, run_id: str | None = None, through: int | None = None,
                 migrations: Mapping[int, Migration] | None = None, allow_gaps: bool = False,
                 name: str | None = None, yield_every: int = 256) -> None:
        if run_id is not None and not isinstance(run_id, str):
            raise TypeError(f"run_id must be str or None, not {type(run_id).__name__}")
        if through is not None and (not isinstance(through, int) or isinstance(through, bool)):
            raise TypeError(f"through must be int or None, not {type(through).__name__}")
        if not isinstance(yield_every, int) or yield_every < 1:
            raise ValueError(f"yield_every must be a positive int, got {yield_every!r}")
        self.name = _source_name(source, name)
        self.run_id = run_id
        self.through = through
        self.migrations = migrations
        self.allow_gaps = allow_gaps
        self.yield_every = yield_every
        self._lines = _Lines(source)

    def __repr__(self) -> str:
        run = "" if self.run_id is None else f" run={self.run_id!r}"
        through = "" if self.through is None else f" through={self.through}"
        return f"<Journal {self.name!r}{run}{through}>"

    def size(self) -> int | None:
        """The file's size in bytes when it is known (a path or a regular
        file), else None. Raises nothing."""
        try:
            if self._lines.path is not None:
                return os.path.getsize(self._lines.path)
            stream = self._lines.stream
            assert stream is not None
            if isinstance(stream, io.TextIOBase) or not stream.seekable():
                return None
            return os.fstat(stream.fileno()).st_size
        except (OSError, ValueError, AttributeError):
            return None

    def entries(self) -> Generator[JournalEntry, None, None]:
        """The selected items with their line numbers; raises as the class
        docstring says."""
        name, wanted, through = self.name, self.run_id, self.through
        lines = self._lines.__iter__()
        try:
            yield from self._checked(lines, name, wanted, through)
        finally:
            lines.close()

    def _checked(self, lines: Iterator[tuple[int, int, bytes | str]], name: str, wanted: str | None,
                 through: int | None) -> Iterator[JournalEntry]:
        thread: str | None = None
        last: int | None = None
        terminal: int | None = None
        for number, end, raw in lines:
            try:
                data = _parse(raw, number)
                if data is _BLANK:
                    continue
                item = from_json(data, migrations=self.migrations, line=number)
            except DecodeError as e:
                raise e.at(number, name) from e.__cause__
            run = item.run_id
            if wanted is None:
                wanted = run
            elif run != wanted:
                if self.run_id is not None:
                    continue
                raise JournalError(f"an item of run {run!r} follows items of run {wanted!r}: the journal holds "
                                   "more than one run, so choose one", source=name, line=number, run_id=run,
                                   sequence=item.sequence)
            seq = item.sequence
            if through is not None and seq > through:
                return
            fault = None
            if thread is not None and item.thread_id != thread:
                fault = f"run {run!r} changes thread from {thread!r} to {item.thread_id!r}"
            elif terminal is not None:
                fault = f"item (sequence {seq}) after the terminal result at line {terminal}"
            elif last is not None and seq <= last:
                fault = f"sequence {seq} {'repeated' if seq == last else 'out of order'} after {last}"
            elif last is not None and seq > last + 1 and not self.allow_gaps:
                missing = f"{last + 1}" if seq == last + 2 else f"{last + 1}-{seq - 1}"
                fault = f"sequence jumps from {last} to {seq}: {missing} missing"
            if fault is not None:
                raise JournalError(fault, source=name, line=number, run_id=run, sequence=seq)
            thread, last = item.thread_id, seq
            if isinstance(item, HarnessRunResultEvent):
                terminal = number
            yield JournalEntry(number, end, item)

    def __iter__(self) -> Iterator[HarnessStreamEvent]:
        for entry in self.entries():
            yield entry.item

    def __aiter__(self) -> AsyncIterator[HarnessStreamEvent]:
        return self._aiter()

    async def _aiter(self) -> AsyncIterator[HarnessStreamEvent]:
        entries = self.entries()
        every = self.yield_every
        try:
            for n, entry in enumerate(entries, start=1):
                if n % every == 0:
                    await asyncio.sleep(0)
                yield entry.item
        finally:
            entries.close()


# -- the lenient reader -----------------------------------------------------------------

def scan_journal(source: JournalSource, *, migrations: Mapping[int, Migration] | None = None,
                 name: str | None = None) -> Iterator[ScannedLine]:
    """Every non-blank line of a journal, decoded or with the DecodeError
    (naming the file and line) that decoding it raised. Order, Runs and
    sequences are not checked. Raises only OSError when the file cannot be
    read (and RuntimeError for a second pass over a stream that cannot be
    rewound)."""
    source_name = _source_name(source, name)
    lines = _Lines(source).__iter__()
    try:
        yield from _scanned(lines, source_name, migrations)
    finally:
        lines.close()


def _scanned(lines: Iterator[tuple[int, int, bytes | str]], source_name: str,
             migrations: Mapping[int, Migration] | None) -> Iterator[ScannedLine]:
    for number, end, raw in lines:
        data: Any = None
        try:
            data = _parse(raw, number)
            if data is _BLANK:
                continue
            item = from_json(data, migrations=migrations, line=number)
        except DecodeError as e:
            yield ScannedLine(number, end, None, e.at(number, source_name), _peek_run(data))
            continue
        yield ScannedLine(number, end, item, None, item.run_id)


# -- the checker ---------------------------------------------------------------------------

@attrs.frozen
class LineFault:
    """A problem found at one line: ``sequence`` of the item when known,
    ``detail`` a short explanation."""

    line: int
    sequence: int | None
    detail: str


@attrs.frozen
class RunReport:
    """What ``check_journal`` found for one Run.

    ``gaps`` are inclusive ranges of sequences no line of the file holds,
    between the Run's lowest and highest sequence. ``status`` is the terminal
    result's status, None while the Run has none. ``projection_error`` is the
    first item (in sequence order, leaving out the faulty lines) that the
    projection refuses, i.e. where ``resume()`` would fail.
    """

    run_id: str
    thread_id: str | None
    items: int
    first_sequence: int | None
    last_sequence: int | None
    status: str | None
    gaps: tuple[tuple[int, int], ...]
    duplicates: tuple[LineFault, ...]
    out_of_order: tuple[LineFault, ...]
    after_terminal: tuple[LineFault, ...]
    undecodable: tuple[LineFault, ...]
    projection_error: LineFault | None

    @property
    def problems(self) -> int:
        """How many problems were found (each gap range counts once)."""
        return (len(self.gaps) + len(self.duplicates) + len(self.out_of_order) + len(self.after_terminal)
                + len(self.undecodable) + (self.projection_error is not None))

    @property
    def ok(self) -> bool:
        return self.problems == 0


@attrs.frozen
class JournalReport:
    """What ``check_journal`` found in a whole journal: one RunReport per Run
    in order of first appearance, and ``undecodable`` lines that name no
    Run."""

    source: str
    lines: int
    runs: tuple[RunReport, ...]
    undecodable: tuple[LineFault, ...]

    @property
    def problems(self) -> int:
        return sum(r.problems for r in self.runs) + len(self.undecodable)

    @property
    def ok(self) -> bool:
        return self.problems == 0

    def describe(self) -> str:
        """A plain-text report, lines of at most 100 columns for ordinary
        ids, ending with an OK or FAIL summary line."""
        out = [f"{self.source}: {self.lines} lines, {_plural(len(self.runs), 'run')}"]
        for r in self.runs:
            span = "" if r.first_sequence is None else f", sequences {r.first_sequence}-{r.last_sequence}"
            end = f"{r.status}" if r.status is not None else "no terminal result"
            out.append(f"run {r.run_id!r} (thread {r.thread_id!r}): {_plural(r.items, 'item')}{span}, {end}")
            for a, b in r.gaps:
                out.append(f"  gap: sequence {a} missing" if a == b else f"  gap: sequences {a}-{b} missing")
            for label, faults in (("duplicate", r.duplicates), ("out of order", r.out_of_order),
                                  ("after terminal", r.after_terminal), ("undecodable", r.undecodable)):
                out.extend(f"  {label}: line {f.line}: {f.detail}" for f in faults)
            if r.projection_error is not None:
                f = r.projection_error
                out.append(f"  projection refuses line {f.line}: {f.detail}")
            if r.ok:
                out.append("  no problems")
        out.extend(f"undecodable: line {f.line}: {f.detail}" for f in self.undecodable)
        out.append("OK: no problems" if self.ok else f"FAIL: {_plural(self.problems, 'problem')}")
        return "\n".join(out)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class _Seen:
    """A set of ints kept as sorted, disjoint, non-adjacent closed intervals."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, n: int) -> bool:
        """Add ``n``; False if it was already there."""
        starts, ends = self.starts, self.ends
        i = bisect.bisect_right(starts, n) - 1  # the interval starting at or before n
        if i >= 0 and n <= ends[i]:
            return False
        joins_left = i >= 0 and ends[i] == n - 1
        joins_right = i + 1 < len(starts) and starts[i + 1] == n + 1
        if joins_left and joins_right:
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif joins_left:
            ends[i] = n
        elif joins_right:
            starts[i + 1] = n
        else:
            starts.insert(i + 1, n)
            ends.insert(i + 1, n)
        return True

    def gaps(self) -> tuple[tuple[int, int], ...]:
        return tuple((self.ends[i] + 1, self.starts[i + 1] - 1) for i in range(len(self.starts) - 1))


class _RunCheck:
    __slots__ = ("run_id", "thread_id", "items", "seen", "last", "terminal_line", "status", "state",
                 "duplicates", "out_of_order", "after_terminal", "undecodable", "projection_error")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.thread_id: str | None = None
        self.items = 0
        self.seen = _Seen()
        self.last: int | None = None
        self.terminal_line: int | None = None
        self.status: str | None = None
        self.state: ProjectionState | None = INITIAL_STATE
        self.duplicates: list[LineFault] = []
        self.out_of_order: list[LineFault] = []
        self.after_terminal: list[LineFault] = []
        self.undecodable: list[LineFault] = []
        self.projection_error: LineFault | None = None

    def add(self, line: int, item: HarnessStreamEvent) -> None:
        self.items += 1
        if self.thread_id is None:
            self.thread_id = item.thread_id
        seq = item.sequence
        if not self.seen.add(seq):
            self.duplicates.append(LineFault(line, seq, f"sequence {seq} again"))
            return
        if self.terminal_line is not None:
            self.after_terminal.append(
                LineFault(line, seq, f"sequence {seq} after the {self.status} result at line {self.terminal_line}"))
            return
        if self.last is not None and seq < self.last:
            self.out_of_order.append(LineFault(line, seq, f"sequence {seq} after {self.last}"))
            return
        self.last = seq
        if isinstance(item, HarnessRunResultEvent):
            self.terminal_line, self.status = line, item.result.status
        if self.state is not None:
            try:
                # Drop the events after each step: only the cursor matters here.
                self.state = attrs.evolve(advance(self.state, item), events=INITIAL_STATE.events)
            except AguiObservationError as e:
                self.projection_error = LineFault(line, seq, e.reason)
                self.state = None

    def report(self) -> RunReport:
        starts, ends = self.seen.starts, self.seen.ends
        return RunReport(
            run_id=self.run_id, thread_id=self.thread_id, items=self.items,
            first_sequence=starts[0] if starts else None, last_sequence=ends[-1] if ends else None,
            status=self.status, gaps=self.seen.gaps(), duplicates=tuple(self.duplicates),
            out_of_order=tuple(self.out_of_order), after_terminal=tuple(self.after_terminal),
            undecodable=tuple(self.undecodable), projection_error=self.projection_error,
        )


def check_journal(source: JournalSource, *, migrations: Mapping[int, Migration] | None = None,
                  name: str | None = None,
                  progress: Callable[[int, int], None] | None = None) -> JournalReport:
    """Read a whole journal and report, per Run: items, gaps in sequence,
    duplicates, out-of-order items, items after the terminal result,
    undecodable lines, and the first item the projection refuses.

    ``progress(lines, end)`` is called after each non-blank line when given.
    Memory grows with the number of Runs and problems, not with the file.
    Raises only what reading the file raises (OSError).
    """
    runs: dict[str, _RunCheck] = {}
    orphans: list[LineFault] = []
    lines = 0
    for scanned in scan_journal(source, migrations=migrations, name=name):
        lines = scanned.line
        run_id = scanned.run_id
        check = None
        if run_id is not None:
            check = runs.get(run_id)
            if check is None:
                check = runs[run_id] = _RunCheck(run_id)
        if scanned.error is not None:
            fault = LineFault(scanned.line, None, scanned.error.reason)
            (orphans if check is None else check.undecodable).append(fault)
        else:
            assert check is not None and scanned.item is not None
            check.add(scanned.line, scanned.item)
        if progress is not None:
            progress(scanned.line, scanned.end)
    return JournalReport(_source_name(source, name), lines, tuple(c.report() for c in runs.values()),
                         tuple(orphans))
