# Source journals on disk: one wire line per source item (see ``codec``).
#
# Everything here streams. A journal is read one line at a time from a binary
# file, so memory does not grow with the file; only the line being decoded is
# held, and a line has a maximum length (``max_line_bytes``, 256 MiB by
# default: real lines get long, since a Run's terminal item carries its whole
# message history twice, but a file of one endless line, ``/dev/zero``, must
# still end in an error naming the line, not a MemoryError; an over-long line
# is never held whole).
# Each pass reads its source once, front to back, so a pipe, a FIFO or
# ``/dev/stdin`` can be read. Three readers sit on the same line loop:
#
# - ``Journal`` is the strict reader a Host hands to ``resume()``. It reads
#   the stream of one root Run (its own items and those of the child Runs it
#   delegated to, interleaved, in the file's order), stops after a given
#   position in that stream, and refuses, naming the file and the line,
#   anything that would make the prefix untrustworthy: an undecodable line
#   (DecodeError), or an item out of its Run's order by
#   ``core.history.advance_stream`` (an item of another Run that does not
#   start a child Run, another Thread, a repeated, decreasing or missing
#   sequence, an item after the root's terminal result: the HistoryError
#   that the check raised, located at the file and line). In a file that
#   holds several root Runs, a chosen root's stream is told apart by its
#   links: a child Run belongs to the stream once its announcement
#   (``core.membership.announcement``, at its sequence 1) names a parent Run
#   of the stream. From a new Run's first item until its second, the
#   reader holds the items back (at most ``_MAX_HELD``; a real child announces
#   itself within a few items), then yields them in the file's order, that
#   first item included if the Run was linked, so a position in the chosen
#   stream is the same as in a store that kept only that stream. A Run whose
#   second item does not link it belongs to another stream and is passed
#   over (unless a Run of the stream later names it as its child in a
#   delegation notice: then its announcement is missing, a SequenceGapError);
#   one still unlinked at the end of the file is left out. It is both a plain and an async iterable, and a
#   Journal over a path reopens the file on every iteration, so a failed
#   resume can simply be retried.
# - ``scan_journal`` is the lenient reader: every non-blank line, decoded or
#   with its DecodeError, never raising for content.
# - ``check_journal`` folds the lenient reader into a per-Run report (the
#   ``harness-agui check`` command). It must report every fault of a file,
#   not the first, so it keeps one ``HistoryCursor`` per Run and classifies
#   the error ``advance`` raises for each line instead of stopping: a line
#   refused for order is counted and left out; a skipped sequence is counted
#   once, as a gap, and the cursor steps over it so the lines after it are
#   judged on their own. It remembers which sequences it has seen as a list
#   of intervals (one interval for a healthy Run), which is where the gaps
#   are read from, and it runs each Run's accepted lines through the reducer
#   with the accumulated events dropped after every step, so it finds the
#   items ``resume()`` would refuse without holding the projection.
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

from ..core.errors import (
    AfterTerminalError,
    AguiObservationError,
    ForeignRunError,
    HistoryError,
    SequenceGapError,
    SequenceOrderError,
)
from ..core.history import HistoryCursor, StreamCursor, advance, advance_stream
from ..core.membership import announcement, named_child
from ..core.reduce import advance as project
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
    "MAX_LINE_BYTES",
]

JournalSource = str | os.PathLike[str] | IO[bytes] | IO[str]
"""A path, or an open binary (preferred) or text stream."""

_BOM = b"\xef\xbb\xbf"

MAX_LINE_BYTES = 256 * 1024 * 1024
"""The longest line the readers take by default, its newline not counted:
256 MiB (characters, for a text stream). A real Run's terminal line holds the
Run's message history twice (the history itself and the HarnessState), and
JSON escapes make text up to six times longer (a control character is
``\\u0001``): real Runs with one 2 MiB tool result (a pydantic model, so
a13n-harness keeps it whole) wrote terminal lines of 4 MB (plain text) to
25 MB (control characters). The default leaves room for a history of at
least 20 MiB, more than a model's context holds. Pass ``max_line_bytes`` to
change it (the SQLite and PostgreSQL journals have no limit of their own
below SQLite's 10**9 bytes per value)."""


