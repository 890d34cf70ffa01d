# The conversation of test_serve_http.py's official-client test, through CopilotKit (issue 37): CopilotKit's
# runtime (@copilotkit/runtime, its v2 CopilotRuntime on its own Node listener) holds an @ag-ui/client HttpAgent
# pointed at `harness-agui serve examples.a13n_agent:agent`, and CopilotKit's client core (@copilotkit/core, what
# its React provider wraps) talks to that runtime: tests/node-copilotkit/conversation.mjs. The Node packages are
# installed on first use (npm ci from tests/node-copilotkit's package-lock.json); nothing here is skipped for
# want of node or npm.
#
# Expressed, and checked as a CopilotKit client receives them: a plain first turn whose Run calls a server tool
# and a subagent; a turn whose Run waits for an approval, answered through runAgent({resume: [...]}); a frontend
# tool (registered with addTool) that CopilotKit's core runs and answers with its tool message alone, in the
# follow-up Run it starts itself; and a second CopilotKit client on the same thread (connectAgent) that sees
# the user's questions.
#
# A retried request, as CopilotKit can say it: its core has no retry of its own, but stopAgent() (the runtime
# aborts its HttpAgent's request: harness-agui sees a dropped connection, and the Run goes on) and then
# runAgent({runId}) with the same runId send the same Run again through the runtime.
#
# Not expressed as the official-client test does it: the second client's catch-up. A CopilotKit client that
# connects to a thread is served from the runtime's own in-memory store (InMemoryAgentRunner.connect replays
# what the runtime recorded), never from harness-agui's connect route, so the follower here checks CopilotKit's
# replay of our events, not our catch-up (tests/node/http_connect.mjs checks that one). A dropped connection
# between the client and the runtime is not one either: the runtime's Run goes on without the client, and
# nothing in CopilotKit sends that request again.

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from test_serve_http import Served  # noqa: E402

from harness_agui.core.source import HarnessRunResultEvent  # noqa: E402

COPILOTKIT_DIR = Path(__file__).resolve().parents[1] / "node-copilotkit"
# CopilotKit's runtime and core send telemetry unless told not to; this test reaches nothing but loopback.
QUIET = {"COPILOTKIT_TELEMETRY_DISABLED": "true", "DO_NOT_TRACK": "1", "SCARF_ANALYTICS": "false"}


@pytest.fixture(scope="module")
def copilotkit() -> str:
    """The node executable, with tests/node-copilotkit's packages installed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed to run CopilotKit's runtime; neither may be missing")
    installed = COPILOTKIT_DIR / "node_modules" / "@copilotkit" / "runtime" / "package.json"
    with open(COPILOTKIT_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed.exists():
            done = subprocess.run([npm, "ci", "--prefix", str(COPILOTKIT_DIR)], capture_output=True, text=True,
                                  timeout=900, env={**os.environ, **QUIET})
            if done.returncode != 0:
                pytest.fail(f"npm ci in {COPILOTKIT_DIR} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return node


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("served") / "host.db")
    yield server
    server.close()


def converse(node: str, url: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    done = subprocess.run([node, str(COPILOTKIT_DIR / "conversation.mjs"), url, json.dumps(turns)],
                          cwd=COPILOTKIT_DIR, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **QUIET})
    try:
        out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError(f"conversation.mjs printed no JSON (status {done.returncode}):\n{done.stdout}\n"
                             f"{done.stderr}") from None
    return out


def text_of(events: list[dict[str, Any]]) -> dict[str, str]:
    """Each text message's text as its events carried it, in the order they began."""
    texts: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            texts.setdefault(event["messageId"], "")
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            texts[event["messageId"]] = texts.get(event["messageId"], "") + event["delta"]
    return texts


