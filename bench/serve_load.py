# The served path under load: a real server (uvicorn on loopback, in a child
# process), N Runs streaming at once at a model's pace, every frame read by a
# client, and what it costs the server.
#
# The server is ``harness_agui.serve`` with a bench Harness (``serve`` mode of
# this module): each Run is a user input, a model request, a text part, K text
# deltas and the completed result, one item every ``--pace`` seconds (0.02 s:
# 50 items a second, a model's token rate), about 80 events a Run like the
# demo's. Each delta's text is the wall-clock time at which the Harness yielded
# it, so a client that receives its TEXT_MESSAGE_CONTENT knows the latency from
# the item's yield to the client's receipt of its (last, and only) event.
#
# The load generator (this process, asyncio, raw sockets) keeps N Runs in
# flight: each of N slots POSTs a Run, reads its stream to the end and POSTs
# the next one. After a warm-up it measures a window: events received in it,
# server CPU (utime + stime of the server processes, /proc/<pid>/stat, all
# their threads), and the latencies of the deltas received in it.
#
# Configurations: a paced null server (``null``: Starlette and uvicorn streaming
# the same frames at the same pace, with no Harness, projection or storage: the
# floor the targets are stated against, measured in the same run), SQLite with
# synchronous NORMAL and FULL (one server process),
# and PostgreSQL (a throwaway server, fsync off: the figures are of the kit and
# PostgreSQL's CPU, not of a disk) with two server processes sharing the
# database, each taking half the Runs. The PostgreSQL server's own CPU is
# reported beside the Python servers'.
#
# Results: bench/results/serve_load.md, serve_load.json, serve_load.png.
#
#   .venv/bin/python -m bench.serve_load                       # the default table, a few minutes
#   .venv/bin/python -m bench.serve_load --runs 100,200 --pace 0.02 --seconds 8
#   .venv/bin/python -m bench.serve_load --only sqlite-full --runs 200

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DELTAS = 75  # with the input, the request and the result: about 80 events a Run
_TICK = os.sysconf("SC_CLK_TCK")


# -- the server side ---------------------------------------------------------------------------

def bench_runner(pace: float, deltas: int) -> Any:
    """The bench Harness: a Run of ``deltas`` stamped text deltas, one item every ``pace`` seconds."""
    from ag_ui.core import RunAgentInput

    from harness_agui.core.source import HarnessEvent, PartDeltaEvent, TextPartDelta
    from harness_agui.testing import SourceBuilder

    async def run(run_input: RunAgentInput) -> AsyncIterator[Any]:
        b = SourceBuilder(run_input.thread_id, run_input.run_id)
        b.user("Count, and say when.").request()
        b.text(0, [], id=f"{run_input.run_id}:text")  # start only: the result closes the part
        head = b.items[:-1]  # the part's end is left out
        for item in head:
            await asyncio.sleep(pace)
            yield item
        sequence = len(head)
        for _ in range(deltas):
            await asyncio.sleep(pace)
            now = time.time()
            yield HarnessEvent(thread_id=run_input.thread_id, run_id=run_input.run_id, sequence=sequence,
                               occurred_at=datetime.fromtimestamp(now, UTC),
                               event=PartDeltaEvent(index=0, delta=TextPartDelta(content_delta=f"{now:.6f} ")))
            sequence += 1
        end = SourceBuilder(run_input.thread_id, run_input.run_id, first_sequence=sequence)
        end.completed("counted", input_tokens=10, output_tokens=deltas)
        await asyncio.sleep(pace)
        yield end.items[0]

    return run


def serve(args: argparse.Namespace) -> None:
    import uvicorn

    from harness_agui.serve import create_app, tune_collector

    if args.db == "null":
        app = null_app(args.pace, args.deltas)
    else:
        app = create_app(bench_runner(args.pace, args.deltas), database=args.db, synchronous=args.synchronous)
    if not args.stock_gc:  # as ``harness-agui serve`` does
        tune_collector()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1,
                loop=args.loop, http=args.http)


