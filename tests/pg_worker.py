"""A worker process of a multi-worker Host, for tests/test_pg_workers.py and bench/workers.py.

    python tests/pg_worker.py URL PORT [--max-runs N] [--ttl S] [--scan S]

It opens the PostgreSQL journal, delivery log and leases at URL, runs a ``Worker`` (which projects
the Runs no live worker holds and takes over those of a dead worker), and serves every Run's events to
any client over HTTP on 127.0.0.1:PORT: ``GET /runs/<run id>/events`` with an optional
``Last-Event-ID`` header answers with the Server-Sent Events of ``PostgresDeliveryLog.sse``, from the
event after that id to the Run's terminal event. It prints "ready" once it listens. It is killed
with SIGKILL by the tests; it never exits on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import urllib.parse

from harness_agui.host import ForeignEventIdError, UnknownEventIdError
from harness_agui.host.postgres import PostgresDeliveryLog, PostgresLeases, PostgresSourceJournal, Worker


async def main(url: str, port: int, max_runs: int, ttl: float, scan: float) -> None:
    asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(48))
    journal = PostgresSourceJournal(url, pool_size=8)
    deliveries = PostgresDeliveryLog(url, pool_size=16)
    leases = PostgresLeases(url, ttl=ttl)
    worker = Worker(journal, deliveries, leases, scan_interval=scan, max_runs=max_runs)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            _, path, _ = head[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
            run_id = urllib.parse.unquote(path.removeprefix("/runs/").removesuffix("/events"))
            try:
                frames = deliveries.sse(run_id, last_event_id=headers.get("last-event-id"))
            except (ForeignEventIdError, UnknownEventIdError) as e:
                writer.write(f"HTTP/1.1 400 Bad Request\r\nContent-Length: {len(str(e))}\r\n\r\n{e}".encode())
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n")
            async for frame in frames:
                writer.write(frame.encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, reuse_address=True)
    print("ready", flush=True)
    async with server:
        await worker.run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("port", type=int)
    parser.add_argument("--max-runs", type=int, default=1000)
    parser.add_argument("--ttl", type=float, default=5.0)
    parser.add_argument("--scan", type=float, default=0.2)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.port, args.max_runs, args.ttl, args.scan))
