# Serving AG-UI over HTTP: an ASGI application (Starlette) on the Host kit.
#
# This module is the HTTP shell only: routes, request validation, status
# codes, hooks and the Server-Sent Events response. Everything a Run needs
# is the run supervisor's (``host.supervisor``): starting it (the Thread's
# lock, the runner's ``start``, its binding: ``host.starts``), driving it
# (the Harness stream journaled and projected in batched commits, failures
# ended with one durable RUN_ERROR, start-up recovery, leases and takeover on
# PostgreSQL, cancel) and serving its followers (in-memory fan-out, paged
# replay, late joiners' catch-up). What it refuses is mapped to an answer
# here.
#
#   POST runs_path     a RunAgentInput: a new Run is started and its events
#                      are streamed from the first; a known Run is streamed
#                      again (after the request's Last-Event-ID, if any).
#                      Streamed from the first event, it leaves out what the
#                      request's messages show the client holds (``wire.held``):
#                      its own user messages, and on a retry of the same run id
#                      the part of the answer it got before its connection
#                      dropped, so a stock client never doubles a message.
#   GET events_path    the events of a Run after ``Last-Event-ID`` (header, or
#                      ``?last_event_id=``), then live to its last event; a GET
#                      without one of a long Run driven here starts with the
#                      projection's catch-up.
#   DELETE run_path    cancel a Run (202; 200 when it had ended).
#   GET health_path    200 while the database answers.
#
# Ids. A client names a Run by the request's ``threadId`` and ``runId`` (the
# *wire* ids); the journal, the delivery log and the SSE ids use the
# Harness's own (the *source* ids), which a runner may choose (a13n-harness
# does). Each Run's binding (``host.bindings``) is stored before its first
# item, and every route finds the Run through it; the binding's primary key
# is what reserves a run id, across processes. A Run journaled without a
# binding (by an earlier release, or by another ingest process) is named by
# its source ids. A client's Thread is bound to one Harness Thread when its
# first Run is bound, and every later Run of it is found through that
# binding (``bindings.runs_of``), never through a function of the client's
# id: the Harness Thread of one client can't be named by another. The
# ``authorize`` hook is told it (``RequestContext.source_thread_id``).
# Path parameters are matched on the raw path, so an id holding ``/`` is
# reached by percent-encoding it (``%2F``).
# One Run at a time per Thread: the supervisor holds the Thread's lock (in
# this process, and on PostgreSQL across servers) from ``runner.start``
# until the new Run is registered.
#
# Errors a client can cause are answered before a response starts, as JSON:
# 415 for a POST whose Content-Type is not application/json (so a cross-site
# form or text/plain POST never starts a Run); 413 for a body over
# ``max_body_bytes``; 422 for a body that is not a
# RunAgentInput (a body nested too deep included), or an id that is blank,
# longer than ``MAX_ID_LENGTH`` or not storable (NUL, lone surrogates); 403
# when ``authorize`` refuses; the runner's own refusals (``RunRefused``:
# 409 a busy or diverging Thread, 422 input it cannot run); 400 for a
# Last-Event-ID that is malformed, of another Run, or beyond the Run's last
# id; 404 for a Run the database does not know (or of another Thread); 409
# for a POST naming a known Run under another Thread; 503 for a Run that has
# all the followers it may have here, or a database that cannot be reached.
# Whatever a runner raises (SystemExit included) is contained: ``start``
# answers 500 ``harness_agui.harness_failed``, a stream ends its Run with
# that RUN_ERROR.

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from ..core.reduce import Processor
from ..host.bindings import WireRun
from ..host.delivery import parse_last_event_id
from ..host.errors import FollowerLimitError, StorageError, UnknownEventIdError
from ..host.protocols import DeliveryLog, SourceJournal
from ..host.runner import RequestContext, Runner, RunnerCallable, RunRefused, as_runner
from ..host.stores import open_stores, stores_of
from ..host.supervisor import Reattach, RunSupervisor
from ..wire.agui import sse_retry
from ..wire.held import HeldByClient
from ..wire.notices import CustomFilter
from ._http import CORS_HEADERS, SSE_HEADERS, _Cors, _EncodedRoute, _error, _refuse, _Refused, check_id
from ._options import ServerOptions