def null_app(pace: float, deltas: int) -> Any:
    """The paced null server: per POSTed Run, the frames of a bench Run (the same count, sizes and stamped
    deltas) at the same pace, from a plain Starlette streaming response: no Harness, projection or storage."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def frames(thread_id: str, run_id: str) -> AsyncIterator[bytes]:
        ids = f'"threadId":"{thread_id}","runId":"{run_id}"'
        message = f'"messageId":"{run_id}:text"'
        yield b"retry: 3000\n\n"
        started = f'{{"type":"RUN_STARTED",{ids}}}'
        for head in (started, f'{{"type":"TEXT_MESSAGE_START",{message},"role":"assistant"}}'):
            await asyncio.sleep(pace)
            yield f"data: {head}\n\n".encode()
        for _ in range(deltas):
            await asyncio.sleep(pace)
            yield (f'data: {{"type":"TEXT_MESSAGE_CONTENT",{message},"delta":"{time.time():.6f} ",'
                   f'"timestamp":{int(time.time() * 1000)}}}\n\n').encode()
        await asyncio.sleep(pace)
        yield (f'data: {{"type":"TEXT_MESSAGE_END",{message}}}\n\n'
               f'data: {{"type":"RUN_FINISHED",{ids},"result":"counted"}}\n\n').encode()

    async def runs(request: Request) -> StreamingResponse:
        body = json.loads(await request.body())
        return StreamingResponse(frames(body["threadId"], body["runId"]), media_type="text/event-stream")

    return Starlette(routes=[Route("/runs", runs, methods=["POST"])])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, db: str, synchronous: str, pace: float, deltas: int, stock: bool = False,
                 stock_gc: bool = False) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.serve_load", "serve", "--db", db, "--port", str(self.port),
             "--synchronous", synchronous, "--pace", str(pace), "--deltas", str(deltas),
             *(("--loop", "asyncio", "--http", "h11") if stock else ()), *(("--stock-gc",) if stock_gc else ())],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not listen") from None
                time.sleep(0.05)

    def cpu(self) -> float:
        return process_cpu(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _uvicorn_parts(stock: bool) -> str:
    """What uvicorn's "auto" loop and HTTP parser take in a server started here."""
    def installed(name: str) -> bool:
        return importlib.util.find_spec(name) is not None

    loop = "uvloop" if not stock and installed("uvloop") else "the asyncio loop"
    http = "httptools" if not stock and installed("httptools") else "h11"
    return f"{loop} and {http}"


def process_cpu(pid: int) -> float:
    """utime + stime of a process (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def postgres_cpu(directory: str) -> float:
    """CPU of every process of the PostgreSQL server whose data directory is ``directory``."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            if b"postgres" not in cmdline:
                continue
            if os.path.realpath(f"/proc/{pid}/cwd") != os.path.realpath(os.path.join(directory, "data")) \
                    and directory.encode() not in cmdline:
                continue
            total += process_cpu(int(pid))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
    return total


# -- the load generator ---------------------------------------------------------------------------

class Window:
    """What the clients saw between ``start`` and ``end`` (monotonic clock)."""

    def __init__(self) -> None:
        self.start = float("inf")
        self.end = float("inf")
        self.events = 0
        self.latencies: list[float] = []
        self.runs = 0
        self.errors = 0


async def one_run(port: int, run_id: str, window: Window) -> None:
    body = json.dumps({"threadId": "thread-load", "runId": run_id, "state": {}, "messages": [
        {"id": "u1", "role": "user", "content": "Count."}], "tools": [], "context": [],
        "forwardedProps": {}}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /runs HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            window.errors += 1
            return
        pending = b""
        finished = False
        while not finished:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.strip(), 16)
            if size == 0:
                break
            chunk = await reader.readexactly(size + 2)
            now = time.monotonic()
            wall = time.time()
            pending += chunk[:-2]
            *frames, pending = pending.split(b"\n\n")
            inside = window.start <= now < window.end
            for frame in frames:
                at = frame.find(b"data: ")
                if at < 0:
                    continue
                if inside:
                    window.events += 1
                if b'"type":"TEXT_MESSAGE_CONTENT"' in frame and b':text"' in frame:  # a stamped delta
                    if inside:
                        start = frame.find(b'"delta":"', at) + 9
                        window.latencies.append(wall - float(frame[start:frame.find(b" ", start)]))
                elif b'"type":"RUN_FINISHED"' in frame or b'"type":"RUN_ERROR"' in frame:
                    finished = True
                    if b'"type":"RUN_ERROR"' in frame:
                        window.errors += 1
        if inside:
            window.runs += 1
    finally:
        writer.close()


