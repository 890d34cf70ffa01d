# A long a13n Thread served over HTTP: what each small turn after a large first request costs.
#
# ``harness-agui serve large_agent:agent`` (a real a13n-harness agent whose FunctionModel answers "ok") runs
# in a child process on a fresh SQLite file. The first request carries ``--history`` earlier messages (user
# and assistant, alternating, ``--text`` characters each) and one new user message; then ``--turns`` small
# turns follow, each adding one user message (the client sends the whole conversation again, as AG-UI
# clients do). For each turn: the request's bytes, the database's growth (the file, its WAL checkpointed
# first), the turn's wall time, and the slowest ``/health`` answer while the turn ran (polled every 20 ms
# by a thread of this process).
#
#   .venv-a13n/bin/python -m bench.large_thread --history 30000 --turns 3
#
# Results: printed, and bench/results/large_thread.md with ``--write``.

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]

AGENT = '''
from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder
from pydantic_ai.messages import TextPart
from pydantic_ai.models.function import FunctionModel


async def answer(messages, info):
    yield "ok"

agent = HarnessBuilder().build(AgentDefinition(
    agent=AgentSpec(), output_type=str, model=FunctionModel(stream_function=answer, model_name="ok")))
'''


def database_bytes(path: Path) -> int:
    """The database's size once its WAL is checkpointed into it."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def conversation(history: int, text: int) -> list[dict[str, Any]]:
    pad = "x" * max(0, text - 12)
    return [{"id": f"h-{i}", "role": "user" if i % 2 == 0 else "assistant", "content": f"m{i:08d} {pad}"}
            for i in range(history)]


class Health(threading.Thread):
    """Polls /health every 20 ms; ``worst`` is the slowest answer since ``reset``."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.worst = 0.0
        self.stopped = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self.stopped.is_set():
                t = time.perf_counter()
                client.get(f"{self.base}/health")
                self.worst = max(self.worst, time.perf_counter() - t)
                time.sleep(0.02)


def post(base: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.Client(timeout=600) as client, client.stream("POST", f"{base}/runs", json=body) as answer:
        if answer.status_code != 200:
            answer.read()
            raise AssertionError(f"{answer.status_code}: {answer.text[:500]}")
        return [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--history", type=int, default=30000)
    parser.add_argument("--text", type=int, default=300)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="large-thread-"))
    (folder / "large_agent.py").write_text(AGENT)
    db = folder / "host.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(folder)])}
    server = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", "large_agent:agent", "--port", "0",
                               "--db", str(db), "--synchronous", "NORMAL"], cwd=folder, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    said = server.stderr.readline()
    found = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", said)
    assert found is not None, said + server.stderr.read()
    threading.Thread(target=server.stderr.read, daemon=True).start()
    base = found.group(1)
    health = Health(base)
    health.start()
    rows = []
    try:
        messages = conversation(args.history, args.text)
        for turn in range(args.turns + 1):
            messages.append({"id": f"u-{turn}", "role": "user", "content": f"turn {turn}"})
            body = {"threadId": "large", "runId": f"r-{turn}", "state": {}, "tools": [], "context": [],
                    "forwardedProps": {}, "messages": messages}
            size = len(json.dumps(body).encode())
            before = database_bytes(db)
            health.worst = 0.0
            t = time.perf_counter()
            events = post(base, body)
            took = time.perf_counter() - t
            worst = health.worst
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
            grown = database_bytes(db) - before
            answer = "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
            messages.append({"id": f"a-{turn}", "role": "assistant", "content": answer})
            rows.append({"turn": turn, "request_bytes": size, "db_growth_bytes": grown, "seconds": round(took, 3),
                         "worst_health_seconds": round(worst, 3)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        health.stopped.set()
        server.kill()
        server.wait(30)
    if args.write:
        out = ROOT / "bench" / "results" / "large_thread.md"
        lines = [f"history {args.history} messages of {args.text} characters; {args.turns} small turns after it",
                 "", "| turn | request bytes | database growth | turn time | slowest /health |",
                 "|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['turn']} | {r['request_bytes']:,} | {r['db_growth_bytes']:,} | {r['seconds']} s | "
                  f"{r['worst_health_seconds']} s |" for r in rows]
        out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
