"""The command line on a Host database and as a server, run as a person runs it (``python -m harness_agui``
in a subprocess): ``--version`` everywhere, ``runs``, ``events``, ``export`` by either id, ``replay`` given a
database, and ``serve MODULE:ATTR`` / ``--demo`` on the port it prints (``--port 0`` included), with the
address bound before it says "serving"."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from test_cli import assert_one_line_error

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.host.bindings import SqliteRunBindings, WireRun
from harness_agui.testing import SourceBuilder, projection_json
from harness_agui.wire.codec import encode


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness_agui", *map(str, args)], capture_output=True, text=True,
                          encoding="utf-8", timeout=120, cwd=cwd)


def a_database(path: Path) -> dict[str, list[str]]:
    """Two finished Runs (one named by its client's ids, one journaled under its own), and a Run bound by a
    server that died before its first item; returns each Run's items as wire lines."""
    lines: dict[str, list[str]] = {}
    with SqliteSourceJournal(path) as journal, SqliteDeliveryLog(path) as log, SqliteRunBindings(path) as bindings:
        for thread_id, run_id, wire in (("thread-h1", "run-h1", WireRun("t-1", "r-1", "thread-h1", "run-h1")),
                                        ("thread-h2", "run-h2", None)):
            b = SourceBuilder(thread_id, run_id)
            b.user("Count.").request().text(0, ["1 ", "2 ", "3"]).completed("1 2 3")
            if wire is not None:
                bindings.bind(wire)
            for item in b.items:
                journal.append(item)
            asyncio.run(project_run(run_id, journal, log))
            lines[run_id] = [encode(item) for item in b.items]
        bindings.bind(WireRun("t-3", "r-3", "thread-h3", "run-h3"))
    return lines


def test_every_command_tells_its_version() -> None:
    for command in ([], ["replay"], ["check"], ["export"], ["runs"], ["events"], ["serve"], ["demo"]):
        done = cli(*command, "--version")
        assert done.returncode == 0, done.stderr
        assert re.fullmatch(r"harness-agui \d+\.\d+\.\d+\n", done.stdout), done.stdout


def test_runs_lists_every_run_of_a_database_with_the_ids_its_clients_use(tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    a_database(database)
    done = cli("runs", database)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows[0] == ["RUN", "THREAD", "CLIENT", "RUN", "CLIENT", "THREAD", "ITEMS", "EVENTS", "STATE"]
    assert rows[1][:4] == ["run-h1", "thread-h1", "r-1", "t-1"] and rows[1][-1] == "finished"
    assert rows[2][:2] == ["run-h2", "thread-h2"] and rows[2][-1] == "finished"
    assert rows[3] == ["run-h3", "thread-h3", "r-3", "t-3", "0", "0", "not", "started"]
    only = cli("runs", database, "--thread", "thread-h2")
    assert [line.split()[0] for line in only.stdout.splitlines()[1:]] == ["run-h2"]


def test_events_prints_what_the_clients_of_a_run_were_sent_by_either_id(tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    a_database(database)
    with SqliteDeliveryLog(database, read_only=True) as log:
        sent = log.replay("run-h1")
    by_client = cli("events", database, "--run", "r-1")
    assert by_client.returncode == 0, by_client.stderr
    assert by_client.stdout == "".join(d.sse() for d in sent)
    assert cli("events", database, "--run", "run-h1").stdout == by_client.stdout
    jsonl = cli("events", database, "--run", "r-1", "--format", "jsonl", "--after", sent[1].sse_id)
    assert jsonl.stdout.splitlines() == [d.data for d in sent[2:]]
    assert_one_line_error(cli("events", database), 2, f"{database}: holds 2 runs (run-h1, run-h2), choose one with "
                                                      f"--run (see harness-agui runs {database})")


def test_export_takes_either_id_and_names_the_runs_it_could_export(tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    lines = a_database(database)
    assert cli("export", database, "--run", "r-1").stdout.splitlines() == lines["run-h1"]
    assert cli("export", database, "--run", "run-h2").stdout.splitlines() == lines["run-h2"]
    assert_one_line_error(cli("export", database), 2, f"{database}: holds 2 runs (run-h1, run-h2), choose one with "
                                                      f"--run (see harness-agui runs {database})")


def test_replay_given_a_host_database_says_to_export_a_run_first(tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    a_database(database)
    assert_one_line_error(cli("replay", database), 2,
                          f"{database}: is a Host database, not a journal of JSON lines: list its runs with "
                          f"harness-agui runs {database}, then export one (harness-agui export {database} --run "
                          "RUN_ID | harness-agui replay -)")
    assert cli("check", database).returncode == 2


# -- serve ---------------------------------------------------------------------------------------

RUNNER = '''
from harness_agui.testing import SourceBuilder
from harness_agui.serve import AguiServer


async def runner(run_input):
    b = SourceBuilder(run_input.thread_id, run_input.run_id)
    b.user("hi").request().text(0, ["Hello ", "from ", "a module."]).completed("Hello from a module.")
    for item in b.items:
        yield item


server = AguiServer(runner, database=DATABASE)
not_a_runner = 42
'''


class Serving:
    """``harness-agui serve ...`` in a child process, until the test ends; ``base`` is the URL it printed."""

    def __init__(self, *args: str | Path, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", *map(str, args)], cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        self.said = self.process.stderr.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+)/runs", self.said)
        if found is None:
            self.process.kill()
            raise AssertionError(f"serve said: {self.said}{self.process.stderr.read()}")
        self.port = int(found.group(1))
        self.base = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)


def post_and_read(base: str, run_id: str = "r-1") -> list[dict[str, object]]:
    body = {"threadId": "t-1", "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "u-1", "role": "user", "content": "hi"}]}
    deadline = time.monotonic() + 20
    while True:
        try:
            with httpx.Client(timeout=30) as client, client.stream("POST", f"{base}/runs", json=body) as response:
                return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_serve_module_attr_serves_a_runner_on_the_port_it_prints_for_port_0(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(RUNNER.replace("DATABASE", repr(str(tmp_path / "module.db"))))
    served = Serving("my_agent:runner", "--port", "0", "--db", tmp_path / "host.db", cwd=tmp_path)
    try:
        assert served.port != 0 and "my_agent:runner (a runner)" in served.said
        events = post_and_read(served.base)
        assert [e["type"] for e in events][0] == "RUN_STARTED" and events[-1]["result"] == "Hello from a module."
    finally:
        served.close()
    as_server = Serving("my_agent:server", "--port", "0", cwd=tmp_path)
    try:
        assert "(an AguiServer, with the options it was made with)" in as_server.said
        assert "module.db" in as_server.said
        assert post_and_read(as_server.base)[-1]["type"] == "RUN_FINISHED"
    finally:
        as_server.close()


def test_serve_refuses_what_it_cannot_serve_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(RUNNER.replace("DATABASE", repr(str(tmp_path / "module.db"))))
    assert_one_line_error(cli("serve", "--port", "0", cwd=tmp_path), 2,
                          "serve takes MODULE:ATTR (an a13n-harness agent, a runner, an AguiServer or an ASGI app) "
                          "or --demo, one of the two")
    assert_one_line_error(cli("serve", "my_agent", "--port", "0", cwd=tmp_path), 2,
                          "my_agent: give MODULE:ATTR, such as examples.a13n_agent:agent")
    assert_one_line_error(cli("serve", "my_agent:nothing", "--port", "0", cwd=tmp_path), 2,
                          "my_agent:nothing: my_agent has no nothing")
    assert_one_line_error(cli("serve", "my_agent:not_a_runner", "--port", "0", cwd=tmp_path), 2,
                          "my_agent:not_a_runner is a int: serve takes an a13n-harness agent, a runner (an object "
                          "with start(), or an async callable), an AguiServer or an ASGI app")
    missing = cli("serve", "no_such_module:agent", "--port", "0", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("harness-agui: no_such_module:agent: cannot import")
    assert_one_line_error(cli("serve", "my_agent:server", "--db", tmp_path / "x.db", "--port", "0", cwd=tmp_path), 2,
                          "my_agent:server is an AguiServer with options of its own: --db would override them; set "
                          "them where it is made, or serve its agent or runner with the flags")


def test_serve_on_a_busy_port_fails_before_it_says_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli("serve", "--demo", "--simulated", "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2 and "serving" not in done.stderr
    assert_one_line_error(done, 2, f"cannot listen on 127.0.0.1:{port}: Address already in use")


def test_serve_demo_without_a13n_harness_serves_the_simulated_harness_and_says_why(tmp_path: Path) -> None:
    served = Serving("--demo", "--port", "0", "--pace", "0", cwd=tmp_path)
    try:
        assert "the simulated Harness (a13n-harness is not installed" in served.said
        events = post_and_read(served.base)
    finally:
        served.close()
    from harness_agui.testing import simulated_run

    assert events == [json.loads(line) for line in projection_json(simulated_run("t-1", "r-1"))]


def test_importing_the_postgresql_kit_without_its_extra_says_what_to_install() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['psycopg'] = None\n"
                           "import harness_agui.host.postgres"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: harness_agui.host.postgres needs psycopg 3 and psycopg_pool: pip install "
        "'harness-agui[postgres]'")


def test_temporary_postgres_moved_to_testing_and_its_old_name_still_works_with_a_warning() -> None:
    import warnings

    import harness_agui.host.postgres as kit
    from harness_agui.testing import postgres as moved

    for name in ("TemporaryPostgres", "PostgresNotFoundError"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(kit, name) is getattr(moved, name)
        assert [w.category for w in caught] == [DeprecationWarning]
        assert f"harness_agui.testing.postgres.{name}" in str(caught[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from harness_agui.host.postgres.server import TemporaryPostgres
    assert TemporaryPostgres is moved.TemporaryPostgres and caught[0].category is DeprecationWarning


GC_REPORTER = '''
import gc

from harness_agui.testing import SourceBuilder


async def runner(run_input):
    said = f"threshold {gc.get_threshold()[0]} frozen {gc.get_freeze_count()}"
    b = SourceBuilder(run_input.thread_id, run_input.run_id)
    b.user("hi").request().text(0, [said]).completed(said)
    for item in b.items:
        yield item
'''


def test_serve_tunes_the_garbage_collector_unless_told_not_to(tmp_path: Path) -> None:
    (tmp_path / "gc_agent.py").write_text(GC_REPORTER)
    stock = int(subprocess.run([sys.executable, "-c", "import gc; print(gc.get_threshold()[0])"], capture_output=True,
                               text=True, check=True).stdout)
    for flags, tuned in (((), True), (("--no-gc-tuning",), False)):
        served = Serving("gc_agent:runner", "--port", "0", "--db", tmp_path / f"{tuned}.db", *flags, cwd=tmp_path)
        try:
            result = post_and_read(served.base)[-1]["result"]
        finally:
            served.close()
        found = re.fullmatch(r"threshold (\d+) frozen (\d+)", str(result))
        assert found is not None, result
        threshold, frozen = map(int, found.groups())
        if tuned:
            assert threshold == max(stock, 10_000) and frozen > 1000  # the start-up heap: modules, the app
        else:
            assert threshold == stock and frozen == 0
