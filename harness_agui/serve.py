# Serving AG-UI over HTTP: an ASGI application (Starlette) on the Host kit.
#
# Theory of operation. Each Run the server knows is driven by one background
# task, independent of any HTTP request:
#
#   ingest     the Harness stream (the runner's items for a POST, the
#              ``reattach`` stream after a restart) is appended to the source
#              journal, item by item, each commit before anything is
#              projected from it;
#   project    ``project_run`` tails the journal and records every item's
#              events with durable ids in the delivery log (resuming from the
#              delivery cursor after a restart: the crash-safe protocol of
#              ``host.delivery``).
#
# HTTP clients only ever read the delivery log: a POST streams the new Run's
# events from the first, a GET replays after its ``Last-Event-ID`` and then
# follows. So a client that goes away cancels nothing but its own stream,
# and any number of clients may follow one Run. Followers are woken by the
# projector of this process after each commit, and poll the log as well (a
# Run may be projected by another process sharing the database).
#
# A Run must end for its followers even when it cannot end normally: when the
# projection refuses an item (or the processor raises), when the Harness
# stream raises, ends without its result, or yields an item the journal
# refuses, one RUN_ERROR is recorded as the Run's last event
# (``SqliteDeliveryLog.fail``), with a code saying which (``FAILURE_CODES``).
# Every follower receives it and its stream closes; the journal keeps every
# item it accepted. Items journaled before the Harness failed are projected
# first, so the RUN_ERROR comes after their events.
#
# Errors a client can cause are answered before a response starts, as JSON:
# 422 for a body that is not a RunAgentInput, 400 for a Last-Event-ID that is
# malformed, of another Run, or beyond the Run's last id, 404 for a Run this
# database does not know (or that belongs to another Thread), 409 for a POST
# that names a known Run under another Thread.
#
# Late joiners. A GET without ``Last-Event-ID`` of a Run this process is
# projecting, once the Run has more than ``catch_up_after`` events, is not
# served every delta from the first: it gets the projection's ``catch_up()``
# (RUN_STARTED, one MESSAGES_SNAPSHOT, the open parts so far), the last frame
# carrying the id of the last event it covers, then the live events after
# it. The catch-up is taken from the observer and checked against the log
# in one step (the observer's event count must equal the log's last id, or
# it is taken again), so nothing is covered twice or skipped; a reconnect
# with the catch-up's id continues after it. Runs projected elsewhere, and
# ended Runs, are replayed from the log.
#
# Many servers, one PostgreSQL database. Each Run is driven (ingest and
# projection) under a lease (``host.postgres``): a POSTed Run by the server
# that got the POST, through the delivery log fenced by its lease. Each
# server runs a ``Worker`` that takes the Runs whose lease is free (their
# server died, or hung past ``lease_ttl``), re-attaches their Harness and
# projects the rest; any server follows any Run from the shared log.
#
# Every storage call runs in a worker thread (``asyncio.to_thread``, here and
# in ``project_run``), so an fsync never stalls the event loop.

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

try:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("harness_agui.serve needs Starlette: pip install 'harness-agui[serve]'") from e

from ag_ui.core import RunAgentInput, RunErrorEvent
from pydantic import ValidationError

from .core.errors import AfterTerminalError, HarnessAguiError
from .core.observer import HarnessAguiObserver
from .core.reduce import Processor
from .core.source import HarnessRunResultEvent, HarnessStreamEvent
from .host.checks import Cursor
from .host.delivery import Delivery, parse_last_event_id, sse_id
from .host.errors import (
    DamagedStoreError,
    ProjectorConflictError,
    StorageError,
    UnknownEventIdError,
)
from .host.projector import project_run
from .host.stores import is_postgres_url, open_stores
from .wire.agui import agui_to_json

__all__ = [
    "AguiServer",
    "create_app",
    "Runner",
    "Reattach",
    "FAILURE_CODES",
    "demo_harness",
]

log = logging.getLogger("harness_agui.serve")

Runner = Callable[[RunAgentInput], AsyncIterable[HarnessStreamEvent]]
"""The Host's Harness: given the request, the source items of the Run it
names (its ``thread_id`` and ``run_id``; child Runs' items may be
interleaved), in order, ending with the terminal result."""

