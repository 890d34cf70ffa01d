# The run inspector's HTTP shell: Starlette routes over ``_read`` and the Jinja2 templates.
#
# Pages are rendered on the server; ``static/inspect.js`` (no build step) loads the conversation and
# the steps of a Run as HTML fragments, and follows a running Run through an SSE route: the
# server's own events route when the inspector is mounted in an ``AguiServer`` (``follow_url``),
# else the delivery log's ``sse`` here, with the same ids and the same ``Last-Event-ID`` rule. A Run
# is named by ``?id=`` (its client's id or the Harness's), so an id holding ``/`` needs no care.
#
# Text from a Run reaches a page only through the ``t`` filter (``debug.text.escape_terminal``:
# control, bidi and invisible characters become visible escapes) and then Jinja2's autoescape; the
# conversation is ``debug.views.conversation_html``, which escapes the same way. Large JSON is cut
# at ``CUT`` characters with a link to the whole text, served as text/plain. Blocking reads run in
# worker threads, so a Run whose index takes seconds to make leaves every other request served.

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

try:
    from jinja2 import Environment, PackageLoader, select_autoescape
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("harness_agui.inspect needs Starlette and Jinja2: pip install 'harness-agui[inspect]'") from e

from ..debug.replay import diagnose
from ..debug.text import escape_terminal
from ..debug.views import conversation_html
from ..host.delivery import parse_last_event_id
from ..host.errors import UnknownEventIdError
from ..wire.codec import encode, to_json
from ._read import Database, RunRow, deliveries_of, started_order

__all__ = ["Inspector", "CUT", "LAST_ENTRIES", "STEP_ENTRIES"]

CUT = 4000
"""Characters of a JSON payload shown before it is cut (the whole text is a link away)."""

LAST_ENTRIES = 300
"""Entries of a Run's conversation drawn at first (``all=1`` draws every one)."""

STEP_ENTRIES = 40
"""Entries of the conversation drawn beside a step."""

FollowUrl = Callable[[Request, RunRow], "str | None"]
AuthorizeRequest = Callable[[Request], "bool | Awaitable[bool]"]
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _text(value: Any) -> str:
    return escape_terminal("" if value is None else str(value), multiline=True)


def _when(at: datetime | None) -> str:
    return "" if at is None else at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + (" UTC" if at.utcoffset() is not None
                                                                                and not at.utcoffset() else "")


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, indent=2)
    except ValueError:
        return text