async def load(ports: list[int], runs: int, warmup: float, seconds: float, window: Window) -> None:
    stop_at = time.monotonic() + warmup + seconds
    counter = iter(range(10**9))

    async def slot(k: int) -> None:
        port = ports[k % len(ports)]
        await asyncio.sleep(k * 0.5 / runs)  # spread the starts over half a second
        while time.monotonic() < stop_at:
            await one_run(port, f"run-{os.getpid()}-{next(counter)}", window)

    window.start = time.monotonic() + warmup
    window.end = window.start + seconds
    await asyncio.gather(*(slot(k) for k in range(runs)))


def measure(name: str, servers: list[Server], runs: int, args: argparse.Namespace,
            pg_directory: str | None = None) -> dict[str, Any]:
    window = Window()
    cpu: dict[str, float] = {}

    async def scenario() -> None:
        task = asyncio.create_task(load([s.port for s in servers], runs, args.warmup, args.seconds, window))
        await asyncio.sleep(max(0.0, window.start - time.monotonic()) if window.start != float("inf")
                            else args.warmup)
        cpu["start"] = sum(s.cpu() for s in servers)
        cpu["pg_start"] = postgres_cpu(pg_directory) if pg_directory else 0.0
        await asyncio.sleep(max(0.0, window.end - time.monotonic()))
        cpu["end"] = sum(s.cpu() for s in servers)
        cpu["pg_end"] = postgres_cpu(pg_directory) if pg_directory else 0.0
        await task

    asyncio.run(scenario())
    server_cpu = cpu["end"] - cpu["start"]
    latencies = sorted(window.latencies)
    result = {
        "config": name, "runs": runs, "pace": args.pace, "seconds": args.seconds, "events": window.events,
        "events_per_s": window.events / args.seconds,
        "items_per_s_offered": runs / args.pace,
        "cpu_us_per_event": 1e6 * server_cpu / window.events if window.events else None,
        "server_cpu_share": server_cpu / args.seconds,
        "pg_cpu_us_per_event": (1e6 * (cpu["pg_end"] - cpu["pg_start"]) / window.events
                                if pg_directory and window.events else None),
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)] if latencies else None,
        "errors": window.errors,
    }
    print(f"{name:12} {runs:4} Runs: {result['events_per_s']:8.0f} events/s, "
          f"{result['cpu_us_per_event'] or 0:6.0f} us CPU/event"
          + (f" (+{result['pg_cpu_us_per_event']:.0f} PostgreSQL)" if pg_directory else "")
          + f", p50 {result['p50_ms'] or 0:5.1f} ms, p99 {result['p99_ms'] or 0:6.1f} ms, errors {window.errors}",
          flush=True)
    return result


def run_sqlite(synchronous: str, runs: int, args: argparse.Namespace) -> dict[str, Any]:
    folder = tempfile.mkdtemp(prefix="serve-load-")
    try:
        server = Server(os.path.join(folder, "host.db"), synchronous, args.pace, args.deltas, args.stock, args.stock_gc)
        try:
            return measure(f"sqlite-{synchronous.lower()}", [server], runs, args)
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_null(runs: int, args: argparse.Namespace) -> dict[str, Any]:
    server = Server("null", "OFF", args.pace, args.deltas, args.stock, args.stock_gc)
    try:
        return measure("null", [server], runs, args)
    finally:
        server.stop()


def run_postgres(runs: int, args: argparse.Namespace) -> dict[str, Any]:
    from harness_agui.testing.postgres import TemporaryPostgres

    with TemporaryPostgres(max_connections=300) as pg:
        url = pg.create_database(f"load{runs}")
        servers = [Server(url, "FULL", args.pace, args.deltas, args.stock, args.stock_gc) for _ in range(2)]
        try:
            assert pg.directory is not None
            return measure("postgres-2", servers, runs, args, pg_directory=pg.directory)
        finally:
            for server in servers:
                server.stop()


