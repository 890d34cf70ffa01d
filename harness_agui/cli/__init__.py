# The ``harness-agui`` command line: replay, check, demo, export, runs, events, serve and inspect.
#
# The commands are thin: the journal module reads and checks source files,
# the observer projects, codec and pretty format, ``harness_agui.serve``
# serves. This package parses the arguments (``_parser``) and dispatches
# (``main``, here) to a module per family of commands: journal files
# (``_files``: replay, check), a Host database (``_database``: runs, events,
# export) and servers (``_serving``: serve, inspect); ``demo`` is
# ``harness_agui.demo``'s. What lives here is the behaviour a person at a
# terminal relies on: bad input or bad arguments end in one line naming the
# file and line or the argument (never a traceback, never argparse's usage
# block), exit codes that scripts can test, progress on stderr only when
# stderr is a terminal, and a quiet exit with status 141 when the reader of
# a pipe goes away, as for any tool killed by SIGPIPE. A closed stdin,
# stdout or stderr is a one-line error (or, for stderr, a silent exit
# status), not an AttributeError.
#
# Every command reads its input once, front to back, so a pipe, a FIFO,
# ``/dev/stdin`` or ``<(...)`` is as good as a file; lines longer than
# ``--max-line-bytes`` (256 MiB by default) are an error naming the line.
#
# Start-up: each command imports what it uses when it runs, so that ``--version`` and ``--help`` import
# none of the core (ag_ui and pydantic), the server (Starlette, uvicorn) or an agent's a13n-harness: on
# Python 3.13 those cost more than a second before anything is printed. The tops of this package's modules
# import only the error classes (``core.errors`` imports nothing); ``tests/test_cli_serve_defaults.py`` checks
# it.
#
# Terminal safety: this is the top layer, so it is where text meets the
# terminal, and all of it meets it through ``debug.text.escape_terminal``:
# error messages (which quote file names, run ids and, in a DecodeError,
# the file's own field names), the progress line, the ``check`` report (its
# run-controlled pieces escaped one line each before it is laid out), the
# ``pretty`` view, and JSON or SSE output when stdout is a terminal. Output
# to a pipe or a file is left byte-exact: programs read it.

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Sequence
from io import TextIOWrapper

from ..core.errors import HarnessAguiError, HistoryError
from . import _database, _files, _serving
from ._common import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_OK, EXIT_USAGE, _Fail, say
from ._parser import _ArgumentError, make_parser

__all__ = ["main", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_USAGE", "EXIT_BROKEN_PIPE"]


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
        args = make_parser().parse_args(argv)
    except _ArgumentError as e:
        return say(err, f"{e.message} (see '{e.prog} --help')", EXIT_USAGE)
    out = sys.stdout
    if out is None:
        return say(err, "standard output is closed", EXIT_USAGE)
    try:
        if args.command == "replay" and args.format != "pretty" and isinstance(out, TextIOWrapper):
            out.reconfigure(encoding="utf-8")  # AG-UI JSON is UTF-8 whatever the locale
        elif isinstance(out, TextIOWrapper):
            out.reconfigure(errors="replace")
        if args.command == "replay":
            return _files.replay(args, out, err)
        if args.command == "check":
            return _files.check(args, out, err)
        if args.command == "export":
            return _database.export(args, out)
        if args.command == "runs":
            return _database.runs(args, out)
        if args.command == "events":
            return _database.events(args, out)
        if args.command == "serve":
            return _serving.serve(args, err)
        if args.command == "inspect":
            return _serving.inspect(args, err)
        from ..demo import run_demo

        return run_demo(out)
    except _Fail as e:
        return say(err, str(e), e.status)
    except HarnessAguiError as e:
        if not isinstance(e, HistoryError) and not _is_decode_error(e):
            raise
        return say(err, str(e), EXIT_BAD_INPUT)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except OSError as e:
        if e.errno == errno.EBADF and e.filename is None:
            return say(err, "a standard stream is closed", EXIT_USAGE)
        where = f"{e.filename}: " if e.filename else ""
        return say(err, f"{where}{e.strerror or e}", EXIT_USAGE)
    except KeyboardInterrupt:
        return say(err, "interrupted", 130)


def _is_decode_error(error: BaseException) -> bool:
    codec = sys.modules.get("harness_agui.wire.codec")  # not imported: nothing could raise its DecodeError
    return codec is not None and isinstance(error, codec.DecodeError)


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
