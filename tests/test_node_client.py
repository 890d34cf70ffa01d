# Delegating runs replayed through the official AG-UI client (@ag-ui/client,
# npm), by tests/node/replay.mjs: the client must accept the run (its event
# verifier refuses, for instance, a SUBAGENT_FINISHED without its start or a
# RUN_FINISHED while a subagent is active), every message a child's events
# built must carry that child's subagentRunId (and no root message one), and
# every finished tool call must be answered by a tool message. The runs of a
# real Thread (a Run suspended for an approval or a client's result, then the
# Run that resumes it) are replayed through one client session: the resumed
# Run answers the earlier Run's calls, and at the end every call is answered.
#
# The Node packages are installed on first use (npm ci, from the pinned
# package-lock.json). Nothing here is skipped: without node or npm, or when
# the install fails, the tests fail.

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from harness_agui import HarnessAguiObserver
from harness_agui.testing import delegating_runs, simulated_delegation
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import decode

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "replay.mjs"
FIXTURES = Path(__file__).parent / "fixtures" / "a13n"
REAL = ["subagent", "nested_subagents", "failed_child"]


def replay(node: str, events: Any) -> dict[str, Any]:
    """What @ag-ui/client made of ``events``: its messages, or its error."""
    lines = "".join(agui_to_json(e) + "\n" for e in events)
    done = subprocess.run([node, str(SCRIPT)], input=lines, capture_output=True, text=True, timeout=120)
    try:
        out: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"replay.mjs printed no JSON (status {done.returncode}):\n{done.stdout[-2000:]}\n"
                    f"{done.stderr[-2000:]}")
    return out


def project(items: Any) -> list[Any]:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return list(observer.snapshot())


def check(events: list[Any], out: dict[str, Any], *, all_answered: bool = True) -> None:
    assert out["ok"], out.get("error")
    messages = {m["id"]: m for m in out["messages"]}
    # The owner of each message the events build: its start, or its tool result.
    owners = {e.message_id: e.subagent_run_id for e in events
              if e.type.value in ("TEXT_MESSAGE_START", "TOOL_CALL_RESULT")}
    for message_id, owner in owners.items():
        assert message_id in messages, message_id
        assert messages[message_id].get("subagentRunId") == owner, messages[message_id]
    for message in out["messages"]:
        for call in message.get("toolCalls") or []:
            start = next(e for e in events if e.type.value == "TOOL_CALL_START" and e.tool_call_id == call["id"])
            assert message.get("subagentRunId") == start.subagent_run_id, (message, call)
    answered = {m["toolCallId"] for m in out["messages"] if m["role"] == "tool"}
    projected = {e.tool_call_id for e in events if e.type.value == "TOOL_CALL_RESULT"}
    assert answered == projected
    if all_answered:
        ended = {e.tool_call_id for e in events if e.type.value == "TOOL_CALL_END"}
        assert ended <= answered, ended - answered


@pytest.mark.parametrize("kind", [{}, {"nested": False}, {"child_fails": True}],
                         ids=["nested", "one child", "failed child"])
def test_the_client_accepts_a_delegating_run_and_attributes_every_child_message(node: str,
                                                                                 kind: dict[str, Any]) -> None:
    events = project(simulated_delegation(**kind))
    out = replay(node, events)
    check(events, out)
    children = {m.get("subagentRunId") for m in out["messages"]} - {None}
    assert children == ({"run-root-planner", "run-root-worker"} if kind == {} else {"run-root-planner"})


@pytest.mark.parametrize("name", REAL)
def test_the_client_accepts_the_real_delegating_runs_of_a13n_harness(node: str, name: str) -> None:
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    items = [decode(line) for line in lines if line.strip()]
    events = project(items)
    out = replay(node, events)
    check(events, out)
    children = {i.run_id for i in items} - {items[0].run_id}
    assert {m.get("subagentRunId") for m in out["messages"]} - {None} == children


