"""harness_agui.serve end to end: uvicorn on loopback in a child process, real HTTP clients.

The demo server is started as a user would start it (``harness-agui serve
--demo``); scripted Harnesses that fail come from tests/serve_host.py. The
official ``@ag-ui/client`` HttpAgent (tests/node/http_agent.mjs) runs agents
through ``POST /runs``; reconnecting clients are httpx streams that send
``Last-Event-ID`` as a browser's EventSource would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import RunAgentInput
from serve_host import good_items
from test_node_client import NODE_DIR

from harness_agui import HarnessAguiObserver
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.testing import simulated_run
from harness_agui.wire.agui import agui_to_json

HERE = Path(__file__).parent
HTTP_AGENT = NODE_DIR / "http_agent.mjs"
REPLAY = NODE_DIR / "replay.mjs"
THREAD, RUN = "thread-web", "run-web-1"


# -- servers -----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process on a loopback port; ``kill()`` is SIGKILL, ``stop()`` SIGTERM."""

    def __init__(self, command: list[str], port: int, log: Path, env: dict[str, str] | None = None) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self._log = log.open("ab")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=self._log, cwd=HERE.parent,
                                        env=None if env is None else {**os.environ, **env})
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}:\n{log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise AssertionError(f"the server did not listen within 20 s:\n{log.read_text()}") from None
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


def demo_server(database: Path, port: int, pace: float = 0.005) -> Server:
    return Server([sys.executable, "-m", "harness_agui", "serve", "--demo", "--db", str(database), "--port",
                   str(port), "--pace", str(pace), "--synchronous", "NORMAL"], port, database.with_suffix(".log"))


def scripted_server(database: Path, port: int, scenario: str, *options: str) -> Server:
    return Server([sys.executable, str(HERE / "serve_host.py"), str(database), str(port), scenario, *options],
                  port, database.with_suffix(".log"))


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    """Every server a test starts, stopped at its end whatever happens."""
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


# -- clients -----------------------------------------------------------------------------

def run_input(thread_id: str = THREAD, run_id: str = RUN) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": run_id, "state": {}, "messages": [
        {"id": "u1", "role": "user", "content": "Will I need an umbrella in Lyon tomorrow?"}],
        "tools": [], "context": [], "forwardedProps": {}}


def frames(response: httpx.Response) -> Iterator[dict[str, str]]:
    """The SSE frames of a response, as {field: value}; a comment is {"comment": text}."""
    frame: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "":
            if frame:
                yield frame
            frame = {}
        elif line.startswith(":"):
            yield {"comment": line[1:].strip()}
        else:
            name, _, value = line.partition(":")
            frame[name] = value[1:] if value.startswith(" ") else value
    if frame:
        yield frame


def events_url(server: Server, thread_id: str = THREAD, run_id: str = RUN) -> str:
    return f"{server.base}/threads/{thread_id}/runs/{run_id}/events"


def read_events(response: httpx.Response) -> list[tuple[str, str]]:
    return [(f["id"], f["data"]) for f in frames(response) if "data" in f]


def projection(thread_id: str = THREAD, run_id: str = RUN) -> list[str]:
    observer = HarnessAguiObserver()
    for item in simulated_run(thread_id, run_id):
        observer.observe(item)
    return [agui_to_json(e) for e in observer.snapshot()]


