"""``harness-agui serve`` as a person runs it, in a child process: the database it keeps without ``--db`` (a
file of the working folder that a restart serves again), what a module's own AguiServer or ASGI app keeps
(its options, which no flag overrides), CORS from the command line, and the start-up of ``--version`` and
``--help``, which import none of the server, the core or an agent's packages.

The a13n-harness side (``serve app:agent`` of a real agent) is in ``tests/a13n/test_cli_serve_a13n.py``."""

from __future__ import annotations

import gc
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from test_cli import assert_one_line_error
from test_cli_host import Serving, cli, post_and_read

RUNNER = '''
from harness_agui.testing import SourceBuilder


async def runner(run_input):
    b = SourceBuilder(run_input.thread_id, run_input.run_id)
    b.user("hi").request().text(0, ["Hello ", "again."]).completed("Hello again.")
    for item in b.items:
        yield item
'''

APP = RUNNER + '''
from starlette.applications import Starlette
from starlette.routing import Mount

from harness_agui.serve import AguiServer

server = AguiServer(runner, database="app.db", cors_origins=["https://app.example"])
app = Starlette(routes=[Mount("/agui", app=server.app)], lifespan=lambda app: server.lifespan())
bare = server.app
'''


def stop(served: Serving) -> None:
    """SIGTERM, as a supervisor stops a server (uvicorn shuts down, then ends by the signal)."""
    served.process.send_signal(signal.SIGTERM)
    served.process.wait(30)


def events_of(base: str, thread_id: str, run_id: str) -> list[dict[str, object]]:
    with httpx.Client(timeout=30) as client:
        with client.stream("GET", f"{base}/threads/{thread_id}/runs/{run_id}/events") as response:
            assert response.status_code == 200, response.read()
            return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def preflight(url: str, origin: str) -> httpx.Response:
    return httpx.options(url, headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                       "Access-Control-Request-Headers": "content-type"}, timeout=30)


