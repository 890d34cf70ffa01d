# a13n-harness-ui 0.21, a Host of a13n-stream-protocol, run offline through six scenarios (a tool call
# retried, a subagent, an approval answered, a tool result with a supplement, two calls in one response, a
# cancelled Run; tools/harness_ui_transcript.py), once on a13n-stream-protocol itself and once with the compat
# package behind its name. With the compat package it stores the same display transcript (the DisplayFold
# items of its checkpoint and the transcript page it serves) and sends its clients the same live events (each
# AG-UI event with its envelope, in order), scenario by scenario.
#
# Offline, and shown to be: each driver runs with network_guard/ on PYTHONPATH (its sitecustomize refuses and
# records any name lookup or connection that leaves the machine, so an attempt is an error at once, not a
# time-out), with every proxy variable pointed at a closed local port, and, where `unshare -rn` works, in a
# network namespace of its own, which has no route out at all. One test leaves a13n-harness-ui's price-table
# update on and sees the guard catch it, so the guard is known to see what it is there for.
#
# `make test-harness-ui` runs this in a venv of its own (.venv-harness-ui); `make test` never collects it.

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a13n_harness_ui", reason="needs a13n-harness-ui 0.21: make test-harness-ui")

HERE = Path(__file__).resolve().parent
TOOL = HERE.parents[1] / "tools" / "harness_ui_transcript.py"
GUARD = HERE / "network_guard"
SCENARIOS = ("retry", "subagent", "approval", "supplement", "parallel", "cancel")
_CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens on it here


def _isolated() -> list[str]:
    """``unshare -rn`` (a user and network namespace: no interface but a loopback that is down) where it works."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True)
    return [unshare, "-rn"] if probe.returncode == 0 else []


def _offline(tmp: Path, *command: str, timeout: int = 900) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``command`` offline (see the module comment); what it printed, and the network attempts recorded."""
    log = tmp / "network.log"
    log.write_text("")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(GUARD), "HARNESS_UI_NETWORK_LOG": str(log),
           "NO_PROXY": "", "no_proxy": ""}
    env.update({name: _CLOSED_PORT for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                                                "https_proxy", "all_proxy")})
    done = subprocess.run([*_isolated(), *command], capture_output=True, text=True, timeout=timeout, env=env)
    return done, log.read_text()