def client_replay(node: str, lines: list[str]) -> dict[str, Any]:  # noqa: F811
    done = subprocess.run([node, str(REPLAY)], input="".join(line + "\n" for line in lines), capture_output=True,
                          text=True, timeout=60)
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def http_agent(node: str, url: str, thread_id: str = THREAD, run_id: str = RUN,  # noqa: F811
               ) -> subprocess.Popen[str]:
    return subprocess.Popen([node, str(HTTP_AGENT), url, thread_id, run_id], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def agent_result(process: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=60)
    try:
        out: dict[str, Any] = json.loads(stdout)
    except ValueError:
        pytest.fail(f"http_agent.mjs printed no JSON (status {process.returncode}):\n{stdout}\n{stderr}")
    return out


def number(sse_id: str) -> int:
    return int(sse_id.split(".")[0])


# -- the standard request flow -------------------------------------------------------------

def test_http_agent_runs_an_agent_through_post_runs_and_its_messages_equal_the_projections(
        tmp_path: Path, servers: list[Server], node: str) -> None:  # noqa: F811
    server = demo_server(tmp_path / "host.db", free_port())
    servers.append(server)
    out = agent_result(http_agent(node, f"{server.base}/runs"))
    assert out["ok"], out.get("error")
    expected = projection()
    assert [number(i) for i in out["ids"]] == list(range(1, len(expected) + 1))
    # What the client built from the HTTP stream is what it builds from the projection itself.
    assert out["newMessages"] == client_replay(node, expected)["messages"]
    assert out["result"] == json.loads(expected[-1])["result"]


def test_a_client_that_disconnects_cancels_nothing_and_the_run_can_be_followed_to_its_end(
        tmp_path: Path, servers: list[Server]) -> None:
    server = demo_server(tmp_path / "host.db", free_port(), pace=0.01)
    servers.append(server)
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            stream = frames(response)
            assert next(stream) == {"retry": "3000"}
            first = [next(stream) for _ in range(3)]
        assert [number(f["id"]) for f in first] == [1, 2, 3]
        with client.stream("GET", events_url(server)) as response:
            events = read_events(response)
    assert [d for _, d in events] == projection()
    assert json.loads(events[-1][1])["type"] == "RUN_FINISHED"


def connect(node: str, server: Server, mode: str, last_event_id: str | None = None) -> dict[str, Any]:  # noqa: F811
    done = subprocess.run([node, str(NODE_DIR / "http_connect.mjs"), server.base, THREAD, RUN, mode,
                           *([last_event_id] if last_event_id else [])], capture_output=True, text=True, timeout=60)
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_the_official_client_reconnects_by_posting_the_same_run_id_or_by_a_connect_that_gets_the_events_route(
        tmp_path: Path, servers: list[Server], node: str) -> None:  # noqa: F811
    server = demo_server(tmp_path / "host.db", free_port(), pace=0.02)
    servers.append(server)
    with httpx.Client(timeout=10) as client, client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
        seen = [f for f in frames(response) if "data" in f][:10]  # the client's POST breaks mid-run
    expected = projection()
    messages = client_replay(node, expected)["messages"]
    # 1. HttpAgent.runAgent() with the same runId (a fresh client, as after a page reload): the Run again,
    #    from RUN_STARTED, then live to its end; no second Run is started.
    again = agent_result(http_agent(node, f"{server.base}/runs"))
    assert again["ok"], again.get("error")
    assert [number(i) for i in again["ids"]] == list(range(1, len(expected) + 1))
    assert again["newMessages"] == messages
    # 2. connectAgent(): a stock HttpAgent implements no connect(), so it gets nothing ...
    stock = connect(node, server, "stock")
    assert stock["ok"] and stock["events"] == [] and stock["newMessages"] == []
    # ... and one whose connect() GETs the events route gets the Run through the client's own pipeline.
    events = connect(node, server, "events")
    assert events["ok"], events.get("error")
    assert events["newMessages"] == messages and events["events"][0]["type"] == "RUN_STARTED"
    # 3. A Last-Event-ID resumes after that event, which the client's verifier refuses (the first event must be
    #    RUN_STARTED): resuming mid-run is for SSE clients that keep their state (EventSource), not for connect().
    resumed = connect(node, server, "events", seen[-1]["id"])
    assert not resumed["ok"] and "First event must be 'RUN_STARTED'" in resumed["error"]
    with httpx.Client(timeout=10) as client, \
            client.stream("GET", events_url(server), headers={"Last-Event-ID": seen[-1]["id"]}) as response:
        rest = read_events(response)
    assert [f["data"] for f in seen] + [d for _, d in rest] == expected


def test_a_server_killed_mid_run_restarts_and_a_reconnecting_client_gets_every_event_exactly_once(
        tmp_path: Path, servers: list[Server], node: str) -> None:  # noqa: F811
    database, port = tmp_path / "host.db", free_port()
    expected = projection()
    received: list[tuple[str, str]] = []
    server = demo_server(database, port, pace=0.02)
    servers.append(server)
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
            for frame in frames(response):
                if "data" in frame:
                    received.append((frame["id"], frame["data"]))
                if len(received) == 25:
                    server.kill()  # SIGKILL, mid-run
                    break
        assert len(received) == 25 < len(expected)

        server = demo_server(database, port, pace=0.02)  # start-up recovery resumes the run
        servers.append(server)
        with client.stream("GET", events_url(server), headers={"Last-Event-ID": received[-1][0]}) as response:
            assert response.status_code == 200
            received += read_events(response)

    assert [number(i) for i, _ in received] == list(range(1, len(expected) + 1))
    assert [d for _, d in received] == expected
    assert json.loads(received[-1][1])["type"] == "RUN_FINISHED"
    assert client_replay(node, [d for _, d in received])["ok"]
    server.stop()
    with SqliteSourceJournal(database, read_only=True) as journal, \
            SqliteDeliveryLog(database, read_only=True) as log:
        assert journal.finished(RUN) and journal.cursor(RUN) == len(simulated_run()) - 1
        assert log.finished(RUN) and log.last_event_id(RUN) == len(expected)


# -- runs that cannot end normally ------------------------------------------------------------

class Follower(threading.Thread):
    """A client following a Run from ``after``, noting when each event arrived."""

    def __init__(self, url: str, *, method: str = "GET", body: Any = None, after: str | None = None) -> None:
        super().__init__(daemon=True)
        self.url, self.method, self.body, self.after = url, method, body, after
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.closed_at: float | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        headers = {} if self.after is None else {"Last-Event-ID": self.after}
        try:
            with httpx.Client(timeout=10) as client, \
                    client.stream(self.method, self.url, json=self.body, headers=headers) as response:
                for frame in frames(response):
                    if "data" in frame:
                        self.events.append((time.monotonic(), json.loads(frame["data"])))
            self.closed_at = time.monotonic()
        except BaseException as e:  # reported by the test
            self.error = e


def test_a_refused_item_ends_the_run_with_run_error_for_every_follower_within_a_second(
        tmp_path: Path, servers: list[Server], node: str) -> None:  # noqa: F811
    database = tmp_path / "host.db"
    server = scripted_server(database, free_port(), "refused")
    servers.append(server)
    poster = Follower(f"{server.base}/runs", method="POST", body=run_input())
    poster.start()
    deadline = time.monotonic() + 10
    while not poster.events and time.monotonic() < deadline:
        time.sleep(0.01)
    followers = [Follower(events_url(server)), Follower(events_url(server))]
    for follower in followers:
        follower.start()
    agent = http_agent(node, f"{server.base}/runs", THREAD, RUN)  # a second POST of the run: a follower too
    for follower in (poster, *followers):
        follower.join(10)
        assert not follower.is_alive(), "a follower still waits"
        assert follower.error is None, follower.error
        *good, (errored_at, last) = follower.events
        assert last["type"] == "RUN_ERROR"
        assert last["code"] == "harness_agui.projection_failed"
        assert "sequence 8" in last["message"] and "not open" in last["message"]
        assert [e["type"] for _, e in good][-1] == "TEXT_MESSAGE_END"
        good_at = good[-1][0] if follower is poster else poster.events[-2][0]
        assert errored_at - good_at < 1.0 + 0.4  # the Harness pauses 0.4 s before the refused item
        assert follower.closed_at is not None and follower.closed_at - errored_at < 1.0
    out = agent_result(agent)
    assert out["runError"]["code"] == "harness_agui.projection_failed"
    assert [number(i) for i in out["ids"]] == list(range(1, len(poster.events) + 1))
    with SqliteSourceJournal(database, read_only=True) as journal:
        assert journal.cursor(RUN) == 8  # the journal keeps every item, the refused one too
    with httpx.Client(timeout=5) as client:  # a client that comes later gets the same end, at once
        with client.stream("GET", events_url(server)) as response:
            later = read_events(response)
    assert [json.loads(d) for _, d in later] == [e for _, e in poster.events]


def test_a_harness_that_raises_ends_the_run_with_run_error_after_what_it_delivered(
        tmp_path: Path, servers: list[Server]) -> None:
    server = scripted_server(tmp_path / "host.db", free_port(), "raises")
    servers.append(server)
    poster = Follower(f"{server.base}/runs", method="POST", body=run_input())
    poster.start()
    poster.join(10)
    assert not poster.is_alive() and poster.error is None
    types = [e["type"] for _, e in poster.events]
    assert types[0] == "RUN_STARTED" and types[-2] == "TEXT_MESSAGE_END" and types[-1] == "RUN_ERROR"
    error = poster.events[-1][1]
    assert error["code"] == "harness_agui.harness_failed"
    assert "ConnectionResetError: the Harness went away" in error["message"]


def test_a_quiet_run_gets_keep_alive_comments_and_a_retry_hint(tmp_path: Path, servers: list[Server]) -> None:
    server = scripted_server(tmp_path / "host.db", free_port(), "stalls", "--keepalive", "0.2")
    servers.append(server)
    seen: list[dict[str, str]] = []
    with httpx.Client(timeout=5) as client, \
            client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
        for frame in frames(response):
            seen.append(frame)
            if sum("comment" in f for f in seen) == 2:
                break
    assert seen[0] == {"retry": "3000"}
    assert [f["comment"] for f in seen if "comment" in f] == ["keep-alive", "keep-alive"]
    good = HarnessAguiObserver()
    for item in good_items(RunAgentInput.model_validate(run_input())):
        good.observe(item)
    assert [f["data"] for f in seen if "data" in f] == [agui_to_json(e) for e in good.snapshot()]


def test_a_late_joiner_without_last_event_id_gets_the_catch_up_then_a_reconnect_continues_after_it(
        tmp_path: Path, servers: list[Server], node: str) -> None:  # noqa: F811
    server = scripted_server(tmp_path / "host.db", free_port(), "stalls", "--catch-up-after", "3")
    servers.append(server)
    good = HarnessAguiObserver()
    for item in good_items(RunAgentInput.model_validate(run_input())):
        good.observe(item)
    everything = [agui_to_json(e) for e in good.snapshot()]
    with httpx.Client(timeout=5) as client:
        with client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
            posted = []
            for frame in frames(response):  # the Run is under way: its events so far, then it stalls
                if "data" in frame:
                    posted.append(frame)
                if len(posted) == len(everything):
                    break
        with client.stream("GET", events_url(server)) as response:
            joined = []
            for frame in frames(response):
                if "data" in frame:
                    joined.append(frame)
                    if "id" in frame:
                        break
        with client.stream("GET", events_url(server)) as response, \
                client.stream("GET", events_url(server), headers={"Last-Event-ID": joined[-1]["id"]}) as again:
            assert next(f for f in frames(response) if "data" in f)["data"] == joined[0]["data"]
            assert response.status_code == again.status_code == 200
    types = [json.loads(f["data"])["type"] for f in joined]
    assert types[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and len(joined) < len(everything)
    assert [f for f in joined if "id" in f] == [joined[-1]] and joined[-1]["id"] == posted[-1]["id"]
    # Applied by the official client, the catch-up gives the messages of the whole stream.
    assert client_replay(node, [f["data"] for f in joined])["messages"] == client_replay(node, everything)["messages"]


# -- requests refused before a response starts ---------------------------------------------------

def test_bad_requests_get_a_json_error_at_once_and_never_hang(tmp_path: Path, servers: list[Server]) -> None:
    server = demo_server(tmp_path / "host.db", free_port())
    servers.append(server)
    with httpx.Client(timeout=5) as client:
        with client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
            events = read_events(response)
        tag = events[0][0].split(".")[1]
        other_tag = "0" * 8 if tag != "0" * 8 else "1" * 8

        def refused(status: int, method: str, url: str, **options: Any) -> dict[str, Any]:
            response = client.request(method, url, **options)
            assert response.status_code == status, response.text
            assert response.headers["content-type"] == "application/json"
            body: dict[str, Any] = response.json()
            assert body["error"] and body["message"]
            return body

        for bad in ("abc", "3", f"3.{other_tag}", f"{len(events) + 1}.{tag}", "-1", "3.5.x"):
            body = refused(400, "GET", events_url(server), headers={"Last-Event-ID": bad})
            assert body["error"] == "bad_last_event_id"
        refused(400, "GET", events_url(server), params={"last_event_id": "nonsense"})
        refused(404, "GET", events_url(server, run_id="run-nobody-started"))
        refused(404, "GET", events_url(server, thread_id="another-thread"))
        refused(422, "POST", f"{server.base}/runs", content=b"{not json", headers={"Content-Type": "application/json"})
        body = refused(422, "POST", f"{server.base}/runs", json={"threadId": "t"})
        assert {tuple(d["loc"]) for d in body["detail"]} >= {("runId",), ("messages",)}
        refused(409, "POST", f"{server.base}/runs", json=run_input(thread_id="another-thread"))

        with client.stream("GET", events_url(server), headers={"Last-Event-ID": events[40][0]}) as response:
            assert read_events(response) == events[41:]
        with client.stream("GET", events_url(server), params={"last_event_id": events[-1][0]}) as response:
            assert read_events(response) == []


def test_the_readme_app_serves_an_agent_to_the_http_agent(tmp_path: Path, servers: list[Server],
                                                          node: str) -> None:  # noqa: F811
    port = free_port()
    server = Server([sys.executable, str(HERE.parent / "examples" / "serve_app.py")], port, tmp_path / "app.log",
                    env={"PORT": str(port), "HARNESS_DB": str(tmp_path / "host.db")})
    servers.append(server)
    out = agent_result(http_agent(node, f"{server.base}/agui/runs"))
    assert out["ok"], out.get("error")
    assert out["result"] == "You said: Will I need an umbrella in Lyon tomorrow?"
    assert out["newMessages"][-1]["content"] == out["result"]


# -- the command line on a Host database ---------------------------------------------------------

def test_export_writes_a_run_of_the_database_as_wire_lines_that_replay_projects_again(
        tmp_path: Path, servers: list[Server]) -> None:
    database = tmp_path / "host.db"
    server = demo_server(database, free_port())
    servers.append(server)
    with httpx.Client(timeout=10) as client, \
            client.stream("POST", f"{server.base}/runs", json=run_input()) as response:
        delivered = [d for _, d in read_events(response)]
    exported = subprocess.run([sys.executable, "-m", "harness_agui", "export", str(database), "--run", RUN],
                              capture_output=True, text=True, timeout=60)
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == len(simulated_run())
    replayed = subprocess.run([sys.executable, "-m", "harness_agui", "replay", "-"], input=exported.stdout,
                              capture_output=True, text=True, timeout=60)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines() == delivered
    checked = subprocess.run([sys.executable, "-m", "harness_agui", "check", "-"], input=exported.stdout,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "no problems" in checked.stdout


def test_tune_collector_freezes_the_heap_and_only_ever_raises_the_young_threshold() -> None:
    # In a child interpreter: the collector's settings are the whole process's.
    script = """
import gc
from harness_agui.serve import tune_collector
first, second, third = gc.get_threshold()
tune_collector()
assert gc.get_threshold() == (max(10_000, first), second, third), gc.get_threshold()
assert gc.get_freeze_count() > 0
gc.set_threshold(50_000, second, third)
tune_collector(young=20_000)
assert gc.get_threshold() == (50_000, second, third), gc.get_threshold()
tune_collector(young=60_000)
assert gc.get_threshold()[0] == 60_000
for bad in (0, -1, True, 1.5, "10"):
    try:
        tune_collector(young=bad)
    except ValueError as e:
        assert "young must be an int >= 1" in str(e), e
    else:
        raise AssertionError(bad)
assert gc.get_threshold()[0] == 60_000
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