def test_serve_without_db_keeps_its_database_in_the_working_folder_and_a_restart_serves_the_first_run(
        tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(RUNNER)
    first = Serving("my_agent:runner", "--port", "0", cwd=tmp_path)
    try:
        assert f"(database {tmp_path / 'harness-agui.db'})" in first.said
        sent = post_and_read(first.base)
        assert sent[-1]["type"] == "RUN_FINISHED"
    finally:
        stop(first)
    assert (tmp_path / "harness-agui.db").is_file()  # outlives the server
    again = Serving("my_agent:runner", "--port", "0", cwd=tmp_path)
    try:
        assert events_of(again.base, "t-1", "r-1") == sent
        assert post_and_read(again.base) == sent  # a POST of the known Run streams it again, not a second Run
    finally:
        stop(again)


def test_serve_demo_keeps_its_runs_in_a_database_of_its_own(tmp_path: Path) -> None:
    first = Serving("--demo", "--simulated", "--port", "0", "--pace", "0", cwd=tmp_path)
    try:
        assert f"(database {tmp_path / 'harness-agui-demo.db'})" in first.said
        sent = post_and_read(first.base)
    finally:
        stop(first)
    again = Serving("--demo", "--simulated", "--port", "0", "--pace", "0", cwd=tmp_path)
    try:
        assert events_of(again.base, "t-1", "r-1") == sent
    finally:
        again.close()
    assert not (tmp_path / "harness-agui.db").exists()


def test_a_cors_origin_flag_answers_a_browsers_preflight(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(RUNNER)
    served = Serving("my_agent:runner", "--port", "0", "--cors-origin", "https://app.example", cwd=tmp_path)
    try:
        allowed = preflight(f"{served.base}/runs", "https://app.example")
        assert allowed.status_code == 204
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        assert "POST" in allowed.headers["access-control-allow-methods"]
        assert preflight(f"{served.base}/runs", "https://elsewhere.example").status_code == 400
    finally:
        served.close()


def test_an_asgi_app_of_the_module_is_served_with_its_own_routes_database_and_cors(tmp_path: Path) -> None:
    (tmp_path / "my_app.py").write_text(APP)
    process = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", "my_app:app", "--port", "0"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        said = process.stderr.readline()
        assert "my_app:app (an ASGI app, with its own routes and options)" in said, said
        assert f"(database {tmp_path / 'app.db'})" in said
        base = said.split(" on ", 1)[1].split(" ", 1)[0]
        assert post_and_read(f"{base}/agui")[-1]["result"] == "Hello again."
        assert preflight(f"{base}/agui/runs", "https://app.example").status_code == 204
    finally:
        process.kill()
        process.wait(30)
    assert not (tmp_path / "harness-agui.db").exists()
    served = Serving("my_app:bare", "--port", "0", cwd=tmp_path)  # the app of an AguiServer: the server itself
    try:
        assert "(the app of an AguiServer, with the options it was made with)" in served.said
        assert preflight(f"{served.base}/runs", "https://app.example").status_code == 204
    finally:
        served.close()


@pytest.mark.parametrize("target", ["my_app:app", "my_app:server", "my_app:bare"])
def test_a_flag_that_would_override_what_the_module_configured_is_refused(tmp_path: Path, target: str) -> None:
    (tmp_path / "my_app.py").write_text(APP)
    done = cli("serve", target, "--port", "0", "--cors-origin", "https://other.example", "--synchronous", "normal",
               cwd=tmp_path)
    kind = "an ASGI app" if target.endswith(("app", "bare")) else "an AguiServer"
    assert_one_line_error(done, 2, f"{target} is {kind} with options of its own: --synchronous, --cors-origin would "
                                   "override them; set them where it is made, or serve its agent or runner with the "
                                   "flags")


def test_serving_a_runner_of_a_module_that_made_its_own_server_says_whose_options_are_used(tmp_path: Path) -> None:
    (tmp_path / "my_app.py").write_text(APP)
    served = Serving("my_app:runner", "--port", "0", cwd=tmp_path)
    try:
        assert preflight(f"{served.base}/runs", "https://app.example").status_code == 405  # the flags' server
    finally:
        served.close()
    said = served.process.stderr.read()  # type: ignore[union-attr]
    assert said.startswith("harness-agui: note: my_app.server is an AguiServer made for my_app:runner with options "
                           "of its own (database, CORS, authorize, ...): they are not used here; serve my_app:server "
                           "to use them\n")


# -- start-up -------------------------------------------------------------------------------------

HEAVY = ("starlette", "uvicorn", "ag_ui", "pydantic", "pydantic_core", "a13n_harness", "pydantic_ai", "httpx",
         "pyrsistent", "attrs", "sqlite3", "asyncio")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["serve", "--help"], ["replay", "--version"]])
def test_version_and_help_import_none_of_the_server_the_core_or_an_agent(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "harness_agui", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "harness_agui" in imported  # the report is read right
    assert sorted(imported & set(HEAVY)) == []


def test_the_port_accepts_connections_while_the_app_is_still_importing_and_its_requests_are_answered_after(
        tmp_path: Path) -> None:
    (tmp_path / "slow_app.py").write_text("import time\ntime.sleep(3)\n" + RUNNER)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", "slow_app:runner", "--port", str(port),
                                "--db", str(tmp_path / "host.db")], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:  # connected: the kernel queues it until the server is up
            try:
                early = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
        with early:
            assert process.stderr is not None
            early.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            early.settimeout(60)
            assert early.recv(64).startswith(b"HTTP/1.1 200")
            said = process.stderr.readline()  # said once the app was made, after the connection
            assert "serving slow_app:runner" in said
    finally:
        process.kill()
        process.wait(30)


def test_a_serve_that_fails_leaves_the_garbage_collector_of_its_process_enabled(tmp_path: Path) -> None:
    from harness_agui.cli import main

    assert gc.isenabled()
    assert main(["serve", "no_such_module_here:agent", "--port", "0", "--db", str(tmp_path / "h.db")]) == 2
    assert gc.isenabled()
