"""The server's side of a request: the runner protocol (a Harness that names its own Runs), the request
context and the ``authorize`` hook, CORS, the health route, cancel, one Run at a time per Thread, and Runs
bound but never journaled. Each test serves an ``AguiServer`` with uvicorn on loopback in its own event
loop and talks to it over HTTP (tests/test_serve.py does the same with server processes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from ag_ui.core import RunAgentInput

from harness_agui import HarnessStreamEvent
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.host.bindings import SqliteRunBindings, WireRun
from harness_agui.host.runner import CallableRun, RequestContext, RunRefused
from harness_agui.serve import AguiServer
from harness_agui.testing import SourceBuilder


def counted(thread_id: str, run_id: str, deltas: int = 5) -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id)
    b.user("Count for me.").request().text(0, [f"{n} " for n in range(deltas)]).completed("counted")
    return b.items


async def paced(items: list[HarnessStreamEvent], pace: float) -> AsyncIterator[HarnessStreamEvent]:
    for item in items:
        await asyncio.sleep(pace)
        yield item


def body(thread_id: str, run_id: str, text: str = "Count for me.") -> dict[str, Any]:
    return {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": f"u-{run_id}", "role": "user", "content": text}]}


class Naming:
    """A runner that names each Run itself (``h-`` and the request's ids), as a13n-harness does, paced
    ``pace`` seconds per item; it records what it was told."""

    def __init__(self, pace: float = 0.0, deltas: int = 5) -> None:
        self.pace = pace
        self.deltas = deltas
        self.contexts: list[RequestContext | None] = []
        self.starts: list[tuple[str, tuple[str, ...]]] = []  # (run id, the runs known then that were running)
        self.starting: dict[str, int] = {}  # starts under way per Thread
        self.most_starting: dict[str, int] = {}

    async def start(self, run_input: RunAgentInput, *, journal: Any, request: RequestContext | None = None,
                    running: Callable[[str], bool] | None = None) -> CallableRun:
        thread_id, run_id = f"h-{run_input.thread_id}", f"h-{run_input.run_id}"
        self.starting[thread_id] = self.starting.get(thread_id, 0) + 1
        self.most_starting[thread_id] = max(self.most_starting.get(thread_id, 0), self.starting[thread_id])
        try:
            await asyncio.sleep(0.05)  # reads the Thread, as a real runner does
            assert running is not None
            self.contexts.append(request)
            self.starts.append((run_id, tuple(r for r, _ in self.starts if running(r))))
            run = CallableRun(lambda: paced(counted(thread_id, run_id, self.deltas), self.pace),
                              thread_id=thread_id, run_id=run_id)
            run.wire_thread_id, run.wire_run_id = run_input.thread_id, run_input.run_id
            return run
        finally:
            self.starting[thread_id] -= 1


@contextlib.asynccontextmanager
async def serving(server: AguiServer) -> AsyncIterator[str]:
    """``server.app`` under uvicorn on a free loopback port; yields its base URL."""
    config = uvicorn.Config(server.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    task = asyncio.create_task(uv.serve())
    while not uv.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = uv.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        await task


def sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def ids(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("id: ")]


def run(scenario: Any) -> Any:
    return asyncio.run(asyncio.wait_for(scenario, 60))


# -- ids -------------------------------------------------------------------------------------------

def test_a_runner_that_names_its_runs_is_followed_by_the_clients_ids_and_journaled_under_its_own(
        tmp_path: Path) -> None:
    runner = Naming()
    server = AguiServer(runner, database=tmp_path / "host.db", synchronous="NORMAL")

    async def scenario() -> tuple[str, str, int, int]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            posted = await client.post(f"{base}/runs", json=body("t-1", "r-1"))
            followed = await client.get(f"{base}/threads/t-1/runs/r-1/events")
            by_source = await client.get(f"{base}/threads/h-t-1/runs/h-r-1/events")
            wrong_thread = await client.get(f"{base}/threads/t-2/runs/r-1/events")
            return posted.text, followed.text, by_source.status_code, wrong_thread.status_code

    posted, followed, by_source, wrong_thread = run(scenario())
    events = sse(posted)
    assert (events[0]["type"], events[0]["threadId"], events[0]["runId"]) == ("RUN_STARTED", "t-1", "r-1")
    assert (events[-1]["type"], events[-1]["threadId"], events[-1]["runId"]) == ("RUN_FINISHED", "t-1", "r-1")
    assert followed == posted and (by_source, wrong_thread) == (404, 404)
    with SqliteSourceJournal(tmp_path / "host.db", read_only=True) as journal, \
            SqliteDeliveryLog(tmp_path / "host.db", read_only=True) as log:
        assert journal.runs() == ("h-r-1",) and journal.thread_of("h-r-1") == "h-t-1"
        assert ids(posted) == [d.sse_id for d in log.replay("h-r-1")]
    with SqliteRunBindings(tmp_path / "host.db", read_only=True) as bindings:
        assert bindings.source_of("r-1") == WireRun("t-1", "r-1", "h-t-1", "h-r-1")


def test_the_binding_is_stored_before_the_runs_first_item(tmp_path: Path) -> None:
    seen: list[WireRun | None] = []
    bindings = SqliteRunBindings(tmp_path / "host.db")

    async def harness(run_input: RunAgentInput) -> AsyncIterator[HarnessStreamEvent]:
        seen.append(bindings.source_of(run_input.run_id))
        for item in counted(run_input.thread_id, run_input.run_id):
            yield item

    server = AguiServer(harness, database=tmp_path / "host.db", synchronous="NORMAL")

    async def scenario() -> None:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            await client.post(f"{base}/runs", json=body("t-1", "r-1"))

    run(scenario())
    bindings.close()
    assert seen == [WireRun.same("t-1", "r-1")]


# -- the request -----------------------------------------------------------------------------------

def test_the_runner_and_the_authorize_hook_get_the_requests_context(tmp_path: Path) -> None:
    runner = Naming()
    asked: list[RequestContext] = []

    async def authorize(context: RequestContext) -> bool:
        asked.append(context)
        return context.headers.get("authorization") == "Bearer good"

    server = AguiServer(runner, database=tmp_path / "host.db", authorize=authorize)
    good = {"Authorization": "Bearer good", "X-Tenant": "acme"}

    async def scenario() -> dict[str, int]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            out = {"post": (await client.post(f"{base}/runs", json=body("t-1", "r-1"), headers=good)).status_code}
            out["get"] = (await client.get(f"{base}/threads/t-1/runs/r-1/events", headers=good)).status_code
            out["delete"] = (await client.delete(f"{base}/threads/t-1/runs/r-1", headers=good)).status_code
            return out

    assert run(scenario()) == {"post": 200, "get": 200, "delete": 200}
    assert [(c.action, c.method, c.thread_id, c.run_id) for c in asked] == [
        ("run", "POST", "t-1", "r-1"), ("follow", "GET", "t-1", "r-1"), ("cancel", "DELETE", "t-1", "r-1")]
    told = runner.contexts[0]
    assert told is not None and told == asked[0]
    assert told.headers["x-tenant"] == "acme" and told.path == "/runs" and told.client is not None
    assert told.run_input is not None and told.run_input.run_id == "r-1"


def test_a_request_authorize_refuses_gets_403_json_before_any_event_and_nothing_is_started(tmp_path: Path) -> None:
    runner = Naming()

    def authorize(context: RequestContext) -> bool:
        if context.headers.get("authorization") == "Bearer stale":
            raise RunRefused("expired", "the token expired", status=401)
        return context.headers.get("authorization") == "Bearer good"

    server = AguiServer(runner, database=tmp_path / "host.db", authorize=authorize)

    async def scenario() -> list[httpx.Response]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            await client.post(f"{base}/runs", json=body("t-1", "r-1"), headers={"Authorization": "Bearer good"})
            return [await client.post(f"{base}/runs", json=body("t-1", "r-2")),
                    await client.post(f"{base}/runs", json=body("t-1", "r-3"), headers={"Authorization": "x"}),
                    await client.post(f"{base}/runs", json=body("t-1", "r-4"),
                                      headers={"Authorization": "Bearer stale"}),
                    await client.get(f"{base}/threads/t-1/runs/r-1/events"),
                    await client.delete(f"{base}/threads/t-1/runs/r-1")]

    answers = run(scenario())
    assert [a.status_code for a in answers] == [403, 403, 401, 403, 403]
    assert all(a.headers["content-type"] == "application/json" for a in answers)
    assert answers[0].json()["error"] == "forbidden" and answers[2].json()["error"] == "expired"
    assert len(runner.contexts) == 1  # only the authorized POST reached the runner
    with SqliteSourceJournal(tmp_path / "host.db", read_only=True) as journal:
        assert journal.runs() == ("h-r-1",)


def test_a_cors_preflight_from_an_allowed_origin_gets_204_with_the_headers_and_others_do_not(
        tmp_path: Path) -> None:
    server = AguiServer(Naming(), database=tmp_path / "host.db", cors_origins=["https://app.example"],
                        cors_headers=["X-Tenant"])
    plain = AguiServer(Naming(), database=tmp_path / "plain.db")
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type, authorization, x-tenant"}

    async def scenario() -> list[httpx.Response]:
        async with serving(server) as base, serving(plain) as plain_base, httpx.AsyncClient(timeout=30) as client:
            return [await client.options(f"{base}/runs", headers={"Origin": "https://app.example", **preflight}),
                    await client.options(f"{base}/runs", headers={"Origin": "https://evil.example", **preflight}),
                    await client.post(f"{base}/runs", json=body("t-1", "r-1"),
                                      headers={"Origin": "https://app.example"}),
                    await client.options(f"{plain_base}/runs", headers={"Origin": "https://app.example",
                                                                        **preflight})]

    allowed, refused, posted, without = run(scenario())
    assert allowed.status_code == 204 and allowed.content == b""
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in allowed.headers["access-control-allow-methods"]
    assert "DELETE" in allowed.headers["access-control-allow-methods"]
    assert {"content-type", "authorization", "x-tenant", "last-event-id"} <= {
        h.strip().lower() for h in allowed.headers["access-control-allow-headers"].split(",")}
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    assert posted.status_code == 200 and posted.headers["access-control-allow-origin"] == "https://app.example"
    assert without.status_code == 405


def test_the_health_route_answers_while_the_database_does(tmp_path: Path) -> None:
    server = AguiServer(Naming(), database=tmp_path / "host.db")

    async def scenario() -> httpx.Response:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            return await client.get(f"{base}/health")

    answer = run(scenario())
    assert answer.status_code == 200 and answer.json() == {"status": "ok", "runs": 0}


def test_a_runner_whose_start_raises_anything_gets_a_500_json_and_the_server_goes_on(tmp_path: Path) -> None:
    class Exits:
        calls = 0

        async def start(self, run_input: RunAgentInput, **_: Any) -> Any:
            self.calls += 1
            if self.calls == 1:
                raise SystemExit(3)
            raise KeyboardInterrupt

    server = AguiServer(Exits(), database=tmp_path / "host.db")

    async def scenario() -> list[httpx.Response]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            return [await client.post(f"{base}/runs", json=body("t-1", "r-1")),
                    await client.post(f"{base}/runs", json=body("t-1", "r-2")),
                    await client.get(f"{base}/health")]

    first, second, health = run(scenario())
    assert (first.status_code, first.json()["error"]) == (500, "harness_agui.harness_failed")
    assert "SystemExit" in first.json()["message"] and second.status_code == 500
    assert health.status_code == 200


# -- one Run at a time per Thread ------------------------------------------------------------------

def test_starts_on_one_thread_take_turns_and_the_second_runner_sees_the_first_run_running(tmp_path: Path) -> None:
    runner = Naming(pace=0.02, deltas=20)
    server = AguiServer(runner, database=tmp_path / "host.db", synchronous="NORMAL")

    async def scenario() -> list[int]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            answers = await asyncio.gather(client.post(f"{base}/runs", json=body("t-1", "r-1")),
                                           client.post(f"{base}/runs", json=body("t-1", "r-2")),
                                           client.post(f"{base}/runs", json=body("t-2", "r-3")))
            return [a.status_code for a in answers]

    assert run(scenario()) == [200, 200, 200]
    assert runner.most_starting == {"h-t-1": 1, "h-t-2": 1}  # never two starts of one Thread at once
    on_t1 = [(run_id, seen) for run_id, seen in runner.starts if run_id in ("h-r-1", "h-r-2")]
    (first, _), (_, seen_by_second) = on_t1
    assert first in seen_by_second  # the first was registered (and running) when the second started


def test_a_new_run_is_looked_up_once_and_the_same_run_posted_twice_at_once_is_started_once(tmp_path: Path) -> None:
    # On SQLite a new run id is looked up in the database once, before its Thread's lock: a POST that
    # waited for the lock while another started the same run id finds that one's binding in memory.
    runner = Naming(pace=0.01)
    server = AguiServer(runner, database=tmp_path / "host.db", synchronous="NORMAL")
    looked_up: list[str] = []
    look_up = server.supervisor._starts._look_up

    def counted(run_id: str) -> Any:
        looked_up.append(run_id)
        return look_up(run_id)

    server.supervisor._starts._look_up = counted  # type: ignore[method-assign]

    async def scenario() -> tuple[list[str], list[str], str]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            await client.post(f"{base}/runs", json=body("t-1", "r-1"))
            alone = list(looked_up)
            answers = await asyncio.gather(client.post(f"{base}/runs", json=body("t-1", "r-2")),
                                           client.post(f"{base}/runs", json=body("t-1", "r-2")))
            again = await client.post(f"{base}/runs", json=body("t-1", "r-2"))
            return alone, [a.text for a in answers], again.text

    alone, (first, second), again = run(scenario())
    assert alone == ["r-1"]
    assert [e["type"] for e in sse(first)][-1] == "RUN_FINISHED"
    assert first == second == again
    assert [run_id for run_id, _ in runner.starts] == ["h-r-1", "h-r-2"]
    # Once per request that did not find it in memory (the second may find the first one's), none after.
    assert looked_up[:1] == ["r-1"] and looked_up[1:] in (["r-2"], ["r-2", "r-2"])


# -- cancel ----------------------------------------------------------------------------------------

def test_delete_cancels_a_plain_runners_run_within_a_second_with_run_error_cancelled(tmp_path: Path) -> None:
    server = AguiServer(Naming(pace=0.05, deltas=400), database=tmp_path / "host.db", synchronous="NORMAL")

    async def scenario() -> tuple[list[dict[str, Any]], float, list[httpx.Response]]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            async with client.stream("POST", f"{base}/runs", json=body("t-1", "r-1")) as response:
                text = ""
                asked = 0.0
                async for chunk in response.aiter_text():
                    text += chunk
                    if not asked and text.count("TEXT_MESSAGE_CONTENT") >= 2:
                        asked = time.monotonic()
                        cancelled = await client.delete(f"{base}/threads/t-1/runs/r-1")
                took = time.monotonic() - asked
            again = await client.delete(f"{base}/threads/t-1/runs/r-1")
            unknown = await client.delete(f"{base}/threads/t-1/runs/r-9")
            with pytest.raises(KeyError):
                await server.cancel("t-1", "r-9")
            return sse(text), took, [cancelled, again, unknown]

    events, took, (cancelled, again, unknown) = run(scenario())
    assert (cancelled.status_code, cancelled.json()) == (202, {"cancelled": True})
    assert (again.status_code, again.json()) == (200, {"cancelled": False})
    assert unknown.status_code == 404
    assert took < 1.0
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "harness_agui.cancelled"
    with SqliteDeliveryLog(tmp_path / "host.db", read_only=True) as log:
        assert json.loads(log.replay("h-r-1")[-1].data)["code"] == "harness_agui.cancelled"


def test_a_posting_client_that_goes_away_cancels_its_run_only_when_asked_to(tmp_path: Path) -> None:
    async def scenario(cancel: bool) -> tuple[bool, str]:
        server = AguiServer(Naming(pace=0.05, deltas=400), database=tmp_path / f"{cancel}.db", synchronous="NORMAL",
                            cancel_on_disconnect=cancel)
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            async with client.stream("POST", f"{base}/runs", json=body("t-1", "r-1")) as response:
                async for chunk in response.aiter_text():
                    if "TEXT_MESSAGE_CONTENT" in chunk:
                        break  # the client goes away
            await asyncio.sleep(1.0)
            driving = server.supervisor.driving("h-r-1")
            last = await asyncio.to_thread(server.deliveries.replay, "h-r-1")
            return driving, last[-1].data

    driving, last = run(scenario(True))
    assert not driving and json.loads(last)["code"] == "harness_agui.cancelled"
    driving, last = run(scenario(False))
    assert driving and json.loads(last)["type"] == "TEXT_MESSAGE_CONTENT"


# -- Runs bound but never journaled ----------------------------------------------------------------

def test_a_run_bound_by_a_server_that_died_before_its_first_item_is_ended_or_restarted_at_start_up(
        tmp_path: Path) -> None:
    with SqliteRunBindings(tmp_path / "host.db") as bindings:
        bindings.bind(WireRun("t-1", "r-lost", "h-t-1", "h-r-lost"))
    with SqliteRunBindings(tmp_path / "again.db") as bindings:
        bindings.bind(WireRun.same("t-2", "r-again"))

    def reattach(thread_id: str, run_id: str, after: int | None) -> AsyncIterator[HarnessStreamEvent]:
        return paced(counted(thread_id, run_id), 0)

    lost = AguiServer(Naming(), database=tmp_path / "host.db")
    again = AguiServer(Naming(), database=tmp_path / "again.db", reattach=reattach)

    async def scenario() -> tuple[str, str]:
        async with serving(lost) as base, serving(again) as again_base, httpx.AsyncClient(timeout=30) as client:
            ended = (await client.get(f"{base}/threads/t-1/runs/r-lost/events")).text
            restarted = (await client.get(f"{again_base}/threads/t-2/runs/r-again/events")).text
            return ended, restarted

    ended, restarted = run(scenario())
    assert [e["type"] for e in sse(ended)] == ["RUN_ERROR"]
    assert sse(ended)[0]["code"] == "harness_agui.harness_lost"
    assert sse(restarted)[-1]["type"] == "RUN_FINISHED"


# -- whose Thread, and what a request may be -------------------------------------------------------

def test_the_authorize_hook_is_told_the_harness_thread_the_clients_thread_was_bound_to(tmp_path: Path) -> None:
    runner = Naming()
    asked: list[RequestContext] = []

    def authorize(context: RequestContext) -> bool:
        asked.append(context)
        return context.thread_id == "t-1"  # the client may see its own Thread only

    server = AguiServer(runner, database=tmp_path / "host.db", authorize=authorize)

    async def scenario() -> list[int]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            return [(await client.post(f"{base}/runs", json=body("t-1", "r-1"))).status_code,
                    (await client.post(f"{base}/runs", json=body("t-1", "r-2"))).status_code,
                    (await client.get(f"{base}/threads/t-1/runs/r-2/events")).status_code,
                    (await client.get(f"{base}/threads/t-2/runs/r-1/events")).status_code,
                    (await client.get(f"{base}/threads/t-1/runs/r-9/events")).status_code]

    assert run(scenario()) == [200, 200, 200, 403, 404]  # another's Run is refused, whether it exists or not
    first, second, follow, other, unknown = asked
    assert (first.source_thread_id, first.thread_runs) == (None, ())  # a new Thread
    assert second.source_thread_id == "h-t-1"
    assert second.thread_runs == (WireRun("t-1", "r-1", "h-t-1", "h-r-1"),)
    assert (follow.source_thread_id, follow.thread_runs) == ("h-t-1", None)
    assert other.source_thread_id is None and unknown.source_thread_id is None
    told = runner.contexts[1]
    assert told is not None and told.thread_runs == second.thread_runs  # read again under the Thread's lock


def test_a_start_reads_its_threads_bindings_once_unless_a_run_was_started_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The bindings read for the authorize hook are the runner's too when this process (the only one
    # binding on SQLite) has started no Run since; a Run started meanwhile makes the start read them again.
    reads: list[str] = []
    runs_of = SqliteRunBindings.runs_of

    def counted_runs_of(self: SqliteRunBindings, thread_id: str) -> tuple[WireRun, ...]:
        reads.append(thread_id)
        return runs_of(self, thread_id)

    monkeypatch.setattr(SqliteRunBindings, "runs_of", counted_runs_of)
    first_starting = asyncio.Event()
    second_asked = asyncio.Event()

    async def authorize(context: RequestContext) -> bool:
        if context.run_id == "r-3":
            second_asked.set()
        return True

    class Holding(Naming):
        async def start(self, run_input: RunAgentInput, **kwargs: Any) -> CallableRun:
            if run_input.run_id == "r-2":  # r-3's bindings are read before this Run is bound
                first_starting.set()
                await second_asked.wait()
            return await super().start(run_input, **kwargs)

    runner = Holding()
    server = AguiServer(runner, database=tmp_path / "host.db", authorize=authorize)

    async def scenario() -> list[int]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            alone = (await client.post(f"{base}/runs", json=body("t-1", "r-1"))).status_code
            reads_alone = len(reads)
            # r-3 is sent once r-2 holds its Thread's lock: two requests sent together may arrive in either order
            first = asyncio.ensure_future(client.post(f"{base}/runs", json=body("t-2", "r-2")))
            await asyncio.wait_for(first_starting.wait(), 30)
            second = await client.post(f"{base}/runs", json=body("t-2", "r-3"))
            assert reads_alone == 1  # one read for a start on its own
            return [alone, (await first).status_code, second.status_code]

    assert run(scenario()) == [200, 200, 200]
    told = {context.run_id: context for context in runner.contexts if context is not None}
    assert told["r-2"].thread_runs == ()
    assert told["r-3"].thread_runs == (WireRun("t-2", "r-2", "h-t-2", "h-r-2"),)  # read again: r-2 was bound
    assert reads == ["t-1", "t-2", "t-2", "t-2"]


def test_a_run_whose_harness_id_the_journal_holds_already_is_rebuilt_not_started_blank(tmp_path: Path) -> None:
    # The start looks for a newly bound Run in both logs in its binding's hop: one the journal holds items
    # of (journaled by an earlier release, without a binding) goes on from them, not from nothing.
    with SqliteSourceJournal(tmp_path / "host.db") as journal:
        for item in list(counted("h-t-1", "h-r-1", 5))[:3]:
            journal.append(item)

    async def scenario_on(database: Path) -> str:
        server = AguiServer(Naming(), database=database, recover=False)  # the Run is left for the start to find
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            return (await client.post(f"{base}/runs", json=body("t-1", "r-1"))).text

    def scenario() -> Any:
        return scenario_on(tmp_path / "host.db")

    events = sse(run(scenario()))
    # The runner's stream starts again at sequence 0: its first 3 items are the journal's, sent again
    # (passed over), and the Run goes on from there, each item's events once.
    whole = sse(run(scenario_on(tmp_path / "whole.db")))
    assert [e["type"] for e in events] == [e["type"] for e in whole]
    assert events[-1]["type"] == "RUN_FINISHED"


def test_a_post_that_is_not_application_json_is_refused_with_415_and_starts_nothing(tmp_path: Path) -> None:
    runner = Naming()
    server = AguiServer(runner, database=tmp_path / "host.db", cors_origins=["https://app.example"])
    payload = json.dumps(body("t-1", "r-1")).encode()

    async def scenario() -> list[httpx.Response]:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            # What a page of another site can send without a CORS preflight: text/plain, a form, nothing.
            return [await client.post(f"{base}/runs", content=payload, headers={
                        "Content-Type": "text/plain", "Origin": "https://evil.example", "Cookie": "session=1"}),
                    await client.post(f"{base}/runs", content=payload,
                                      headers={"Content-Type": "application/x-www-form-urlencoded"}),
                    await client.post(f"{base}/runs", content=payload),
                    await client.post(f"{base}/runs", content=payload,
                                      headers={"Content-Type": "Application/JSON; charset=utf-8"})]

    *refused, accepted = run(scenario())
    assert [a.status_code for a in refused] == [415, 415, 415]
    assert all(a.json()["error"] == "unsupported_media_type" for a in refused)
    assert accepted.status_code == 200 and sse(accepted.text)[-1]["type"] == "RUN_FINISHED"
    assert len(runner.contexts) == 1


def test_any_origin_with_credentials_is_refused_when_the_server_is_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cors_credentials"):
        AguiServer(Naming(), database=tmp_path / "host.db", cors_origins=["https://app.example", "*"],
                   cors_credentials=True)
    assert not (tmp_path / "host.db").exists()  # refused before anything was opened
    listed = AguiServer(Naming(), database=tmp_path / "host.db", cors_origins=["https://app.example"],
                        cors_credentials=True)
    listed.journal.close()
    listed.deliveries.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_client_thread_is_bound_to_one_harness_thread_and_a_harness_thread_to_one_client_thread(
        tmp_path: Path, backend: str) -> None:
    from harness_agui.host.bindings import ThreadBindingError

    if backend == "postgres":
        from pg_server import fresh_url

        from harness_agui.host.postgres import PostgresRunBindings

        opened: Any = PostgresRunBindings(fresh_url("bindings"))
    else:
        opened = SqliteRunBindings(tmp_path / "host.db")
    with opened as bindings:
        bindings.bind(WireRun("t-1", "r-1", "h-1", "s-1"))
        bindings.bind(WireRun("t-2", "r-2", "h-2", "s-2"))
        bindings.bind(WireRun("t-1", "r-3", "h-1", "s-3"))
        with pytest.raises(ThreadBindingError, match="bound to the Harness thread 'h-1'"):
            bindings.bind(WireRun("t-1", "r-4", "h-9", "s-4"))  # one client Thread, two Harness Threads
        with pytest.raises(ThreadBindingError, match="belongs to another client thread"):
            bindings.bind(WireRun("t-3", "r-5", "h-1", "s-5"))  # two client Threads, one Harness Thread
        assert bindings.runs_of("t-1") == (WireRun("t-1", "r-1", "h-1", "s-1"), WireRun("t-1", "r-3", "h-1", "s-3"))
        assert bindings.runs_of("t-3") == () and bindings.source_of("r-4") is None


def test_a_file_of_an_earlier_release_gets_the_thread_indexes_when_opened_for_writing(tmp_path: Path) -> None:
    import sqlite3

    with SqliteRunBindings(tmp_path / "host.db") as bindings:
        bindings.bind(WireRun("t-1", "r-1", "h-1", "s-1"))
    with sqlite3.connect(tmp_path / "host.db") as conn:  # as an earlier release left it
        conn.execute("DROP INDEX harness_wire_runs_wire_thread")
        conn.execute("DROP INDEX harness_wire_runs_source_thread")
    with SqliteRunBindings(tmp_path / "host.db", read_only=True) as bindings:  # read-only: works without them
        assert bindings.runs_of("t-1") == (WireRun("t-1", "r-1", "h-1", "s-1"),)
    with SqliteRunBindings(tmp_path / "host.db") as bindings:
        assert bindings.runs_of("t-1") == (WireRun("t-1", "r-1", "h-1", "s-1"),)
    with sqlite3.connect(tmp_path / "host.db") as conn:
        plan = " ".join(str(r) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM harness_wire_runs WHERE wire_thread_id = 't-1'"))
    assert "harness_wire_runs_wire_thread" in plan


def test_a_runner_that_yields_something_else_than_a_source_item_ends_its_run_with_source_refused(
        tmp_path: Path) -> None:
    async def harness(run_input: RunAgentInput) -> AsyncIterator[Any]:
        items = counted(run_input.thread_id, run_input.run_id)
        yield items[0]
        yield {"type": "text", "content": "a dict, not an item"}

    server = AguiServer(harness, database=tmp_path / "host.db", synchronous="NORMAL")

    async def scenario() -> str:
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            return (await client.post(f"{base}/runs", json=body("t-1", "r-1"))).text

    last = sse(run(scenario()))[-1]
    assert (last["type"], last["code"]) == ("RUN_ERROR", "harness_agui.source_refused"), last
    assert "yielded a dict, not a source item" in last["message"]
