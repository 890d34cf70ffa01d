"""Two ``harness-agui serve --demo --database postgresql://...`` processes on two ports share one
PostgreSQL database: a Run started through one is followed to its end through the other, every event
once and in order, with the ids the first one streamed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
from pg_server import fresh_database
from test_serve import (
    RUN,
    THREAD,
    Server,
    events_url,
    frames,
    free_port,
    projection,
    run_input,
)
from test_serve_hardening import _race


def scripted(database: str, log: Path, *arguments: str) -> Server:
    """tests/serve_host.py (a scripted Harness) on ``database``, at a free port."""
    port = free_port()
    return Server([sys.executable, str(Path(__file__).parent / "serve_host.py"), database, str(port), *arguments],
                  port, log)


def demo_server(database: str, port: int, log: Path) -> Server:
    return Server([sys.executable, "-m", "harness_agui", "serve", "--demo", "--database", database, "--port",
                   str(port), "--pace", "0.01"], port, log)


def test_a_run_started_through_one_server_is_followed_to_its_end_through_the_other(tmp_path: Path) -> None:
    database = fresh_database("serve")
    one = demo_server(database, free_port(), tmp_path / "one.log")
    two = demo_server(database, free_port(), tmp_path / "two.log")
    try:
        with httpx.Client(timeout=10) as client:
            with client.stream("POST", f"{one.base}/runs", json=run_input()) as response:
                assert response.status_code == 200
                first = next(f for f in frames(response) if "data" in f)  # the Run is under way on one
            with client.stream("GET", events_url(two, THREAD, RUN)) as response:
                assert response.status_code == 200
                followed = [f for f in frames(response) if "data" in f]  # to the terminal event: then it ends
            with client.stream("GET", events_url(one, THREAD, RUN)) as response:
                replayed = [f for f in frames(response) if "data" in f]
    finally:
        one.kill()
        two.kill()
    assert [f["data"] for f in followed] == projection()
    assert json.loads(followed[-1]["data"])["type"] == "RUN_FINISHED"
    assert followed[0] == first and [f["id"] for f in followed] == [f["id"] for f in replayed]
    assert [int(f["id"].split(".")[0]) for f in followed] == list(range(1, len(followed) + 1))


def test_a_server_killed_mid_run_is_taken_over_by_the_other_and_a_client_reconnecting_there_gets_the_rest(
        tmp_path: Path) -> None:
    database = fresh_database("takeover")
    one = Server([sys.executable, "-m", "harness_agui", "serve", "--demo", "--database", database, "--port",
                  str(port_one := free_port()), "--pace", "0.05"], port_one, tmp_path / "one.log")
    two = demo_server(database, free_port(), tmp_path / "two.log")
    try:
        with httpx.Client(timeout=20) as client:
            seen = []
            with client.stream("POST", f"{one.base}/runs", json=run_input()) as response:
                for frame in frames(response):
                    if "data" in frame:
                        seen.append(frame)
                    if len(seen) == 10:
                        one.kill()  # mid-run: its lease goes with its database session
                        break
            headers = {"Last-Event-ID": seen[-1]["id"]}
            with client.stream("GET", events_url(two, THREAD, RUN), headers=headers) as response:
                assert response.status_code == 200
                rest = [f for f in frames(response) if "data" in f]  # to the terminal event
    finally:
        one.kill()
        two.kill()
    everything = seen + rest
    assert [f["data"] for f in everything] == projection()
    assert [int(f["id"].split(".")[0]) for f in everything] == list(range(1, len(everything) + 1))
    assert json.loads(rest[-1]["data"])["type"] == "RUN_FINISHED"


def test_ids_postgresql_cannot_store_are_refused_with_422_as_on_sqlite(tmp_path: Path) -> None:
    database = fresh_database("nul")
    server = scripted(database, tmp_path / "server.log", "paced", "--items", "3", "--pace", "0")
    try:
        with httpx.Client(timeout=10) as client:
            for thread_id, run_id in (("thread\x00nul", "run-nul-1"), ("thread-nul", "run\x00nul")):
                answer = client.post(f"{server.base}/runs", content=json.dumps(run_input(thread_id, run_id)),
                                     headers={"Content-Type": "application/json"})
                assert answer.status_code == 422 and answer.json()["error"] == "bad_id"
            assert client.get(f"{server.base}/threads/t/runs/run%00nul/events").status_code == 422
            with client.stream("POST", f"{server.base}/runs", json=run_input("thread-ok", "run-ok")) as response:
                assert json.loads([f for f in frames(response) if "data" in f][-1]["data"])["type"] == "RUN_FINISHED"
    finally:
        server.kill()


def test_one_run_id_posted_to_two_servers_under_two_threads_at_once_gives_one_run_and_one_409(
        tmp_path: Path) -> None:
    database = fresh_database("race")
    one = scripted(database, tmp_path / "one.log", "paced", "--items", "5", "--pace", "0")
    two = scripted(database, tmp_path / "two.log", "paced", "--items", "5", "--pace", "0")
    try:
        for trial in range(10):
            outcomes = asyncio.run(_race(one.base, two.base, f"run-race-{trial}"))
            assert sorted(status for status, _ in outcomes) == [200, 409], outcomes
            (events,) = [events for status, events in outcomes if status == 200]
            assert len({e["threadId"] for e in events if "threadId" in e}) == 1
            assert events[-1]["type"] == "RUN_FINISHED"
    finally:
        one.kill()
        two.kill()


def test_runs_events_and_export_read_a_postgresql_database_by_its_url(tmp_path: Path) -> None:
    database = fresh_database("cli")
    server = scripted(database, tmp_path / "server.log", "paced", "--items", "5", "--pace", "0")
    try:
        with httpx.Client(timeout=10) as client, \
                client.stream("POST", f"{server.base}/runs", json=run_input("thread-cli", "run-cli")) as response:
            sent = [f for f in frames(response) if "data" in f]
    finally:
        server.kill()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness_agui", *args], capture_output=True, text=True,
                              timeout=60)

    runs = cli("runs", database)
    assert runs.returncode == 0, runs.stderr
    assert runs.stdout.splitlines()[1].split() == ["run-cli", "thread-cli", "run-cli", "thread-cli", "10",
                                                   str(len(sent)), "finished"]
    events = cli("events", database, "--run", "run-cli")
    assert events.returncode == 0, events.stderr
    assert events.stdout == "".join(f"id: {f['id']}\ndata: {f['data']}\n\n" for f in sent)
    exported = cli("export", database)
    assert exported.returncode == 0, exported.stderr
    replayed = subprocess.run([sys.executable, "-m", "harness_agui", "replay", "-"], input=exported.stdout,
                              capture_output=True, text=True, timeout=60)
    assert replayed.stdout.splitlines() == [f["data"] for f in sent]


def test_forty_runs_started_at_once_on_forty_threads_all_finish(tmp_path: Path) -> None:
    database = fresh_database("many")
    server = scripted(database, tmp_path / "server.log", "paced", "--items", "5", "--pace", "0.01")

    async def start_all() -> list[str]:
        async with httpx.AsyncClient(timeout=60) as client:
            async def one(n: int) -> str:
                async with client.stream("POST", f"{server.base}/runs",
                                         json=run_input(f"thread-{n}", f"run-{n}")) as response:
                    lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
                return str(json.loads(lines[-1][6:])["type"])

            return await asyncio.gather(*(one(n) for n in range(40)))

    try:
        assert asyncio.run(asyncio.wait_for(start_all(), 120)) == ["RUN_FINISHED"] * 40
    finally:
        server.kill()
