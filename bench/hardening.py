# Figures of the served path's hardening, printed (issue #27's measures):
#
#   - followers: the wall time of a 300-item Run paced at 10 ms, as its POSTing
#     client sees it (first event to last), alone and with 100 and 500
#     raw-socket followers reading it to its end (a real server in a child
#     process, tests/serve_host.py);
#   - child Runs: what ``SqliteDeliveryLog.record`` costs per item when the
#     stream has 500 to 10,000 running child Runs (each record used to
#     rewrite the JSON of every child's cursor).
#
# Late joiners' catch-up and slow clients' replay are measured, with their
# figures printed, by tests/test_serve_limits.py.
#
#   .venv/bin/python -m bench.hardening

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from harness_agui.host import SqliteDeliveryLog
from harness_agui.testing import SourceBuilder

ROOT = Path(__file__).resolve().parent.parent
SERVE_HOST = ROOT / "tests" / "serve_host.py"
BODY = {"state": {}, "messages": [{"id": "u1", "role": "user", "content": "Count."}], "tools": [], "context": [],
        "forwardedProps": {}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def raw_get(port: int, path: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
    try:
        return await reader.read(-1)
    finally:
        writer.close()


async def posted(port: int, run_id: str, started: asyncio.Event) -> float:
    first = 0.0
    async with httpx.AsyncClient(timeout=300) as client, client.stream(
            "POST", f"http://127.0.0.1:{port}/runs", json={"threadId": "thread-b", "runId": run_id, **BODY}) as answer:
        async for line in answer.aiter_lines():
            if line.startswith("data:") and not first:
                first = time.monotonic()
                started.set()
    return time.monotonic() - first


async def followed(port: int, run_id: str, followers: int) -> float:
    started = asyncio.Event()
    poster = asyncio.create_task(posted(port, run_id, started))
    await started.wait()
    bodies = await asyncio.gather(*(raw_get(port, f"/threads/thread-b/runs/{run_id}/events")
                                    for _ in range(followers)))
    assert all(b'"type":"RUN_FINISHED"' in body for body in bodies)
    return await poster


def followers() -> None:
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        server = subprocess.Popen([sys.executable, str(SERVE_HOST), os.path.join(folder, "host.db"), str(port), "paced",
                                   "--items", "300", "--pace", "0.01"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            alone = asyncio.run(followed(port, "run-alone", 0))
            print(f"300-item Run at 10 ms: {alone:.2f} s alone", flush=True)
            for count in (100, 500):
                wall = asyncio.run(followed(port, f"run-{count}", count))
                print(f"  with {count} followers: {wall:.2f} s (x{wall / alone:.2f})", flush=True)
        finally:
            server.kill()
            server.wait()


def child_runs() -> None:
    for count in (500, 1000, 2000, 4000, 10_000):
        with tempfile.TemporaryDirectory() as folder, \
                SqliteDeliveryLog(Path(folder) / "host.db", synchronous="OFF") as log:
            root = SourceBuilder("thread-root", "run-root").observation("start", 0)
            log.record(root.items[0], [], root_run_id="run-root")
            kids = [SourceBuilder(f"thread-{n}", f"kid-{n}") for n in range(count)]
            for kid in kids:
                kid.observation("started", 0)
                log.record(kid.items[-1], [], root_run_id="run-root")
            rounds = 2000
            steps = []
            for n in range(rounds):
                kid = kids[n % count]
                kid.observation("step", n)
                steps.append(kid.items[-1])
            began = time.perf_counter()
            for item in steps:
                log.record(item, [], root_run_id="run-root")
            spent = time.perf_counter() - began
        print(f"record() with {count:>6} running child Runs: {spent / rounds * 1e6:7.1f} us per item", flush=True)


def main() -> None:
    followers()
    child_runs()  # (to compare with the layout before per-child rows: git show 4606fb3 and run this there)


if __name__ == "__main__":
    main()