def _drive(tmp: Path, *options: str) -> tuple[dict[str, Any], str]:
    out = tmp / "out.json"
    done, attempts = _offline(tmp, sys.executable, str(TOOL), *options, str(out))
    assert done.returncode == 0, done.stdout + done.stderr[-8000:]
    return json.loads(out.read_text()), attempts


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The six scenarios, each way: what the driver wrote, after checking that nothing tried the network."""
    found = {}
    for name, options in (("upstream", ()), ("compat", ("--compat",))):
        written, attempts = _drive(tmp_path_factory.mktemp(name), *options)
        assert attempts == "", f"the {name} driver tried to reach the network:\n{attempts}"
        found[name] = written
    assert found["upstream"]["a13n_stream_protocol"] == "a13n_stream_protocol"
    assert found["compat"]["a13n_stream_protocol"] == "harness_agui.compat.a13n_stream_protocol"
    return {name: written["scenarios"] for name, written in found.items()}


def _differences(theirs: Any, ours: Any) -> str:
    return "\n".join(difflib.unified_diff(json.dumps(theirs, indent=1, sort_keys=True).splitlines(),
                                          json.dumps(ours, indent=1, sort_keys=True).splitlines(),
                                          "a13n-stream-protocol", "harness_agui.compat", n=6, lineterm=""))


def test_the_network_guard_refuses_a_connection_out_at_once_and_records_it(tmp_path: Path) -> None:
    reach = "import socket; socket.create_connection(('pypi.org', 443), timeout=600)"
    done, attempts = _offline(tmp_path, sys.executable, "-c", reach, timeout=60)
    assert done.returncode != 0 and "network guard: socket.getaddrinfo to 'pypi.org' refused" in done.stderr
    assert attempts.startswith("socket.getaddrinfo 'pypi.org'")
    proxied = "import urllib.request; urllib.request.urlopen('http://pypi.org/simple/', timeout=600)"
    done, attempts = _offline(tmp_path, sys.executable, "-c", proxied, timeout=60)  # through the proxy set
    assert done.returncode != 0 and attempts.startswith("socket.connect '127.0.0.1:9'"), done.stderr
    local = "import socket; socket.getaddrinfo('localhost', 9); a, b = socket.socketpair(); a.send(b'x')"
    done, attempts = _offline(tmp_path, sys.executable, "-c", local, timeout=60)
    assert done.returncode == 0 and attempts == "", done.stderr


def test_the_guard_catches_the_price_table_update_the_driver_turns_off(tmp_path: Path) -> None:
    written, attempts = _drive(tmp_path, "--price-updates", "--scenario", "supplement")
    # The table's fetch, from raw.githubusercontent.com when the App opens, goes to the proxy the test set.
    assert attempts.startswith("socket.connect '127.0.0.1:9'") and "genai_prices/update_prices.py" in attempts
    assert written["scenarios"]["supplement"]["operations"] == ["completed"]


@pytest.mark.parametrize("part", ["operations", "display_history", "transcript", "live_events"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_harness_ui_stores_and_sends_the_same_on_the_compat_package_as_on_upstream(
        runs: dict[str, dict[str, Any]], scenario: str, part: str) -> None:
    theirs, ours = runs["upstream"][scenario][part], runs["compat"][scenario][part]
    assert ours == theirs, _differences(theirs, ours)


def _shown(run: dict[str, Any]) -> list[tuple[str, str]]:
    return [(item["kind"], item["state"]) for item in run["display_history"]["items"] if item["kind"] != "observation"]


def _parts(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for entry in run["transcript"]["entries"] for part in entry["parts"]]


def _sent(run: dict[str, Any], event_type: str, key: str, *, run_kind: str = "root") -> list[Any]:
    """``key`` of the payload of each ``event_type`` event sent live for the Runs of ``run_kind``, in order."""
    return [event["payload"][key] for sent in run["live_events"] if sent["run_kind"] == run_kind
            for event in sent["events"] if event["event_type"] == event_type]


def _users(run: dict[str, Any]) -> list[str]:
    return [part["text"] for part in _parts(run) if part["kind"] == "user" and part["metadata"]["display"]]


# What follows checks that each scenario is the one described, on upstream's side (the comparison above carries
# it over to the compat package's): a Run that went wrong the same way on both would pass the comparison.

def test_the_retry_scenario_retries_the_refused_call_and_answers(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["upstream"]["retry"]
    assert run["operations"] == ["completed"]
    assert _shown(run) == [("text_message", "completed"), ("text_message", "completed"), ("tool_call", "failed"),
                           ("tool_call", "completed"), ("text_message", "completed")]
    parts = _parts(run)
    assert _users(run) == ["How many tasks are open? Then tell me 6 times 7."]
    assert [part["outcome"] for part in parts if part["kind"] in ("retry", "tool_result")] == ["retried", "success"]
    assert parts[-1]["kind"] == "assistant" and parts[-1]["text"].endswith("6 times 7 is 42.")
    assert _sent(run, "TOOL_CALL_START", "toolCallName") == ["task_list", "task_list"]
    assert _sent(run, "RUN_FINISHED", "type") == ["RUN_FINISHED"]


def test_the_subagent_scenario_delegates_to_the_helper_and_sends_its_run(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["upstream"]["subagent"]
    assert run["operations"] == ["completed"]
    assert [sent["run_kind"] for sent in run["live_events"]] == ["root", "child"]
    assert _sent(run, "TOOL_CALL_START", "toolCallName") == ["delegate", "wait_subagent"]
    delegated, waited = _sent(run, "TOOL_CALL_RESULT", "content")
    assert '"status":"running"' in delegated and "Hello from the helper!" in waited
    assert _sent(run, "TEXT_MESSAGE_CONTENT", "delta", run_kind="child") == ["Hello from the helper!"]
    assert _sent(run, "RUN_FINISHED", "type", run_kind="child") == ["RUN_FINISHED"]
    assert _parts(run)[-1]["text"] == "The helper said hello."


def test_the_approval_scenario_suspends_then_runs_the_approved_tool(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["upstream"]["approval"]
    assert run["operations"] == ["suspended", "completed"]
    assert _sent(run, "RUN_STARTED", "type") == ["RUN_STARTED"] * 2
    assert _sent(run, "RUN_FINISHED", "type") == ["RUN_FINISHED"] * 2
    assert _sent(run, "TOOL_CALL_START", "toolCallName") == ["task_create"]
    (result,) = _sent(run, "TOOL_CALL_RESULT", "content")
    assert "Water the plants" in result
    assert ("tool_call", "completed") in _shown(run)
    assert _parts(run)[-1]["text"] == "I created the task."


def test_the_supplement_scenario_shows_the_value_and_not_the_supplement(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["upstream"]["supplement"]
    assert run["operations"] == ["completed"]
    assert _sent(run, "TOOL_CALL_RESULT", "content") == ["answer: 42"]
    assert "for the model only" not in json.dumps(run["live_events"])
    assert "for the model only" not in json.dumps(run["transcript"])
    assert _parts(run)[-1]["text"] == "The answer is 42."


def test_the_parallel_scenario_ends_the_second_call_first(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["upstream"]["parallel"]
    assert run["operations"] == ["completed"]
    assert _sent(run, "TOOL_CALL_START", "toolCallName") == ["hold", "release"]
    assert _sent(run, "TOOL_CALL_RESULT", "toolCallId") == ["call-2", "call-1"]
    assert _shown(run)[-3:] == [("tool_call", "completed"), ("tool_call", "completed"), ("text_message", "completed")]


def test_the_cancel_scenario_ends_cancelled_after_the_text_was_sent(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["upstream"]["cancel"]
    assert run["operations"] == ["cancelled"]
    assert _sent(run, "TEXT_MESSAGE_CONTENT", "delta") == ["One, two, "]
    assert _sent(run, "RUN_FINISHED", "type") == []
    assert _users(run) == ["Count slowly to a million."]