if TYPE_CHECKING:
    from ..host.postgres import PostgresLeases

log = logging.getLogger("harness_agui.serve")

Authorize = Callable[[RequestContext], "bool | Awaitable[bool]"]
"""The ``authorize`` hook: called with the ``RequestContext`` of every POST, GET and DELETE of a Run
before anything is started or streamed; the request goes on only when it returns (or its awaitable
gives) True. Anything else is a 403 JSON answer; a ``RunRefused`` it raises is answered as such (a
401, say)."""

_INLINE_BODY_BYTES = 64 * 1024
"""A request body up to this size is parsed on the event loop; a larger one in a worker thread."""

_SERVER_OPTIONS = frozenset((*attrs.fields_dict(ServerOptions), "options", "database", "journal", "deliveries",
                             "processor", "reattach", "authorize"))
"""The keywords of ``AguiServer`` (``for_agent`` passes the others to the agent's stream)."""


class AguiServer:
    """The AG-UI endpoints over a source journal and a delivery log, as a Starlette app (``app``).

    ``runner`` is the Host's Harness: an object with ``start()`` (``host.runner.Runner``; an
    a13n-harness agent's is ``a13n.runner.A13nRunner``, or use ``AguiServer.for_agent``), or a plain
    async callable that yields the items of the Run a request names (``RunnerCallable``). The stores
    are either given (``journal`` and ``deliveries``: the SQLite or the PostgreSQL ones of ONE
    database, since an item and its events are committed together) or opened on ``database``
    (``host.open_stores``): a SQLite file, opened with ``synchronous`` (FULL: a committed item or
    event survives a power cut; NORMAL: it survives a crash of the process), or a ``postgresql://``
    URL (the ``postgres`` extra), so that several server processes on one PostgreSQL database serve
    the same Runs: a Run started through one can be followed through any other, and is taken over by
    another when its server dies (``lease_ttl``: how long a Run's lease lasts unrenewed, so how long
    a hung server keeps its Runs). ``processor`` is the projection's processor; ``show_hidden`` and
    ``max_event_bytes`` are the observer's (what the Harness marks model-only stays off the wire
    unless ``show_hidden``). ``notices`` names the CUSTOM events (the Harness's ``harness.*`` notices)
    the streams carry, an entry ending in ``.`` naming every event it begins (``"harness.input."``);
    None (the default) carries them all, ``()`` none; the delivery log keeps them all either way.
    ``reattach`` (see ``Reattach``; default: the runner's own ``reattach``,
    if it has one) lets start-up recovery and takeover reconnect unfinished Runs to their Harness.
    ``group_commit`` (``host.batch.GroupCommit``) sets how writes are batched into transactions.

    Routes: ``POST runs_path`` (default ``/runs``) takes a ``RunAgentInput`` and answers with the
    Run's events as Server-Sent Events, each with its durable ``id:``; ``GET events_path`` (default
    ``/threads/{thread_id}/runs/{run_id}/events``) replays after the ``Last-Event-ID`` header (or
    ``?last_event_id=``) and follows the Run to its end; ``DELETE run_path`` (default
    ``/threads/{thread_id}/runs/{run_id}``) cancels it; ``GET health_path`` (default ``/health``)
    says whether the database answers. Streams send ``retry:`` (``retry`` seconds) first and a comment
    every ``keepalive`` seconds of silence. A follower here of a Run driven by another process on a
    SQLite file looks for new events every ``poll_interval`` seconds. A GET without ``Last-Event-ID``
    of a Run this process drives that has more than ``catch_up_after`` events (None: never) is served
    the projection's ``catch_up()`` instead of the events so far, then the live events.
    ``max_followers`` is the most followers a Run may have in this process (503 past it).

    The request: ``authorize`` (see ``Authorize``) is asked about every POST, GET and DELETE of a
    Run; the runner is given the same ``RequestContext``. ``cors_origins`` turns CORS on for those
    origins (``["*"]`` for any), with ``cors_headers`` allowed besides Content-Type, Accept,
    Authorization and Last-Event-ID, and credentials when ``cors_credentials``. With
    ``cancel_on_disconnect`` a Run is cancelled when the client that POSTed it goes away before its
    last event (GET followers never cancel). ``max_body_bytes`` caps a POST's body.

    ``inspector=True`` mounts the run inspector (``harness_agui.inspect``, the ``inspect`` extra) under
    ``/inspect``, over read-only stores of the same database: every page is asked of ``authorize``
    (action ``"inspect"``; anything but True is a 403), and a running Run's page follows it through
    ``events_path``.

    ``start()`` (the app's lifespan start-up) resumes every unfinished Run of the database (unless
    ``recover=False``); ``stop()`` (its shutdown) stops the drivers (every commit is whole: the next
    start resumes) and closes the stores it opened. Mounted inside another app, whose lifespan does
    not reach mounted apps, call ``lifespan`` from the outer one.

    Those settings (all but the stores, ``processor``, ``reattach`` and ``authorize``) are the fields of
    ``options`` (a frozen ``ServerOptions``, kept as ``options``), or keywords of the same names, which
    are laid over ``options`` when both are given.

    Raises TypeError for a runner that is neither or an unknown keyword, ValueError for missing or
    conflicting store arguments, stores of two databases, and bad numbers or paths, and what the stores
    raise when ``database`` cannot be opened.
    """

    def __init__(self, runner: Runner | RunnerCallable, *, database: str | os.PathLike[str] | None = None,
                 journal: SourceJournal | None = None, deliveries: DeliveryLog | None = None,
                 processor: Processor | None = None, reattach: Reattach | None = None,
                 authorize: Authorize | None = None, options: ServerOptions | None = None,
                 **settings: Any) -> None:
        self._runner = as_runner(runner)
        options = ServerOptions() if options is None else options
        if settings:  # the keyword form: the options' fields, over ``options`` when both are given
            options = attrs.evolve(options, **settings)
        self.options = options
        if authorize is not None and not callable(authorize):
            raise TypeError(f"authorize must be callable, not {type(authorize).__name__}")
        self._notices = None if options.notices is None else CustomFilter(options.notices)
        leases: PostgresLeases | None = None
        if database is not None:
            if journal is not None or deliveries is not None:
                raise ValueError("give either database or journal and deliveries, not both")
            journal, deliveries = open_stores(database, synchronous=options.synchronous,
                                              poll_interval=options.poll_interval)
            self._owned = True
        elif journal is None or deliveries is None:
            raise ValueError("a database path, or both a journal and a delivery log, are needed")
        else:
            self._owned = False
        try:
            self.stores = stores_of(journal, deliveries)
            leases = self.stores.leases(options.lease_ttl)
            self.supervisor = RunSupervisor(self.stores, runner=self._runner, processor=processor, reattach=reattach,
                                            leases=leases, options=options.supervisor)
        except BaseException:
            if self._owned:
                journal.close()
                deliveries.close()
            if leases is not None:
                leases.close()
            raise
        self.journal = journal
        self.deliveries = deliveries
        self._leases = leases
        self._authorize = authorize
        self._retry = sse_retry(options.retry).encode()
        middleware = []
        if options.cors_origins is not None:
            middleware.append(Middleware(
                _Cors, allow_origins=list(options.cors_origins), allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                allow_headers=sorted({*CORS_HEADERS, *(h.lower() for h in options.cors_headers)}),
                allow_credentials=options.cors_credentials, expose_headers=[]))
        routes: list[Any] = [Route(options.runs_path, self._post_run, methods=["POST"]),
                             _EncodedRoute(options.events_path, self._get_events, methods=["GET"]),
                             _EncodedRoute(options.run_path, self._delete_run, methods=["DELETE"]),
                             Route(options.health_path, self._health, methods=["GET"])]
        self._close_inspector: Callable[[], None] | None = None
        if options.inspector:  # the run inspector's pages, over read-only stores of the same database
            from ..inspect import open_inspector

            target = database if database is not None else getattr(journal, "url", journal.path)
            view, self._close_inspector = open_inspector(
                target, authorize=self._may_inspect,
                follow_url=self._follow_url, database=None)
            routes.append(Mount("/inspect", app=view.app))
        self.app = Starlette(routes=routes, middleware=middleware, lifespan=self._lifespan)

    @classmethod
    def for_agent(cls, agent: Any, *, configure: Any = None, history_tools: str = "any",
                  **options: Any) -> AguiServer:
        """The server of an a13n-harness ``ExecutableAgent`` (the ``a13n`` extra, Python 3.13):
        ``AguiServer(A13nRunner(agent, configure=configure, history_tools=history_tools, **stream_options),
        **server_options)``, where the server's options are the keywords this class takes (``database=``,
        ``authorize=``, ``options=``, ...) and every other keyword is an ``agent.stream()`` option. Raises as both
        constructors do."""
        from ..a13n.runner import A13nRunner

        server_options = {k: v for k, v in options.items() if k in _SERVER_OPTIONS}
        stream_options = {k: v for k, v in options.items() if k not in _SERVER_OPTIONS}
        return cls(A13nRunner(agent, configure=configure, history_tools=history_tools,  # type: ignore[arg-type]
                              **stream_options), **server_options)

    @property
    def runner(self) -> Runner:
        """The runner (a plain callable is wrapped in a ``CallableRunner``)."""
        return self._runner

    # -- lifecycle ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
        """``start()`` on entry, ``stop()`` on exit: for an outer app's lifespan."""
        return self._lifespan(None)

    async def start(self) -> tuple[str, ...]:
        """Resume every unfinished Run of the database as a background task (unless ``recover=False``).
        Returns their (source) run ids. Raises what the stores raise for a damaged file.

        On PostgreSQL, a ``host.postgres.Worker`` does it instead, and goes on doing it: it takes every
        Run whose lease is free (its server died, or hung past ``lease_ttl``), re-attaches its Harness
        (``reattach``) and drives it; nothing is returned, as that happens in the background."""
        return await self.supervisor.start(recover=self.options.recover)

    async def stop(self) -> None:
        """Stop the drivers (the stores stay whole) and close the stores opened here."""
        await self.supervisor.stop()
        self.stores.close()
        if self._close_inspector is not None:
            self._close_inspector()
        if self._owned:
            self.journal.close()
            self.deliveries.close()
        if self._leases is not None:
            self._leases.close()

    async def wait(self, run_id: str) -> None:
        """Wait until this process's driver of the Run (its source run id) has ended (at once if none)."""
        await self.supervisor.wait(run_id)

    async def resolve(self, thread_id: str, run_id: str) -> WireRun | None:
        """The binding of the Run its clients name ``thread_id`` / ``run_id`` (the wire ids), None when
        the database knows no such Run of that Thread. A Run journaled without a binding is its own."""
        return await self.supervisor.resolve(thread_id, run_id)

    async def cancel(self, thread_id: str, run_id: str) -> bool:
        """Cancel the Run its clients name ``thread_id`` / ``run_id``: its Harness is asked to stop and the
        Run ends through its own stream (a13n-harness: RUN_FINISHED with the cancelled outcome; a plain
        runner's: RUN_ERROR ``harness_agui.cancelled``), journaled like any. True when a cancel was asked;
        False when the Run had ended, or is driven by another server. KeyError for a Run the database
        does not know (or of another Thread)."""
        wire = await self.resolve(thread_id, run_id)
        if wire is None:
            raise KeyError(f"thread {thread_id!r} has no run {run_id!r}")
        return self.supervisor.cancel(wire.source_run_id)

    # -- HTTP -------------------------------------------------------------------------------

    async def _post_run(self, request: Request) -> Response:
        return await self._answer(self._start_run(request))

    async def _get_events(self, request: Request) -> Response:
        return await self._answer(self._follow_run(request))

    async def _delete_run(self, request: Request) -> Response:
        return await self._answer(self._cancel_run(request))

    async def _answer(self, handling: Awaitable[Response]) -> Response:
        try:
            response: Response = await handling
            return response
        except _Refused as e:
            return e.response
        except RunRefused as e:
            return JSONResponse(e.body(), status_code=e.status)
        except StorageError as e:
            return _error(500, "storage_error", str(e))
        except Exception as e:
            if self.stores.lost(e):
                return _error(503, "database_unavailable", f"the database cannot be reached: {type(e).__name__}")
            raise

    async def _health(self, request: Request) -> Response:
        try:
            await asyncio.to_thread(self.stores.bindings.source_of, "")
        except Exception as e:
            return _error(503, "database_unavailable", f"the database does not answer: {type(e).__name__}: {e}")
        return JSONResponse({"status": "ok", "runs": len(self.supervisor.driven)})

    async def _read_body(self, request: Request) -> Any:
        declared, limit = request.headers.get("content-length"), self.options.max_body_bytes
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _refuse(413, "body_too_large", f"the body is {declared} bytes; at most {limit} are taken")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _refuse(413, "body_too_large", f"the body is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    @staticmethod
    def _run_input(raw: bytes) -> RunAgentInput:
        # The request's RunAgentInput, parsed and validated (in a worker thread for a large body).
        try:
            body = json.loads(raw)
        except RecursionError:
            raise _refuse(422, "invalid_request", "the body is nested too deep") from None
        except ValueError as e:
            raise _refuse(422, "invalid_request", f"the body is not JSON: {e}") from None
        try:
            return RunAgentInput.model_validate(body)
        except RecursionError:
            raise _refuse(422, "invalid_request", "the body is nested too deep") from None
        except ValidationError as e:
            raise _refuse(422, "invalid_request", "the body is not an AG-UI RunAgentInput",
                          detail=json.loads(e.json(include_url=False, include_input=False))) from None

    async def _start_run(self, request: Request) -> Response:
        # JSON only: a cross-site page can POST a "simple" request (text/plain, form data) with the user's
        # cookies and no preflight, but not one of this type without the CORS preflight's consent.
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise _refuse(415, "unsupported_media_type", "a Run is started by a POST of application/json "
                                                         f"(Content-Type: {media or 'none'})")
        raw = await self._read_body(request)
        # A long Thread's request holds its whole conversation (AG-UI clients send every message each
        # turn): parsed and validated in a worker thread, so the event loop that serves every other
        # request is not held; a small one here, without the hop.
        run_input = (self._run_input(raw) if len(raw) <= _INLINE_BODY_BYTES
                     else await asyncio.to_thread(self._run_input, raw))
        thread_id, run_id = run_input.thread_id, run_input.run_id
        check_id("threadId", thread_id)
        check_id("runId", run_id)
        # The Thread's bindings are read (with the run id's, in one hop) for the authorize hook, before
        # the supervisor finds the Run or starts it.
        asked = await self.supervisor.ask(thread_id, run_id)
        context = self._context(request, "run", thread_id, run_id, run_input, thread_runs=asked.thread_runs)
        await self._authorized(context)
        known = await self.supervisor.open_run(run_input, context, asked=asked)
        after = await self._after(request, known, query=False)
        # From the first event, the stream leaves out what the request shows its client holds: the user
        # messages it sent, and what it got of this Run before a retried POST of the same run id.
        held = HeldByClient(run_input.messages) if after == 0 else None
        return self._stream(known.source_run_id, after, cancel=self.options.cancel_on_disconnect, held=held)

    async def _run_of_path(self, request: Request, action: str) -> WireRun:
        # The Run a /threads/{thread_id}/runs/{run_id} route names, once the request may ``action`` it.
        thread_id, run_id = request.path_params["thread_id"], request.path_params["run_id"]
        check_id("thread id", thread_id)
        check_id("run id", run_id)
        wire = await self.resolve(thread_id, run_id)
        await self._authorized(self._context(request, action, thread_id, run_id,
                                             source_thread_id=None if wire is None else wire.source_thread_id))
        if wire is None:
            raise _refuse(404, "unknown_run", f"thread {thread_id!r} has no run {run_id!r}")
        return wire

    async def _follow_run(self, request: Request) -> Response:
        wire = await self._run_of_path(request, "follow")
        after = await self._after(request, wire, query=True)
        return self._stream(wire.source_run_id, after, late_joiner=after == 0)

    async def _cancel_run(self, request: Request) -> Response:
        wire = await self._run_of_path(request, "cancel")
        if self.supervisor.cancel(wire.source_run_id):
            return JSONResponse({"cancelled": True}, status_code=202)
        if await asyncio.to_thread(self.deliveries.finished, wire.source_run_id):
            return JSONResponse({"cancelled": False}, status_code=200)
        raise _refuse(409, "run_elsewhere", f"run {wire.wire_run_id!r} is driven by another server: cancel it there")

    async def _may_inspect(self, request: Request) -> bool:
        # The inspector asks the ``authorize`` hook about every page (action "inspect", the run it names).
        try:
            await self._authorized(self._context(request, "inspect", "", request.query_params.get("id", "")))
        except (_Refused, RunRefused):
            return False
        return True

    def _follow_url(self, request: Request, row: Any) -> str:
        # A running Run's inspector page follows it through this server's own events route.
        root = request.scope.get("root_path", "").rstrip("/").removesuffix("/inspect")
        thread, run = row.wire_thread_id or row.thread_id, row.wire_run_id or row.run_id
        return root + self.options.events_path.format(thread_id=urllib.parse.quote(thread, safe=""),
                                               run_id=urllib.parse.quote(run, safe=""))

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _context(request: Request, action: Any, thread_id: str, run_id: str,
                 run_input: RunAgentInput | None = None, *, source_thread_id: str | None = None,
                 thread_runs: tuple[WireRun, ...] | None = None) -> RequestContext:
        # ``thread_runs`` (a POST's): the Thread's bindings, whose first names its Harness Thread.
        headers: dict[str, str] = {}
        for name, value in request.headers.items():
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        client = None if request.client is None else (request.client.host, request.client.port)
        if thread_runs:
            source_thread_id = thread_runs[0].source_thread_id
        return RequestContext(action=action, method=request.method, path=request.url.path, headers=headers,
                              client=client, thread_id=thread_id, run_id=run_id, run_input=run_input,
                              request=request, source_thread_id=source_thread_id, thread_runs=thread_runs)

    async def _authorized(self, context: RequestContext) -> None:
        if self._authorize is None:
            return
        try:
            verdict = self._authorize(context)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except (RunRefused, asyncio.CancelledError):
            raise
        except BaseException as e:  # noqa: B036 - a hook never takes the server down
            log.exception("the authorize hook failed")
            raise _refuse(500, "authorize_failed", f"the authorize hook failed: {type(e).__name__}") from None
        if verdict is not True:
            raise _refuse(403, "forbidden", f"not allowed to {context.action} run {context.run_id!r}")

    async def _after(self, request: Request, wire: WireRun, *, query: bool) -> int:
        value = request.headers.get("last-event-id")
        if value is None and query:
            value = request.query_params.get("last_event_id")
        try:
            after = parse_last_event_id(value, run_id=wire.source_run_id)
        except UnknownEventIdError as e:
            raise _refuse(400, "bad_last_event_id", str(e)) from None
        if after:
            last = await self.supervisor.last_event_id(wire.source_run_id)
            if after > last:
                raise _refuse(400, "bad_last_event_id", f"run {wire.wire_run_id!r}: event id {value} was never "
                                                        f"assigned (the last is {last})")
        return after

    def _stream(self, run_id: str, after: int, *, late_joiner: bool = False, cancel: bool = False,
                held: HeldByClient | None = None) -> Response:
        try:
            frames = self.supervisor.follow(run_id, after=after, late_joiner=late_joiner)
        except FollowerLimitError as e:
            return _error(503, "too_many_followers", str(e))
        on_disconnect = (lambda: self.supervisor.cancel(run_id)) if cancel else None
        return StreamingResponse(self._frames(frames, on_disconnect, held), media_type="text/event-stream",
                                 headers=SSE_HEADERS)

    async def _frames(self, frames: AsyncIterator[bytes], on_disconnect: Callable[[], object] | None,
                      held: HeldByClient | None = None) -> AsyncIterator[bytes]:
        ended = False
        notices = self._notices
        try:
            yield self._retry
            async for chunk in frames:
                if notices is not None:
                    chunk = notices(chunk)
                if held is not None and held.active:
                    chunk = held(chunk)
                if not chunk:
                    continue
                yield chunk
            ended = True
        finally:
            if not ended and on_disconnect is not None:
                on_disconnect()


def create_app(runner: Runner | RunnerCallable, **options: Any) -> Starlette:
    """A Starlette app serving AG-UI for ``runner``'s Runs: ``AguiServer(runner, **options).app``, with the
    server as ``app.state.agui``. Takes the options of ``AguiServer``; raises as it does."""
    server = AguiServer(runner, **options)
    server.app.state.agui = server
    return server.app