def _file_name(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", run_id)[:80] or "run"


class Inspector:
    """The run inspector's pages over one Host database's read-only stores, as a Starlette app
    (``app``). ``journal``, ``deliveries`` and ``bindings`` (optional) are opened by the caller;
    ``follow_url(request, row)`` names the SSE route a running Run's page follows (default: this
    app's own, over ``deliveries.sse``); ``authorize(request)`` is asked before every request is
    answered (403 unless it returns True); ``database`` is the name the copy-paste commands use
    (None: they start from the downloaded journal). Closing the stores is the caller's job."""

    def __init__(self, journal: Any, deliveries: Any, bindings: Any = None, *, follow_url: FollowUrl | None = None,
                 authorize: AuthorizeRequest | None = None, database: str | None = None,
                 poll_interval: float = 0.1) -> None:
        self.db = Database(journal, deliveries, bindings)
        self._follow_url = follow_url
        self._authorize = authorize
        self._database = database
        self._poll = poll_interval
        env = Environment(loader=PackageLoader("harness_agui.inspect", "templates"),
                          autoescape=select_autoescape(default=True, default_for_string=True))
        env.filters["t"] = _text
        env.filters["when"] = _when
        self._env = env
        static = os.path.join(os.path.dirname(__file__), "static")
        self.app = Starlette(routes=[
            Route("/", self._guard(self._threads)),
            Route("/run", self._guard(self._run)),
            Route("/run/conversation", self._guard(self._conversation)),
            Route("/run/step", self._guard(self._step)),
            Route("/run/at", self._guard(self._at)),
            Route("/run/item", self._guard(self._whole_item)),
            Route("/run/event", self._guard(self._whole_event)),
            Route("/run/problem", self._guard(self._problem)),
            Route("/run/follow", self._guard(self._follow)),
            Route("/run/journal.jsonl", self._guard(self._journal_file)),
            Route("/run/events.jsonl", self._guard(self._events_file)),
            Route("/run/deliveries.jsonl", self._guard(self._deliveries_file)),
            Mount("/static", StaticFiles(directory=static), name="static"),
        ])

    # -- plumbing ----------------------------------------------------------------------------

    def _guard(self, endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            if self._authorize is not None:
                verdict = self._authorize(request)
                if asyncio.iscoroutine(verdict) or isinstance(verdict, Awaitable):
                    verdict = await verdict
                if verdict is not True:
                    return JSONResponse({"error": "forbidden", "message": "not allowed to inspect"}, status_code=403)
            try:
                return await endpoint(request)
            except _NotFound as e:
                return PlainTextResponse(str(e), status_code=404)
            except ValueError as e:
                return PlainTextResponse(escape_terminal(str(e)), status_code=400)
        return guarded

    def _page(self, request: Request, name: str, **context: Any) -> HTMLResponse:
        base = request.scope.get("root_path", "").rstrip("/")
        html = self._env.get_template(name).render(base=base, **context)
        return HTMLResponse(html, headers={"Content-Security-Policy": "default-src 'self'; style-src 'self' "
                                                                      "'unsafe-inline'; img-src 'self' data:",
                                           "X-Content-Type-Options": "nosniff"})

    async def _row(self, request: Request) -> RunRow:
        given = request.query_params.get("id")
        if not given:
            raise ValueError("name a run: ?id=RUN_ID")
        run_id = await asyncio.to_thread(self.db.source_run, given)
        row = await asyncio.to_thread(self.db.row, run_id)
        if row is None:
            raise _NotFound(f"no run {escape_terminal(given)!r} in this database")
        return row

    @staticmethod
    def _int(request: Request, name: str, default: int | None = None) -> int:
        value = request.query_params.get(name)
        if value is None:
            if default is None:
                raise ValueError(f"?{name}= is needed")
            return default
        if not value.isdigit():
            raise ValueError(f"?{name}= must be a number, not {escape_terminal(value)!r}")
        return int(value)

    # -- pages --------------------------------------------------------------------------------

    async def _threads(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        threads = await asyncio.to_thread(self.db.threads)
        if query:
            threads = await asyncio.to_thread(self._search, threads, query)
        return self._page(request, "threads.html", threads=threads, query=query)

    def _search(self, threads: list[Any], query: str) -> list[Any]:
        needle = query.casefold()
        found = []
        for thread in threads:
            ids = [thread.thread_id] + [i for r in thread.runs for i in (r.run_id, r.wire_run_id, r.wire_thread_id)
                                        if i]
            if any(needle in i.casefold() for i in ids) or any(
                    needle in text.casefold() for r in thread.runs for text in self.db.index(r.run_id).user_texts()):
                found.append(thread)
        return found

    async def _run(self, request: Request) -> Response:
        row = await self._row(request)
        siblings = await asyncio.to_thread(self.db.journal.runs, row.thread_id)
        rows = [r for r in (await asyncio.to_thread(lambda: [self.db.row(s) for s in siblings])) if r is not None]
        row = next((r for r in rows if r.run_id == row.run_id), row)
        rows.sort(key=started_order)
        at = next(i for i, r in enumerate(rows) if r.run_id == row.run_id)
        follow = None
        if row.status.kind == "running":
            follow = self._follow_url(request, row) if self._follow_url is not None else \
                f"{request.scope.get('root_path', '').rstrip('/')}/run/follow?id={_q(row.run_id)}"
        from ..host.delivery import sse_id

        return self._page(
            request, "run.html", row=row, previous=rows[at - 1] if at else None,
            next=rows[at + 1] if at + 1 < len(rows) else None, follow=follow,
            last_sse_id=sse_id(row.run_id, row.events) if row.events else "",
            file=_file_name(row.run_id), database=self._database)

    async def _conversation(self, request: Request) -> Response:
        row = await self._row(request)
        through = self._int(request, "through", row.events)
        everything = request.query_params.get("all") == "1"
        index = await asyncio.to_thread(self.db.index, row.run_id)
        conv = await asyncio.to_thread(index.conversation_after, through, self.db.deliveries)
        html = await asyncio.to_thread(conversation_html, conv, last=None if everything else LAST_ENTRIES)
        children = index.subagents() if through >= index.events else []
        return self._page(request, "conversation.html", row=row, conversation=html, children=children,
                          through=min(through, index.events))

    async def _step(self, request: Request) -> Response:
        row = await self._row(request)
        k = self._int(request, "k")
        if k >= row.items:
            raise _NotFound(f"run {escape_terminal(row.run_id)!r} has {row.items} items")
        item = await asyncio.to_thread(self.db.item, row.run_id, k)
        deliveries = await asyncio.to_thread(self.db.deliveries_of_item, row.run_id, k)
        item_json = json.dumps(to_json(item), ensure_ascii=False, indent=2)
        events = [(d, _pretty(d.data)) for d in deliveries]
        delivered = await asyncio.to_thread(self.db.deliveries.cursor, row.run_id)
        recorded = delivered is not None and k <= delivered
        return self._page(request, "step.html", row=row, k=k, item=item, item_json=item_json, events=events,
                          cut=CUT, recorded=recorded)

    async def _at(self, request: Request) -> Response:
        # The conversation as it stood after item k (it waits for the Run's index; the step does not).
        row = await self._row(request)
        k = self._int(request, "k")
        index = await asyncio.to_thread(self.db.index, row.run_id)
        conv = await asyncio.to_thread(index.conversation_after, index.events_through(k), self.db.deliveries)
        html = await asyncio.to_thread(conversation_html, conv, last=STEP_ENTRIES)
        return HTMLResponse(html)

    async def _whole_item(self, request: Request) -> Response:
        row = await self._row(request)
        item = await asyncio.to_thread(self.db.item, row.run_id, self._int(request, "k"))
        if item is None:
            raise _NotFound("no such item")
        return _plain(json.dumps(to_json(item), ensure_ascii=False, indent=2))

    async def _whole_event(self, request: Request) -> Response:
        row = await self._row(request)
        e = self._int(request, "e")
        found = await asyncio.to_thread(deliveries_of, self.db.deliveries, row.run_id, range(e, e + 1))
        if not found or found[0].event_id != e:
            raise _NotFound("no such event")
        return _plain(_pretty(found[0].data))

    async def _problem(self, request: Request) -> Response:
        row = await self._row(request)
        report = await asyncio.to_thread(self._diagnose, row)
        if report.failure is not None:
            return JSONResponse({"position": report.failure.position,
                                 "message": escape_terminal(f"{report.failure.error_type}: {report.failure.message}")})
        delivered = await asyncio.to_thread(self.db.deliveries.cursor, row.run_id)
        unrecorded = 0 if delivered is None else delivered + 1
        if unrecorded < row.items and row.status.kind != "running":
            return JSONResponse({"position": unrecorded, "message": "the first item whose events were not recorded"})
        return JSONResponse({"position": None, "message": "no finding: every item projects"})

    def _diagnose(self, row: RunRow) -> Any:
        # In a worker thread: the journal read and replayed there, so a long Run blocks no other request.
        async def items() -> list[Any]:
            return [item async for item in self.db.journal.read_prefix(row.run_id, through=row.items - 1)]
        return diagnose(asyncio.run(items()))

    # -- live -----------------------------------------------------------------------------------

    async def _follow(self, request: Request) -> Response:
        row = await self._row(request)
        value = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
        try:
            after = parse_last_event_id(value, run_id=row.run_id)
        except UnknownEventIdError as e:
            return JSONResponse({"error": "bad_last_event_id", "message": str(e)}, status_code=400)
        frames = self.db.deliveries.sse(row.run_id, last_event_id=after, poll_interval=self._poll)

        async def stream() -> AsyncIterator[str]:
            yield "retry: 1000\n\n"
            async for frame in frames:
                yield frame
        return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)

    # -- files ------------------------------------------------------------------------------------

    async def _journal_file(self, request: Request) -> Response:
        row = await self._row(request)

        async def lines() -> AsyncIterator[str]:
            async for item in self.db.journal.read_prefix(row.run_id, through=row.items - 1):
                yield encode(item) + "\n"
        return _download(lines(), f"{_file_name(row.run_id)}.journal.jsonl")

    async def _events_file(self, request: Request) -> Response:
        row = await self._row(request)
        return _download(self._paged(row, lambda d: d.data + "\n"), f"{_file_name(row.run_id)}.events.jsonl")

    async def _deliveries_file(self, request: Request) -> Response:
        row = await self._row(request)

        def line(d: Any) -> str:
            return json.dumps({"event_id": d.event_id, "sse_id": d.sse_id, "source_position": d.source_position,
                               "event_type": d.event_type, "data": d.data}, ensure_ascii=False) + "\n"
        return _download(self._paged(row, line), f"{_file_name(row.run_id)}.deliveries.jsonl")

    async def _paged(self, row: RunRow, line: Callable[[Any], str]) -> AsyncIterator[str]:
        after = 0
        while after < row.events:
            page = await asyncio.to_thread(self.db.deliveries.page, row.run_id, after=after, limit=2000)
            if not page.deliveries:
                return
            yield "".join(line(d) for d in page.deliveries if d.event_id <= row.events)
            after = page.deliveries[-1].event_id


class _NotFound(Exception):
    pass


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _plain(text: str) -> Response:
    return PlainTextResponse(text, headers={"X-Content-Type-Options": "nosniff"})


def _download(body: AsyncIterator[str], name: str) -> Response:
    return StreamingResponse(body, media_type="application/x-ndjson",
                             headers={"Content-Disposition": f'attachment; filename="{name}"',
                                      "X-Content-Type-Options": "nosniff"})
