"""What a client can send the server that it must refuse or survive (issue #27, items 5, 8, 9, 11, 12 and 13),
over HTTP to a real server process (tests/serve_host.py under uvicorn) on SQLite; test_serve_postgres.py runs
the same on PostgreSQL. Every check is on the HTTP answer, so each ran against the server before these
limits existed too (the evidence is in the closing note of #27)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_serve import Server, frames, free_port, run_input, scripted_server, servers  # noqa: F401

MAX_ID_LENGTH = 512  # harness_agui.serve.MAX_ID_LENGTH, spelt out so the test reads the same before and after


def post(server: Server, body: Any, *, content: bytes | None = None) -> httpx.Response:
    with httpx.Client(timeout=30) as client:
        if content is not None:
            return client.post(f"{server.base}/runs", content=content, headers={"Content-Type": "application/json"})
        return client.post(f"{server.base}/runs", json=body)


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(f["data"]) for f in frames(response) if "data" in f]


def test_ids_longer_than_the_documented_limit_are_refused_with_422_and_nothing_is_stored(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "paced", "--items", "3", "--pace", "0")
    servers.append(server)
    for thread_id, run_id in (("t" * (MAX_ID_LENGTH + 1), "run-a"), ("thread-a", "r" * (MAX_ID_LENGTH + 1)),
                              ("thread-a", "r" * 5_000_000)):
        answer = post(server, run_input(thread_id, run_id))
        assert answer.status_code == 422, answer.text[:200]
        assert answer.json()["error"] == "id_too_long"
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{server.base}/runs", json=run_input("t" * MAX_ID_LENGTH, "r" * MAX_ID_LENGTH)) as ok:
        assert ok.status_code == 200
        assert events_of(ok)[-1]["type"] == "RUN_FINISHED"
    assert (tmp_path / "host.db").stat().st_size < 1_000_000


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read_whole(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "paced", "--items", "3", "--pace", "0")
    servers.append(server)
    body = run_input("thread-big", "run-big")
    body["forwardedProps"] = {"padding": "x" * (17 * 1024 * 1024)}
    answer = post(server, None, content=json.dumps(body).encode())
    assert answer.status_code == 413
    assert answer.json()["error"] == "body_too_large"

    def chunks() -> Any:  # no Content-Length: the limit holds as the body streams in
        data = json.dumps(body).encode()
        for start in range(0, len(data), 1 << 20):
            yield data[start:start + (1 << 20)]

    with httpx.Client(timeout=30) as client:
        streamed = client.post(f"{server.base}/runs", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413


def test_a_deeply_nested_body_is_refused_with_422_json_not_a_500(tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "paced", "--items", "3", "--pace", "0")
    servers.append(server)
    for nested in (b"[" * 100_000 + b"]" * 100_000,
                   json.dumps(run_input("thread-deep", "run-deep"))[:-1].encode()
                   + b', "state": ' + b'{"a": ' * 20_000 + b"1" + b"}" * 20_000 + b"}"):
        answer = post(server, None, content=nested)
        assert answer.status_code == 422, answer.text[:200]
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json()["error"] == "invalid_request"


def test_ids_a_database_cannot_store_are_refused_with_422(tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "paced", "--items", "3", "--pace", "0")
    servers.append(server)
    for thread_id, run_id in (("thread\x00nul", "run-nul-1"), ("thread-nul", "run\x00nul"),
                              ("thread-sur", "run-\ud800")):
        body = json.dumps(run_input(thread_id, run_id)).encode()
        answer = post(server, None, content=body)
        assert answer.status_code == 422, answer.text[:200]
        assert answer.json()["error"] == "bad_id"
    with httpx.Client(timeout=30) as client:
        followed = client.get(f"{server.base}/threads/thread-nul/runs/run%00nul/events")
    assert followed.status_code == 422


def test_a_run_id_holding_a_slash_is_followed_and_cancelled_through_its_percent_encoded_path(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "paced", "--items", "20", "--pace", "0.01")
    servers.append(server)
    thread_id, run_id = "team/42", "runs/2024/a"
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", f"{server.base}/runs", json=run_input(thread_id, run_id)) as posted:
            assert posted.status_code == 200
            posted_events = events_of(posted)
        path = "/threads/team%2F42/runs/runs%2F2024%2Fa"
        with client.stream("GET", f"{server.base}{path}/events") as followed:
            assert followed.status_code == 200
            assert events_of(followed) == posted_events
        assert posted_events[0]["runId"] == run_id and posted_events[-1]["type"] == "RUN_FINISHED"
        assert client.get(f"{server.base}/threads/team/42/runs/runs/2024/a/events").status_code == 404
        assert client.delete(f"{server.base}{path}").json() == {"cancelled": False}


async def _race(base_one: str, base_two: str, run_id: str) -> list[tuple[int, list[dict[str, Any]]]]:
    async def one(base: str, thread_id: str) -> tuple[int, list[dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=60) as client, client.stream(
                "POST", f"{base}/runs", json=run_input(thread_id, run_id)) as response:
            body = await response.aread()
        if response.status_code != 200:
            return response.status_code, []
        lines = [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]
        return 200, [json.loads(line) for line in lines]

    return await asyncio.gather(one(base_one, "thread-one"), one(base_two, "thread-two"))


@pytest.mark.parametrize("processes", [1, 2])
def test_two_simultaneous_posts_of_one_run_id_under_two_threads_give_one_run_and_one_409(
        tmp_path: Path, servers: list[Server], processes: int) -> None:  # noqa: F811
    database = tmp_path / "host.db"
    first = scripted_server(database, free_port(), "paced", "--items", "5", "--pace", "0")
    servers.append(first)
    second = first if processes == 1 else scripted_server(database, free_port(), "paced", "--items", "5",
                                                          "--pace", "0")
    if second is not first:
        servers.append(second)
    for trial in range(20):
        run_id = f"run-race-{trial}"
        outcomes = asyncio.run(_race(first.base, second.base, run_id))
        assert sorted(status for status, _ in outcomes) == [200, 409], outcomes
        (events,) = [events for status, events in outcomes if status == 200]
        winner = events[0]["threadId"]
        assert {e.get("threadId", winner) for e in events} == {winner}  # one Run, one Thread's events
        assert events[-1]["type"] == "RUN_FINISHED"


def test_a_runner_that_raises_system_exit_ends_its_run_and_the_server_goes_on(
        tmp_path: Path, servers: list[Server]) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "exits")
    servers.append(server)
    with httpx.Client(timeout=30) as client:
        for run_id in ("run-exit-1", "run-exit-2"):
            with client.stream("POST", f"{server.base}/runs", json=run_input("thread-exit", run_id)) as response:
                assert response.status_code == 200
                last = events_of(response)[-1]
            assert last["type"] == "RUN_ERROR" and last["code"] == "harness_agui.harness_failed"
            assert "SystemExit" in last["message"]
        assert server.process.poll() is None
        replayed = client.get(f"{server.base}/threads/thread-exit/runs/run-exit-1/events")
        assert replayed.status_code == 200 and "harness_agui.harness_failed" in replayed.text