Reattach = Callable[[str, str, Cursor], AsyncIterable[HarnessStreamEvent]]
"""After a restart, called with ``(thread_id, run_id, after)``: the Harness
stream of the unfinished Run from after ``after``, the journal's cursor (the
position of the last item journaled, None for none). Items resent from
earlier are harmless (a second delivery of a stored item is a no-op)."""

FAILURE_CODES = {
    "harness_agui.projection_failed": "the projection refused a source item (or the processor raised)",
    "harness_agui.source_refused": "the journal refused an item of the Harness stream (out of order, foreign)",
    "harness_agui.harness_failed": "the Harness stream raised",
    "harness_agui.harness_ended": "the Harness stream ended without the Run's terminal result",
    "harness_agui.storage_failed": "the journal could not store an item (a storage error)",
}
"""The ``code`` of the RUN_ERROR that ends a Run that could not end normally."""

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class _Signal:
    """Wakes the followers of one Run after each commit of its projector."""

    def __init__(self) -> None:
        self.generation = 0
        self._event = asyncio.Event()

    def notify(self) -> None:
        self.generation += 1
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, seen: int, timeout: float) -> None:
        if self.generation != seen or timeout <= 0:
            return
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation that
        # arrives just as the awaited event fires, and a follower would then not stop.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._event.wait()


class _Run:
    """A Run driven by this process: its Thread, its task, its followers' signal, the log it records
    through (the delivery log, or on PostgreSQL the log fenced by this process's lease on the Run)."""

    def __init__(self, run_id: str, thread_id: str, deliveries: Any) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.deliveries = deliveries
        self.signal = _Signal()
        self.task: asyncio.Task[None] | None = None
        self.observer: HarnessAguiObserver | None = None  # the projector's, once it runs


def _error(status: int, error: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, **extra}, status_code=status)


class _Refused(Exception):
    def __init__(self, response: JSONResponse) -> None:
        self.response = response


