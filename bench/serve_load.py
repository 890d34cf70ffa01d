# The served path under load: a real server (uvicorn on loopback, in a child
# process), N Runs streaming at once at a model's pace, every frame read by a
# client, and what it costs the server.
#
# The simulated path is ``harness_agui.serve`` with a bench Harness (``serve``
# mode of this module): each Run is a user input, a model request, a text
# part, K text deltas and the completed result, one item every ``--pace``
# seconds (0.02 s: 50 items a second, a model's token rate), about 80 events a
# Run like the demo's. Each delta's text is the wall-clock time at which the
# Harness yielded it, so a client that receives its TEXT_MESSAGE_CONTENT knows
# the latency from the item's yield to the client's receipt of its (last, and
# only) event.
#
# What users run is a real a13n-harness agent served by ``harness-agui serve``
# (``a13n-full``, ``a13n-normal``): ``harness-agui serve bench_agent:agent``
# started in bench/agent/, whose pydantic-ai FunctionModel streams the same K
# stamped deltas at the same pace. ``a13n-bare`` is that agent with no server
# and no storage: a child process drives N ``agent.stream()`` Runs at once and
# measures its own CPU per item (a13n-harness's own cost, which this library
# does not control). ``pydantic-agui`` is pydantic-ai's own AG-UI server
# (``AGUIAdapter``, bench/agent/adapter_app.py) on a plain pydantic-ai agent
# with the same model: the stock alternative, which keeps nothing. The a13n
# configurations and ``pydantic-agui`` run under a Python 3.13
# interpreter that has a13n-harness (``--a13n-python``, else this one, else
# .venv-a13n of the checkout); the others under this one. Every child gets
# this tree first on PYTHONPATH, so the figures are of the code beside this
# file.
#
# The load generator (this process, asyncio, raw sockets) keeps N Runs in
# flight: each of N slots POSTs a Run (each on a Thread of its own), reads its
# stream to the end and POSTs the next one. After a warm-up it measures a
# window: events received in it, server CPU (utime + stime of the server
# processes, /proc/<pid>/stat, all their threads), and the latencies of the
# deltas received in it. ``--repeats R`` runs every (size, configuration) R
# times, interleaved (repeat 1 of every pair, then repeat 2, ...), and the
# table gives the medians.
#
# Configurations: a paced null server (``null``: Starlette and uvicorn streaming
# the same frames at the same pace, with no Harness, projection or storage: the
# floor the targets are stated against, measured in the same run), SQLite with
# synchronous NORMAL and FULL (one server process), PostgreSQL (a throwaway
# server, fsync off: the figures are of the kit and PostgreSQL's CPU, not of a
# disk) with two server processes sharing the database, each taking half the
# Runs (the PostgreSQL server's own CPU is reported beside the Python
# servers'), and the a13n ones above.
#
# ``--ttfe``: the time to first event instead. For each served configuration,
# ``--ttfe-starts`` times (interleaved): start the server (the time from the
# launch to the first 200 on /health), one Run (cold: the first Run after the
# start), then Runs one at a time (warm), ``--ttfe-runs`` warm Runs in all;
# each timed from the request's write to the first event (RUN_STARTED) and to
# the first TEXT_MESSAGE_CONTENT. ``a13n-bare`` likewise in fresh processes:
# from the ``agent.stream()`` call to its first item and its first text item.
#
# Results: bench/results/serve_load.md, serve_load.json, serve_load.png, and
# serve_ttfe.md, serve_ttfe.json.
#
#   .venv/bin/python -m bench.serve_load                       # the default table, a few minutes
#   .venv/bin/python -m bench.serve_load --runs 100,200 --pace 0.02 --seconds 8
#   .venv/bin/python -m bench.serve_load --only sqlite-full --runs 200
#   .venv/bin/python -m bench.serve_load --only sqlite-full,a13n-full,a13n-bare --runs 50,100 --pace 0.002 \
#       --repeats 3 --a13n-python .venv-a13n/bin/python
#   .venv/bin/python -m bench.serve_load --ttfe --only sqlite-full,a13n-full,a13n-bare,pydantic-agui --pace 0.002

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.util
import json
import math
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
AGENT_DIR = ROOT / "bench" / "agent"  # bench_agent.py: ``harness-agui serve bench_agent:agent`` from here
DELTAS = 75  # with the input, the request and the result: about 80 events a Run
_TICK = os.sysconf("SC_CLK_TCK")
SERVED = ("null", "sqlite-normal", "sqlite-full", "postgres-2", "a13n-normal", "a13n-full", "pydantic-agui")
CONFIGS = (*SERVED, "a13n-bare")
A13N = ("a13n-normal", "a13n-full", "a13n-bare", "pydantic-agui")  # run under the a13n interpreter


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
    from starlette.responses import Response, StreamingResponse
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

    async def health(request: Request) -> Response:
        return Response("ok")

    return Starlette(routes=[Route("/runs", runs, methods=["POST"]), Route("/health", health, methods=["GET"])])


