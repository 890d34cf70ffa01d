# Serving AG-UI over HTTP: an ASGI application (Starlette) on the Host kit.
#
# This module is the HTTP shell only: routes, request validation, status
# codes, and the Server-Sent Events response. Driving the Runs (the Harness
# stream journaled and projected in batched commits, failures ended with one
# durable RUN_ERROR, start-up recovery, leases and takeover on PostgreSQL)
# and serving their followers (in-memory fan-out, paged replay, late
# joiners' catch-up) is the run supervisor's job: ``host.supervisor``.
#
#   POST runs_path     a RunAgentInput: a new Run is started (its runner's
#                      stream handed to the supervisor) and its events are
#                      streamed from the first; a known Run is streamed again
#                      (after the request's Last-Event-ID, if any).
#   GET events_path    the events of a Run after ``Last-Event-ID`` (header, or
#                      ``?last_event_id=``), then live to its last event; a GET
#                      without one of a long Run driven here starts with the
#                      projection's catch-up.
#
# A client that goes away cancels nothing but its own stream, and any number
# of clients may follow one Run (up to ``max_followers`` per Run and process).
# Errors a client can cause are answered before a response starts, as JSON:
# 422 for a body that is not a RunAgentInput, 400 for a Last-Event-ID that is
# malformed, of another Run, or beyond the Run's last id, 404 for a Run this
# database does not know (or that belongs to another Thread), 409 for a POST
# that names a known Run under another Thread, 503 for a Run that has all the
# followers it may have here, or a database that cannot be reached.

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

try:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("harness_agui.serve needs Starlette: pip install 'harness-agui[serve]'") from e

from ag_ui.core import RunAgentInput
from pydantic import ValidationError

from .core.reduce import Processor
from .core.source import HarnessStreamEvent
from .host.batch import GroupCommit
from .host.checks import Cursor
from .host.delivery import parse_last_event_id
from .host.errors import FollowerLimitError, StorageError, UnknownEventIdError
from .host.protocols import DeliveryLog, SourceJournal
from .host.stores import is_postgres_url, open_stores, stores_of
from .host.supervisor import FAILURE_CODES, Reattach, RunSupervisor
from .wire.agui import sse_retry

if TYPE_CHECKING:
    from .host.postgres import PostgresLeases

__all__ = [
    "AguiServer",
    "create_app",
    "Runner",
    "Reattach",
    "FAILURE_CODES",
    "GroupCommit",
    "demo_harness",
]

log = logging.getLogger("harness_agui.serve")

Runner = Callable[[RunAgentInput], AsyncIterable[HarnessStreamEvent]]
"""The Host's Harness: given the request, the source items of the Run it
names (its ``thread_id`` and ``run_id``; child Runs' items may be
interleaved), in order, ending with the terminal result."""

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _error(status: int, error: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, **extra}, status_code=status)


class _Refused(Exception):
    def __init__(self, response: JSONResponse) -> None:
        self.response = response


