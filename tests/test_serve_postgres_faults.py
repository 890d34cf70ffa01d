"""PostgreSQL faults under two serving processes: every session terminated mid-run, then the database
server restarted. Healthy Runs must finish normally (no RUN_ERROR for a connection that came back), every
client's stream must carry every event once, in order, through the faults, and the leases must not
ping-pong between the servers.

The database server is this test's own (``TemporaryPostgres``), since it is restarted, and it is made
durable (fsync and synchronous commits on, unlike the suite's throwaway server): a restart of a server
that acknowledges commits before they reach its disk loses them, which no client of it can make up for.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from serve_host import paced_items
from test_serve import THREAD, Server, events_url, frames, free_port, run_input

from harness_agui.testing import projection_json
from harness_agui.testing.postgres import TemporaryPostgres

HERE = Path(__file__).parent
ITEMS, PACE = 400, 0.01


@pytest.fixture
def postgres() -> Any:
    with TemporaryPostgres(settings=[("fsync", "on"), ("synchronous_commit", "on")]) as pg:
        yield pg


def paced_server(database: str, port: int, log: Path) -> Server:
    return Server([sys.executable, str(HERE / "serve_host.py"), database, str(port), "paced", "--items",
                   str(ITEMS), "--pace", str(PACE)], port, log)


class Stream(threading.Thread):
    """A client reading one Run's SSE stream (POST or GET) to its end, reconnecting with its
    Last-Event-ID when the connection breaks."""

    def __init__(self, method: str, url: str, body: Any = None, *, follow_url: str | None = None) -> None:
        super().__init__(daemon=True)
        self.method, self.url, self.body, self.follow_url = method, url, body, follow_url
        self.frames: list[dict[str, str]] = []
        self.breaks: list[str] = []

    def run(self) -> None:
        method, url, body = self.method, self.url, self.body
        for _ in range(20):
            headers = {"Last-Event-ID": self.frames[-1]["id"]} if self.frames else {}
            try:
                with httpx.Client(timeout=60) as client, \
                        client.stream(method, url, json=body, headers=headers) as response:
                    for frame in frames(response):
                        if "data" in frame:
                            self.frames.append(frame)
                    return
            except httpx.HTTPError as e:
                self.breaks.append(f"{type(e).__name__}: {e}")
                if self.follow_url is not None:  # a POST whose stream broke follows the GET endpoint
                    method, url, body = "GET", self.follow_url, None
                time.sleep(0.1)


def tokens(url: str, runs: list[str]) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT run_id, token FROM harness_agui_leases WHERE run_id = ANY(%s)",
                            (runs,)).fetchall()
    return dict(rows)


def serve_runs(one: Server, two: Server, runs: list[str], during: Any = None) -> list[Stream]:
    streams = []
    for n, run_id in enumerate(runs):
        here, there = (one, two) if n % 2 == 0 else (two, one)
        streams.append(Stream("POST", f"{here.base}/runs", run_input(THREAD, run_id),
                              follow_url=events_url(there, THREAD, run_id)))
    for stream in streams:
        stream.start()
    time.sleep(0.5)
    for n, run_id in enumerate(runs):
        there = two if n % 2 == 0 else one
        follower = Stream("GET", events_url(there, THREAD, run_id))
        follower.start()
        streams.append(follower)
    if during is not None:
        during()
    for stream in streams:
        stream.join(90)
        assert not stream.is_alive(), "a client still waits"
    return streams


def test_terminated_sessions_and_a_restarted_database_end_no_healthy_run_and_leases_settle(
        postgres: TemporaryPostgres, tmp_path: Path) -> None:
    database = postgres.create_database("faults")
    one = paced_server(database, free_port(), tmp_path / "one.log")
    two = paced_server(database, free_port(), tmp_path / "two.log")
    try:
        calm = [f"run-calm-{n}" for n in range(4)]
        serve_runs(one, two, calm)
        fault_free = sum(tokens(database, calm).values())

        def faults() -> None:
            time.sleep(1.0)
            with psycopg.connect(postgres.url, autocommit=True) as admin:
                ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                      "WHERE datname = 'faults' AND pid <> pg_backend_pid()").fetchone()
            print(f"\nterminated {ended[0] if ended else 0} sessions")
            time.sleep(1.0)
            postgres.restart()
            print("restarted the database server")

        stormy = [f"run-storm-{n}" for n in range(4)]
        streams = serve_runs(one, two, stormy, during=faults)
        stormy_tokens = tokens(database, stormy)
    finally:
        one.kill()
        two.kill()
    print(f"lease tokens: {fault_free} for 4 Runs without faults, {sum(stormy_tokens.values())} with them "
          f"({stormy_tokens}); stream breaks: {sum(len(s.breaks) for s in streams)}")
    for n, stream in enumerate(streams):
        run_id = stormy[n % 4]
        expected = projection_json(paced_items(THREAD, run_id, ITEMS))
        assert [json.loads(f["data"])["type"] for f in stream.frames][-1] == "RUN_FINISHED", \
            (run_id, stream.frames[-1]["data"][:300])
        assert [f["data"] for f in stream.frames] == expected, run_id
        assert [int(f["id"].split(".")[0]) for f in stream.frames] == list(range(1, len(expected) + 1))
    assert sum(stormy_tokens.values()) <= 2 * fault_free
