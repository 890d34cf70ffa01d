# A long a13n Thread served over HTTP (issue 36, item 5): after a large first request, a small turn stores
# what it added, not the Thread again, and the server answers /health while the turn's heavy work (a
# HarnessState holding the whole history: converted, encoded, decoded) is under way, because none of it runs
# on the event loop.
#
# ``harness-agui serve large_app:agent`` runs in a child process, as a user starts it. The app module
# (imported by the server before it serves) wraps the functions that handle a whole Thread's history:
# each records, in a file, a call made on the event loop's thread with a large value (before the fix:
# the terminal result's from_a13n and encode, the journal's decoding of it, the request's parsing), and
# from_a13n of the second turn's result waits, once, for the test to say "go" after it has its /health
# answer: synchronisation, not a clock (the waits below only keep a broken build from hanging).

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

APP = '''
import asyncio, os, threading, time
from pathlib import Path
from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder, HarnessRunResultEvent
from pydantic_ai.models.function import FunctionModel

import harness_agui.host.journal as journal
import harness_agui.host.supervisor as supervisor
import harness_agui.serve as serve
import harness_agui.a13n.runner as serve_a13n
from harness_agui.core.source import HarnessRunResultEvent as SourceResult

FOLDER = Path(os.environ["LARGE_THREAD_FOLDER"])
LARGE = 64 * 1024


async def answer(messages, info):
    yield "ok"

agent = HarnessBuilder().build(AgentDefinition(
    agent=AgentSpec(), output_type=str, model=FunctionModel(stream_function=answer, model_name="ok")))


def on_loop():
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def record(what):
    if on_loop():
        with open(FOLDER / "on-loop.log", "a") as log:
            log.write(what + "\\n")


def wrap(module, name, large):
    original = getattr(module, name, None)
    if original is None:  # not used by this release
        return

    def wrapped(value, *args, **kwargs):
        if large(value):
            record(f"{module.__name__}.{name}")
        return original(value, *args, **kwargs)

    setattr(module, name, wrapped)


def gate():
    # The second turn's result, while it is converted: the test asks /health, then says "go".
    armed = FOLDER / "armed"
    if on_loop() or not armed.exists():
        return
    armed.unlink()
    (FOLDER / "heavy-started").touch()
    deadline = time.monotonic() + 120
    while not (FOLDER / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)


from_a13n = serve_a13n.from_a13n


def converting(native):
    if isinstance(native, HarnessRunResultEvent):
        record("from_a13n")
        gate()
    return from_a13n(native)


serve_a13n.from_a13n = converting
wrap(serve_a13n, "to_a13n", lambda item: True)
wrap(supervisor, "encode", lambda item: type(item) is SourceResult)
wrap(journal, "encode", lambda item: type(item) is SourceResult)
wrap(journal, "decode", lambda line: len(line) > LARGE)
wrap(journal, "from_json", lambda data: data.get("kind") == "result")
if hasattr(serve.AguiServer, "_run_input"):
    parse = serve.AguiServer._run_input
    serve.AguiServer._run_input = staticmethod(
        lambda raw: (record("_run_input") if len(raw) > LARGE else None, parse(raw))[1])
'''

HISTORY = 3000


class Server:
    """``harness-agui serve large_app:agent --port 0`` on a fresh SQLite file, in a child process."""

    def __init__(self, folder: Path) -> None:
        (folder / "large_app.py").write_text(APP)
        self.folder = folder
        self.database = folder / "host.db"
        env = {**os.environ, "LARGE_THREAD_FOLDER": str(folder),
               "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness_agui", "serve", "large_app:agent", "--port", "0", "--db",
             str(self.database), "--synchronous", "NORMAL"], cwd=folder, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        said = self.process.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", said)
        if found is None:
            self.process.kill()
            raise AssertionError(f"serve said: {said}{self.process.stderr.read()}")
        self.base = found.group(1)
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def stored_bytes(self) -> int:
        """The bytes of every journal line and delivered event the database holds."""
        with sqlite3.connect(f"file:{self.database}?mode=ro", uri=True) as conn:
            lines = conn.execute("SELECT coalesce(sum(length(CAST(line AS BLOB))), 0) "
                                 "FROM harness_source_items").fetchone()[0]
            events = conn.execute("SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) "
                                  "FROM harness_agui_deliveries").fetchone()[0]
        return int(lines) + int(events)

    def on_loop(self) -> list[str]:
        log = self.folder / "on-loop.log"
        return log.read_text().splitlines() if log.exists() else []

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(tmp_path)
    yield started
    started.close()


def post(base: str, messages: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    body = {"threadId": "long-thread", "runId": run_id, "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": messages}
    with httpx.Client(timeout=300) as client, client.stream("POST", f"{base}/runs", json=body) as answer:
        assert answer.status_code == 200, answer.read()
        return [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]


def wait_for(path: Path, thread: threading.Thread) -> bool:
    deadline = time.monotonic() + 120  # a broken build must not hang the suite
    while not path.exists():
        if not thread.is_alive() or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_small_turn_after_a_large_first_request_stores_the_turn_and_health_answers_during_its_heavy_work(
        server: Server) -> None:
    messages = [{"id": f"h-{i}", "role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * 300}
                for i in range(HISTORY)] + [{"id": "u-1", "role": "user", "content": "first"}]
    first = post(server.base, messages, "r-1")
    assert first[-1]["type"] == "RUN_FINISHED"
    first_bytes = len(json.dumps(messages))
    messages += [{"id": "a-1", "role": "assistant", "content": "ok"}, {"id": "u-2", "role": "user", "content": "next"}]

    before = server.stored_bytes()
    (server.folder / "armed").touch()
    events: list[Any] = []
    turn = threading.Thread(target=lambda: events.extend(post(server.base, messages, "r-2")), daemon=True)
    turn.start()
    started = wait_for(server.folder / "heavy-started", turn)
    with httpx.Client(timeout=60) as client:
        health = client.get(f"{server.base}/health").status_code if started else None
    (server.folder / "go").touch()
    turn.join(300)
    assert events and events[-1]["type"] == "RUN_FINISHED", events[-1:]
    added = server.stored_bytes() - before

    assert server.on_loop() == []  # nothing that handles the whole Thread ran on the event loop
    assert started and health == 200  # answered while the turn's result was being converted
    # The turn added two short messages; its Run's own items and events are a few kB. Before: the whole
    # history again, twice (the HarnessState's and the result's all_messages()), 2 MB here.
    assert added < 64 * 1024, f"a small turn stored {added} bytes after a first request of {first_bytes}"
    assert added < first_bytes // 16
