# The command line's arguments: one parser, whose errors end in one line (``_ArgumentError``, reported by
# ``main``), with a sub-parser per command and the checks of the numbers its flags take. It imports nothing
# the commands use: ``--version`` and ``--help`` are answered from here alone.

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn, TypeVar

from ._common import PROG
from ._serving import DEFAULT_DATABASE, DEMO_DATABASE

_EPILOG = ("exit status: 0 success; 1 bad input (or problems found by check); 2 usage error, unreadable file, "
           "closed standard stream or several runs without --run; 141 the reader of the output went away "
           "(broken pipe), quietly.")


_N = TypeVar("_N", int, float)


def _number(text: str, kind: Callable[[str], _N], what: str) -> _N:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None


def _sequence(text: str) -> int:
    value = _number(text, int, "sequence number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"a sequence number is >= 0, got {value}")
    from ..core.source import MAX_SEQUENCE

    if value > MAX_SEQUENCE:
        raise argparse.ArgumentTypeError(f"a sequence number is at most 2**53 - 1, got {value}")
    return value


def _byte_count(text: str) -> int:
    value = _number(text, int, "number of bytes")
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


def make_parser() -> argparse.ArgumentParser:
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


def _port(text: str) -> int:
    value = _number(text, int, "port number")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def _seconds(text: str) -> float:
    value = _number(text, float, "number of seconds")
    if not value >= 0 or value > 60:
        raise argparse.ArgumentTypeError(f"a pace is 0 to 60 seconds, got {text}")
    return value