JournalError = HistoryError
"""What ``Journal`` raises for a history fault: a ``HistoryError`` subclass
located at its file and line (``source``, ``line``; ``str()`` is
``source:line: run 'r', sequence n: reason``). This name is kept for code
that caught the ValueError of earlier versions; catch ``HistoryError`` or
its subclasses instead."""


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

    def __init__(self, source: JournalSource, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if not isinstance(max_line_bytes, int) or isinstance(max_line_bytes, bool) or max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be a positive int, got {max_line_bytes!r}")
        self.max_line_bytes = max_line_bytes
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
                yield from _numbered(f, self.max_line_bytes)
            return
        if self.passes and self.start is None:
            raise RuntimeError("this journal's stream cannot be rewound, so it can be read only once")
        self.passes += 1
        if self.start is not None:
            self.stream.seek(self.start)
        yield from _numbered(self.stream, self.max_line_bytes)


class _LongLine(bytes):
    """Stands in the line loop for a line longer than ``limit``: empty bytes
    (so the loop's element type stays bytes | str) that ``_parse`` refuses."""

    limit: int


_CHUNK = 1 << 20  # how much of a line is read at a time


def _numbered(f: IO[Any], limit: int) -> Iterator[tuple[int, int, bytes | str]]:
    # A line is read a chunk at a time, and at most one byte past the limit:
    # a line that does not end within it is over-long, and is reported
    # without holding more than the limit (its chunks are dropped, never
    # joined). Only if the reader goes on (the lenient scan) is the rest
    # passed over, a chunk at a time, so memory stays bounded even then. A
    # line within the limit costs one read and no join when it fits a chunk.
    end = 0
    number = 0
    while True:
        raw = f.readline(min(limit + 1, _CHUNK))
        if not raw:
            return
        newline = "\n" if isinstance(raw, str) else b"\n"
        size = len(raw)
        if size == _CHUNK and size <= limit and not raw.endswith(newline):
            pieces = [raw]
            while size <= limit:
                piece = f.readline(min(limit + 1 - size, _CHUNK))
                if not piece:
                    break
                pieces.append(piece)
                size += len(piece)
                if piece.endswith(newline):
                    break
            raw = pieces[-1] if size > limit and not pieces[-1].endswith(newline) else raw[:0].join(pieces)
            del pieces
        number += 1
        end += size
        if size <= limit or raw.endswith(newline):
            yield number, end, raw
            continue
        long = _LongLine()
        long.limit = limit
        yield number, end, long
        while raw and not raw.endswith(newline):
            raw = f.readline(_CHUNK)
            end += len(raw)


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
    if isinstance(raw, _LongLine):
        raise DecodeError(f"line longer than {raw.limit} bytes", number)
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
    """A JSONL source journal read lazily, in order, for one root Run's stream.

    ``source`` is a path (reopened on every iteration, so the Journal can be
    iterated again, e.g. to retry a failed ``resume()``) or an open stream
    (binary preferred; rewound for another pass when seekable, else readable
    once). ``run_id`` selects a root Run's stream: its items and those of
    the child Runs linked to it (see the module's comment), passing over the
    items of other Runs; without it the file is one stream, whose first
    item's Run is the root and whose other Runs are its child Runs. Reading
    stops once the item at position ``through`` of the stream has been
    yielded (nothing more is read); for a Run without child Runs that is the
    item at sequence ``through``. Choosing a stream by ``run_id`` has one
    limit: a child Run's first item does not name its root, so a child whose
    announcement never came (its root ended first) is left out, while the
    projection of the live stream showed it; a file that holds one stream
    (what a Host or ``harness-agui export`` writes) is read exactly without
    ``run_id``. ``migrations`` is passed to the decoder.
    A line may be ``max_line_bytes`` long (its newline not counted; default
    MAX_LINE_BYTES, 256 MiB); a longer one is refused after reading one byte
    past the limit, however long it is.

    The selected items must follow the order every reader checks
    (``core.history``): each Run's first item at sequence 0, each later one
    the next sequence, one Thread per Run, nothing after the root's terminal
    result.

    Iterating (plain or async) yields the selected items and raises, naming
    the file and line: DecodeError for a line that does not decode or is too
    long (whichever Run it belongs to); a ``HistoryError`` subclass located at the line
    (``source``, ``line``) for an item out of order: ForeignRunError for a
    Run that does not start a child Run (at sequence 0) or another Thread,
    SequenceOrderError
    for a repeated or decreasing sequence, SequenceGapError for a skipped
    one (a first item after 0 included; with ``run_id``, also a child Run
    named by a delegation notice of the stream whose announcement is not in
    the file), AfterTerminalError for an item after
    the terminal result; OSError when the file cannot be read; RuntimeError
    when a stream that cannot be rewound is read a second time. Nothing is
    left open after an iteration ends, fails or is closed.
    """

    def __init__(self, source: JournalSource, *, run_id: str | None = None, through: int | None = None,
                 migrations: Mapping[int, Migration] | None = None,
                 name: str | None = None, yield_every: int = 256, max_line_bytes: int = MAX_LINE_BYTES) -> None:
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
        self.yield_every = yield_every
        self._lines = _Lines(source, max_line_bytes)

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
        cursor = StreamCursor.of(wanted)  # without a chosen Run, the first item's Run is the root
        if through is not None and through < cursor.next_position:
            return
        members = {wanted}
        held: list[JournalEntry] = []  # in file order, from the first item of a Run not yet linked
        unlinked: list[str] = []  # those Runs, oldest first
        # Runs passed over as another stream's, with (the sequence that showed it, the one due then).
        # A Run of the chosen stream whose announcement was lost (a retention hole) looks exactly
        # like that until a Run of the stream names it in a delegation notice: then it is a gap.
        passed: dict[str, tuple[int, int]] = {}
        for number, end, raw in _ended(lines):
            if number:
                try:
                    data = _parse(raw, number)
                    if data is _BLANK:
                        continue
                    item = from_json(data, migrations=self.migrations, line=number)
                except DecodeError as e:
                    raise e.at(number, name) from e.__cause__
                entry = JournalEntry(number, end, item)
                if wanted is None or item.run_id in members:
                    held.append(entry)
                    lost = _names_passed(item, passed)
                    if lost is not None:
                        seq, due = passed[lost]
                        raise SequenceGapError(
                            f"run {item.run_id!r} names run {lost!r} as its child Run, which was passed over "
                            f"as another stream's Run: its sequence {due} is missing", run_id=lost, sequence=seq,
                            expected=due).at(number, name)
                elif _links(item, members):
                    members.add(item.run_id)
                    held.append(entry)
                    if item.run_id in unlinked:
                        unlinked.remove(item.run_id)
                elif item.sequence == 0 and item.run_id not in unlinked:
                    unlinked.append(item.run_id)
                    held.append(entry)
                elif item.run_id in unlinked:  # its second item does not link it: another stream's Run
                    unlinked.remove(item.run_id)
                    held = [e for e in held if e.item.run_id != item.run_id]
                    passed.setdefault(item.run_id, (item.sequence, 1))
                else:  # an item of a Run passed over, or of one whose first item is not in the file
                    passed.setdefault(item.run_id, (item.sequence, 0))
                if len(held) > _MAX_HELD and unlinked:  # the oldest Run waited too long for a link
                    gone = unlinked.pop(0)
                    held = [e for e in held if e.item.run_id != gone]
                    passed.setdefault(gone, (0, 1))
            else:  # the end of the file: a Run still unlinked is not in the stream (yet)
                held = [e for e in held if e.item.run_id not in unlinked]
                unlinked = []
            # What precedes the first item of the oldest Run still waiting for its link belongs to the
            # stream: it goes on now, and only what follows waits (and counts against _MAX_HELD). Held
            # back whole, the stream's own items would count too and push out a child of the stream
            # that has just started, well before its announcement (which then reads as a foreign Run).
            waiting = next((k for k, e in enumerate(held) if e.item.run_id in unlinked), len(held))
            ready, held = held[:waiting], held[waiting:]
            for entry in ready:
                try:
                    cursor = advance_stream(cursor, entry.item)
                except ForeignRunError as e:
                    hint = ("the journal holds more than one run, so choose one"
                            if wanted is None and entry.item.run_id != cursor.run_id else None)
                    raise e.at(entry.line, name, note=hint) from None
                except HistoryError as e:
                    raise e.at(entry.line, name) from None
                yield entry
                if through is not None and cursor.next_position > through:
                    return

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


# How many items a chosen stream's reader holds back while a Run's first item waits for the
# announcement that links it to the stream (a real child announces itself within a few items),
# counted from the first item of the oldest Run still waiting.
_MAX_HELD = 4096


def _ended(lines: Iterator[tuple[int, int, bytes | str]]) -> Iterator[tuple[int, int, bytes | str]]:
    # The lines, then (0, 0, b""): the end of the file.
    yield from lines
    yield 0, 0, b""


def _names_passed(item: HarnessStreamEvent, passed: dict[str, tuple[int, int]]) -> str | None:
    # The Run passed over that ``item``, a delegation notice of a Run of the chosen stream, names as
    # its child, if any.
    child = named_child(item) if passed else None
    return child if child in passed else None


def _links(item: HarnessStreamEvent, members: set[str | None]) -> bool:
    # Whether ``item`` is a Run's announcement naming a parent in ``members``.
    notice = announcement(item)
    return notice is not None and notice.parent_run_id in members


# -- the lenient reader -----------------------------------------------------------------

def scan_journal(source: JournalSource, *, migrations: Mapping[int, Migration] | None = None,
                 name: str | None = None, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[ScannedLine]:
    """Every non-blank line of a journal, decoded or with the DecodeError
    (naming the file and line) that decoding it raised. Order, Runs and
    sequences are not checked. A line longer than ``max_line_bytes`` is
    reported as such and passed over without being held in memory. Raises
    only OSError when the file cannot be read (and RuntimeError for a second
    pass over a stream that cannot be rewound)."""
    source_name = _source_name(source, name)
    lines = _Lines(source, max_line_bytes).__iter__()
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
    from 0 (where every Run starts) to the Run's highest sequence.
    ``wrong_thread`` are the lines whose item names another Thread than the
    Run's first line. ``status`` is the terminal
    result's status, None while the Run has none. ``projection_error`` is the
    first item (in sequence order, leaving out the faulty lines) that the
    projection refuses, i.e. where ``resume()`` would fail. For a child Run
    (one that announces itself as a subagent Run), ``parent_run_id`` is the
    Run that delegated to it and ``subagent`` its name; both are None for a
    root Run. A child Run has no terminal result of its own: its stream's
    root has it. (Each Run is checked on its own here; ``Journal`` reads a
    root Run's whole stream.)
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
    wrong_thread: tuple[LineFault, ...] = ()
    parent_run_id: str | None = None
    subagent: str | None = None

    @property
    def problems(self) -> int:
        """How many problems were found (each gap range counts once)."""
        return (len(self.gaps) + len(self.duplicates) + len(self.out_of_order) + len(self.after_terminal)
                + len(self.wrong_thread) + len(self.undecodable) + (self.projection_error is not None))

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
            if r.parent_run_id is not None:
                end = f"subagent {r.subagent!r} of run {r.parent_run_id!r}"
            else:
                end = f"{r.status}" if r.status is not None else "no terminal result"
            out.append(f"run {r.run_id!r} (thread {r.thread_id!r}): {_plural(r.items, 'item')}{span}, {end}")
            for a, b in r.gaps:
                out.append(f"  gap: sequence {a} missing" if a == b else f"  gap: sequences {a}-{b} missing")
            for label, faults in (("duplicate", r.duplicates), ("out of order", r.out_of_order),
                                  ("after terminal", r.after_terminal), ("wrong thread", r.wrong_thread),
                                  ("undecodable", r.undecodable)):
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

    def gaps(self, first: int = 0) -> tuple[tuple[int, int], ...]:
        """The holes from ``first`` to the highest number held."""
        starts, ends = self.starts, self.ends
        head = ((first, starts[0] - 1),) if starts and starts[0] > first else ()
        return head + tuple((ends[i] + 1, starts[i + 1] - 1) for i in range(len(starts) - 1))


class _RunCheck:
    __slots__ = ("run_id", "thread_id", "items", "seen", "cursor", "terminal_line", "status", "state",
                 "duplicates", "out_of_order", "after_terminal", "wrong_thread", "undecodable", "projection_error",
                 "parent_run_id", "subagent")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.thread_id: str | None = None
        self.items = 0
        self.seen = _Seen()
        self.cursor = HistoryCursor(run_id)
        self.terminal_line: int | None = None
        self.status: str | None = None
        self.state: ProjectionState | None = INITIAL_STATE
        self.duplicates: list[LineFault] = []
        self.out_of_order: list[LineFault] = []
        self.after_terminal: list[LineFault] = []
        self.wrong_thread: list[LineFault] = []
        self.undecodable: list[LineFault] = []
        self.projection_error: LineFault | None = None
        self.parent_run_id: str | None = None
        self.subagent: str | None = None

    def add(self, line: int, item: HarnessStreamEvent) -> None:
        self.items += 1
        if self.thread_id is None:
            self.thread_id = item.thread_id
        if self.parent_run_id is None:
            notice = announcement(item)
            if notice is not None:
                self.parent_run_id, self.subagent = notice.parent_run_id, notice.subagent
        seq = item.sequence
        new = self.seen.add(seq)
        cursor = self.cursor
        try:
            self.cursor = advance(cursor, item)
        except SequenceGapError:
            # Counted once, from ``seen``, unless a later line fills it: step over it.
            cursor = cursor._replace(next_sequence=seq)
            self.cursor = advance(cursor, item)
        except HistoryError as e:
            self._refused(line, seq, e, new)
            return
        if isinstance(item, HarnessRunResultEvent):
            self.terminal_line, self.status = line, item.result.status
        if self.state is not None:
            state = self.state
            if state.history.next_sequence != cursor.next_sequence:  # the gap stepped over above
                state = state._replace(root=state.root._replace(history=cursor))
            try:
                # Drop the events after each step: only the cursor matters here.
                self.state = project(state, item)._replace(events=INITIAL_STATE.events)
            except AguiObservationError as e:
                self.projection_error = LineFault(line, seq, e.reason)
                self.state = None

    def _refused(self, line: int, seq: int, error: HistoryError, new: bool) -> None:
        if not new:
            self.duplicates.append(LineFault(line, seq, f"sequence {seq} again"))
        elif isinstance(error, AfterTerminalError):
            self.after_terminal.append(
                LineFault(line, seq, f"sequence {seq} after the {self.status} result at line {self.terminal_line}"))
        elif isinstance(error, SequenceOrderError):
            self.out_of_order.append(LineFault(line, seq, f"sequence {seq} after {self.cursor.last_sequence}"))
        else:
            assert isinstance(error, ForeignRunError)
            self.wrong_thread.append(LineFault(line, seq, f"thread {error.found_thread_id!r}, not {self.thread_id!r}"))

    def report(self) -> RunReport:
        starts, ends = self.seen.starts, self.seen.ends
        return RunReport(
            run_id=self.run_id, thread_id=self.thread_id, items=self.items,
            first_sequence=starts[0] if starts else None, last_sequence=ends[-1] if ends else None,
            status=self.status, gaps=self.seen.gaps(), duplicates=tuple(self.duplicates),
            out_of_order=tuple(self.out_of_order), after_terminal=tuple(self.after_terminal),
            undecodable=tuple(self.undecodable), projection_error=self.projection_error,
            wrong_thread=tuple(self.wrong_thread), parent_run_id=self.parent_run_id, subagent=self.subagent,
        )


def check_journal(source: JournalSource, *, migrations: Mapping[int, Migration] | None = None,
                  name: str | None = None, progress: Callable[[int, int], None] | None = None,
                  max_line_bytes: int = MAX_LINE_BYTES) -> JournalReport:
    """Read a whole journal and report, per Run: items, gaps in sequence,
    duplicates, out-of-order items, items after the terminal result,
    undecodable lines, and the first item the projection refuses.

    ``progress(lines, end)`` is called after each non-blank line when given.
    ``max_line_bytes`` is as for ``scan_journal``. Memory grows with the number of Runs and problems, not with the file.
    Raises only what reading the file raises (OSError).
    """
    runs: dict[str, _RunCheck] = {}
    orphans: list[LineFault] = []
    lines = 0
    for scanned in scan_journal(source, migrations=migrations, name=name, max_line_bytes=max_line_bytes):
        lines = scanned.line
        run_id = scanned.run_id
        check = None if run_id is None else runs.get(run_id) or runs.setdefault(run_id, _RunCheck(run_id))
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