def test_a_copilotkit_client_through_copilotkits_runtime_holds_the_conversation_with_harness_agui_serve(
        copilotkit: str, served: Served) -> None:
    out = converse(copilotkit, f"{served.base}/runs", [
        {"say": "What's the weather in Lyon tomorrow?"},                 # 1: text, a server tool and a subagent
        {"say": "Now deploy it."},                                        # 2: an approval ...
        {"approve": True},                                                #    ... answered through resume[]
        {"say": "Ask me to confirm the notes.",                           # 3: a frontend tool, answered by its
         "tool": {"name": "confirm", "description": "Ask the user to confirm something.", "result": "Confirmed."}},
        {"follow": True},                                                 # a second client on the thread
    ])
    assert out["errors"] == []  # CopilotKit's core reported nothing: no refused event, no failed Run
    runs = out["runs"]
    results = [served.items(r["runId"])[-1] for r in runs]  # CopilotKit's runIds reach harness-agui unchanged
    assert all(isinstance(r, HarnessRunResultEvent) for r in results)
    assert [r.result.status for r in results] == ["completed", "suspended", "completed", "suspended", "completed"]
    outcomes = [r["events"][-1].get("outcome") for r in runs]
    assert [o["type"] for o in outcomes] == ["success", "interrupt", "success", "success", "success"]
    assert [i["reason"] for i in outcomes[1]["interrupts"]] == ["tool_approval"]
    assert out["pendingInterrupts"] == []
    for run in runs:
        started = run["events"][0]
        assert (started["type"], started["threadId"], started["runId"]) == ("RUN_STARTED", out["threadId"],
                                                                            run["runId"])

    messages = out["messages"]
    users = [m for m in messages if m["role"] == "user"]  # no fake bubble: a subagent's prompt is not the user's
    assert [m["content"] for m in users] == ["What's the weather in Lyon tomorrow?", "Now deploy it.",
                                             "Ask me to confirm the notes."]
    assert len({m["id"] for m in messages}) == len(messages)  # no message twice
    # The text as the model said it: each assistant message holds exactly what its events carried, once.
    said: dict[str, str] = {}
    for run in runs:
        said |= text_of(run["events"])
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert {m["id"]: m.get("content") or "" for m in assistants} == {i: t for i, t in said.items()
                                                                    if i in {m["id"] for m in assistants}}
    assert [m["content"] for m in assistants if m.get("subagentRunId")] == [
        "Its old town has covered passageways, the traboules."]
    assert assistants[-1]["content"] == "Here is what I found. confirm: Confirmed."
    calls = {c["id"]: c["function"]["name"] for m in messages for c in m.get("toolCalls") or ()}
    answers = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert calls and set(calls) == set(answers)  # every call answered, once
    assert sorted(calls.values()) == ["confirm", "delegate", "deploy", "weather"]
    assert [answers[i] for i, n in calls.items() if n in ("deploy", "confirm")] == ["deployed to production",
                                                                                     "Confirmed."]
    assert "light rain" in next(answers[i] for i, n in calls.items() if n == "weather")

    # A second CopilotKit client on the thread (a reload, a second device) sees the same conversation: the
    # user's questions under their own ids, once each, and no message the first client lacks.
    [follower] = out["followers"]
    followed = [(m["id"], m["role"], m.get("content")) for m in follower["messages"]]
    assert [(i, c) for i, r, c in followed if r == "user"] == [(m["id"], m["content"]) for m in users]
    assert len({i for i, _, _ in followed}) == len(followed)
    assert {i for i, _, _ in followed} <= {m["id"] for m in messages}


def test_a_copilotkit_client_that_stops_a_run_and_sends_its_run_id_again_gets_the_answer_as_the_model_said_it(
        copilotkit: str, served: Served) -> None:
    out = converse(copilotkit, f"{served.base}/runs", [{"say": "Write an essay.", "retry": 20}])
    assert out["errors"] == []
    [retried] = out["retried"]
    first, second = out["runs"]
    assert first["runId"] == second["runId"] == retried["runId"]
    assert first["events"][-1]["type"] == "RUN_ERROR"  # the stop: the client's own abort, as CopilotKit reports it
    assert second["events"][-1]["type"] == "RUN_FINISHED"
    said = served.items(retried["runId"])[-1].result.output
    assert 0 < len(retried["partBefore"]) < len(said)  # the first attempt broke mid-answer
    assert [m["content"] for m in out["messages"] if m["role"] == "assistant"] == [said]  # once, whole
    assert [m["content"] for m in out["messages"] if m["role"] == "user"] == ["Write an essay."]
    assert len({m["id"] for m in out["messages"]}) == len(out["messages"])
