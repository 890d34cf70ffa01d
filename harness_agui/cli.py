# The ``harness-agui`` command line: replay, check, demo, export and serve.
#
# The commands are thin: the journal module reads and checks source files,
# the observer projects, codec and pretty format. What lives here is the
# behaviour a person at a terminal relies on: bad input or bad arguments end
# in one line naming the file and line or the argument (never a traceback,
# never argparse's usage block), exit codes that scripts can test, progress
# on stderr only when stderr is a terminal, and a quiet exit with status 141
# when the reader of a pipe goes away, as for any tool killed by SIGPIPE. A
# closed stdin, stdout or stderr is a one-line error (or, for stderr, a
# silent exit status), not an AttributeError.
#
# Every command reads its input once, front to back, so a pipe, a FIFO,
# ``/dev/stdin`` or ``<(...)`` is as good as a file; lines longer than
# ``--max-line-bytes`` (256 MiB by default) are an error naming the line.
#
# Start-up: each command imports what it uses when it runs, so that ``--version`` and ``--help`` import
# none of the core (ag_ui and pydantic), the server (Starlette, uvicorn) or an agent's a13n-harness: on
# Python 3.13 those cost more than a second before anything is printed. The top of this module imports
# only the error classes (``core.errors`` imports nothing); ``tests/test_cli_serve_defaults.py`` checks it.
#
# Terminal safety: this is the top layer, so it is where text meets the
# terminal, and all of it meets it through ``debug.text.escape_terminal``:
# error messages (which quote file names, run ids and, in a DecodeError,
# the file's own field names), the progress line, the ``check`` report (its
# run-controlled pieces escaped one line each before it is laid out), the
# ``pretty`` view, and JSON or SSE output when stdout is a terminal. Output
# to a pipe or a file is left byte-exact: programs read it.

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import importlib.util
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from io import TextIOWrapper
from typing import IO, TYPE_CHECKING, Any, NoReturn, TextIO

from .core.errors import AguiObservationError, ForeignRunError, HarnessAguiError, HistoryError

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent

    from .wire.jsonl import JournalReport, LineFault

