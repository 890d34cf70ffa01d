# ``harness-agui serve`` of a real a13n-harness agent, as the README's "Serve an a13n-harness agent" has a
# person write it (``app.py``): ``app:agent`` with the command's flags (CORS from ``--cors-origin``, the
# database of the working folder), and ``app:server`` / ``app:app`` with the options the module gave its
# AguiServer, which no flag overrides. Each server is a child process on loopback.

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

AGENT = '''
from a13n_harness import AgentSpec, HarnessBuilder
from pydantic_ai.models.function import FunctionModel


async def model(messages, info):                 # any pydantic-ai model; this one needs no network
    yield "Hello from a13n-harness."

agent = HarnessBuilder().build(AgentSpec(), output_type=str, model=FunctionModel(stream_function=model))
'''

APP = AGENT + '''
from harness_agui.serve import AguiServer

server = AguiServer.for_agent(agent, database="host.db", cors_origins=["http://localhost:5173"])
app = server.app
'''


class Serving:
    """``harness-agui serve ARGS`` in a child process; ``base`` is the URL it printed, without its path."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", *args], cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        self.said = self.process.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", self.said)
        if found is None:
            self.process.kill()
            raise AssertionError(f"serve said: {self.said}{self.process.stderr.read()}")
        self.base = found.group(1)

    def close(self) -> str:
        """Stop it; what it said after its first line."""
        self.process.kill()
        self.process.wait(30)
        assert self.process.stderr is not None
        return self.process.stderr.read()


def preflight(base: str, origin: str) -> httpx.Response:
    return httpx.options(f"{base}/runs", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                  "Access-Control-Request-Headers": "content-type"}, timeout=30)


def run(base: str, origin: str) -> list[dict[str, object]]:
    body = {"threadId": "t-1", "runId": "r-1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "u-1", "role": "user", "content": "Hi!"}]}
    with httpx.Client(timeout=60) as client:
        with client.stream("POST", f"{base}/runs", json=body, headers={"Origin": origin}) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["access-control-allow-origin"] == origin
            return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def test_serve_app_agent_with_a_cors_origin_answers_a_browsers_preflight_and_keeps_its_database(
        tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(AGENT)
    served = Serving("app:agent", "--port", "0", "--cors-origin", "https://app.example", cwd=tmp_path)
    try:
        assert f"(database {tmp_path / 'harness-agui.db'})" in served.said
        allowed = preflight(served.base, "https://app.example")
        assert allowed.status_code == 204, allowed.text
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        assert {"GET", "POST", "DELETE"} <= set(allowed.headers["access-control-allow-methods"].split(", "))
        events = run(served.base, "https://app.example")
        assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    finally:
        assert served.close() == ""
    assert (tmp_path / "harness-agui.db").is_file()


@pytest.mark.parametrize("attribute", ["server", "app"])
def test_serve_of_the_readme_apps_server_keeps_the_cors_and_database_it_was_made_with(
        tmp_path: Path, attribute: str) -> None:
    (tmp_path / "app.py").write_text(APP)
    served = Serving(f"app:{attribute}", "--port", "0", cwd=tmp_path)
    try:
        assert f"(database {tmp_path / 'host.db'})" in served.said
        assert preflight(served.base, "http://localhost:5173").status_code == 204
        assert run(served.base, "http://localhost:5173")[-1]["type"] == "RUN_FINISHED"
    finally:
        served.close()
    assert not (tmp_path / "harness-agui.db").exists()
    refused = subprocess.run([sys.executable, "-m", "harness_agui", "serve", f"app:{attribute}", "--port", "0",
                              "--cors-origin", "https://app.example"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "--cors-origin would override them" in refused.stderr


def test_serve_app_agent_of_the_readme_app_says_its_server_is_not_the_one_served(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    served = Serving("app:agent", "--port", "0", cwd=tmp_path)
    try:
        assert preflight(served.base, "http://localhost:5173").status_code == 405  # no --cors-origin given
    finally:
        said = served.close()
    assert said.startswith("harness-agui: note: app.server is an AguiServer made for app:agent with options of its "
                           "own (database, CORS, authorize, ...): they are not used here; serve app:server to use "
                           "them\n")
