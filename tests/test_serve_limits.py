"""What ordinary clients must not be able to do to a served Run: hold it back by following it, stall the
server by joining it late, or grow its memory by reading a long Run slowly; and what a child Run must not
cost its root. The tests that serve over HTTP print the figures they measured (``pytest -s`` shows them);
what they assert holds on a loaded machine too: how fast is for the benchmarks (bench/serve_load.py), so
the claims about pace are checked here as what they rest on (the driver never waits for a follower, a
late joiner's catch-up is taken off the event loop), in process, with timeouts only as hang guards.

The servers are tests/serve_host.py under uvicorn in a child process, as in tests/test_serve.py; the
followers are raw sockets (``Connection: close``, read to the end), as many as a busy Run may have.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_host import tool_items
from test_serve import (  # noqa: F401  (servers: the fixture)
    RUN,
    THREAD,
    Server,
    events_url,
    frames,
    free_port,
    run_input,
    scripted_server,
    servers,
)
from test_supervisor import Host, a_run, collect, frames_of

from harness_agui import HarnessStreamEvent
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.host import followers as followers_module
from harness_agui.host.runner import CallableRun
from harness_agui.testing import SourceBuilder, projection_json


async def _raw_get(port: int, path: str, *, read: bool = True, pause: float = 0.0) -> bytes:
    """One GET over a raw socket, read to the end (``read``), or only its first bytes and then left
    unread for ``pause`` seconds before it is closed (a slow client)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".encode())
    try:
        if not read:
            first = await reader.read(4096)
            await asyncio.sleep(pause)
            return first
        return await reader.read(-1)
    finally:
        writer.close()


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _post_and_time(server: Server, run_id: str, started: threading.Event | None = None) -> tuple[float, int]:
    """POST a Run and read it to its end: (seconds from its first event to its last, events)."""
    first = last = 0.0
    count = 0
    with httpx.Client(timeout=120) as client, \
            client.stream("POST", f"{server.base}/runs", json=run_input(THREAD, run_id)) as response:
        assert response.status_code == 200
        for frame in frames(response):
            if "data" not in frame:
                continue
            count += 1
            last = time.monotonic()
            if count == 1:
                first = last
                if started is not None:
                    started.set()
    return last - first, count


