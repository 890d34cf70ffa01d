# What ``harness-agui serve`` and ``harness-agui inspect`` run, once the command line has bound the socket
# (before any of this package is imported: the port listens from the first moment, and a busy one fails at
# once) and turned the cyclic collector off for the imports (``cli._serving``).
#
# What ``serve`` serves, and with which options, in one place (``served``):
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
#
# What the person at the terminal is told of goes up as a ``_LaunchError`` (one line, exit status 2).

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import attrs
import uvicorn
from starlette.applications import Starlette

from ..host.stores import is_postgres_url, redacted
from ._app import AguiServer
from ._process import demo_harness, tune_collector

_SERVER_FLAGS = (("db", "--db"), ("synchronous", "--synchronous"), ("cors", "--cors-origin"),
                 ("show_hidden", "--show-hidden"), ("cancel_on_disconnect", "--cancel-on-disconnect"))


class _LaunchError(Exception):
    """What ``serve`` cannot serve, said in one line (the command line's to report: a signal, not one of the
    library's errors)."""


@attrs.frozen
class Served:
    """What ``serve`` runs: the ASGI app, the words that say what it is, the URL path of its runs route
    (None when the app's own routes are not known), its database, and a note for the person at the
    terminal (None)."""

    app: Any
    what: str
    runs_path: str | None
    database: str | None
    note: str | None = None


def served(args: argparse.Namespace, default_database: str) -> Served:
    """What ``serve`` serves for its arguments ``args``: ``--demo`` or ``MODULE:ATTR``, and the flags. A server
    it builds keeps its Runs in ``--db``, or else in ``default_database`` in the current folder. Raises
    _LaunchError for what it cannot serve, or a database it cannot open."""
    if args.demo:
        options = _options(args, default_database)
        if not args.simulated and importlib.util.find_spec("a13n_harness") is not None:
            from ..a13n.demo import agent

            server = _opened(lambda: AguiServer.for_agent(agent, **options), options)
            return _of_server(server, "the a13n-harness demo agent (harness_agui.a13n.demo)")
        runner, reattach = demo_harness(pace=args.pace)
        what = "the simulated Harness"
        if not args.simulated:
            what += (" (a13n-harness is not installed: pip install 'harness-agui[a13n]' on Python 3.13 for its demo "
                     "agent)")
        server = _opened(lambda: AguiServer(runner, reattach=reattach, **options), options)
        return _of_server(server, what)
    module, target = _load(args.target)
    if isinstance(target, AguiServer):
        _refuse_server_flags(args, "an AguiServer")
        return _of_server(target, f"{args.target} (an AguiServer, with the options it was made with)")
    if _is_asgi_app(target):
        _refuse_server_flags(args, "an ASGI app")
        made = [s for s in _servers_of(module) if s.app is target]
        if made:  # the app of an AguiServer the module made: the same thing
            return _of_server(made[0], f"{args.target} (the app of an AguiServer, with the options it was made with)")
        servers = _servers_of(module)
        database = _database_of(servers[0]) if len(servers) == 1 else None
        return Served(target, f"{args.target} (an ASGI app, with its own routes and options)", None, database)
    if hasattr(target, "definition") and callable(getattr(target, "stream", None)):
        options = _options(args, default_database)
        server = _opened(lambda: AguiServer.for_agent(target, **options), options)
        return _of_server(server, f"{args.target} (an a13n-harness agent)",
                          _not_served(args.target, module, target))
    if callable(getattr(target, "start", None)) or callable(target) and not isinstance(target, type):
        options = _options(args, default_database)
        server = _opened(lambda: AguiServer(target, **options), options)
        return _of_server(server, f"{args.target} (a runner)",
                          _not_served(args.target, module, target))
    raise _LaunchError(f"{args.target} is a {type(target).__name__}: serve takes an a13n-harness agent, a runner (an "
                       "object with start(), or an async callable), an AguiServer or an ASGI app")


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
        raise _LaunchError(f"{args.target} is {kind} with options of its own: {', '.join(given)} would override them; "
                           "set them where it is made, or serve its agent or runner with the flags")


def _of_server(server: Any, what: str, note: str | None = None) -> Served:
    runs_path = next((route.path for route in server.app.routes if "POST" in (route.methods or ())), "/runs")
    return Served(server.app, what, runs_path, _database_of(server), note)


def _database_of(server: Any) -> str | None:
    path = getattr(server.journal, "path", None) or getattr(server.journal, "url", None)
    if path is None:
        return None
    path = os.fspath(path)
    return redacted(path) if is_postgres_url(path) else os.path.abspath(path)


def _servers_of(module: Any) -> list[AguiServer]:
    return [value for value in vars(module).values() if isinstance(value, AguiServer)]


def _not_served(name: str, module: Any, target: Any) -> str | None:
    """A note when ``module`` also made an AguiServer for ``target``, whose options are not served."""
    for attribute, value in vars(module).items():
        if isinstance(value, AguiServer):
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
    if isinstance(target, Starlette):
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
        raise _LaunchError(f"{redacted(os.fspath(options['database']))}: cannot be opened: {e}") from None


def _load(target: str) -> tuple[Any, Any]:
    """The module of ``MODULE:ATTR`` and the object it names (the current directory is searched first, as
    ``python -m`` does)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise _LaunchError(f"{target}: give MODULE:ATTR, such as examples.a13n_agent:agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise _LaunchError(f"{target}: cannot import {module_name}: {e}") from None
    found = module
    for name in attribute.split("."):
        try:
            found = getattr(found, name)
        except AttributeError:
            raise _LaunchError(f"{target}: {module_name} has no {attribute}") from None
    return module, found


def run(app: Any, listening: Any, *, collecting: bool = False, tune: bool = False) -> None:
    """Serve the ASGI ``app`` under uvicorn on the bound socket ``listening`` until the process is told to stop.
    With ``collecting`` (the caller turned Python's cyclic collector off for the imports), the collector is
    turned on again once the server is up (or has failed to start), and with ``tune`` then tuned
    (``tune_collector``)."""

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if collecting and not gc.isenabled():  # up (or failed to start): the collector as it was, tuned
                gc.enable()
                if tune:
                    tune_collector()

    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    Server(config).run(sockets=[listening])
