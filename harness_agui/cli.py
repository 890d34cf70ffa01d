# The ``harness-agui`` command line: replay, check and demo.
#
# The commands are thin: the journal module reads and checks source files,
# the observer projects, codec and pretty format. What lives here is the
# behaviour a person at a terminal relies on: bad input ends in one line
# naming the file and line (never a traceback), exit codes that scripts can
# test, progress on stderr only when stderr is a terminal, and quiet exit
# when the reader of a pipe goes away.
#
# ``replay`` without ``--run`` reads the file twice: once to learn which Runs
# it holds, once to project. Standard input is first copied to a temporary
# file for that, so it costs disk, not memory.

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from io import TextIOWrapper
from typing import IO, Any, TextIO

from ag_ui.core import BaseEvent

from .core.errors import AguiObservationError
from .core.observer import HarnessAguiObserver
from .debug.pretty import iter_conversation
from .demo import run_demo
from .wire.agui import agui_to_json, sse_frame
from .wire.codec import DecodeError
from .wire.jsonl import Journal, JournalError, check_journal, scan_journal

__all__ = ["main", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
"""The input is bad (undecodable line, broken order, a run the projection
refuses), or ``check`` found a problem."""
EXIT_USAGE = 2
"""Bad arguments, a file that cannot be read, or no single run to replay."""

PROG = "harness-agui"

_EPILOG = ("exit status: 0 success; 1 bad input (or problems found by check); 2 usage error, unreadable file "
           "or no single run to replay.")


class _Fail(Exception):
    """Ends a command with a one-line message and an exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


# -- progress ------------------------------------------------------------------------

class _Progress:
    """One self-erasing status line on stderr, only when stderr is a terminal.

    Redrawn at most ten times a second. When stdout is the same terminal the
    line is erased before each piece of output, so they never mix.
    """

    def __init__(self, err: TextIO, label: str, total: int | None, out_is_tty: bool) -> None:
        self.err = err
        self.enabled = _isatty(err)
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
        self.err.write("\r\x1b[K" + text[: _columns(self.err) - 1])
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


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


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

def _open_input(path: str, *, rewindable: bool) -> tuple[str, IO[bytes] | str]:
    """The display name and the source for ``path`` ('-' is stdin). With
    ``rewindable`` stdin is first copied to a temporary file."""
    if path != "-":
        if os.path.isdir(path):
            raise _Fail(f"{path}: is a directory, not a journal file", EXIT_USAGE)
        if not os.path.exists(path):
            raise _Fail(f"{path}: no such file", EXIT_USAGE)
        return path, path
    stdin = sys.stdin.buffer
    if not rewindable:
        return "<stdin>", stdin
    spool = tempfile.TemporaryFile()
    shutil.copyfileobj(stdin, spool)
    spool.seek(0)
    return "<stdin>", spool


# -- replay --------------------------------------------------------------------------

def _runs_in(name: str, source: IO[bytes] | str) -> list[str]:
    """The Runs a file names, in order of appearance. Lines that do not
    decode are left to the replay itself, which fails when it reaches one:
    a prefix before a damaged line can still be replayed. When no line
    decodes at all, the first line's DecodeError is raised."""
    runs: dict[str, None] = {}
    first_error: DecodeError | None = None
    for scanned in scan_journal(source, name=name):
        if scanned.run_id is not None:
            runs.setdefault(scanned.run_id)
        elif first_error is None:
            first_error = scanned.error
    if not isinstance(source, str):
        source.seek(0)
    if not runs and first_error is not None:
        raise first_error
    return list(runs)


def _choose_run(name: str, source: IO[bytes] | str, wanted: str | None) -> str:
    if wanted is not None:
        return wanted
    runs = _runs_in(name, source)
    if not runs:
        raise _Fail(f"{name}: holds no source items", EXIT_BAD_INPUT)
    if len(runs) > 1:
        shown = ", ".join(runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
        raise _Fail(f"{name}: holds {len(runs)} runs ({shown}); choose one with --run", EXIT_USAGE)
    return runs[0]


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    name, source = _open_input(args.file, rewindable=args.run is None)
    run_id = _choose_run(name, source, args.run)
    journal = Journal(source, run_id=run_id, through=args.through, name=name)
    progress = _Progress(err, f"replay {name}", journal.size(), _isatty(out))
    observer = HarnessAguiObserver()
    at = [0]  # the line of the item being projected, for error messages

    def events() -> Iterator[BaseEvent]:
        for entry in journal.entries():
            at[0] = entry.line
            progress.update(entry.line, entry.end)
            yield from observer.observe(entry.item)

    try:
        if args.format == "pretty":
            for block in iter_conversation(events()):
                progress.before_output()
                out.write(block + "\n\n")
        else:
            frame: Callable[[BaseEvent], str] = _sse if args.format == "sse" else _jsonl
            for event in events():
                progress.before_output()
                out.write(frame(event))
        out.flush()
    except AguiObservationError as e:
        raise _Fail(f"{name}:{at[0]}: {e}", EXIT_BAD_INPUT) from None
    finally:
        progress.clear()
    if observer.run_id is None:
        if args.run is not None:
            raise _Fail(f"{name}: holds no items of run {args.run!r}", EXIT_USAGE)
        raise _Fail(f"{name}: no items of run {run_id!r} at or before sequence {args.through}", EXIT_BAD_INPUT)
    return EXIT_OK


def _jsonl(event: BaseEvent) -> str:
    return agui_to_json(event) + "\n"


def _sse(event: BaseEvent) -> str:
    return sse_frame(event)


# -- check ---------------------------------------------------------------------------

def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    name, source = _open_input(args.file, rewindable=False)
    size = None if args.file == "-" else os.path.getsize(args.file)
    progress = _Progress(err, f"check {name}", size, _isatty(out))
    try:
        report = check_journal(source, name=name, progress=progress.update)
    finally:
        progress.clear()
    out.write(report.describe() + "\n")
    out.flush()
    return EXIT_OK if report.ok else EXIT_BAD_INPUT


# -- main ------------------------------------------------------------------------------

def _sequence(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a sequence number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a sequence number is >= 0, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Project Harness runs onto AG-UI events, from source journals (JSON lines).",
        epilog=_EPILOG)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    replay = sub.add_parser(
        "replay", help="print the AG-UI projection of one run of a source journal",
        description="Print the AG-UI projection of one run of a source journal: AG-UI events as JSON lines, "
                    "as Server-Sent Events frames, or as a conversation for people to read.",
        epilog=_EPILOG)
    replay.add_argument("file", metavar="FILE", help="source journal, one wire-format item per line ('-' for stdin)")
    replay.add_argument("--run", metavar="RUN_ID", help="the run to replay; needed when FILE holds several runs")
    replay.add_argument("--through", metavar="SEQ", type=_sequence,
                        help="stop after the item with this sequence (replay a prefix of the run)")
    replay.add_argument("--format", choices=("jsonl", "sse", "pretty"), default="jsonl",
                        help="jsonl: one AG-UI event per line (default); sse: Server-Sent Events frames; "
                             "pretty: a readable conversation")
    check = sub.add_parser(
        "check", help="report gaps, duplicates, disorder and bad lines of each run in a journal",
        description="Report, per run in a source journal: items, gaps in sequence, duplicates, out-of-order items, "
                    "items after the terminal result, undecodable lines, and the first item the projection "
                    "refuses. Exits 1 when anything is found.",
        epilog=_EPILOG)
    check.add_argument("file", metavar="FILE", help="source journal ('-' for stdin)")
    sub.add_parser("demo", help="observe, interrupt, resume and check a simulated run",
                   description="Observe a simulated run live, lose the observer, resume a fresh one from the "
                               "retained prefix, continue with the live tail, and compare with an uninterrupted "
                               "projection.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``harness-agui`` command line; returns the exit status.

    Errors in the input end with one line on stderr (``harness-agui:
    FILE:LINE: reason``) and a non-zero status, never a traceback; see
    EXIT_BAD_INPUT and EXIT_USAGE.
    """
    args = _parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    if args.command == "replay" and args.format != "pretty" and isinstance(out, TextIOWrapper):
        out.reconfigure(encoding="utf-8")  # AG-UI JSON is UTF-8 whatever the locale
    elif isinstance(out, TextIOWrapper):
        out.reconfigure(errors="replace")
    try:
        if args.command == "replay":
            return _replay(args, out, err)
        if args.command == "check":
            return _check(args, out, err)
        return run_demo(out)
    except _Fail as e:
        return _say(err, str(e), e.status)
    except (DecodeError, JournalError) as e:
        return _say(err, str(e), EXIT_BAD_INPUT)
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            return _quiet_broken_pipe()
        where = f"{e.filename}: " if e.filename else ""
        return _say(err, f"{where}{e.strerror or e}", EXIT_USAGE)
    except KeyboardInterrupt:
        return _say(err, "interrupted", 130)


def _say(err: TextIO, message: str, status: int) -> int:
    err.write(f"{PROG}: {message}\n")
    err.flush()
    return status


def _quiet_broken_pipe() -> int:
    # The reader of our output went away (``| head``): stop without a word,
    # and keep the interpreter's final flush from failing again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BAD_INPUT

