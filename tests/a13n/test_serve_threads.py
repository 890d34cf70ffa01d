# Whose Thread is it, and how often does an approved tool run? Two clients over HTTP against a real
# a13n-harness agent served by ``harness-agui serve app:agent`` in a child process (SQLite, and two server
# processes on one PostgreSQL database). The agent is the packaged demo agent's model with a ``deploy``
# tool that needs the user's approval and writes a line to a file each time it runs, so every test counts
# the tool's real executions, across server processes and SIGKILLs.

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from harness_agui.a13n.runner import source_thread_id  # noqa: E402
from harness_agui.host.bindings import SqliteRunBindings  # noqa: E402

APP = '''
import asyncio, os
from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder
from pydantic_ai import Tool
from pydantic_ai.capabilities import Capability
from pydantic_ai.models.function import FunctionModel
from harness_agui.a13n.demo import assistant, weather

async def deploy(env: str) -> str:
    """Deploy the application to an environment (asks the user first)."""
    with open(os.environ["DEPLOY_LOG"], "a") as log:
        log.write(env + "\\n")
    await asyncio.sleep(float(os.environ.get("DEPLOY_SECONDS", "0")))
    return f"deployed to {env}"

agent = HarnessBuilder().build(AgentDefinition(
    agent=AgentSpec(), output_type=str, model=FunctionModel(stream_function=assistant, model_name="demo"),
    capabilities=(Capability(id="tools", tools=[weather, Tool(deploy, requires_approval=True)]),)))
'''


class App:
    """``harness-agui serve deploy_app:agent --port 0`` on ``database`` in a child process."""

    def __init__(self, folder: Path, database: str, *, deploy_seconds: float = 0.0) -> None:
        (folder / "deploy_app.py").write_text(APP)
        self.deploys = folder / "deploys.log"
        env = {**os.environ, "DEPLOY_LOG": str(self.deploys), "DEPLOY_SECONDS": str(deploy_seconds),
               "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness_agui", "serve", "deploy_app:agent", "--port", "0", "--db", database,
             "--synchronous", "NORMAL"], cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        assert self.process.stderr is not None
        said = self.process.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", said)
        if found is None:
            self.process.kill()
            raise AssertionError(f"serve said: {said}{self.process.stderr.read()}")
        self.base = found.group(1)
        threading.Thread(target=self.process.stderr.read, daemon=True).start()  # never let its pipe fill

    def executions(self) -> int:
        """How many times ``deploy`` has run, in any process."""
        return len(self.deploys.read_text().splitlines()) if self.deploys.exists() else 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


@pytest.fixture
def apps() -> Iterator[list[App]]:
    started: list[App] = []
    yield started
    for app in started:
        app.close()


def request(thread: str, run: str, messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": messages, **more}


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def post(base: str, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]] | dict[str, Any]]:
    """The status and the events (or the JSON error) of one POST."""
    with httpx.Client(timeout=60) as client, client.stream("POST", f"{base}/runs", json=body) as answer:
        if answer.status_code != 200:
            answer.read()
            return answer.status_code, answer.json()
        return 200, [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]


def approval_of(events: Any) -> dict[str, Any]:
    """The resume[] entry approving the one interrupt a suspended Run's RUN_FINISHED names."""
    assert isinstance(events, list), events
    outcome = events[-1]["outcome"]
    assert events[-1]["type"] == "RUN_FINISHED" and outcome["type"] == "interrupt", events[-1]
    [interrupt] = outcome["interrupts"]
    return {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}


