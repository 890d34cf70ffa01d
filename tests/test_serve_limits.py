"""What ordinary clients must not be able to do to a served Run: slow it down by following it, stall the
server by joining it late, or grow its memory by reading a long Run slowly; and what a child Run must not
cost its root. Each test prints the figures it measured (``pytest -s`` shows them).

The servers are tests/serve_host.py under uvicorn in a child process, as in tests/test_serve.py; the
followers are raw sockets (``Connection: close``, read to the end), as many as a busy Run may have.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
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

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
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


def test_a_runs_pace_does_not_depend_on_how_many_clients_follow_it(
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
    assert all(b'"type":"RUN_FINISHED"' in body for body in bodies)
    assert followed < 1.5 * alone


def test_late_joiners_are_caught_up_off_the_event_loop_and_other_requests_are_answered_meanwhile(
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
    assert max(latencies) < 0.5  # before: the catch-up ran on the event loop (1 s here, 9.3 s at 10,000 calls)


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
