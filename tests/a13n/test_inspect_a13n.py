# The run inspector on real a13n-harness Runs: ``harness-agui serve --demo`` (the packaged demo agent, offline)
# makes a Run with a tool and a subagent and a Run suspended on an approval; ``harness-agui inspect`` on the
# same database must list both, show each user message and the final answer, and show for each item exactly
# the events the delivery log holds for it. (tests/test_inspect_browser.py drives the pages in a browser on
# simulated Runs and the committed journals of real ones.)

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from harness_agui.core.conversation import EMPTY_CONVERSATION, Message, fold_events  # noqa: E402
from harness_agui.debug.text import escape_terminal  # noqa: E402
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def started(args: list[str], pattern: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "harness_agui", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    said = proc.stderr.readline()
    found = re.search(pattern, said)
    if found is None:
        proc.kill()
        raise AssertionError(f"harness-agui {args[0]} said: {said}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, found.group(1)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Path]:
    database = tmp_path / "host.db"
    proc, base = started(["serve", "--demo", "--db", str(database), "--port", "0", "--synchronous", "NORMAL"],
                         r"on (http://127\.0\.0\.1:\d+)/runs")
    try:
        for n, said in enumerate(["What will the weather be in Paris?", "Please deploy to production."]):
            body = {"threadId": f"inspected-{n}", "runId": f"inspected-{n}", "state": {}, "tools": [], "context": [],
                    "forwardedProps": {}, "messages": [{"id": f"u{n}", "role": "user", "content": said}]}
            with httpx.stream("POST", base + "/runs", json=body, timeout=60) as response:
                assert response.status_code == 200
                for _ in response.iter_lines():
                    pass
    finally:
        proc.terminate()
        proc.wait(30)
    yield database


def shown(text: str) -> str:
    return " ".join(escape_terminal(text, multiline=True).split())


def text_of(html: str) -> str:
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_inspector_shows_real_a13n_runs_as_their_delivery_log_holds_them(database: Path) -> None:
    with SqliteSourceJournal(database, read_only=True) as journal, \
            SqliteDeliveryLog(database, read_only=True) as log:
        runs = journal.runs()
        recorded = {r: log.replay(r) for r in runs}
        items = {r: journal.cursor(r) + 1 for r in runs}
    assert len(runs) == 2
    proc, base = started(["inspect", str(database), "--port", "0"], r"on (http://127\.0\.0\.1:\d+)/")
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            threads = client.get("/").text
            for run_id in runs:
                assert f'data-run="{run_id}"' in threads
            statuses = re.findall(r'data-status="(\w+)"', threads)
            assert sorted(statuses) == ["finished", "suspended"]
            for run_id in runs:
                conv = fold_events(EMPTY_CONVERSATION, [d.event for d in recorded[run_id]])
                page = text_of(client.get("/run/conversation", params={"id": run_id}).text)
                texts = [e for e in conv.entries if isinstance(e, Message) and e.kind == "text" and e.text]
                for message in texts:
                    if message.role == "user" or message.subagent_run_id is None:
                        assert shown(message.text) in page, (run_id, message.text)
                for k in range(items[run_id]):
                    step = client.get("/run/step", params={"id": run_id, "k": k}).text
                    ids = re.findall(r'<tr class="event" data-sse-id="([^"]+)"', step)
                    assert ids == [d.sse_id for d in recorded[run_id] if d.source_position == k], (run_id, k)
                lines = client.get("/run/events.jsonl", params={"id": run_id}).text.splitlines()
                assert [json.loads(line) for line in lines] == [json.loads(d.data) for d in recorded[run_id]]
    finally:
        proc.terminate()
        proc.wait(30)
