# The commands on a source journal file (JSON lines): ``replay`` projects one Run of it, ``check`` reports on
# every Run in it. Each reads its input once, front to back, so a pipe, a FIFO, ``/dev/stdin`` or ``<(...)`` is
# as good as a file; lines longer than ``--max-line-bytes`` (256 MiB by default) are an error naming the line.
# Progress goes to stderr only when stderr is a terminal.

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, TextIO

from ..core.errors import AguiObservationError, ForeignRunError, HistoryError
from ._common import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, _Fail, isatty, output_text

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent

    from ..wire.jsonl import JournalReport, LineFault


# -- progress ------------------------------------------------------------------------

class _Progress:
    """One self-erasing status line on stderr, only when stderr is a terminal.

    Redrawn at most ten times a second. When stdout is the same terminal the
    line is erased before each piece of output, so they never mix.
    """

    def __init__(self, err: TextIO | None, label: str, total: int | None, out_is_tty: bool) -> None:
        self.err: Any = err
        self.enabled = err is not None and isatty(err)
        self.label = label
        self.total = total
        self.out_is_tty = out_is_tty
        self.shown = False
        self.next_draw = 0.0

    def update(self, lines: int, end: int, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and self.shown and now < self.next_draw:
            return
        self.next_draw = now + 0.1
        text = f"{self.label}: line {lines:,}"
        if self.total:
            text += f", {_size(end)} of {_size(self.total)} ({min(100, end * 100 // self.total)}%)"
        from ..debug.text import clip

        self.err.write("\r\x1b[K" + clip(text, _columns(self.err) - 1))
        self.err.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self.shown = False

    def before_output(self) -> None:
        if self.out_is_tty:
            self.clear()


def _columns(stream: Any) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns if columns > 0 else 80


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # unreachable


# -- opening input -------------------------------------------------------------------

def _open_input(path: str) -> tuple[str, IO[bytes] | IO[str] | str]:
    """The display name and the source for ``path`` ('-' is stdin). Nothing
    is read here: each command reads its input once, front to back."""
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise _Fail("standard input is closed", EXIT_USAGE)
        return "<stdin>", getattr(stdin, "buffer", stdin)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise _Fail(f"{path}: no such file", EXIT_USAGE) from None
    except (OSError, ValueError) as e:
        raise _Fail(f"{path}: cannot be read: {getattr(e, 'strerror', None) or e}", EXIT_USAGE) from None
    if stat.S_ISDIR(mode):
        raise _Fail(f"{path}: is a directory, not a journal file", EXIT_USAGE)
    if stat.S_ISREG(mode):
        try:
            with open(path, "rb") as f:
                head = f.read(16)
        except OSError:
            head = b""  # the command's own read reports it
        if head == b"SQLite format 3\x00":
            raise _Fail(f"{path}: is a Host database, not a journal of JSON lines: list its runs with "
                        f"harness-agui runs {path}, then export one (harness-agui export {path} --run RUN_ID | "
                        "harness-agui replay -)",
                        EXIT_USAGE)
    return path, path


# of another Run ends the replay there (ForeignRunError located at its line),
# after the output of the items before it, like any other fault mid-file.

def replay(args: argparse.Namespace, out: TextIO, err: TextIO | None) -> int:
    from ..core.observer import HarnessAguiObserver
    from ..debug.pretty import iter_conversation
    from ..debug.text import escape_terminal
    from ..wire.jsonl import Journal

    name, source = _open_input(args.file)
    journal = Journal(source, run_id=args.run, through=args.through, name=name,
                      max_line_bytes=_max_line_bytes(args))
    progress = _Progress(err, f"replay {name}", journal.size(), isatty(out))
    observer = HarnessAguiObserver()
    at = [0]  # the line of the item being projected, for error messages
    shown = output_text(out)

    def events() -> Iterator[BaseEvent]:
        for entry in journal.entries():
            at[0] = entry.line
            progress.update(entry.line, entry.end)
            yield from observer.observe(entry.item)

    try:
        if args.format == "pretty":
            for block in iter_conversation(events(), notices=args.notices):
                progress.before_output()
                out.write(escape_terminal(block, multiline=True) + "\n\n")
        else:
            frame: Callable[[BaseEvent], str] = _sse if args.format == "sse" else _jsonl
            for event in events():
                progress.before_output()
                out.write(shown(frame(event)))
        out.flush()
    except HistoryError as e:
        if e.line is None:  # found by the observer, not located by the journal reader
            raise _Fail(f"{name}:{at[0]}: {e}", EXIT_BAD_INPUT) from None
        found = getattr(e, "found_run_id", None)
        if isinstance(e, ForeignRunError) and args.run is None and found is not None and found != e.run_id:
            raise _Fail(f"{e.source}:{e.line}: an item of run {found!r} follows the items of run {e.run_id!r}: "
                        "the file holds several runs, choose one with --run", EXIT_USAGE) from None
        raise _Fail(str(e), EXIT_BAD_INPUT) from None
    except AguiObservationError as e:
        raise _Fail(f"{name}:{at[0]}: {e}", EXIT_BAD_INPUT) from None
    finally:
        progress.clear()
    if observer.run_id is None:
        if args.run is not None:
            raise _Fail(f"{name}: holds no items of run {args.run!r}", EXIT_USAGE)
        raise _Fail(f"{name}: holds no source items", EXIT_BAD_INPUT)
    return EXIT_OK


def _jsonl(event: BaseEvent) -> str:
    from ..wire.agui import agui_to_json

    return agui_to_json(event) + "\n"


def _sse(event: BaseEvent) -> str:
    from ..wire.agui import sse_frame

    return sse_frame(event)


def _max_line_bytes(args: argparse.Namespace) -> int:
    from ..wire.jsonl import MAX_LINE_BYTES

    return MAX_LINE_BYTES if args.max_line_bytes is None else int(args.max_line_bytes)


# -- check ---------------------------------------------------------------------------

def check(args: argparse.Namespace, out: TextIO, err: TextIO | None) -> int:
    from ..debug.text import escape_terminal
    from ..wire.jsonl import check_journal

    name, source = _open_input(args.file)
    size = None
    if isinstance(source, str):
        try:
            size = os.path.getsize(source) or None  # 0 for a pipe or a FIFO: unknown
        except OSError:
            pass
    progress = _Progress(err, f"check {name}", size, isatty(out))
    try:
        report = check_journal(source, name=name, progress=progress.update,
                               max_line_bytes=_max_line_bytes(args))
    finally:
        progress.clear()
    out.write(escape_terminal(_escaped_report(report).describe(), multiline=True) + "\n")
    out.flush()
    return EXIT_OK if report.ok else EXIT_BAD_INPUT


def _escaped_fault(fault: LineFault) -> LineFault:
    import attrs

    from ..debug.text import escape_terminal

    return attrs.evolve(fault, detail=escape_terminal(fault.detail))


def _escaped_report(report: JournalReport) -> JournalReport:
    """The report with the file name and every fault's detail (which quotes
    the file's own text: unknown field names, values) escaped one line each,
    so that describe() lays out lines the file cannot add to or forge. Run
    and thread ids are shown by describe() as repr(), already escaped."""
    import attrs

    from ..debug.text import escape_terminal
    from ..wire.jsonl import LineFault

    runs = []
    for run in report.runs:
        changes: dict[str, Any] = {}
        for field in attrs.fields(type(run)):
            value = getattr(run, field.name)
            if isinstance(value, LineFault):
                changes[field.name] = _escaped_fault(value)
            elif isinstance(value, tuple) and value and isinstance(value[0], LineFault):
                changes[field.name] = tuple(_escaped_fault(f) for f in value)
        runs.append(attrs.evolve(run, **changes))
    return attrs.evolve(report, source=escape_terminal(report.source), runs=tuple(runs),
                        undecodable=tuple(_escaped_fault(f) for f in report.undecodable))