# -- a13n-harness with no server (a13n-bare) -------------------------------------------------------------

def bench_agent(pace: float, deltas: int) -> Any:
    """bench/agent/bench_agent.py's agent, streaming ``deltas`` stamped deltas every ``pace`` seconds."""
    if str(AGENT_DIR) not in sys.path:
        sys.path.insert(0, str(AGENT_DIR))
    import bench_agent as module  # type: ignore[import-not-found, unused-ignore]

    return module.build(pace, deltas)


def stamp(item: Any) -> str | None:
    """The model's text in an a13n item that carries some (a text part's start or delta), else None."""
    event: Any = getattr(item, "event", None)
    kind = type(event).__name__
    if kind == "PartDeltaEvent":
        return getattr(event.delta, "content_delta", None)
    if kind == "PartStartEvent":
        return getattr(event.part, "content", None) if type(event.part).__name__ == "TextPart" else None
    return None


def bare(args: argparse.Namespace) -> None:
    """The a13n-bare child: the bench agent driven in this process, no server, no storage; one JSON line."""
    agent = bench_agent(args.pace, args.deltas)
    built = time.time() - args.launched if args.launched else None  # imports and the agent included
    if args.first_items:
        result = asyncio.run(bare_first_items(agent, args.first_items))
        result["ready_s"] = built
    else:
        result = asyncio.run(bare_load(agent, args.runs, args.warmup, args.seconds))
    print(json.dumps(result), flush=True)


async def bare_first_items(agent: Any, runs: int) -> dict[str, Any]:
    # ``runs`` Runs one at a time: the first is cold (the process's first), the others warm.
    firsts: list[dict[str, float | None]] = []
    for _ in range(runs):
        first = text = None
        started = time.perf_counter()
        async with agent.stream("Count.") as stream:
            async for item in stream:
                at = time.perf_counter() - started
                if first is None:
                    first = at
                if text is None and stamp(item) is not None:
                    text = at
        firsts.append({"first": first, "content": text})
    return {"cold": firsts[0], "warm": firsts[1:]}


async def bare_load(agent: Any, runs: int, warmup: float, seconds: float) -> dict[str, Any]:
    window = Window()
    stop_at = time.monotonic() + warmup + seconds
    window.start = time.monotonic() + warmup
    window.end = window.start + seconds

    async def one() -> None:
        count = 0
        try:
            async with agent.stream("Count.") as stream:
                async for item in stream:
                    count += 1
                    now = time.monotonic()
                    inside = window.start <= now < window.end
                    if inside:
                        window.events += 1
                        text = stamp(item)
                        if text:
                            window.latencies.append(time.time() - float(text.split(" ", 1)[0]))
        except Exception:
            window.errors += 1
            return
        if window.start <= time.monotonic() < window.end:
            window.runs += 1
            window.per_run.append(count)

    async def slot(k: int) -> None:
        await asyncio.sleep(k * 0.5 / runs)
        while time.monotonic() < stop_at:
            await one()

    cpu: dict[str, float] = {}

    async def meter() -> None:
        await asyncio.sleep(max(0.0, window.start - time.monotonic()))
        cpu["start"], cpu["main_start"] = process_cpu(os.getpid()), main_thread_cpu(os.getpid())
        await asyncio.sleep(max(0.0, window.end - time.monotonic()))
        cpu["end"], cpu["main_end"] = process_cpu(os.getpid()), main_thread_cpu(os.getpid())

    await asyncio.gather(meter(), *(slot(k) for k in range(runs)))
    return {"events": window.events, "cpu_s": cpu["end"] - cpu["start"],
            "main_cpu_s": cpu["main_end"] - cpu["main_start"], "latencies": window.latencies,
            "runs": window.runs, "per_run": window.per_run, "errors": window.errors}


