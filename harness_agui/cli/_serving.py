# The commands that run a server: ``serve`` (the AG-UI endpoints of ``harness_agui.serve`` for an agent, a
# runner, an AguiServer or an ASGI app, or for ``--demo``) and ``inspect`` (the run inspector over a Host
# database). What they serve, and how, is ``harness_agui.serve._launch``'s; what stays here is what the
# process must do before that package is imported, since importing any of it imports Starlette, ag_ui,
# pydantic and the core:
#
# Start-up is mostly imports: ours, and the app's (a13n-harness and pydantic-ai build thousands of classes).
# The socket listens first, so a busy port fails at once and connections queue from the first moment; the
# cyclic collector is off until the server is up (those imports make containers by the hundred thousand and
# no garbage worth a collection: about a tenth of the start-up's CPU went to collections that found
# nothing), and tune_collector's one collection runs once the server is up, not before.

from __future__ import annotations

import argparse
import gc
from typing import Any, TextIO

from ._common import EXIT_OK, EXIT_USAGE, _Fail, say
from ._database import Database

DEFAULT_DATABASE = "harness-agui.db"
"""The SQLite file ``harness-agui serve MODULE:ATTR`` keeps its Runs in, in the current folder, without --db."""
DEMO_DATABASE = "harness-agui-demo.db"
"""The same for ``harness-agui serve --demo``."""


def serve(args: argparse.Namespace, err: TextIO | None) -> int:
    if (args.target is None) == (not args.demo):
        raise _Fail("serve takes MODULE:ATTR (an a13n-harness agent, a runner, an AguiServer or an ASGI app) or "
                    "--demo, one of the two", EXIT_USAGE)
    listening = _listen(args.host, args.port)  # before anything says "serving": a busy port fails here
    collecting = gc.isenabled()
    if collecting and not args.no_gc_tuning:
        gc.disable()
    try:
        try:
            from ..serve import _launch
        except ImportError:
            raise _Fail("serve needs the serve extra: pip install 'harness-agui[serve]'", EXIT_USAGE) from None
        try:
            served = _launch.served(args, DEMO_DATABASE if args.demo else DEFAULT_DATABASE)
        except _launch._LaunchError as e:
            raise _Fail(str(e), EXIT_USAGE) from None
        host, port = listening.getsockname()[:2]
        where = f"http://{host}:{port}{served.runs_path or ''}"
        database = "" if served.database is None else f" (database {served.database})"
        say(err, f"serving {served.what} on {where}{database}; Ctrl-C stops", EXIT_OK)
        if served.note is not None:
            say(err, served.note, EXIT_OK)
        _launch.run(served.app, listening, collecting=collecting, tune=not args.no_gc_tuning)
    finally:
        listening.close()
        if collecting and not gc.isenabled():
            gc.enable()
    return EXIT_OK


def inspect(args: argparse.Namespace, err: TextIO | None) -> int:
    try:
        from ..inspect import open_inspector
        from ..serve._launch import run
    except ImportError:
        raise _Fail("inspect needs the inspect extra: pip install 'harness-agui[inspect]'", EXIT_USAGE) from None
    with Database(args.database) as db:  # the same checks and one-line errors as runs, events and export
        shown = db.shown
    listening = _listen(args.host, args.port)
    try:
        inspector, close = open_inspector(args.database)
        try:
            host, port = listening.getsockname()[:2]
            say(err, f"inspecting {shown} on http://{host}:{port}/ (read-only); Ctrl-C stops", EXIT_OK)
            run(inspector.app, listening)
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
