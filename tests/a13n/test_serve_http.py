# A real a13n-harness agent served over HTTP, as a user serves it: ``harness-agui serve
# examples.a13n_agent:agent`` in a child process (uvicorn on loopback, a SQLite database), and the official
# @ag-ui/client HttpAgent as the client (tests/node/http_conversation.mjs, http_cancel.mjs): no stand-ins.
# The agent is the packaged demo agent (harness_agui.a13n.demo: FunctionModel, offline).

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from test_serve_a13n import CONFIRM, NODE_DIR, example, started_calls, valid  # noqa: E402, F401 (example: a fixture)

from harness_agui.a13n import from_a13n, to_a13n  # noqa: E402
from harness_agui.a13n.demo import ESSAY_TOKENS, MODEL_NOTE  # noqa: E402
from harness_agui.a13n.runner import source_thread_id  # noqa: E402
from harness_agui.core.source import (  # noqa: E402
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    InputEvent,
)
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal  # noqa: E402
from harness_agui.host.bindings import SqliteRunBindings  # noqa: E402
from harness_agui.serve import AguiServer  # noqa: E402
from harness_agui.wire.codec import encode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class Served:
    """``harness-agui serve examples.a13n_agent:agent --port 0`` in a child process."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness_agui", "serve", "examples.a13n_agent:agent", "--port", "0", "--db",
             str(database), "--synchronous", "NORMAL"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        assert self.process.stderr is not None
        self.said = self.process.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", self.said)
        if found is None:
            self.process.kill()
            raise AssertionError(f"serve said: {self.said}{self.process.stderr.read()}")
        self.base = found.group(1)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def items(self, wire_run_id: str) -> list[Any]:
        """The journaled items of the Run its client names ``wire_run_id``."""
        with SqliteRunBindings(self.database, read_only=True) as bindings:
            bound = bindings.source_of(wire_run_id)
        assert bound is not None, wire_run_id
        with SqliteSourceJournal(self.database, read_only=True) as journal:
            cursor = journal.cursor(bound.source_run_id)

            async def read() -> list[Any]:
                return [i async for i in journal.read_prefix(bound.source_run_id, through=cursor)]

            return asyncio.run(read())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("served") / "host.db")
    yield server
    server.close()


def node_json(node: str, script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([node, str(NODE_DIR / script), *args], cwd=NODE_DIR, capture_output=True, text=True,
                          timeout=180)
    try:
        out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError(f"{script} printed no JSON (status {done.returncode}):\n{done.stdout}\n"
                             f"{done.stderr}") from None
    assert "error" not in out, out["error"]
    return out


def test_the_official_http_agent_holds_a_three_turn_conversation_with_harness_agui_serve(
        node: str, served: Served) -> None:  # noqa: F811
    outcome = node_json(node, "http_conversation.mjs", f"{served.base}/runs", json.dumps([
        {"say": "What's the weather in Lyon tomorrow?"},                 # 1: text, a tool and a subagent
        {"say": "Now deploy it."},                                        # 2: an approval ...
        {"approve": True},                                                #    ... answered through resume[]
        {"say": "Ask me to confirm the notes.", "tools": [CONFIRM], "toolResult": "Confirmed."},  # 3: client tool
    ]))
    thread = outcome["threadId"]
    assert str(uuid.UUID(thread)) == thread  # HttpAgent's default thread id
    runs = outcome["runs"]
    results = [served.items(r["runId"])[-1] for r in runs]
    assert all(isinstance(r, HarnessRunResultEvent) for r in results)
    assert [r.result.status for r in results] == ["completed", "suspended", "completed", "suspended", "completed"]
    outcomes = [json.loads(r["events"][-1]["outcome"]) if isinstance(r["events"][-1]["outcome"], str)
                else r["events"][-1]["outcome"] for r in runs]
    assert [o["type"] for o in outcomes] == ["success", "interrupt", "success", "success", "success"]  # frontend
    assert [i["reason"] for i in outcomes[1]["interrupts"]] == ["tool_approval"]  # tool: no interrupt
    [harness_thread] = {r.thread_id for r in results}  # one Harness Thread, given when the client's was created
    assert re.fullmatch(r"thread-[0-9a-f]{32}", harness_thread) and harness_thread != source_thread_id(thread)
    for run in runs:  # the client's ids name every Run on the wire
        started = run["events"][0]
        assert (started["type"], started["threadId"], started["runId"]) == ("RUN_STARTED", thread, run["runId"])

    messages = outcome["messages"]
    users = [m for m in messages if m["role"] == "user" and not m.get("subagentRunId")]  # the subagent's are its own
    assert [m["content"] for m in users] == ["What's the weather in Lyon tomorrow?", "Now deploy it.",
                                             "Ask me to confirm the notes."]  # each once: no echo
    assert len({m["id"] for m in messages}) == len(messages)
    calls = [c["id"] for m in messages for c in m.get("toolCalls") or ()]
    answers = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert calls and set(calls) == set(answers)  # every tool call answered
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("toolCalls") or ()}
    assert [answers[i] for i, n in names.items() if n == "deploy"] == ["deployed to production"]
    assert [answers[i] for i, n in names.items() if n == "confirm"] == ["Confirmed."]
    assert any(m.get("subagentRunId") and "traboules" in (m.get("content") or "") for m in messages)
    assert "Confirmed." in messages[-1]["content"] and outcome["pendingInterrupts"] == []

    # A second client that follows the first Run (a second device, a reload) sees the user's question too,
    # under the author's own message id, once.
    done = subprocess.run([node, str(NODE_DIR / "http_connect.mjs"), served.base, thread, runs[0]["runId"],
                           "events"], capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
    follower = json.loads(done.stdout)
    assert follower["ok"], follower["error"]
    asked = [m for m in follower["messages"] if m["role"] == "user" and not m.get("subagentRunId")]
    first_question = next(m for m in messages if m["role"] == "user")
    assert [(m["id"], m["content"]) for m in asked] == [(first_question["id"], first_question["content"])]
    assert not any(m["role"] == "user" for m in follower["messages"] if m.get("subagentRunId"))  # no fake bubble

    earlier: frozenset[str] = frozenset()
    for run in runs:
        valid(run["events"], earlier)
        earlier |= started_calls(run["events"])
        for item in served.items(run["runId"]):
            assert from_a13n(to_a13n(item)) == item


def test_abort_run_and_the_cancel_route_end_the_harness_run_mid_answer_with_no_further_model_call(
        node: str, served: Served) -> None:  # noqa: F811
    out = node_json(node, "http_cancel.mjs", served.base, "Write an essay about Lyon.")
    assert (out["deleteStatus"], out["deleteBody"]) == (202, {"cancelled": True})
    deadline = time.monotonic() + 10
    while not isinstance((items := served.items(out["runId"]))[-1], HarnessRunResultEvent):
        assert time.monotonic() < deadline, "the cancelled Run never ended"
        time.sleep(0.05)
    terminal = items[-1]
    assert terminal.result.status == "cancelled"
    cancelled_at = datetime.fromtimestamp(out["cancelledAt"] / 1000, UTC)
    took = (terminal.occurred_at - cancelled_at).total_seconds()
    print(f"\nthe cancelled terminal item came {took * 1000:.0f} ms after abortRun and the DELETE")
    requests = [i for i in items if isinstance(i, HarnessEvent) and isinstance(i.event, ExtensionEvent)
                and (i.event.payload or {}).get("type") == "model_request_started"]
    assert len(requests) == 1  # no further model call
    with SqliteDeliveryLog(served.database, read_only=True) as log:
        events = [json.loads(d.data) for d in log.replay(terminal.run_id)]
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
    # The model's stream was stopped mid-essay: how soon is for the figure printed above, not an assertion.
    assert 0 < sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events) < ESSAY_TOKENS


def test_the_sse_bytes_of_a_run_hold_neither_the_trusted_context_nor_a_display_false_tool_supplement(
        served: Served) -> None:
    secret = "account 7731-secret of the signed-in user"
    body = {"threadId": str(uuid.uuid4()), "runId": str(uuid.uuid4()), "state": {}, "tools": [],
            "forwardedProps": {}, "context": [{"description": "The account", "value": secret}],
            "messages": [{"id": "u-1", "role": "user", "content": "What's the weather in Lyon tomorrow?"}]}
    with httpx.Client(timeout=60) as client:
        raw = client.post(f"{served.base}/runs", json=body).content.decode("utf-8")
    items = served.items(body["runId"])
    hidden = [i.event.content for i in items if isinstance(i, HarnessEvent) and isinstance(i.event, InputEvent)
              and (i.event.metadata or {}).get("display") is False]
    sources = {(i.event.metadata or {}).get("source_id") for i in items if isinstance(i, HarnessEvent)
               and isinstance(i.event, InputEvent) and (i.event.metadata or {}).get("display") is False}
    assert {"a13n.agent-context", "ag-ui.context"} <= sources  # the Harness's trusted context, the client's
    assert any(MODEL_NOTE in encode(i) for i in items)  # the journal keeps the supplement
    assert "light rain" in raw and "TOOL_CALL_RESULT" in raw  # the tool's value reaches the client
    for text in [*hidden, MODEL_NOTE, secret]:
        assert isinstance(text, str) and text
        assert text not in raw and json.dumps(text)[1:-1] not in raw


def test_a_post_authorize_refuses_gets_403_before_any_event_and_a_preflight_from_an_allowed_origin_204(
        example: Any, tmp_path: Path) -> None:  # noqa: F811
    server = AguiServer.for_agent(example.agent, database=tmp_path / "host.db", cors_origins=["https://app.example"],
                                  authorize=lambda request: request.headers.get("authorization") == "Bearer ok")

    async def scenario() -> list[httpx.Response]:
        async with server.lifespan(), httpx.AsyncClient(transport=httpx.ASGITransport(server.app),
                                                        base_url="http://test") as client:
            body = {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}],
                    "state": {}, "tools": [], "context": [], "forwardedProps": {}}
            return [await client.post("/runs", json=body),
                    await client.options("/runs", headers={"Origin": "https://app.example",
                                                           "Access-Control-Request-Method": "POST",
                                                           "Access-Control-Request-Headers": "content-type"})]

    refused, preflight = asyncio.run(scenario())
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert "data:" not in refused.text
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    with SqliteSourceJournal(tmp_path / "host.db", read_only=True) as journal:
        assert journal.runs() == ()


def test_the_docs_app_serves_an_a13n_harness_agent_in_under_15_lines_under_uvicorn(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "serving-a13n.md").read_text(encoding="utf-8")
    start = text.index("# Serving an a13n-harness agent\n")
    (code,) = re.findall(r"```python\n(.*?)```", text[start:text.index("\n## ", start)], flags=re.DOTALL)
    assert len(code.strip().splitlines()) < 15
    (tmp_path / "app.py").write_text(code, encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "app:app", "--port", str(port)], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    body = {"threadId": str(uuid.uuid4()), "runId": "r-1", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": "u-1", "role": "user", "content": "Hi!"}]}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with httpx.Client(timeout=60) as client:
                    answer = client.post(f"http://127.0.0.1:{port}/runs", json=body,
                                         headers={"Origin": "http://localhost:5173"})
                break
            except httpx.ConnectError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr and server.stderr.read()
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(30)
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    assert answer.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert (events[0]["type"], events[0]["threadId"], events[0]["runId"]) == ("RUN_STARTED", body["threadId"], "r-1")
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["result"] == "Hello from a13n-harness."
    assert (tmp_path / "host.db").exists()


def test_a_second_run_on_a_thread_whose_run_is_still_running_is_refused_with_409(served: Served) -> None:
    thread = str(uuid.uuid4())

    def body(run_id: str, *texts: str) -> dict[str, Any]:
        return {"threadId": thread, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
                "messages": [{"id": f"u-{n}", "role": "user", "content": t} for n, t in enumerate(texts)]}

    with httpx.Client(timeout=60) as client:
        with client.stream("POST", f"{served.base}/runs", json=body("r-1", "Write an essay.")) as first:
            next(line for line in first.iter_lines() if "TEXT_MESSAGE_CONTENT" in line)  # it is under way
            busy = client.post(f"{served.base}/runs", json=body("r-2", "Write an essay.", "And another."))
        assert client.delete(f"{served.base}/threads/{thread}/runs/r-1").status_code == 202
    assert busy.status_code == 409 and busy.json()["error"] == "thread_busy"


def test_serve_demo_serves_the_packaged_a13n_harness_demo_agent(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", "--demo", "--port", "0"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        said = process.stderr.readline()
        assert "the a13n-harness demo agent (harness_agui.a13n.demo)" in said, said
        base = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", said).group(1)  # type: ignore[union-attr]
        body = {"threadId": str(uuid.uuid4()), "runId": "r-1", "state": {}, "tools": [], "context": [],
                "forwardedProps": {}, "messages": [{"id": "u-1", "role": "user", "content": "Weather in Lyon?"}]}
        with httpx.Client(timeout=60) as client:
            events = [json.loads(line[6:]) for line in client.post(f"{base}/runs", json=body).text.splitlines()
                      if line.startswith("data: ")]
    finally:
        process.kill()
        process.wait(30)
    assert events[-1]["type"] == "RUN_FINISHED" and "traboules" in events[-1]["result"]
    assert any(e["type"] == "SUBAGENT_STARTED" for e in events)


def test_a_retried_post_of_the_same_run_id_leaves_the_answer_as_the_model_said_it(node: str, served: Served) -> None:
    # The official client's connection drops mid-essay; it sends the same request again (runAgent({runId})):
    # its message list ends with the answer exactly as the model said it, once, and the question once.
    done = subprocess.run([node, str(NODE_DIR / "http_retry.mjs"), f"{served.base}/runs", "Write an essay."],
                          capture_output=True, text=True, timeout=120, cwd=NODE_DIR)
    try:
        out = json.loads(done.stdout.splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError(f"http_retry.mjs: {done.stdout}\n{done.stderr}") from None
    assert "error" not in out, out["error"]
    assert 0 < out["partBefore"] < len(out["finalText"])  # the first attempt broke mid-answer
    said = served.items(out["runId"])[-1].result.output
    answers = [m for m in out["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in answers] == [said]
    assert [m["content"] for m in out["messages"] if m["role"] == "user"] == ["Write an essay."]