# -- starting servers ---------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment, with this tree first on PYTHONPATH (an editable install elsewhere, or
    none, is not what is measured)."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def healthy(port: int) -> bool:
    """Whether GET /health answers 200 (``harness-agui serve`` listens before its app is made: a connection
    alone says nothing)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


class Server:
    """A server child process, started by ``command(port)`` in ``cwd``; ``ready_s`` is the time from its
    launch to the first 200 on /health."""

    def __init__(self, command: Callable[[int], list[str]], cwd: Path = ROOT, env: dict[str, str] | None = None,
                 python: str = sys.executable) -> None:
        self.port = free_port()
        self.python = python
        self.log = tempfile.TemporaryFile()  # a pipe nobody reads would block a talkative server
        launched = time.perf_counter()
        self.process = subprocess.Popen(command(self.port), cwd=cwd, env=env or child_env(),
                                        stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 60
        while not healthy(self.port):
            if self.process.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"the server exited: {self.log.read().decode(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the server did not answer /health")
            time.sleep(0.005)
        self.ready_s = time.perf_counter() - launched

    @classmethod
    def bench(cls, db: str, synchronous: str, args: argparse.Namespace) -> Server:
        """The bench Harness (or the null app) in ``serve`` mode of this module."""
        return cls(lambda port: [
            sys.executable, "-m", "bench.serve_load", "serve", "--db", db, "--port", str(port),
            "--synchronous", synchronous, "--pace", str(args.pace), "--deltas", str(args.deltas),
            *(("--loop", "asyncio", "--http", "h11") if args.stock else ()),
            *(("--stock-gc",) if args.stock_gc else ())])

    @classmethod
    def agent(cls, db: str, synchronous: str, args: argparse.Namespace) -> Server:
        """``harness-agui serve bench_agent:agent``, as a user starts it, under the a13n interpreter."""
        script = Path(args.a13n_python).parent / "harness-agui"
        cli = [str(script)] if script.exists() else [args.a13n_python, "-m", "harness_agui"]
        return cls(lambda port: [*cli, "serve", "bench_agent:agent", "--db", db, "--synchronous", synchronous,
                                 "--port", str(port), *(("--no-gc-tuning",) if args.stock_gc else ())],
                   cwd=AGENT_DIR, python=args.a13n_python,
                   env=child_env(HARNESS_AGUI_BENCH_PACE=str(args.pace), HARNESS_AGUI_BENCH_DELTAS=str(args.deltas)))

    @classmethod
    def adapter(cls, args: argparse.Namespace) -> Server:
        """pydantic-ai's own AG-UI server (bench/agent/adapter_app.py) on the same model, under uvicorn with
        its defaults, as its users start it, under the a13n interpreter (which has pydantic-ai)."""
        return cls(lambda port: [args.a13n_python, "-m", "uvicorn", "adapter_app:app", "--port", str(port),
                                 "--log-level", "warning", "--no-access-log"],
                   cwd=AGENT_DIR, python=args.a13n_python,
                   env=child_env(HARNESS_AGUI_BENCH_PACE=str(args.pace), HARNESS_AGUI_BENCH_DELTAS=str(args.deltas)))

    def cpu(self) -> float:
        return process_cpu(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def a13n_python(given: str | None) -> str | None:
    """A Python with a13n-harness and uvicorn: ``given``, else this one, else .venv-a13n of this checkout (or
    of the main worktree of its repository); None when none has them."""
    if given:
        return str(Path(given).absolute())  # children start in other folders (bench/agent/)
    candidates = [sys.executable, str(ROOT / ".venv-a13n" / "bin" / "python")]
    try:
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        candidates.append(str(Path(common).parent / ".venv-a13n" / "bin" / "python"))
    except (OSError, subprocess.CalledProcessError):
        pass
    for python in candidates:
        if Path(python).exists() and subprocess.run(
                [python, "-c", "import a13n_harness, pydantic_ai, uvicorn"], capture_output=True).returncode == 0:
            return python
    return None


def python_version(python: str) -> str:
    if python == sys.executable:
        return platform.python_version()
    return subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


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


def main_thread_cpu(pid: int) -> float:
    """utime + stime of a process's main thread (the event loop's, for uvicorn and the bare driver), in
    seconds: the rest of its CPU is its other threads' (a writer, ``asyncio.to_thread`` workers)."""
    with open(f"/proc/{pid}/task/{pid}/stat") as f:
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
        self.per_run: list[int] = []  # the events of each Run that ended in the window
        self.errors = 0


@dataclasses.dataclass(frozen=True)
class Firsts:
    """A Run's times from its request's write to its first event and its first TEXT_MESSAGE_CONTENT, and to
    the moment its Harness yielded its first item (``item``: an a13n Run's first CUSTOM event carries the
    item's ``occurred_at``, the server's wall clock, which is this machine's; None for other Runs), in
    seconds."""

    first: float | None
    content: float | None
    item: float | None = None