class AguiServer:
    """The AG-UI endpoints over a source journal and a delivery log, as a Starlette app (``app``).

    ``runner`` is the Host's Harness (see ``Runner``). The stores are either
    given (``journal`` and ``deliveries``: the SQLite or the PostgreSQL
    ones of ONE database, since an item and its events are committed
    together) or opened on ``database`` (``host.open_stores``): a SQLite
    file, opened with ``synchronous`` (FULL: a committed item or event
    survives a power cut; NORMAL: it survives a crash of the process), or a
    ``postgresql://`` URL (the ``postgres`` extra), so that several server
    processes on one PostgreSQL database serve the same Runs: a Run started
    through one can be followed through any other, and is taken over by
    another when its server dies (``lease_ttl``: how long a Run's lease
    lasts unrenewed, so how long a hung server keeps its Runs).
    ``processor`` is the projection's processor. ``reattach`` (see
    ``Reattach``) lets start-up recovery and takeover reconnect unfinished
    Runs to their Harness; without it a recovered Run is projected from what
    the journal holds and what anyone else appends to it. ``group_commit``
    (``host.batch.GroupCommit``) sets how writes are batched into
    transactions.

    Routes: ``POST runs_path`` (default ``/runs``) takes a ``RunAgentInput``
    and answers with the Run's events as Server-Sent Events, each with its
    durable ``id:``; ``GET events_path`` (default
    ``/threads/{thread_id}/runs/{run_id}/events``) replays after the
    ``Last-Event-ID`` header (or ``?last_event_id=``) and follows the Run to
    its end. Both send ``retry:`` (``retry`` seconds) first and a comment
    every ``keepalive`` seconds of silence. A follower here of a Run driven
    by another process on a SQLite file looks for new events every
    ``poll_interval`` seconds. A GET without ``Last-Event-ID`` of a Run this
    process drives that has more than ``catch_up_after`` events (None:
    never) is served the projection's ``catch_up()`` instead of the events
    so far, then the live events. ``max_followers`` is the most followers a
    Run may have in this process (503 past it).

    ``start()`` (the app's lifespan start-up) resumes every unfinished Run of
    the database (unless ``recover=False``); ``stop()`` (its shutdown) stops
    the drivers (every commit is whole: the next start resumes) and closes
    the stores it opened. Mounted inside another app, whose lifespan does not
    reach mounted apps, call ``lifespan`` from the outer one.

    Raises ValueError for missing or conflicting store arguments, stores of
    two databases, and bad numbers, and what the stores raise when
    ``database`` cannot be opened.
    """

    def __init__(self, runner: Runner, *, database: str | os.PathLike[str] | None = None,
                 journal: SourceJournal | None = None, deliveries: DeliveryLog | None = None,
                 synchronous: str = "FULL", processor: Processor | None = None, reattach: Reattach | None = None,
                 runs_path: str = "/runs", events_path: str = "/threads/{thread_id}/runs/{run_id}/events",
                 keepalive: float = 15.0, retry: float = 3.0, poll_interval: float = 0.05,
                 recover: bool = True, catch_up_after: int | None = 1000, lease_ttl: float = 10.0,
                 group_commit: GroupCommit | None = None, max_followers: int = 1000) -> None:
        if not callable(runner):
            raise TypeError(f"runner must be an async callable, not {type(runner).__name__}")
        for name, value in (("keepalive", keepalive), ("retry", retry), ("poll_interval", poll_interval)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
        if "{thread_id}" not in events_path or "{run_id}" not in events_path:
            raise ValueError(f"events_path must hold {{thread_id}} and {{run_id}}: {events_path!r}")
        leases: PostgresLeases | None = None
        if database is not None:
            if journal is not None or deliveries is not None:
                raise ValueError("give either database or journal and deliveries, not both")
            journal, deliveries = open_stores(database, synchronous=synchronous, poll_interval=poll_interval)
            self._owned = True
        elif journal is None or deliveries is None:
            raise ValueError("a database path, or both a journal and a delivery log, are needed")
        else:
            self._owned = False
        try:
            self.stores = stores_of(journal, deliveries)
            if database is not None and is_postgres_url(database):
                from .host.postgres import PostgresLeases as Leases

                leases = Leases(os.fspath(database), ttl=lease_ttl)
            self.supervisor = RunSupervisor(
                self.stores, processor=processor, reattach=reattach, group_commit=group_commit, leases=leases,
                scan_interval=max(poll_interval, 0.2), poll_interval=poll_interval, catch_up_after=catch_up_after,
                max_followers=max_followers, keepalive=keepalive)
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
        self._runner = runner
        self._recover = recover
        self._retry = sse_retry(retry).encode()
        self.app = Starlette(routes=[Route(runs_path, self._post_run, methods=["POST"]),
                                     Route(events_path, self._get_events, methods=["GET"])],
                             lifespan=self._lifespan)

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
        Returns their run ids. Raises what the stores raise for a damaged file.

        On PostgreSQL, a ``host.postgres.Worker`` does it instead, and goes on doing it: it takes every
        Run whose lease is free (its server died, or hung past ``lease_ttl``), re-attaches its Harness
        (``reattach``) and drives it; nothing is returned, as that happens in the background."""
        return await self.supervisor.start(recover=self._recover)

    async def stop(self) -> None:
        """Stop the drivers (the stores stay whole) and close the stores opened here."""
        await self.supervisor.stop()
        if self._owned:
            self.journal.close()
            self.deliveries.close()
        if self._leases is not None:
            self._leases.close()

    async def wait(self, run_id: str) -> None:
        """Wait until this process's driver of the Run has ended (at once if there is none)."""
        await self.supervisor.wait(run_id)

    # -- HTTP -------------------------------------------------------------------------------

    async def _post_run(self, request: Request) -> Response:
        return await self._answer(self._start_run(request))

    async def _get_events(self, request: Request) -> Response:
        return await self._answer(self._follow_run(request))

    async def _answer(self, handling: Awaitable[Response]) -> Response:
        try:
            response: Response = await handling
            return response
        except _Refused as e:
            return e.response
        except StorageError as e:
            return _error(500, "storage_error", str(e))
        except Exception as e:
            if self.stores.lost(e):
                return _error(503, "database_unavailable", f"the database cannot be reached: {type(e).__name__}")
            raise

    async def _start_run(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError as e:
            return _error(422, "invalid_request", f"the body is not JSON: {e}")
        try:
            run_input = RunAgentInput.model_validate(body)
        except ValidationError as e:
            return _error(422, "invalid_request", "the body is not an AG-UI RunAgentInput",
                          detail=json.loads(e.json(include_url=False, include_input=False)))
        run_id, thread_id = run_input.run_id, run_input.thread_id
        if not run_id.strip() or not thread_id.strip():
            return _error(422, "invalid_request", "threadId and runId must not be blank")
        after = self._last_event_id(request, run_id, query=False)
        known = await self.supervisor.thread_of(run_id)
        if known is not None and known != thread_id:
            return _error(409, "run_conflict", f"run {run_id!r} belongs to another thread")
        await self._check_known_id(run_id, after, request)
        if known is None:
            runner = self._runner
            started = self.supervisor.start_run(thread_id, run_id, lambda: runner(run_input))
            if started != thread_id:
                return _error(409, "run_conflict", f"run {run_id!r} belongs to another thread")
        return self._stream(run_id, after)

    async def _follow_run(self, request: Request) -> Response:
        thread_id, run_id = request.path_params["thread_id"], request.path_params["run_id"]
        after = self._last_event_id(request, run_id, query=True)
        if await self.supervisor.thread_of(run_id) != thread_id:
            return _error(404, "unknown_run", f"thread {thread_id!r} has no run {run_id!r}")
        await self._check_known_id(run_id, after, request)
        return self._stream(run_id, after, late_joiner=after == 0)

    @staticmethod
    def _last_event_id(request: Request, run_id: str, *, query: bool) -> int:
        value = request.headers.get("last-event-id")
        if value is None and query:
            value = request.query_params.get("last_event_id")
        try:
            return parse_last_event_id(value, run_id=run_id)
        except UnknownEventIdError as e:
            raise _Refused(_error(400, "bad_last_event_id", str(e))) from None

    async def _check_known_id(self, run_id: str, after: int, request: Request) -> None:
        if after == 0:
            return
        last = await self.supervisor.last_event_id(run_id)
        if after > last:
            raise _Refused(_error(400, "bad_last_event_id",
                                  f"run {run_id!r}: event id {request.headers.get('last-event-id') or after} "
                                  f"was never assigned (the last is {last})"))

    def _stream(self, run_id: str, after: int, *, late_joiner: bool = False) -> Response:
        try:
            frames = self.supervisor.follow(run_id, after=after, late_joiner=late_joiner)
        except FollowerLimitError as e:
            return _error(503, "too_many_followers", str(e))
        return StreamingResponse(self._frames(frames), media_type="text/event-stream", headers=SSE_HEADERS)

    async def _frames(self, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        yield self._retry
        async for chunk in frames:
            yield chunk


def create_app(runner: Runner, **options: Any) -> Starlette:
    """A Starlette app serving AG-UI for ``runner``'s Runs: ``AguiServer(runner, **options).app``.

    Takes the options of ``AguiServer`` (``database=`` or ``journal=`` and
    ``deliveries=``, ``synchronous``, ``processor``, ``reattach``, the paths,
    ``keepalive``, ``retry``, ``poll_interval``, ``group_commit``,
    ``max_followers``); the server is ``app.state.agui``. Raises as
    ``AguiServer`` does."""
    server = AguiServer(runner, **options)
    server.app.state.agui = server
    return server.app


# -- the built-in simulated Harness (``harness-agui serve --demo``) ------------------------

def demo_harness(*, pace: float = 0.03) -> tuple[Runner, Reattach]:
    """A simulated Harness for demonstrations: the Run of ``testing.simulated_run`` under the
    request's thread and run ids, one item every ``pace`` seconds (about a model's token rate), and
    the matching ``Reattach`` that continues it after a restart. It answers every request the same way."""
    from .testing.builder import simulated_run

    async def items(thread_id: str, run_id: str, after: Cursor) -> AsyncIterator[HarnessStreamEvent]:
        start = 0 if after is None else after + 1
        for item in simulated_run(thread_id, run_id)[start:]:
            await asyncio.sleep(pace)
            yield item

    def runner(run_input: RunAgentInput) -> AsyncIterable[HarnessStreamEvent]:
        return items(run_input.thread_id, run_input.run_id, None)

    def reattach(thread_id: str, run_id: str, after: Cursor) -> AsyncIterable[HarnessStreamEvent]:
        return items(thread_id, run_id, after)

    return runner, reattach