__all__ = ["main", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_BROKEN_PIPE"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
"""The input is bad (undecodable or over-long line, broken order, a run the
projection refuses), or ``check`` found a problem."""
EXIT_USAGE = 2
"""Bad arguments, a file that cannot be read, a closed standard stream, or
no single run to replay."""
EXIT_BROKEN_PIPE = 141
"""The reader of the output went away (128 + SIGPIPE, what a shell reports
for ``cat`` in ``cat big | head -1``)."""

PROG = "harness-agui"

_EPILOG = ("exit status: 0 success; 1 bad input (or problems found by check); 2 usage error, unreadable file, "
           "closed standard stream or several runs without --run; 141 the reader of the output went away "
           "(broken pipe), quietly.")


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

    def __init__(self, err: TextIO | None, label: str, total: int | None, out_is_tty: bool) -> None:
        self.err: Any = err
        self.enabled = err is not None and _isatty(err)
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
        from .debug.text import clip

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


def _output_text(out: TextIO) -> Callable[[str], str]:
    """How text reaches ``out``: exact bytes for a pipe or a file, which
    programs read; escaped for a terminal, which a run's text must not
    drive."""
    if _isatty(out):
        from .debug.text import escape_terminal

        return lambda text: escape_terminal(text, multiline=True)
    return lambda text: text


# -- replay --------------------------------------------------------------------------
# One pass: without --run the Journal binds the first item's Run, and an item
# of another Run ends the replay there (ForeignRunError located at its line),
# after the output of the items before it, like any other fault mid-file.

def _replay(args: argparse.Namespace, out: TextIO, err: TextIO | None) -> int:
    from .core.observer import HarnessAguiObserver
    from .debug.pretty import iter_conversation
    from .debug.text import escape_terminal
    from .wire.jsonl import Journal

    name, source = _open_input(args.file)
    journal = Journal(source, run_id=args.run, through=args.through, name=name,
                      max_line_bytes=_max_line_bytes(args))
    progress = _Progress(err, f"replay {name}", journal.size(), _isatty(out))
    observer = HarnessAguiObserver()
    at = [0]  # the line of the item being projected, for error messages
    shown = _output_text(out)

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
    from .wire.agui import agui_to_json

    return agui_to_json(event) + "\n"


def _sse(event: BaseEvent) -> str:
    from .wire.agui import sse_frame

    return sse_frame(event)


def _max_line_bytes(args: argparse.Namespace) -> int:
    from .wire.jsonl import MAX_LINE_BYTES

    return MAX_LINE_BYTES if args.max_line_bytes is None else int(args.max_line_bytes)


# -- check ---------------------------------------------------------------------------

def _check(args: argparse.Namespace, out: TextIO, err: TextIO | None) -> int:
    from .debug.text import escape_terminal
    from .wire.jsonl import check_journal

    name, source = _open_input(args.file)
    size = None
    if isinstance(source, str):
        try:
            size = os.path.getsize(source) or None  # 0 for a pipe or a FIFO: unknown
        except OSError:
            pass
    progress = _Progress(err, f"check {name}", size, _isatty(out))
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

    from .debug.text import escape_terminal

    return attrs.evolve(fault, detail=escape_terminal(fault.detail))


def _escaped_report(report: JournalReport) -> JournalReport:
    """The report with the file name and every fault's detail (which quotes
    the file's own text: unknown field names, values) escaped one line each,
    so that describe() lays out lines the file cannot add to or forge. Run
    and thread ids are shown by describe() as repr(), already escaped."""
    import attrs

    from .debug.text import escape_terminal
    from .wire.jsonl import LineFault

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


# -- a Host database: runs, events, export --------------------------------------------------
# Each opens the database read-only (a SQLite file, or a postgresql:// URL with the postgres extra) and
# names a Run by the id its clients use or by the Harness's own (``host.bindings``).

class _Database:
    """A Host database opened read-only: its journal, delivery log and Run bindings (None when the database
    has none: written by an earlier release)."""

    def __init__(self, target: str) -> None:
        from .host import StorageError
        from .host.stores import is_postgres_url

        self.name = target
        self.postgres = is_postgres_url(target)
        if not self.postgres:
            if os.path.isdir(target):
                raise _Fail(f"{target}: is a directory, not a database", EXIT_USAGE)
            if not os.path.exists(target):
                raise _Fail(f"{target}: no such file", EXIT_USAGE)
        try:
            if self.postgres:
                try:
                    from .host.postgres import PostgresDeliveryLog, PostgresSourceJournal
                    from .host.postgres.bindings import PostgresRunBindings
                except ImportError as e:
                    raise _Fail(str(e), EXIT_USAGE) from None
                self.journal: Any = PostgresSourceJournal(target, read_only=True, pool_size=2)
                self.deliveries: Any = PostgresDeliveryLog(target, read_only=True, pool_size=2)
                self.bindings: Any = self._optional(lambda: PostgresRunBindings(target, read_only=True))
            else:
                from .host import SqliteDeliveryLog, SqliteSourceJournal
                from .host.bindings import SqliteRunBindings

                self.journal = SqliteSourceJournal(target, read_only=True)
                self.deliveries = self._optional(lambda: SqliteDeliveryLog(target, read_only=True))
                self.bindings = self._optional(lambda: SqliteRunBindings(target, read_only=True))
        except StorageError as e:
            self.close()
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
        except _Fail:
            self.close()
            raise
        except Exception as e:  # a database that cannot be reached
            self.close()
            raise _Fail(f"{_redacted(target)}: cannot be opened: {type(e).__name__}: {e}", EXIT_USAGE) from None

    @staticmethod
    def _optional(open_store: Callable[[], Any]) -> Any:
        from .host import StorageError

        try:
            return open_store()
        except StorageError:  # the database has no such table: nothing of that kind was written to it
            return None

    def close(self) -> None:
        for name in ("journal", "deliveries", "bindings"):
            store = getattr(self, name, None)
            if store is not None:
                store.close()

    def __enter__(self) -> _Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def runs(self) -> tuple[str, ...]:
        runs: tuple[str, ...] = self.journal.runs()
        return runs

    def run_id(self, given: str | None) -> str:
        """The Harness's run id of the Run ``given`` names (the client's id or its own); the only Run
        when ``given`` is None."""
        runs = self.runs()
        if given is None:
            if len(runs) != 1:
                shown = ", ".join(runs[:10]) + (", ..." if len(runs) > 10 else "")
                raise _Fail(f"{_redacted(self.name)}: holds {len(runs)} runs ({shown}), choose one with --run (see "
                            f"harness-agui runs {_redacted(self.name)})" if runs else
                            f"{_redacted(self.name)}: holds no runs", EXIT_USAGE)
            return runs[0]
        bound = None if self.bindings is None else self.bindings.source_of(given)
        return given if bound is None else str(bound.source_run_id)


def _redacted(target: str) -> str:
    if target.startswith(("postgresql://", "postgres://")):
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(target)
        if parts.password is not None:
            netloc = parts.netloc.rsplit("@", 1)[1]
            return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{netloc}"))
    return target


def _export(args: argparse.Namespace, out: TextIO) -> int:
    from .host import StorageError
    from .wire.codec import encode

    with _Database(args.database) as db:
        try:
            run_id = db.run_id(args.run)
            try:
                cursor = db.journal.cursor(run_id)
            except StorageError:
                raise
            except ValueError:  # the id of a child Run: its items are in its root's stream
                cursor = None
            if cursor is None:
                raise _Fail(f"{_redacted(args.database)}: holds no run {run_id!r}", EXIT_USAGE)
            import asyncio

            lines = asyncio.run(_collect_lines(db.journal, run_id, cursor, encode))
        except StorageError as e:
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
    if args.output is None:
        shown = _output_text(out)
        out.write(shown("".join(lines)))
        out.flush()
    else:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(lines)
    return EXIT_OK


async def _collect_lines(journal: Any, run_id: str, cursor: int, encode: Callable[[Any], str]) -> list[str]:
    return [encode(item) + "\n" async for item in journal.read_prefix(run_id, through=cursor)]


def _runs(args: argparse.Namespace, out: TextIO) -> int:
    from .debug.text import escape_terminal
    from .host import StorageError

    rows: list[tuple[str, ...]] = [("RUN", "THREAD", "CLIENT RUN", "CLIENT THREAD", "ITEMS", "EVENTS", "STATE")]
    with _Database(args.database) as db:
        try:
            for run_id in db.journal.runs(args.thread):
                rows.append(_run_row(db, run_id))
            if db.bindings is not None:  # bound by a server that died before the Run's first item
                for wire in db.bindings.unjournaled():
                    if args.thread in (None, wire.source_thread_id):
                        rows.append((wire.source_run_id, wire.source_thread_id, wire.wire_run_id,
                                     wire.wire_thread_id, "0", "0", "not started"))
        except StorageError as e:
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
    widths = [max(len(escape_terminal(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(escape_terminal(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.flush()
    return EXIT_OK


def _run_row(db: _Database, run_id: str) -> tuple[str, ...]:
    thread_id = db.journal.thread_of(run_id) or ""
    cursor = db.journal.cursor(run_id)
    ended = db.journal.finished(run_id)
    events = 0 if db.deliveries is None else db.deliveries.last_event_id(run_id)
    delivered = db.deliveries is not None and db.deliveries.finished(run_id)
    state = ("finished" if ended and delivered else "failed" if delivered else
             "journaled, not all recorded" if ended else "unfinished")
    wire = None if db.bindings is None else db.bindings.wire_of(run_id)
    client_run, client_thread = ("", "") if wire is None else (wire.wire_run_id, wire.wire_thread_id)
    items = 0 if cursor is None else cursor + 1
    return (run_id, thread_id, client_run, client_thread, str(items), str(events), state)


def _events(args: argparse.Namespace, out: TextIO) -> int:
    from .host import StorageError, UnknownEventIdError

    with _Database(args.database) as db:
        if db.deliveries is None:
            raise _Fail(f"{_redacted(args.database)}: holds no delivery log", EXIT_USAGE)
        try:
            run_id = db.run_id(args.run)
            if not db.deliveries.last_event_id(run_id) and not db.deliveries.finished(run_id):
                raise _Fail(f"{_redacted(args.database)}: has no events of run {run_id!r}", EXIT_USAGE)
            after = args.after if args.after is None or not args.after.isdigit() else int(args.after)
            try:
                deliveries = db.deliveries.replay(run_id, after=after)
            except UnknownEventIdError as e:
                raise _Fail(str(e), EXIT_USAGE) from None
        except StorageError as e:
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
    shown = _output_text(out)
    for delivery in deliveries:
        out.write(shown(delivery.sse() if args.format == "sse" else delivery.data + "\n"))
    out.flush()
    return EXIT_OK


# -- serve -----------------------------------------------------------------------------------
# What ``serve`` serves, and with which options, in one place (``_served``):
#
# - ``--demo`` and ``MODULE:ATTR`` naming an agent or a runner: the command builds the AguiServer from its
#   flags. Without ``--db`` the database is a file of the current folder, kept after the server stops, so
#   that the next start in the same folder resumes its unfinished Runs and still serves its ended ones
#   (``harness-agui.db``; ``harness-agui-demo.db`` for ``--demo``, so that the demo's Runs never mix with an
#   agent's). A module that also builds an AguiServer of its own for that agent or runner is told of: its
#   options are not the ones served, and the note names the attribute that would serve them.
# - ``MODULE:ATTR`` naming an AguiServer, or an ASGI app (a Starlette or FastAPI app, such as one that mounts
#   an AguiServer): served as the module made it. Its options (database, CORS, authorize, paths, ...) are the
#   module's, so a flag that would set one of them is refused, never applied over them or silently dropped.

DEFAULT_DATABASE = "harness-agui.db"
"""The SQLite file ``harness-agui serve MODULE:ATTR`` keeps its Runs in, in the current folder, without --db."""
DEMO_DATABASE = "harness-agui-demo.db"
"""The same for ``harness-agui serve --demo``."""

_SERVER_FLAGS = (("db", "--db"), ("synchronous", "--synchronous"), ("cors", "--cors-origin"),
                 ("show_hidden", "--show-hidden"), ("cancel_on_disconnect", "--cancel-on-disconnect"))


class _Served:
    """What ``serve`` runs: the ASGI app, the words that say what it is, the URL path of its runs route
    (None when the app's own routes are not known), its database, and a note for the person at the
    terminal (None)."""

    def __init__(self, app: Any, what: str, runs_path: str | None, database: str | None,
                 note: str | None = None) -> None:
        self.app = app
        self.what = what
        self.runs_path = runs_path
        self.database = database
        self.note = note


def _serve(args: argparse.Namespace, err: TextIO | None) -> int:
    # Start-up is mostly imports: ours, and the app's (a13n-harness and pydantic-ai build thousands of classes).
    # The socket listens first, so a busy port fails at once and connections queue from the first moment; the
    # cyclic collector is off until the server is up (those imports make containers by the hundred thousand
    # and no garbage worth a collection: about a tenth of the start-up's CPU went to collections that found
    # nothing), and tune_collector's one collection runs once the server is up, not before.
    if (args.target is None) == (not args.demo):
        raise _Fail("serve takes MODULE:ATTR (an a13n-harness agent, a runner, an AguiServer or an ASGI app) or "
                    "--demo, one of the two", EXIT_USAGE)
    listening = _listen(args.host, args.port)  # before anything says "serving": a busy port fails here
    collecting = gc.isenabled()
    if collecting and not args.no_gc_tuning:
        gc.disable()
    try:
        try:
            import uvicorn

            from .serve import AguiServer, tune_collector
        except ImportError:
            raise _Fail("serve needs the serve extra: pip install 'harness-agui[serve]'", EXIT_USAGE) from None
        served = _served(args, AguiServer)
        host, port = listening.getsockname()[:2]
        where = f"http://{host}:{port}{served.runs_path or ''}"
        database = "" if served.database is None else f" (database {served.database})"
        _say(err, f"serving {served.what} on {where}{database}; Ctrl-C stops", EXIT_OK)
        if served.note is not None:
            _say(err, served.note, EXIT_OK)

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                if collecting and not gc.isenabled():  # up (or failed to start): the collector as it was, tuned
                    gc.enable()
                    if not args.no_gc_tuning:
                        tune_collector()

        config = uvicorn.Config(served.app, log_level="warning", timeout_graceful_shutdown=1)
        Server(config).run(sockets=[listening])
    finally:
        listening.close()
        if collecting and not gc.isenabled():
            gc.enable()
    return EXIT_OK


def _inspect(args: argparse.Namespace, err: TextIO | None) -> int:
    try:
        import uvicorn

        from .inspect import open_inspector
    except ImportError:
        raise _Fail("inspect needs the inspect extra: pip install 'harness-agui[inspect]'", EXIT_USAGE) from None
    with _Database(args.database):  # the same checks and one-line errors as runs, events and export
        pass
    listening = _listen(args.host, args.port)
    try:
        inspector, close = open_inspector(args.database)
        try:
            host, port = listening.getsockname()[:2]
            _say(err, f"inspecting {_redacted(args.database)} on http://{host}:{port}/ (read-only); Ctrl-C stops",
                 EXIT_OK)
            config = uvicorn.Config(inspector.app, log_level="warning", timeout_graceful_shutdown=1)
            uvicorn.Server(config).run(sockets=[listening])
        finally:
            close()
    finally:
        listening.close()
    return EXIT_OK


def _listen(host: str, port: int) -> Any:
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as e:
        raise _Fail(f"cannot listen on {host}:{port}: {e.strerror or e}", EXIT_USAGE) from None
    family, kind, proto, _, address = infos[0]
    listening = socket.socket(family, kind, proto)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen(2048)
        listening.set_inheritable(True)
    except OSError as e:
        listening.close()
        raise _Fail(f"cannot listen on {host}:{port}: {e.strerror or e}", EXIT_USAGE) from None
    return listening


def _served(args: argparse.Namespace, server_class: Any) -> _Served:
    if args.demo:
        options = _options(args, DEMO_DATABASE)
        if not args.simulated and importlib.util.find_spec("a13n_harness") is not None:
            from .a13n.demo import agent

            server = _opened(lambda: server_class.for_agent(agent, **options), options)
            return _of_server(server, "the a13n-harness demo agent (harness_agui.a13n.demo)")
        from .serve import demo_harness

        runner, reattach = demo_harness(pace=args.pace)
        what = "the simulated Harness"
        if not args.simulated:
            what += (" (a13n-harness is not installed: pip install 'harness-agui[a13n]' on Python 3.13 for its demo "
                     "agent)")
        server = _opened(lambda: server_class(runner, reattach=reattach, **options), options)
        return _of_server(server, what)
    module, target = _load(args.target)
    if isinstance(target, server_class):
        _refuse_server_flags(args, "an AguiServer")
        return _of_server(target, f"{args.target} (an AguiServer, with the options it was made with)")
    if _is_asgi_app(target):
        _refuse_server_flags(args, "an ASGI app")
        made = [s for s in _servers_of(module, server_class) if s.app is target]
        if made:  # the app of an AguiServer the module made: the same thing
            return _of_server(made[0], f"{args.target} (the app of an AguiServer, with the options it was made with)")
        servers = _servers_of(module, server_class)
        database = _database_of(servers[0]) if len(servers) == 1 else None
        return _Served(target, f"{args.target} (an ASGI app, with its own routes and options)", None, database)
    if hasattr(target, "definition") and callable(getattr(target, "stream", None)):
        options = _options(args, DEFAULT_DATABASE)
        server = _opened(lambda: server_class.for_agent(target, **options), options)
        return _of_server(server, f"{args.target} (an a13n-harness agent)",
                          _not_served(args.target, module, target, server_class))
    if callable(getattr(target, "start", None)) or callable(target) and not isinstance(target, type):
        options = _options(args, DEFAULT_DATABASE)
        server = _opened(lambda: server_class(target, **options), options)
        return _of_server(server, f"{args.target} (a runner)",
                          _not_served(args.target, module, target, server_class))
    raise _Fail(f"{args.target} is a {type(target).__name__}: serve takes an a13n-harness agent, a runner (an object "
                "with start(), or an async callable), an AguiServer or an ASGI app", EXIT_USAGE)


def _options(args: argparse.Namespace, default_database: str) -> dict[str, Any]:
    """The AguiServer options the flags give; the database defaults to ``default_database`` in the current
    folder (kept: the next start resumes from it)."""
    options: dict[str, Any] = {"database": args.db or os.path.abspath(default_database),
                               "synchronous": args.synchronous or "FULL", "show_hidden": args.show_hidden,
                               "cancel_on_disconnect": args.cancel_on_disconnect}
    if args.cors:
        options["cors_origins"] = args.cors
    return options


def _refuse_server_flags(args: argparse.Namespace, kind: str) -> None:
    given = [flag for name, flag in _SERVER_FLAGS if getattr(args, name)]
    if given:
        raise _Fail(f"{args.target} is {kind} with options of its own: {', '.join(given)} would override them; set "
                    "them where it is made, or serve its agent or runner with the flags", EXIT_USAGE)


def _of_server(server: Any, what: str, note: str | None = None) -> _Served:
    runs_path = next((route.path for route in server.app.routes if "POST" in (route.methods or ())), "/runs")
    return _Served(server.app, what, runs_path, _database_of(server), note)


def _database_of(server: Any) -> str | None:
    from .host.stores import is_postgres_url

    path = getattr(server.journal, "path", None) or getattr(server.journal, "url", None)
    if path is None:
        return None
    path = os.fspath(path)
    return _redacted(path) if is_postgres_url(path) else os.path.abspath(path)


def _servers_of(module: Any, server_class: Any) -> list[Any]:
    return [value for value in vars(module).values() if isinstance(value, server_class)]


def _not_served(name: str, module: Any, target: Any, server_class: Any) -> str | None:
    """A note when ``module`` also made an AguiServer for ``target``, whose options are not served."""
    for attribute, value in vars(module).items():
        if isinstance(value, server_class):
            runner = value.runner  # the target itself, an A13nRunner of it, or a CallableRunner of it
            if any(target is made for made in (runner, getattr(runner, "agent", None),
                                               getattr(runner, "runner", None))):
                module_name = name.partition(":")[0]
                return (f"note: {module_name}.{attribute} is an AguiServer made for {name} with options of its own "
                        f"(database, CORS, authorize, ...): they are not used here; serve {module_name}:{attribute} "
                        "to use them")
    return None


def _is_asgi_app(target: Any) -> bool:
    """A Starlette (or FastAPI) app, or an async callable of ``(scope, receive, send)``."""
    import inspect

    starlette = sys.modules.get("starlette.applications")
    if starlette is not None and isinstance(target, starlette.Starlette):
        return True
    method = vars(type(target)).get("__call__")
    if not (inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(method)):
        return False
    try:
        parameters = [p.name for p in inspect.signature(target).parameters.values()]
    except (TypeError, ValueError):
        return False
    return parameters == ["scope", "receive", "send"]


def _opened(make: Callable[[], Any], options: dict[str, Any]) -> Any:
    try:
        return make()
    except (OSError, ValueError, ImportError) as e:
        raise _Fail(f"{_redacted(os.fspath(options['database']))}: cannot be opened: {e}", EXIT_USAGE) from None


def _load(target: str) -> tuple[Any, Any]:
    """The module of ``MODULE:ATTR`` and the object it names (the current directory is searched first, as
    ``python -m`` does)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise _Fail(f"{target}: give MODULE:ATTR, such as examples.a13n_agent:agent", EXIT_USAGE)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise _Fail(f"{target}: cannot import {module_name}: {e}", EXIT_USAGE) from None
    found = module
    for name in attribute.split("."):
        try:
            found = getattr(found, name)
        except AttributeError:
            raise _Fail(f"{target}: {module_name} has no {attribute}", EXIT_USAGE) from None
    return module, found


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value > 60:
        raise argparse.ArgumentTypeError(f"a pace is 0 to 60 seconds, got {text}")
    return value


# -- main ------------------------------------------------------------------------------

def _sequence(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a sequence number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a sequence number is >= 0, got {value}")
    from .core.source import MAX_SEQUENCE

    if value > MAX_SEQUENCE:
        raise argparse.ArgumentTypeError(f"a sequence number is at most 2**53 - 1, got {value}")
    return value


def _byte_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"the limit is at least 1 byte, got {value}")
    return value


class _ArgumentError(Exception):
    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.message = message
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors end in one line (see ``main``), not in
    a usage block and an exit from deep inside parse_args. Sub-parsers are
    made of the same class."""

    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message, self.prog)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{PROG} {version('harness-agui')}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        return f"{PROG} (version unknown: not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, description="Project Harness runs onto AG-UI events, from source journals (JSON lines).",
        epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    replay = sub.add_parser(
        "replay", help="print the AG-UI projection of one run of a source journal",
        description="Print the AG-UI projection of one run of a source journal: AG-UI events as JSON lines, "
                    "as Server-Sent Events frames, or as a conversation for people to read. The file is read "
                    "once, so a pipe or a FIFO works. Without --run the first item's run is replayed, and an "
                    "item of another run ends the replay with status 2.",
        epilog=_EPILOG)
    replay.add_argument("file", metavar="FILE", help="source journal, one wire-format item per line ('-' for stdin)")
    replay.add_argument("--run", metavar="RUN_ID", help="the run to replay; needed when FILE holds several runs")
    replay.add_argument("--through", metavar="SEQ", type=_sequence,
                        help="stop after the item with this sequence (replay a prefix of the run)")
    replay.add_argument("--format", choices=("jsonl", "sse", "pretty"), default="jsonl",
                        help="jsonl: one AG-UI event per line (default); sse: Server-Sent Events frames; "
                             "pretty: a readable conversation")
    replay.add_argument("--notices", action="store_true",
                        help="with --format pretty: show the Harness's own notices too (its harness.* CUSTOM "
                             "events that are no input), which the conversation leaves out by default")
    check = sub.add_parser(
        "check", help="report gaps, duplicates, disorder and bad lines of each run in a journal",
        description="Report, per run in a source journal: items, gaps in sequence, duplicates, out-of-order items, "
                    "items after the terminal result, undecodable lines, and the first item the projection "
                    "refuses. Exits 1 when anything is found.",
        epilog=_EPILOG)
    check.add_argument("file", metavar="FILE", help="source journal ('-' for stdin)")
    for command in (replay, check):
        command.add_argument("--max-line-bytes", metavar="N", type=_byte_count,
                             help="the longest line read, in bytes (default 268435456, 256 MiB: "
                                  "harness_agui.wire.jsonl.MAX_LINE_BYTES); a longer line is an error naming it")
    demo = sub.add_parser("demo", help="observe, interrupt, resume and check a simulated run",
                   description="Observe a simulated run live, lose the observer, resume a fresh one from the "
                               "retained prefix, continue with the live tail, and compare with an uninterrupted "
                               "projection.")
    export = sub.add_parser(
        "export", help="write one run of a Host database's source journal as wire JSON lines",
        description="Write the source items of one run, as stored in a Host database (a SQLite file or a "
                    "postgresql:// URL), as wire-format JSON lines, so that replay and check work on them. The "
                    "database is opened read-only; harness-agui runs lists its runs.",
        epilog=_EPILOG)
    export.add_argument("database", metavar="DB", help="the Host database: a SQLite file or a postgresql:// URL")
    export.add_argument("--run", metavar="RUN_ID",
                        help="the run to export (its client's id or the Harness's); needed when DB holds several")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    runs = sub.add_parser(
        "runs", help="list the runs of a Host database",
        description="List the root runs of a Host database (a SQLite file or a postgresql:// URL), oldest first: "
                    "the Harness's run and thread ids, the ids its clients name it by, how many source items are "
                    "journaled and AG-UI events recorded, and its state (finished; failed: ended by a RUN_ERROR; "
                    "unfinished; not started: bound by a server that died before its first item). Read-only.",
        epilog=_EPILOG)
    runs.add_argument("database", metavar="DB", help="the Host database: a SQLite file or a postgresql:// URL")
    runs.add_argument("--thread", metavar="THREAD_ID", help="only the runs of this (Harness) thread")
    events = sub.add_parser(
        "events", help="print the AG-UI events a Host database recorded for a run (what its clients were sent)",
        description="Print the AG-UI events of one run as its delivery log holds them, with their durable ids: "
                    "what every client of the run was sent. Read-only.",
        epilog=_EPILOG)
    events.add_argument("database", metavar="DB", help="the Host database: a SQLite file or a postgresql:// URL")
    events.add_argument("--run", metavar="RUN_ID",
                        help="the run (its client's id or the Harness's); needed when DB holds several")
    events.add_argument("--format", choices=("sse", "jsonl"), default="sse",
                        help="sse: Server-Sent Events frames with their ids (default); jsonl: one event per line")
    events.add_argument("--after", metavar="EVENT_ID", help="only the events after this id (an SSE id such as "
                                                            "17.5e1c09a3, or its number)")
    serve = sub.add_parser(
        "serve", help="serve an agent over AG-UI (POST /runs, GET .../events, DELETE a run)",
        description="Serve the AG-UI endpoints of harness_agui.serve for MODULE:ATTR (an a13n-harness agent or a "
                    "runner, served with the options below; or an AguiServer or an ASGI app such as a Starlette "
                    "app, served with the options the module gave it, which the options below may not override; "
                    "the current directory is searched first, as by python -m) or for "
                    "--demo: POST /runs with a RunAgentInput streams a run as Server-Sent Events, "
                    "GET /threads/{thread_id}/runs/{run_id}/events replays after Last-Event-ID and follows, "
                    "DELETE /threads/{thread_id}/runs/{run_id} cancels, GET /health. The database is kept: "
                    f"without --db, {DEFAULT_DATABASE} in the current folder ({DEMO_DATABASE} for --demo), and "
                    "the next start in the same folder serves its runs again and resumes the unfinished ones. The "
                    "address is bound before anything else (with --port 0, the port chosen is the one printed). "
                    "Needs the serve extra (pip install 'harness-agui[serve]'); an a13n-harness agent needs the "
                    "a13n extra.",
        epilog=_EPILOG)
    serve.add_argument("target", metavar="MODULE:ATTR", nargs="?",
                       help="what to serve, e.g. examples.a13n_agent:agent")
    serve.add_argument("--demo", action="store_true",
                       help="serve the a13n-harness demo agent (harness_agui.a13n.demo: a tool, a subagent, an "
                            "approval) when the a13n extra is installed, else the simulated Harness")
    serve.add_argument("--simulated", action="store_true",
                       help="with --demo: the simulated Harness even when a13n-harness is installed")
    serve.add_argument("--db", "--database", dest="db", metavar="PATH_OR_URL",
                       help=f"the Host database: a SQLite file (default: {DEFAULT_DATABASE} in the current folder, "
                            f"{DEMO_DATABASE} for --demo; kept after the server stops), or a postgresql:// URL "
                            "(the postgres extra), which several servers may share")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on (default 8000; 0: any free "
                                                                "port, printed)")
    serve.add_argument("--pace", type=_seconds, default=0.03, metavar="SECONDS",
                       help="seconds between two items of the simulated Harness (default 0.03, a model's "
                            "token rate)")
    serve.add_argument("--synchronous", choices=("FULL", "NORMAL"), type=str.upper,
                       help="SQLite durability: FULL (default) survives a power cut, NORMAL a crash of the "
                            "process and costs much less per item")
    serve.add_argument("--cors-origin", "--cors", dest="cors", metavar="ORIGIN", action="append",
                       help="allow browsers on ORIGIN (repeat for more; * for any) to call the endpoints")
    serve.add_argument("--show-hidden", action="store_true",
                       help="send clients what the Harness marks for the model only (debugging)")
    serve.add_argument("--cancel-on-disconnect", action="store_true",
                       help="cancel a run when the client that POSTed it goes away before its end")
    serve.add_argument("--no-gc-tuning", action="store_true",
                       help="leave Python's garbage collector as it is (serve freezes the start-up heap and "
                            "collects new objects less often: see harness_agui.serve.tune_collector)")
    inspect = sub.add_parser(
        "inspect", help="browse a Host database's threads and runs in a browser (read-only)",
        description="Serve the run inspector (harness_agui.inspect) for a Host database, a SQLite file or a "
                    "postgresql:// URL, opened read-only: its threads and runs, each run's conversation, its "
                    "source items step by step with the AG-UI events each produced, a running run followed "
                    "live, and its files. With --port 0 the port chosen is the one printed. Needs the inspect "
                    "extra (pip install 'harness-agui[inspect]').",
        epilog=_EPILOG)
    inspect.add_argument("database", metavar="DB", help="the Host database: a SQLite file or a postgresql:// URL")
    inspect.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    inspect.add_argument("--port", type=_port, default=8001, help="the port to listen on (default 8001; 0: any "
                                                                  "free port, printed)")
    for command in (replay, check, export, runs, events, serve, demo, inspect):
        command.add_argument("--version", action="version", version=_version())
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``harness-agui`` command line; returns the exit status.

    Errors end with one line on stderr (``harness-agui: FILE:LINE: reason``,
    or the argument at fault) and a non-zero status, never a traceback; see
    EXIT_BAD_INPUT, EXIT_USAGE and EXIT_BROKEN_PIPE. Everything printed that
    a run or a user controls goes through ``escape_terminal``. ``--help``
    still exits through SystemExit(0), as argparse does.
    """
    err = sys.stderr
    try:
        args = _parser().parse_args(argv)
    except _ArgumentError as e:
        return _say(err, f"{e.message} (see '{e.prog} --help')", EXIT_USAGE)
    out = sys.stdout
    if out is None:
        return _say(err, "standard output is closed", EXIT_USAGE)
    try:
        if args.command == "replay" and args.format != "pretty" and isinstance(out, TextIOWrapper):
            out.reconfigure(encoding="utf-8")  # AG-UI JSON is UTF-8 whatever the locale
        elif isinstance(out, TextIOWrapper):
            out.reconfigure(errors="replace")
        if args.command == "replay":
            return _replay(args, out, err)
        if args.command == "check":
            return _check(args, out, err)
        if args.command == "export":
            return _export(args, out)
        if args.command == "runs":
            return _runs(args, out)
        if args.command == "events":
            return _events(args, out)
        if args.command == "serve":
            return _serve(args, err)
        if args.command == "inspect":
            return _inspect(args, err)
        from .demo import run_demo

        return run_demo(out)
    except _Fail as e:
        return _say(err, str(e), e.status)
    except HarnessAguiError as e:
        if not isinstance(e, HistoryError) and not _is_decode_error(e):
            raise
        return _say(err, str(e), EXIT_BAD_INPUT)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except OSError as e:
        if e.errno == errno.EBADF and e.filename is None:
            return _say(err, "a standard stream is closed", EXIT_USAGE)
        where = f"{e.filename}: " if e.filename else ""
        return _say(err, f"{where}{e.strerror or e}", EXIT_USAGE)
    except KeyboardInterrupt:
        return _say(err, "interrupted", 130)


def _is_decode_error(error: BaseException) -> bool:
    codec = sys.modules.get("harness_agui.wire.codec")  # not imported: nothing could raise its DecodeError
    return codec is not None and isinstance(error, codec.DecodeError)


def _say(err: TextIO | None, message: str, status: int) -> int:
    """Print ``harness-agui: message`` on stderr, escaped to one line, if
    stderr is open and writable; return ``status`` either way."""
    from .debug.text import escape_terminal

    if err is not None:
        try:
            err.write(f"{PROG}: {escape_terminal(message)}\n")
            err.flush()
        except (OSError, ValueError):
            pass
    return status


def _quiet_broken_pipe() -> int:
    # The reader of our output went away (``| head``): stop without a word,
    # with the status a tool killed by SIGPIPE has, and keep the
    # interpreter's final flush of stdout from failing again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_BROKEN_PIPE