class AguiServer:
    """The AG-UI endpoints over a source journal and a delivery log, as a Starlette app (``app``).

    ``runner`` is the Host's Harness (see ``Runner``). The stores are either
    given (``journal`` and ``deliveries``: the SQLite or the PostgreSQL
    ones, sharing one database) or opened on ``database``
    (``host.open_stores``): a SQLite file, opened with ``synchronous``
    (FULL: a committed item or event survives a power cut; NORMAL: it
    survives a crash of the process, and costs much less per item), or a
    ``postgresql://`` URL (the ``postgres`` extra), so that several server
    processes on one PostgreSQL database serve the same Runs: a Run started
    through one can be followed through any other, and is taken over by
    another when its server dies (``lease_ttl``: how long a Run's lease
    lasts unrenewed, so how long a hung server keeps its Runs). ``processor`` is
    passed to ``project_run``. ``reattach`` (see ``Reattach``) lets start-up
    recovery reconnect unfinished Runs to their Harness; without it a
    recovered Run is projected from what the journal holds and what anyone
    else appends to it.

    Routes: ``POST runs_path`` (default ``/runs``) takes a ``RunAgentInput``
    and answers with the Run's events as Server-Sent Events, each with its
    durable ``id:``; ``GET events_path`` (default
    ``/threads/{thread_id}/runs/{run_id}/events``) replays after the
    ``Last-Event-ID`` header (or ``?last_event_id=``) and follows the Run to
    its end. Both send ``retry:`` (``retry`` seconds) first and a comment
    every ``keepalive`` seconds of silence; followers poll the log every
    ``poll_interval`` seconds when not woken. A GET without ``Last-Event-ID``
    of a Run this process projects that has more than ``catch_up_after``
    events (None: never) is served the projection's ``catch_up()`` instead
    of the events so far, then the live events.

    ``start()`` (the app's lifespan start-up) resumes every unfinished Run of
    the database as a background task; ``stop()`` (its shutdown) cancels the
    background tasks (every commit is whole: the next start resumes) and
    closes the stores it opened. Mounted inside another app, whose lifespan
    does not reach mounted apps, call ``lifespan`` from the outer one.

    Raises ValueError for missing or conflicting store arguments and bad
    numbers, and what the stores raise when ``database`` cannot be opened.
    """

    def __init__(self, runner: Runner, *, database: str | os.PathLike[str] | None = None,
                 journal: Any = None, deliveries: Any = None,
                 synchronous: str = "FULL", processor: Processor | None = None, reattach: Reattach | None = None,
                 runs_path: str = "/runs", events_path: str = "/threads/{thread_id}/runs/{run_id}/events",
                 keepalive: float = 15.0, retry: float = 3.0, poll_interval: float = 0.05,
                 recover: bool = True, catch_up_after: int | None = 1000, lease_ttl: float = 10.0) -> None:
        if not callable(runner):
            raise TypeError(f"runner must be an async callable, not {type(runner).__name__}")
        for name, value in (("keepalive", keepalive), ("retry", retry), ("poll_interval", poll_interval)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
        if catch_up_after is not None and (isinstance(catch_up_after, bool) or not isinstance(catch_up_after, int)
                                           or catch_up_after < 0):
            raise ValueError(f"catch_up_after must be an int >= 0 or None, not {catch_up_after!r}")
        if "{thread_id}" not in events_path or "{run_id}" not in events_path:
            raise ValueError(f"events_path must hold {{thread_id}} and {{run_id}}: {events_path!r}")
        self._leases: Any = None
        if database is not None:
            if journal is not None or deliveries is not None:
                raise ValueError("give either database or journal and deliveries, not both")
            journal, deliveries = open_stores(database, synchronous=synchronous, poll_interval=poll_interval)
            self._owned = True
            if is_postgres_url(database):
                from .host.postgres import PostgresLeases

                try:
                    self._leases = PostgresLeases(os.fspath(database), ttl=lease_ttl)
                except BaseException:
                    journal.close()
                    deliveries.close()
                    raise
        elif journal is None or deliveries is None:
            raise ValueError("a database path, or both a journal and a delivery log, are needed")
        else:
            self._owned = False
        self.journal = journal
        self.deliveries = deliveries
        self._runner = runner
        self._reattach = reattach
        self._processor = processor
        self._keepalive = float(keepalive)
        self._retry_ms = max(1, round(retry * 1000))
        self._poll = float(poll_interval)
        self._recover = recover
        self._catch_up_after = catch_up_after
        self._runs: dict[str, _Run] = {}
        self._sources: dict[str, AsyncIterable[HarnessStreamEvent]] = {}  # POSTed Runs awaiting their lease
        self._worker: Any = None
        self._worker_task: asyncio.Task[None] | None = None
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
        (``reattach``) and projects it; nothing is returned, as that happens in the background."""
        if self._leases is not None:
            from .host.postgres import Worker

            self._worker = Worker(self.journal, self.deliveries, self._leases, drive=self._drive_leased,
                                  scan_interval=max(self._poll, 0.2))
            if self._recover:
                self._worker_task = asyncio.create_task(self._worker.run(), name="harness-agui lease worker")
            return ()
        if not self._recover:
            return ()
        resumed = []
        for run_id in await asyncio.to_thread(self.journal.runs):
            if run_id in self._runs or await asyncio.to_thread(self.deliveries.finished, run_id):
                continue
            thread_id = await self._stored_thread(run_id)
            if thread_id is None:
                continue
            source = None
            if self._reattach is not None and not await asyncio.to_thread(self.journal.finished, run_id):
                cursor = await asyncio.to_thread(self.journal.cursor, run_id)
                source = _items(self._reattach, thread_id, run_id, cursor)
            self._launch(run_id, thread_id, source)
            resumed.append(run_id)
        if resumed:
            log.info("resumed %d unfinished run(s): %s", len(resumed), ", ".join(resumed))
        return tuple(resumed)

    async def stop(self) -> None:
        """Cancel every background task (the stores stay whole) and close the stores opened here."""
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        if self._worker_task is not None:
            tasks.append(self._worker_task)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._owned:
            self.journal.close()
            self.deliveries.close()
            if self._leases is not None:
                self._leases.close()

    async def wait(self, run_id: str) -> None:
        """Wait until this process's task for the Run has ended (at once if there is none)."""
        run = self._runs.get(run_id)
        if run is not None and run.task is not None:
            await asyncio.gather(run.task, return_exceptions=True)

    # -- driving a Run -----------------------------------------------------------------------

    def _launch(self, run_id: str, thread_id: str, source: AsyncIterable[HarnessStreamEvent] | None) -> _Run:
        run = _Run(run_id, thread_id, self.deliveries)
        self._runs[run_id] = run
        if self._worker is None:
            run.task = asyncio.create_task(self._drive(run, source), name=f"harness-agui run {run_id}")
        else:  # PostgreSQL: the Run is driven under this process's lease on it
            if source is not None:
                self._sources[run_id] = source
            asyncio.create_task(self._lease_posted(run), name=f"harness-agui lease {run_id}")
        return run

    async def _lease_posted(self, run: _Run) -> None:
        # Take the lease of a Run POSTed here and drive it (``_drive_leased``); if another process holds
        # it (the same Run POSTed there first), that one drives it and this one only serves the log.
        try:
            await self._worker.project(run.run_id)
        except Exception:
            log.exception("run %r: could not drive the run under a lease", run.run_id)
        finally:
            source = self._sources.pop(run.run_id, None)
            close = getattr(source, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
            if self._runs.get(run.run_id) is run and run.task is None:
                del self._runs[run.run_id]
            run.signal.notify()

    async def _drive_leased(self, run_id: str, fenced: Any) -> None:
        # Called by the Worker with this process's lease on the Run and the log fenced by it: a Run
        # POSTed here (its runner's stream), or one taken over (re-attached to its Harness, if it can be).
        source = self._sources.pop(run_id, None)
        run = self._runs.get(run_id)
        thread_id = run.thread_id if run is not None else await self._stored_thread(run_id)
        if thread_id is None:
            return
        if source is None and self._reattach is not None and not await asyncio.to_thread(self.journal.finished,
                                                                                            run_id):
            cursor = await asyncio.to_thread(self.journal.cursor, run_id)
            source = _items(self._reattach, thread_id, run_id, cursor)
        if run is None or run.task is not None:
            run = _Run(run_id, thread_id, fenced)
            self._runs[run_id] = run
        run.deliveries = fenced
        run.task = asyncio.current_task()
        await self._drive(run, source)

    async def _drive(self, run: _Run, source: AsyncIterable[HarnessStreamEvent] | None) -> None:
        projector = asyncio.create_task(self._project(run), name=f"harness-agui projector {run.run_id}")
        try:
            failure = None if source is None else await self._ingest(run, source, projector)
            if failure is not None and not projector.done():
                await self._drain(run, projector)
                await self._fail(run, *failure)
            await projector
        except asyncio.CancelledError:
            projector.cancel()
            await asyncio.gather(projector, return_exceptions=True)
            raise
        except Exception:
            log.exception("run %r: the run's task failed", run.run_id)
        finally:
            run.signal.notify()
            if self._runs.get(run.run_id) is run:
                del self._runs[run.run_id]  # what follows is read from the stores

    async def _ingest(self, run: _Run, source: AsyncIterable[HarnessStreamEvent],
                      projector: asyncio.Task[None]) -> tuple[str, str] | None:
        # Journal the Harness stream; the failure that ends the Run, or None when the stream reached its end.
        iterator = aiter(source)
        try:
            while not projector.done():
                step = asyncio.ensure_future(_next(iterator))
                await asyncio.wait({step, projector}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():  # the projection ended (refused an item): stop reading the Harness
                    step.cancel()
                    await asyncio.gather(step, return_exceptions=True)
                    return None
                try:
                    more, item = step.result()
                    if not more:
                        raise StopAsyncIteration
                except StopAsyncIteration:
                    if await asyncio.to_thread(self.journal.finished, run.run_id):
                        return None  # a reattached stream with nothing left to send
                    return ("harness_agui.harness_ended",
                            f"the Harness stream of run {run.run_id!r} ended without the run's result")
                except Exception as e:
                    return ("harness_agui.harness_failed",
                            f"the Harness stream of run {run.run_id!r} failed: {type(e).__name__}: {e}")
                try:
                    await asyncio.to_thread(self.journal.append, item, root_run_id=run.run_id)
                except (HarnessAguiError, TypeError) as e:
                    if isinstance(e, StorageError):  # damaged, read-only
                        return ("harness_agui.storage_failed", f"run {run.run_id!r}: {type(e).__name__}: {e}")
                    where = getattr(item, "sequence", "?")
                    return ("harness_agui.source_refused",
                            f"run {run.run_id!r}: the journal refused the Harness item at sequence {where}: "
                            f"{type(e).__name__}: {e}")
                except Exception as e:
                    return ("harness_agui.storage_failed",
                            f"run {run.run_id!r}: the journal could not store an item: {type(e).__name__}: {e}")
                if isinstance(item, HarnessRunResultEvent) and item.run_id == run.run_id:
                    return None
            return None
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    async def _project(self, run: _Run) -> None:
        try:
            run.observer = HarnessAguiObserver(self._processor)
            await project_run(run.run_id, self.journal, run.deliveries, observer=run.observer,
                              publish=lambda _: run.signal.notify(), poll_interval=self._poll)
        except asyncio.CancelledError:
            raise
        except ProjectorConflictError as e:
            log.warning("run %r: another projector owns the run; this one stops: %s", run.run_id, e)
        except Exception as e:
            cursor = await asyncio.to_thread(self.deliveries.cursor, run.run_id)
            position = 0 if cursor is None else cursor + 1
            sequence = getattr(e, "sequence", None)
            at = f"sequence {sequence}" if isinstance(sequence, int) else f"position {position}"
            log.error("run %r: the projection failed at %s: %s: %s", run.run_id, at, type(e).__name__, e)
            await self._fail(run, "harness_agui.projection_failed",
                             f"the projection of run {run.run_id!r} failed at the source item at {at}: "
                             f"{type(e).__name__}: {e}")
        finally:
            run.signal.notify()

    async def _drain(self, run: _Run, projector: asyncio.Task[None]) -> None:
        # Let the projector record every item journaled so far, then stop it.
        target = await asyncio.to_thread(self.journal.cursor, run.run_id)
        while not projector.done():
            if await asyncio.to_thread(self.deliveries.cursor, run.run_id) == target:
                break
            await asyncio.wait({projector}, timeout=self._poll)
        projector.cancel()
        await asyncio.gather(projector, return_exceptions=True)

    async def _fail(self, run: _Run, code: str, message: str) -> None:
        event = RunErrorEvent(message=message, code=code, timestamp=int(time.time() * 1000))
        for _ in range(20):
            cursor = await asyncio.to_thread(self.deliveries.cursor, run.run_id)
            try:
                await asyncio.to_thread(run.deliveries.fail, run.run_id, event, expected_cursor=cursor,
                                        thread_id=run.thread_id)
            except ProjectorConflictError:
                # A record cancelled with its projector may still commit in its thread: read again.
                await asyncio.sleep(self._poll)
                continue
            except AfterTerminalError:
                pass  # the Run has finished after all (its terminal events, or another failure, are recorded)
            except Exception:
                log.exception("run %r: could not record the RUN_ERROR (%s: %s)", run.run_id, code, message)
            else:
                log.warning("run %r ended with RUN_ERROR %s: %s", run.run_id, code, message)
            break
        run.signal.notify()

    # -- HTTP -------------------------------------------------------------------------------

    async def _post_run(self, request: Request) -> Response:
        try:
            return await self._start_run(request)
        except StorageError as e:
            return _error(500, "storage_error", str(e))

    async def _get_events(self, request: Request) -> Response:
        try:
            return await self._follow_run(request)
        except StorageError as e:
            return _error(500, "storage_error", str(e))

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
        try:
            after = self._last_event_id(request, run_id, query=False)
            run = self._runs.get(run_id)
            known = run.thread_id if run is not None else await self._stored_thread(run_id)
            if known is not None and known != thread_id:
                return _error(409, "run_conflict", f"run {run_id!r} belongs to another thread")
            await self._check_known_id(run_id, after, request)
        except _Refused as e:
            return e.response
        run = self._runs.get(run_id)
        if run is None and known is None:
            run = self._launch(run_id, thread_id, _items(self._runner, run_input))
        return self._stream(run_id, after, run)

    async def _follow_run(self, request: Request) -> Response:
        thread_id, run_id = request.path_params["thread_id"], request.path_params["run_id"]
        try:
            after = self._last_event_id(request, run_id, query=True)
            run = self._runs.get(run_id)
            known = run.thread_id if run is not None else await self._stored_thread(run_id)
            if known != thread_id:
                return _error(404, "unknown_run", f"thread {thread_id!r} has no run {run_id!r}")
            await self._check_known_id(run_id, after, request)
        except _Refused as e:
            return e.response
        return self._stream(run_id, after, run, late_joiner=after == 0)

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
        last = await asyncio.to_thread(self.deliveries.last_event_id, run_id)
        if after > last:
            raise _Refused(_error(400, "bad_last_event_id",
                                  f"run {run_id!r}: event id {request.headers.get('last-event-id') or after} "
                                  f"was never assigned (the last is {last})"))

    async def _stored_thread(self, run_id: str) -> str | None:
        # The Thread of a root Run the journal holds; None for an unknown Run (or a child Run's id).
        try:
            cursor = await asyncio.to_thread(self.journal.cursor, run_id)
        except DamagedStoreError:
            raise
        except ValueError:
            return None
        if cursor is None:
            return None
        async for item in self.journal.read_prefix(run_id, through=0):
            return item.thread_id
        return None

    def _stream(self, run_id: str, after: int, run: _Run | None, *, late_joiner: bool = False,
                ) -> StreamingResponse:
        return StreamingResponse(self._frames(run_id, after, run, late_joiner), media_type="text/event-stream",
                                 headers=SSE_HEADERS)

    async def _late_joiner(self, run_id: str, run: _Run) -> tuple[str, int] | None:
        # The catch-up frames of a Run being projected here and the last event id they cover, when the
        # Run has more than ``catch_up_after`` events; None to replay the log instead.
        if self._catch_up_after is None:
            return None
        for _ in range(100):
            observer = run.observer
            if observer is None or run.task is None or run.task.done():
                return None
            events, count = observer.catch_up(), observer.event_count  # one step: nothing runs between
            last = await asyncio.to_thread(self.deliveries.last_event_id, run_id)
            if last <= self._catch_up_after or not events:
                return None
            if last == count:
                frames = [f"data: {agui_to_json(e)}\n\n" for e in events]
                frames[-1] = f"id: {sse_id(run_id, count)}\n{frames[-1]}"
                return "".join(frames), count
            if last > count:  # the observer is still being rebuilt, or the Run has ended in the log
                return None
            await asyncio.sleep(self._poll)  # an item's events are being recorded: take it again
        return None

    def _read(self, run_id: str, after: int) -> tuple[bool, tuple[Delivery, ...]]:
        finished = self.deliveries.finished(run_id)  # read first: a finished Run's events are all committed
        return finished, self.deliveries.replay(run_id, after=after)

    async def _frames(self, run_id: str, after: int, run: _Run | None, late_joiner: bool = False,
                      ) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        yield f"retry: {self._retry_ms}\n\n"
        if late_joiner and run is not None:
            caught = await self._late_joiner(run_id, run)
            if caught is not None:
                frames, after = caught
                yield frames
        quiet_since = loop.time()
        while True:
            seen = run.signal.generation if run is not None else 0
            finished, batch = await asyncio.to_thread(self._read, run_id, after)
            if batch:
                yield "".join(f"id: {d.sse_id}\ndata: {d.data}\n\n" for d in batch)
                after = batch[-1].event_id
                quiet_since = loop.time()
            if finished:
                return
            if batch:
                continue
            if run is None:
                run = self._runs.get(run_id)  # recovered or started since
            silent = loop.time() - quiet_since
            if silent >= self._keepalive:
                yield ": keep-alive\n\n"
                quiet_since = loop.time()
                continue
            wait = min(self._poll if run is None else max(self._poll, 0.5), self._keepalive - silent)
            if run is None:
                await asyncio.sleep(wait)
            else:
                await run.signal.wait(seen, wait)


async def _next(iterator: AsyncIterator[HarnessStreamEvent]) -> tuple[bool, Any]:
    # One step of a stream, as a value a task can hold (False at its end).
    try:
        return True, await anext(iterator)
    except StopAsyncIteration:
        return False, None


async def _items(source: Callable[..., AsyncIterable[HarnessStreamEvent]], *args: Any,
                 ) -> AsyncIterator[HarnessStreamEvent]:
    # The stream a runner (or reattach) returns, started inside the Run's task (so that what it
    # raises, even when called, ends the Run cleanly) and closed with it.
    iterator = aiter(source(*args))
    try:
        async for item in iterator:
            yield item
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


def create_app(runner: Runner, **options: Any) -> Starlette:
    """A Starlette app serving AG-UI for ``runner``'s Runs: ``AguiServer(runner, **options).app``.

    Takes the options of ``AguiServer`` (``database=`` or ``journal=`` and
    ``deliveries=``, ``synchronous``, ``processor``, ``reattach``, the paths,
    ``keepalive``, ``retry``, ``poll_interval``); the server is
    ``app.state.agui``. Raises as ``AguiServer`` does."""
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