def test_the_client_refuses_a_run_whose_subagent_is_left_open(node: str) -> None:
    events = [e for e in project(simulated_delegation(nested=False)) if e.type.value != "SUBAGENT_FINISHED"]
    out = replay(node, events)
    assert not out["ok"] and "subagent" in out["error"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=delegating_runs(complete=True))
def test_the_client_accepts_every_generated_complete_delegating_run(node: str, run: Any) -> None:
    events = project(run.items)
    out = replay(node, events)
    # Calls of a Run that the root's terminal cut off, and the delegate calls that started them, stay
    # unanswered; everything else is answered.
    cut = any(s.fate in ("cut_off", "not_started") for s in run.subagents)
    check(events, out, all_answered=not cut)


THREADS = ["approval_denied", "deferred_call_and_approval"]


@pytest.mark.parametrize("name", THREADS)
def test_a_resumed_run_answers_the_calls_of_the_run_it_resumes_in_one_client_session(node: str, name: str) -> None:
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    items = [decode(line) for line in lines if line.strip()]
    runs: list[list[Any]] = [[]]
    for item in items:
        runs[-1].append(item)
        if item.run_id == runs[-1][0].run_id and type(item).__name__ == "HarnessRunResultEvent":
            runs.append([])
    runs = [r for r in runs if r]
    assert len(runs) >= 2
    events = [e for run in runs for e in project(run)]
    out = replay(node, events)
    assert out["ok"], out.get("error")
    calls = {c["id"] for m in out["messages"] for c in m.get("toolCalls") or []}
    answered = {m["toolCallId"] for m in out["messages"] if m["role"] == "tool"}
    assert calls and calls <= answered, calls - answered
    # The resumed calls were answered, not started again: each call appears once.
    starts = [e.tool_call_id for e in events if e.type.value == "TOOL_CALL_START"]
    assert len(starts) == len(set(starts))


@pytest.mark.parametrize("name", ["reused_call_ids", "late_deltas", "structured_output"])
def test_the_client_holds_every_call_of_these_real_runs_answered(node: str, name: str) -> None:
    # A server that numbers calls per response, deltas after their part's end, a provider-executed call.
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    events = project([decode(line) for line in lines if line.strip()])
    out = replay(node, events)
    assert out["ok"], out.get("error")
    calls = {c["id"] for m in out["messages"] for c in m.get("toolCalls") or []}
    answered = {m["toolCallId"] for m in out["messages"] if m["role"] == "tool"}
    assert calls and calls <= answered, calls - answered


# -- what the client shows of parts a response streams after their end (issue 36, item 14) ----------------------

def _texts(out: dict[str, Any]) -> dict[str, str]:
    return {m["id"]: m.get("content") or "" for m in out["messages"] if m["role"] in ("assistant", "reasoning")}


def test_the_client_shows_the_whole_text_of_parts_a_response_streams_after_their_end(node: str) -> None:
    from test_rules_of_real_runs import INTERLEAVED_TEXTS, interleaved_response

    out = replay(node, project(interleaved_response()))
    assert out["ok"], out.get("error")
    assert _texts(out) == INTERLEAVED_TEXTS


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.jsonl")))
def test_the_client_shows_in_each_message_of_a_real_run_the_final_text_of_its_part(node: str, name: str) -> None:
    # The Runs of a file (a Thread's, one after the other) in one client session; each message of a part
    # whose model request completed must read as that part reads in the Run's terminal history.
    from test_rules_of_real_runs import run_finals

    items = [decode(line) for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    runs = run_finals(items)
    out = replay(node, [e for run in runs for e in run.events])
    assert out["ok"], out.get("error")
    texts = _texts(out)
    for run in runs:
        assert {m: texts.get(m) for m in run.finals} == run.finals
    assert any(run.finals for run in runs) or name in ("failed_run", "provider_error_exhausted")  # no response ended