async def one_run(port: int, run_id: str, window: Window) -> Firsts:
    body = json.dumps({"threadId": f"thread-{run_id}", "runId": run_id, "state": {}, "messages": [
        {"id": "u1", "role": "user", "content": "Count."}], "tools": [], "context": [],
        "forwardedProps": {}}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = time.perf_counter()
    sent_wall = time.time()
    writer.write(b"POST /runs HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    first = content = item = None
    count = 0
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            window.errors += 1
            return Firsts(None, None)
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
                count += 1
                if first is None:
                    first = time.perf_counter() - sent
                if item is None and b'"name":"harness.extension.lifecycle"' in frame \
                        and b'"occurred_at":"' in frame:  # an a13n Run's (the bench Harness's clock is fake)
                    stamp_at = frame.find(b'"occurred_at":"') + 15
                    occurred = frame[stamp_at:frame.find(b'"', stamp_at)].decode()
                    item = datetime.fromisoformat(occurred).timestamp() - sent_wall
                if inside:
                    window.events += 1
                if b'"type":"TEXT_MESSAGE_CONTENT"' in frame:  # a stamped delta: the model's clock
                    if content is None:
                        content = time.perf_counter() - sent
                    if inside:
                        start = frame.find(b'"delta":"', at) + 9
                        try:
                            window.latencies.append(wall - float(frame[start:frame.find(b" ", start)]))
                        except ValueError:
                            pass
                elif b'"type":"RUN_FINISHED"' in frame or b'"type":"RUN_ERROR"' in frame:
                    finished = True
                    if b'"type":"RUN_ERROR"' in frame:
                        window.errors += 1
        if inside:
            window.runs += 1
            window.per_run.append(count)
    finally:
        writer.close()
    return Firsts(first, content, item)


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


def row(name: str, runs: int, args: argparse.Namespace, window: Window, cpu_s: float, python: str,
        pg_cpu_s: float | None = None, ready_s: list[float] | None = None,
        main_cpu_s: float | None = None) -> dict[str, Any]:
    latencies = sorted(window.latencies)
    result = {
        "config": name, "runs": runs, "pace": args.pace, "seconds": args.seconds, "events": window.events,
        "events_per_s": window.events / args.seconds,
        "items_per_s_offered": runs / args.pace,
        "cpu_us_per_event": 1e6 * cpu_s / window.events if window.events else None,
        "server_cpu_share": cpu_s / args.seconds,
        "main_thread_us_per_event": 1e6 * main_cpu_s / window.events if main_cpu_s is not None and window.events
        else None,
        "pg_cpu_us_per_event": 1e6 * pg_cpu_s / window.events if pg_cpu_s is not None and window.events else None,
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)] if latencies else None,
        "errors": window.errors,
        "runs_ended": window.runs,
        "events_per_run": statistics.median(window.per_run) if window.per_run else None,
        "python": python_version(python),
        "ready_s": ready_s or [],
    }
    print(f"{name:13} {runs:4} Runs: {result['events_per_s']:8.0f} events/s, "
          f"{result['cpu_us_per_event'] or 0:6.0f} us CPU/event ({result['main_thread_us_per_event'] or 0:.0f} in the "
          "main thread)"
          + (f" (+{result['pg_cpu_us_per_event']:.0f} PostgreSQL)" if pg_cpu_s is not None else "")
          + f", p50 {result['p50_ms'] or 0:5.1f} ms, p99 {result['p99_ms'] or 0:6.1f} ms, errors {window.errors}"
          + f", {result['events_per_run'] or 0:.0f} events/Run", flush=True)
    return result


def measure(name: str, servers: list[Server], runs: int, args: argparse.Namespace,
            pg_directory: str | None = None) -> dict[str, Any]:
    window = Window()
    cpu: dict[str, float] = {}

    async def scenario() -> None:
        task = asyncio.create_task(load([s.port for s in servers], runs, args.warmup, args.seconds, window))
        await asyncio.sleep(max(0.0, window.start - time.monotonic()) if window.start != float("inf")
                            else args.warmup)
        cpu["start"] = sum(s.cpu() for s in servers)
        cpu["main_start"] = sum(main_thread_cpu(s.process.pid) for s in servers)
        cpu["pg_start"] = postgres_cpu(pg_directory) if pg_directory else 0.0
        await asyncio.sleep(max(0.0, window.end - time.monotonic()))
        cpu["end"] = sum(s.cpu() for s in servers)
        cpu["main_end"] = sum(main_thread_cpu(s.process.pid) for s in servers)
        cpu["pg_end"] = postgres_cpu(pg_directory) if pg_directory else 0.0
        await task

    asyncio.run(scenario())
    return row(name, runs, args, window, cpu["end"] - cpu["start"], servers[0].python,
               cpu["pg_end"] - cpu["pg_start"] if pg_directory else None, [s.ready_s for s in servers],
               cpu["main_end"] - cpu["main_start"])