def report(results: list[dict[str, Any]], args: argparse.Namespace, started: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serve_load.json").write_text(json.dumps({"machine": machine(), "started": started,
                                                         "results": results}, indent=2) + "\n")
    lines = [
        "# The served path under load",
        "",
        f"`python -m bench.serve_load` on {machine()}, started {started}. A real server (uvicorn on "
        f"{_uvicorn_parts(args.stock)}, loopback), "
        f"N Runs at once, each {args.deltas + 4} items one every {args.pace * 1000:.0f} ms (so N / "
        f"{args.pace} items offered a second), about {args.deltas + 5} events each, every frame read; "
        f"{args.warmup:.0f} s warm-up, then {args.seconds:.0f} s measured. CPU: the server processes' "
        "utime + stime over the window (all threads), per event received by the clients. Latency: from "
        "the Harness's yield of an item to the client's receipt of its event. The load generator runs on "
        "the same 2 shared cores. `null` is the paced null server: Starlette and uvicorn streaming the same "
        "frames at the same pace with no Harness, projection or storage; \"x null\" is a row's server CPU per "
        "event over the null server's at the same number of Runs, in this run. "
        + ("The servers leave the garbage collector as it is (`--stock-gc`)." if args.stock_gc else
           "The servers call `harness_agui.serve.tune_collector()` after building the app, as `harness-agui "
           "serve` does."),
        "",
        "| database | Runs | items/s offered | events/s | server CPU / event | x null | PostgreSQL CPU / event | "
        "server CPU (cores) | p50 | p99 | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    null = {r["runs"]: r["cpu_us_per_event"] for r in results if r["config"] == "null"}
    for r in results:
        pg = f"{r['pg_cpu_us_per_event']:.0f} us" if r["pg_cpu_us_per_event"] is not None else ""
        floor = null.get(r["runs"])
        ratio = f"{r['cpu_us_per_event'] / floor:.1f}" if floor and r["cpu_us_per_event"] else ""
        lines.append(f"| {r['config']} | {r['runs']} | {r['items_per_s_offered']:,.0f} | {r['events_per_s']:,.0f} "
                     f"| {r['cpu_us_per_event'] or 0:.0f} us | {ratio} | {pg} | {r['server_cpu_share']:.2f} "
                     f"| {r['p50_ms'] or 0:.1f} ms | {r['p99_ms'] or 0:.1f} ms | {r['errors']} |")
    (RESULTS / "serve_load.md").write_text("\n".join(lines) + "\n")
    chart(results)


def chart(results: list[dict[str, Any]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (the bench extra): no chart")
        return
    fig, (cpu_ax, p99_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for config in sorted({r["config"] for r in results}):
        rows = sorted((r for r in results if r["config"] == config), key=lambda r: r["runs"])
        xs = [r["runs"] for r in rows]
        cpu_ax.plot(xs, [r["cpu_us_per_event"] for r in rows], marker="o", label=config)
        p99_ax.plot(xs, [r["p99_ms"] for r in rows], marker="o", label=config)
    cpu_ax.set(xlabel="concurrent Runs", ylabel="server CPU per event (us)", title="CPU per delivered event")
    p99_ax.set(xlabel="concurrent Runs", ylabel="p99 item-to-client latency (ms)", title="p99 latency",
               yscale="log")
    for ax in (cpu_ax, p99_ax):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "serve_load.png", dpi=110)


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.serve_load")
    sub = parser.add_subparsers(dest="mode")
    server = sub.add_parser("serve")
    server.add_argument("--db", required=True)
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--synchronous", default="FULL")
    server.add_argument("--pace", type=float, default=0.02)
    server.add_argument("--deltas", type=int, default=DELTAS)
    server.add_argument("--loop", default="auto")
    server.add_argument("--http", default="auto")
    server.add_argument("--stock-gc", action="store_true")
    parser.add_argument("--runs", default="50,100,200", help="comma-separated numbers of concurrent Runs")
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between a Run's items")
    parser.add_argument("--deltas", type=int, default=DELTAS)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--only", default="null,sqlite-normal,sqlite-full,postgres-2")
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/results alone")
    parser.add_argument("--stock", action="store_true",
                        help="uvicorn's pure-Python parts (asyncio loop, h11) even where uvloop and httptools are "
                             "installed")
    parser.add_argument("--stock-gc", action="store_true",
                        help="leave the servers' garbage collector as it is (by default they call "
                             "harness_agui.serve.tune_collector(), as harness-agui serve does)")
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args)
        return
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") + \
        f" (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())})"
    results = []
    for runs in (int(n) for n in args.runs.split(",")):
        for config in args.only.split(","):
            if config == "null":
                results.append(run_null(runs, args))
            elif config == "sqlite-normal":
                results.append(run_sqlite("NORMAL", runs, args))
            elif config == "sqlite-full":
                results.append(run_sqlite("FULL", runs, args))
            elif config == "postgres-2":
                results.append(run_postgres(runs, args))
            else:
                raise SystemExit(f"unknown configuration {config!r}")
    if not args.no_write:
        report(results, args, started)


if __name__ == "__main__":
    main()