def suspended_on_deploy(base: str, thread: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A first turn that asks for ``deploy``: its messages and the approval of its interrupt."""
    messages = [user("u-1", "Deploy it, please.")]
    status, events = post(base, request(thread, f"{thread}-1", messages))
    assert status == 200, events
    return messages, approval_of(events)


def tool_results(events: Any) -> list[str]:
    assert isinstance(events, list), events
    return [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]


def test_a_client_naming_the_derived_id_of_another_clients_thread_gets_a_thread_of_its_own(
        tmp_path: Path, apps: list[App]) -> None:
    app = App(tmp_path, str(tmp_path / "host.db"))
    apps.append(app)
    victim = str(uuid.uuid4())
    messages, approval = suspended_on_deploy(app.base, victim)
    attacker = "thread-" + hashlib.sha256(victim.encode()).hexdigest()[:32]  # what the derivation used to give
    assert attacker == source_thread_id(victim)

    # The attacker approves the victim's pending deploy from its own Thread: its Thread is new, and has
    # nothing to resume.
    status, refused = post(app.base, request(attacker, "a-1", messages, resume=[approval]))
    assert (status, refused["error"]) == (422, "nothing_to_resume")  # type: ignore[call-overload]
    # Its own turn runs in a Harness Thread of its own, which holds nothing of the victim's.
    status, events = post(app.base, request(attacker, "a-2", [user("x-1", "Weather in Paris?")]))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events  # type: ignore[index]
    with SqliteRunBindings(tmp_path / "host.db", read_only=True) as bindings:
        [mine] = bindings.runs_of(attacker)
        [theirs] = bindings.runs_of(victim)
    assert mine.source_thread_id != theirs.source_thread_id
    assert re.fullmatch(r"thread-[0-9a-f]{32}", theirs.source_thread_id)
    assert theirs.source_thread_id != source_thread_id(victim)  # not computable from the client's id
    assert app.executions() == 0

    # The victim's approval is its own to give, and runs the tool once.
    status, events = post(app.base, request(victim, f"{victim}-2", messages, resume=[approval]))
    assert status == 200 and "deployed to production" in tool_results(events), events
    assert app.executions() == 1


def race(bases: list[str], bodies: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    """POST every body at once, each from a client of its own, to the servers in turn."""
    answers: list[tuple[int, Any]] = [(0, None)] * len(bodies)
    ready = threading.Barrier(len(bodies))

    def one(n: int) -> None:
        ready.wait()
        answers[n] = post(bases[n % len(bases)], bodies[n])

    workers = [threading.Thread(target=one, args=(n,)) for n in range(len(bodies))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    return answers


def one_run_of_each_race(bases: list[str], executions: Any) -> None:
    # Six turns of one Thread at once start one Run; one approval sent four times at once runs the tool once.
    thread = str(uuid.uuid4())
    first = [user("u-1", "Weather in Lyon?")]
    status, events = post(bases[0], request(thread, f"{thread}-0", first))
    assert status == 200, events
    turn = [*first, {"id": "a-1", "role": "assistant", "content": "It rains."}, user("u-2", "And in Paris?")]
    answers = race(bases, [request(thread, f"{thread}-turn-{n}", turn) for n in range(6)])
    assert [a[0] for a in answers].count(200) == 1, answers
    assert {(a[0], a[1]["error"]) for a in answers if a[0] != 200} <= {(409, "thread_busy"), (422, "nothing_new")}
    deploy = [*turn, {"id": "a-2", "role": "assistant", "content": "Sunny."}, user("u-3", "Now deploy it.")]
    status, events = post(bases[-1], request(thread, f"{thread}-deploy", deploy))
    approval = approval_of(events)
    answers = race(bases, [request(thread, f"{thread}-approve-{n}", deploy, resume=[approval]) for n in range(4)])
    assert [a[0] for a in answers].count(200) == 1, answers
    for status, body in answers:
        if status != 200:
            assert (status, body["error"]) in ((409, "thread_busy"), (422, "unknown_interrupt")), body
            if body["error"] == "thread_busy":  # the error names the client's ids, not the Harness's
                assert body["detail"]["threadId"] == thread and body["detail"]["runId"].startswith(thread)
    assert executions() == 1


def test_one_run_of_a_thread_at_a_time_and_one_approval_runs_its_tool_once(tmp_path: Path, apps: list[App]) -> None:
    app = App(tmp_path, str(tmp_path / "host.db"), deploy_seconds=0.5)
    apps.append(app)
    one_run_of_each_race([app.base], app.executions)


def test_on_postgresql_two_servers_run_one_run_of_a_thread_at_a_time_and_an_approval_once(
        tmp_path: Path, apps: list[App]) -> None:
    from pg_server import fresh_database

    database = fresh_database("threads")
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        apps.append(App(tmp_path / name, database, deploy_seconds=0.5))
    one_run_of_each_race([app.base for app in apps], lambda: apps[0].executions() + apps[1].executions())


def test_an_approval_whose_run_was_killed_is_never_run_again_and_the_thread_goes_on(
        tmp_path: Path, apps: list[App]) -> None:
    database = str(tmp_path / "host.db")
    app = App(tmp_path, database, deploy_seconds=30)
    apps.append(app)
    thread = str(uuid.uuid4())
    messages, approval = suspended_on_deploy(app.base, thread)

    def approve() -> None:
        try:
            post(app.base, request(thread, f"{thread}-2", messages, resume=[approval]))
        except httpx.HTTPError:
            pass  # the server is killed under it

    approving = threading.Thread(target=approve, daemon=True)
    approving.start()
    deadline = time.monotonic() + 60
    while app.executions() == 0:  # the tool is running: the server dies now
        assert time.monotonic() < deadline, "deploy never started"
        time.sleep(0.02)
    app.kill()
    approving.join(30)

    again = App(tmp_path, database)  # restarted on the same database: the approving Run is lost
    apps.append(again)
    deadline = time.monotonic() + 30
    while True:  # start-up recovery ends the lost Run in the background (409 thread_busy until then)
        status, events = post(again.base, request(thread, f"{thread}-3", messages, resume=[approval]))
        if status != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200, events
    [result] = tool_results(events)
    assert "lost" in result and "not run again" in result, result
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]  # type: ignore[index]
    assert again.executions() == 1
    with httpx.Client(timeout=60) as client:  # the lost Run ended for its clients, named by their ids
        followed = client.get(f"{again.base}/threads/{thread}/runs/{thread}-2/events")
    lost = [json.loads(line[6:]) for line in followed.text.splitlines() if line.startswith("data: ")][-1]
    assert (lost["type"], lost["code"]) == ("RUN_ERROR", "harness_agui.harness_lost"), lost
    assert f"run '{thread}-2'" in lost["message"] and "run-" not in lost["message"].replace(f"{thread}-2", "")
    # The Thread goes on from there: a new question is answered, and the approval is spent for good.
    later = [*messages, {"id": "a-9", "role": "assistant", "content": "Not deployed."}, user("u-9", "Weather?")]
    status, events = post(again.base, request(thread, f"{thread}-4", later))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events  # type: ignore[index]
    status, body = post(again.base, request(thread, f"{thread}-5", later, resume=[approval]))
    assert (status, body["error"]) == (422, "unknown_interrupt"), body  # type: ignore[call-overload]
    assert again.executions() == 1