def run_sqlite(synchronous: str, runs: int, args: argparse.Namespace) -> dict[str, Any]:
    folder = tempfile.mkdtemp(prefix="serve-load-")
    try:
        server = Server.bench(os.path.join(folder, "host.db"), synchronous, args)
        try:
            return measure(f"sqlite-{synchronous.lower()}", [server], runs, args)
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_a13n(synchronous: str, runs: int, args: argparse.Namespace) -> dict[str, Any]:
    folder = tempfile.mkdtemp(prefix="serve-load-")
    try:
        server = Server.agent(os.path.join(folder, "host.db"), synchronous, args)
        try:
            return measure(f"a13n-{synchronous.lower()}", [server], runs, args)
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_adapter(runs: int, args: argparse.Namespace) -> dict[str, Any]:
    server = Server.adapter(args)
    try:
        return measure("pydantic-agui", [server], runs, args)
    finally:
        server.stop()


def run_bare(runs: int, args: argparse.Namespace) -> dict[str, Any]:
    done = subprocess.run([args.a13n_python, "-m", "bench.serve_load", "bare", "--runs", str(runs),
                           "--pace", str(args.pace), "--deltas", str(args.deltas), "--warmup", str(args.warmup),
                           "--seconds", str(args.seconds)],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True,
                          timeout=args.warmup + args.seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"a13n-bare failed: {done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    window = Window()
    window.events, window.latencies, window.runs = found["events"], found["latencies"], found["runs"]
    window.per_run, window.errors = found["per_run"], found["errors"]
    return row("a13n-bare", runs, args, window, found["cpu_s"], args.a13n_python, main_cpu_s=found["main_cpu_s"])


def run_null(runs: int, args: argparse.Namespace) -> dict[str, Any]:
    server = Server.bench("null", "OFF", args)
    try:
        return measure("null", [server], runs, args)
    finally:
        server.stop()


def run_postgres(runs: int, args: argparse.Namespace) -> dict[str, Any]:
    from harness_agui.testing.postgres import TemporaryPostgres

    with TemporaryPostgres(max_connections=300) as pg:
        url = pg.create_database(f"load{runs}")
        servers = [Server.bench(url, "FULL", args) for _ in range(2)]
        try:
            assert pg.directory is not None
            return measure("postgres-2", servers, runs, args, pg_directory=pg.directory)
        finally:
            for server in servers:
                server.stop()


def run_config(config: str, runs: int, args: argparse.Namespace) -> dict[str, Any]:
    match config:
        case "null":
            return run_null(runs, args)
        case "sqlite-normal" | "sqlite-full":
            return run_sqlite(config.split("-")[1].upper(), runs, args)
        case "postgres-2":
            return run_postgres(runs, args)
        case "a13n-normal" | "a13n-full":
            return run_a13n(config.split("-")[1].upper(), runs, args)
        case "a13n-bare":
            return run_bare(runs, args)
        case "pydantic-agui":
            return run_adapter(runs, args)
        case _:
            raise SystemExit(f"unknown configuration {config!r}")


def medians(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (configuration, Runs), in the order first run: the median of each figure over the repeats,
    and each repeat's CPU per event."""
    keys: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in results:
        keys.setdefault((r["config"], r["runs"]), []).append(r)
    out = []
    for rows in keys.values():
        summary = dict(rows[0])
        for field in ("events", "events_per_s", "cpu_us_per_event", "server_cpu_share", "pg_cpu_us_per_event",
                      "p50_ms", "p99_ms", "events_per_run", "main_thread_us_per_event"):
            values = [r[field] for r in rows if r[field] is not None]
            summary[field] = statistics.median(values) if values else None
        summary["errors"] = sum(r["errors"] for r in rows)
        summary["repeats"] = len(rows)
        summary["cpu_us_per_event_each"] = [r["cpu_us_per_event"] for r in rows]
        summary["ready_s"] = [t for r in rows for t in r["ready_s"]]
        out.append(summary)
    for r in out:  # a served a13n Run against the same Runs driven bare: a13n-harness's CPU per served event
        bare_row = next((b for b in out if b["config"] == "a13n-bare" and b["runs"] == r["runs"]), None)
        r["bare_us_per_event"] = r["over_bare_us"] = None
        if r["config"] in ("a13n-normal", "a13n-full") and bare_row and bare_row["cpu_us_per_event"] \
                and bare_row["events_per_run"] and r["events_per_run"] and r["cpu_us_per_event"]:
            # the bare agent's CPU per Run spread over the events the served Run delivers
            per_event = bare_row["cpu_us_per_event"] * bare_row["events_per_run"] / r["events_per_run"]
            r["bare_us_per_event"] = per_event
            r["over_bare_us"] = r["cpu_us_per_event"] - per_event
    return out


def report(results: list[dict[str, Any]], args: argparse.Namespace, started: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = medians(results)
    pythons = sorted({r["python"] for r in results})
    (RESULTS / "serve_load.json").write_text(json.dumps(
        {"machine": machine(), "started": started, "ended_load_average": load_average(),
         "command": command_line(), "repeats": args.repeats, "summary": summary, "results": results},
        indent=2) + "\n")
    ready = [t for r in summary if r["config"] in ("a13n-normal", "a13n-full") for t in r["ready_s"]]
    lines = [
        "# The served path under load",
        "",
        f"`{command_line()}` on {machine()} (the servers on Python {' and '.join(pythons)}: the a13n "
        f"configurations on the interpreter that has a13n-harness), started {started}, ended with load average "
        f"{load_average()}. A real server (uvicorn on "
        f"{_uvicorn_parts(args.stock)}, loopback), "
        f"N Runs at once, each on a Thread of its own; a simulated Run is {args.deltas + 4} items one every "
        f"{args.pace * 1000:g} ms (so N / {args.pace} items offered a second), about {args.deltas + 5} events, "
        "every frame read; "
        f"{args.warmup:g} s warm-up, then {args.seconds:g} s measured"
        + (f", {args.repeats} repeats interleaved (every row of repeat 1, then of repeat 2, ...): each figure is "
           "the median of the repeats, \"each repeat\" gives the CPU per event of every one"
           if args.repeats > 1 else "")
        + ". CPU: the server processes' "
        "utime + stime over the window (all threads), per event received by the clients. Latency: from "
        "the Harness's yield of an item (the model's, for a13n) to the client's receipt of its event. The load "
        "generator runs on the same 2 shared cores. `null` is the paced null server: Starlette and uvicorn "
        "streaming the same frames at the same pace with no Harness, projection or storage; \"x null\" is a "
        "row's server CPU per event over the null server's at the same number of Runs, in this run. "
        + ("The servers leave the garbage collector as it is (`--stock-gc`)." if args.stock_gc else
           "The servers call `harness_agui.serve.tune_collector()` after building the app, as `harness-agui "
           "serve` does."),
        "",
        "`a13n-full` and `a13n-normal` are `harness-agui serve bench_agent:agent --synchronous FULL` (NORMAL) "
        "with a real a13n-harness agent (bench/agent/bench_agent.py) whose FunctionModel streams the same "
        f"{args.deltas} stamped deltas at the same pace; `a13n-bare` is that agent driven in one process with "
        "`agent.stream()`, no server and no storage: its \"server CPU / event\" is its process CPU per item, "
        "its events/s items a second, its latency from the model's yield to the driver's receipt. "
        "\"minus a13n-bare\" is a served a13n row's CPU per event minus the bare agent's CPU per Run spread over "
        "the events the served Run delivers (the a13n-harness share, which this library does not control). "
        "\"main thread\" is the part of the CPU per event spent in the process's main thread (the event loop's); "
        "the rest is its other threads' (the journal writer, `asyncio.to_thread` workers). `pydantic-agui` is "
        "pydantic-ai's own AG-UI server (`AGUIAdapter`, bench/agent/adapter_app.py under uvicorn) on a plain "
        "pydantic-ai agent with the same model: no a13n-harness, and nothing kept (no journal, no delivery log, "
        "no recovery)."
        + (f" `harness-agui serve bench_agent:agent` answered its first /health in "
           f"{', '.join(f'{t:.2f}' for t in ready)} s after its launch." if ready else ""),
        "",
        "| database | Runs | items/s offered | events/s | server CPU / event | x null | PostgreSQL CPU / event | "
        "server CPU (cores) | p50 | p99 | errors | events / Run | main thread / event | minus a13n-bare "
        "| each repeat |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    null = {r["runs"]: r["cpu_us_per_event"] for r in summary if r["config"] == "null"}
    for r in summary:
        pg = f"{r['pg_cpu_us_per_event']:.0f} us" if r["pg_cpu_us_per_event"] is not None else ""
        floor = null.get(r["runs"])
        ratio = f"{r['cpu_us_per_event'] / floor:.1f}" if floor and r["cpu_us_per_event"] else ""
        over = f"{r['over_bare_us']:.0f} us" if r["over_bare_us"] is not None else ""
        each = "/".join(f"{x:.0f}" for x in r["cpu_us_per_event_each"] if x is not None)
        lines.append(f"| {r['config']} | {r['runs']} | {r['items_per_s_offered']:,.0f} | {r['events_per_s']:,.0f} "
                     f"| {r['cpu_us_per_event'] or 0:.0f} us | {ratio} | {pg} | {r['server_cpu_share']:.2f} "
                     f"| {r['p50_ms'] or 0:.1f} ms | {r['p99_ms'] or 0:.1f} ms | {r['errors']} "
                     f"| {r['events_per_run'] or 0:.0f} | {r['main_thread_us_per_event'] or 0:.0f} us | {over} "
                     f"| {each} |")
    (RESULTS / "serve_load.md").write_text("\n".join(lines) + "\n")
    chart(summary)


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


# -- the time to first event ---------------------------------------------------------------------------

def first_events(config: str, args: argparse.Namespace, warm: int) -> dict[str, Any]:
    """One start of ``config``: its launch to its first 200 on /health, then a cold Run and ``warm`` Runs,
    one at a time, each from its request's write to its first event and first TEXT_MESSAGE_CONTENT."""
    if config == "a13n-bare":
        done = subprocess.run([args.a13n_python, "-m", "bench.serve_load", "bare", "--first-items", str(warm + 1),
                               "--pace", str(args.pace), "--deltas", str(args.deltas), "--launched", repr(time.time())],
                              cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"a13n-bare failed: {done.stderr[-2000:]}")
        found = json.loads(done.stdout.strip().splitlines()[-1])
        return {"config": config, "ready_s": found["ready_s"], "cold": found["cold"], "warm": found["warm"]}
    folder = tempfile.mkdtemp(prefix="serve-ttfe-")
    try:
        db = os.path.join(folder, "host.db")
        match config:
            case "null":
                server = Server.bench("null", "OFF", args)
            case "sqlite-normal" | "sqlite-full":
                server = Server.bench(db, config.split("-")[1].upper(), args)
            case "a13n-normal" | "a13n-full":
                server = Server.agent(db, config.split("-")[1].upper(), args)
            case "pydantic-agui":
                server = Server.adapter(args)
            case _:
                raise SystemExit(f"--ttfe does not take {config!r}")
        try:
            async def runs() -> list[Firsts]:
                window = Window()
                return [await one_run(server.port, f"ttfe-{os.getpid()}-{time.time_ns()}", window)
                        for _ in range(warm + 1)]

            found_runs = asyncio.run(runs())
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    firsts = [dataclasses.asdict(f) for f in found_runs]
    return {"config": config, "ready_s": server.ready_s, "cold": firsts[0], "warm": firsts[1:]}


def ttfe(args: argparse.Namespace, configs: list[str], started: str) -> None:
    per_start = math.ceil(args.ttfe_runs / args.ttfe_starts)
    starts: list[dict[str, Any]] = []
    for start in range(args.ttfe_starts):
        for config in configs:
            found = first_events(config, args, per_start)
            found["start"] = start
            starts.append(found)
            print(f"{config:13} start {start}: ready {found['ready_s'] or 0:.3f} s, cold first "
                  f"{1000 * (found['cold']['first'] or 0):.1f} ms, warm first "
                  + ", ".join(f"{1000 * (w['first'] or 0):.1f}" for w in found["warm"]) + " ms", flush=True)
    summary: list[dict[str, Any]] = []
    for config in configs:
        mine = [s for s in starts if s["config"] == config]
        warm = [w for s in mine for w in s["warm"]][:args.ttfe_runs]
        cold = [s["cold"] for s in mine]
        ready = [s["ready_s"] for s in mine if s["ready_s"] is not None]

        def stats(values: list[float | None]) -> dict[str, float | None]:
            got = sorted(1000 * v for v in values if v is not None)
            if not got:
                return {"median_ms": None, "p90_ms": None, "n": 0}
            return {"median_ms": statistics.median(got), "p90_ms": got[min(len(got) - 1, int(0.9 * len(got)))],
                    "n": len(got)}

        summary.append({"config": config, "warm_first": stats([w["first"] for w in warm]),
                        "warm_item": stats([w.get("item") for w in warm] if config.startswith("a13n-") else []),
                        "warm_content": stats([w["content"] for w in warm]),
                        "cold_first": stats([c["first"] for c in cold]),
                        "cold_content": stats([c["content"] for c in cold]),
                        "ready_s": ready})
    for s in summary:
        print(f"{s['config']:13} warm first {s['warm_first']['median_ms'] or 0:.2f} ms "
              f"(p90 {s['warm_first']['p90_ms'] or 0:.2f}), content {s['warm_content']['median_ms'] or 0:.2f} ms, "
              f"item {s['warm_item']['median_ms'] or 0:.2f} ms; "
              f"cold first {s['cold_first']['median_ms'] or 0:.1f} ms; ready "
              + ", ".join(f"{t:.2f}" for t in s["ready_s"]) + " s", flush=True)
    if args.no_write:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serve_ttfe.json").write_text(json.dumps(
        {"machine": machine(), "started": started, "ended_load_average": load_average(), "command": command_line(),
         "summary": summary, "starts": starts}, indent=2) + "\n")

    def cell(s: dict[str, Any]) -> str:
        return "" if s["median_ms"] is None else f"{s['median_ms']:.1f} ms / {s['p90_ms']:.1f} ms"

    lines = [
        "# The time to first event",
        "",
        f"`{command_line()}` on {machine()}"
        + (f" (the a13n configurations on Python {python_version(args.a13n_python)})" if args.a13n_python else "")
        + f", started {started}, ended with load average {load_average()}. Each configuration started "
        f"{args.ttfe_starts} times, interleaved; after each start one Run (cold: the "
        f"first Run of the server), then {per_start} Runs one at a time (warm; {args.ttfe_runs} warm Runs in "
        f"all). A served Run is timed from the write of its request (on an open connection) to its first event "
        f"(RUN_STARTED) and to its first TEXT_MESSAGE_CONTENT; `a13n-bare` (the agent with no server, in a fresh "
        f"process each start) from the `agent.stream()` call to its first item and to its first text item "
        f"(the model's first delta). The model (or the bench Harness) waits {args.pace * 1000:g} ms before each "
        f"item (the bench Harness before each of its items, a13n's model before each delta). \"ready\" is the "
        "time from a server's launch to its first 200 on /health (for a13n, `harness-agui serve "
        "bench_agent:agent`, imports and agent included); for `a13n-bare`, from the launch of its process to "
        "the agent built (its imports included). \"first item yielded\": for a served a13n Run, from the "
        "request's write to the time a13n-harness stamped its first item with (its `occurred_at`, carried by "
        "the Run's first CUSTOM event; the same clock): what is before it is the server's work and a13n's "
        "start of the Run, what is after it the item's way to the client.",
        "",
        "| configuration | warm: first event, median / p90 | warm: first content | warm: first item yielded | "
        "cold: first event | cold: first content | ready (each start) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(f"| {s['config']} | {cell(s['warm_first'])} | {cell(s['warm_content'])} | {cell(s['warm_item'])} "
                     f"| {cell(s['cold_first'])} | {cell(s['cold_content'])} "
                     f"| {', '.join(f'{t:.2f} s' for t in s['ready_s'])} |")
    (RESULTS / "serve_ttfe.md").write_text("\n".join(lines) + "\n")


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def command_line() -> str:
    return "python -m bench.serve_load " + " ".join(
        a if not a.startswith("/") else os.path.relpath(a, ROOT) for a in sys.argv[1:])


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
    driver = sub.add_parser("bare")  # a13n-bare's child
    driver.add_argument("--runs", type=int, default=1)
    driver.add_argument("--pace", type=float, default=0.02)
    driver.add_argument("--deltas", type=int, default=DELTAS)
    driver.add_argument("--warmup", type=float, default=3.0)
    driver.add_argument("--seconds", type=float, default=8.0)
    driver.add_argument("--first-items", type=int, default=0, help="time this many Runs one at a time instead")
    driver.add_argument("--launched", type=float, help="the wall-clock time the parent launched this process at")
    parser.add_argument("--runs", default="50,100,200", help="comma-separated numbers of concurrent Runs")
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between a Run's items")
    parser.add_argument("--deltas", type=int, default=DELTAS)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--repeats", type=int, default=1, help="run every (size, configuration) this many times, "
                        "interleaved, and report the medians")
    parser.add_argument("--only", default="null,sqlite-normal,sqlite-full,postgres-2,a13n-full,a13n-bare",
                        help=f"comma-separated configurations, in the order run: {', '.join(CONFIGS)} (the a13n "
                             "ones are left out, with a note, when no Python with a13n-harness is found)")
    parser.add_argument("--a13n-python", help="the Python (3.13, with a13n-harness, pydantic-ai and uvicorn) for "
                        "the a13n configurations (default: this one if it has them, else .venv-a13n)")
    parser.add_argument("--ttfe", action="store_true", help="measure the time to first event instead of the load")
    parser.add_argument("--ttfe-runs", type=int, default=15, help="warm Runs per configuration (--ttfe)")
    parser.add_argument("--ttfe-starts", type=int, default=5, help="starts (cold Runs) per configuration (--ttfe)")
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
    if args.mode == "bare":
        bare(args)
        return
    configs = args.only.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configuration {', '.join(unknown)}: the configurations are {', '.join(CONFIGS)}")
    if any(c in A13N for c in configs):
        args.a13n_python = a13n_python(args.a13n_python)
        if args.a13n_python is None:
            print("no Python with a13n-harness (give --a13n-python): the a13n configurations are left out",
                  file=sys.stderr)
            configs = [c for c in configs if c not in A13N]
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") + f" (load average {load_average()})"
    if args.ttfe:
        ttfe(args, [c for c in configs if c != "postgres-2"], started)
        return
    results = []
    for repeat in range(args.repeats):
        for runs in (int(n) for n in args.runs.split(",")):
            for config in configs:
                result = run_config(config, runs, args)
                result["repeat"] = repeat
                results.append(result)
    if not args.no_write:
        report(results, args, started)


if __name__ == "__main__":
    main()