def test_a_run_followed_by_a_hundred_clients_reaches_each_of_them_whole(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    followers = 100
    server = scripted_server(tmp_path / "host.db", free_port(), "paced", "--items", "300", "--pace", "0.01")
    servers.append(server)
    alone, events = _post_and_time(server, "run-alone")

    started = threading.Event()
    result: list[tuple[float, int]] = []
    poster = threading.Thread(target=lambda: result.append(_post_and_time(server, "run-followed", started)))
    poster.start()
    assert started.wait(10)

    async def follow_all() -> list[bytes]:
        path = f"/threads/{THREAD}/runs/run-followed/events"
        return await asyncio.gather(*(_raw_get(server.port, path) for _ in range(followers)))

    bodies = asyncio.run(asyncio.wait_for(follow_all(), 120))
    poster.join(120)
    followed, count = result[0]
    print(f"\n300-item Run at 10 ms: {alone:.2f} s alone, {followed:.2f} s with {followers} followers "
          f"(x{followed / alone:.2f})")
    assert count == events
    assert len(bodies) == followers
    assert all(b'"type":"RUN_FINISHED"' in body for body in bodies)


def test_late_joiners_of_a_long_live_run_are_answered_and_other_requests_meanwhile(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    calls = 2000
    server = scripted_server(tmp_path / "host.db", free_port(), "tools", "--items", str(calls),
                             "--catch-up-after", "100")
    servers.append(server)
    expected = len(projection_json(tool_items(THREAD, RUN, calls)))
    with httpx.Client(timeout=120) as client, \
            client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
        seen = 0
        for frame in frames(response):
            seen += "data" in frame
            if seen == expected:
                break

    async def scenario() -> tuple[list[float], list[bytes]]:
        latencies: list[float] = []
        done = asyncio.Event()

        async def probe() -> None:
            async with httpx.AsyncClient(timeout=60) as probe_client:
                while not done.is_set():
                    began = time.monotonic()
                    answer = await probe_client.get(events_url(server, run_id="run-nobody-started"))
                    assert answer.status_code == 404
                    latencies.append(time.monotonic() - began)
                    await asyncio.sleep(0.02)

        async def join() -> bytes:
            path = f"/threads/{THREAD}/runs/{RUN}/events"
            return await _raw_get(server.port, path, read=False, pause=0.0)

        prober = asyncio.create_task(probe())
        await asyncio.sleep(0.2)
        joined = await asyncio.gather(*(join() for _ in range(10)))
        await asyncio.sleep(0.5)
        done.set()
        await prober
        return latencies, joined

    latencies, joined = asyncio.run(asyncio.wait_for(scenario(), 120))
    print(f"\n10 late joiners of a live Run of {calls} tool calls ({expected} events): the slowest of "
          f"{len(latencies)} unrelated requests took {max(latencies) * 1000:.0f} ms")
    assert all(b"HTTP/1.1 200" in j for j in joined)
    assert latencies  # the unrelated requests were answered (each a 404) while the joiners were served


async def _held(items: list[HarnessStreamEvent], first: int,
                release: asyncio.Event) -> AsyncIterator[HarnessStreamEvent]:
    """``items``, the first ``first`` at once, the rest once ``release`` is set."""
    for n, item in enumerate(items):
        if n == first:
            await release.wait()
        yield item


def test_followers_that_stop_reading_do_not_hold_the_run_back(tmp_path: Path) -> None:
    items = a_run("run-unread", deltas=200)

    async def scenario() -> tuple[int, list[tuple[int, dict[str, Any]]]]:
        host = Host(tmp_path / "host.db")
        try:
            host.supervisor.start_run(CallableRun(lambda: _held(items, 3, release), thread_id="thread-s",
                                                  run_id="run-unread"))
            stalled = [host.supervisor.follow("run-unread") for _ in range(100)]
            for follower in stalled:  # each takes its first chunk, then is never read again
                await asyncio.wait_for(anext(follower), 10)
            release.set()
            await asyncio.wait_for(host.supervisor.wait("run-unread"), 30)  # the Run ended, unread
            for follower in stalled:
                await follower.aclose()
            whole = frames_of(await asyncio.wait_for(collect(host.supervisor.follow("run-unread")), 30))
            return len(stalled), whole
        finally:
            await host.close()

    release = asyncio.Event()
    stalled, whole = asyncio.run(scenario())
    assert stalled == 100
    assert [n for n, _ in whole] == list(range(1, len(whole) + 1))
    assert whole[-1][1]["type"] == "RUN_FINISHED"


def test_a_late_joiners_catch_up_is_taken_off_the_event_loop_which_serves_others_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken_in: list[int] = []
    taking = threading.Event()  # the catch-up has begun (in whatever thread takes it)
    answered = threading.Event()  # the event loop answered another request while it was being taken
    take = followers_module._take_catch_up

    def held_catch_up(observer: Any, tag: str) -> tuple[int, bytes]:
        taken_in.append(threading.get_ident())
        taking.set()
        # Taken on the event loop, this would wait for a request the loop cannot answer while it waits.
        assert answered.wait(30), "the event loop answered nothing while the catch-up was taken"
        return take(observer, tag)

    monkeypatch.setattr(followers_module, "_take_catch_up", held_catch_up)
    items = a_run("run-late", deltas=60)

    async def scenario() -> list[tuple[int, dict[str, Any]]]:
        host = Host(tmp_path / "host.db", catch_up_after=10)
        try:
            host.supervisor.start_run(CallableRun(lambda: _held(items, 40, release), thread_id="thread-s",
                                                  run_id="run-late"))
            async def past_the_threshold() -> None:
                while await host.supervisor.last_event_id("run-late") <= 10:
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(past_the_threshold(), 30)
            joiner = asyncio.ensure_future(collect(host.supervisor.follow("run-late", late_joiner=True)))
            assert await asyncio.to_thread(taking.wait, 30)
            # Another request, answered by the loop while the joiner's catch-up is being taken.
            assert await asyncio.wait_for(host.supervisor.last_event_id("run-late"), 10) > 10
            answered.set()
            release.set()
            return frames_of(await asyncio.wait_for(joiner, 30))
        finally:
            answered.set()
            release.set()
            await host.close()

    release = asyncio.Event()
    loop_threads: list[int] = []
    seen = asyncio.run(_on_loop_thread(scenario(), loop_threads))
    assert taken_in and loop_threads[0] not in taken_in
    assert seen[-1][1]["type"] == "RUN_FINISHED"


async def _on_loop_thread(coroutine: Any, threads: list[int]) -> Any:
    threads.append(threading.get_ident())
    return await coroutine


def _finished_run(database: Path, deltas: int) -> int:
    """A finished Run of ``deltas`` text deltas of 200 characters in ``database``; its event count."""
    b = SourceBuilder(THREAD, RUN)
    b.user("Write a long text.")
    b.request()
    b.text(0, [f"{n:06d}" + "x" * 194 for n in range(deltas)])
    b.completed("done")
    with SqliteSourceJournal(database, synchronous="OFF") as journal, \
            SqliteDeliveryLog(database, synchronous="OFF") as log:
        for item in b.items:
            journal.append(item)
        asyncio.run(project_run(RUN, journal, log))
        return log.last_event_id(RUN)


def test_slow_clients_replaying_a_long_finished_run_keep_the_servers_memory_bounded(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    database = tmp_path / "host.db"
    events = _finished_run(database, 20_000)
    server = scripted_server(database, free_port(), "stalls")
    servers.append(server)
    pid = server.process.pid
    with httpx.Client(timeout=10) as client, client.stream("GET", events_url(server)) as response:
        assert sum("data" in f for f in frames(response)) == events  # one whole replay, read at once
    before = _rss(pid)
    peak = before

    async def slow_clients() -> list[bytes]:
        path = f"/threads/{THREAD}/runs/{RUN}/events"
        return await asyncio.gather(*(_raw_get(server.port, path, read=False, pause=3.0) for _ in range(10)))

    sampling = True

    def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, _rss(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        firsts = asyncio.run(slow_clients())
    finally:
        sampling = False
        sampler.join()
    print(f"\n10 slow clients of a finished Run of {events} events: server RSS {before / 2**20:.0f} MB, "
          f"peak {peak / 2**20:.0f} MB (+{(peak - before) / 2**20:.1f} MB)")
    assert all(f.startswith(b"HTTP/1.1 200") for f in firsts)
    assert peak - before < 40 * 2**20


def _record_sql(log: SqliteDeliveryLog, database: Path, children: int) -> list[str]:
    """The SQL (with its values) of recording one more item of a child Run, in a stream where
    ``children`` child Runs have started."""
    root = SourceBuilder(THREAD, f"run-{children}")
    root.user("Delegate.")
    log.record(root.items[0], [], root_run_id=root.run_id)
    kids = [SourceBuilder(f"thread-kid-{n:06d}", f"kid-{children}-{n:06d}") for n in range(children)]
    for kid in kids:
        kid.observation("started", {})
        log.record(kid.items[-1], [], root_run_id=root.run_id)
    kids[0].observation("progress", {})
    statements: list[str] = []
    connection = log._db.conn()  # this thread's connection: the one record() uses here
    connection.set_trace_callback(statements.append)
    try:
        log.record(kids[0].items[-1], [], root_run_id=root.run_id)
    finally:
        connection.set_trace_callback(None)
    return statements


def test_recording_an_item_of_a_child_run_writes_nothing_that_grows_with_the_number_of_child_runs(
        tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    with SqliteDeliveryLog(database, synchronous="OFF") as log:
        few = _record_sql(log, database, 10)
        many = _record_sql(log, database, 1000)
    size = [sum(len(s) for s in few), sum(len(s) for s in many)]
    print(f"\none child item recorded: {size[0]} bytes of SQL with 10 child Runs, {size[1]} with 1000")
    assert len(few) == len(many)
    assert abs(size[1] - size[0]) < 64
